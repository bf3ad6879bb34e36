/* The format rules that external data follows, for the Python helpers
 * (external_data_helper, save): the external_data keys as the library
 * parses them, the spelling of a location, the checked open of a data
 * file, the raw size of a tensor, the .onnxz name rule, and whether a tree
 * holds tensors marked external that still hold raw_data. The helpers call
 * these instead of keeping a copy of the rules. */
#include <unistd.h>

#include "args.h"
#include "errors.h"
#include "gil.h"
#include "pyonnxio.h"

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

const char pyonnxio_has_pending_external_doc[] =
    "_has_pending_external(message) -> bool\n"
    "True when a tensor under `message` is marked external (data_location EXTERNAL) and still holds\n"
    "raw_data, as external_data_helper.convert_model_to_external_data leaves it for save to write.";

PyObject *pyonnxio_has_pending_external(PyObject *self, PyObject *obj)
{
    PyOnnxioMessage *m = pyonnxio_as_message(pyonnxio_state_of_module(self), obj, NULL, "message");
    if (!m) return NULL;
    const onnxio_message *msg = pyonnxio_message_get(m, 0);
    int found = msg ? pyonnxio_walk((onnxio_message *)msg, is_pending_external, NULL) : 0;
    if (found < 0) return NULL;
    return PyBool_FromLong(found);
}

/* ---- the rules of external data, for external_data_helper --------------------- */

const char pyonnxio_external_ref_parse_doc[] =
    "_external_ref_parse(tensor) -> (location, offset, length, checksum)\n"
    "The tensor's external_data keys as the library reads them (onnxio_external_ref_parse), whatever\n"
    "its data_location: location (str; surrogate escapes for bytes that are not UTF-8), offset (int; 0\n"
    "when absent), length (int, or None when absent), checksum (str or None). ExternalDataError for a\n"
    "missing or refused location (empty, absolute, a '..' component) or an offset or length that is not\n"
    "a plain decimal number (digits only, below 2**64).";

PyObject *pyonnxio_external_ref_parse(PyObject *self, PyObject *obj)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, &onnxio_desc_TensorProto, "tensor");
    if (!m) return NULL;
    const onnxio_TensorProto *t = pyonnxio_message_read(m);
    onnxio_external_ref r;
    onnxio_status s = onnxio_external_ref_parse(t, &r);
    if (s) return pyonnxio_raise(st, s);
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

const char pyonnxio_check_location_doc[] =
    "_check_location(location)\n"
    "The spelling rules of an external data location, checked without touching the file system\n"
    "(onnxio_check_location): ExternalDataError when it is empty, has a NUL byte, is absolute (a leading\n"
    "'/' or '\\', a drive letter) or has a '..' component (\"a..b\" is a name, not a component).";

PyObject *pyonnxio_check_location(PyObject *self, PyObject *arg)
{
    /* Not PyUnicode_FSConverter: a NUL byte is the library's rule to report. */
    PyObject *path = PyOS_FSPath(arg), *bytes;
    if (!path) return NULL;
    bytes = PyUnicode_Check(path) ? PyUnicode_EncodeFSDefault(path) : Py_NewRef(path);
    Py_DECREF(path);
    if (!bytes) return NULL;
    onnxio_status s = onnxio_check_location(PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
    Py_DECREF(bytes);
    if (s) return pyonnxio_raise(pyonnxio_state_of_module(self), s);
    Py_RETURN_NONE;
}

const char pyonnxio_external_data_open_doc[] =
    "_external_data_open(base_dir, location, append=False) -> (fd, size)\n"
    "Opens the external data file `location` under `base_dir` the way every onnxio component opens one\n"
    "(onnxio_external_data_open): the location's spelling is checked, the path is walked one component\n"
    "at a time without following a symlink that leads outside base_dir, and a FIFO, device, socket or\n"
    "directory is refused without being opened, as is a file with other hard links (all\n"
    "ExternalDataError). append=False: read only, the file must exist (FileNotFoundError). append=True:\n"
    "read and write, created (0666 minus the umask) when missing. Returns a file descriptor (the caller\n"
    "closes it, e.g. through os.fdopen) and the file's size. The GIL is released during the walk.";

/* The checked open, made without the GIL. */
typedef struct open_call {
    const char *base, *location;
    int append;
    int fd;
    uint64_t size;
} open_call;

static onnxio_status open_run(void *ctx)
{
    open_call *c = ctx;
    return onnxio_external_data_open(c->base, c->location, c->append ? ONNXIO_OPEN_APPEND : ONNXIO_OPEN_READ, &c->fd,
                                     &c->size);
}

PyObject *pyonnxio_external_data_open(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"base_dir", "location", "append", NULL};
    PyObject *base = NULL, *location = NULL;
    int append = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&|p:_external_data_open", kwlist, PyUnicode_FSConverter, &base,
                                     PyUnicode_FSConverter, &location, &append))
        goto fail;
    open_call c = {PyBytes_AS_STRING(base), PyBytes_AS_STRING(location), append, -1, 0};
    onnxio_status s;
    pyonnxio_call_unlocked(NULL, NULL, open_run, &c, &s);
    Py_DECREF(base);
    Py_DECREF(location);
    if (s) return pyonnxio_raise(pyonnxio_state_of_module(self), s);
    PyObject *out = Py_BuildValue("(iK)", c.fd, (unsigned long long)c.size);
    if (!out) close(c.fd);
    return out;
fail:
    Py_XDECREF(base);
    Py_XDECREF(location);
    return NULL;
}

const char pyonnxio_tensor_raw_size_doc[] =
    "_tensor_raw_size(tensor) -> int | None\n"
    "The bytes raw_data must hold for the tensor's data_type and dims (onnxio_tensor_raw_size: elements\n"
    "times bits, sub-byte types packed and rounded up to whole bytes); None when the size is not fixed\n"
    "(STRING, UNDEFINED or an unknown data_type, a segment). ValueError for a negative dimension or a\n"
    "size past 64 bits.";

PyObject *pyonnxio_tensor_raw_size(PyObject *self, PyObject *obj)
{
    PyOnnxioMessage *m = pyonnxio_as_message(pyonnxio_state_of_module(self), obj, &onnxio_desc_TensorProto, "tensor");
    if (!m) return NULL;
    uint64_t bytes = 0;
    int r = onnxio_tensor_raw_size(pyonnxio_message_read(m), &bytes);
    if (r == 0) Py_RETURN_NONE;
    if (r < 0)
        return PyErr_Format(PyExc_ValueError, "tensor has a negative dimension or more bytes than 64 bits count");
    return PyLong_FromUnsignedLongLong(bytes);
}

const char pyonnxio_path_is_archive_doc[] =
    "_path_is_archive(path) -> bool\n"
    "Whether saving to `path` writes an .onnxz archive (onnxio_path_is_archive: the name ends in\n"
    "\".onnxz\").";

PyObject *pyonnxio_path_is_archive(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *bytes;
    if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
    int yes = onnxio_path_is_archive(PyBytes_AS_STRING(bytes));
    Py_DECREF(bytes);
    return PyBool_FromLong(yes);
}

