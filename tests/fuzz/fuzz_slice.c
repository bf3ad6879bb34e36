/* libFuzzer target for tensor slices (src/api/slice.c; see docs/fuzzing.md),
 * differential: the input is a model file (.onnx or .onnxz), written to a
 * private directory under $TMPDIR (else /tmp) and read two ways.
 *
 * - onnxio_load_model reads it whole (external data resolved beside it,
 *   where there is none: such tensors fail both ways).
 * - onnxio_tensor_file_open opens it for slices. When the whole load
 *   succeeds the open must too. For each of the main graph's first 16
 *   initializers (names that repeat or hold a NUL byte skipped), the whole
 *   tensor and one slice (ranges from a generator seeded by the input) are
 *   read with onnxio_tensor_file_read and must equal the same ranges cut
 *   from the full load's raw_data (C order; 2-, 4- and 6-bit types whole
 *   only), or fail with ONNXIO_ERR_SLICE where the full load holds no
 *   raw_data of the size the dims give. onnxio_tensor_file_view, when it
 *   gives a view, gives the same bytes.
 * When the whole load fails, the slice reads only must not crash, hang or
 * leak. A broken invariant aborts, which libFuzzer reports as a crash. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxio/onnxio.h"

#define MAX_TENSORS 16
#define MAX_RANK 64

static char dir[PATH_MAX], in_path[PATH_MAX + 32];

static void fail(const char *what, const char *name)
{
    fprintf(stderr, "fuzz_slice: %s (tensor '%s'; last error: %s)\n", what, name ? name : "", onnxio_last_error());
    abort();
}

static void cleanup(void)
{
    unlink(in_path);
    rmdir(dir);
}

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/onnxio-fuzz-slice-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(dir)) fail("mkdtemp", NULL);
    snprintf(in_path, sizeof in_path, "%s/in.onnx", dir);
    atexit(cleanup);
}

static uint64_t rng;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Ranges inside dims: random for whole-byte types, whole otherwise. */
static void pick(const onnxio_TensorProto *t, bool whole, onnxio_slice_range *r)
{
    for (size_t k = 0; k < t->dims.size; k++) {
        uint64_t d = (uint64_t)t->dims.data[k];
        if (whole || d == 0) {
            r[k] = (onnxio_slice_range){0, (int64_t)d};
            continue;
        }
        uint64_t a = next() % (d + 1);
        uint64_t b = a + next() % (d - a + 1);
        r[k] = (onnxio_slice_range){(int64_t)a, (int64_t)b};
    }
}

/* The ranges cut from `raw` (the whole tensor, C order, `es` bytes an
 * element) into a new block of *size bytes. */
static uint8_t *cut(const onnxio_TensorProto *t, const uint8_t *raw, size_t es, const onnxio_slice_range *r,
                    size_t *size)
{
    size_t rank = t->dims.size, count = 1;
    for (size_t k = 0; k < rank; k++) count *= (size_t)(r[k].stop - r[k].start); /* within the raw size */
    for (size_t k = 0; k < rank; k++)
        if (r[k].stop == r[k].start) count = 0;
    *size = count * es;
    uint8_t *out = malloc(*size ? *size : 1);
    if (!out) fail("out of memory", NULL);
    int64_t idx[MAX_RANK];
    for (size_t k = 0; k < rank; k++) idx[k] = r[k].start;
    for (size_t i = 0; i < count; i++) {
        size_t at = 0;
        for (size_t k = 0; k < rank; k++) at = at * (size_t)t->dims.data[k] + (size_t)idx[k];
        memcpy(out + i * es, raw + at * es, es);
        for (size_t k = rank; k-- > 0;) { /* the odometer, last axis fastest */
            if (++idx[k] < r[k].stop) break;
            idx[k] = r[k].start;
        }
    }
    return out;
}

