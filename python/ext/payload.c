/* Tensor payloads seen from Python: payload owners made of Python objects
 * (bytes, any buffer export), the _Payload type that exports a payload
 * through the buffer protocol with its own reference to the payload's
 * owner (so a numpy array outlives its tensor, model and arena), and the
 * entry points that read, set, share and consolidate raw_data payloads. */
#include <string.h>

#include "args.h"
#include "errors.h"
#include "gil.h"
#include "payload.h"
#include "pyonnxio.h"

/* ---- payload owners made of Python objects ------------------------------ */

/* What a Python-backed onnxio_buffer keeps: the object, and the buffer
 * export when it is not a bytes object (bytes are immutable and their
 * storage never moves, so a reference is enough). */
typedef struct {
    PyObject *obj;
    Py_buffer view;
    int has_view;
} py_hold;

static int interpreter_gone(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return !Py_IsInitialized() || Py_IsFinalizing();
#else
    return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

/* The release callback: the last reference may go on any thread, with or
 * without the GIL (a pool thread, or inside a GIL-released C call), so it
 * takes the GIL itself. During interpreter shutdown the object is leaked
 * rather than touched. */
static void release_py_hold(void *ctx, void *data, size_t size)
{
    (void)data;
    (void)size;
    py_hold *h = ctx;
    if (!interpreter_gone()) {
        PyGILState_STATE g = PyGILState_Ensure();
        if (h->has_view) PyBuffer_Release(&h->view);
        Py_DECREF(h->obj);
        PyGILState_Release(g);
    }
    PyMem_RawFree(h);
}

/* A buffer over `obj`'s bytes; `writable` asks for a writable export (for
 * memory that a payload is copied into). */
static onnxio_buffer *buffer_for_object(PyObject *obj, int writable)
{
    py_hold *h = PyMem_RawCalloc(1, sizeof *h);
    if (!h) return (onnxio_buffer *)PyErr_NoMemory();
    void *data;
    size_t size;
    if (PyBytes_CheckExact(obj) && !writable) {
        data = PyBytes_AS_STRING(obj);
        size = (size_t)PyBytes_GET_SIZE(obj);
    } else {
        if (PyObject_GetBuffer(obj, &h->view, writable ? PyBUF_CONTIG : PyBUF_CONTIG_RO) < 0) {
            PyMem_RawFree(h);
            return NULL;
        }
        h->has_view = 1;
        data = h->view.buf;
        size = (size_t)h->view.len;
    }
    Py_INCREF(obj);
    h->obj = obj;
    onnxio_buffer *b = onnxio_buffer_wrap(data, size, release_py_hold, h);
    if (!b) {
        if (h->has_view) PyBuffer_Release(&h->view);
        Py_DECREF(obj);
        PyMem_RawFree(h);
        return (onnxio_buffer *)PyErr_NoMemory();
    }
    return b;
}

onnxio_buffer *pyonnxio_buffer_for_object(PyObject *obj)
{
    return buffer_for_object(obj, 0);
}

onnxio_buffer *pyonnxio_buffer_for_writable(PyObject *obj)
{
    return buffer_for_object(obj, 1);
}

int pyonnxio_borrowable(PyObject *data, uint64_t raw_data_threshold)
{
    uint64_t threshold = raw_data_threshold ? raw_data_threshold : ONNXIO_DEFAULT_RAW_DATA_THRESHOLD;
    return PyBytes_CheckExact(data) && (uint64_t)PyBytes_GET_SIZE(data) >= threshold;
}

/* ---- payload views (buffer protocol) ------------------------------------ */

/* The exporter behind a payload memoryview: a reference to the payload's
 * owner and the bytes it covers. The memoryview holds this object, this
 * object holds the owner, so a numpy array made from the view stays valid
 * after its tensor, model and arena are gone. */
typedef struct {
    PyObject_HEAD
    onnxio_buffer *owner;
    uint8_t *data;
    Py_ssize_t size;
    int readonly;
} PayloadObject;

static uint8_t empty_payload[1];

static int payload_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    PayloadObject *p = (PayloadObject *)self;
    return PyBuffer_FillInfo(view, self, p->data ? p->data : empty_payload, p->size, p->readonly, flags);
}

static void payload_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PayloadObject *p = (PayloadObject *)self;
    onnxio_buffer_unref(p->owner);
    tp->tp_free(self);
    Py_DECREF(tp); /* an instance of a heap type holds a reference to it */
}

static PyType_Slot payload_slots[] = {
    {Py_tp_dealloc, payload_dealloc},
    {Py_bf_getbuffer, payload_getbuffer},
    {Py_tp_doc, "The owner of a tensor payload, exported through the buffer protocol (see _payload_view)."},
    {0, NULL},
};

