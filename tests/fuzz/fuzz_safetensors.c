/* libFuzzer target for the .safetensors reader (src/formats/safetensors.c; see
 * docs/fuzzing.md): the input is a whole .safetensors file.
 *
 * - onnxio_safetensors_open_bytes either fails with ONNXIO_ERR_SAFETENSORS
 *   (or ONNXIO_ERR_NO_MEMORY) and a message, or gives a header whose
 *   tensors lie inside the input, follow each other with no gap from the
 *   end of the header to the end of the file, are found by name, and have
 *   shapes (a valid pointer, scalars too) whose element count times the
 *   dtype's width is their size. onnxio_safetensors_open of the same bytes
 *   in a file gives the same status and tensors.
 * - Attached to a small model whose initializers have the file's names,
 *   data types and shapes (those with an ONNX type, up to 64 of them),
 *   onnxio_safetensors_load_into succeeds (copy or no_copy: bit 0 of the
 *   last byte) and each initializer's raw_data is the bytes at the
 *   tensor's offset; onnxio_safetensors_save of that model (with the
 *   file's metadata) reads back to the same tensors and metadata.
 * - Loaded into a fixed model (w0 FLOAT [4], w1 FLOAT [2]) the file either
 *   fills it or fails with ONNXIO_ERR_SAFETENSORS.
 * A broken invariant aborts, which libFuzzer reports as a crash. Files go
 * to a private directory under $TMPDIR (else /tmp), removed at exit. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxio/onnxio.h"

#define MAX_TENSORS 64

static char dir[PATH_MAX], in_path[PATH_MAX + 32], out_path[PATH_MAX + 32];

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_safetensors: %s (last error: %s)\n", what, onnxio_last_error());
    abort();
}

static void cleanup(void)
{
    unlink(in_path);
    unlink(out_path);
    rmdir(dir);
}

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/onnxio-fuzz-st-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(dir)) fail("mkdtemp");
    snprintf(in_path, sizeof in_path, "%s/in.safetensors", dir);
    snprintf(out_path, sizeof out_path, "%s/out.safetensors", dir);
    atexit(cleanup);
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) fail("writing the input file");
}

static void check_failure(onnxio_status s, const char *what)
{
    if (s != ONNXIO_ERR_SAFETENSORS && s != ONNXIO_ERR_NO_MEMORY) fail(what);
    if (!onnxio_last_error()[0]) fail("a failure without a message");
}

/* The header's invariants over an input of `size` bytes. */
static void check_header(const onnxio_safetensors *f, size_t size)
{
    size_t n = onnxio_safetensors_count(f);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const onnxio_safetensors_tensor *t = onnxio_safetensors_at(f, i);
        if (!t || !t->name || !t->dtype || strlen(t->name) != t->name_size) fail("a tensor without its strings");
        if (!t->shape) fail("a NULL shape");
        if (i == 0) {
            if (t->offset < 8) fail("the first tensor begins inside the length");
        } else if (t->offset != at) {
            fail("a gap or an overlap between tensors");
        }
        at = t->offset + t->size;
        if (at < t->offset || at > size) fail("a tensor past the end of the input");
        if (onnxio_safetensors_find(f, t->name) != t) fail("find does not give the tensor of that name");
        uint64_t elements = 1;
        for (size_t d = 0; d < t->rank; d++) {
            if (t->shape[d] < 0) fail("a negative dimension");
            if (__builtin_mul_overflow(elements, (uint64_t)t->shape[d], &elements)) fail("a shape that overflows");
        }
        unsigned bits = t->data_type ? onnxio_data_type_bits(t->data_type) : 0;
        if (bits && elements * bits / 8 != t->size) fail("size is not elements times the dtype's width");
        if (t->data_type && onnxio_safetensors_data_type(t->dtype) != t->data_type) fail("dtype table disagrees");
    }
    if (n && at != size) fail("the tensors do not end where the file does");
    for (size_t i = 0; i < onnxio_safetensors_metadata_count(f); i++)
        if (!onnxio_safetensors_metadata_key(f, i) || !onnxio_safetensors_metadata_value(f, i)) fail("NULL metadata");
}

static void set_name(onnxio_arena *a, onnxio_TensorProto *t, const char *name, size_t n)
{
    if (onnxio_string_set(a, &t->name, name, n)) fail("out of memory naming a tensor");
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_name);
}

static onnxio_TensorProto *add_initializer(onnxio_arena *a, onnxio_ModelProto *m, const char *name, size_t n,
                                           int32_t data_type, const int64_t *dims, size_t rank)
{
    onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    if (!t) fail("out of memory adding an initializer");
    set_name(a, t, name, n);
    t->data_type = data_type;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    for (size_t d = 0; d < rank; d++) {
        int64_t *p = onnxio_array_append(a, &t->dims, sizeof *p);
        if (!p) fail("out of memory adding a dimension");
        *p = dims[d];
    }
    return t;
}

static onnxio_ModelProto *new_model(onnxio_arena *a)
{
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    if (!m || !(m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto))) fail("out of memory for a model");
    return m;
}

/* The file's tensors with an ONNX type, loaded into a model made for them,
 * then saved and read back. */
