/* Messages of the onnx package (or any protobuf message whose
 * DESCRIPTOR.full_name names an ONNX message) turned into the equal onnxio
 * message: pyonnxio_coerce_message, the one conversion that constructors,
 * CopyFrom, MergeFrom, comparison and the repeated containers use, and
 * _coerce, which gives it to the Python package. */
#include <string.h>

#include "coerce.h"
#include "errors.h"
#include "gil.h"
#include "message.h"
#include "payload.h"
#include "pyonnxio.h"
#include "wire.h"

/* From this size on, a message converted from the onnx package keeps its
 * payloads in the bytes object protobuf serialized it to (no_copy: nothing
 * else holds those bytes, and they are immutable) instead of copying them:
 * on GPT-2's 0.5 GB that saves a copy; on many small messages a copy parse
 * is faster. */
#define COERCE_BORROW_BYTES ((Py_ssize_t)64 << 20)

/* The borrowing parse of parse_borrowing, made without the GIL. */
typedef struct borrowing_parse {
    onnxio_message *msg;
    onnxio_buffer *owner;
    onnxio_arena *arena;
} borrowing_parse;

static onnxio_status parse_into_unlocked(void *ctx)
{
    borrowing_parse *p = ctx;
    onnxio_parse_options opts = ONNXIO_PARSE_OPTIONS_INIT;
    opts.no_copy = true;
    return onnxio_parse_into(p->msg, onnxio_buffer_data(p->owner), onnxio_buffer_size(p->owner), p->owner, &opts,
                             p->arena);
}

/* A new message of class `cls` parsed from the bytes object `data` with
 * no_copy, its payloads holding references to `data`. */
static PyObject *parse_borrowing(pyonnxio_state *st, PyObject *cls, PyObject *data)
{
    PyObject *m = PyObject_CallNoArgs(cls);
    if (!m) return NULL;
    onnxio_message *c = pyonnxio_message_get((PyOnnxioMessage *)m, 1);
    onnxio_buffer *owner = c ? pyonnxio_buffer_for_object(data) : NULL;
    if (!owner) {
        Py_DECREF(m);
        return NULL;
    }
    /* The new message is nobody else's yet: no tree to mark busy. */
    borrowing_parse p = {c, owner, ((PyOnnxioMessage *)m)->arena};
    onnxio_status s;
    pyonnxio_call_unlocked(st, NULL, parse_into_unlocked, &p, &s);
    onnxio_buffer_unref(owner);
    if (s) {
        Py_DECREF(m);
        return pyonnxio_raise(st, s);
    }
    return m;
}

PyObject *pyonnxio_coerce_message(pyonnxio_state *st, PyObject *obj)
{
    if (PyObject_TypeCheck(obj, st->message_type) || PyType_Check(obj)) return Py_NewRef(obj);
    PyObject *descriptor = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "DESCRIPTOR");
    if (!descriptor) {
        PyErr_Clear();
        return Py_NewRef(obj);
    }
    PyObject *name = PyObject_GetAttrString(descriptor, "full_name");
    Py_DECREF(descriptor);
    const char *full = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    const onnxio_message_desc *desc = full && strncmp(full, "onnx.", 5) == 0 ? onnxio_message_desc_by_name(full) : NULL;
    PyTypeObject *cls = desc ? pyonnxio_message_type(st, desc) : NULL;
    Py_XDECREF(name);
    if (!cls) {
        PyErr_Clear();
        return Py_NewRef(obj);
    }
    PyObject *data = PyObject_CallMethod(obj, "SerializeToString", NULL);
    if (!data) return NULL;
    PyObject *m = PyBytes_Check(data) && PyBytes_GET_SIZE(data) >= COERCE_BORROW_BYTES
                      ? parse_borrowing(st, (PyObject *)cls, data)
                      : pyonnxio_message_from_string((PyObject *)cls, data);
    Py_DECREF(data);
    return m;
}

/* ---- _coerce ------------------------------------------------------------- */

const char pyonnxio_coerce_doc[] =
    "_coerce(obj) -> object\n"
    "`obj` as an onnxio message: itself when it is one (or no message); a message of the onnx package\n"
    "converted to the equal onnxio message (pyonnxio_coerce_message, as constructors, CopyFrom and\n"
    "append take them).";

PyObject *pyonnxio_coerce(PyObject *self, PyObject *obj)
{
    return pyonnxio_coerce_message(pyonnxio_state_of_module(self), obj);
}

