/* Protobuf text format printing, as Python protobuf prints str(message)
 * (upb's text encoder with unknown fields skipped): fields in field-number
 * order, two-space indentation, floats and doubles in their shortest
 * round-trip %g form, enum values by name, strings C-escaped (UTF-8 kept in
 * string fields, octal escapes for every non-printable byte of bytes
 * fields). */
#include <ctype.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct out {
    char *buf;
    size_t size, cap;
    FILE *stream; /* when set, the buffer is flushed to it as it fills */
    int failed;
    int too_deep; /* nested past ONNXIO_MAX_DEPTH (failed is set too) */
    uint64_t max_bytes;
} out;

static void out_flush(out *o)
{
    if (o->stream && o->size) {
        if (fwrite(o->buf, 1, o->size, o->stream) != o->size) o->failed = 1;
        o->size = 0;
    }
}

static void put(out *o, const char *s, size_t n)
{
    if (o->failed) return;
    if (o->cap - o->size < n) {
        out_flush(o);
        if (o->cap - o->size < n) {
            size_t cap = o->cap ? o->cap : 4096;
            while (cap - o->size < n) cap *= 2;
            char *b = onnxio__realloc(o->buf, cap);
            if (!b) {
                o->failed = 1;
                return;
            }
            o->buf = b;
            o->cap = cap;
        }
    }
    memcpy(o->buf + o->size, s, n);
    o->size += n;
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void printf_(out *o, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
static void printf_(out *o, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void indent(out *o, int depth)
{
    for (int i = 0; i < depth; i++) put(o, "  ", 2);
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_sequence(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return len;
}

/* `bytes`: a bytes field (every non-printable byte escaped, and long values
 * abbreviated when asked); otherwise a string field, whose well-formed UTF-8
 * is kept and whose other bytes are escaped, as Python protobuf prints. */
static void put_escaped(out *o, const char *p, size_t n, int bytes)
{
    put(o, "\"", 1);
    uint64_t shown = n;
    if (bytes && o->max_bytes && n > o->max_bytes) shown = o->max_bytes;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!bytes && c >= 0x80) {
            size_t len = utf8_sequence((const unsigned char *)p + i, n - i);
            if (len) {
                put(o, p + i, len);
                i += len - 1;
            } else {
                printf_(o, "\\%03o", c);
            }
            continue;
        }
        switch (c) {
        case '\n': put(o, "\\n", 2); break;
        case '\r': put(o, "\\r", 2); break;
        case '\t': put(o, "\\t", 2); break;
        case '"': put(o, "\\\"", 2); break;
        case '\'': put(o, "\\'", 2); break;
        case '\\': put(o, "\\\\", 2); break;
        default:
            if ((bytes || c < 0x80) && !(c >= 0x20 && c < 0x7f)) printf_(o, "\\%03o", c);
            else put(o, (const char *)&c, 1);
        }
    }
    put(o, "\"", 1);
    if (shown < n) printf_(o, " # %zu bytes, first %llu shown", n, (unsigned long long)shown);
}

/* upb's _upb_EncodeRoundTripFloat / Double: %.{DIG}g, widened when that
 * does not read back as the same value. */
static void put_float(out *o, float v)
{
    char b[40];
    if (isnan(v)) {
        puts_(o, "nan");
        return;
    }
    snprintf(b, sizeof b, "%.*g", FLT_DIG, (double)v);
    if (strtof(b, NULL) != v) snprintf(b, sizeof b, "%.*g", FLT_DIG + 3, (double)v);
    puts_(o, b);
}

static void put_double(out *o, double v)
{
    char b[40];
    if (isnan(v)) {
        puts_(o, "nan");
        return;
    }
    snprintf(b, sizeof b, "%.*g", DBL_DIG, v);
    if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.*g", DBL_DIG + 2, v);
    puts_(o, b);
}

static void print_message(out *o, const onnxio_message *m, int depth);

static void print_value(out *o, const onnxio_field_desc *f, const void *v, int depth)
{
    indent(o, depth);
    if (f->kind == ONNXIO_KIND_MESSAGE) {
        puts_(o, f->name);
        puts_(o, " {\n");
        print_message(o, *(const onnxio_message *const *)v, depth + 1);
        indent(o, depth);
        puts_(o, "}\n");
        return;
    }
    puts_(o, f->name);
    puts_(o, ": ");
    switch (f->kind) {
    case ONNXIO_KIND_INT32: printf_(o, "%" PRId32, *(const int32_t *)v); break;
    case ONNXIO_KIND_INT64: printf_(o, "%" PRId64, *(const int64_t *)v); break;
    case ONNXIO_KIND_UINT64: printf_(o, "%" PRIu64, *(const uint64_t *)v); break;
    case ONNXIO_KIND_FLOAT: put_float(o, *(const float *)v); break;
    case ONNXIO_KIND_DOUBLE: put_double(o, *(const double *)v); break;
    case ONNXIO_KIND_ENUM: {
        const char *name = onnxio_enum_value_name(f->enum_type, *(const int32_t *)v);
        if (name) puts_(o, name);
        else printf_(o, "%" PRId32, *(const int32_t *)v);
        break;
    }
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: {
        const onnxio_string *s = v;
        put_escaped(o, s->data, s->size, f->kind == ONNXIO_KIND_BYTES);
        break;
    }
    case ONNXIO_KIND_RAW: {
        const onnxio_span *s = v;
        if (!s->data && s->size) printf_(o, "\"\" # %zu bytes, not loaded", s->size);
        else put_escaped(o, (const char *)s->data, s->size, 1);
        break;
    }
    default: break;
    }
    puts_(o, "\n");
}

static void print_message(out *o, const onnxio_message *m, int depth)
{
    /* depth is the indentation, and the nesting level: 0 at the top. */
    if (depth > ONNXIO_MAX_DEPTH) {
        o->failed = o->too_deep = 1;
        return;
    }
    const onnxio_message_desc *desc = m->desc;
    for (size_t i = 0; i < desc->field_count && !o->failed; i++) {
        const onnxio_field_desc *f = &desc->fields[i];
        if (!onnxio_field_present(m, f)) continue;
        const void *member = (const char *)m + f->offset;
        if (f->label >= ONNXIO_LABEL_REPEATED) {
            const onnxio__array *a = member;
            size_t es = onnxio__elem_size(f);
            for (size_t k = 0; k < a->size; k++) print_value(o, f, (const char *)a->data + k * es, depth);
        } else {
            print_value(o, f, member, depth);
        }
    }
}

static void release_text(void *ctx, void *data, size_t size)
{
    (void)ctx;
    (void)size;
    onnxio__free(data);
}

static onnxio_status too_deep(void)
{
    return onnxio__fail(ONNXIO_ERR_DEPTH, "text format: messages nested deeper than %d levels", ONNXIO_MAX_DEPTH);
}

ONNXIO_API onnxio_status onnxio_text_format(const void *msg, const onnxio_text_options *opts, onnxio_buffer **out_buf)
{
    if (!msg || !out_buf) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "text_format: NULL argument");
    *out_buf = NULL;
    onnxio_text_options cfg;
    onnxio_status s = onnxio__copy_options(&cfg, sizeof cfg, opts, "onnxio_text_options");
    if (s) return s;
    out o = {0};
    o.max_bytes = cfg.max_bytes_shown;
    print_message(&o, msg, 0);
    onnxio_buffer *b = o.failed ? NULL : onnxio_buffer_wrap(o.buf, o.size, release_text, NULL);
    if (!b) {
        onnxio__free(o.buf);
        return o.too_deep ? too_deep() : onnxio__fail(ONNXIO_ERR_NO_MEMORY, "text_format: out of memory");
    }
    *out_buf = b;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_text_print(const void *msg, const onnxio_text_options *opts, FILE *stream)
{
    if (!msg || !stream) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "text_print: NULL argument");
    onnxio_text_options cfg;
    onnxio_status s = onnxio__copy_options(&cfg, sizeof cfg, opts, "onnxio_text_options");
    if (s) return s;
    out o = {0};
    o.stream = stream;
    o.max_bytes = cfg.max_bytes_shown;
    print_message(&o, msg, 0);
    out_flush(&o);
    onnxio__free(o.buf);
    if (o.too_deep) return too_deep();
    if (o.failed || fflush(stream) != 0) return onnxio__fail(ONNXIO_ERR_IO, "text_print: cannot write the output");
    return ONNXIO_OK;
}
