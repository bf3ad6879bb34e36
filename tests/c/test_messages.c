/* Message operations through the public API: descriptors and lookups,
 * new/clear, has-bits (proto2 presence), oneofs, arrays and lists, deep copy
 * within and across arenas, merge, equality, payload span ownership, and
 * the exact bytes of hand-built messages.
 *
 * Expected bytes are written down from the protobuf encoding rules
 * (https://protobuf.dev/programming-guides/encoding/) and the packing of
 * onnx-ml.proto, not computed by the library: tags are (number << 3 | wire
 * type), negative int32/int64 are 10-byte varints, float/double are
 * little-endian fixed32/fixed64, and only TensorProto's five numeric data
 * fields are packed. The generic per-field checks encode each expected field
 * with this file's own small encoder. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* ---- helpers ---------------------------------------------------------------- */

static void check_serialized_hex(const char *what, void *msg, const char *want_hex)
{
    size_t n;
    uint8_t *want = tu_unhex(want_hex, &n);
    onnxio_buffer *b = NULL;
    onnxio_status st = onnxio_serialize(msg, &b);
    if (CHECK_MSG(st == ONNXIO_OK, "%s: onnxio_serialize gave %s: %s", what, onnxio_status_name(st),
                  onnxio_last_error())) {
        char *label = tu_strdup_printf("%s: serialized bytes", what);
        tu_check_bytes(onnxio_buffer_data(b), onnxio_buffer_size(b), want, n, label, __FILE__, __LINE__);
        free(label);
        CHECK_MSG(onnxio_serialized_size(msg) == n, "%s: onnxio_serialized_size != %zu", what, n);
    }
    onnxio_buffer_unref(b);
    free(want);
}

static void set_str(onnxio_arena *a, void *msg, onnxio_string *s, unsigned index, const char *v)
{
    CHECK_STATUS(onnxio_string_set(a, s, v, strlen(v)), ONNXIO_OK);
    onnxio_set_has(msg, index);
}

static int releases;
static void count_release(void *ctx, void *data, size_t size)
{
    (void)data;
    (void)size;
    releases++;
    if (ctx) (*(int *)ctx)++;
}

/* ---- descriptors ------------------------------------------------------------- */

static void test_descriptors(void)
{
    tu_begin("descriptors and lookups");
    CHECK(onnxio_all_message_count >= 30);
    for (size_t i = 0; i < onnxio_all_message_count; i++) {
        const onnxio_message_desc *d = onnxio_all_messages[i];
        CHECK_MSG(onnxio_message_desc_by_name(d->name) == d, "desc_by_name(%s)", d->name);
        CHECK_MSG(onnxio_message_desc_by_name(d->full_name) == d, "desc_by_name(%s)", d->full_name);
        CHECK_MSG(strncmp(d->full_name, "onnx.", 5) == 0, "%s: full name", d->full_name);
        uint32_t prev = 0;
        for (size_t k = 0; k < d->field_count; k++) {
            const onnxio_field_desc *f = &d->fields[k];
            CHECK_MSG(f->index == k, "%s.%s: index %u, want %zu", d->name, f->name, f->index, k);
            CHECK_MSG(f->number > prev, "%s.%s: fields not in ascending number order", d->name, f->name);
            prev = f->number;
            CHECK_MSG(onnxio_field_by_name(d, f->name) == f, "field_by_name(%s, %s)", d->name, f->name);
            CHECK_MSG(onnxio_field_by_number(d, f->number) == f, "field_by_number(%s, %u)", d->name, f->number);
            CHECK_MSG(f->offset >= sizeof(onnxio_message) && f->offset < d->size, "%s.%s: offset %u", d->name, f->name,
                      f->offset);
            CHECK_MSG((f->kind == ONNXIO_KIND_MESSAGE) == (f->message != NULL), "%s.%s: message type", d->name, f->name);
            CHECK_MSG((f->kind == ONNXIO_KIND_ENUM) == (f->enum_type != NULL), "%s.%s: enum type", d->name, f->name);
            CHECK_MSG((f->oneof != 0) == (f->label == ONNXIO_LABEL_ONEOF) && (f->oneof != 0) == (f->oneof_name != NULL),
                      "%s.%s: oneof", d->name, f->name);
            /* packed on write only where onnx-ml.proto says [packed = true] */
            bool packed_in_spec = d == &onnxio_desc_TensorProto &&
                                  (!strcmp(f->name, "float_data") || !strcmp(f->name, "int32_data") ||
                                   !strcmp(f->name, "int64_data") || !strcmp(f->name, "double_data") ||
                                   !strcmp(f->name, "uint64_data"));
            CHECK_MSG((f->label == ONNXIO_LABEL_PACKED) == packed_in_spec, "%s.%s: packed is %d", d->name, f->name,
                      f->label == ONNXIO_LABEL_PACKED);
            CHECK_MSG((f->kind == ONNXIO_KIND_RAW) == (d == &onnxio_desc_TensorProto && !strcmp(f->name, "raw_data")),
                      "%s.%s: RAW kind", d->name, f->name);
        }
        CHECK(onnxio_field_by_name(d, "no_such_field") == NULL);
        CHECK(onnxio_field_by_number(d, 0) == NULL);
        CHECK(onnxio_field_by_number(d, 9999) == NULL);
    }
    CHECK(onnxio_message_desc_by_name("TensorProto") == &onnxio_desc_TensorProto);
    CHECK(onnxio_message_desc_by_name("onnx.TensorProto") == &onnxio_desc_TensorProto);
    CHECK(onnxio_message_desc_by_name("TensorProto.Segment") == &onnxio_desc_TensorProto_Segment);
    CHECK(onnxio_message_desc_by_name("TensorProto_Segment") == &onnxio_desc_TensorProto_Segment);
    CHECK(onnxio_message_desc_by_name("onnx.TensorProto.Segment") == &onnxio_desc_TensorProto_Segment);
    CHECK(onnxio_message_desc_by_name("TypeProto.Tensor") == &onnxio_desc_TypeProto_Tensor);
    CHECK(onnxio_message_desc_by_name("SequenceProto") == &onnxio_desc_SequenceProto);
    CHECK(onnxio_message_desc_by_name("OperatorSetProto") == &onnxio_desc_OperatorSetProto);
    CHECK(onnxio_message_desc_by_name("NoSuchProto") == NULL);
    CHECK(onnxio_message_desc_by_name("") == NULL);
    CHECK(onnxio_message_desc_by_name("onnx.") == NULL);
    CHECK(onnxio_message_desc_by_name("Segment") == NULL);

    const onnxio_field_desc *f = onnxio_field_by_name(&onnxio_desc_ModelProto, "graph");
    if (CHECK(f != NULL)) {
        CHECK_EQ_INT(f->number, 7);
        CHECK(f->message == &onnxio_desc_GraphProto);
        CHECK_EQ_INT(f->index, ONNXIO_FIELD_ModelProto_graph);
    }
    f = onnxio_field_by_number(&onnxio_desc_TensorProto, 9);
    if (CHECK(f != NULL)) CHECK_STR(f->name, "raw_data");
    f = onnxio_field_by_number(&onnxio_desc_AttributeProto, 12); /* reserved in onnx-ml.proto */
    CHECK(f == NULL);

    /* enums */
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, 1), "FLOAT");
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, 16), "BFLOAT16");
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, 0), "UNDEFINED");
    CHECK(onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, 1000) == NULL);
    CHECK(onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, -1) == NULL);
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_AttributeProto_AttributeType, 11), "SPARSE_TENSOR");
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_AttributeProto_AttributeType, 6), "FLOATS");
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_TensorProto_DataLocation, 1), "EXTERNAL");
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_Version, 0), "_START_VERSION");
    CHECK_STR(onnxio_enum_value_name(&onnxio_enum_OperatorStatus, 1), "STABLE");
    CHECK_EQ_INT(ONNXIO_TensorProto_DataType_FLOAT8E4M3FN, 17);
    CHECK_STR(onnxio_enum_TensorProto_DataType.full_name, "onnx.TensorProto.DataType");
    for (size_t i = 0; i < onnxio_all_enum_count; i++) {
        const onnxio_enum_desc *e = onnxio_all_enums[i];
        for (size_t k = 0; k < e->value_count; k++)
            CHECK_MSG(onnxio_enum_value_name(e, e->values[k].number) &&
                          strcmp(onnxio_enum_value_name(e, e->values[k].number), e->values[k].name) == 0,
                      "%s: name of %d", e->name, e->values[k].number);
    }
    CHECK_STR(onnxio_status_name(ONNXIO_ERR_DECODE), "ONNXIO_ERR_DECODE");
    CHECK_STR(onnxio_status_name(ONNXIO_OK), "ONNXIO_OK");
    tu_end();
}

/* ---- new / clear / presence ------------------------------------------------------ */

