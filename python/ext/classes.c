/* The message classes: onnxio.Message, one heap type per message
 * descriptor of onnxio/proto.h (onnxio_all_messages) with one
 * PyGetSetDef per field, nested as in the schema (TensorProto.Segment), the
 * enum constants as class or module attributes, and the tables and
 * _install_descriptor that onnxio/_descriptors.py builds protobuf's
 * reflection API from. Nothing here names an ONNX field. */
#include <string.h>

#include "fields.h"
#include "message_methods.h"
#include "pyonnxio.h"

/* ---- reflection ------------------------------------------------------- */

static PyMethodDef reflection_functions[] = {
    {"_install_descriptor", pyonnxio_install_descriptor, METH_VARARGS,
     "_install_descriptor(cls, descriptor): sets cls.DESCRIPTOR (onnxio._descriptors builds it)."},
    {NULL, NULL, 0, NULL},
};

/* Publishes the schema tables and _install_descriptor. */
static int build_reflection_tables(PyObject *module)
{
    if (pyonnxio_schema_tables_add(module) < 0) return -1;
    return PyModule_AddFunctions(module, reflection_functions);
}

/* ---- the classes ------------------------------------------------------ */

static int set_attr(PyObject *o, const char *name, PyObject *v)
{
    if (!v) return -1;
    int rc = PyObject_SetAttrString(o, name, v);
    Py_DECREF(v);
    return rc;
}

/* Heap type names and getset tables must outlive the types: they are made
 * with each module object and never freed (one module object per process,
 * module.c). */
static PyTypeObject *make_class(PyObject *module, const onnxio_message_desc *d, PyObject *bases)
{
    PyGetSetDef *getset = PyMem_Calloc(d->field_count + 1, sizeof(PyGetSetDef));
    char *name = PyMem_Malloc(strlen(pyonnxio_short_name(d)) + sizeof "onnxio.");
    if (!getset || !name) {
        PyErr_NoMemory();
        return NULL;
    }
    strcpy(name, "onnxio.");
    strcat(name, pyonnxio_short_name(d));
    for (size_t i = 0; i < d->field_count; i++) {
        getset[i].name = d->fields[i].name;
        getset[i].get = (getter)pyonnxio_field_get;
        getset[i].set = (setter)pyonnxio_field_set;
        getset[i].closure = (void *)&d->fields[i];
    }
    PyType_Slot *slots = PyMem_Calloc(3, sizeof(PyType_Slot));
    PyType_Spec *spec = PyMem_Calloc(1, sizeof(PyType_Spec));
    if (!slots || !spec) {
        PyErr_NoMemory();
        return NULL;
    }
    slots[0].slot = Py_tp_getset;
    slots[0].pfunc = getset;
    static const char doc_fmt[] =
        "The ONNX message %s. Keyword arguments set fields as protobuf's constructor does (scalars, iterables "
        "for repeated fields, a message or a dict for message fields). Instances are views of C messages: "
        "see onnxio.Message.";
    size_t doc_size = sizeof doc_fmt + strlen(d->full_name);
    char *doc = PyMem_Malloc(doc_size);
    if (!doc) {
        PyErr_NoMemory();
        return NULL;
    }
    snprintf(doc, doc_size, doc_fmt, d->full_name);
    slots[1].slot = Py_tp_doc;
    slots[1].pfunc = doc;
    spec->name = name;
    spec->basicsize = 0; /* PyOnnxioMessage, inherited */
    spec->flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
    spec->slots = slots;
    return (PyTypeObject *)PyType_FromModuleAndSpec(module, spec, bases);
}

