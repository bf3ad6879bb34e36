/* The load and parse entry points (_load_file, _load_bytes,
 * _load_external_data, _load_tensor_external_data): the parse options read
 * from keyword arguments that keep the field names of
 * onnxio_parse_options, a Python payload_fn called from the C library, and
 * the C call made with the GIL released. */
#include "args.h"
#include "errors.h"
#include "gil.h"
#include "payload.h"
#include "progress.h"
#include "pyonnxio.h"

/* ---- parse options and the payload callback ----------------------------- */

/* State of one parse-side call: the options, and what the Python payload_fn
 * callback needs while the GIL is released (the module state, the arena its
 * tensors live in, the exception it raised, the owners it placed payloads
 * into). */
typedef struct {
    pyonnxio_state *st;
    onnxio_parse_options opts;
    PyObject *base_dir;   /* bytes or NULL */
    PyObject *payload_fn; /* borrowed, or NULL */
    onnxio_arena *arena;
    PyObject *exc_type, *exc_value, *exc_tb;
    onnxio_buffer **placed;
    size_t placed_count, placed_cap;
    pyonnxio_progress progress;
    const char *path; /* the file loaded, for the exception; or NULL */
} parse_call;

#define PARSE_KWLIST \
    "no_copy", "num_threads", "load_external_data", "base_dir", "skip_raw_data", "max_depth", "verify_checksum", \
        "raw_data_threshold", "alignment", "payload_fn", "verify_crc", "max_expansion", "progress", "direct_io", \
        "verify_digests"
#define PARSE_FORMAT "pO&O&O&pO&pO&O&OO&O&OO&O&"
#define PARSE_ARGS(c) \
    &b_no_copy, pyonnxio_conv_int, &(c)->opts.num_threads, pyonnxio_conv_toggle, &(c)->opts.load_external_data, \
        pyonnxio_conv_opt_path, &(c)->base_dir, &b_skip, pyonnxio_conv_depth, &(c)->opts.max_depth, &b_verify, \
        pyonnxio_conv_u64, &(c)->opts.raw_data_threshold, pyonnxio_conv_u64, &(c)->opts.alignment, &payload_fn, \
        pyonnxio_conv_toggle, &(c)->opts.verify_crc, pyonnxio_conv_u64, &(c)->opts.max_expansion, &progress_fn, \
        pyonnxio_conv_toggle, &(c)->opts.direct_io, pyonnxio_conv_toggle, &(c)->opts.verify_digests
#define PARSE_LOCALS \
    int b_no_copy = 0, b_skip = 0, b_verify = 0; \
    PyObject *payload_fn = Py_None, *progress_fn = Py_None

static int parse_call_finish_args(parse_call *c, int b_no_copy, int b_skip, int b_verify, PyObject *payload_fn,
                                  PyObject *progress_fn);

static onnxio_payload_action payload_trampoline(void *ctx, const onnxio_payload_request *req, void **dst,
                                                onnxio_buffer **owner)
{
    parse_call *c = ctx;
    if (c->exc_type) return ONNXIO_PAYLOAD_SKIP; /* an earlier call raised: load nothing more */
    PyGILState_STATE gil = PyGILState_Ensure(); /* the load runs in pyonnxio_call_unlocked */
    onnxio_payload_action action = ONNXIO_PAYLOAD_LOAD;
    PyObject *tensor = pyonnxio_message_wrap(c->st, c->arena, (void *)req->tensor);
    PyObject *r = tensor ? PyObject_CallFunction(c->payload_fn, "OKO", tensor, (unsigned long long)req->size,
                                                 req->external ? Py_True : Py_False)
                         : NULL;
    Py_XDECREF(tensor);
    if (r == Py_None || r == Py_True) action = ONNXIO_PAYLOAD_LOAD;
    else if (r == Py_False) action = ONNXIO_PAYLOAD_SKIP;
    else if (r) {
        /* A writable buffer: the payload is copied there and the tensor
         * keeps the object alive. */
        onnxio_buffer *b = PyObject_CheckBuffer(r) ? pyonnxio_buffer_for_writable(r) : NULL;
        if (!b && !PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "payload_fn must return None/True (load), False (skip) or a writable buffer, not %.200s",
                         Py_TYPE(r)->tp_name);
        if (b && onnxio_buffer_size(b) < req->size) {
            PyErr_Format(PyExc_ValueError, "payload_fn returned a buffer of %zu bytes for a %llu-byte payload",
                         onnxio_buffer_size(b), (unsigned long long)req->size);
            onnxio_buffer_unref(b);
            b = NULL;
        }
        if (b && c->placed_count == c->placed_cap) {
            size_t cap = c->placed_cap ? 2 * c->placed_cap : 16;
            onnxio_buffer **p = PyMem_Realloc(c->placed, cap * sizeof *p);
            if (!p) {
                PyErr_NoMemory();
                onnxio_buffer_unref(b);
                b = NULL;
            } else {
                c->placed = p;
                c->placed_cap = cap;
            }
        }
        if (b) {
            c->placed[c->placed_count++] = b;
            *dst = onnxio_buffer_data(b);
            *owner = b;
            action = ONNXIO_PAYLOAD_PLACED;
        }
    }
    Py_XDECREF(r);
    if (PyErr_Occurred()) {
        PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
        action = ONNXIO_PAYLOAD_SKIP;
    }
    PyGILState_Release(gil);
    return action;
}

