/* Tensor slices (onnxio.h, "tensor slices"): part of one tensor of a model
 * file, read without loading the model.
 *
 * The structure is parsed as a no_copy load parses it, from a private
 * mapping set to random access: only the pages that hold structure are
 * read, inline payloads become spans into the mapping that nothing
 * touches, and external tensors (every tensor of an archive) stay
 * external. A read then finds where the tensor's bytes are (the model
 * file, a data file or an archive entry: the container seam of load.c, with
 * its checks), cuts the slice into maximal contiguous runs of the payload
 * and reads each with one pread on the pool. Nothing is allocated from a
 * number of the file before it is checked against the file: the payload's
 * size is its range's, checked by onnxio__check_external_range, and the slice's is
 * checked against the payload's. */
#include <pthread.h>
#include <string.h>

#include "io/container.h"

struct onnxio_tensor_file {
    pthread_mutex_t lock;
    onnxio_arena *arena;
    onnxio_ModelProto *model;
    onnxio_buffer *map;           /* the whole file, mapped private */
    int fd;                       /* the same file, for preads */
    onnxio_archive *archive;      /* an .onnxz file's directory, or NULL */
    onnxio_buffer *model_owner;   /* archive: what holds the model entry's bytes */
    onnxio__container *container; /* data files or entries, made at the first external tensor */
    onnxio_slice_options opts;
    onnxio__budget budget;
    char *path;
    /* A save replaced the model after it was opened, before a data file
     * it names was: that file may be the new save's. Reads that need a
     * data file not opened yet fail from then on. */
    bool replaced;
};

/* ---- options and lookups ---------------------------------------------------- */

static bool name_is(const onnxio_TensorProto *t, const char *name, size_t n)
{
    return t->name.size == n && (n == 0 || memcmp(t->name.data, name, n) == 0);
}

typedef struct find_ctx {
    const char *name;
    size_t size;
    const onnxio_TensorProto *found;
} find_ctx;

static onnxio_status find_initializer(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via,
                                      void *ctx)
{
    find_ctx *c = ctx;
    if (c->found || !parent || parent->desc != &onnxio_desc_GraphProto ||
        via != &onnxio_desc_GraphProto.fields[ONNXIO_FIELD_GraphProto_initializer])
        return ONNXIO_OK;
    if (name_is((const onnxio_TensorProto *)msg, c->name, c->size)) c->found = (const onnxio_TensorProto *)msg;
    return ONNXIO_OK;
}

ONNXIO_API const onnxio_TensorProto *onnxio_tensor_file_find(const onnxio_tensor_file *f, const char *name)
{
    if (!f || !name) return NULL;
    size_t n = strlen(name);
    const onnxio_GraphProto *g = f->model->graph;
    /* The main graph first: a visit meets the subgraphs of its nodes
     * (field 1) before its initializers (field 5). */
    for (size_t i = 0; g && i < g->initializer.size; i++)
        if (name_is(g->initializer.data[i], name, n)) return g->initializer.data[i];
    find_ctx c = {name, n, NULL};
    onnxio__visit((onnxio_message *)&f->model->base, &onnxio_desc_TensorProto, find_initializer, &c);
    return c.found;
}

ONNXIO_API const onnxio_ModelProto *onnxio_tensor_file_model(const onnxio_tensor_file *f)
{
    return f ? f->model : NULL;
}

/* ---- open and close ------------------------------------------------------------ */

ONNXIO_API void onnxio_tensor_file_close(onnxio_tensor_file *f)
{
    if (!f) return;
    onnxio__container_close(f->container);
    onnxio_arena_unref(f->arena);
    onnxio_buffer_unref(f->model_owner);
    onnxio_archive_close(f->archive);
    onnxio_buffer_unref(f->map);
    onnxio__close(f->fd);
    onnxio__free(f->path);
    pthread_mutex_destroy(&f->lock);
    onnxio__free(f);
}

