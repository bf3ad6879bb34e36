/* errors.h: the exceptions of onnxio._onnxio and the one mapping of a
 * failed status to an exception (errors.c).
 *
 * The exceptions, in the module state: onnxio.DecodeError (a ValueError,
 * protobuf's DecodeError name), onnxio.EncodeError, onnxio.ExternalDataError
 * (a ValueError: path, range and checksum refusals of external data) and
 * onnxio.ArchiveError (a DecodeError: a malformed or unsafe .onnxz
 * archive). */
#ifndef ONNXIO_PY_ERRORS_H
#define ONNXIO_PY_ERRORS_H

#include "state.h"

/* Raises the exception for a failed status, with onnxio_last_error() as
 * its message (onnxio_status_message when there is none). The exception
 * follows the status's class column in onnxio/status.def, the one list of
 * statuses: DECODE -> onnxio.DecodeError, ARCHIVE -> onnxio.ArchiveError (a
 * DecodeError), EXTERNAL -> onnxio.ExternalDataError (a ValueError), ENCODE
 * -> onnxio.EncodeError, IO -> OSError (the subclass of its errno when the
 * operating system refused: onnxio_last_errno), NOT_FOUND ->
 * FileNotFoundError (errno ENOENT), MEMORY -> MemoryError, ARGUMENT (and a
 * number status.def lacks) -> ValueError. `st`: the module state whose
 * exceptions are raised. Returns NULL so that callers can
 * `return pyonnxio_raise(st, s);`. */
PyObject *pyonnxio_raise(pyonnxio_state *st, onnxio_status status);
/* The same for a writing operation (serialize, ByteSize, save, text
 * format): a DECODE-class status (ONNXIO_ERR_DEPTH: a tree nested deeper
 * than max_depth) raises onnxio.EncodeError, since nothing was decoded. */
PyObject *pyonnxio_raise_writing(pyonnxio_state *st, onnxio_status status);
/* pyonnxio_raise (writing: pyonnxio_raise_writing) for a call on `path`:
 * an operating system refusal (onnxio_last_errno) raises the OSError
 * subclass of its errno (PermissionError, IsADirectoryError, ...) with
 * errno and strerror set, and filename = `path` when the message is about
 * it, as open() does. */
PyObject *pyonnxio_raise_path(pyonnxio_state *st, onnxio_status status, int writing, const char *path);

#endif
