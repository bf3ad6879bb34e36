/* Table-driven protobuf parsing of any message, driven by the schema
 * descriptors (docs/design.md "Wire rules"). One pass over a byte range; every
 * length is checked against the bytes that remain before anything is
 * allocated; nesting is bounded; unknown fields are kept byte for byte. */
#include <pthread.h>
#include <string.h>

#include "proto/codec.h"
#include "proto/wire.h"

/* Reading ahead of the parse in a file mapping (onnxio__decode_config.
 * mapped): the mapping is set to random access, so a fault reads only its
 * page (unless the load reads the whole file: then a fault reads the 2 MiB
 * folio around it, onnxio__map_whole in model.c), and the parse asks for
 * the bytes ahead of it itself, a window at a
 * time, once it is within half a window of the end of what it asked for.
 * The window doubles while the parse reads on (structure), from
 * READ_AHEAD_MIN to READ_AHEAD_MAX, and starts again at the minimum after a
 * skipped payload: a payload is then read at most READ_AHEAD_MIN into,
 * where the kernel's read-around (8 MiB here) read much of every large
 * tensor during a no_copy load. */
#define READ_AHEAD_MIN ((uintptr_t)64 << 10)
#define READ_AHEAD_MAX ((uintptr_t)8 << 20)

typedef struct dec {
    const onnxio__decode_config *cfg;
    onnxio_arena *arena;
    const uint8_t *end;      /* of the whole input */
    uintptr_t read_ahead_end; /* mapped: where the parse's read-ahead ends */
    uintptr_t window;         /* mapped: the next read-ahead's size */
    uintptr_t kept;           /* mapped: where the pages still mapped by the parse start */
    bool mapped;              /* cfg->mapped, read at every field */
} dec;

static void read_ahead(dec *d, const uint8_t *p)
{
    uintptr_t start;
    if ((uintptr_t)p > d->read_ahead_end) { /* past a skipped payload */
        start = (uintptr_t)p;
        d->window = READ_AHEAD_MIN;
        /* The pages behind the parse are unmapped: a fault on a tensor
         * header maps the whole page-cache folio around it (up to 2 MiB on
         * Linux 6.18), which held 48-83 MiB of payload pages in the
         * process during a parse of gpt2. The parse never reads behind
         * itself (strings and small payloads are copied as read), and a
         * no_copy payload there maps again when it is read. */
        onnxio__map_drop((const void *)d->kept, start - d->kept);
        d->kept = start & ~(uintptr_t)4095;
    } else {
        start = d->read_ahead_end;
        if (d->window < READ_AHEAD_MAX) d->window *= 2;
    }
    uintptr_t end = start + d->window;
    if (end > (uintptr_t)d->end) end = (uintptr_t)d->end;
    if (end > start) onnxio__map_willneed((const void *)start, (size_t)(end - start));
    d->read_ahead_end = end;
}

#define OFFSET(d, p) ((unsigned long long)((const uint8_t *)(p) - (d)->cfg->base))

/* The fast path (as upb's fasttable): for each message, a table of its
 * fields 1 to 15 (whose tags are one byte), 8 bytes each, saying what the
 * decoder does with the common fields without reading their descriptors:
 * singular and repeated strings and sub-messages, integers and floats,
 * each under the one tag byte it is written with (a repeated integer or
 * float unpacked, as proto2 writes AttributeProto.ints and floats). Any other tag
 * (another wire type, a field past 15, an enum, a packed or a raw_data
 * field, an unknown field) takes the general path, which also checks the
 * tag. The tables of every message take 5 KiB, so the ones a parse uses
 * stay in the L1 cache (entries per tag byte, 24 bytes each, took 120 KiB
 * and gained nothing over the descriptors). Built once from the
 * descriptors. */
enum {
    FAST_NONE,  /* the general path */
    FAST_STR1,  /* singular string or bytes, LEN */
    FAST_STRN,  /* repeated string or bytes, LEN */
    FAST_MSG1,  /* singular sub-message, LEN */
    FAST_MSGN,  /* repeated sub-message, LEN */
    FAST_I32,   /* singular int32, VARINT */
    FAST_I64,   /* singular int64 or uint64, VARINT */
    FAST_F32,   /* singular float, FIXED32 */
    FAST_I32N,  /* repeated int32, VARINT (one element) */
    FAST_I64N,  /* repeated int64 or uint64, VARINT (one element) */
    FAST_F32N,  /* repeated float, FIXED32 (one element) */
};

typedef struct fast_entry {
    uint8_t tag;     /* the tag byte the op applies to */
    uint8_t op;      /* FAST_* */
    uint8_t index;   /* the field's has-bit */
    uint8_t field;   /* its index in desc->fields, with FAST_ONEOF when a oneof member */
    uint16_t offset; /* offsetof the member */
    uint16_t sub;    /* FAST_MSG1, FAST_MSGN: the sub-message's table (index in fast_tables) */
} fast_entry;
#define FAST_ONEOF 0x80u

typedef struct fast_table {
    fast_entry by_number[16];
} fast_table;

enum {
    MESSAGE_COUNT = 0
#define EACH_MESSAGE(M) +1
#include "proto/schema_messages.h"
};

static fast_table fast_tables[MESSAGE_COUNT];
static const onnxio_message_desc *fast_descs[MESSAGE_COUNT];
/* For a oneof member of the fast path, the has-bits of the other members
 * of its oneof that are scalars or strings (whose presence is their
 * has-bit): with none of them set (nor a message member, below), the field
 * is marked present without mark_present's walk. ONEOF_WALK: the walk
 * decides (a has-bit past 63, too many message members). */
