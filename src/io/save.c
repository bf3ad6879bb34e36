/* The save pipeline (docs/design.md, "The save pipeline"), one for every
 * container:
 *
 *   1. select: the tensors whose payloads leave the model (external data:
 *      initializers, or every tensor with convert_attribute; an archive:
 *      every tensor), at least size_threshold bytes, in a copy of the model
 *      whose payloads are shared, not copied (the caller's model is never
 *      changed);
 *   2. lay out: which file or entry each payload goes to, at which offset
 *      (aligned), and the names of per-tensor files and entries;
 *   3. write: every file is a temporary file of one transaction (file.c);
 *      payloads are written at their offsets on the pool, with the digest
 *      the container wants (SHA-1 of data files, CRC-32 of entries);
 *   4. refer: the copied tensors get their external data keys;
 *   5. write the model (a file of its own, or the archive's last entry and
 *      directory) and commit the transaction: crash-consistent.
 *
 * A model without external data skips 1, 2 and 4. */
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

/* Temporary data files written before the pool is drained and they are
 * closed: bounds the descriptors held in one-file-per-tensor mode. */
#define FILES_PER_BATCH 64
/* Tensor names longer than this are cut in file and entry names (NAME_MAX
 * is 255; the uniqueness suffix and temporary-file affixes need room). */
#define MAX_NAME_STEM 200

static uint64_t align_up(uint64_t x, uint64_t a) { return a > 1 && x % a ? x + (a - x % a) : x; }

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

/* ---- names of per-tensor files and entries ------------------------------- */

/* A set of names compared with ASCII case folded (file names that differ
 * only in case are one file on case-insensitive file systems). */
struct onnxio__names {
    char **slots;
    size_t capacity, count;
};

static uint64_t fold_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint64_t)tolower((unsigned char)*s)) * 1099511628211ull;
    return h;
}

onnxio__names *onnxio__names_new(size_t expected)
{
    onnxio__names *set = onnxio__calloc(1, sizeof *set);
    if (!set) return NULL;
    set->capacity = 16;
    while (set->capacity < 2 * (expected + 1)) set->capacity *= 2;
    if (!(set->slots = onnxio__calloc(set->capacity, sizeof *set->slots))) {
        onnxio__free(set);
        return NULL;
    }
    return set;
}

void onnxio__names_free(onnxio__names *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->capacity; i++) onnxio__free(set->slots[i]);
    onnxio__free(set->slots);
    onnxio__free(set);
}

static char **set_slot(onnxio__names *set, const char *name)
{
    size_t i = (size_t)fold_hash(name) & (set->capacity - 1);
    while (set->slots[i] && strcasecmp(set->slots[i], name) != 0) i = (i + 1) & (set->capacity - 1);
    return &set->slots[i];
}

/* Adds `name` (the set takes it): 1 added, 0 already there (name freed),
 * -1 out of memory (name freed). */
static int set_add(onnxio__names *set, char *name)
{
    if (2 * (set->count + 1) > set->capacity) {
        size_t cap = set->capacity * 2;
        char **old = set->slots, **slots = onnxio__calloc(cap, sizeof *slots);
        if (!slots) {
            onnxio__free(name);
            return -1;
        }
        size_t old_cap = set->capacity;
        set->slots = slots;
        set->capacity = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i]) *set_slot(set, old[i]) = old[i];
        onnxio__free(old);
    }
    char **slot = set_slot(set, name);
    if (*slot) {
        onnxio__free(name);
        return 0;
    }
    *slot = name;
    set->count++;
    return 1;
}

int onnxio__names_reserve(onnxio__names *set, const char *name)
{
    char *copy = onnxio__strdup(name);
    return copy ? set_add(set, copy) : -1;
}

