/* slice.c: the extension's entry points for tensor slices (onnxio.slices
 * calls them). Every rule (bounds, packing, where the bytes are) is the C
 * library's (src/api/slice.c); this file converts arguments, releases the GIL
 * and wraps a slice as a TensorProto whose raw_data holds it, so that
 * numpy_helper.to_array makes the array. */
#include "errors.h"
#include "gil.h"
#include "message.h"
#include "pyonnxio.h"

#define CAPSULE_NAME "onnxio.tensor_file"

/* The capsule's pointer. Reads release the GIL while they use `f`, so the
 * handle counts them (`readers`, changed only with the GIL held): a close
 * while reads are in flight marks it closing, refuses new calls, and the
 * last reader closes `f`. The capsule itself outlives every read (each
 * holds a reference to it through its arguments). */
typedef struct {
    onnxio_tensor_file *f; /* NULL once closed */
    Py_ssize_t readers;    /* calls using `f` with the GIL released */
    int closing;           /* close() was called */
} tensor_handle;

static onnxio_status close_run(void *ctx)
{
    onnxio_tensor_file_close(ctx);
    return ONNXIO_OK;
}

/* Closes the C handle, the GIL released (it joins nothing that takes the
 * GIL; closing unmaps and closes descriptors). */
static void handle_close_file(tensor_handle *h)
{
    onnxio_tensor_file *f = h->f;
    h->f = NULL;
    if (!f) return;
    onnxio_status s;
    pyonnxio_call_unlocked(NULL, NULL, close_run, f, &s);
}

static void capsule_free(PyObject *cap)
{
    tensor_handle *h = PyCapsule_GetPointer(cap, CAPSULE_NAME);
    if (!h) return;
    /* No reader can be in flight: each holds a reference to the capsule. */
    if (h->f) onnxio_tensor_file_close(h->f);
    PyMem_Free(h);
}

static tensor_handle *as_handle(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, CAPSULE_NAME)) {
        PyErr_SetString(PyExc_TypeError, "expected an opened tensor file (onnxio._onnxio._tensor_file_open)");
        return NULL;
    }
    tensor_handle *h = PyCapsule_GetPointer(cap, CAPSULE_NAME);
    if (!h->f || h->closing) {
        PyErr_SetString(PyExc_ValueError, "the tensor file is closed");
        return NULL;
    }
    return h;
}

static onnxio_tensor_file *as_file(PyObject *cap)
{
    tensor_handle *h = as_handle(cap);
    return h ? h->f : NULL;
}

/* A call that releases the GIL while it uses h->f: begin before releasing
 * it, end after taking it back (the GIL held for both). */
static void reader_begin(tensor_handle *h)
{
    h->readers++;
}

static void reader_end(tensor_handle *h)
{
    if (--h->readers == 0 && h->closing) handle_close_file(h);
}

const char pyonnxio_tensor_file_open_doc[] =
    "_tensor_file_open(path, *, num_threads=0, base_dir=None, max_expansion=0) -> capsule\n"
    "Opens a model file for slices (onnxio_tensor_file_open): its structure is parsed from a private\n"
    "mapping, no payload is read. The GIL is released.";

/* The open, made without the GIL. */
typedef struct open_call {
    const char *path;
    const onnxio_slice_options *opts;
    onnxio_tensor_file *f;
} open_call;

static onnxio_status open_run(void *ctx)
{
    open_call *c = ctx;
    return onnxio_tensor_file_open(c->path, c->opts, &c->f);
}

PyObject *pyonnxio_tensor_file_open(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "num_threads", "base_dir", "max_expansion", NULL};
    PyObject *path = NULL, *base = NULL;
    int threads = 0;
    unsigned long long expansion = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$iO&K:_tensor_file_open", kwlist, PyUnicode_FSConverter, &path,
                                     &threads, PyUnicode_FSConverter, &base, &expansion)) {
        Py_XDECREF(path);
        return NULL;
    }
    onnxio_slice_options opts = ONNXIO_SLICE_OPTIONS_INIT;
    opts.num_threads = threads;
    opts.base_dir = base ? PyBytes_AS_STRING(base) : NULL;
    opts.max_expansion = expansion;
    open_call c = {PyBytes_AS_STRING(path), &opts, NULL};
    onnxio_status s;
    pyonnxio_call_unlocked(NULL, NULL, open_run, &c, &s);
    Py_DECREF(path);
    Py_XDECREF(base);
    if (s) return pyonnxio_raise(pyonnxio_state_of_module(self), s);
    onnxio_tensor_file *f = c.f;
    tensor_handle *h = PyMem_Malloc(sizeof *h);
    if (!h) {
        onnxio_tensor_file_close(f);
        return PyErr_NoMemory();
    }
    h->f = f;
    h->readers = 0;
    h->closing = 0;
    PyObject *cap = PyCapsule_New(h, CAPSULE_NAME, capsule_free);
    if (!cap) {
        onnxio_tensor_file_close(f);
        PyMem_Free(h);
    }
    return cap;
}