#define ONEOF_WALK UINT64_MAX
static uint64_t fast_oneof_others[MESSAGE_COUNT][16];
/* The offsets of the other members that are messages (present when their
 * pointer is set), 0 after the last: TypeProto's value has five members,
 * all messages. More than ONEOF_MESSAGES_MAX of them: ONEOF_WALK. */
#define ONEOF_MESSAGES_MAX 6
static uint16_t fast_oneof_messages[MESSAGE_COUNT][16][ONEOF_MESSAGES_MAX + 1];
/* For each enum field (by message table and field index), the enum's
 * values from 0 to 63 as bits: a singular enum (AttributeProto.type,
 * whose tag takes two bytes) with such a value is taken without a walk
 * over the enum's values, which cost 9 ns of the 26 an attribute took. */
static uint64_t enum_small_values[MESSAGE_COUNT][64];
static pthread_once_t fast_once = PTHREAD_ONCE_INIT;

/* Descriptor to table index, open addressing by the descriptor's
 * address: a parse finds its root's table without a walk over every
 * message (the walk took about 5% of a loop of small parses). */
#define FAST_HASH_BITS 7
static int8_t fast_hash[1u << FAST_HASH_BITS];

static unsigned fast_slot(const onnxio_message_desc *desc)
{
    return (unsigned)(((uintptr_t)desc * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - FAST_HASH_BITS));
}

/* The table index of `desc`, or -1 (the general path for every field). */
static int fast_index_of(const onnxio_message_desc *desc)
{
    for (unsigned h = fast_slot(desc);; h = (h + 1) & ((1u << FAST_HASH_BITS) - 1)) {
        int i = fast_hash[h] - 1;
        if (i < 0 || fast_descs[i] == desc) return i;
    }
}

static const fast_table *fast_table_of(const onnxio_message_desc *desc)
{
    int i = fast_index_of(desc);
    return i < 0 ? NULL : &fast_tables[i];
}

/* Whether a member of the oneof of fast entry `e`, other than e's field,
 * is present in `m` (the caller then marks its field through
 * mark_present, which clears them). */
static inline bool fast_oneof_taken(const onnxio_message *m, const fast_table *ft, const fast_entry *e)
{
    size_t t = (size_t)(ft - fast_tables), n = (size_t)(e - ft->by_number);
    uint64_t others = fast_oneof_others[t][n];
    if (others == ONEOF_WALK) return true;
    if (m->has & others) return true;
    for (const uint16_t *o = fast_oneof_messages[t][n]; *o; o++)
        if (*(void *const *)((const char *)m + *o)) return true;
    return false;
}

static void fast_build(void)
{
    _Static_assert(MESSAGE_COUNT < (1u << FAST_HASH_BITS) / 2 && MESSAGE_COUNT < INT8_MAX, "fast_hash too small");
    for (size_t i = 0; i < MESSAGE_COUNT && i < onnxio_all_message_count; i++) {
        fast_descs[i] = onnxio_all_messages[i];
        unsigned h = fast_slot(fast_descs[i]);
        while (fast_hash[h]) h = (h + 1) & ((1u << FAST_HASH_BITS) - 1);
        fast_hash[h] = (int8_t)(i + 1);
    }
    for (size_t i = 0; i < MESSAGE_COUNT && i < onnxio_all_message_count; i++) {
        const onnxio_message_desc *desc = fast_descs[i];
        for (size_t k = 0; k < desc->field_count; k++) {
            const onnxio_field_desc *f = &desc->fields[k];
            for (size_t v = 0; f->kind == ONNXIO_KIND_ENUM && k < 64 && v < f->enum_type->value_count; v++) {
                int32_t n = f->enum_type->values[v].number;
                if (n >= 0 && n < 64) enum_small_values[i][k] |= (uint64_t)1 << n;
            }
            if (f->number >= 16 || k >= FAST_ONEOF || f->index > 63 || f->offset > UINT16_MAX) continue;
            int repeated = f->label >= ONNXIO_LABEL_REPEATED;
            unsigned wt;
            uint8_t op;
            switch (f->kind) {
            case ONNXIO_KIND_STRING:
            case ONNXIO_KIND_BYTES: op = repeated ? FAST_STRN : FAST_STR1, wt = WIRE_LEN; break;
            case ONNXIO_KIND_MESSAGE: op = repeated ? FAST_MSGN : FAST_MSG1, wt = WIRE_LEN; break;
            case ONNXIO_KIND_INT32: op = repeated ? FAST_I32N : FAST_I32, wt = WIRE_VARINT; break;
            case ONNXIO_KIND_INT64:
            case ONNXIO_KIND_UINT64: op = repeated ? FAST_I64N : FAST_I64, wt = WIRE_VARINT; break;
            case ONNXIO_KIND_FLOAT: op = repeated ? FAST_F32N : FAST_F32, wt = WIRE_FIXED32; break;
            default: op = FAST_NONE, wt = 0; break;
            }
            int sub = f->kind == ONNXIO_KIND_MESSAGE ? fast_index_of(f->message) : 0;
            if (op == FAST_NONE || sub < 0) continue;
            fast_entry *e = &fast_tables[i].by_number[f->number];
            e->tag = (uint8_t)((f->number << 3) | wt);
            e->op = op;
            e->index = (uint8_t)f->index;
            e->field = (uint8_t)(k | (f->oneof ? FAST_ONEOF : 0));
            e->offset = (uint16_t)f->offset;
            e->sub = (uint16_t)sub;
            uint64_t others = 0;
            size_t messages = 0;
            for (size_t j = 0; f->oneof && j < desc->field_count; j++) {
                const onnxio_field_desc *g = &desc->fields[j];
                if (j == k || g->oneof != f->oneof) continue;
                if (g->kind == ONNXIO_KIND_MESSAGE && messages < ONEOF_MESSAGES_MAX && g->offset && g->offset <= UINT16_MAX)
                    fast_oneof_messages[i][f->number][messages++] = (uint16_t)g->offset;
                else if (g->kind == ONNXIO_KIND_MESSAGE || g->index > 63)
                    others = ONEOF_WALK;
                else
                    others |= (uint64_t)1 << g->index;
                if (others == ONEOF_WALK) break;
            }
            fast_oneof_others[i][f->number] = others;
        }
    }
}

