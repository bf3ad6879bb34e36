/* Remote sources (onnxio.h, "remote sources"): the ranges of
 * external data a load needs, checked with the load pipeline's rules
 * (load.c's onnxio__check_external_range, format.c's key parsing), for a
 * front end that fetches them itself, and the setting of a payload it
 * fetched, marked loaded as payload.c marks one. */
#include <string.h>

#include "io/container.h"

typedef struct ranges_ctx {
    onnxio_location_size_fn size_fn;
    void *user;
    onnxio_external_range *items;
    size_t count, capacity;
    char name[256]; /* the location, NUL-terminated and cut, for messages */
} ranges_ctx;

static onnxio_status collect(void *ctx, onnxio_TensorProto *t, const onnxio_external_ref *rp)
{
    ranges_ctx *c = ctx;
    onnxio_external_ref r = *rp;
    onnxio_status s;
    uint64_t size = 0;
    if ((s = c->size_fn(c->user, r.location, r.location_size, &size))) return s;
    size_t n = r.location_size < sizeof c->name - 1 ? r.location_size : sizeof c->name - 1;
    memcpy(c->name, r.location, n);
    c->name[n] = 0;
    uint64_t length = 0;
    if ((s = onnxio__check_external_range(t, &r, size, c->name, &length))) return s;
    if (!onnxio__grow((void **)&c->items, &c->capacity, c->count, sizeof *c->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->items[c->count++] = (onnxio_external_range){t, r.location, r.location_size, r.offset, length};
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_external_ranges(onnxio_message *root, onnxio_location_size_fn size_fn, void *ctx,
                                     onnxio_external_range **out, size_t *count)
{
    if (!root || !size_fn || !out || !count)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_external_ranges: NULL argument");
    *out = NULL;
    *count = 0;
    ranges_ctx c = {.size_fn = size_fn, .user = ctx};
    onnxio_status s = onnxio__visit_external(root, collect, &c);
    if (s) {
        onnxio__free(c.items);
        return s;
    }
    *out = c.items;
    *count = c.count;
    return ONNXIO_OK;
}

ONNXIO_API void onnxio_external_ranges_free(onnxio_external_range *ranges) { onnxio__free(ranges); }

/* Every block of a fetched payload checked against digests `d` on a pool. */
static onnxio_status check_blocks(const onnxio_TensorProto *t, const onnxio__digests *dp, const void *data, size_t size)
{
    onnxio__digests d = *dp;
    onnxio_status s;
    if (!d.count) return ONNXIO_OK;
    uint8_t(*expect)[32] = onnxio__malloc(d.count * sizeof *expect);
    if (!expect) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for block digests");
    onnxio__digests_decode(&d, expect);
    onnxio__pool *pool = NULL;
    onnxio__job job = {.kind = ONNXIO__JOB_DIGEST, .src = data, .size = size, .expect = (const uint8_t(*)[32])expect,
                       .digest_block = d.block, .tensor = onnxio__tensor_name(t), .what = "the fetched bytes"};
    if (!(s = onnxio__pool_new(0, &pool))) s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    onnxio__free(expect);
    return s ? s : s2;
}

/* A fetched payload's block digests, when its tensor carries them. */
static onnxio_status check_fetched(const onnxio_TensorProto *t, const void *data, size_t size)
{
    onnxio__digests d;
    bool found;
    onnxio_status s = onnxio__digests_find(t, size, &d, &found);
    return s || !found ? s : check_blocks(t, &d, data, size);
}

ONNXIO_API onnxio_status onnxio_archive_check_payload(onnxio_archive *archive, const onnxio_TensorProto *t,
                                                      const onnxio_archive_entry *entry, const void *data, size_t size)
{
    if (!archive || !t || !entry || (!data && size))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_check_payload: NULL argument");
    onnxio__budget budget = {UINT64_MAX, 0, 0, 0};
    const char *value;
    size_t n;
    onnxio__digests d;
    onnxio_status s = onnxio__archive_record(archive, entry, &budget, &value, &n);
    if (s || !value) return s;
    return (s = onnxio__digests_parse(value, n, t, size, &d)) ? s : check_blocks(t, &d, data, size);
}

static onnxio_status set_fetched(onnxio_TensorProto *t, void *data, size_t size, onnxio_buffer *owner, bool entry)
{
    if (!t || (!data && size))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_tensor_set_fetched_payload: NULL argument");
    uint64_t want = 0;
    if (onnxio_tensor_raw_size(t, &want) == 1 && want != size)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor '%s': a fetched payload of %zu bytes, its type and shape need %llu",
                            onnxio__tensor_name(t), size, (unsigned long long)want);
    onnxio_status s = check_fetched(t, data, size);
    if (s) return s;
    onnxio_span_set(&t->raw_data, data, size, owner);
    onnxio__digests_remove(t);
    if (entry) onnxio__mark_loaded_entry(t);
    else onnxio__mark_loaded_external(t);
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_tensor_set_fetched_payload(onnxio_TensorProto *t, void *data, size_t size, onnxio_buffer *owner)
{
    return set_fetched(t, data, size, owner, false);
}

ONNXIO_API onnxio_status onnxio_tensor_set_fetched_entry(onnxio_TensorProto *t, void *data, size_t size, onnxio_buffer *owner)
{
    return set_fetched(t, data, size, owner, true);
}
