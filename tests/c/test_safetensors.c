/* .safetensors files (src/formats/safetensors.c).
 *
 * - Files built here by hand (their header JSON written with printf, an
 *   independent writer) load into a model: bytes, copy and no_copy owners,
 *   names, allow_unknown, type and shape mismatches named in the error.
 * - Hostile headers: every one gives ONNXIO_ERR_SAFETENSORS with a message
 *   that names a byte (header errors) or the tensor, leaves the model as it
 *   was, and never crashes; a valid file cut at every byte and a few
 *   thousand single-byte mutations of it too.
 * - onnxio_safetensors_save: read back by the reader, typed fields
 *   converted, a refused save leaves the old file.
 * - Every allocation and file operation of a load and a save made to fail
 *   in turn: a clean error, no leak, the model or the old file unchanged.
 * The Python tests check files against the safetensors package itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "testutil.h"

static char *W;

/* 8-byte length + header + data. */
static void build(tu_bytes *b, const char *header, const void *data, size_t size)
{
    b->size = 0;
    uint8_t len[8];
    tu_put64(len, strlen(header));
    tu_bytes_put(b, len, 8);
    tu_bytes_put(b, header, strlen(header));
    if (size) tu_bytes_put(b, data, size);
}

static char *write_tmp(const char *name, const void *data, size_t size)
{
    char *p = tu_path_join(W, name);
    CHECK(tu_write_file(p, data, size));
    return p;
}

/* A model of two FLOAT initializers w0 [4] and w1 [2] (raw_data filled). */
static onnxio_ModelProto *model2(onnxio_arena *a)
{
    const int64_t counts[] = {4, 2};
    return tu_model_of_initializers(a, 2, counts, ONNXIO_TensorProto_DataType_FLOAT, 4, 1);
}

static const char VALID[] = "{\"__metadata__\":{\"format\":\"pt\"},"
                            "\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                            "\"w1\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}";

