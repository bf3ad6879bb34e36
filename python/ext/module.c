/* The onnxio._onnxio module: init, and the entry points that cross into
 * the C library (load, parse, save, serialize, external data), each with
 * the GIL released around the C call.
 *
 * Everything here is private to the package (names start with '_'); the
 * public, onnx-compatible functions are in python/onnxio/__init__.py, which
 * maps onnx's keyword arguments onto the keyword arguments below. Those
 * keep the field names of the C option structs (onnxio.h):
 *
 *   parse:     raw_data_threshold, alignment, num_threads, no_copy,
 *              load_external_data, base_dir, skip_raw_data, max_depth,
 *              payload_fn, verify_checksum, verify_crc, max_expansion, direct_io
 *   serialize: raw_data_threshold, alignment, num_threads, location,
 *              size_threshold, all_tensors_to_one_file, convert_attribute,
 *              max_file_size, checksum, max_depth
 *
 * Errors: every failed status goes through pyonnxio_raise (or
 * pyonnxio_raise_writing for serialize, save and text), which expands
 * onnxio/status.def: no status is listed here. The format rules external
 * data follows (key parsing, location spelling, the checked open, data type
 * sizes, the .onnxz name rule) are wrapped for the Python helpers
 * (_external_ref_parse, _check_location, _external_data_open,
 * _tensor_raw_size, _path_is_archive) so that they have no copy of them.
 *
 * Lifetime while the GIL is released: the entry points hold their
 * arguments (so the Python message and any input bytes stay alive) and an
 * extra reference to the message's arena, so the C message cannot go away
 * under the C call even if another thread drops every Python reference. */
#include "pyonnxio.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- tree queries ----------------------------------------------------------- */

/* 1 for a TensorProto marked external (data_location EXTERNAL) that still
 * holds raw_data: what convert_model_to_external_data leaves for save to
 * write. */
static int is_pending_external(onnxio_message *msg, void *ctx)
{
    (void)ctx;
    if (msg->desc != &onnxio_desc_TensorProto) return 0;
    const onnxio_TensorProto *t = (const onnxio_TensorProto *)msg;
    return onnxio_tensor_is_external(t) && onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data);
}

PyDoc_STRVAR(has_pending_external_doc,
             "_has_pending_external(message) -> bool\n"
             "True when a tensor under `message` is marked external (data_location EXTERNAL) and still holds\n"
             "raw_data, as external_data_helper.convert_model_to_external_data leaves it for save to write.");

static PyObject *mod_has_pending_external(PyObject *self, PyObject *obj)
{
    (void)self;
    PyOnnxioMessage *m = pyonnxio_as_message(obj, NULL, "message");
    if (!m) return NULL;
    const onnxio_message *msg = pyonnxio_message_get(m, 0);
    int found = msg ? pyonnxio_walk((onnxio_message *)msg, is_pending_external, NULL) : 0;
    if (found < 0) return NULL;
    return PyBool_FromLong(found);
}

/* ---- the rules of external data, for external_data_helper --------------------- */

PyDoc_STRVAR(external_ref_parse_doc,
             "_external_ref_parse(tensor) -> (location, offset, length, checksum)\n"
             "The tensor's external_data keys as the library reads them (onnxio_external_ref_parse), whatever\n"
             "its data_location: location (str; surrogate escapes for bytes that are not UTF-8), offset (int; 0\n"
             "when absent), length (int, or None when absent), checksum (str or None). ExternalDataError for a\n"
             "missing or refused location (empty, absolute, a '..' component) or an offset or length that is not\n"
             "a plain decimal number (digits only, below 2**64).");

static PyObject *mod_external_ref_parse(PyObject *self, PyObject *obj)
{
    (void)self;
    PyOnnxioMessage *m = pyonnxio_as_message(obj, &onnxio_desc_TensorProto, "tensor");
    if (!m) return NULL;
    const onnxio_TensorProto *t = pyonnxio_message_read(m);
    onnxio_external_ref r;
    onnxio_status s = onnxio_external_ref_parse(t, &r);
    if (s) return pyonnxio_raise(s);
    PyObject *location = PyUnicode_DecodeUTF8(r.location, (Py_ssize_t)r.location_size, "surrogateescape");
    PyObject *length = r.has_length ? PyLong_FromUnsignedLongLong(r.length) : Py_NewRef(Py_None);
    PyObject *checksum = r.checksum ? PyUnicode_DecodeUTF8(r.checksum, (Py_ssize_t)r.checksum_size, "surrogateescape")
                                    : Py_NewRef(Py_None);
    PyObject *out = location && length && checksum
                        ? Py_BuildValue("(OKOO)", location, (unsigned long long)r.offset, length, checksum)
                        : NULL;
    Py_XDECREF(location);
    Py_XDECREF(length);
    Py_XDECREF(checksum);
    return out;
}