const char *onnxio__names_unique(onnxio__names *set, const char *tensor)
{
    size_t n = strlen(tensor);
    if (n > MAX_NAME_STEM) n = MAX_NAME_STEM;
    char stem[MAX_NAME_STEM + sizeof "tensor"];
    /* Only portable file-name characters; never a hidden file (and never
     * "." or ".."). */
    for (size_t i = 0; i < n; i++) {
        char ch = tensor[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                 ch == '_' || ch == '-';
        stem[i] = ok ? ch : '_';
    }
    stem[n] = '\0';
    if (n == 0) strcpy(stem, "tensor");
    if (stem[0] == '.') stem[0] = '_';
    char *name = onnxio__strdup(stem);
    int r = name ? set_add(set, name) : -1;
    for (unsigned long long k = 1; r == 0; k++) {
        if (!(name = onnxio__malloc(strlen(stem) + 24))) return NULL;
        sprintf(name, "%s_%llu", stem, k);
        r = set_add(set, name);
    }
    return r == 1 ? name : NULL;
}

/* ---- external data keys ----------------------------------------------------- */

static onnxio_status add_key(onnxio_arena *arena, onnxio_TensorProto *t, const char *key, const char *value)
{
    onnxio_StringStringEntryProto *e = onnxio_list_add(arena, &t->external_data, &onnxio_desc_StringStringEntryProto);
    if (!e || onnxio_string_set(arena, &e->key, key, strlen(key)) ||
        onnxio_string_set(arena, &e->value, value, strlen(value)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_key);
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_value);
    return ONNXIO_OK;
}

/* Points `t` at external data: its external_data becomes the keys location,
 * offset, length (raw_data's size) and, when given, checksum, in the order
 * the onnx package writes them; raw_data is cleared and data_location set
 * to EXTERNAL. */
static onnxio_status refer(onnxio_arena *arena, onnxio_TensorProto *t, const char *location, uint64_t offset,
                           const char *checksum)
{
    char num[32];
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_external_data]);
    onnxio_status s = add_key(arena, t, "location", location);
    snprintf(num, sizeof num, "%llu", (unsigned long long)offset);
    if (!s) s = add_key(arena, t, "offset", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)t->raw_data.size);
    if (!s) s = add_key(arena, t, "length", num);
    if (!s && checksum) s = add_key(arena, t, "checksum", checksum);
    if (s) return s;
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_raw_data]);
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    return ONNXIO_OK;
}

/* ---- 1. select ------------------------------------------------------------------ */

static onnxio_status select_tensor(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    selection *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    bool has_raw = onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    if (!has_raw && onnxio__is_external(t)) {
        if (c->external_refused)
            return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD,
                                "tensor '%s' is still external (its data was not loaded): load its external data first",
                                onnxio__tensor_name(t));
        if (!onnxio__grow((void **)&c->stale, &c->stale_capacity, c->stale_count, sizeof *c->stale))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        c->stale[c->stale_count++] = t;
        return ONNXIO_OK;
    }
    /* As the onnx package does by default: initializers of every graph. */
    if (!c->every_tensor &&
        (!parent || parent->desc != &onnxio_desc_GraphProto || via->index != ONNXIO_FIELD_GraphProto_initializer))
        return ONNXIO_OK;
    if (!has_raw || t->raw_data.size < c->threshold) return ONNXIO_OK;
    if (!t->raw_data.data && !c->streaming)
        return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", onnxio__tensor_name(t));
    if (!onnxio__grow((void **)&c->tensors, &c->capacity, c->count, sizeof *c->tensors))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->tensors[c->count++] = t;
    return ONNXIO_OK;
}

static void selection_free(selection *c)
{
    onnxio__free(c->tensors);
    onnxio__free(c->stale);
}

/* ---- writing the model ---------------------------------------------------------- */

/* Serializes `msg` into the open file `fd` (structure through a staging
 * buffer, large payloads at their offsets on `pool`, or in one sequential
 * pass when `sequential`). The size pass must have run. */
static onnxio_status write_message(void *msg, int fd, const char *what, onnxio__pool *pool, uint64_t threshold,
                                   bool sequential)
{
    size_t cap = 1u << 20;
    uint8_t *staging = onnxio__malloc(cap);
    if (!staging) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    onnxio__sink sink = {.buf = staging, .cap = cap, .fd = fd, .pool = sequential ? NULL : pool,
                         .threshold = threshold, .what = what, .sequential = sequential};
    onnxio_status s = onnxio__encode(msg, &sink);
    if (!s) s = onnxio__sink_flush(&sink);
    onnxio__free(staging);
    return s;
}