static void test_load(void)
{
    tu_begin("load_into: copy and no_copy, names, unknown tensors");
    uint8_t data[24];
    for (int i = 0; i < 24; i++) data[i] = (uint8_t)(200 + i);
    tu_bytes b = {0};
    build(&b, VALID, data, sizeof data);
    char *path = write_tmp("valid.safetensors", b.data, b.size);

    onnxio_safetensors *f;
    CHECK_STATUS(onnxio_safetensors_open(path, &f), ONNXIO_OK);
    CHECK_EQ_INT(onnxio_safetensors_count(f), 2);
    const onnxio_safetensors_tensor *t = onnxio_safetensors_find(f, "w1");
    CHECK(t && t->offset == 8 + strlen(VALID) + 16 && t->size == 8 && t->rank == 1 && t->shape[0] == 2);
    CHECK(t && t->data_type == ONNXIO_TensorProto_DataType_FLOAT);
    CHECK_EQ_INT(onnxio_safetensors_metadata_count(f), 1);
    CHECK_STR(onnxio_safetensors_metadata_key(f, 0), "format");
    CHECK_STR(onnxio_safetensors_metadata_value(f, 0), "pt");
    CHECK(onnxio_safetensors_find(f, "w2") == NULL);
    onnxio_safetensors_close(f);

    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = model2(a);
        onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
        o.no_copy = no_copy;
        CHECK_STATUS(onnxio_safetensors_load_into(m, path, &o), ONNXIO_OK);
        onnxio_TensorProto *w0 = m->graph->initializer.data[0], *w1 = m->graph->initializer.data[1];
        CHECK_BYTES(w0->raw_data.data, w0->raw_data.size, data, 16);
        CHECK_BYTES(w1->raw_data.data, w1->raw_data.size, data + 16, 8);
        CHECK_EQ_INT(onnxio_buffer_is_allocated(w0->raw_data.owner), !no_copy);
        if (no_copy) CHECK(w0->raw_data.owner == w1->raw_data.owner);
        onnxio_arena_unref(a);
    }

    /* names: only w1. */
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model2(a);
    onnxio_TensorProto *w0 = m->graph->initializer.data[0];
    uint8_t before[16];
    memcpy(before, w0->raw_data.data, 16);
    const char *names[] = {"w1"};
    onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
    o.names = names;
    o.name_count = 1;
    CHECK_STATUS(onnxio_safetensors_load_into(m, path, &o), ONNXIO_OK);
    CHECK_BYTES(w0->raw_data.data, w0->raw_data.size, before, 16);
    CHECK_BYTES(m->graph->initializer.data[1]->raw_data.data, 8, data + 16, 8);
    const char *twice[] = {"w1", "w0", "w1"};
    o.names = twice;
    o.name_count = 3;
    CHECK_STATUS(onnxio_safetensors_load_into(m, path, &o), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(onnxio_last_error(), "'w1' is named twice") != NULL);
    o.name_count = 1;
    const char *missing[] = {"nope"};
    o.names = missing;
    CHECK_STATUS(onnxio_safetensors_load_into(m, path, &o), ONNXIO_ERR_SAFETENSORS);
    CHECK(strstr(onnxio_last_error(), "'nope'") != NULL);
    onnxio_arena_unref(a);

    /* A file tensor the model lacks: refused, or skipped with allow_unknown. */
    a = onnxio_arena_new();
    const int64_t one[] = {4};
    m = tu_model_of_initializers(a, 1, one, ONNXIO_TensorProto_DataType_FLOAT, 4, 1);
    CHECK_STATUS(onnxio_safetensors_load_into(m, path, NULL), ONNXIO_ERR_SAFETENSORS);
    CHECK_MSG(strstr(onnxio_last_error(), "tensor 'w1': the model has no initializer") != NULL, "%s",
              onnxio_last_error());
    CHECK(memcmp(m->graph->initializer.data[0]->raw_data.data, data, 16) != 0); /* unchanged */
    o = (onnxio_safetensors_options)ONNXIO_SAFETENSORS_OPTIONS_INIT;
    o.allow_unknown = true;
    CHECK_STATUS(onnxio_safetensors_load_into(m, path, &o), ONNXIO_OK);
    CHECK_BYTES(m->graph->initializer.data[0]->raw_data.data, 16, data, 16);
    onnxio_arena_unref(a);

    /* Type and shape mismatches name both sides; the model is unchanged. */
    a = onnxio_arena_new();
    m = model2(a);
    m->graph->initializer.data[1]->data_type = ONNXIO_TensorProto_DataType_FLOAT16;
    m->graph->initializer.data[1]->dims.data[0] = 4;
    memcpy(before, m->graph->initializer.data[0]->raw_data.data, 16);
    CHECK_STATUS(onnxio_safetensors_load_into(m, path, NULL), ONNXIO_ERR_SAFETENSORS);
    CHECK_MSG(strstr(onnxio_last_error(), "tensor 'w1': safetensors has F32 [2], the model has FLOAT16 [4]") != NULL,
              "%s", onnxio_last_error());
    CHECK_BYTES(m->graph->initializer.data[0]->raw_data.data, 16, before, 16);
    onnxio_arena_unref(a);

    /* Missing file. */
    a = onnxio_arena_new();
    m = model2(a);
    char *nofile = tu_path_join(W, "missing.safetensors");
    CHECK_STATUS(onnxio_safetensors_load_into(m, nofile, NULL), ONNXIO_ERR_NOT_FOUND);
    free(nofile);
    onnxio_arena_unref(a);

    CHECK_EQ_INT(onnxio_safetensors_data_type("BF16"), ONNXIO_TensorProto_DataType_BFLOAT16);
    CHECK_EQ_INT(onnxio_safetensors_data_type("F8_E4M3"), ONNXIO_TensorProto_DataType_FLOAT8E4M3FN);
    CHECK_EQ_INT(onnxio_safetensors_data_type("F4"), 0);
    CHECK_EQ_INT(onnxio_safetensors_data_type("nope"), 0);
    CHECK_STR(onnxio_safetensors_dtype(ONNXIO_TensorProto_DataType_FLOAT16), "F16");
    CHECK(onnxio_safetensors_dtype(ONNXIO_TensorProto_DataType_STRING) == NULL);
    /* The table maps both ways consistently. */
    for (int32_t dt = 0; dt < 40; dt++) {
        const char *n = onnxio_safetensors_dtype(dt);
        if (n) CHECK_EQ_INT(onnxio_safetensors_data_type(n), dt);
    }
    free(path);
    tu_bytes_free(&b);
    tu_end();
}