const char pyonnxio_tensor_file_close_doc[] =
    "_tensor_file_close(capsule)\nCloses the file (views already made keep their mapping); calls made after it raise\n"
    "ValueError. Reads in flight on other threads finish first: the last of them closes the file.";

PyObject *pyonnxio_tensor_file_close(PyObject *self, PyObject *cap)
{
    (void)self;
    if (!PyCapsule_IsValid(cap, CAPSULE_NAME)) {
        PyErr_SetString(PyExc_TypeError, "expected an opened tensor file (onnxio._onnxio._tensor_file_open)");
        return NULL;
    }
    tensor_handle *h = PyCapsule_GetPointer(cap, CAPSULE_NAME);
    if (h->closing) Py_RETURN_NONE; /* closed twice */
    h->closing = 1;
    if (h->readers == 0) handle_close_file(h);
    Py_RETURN_NONE;
}

static PyObject *dims_tuple(const onnxio_TensorProto *t)
{
    PyObject *dims = PyTuple_New((Py_ssize_t)t->dims.size);
    for (size_t i = 0; dims && i < t->dims.size; i++) {
        PyObject *d = PyLong_FromLongLong((long long)t->dims.data[i]);
        if (!d) {
            Py_CLEAR(dims);
            break;
        }
        PyTuple_SET_ITEM(dims, (Py_ssize_t)i, d);
    }
    return dims;
}

static PyObject *tensor_info(const onnxio_TensorProto *t)
{
    PyObject *dims = dims_tuple(t);
    if (!dims) return NULL;
    PyObject *name = PyUnicode_DecodeUTF8(t->name.data ? t->name.data : "", (Py_ssize_t)t->name.size, "surrogateescape");
    PyObject *out = name ? Py_BuildValue("(OiO)", name, (int)t->data_type, dims) : NULL;
    Py_XDECREF(name);
    Py_DECREF(dims);
    return out;
}

const char pyonnxio_tensor_file_info_doc[] =
    "_tensor_file_info(capsule, name) -> (name, data_type, dims) | None\n"
    "The initializer `name` (onnxio_tensor_file_find), or None.";

PyObject *pyonnxio_tensor_file_info(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:_tensor_file_info", &cap, &name)) return NULL;
    onnxio_tensor_file *f = as_file(cap);
    if (!f) return NULL;
    const onnxio_TensorProto *t = onnxio_tensor_file_find(f, name);
    if (!t) Py_RETURN_NONE;
    return tensor_info(t);
}

const char pyonnxio_tensor_file_initializers_doc[] =
    "_tensor_file_initializers(capsule) -> [(name, data_type, dims), ...]\n"
    "The initializers of the main graph, in file order.";

PyObject *pyonnxio_tensor_file_initializers(PyObject *self, PyObject *cap)
{
    (void)self;
    onnxio_tensor_file *f = as_file(cap);
    if (!f) return NULL;
    const onnxio_GraphProto *g = onnxio_tensor_file_model(f)->graph;
    size_t n = g ? g->initializer.size : 0;
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *item = tensor_info(g->initializer.data[i]);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* `seq` of (start, stop) pairs as ranges (PyMem_Malloc'd). 0 or -1. */
static int ranges_from(PyObject *seq, onnxio_slice_range **out, size_t *rank)
{
    PyObject *fast = PySequence_Fast(seq, "ranges must be a sequence of (start, stop)");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    onnxio_slice_range *r = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *r);
    if (!r) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long a, b;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "LL;a range is (start, stop)", &a, &b)) {
            PyMem_Free(r);
            Py_DECREF(fast);
            return -1;
        }
        r[i].start = a;
        r[i].stop = b;
    }
    Py_DECREF(fast);
    *out = r;
    *rank = (size_t)n;
    return 0;
}

