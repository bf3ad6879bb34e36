#include "tensor.h"

#include <stdio.h>

const char *cli_dtype_name(int32_t data_type, char *buf, size_t buf_size)
{
    const char *name = onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, data_type);
    if (name)
        return name;
    snprintf(buf, buf_size, "DataType(%ld)", (long)data_type);
    return buf;
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
    unsigned bits = onnxio_data_type_bits(t->data_type);
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