/* Only view_of makes instances, and the type cannot be changed: what a
 * static type without tp_new is (the flags exist from Python 3.10 on). */
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
#define PAYLOAD_FLAGS (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION)
#else
#define PAYLOAD_FLAGS Py_TPFLAGS_DEFAULT
#endif

static PyType_Spec payload_spec = {
    "onnxio._onnxio._Payload", sizeof(PayloadObject), 0, PAYLOAD_FLAGS, payload_slots,
};

/* A memoryview of `size` bytes at `data`, holding a reference to `owner`. */
static PyObject *view_of(pyonnxio_state *st, uint8_t *data, size_t size, onnxio_buffer *owner, int readonly)
{
    if (size > (size_t)PY_SSIZE_T_MAX) return PyErr_Format(PyExc_OverflowError, "payload of %zu bytes", size);
    PayloadObject *p = PyObject_New(PayloadObject, st->payload_type);
    if (!p) return NULL;
    p->owner = onnxio_buffer_ref(owner);
    p->data = data;
    p->size = (Py_ssize_t)size;
    p->readonly = readonly;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)p);
    Py_DECREF(p);
    return mv;
}

PyObject *pyonnxio_payload_view(pyonnxio_state *st, const onnxio_span *span)
{
    if (!span->data && span->size) Py_RETURN_NONE; /* skipped: only the size is known */
    if (span->owner)
        return view_of(st, span->data, span->size, span->owner, !onnxio_buffer_is_allocated(span->owner));
    /* Borrowed: the memory's keeper is out of the extension's reach, so the
     * view gets a private copy, read-only because writing into it could not
     * reach the tensor. */
    onnxio_buffer *copy = onnxio_buffer_new(span->size, 64);
    if (!copy) return PyErr_NoMemory();
    if (span->size) memcpy(onnxio_buffer_data(copy), span->data, span->size);
    PyObject *mv = view_of(st, onnxio_buffer_data(copy), span->size, copy, 1);
    onnxio_buffer_unref(copy);
    return mv;
}

int pyonnxio_payload_init(PyObject *module)
{
    pyonnxio_state *st = pyonnxio_state_of_module(module);
    /* Not added to the module: the type is reached through the views. */
    st->payload_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &payload_spec, NULL);
    if (!st->payload_type) return -1;
#ifndef Py_TPFLAGS_DISALLOW_INSTANTIATION
    st->payload_type->tp_new = NULL; /* before Python 3.10: type(view.obj)() refused, as for a static type */
#endif
    return 0;
}

/* ---- consolidation --------------------------------------------------------- */

const char pyonnxio_consolidate_doc[] =
    "_consolidate(message, raw_data_threshold=0, alignment=0) -> memoryview | None\n"
    "Moves every loaded raw_data payload of at least raw_data_threshold bytes (0: " PYONNXIO_STR(ONNXIO_DEFAULT_RAW_DATA_THRESHOLD) ") under `message`\n"
    "into one new buffer, each at an offset that is a multiple of `alignment` (0: " PYONNXIO_STR(ONNXIO_DEFAULT_ALIGNMENT) "), and returns a\n"
    "writable memoryview of the whole buffer (None when no payload qualified). The view keeps the\n"
    "buffer alive; writing into it changes those tensors' payloads. The GIL is released meanwhile.";

/* One consolidation, made without the GIL. */
typedef struct consolidate_call {
    void *msg;
    const onnxio_consolidate_options *o;
    onnxio_buffer *out;
} consolidate_call;

static onnxio_status consolidate_run(void *ctx)
{
    consolidate_call *c = ctx;
    return onnxio_consolidate_tensors_to_buffer(c->msg, c->o, &c->out);
}

PyObject *pyonnxio_consolidate(PyObject *self, PyObject *args, PyObject *kw)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    static char *kwlist[] = {"message", "raw_data_threshold", "alignment", NULL};
    PyObject *obj;
    onnxio_consolidate_options o = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O&O&:_consolidate", kwlist, &obj, pyonnxio_conv_u64,
                                     &o.raw_data_threshold, pyonnxio_conv_u64, &o.alignment))
        return NULL;
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, NULL, "message");
    if (!m) return NULL;
    void *msg = pyonnxio_message_get(m, 0);
    if (!msg) Py_RETURN_NONE;
    consolidate_call c = {msg, &o, NULL};
    onnxio_status s;
    if (pyonnxio_call_unlocked(st, m->arena, consolidate_run, &c, &s) < 0) return NULL;
    if (s) return pyonnxio_raise(st, s);
    onnxio_buffer *b = c.out;
    if (!b) Py_RETURN_NONE;
    PyObject *mv = view_of(st, onnxio_buffer_data(b), onnxio_buffer_size(b), b, !onnxio_buffer_is_allocated(b));
    onnxio_buffer_unref(b);
    return mv;
}

