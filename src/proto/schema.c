/* Descriptor tables for every ONNX message and enum, expanded from the rows
 * of schema.def (docs/design.md "The schema is data, listed once"). */
#include <string.h>

#include "proto/codec.h"

#define SUBMSG_MESSAGE(T) &onnxio_desc_##T
#define SUBMSG_INT32(T) NULL
#define SUBMSG_INT64(T) NULL
#define SUBMSG_UINT64(T) NULL
#define SUBMSG_FLOAT(T) NULL
#define SUBMSG_DOUBLE(T) NULL
#define SUBMSG_STRING(T) NULL
#define SUBMSG_BYTES(T) NULL
#define SUBMSG_RAW(T) NULL
#define SUBMSG_ENUM(T) NULL
#define SUBENUM_ENUM(T) &onnxio_enum_##T
#define SUBENUM_MESSAGE(T) NULL
#define SUBENUM_INT32(T) NULL
#define SUBENUM_INT64(T) NULL
#define SUBENUM_UINT64(T) NULL
#define SUBENUM_FLOAT(T) NULL
#define SUBENUM_DOUBLE(T) NULL
#define SUBENUM_STRING(T) NULL
#define SUBENUM_BYTES(T) NULL
#define SUBENUM_RAW(T) NULL

/* ONNXIO_ONEOF_<Message>_NONE = 0 lets the `oneof` column say NONE. */
#define ONNXIO_ENUM(E, FULL)
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL) enum { ONNXIO_ONEOF_##M##_NONE = 0 };
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

/* enum full names, values and descriptors */
#define ONNXIO_ENUM(E, FULL) static const char enum_full_##E[] = FULL;
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL)
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#define ONNXIO_ENUM(E, FULL) static const onnxio_enum_value values_##E[] = {
#define ONNXIO_ENUM_VALUE(E, V, N) {#V, N},
#define ONNXIO_END_ENUM(E)                                                     \
    };                                                                         \
    ONNXIO_API const onnxio_enum_desc onnxio_enum_##E = {                      \
        #E, enum_full_##E, values_##E, sizeof values_##E / sizeof values_##E[0]};
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* message full names */
#define ONNXIO_ENUM(E, FULL)
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL) static const char msg_full_##M[] = FULL;
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
#include "onnxio/schema.def"
#undef ONNXIO_MESSAGE
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* field indexes by field number (index + 1; 0: no such field) */
#define ONNXIO_MESSAGE(M, FULL) static const uint8_t by_number_##M[] = {
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) [N] = ONNXIO_FIELD_##M##_##F + 1,
#define ONNXIO_END_MESSAGE(M) };
#include "onnxio/schema.def"
#undef ONNXIO_MESSAGE
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* field tables and message descriptors */
#define ONNXIO_MESSAGE(M, FULL) static const onnxio_field_desc fields_##M[] = {
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)                           \
    {#F, N, ONNXIO_KIND_##KIND, ONNXIO_LABEL_##LABEL,                          \
     ONNXIO_ONEOF_##M##_##ONEOF,                                               \
     ONNXIO_ONEOF_##M##_##ONEOF ? #ONEOF : NULL,                               \
     ONNXIO_FIELD_##M##_##F, (uint32_t)offsetof(onnxio_##M, F),                \
     SUBMSG_##KIND(T), SUBENUM_##KIND(T)},
#define ONNXIO_END_MESSAGE(M)                                                  \
    };                                                                         \
    ONNXIO_API const onnxio_message_desc onnxio_desc_##M = {                   \
        #M, msg_full_##M, sizeof(onnxio_##M), fields_##M,                      \
        sizeof fields_##M / sizeof fields_##M[0], by_number_##M,                \
        sizeof by_number_##M};
#include "onnxio/schema.def"
#undef ONNXIO_MESSAGE
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

#define ONNXIO_MESSAGE(M, FULL) &onnxio_desc_##M,
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
ONNXIO_API const onnxio_message_desc *const onnxio_all_messages[] = {
#include "onnxio/schema.def"
};
ONNXIO_API const size_t onnxio_all_message_count = sizeof onnxio_all_messages / sizeof onnxio_all_messages[0];
#undef ONNXIO_MESSAGE
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE
#undef ONNXIO_ENUM
#define ONNXIO_ENUM(E, FULL) &onnxio_enum_##E,
#define ONNXIO_MESSAGE(M, FULL)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
ONNXIO_API const onnxio_enum_desc *const onnxio_all_enums[] = {
#include "onnxio/schema.def"
};
ONNXIO_API const size_t onnxio_all_enum_count = sizeof onnxio_all_enums / sizeof onnxio_all_enums[0];
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

/* Every message fits the 64 has-bits of its header, and its struct is a
 * multiple of 8 bytes (onnxio__message_new zeroes it 8 bytes at least a
 * store). */
#define ONNXIO_ENUM(E, FULL)
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL)
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)                                                  \
    _Static_assert(ONNXIO_FIELD_COUNT_##M <= 64, #M " has too many fields"); \
    _Static_assert(sizeof(onnxio_##M) % 8 == 0, #M " is not a multiple of 8 bytes");
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE

ONNXIO_API const onnxio_message_desc *onnxio_message_desc_by_name(const char *name)
{
    if (!name) return NULL;
    if (strncmp(name, "onnx.", 5) == 0) name += 5;
    for (size_t i = 0; i < onnxio_all_message_count; i++) {
        const onnxio_message_desc *d = onnxio_all_messages[i];
        if (strcmp(d->name, name) == 0 || strcmp(d->full_name + 5, name) == 0) return d;
    }
    return NULL;
}

ONNXIO_API const char *onnxio_enum_value_name(const onnxio_enum_desc *e, int32_t number)
{
    for (size_t i = 0; e && i < e->value_count; i++)
        if (e->values[i].number == number) return e->values[i].name;
    return NULL;
}

ONNXIO_API const onnxio_field_desc *onnxio_field_by_name(const onnxio_message_desc *d, const char *name)
{
    for (size_t i = 0; d && name && i < d->field_count; i++)
        if (strcmp(d->fields[i].name, name) == 0) return &d->fields[i];
    return NULL;
}

ONNXIO_API const onnxio_field_desc *onnxio_field_by_number(const onnxio_message_desc *d, uint32_t number)
{
    for (size_t i = 0; d && i < d->field_count; i++)
        if (d->fields[i].number == number) return &d->fields[i];
    return NULL;
}
