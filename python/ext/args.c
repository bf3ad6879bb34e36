/* What the entry points of the extension share to read their arguments:
 * the descriptor a class, message or name stands for, the message object
 * an argument must be, "O&" converters for the option fields of the C
 * option structs (onnxio.h), and the C message of an argument for reading
 * (an empty one for a lazy message). */
#include <limits.h>

#include "args.h"

const onnxio_message_desc *pyonnxio_desc_from(pyonnxio_state *st, PyObject *what)
{
    if (PyUnicode_Check(what)) {
        const char *name = PyUnicode_AsUTF8(what);
        if (!name) return NULL;
        const onnxio_message_desc *d = onnxio_message_desc_by_name(name);
        if (!d) PyErr_Format(PyExc_ValueError, "no ONNX message named %R", what);
        return d;
    }
    if (PyType_Check(what)) {
        for (size_t i = 0; i < onnxio_all_message_count; i++)
            if ((PyObject *)pyonnxio_message_type(st, onnxio_all_messages[i]) == what) return onnxio_all_messages[i];
    } else {
        const onnxio_message_desc *d = pyonnxio_message_desc_of(st, what);
        if (d) return d;
    }
    PyErr_Format(PyExc_TypeError, "expected an onnxio message class, got %R", what);
    return NULL;
}

PyOnnxioMessage *pyonnxio_as_message(pyonnxio_state *st, PyObject *obj, const onnxio_message_desc *want,
                                     const char *what)
{
    const onnxio_message_desc *d = pyonnxio_message_desc_of(st, obj);
    if (!d || (want && d != want)) {
        PyErr_Format(PyExc_TypeError, "%s must be an onnxio.%s, not %.200s", what,
                     want ? want->name : "message (ModelProto, TensorProto, ...)", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return (PyOnnxioMessage *)obj;
}

int pyonnxio_conv_u64(PyObject *o, void *out)
{
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected an int, got %.200s", Py_TYPE(o)->tp_name);
        return 0;
    }
    PyObject *zero = PyLong_FromLong(0);
    int negative = zero ? PyObject_RichCompareBool(o, zero, Py_LT) : -1;
    Py_XDECREF(zero);
    if (negative < 0) return 0;
    if (negative) {
        PyErr_Format(PyExc_ValueError, "expected a non-negative int, got %R", o);
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return 0;
    *(uint64_t *)out = v;
    return 1;
}

int pyonnxio_conv_int(PyObject *o, void *out)
{
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected an int, got %.200s", Py_TYPE(o)->tp_name);
        return 0;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return 0;
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "%R does not fit a C int", o);
        return 0;
    }
    *(int *)out = (int)v;
    return 1;
}

int pyonnxio_conv_depth(PyObject *o, void *out)
{
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "max_depth: expected an int, got %.200s", Py_TYPE(o)->tp_name);
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && !overflow && PyErr_Occurred()) return 0;
    if (overflow > 0 || v > INT_MAX) v = INT_MAX;
    if (overflow < 0 || v < 0) v = -1;
    *(int *)out = (int)v;
    return 1;
}

int pyonnxio_conv_toggle(PyObject *o, void *out)
{
    if (o == Py_None) {
        *(onnxio_toggle *)out = ONNXIO_DEFAULT;
        return 1;
    }
    int t = PyObject_IsTrue(o);
    if (t < 0) return 0;
    *(onnxio_toggle *)out = t ? ONNXIO_ON : ONNXIO_OFF;
    return 1;
}

int pyonnxio_conv_opt_path(PyObject *o, void *out)
{
    if (o == Py_None) return 1;
    return PyUnicode_FSConverter(o, out);
}

const char *pyonnxio_path_str(PyObject *bytes_or_null)
{
    return bytes_or_null ? PyBytes_AS_STRING(bytes_or_null) : NULL;
}

/* ---- the message of an argument, for reading ---------------------------- */

void *pyonnxio_message_for_read(PyOnnxioMessage *m, const onnxio_message_desc *desc, onnxio_arena **scratch)
{
    void *msg = pyonnxio_message_get(m, 0);
    if (msg) {
        *scratch = onnxio_arena_ref(m->arena);
        return msg;
    }
    if (!(*scratch = onnxio_arena_new()) || !(msg = onnxio_message_new(*scratch, desc))) {
        onnxio_arena_unref(*scratch);
        *scratch = NULL;
        PyErr_NoMemory();
        return NULL;
    }
    return msg;
}

