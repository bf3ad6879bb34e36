/* onnxio_check_model: the structural rules of a model (onnxio.h,
 * "checking a model"), as onnx.checker applies them without operator
 * schemas and shape inference, every problem reported. One walk of the
 * tree: model fields, local functions, then the main graph with its
 * subgraphs in node order. Names are looked up in one hash table whose
 * entries carry the scope that defined them, so that a subgraph sees its
 * enclosing graphs' names and leaves none behind (an undo log restores
 * what it shadowed). External data goes through the load pipeline's own
 * checks (format.c's key parsing, the containers, load.c's range and
 * SHA-1 checks): an external tensor passes here when a load would take
 * its data. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/container.h"

/* ---- names: a hash table with scopes ------------------------------------ */

/* The table is two arrays. The slots, 8 bytes each (a name's hash and
 * the index of its entry), are what lookups probe at random: half as much
 * memory as slots holding the names, so that more of a large graph's table
 * stays in the caches. The entries are written in the order names are
 * first seen, so that the names a node reads, mostly defined just before
 * it, are in memory written just before. Both arrays are payload buffers:
 * large ones get huge pages (buffer.c), which spares a page fault and a
 * TLB miss for about every lookup. */
typedef struct name_entry {
    /* The length, NAME_LONG for 65535 bytes and more: such a name is
     * compared up to the other's length and must end there (its NUL
     * terminator); with the hash of both whole strings equal, only a name
     * holding a NUL byte at that point would pass for the shorter one. */
    uint16_t size;
    /* The scope that defines it plus one (0: not defined now), and
     * NAME_INIT when it is an initializer of that scope. */
    uint16_t state;
    /* Names of up to 8 bytes are held here (zero-padded), longer ones are
     * the model's string, NUL-terminated. */
    union {
        char bytes[8];
        const char *data;
    } name;
} name_entry;

#define NAME_LONG 0xFFFFu
#define NAME_INLINE 8u
#define NAME_INIT 0x8000u
#define NAME_SCOPE(state) ((int32_t)((state) & 0x7FFF) - 1)

#define NAMES_RECENT 1024

/* What a definition replaced, restored when its scope ends. */
typedef struct name_undo {
    uint32_t entry;
    uint16_t state;
} name_undo;

typedef struct names {
    uint64_t *slots; /* 0: empty; else hash << 32 | (entry index + 1) */
    onnxio_buffer *slots_block;
    size_t mask;
    name_entry *entries;
    onnxio_buffer *entries_block;
    size_t used, entries_capacity;
    name_undo *log;
    size_t log_count, log_capacity;
    /* The entries of the names last added or found, by the low bits of
     * their hash (the same form as a slot): most node inputs are outputs
     * of the nodes just before, found here without a probe of the slots. */
    uint64_t recent[NAMES_RECENT];
    int32_t scope;
    /* Definitions in scope 0 are not logged: the main graph's scope is
     * never left (the table is freed after it). */
    bool keep_scope0;
} names;

static uint32_t name_hash(const char *p, size_t n)
{
    /* FNV-1a, then mixed: names are short and often differ in their tail. */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h ^ (h >> 32));
}

/* A block of `count` elements of `size` bytes, with `keep` bytes of
 * `old` copied in, the rest zeroed when `zero`; NULL when out of memory
 * (or too large). */
static void *block_new(onnxio_buffer **block, size_t count, size_t size, const onnxio_buffer *old, size_t keep,
                       bool zero)
{
    if (count > SIZE_MAX / size) return NULL;
    onnxio_buffer *b = onnxio_buffer_new(count * size, 64);
    if (!b) return NULL;
    uint8_t *p = onnxio_buffer_data(b);
    if (keep) memcpy(p, onnxio_buffer_data(old), keep);
    if (zero) memset(p + keep, 0, count * size - keep);
    *block = b;
    return p;
}

/* Room for `count` names, the slots at most two thirds full (both arrays
 * at least doubling). */
static bool names_grow(names *t, size_t count)
{
    if (count > UINT32_MAX - 1) return false;
    if (count > t->entries_capacity) {
        size_t capacity = t->entries_capacity ? t->entries_capacity * 2 : 1024;
        if (capacity < count) capacity = count;
        onnxio_buffer *b;
        name_entry *e = block_new(&b, capacity, sizeof *e, t->entries_block, t->used * sizeof *e, false);
        if (!e) return false;
        onnxio_buffer_unref(t->entries_block);
        t->entries_block = b;
        t->entries = e;
        t->entries_capacity = capacity;
    }
    size_t capacity = t->slots ? t->mask + 1 : 1024;
    while (capacity * 2 < count * 3) capacity *= 2;
    if (t->slots && capacity == t->mask + 1) return true;
    onnxio_buffer *b;
    uint64_t *slots = block_new(&b, capacity, sizeof *slots, NULL, 0, true);
    if (!slots) return false;
    for (size_t i = 0; t->slots && i <= t->mask; i++) {
        uint64_t v = t->slots[i];
        if (!v) continue;
        size_t j = (size_t)(v >> 32) & (capacity - 1);
        while (slots[j]) j = (j + 1) & (capacity - 1);
        slots[j] = v;
    }
    onnxio_buffer_unref(t->slots_block);
    t->slots_block = b;
    t->slots = slots;
    t->mask = capacity - 1;
    return true;
}

/* Whether entry `e` (of the same hash) holds the name of `size` bytes at
 * `data`. */
