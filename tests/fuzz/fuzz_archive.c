/* libFuzzer target for .onnxz (zip) archives (see docs/fuzzing.md); the
 * archive twin of fuzz_decode.c.
 *
 * Every input is taken as an archive:
 * - onnxio_archive_open_bytes: on success every entry is walked and checked
 *   (names NUL-terminated at name_size and without an inner NUL, the local
 *   header and the data inside the input, stored entries with equal sizes,
 *   onnxio_archive_find giving back the same entry, __MODEL_PROTO present);
 *   on failure the status must be ONNXIO_ERR_ARCHIVE (or NO_MEMORY) with a
 *   message.
 * - when the input starts like an archive ("PK\3\4" or "PK\5\6"; anything
 *   else is protobuf and fuzz_decode's business), onnxio_load_model_from_bytes
 *   five ways: copy (CRC-32 checked, the default), no_copy with a refcounted
 *   owner (released exactly once when the arena goes; CRC not checked, the
 *   default) and a payload threshold of 1, no_copy without an owner and with
 *   verify_crc ON and alignment 1, copy with verify_crc OFF and 2 threads,
 *   and copy with load_external_data OFF (tensors stay external).
 *
 * Whatever loads must be stable as in fuzz_decode: serialize -> parse ->
 * serialize gives the same bytes, the size pass agrees, the re-parsed
 * message and a clone compare equal; loaded tensors are no longer external.
 * The modes must agree: copy with CRC checks and no_copy with verify_crc ON
 * give the same status, and when both load, the same bytes; likewise copy
 * with verify_crc OFF and no_copy with its default (off).
 *
 * Failures must come with a message and one of the statuses a hostile
 * archive can earn: ONNXIO_ERR_ARCHIVE (bad records, names, overlaps,
 * deflate data), ONNXIO_ERR_CHECKSUM (CRC-32), ONNXIO_ERR_DECODE and
 * ONNXIO_ERR_DEPTH (the __MODEL_PROTO bytes), ONNXIO_ERR_EXTERNAL_DATA,
 * ONNXIO_ERR_EXTERNAL_RANGE, ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_PARENT
 * and ONNXIO_ERR_PATH_SELF (external data keys that do not name or fit an
 * entry), and ONNXIO_ERR_NO_MEMORY (run with allocator_may_return_null=1:
 * an inflated entry may legitimately be up to ~1000x its deflated bytes).
 * Never ONNXIO_ERR_MISSING_PAYLOAD (only a save gives it), INVALID_ARGUMENT
 * (the options are valid), IO, NOT_FOUND or the other PATH_* statuses (no
 * file is touched). A broken invariant aborts, which libFuzzer reports as a
 * crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxio/onnxio.h"

static void fail(const char *what, int mode)
{
    fprintf(stderr, "fuzz_archive: %s (mode %d): %s\n", what, mode, onnxio_last_error());
    abort();
}

static int expected_failure(onnxio_status st)
{
    switch (st) {
    case ONNXIO_ERR_ARCHIVE:
    case ONNXIO_ERR_CHECKSUM:
    case ONNXIO_ERR_DECODE:
    case ONNXIO_ERR_DEPTH:
    case ONNXIO_ERR_EXTERNAL_DATA:
    case ONNXIO_ERR_EXTERNAL_RANGE:
    case ONNXIO_ERR_PATH_ABSOLUTE:
    case ONNXIO_ERR_PATH_PARENT:
    case ONNXIO_ERR_PATH_SELF:
    case ONNXIO_ERR_NO_MEMORY:
        return 1;
    default:
        return 0;
    }
}

static void count_release(void *ctx, void *data, size_t size)
{
    (void)data;
    (void)size;
    (*(int *)ctx)++;
}

/* ---- the archive's directory ------------------------------------------- */

