/* The repeated-field containers of onnxio._onnxio (protobuf's
 * RepeatedScalarContainer and RepeatedCompositeContainer). A container is
 * only (owner message object, field descriptor): every operation reads the
 * owner's C array afresh, so a container never goes stale, and a container
 * of a lazy owner creates the owner on its first write (extend([])
 * included), as protobuf does. Arrays grow in the owner's arena
 * (onnxio_array_append / onnxio_list_add); deletions shift elements with
 * memmove. Removed message elements stay in the arena, so Python objects for
 * them stay valid (message.h). */
#include <string.h>

#include "coerce.h"
#include "construct.h"
#include "pyonnxio.h"
#include "repeated.h"
#include "values.h"

typedef struct Repeated {
    PyObject_HEAD
    PyOnnxioMessage *owner; /* strong reference; its st is the module state */
    const onnxio_field_desc *field;
} Repeated;

static inline int is_composite(Repeated *r)
{
    return r->field->kind == ONNXIO_KIND_MESSAGE;
}

static inline pyonnxio_array *arr_read(Repeated *r)
{
    void *c = r->owner->msg ? (void *)r->owner->msg : pyonnxio_message_read(r->owner);
    return (pyonnxio_array *)((char *)c + r->field->offset);
}

/* The array for writing (the owner is created when lazy); NULL with an
 * exception set. */
static pyonnxio_array *arr_write(Repeated *r)
{
    void *c = pyonnxio_message_get(r->owner, 1);
    return c ? (pyonnxio_array *)((char *)c + r->field->offset) : NULL;
}

PyObject *pyonnxio_repeated_new(PyOnnxioMessage *owner, const onnxio_field_desc *field)
{
    PyTypeObject *tp = field->kind == ONNXIO_KIND_MESSAGE ? owner->st->composite_type : owner->st->scalar_type;
    Repeated *r = (Repeated *)tp->tp_alloc(tp, 0);
    if (!r) return NULL;
    Py_INCREF(owner);
    r->owner = owner;
    r->field = field;
    return (PyObject *)r;
}

static void repeated_dealloc(Repeated *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->owner);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* ---- element access --------------------------------------------------- */

static PyObject *elem_to_py(Repeated *r, pyonnxio_array *a, size_t i)
{
    if (is_composite(r)) return pyonnxio_message_wrap(r->owner->st, r->owner->arena, ((void **)a->data)[i]);
    return pyonnxio_value_to_py(r->field, a->data + i * onnxio_field_elem_size(r->field));
}

static Py_ssize_t repeated_len(Repeated *self)
{
    return (Py_ssize_t)arr_read(self)->size;
}

static PyObject *repeated_item(Repeated *self, Py_ssize_t i)
{
    pyonnxio_array *a = arr_read(self);
    if (i < 0 || (size_t)i >= a->size) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return NULL;
    }
    return elem_to_py(self, a, (size_t)i);
}

/* A Python list of the elements (wrappers for messages). */
static PyObject *to_list(Repeated *self)
{
    pyonnxio_array *a = arr_read(self);
    PyObject *list = PyList_New((Py_ssize_t)a->size);
    if (!list) return NULL;
    for (size_t i = 0; i < a->size; i++) {
        PyObject *v = elem_to_py(self, a, i);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* Normalizes an index as list does: negative from the end; IndexError
 * outside [0, n). */
static int norm_index(PyObject *key, size_t n, size_t *out)
{
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0) i += (Py_ssize_t)n;
    if (i < 0 || (size_t)i >= n) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    *out = (size_t)i;
    return 0;
}

static PyObject *repeated_subscript(Repeated *self, PyObject *key)
{
    pyonnxio_array *a = arr_read(self);
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
        Py_ssize_t n = PySlice_AdjustIndices((Py_ssize_t)a->size, &start, &stop, step);
        PyObject *list = PyList_New(n);
        if (!list) return NULL;
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *v = elem_to_py(self, a, (size_t)(start + k * step));
            if (!v) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, k, v);
        }
        return list;
    }
    size_t i;
    if (norm_index(key, a->size, &i) < 0) return NULL;
    return elem_to_py(self, a, i);
}

