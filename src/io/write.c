/* What the save pipeline (save.c) and the container writers share: the
 * encoder's file sink (the structure staged, large payloads written at
 * their offsets on the pool), the model file of a transaction, the
 * external data keys a moved tensor gets, and the names of per-tensor
 * files and entries. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/save.h"

/* Tensor names longer than this are cut in file and entry names (NAME_MAX
 * is 255; the uniqueness suffix and temporary-file affixes need room). */
#define MAX_NAME_STEM 200

const char *onnxio__dims_text(const onnxio_TensorProto *t, char *buf, size_t size)
{
    size_t at = 0;
    at += (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < t->dims.size && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? ", " : "", (long long)t->dims.data[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

/* ---- the file sink ----------------------------------------------------------- */

typedef struct file_sink {
    int fd;
    onnxio__pool *pool;  /* NULL: everything written now */
    uint64_t threshold;  /* kept runs at least this large become pool jobs */
    const char *what;
    bool sequential;     /* a pipe or a terminal: write(2) in order, no offsets */
} file_sink;

/* onnxio__sink.out: staged bytes are written now (the buffer is reused);
 * kept runs are queued on the pool when large enough. */
static onnxio_status file_out(void *user, const uint8_t *data, size_t n, uint64_t at, bool kept)
{
    file_sink *f = user;
    if (f->sequential) return onnxio__write_all(f->fd, data, n, f->what);
    onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = f->fd, .offset = at, .src = data, .size = n, .what = f->what};
    return kept && f->pool && n >= f->threshold ? onnxio__pool_add(f->pool, &job) : onnxio__job_run(&job);
}

onnxio_status onnxio__write_message(void *msg, int fd, const char *what, onnxio__pool *pool, uint64_t threshold,
                                    bool sequential, onnxio_status (*defer)(void *, const onnxio_TensorProto *, uint64_t),
                                    void *defer_user)
{
    size_t cap = 1u << 20;
    uint8_t *staging = onnxio__malloc(cap);
    if (!staging) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    file_sink f = {.fd = fd, .pool = sequential ? NULL : pool, .threshold = threshold,
                   .what = what ? what : "the output file", .sequential = sequential};
    onnxio__sink sink = {.buf = staging, .cap = cap, .out = file_out, .out_user = &f,
                         .defer = sequential ? NULL : defer, .defer_user = defer_user};
    onnxio_status s = onnxio__encode(msg, &sink);
    if (!s) s = onnxio__sink_flush(&sink);
    onnxio__free(staging);
    return s;
}

onnxio_status onnxio__write_main(onnxio__txn *txn, void *msg, const onnxio_serialize_options *cfg,
                                 onnxio_status (*defer)(void *, const onnxio_TensorProto *, uint64_t), void *defer_user,
                                 int *fd)
{
    uint64_t size;
    onnxio__pool *pool = NULL;
    *fd = -1;
    onnxio_status s = onnxio__size_pass(msg, cfg->max_depth, &size);
    if (!s) s = onnxio__txn_create(txn, -1, NULL, fd);
    if (!s) s = onnxio__pool_new(cfg->num_threads, &pool);
    if (!s)
        s = onnxio__write_message(msg, *fd, "the model file", pool, cfg->raw_data_threshold, onnxio__txn_is_stream(txn),
                                  defer, defer_user);
    /* Every queued write is over before anything is synced or renamed. */
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    /* The last hole may end the file. */
    if (!s && defer && !onnxio__txn_is_stream(txn) && onnxio__sys_ftruncate(*fd, size) != 0)
        s = onnxio__fail(ONNXIO_ERR_IO, "cannot size the model file to %llu bytes: %s", (unsigned long long)size,
                         strerror(errno));
    return s;
}

onnxio_status onnxio__write_at(int fd, uint64_t offset, const void *data, uint64_t size, uint32_t *crc, int threads,
                               const char *what)
{
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(threads, &pool);
    if (s) return s;
    onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = fd, .offset = offset, .src = data, .size = size,
                       .what = what, .crc = crc};
    s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    return s ? s : s2;
}

/* ---- external data keys ----------------------------------------------------- */

onnxio_status onnxio__add_key(onnxio_arena *arena, onnxio_TensorProto *t, const char *key, const char *value)
{
    onnxio_StringStringEntryProto *e = onnxio_list_add(arena, &t->external_data, &onnxio_desc_StringStringEntryProto);
    if (!e || onnxio_string_set(arena, &e->key, key, strlen(key)) ||
        onnxio_string_set(arena, &e->value, value, strlen(value)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_key);
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_value);
    return ONNXIO_OK;
}

onnxio_status onnxio__refer(onnxio_arena *arena, onnxio_TensorProto *t, const char *location, uint64_t offset,
                           const char *checksum)
{
    char num[32];
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_external_data]);
    onnxio_status s = onnxio__add_key(arena, t, "location", location);
    snprintf(num, sizeof num, "%llu", (unsigned long long)offset);
    if (!s) s = onnxio__add_key(arena, t, "offset", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)t->raw_data.size);
    if (!s) s = onnxio__add_key(arena, t, "length", num);
    if (!s && checksum) s = onnxio__add_key(arena, t, "checksum", checksum);
    if (s) return s;
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_raw_data]);
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    return ONNXIO_OK;
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

