/* Tensor slices (onnxio_tensor_file_*, onnxio_read_tensor_slice): random
 * slices of a float, a float16 and a packed INT4 tensor in every layout
 * (one .onnx file, external data, .onnxz) against an element-by-element
 * gather from a full load; the bytes read; views; bounds, rank, packing and
 * hostile files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"
#include "testutil.h"

static char *W;

/* The reference: every element of the slice gathered one by one from the
 * full payload `full`, packed as raw_data packs them. */
static uint8_t *gather(const uint8_t *full, const int64_t *dims, size_t rank, unsigned bits,
                       const onnxio_slice_range *r, uint64_t *size)
{
    uint64_t count = 1;
    for (size_t i = 0; i < rank; i++) count *= (uint64_t)(r[i].stop - r[i].start);
    *size = (count * bits + 7) / 8;
    uint8_t *out = calloc(*size ? *size : 1, 1);
    int64_t idx[8];
    for (size_t i = 0; i < rank; i++) idx[i] = r[i].start;
    for (uint64_t j = 0; j < count; j++) {
        uint64_t flat = 0;
        for (size_t i = 0; i < rank; i++) flat = flat * (uint64_t)dims[i] + (uint64_t)idx[i];
        if (bits == 4) {
            uint8_t nib = (uint8_t)((full[flat / 2] >> (flat % 2 * 4)) & 15);
            out[j / 2] |= (uint8_t)(nib << (j % 2 * 4));
        } else {
            memcpy(out + j * (bits / 8), full + flat * (bits / 8), bits / 8);
        }
        for (size_t i = rank; i-- > 0;) {
            if (++idx[i] < r[i].stop) break;
            idx[i] = r[i].start;
        }
    }
    return out;
}

static onnxio_ModelProto *make_model(onnxio_arena *a)
{
    const int64_t counts[] = {455, 12, 12000};
    onnxio_ModelProto *m = tu_model_of_initializers(a, 3, counts, ONNXIO_TensorProto_DataType_FLOAT, 4, 5);
    onnxio_TensorProto **t = m->graph->initializer.data;
    static const int64_t d0[] = {13, 7, 5}, d1[] = {12, 8}, d2[] = {80, 300};
    t[0]->dims.size = 0;
    for (size_t i = 0; i < 3; i++) *(int64_t *)onnxio_array_append(a, &t[0]->dims, 8) = d0[i];
    t[1]->dims.size = 0;
    t[1]->data_type = ONNXIO_TensorProto_DataType_INT4;
    for (size_t i = 0; i < 2; i++) *(int64_t *)onnxio_array_append(a, &t[1]->dims, 8) = d1[i];
    t[2]->dims.size = 0;
    t[2]->data_type = ONNXIO_TensorProto_DataType_FLOAT16;
    for (size_t i = 0; i < 2; i++) *(int64_t *)onnxio_array_append(a, &t[2]->dims, 8) = d2[i];
    /* A tensor whose values are in float_data: not sliceable. */
    onnxio_TensorProto *typed = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    tu_set_string(a, typed, &typed->name, ONNXIO_FIELD_TensorProto_name, "typed");
    typed->data_type = ONNXIO_TensorProto_DataType_FLOAT;
    onnxio_set_has(typed, ONNXIO_FIELD_TensorProto_data_type);
    *(int64_t *)onnxio_array_append(a, &typed->dims, 8) = 2;
    for (int i = 0; i < 2; i++) *(float *)onnxio_array_append(a, &typed->float_data, 4) = (float)i;
    return m;
}

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 8) % n;
}