static onnxio_status parse_message(dec *d, onnxio_message *m, const fast_table *ft, const uint8_t *p,
                                   const uint8_t *end, int depth);

/* Marks a field present. Most fields are in no oneof; a oneof member goes
 * through onnxio_set_has's sibling clearing only when a sibling is present
 * (TypeProto.tensor_type and Dimension.dim_value as parsed have none). */
static inline void mark_present(onnxio_message *m, const onnxio_field_desc *f)
{
    if (ONNXIO_UNLIKELY(f->oneof) && onnxio__oneof_other(m, f)) onnxio_set_has(m, f->index);
    else m->has |= (uint64_t)1 << f->index;
}

static onnxio_status truncated(dec *d, const uint8_t *at, const onnxio_message *m, const char *what)
{
    return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: %s", OFFSET(d, at), m->desc->name, what);
}

/* Skips one value of wire type `wt` whose tag was for field `number`,
 * advancing *pp past it. */
static onnxio_status skip_value(dec *d, const onnxio_message *m, unsigned wt, uint32_t number,
                               const uint8_t **pp, const uint8_t *end, int depth)
{
    uint64_t v;
    const uint8_t *p = *pp, *start = p;
    switch (wt) {
    case WIRE_VARINT:
        if (!(p = wire_read_varint(p, end, &v)))
            return truncated(d, start, m, "truncated or overlong varint in an unknown field");
        break;
    case WIRE_FIXED64:
        if (end - p < 8) return truncated(d, start, m, "truncated fixed64 in an unknown field");
        p += 8;
        break;
    case WIRE_FIXED32:
        if (end - p < 4) return truncated(d, start, m, "truncated fixed32 in an unknown field");
        p += 4;
        break;
    case WIRE_LEN:
        if (!(p = wire_read_varint(p, end, &v)) || v > (uint64_t)(end - p))
            return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: unknown field %u is truncated: its length runs past the end of the input",
                                OFFSET(d, start), m->desc->name, number);
        p += v;
        break;
    case WIRE_START_GROUP:
        if (depth + 1 > d->cfg->max_depth)
            return onnxio__fail(ONNXIO_ERR_DEPTH, "at byte %llu: %s: groups nested deeper than %d",
                                OFFSET(d, start), m->desc->name, d->cfg->max_depth);
        for (;;) {
            uint64_t tag;
            const uint8_t *tag_at = p;
            if (p >= end)
                return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: group of field %u never ends",
                                    OFFSET(d, p), m->desc->name, number);
            if (!(p = wire_read_tag(p, end, &tag))) return truncated(d, tag_at, m, "truncated tag in a group");
            unsigned gwt = (unsigned)(tag & 7);
            uint64_t gnum = tag >> 3;
            if (gnum == 0 || gnum > 0x1fffffff || gwt > 5)
                return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: invalid tag %llu in a group",
                                    OFFSET(d, tag_at), m->desc->name, (unsigned long long)tag);
            if (gwt == WIRE_END_GROUP) {
                if (gnum != number)
                    return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: end-group for field %llu inside group %u",
                                        OFFSET(d, tag_at), m->desc->name, (unsigned long long)gnum, number);
                break;
            }
            onnxio_status s = skip_value(d, m, gwt, (uint32_t)gnum, &p, end, depth + 1);
            if (s) return s;
        }
        break;
    default:
        return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: invalid wire type %u", OFFSET(d, start),
                            m->desc->name, wt);
    }
    *pp = p;
    return ONNXIO_OK;
}

/* Whether wire type `wt` can carry field `f`. Repeated scalars accept the
 * packed form whatever the schema's packing. A field that arrives with
 * another wire type is kept as an unknown field, as libprotobuf does. */
static int wire_type_fits(const onnxio_field_desc *f, unsigned wt)
{
    switch (f->kind) {
    case ONNXIO_KIND_FLOAT: return wt == WIRE_FIXED32 || (wt == WIRE_LEN && f->label >= ONNXIO_LABEL_REPEATED);
    case ONNXIO_KIND_DOUBLE: return wt == WIRE_FIXED64 || (wt == WIRE_LEN && f->label >= ONNXIO_LABEL_REPEATED);
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_INT64:
    case ONNXIO_KIND_UINT64:
    case ONNXIO_KIND_ENUM: return wt == WIRE_VARINT || (wt == WIRE_LEN && f->label >= ONNXIO_LABEL_REPEATED);
    default: return wt == WIRE_LEN;
    }
}

/* An allocation failed: out of memory, or past the load's expansion budget
 * (the arena's limit). */
