/* Payload ownership in every load mode (docs/memory.md), the payload
 * callback, consolidation, and thread-count independence.
 *
 * The input model is encoded by hand here (tags and varints written one by
 * one, payloads filled with a known pattern), so that the bytes each tensor
 * must hold are known without asking onnxio's own encoder. Whether a
 * mapping is really released is read from /proc/self/maps (on Windows,
 * from VirtualQuery and GetMappedFileNameW: tu_mappings_of), not from the
 * library. */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h" /* onnxio__file_cold: whether a load reads the file whole */
#include "testutil.h"

#define NT 6
/* Sizes straddle the default 1024-byte threshold and the 8 MiB piece size
 * of the pool; the 3 MiB one takes the huge-page path of onnxio_buffer_new. */
static const size_t sizes[NT] = {16, 1023, 1024, 70000, 3u << 20, (9u << 20) + 5};

static uint8_t pattern(size_t tensor, size_t i) { return (uint8_t)(i * 7 + tensor * 31 + (i >> 11)); }

static void put_len_field(tu_bytes *b, uint32_t field, const tu_bytes *inner)
{
    tu_bytes_tag(b, field, 2);
    tu_bytes_varint(b, inner->size);
    tu_bytes_put(b, inner->data, inner->size);
}

/* TensorProto{dims: n, data_type: UINT8, name: "t<k>", raw_data}; with
 * `raw_first` the raw_data comes before dims and name on the wire. */
static void encode_tensor(tu_bytes *t, size_t k, int raw_first)
{
    char name[16];
    snprintf(name, sizeof name, "t%zu", k);
    uint8_t *raw = malloc(sizes[k]);
    for (size_t i = 0; i < sizes[k]; i++) raw[i] = pattern(k, i);
    if (raw_first) {
        tu_bytes_tag(t, 9, 2);
        tu_bytes_varint(t, sizes[k]);
        tu_bytes_put(t, raw, sizes[k]);
    }
    tu_bytes_tag(t, 1, 0);
    tu_bytes_varint(t, sizes[k]);
    tu_bytes_tag(t, 2, 0);
    tu_bytes_varint(t, 2); /* UINT8 */
    tu_bytes_tag(t, 8, 2);
    tu_bytes_varint(t, strlen(name));
    tu_bytes_put(t, name, strlen(name));
    if (!raw_first) {
        tu_bytes_tag(t, 9, 2);
        tu_bytes_varint(t, sizes[k]);
        tu_bytes_put(t, raw, sizes[k]);
    }
    free(raw);
}

/* ModelProto{ir_version: 10, graph: {name: "g", initializer: t0..t5}}, in
 * libprotobuf's field order (unless raw_first). */
static tu_bytes encode_model(int raw_first)
{
    tu_bytes graph = {0}, model = {0};
    tu_bytes_tag(&graph, 2, 2);
    tu_bytes_varint(&graph, 1);
    tu_bytes_byte(&graph, 'g');
    for (size_t k = 0; k < NT; k++) {
        tu_bytes t = {0};
        encode_tensor(&t, k, raw_first && k % 2);
        put_len_field(&graph, 5, &t);
        tu_bytes_free(&t);
    }
    tu_bytes_tag(&model, 1, 0);
    tu_bytes_varint(&model, 10);
    put_len_field(&model, 7, &graph);
    tu_bytes_free(&graph);
    return model;
}

static bool payload_ok(const onnxio_TensorProto *t, size_t k)
{
    if (!t->raw_data.data || t->raw_data.size != sizes[k]) return false;
    for (size_t i = 0; i < sizes[k]; i++)
        if (t->raw_data.data[i] != pattern(k, i)) return false;
    return true;
}

static onnxio_TensorProto *tensor(onnxio_ModelProto *m, size_t k) { return m->graph->initializer.data[k]; }

