/* Round trips of real files: every .onnx model (as ModelProto) and every .pb
 * test-data file (as the message its model's graph input/output type says:
 * TensorProto, SequenceProto, MapProto, OptionalProto or SparseTensorProto)
 * of libonnx-testdata and ../shared/corpus must serialize back to the same
 * bytes after a parse in copy mode, in no_copy mode (borrowed and shared),
 * after onnxio_load_model / onnxio_load_file (memory-mapped), and after a
 * deep copy (which must also compare equal to the original).
 *
 * Every file here is canonical libprotobuf output (checked once against
 * libprotobuf 3.21: parse + serialize reproduces each of them), so "same
 * bytes as the file" is the same as "same bytes as libprotobuf". The
 * libprotobuf comparison proper lives in the Python tests; this test is the
 * one that runs under AddressSanitizer. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static long files_checked;
static unsigned long long bytes_checked;

/* ---- release counting for shared no_copy parses ----------------------- */

static int releases;
static void count_release(void *ctx, void *data, size_t size)
{
    (void)ctx;
    (void)data;
    (void)size;
    releases++;
}

/* ---- payload spans, walked through the descriptors --------------------- */

#define LARGE_PAYLOAD 1024 /* the default raw_data_threshold */

typedef struct span_stats {
    const uint8_t *input;      /* the parsed bytes */
    size_t input_size;
    onnxio_buffer *owner;      /* the owner given to the parser, or NULL */
    long spans;                /* payloads present */
    long large;                /* of them, >= LARGE_PAYLOAD bytes */
    long large_inside;         /* large ones pointing into the input */
    long large_owned_by_owner; /* large ones holding a reference to `owner` */
    long owned_by_owner;       /* all spans referencing `owner` */
    long inside_copy_mode;     /* any span pointing into the input */
    long owner_null;           /* spans with no owner */
} span_stats;

static void walk_spans(void *msg, span_stats *s, int depth)
{
    if (depth > 200) return;
    const onnxio_message_desc *d = ((onnxio_message *)msg)->desc;
    for (size_t i = 0; i < d->field_count; i++) {
        const onnxio_field_desc *f = &d->fields[i];
        void *member = onnxio_field_ptr(msg, f);
        if (f->kind == ONNXIO_KIND_RAW) {
            onnxio_span *sp = member;
            if (!onnxio_field_present(msg, f) || !sp->data) continue;
            s->spans++;
            bool inside = sp->data >= s->input && sp->data + sp->size <= s->input + s->input_size &&
                          s->input_size > 0;
            if (inside) s->inside_copy_mode++;
            if (!sp->owner) s->owner_null++;
            if (s->owner && sp->owner == s->owner) s->owned_by_owner++;
            if (sp->size >= LARGE_PAYLOAD) {
                s->large++;
                if (inside) s->large_inside++;
                if (s->owner && sp->owner == s->owner) s->large_owned_by_owner++;
            }
        } else if (f->kind == ONNXIO_KIND_MESSAGE) {
            if (f->label == ONNXIO_LABEL_REPEATED) {
                /* every onnxio_<Message>_list has this layout */
                const onnxio_TensorProto_list *list = member;
                for (size_t k = 0; k < list->size; k++) walk_spans(list->data[k], s, depth + 1);
            } else {
                void *sub = *(void **)member;
                if (sub) walk_spans(sub, s, depth + 1);
            }
        }
    }
}

/* ---- helpers ----------------------------------------------------------- */

/* Serializes `msg` and checks the bytes against `want`. */
static void check_serializes_to(void *msg, const uint8_t *want, size_t want_size, const char *path,
                                const char *mode)
{
    onnxio_buffer *out = NULL;
    onnxio_status st = onnxio_serialize(msg, &out);
    if (!CHECK_MSG(st == ONNXIO_OK, "%s (%s): onnxio_serialize gave %s: %s", path, mode,
                   onnxio_status_name(st), onnxio_last_error()))
        return;
    if (CHECK_MSG(out != NULL, "%s (%s): onnxio_serialize gave no buffer", path, mode)) {
        char *what = tu_strdup_printf("%s (%s): serialized bytes", path, mode);
        tu_check_bytes(onnxio_buffer_data(out), onnxio_buffer_size(out), want, want_size, what,
                       __FILE__, __LINE__);
        free(what);
    }
    onnxio_buffer_unref(out);
}

