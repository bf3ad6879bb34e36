/* .safetensors files: the header's reader (a strict JSON parser for the one
 * schema), the dtype <-> ONNX data type table (expanded from the rows of
 * datatype.def), filling a model's initializers from a file and writing
 * them as one (onnxio.h, "safetensors files"). The format's rules live here
 * only; the command and the Python package call these functions. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "io/io.h"

#define DT(x) ONNXIO_TensorProto_DataType_##x

/* ---- the dtype table -------------------------------------------------------- */

/* The safetensors dtypes of datatype.def, each with its place in the
 * reference implementation's Dtype enum, which its writer sorts by (larger
 * last): the writer here sorts the same way. Data types with no safetensors
 * dtype have a NULL name. */
static const struct dtype_row {
    const char *name;
    unsigned bits;
    int32_t data_type; /* 0: no ONNX mapping */
    int rank;
} dtypes[] = {
#define ONNXIO_DATA_TYPE(NAME, BITS, STORAGE, ELEMENT, EXP, MANT, BIAS, FLOAT, NP, NUMPY, NPY, SAFETENSORS, RANK, \
                         DLPACK, TEXT)                                                                          \
    {SAFETENSORS, BITS, DT(NAME), RANK},
#define ONNXIO_SAFETENSORS_ONLY(SAFETENSORS, BITS, RANK) {SAFETENSORS, BITS, 0, RANK},
#include "datatype.def"
#undef ONNXIO_DATA_TYPE
#undef ONNXIO_SAFETENSORS_ONLY
};
#define DTYPE_COUNT (sizeof dtypes / sizeof dtypes[0])

static const struct dtype_row *dtype_by_name(const char *s, size_t n)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtypes[i].name && strlen(dtypes[i].name) == n && memcmp(dtypes[i].name, s, n) == 0) return &dtypes[i];
    return NULL;
}

static const struct dtype_row *dtype_by_type(int32_t data_type)
{
    for (size_t i = 0; i < DTYPE_COUNT && data_type; i++)
        if (dtypes[i].data_type == data_type) return dtypes[i].name ? &dtypes[i] : NULL;
    return NULL;
}

ONNXIO_API int32_t onnxio_safetensors_data_type(const char *dtype)
{
    const struct dtype_row *d = dtype ? dtype_by_name(dtype, strlen(dtype)) : NULL;
    return d ? d->data_type : 0;
}

ONNXIO_API const char *onnxio_safetensors_dtype(int32_t data_type)
{
    const struct dtype_row *d = dtype_by_type(data_type);
    return d ? d->name : NULL;
}

ONNXIO_API bool onnxio_path_is_safetensors(const char *path)
{
    static const char ext[] = ".safetensors";
    size_t n = path ? strlen(path) : 0;
    return n >= sizeof ext - 1 && strcmp(path + n - (sizeof ext - 1), ext) == 0;
}

/* The name of an ONNX data type for messages ("FLOAT16", or the number). */
static const char *type_name(int32_t t, char buf[16])
{
    const char *n = onnxio_enum_value_name(&onnxio_enum_TensorProto_DataType, t);
    if (n) return n;
    snprintf(buf, 16, "%d", (int)t);
    return buf;
}

/* "[4, 4]" into buf (cut short with "..." when long). */
static const char *shape_text(const int64_t *dims, size_t rank, char *buf, size_t cap)
{
    size_t n = 0;
    buf[n++] = '[';
    for (size_t i = 0; i < rank; i++) {
        int w = snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)dims[i]);
        if (w < 0 || (size_t)w >= cap - n - 5) {
            snprintf(buf + n, cap - n, ", ...]");
            return buf;
        }
        n += (size_t)w;
    }
    snprintf(buf + n, cap - n, "]");
    return buf;
}

/* ---- the header ------------------------------------------------------------ */

struct onnxio_safetensors {
    char *header; /* the JSON, decoded in place: names and strings point into it */
    size_t header_size;
    onnxio_safetensors_tensor *tensors; /* by offset */
    size_t count, capacity;
    const onnxio_safetensors_tensor **by_name; /* sorted by name */
    int64_t *dims;
    size_t dims_count, dims_capacity;
    const char **meta; /* key, value, ... */
    size_t meta_count, meta_capacity;
    const char *what;
};

typedef struct jp {
    char *p, *end;
    char *start; /* the header's first byte: file offset 8 */
    const char *what;
} jp;

static onnxio_status jfail(const jp *j, const char *p, const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: header byte %zu (file byte %zu): %s", j->what,
                        (size_t)(p - j->start), (size_t)(p - j->start) + 8, msg);
}

static void ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static onnxio_status expect(jp *j, char c, const char *what)
{
    ws(j);
    if (j->p >= j->end) return jfail(j, j->p, "the header ends where %s was expected", what);
    if (*j->p != c) return jfail(j, j->p, "%s expected", what);
    j->p++;
    return ONNXIO_OK;
}

/* Where a string's decoded bytes go: over its own encoded bytes. */
static int put_in_place(void *ctx, const char *bytes, size_t n)
{
    char **w = ctx;
    memmove(*w, bytes, n);
    *w += n;
    return 1;
}

/* A JSON string (onnxio__json_string, UTF-8 only, no NUL), decoded in
 * place (escapes only shrink it) and NUL-terminated where it ends. */
