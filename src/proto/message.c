/* Generic message operations by descriptor: create, clear, copy, merge,
 * compare, and field access. Nothing here knows a particular ONNX field. */
#include <string.h>

#include "proto/codec.h"

ONNXIO_API void *onnxio_message_new(onnxio_arena *arena, const onnxio_message_desc *desc)
{
    /* Only TensorProto has a payload span (kind RAW); the arena must know
     * it to drop the payload's reference when freed. */
    return arena && desc ? onnxio__message_new(arena, desc) : NULL;
}

size_t onnxio__elem_size(const onnxio_field_desc *f)
{
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM:
    case ONNXIO_KIND_FLOAT: return 4;
    case ONNXIO_KIND_INT64:
    case ONNXIO_KIND_UINT64:
    case ONNXIO_KIND_DOUBLE: return 8;
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: return sizeof(onnxio_string);
    case ONNXIO_KIND_RAW: return sizeof(onnxio_span);
    default: return sizeof(void *);
    }
}

ONNXIO_API size_t onnxio_field_elem_size(const onnxio_field_desc *f) { return onnxio__elem_size(f); }

void *onnxio__array_reserve(onnxio_arena *arena, onnxio__array *a, size_t elem_size, size_t extra)
{
    if (a->capacity - a->size >= extra) return a->data;
    if (extra > (SIZE_MAX / elem_size) - a->size) return NULL;
    size_t want = a->size + extra;
    size_t cap = a->capacity ? a->capacity * 2 : 4;
    if (cap < want) cap = want;
    if (cap > SIZE_MAX / elem_size) cap = want;
    void *data = onnxio__arena_bump(arena, cap * elem_size);
    if (!data) return NULL;
    if (a->size) memcpy(data, a->data, a->size * elem_size);
    a->data = data;
    a->capacity = cap;
    return data;
}

ONNXIO_API void *onnxio_array_append(onnxio_arena *arena, void *array, size_t elem_size)
{
    onnxio__array *a = array;
    if (!arena || !a || !elem_size || !onnxio__array_reserve(arena, a, elem_size, 1)) return NULL;
    void *slot = (char *)a->data + a->size * elem_size;
    memset(slot, 0, elem_size);
    a->size++;
    return slot;
}

ONNXIO_API void *onnxio_list_add(onnxio_arena *arena, void *list, const onnxio_message_desc *desc)
{
    onnxio_message *m = onnxio_message_new(arena, desc);
    if (!m) return NULL;
    onnxio_message **slot = onnxio_array_append(arena, list, sizeof(void *));
    if (!slot) return NULL;
    *slot = m;
    return m;
}

ONNXIO_API onnxio_status onnxio_string_set(onnxio_arena *arena, onnxio_string *dst, const void *data, size_t size)
{
    if (!arena || !dst || (!data && size)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "string_set: NULL argument");
    if (size == SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "string too large");
    char *p = onnxio__arena_strndup(arena, data, size);
    if (!p) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for a %zu-byte string", size);
    dst->data = p;
    dst->size = size;
    return ONNXIO_OK;
}

onnxio_status onnxio__append_unknown(onnxio_arena *arena, onnxio_message *m, const uint8_t *p, size_t n)
{
    onnxio__array *a = (onnxio__array *)&m->unknown;
    if (!onnxio__array_reserve(arena, a, 1, n)) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy((uint8_t *)a->data + a->size, p, n);
    a->size += n;
    return ONNXIO_OK;
}

ONNXIO_API void *onnxio_field_ptr(void *msg, const onnxio_field_desc *f)
{
    return msg && f ? onnxio__member(msg, f) : NULL;
}

ONNXIO_API int onnxio_field_present(const void *msg, const onnxio_field_desc *f)
{
    return onnxio__field_present(msg, f);
}

/* A stack of messages on the heap, for walks that must work at any nesting
 * depth (clear, equal): the C stack would overflow on a tree built
 * 40,000 levels deep in Python. */
typedef struct msg_stack {
    const onnxio_message **items;
    size_t count, capacity;
    bool failed; /* out of memory: some messages were not pushed */
} msg_stack;

static void push(msg_stack *st, const onnxio_message *m)
{
    if (!m) return;
    if (!onnxio__grow((void **)&st->items, &st->capacity, st->count, sizeof *st->items)) {
        st->failed = true;
        return;
    }
    st->items[st->count++] = m;
}