static void test_modes(const char *dir)
{
    tu_bytes in = encode_model(0);
    char *path = tu_path_join(dir, "model.onnx");
    tu_write_file(path, in.data, in.size);
    char *real = realpath(path, NULL);

    /* Payloads under the raw_data threshold (1 KiB) share a slab; the
     * others each have a block of their own. */
    size_t small = 0;
    for (size_t k = 0; k < NT; k++) small += sizes[k] < ONNXIO_DEFAULT_RAW_DATA_THRESHOLD;
    tu_begin("copy mode: every large payload privately owned, the small ones in one slab, freed with their tensors");
    for (int threads = 1; threads <= 4; threads *= 2) {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_parse_options o = {.num_threads = threads};
        CHECK_STATUS(onnxio_load_model(path, &o, a, &m), ONNXIO_OK);
        if (m) {
            CHECK_EQ_INT(tu_mappings_of(real), 0);
            for (size_t k = 0; k < NT; k++) {
                CHECK_MSG(payload_ok(tensor(m, k), k), "threads %d tensor %zu bytes", threads, k);
                CHECK(tensor(m, k)->raw_data.owner != NULL);
                if (sizes[k] < ONNXIO_DEFAULT_RAW_DATA_THRESHOLD) {
                    CHECK(tensor(m, k)->raw_data.owner == tensor(m, 0)->raw_data.owner);
                    CHECK_EQ_U64(onnxio_buffer_refcount(tensor(m, k)->raw_data.owner), small);
                } else {
                    CHECK_EQ_U64(onnxio_buffer_refcount(tensor(m, k)->raw_data.owner), 1);
                }
                CHECK(tensor(m, k)->raw_data.data < in.data || tensor(m, k)->raw_data.data >= in.data + in.size);
            }
            /* Replacing a payload releases the old block at once. */
            onnxio_buffer *old = onnxio_buffer_ref(tensor(m, 5)->raw_data.owner);
            onnxio_span_clear(&tensor(m, 5)->raw_data);
            CHECK_EQ_U64(onnxio_buffer_refcount(old), 1);
            onnxio_buffer_unref(old);
        }
        onnxio_arena_unref(a);
    }
    tu_end();

    tu_begin("no_copy from a file: one shared mapping, released with the last span");
    {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_parse_options o = {.no_copy = true};
        CHECK_STATUS(onnxio_load_model(path, &o, a, &m), ONNXIO_OK);
        if (m) {
            CHECK_EQ_INT(tu_mappings_of(real), 1);
            onnxio_buffer *map = tensor(m, 0)->raw_data.owner;
            CHECK(map != NULL);
            for (size_t k = 0; k < NT; k++) {
                CHECK(payload_ok(tensor(m, k), k));
                CHECK(tensor(m, k)->raw_data.owner == map);
            }
            CHECK_EQ_U64(onnxio_buffer_refcount(map), NT);
            /* A copy of the tree shares the mapping too. */
            onnxio_arena *b = onnxio_arena_new();
            onnxio_ModelProto *copy = onnxio_message_clone(b, m);
            CHECK(copy != NULL);
            CHECK_EQ_U64(onnxio_buffer_refcount(map), 2 * NT);
            onnxio_arena_unref(a);
            CHECK_EQ_INT(tu_mappings_of(real), 1);
            if (copy) CHECK(payload_ok(tensor(copy, 5), 5));
            onnxio_arena_unref(b);
        } else {
            onnxio_arena_unref(a);
        }
        CHECK_EQ_INT(tu_mappings_of(real), 0);
    }
    tu_end();

    tu_begin("no_copy from caller bytes: borrowed without an owner, shared with one");
    {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_parse_options o = {.no_copy = true};
        CHECK_STATUS(onnxio_load_model_from_bytes(in.data, in.size, NULL, &o, a, &m), ONNXIO_OK);
        for (size_t k = 0; m && k < NT; k++) {
            CHECK(tensor(m, k)->raw_data.owner == NULL);
            CHECK(tensor(m, k)->raw_data.data > in.data && tensor(m, k)->raw_data.data < in.data + in.size);
            CHECK(payload_ok(tensor(m, k), k));
        }
        onnxio_arena_unref(a);

        uint8_t *copy = malloc(in.size);
        memcpy(copy, in.data, in.size);
        onnxio_buffer *owner = onnxio_buffer_wrap(copy, in.size, NULL, NULL);
        a = onnxio_arena_new();
        CHECK_STATUS(onnxio_load_model_from_bytes(copy, in.size, owner, &o, a, &m), ONNXIO_OK);
        CHECK_EQ_U64(onnxio_buffer_refcount(owner), NT + 1);
        onnxio_arena_unref(a);
        CHECK_EQ_U64(onnxio_buffer_refcount(owner), 1);
        onnxio_buffer_unref(owner);
        free(copy);
    }
    tu_end();

    tu_begin("skip_raw_data: sizes kept, nothing read, serializing refuses");
    {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_parse_options o = {.skip_raw_data = true};
        CHECK_STATUS(onnxio_load_model(path, &o, a, &m), ONNXIO_OK);
        for (size_t k = 0; m && k < NT; k++) {
            CHECK(tensor(m, k)->raw_data.data == NULL);
            CHECK_EQ_U64(tensor(m, k)->raw_data.size, sizes[k]);
        }
        onnxio_buffer *out = NULL;
        if (m) CHECK_STATUS(onnxio_serialize(m, &out), ONNXIO_ERR_MISSING_PAYLOAD);
        onnxio_arena_unref(a);
    }
    tu_end();

    tu_begin("the serialized model and a saved file equal the input, for 1, 2 and 4 threads");
    for (int threads = 1; threads <= 4; threads *= 2) {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_parse_options o = {.num_threads = threads};
        CHECK_STATUS(onnxio_load_model_from_bytes(in.data, in.size, NULL, &o, a, &m), ONNXIO_OK);
        if (m) {
            onnxio_buffer *out = NULL;
            CHECK_STATUS(onnxio_serialize(m, &out), ONNXIO_OK);
            if (out) CHECK_BYTES(onnxio_buffer_data(out), onnxio_buffer_size(out), in.data, in.size);
            onnxio_buffer_unref(out);
            char *saved = tu_path_join(dir, "saved.onnx");
            onnxio_serialize_options so = {.num_threads = threads};
            CHECK_STATUS(onnxio_save_model(m, saved, &so), ONNXIO_OK);
            size_t n = 0;
            uint8_t *bytes = tu_read_file(saved, &n);
            CHECK_BYTES(bytes, n, in.data, in.size);
            free(bytes);
            free(saved);
        }
        onnxio_arena_unref(a);
    }
    tu_end();

    free(real);
    free(path);
    tu_bytes_free(&in);
}

