/* message_methods.h: onnxio.Message, the base class of every message
 * class (message_methods.c). */
#ifndef ONNXIO_PY_MESSAGE_METHODS_H
#define ONNXIO_PY_MESSAGE_METHODS_H

#include "state.h"

/* The spec of onnxio.Message: its slots and the protobuf message methods
 * (classes.c makes the type). */
extern PyType_Spec pyonnxio_message_base_spec;

#endif