static onnxio_status no_memory(const dec *d)
{
    if (onnxio__arena_limit_hit(d->arena))
        return onnxio__fail(ONNXIO_ERR_EXPANSION,
                            "the message's structure needs more memory than max_expansion times its size allows "
                            "(%zu bytes so far); raise max_expansion if the input is trusted",
                            onnxio_arena_used(d->arena));
    return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory while parsing");
}

/* How many length-delimited values of one field follow each other from
 * `p` (at the length of the first; `tag` the tag's bytes, `tag_len` of
 * them): a repeated field's elements usually arrive in one run, so its
 * array can be sized once. Bounded by the input: each value takes a byte. */
static size_t run_length(const uint8_t *tag, size_t tag_len, const uint8_t *p, const uint8_t *end)
{
    size_t n = 0;
    for (;;) {
        uint64_t v;
        const uint8_t *q = wire_read_varint(p, end, &v);
        if (!q || v > (uint64_t)(end - q)) break;
        p = q + v;
        n++;
        if ((size_t)(end - p) <= tag_len || p[0] != tag[0] || (tag_len > 1 && memcmp(p + 1, tag + 1, tag_len - 1) != 0))
            break;
        p += tag_len;
    }
    return n ? n : 1;
}

/* How many unpacked scalars of one field follow each other from `p` (at
 * the value of the first; `tag` their one-byte tag; `fixed32`: 4-byte
 * values, else varints). Bounded by the input: each value takes a byte. */
static size_t scalar_run(const uint8_t *p, const uint8_t *end, uint8_t tag, bool fixed32)
{
    size_t n = 0;
    for (;;) {
        if (fixed32) {
            if (end - p < 4) break;
            p += 4;
        } else {
            while (p < end && *p >= 0x80) p++;
            if (p == end) break;
            p++;
        }
        n++;
        if (p == end || *p != tag) break;
        p++;
    }
    return n ? n : 1;
}

/* Stores the low `width` (4 or 8) bytes of a value read from the wire:
 * int32 and float members take 4, int64 and uint64 ones 8. */
static inline void store_width(void *slot, uint64_t v, size_t width)
{
    if (width == 4) {
        uint32_t v32 = (uint32_t)v;
        memcpy(slot, &v32, 4);
    } else {
        memcpy(slot, &v, 8);
    }
}

/* Room for one more element of a repeated field whose value starts at `at`
 * (its length) after the tag at `tag`; NULL when out of memory. When the
 * array is full it grows to hold the whole run (at least doubling). A list
 * slot is filled by the caller. */
static inline void *array_push(onnxio_arena *arena, void *array, size_t es, const uint8_t *tag, const uint8_t *at,
                               const uint8_t *end)
{
    onnxio__array *a = array;
    if (ONNXIO_UNLIKELY(a->size == a->capacity)) {
        size_t want = a->size + run_length(tag, (size_t)(at - tag), at, end);
        if (want < 2 * a->capacity) want = 2 * a->capacity;
        void *data = onnxio__arena_bump(arena, want * es);
        if (!data) return NULL;
        if (a->size) memcpy(data, a->data, a->size * es);
        a->data = data;
        a->capacity = want;
    }
    return (char *)a->data + a->size++ * es;
}

/* Stores one scalar read from the wire into a singular or repeated field. */
static onnxio_status store_scalar(dec *d, onnxio_message *m, const onnxio_field_desc *f, uint64_t raw)
{
    void *member = onnxio__member(m, f);
    int repeated = f->label >= ONNXIO_LABEL_REPEATED;
    if (repeated) {
        onnxio__array *a = member;
        size_t es = onnxio__elem_size(f);
        if (a->size == a->capacity && !onnxio__array_reserve(d->arena, a, es, 1)) return no_memory(d);
        member = (char *)a->data + a->size * es;
        a->size++;
    }
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM: {
        int32_t v = (int32_t)(uint32_t)raw;
        memcpy(member, &v, 4);
        if (v == ONNXIO_TensorProto_DataLocation_EXTERNAL && d->cfg->saw_external &&
            f == &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_data_location])
            *d->cfg->saw_external = true;
        break;
    }
    case ONNXIO_KIND_INT64:
    case ONNXIO_KIND_UINT64:
        memcpy(member, &raw, 8);
        break;
    case ONNXIO_KIND_FLOAT: {
        uint32_t v = (uint32_t)raw;
        memcpy(member, &v, 4);
        break;
    }
    case ONNXIO_KIND_DOUBLE:
        memcpy(member, &raw, 8);
        break;
    default:
        break;
    }
    if (!repeated) mark_present(m, f);
    return ONNXIO_OK;
}

/* A packed run of scalars: `p..end` holds only values. */
static onnxio_status parse_packed(dec *d, onnxio_message *m, const onnxio_field_desc *f,
                                  const uint8_t *p, const uint8_t *end)
{
    onnxio__array *a = onnxio__member(m, f);
    size_t es = onnxio__elem_size(f);
    size_t len = (size_t)(end - p);
    if (f->kind == ONNXIO_KIND_FLOAT || f->kind == ONNXIO_KIND_DOUBLE) {
        size_t width = f->kind == ONNXIO_KIND_FLOAT ? 4 : 8;
        if (len % width)
            return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: packed field %s.%s: %zu bytes is not a multiple of %zu",
                                OFFSET(d, p), m->desc->name, f->name, len, width);
        size_t n = len / width;
        if (n && !onnxio__array_reserve(d->arena, a, es, n)) return no_memory(d);
        if (n) memcpy((char *)a->data + a->size * es, p, len);
        a->size += n;
        return ONNXIO_OK;
    }
    /* Each value ends in a byte under 0x80: n values at most, and none when
     * there is no such byte (a truncated varint, reported below). */
    size_t n = 0;
    for (const uint8_t *q = p; q < end; q++) n += *q < 0x80;
    if (n && !onnxio__array_reserve(d->arena, a, es, n)) return no_memory(d);
    while (p < end) {
        uint64_t v;
        const uint8_t *at = p;
        if (!(p = wire_read_varint(p, end, &v)))
            return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: packed field %s.%s: truncated or overlong varint",
                                OFFSET(d, at), m->desc->name, f->name);
        if (f->kind != ONNXIO_KIND_ENUM) { /* an integer: no store_scalar checks */
            store_width((char *)a->data + a->size++ * es, v, es);
            continue;
        }
        onnxio_status s = store_scalar(d, m, f, v);
        if (s) return s;
    }
    return ONNXIO_OK;
}

