/* Arena allocation for message trees (docs/design.md "Memory model"): a bump
 * allocator over large blocks, freed all at once. Only what must start
 * zeroed (message structs) is zeroed: strings and arrays are written whole
 * by their callers, so a parse does not clear their bytes first. A block
 * kept for the next arena is cleared when it is put back (the head block
 * as far as it was used, when it started clean), so that structs made
 * from it need no clearing (onnxio__bump.zero); structs from other blocks
 * are cleared as handed out. The arena also
 * remembers every payload span made in it, so that freeing the arena drops
 * the payload references those spans still hold. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "memory/memory.h"

#define ARENA_ALIGN 16
/* Small first blocks: a message built from Python (one arena each) costs
 * about its struct and strings, not a 16 KiB block; parses grow the blocks
 * by doubling to ARENA_MAX_BLOCK within a few allocations. */
#define ARENA_FIRST_BLOCK 1024u
/* Blocks stay under glibc's smallest mmap threshold (128 KiB), so that
 * they come from the heap and a freed tree's blocks serve the next one:
 * with 1 MiB blocks, glibc mapped and unmapped each, and every copy of the
 * 200k-node model faulted its 95 MiB in anew (CopyFrom 17 ms, 12 ms with
 * these). Allocations larger than half a block get a block of their own. */
#define ARENA_MAX_BLOCK ((size_t)64 << 10)
#define SPANS_PER_CHUNK 256

typedef struct block {
    struct block *next;
    size_t size; /* usable bytes after the header */
} block;

/* In the arena's own blocks: 8 spans first, twice as many in each next
 * chunk up to SPANS_PER_CHUNK, so that a small tree's few tensors take no
 * allocation of their own. */
typedef struct span_chunk {
    struct span_chunk *next;
    size_t count, capacity;
    onnxio_span *spans[];
} span_chunk;