static inline bool entry_is(const name_entry *e, const char *data, size_t size, uint16_t size16)
{
    if (e->size != size16) return false;
    if (size16 <= NAME_INLINE) return memcmp(e->name.bytes, data, size) == 0;
    return memcmp(e->name.data, data, size) == 0 && (size16 != NAME_LONG || e->name.data[size] == 0);
}

/* The entry of a name (size > 0), added (undefined) when `add`; NULL when
 * it is not there, or out of memory. */
static name_entry *names_find(names *t, const char *data, size_t size, uint32_t hash, bool add)
{
    if (!t->slots) {
        if (!add || !names_grow(t, 1)) return NULL;
    }
    uint16_t size16 = size >= NAME_LONG ? NAME_LONG : (uint16_t)size;
    uint64_t *recent = &t->recent[hash & (NAMES_RECENT - 1)];
    if (*recent && (uint32_t)(*recent >> 32) == hash) {
        name_entry *e = &t->entries[(uint32_t)*recent - 1];
        if (entry_is(e, data, size, size16)) return e;
    }
    size_t i = (size_t)hash & t->mask;
    for (;; i = (i + 1) & t->mask) {
        uint64_t v = t->slots[i];
        if (!v) break;
        if ((uint32_t)(v >> 32) == hash) {
            name_entry *e = &t->entries[(uint32_t)v - 1];
            if (entry_is(e, data, size, size16)) {
                *recent = v;
                return e;
            }
        }
    }
    if (!add) return NULL;
    if (t->used + 1 > t->entries_capacity || (t->used + 1) * 3 > (t->mask + 1) * 2) {
        if (!names_grow(t, t->used + 1)) return NULL;
        return names_find(t, data, size, hash, true);
    }
    name_entry *e = &t->entries[t->used];
    t->slots[i] = *recent = (uint64_t)hash << 32 | (uint64_t)(t->used + 1);
    t->used++;
    e->size = size16;
    e->state = 0;
    if (size16 <= NAME_INLINE) {
        memset(e->name.bytes, 0, sizeof e->name.bytes);
        memcpy(e->name.bytes, data, size);
    } else
        e->name.data = data;
    return e;
}

static void names_free(names *t)
{
    onnxio_buffer_unref(t->slots_block);
    onnxio_buffer_unref(t->entries_block);
    onnxio__free(t->log);
}

/* ---- the checker --------------------------------------------------------- */

typedef struct checker {
    int64_t ir;
    onnxio_check_options opts;
    const char *base_dir;
    onnxio_check_fn fn;
    void *user;
    uint64_t count;
    onnxio_status stop; /* a failure of the check itself: the walk ends */
    names names;
    /* Where the walk is: the graph path ("graph/node[4]:body"). */
    char *path;
    size_t path_len, path_capacity;
    /* The opset imports nodes are resolved against: the model's, or the
     * function's; `implicit_onnx`: none listed, ai.onnx version 1 implied
     * (ir_version < 3). */
    const onnxio_OperatorSetIdProto_list *opsets;
    bool implicit_onnx;
    /* External data: the container opened on the first external tensor. */
    onnxio__container *container;
    onnxio_status container_status;
    onnxio__budget budget;
    char message[1024];
} checker;

/* A string of the model as a C string (cut at a NUL). */
static const char *cs(onnxio_string s)
{
    return s.data ? s.data : "";
}

/* Where a problem is, below the graph. */
typedef struct where {
    int64_t node_index; /* -1: none */
    const char *node, *tensor, *attribute;
} where;

static const where NOWHERE = {-1, NULL, NULL, NULL};

ONNXIO_PRINTF(5, 6)
static void report(checker *c, onnxio_check_rule rule, onnxio_status status, const where *w, const char *fmt, ...)
{
    if (c->stop) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof c->message, fmt, ap);
    va_end(ap);
    c->count++;
    if (!c->fn) return;
    onnxio_check_problem p = {rule, status, c->path ? c->path : "", w->node_index, w->node, w->tensor, w->attribute,
                              c->message};
    if (c->fn(c->user, &p)) c->stop = onnxio__fail(ONNXIO_ERR_CANCELLED, "onnxio_check_model: stopped by its callback");
}

static bool oom(checker *c)
{
    if (!c->stop) c->stop = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    return false;
}

/* Appends to the path; returns the length to go back to. */
ONNXIO_PRINTF(2, 3)
static size_t path_push(checker *c, const char *fmt, ...)
{
    size_t back = c->path_len;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = c->path_capacity - c->path_len;
        int n = c->path ? vsnprintf(c->path + c->path_len, room, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            c->path_len += (size_t)n;
            return back;
        }
        size_t capacity = c->path_capacity ? c->path_capacity * 2 : 256;
        if (n >= 0 && capacity < c->path_len + (size_t)n + 1) capacity = c->path_len + (size_t)n + 1;
        char *p = onnxio__realloc(c->path, capacity);
        if (!p) {
            oom(c);
            return back;
        }
        c->path = p;
        c->path_capacity = capacity;
        if (n < 0 && c->path_len == 0) c->path[0] = 0;
    }
}

static void path_pop(checker *c, size_t back)
{
    c->path_len = back;
    if (c->path) c->path[back] = 0;
}

/* ---- scopes -------------------------------------------------------------- */

static size_t scope_push(checker *c)
{
    c->names.scope++;
    return c->names.log_count;
}

static void scope_pop(checker *c, size_t mark)
{
    names *t = &c->names;
    while (t->log_count > mark) {
        name_undo *u = &t->log[--t->log_count];
        t->entries[u->entry].state = u->state;
    }
    t->scope--;
}