static onnxio_status parse_field(dec *d, onnxio_message *m, const onnxio_field_desc *f, unsigned wt,
                                 const uint8_t *tag_at, const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    onnxio_kind kind = (onnxio_kind)f->kind;
    int repeated = f->label >= ONNXIO_LABEL_REPEATED;

    if (kind <= ONNXIO_KIND_DOUBLE || kind == ONNXIO_KIND_ENUM) {
        unsigned expect = kind == ONNXIO_KIND_FLOAT ? WIRE_FIXED32 : kind == ONNXIO_KIND_DOUBLE ? WIRE_FIXED64 : WIRE_VARINT;
        if (wt == WIRE_LEN && repeated) {
            const uint8_t *at = p;
            if (!(p = wire_read_varint(p, end, &v)) || v > (uint64_t)(end - p))
                return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: packed field %s.%s is truncated: its length runs past the end of the input",
                                    OFFSET(d, at), m->desc->name, f->name);
            onnxio_status s = parse_packed(d, m, f, p, p + v);
            *pp = p + v;
            return s;
        }
        const uint8_t *at = p;
        if (expect == WIRE_VARINT) {
            if (!(p = wire_read_varint(p, end, &v))) return truncated(d, at, m, "truncated or overlong varint");
        } else if (expect == WIRE_FIXED32) {
            if (end - p < 4) return truncated(d, at, m, "truncated fixed32");
            v = wire_load32(p);
            p += 4;
        } else {
            if (end - p < 8) return truncated(d, at, m, "truncated fixed64");
            v = wire_load64(p);
            p += 8;
        }
        *pp = p;
        if (kind == ONNXIO_KIND_ENUM && !onnxio_enum_value_name(f->enum_type, (int32_t)(uint32_t)v))
            /* proto2 enums are closed: an unknown value is kept as an unknown field */
            return onnxio__append_unknown(d->arena, m, tag_at, (size_t)(p - tag_at));
        return store_scalar(d, m, f, v);
    }

    const uint8_t *at = p;
    if (!(p = wire_read_varint(p, end, &v)) || v > (uint64_t)(end - p))
        return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: field %s.%s (%u) is truncated: its length runs past the end of the input",
                            OFFSET(d, at), m->desc->name, f->name, f->number);
    size_t len = (size_t)v;
    *pp = p + len;
    void *member = onnxio__member(m, f);

    /* Strings and sub-messages are parsed inline by parse_message: what
     * reaches here is raw_data. */
    onnxio_span *span = member;
    if (d->cfg->skip_raw_data) {
        onnxio_span_clear(span);
        span->size = len;
        m->has |= (uint64_t)1 << f->index;
        return ONNXIO_OK;
    }
    onnxio__payload_found found = {
        .data = p,
        .owner = d->cfg->owner,
        .offset = (uint64_t)(p - d->cfg->base),
        .size = len,
    };
    return d->cfg->payload(d->cfg->payload_ctx, (onnxio_TensorProto *)m, &found);
}

/* The length of a LEN value at *pp, which must fit before `end`: its
 * bytes start at the pointer returned and *pp is moved past them. NULL
 * for a bad varint or a length past the end (*pp unchanged). */
static inline const uint8_t *len_value(const uint8_t **pp, const uint8_t *end, size_t *len)
{
    uint64_t v;
    const uint8_t *q = wire_read_varint(*pp, end, &v);
    if (!q || v > (uint64_t)(end - q)) return NULL;
    *len = (size_t)v;
    *pp = q + *len;
    return q;
}

/* A field's length runs past the end of its message or of the input. */
static onnxio_status length_past_end(dec *d, const uint8_t *at, const onnxio_message_desc *desc,
                                     const onnxio_field_desc *f)
{
    return onnxio__fail(ONNXIO_ERR_DECODE,
                        "at byte %llu: field %s.%s (%u) is truncated: its length runs past the end of the input",
                        OFFSET(d, at), desc->name, f->name, f->number);
}

static onnxio_status too_deep(dec *d, const uint8_t *tag_at, const onnxio_message_desc *desc,
                              const onnxio_field_desc *f)
{
    return onnxio__fail(ONNXIO_ERR_DEPTH, "at byte %llu: %s.%s: messages nested deeper than %d", OFFSET(d, tag_at),
                        desc->name, f->name, d->cfg->max_depth);
}

/* A message parse_message has entered and will go back to. */
typedef struct frame {
    onnxio_message *m;
    const fast_table *ft;
    const uint8_t *end;
} frame;
/* Frames kept on parse_message's stack: a sub-message nested deeper than
 * that takes a call of its own (ONNX trees are about 8 deep; subgraphs add
 * 6 a level). Entering without a call took 3-4% off a loop of parses
 * over libonnx-testdata. */
