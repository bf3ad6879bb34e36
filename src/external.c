/* External data (ONNX external data convention: data_location = EXTERNAL
 * with external_data keys location, offset, length, checksum), read safely
 * on load and written on save (DESIGN.md "Files").
 *
 * Safety on load: a location must be relative, without '..' components, and
 * the opened file must lie under the base directory after symlinks are
 * resolved; offset and length are checked against the file's size before
 * anything is allocated. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static const char *tensor_name(const onnxio_TensorProto *t)
{
    return t->name.data ? t->name.data : "";
}

onnxio_status onnxio__check_location(const char *loc, size_t size)
{
    if (size == 0) return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "external data location is empty");
    if (memchr(loc, '\0', size)) return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "external data location contains a NUL byte");
    if (loc[0] == '/' || loc[0] == '\\' || (size >= 2 && loc[1] == ':'))
        return onnxio__fail(ONNXIO_ERR_PATH_ABSOLUTE, "external data location '%s' is an absolute path", loc);
    const char *p = loc, *end = loc + size;
    while (p < end) {
        const char *q = p;
        while (q < end && *q != '/' && *q != '\\') q++;
        if (q - p == 2 && p[0] == '.' && p[1] == '.')
            return onnxio__fail(ONNXIO_ERR_PATH_PARENT, "external data location '%s' has a '..' component", loc);
        p = q + 1;
    }
    return ONNXIO_OK;
}

/* Parses a decimal external_data value. */
static onnxio_status parse_u64(const onnxio_string *v, const char *key, const onnxio_TensorProto *t, uint64_t *out)
{
    uint64_t x = 0;
    if (v->size == 0) goto bad;
    for (size_t i = 0; i < v->size; i++) {
        unsigned c = (unsigned char)v->data[i];
        if (c < '0' || c > '9') goto bad;
        if (x > (UINT64_MAX - (c - '0')) / 10) goto bad;
        x = x * 10 + (c - '0');
    }
    *out = x;
    return ONNXIO_OK;
bad:
    return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': external_data %s '%.*s' is not a non-negative integer",
                        tensor_name(t), key, (int)(v->size > 64 ? 64 : v->size), v->data ? v->data : "");
}

typedef struct ext_ref {
    const onnxio_string *location;
    uint64_t offset;
    uint64_t length;
    int has_length;
} ext_ref;

static onnxio_status read_ref(const onnxio_TensorProto *t, ext_ref *r)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < t->external_data.size; i++) {
        const onnxio_StringStringEntryProto *e = t->external_data.data[i];
        const char *k = e->key.data ? e->key.data : "";
        onnxio_status s = ONNXIO_OK;
        if (strcmp(k, "location") == 0) r->location = &e->value;
        else if (strcmp(k, "offset") == 0) s = parse_u64(&e->value, "offset", t, &r->offset);
        else if (strcmp(k, "length") == 0) {
            s = parse_u64(&e->value, "length", t, &r->length);
            r->has_length = 1;
        }
        if (s) return s;
    }
    if (!r->location)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': data_location is EXTERNAL but external_data has no location",
                            tensor_name(t));
    onnxio_status s = onnxio__check_location(r->location->data ? r->location->data : "", r->location->size);
    if (s) return onnxio__context(s, "tensor '%s'", tensor_name(t));
    return ONNXIO_OK;
}

/* An opened data file, kept for the tensors that share it. */
typedef struct data_file {
    char *location;
    int fd;
    uint64_t size;
    onnxio_buffer *map; /* no_copy: the whole file, mapped once */
    struct data_file *next;
} data_file;

typedef struct load_ctx {
    const char *base_dir;
    char *base_real;
    const onnxio_parse_options *opts;
    data_file *files;
    onnxio__payloads *payloads;
} load_ctx;