/* Sets the cached size of every message of the tree (the hint of
 * onnxio_serialize_to). */
static void set_cached_sizes(void *msg, uint64_t v, int depth)
{
    if (depth > 200) return;
    ((onnxio_message *)msg)->cached_size = v;
    const onnxio_message_desc *d = ((onnxio_message *)msg)->desc;
    for (size_t i = 0; i < d->field_count; i++) {
        const onnxio_field_desc *f = &d->fields[i];
        if (f->kind != ONNXIO_KIND_MESSAGE) continue;
        void *member = onnxio_field_ptr(msg, f);
        if (f->label == ONNXIO_LABEL_REPEATED) {
            const onnxio_TensorProto_list *list = member; /* every list has this layout */
            for (size_t k = 0; k < list->size; k++) set_cached_sizes(list->data[k], v, depth + 1);
        } else if (*(void **)member) {
            set_cached_sizes(*(void **)member, v, depth + 1);
        }
    }
}

static void *grow_realloc(void *user, void *data, size_t used, size_t size)
{
    (void)used;
    void *p = realloc(data, size);
    if (p) *(void **)user = p;
    return p;
}

/* onnxio_serialize_to, the one-pass writer: into exactly `size` bytes with
 * no grow callback right after the parse (whose cached sizes are the
 * lengths it read: no room is needed beyond the output), then from no
 * memory at all with every cached size wrong both ways (1-byte lengths
 * that must widen, 5-byte ones that must narrow). */
static void check_one_pass(void *msg, const uint8_t *data, size_t size, const char *path)
{
    uint8_t *buf = malloc(size ? size : 1);
    size_t n = 0;
    onnxio_status st = onnxio_serialize_to(msg, buf, size, NULL, NULL, &n);
    if (CHECK_MSG(st == ONNXIO_OK, "%s: onnxio_serialize_to after the parse gave %s: %s", path,
                  onnxio_status_name(st), onnxio_last_error()))
        tu_check_bytes(buf, n, data, size, "onnxio_serialize_to after the parse", __FILE__, __LINE__);
    free(buf);
    static const uint64_t wrong[] = {0, 1, (uint64_t)1 << 30};
    for (size_t w = 0; w < sizeof wrong / sizeof wrong[0]; w++) {
        set_cached_sizes(msg, wrong[w], 0);
        void *out = NULL;
        st = onnxio_serialize_to(msg, NULL, 0, grow_realloc, &out, &n);
        char *what = tu_strdup_printf("%s: onnxio_serialize_to from no memory, cached sizes %llu", path,
                                      (unsigned long long)wrong[w]);
        if (CHECK_MSG(st == ONNXIO_OK, "%s gave %s: %s", what, onnxio_status_name(st), onnxio_last_error()))
            tu_check_bytes(out, n, data, size, what, __FILE__, __LINE__);
        CHECK_MSG(((onnxio_message *)msg)->cached_size == size, "%s: the root's cached size is %llu, want %zu", what,
                  (unsigned long long)((onnxio_message *)msg)->cached_size, size);
        free(what);
        free(out);
    }
}