/* The header's bad forms: open_bytes and load_into both refuse them. */
static void expect_bad(const char *name, const uint8_t *file, size_t size, const char *needle)
{
    onnxio_safetensors *f = (onnxio_safetensors *)1;
    onnxio_status s = onnxio_safetensors_open_bytes(file, size, &f);
    CHECK_MSG(s == ONNXIO_ERR_SAFETENSORS, "%s: open_bytes gave %s (%s)", name, onnxio_status_name(s),
              onnxio_last_error());
    CHECK_MSG(f == NULL, "%s: *out not NULL", name);
    const char *msg = onnxio_last_error();
    CHECK_MSG(needle == NULL || strstr(msg, needle), "%s: error \"%s\" lacks \"%s\"", name, msg, needle);
    char *path = write_tmp("bad.safetensors", file, size);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model2(a);
    onnxio_arena *a2 = onnxio_arena_new();
    onnxio_ModelProto *ref = model2(a2);
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
        o.no_copy = no_copy;
        s = onnxio_safetensors_load_into(m, path, &o);
        CHECK_MSG(s == ONNXIO_ERR_SAFETENSORS, "%s: load_into gave %s (%s)", name, onnxio_status_name(s),
                  onnxio_last_error());
        CHECK_MSG(strstr(onnxio_last_error(), path) != NULL, "%s: the error names no file: %s", name,
                  onnxio_last_error());
        CHECK_MSG(onnxio_message_equal(m, ref) == 1, "%s: the model changed", name);
    }
    onnxio_arena_unref(a);
    onnxio_arena_unref(a2);
    free(path);
}

static void bad_header(const char *name, const char *header, size_t data_size, const char *needle)
{
    tu_bytes b = {0};
    uint8_t *data = calloc(1, data_size + 1);
    build(&b, header, data, data_size);
    expect_bad(name, b.data, b.size, needle);
    free(data);
    tu_bytes_free(&b);
}

#define T0 "\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}"