static void walk(const uint8_t *data, size_t size)
{
    onnxio_archive *ar = NULL;
    onnxio_status st = onnxio_archive_open_bytes(data, size, NULL, &ar);
    if (st != ONNXIO_OK) {
        if (ar) fail("archive_open_bytes failed but returned an archive", -1);
        if (st != ONNXIO_ERR_ARCHIVE && st != ONNXIO_ERR_NO_MEMORY) fail("archive_open_bytes: unexpected status", -1);
        if (!onnxio_last_error()[0]) fail("archive_open_bytes: failure without a message", -1);
        return;
    }
    if (!ar) fail("archive_open_bytes: OK without an archive", -1);
    size_t n = onnxio_archive_entry_count(ar);
    if (n == 0) fail("an open archive without entries", -1);
    for (size_t i = 0; i < n; i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(ar, i);
        if (!e || !e->name) fail("entry_at gave NULL", -1);
        if (e->name_size == 0 || e->name[e->name_size] != '\0' || strlen(e->name) != e->name_size)
            fail("entry name not NUL-terminated at name_size", -1);
        if (e->data_offset > size || e->compressed_size > size - e->data_offset)
            fail("entry data outside the input", -1);
        if (e->header_offset > e->data_offset || e->data_offset - e->header_offset < 30 + (uint64_t)e->name_size)
            fail("entry data overlaps its local header", -1);
        if (memcmp(data + e->header_offset, "PK\3\4", 4) != 0) fail("no local header signature at header_offset", -1);
        if (e->method != 0 && e->method != 8) fail("entry with a method other than stored or deflate", -1);
        if (e->method == 0 && e->size != e->compressed_size) fail("stored entry with different sizes", -1);
        if (onnxio_archive_find(ar, e->name) != e) fail("find(name) is not the entry", -1);
    }
    if (onnxio_archive_entry_at(ar, n) != NULL) fail("entry_at(count) is not NULL", -1);
    if (!onnxio_archive_find(ar, "__MODEL_PROTO")) fail("an open archive without __MODEL_PROTO", -1);
    onnxio_archive_close(ar);
}

/* ---- loads ---------------------------------------------------------------- */

static int still_external(const onnxio_TensorProto *t)
{
    return onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
           t->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL;
}

/* Whether any tensor of the graph tree is still external (initializers,
 * node attributes and their subgraphs: what a fuzzed model reaches first). */
static int graph_has_external(const onnxio_GraphProto *g, int depth)
{
    if (!g || depth > 8) return 0;
    for (size_t i = 0; i < g->initializer.size; i++)
        if (still_external(g->initializer.data[i])) return 1;
    for (size_t i = 0; i < g->node.size; i++) {
        const onnxio_NodeProto *n = g->node.data[i];
        for (size_t k = 0; k < n->attribute.size; k++) {
            const onnxio_AttributeProto *a = n->attribute.data[k];
            if (a->t && still_external(a->t)) return 1;
            for (size_t j = 0; j < a->tensors.size; j++)
                if (still_external(a->tensors.data[j])) return 1;
            if (graph_has_external(a->g, depth + 1)) return 1;
        }
    }
    return 0;
}

static void no_external(onnxio_ModelProto *m, int mode)
{
    if (graph_has_external(m->graph, 0)) fail("a loaded model still has an external tensor", mode);
}

/* serialize -> parse -> serialize is stable; returns the serialized bytes. */
static onnxio_buffer *check_stable(onnxio_ModelProto *m, int mode)
{
    uint64_t size = onnxio_serialized_size(m);
    onnxio_buffer *out1 = NULL;
    if (onnxio_serialize(m, &out1) != ONNXIO_OK) fail("serialize after a successful load", mode);
    if (onnxio_buffer_size(out1) != size) fail("serialized_size disagrees with serialize", mode);
    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) abort();
    void *again = NULL;
    if (onnxio_parse(&onnxio_desc_ModelProto, onnxio_buffer_data(out1), onnxio_buffer_size(out1), NULL, NULL, arena,
                     &again) != ONNXIO_OK)
        fail("re-parse of our own output", mode);
    onnxio_buffer *out2 = NULL;
    if (onnxio_serialize(again, &out2) != ONNXIO_OK) fail("serialize of the re-parsed model", mode);
    if (onnxio_buffer_size(out1) != onnxio_buffer_size(out2) ||
        memcmp(onnxio_buffer_data(out1), onnxio_buffer_data(out2), onnxio_buffer_size(out1)) != 0)
        fail("serialize -> parse -> serialize is not stable", mode);
    if (onnxio_message_equal(again, m) != 1) fail("re-parsed model differs from the loaded one", mode);
    void *copy = onnxio_message_clone(arena, m);
    if (!copy || onnxio_message_equal(copy, m) != 1) fail("clone differs from the loaded model", mode);
    onnxio_buffer_unref(out2);
    onnxio_arena_unref(arena);
    return out1;
}

