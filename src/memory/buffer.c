/* Refcounted byte buffers that own tensor payloads (docs/design.md "Memory
 * model"): a malloc'd block, a memory-mapped file, a view of a part of a
 * block, or foreign memory with a release callback. Spans point into them
 * and hold one reference each. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memory/memory.h"

struct onnxio_buffer {
    atomic_size_t refs;
    uint8_t *data;
    size_t size;
    onnxio_release_fn release;
    void *ctx;
};

static void release_free(void *ctx, void *data, size_t size)
{
    (void)data;
    (void)size;
    onnxio__free(ctx);
}

/* A mapped block: `ctx` is the phase, the bytes of the mapping before
 * `data` (onnxio__buffer_new_phase). */
static void release_unmap(void *ctx, void *data, size_t size)
{
    size_t phase = (size_t)(uintptr_t)ctx;
    onnxio__sys_munmap((uint8_t *)data - phase, size + phase);
}

/* A view (onnxio__buffer_view): its pages go back, then its parent. */
static void release_view(void *ctx, void *data, size_t size)
{
    onnxio__map_drop(data, size);
    onnxio_buffer_unref(ctx);
}

/* Payload blocks this large are mapped on their own and asked for huge
 * pages: filling 500 MB then costs a few hundred page faults instead of a
 * hundred thousand, and freeing returns the memory at once. */
#define LARGE_BLOCK (2u << 20)

static onnxio_buffer *init(onnxio_buffer *b, void *data, size_t size, onnxio_release_fn release, void *ctx)
{
    atomic_init(&b->refs, 1);
    b->data = data;
    b->size = size;
    b->release = release;
    b->ctx = ctx;
    return b;
}

onnxio_buffer *onnxio__buffer_new_phase(size_t size, size_t alignment, size_t phase)
{
    if (alignment == 0) alignment = 64;
    if (alignment & (alignment - 1)) return NULL;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (phase >= 4096 || phase % alignment) phase = 0;
    onnxio_buffer *b = onnxio__malloc(sizeof *b);
    if (!b) return NULL;
    void *data = NULL;
    if (size >= LARGE_BLOCK && alignment <= 4096 && size <= SIZE_MAX - LARGE_BLOCK - phase) {
        /* Mapped with LARGE_BLOCK to spare and trimmed to start on a huge
         * page boundary: only the whole huge pages inside a mapping get
         * huge pages, and a mapping at any page boundary lost up to one
         * (the first) to 4 KiB pages. The tail stays in 4 KiB pages, so
         * that the block costs no more memory than its size. The bytes
         * start `phase` bytes into the first page. */
        size_t span = size + phase;
        uint8_t *raw = onnxio__sys_mmap(span + LARGE_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
        if (raw == MAP_FAILED) {
            onnxio__free(b);
            return NULL;
        }
        size_t page = onnxio__page_size();
        uint8_t *start = (uint8_t *)(((uintptr_t)raw + LARGE_BLOCK - 1) & ~(uintptr_t)(LARGE_BLOCK - 1));
        uint8_t *end = start + ((span + page - 1) & ~(page - 1));
        if (start > raw) onnxio__sys_munmap(raw, (size_t)(start - raw));
        if (raw + span + LARGE_BLOCK > end) onnxio__sys_munmap(end, (size_t)(raw + span + LARGE_BLOCK - end));
        onnxio__map_hugepage(start, span);
        data = start + phase;
        return init(b, data, size, release_unmap, (void *)(uintptr_t)phase);
    }
    if (!(data = onnxio__aligned_alloc(alignment, size))) {
        onnxio__free(b);
        return NULL;
    }
    return init(b, data, size, release_free, data);
}

ONNXIO_API onnxio_buffer *onnxio_buffer_new(size_t size, size_t alignment)
{
    return onnxio__buffer_new_phase(size, alignment, 0);
}

ONNXIO_API onnxio_buffer *onnxio_buffer_wrap(void *data, size_t size, onnxio_release_fn release, void *ctx)
{
    onnxio_buffer *b = onnxio__malloc(sizeof *b);
    return b ? init(b, data, size, release, ctx) : NULL;
}

onnxio_buffer *onnxio__buffer_view(onnxio_buffer *parent, uint8_t *data, size_t size)
{
    onnxio_buffer *b = onnxio__malloc(sizeof *b);
    return b ? init(b, data, size, release_view, onnxio_buffer_ref(parent)) : NULL;
}

ONNXIO_API onnxio_buffer *onnxio_buffer_ref(onnxio_buffer *b)
{
    if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}

void onnxio__buffer_ref_n(onnxio_buffer *b, size_t n)
{
    if (b && n) atomic_fetch_add_explicit(&b->refs, n, memory_order_relaxed);
}

ONNXIO_API void onnxio_buffer_unref(onnxio_buffer *b)
{
    if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
    if (b->release) b->release(b->ctx, b->data, b->size);
    onnxio__free(b);
}

ONNXIO_API uint8_t *onnxio_buffer_data(const onnxio_buffer *b) { return b ? b->data : NULL; }
ONNXIO_API size_t onnxio_buffer_size(const onnxio_buffer *b) { return b ? b->size : 0; }
ONNXIO_API int onnxio_buffer_is_allocated(const onnxio_buffer *b)
{
    return b && (b->release == release_free || b->release == release_unmap || b->release == release_view);
}
ONNXIO_API size_t onnxio_buffer_refcount(const onnxio_buffer *b) { return b ? atomic_load(&b->refs) : 0; }

ONNXIO_API void onnxio_span_set(onnxio_span *span, uint8_t *data, size_t size, onnxio_buffer *owner)
{
    onnxio_buffer *old = span->owner;
    span->owner = onnxio_buffer_ref(owner);
    span->data = data;
    span->size = size;
    onnxio_buffer_unref(old);
}

ONNXIO_API onnxio_status onnxio_span_copy_from(onnxio_span *span, const void *data, size_t size)
{
    onnxio_buffer *b = onnxio_buffer_new(size, (size_t)onnxio__alignment(0));
    if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for a %zu-byte payload", size);
    if (size) memcpy(b->data, data, size);
    onnxio_span_set(span, b->data, size, b);
    onnxio_buffer_unref(b);
    return ONNXIO_OK;
}

ONNXIO_API void onnxio_span_clear(onnxio_span *span)
{
    onnxio_buffer *old = span->owner;
    span->owner = NULL;
    span->data = NULL;
    span->size = 0;
    onnxio_buffer_unref(old);
}