static int parse_call_finish_args(parse_call *c, int b_no_copy, int b_skip, int b_verify, PyObject *payload_fn,
                                  PyObject *progress_fn)
{
    c->opts.struct_size = sizeof c->opts;
    if (pyonnxio_progress_init(c->st, &c->progress, progress_fn, 0, &c->opts.progress, &c->opts.progress_user) < 0)
        return -1;
    /* No callable: Ctrl-C stops the load through the cancel poll. */
    if (!c->opts.progress)
        pyonnxio_progress_cancel_poll(c->st, &c->progress, &c->opts.cancel, &c->opts.cancel_user);
    c->opts.no_copy = b_no_copy;
    c->opts.skip_raw_data = b_skip;
    c->opts.verify_checksum = b_verify;
    c->opts.base_dir = pyonnxio_path_str(c->base_dir);
    if (payload_fn != Py_None) {
        if (!PyCallable_Check(payload_fn)) {
            PyErr_SetString(PyExc_TypeError, "payload_fn must be callable or None");
            return -1;
        }
        c->payload_fn = payload_fn;
        c->opts.payload_fn = payload_trampoline;
        c->opts.payload_ctx = c;
    }
    return 0;
}


/* After the C call, with the GIL: drops the references the callback kept
 * (the tensors hold their own) and turns the outcome into NULL + exception
 * (the callback's exception first) or 0. */
static int parse_call_end(parse_call *c, onnxio_status s)
{
    for (size_t i = 0; i < c->placed_count; i++) onnxio_buffer_unref(c->placed[i]);
    PyMem_Free(c->placed);
    c->placed = NULL;
    Py_CLEAR(c->base_dir);
    if (pyonnxio_progress_raised(&c->progress)) {
        /* The load was cancelled by it; a payload_fn exception, if any,
         * came first and ended the load the same way. */
        if (c->exc_type) {
            Py_CLEAR(c->exc_type);
            Py_CLEAR(c->exc_value);
            Py_CLEAR(c->exc_tb);
        }
        return -1;
    }
    if (c->exc_type) {
        PyErr_Restore(c->exc_type, c->exc_value, c->exc_tb);
        c->exc_type = c->exc_value = c->exc_tb = NULL;
        return -1;
    }
    if (s) {
        pyonnxio_raise_path(c->st, s, 0, c->path);
        return -1;
    }
    return 0;
}

/* The library call of an entry point, made without the GIL. */
typedef struct load_call {
    parse_call *c;
    const onnxio_message_desc *desc;
    const char *path;    /* _load_file, _load_*external_data: the path, or base_dir */
    const void *bytes;   /* _load_bytes */
    size_t size;
    onnxio_buffer *owner;
    void *msg;           /* _load_*external_data: the message; the others: the one made */
} load_call;

static onnxio_status load_file_run(void *ctx)
{
    load_call *l = ctx;
    if (l->desc == &onnxio_desc_ModelProto)
        return onnxio_load_model(l->path, &l->c->opts, l->c->arena, (onnxio_ModelProto **)&l->msg);
    return onnxio_load_file(l->desc, l->path, &l->c->opts, l->c->arena, &l->msg);
}

static onnxio_status load_bytes_run(void *ctx)
{
    load_call *l = ctx;
    if (l->desc == &onnxio_desc_ModelProto)
        return onnxio_load_model_from_bytes(l->bytes, l->size, l->owner, &l->c->opts, l->c->arena,
                                            (onnxio_ModelProto **)&l->msg);
    return onnxio_parse(l->desc, l->bytes, l->size, l->owner, &l->c->opts, l->c->arena, &l->msg);
}

static onnxio_status load_external_run(void *ctx)
{
    load_call *l = ctx;
    if (l->desc == &onnxio_desc_TensorProto) return onnxio_load_tensor_external_data(l->msg, l->path, &l->c->opts);
    return onnxio_load_external_data(l->msg, l->path, &l->c->opts);
}

/* ---- load and parse ------------------------------------------------------ */

