/* A message's wire bytes: _serialize (pyonnxio_serialize, the GIL
 * released for a large message) and _unknown_fields (the unknown fields
 * kept by a parse, or those of wire bytes, in order). */
#include "pyonnxio.h"

/* ---- _serialize ---------------------------------------------------------- */

const char pyonnxio_wire_serialize_doc[] =
    "_serialize(message) -> bytes\n"
    "The protobuf wire bytes of `message` (what libprotobuf's SerializeToString gives), made with the\n"
    "GIL released unless it is known to be small. EncodeError for a payload that was skipped at\n"
    "load, or a tree nested deeper than the reader's default max_depth (100).";

PyObject *pyonnxio_wire_serialize(PyObject *self, PyObject *obj)
{
    (void)self;
    PyOnnxioMessage *m = pyonnxio_as_message(obj, NULL, "message");
    if (!m) return NULL;
    onnxio_arena *keep;
    void *msg = pyonnxio_message_for_read(m, pyonnxio_message_desc_of(obj), &keep);
    if (!msg) return NULL;
    PyObject *out = pyonnxio_serialize(msg, keep);
    onnxio_arena_unref(keep);
    return out;
}

/* ---- unknown fields ----------------------------------------------------------- */

const char pyonnxio_wire_unknown_fields_doc[] =
    "_unknown_fields(message_or_bytes) -> list of (field_number, wire_type, data)\n"
    "The unknown fields of a message (or of wire bytes: a group's contents), in order\n"
    "(onnxio_unknown_field_next): data is an int for wire types 0, 1 and 5, bytes for 2 and for a\n"
    "group's (3) contents. DecodeError when bytes given are not wire format.";

PyObject *pyonnxio_wire_unknown_fields(PyObject *self, PyObject *obj)
{
    (void)self;
    Py_buffer view;
    int has_view = 0;
    const uint8_t *data;
    size_t size;
    onnxio_arena *keep = NULL;
    if (pyonnxio_message_desc_of(obj)) {
        PyOnnxioMessage *m = pyonnxio_as_message(obj, NULL, "message");
        if (!m) return NULL;
        const onnxio_message *msg = pyonnxio_message_for_read(m, pyonnxio_message_desc_of(obj), &keep);
        if (!msg) return NULL;
        data = msg->unknown.data;
        size = msg->unknown.size;
    } else {
        if (PyObject_GetBuffer(obj, &view, PyBUF_CONTIG_RO) < 0) return NULL;
        has_view = 1;
        data = view.buf;
        size = (size_t)view.len;
    }
    PyObject *list = PyList_New(0);
    size_t offset = 0;
    onnxio_unknown_field f;
    int r;
    while (list && (r = onnxio_unknown_field_next(data, size, &offset, &f)) != 0) {
        if (r < 0) {
            Py_CLEAR(list);
            pyonnxio_raise(ONNXIO_ERR_DECODE);
            break;
        }
        PyObject *value = f.wire_type == 2 || f.wire_type == 3
                              ? PyBytes_FromStringAndSize((const char *)f.data, (Py_ssize_t)f.size)
                              : PyLong_FromUnsignedLongLong(f.value);
        PyObject *item = value ? Py_BuildValue("(IiN)", f.number, (int)f.wire_type, value) : NULL;
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    if (has_view) PyBuffer_Release(&view);
    onnxio_arena_unref(keep);
    return list;
}

