/* onnxio.Message, the base class of every message class: the protobuf
 * message methods (presence, oneofs, clear, copy and merge, parse and
 * serialize, unknown fields, copy and pickle), str and repr in protobuf's
 * text format, and comparison (a message of the onnx package included).
 * Its slots for lifetime are message.c's, its tp_init construct.c's; parses
 * and serializations are wire.c's. */
#include "coerce.h"
#include "construct.h"
#include "errors.h"
#include "fields.h"
#include "message_methods.h"
#include "wire.h"

/* ---- methods ---------------------------------------------------------- */

/* The present member of the oneof of `f` in `c`, or NULL. */
static const onnxio_field_desc *oneof_case(const onnxio_message *c, const onnxio_field_desc *f)
{
    const onnxio_message_desc *d = c->desc;
    for (size_t i = 0; i < d->field_count; i++) {
        const onnxio_field_desc *g = &d->fields[i];
        if (g->oneof == f->oneof && onnxio_field_present(c, g)) return g;
    }
    return NULL;
}

static int check_same_class(PyOnnxioMessage *self, PyObject *other, const char *method)
{
    const onnxio_message_desc *od = pyonnxio_message_desc_of(self->st, other);
    if (od && od == pyonnxio_desc_of(self)) return 0;
    PyErr_Format(PyExc_TypeError, "Parameter to %s() must be instance of same class: expected %s got %.200s.",
                 method, pyonnxio_desc_of(self)->full_name, Py_TYPE(other)->tp_name);
    return -1;
}

static PyObject *m_HasField(PyOnnxioMessage *self, PyObject *name)
{
    const onnxio_message_desc *d = pyonnxio_desc_of(self);
    int is_oneof;
    const onnxio_field_desc *f = pyonnxio_field_named(d, name, &is_oneof);
    if (!f) return NULL;
    if (f->label >= ONNXIO_LABEL_REPEATED)
        return PyErr_Format(PyExc_ValueError, "Field %s.%s does not have presence.", d->full_name, f->name);
    onnxio_message *c = pyonnxio_message_read(self);
    if (is_oneof) return PyBool_FromLong(oneof_case(c, f) != NULL);
    return PyBool_FromLong(onnxio_field_present(c, f));
}

/* ClearField and Clear are writes, as in protobuf (upb and the pure-Python
 * implementation alike): on a lazy sub-message they make it, and its
 * parents, present first, even when the field name is refused
 * (m.graph.ClearField("node") leaves m.graph present; onnx_ir relies on
 * it to write an empty TensorShapeProto). */
static PyObject *m_ClearField(PyOnnxioMessage *self, PyObject *name)
{
    onnxio_message *c = pyonnxio_message_get(self, 1);
    if (!c) return NULL;
    int is_oneof;
    const onnxio_field_desc *f = pyonnxio_field_named(pyonnxio_desc_of(self), name, &is_oneof);
    if (!f) return NULL;
    if (is_oneof) f = oneof_case(c, f);
    if (f) pyonnxio_field_unlink(c, f);
    Py_RETURN_NONE;
}

static PyObject *m_WhichOneof(PyOnnxioMessage *self, PyObject *name)
{
    const onnxio_message_desc *d = pyonnxio_desc_of(self);
    int is_oneof;
    const onnxio_field_desc *f = pyonnxio_field_named(d, name, &is_oneof);
    if (!f) return NULL;
    if (!is_oneof) return PyErr_Format(PyExc_ValueError, "Expected a oneof name, but got field name %s.", f->name);
    const onnxio_field_desc *g = oneof_case(pyonnxio_message_read(self), f);
    if (!g) Py_RETURN_NONE;
    return PyUnicode_FromString(g->name);
}

