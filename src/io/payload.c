/* Where a tensor's payload goes when it is loaded (docs/design.md "Memory
 * model"): borrowed or shared with no_copy, an owned buffer otherwise, or
 * the caller's memory through the payload callback; and the pool job that
 * fills it. The codec hands inline raw_data here, the external-data code
 * hands payloads read from data files, so both follow the same rules. */
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

/* A buffer that payloads are carved from, each piece aligned as the
 * options ask; it lives as long as one of its tensors holds it. */
typedef struct slab {
    onnxio_buffer *buffer; /* a reference, or NULL */
    size_t used, size;
} slab;

typedef struct pending {
    onnxio_TensorProto *tensor;
    onnxio__payload_src src; /* holds a reference to src.owner */
} pending;

/* A payload left where it is in the load's own input (in-place mode,
 * onnxio__payloads_in_place): placed once the parse is over. */
typedef struct in_place {
    onnxio_TensorProto *tensor;
    onnxio__payload_src src;
} in_place;

/* A payload placed for an entry range, for the tensors that share it. */
typedef struct shared {
    const void *entry;
    uint64_t offset, size;
    uint8_t *data;
    onnxio_buffer *owner; /* a reference held by the table */
} shared;

struct onnxio__payloads {
    /* The pool jobs go to: the caller's, or, given none, one made with the
     * first job (own_pool), for num_threads and direct_io: a parse whose
     * payloads all move in place (a small model's) makes no pool. */
    onnxio__pool *pool;
    bool own_pool, direct;
    int num_threads;
    onnxio__budget *budget;
    bool no_copy;
    uint64_t threshold;
    uint64_t alignment;
    onnxio_payload_fn fn;
    void *ctx;
    pending *items;
    size_t count, capacity;
    shared *table; /* open addressing, a power of two slots (or none) */
    size_t table_count, table_capacity;
    slab small;  /* payloads under the raw_data threshold */
    slab medium; /* payloads from MEDIUM_MIN to under MEDIUM_MAX */
    /* The operation's progress (NULL: none): every payload is remembered
     * and placed by onnxio__payloads_resolve, so that the total is known
     * before any byte moves; bytes that move on no pool job count here. */
    onnxio__progress *progress;
    /* In-place mode: the input, this load's own (NULL: off); the large
     * payloads found in it, in input order; the ranges of it that tensors
     * hold (views), in order, to give back the rest when done. */
    onnxio_buffer *whole;
    in_place *stay;
    size_t stay_count, stay_capacity;
    uint8_t **kept; /* pairs: start, end */
    size_t kept_count;
    uint8_t *side;  /* the bytes the moves left behind, saved (place_in_place) */
};

/* Small payloads (under the raw_data threshold, copied during the parse)
 * share slabs of this size, each piece aligned as the options ask, so that a
 * model of many small initializers costs a malloc per slab, not per tensor;
 * a slab lives as long as one of its tensors holds it. */
#define SLAB_SIZE ((size_t)64 * 1024)
/* Past this alignment a piece gets a buffer of its own. */
#define SLAB_MAX_ALIGNMENT 64
/* Payloads this large and smaller than a huge page (read by a pool job)
 * share slabs that grow from MEDIUM_SLAB to MEDIUM_SLAB_MAX: such slabs are
 * mapped on huge page boundaries with huge pages asked for (buffer.c), where
 * a buffer each was 4 KiB pages. A 0.5 GiB model with 128 weights of 1.2 MB
 * took 37,000 fewer page faults to load. The slab's unused tail costs
 * address space only; at most one huge page of it is ever touched. */
#define MEDIUM_MIN ((size_t)256 << 10)
#define MEDIUM_MAX ((size_t)2 << 20)
#define MEDIUM_SLAB ((size_t)4 << 20)
#define MEDIUM_SLAB_MAX ((size_t)32 << 20)
#define MEDIUM_MAX_ALIGNMENT 4096