static void check_load_and_save(const onnxio_safetensors *f, const uint8_t *data, bool no_copy)
{
    onnxio_arena *a = onnxio_arena_new();
    if (!a) fail("out of memory");
    onnxio_ModelProto *m = new_model(a);
    const onnxio_safetensors_tensor *src[MAX_TENSORS];
    const char *names[MAX_TENSORS];
    size_t n = 0;
    for (size_t i = 0; i < onnxio_safetensors_count(f) && n < MAX_TENSORS; i++) {
        const onnxio_safetensors_tensor *t = onnxio_safetensors_at(f, i);
        if (!t->data_type) continue;
        add_initializer(a, m, t->name, t->name_size, t->data_type, t->shape, t->rank);
        names[n] = t->name;
        src[n++] = t;
    }
    onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
    o.no_copy = no_copy;
    o.names = names;
    o.name_count = n;
    o.num_threads = 1;
    if (onnxio_safetensors_load_into(m, in_path, &o) != ONNXIO_OK) fail("load_into a model made for the file");
    for (size_t i = 0; i < n; i++) {
        const onnxio_TensorProto *t = m->graph->initializer.data[i];
        if (t->raw_data.size != src[i]->size ||
            (t->raw_data.size && memcmp(t->raw_data.data, data + src[i]->offset, t->raw_data.size) != 0))
            fail("an initializer's raw_data is not the file's bytes");
    }

    /* Saved with the file's metadata, read back. */
    size_t nm = onnxio_safetensors_metadata_count(f);
    const char **meta = nm ? malloc(2 * nm * sizeof *meta) : NULL;
    if (nm && !meta) fail("out of memory");
    for (size_t i = 0; i < nm; i++) {
        meta[2 * i] = onnxio_safetensors_metadata_key(f, i);
        meta[2 * i + 1] = onnxio_safetensors_metadata_value(f, i);
    }
    onnxio_safetensors_options so = ONNXIO_SAFETENSORS_OPTIONS_INIT;
    so.metadata = meta;
    so.metadata_count = nm;
    so.fsync = ONNXIO_OFF;
    so.num_threads = 1;
    onnxio_status s = onnxio_safetensors_save(m, out_path, &so);
    free(meta);
    if (s == ONNXIO_OK) {
        onnxio_safetensors *back;
        if (onnxio_safetensors_open(out_path, &back) != ONNXIO_OK) fail("reading back what save wrote");
        if (onnxio_safetensors_count(back) != n) fail("save wrote another number of tensors");
        for (size_t i = 0; i < n; i++) {
            const onnxio_safetensors_tensor *t = onnxio_safetensors_find(back, src[i]->name);
            if (!t || t->data_type != src[i]->data_type || t->rank != src[i]->rank || t->size != src[i]->size ||
                (t->rank && memcmp(t->shape, src[i]->shape, t->rank * sizeof *t->shape) != 0))
                fail("a saved tensor differs");
        }
        if (onnxio_safetensors_metadata_count(back) != nm) fail("save wrote other metadata");
        onnxio_safetensors_close(back);
    } else if (s != ONNXIO_ERR_SAFETENSORS && s != ONNXIO_ERR_NO_MEMORY) {
        /* A header longer than readers accept is the one refusal expected. */
        fail("save of a model the file filled");
    }
    onnxio_arena_unref(a);
}

/* A fixed model: the file fills it or is refused. */
static void check_fixed_model(void)
{
    onnxio_arena *a = onnxio_arena_new();
    if (!a) fail("out of memory");
    onnxio_ModelProto *m = new_model(a);
    const int64_t d4[] = {4}, d2[] = {2};
    add_initializer(a, m, "w0", 2, ONNXIO_TensorProto_DataType_FLOAT, d4, 1);
    add_initializer(a, m, "w1", 2, ONNXIO_TensorProto_DataType_FLOAT, d2, 1);
    for (int allow = 0; allow <= 1; allow++) {
        onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
        o.allow_unknown = allow;
        o.num_threads = 1;
        onnxio_status s = onnxio_safetensors_load_into(m, in_path, &o);
        if (s) check_failure(s, "load_into a fixed model: an unexpected status");
    }
    onnxio_arena_unref(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) setup();
    /* The bytes in a block of their own, so that ASan sees a read past
     * the end. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    onnxio_safetensors *f = NULL;
    onnxio_status s = onnxio_safetensors_open_bytes(copy, size, &f);
    write_file(in_path, copy, size);
    onnxio_safetensors *g = NULL;
    onnxio_status s2 = onnxio_safetensors_open(in_path, &g);
    if (s != s2) fail("open and open_bytes disagree");
    if (s) {
        if (f || g) fail("a failure with a handle");
        check_failure(s, "open_bytes: an unexpected status");
    } else {
        check_header(f, size);
        if (onnxio_safetensors_count(f) != onnxio_safetensors_count(g)) fail("open and open_bytes: other tensors");
        check_load_and_save(f, copy, size && (copy[size - 1] & 1));
        check_fixed_model();
    }
    onnxio_safetensors_close(f);
    onnxio_safetensors_close(g);
    free(copy);
    return 0;
}
