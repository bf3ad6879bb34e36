/*
 * dlpack.h: the DLPack structs that python/ext/dlpack.c exports, a subset of
 * upstream's include/dlpack/dlpack.h, version 1.1
 * (https://github.com/dmlc/dlpack), with upstream's names and layout so
 * that any consumer (torch, numpy, jax, cupy) reads them.
 *
 * Upstream notice: Copyright (c) 2017 by Contributors. DLPack is licensed
 * under the Apache License, Version 2.0
 * (http://www.apache.org/licenses/LICENSE-2.0); the declarations below are
 * taken from it unchanged but for the omitted parts (device types other
 * than CPU, the C++ guards). The type codes (DLDataTypeCode) are not here:
 * the library's data type table holds the code of each ONNX data type
 * (src/datatype.def, onnxio_data_type_info's dlpack_code).
 *
 * Python side (the DLPack Python specification, data-apis.org): an object
 * exports a tensor through __dlpack__(), which returns a PyCapsule named
 * "dltensor_versioned" (a DLManagedTensorVersioned, DLPack >= 1.0) or
 * "dltensor" (a DLManagedTensor, the legacy form), and __dlpack_device__(),
 * which returns (device_type, device_id). A consumer renames the capsule
 * "used_dltensor_versioned" / "used_dltensor" and takes over the call of
 * `deleter`; a capsule that was never consumed calls it when it is freed.
 */
#ifndef ONNXIO_DLPACK_H
#define ONNXIO_DLPACK_H

#include <stdint.h>

/* The DLPack version of these declarations (DLManagedTensorVersioned.version). */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

/* DLManagedTensorVersioned.flags: the consumer must not write the data. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/* DLManagedTensorVersioned.flags: the data is a copy made for this export
 * (writes do not reach the producer's memory). */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef enum {
    kDLCPU = 1, /* system memory */
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

/* An element type: `code` (a DLDataTypeCode), `bits` per lane, `lanes` (1
 * for scalars). */
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

/* A strided view: the elements start at (char *)data + byte_offset; shape
 * and strides (in elements) have ndim entries. */
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

/* The legacy capsule's content ("dltensor"). */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* The versioned capsule's content ("dltensor_versioned"), DLPack >= 1.0. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif
