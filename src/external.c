/* External data (ONNX external data convention: data_location = EXTERNAL
 * with external_data keys location, offset, length, checksum), read safely
 * on load and written on save (docs/design.md "Files").
 *
 * Safety, on load and on save: a location must be relative, without '..'
 * components; the file must lie under the base directory after symlinks are
 * resolved; it must not have other hard links (one could be a file anywhere
 * else); it must not be the model file itself. On load, offset and length
 * are checked against the file's size, and length against the tensor's type
 * and shape, for every tensor before any payload is allocated or read; a
 * "checksum" key is verified, when asked, before any payload of its file is
 * used. On save every data file is written in full as a temporary file; the
 * caller renames them only once the model is written too. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "internal.h"

/* onnx-ml.proto: "Offset values SHOULD be multiples 4096 (page size) to
 * enable mmap support." */
#define EXTERNAL_DEFAULT_ALIGNMENT 4096
/* Temporary data files written before the pool is drained and they are
 * closed: bounds the descriptors held in one-file-per-tensor mode. */
#define FILES_PER_BATCH 64
/* Tensor names longer than this are cut in file names (NAME_MAX is 255
 * and the uniqueness suffix and temporary-file affixes need room). */
#define MAX_NAME_STEM 200

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

/* True when the resolved path `real` lies under the resolved directory
 * `base_real`. */
static int path_inside(const char *real, const char *base_real)
{
    size_t bl = strlen(base_real);
    if (bl == 1 && base_real[0] == '/') return real[0] == '/';
    return strncmp(real, base_real, bl) == 0 && real[bl] == '/';
}

/* ---- SHA-1 (the "checksum" key) ------------------------------------- */

typedef struct sha1 {
    EVP_MD_CTX *ctx;
} sha1;

static onnxio_status sha1_begin(sha1 *h)
{
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha1(), NULL) != 1) {
        EVP_MD_CTX_free(h->ctx);
        h->ctx = NULL;
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot start a SHA-1 digest");
    }
    return ONNXIO_OK;
}

static onnxio_status sha1_update(sha1 *h, const void *data, size_t size)
{
    if (size && EVP_DigestUpdate(h->ctx, data, size) != 1)
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "SHA-1 digest failed");
    return ONNXIO_OK;
}

/* Feeds `n` zero bytes (the padding between aligned payloads). */
static onnxio_status sha1_zeros(sha1 *h, uint64_t n)
{
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        onnxio_status s = sha1_update(h, zeros, k);
        if (s) return s;
        n -= k;
    }
    return ONNXIO_OK;
}

/* Finishes into 40 lowercase hex digits and a NUL; frees the context. */
static onnxio_status sha1_end(sha1 *h, char hex[41])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int ok = EVP_DigestFinal_ex(h->ctx, md, &n) == 1 && n == 20;
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    if (!ok) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "SHA-1 digest failed");
    for (unsigned i = 0; i < 20; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return ONNXIO_OK;
}

static void sha1_abort(sha1 *h)
{
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
}

onnxio_status onnxio__sha1_hex(const void *data, uint64_t size, char hex[41])
{
    sha1 h;
    onnxio_status s = sha1_begin(&h);
    const uint8_t *p = data;
    for (uint64_t at = 0; !s && at < size; at += 1u << 30)
        s = sha1_update(&h, p + at, size - at < (1u << 30) ? (size_t)(size - at) : (1u << 30));
    if (s) {
        sha1_abort(&h);
        return s;
    }
    return sha1_end(&h, hex);
}

/* ---- tensor sizes --------------------------------------------------- */

/* Bits of one element of `data_type`; 0 when the size is not fixed
 * (UNDEFINED, STRING) or the type is unknown. */
