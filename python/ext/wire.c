/* A message's wire bytes, both ways: the parses behind FromString,
 * MergeFromString and ParseFromString (pyonnxio_parse_merge,
 * pyonnxio_message_from_string), the serialization behind
 * SerializeToString (pyonnxio_serialize), each with the GIL released for a
 * large message; and the entry points _serialize and _unknown_fields (the
 * unknown fields kept by a parse, or those of wire bytes, in order). */
#include "args.h"
#include "errors.h"
#include "gil.h"
#include "payload.h"
#include "pyonnxio.h"
#include "wire.h"

/* Parses and serializations of big messages run without the GIL (payload
 * copies dominate them); small ones are not worth a GIL round trip. */
#define RELEASE_GIL_ABOVE (64u * 1024)

/* ---- parse ----------------------------------------------------------------- */

/* One parse: into `c`, or, with `make`, into a new `make` struct (*made). */
typedef struct parse_call {
    onnxio_message *c;
    const onnxio_message_desc *make;
    const Py_buffer *view;
    onnxio_buffer *owner;
    const onnxio_parse_options *o;
    onnxio_arena *arena;
    void *made;
} parse_call;

static onnxio_status parse_run(void *ctx)
{
    parse_call *p = ctx;
    return p->make ? onnxio_parse(p->make, p->view->buf, (size_t)p->view->len, p->owner, p->o, p->arena, &p->made)
                   : onnxio_parse_into(p->c, p->view->buf, (size_t)p->view->len, p->owner, p->o, p->arena);
}

Py_ssize_t pyonnxio_parse_merge(PyOnnxioMessage *self, PyObject *data, int clear_first,
                                const onnxio_message_desc *make)
{
    Py_buffer view;
    if (PyUnicode_Check(data)) {
        PyErr_Format(PyExc_TypeError, "expected bytes, str found");
        return -1;
    }
    if (PyBytes_CheckExact(data)) {
        /* its bytes, without the buffer protocol's round trip (the caller
         * holds `data`; PyBuffer_Release of a view without obj does nothing) */
        view.buf = PyBytes_AS_STRING(data);
        view.len = PyBytes_GET_SIZE(data);
        view.obj = NULL;
    } else if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    onnxio_message *c = make ? NULL : pyonnxio_message_get(self, 1);
    if (!c && !make) {
        PyBuffer_Release(&view);
        return -1;
    }
    if (clear_first) pyonnxio_message_clear(c);
    /* An immutable bytes object is borrowed, as upb does
     * (pyonnxio_borrowable); any other buffer may change after the call,
     * so its payloads are copied. The options are made only for a borrowed
     * input: clearing them took a tenth of an empty parse's time. */
    onnxio_parse_options opts;
    parse_call p = {c, make, &view, NULL, NULL, self->arena, NULL};
    if (pyonnxio_borrowable(data, 0)) {
        if (!(p.owner = pyonnxio_buffer_for_object(data))) {
            PyBuffer_Release(&view);
            return -1;
        }
        opts = (onnxio_parse_options)ONNXIO_PARSE_OPTIONS_INIT;
        opts.no_copy = true;
        p.o = &opts;
    }
    onnxio_status s;
    int rc = 0;
    if ((size_t)view.len < RELEASE_GIL_ABOVE) {
        s = parse_run(&p);
    } else {
        /* The tree is marked busy while the GIL is released (another
         * thread could change it then); with the GIL held no Python code
         * runs during the parse. A tree the parse makes is nobody else's
         * yet. */
        rc = pyonnxio_call_unlocked(self->st, make ? NULL : self->arena, parse_run, &p, &s);
    }
    if (make) self->msg = p.made;
    onnxio_buffer_unref(p.owner);
    Py_ssize_t n = view.len;
    PyBuffer_Release(&view);
    if (rc < 0) return -1;
    if (s) {
        pyonnxio_raise(self->st, s);
        return -1;
    }
    return n;
}

