/* payload.h: tensor payloads seen from Python (payload.c): payload owners
 * made of Python objects, and the _Payload type behind payload views. Its
 * entry points (_consolidate, _payload_view, _set_raw_data,
 * _share_raw_data) are in pyonnxio.h. */
#ifndef ONNXIO_PY_PAYLOAD_H
#define ONNXIO_PY_PAYLOAD_H

#include "state.h"

/* A payload owner for the bytes of `obj` (a bytes object, or any object
 * exporting a contiguous read-only or writable buffer): the buffer keeps a
 * strong reference to `obj` (and its Py_buffer) and releases them, taking
 * the GIL, when its last reference goes. NULL with an exception set. */
onnxio_buffer *pyonnxio_buffer_for_object(PyObject *obj);
/* The same over a writable buffer export of `obj`, for memory a payload is
 * copied into (a payload_fn's buffer). */
onnxio_buffer *pyonnxio_buffer_for_writable(PyObject *obj);
/* Whether a parse of `data` borrows it instead of copying its payloads
 * (docs/memory.md): an immutable bytes object holding at least one large
 * payload's worth (`raw_data_threshold`, 0: the default). */
int pyonnxio_borrowable(PyObject *data, uint64_t raw_data_threshold);
/* A read-only or writable memoryview of a tensor's payload that holds its
 * own reference to the span's owner (a copy is made for a borrowed span),
 * exported by a _Payload object of st's. Writable only when
 * onnxio_buffer_is_allocated(owner). New reference; None for a payload
 * skipped at load (data NULL, size > 0). */
PyObject *pyonnxio_payload_view(pyonnxio_state *st, const onnxio_span *span);

#endif
