/* The message objects of onnxio._onnxio: the registry of descriptor <->
 * class, the objects' lifetime (onnxio.Message's dealloc and new), lazy
 * sub-messages, writes refused while a tree is busy, presence, fields by
 * name, clear, clone and merge, and walks of a tree. Field access goes
 * through one PyGetSetDef per field (fields.c), constructor keywords
 * through tp_init (construct.c). Nothing here names an ONNX field. See
 * message.h for the object model. */
#include <string.h>

#include "errors.h"
#include "gil.h"
#include "message.h"

/* ---- registry: descriptor <-> class ---------------------------------- */

typedef struct entry {
    const onnxio_message_desc *desc;
    PyTypeObject *type;
    PyObject **field_descs; /* FieldDescriptor objects, by field index (_install_descriptor) */
    void *empty;           /* an empty message, read by lazy objects; never written */
} entry;

/* Two small open-addressing tables, keyed by pointer: descriptor -> entry
 * and class -> entry. Wrapping a C message looks its class up on every
 * element access, so this must be cheaper than a scan of the ~45 messages. */
#define TABLE_SIZE 256

/* The module state's part of this file (st->registry). */
struct pyonnxio_registry {
    entry *entries; /* one per message descriptor, in onnxio_all_messages' order */
    size_t entry_count;
    onnxio_arena *empty_arena; /* the entries' empty messages */
    entry *by_desc[TABLE_SIZE];
    entry *by_type[TABLE_SIZE];
};

static inline size_t ptr_hash(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 24) & (TABLE_SIZE - 1);
}

static void table_put(entry **table, const void *key, entry *e, int by_type_key)
{
    size_t i = ptr_hash(key);
    while (table[i]) i = (i + 1) & (TABLE_SIZE - 1);
    table[i] = e;
    (void)by_type_key;
}

static inline entry *entry_for_desc(pyonnxio_state *st, const onnxio_message_desc *desc)
{
    for (size_t i = ptr_hash(desc);; i = (i + 1) & (TABLE_SIZE - 1)) {
        entry *e = st->registry->by_desc[i];
        if (!e || e->desc == desc) return e;
    }
}

static inline entry *entry_for_exact_type(pyonnxio_state *st, PyTypeObject *tp)
{
    for (size_t i = ptr_hash(tp);; i = (i + 1) & (TABLE_SIZE - 1)) {
        entry *e = st->registry->by_type[i];
        if (!e || e->type == tp) return e;
    }
}

/* The entry of a message class or of a Python subclass of one. */
static entry *entry_for_type(pyonnxio_state *st, PyTypeObject *tp)
{
    for (; tp; tp = tp->tp_base) {
        entry *e = entry_for_exact_type(st, tp);
        if (e) return e;
    }
    return NULL;
}

PyTypeObject *pyonnxio_message_type(pyonnxio_state *st, const onnxio_message_desc *desc)
{
    entry *e = entry_for_desc(st, desc);
    return e ? e->type : NULL;
}

const onnxio_message_desc *pyonnxio_message_desc_of(pyonnxio_state *st, PyObject *obj)
{
    if (!obj || !PyObject_TypeCheck(obj, st->message_type)) return NULL;
    PyOnnxioMessage *m = (PyOnnxioMessage *)obj;
    if (!m->msg && !m->parent_field) return NULL; /* Message() itself, never built */
    return pyonnxio_desc_of(m);
}

