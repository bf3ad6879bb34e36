/*
 * pyonnxio.h: what the files of the onnxio Python extension (onnxio._onnxio)
 * share. Plain CPython C API, no numpy C API (numpy sees payloads through
 * the buffer protocol), no code generation: every class comes from the
 * descriptors of onnxio/proto.h at import time.
 *
 * Files (one job each), in the order of their headings below:
 *   module.c    the method table of onnxio._onnxio, its module definition,
 *               multi-phase init and the module state.
 *   message.c   message objects: the descriptor <-> class registry,
 *               lifetime, lazy sub-messages, busy trees, field get/set,
 *               constructor keywords, walks of a tree.
 *   message_methods.c  onnxio.Message: the protobuf message methods, parse
 *               and serialize, str (text format), comparison.
 *   coerce.c    messages of the onnx package turned into onnxio's.
 *   classes.c   one heap type per message descriptor, nesting, enum
 *               constants, the reflection tables published.
 *   values.c    scalar, enum, string and bytes values between Python and C.
 *   repeated.c  the repeated-field containers (scalar and message).
 *   errors.c    the exceptions, status -> exception mapping (pyonnxio_raise).
 *   args.c      what the entry points share to read their arguments
 *               ("O&" converters, the message of an argument).
 *   progress.c  the progress callback of loads and saves, and their Ctrl-C
 *               check.
 *   payload.c   payloads seen from Python: owners made of Python objects,
 *               the _Payload type (buffer protocol) behind payload views for
 *               numpy, and the raw_data entry points (view, set, share,
 *               consolidate).
 *   load.c      the load and parse entry points: parse options, a Python
 *               payload_fn called from C, the GIL released.
 *   save.c      the save entry points (_save_file, _archive_replace_model).
 *   wire.c      a message's wire bytes (_serialize) and unknown fields.
 *   text.c      the text formats (_text_format, _text_parse).
 *   external.c  the format rules of external data, for the Python helpers.
 *   tables.c    the library's data type, option and schema tables as
 *               Python data.
 *   dlpack.c    TensorProto.__dlpack__ / __dlpack_device__: payloads for
 *               torch.from_dlpack and numpy.from_dlpack (dlpack.h: the
 *               DLPack structs).
 *   safetensors.c  .safetensors files: fill initializers from one, write
 *               initializers as one (the C library's rules).
 *   stream.c    streaming saves: initializers from a Python iterator.
 *   remote.c    remote sources: the external ranges a model needs, and
 *               fetched payloads set without a copy.
 *   slice.c     tensor slices (onnxio.slices): initializers of a model
 *               file read in part.
 *
 * Object model (docs/design.md "Front ends"): a Python message is a view of one C
 * message in an onnxio_arena and holds a reference to that arena, so it
 * stays valid whatever happens to the Python object it was read from. A
 * top-level message made in Python (onnxio.ModelProto()) gets an arena of
 * its own; sub-messages live in their root's arena. Nothing is serialized to
 * cross between Python and C.
 *
 * Lazy sub-messages (protobuf's rule): reading an unset message field gives
 * an empty message that is not present; the first write into it (or into
 * any of its descendants, extend([]) included) creates it in the parent's
 * arena and marks it present in the parent, which is created first if it is
 * lazy itself.
 *
 * Clearing (Clear, ClearField, oneof switches done from Python, del of list
 * items) unlinks sub-messages rather than emptying them, so a Python object
 * still referring to one keeps its contents, as in protobuf. Their memory
 * goes with the arena.
 *
 * Payloads (TensorProto.raw_data) always have an owner in objects made by
 * the extension: copy-mode buffers, the shared mapping of a no_copy file
 * load, or the Python bytes object of a no_copy load from bytes (wrapped
 * with a release that takes the GIL). A payload view holds its own reference
 * to that owner, so a numpy array outlives its tensor, model and arena.
 */
#ifndef ONNXIO_PYONNXIO_H
#define ONNXIO_PYONNXIO_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "onnxio/onnxio.h"

/* CPython 3.9 lacks these three (3.10 added them); the same definitions. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
static inline PyObject *Py_XNewRef(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}
static inline int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *value)
{
    if (!value) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "PyModule_AddObjectRef() must be called with an exception raised if value is NULL");
        return -1;
    }
    Py_INCREF(value);
    int rc = PyModule_AddObject(m, name, value);
    if (rc < 0) Py_DECREF(value);
    return rc;
}
#endif

/* ---- module.c: the module state ------------------------------------- */

