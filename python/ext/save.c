/* The save entry points: _save_file (onnxio_save_model / onnxio_save_file
 * with the options of onnxio_serialize_options, a progress callback and
 * Ctrl-C) and _archive_replace_model, each with the GIL released and the
 * message's tree marked busy meanwhile (pyonnxio_call_unlocked). */
#include "args.h"
#include "errors.h"
#include "gil.h"
#include "progress.h"
#include "pyonnxio.h"

/* A save's library call, made without the GIL. */
typedef struct save_call {
    void *msg;
    const char *path;
    const onnxio_serialize_options *so;
} save_call;

static onnxio_status save_file_run(void *ctx)
{
    save_call *c = ctx;
    if (((onnxio_message *)c->msg)->desc == &onnxio_desc_ModelProto) return onnxio_save_model(c->msg, c->path, c->so);
    return onnxio_save_file(c->msg, c->path, c->so);
}

static onnxio_status archive_replace_run(void *ctx)
{
    save_call *c = ctx;
    return onnxio_archive_replace_model(c->path, c->msg, c->so);
}

const char pyonnxio_save_file_doc[] =
    "_save_file(message, path, *, num_threads=0, raw_data_threshold=0, alignment=0, location=None,\n"
    "           size_threshold=0, all_tensors_to_one_file=None, convert_attribute=False,\n"
    "           max_file_size=0, checksum=False, max_depth=0, fsync=True, progress=None, max_expansion=0,\n"
    "           digests=False)\n"
    "Saves `message` to `path` atomically (onnxio_save_model for a ModelProto, with its external data\n"
    "options; onnxio_save_file otherwise). The message is not modified. The GIL is released during\n"
    "the save; 0 means the library's default for every number. max_depth: a tree nested deeper is\n"
    "refused with EncodeError (0: " PYONNXIO_STR(ONNXIO_DEFAULT_MAX_DEPTH) ", what a load reads back by default; at most " PYONNXIO_STR(ONNXIO_MAX_DEPTH) "). fsync=False:\n"
    "no fsync (onnxio_serialize_options.fsync OFF): a killed save still leaves the old or the new\n"
    "files, a power cut may leave a new file incomplete. progress(done, total): called with the payload\n"
    "bytes written so far and in all (onnxio_serialize_options.progress), with the GIL; an exception it\n"
    "raises stops the save, which leaves the old files, and propagates; progress=None on the main\n"
    "thread: so does a signal whose Python handler raises (Ctrl-C). max_expansion: refuse\n"
    "(ExpansionError) payloads adding up to more than this many times the distinct bytes they come\n"
    "from (0: " PYONNXIO_STR(ONNXIO_DEFAULT_MAX_EXPANSION) ").";

PyObject *pyonnxio_save_file(PyObject *self, PyObject *args, PyObject *kw)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    static char *kwlist[] = {"message", "path", "num_threads", "raw_data_threshold", "alignment", "location",
                             "size_threshold", "all_tensors_to_one_file", "convert_attribute", "max_file_size",
                             "checksum", "max_depth", "fsync", "progress", "max_expansion", "digests", NULL};
    PyObject *obj, *path = NULL, *location = NULL, *progress_fn = Py_None;
    pyonnxio_progress progress = {0};
    onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
    int convert_attribute = 0, checksum = 0, fsync = 1, digests = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&|$O&O&O&O&O&O&pO&pO&pOO&p:_save_file", kwlist, &obj,
                                     PyUnicode_FSConverter, &path, pyonnxio_conv_int, &so.num_threads,
                                     pyonnxio_conv_u64, &so.raw_data_threshold, pyonnxio_conv_u64, &so.alignment,
                                     pyonnxio_conv_opt_path, &location, pyonnxio_conv_u64,
                                     &so.external_data.size_threshold, pyonnxio_conv_toggle,
                                     &so.external_data.all_tensors_to_one_file, &convert_attribute,
                                     pyonnxio_conv_u64, &so.external_data.max_file_size, &checksum,
                                     pyonnxio_conv_depth, &so.max_depth, &fsync, &progress_fn, pyonnxio_conv_u64,
                                     &so.max_expansion, &digests))
        goto fail;
    if (pyonnxio_progress_init(st, &progress, progress_fn, 1, &so.progress, &so.progress_user) < 0) goto fail;
    so.fsync = fsync ? ONNXIO_ON : ONNXIO_OFF;
    so.external_data.location = pyonnxio_path_str(location);
    so.external_data.convert_attribute = convert_attribute;
    so.external_data.checksum = checksum;
    so.digests = digests;
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, NULL, "message");
    if (!m) goto fail;
    const onnxio_message_desc *desc = pyonnxio_message_desc_of(st, obj);
    int wants_external = location || so.external_data.all_tensors_to_one_file == ONNXIO_OFF;
    if (desc != &onnxio_desc_ModelProto && wants_external) {
        PyErr_Format(PyExc_ValueError, "external data options apply to a ModelProto, not a %s", desc->name);
        goto fail;
    }
    onnxio_arena *keep;
    void *msg = pyonnxio_message_for_read(m, desc, &keep);
    if (!msg) goto fail;
    onnxio_status s;
    /* The tree stays as it is until the save returns: a progress callback
     * or another thread that changes it gets RuntimeError. */
    save_call c = {msg, PyBytes_AS_STRING(path), &so};
    int rc = pyonnxio_call_unlocked(st, keep, save_file_run, &c, &s);
    onnxio_arena_unref(keep);
    if (rc < 0) goto fail;
    Py_XDECREF(location);
    if (pyonnxio_progress_raised(&progress) || (s && !pyonnxio_raise_path(st, s, 1, PyBytes_AS_STRING(path)))) {
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(path);
    Py_XDECREF(location);
    return NULL;
}

/* ---- .onnxz archives ------------------------------------------------------ */

const char pyonnxio_archive_replace_model_doc[] =
    "_archive_replace_model(model, path, *, num_threads=0)\n"
    "Replaces the __MODEL_PROTO entry of the .onnxz archive at `path` by `model`\n"
    "(onnxio_archive_replace_model): the new model and central directory are appended, no other entry\n"
    "moves, and a crash at any point leaves the old or the new archive. External tensors of `model`\n"
    "must name entries of the archive; loaded payloads are written inline. The GIL is released.";

PyObject *pyonnxio_archive_replace_model(PyObject *self, PyObject *args, PyObject *kw)
{
    pyonnxio_state *st = pyonnxio_state_of_module(self);
    static char *kwlist[] = {"model", "path", "num_threads", NULL};
    PyObject *obj, *path = NULL;
    onnxio_serialize_options so = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&|$O&:_archive_replace_model", kwlist, &obj, PyUnicode_FSConverter,
                                     &path, pyonnxio_conv_int, &so.num_threads))
        return NULL;
    PyOnnxioMessage *m = pyonnxio_as_message(st, obj, &onnxio_desc_ModelProto, "model");
    if (!m) {
        Py_DECREF(path);
        return NULL;
    }
    onnxio_arena *keep;
    void *msg = pyonnxio_message_for_read(m, &onnxio_desc_ModelProto, &keep);
    if (!msg) {
        Py_DECREF(path);
        return NULL;
    }
    onnxio_status s;
    save_call c = {msg, PyBytes_AS_STRING(path), &so};
    int rc = pyonnxio_call_unlocked(st, keep, archive_replace_run, &c, &s);
    onnxio_arena_unref(keep);
    Py_DECREF(path);
    if (rc < 0) return NULL;
    if (s) return pyonnxio_raise_writing(st, s);
    Py_RETURN_NONE;
}