/* ---- payload callback ----------------------------------------------- */

typedef struct place_ctx {
    uint8_t *arena_mem; /* caller memory the even tensors go to */
    size_t used;
    int calls;
    int saw_metadata;   /* every request had its name and dims */
    onnxio_buffer *owner;
} place_ctx;

static onnxio_payload_action place(void *ctx, const onnxio_payload_request *r, void **dst, onnxio_buffer **owner)
{
    place_ctx *c = ctx;
    size_t k = (size_t)atoi(r->tensor->name.data ? r->tensor->name.data + 1 : "0");
    c->calls++;
    if (r->tensor->name.size == 2 && r->tensor->dims.size == 1 && (uint64_t)r->tensor->dims.data[0] == r->size &&
        r->tensor->data_type == 2 && !r->external)
        c->saw_metadata++;
    if (k == 1) return ONNXIO_PAYLOAD_SKIP;
    if (k % 2 == 0) {
        *dst = c->arena_mem + c->used;
        c->used += (size_t)r->size;
        *owner = c->owner;
        return ONNXIO_PAYLOAD_PLACED;
    }
    return ONNXIO_PAYLOAD_LOAD;
}

static int released;
static void count_release(void *ctx, void *data, size_t size)
{
    (void)ctx;
    (void)size;
    free(data);
    released++;
}