/* Writes `msg` as the transaction's main file and commits: every queued
 * payload write is over before anything is synced or renamed. */
static onnxio_status write_main_and_commit(onnxio__txn *txn, void *msg, const onnxio_serialize_options *cfg,
                                           const char *path)
{
    uint64_t size;
    onnxio_status s = onnxio__size_pass(msg, cfg->max_depth, &size);
    int fd = -1;
    onnxio__pool *pool = NULL;
    if (!s) s = onnxio__txn_create(txn, -1, NULL, &fd);
    if (!s) s = onnxio__pool_new(cfg->num_threads, &pool);
    if (!s) s = write_message(msg, fd, path, pool, cfg->raw_data_threshold, onnxio__txn_is_stream(txn));
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    /* The last progress call comes before any file is replaced: a cancel
     * there still leaves the old files. */
    if (!s) s = onnxio__progress_report(onnxio__progress_now(), true);
    if (s) {
        onnxio__txn_abort(txn);
        return s;
    }
    return onnxio__txn_commit(txn);
}

onnxio_status onnxio__save_plain(void *msg, const char *path, const onnxio_serialize_options *cfg)
{
    onnxio__txn *txn;
    onnxio_status s = onnxio__txn_begin(path, &txn);
    if (s) return s;
    if (cfg->fsync == ONNXIO_OFF) onnxio__txn_no_fsync(txn);
    s = write_main_and_commit(txn, msg, cfg, path);
    return s ? onnxio__context(s, "saving %s", path) : ONNXIO_OK;
}

/* ---- external data files -------------------------------------------------------- */

static void dir_plan_free(dir_plan *d)
{
    for (size_t k = 0; k < d->count; k++) {
        onnxio__free(d->files[k].location);
        onnxio__resolved_free(&d->files[k].res);
    }
    onnxio__free(d->files);
    onnxio__free(d->items);
}

/* Decides the data files and every payload's file and offset. */
static onnxio_status plan_files(const selection *sel, const onnxio_serialize_options *cfg, const char *model_name,
                                dir_plan *d)
{
    const onnxio_external_data_options *x = &cfg->external_data;
    size_t n = sel->count;
    if (!(d->items = onnxio__calloc(n, sizeof *d->items))) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    d->item_count = n;
    for (size_t i = 0; i < n; i++) d->items[i].tensor = sel->tensors[i];
    uint64_t alignment = onnxio__save_alignment(cfg, true);
    if (x->all_tensors_to_one_file == ONNXIO_OFF) {
        d->files = onnxio__calloc(n, sizeof *d->files);
        onnxio__names *set = onnxio__names_new(n + 1);
        onnxio_status s = ONNXIO_OK;
        if (!d->files || !set || onnxio__names_reserve(set, model_name) < 0)
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        for (size_t i = 0; !s && i < n; i++) {
            out_file *f = &d->files[i];
            f->fd = f->res.dir_fd = -1;
            d->count = i + 1;
            const char *name = onnxio__names_unique(set, onnxio__tensor_name(d->items[i].tensor));
            if (!name || !(f->location = onnxio__strdup(name))) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            f->size = d->items[i].tensor->raw_data.size;
            f->first = i;
            f->count = 1;
            d->items[i].file = i;
        }
        onnxio__names_free(set);
        return s;
    }
    uint64_t limit = x->max_file_size;
    size_t file = 0;
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t size = d->items[i].tensor->raw_data.size;
        uint64_t at = align_up(end, alignment);
        /* A payload that would cross the limit starts the next file; one
         * larger than the limit gets a file of its own. */
        if (limit && end > 0 && (at > limit || size > limit - at)) {
            file++;
            at = 0;
        }
        d->items[i].file = file;
        d->items[i].offset = at;
        end = at + size;
    }
    size_t nfiles = limit ? file + 1 : 1;
    if (!(d->files = onnxio__calloc(nfiles, sizeof *d->files))) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    /* "<stem>-00001-of-0000N<ext>": the extension is the last '.' of the
     * file name part (not a leading one). */
    const char *fname = onnxio__basename(x->location);
    const char *dot = strrchr(fname, '.');
    if (!dot || dot == fname) dot = fname + strlen(fname);
    for (size_t k = 0; k < nfiles; k++) {
        out_file *f = &d->files[k];
        f->fd = f->res.dir_fd = -1;
        d->count = k + 1;
        if (!limit) f->location = onnxio__strdup(x->location);
        else {
            size_t len = strlen(x->location) + 64;
            if ((f->location = onnxio__malloc(len)))
                snprintf(f->location, len, "%.*s-%05zu-of-%05zu%s", (int)(dot - x->location), x->location, k + 1, nfiles,
                         dot);
        }
        if (!f->location) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        out_file *f = &d->files[d->items[i].file];
        if (f->count == 0) f->first = i;
        f->count++;
        f->size = d->items[i].offset + d->items[i].tensor->raw_data.size;
    }
    return ONNXIO_OK;
}