const char pyonnxio_tensor_file_read_doc[] =
    "_tensor_file_read(capsule, name, ranges, no_copy=False) -> (tensor, stats, is_view)\n"
    "Reads the slice `ranges` ((start, stop) per axis) of initializer `name` (onnxio_tensor_file_read; with\n"
    "no_copy, onnxio_tensor_file_view first: a view of the mapping when the slice is one contiguous run).\n"
    "`tensor` is a TensorProto of the same data_type whose dims are the ranges' lengths and whose\n"
    "raw_data is the slice; stats is (bytes, bytes_read, runs, payload_bytes). The GIL is released.";

/* The read of a slice, made without the GIL. */
typedef struct read_call {
    onnxio_tensor_file *f;
    const char *name;
    const onnxio_slice_range *ranges;
    size_t rank;
    int no_copy;
    const void *view;
    uint64_t view_size;
    onnxio_buffer *b;
    onnxio_slice_stats *stats;
} read_call;

static onnxio_status read_run(void *ctx)
{
    read_call *c = ctx;
    onnxio_status s = ONNXIO_OK;
    if (c->no_copy) s = onnxio_tensor_file_view(c->f, c->name, c->ranges, c->rank, &c->view, &c->view_size, &c->b);
    if (!s && !c->view) s = onnxio_tensor_file_read(c->f, c->name, c->ranges, c->rank, NULL, 0, &c->b, c->stats);
    return s;
}

/* The read of pyonnxio_tensor_file_read, `f` kept open by its caller. */
static PyObject *read_slice(pyonnxio_state *st, onnxio_tensor_file *f, const char *name, PyObject *seq, int no_copy)
{
    onnxio_slice_range *ranges;
    size_t rank;
    if (ranges_from(seq, &ranges, &rank) < 0) return NULL;
    onnxio_slice_stats stats = {sizeof stats, 0, 0, 0, 0};
    read_call c = {f, name, ranges, rank, no_copy, NULL, 0, NULL, &stats};
    onnxio_status s;
    pyonnxio_call_unlocked(st, NULL, read_run, &c, &s);
    if (s) {
        PyMem_Free(ranges);
        return pyonnxio_raise(st, s);
    }
    const void *view = c.view;
    uint64_t view_size = c.view_size;
    onnxio_buffer *b = c.b;
    const onnxio_TensorProto *src = onnxio_tensor_file_find(f, name);
    PyObject *obj = pyonnxio_message_new_root(st, &onnxio_desc_TensorProto);
    onnxio_TensorProto *t = obj ? pyonnxio_message_get((PyOnnxioMessage *)obj, 1) : NULL;
    PyOnnxioMessage *m = (PyOnnxioMessage *)obj;
    int ok = t != NULL;
    if (ok) {
        t->data_type = src->data_type;
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
        ok = onnxio_string_set(m->arena, &t->name, src->name.data ? src->name.data : "", src->name.size) == ONNXIO_OK;
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_name);
    }
    for (size_t i = 0; ok && i < rank; i++) {
        int64_t *d = onnxio_array_append(m->arena, &t->dims, sizeof *d);
        if (!d) ok = 0;
        else *d = ranges[i].stop - ranges[i].start;
    }
    PyMem_Free(ranges);
    if (!ok) {
        onnxio_buffer_unref(b);
        Py_XDECREF(obj);
        return obj ? PyErr_NoMemory() : NULL;
    }
    if (view) {
        onnxio_span_set(&t->raw_data, (uint8_t *)view, (size_t)view_size, b);
        stats.bytes = view_size;
        uint64_t payload = 0;
        onnxio_tensor_raw_size(src, &payload);
        stats.payload_bytes = payload;
        stats.runs = 1;
        stats.bytes_read = 0; /* nothing read yet: pages come in as the view is used */
    } else {
        onnxio_span_set(&t->raw_data, onnxio_buffer_data(b), onnxio_buffer_size(b), b);
    }
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    onnxio_buffer_unref(b);
    PyObject *out = Py_BuildValue("(N(KKKK)O)", obj, (unsigned long long)stats.bytes, (unsigned long long)stats.bytes_read,
                                  (unsigned long long)stats.runs, (unsigned long long)stats.payload_bytes,
                                  view ? Py_True : Py_False);
    return out;
}

PyObject *pyonnxio_tensor_file_read(PyObject *self, PyObject *args)
{
    PyObject *cap, *seq;
    const char *name;
    int no_copy = 0;
    if (!PyArg_ParseTuple(args, "OsO|p:_tensor_file_read", &cap, &name, &seq, &no_copy)) return NULL;
    tensor_handle *h = as_handle(cap);
    if (!h) return NULL;
    reader_begin(h);
    PyObject *out = read_slice(pyonnxio_state_of_module(self), h->f, name, seq, no_copy);
    reader_end(h);
    return out;
}