/* Pushes every sub-message of `m`. */
static void push_children(msg_stack *st, const onnxio_message *m)
{
    for (size_t i = 0; i < m->desc->field_count; i++) {
        const onnxio_field_desc *f = &m->desc->fields[i];
        if (f->kind != ONNXIO_KIND_MESSAGE) continue;
        const void *member = onnxio__member(m, f);
        if (f->label >= ONNXIO_LABEL_REPEATED) {
            const onnxio__array *a = member;
            for (size_t k = 0; k < a->size; k++) push(st, ((onnxio_message *const *)a->data)[k]);
        } else {
            push(st, *(onnxio_message *const *)member);
        }
    }
}

/* Unsets one field of `m` without descending into sub-messages. */
static void unset(onnxio_message *m, const onnxio_field_desc *f)
{
    void *member = onnxio__member(m, f);
    m->has &= ~((uint64_t)1 << f->index);
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        ((onnxio__array *)member)->size = 0;
        return;
    }
    switch (f->kind) {
    case ONNXIO_KIND_MESSAGE: *(onnxio_message **)member = NULL; return;
    case ONNXIO_KIND_RAW: onnxio_span_clear(member); return;
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: ((onnxio_string *)member)->data = NULL; ((onnxio_string *)member)->size = 0; return;
    default: memset(member, 0, onnxio__elem_size(f)); return;
    }
}

/* Clears the sub-messages of `m` (dropping their payload references now)
 * with a heap stack. Out of memory, the ones not reached keep their
 * references until the arena goes: nothing is lost, only held longer. */
static void clear_below(onnxio_message *m)
{
    msg_stack st = {0};
    push_children(&st, m);
    while (st.count) {
        onnxio_message *c = (onnxio_message *)st.items[--st.count];
        push_children(&st, c);
        for (size_t i = 0; i < c->desc->field_count; i++) unset(c, &c->desc->fields[i]);
        c->unknown.size = 0;
    }
    onnxio__free(st.items);
}

ONNXIO_API void onnxio_field_clear(void *msg, const onnxio_field_desc *f)
{
    onnxio_message *m = msg;
    if (f->kind == ONNXIO_KIND_MESSAGE) {
        /* Sub-messages drop their payload references now. */
        const void *member = onnxio__member(m, f);
        if (f->label >= ONNXIO_LABEL_REPEATED) {
            const onnxio__array *a = member;
            for (size_t i = 0; i < a->size; i++) onnxio_message_clear(((onnxio_message *const *)a->data)[i]);
        } else {
            onnxio_message_clear(*(onnxio_message *const *)member);
        }
    }
    unset(m, f);
}

ONNXIO_API void onnxio_set_has(void *msg, unsigned field_index)
{
    onnxio_message *m = msg;
    if (!m || field_index >= m->desc->field_count) return;
    const onnxio_field_desc *f = &m->desc->fields[field_index];
    if (f->oneof) {
        for (size_t i = 0; i < m->desc->field_count; i++) {
            const onnxio_field_desc *g = &m->desc->fields[i];
            if (g != f && g->oneof == f->oneof && onnxio_field_present(m, g)) onnxio_field_clear(m, g);
        }
    }
    m->has |= (uint64_t)1 << field_index;
}

ONNXIO_API void onnxio_message_clear(void *msg)
{
    onnxio_message *m = msg;
    if (!m) return;
    clear_below(m);
    for (size_t i = 0; i < m->desc->field_count; i++) unset(m, &m->desc->fields[i]);
    m->has = 0;
    m->unknown.size = 0;
}

/* A copy or merge in progress. The payload references its spans take are
 * counted here and added to each owner at once (onnxio__buffer_ref_n) when
 * the owner changes and when the walk ends, failed or not: an atomic add per
 * tensor waited for the store buffer to drain, a fifth of the time of a
 * copy of the 200k-node model. The source holds its own references
 * throughout, so no owner can be freed while its count is pending. */
typedef struct mg {
    onnxio_arena *arena;
    onnxio_buffer *owner; /* whose references are pending */
    size_t refs;          /* how many */
} mg;

static void mg_flush(mg *g)
{
    onnxio__buffer_ref_n(g->owner, g->refs);
    g->refs = 0;
}

static inline void mg_ref(mg *g, onnxio_buffer *b)
{
    if (!b) return;
    if (b != g->owner) {
        mg_flush(g);
        g->owner = b;
    }
    g->refs++;
}

