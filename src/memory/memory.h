/* The memory layer (docs/design.md, "Layers"): arenas (arena.c) and
 * refcounted buffers (buffer.c). */
#ifndef ONNXIO_MEMORY_MEMORY_H
#define ONNXIO_MEMORY_MEMORY_H

#include "base/base.h"

#include "memory/arena.h"

/* message.c */
static inline void *onnxio__member(const void *msg, const onnxio_field_desc *f)
{
    return (char *)msg + f->offset;
}
/* Generic view of every onnxio_*_array / onnxio_*_list. */
typedef struct onnxio__array {
    void *data;
    size_t size;
    size_t capacity;
} onnxio__array;
/* buffer.c: adds `n` references at once (a copy's deferred references). */
void onnxio__buffer_ref_n(onnxio_buffer *b, size_t n);
/* buffer.c: onnxio_buffer_new whose bytes start `phase` bytes past a page
 * boundary (mod 4096), for a block of at least 2 MiB that a pread fills
 * from a file offset with the same phase: the kernel then copies each page
 * of the page cache to one page, which a warm load of 64-byte-aligned
 * archive entries took 1.7% less time for. `phase`
 * is ignored (0) when it is not a multiple of `alignment`, or the block is
 * smaller (aligned_alloc). */
onnxio_buffer *onnxio__buffer_new_phase(size_t size, size_t alignment, size_t phase);
/* buffer.c: a buffer of the `size` bytes at `data` inside `parent`, memory
 * from onnxio_buffer_new (private, writable: onnxio_buffer_is_allocated is
 * 1), holding a reference to `parent`. With its last reference the whole
 * pages inside its bytes are given back (onnxio__map_drop), then its
 * reference to `parent`: a payload that is a view of a larger block frees
 * its memory when it goes, as a block of its own would. NULL when out of
 * memory. */
onnxio_buffer *onnxio__buffer_view(onnxio_buffer *parent, uint8_t *data, size_t size);

#endif
