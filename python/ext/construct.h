/* construct.h: the construction of message objects (construct.c):
 * onnxio.Message's tp_init and protobuf's constructor keywords. */
#ifndef ONNXIO_PY_CONSTRUCT_H
#define ONNXIO_PY_CONSTRUCT_H

#include "message.h"

/* onnxio.Message's tp_init: constructor keywords, no positional
 * arguments. */
int pyonnxio_message_tp_init(PyObject *self, PyObject *args, PyObject *kwargs);
/* Applies constructor keywords (protobuf's Message(**kwargs): scalars set,
 * repeated fields extended, message fields copied from a message of their
 * class or initialized from a dict) to message object `self`. 0 or -1. */
int pyonnxio_message_init_kwargs(PyObject *self, PyObject *kwargs);

#endif
