/* Streaming saves (onnxio_save_streaming, docs/design.md "The save
 * pipeline"): a copy of the model's structure whose placeholders (the
 * initializers without data) have raw_data of their size without bytes,
 * and a source that the one save pipeline (save.c) pulls their bytes
 * from once every file's layout is fixed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/save.h"

static int slot_cmp(const void *a, const void *b)
{
    return strcmp(onnxio__tensor_name(((const onnxio__slot *)a)->t), onnxio__tensor_name(((const onnxio__slot *)b)->t));
}

/* The placeholders of the copy: initializers of every graph without a
 * payload. Sized from data_type and dims (onnxio_tensor_raw_size). */
typedef struct placeholders {
    onnxio__source *src;
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
                            onnxio__tensor_name(t), (int)t->data_type, onnxio__dims_text(t, dims, sizeof dims));
    }
    if (size > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "tensor '%s' is too large", onnxio__tensor_name(t));
    onnxio__source *src = p->src;
    if (!onnxio__grow((void **)&src->slots, &p->capacity, src->count, sizeof *src->slots))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    src->slots[src->count++] = (onnxio__slot){.t = t, .size = size};
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
    onnxio__source src = {.fn = source, .user = source_user};
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_ModelProto *copy = NULL;
    placeholders p = {.src = &src};
    if (!arena) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    if (!s) s = onnxio__clone(arena, model, (void **)&copy);
    if (!s) s = onnxio__visit(&copy->base, &onnxio_desc_TensorProto, find_placeholder, &p);
    if (!s && src.count) {
        qsort(src.slots, src.count, sizeof *src.slots, slot_cmp);
        for (size_t i = 1; !s && i < src.count; i++)
            if (slot_cmp(&src.slots[i - 1], &src.slots[i]) == 0)
                s = onnxio__fail(ONNXIO_ERR_STREAM, "two placeholder initializers are named '%s'",
                                 onnxio__tensor_name(src.slots[i].t));
    }
    if (!s) {
        onnxio__progress_total(onnxio__progress_now(), p.total);
        onnxio__progress_ready(onnxio__progress_now());
        s = onnxio__save(copy, path, &cfg, onnxio__writer_for(&cfg, true, archive), &src, arena);
    }
    onnxio__progress_leave(&saved);
    onnxio__free(src.slots);
    onnxio_arena_unref(arena);
    return s;
}
