/* safetensors.c: the extension's entry points for .safetensors files
 * (onnxio.safetensors calls them). Every rule of the format is the C
 * library's (src/formats/safetensors.c); this file converts arguments and releases
 * the GIL. */
#include "errors.h"
#include "gil.h"
#include "message.h"
#include "pyonnxio.h"

/* A safetensors call, made without the GIL. */
typedef struct st_call {
    void *msg;
    const char *path;
    const onnxio_safetensors_options *o;
} st_call;

static onnxio_status load_into_run(void *ctx)
{
    st_call *c = ctx;
    return onnxio_safetensors_load_into(c->msg, c->path, c->o);
}

static onnxio_status save_run(void *ctx)
{
    st_call *c = ctx;
    return onnxio_safetensors_save(c->msg, c->path, c->o);
}

/* A sequence of str (or None) as `count` NUL-terminated UTF-8 strings:
 * *keep holds the bytes objects they point into (a tuple), *out the
 * PyMem_Malloc'd array. 0, or -1 with an exception. */
static int utf8_list(PyObject *seq, const char *what, PyObject **keep, const char ***out, size_t *count)
{
    *keep = NULL;
    *out = NULL;
    *count = 0;
    if (!seq || seq == Py_None) return 0;
    if (PyUnicode_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of str, not a str", what);
        return -1;
    }
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject *tuple = PyTuple_New(n);
    const char **arr = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *arr);
    if (!tuple || !arr) {
        Py_DECREF(fast);
        Py_XDECREF(tuple);
        PyMem_Free(arr);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s must hold str, not %.200s", what, Py_TYPE(item)->tp_name);
            goto fail;
        }
        PyObject *b = PyUnicode_AsUTF8String(item);
        if (!b) goto fail;
        if ((Py_ssize_t)strlen(PyBytes_AS_STRING(b)) != PyBytes_GET_SIZE(b)) {
            Py_DECREF(b);
            PyErr_Format(PyExc_ValueError, "%s: %R holds a NUL character", what, item);
            goto fail;
        }
        PyTuple_SET_ITEM(tuple, i, b);
        arr[i] = PyBytes_AS_STRING(b);
    }
    Py_DECREF(fast);
    *keep = tuple;
    *out = arr;
    *count = (size_t)n;
    return 0;
fail:
    Py_DECREF(fast);
    Py_DECREF(tuple);
    PyMem_Free(arr);
    return -1;
}

/* The ModelProto behind `obj`, or NULL with TypeError. */
static PyOnnxioMessage *as_model(pyonnxio_state *st, PyObject *obj)
{
    if (pyonnxio_message_desc_of(st, obj) != &onnxio_desc_ModelProto) {
        PyErr_Format(PyExc_TypeError, "model must be an onnxio.ModelProto, not %.200s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return (PyOnnxioMessage *)obj;
}

const char pyonnxio_safetensors_load_into_doc[] =
    "_safetensors_load_into(model, path, *, names=None, no_copy=False, allow_unknown=False, num_threads=0)\n"
    "Fills initializers of model.graph by name from the .safetensors file at `path`\n"
    "(onnxio_safetensors_load_into): names=None loads every tensor of the file (a tensor no initializer has\n"
    "raises DecodeError unless allow_unknown); each initializer must have the tensor's type and shape. With\n"
    "no_copy, payloads point into a private mapping of the file. On error the model is unchanged. The GIL\n"
    "is released.";

PyObject *pyonnxio_safetensors_load_into(PyObject *self, PyObject *args, PyObject *kw)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    static char *kwlist[] = {"model", "path", "names", "no_copy", "allow_unknown", "num_threads", NULL};
    PyObject *obj, *path = NULL, *names = Py_None;
    int no_copy = 0, allow_unknown = 0, num_threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&|$Oppi:_safetensors_load_into", kwlist, &obj,
                                     PyUnicode_FSConverter, &path, &names, &no_copy, &allow_unknown, &num_threads))
        return NULL;
    PyOnnxioMessage *m = as_model(st, obj);
    PyObject *keep = NULL;
    onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
    const char **arr = NULL;
    if (!m || utf8_list(names, "names", &keep, &arr, &o.name_count) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    o.names = names == Py_None ? NULL : arr;
    o.no_copy = no_copy;
    o.allow_unknown = allow_unknown;
    o.num_threads = num_threads;
    void *msg = pyonnxio_message_get(m, 1);
    onnxio_status s = ONNXIO_OK;
    if (msg) {
        st_call c = {msg, PyBytes_AS_STRING(path), &o};
        if (pyonnxio_call_unlocked(st, m->arena, load_into_run, &c, &s) < 0) msg = NULL;
    }
    PyMem_Free(arr);
    Py_XDECREF(keep);
    Py_DECREF(path);
    if (!msg) return NULL;
    if (s) return pyonnxio_raise(st, s);
    Py_RETURN_NONE;
}