/* Defines the name of entry `e` in the current scope, as an initializer
 * of it too when `init`. */
static bool define_entry(checker *c, name_entry *e, bool init)
{
    names *t = &c->names;
    if (t->scope != 0 || !t->keep_scope0) {
        if (!onnxio__grow((void **)&t->log, &t->log_capacity, t->log_count, sizeof *t->log)) return oom(c);
        t->log[t->log_count++] = (name_undo){(uint32_t)(e - t->entries), e->state};
    }
    uint16_t here = (uint16_t)(t->scope + 1);
    if (init)
        e->state = here | NAME_INIT;
    else if (NAME_SCOPE(e->state) != t->scope)
        e->state = here; /* an initializer of an enclosing scope is not one of this */
    return true;
}

/* The entry of `name`, added when it has none; NULL when out of memory. */
static name_entry *entry_of(checker *c, onnxio_string name)
{
    name_entry *e = names_find(&c->names, name.data, name.size, name_hash(name.data, name.size), true);
    if (!e) oom(c);
    return e;
}

static bool define(checker *c, onnxio_string name, bool init)
{
    name_entry *e = entry_of(c, name);
    return e && define_entry(c, e, init);
}

/* The state of `name` (0: not defined in any open scope). */
static uint16_t state_of(checker *c, onnxio_string name)
{
    name_entry *e = names_find(&c->names, name.data, name.size, name_hash(name.data, name.size), false);
    return e ? e->state : 0;
}

static bool defined(checker *c, onnxio_string name)
{
    return NAME_SCOPE(state_of(c, name)) >= 0;
}

static bool defined_here(checker *c, onnxio_string name)
{
    return NAME_SCOPE(state_of(c, name)) == c->names.scope;
}

static bool initializer_here(checker *c, onnxio_string name)
{
    uint16_t st = state_of(c, name);
    return (st & NAME_INIT) && NAME_SCOPE(st) == c->names.scope;
}

/* ---- strings ------------------------------------------------------------- */

static bool str_eq(onnxio_string a, const char *b, size_t n)
{
    return a.size == n && (n == 0 || memcmp(a.data, b, n) == 0);
}

static bool same(onnxio_string a, onnxio_string b)
{
    return str_eq(a, b.data, b.size);
}

/* "" and "ai.onnx" name the same domain. */
static bool onnx_domain(onnxio_string d)
{
    return d.size == 0 || str_eq(d, "ai.onnx", 7);
}

static bool same_domain(onnxio_string a, onnxio_string b)
{
    return same(a, b) || (onnx_domain(a) && onnx_domain(b));
}

/* ---- tensors ------------------------------------------------------------- */

/* Block digests (ONNXIO_CHECK_DIGEST): the record of an external tensor
 * parsed against its payload's `length`; with verify_digests and its entry
 * `e` open, every block hashed from the entry's bytes at `offset` (its
 * mapping, on the pool, or read a block at a time) and compared. */
static void check_tensor_digest(checker *c, const onnxio_TensorProto *t, const onnxio__entry *e, uint64_t offset,
                                uint64_t length, const where *w)
{
    onnxio__digests d;
    bool found;
    onnxio_status s = e ? onnxio__entry_digests(c->container, e, t, length, &c->budget, &d, &found)
                        : onnxio__digests_find(t, length, &d, &found);
    if (s) {
        report(c, ONNXIO_CHECK_DIGEST, s, w, "%s", onnxio_last_error());
        return;
    }
    if (!found || !e || !c->opts.verify_digests || !d.count) return;
    uint8_t(*want)[32] = onnxio__malloc(d.count * sizeof *want);
    uint8_t *block = e->data ? NULL : onnxio__malloc((size_t)d.block);
    if (!want || (!e->data && !block)) {
        onnxio__free(want);
        onnxio__free(block);
        oom(c);
        return;
    }
    onnxio__digests_decode(&d, want);
    uint64_t bad = 0, first = 0;
    for (uint64_t k = 0; k < d.count; k++) {
        uint64_t at = k * d.block, n = length - at < d.block ? length - at : d.block;
        const uint8_t *bytes = e->data ? e->data + offset + at : block;
        if (!e->data && (s = onnxio__read_at(e->fd, block, (size_t)n, e->offset + offset + at, e->name))) {
            report(c, ONNXIO_CHECK_EXTERNAL_DATA, s, w, "%s", onnxio_last_error());
            break;
        }
        uint8_t got[32];
        onnxio__sha256(bytes, (size_t)n, got);
        if (memcmp(got, want[k], 32) != 0 && !bad++) first = k;
    }
    if (bad)
        report(c, ONNXIO_CHECK_DIGEST, ONNXIO_ERR_CHECKSUM, w,
               "tensor '%s': block %llu (its bytes %llu to %llu, from %s) does not match its SHA-256 digest (%llu of "
               "its %zu blocks do not)",
               onnxio__tensor_name(t), (unsigned long long)first, (unsigned long long)(first * d.block),
               (unsigned long long)(first * d.block + (length - first * d.block < d.block ? length - first * d.block
                                                                                            : d.block)),
               e->name, (unsigned long long)bad, d.count);
    onnxio__free(want);
    onnxio__free(block);
}

