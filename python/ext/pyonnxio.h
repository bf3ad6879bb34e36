/*
 * pyonnxio.h: what module.c gathers into onnxio._onnxio: the entry points
 * of its method table, with their doc strings, and the steps of its
 * Py_mod_exec, each declared under the file that defines it. What the
 * files share beyond that has a header per concern:
 *
 *   state.h     the module state and how a function reaches it (from its
 *               module, a class, a message object); Python.h, the library's
 *               header, the CPython 3.9 shims.
 *   gil.h       library calls made with the GIL released
 *               (pyonnxio_call_unlocked), and the busy trees they read.
 *   errors.h    status -> exception (pyonnxio_raise).
 *   message.h   message objects: the object model, the class registry,
 *               lifetime, lazy sub-messages, presence, clear, clone, merge.
 *   values.h    scalar, enum, string and bytes values between Python and
 *               C, and their stores into fields.
 *   args.h      what the entry points share to read their arguments.
 *   payload.h   payload owners made of Python objects, payload views.
 *   wire.h      parses and serializations of messages.
 *   coerce.h    messages of the onnx package turned into onnxio's.
 *   construct.h tp_init and protobuf's constructor keywords.
 *   repeated.h  the repeated-field containers.
 *   fields.h    the getter and setter of every field.
 *   message_methods.h  onnxio.Message's spec.
 *   progress.h  the progress callback of loads and saves, Ctrl-C.
 *   dlpack.h    the DLPack structs.
 *
 * Files (one job each), the lower ones first: a file calls functions of
 * the files above it in this list, never of those below, so the files
 * call each other in no circle.
 *   gil.c       pyonnxio_call_unlocked and the busy marks.
 *   errors.c    the exceptions, status -> exception mapping (pyonnxio_raise),
 *               _raise_status, _external_data_error.
 *   progress.c  the progress callback of loads and saves, and their Ctrl-C
 *               check.
 *   message.c   message objects: the descriptor <-> class registry,
 *               lifetime, lazy sub-messages, writes refused while a tree is
 *               busy, presence, clear, clone, merge, walks of a tree.
 *   values.c    scalar, enum, string and bytes values between Python and C,
 *               a singular field set, a repeated field's values stored.
 *   args.c      what the entry points share to read their arguments
 *               ("O&" converters, the message of an argument).
 *   payload.c   payloads seen from Python: owners made of Python objects,
 *               the _Payload type (buffer protocol) behind payload views for
 *               numpy, and the raw_data entry points (view, set, share,
 *               consolidate).
 *   wire.c      a message's wire bytes: the parses (FromString,
 *               MergeFromString), the serialization, _serialize and
 *               unknown fields.
 *   coerce.c    messages of the onnx package turned into onnxio's.
 *   construct.c onnxio.Message's tp_init: constructor keywords.
 *   repeated.c  the repeated-field containers (scalar and message).
 *   fields.c    the getter and setter of every field.
 *   message_methods.c  onnxio.Message: the protobuf message methods, str
 *               (text format), comparison.
 *   tables.c    the library's data type, option and schema tables as
 *               Python data.
 *   classes.c   one heap type per message descriptor, nesting, enum
 *               constants, the reflection tables published.
 *   load.c      the load and parse entry points: parse options, a Python
 *               payload_fn called from C, the GIL released.
 *   save.c      the save entry points (_save_file, _archive_replace_model).
 *   text.c      the text formats (_text_format, _text_parse).
 *   external.c  the format rules of external data, for the Python helpers.
 *   dlpack.c    TensorProto.__dlpack__ / __dlpack_device__: payloads for
 *               torch.from_dlpack and numpy.from_dlpack.
 *   safetensors.c  .safetensors files: fill initializers from one, write
 *               initializers as one (the C library's rules).
 *   stream.c    streaming saves: initializers from a Python iterator.
 *   remote.c    remote sources: the external ranges a model needs, and
 *               fetched payloads set without a copy.
 *   slice.c     tensor slices (onnxio.slices): initializers of a model
 *               file read in part.
 *   module.c    the method table of onnxio._onnxio, its module definition,
 *               multi-phase init and the module state's lifetime.
 *
 * Plain CPython C API, no numpy C API (numpy sees payloads through the
 * buffer protocol), no code generation: every class comes from the
 * descriptors of onnxio/proto.h at import time. An entry point's `self` is
 * the module object, whose state it reaches with pyonnxio_state_of_module.
 */
#ifndef ONNXIO_PYONNXIO_H
#define ONNXIO_PYONNXIO_H

#include "state.h"

/* ---- module.c's Py_mod_exec, in its order ---------------------------- */

/* Creates the four exceptions of errors.h and adds them to `module`
 * (errors.c). 0 or -1. */
int pyonnxio_errors_init(PyObject *module);
/* Creates the _Payload heap type behind payload views (payload.c; reached
 * through them: `module` does not name it). 0 or -1. */
