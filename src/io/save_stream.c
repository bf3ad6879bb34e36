/* Streaming saves (onnxio_save_streaming, docs/design.md "The save
 * pipeline"): every file's layout is fixed first from the placeholders'
 * types and shapes, then each tensor is written at its place as the
 * caller's source hands it over; the save pipeline of save.c does the rest
 * (the same transaction, the same model writing). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/save.h"

/* ---- streaming saves (onnxio_save_streaming) -------------------------------- */

/* The model's structure is copied, its placeholders given raw_data of their
 * size without bytes; every pipeline above lays its files out from sizes
 * alone, so the streaming save is the ordinary one with each placeholder
 * bound to where its bytes go, and stream_receive asking the source for
 * them once the files are open. */

static int slot_cmp(const void *a, const void *b)
{
    return strcmp(onnxio__tensor_name(((const stream_slot *)a)->t), onnxio__tensor_name(((const stream_slot *)b)->t));
}

static stream_slot *stream_find(stream *st, const char *name)
{
    size_t lo = 0, hi = st->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, onnxio__tensor_name(st->slots[mid].t));
        if (c == 0) return &st->slots[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

/* A placeholder's slot; one that is a placeholder (raw_data without bytes
 * in the streaming copy) always has one. */
static stream_slot *stream_slot_of(stream *st, const onnxio_TensorProto *t)
{
    stream_slot *slot = stream_find(st, onnxio__tensor_name(t));
    return slot && slot->t == t ? slot : NULL;
}

onnxio_status onnxio__stream_bind_fd(stream *st, onnxio_TensorProto *t, int fd, uint64_t offset, uint32_t *crc,
                                    const char *what)
{
    stream_slot *slot = stream_slot_of(st, t);
    if (!slot) return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", onnxio__tensor_name(t));
    *slot = (stream_slot){.t = slot->t, .size = slot->size, .dest = DEST_FD, .fd = fd, .offset = offset, .crc = crc,
                          .what = what};
    return ONNXIO_OK;
}

/* Placeholders bound to no file stay inline in a model written after they
 * come: their bytes are copied into the arena. */
onnxio_status onnxio__stream_bind_memory(stream *st)
{
    for (size_t i = 0; i < st->count; i++)
        if (st->slots[i].dest == DEST_NONE) st->slots[i].dest = DEST_MEMORY;
    return ONNXIO_OK;
}

onnxio_status onnxio__stream_bind_external(stream *st, const selection *sel, dir_plan *d, onnxio__txn *txn,
                                          const onnxio_serialize_options *cfg)
{
    (void)sel;
    st->plan = d;
    st->txn = txn;
    st->checksum = cfg->external_data.checksum;
    for (size_t i = 0; i < d->item_count; i++) {
        onnxio_TensorProto *t = d->items[i].tensor;
        if (t->raw_data.data) continue;
        stream_slot *slot = stream_slot_of(st, t);
        if (!slot)
            return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", onnxio__tensor_name(t));
        out_file *f = &d->files[d->items[i].file];
        slot->dest = DEST_FILE;
        slot->file = d->items[i].file;
        slot->offset = d->items[i].offset;
        slot->what = f->location;
        f->pending++;
    }
    return onnxio__stream_bind_memory(st);
}

/* Writes `size` bytes at `offset` of `fd` on a pool of the save's threads,
 * with the CRC-32 pieces when `crc`: the bytes are written before it
 * returns, so that the source may reuse them. */
static onnxio_status stream_pwrite(stream *st, int fd, uint64_t offset, const void *data, uint64_t size, uint32_t *crc,
                                   const char *what)
{
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(st->num_threads, &pool);
    if (s) return s;
    onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = fd, .offset = offset, .src = data, .size = size,
                       .what = what, .crc = crc};
    s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    return s ? s : s2;
}

/* The data file of a streamed payload: made (sized, and its payloads that
 * are not streamed written) when its first streamed payload comes. */