/* Removes the elements a slice selects (or one index), keeping order. */
static int delete_items(Repeated *self, PyObject *key)
{
    if (pyonnxio_busy_check(self->owner) < 0) return -1;
    pyonnxio_array *a = arr_read(self);
    size_t es = onnxio_field_elem_size(self->field);
    size_t start, step, count;
    if (PySlice_Check(key)) {
        Py_ssize_t b, e, s;
        if (PySlice_Unpack(key, &b, &e, &s) < 0) return -1;
        Py_ssize_t n = PySlice_AdjustIndices((Py_ssize_t)a->size, &b, &e, s);
        if (n == 0) return 0;
        if (s < 0) { /* the same elements, walked upwards */
            b += (n - 1) * s;
            s = -s;
        }
        start = (size_t)b;
        step = (size_t)s;
        count = (size_t)n;
    } else {
        if (norm_index(key, a->size, &start) < 0) return -1;
        step = 1;
        count = 1;
    }
    if (step == 1) {
        memmove(a->data + start * es, a->data + (start + count) * es, (a->size - start - count) * es);
    } else {
        size_t w = start;
        for (size_t r = start; r < a->size; r++) {
            size_t d = r - start;
            if (d % step == 0 && d / step < count) continue;
            memmove(a->data + w * es, a->data + r * es, es);
            w++;
        }
    }
    a->size -= count;
    return 0;
}

/* ---- scalar writes ---------------------------------------------------- */

/* Appends the items of `seq`, or with `replace` puts them in place of every
 * element (pyonnxio_values_store: all converted first). */
static int store_all(Repeated *self, PyObject *seq, int replace)
{
    return pyonnxio_values_store(self->owner, self->field, seq, replace);
}

static int scalar_ass_subscript(Repeated *self, PyObject *key, PyObject *value)
{
    if (!value) return delete_items(self, key);
    if (PySlice_Check(key)) {
        /* list's own slice assignment rules (and errors), then write back */
        PyObject *list = to_list(self);
        if (!list) return -1;
        int rc = PyObject_SetItem(list, key, value);
        if (rc == 0) rc = store_all(self, list, 1);
        Py_DECREF(list);
        return rc;
    }
    size_t i;
    if (norm_index(key, arr_read(self)->size, &i) < 0) return -1;
    pyonnxio_value v;
    if (pyonnxio_value_from_py(self->field, value, &v) < 0) return -1;
    pyonnxio_array *a = arr_write(self); /* non-empty, so the owner exists */
    if (!a) return -1;
    return pyonnxio_value_store(self->owner->arena, self->field, a->data + i * onnxio_field_elem_size(self->field), &v);
}

