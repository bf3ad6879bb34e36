/* Arena allocation for message trees (docs/design.md "Memory model"): a bump
 * allocator over large zeroed blocks, freed all at once. The arena also
 * remembers every payload span made in it, so that freeing the arena drops
 * the payload references those spans still hold. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "internal.h"

#define ARENA_ALIGN 16
/* Small first blocks: a message built from Python (one arena each) costs
 * about its struct and strings, not a 16 KiB block; parses grow the blocks
 * by doubling to ARENA_MAX_BLOCK within a few allocations. */
#define ARENA_FIRST_BLOCK 1024u
#define ARENA_MAX_BLOCK (4u * 1024 * 1024)
#define SPANS_PER_CHUNK 256

typedef struct block {
    struct block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
} block;

typedef struct span_chunk {
    struct span_chunk *next;
    size_t count;
    onnxio_span *spans[SPANS_PER_CHUNK];
} span_chunk;

struct onnxio_arena {
    atomic_size_t refs;
    block *head;
    size_t next_block;
    size_t total;
    size_t limit;   /* 0, or the most `total` may reach (a load's expansion budget) */
    bool limit_hit; /* an allocation failed because of `limit` */
    span_chunk *spans;
};

#define BLOCK_HEADER ((sizeof(block) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

ONNXIO_API onnxio_arena *onnxio_arena_new(void)
{
    onnxio_arena *a = onnxio__calloc(1, sizeof *a);
    if (!a) return NULL;
    atomic_init(&a->refs, 1);
    a->next_block = ARENA_FIRST_BLOCK;
    return a;
}

ONNXIO_API onnxio_arena *onnxio_arena_ref(onnxio_arena *a)
{
    if (a) atomic_fetch_add(&a->refs, 1);
    return a;
}

/* glibc keeps the heap memory of freed small blocks (freed among live
 * allocations, it is never at the top of the heap), so that 100,000 small
 * arenas (messages built from Python) freed left their 110 MiB in the
 * process. Once small arenas (at most SMALL_ARENA bytes) have freed this
 * many bytes, malloc_trim gives the free pages back. Large arenas (loads)
 * do not count: their blocks are reused by the next load, and trimming them
 * would make it fault every page in again (a loop of loads of the 200k-node
 * model went from 21 to 66 ms a load when every free trimmed). */
#define TRIM_AFTER ((size_t)32 << 20)
#define SMALL_ARENA ((size_t)64 << 10)
static atomic_size_t freed_since_trim;

static void note_freed(size_t n)
{
#if defined(__GLIBC__)
    if (atomic_fetch_add(&freed_since_trim, n) + n >= TRIM_AFTER) {
        atomic_store(&freed_since_trim, 0);
        malloc_trim(0);
    }
#else
    (void)n;
#endif
}

ONNXIO_API void onnxio_arena_unref(onnxio_arena *a)
{
    if (!a || atomic_fetch_sub(&a->refs, 1) != 1) return;
    for (span_chunk *c = a->spans, *next; c; c = next) {
        next = c->next;
        for (size_t i = 0; i < c->count; i++) onnxio_span_clear(c->spans[i]);
        onnxio__free(c);
    }
    for (block *b = a->head, *next; b; b = next) {
        next = b->next;
        onnxio__free(b);
    }
    if (a->total <= SMALL_ARENA) note_freed(a->total);
    onnxio__free(a);
}

static void *arena_alloc(onnxio_arena *a, size_t size, int zero)
{
    size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size == 0) size = ARENA_ALIGN;
    block *b = a->head;
    if (!b || b->size - b->used < size) {
        if (size > ((size_t)-1) / 2) return NULL;
        size_t want = a->next_block;
        if (want < size) want = size;
        /* Big allocations get their own block behind the head, so that the
         * head's free space is not wasted. */
        if (a->limit && (a->total > a->limit || BLOCK_HEADER + want > a->limit - a->total)) {
            a->limit_hit = true;
            return NULL;
        }
        block *nb = onnxio__calloc(1, BLOCK_HEADER + want);
        if (!nb) return NULL;
        nb->size = want;
        a->total += BLOCK_HEADER + want;
        if (size > a->next_block / 2 && b) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
            if (a->next_block < ARENA_MAX_BLOCK) a->next_block *= 2;
        }
        b = nb;
    }
    void *p = (char *)b + BLOCK_HEADER + b->used;
    b->used += size;
    (void)zero; /* blocks come from calloc and are never reused */
    return p;
}

ONNXIO_API void *onnxio_arena_alloc(onnxio_arena *a, size_t size)
{
    return a ? arena_alloc(a, size, 1) : NULL;
}

void *onnxio__arena_alloc_raw(onnxio_arena *a, size_t size) { return arena_alloc(a, size, 0); }

ONNXIO_API size_t onnxio_arena_used(const onnxio_arena *a) { return a ? a->total : 0; }

void onnxio__arena_limit(onnxio_arena *a, size_t limit)
{
    a->limit = limit;
    a->limit_hit = false;
}

bool onnxio__arena_limit_hit(const onnxio_arena *a) { return a->limit_hit; }

onnxio_status onnxio__arena_track_span(onnxio_arena *a, onnxio_span *span)
{
    span_chunk *c = a->spans;
    if (!c || c->count == SPANS_PER_CHUNK) {
        c = onnxio__malloc(sizeof *c);
        if (!c) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        c->next = a->spans;
        c->count = 0;
        a->spans = c;
    }
    c->spans[c->count++] = span;
    return ONNXIO_OK;
}