static unsigned element_bits(int32_t data_type)
{
    switch (data_type) {
    case ONNXIO_TensorProto_DataType_UINT2:
    case ONNXIO_TensorProto_DataType_INT2: return 2;
    case ONNXIO_TensorProto_DataType_UINT4:
    case ONNXIO_TensorProto_DataType_INT4:
    case ONNXIO_TensorProto_DataType_FLOAT4E2M1: return 4;
    case ONNXIO_TensorProto_DataType_UINT8:
    case ONNXIO_TensorProto_DataType_INT8:
    case ONNXIO_TensorProto_DataType_BOOL:
    case ONNXIO_TensorProto_DataType_FLOAT8E4M3FN:
    case ONNXIO_TensorProto_DataType_FLOAT8E4M3FNUZ:
    case ONNXIO_TensorProto_DataType_FLOAT8E5M2:
    case ONNXIO_TensorProto_DataType_FLOAT8E5M2FNUZ:
    case ONNXIO_TensorProto_DataType_FLOAT8E8M0: return 8;
    case ONNXIO_TensorProto_DataType_UINT16:
    case ONNXIO_TensorProto_DataType_INT16:
    case ONNXIO_TensorProto_DataType_FLOAT16:
    case ONNXIO_TensorProto_DataType_BFLOAT16: return 16;
    case ONNXIO_TensorProto_DataType_FLOAT:
    case ONNXIO_TensorProto_DataType_INT32:
    case ONNXIO_TensorProto_DataType_UINT32: return 32;
    case ONNXIO_TensorProto_DataType_INT64:
    case ONNXIO_TensorProto_DataType_UINT64:
    case ONNXIO_TensorProto_DataType_DOUBLE:
    case ONNXIO_TensorProto_DataType_COMPLEX64: return 64;
    case ONNXIO_TensorProto_DataType_COMPLEX128: return 128;
    default: return 0;
    }
}

/* Refuses a payload length that is not what the tensor's data_type and
 * dims need (elements x element size; sub-byte types packed, rounded up to
 * whole bytes). Tensors of variable-size or unknown types, and segments of
 * a larger tensor, are not checked. */
onnxio_status onnxio__external_check_length(const onnxio_TensorProto *t, uint64_t length, const char *location)
{
    unsigned bits = element_bits(t->data_type);
    if (!bits || t->segment) return ONNXIO_OK;
    uint64_t n = 1;
    int overflow = 0;
    for (size_t i = 0; i < t->dims.size; i++) {
        int64_t d = t->dims.data[i];
        if (d < 0)
            return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': dimension %zu is negative (%lld)", tensor_name(t), i,
                                (long long)d);
        if (d == 0) {
            n = 0;
            overflow = 0;
            break;
        }
        if (n > UINT64_MAX / (uint64_t)d) overflow = 1;
        else n *= (uint64_t)d;
    }
    /* ceil(n * bits / 8) without overflowing n * bits. */
    uint64_t want = n / 8 * bits + (n % 8 * bits + 7) / 8;
    if (overflow || n / 8 > UINT64_MAX / bits || want < n / 8 * bits)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                            "tensor '%s': its shape has more elements than any file can hold (external data %s)",
                            tensor_name(t), location);
    if (length != want)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                            "tensor '%s': external data length %llu in %s does not match its type and shape (%llu bytes)",
                            tensor_name(t), (unsigned long long)length, location, (unsigned long long)want);
    return ONNXIO_OK;
}

onnxio_status onnxio__external_check_range(const onnxio_TensorProto *t, const onnxio__external_ref *r, uint64_t size,
                                           const char *where, uint64_t *length)
{
    if (r->offset > size)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_RANGE, "tensor '%s': external data offset %llu is past the end of %s (%llu bytes)",
                            tensor_name(t), (unsigned long long)r->offset, where, (unsigned long long)size);
    *length = r->has_length ? r->length : size - r->offset;
    if (*length > size - r->offset)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_RANGE,
                            "tensor '%s': external data offset %llu + length %llu runs past the end of %s (%llu bytes)",
                            tensor_name(t), (unsigned long long)r->offset, (unsigned long long)*length, where,
                            (unsigned long long)size);
    return onnxio__external_check_length(t, *length, where);
}

/* ---- load ----------------------------------------------------------- */

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

onnxio_status onnxio__external_ref_read(const onnxio_TensorProto *t, onnxio__external_ref *r)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < t->external_data.size; i++) {
        const onnxio_StringStringEntryProto *e = t->external_data.data[i];
        const char *k = e->key.data ? e->key.data : "";
        onnxio_status s = ONNXIO_OK;
        if (strcmp(k, "location") == 0) r->location = &e->value;
        else if (strcmp(k, "checksum") == 0) r->checksum = &e->value;
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
    int hashed;         /* digest computed */
    char digest[41];
    struct data_file *next;
} data_file;

