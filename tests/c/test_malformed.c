/* Malformed and unusual-but-valid protobuf input.
 *
 * - Real models truncated at every byte: a prefix that ends on a top-level
 *   field boundary is a valid message (and must serialize back to itself);
 *   any other prefix must give ONNXIO_ERR_DECODE. The same for the graph
 *   sub-message truncated at every byte with its framing kept consistent,
 *   which exercises the bounds of a sub-message rather than of the input.
 * - Hand-made bad inputs: each must give its exact status, no message, and
 *   a last-error message that mentions a byte offset.
 * - Hand-made valid inputs whose re-serialization is fixed by the protobuf
 *   rules (unknown fields of every wire type kept and written last, wrong
 *   wire types kept as unknown fields, packed/unpacked, oneof last-wins,
 *   repeated singular messages merged, ...). The expected bytes were checked
 *   once against libprotobuf 3.21 (ParseFromString + SerializeToString).
 *
 * Everything runs in copy and no_copy mode; the arenas of failed parses are
 * freed, so LeakSanitizer sees any leak on an error path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static const onnxio_parse_options *mode_opts(int no_copy)
{
    static onnxio_parse_options copy_opts, nocopy_opts;
    nocopy_opts.no_copy = true;
    return no_copy ? &nocopy_opts : &copy_opts;
}

/* Parses `data` as `desc`; checks the status is `want` (and, on failure, that
 * *out stays NULL and the error message is non-empty and mentions an offset). */
static void expect_status(const char *name, const onnxio_message_desc *desc, const uint8_t *data, size_t size,
                          const onnxio_parse_options *base_opts, onnxio_status want)
{
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_parse_options opts = base_opts ? *base_opts : (onnxio_parse_options){0};
        opts.no_copy = no_copy;
        onnxio_arena *arena = onnxio_arena_new();
        void *out = (void *)&opts; /* must be reset to NULL on failure */
        onnxio_status st = onnxio_parse(desc, data, size, NULL, &opts, arena, &out);
        const char *mode = no_copy ? "no_copy" : "copy";
        CHECK_MSG(st == want, "%s (%s): onnxio_parse gave %s, want %s (last error: \"%s\")", name, mode,
                  onnxio_status_name(st), onnxio_status_name(want), onnxio_last_error());
        if (want != ONNXIO_OK && st == want) {
            CHECK_MSG(out == NULL, "%s (%s): *out not NULL after a failed parse", name, mode);
            const char *msg = onnxio_last_error();
            CHECK_MSG(msg && msg[0], "%s (%s): empty onnxio_last_error()", name, mode);
            CHECK_MSG(tu_mentions_offset(msg), "%s (%s): error message names no byte offset: \"%s\"", name,
                      mode, msg ? msg : "(null)");
        }
        onnxio_arena_unref(arena);
    }
}

static void expect_status_hex(const char *name, const onnxio_message_desc *desc, const char *hex,
                              const onnxio_parse_options *opts, onnxio_status want)
{
    size_t n;
    uint8_t *data = tu_unhex(hex, &n);
    expect_status(name, desc, data, n, opts, want);
    free(data);
}

/* Parses `in` (must succeed) and checks that it serializes to `want`. */
static void expect_reserialized(const char *name, const onnxio_message_desc *desc, const uint8_t *in,
                                size_t in_size, const uint8_t *want, size_t want_size,
                                const onnxio_parse_options *base_opts)
{
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_parse_options opts = base_opts ? *base_opts : (onnxio_parse_options){0};
        opts.no_copy = no_copy;
        const char *mode = no_copy ? "no_copy" : "copy";
        onnxio_arena *arena = onnxio_arena_new();
        void *out = NULL;
        onnxio_status st = onnxio_parse(desc, in, in_size, NULL, &opts, arena, &out);
        if (CHECK_MSG(st == ONNXIO_OK && out, "%s (%s): onnxio_parse gave %s: %s", name, mode,
                      onnxio_status_name(st), onnxio_last_error())) {
            onnxio_buffer *b = NULL;
            st = onnxio_serialize(out, &b);
            if (CHECK_MSG(st == ONNXIO_OK, "%s (%s): onnxio_serialize gave %s: %s", name, mode,
                          onnxio_status_name(st), onnxio_last_error())) {
                char *what = tu_strdup_printf("%s (%s): re-serialized bytes", name, mode);
                tu_check_bytes(onnxio_buffer_data(b), onnxio_buffer_size(b), want, want_size, what, __FILE__,
                               __LINE__);
                free(what);
            }
            onnxio_buffer_unref(b);
        }
        onnxio_arena_unref(arena);
    }
}

static void expect_reserialized_hex(const char *name, const onnxio_message_desc *desc, const char *in_hex,
                                    const char *want_hex)
{
    size_t n, m;
    uint8_t *in = tu_unhex(in_hex, &n);
    uint8_t *want = tu_unhex(want_hex ? want_hex : in_hex, &m);
    expect_reserialized(name, desc, in, n, want, m, NULL);
    free(in);
    free(want);
}