static void check_layout(const char *path, onnxio_ModelProto *full)
{
    tu_begin("slices of %s", path);
    onnxio_tensor_file *f;
    if (!CHECK_STATUS(onnxio_tensor_file_open(path, NULL, &f), ONNXIO_OK)) return;
    for (size_t ti = 0; ti < 3; ti++) {
        const onnxio_TensorProto *t = full->graph->initializer.data[ti];
        const char *name = t->name.data;
        size_t rank = t->dims.size;
        unsigned bits = onnxio_data_type_bits(t->data_type);
        const onnxio_TensorProto *ft = onnxio_tensor_file_find(f, name);
        CHECK(ft && ft->dims.size == rank);
        for (int trial = 0; trial < 200; trial++) {
            onnxio_slice_range r[8];
            for (size_t i = 0; i < rank; i++) {
                int64_t d = t->dims.data[i];
                int64_t a = rnd((unsigned)d + 1), b = rnd((unsigned)d + 1);
                if (trial % 5 == 0) a = 0, b = d; /* whole axes too */
                r[i] = (onnxio_slice_range){a < b ? a : b, a < b ? b : a};
            }
            if (bits == 4) { /* whole bytes: even columns, or whole rows */
                r[1].start &= ~1;
                r[1].stop &= ~1;
                if (r[0].stop - r[0].start > 1) r[1] = (onnxio_slice_range){0, t->dims.data[1]};
            }
            uint64_t want_size;
            uint8_t *want = gather(t->raw_data.data, t->dims.data, rank, bits, r, &want_size);
            uint64_t size = 0;
            CHECK_STATUS(onnxio_tensor_slice_size(ft, r, rank, &size), ONNXIO_OK);
            CHECK_EQ_U64(size, want_size);
            onnxio_buffer *b = NULL;
            onnxio_slice_stats st = {.struct_size = sizeof st};
            if (CHECK_STATUS(onnxio_tensor_file_read(f, name, r, rank, NULL, 0, &b, &st), ONNXIO_OK)) {
                CHECK_BYTES(onnxio_buffer_data(b), onnxio_buffer_size(b), want, (size_t)want_size);
                CHECK_EQ_U64(st.bytes, want_size);
                CHECK_EQ_U64(st.bytes_read, want_size); /* exactly the slice: no byte more */
                CHECK_EQ_U64(st.payload_bytes, t->raw_data.size);
            }
            onnxio_buffer_unref(b);
            /* Into the caller's memory, with the one-call form. */
            uint8_t *dst = malloc(want_size + 1);
            if (CHECK_STATUS(onnxio_read_tensor_slice(path, name, r, rank, dst, want_size, NULL, NULL, NULL), ONNXIO_OK))
                CHECK(memcmp(dst, want, (size_t)want_size) == 0);
            free(dst);
            free(want);
        }
        /* A view of whole rows; none for a slice of several runs. */
        onnxio_slice_range rows[3] = {{2, 5}, {0, t->dims.data[1]}, {0, rank > 2 ? t->dims.data[2] : 0}};
        const void *v = NULL;
        uint64_t vs = 0;
        onnxio_buffer *owner = NULL;
        CHECK_STATUS(onnxio_tensor_file_view(f, name, rows, rank, &v, &vs, &owner), ONNXIO_OK);
        uint64_t ws;
        uint8_t *want = gather(t->raw_data.data, t->dims.data, rank, bits, rows, &ws);
        if (CHECK(v != NULL)) CHECK_BYTES(v, (size_t)vs, want, (size_t)ws);
        free(want);
        onnxio_buffer_unref(owner);
        rows[1] = (onnxio_slice_range){0, 2};
        v = NULL;
        CHECK_STATUS(onnxio_tensor_file_view(f, name, rows, rank, &v, &vs, &owner), ONNXIO_OK);
        CHECK(v == NULL);
    }
    /* Errors name the tensor, the axis and the values. */
    onnxio_slice_range bad[3] = {{0, 14}, {0, 7}, {0, 5}};
    uint8_t tmp[64];
    CHECK_STATUS(onnxio_tensor_file_read(f, "w0", bad, 3, tmp, sizeof tmp, NULL, NULL), ONNXIO_ERR_SLICE);
    CHECK(strstr(onnxio_last_error(), "tensor 'w0': axis 0: range [0, 14) is not within [0, 13)") != NULL);
    bad[0] = (onnxio_slice_range){-1, 2};
    CHECK_STATUS(onnxio_tensor_file_read(f, "w0", bad, 3, tmp, sizeof tmp, NULL, NULL), ONNXIO_ERR_SLICE);
    bad[0] = (onnxio_slice_range){3, 2};
    CHECK_STATUS(onnxio_tensor_file_read(f, "w0", bad, 3, tmp, sizeof tmp, NULL, NULL), ONNXIO_ERR_SLICE);
    bad[0] = (onnxio_slice_range){0, 1};
    CHECK_STATUS(onnxio_tensor_file_read(f, "w0", bad, 2, tmp, sizeof tmp, NULL, NULL), ONNXIO_ERR_SLICE);
    CHECK(strstr(onnxio_last_error(), "has 3 axes, the slice gives 2 ranges") != NULL);
    CHECK_STATUS(onnxio_tensor_file_read(f, "w0", bad, 3, tmp, 8, NULL, NULL), ONNXIO_ERR_INVALID_ARGUMENT);
    onnxio_slice_range odd[2] = {{0, 1}, {1, 3}};
    CHECK_STATUS(onnxio_tensor_file_read(f, "w1", odd, 2, tmp, sizeof tmp, NULL, NULL), ONNXIO_ERR_SLICE);
    CHECK(strstr(onnxio_last_error(), "axis 1: start 1 splits a byte") != NULL);
    odd[1] = (onnxio_slice_range){2, 5};
    CHECK_STATUS(onnxio_tensor_file_read(f, "w1", odd, 2, tmp, sizeof tmp, NULL, NULL), ONNXIO_ERR_SLICE);
    CHECK(strstr(onnxio_last_error(), "axis 1: stop 5 splits a byte") != NULL);
    odd[0] = (onnxio_slice_range){0, 3};
    odd[1] = (onnxio_slice_range){0, 2}; /* rows of 8 elements: each run of 2 is whole bytes */
    CHECK_STATUS(onnxio_tensor_file_read(f, "w1", odd, 2, tmp, sizeof tmp, NULL, NULL), ONNXIO_OK);
    /* Values in float_data (0, 1) are converted and sliced. */
    onnxio_slice_range one = {1, 2};
    CHECK_STATUS(onnxio_tensor_file_read(f, "typed", &one, 1, tmp, sizeof tmp, NULL, NULL), ONNXIO_OK);
    float typed1;
    memcpy(&typed1, tmp, 4);
    CHECK(typed1 == 1.0f);
    one = (onnxio_slice_range){0, 1};
    CHECK_STATUS(onnxio_tensor_file_read(f, "nope", &one, 1, tmp, sizeof tmp, NULL, NULL), ONNXIO_ERR_NOT_FOUND);
    onnxio_tensor_file_close(f);
    tu_end();
}

