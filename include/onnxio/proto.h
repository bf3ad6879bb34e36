/*
 * onnxio/proto.h: the ONNX messages as C structs, and the descriptors that
 * describe them. Everything here is expanded from the rows of schema.def
 * (onnx-ml.proto, onnx-data.proto and onnx-operators-ml.proto of ONNX 1.23,
 * IR version 14); no field is listed by hand.
 *
 * Message structs keep ONNX's names: onnx.TensorProto is onnxio_TensorProto,
 * onnx.TensorProto.Segment is onnxio_TensorProto_Segment. Every struct starts
 * with an onnxio_message header, so a pointer to any message converts to
 * `onnxio_message *`. Its members are the fields, in field-number order:
 *
 *   proto field                      C member
 *   optional int32 / enum            int32_t
 *   optional int64 / uint64          int64_t / uint64_t
 *   optional float / double          float / double
 *   optional string / bytes          onnxio_string (NUL-terminated, arena)
 *   TensorProto.raw_data             onnxio_span (a tensor payload)
 *   optional Message                 onnxio_Message * (NULL = absent)
 *   repeated scalar                  onnxio_<scalar>_array {data, size, capacity}
 *   repeated string / bytes          onnxio_string_array
 *   repeated Message                 onnxio_Message_list {Message **data, size, capacity}
 *
 * Presence follows proto2: a singular scalar, string or payload field is
 * present when its has-bit is set (onnxio_has / onnxio_set_has, by the field
 * index constant ONNXIO_FIELD_<Message>_<field>), even at its default value;
 * a message field is present when its pointer is not NULL. oneof members are
 * exclusive: onnxio_set_has clears the other members of the same oneof.
 *
 * Memory: all structure, strings and arrays of a message tree live in one
 * onnxio_arena (onnxio.h); only tensor payloads live in refcounted
 * onnxio_buffers. Build messages with onnxio_message_new and grow arrays with
 * the onnxio_*_append functions of onnxio.h, never with malloc.
 */
#ifndef ONNXIO_PROTO_H
#define ONNXIO_PROTO_H

/* <windows.h> defines OPTIONAL (as nothing), a label of schema.def's rows:
 * it is set aside while this header expands them, and given back at its
 * end. */
#ifdef _WIN32
#pragma push_macro("OPTIONAL")
#undef OPTIONAL
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- value types ---------------------------------------------------- */

/* A string or bytes value: `size` bytes at `data`, followed by a NUL that is
 * not counted (so text fields can be used as C strings when they hold no
 * NUL). Owned by the message's arena. An unset field is {"" or NULL, 0}. */
typedef struct onnxio_string {
    const char *data;
    size_t size;
} onnxio_string;

typedef struct onnxio_buffer onnxio_buffer;

/* A tensor payload (TensorProto.raw_data): `size` bytes at `data`.
 * `owner` is the refcounted buffer that keeps the bytes alive and holds one
 * reference for this span; NULL means borrowed (the caller that handed the
 * bytes to the parser keeps them alive for as long as the message is used).
 * After a skip_raw_data load, `data` is NULL and `size` is the size on file. */
typedef struct onnxio_span {
    uint8_t *data;
    size_t size;
    onnxio_buffer *owner;
} onnxio_span;

#define ONNXIO_ARRAY_TYPE(name, T) \
    typedef struct name { T *data; size_t size; size_t capacity; } name
ONNXIO_ARRAY_TYPE(onnxio_int32_array, int32_t);
ONNXIO_ARRAY_TYPE(onnxio_int64_array, int64_t);
ONNXIO_ARRAY_TYPE(onnxio_uint64_array, uint64_t);
ONNXIO_ARRAY_TYPE(onnxio_float_array, float);
ONNXIO_ARRAY_TYPE(onnxio_double_array, double);
ONNXIO_ARRAY_TYPE(onnxio_string_array, onnxio_string);
ONNXIO_ARRAY_TYPE(onnxio_bytes_array, uint8_t);

struct onnxio_message_desc;

/* The header at the start of every message struct. */
typedef struct onnxio_message {
    const struct onnxio_message_desc *desc; /* what this message is */
    uint64_t has;                 /* has-bits, by field index */
    uint64_t cached_size;         /* encoded size: exact after the size pass or a serialization,
                                     the bytes read after a parse; a hint otherwise */
    onnxio_bytes_array unknown;   /* unknown fields, raw wire bytes in read order */
} onnxio_message;