/* ---- an independent reader of top-level field boundaries ------------------ */

static bool read_varint(const uint8_t *p, size_t size, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*pos >= size) return false;
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Marks in `boundary` (size + 1 flags) every offset at which a top-level field
 * ends (and 0). Returns false when the bytes are not a plain sequence of
 * varint/fixed/length-delimited fields (then the caller skips the file). */
static bool field_boundaries(const uint8_t *p, size_t size, bool *boundary)
{
    memset(boundary, 0, size + 1);
    boundary[0] = true;
    size_t pos = 0;
    while (pos < size) {
        uint64_t tag, v;
        if (!read_varint(p, size, &pos, &tag) || (tag >> 3) == 0) return false;
        switch (tag & 7) {
        case 0:
            if (!read_varint(p, size, &pos, &v)) return false;
            break;
        case 1:
            if (size - pos < 8) return false;
            pos += 8;
            break;
        case 2:
            if (!read_varint(p, size, &pos, &v) || v > size - pos) return false;
            pos += (size_t)v;
            break;
        case 5:
            if (size - pos < 4) return false;
            pos += 4;
            break;
        default:
            return false;
        }
        boundary[pos] = true;
    }
    return true;
}

/* Finds the (last) top-level field `number` with wire type LEN; sets the
 * offsets of its tag, its payload, and the payload size. */
static bool find_len_field(const uint8_t *p, size_t size, uint32_t number, size_t *tag_at, size_t *payload_at,
                           size_t *payload_size)
{
    size_t pos = 0;
    bool found = false;
    while (pos < size) {
        size_t start = pos;
        uint64_t tag, v;
        if (!read_varint(p, size, &pos, &tag)) return false;
        switch (tag & 7) {
        case 0:
            if (!read_varint(p, size, &pos, &v)) return false;
            break;
        case 1:
            pos += 8;
            break;
        case 2:
            if (!read_varint(p, size, &pos, &v) || v > size - pos) return false;
            if ((tag >> 3) == number) {
                *tag_at = start;
                *payload_at = pos;
                *payload_size = (size_t)v;
                found = true;
            }
            pos += (size_t)v;
            break;
        case 5:
            pos += 4;
            break;
        default:
            return false;
        }
        if (pos > size) return false;
    }
    return found;
}

/* ---- truncation ------------------------------------------------------------ */

static long prefixes_ok, prefixes_bad;

/* Parses `data[0..len)` for every len < size: OK exactly at boundaries (and
 * then the bytes serialize back to the prefix), ONNXIO_ERR_DECODE elsewhere. */
static void truncate_everywhere(const char *name, const onnxio_message_desc *desc, const uint8_t *data, size_t size)
{
    bool *boundary = malloc(size + 1);
    if (!field_boundaries(data, size, boundary)) {
        tu_note("%s: not a plain field sequence, skipped", name);
        free(boundary);
        return;
    }
    for (size_t len = 0; len < size; len++) {
        /* a fresh copy of exactly `len` bytes, so that ASan sees any read past
         * the end of the input */
        uint8_t *prefix = malloc(len ? len : 1);
        memcpy(prefix, data, len);
        for (int no_copy = 0; no_copy <= 1; no_copy++) {
            onnxio_arena *arena = onnxio_arena_new();
            void *out = NULL;
            onnxio_status st = onnxio_parse(desc, prefix, len, NULL, mode_opts(no_copy), arena, &out);
            if (boundary[len]) {
                prefixes_ok++;
                if (CHECK_MSG(st == ONNXIO_OK, "%s cut at %zu (a field boundary, %s): gave %s: %s", name, len,
                              no_copy ? "no_copy" : "copy", onnxio_status_name(st), onnxio_last_error())) {
                    onnxio_buffer *b = NULL;
                    if (CHECK_MSG(onnxio_serialize(out, &b) == ONNXIO_OK, "%s cut at %zu: serialize failed", name,
                                  len))
                        CHECK_MSG(onnxio_buffer_size(b) == len && memcmp(onnxio_buffer_data(b), prefix, len) == 0,
                                  "%s cut at %zu: re-serialized prefix differs (%zu bytes)", name, len,
                                  onnxio_buffer_size(b));
                    onnxio_buffer_unref(b);
                }
            } else {
                prefixes_bad++;
                if (CHECK_MSG(st == ONNXIO_ERR_DECODE, "%s cut at %zu (%s): gave %s, want ONNXIO_ERR_DECODE: %s",
                              name, len, no_copy ? "no_copy" : "copy", onnxio_status_name(st),
                              onnxio_last_error())) {
                    CHECK_MSG(out == NULL, "%s cut at %zu: *out set on failure", name, len);
                    CHECK_MSG(tu_mentions_offset(onnxio_last_error()), "%s cut at %zu: no offset in \"%s\"", name,
                              len, onnxio_last_error());
                }
            }
            onnxio_arena_unref(arena);
        }
        free(prefix);
    }
    free(boundary);
}

