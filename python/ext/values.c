/* The values of scalar, enum, string and bytes fields between Python and C,
 * with protobuf's checks (upb's answers for wrong types, ranges and enum
 * numbers): pyonnxio_value_from_py, pyonnxio_value_store and
 * pyonnxio_value_to_py, shared by singular fields (fields.c, construct.c)
 * and repeated ones (repeated.c); and the two stores into a message built on
 * them: a singular field set (pyonnxio_field_set_value) and a repeated
 * field's values stored all at once (pyonnxio_values_store). */
#include <string.h>

#include "values.h"

static PyObject *string_to_py(const onnxio_string *s, int text)
{
    const char *data = s->size ? s->data : "";
    if (!text) return PyBytes_FromStringAndSize(data, (Py_ssize_t)s->size);
    PyObject *r = PyUnicode_DecodeUTF8(data, (Py_ssize_t)s->size, NULL);
    if (!r && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        /* A parsed string field that is not UTF-8: upb gives its bytes. */
        PyErr_Clear();
        r = PyBytes_FromStringAndSize(data, (Py_ssize_t)s->size);
    }
    return r;
}

PyObject *pyonnxio_value_to_py(const onnxio_field_desc *f, const void *p)
{
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM: return PyLong_FromLong(*(const int32_t *)p);
    case ONNXIO_KIND_INT64: return PyLong_FromLongLong(*(const int64_t *)p);
    case ONNXIO_KIND_UINT64: return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
    case ONNXIO_KIND_FLOAT: return PyFloat_FromDouble(*(const float *)p);
    case ONNXIO_KIND_DOUBLE: return PyFloat_FromDouble(*(const double *)p);
    case ONNXIO_KIND_STRING: return string_to_py(p, 1);
    case ONNXIO_KIND_BYTES: return string_to_py(p, 0);
    default: PyErr_SetString(PyExc_SystemError, "onnxio: not a scalar field"); return NULL;
    }
}

static int integer_from_py(const onnxio_field_desc *f, PyObject *obj, pyonnxio_value *out)
{
    if (PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "Field %s: Expected an int, got a boolean.", f->name);
        return -1;
    }
    PyObject *n = PyNumber_Index(obj); /* ints and numpy integers; TypeError for floats and str */
    if (!n) return -1;
    int overflow = 0;
    if (f->kind == ONNXIO_KIND_UINT64) {
        unsigned long long u = PyLong_AsUnsignedLongLong(n);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            overflow = 1;
        }
        out->n.u = u;
    } else {
        long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(n);
            return -1;
        }
        if (!overflow && f->kind != ONNXIO_KIND_INT64 && (v < INT32_MIN || v > INT32_MAX)) overflow = 1;
        out->n.i = v;
    }
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "Value out of range: %S", n);
        Py_DECREF(n);
        return -1;
    }
    Py_DECREF(n);
    return 0;
}

static int enum_from_py(const onnxio_field_desc *f, PyObject *obj, pyonnxio_value *out)
{
    const onnxio_enum_desc *e = f->enum_type;
    if (PyUnicode_Check(obj)) { /* upb accepts a value's name */
        const char *name = PyUnicode_AsUTF8(obj);
        if (!name) return -1;
        for (size_t i = 0; e && i < e->value_count; i++)
            if (strcmp(e->values[i].name, name) == 0) {
                out->n.i = e->values[i].number;
                return 0;
            }
        PyErr_Format(PyExc_ValueError, "unknown enum label \"%s\"", name);
        return -1;
    }
    if (integer_from_py(f, obj, out) < 0) return -1;
    /* ONNX's enums are closed (proto2): upb refuses numbers they lack. */
    if (e && !onnxio_enum_value_name(e, (int32_t)out->n.i)) {
        PyErr_Format(PyExc_ValueError, "invalid enumerator %lld", (long long)out->n.i);
        return -1;
    }
    return 0;
}