static void test_callback(void)
{
    tu_begin("payload callback: placed in caller memory, skipped, or loaded; sees the whole tensor");
    for (int raw_first = 0; raw_first <= 1; raw_first++) {
        for (int threads = 1; threads <= 2; threads++) {
            tu_bytes in = encode_model(raw_first);
            size_t total = 0;
            for (size_t k = 0; k < NT; k++) total += sizes[k];
            place_ctx c = {malloc(total), 0, 0, 0, NULL};
            released = 0;
            c.owner = onnxio_buffer_wrap(c.arena_mem, total, count_release, NULL);
            onnxio_arena *a = onnxio_arena_new();
            onnxio_ModelProto *m = NULL;
            onnxio_parse_options o = {.num_threads = threads, .payload_fn = place, .payload_ctx = &c};
            CHECK_STATUS(onnxio_load_model_from_bytes(in.data, in.size, NULL, &o, a, &m), ONNXIO_OK);
            CHECK_EQ_INT(c.calls, NT);
            CHECK_EQ_INT(c.saw_metadata, NT);
            size_t at = 0;
            for (size_t k = 0; m && k < NT; k++) {
                onnxio_TensorProto *t = tensor(m, k);
                if (k == 1) {
                    CHECK(t->raw_data.data == NULL);
                    CHECK_EQ_U64(t->raw_data.size, sizes[k]);
                } else if (k % 2 == 0) {
                    CHECK(t->raw_data.data == c.arena_mem + at);
                    CHECK(t->raw_data.owner == c.owner);
                    CHECK(payload_ok(t, k));
                    at += sizes[k];
                } else {
                    CHECK(payload_ok(t, k));
                    CHECK(t->raw_data.owner != c.owner);
                }
            }
            onnxio_buffer_unref(c.owner);
            CHECK_EQ_INT(released, 0); /* the placed tensors still hold it */
            onnxio_arena_unref(a);
            CHECK_EQ_INT(released, 1);
            tu_bytes_free(&in);
        }
    }
    tu_end();
}

/* ---- consolidation -------------------------------------------------- */

static void test_consolidate(void)
{
    tu_begin("consolidation: large payloads share one aligned buffer, small ones stay, bytes unchanged");
    uint64_t aligns[] = {0, 64, 4096};
    for (size_t ai = 0; ai < 3; ai++) {
        tu_bytes in = encode_model(0);
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        CHECK_STATUS(onnxio_load_model_from_bytes(in.data, in.size, NULL, NULL, a, &m), ONNXIO_OK);
        if (!m) continue;
        onnxio_buffer *old_small = onnxio_buffer_ref(tensor(m, 1)->raw_data.owner);
        onnxio_buffer *old_large = onnxio_buffer_ref(tensor(m, 4)->raw_data.owner);
        onnxio_consolidate_options tb = {.alignment = aligns[ai]};
        onnxio_buffer *buf = NULL;
        CHECK_STATUS(onnxio_consolidate_tensors_to_buffer(m, &tb, &buf), ONNXIO_OK);
        uint64_t align = aligns[ai] ? aligns[ai] : 64;
        size_t large = 0;
        for (size_t k = 0; k < NT; k++) {
            onnxio_TensorProto *t = tensor(m, k);
            CHECK(payload_ok(t, k));
            if (sizes[k] >= 1024) {
                large++;
                CHECK(t->raw_data.owner == buf);
                CHECK_EQ_U64((uintptr_t)t->raw_data.data % align, 0);
                CHECK(t->raw_data.data >= onnxio_buffer_data(buf) &&
                      t->raw_data.data + t->raw_data.size <= onnxio_buffer_data(buf) + onnxio_buffer_size(buf));
            } else {
                CHECK(t->raw_data.owner != buf);
            }
        }
        CHECK_EQ_U64(onnxio_buffer_refcount(buf), large + 1);
        CHECK_EQ_U64(onnxio_buffer_refcount(old_small), 3); /* left as it was: the two small tensors' slab */
        CHECK_EQ_U64(onnxio_buffer_refcount(old_large), 1); /* dropped by its tensor */
        onnxio_buffer *out = NULL;
        CHECK_STATUS(onnxio_serialize(m, &out), ONNXIO_OK);
        if (out) CHECK_BYTES(onnxio_buffer_data(out), onnxio_buffer_size(out), in.data, in.size);
        onnxio_buffer_unref(out);
        onnxio_buffer_unref(old_small);
        onnxio_buffer_unref(old_large);
        onnxio_arena_unref(a);
        CHECK_EQ_U64(onnxio_buffer_refcount(buf), 1);
        onnxio_buffer_unref(buf);
        tu_bytes_free(&in);
    }
    onnxio_consolidate_options bad = {.alignment = 48};
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    CHECK_STATUS(onnxio_consolidate_tensors_to_buffer(m, &bad, NULL), ONNXIO_ERR_INVALID_ARGUMENT);
    onnxio_buffer *none = (onnxio_buffer *)1;
    CHECK_STATUS(onnxio_consolidate_tensors_to_buffer(m, NULL, &none), ONNXIO_OK);
    CHECK(none == NULL);
    onnxio_arena_unref(a);
    tu_end();
}

