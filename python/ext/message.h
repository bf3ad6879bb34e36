/* message.h: message objects (message.c): the descriptor <-> class
 * registry, the objects' lifetime, lazy sub-messages, presence, clear,
 * clone and merge, and walks of a tree.
 *
 * Object model (docs/design.md "Front ends"): a Python message is a view of
 * one C message in an onnxio_arena and holds a reference to that arena, so
 * it stays valid whatever happens to the Python object it was read from. A
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
 * to that owner, so a numpy array outlives its tensor, model and arena. */
#ifndef ONNXIO_PY_MESSAGE_H
#define ONNXIO_PY_MESSAGE_H

#include "state.h"

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
    /* The state of the module that made the object's class, set when the
     * object is made (as _sqlite's objects keep theirs): the methods, slots
     * and getters of messages reach the module state here. The object's
     * reference to its class, and the class's to the module, keep it
     * valid. */
    pyonnxio_state *st;
} PyOnnxioMessage;

/* The descriptor of message object `m`, lazy or not. */
static inline const onnxio_message_desc *pyonnxio_desc_of(PyOnnxioMessage *m)
{
    return m->msg ? m->msg->desc : m->parent_field->message;
}

/* Every onnxio_*_array and onnxio_*_list has this layout (proto.h). */
typedef struct pyonnxio_array {
    char *data;
    size_t size, capacity;
} pyonnxio_array;

/* The member of field `f` in C message `msg`. */
static inline void *pyonnxio_member(void *msg, const onnxio_field_desc *f)
{
    return (char *)msg + f->offset;
}

/* ---- the registry: descriptor <-> class -------------------------------- */

/* Checks the class tables' size and allocates st->registry. 0 or -1. */
int pyonnxio_registry_init(pyonnxio_state *st);
/* The module's GC traverse and clear of what the registry references (the
 * classes and FieldDescriptor objects), and its free at module free. */
int pyonnxio_registry_traverse(pyonnxio_state *st, visitproc visit, void *arg);
void pyonnxio_registry_clear(pyonnxio_state *st);
void pyonnxio_registry_free(pyonnxio_state *st);
/* Records `type` as the class of `desc` (taking over the caller's
 * reference), with an empty message of `desc` for lazy objects to read.
 * In the order of onnxio_all_messages, once each. 0 or -1. */
int pyonnxio_registry_add(pyonnxio_state *st, const onnxio_message_desc *desc, PyTypeObject *type);
/* The class of a descriptor (borrowed reference); NULL if unknown. */
PyTypeObject *pyonnxio_message_type(pyonnxio_state *st, const onnxio_message_desc *desc);
/* The descriptor of an onnxio message object, NULL (no exception set) when
 * `obj` is not one. */
const onnxio_message_desc *pyonnxio_message_desc_of(pyonnxio_state *st, PyObject *obj);
/* _install_descriptor(cls, descriptor) of the module (METH_VARARGS, added
 * by classes.c): sets cls.DESCRIPTOR and keeps
 * descriptor.fields_by_number[n] of every field n for ListFields. */
PyObject *pyonnxio_install_descriptor(PyObject *module, PyObject *args);
/* The FieldDescriptor objects of `desc`'s fields, by field index, that
 * _install_descriptor kept (borrowed); NULL before it ran. */
PyObject **pyonnxio_field_descriptors(pyonnxio_state *st, const onnxio_message_desc *desc);

/* ---- objects ------------------------------------------------------------ */

/* A new Python object for `msg` (a message of `arena`); takes its own arena
 * reference. New reference, NULL with an exception on failure. */
PyObject *pyonnxio_message_wrap(pyonnxio_state *st, onnxio_arena *arena, void *msg);
/* The object for singular message field `f` of `self`: its sub-message, or
 * while that is unset a lazy object standing for it. New reference. */