static onnxio_status string(jp *j, char **out, size_t *size)
{
    onnxio_status s = expect(j, '"', "a string ('\"')");
    if (s) return s;
    char *begin = j->p, *w = begin;
    const char *p = j->p - 1;
    onnxio__json_error e =
        onnxio__json_string(&p, j->end, ONNXIO__JSON_NO_NUL | ONNXIO__JSON_STRICT_UTF8, put_in_place, &w);
    const char *at = p;
    switch (e) {
    case ONNXIO__JSON_OK: break;
    case ONNXIO__JSON_CONTROL: return jfail(j, at, "%s", "a control character in a string (JSON needs it escaped)");
    case ONNXIO__JSON_UTF8: return jfail(j, at, "%s", "a string that is not UTF-8");
    case ONNXIO__JSON_ESCAPE: return jfail(j, at, "%s", "an invalid escape");
    case ONNXIO__JSON_HEX: return jfail(j, at, "%s", "an invalid \\u escape");
    case ONNXIO__JSON_LOW_SURROGATE: return jfail(j, at, "%s", "a lone low surrogate");
    case ONNXIO__JSON_HIGH_SURROGATE: return jfail(j, at, "%s", "a high surrogate without its low surrogate");
    case ONNXIO__JSON_NUL: return jfail(j, at, "%s", "a NUL character (\\u0000)");
    default: return jfail(j, begin - 1, "%s", "a string that never ends");
    }
    j->p = begin + (p - begin); /* past the closing quote; w is at most at it */
    *w = '\0';
    *out = begin;
    *size = (size_t)(w - begin);
    return ONNXIO_OK;
}

/* A non-negative integer in plain JSON digits, at most `max`. */
static onnxio_status uint_value(jp *j, uint64_t max, const char *what, uint64_t *out)
{
    ws(j);
    char *at = j->p;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, at, "%s: a non-negative integer expected", what);
    uint64_t v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (v > (max - d) / 10) return jfail(j, at, "%s: a number too large", what);
        v = v * 10 + d;
        j->p++;
    }
    if (j->p - at > 1 && *at == '0') return jfail(j, at, "%s: a number with a leading zero", what);
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return jfail(j, at, "%s: a non-negative integer expected", what);
    *out = v;
    return ONNXIO_OK;
}

/* ',' (returns 1) or `close` (returns 0); -1 with the error set. */
static int next_or_close(jp *j, char close, onnxio_status *s)
{
    ws(j);
    if (j->p < j->end && *j->p == ',') {
        j->p++;
        return 1;
    }
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 0;
    }
    *s = jfail(j, j->p, "%s", close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    return -1;
}

static int peek(jp *j, char c)
{
    ws(j);
    return j->p < j->end && *j->p == c;
}

static onnxio_status nomem(void) { return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory"); }

/* Keys in header order when equal: the decoded strings stay where they
 * were read, so their addresses follow the header. */
static int meta_key_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int c = strcmp(x, y);
    return c ? c : x < y ? -1 : x > y;
}

/* A __metadata__ key given twice refused (sorted, then adjacent keys
 * compared: linear after the sort, where comparing each key with every
 * earlier one took minutes on a header of a few hundred thousand keys).
 * The error names the first key in header order that repeats an earlier
 * one, at its opening quote. */
static onnxio_status check_meta_keys(const jp *j, const onnxio_safetensors *f)
{
    size_t n = f->meta_count / 2;
    if (n < 2) return ONNXIO_OK;
    const char **keys = onnxio__malloc(n * sizeof *keys);
    if (!keys) return nomem();
    for (size_t i = 0; i < n; i++) keys[i] = f->meta[2 * i];
    qsort(keys, n, sizeof *keys, meta_key_cmp);
    const char *repeat = NULL;
    for (size_t i = 1; i < n; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0 && (i < 2 || strcmp(keys[i - 2], keys[i]) != 0) &&
            (!repeat || keys[i] < repeat))
            repeat = keys[i]; /* the second of its group in header order */
    onnxio__free(keys);
    if (!repeat) return ONNXIO_OK;
    return jfail(j, repeat - 1, "__metadata__ key '%s' appears twice", repeat);
}

static onnxio_status metadata(jp *j, onnxio_safetensors *f)
{
    ws(j);
    if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) {
        j->p += 4;
        return ONNXIO_OK;
    }
    onnxio_status s = expect(j, '{', "the __metadata__ object ('{')");
    if (s) return s;
    if (peek(j, '}')) {
        j->p++;
        return ONNXIO_OK;
    }
    for (;;) {
        char *k, *v;
        size_t kn, vn;
        if ((s = string(j, &k, &kn)) || (s = expect(j, ':', "':'"))) return s;
        ws(j);
        if (j->p >= j->end || *j->p != '"') return jfail(j, j->p, "__metadata__ '%s': values must be strings", k);
        if ((s = string(j, &v, &vn))) return s;
        if (!onnxio__grow((void **)&f->meta, &f->meta_capacity, f->meta_count + 1, sizeof *f->meta)) return nomem();
        f->meta[f->meta_count++] = k;
        f->meta[f->meta_count++] = v;
        int r = next_or_close(j, '}', &s);
        if (r < 0) return s;
        if (r == 0) return ONNXIO_OK;
    }
}

/* One tensor's object; its name is `name`. dims are appended to f->dims
 * (shape points there once the whole header is read: the array moves). */