/* A still-external tensor whose location is a file this save replaces
 * would silently point at the new bytes. */
static onnxio_status check_stale(const selection *sel, const dir_plan *d)
{
    for (size_t i = 0; i < sel->stale_count; i++) {
        const onnxio_TensorProto *t = sel->stale[i];
        onnxio_external_ref r;
        if (onnxio_external_ref_parse(t, &r)) {
            onnxio__clear_error();
            continue;
        }
        const char *loc = r.location;
        while (loc[0] == '.' && loc[1] == '/') loc += 2;
        for (size_t k = 0; k < d->count; k++)
            if (strcmp(loc, d->files[k].location) == 0)
                return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                                    "tensor '%s' still refers to external data in '%s', which this save replaces; "
                                    "load its external data first",
                                    onnxio__tensor_name(t), loc);
    }
    return ONNXIO_OK;
}

/* Where data file `f` goes under the model's directory `dir`: the
 * location's rules, the checked walk (symlinks followed only inside),
 * never the model file, never a file with other hard links or a special
 * file. */
static onnxio_status resolve_file(out_file *f, const onnxio__base *dir, const struct stat *model)
{
    onnxio_status s = onnxio_check_location(f->location, strlen(f->location));
    if (!s) s = onnxio__resolve_in(dir, f->location, &f->res);
    /* As named, or as a symlink inside the directory leads. */
    if (!s && (onnxio__txn_reserved_name(onnxio__basename(f->location)) || onnxio__txn_reserved_name(f->res.name)))
        s = onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                         "external data location '%s' is a name saves use for their own journal or temporary files",
                         f->location);
    if (!s && f->res.exists) s = onnxio__resolved_check(&f->res, f->location, model);
    return s;
}

/* Writes the files [first, end) of the plan as temporary files of `txn`:
 * payloads as PWRITE jobs on a pool, the gaps left as holes (zeros), the
 * SHA-1 computed from memory on this thread meanwhile; then every file is
 * synced and closed. */
static onnxio_status write_batch(onnxio__txn *txn, dir_plan *d, size_t first, size_t end,
                                 const onnxio_serialize_options *cfg)
{
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(cfg->num_threads, &pool);
    if (s) return s;
    for (size_t k = first; !s && k < end; k++) {
        out_file *f = &d->files[k];
        if (f->pending) continue;
        if ((s = onnxio__txn_create(txn, f->res.dir_fd, f->res.name, &f->fd))) break;
        /* The whole size at once: the padding between payloads reads as
         * zeros whatever order the jobs run in. */
        if (onnxio__sys_ftruncate(f->fd, f->size) != 0) {
            s = onnxio__fail(ONNXIO_ERR_IO, "cannot size %s to %llu bytes: %s", f->location, (unsigned long long)f->size,
                             strerror(errno));
            break;
        }
        for (size_t i = f->first; !s && i < f->first + f->count; i++) {
            const onnxio_TensorProto *t = d->items[i].tensor;
            onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = f->fd, .offset = d->items[i].offset,
                               .src = t->raw_data.data, .size = t->raw_data.size, .what = f->location};
            s = onnxio__pool_add(pool, &job);
        }
    }
    for (size_t k = first; !s && cfg->external_data.checksum && k < end; k++) {
        out_file *f = &d->files[k];
        if (f->pending) continue;
        onnxio__sha1 h;
        if ((s = onnxio__sha1_begin(&h))) break;
        uint64_t at = 0;
        for (size_t i = f->first; !s && i < f->first + f->count; i++) {
            const onnxio_TensorProto *t = d->items[i].tensor;
            s = onnxio__sha1_zeros(&h, d->items[i].offset - at);
            if (!s) s = onnxio__sha1_update(&h, t->raw_data.data, t->raw_data.size);
            at = d->items[i].offset + t->raw_data.size;
        }
        if (!s) s = onnxio__sha1_zeros(&h, f->size - at);
        if (s) onnxio__sha1_abort(&h);
        else s = onnxio__sha1_end(&h, f->digest);
    }
    /* Every queued write must be over before a file is synced or removed. */
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    for (size_t k = first; !s && k < end; k++)
        if (!d->files[k].pending) s = onnxio__txn_sync(txn, d->files[k].fd);
    return s;
}


