/* The load pipeline for external payloads (docs/design.md, "The container
 * seam"), the same for external data files and archive entries:
 *
 *   1. every external tensor's keys are parsed (format.c), its entry opened
 *      and checked by the container, its range checked against the entry
 *      and its length against its type and shape: all before any payload
 *      is allocated; with verify_checksum each entry's SHA-1 is then
 *      computed on a task of its own while the payloads are placed, and
 *      checked before the load returns;
 *   2. the payloads are placed (payload.c): borrowed from a mapping, copied
 *      on the pool, or where the payload callback says; tensors that refer
 *      to the same entry, offset and length share one buffer; every byte
 *      allocated is charged to the load's expansion budget;
 *   3. the CRC-32 of every entry that has one (zip) is computed as its bytes
 *      are copied, or from its mapping, or was as they were read (an
 *      archive read whole), and checked. */
#include <string.h>

#include "io/container.h"

/* A checked external payload waiting to be placed. */
typedef struct item {
    onnxio_TensorProto *tensor;
    onnxio__entry *entry;
    uint64_t offset, length;
    onnxio__digests digests; /* with verify_digests, when the tensor has them (count may be 0) */
    bool has_digests;
    uint8_t (*expect)[32];   /* the digests decoded, while the load runs */
    bool checked;            /* a copy or read job checked them as it moved the bytes */
} item;

/* verify_digests: the placed payloads with block digests that no copy or
 * read job checked as it moved them (borrowed from a mapping, shared with
 * another tensor, an archive's own copy) are checked from the memory they
 * were placed in, their blocks spread over a pool. Every placed payload
 * then loses its record, which described the bytes where they were. */
static onnxio_status check_digests(item *items, size_t count, int num_threads)
{
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(num_threads, &pool);
    for (size_t i = 0; !s && i < count; i++) {
        item *it = &items[i];
        if (!it->expect || it->checked || onnxio__is_external(it->tensor)) continue;
        onnxio__job job = {.kind = ONNXIO__JOB_DIGEST, .src = it->tensor->raw_data.data, .size = it->length,
                           .expect = (const uint8_t(*)[32])it->expect, .digest_block = it->digests.block,
                           .tensor = onnxio__tensor_name(it->tensor), .what = it->entry->name};
        s = onnxio__pool_add(pool, &job);
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    for (size_t i = 0; !s && i < count; i++)
        if (!onnxio__is_external(items[i].tensor)) onnxio__digests_remove(items[i].tensor);
    return s;
}

/* verify_checksum: the SHA-1 of the whole entry (onnx-ml.proto: "SHA1
 * digest of file specified under 'location'"), computed once, against a
 * tensor's checksum key. */
typedef struct sha1_check {
    onnxio__entry *entry;
    const onnxio_TensorProto *tensor;
    const char *key;
    size_t key_size;
} sha1_check;

typedef struct sha1_checks {
    sha1_check *list;
    size_t count, capacity;
} sha1_checks;

typedef struct load_ctx {
    onnxio__container *c;
    const onnxio_parse_options *opts;
    onnxio__budget *budget;
    item *items;
    size_t count, capacity;
    sha1_checks sha1;
} load_ctx;

/* Checks a range of an entry of `size` bytes named `name`: offset and
 * length (the rest of it when absent) inside it, the length what the
 * tensor's type and shape need (container.h; also remote.c's and slice.c's). */
onnxio_status onnxio__check_external_range(const onnxio_TensorProto *t, const onnxio_external_ref *r, uint64_t size,
                                           const char *name, uint64_t *length)
{
    if (r->offset > size)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_RANGE, "tensor '%s': external data offset %llu exceeds file size: past the end of %s (%llu bytes)",
                            onnxio__tensor_name(t), (unsigned long long)r->offset, name, (unsigned long long)size);
    *length = r->has_length ? r->length : size - r->offset;
    if (*length > size - r->offset)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_RANGE,
                            "tensor '%s': external data offset %llu + length %llu exceeds available data: runs past the end of "
                            "%s (%llu bytes)",
                            onnxio__tensor_name(t), (unsigned long long)r->offset, (unsigned long long)*length, name,
                            (unsigned long long)size);
    return onnxio__check_raw_size(t, *length, name);
}