static void check_read(onnxio_tensor_file *f, const onnxio_TensorProto *full, const char *name, bool whole)
{
    size_t rank = full->dims.size;
    if (rank > MAX_RANK) return;
    for (size_t k = 0; k < rank; k++)
        if (full->dims.data[k] < 0) return; /* the slice refuses it; checked by the read below not crashing */
    onnxio_slice_range r[MAX_RANK];
    pick(full, whole, r);
    uint64_t raw_size;
    unsigned bits = onnxio_data_type_bits(full->data_type);
    bool has_raw = onnxio_has(full, ONNXIO_FIELD_TensorProto_raw_data) && onnxio_tensor_raw_size(full, &raw_size) == 1 &&
                   raw_size == full->raw_data.size && !onnxio_tensor_is_external(full) && !full->segment;
    onnxio_buffer *b = NULL;
    onnxio_slice_stats st = {sizeof st, 0, 0, 0, 0};
    onnxio_status s = onnxio_tensor_file_read(f, name, r, rank, NULL, 0, &b, &st);
    if (s != ONNXIO_OK) {
        if (has_raw && s != ONNXIO_ERR_NO_MEMORY && s != ONNXIO_ERR_EXPANSION && s != ONNXIO_ERR_SLICE)
            fail("a slice of a tensor the full load read fails", name);
        if (has_raw && s == ONNXIO_ERR_SLICE && bits % 8 == 0 && bits)
            fail("a whole-byte slice of raw_data refused", name);
        if (!onnxio_last_error()[0]) fail("a failure without a message", name);
        return;
    }
    if (!has_raw) {
        /* Read although the full load holds no raw_data of that size: only
         * an external tensor, which the full load resolved, may do that. */
        if (!onnxio_tensor_is_external(full) && onnxio_has(full, ONNXIO_FIELD_TensorProto_raw_data))
            fail("a slice read of raw_data whose size is not the dims'", name);
        onnxio_buffer_unref(b);
        return;
    }
    if (onnxio_buffer_size(b) != st.bytes) fail("stats.bytes is not the buffer's size", name);
    if (bits % 8 == 0 && bits) {
        size_t want_size;
        uint8_t *want = cut(full, full->raw_data.data, bits / 8, r, &want_size);
        if (want_size != onnxio_buffer_size(b) || (want_size && memcmp(want, onnxio_buffer_data(b), want_size) != 0))
            fail("the slice differs from the same ranges of the full load", name);
        free(want);
    } else if (onnxio_buffer_size(b) != full->raw_data.size ||
               (full->raw_data.size && memcmp(onnxio_buffer_data(b), full->raw_data.data, full->raw_data.size) != 0)) {
        fail("the whole packed tensor differs from the full load", name);
    }
    const void *view = NULL;
    uint64_t view_size = 0;
    onnxio_buffer *owner = NULL;
    if (onnxio_tensor_file_view(f, name, r, rank, &view, &view_size, &owner) == ONNXIO_OK && view) {
        if (view_size != onnxio_buffer_size(b) || (view_size && memcmp(view, onnxio_buffer_data(b), view_size) != 0))
            fail("a view differs from the read", name);
        onnxio_buffer_unref(owner);
    }
    onnxio_buffer_unref(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) setup();
    FILE *fp = fopen(in_path, "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) fail("writing the input file", NULL);
    rng = 0x9E3779B97F4A7C15ull ^ size;
    for (size_t i = 0; i < size && i < 64; i++) rng = rng * 31 + data[i];
    if (!rng) rng = 1;

    onnxio_arena *a = onnxio_arena_new();
    if (!a) return 0;
    onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
    po.num_threads = 1;
    onnxio_ModelProto *m = NULL;
    onnxio_status ls = onnxio_load_model(in_path, &po, a, &m);
    onnxio_slice_options so = ONNXIO_SLICE_OPTIONS_INIT;
    so.num_threads = 1;
    onnxio_tensor_file *f = NULL;
    onnxio_status fs = onnxio_tensor_file_open(in_path, &so, &f);
    if (ls == ONNXIO_OK && fs != ONNXIO_OK && fs != ONNXIO_ERR_NO_MEMORY)
        fail("the whole load succeeds, the slice open fails", NULL);
    if (ls == ONNXIO_OK && fs == ONNXIO_OK && m->graph) {
        const onnxio_TensorProto_list *l = &m->graph->initializer;
        for (size_t i = 0; i < l->size && i < MAX_TENSORS; i++) {
            const onnxio_TensorProto *t = l->data[i];
            char name[512];
            if (t->name.size >= sizeof name || (t->name.size && memchr(t->name.data, 0, t->name.size))) continue;
            memcpy(name, t->name.size ? t->name.data : "", t->name.size);
            name[t->name.size] = '\0';
            bool repeated = false;
            for (size_t j = 0; j < i && !repeated; j++)
                repeated = l->data[j]->name.size == t->name.size &&
                           (!t->name.size || memcmp(l->data[j]->name.data, t->name.data, t->name.size) == 0);
            if (repeated) continue;
            check_read(f, t, name, true);
            check_read(f, t, name, false);
        }
    } else if (fs == ONNXIO_OK) {
        /* Reads of a file the full load refused: no crash, no leak. */
        const onnxio_ModelProto *sm = onnxio_tensor_file_model(f);
        for (size_t i = 0; sm && sm->graph && i < sm->graph->initializer.size && i < MAX_TENSORS; i++) {
            const onnxio_TensorProto *t = sm->graph->initializer.data[i];
            char name[512];
            if (t->name.size >= sizeof name || t->dims.size > MAX_RANK) continue;
            memcpy(name, t->name.size ? t->name.data : "", t->name.size);
            name[t->name.size] = '\0';
            onnxio_slice_range r[MAX_RANK];
            for (size_t k = 0; k < t->dims.size; k++) r[k] = (onnxio_slice_range){0, t->dims.data[k] > 0 ? 1 : 0};
            onnxio_buffer *b = NULL;
            if (onnxio_tensor_file_read(f, name, r, t->dims.size, NULL, 0, &b, NULL) == ONNXIO_OK) onnxio_buffer_unref(b);
        }
    }
    onnxio_tensor_file_close(f);
    onnxio_arena_unref(a);
    return 0;
}