PyObject *pyonnxio_message_field(PyOnnxioMessage *self, const onnxio_field_desc *f);
/* A new empty top-level message of class `desc` in a new arena. */
PyObject *pyonnxio_message_new_root(pyonnxio_state *st, const onnxio_message_desc *desc);
/* A new empty top-level message of class `tp` (a message class or a
 * Python subclass of one, for descriptor `desc`) in a new arena. */
PyObject *pyonnxio_message_new_of_type(pyonnxio_state *st, PyTypeObject *tp, const onnxio_message_desc *desc);
/* The same without its struct (msg NULL), for a parse to make it
 * (FromString); *desc is the class's descriptor. */
PyOnnxioMessage *pyonnxio_message_new_unmade(pyonnxio_state *st, PyTypeObject *tp, const onnxio_message_desc **desc);
/* onnxio.Message's slots for lifetime: tp_dealloc, and tp_new (an empty
 * message of the class; its tp_init is construct.c's). */
void pyonnxio_message_dealloc(PyOnnxioMessage *self);
PyObject *pyonnxio_message_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs);

/* The C message behind `m`. for_write = 0: NULL while it is still lazy
 * (read the defaults). for_write = 1: creates it (and its lazy ancestors)
 * first; NULL with MemoryError set only when that fails, or RuntimeError
 * when its tree is busy (gil.h). */
void *pyonnxio_message_get(PyOnnxioMessage *m, int for_write);
/* The C message behind `m` for reading: its own, or while it is lazy a
 * shared empty message of its type, which must never be written. */
void *pyonnxio_message_read(PyOnnxioMessage *m);
/* -1 with RuntimeError when m's tree is busy (for writes that do not go
 * through pyonnxio_message_get), else 0. */
int pyonnxio_busy_check(PyOnnxioMessage *m);

/* ---- fields, clear, clone, merge ------------------------------------------- */

/* The message's name without its package and enclosing messages. */
const char *pyonnxio_short_name(const onnxio_message_desc *d);
/* The field of `d` called `name` (str), or NULL with TypeError or
 * protobuf's ValueError. `is_oneof` non-NULL: a oneof's name is accepted
 * too, giving the oneof's first member and *is_oneof = 1. */
const onnxio_field_desc *pyonnxio_field_named(const onnxio_message_desc *d, PyObject *name, int *is_oneof);
/* Marks singular field `f` of `msg` present, unlinking the other members
 * of its oneof (not onnxio_set_has, which clears their sub-messages in
 * place). */
void pyonnxio_field_set_present(void *msg, const onnxio_field_desc *f);
/* Unsets field `f` of `msg` without touching its sub-messages (has-bit off,
 * value zeroed, arrays emptied, sub-message pointer NULL, payload reference
 * dropped), so Python objects still referring to them stay intact. */
void pyonnxio_field_unlink(void *msg, const onnxio_field_desc *f);
/* Unsets every field of `c`, unlinking sub-messages (pyonnxio_field_unlink),
 * and drops its unknown fields. */
void pyonnxio_message_clear(onnxio_message *c);
/* A deep copy of `src` (any arena) as a new message of `arena`
 * (onnxio_message_new + onnxio_message_copy, whose status says why it
 * failed). NULL with the exception set: DecodeError past ONNXIO_MAX_DEPTH,
 * MemoryError. */
void *pyonnxio_message_clone(pyonnxio_state *st, onnxio_arena *arena, const void *src);
/* Merges `src` (any arena) into self's message, which is created when
 * lazy; a source of the same arena (an ancestor, a descendant, self) is
 * cloned first. 0 or -1. */
int pyonnxio_message_merge_into(PyOnnxioMessage *self, PyOnnxioMessage *src);
/* Calls fn(msg, ctx) for `root` and every message below it, parents first,
 * with a heap stack (a tree made in Python can be nested past any C stack).
 * Stops at the first non-zero result of fn and returns it; 0 when fn
 * always returned 0; -1 with MemoryError when the stack cannot grow. */
int pyonnxio_walk(onnxio_message *root, int (*fn)(onnxio_message *msg, void *ctx), void *ctx);

#endif
