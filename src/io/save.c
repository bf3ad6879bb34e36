/* The save pipeline (docs/design.md, "The save pipeline"), one for every
 * container, which a writer (save.h) implements:
 *
 *   1. select: the tensors whose payloads leave the model (external data:
 *      initializers, or every tensor with convert_attribute; an archive:
 *      every tensor), at least size_threshold bytes, in a copy of the model
 *      whose payloads are shared, not copied (the caller's model is never
 *      changed); a streaming save's placeholders are bound to where their
 *      bytes go;
 *   2. plan (the writer): which file or entry each payload goes to, at
 *      which offset (aligned), and the names of per-tensor files and
 *      entries;
 *   3. the transaction begins (txn.c): every file is a temporary file
 *      until the commit;
 *   4. write (the writer): payloads at their offsets on the pool, with the
 *      digest the container wants (SHA-1 of data files, CRC-32 of
 *      entries); then a streaming save's tensors, pulled from its source
 *      and each written at its place;
 *   5. model (the writer): the model (a file of its own, or the archive's
 *      last entry and directory), and the commit: crash-consistent.
 *
 * The model file alone (the model writer) skips 2 and 4; a model whose
 * tensors are all below the threshold is saved by it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/save.h"

/* ---- the save budget ---------------------------------------------------------- */

onnxio_status onnxio__save_budget_add(onnxio__save_budget *b, const void *data, uint64_t size)
{
    if (!size || !data) return ONNXIO_OK;
    if (!onnxio__grow((void **)&b->ranges, &b->capacity, b->count, sizeof *b->ranges))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    uintptr_t start = (uintptr_t)data;
    b->ranges[b->count++] = (struct onnxio__save_range){start, start + (uintptr_t)size};
    b->written += size;
    return ONNXIO_OK;
}

static int by_start(const void *a, const void *b)
{
    uintptr_t x = ((const struct onnxio__save_range *)a)->start, y = ((const struct onnxio__save_range *)b)->start;
    return x < y ? -1 : x > y;
}

/* The bytes the ranges cover, each once. */
static uint64_t distinct_bytes(onnxio__save_budget *b)
{
    if (!b->count) return 0;
    qsort(b->ranges, b->count, sizeof *b->ranges, by_start);
    uint64_t distinct = 0;
    uintptr_t start = b->ranges[0].start, end = b->ranges[0].end;
    for (size_t i = 1; i < b->count; i++) {
        if (b->ranges[i].start > end) {
            distinct += end - start;
            start = b->ranges[i].start;
        }
        if (b->ranges[i].end > end) end = b->ranges[i].end;
    }
    return distinct + (end - start);
}

void onnxio__save_budget_free(onnxio__save_budget *b)
{
    onnxio__free(b->ranges);
    b->ranges = NULL;
    b->count = b->capacity = 0;
}

onnxio_status onnxio__save_budget_check(onnxio__save_budget *b, const char *path, uint64_t ratio)
{
    onnxio__budget budget = {ratio, ratio == UINT64_MAX ? 0 : distinct_bytes(b), 0, 0};
    onnxio__save_budget_free(b);
    if (ratio == UINT64_MAX || b->written <= onnxio__budget_left(&budget)) return ONNXIO_OK;
    return onnxio__fail(ONNXIO_ERR_EXPANSION,
                        "%s: the save would write %llu payload bytes from %llu distinct bytes in memory (tensors "
                        "share their bytes), more than max_expansion (%llu) times that plus %u MiB; raise "
                        "max_expansion to write it",
                        path, (unsigned long long)b->written, (unsigned long long)budget.input,
                        (unsigned long long)ratio, (unsigned)(ONNXIO_EXPANSION_ALLOWANCE >> 20));
}

/* ---- 1. select ------------------------------------------------------------------ */

typedef struct selecting {
    onnxio__selection *sel;
    const onnxio__writer *w;
    uint64_t threshold;
    bool every_tensor; /* else the initializers of every graph */
    bool streaming;    /* raw_data without bytes is a placeholder */
} selecting;

static onnxio_status select_tensor(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    selecting *c = ctx;
    onnxio__selection *sel = c->sel;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    bool has_raw = onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    if (!has_raw && onnxio__is_external(t)) {
        if (c->w->external_refused)
            return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD,
                                "tensor '%s' is still external (its data was not loaded): load its external data first",
                                onnxio__tensor_name(t));
        if (!onnxio__grow((void **)&sel->stale, &sel->stale_capacity, sel->stale_count, sizeof *sel->stale))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        sel->stale[sel->stale_count++] = t;
        return ONNXIO_OK;
    }
    /* As the onnx package does by default: initializers of every graph. */
    if (!c->every_tensor &&
        (!parent || parent->desc != &onnxio_desc_GraphProto || via->index != ONNXIO_FIELD_GraphProto_initializer))
        return ONNXIO_OK;
    if (!has_raw || t->raw_data.size < c->threshold) return ONNXIO_OK;
    if (!t->raw_data.data && !c->streaming)
        return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", onnxio__tensor_name(t));
    if (!onnxio__grow((void **)&sel->tensors, &sel->capacity, sel->count, sizeof *sel->tensors))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    sel->tensors[sel->count++] = t;
    return ONNXIO_OK;
}