const char pyonnxio_load_file_doc[] =
    "_load_file(path, cls, *, no_copy=False, num_threads=0, load_external_data=None, base_dir=None,\n"
    "           skip_raw_data=False, max_depth=0, verify_checksum=False, raw_data_threshold=0,\n"
    "           alignment=0, payload_fn=None, verify_crc=None, max_expansion=0, progress=None,\n"
    "           direct_io=None, verify_digests=None)\n"
    "Loads a file holding one message of class `cls` (onnxio_load_model for ModelProto, with external\n"
    "data; onnxio_load_file otherwise). A ModelProto file may be an .onnxz archive (recognized by its\n"
    "first bytes); verify_crc (None: the library's default, on for copy loads) checks its entries'\n"
    "CRC-32s; verify_digests (None: on for copy loads) the block digests of external payloads. max_depth: message nesting allowed (0: " PYONNXIO_STR(ONNXIO_DEFAULT_MAX_DEPTH) "; larger values are capped at " PYONNXIO_STR(ONNXIO_MAX_DEPTH) ", negative ones\n"
    "are a ValueError). max_expansion: the most a load may allocate, as a multiple of the bytes it reads\n"
    "(0: the library's default, 100; 2**64-1: no limit). The file is memory-mapped; with no_copy\n"
    "payloads point into the mapping, which lives as long as one of them does.\n"
    "payload_fn(tensor, size, external) returns\n"
    "None/True (load), False (skip) or a writable buffer of at least `size` bytes to copy it into;\n"
    "`tensor` must not be modified. progress(done, total): called with the payload bytes placed so far\n"
    "and in all (onnxio_parse_options.progress), with the GIL; an exception it raises stops the load\n"
    "and propagates. The GIL is released during the load.";

PyObject *pyonnxio_load_file(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "cls", PARSE_KWLIST, NULL};
    PyObject *path = NULL, *cls;
    parse_call c = {.st = pyonnxio_state_of_module(self)};
    PARSE_LOCALS;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O|$" PARSE_FORMAT ":_load_file", kwlist, PyUnicode_FSConverter,
                                     &path, &cls, PARSE_ARGS(&c)))
        goto fail_args;
    const onnxio_message_desc *desc = pyonnxio_desc_from(c.st, cls);
    if (!desc || parse_call_finish_args(&c, b_no_copy, b_skip, b_verify, payload_fn, progress_fn) < 0) goto fail_args;
    if (!(c.arena = onnxio_arena_new())) {
        PyErr_NoMemory();
        goto fail_args;
    }
    /* The new arena is nobody else's yet: no tree to mark busy. */
    load_call l = {&c, desc, PyBytes_AS_STRING(path), NULL, 0, NULL, NULL};
    onnxio_status s;
    pyonnxio_call_unlocked(c.st, NULL, load_file_run, &l, &s);
    c.path = PyBytes_AS_STRING(path);
    PyObject *result = parse_call_end(&c, s) < 0 ? NULL : pyonnxio_message_wrap(c.st, c.arena, l.msg);
    Py_DECREF(path);
    onnxio_arena_unref(c.arena);
    return result;
fail_args:
    Py_XDECREF(path);
    Py_XDECREF(c.base_dir);
    return NULL;
}

const char pyonnxio_load_bytes_doc[] =
    "_load_bytes(data, cls, *, <the keyword arguments of _load_file>)\n"
    "Parses `data` (any bytes-like object) as one message of class `cls` (onnxio_load_model_from_bytes\n"
    "for ModelProto: external data is read only with base_dir; onnxio_parse otherwise). no_copy: payloads\n"
    "point into `data` and keep it alive (a bytes object by reference; any other object through its\n"
    "buffer export, which stays held, so a bytearray cannot be resized while the message uses it).\n"
    "The GIL is released during the parse.";