/* Points span `d` at `s`'s payload, dropping d's old reference. */
static inline void mg_span(mg *g, onnxio_span *d, const onnxio_span *s)
{
    onnxio_buffer *old = d->owner;
    mg_ref(g, s->owner);
    *d = *s;
    onnxio_buffer_unref(old);
}

static onnxio_status merge(mg *g, onnxio_message *d, const onnxio_message *s, int depth);

/* Appends the repeated scalar field `f` of `src` to that of `dst`. */
static onnxio_status merge_scalars(onnxio_arena *arena, const onnxio_field_desc *f, onnxio__array *da,
                                   const onnxio__array *sa)
{
    if (!sa->size) return ONNXIO_OK;
    size_t es = onnxio__elem_size(f);
    if (!onnxio__array_reserve(arena, da, es, sa->size)) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy((char *)da->data + da->size * es, sa->data, sa->size * es);
    da->size += sa->size;
    return ONNXIO_OK;
}

/* A copy of string `s` in the arena. */
static inline int copy_string(onnxio_arena *arena, onnxio_string *d, const onnxio_string *s)
{
    if (!(d->data = onnxio__arena_strndup(arena, s->data, s->size))) return -1;
    d->size = s->size;
    return 0;
}

#define NO_MEMORY_ return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory")
#define DEPTH_CHECK_(M)                                                        \
    if (depth > ONNXIO_MAX_DEPTH)                                              \
        return onnxio__fail(ONNXIO_ERR_DEPTH, "copy: %s nests messages deeper than %d levels", #M, ONNXIO_MAX_DEPTH);

/* Clone functions, one per message expanded from schema.def: a new message
 * that is a deep copy of `s`. The struct is copied whole (has-bits, scalars,
 * the cached size that serialize_to takes as its hint), then every field
 * that points somewhere gets its own copy in the arena: strings, arrays
 * (exactly as long as the source's), sub-messages (cloned in turn) and
 * unknown fields; payloads are shared. A copy writes each byte of the new
 * tree once, where zeroing a struct and merging into it wrote it twice and
 * read it back. */
#define CL_NONE_(M, F, N, T)
#define CL_OPTIONAL_INT32 CL_NONE_
#define CL_OPTIONAL_ENUM CL_NONE_
#define CL_OPTIONAL_INT64 CL_NONE_
#define CL_OPTIONAL_FLOAT CL_NONE_
#define CL_ONEOF_INT64 CL_NONE_
#define CL_OPTIONAL_STRING(M, F, N, T)                                         \
    if (s->F.size) {                                                           \
        if (!(d->F.data = onnxio__arena_strndup(arena, s->F.data, s->F.size))) NO_MEMORY_; \
    } else if (s->F.data) {                                                    \
        d->F.data = "";                                                        \
    }
#define CL_OPTIONAL_BYTES CL_OPTIONAL_STRING
#define CL_ONEOF_STRING CL_OPTIONAL_STRING
#define CL_OPTIONAL_RAW CL_NONE_ /* see clone_payload */
#define CL_SUB_(M, F, T)                                                       \
    if (s->F) {                                                                \
        onnxio_status st_ = clone_##T(g, s->F, depth + 1, &d->F);              \
        if (st_) return st_;                                                   \
    }
#define CL_OPTIONAL_MESSAGE(M, F, N, T) CL_SUB_(M, F, T)
#define CL_ONEOF_MESSAGE(M, F, N, T) CL_SUB_(M, F, T)
/* An array of `size` elements of `es` bytes, or the empty array. */
#define CL_ARRAY_(F, ES)                                                       \
    if (!s->F.size) {                                                          \
        d->F.data = NULL;                                                      \
        d->F.capacity = 0;                                                     \
    } else {                                                                   \
        if (!(d->F.data = onnxio__arena_bump(arena, s->F.size * (ES)))) NO_MEMORY_; \
        d->F.capacity = s->F.size;                                             \
    }
#define CL_REPEATED_STRING(M, F, N, T)                                         \
    CL_ARRAY_(F, sizeof(onnxio_string))                                        \
    for (size_t i_ = 0; i_ < s->F.size; i_++) {                                \
        if (copy_string(arena, &d->F.data[i_], &s->F.data[i_])) NO_MEMORY_;    \
    }
#define CL_REPEATED_BYTES CL_REPEATED_STRING
#define CL_REPEATED_MESSAGE(M, F, N, T)                                        \
    CL_ARRAY_(F, sizeof(void *))                                               \
    for (size_t i_ = 0; i_ < s->F.size; i_++) {                                \
        if (i_ + ONNXIO__PREFETCH_AHEAD < s->F.size)                           \
            ONNXIO__PREFETCH_MESSAGE(T, s->F.data[i_ + ONNXIO__PREFETCH_AHEAD]); \
        onnxio_status st_ = clone_##T(g, s->F.data[i_], depth + 1, &d->F.data[i_]); \
        if (st_) return st_;                                                   \
    }
#define CL_SCALARS_(M, F, N, T)                                                \
    CL_ARRAY_(F, sizeof *s->F.data)                                            \
    if (s->F.size) memcpy(d->F.data, s->F.data, s->F.size * sizeof *s->F.data);
#define CL_REPEATED_INT64 CL_SCALARS_
#define CL_REPEATED_FLOAT CL_SCALARS_
#define CL_PACKED_INT32 CL_SCALARS_
#define CL_PACKED_INT64 CL_SCALARS_
#define CL_PACKED_UINT64 CL_SCALARS_
#define CL_PACKED_FLOAT CL_SCALARS_
#define CL_PACKED_DOUBLE CL_SCALARS_

/* A cloned TensorProto's payload span (copied with its struct) is made
 * known to the arena and its reference counted, before anything can fail.
 * The owner is read from the source: a load of what the struct copy just
 * stored waited for the copy's stores. */
static onnxio_status clone_payload(mg *g, onnxio_TensorProto *d, const onnxio_TensorProto *s)
{
    if (onnxio__arena_track_span(g->arena, &d->raw_data)) {
        memset(&d->raw_data, 0, sizeof d->raw_data);
        NO_MEMORY_;
    }
    mg_ref(g, s->raw_data.owner);
    return ONNXIO_OK;
}

/* The struct copy of a clone, out of line: inlined, the compiler made it a
 * `rep movsq`, whose start-up cost was a fifth of a TensorProto's clone. */
static void *(*const volatile copy_struct)(void *, const void *, size_t) = memcpy;

/* Makes a clone that failed part way an empty message: its fields not yet
 * copied still point into the source. A TensorProto keeps its span, whose
 * reference is counted and which the arena drops when freed. */
static void clone_failed(onnxio_message *d)
{
    const onnxio_message_desc *desc = d->desc;
    onnxio_span span = {0};
    if (desc == &onnxio_desc_TensorProto) span = ((onnxio_TensorProto *)(void *)d)->raw_data;
    memset(d, 0, desc->size);
    d->desc = desc;
    if (desc == &onnxio_desc_TensorProto) ((onnxio_TensorProto *)(void *)d)->raw_data = span;
}

#define EACH_MESSAGE(M) \
    static onnxio_status clone_##M(mg *g, const onnxio_##M *s, int depth, onnxio_##M **out);
#include "proto/schema_messages.h"


#define ONNXIO_MESSAGE(M, FULL)                                                \
    static onnxio_status clone_fields_##M(mg *g, onnxio_##M *d, const onnxio_##M *s, int depth) \
    {                                                                          \
        onnxio_arena *arena = g->arena;                                        \
        (void)depth;                                                           \
        CL_ARRAY_(base.unknown, 1)                                             \
        if (s->base.unknown.size) memcpy(d->base.unknown.data, s->base.unknown.data, s->base.unknown.size);
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) CL_##LABEL##_##KIND(M, F, N, T)
#define ONNXIO_END_MESSAGE(M)                                                  \
        return ONNXIO_OK;                                                      \
    }