/* Truncates the payload of top-level field `number` (a sub-message) at every
 * byte, rewriting its length so that the outer framing stays valid: the
 * result is valid exactly when the cut is on a boundary of the sub-message's
 * own fields. */
static void truncate_submessage(const char *name, const onnxio_message_desc *desc, const uint8_t *data, size_t size,
                                uint32_t number)
{
    size_t tag_at = 0, payload_at = 0, psize = 0;
    if (!find_len_field(data, size, number, &tag_at, &payload_at, &psize) || psize == 0) return;
    const uint8_t *payload = data + payload_at;
    bool *boundary = malloc(psize + 1);
    if (!field_boundaries(payload, psize, boundary)) {
        free(boundary);
        return;
    }
    const uint8_t *after = payload + psize;
    size_t after_size = size - (payload_at + psize);
    for (size_t len = 0; len < psize; len++) {
        tu_bytes in = {0};
        tu_bytes_put(&in, data, tag_at);
        tu_bytes_tag(&in, number, 2);
        tu_bytes_varint(&in, len);
        tu_bytes_put(&in, payload, len);
        tu_bytes_put(&in, after, after_size);
        onnxio_arena *arena = onnxio_arena_new();
        void *out = NULL;
        onnxio_status st = onnxio_parse(desc, in.data, in.size, NULL, mode_opts((int)(len & 1)), arena, &out);
        if (boundary[len]) {
            prefixes_ok++;
            if (CHECK_MSG(st == ONNXIO_OK, "%s: field %u cut at %zu (a field boundary): gave %s: %s", name, number,
                          len, onnxio_status_name(st), onnxio_last_error())) {
                onnxio_buffer *b = NULL;
                if (CHECK_MSG(onnxio_serialize(out, &b) == ONNXIO_OK, "%s: serialize failed", name))
                    CHECK_MSG(onnxio_buffer_size(b) == in.size && memcmp(onnxio_buffer_data(b), in.data, in.size) == 0,
                              "%s: field %u cut at %zu: re-serialized bytes differ", name, number, len);
                onnxio_buffer_unref(b);
            }
        } else {
            prefixes_bad++;
            CHECK_MSG(st == ONNXIO_ERR_DECODE, "%s: field %u cut at %zu: gave %s, want ONNXIO_ERR_DECODE: %s", name,
                      number, len, onnxio_status_name(st), onnxio_last_error());
        }
        onnxio_arena_unref(arena);
        tu_bytes_free(&in);
    }
    free(boundary);
}

/* Small real files (< 20 KB) to truncate: chosen by name when present. */
static const char *const corpus_models[] = {
    "NVIDIA+TensorRT__tools__Polygraphy__tests__models__qdq_conv.onnx",
    "NVIDIA+TensorRT__tools__Polygraphy__tests__models__loop.onnx",
    "NVIDIA+TensorRT__tools__Polygraphy__examples__cli__inspect__09_inspecting_tensorrt_static_onnx_support__nested_local_function.onnx",
    "onnx+sklearn-onnx__docs__examples__pipeline_titanic.onnx",
    "NVIDIA+TensorRT__tools__onnx-graphsurgeon__tests__models__sparse_nnz.onnx",
    "ankane+onnxruntime-ruby__datasets__mul_1.onnx",
};
static const char *const testdata_models[] = {
    "node/test_if_seq/model.onnx",
    "node/test_loop11/model.onnx",
    "node/test_conv_with_strides_padding/model.onnx",
    "simple/test_sequence_model1/model.onnx",
};
static const char *const testdata_pbs[] = {
    "node/test_conv_with_strides_padding/test_data_set_0/input_0.pb",
    "node/test_cast_FLOAT_to_STRING/test_data_set_0/output_0.pb",
};

/* A listed file that is absent, unreadable or too big is a failed check:
 * the data sets are pinned, and a file that silently dropped out would
 * shrink the test without a word. */
static void truncate_file(const char *path, const onnxio_message_desc *desc)
{
    size_t size;
    uint8_t *data = tu_read_file(path, &size);
    if (!CHECK_MSG(data != NULL, "%s: absent or unreadable", path)) return;
    if (!CHECK_MSG(size <= 20000, "%s: %zu bytes, more than the 20000 of a small file", path, size)) {
        free(data);
        return;
    }
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char *label = tu_strdup_printf("%.60s (%zu bytes)", name, size);
    truncate_everywhere(label, desc, data, size);
    if (desc == &onnxio_desc_ModelProto) truncate_submessage(label, desc, data, size, 7 /* graph */);
    free(label);
    free(data);
}

/* The data sets are looked up inside the group: an absent one is a
 * declared skip of its part (tu_corpus_dir, tu_testdata_dir), and with
 * both absent the group is skipped rather than passed with no check. */