int pyonnxio_registry_init(pyonnxio_state *st)
{
    if (onnxio_all_message_count * 2 > TABLE_SIZE) {
        PyErr_SetString(PyExc_SystemError, "onnxio: too many messages for the class table");
        return -1;
    }
    struct pyonnxio_registry *reg = st->registry = PyMem_Calloc(1, sizeof *reg);
    if (!reg) {
        PyErr_NoMemory();
        return -1;
    }
    reg->entries = PyMem_Calloc(onnxio_all_message_count, sizeof(entry));
    reg->empty_arena = onnxio_arena_new();
    if (!reg->entries || !reg->empty_arena) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int pyonnxio_registry_traverse(pyonnxio_state *st, visitproc visit, void *arg)
{
    struct pyonnxio_registry *reg = st->registry;
    for (size_t i = 0; reg && i < reg->entry_count; i++) {
        entry *e = &reg->entries[i];
        Py_VISIT(e->type);
        for (size_t k = 0; e->field_descs && k < e->desc->field_count; k++) Py_VISIT(e->field_descs[k]);
    }
    return 0;
}

/* The entries stay, with their class NULL: an object freed after the
 * clear (in the same garbage as the module) finds no class, and wraps
 * nothing. */
void pyonnxio_registry_clear(pyonnxio_state *st)
{
    struct pyonnxio_registry *reg = st->registry;
    for (size_t i = 0; reg && i < reg->entry_count; i++) {
        entry *e = &reg->entries[i];
        Py_CLEAR(e->type);
        for (size_t k = 0; e->field_descs && k < e->desc->field_count; k++) Py_CLEAR(e->field_descs[k]);
    }
}

void pyonnxio_registry_free(pyonnxio_state *st)
{
    struct pyonnxio_registry *reg = st->registry;
    if (!reg) return;
    pyonnxio_registry_clear(st);
    for (size_t i = 0; i < reg->entry_count; i++) PyMem_Free(reg->entries[i].field_descs);
    PyMem_Free(reg->entries);
    onnxio_arena_unref(reg->empty_arena);
    PyMem_Free(reg);
    st->registry = NULL;
}

int pyonnxio_registry_add(pyonnxio_state *st, const onnxio_message_desc *desc, PyTypeObject *type)
{
    struct pyonnxio_registry *reg = st->registry;
    if (reg->entry_count == onnxio_all_message_count) {
        PyErr_SetString(PyExc_SystemError, "onnxio: more classes than message descriptors");
        return -1;
    }
    entry *e = &reg->entries[reg->entry_count];
    e->desc = desc;
    e->empty = onnxio_message_new(reg->empty_arena, desc);
    if (!e->empty) {
        PyErr_NoMemory();
        return -1;
    }
    e->type = type;
    reg->entry_count++;
    table_put(reg->by_desc, desc, e, 0);
    table_put(reg->by_type, type, e, 1);
    return 0;
}

/* ---- FieldDescriptors, for ListFields --------------------------------- */

PyObject *pyonnxio_install_descriptor(PyObject *module, PyObject *args)
{
    PyObject *cls, *descriptor;
    if (!PyArg_ParseTuple(args, "O!O:_install_descriptor", &PyType_Type, &cls, &descriptor)) return NULL;
    entry *e = entry_for_exact_type(pyonnxio_state_of_module(module), (PyTypeObject *)cls);
    if (!e) return PyErr_Format(PyExc_TypeError, "_install_descriptor: %R is not an onnxio message class", cls);
    const onnxio_message_desc *d = e->desc;
    PyObject *by_number = PyObject_GetAttrString(descriptor, "fields_by_number");
    if (!by_number) return NULL;
    PyObject **descs = PyMem_Calloc(d->field_count ? d->field_count : 1, sizeof(PyObject *));
    int ok = descs != NULL;
    if (!ok) PyErr_NoMemory();
    for (size_t k = 0; ok && k < d->field_count; k++) {
        PyObject *num = PyLong_FromUnsignedLong(d->fields[k].number);
        descs[k] = num ? PyObject_GetItem(by_number, num) : NULL;
        Py_XDECREF(num);
        ok = descs[k] != NULL;
    }
    Py_DECREF(by_number);
    ok = ok && PyObject_SetAttrString(cls, "DESCRIPTOR", descriptor) == 0;
    if (!ok) {
        for (size_t k = 0; descs && k < d->field_count; k++) Py_XDECREF(descs[k]);
        PyMem_Free(descs);
        return NULL;
    }
    PyObject **old = e->field_descs;
    e->field_descs = descs;
    if (old) {
        for (size_t k = 0; k < d->field_count; k++) Py_XDECREF(old[k]);
        PyMem_Free(old);
    }
    Py_RETURN_NONE;
}

PyObject **pyonnxio_field_descriptors(pyonnxio_state *st, const onnxio_message_desc *desc)
{
    entry *e = entry_for_desc(st, desc);
    return e ? e->field_descs : NULL;
}

/* ---- object lifetime -------------------------------------------------- */

static PyOnnxioMessage *alloc_object(pyonnxio_state *st, PyTypeObject *tp)
{
    PyOnnxioMessage *o = (PyOnnxioMessage *)tp->tp_alloc(tp, 0);
    if (o) o->st = st;
    return o;
}

PyObject *pyonnxio_message_wrap(pyonnxio_state *st, onnxio_arena *arena, void *msg)
{
    entry *e = entry_for_desc(st, ((onnxio_message *)msg)->desc);
    if (!e || !e->type) {
        PyErr_SetString(PyExc_SystemError, "onnxio: message of an unknown type");
        return NULL;
    }
    PyOnnxioMessage *o = alloc_object(st, e->type);
    if (!o) return NULL;
    o->arena = onnxio_arena_ref(arena);
    o->msg = msg;
    return (PyObject *)o;
}

/* A lazy object for the unset message field `f` of `parent`. */
static PyObject *wrap_lazy(PyOnnxioMessage *parent, const onnxio_field_desc *f)
{
    entry *e = entry_for_desc(parent->st, f->message);
    if (!e || !e->type) {
        PyErr_SetString(PyExc_SystemError, "onnxio: message of an unknown type");
        return NULL;
    }
    PyOnnxioMessage *o = alloc_object(parent->st, e->type);
    if (!o) return NULL;
    Py_INCREF(parent);
    o->parent = parent;
    o->parent_field = f;
    if (!parent->msg) {
        o->top = parent->top ? parent->top : parent;
        Py_INCREF(o->top);
    }
    return (PyObject *)o;
}

/* An object of class `tp` with a new arena and no struct yet. */
static PyOnnxioMessage *alloc_root(pyonnxio_state *st, PyTypeObject *tp)
{
    PyOnnxioMessage *o = alloc_object(st, tp);
    if (o && !(o->arena = onnxio_arena_new())) {
        Py_DECREF(o);
        return (PyOnnxioMessage *)PyErr_NoMemory();
    }
    return o;
}

/* Gives `o` (NULL: an error is set) its empty `desc` struct. */
static PyObject *make_struct(PyOnnxioMessage *o, const onnxio_message_desc *desc)
{
    if (o && !(o->msg = onnxio_message_new(o->arena, desc))) {
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    return (PyObject *)o;
}

PyObject *pyonnxio_message_new_of_type(pyonnxio_state *st, PyTypeObject *tp, const onnxio_message_desc *desc)
{
    return make_struct(alloc_root(st, tp), desc);
}

PyOnnxioMessage *pyonnxio_message_new_unmade(pyonnxio_state *st, PyTypeObject *tp, const onnxio_message_desc **desc)
{
    entry *e = entry_for_type(st, tp);
    if (!e) return (PyOnnxioMessage *)PyErr_Format(PyExc_TypeError, "cannot create '%.200s' instances: not a message class",
                                                   tp->tp_name);
    *desc = e->desc;
    return alloc_root(st, tp);
}

PyObject *pyonnxio_message_new_root(pyonnxio_state *st, const onnxio_message_desc *desc)
{
    entry *e = entry_for_desc(st, desc);
    if (!e) {
        PyErr_SetString(PyExc_SystemError, "onnxio: unknown message descriptor");
        return NULL;
    }
    return pyonnxio_message_new_of_type(st, e->type, desc);
}

PyObject *pyonnxio_message_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    pyonnxio_state *st = pyonnxio_state_of_type(tp);
    if (!st) return PyErr_Format(PyExc_TypeError, "cannot create '%.200s' instances: not a message class", tp->tp_name);
    const onnxio_message_desc *desc = NULL;
    PyOnnxioMessage *o = pyonnxio_message_new_unmade(st, tp, &desc);
    return o ? make_struct(o, desc) : NULL;
}

/* The lazy chain behind an object (pyonnxio_message_get) can be deeper
 * than the C stack allows for nested deallocations, so each parent whose
 * last reference this is loses its own parent reference here, in a loop,
 * before it is released. */
static void release_lazy_chain(PyOnnxioMessage *p)
{
    while (p) {
        if (Py_REFCNT(p) > 1) {
            Py_DECREF(p);
            return;
        }
        PyOnnxioMessage *next = p->parent;
        p->parent = NULL;
        Py_DECREF(p); /* frees p, whose parent is now NULL: no recursion */
        p = next;
    }
}

void pyonnxio_message_dealloc(PyOnnxioMessage *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    onnxio_arena_unref(self->arena);
    PyOnnxioMessage *top = self->top;
    self->top = NULL;
    release_lazy_chain(top);
    PyOnnxioMessage *parent = self->parent;
    self->parent = NULL;
    release_lazy_chain(parent);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* ---- presence --------------------------------------------------------- */

void pyonnxio_field_unlink(void *msg, const onnxio_field_desc *f)
{
    onnxio_message *m = msg;
    void *p = pyonnxio_member(m, f);
    m->has &= ~((uint64_t)1 << f->index);
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        /* Elements stay in the arena, so Python objects for them stay valid. */
        ((pyonnxio_array *)p)->size = 0;
        return;
    }
    switch (f->kind) {
    case ONNXIO_KIND_MESSAGE: *(void **)p = NULL; return;
    case ONNXIO_KIND_RAW: onnxio_span_clear(p); return;
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: ((onnxio_string *)p)->data = NULL; ((onnxio_string *)p)->size = 0; return;
    default: memset(p, 0, onnxio_field_elem_size(f)); return;
    }
}

void pyonnxio_field_set_present(void *msg, const onnxio_field_desc *f)
{
    onnxio_message *m = msg;
    if (f->oneof) {
        const onnxio_message_desc *d = m->desc;
        for (size_t i = 0; i < d->field_count; i++) {
            const onnxio_field_desc *g = &d->fields[i];
            if (g != f && g->oneof == f->oneof && onnxio_field_present(m, g)) pyonnxio_field_unlink(m, g);
        }
    }
    m->has |= (uint64_t)1 << f->index;
}

/* One step of materialization: `m` is lazy and its parent exists. Adopts
 * the parent's message for m's field (made now when for_write and absent,
 * or made earlier by another object standing for the same field) and stops
 * being lazy. NULL when the field is absent and !for_write, or with
 * MemoryError set. */
static void *adopt(PyOnnxioMessage *m, int for_write)
{
    PyOnnxioMessage *parent = m->parent;
    const onnxio_field_desc *f = m->parent_field;
    onnxio_message *pm = parent->msg;
    onnxio_message **slot = pyonnxio_member(pm, f);
    if (!*slot) {
        if (!for_write) return NULL;
        *slot = onnxio_message_new(parent->arena, f->message);
        if (!*slot) {
            PyErr_NoMemory();
            return NULL;
        }
        pyonnxio_field_set_present(pm, f);
    }
    m->arena = onnxio_arena_ref(parent->arena);
    m->msg = (onnxio_message *)*slot;
    m->parent = NULL;
    m->parent_field = NULL;
    PyOnnxioMessage *top = m->top;
    m->top = NULL;
    Py_DECREF(parent); /* may free it: nothing of it is used past here */
    Py_XDECREF(top);   /* the same (its descendants adopted first) */
    return m->msg;
}

/* ---- trees being written ------------------------------------------------ */

/* The first existing message of m's chain (m itself when it exists). */
static PyOnnxioMessage *existing(PyOnnxioMessage *m)
{
    while (m && !m->msg) m = m->parent;
    return m;
}

int pyonnxio_busy_check(PyOnnxioMessage *m)
{
    if (!m->st->busy_used) return 0;
    PyOnnxioMessage *e = existing(m);
    return e && pyonnxio_busy_refuses(m->st, e->arena) ? -1 : 0;
}

/* Lazy objects form a chain up to the first existing message, as long as
 * Python code made it (x = x.sequence_type.elem_type in a loop makes one
 * link per field read): it is walked with a heap array, never recursively,
 * so that no depth overflows the C stack. */
void *pyonnxio_message_get(PyOnnxioMessage *m, int for_write)
{
    if (for_write && pyonnxio_busy_check(m) < 0) return NULL;
    if (m->msg) return m->msg;
    if (!m->parent) {
        if (for_write) PyErr_SetString(PyExc_TypeError, "onnxio.Message is abstract: use a message class");
        return NULL;
    }
    if (m->parent->msg) return adopt(m, for_write);
    PyOnnxioMessage *top = m->top;
    if (!for_write && top && !top->msg && top->parent && top->parent->msg &&
        !*(void **)pyonnxio_member(top->parent->msg, top->parent_field))
        return NULL; /* the outermost link is absent: nothing below it exists */
    size_t n = 0;
    PyOnnxioMessage *p = m;
    for (; p && !p->msg; p = p->parent) n++;
    if (!p) { /* cannot happen: every chain starts at a message class instance */
        PyErr_SetString(PyExc_SystemError, "onnxio: a lazy message without an existing ancestor");
        return NULL;
    }
    PyOnnxioMessage *small[32];
    PyOnnxioMessage **chain = small;
    if (n > sizeof small / sizeof small[0] && !(chain = PyMem_Malloc(n * sizeof *chain))) {
        PyErr_NoMemory();
        return NULL;
    }
    /* chain[0] is m, chain[n - 1] the lazy object whose parent exists. Each
     * chain[i] is kept alive by chain[i - 1] (its child holds it) until
     * chain[i - 1] adopts, which comes after. */
    p = m;
    for (size_t i = 0; i < n; i++, p = p->parent) chain[i] = p;
    void *c = NULL;
    size_t i = n;
    while (i-- > 0)
        if (!(c = adopt(chain[i], for_write))) break;
    if (!c && i > 0 && i < n && !PyErr_Occurred() && m->top != chain[i]) {
        /* Stopped at chain[i], now the outermost lazy link: remember it. */
        Py_INCREF(chain[i]);
        Py_XSETREF(m->top, chain[i]);
    }
    if (chain != small) PyMem_Free(chain);
    return c;
}

void *pyonnxio_message_read(PyOnnxioMessage *m)
{
    void *c = pyonnxio_message_get(m, 0);
    if (c) return c;
    entry *e = entry_for_desc(m->st, pyonnxio_desc_of(m));
    return e->empty;
}

/* ---- message fields ------------------------------------------------------ */

PyObject *pyonnxio_message_field(PyOnnxioMessage *self, const onnxio_field_desc *f)
{
    void *c = self->msg ? (void *)self->msg : pyonnxio_message_read(self);
    void *sub = *(void **)pyonnxio_member(c, f);
    if (sub) return pyonnxio_message_wrap(self->st, self->arena, sub);
    return wrap_lazy(self, f);
}

/* ---- fields by name, clear, clone, merge -------------------------------- */

const char *pyonnxio_short_name(const onnxio_message_desc *d)
{
    const char *dot = strrchr(d->full_name, '.');
    return dot ? dot + 1 : d->full_name;
}

static PyObject *no_field(const onnxio_message_desc *d, PyObject *name)
{
    return PyErr_Format(PyExc_ValueError, "Protocol message %s has no \"%U\" field.", pyonnxio_short_name(d), name);
}

const onnxio_field_desc *pyonnxio_field_named(const onnxio_message_desc *d, PyObject *name, int *is_oneof)
{
    if (is_oneof) *is_oneof = 0;
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "field name must be str, not %.200s", Py_TYPE(name)->tp_name);
        return NULL;
    }
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return NULL;
    const onnxio_field_desc *f = onnxio_field_by_name(d, s);
    if (f) return f;
    if (is_oneof)
        for (size_t i = 0; i < d->field_count; i++)
            if (d->fields[i].oneof_name && strcmp(d->fields[i].oneof_name, s) == 0) {
                *is_oneof = 1;
                return &d->fields[i]; /* the first member of the oneof */
            }
    no_field(d, name);
    return NULL;
}

