/*
 * dlpack.c: tensor payloads exported through DLPack, so that
 * torch.from_dlpack(tensor), np.from_dlpack(tensor) (and jax, cupy, ...)
 * share a TensorProto's raw_data without a copy.
 *
 * onnxio.TensorProto gets two methods (the DLPack Python specification):
 *   __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)
 *       a PyCapsule: "dltensor_versioned" (DLManagedTensorVersioned, DLPack
 *       1.1) when max_version >= (1, 0), else the legacy "dltensor".
 *   __dlpack_device__() -> (1, 0): kDLCPU, device 0.
 *
 * What is exported: raw_data as a C-contiguous tensor of shape `dims`
 * (strides always given) and the element type of `data_type` (dl_type: the
 * DLPack type code and bits of the library's data type table,
 * onnxio_data_type_info). Tensors without a loaded raw_data payload (typed
 * fields such as float_data, external data not loaded, a payload skipped at
 * load), strings, the 2-, 4- and 6-bit types and a raw_data whose size does
 * not match dims raise BufferError naming the tensor and the reason.
 *
 * Lifetime: each export holds its own reference to the payload's owner
 * (onnxio_buffer), dropped by the DLPack deleter, so the consumer's tensor
 * stays valid after the TensorProto, its model and arena are gone, as a
 * numpy view from _payload_view does. Nothing here needs the GIL to be
 * freed (an owner that wraps a Python object takes the GIL itself).
 *
 * Sharing and copies (`copy`, as the array API defines it: None = share
 * when possible, True = always copy, False = never copy, BufferError when
 * sharing is impossible). The memory is shared unless
 *   - its address is not a multiple of the element size (a no_copy load
 *     maps the file as it is, and protobuf puts raw_data at any offset):
 *     consumers index the data as typed pointers, so it is copied;
 *   - the payload is read-only and the capsule is the legacy one, which
 *     cannot say so;
 *   - the span borrows bytes without an owner (never the case for objects
 *     made by the extension).
 * A copy is a new 64-byte aligned buffer, writable, marked
 * DLPACK_FLAG_BITMASK_IS_COPIED in a versioned capsule.
 *
 * Writability: a payload in memory the library allocated (copy loads,
 * from_array, consolidated buffers) is exported writable; anything else
 * (a no_copy mapping, a Python bytes object) is marked
 * DLPACK_FLAG_BITMASK_READ_ONLY, as _payload_view makes it read-only.
 * numpy honours the flag; torch, which has no read-only tensors, ignores it:
 * a write then lands in the process's private copy-on-write pages of a
 * no_copy file mapping (never the file), which is harmless, but would
 * modify the immutable bytes object of a no_copy load from bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "dlpack.h"
#include "gil.h"
#include "message.h"
#include "pyonnxio.h"

/* One export: the managed tensor the capsule carries, the reference to the
 * payload's owner it keeps, and the storage of its shape and strides.
 * One malloc, freed by the deleter. */
typedef struct dl_export {
    union {
        DLManagedTensorVersioned versioned;
        DLManagedTensor legacy;
    } m;
    onnxio_buffer *owner; /* NULL for an empty payload */
    int64_t empty;        /* the data address of an empty payload */
    int64_t shape_strides[]; /* ndim shape entries, then ndim strides */
} dl_export;

static void export_free(dl_export *e)
{
    onnxio_buffer_unref(e->owner);
    free(e);
}

static void deleter_versioned(DLManagedTensorVersioned *self)
{
    export_free(self->manager_ctx);
}

static void deleter_legacy(DLManagedTensor *self)
{
    export_free(self->manager_ctx);
}

/* The DLPack element type of ONNX data type `data_type` into *out: its
 * code and bits from the library's table (onnxio_data_type_info). 0 on
 * success; -1 when DLPack cannot carry it here, with *why saying so. */