static onnxio_status tensor(jp *j, onnxio_safetensors *f, char *name, size_t name_size, uint64_t *begin,
                            uint64_t *end)
{
    onnxio_status s = expect(j, '{', "a tensor's object ('{')");
    if (s) return s;
    onnxio_safetensors_tensor t = {.name = name, .name_size = name_size};
    bool have_dtype = false, have_shape = false, have_offsets = false;
    size_t first_dim = f->dims_count;
    char *open = j->p - 1;
    if (!peek(j, '}'))
        for (;;) {
            char *k;
            size_t kn;
            char *at = (ws(j), j->p);
            if ((s = string(j, &k, &kn)) || (s = expect(j, ':', "':'"))) return s;
            if (strcmp(k, "dtype") == 0) {
                if (have_dtype) return jfail(j, at, "tensor '%s': \"dtype\" appears twice", name);
                char *d;
                size_t dn;
                ws(j);
                if (j->p >= j->end || *j->p != '"') return jfail(j, j->p, "tensor '%s': dtype must be a string", name);
                char *dat = j->p;
                if ((s = string(j, &d, &dn))) return s;
                const struct dtype_row *row = dtype_by_name(d, dn);
                if (!row) {
                    char msg[300];
                    snprintf(msg, sizeof msg, "tensor '%.100s': unknown dtype '%.100s'", name, d);
                    return jfail(j, dat, "%s", msg);
                }
                t.dtype = row->name;
                t.data_type = row->data_type;
                have_dtype = true;
            } else if (strcmp(k, "shape") == 0) {
                if (have_shape) return jfail(j, at, "tensor '%s': \"shape\" appears twice", name);
                if ((s = expect(j, '[', "the shape ('[')"))) return s;
                if (!peek(j, ']'))
                    for (;;) {
                        uint64_t d;
                        if ((s = uint_value(j, INT64_MAX, "a dimension", &d))) return s;
                        if (!onnxio__grow((void **)&f->dims, &f->dims_capacity, f->dims_count, sizeof *f->dims))
                            return nomem();
                        f->dims[f->dims_count++] = (int64_t)d;
                        int r = next_or_close(j, ']', &s);
                        if (r < 0) return s;
                        if (r == 0) break;
                    }
                else
                    j->p++;
                t.rank = f->dims_count - first_dim;
                have_shape = true;
            } else if (strcmp(k, "data_offsets") == 0) {
                if (have_offsets) return jfail(j, at, "tensor '%s': \"data_offsets\" appears twice", name);
                if ((s = expect(j, '[', "data_offsets ('[')")) || (s = uint_value(j, UINT64_MAX, "an offset", begin)) ||
                    (s = expect(j, ',', "data_offsets: ','")) || (s = uint_value(j, UINT64_MAX, "an offset", end)) ||
                    (s = expect(j, ']', "data_offsets: ']' after two offsets")))
                    return s;
                have_offsets = true;
            } else {
                char msg[300];
                snprintf(msg, sizeof msg, "tensor '%.100s': unknown key '%.100s'", name, k);
                return jfail(j, at, "%s", msg);
            }
            int r = next_or_close(j, '}', &s);
            if (r < 0) return s;
            if (r == 0) break;
        }
    else
        j->p++;
    const char *missing = !have_dtype ? "dtype" : !have_shape ? "shape" : !have_offsets ? "data_offsets" : NULL;
    if (missing) {
        char msg[300];
        snprintf(msg, sizeof msg, "tensor '%.100s' has no \"%s\"", name, missing);
        return jfail(j, open, "%s", msg);
    }
    /* shape: an index for now. */
    t.shape = (const int64_t *)(uintptr_t)first_dim;
    t.offset = *begin;
    t.size = *end;
    if (!onnxio__grow((void **)&f->tensors, &f->capacity, f->count, sizeof *f->tensors)) return nomem();
    f->tensors[f->count++] = t;
    return ONNXIO_OK;
}

static int by_offset(const void *a, const void *b)
{
    const onnxio_safetensors_tensor *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return 0;
}

static int name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : an < bn ? -1 : an > bn;
}

static int by_name(const void *a, const void *b)
{
    const onnxio_safetensors_tensor *x = *(const onnxio_safetensors_tensor *const *)a;
    const onnxio_safetensors_tensor *y = *(const onnxio_safetensors_tensor *const *)b;
    return name_cmp(x->name, x->name_size, y->name, y->name_size);
}

/* Reads the JSON of f->header, then checks the offsets against `data_size`
 * bytes of data (file offset `data_start`). */