onnxio_status onnxio__payloads_new(const onnxio_parse_options *opts, onnxio__pool *pool, onnxio__budget *budget,
                                   onnxio__payloads **out)
{
    onnxio__payloads *p = onnxio__calloc(1, sizeof *p);
    if (!p) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    p->pool = pool;
    p->own_pool = !pool;
    p->direct = opts->direct_io == ONNXIO_ON;
    p->num_threads = opts->num_threads;
    p->budget = budget;
    p->no_copy = opts->no_copy;
    p->threshold = opts->raw_data_threshold;
    p->alignment = opts->alignment;
    p->progress = onnxio__progress_now();
    if (pool) onnxio__pool_read_direct(pool, p->direct);
    if (!opts->skip_raw_data) {
        p->fn = opts->payload_fn;
        p->ctx = opts->payload_ctx;
    }
    *out = p;
    return ONNXIO_OK;
}

void onnxio__payloads_in_place(onnxio__payloads *p, onnxio_buffer *input) { p->whole = input; }

/* Queues a job on the payloads' pool, made now if it is their own and
 * this is its first job. */
static onnxio_status pool_add(onnxio__payloads *p, const onnxio__job *job)
{
    if (!p->pool) {
        onnxio_status s = onnxio__pool_new(p->num_threads, &p->pool);
        if (s) return s;
        onnxio__pool_read_direct(p->pool, p->direct);
    }
    return onnxio__pool_add(p->pool, job);
}

onnxio_status onnxio__payloads_finish(onnxio__payloads *p)
{
    if (!p || !p->own_pool) return ONNXIO_OK;
    onnxio_status s = onnxio__pool_finish(p->pool);
    p->pool = NULL;
    return s;
}

/* In-place mode, once every move and copy is done: the pages of the input
 * that no tensor holds go back. */
static void give_back_rest(onnxio__payloads *p)
{
    if (!p->whole) return;
    const uint8_t *at = onnxio_buffer_data(p->whole);
    onnxio__map_keep_only(at, at + onnxio_buffer_size(p->whole), p->kept, p->kept_count);
}

void onnxio__payloads_free(onnxio__payloads *p)
{
    if (!p) return;
    give_back_rest(p);
    onnxio__free(p->side);
    onnxio__free(p->stay);
    onnxio__free(p->kept);
    for (size_t i = 0; i < p->count; i++) onnxio_buffer_unref(p->items[i].src.owner);
    for (size_t i = 0; i < p->table_capacity; i++) onnxio_buffer_unref(p->table[i].owner);
    onnxio__free(p->table);
    onnxio__free(p->items);
    onnxio_buffer_unref(p->small.buffer);
    onnxio_buffer_unref(p->medium.buffer);
    onnxio__free(p);
}

/* The alignment the options ask of payloads (0: the default). */
static size_t alignment_of(const onnxio__payloads *p) { return (size_t)onnxio__alignment(p->alignment); }

/* `size` bytes of slab `sl`, aligned as the options ask and `phase` bytes
 * past a page boundary (pread_phase; 0 for small slabs) (when they do not
 * fit, a new slab: `first` bytes, then twice the last one's size up to
 * `most`); NULL when out of memory. The caller takes its own reference to
 * sl->buffer for the piece. */
static uint8_t *slab_take(onnxio__payloads *p, slab *sl, size_t size, size_t phase, size_t first, size_t most)
{
    size_t align = alignment_of(p);
    size_t at = (sl->used + align - 1) & ~(align - 1);
    /* Slabs start on a page (a multiple of `align`, as the phase is). */
    if (phase) at += (phase - at % 4096) & 4095;
    if (!sl->buffer || at > sl->size || size > sl->size - at) {
        size_t want = sl->buffer ? sl->size * 2 : first;
        if (want > most) want = most;
        onnxio_buffer *b = onnxio_buffer_new(want, align);
        if (!b) return NULL;
        onnxio_buffer_unref(sl->buffer);
        sl->buffer = b;
        sl->size = want;
        at = phase;
    }
    sl->used = at + size;
    return onnxio_buffer_data(sl->buffer) + at;
}