#include "proto/schema_messages.h"

/* On failure *out is the new message made empty (clone_failed), or not set
 * when none was made. */
#define EACH_MESSAGE(M)                                                        \
    static onnxio_status clone_##M(mg *g, const onnxio_##M *s, int depth, onnxio_##M **out) \
    {                                                                          \
        DEPTH_CHECK_(M)                                                        \
        onnxio_##M *d = onnxio__arena_bump(g->arena, sizeof *d);               \
        if (!d) NO_MEMORY_;                                                    \
        copy_struct(d, s, sizeof *d);                                          \
        *out = d;                                                              \
        onnxio_status st = &onnxio_desc_##M != &onnxio_desc_TensorProto ? ONNXIO_OK \
            : clone_payload(g, (onnxio_TensorProto *)(void *)d, (const onnxio_TensorProto *)(const void *)s); \
        if (!st) st = clone_fields_##M(g, d, s, depth);                        \
        if (st) clone_failed(&d->base);                                        \
        return st;                                                             \
    }
#include "proto/schema_messages.h"

/* Merge functions, one per message expanded from schema.def (as the
 * encoder's): singular fields present in `s` replace those of `d`, a
 * sub-message merges into `d`'s (or is cloned when `d` has none), repeated
 * fields append (new elements cloned), unknown fields append; payloads are
 * shared, not copied. */