static int dl_type(int32_t data_type, DLDataType *out, const char **why)
{
    const onnxio_data_type_desc *d = onnxio_data_type_info(data_type);
    if (!d || d->dlpack_code < 0) {
        unsigned bits = d ? d->bits : 0;
        *why = data_type == ONNXIO_TensorProto_DataType_UNDEFINED ? "its data_type is not set"
               : data_type == ONNXIO_TensorProto_DataType_STRING  ? "strings have no fixed-size elements"
               : bits && bits < 8 ? "its elements are packed several to a byte, which DLPack consumers do not "
                                    "read as one element each"
                                  : "DLPack has no such element type";
        return -1;
    }
    out->code = (uint8_t)d->dlpack_code;
    out->bits = (uint8_t)d->bits;
    out->lanes = 1;
    return 0;
}

/* The name of a TensorProto.DataType value ("FLOAT"), or NULL. */
static const char *data_type_name(int32_t data_type)
{
    const onnxio_enum_desc *en = &onnxio_enum_TensorProto_DataType;
    for (size_t i = 0; i < en->value_count; i++)
        if (en->values[i].number == data_type) return en->values[i].name;
    return NULL;
}

static const char *tensor_name(const onnxio_TensorProto *t)
{
    return t && t->name.data ? t->name.data : "";
}

/* Sets BufferError "tensor 'NAME' (TYPE): cannot export through DLPack: <reason>"; returns NULL
 * (void * so that functions of any pointer type can return it). */
static void *refuse(const onnxio_TensorProto *t, const char *reason)
{
    int32_t dt = t ? t->data_type : 0;
    const char *type = data_type_name(dt);
    if (type)
        PyErr_Format(PyExc_BufferError, "tensor '%.200s' (%s): cannot export through DLPack: %s", tensor_name(t),
                     type, reason);
    else
        PyErr_Format(PyExc_BufferError, "tensor '%.200s' (data_type %d): cannot export through DLPack: %s",
                     tensor_name(t), (int)dt, reason);
    return NULL;
}

/* The tensor behind `self` with a loaded raw_data payload, or NULL with
 * BufferError saying where its values are instead. */
static onnxio_TensorProto *exportable_tensor(PyObject *self)
{
    onnxio_TensorProto *t = pyonnxio_message_get((PyOnnxioMessage *)self, 0);
    if (t && onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data)) {
        if (!t->raw_data.data && t->raw_data.size)
            return refuse(t, "its raw_data was skipped at load (skip_raw_data): only its size is known");
        return t;
    }
    if (t && t->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL)
        return refuse(t, "its external data is not loaded (onnxio.load_external_data_for_tensor, or load "
                         "with load_external_data=True)");
    if (t && (t->float_data.size || t->int32_data.size || t->string_data.size || t->int64_data.size ||
              t->double_data.size || t->uint64_data.size))
        return refuse(t, "its values are in a typed field (float_data, int32_data, ...), not in raw_data: "
                         "numpy_helper.to_array copies them");
    return refuse(t, "raw_data is not set");
}

/* Parses max_version (None or a (major, minor) tuple of ints) into
 * *versioned. 0 or -1. */
static int parse_max_version(PyObject *o, int *versioned)
{
    *versioned = 0;
    if (o == Py_None) return 0;
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2 || !PyLong_Check(PyTuple_GET_ITEM(o, 0)) ||
        !PyLong_Check(PyTuple_GET_ITEM(o, 1))) {
        PyErr_Format(PyExc_TypeError, "max_version must be None or a (major, minor) tuple of ints, not %R", o);
        return -1;
    }
    long major = PyLong_AsLong(PyTuple_GET_ITEM(o, 0));
    if (major == -1 && PyErr_Occurred()) return -1;
    *versioned = major >= 1;
    return 0;
}

/* Checks dl_device: None or (kDLCPU, 0). 0, or -1 with BufferError (another
 * device) or TypeError. */