ONNXIO_API onnxio_status onnxio_tensor_file_open(const char *path, const onnxio_slice_options *opts,
                                                 onnxio_tensor_file **out)
{
    if (!path || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor_file_open: NULL argument");
    onnxio__clear_error();
    *out = NULL;
    onnxio_slice_options cfg;
    onnxio_status s = onnxio__slice_config(opts, &cfg);
    if (s) return s;
    if ((s = onnxio__recover(path))) return s;
    onnxio_tensor_file *f = onnxio__calloc(1, sizeof *f);
    if (!f) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    f->fd = -1;
    f->opts = cfg;
    f->budget = (onnxio__budget){cfg.max_expansion, 0, 0, 0};
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        onnxio__free(f);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot make a mutex");
    }
    if (!(f->path = onnxio__strdup(path)) || !(f->arena = onnxio_arena_new())) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    if ((s = onnxio__map_file(path, &f->map, &f->fd))) goto fail;
    const uint8_t *data = onnxio_buffer_data(f->map);
    size_t size = onnxio_buffer_size(f->map);
    /* Random access: a fault reads its page only, never the payloads
     * around the structure. */
    onnxio__map_random(data, size, true);
    onnxio_buffer *owner = f->map;
    /* What onnxio_load_model reads it as (onnxio_detect_kind). */
    onnxio_file_kind kind = onnxio__detect_kind(data, size, size, onnxio_path_extension(path));
    if (kind.format == ONNXIO_FORMAT_ARCHIVE) {
        if ((s = onnxio__archive_open(data, size, f->map, f->fd, path, false, &f->archive))) goto fail;
        const onnxio_archive_entry *me = onnxio__archive_model(f->archive);
        f->budget.input += me->compressed_size;
        if ((s = onnxio__archive_entry_bytes(f->archive, me, false, &f->budget, &data, &f->model_owner))) goto fail;
        size = (size_t)me->size;
        owner = f->model_owner;
    }
    onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
    po.no_copy = true;
    po.num_threads = 1;
    po.alignment = 1;
    po.max_depth = cfg.max_depth;
    po.max_expansion = cfg.max_expansion;
    po.load_external_data = ONNXIO_OFF;
    if (!(f->model = onnxio_message_new(f->arena, &onnxio_desc_ModelProto))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    bool text = !f->archive && onnxio__reads_text(&kind, ONNXIO_OK);
    if (!text) {
        s = onnxio_parse_into(f->model, data, size, owner, &po, f->arena);
        text = !f->archive && onnxio__reads_text(&kind, s);
    }
    onnxio__map_random(onnxio_buffer_data(f->map), onnxio_buffer_size(f->map), false);
    if (text) {
        /* Protobuf text format, JSON or ONNX's textual syntax, as
         * onnxio_text_parse reads them. */
        void *m = NULL;
        onnxio__clear_error();
        s = onnxio__parse_text(&onnxio_desc_ModelProto, data, size, kind.text_style, &po, f->arena, &m);
        if (!s) f->model = m;
    }
    if (s) goto fail;
    *out = f;
    return ONNXIO_OK;
fail:
    onnxio__context(s, "%s", path);
    onnxio_tensor_file_close(f);
    return s;
}

/* ---- the plan of a slice --------------------------------------------------------- */

typedef struct plan {
    const onnxio_TensorProto *t;
    const onnxio_slice_range *r;
    size_t rank;
    unsigned bits;
    uint64_t elements;  /* of the tensor */
    uint64_t payload;   /* its raw bytes */
    uint64_t count;     /* elements of the slice */
    uint64_t bytes;     /* bytes of the slice */
    size_t k;           /* the axis of a run: every later axis is whole */
    uint64_t run;       /* elements of one run */
    uint64_t runs;
    uint64_t *stride;   /* elements per step of each axis (onnxio__malloc'd) */
} plan;

static void plan_free(plan *p) { onnxio__free(p->stride); }

static const char *dtype_name(int32_t dt)
{
    const char *n = onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, dt);
    return n ? n : "an unknown data type";
}

