/* repeated.h: the repeated-field containers (repeated.c). */
#ifndef ONNXIO_PY_REPEATED_H
#define ONNXIO_PY_REPEATED_H

#include "message.h"

/* A container for repeated field `field` of `owner` (which may be lazy: the
 * container creates it on the first write, extend([]) included). It holds a
 * strong reference to `owner`. New reference. */
PyObject *pyonnxio_repeated_new(PyOnnxioMessage *owner, const onnxio_field_desc *field);

#endif