static PyObject *m_ListFields(PyOnnxioMessage *self, PyObject *unused)
{
    onnxio_message *c = pyonnxio_message_read(self);
    PyObject **descs = pyonnxio_field_descriptors(self->st, c->desc);
    if (!descs) {
        PyErr_Format(PyExc_RuntimeError, "%s has no DESCRIPTOR yet (the onnxio package installs them)",
                     c->desc->full_name);
        return NULL;
    }
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (size_t i = 0; i < c->desc->field_count; i++) {
        const onnxio_field_desc *f = &c->desc->fields[i];
        if (!onnxio_field_present(c, f)) continue;
        PyObject *v = pyonnxio_field_get(self, (void *)f);
        PyObject *pair = v ? PyTuple_Pack(2, descs[i], v) : NULL;
        Py_XDECREF(v);
        if (!pair || PyList_Append(list, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(pair);
    }
    return list;
}

static PyObject *m_Clear(PyOnnxioMessage *self, PyObject *unused)
{
    onnxio_message *c = pyonnxio_message_get(self, 1); /* a write: see m_ClearField */
    if (!c) return NULL;
    pyonnxio_message_clear(c);
    Py_RETURN_NONE;
}

static PyObject *m_SetInParent(PyOnnxioMessage *self, PyObject *unused)
{
    if (!pyonnxio_message_get(self, 1)) return NULL;
    Py_RETURN_NONE;
}

static PyObject *copy_from(PyOnnxioMessage *self, PyObject *other)
{
    if (check_same_class(self, other, "CopyFrom") < 0) return NULL;
    PyOnnxioMessage *src = (PyOnnxioMessage *)other;
    if (src == self || (self->msg && src->msg == self->msg)) Py_RETURN_NONE;
    onnxio_message *to = pyonnxio_message_get(self, 1);
    if (!to) return NULL;
    void *from = pyonnxio_message_read(src);
    if (src->arena == self->arena) { /* src may contain self: copy it before clearing */
        from = pyonnxio_message_clone(self->st, self->arena, from);
        if (!from) return NULL;
    }
    pyonnxio_message_clear(to);
    onnxio_status s = onnxio_message_merge(self->arena, to, from);
    if (s) return pyonnxio_raise(self->st, s);
    Py_RETURN_NONE;
}

static PyObject *merge_from(PyOnnxioMessage *self, PyObject *other)
{
    if (check_same_class(self, other, "MergeFrom") < 0) return NULL;
    if (pyonnxio_message_merge_into(self, (PyOnnxioMessage *)other) < 0) return NULL;
    Py_RETURN_NONE;
}

/* CopyFrom and MergeFrom take the onnx package's messages too. */
static PyObject *m_CopyFrom(PyOnnxioMessage *self, PyObject *other)
{
    PyObject *o = pyonnxio_coerce_message(self->st, other);
    PyObject *r = o ? copy_from(self, o) : NULL;
    Py_XDECREF(o);
    return r;
}

static PyObject *m_MergeFrom(PyOnnxioMessage *self, PyObject *other)
{
    PyObject *o = pyonnxio_coerce_message(self->st, other);
    PyObject *r = o ? merge_from(self, o) : NULL;
    Py_XDECREF(o);
    return r;
}

static PyObject *m_MergeFromString(PyOnnxioMessage *self, PyObject *data)
{
    Py_ssize_t n = pyonnxio_parse_merge(self, data, 0, NULL);
    return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

static PyObject *m_ParseFromString(PyOnnxioMessage *self, PyObject *data)
{
    Py_ssize_t n = pyonnxio_parse_merge(self, data, 1, NULL);
    return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

static PyObject *serialize(PyOnnxioMessage *self)
{
    void *c = pyonnxio_message_get(self, 0);
    if (!c) return PyBytes_FromStringAndSize("", 0); /* lazy: empty */
    return pyonnxio_serialize(self->st, c, self->arena);
}

static PyObject *m_SerializeToString(PyOnnxioMessage *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"deterministic", NULL};
    PyObject *deterministic = NULL; /* accepted and ignored: the output is always deterministic */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:SerializeToString", kwlist, &deterministic)) return NULL;
    return serialize(self);
}

static PyObject *m_ByteSize(PyOnnxioMessage *self, PyObject *unused)
{
    void *c = pyonnxio_message_get(self, 0);
    uint64_t size = c ? onnxio_serialized_size(c) : 0;
    if (size == ONNXIO_SIZE_TOO_DEEP) return pyonnxio_raise_writing(self->st, ONNXIO_ERR_DEPTH);
    return PyLong_FromUnsignedLongLong(size);
}

static PyObject *m_IsInitialized(PyObject *self, PyObject *args)
{
    Py_RETURN_TRUE; /* proto2 ONNX has no required fields */
}

static PyObject *m_FindInitializationErrors(PyObject *self, PyObject *unused)
{
    return PyList_New(0);
}

static int drop_unknown(onnxio_message *msg, void *ctx)
{
    (void)ctx;
    msg->unknown.size = 0;
    return 0;
}

static PyObject *m_DiscardUnknownFields(PyOnnxioMessage *self, PyObject *unused)
{
    onnxio_message *c = pyonnxio_message_get(self, 0);
    if (c && pyonnxio_walk(c, drop_unknown, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

/* The unknown fields, as onnxio.unknown_fields.UnknownFieldSet lists them. */
static PyObject *m_UnknownFields(PyOnnxioMessage *self, PyObject *unused)
{
    (void)unused;
    PyObject *mod = PyImport_ImportModule("onnxio.unknown_fields");
    if (!mod) return NULL;
    PyObject *r = PyObject_CallMethod(mod, "UnknownFieldSet", "O", (PyObject *)self);
    Py_DECREF(mod);
    return r;
}

/* A deep copy as a new top-level message of the same class (protobuf's
 * copy.copy and copy.deepcopy both copy deeply). */
static PyObject *m_deepcopy(PyOnnxioMessage *self, PyObject *args)
{
    PyOnnxioMessage *o =
        (PyOnnxioMessage *)pyonnxio_message_new_of_type(self->st, Py_TYPE(self), pyonnxio_desc_of(self));
    if (!o) return NULL;
    onnxio_status s = onnxio_message_merge(o->arena, o->msg, pyonnxio_message_read(self));
    if (s) {
        Py_DECREF(o);
        return pyonnxio_raise(self->st, s);
    }
    return (PyObject *)o;
}

static PyObject *m_reduce(PyOnnxioMessage *self, PyObject *unused)
{
    PyObject *bytes = serialize(self);
    if (!bytes) return NULL;
    return Py_BuildValue("(O(){sN})", (PyObject *)Py_TYPE(self), "serialized", bytes);
}

static PyObject *m_setstate(PyOnnxioMessage *self, PyObject *state)
{
    PyObject *data = PyDict_Check(state) ? PyDict_GetItemString(state, "serialized") : NULL;
    if (!data) return PyErr_Format(PyExc_TypeError, "bad pickle state for %s", pyonnxio_desc_of(self)->full_name);
    if (pyonnxio_parse_merge(self, data, 1, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *message_str(PyOnnxioMessage *self)
{
    onnxio_buffer *buf = NULL;
    onnxio_status s = onnxio_text_format(pyonnxio_message_read(self), NULL, &buf);
    if (s) return pyonnxio_raise_writing(self->st, s); /* EncodeError past ONNXIO_MAX_DEPTH */
    PyObject *r = PyUnicode_DecodeUTF8((const char *)onnxio_buffer_data(buf), (Py_ssize_t)onnxio_buffer_size(buf),
                                       "replace");
    onnxio_buffer_unref(buf);
    return r;
}

/* `a` is a message: the slot is called with an object of its class first
 * (the reflected comparison too). */
static PyObject *message_richcompare(PyObject *a, PyObject *b, int op)
{
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    pyonnxio_state *st = ((PyOnnxioMessage *)a)->st;
    const onnxio_message_desc *da = pyonnxio_message_desc_of(st, a), *db = pyonnxio_message_desc_of(st, b);
    if (!da) Py_RETURN_NOTIMPLEMENTED;
    PyObject *other = NULL;
    if (!db) {
        /* A message of the onnx package equals the onnxio message of the
         * same class and contents (compared as onnxio messages). */
        if (!(other = pyonnxio_coerce_message(st, b))) return NULL;
        db = pyonnxio_message_desc_of(st, other);
        if (!db) {
            Py_DECREF(other);
            Py_RETURN_NOTIMPLEMENTED;
        }
        b = other;
    }
    PyObject *r;
    if (da != db) r = PyBool_FromLong(op == Py_NE);
    else {
        /* Any depth: the library compares with a heap stack; -1 is out of memory. */
        int eq = onnxio_message_equal(pyonnxio_message_read((PyOnnxioMessage *)a),
                                      pyonnxio_message_read((PyOnnxioMessage *)b));
        r = eq < 0 ? PyErr_NoMemory() : PyBool_FromLong(op == Py_EQ ? eq : !eq);
    }
    Py_XDECREF(other);
    return r;
}

/* `message.__name__`: the class's name, as upb's messages answer it (pytest
 * names parameters by it). */
static PyObject *message_name(PyObject *self, void *closure)
{
    (void)closure;
    return PyObject_GetAttrString((PyObject *)Py_TYPE(self), "__name__");
}

static PyGetSetDef message_getset[] = {
    {"__name__", message_name, NULL, "The class's name (as protobuf's messages give it).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef message_methods[] = {
    {"HasField", (PyCFunction)m_HasField, METH_O,
     "HasField(field_name) -> bool: whether a singular field (or a oneof, by its name) is set. ValueError for a "
     "repeated or unknown field."},
    {"ClearField", (PyCFunction)m_ClearField, METH_O,
     "ClearField(field_name): unsets a field (or the set member of a oneof). Sub-messages are unlinked: Python "
     "objects still referring to them keep their contents. A write, as in protobuf: a lazily read sub-message "
     "becomes present in its parent."},
    {"WhichOneof", (PyCFunction)m_WhichOneof, METH_O,
     "WhichOneof(oneof_name) -> str or None: the name of the oneof's set field."},
    {"ListFields", (PyCFunction)m_ListFields, METH_NOARGS,
     "ListFields() -> list of (FieldDescriptor, value) for the set fields, in field-number order."},
    {"Clear", (PyCFunction)m_Clear, METH_NOARGS,
     "Clear(): unsets every field (sub-messages are unlinked); a lazily read sub-message becomes present."},
    {"SetInParent", (PyCFunction)m_SetInParent, METH_NOARGS,
     "SetInParent(): makes a lazily read sub-message present in its parent."},
    {"CopyFrom", (PyCFunction)m_CopyFrom, METH_O,
     "CopyFrom(other): makes this message a deep copy of `other` (same class; TypeError otherwise). Payloads are "
     "shared, not copied."},
    {"MergeFrom", (PyCFunction)m_MergeFrom, METH_O,
     "MergeFrom(other): protobuf merge: set scalars overwrite, repeated fields append, messages merge."},
    {"MergeFromString", (PyCFunction)m_MergeFromString, METH_O,
     "MergeFromString(data) -> int: parses bytes (any buffer) into this message, merging; returns len(data). "
     "onnxio.DecodeError for malformed bytes. The GIL is released while parsing."},
    {"ParseFromString", (PyCFunction)m_ParseFromString, METH_O,
     "ParseFromString(data) -> int: clears this message, then MergeFromString(data)."},
    {"ParsePartialFromString", (PyCFunction)m_ParseFromString, METH_O, "Same as ParseFromString (no required fields)."},
    {"FromString", (PyCFunction)pyonnxio_message_from_string, METH_O | METH_CLASS,
     "FromString(data) -> message: a new message parsed from bytes."},
    {"SerializeToString", (PyCFunction)(void (*)(void))m_SerializeToString, METH_VARARGS | METH_KEYWORDS,
     "SerializeToString(deterministic=None) -> bytes: the protobuf wire format, byte for byte what libprotobuf "
     "writes. onnxio.EncodeError for a payload that was never loaded."},
    {"SerializePartialToString", (PyCFunction)(void (*)(void))m_SerializeToString, METH_VARARGS | METH_KEYWORDS,
     "Same as SerializeToString (no required fields)."},
    {"ByteSize", (PyCFunction)m_ByteSize, METH_NOARGS, "ByteSize() -> int: the serialized size in bytes."},
    {"IsInitialized", (PyCFunction)m_IsInitialized, METH_VARARGS, "IsInitialized() -> True (ONNX has no required fields)."},
    {"FindInitializationErrors", (PyCFunction)m_FindInitializationErrors, METH_NOARGS, "Always []."},
    {"UnknownFields", (PyCFunction)m_UnknownFields, METH_NOARGS,
     "UnknownFields(): the unknown fields, an onnxio.unknown_fields.UnknownFieldSet (field_number, wire_type,\n"
     "data of each, in the order read)."},
    {"DiscardUnknownFields", (PyCFunction)m_DiscardUnknownFields, METH_NOARGS,
     "DiscardUnknownFields(): drops unknown fields here and in every sub-message."},
    {"__deepcopy__", (PyCFunction)m_deepcopy, METH_VARARGS, "A deep copy in a new arena."},
    {"__copy__", (PyCFunction)m_deepcopy, METH_VARARGS, "A deep copy in a new arena (as protobuf)."},
    {"__reduce__", (PyCFunction)m_reduce, METH_NOARGS, "Pickling: (class, (), {'serialized': bytes}), as protobuf."},
    {"__setstate__", (PyCFunction)m_setstate, METH_O, "Unpickling: parses state['serialized']."},
    {NULL, NULL, 0, NULL},
};

/* `name in message`: HasField, as protobuf's Message.__contains__ for a
 * message that is not Struct or ListValue. */
static int message_contains(PyObject *self, PyObject *name)
{
    PyObject *r = m_HasField((PyOnnxioMessage *)self, name);
    if (!r) return -1;
    int has = r == Py_True;
    Py_DECREF(r);
    return has;
}

/* Never called: messages are not tracked by the garbage collector (they
 * form no cycles: a view holds its parent, never the reverse). Defining
 * it keeps the type out of the collector when its base,
 * google.protobuf.message.Message, is a (collected) Python class: a
 * type inherits Py_TPFLAGS_HAVE_GC only when it defines neither
 * tp_traverse nor tp_clear. */
static int message_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static PyType_Slot base_slots[] = {
    {Py_tp_traverse, message_traverse},
    {Py_tp_free, PyObject_Free},
    {Py_sq_contains, message_contains},
    {Py_tp_dealloc, pyonnxio_message_dealloc},
    {Py_tp_new, pyonnxio_message_tp_new},
    {Py_tp_init, pyonnxio_message_tp_init},
    {Py_tp_methods, message_methods},
    {Py_tp_str, message_str},
    {Py_tp_repr, message_str},
    {Py_tp_richcompare, message_richcompare},
    {Py_tp_getset, message_getset},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_doc, "Base class of the onnxio message classes (the protobuf Message API over onnxio's C messages)."},
    {0, NULL},
};

PyType_Spec pyonnxio_message_base_spec = {
    "onnxio.Message", sizeof(PyOnnxioMessage), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, base_slots,
};
