/* The exceptions of onnxio._onnxio and the one mapping of a failed status
 * to an exception (pyonnxio_raise and its variants), expanded from
 * onnxio/status.def: no status is listed here, and every entry point raises
 * through these functions (pyonnxio_raise_writing for serialize, save and
 * text). _raise_status raises what an entry point raises for a status. */
#include <errno.h>
#include <string.h>

#include "errors.h"
#include "pyonnxio.h"

static PyObject *external_data_type(pyonnxio_state *st);

/* ---- errors ----------------------------------------------------------- */

/* The class column of status.def (one row per status, expanded here: the
 * extension lists no status itself). A class that status.def gains and this
 * list lacks is a compile error, so a new kind of failure is never mapped
 * by accident; a new status of a known class needs no change here. */
typedef enum status_class {
    CLASS_OK,
    CLASS_ARGUMENT,
    CLASS_MEMORY,
    CLASS_DECODE,
    CLASS_IO,
    CLASS_NOT_FOUND,
    CLASS_EXTERNAL,
    CLASS_ENCODE,
    CLASS_ARCHIVE,
} status_class;

static status_class class_of(onnxio_status status)
{
    switch (status) {
#define ONNXIO_STATUS(name, number, cls, message) \
    case ONNXIO_##name: return CLASS_##cls;
#include "onnxio/status.def"
#undef ONNXIO_STATUS
    default: return CLASS_ARGUMENT; /* a number status.def does not list: the caller's mistake */
    }
}

/* OSError(err, msg[, filename]): OSError's constructor picks the subclass
 * of `err` (FileNotFoundError, PermissionError, IsADirectoryError, ...),
 * as for the OSError that open() raises. */
static PyObject *raise_os(int err, const char *msg, const char *filename)
{
    PyObject *name = filename ? PyUnicode_DecodeFSDefault(filename) : NULL;
    if (filename && !name) return NULL;
    PyObject *e = name ? PyObject_CallFunction(PyExc_OSError, "isO", err, msg, name)
                       : PyObject_CallFunction(PyExc_OSError, "is", err, msg);
    Py_XDECREF(name);
    if (e) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

/* Raises the exception of `cls` with `msg`; `err`: the failure's errno
 * (onnxio_last_errno, 0: none), `filename`: the path it is about, or NULL. */
static PyObject *raise_class(pyonnxio_state *st, status_class cls, const char *msg, int err, const char *filename)
{
    PyObject *type;
    switch (cls) {
    case CLASS_DECODE: type = st->decode_error; break;
    case CLASS_ARCHIVE: type = st->archive_error; break;
    case CLASS_EXTERNAL: type = external_data_type(st); break;
    case CLASS_ENCODE: type = st->encode_error; break;
    case CLASS_IO:
        if (err) return raise_os(err, msg, filename);
        type = PyExc_OSError;
        break;
    case CLASS_MEMORY: type = PyExc_MemoryError; break;
    case CLASS_NOT_FOUND: return raise_os(err ? err : ENOENT, msg, filename);
    case CLASS_OK: /* not a failure: a bug of the caller, said as one */
        PyErr_Format(PyExc_SystemError, "onnxio: an exception raised for ONNXIO_OK (%s)", msg);
        return NULL;
    case CLASS_ARGUMENT:
    default: type = PyExc_ValueError; break;
    }
    PyErr_SetString(type, msg);
    return NULL;
}

static const char *failure_text(onnxio_status status)
{
    const char *msg = onnxio_last_error();
    return msg && *msg ? msg : onnxio_status_message(status);
}

/* Whether `msg` names `path` (followed by ':', ' ' or the end, so that a
 * file inside a directory is not taken for the directory). */
static int names_path(const char *msg, const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (!n) return 0;
    for (const char *p = strstr(msg, path); p; p = strstr(p + 1, path))
        if (p[n] == ':' || p[n] == ' ' || p[n] == '\0') return 1;
    return 0;
}

/* Raises the exception for `status` with `msg`; `writing`: a writing
 * operation, where the DECODE class is EncodeError. `err`, `path`: the
 * failure's errno, and the path the caller passed (the exception's
 * filename when the message is about it). */
static PyObject *raise_status(pyonnxio_state *st, onnxio_status status, int writing, const char *msg, int err,
                              const char *path)
{
    status_class cls = class_of(status);
    return raise_class(st, writing && cls == CLASS_DECODE ? CLASS_ENCODE : cls, msg, err,
                       names_path(msg, path) ? path : NULL);
}

PyObject *pyonnxio_raise(pyonnxio_state *st, onnxio_status status)
{
    return raise_status(st, status, 0, failure_text(status), onnxio_last_errno(), NULL);
}

PyObject *pyonnxio_raise_writing(pyonnxio_state *st, onnxio_status status)
{
    return raise_status(st, status, 1, failure_text(status), onnxio_last_errno(), NULL);
}

PyObject *pyonnxio_raise_path(pyonnxio_state *st, onnxio_status status, int writing, const char *path)
{
    return raise_status(st, status, writing, failure_text(status), onnxio_last_errno(), path);
}

/* ---- _raise_status ------------------------------------------------------------ */

const char pyonnxio_raise_status_doc[] =
    "_raise_status(status, writing=False)\n"
    "Raises the exception the package raises for a failed library status (a number of status.def),\n"
    "with the status's meaning as its text: what every entry point does with a status (writing=True:\n"
    "as a writing operation, where the DECODE class is EncodeError). For tests and diagnostics;\n"
    "returns None for ONNXIO_OK (0).";

PyObject *pyonnxio_raise_status(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"status", "writing", NULL};
    int status, writing = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i|p:_raise_status", kwlist, &status, &writing)) return NULL;
    if (status == ONNXIO_OK) Py_RETURN_NONE;
    return raise_status(pyonnxio_state_of_module(self), (onnxio_status)status, writing,
                        onnxio_status_message((onnxio_status)status), 0, NULL);
}

