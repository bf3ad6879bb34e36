/* args.h: what the entry points share to read their arguments (args.c):
 * the descriptor a class, message or name stands for, the message object an
 * argument must be, "O&" converters for the option fields of the C option
 * structs (onnxio.h), and the C message of an argument for reading. */
#ifndef ONNXIO_PY_ARGS_H
#define ONNXIO_PY_ARGS_H

#include "message.h"

/* The descriptor of a message class, a message instance, or a name
 * ("TensorProto", "onnx.TensorProto", "TensorProto.Segment"). */
const onnxio_message_desc *pyonnxio_desc_from(pyonnxio_state *st, PyObject *what);
/* The onnxio message object `obj`, or TypeError. `want` NULL: any type. */
PyOnnxioMessage *pyonnxio_as_message(pyonnxio_state *st, PyObject *obj, const onnxio_message_desc *want,
                                     const char *what);
/* "O&" converter: a non-negative integer that fits uint64_t. */
int pyonnxio_conv_u64(PyObject *o, void *out);
/* "O&" converter: an int (not a bool) that fits C int. */
int pyonnxio_conv_int(PyObject *o, void *out);
/* "O&" converter: a nesting depth (an int, not a bool). Any positive value
 * is accepted: the library takes values above ONNXIO_MAX_DEPTH as it, so
 * larger ones are passed as INT_MAX; a negative one is passed on for the
 * library to refuse (ValueError). */
int pyonnxio_conv_depth(PyObject *o, void *out);
/* "O&" converter: None, or a toggle (True -> ON, False -> OFF). */
int pyonnxio_conv_toggle(PyObject *o, void *out);
/* "O&" converter with cleanup: None (-> NULL stays), or a path (str, bytes,
 * os.PathLike) as a bytes object in the file system encoding. */
int pyonnxio_conv_opt_path(PyObject *o, void *out);
/* The path of a bytes object from pyonnxio_conv_opt_path; NULL for NULL. */
const char *pyonnxio_path_str(PyObject *bytes_or_null);
/* The C message of `m` for reading, and in *scratch an arena reference
 * the caller drops that keeps it: m's arena, or for a lazy (never written)
 * message a new one holding an empty message of class `desc`, so that
 * saving it writes what protobuf writes for an empty message. NULL with
 * MemoryError. */
void *pyonnxio_message_for_read(PyOnnxioMessage *m, const onnxio_message_desc *desc, onnxio_arena **scratch);

#endif