static onnxio_status open_data_file(load_ctx *c, const onnxio_TensorProto *t, const char *location, data_file **out)
{
    for (data_file *f = c->files; f; f = f->next)
        if (strcmp(f->location, location) == 0) {
            *out = f;
            return ONNXIO_OK;
        }
    char *path = onnxio__path_join(c->base_dir, location);
    if (!path) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        onnxio_status s = onnxio__fail(err == ENOENT ? ONNXIO_ERR_NOT_FOUND : ONNXIO_ERR_IO,
                                       "tensor '%s': cannot open external data file %s: %s", tensor_name(t), path, strerror(err));
        free(path);
        return s;
    }
    /* Where did the open really land, after every symlink? */
    char real[PATH_MAX];
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, real, sizeof real - 1);
    if (n > 0) real[n] = '\0';
    else if (!realpath(path, real)) {
        int err = errno;
        close(fd);
        free(path);
        return onnxio__fail(ONNXIO_ERR_IO, "tensor '%s': cannot resolve %s: %s", tensor_name(t), location, strerror(err));
    }
    size_t bl = strlen(c->base_real);
    int inside = strncmp(real, c->base_real, bl) == 0 && (real[bl] == '/' || (bl == 1 && c->base_real[0] == '/'));
    if (!inside) {
        close(fd);
        onnxio_status s = onnxio__fail(ONNXIO_ERR_PATH_ESCAPES,
                                       "tensor '%s': external data location '%s' resolves to %s, outside the base directory %s",
                                       tensor_name(t), location, real, c->base_real);
        free(path);
        return s;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        onnxio_status s = onnxio__fail(ONNXIO_ERR_IO, "tensor '%s': external data %s is not a regular file", tensor_name(t), path);
        free(path);
        return s;
    }
    data_file *f = calloc(1, sizeof *f);
    if (!f || !(f->location = strdup(location))) {
        free(f);
        close(fd);
        free(path);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    f->fd = fd;
    f->size = (uint64_t)st.st_size;
    if (c->opts && c->opts->no_copy) {
        onnxio_status s = onnxio__map_file(path, &f->map, NULL);
        if (s) {
            close(fd);
            free(f->location);
            free(f);
            free(path);
            return s;
        }
        f->size = onnxio_buffer_size(f->map);
    }
    free(path);
    f->next = c->files;
    c->files = f;
    *out = f;
    return ONNXIO_OK;
}

static onnxio_status load_tensor(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    load_ctx *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    if (!onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) ||
        t->data_location != ONNXIO_TensorProto_DataLocation_EXTERNAL)
        return ONNXIO_OK;
    ext_ref r;
    onnxio_status s = read_ref(t, &r);
    if (s) return s;
    data_file *f;
    if ((s = open_data_file(c, t, r.location->data, &f))) return s;
    if (r.offset > f->size)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_RANGE, "tensor '%s': external data offset %llu is past the end of %s (%llu bytes)",
                            tensor_name(t), (unsigned long long)r.offset, r.location->data, (unsigned long long)f->size);
    uint64_t length = r.has_length ? r.length : f->size - r.offset;
    if (length > f->size - r.offset)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_RANGE,
                            "tensor '%s': external data offset %llu + length %llu runs past the end of %s (%llu bytes)",
                            tensor_name(t), (unsigned long long)r.offset, (unsigned long long)length, r.location->data,
                            (unsigned long long)f->size);
    if (c->opts && c->opts->skip_raw_data) return ONNXIO_OK; /* stays external */
    onnxio__payload_src src = {
        .data = f->map ? onnxio_buffer_data(f->map) + r.offset : NULL,
        .owner = f->map,
        .fd = f->fd,
        .offset = r.offset,
        .size = length,
        .external = true,
        .what = f->location,
    };
    return onnxio__payload_take(c->payloads, t, &src);
}

ONNXIO_API onnxio_status onnxio_load_external_data(onnxio_ModelProto *model, const char *base_dir,
                                                   const onnxio_parse_options *opts)
{
    if (!model || !base_dir) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load_external_data: NULL argument");
    load_ctx c = {base_dir, NULL, opts, NULL, NULL};
    c.base_real = realpath(base_dir, NULL);
    if (!c.base_real)
        return onnxio__fail(errno == ENOENT ? ONNXIO_ERR_NOT_FOUND : ONNXIO_ERR_IO, "base directory %s: %s", base_dir,
                            strerror(errno));
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(opts ? opts->num_threads : 0, &pool);
    if (!s) s = onnxio__payloads_new(opts, pool, &c.payloads);
    if (!s) s = onnxio__visit(&model->base, &onnxio_desc_TensorProto, load_tensor, &c);
    if (!s) s = onnxio__payloads_resolve(c.payloads);
    /* The reads must be over before the files close. */
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    onnxio__payloads_free(c.payloads);
    for (data_file *f = c.files, *next; f; f = next) {
        next = f->next;
        close(f->fd);
        onnxio_buffer_unref(f->map);
        free(f->location);
        free(f);
    }
    free(c.base_real);
    return s;
}

