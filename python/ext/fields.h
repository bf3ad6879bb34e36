/* fields.h: the attribute of every field of a message class (fields.c):
 * the getter and setter that classes.c puts in each class's PyGetSetDef,
 * with the field's onnxio_field_desc as closure. */
#ifndef ONNXIO_PY_FIELDS_H
#define ONNXIO_PY_FIELDS_H

#include "message.h"

/* The value of a field: a value, a repeated container, or a sub-message
 * (lazy when unset). New reference. */
PyObject *pyonnxio_field_get(PyOnnxioMessage *self, void *closure);
/* Sets a singular scalar, string, bytes, enum or raw field; protobuf's
 * refusals (AttributeError) for repeated and message fields and for del. */
int pyonnxio_field_set(PyOnnxioMessage *self, PyObject *value, void *closure);

#endif