static onnxio_status parse_header(onnxio_safetensors *f, uint64_t data_start, uint64_t data_size)
{
    jp j = {f->header, f->header + f->header_size, f->header, f->what};
    onnxio_status s;
    ws(&j);
    if (j.p >= j.end || *j.p != '{') return jfail(&j, j.p, "%s", "the header must be a JSON object ('{')");
    j.p++;
    bool have_meta = false;
    if (!peek(&j, '}'))
        for (;;) {
            char *k;
            size_t kn;
            char *at = (ws(&j), j.p);
            if ((s = string(&j, &k, &kn)) || (s = expect(&j, ':', "':'"))) return s;
            if (strcmp(k, "__metadata__") == 0) {
                if (have_meta) return jfail(&j, at, "%s", "\"__metadata__\" appears twice");
                have_meta = true;
                if ((s = metadata(&j, f))) return s;
            } else {
                uint64_t begin = 0, end = 0;
                if ((s = tensor(&j, f, k, kn, &begin, &end))) return s;
                /* tensor() stored begin in offset and end in size. */
                if (end < begin) {
                    char msg[300];
                    snprintf(msg, sizeof msg, "tensor '%.100s': data_offsets [%llu, %llu] end before they begin", k,
                             (unsigned long long)begin, (unsigned long long)end);
                    return jfail(&j, at, "%s", msg);
                }
            }
            int r = next_or_close(&j, '}', &s);
            if (r < 0) return s;
            if (r == 0) break;
        }
    else
        j.p++;
    ws(&j);
    if (j.p != j.end) return jfail(&j, j.p, "%s", "bytes after the header's object (only spaces may pad it)");
    if ((s = check_meta_keys(&j, f))) return s;

    /* With every tensor a scalar no dimension was read and f->dims is
     * NULL: shape then points at no_dims (NULL + 0 is undefined in C). */
    static const int64_t no_dims[1];
    for (size_t i = 0; i < f->count; i++) {
        onnxio_safetensors_tensor *t = &f->tensors[i];
        t->shape = f->dims ? f->dims + (size_t)(uintptr_t)t->shape : no_dims;
        t->size -= t->offset; /* end - begin */
    }
    if (f->count) {
        if (!(f->by_name = onnxio__malloc(f->count * sizeof *f->by_name))) return nomem();
        for (size_t i = 0; i < f->count; i++) f->by_name[i] = &f->tensors[i];
        qsort(f->by_name, f->count, sizeof *f->by_name, by_name);
        for (size_t i = 1; i < f->count; i++)
            if (by_name(&f->by_name[i - 1], &f->by_name[i]) == 0)
                return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: tensor '%s' appears twice in the header", f->what,
                                    f->by_name[i]->name);
        qsort(f->tensors, f->count, sizeof *f->tensors, by_offset);
        /* by_name pointed at the old order: rebuild it. */
        for (size_t i = 0; i < f->count; i++) f->by_name[i] = &f->tensors[i];
        qsort(f->by_name, f->count, sizeof *f->by_name, by_name);
    }
    uint64_t expected = 0;
    for (size_t i = 0; i < f->count; i++) {
        onnxio_safetensors_tensor *t = &f->tensors[i];
        char shape[128];
        if (t->offset != expected)
            return onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                                "%s: tensor '%s' begins at data byte %llu, but the tensors before it end at %llu "
                                "(tensors must follow each other with no gap or overlap)",
                                f->what, t->name, (unsigned long long)t->offset, (unsigned long long)expected);
        uint64_t elements = 1;
        bool overflow = false;
        for (size_t d = 0; d < t->rank; d++)
            if (__builtin_mul_overflow(elements, (uint64_t)t->shape[d], &elements)) overflow = true;
        const struct dtype_row *row = dtype_by_name(t->dtype, strlen(t->dtype));
        uint64_t bits;
        if (overflow || __builtin_mul_overflow(elements, (uint64_t)row->bits, &bits))
            return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: tensor '%s': %s %s has more bytes than 64 bits count",
                                f->what, t->name, t->dtype, shape_text(t->shape, t->rank, shape, sizeof shape));
        if (bits % 8)
            return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: tensor '%s': %s %s is not a whole number of bytes",
                                f->what, t->name, t->dtype, shape_text(t->shape, t->rank, shape, sizeof shape));
        if (bits / 8 != t->size)
            return onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                                "%s: tensor '%s': %s %s needs %llu bytes, its data_offsets [%llu, %llu] hold %llu",
                                f->what, t->name, t->dtype, shape_text(t->shape, t->rank, shape, sizeof shape),
                                (unsigned long long)(bits / 8), (unsigned long long)t->offset,
                                (unsigned long long)(t->offset + t->size), (unsigned long long)t->size);
        expected = t->offset + t->size;
        if (expected > data_size)
            return onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                                "%s: tensor '%s' ends at data byte %llu, past the end of the data (%llu bytes)",
                                f->what, t->name, (unsigned long long)expected, (unsigned long long)data_size);
        t->offset += data_start;
    }
    if (expected != data_size)
        return onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                            "%s: the tensors end at data byte %llu, but the file holds %llu bytes of data",
                            f->what, (unsigned long long)expected, (unsigned long long)data_size);
    return ONNXIO_OK;
}

ONNXIO_API void onnxio_safetensors_close(onnxio_safetensors *f)
{
    if (!f) return;
    onnxio__free(f->header);
    onnxio__free(f->tensors);
    onnxio__free(f->by_name);
    onnxio__free(f->dims);
    onnxio__free(f->meta);
    onnxio__free(f);
}

/* Reads the header through `read(ctx, buf, n, offset)` from a file of
 * `size` bytes. */
typedef onnxio_status (*read_fn)(void *ctx, void *buf, uint64_t n, uint64_t offset);

static onnxio_status open_with(read_fn read, void *ctx, uint64_t size, const char *what, onnxio_safetensors **out)
{
    *out = NULL;
    if (size < 8)
        return onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                            "%s: %llu bytes: a safetensors file starts with an 8-byte header length", what,
                            (unsigned long long)size);
    uint8_t len[8];
    onnxio_status s = read(ctx, len, 8, 0);
    if (s) return s;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | len[i];
    if (n > ONNXIO_SAFETENSORS_MAX_HEADER)
        return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: header length %llu (file bytes 0-7) is more than %u bytes",
                            what, (unsigned long long)n, ONNXIO_SAFETENSORS_MAX_HEADER);
    if (n > size - 8)
        return onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                            "%s: header length %llu (file bytes 0-7) runs past the end of the file (%llu bytes)",
                            what, (unsigned long long)n, (unsigned long long)size);
    onnxio_safetensors *f = onnxio__calloc(1, sizeof *f);
    if (!f || !(f->header = onnxio__malloc((size_t)n + 1))) {
        onnxio__free(f);
        return nomem();
    }
    f->header_size = (size_t)n;
    f->header[n] = '\0';
    f->what = what;
    if ((s = read(ctx, f->header, n, 8)) || (s = parse_header(f, 8 + n, size - 8 - n))) {
        onnxio_safetensors_close(f);
        return s;
    }
    f->what = NULL; /* the caller's string may not outlive this call */
    *out = f;
    return ONNXIO_OK;
}