static void test_new_clear_presence(void)
{
    tu_begin("new, clear, has-bits");
    onnxio_arena *a = onnxio_arena_new();
    for (size_t i = 0; i < onnxio_all_message_count; i++) {
        const onnxio_message_desc *d = onnxio_all_messages[i];
        onnxio_message *m = onnxio_message_new(a, d);
        if (!CHECK(m != NULL)) continue;
        CHECK(m->desc == d);
        CHECK_EQ_U64(m->has, 0);
        CHECK_EQ_U64(m->unknown.size, 0);
        for (size_t k = 0; k < d->field_count; k++)
            CHECK_MSG(!onnxio_field_present(m, &d->fields[k]), "new %s: %s present", d->name, d->fields[k].name);
        CHECK_EQ_U64(onnxio_serialized_size(m), 0);
    }

    /* proto2: a singular field set to its default is still written */
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 5; /* a value without its has-bit is not present */
    CHECK(!onnxio_has(m, ONNXIO_FIELD_ModelProto_ir_version));
    check_serialized_hex("ir_version without has-bit", m, "");
    m->ir_version = 0;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    CHECK(onnxio_has(m, ONNXIO_FIELD_ModelProto_ir_version));
    CHECK(onnxio_field_present(m, &onnxio_desc_ModelProto.fields[ONNXIO_FIELD_ModelProto_ir_version]));
    check_serialized_hex("ir_version 0 with has-bit", m, "08 00");
    set_str(a, m, &m->producer_name, ONNXIO_FIELD_ModelProto_producer_name, "");
    check_serialized_hex("empty producer_name", m, "08 00 12 00");
    m->model_version = -1;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_model_version);
    check_serialized_hex("model_version -1", m, "08 00 12 00 28 ff ff ff ff ff ff ff ff ff 01");
    onnxio_field_clear(m, &onnxio_desc_ModelProto.fields[ONNXIO_FIELD_ModelProto_producer_name]);
    CHECK(!onnxio_has(m, ONNXIO_FIELD_ModelProto_producer_name));
    check_serialized_hex("producer_name cleared", m, "08 00 28 ff ff ff ff ff ff ff ff ff 01");
    onnxio_message_clear(m);
    CHECK_EQ_U64(m->base.has, 0);
    check_serialized_hex("cleared model", m, "");

    onnxio_AttributeProto *at = onnxio_message_new(a, &onnxio_desc_AttributeProto);
    at->f = 0.0f;
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_f);
    check_serialized_hex("AttributeProto.f = 0", at, "15 00 00 00 00");
    at->f = -0.0f;
    check_serialized_hex("AttributeProto.f = -0", at, "15 00 00 00 80");
    at->type = 0;
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_type);
    check_serialized_hex("AttributeProto.type = UNDEFINED", at, "15 00 00 00 80 a0 01 00");

    onnxio_OperatorSetIdProto *op = onnxio_message_new(a, &onnxio_desc_OperatorSetIdProto);
    set_str(a, op, &op->domain, ONNXIO_FIELD_OperatorSetIdProto_domain, "");
    op->version = 0;
    onnxio_set_has(op, ONNXIO_FIELD_OperatorSetIdProto_version);
    check_serialized_hex("OperatorSetIdProto {domain: \"\", version: 0}", op, "0a 00 10 00");

    /* an empty sub-message is present and written as a zero-length field */
    onnxio_ModelProto *m2 = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m2->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    CHECK(onnxio_field_present(m2, &onnxio_desc_ModelProto.fields[ONNXIO_FIELD_ModelProto_graph]));
    check_serialized_hex("empty graph", m2, "3a 00");
    onnxio_list_add(a, &m2->graph->node, &onnxio_desc_NodeProto);
    check_serialized_hex("graph with an empty node", m2, "3a 02 0a 00");
    onnxio_list_add(a, &m2->training_info, &onnxio_desc_TrainingInfoProto);
    onnxio_list_add(a, &m2->functions, &onnxio_desc_FunctionProto);
    check_serialized_hex("empty training_info (20) and functions (25)", m2, "3a 02 0a 00 a2 01 00 ca 01 00");
    onnxio_arena_unref(a);
    tu_end();
}

/* Arena blocks kept for the next tree (spares, cached blocks) are cleared
 * when a tree is freed, and structs made from them are not cleared again:
 * every struct made after a parse, in arenas whose blocks held dense
 * non-zero strings before, must be all zero bytes past its desc. */
static void test_new_after_reuse(void)
{
    tu_begin("new structs are zero in blocks that held a freed tree");
    /* Heap memory that malloc hands out again holds non-zero bytes. */
    for (size_t n = 4096; n <= ((size_t)4 << 20); n *= 4) {
        void *dirty = malloc(n);
        if (!CHECK(dirty != NULL)) return;
        memset(dirty, 0xab, n);
        free(dirty);
    }
    static const uint8_t zero[512];
    /* NodeProto inputs of 60 'x': 62 bytes each. Trees from a few hundred
     * bytes (spare blocks) to several MiB (cached blocks, and a tree too
     * big for its blocks to be cleared). */
    const size_t counts[] = {1, 3, 20, 50, 400, 3000, 60000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c] * 62;
        uint8_t *data = malloc(n);
        if (!CHECK(data != NULL)) return;
        for (size_t i = 0; i < counts[c]; i++) {
            data[i * 62] = 0x0a;
            data[i * 62 + 1] = 60;
            memset(data + i * 62 + 2, 'x', 60);
        }
        for (int round = 0; round < 3; round++) {
            onnxio_arena *a = onnxio_arena_new();
            void *node = NULL;
            onnxio_status st = onnxio_parse(&onnxio_desc_NodeProto, data, n, NULL, NULL, a, &node);
            CHECK_MSG(st == ONNXIO_OK, "%zu inputs: %s", counts[c], onnxio_last_error());
            CHECK_MSG(node && ((onnxio_NodeProto *)node)->input.size == counts[c], "%zu inputs parsed", counts[c]);
            for (size_t i = 0; i < onnxio_all_message_count; i++) {
                const onnxio_message_desc *d = onnxio_all_messages[i];
                onnxio_message *m = onnxio_message_new(a, d);
                if (!CHECK(m != NULL) || !CHECK(d->size <= sizeof zero + sizeof m->desc)) continue;
                CHECK_MSG(memcmp((char *)m + sizeof m->desc, zero, d->size - sizeof m->desc) == 0,
                          "%zu inputs, round %d: a new %s after the parse is not all zero", counts[c], round, d->name);
            }
            onnxio_arena_unref(a);
        }
        free(data);
    }
    tu_end();
}

/* ---- exact bytes of hand-built messages --------------------------------------------- */