PyObject *pyonnxio_load_bytes(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"data", "cls", PARSE_KWLIST, NULL};
    PyObject *data, *cls;
    parse_call c = {.st = pyonnxio_state_of_module(self)};
    PARSE_LOCALS;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$" PARSE_FORMAT ":_load_bytes", kwlist, &data, &cls,
                                     PARSE_ARGS(&c)))
        goto fail_args;
    const onnxio_message_desc *desc = pyonnxio_desc_from(c.st, cls);
    if (!desc || parse_call_finish_args(&c, b_no_copy, b_skip, b_verify, payload_fn, progress_fn) < 0) goto fail_args;

    /* Copy mode reads the input during the call only (the export keeps a
     * bytearray from being resized meanwhile); no_copy hands the parser an
     * owner that keeps the input alive as long as a payload points into it. */
    Py_buffer view;
    onnxio_buffer *owner = NULL;
    const void *bytes;
    size_t size;
    int has_view = 0;
    /* An immutable bytes object is borrowed unless an alignment is asked
     * for, as FromString borrows it (docs/memory.md); the CRC check of an
     * archive's entries stays on as in a copy load. */
    if (!c.opts.no_copy && !c.opts.alignment && pyonnxio_borrowable(data, c.opts.raw_data_threshold)) {
        c.opts.no_copy = true;
        if (c.opts.verify_crc == ONNXIO_DEFAULT) c.opts.verify_crc = ONNXIO_ON;
    }
    if (c.opts.no_copy) {
        if (!(owner = pyonnxio_buffer_for_object(data))) goto fail_args;
        bytes = onnxio_buffer_data(owner);
        size = onnxio_buffer_size(owner);
    } else {
        if (PyObject_GetBuffer(data, &view, PyBUF_CONTIG_RO) < 0) goto fail_args;
        has_view = 1;
        bytes = view.buf;
        size = (size_t)view.len;
    }
    if (!(c.arena = onnxio_arena_new())) {
        PyErr_NoMemory();
        if (has_view) PyBuffer_Release(&view);
        onnxio_buffer_unref(owner);
        goto fail_args;
    }
    load_call l = {&c, desc, NULL, bytes, size, owner, NULL};
    onnxio_status s;
    pyonnxio_call_unlocked(c.st, NULL, load_bytes_run, &l, &s);
    if (has_view) PyBuffer_Release(&view);
    onnxio_buffer_unref(owner); /* the payloads hold their own references */
    PyObject *result = parse_call_end(&c, s) < 0 ? NULL : pyonnxio_message_wrap(c.st, c.arena, l.msg);
    onnxio_arena_unref(c.arena);
    return result;
fail_args:
    Py_XDECREF(c.base_dir);
    return NULL;
}

/* Loads external data into an existing model or tensor. */
static PyObject *load_external_common(PyObject *module, PyObject *args, PyObject *kw, const char *fname, int tensor)
{
    static char *kwlist[] = {"message", "base_dir", PARSE_KWLIST, NULL};
    PyObject *obj, *base = NULL;
    parse_call c = {.st = pyonnxio_state_of_module(module)};
    PARSE_LOCALS;
    char format[64];
    snprintf(format, sizeof format, "OO&|$%s:%s", PARSE_FORMAT, fname);
    if (!PyArg_ParseTupleAndKeywords(args, kw, format, kwlist, &obj, PyUnicode_FSConverter, &base, PARSE_ARGS(&c)))
        goto fail_args;
    const onnxio_message_desc *desc = tensor ? &onnxio_desc_TensorProto : &onnxio_desc_ModelProto;
    PyOnnxioMessage *m = pyonnxio_as_message(c.st, obj, desc, tensor ? "tensor" : "model");
    if (!m || parse_call_finish_args(&c, b_no_copy, b_skip, b_verify, payload_fn, progress_fn) < 0) goto fail_args;
    void *msg = pyonnxio_message_get(m, 0);
    if (!msg) { /* a lazy message has no tensor to load */
        Py_DECREF(base);
        Py_XDECREF(c.base_dir);
        Py_RETURN_NONE;
    }
    /* c.arena keeps the tree for the call and for payload_fn's tensors;
     * the tree is not marked busy (no tree for pyonnxio_call_unlocked). */
    c.arena = onnxio_arena_ref(m->arena);
    load_call l = {&c, desc, PyBytes_AS_STRING(base), NULL, 0, NULL, msg};
    onnxio_status s;
    pyonnxio_call_unlocked(c.st, NULL, load_external_run, &l, &s);
    Py_DECREF(base);
    int rc = parse_call_end(&c, s);
    onnxio_arena_unref(c.arena);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
fail_args:
    Py_XDECREF(base);
    Py_XDECREF(c.base_dir);
    return NULL;
}

const char pyonnxio_load_external_data_doc[] =
    "_load_external_data(model, base_dir, *, <the keyword arguments of _load_file>)\n"
    "Reads the payload of every tensor of `model` that is still external, resolving locations under\n"
    "base_dir with the library's path checks; the tensors then hold raw_data and are no longer external.";

PyObject *pyonnxio_load_external_data(PyObject *self, PyObject *args, PyObject *kw)
{
    return load_external_common(self, args, kw, "_load_external_data", 0);
}

const char pyonnxio_load_tensor_external_data_doc[] =
    "_load_tensor_external_data(tensor, base_dir, *, <the keyword arguments of _load_file>)\n"
    "The same as _load_external_data for one TensorProto (nothing happens when it is not external).";

PyObject *pyonnxio_load_tensor_external_data(PyObject *self, PyObject *args, PyObject *kw)
{
    return load_external_common(self, args, kw, "_load_tensor_external_data", 1);
}

