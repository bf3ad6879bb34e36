/* The construction of message objects: onnxio.Message's tp_init, which
 * applies protobuf's constructor keywords (Message(**kwargs)): scalars
 * set, repeated fields extended, message fields copied from a message of
 * their class (an onnx package message too) or initialized from a dict.
 * RepeatedCompositeContainer.add(**kwargs) initializes its new element
 * here too. */
#include "coerce.h"
#include "construct.h"
#include "values.h"

static int init_message_field(PyOnnxioMessage *self, const onnxio_field_desc *f, PyObject *value);

/* Appends `item` (a message of the field's class, or a dict of its fields)
 * to repeated message field `f` of `c` (self's message). */
static int append_message_item(PyOnnxioMessage *self, onnxio_message *c, const onnxio_field_desc *f, PyObject *item)
{
    if (PyDict_Check(item)) {
        void *elem = onnxio_list_add(self->arena, pyonnxio_member(c, f), f->message);
        if (!elem) {
            PyErr_NoMemory();
            return -1;
        }
        PyObject *w = pyonnxio_message_wrap(self->st, self->arena, elem);
        if (!w) return -1;
        int rc = pyonnxio_message_init_kwargs(w, item);
        Py_DECREF(w);
        return rc;
    }
    const onnxio_message_desc *d = pyonnxio_message_desc_of(self->st, item);
    if (d != f->message) {
        PyErr_Format(PyExc_TypeError,
                     "Parameter to initialize message field must be dict or instance of same class: expected %s got "
                     "%.200s.",
                     f->message->full_name, Py_TYPE(item)->tp_name);
        return -1;
    }
    void *copy = pyonnxio_message_clone(self->st, self->arena, pyonnxio_message_read((PyOnnxioMessage *)item));
    if (!copy) return -1;
    void **slot = onnxio_array_append(self->arena, pyonnxio_member(c, f), sizeof(void *));
    if (!slot) {
        PyErr_NoMemory();
        return -1;
    }
    *slot = copy;
    return 0;
}

static int init_message_field(PyOnnxioMessage *self, const onnxio_field_desc *f, PyObject *value)
{
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        onnxio_message *c = pyonnxio_message_get(self, 1);
        if (!c) return -1;
        PyObject *it = PyObject_GetIter(value);
        if (!it) return -1;
        PyObject *item;
        while ((item = PyIter_Next(it))) {
            PyObject *m = pyonnxio_coerce_message(self->st, item); /* an onnx package message too */
            Py_DECREF(item);
            int rc = m ? append_message_item(self, c, f, m) : -1;
            Py_XDECREF(m);
            if (rc < 0) {
                Py_DECREF(it);
                return -1;
            }
        }
        Py_DECREF(it);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *coerced = pyonnxio_coerce_message(self->st, value); /* an onnx package message too */
    if (!coerced) return -1;
    value = coerced;
    PyObject *sub = pyonnxio_message_field(self, f);
    if (!sub) {
        Py_DECREF(coerced);
        return -1;
    }
    int rc;
    if (PyDict_Check(value)) {
        /* Even an empty dict makes the field present, as in protobuf. */
        rc = pyonnxio_message_get((PyOnnxioMessage *)sub, 1) ? pyonnxio_message_init_kwargs(sub, value) : -1;
    } else if (pyonnxio_message_desc_of(self->st, value) == f->message) {
        PyOnnxioMessage *s = (PyOnnxioMessage *)sub;
        onnxio_message *to = pyonnxio_message_get(s, 1);
        rc = -1;
        if (to) {
            pyonnxio_message_clear(to);
            rc = pyonnxio_message_merge_into(s, (PyOnnxioMessage *)value);
        }
    } else {
        PyErr_Format(PyExc_TypeError,
                     "Parameter to initialize message field must be dict or instance of same class: expected %s got "
                     "%.200s.",
                     f->message->full_name, Py_TYPE(value)->tp_name);
        rc = -1;
    }
    Py_DECREF(sub);
    Py_DECREF(coerced);
    return rc;
}

static int init_kwargs(PyOnnxioMessage *self, PyObject *kwargs);

/* Nested dicts (TypeProto(sequence_type={"elem_type": {...}})) recurse
 * here as deep as the caller nested them: Python's recursion limit bounds
 * it, with RecursionError, as for any nested structure Python walks. */
int pyonnxio_message_init_kwargs(PyObject *obj, PyObject *kwargs)
{
    if (Py_EnterRecursiveCall(" while initializing a message from nested dicts")) return -1;
    int rc = init_kwargs((PyOnnxioMessage *)obj, kwargs);
    Py_LeaveRecursiveCall();
    return rc;
}

static int init_kwargs(PyOnnxioMessage *self, PyObject *kwargs)
{
    const onnxio_message_desc *d = pyonnxio_desc_of(self);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        const onnxio_field_desc *f = pyonnxio_field_named(d, key, NULL);
        if (!f) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "Protocol message %s has no \"%S\" field.", pyonnxio_short_name(d), key);
            return -1;
        }
        if (value == Py_None) continue; /* protobuf: None leaves the field unset */
        int rc;
        if (f->kind == ONNXIO_KIND_MESSAGE) {
            rc = init_message_field(self, f, value);
        } else if (f->label >= ONNXIO_LABEL_REPEATED) {
            rc = pyonnxio_values_store(self, f, value, 0); /* the container's extend */
        } else {
            rc = pyonnxio_field_set_value(self, f, value);
        }
        if (rc < 0) return -1;
    }
    return 0;
}

int pyonnxio_message_tp_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (args && PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError, "No positional arguments allowed");
        return -1;
    }
    return kwargs ? pyonnxio_message_init_kwargs(self, kwargs) : 0;
}