/* The data fields that hold values, by name. */
static size_t data_fields(const onnxio_TensorProto *t, const char **first)
{
    size_t n = 0;
    *first = NULL;
#define FIELD_(present, name) \
    if (present) {            \
        if (!n) *first = name; \
        n++;                  \
    }
    FIELD_(t->float_data.size, "float_data")
    FIELD_(t->int32_data.size, "int32_data")
    FIELD_(t->string_data.size, "string_data")
    FIELD_(t->int64_data.size, "int64_data")
    FIELD_(t->raw_data.size, "raw_data") /* as onnx.checker: an empty one holds nothing */
    FIELD_(t->double_data.size, "double_data")
    FIELD_(t->uint64_data.size, "uint64_data")
#undef FIELD_
    return n;
}

static void check_external(checker *c, const onnxio_TensorProto *t, const where *w)
{
    onnxio_external_ref r;
    onnxio_status s = onnxio_external_ref_parse(t, &r);
    if (s) {
        report(c, ONNXIO_CHECK_EXTERNAL_DATA, s, w, "%s", onnxio_last_error());
        return;
    }
    if (!c->base_dir && !c->opts.archive) {
        check_tensor_digest(c, t, NULL, 0, r.has_length ? r.length : 0, w);
        return;
    }
    if (!c->container && !c->container_status) {
        onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
        po.no_copy = true; /* files are mapped: nothing is copied */
        po.alignment = 1;
        if (c->opts.archive)
            s = onnxio__zip_container(c->opts.archive, &po, false, &c->container);
        else
            s = onnxio__dir_container(c->base_dir, c->opts.model_path, &po, &c->container);
        if (s) {
            c->container_status = s;
            if (s == ONNXIO_ERR_NO_MEMORY) {
                oom(c);
                return;
            }
        }
    }
    if (c->container_status) {
        report(c, ONNXIO_CHECK_EXTERNAL_DATA, c->container_status, w, "tensor '%s': its external data cannot be opened",
               onnxio__tensor_name(t));
        return;
    }
    onnxio__entry *e;
    if ((s = c->container->open(c->container, t, &r, &c->budget, &e))) {
        if (s == ONNXIO_ERR_NO_MEMORY) oom(c);
        else report(c, ONNXIO_CHECK_EXTERNAL_DATA, s, w, "%s", onnxio_last_error());
        return;
    }
    uint64_t length;
    if ((s = onnxio__check_external_range(t, &r, e->size, e->name, &length))) {
        report(c, ONNXIO_CHECK_EXTERNAL_DATA, s, w, "%s", onnxio_last_error());
        return;
    }
    if (r.checksum && c->opts.verify_checksum && (s = onnxio__check_sha1(e, t, &r))) {
        if (s == ONNXIO_ERR_NO_MEMORY) oom(c);
        else report(c, s == ONNXIO_ERR_CHECKSUM ? ONNXIO_CHECK_CHECKSUM : ONNXIO_CHECK_EXTERNAL_DATA, s, w, "%s",
                    onnxio_last_error());
        return;
    }
    check_tensor_digest(c, t, e, r.offset, length, w);
}

/* onnx.checker's check_tensor, with raw_data's length checked too. */
static void check_tensor(checker *c, const onnxio_TensorProto *t, where w)
{
    const char *tn = onnxio__tensor_name(t);
    if (!w.tensor) w.tensor = tn;
    const char *field;
    size_t fields = data_fields(t, &field);
    if (onnxio__is_external(t)) {
        if (fields)
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s' is stored externally and also holds %s", tn, field);
        check_external(c, t, &w);
        return;
    }
    int32_t dt = t->data_type;
    const onnxio_data_type_desc *d = onnxio_data_type_info(dt);
    if (!onnxio_has(t, ONNXIO_FIELD_TensorProto_data_type) || dt == ONNXIO_TensorProto_DataType_UNDEFINED) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s' has no data_type (or UNDEFINED)", tn);
        return;
    }
    if (!d) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s' has an unknown data_type %d", tn, (int)dt);
        return;
    }
    if (t->segment) return; /* a segment's data is a part of a larger tensor's */
    uint64_t elements = 1;
    for (size_t i = 0; i < t->dims.size; i++) {
        int64_t v = t->dims.data[i];
        if (v < 0) {
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s': dimension %zu is negative (%lld)", tn, i,
                   (long long)v);
            return;
        }
        elements = v == 0 ? 0 : elements > UINT64_MAX / (uint64_t)v ? UINT64_MAX : elements * (uint64_t)v;
    }
    if (elements == 0) {
        if (fields)
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s' has no elements but holds %s", tn, field);
        return;
    }
    if (fields != 1) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s' holds %zu data fields, not exactly one", tn, fields);
        return;
    }
    if (onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data)) {
        if (dt == ONNXIO_TensorProto_DataType_STRING) {
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s': STRING values in raw_data", tn);
            return;
        }
        uint64_t want;
        int known = onnxio_tensor_raw_size(t, &want);
        if (known < 0)
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s': its shape has more elements than 64 bits count",
                   tn);
        else if (known > 0 && t->raw_data.size != want)
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w,
                   "tensor '%s': raw_data has %zu bytes, its data_type %s and dims need %llu", tn, t->raw_data.size,
                   d->name, (unsigned long long)want);
        return;
    }
    /* The typed field that holds this data type's values (the data type
     * table's `storage`). */
    const char *want_field;
    switch (d->storage) {
    case ONNXIO_TensorProto_DataType_FLOAT: want_field = "float_data"; break;
    case ONNXIO_TensorProto_DataType_DOUBLE: want_field = "double_data"; break;
    case ONNXIO_TensorProto_DataType_INT64: want_field = "int64_data"; break;
    case ONNXIO_TensorProto_DataType_UINT64: want_field = "uint64_data"; break;
    case ONNXIO_TensorProto_DataType_STRING: want_field = "string_data"; break;
    default: want_field = "int32_data"; break;
    }
    if (strcmp(field, want_field) != 0) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s': values of data_type %s belong in %s, not %s", tn,
               d->name, want_field, field);
        return;
    }
    if (dt == ONNXIO_TensorProto_DataType_STRING) {
        if (t->string_data.size != elements)
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s' holds %zu strings, its dims need %llu", tn,
                   t->string_data.size, (unsigned long long)elements);
        return;
    }
    uint64_t bytes;
    if (onnxio_tensor_raw_size(t, &bytes) <= 0) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "tensor '%s': its shape has more elements than 64 bits count", tn);
        return;
    }
    /* The count rule of the typed fields (one value per element, two for
     * complex, one per packed byte for 4- and 2-bit types) is format.c's. */
    if (onnxio__typed_to_raw(t, bytes, NULL, ONNXIO_ERR_INVALID_ARGUMENT))
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "%s", onnxio_last_error());
}