/* ---- save ----------------------------------------------------------- */

typedef struct save_ctx {
    onnxio_arena *arena;
    const onnxio_external_data_options *opts;
    uint64_t threshold;
    uint64_t alignment;
    onnxio__atomic_file file;
    uint64_t offset;
    size_t count;
} save_ctx;

static onnxio_status add_entry(onnxio_arena *arena, onnxio_TensorProto *t, const char *key, const char *value)
{
    onnxio_StringStringEntryProto *e = onnxio_list_add(arena, &t->external_data, &onnxio_desc_StringStringEntryProto);
    if (!e || onnxio_string_set(arena, &e->key, key, strlen(key)) ||
        onnxio_string_set(arena, &e->value, value, strlen(value)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_key);
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_value);
    return ONNXIO_OK;
}

static onnxio_status externalize(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    save_ctx *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    /* As the onnx package does by default: initializers of every graph. */
    if (!parent || parent->desc != &onnxio_desc_GraphProto || via->index != ONNXIO_FIELD_GraphProto_initializer)
        return ONNXIO_OK;
    if (!onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data) || t->raw_data.size < c->threshold) return ONNXIO_OK;
    if (!t->raw_data.data)
        return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", tensor_name(t));
    if (c->alignment > 1 && c->offset % c->alignment) {
        static const uint8_t zeros[4096];
        uint64_t pad = c->alignment - c->offset % c->alignment;
        while (pad) {
            size_t n = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
            onnxio_status s = onnxio__write_all(c->file.fd, zeros, n, "external data");
            if (s) return s;
            pad -= n;
            c->offset += n;
        }
    }
    onnxio_status s = onnxio__write_all(c->file.fd, t->raw_data.data, t->raw_data.size, "external data");
    if (s) return s;
    char num[32];
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_external_data]);
    if ((s = add_entry(c->arena, t, "location", c->opts->location))) return s;
    snprintf(num, sizeof num, "%llu", (unsigned long long)c->offset);
    if ((s = add_entry(c->arena, t, "offset", num))) return s;
    snprintf(num, sizeof num, "%llu", (unsigned long long)t->raw_data.size);
    if ((s = add_entry(c->arena, t, "length", num))) return s;
    c->offset += t->raw_data.size;
    c->count++;
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_raw_data]);
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    return ONNXIO_OK;
}

/* Rewrites `model` (a scratch copy) so that its large payloads live in the
 * data file opts->location under `dir`. The data file is left as a written
 * temporary file in *data; the caller commits it once the model is written
 * too, or aborts it. */
onnxio_status onnxio__save_external(onnxio_arena *arena, onnxio_ModelProto *model, const char *dir,
                                    const onnxio_serialize_options *opts, onnxio__atomic_file *data)
{
    const onnxio_external_data_options *x = &opts->external_data;
    onnxio_status s = onnxio__check_location(x->location, strlen(x->location));
    if (s) return s;
    save_ctx c = {arena, x, x->size_threshold ? x->size_threshold : ONNXIO_DEFAULT_EXTERNAL_THRESHOLD,
                  opts->tensor_buffer.alignment, {-1, NULL, NULL}, 0, 0};
    char *path = onnxio__path_join(dir, x->location);
    if (!path) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    s = onnxio__atomic_open(path, &c.file);
    free(path);
    if (s) return s;
    s = onnxio__visit(&model->base, &onnxio_desc_TensorProto, externalize, &c);
    if (s) {
        onnxio__atomic_abort(&c.file);
        return s;
    }
    *data = c.file;
    return ONNXIO_OK;
}