static void test_exact_bytes(void)
{
    tu_begin("serialized bytes of hand-built messages");
    onnxio_arena *a = onnxio_arena_new();

    onnxio_TensorProto *t = onnxio_message_new(a, &onnxio_desc_TensorProto);
    int64_t *d = onnxio_array_append(a, &t->dims, sizeof(int64_t));
    *d = 1;
    d = onnxio_array_append(a, &t->dims, sizeof(int64_t));
    *d = -1;
    check_serialized_hex("dims [1, -1] (unpacked)", t, "08 01 08 ff ff ff ff ff ff ff ff ff 01");
    t->data_type = ONNXIO_TensorProto_DataType_FLOAT;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    t->segment = onnxio_message_new(a, &onnxio_desc_TensorProto_Segment);
    onnxio_set_has(t->segment, ONNXIO_FIELD_TensorProto_Segment_begin);
    t->segment->end = 2;
    onnxio_set_has(t->segment, ONNXIO_FIELD_TensorProto_Segment_end);
    float *fl = onnxio_array_append(a, &t->float_data, sizeof(float));
    *fl = 1.0f;
    fl = onnxio_array_append(a, &t->float_data, sizeof(float));
    *fl = 2.0f;
    int32_t *i32 = onnxio_array_append(a, &t->int32_data, sizeof(int32_t));
    *i32 = -1;
    onnxio_string *s = onnxio_array_append(a, &t->string_data, sizeof(onnxio_string));
    onnxio_string_set(a, s, "ab", 2);
    s = onnxio_array_append(a, &t->string_data, sizeof(onnxio_string));
    onnxio_string_set(a, s, "", 0);
    int64_t *i64 = onnxio_array_append(a, &t->int64_data, sizeof(int64_t));
    *i64 = 300;
    i64 = onnxio_array_append(a, &t->int64_data, sizeof(int64_t));
    *i64 = -2;
    set_str(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, "w");
    static const uint8_t raw[] = {1, 2, 3};
    CHECK_STATUS(onnxio_span_copy_from(&t->raw_data, raw, 3), ONNXIO_OK);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    double *db = onnxio_array_append(a, &t->double_data, sizeof(double));
    *db = 0.5;
    uint64_t *u64 = onnxio_array_append(a, &t->uint64_data, sizeof(uint64_t));
    *u64 = UINT64_MAX;
    set_str(a, t, &t->doc_string, ONNXIO_FIELD_TensorProto_doc_string, "d");
    onnxio_StringStringEntryProto *e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
    set_str(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, "k");
    set_str(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, "v");
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    e = onnxio_list_add(a, &t->metadata_props, &onnxio_desc_StringStringEntryProto);
    set_str(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, "m");
    const char *tensor_hex = "08 01 08 ff ff ff ff ff ff ff ff ff 01" /* dims 1, -1 */
                             " 10 01"                                 /* data_type FLOAT */
                             " 1a 04 08 00 10 02"                     /* segment {begin 0, end 2} */
                             " 22 08 00 00 80 3f 00 00 00 40"         /* float_data [1, 2] packed */
                             " 2a 0a ff ff ff ff ff ff ff ff ff 01"   /* int32_data [-1] packed, 10 bytes */
                             " 32 02 61 62 32 00"                     /* string_data ["ab", ""] */
                             " 3a 0c ac 02 fe ff ff ff ff ff ff ff ff 01" /* int64_data [300, -2] */
                             " 42 01 77"                              /* name "w" */
                             " 4a 03 01 02 03"                        /* raw_data */
                             " 52 08 00 00 00 00 00 00 e0 3f"         /* double_data [0.5] */
                             " 5a 0a ff ff ff ff ff ff ff ff ff 01"   /* uint64_data [2^64-1] */
                             " 62 01 64"                              /* doc_string "d" */
                             " 6a 06 0a 01 6b 12 01 76"               /* external_data {k: v} */
                             " 70 01"                                 /* data_location EXTERNAL */
                             " 82 01 03 0a 01 6d";                    /* metadata_props (16) {key "m"} */
    check_serialized_hex("TensorProto with every field", t, tensor_hex);
    /* and it parses back to an equal message */
    {
        size_t n;
        uint8_t *bytes = tu_unhex(tensor_hex, &n);
        onnxio_arena *b = onnxio_arena_new();
        void *back = NULL;
        if (CHECK_STATUS(onnxio_parse(&onnxio_desc_TensorProto, bytes, n, NULL, NULL, b, &back), ONNXIO_OK)) {
            CHECK(onnxio_message_equal(back, t) == 1);
            onnxio_TensorProto *bt = back;
            CHECK_EQ_INT(bt->dims.size, 2);
            if (bt->dims.size == 2) CHECK_EQ_INT(bt->dims.data[1], -1);
            CHECK_EQ_INT(bt->int32_data.size, 1);
            if (bt->int32_data.size == 1) CHECK_EQ_INT(bt->int32_data.data[0], -1);
            CHECK_EQ_U64(bt->uint64_data.size == 1 ? bt->uint64_data.data[0] : 0, UINT64_MAX);
            CHECK_BYTES(bt->raw_data.data, bt->raw_data.size, raw, 3);
            CHECK_STR(bt->name.data, "w");
            CHECK(bt->segment && onnxio_has(bt->segment, ONNXIO_FIELD_TensorProto_Segment_begin) &&
                  bt->segment->begin == 0 && bt->segment->end == 2);
        }
        onnxio_arena_unref(b);
        free(bytes);
    }

    onnxio_AttributeProto *at = onnxio_message_new(a, &onnxio_desc_AttributeProto);
    set_str(a, at, &at->name, ONNXIO_FIELD_AttributeProto_name, "a");
    at->f = 1.5f;
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_f);
    at->i = -1;
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_i);
    set_str(a, at, &at->s, ONNXIO_FIELD_AttributeProto_s, "x");
    fl = onnxio_array_append(a, &at->floats, sizeof(float));
    *fl = 1.5f;
    fl = onnxio_array_append(a, &at->floats, sizeof(float));
    *fl = -0.0f;
    i64 = onnxio_array_append(a, &at->ints, sizeof(int64_t));
    *i64 = -2;
    i64 = onnxio_array_append(a, &at->ints, sizeof(int64_t));
    *i64 = 1;
    s = onnxio_array_append(a, &at->strings, sizeof(onnxio_string));
    onnxio_string_set(a, s, "s", 1);
    at->type = ONNXIO_AttributeProto_AttributeType_INTS;
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_type);
    set_str(a, at, &at->ref_attr_name, ONNXIO_FIELD_AttributeProto_ref_attr_name, "r");
    check_serialized_hex("AttributeProto", at,
                         "0a 01 61"                              /* name */
                         " 15 00 00 c0 3f"                       /* f 1.5 */
                         " 18 ff ff ff ff ff ff ff ff ff 01"     /* i -1 */
                         " 22 01 78"                             /* s */
                         " 3d 00 00 c0 3f 3d 00 00 00 80"        /* floats unpacked */
                         " 40 fe ff ff ff ff ff ff ff ff 01 40 01" /* ints unpacked */
                         " 4a 01 73"                             /* strings */
                         " a0 01 07"                             /* type (20) INTS */
                         " aa 01 01 72");                        /* ref_attr_name (21) */

    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    /* set out of field order on purpose: written in field-number order */
    onnxio_OperatorSetIdProto *op = onnxio_list_add(a, &m->opset_import, &onnxio_desc_OperatorSetIdProto);
    set_str(a, op, &op->domain, ONNXIO_FIELD_OperatorSetIdProto_domain, "");
    op->version = 17;
    onnxio_set_has(op, ONNXIO_FIELD_OperatorSetIdProto_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    set_str(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    check_serialized_hex("ModelProto", m, "08 08 3a 03 12 01 67 42 04 0a 00 10 11");

    /* a long string: 300-byte length prefix is a 2-byte varint */
    char big[300];
    memset(big, 'z', sizeof big);
    onnxio_StringStringEntryProto *kv = onnxio_message_new(a, &onnxio_desc_StringStringEntryProto);
    CHECK_STATUS(onnxio_string_set(a, &kv->value, big, sizeof big), ONNXIO_OK);
    onnxio_set_has(kv, ONNXIO_FIELD_StringStringEntryProto_value);
    {
        tu_bytes want = {0};
        tu_bytes_put(&want, "\x12\xac\x02", 3);
        tu_bytes_put(&want, big, sizeof big);
        onnxio_buffer *b = NULL;
        if (CHECK_STATUS(onnxio_serialize(kv, &b), ONNXIO_OK))
            CHECK_BYTES(onnxio_buffer_data(b), onnxio_buffer_size(b), want.data, want.size);
        onnxio_buffer_unref(b);
        tu_bytes_free(&want);
    }
    onnxio_arena_unref(a);
    tu_end();
}

/* ---- every field of every message, generically ------------------------------------------ */

static size_t elem_size(const onnxio_field_desc *f)
{
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM: return sizeof(int32_t);
    case ONNXIO_KIND_FLOAT: return sizeof(float);
    case ONNXIO_KIND_INT64: return sizeof(int64_t);
    case ONNXIO_KIND_UINT64: return sizeof(uint64_t);
    case ONNXIO_KIND_DOUBLE: return sizeof(double);
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: return sizeof(onnxio_string);
    case ONNXIO_KIND_RAW: return sizeof(onnxio_span);
    default: return sizeof(void *);
    }
}

/* Values by variant: 0 = the default value (0, "", empty), 1 and 2 differ. */
static const uint8_t unknown1[] = {0xa0, 0x06, 0x01}; /* field 100 varint 1 */
static const uint8_t unknown2[] = {0xa0, 0x06, 0x02};

/* Variant 2 of an enum field: a defined value other than 0 and 1 when the
 * enum has one (*known = true), else -3, which is not a value (proto2 enums
 * are closed: a parser keeps such a value as an unknown field). */
static int32_t enum_variant2(const onnxio_field_desc *f, bool *known)
{
    const onnxio_enum_desc *e = f->enum_type;
    for (size_t i = e->value_count; i-- > 0;)
        if (e->values[i].number != 0 && e->values[i].number != 1) {
            if (known) *known = true;
            return e->values[i].number;
        }
    if (known) *known = false;
    return -3;
}

/* Sets field `f` of `msg` to variant `v` (appends one element to repeated
 * fields) and appends the field's expected encoding to `want`. */