/* With `st`, a streaming save: `model` is already the streaming save's
 * copy (its placeholders' raw_data have sizes, no bytes). */
onnxio_status onnxio__save_external_to(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *cfg,
                                   stream *st)
{
    const onnxio_external_data_options *x = &cfg->external_data;
    onnxio_status s;
    if (x->all_tensors_to_one_file != ONNXIO_OFF && (s = onnxio_check_location(x->location, strlen(x->location))))
        return s;
    /* The caller's model stays as it is: the tensors are rewritten in a
     * copy whose payloads are shared, not copied. */
    onnxio_arena *scratch = st ? onnxio_arena_ref(st->arena) : onnxio_arena_new();
    onnxio_ModelProto *copy = NULL;
    selection sel = {.threshold = x->size_threshold, .every_tensor = x->convert_attribute, .streaming = st != NULL};
    dir_plan d = {0};
    onnxio__txn *txn = NULL;
    char *dir = NULL;
    onnxio__base base = {.fd = -1};
    if (!scratch) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    if (st) copy = model;
    else if ((s = onnxio__clone(scratch, model, (void **)&copy))) goto done;
    if ((s = onnxio__visit(&copy->base, &onnxio_desc_TensorProto, select_tensor, &sel))) goto done;
    if (sel.count == 0) {
        /* Nothing moves: no data file is written at all. */
        s = st ? onnxio__save_plain_streaming(copy, path, cfg, st) : onnxio__save_plain(copy, path, cfg);
        goto done;
    }
    if ((s = plan_files(&sel, cfg, onnxio__basename(path), &d))) goto done;
    if ((s = check_stale(&sel, &d))) goto done;
    if ((s = onnxio__txn_begin(path, &txn))) goto done;
    if (cfg->fsync == ONNXIO_OFF) onnxio__txn_no_fsync(txn);
    if (onnxio__txn_is_stream(txn)) {
        s = onnxio__fail(ONNXIO_ERR_IO, "%s is not a regular file: a model with external data needs a directory", path);
        goto done;
    }
    /* Data files live beside the model as it is named (its link, if it is
     * one): a load of `path` looks for them there. */
    if (!(dir = onnxio__dirname(path))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    struct stat model_st;
    bool have_model = onnxio__sys_fstatat(AT_FDCWD, path, &model_st, 0) == 0;
    if ((s = onnxio__base_open(dir, &base))) goto done;
    for (size_t k = 0; k < d.count; k++) {
        if ((s = resolve_file(&d.files[k], &base, have_model ? &model_st : NULL))) goto done;
        /* A data file that does not exist yet but would be created as the
         * model file itself: the same directory and name. */
        struct stat a, b;
        if (!d.files[k].res.exists && strcmp(d.files[k].res.name, onnxio__basename(path)) == 0 &&
            onnxio__sys_fstat(d.files[k].res.dir_fd, &a) == 0 && onnxio__sys_fstatat(AT_FDCWD, dir, &b, 0) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            s = onnxio__fail(ONNXIO_ERR_PATH_SELF, "external data location '%s' is the model file itself",
                             d.files[k].location);
            goto done;
        }
        for (size_t j = 0; j < k; j++)
            if (d.files[j].res.exists && d.files[k].res.exists && d.files[j].res.st.st_dev == d.files[k].res.st.st_dev &&
                d.files[j].res.st.st_ino == d.files[k].res.st.st_ino) {
                s = onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "external data files '%s' and '%s' are the same file",
                                 d.files[j].location, d.files[k].location);
                goto done;
            }
    }
    if (st && (s = onnxio__stream_bind_external(st, &sel, &d, txn, cfg))) goto done;
    for (size_t k = 0; !s && k < d.count; k += FILES_PER_BATCH)
        s = write_batch(txn, &d, k, k + FILES_PER_BATCH < d.count ? k + FILES_PER_BATCH : d.count, cfg);
    /* Streamed payloads: each written at its place as it arrives. */
    if (!s && st) s = onnxio__stream_receive(st);
    for (size_t i = 0; !s && i < d.item_count; i++) {
        const out_file *f = &d.files[d.items[i].file];
        s = refer(scratch, d.items[i].tensor, f->location, d.items[i].offset, x->checksum ? f->digest : NULL);
    }
    if (s) goto done;
    s = write_main_and_commit(txn, copy, cfg, path);
    txn = NULL;
done:
    if (txn) onnxio__txn_abort(txn);
    if (s) s = onnxio__context(s, "saving %s", path);
    dir_plan_free(&d);
    selection_free(&sel);
    onnxio__base_close(&base);
    onnxio__free(dir);
    onnxio_arena_unref(scratch);
    return s;
}