struct onnxio_arena {
    /* First: the free part of the head block (memory/memory.h), and in the
     * rest of its last word, limit_hit (an allocation failed because of
     * `limit`) and caches (filled by a parse, onnxio__arena_expect, or with
     * a cached block: its blocks go back to the cache). */
    onnxio__bump bump;
    atomic_size_t refs;
    block *head;
    size_t next_block;
    size_t total;
    size_t limit; /* 0, or the most `total` may reach (a load's expansion budget) */
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
 * many bytes of blocks (spares kept for the next arena do not count),
 * malloc_trim gives the free pages back. Large arenas (loads)
 * do not count: their blocks are reused by the next load, and trimming them
 * would make it fault every page in again (a loop of loads of the 200k-node
 * model went from 21 to 66 ms a load when every free trimmed). */
#define TRIM_AFTER ((size_t)32 << 20)
#define SMALL_ARENA ((size_t)64 << 10)
#if defined(__GLIBC__)
static atomic_size_t freed_since_trim;
#endif

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

/* Freed blocks of ARENA_MAX_BLOCK bytes of parsed trees (and of trees
 * that took cached blocks, such as a copy of a parsed one), up to
 * BLOCK_CACHE_MAX of them in the process, serve the next arenas' blocks
 * (trees built from Python give theirs back, see note_freed). glibc gives
 * the top of its
 * heap back to the system on free once more than its trim threshold (128
 * KiB until a large mapped chunk is freed) is free there, which a freed
 * tree is: the next parse of the same model then faulted every page of
 * its tree in anew (the 200,000-node graph with attributes: 40,000 page
 * faults and 95 ms a parse in a loop). */
#define BLOCK_CACHE_MAX ((size_t)64 << 20)
#define ZERO_CACHED_MAX ((size_t)4 << 20)
static pthread_mutex_t block_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static block *block_cache[2]; /* [1]: cleared blocks, [0]: the others */
static size_t block_cache_bytes;

/* A cached block, a cleared one first (*clean then says so); NULL when
 * none is cached. */
static block *block_cache_take(bool *clean)
{
    pthread_mutex_lock(&block_cache_lock);
    int k = block_cache[1] ? 1 : 0;
    block *b = block_cache[k];
    if (b) {
        block_cache[k] = b->next;
        block_cache_bytes -= ARENA_MAX_BLOCK;
        onnxio__alloc_kept(-1);
    }
    pthread_mutex_unlock(&block_cache_lock);
    *clean = k == 1;
    return b;
}

/* Blocks smaller than ARENA_MAX_BLOCK have a power-of-two size from
 * ARENA_FIRST_BLOCK up, and freed ones, a few of each size, serve the next
 * arenas' blocks of that size: a loop that parses small models (each a
 * root message and one block sized to its input) otherwise made two
 * malloc calls large enough to have glibc consolidate its free lists each
 * time (malloc_consolidate was 4% of a loop over the 1,072 models of
 * libonnx-testdata). Slots are taken and filled with atomic exchanges, so
 * no block is read while another thread may own it. */
#define SPARE_CLASSES 6 /* 1 KiB to 32 KiB */
#define SPARE_SLOTS 2
static _Atomic(block *) spare[SPARE_CLASSES][SPARE_SLOTS];

/* The class of a small block size (a power of two, at least
 * ARENA_FIRST_BLOCK, under ARENA_MAX_BLOCK). */
static int spare_class(size_t size)
{
    int c = 0;
    while (size > ARENA_FIRST_BLOCK) size >>= 1, c++;
    return c;
}

/* The block size that serves `want` bytes: the next power of two under
 * ARENA_MAX_BLOCK, else `want`. */
static size_t block_size_for(size_t want)
{
    if (want >= ARENA_MAX_BLOCK) return want;
    size_t size = ARENA_FIRST_BLOCK;
    while (size < want) size <<= 1;
    return size;
}

static block *spare_take(size_t size)
{
    int c = spare_class(size);
    for (int i = 0; i < SPARE_SLOTS; i++)
        if (atomic_load_explicit(&spare[c][i], memory_order_relaxed)) {
            block *b = atomic_exchange(&spare[c][i], NULL);
            if (b) {
                onnxio__alloc_kept(-1);
                return b;
            }
        }
    return NULL;
}

/* How many of the bytes of `a`'s block `b` may not be zero: as far as the
 * head block was used when it started clean, all of any other block. */
static size_t dirty_bytes(const onnxio_arena *a, const block *b)
{
    return b == a->head && a->bump.zero ? (size_t)(a->bump.cur - ((const char *)b + BLOCK_HEADER)) : b->size;
}

/* Keeps `b` (its first `dirty` bytes not known to be zero) as a spare if a
 * slot of its size is free, cleared (the next arena's message structs
 * then need no clearing: one memset of what a tree used costs less than
 * clearing each struct as it is made); frees it otherwise. Returns the
 * bytes freed. */
static size_t spare_put(block *b, size_t dirty)
{
    int c = spare_class(b->size);
    bool zeroed = false;
    for (int i = 0; i < SPARE_SLOTS; i++) {
        block *expected = NULL;
        if (atomic_load_explicit(&spare[c][i], memory_order_relaxed)) continue;
        if (!zeroed) {
            memset((char *)b + BLOCK_HEADER, 0, dirty);
            zeroed = true;
        }
        if (atomic_compare_exchange_strong(&spare[c][i], &expected, b)) {
            onnxio__alloc_kept(1);
            return 0;
        }
    }
    size_t n = BLOCK_HEADER + b->size;
    onnxio__free(b);
    return n;
}

ONNXIO_API void onnxio_arena_unref(onnxio_arena *a)
{
    /* The last reference takes no atomic write: nobody else holds one to
     * add to the count (as upb_Arena_Free). */
    if (!a || (atomic_load_explicit(&a->refs, memory_order_acquire) != 1 && atomic_fetch_sub(&a->refs, 1) != 1))
        return;
    for (span_chunk *c = a->spans; c; c = c->next)
        for (size_t i = 0; i < c->count; i++) onnxio_span_clear(c->spans[i]);
    block *b = a->head, *next;
    if (a->bump.caches && a->total > SMALL_ARENA) {
        /* The blocks of a tree of up to ZERO_CACHED_MAX are cleared for
         * the next one, as spares are (a parse of a few KiB fills one
         * 64 KiB block); a bigger tree's are not: clearing them would
         * take a large part of the time its free takes. */
        int clean = a->total <= ZERO_CACHED_MAX;
        for (block *z = clean ? b : NULL; z; z = z->next)
            if (z->size == ARENA_MAX_BLOCK) memset((char *)z + BLOCK_HEADER, 0, dirty_bytes(a, z));
        pthread_mutex_lock(&block_cache_lock);
        for (; b && block_cache_bytes < BLOCK_CACHE_MAX; b = next) {
            next = b->next;
            if (b->size != ARENA_MAX_BLOCK) {
                onnxio__free(b);
                continue;
            }
            b->next = block_cache[clean];
            block_cache[clean] = b;
            block_cache_bytes += ARENA_MAX_BLOCK;
            onnxio__alloc_kept(1);
        }
        pthread_mutex_unlock(&block_cache_lock);
    }
    size_t freed = 0;
    for (; b; b = next) {
        next = b->next;
        if (b->size < ARENA_MAX_BLOCK) freed += spare_put(b, dirty_bytes(a, b));
        else onnxio__free(b);
    }
    if (a->total <= SMALL_ARENA && freed) note_freed(freed);
    onnxio__free(a);
}

/* The slow path of onnxio__arena_bump and onnxio__arena_bytes: a new
 * block (16-byte aligned, as is what it returns). */
void *onnxio__arena_grow(onnxio_arena *a, size_t size)
{
    size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size == 0) size = ARENA_ALIGN;
    if (size > ((size_t)-1) / 2) return NULL;
    size_t want = block_size_for(a->next_block < size ? size : a->next_block);
    if (a->limit && (a->total > a->limit || BLOCK_HEADER + want > a->limit - a->total)) {
        a->bump.limit_hit = true;
        return NULL;
    }
    /* A spare's bytes are zero (spare_put), and a cached block's that
     * was cleared; a new block's are not known. */
    bool zero = false;
    block *nb = NULL;
    if (want == ARENA_MAX_BLOCK && (nb = block_cache_take(&zero))) a->bump.caches = true;
    else if (want < ARENA_MAX_BLOCK) zero = (nb = spare_take(want)) != NULL;
    if (!nb && !(nb = onnxio__malloc(BLOCK_HEADER + want))) return NULL;
    nb->size = want;
    a->total += BLOCK_HEADER + want;
    char *p = (char *)nb + BLOCK_HEADER;
    /* Big allocations get their own block behind the head, so that the
     * head's free space is not wasted. */
    if (size > a->next_block / 2 && a->head) {
        nb->next = a->head->next;
        a->head->next = nb;
        return p;
    }
    nb->next = a->head;
    a->head = nb;
    if (a->next_block < ARENA_MAX_BLOCK) a->next_block = a->next_block * 2 < ARENA_MAX_BLOCK ? a->next_block * 2 : ARENA_MAX_BLOCK;
    a->bump.cur = p + size;
    a->bump.end = p + want;
    a->bump.zero = zero;
    return p;
}