/* onnx.checker's check_sparse_tensor, without the index values (they
 * need the payload). */
static void check_sparse(checker *c, const onnxio_SparseTensorProto *sp, where w)
{
    const onnxio_TensorProto *v = sp->values, *ix = sp->indices;
    if (!v) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "sparse tensor has no values");
        return;
    }
    const char *tn = onnxio__tensor_name(v);
    if (!w.tensor) w.tensor = tn;
    check_tensor(c, v, w);
    if (v->dims.size != 1) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "sparse tensor '%s': values have rank %zu, not 1", tn, v->dims.size);
        return;
    }
    int64_t nnz = v->dims.data[0];
    size_t rank = sp->dims.size;
    if (rank == 0) {
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "sparse tensor '%s' has no dims", tn);
        return;
    }
    for (size_t i = 0; i < rank; i++)
        if (sp->dims.data[i] <= 0) {
            report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "sparse tensor '%s': dimension %zu is not positive (%lld)", tn, i,
                   (long long)sp->dims.data[i]);
            return;
        }
    if (!ix) {
        if (nnz != 0) report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "sparse tensor '%s' has values but no indices", tn);
        return;
    }
    check_tensor(c, ix, w);
    if (ix->data_type != ONNXIO_TensorProto_DataType_INT64)
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w, "sparse tensor '%s': indices are not INT64", tn);
    else if (ix->dims.size == 1 ? ix->dims.data[0] != nnz /* linearized indices */
             : ix->dims.size == 2 ? ix->dims.data[0] != nnz || ix->dims.data[1] != (int64_t)rank
                                  : true)
        report(c, ONNXIO_CHECK_TENSOR, ONNXIO_OK, &w,
               "sparse tensor '%s': indices of shape rank %zu do not fit %lld values of a rank-%zu tensor", tn,
               ix->dims.size, (long long)nnz, rank);
}

/* ---- nodes and graphs ---------------------------------------------------- */

static void check_graph(checker *c, const onnxio_GraphProto *g, int depth);

/* The attribute types, and the field each one's value is in. */
static void check_attribute(checker *c, const onnxio_AttributeProto *a, size_t node_index, const onnxio_NodeProto *n,
                            int depth)
{
    where w = {(int64_t)node_index, n->name.size ? cs(n->name) : NULL, NULL, cs(a->name)};
    const char *an = cs(a->name);
    bool has_type = onnxio_has(a, ONNXIO_FIELD_AttributeProto_type);
    if (!has_type && c->ir >= 2) report(c, ONNXIO_CHECK_ATTRIBUTE, ONNXIO_OK, &w, "attribute '%s' has no type", an);
    struct {
        bool present;
        int32_t type;
        const char *field;
    } values[] = {
        {onnxio_has(a, ONNXIO_FIELD_AttributeProto_f), ONNXIO_AttributeProto_AttributeType_FLOAT, "f"},
        {onnxio_has(a, ONNXIO_FIELD_AttributeProto_i), ONNXIO_AttributeProto_AttributeType_INT, "i"},
        {onnxio_has(a, ONNXIO_FIELD_AttributeProto_s), ONNXIO_AttributeProto_AttributeType_STRING, "s"},
        {a->t != NULL, ONNXIO_AttributeProto_AttributeType_TENSOR, "t"},
        {a->g != NULL, ONNXIO_AttributeProto_AttributeType_GRAPH, "g"},
        {a->tp != NULL, ONNXIO_AttributeProto_AttributeType_TYPE_PROTO, "tp"},
        {a->sparse_tensor != NULL, ONNXIO_AttributeProto_AttributeType_SPARSE_TENSOR, "sparse_tensor"},
        {a->floats.size > 0, ONNXIO_AttributeProto_AttributeType_FLOATS, "floats"},
        {a->ints.size > 0, ONNXIO_AttributeProto_AttributeType_INTS, "ints"},
        {a->strings.size > 0, ONNXIO_AttributeProto_AttributeType_STRINGS, "strings"},
        {a->tensors.size > 0, ONNXIO_AttributeProto_AttributeType_TENSORS, "tensors"},
        {a->graphs.size > 0, ONNXIO_AttributeProto_AttributeType_GRAPHS, "graphs"},
        {a->sparse_tensors.size > 0, ONNXIO_AttributeProto_AttributeType_SPARSE_TENSORS, "sparse_tensors"},
        {a->type_protos.size > 0, ONNXIO_AttributeProto_AttributeType_TYPE_PROTOS, "type_protos"},
    };
    size_t used = 0;
    const char *wrong = NULL;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        if (!values[i].present) continue;
        used++;
        if (has_type && a->type != values[i].type && !wrong) wrong = values[i].field;
    }
    const char *type_name = onnxio_enum_value_name(&onnxio_enum_AttributeProto_AttributeType, a->type);
    if (used > 1)
        report(c, ONNXIO_CHECK_ATTRIBUTE, ONNXIO_OK, &w, "attribute '%s' holds %zu value fields, not one", an, used);
    else if (wrong)
        report(c, ONNXIO_CHECK_ATTRIBUTE, ONNXIO_OK, &w, "attribute '%s' of type %s holds its value in field '%s'", an,
               type_name ? type_name : "(unknown)", wrong);
    if (a->t) check_tensor(c, a->t, w);
    for (size_t i = 0; i < a->tensors.size; i++) check_tensor(c, a->tensors.data[i], w);
    if (a->sparse_tensor) check_sparse(c, a->sparse_tensor, w);
    for (size_t i = 0; i < a->sparse_tensors.size; i++) check_sparse(c, a->sparse_tensors.data[i], w);
    if (!a->g && !a->graphs.size) return;
    if (a->g) {
        size_t back = path_push(c, "/node[%zu]:%s", node_index, an);
        check_graph(c, a->g, depth + 1);
        path_pop(c, back);
    }
    for (size_t i = 0; i < a->graphs.size; i++) {
        size_t back = path_push(c, "/node[%zu]:%s[%zu]", node_index, an, i);
        check_graph(c, a->graphs.data[i], depth + 1);
        path_pop(c, back);
    }
}