PyDoc_STRVAR(check_location_doc,
             "_check_location(location)\n"
             "The spelling rules of an external data location, checked without touching the file system\n"
             "(onnxio_check_location): ExternalDataError when it is empty, has a NUL byte, is absolute (a leading\n"
             "'/' or '\\', a drive letter) or has a '..' component (\"a..b\" is a name, not a component).");

static PyObject *mod_check_location(PyObject *self, PyObject *arg)
{
    (void)self;
    /* Not PyUnicode_FSConverter: a NUL byte is the library's rule to report. */
    PyObject *path = PyOS_FSPath(arg), *bytes;
    if (!path) return NULL;
    bytes = PyUnicode_Check(path) ? PyUnicode_EncodeFSDefault(path) : Py_NewRef(path);
    Py_DECREF(path);
    if (!bytes) return NULL;
    onnxio_status s = onnxio_check_location(PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
    Py_DECREF(bytes);
    if (s) return pyonnxio_raise(s);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(external_data_open_doc,
             "_external_data_open(base_dir, location, append=False) -> (fd, size)\n"
             "Opens the external data file `location` under `base_dir` the way every onnxio component opens one\n"
             "(onnxio_external_data_open): the location's spelling is checked, the path is walked one component\n"
             "at a time without following a symlink that leads outside base_dir, and a FIFO, device, socket or\n"
             "directory is refused without being opened, as is a file with other hard links (all\n"
             "ExternalDataError). append=False: read only, the file must exist (FileNotFoundError). append=True:\n"
             "read and write, created (0666 minus the umask) when missing. Returns a file descriptor (the caller\n"
             "closes it, e.g. through os.fdopen) and the file's size. The GIL is released during the walk.");

static PyObject *mod_external_data_open(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"base_dir", "location", "append", NULL};
    PyObject *base = NULL, *location = NULL;
    int append = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&|p:_external_data_open", kwlist, PyUnicode_FSConverter, &base,
                                     PyUnicode_FSConverter, &location, &append))
        goto fail;
    int fd = -1;
    uint64_t size = 0;
    onnxio_status s;
    const char *b = PyBytes_AS_STRING(base), *l = PyBytes_AS_STRING(location);
    Py_BEGIN_ALLOW_THREADS
    s = onnxio_external_data_open(b, l, append ? ONNXIO_OPEN_APPEND : ONNXIO_OPEN_READ, &fd, &size);
    Py_END_ALLOW_THREADS
    Py_DECREF(base);
    Py_DECREF(location);
    if (s) return pyonnxio_raise(s);
    PyObject *out = Py_BuildValue("(iK)", fd, (unsigned long long)size);
    if (!out) close(fd);
    return out;
fail:
    Py_XDECREF(base);
    Py_XDECREF(location);
    return NULL;
}

PyDoc_STRVAR(tensor_raw_size_doc,
             "_tensor_raw_size(tensor) -> int | None\n"
             "The bytes raw_data must hold for the tensor's data_type and dims (onnxio_tensor_raw_size: elements\n"
             "times bits, sub-byte types packed and rounded up to whole bytes); None when the size is not fixed\n"
             "(STRING, UNDEFINED or an unknown data_type, a segment). ValueError for a negative dimension or a\n"
             "size past 64 bits.");

static PyObject *mod_tensor_raw_size(PyObject *self, PyObject *obj)
{
    (void)self;
    PyOnnxioMessage *m = pyonnxio_as_message(obj, &onnxio_desc_TensorProto, "tensor");
    if (!m) return NULL;
    uint64_t bytes = 0;
    int r = onnxio_tensor_raw_size(pyonnxio_message_read(m), &bytes);
    if (r == 0) Py_RETURN_NONE;
    if (r < 0)
        return PyErr_Format(PyExc_ValueError, "tensor has a negative dimension or more bytes than 64 bits count");
    return PyLong_FromUnsignedLongLong(bytes);
}

PyDoc_STRVAR(coerce_doc,
             "_coerce(obj) -> object\n"
             "`obj` as an onnxio message: itself when it is one (or no message); a message of the onnx package\n"
             "converted to the equal onnxio message (pyonnxio_coerce_message, as constructors, CopyFrom and\n"
             "append take them).");