void pyonnxio_message_clear(onnxio_message *c)
{
    for (size_t i = 0; i < c->desc->field_count; i++) pyonnxio_field_unlink(c, &c->desc->fields[i]);
    c->has = 0;
    c->unknown.size = 0;
}

void *pyonnxio_message_clone(pyonnxio_state *st, onnxio_arena *arena, const void *src)
{
    const onnxio_message *from = src;
    void *copy = onnxio_message_new(arena, from->desc);
    if (!copy) return PyErr_NoMemory();
    onnxio_status s = onnxio_message_copy(arena, copy, src);
    if (s) return pyonnxio_raise(st, s); /* the partial copy stays unreferenced in the arena */
    return copy;
}

int pyonnxio_message_merge_into(PyOnnxioMessage *self, PyOnnxioMessage *src)
{
    void *from = pyonnxio_message_read(src);
    onnxio_message *to = pyonnxio_message_get(self, 1);
    if (!to) return -1;
    if (src->arena == self->arena) { /* also m.MergeFrom(m), which protobuf allows */
        from = pyonnxio_message_clone(self->st, self->arena, from);
        if (!from) return -1;
    }
    onnxio_status s = onnxio_message_merge(self->arena, to, from);
    if (s) {
        pyonnxio_raise(self->st, s);
        return -1;
    }
    return 0;
}