static void set_field(onnxio_arena *a, void *msg, const onnxio_field_desc *f, int v, tu_bytes *want)
{
    void *member = onnxio_field_ptr(msg, f);
    bool repeated = f->label == ONNXIO_LABEL_REPEATED || f->label == ONNXIO_LABEL_PACKED;
    tu_bytes val = {0}; /* the encoded value, without tag */
    unsigned wt = 0;
    void *slot = member;
    if (repeated && f->kind != ONNXIO_KIND_MESSAGE) slot = onnxio_array_append(a, member, elem_size(f));
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM: {
        int32_t x = v == 0 ? 0 : v == 1 ? 1 : f->kind == ONNXIO_KIND_ENUM ? enum_variant2(f, NULL) : -3;
        *(int32_t *)slot = x;
        tu_bytes_varint(&val, (uint64_t)(int64_t)x);
        break;
    }
    case ONNXIO_KIND_INT64: {
        int64_t x = v == 0 ? 0 : v == 1 ? 300 : -3;
        *(int64_t *)slot = x;
        tu_bytes_varint(&val, (uint64_t)x);
        break;
    }
    case ONNXIO_KIND_UINT64: {
        uint64_t x = v == 0 ? 0 : v == 1 ? 1 : UINT64_MAX - 2;
        *(uint64_t *)slot = x;
        tu_bytes_varint(&val, x);
        break;
    }
    case ONNXIO_KIND_FLOAT: {
        float x = v == 0 ? 0.0f : v == 1 ? 1.5f : -2.25f;
        *(float *)slot = x;
        uint32_t bits;
        memcpy(&bits, &x, 4);
        for (int i = 0; i < 4; i++) tu_bytes_byte(&val, (uint8_t)(bits >> (8 * i)));
        wt = 5;
        break;
    }
    case ONNXIO_KIND_DOUBLE: {
        double x = v == 0 ? 0.0 : v == 1 ? 1.5 : -2.25;
        *(double *)slot = x;
        uint64_t bits;
        memcpy(&bits, &x, 8);
        for (int i = 0; i < 8; i++) tu_bytes_byte(&val, (uint8_t)(bits >> (8 * i)));
        wt = 1;
        break;
    }
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: {
        const char *x = v == 0 ? "" : v == 1 ? "a" : "bc\xff";
        onnxio_string_set(a, slot, x, strlen(x));
        tu_bytes_varint(&val, strlen(x));
        tu_bytes_put(&val, x, strlen(x));
        wt = 2;
        break;
    }
    case ONNXIO_KIND_RAW: {
        const char *x = v == 0 ? "" : v == 1 ? "\x01" : "\x02\x03";
        onnxio_span_copy_from(slot, x, strlen(x));
        tu_bytes_varint(&val, strlen(x));
        tu_bytes_put(&val, x, strlen(x));
        wt = 2;
        break;
    }
    case ONNXIO_KIND_MESSAGE: {
        void *sub = repeated ? onnxio_list_add(a, member, f->message) : onnxio_message_new(a, f->message);
        if (v) onnxio_parse_into(sub, v == 1 ? unknown1 : unknown2, 3, NULL, NULL, a);
        if (!repeated) *(void **)member = sub;
        tu_bytes_varint(&val, v ? 3 : 0);
        if (v) tu_bytes_put(&val, v == 1 ? unknown1 : unknown2, 3);
        wt = 2;
        break;
    }
    }
    if (!repeated) onnxio_set_has(msg, f->index);
    if (f->label == ONNXIO_LABEL_PACKED) {
        tu_bytes_tag(want, f->number, 2);
        tu_bytes_varint(want, val.size);
    } else {
        tu_bytes_tag(want, f->number, wt);
    }
    tu_bytes_put(want, val.data, val.size);
    tu_bytes_free(&val);
}

static void test_every_field(void)
{
    tu_begin("every field of every message: bytes, parse back, equal, copy");
    long fields = 0;
    for (size_t i = 0; i < onnxio_all_message_count; i++) {
        const onnxio_message_desc *d = onnxio_all_messages[i];
        for (size_t k = 0; k < d->field_count; k++) {
            const onnxio_field_desc *f = &d->fields[k];
            bool repeated = f->label == ONNXIO_LABEL_REPEATED || f->label == ONNXIO_LABEL_PACKED;
            onnxio_arena *a = onnxio_arena_new();
            fields++;
            /* each variant alone: exact bytes, and they parse back equal */
            void *alone[3];
            for (int v = 0; v < 3; v++) {
                alone[v] = onnxio_message_new(a, d);
                tu_bytes want = {0};
                set_field(a, alone[v], f, v, &want);
                CHECK_MSG(onnxio_field_present(alone[v], f), "%s.%s: not present after setting", d->name, f->name);
                onnxio_buffer *b = NULL;
                if (CHECK_STATUS(onnxio_serialize(alone[v], &b), ONNXIO_OK)) {
                    char *what = tu_strdup_printf("%s.%s = variant %d", d->name, f->name, v);
                    tu_check_bytes(onnxio_buffer_data(b), onnxio_buffer_size(b), want.data, want.size, what, __FILE__,
                                   __LINE__);
                    free(what);
                }
                onnxio_buffer_unref(b);
                void *back = NULL;
                bool known = true;
                if (f->kind == ONNXIO_KIND_ENUM && v == 2) enum_variant2(f, &known);
                if (CHECK_STATUS(onnxio_parse(d, want.data, want.size, NULL, NULL, a, &back), ONNXIO_OK)) {
                    if (known) {
                        CHECK_MSG(onnxio_message_equal(back, alone[v]) == 1, "%s.%s variant %d: parsed back not equal",
                                  d->name, f->name, v);
                    } else {
                        /* an undefined enum value is read as an unknown field */
                        CHECK_MSG(!onnxio_field_present(back, f) && ((onnxio_message *)back)->unknown.size == want.size,
                                  "%s.%s = -3 (not a value of %s): not kept as an unknown field", d->name, f->name,
                                  f->enum_type->name);
                    }
                    onnxio_buffer *rb = NULL;
                    if (CHECK_STATUS(onnxio_serialize(back, &rb), ONNXIO_OK))
                        CHECK_BYTES(onnxio_buffer_data(rb), onnxio_buffer_size(rb), want.data, want.size);
                    onnxio_buffer_unref(rb);
                }
                tu_bytes_free(&want);
            }
            /* equality: presence, values, repeated sizes */
            void *empty = onnxio_message_new(a, d);
            CHECK_MSG(onnxio_message_equal(empty, onnxio_message_new(a, d)) == 1, "%s: empty messages differ", d->name);
            for (int v = 0; v < 3; v++)
                CHECK_MSG(onnxio_message_equal(alone[v], empty) == 0 && onnxio_message_equal(empty, alone[v]) == 0,
                          "%s.%s: variant %d equal to an empty message (presence ignored)", d->name, f->name, v);
            CHECK_MSG(onnxio_message_equal(alone[1], alone[2]) == 0, "%s.%s: variants 1 and 2 equal", d->name, f->name);
            CHECK_MSG(onnxio_message_equal(alone[0], alone[1]) == 0, "%s.%s: variants 0 and 1 equal", d->name, f->name);
            void *again = onnxio_message_new(a, d);
            tu_bytes scratch = {0};
            set_field(a, again, f, 2, &scratch);
            CHECK_MSG(onnxio_message_equal(again, alone[2]) == 1, "%s.%s: same value not equal", d->name, f->name);
            if (repeated) {
                set_field(a, again, f, 2, &scratch);
                CHECK_MSG(onnxio_message_equal(again, alone[2]) == 0, "%s.%s: [x, x] equal to [x]", d->name, f->name);
            }
            tu_bytes_free(&scratch);
            /* deep copy across arenas, outliving the source */
            onnxio_arena *b2 = onnxio_arena_new();
            void *c = onnxio_message_clone(b2, alone[2]);
            if (CHECK(c != NULL)) {
                CHECK_MSG(onnxio_message_equal(c, alone[2]) == 1, "%s.%s: clone not equal", d->name, f->name);
                onnxio_buffer *before = NULL;
                onnxio_serialize(alone[2], &before);
                onnxio_arena_unref(a);
                a = NULL;
                onnxio_buffer *after = NULL;
                if (CHECK_STATUS(onnxio_serialize(c, &after), ONNXIO_OK) && before)
                    CHECK_BYTES(onnxio_buffer_data(after), onnxio_buffer_size(after), onnxio_buffer_data(before),
                                onnxio_buffer_size(before));
                onnxio_buffer_unref(before);
                onnxio_buffer_unref(after);
                /* clearing the field empties it */
                onnxio_field_clear(c, f);
                CHECK_MSG(!onnxio_field_present(c, f), "%s.%s: present after field_clear", d->name, f->name);
                CHECK_EQ_U64(onnxio_serialized_size(c), 0);
            }
            onnxio_arena_unref(b2);
            onnxio_arena_unref(a);
        }
    }
    tu_end();
    tu_note("%ld fields", fields);

    tu_begin("equal and unknown fields");
    onnxio_arena *a = onnxio_arena_new();
    void *x = NULL, *y = NULL, *z = NULL, *w = NULL;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, unknown1, 3, NULL, NULL, a, &x), ONNXIO_OK);
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, unknown1, 3, NULL, NULL, a, &y), ONNXIO_OK);
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, unknown2, 3, NULL, NULL, a, &z), ONNXIO_OK);
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, NULL, 0, NULL, NULL, a, &w), ONNXIO_OK);
    if (x && y && z && w) {
        CHECK(onnxio_message_equal(x, y) == 1);
        CHECK(onnxio_message_equal(x, z) == 0);
        CHECK(onnxio_message_equal(x, w) == 0);
        CHECK(onnxio_message_equal(w, x) == 0);
    }
    /* different types never compare equal, even when both are empty */
    CHECK(onnxio_message_equal(onnxio_message_new(a, &onnxio_desc_TensorProto),
                               onnxio_message_new(a, &onnxio_desc_SparseTensorProto)) == 0);
    /* payloads compare by bytes, not by pointer */
    onnxio_TensorProto *t1 = onnxio_message_new(a, &onnxio_desc_TensorProto), *t2 = onnxio_message_new(a, &onnxio_desc_TensorProto);
    onnxio_span_copy_from(&t1->raw_data, "abcd", 4);
    onnxio_set_has(t1, ONNXIO_FIELD_TensorProto_raw_data);
    onnxio_span_copy_from(&t2->raw_data, "abcd", 4);
    onnxio_set_has(t2, ONNXIO_FIELD_TensorProto_raw_data);
    CHECK(onnxio_message_equal(t1, t2) == 1);
    onnxio_span_copy_from(&t2->raw_data, "abce", 4);
    CHECK(onnxio_message_equal(t1, t2) == 0);
    /* nested difference deep in a tree */
    onnxio_ModelProto *m1 = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m1->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    onnxio_NodeProto *n1 = onnxio_list_add(a, &m1->graph->node, &onnxio_desc_NodeProto);
    onnxio_AttributeProto *a1 = onnxio_list_add(a, &n1->attribute, &onnxio_desc_AttributeProto);
    a1->i = 1;
    onnxio_set_has(a1, ONNXIO_FIELD_AttributeProto_i);
    onnxio_ModelProto *m2 = onnxio_message_clone(a, m1);
    CHECK(onnxio_message_equal(m1, m2) == 1);
    m2->graph->node.data[0]->attribute.data[0]->i = 2;
    CHECK(onnxio_message_equal(m1, m2) == 0);
    onnxio_arena_unref(a);
    tu_end();
}