static void test_truncation(const char *repo)
{
    tu_begin("truncation of real files at every byte");
    const char *corpus = tu_corpus_dir(repo), *testdata = tu_testdata_dir();
    int files = 0;
    if (corpus)
        for (size_t i = 0; i < sizeof corpus_models / sizeof *corpus_models; i++) {
            char *p = tu_path_join(corpus, corpus_models[i]);
            truncate_file(p, &onnxio_desc_ModelProto);
            files++;
            free(p);
        }
    if (testdata) {
        for (size_t i = 0; i < sizeof testdata_models / sizeof *testdata_models; i++) {
            char *p = tu_path_join(testdata, testdata_models[i]);
            truncate_file(p, &onnxio_desc_ModelProto);
            files++;
            free(p);
        }
        for (size_t i = 0; i < sizeof testdata_pbs / sizeof *testdata_pbs; i++) {
            char *p = tu_path_join(testdata, testdata_pbs[i]);
            truncate_file(p, &onnxio_desc_TensorProto);
            files++;
            free(p);
        }
    }
    tu_end();
    tu_note("%d files; %ld valid prefixes, %ld invalid ones", files, prefixes_ok, prefixes_bad);
}

/* ---- hand-made bad input --------------------------------------------------- */

static void test_bad_varints(void)
{
    tu_begin("bad varints");
    const onnxio_message_desc *M = &onnxio_desc_ModelProto;
    /* ir_version (field 1, varint) with an 11-byte value */
    expect_status_hex("11-byte varint value", M, "08 ff ff ff ff ff ff ff ff ff ff 01", NULL, ONNXIO_ERR_DECODE);
    /* an 11-byte tag */
    expect_status_hex("11-byte tag", M, "ff ff ff ff ff ff ff ff ff ff 01", NULL, ONNXIO_ERR_DECODE);
    /* a value varint whose continuation bit runs into the end of input */
    expect_status_hex("varint value ends at end of input", M, "08 80", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("varint value ends at end of input (9 bytes)", M, "08 ff ff ff ff ff ff ff ff ff", NULL,
                      ONNXIO_ERR_DECODE);
    expect_status_hex("tag varint ends at end of input", M, "08 01 80", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("tag but no value", M, "08", NULL, ONNXIO_ERR_DECODE);
    /* in a packed field: TensorProto.int32_data (5) */
    expect_status_hex("packed varint cut by its length", &onnxio_desc_TensorProto, "2a 01 80", NULL,
                      ONNXIO_ERR_DECODE);
    tu_end();
}

static void test_bad_lengths(void)
{
    tu_begin("bad lengths");
    const onnxio_message_desc *M = &onnxio_desc_ModelProto, *T = &onnxio_desc_TensorProto;
    expect_status_hex("string length past the end", M, "12 05 61 62", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("sub-message length past the end", M, "3a 05 12 01 61", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("string length 2^63", M, "12 80 80 80 80 80 80 80 80 80 01 61 62", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("string length 2^64-1", M, "12 ff ff ff ff ff ff ff ff ff 01 61 62", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("sub-message length 2^63", M, "3a 80 80 80 80 80 80 80 80 80 01 12 01 61", NULL,
                      ONNXIO_ERR_DECODE);
    expect_status_hex("raw_data length 2^63", T, "4a 80 80 80 80 80 80 80 80 80 01 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("raw_data length 2^62", T, "4a 80 80 80 80 80 80 80 80 40 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("packed length 2^63", T, "22 80 80 80 80 80 80 80 80 80 01 00 00 80 3f", NULL,
                      ONNXIO_ERR_DECODE);
    expect_status_hex("unknown LEN field length 2^63", M, "b2 06 80 80 80 80 80 80 80 80 80 01 00", NULL,
                      ONNXIO_ERR_DECODE);
    /* the inner field fits the input but not its sub-message (graph, 3 bytes) */
    expect_status_hex("field runs past its sub-message", M, "3a 03 12 05 61 62 63 64 65", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("varint runs past its sub-message", M, "3a 02 08 80 01 12 01 61", NULL, ONNXIO_ERR_DECODE);
    /* packed fixed-width payloads whose length is not a multiple of the width */
    expect_status_hex("packed float length 3", T, "22 03 00 00 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("packed double length 7", T, "52 07 00 00 00 00 00 00 00", NULL, ONNXIO_ERR_DECODE);
    /* fixed-width values cut by the end of input */
    expect_status_hex("fixed64 cut", M, "a9 06 01 02", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("fixed32 cut", M, "c5 06 01 02", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("float field cut", &onnxio_desc_AttributeProto, "15 00 00", NULL, ONNXIO_ERR_DECODE);
    /* Dimensions (TensorShapeProto.dim), whose lone dim_value the parser
     * fills without entering the sub-message: empty ones (the last byte of
     * the input is a length 0), more fields after the varint, an overlong
     * varint (written back canonical), a varint cut by its sub-message. */
    const onnxio_message_desc *S = &onnxio_desc_TensorShapeProto;
    expect_reserialized_hex("empty Dimension at the end of the input", S, "0a 00", NULL);
    expect_reserialized_hex("empty Dimension, then dim_value 3", S, "0a 00 0a 02 08 03", NULL);
    expect_reserialized_hex("dim_value 3, then an empty Dimension", S, "0a 02 08 03 0a 00", NULL);
    expect_reserialized_hex("dim_value then denotation", S, "0a 05 08 03 1a 01 4e", NULL);
    expect_reserialized_hex("dim_value as an overlong varint", S, "0a 03 08 83 00", "0a 02 08 03");
    expect_reserialized_hex("dim_value -1", S, "0a 0b 08 ff ff ff ff ff ff ff ff ff 01", NULL);
    expect_status_hex("dim_value cut by its Dimension", S, "0a 02 08 80 0a 00", NULL, ONNXIO_ERR_DECODE);
    tu_end();
}

static void test_bad_tags(void)
{
    tu_begin("bad tags and groups");
    const onnxio_message_desc *M = &onnxio_desc_ModelProto;
    expect_status_hex("field number 0 (varint)", M, "00 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("field number 0 (LEN)", M, "02 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("field number 0 after a good field", M, "08 07 00 01", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("wire type 6", M, "0e 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("wire type 7", M, "0f 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("wire type 6 on an unknown field", M, "a6 06 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("wire type 7 in a sub-message", M, "3a 02 0f 00", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("end-group without start", M, "0c", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("end-group without start (unknown field)", M, "08 01 a4 06", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("end-group without start in a sub-message", M, "3a 02 a4 06", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("group that never ends", M, "a3 06 08 01", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("group that never ends (empty)", M, "a3 06", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("group on a known field that never ends", M, "0b 08 01", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("group ended by another field's end-group", M, "a3 06 ac 06", NULL, ONNXIO_ERR_DECODE);
    /* a group whose end lies outside the sub-message it started in */
    expect_status_hex("group crossing a sub-message end", M, "3a 02 a3 06 a4 06", NULL, ONNXIO_ERR_DECODE);
    expect_status_hex("group with a bad field inside", M, "a3 06 0f a4 06", NULL, ONNXIO_ERR_DECODE);
    tu_end();
}

/* TypeProto nested `levels` messages below the top one:
 * TypeProto.sequence_type(4) -> TypeProto.Sequence.elem_type(1) -> ... */
static void nested_typeproto(tu_bytes *out, int levels)
{
    tu_bytes body = {0};
    for (int i = levels; i >= 1; i--) {
        tu_bytes wrapped = {0};
        bool parent_is_typeproto = ((i - 1) % 2) == 0;
        tu_bytes_tag(&wrapped, parent_is_typeproto ? 4 : 1, 2);
        tu_bytes_varint(&wrapped, body.size);
        tu_bytes_put(&wrapped, body.data, body.size);
        tu_bytes_free(&body);
        body = wrapped;
    }
    tu_bytes_put(out, body.data, body.size);
    tu_bytes_free(&body);
}

/* `levels` nested groups of unknown field 100, the innermost holding a varint. */
static void nested_groups(tu_bytes *out, int levels)
{
    for (int i = 0; i < levels; i++) tu_bytes_tag(out, 100, 3);
    tu_bytes_tag(out, 1, 0);
    tu_bytes_varint(out, 1);
    for (int i = 0; i < levels; i++) tu_bytes_tag(out, 100, 4);
}

/* A ModelProto whose graph nests `levels` subgraphs:
 * graph -> node -> attribute.g -> node -> ... (3 messages per level) */
static void nested_graphs(tu_bytes *out, int levels)
{
    tu_bytes g = {0}; /* innermost graph: name "x" */
    tu_bytes_tag(&g, 2, 2);
    tu_bytes_varint(&g, 1);
    tu_bytes_byte(&g, 'x');
    for (int i = 0; i < levels; i++) {
        tu_bytes attr = {0}, node = {0}, graph = {0};
        tu_bytes_tag(&attr, 6, 2); /* AttributeProto.g */
        tu_bytes_varint(&attr, g.size);
        tu_bytes_put(&attr, g.data, g.size);
        tu_bytes_tag(&node, 5, 2); /* NodeProto.attribute */
        tu_bytes_varint(&node, attr.size);
        tu_bytes_put(&node, attr.data, attr.size);
        tu_bytes_tag(&graph, 1, 2); /* GraphProto.node */
        tu_bytes_varint(&graph, node.size);
        tu_bytes_put(&graph, node.data, node.size);
        tu_bytes_free(&g);
        tu_bytes_free(&attr);
        tu_bytes_free(&node);
        g = graph;
    }
    tu_bytes_tag(out, 7, 2);
    tu_bytes_varint(out, g.size);
    tu_bytes_put(out, g.data, g.size);
    tu_bytes_free(&g);
}

static void test_depth(void)
{
    tu_begin("nesting depth limit");
    const onnxio_message_desc *TP = &onnxio_desc_TypeProto, *M = &onnxio_desc_ModelProto;
    onnxio_parse_options lim5 = {0};
    lim5.max_depth = 5;
    struct {
        int levels;
        const onnxio_parse_options *opts;
        onnxio_status want;
    } cases[] = {
        /* libprotobuf's default recursion limit is 100: 100 messages nested
         * below the top-level one parse, 101 do not */
        {50, NULL, ONNXIO_OK},
        {100, NULL, ONNXIO_OK},
        {101, NULL, ONNXIO_ERR_DEPTH},
        {102, NULL, ONNXIO_ERR_DEPTH},
        {5, &lim5, ONNXIO_OK},
        {6, &lim5, ONNXIO_ERR_DEPTH},
        {100000, NULL, ONNXIO_ERR_DEPTH}, /* ~400 KB of nesting: no stack overflow */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tu_bytes b = {0};
        nested_typeproto(&b, cases[i].levels);
        char *name = tu_strdup_printf("TypeProto nested %d deep (max_depth %d)", cases[i].levels,
                                      cases[i].opts ? cases[i].opts->max_depth : 0);
        if (cases[i].want == ONNXIO_OK)
            expect_reserialized(name, TP, b.data, b.size, b.data, b.size, cases[i].opts);
        else
            expect_status(name, TP, b.data, b.size, cases[i].opts, cases[i].want);
        free(name);
        tu_bytes_free(&b);
    }

    /* subgraphs: top ModelProto, then graph + 3 messages per level */
    {
        tu_bytes b = {0};
        nested_graphs(&b, 33); /* 1 + 3*33 = 100 nested messages */
        expect_reserialized("ModelProto with 100 nested messages of subgraphs", M, b.data, b.size, b.data, b.size,
                            NULL);
        tu_bytes_free(&b);
        nested_graphs(&b, 34); /* 103 */
        expect_status("ModelProto with 103 nested messages of subgraphs", M, b.data, b.size, NULL, ONNXIO_ERR_DEPTH);
        tu_bytes_free(&b);
        nested_graphs(&b, 2000);
        expect_status("ModelProto with 6001 nested messages of subgraphs", M, b.data, b.size, NULL,
                      ONNXIO_ERR_DEPTH);
        tu_bytes_free(&b);
    }

    /* groups of unknown fields count towards the same limit */
    struct {
        int levels;
        const onnxio_parse_options *opts;
        onnxio_status want;
    } gcases[] = {
        {100, NULL, ONNXIO_OK},
        {101, NULL, ONNXIO_ERR_DEPTH},
        {5, &lim5, ONNXIO_OK},
        {6, &lim5, ONNXIO_ERR_DEPTH},
        {200000, NULL, ONNXIO_ERR_DEPTH},
    };
    for (size_t i = 0; i < sizeof gcases / sizeof *gcases; i++) {
        tu_bytes b = {0};
        nested_groups(&b, gcases[i].levels);
        char *name = tu_strdup_printf("unknown groups nested %d deep (max_depth %d)", gcases[i].levels,
                                      gcases[i].opts ? gcases[i].opts->max_depth : 0);
        if (gcases[i].want == ONNXIO_OK)
            expect_reserialized(name, M, b.data, b.size, b.data, b.size, gcases[i].opts);
        else
            expect_status(name, M, b.data, b.size, gcases[i].opts, gcases[i].want);
        free(name);
        tu_bytes_free(&b);
    }
    /* unknown groups inside nested messages: 60 messages + 41 groups = 101 */
    {
        tu_bytes inner = {0};
        nested_groups(&inner, 41);
        /* wrap in TypeProto levels by hand: innermost message holds the groups */
        tu_bytes body = inner;
        for (int i = 60; i >= 1; i--) {
            tu_bytes wrapped = {0};
            tu_bytes_tag(&wrapped, ((i - 1) % 2) == 0 ? 4 : 1, 2);
            tu_bytes_varint(&wrapped, body.size);
            tu_bytes_put(&wrapped, body.data, body.size);
            tu_bytes_free(&body);
            body = wrapped;
        }
        expect_status("60 nested messages holding 41 nested groups", TP, body.data, body.size, NULL, ONNXIO_ERR_DEPTH);
        tu_bytes_free(&body);
        inner = (tu_bytes){0};
        nested_groups(&inner, 40);
        body = inner;
        for (int i = 60; i >= 1; i--) {
            tu_bytes wrapped = {0};
            tu_bytes_tag(&wrapped, ((i - 1) % 2) == 0 ? 4 : 1, 2);
            tu_bytes_varint(&wrapped, body.size);
            tu_bytes_put(&wrapped, body.data, body.size);
            tu_bytes_free(&body);
            body = wrapped;
        }
        expect_reserialized("60 nested messages holding 40 nested groups", TP, body.data, body.size, body.data,
                            body.size, NULL);
        tu_bytes_free(&body);
    }
    tu_end();
}

/* ---- hand-made valid input ---------------------------------------------------- */

static void test_valid(void)
{
    const onnxio_message_desc *M = &onnxio_desc_ModelProto, *T = &onnxio_desc_TensorProto;

    tu_begin("empty input");
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_arena *arena = onnxio_arena_new();
        void *out = NULL;
        static const uint8_t nothing[1] = {0};
        CHECK_STATUS(onnxio_parse(M, nothing, 0, NULL, mode_opts(no_copy), arena, &out), ONNXIO_OK);
        if (CHECK(out != NULL)) {
            onnxio_ModelProto *m = out;
            CHECK_EQ_U64(m->base.has, 0);
            CHECK(m->graph == NULL);
            CHECK_EQ_U64(m->opset_import.size, 0);
            CHECK_EQ_U64(m->base.unknown.size, 0);
            CHECK_EQ_U64(onnxio_serialized_size(m), 0);
            onnxio_buffer *b = NULL;
            CHECK_STATUS(onnxio_serialize(m, &b), ONNXIO_OK);
            CHECK_EQ_U64(onnxio_buffer_size(b), 0);
            onnxio_buffer_unref(b);
        }
        /* also with a NULL data pointer */
        out = NULL;
        CHECK_STATUS(onnxio_parse(T, NULL, 0, NULL, mode_opts(no_copy), arena, &out), ONNXIO_OK);
        CHECK(out != NULL);
        onnxio_arena_unref(arena);
    }
    tu_end();

    tu_begin("unknown fields of every wire type, kept byte for byte");
    /* ir_version 7, then unknown fields 100 varint, 101 fixed64, 102 LEN,
     * 103 group {1: 1, 2: "x", nested group 105 {}}, 104 fixed32 */
    const char *all_unknown = "08 07"
                              " a0 06 96 01"
                              " a9 06 01 02 03 04 05 06 07 08"
                              " b2 06 03 61 62 63"
                              " bb 06 08 01 12 01 78 cb 06 cc 06 bc 06"
                              " c5 06 01 02 03 04";
    expect_reserialized_hex("known field then unknown fields", M, all_unknown, NULL);
    /* read order of unknown fields is kept; known fields go first */
    expect_reserialized_hex("unknown fields interleaved with known ones", M,
                            "a0 06 96 01 08 07 c5 06 01 02 03 04 12 01 70 a9 06 01 02 03 04 05 06 07 08",
                            "08 07 12 01 70 a0 06 96 01 c5 06 01 02 03 04 a9 06 01 02 03 04 05 06 07 08");
    /* unknown fields inside a sub-message (the graph) */
    expect_reserialized_hex("unknown field in a sub-message", M, "3a 06 a0 06 01 12 01 67", "3a 06 12 01 67 a0 06 01");
    /* a huge field number (2^29 - 1) and a 10-byte unknown varint */
    expect_reserialized_hex("largest field number", M, "f8 ff ff ff 0f ff ff ff ff ff ff ff ff ff 01", NULL);
    /* unknown fields in a TensorProto next to its payload */
    expect_reserialized_hex("unknown fields next to raw_data", T, "4a 02 01 02 a0 06 05 f2 07 01 00",
                            NULL);
    /* the same bytes inside a parsed message survive a copy */
    {
        size_t n;
        uint8_t *in = tu_unhex(all_unknown, &n);
        onnxio_arena *a = onnxio_arena_new(), *b = onnxio_arena_new();
        void *m = NULL;
        if (CHECK_STATUS(onnxio_parse(M, in, n, NULL, NULL, a, &m), ONNXIO_OK)) {
            void *c = onnxio_message_clone(b, m);
            onnxio_arena_unref(a);
            a = NULL;
            onnxio_buffer *out = NULL;
            if (CHECK(c != NULL) && CHECK_STATUS(onnxio_serialize(c, &out), ONNXIO_OK))
                CHECK_BYTES(onnxio_buffer_data(out), onnxio_buffer_size(out), in, n);
            onnxio_buffer_unref(out);
        }
        onnxio_arena_unref(a);
        onnxio_arena_unref(b);
        free(in);
    }
    tu_end();

    tu_begin("known fields with the wrong wire type are unknown fields (as libprotobuf)");
    expect_reserialized_hex("ModelProto.graph as a varint", M, "38 01", NULL);
    expect_reserialized_hex("ModelProto.ir_version as LEN", M, "0a 01 00", NULL);
    expect_reserialized_hex("ModelProto.ir_version as LEN, then as varint", M, "0a 01 00 08 05", "08 05 0a 01 00");
    expect_reserialized_hex("ModelProto.producer_name as fixed32", M, "15 01 02 03 04", NULL);
    expect_reserialized_hex("ModelProto.graph as a group", M, "3b 08 01 3c", NULL);
    expect_reserialized_hex("TensorProto.raw_data as fixed64", T, "49 01 02 03 04 05 06 07 08", NULL);
    {
        size_t n;
        uint8_t *in = tu_unhex("38 01", &n);
        onnxio_arena *a = onnxio_arena_new();
        void *m = NULL;
        if (CHECK_STATUS(onnxio_parse(M, in, n, NULL, NULL, a, &m), ONNXIO_OK)) {
            CHECK(((onnxio_ModelProto *)m)->graph == NULL);
            CHECK_EQ_U64(((onnxio_message *)m)->unknown.size, 2);
        }
        onnxio_arena_unref(a);
        free(in);
    }
    tu_end();

    tu_begin("packed and unpacked repeated scalars are both read");
    /* dims is written unpacked, float_data/int32_data packed */
    expect_reserialized_hex("packed dims", T, "0a 02 01 02", "08 01 08 02");
    expect_reserialized_hex("unpacked float_data", T, "25 00 00 80 3f 25 00 00 00 40", "22 08 00 00 80 3f 00 00 00 40");
    expect_reserialized_hex("mixed int32_data", T, "28 01 2a 02 02 03 28 04", "2a 04 01 02 03 04");
    expect_reserialized_hex("empty packed int64_data", T, "3a 00", "");
    expect_reserialized_hex("packed AttributeProto.ints", &onnxio_desc_AttributeProto, "42 03 01 02 7f",
                            "40 01 40 02 40 7f");
    tu_end();

    tu_begin("last value wins, messages merge, strings are bytes");
    expect_reserialized_hex("singular varint twice", M, "08 01 08 02", "08 02");
    expect_reserialized_hex("singular string twice", M, "12 01 61 12 01 62", "12 01 62");
    expect_reserialized_hex("singular message twice is merged", M, "3a 03 12 01 61 3a 03 52 01 64",
                            "3a 06 12 01 61 52 01 64");
    expect_reserialized_hex("oneof: dim_value then dim_param", &onnxio_desc_TensorShapeProto_Dimension,
                            "08 05 12 01 4e", "12 01 4e");
    expect_reserialized_hex("oneof: dim_param then dim_value", &onnxio_desc_TensorShapeProto_Dimension,
                            "12 01 4e 08 05", "08 05");
    expect_reserialized_hex("oneof: message members", &onnxio_desc_TypeProto, "0a 02 08 01 22 00", "22 00");
    expect_reserialized_hex("string that is not UTF-8", M, "12 02 ff fe", NULL);
    expect_reserialized_hex("string with a NUL", M, "12 03 61 00 62", NULL);
    /* a short (5-byte) negative int32 is written back sign-extended to 10 bytes */
    expect_reserialized_hex("int32 -1 in 5 bytes", T, "10 ff ff ff ff 0f", "10 ff ff ff ff ff ff ff ff ff 01");
    /* a non-minimal varint is written back minimal */
    expect_reserialized_hex("non-minimal varint", M, "08 81 80 80 00", "08 01");
    /* bits past 64 in a 10th varint byte are dropped, as libprotobuf does */
    expect_reserialized_hex("10-byte varint with bits past 64", M, "08 ff ff ff ff ff ff ff ff ff 7f",
                            "08 ff ff ff ff ff ff ff ff ff 01");
    /* an int32 field read from a wider varint keeps the low 32 bits */
    expect_reserialized_hex("int32 from a 2^32 + 1 varint", T, "10 81 80 80 80 10", "10 01");
    expect_reserialized_hex("raw_data twice: the last wins", T, "4a 02 01 02 4a 01 03", "4a 01 03");
    tu_end();

    tu_begin("enums are closed (proto2): undefined values are unknown fields");
    expect_reserialized_hex("data_location 5", T, "70 05 08 01", "08 01 70 05");
    expect_reserialized_hex("data_location -3", T, "70 fd ff ff ff ff ff ff ff ff 01 08 01",
                            "08 01 70 fd ff ff ff ff ff ff ff ff 01");
    expect_reserialized_hex("data_location 1", T, "70 01 08 01", "08 01 70 01");
    /* data_type is an int32, not an enum: any value is kept as the field */
    expect_reserialized_hex("data_type 1000", T, "10 e8 07 08 01", "08 01 10 e8 07");
    {
        size_t n;
        uint8_t *in = tu_unhex("70 05", &n);
        onnxio_arena *a = onnxio_arena_new();
        void *m = NULL;
        if (CHECK_STATUS(onnxio_parse(T, in, n, NULL, NULL, a, &m), ONNXIO_OK)) {
            CHECK(!onnxio_has(m, ONNXIO_FIELD_TensorProto_data_location));
            CHECK_EQ_U64(((onnxio_message *)m)->unknown.size, 2);
        }
        onnxio_arena_unref(a);
        free(in);
    }
    /* in packed/repeated form there are no enum fields in ONNX; the singular
     * ones are AttributeProto.type, TensorProto.data_location, OperatorProto.status */
    expect_reserialized_hex("AttributeProto.type 99", &onnxio_desc_AttributeProto, "a0 01 63 0a 01 61", "0a 01 61 a0 01 63");
    tu_end();
}

int main(int argc, char **argv)
{
    const char *repo = argc > 1 ? argv[1] : ".";
    test_bad_varints();
    test_bad_lengths();
    test_bad_tags();
    test_depth();
    test_valid();
    test_truncation(repo);
    return tu_finish();
}