static onnxio_status stream_open_file(stream *st, out_file *f)
{
    if (f->fd >= 0) return ONNXIO_OK;
    onnxio_status s = onnxio__txn_create(st->txn, f->res.dir_fd, f->res.name, &f->fd);
    if (s) return s;
    if (onnxio__sys_ftruncate(f->fd, f->size) != 0)
        return onnxio__fail(ONNXIO_ERR_IO, "cannot size %s to %llu bytes: %s", f->location,
                            (unsigned long long)f->size, strerror(errno));
    for (size_t i = f->first; !s && i < f->first + f->count; i++) {
        const onnxio_TensorProto *t = st->plan->items[i].tensor;
        if (t->raw_data.data)
            s = stream_pwrite(st, f->fd, st->plan->items[i].offset, t->raw_data.data, t->raw_data.size, NULL,
                              f->location);
    }
    return s;
}

/* After its last streamed payload: the file's SHA-1 (read back: the
 * payloads came in any order), then synced and closed. */
static onnxio_status stream_close_file(stream *st, out_file *f)
{
    onnxio_status s = ONNXIO_OK;
    if (st->checksum) s = onnxio__sha1_fd(f->fd, 0, f->size, f->location, f->digest);
    if (!s) s = onnxio__txn_sync(st->txn, f->fd);
    f->fd = -1;
    return s;
}

static onnxio_status stream_put(stream *st, stream_slot *slot, const void *data)
{
    switch (slot->dest) {
    case DEST_MEMORY: {
        if (!slot->size) {
            onnxio_span_set(&slot->t->raw_data, NULL, 0, NULL);
            return ONNXIO_OK;
        }
        onnxio_buffer *b = onnxio_buffer_new((size_t)slot->size, (size_t)onnxio__alignment(0));
        if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        memcpy(onnxio_buffer_data(b), data, (size_t)slot->size);
        onnxio_span_set(&slot->t->raw_data, onnxio_buffer_data(b), (size_t)slot->size, b);
        onnxio_buffer_unref(b);
        onnxio__progress_add(onnxio__progress_now(), slot->size);
        return ONNXIO_OK;
    }
    case DEST_FD: return stream_pwrite(st, slot->fd, slot->offset, data, slot->size, slot->crc, slot->what);
    case DEST_FILE: {
        out_file *f = &st->plan->files[slot->file];
        onnxio_status s = stream_open_file(st, f);
        if (!s) s = stream_pwrite(st, f->fd, slot->offset, data, slot->size, NULL, f->location);
        if (!s && --f->pending == 0) s = stream_close_file(st, f);
        return s;
    }
    default: return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor '%s' has no place", onnxio__tensor_name(slot->t));
    }
}