/* ---- oneofs ------------------------------------------------------------------------------ */

static void test_oneof(void)
{
    tu_begin("oneof members are exclusive");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_TensorShapeProto_Dimension *d = onnxio_message_new(a, &onnxio_desc_TensorShapeProto_Dimension);
    set_str(a, d, &d->denotation, ONNXIO_FIELD_TensorShapeProto_Dimension_denotation, "D");
    d->dim_value = 5;
    onnxio_set_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value);
    check_serialized_hex("dim_value 5", d, "08 05 1a 01 44");
    set_str(a, d, &d->dim_param, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_param, "N");
    CHECK(!onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value));
    CHECK_EQ_INT(d->dim_value, 0);
    CHECK(onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_denotation));
    check_serialized_hex("dim_param N replaces dim_value", d, "12 01 4e 1a 01 44");
    d->dim_value = 0;
    onnxio_set_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value);
    CHECK(!onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_param));
    CHECK_EQ_U64(d->dim_param.size, 0);
    check_serialized_hex("dim_value 0 replaces dim_param", d, "08 00 1a 01 44");

    onnxio_TypeProto *t = onnxio_message_new(a, &onnxio_desc_TypeProto);
    t->tensor_type = onnxio_message_new(a, &onnxio_desc_TypeProto_Tensor);
    t->tensor_type->elem_type = 1;
    onnxio_set_has(t->tensor_type, ONNXIO_FIELD_TypeProto_Tensor_elem_type);
    onnxio_set_has(t, ONNXIO_FIELD_TypeProto_tensor_type);
    check_serialized_hex("tensor_type", t, "0a 02 08 01");
    t->sequence_type = onnxio_message_new(a, &onnxio_desc_TypeProto_Sequence);
    onnxio_set_has(t, ONNXIO_FIELD_TypeProto_sequence_type);
    CHECK(t->tensor_type == NULL);
    CHECK(t->sequence_type != NULL);
    check_serialized_hex("sequence_type replaces tensor_type", t, "22 00");
    t->optional_type = onnxio_message_new(a, &onnxio_desc_TypeProto_Optional);
    onnxio_set_has(t, ONNXIO_FIELD_TypeProto_optional_type);
    CHECK(t->sequence_type == NULL);
    check_serialized_hex("optional_type replaces sequence_type", t, "4a 00");
    set_str(a, t, &t->denotation, ONNXIO_FIELD_TypeProto_denotation, "x");
    CHECK(t->optional_type != NULL); /* denotation is not in the oneof */
    check_serialized_hex("denotation next to the oneof", t, "32 01 78 4a 00");

    onnxio_SimpleShardedDimProto *s = onnxio_message_new(a, &onnxio_desc_SimpleShardedDimProto);
    set_str(a, s, &s->dim_param, ONNXIO_FIELD_SimpleShardedDimProto_dim_param, "p");
    s->num_shards = 2;
    onnxio_set_has(s, ONNXIO_FIELD_SimpleShardedDimProto_num_shards);
    s->dim_value = 3;
    onnxio_set_has(s, ONNXIO_FIELD_SimpleShardedDimProto_dim_value);
    check_serialized_hex("SimpleShardedDimProto", s, "08 03 18 02");
    /* copy and merge keep exclusivity */
    onnxio_SimpleShardedDimProto *s2 = onnxio_message_new(a, &onnxio_desc_SimpleShardedDimProto);
    set_str(a, s2, &s2->dim_param, ONNXIO_FIELD_SimpleShardedDimProto_dim_param, "q");
    CHECK_STATUS(onnxio_message_merge(a, s2, s), ONNXIO_OK);
    CHECK(!onnxio_has(s2, ONNXIO_FIELD_SimpleShardedDimProto_dim_param));
    check_serialized_hex("merged oneof", s2, "08 03 18 02");
    onnxio_arena_unref(a);
    tu_end();
}

/* ---- arrays and lists ------------------------------------------------------------------------ */

static void test_arrays(void)
{
    tu_begin("array append and list add");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_TensorProto *t = onnxio_message_new(a, &onnxio_desc_TensorProto);
    for (int i = 0; i < 1000; i++) {
        int64_t *p = onnxio_array_append(a, &t->int64_data, sizeof(int64_t));
        if (!CHECK(p != NULL)) break;
        CHECK_EQ_INT(*p, 0); /* new elements are zeroed */
        *p = (int64_t)i * 3 - 500;
    }
    CHECK_EQ_U64(t->int64_data.size, 1000);
    CHECK(t->int64_data.capacity >= 1000);
    bool ok = true;
    for (size_t i = 0; i < t->int64_data.size; i++) ok &= t->int64_data.data[i] == (int64_t)i * 3 - 500;
    CHECK_MSG(ok, "int64 array values lost while growing");

    for (int i = 0; i < 100; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "s%d", i);
        onnxio_string *s = onnxio_array_append(a, &t->string_data, sizeof(onnxio_string));
        onnxio_string_set(a, s, buf, strlen(buf));
    }
    ok = t->string_data.size == 100;
    for (size_t i = 0; ok && i < 100; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "s%zu", i);
        ok = t->string_data.data[i].size == strlen(buf) && strcmp(t->string_data.data[i].data, buf) == 0;
    }
    CHECK_MSG(ok, "string array values lost while growing");

    onnxio_GraphProto *g = onnxio_message_new(a, &onnxio_desc_GraphProto);
    onnxio_NodeProto *nodes[200];
    for (int i = 0; i < 200; i++) {
        nodes[i] = onnxio_list_add(a, &g->node, &onnxio_desc_NodeProto);
        if (!CHECK(nodes[i] != NULL)) return;
        CHECK(nodes[i]->base.desc == &onnxio_desc_NodeProto);
        char buf[16];
        snprintf(buf, sizeof buf, "n%d", i);
        set_str(a, nodes[i], &nodes[i]->name, ONNXIO_FIELD_NodeProto_name, buf);
    }
    ok = g->node.size == 200;
    for (int i = 0; ok && i < 200; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "n%d", i);
        ok = g->node.data[i] == nodes[i] && strcmp(nodes[i]->name.data, buf) == 0;
    }
    CHECK_MSG(ok, "list elements moved or changed while the list grew");

    /* strings are NUL-terminated copies in the arena */
    char src[] = "hello";
    onnxio_string s = {0};
    CHECK_STATUS(onnxio_string_set(a, &s, src, 5), ONNXIO_OK);
    src[0] = 'j';
    CHECK(s.size == 5 && strcmp(s.data, "hello") == 0 && s.data != src);
    CHECK_STATUS(onnxio_string_set(a, &s, "a\0b", 3), ONNXIO_OK);
    CHECK(s.size == 3 && memcmp(s.data, "a\0b", 4) == 0);

    /* arena memory */
    void *p = onnxio_arena_alloc(a, 100);
    CHECK(p != NULL && ((uintptr_t)p % 16) == 0);
    bool zero = true;
    for (int i = 0; p && i < 100; i++) zero &= ((uint8_t *)p)[i] == 0;
    CHECK(zero);
    CHECK(onnxio_arena_used(a) > 0);
    void *big = onnxio_arena_alloc(a, 10u << 20);
    CHECK(big != NULL && ((uintptr_t)big % 16) == 0);
    if (big) {
        ((uint8_t *)big)[(10u << 20) - 1] = 1;
        CHECK(onnxio_arena_used(a) >= (10u << 20));
    }

    /* Parsed runs of TensorProto.dims (field 1, int64), packed and not:
     * an empty packed run, packed elements, an unpacked run (as proto2
     * writes it) after them, and a packed run of only continuation bytes. */
    static const uint8_t empty_packed[] = {0x0a, 0x00};
    static const uint8_t runs[] = {0x0a, 0x03, 0x01, 0x96, 0x01, /* packed 1, 150 */
                                   0x08, 0x02, 0x08, 0x03, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t cut[] = {0x0a, 0x01, 0x80};
    onnxio_TensorProto *d = NULL;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_TensorProto, empty_packed, sizeof empty_packed, NULL, NULL, a, (void **)&d),
                 ONNXIO_OK);
    CHECK(d && d->dims.size == 0);
    d = NULL;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_TensorProto, runs, sizeof runs, NULL, NULL, a, (void **)&d), ONNXIO_OK);
    if (CHECK(d && d->dims.size == 5)) {
        static const int64_t want[] = {1, 150, 2, 3, -1};
        CHECK(memcmp(d->dims.data, want, sizeof want) == 0);
    }
    d = NULL;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_TensorProto, cut, sizeof cut, NULL, NULL, a, (void **)&d), ONNXIO_ERR_DECODE);
    onnxio_arena_unref(a);
    tu_end();
}