/* Parses `data` as `desc` with `opts` and `owner` into a new arena. */
static void *parse_new(const onnxio_message_desc *desc, const uint8_t *data, size_t size,
                       onnxio_buffer *owner, const onnxio_parse_options *opts, onnxio_arena **arena_out,
                       const char *path, const char *mode)
{
    onnxio_arena *arena = onnxio_arena_new();
    *arena_out = arena;
    if (!CHECK_MSG(arena != NULL, "onnxio_arena_new failed")) return NULL;
    void *msg = NULL;
    onnxio_status st = onnxio_parse(desc, data, size, owner, opts, arena, &msg);
    if (!CHECK_MSG(st == ONNXIO_OK && msg != NULL, "%s (%s): onnxio_parse as %s gave %s: %s", path, mode,
                   desc->name, onnxio_status_name(st), onnxio_last_error()))
        return NULL;
    CHECK_MSG(((onnxio_message *)msg)->desc == desc, "%s (%s): parsed message has the wrong descriptor",
              path, mode);
    return msg;
}

/* All the round trips of one file's bytes as message type `desc`. */
static void roundtrip_bytes(const onnxio_message_desc *desc, const uint8_t *data, size_t size,
                            const char *path)
{
    /* copy mode */
    onnxio_arena *arena = NULL;
    void *msg = parse_new(desc, data, size, NULL, NULL, &arena, path, "copy");
    if (msg) {
        check_serializes_to(msg, data, size, path, "copy");
        check_one_pass(msg, data, size, path);
        span_stats ss = {data, size, NULL, 0, 0, 0, 0, 0, 0, 0};
        walk_spans(msg, &ss, 0);
        CHECK_MSG(ss.inside_copy_mode == 0 && ss.owner_null == 0,
                  "%s (copy): %ld of %ld payloads point into the input, %ld have no owner", path,
                  ss.inside_copy_mode, ss.spans, ss.owner_null);

        /* the exact-size pass and serialize_into */
        uint64_t n = onnxio_serialized_size(msg);
        CHECK_MSG(n == size, "%s: onnxio_serialized_size gave %llu, want %zu", path, (unsigned long long)n,
                  size);
        if (n == size) {
            uint8_t *buf = malloc(size ? size : 1);
            onnxio_status st = onnxio_serialize_into(msg, buf, size);
            if (CHECK_MSG(st == ONNXIO_OK, "%s: onnxio_serialize_into gave %s: %s", path,
                          onnxio_status_name(st), onnxio_last_error()))
                CHECK_MSG(memcmp(buf, data, size) == 0, "%s: onnxio_serialize_into bytes differ", path);
            if (size > 0) {
                st = onnxio_serialize_into(msg, buf, size - 1);
                CHECK_MSG(st == ONNXIO_ERR_INVALID_ARGUMENT,
                          "%s: onnxio_serialize_into with a short size gave %s, want ONNXIO_ERR_INVALID_ARGUMENT",
                          path, onnxio_status_name(st));
            }
            free(buf);
        }

        /* deep copy into another arena, twice into the same message (the
         * second copy clears the first), then outlive the source arena */
        onnxio_arena *arena2 = onnxio_arena_new();
        void *copy = onnxio_message_new(arena2, desc);
        if (CHECK_MSG(copy != NULL, "%s: onnxio_message_new failed", path)) {
            onnxio_status st = onnxio_message_copy(arena2, copy, msg);
            CHECK_MSG(st == ONNXIO_OK, "%s: onnxio_message_copy gave %s: %s", path, onnxio_status_name(st),
                      onnxio_last_error());
            st = onnxio_message_copy(arena2, copy, msg);
            CHECK_MSG(st == ONNXIO_OK, "%s: second onnxio_message_copy gave %s: %s", path,
                      onnxio_status_name(st), onnxio_last_error());
            CHECK_MSG(onnxio_message_equal(copy, msg) == 1, "%s: onnxio_message_equal(copy, original) != 1",
                      path);
            CHECK_MSG(onnxio_message_equal(msg, copy) == 1, "%s: onnxio_message_equal(original, copy) != 1",
                      path);
            check_serializes_to(copy, data, size, path, "message_copy");
            onnxio_arena_unref(arena);
            arena = NULL;
            check_serializes_to(copy, data, size, path, "message_copy, source arena freed");
        }
        onnxio_arena_unref(arena2);
    }
    onnxio_arena_unref(arena);

    /* no_copy, borrowed: payloads point into `data` */
    onnxio_parse_options opts = {0};
    opts.no_copy = true;
    msg = parse_new(desc, data, size, NULL, &opts, &arena, path, "no_copy borrowed");
    if (msg) {
        check_serializes_to(msg, data, size, path, "no_copy borrowed");
        span_stats ss = {data, size, NULL, 0, 0, 0, 0, 0, 0, 0};
        walk_spans(msg, &ss, 0);
        CHECK_MSG(ss.large_inside == ss.large,
                  "%s (no_copy borrowed): only %ld of %ld large payloads point into the input", path,
                  ss.large_inside, ss.large);
        /* a clone of a borrowing message borrows too */
        onnxio_arena *arena2 = onnxio_arena_new();
        void *clone = onnxio_message_clone(arena2, msg);
        if (CHECK_MSG(clone != NULL, "%s: onnxio_message_clone failed", path)) {
            CHECK_MSG(onnxio_message_equal(clone, msg) == 1, "%s: clone of no_copy message not equal", path);
            check_serializes_to(clone, data, size, path, "no_copy clone");
        }
        onnxio_arena_unref(arena2);
    }
    onnxio_arena_unref(arena);

    /* no_copy, shared: payloads hold references to a buffer over `data`; the
     * buffer is released exactly once, after the last message goes */
    releases = 0;
    onnxio_buffer *owner = onnxio_buffer_wrap((void *)data, size, count_release, NULL);
    if (CHECK_MSG(owner != NULL, "onnxio_buffer_wrap failed")) {
        msg = parse_new(desc, data, size, owner, &opts, &arena, path, "no_copy shared");
        long held = 0;
        if (msg) {
            check_serializes_to(msg, data, size, path, "no_copy shared");
            span_stats ss = {data, size, owner, 0, 0, 0, 0, 0, 0, 0};
            walk_spans(msg, &ss, 0);
            CHECK_MSG(ss.large_inside == ss.large && ss.large_owned_by_owner == ss.large,
                      "%s (no_copy shared): of %ld large payloads, %ld point into the input and %ld "
                      "reference the owner",
                      path, ss.large, ss.large_inside, ss.large_owned_by_owner);
            held = (long)onnxio_buffer_refcount(owner) - 1;
            CHECK_MSG(held == ss.owned_by_owner,
                      "%s (no_copy shared): owner has %ld references from the message, %ld spans use it",
                      path, held, ss.owned_by_owner);
        }
        onnxio_buffer_unref(owner);
        if (held > 0)
            CHECK_MSG(releases == 0, "%s: owner released while the message still uses it", path);
        onnxio_arena_unref(arena);
        CHECK_MSG(releases == 1, "%s: owner released %d times after the arena went, want 1", path, releases);
    }
}