/* raw_data twice in one tensor, and a whole tensor read twice as a
 * singular message: the last payload wins while the first one's copy may
 * still be queued on the pool. Its buffer must stay alive until the copy ran
 * (ASan saw a heap corruption here before the pool held a reference). */
static void test_replaced_while_queued(const char *dir)
{
    tu_begin("a payload replaced while its copy is queued");
    tu_bytes t = {0}, t2 = {0}, attr = {0};
    encode_tensor(&t, 5, 0);  /* 9 MiB: several pool pieces */
    encode_tensor(&t2, 4, 0); /* 3 MiB */
    tu_bytes_put(&t, t2.data, t2.size); /* merged: the second raw_data wins */
    /* AttributeProto.t (field 5) twice: the messages merge, raw_data last wins */
    put_len_field(&attr, 5, &t);
    put_len_field(&attr, 5, &t2);
    char path[4096];
    snprintf(path, sizeof path, "%s/twice.pb", dir);
    tu_write_file(path, attr.data, attr.size);
    for (int threads = 1; threads <= 4; threads++) {
        for (int from_file = 0; from_file < 2; from_file++) {
            onnxio_arena *a = onnxio_arena_new();
            onnxio_parse_options o = {.num_threads = threads};
            onnxio_AttributeProto *m = NULL;
            if (from_file)
                CHECK_STATUS(onnxio_load_file(&onnxio_desc_AttributeProto, path, &o, a, (void **)&m), ONNXIO_OK);
            else
                CHECK_STATUS(onnxio_parse(&onnxio_desc_AttributeProto, attr.data, attr.size, NULL, &o, a, (void **)&m),
                             ONNXIO_OK);
            if (m && m->t) {
                CHECK(payload_ok(m->t, 4));
                CHECK_STR(m->t->name.data, "t4");
            } else {
                CHECK(m && m->t);
            }
            onnxio_arena_unref(a);
        }
    }
    tu_bytes_free(&t);
    tu_bytes_free(&t2);
    tu_bytes_free(&attr);
    tu_end();
}


/* ---- a cold copy load of a single file: the payloads stay where they were read ---- */

/* One tensor of the hand-made model: its name's length (0: no name, so that
 * the bytes around the payload are few), its payload's size, and where that
 * lies in the file. */
typedef struct placed {
    size_t name_len, size;
    uint64_t offset;
} placed;

static uint8_t in_place_pattern(size_t k, size_t i) { return (uint8_t)(i * 13 + k * 57 + (i >> 9)); }

/* A length as a 3-byte varint (protobuf readers take a varint padded with
 * continuation bytes), so that every header's size is known in advance. */
static void varint3(tu_bytes *b, size_t v)
{
    tu_bytes_byte(b, (uint8_t)(0x80 | (v & 0x7F)));
    tu_bytes_byte(b, (uint8_t)(0x80 | ((v >> 7) & 0x7F)));
    tu_bytes_byte(b, (uint8_t)(v >> 14));
}

/* The model: ir_version, then a graph of these tensors. A tensor's bytes
 * before its payload are 8, and 2 + the name's length with a name; each
 * payload's size is grown by up to 63 bytes so that the next payload
 * starts at the offset modulo 64 wanted. */