/* "[2, 3]" into buf. */
static const char *dims_text(const onnxio_TensorProto *t, char *buf, size_t size)
{
    size_t at = 0;
    at += (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < t->dims.size && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? ", " : "", (long long)t->dims.data[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

onnxio_status onnxio__stream_receive(stream *st)
{
    for (;;) {
        onnxio_stream_tensor in = {0};
        int r = st->source(st->user, &in);
        if (r == 0) break;
        if (r < 0) return onnxio__fail(ONNXIO_ERR_STREAM, "the tensor source failed (it returned %d)", r);
        if (!in.name) return onnxio__fail(ONNXIO_ERR_STREAM, "the tensor source gave a tensor without a name");
        stream_slot *slot = stream_find(st, in.name);
        if (!slot)
            return onnxio__fail(ONNXIO_ERR_STREAM,
                                "tensor '%s' is not a placeholder of the model (an initializer without data)", in.name);
        if (slot->received) return onnxio__fail(ONNXIO_ERR_STREAM, "tensor '%s' was given twice", in.name);
        if (in.size != slot->size) {
            char dims[256];
            return onnxio__fail(ONNXIO_ERR_STREAM,
                                "tensor '%s': %llu bytes given, but its data_type %d and dims %s make %llu bytes",
                                in.name, (unsigned long long)in.size, (int)slot->t->data_type,
                                dims_text(slot->t, dims, sizeof dims), (unsigned long long)slot->size);
        }
        if (in.size && !in.data)
            return onnxio__fail(ONNXIO_ERR_STREAM, "tensor '%s': the source gave no bytes (data is NULL)", in.name);
        slot->received = true;
        onnxio_status s = stream_put(st, slot, in.data);
        if (!s) s = onnxio__progress_report(onnxio__progress_now(), false);
        if (s) return onnxio__context(s, "streaming tensor '%s'", in.name);
    }
    size_t missing = 0;
    const char *first = NULL;
    for (size_t i = 0; i < st->count; i++)
        if (!st->slots[i].received && missing++ == 0) first = onnxio__tensor_name(st->slots[i].t);
    if (missing)
        return onnxio__fail(ONNXIO_ERR_STREAM, "%zu placeholder tensor%s never given by the source: '%s'%s", missing,
                            missing == 1 ? " was" : "s were", first, missing > 1 ? " and others" : "");
    return ONNXIO_OK;
}

static onnxio_status stream_defer(void *user, const onnxio_TensorProto *t, uint64_t at)
{
    stream *st = user;
    stream_slot *slot = stream_slot_of(st, t);
    if (!slot) return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", onnxio__tensor_name(t));
    slot->dest = DEST_FD;
    slot->offset = at;
    return ONNXIO_OK;
}

/* One .onnx file, every payload inline: the structure is written first with
 * a hole for each placeholder's bytes (their lengths are known), the file
 * sized, and the holes filled as the bytes come. */
onnxio_status onnxio__save_plain_streaming(onnxio_ModelProto *model, const char *path,
                                          const onnxio_serialize_options *cfg, stream *st)
{
    onnxio__txn *txn;
    onnxio_status s = onnxio__txn_begin(path, &txn);
    if (s) return s;
    if (cfg->fsync == ONNXIO_OFF) onnxio__txn_no_fsync(txn);
    uint64_t size = 0;
    int fd = -1;
    onnxio__pool *pool = NULL;
    uint8_t *staging = NULL;
    if (onnxio__txn_is_stream(txn))
        s = onnxio__fail(ONNXIO_ERR_IO, "%s is not a regular file: a streaming save writes at offsets", path);
    if (!s) s = onnxio__size_pass(model, cfg->max_depth, &size);
    if (!s) s = onnxio__txn_create(txn, -1, NULL, &fd);
    if (!s) s = onnxio__pool_new(cfg->num_threads, &pool);
    if (!s && !(staging = onnxio__malloc(1u << 20))) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    if (!s) {
        onnxio__sink sink = {.buf = staging, .cap = 1u << 20, .fd = fd, .pool = pool, .threshold = cfg->raw_data_threshold,
                             .what = path, .defer = stream_defer, .defer_user = st};
        s = onnxio__encode(model, &sink);
        if (!s) s = onnxio__sink_flush(&sink);
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    onnxio__free(staging);
    /* The last hole may end the file. */
    if (!s && onnxio__sys_ftruncate(fd, size) != 0)
        s = onnxio__fail(ONNXIO_ERR_IO, "cannot size %s to %llu bytes: %s", path, (unsigned long long)size, strerror(errno));
    for (size_t i = 0; !s && i < st->count; i++)
        if (st->slots[i].dest == DEST_FD) {
            st->slots[i].fd = fd;
            st->slots[i].what = path;
        }
    if (!s) s = onnxio__stream_bind_memory(st); /* empty placeholders: no hole */
    if (!s) s = onnxio__stream_receive(st);
    if (!s) s = onnxio__progress_report(onnxio__progress_now(), true);
    if (s) {
        onnxio__txn_abort(txn);
        return s;
    }
    return onnxio__txn_commit(txn);
}

/* The placeholders of the copy: initializers of every graph without a
 * payload. Sized from data_type and dims (onnxio_tensor_raw_size). */
typedef struct placeholders {
    stream *st;
    size_t capacity;
    uint64_t total; /* payload bytes of the save, for progress */
} placeholders;

static onnxio_status find_placeholder(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    placeholders *p = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    if (onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data)) {
        if (t->raw_data.size && !t->raw_data.data)
            return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded",
                                onnxio__tensor_name(t));
        p->total += t->raw_data.size;
        return ONNXIO_OK;
    }
    if (!parent || parent->desc != &onnxio_desc_GraphProto || via->index != ONNXIO_FIELD_GraphProto_initializer)
        return ONNXIO_OK;
    if (onnxio__is_external(t) || onnxio__has_typed_data(t)) return ONNXIO_OK;
    uint64_t size;
    if (onnxio_tensor_raw_size(t, &size) != 1) {
        char dims[256];
        return onnxio__fail(ONNXIO_ERR_STREAM,
                            "tensor '%s' has no data, and its data_type %d and dims %s give no byte count: it cannot "
                            "be streamed",
                            onnxio__tensor_name(t), (int)t->data_type, dims_text(t, dims, sizeof dims));
    }
    if (size > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "tensor '%s' is too large", onnxio__tensor_name(t));
    stream *st = p->st;
    if (!onnxio__grow((void **)&st->slots, &p->capacity, st->count, sizeof *st->slots))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    st->slots[st->count++] = (stream_slot){.t = t, .size = size, .fd = -1};
    onnxio_span_set(&t->raw_data, NULL, (size_t)size, NULL);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    p->total += size;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_save_streaming(onnxio_ModelProto *model, const char *path,
                                               onnxio_tensor_source_fn source, void *source_user,
                                               const onnxio_serialize_options *opts)
{
    if (!model || !path || !source) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "save_streaming: NULL argument");
    onnxio__clear_error();
    bool archive = onnxio_path_is_archive(path);
    onnxio_serialize_options cfg;
    onnxio_status s = archive ? onnxio__archive_save_config(opts, &cfg) : onnxio__serialize_config(opts, &cfg);
    if (s) return s;
    onnxio__progress progress, *saved;
    onnxio__progress_enter(&progress, cfg.progress, cfg.progress_user, &saved);
    stream st = {.source = source, .user = source_user, .num_threads = cfg.num_threads};
    onnxio_ModelProto *copy = NULL;
    placeholders p = {.st = &st};
    if (!(st.arena = onnxio_arena_new())) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    if (!s) s = onnxio__clone(st.arena, model, (void **)&copy);
    if (!s) s = onnxio__visit(&copy->base, &onnxio_desc_TensorProto, find_placeholder, &p);
    if (!s && st.count) {
        qsort(st.slots, st.count, sizeof *st.slots, slot_cmp);
        for (size_t i = 1; !s && i < st.count; i++)
            if (slot_cmp(&st.slots[i - 1], &st.slots[i]) == 0)
                s = onnxio__fail(ONNXIO_ERR_STREAM, "two placeholder initializers are named '%s'",
                                 onnxio__tensor_name(st.slots[i].t));
    }
    if (!s) {
        onnxio__progress_total(onnxio__progress_now(), p.total);
        onnxio__progress_ready(onnxio__progress_now());
        const onnxio_external_data_options *x = &cfg.external_data;
        if (archive) s = onnxio__save_archive_to(copy, path, &cfg, &st);
        else if (x->location || x->all_tensors_to_one_file == ONNXIO_OFF) s = onnxio__save_external_to(copy, path, &cfg, &st);
        else {
            s = onnxio__save_plain_streaming(copy, path, &cfg, &st);
            if (s) s = onnxio__context(s, "saving %s", path);
        }
    }
    onnxio__progress_leave(&saved);
    onnxio__free(st.slots);
    onnxio_arena_unref(st.arena);
    return s;
}