static onnxio_status check_sha1(const sha1_check *c)
{
    onnxio__entry *e = c->entry;
    onnxio_status s;
    if (!e->hashed) {
        s = e->data ? onnxio__sha1_hex(e->data, e->size, e->sha1) : onnxio__sha1_fd(e->fd, e->offset, e->size, e->name, e->sha1);
        if (s) return s;
        e->hashed = true;
    }
    bool same = c->key_size == 40;
    for (size_t i = 0; same && i < 40; i++) {
        char ch = c->key[i];
        same = (ch >= 'A' && ch <= 'F' ? ch - 'A' + 'a' : ch) == e->sha1[i];
    }
    if (!same)
        return onnxio__fail(ONNXIO_ERR_CHECKSUM, "tensor '%s': %s has SHA-1 %s, its checksum key says '%.*s'",
                            onnxio__tensor_name(c->tensor), e->name, e->sha1, (int)(c->key_size > 64 ? 64 : c->key_size),
                            c->key);
    return ONNXIO_OK;
}

onnxio_status onnxio__check_sha1(onnxio__entry *e, const onnxio_TensorProto *t, const onnxio_external_ref *r)
{
    sha1_check c = {e, t, r->checksum, r->checksum_size};
    return check_sha1(&c);
}

/* The checks in order, on a task of their own: the entries' bytes are
 * read (or hashed from memory) while the pool places the payloads. */
static onnxio_status run_sha1_checks(void *arg)
{
    const sha1_checks *c = arg;
    onnxio_status s = ONNXIO_OK;
    for (size_t i = 0; !s && i < c->count; i++) s = check_sha1(&c->list[i]);
    return s;
}

onnxio_status onnxio__entry_digests(onnxio__container *c, const onnxio__entry *e, const onnxio_TensorProto *t,
                                    uint64_t length, onnxio__budget *budget, onnxio__digests *out, bool *found)
{
    onnxio_status s = onnxio__digests_find(t, length, out, found);
    if (s || *found || !c->record) return s;
    const char *value;
    size_t size;
    if ((s = c->record(c, e, budget, &value, &size)) || !value) return s;
    if ((s = onnxio__digests_parse(value, size, t, length, out))) return s;
    *found = true;
    return ONNXIO_OK;
}

typedef struct external_visit {
    onnxio_status (*fn)(void *ctx, onnxio_TensorProto *t, const onnxio_external_ref *r);
    void *ctx;
} external_visit;

static onnxio_status visit_external_one(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via,
                                        void *ctx)
{
    (void)parent;
    (void)via;
    external_visit *v = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    if (!onnxio__is_external(t)) return ONNXIO_OK;
    onnxio_external_ref r;
    onnxio_status s = onnxio_external_ref_parse(t, &r);
    return s ? s : v->fn(v->ctx, t, &r);
}

onnxio_status onnxio__visit_external(onnxio_message *root,
                                     onnxio_status (*fn)(void *ctx, onnxio_TensorProto *t, const onnxio_external_ref *r),
                                     void *ctx)
{
    external_visit v = {fn, ctx};
    return onnxio__visit(root, &onnxio_desc_TensorProto, visit_external_one, &v);
}

