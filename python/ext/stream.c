/* stream.c: the extension's entry point for streaming saves
 * (onnxio.save_streaming calls it). The rules are the C library's
 * (onnxio_save_streaming); this file pulls (name, buffer) pairs from a Python
 * iterator for the library's tensor source, with the GIL taken for each
 * pull and released while the bytes are written. */
#include "errors.h"
#include "gil.h"
#include "message.h"
#include "pyonnxio.h"

/* The source's state: the iterator, the buffer lent to the library (held
 * until the next pull), and the exception that stopped the save. */
typedef struct py_source {
    PyObject *iter;
    PyObject *name;   /* the current tensor's name (bytes, UTF-8) */
    Py_buffer view;   /* the current tensor's bytes */
    int has_view;
    PyObject *exc_type, *exc_value, *exc_tb;
} py_source;

static void drop_current(py_source *p)
{
    if (p->has_view) PyBuffer_Release(&p->view);
    p->has_view = 0;
    Py_CLEAR(p->name);
}

static int pull(void *user, onnxio_stream_tensor *out)
{
    py_source *p = user;
    PyGILState_STATE g = PyGILState_Ensure();
    int r = -1;
    drop_current(p);
    PyObject *item = PyIter_Next(p->iter);
    if (!item) {
        r = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    PyObject *name = NULL, *data = NULL;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_Format(PyExc_TypeError, "tensors must yield (name, buffer) pairs, not %.200s", Py_TYPE(item)->tp_name);
        Py_DECREF(item);
        goto done;
    }
    name = PyTuple_GET_ITEM(item, 0);
    data = PyTuple_GET_ITEM(item, 1);
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "a tensor name must be a str, not %.200s", Py_TYPE(name)->tp_name);
        Py_DECREF(item);
        goto done;
    }
    if (!(p->name = PyUnicode_AsUTF8String(name)) || PyObject_GetBuffer(data, &p->view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(item);
        goto done;
    }
    p->has_view = 1;
    Py_DECREF(item); /* the view holds the object */
    out->name = PyBytes_AS_STRING(p->name);
    out->data = p->view.buf;
    out->size = (uint64_t)p->view.len;
    r = 1;
done:
    if (r < 0) {
        PyErr_Fetch(&p->exc_type, &p->exc_value, &p->exc_tb);
        if (!p->exc_type) p->exc_type = Py_NewRef(PyExc_SystemError);
    }
    PyGILState_Release(g);
    return r;
}

const char pyonnxio_save_streaming_doc[] =
    "_save_streaming(model, path, tensors, *, num_threads=0, alignment=0, location=None, size_threshold=0,\n"
    "                one_file_per_tensor=False, max_file_size=0, checksum=False, max_depth=0, fsync=True,\n"
    "                digests=False)\n"
    "Saves `model` (a ModelProto whose placeholder initializers have no data) to `path`, the placeholders'\n"
    "bytes pulled from the iterator `tensors` of (name, C-contiguous buffer) pairs one at a time\n"
    "(onnxio_save_streaming); each buffer is written from its own memory and released at the next pull.\n"
    "The GIL is released while bytes are written. An exception raised by the iterator stops the save\n"
    "(every existing file left as it was) and propagates.";

/* The streaming save, made without the GIL (pull takes it for each
 * tensor). */
typedef struct stream_call {
    void *msg;
    const char *path;
    py_source *src;
    const onnxio_serialize_options *so;
} stream_call;

static onnxio_status stream_run(void *ctx)
{
    stream_call *c = ctx;
    return onnxio_save_streaming(c->msg, c->path, pull, c->src, c->so);
}

PyObject *pyonnxio_save_streaming(PyObject *self, PyObject *args, PyObject *kw)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    static char *kwlist[] = {"model",      "path",           "tensors",       "num_threads", "alignment",
                             "location",   "size_threshold", "one_file_per_tensor", "max_file_size", "checksum",
                             "max_depth",  "fsync",          "digests",       NULL};
    PyObject *model, *path = NULL, *tensors, *location = Py_None, *loc_bytes = NULL;
    onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
    unsigned long long alignment = 0, size_threshold = 0, max_file_size = 0;
    int one_file = 0, checksum = 0, fsync = 1, digests = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&O|$iKOKpKpipp:_save_streaming", kwlist, &model,
                                     PyUnicode_FSConverter, &path, &tensors, &so.num_threads, &alignment, &location,
                                     &size_threshold, &one_file, &max_file_size, &checksum, &so.max_depth, &fsync,
                                     &digests))
        return NULL;
    if (pyonnxio_message_desc_of(st, model) != &onnxio_desc_ModelProto) {
        PyErr_Format(PyExc_TypeError, "model must be an onnxio.ModelProto, not %.200s", Py_TYPE(model)->tp_name);
        Py_DECREF(path);
        return NULL;
    }
    if (location != Py_None && !PyUnicode_FSConverter(location, &loc_bytes)) {
        Py_DECREF(path);
        return NULL;
    }
    so.alignment = alignment;
    so.external_data.location = loc_bytes ? PyBytes_AS_STRING(loc_bytes) : NULL;
    so.external_data.size_threshold = size_threshold;
    so.external_data.all_tensors_to_one_file = one_file ? ONNXIO_OFF : ONNXIO_DEFAULT;
    so.external_data.max_file_size = max_file_size;
    so.external_data.checksum = checksum;
    so.digests = digests;
    so.fsync = fsync ? ONNXIO_ON : ONNXIO_OFF;
    py_source src = {0};
    if (!(src.iter = PyObject_GetIter(tensors))) {
        Py_DECREF(path);
        Py_XDECREF(loc_bytes);
        return NULL;
    }
    PyOnnxioMessage *m = (PyOnnxioMessage *)model;
    void *msg = pyonnxio_message_get(m, 1);
    if (!msg) {
        Py_DECREF(src.iter);
        Py_DECREF(path);
        Py_XDECREF(loc_bytes);
        return NULL;
    }
    stream_call c = {msg, PyBytes_AS_STRING(path), &src, &so};
    onnxio_status s;
    if (pyonnxio_call_unlocked(st, m->arena, stream_run, &c, &s) < 0) {
        Py_DECREF(src.iter);
        Py_DECREF(path);
        Py_XDECREF(loc_bytes);
        return NULL;
    }
    drop_current(&src);
    Py_DECREF(src.iter);
    Py_DECREF(path);
    Py_XDECREF(loc_bytes);
    if (src.exc_type) {
        PyErr_Restore(src.exc_type, src.exc_value, src.exc_tb);
        return NULL;
    }
    if (s) return pyonnxio_raise_writing(st, s);
    Py_RETURN_NONE;
}