static PyObject *mod_coerce(PyObject *self, PyObject *obj)
{
    (void)self;
    return pyonnxio_coerce_message(obj);
}

PyDoc_STRVAR(path_is_archive_doc,
             "_path_is_archive(path) -> bool\n"
             "Whether saving to `path` writes an .onnxz archive (onnxio_path_is_archive: the name ends in\n"
             "\".onnxz\").");

static PyObject *mod_path_is_archive(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *bytes;
    if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
    int yes = onnxio_path_is_archive(PyBytes_AS_STRING(bytes));
    Py_DECREF(bytes);
    return PyBool_FromLong(yes);
}

/* ---- data types ---------------------------------------------------------------- */

PyDoc_STRVAR(data_types_doc,
             "_data_types() -> tuple[dict, ...]\n"
             "The library's data type table (onnxio_data_type_at), one dict per TensorProto.DataType value\n"
             "but UNDEFINED, in the order of onnx's TENSOR_TYPE_MAP. Keys: data_type, name (\"FLOAT16\"),\n"
             "bits (0 for STRING), storage (the data type whose typed field holds the values), element\n"
             "(\"BOOL\", \"INT\", \"UINT\", \"FLOAT\", \"COMPLEX\", \"STRING\"), exponent_bits, mantissa_bits,\n"
             "exponent_bias, float_kind (\"IEEE\", \"FN\", \"FNUZ\", \"FINITE\", \"FNU\"; None for no float),\n"
             "numpy (the numpy dtype's name), ml_dtypes (True when numpy has it through ml_dtypes only), npy\n"
             "(the .npy descr or None), safetensors (the dtype or None), dlpack_code (None when not\n"
             "exported), text (the name in ONNX's textual syntax).");

static PyObject *opt_str(const char *s)
{
    if (s) return PyUnicode_FromString(s);
    Py_RETURN_NONE;
}

static PyObject *data_type_record(const onnxio_data_type_desc *d)
{
    static const char *const elements[] = {NULL, "BOOL", "INT", "UINT", "FLOAT", "COMPLEX", "STRING"};
    static const char *const floats[] = {NULL, "IEEE", "FN", "FNUZ", "FINITE", "FNU"};
    const char *element = (size_t)d->element < sizeof elements / sizeof *elements ? elements[d->element] : NULL;
    const char *fk = (size_t)d->float_kind < sizeof floats / sizeof *floats ? floats[d->float_kind] : NULL;
    PyObject *code = d->dlpack_code < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(d->dlpack_code);
    if (!code) return NULL;
    return Py_BuildValue("{s:i,s:s,s:I,s:i,s:N,s:I,s:I,s:i,s:N,s:s,s:O,s:N,s:N,s:N,s:s}", "data_type",
                         (int)d->data_type, "name", d->name, "bits", d->bits, "storage", (int)d->storage, "element",
                         opt_str(element), "exponent_bits", d->exponent_bits, "mantissa_bits", d->mantissa_bits,
                         "exponent_bias", d->exponent_bias, "float_kind", opt_str(fk), "numpy", d->numpy,
                         "ml_dtypes", d->ml_dtypes ? Py_True : Py_False, "npy", opt_str(d->npy), "safetensors",
                         opt_str(d->safetensors), "dlpack_code", code, "text", d->text);
}

static PyObject *mod_data_types(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    size_t n = 0;
    while (onnxio_data_type_at(n)) n++;
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *r = data_type_record(onnxio_data_type_at(i));
        if (!r) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, (Py_ssize_t)i, r);
    }
    return out;
}

/* ---- options ------------------------------------------------------------------ */

PyDoc_STRVAR(options_doc,
             "_options() -> dict\n"
             "The library's option table (src/options.def), for the option classes of onnxio/_options.py.\n"
             "Keys: constants ({name: value}, ONNXIO_<name>), structs (a tuple of (struct, python_class, doc),\n"
             "python_class None where the package has none) and options (a tuple of (struct, member,\n"
             "python_default, doc) in each struct's order: python_default is the Python literal that leaves\n"
             "the option at its default, None where the class has no such attribute).");