/* ---- deep copy and merge -------------------------------------------------------------------------- */

static void test_copy(void)
{
    tu_begin("deep copy within and across arenas shares payloads");
    static uint8_t payload[4096];
    for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 13);
    int released = 0;
    releases = 0;
    onnxio_buffer *buf = onnxio_buffer_wrap(payload, sizeof payload, count_release, &released);
    onnxio_arena *A = onnxio_arena_new(), *B = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(A, &onnxio_desc_ModelProto);
    m->graph = onnxio_message_new(A, &onnxio_desc_GraphProto);
    set_str(A, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    onnxio_TensorProto *t = onnxio_list_add(A, &m->graph->initializer, &onnxio_desc_TensorProto);
    set_str(A, t, &t->name, ONNXIO_FIELD_TensorProto_name, "w");
    onnxio_span_set(&t->raw_data, payload, sizeof payload, buf);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    CHECK_EQ_U64(onnxio_buffer_refcount(buf), 2);
    onnxio_buffer_unref(buf); /* the span holds the last reference */
    CHECK_EQ_U64(onnxio_buffer_refcount(buf), 1);
    onnxio_buffer *orig_bytes = NULL;
    CHECK_STATUS(onnxio_serialize(m, &orig_bytes), ONNXIO_OK);

    onnxio_ModelProto *same = onnxio_message_clone(A, m);
    CHECK(same != NULL && same != m);
    CHECK_EQ_U64(onnxio_buffer_refcount(buf), 2);
    onnxio_ModelProto *other = onnxio_message_clone(B, m);
    CHECK_EQ_U64(onnxio_buffer_refcount(buf), 3);
    onnxio_ModelProto *dst = onnxio_message_new(B, &onnxio_desc_ModelProto);
    dst->ir_version = 3;
    onnxio_set_has(dst, ONNXIO_FIELD_ModelProto_ir_version);
    CHECK_STATUS(onnxio_message_copy(B, dst, m), ONNXIO_OK);
    CHECK(!onnxio_has(dst, ONNXIO_FIELD_ModelProto_ir_version)); /* dst was cleared first */
    CHECK_EQ_U64(onnxio_buffer_refcount(buf), 4);
    CHECK(onnxio_message_equal(same, m) == 1 && onnxio_message_equal(other, m) == 1 && onnxio_message_equal(dst, m) == 1);
    if (other && other->graph && other->graph->initializer.size == 1) {
        onnxio_TensorProto *ot = other->graph->initializer.data[0];
        CHECK(ot->raw_data.data == payload); /* shared, not copied */
        CHECK(ot->raw_data.owner == buf);
        CHECK(ot != t && other->graph != m->graph);
        CHECK(ot->name.data != t->name.data); /* strings are copied into B */
        /* changing the copy leaves the original alone */
        set_str(B, other->graph, &other->graph->name, ONNXIO_FIELD_GraphProto_name, "changed");
        CHECK_STR(m->graph->name.data, "g");
    }
    /* copying onto a message that holds a payload drops that payload */
    CHECK_STATUS(onnxio_message_copy(B, dst, m), ONNXIO_OK);
    CHECK_EQ_U64(onnxio_buffer_refcount(buf), 4);

    onnxio_arena_unref(A); /* m and same go */
    CHECK_EQ_U64(onnxio_buffer_refcount(buf), 2);
    CHECK_EQ_INT(released, 0);
    onnxio_buffer *copy_bytes = NULL;
    if (CHECK_STATUS(onnxio_serialize(dst, &copy_bytes), ONNXIO_OK))
        CHECK_BYTES(onnxio_buffer_data(copy_bytes), onnxio_buffer_size(copy_bytes), onnxio_buffer_data(orig_bytes),
                    onnxio_buffer_size(orig_bytes));
    onnxio_buffer_unref(copy_bytes);
    onnxio_arena_unref(B);
    CHECK_EQ_INT(released, 1);
    onnxio_buffer_unref(orig_bytes);

    /* borrowed payloads stay borrowed in a copy */
    onnxio_arena *C = onnxio_arena_new();
    onnxio_TensorProto *bt = onnxio_message_new(C, &onnxio_desc_TensorProto);
    onnxio_span_set(&bt->raw_data, payload, 16, NULL);
    onnxio_set_has(bt, ONNXIO_FIELD_TensorProto_raw_data);
    onnxio_TensorProto *bc = onnxio_message_clone(C, bt);
    CHECK(bc && bc->raw_data.owner == NULL && bc->raw_data.data == payload && bc->raw_data.size == 16);
    /* copy onto itself is a no-op */
    CHECK_STATUS(onnxio_message_copy(C, bt, bt), ONNXIO_OK);
    CHECK(bt->raw_data.data == payload);
    onnxio_arena_unref(C);
    tu_end();

    tu_begin("merge");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *x = onnxio_message_new(a, &onnxio_desc_ModelProto), *y = onnxio_message_new(a, &onnxio_desc_ModelProto);
    x->ir_version = 1;
    onnxio_set_has(x, ONNXIO_FIELD_ModelProto_ir_version);
    onnxio_OperatorSetIdProto *o = onnxio_list_add(a, &x->opset_import, &onnxio_desc_OperatorSetIdProto);
    set_str(a, o, &o->domain, ONNXIO_FIELD_OperatorSetIdProto_domain, "a");
    x->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    set_str(a, x->graph, &x->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    y->ir_version = 2;
    onnxio_set_has(y, ONNXIO_FIELD_ModelProto_ir_version);
    set_str(a, y, &y->producer_name, ONNXIO_FIELD_ModelProto_producer_name, "p");
    o = onnxio_list_add(a, &y->opset_import, &onnxio_desc_OperatorSetIdProto);
    set_str(a, o, &o->domain, ONNXIO_FIELD_OperatorSetIdProto_domain, "b");
    y->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    set_str(a, y->graph, &y->graph->doc_string, ONNXIO_FIELD_GraphProto_doc_string, "d");
    CHECK_STATUS(onnxio_message_merge(a, x, y), ONNXIO_OK);
    check_serialized_hex("merged model", x,
                         "08 02 12 01 70 3a 06 12 01 67 52 01 64 42 03 0a 01 61 42 03 0a 01 62");
    /* parse_into merges too, unknown fields appended */
    static const uint8_t more[] = {0x08, 0x05, 0xa0, 0x06, 0x01};
    CHECK_STATUS(onnxio_parse_into(x, more, sizeof more, NULL, NULL, a), ONNXIO_OK);
    check_serialized_hex("after parse_into", x,
                         "08 05 12 01 70 3a 06 12 01 67 52 01 64 42 03 0a 01 61 42 03 0a 01 62 a0 06 01");
    onnxio_arena_unref(a);
    tu_end();
}

/* ---- payload spans and buffers ---------------------------------------------------------------- */

static void test_spans(void)
{
    tu_begin("buffers and payload span ownership");
    onnxio_buffer *b = onnxio_buffer_new(100, 0);
    if (CHECK(b != NULL)) {
        CHECK(((uintptr_t)onnxio_buffer_data(b) % 64) == 0);
        CHECK_EQ_U64(onnxio_buffer_size(b), 100);
        CHECK_EQ_U64(onnxio_buffer_refcount(b), 1);
        CHECK(onnxio_buffer_ref(b) == b);
        CHECK_EQ_U64(onnxio_buffer_refcount(b), 2);
        onnxio_buffer_unref(b);
        CHECK_EQ_U64(onnxio_buffer_refcount(b), 1);
        memset(onnxio_buffer_data(b), 0xab, 100);
        onnxio_buffer_unref(b);
    }
    b = onnxio_buffer_new(10, 4096);
    CHECK(b && ((uintptr_t)onnxio_buffer_data(b) % 4096) == 0);
    onnxio_buffer_unref(b);
    CHECK(onnxio_buffer_new(10, 3) == NULL);
    CHECK(onnxio_buffer_ref(NULL) == NULL);
    onnxio_buffer_unref(NULL);

    static uint8_t mem[64];
    int released = 0;
    onnxio_buffer *w = onnxio_buffer_wrap(mem, sizeof mem, count_release, &released);
    CHECK(w && onnxio_buffer_data(w) == mem && onnxio_buffer_size(w) == sizeof mem);
    onnxio_span s = {0};
    onnxio_span_set(&s, mem, 64, w);
    CHECK_EQ_U64(onnxio_buffer_refcount(w), 2);
    CHECK(s.data == mem && s.size == 64 && s.owner == w);
    onnxio_span_set(&s, mem + 8, 8, w); /* re-pointing at the same owner keeps one reference */
    CHECK_EQ_U64(onnxio_buffer_refcount(w), 2);
    onnxio_span_clear(&s);
    CHECK_EQ_U64(onnxio_buffer_refcount(w), 1);
    CHECK(s.data == NULL && s.size == 0 && s.owner == NULL);
    onnxio_span_set(&s, mem, 4, NULL); /* borrowed */
    CHECK(s.owner == NULL && s.data == mem);
    CHECK_EQ_U64(onnxio_buffer_refcount(w), 1);
    CHECK_STATUS(onnxio_span_copy_from(&s, mem, 64), ONNXIO_OK);
    CHECK(s.owner != NULL && s.data != mem && memcmp(s.data, mem, 64) == 0);
    CHECK_EQ_U64(onnxio_buffer_refcount(s.owner), 1);
    onnxio_span_clear(&s);
    CHECK_EQ_INT(released, 0);
    onnxio_buffer_unref(w);
    CHECK_EQ_INT(released, 1);

    /* each way a payload held by a message goes: field clear, message clear,
     * replacement, arena unref */
    for (int how = 0; how < 5; how++) {
        released = 0;
        onnxio_arena *a = onnxio_arena_new();
        onnxio_TensorProto *t = onnxio_message_new(a, &onnxio_desc_TensorProto);
        w = onnxio_buffer_wrap(mem, sizeof mem, count_release, &released);
        onnxio_span_set(&t->raw_data, mem, sizeof mem, w);
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
        onnxio_buffer_unref(w);
        CHECK_EQ_INT(released, 0);
        const char *what = "";
        switch (how) {
        case 0:
            what = "field_clear";
            onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_raw_data]);
            break;
        case 1:
            what = "message_clear";
            onnxio_message_clear(t);
            break;
        case 2:
            what = "span_copy_from";
            onnxio_span_copy_from(&t->raw_data, "x", 1);
            break;
        case 3:
            what = "span_set to another payload";
            onnxio_span_set(&t->raw_data, mem, 4, NULL);
            break;
        case 4:
            what = "arena_unref";
            onnxio_arena_unref(a);
            a = NULL;
            break;
        }
        CHECK_MSG(released == 1, "payload released %d times after %s, want 1 at once", released, what);
        onnxio_arena_unref(a);
        CHECK_MSG(released == 1, "payload released %d times after %s and arena_unref", released, what);
    }

    /* the arena is refcounted */
    released = 0;
    onnxio_arena *a = onnxio_arena_new();
    CHECK(onnxio_arena_ref(a) == a);
    onnxio_TensorProto *t = onnxio_message_new(a, &onnxio_desc_TensorProto);
    w = onnxio_buffer_wrap(mem, sizeof mem, count_release, &released);
    onnxio_span_set(&t->raw_data, mem, sizeof mem, w);
    onnxio_buffer_unref(w);
    onnxio_arena_unref(a);
    CHECK_EQ_INT(released, 0);
    CHECK(t->raw_data.data == mem); /* still alive */
    onnxio_arena_unref(a);
    CHECK_EQ_INT(released, 1);
    onnxio_arena_unref(NULL);

    /* a repeated payload inside a parsed list: copied parse owns its bytes */
    static const uint8_t tensor[] = {0x4a, 0x03, 0x07, 0x08, 0x09};
    a = onnxio_arena_new();
    void *pt = NULL;
    if (CHECK_STATUS(onnxio_parse(&onnxio_desc_TensorProto, tensor, sizeof tensor, NULL, NULL, a, &pt), ONNXIO_OK)) {
        onnxio_TensorProto *tt = pt;
        CHECK(tt->raw_data.owner != NULL && tt->raw_data.data != tensor + 2 && tt->raw_data.size == 3);
        CHECK(memcmp(tt->raw_data.data, tensor + 2, 3) == 0);
    }
    onnxio_arena_unref(a);
    tu_end();
}