/* Everything the extension makes at import and keeps (PEP 489 multi-phase
 * init, PEP 573 module state, as CPython's _bz2module.c): its classes, its
 * exceptions, and the registry of message classes (message.c). It lives in
 * the module object; every class the extension makes holds a reference to
 * the module, so the state outlives every object of those classes. The
 * module's GC traverse and clear cover what the state references.
 *
 * One module object per process (PEP 630, "Opt-Out: Limiting to One
 * Module Object per Process"): message objects cross into the C library
 * and back with no module at hand (a C message is wrapped wherever the
 * library hands one out), so the state is reached through pyonnxio_st,
 * set while the module exists. A second import of the extension while one
 * module object exists (another interpreter, or one that dropped it from
 * sys.modules) raises ImportError instead of sharing or replacing it. */
struct pyonnxio_registry; /* message.c */
typedef struct pyonnxio_state {
    PyTypeObject *message_type;   /* onnxio.Message, the base of every message class */
    PyTypeObject *payload_type;   /* _Payload, behind payload views (payload.c) */
    PyTypeObject *scalar_type;    /* RepeatedScalarContainer (repeated.c) */
    PyTypeObject *composite_type; /* RepeatedCompositeContainer */
    PyObject *decode_error;       /* the exceptions (errors.c) */
    PyObject *encode_error;
    PyObject *external_data_error;
    PyObject *archive_error;
    PyObject *external_data_validation_error; /* made once onnx's checker is loaded, or NULL */
    struct pyonnxio_registry *registry;       /* descriptor <-> class (message.c) */
    unsigned long main_thread;                /* threading.main_thread()'s ident (progress.c) */
} pyonnxio_state;

/* The state of the module object, NULL while there is none. */
extern pyonnxio_state *pyonnxio_st;

/* The text of a macro's value, for docstrings that quote a library default
 * (PYONNXIO_STR(ONNXIO_DEFAULT_MAX_DEPTH) is "100"): options.def's values,
 * never spelled here. */
#define PYONNXIO_STR_(x) #x
#define PYONNXIO_STR(x) PYONNXIO_STR_(x)

/* ---- message.c ------------------------------------------------------- */

typedef struct PyOnnxioMessage {
    PyObject_HEAD
    /* The C message and a reference to its arena; both NULL while lazy. */
    onnxio_arena *arena;
    onnxio_message *msg;
    /* Lazy only: the parent object (a strong reference) and the parent's
     * singular message field this object stands for. Dropped once the
     * message exists. */
    struct PyOnnxioMessage *parent;
    const onnxio_field_desc *parent_field;
    /* Lazy only, when the parent is lazy too: the outermost lazy ancestor
     * seen (a strong reference; it may have been materialized since). When
     * its field is still absent from its existing parent, nothing below it
     * exists, so reading a long lazy chain costs O(1), not O(depth). */
    struct PyOnnxioMessage *top;
} PyOnnxioMessage;

/* The descriptor of message object `m`, lazy or not. */
static inline const onnxio_message_desc *pyonnxio_desc_of(PyOnnxioMessage *m)
{
    return m->msg ? m->msg->desc : m->parent_field->message;
}

/* The class of a descriptor (borrowed reference); NULL if unknown. */
PyTypeObject *pyonnxio_message_type(const onnxio_message_desc *desc);
/* The descriptor of an onnxio message object, NULL (no exception set) when
 * `obj` is not one. */
const onnxio_message_desc *pyonnxio_message_desc_of(PyObject *obj);
/* A new Python object for `msg` (a message of `arena`); takes its own arena
 * reference. New reference, NULL with an exception on failure. */
PyObject *pyonnxio_message_wrap(onnxio_arena *arena, void *msg);
/* A new empty top-level message of class `desc` in a new arena. */
PyObject *pyonnxio_message_new_root(const onnxio_message_desc *desc);
/* The C message behind `m`. for_write = 0: NULL while it is still lazy
 * (read the defaults). for_write = 1: creates it (and its lazy ancestors)
 * first; NULL with MemoryError set only when that fails. */
void *pyonnxio_message_get(PyOnnxioMessage *m, int for_write);
/* Marks the tree of `arena` as being read by a call that releases the GIL
 * (a save, a serialization): until the matching pyonnxio_busy_leave, a
 * write into it (pyonnxio_message_get for_write) raises RuntimeError
 * instead of freeing what the call reads. With the GIL. 0, or -1 with
 * RuntimeError when 64 trees are busy already. */