/* A checked external payload waiting to be loaded. */
typedef struct ext_item {
    onnxio_TensorProto *tensor;
    data_file *file;
    uint64_t offset, length;
} ext_item;

typedef struct load_ctx {
    const char *base_dir;
    char *base_real;
    const onnxio_parse_options *opts;
    int have_model;
    dev_t model_dev;
    ino_t model_ino;
    data_file *files;
    ext_item *items;
    size_t count, capacity;
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
    /* O_NONBLOCK: a FIFO planted as a data file must not hang the open; it
     * changes nothing for the regular files that pass the checks below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    onnxio_status s = ONNXIO_OK;
    if (fd < 0) {
        int err = errno;
        s = onnxio__fail(err == ENOENT || err == ENOTDIR ? ONNXIO_ERR_NOT_FOUND : ONNXIO_ERR_IO,
                         "tensor '%s': cannot open external data file %s: %s", tensor_name(t), path, strerror(err));
        onnxio__free(path);
        return s;
    }
    /* Where did the open really land, after every symlink? */
    char real[PATH_MAX];
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, real, sizeof real - 1);
    struct stat st;
    if (n > 0) real[n] = '\0';
    else if (!realpath(path, real)) {
        int err = errno;
        s = onnxio__fail(ONNXIO_ERR_IO, "tensor '%s': cannot resolve %s: %s", tensor_name(t), location, strerror(err));
        goto fail;
    }
    if (!path_inside(real, c->base_real)) {
        s = onnxio__fail(ONNXIO_ERR_PATH_ESCAPES,
                         "tensor '%s': external data location '%s' resolves to %s, outside the base directory %s",
                         tensor_name(t), location, real, c->base_real);
        goto fail;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        s = onnxio__fail(ONNXIO_ERR_IO, "tensor '%s': external data %s is not a regular file", tensor_name(t), path);
        goto fail;
    }
    if (c->have_model && st.st_dev == c->model_dev && st.st_ino == c->model_ino) {
        s = onnxio__fail(ONNXIO_ERR_PATH_SELF, "tensor '%s': external data location '%s' is the model file itself",
                         tensor_name(t), location);
        goto fail;
    }
    /* Another name of the same inode can be anywhere on the file system:
     * the base directory would not bound what is read. */
    if (st.st_nlink > 1) {
        s = onnxio__fail(ONNXIO_ERR_PATH_LINK, "tensor '%s': external data file %s has %llu hard links", tensor_name(t),
                         path, (unsigned long long)st.st_nlink);
        goto fail;
    }
    data_file *f = onnxio__calloc(1, sizeof *f);
    if (!f || !(f->location = onnxio__strdup(location))) {
        onnxio__free(f);
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    f->fd = fd;
    f->size = (uint64_t)st.st_size;
    if (c->opts && c->opts->no_copy) {
        /* Mapped from the descriptor that passed the checks, not reopened
         * by name. */
        if ((s = onnxio__map_fd(fd, path, &f->map))) {
            onnxio__free(f->location);
            onnxio__free(f);
            goto fail;
        }
        f->size = onnxio_buffer_size(f->map);
    }
    onnxio__free(path);
    f->next = c->files;
    c->files = f;
    *out = f;
    return ONNXIO_OK;
fail:
    close(fd);
    onnxio__free(path);
    return s;
}

/* The SHA-1 of the whole data file, computed once. */
static onnxio_status hash_file(data_file *f)
{
    if (f->hashed) return ONNXIO_OK;
    sha1 h;
    onnxio_status s = sha1_begin(&h);
    if (s) return s;
    if (f->map) s = sha1_update(&h, onnxio_buffer_data(f->map), onnxio_buffer_size(f->map));
    else {
        size_t cap = 1u << 20;
        uint8_t *buf = onnxio__malloc(cap);
        if (!buf) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        for (uint64_t at = 0; !s && at < f->size;) {
            size_t want = f->size - at < cap ? (size_t)(f->size - at) : cap;
            ssize_t n = pread(f->fd, buf, want, (off_t)at);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                s = onnxio__fail(ONNXIO_ERR_IO, "cannot read %s to verify its checksum: %s", f->location,
                                 n < 0 ? strerror(errno) : "the file is shorter than expected");
                break;
            }
            s = sha1_update(&h, buf, (size_t)n);
            at += (uint64_t)n;
        }
        onnxio__free(buf);
    }
    if (s) {
        sha1_abort(&h);
        return s;
    }
    if ((s = sha1_end(&h, f->digest))) return s;
    f->hashed = 1;
    return ONNXIO_OK;
}