/* ---- choosing the message type of a .pb test-data file ----------------- */

/* The graph of the model of the last test directory seen: the descriptor for
 * each (non-initializer) input and each output. */
static struct {
    char model_path[PATH_MAX + 32];
    const onnxio_message_desc **inputs, **outputs;
    size_t n_inputs, n_outputs;
    const onnxio_message_desc **all_inputs;
    size_t n_all_inputs;
} cache;

static const onnxio_message_desc *desc_for_type(const onnxio_TypeProto *t)
{
    if (!t) return &onnxio_desc_TensorProto;
    if (t->sequence_type) return &onnxio_desc_SequenceProto;
    if (t->map_type) return &onnxio_desc_MapProto;
    if (t->optional_type) return &onnxio_desc_OptionalProto;
    if (t->sparse_tensor_type) return &onnxio_desc_SparseTensorProto;
    return &onnxio_desc_TensorProto;
}

static bool is_initializer(const onnxio_GraphProto *g, const onnxio_string *name)
{
    for (size_t i = 0; i < g->initializer.size; i++) {
        const onnxio_string *n = &g->initializer.data[i]->name;
        if (n->size == name->size && (name->size == 0 || memcmp(n->data, name->data, name->size) == 0))
            return true;
    }
    return false;
}

static void load_graph_types(const char *model_path)
{
    if (strcmp(cache.model_path, model_path) == 0) return;
    free(cache.inputs);
    free(cache.outputs);
    free(cache.all_inputs);
    memset(&cache, 0, sizeof cache);
    snprintf(cache.model_path, sizeof cache.model_path, "%s", model_path);
    size_t size;
    uint8_t *data = tu_read_file(model_path, &size);
    if (!data) return;
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_parse_options opts = {0};
    opts.skip_raw_data = true;
    void *m = NULL;
    if (onnxio_parse(&onnxio_desc_ModelProto, data, size, NULL, &opts, arena, &m) == ONNXIO_OK) {
        const onnxio_GraphProto *g = ((onnxio_ModelProto *)m)->graph;
        if (g) {
            cache.inputs = calloc(g->input.size + 1, sizeof *cache.inputs);
            cache.all_inputs = calloc(g->input.size + 1, sizeof *cache.all_inputs);
            cache.outputs = calloc(g->output.size + 1, sizeof *cache.outputs);
            for (size_t i = 0; i < g->input.size; i++) {
                const onnxio_ValueInfoProto *v = g->input.data[i];
                cache.all_inputs[cache.n_all_inputs++] = desc_for_type(v->type);
                if (!is_initializer(g, &v->name)) cache.inputs[cache.n_inputs++] = desc_for_type(v->type);
            }
            for (size_t i = 0; i < g->output.size; i++)
                cache.outputs[cache.n_outputs++] = desc_for_type(g->output.data[i]->type);
        }
    }
    onnxio_arena_unref(arena);
    free(data);
}