/* ---- descriptors ---------------------------------------------------- */

typedef enum onnxio_kind {
    ONNXIO_KIND_INT32, ONNXIO_KIND_INT64, ONNXIO_KIND_UINT64,
    ONNXIO_KIND_FLOAT, ONNXIO_KIND_DOUBLE,
    ONNXIO_KIND_STRING, ONNXIO_KIND_BYTES, ONNXIO_KIND_RAW,
    ONNXIO_KIND_ENUM, ONNXIO_KIND_MESSAGE
} onnxio_kind;

typedef enum onnxio_label {
    ONNXIO_LABEL_OPTIONAL, ONNXIO_LABEL_ONEOF,
    ONNXIO_LABEL_REPEATED, ONNXIO_LABEL_PACKED
} onnxio_label;

typedef struct onnxio_enum_value {
    const char *name;
    int32_t number;
} onnxio_enum_value;

typedef struct onnxio_enum_desc {
    const char *name;       /* C name, e.g. "TensorProto_DataType" */
    const char *full_name;  /* proto name, e.g. "onnx.TensorProto.DataType" */
    const onnxio_enum_value *values; /* in declaration order */
    size_t value_count;
} onnxio_enum_desc;

typedef struct onnxio_field_desc {
    const char *name;        /* proto field name */
    uint32_t number;         /* field number */
    uint8_t kind;            /* onnxio_kind */
    uint8_t label;           /* onnxio_label */
    uint16_t oneof;          /* 0, or the onnxio_oneof_id this member belongs to */
    const char *oneof_name;  /* NULL, or the oneof's name */
    uint32_t index;          /* position in the message: has-bit index */
    uint32_t offset;         /* offsetof the member in the message struct */
    const struct onnxio_message_desc *message; /* for MESSAGE fields */
    const onnxio_enum_desc *enum_type;         /* for ENUM fields */
} onnxio_field_desc;

typedef struct onnxio_message_desc {
    const char *name;        /* C name, e.g. "TensorProto_Segment" */
    const char *full_name;   /* proto name, e.g. "onnx.TensorProto.Segment" */
    size_t size;             /* sizeof the struct */
    const onnxio_field_desc *fields; /* ascending field number */
    size_t field_count;
    /* The field of each number below by_number_count: by_number[n] is its
     * index in `fields` plus one, 0 when the message has no field n. */
    const uint8_t *by_number;
    size_t by_number_count;
} onnxio_message_desc;

/* ---- expansion of schema.def ---------------------------------------- */