static onnxio_status verify_checksum(data_file *f, const onnxio_TensorProto *t, const onnxio_string *want)
{
    onnxio_status s = hash_file(f);
    if (s) return s;
    int same = want->size == 40;
    for (size_t i = 0; same && i < 40; i++) same = tolower((unsigned char)want->data[i]) == f->digest[i];
    if (!same)
        return onnxio__fail(ONNXIO_ERR_CHECKSUM, "tensor '%s': external data file %s has SHA-1 %s, its checksum key says '%.*s'",
                            tensor_name(t), f->location, f->digest, (int)(want->size > 64 ? 64 : want->size),
                            want->data ? want->data : "");
    return ONNXIO_OK;
}

/* First pass: every reference is checked (and its file opened) before any
 * payload is allocated or read. */
static onnxio_status check_tensor(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    load_ctx *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    if (!onnxio__is_external(t)) return ONNXIO_OK;
    onnxio__external_ref r;
    onnxio_status s = onnxio__external_ref_read(t, &r);
    if (s) return s;
    data_file *f;
    if ((s = open_data_file(c, t, r.location->data, &f))) return s;
    uint64_t length;
    if ((s = onnxio__external_check_range(t, &r, f->size, r.location->data, &length))) return s;
    if (r.checksum && c->opts && c->opts->verify_checksum && (s = verify_checksum(f, t, r.checksum))) return s;
    if (c->opts && c->opts->skip_raw_data) return ONNXIO_OK; /* stays external */
    if (!onnxio__grow((void **)&c->items, &c->capacity, c->count, sizeof *c->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->items[c->count++] = (ext_item){t, f, r.offset, length};
    return ONNXIO_OK;
}

onnxio_status onnxio__load_external(onnxio_message *root, const char *base_dir, const onnxio_parse_options *opts,
                                    const char *model_path)
{
    load_ctx c;
    memset(&c, 0, sizeof c);
    c.base_dir = base_dir;
    c.opts = opts;
    c.base_real = onnxio__realpath(base_dir);
    if (!c.base_real)
        return onnxio__fail(errno == ENOENT ? ONNXIO_ERR_NOT_FOUND : ONNXIO_ERR_IO, "base directory %s: %s", base_dir,
                            strerror(errno));
    struct stat st;
    if (model_path && stat(model_path, &st) == 0) {
        c.have_model = 1;
        c.model_dev = st.st_dev;
        c.model_ino = st.st_ino;
    }
    onnxio_status s = onnxio__visit(root, &onnxio_desc_TensorProto, check_tensor, &c);
    if (!s && c.count) {
        onnxio__pool *pool = NULL;
        onnxio__payloads *payloads = NULL;
        s = onnxio__pool_new(opts ? opts->num_threads : 0, &pool);
        if (!s) s = onnxio__payloads_new(opts, pool, &payloads);
        for (size_t i = 0; !s && i < c.count; i++) {
            ext_item *it = &c.items[i];
            onnxio__payload_src src = {
                .data = it->file->map ? onnxio_buffer_data(it->file->map) + it->offset : NULL,
                .owner = it->file->map,
                .fd = it->file->fd,
                .offset = it->offset,
                .size = it->length,
                .external = true,
                .what = it->file->location,
            };
            s = onnxio__payload_take(payloads, it->tensor, &src);
        }
        if (!s) s = onnxio__payloads_resolve(payloads);
        /* The reads must be over before the files close. */
        onnxio_status s2 = onnxio__pool_finish(pool);
        if (!s) s = s2;
        onnxio__payloads_free(payloads);
    }
    onnxio__free(c.items);
    for (data_file *f = c.files, *next; f; f = next) {
        next = f->next;
        close(f->fd);
        onnxio_buffer_unref(f->map);
        onnxio__free(f->location);
        onnxio__free(f);
    }
    onnxio__free(c.base_real);
    return s;
}

ONNXIO_API onnxio_status onnxio_load_external_data(onnxio_ModelProto *model, const char *base_dir,
                                                   const onnxio_parse_options *opts)
{
    if (!model || !base_dir) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load_external_data: NULL argument");
    onnxio__clear_error();
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    return onnxio__load_external(&model->base, base_dir, &cfg, NULL);
}

ONNXIO_API onnxio_status onnxio_load_tensor_external_data(onnxio_TensorProto *tensor, const char *base_dir,
                                                          const onnxio_parse_options *opts)
{
    if (!tensor || !base_dir)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load_tensor_external_data: NULL argument");
    onnxio__clear_error();
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    /* A TensorProto holds no other TensorProto: the visit is this tensor. */
    return onnxio__load_external(&tensor->base, base_dir, &cfg, NULL);
}

/* ---- save ----------------------------------------------------------- */

/* One payload moving to a data file. */
typedef struct out_item {
    onnxio_TensorProto *tensor;
    size_t file;
    uint64_t offset;
} out_item;

typedef struct out_file {
    char *location; /* relative to the model's directory */
    onnxio__atomic_file af;
    uint64_t size;
    size_t first, count; /* its payloads: items[first, first + count) */
    char digest[41];
} out_file;

struct onnxio__data_files {
    out_file *files;
    size_t count;
};

typedef struct save_ctx {
    const onnxio_external_data_options *x;
    uint64_t threshold;
    out_item *items;
    size_t count, capacity;
    /* tensors still external (never loaded): they must not point at a file
     * this save replaces */
    onnxio_TensorProto **stale;
    size_t stale_count, stale_capacity;
} save_ctx;

static onnxio_status select_tensor(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    save_ctx *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    int has_raw = onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    if (!has_raw && onnxio__is_external(t)) {
        if (!onnxio__grow((void **)&c->stale, &c->stale_capacity, c->stale_count, sizeof *c->stale))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        c->stale[c->stale_count++] = t;
        return ONNXIO_OK;
    }
    /* As the onnx package does by default: initializers of every graph. */
    if (!c->x->convert_attribute &&
        (!parent || parent->desc != &onnxio_desc_GraphProto || via->index != ONNXIO_FIELD_GraphProto_initializer))
        return ONNXIO_OK;
    if (!has_raw || t->raw_data.size < c->threshold) return ONNXIO_OK;
    if (!t->raw_data.data)
        return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", tensor_name(t));
    if (!onnxio__grow((void **)&c->items, &c->capacity, c->count, sizeof *c->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->items[c->count++] = (out_item){t, 0, 0};
    return ONNXIO_OK;
}

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

/* Adds `name` (the set takes it); 0 when it was there already (or on OOM,
 * -1, and the set frees it). */
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
    if (*slot) return 0;
    *slot = name;
    set->count++;
    return 1;
}

int onnxio__names_reserve(onnxio__names *set, const char *name)
{
    char *copy = onnxio__strdup(name);
    if (!copy) return -1;
    int r = set_add(set, copy);
    if (r == 0) onnxio__free(copy);
    return r;
}

const char *onnxio__names_unique(onnxio__names *set, const char *tensor)
{
    size_t n = strlen(tensor);
    if (n > MAX_NAME_STEM) n = MAX_NAME_STEM;
    char *stem = onnxio__malloc(n + sizeof "tensor");
    if (!stem) return NULL;
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
        onnxio__free(name);
        if (!(name = onnxio__malloc(strlen(stem) + 24))) {
            r = -1;
            break;
        }
        sprintf(name, "%s_%llu", stem, k);
        r = set_add(set, name);
    }
    onnxio__free(stem);
    return r == 1 ? name : NULL;
}

/* `n` planned files (at least one slot), none opened yet. */
static out_file *new_files(size_t n)
{
    out_file *files = onnxio__calloc(n ? n : 1, sizeof *files);
    for (size_t k = 0; files && k < (n ? n : 1); k++) files[k].af.fd = -1;
    return files;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
    return a > 1 && x % a ? x + (a - x % a) : x;
}

/* Decides the data files and every payload's file and offset. */
static onnxio_status plan(save_ctx *c, const onnxio_serialize_options *opts, const char *model_base,
                          onnxio__data_files *d)
{
    const onnxio_external_data_options *x = c->x;
    uint64_t alignment = opts->alignment ? opts->alignment : EXTERNAL_DEFAULT_ALIGNMENT;
    if (x->all_tensors_to_one_file == ONNXIO_OFF) {
        d->files = new_files(c->count);
        onnxio__names *set = onnxio__names_new(c->count + 1);
        onnxio_status s = ONNXIO_OK;
        if (!d->files || !set || onnxio__names_reserve(set, model_base) < 0)
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        for (size_t i = 0; !s && i < c->count; i++) {
            out_file *f = &d->files[i];
            const char *name = onnxio__names_unique(set, tensor_name(c->items[i].tensor));
            if (!name || !(f->location = onnxio__strdup(name))) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            f->size = c->items[i].tensor->raw_data.size;
            f->first = i;
            f->count = 1;
            c->items[i].file = i;
            d->count = i + 1;
        }
        onnxio__names_free(set);
        return s;
    }

    uint64_t limit = x->max_file_size;
    size_t file = 0;
    uint64_t end = 0;
    for (size_t i = 0; i < c->count; i++) {
        uint64_t size = c->items[i].tensor->raw_data.size;
        uint64_t at = align_up(end, alignment);
        /* A payload that would cross the limit starts the next file; one
         * larger than the limit gets a file of its own. */
        if (limit && end > 0 && (at > limit || size > limit - at)) {
            file++;
            at = 0;
        }
        c->items[i].file = file;
        c->items[i].offset = at;
        end = at + size;
    }
    size_t nfiles = limit ? (c->count ? file + 1 : 0) : 1;
    d->files = new_files(nfiles);
    if (!d->files) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    /* "<stem>-00001-of-0000N<ext>": the extension is the last '.' of the
     * file name part (not a leading one). */
    const char *slash = strrchr(x->location, '/');
    const char *fname = slash ? slash + 1 : x->location;
    const char *dot = strrchr(fname, '.');
    if (!dot || dot == fname) dot = fname + strlen(fname);
    for (size_t k = 0; k < nfiles; k++) {
        out_file *f = &d->files[k];
        if (!limit) f->location = onnxio__strdup(x->location);
        else {
            size_t n = strlen(x->location) + 64;
            if ((f->location = onnxio__malloc(n)))
                snprintf(f->location, n, "%.*s-%05zu-of-%05zu%s", (int)(dot - x->location), x->location, k + 1, nfiles,
                         dot);
        }
        d->count = k + 1;
        if (!f->location) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < c->count; i++) {
        out_file *f = &d->files[c->items[i].file];
        if (f->count == 0) f->first = i;
        f->count++;
        f->size = c->items[i].offset + c->items[i].tensor->raw_data.size;
    }
    return ONNXIO_OK;
}

/* The save-side safety checks of one data file under the model's
 * directory `dir` (resolved: dir_real): the location's own rules, parent
 * directories that stay inside, no existing symlink leading outside or hard
 * link, not the model file. */
static onnxio_status check_target(const char *dir, const char *dir_real, const char *model_base,
                                  const struct stat *model_st, const char *location)
{
    onnxio_status s = onnxio__check_location(location, strlen(location));
    if (s) return s;
    char *path = onnxio__path_join(dir, location);
    char *parent = path ? onnxio__dirname(path) : NULL;
    char *parent_real = NULL;
    if (!path || !parent) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    if (!(parent_real = onnxio__realpath(parent))) {
        int err = errno;
        s = onnxio__fail(err == ENOENT || err == ENOTDIR ? ONNXIO_ERR_NOT_FOUND : ONNXIO_ERR_IO,
                         "external data location '%s': directory %s: %s", location, parent, strerror(err));
        goto done;
    }
    if (strcmp(parent_real, dir_real) != 0 && !path_inside(parent_real, dir_real)) {
        s = onnxio__fail(ONNXIO_ERR_PATH_ESCAPES, "external data location '%s' is in %s, outside the model's directory %s",
                         location, parent_real, dir_real);
        goto done;
    }
    const char *base = strrchr(location, '/');
    base = base ? base + 1 : location;
    if (strcmp(parent_real, dir_real) == 0 && strcmp(base, model_base) == 0) {
        s = onnxio__fail(ONNXIO_ERR_PATH_SELF, "external data location '%s' is the model file itself", location);
        goto done;
    }
    struct stat st;
    if (lstat(path, &st) != 0) goto done; /* a new file */
    if (S_ISLNK(st.st_mode)) {
        char real[PATH_MAX];
        if (!realpath(path, real) || !path_inside(real, dir_real)) {
            s = onnxio__fail(ONNXIO_ERR_PATH_ESCAPES,
                             "external data location '%s' is a symlink leading outside the model's directory %s", location,
                             dir_real);
            goto done;
        }
        if (stat(path, &st) != 0) goto done;
    }
    if (model_st && st.st_dev == model_st->st_dev && st.st_ino == model_st->st_ino) {
        s = onnxio__fail(ONNXIO_ERR_PATH_SELF, "external data location '%s' is the model file itself", location);
        goto done;
    }
    if (S_ISREG(st.st_mode) && st.st_nlink > 1)
        s = onnxio__fail(ONNXIO_ERR_PATH_LINK, "external data file %s has %llu hard links", path,
                         (unsigned long long)st.st_nlink);
done:
    onnxio__free(path);
    onnxio__free(parent);
    onnxio__free(parent_real);
    return s;
}

/* Writes the files [first, end) of the plan: payloads as PWRITE jobs on a
 * pool, the gaps left as holes (zeros), the SHA-1 computed from memory on
 * this thread meanwhile; then every file is synced and closed. */
static onnxio_status write_batch(onnxio__data_files *d, size_t first, size_t end, const out_item *items,
                                 const char *dir, const onnxio_serialize_options *opts)
{
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(opts->num_threads, &pool);
    if (s) return s;
    for (size_t k = first; !s && k < end; k++) {
        out_file *f = &d->files[k];
        char *path = onnxio__path_join(dir, f->location);
        if (!path) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            break;
        }
        s = onnxio__atomic_open(path, &f->af);
        onnxio__free(path);
        if (s) break;
        /* The whole size at once: the padding between payloads reads as
         * zeros whatever order the jobs run in. */
        if (ftruncate(f->af.fd, (off_t)f->size) != 0) {
            s = onnxio__fail(ONNXIO_ERR_IO, "cannot size %s to %llu bytes: %s", f->af.tmp_path,
                             (unsigned long long)f->size, strerror(errno));
            break;
        }
        for (size_t i = f->first; !s && i < f->first + f->count; i++) {
            onnxio__job job = {
                .kind = ONNXIO__JOB_PWRITE,
                .fd = f->af.fd,
                .offset = items[i].offset,
                .src = items[i].tensor->raw_data.data,
                .size = items[i].tensor->raw_data.size,
                .what = f->location,
            };
            s = onnxio__pool_add(pool, &job);
        }
    }
    for (size_t k = first; !s && opts->external_data.checksum && k < end; k++) {
        out_file *f = &d->files[k];
        sha1 h;
        if ((s = sha1_begin(&h))) break;
        uint64_t at = 0;
        for (size_t i = f->first; !s && i < f->first + f->count; i++) {
            s = sha1_zeros(&h, items[i].offset - at);
            if (!s) s = sha1_update(&h, items[i].tensor->raw_data.data, items[i].tensor->raw_data.size);
            at = items[i].offset + items[i].tensor->raw_data.size;
        }
        if (s) sha1_abort(&h);
        else s = sha1_end(&h, f->digest);
    }
    /* Every queued write must be over before a file is synced or removed. */
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    for (size_t k = first; !s && k < end; k++) s = onnxio__atomic_sync(&d->files[k].af);
    return s;
}

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

onnxio_status onnxio__refer(onnxio_arena *arena, onnxio_TensorProto *t, const char *location, uint64_t offset,
                            const char *checksum)
{
    char num[32];
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_external_data]);
    onnxio_status s = add_entry(arena, t, "location", location);
    snprintf(num, sizeof num, "%llu", (unsigned long long)offset);
    if (!s) s = add_entry(arena, t, "offset", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)t->raw_data.size);
    if (!s) s = add_entry(arena, t, "length", num);
    if (!s && checksum) s = add_entry(arena, t, "checksum", checksum);
    if (s) return s;
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_raw_data]);
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    return ONNXIO_OK;
}

