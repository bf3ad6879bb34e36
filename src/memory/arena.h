/* Arenas (arena.c): the bump allocation inline for the codec, the blocks
 * behind it, the limit of a parse. Included by memory/memory.h. */
#ifndef ONNXIO_MEMORY_ARENA_H
#define ONNXIO_MEMORY_ARENA_H

#include <string.h>

#include "base/base.h"

/* arena.c: payload spans whose owner reference the arena drops when freed. */
onnxio_status onnxio__arena_track_span(onnxio_arena *arena, onnxio_span *span);
/* The free part of an arena's head block; struct onnxio_arena starts with
 * it, so that the allocations of a parse are a compare and an add, inline. */
typedef struct onnxio__bump {
    char *cur, *end;
    bool zero; /* cur..end holds only zero bytes (a spare block, arena.c) */
    bool limit_hit, caches; /* arena.c's (struct onnxio_arena) */
} onnxio__bump;
/* arena.c: a new block for what does not fit (NULL when out of memory or
 * past the arena's limit). */
void *onnxio__arena_grow(onnxio_arena *arena, size_t size);
/* `size` (at least 1) bytes, 16-byte aligned, from the head block's free
 * part; NULL when they do not fit there. */
static inline void *onnxio__bump_take(onnxio__bump *b, size_t size)
{
    uintptr_t p = ((uintptr_t)b->cur + 15) & ~(uintptr_t)15;
    if (ONNXIO_LIKELY(size && p <= (uintptr_t)b->end && size <= (uintptr_t)b->end - p)) {
        b->cur = (char *)(p + size);
        return (void *)p;
    }
    return NULL;
}
/* `size` uninitialized bytes, 16-byte aligned. */
static inline void *onnxio__arena_bump(onnxio_arena *arena, size_t size)
{
    void *p = onnxio__bump_take((onnxio__bump *)(void *)arena, size);
    return ONNXIO_LIKELY(p != NULL) ? p : onnxio__arena_grow(arena, size);
}
/* `size` (at least 1) uninitialized bytes, unaligned: string contents. */
static inline char *onnxio__arena_bytes(onnxio_arena *arena, size_t size)
{
    onnxio__bump *b = (onnxio__bump *)(void *)arena;
    if (ONNXIO_LIKELY(size <= (size_t)(b->end - b->cur))) {
        char *p = b->cur;
        b->cur += size;
        return p;
    }
    return onnxio__arena_grow(arena, size);
}
/* A NUL-terminated copy of `size` bytes at `data` in the arena (string
 * contents: unaligned); NULL when out of memory. */
static inline char *onnxio__arena_strndup(onnxio_arena *arena, const void *data, size_t size)
{
    char *p = onnxio__arena_bytes(arena, size + 1);
    if (!p) return NULL;
    const char *q = data;
    /* Names are short: up to 16 bytes are copied inline, as two
     * overlapping words, rather than by a call to memcpy. */
    if (size >= 8 && size <= 16) {
        uint64_t a, b;
        memcpy(&a, q, 8);
        memcpy(&b, q + size - 8, 8);
        memcpy(p, &a, 8);
        memcpy(p + size - 8, &b, 8);
    } else if (size >= 4 && size < 8) {
        uint32_t a, b;
        memcpy(&a, q, 4);
        memcpy(&b, q + size - 4, 4);
        memcpy(p, &a, 4);
        memcpy(p + size - 4, &b, 4);
    } else if (size && size < 4) {
        p[0] = q[0];
        p[size / 2] = q[size / 2];
        p[size - 1] = q[size - 1];
    } else if (size) {
        memcpy(p, data, size);
    }
    p[size] = '\0';
    return p;
}
/* `size` zeroed bytes. */
static inline void *onnxio__arena_zalloc(onnxio_arena *arena, size_t size)
{
    void *p = onnxio__arena_bump(arena, size);
    if (p) memset(p, 0, size);
    return p;
}
/* onnxio_message_new without its argument checks, inline for the codec:
 * a zeroed struct; a TensorProto's payload span is made known to the
 * arena. NULL when out of memory. */
static inline void *onnxio__message_new(onnxio_arena *arena, const onnxio_message_desc *desc)
{
    onnxio__bump *b = (onnxio__bump *)(void *)arena;
    onnxio_message *m;
    if (ONNXIO_LIKELY(b->zero) && (m = onnxio__bump_take(b, desc->size))) {
        /* a block zeroed when it was freed: already clear */
    } else {
        if (!(m = onnxio__arena_bump(arena, desc->size))) return NULL;
        /* Zeroed inline, 32 bytes a store pair: structs are 64-344 bytes,
         * where a call to memset cost 9% of a loop of small parses. Their
         * size is a multiple of 8 (they hold pointers). */
        char *z = (char *)m, *end = z + desc->size;
        for (; z + 32 <= end; z += 32) memset(z, 0, 32);
        if (z + 16 <= end) memset(z, 0, 16), z += 16;
        if (z < end) memset(z, 0, 8);
    }
    m->desc = desc;
    if (desc == &onnxio_desc_TensorProto && onnxio__arena_track_span(arena, &((onnxio_TensorProto *)m)->raw_data))
        return NULL;
    return m;
}
/* arena.c: while `limit` is not 0, the arena's blocks may not total more
 * than it; an allocation past it fails (NULL) and sets limit_hit, so that
 * the caller reports ONNXIO_ERR_EXPANSION rather than out of memory. */
void onnxio__arena_limit(onnxio_arena *arena, size_t limit);
/* A parse of `input` bytes is about to fill the arena: its next block is
 * sized for the tree such input makes (ARENA_PER_INPUT_BYTE times it,
 * within the block limits), so that a small parse takes one block. */
void onnxio__arena_expect(onnxio_arena *arena, size_t input);
bool onnxio__arena_limit_hit(const onnxio_arena *arena);

#endif