static void test_malformed(void)
{
    tu_begin("hostile headers: clear errors, the model unchanged");
    uint8_t small[8] = {0};
    for (size_t n = 0; n < 8; n++) expect_bad("short file", small, n, "8-byte header length");
    uint8_t huge[16];
    tu_put64(huge, UINT64_MAX);
    memset(huge + 8, ' ', 8);
    expect_bad("N = 2^64-1", huge, sizeof huge, "more than 100000000 bytes");
    tu_put64(huge, 100000001);
    expect_bad("N just past the cap", huge, sizeof huge, "more than 100000000 bytes");
    tu_put64(huge, 9);
    expect_bad("N past the end", huge, sizeof huge, "runs past the end of the file");

    bad_header("empty header", "", 0, "header byte 0");
    bad_header("not an object", "[]", 0, "JSON object");
    bad_header("unterminated object", "{", 0, "header byte 1");
    bad_header("unterminated string", "{\"w0", 0, "never ends");
    bad_header("no colon", "{\"w0\" 1}", 0, "':' expected");
    bad_header("trailing comma", "{" T0 ",}", 16, "a string");
    bad_header("garbage after", "{" T0 "}x", 16, "bytes after");
    bad_header("two objects", "{" T0 "}{}", 16, "bytes after");
    bad_header("missing dtype", "{\"w0\":{\"shape\":[4],\"data_offsets\":[0,16]}}", 16, "has no \"dtype\"");
    bad_header("missing shape", "{\"w0\":{\"dtype\":\"F32\",\"data_offsets\":[0,16]}}", 16, "has no \"shape\"");
    bad_header("missing offsets", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4]}}", 16, "has no \"data_offsets\"");
    bad_header("unknown key", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16],\"x\":1}}", 16,
               "unknown key 'x'");
    bad_header("duplicate key", "{\"w0\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
               16, "appears twice");
    bad_header("unknown dtype", "{\"w0\":{\"dtype\":\"F31\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
               "unknown dtype 'F31'");
    bad_header("dtype not a string", "{\"w0\":{\"dtype\":32,\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
               "dtype must be a string");
    bad_header("negative dim", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", 16,
               "non-negative integer");
    bad_header("fraction dim", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4.0],\"data_offsets\":[0,16]}}", 16,
               "non-negative integer");
    bad_header("exponent dim", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4e0],\"data_offsets\":[0,16]}}", 16,
               "non-negative integer");
    bad_header("leading zero", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[04],\"data_offsets\":[0,16]}}", 16,
               "leading zero");
    bad_header("dim past int64", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,16]}}",
               16, "too large");
    bad_header("offset past uint64",
               "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,18446744073709551616]}}", 16,
               "too large");
    bad_header("three offsets", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16,32]}}", 16,
               "after two offsets");
    bad_header("one offset", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", 16, "','");
    bad_header("end before begin", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,0]}}", 16,
               "end before they begin");
    bad_header("byte count mismatch", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,12]}}", 12,
               "tensor 'w0': F32 [4] needs 16 bytes, its data_offsets [0, 12] hold 12");
    bad_header("past the data", "{" T0 "}", 8, "past the end of the data");
    bad_header("data left over", "{" T0 "}", 24, "the file holds 24 bytes of data");
    bad_header("gap", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 24,
               "begins at data byte 8");
    bad_header("overlap",
               "{" T0 ",\"w1\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16,
               "begins at data byte 8, but the tensors before it end at 16");
    bad_header("same name twice", "{" T0 "," T0 "}", 16, "appears twice");
    bad_header("shape overflow",
               "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}", 16,
               "more bytes than 64 bits");
    bad_header("F4 odd count", "{\"w0\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1,
               "whole number of bytes");
    bad_header("control char", "{\"w\n0\":{}}", 0, "control character");
    bad_header("bad escape", "{\"w\\q\":{}}", 0, "invalid escape");
    bad_header("lone surrogate", "{\"w\\udc00\":{}}", 0, "lone low surrogate");
    bad_header("cut surrogate", "{\"w\\ud800x\":{}}", 0, "without its low surrogate");
    bad_header("NUL escape", "{\"w\\u0000\":{}}", 0, "NUL");
    bad_header("not UTF-8", "{\"w\xff\":{}}", 0, "not UTF-8");
    bad_header("overlong UTF-8", "{\"w\xc0\x80\":{}}", 0, "not UTF-8");
    bad_header("metadata not strings", "{\"__metadata__\":{\"a\":1}}", 0, "values must be strings");
    bad_header("metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "appears twice");
    bad_header("metadata key twice", "{\"__metadata__\":{\"a\":\"b\",\"a\":\"c\"}}", 0, "appears twice");
    bad_header("tensor not an object", "{\"w0\":[]}", 0, "tensor's object");
    /* Every header error names a byte. */
    bad_header("byte named", "{\"w0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16] x}}", 16,
               "header byte 55 (file byte 63)");
    /* Valid corner cases. */
    tu_bytes b = {0};
    build(&b, "{}", NULL, 0);
    onnxio_safetensors *f;
    CHECK_STATUS(onnxio_safetensors_open_bytes(b.data, b.size, &f), ONNXIO_OK);
    CHECK_EQ_INT(onnxio_safetensors_count(f), 0);
    onnxio_safetensors_close(f);
    build(&b,
          " { \"__metadata__\" : null , \"e\\u00e9\\ud83d\\ude00\\n\" : { \"shape\" : [ 0 , 3 ] , \"dtype\" : \"BF16\" ,"
          " \"data_offsets\" : [ 0 , 0 ] } , \"s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}   ",
          "x", 1);
    CHECK_STATUS(onnxio_safetensors_open_bytes(b.data, b.size, &f), ONNXIO_OK);
    CHECK_EQ_INT(onnxio_safetensors_count(f), 2);
    const onnxio_safetensors_tensor *t = onnxio_safetensors_find(f, "e\xc3\xa9\xf0\x9f\x98\x80\n");
    CHECK(t && t->rank == 2 && t->size == 0 && t->shape[1] == 3);
    t = onnxio_safetensors_find(f, "s");
    CHECK(t && t->rank == 0 && t->size == 1);
    onnxio_safetensors_close(f);
    tu_bytes_free(&b);
    tu_end();
}