/* ---- text format ------------------------------------------------------------------------------ */

static void check_text(const char *what, const void *msg, const onnxio_text_options *opts, const char *want)
{
    onnxio_buffer *b = NULL;
    if (!CHECK_STATUS(onnxio_text_format(msg, opts, &b), ONNXIO_OK)) return;
    char *label = tu_strdup_printf("%s: text", what);
    if (!tu_check_bytes(onnxio_buffer_data(b), onnxio_buffer_size(b), want, strlen(want), label, __FILE__, __LINE__))
        tu_note("got:\n%.*s", (int)onnxio_buffer_size(b), (const char *)onnxio_buffer_data(b));
    free(label);
    onnxio_buffer_unref(b);
}

static void test_text(void)
{
    tu_begin("text format (as Python protobuf's str())");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    set_str(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    check_text("model", m, NULL, "ir_version: 8\ngraph {\n  name: \"g\"\n}\n");
    CHECK_EQ_U64(m->base.has, (uint64_t)1 << ONNXIO_FIELD_ModelProto_ir_version);

    onnxio_TensorProto *t = onnxio_message_new(a, &onnxio_desc_TensorProto);
    int64_t *d = onnxio_array_append(a, &t->dims, sizeof(int64_t));
    *d = 1;
    d = onnxio_array_append(a, &t->dims, sizeof(int64_t));
    *d = -2;
    t->data_type = 1;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    onnxio_span_copy_from(&t->raw_data, "\x01\x02" "a\"", 4);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    t->data_location = 1;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    check_text("tensor", t, NULL, "dims: 1\ndims: -2\ndata_type: 1\nraw_data: \"\\001\\002a\\\"\"\ndata_location: EXTERNAL\n");

    onnxio_AttributeProto *at = onnxio_message_new(a, &onnxio_desc_AttributeProto);
    at->f = 1.5f;
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_f);
    at->type = ONNXIO_AttributeProto_AttributeType_FLOAT;
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_type);
    check_text("attribute", at, NULL, "f: 1.5\ntype: FLOAT\n");

    /* unknown fields are not printed */
    void *u = NULL;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, unknown1, 3, NULL, NULL, a, &u), ONNXIO_OK);
    if (u) check_text("unknown fields only", u, NULL, "");
    onnxio_arena_unref(a);
    tu_end();
}

/* A TypeProto chain `levels` messages below the top one, built in memory
 * (as Python code can build it, past any reader's limit). Returns the top. */
static onnxio_TypeProto *deep_typeproto(onnxio_arena *arena, int levels, onnxio_TypeProto **leaf)
{
    onnxio_TypeProto *top = onnxio_message_new(arena, &onnxio_desc_TypeProto), *t = top;
    for (int i = 0; t && i < levels; i++) {
        /* TypeProto -> sequence_type (Sequence) -> elem_type (TypeProto): two
         * levels per step, so go by Sequence for odd levels. */
        onnxio_TypeProto_Sequence *seq = onnxio_message_new(arena, &onnxio_desc_TypeProto_Sequence);
        if (!seq) return NULL;
        t->sequence_type = seq;
        onnxio_set_has(t, ONNXIO_FIELD_TypeProto_sequence_type);
        if (++i == levels) {
            t = NULL;
            break;
        }
        onnxio_TypeProto *next = onnxio_message_new(arena, &onnxio_desc_TypeProto);
        if (!next) return NULL;
        seq->elem_type = next;
        t = next;
    }
    if (leaf) *leaf = t;
    return top;
}

/* Nesting built in memory past every limit must give
 * clean errors (no stack overflow) on write, copy and text, and work for
 * equality and clearing; the writer refuses what a reader with the same
 * limit would refuse. */