typedef struct fd_ctx {
    int fd;
    const char *what;
} fd_ctx;

static onnxio_status read_fd(void *ctx, void *buf, uint64_t n, uint64_t offset)
{
    fd_ctx *c = ctx;
    return onnxio__read_at(c->fd, buf, n, offset, c->what);
}

typedef struct mem_ctx {
    const uint8_t *data;
} mem_ctx;

static onnxio_status read_mem(void *ctx, void *buf, uint64_t n, uint64_t offset)
{
    memcpy(buf, ((mem_ctx *)ctx)->data + offset, (size_t)n);
    return ONNXIO_OK;
}

/* Opens `path` (a regular file) and reads its header; *fd stays open. */
static onnxio_status open_path(const char *path, onnxio_safetensors **out, int *fd, uint64_t *size)
{
    *out = NULL;
    onnxio_status s = onnxio__open_regular(AT_FDCWD, path, O_RDONLY, path, fd, size);
    if (s) return s == ONNXIO_ERR_PATH_SPECIAL ? ONNXIO_ERR_IO : s;
    fd_ctx c = {*fd, path};
    if ((s = open_with(read_fd, &c, *size, path, out))) {
        onnxio__close(*fd);
        *fd = -1;
    }
    return s;
}

ONNXIO_API onnxio_status onnxio_safetensors_open(const char *path, onnxio_safetensors **out)
{
    if (!out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_open: out is NULL");
    *out = NULL;
    if (!path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_open: path is NULL");
    int fd;
    uint64_t size;
    onnxio_status s = open_path(path, out, &fd, &size);
    if (!s) onnxio__close(fd);
    return s;
}

ONNXIO_API onnxio_status onnxio_safetensors_open_bytes(const void *data, size_t size, onnxio_safetensors **out)
{
    if (!out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_open_bytes: out is NULL");
    *out = NULL;
    if (!data && size) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_open_bytes: data is NULL");
    mem_ctx c = {data};
    return open_with(read_mem, &c, size, "safetensors bytes", out);
}

ONNXIO_API size_t onnxio_safetensors_count(const onnxio_safetensors *f) { return f ? f->count : 0; }

ONNXIO_API const onnxio_safetensors_tensor *onnxio_safetensors_at(const onnxio_safetensors *f, size_t index)
{
    return f && index < f->count ? &f->tensors[index] : NULL;
}

static const onnxio_safetensors_tensor *find_n(const onnxio_safetensors *f, const char *name, size_t n)
{
    size_t lo = 0, hi = f->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(f->by_name[mid]->name, f->by_name[mid]->name_size, name, n);
        if (c == 0) return f->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

ONNXIO_API const onnxio_safetensors_tensor *onnxio_safetensors_find(const onnxio_safetensors *f, const char *name)
{
    return f && name ? find_n(f, name, strlen(name)) : NULL;
}

ONNXIO_API size_t onnxio_safetensors_metadata_count(const onnxio_safetensors *f) { return f ? f->meta_count / 2 : 0; }

ONNXIO_API const char *onnxio_safetensors_metadata_key(const onnxio_safetensors *f, size_t index)
{
    return f && index < f->meta_count / 2 ? f->meta[2 * index] : NULL;
}

ONNXIO_API const char *onnxio_safetensors_metadata_value(const onnxio_safetensors *f, size_t index)
{
    return f && index < f->meta_count / 2 ? f->meta[2 * index + 1] : NULL;
}

/* ---- the model's initializers ----------------------------------------------- */

typedef struct init_index {
    onnxio_TensorProto **by_name; /* sorted by name */
    size_t count;
} init_index;

static int init_cmp(const void *a, const void *b)
{
    const onnxio_TensorProto *x = *(onnxio_TensorProto *const *)a, *y = *(onnxio_TensorProto *const *)b;
    return name_cmp(x->name.data ? x->name.data : "", x->name.size, y->name.data ? y->name.data : "", y->name.size);
}

/* The main graph's initializers sorted by name; two of one name refused. */
static onnxio_status index_initializers(onnxio_ModelProto *model, const char *fn, init_index *ix)
{
    ix->by_name = NULL;
    ix->count = 0;
    if (!model) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: model is NULL", fn);
    if (!model->graph) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: the model has no graph", fn);
    onnxio_TensorProto_list *l = &model->graph->initializer;
    if (!l->size) return ONNXIO_OK;
    if (!(ix->by_name = onnxio__malloc(l->size * sizeof *ix->by_name))) return nomem();
    memcpy(ix->by_name, l->data, l->size * sizeof *ix->by_name);
    ix->count = l->size;
    qsort(ix->by_name, ix->count, sizeof *ix->by_name, init_cmp);
    for (size_t i = 1; i < ix->count; i++)
        if (init_cmp(&ix->by_name[i - 1], &ix->by_name[i]) == 0)
            return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: the model has two initializers named '%s'", fn,
                                onnxio__tensor_name(ix->by_name[i]));
    return ONNXIO_OK;
}

static onnxio_TensorProto *init_find(const init_index *ix, const char *name, size_t n)
{
    size_t lo = 0, hi = ix->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const onnxio_TensorProto *t = ix->by_name[mid];
        int c = name_cmp(t->name.data ? t->name.data : "", t->name.size, name, n);
        if (c == 0) return ix->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ---- load_into -------------------------------------------------------------- */

typedef struct fill {
    onnxio_TensorProto *init;
    const onnxio_safetensors_tensor *src;
    onnxio_buffer *buf; /* copy mode: the new payload */
} fill;

static int fill_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const fill *)a)->init, y = (uintptr_t)((const fill *)b)->init;
    return x < y ? -1 : x > y;
}

/* Whether the initializer has the file tensor's type and shape; the error
 * names both. */
static onnxio_status check_fits(const onnxio_TensorProto *init, const onnxio_safetensors_tensor *t, const char *path)
{
    bool same = t->data_type != 0 && init->data_type == t->data_type && init->dims.size == t->rank;
    for (size_t d = 0; same && d < t->rank; d++) same = init->dims.data[d] == t->shape[d];
    if (same) return ONNXIO_OK;
    char a[128], b[128], tb[16];
    if (!t->data_type)
        return onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                            "%s: tensor '%s': safetensors dtype %s has no ONNX data type that onnxio maps it to",
                            path, t->name, t->dtype);
    return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: tensor '%s': safetensors has %s %s, the model has %s %s", path,
                        t->name, t->dtype, shape_text(t->shape, t->rank, a, sizeof a),
                        type_name(init->data_type, tb), shape_text(init->dims.data, init->dims.size, b, sizeof b));
}