static void test_mutations(void)
{
    tu_begin("a valid file cut at every byte, and mutated byte by byte: no crash");
    uint8_t data[24] = {0};
    tu_bytes b = {0};
    build(&b, VALID, data, sizeof data);
    long refused = 0, accepted = 0;
    for (size_t n = 0; n < b.size; n++) {
        onnxio_safetensors *f = NULL;
        onnxio_status s = onnxio_safetensors_open_bytes(b.data, n, &f);
        CHECK_MSG(s == ONNXIO_ERR_SAFETENSORS, "cut at %zu: %s", n, onnxio_status_name(s));
        onnxio_safetensors_close(f);
    }
    uint8_t *copy = malloc(b.size);
    unsigned seed = 12345;
    for (int i = 0; i < 20000; i++) {
        memcpy(copy, b.data, b.size);
        for (int k = 0; k < 1 + i % 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % (8 + strlen(VALID));
            seed = seed * 1103515245u + 12345u;
            static const char pool[] = "{}[],:\"\\0123456789-.eE uU\xff\x80 F32";
            copy[at] = (i & 1) ? (uint8_t)(seed >> 16) : (uint8_t)pool[(seed >> 16) % (sizeof pool - 1)];
        }
        onnxio_safetensors *f = NULL;
        onnxio_status s = onnxio_safetensors_open_bytes(copy, b.size, &f);
        if (s == ONNXIO_OK) {
            accepted++;
            /* What is accepted is consistent: tensors cover the data. */
            uint64_t end = 8 + (uint64_t)(copy[0] | copy[1] << 8);
            for (size_t k = 0; k < onnxio_safetensors_count(f); k++) {
                const onnxio_safetensors_tensor *t = onnxio_safetensors_at(f, k);
                CHECK(t->offset == end);
                end += t->size;
            }
            CHECK(end == b.size);
        } else {
            refused++;
            CHECK_MSG(s == ONNXIO_ERR_SAFETENSORS || s == ONNXIO_ERR_NO_MEMORY, "mutation %d: %s", i,
                      onnxio_status_name(s));
        }
        onnxio_safetensors_close(f);
    }
    tu_note("%ld mutations refused, %ld accepted", refused, accepted);
    free(copy);
    tu_bytes_free(&b);
    tu_end();
}

/* No temporary file of a save is left in W. */
static void check_no_temporary_left(void)
{
    tu_strlist l = {0};
    tu_list_dir(W, &l);
    for (size_t i = 0; i < l.size; i++) CHECK_MSG(strstr(l.items[i], "tmp") == NULL, "left behind: %s", l.items[i]);
    tu_strlist_free(&l);
}