#define FRAMES 32

static onnxio_status parse_message(dec *d, onnxio_message *m, const fast_table *ft, const uint8_t *p,
                                   const uint8_t *end, int depth)
{
    const onnxio_message_desc *desc = m->desc;
    frame stack[FRAMES];
    int sp = 0;
    onnxio_message *sub;
    const fast_table *sub_ft;
    const uint8_t *sub_at;
    onnxio_status s;
    for (;;) {
        if (p >= end) {
            if (sp == 0) return ONNXIO_OK;
            /* back in the parent, past the sub-message */
            sp--;
            m = stack[sp].m;
            ft = stack[sp].ft;
            end = stack[sp].end;
            desc = m->desc;
            depth--;
            continue;
        }
        if (ONNXIO_UNLIKELY(d->mapped) && (uintptr_t)p + d->window / 2 > d->read_ahead_end &&
            d->read_ahead_end < (uintptr_t)d->end)
            read_ahead(d, p);
        const uint8_t *tag_at = p;
        const fast_entry *e;
        if (ONNXIO_LIKELY(ft != NULL) && *p < 0x80 && (e = &ft->by_number[*p >> 3])->tag == *p && e->op != FAST_NONE) {
            p++;
            void *member = (char *)m + e->offset;
            switch (e->op) {
            case FAST_I32:
            case FAST_I64: {
                uint64_t v;
                const uint8_t *at = p;
                if (!(p = wire_read_varint(p, end, &v))) return truncated(d, at, m, "truncated or overlong varint");
                store_width(member, v, e->op == FAST_I32 ? 4 : 8);
                break;
            }
            case FAST_F32: {
                if (end - p < 4) return truncated(d, p, m, "truncated fixed32");
                uint32_t v = (uint32_t)wire_load32(p);
                memcpy(member, &v, 4);
                p += 4;
                break;
            }
            case FAST_I32N:
            case FAST_I64N:
            case FAST_F32N: {
                /* The elements of a run are read while their tag repeats,
                 * into an array sized for the whole run. */
                onnxio__array *a = member;
                size_t es = e->op == FAST_I64N ? 8 : 4;
                if (a->size == a->capacity &&
                    !onnxio__array_reserve(d->arena, a, es, scalar_run(p, end, e->tag, e->op == FAST_F32N)))
                    return no_memory(d);
                for (;;) {
                    const uint8_t *at = p;
                    uint64_t v;
                    if (e->op == FAST_F32N) {
                        if (end - p < 4) return truncated(d, at, m, "truncated fixed32");
                        v = wire_load32(p);
                        p += 4;
                    } else if (!(p = wire_read_varint(p, end, &v))) {
                        return truncated(d, at, m, "truncated or overlong varint");
                    }
                    store_width((char *)a->data + a->size++ * es, v, es);
                    if (p == end || *p != e->tag || a->size == a->capacity) break;
                    p++;
                }
                continue;
            }
            case FAST_STR1:
            case FAST_STRN: {
                const uint8_t *at = p, *q;
                size_t len;
                if (ONNXIO_UNLIKELY(!(q = len_value(&p, end, &len))))
                    return length_past_end(d, at, desc, &desc->fields[e->field & ~FAST_ONEOF]);
                /* Allocated before the slot is taken, so that a failure
                 * leaves no half-made element behind. */
                const char *str = onnxio__arena_strndup(d->arena, q, len);
                if (!str) return no_memory(d);
                onnxio_string *dst = member;
                if (e->op == FAST_STR1) {
                    dst->data = str;
                    dst->size = len;
                    break;
                }
                if (!(dst = array_push(d->arena, member, sizeof *dst, tag_at, at, end))) return no_memory(d);
                dst->data = str;
                dst->size = len;
                continue;
            }
            case FAST_MSGN: {
                const uint8_t *at = p, *q;
                size_t len;
                if (ONNXIO_UNLIKELY(!(q = len_value(&p, end, &len))))
                    return length_past_end(d, at, desc, &desc->fields[e->field & ~FAST_ONEOF]);
                if (depth + 1 > d->cfg->max_depth) return too_deep(d, tag_at, desc, &desc->fields[e->field & ~FAST_ONEOF]);
                onnxio_message **slot;
                if (!(sub = onnxio__message_new(d->arena, fast_descs[e->sub])) ||
                    !(slot = array_push(d->arena, member, sizeof *slot, tag_at, at, end)))
                    return no_memory(d);
                *slot = sub;
                sub_ft = &fast_tables[e->sub];
                /* A new sub-message that is one varint field of the fast
                 * path (a Dimension's dim_value) is filled here, without
                 * entering it; anything else, errors and empty ones
                 * included, is parsed as usual. */
                const fast_entry *se;
                if (len && *q < 0x80 && (se = &sub_ft->by_number[*q >> 3])->tag == *q &&
                    (se->op == FAST_I64 || se->op == FAST_I32)) {
                    uint64_t v;
                    const uint8_t *r = wire_read_varint(q + 1, p, &v);
                    if (r == p) {
                        store_width((char *)sub + se->offset, v, se->op == FAST_I32 ? 4 : 8);
                        sub->has = (uint64_t)1 << se->index;
                        sub->cached_size = (uint64_t)(p - q);
                        continue;
                    }
                }
                sub_at = q;
                goto enter;
            }
            default: { /* FAST_MSG1 */
                const uint8_t *at = p, *q;
                size_t len;
                if (ONNXIO_UNLIKELY(!(q = len_value(&p, end, &len))))
                    return length_past_end(d, at, desc, &desc->fields[e->field & ~FAST_ONEOF]);
                if (depth + 1 > d->cfg->max_depth) return too_deep(d, tag_at, desc, &desc->fields[e->field & ~FAST_ONEOF]);
                onnxio_message **slot = member;
                if (!*slot) {
                    /* mark_present clears the other oneof members */
                    if (ONNXIO_UNLIKELY(e->field & FAST_ONEOF) && fast_oneof_taken(m, ft, e))
                        mark_present(m, &desc->fields[e->field & ~FAST_ONEOF]);
                    else
                        m->has |= (uint64_t)1 << e->index;
                    if (!(*slot = onnxio__message_new(d->arena, fast_descs[e->sub]))) return no_memory(d);
                }
                sub = *slot;
                sub_ft = &fast_tables[e->sub];
                sub_at = q;
                goto enter;
            }
            }
            /* A singular string or scalar: present. */
            if (ONNXIO_UNLIKELY(e->field & FAST_ONEOF) && fast_oneof_taken(m, ft, e)) {
                mark_present(m, &desc->fields[e->field & ~FAST_ONEOF]);
                continue;
            }
            m->has |= (uint64_t)1 << e->index;
            continue;
        }
        uint64_t tag;
        if (ONNXIO_LIKELY(*p < 0x80)) {
            tag = *p++;
        } else if (!(p = wire_read_tag(p, end, &tag))) {
            return truncated(d, tag_at, m, "truncated or overlong tag");
        }
        uint64_t number = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (number == 0 || number > 0x1fffffff)
            return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: invalid field number %llu",
                                OFFSET(d, tag_at), desc->name, (unsigned long long)number);
        if (wt == WIRE_END_GROUP)
            return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: end-group tag (field %llu) without a start-group",
                                OFFSET(d, tag_at), desc->name, (unsigned long long)number);
        if (wt > WIRE_FIXED32)
            return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: %s: invalid wire type %u (field %llu)",
                                OFFSET(d, tag_at), desc->name, wt, (unsigned long long)number);

        const onnxio_field_desc *f = NULL;
        if (number < desc->by_number_count && desc->by_number[number]) f = &desc->fields[desc->by_number[number] - 1];
        if (!f || !wire_type_fits(f, wt)) {
            s = skip_value(d, m, wt, (uint32_t)number, &p, end, depth);
            if (s) return s;
            if (onnxio__append_unknown(d->arena, m, tag_at, (size_t)(p - tag_at))) return no_memory(d);
            continue;
        }
        /* The common cases inline: a string (singular or repeated) and a
         * sub-message, whose length fits what remains. */
        if (wt == WIRE_LEN && (f->kind == ONNXIO_KIND_STRING || f->kind == ONNXIO_KIND_BYTES ||
                               f->kind == ONNXIO_KIND_MESSAGE)) {
            uint64_t v;
            const uint8_t *at = p, *q;
            q = wire_read_varint(p, end, &v);
            if (ONNXIO_UNLIKELY(!q || v > (uint64_t)(end - q)))
                return onnxio__fail(ONNXIO_ERR_DECODE, "at byte %llu: field %s.%s (%u) is truncated: its length runs past the end of the input",
                                    OFFSET(d, at), desc->name, f->name, f->number);
            size_t len = (size_t)v;
            void *member = onnxio__member(m, f);
            int repeated = f->label >= ONNXIO_LABEL_REPEATED;
            p = q + len;
            if (f->kind != ONNXIO_KIND_MESSAGE) {
                /* Allocated before the slot is taken, so that a failure
                 * leaves no half-made element behind. */
                const char *str = onnxio__arena_strndup(d->arena, q, len);
                if (!str) return no_memory(d);
                onnxio_string *dst = member;
                if (repeated && !(dst = array_push(d->arena, member, sizeof *dst, tag_at, at, end))) return no_memory(d);
                dst->data = str;
                dst->size = len;
                if (!repeated) mark_present(m, f);
                continue;
            }
            if (depth + 1 > d->cfg->max_depth)
                return onnxio__fail(ONNXIO_ERR_DEPTH, "at byte %llu: %s.%s: messages nested deeper than %d",
                                    OFFSET(d, tag_at), desc->name, f->name, d->cfg->max_depth);
            if (repeated) {
                onnxio_message **slot;
                if (!(sub = onnxio__message_new(d->arena, f->message)) ||
                    !(slot = array_push(d->arena, member, sizeof *slot, tag_at, at, end)))
                    return no_memory(d);
                *slot = sub;
            } else {
                onnxio_message **slot = member;
                if (!*slot) {
                    mark_present(m, f); /* clears the other oneof members */
                    if (!(*slot = onnxio__message_new(d->arena, f->message))) return no_memory(d);
                }
                sub = *slot;
            }
            sub_ft = fast_table_of(f->message);
            sub_at = q;
            goto enter;
        }
        /* A singular integer (AttributeProto.i, Dimension.dim_value,
         * ir_version, opset versions, data types held as int32), inline. */
        if (wt == WIRE_VARINT && f->kind <= ONNXIO_KIND_UINT64 && f->label < ONNXIO_LABEL_REPEATED) {
            uint64_t v;
            const uint8_t *at = p;
            if (!(p = wire_read_varint(p, end, &v))) return truncated(d, at, m, "truncated or overlong varint");
            store_width(onnxio__member(m, f), v, f->kind == ONNXIO_KIND_INT32 ? 4 : 8);
            mark_present(m, f);
            continue;
        }
        /* A singular enum whose value is one of the enum's under 64, but
         * TensorProto.data_location (parse_field notes EXTERNAL), inline;
         * any other value goes to parse_field, which keeps it as an
         * unknown field. */
        size_t k = (size_t)(f - desc->fields);
        if (wt == WIRE_VARINT && f->kind == ONNXIO_KIND_ENUM && f->label < ONNXIO_LABEL_REPEATED && ft && k < 64 &&
            f != &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_data_location]) {
            uint64_t v;
            const uint8_t *q = wire_read_varint(p, end, &v);
            if (q && v < 64 && ((enum_small_values[ft - fast_tables][k] >> v) & 1)) {
                int32_t n = (int32_t)v;
                memcpy(onnxio__member(m, f), &n, 4);
                mark_present(m, f);
                p = q;
                continue;
            }
        }
        if ((s = parse_field(d, m, f, wt, tag_at, &p, end))) return s;
        continue;

    enter: /* sub, of sub_ft, from sub_at to p */
        sub->cached_size = (uint64_t)(p - sub_at); /* onnxio_serialize_to's hint */
        if (ONNXIO_UNLIKELY(sp == FRAMES)) {
            if ((s = parse_message(d, sub, sub_ft, sub_at, p, depth + 1))) return s;
            continue;
        }
        stack[sp++] = (frame){m, ft, end};
        m = sub;
        ft = sub_ft;
        desc = sub->desc;
        end = p;
        p = sub_at;
        depth++;
    }
}