static int check_device(PyObject *o)
{
    if (o == Py_None) return 0;
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2) {
        PyErr_Format(PyExc_TypeError, "dl_device must be None or a (device_type, device_id) tuple, not %R", o);
        return -1;
    }
    long type = PyLong_AsLong(PyTuple_GET_ITEM(o, 0));
    if (type == -1 && PyErr_Occurred()) return -1;
    long id = PyLong_AsLong(PyTuple_GET_ITEM(o, 1));
    if (id == -1 && PyErr_Occurred()) return -1;
    if (type != kDLCPU || id != 0) {
        PyErr_Format(PyExc_BufferError,
                     "onnxio tensors are in CPU memory (kDLCPU, 0); cannot export to device (%ld, %ld)", type, id);
        return -1;
    }
    return 0;
}

/* The capsule destructor: an export no consumer took (its name unchanged)
 * is freed here; a consumed one ("used_...") is the consumer's. */
static void capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (m && m->deleter) m->deleter(m);
    } else if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
        if (m && m->deleter) m->deleter(m);
    }
}

static PyObject *tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                     &copy_obj))
        return NULL;
    if (stream != Py_None) {
        PyErr_Format(PyExc_ValueError, "stream must be None for CPU memory, not %R", stream);
        return NULL;
    }
    int versioned;
    if (parse_max_version(max_version, &versioned) < 0 || check_device(dl_device) < 0) return NULL;
    int copy = -1; /* None */
    if (copy_obj != Py_None) {
        copy = PyObject_IsTrue(copy_obj);
        if (copy < 0) return NULL;
    }

    /* The type first: a string tensor is refused for being one. */
    const onnxio_TensorProto *read = pyonnxio_message_get((PyOnnxioMessage *)self, 0);
    DLDataType dtype;
    const char *why;
    if (dl_type(read ? read->data_type : 0, &dtype, &why) < 0) return refuse(read, why);
    onnxio_TensorProto *t = exportable_tensor(self);
    if (!t) return NULL;
    uint64_t want;
    int known = onnxio_tensor_raw_size(t, &want);
    if (known < 0) return refuse(t, "a dimension is negative or the element count overflows");
    if (known == 0) return refuse(t, "it is a segment of a larger tensor");
    if (want != t->raw_data.size) {
        PyErr_Format(PyExc_BufferError,
                     "tensor '%.200s' (%s): cannot export through DLPack: raw_data holds %zu bytes, its type and "
                     "dims need %llu",
                     tensor_name(t), data_type_name(t->data_type), t->raw_data.size, (unsigned long long)want);
        return NULL;
    }

    size_t ndim = t->dims.size;
    dl_export *e = calloc(1, sizeof *e + 2 * ndim * sizeof(int64_t));
    if (!e) return PyErr_NoMemory();
    int64_t *shape = e->shape_strides, *strides = e->shape_strides + ndim;
    int64_t stride = 1;
    for (size_t i = ndim; i-- > 0;) {
        shape[i] = t->dims.data[i];
        strides[i] = stride;
        stride *= shape[i] ? shape[i] : 1; /* no overflow: the byte size fits 64 bits */
    }

    /* Share or copy. */
    size_t size = t->raw_data.size, elem = dtype.bits / 8u;
    uint8_t *data = t->raw_data.data;
    int readonly = !t->raw_data.owner || !onnxio_buffer_is_allocated(t->raw_data.owner);
    int copied = 0;
    if (size == 0) {
        data = (uint8_t *)&e->empty;
        readonly = 0;
    } else {
        const char *need = NULL;
        if ((uintptr_t)data % elem)
            need = "its payload's address is not a multiple of its element size (a no_copy load maps raw_data "
                   "at its offset in the file); load without no_copy, call onnxio.consolidate_tensors_to_buffer, "
                   "or save with external data (aligned offsets)";
        else if (readonly && !versioned)
            need = "its payload is read-only and a legacy (unversioned) DLPack capsule cannot say so; ask for "
                   "max_version=(1, 0) or later";
        else if (!t->raw_data.owner)
            need = "its payload is borrowed memory without an owner";
        if (need && copy == 0) {
            free(e);
            return refuse(t, need);
        }
        if (need || copy == 1) {
            onnxio_buffer *b = onnxio_buffer_new(size, 64);
            if (!b) {
                free(e);
                return PyErr_NoMemory();
            }
            uint8_t *dst = onnxio_buffer_data(b);
            /* The GIL is released for the copy only while a reference of
             * ours keeps the source alive (another thread may replace the
             * tensor's raw_data meanwhile). */
            onnxio_buffer *src = onnxio_buffer_ref(t->raw_data.owner);
            if (src) {
                pyonnxio_copy_unlocked(dst, data, size);
            } else {
                memcpy(dst, data, size);
            }
            onnxio_buffer_unref(src);
            e->owner = b;
            data = dst;
            readonly = 0;
            copied = 1;
        } else {
            e->owner = onnxio_buffer_ref(t->raw_data.owner);
        }
    }

    DLTensor *dl = versioned ? &e->m.versioned.dl_tensor : &e->m.legacy.dl_tensor;
    dl->data = data;
    dl->device.device_type = kDLCPU;
    dl->device.device_id = 0;
    dl->ndim = (int32_t)ndim;
    dl->dtype = dtype;
    dl->shape = shape;
    dl->strides = strides;
    dl->byte_offset = 0;
    PyObject *capsule;
    if (versioned) {
        e->m.versioned.version.major = DLPACK_MAJOR_VERSION;
        e->m.versioned.version.minor = DLPACK_MINOR_VERSION;
        e->m.versioned.manager_ctx = e;
        e->m.versioned.deleter = deleter_versioned;
        e->m.versioned.flags = (readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0) |
                               (copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
        capsule = PyCapsule_New(&e->m.versioned, "dltensor_versioned", capsule_destructor);
    } else {
        e->m.legacy.manager_ctx = e;
        e->m.legacy.deleter = deleter_legacy;
        capsule = PyCapsule_New(&e->m.legacy, "dltensor", capsule_destructor);
    }
    if (!capsule) export_free(e);
    return capsule;
}