/* A copy of a small payload into the current small slab; the span takes
 * its own reference to the slab. */
static onnxio_status slab_copy(onnxio__payloads *p, onnxio_span *span, const void *data, size_t size)
{
    uint8_t *dst = slab_take(p, &p->small, size, 0, SLAB_SIZE, SLAB_SIZE);
    if (!dst) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for a %zu-byte payload", size);
    if (size) memcpy(dst, data, size);
    onnxio_span_set(span, dst, size, p->small.buffer);
    return ONNXIO_OK;
}

static size_t share_slot(const shared *table, size_t capacity, const void *entry, uint64_t offset, uint64_t size)
{
    uint64_t h = ((uint64_t)(uintptr_t)entry * 0x9E3779B97F4A7C15ull) ^ (offset * 0xC2B2AE3D27D4EB4Full) ^ size;
    size_t i = (size_t)(h ^ (h >> 29)) & (capacity - 1);
    while (table[i].entry && !(table[i].entry == entry && table[i].offset == offset && table[i].size == size))
        i = (i + 1) & (capacity - 1);
    return i;
}

/* The payload already placed for this range, or NULL. Only no_copy loads
 * share: their payloads are views of the input, so tensors that refer to
 * the same bytes may view the same copy of them. A copy load gives every
 * tensor bytes of its own, as protobuf does. */
static const shared *share_find(const onnxio__payloads *p, const onnxio__payload_src *src)
{
    if (!p->no_copy || !src->share || !p->table_capacity) return NULL;
    const shared *e = &p->table[share_slot(p->table, p->table_capacity, src->share, src->share_offset, src->size)];
    return e->entry ? e : NULL;
}

/* Remembers where this range was placed (out of memory: it is just not
 * shared, which costs memory, not correctness). */
static void share_add(onnxio__payloads *p, const onnxio__payload_src *src, const onnxio_span *span)
{
    if (!p->no_copy || !src->share) return;
    if (2 * (p->table_count + 1) > p->table_capacity) {
        size_t cap = p->table_capacity ? 2 * p->table_capacity : 64;
        shared *t = onnxio__calloc(cap, sizeof *t);
        if (!t) return;
        for (size_t i = 0; i < p->table_capacity; i++)
            if (p->table[i].entry)
                t[share_slot(t, cap, p->table[i].entry, p->table[i].offset, p->table[i].size)] = p->table[i];
        onnxio__free(p->table);
        p->table = t;
        p->table_capacity = cap;
    }
    shared *e = &p->table[share_slot(p->table, p->table_capacity, src->share, src->share_offset, src->size)];
    *e = (shared){src->share, src->share_offset, src->size, span->data, onnxio_buffer_ref(span->owner)};
    p->table_count++;
}

/* Marks the payload as loaded; an external tensor stops being external:
 * no external_data keys, data_location present and DEFAULT, as the onnx
 * package's load_external_data_for_tensor leaves it (so a load and a save
 * write the bytes `onnx.load` + `onnx.save` write); a tensor of an .onnxz
 * entry without data_location, as it was before the archive was written
 * (so .onnx -> .onnxz -> .onnx gives back the same bytes). */
static void loaded(onnxio_TensorProto *t, const onnxio__payload_src *src)
{
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    if (src->entry) onnxio__mark_loaded_entry(t);
    else if (src->external) onnxio__mark_loaded_external(t);
}

void onnxio__mark_loaded_entry(onnxio_TensorProto *t)
{
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    bool present = false;
    for (size_t i = 0; i < t->external_data.size && !present; i++) {
        const onnxio_StringStringEntryProto *e = t->external_data.data[i];
        present = e->key.size == sizeof ONNXIO__KEY_DATA_LOCATION - 1 &&
                  memcmp(e->key.data, ONNXIO__KEY_DATA_LOCATION, e->key.size) == 0;
    }
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_data_location]);
    if (present) onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location); /* DEFAULT, 0 */
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_external_data]);
}