static onnxio_status plan_make(const onnxio_TensorProto *t, const onnxio_slice_range *r, size_t rank, plan *p)
{
    const char *tn = onnxio__tensor_name(t);
    *p = (plan){.t = t, .r = r, .rank = rank};
    if (t->segment)
        return onnxio__fail(ONNXIO_ERR_SLICE, "tensor '%s' is a segment of a larger tensor: it cannot be sliced", tn);
    p->bits = onnxio_data_type_bits(t->data_type);
    if (!p->bits)
        return onnxio__fail(ONNXIO_ERR_SLICE, "tensor '%s' has data type %s (%d), whose elements have no fixed size: it cannot be sliced",
                            tn, dtype_name(t->data_type), (int)t->data_type);
    int known = onnxio_tensor_raw_size(t, &p->payload);
    if (known <= 0)
        return onnxio__fail(ONNXIO_ERR_SLICE, "tensor '%s' has a negative dimension or more bytes than 64 bits count", tn);
    if (rank != t->dims.size)
        return onnxio__fail(ONNXIO_ERR_SLICE, "tensor '%s' has %zu axes, the slice gives %zu ranges", tn, t->dims.size, rank);
    if (rank && !r) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor '%s': NULL ranges", tn);
    p->count = 1;
    for (size_t i = 0; i < rank; i++) {
        int64_t d = t->dims.data[i];
        if (r[i].start < 0 || r[i].stop < r[i].start || r[i].stop > d)
            return onnxio__fail(ONNXIO_ERR_SLICE,
                                "tensor '%s': axis %zu: range [%lld, %lld) is not within [0, %lld) (0 <= start <= stop <= dim)",
                                tn, i, (long long)r[i].start, (long long)r[i].stop, (long long)d);
        p->count *= (uint64_t)(r[i].stop - r[i].start); /* at most the elements, which fit */
    }
    /* Elements of the tensor: their bits fit 64 bits (onnxio_tensor_raw_size). */
    p->elements = 1;
    for (size_t i = 0; i < rank; i++) p->elements *= (uint64_t)t->dims.data[i];
    if (p->count == 0) return ONNXIO_OK;
    if (rank && !(p->stride = onnxio__malloc(rank * sizeof *p->stride)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    for (size_t i = rank; i-- > 0;) p->stride[i] = i + 1 == rank ? 1 : p->stride[i + 1] * (uint64_t)t->dims.data[i + 1];
    /* The run's axis: the last one that is not whole (0 when all are). */
    size_t k = rank ? rank - 1 : 0;
    while (k > 0 && r[k].start == 0 && r[k].stop == t->dims.data[k]) k--;
    p->k = k;
    p->run = rank ? (uint64_t)(r[k].stop - r[k].start) * p->stride[k] : 1;
    p->runs = p->count / p->run;
    uint64_t bits = p->bits;
    if (bits % 8) {
        /* Packed: every run must begin on a byte, and end on one or at the
         * tensor's end (whose last byte is padded). */
        uint64_t base = 0;
        for (size_t i = 0; i < rank && i <= k; i++) {
            base += (uint64_t)r[i].start * p->stride[i];
            if ((uint64_t)r[i].start * p->stride[i] * bits % 8)
                return onnxio__fail(ONNXIO_ERR_SLICE,
                                    "tensor '%s' (%s, %u bits per element, packed): axis %zu: start %lld splits a byte; "
                                    "slices of packed types must begin and end on whole bytes",
                                    tn, dtype_name(t->data_type), p->bits, i, (long long)r[i].start);
            if (i < k && r[i].stop - r[i].start > 1 && p->stride[i] * bits % 8)
                return onnxio__fail(ONNXIO_ERR_SLICE,
                                    "tensor '%s' (%s, %u bits per element, packed): axis %zu: its rows start inside bytes; "
                                    "slices of packed types must begin and end on whole bytes",
                                    tn, dtype_name(t->data_type), p->bits, i + 1);
        }
        if (p->run * bits % 8 && !(p->runs == 1 && base + p->run == p->elements))
            return onnxio__fail(ONNXIO_ERR_SLICE,
                                "tensor '%s' (%s, %u bits per element, packed): axis %zu: stop %lld splits a byte; "
                                "slices of packed types must begin and end on whole bytes",
                                tn, dtype_name(t->data_type), p->bits, k, (long long)(rank ? r[k].stop : 1));
    }
    p->bytes = (p->count * bits + 7) / 8;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_tensor_slice_size(const onnxio_TensorProto *t, const onnxio_slice_range *ranges,
                                                  size_t rank, uint64_t *bytes)
{
    if (!t || !bytes) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor_slice_size: NULL argument");
    plan p;
    onnxio_status s = plan_make(t, ranges, rank, &p);
    *bytes = s ? 0 : p.bytes;
    plan_free(&p);
    return s;
}

/* ---- where the bytes are ---------------------------------------------------------- */

typedef struct source {
    int fd;              /* read with pread (-1: only in memory) */
    uint64_t offset;     /* of the payload's first byte in fd */
    const uint8_t *mem;  /* the payload in memory (a mapping, an inflated entry), or NULL */
    onnxio_buffer *owner;
    const char *what;    /* the file or entry, for read errors */
    onnxio_buffer *held; /* values converted from a typed field: released after the read */
    const onnxio_TensorProto *tensor;
    onnxio__digests digests; /* its block digests, when has_digests */
    bool has_digests;
} source;

/* The most bytes of decoded values a slice converts from a typed field. */
#define ONNXIO__TYPED_SLICE_MAX ((uint64_t)64 << 20)

/* The payload of `t`: inline in the model file (the mapping's bytes are
 * the file's), or its external range, checked as a load checks it. */
static onnxio_status locate(onnxio_tensor_file *f, const onnxio_TensorProto *t, uint64_t payload, source *src)
{
    const char *tn = onnxio__tensor_name(t);
    if (!onnxio__is_external(t)) {
        if (!onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data)) {
            /* Values in a typed field (float_data, int32_data, ...): they
             * are parsed with the structure; converted whole to raw bytes,
             * up to a bound. */
            if (payload > ONNXIO__TYPED_SLICE_MAX)
                return onnxio__fail(ONNXIO_ERR_SLICE,
                                    "tensor '%s' holds its values in a typed field (float_data, int32_data, ...), not "
                                    "raw_data, and they take %llu bytes decoded: more than the %llu that a slice "
                                    "converts; load the model whole",
                                    tn, (unsigned long long)payload, (unsigned long long)ONNXIO__TYPED_SLICE_MAX);
            onnxio_buffer *b = onnxio_buffer_new(payload ? (size_t)payload : 1, (size_t)onnxio__alignment(0));
            if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            onnxio_status s = onnxio__typed_to_raw(t, payload, onnxio_buffer_data(b), ONNXIO_ERR_SLICE);
            if (s) {
                onnxio_buffer_unref(b);
                return s;
            }
            *src = (source){.fd = -1, .mem = onnxio_buffer_data(b), .owner = b, .what = f->path, .held = b, .tensor = t};
            return ONNXIO_OK;
        }
        if (t->raw_data.size != payload)
            return onnxio__fail(ONNXIO_ERR_SLICE, "tensor '%s': raw_data has %zu bytes, its type and shape need %llu", tn,
                                t->raw_data.size, (unsigned long long)payload);
        const uint8_t *base = onnxio_buffer_data(f->map), *p = t->raw_data.data;
        *src = (source){.fd = -1, .mem = p, .owner = t->raw_data.owner, .what = f->path, .tensor = t};
        if (p && p >= base && (size_t)(p - base) <= onnxio_buffer_size(f->map) - payload) {
            src->fd = f->fd;
            src->offset = (uint64_t)(p - base);
        }
        return ONNXIO_OK;
    }
    onnxio_external_ref r;
    onnxio_status s = onnxio_external_ref_parse(t, &r);
    if (s) return s;
    if (!f->container) {
        onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
        po.no_copy = true; /* data files are mapped too, for views; reads are preads */
        po.alignment = 1;
        if (f->archive) {
            s = onnxio__zip_container(f->archive, &po, false, &f->container);
        } else {
            char *dir = onnxio__model_dir(f->path, f->opts.base_dir);
            if (!dir) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            s = onnxio__dir_container(dir, f->path, &po, &f->container);
            onnxio__free(dir);
        }
        if (s) return s;
    }
    onnxio__entry *e, *before = f->container->entries;
    if (f->replaced || (s = f->container->open(f->container, t, &r, &f->budget, &e))) {
        if (!f->replaced) return s;
        onnxio__clear_error();
    }
    /* A data file opened now: is it the model's (onnxio__save_crossed)?
     * Files opened earlier stay the ones that were there then. */
    if (f->replaced || (!f->archive && f->container->entries != before && onnxio__save_crossed(f->path, f->fd))) {
        f->replaced = true;
        return onnxio__fail(ONNXIO_ERR_IO, "%s was replaced by a save after it was opened: open it again to read '%s'",
                            f->path, onnxio__tensor_name(t));
    }
    uint64_t length;
    if ((s = onnxio__check_external_range(t, &r, e->size, e->name, &length))) return s;
    *src = (source){.fd = e->fd, .offset = e->offset + r.offset, .mem = e->data ? e->data + r.offset : NULL,
                    .owner = e->owner, .what = e->name, .tensor = t};
    return onnxio__entry_digests(f->container, e, t, length, &f->budget, &src->digests, &src->has_digests);
}

/* The tensor and its plan and source, under the lock. */
static onnxio_status prepare(onnxio_tensor_file *f, const char *name, const onnxio_slice_range *ranges, size_t rank,
                             plan *p, source *src)
{
    *p = (plan){0};
    *src = (source){0};
    const onnxio_TensorProto *t = onnxio_tensor_file_find(f, name);
    if (!t) return onnxio__fail(ONNXIO_ERR_NOT_FOUND, "%s has no initializer named '%s'", f->path, name);
    onnxio_status s = plan_make(t, ranges, rank, p);
    if (!s) s = locate(f, t, p->payload, src);
    return s;
}

/* Calls fn for every run: its offset in the payload and its bytes. */
typedef onnxio_status (*run_fn)(void *ctx, uint64_t offset, uint64_t size);

static onnxio_status each_run(const plan *p, run_fn fn, void *ctx)
{
    if (p->count == 0) return ONNXIO_OK;
    size_t k = p->k, rank = p->rank;
    int64_t idx_small[16], *idx = idx_small;
    if (k > 16 && !(idx = onnxio__malloc(k * sizeof *idx))) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < k; i++) idx[i] = p->r[i].start;
    uint64_t bits = p->bits, tail = rank ? (uint64_t)p->r[k].start * p->stride[k] : 0;
    onnxio_status s = ONNXIO_OK;
    for (uint64_t n = 0; n < p->runs && !s; n++) {
        uint64_t at = tail;
        for (size_t i = 0; i < k; i++) at += (uint64_t)idx[i] * p->stride[i];
        uint64_t begin = at * bits / 8, end = ((at + p->run) * bits + 7) / 8;
        s = fn(ctx, begin, end - begin);
        for (size_t i = k; i-- > 0;) {
            if (++idx[i] < p->r[i].stop) break;
            idx[i] = p->r[i].start;
        }
    }
    if (idx != idx_small) onnxio__free(idx);
    return s;
}

typedef struct read_ctx {
    onnxio__pool *pool;
    const source *src;
    uint8_t *dst;
    uint64_t at; /* bytes of dst written */
    uint64_t read;
} read_ctx;

static onnxio_status read_run(void *ctx, uint64_t offset, uint64_t size)
{
    read_ctx *c = ctx;
    onnxio__job job = {.dst = c->dst + c->at, .size = size, .what = c->src->what};
    if (c->src->fd >= 0) {
        job.kind = ONNXIO__JOB_PREAD;
        job.fd = c->src->fd;
        job.offset = c->src->offset + offset;
    } else {
        job.kind = ONNXIO__JOB_COPY;
        job.src = c->src->mem + offset;
    }
    c->at += size;
    c->read += size;
    return size ? onnxio__pool_add(c->pool, &job) : ONNXIO_OK;
}

/* ---- block digests ---------------------------------------------------------------- */

typedef struct mark_ctx {
    uint8_t *bits;
    uint64_t block;
} mark_ctx;

static onnxio_status mark_run(void *ctx, uint64_t offset, uint64_t size)
{
    mark_ctx *m = ctx;
    for (uint64_t k = offset / m->block; size && k <= (offset + size - 1) / m->block; k++)
        m->bits[k / 8] |= (uint8_t)(1u << (k % 8));
    return ONNXIO_OK;
}

/* Checks every block of the payload that the slice's runs touch against
 * its digest: runs of touched blocks as DIGEST jobs on `pool` over the
 * payload's memory, or, when it is only in a file, read a block at a time
 * here. *checked: the bytes hashed. */
static onnxio_status check_blocks(const plan *p, const source *src, onnxio__pool *pool, uint8_t (**expect)[32],
                                  uint64_t *checked)
{
    const onnxio__digests *d = &src->digests;
    *checked = 0;
    if (!src->has_digests || !d->count || !p->bytes) return ONNXIO_OK;
    uint8_t *bits = onnxio__calloc((d->count + 7) / 8, 1);
    uint8_t *block = src->mem ? NULL : onnxio__malloc((size_t)d->block);
    *expect = onnxio__malloc(d->count * sizeof **expect);
    onnxio_status s = ONNXIO_OK;
    if (!bits || !*expect || (!src->mem && !block)) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    mark_ctx m = {bits, d->block};
    if (!s) s = each_run(p, mark_run, &m);
    if (!s) onnxio__digests_decode(d, *expect);
    const char *tn = onnxio__tensor_name(src->tensor);
    for (uint64_t k = 0; !s && k < d->count;) {
        if (!(bits[k / 8] >> (k % 8) & 1)) {
            k++;
            continue;
        }
        uint64_t first = k;
        while (k < d->count && bits[k / 8] >> (k % 8) & 1) k++;
        uint64_t from = first * d->block, to = k * d->block < p->payload ? k * d->block : p->payload;
        *checked += to - from;
        if (src->mem) {
            onnxio__job job = {.kind = ONNXIO__JOB_DIGEST, .src = src->mem + from, .size = to - from,
                               .expect = (const uint8_t(*)[32])(*expect + first), .digest_block = d->block,
                               .first_block = first, .tensor = tn, .what = src->what};
            s = onnxio__pool_add(pool, &job);
            continue;
        }
        for (uint64_t b = first; !s && b < k; b++) {
            uint64_t at = b * d->block, n = p->payload - at < d->block ? p->payload - at : d->block;
            uint8_t got[32];
            if ((s = onnxio__read_at(src->fd, block, (size_t)n, src->offset + at, src->what))) break;
            onnxio__sha256(block, (size_t)n, got);
            if (memcmp(got, (*expect)[b], 32) != 0)
                s = onnxio__fail(ONNXIO_ERR_CHECKSUM,
                                 "tensor '%s': block %llu (its bytes %llu to %llu, from %s) does not match its SHA-256 "
                                 "digest",
                                 tn, (unsigned long long)b, (unsigned long long)at, (unsigned long long)(at + n),
                                 src->what);
        }
    }
    onnxio__free(bits);
    onnxio__free(block);
    return s;
}

static void stats_write(onnxio_slice_stats *out, const onnxio_slice_stats *in)
{
    if (!out) return;
    size_t n = out->struct_size && out->struct_size < sizeof *in ? out->struct_size : sizeof *in;
    size_t keep = out->struct_size;
    memcpy(out, in, n);
    out->struct_size = keep;
}

ONNXIO_API onnxio_status onnxio_tensor_file_read(onnxio_tensor_file *f, const char *name, const onnxio_slice_range *ranges,
                                                 size_t rank, void *dst, uint64_t dst_size, onnxio_buffer **out,
                                                 onnxio_slice_stats *stats)
{
    if (!f || !name || (!dst && !out))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor_file_read: NULL argument");
    onnxio__clear_error();
    if (out) *out = NULL;
    pthread_mutex_lock(&f->lock);
    plan p;
    source src;
    onnxio_buffer *b = NULL;
    onnxio_status s = prepare(f, name, ranges, rank, &p, &src);
    if (s) goto done;
    if (dst && dst_size < p.bytes) {
        s = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor '%s': the slice has %llu bytes, the destination %llu", name,
                         (unsigned long long)p.bytes, (unsigned long long)dst_size);
        goto done;
    }
    if (!dst) {
        if (p.bytes > SIZE_MAX || !(b = onnxio_buffer_new((size_t)p.bytes, (size_t)onnxio__alignment(0)))) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "tensor '%s': out of memory for a slice of %llu bytes", name,
                             (unsigned long long)p.bytes);
            goto done;
        }
        dst = onnxio_buffer_data(b);
    }
    /* Threads pay off for large slices only. */
    onnxio__pool *pool;
    if ((s = onnxio__pool_new(p.bytes < (4u << 20) ? 1 : f->opts.num_threads, &pool))) goto done;
    read_ctx c = {pool, &src, dst, 0, 0};
    uint8_t(*expect)[32] = NULL;
    uint64_t checked = 0;
    s = check_blocks(&p, &src, pool, &expect, &checked);
    if (!s) s = each_run(&p, read_run, &c);
    onnxio_status s2 = onnxio__pool_finish(pool);
    onnxio__free(expect);
    if (!s) s = s2;
    if (!s) {
        onnxio_slice_stats st = {sizeof st, p.bytes, c.read, p.runs, p.payload, checked};
        stats_write(stats, &st);
    }