#define MG_HAS_(M, F) ((s->base.has >> ONNXIO_FIELD_##M##_##F) & 1)
#define MG_SET_(M, F) d->base.has |= (uint64_t)1 << ONNXIO_FIELD_##M##_##F;
#define MG_ONEOF_SET_(M, F) onnxio_set_has(d, ONNXIO_FIELD_##M##_##F);
#define MG_OPTIONAL_INT32(M, F, N, T) if (MG_HAS_(M, F)) { d->F = s->F; MG_SET_(M, F) }
#define MG_OPTIONAL_ENUM MG_OPTIONAL_INT32
#define MG_OPTIONAL_INT64 MG_OPTIONAL_INT32
#define MG_OPTIONAL_FLOAT MG_OPTIONAL_INT32
#define MG_ONEOF_INT64(M, F, N, T) if (MG_HAS_(M, F)) { MG_ONEOF_SET_(M, F) d->F = s->F; }
#define MG_OPTIONAL_STRING(M, F, N, T)                                         \
    if (MG_HAS_(M, F)) {                                                       \
        if (copy_string(arena, &d->F, &s->F)) NO_MEMORY_;                      \
        MG_SET_(M, F)                                                          \
    }
#define MG_OPTIONAL_BYTES MG_OPTIONAL_STRING
#define MG_ONEOF_STRING(M, F, N, T)                                            \
    if (MG_HAS_(M, F)) {                                                       \
        MG_ONEOF_SET_(M, F)                                                    \
        if (copy_string(arena, &d->F, &s->F)) NO_MEMORY_;                      \
    }
#define MG_OPTIONAL_RAW(M, F, N, T)                                            \
    if (MG_HAS_(M, F)) {                                                       \
        mg_span(g, &d->F, &s->F);                                              \
        MG_SET_(M, F)                                                          \
    }
#define MG_SUB_(M, F, T)                                                       \
    {                                                                          \
        onnxio_status st_ = d->F ? merge_##T(g, d->F, s->F, depth + 1) : clone_##T(g, s->F, depth + 1, &d->F); \
        if (st_) return st_;                                                   \
    }
#define MG_OPTIONAL_MESSAGE(M, F, N, T) if (s->F) MG_SUB_(M, F, T)
#define MG_ONEOF_MESSAGE(M, F, N, T)                                           \
    if (s->F) {                                                                \
        MG_ONEOF_SET_(M, F)                                                    \
        MG_SUB_(M, F, T)                                                       \
    }
#define MG_REPEATED_STRING(M, F, N, T)                                         \
    if (s->F.size) {                                                           \
        if (!onnxio__array_reserve(arena, (onnxio__array *)&d->F, sizeof(onnxio_string), s->F.size)) NO_MEMORY_; \
        for (size_t i_ = 0; i_ < s->F.size; i_++) {                            \
            if (copy_string(arena, &d->F.data[d->F.size], &s->F.data[i_])) NO_MEMORY_; \
            d->F.size++;                                                       \
        }                                                                      \
    }
#define MG_REPEATED_BYTES MG_REPEATED_STRING
#define MG_REPEATED_MESSAGE(M, F, N, T)                                        \
    if (s->F.size) {                                                           \
        if (!onnxio__array_reserve(arena, (onnxio__array *)&d->F, sizeof(void *), s->F.size)) NO_MEMORY_; \
        for (size_t i_ = 0; i_ < s->F.size; i_++) {                            \
            if (i_ + ONNXIO__PREFETCH_AHEAD < s->F.size)                       \
                ONNXIO__PREFETCH_MESSAGE(T, s->F.data[i_ + ONNXIO__PREFETCH_AHEAD]); \
            onnxio_status st_ = clone_##T(g, s->F.data[i_], depth + 1, &d->F.data[d->F.size]); \
            if (st_) return st_;                                               \
            d->F.size++;                                                       \
        }                                                                      \
    }