/* ---- the exception classes ------------------------------------------------------ */

static int add_exception(PyObject *m, const char *attr, PyObject **slot, const char *name, PyObject *base,
                         const char *doc)
{
    *slot = PyErr_NewExceptionWithDoc(name, doc, base, NULL);
    if (!*slot) return -1;
    Py_INCREF(*slot); /* the module state keeps its own reference */
    if (PyModule_AddObject(m, attr, *slot) < 0) {
        Py_DECREF(*slot);
        return -1;
    }
    return 0;
}

/* DecodeError's bases: ValueError, and protobuf's DecodeError when the
 * protobuf package is installed (what onnx users catch: onnx raises it for
 * malformed bytes), fixed when the class is made. New reference, or NULL
 * with an exception set. */
static PyObject *decode_error_bases(void)
{
    PyObject *pb = PyImport_ImportModule("google.protobuf.message"); /* 0.5 ms; protobuf is optional */
    PyObject *base = pb ? PyObject_GetAttrString(pb, "DecodeError") : NULL;
    Py_XDECREF(pb);
    if (!base || !PyExceptionClass_Check(base)) {
        Py_XDECREF(base);
        PyErr_Clear();
        return PyTuple_Pack(1, PyExc_ValueError);
    }
    PyObject *bases = PyTuple_Pack(2, PyExc_ValueError, base);
    Py_DECREF(base);
    return bases;
}

/* The class a refused external data raises: ExternalDataError, or, once
 * onnx's checker module is loaded (a program that imported onnx, whose
 * loads raise onnx.checker.ValidationError for the same refusals), a
 * subclass of ExternalDataError that is also that ValidationError, made
 * once with both bases (no class ever changes its bases) and kept in the
 * module state. Borrowed. */
static PyObject *external_data_type(pyonnxio_state *st)
{
    PyObject **made = &st->external_data_validation_error;
    if (*made) return *made;
    PyObject *checker = PyDict_GetItemString(PyImport_GetModuleDict(), "onnx.onnx_cpp2py_export.checker");
    if (!checker) return st->external_data_error;
    PyObject *validation = PyObject_GetAttrString(checker, "ValidationError");
    PyObject *bases = validation && PyExceptionClass_Check(validation)
                          ? PyTuple_Pack(2, st->external_data_error, validation)
                          : NULL;
    Py_XDECREF(validation);
    if (bases)
        *made = PyErr_NewExceptionWithDoc(
            "onnxio.ExternalDataError",
            "ExternalDataError, and onnx.checker.ValidationError as onnx raises for the same refusals: what "
            "refused external data raises once the onnx package is loaded.",
            bases, NULL);
    Py_XDECREF(bases);
    if (!*made) {
        PyErr_Clear();
        return st->external_data_error;
    }
    return *made;
}

const char pyonnxio_external_data_error_doc[] =
    "_external_data_error() -> type\n"
    "The class refused external data raises now: ExternalDataError, or, once onnx's checker module is\n"
    "loaded, its subclass that is also onnx.checker.ValidationError. For the package's own refusals.";

PyObject *pyonnxio_external_data_error(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return Py_NewRef(external_data_type(pyonnxio_state_of_module(self)));
}

int pyonnxio_errors_init(PyObject *m)
{
    pyonnxio_state *st = pyonnxio_state_of_module(m);
    PyObject *decode_bases = decode_error_bases();
    if (!decode_bases) return -1;
    int r = add_exception(m, "DecodeError", &st->decode_error, "onnxio.DecodeError", decode_bases,
                          "Malformed protobuf bytes (protobuf's DecodeError name; also a "
                          "google.protobuf.message.DecodeError when protobuf is installed), or nesting past "
                          "max_depth.");
    Py_DECREF(decode_bases);
    if (r < 0 ||
        add_exception(m, "EncodeError", &st->encode_error, "onnxio.EncodeError", PyExc_ValueError,
                      "A message that cannot be serialized (a payload skipped at load).") < 0 ||
        add_exception(m, "ExternalDataError", &st->external_data_error, "onnxio.ExternalDataError",
                      PyExc_ValueError,
                      "External data refused: an unsafe location (absolute, '..', a link leading outside the "
                      "base directory, the model file itself), an offset/length outside the file or not matching "
                      "the tensor, or a checksum mismatch.") < 0 ||
        add_exception(m, "ArchiveError", &st->archive_error, "onnxio.ArchiveError", st->decode_error,
                      "A malformed or unsafe .onnxz (zip) archive: bad or inconsistent end, ZIP64, central or local "
                      "records, unsafe or duplicate entry names, overlapping entries, entries running past the "
                      "central directory, encryption, unsupported compression, a missing __MODEL_PROTO entry, "
                      "corrupt deflate data (a DecodeError, hence a ValueError).") < 0)
        return -1;
    return 0;
}