static PyObject *scalar_append(Repeated *self, PyObject *value)
{
    pyonnxio_value v;
    if (pyonnxio_value_from_py(self->field, value, &v) < 0) return NULL;
    pyonnxio_array *a = arr_write(self);
    if (!a) return NULL;
    void *slot = onnxio_array_append(self->owner->arena, a, onnxio_field_elem_size(self->field));
    if (!slot) return PyErr_NoMemory();
    if (pyonnxio_value_store(self->owner->arena, self->field, slot, &v) < 0) {
        a->size--;
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *scalar_extend(Repeated *self, PyObject *iterable)
{
    if (store_all(self, iterable, 0) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Moves the last element to position `i` (clamped as list.insert). */
static void rotate_last_to(pyonnxio_array *a, size_t es, Py_ssize_t i)
{
    size_t n = a->size - 1; /* elements before the new last one */
    if (i < 0) i += (Py_ssize_t)n;
    if (i < 0) i = 0;
    if ((size_t)i >= n) return;
    char tmp[sizeof(onnxio_span) > 16 ? sizeof(onnxio_span) : 16];
    memcpy(tmp, a->data + n * es, es);
    memmove(a->data + ((size_t)i + 1) * es, a->data + (size_t)i * es, (n - (size_t)i) * es);
    memcpy(a->data + (size_t)i * es, tmp, es);
}

static PyObject *scalar_insert(Repeated *self, PyObject *args)
{
    Py_ssize_t i;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "nO:insert", &i, &value)) return NULL;
    PyObject *r = scalar_append(self, value);
    if (!r) return NULL;
    Py_DECREF(r);
    rotate_last_to(arr_read(self), onnxio_field_elem_size(self->field), i);
    Py_RETURN_NONE;
}

/* Index of the first element equal to `value`, -1 when none (-2 on error). */
static Py_ssize_t find(Repeated *self, PyObject *value)
{
    pyonnxio_array *a = arr_read(self);
    for (size_t i = 0; i < a->size; i++) {
        PyObject *e = elem_to_py(self, a, i);
        if (!e) return -2;
        int eq = PyObject_RichCompareBool(e, value, Py_EQ);
        Py_DECREF(e);
        if (eq < 0) return -2;
        if (eq) return (Py_ssize_t)i;
        a = arr_read(self); /* __eq__ may have run Python code */
    }
    return -1;
}

static int delete_at(Repeated *self, Py_ssize_t i)
{
    PyObject *key = PyLong_FromSsize_t(i);
    if (!key) return -1;
    int rc = delete_items(self, key);
    Py_DECREF(key);
    return rc;
}

static PyObject *repeated_remove(Repeated *self, PyObject *value)
{
    Py_ssize_t i = find(self, value);
    if (i == -2) return NULL;
    if (i == -1) {
        PyErr_SetString(PyExc_ValueError, "remove(x): x not in container");
        return NULL;
    }
    if (delete_at(self, i) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *repeated_pop(Repeated *self, PyObject *args)
{
    Py_ssize_t i = -1;
    if (!PyArg_ParseTuple(args, "|n:pop", &i)) return NULL;
    pyonnxio_array *a = arr_read(self);
    if (i < 0) i += (Py_ssize_t)a->size;
    if (i < 0 || (size_t)i >= a->size) {
        PyErr_Format(PyExc_IndexError, "list index (%zd) out of range", i);
        return NULL;
    }
    /* A popped message stays in the arena: the returned object is valid. */
    PyObject *v = elem_to_py(self, a, (size_t)i);
    if (v && delete_at(self, i) < 0) Py_CLEAR(v);
    return v;
}

static PyObject *repeated_contains_obj(Repeated *self, PyObject *value)
{
    Py_ssize_t i = find(self, value);
    if (i == -2) return NULL;
    return PyBool_FromLong(i >= 0);
}

static int repeated_contains(Repeated *self, PyObject *value)
{
    Py_ssize_t i = find(self, value);
    return i == -2 ? -1 : i >= 0;
}

static PyObject *repeated_index(Repeated *self, PyObject *value)
{
    Py_ssize_t i = find(self, value);
    if (i == -2) return NULL;
    if (i == -1) {
        PyErr_SetString(PyExc_ValueError, "x not in container");
        return NULL;
    }
    return PyLong_FromSsize_t(i);
}

static PyObject *repeated_count(Repeated *self, PyObject *value)
{
    PyObject *list = to_list(self);
    if (!list) return NULL;
    PyObject *r = PyObject_CallMethod(list, "count", "(O)", value);
    Py_DECREF(list);
    return r;
}

static PyObject *repeated_reverse(Repeated *self, PyObject *unused)
{
    if (pyonnxio_busy_check(self->owner) < 0) return NULL;
    pyonnxio_array *a = arr_read(self);
    size_t es = onnxio_field_elem_size(self->field);
    char tmp[sizeof(onnxio_span) > 16 ? sizeof(onnxio_span) : 16];
    for (size_t i = 0, j = a->size ? a->size - 1 : 0; i < j; i++, j--) {
        memcpy(tmp, a->data + i * es, es);
        memcpy(a->data + i * es, a->data + j * es, es);
        memcpy(a->data + j * es, tmp, es);
    }
    Py_RETURN_NONE;
}

/* Sorts a list of the elements with list.sort(*args, **kwargs). */
static PyObject *sorted_list(Repeated *self, PyObject *args, PyObject *kwargs)
{
    PyObject *list = to_list(self);
    if (!list) return NULL;
    PyObject *sort = PyObject_GetAttrString(list, "sort");
    PyObject *r = sort ? PyObject_Call(sort, args, kwargs) : NULL;
    Py_XDECREF(sort);
    if (!r) {
        Py_DECREF(list);
        return NULL;
    }
    Py_DECREF(r);
    return list;
}

static PyObject *scalar_sort(Repeated *self, PyObject *args, PyObject *kwargs)
{
    PyObject *list = sorted_list(self, args, kwargs);
    if (!list) return NULL;
    int rc = store_all(self, list, 1);
    Py_DECREF(list);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *repeated_deepcopy(Repeated *self, PyObject *args)
{
    return to_list(self);
}

/* ---- comparisons and repr ------------------------------------------- */

static PyObject *repeated_richcompare(PyObject *a, PyObject *b, int op)
{
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    pyonnxio_state *st = ((Repeated *)a)->owner->st;
    if (Py_TYPE(b) == st->scalar_type || Py_TYPE(b) == st->composite_type) {
        if (Py_TYPE(a) != Py_TYPE(b)) return PyBool_FromLong(op == Py_NE);
    } else if (!PyList_Check(b)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *la = to_list((Repeated *)a);
    PyObject *lb = PyList_Check(b) ? Py_NewRef(b) : to_list((Repeated *)b);
    PyObject *r = la && lb ? PyObject_RichCompare(la, lb, op) : NULL;
    Py_XDECREF(la);
    Py_XDECREF(lb);
    return r;
}

static PyObject *repeated_repr(Repeated *self)
{
    PyObject *list = to_list(self);
    if (!list) return NULL;
    PyObject *r = PyObject_Repr(list);
    Py_DECREF(list);
    return r;
}

static PyObject *repeated_iter(PyObject *self)
{
    return PySeqIter_New(self);
}

/* ---- composite writes ------------------------------------------------- */

/* Checks that `obj` is a message of the field's class. */
static int check_message(Repeated *self, PyObject *obj)
{
    const onnxio_message_desc *d = pyonnxio_message_desc_of(self->owner->st, obj);
    if (d == self->field->message) return 0;
    if (!d)
        PyErr_Format(PyExc_TypeError, "Expected a message object, but got %R.", obj);
    else
        PyErr_Format(PyExc_TypeError, "Parameter to MergeFrom() must be instance of same class: expected %s got %s.",
                     self->field->message->full_name, d->full_name);
    return -1;
}

/* Appends a deep copy of message object `obj` (already checked); *out,
 * when given, receives the copy. */
static int append_copy(Repeated *self, pyonnxio_array *a, PyObject *obj, void **out)
{
    onnxio_arena *arena = self->owner->arena;
    void *copy = pyonnxio_message_clone(self->owner->st, arena, pyonnxio_message_read((PyOnnxioMessage *)obj));
    if (!copy) return -1;
    void **slot = onnxio_array_append(arena, a, sizeof(void *));
    if (!slot) {
        PyErr_NoMemory();
        return -1;
    }
    *slot = copy;
    if (out) *out = copy;
    return 0;
}

static PyObject *composite_add(Repeated *self, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError, "No positional arguments allowed");
        return NULL;
    }
    pyonnxio_array *a = arr_write(self);
    if (!a) return NULL;
    void *elem = onnxio_list_add(self->owner->arena, a, self->field->message);
    if (!elem) return PyErr_NoMemory();
    PyObject *w = pyonnxio_message_wrap(self->owner->st, self->owner->arena, elem);
    if (w && kwargs && pyonnxio_message_init_kwargs(w, kwargs) < 0) Py_CLEAR(w);
    if (!w) {
        a = arr_read(self);
        if (a->size && ((void **)a->data)[a->size - 1] == elem) a->size--; /* no half-made element */
    }
    return w;
}

static PyObject *composite_append(Repeated *self, PyObject *item)
{
    PyObject *obj = pyonnxio_coerce_message(self->owner->st, item); /* an onnx package message too */
    if (!obj) return NULL;
    pyonnxio_array *a = check_message(self, obj) < 0 ? NULL : arr_write(self);
    void *copy;
    PyObject *r = a && append_copy(self, a, obj, &copy) == 0
                      ? pyonnxio_message_wrap(self->owner->st, self->owner->arena, copy)
                      : NULL;
    Py_DECREF(obj);
    return r; /* upb returns the new element */
}

static PyObject *composite_extend(Repeated *self, PyObject *iterable)
{
    PyObject *given = PySequence_Fast(iterable, "must assign iterable");
    if (!given) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(given);
    /* every item checked (onnx package messages converted) before any is added */
    PyObject *fast = PyList_New(n);
    for (Py_ssize_t k = 0; fast && k < n; k++) {
        PyObject *m = pyonnxio_coerce_message(self->owner->st, PySequence_Fast_GET_ITEM(given, k));
        if (!m || check_message(self, m) < 0) {
            Py_XDECREF(m);
            Py_CLEAR(fast);
            break;
        }
        PyList_SET_ITEM(fast, k, m);
    }
    Py_DECREF(given);
    if (!fast) return NULL;
    PyObject **items = PySequence_Fast_ITEMS(fast);
    pyonnxio_array *a = arr_write(self);
    for (Py_ssize_t k = 0; a && k < n; k++)
        if (append_copy(self, a, items[k], NULL) < 0) a = NULL;
    Py_DECREF(fast);
    if (!a) return NULL;
    Py_RETURN_NONE;
}

static PyObject *composite_insert(Repeated *self, PyObject *args)
{
    Py_ssize_t i;
    PyObject *item;
    if (!PyArg_ParseTuple(args, "nO:insert", &i, &item)) return NULL;
    PyObject *obj = pyonnxio_coerce_message(self->owner->st, item); /* an onnx package message too */
    if (!obj) return NULL;
    pyonnxio_array *a = check_message(self, obj) < 0 ? NULL : arr_write(self);
    int ok = a && append_copy(self, a, obj, NULL) == 0;
    Py_DECREF(obj);
    if (!ok) return NULL;
    rotate_last_to(a, sizeof(void *), i);
    Py_RETURN_NONE;
}

static PyObject *composite_sort(Repeated *self, PyObject *args, PyObject *kwargs)
{
    if (pyonnxio_busy_check(self->owner) < 0) return NULL;
    PyObject *list = sorted_list(self, args, kwargs);
    if (!list) return NULL;
    pyonnxio_array *a = arr_read(self);
    if ((size_t)PyList_GET_SIZE(list) == a->size) /* unless a key function changed the container */
        for (size_t i = 0; i < a->size; i++)
            ((void **)a->data)[i] = ((PyOnnxioMessage *)PyList_GET_ITEM(list, (Py_ssize_t)i))->msg;
    Py_DECREF(list);
    Py_RETURN_NONE;
}

static int composite_ass_subscript(Repeated *self, PyObject *key, PyObject *value)
{
    if (!value) return delete_items(self, key);
    PyErr_SetString(PyExc_TypeError, "does not support assignment");
    return -1;
}

static PyObject *repeated_MergeFrom(Repeated *self, PyObject *other)
{
    return is_composite(self) ? composite_extend(self, other) : scalar_extend(self, other);
}

/* ---- types ------------------------------------------------------------ */

/* clear(), as protobuf's containers have it (they are registered as
 * collections.abc.MutableSequence, and so are these: onnxio/__init__.py). */
static PyObject *repeated_clear(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *all = PySlice_New(NULL, NULL, NULL);
    if (!all) return NULL;
    int rc = PyObject_DelItem(self, all);
    Py_DECREF(all);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef scalar_methods[] = {
    {"append", (PyCFunction)scalar_append, METH_O,
     "append(value): appends one value, type-checked as the field (TypeError, ValueError out of range)."},
    {"extend", (PyCFunction)scalar_extend, METH_O,
     "extend(iterable): appends every value (all converted first: nothing is appended on error)."},
    {"insert", (PyCFunction)scalar_insert, METH_VARARGS, "insert(index, value), as list.insert."},
    {"remove", (PyCFunction)repeated_remove, METH_O, "remove(value): removes the first equal value (ValueError if none)."},
    {"pop", (PyCFunction)repeated_pop, METH_VARARGS, "pop(index=-1) -> value: removes and returns a value."},
    {"sort", (PyCFunction)(void (*)(void))scalar_sort, METH_VARARGS | METH_KEYWORDS, "sort(key=None, reverse=False)."},
    {"reverse", (PyCFunction)repeated_reverse, METH_NOARGS, "reverse(): reverses in place."},
    {"index", (PyCFunction)repeated_index, METH_O, "index(value) -> int: position of the first equal value."},
    {"count", (PyCFunction)repeated_count, METH_O, "count(value) -> int."},
    {"clear", (PyCFunction)repeated_clear, METH_NOARGS, "clear(): removes every value."},
    {"MergeFrom", (PyCFunction)repeated_MergeFrom, METH_O, "MergeFrom(iterable): same as extend."},
    {"__contains__", (PyCFunction)repeated_contains_obj, METH_O | METH_COEXIST, NULL},
    {"__deepcopy__", (PyCFunction)repeated_deepcopy, METH_VARARGS, "A list of the values."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef composite_methods[] = {
    {"add", (PyCFunction)(void (*)(void))composite_add, METH_VARARGS | METH_KEYWORDS,
     "add(**kwargs) -> message: appends a new message (initialized as the class constructor would) and returns "
     "it; it lives in the container's model."},
    {"append", (PyCFunction)composite_append, METH_O,
     "append(message) -> message: appends a deep copy of a message of the field's class (TypeError otherwise) "
     "and returns the copy."},
    {"extend", (PyCFunction)composite_extend, METH_O, "extend(iterable): appends deep copies of the messages."},
    {"insert", (PyCFunction)composite_insert, METH_VARARGS, "insert(index, message): inserts a deep copy."},
    {"remove", (PyCFunction)repeated_remove, METH_O, "remove(message): removes the first equal message."},
    {"pop", (PyCFunction)repeated_pop, METH_VARARGS,
     "pop(index=-1) -> message: removes a message and returns it (still valid, no longer in the container)."},
    {"sort", (PyCFunction)(void (*)(void))composite_sort, METH_VARARGS | METH_KEYWORDS, "sort(key=None, reverse=False)."},
    {"reverse", (PyCFunction)repeated_reverse, METH_NOARGS, "reverse(): reverses in place."},
    {"index", (PyCFunction)repeated_index, METH_O, "index(message) -> int: position of the first equal message."},
    {"clear", (PyCFunction)repeated_clear, METH_NOARGS, "clear(): removes every message."},
    {"MergeFrom", (PyCFunction)repeated_MergeFrom, METH_O, "MergeFrom(iterable): same as extend."},
    {"__contains__", (PyCFunction)repeated_contains_obj, METH_O | METH_COEXIST, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot scalar_slots[] = {
    {Py_tp_dealloc, repeated_dealloc},
    {Py_sq_length, repeated_len},
    {Py_sq_item, repeated_item},
    {Py_sq_contains, repeated_contains},
    {Py_mp_length, repeated_len},
    {Py_mp_subscript, repeated_subscript},
    {Py_mp_ass_subscript, scalar_ass_subscript},
    {Py_tp_iter, repeated_iter},
    {Py_tp_richcompare, repeated_richcompare},
    {Py_tp_repr, repeated_repr},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_methods, scalar_methods},
    {Py_tp_doc, "A repeated scalar, string or bytes field of a message: a live view, list-like."},
    {0, NULL},
};

static PyType_Slot composite_slots[] = {
    {Py_tp_dealloc, repeated_dealloc},
    {Py_sq_length, repeated_len},
    {Py_sq_item, repeated_item},
    {Py_sq_contains, repeated_contains},
    {Py_mp_length, repeated_len},
    {Py_mp_subscript, repeated_subscript},
    {Py_mp_ass_subscript, composite_ass_subscript},
    {Py_tp_iter, repeated_iter},
    {Py_tp_richcompare, repeated_richcompare},
    {Py_tp_repr, repeated_repr},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_methods, composite_methods},
    {Py_tp_doc, "A repeated message field of a message: a live view, list-like; add() makes new elements."},
    {0, NULL},
};

static PyType_Spec scalar_spec = {
    "onnxio.RepeatedScalarContainer", sizeof(Repeated), 0, Py_TPFLAGS_DEFAULT, scalar_slots,
};
static PyType_Spec composite_spec = {
    "onnxio.RepeatedCompositeContainer", sizeof(Repeated), 0, Py_TPFLAGS_DEFAULT, composite_slots,
};

int pyonnxio_repeated_init(PyObject *module)
{
    pyonnxio_state *st = pyonnxio_state_of_module(module);
    st->scalar_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &scalar_spec, NULL);
    st->composite_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &composite_spec, NULL);
    if (!st->scalar_type || !st->composite_type) return -1;
    if (PyModule_AddObjectRef(module, "RepeatedScalarContainer", (PyObject *)st->scalar_type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "RepeatedCompositeContainer", (PyObject *)st->composite_type) < 0) return -1;
    return 0;
}