/* enum constants: ONNXIO_<Enum>_<VALUE>, e.g. ONNXIO_TensorProto_DataType_FLOAT */
#define ONNXIO_ENUM(E, FULL) typedef enum onnxio_##E {
#define ONNXIO_ENUM_VALUE(E, V, N) ONNXIO_##E##_##V = N,
#define ONNXIO_END_ENUM(E) ONNXIO_##E##_ENUM_END_ } onnxio_##E;
#define ONNXIO_MESSAGE(M, FULL)
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* oneof ids (global, so that a field's `oneof` identifies its group) */
#define ONNXIO_ENUM(E, FULL)
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL)
#define ONNXIO_ONEOF(M, O) ONNXIO_ONEOF_##M##_##O,
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
typedef enum onnxio_oneof_id {
    ONNXIO_ONEOF_NONE = 0,
#include "onnxio/schema.def"
    ONNXIO_ONEOF_COUNT_
} onnxio_oneof_id;
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* typedefs, list types and field indexes: ONNXIO_FIELD_<Message>_<field> */
#define ONNXIO_ENUM(E, FULL)
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL) \
    typedef struct onnxio_##M onnxio_##M; \
    ONNXIO_ARRAY_TYPE(onnxio_##M##_list, onnxio_##M *); \
    enum {
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) ONNXIO_FIELD_##M##_##F,
#define ONNXIO_END_MESSAGE(M) ONNXIO_FIELD_COUNT_##M };
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* C member type of a field, by label and kind */
#define ONNXIO_CTYPE_(LABEL, KIND, T) ONNXIO_CTYPE_##LABEL##_##KIND(T)
#define ONNXIO_CTYPE_OPTIONAL_INT32(T) int32_t
#define ONNXIO_CTYPE_OPTIONAL_ENUM(T) int32_t
#define ONNXIO_CTYPE_OPTIONAL_INT64(T) int64_t
#define ONNXIO_CTYPE_OPTIONAL_UINT64(T) uint64_t
#define ONNXIO_CTYPE_OPTIONAL_FLOAT(T) float
#define ONNXIO_CTYPE_OPTIONAL_DOUBLE(T) double
#define ONNXIO_CTYPE_OPTIONAL_STRING(T) onnxio_string
#define ONNXIO_CTYPE_OPTIONAL_BYTES(T) onnxio_string
#define ONNXIO_CTYPE_OPTIONAL_RAW(T) onnxio_span
#define ONNXIO_CTYPE_OPTIONAL_MESSAGE(T) onnxio_##T *
#define ONNXIO_CTYPE_ONEOF_INT64(T) int64_t
#define ONNXIO_CTYPE_ONEOF_STRING(T) onnxio_string
#define ONNXIO_CTYPE_ONEOF_MESSAGE(T) onnxio_##T *
#define ONNXIO_CTYPE_REPEATED_INT64(T) onnxio_int64_array
#define ONNXIO_CTYPE_REPEATED_FLOAT(T) onnxio_float_array
#define ONNXIO_CTYPE_REPEATED_STRING(T) onnxio_string_array
#define ONNXIO_CTYPE_REPEATED_BYTES(T) onnxio_string_array
#define ONNXIO_CTYPE_REPEATED_MESSAGE(T) onnxio_##T##_list
#define ONNXIO_CTYPE_PACKED_INT32(T) onnxio_int32_array
#define ONNXIO_CTYPE_PACKED_INT64(T) onnxio_int64_array
#define ONNXIO_CTYPE_PACKED_UINT64(T) onnxio_uint64_array
#define ONNXIO_CTYPE_PACKED_FLOAT(T) onnxio_float_array
#define ONNXIO_CTYPE_PACKED_DOUBLE(T) onnxio_double_array

/* A member is named after its field, but for a field named like a C++
 * keyword (OperatorSetProto.operator): that member is <name>_ (in C, also
 * <name>, the same storage through an anonymous union), so that the header
 * compiles as C++. ONNXIO_RENAMED_<name> marks such a field; the test picks
 * the third of its arguments, `yes` when the mark expands to two. */
#define ONNXIO_RENAMED_operator ~, ~
#define ONNXIO_ARG3_(a, b, c, ...) c
#define ONNXIO_PICK_(...) ONNXIO_ARG3_(__VA_ARGS__)
#define ONNXIO_IF_RENAMED_(F, yes, no) ONNXIO_PICK_(ONNXIO_RENAMED_##F, yes, no, ~)
#ifdef __cplusplus
#define ONNXIO_RENAMED_MEMBER_(TYPE, F) TYPE F##_;
#else
#define ONNXIO_RENAMED_MEMBER_(TYPE, F) union { TYPE F##_; TYPE F; };
#endif
#define ONNXIO_MEMBER_(TYPE, F) ONNXIO_IF_RENAMED_(F, ONNXIO_RENAMED_MEMBER_(TYPE, F), TYPE F;)

/* the message structs */
#define ONNXIO_ENUM(E, FULL)
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL) struct onnxio_##M { onnxio_message base;
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) ONNXIO_MEMBER_(ONNXIO_CTYPE_(LABEL, KIND, T), F)
#define ONNXIO_END_MESSAGE(M) };
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* descriptors: onnxio_desc_<Message>, onnxio_enum_<Enum> (src/proto/schema.c) */
#define ONNXIO_ENUM(E, FULL) extern const onnxio_enum_desc onnxio_enum_##E;
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL) extern const onnxio_message_desc onnxio_desc_##M;
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* Every message and enum descriptor of the schema, in schema order. */
extern const onnxio_message_desc *const onnxio_all_messages[];
extern const size_t onnxio_all_message_count;
extern const onnxio_enum_desc *const onnxio_all_enums[];
extern const size_t onnxio_all_enum_count;

/* Presence of a singular field, by index (ONNXIO_FIELD_<Message>_<field>). */
static inline int onnxio_has(const void *msg, unsigned field_index)
{
    return (int)((((const onnxio_message *)msg)->has >> field_index) & 1u);
}

#ifdef __cplusplus
}
#endif
#ifdef _WIN32
#pragma pop_macro("OPTIONAL")
#endif
#endif