static tu_bytes in_place_model(placed *t, size_t n, const unsigned *want_mod64)
{
    tu_bytes graph = {0}, model = {0};
    uint64_t pos = 2 + 1 + 4; /* ir_version tag and value; the graph's tag and 4-byte length */
    for (size_t k = 0; k < n; k++) {
        size_t hdr = 1 + 3 + (t[k].name_len ? 2 + t[k].name_len : 0) + 1 + 3;
        t[k].offset = pos + hdr;
        CHECK(t[k].offset % 64 == want_mod64[k]);
        if (k + 1 < n) {
            size_t next_hdr = 1 + 3 + (t[k + 1].name_len ? 2 + t[k + 1].name_len : 0) + 1 + 3;
            uint64_t at = t[k].offset + t[k].size + next_hdr;
            t[k].size += (size_t)((want_mod64[k + 1] + 64 - at % 64) % 64);
        }
        tu_bytes tb = {0};
        if (t[k].name_len) {
            char name[128];
            memset(name, 'a' + (int)(k % 26), t[k].name_len);
            tu_bytes_tag(&tb, 8, 2);
            tu_bytes_varint(&tb, t[k].name_len);
            tu_bytes_put(&tb, name, t[k].name_len);
        }
        uint8_t *raw = malloc(t[k].size);
        for (size_t i = 0; i < t[k].size; i++) raw[i] = in_place_pattern(k, i);
        tu_bytes_tag(&tb, 9, 2);
        varint3(&tb, t[k].size);
        tu_bytes_put(&tb, raw, t[k].size);
        free(raw);
        tu_bytes_tag(&graph, 5, 2);
        varint3(&graph, tb.size);
        tu_bytes_put(&graph, tb.data, tb.size);
        pos += 1 + 3 + tb.size;
        tu_bytes_free(&tb);
    }
    tu_bytes_tag(&model, 1, 0);
    tu_bytes_varint(&model, 10);
    tu_bytes_tag(&model, 7, 2);
    tu_bytes_byte(&model, (uint8_t)(0x80 | (graph.size & 0x7F)));
    tu_bytes_byte(&model, (uint8_t)(0x80 | ((graph.size >> 7) & 0x7F)));
    tu_bytes_byte(&model, (uint8_t)(0x80 | ((graph.size >> 14) & 0x7F)));
    tu_bytes_byte(&model, (uint8_t)(graph.size >> 21));
    tu_bytes_put(&model, graph.data, graph.size);
    tu_bytes_free(&graph);
    return model;
}

/* Loads the model warm and cold (evicted first) on 0 to 2 threads: every
 * tensor has its bytes, 64-byte aligned, in the load's own memory; cold
 * (read whole), a payload is either in the file's buffer, within 4 KiB of
 * its place in the file, after the one before it there (no two overlap),
 * or a copy elsewhere. *copies and *stayed count them in the last cold
 * load (0 and 0 when the file could not be evicted). */
static void check_in_place(const char *what, const char *dir, const placed *t, size_t n, const tu_bytes *in,
                           size_t *copies, size_t *stayed)
{
    char *path = tu_path_join(dir, "in_place.onnx");
    CHECK(tu_write_file(path, in->data, in->size));
    *copies = *stayed = 0;
    for (int threads = 0; threads <= 2; threads++)
        for (int cold = 0; cold < 2; cold++) {
            int fd = open(path, O_RDONLY);
            if (cold) tu_evict_fd(fd);
            bool whole = cold && onnxio__file_cold(fd, 0, in->size);
            close(fd);
            if (cold && !whole && threads == 0)
                tu_skip("%s: the page cache keeps %s after posix_fadvise(DONTNEED): not read whole here", what, path);
            onnxio_arena *a = onnxio_arena_new();
            onnxio_ModelProto *m = NULL;
            onnxio_parse_options o = ONNXIO_PARSE_OPTIONS_INIT;
            o.num_threads = threads;
            if (!CHECK_STATUS(onnxio_load_model(path, &o, a, &m), ONNXIO_OK) || !CHECK(m->graph->initializer.size == n)) {
                onnxio_arena_unref(a);
                continue;
            }
            /* The file's buffer: where the payload that moved least lies,
             * less its offset (a payload moves by less than 4 KiB). */
            const uint8_t *base = NULL;
            if (whole) {
                int64_t best = INT64_MAX;
                for (size_t k = 0; k < n; k++) {
                    const uint8_t *b = m->graph->initializer.data[k]->raw_data.data - t[k].offset;
                    int64_t votes = 0;
                    for (size_t j = 0; j < n; j++) {
                        ptrdiff_t d = m->graph->initializer.data[j]->raw_data.data - (b + t[j].offset);
                        votes += d > -4096 && d < 4096;
                    }
                    if (-votes < best) best = -votes, base = b;
                }
            }
            size_t c = 0, st = 0;
            const uint8_t *last_end = NULL;
            for (size_t k = 0; k < n; k++) {
                const onnxio_TensorProto *x = m->graph->initializer.data[k];
                bool same = x->raw_data.size == t[k].size;
                for (size_t i = 0; same && i < t[k].size; i++) same = x->raw_data.data[i] == in_place_pattern(k, i);
                CHECK_MSG(same, "%s, %s, %d threads: tensor %zu has its bytes", what, cold ? "cold" : "warm", threads, k);
                CHECK_MSG((uintptr_t)x->raw_data.data % 64 == 0 && onnxio_buffer_is_allocated(x->raw_data.owner),
                          "%s, %s, %d threads: tensor %zu is 64-byte aligned, in the load's own memory", what,
                          cold ? "cold" : "warm", threads, k);
                if (!whole) continue;
                ptrdiff_t d = x->raw_data.data - (base + t[k].offset);
                if (d <= -4096 || d >= 4096) {
                    c++;
                    continue;
                }
                st++;
                CHECK_MSG(!last_end || x->raw_data.data >= last_end, "%s, %d threads: tensor %zu lies after the one before it",
                          what, threads, k);
                last_end = x->raw_data.data + x->raw_data.size;
            }
            if (whole) *copies = c, *stayed = st;
            onnxio_arena_unref(a);
        }
    unlink(path);
    free(path);
}