static void test_save(void)
{
    tu_begin("save: read back, typed fields, refused saves keep the old file");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model2(a);
    char *path = tu_path_join(W, "out.safetensors");
    onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
    const char *meta[] = {"format", "pt", "q\"\\", "\x01"};
    o.metadata = meta;
    o.metadata_count = 2;
    CHECK_STATUS(onnxio_safetensors_save(m, path, &o), ONNXIO_OK);
    size_t size;
    uint8_t *file = tu_read_file(path, &size);
    onnxio_safetensors *f;
    CHECK_STATUS(onnxio_safetensors_open_bytes(file, size, &f), ONNXIO_OK);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)file[i] << (8 * i);
    CHECK_EQ_U64(n % 8, 0);
    CHECK_EQ_INT(onnxio_safetensors_count(f), 2);
    for (int i = 0; i < 2; i++) {
        onnxio_TensorProto *w = m->graph->initializer.data[i];
        const onnxio_safetensors_tensor *t = onnxio_safetensors_find(f, w->name.data);
        CHECK(t && t->data_type == w->data_type && t->rank == 1 && t->shape[0] == w->dims.data[0]);
        if (t) CHECK_BYTES(file + t->offset, t->size, w->raw_data.data, w->raw_data.size);
    }
    CHECK_EQ_INT(onnxio_safetensors_metadata_count(f), 2);
    CHECK_STR(onnxio_safetensors_metadata_key(f, 1), "q\"\\");
    CHECK_STR(onnxio_safetensors_metadata_value(f, 1), "\x01");
    onnxio_safetensors_close(f);

    /* Loading it back into a model of the same shape gives the same model. */
    onnxio_arena *a2 = onnxio_arena_new();
    onnxio_ModelProto *m2 = tu_model_of_initializers(a2, 2, (const int64_t[]){4, 2}, ONNXIO_TensorProto_DataType_FLOAT,
                                                     4, 9);
    CHECK(onnxio_message_equal(m, m2) == 0);
    CHECK_STATUS(onnxio_safetensors_load_into(m2, path, NULL), ONNXIO_OK);
    CHECK(onnxio_message_equal(m, m2) == 1);
    onnxio_arena_unref(a2);

    /* Typed fields: float_data and int32_data (FLOAT16 bits). */
    onnxio_TensorProto *w1 = m->graph->initializer.data[1];
    onnxio_field_clear(w1, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_raw_data]);
    w1->data_type = ONNXIO_TensorProto_DataType_FLOAT16;
    int32_t *v = onnxio_array_append(a, &w1->int32_data, 4);
    *v = 0x3c00;
    v = onnxio_array_append(a, &w1->int32_data, 4);
    *v = 0xc000;
    o.metadata_count = 0;
    CHECK_STATUS(onnxio_safetensors_save(m, path, &o), ONNXIO_OK);
    free(file);
    file = tu_read_file(path, &size);
    CHECK_STATUS(onnxio_safetensors_open_bytes(file, size, &f), ONNXIO_OK);
    const onnxio_safetensors_tensor *t = onnxio_safetensors_find(f, "w1");
    CHECK(t && strcmp(t->dtype, "F16") == 0 && t->size == 4);
    /* Larger dtypes first (the reference writer's order). */
    CHECK(onnxio_safetensors_at(f, 0) && strcmp(onnxio_safetensors_at(f, 0)->name, "w0") == 0);
    if (t) CHECK_BYTES(file + t->offset, 4, "\x00\x3c\x00\xc0", 4);
    onnxio_safetensors_close(f);

    /* Refused: a STRING initializer, a wrong count, an unknown name. The old
     * file stays, and no temporary file is left. */
    w1->data_type = ONNXIO_TensorProto_DataType_STRING;
    CHECK_STATUS(onnxio_safetensors_save(m, path, NULL), ONNXIO_ERR_SAFETENSORS);
    CHECK(strstr(onnxio_last_error(), "tensor 'w1': data type STRING has no safetensors dtype") != NULL);
    w1->data_type = ONNXIO_TensorProto_DataType_FLOAT16;
    w1->int32_data.size = 1;
    CHECK_STATUS(onnxio_safetensors_save(m, path, NULL), ONNXIO_ERR_SAFETENSORS);
    w1->int32_data.size = 2;
    const char *twice[] = {"w0", "w1", "w0"};
    o.names = twice;
    o.name_count = 3;
    CHECK_STATUS(onnxio_safetensors_save(m, path, &o), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(onnxio_last_error(), "'w0' is named twice") != NULL);
    const char *names[] = {"zz"};
    o.names = names;
    o.name_count = 1;
    CHECK_STATUS(onnxio_safetensors_save(m, path, &o), ONNXIO_ERR_INVALID_ARGUMENT);
    size_t size2;
    uint8_t *file2 = tu_read_file(path, &size2);
    CHECK_BYTES(file2, size2, file, size);
    check_no_temporary_left();
    free(file2);
    free(file);
    free(path);
    onnxio_arena_unref(a);
    tu_end();
}