/* ---- a streaming save's source --------------------------------------------------- */

static onnxio__slot *slot_find(onnxio__source *src, const char *name)
{
    size_t lo = 0, hi = src->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, onnxio__tensor_name(src->slots[mid].t));
        if (c == 0) return &src->slots[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

/* A placeholder's slot; one that is a placeholder (raw_data without bytes
 * in the streaming copy) always has one. */
static onnxio__slot *slot_of(onnxio__source *src, const onnxio_TensorProto *t)
{
    onnxio__slot *slot = slot_find(src, onnxio__tensor_name(t));
    return slot && slot->t == t ? slot : NULL;
}

/* Each selected placeholder goes to its writer's `put`; the others stay
 * inline. */
static onnxio_status bind_slots(onnxio__source *src, const onnxio__selection *sel)
{
    for (size_t i = 0; i < src->count; i++) src->slots[i].item = SIZE_MAX;
    for (size_t i = 0; i < sel->count; i++) {
        onnxio_TensorProto *t = sel->tensors[i];
        if (t->raw_data.data) continue;
        onnxio__slot *slot = slot_of(src, t);
        if (!slot)
            return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", onnxio__tensor_name(t));
        slot->item = i;
    }
    return ONNXIO_OK;
}

/* onnxio__sink.defer of the model file: an inline placeholder's bytes are
 * a hole at `at`. */
static onnxio_status defer_hole(void *user, const onnxio_TensorProto *t, uint64_t at)
{
    onnxio__slot *slot = slot_of(user, t);
    if (!slot) return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", onnxio__tensor_name(t));
    slot->hole = true;
    slot->offset = at;
    return ONNXIO_OK;
}

static onnxio_status put(onnxio__saving *sv, onnxio__slot *slot, const void *data)
{
    if (slot->item != SIZE_MAX) return sv->writer->put(sv, slot->item, data);
    if (slot->hole)
        return onnxio__write_at(sv->model_fd, slot->offset, data, slot->size, NULL, sv->cfg->num_threads,
                                "the model file");
    if (!slot->size) {
        onnxio_span_set(&slot->t->raw_data, NULL, 0, NULL);
        return ONNXIO_OK;
    }
    /* Inline in a model written after every tensor came. */
    onnxio_buffer *b = onnxio_buffer_new((size_t)slot->size, (size_t)onnxio__alignment(0));
    if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy(onnxio_buffer_data(b), data, (size_t)slot->size);
    onnxio_span_set(&slot->t->raw_data, onnxio_buffer_data(b), (size_t)slot->size, b);
    onnxio_buffer_unref(b);
    onnxio__progress_add(onnxio__progress_now(), slot->size);
    return ONNXIO_OK;
}

/* Pulls every tensor from the source and writes it at its place. */
static onnxio_status receive(onnxio__saving *sv)
{
    onnxio__source *src = sv->source;
    for (;;) {
        onnxio_stream_tensor in = {0};
        int r = src->fn(src->user, &in);
        if (r == 0) break;
        if (r < 0) return onnxio__fail(ONNXIO_ERR_STREAM, "the tensor source failed (it returned %d)", r);
        if (!in.name) return onnxio__fail(ONNXIO_ERR_STREAM, "the tensor source gave a tensor without a name");
        onnxio__slot *slot = slot_find(src, in.name);
        if (!slot)
            return onnxio__fail(ONNXIO_ERR_STREAM,
                                "tensor '%s' is not a placeholder of the model (an initializer without data)", in.name);
        if (slot->received) return onnxio__fail(ONNXIO_ERR_STREAM, "tensor '%s' was given twice", in.name);
        if (in.size != slot->size) {
            char dims[256];
            return onnxio__fail(ONNXIO_ERR_STREAM,
                                "tensor '%s': %llu bytes given, but its data_type %d and dims %s make %llu bytes",
                                in.name, (unsigned long long)in.size, (int)slot->t->data_type,
                                onnxio__dims_text(slot->t, dims, sizeof dims), (unsigned long long)slot->size);
        }
        if (in.size && !in.data)
            return onnxio__fail(ONNXIO_ERR_STREAM, "tensor '%s': the source gave no bytes (data is NULL)", in.name);
        slot->received = true;
        onnxio_status s = put(sv, slot, in.data);
        if (!s) s = onnxio__progress_report(onnxio__progress_now(), false);
        if (s) return onnxio__context(s, "streaming tensor '%s'", in.name);
    }
    size_t missing = 0;
    const char *first = NULL;
    for (size_t i = 0; i < src->count; i++)
        if (!src->slots[i].received && missing++ == 0) first = onnxio__tensor_name(src->slots[i].t);
    if (missing)
        return onnxio__fail(ONNXIO_ERR_STREAM, "%zu placeholder tensor%s never given by the source: '%s'%s", missing,
                            missing == 1 ? " was" : "s were", first, missing > 1 ? " and others" : "");
    return ONNXIO_OK;
}

/* ---- the model file alone ----------------------------------------------------------- */

/* Every payload inline; a streaming save's placeholders are holes, filled
 * as they come. */
static onnxio_status model_model(onnxio__saving *sv)
{
    return onnxio__write_main(sv->txn, sv->copy, sv->cfg, sv->source ? defer_hole : NULL, sv->source, &sv->model_fd);
}

const onnxio__writer onnxio__model_writer = {
    .model_first = true,
    .model = model_model,
};

/* ---- the pipeline -------------------------------------------------------------------- */

onnxio_status onnxio__save(void *msg, const char *path, const onnxio_serialize_options *cfg,
                           const onnxio__writer *writer, onnxio__source *source, onnxio_arena *arena)
{
    onnxio__saving sv = {.cfg = cfg, .source = source, .writer = writer, .model_fd = -1};
    onnxio_status s = ONNXIO_OK;
    if (writer != &onnxio__model_writer) {
        /* The caller's model stays as it is: the tensors are rewritten in
         * a copy whose payloads are shared, not copied. */
        sv.scratch = arena ? onnxio_arena_ref(arena) : onnxio_arena_new();
        if (!sv.scratch) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        else if (source) sv.copy = msg;
        else s = onnxio__clone(sv.scratch, msg, &sv.copy);
        selecting c = {&sv.sel, writer, cfg->external_data.size_threshold,
                       writer->every_tensor || cfg->external_data.convert_attribute, source != NULL};
        if (!s) s = onnxio__visit(sv.copy, &onnxio_desc_TensorProto, select_tensor, &c);
    } else {
        sv.copy = msg;
    }
    if (!s && source) s = bind_slots(source, &sv.sel);
    if (!s && writer->plan) s = writer->plan(&sv, path);
    /* Nothing moves (its options checked): no data file is written at all. */
    if (!s && sv.sel.count == 0 && writer == &onnxio__dir_writer) {
        writer->free(sv.state);
        sv.state = NULL;
        sv.writer = writer = &onnxio__model_writer;
    }
    if (!s) s = onnxio__txn_begin(path, &sv.txn);
    if (!s) {
        if (cfg->fsync == ONNXIO_OFF) onnxio__txn_no_fsync(sv.txn);
        const char *seeks = source ? "a streaming save writes at offsets" : writer->seeks;
        if (seeks && onnxio__txn_is_stream(sv.txn))
            s = onnxio__fail(ONNXIO_ERR_IO, "%s is not a regular file: %s", path, seeks);
    }
    if (!s && writer->write) s = writer->write(&sv, path);
    if (!writer->model_first) {
        if (!s && source) s = receive(&sv);
        if (!s) s = writer->model(&sv);
    } else {
        if (!s) s = writer->model(&sv);
        if (!s && source) s = receive(&sv);
    }
    /* The last progress call comes before any file is replaced: a cancel
     * there still leaves the old files. */
    if (!s) s = onnxio__progress_report(onnxio__progress_now(), true);
    if (!s) s = onnxio__txn_commit(sv.txn);
    else onnxio__txn_abort(sv.txn);
    if (writer->free) writer->free(sv.state);
    onnxio__free(sv.sel.tensors);
    onnxio__free(sv.sel.stale);
    onnxio_arena_unref(sv.scratch);
    return s ? onnxio__context(s, "saving %s", path) : ONNXIO_OK;
}

const onnxio__writer *onnxio__writer_for(const onnxio_serialize_options *cfg, bool model, bool archive)
{
    const onnxio_external_data_options *x = &cfg->external_data;
    if (archive) return &onnxio__zip_writer;
    if (model && (x->location || x->all_tensors_to_one_file == ONNXIO_OFF)) return &onnxio__dir_writer;
    return &onnxio__model_writer;
}