static void test_cold_in_place(const char *dir)
{
    tu_begin("a cold copy load of a single file: payloads aligned where they were read");
    /* Offsets modulo 64 and names that make each move: 0 aligned; 1 left
     * (62 bytes before it, 30 needed); 2 right (8 before it, 56 needed);
     * 3 left into the bytes 2 left (58 before it, 8 taken by 2, 20 needed);
     * 4 right; 5 pushed right by 4; 6 left; 7 right; 8 already aligned but
     * pushed by 7; 9 the last, right into the slack past the file's end. */
    placed t[] = {{47, 20000, 0}, {60, 30000, 0}, {0, 40000, 0},  {46, 50000, 0}, {0, 60000, 0},
                  {0, 70000, 0},  {50, 1500000, 0}, {20, 25000, 0}, {10, 35000, 0}, {0, 20000, 0}};
    const unsigned mod64[] = {0, 30, 56, 20, 50, 3, 40, 45, 0, 44};
    size_t n = sizeof t / sizeof t[0], copies, stayed;
    tu_bytes in = in_place_model(t, n, mod64);
    check_in_place("mixed", dir, t, n, &in, &copies, &stayed);
    if (stayed) CHECK_MSG(copies == 0 && stayed == n, "mixed: every payload stays in the file's buffer (%zu copies)", copies);
    tu_bytes_free(&in);
    /* 400 payloads of about 1.1 KiB side by side with 8 bytes between them,
     * at offsets modulo 64 that a generator picks: each move right pushes the
     * next ones further (by about 24 bytes a payload on average), until one
     * would move more than 4 KiB and is copied instead. */
    enum { RUN = 400 };
    placed *r = calloc(RUN, sizeof *r);
    unsigned *rm = calloc(RUN, sizeof *rm);
    uint32_t x = 12345;
    for (size_t k = 0; k < RUN; k++) {
        x = x * 1103515245u + 12345u;
        r[k] = (placed){0, 1100, 0};
        rm[k] = (x >> 16) % 64;
    }
    r[0].name_len = 47, rm[0] = 0;
    in = in_place_model(r, RUN, rm);
    check_in_place("side by side", dir, r, RUN, &in, &copies, &stayed);
    if (stayed) CHECK_MSG(copies > 0 && stayed > RUN / 2, "side by side: %zu copies, %zu stayed", copies, stayed);
    tu_bytes_free(&in);
    free(r);
    free(rm);
    tu_end();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char *dir = tu_make_temp_dir("onnxio-ownership");
    test_modes(dir);
    test_callback();
    test_consolidate();
    test_replaced_while_queued(dir);
    test_cold_in_place(dir);
    tu_remove_tree(dir);
    free(dir);
    return tu_finish();
}