/* A file whose tensors are all scalars (shape []) holds no dimension at
 * all: each tensor's shape is still a valid pointer (the sanitizer build
 * checks no arithmetic on a null one is done). The file is written by hand
 * and by onnxio_safetensors_save, then read and loaded. */
static void test_scalars(void)
{
    tu_begin("every tensor a scalar: open, load_into, save");
    const float values[2] = {1.5f, -2.0f};
    tu_bytes b = {0};
    build(&b,
          "{\"w0\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
          "\"w1\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]}}",
          values, sizeof values);
    onnxio_safetensors *f;
    CHECK_STATUS(onnxio_safetensors_open_bytes(b.data, b.size, &f), ONNXIO_OK);
    CHECK_EQ_INT(onnxio_safetensors_count(f), 2);
    for (size_t i = 0; i < 2; i++) {
        const onnxio_safetensors_tensor *t = onnxio_safetensors_at(f, i);
        CHECK(t && t->rank == 0 && t->shape != NULL && t->size == 4);
    }
    onnxio_safetensors_close(f);
    char *path = write_tmp("scalars.safetensors", b.data, b.size);

    /* A model of two FLOAT scalars w0 and w1. */
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = tu_model_of_initializers(a, 2, (const int64_t[]){1, 1}, ONNXIO_TensorProto_DataType_FLOAT,
                                                    4, 3);
    for (size_t i = 0; i < 2; i++) m->graph->initializer.data[i]->dims.size = 0;
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
        o.no_copy = no_copy;
        CHECK_STATUS(onnxio_safetensors_load_into(m, path, &o), ONNXIO_OK);
        for (size_t i = 0; i < 2; i++) {
            onnxio_TensorProto *w = m->graph->initializer.data[i];
            CHECK_BYTES(w->raw_data.data, w->raw_data.size, &values[i], 4);
        }
    }
    /* onnxio's own output of it reads back. */
    char *out = tu_path_join(W, "scalars_out.safetensors");
    CHECK_STATUS(onnxio_safetensors_save(m, out, NULL), ONNXIO_OK);
    CHECK_STATUS(onnxio_safetensors_open(out, &f), ONNXIO_OK);
    const onnxio_safetensors_tensor *t = onnxio_safetensors_find(f, "w1");
    CHECK(t && t->rank == 0 && t->shape != NULL && t->size == 4);
    onnxio_safetensors_close(f);
    CHECK_STATUS(onnxio_safetensors_load_into(m, out, NULL), ONNXIO_OK);
    CHECK_BYTES(m->graph->initializer.data[1]->raw_data.data, 4, &values[1], 4);
    free(out);
    free(path);
    onnxio_arena_unref(a);
    tu_bytes_free(&b);
    tu_end();
}

/* Empty lists: a names array of no entry, and a model of no initializer
 * (the sanitizer build checks that no NULL array reaches qsort). */
static void test_empty_lists(void)
{
    tu_begin("load_into naming no tensor, save of a model with no initializer");
    char *path = tu_path_join(W, "none.safetensors");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = tu_model_of_initializers(a, 0, NULL, ONNXIO_TensorProto_DataType_FLOAT, 4, 1);
    CHECK_STATUS(onnxio_safetensors_save(m, path, NULL), ONNXIO_OK);
    size_t size;
    uint8_t *file = tu_read_file(path, &size);
    CHECK_BYTES(file, size, "\x08\0\0\0\0\0\0\0{}      ", 16); /* what the reference writes */
    free(file);
    const char *names[1] = {NULL};
    onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
    o.names = names;
    o.name_count = 0;
    CHECK_STATUS(onnxio_safetensors_load_into(m, path, &o), ONNXIO_OK);
    CHECK_STATUS(onnxio_safetensors_save(m, path, &o), ONNXIO_OK);
    onnxio_arena_unref(a);
    free(path);
    tu_end();
}