/* A still-external tensor whose location is a file this save replaces
 * would silently point at the new bytes. */
static onnxio_status check_stale(const save_ctx *c, const onnxio__data_files *d)
{
    for (size_t i = 0; i < c->stale_count; i++) {
        const onnxio_TensorProto *t = c->stale[i];
        for (size_t e = 0; e < t->external_data.size; e++) {
            const onnxio_StringStringEntryProto *x = t->external_data.data[e];
            if (!x->key.data || strcmp(x->key.data, "location") != 0 || !x->value.data) continue;
            const char *loc = x->value.data;
            while (loc[0] == '.' && loc[1] == '/') loc += 2;
            for (size_t k = 0; k < d->count; k++)
                if (strcmp(loc, d->files[k].location) == 0)
                    return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                                        "tensor '%s' still refers to external data in '%s', which this save replaces; "
                                        "load its external data first",
                                        tensor_name(t), loc);
        }
    }
    return ONNXIO_OK;
}

void onnxio__data_files_abort(onnxio__data_files *d)
{
    if (!d) return;
    for (size_t k = 0; k < d->count; k++) {
        onnxio__atomic_abort(&d->files[k].af);
        onnxio__free(d->files[k].location);
    }
    onnxio__free(d->files);
    onnxio__free(d);
}