int pyonnxio_message_init(PyObject *module)
{
    PyObject *bases = NULL, *messages = NULL, *enums = NULL;
    int rc = -1;
    /* onnxio.Message derives from protobuf's google.protobuf.message.Message
     * when protobuf can be imported, as upb's message classes do: generic
     * code tells messages by isinstance(x, Message). That class is pure
     * Python with empty __slots__ (no instance layout of its own) and every
     * method of it that onnxio has is overridden here; those it lacks
     * (extensions) raise NotImplementedError, as its base does. */
    PyObject *pb_bases = NULL, *pb = PyImport_ImportModule("google.protobuf.message");
    if (pb) {
        PyObject *pb_message = PyObject_GetAttrString(pb, "Message");
        Py_DECREF(pb);
        if (pb_message && PyType_Check(pb_message)) pb_bases = PyTuple_Pack(1, pb_message);
        Py_XDECREF(pb_message);
    }
    if (!pb_bases) PyErr_Clear(); /* no protobuf: onnxio.Message derives from object */
    pyonnxio_state *st = pyonnxio_state_of_module(module);
    st->message_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &pyonnxio_message_base_spec, pb_bases);
    Py_XDECREF(pb_bases);
    if (!st->message_type || PyModule_AddObjectRef(module, "Message", (PyObject *)st->message_type) < 0)
        return -1;
    st->message_new = st->message_type->tp_new;
    st->message_init = st->message_type->tp_init;
    if (pyonnxio_registry_init(st) < 0) return -1;
    bases = PyTuple_Pack(1, (PyObject *)st->message_type);
    messages = PyDict_New();
    enums = PyDict_New();
    if (!bases || !messages || !enums) goto done;
    for (size_t i = 0; i < onnxio_all_message_count; i++) {
        const onnxio_message_desc *d = onnxio_all_messages[i];
        PyTypeObject *type = make_class(module, d, bases);
        if (!type) goto done;
        if (pyonnxio_registry_add(st, d, type) < 0) { /* the registry keeps the reference once added */
            Py_DECREF(type);
            goto done;
        }
        if (PyDict_SetItemString(messages, d->full_name, (PyObject *)type) < 0) goto done;
    }
    /* Nesting: "onnx.TensorProto.Segment" becomes TensorProto.Segment; a
     * top-level message goes into the module. */
    for (size_t i = 0; i < onnxio_all_message_count; i++) {
        PyTypeObject *type = pyonnxio_message_type(st, onnxio_all_messages[i]);
        const char *full = onnxio_all_messages[i]->full_name;
        const char *rel = strncmp(full, "onnx.", 5) == 0 ? full + 5 : full;
        const char *dot = strrchr(full, '.');
        PyObject *qual = PyUnicode_FromString(rel);
        if (set_attr((PyObject *)type, "__qualname__", qual) < 0) goto done;
        if (set_attr((PyObject *)type, "_enum_types", PyDict_New()) < 0) goto done;
        if (!strchr(rel, '.')) {
            if (PyModule_AddObjectRef(module, rel, (PyObject *)type) < 0) goto done;
            continue;
        }
        PyObject *parent_name = PyUnicode_FromStringAndSize(full, dot - full);
        PyObject *parent = parent_name ? PyDict_GetItemWithError(messages, parent_name) : NULL;
        Py_XDECREF(parent_name);
        if (!parent) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_SystemError, "onnxio: no parent message for %s", full);
            goto done;
        }
        if (PyObject_SetAttrString(parent, dot + 1, (PyObject *)type) < 0) goto done;
    }
    /* Enum constants: class attributes of the enclosing message
     * (TensorProto.FLOAT), module attributes for top-level enums. */
    for (size_t i = 0; i < onnxio_all_enum_count; i++) {
        const onnxio_enum_desc *en = onnxio_all_enums[i];
        const char *dot = strrchr(en->full_name, '.');
        PyObject *parent_name = PyUnicode_FromStringAndSize(en->full_name, dot - en->full_name);
        PyObject *holder = parent_name ? PyDict_GetItemWithError(messages, parent_name) : NULL;
        Py_XDECREF(parent_name);
        if (!holder && PyErr_Occurred()) goto done;
        if (!holder) holder = module;
        PyObject *values = PyTuple_New((Py_ssize_t)en->value_count);
        if (!values) goto done;
        for (size_t k = 0; k < en->value_count; k++) {
            PyObject *num = PyLong_FromLong(en->values[k].number);
            PyObject *pair = num ? Py_BuildValue("(sO)", en->values[k].name, num) : NULL;
            int bad = !pair || PyObject_SetAttrString(holder, en->values[k].name, num) < 0;
            Py_XDECREF(num);
            if (bad) {
                Py_XDECREF(pair);
                Py_DECREF(values);
                goto done;
            }
            PyTuple_SET_ITEM(values, (Py_ssize_t)k, pair);
        }
        int bad = PyDict_SetItemString(enums, en->full_name, values) < 0;
        Py_DECREF(values);
        if (bad) goto done;
        if (holder != module) {
            PyObject *types = PyObject_GetAttrString(holder, "_enum_types");
            PyObject *full = PyUnicode_FromString(en->full_name);
            bad = !types || !full || PyDict_SetItemString(types, dot + 1, full) < 0;
            Py_XDECREF(types);
            Py_XDECREF(full);
            if (bad) goto done;
        }
    }
    if (build_reflection_tables(module) < 0) goto done;
    if (PyModule_AddObjectRef(module, "_messages", messages) < 0) goto done;
    if (PyModule_AddObjectRef(module, "_enums", enums) < 0) goto done;
    rc = 0;
done:
    Py_XDECREF(bases);
    Py_XDECREF(messages);
    Py_XDECREF(enums);
    return rc;
}