/* ---- walks ------------------------------------------------------------ */

int pyonnxio_walk(onnxio_message *root, int (*fn)(onnxio_message *msg, void *ctx), void *ctx)
{
    size_t size = 0, cap = 64;
    onnxio_message **stack = PyMem_Malloc(cap * sizeof *stack);
    if (!stack) {
        PyErr_NoMemory();
        return -1;
    }
    stack[size++] = root;
    int r = 0;
    while (size && !r) {
        onnxio_message *c = stack[--size];
        if ((r = fn(c, ctx))) break;
        for (size_t i = 0; i < c->desc->field_count; i++) {
            const onnxio_field_desc *f = &c->desc->fields[i];
            if (f->kind != ONNXIO_KIND_MESSAGE) continue;
            void *p = pyonnxio_member(c, f);
            onnxio_message **subs = p;
            size_t count = 1;
            if (f->label >= ONNXIO_LABEL_REPEATED) {
                subs = (onnxio_message **)((pyonnxio_array *)p)->data;
                count = ((pyonnxio_array *)p)->size;
            }
            for (size_t k = 0; k < count; k++) {
                if (!subs[k]) continue;
                if (size == cap) {
                    onnxio_message **grown = PyMem_Realloc(stack, 2 * cap * sizeof *stack);
                    if (!grown) {
                        PyMem_Free(stack);
                        PyErr_NoMemory();
                        return -1;
                    }
                    stack = grown;
                    cap *= 2;
                }
                stack[size++] = subs[k];
            }
        }
    }
    PyMem_Free(stack);
    return r;
}