static bool domain_imported(const checker *c, onnxio_string domain)
{
    if (c->implicit_onnx && onnx_domain(domain)) return true;
    for (size_t i = 0; i < c->opsets->size; i++) {
        onnxio_string d = c->opsets->data[i]->domain;
        /* A node of domain "" may use an import of "ai.onnx"; one of
         * domain "ai.onnx" needs that name (onnx.checker's rule). */
        if (same(d, domain) || (domain.size == 0 && str_eq(d, "ai.onnx", 7))) return true;
    }
    return false;
}

/* A node's own rules and its attributes (subgraphs included); its inputs
 * and outputs are the caller's, who knows the scope rule. */
static void check_node(checker *c, const onnxio_NodeProto *n, size_t index, int depth)
{
    where w = {(int64_t)index, n->name.size ? cs(n->name) : NULL, NULL, NULL};
    if (!n->input.size && !n->output.size)
        report(c, ONNXIO_CHECK_NODE, ONNXIO_OK, &w, "node %zu (%s) has no inputs and no outputs", index, cs(n->op_type));
    if (!domain_imported(c, n->domain))
        report(c, ONNXIO_CHECK_OPSET, ONNXIO_OK, &w, "node %zu (%s): no opset import for domain '%s'", index,
               cs(n->op_type), cs(n->domain));
    for (size_t i = 0; i < n->attribute.size && !c->stop; i++) {
        const onnxio_AttributeProto *a = n->attribute.data[i];
        if (!a->name.size) {
            report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &w, "node %zu (%s): attribute %zu has no name", index,
                   cs(n->op_type), i);
        } else {
            for (size_t j = 0; j < i; j++)
                if (same(n->attribute.data[j]->name, a->name)) {
                    where wa = w;
                    wa.attribute = cs(a->name);
                    report(c, ONNXIO_CHECK_NODE, ONNXIO_OK, &wa, "node %zu (%s): attribute '%s' appears more than once",
                           index, cs(n->op_type), cs(a->name));
                    break;
                }
        }
        check_attribute(c, a, index, n, depth);
    }
}

/* The inputs of node `index`: defined before it (`here_only`: in this
 * scope, for functions). */
static void check_node_inputs(checker *c, const onnxio_NodeProto *n, size_t index, bool here_only)
{
    for (size_t i = 0; i < n->input.size; i++) {
        onnxio_string in = n->input.data[i];
        if (!in.size) continue; /* an absent optional input */
        if (here_only ? defined_here(c, in) : defined(c, in)) continue;
        where w = {(int64_t)index, n->name.size ? cs(n->name) : NULL, cs(in), NULL};
        report(c, ONNXIO_CHECK_UNDEFINED, ONNXIO_OK, &w, "input '%s' of node %zu (%s) is not defined before it", cs(in),
               index, cs(n->op_type));
    }
}

static void define_node_outputs(checker *c, const onnxio_NodeProto *n, size_t index)
{
    for (size_t i = 0; i < n->output.size; i++) {
        onnxio_string out = n->output.data[i];
        if (!out.size) continue; /* an absent optional output */
        name_entry *e = entry_of(c, out);
        if (!e) return;
        if (NAME_SCOPE(e->state) >= 0) {
            where w = {(int64_t)index, n->name.size ? cs(n->name) : NULL, cs(out), NULL};
            report(c, ONNXIO_CHECK_REDEFINED, ONNXIO_OK, &w, "output '%s' of node %zu (%s) is already defined", cs(out),
                   index, cs(n->op_type));
            continue;
        }
        if (!define_entry(c, e, false)) return;
    }
}