#define MG_SCALARS_(M, F, N, T)                                                \
    {                                                                          \
        onnxio_status st_ = merge_scalars(arena, &onnxio_desc_##M.fields[ONNXIO_FIELD_##M##_##F], \
                                          (onnxio__array *)&d->F, (const onnxio__array *)&s->F); \
        if (st_) return st_;                                                   \
    }
#define MG_REPEATED_INT64 MG_SCALARS_
#define MG_REPEATED_FLOAT MG_SCALARS_
#define MG_PACKED_INT32 MG_SCALARS_
#define MG_PACKED_INT64 MG_SCALARS_
#define MG_PACKED_UINT64 MG_SCALARS_
#define MG_PACKED_FLOAT MG_SCALARS_
#define MG_PACKED_DOUBLE MG_SCALARS_

#define EACH_MESSAGE(M) \
    static onnxio_status merge_##M(mg *g, onnxio_##M *d, const onnxio_##M *s, int depth);
#include "proto/schema_messages.h"

/* `depth`: the nesting level of d and s, the top level being 0. */
#define ONNXIO_MESSAGE(M, FULL)                                                \
    static onnxio_status merge_##M(mg *g, onnxio_##M *d, const onnxio_##M *s, int depth) \
    {                                                                          \
        DEPTH_CHECK_(M)                                                        \
        onnxio_arena *arena = g->arena;
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) MG_##LABEL##_##KIND(M, F, N, T)
#define ONNXIO_END_MESSAGE(M)                                                  \
        if (s->base.unknown.size &&                                            \
            onnxio__append_unknown(arena, &d->base, s->base.unknown.data, s->base.unknown.size)) \
            return ONNXIO_ERR_NO_MEMORY;                                       \
        return ONNXIO_OK;                                                      \
    }
#include "proto/schema_messages.h"

static onnxio_status merge(mg *g, onnxio_message *d, const onnxio_message *s, int depth)
{
#define EACH_MESSAGE(M) \
    if (s->desc == &onnxio_desc_##M) return merge_##M(g, (onnxio_##M *)d, (const onnxio_##M *)s, depth);
#include "proto/schema_messages.h"
    return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "copy: %s is not a message of the schema", s->desc->name);
}

ONNXIO_API onnxio_status onnxio_message_merge(onnxio_arena *arena, void *dst, const void *src)
{
    onnxio_message *d = dst;
    const onnxio_message *s = src;
    if (!arena || !d || !s || d->desc != s->desc)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "merge: NULL argument or different message types");
    if (d == s) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "merge: a message cannot be merged into itself");
    mg g = {arena, NULL, 0};
    onnxio_status st = merge(&g, d, s, 0);
    mg_flush(&g);
    return st;
}

ONNXIO_API onnxio_status onnxio_message_copy(onnxio_arena *arena, void *dst, const void *src)
{
    if (dst == src) return ONNXIO_OK;
    onnxio_message_clear(dst);
    return onnxio_message_merge(arena, dst, src);
}

static onnxio_status clone(mg *g, const onnxio_message *s, onnxio_message **out)
{
#define EACH_MESSAGE(M) \
    if (s->desc == &onnxio_desc_##M) return clone_##M(g, (const onnxio_##M *)s, 0, (onnxio_##M **)out);
#include "proto/schema_messages.h"
    return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "copy: %s is not a message of the schema", s->desc->name);
}

onnxio_status onnxio__clone(onnxio_arena *arena, const void *src, void **out)
{
    *out = NULL;
    if (!arena || !src) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "clone: NULL argument");
    mg g = {arena, NULL, 0};
    onnxio_message *m = NULL;
    onnxio_status st = clone(&g, src, &m);
    mg_flush(&g);
    if (!st) *out = m;
    return st;
}

ONNXIO_API void *onnxio_message_clone(onnxio_arena *arena, const void *src)
{
    void *m;
    return onnxio__clone(arena, src, &m) ? NULL : m;
}