static void test_deep_trees(void)
{
    tu_begin("trees nested deeper than the limits, built in memory");
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_TypeProto *deep = deep_typeproto(arena, 40000, NULL);
    onnxio_TypeProto *deep2 = deep_typeproto(arena, 40000, NULL);
    CHECK(deep && deep2);
    CHECK_EQ_U64(onnxio_serialized_size(deep), ONNXIO_SIZE_TOO_DEEP);
    CHECK_STATUS(onnxio_serialize_into(deep, NULL, ONNXIO_SIZE_TOO_DEEP), ONNXIO_ERR_DEPTH);
    onnxio_buffer *b = NULL;
    CHECK_STATUS(onnxio_serialize(deep, &b), ONNXIO_ERR_DEPTH);
    CHECK(b == NULL);
    CHECK_STATUS(onnxio_text_format(deep, NULL, &b), ONNXIO_ERR_DEPTH);
    onnxio_TypeProto *copy = onnxio_message_new(arena, &onnxio_desc_TypeProto);
    CHECK_STATUS(onnxio_message_merge(arena, copy, deep), ONNXIO_ERR_DEPTH);
    CHECK(onnxio_message_clone(arena, deep) == NULL);
    /* What the failed merge left in `copy` is its own: clearing it must
     * leave the source whole. */
    onnxio_message_clear(copy);
    CHECK_EQ_INT(onnxio_message_equal(deep, deep2), 1);
    onnxio_TypeProto *leaf = NULL;
    onnxio_TypeProto *deep3 = deep_typeproto(arena, 40000, &leaf);
    CHECK(leaf != NULL);
    if (leaf) {
        leaf->denotation.data = "x";
        leaf->denotation.size = 1;
        onnxio_set_has(leaf, ONNXIO_FIELD_TypeProto_denotation);
    }
    CHECK_EQ_INT(onnxio_message_equal(deep, deep3), 0);
    char tmpl[] = "/tmp/onnxio-deep-XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (dir) {
        /* A ModelProto whose graph input type is deep: save refuses it with
         * the default limit and writes nothing. */
        onnxio_ModelProto *m = onnxio_message_new(arena, &onnxio_desc_ModelProto);
        onnxio_GraphProto *g = onnxio_message_new(arena, &onnxio_desc_GraphProto);
        onnxio_ValueInfoProto *v = onnxio_list_add(arena, &g->input, &onnxio_desc_ValueInfoProto);
        m->graph = g;
        v->type = deep;
        char *path = tu_strdup_printf("%s/deep.onnx", dir);
        CHECK_STATUS(onnxio_save_model(m, path, NULL), ONNXIO_ERR_DEPTH);
        CHECK(access(path, F_OK) != 0);
        /* 100 levels below the top write and read back; 101 do not write. */
        for (int levels = 97; levels <= 98; levels++) {
            v->type = deep_typeproto(arena, levels, NULL); /* + model, graph, value_info = levels + 3 */
            onnxio_status want = levels + 3 <= ONNXIO_DEFAULT_MAX_DEPTH ? ONNXIO_OK : ONNXIO_ERR_DEPTH;
            CHECK_STATUS(onnxio_save_model(m, path, NULL), want);
            if (want == ONNXIO_OK) {
                onnxio_arena *a2 = onnxio_arena_new();
                onnxio_ModelProto *back = NULL;
                CHECK_STATUS(onnxio_load_model(path, NULL, a2, &back), ONNXIO_OK);
                CHECK(back && onnxio_message_equal(back, m) == 1);
                onnxio_arena_unref(a2);
            }
            /* A raised limit writes it, and reads back with the same one. */
            onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
            so.max_depth = 200;
            onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
            po.max_depth = 200;
            CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_OK);
            onnxio_arena *a3 = onnxio_arena_new();
            onnxio_ModelProto *back = NULL;
            CHECK_STATUS(onnxio_load_model(path, &po, a3, &back), ONNXIO_OK);
            CHECK(back && onnxio_message_equal(back, m) == 1);
            CHECK_STATUS(onnxio_load_model(path, NULL, a3, &back), want == ONNXIO_OK ? ONNXIO_OK : ONNXIO_ERR_DEPTH);
            onnxio_arena_unref(a3);
        }
        /* A limit past ONNXIO_MAX_DEPTH is taken as ONNXIO_MAX_DEPTH. */
        v->type = deep;
        onnxio_serialize_options huge = ONNXIO_SERIALIZE_OPTIONS_INIT;
        huge.max_depth = 1000000;
        CHECK_STATUS(onnxio_save_model(m, path, &huge), ONNXIO_ERR_DEPTH);
        unlink(path);
        rmdir(dir);
        free(path);
    }
    /* Clearing works at any depth (the payload-reference walk is iterative). */
    onnxio_message_clear(deep);
    CHECK(deep->sequence_type == NULL);
    onnxio_arena_unref(arena);
    tu_end();
}

typedef struct visit_log {
    char names[8][8];
    const char *fields[8];
    size_t count, messages, stop_at;
} visit_log;

static onnxio_status log_tensor(void *msg, void *parent, const onnxio_field_desc *field, void *ctx)
{
    visit_log *v = ctx;
    onnxio_TensorProto *t = msg;
    CHECK(parent != NULL && field != NULL && onnxio_field_ptr(parent, field) != NULL);
    if (v->count < 8) {
        snprintf(v->names[v->count], sizeof v->names[0], "%s", t->name.data ? t->name.data : "");
        v->fields[v->count] = field ? field->name : "";
    }
    if (++v->count == v->stop_at) return ONNXIO_ERR_INVALID_ARGUMENT;
    return ONNXIO_OK;
}

static onnxio_status count_all(void *msg, void *parent, const onnxio_field_desc *field, void *ctx)
{
    (void)msg;
    (void)parent;
    (void)field;
    ((visit_log *)ctx)->messages++;
    return ONNXIO_OK;
}

static onnxio_TensorProto *named_tensor(onnxio_arena *a, void *list, const char *name)
{
    onnxio_TensorProto *t = onnxio_list_add(a, list, &onnxio_desc_TensorProto);
    CHECK_STATUS(onnxio_string_set(a, &t->name, name, strlen(name)), ONNXIO_OK);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_name);
    return t;
}

/* onnxio_visit finds tensors wherever the schema lets them be, in the order
 * the test put them (depth first, fields by number), with where each is. */
static void test_visit(void)
{
    tu_begin("onnxio_visit: every tensor of a tree, in order, with its parent and field");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    onnxio_GraphProto *g = m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_graph);
    onnxio_NodeProto *n = onnxio_list_add(a, &g->node, &onnxio_desc_NodeProto);
    onnxio_AttributeProto *at = onnxio_list_add(a, &n->attribute, &onnxio_desc_AttributeProto);
    at->t = onnxio_message_new(a, &onnxio_desc_TensorProto);
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_t);
    CHECK_STATUS(onnxio_string_set(a, &at->t->name, "t2", 2), ONNXIO_OK);
    at->g = onnxio_message_new(a, &onnxio_desc_GraphProto);
    onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_g);
    named_tensor(a, &at->g->initializer, "t3");
    named_tensor(a, &g->initializer, "t1");
    onnxio_SparseTensorProto *sp = onnxio_list_add(a, &g->sparse_initializer, &onnxio_desc_SparseTensorProto);
    sp->values = onnxio_message_new(a, &onnxio_desc_TensorProto);
    sp->indices = onnxio_message_new(a, &onnxio_desc_TensorProto);
    onnxio_set_has(sp, ONNXIO_FIELD_SparseTensorProto_values);
    onnxio_set_has(sp, ONNXIO_FIELD_SparseTensorProto_indices);
    CHECK_STATUS(onnxio_string_set(a, &sp->values->name, "t5", 2), ONNXIO_OK);
    CHECK_STATUS(onnxio_string_set(a, &sp->indices->name, "t6", 2), ONNXIO_OK);
    onnxio_FunctionProto *fn = onnxio_list_add(a, &m->functions, &onnxio_desc_FunctionProto);
    onnxio_NodeProto *fnode = onnxio_list_add(a, &fn->node, &onnxio_desc_NodeProto);
    onnxio_AttributeProto *fat = onnxio_list_add(a, &fnode->attribute, &onnxio_desc_AttributeProto);
    named_tensor(a, &fat->tensors, "t4");

    visit_log v = {0};
    CHECK_STATUS(onnxio_visit(m, &onnxio_desc_TensorProto, log_tensor, &v), ONNXIO_OK);
    static const char *const want[] = {"t2", "t3", "t1", "t5", "t6", "t4"};
    static const char *const want_fields[] = {"t", "initializer", "initializer", "values", "indices", "tensors"};
    CHECK(v.count == 6);
    for (size_t i = 0; i < 6 && i < v.count; i++) {
        CHECK_MSG(strcmp(v.names[i], want[i]) == 0, "tensor %zu: %s, expected %s", i, v.names[i], want[i]);
        CHECK_MSG(strcmp(v.fields[i], want_fields[i]) == 0, "tensor %zu in %s, expected %s", i, v.fields[i],
                  want_fields[i]);
    }
    /* A status other than OK stops the walk and is returned. */
    visit_log stop = {.stop_at = 3};
    CHECK_STATUS(onnxio_visit(m, &onnxio_desc_TensorProto, log_tensor, &stop), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(stop.count == 3);
    /* NULL: every message (model, graph, node, attribute x2, tensor x6,
     * subgraph, sparse tensor, function, function node). */
    CHECK_STATUS(onnxio_visit(m, NULL, count_all, &v), ONNXIO_OK);
    CHECK_MSG(v.messages == 15, "%zu messages", v.messages);
    CHECK_STATUS(onnxio_visit(NULL, NULL, count_all, &v), ONNXIO_ERR_INVALID_ARGUMENT);
    onnxio_arena_unref(a);
    tu_end();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_visit();
    test_descriptors();
    test_new_clear_presence();
    test_new_after_reuse();
    test_exact_bytes();
    test_every_field();
    test_oneof();
    test_arrays();
    test_copy();
    test_spans();
    test_text();
    test_deep_trees();
    return tu_finish();
}
