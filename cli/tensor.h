/*
 * Facts about a TensorProto that several verbs need beyond the library's
 * own rules (onnxio_data_type_bits, onnxio_tensor_is_external,
 * onnxio_external_ref_parse): its data type's name, and its payload size in
 * bytes as `onnxio info` counts it.
 */
#ifndef ONNXIO_CLI_TENSOR_H
#define ONNXIO_CLI_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "onnxio/onnxio.h"

/* The TensorProto.DataType name ("FLOAT"), or "DataType(N)" for a number
 * that is no value of the enum, written to buf. */
const char *cli_dtype_name(int32_t data_type, char *buf, size_t buf_size);

/* Bytes of the tensor's payload as stored: the raw_data size (also after a
 * skip_raw_data load); for typed fields the number of entries times the
 * size of one (an int32_data entry of a 4- or 2-bit type holds one packed
 * byte); for strings the sum of their lengths. External payloads are not
 * counted here (see cli_summary_tensor_bytes). */
uint64_t cli_tensor_inline_bytes(const onnxio_TensorProto *t);

#endif