static int bytes_equal(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* Field comparison, one function per message expanded from schema.def:
 * the has-bits of singular non-message fields must match (one mask per
 * message), present values must be equal (scalars bitwise, so NaN payloads
 * and -0.0 count as written), arrays element by element; sub-message pairs
 * go on the stack, so that any depth works. */
#define BIT_(M, F) ((uint64_t)1 << ONNXIO_FIELD_##M##_##F)
#define MK_SCALAR_(M, F) | (1 << ONNXIO_FIELD_##M##_##F) /* fewer than 31 fields a message */
#define MK_NONE_(M, F)
#define MK_OPTIONAL_INT32 MK_SCALAR_
#define MK_OPTIONAL_ENUM MK_SCALAR_
#define MK_OPTIONAL_INT64 MK_SCALAR_
#define MK_OPTIONAL_FLOAT MK_SCALAR_
#define MK_ONEOF_INT64 MK_SCALAR_
#define MK_OPTIONAL_STRING MK_SCALAR_
#define MK_OPTIONAL_BYTES MK_SCALAR_
#define MK_ONEOF_STRING MK_SCALAR_
#define MK_OPTIONAL_RAW MK_SCALAR_
#define MK_OPTIONAL_MESSAGE MK_NONE_
#define MK_ONEOF_MESSAGE MK_NONE_
#define MK_REPEATED_STRING MK_NONE_
#define MK_REPEATED_BYTES MK_NONE_
#define MK_REPEATED_MESSAGE MK_NONE_
#define MK_REPEATED_INT64 MK_NONE_
#define MK_REPEATED_FLOAT MK_NONE_
#define MK_PACKED_INT32 MK_NONE_
#define MK_PACKED_INT64 MK_NONE_
#define MK_PACKED_UINT64 MK_NONE_
#define MK_PACKED_FLOAT MK_NONE_
#define MK_PACKED_DOUBLE MK_NONE_

#define EQ_SCALAR_(M, F, N, T) if ((x->base.has & BIT_(M, F)) && memcmp(&x->F, &y->F, sizeof x->F) != 0) return 0;
#define EQ_OPTIONAL_INT32 EQ_SCALAR_
#define EQ_OPTIONAL_ENUM EQ_SCALAR_
#define EQ_OPTIONAL_INT64 EQ_SCALAR_
#define EQ_OPTIONAL_FLOAT EQ_SCALAR_
#define EQ_ONEOF_INT64 EQ_SCALAR_
#define EQ_OPTIONAL_STRING(M, F, N, T) \
    if ((x->base.has & BIT_(M, F)) && !bytes_equal(x->F.data, x->F.size, y->F.data, y->F.size)) return 0;
#define EQ_OPTIONAL_BYTES EQ_OPTIONAL_STRING
#define EQ_ONEOF_STRING EQ_OPTIONAL_STRING
#define EQ_OPTIONAL_RAW(M, F, N, T) if ((x->base.has & BIT_(M, F)) && !spans_equal(&x->F, &y->F)) return 0;
#define EQ_OPTIONAL_MESSAGE(M, F, N, T)                                        \
    if (!x->F || !y->F) {                                                      \
        if (x->F != y->F) return 0;                                            \
    } else if (x->F != y->F) {                                                 \
        push(st, &x->F->base);                                                 \
        push(st, &y->F->base);                                                 \
    }
#define EQ_ONEOF_MESSAGE EQ_OPTIONAL_MESSAGE
#define EQ_REPEATED_STRING(M, F, N, T)                                         \
    if (x->F.size != y->F.size) return 0;                                      \
    for (size_t i_ = 0; i_ < x->F.size; i_++)                                  \
        if (!bytes_equal(x->F.data[i_].data, x->F.data[i_].size, y->F.data[i_].data, y->F.data[i_].size)) return 0;
#define EQ_REPEATED_BYTES EQ_REPEATED_STRING
#define EQ_REPEATED_MESSAGE(M, F, N, T)                                        \
    if (x->F.size != y->F.size) return 0;                                      \
    for (size_t i_ = 0; i_ < x->F.size; i_++)                                  \
        if (x->F.data[i_] != y->F.data[i_]) {                                  \
            push(st, &x->F.data[i_]->base);                                    \
            push(st, &y->F.data[i_]->base);                                    \
        }
#define EQ_SCALARS_(M, F, N, T) \
    if (!bytes_equal(x->F.data, x->F.size * sizeof *x->F.data, y->F.data, y->F.size * sizeof *y->F.data)) return 0;
#define EQ_REPEATED_INT64 EQ_SCALARS_
#define EQ_REPEATED_FLOAT EQ_SCALARS_
#define EQ_PACKED_INT32 EQ_SCALARS_
#define EQ_PACKED_INT64 EQ_SCALARS_
#define EQ_PACKED_UINT64 EQ_SCALARS_
#define EQ_PACKED_FLOAT EQ_SCALARS_
#define EQ_PACKED_DOUBLE EQ_SCALARS_

static int spans_equal(const onnxio_span *s, const onnxio_span *t)
{
    if (s->size != t->size) return 0;
    if (!s->data || !t->data) return s->data == t->data;
    return s->data == t->data || memcmp(s->data, t->data, s->size) == 0;
}

/* EQ_MASK_<M>: the has-bits of M's singular non-message fields. */
#define ONNXIO_MESSAGE(M, FULL) enum { EQ_MASK_##M = 0
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) MK_##LABEL##_##KIND(M, F)
#define ONNXIO_END_MESSAGE(M) };
#include "proto/schema_messages.h"
#define ONNXIO_MESSAGE(M, FULL)                                                \
    static int equal_##M(msg_stack *st, const onnxio_##M *x, const onnxio_##M *y) \
    {                                                                          \
        (void)st;                                                              \
        if ((x->base.has ^ y->base.has) & (uint64_t)EQ_MASK_##M) return 0;
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) EQ_##LABEL##_##KIND(M, F, N, T)
#define ONNXIO_END_MESSAGE(M)                                                  \
        return bytes_equal(x->base.unknown.data, x->base.unknown.size, y->base.unknown.data, y->base.unknown.size); \
    }
