/* values.h: the values of scalar, enum, string and bytes fields between
 * Python and C (values.c), and their stores into a message's fields. */
#ifndef ONNXIO_PY_VALUES_H
#define ONNXIO_PY_VALUES_H

#include "message.h"

/* One converted value of a scalar, enum, string or bytes field: n for
 * numbers, data/size for strings and bytes (borrowed from the Python object
 * it came from, which must outlive the value). */
typedef struct pyonnxio_value {
    union { int64_t i; uint64_t u; double d; } n;
    const char *data;
    Py_ssize_t size;
} pyonnxio_value;
/* Converts `obj` for field `f` (singular or an element of a repeated
 * field) with protobuf's checks: TypeError for a wrong type (bool for an
 * integer, float for an integer, str for bytes), ValueError out of range or
 * for a number a closed enum lacks. 0 or -1. */
int pyonnxio_value_from_py(const onnxio_field_desc *f, PyObject *obj, pyonnxio_value *out);
/* Stores a converted value at `elem` (the C member, or an array element);
 * strings are copied into `arena`. Does not touch has-bits. 0 or -1. */
int pyonnxio_value_store(onnxio_arena *arena, const onnxio_field_desc *f, void *elem, const pyonnxio_value *v);
/* The Python value of one element: int, float, str (bytes when a parsed
 * string is not UTF-8, as upb) or bytes. New reference. */
PyObject *pyonnxio_value_to_py(const onnxio_field_desc *f, const void *elem);

/* Sets singular scalar, string, bytes, enum or raw field `f` of `self`
 * (created when lazy) to `value` and marks it present (raw_data: a copy of
 * any buffer). 0 or -1. */
int pyonnxio_field_set_value(PyOnnxioMessage *self, const onnxio_field_desc *f, PyObject *value);
/* Appends the items of `seq` to repeated scalar, string, bytes or enum
 * field `f` of `owner` (created when lazy), or with `replace` puts them in
 * place of every element; all are converted first, so that a bad value
 * leaves the field as it was. 0 or -1. */
int pyonnxio_values_store(PyOnnxioMessage *owner, const onnxio_field_desc *f, PyObject *seq, int replace);

#endif