int pyonnxio_busy_enter(onnxio_arena *arena);
void pyonnxio_busy_leave(onnxio_arena *arena);
/* -1 with RuntimeError when m's tree is busy (for writes that do not go
 * through pyonnxio_message_get), else 0. */
int pyonnxio_busy_check(PyOnnxioMessage *m);
/* Calls fn(msg, ctx) for `root` and every message below it, parents first,
 * with a heap stack (a tree made in Python can be nested past any C stack).
 * Stops at the first non-zero result of fn and returns it; 0 when fn
 * always returned 0; -1 with MemoryError when the stack cannot grow. */
int pyonnxio_walk(onnxio_message *root, int (*fn)(onnxio_message *msg, void *ctx), void *ctx);

/* Added by message.c for repeated.c (and any file that needs them): */
/* The C message behind `m` for reading: its own, or while it is lazy a
 * shared empty message of its type, which must never be written. */
void *pyonnxio_message_read(PyOnnxioMessage *m);
/* Applies constructor keywords (protobuf's Message(**kwargs): scalars set,
 * repeated fields extended, message fields copied from a message of their
 * class or initialized from a dict) to message object `self`. 0 or -1. */
int pyonnxio_message_init_kwargs(PyObject *self, PyObject *kwargs);
/* A deep copy of `src` (any arena) as a new message of `arena`
 * (onnxio_message_new + onnxio_message_copy, whose status says why it
 * failed). NULL with the exception set: DecodeError past ONNXIO_MAX_DEPTH,
 * MemoryError. */
void *pyonnxio_message_clone(onnxio_arena *arena, const void *src);
/* Unsets field `f` of `msg` without touching its sub-messages (has-bit off,
 * value zeroed, arrays emptied, sub-message pointer NULL, payload reference
 * dropped), so Python objects still referring to them stay intact. */
void pyonnxio_field_unlink(void *msg, const onnxio_field_desc *f);

/* For classes.c, which makes the classes: */
/* Checks the class tables' size and allocates the registry
 * (pyonnxio_st->registry). 0 or -1. */
int pyonnxio_registry_init(void);
/* The module's GC traverse and clear of what the registry references (the
 * classes and FieldDescriptor objects), and its free at module free. */
int pyonnxio_registry_traverse(visitproc visit, void *arg);
void pyonnxio_registry_clear(void);
void pyonnxio_registry_free(void);
/* Records `type` as the class of `desc` (taking over the caller's
 * reference), with an empty message of `desc` for lazy objects to read.
 * In the order of onnxio_all_messages, once each. 0 or -1. */
int pyonnxio_registry_add(const onnxio_message_desc *desc, PyTypeObject *type);
/* _install_descriptor(cls, descriptor) (METH_VARARGS): sets cls.DESCRIPTOR
 * and keeps descriptor.fields_by_number[n] of every field n for ListFields. */
PyObject *pyonnxio_install_descriptor(PyObject *unused, PyObject *args);
/* The getter and setter of every field (the closure is the field's
 * onnxio_field_desc): a value, a repeated container, or a sub-message
 * (lazy when unset); protobuf's refusals for repeated and message fields. */
PyObject *pyonnxio_field_get(PyOnnxioMessage *self, void *closure);
int pyonnxio_field_set(PyOnnxioMessage *self, PyObject *value, void *closure);
/* The message's name without its package and enclosing messages. */
const char *pyonnxio_short_name(const onnxio_message_desc *d);

/* For message_methods.c, the methods of onnxio.Message: */
/* Its slots for lifetime and construction (tp_dealloc, tp_new, tp_init:
 * constructor keywords, no positional arguments). */
void pyonnxio_message_dealloc(PyOnnxioMessage *self);
PyObject *pyonnxio_message_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs);
int pyonnxio_message_tp_init(PyObject *self, PyObject *args, PyObject *kwargs);
/* A new empty top-level message of class `tp` (a message class or a
 * Python subclass of one, for descriptor `desc`) in a new arena. */
PyObject *pyonnxio_message_new_of_type(PyTypeObject *tp, const onnxio_message_desc *desc);
/* The same without its struct (msg NULL), for a parse to make it
 * (FromString); *desc is the class's descriptor. */
PyOnnxioMessage *pyonnxio_message_new_unmade(PyTypeObject *tp, const onnxio_message_desc **desc);
/* The field of `d` called `name` (str), or NULL with TypeError or
 * protobuf's ValueError. `is_oneof` non-NULL: a oneof's name is accepted
 * too, giving the oneof's first member and *is_oneof = 1. */
