/* The text formats: _text_format and _text_parse (onnxio_text_format,
 * onnxio_text_parse) in protobuf's text format, protobuf JSON and ONNX's
 * textual syntax, with the GIL released. */
#include <string.h>

#include "args.h"
#include "errors.h"
#include "gil.h"
#include "pyonnxio.h"

/* "str", "textproto", "json" or "onnxtxt" to the library's style; -1 with a
 * ValueError. */
static int text_style(const char *name)
{
    if (strcmp(name, "str") == 0) return ONNXIO_TEXT_STR;
    if (strcmp(name, "textproto") == 0) return ONNXIO_TEXT_PROTO;
    if (strcmp(name, "json") == 0) return ONNXIO_TEXT_JSON;
    if (strcmp(name, "onnxtxt") == 0) return ONNXIO_TEXT_ONNX;
    PyErr_Format(PyExc_ValueError, "unknown text style '%s' (str, textproto, json or onnxtxt)", name);
    return -1;
}

const char pyonnxio_text_format_doc[] =
    "_text_format(message, style) -> bytes\n"
    "`message` as text (onnxio_text_format): style \"textproto\" is what\n"
    "google.protobuf.text_format.MessageToString writes, \"json\" what json_format.MessageToJson\n"
    "(preserving_proto_field_name=True) writes, \"str\" what str(message) gives; UTF-8 bytes. The GIL is\n"
    "released. EncodeError past the nesting limit or for a payload that was never loaded (JSON).";

/* A text format's library call, made without the GIL. */
typedef struct format_call {
    void *msg;
    const onnxio_text_options *o;
    onnxio_buffer *out;
} format_call;

static onnxio_status format_run(void *ctx)
{
    format_call *c = ctx;
    return onnxio_text_format(c->msg, c->o, &c->out);
}

PyObject *pyonnxio_text_format(PyObject *self, PyObject *args)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyObject *obj;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:_text_format", &obj, &name)) return NULL;
    int style = text_style(name);
    if (style < 0) return NULL;
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, NULL, "message");
    if (!m) return NULL;
    onnxio_arena *keep;
    void *msg = pyonnxio_message_for_read(m, pyonnxio_message_desc_of(st, obj), &keep);
    if (!msg) return NULL;
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = (onnxio_text_style)style;
    format_call c = {msg, &o, NULL};
    onnxio_status s;
    int rc = pyonnxio_call_unlocked(st, keep, format_run, &c, &s);
    onnxio_arena_unref(keep);
    if (rc < 0) return NULL;
    if (s) return pyonnxio_raise_writing(st, s);
    onnxio_buffer *buf = c.out;
    PyObject *r = PyBytes_FromStringAndSize((const char *)onnxio_buffer_data(buf), (Py_ssize_t)onnxio_buffer_size(buf));
    onnxio_buffer_unref(buf);
    return r;
}

const char pyonnxio_text_parse_doc[] =
    "_text_parse(data, cls, style, max_depth=0, max_expansion=0) -> message\n"
    "Reads text (bytes-like in UTF-8, or str) in `style` (\"textproto\" or \"str\": protobuf's text\n"
    "format, \"json\": protobuf JSON, \"onnxtxt\": ONNX's textual syntax) into a new message of class\n"
    "`cls` (onnxio_text_parse), accepting what text_format.Parse, json_format.Parse and onnx.parser\n"
    "accept. DecodeError says what and at which line and column; ExpansionError when the message\n"
    "would take more than max_expansion (0: " PYONNXIO_STR(ONNXIO_DEFAULT_MAX_EXPANSION) ") times the text's size plus 1 MiB. The GIL is\n"
    "released.";

/* A text parse's library call, made without the GIL. */
typedef struct parse_call {
    const onnxio_message_desc *desc;
    const char *bytes;
    size_t size;
    const onnxio_text_options *o;
    onnxio_arena *arena;
    void *out;
} parse_call;

static onnxio_status parse_run(void *ctx)
{
    parse_call *c = ctx;
    return onnxio_text_parse(c->desc, c->bytes, c->size, c->o, c->arena, &c->out);
}

PyObject *pyonnxio_text_parse(PyObject *self, PyObject *args, PyObject *kw)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    static char *kwlist[] = {"data", "cls", "style", "max_depth", "max_expansion", NULL};
    PyObject *data, *cls;
    const char *name;
    int max_depth = 0;
    unsigned long long max_expansion = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOs|iK:_text_parse", kwlist, &data, &cls, &name, &max_depth,
                                     &max_expansion))
        return NULL;
    int style = text_style(name);
    const onnxio_message_desc *desc = style < 0 ? NULL : pyonnxio_desc_from(st, cls);
    if (!desc) return NULL;
    Py_buffer view;
    const char *bytes;
    Py_ssize_t size;
    int has_view = 0;
    if (PyUnicode_Check(data)) {
        if (!(bytes = PyUnicode_AsUTF8AndSize(data, &size))) return NULL;
    } else {
        if (PyObject_GetBuffer(data, &view, PyBUF_CONTIG_RO) < 0) return NULL;
        has_view = 1;
        bytes = view.buf;
        size = view.len;
    }
    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) {
        if (has_view) PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = (onnxio_text_style)style;
    o.max_depth = max_depth;
    o.max_expansion = max_expansion;
    /* The new arena is nobody else's yet: no tree to mark busy. */
    parse_call c = {desc, bytes, (size_t)size, &o, arena, NULL};
    onnxio_status s;
    pyonnxio_call_unlocked(st, NULL, parse_run, &c, &s);
    if (has_view) PyBuffer_Release(&view);
    PyObject *result = s ? pyonnxio_raise(st, s) : pyonnxio_message_wrap(st, arena, c.out);
    onnxio_arena_unref(arena);
    return result;
}