int pyonnxio_payload_init(PyObject *module);
/* Creates the class of every message descriptor (onnxio_all_messages),
 * nests them (TensorProto.Segment is an attribute of TensorProto), and adds
 * the top-level ones to `module` under their ONNX names (classes.c). 0 or
 * -1. */
int pyonnxio_message_init(PyObject *module);
/* Creates the container classes (RepeatedScalarContainer,
 * RepeatedCompositeContainer) and adds them to `module` (repeated.c). 0 or
 * -1. */
int pyonnxio_repeated_init(PyObject *module);
/* Adds __dlpack__ and __dlpack_device__ to the TensorProto class (after
 * pyonnxio_message_init): raw_data exported as a DLPack capsule that holds
 * its own reference to the payload's owner (dlpack.c has the rules). 0 or
 * -1. */
int pyonnxio_dlpack_init(PyObject *module);

/* ---- errors.c -------------------------------------------------------- */

/* _raise_status (METH_VARARGS | METH_KEYWORDS): raises what an entry point
 * raises for a status. */
PyObject *pyonnxio_raise_status(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_raise_status_doc[];
/* _external_data_error (METH_NOARGS): the class that refused external data
 * raises now. */
PyObject *pyonnxio_external_data_error(PyObject *self, PyObject *noargs);
extern const char pyonnxio_external_data_error_doc[];

/* ---- payload.c ------------------------------------------------------- */

/* _consolidate (METH_VARARGS | METH_KEYWORDS). */
PyObject *pyonnxio_consolidate(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_consolidate_doc[];
/* _payload_view (METH_O): pyonnxio_payload_view of a tensor's raw_data. */
PyObject *pyonnxio_tensor_payload_view(PyObject *self, PyObject *obj);
extern const char pyonnxio_tensor_payload_view_doc[];
/* _set_raw_data (METH_VARARGS): raw_data copied from any buffer. */
PyObject *pyonnxio_set_raw_data(PyObject *self, PyObject *args);
extern const char pyonnxio_set_raw_data_doc[];
/* _share_raw_data (METH_VARARGS): raw_data shared with a contiguous buffer. */
PyObject *pyonnxio_share_raw_data(PyObject *self, PyObject *args);
extern const char pyonnxio_share_raw_data_doc[];

/* ---- coerce.c -------------------------------------------------------- */

/* _coerce (METH_O): pyonnxio_coerce_message for the Python package. */
PyObject *pyonnxio_coerce(PyObject *self, PyObject *obj);
extern const char pyonnxio_coerce_doc[];

/* ---- load.c ---------------------------------------------------------- */

/* _load_file (METH_VARARGS | METH_KEYWORDS): a file holding one message. */
PyObject *pyonnxio_load_file(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_load_file_doc[];
/* _load_bytes (METH_VARARGS | METH_KEYWORDS): one message parsed from bytes. */
PyObject *pyonnxio_load_bytes(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_load_bytes_doc[];
/* _load_external_data (METH_VARARGS | METH_KEYWORDS): a model's external payloads read. */
PyObject *pyonnxio_load_external_data(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_load_external_data_doc[];
/* _load_tensor_external_data (METH_VARARGS | METH_KEYWORDS): the same for one tensor. */
PyObject *pyonnxio_load_tensor_external_data(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_load_tensor_external_data_doc[];

/* ---- save.c ---------------------------------------------------------- */

/* _save_file (METH_VARARGS | METH_KEYWORDS): a message saved to a file, atomically. */
PyObject *pyonnxio_save_file(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_save_file_doc[];
/* _archive_replace_model (METH_VARARGS | METH_KEYWORDS): an .onnxz archive's model replaced. */
PyObject *pyonnxio_archive_replace_model(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_archive_replace_model_doc[];

/* ---- wire.c ---------------------------------------------------------- */

/* _serialize (METH_O): a message's protobuf wire bytes. */
PyObject *pyonnxio_wire_serialize(PyObject *self, PyObject *obj);
extern const char pyonnxio_wire_serialize_doc[];
/* _unknown_fields (METH_O): the unknown fields of a message or of bytes. */
PyObject *pyonnxio_wire_unknown_fields(PyObject *self, PyObject *obj);
extern const char pyonnxio_wire_unknown_fields_doc[];

/* ---- text.c ---------------------------------------------------------- */

/* _text_format (METH_VARARGS): a message as text in one of the styles. */
PyObject *pyonnxio_text_format(PyObject *self, PyObject *args);
extern const char pyonnxio_text_format_doc[];
/* _text_parse (METH_VARARGS | METH_KEYWORDS): a new message read from text. */
PyObject *pyonnxio_text_parse(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_text_parse_doc[];

/* ---- external.c ------------------------------------------------------ */

/* _has_pending_external (METH_O): tensors marked external hold raw_data. */
PyObject *pyonnxio_has_pending_external(PyObject *self, PyObject *obj);
extern const char pyonnxio_has_pending_external_doc[];
/* _external_ref_parse (METH_O): a tensor's external_data keys, parsed. */
PyObject *pyonnxio_external_ref_parse(PyObject *self, PyObject *obj);
extern const char pyonnxio_external_ref_parse_doc[];
/* _check_location (METH_O): the spelling rules of a location. */
PyObject *pyonnxio_check_location(PyObject *self, PyObject *arg);
extern const char pyonnxio_check_location_doc[];
/* _external_data_open (METH_VARARGS | METH_KEYWORDS): the checked open of a data file. */
PyObject *pyonnxio_external_data_open(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_external_data_open_doc[];
/* _tensor_raw_size (METH_O): the bytes raw_data must hold. */
PyObject *pyonnxio_tensor_raw_size(PyObject *self, PyObject *obj);
extern const char pyonnxio_tensor_raw_size_doc[];
/* _path_is_archive (METH_O): whether a save to a path writes .onnxz. */
PyObject *pyonnxio_path_is_archive(PyObject *self, PyObject *arg);
extern const char pyonnxio_path_is_archive_doc[];

/* ---- tables.c -------------------------------------------------------- */

/* _data_types (METH_NOARGS): the data type table. */
PyObject *pyonnxio_data_types(PyObject *self, PyObject *noargs);
extern const char pyonnxio_data_types_doc[];
/* _options (METH_NOARGS): the option table. */
PyObject *pyonnxio_options(PyObject *self, PyObject *noargs);
extern const char pyonnxio_options_doc[];
/* Adds _schema_fields and _schema_rows, the schema's tables that
 * onnxio/_descriptors.py builds Message.DESCRIPTOR from, and _extensions,
 * the file extension table of onnxio.serialization, to `module`. 0 or
 * -1. */
int pyonnxio_schema_tables_add(PyObject *module);

/* ---- safetensors.c ---------------------------------------------------- */

/* _safetensors_load_into and _safetensors_save of module.c's method table
 * (METH_VARARGS | METH_KEYWORDS), and their doc strings. */
PyObject *pyonnxio_safetensors_load_into(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pyonnxio_safetensors_save(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_safetensors_load_into_doc[];
extern const char pyonnxio_safetensors_save_doc[];

/* ---- stream.c --------------------------------------------------------- */

/* _save_streaming of module.c's method table (onnxio.save_streaming). */
PyObject *pyonnxio_save_streaming(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_save_streaming_doc[];

/* ---- remote.c (remote sources) ----------------------------------------- */

/* _external_ranges and _set_fetched_payload of module.c's method table
 * (METH_VARARGS), and their doc strings. */
PyObject *pyonnxio_remote_external_ranges(PyObject *self, PyObject *args);
PyObject *pyonnxio_remote_set_payload(PyObject *self, PyObject *args);
extern const char pyonnxio_remote_external_ranges_doc[];
extern const char pyonnxio_remote_set_payload_doc[];
/* _bytes_are_archive (METH_O). */
PyObject *pyonnxio_remote_is_archive(PyObject *self, PyObject *obj);
extern const char pyonnxio_remote_is_archive_doc[];
PyObject *pyonnxio_remote_archive_open_tail(PyObject *self, PyObject *args);
PyObject *pyonnxio_remote_archive_entries(PyObject *self, PyObject *cap);
PyObject *pyonnxio_remote_archive_read(PyObject *self, PyObject *args);
PyObject *pyonnxio_remote_archive_ranges(PyObject *self, PyObject *args);
PyObject *pyonnxio_remote_archive_set_digests(PyObject *self, PyObject *args);
PyObject *pyonnxio_remote_archive_check(PyObject *self, PyObject *args);
extern const char pyonnxio_remote_archive_set_digests_doc[];
extern const char pyonnxio_remote_archive_check_doc[];
extern const char pyonnxio_remote_archive_open_tail_doc[];
extern const char pyonnxio_remote_archive_entries_doc[];
extern const char pyonnxio_remote_archive_read_doc[];
extern const char pyonnxio_remote_archive_ranges_doc[];


/* ---- slice.c ----------------------------------------------------------- */

/* Tensor slices (onnxio.slices): open a model file, look up initializers,
 * read slices (onnxio_tensor_file_*). */
extern const char pyonnxio_tensor_file_open_doc[];
PyObject *pyonnxio_tensor_file_open(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_tensor_file_close_doc[];
PyObject *pyonnxio_tensor_file_close(PyObject *self, PyObject *cap);
extern const char pyonnxio_tensor_file_info_doc[];
PyObject *pyonnxio_tensor_file_info(PyObject *self, PyObject *args);
extern const char pyonnxio_tensor_file_initializers_doc[];
PyObject *pyonnxio_tensor_file_initializers(PyObject *self, PyObject *cap);
extern const char pyonnxio_tensor_file_read_doc[];
PyObject *pyonnxio_tensor_file_read(PyObject *self, PyObject *args);

#endif