const char pyonnxio_safetensors_save_doc[] =
    "_safetensors_save(model, path, *, names=None, metadata=None, fsync=True, num_threads=0, max_expansion=0)\n"
    "Writes initializers of model.graph (names=None: all) as a .safetensors file at `path`, atomically\n"
    "(onnxio_safetensors_save), with `metadata` (a dict of str) as __metadata__. The model is not\n"
    "modified. The GIL is released.";

PyObject *pyonnxio_safetensors_save(PyObject *self, PyObject *args, PyObject *kw)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    static char *kwlist[] = {"model", "path", "names", "metadata", "fsync", "num_threads", "max_expansion", NULL};
    PyObject *obj, *path = NULL, *names = Py_None, *metadata = Py_None;
    int fsync = 1, num_threads = 0;
    unsigned long long max_expansion = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&|$OOpiK:_safetensors_save", kwlist, &obj, PyUnicode_FSConverter,
                                     &path, &names, &metadata, &fsync, &num_threads, &max_expansion))
        return NULL;
    PyOnnxioMessage *m = as_model(st, obj);
    PyObject *keep = NULL, *keep_meta = NULL, *flat = NULL;
    const char **arr = NULL, **meta = NULL;
    onnxio_safetensors_options o = ONNXIO_SAFETENSORS_OPTIONS_INIT;
    PyObject *result = NULL;
    if (!m || utf8_list(names, "names", &keep, &arr, &o.name_count) < 0) goto done;
    o.names = names == Py_None ? NULL : arr;
    if (metadata != Py_None) {
        if (!PyDict_Check(metadata)) {
            PyErr_Format(PyExc_TypeError, "metadata must be a dict of str to str, not %.200s",
                         Py_TYPE(metadata)->tp_name);
            goto done;
        }
        if (!(flat = PyList_New(0))) goto done;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(metadata, &pos, &k, &v))
            if (PyList_Append(flat, k) < 0 || PyList_Append(flat, v) < 0) goto done;
        size_t count;
        if (utf8_list(flat, "metadata", &keep_meta, &meta, &count) < 0) goto done;
        o.metadata = meta;
        o.metadata_count = count / 2;
    }
    o.fsync = fsync ? ONNXIO_DEFAULT : ONNXIO_OFF;
    o.num_threads = num_threads;
    o.max_expansion = max_expansion;
    void *msg = pyonnxio_message_get(m, 1);
    if (!msg) goto done;
    st_call c = {msg, PyBytes_AS_STRING(path), &o};
    onnxio_status s;
    if (pyonnxio_call_unlocked(st, m->arena, save_run, &c, &s) < 0) goto done;
    if (s) {
        pyonnxio_raise_writing(st, s);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(arr);
    PyMem_Free(meta);
    Py_XDECREF(keep);
    Py_XDECREF(keep_meta);
    Py_XDECREF(flat);
    Py_XDECREF(path);
    return result;
}