onnxio_status onnxio__decode(const onnxio__decode_config *cfg, onnxio_message *msg,
                             const uint8_t *data, size_t size)
{
    static const uint8_t empty[1];
    if (!data) data = empty; /* an empty file has no mapping; NULL + 0 is not valid C */
    dec d = {cfg, cfg->arena, data + size, 0, READ_AHEAD_MIN / 2, (uintptr_t)data, cfg->mapped};
    msg->cached_size = size;
    pthread_once(&fast_once, fast_build);
    return parse_message(&d, msg, fast_table_of(msg->desc), data, data + size, 0);
}

/* ---- unknown fields, one by one ------------------------------------------ */

static int unknown_bad(size_t at, const char *what)
{
    onnxio__fail(ONNXIO_ERR_DECODE, "unknown fields, at byte %zu: %s", at, what);
    return -1;
}

ONNXIO_API int onnxio_unknown_field_next(const void *data, size_t size, size_t *offset, onnxio_unknown_field *out)
{
    if (!offset || !out || (!data && size)) {
        onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "unknown_field_next: NULL argument");
        return -1;
    }
    const uint8_t *base = data, *end = base + size, *p = base + *offset;
    if (*offset >= size) return 0;
    uint64_t tag, v = 0;
    const uint8_t *q = wire_read_tag(p, end, &tag);
    if (!q || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return unknown_bad((size_t)(p - base), "a bad tag");
    unsigned wt = (unsigned)(tag & 7);
    memset(out, 0, sizeof *out);
    out->number = (uint32_t)(tag >> 3);
    out->wire_type = (uint8_t)wt;
    switch (wt) {
    case WIRE_VARINT:
        if (!(q = wire_read_varint(q, end, &v))) return unknown_bad((size_t)(p - base), "a truncated varint");
        out->value = v;
        break;
    case WIRE_FIXED64:
        if (end - q < 8) return unknown_bad((size_t)(p - base), "a truncated fixed64");
        out->value = wire_load64(q);
        q += 8;
        break;
    case WIRE_FIXED32:
        if (end - q < 4) return unknown_bad((size_t)(p - base), "a truncated fixed32");
        out->value = wire_load32(q);
        q += 4;
        break;
    case WIRE_LEN:
        if (!(q = wire_read_varint(q, end, &v)) || v > (uint64_t)(end - q))
            return unknown_bad((size_t)(p - base), "a length past the end");
        out->data = q;
        out->size = (size_t)v;
        q += v;
        break;
    case WIRE_START_GROUP: {
        /* Up to the end tag that closes this group: a count of the groups
         * open, no recursion. */
        out->data = q;
        size_t open = 1;
        for (;;) {
            const uint8_t *t = q;
            uint64_t gt;
            if (q >= end || !(q = wire_read_tag(q, end, &gt)) || (gt >> 3) == 0)
                return unknown_bad((size_t)(p - base), "a group that never ends");
            unsigned gwt = (unsigned)(gt & 7);
            if (gwt == WIRE_END_GROUP) {
                if (--open == 0) {
                    if ((gt >> 3) != out->number) return unknown_bad((size_t)(t - base), "a mismatched end-group");
                    out->size = (size_t)(t - out->data);
                    break;
                }
                continue;
            }
            if (gwt == WIRE_START_GROUP) open++;
            else if (gwt == WIRE_VARINT) q = wire_read_varint(q, end, &v);
            else if (gwt == WIRE_FIXED64) q = end - q >= 8 ? q + 8 : NULL;
            else if (gwt == WIRE_FIXED32) q = end - q >= 4 ? q + 4 : NULL;
            else if (gwt == WIRE_LEN) q = (q = wire_read_varint(q, end, &v)) && v <= (uint64_t)(end - q) ? q + v : NULL;
            else return unknown_bad((size_t)(t - base), "a bad wire type in a group");
            if (!q) return unknown_bad((size_t)(t - base), "a truncated value in a group");
        }
        break;
    }
    default: return unknown_bad((size_t)(p - base), "a bad wire type");
    }
    *offset = (size_t)(q - base);
    return 1;
}