static PyObject *tensor_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(ii)", (int)kDLCPU, 0);
}

static const PyMethodDef dlpack_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "The tensor's raw_data as a DLPack capsule (the DLPack Python specification), for torch.from_dlpack,\n"
     "numpy.from_dlpack and other consumers: shape from dims, element type from data_type (bool, int and\n"
     "uint 8-64, the floats of 8 to 64 bits, complex64/128). The memory is shared, not\n"
     "copied, when its address suits the element type; the capsule keeps it alive after the tensor and its\n"
     "model are gone. Read-only (a flag of DLPack >= 1.0 capsules) unless the payload is memory the library\n"
     "allocated. copy=True always copies, copy=False never does (BufferError when it would have to).\n"
     "BufferError, naming the tensor, for strings, the 2-, 4- and 6-bit types, and tensors without a loaded\n"
     "raw_data payload."},
    {"__dlpack_device__", tensor_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n(1, 0): tensors are in CPU memory (kDLCPU, device 0)."},
};

int pyonnxio_dlpack_init(PyObject *module)
{
    PyTypeObject *type = pyonnxio_message_type(pyonnxio_state_of_module(module), &onnxio_desc_TensorProto);
    if (!type) {
        PyErr_SetString(PyExc_SystemError, "onnxio: no TensorProto class for the DLPack methods");
        return -1;
    }
    for (size_t i = 0; i < sizeof dlpack_methods / sizeof *dlpack_methods; i++) {
        PyObject *descr = PyDescr_NewMethod(type, (PyMethodDef *)&dlpack_methods[i]);
        int bad = !descr || PyObject_SetAttrString((PyObject *)type, dlpack_methods[i].ml_name, descr) < 0;
        Py_XDECREF(descr);
        if (bad) return -1;
    }
    return 0;
}