ONNXIO_API void *onnxio_arena_alloc(onnxio_arena *a, size_t size)
{
    return a ? onnxio__arena_zalloc(a, size) : NULL;
}

ONNXIO_API size_t onnxio_arena_used(const onnxio_arena *a) { return a ? a->total : 0; }

void onnxio__arena_limit(onnxio_arena *a, size_t limit)
{
    a->limit = limit;
    a->bump.limit_hit = false;
}

/* Message structs are large next to their wire bytes: 32 bytes of arena
 * per input byte hold the whole tree of each of the 1,072 models of
 * libonnx-testdata in one block (16 held fewer than half of them). */
#define ARENA_PER_INPUT_BYTE 32u

void onnxio__arena_expect(onnxio_arena *a, size_t input)
{
    size_t want = input > ARENA_MAX_BLOCK / ARENA_PER_INPUT_BYTE ? ARENA_MAX_BLOCK : input * ARENA_PER_INPUT_BYTE;
    size_t free_now = (size_t)(a->bump.end - a->bump.cur);
    a->bump.caches = true;
    if (free_now < want && a->next_block < want) a->next_block = want;
}

bool onnxio__arena_limit_hit(const onnxio_arena *a) { return a->bump.limit_hit; }

onnxio_status onnxio__arena_track_span(onnxio_arena *a, onnxio_span *span)
{
    span_chunk *c = a->spans;
    if (!c || c->count == c->capacity) {
        size_t cap = !c ? 8 : 2 * c->capacity < SPANS_PER_CHUNK ? 2 * c->capacity : SPANS_PER_CHUNK;
        span_chunk *n = onnxio__arena_bump(a, sizeof *n + cap * sizeof n->spans[0]);
        if (!n) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        n->next = c;
        n->count = 0;
        n->capacity = cap;
        a->spans = c = n;
    }
    c->spans[c->count++] = span;
    return ONNXIO_OK;
}
