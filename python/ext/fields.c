/* The getter and setter of every field of the message classes (one
 * PyGetSetDef per field, made by classes.c, whose closure is the field's
 * descriptor), so an attribute read is a type-cache hit plus one C call.
 * Nothing here names an ONNX field. */
#include "fields.h"
#include "repeated.h"
#include "values.h"

static PyObject *raw_to_py(const onnxio_span *s)
{
    if (!s->data && s->size) {
        PyErr_SetString(PyExc_ValueError,
                        "raw_data was not loaded (skip_raw_data or a skipped payload): only its size is known");
        return NULL;
    }
    return PyBytes_FromStringAndSize(s->size ? (const char *)s->data : "", (Py_ssize_t)s->size);
}

PyObject *pyonnxio_field_get(PyOnnxioMessage *self, void *closure)
{
    const onnxio_field_desc *f = closure;
    if (f->label >= ONNXIO_LABEL_REPEATED) return pyonnxio_repeated_new(self, f);
    if (f->kind == ONNXIO_KIND_MESSAGE) return pyonnxio_message_field(self, f);
    void *c = self->msg ? (void *)self->msg : pyonnxio_message_read(self);
    void *p = pyonnxio_member(c, f);
    if (f->kind == ONNXIO_KIND_RAW) return raw_to_py(p);
    return pyonnxio_value_to_py(f, p);
}

int pyonnxio_field_set(PyOnnxioMessage *self, PyObject *value, void *closure)
{
    const onnxio_field_desc *f = closure;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "Cannot delete field attribute");
        return -1;
    }
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        PyErr_Format(PyExc_AttributeError,
                     "Assignment not allowed to map, or repeated field \"%s\" in protocol message object.", f->name);
        return -1;
    }
    if (f->kind == ONNXIO_KIND_MESSAGE) {
        PyErr_Format(PyExc_AttributeError,
                     "Assignment not allowed to message field \"%s\" in protocol message object.", f->name);
        return -1;
    }
    return pyonnxio_field_set_value(self, f, value);
}