void onnxio__mark_loaded_external(onnxio_TensorProto *t)
{
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    t->data_location = ONNXIO_TensorProto_DataLocation_DEFAULT;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_external_data]);
}

/* Whether fill() reads the payload from its file (a pread). */
static bool read_from_file(const onnxio__payloads *p, const onnxio__payload_src *src)
{
    return src->fd >= 0 && (src->size >= p->threshold || !src->data);
}

/* Where in a page the copy of a payload that fill() reads from its file
 * starts: at its file offset's place in a page (mod 4096), so that the
 * kernel copies each page of the page cache to one page, when the
 * alignment the options ask allows it; else 0. */
static size_t pread_phase(const onnxio__payloads *p, const onnxio__payload_src *src)
{
    size_t phase = (size_t)(src->offset % 4096);
    return read_from_file(p, src) && phase % alignment_of(p) == 0 ? phase : 0;
}

/* Queues the move of the source bytes to `dst` (a pread when they are in a
 * file and not mapped, so the file's pages never count against the
 * process). */
static onnxio_status fill(onnxio__payloads *p, const onnxio_TensorProto *t, const onnxio__payload_src *src, uint8_t *dst,
                          onnxio_buffer *dst_owner)
{
    onnxio__job job = {.dst = dst, .size = src->size, .what = src->what ? src->what : onnxio__tensor_name(t), .keep = dst_owner};
    if (src->crc) {
        job.crc = src->crc->piece;
        src->crc->filled = true;
    }
    if (src->expect) {
        job.expect = src->expect;
        job.digest_block = src->digest_block;
        job.tensor = onnxio__tensor_name(t);
        *src->checked = true;
    }
    if (read_from_file(p, src)) {
        job.kind = ONNXIO__JOB_PREAD;
        job.fd = src->fd;
        job.offset = src->offset;
    } else if (src->size < p->threshold && !src->crc && !src->expect) {
        memcpy(dst, src->data, (size_t)src->size);
        onnxio__progress_add(p->progress, src->size);
        return ONNXIO_OK;
    } else {
        job.kind = ONNXIO__JOB_COPY;
        job.src = src->data;
    }
    return pool_add(p, &job);
}

/* Counts a payload whose bytes move on no pool job (skipped, borrowed,
 * shared, or copied here). */
static onnxio_status count(onnxio__payloads *p, const onnxio__payload_src *src)
{
    onnxio__progress_add(p->progress, src->size);
    return ONNXIO_OK;
}