done:
    plan_free(&p);
    onnxio_buffer_unref(src.held);
    pthread_mutex_unlock(&f->lock);
    if (s) {
        onnxio_buffer_unref(b);
        return s;
    }
    if (out) *out = b;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_tensor_file_view(onnxio_tensor_file *f, const char *name, const onnxio_slice_range *ranges,
                                                 size_t rank, const void **data, uint64_t *size, onnxio_buffer **owner)
{
    if (!f || !name || !data || !size || !owner)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "tensor_file_view: NULL argument");
    onnxio__clear_error();
    *data = NULL;
    pthread_mutex_lock(&f->lock);
    plan p;
    source src;
    onnxio_status s = prepare(f, name, ranges, rank, &p, &src);
    if (!s && p.runs == 1 && src.mem && src.owner && src.has_digests) {
        /* A view is checked as a read is: the blocks it covers. */
        onnxio__pool *pool = NULL;
        uint8_t(*expect)[32] = NULL;
        uint64_t checked;
        if (!(s = onnxio__pool_new(f->opts.num_threads, &pool))) s = check_blocks(&p, &src, pool, &expect, &checked);
        onnxio_status s2 = onnxio__pool_finish(pool);
        onnxio__free(expect);
        if (!s) s = s2;
    }
    if (!s && p.runs == 1 && src.mem && src.owner) {
        uint64_t at = rank ? (uint64_t)ranges[p.k].start * p.stride[p.k] : 0;
        for (size_t i = 0; i < p.k; i++) at += (uint64_t)ranges[i].start * p.stride[i];
        *data = src.mem + at * p.bits / 8;
        *size = p.bytes;
        *owner = onnxio_buffer_ref(src.owner);
    }
    plan_free(&p);
    onnxio_buffer_unref(src.held);
    pthread_mutex_unlock(&f->lock);
    return s;
}

ONNXIO_API onnxio_status onnxio_read_tensor_slice(const char *path, const char *name, const onnxio_slice_range *ranges,
                                                  size_t rank, void *dst, uint64_t dst_size, onnxio_buffer **out,
                                                  const onnxio_slice_options *opts, onnxio_slice_stats *stats)
{
    onnxio_status s = ONNXIO_OK;
    bool replaced = true;
    /* A save that replaced the files between the open and the read: the
     * next open waits for it. */
    for (int attempt = 0; replaced && attempt < ONNXIO__LOAD_ATTEMPTS; attempt++) {
        onnxio_tensor_file *f;
        if ((s = onnxio_tensor_file_open(path, opts, &f))) return s;
        s = onnxio_tensor_file_read(f, name, ranges, rank, dst, dst_size, out, stats);
        replaced = f->replaced;
        onnxio_tensor_file_close(f);
    }
    return s;
}