static void check_graph(checker *c, const onnxio_GraphProto *g, int depth)
{
    if (c->stop) return;
    if (depth > ONNXIO_MAX_DEPTH) {
        c->stop = onnxio__fail(ONNXIO_ERR_DEPTH, "onnxio_check_model: graphs nested deeper than %d", ONNXIO_MAX_DEPTH);
        return;
    }
    if (!g->name.size) report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &NOWHERE, "the graph has no name");
    size_t mark = scope_push(c);
    for (size_t i = 0; i < g->input.size && !c->stop; i++) {
        onnxio_string name = g->input.data[i]->name;
        where w = {-1, NULL, cs(name), NULL};
        if (!name.size)
            report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &w, "graph input %zu has no name", i);
        else if (defined_here(c, name))
            report(c, ONNXIO_CHECK_REDEFINED, ONNXIO_OK, &w, "graph input '%s' is listed more than once", cs(name));
        else
            define(c, name, false);
    }
    for (size_t i = 0; i < g->output.size; i++)
        if (!g->output.data[i]->name.size) report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &NOWHERE, "graph output %zu has no name", i);
    for (size_t i = 0; i < g->initializer.size && !c->stop; i++) {
        const onnxio_TensorProto *t = g->initializer.data[i];
        where w = {-1, NULL, cs(t->name), NULL};
        if (!t->name.size) {
            report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &w, "initializer %zu has no name", i);
        } else if (initializer_here(c, t->name)) {
            report(c, ONNXIO_CHECK_REDEFINED, ONNXIO_OK, &w, "initializer '%s' is defined more than once", cs(t->name));
        } else if (c->ir <= 3 && c->ir > 0 && !defined_here(c, t->name)) {
            report(c, ONNXIO_CHECK_REDEFINED, ONNXIO_OK, &w,
                   "initializer '%s' is not a graph input (ir_version %lld needs it to be)", cs(t->name),
                   (long long)c->ir);
            define(c, t->name, true);
        } else {
            define(c, t->name, true);
        }
        check_tensor(c, t, w);
    }
    for (size_t i = 0; i < g->sparse_initializer.size && !c->stop; i++) {
        const onnxio_SparseTensorProto *sp = g->sparse_initializer.data[i];
        onnxio_string name = sp->values ? sp->values->name : (onnxio_string){NULL, 0};
        where w = {-1, NULL, cs(name), NULL};
        if (!name.size)
            report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &w, "sparse initializer %zu has no name", i);
        else if (initializer_here(c, name))
            report(c, ONNXIO_CHECK_REDEFINED, ONNXIO_OK, &w, "sparse initializer '%s' is defined more than once",
                   cs(name));
        else
            define(c, name, true);
        check_sparse(c, sp, w);
    }
    for (size_t i = 0; i < g->node.size && !c->stop; i++) {
        const onnxio_NodeProto *n = g->node.data[i];
        check_node_inputs(c, n, i, false);
        check_node(c, n, i, depth);
        define_node_outputs(c, n, i);
    }
    for (size_t i = 0; i < g->output.size; i++) {
        onnxio_string name = g->output.data[i]->name;
        if (name.size && !defined(c, name)) {
            where w = {-1, NULL, cs(name), NULL};
            report(c, ONNXIO_CHECK_UNDEFINED, ONNXIO_OK, &w, "graph output '%s' is not defined in the graph", cs(name));
        }
    }
    scope_pop(c, mark);
}

/* ---- opset imports and functions ----------------------------------------- */

static void check_opset_list(checker *c, const onnxio_OperatorSetIdProto_list *list)
{
    for (size_t i = 1; i < list->size; i++)
        for (size_t j = 0; j < i; j++)
            if (same_domain(list->data[i]->domain, list->data[j]->domain)) {
                onnxio_string d = list->data[i]->domain;
                report(c, ONNXIO_CHECK_OPSET, ONNXIO_OK, &NOWHERE, "opset_import lists domain '%s' more than once",
                       d.size ? cs(d) : "ai.onnx");
                break;
            }
}

static void check_function(checker *c, const onnxio_ModelProto *m, size_t index)
{
    const onnxio_FunctionProto *f = m->functions.data[index];
    size_t back = path_push(c, "function[%s:%s%s%s]", cs(f->domain), cs(f->name), f->overload.size ? ":" : "",
                            cs(f->overload));
    if (!f->name.size) report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &NOWHERE, "function %zu has no name", index);
    if (c->ir >= 8 && !onnxio_has(f, ONNXIO_FIELD_FunctionProto_domain))
        report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &NOWHERE, "function '%s' has no domain", cs(f->name));
    for (size_t j = 0; j < index; j++) {
        const onnxio_FunctionProto *o = m->functions.data[j];
        if (same(o->domain, f->domain) && same(o->name, f->name) && same(o->overload, f->overload)) {
            report(c, ONNXIO_CHECK_FUNCTION, ONNXIO_OK, &NOWHERE, "function '%s:%s' is defined more than once",
                   cs(f->domain), cs(f->name));
            break;
        }
    }
    check_opset_list(c, &f->opset_import);
    for (size_t i = 1; i < f->output.size; i++)
        for (size_t j = 0; j < i; j++)
            if (same(f->output.data[i], f->output.data[j])) {
                where w = {-1, NULL, cs(f->output.data[i]), NULL};
                report(c, ONNXIO_CHECK_FUNCTION, ONNXIO_OK, &w, "function output '%s' is listed more than once",
                       cs(f->output.data[i]));
                break;
            }
    for (size_t i = 1; i < f->attribute.size; i++)
        for (size_t j = 0; j < i; j++)
            if (same(f->attribute.data[i], f->attribute.data[j])) {
                where w = {-1, NULL, NULL, cs(f->attribute.data[i])};
                report(c, ONNXIO_CHECK_FUNCTION, ONNXIO_OK, &w, "function attribute '%s' is listed more than once",
                       cs(f->attribute.data[i]));
                break;
            }
    const onnxio_OperatorSetIdProto_list *opsets = c->opsets;
    bool implicit = c->implicit_onnx;
    c->opsets = &f->opset_import;
    c->implicit_onnx = false;
    /* A function sees its own inputs only: the table holds no other name
     * while functions are checked. */
    size_t mark = scope_push(c);
    for (size_t i = 0; i < f->input.size && !c->stop; i++) {
        onnxio_string in = f->input.data[i];
        where w = {-1, NULL, cs(in), NULL};
        if (!in.size)
            report(c, ONNXIO_CHECK_NAME, ONNXIO_OK, &w, "function input %zu has no name", i);
        else if (defined_here(c, in))
            report(c, ONNXIO_CHECK_REDEFINED, ONNXIO_OK, &w, "function input '%s' is listed more than once", cs(in));
        else
            define(c, in, false);
    }
    for (size_t i = 0; i < f->node.size && !c->stop; i++) {
        const onnxio_NodeProto *n = f->node.data[i];
        check_node_inputs(c, n, i, true);
        check_node(c, n, i, 0);
        define_node_outputs(c, n, i);
    }
    scope_pop(c, mark);
    c->opsets = opsets;
    c->implicit_onnx = implicit;
    path_pop(c, back);
}