static PyObject *mod_options(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    static const struct {
        const char *name;
        unsigned long long value;
    } constants[] = {
#define ONNXIO_CONSTANT(NAME, VALUE, DOC) {#NAME, (unsigned long long)(VALUE)},
#define ONNXIO_OPTIONS(STRUCT, PYTHON, DOC)
#define ONNXIO_OPTION(STRUCT, MEMBER, TYPE, PYTHON, DOC)
#include "onnxio/options.def"
#undef ONNXIO_CONSTANT
#undef ONNXIO_OPTIONS
#undef ONNXIO_OPTION
    };
    static const struct {
        const char *name, *python, *doc;
    } structs[] = {
#define ONNXIO_CONSTANT(NAME, VALUE, DOC)
#define ONNXIO_OPTIONS(STRUCT, PYTHON, DOC) {#STRUCT, PYTHON, DOC},
#define ONNXIO_OPTION(STRUCT, MEMBER, TYPE, PYTHON, DOC)
#include "onnxio/options.def"
#undef ONNXIO_CONSTANT
#undef ONNXIO_OPTIONS
#undef ONNXIO_OPTION
    };
    static const struct {
        const char *options, *member, *python, *doc;
    } options[] = {
#define ONNXIO_CONSTANT(NAME, VALUE, DOC)
#define ONNXIO_OPTIONS(STRUCT, PYTHON, DOC)
#define ONNXIO_OPTION(STRUCT, MEMBER, TYPE, PYTHON, DOC) {#STRUCT, #MEMBER, PYTHON, DOC},
#include "onnxio/options.def"
#undef ONNXIO_CONSTANT
#undef ONNXIO_OPTIONS
#undef ONNXIO_OPTION
    };
    PyObject *c = PyDict_New(), *st = PyTuple_New(sizeof structs / sizeof *structs),
             *op = PyTuple_New(sizeof options / sizeof *options), *out = NULL;
    if (!c || !st || !op) goto done;
    for (size_t i = 0; i < sizeof constants / sizeof *constants; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(constants[i].value);
        int r = v ? PyDict_SetItemString(c, constants[i].name, v) : -1;
        Py_XDECREF(v);
        if (r < 0) goto done;
    }
    for (size_t i = 0; i < sizeof structs / sizeof *structs; i++) {
        PyObject *t = Py_BuildValue("(szs)", structs[i].name, structs[i].python, structs[i].doc);
        if (!t) goto done;
        PyTuple_SET_ITEM(st, (Py_ssize_t)i, t);
    }
    for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
        PyObject *t = Py_BuildValue("(sszs)", options[i].options, options[i].member, options[i].python, options[i].doc);
        if (!t) goto done;
        PyTuple_SET_ITEM(op, (Py_ssize_t)i, t);
    }
    out = Py_BuildValue("{s:O,s:O,s:O}", "constants", c, "structs", st, "options", op);
done:
    Py_XDECREF(c);
    Py_XDECREF(st);
    Py_XDECREF(op);
    return out;
}