static onnxio_status collect(void *ctx, onnxio_TensorProto *t, const onnxio_external_ref *rp)
{
    load_ctx *c = ctx;
    onnxio_external_ref r = *rp;
    onnxio_status s;
    onnxio__entry *e;
    if ((s = c->c->open(c->c, t, &r, c->budget, &e))) return s;
    uint64_t length = 0;
    if ((s = onnxio__check_external_range(t, &r, e->size, e->name, &length))) return s;
    if (r.checksum && c->opts->verify_checksum) {
        sha1_checks *k = &c->sha1;
        if (!onnxio__grow((void **)&k->list, &k->capacity, k->count, sizeof *k->list))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        k->list[k->count++] = (sha1_check){e, t, r.checksum, r.checksum_size};
    }
    if (c->opts->skip_raw_data) return ONNXIO_OK; /* stays external */
    onnxio__digests digests = {0};
    bool has_digests = false;
    if (c->opts->verify_digests == ONNXIO_ON &&
        (s = onnxio__entry_digests(c->c, e, t, length, c->budget, &digests, &has_digests)))
        return s;
    if (!onnxio__grow((void **)&c->items, &c->capacity, c->count, sizeof *c->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->items[c->count++] = (item){.tensor = t, .entry = e, .offset = r.offset, .length = length, .digests = digests,
                                  .has_digests = has_digests};
    return ONNXIO_OK;
}

onnxio_status onnxio__load_external_payloads(onnxio_message *root, onnxio__container *container,
                                             const onnxio_parse_options *opts, onnxio__budget *budget)
{
    load_ctx c = {container, opts, budget, NULL, 0, 0, {0}};
    onnxio_status s = onnxio__visit_external(root, collect, &c);
    onnxio__task sha1_task = {0};
    if (!s && c.sha1.count) onnxio__task_start(&sha1_task, opts->num_threads, run_sha1_checks, &c.sha1);
    if (s || c.count == 0) {
        s = onnxio__task_join(&sha1_task, s);
        onnxio__free(c.sha1.list);
        onnxio__free(c.items);
        return s;
    }
    bool verify = opts->verify_crc == ONNXIO_ON;
    onnxio__pool *pool = NULL;
    onnxio__payloads *payloads = NULL;
    if (!(s = onnxio__pool_new(opts->num_threads, &pool))) s = onnxio__payloads_new(opts, pool, budget, &payloads);
    for (size_t i = 0; !s && i < c.count; i++) {
        item *it = &c.items[i];
        onnxio__entry *e = it->entry;
        onnxio__payload_src src = {
            .data = e->data ? e->data + it->offset : NULL,
            .owner = e->owner,
            .fd = e->fd,
            .offset = e->offset + it->offset,
            .size = it->length,
            .external = true,
            .entry = container->archive,
            .what = e->name,
            .copy = !e->borrow,
            .share = e,
            .share_offset = it->offset,
        };
        if (it->has_digests && it->digests.count) {
            if (!(it->expect = onnxio__malloc(it->digests.count * sizeof *it->expect))) {
                s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for block digests");
                break;
            }
            onnxio__digests_decode(&it->digests, it->expect);
            src.expect = (const uint8_t(*)[32])it->expect;
            src.digest_block = it->digests.block;
            src.checked = &it->checked;
        }
        /* This load's own copy of an entry is the payload of the first
         * tensor that is all of it; any other gets a copy (as protobuf
         * gives every tensor bytes of its own). */
        if (e->owned && !e->adopted && it->offset == 0 && it->length == e->size) {
            src.owned = true;
            e->adopted = true;
        }
        /* A payload that is its whole entry gets the entry's CRC-32 as it
         * is copied; the others are checked from the mapping below. */
        if (verify && e->has_crc && !e->crc_done && !e->crc_pieces && it->offset == 0 && it->length == e->size) {
            if (!(e->crc_pieces = onnxio__calloc(onnxio__crc_pieces(e->size), sizeof *e->crc_pieces))) {
                s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
                break;
            }
            e->slots.piece = e->crc_pieces;
            src.crc = &e->slots;
        }
        s = onnxio__payload_take(payloads, it->tensor, &src);
    }
    /* Every payload of the load is counted: progress calls may begin. */
    onnxio__progress_ready(onnxio__progress_now());
    if (!s) s = onnxio__payloads_resolve(payloads);
    /* What was loaded and not checked on the way is checked from the
     * mapping, on the same pool. */
    for (size_t i = 0; !s && i < c.count; i++)
        if (!onnxio__is_external(c.items[i].tensor)) c.items[i].entry->read = true;
    for (size_t i = 0; !s && verify && i < c.count; i++) {
        onnxio__entry *e = c.items[i].entry;
        if (!e->read || !e->has_crc || e->crc_done || e->slots.filled || !e->data) continue;
        onnxio__free(e->crc_pieces);
        if (!(e->crc_pieces = onnxio__calloc(onnxio__crc_pieces(e->size), sizeof *e->crc_pieces))) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            break;
        }
        e->slots.piece = e->crc_pieces;
        e->slots.filled = true;
        onnxio__job job = {.kind = ONNXIO__JOB_CRC, .src = e->data, .size = e->size, .what = e->name, .crc = e->crc_pieces};
        s = onnxio__pool_add(pool, &job);
    }
    /* The reads must be over before the files close; a payload comes
     * back only once its entry's SHA-1 is checked. */
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    if (!s) s = check_digests(c.items, c.count, opts->num_threads);
    for (size_t i = 0; i < c.count; i++) onnxio__free(c.items[i].expect);
    s = onnxio__task_join(&sha1_task, s);
    onnxio__free(c.sha1.list);
    onnxio__payloads_free(payloads);
    for (size_t i = 0; !s && verify && i < c.count; i++) {
        onnxio__entry *e = c.items[i].entry;
        if (!e->read || !e->has_crc || (!e->slots.filled && !e->crc_done)) continue;
        uint32_t crc = e->crc_done ? e->crc_got : onnxio__crc_join(e->crc_pieces, e->size);
        if (crc != e->crc32)
            s = onnxio__fail(ONNXIO_ERR_CHECKSUM, "%s has CRC-32 %08x, its header says %08x", e->name, crc, e->crc32);
        e->has_crc = false; /* checked once, also for the items that share it */
    }
    onnxio__free(c.items);
    return s;
}
