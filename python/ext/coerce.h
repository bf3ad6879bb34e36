/* coerce.h: messages of the onnx package turned into onnxio's (coerce.c). */
#ifndef ONNXIO_PY_COERCE_H
#define ONNXIO_PY_COERCE_H

#include "state.h"

/* A new reference to `obj` as an onnxio message, for every place that takes
 * one (constructors, CopyFrom, MergeFrom, append, extend, insert): `obj`
 * itself when it is an onnxio message or no message at all (the caller's
 * type check then refuses it as before); for a message of the onnx package
 * (any protobuf message whose DESCRIPTOR.full_name names an ONNX message), a
 * new onnxio message of that class (st's) parsed from its
 * SerializeToString(), so the two are equal field for field. NULL with an
 * exception when that serialization or parse fails. */
PyObject *pyonnxio_coerce_message(pyonnxio_state *st, PyObject *obj);

#endif
