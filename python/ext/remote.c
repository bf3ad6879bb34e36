/* remote.c: the extension's entry points for remote loads
 * (python/onnxio/_remote.py fetches the bytes). Every rule is the C
 * library's (onnxio.h, "remote sources"): which tensors are external, their
 * keys, the location's spelling, the range against the file's size and the
 * length against the type and shape; this file converts arguments. */
#include "errors.h"
#include "gil.h"
#include "message.h"
#include "payload.h"
#include "pyonnxio.h"

/* The size callback: calls the Python size_fn(location) -> int. A Python
 * exception stays set and fails the walk with ONNXIO_ERR_IO (the caller
 * raises the Python exception, not the status). */
typedef struct size_call {
    PyObject *fn;
    int raised;
} size_call;

static onnxio_status call_size(void *ctx, const char *location, size_t location_size, uint64_t *size)
{
    size_call *c = ctx;
    PyObject *loc = PyUnicode_DecodeUTF8(location, (Py_ssize_t)location_size, "surrogateescape");
    PyObject *r = loc ? PyObject_CallOneArg(c->fn, loc) : NULL;
    Py_XDECREF(loc);
    if (r && (!PyLong_Check(r) || PyBool_Check(r))) {
        PyErr_Format(PyExc_TypeError, "size_fn must return an int, not %.200s", Py_TYPE(r)->tp_name);
        Py_CLEAR(r);
    }
    unsigned long long v = r ? PyLong_AsUnsignedLongLong(r) : 0;
    Py_XDECREF(r);
    if (PyErr_Occurred()) {
        c->raised = 1;
        return ONNXIO_ERR_IO;
    }
    *size = v;
    return ONNXIO_OK;
}

const char pyonnxio_remote_external_ranges_doc[] =
    "_external_ranges(message, size_fn) -> [(tensor, location, offset, length), ...]\n"
    "Every tensor under `message` whose data is external, with its checked range, in tree order\n"
    "(onnxio_external_ranges): the keys parsed and the location checked by the library, the range\n"
    "checked against size_fn(location) (the data file's size in bytes) and the length against the\n"
    "tensor's type and shape. `tensor` is the tensor itself (a view into the message). Raises\n"
    "ExternalDataError for refused keys, locations and ranges, and what size_fn raises.";