#include "proto/schema_messages.h"

/* Compares the fields of x and y (of one type); sub-message pairs go on the
 * stack. */
static int fields_equal(msg_stack *st, const onnxio_message *x, const onnxio_message *y)
{
#define EACH_MESSAGE(M) \
    if (x->desc == &onnxio_desc_##M) return equal_##M(st, (const onnxio_##M *)x, (const onnxio_##M *)y);
#include "proto/schema_messages.h"
    return 0;
}

ONNXIO_API int onnxio_message_equal(const void *a, const void *b)
{
    msg_stack st = {0};
    push(&st, a);
    push(&st, b);
    int equal = 1;
    while (equal && st.count >= 2 && !st.failed) {
        const onnxio_message *y = st.items[--st.count], *x = st.items[--st.count];
        if (x == y) continue;
        if (x->desc != y->desc) {
            equal = 0;
            break;
        }
        equal = fields_equal(&st, x, y);
    }
    if (!a || !b) equal = a == b;
    bool failed = st.failed;
    onnxio__free(st.items);
    if (failed && equal) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "equal: out of memory"), -1;
    return equal;
}

static onnxio_status visit(onnxio_message *m, onnxio_message *parent, const onnxio_field_desc *via,
                           const onnxio_message_desc *target, onnxio__visit_fn fn, void *ctx, int depth)
{
    if (depth > ONNXIO_MAX_DEPTH)
        return onnxio__fail(ONNXIO_ERR_DEPTH, "%s nests messages deeper than %d levels", m->desc->name, ONNXIO_MAX_DEPTH);
    if (!target || m->desc == target) {
        onnxio_status s = fn(m, parent, via, ctx);
        if (s) return s;
    }
    for (size_t i = 0; i < m->desc->field_count; i++) {
        const onnxio_field_desc *f = &m->desc->fields[i];
        if (f->kind != ONNXIO_KIND_MESSAGE) continue;
        void *member = onnxio__member(m, f);
        if (f->label >= ONNXIO_LABEL_REPEATED) {
            onnxio__array *a = member;
            for (size_t k = 0; k < a->size; k++) {
                onnxio_status s = visit(((onnxio_message **)a->data)[k], m, f, target, fn, ctx, depth + 1);
                if (s) return s;
            }
        } else if (*(onnxio_message **)member) {
            onnxio_status s = visit(*(onnxio_message **)member, m, f, target, fn, ctx, depth + 1);
            if (s) return s;
        }
    }
    return ONNXIO_OK;
}

onnxio_status onnxio__visit(onnxio_message *root, const onnxio_message_desc *target,
                            onnxio__visit_fn fn, void *ctx)
{
    return visit(root, NULL, NULL, target, fn, ctx, 0);
}

typedef struct public_visit {
    onnxio_visit_fn fn;
    void *ctx;
} public_visit;

static onnxio_status call_public(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *field,
                                 void *ctx)
{
    public_visit *v = ctx;
    return v->fn(msg, parent, field, v->ctx);
}

ONNXIO_API onnxio_status onnxio_visit(void *root, const onnxio_message_desc *target, onnxio_visit_fn fn, void *ctx)
{
    onnxio__clear_error();
    if (!root || !fn) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "visit: NULL argument");
    public_visit v = {fn, ctx};
    return visit(root, NULL, NULL, target, call_public, &v, 0);
}
