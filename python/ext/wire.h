/* wire.h: messages to and from protobuf wire bytes (wire.c): the parses
 * behind FromString and MergeFromString, and the serialization behind
 * SerializeToString and _serialize. */
#ifndef ONNXIO_PY_WIRE_H
#define ONNXIO_PY_WIRE_H

#include "message.h"

/* Parses `data` (bytes or any buffer; not str) into self's message,
 * merging (protobuf's MergeFromString); `clear_first`: ParseFromString,
 * which clears it first. `make` non-NULL: self has no struct yet
 * (pyonnxio_message_new_unmade) and the parse makes it, a `make` message,
 * in the block it sizes for the tree. An immutable bytes object of at least
 * one large payload's worth is borrowed (pyonnxio_borrowable), as upb does;
 * a large input is parsed with the GIL released, self's tree busy. Returns
 * the number of bytes read, as protobuf, or -1 with an exception set. */
Py_ssize_t pyonnxio_parse_merge(PyOnnxioMessage *self, PyObject *data, int clear_first,
                                const onnxio_message_desc *make);
/* Message.FromString(data) (METH_O | METH_CLASS): a new message of class
 * `cls` parsed from `data`, as protobuf's FromString. */
PyObject *pyonnxio_message_from_string(PyObject *cls, PyObject *data);
/* The wire bytes of `msg` (onnxio_serialize_to, the GIL released for a
 * large one), or NULL with EncodeError (a skipped payload, too deep) or
 * MemoryError set. `arena` (NULL: a tree no Python code can reach) is
 * marked busy while the GIL is released (pyonnxio_call_unlocked). */
PyObject *pyonnxio_serialize(pyonnxio_state *st, void *msg, onnxio_arena *arena);

#endif