static void clear_field(onnxio_TensorProto *t, unsigned index)
{
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[index]);
}

/* The caller's options (NULL: the defaults) read into *cfg, and the
 * checks both entry points make. */
static onnxio_status read_options(const onnxio_safetensors_options *opts, const char *path, const char *who,
                                  onnxio_safetensors_options *cfg)
{
    onnxio_status s = onnxio__copy_options(cfg, sizeof *cfg, opts, "onnxio_safetensors_options", ONNXIO__SAFETENSORS_OPTIONS_0_2_SIZE);
    if (s) return s;
    if (!path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: path is NULL", who);
    if (cfg->num_threads < 0)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_options: num_threads is negative");
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_safetensors_load_into(onnxio_ModelProto *model, const char *path,
                                                      const onnxio_safetensors_options *opts)
{
    onnxio_safetensors_options cfg;
    onnxio_status s = read_options(opts, path, "onnxio_safetensors_load_into", &cfg);
    if (s) return s;
    if (cfg.name_count && !cfg.names)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_options: names is NULL");
    init_index ix;
    onnxio_safetensors *f = NULL;
    fill *plan = NULL;
    size_t n = 0;
    int fd = -1;
    uint64_t size = 0;
    onnxio_buffer *map = NULL;
    onnxio__pool *pool = NULL;
    if ((s = index_initializers(model, "onnxio_safetensors_load_into", &ix))) goto done;
    /* A save of this path that died: finished or undone first. */
    if ((s = onnxio__recover(path))) goto done;
    if ((s = open_path(path, &f, &fd, &size))) goto done;

    size_t want = cfg.names ? cfg.name_count : f->count;
    if (want && !(plan = onnxio__calloc(want, sizeof *plan))) {
        s = nomem();
        goto done;
    }
    for (size_t i = 0; i < want; i++) {
        const onnxio_safetensors_tensor *t;
        if (cfg.names) {
            if (!cfg.names[i]) {
                s = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_options: names[%zu] is NULL", i);
                goto done;
            }
            if (!(t = find_n(f, cfg.names[i], strlen(cfg.names[i])))) {
                s = onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s: no tensor named '%s' in the file", path, cfg.names[i]);
                goto done;
            }
        } else {
            t = &f->tensors[i];
        }
        onnxio_TensorProto *init = init_find(&ix, t->name, t->name_size);
        if (!init) {
            if (!cfg.names && cfg.allow_unknown) continue;
            s = onnxio__fail(ONNXIO_ERR_SAFETENSORS,
                             "%s: tensor '%s': the model has no initializer of that name%s", path, t->name,
                             cfg.names ? "" : " (allow_unknown skips such tensors)");
            goto done;
        }
        if ((s = check_fits(init, t, path))) goto done;
        plan[n].init = init;
        plan[n].src = t;
        n++;
    }
    if (cfg.names && n > 1) { /* a name given twice: adjacent once sorted (plan is NULL for none) */
        qsort(plan, n, sizeof *plan, fill_cmp);
        for (size_t i = 1; i < n; i++)
            if (plan[i].init == plan[i - 1].init) {
                s = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_options: '%s' is named twice",
                                 plan[i].src->name);
                goto done;
            }
    }
    if (cfg.no_copy) {
        if ((s = onnxio__map_fd(fd, path, &map))) goto done;
        if (onnxio_buffer_size(map) != size) {
            s = onnxio__fail(ONNXIO_ERR_IO, "%s changed size while it was read", path);
            goto done;
        }
    } else {
        if ((s = onnxio__pool_new(cfg.num_threads, &pool))) goto done;
        for (size_t i = 0; i < n && !s; i++) {
            uint64_t bytes = plan[i].src->size;
            if (!bytes) continue;
            if (!(plan[i].buf = onnxio_buffer_new((size_t)bytes, 0))) {
                s = nomem();
                break;
            }
            onnxio__job job = {.kind = ONNXIO__JOB_PREAD, .fd = fd, .offset = plan[i].src->offset,
                               .dst = onnxio_buffer_data(plan[i].buf), .size = bytes, .what = path};
            s = onnxio__pool_add(pool, &job);
        }
        onnxio_status s2 = onnxio__pool_finish(pool);
        pool = NULL;
        if (!s) s = s2;
        if (s) goto done;
    }
    /* Everything is read: only now does the model change. */
    for (size_t i = 0; i < n; i++) {
        onnxio_TensorProto *t = plan[i].init;
        for (size_t k = 0; k < ONNXIO__TYPED_FIELDS; k++) clear_field(t, onnxio__tensor_typed_fields[k]);
        clear_field(t, ONNXIO_FIELD_TensorProto_external_data);
        clear_field(t, ONNXIO_FIELD_TensorProto_data_location);
        if (!plan[i].src->size)
            onnxio_span_set(&t->raw_data, NULL, 0, NULL);
        else if (cfg.no_copy)
            onnxio_span_set(&t->raw_data, onnxio_buffer_data(map) + plan[i].src->offset,
                            (size_t)plan[i].src->size, map);
        else
            onnxio_span_set(&t->raw_data, plan[i].buf ? onnxio_buffer_data(plan[i].buf) : NULL,
                            (size_t)plan[i].src->size, plan[i].buf);
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    }
done:
    if (plan)
        for (size_t i = 0; i < n; i++) onnxio_buffer_unref(plan[i].buf);
    onnxio_buffer_unref(map);
    onnxio__free(plan);
    onnxio__close(fd);
    onnxio_safetensors_close(f);
    onnxio__free(ix.by_name);
    return s;
}

/* ---- save ------------------------------------------------------------------- */

typedef struct out_tensor {
    const onnxio_TensorProto *t;
    const struct dtype_row *dtype;
    const uint8_t *data;
    uint64_t size;
    uint8_t *converted; /* onnxio__malloc'd when the values were in typed fields */
    uint64_t begin;
} out_tensor;

static int out_cmp(const void *a, const void *b)
{
    const out_tensor *x = a, *y = b;
    if (x->dtype != y->dtype) return x->dtype->rank > y->dtype->rank ? -1 : 1;
    return name_cmp(x->t->name.data ? x->t->name.data : "", x->t->name.size, y->t->name.data ? y->t->name.data : "",
                    y->t->name.size);
}

/* The raw bytes of a tensor whose values are in a typed field, as
 * numpy_helper.to_array reads them (little-endian, each int32_data entry
 * cut to the element's width). */
static onnxio_status convert_typed(out_tensor *o, uint64_t bytes)
{
    /* The count checked before anything is allocated (format.c's rule). */
    onnxio_status s = onnxio__typed_to_raw(o->t, bytes, NULL, ONNXIO_ERR_SAFETENSORS);
    if (s || !bytes) return s;
    if (!(o->converted = onnxio__malloc((size_t)bytes))) return nomem();
    o->data = o->converted;
    return onnxio__typed_to_raw(o->t, bytes, o->converted, ONNXIO_ERR_SAFETENSORS);
}

/* Appends to a growing string; 0 when out of memory. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static int put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = onnxio__realloc(b->p, cap);
        if (!p) return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 1;
}

static int puts_(sbuf *b, const char *s) { return put(b, s, strlen(s)); }

static int sbuf_write(void *ctx, const void *bytes, size_t n) { return !put(ctx, bytes, n); }

/* A JSON string as serde_json writes it: the library's JSON strings with
 * no flag (UTF-8 and DEL as they are; names are checked UTF-8 first). */
static int put_json(sbuf *b, const char *s, size_t n) { return onnxio_json_write_string(s, n, 0, sbuf_write, b) == 0; }

static onnxio_status check_utf8(const char *s, size_t n, const char *what)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0) return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s '%s' holds a NUL byte", what, s);
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = onnxio__utf8_sequence((const unsigned char *)s + i, n - i);
        if (!k) return onnxio__fail(ONNXIO_ERR_SAFETENSORS, "%s '%s' is not UTF-8", what, s);
        i += k;
    }
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_safetensors_save(onnxio_ModelProto *model, const char *path,
                                                 const onnxio_safetensors_options *opts)
{
    onnxio_safetensors_options cfg;
    onnxio_status s = read_options(opts, path, "onnxio_safetensors_save", &cfg);
    if (s) return s;
    if ((cfg.name_count && !cfg.names) || (cfg.metadata_count && !cfg.metadata))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_options: names or metadata is NULL");
    init_index ix;
    out_tensor *outs = NULL;
    size_t n = 0;
    sbuf h = {0};
    onnxio__txn *txn = NULL;
    onnxio__pool *pool = NULL;
    if ((s = index_initializers(model, "onnxio_safetensors_save", &ix))) goto done;
    size_t want = cfg.names ? cfg.name_count : ix.count;
    if (want && !(outs = onnxio__calloc(want, sizeof *outs))) {
        s = nomem();
        goto done;
    }
    for (size_t i = 0; i < want; i++) {
        const onnxio_TensorProto *t;
        if (cfg.names) {
            if (!cfg.names[i] || !(t = init_find(&ix, cfg.names[i], strlen(cfg.names[i])))) {
                s = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: the model has no initializer named '%s'", path,
                                 cfg.names[i] ? cfg.names[i] : "(NULL)");
                goto done;
            }
        } else {
            t = ix.by_name[i];
        }
        out_tensor *o = &outs[n++];
        o->t = t;
        const char *name = onnxio__tensor_name(t);
        char tb[16];
        if (!(o->dtype = dtype_by_type(t->data_type))) {
            s = onnxio__fail(ONNXIO_ERR_SAFETENSORS, "tensor '%s': data type %s has no safetensors dtype", name,
                             type_name(t->data_type, tb));
            goto done;
        }
        if ((s = check_utf8(name, t->name.size, "tensor name"))) goto done;
        if (t->segment) {
            s = onnxio__fail(ONNXIO_ERR_SAFETENSORS, "tensor '%s' is a segment of a larger tensor", name);
            goto done;
        }
        if (onnxio__is_external(t)) {
            s = onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s' is still external: load its data first", name);
            goto done;
        }
        uint64_t bytes;
        int r = onnxio_tensor_raw_size(t, &bytes);
        if (r != 1) {
            s = onnxio__fail(ONNXIO_ERR_SAFETENSORS, "tensor '%s': its dims give no byte count (negative or too large)",
                             name);
            goto done;
        }
        o->size = bytes;
        if (onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data)) {
            if (t->raw_data.size && !t->raw_data.data) {
                s = onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", name);
                goto done;
            }
            if (t->raw_data.size != bytes) {
                char a[128];
                s = onnxio__fail(ONNXIO_ERR_SAFETENSORS, "tensor '%s': raw_data holds %zu bytes, %s %s needs %llu",
                                 name, t->raw_data.size, type_name(t->data_type, tb),
                                 shape_text(t->dims.data, t->dims.size, a, sizeof a), (unsigned long long)bytes);
                goto done;
            }
            o->data = t->raw_data.data;
        } else if ((s = convert_typed(o, bytes))) {
            goto done;
        }
    }
    /* The save budget, before anything is written: tensors sharing one
     * range would each be written again. */
    onnxio__save_budget budget = {0};
    for (size_t i = 0; i < n && !s; i++) s = onnxio__save_budget_add(&budget, outs[i].data, outs[i].size);
    if (s) {
        onnxio__save_budget_free(&budget);
        goto done;
    }
    if ((s = onnxio__save_budget_check(&budget, path, onnxio__max_expansion(cfg.max_expansion)))) goto done;
    if (n > 1) qsort(outs, n, sizeof *outs, out_cmp); /* outs is NULL for none */
    for (size_t i = 1; i < n; i++)
        if (init_cmp(&outs[i - 1].t, &outs[i].t) == 0) {
            /* Sorted by dtype first, then name: index_initializers refused
             * two initializers of one name, so this is one named twice. */
            s = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_options: '%s' is named twice",
                             onnxio__tensor_name(outs[i].t));
            goto done;
        }

    /* The header. */
    char num[64];
    uint64_t at = 0;
    int ok = puts_(&h, "{");
    if (cfg.metadata_count) {
        ok = ok && puts_(&h, "\"__metadata__\":{");
        for (size_t i = 0; i < cfg.metadata_count && ok; i++) {
            const char *k = cfg.metadata[2 * i], *v = cfg.metadata[2 * i + 1];
            if (!k || !v) {
                s = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_safetensors_options: metadata[%zu] is NULL", i);
                goto done;
            }
            if ((s = check_utf8(k, strlen(k), "metadata key")) || (s = check_utf8(v, strlen(v), "metadata value")))
                goto done;
            ok = (!i || puts_(&h, ",")) && put_json(&h, k, strlen(k)) && puts_(&h, ":") && put_json(&h, v, strlen(v));
        }
        ok = ok && puts_(&h, "}");
    }
    for (size_t i = 0; i < n && ok; i++) {
        out_tensor *o = &outs[i];
        o->begin = at;
        ok = ((i || cfg.metadata_count) ? puts_(&h, ",") : 1) && put_json(&h, o->t->name.data ? o->t->name.data : "",
                                                                           o->t->name.size) &&
             puts_(&h, ":{\"dtype\":\"") && puts_(&h, o->dtype->name) && puts_(&h, "\",\"shape\":[");
        for (size_t d = 0; d < o->t->dims.size && ok; d++) {
            snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)o->t->dims.data[d]);
            ok = puts_(&h, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                 (unsigned long long)(at + o->size));
        ok = ok && puts_(&h, num);
        at += o->size;
    }
    ok = ok && puts_(&h, "}");
    while (ok && h.n % 8) ok = puts_(&h, " ");
    if (!ok) {
        s = nomem();
        goto done;
    }
    if (h.n > ONNXIO_SAFETENSORS_MAX_HEADER) {
        s = onnxio__fail(ONNXIO_ERR_SAFETENSORS, "the header would be %zu bytes, more than readers accept (%u)", h.n,
                         ONNXIO_SAFETENSORS_MAX_HEADER);
        goto done;
    }

    /* The file: header, then the payloads at their offsets. */
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
    int fd = -1;
    if ((s = onnxio__txn_begin(path, &txn))) goto done;
    if (cfg.fsync == ONNXIO_OFF) onnxio__txn_no_fsync(txn);
    bool stream = onnxio__txn_is_stream(txn);
    if (!(s = onnxio__txn_create(txn, -1, NULL, &fd)) && !(s = onnxio__write_all(fd, len, 8, path)))
        s = onnxio__write_all(fd, h.p, h.n, path);
    if (!s && !stream) s = onnxio__pool_new(cfg.num_threads, &pool);
    for (size_t i = 0; i < n && !s; i++) {
        if (!outs[i].size) continue;
        if (stream) {
            s = onnxio__write_all(fd, outs[i].data, (size_t)outs[i].size, path);
        } else {
            onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = fd, .offset = 8 + h.n + outs[i].begin,
                               .src = outs[i].data, .size = outs[i].size, .what = path};
            s = onnxio__pool_add(pool, &job);
        }
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    if (s) {
        onnxio__txn_abort(txn);
    } else {
        s = onnxio__txn_commit(txn);
    }
    txn = NULL;
    if (s) s = onnxio__context(s, "saving %s", path);
done:
    onnxio__txn_abort(txn);
    for (size_t i = 0; i < n; i++) onnxio__free(outs[i].converted);
    onnxio__free(outs);
    onnxio__free(h.p);
    onnxio__free(ix.by_name);
    return s;
}