const onnxio_field_desc *pyonnxio_field_named(const onnxio_message_desc *d, PyObject *name, int *is_oneof);
/* Unsets every field of `c`, unlinking sub-messages (pyonnxio_field_unlink),
 * and drops its unknown fields. */
void pyonnxio_message_clear(onnxio_message *c);
/* Merges `src` (any arena) into self's message, which is created when
 * lazy; a source of the same arena (an ancestor, a descendant, self) is
 * cloned first. 0 or -1. */
int pyonnxio_message_merge_into(PyOnnxioMessage *self, PyOnnxioMessage *src);
/* The FieldDescriptor objects of `desc`'s fields, by field index, that
 * _install_descriptor kept (borrowed); NULL before it ran. */
PyObject **pyonnxio_field_descriptors(const onnxio_message_desc *desc);

/* ---- message_methods.c ----------------------------------------------- */

/* The spec of onnxio.Message: its slots and the protobuf message methods
 * (classes.c makes the type). */
extern PyType_Spec pyonnxio_message_base_spec;
/* Message.FromString(data) (METH_O | METH_CLASS): a new message of class
 * `cls` parsed from `data`, as protobuf's FromString. */
PyObject *pyonnxio_message_from_string(PyObject *cls, PyObject *data);
/* The wire bytes of `msg` (onnxio_serialize_to, the GIL released for a
 * large one), or NULL with EncodeError (a skipped payload, too deep) or
 * MemoryError set. `arena` (NULL: a tree no Python code can reach) is
 * marked busy while the GIL is released (pyonnxio_busy_enter). */
PyObject *pyonnxio_serialize(void *msg, onnxio_arena *arena);

/* ---- coerce.c -------------------------------------------------------- */

/* A new reference to `obj` as an onnxio message, for every place that takes
 * one (constructors, CopyFrom, MergeFrom, append, extend, insert): `obj`
 * itself when it is an onnxio message or no message at all (the caller's
 * type check then refuses it as before); for a message of the onnx package
 * (any protobuf message whose DESCRIPTOR.full_name names an ONNX message), a
 * new onnxio message of that class parsed from its SerializeToString(), so
 * the two are equal field for field. NULL with an exception when that
 * serialization or parse fails. */
PyObject *pyonnxio_coerce_message(PyObject *obj);
/* _coerce of module.c's method table (METH_O), and its doc string. */
PyObject *pyonnxio_coerce(PyObject *self, PyObject *obj);
extern const char pyonnxio_coerce_doc[];

/* ---- classes.c ------------------------------------------------------- */

/* Creates the class of every message descriptor (onnxio_all_messages),
 * nests them (TensorProto.Segment is an attribute of TensorProto), and adds
 * the top-level ones to `module` under their ONNX names. 0 or -1. */
int pyonnxio_message_init(PyObject *module);

/* ---- values.c -------------------------------------------------------- */

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

/* ---- repeated.c ------------------------------------------------------ */

/* Creates the container classes (RepeatedScalarContainer,
 * RepeatedCompositeContainer) and adds them to `module`. 0 or -1. */
int pyonnxio_repeated_init(PyObject *module);
/* A container for repeated field `field` of `owner` (which may be lazy: the
 * container creates it on the first write, extend([]) included). It holds a
 * strong reference to `owner`. New reference. */
PyObject *pyonnxio_repeated_new(PyOnnxioMessage *owner, const onnxio_field_desc *field);

/* ---- errors.c -------------------------------------------------------- */

/* The exceptions, in pyonnxio_st: onnxio.DecodeError (a ValueError,
 * protobuf's DecodeError name), onnxio.EncodeError, onnxio.ExternalDataError
 * (a ValueError: path, range and checksum refusals of external data) and
 * onnxio.ArchiveError (a DecodeError: a malformed or unsafe .onnxz
 * archive). */
/* Raises the exception for a failed status, with onnxio_last_error() as
 * its message (onnxio_status_message when there is none). The exception
 * follows the status's class column in onnxio/status.def, the one list of
 * statuses: DECODE -> onnxio.DecodeError, ARCHIVE -> onnxio.ArchiveError (a
 * DecodeError), EXTERNAL -> onnxio.ExternalDataError (a ValueError), ENCODE
 * -> onnxio.EncodeError, IO -> OSError (the subclass of its errno when the
 * operating system refused: onnxio_last_errno), NOT_FOUND ->
 * FileNotFoundError (errno ENOENT), MEMORY -> MemoryError, ARGUMENT (and a number status.def
 * lacks) -> ValueError. Returns NULL so that callers can
 * `return pyonnxio_raise(s);`. */