/* ---- the entry point ----------------------------------------------------- */

ONNXIO_API const char *onnxio_check_rule_name(onnxio_check_rule rule)
{
    switch (rule) {
    case ONNXIO_CHECK_IR_VERSION: return "ir-version";
    case ONNXIO_CHECK_OPSET: return "opset";
    case ONNXIO_CHECK_NAME: return "name";
    case ONNXIO_CHECK_UNDEFINED: return "undefined";
    case ONNXIO_CHECK_REDEFINED: return "redefined";
    case ONNXIO_CHECK_NODE: return "node";
    case ONNXIO_CHECK_TENSOR: return "tensor";
    case ONNXIO_CHECK_ATTRIBUTE: return "attribute";
    case ONNXIO_CHECK_EXTERNAL_DATA: return "external-data";
    case ONNXIO_CHECK_CHECKSUM: return "checksum";
    case ONNXIO_CHECK_DIGEST: return "digest";
    case ONNXIO_CHECK_FUNCTION: return "function";
    case ONNXIO_CHECK_GRAPH: return "graph";
    }
    return "unknown";
}

ONNXIO_API onnxio_status onnxio_check_model(const onnxio_ModelProto *model, const char *base_dir,
                                            const onnxio_check_options *opts, onnxio_check_fn fn, void *user,
                                            uint64_t *problems)
{
    if (problems) *problems = 0;
    if (!model) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_check_model: NULL model");
    checker c = {0};
    onnxio_status s = onnxio__copy_options(&c.opts, sizeof c.opts, opts, "onnxio_check_options",
                                           ONNXIO__CHECK_OPTIONS_0_2_SIZE);
    if (s) return s;
    c.base_dir = base_dir;
    c.fn = fn;
    c.user = user;
    c.names.scope = -1;
    c.budget = (onnxio__budget){onnxio__max_expansion(0), 0, 0, 0};
    const onnxio_ModelProto *m = model;
    c.ir = onnxio_has(m, ONNXIO_FIELD_ModelProto_ir_version) ? m->ir_version : 0;
    c.opsets = &m->opset_import;

    path_push(&c, "%s", "");
    if (c.ir <= 0)
        report(&c, ONNXIO_CHECK_IR_VERSION, ONNXIO_OK, &NOWHERE, "ir_version is %s",
               onnxio_has(m, ONNXIO_FIELD_ModelProto_ir_version) ? "not positive" : "not set");
    if (c.ir >= 3 && !m->opset_import.size)
        report(&c, ONNXIO_CHECK_OPSET, ONNXIO_OK, &NOWHERE, "no opset_import: ir_version %lld (>= 3) needs one",
               (long long)c.ir);
    else if (c.ir > 0 && c.ir < 3 && m->opset_import.size)
        report(&c, ONNXIO_CHECK_OPSET, ONNXIO_OK, &NOWHERE, "opset_import is set: ir_version %lld (< 3) has none",
               (long long)c.ir);
    c.implicit_onnx = !m->opset_import.size && c.ir < 3;
    check_opset_list(&c, &m->opset_import);

    for (size_t i = 0; i < m->functions.size && !c.stop; i++) check_function(&c, m, i);

    if (!m->graph) {
        report(&c, ONNXIO_CHECK_GRAPH, ONNXIO_OK, &NOWHERE, "the model has no graph");
    } else if (!c.stop) {
        /* Room for the main graph's names at once, one output a node (the
         * nodes are not walked twice to count them): most graphs fill the
         * table without a rehash. */
        const onnxio_GraphProto *g = m->graph;
        size_t count = g->input.size + g->initializer.size + g->sparse_initializer.size + g->node.size;
        if (!names_grow(&c.names, count)) oom(&c);
        c.names.keep_scope0 = true;
        size_t back = path_push(&c, "graph");
        check_graph(&c, m->graph, 0);
        path_pop(&c, back);
    }

    if (c.container) onnxio__container_close(c.container);
    names_free(&c.names);
    onnxio__free(c.path);
    if (problems) *problems = c.count;
    return c.stop;
}