PyObject *pyonnxio_message_from_string(PyObject *cls, PyObject *data)
{
    PyTypeObject *tp = (PyTypeObject *)cls;
    pyonnxio_state *st = pyonnxio_state_of_type(tp);
    if (!st) return PyErr_Format(PyExc_TypeError, "cannot create '%.200s' instances: not a message class", tp->tp_name);
    /* A class whose construction is the extension's own (onnxio.Message's
     * slots as made) is built without the type call (its __init__ without
     * arguments does nothing), and its struct by the parse. */
    const onnxio_message_desc *make = NULL;
    PyObject *m = tp->tp_new == st->message_new && tp->tp_init == st->message_init
                      ? (PyObject *)pyonnxio_message_new_unmade(st, tp, &make)
                      : PyObject_CallNoArgs(cls);
    if (!m) return NULL;
    if (pyonnxio_parse_merge((PyOnnxioMessage *)m, data, 0, make) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* ---- serialize ------------------------------------------------------------- */

/* The destination of a one-pass serialization: a bytes object resized in
 * place (the encoder may run without the GIL; resizing takes it back). */
typedef struct grow_bytes {
    PyObject *bytes;
    int unlocked; /* the encoder runs without the GIL */
} grow_bytes;

static void *grow_bytes_fn(void *user, void *data, size_t used, size_t size)
{
    (void)data;
    (void)used; /* _PyBytes_Resize keeps the first bytes */
    grow_bytes *g = user;
    if (size > (size_t)PY_SSIZE_T_MAX) return NULL;
    PyGILState_STATE gil = g->unlocked ? PyGILState_Ensure() : PyGILState_LOCKED;
    int r = _PyBytes_Resize(&g->bytes, (Py_ssize_t)size); /* on failure: NULL, and MemoryError set */
    if (r) PyErr_Clear(); /* the status says it */
    void *out = r ? NULL : PyBytes_AS_STRING(g->bytes);
    if (g->unlocked) PyGILState_Release(gil);
    return out;
}

/* One serialization into g->bytes. */
typedef struct serialize_call {
    onnxio_message *c;
    grow_bytes g;
    size_t size;
} serialize_call;

static onnxio_status serialize_run(void *ctx)
{
    serialize_call *p = ctx;
    return onnxio_serialize_to(p->c, PyBytes_AS_STRING(p->g.bytes), (size_t)PyBytes_GET_SIZE(p->g.bytes), grow_bytes_fn,
                               &p->g, &p->size);
}

PyObject *pyonnxio_serialize(pyonnxio_state *st, void *msg, onnxio_arena *arena)
{
    onnxio_message *c = msg;
    /* One pass into a bytes object of the size the last parse or
     * serialization of this tree found (exact when it has not changed). */
    uint64_t hint = c->cached_size;
    if (hint == ONNXIO_SIZE_TOO_DEEP || hint > (uint64_t)PY_SSIZE_T_MAX / 2) hint = 0;
    serialize_call p = {c, {PyBytes_FromStringAndSize(NULL, hint ? (Py_ssize_t)hint : 256), 0}, 0};
    if (!p.g.bytes) return NULL;
    onnxio_status s;
    if (hint >= RELEASE_GIL_ABOVE || hint == 0) { /* large, or of a size not known yet */
        p.g.unlocked = 1;
        if (pyonnxio_call_unlocked(st, arena, serialize_run, &p, &s) < 0) {
            Py_DECREF(p.g.bytes);
            return NULL;
        }
    } else {
        s = serialize_run(&p);
    }
    if (s) {
        Py_XDECREF(p.g.bytes);
        /* Nested deeper than the reader's default max_depth: onnxio_last_error
         * has the depth, and nothing is returned. */
        return pyonnxio_raise_writing(st, s);
    }
    if ((Py_ssize_t)p.size != PyBytes_GET_SIZE(p.g.bytes) && _PyBytes_Resize(&p.g.bytes, (Py_ssize_t)p.size)) return NULL;
    return p.g.bytes;
}

/* ---- _serialize ---------------------------------------------------------- */

const char pyonnxio_wire_serialize_doc[] =
    "_serialize(message) -> bytes\n"
    "The protobuf wire bytes of `message` (what libprotobuf's SerializeToString gives), made with the\n"
    "GIL released unless it is known to be small. EncodeError for a payload that was skipped at\n"
    "load, or a tree nested deeper than the reader's default max_depth (100).";

PyObject *pyonnxio_wire_serialize(PyObject *self, PyObject *obj)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, NULL, "message");
    if (!m) return NULL;
    onnxio_arena *keep;
    void *msg = pyonnxio_message_for_read(m, pyonnxio_message_desc_of(st, obj), &keep);
    if (!msg) return NULL;
    PyObject *out = pyonnxio_serialize(st, msg, keep);
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
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    Py_buffer view;
    int has_view = 0;
    const uint8_t *data;
    size_t size;
    onnxio_arena *keep = NULL;
    if (pyonnxio_message_desc_of(st, obj)) {
        PyOnnxioMessage *m = pyonnxio_as_message(st, obj, NULL, "message");
        if (!m) return NULL;
        const onnxio_message *msg = pyonnxio_message_for_read(m, pyonnxio_message_desc_of(st, obj), &keep);
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
            pyonnxio_raise(st, ONNXIO_ERR_DECODE);
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