/* ---- tensor payloads ------------------------------------------------------- */

const char pyonnxio_tensor_payload_view_doc[] =
    "_payload_view(tensor) -> memoryview | None\n"
    "A memoryview of the tensor's raw_data payload, holding its own reference to the payload's owner\n"
    "(so a numpy array made from it outlives the tensor, its model and arena). None when raw_data is\n"
    "unset, or was skipped at load (skip_raw_data). Writable only when the payload is in memory the\n"
    "library allocated (copy-mode loads, consolidated buffers); read-only for memory-mapped files\n"
    "and Python objects. A borrowed payload is copied.";

PyObject *pyonnxio_tensor_payload_view(PyObject *self, PyObject *obj)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, &onnxio_desc_TensorProto, "tensor");
    if (!m) return NULL;
    onnxio_TensorProto *t = pyonnxio_message_get(m, 0);
    if (!t || !onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data)) Py_RETURN_NONE;
    return pyonnxio_payload_view(st, &t->raw_data);
}

/* Makes all of `b` tensor `m`'s raw_data (present), taking over the
 * caller's reference to `b`; None, or NULL with an exception set. */
static PyObject *set_payload(PyOnnxioMessage *m, onnxio_buffer *b)
{
    onnxio_TensorProto *t = pyonnxio_message_get(m, 1);
    if (t) {
        onnxio_span_set(&t->raw_data, onnxio_buffer_data(b), onnxio_buffer_size(b), b);
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    }
    onnxio_buffer_unref(b);
    if (!t) return NULL;
    Py_RETURN_NONE;
}

const char pyonnxio_set_raw_data_doc[] =
    "_set_raw_data(tensor, obj)\n"
    "Sets tensor.raw_data from any buffer-protocol object (C-contiguous or not) and marks it present.\n"
    "A bytes object is referenced, not copied (it is immutable); anything else is copied once into a\n"
    "buffer the tensor owns, with the GIL released during the copy.";

PyObject *pyonnxio_set_raw_data(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *obj, *data;
    if (!PyArg_ParseTuple(args, "OO:_set_raw_data", &obj, &data)) return NULL;
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, &onnxio_desc_TensorProto, "tensor");
    if (!m) return NULL;
    onnxio_buffer *b;
    if (PyBytes_CheckExact(data)) {
        if (!(b = pyonnxio_buffer_for_object(data))) return NULL;
    } else {
        Py_buffer view;
        if (PyObject_GetBuffer(data, &view, PyBUF_FULL_RO) < 0) return NULL;
        b = onnxio_buffer_new((size_t)view.len, 64);
        if (!b) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        int rc = 0;
        if (PyBuffer_IsContiguous(&view, 'C')) {
            /* The export keeps the source alive and sized; the new buffer
             * is nobody else's yet. */
            pyonnxio_copy_unlocked(onnxio_buffer_data(b), view.buf, (size_t)view.len);
        } else {
            rc = PyBuffer_ToContiguous(onnxio_buffer_data(b), &view, view.len, 'C');
        }
        PyBuffer_Release(&view);
        if (rc < 0) {
            onnxio_buffer_unref(b);
            return NULL;
        }
    }
    return set_payload(m, b);
}

const char pyonnxio_share_raw_data_doc[] =
    "_share_raw_data(tensor, obj)\n"
    "Sets tensor.raw_data to the bytes of `obj`, a C-contiguous buffer-protocol object (a numpy array, a\n"
    "memoryview, bytes, ...), without copying them, and marks it present. The payload's owner holds a\n"
    "reference to `obj` and its buffer export until the last tensor sharing the payload lets go (on\n"
    "whatever thread frees it, under the GIL). Writes into `obj` show in the tensor; the payload's own\n"
    "views (_payload_view) are read-only. A non-contiguous buffer is refused by its exporter (numpy:\n"
    "ValueError); _set_raw_data copies those.";

/* The zero-copy sibling of _set_raw_data (onnxio.ir.from_ir hands the
 * numpy arrays of onnx_ir tensors to onnxio with it): the owner is a
 * buffer_for_object, released by release_py_hold. */
PyObject *pyonnxio_share_raw_data(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *obj, *data;
    if (!PyArg_ParseTuple(args, "OO:_share_raw_data", &obj, &data)) return NULL;
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, &onnxio_desc_TensorProto, "tensor");
    if (!m) return NULL;
    onnxio_buffer *b = buffer_for_object(data, 0);
    if (!b) return NULL;
    return set_payload(m, b);
}