#define MODES 5

/* Loads in one mode; returns the status and (on success) the serialized
 * model in *out. */
static onnxio_status load_one(const uint8_t *data, size_t size, int mode, onnxio_buffer **out)
{
    onnxio_parse_options opts;
    memset(&opts, 0, sizeof opts);
    opts.num_threads = 1;
    int released = 0;
    onnxio_buffer *owner = NULL;
    switch (mode) {
    case 0: /* copy, CRC checked (default) */
        break;
    case 1: /* no_copy with an owner, CRC not checked (default), every payload "large" */
        opts.no_copy = true;
        opts.raw_data_threshold = 1;
        owner = onnxio_buffer_wrap((void *)(uintptr_t)data, size, count_release, &released);
        if (!owner) abort();
        break;
    case 2: /* no_copy borrowing, CRC checked, every offset "aligned" */
        opts.no_copy = true;
        opts.verify_crc = ONNXIO_ON;
        opts.alignment = 1;
        break;
    case 3: /* copy without CRC checks, on a pool */
        opts.verify_crc = ONNXIO_OFF;
        opts.num_threads = 2;
        opts.raw_data_threshold = 1;
        break;
    default: /* structure only */
        opts.load_external_data = ONNXIO_OFF;
        break;
    }
    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) abort();
    onnxio_ModelProto *m = NULL;
    onnxio_status st = onnxio_load_model_from_bytes(data, size, owner, &opts, arena, &m);
    *out = NULL;
    if (st == ONNXIO_OK) {
        if (!m) fail("OK without a model", mode);
        if (mode != 4) no_external(m, mode);
        *out = check_stable(m, mode);
    } else {
        if (m) fail("failure with a model", mode);
        if (!expected_failure(st)) fail(onnxio_status_name(st), mode);
        if (!onnxio_last_error()[0]) fail("failure without a message", mode);
    }
    onnxio_arena_unref(arena);
    onnxio_buffer_unref(owner);
    if (mode == 1 && released != 1) fail("owner not released exactly once", mode);
    return st;
}

static int same_bytes(const onnxio_buffer *a, const onnxio_buffer *b)
{
    return onnxio_buffer_size(a) == onnxio_buffer_size(b) &&
           memcmp(onnxio_buffer_data(a), onnxio_buffer_data(b), onnxio_buffer_size(a)) == 0;
}

/* Two modes that check the same things must agree (NO_MEMORY aside). */
static void agree(const onnxio_status *st, onnxio_buffer *const *out, int x, int y)
{
    if (st[x] == ONNXIO_ERR_NO_MEMORY || st[y] == ONNXIO_ERR_NO_MEMORY) return;
    if (st[x] != st[y]) {
        fprintf(stderr, "fuzz_archive: mode %d gave %s, mode %d gave %s\n", x, onnxio_status_name(st[x]), y,
                onnxio_status_name(st[y]));
        abort();
    }
    if (st[x] == ONNXIO_OK && !same_bytes(out[x], out[y])) {
        fprintf(stderr, "fuzz_archive: modes %d and %d loaded different models\n", x, y);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* its own block so that ASan sees reads past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);

    walk(buf, size);
    if (size >= 4 && buf[0] == 'P' && buf[1] == 'K' && ((buf[2] == 3 && buf[3] == 4) || (buf[2] == 5 && buf[3] == 6))) {
        onnxio_status st[MODES];
        onnxio_buffer *out[MODES];
        for (int mode = 0; mode < MODES; mode++) st[mode] = load_one(buf, size, mode, &out[mode]);
        agree(st, out, 0, 2);
        agree(st, out, 1, 3);
        for (int mode = 0; mode < MODES; mode++) onnxio_buffer_unref(out[mode]);
    }
    free(buf);
    return 0;
}
