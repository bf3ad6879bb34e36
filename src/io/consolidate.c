/* Consolidation (docs/design.md "Memory model", shared mode): the large
 * payloads of a tree move into one aligned buffer that every such tensor
 * shares, e.g. to hand a model's weights to a device in one transfer or to
 * drop the many mappings and blocks a load left behind. */
#include <stdlib.h>

#include "io/io.h"

typedef struct collect {
    onnxio_TensorProto **items;
    size_t count, capacity;
    uint64_t threshold;
} collect;

static onnxio_status gather(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    collect *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    /* Skipped payloads (data NULL) have nothing to move. */
    if (!onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data) || !t->raw_data.data || t->raw_data.size < c->threshold)
        return ONNXIO_OK;
    if (!onnxio__grow((void **)&c->items, &c->capacity, c->count, sizeof *c->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->items[c->count++] = t;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_consolidate_tensors_to_buffer(void *msg, const onnxio_consolidate_options *opts,
                                                              onnxio_buffer **out)
{
    if (out) *out = NULL;
    if (!msg) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "consolidate: NULL message");
    onnxio__clear_error();
    onnxio_consolidate_options cfg;
    onnxio_status s = onnxio__consolidate_config(opts, &cfg);
    if (s) return s;
    uint64_t alignment = cfg.alignment;
    collect c = {NULL, 0, 0, cfg.raw_data_threshold};
    s = onnxio__visit(msg, &onnxio_desc_TensorProto, gather, &c);
    if (s || c.count == 0) {
        onnxio__free(c.items);
        return s;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < c.count; i++) {
        total = (total + alignment - 1) & ~(alignment - 1);
        if (total + c.items[i]->raw_data.size < total || total + c.items[i]->raw_data.size > SIZE_MAX) {
            onnxio__free(c.items);
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "consolidate: the payloads do not fit in memory");
        }
        total += c.items[i]->raw_data.size;
    }
    onnxio_buffer *b = onnxio_buffer_new((size_t)total, (size_t)alignment);
    if (!b) {
        onnxio__free(c.items);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "consolidate: out of memory for %llu bytes", (unsigned long long)total);
    }
    onnxio__pool *pool;
    if ((s = onnxio__pool_new(0, &pool))) {
        onnxio_buffer_unref(b);
        onnxio__free(c.items);
        return s;
    }
    uint8_t *base = onnxio_buffer_data(b);
    uint64_t at = 0;
    for (size_t i = 0; i < c.count && !s; i++) {
        at = (at + alignment - 1) & ~(alignment - 1);
        onnxio__job job = {.kind = ONNXIO__JOB_COPY, .dst = base + at, .src = c.items[i]->raw_data.data,
                           .size = c.items[i]->raw_data.size, .what = "memory"};
        s = onnxio__pool_add(pool, &job);
        at += c.items[i]->raw_data.size;
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    if (s) {
        /* Nothing was repointed yet: the tree is as it was. */
        onnxio_buffer_unref(b);
        onnxio__free(c.items);
        return s;
    }
    at = 0;
    for (size_t i = 0; i < c.count; i++) {
        at = (at + alignment - 1) & ~(alignment - 1);
        onnxio_span *span = &c.items[i]->raw_data;
        size_t size = span->size;
        onnxio_span_set(span, base + at, size, b);
        at += size;
    }
    onnxio__free(c.items);
    if (out) *out = b;
    else onnxio_buffer_unref(b);
    return ONNXIO_OK;
}