/* <dir>/test_data_set_N/input_K.pb -> the type of graph input K of
 * <dir>/model.onnx (output_K.pb: graph output K); TensorProto otherwise. */
static const onnxio_message_desc *desc_for_pb(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash) return &onnxio_desc_TensorProto;
    *slash = '\0';
    const char *base = slash + 1;
    char *slash2 = strrchr(buf, '/');
    if (!slash2) return &onnxio_desc_TensorProto;
    *slash2 = '\0';
    char model[PATH_MAX + 16];
    snprintf(model, sizeof model, "%s/model.onnx", buf);
    if (!tu_exists(model)) return &onnxio_desc_TensorProto;
    unsigned k;
    char tail[8];
    bool is_input;
    if (sscanf(base, "input_%u.p%1s", &k, tail) == 2)
        is_input = true;
    else if (sscanf(base, "output_%u.p%1s", &k, tail) == 2)
        is_input = false;
    else
        return &onnxio_desc_TensorProto;
    load_graph_types(model);
    if (is_input) {
        if (k < cache.n_inputs) return cache.inputs[k];
        if (k < cache.n_all_inputs) return cache.all_inputs[k];
    } else if (k < cache.n_outputs) {
        return cache.outputs[k];
    }
    return &onnxio_desc_TensorProto;
}

/* ---- per file ----------------------------------------------------------- */

static void roundtrip_model_file(const char *path)
{
    size_t size;
    uint8_t *data = tu_read_file(path, &size);
    if (!CHECK_MSG(data != NULL, "%s: cannot read", path)) return;
    roundtrip_bytes(&onnxio_desc_ModelProto, data, size, path);

    /* the file path: memory-mapped, copied and no_copy, external data left
     * alone so that the bytes stay the file's */
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_parse_options opts = {0};
        opts.no_copy = no_copy;
        opts.load_external_data = ONNXIO_OFF;
        onnxio_arena *arena = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_status st = onnxio_load_model(path, &opts, arena, &m);
        if (CHECK_MSG(st == ONNXIO_OK && m, "%s: onnxio_load_model (no_copy=%d) gave %s: %s", path, no_copy,
                      onnxio_status_name(st), onnxio_last_error()))
            check_serializes_to(m, data, size, path, no_copy ? "load_model no_copy" : "load_model");
        onnxio_arena_unref(arena);
    }
    files_checked++;
    bytes_checked += size;
    free(data);
}