/* ---- module ----------------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {"_load_file", (PyCFunction)(void (*)(void))pyonnxio_load_file, METH_VARARGS | METH_KEYWORDS, pyonnxio_load_file_doc},
    {"_load_bytes", (PyCFunction)(void (*)(void))pyonnxio_load_bytes, METH_VARARGS | METH_KEYWORDS, pyonnxio_load_bytes_doc},
    {"_load_external_data", (PyCFunction)(void (*)(void))pyonnxio_load_external_data, METH_VARARGS | METH_KEYWORDS,
     pyonnxio_load_external_data_doc},
    {"_load_tensor_external_data", (PyCFunction)(void (*)(void))pyonnxio_load_tensor_external_data,
     METH_VARARGS | METH_KEYWORDS, pyonnxio_load_tensor_external_data_doc},
    {"_save_file", (PyCFunction)(void (*)(void))pyonnxio_save_file, METH_VARARGS | METH_KEYWORDS, pyonnxio_save_file_doc},
    {"_save_streaming", (PyCFunction)(void (*)(void))pyonnxio_save_streaming, METH_VARARGS | METH_KEYWORDS,
     pyonnxio_save_streaming_doc},
    {"_serialize", pyonnxio_wire_serialize, METH_O, pyonnxio_wire_serialize_doc},
    {"_text_format", pyonnxio_text_format, METH_VARARGS, pyonnxio_text_format_doc},
    {"_unknown_fields", pyonnxio_wire_unknown_fields, METH_O, pyonnxio_wire_unknown_fields_doc},
    {"_text_parse", (PyCFunction)(void (*)(void))pyonnxio_text_parse, METH_VARARGS | METH_KEYWORDS, pyonnxio_text_parse_doc},
    {"_coerce", mod_coerce, METH_O, coerce_doc},
    {"_archive_replace_model", (PyCFunction)(void (*)(void))pyonnxio_archive_replace_model, METH_VARARGS | METH_KEYWORDS,
     pyonnxio_archive_replace_model_doc},
    {"_consolidate", (PyCFunction)(void (*)(void))pyonnxio_consolidate, METH_VARARGS | METH_KEYWORDS, pyonnxio_consolidate_doc},
    {"_payload_view", pyonnxio_tensor_payload_view, METH_O, pyonnxio_tensor_payload_view_doc},
    {"_set_raw_data", pyonnxio_set_raw_data, METH_VARARGS, pyonnxio_set_raw_data_doc},
    {"_share_raw_data", pyonnxio_share_raw_data, METH_VARARGS, pyonnxio_share_raw_data_doc},
    {"_has_pending_external", mod_has_pending_external, METH_O, has_pending_external_doc},
    {"_external_ref_parse", mod_external_ref_parse, METH_O, external_ref_parse_doc},
    {"_check_location", mod_check_location, METH_O, check_location_doc},
    {"_external_data_open", (PyCFunction)(void (*)(void))mod_external_data_open, METH_VARARGS | METH_KEYWORDS,
     external_data_open_doc},
    {"_tensor_raw_size", mod_tensor_raw_size, METH_O, tensor_raw_size_doc},
    {"_path_is_archive", mod_path_is_archive, METH_O, path_is_archive_doc},
    {"_data_types", mod_data_types, METH_NOARGS, data_types_doc},
    {"_options", mod_options, METH_NOARGS, options_doc},
    {"_raise_status", (PyCFunction)(void (*)(void))pyonnxio_raise_status, METH_VARARGS | METH_KEYWORDS,
     pyonnxio_raise_status_doc},
    {"_safetensors_load_into", (PyCFunction)(void (*)(void))pyonnxio_safetensors_load_into,
     METH_VARARGS | METH_KEYWORDS, pyonnxio_safetensors_load_into_doc},
    {"_safetensors_save", (PyCFunction)(void (*)(void))pyonnxio_safetensors_save, METH_VARARGS | METH_KEYWORDS,
     pyonnxio_safetensors_save_doc},
    /* remote sources (remote.c) */
    {"_external_ranges", pyonnxio_remote_external_ranges, METH_VARARGS, pyonnxio_remote_external_ranges_doc},
    {"_set_fetched_payload", pyonnxio_remote_set_payload, METH_VARARGS, pyonnxio_remote_set_payload_doc},
    {"_bytes_are_archive", pyonnxio_remote_is_archive, METH_O, pyonnxio_remote_is_archive_doc},
    {"_archive_open_tail", pyonnxio_remote_archive_open_tail, METH_VARARGS, pyonnxio_remote_archive_open_tail_doc},
    {"_archive_entries", pyonnxio_remote_archive_entries, METH_O, pyonnxio_remote_archive_entries_doc},
    {"_archive_entry_read", pyonnxio_remote_archive_read, METH_VARARGS, pyonnxio_remote_archive_read_doc},
    {"_archive_ranges", pyonnxio_remote_archive_ranges, METH_VARARGS, pyonnxio_remote_archive_ranges_doc},
    /* tensor slices (slice.c) */
    {"_tensor_file_open", (PyCFunction)(void (*)(void))pyonnxio_tensor_file_open, METH_VARARGS | METH_KEYWORDS,
     pyonnxio_tensor_file_open_doc},
    {"_tensor_file_close", pyonnxio_tensor_file_close, METH_O, pyonnxio_tensor_file_close_doc},
    {"_tensor_file_info", pyonnxio_tensor_file_info, METH_VARARGS, pyonnxio_tensor_file_info_doc},
    {"_tensor_file_initializers", pyonnxio_tensor_file_initializers, METH_O, pyonnxio_tensor_file_initializers_doc},
    {"_tensor_file_read", pyonnxio_tensor_file_read, METH_VARARGS, pyonnxio_tensor_file_read_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "onnxio._onnxio", "onnxio's C extension: the message classes and the C entry points.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__onnxio(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (pyonnxio_errors_init(m) < 0) goto fail;
    if (pyonnxio_payload_init(m) < 0) goto fail;
    if (PyModule_AddStringConstant(m, "_library_version", ONNXIO_VERSION_STRING) < 0) goto fail;
    if (PyModule_AddStringConstant(m, "_onnx_version", ONNXIO_ONNX_VERSION_STRING) < 0) goto fail;
    if (pyonnxio_message_init(m) < 0 || pyonnxio_repeated_init(m) < 0) goto fail;
    if (pyonnxio_dlpack_init(m) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
