/* The message types a fuzz input's first byte picks (fuzz_decode,
 * fuzz_text), in the order docs/fuzzing.md lists: the seeds of
 * tests/fuzz/make_seeds.sh depend on it. */
#ifndef ONNXIO_FUZZ_TYPES_H
#define ONNXIO_FUZZ_TYPES_H

#include "onnxio/onnxio.h"

static const onnxio_message_desc *const fuzz_types[] = {
    &onnxio_desc_ModelProto,        &onnxio_desc_TensorProto,       &onnxio_desc_GraphProto,
    &onnxio_desc_NodeProto,         &onnxio_desc_AttributeProto,    &onnxio_desc_TypeProto,
    &onnxio_desc_ValueInfoProto,    &onnxio_desc_SparseTensorProto, &onnxio_desc_SequenceProto,
    &onnxio_desc_MapProto,          &onnxio_desc_OptionalProto,     &onnxio_desc_FunctionProto,
    &onnxio_desc_TrainingInfoProto, &onnxio_desc_OperatorSetProto,  &onnxio_desc_TensorShapeProto,
    &onnxio_desc_NodeDeviceConfigurationProto,
};
#define FUZZ_TYPE_COUNT (sizeof fuzz_types / sizeof *fuzz_types)

#endif