PyObject *pyonnxio_remote_external_ranges(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *obj, *fn;
    if (!PyArg_ParseTuple(args, "OO:_external_ranges", &obj, &fn)) return NULL;
    if (!pyonnxio_message_desc_of(st, obj)) {
        PyErr_Format(PyExc_TypeError, "message must be an onnxio message, not %.200s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "size_fn must be callable");
        return NULL;
    }
    PyOnnxioMessage *m = (PyOnnxioMessage *)obj;
    onnxio_message *root = pyonnxio_message_get(m, 0);
    if (!root) {
        if (PyErr_Occurred()) return NULL;
        return PyList_New(0); /* not created yet: nothing below it */
    }
    size_call c = {fn, 0};
    onnxio_external_range *ranges = NULL;
    size_t count = 0;
    onnxio_status s = onnxio_external_ranges(root, call_size, &c, &ranges, &count);
    if (s) {
        if (c.raised) return NULL;
        return pyonnxio_raise(st, s);
    }
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        const onnxio_external_range *r = &ranges[i];
        PyObject *t = pyonnxio_message_wrap(st, m->arena, r->tensor);
        PyObject *item = t ? Py_BuildValue("(NNKK)", t,
                                           PyUnicode_DecodeUTF8(r->location, (Py_ssize_t)r->location_size,
                                                                "surrogateescape"),
                                           (unsigned long long)r->offset, (unsigned long long)r->length)
                           : NULL;
        if (!item) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    onnxio_external_ranges_free(ranges);
    return list;
}

const char pyonnxio_remote_set_payload_doc[] =
    "_set_fetched_payload(tensor, obj, entry=False)\n"
    "Sets an external tensor's payload to the bytes of `obj` (bytes, or any object exporting a\n"
    "C-contiguous buffer, e.g. a memoryview slice of a numpy array) without copying them: the tensor\n"
    "keeps `obj` alive. The tensor stops being external as after any load\n"
    "(onnxio_tensor_set_fetched_payload; entry=True: an .onnxz entry's, onnxio_tensor_set_fetched_entry);\n"
    "ValueError when the size is not what its type and shape need.";

PyObject *pyonnxio_remote_set_payload(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *obj, *data;
    int entry = 0;
    if (!PyArg_ParseTuple(args, "OO|p:_set_fetched_payload", &obj, &data, &entry)) return NULL;
    if (pyonnxio_message_desc_of(st, obj) != &onnxio_desc_TensorProto) {
        PyErr_Format(PyExc_TypeError, "tensor must be an onnxio.TensorProto, not %.200s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    onnxio_buffer *b = pyonnxio_buffer_for_object(data);
    if (!b) return NULL;
    onnxio_TensorProto *t = pyonnxio_message_get((PyOnnxioMessage *)obj, 1);
    onnxio_status s = !t      ? ONNXIO_ERR_NO_MEMORY
                      : entry ? onnxio_tensor_set_fetched_entry(t, onnxio_buffer_data(b), onnxio_buffer_size(b), b)
                              : onnxio_tensor_set_fetched_payload(t, onnxio_buffer_data(b), onnxio_buffer_size(b), b);
    onnxio_buffer_unref(b);
    if (!t) return NULL;
    if (s) return pyonnxio_raise(st, s);
    Py_RETURN_NONE;
}

const char pyonnxio_remote_is_archive_doc[] =
    "_bytes_are_archive(data) -> bool\n"
    "Whether a load reads `data` (its first bytes) as an .onnxz archive (onnxio_detect_format).";

PyObject *pyonnxio_remote_is_archive(PyObject *self, PyObject *obj)
{
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    onnxio_format f = onnxio_detect_format(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyBool_FromLong(f == ONNXIO_FORMAT_ARCHIVE);
}

/* ---- .onnxz archives, structure first --------------------------------- */

/* An opened archive: a capsule that closes it. */
#define ARCHIVE_CAPSULE "onnxio.remote_archive"

static void archive_capsule_free(PyObject *cap)
{
    onnxio_archive_close(PyCapsule_GetPointer(cap, ARCHIVE_CAPSULE));
}

static onnxio_archive *archive_of(PyObject *cap)
{
    return PyCapsule_GetPointer(cap, ARCHIVE_CAPSULE); /* NULL with ValueError when not one */
}

/* Entry `index` of `a`, or NULL with IndexError. */
static const onnxio_archive_entry *entry_of(onnxio_archive *a, Py_ssize_t index)
{
    const onnxio_archive_entry *e = index >= 0 ? onnxio_archive_entry_at(a, (size_t)index) : NULL;
    if (!e) PyErr_SetString(PyExc_IndexError, "no such entry");
    return e;
}

const char pyonnxio_remote_archive_open_tail_doc[] =
    "_archive_open_tail(tail, file_size) -> archive capsule, or int\n"
    "Opens the .onnxz archive of `file_size` bytes from its last len(tail) bytes\n"
    "(onnxio_archive_open_tail): the end records and the central directory validated by the library.\n"
    "An int: the file offset from which the bytes are needed (open again with the tail from there).\n"
    "Raises ArchiveError as a local load does.";

PyObject *pyonnxio_remote_archive_open_tail(PyObject *self, PyObject *args)
{
    PyObject *tail;
    unsigned long long file_size;
    if (!PyArg_ParseTuple(args, "OK:_archive_open_tail", &tail, &file_size)) return NULL;
    onnxio_buffer *b = pyonnxio_buffer_for_object(tail);
    if (!b) return NULL;
    uint64_t need = UINT64_MAX;
    onnxio_archive *a = NULL;
    onnxio_status s = onnxio_archive_open_tail(onnxio_buffer_data(b), onnxio_buffer_size(b), file_size, b, &need, &a);
    onnxio_buffer_unref(b);
    if (s) return pyonnxio_raise(pyonnxio_state_of_module(self), s);
    if (!a) return PyLong_FromUnsignedLongLong(need);
    PyObject *cap = PyCapsule_New(a, ARCHIVE_CAPSULE, archive_capsule_free);
    if (!cap) onnxio_archive_close(a);
    return cap;
}

const char pyonnxio_remote_archive_entries_doc[] =
    "_archive_entries(archive) -> [(name, span_start, span_end, size, method, is_model), ...]\n"
    "The entries in central-directory order, each with the file range a reader fetches to read it\n"
    "(onnxio_archive_entry_span).";

PyObject *pyonnxio_remote_archive_entries(PyObject *self, PyObject *cap)
{
    (void)self;
    onnxio_archive *a = archive_of(cap);
    if (!a) return NULL;
    size_t n = onnxio_archive_entry_count(a);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(a, i);
        uint64_t start = 0, end = 0;
        onnxio_archive_entry_span(a, e, &start, &end);
        PyObject *item = Py_BuildValue("(NKKKIN)", PyUnicode_DecodeUTF8(e->name, (Py_ssize_t)e->name_size, "surrogateescape"),
                                       (unsigned long long)start, (unsigned long long)end, (unsigned long long)e->size,
                                       (unsigned)e->method, PyBool_FromLong(onnxio_archive_entry_is_model(e)));
        if (!item) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

const char pyonnxio_remote_archive_read_doc[] =
    "_archive_entry_read(archive, index, span_bytes, verify_crc, max_expansion) -> buffer\n"
    "Checks entry `index`'s local header in `span_bytes` (the file's bytes of its span) and returns\n"
    "its uncompressed bytes (onnxio_archive_entry_read): a memoryview into span_bytes for a stored\n"
    "entry (CRC-32 checked when verify_crc), a new buffer for a deflated one. The GIL is released.";

/* An entry's read, made without the GIL. */
typedef struct entry_read_call {
    onnxio_archive *a;
    const onnxio_archive_entry *e;
    onnxio_buffer *b;
    int verify;
    uint64_t max_expansion;
    const void *data;
    onnxio_buffer *inflated;
} entry_read_call;

static onnxio_status entry_read_run(void *ctx)
{
    entry_read_call *c = ctx;
    return onnxio_archive_entry_read(c->a, c->e, onnxio_buffer_data(c->b), onnxio_buffer_size(c->b), c->verify != 0,
                                     c->max_expansion, &c->data, &c->inflated);
}

PyObject *pyonnxio_remote_archive_read(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *cap, *bytes;
    Py_ssize_t index;
    int verify;
    unsigned long long max_expansion;
    if (!PyArg_ParseTuple(args, "OnOpK:_archive_entry_read", &cap, &index, &bytes, &verify, &max_expansion)) return NULL;
    onnxio_archive *a = archive_of(cap);
    const onnxio_archive_entry *e = a ? entry_of(a, index) : NULL;
    if (!e) return NULL;
    onnxio_buffer *b = pyonnxio_buffer_for_object(bytes);
    if (!b) return NULL;
    entry_read_call c = {a, e, b, verify, max_expansion, NULL, NULL};
    onnxio_status s;
    pyonnxio_call_unlocked(st, NULL, entry_read_run, &c, &s);
    if (s) {
        onnxio_buffer_unref(b);
        return pyonnxio_raise(st, s);
    }
    onnxio_span span = {(uint8_t *)(uintptr_t)c.data, (size_t)e->size, c.inflated ? c.inflated : b};
    PyObject *view = pyonnxio_payload_view(st, &span);
    onnxio_buffer_unref(c.inflated);
    onnxio_buffer_unref(b);
    return view;
}

const char pyonnxio_remote_archive_ranges_doc[] =
    "_archive_ranges(archive, message) -> [(tensor, entry_name, offset, length), ...]\n"
    "Every external tensor under `message` resolved to its entry, its range checked by the library\n"
    "(onnxio_archive_ranges). Raises ExternalDataError as a local load of the archive does.";

PyObject *pyonnxio_remote_archive_ranges(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *cap, *obj;
    if (!PyArg_ParseTuple(args, "OO:_archive_ranges", &cap, &obj)) return NULL;
    onnxio_archive *a = archive_of(cap);
    if (!a) return NULL;
    if (!pyonnxio_message_desc_of(st, obj)) {
        PyErr_Format(PyExc_TypeError, "message must be an onnxio message, not %.200s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyOnnxioMessage *m = (PyOnnxioMessage *)obj;
    onnxio_message *root = pyonnxio_message_get(m, 0);
    if (!root) {
        if (PyErr_Occurred()) return NULL;
        return PyList_New(0);
    }
    onnxio_archive_range *ranges = NULL;
    size_t count = 0;
    onnxio_status s = onnxio_archive_ranges(a, root, &ranges, &count);
    if (s) return pyonnxio_raise(st, s);
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        const onnxio_archive_range *r = &ranges[i];
        PyObject *t = pyonnxio_message_wrap(st, m->arena, r->tensor);
        PyObject *item = t ? Py_BuildValue("(NNKK)", t,
                                           PyUnicode_DecodeUTF8(r->entry->name, (Py_ssize_t)r->entry->name_size,
                                                                "surrogateescape"),
                                           (unsigned long long)r->offset, (unsigned long long)r->length)
                           : NULL;
        if (!item) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    onnxio_archive_ranges_free(ranges);
    return list;
}

const char pyonnxio_remote_archive_set_digests_doc[] =
    "_archive_set_digests(archive, entry_bytes) -> None\n"
    "Gives the archive its block digests: the bytes of its __BLOCK_DIGESTS entry as\n"
    "_archive_entry_read returned them (onnxio_archive_set_digests). Raises ArchiveError.";

PyObject *pyonnxio_remote_archive_set_digests(PyObject *self, PyObject *args)
{
    PyObject *cap, *bytes;
    if (!PyArg_ParseTuple(args, "OO:_archive_set_digests", &cap, &bytes)) return NULL;
    onnxio_archive *a = archive_of(cap);
    if (!a) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(bytes, &view, PyBUF_SIMPLE) < 0) return NULL;
    onnxio_status s = onnxio_archive_set_digests(a, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    if (s) return pyonnxio_raise(pyonnxio_state_of_module(self), s);
    Py_RETURN_NONE;
}

const char pyonnxio_remote_archive_check_doc[] =
    "_archive_check(archive, tensor, index, data) -> None\n"
    "Checks the bytes fetched for `tensor` from entry `index` against the archive's block digests\n"
    "(onnxio_archive_check_payload), before they are set. Raises ExternalDataError naming the\n"
    "tensor and the block. The GIL is released.";

typedef struct check_call {
    onnxio_archive *a;
    const onnxio_TensorProto *t;
    const onnxio_archive_entry *e;
    const void *data;
    size_t size;
} check_call;

static onnxio_status check_run(void *ctx)
{
    check_call *c = ctx;
    return onnxio_archive_check_payload(c->a, c->t, c->e, c->data, c->size);
}

PyObject *pyonnxio_remote_archive_check(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *cap, *obj, *bytes;
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "OOnO:_archive_check", &cap, &obj, &index, &bytes)) return NULL;
    onnxio_archive *a = archive_of(cap);
    const onnxio_archive_entry *e = a ? entry_of(a, index) : NULL;
    if (!e) return NULL;
    if (pyonnxio_message_desc_of(st, obj) != &onnxio_desc_TensorProto) {
        PyErr_Format(PyExc_TypeError, "tensor must be an onnxio TensorProto, not %.200s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    const onnxio_TensorProto *t = (const onnxio_TensorProto *)pyonnxio_message_get((PyOnnxioMessage *)obj, 0);
    if (!t) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(bytes, &view, PyBUF_SIMPLE) < 0) return NULL;
    check_call c = {a, t, e, view.buf, (size_t)view.len};
    onnxio_status s;
    pyonnxio_call_unlocked(st, NULL, check_run, &c, &s);
    PyBuffer_Release(&view);
    if (s) return pyonnxio_raise(st, s);
    Py_RETURN_NONE;
}
