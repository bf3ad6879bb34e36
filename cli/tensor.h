/*
 * Facts about a TensorProto that several verbs need: its data type's name
 * and element size, its payload size in bytes, and its external_data
 * entries (ONNX external data: data_location = EXTERNAL, keys location,
 * offset, length, checksum).
 */
#ifndef ONNXIO_CLI_TENSOR_H
#define ONNXIO_CLI_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "onnxio/onnxio.h"

/* The TensorProto.DataType name ("FLOAT"), or "DataType(N)" for a number
 * that is no value of the enum, written to buf. */
const char *cli_dtype_name(int32_t data_type, char *buf, size_t buf_size);

/* Bits per element of a data type: 32 for FLOAT, 4 for INT4, 0 for STRING,
 * UNDEFINED and unknown numbers. */
unsigned cli_dtype_bits(int32_t data_type);

/* 1 when the tensor's payload is in an external file (data_location is
 * present and EXTERNAL). */
int cli_tensor_is_external(const onnxio_TensorProto *t);

typedef struct cli_external_ref {
    onnxio_string location; /* size 0 when the key is missing */
    uint64_t offset;        /* 0 when missing */
    uint64_t length;
    int has_length;
    int valid; /* 0 when offset or length is not a decimal number */
} cli_external_ref;

/* Reads the tensor's external_data entries (the last value of a key wins). */
void cli_tensor_external_ref(const onnxio_TensorProto *t, cli_external_ref *ref);

/* Bytes of the tensor's payload as stored: the raw_data size (also after a
 * skip_raw_data load); for typed fields the number of entries times the
 * size of one (an int32_data entry of a 4- or 2-bit type holds one packed
 * byte); for strings the sum of their lengths. External payloads are not
 * counted here (see cli_external_ref). */
uint64_t cli_tensor_inline_bytes(const onnxio_TensorProto *t);

#endif