static void roundtrip_pb_file(const char *path, long *by_type)
{
    size_t size;
    uint8_t *data = tu_read_file(path, &size);
    if (!CHECK_MSG(data != NULL, "%s: cannot read", path)) return;
    const onnxio_message_desc *desc = desc_for_pb(path);
    roundtrip_bytes(desc, data, size, path);
    if (desc == &onnxio_desc_TensorProto) by_type[0]++;
    else if (desc == &onnxio_desc_SequenceProto) by_type[1]++;
    else if (desc == &onnxio_desc_MapProto) by_type[2]++;
    else if (desc == &onnxio_desc_OptionalProto) by_type[3]++;
    else by_type[4]++;

    /* and through onnxio_load_file */
    onnxio_arena *arena = onnxio_arena_new();
    void *m = NULL;
    onnxio_status st = onnxio_load_file(desc, path, NULL, arena, &m);
    if (CHECK_MSG(st == ONNXIO_OK && m, "%s: onnxio_load_file as %s gave %s: %s", path, desc->name,
                  onnxio_status_name(st), onnxio_last_error()))
        check_serializes_to(m, data, size, path, "load_file");
    onnxio_arena_unref(arena);
    files_checked++;
    bytes_checked += size;
    free(data);
}

static void roundtrip_tree(const char *label, const char *root)
{
    tu_strlist models = {0}, pbs = {0};
    tu_find_files(root, ".onnx", &models);
    tu_find_files(root, ".pb", &pbs);

    tu_begin("round trip of %s models (%zu .onnx files)", label, models.size);
    for (size_t i = 0; i < models.size; i++) roundtrip_model_file(models.items[i]);
    CHECK_MSG(models.size > 0 || strcmp(label, "corpus") != 0, "no .onnx files under %s", root);
    tu_end();

    if (pbs.size > 0) {
        long by_type[5] = {0};
        tu_begin("round trip of %s test data (%zu .pb files)", label, pbs.size);
        for (size_t i = 0; i < pbs.size; i++) roundtrip_pb_file(pbs.items[i], by_type);
        tu_end();
        tu_note("as TensorProto %ld, SequenceProto %ld, MapProto %ld, OptionalProto %ld, SparseTensorProto %ld",
                by_type[0], by_type[1], by_type[2], by_type[3], by_type[4]);
    }
    tu_strlist_free(&models);
    tu_strlist_free(&pbs);
}

int main(int argc, char **argv)
{
    const char *repo = argc > 1 ? argv[1] : ".";
    const char *testdata = tu_testdata_dir();
    const char *corpus = tu_corpus_dir(repo);

    if (testdata) roundtrip_tree("libonnx-testdata", testdata);
    if (corpus) roundtrip_tree("corpus", corpus);

    /* the type choice itself: sequence/optional test data must not be read
     * as TensorProto (these directories exist in libonnx-testdata 1.12) */
    if (testdata) {
        tu_begin("message type of test data chosen from the model's graph");
        char *p = tu_strdup_printf("%s/node/test_identity_sequence/test_data_set_0/input_0.pb", testdata);
        if (tu_exists(p)) CHECK(desc_for_pb(p) == &onnxio_desc_SequenceProto);
        free(p);
        p = tu_strdup_printf("%s/node/test_optional_has_element/test_data_set_0/input_0.pb", testdata);
        if (tu_exists(p)) CHECK(desc_for_pb(p) == &onnxio_desc_OptionalProto);
        free(p);
        p = tu_strdup_printf("%s/node/test_abs/test_data_set_0/input_0.pb", testdata);
        if (tu_exists(p)) CHECK(desc_for_pb(p) == &onnxio_desc_TensorProto);
        free(p);
        tu_end();
    }

    free(cache.inputs);
    free(cache.outputs);
    free(cache.all_inputs);
    printf("%ld files checked (%.1f MB)\n", files_checked, (double)bytes_checked / 1e6);
    return tu_finish();
}