/* Hostile files: a shape past 64 bits, an external length that does not
 * match the shape, a data file cut short. */
static void check_hostile(void)
{
    tu_begin("hostile files");
    onnxio_arena *a = onnxio_arena_new();
    const int64_t counts[] = {64};
    onnxio_ModelProto *m = tu_model_of_initializers(a, 1, counts, ONNXIO_TensorProto_DataType_FLOAT, 4, 1);
    onnxio_TensorProto *t = m->graph->initializer.data[0];
    char *p = tu_path_join(W, "huge.onnx");
    t->dims.data[0] = INT64_MAX;
    *(int64_t *)onnxio_array_append(a, &t->dims, 8) = INT64_MAX;
    CHECK_STATUS(onnxio_save_model(m, p, NULL), ONNXIO_OK);
    onnxio_slice_range r[2] = {{0, 1}, {0, 1}};
    uint8_t tmp[16];
    CHECK_STATUS(onnxio_read_tensor_slice(p, "w0", r, 2, tmp, sizeof tmp, NULL, NULL, NULL), ONNXIO_ERR_SLICE);
    CHECK(strstr(onnxio_last_error(), "more bytes than 64 bits count") != NULL);
    free(p);
    /* An inline payload shorter than its shape. */
    t->dims.size = 1;
    t->dims.data[0] = 65;
    p = tu_path_join(W, "short.onnx");
    CHECK_STATUS(onnxio_save_model(m, p, NULL), ONNXIO_OK);
    CHECK_STATUS(onnxio_read_tensor_slice(p, "w0", r, 1, tmp, sizeof tmp, NULL, NULL, NULL), ONNXIO_ERR_SLICE);
    free(p);
    /* External: the data file cut after the save. */
    t->dims.data[0] = 64;
    p = tu_path_join(W, "ext.onnx");
    onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
    so.external_data.location = "ext.data";
    so.external_data.size_threshold = 1;
    CHECK_STATUS(onnxio_save_model(m, p, &so), ONNXIO_OK);
    char *data = tu_path_join(W, "ext.data");
    CHECK(truncate(data, 100) == 0);
    r[0] = (onnxio_slice_range){60, 64};
    CHECK_STATUS(onnxio_read_tensor_slice(p, "w0", r, 1, tmp, sizeof tmp, NULL, NULL, NULL), ONNXIO_ERR_EXTERNAL_RANGE);
    free(data);
    free(p);
    /* Not a model at all. */
    p = tu_path_join(W, "junk.onnx");
    tu_write_file(p, "\xff\xff\xff\xff", 4);
    CHECK_STATUS(onnxio_read_tensor_slice(p, "w0", r, 1, tmp, sizeof tmp, NULL, NULL, NULL), ONNXIO_ERR_DECODE);
    free(p);
    onnxio_arena_unref(a);
    tu_end();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    W = tu_make_temp_dir("onnxio_slice");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = make_model(a);
    char *single = tu_path_join(W, "m.onnx"), *ext = tu_path_join(W, "e.onnx"), *zip = tu_path_join(W, "z.onnxz");
    onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
    CHECK_STATUS(onnxio_save_model(m, single, NULL), ONNXIO_OK);
    CHECK_STATUS(onnxio_save_model(m, zip, NULL), ONNXIO_OK);
    so.external_data.location = "e.data";
    so.external_data.size_threshold = 1;
    CHECK_STATUS(onnxio_save_model(m, ext, &so), ONNXIO_OK);
    /* The reference: a full load of the single file. */
    onnxio_arena *la = onnxio_arena_new();
    onnxio_ModelProto *full = NULL;
    if (CHECK_STATUS(onnxio_load_model(single, NULL, la, &full), ONNXIO_OK)) {
        check_layout(single, full);
        check_layout(ext, full);
        check_layout(zip, full);
    }
    check_hostile();
    onnxio_arena_unref(la);
    onnxio_arena_unref(a);
    free(single);
    free(ext);
    free(zip);
    tu_remove_tree(W);
    free(W);
    return tu_finish();
}
