#include "tensor.h"

#include <stdio.h>
#include <string.h>

const char *cli_dtype_name(int32_t data_type, char *buf, size_t buf_size)
{
    const char *name = onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, data_type);
    if (name)
        return name;
    snprintf(buf, buf_size, "DataType(%ld)", (long)data_type);
    return buf;
}

unsigned cli_dtype_bits(int32_t data_type)
{
    switch (data_type) {
    case ONNXIO_TensorProto_DataType_DOUBLE:
    case ONNXIO_TensorProto_DataType_INT64:
    case ONNXIO_TensorProto_DataType_UINT64:
    case ONNXIO_TensorProto_DataType_COMPLEX64:
        return 64;
    case ONNXIO_TensorProto_DataType_COMPLEX128:
        return 128;
    case ONNXIO_TensorProto_DataType_FLOAT:
    case ONNXIO_TensorProto_DataType_INT32:
    case ONNXIO_TensorProto_DataType_UINT32:
        return 32;
    case ONNXIO_TensorProto_DataType_INT16:
    case ONNXIO_TensorProto_DataType_UINT16:
    case ONNXIO_TensorProto_DataType_FLOAT16:
    case ONNXIO_TensorProto_DataType_BFLOAT16:
        return 16;
    case ONNXIO_TensorProto_DataType_INT8:
    case ONNXIO_TensorProto_DataType_UINT8:
    case ONNXIO_TensorProto_DataType_BOOL:
    case ONNXIO_TensorProto_DataType_FLOAT8E4M3FN:
    case ONNXIO_TensorProto_DataType_FLOAT8E4M3FNUZ:
    case ONNXIO_TensorProto_DataType_FLOAT8E5M2:
    case ONNXIO_TensorProto_DataType_FLOAT8E5M2FNUZ:
    case ONNXIO_TensorProto_DataType_FLOAT8E8M0:
        return 8;
    case ONNXIO_TensorProto_DataType_INT4:
    case ONNXIO_TensorProto_DataType_UINT4:
    case ONNXIO_TensorProto_DataType_FLOAT4E2M1:
        return 4;
    case ONNXIO_TensorProto_DataType_INT2:
    case ONNXIO_TensorProto_DataType_UINT2:
        return 2;
    default:
        return 0;
    }
}

int cli_tensor_is_external(const onnxio_TensorProto *t)
{
    return onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
           t->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL;
}

static int is_key(onnxio_string key, const char *name)
{
    size_t n = strlen(name);
    return key.size == n && memcmp(key.data, name, n) == 0;
}

static int parse_u64(onnxio_string s, uint64_t *out)
{
    uint64_t v = 0;
    if (s.size == 0)
        return -1;
    for (size_t i = 0; i < s.size; i++) {
        char c = s.data[i];
        if (c < '0' || c > '9')
            return -1;
        unsigned d = (unsigned)(c - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

void cli_tensor_external_ref(const onnxio_TensorProto *t, cli_external_ref *ref)
{
    memset(ref, 0, sizeof *ref);
    ref->valid = 1;
    for (size_t i = 0; i < t->external_data.size; i++) {
        const onnxio_StringStringEntryProto *e = t->external_data.data[i];
        if (is_key(e->key, "location")) {
            ref->location = e->value;
        } else if (is_key(e->key, "offset")) {
            if (parse_u64(e->value, &ref->offset) != 0)
                ref->valid = 0;
        } else if (is_key(e->key, "length")) {
            if (parse_u64(e->value, &ref->length) != 0)
                ref->valid = 0;
            else
                ref->has_length = 1;
        }
    }
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    if (a != 0 && b > UINT64_MAX / a)
        return UINT64_MAX;
    return a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t cli_tensor_inline_bytes(const onnxio_TensorProto *t)
{
    uint64_t n = t->raw_data.size;
    unsigned bits = cli_dtype_bits(t->data_type);
    /* int32_data holds one element per entry, sub-byte types one packed
     * byte per entry (onnx.proto, TensorProto.int32_data). */
    uint64_t int32_entry = bits == 0 ? 4 : bits < 8 ? 1 : bits / 8;
    if (int32_entry > 4)
        int32_entry = 4;
    uint64_t uint64_entry = t->data_type == ONNXIO_TensorProto_DataType_UINT32 ? 4 : 8;
    n = add_sat(n, mul_sat(t->float_data.size, 4));
    n = add_sat(n, mul_sat(t->int32_data.size, int32_entry));
    n = add_sat(n, mul_sat(t->int64_data.size, 8));
    n = add_sat(n, mul_sat(t->double_data.size, 8));
    n = add_sat(n, mul_sat(t->uint64_data.size, uint64_entry));
    for (size_t i = 0; i < t->string_data.size; i++)
        n = add_sat(n, t->string_data.data[i].size);
    return n;
}