static onnxio_status place(onnxio__payloads *p, onnxio_TensorProto *t, const onnxio__payload_src *src,
                           onnxio_payload_action action, uint8_t *dst, onnxio_buffer *owner)
{
    onnxio_span *span = &t->raw_data;
    if (action == ONNXIO_PAYLOAD_SKIP) {
        count(p, src);
        if (!src->external) {
            onnxio_span_clear(span);
            span->size = (size_t)src->size;
            onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
        }
        return ONNXIO_OK;
    }
    if (action == ONNXIO_PAYLOAD_PLACED) {
        if (!dst && src->size)
            return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor '%s': the payload callback placed %llu bytes at NULL",
                                onnxio__tensor_name(t), (unsigned long long)src->size);
        onnxio_status s = fill(p, t, src, dst, owner);
        if (s) return s;
        onnxio_span_set(span, dst, (size_t)src->size, owner);
        loaded(t, src);
        return ONNXIO_OK;
    }
    if ((p->no_copy || src->owned) && src->data && !src->copy) {
        onnxio_span_set(span, (uint8_t *)src->data, (size_t)src->size, src->owner);
        loaded(t, src);
        return count(p, src);
    }
    const shared *same = share_find(p, src);
    if (same) {
        onnxio_span_set(span, same->data, (size_t)same->size, same->owner);
        loaded(t, src);
        return count(p, src);
    }
    onnxio_status s = onnxio__budget_take(p->budget, src->size, onnxio__tensor_name(t)[0] ? onnxio__tensor_name(t) : "a tensor");
    if (s) return s;
    if (src->size >= p->threshold || !src->data) {
        if (src->size > SIZE_MAX)
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "tensor '%s': %llu bytes do not fit in memory", onnxio__tensor_name(t),
                                (unsigned long long)src->size);
        onnxio_buffer *own = NULL, *owner;
        uint8_t *dst;
        size_t phase = pread_phase(p, src);
        if (src->size >= MEDIUM_MIN && src->size < MEDIUM_MAX && p->alignment <= MEDIUM_MAX_ALIGNMENT) {
            dst = slab_take(p, &p->medium, (size_t)src->size, phase, MEDIUM_SLAB, MEDIUM_SLAB_MAX);
            owner = p->medium.buffer;
        } else {
            owner = own = onnxio__buffer_new_phase((size_t)src->size, (size_t)p->alignment, phase);
            dst = onnxio_buffer_data(own);
        }
        if (!dst)
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "tensor '%s': out of memory for %llu bytes", onnxio__tensor_name(t),
                                (unsigned long long)src->size);
        onnxio_span_set(span, dst, (size_t)src->size, owner);
        onnxio_buffer_unref(own);
        loaded(t, src);
        share_add(p, src, span);
        return fill(p, t, src, span->data, span->owner);
    }
    if (src->size <= SLAB_SIZE && p->alignment <= SLAB_MAX_ALIGNMENT)
        s = slab_copy(p, span, src->data, (size_t)src->size);
    else
        s = onnxio_span_copy_from(span, src->data, (size_t)src->size);
    if (s) return s;
    loaded(t, src);
    share_add(p, src, span);
    return count(p, src);
}

/* Whether `src` is a large payload of the load's own input (in-place mode). */
static bool stays(const onnxio__payloads *p, const onnxio__payload_src *src)
{
    if (!p->whole || src->external || !src->data || src->size < p->threshold) return false;
    const uint8_t *b = onnxio_buffer_data(p->whole);
    return src->data >= b && src->size <= onnxio_buffer_size(p->whole) - (size_t)(src->data - b);
}