onnxio_status onnxio__data_files_commit(onnxio__data_files *d)
{
    if (!d) return ONNXIO_OK;
    onnxio_status s = ONNXIO_OK;
    char *first = d->count && d->files[0].af.final_path ? onnxio__strdup(d->files[0].af.final_path) : NULL;
    for (size_t k = 0; !s && k < d->count; k++) s = onnxio__atomic_rename(&d->files[k].af);
    /* Every data file is in the directory of the first one. */
    if (!s && first) onnxio__sync_dir(first);
    onnxio__free(first);
    onnxio__data_files_abort(d); /* the temporary files not renamed */
    return s;
}

onnxio_status onnxio__save_external(onnxio_arena *arena, onnxio_ModelProto *model, const char *model_path,
                                    const onnxio_serialize_options *opts, onnxio__data_files **out)
{
    *out = NULL;
    const onnxio_external_data_options *x = &opts->external_data;
    bool one_file = x->all_tensors_to_one_file != ONNXIO_OFF;
    onnxio_status s;
    if (one_file && (s = onnxio__check_location(x->location, strlen(x->location)))) return s;
    save_ctx c;
    memset(&c, 0, sizeof c);
    c.x = x;
    c.threshold = x->size_threshold ? x->size_threshold : ONNXIO_DEFAULT_EXTERNAL_THRESHOLD;
    char *dir = onnxio__dirname(model_path);
    char *dir_real = dir ? onnxio__realpath(dir) : NULL;
    const char *model_base = strrchr(model_path, '/');
    model_base = model_base ? model_base + 1 : model_path;
    onnxio__data_files *d = onnxio__calloc(1, sizeof *d);
    if (!dir || !d) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    if (!dir_real) {
        int err = errno;
        s = onnxio__fail(err == ENOENT || err == ENOTDIR ? ONNXIO_ERR_NOT_FOUND : ONNXIO_ERR_IO, "directory %s: %s", dir,
                         strerror(err));
        goto done;
    }
    if ((s = onnxio__visit(&model->base, &onnxio_desc_TensorProto, select_tensor, &c))) goto done;
    if ((s = plan(&c, opts, model_base, d))) goto done;
    if ((s = check_stale(&c, d))) goto done;
    struct stat model_st;
    int have_model = stat(model_path, &model_st) == 0;
    for (size_t k = 0; k < d->count; k++) {
        if ((s = check_target(dir, dir_real, model_base, have_model ? &model_st : NULL, d->files[k].location))) goto done;
    }
    for (size_t k = 0; !s && k < d->count; k += FILES_PER_BATCH)
        s = write_batch(d, k, k + FILES_PER_BATCH < d->count ? k + FILES_PER_BATCH : d->count, c.items, dir, opts);
    for (size_t i = 0; !s && i < c.count; i++) {
        const out_file *f = &d->files[c.items[i].file];
        s = onnxio__refer(arena, c.items[i].tensor, f->location, c.items[i].offset, x->checksum ? f->digest : NULL);
    }
done:
    if (s) onnxio__data_files_abort(d);
    else *out = d;
    onnxio__free(c.items);
    onnxio__free(c.stale);
    onnxio__free(dir);
    onnxio__free(dir_real);
    return s;
}