onnxio_status onnxio__save_external(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *cfg)
{
    return onnxio__save_external_to(model, path, cfg, NULL);
}

/* ---- .onnxz archives ---------------------------------------------------------- */

/* With `st`, a streaming save (`model` is its copy): the tensor entries are
 * laid out and written first, the streamed ones as they come, and the
 * model, last, once they are all there. */
onnxio_status onnxio__save_archive_to(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *cfg,
                                  stream *st)
{
    uint64_t align = onnxio__save_alignment(cfg, false);
    selection sel = {.threshold = cfg->external_data.size_threshold, .every_tensor = true, .external_refused = true,
                     .streaming = st != NULL};
    onnxio_arena *scratch = st ? onnxio_arena_ref(st->arena) : onnxio_arena_new();
    onnxio_ModelProto *copy = NULL;
    onnxio__names *names = NULL;
    onnxio__zip_out *e = NULL;
    size_t n = 0;
    onnxio_buffer *model_buf = NULL;
    onnxio__txn *txn = NULL;
    onnxio__pool *pool = NULL;
    int fd = -1;
    onnxio_status s;
    if (!scratch) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    if (st) copy = model;
    else if ((s = onnxio__clone(scratch, model, (void **)&copy))) goto done;
    if ((s = onnxio__visit(&copy->base, &onnxio_desc_TensorProto, select_tensor, &sel))) goto done;
    n = sel.count + 1;
    e = onnxio__calloc(n, sizeof *e);
    names = onnxio__names_new(n);
    if (!e || !names || onnxio__names_reserve(names, ONNXIO__MODEL_ENTRY) < 0) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < sel.count; i++) {
        onnxio_TensorProto *t = sel.tensors[i];
        const char *name = onnxio__names_unique(names, onnxio__tensor_name(t));
        if (!name) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            goto done;
        }
        e[i] = (onnxio__zip_out){.name = name, .name_size = strlen(name), .src = t->raw_data.data,
                                 .size = t->raw_data.size, .keep = onnxio_buffer_ref(t->raw_data.owner)};
        /* A data_location that was present (DEFAULT: the tensor held its
         * payload) comes back present when the entry is loaded. */
        bool had_location = onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location);
        if ((s = refer(scratch, t, name, 0, NULL))) goto done;
        if (had_location && (s = add_key(scratch, t, ONNXIO__KEY_DATA_LOCATION, "DEFAULT"))) goto done;
    }
    /* Every tensor entry's place first (the model, last, is placed once it
     * is serialized, after them, not aligned): the same places whenever
     * the model is known. */
    uint64_t cd_offset = 0;
    for (size_t i = 0; i + 1 < n; i++) cd_offset = onnxio__zip_place(&e[i], cd_offset, align);
    if (!st && (s = onnxio__serialize(copy, cfg->max_depth, &model_buf))) goto done;
    if ((s = onnxio__txn_begin(path, &txn))) goto done;
    if (cfg->fsync == ONNXIO_OFF) onnxio__txn_no_fsync(txn);
    if (onnxio__txn_is_stream(txn)) {
        s = onnxio__fail(ONNXIO_ERR_IO, "%s is not a regular file: an archive is written with seeks", path);
        goto done;
    }
    if ((s = onnxio__txn_create(txn, -1, NULL, &fd))) goto done;
    if ((s = onnxio__pool_new(cfg->num_threads, &pool))) goto done;
    /* The data of every tensor entry, its CRC-32 computed on the way
     * (streamed ones: when they come). */
    for (size_t i = 0; !s && i + 1 < n; i++) {
        if (!(e[i].crc_pieces = onnxio__calloc(onnxio__crc_pieces(e[i].size), sizeof *e[i].crc_pieces))) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            break;
        }
        if (st && !e[i].src) {
            s = onnxio__stream_bind_fd(st, sel.tensors[i], fd, e[i].data, e[i].crc_pieces, path);
            continue;
        }
        onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = fd, .offset = e[i].data, .src = e[i].src,
                           .size = e[i].size, .what = path, .crc = e[i].crc_pieces};
        s = onnxio__pool_add(pool, &job);
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    pool = NULL;
    if (!s) s = s2;
    if (!s && st && !(s = onnxio__stream_bind_memory(st))) s = onnxio__stream_receive(st);
    if (!s && st) s = onnxio__serialize(copy, cfg->max_depth, &model_buf);
    if (s) goto done;
    /* The model entry, last. */
    e[n - 1] = (onnxio__zip_out){.name = ONNXIO__MODEL_ENTRY, .name_size = sizeof ONNXIO__MODEL_ENTRY - 1,
                                 .src = onnxio_buffer_data(model_buf), .size = onnxio_buffer_size(model_buf)};
    cd_offset = onnxio__zip_place(&e[n - 1], cd_offset, 1);
    if (!(e[n - 1].crc_pieces = onnxio__calloc(onnxio__crc_pieces(e[n - 1].size), sizeof *e[n - 1].crc_pieces))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    if ((s = onnxio__pool_new(1, &pool))) goto done;
    onnxio__job model_job = {.kind = ONNXIO__JOB_PWRITE, .fd = fd, .offset = e[n - 1].data, .src = e[n - 1].src,
                             .size = e[n - 1].size, .what = path, .crc = e[n - 1].crc_pieces, .not_payload = true};
    s = onnxio__pool_add(pool, &model_job);
    s2 = onnxio__pool_finish(pool);
    pool = NULL;
    if (!s) s = s2;
    if (s) goto done;
    for (size_t i = 0; i < n; i++) e[i].crc = onnxio__crc_join(e[i].crc_pieces, e[i].size);
    uint64_t end;
    if ((s = onnxio__zip_write_directory(fd, path, e, n, NULL, 0, 0, cd_offset, &end))) goto done;
    /* The padding was never written: the file is exactly what was laid out. */
    if (onnxio__sys_ftruncate(fd, end) != 0) {
        s = onnxio__fail(ONNXIO_ERR_IO, "cannot size %s: %s", path, strerror(errno));
        goto done;
    }
    if ((s = onnxio__progress_report(onnxio__progress_now(), true))) goto done;
    s = onnxio__txn_commit(txn);
    txn = NULL;
done:
    onnxio__pool_finish(pool);
    if (txn) onnxio__txn_abort(txn);
    if (s) s = onnxio__context(s, "saving %s", path);
    for (size_t i = 0; e && i < n; i++) {
        onnxio__free(e[i].crc_pieces);
        onnxio_buffer_unref(e[i].keep);
    }
    onnxio__free(e);
    onnxio_buffer_unref(model_buf);
    onnxio__names_free(names);
    selection_free(&sel);
    onnxio_arena_unref(scratch);
    return s;
}

onnxio_status onnxio__save_archive(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *cfg)
{
    return onnxio__save_archive_to(model, path, cfg, NULL);
}