onnxio_status onnxio__payload_take(onnxio__payloads *p, onnxio_TensorProto *t, const onnxio__payload_src *src)
{
    if (stays(p, src)) {
        /* Placed when the parse is over (onnxio__payloads_resolve). Until
         * then it looks like a skipped payload. */
        if (!onnxio__grow((void **)&p->stay, &p->stay_capacity, p->stay_count, sizeof *p->stay))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        p->stay[p->stay_count++] = (in_place){t, *src};
        onnxio_span_clear(&t->raw_data);
        t->raw_data.size = (size_t)src->size;
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
        return ONNXIO_OK;
    }
    if (!p->fn && !p->progress) return place(p, t, src, ONNXIO_PAYLOAD_LOAD, NULL, NULL);
    /* The callback sees the whole tensor, so it runs after the parse. Until
     * then an inline payload looks like a skipped one. */
    onnxio__progress_total(p->progress, src->size);
    if (!onnxio__grow((void **)&p->items, &p->capacity, p->count, sizeof *p->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    p->items[p->count].tensor = t;
    p->items[p->count].src = *src;
    onnxio_buffer_ref(src->owner);
    p->count++;
    if (!src->external) {
        onnxio_span_clear(&t->raw_data);
        t->raw_data.size = (size_t)src->size;
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    }
    return ONNXIO_OK;
}

/* In-place mode: every large payload of the input is made aligned where
 * it is (onnxio__payloads_in_place), and its tensor holds a view of it.
 *
 * In input order, each payload moves left to the aligned address below it
 * (less than `alignment` bytes, into the tags, lengths and names before it,
 * all parsed by now) when no earlier payload's new place reaches there;
 * else right, to the first aligned address past the earlier payload's new
 * end (into the bytes after it, and the slack after the file,
 * ONNXIO__IN_PLACE_SLACK). So the new places never overlap, and a right
 * move can push the next payloads right too (tensors with short names side
 * by side); a payload that would move more than IN_PLACE_SHIFT_MAX bytes
 * gets a block of its own instead (a copy).
 *
 * A payload's bytes that its new place does not cover (the `shift` bytes
 * it leaves behind) may be where another payload moves to: they are saved
 * first, and each move then reads only inside its own new place. So no
 * move reads what another writes, and the moves run in parallel on the
 * pool, each as one job (one cut in pieces would overwrite its own
 * source). The copies are made before any move, one at a time, and the
 * pages they leave are given back at once. */
#define IN_PLACE_SHIFT_MAX ((size_t)4096)

typedef struct in_place_plan {
    uint8_t *dst;  /* NULL: a copy */
    size_t shift;  /* |dst - src| */
    size_t keep;   /* the bytes it leaves behind: min(shift, size) */
    size_t saved;  /* offset of those bytes in the side buffer */
} in_place_plan;

/* A payload of the input copied into a block of its own, the pages of its
 * bytes in the input given back as it goes. */
static onnxio_status copy_out(onnxio__payloads *p, in_place *q)
{
    size_t n = (size_t)q->src.size;
    onnxio_status s = onnxio__budget_take(p->budget, n, onnxio__tensor_name(q->tensor));
    if (s) return s;
    onnxio_buffer *b = onnxio_buffer_new(n, (size_t)p->alignment);
    if (!b)
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "tensor '%s': out of memory for %zu bytes", onnxio__tensor_name(q->tensor), n);
    uint8_t *to = onnxio_buffer_data(b);
    for (size_t at = 0; at < n; at += ONNXIO__CRC_PIECE) {
        size_t k = n - at < ONNXIO__CRC_PIECE ? n - at : ONNXIO__CRC_PIECE;
        memcpy(to + at, q->src.data + at, k);
        onnxio__map_drop(q->src.data + at, k);
    }
    onnxio_span_set(&q->tensor->raw_data, to, n, b);
    onnxio_buffer_unref(b);
    loaded(q->tensor, &q->src);
    onnxio__progress_add(p->progress, n);
    return ONNXIO_OK;
}

static onnxio_status place_in_place(onnxio__payloads *p)
{
    uint8_t *base = onnxio_buffer_data(p->whole), *limit = base + onnxio_buffer_size(p->whole);
    uintptr_t align = alignment_of(p);
    size_t count = p->stay_count, side_size = 0;
    /* The saved bytes: at most a 64th of the input (and 1 MiB) in all. */
    size_t side_max = onnxio_buffer_size(p->whole) / 64 > ((size_t)1 << 20) ? onnxio_buffer_size(p->whole) / 64 : (size_t)1 << 20;
    in_place_plan *plan = onnxio__calloc(count, sizeof *plan);
    p->kept = onnxio__malloc(2 * count * sizeof *p->kept);
    if (!plan || !p->kept) {
        onnxio__free(plan);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    /* Where each payload goes. */
    uint8_t *cursor = base, *prev_src_end = base;
    for (size_t i = 0; i < count; i++) {
        uint8_t *src = (uint8_t *)p->stay[i].src.data;
        size_t n = (size_t)p->stay[i].src.size;
        /* not after the one before (a field read twice): a copy */
        if (src < prev_src_end) continue;
        prev_src_end = src + n;
        uint8_t *left = src - (uintptr_t)src % align;
        uint8_t *dst = left >= cursor ? left : (uint8_t *)(((uintptr_t)cursor + align - 1) & ~(align - 1));
        size_t shift = (size_t)(dst > src ? dst - src : src - dst), keep = shift < n ? shift : n;
        if (shift > IN_PLACE_SHIFT_MAX || dst > limit || (size_t)(limit - dst) < n || keep > side_max - side_size) continue;
        plan[i] = (in_place_plan){dst, shift, keep, side_size};
        side_size += keep;
        cursor = dst + n;
    }
    uint8_t *side = side_size ? onnxio__malloc(side_size) : NULL;
    onnxio_status s = side_size && !side ? onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory") : ONNXIO_OK;
    /* Before any move: the bytes each leaves behind saved, the copies made. */
    for (size_t i = 0; !s && i < count; i++) {
        in_place *q = &p->stay[i];
        uint8_t *src = (uint8_t *)q->src.data, *dst = plan[i].dst;
        size_t n = (size_t)q->src.size;
        if (!dst) {
            s = copy_out(p, q);
            continue;
        }
        size_t keep = plan[i].keep;
        /* moving left, its last bytes; right, its first */
        if (keep) memcpy(side + plan[i].saved, dst < src ? src + n - keep : src, keep);
    }
    /* The moves. */
    for (size_t i = 0; !s && i < count; i++) {
        in_place *q = &p->stay[i];
        uint8_t *src = (uint8_t *)q->src.data, *dst = plan[i].dst;
        size_t n = (size_t)q->src.size;
        if (!dst) continue;
        size_t shift = plan[i].shift;
        if (plan[i].keep == n) {
            if (n) memcpy(dst, side + plan[i].saved, n); /* its new place is clear of every source */
        } else if (shift) {
            /* Left: dst[0, n - shift) = src[0, n - shift), then the saved
             * last bytes; right: dst[shift, n) = src[shift, n), then the
             * saved first bytes. Either reads only inside [dst, dst + n). */
            onnxio__job job = {.kind = ONNXIO__JOB_MOVE,
                               .dst = dst < src ? dst : dst + shift,
                               .src = dst < src ? src : src + shift,
                               .size = n - shift,
                               .rest = side + plan[i].saved,
                               .rest_dst = dst < src ? dst + n - shift : dst,
                               .rest_size = shift,
                               .what = onnxio__tensor_name(q->tensor)};
            s = pool_add(p, &job);
        }
        if (!s) onnxio__progress_add(p->progress, shift ? 0 : n);
        onnxio_buffer *view = s ? NULL : onnxio__buffer_view(p->whole, dst, n);
        if (!s && !view) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        if (s) break;
        onnxio_span_set(&q->tensor->raw_data, dst, n, view);
        onnxio_buffer_unref(view);
        loaded(q->tensor, &q->src);
        p->kept[2 * p->kept_count] = dst;
        p->kept[2 * p->kept_count + 1] = dst + n;
        p->kept_count++;
    }
    onnxio__free(plan);
    p->side = side; /* read by the moves: freed with the payloads, after the pool */
    p->stay_count = 0;
    return s;
}

onnxio_status onnxio__payloads_resolve(onnxio__payloads *p)
{
    onnxio_status s = p->stay_count ? place_in_place(p) : ONNXIO_OK;
    if (s) return s;
    size_t i = 0;
    for (; i < p->count && !s; i++) {
        pending *q = &p->items[i];
        onnxio_payload_request req = {q->tensor, q->src.size, q->src.external};
        void *dst = NULL;
        onnxio_buffer *owner = NULL;
        onnxio_payload_action action = p->fn ? p->fn(p->ctx, &req, &dst, &owner) : ONNXIO_PAYLOAD_LOAD;
        if (action != ONNXIO_PAYLOAD_LOAD && action != ONNXIO_PAYLOAD_SKIP && action != ONNXIO_PAYLOAD_PLACED)
            s = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor '%s': the payload callback returned %d",
                             onnxio__tensor_name(q->tensor), (int)action);
        else
            s = place(p, q->tensor, &q->src, action, dst, owner);
        onnxio_buffer_unref(q->src.owner);
    }
    for (; i < p->count; i++) onnxio_buffer_unref(p->items[i].src.owner);
    p->count = 0;
    return s;
}