PyObject *pyonnxio_raise(onnxio_status status);
/* The same for a writing operation (serialize, ByteSize, save, text
 * format): a DECODE-class status (ONNXIO_ERR_DEPTH: a tree nested deeper
 * than max_depth) raises onnxio.EncodeError, since nothing was decoded. */
PyObject *pyonnxio_raise_writing(onnxio_status status);
/* pyonnxio_raise (writing: pyonnxio_raise_writing) for a call on `path`:
 * an operating system refusal (onnxio_last_errno) raises the OSError
 * subclass of its errno (PermissionError, IsADirectoryError, ...) with
 * errno and strerror set, and filename = `path` when the message is about
 * it, as open() does. */
PyObject *pyonnxio_raise_path(onnxio_status status, int writing, const char *path);
/* Creates the four exceptions above and adds them to `module`. 0 or -1. */
int pyonnxio_errors_init(PyObject *module);
/* _raise_status of module.c's method table (METH_VARARGS | METH_KEYWORDS):
 * raises what an entry point raises for a status. */
PyObject *pyonnxio_raise_status(PyObject *self, PyObject *args, PyObject *kw);
extern const char pyonnxio_raise_status_doc[];
/* _external_data_error of module.c's method table (METH_NOARGS): the class
 * that refused external data raises now. */
PyObject *pyonnxio_external_data_error(PyObject *self, PyObject *noargs);
extern const char pyonnxio_external_data_error_doc[];

/* ---- args.c ---------------------------------------------------------- */

/* The descriptor of a message class, a message instance, or a name
 * ("TensorProto", "onnx.TensorProto", "TensorProto.Segment"). */
const onnxio_message_desc *pyonnxio_desc_from(PyObject *what);
/* The onnxio message object `obj`, or TypeError. `want` NULL: any type. */
PyOnnxioMessage *pyonnxio_as_message(PyObject *obj, const onnxio_message_desc *want, const char *what);
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

/* ---- progress.c ------------------------------------------------------ */

/* A Python progress callable `fn(done, total)` behind onnxio_progress_fn,
 * or the signal check of a call without one (progress.c has the rules). */
typedef struct pyonnxio_progress {
    PyObject *fn; /* borrowed, or NULL */
    int signals;  /* no fn: check for signals */
    uint64_t last_check_ns;
    PyObject *exc_type, *exc_value, *exc_tb;
} pyonnxio_progress;
/* Sets up `p` for the callable `fn` and points *opt_fn / *opt_user (the
 * options' progress and progress_user) at it; None: no callback, and with
 * `signals` the signal check on the main thread. -1 with TypeError for
 * anything else that is not callable. */
int pyonnxio_progress_init(pyonnxio_progress *p, PyObject *fn, int signals, onnxio_progress_fn *opt_fn,
                           void **opt_user);
/* With the GIL: 1 when the callback raised (the exception is set now). */
int pyonnxio_progress_raised(pyonnxio_progress *p);
/* On the main thread, installs the signal check of `p` as a load's cancel
 * poll (onnxio_parse_options.cancel): Ctrl-C stops a load without a
 * callable. */
void pyonnxio_progress_cancel_poll(pyonnxio_progress *p, onnxio_cancel_fn *opt_fn, void **opt_user);

/* ---- payload.c ------------------------------------------------------- */

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
 * own reference to the span's owner (a copy is made for a borrowed span).
 * Writable only when onnxio_buffer_is_allocated(owner). New reference;
 * None for a payload skipped at load (data NULL, size > 0). */
PyObject *pyonnxio_payload_view(const onnxio_span *span);
/* Creates the _Payload heap type behind those views (reached through
 * them: `module` does not name it). 0 or -1. */
int pyonnxio_payload_init(PyObject *module);
/* _consolidate of module.c's method table (METH_VARARGS | METH_KEYWORDS). */
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

/* ---- dlpack.c -------------------------------------------------------- */

/* Adds __dlpack__ and __dlpack_device__ to the TensorProto class (after
 * pyonnxio_message_init): raw_data exported as a DLPack capsule that holds
 * its own reference to the payload's owner (dlpack.c has the rules). 0 or
 * -1. */
int pyonnxio_dlpack_init(PyObject *module);

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