int pyonnxio_value_from_py(const onnxio_field_desc *f, PyObject *obj, pyonnxio_value *out)
{
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_INT64:
    case ONNXIO_KIND_UINT64: return integer_from_py(f, obj, out);
    case ONNXIO_KIND_ENUM: return enum_from_py(f, obj, out);
    case ONNXIO_KIND_FLOAT:
    case ONNXIO_KIND_DOUBLE: {
        double d = PyFloat_AsDouble(obj); /* ints and anything with __float__; TypeError for str */
        if (d == -1.0 && PyErr_Occurred()) return -1;
        out->n.d = d;
        return 0;
    }
    case ONNXIO_KIND_STRING:
        if (PyUnicode_Check(obj)) {
            out->data = PyUnicode_AsUTF8AndSize(obj, &out->size);
            return out->data ? 0 : -1;
        }
        if (PyBytes_Check(obj)) { /* accepted when it is UTF-8, as protobuf does */
            PyObject *check = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj), NULL);
            if (!check) return -1;
            Py_DECREF(check);
            out->data = PyBytes_AS_STRING(obj);
            out->size = PyBytes_GET_SIZE(obj);
            return 0;
        }
        PyErr_Format(PyExc_TypeError, "field %s: expected str or bytes, got %.200s", f->name, Py_TYPE(obj)->tp_name);
        return -1;
    case ONNXIO_KIND_BYTES:
        if (PyBytes_Check(obj)) {
            out->data = PyBytes_AS_STRING(obj);
            out->size = PyBytes_GET_SIZE(obj);
            return 0;
        }
        PyErr_Format(PyExc_TypeError, "field %s: expected bytes, %.200s found", f->name, Py_TYPE(obj)->tp_name);
        return -1;
    default:
        PyErr_SetString(PyExc_SystemError, "onnxio: not a scalar field");
        return -1;
    }
}

int pyonnxio_value_store(onnxio_arena *arena, const onnxio_field_desc *f, void *p, const pyonnxio_value *v)
{
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM: *(int32_t *)p = (int32_t)v->n.i; return 0;
    case ONNXIO_KIND_INT64: *(int64_t *)p = v->n.i; return 0;
    case ONNXIO_KIND_UINT64: *(uint64_t *)p = v->n.u; return 0;
    /* IEEE conversion (C11 Annex F): out-of-range values become +-inf, as in upb. */
    case ONNXIO_KIND_FLOAT: *(float *)p = (float)v->n.d; return 0;
    case ONNXIO_KIND_DOUBLE: *(double *)p = v->n.d; return 0;
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES:
        if (onnxio_string_set(arena, p, v->data, (size_t)v->size)) {
            PyErr_NoMemory();
            return -1;
        }
        return 0;
    default: PyErr_SetString(PyExc_SystemError, "onnxio: not a scalar field"); return -1;
    }
}


/* ---- stores into a message ---------------------------------------------- */

static int set_raw(PyOnnxioMessage *self, const onnxio_field_desc *f, PyObject *value)
{
    Py_buffer view;
    if (PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "field %s: expected bytes, str found", f->name);
        return -1;
    }
    if (PyObject_GetBuffer(value, &view, PyBUF_SIMPLE) < 0) return -1;
    onnxio_message *c = pyonnxio_message_get(self, 1);
    int rc = -1;
    if (c) {
        if (onnxio_span_copy_from(pyonnxio_member(c, f), view.buf, (size_t)view.len)) {
            PyErr_NoMemory();
        } else {
            pyonnxio_field_set_present(c, f);
            rc = 0;
        }
    }
    PyBuffer_Release(&view);
    return rc;
}

int pyonnxio_field_set_value(PyOnnxioMessage *self, const onnxio_field_desc *f, PyObject *value)
{
    if (f->kind == ONNXIO_KIND_RAW) return set_raw(self, f, value);
    pyonnxio_value v;
    if (pyonnxio_value_from_py(f, value, &v) < 0) return -1;
    onnxio_message *c = pyonnxio_message_get(self, 1);
    if (!c) return -1;
    if (pyonnxio_value_store(self->arena, f, pyonnxio_member(c, f), &v) < 0) return -1;
    pyonnxio_field_set_present(c, f);
    return 0;
}

int pyonnxio_values_store(PyOnnxioMessage *owner, const onnxio_field_desc *f, PyObject *seq, int replace)
{
    PyObject *fast = PySequence_Fast(seq, "must assign iterable");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    pyonnxio_value one, *vals = n <= 1 ? &one : PyMem_Malloc((size_t)n * sizeof *vals);
    int rc = -1;
    if (!vals) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++)
        if (pyonnxio_value_from_py(f, items[k], &vals[k]) < 0) goto done;
    void *c = pyonnxio_message_get(owner, 1);
    if (!c) goto done;
    pyonnxio_array *a = pyonnxio_member(c, f);
    size_t es = onnxio_field_elem_size(f), before = a->size;
    if (replace) a->size = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        void *slot = onnxio_array_append(owner->arena, a, es);
        if (!slot || pyonnxio_value_store(owner->arena, f, slot, &vals[k]) < 0) {
            if (!slot) PyErr_NoMemory();
            /* appending restores the old size; replacing keeps what was stored */
            a->size = replace ? a->size - (slot != NULL) : before;
            goto done;
        }
    }
    rc = 0;
done:
    if (vals != &one) PyMem_Free(vals);
    Py_DECREF(fast);
    return rc;
}