/* Every counted operation of a load and a save made to fail in turn. */
static void test_faults(void)
{
    tu_begin("faults: every allocation and file operation of load_into and save");
    const unsigned mask = 1u << ONNXIO__OP_ALLOC | 1u << ONNXIO__OP_OPEN | 1u << ONNXIO__OP_READ |
                          1u << ONNXIO__OP_WRITE | 1u << ONNXIO__OP_SYNC | 1u << ONNXIO__OP_RENAME |
                          1u << ONNXIO__OP_MAP | 1u << ONNXIO__OP_TRUNCATE | 1u << ONNXIO__OP_UNLINK;
    char *path = tu_path_join(W, "faults.safetensors");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model2(a);
    onnxio_arena *a2 = onnxio_arena_new();
    onnxio_ModelProto *ref = model2(a2);
    CHECK_STATUS(onnxio_safetensors_save(m, path, NULL), ONNXIO_OK);
    size_t size;
    uint8_t *old = tu_read_file(path, &size);
    /* The new model to save: other bytes. */
    onnxio_arena *a3 = onnxio_arena_new();
    onnxio_ModelProto *m3 = tu_model_of_initializers(a3, 2, (const int64_t[]){4, 2}, ONNXIO_TensorProto_DataType_FLOAT,
                                                     4, 5);
    for (int which = 0; which < 3; which++) {
        long n = 0, failed = 0;
        for (long i = 0;; i++) {
            long live = onnxio__alloc_live();
            onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
            o.no_copy = which == 1;
            o.num_threads = 1;
            onnxio__fault_set(mask, i, false, false);
            onnxio_status s = which < 2 ? onnxio_safetensors_load_into(m, path, &o)
                                        : onnxio_safetensors_save(m3, path, &o);
            bool hit = onnxio__fault_hit();
            if (i == 0) n = onnxio__fault_counted();
            onnxio__fault_set(0, 0, false, false);
            if (i == 0) {
                CHECK_STATUS(s, ONNXIO_OK);
                if (which == 2) CHECK_STATUS(onnxio_safetensors_save(m, path, NULL), ONNXIO_OK);
                continue;
            }
            if (i > n) break;
            if (!hit) continue;
            if (s != ONNXIO_OK) {
                failed++;
                CHECK_MSG(onnxio_last_error()[0] != '\0', "fault %ld: no message", i);
                if (which < 2) CHECK_MSG(onnxio_message_equal(m, ref) == 1, "fault %ld: the model changed", i);
            }
            if (which < 2) {
                /* m and ref must stay equal whether or not it failed. */
                CHECK(onnxio_message_equal(m, ref) == 1);
            } else {
                size_t got_size;
                uint8_t *got = tu_read_file(path, &got_size);
                if (s != ONNXIO_OK) CHECK_BYTES(got, got_size, old, size);
                free(got);
                if (s == ONNXIO_OK) CHECK_STATUS(onnxio_safetensors_save(m, path, NULL), ONNXIO_OK);
            }
            /* Payloads loaded into m hold blocks; compare only on failure. */
            if (s != ONNXIO_OK)
                CHECK_MSG(onnxio__alloc_live() == live, "fault %ld (%s): %ld blocks leaked", i,
                          which == 2 ? "save" : "load", onnxio__alloc_live() - live);
        }
        tu_note("%s: %ld operations, %ld failures injected cleanly", which == 0 ? "load copy" : which == 1 ? "load no_copy" : "save", n, failed);
        CHECK(failed > 0);
    }
    check_no_temporary_left();
    free(old);
    free(path);
    onnxio_arena_unref(a);
    onnxio_arena_unref(a2);
    onnxio_arena_unref(a3);
    tu_end();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    onnxio__alloc_track(true);
    W = tu_make_temp_dir("onnxio_safetensors");
    test_load();
    test_malformed();
    test_mutations();
    test_save();
    test_scalars();
    test_empty_lists();
    test_faults();
    tu_remove_tree(W);
    free(W);
    return tu_finish();
}
