/* Writing messages as text, byte for byte as Python protobuf writes them
 * (onnxio_text_style in onnxio.h): the text format of str(message) (upb's
 * text encoder with unknown fields skipped) and of text_format.MessageToString
 * (the same but for floats), and json_format.MessageToJson. Fields in
 * field-number order; in text, two-space indentation, enum values by name,
 * strings C-escaped (UTF-8 kept in string fields, octal escapes for every
 * non-printable byte of bytes fields). Reading is src/proto/text_parse.c. */
#include <ctype.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"

typedef struct out {
    char *buf;
    size_t size, cap;
    /* When set, the buffer is handed to it as it fills (nonzero: it failed). */
    int (*flush)(void *user, const char *bytes, size_t n);
    void *flush_user;
    int failed;
    int too_deep; /* nested past ONNXIO_MAX_DEPTH (failed is set too) */
    uint64_t max_bytes;
    onnxio_text_style style;
    int missing; /* JSON: a payload that was never loaded (failed is set too) */
} out;

static void out_flush(out *o)
{
    if (o->flush && o->size) {
        if (o->flush(o->flush_user, o->buf, o->size) != 0) o->failed = 1;
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
size_t onnxio__utf8_sequence(const unsigned char *p, size_t n)
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
    /* Escaped into a local buffer, written a chunk at a time. */
    char q[4096 + 8];
    size_t k = 0;
    for (size_t i = 0; i < shown; i++) {
        if (k > 4096 - 4) {
            put(o, q, k);
            k = 0;
        }
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f) {
            if (c == '"' || c == '\'' || c == '\\') q[k++] = '\\';
            q[k++] = (char)c;
            continue;
        }
        if (!bytes && c >= 0x80) {
            size_t len = onnxio__utf8_sequence((const unsigned char *)p + i, n - i);
            if (len) {
                put(o, q, k);
                k = 0;
                put(o, p + i, len);
                i += len - 1;
                continue;
            }
        }
        q[k++] = '\\';
        if (c == '\n') q[k++] = 'n';
        else if (c == '\r') q[k++] = 'r';
        else if (c == '\t') q[k++] = 't';
        else {
            q[k++] = (char)('0' + (c >> 6));
            q[k++] = (char)('0' + ((c >> 3) & 7));
            q[k++] = (char)('0' + (c & 7));
        }
    }
    put(o, q, k);
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

/* The finite, nonzero `v` rounded to `digits` significant digits, laid out
 * as Python's float.__repr__ lays out its shortest digits: fixed notation
 * for decimal exponents -4 to 15 (with ".0" for whole numbers), otherwise
 * d.ddde+XX (at least two exponent digits). */
static size_t repr_digits(double v, int digits, char *b)
{
    char e[40];
    snprintf(e, sizeof e, "%.*e", digits - 1, v);
    const char *p = e;
    size_t n = 0;
    if (*p == '-') b[n++] = *p++;
    char d[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') d[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && d[nd - 1] == '0') nd--;
    if (exp10 < -4 || exp10 >= 16) {
        b[n++] = d[0];
        if (nd > 1) {
            b[n++] = '.';
            memcpy(b + n, d + 1, (size_t)nd - 1);
            n += (size_t)nd - 1;
        }
        n += (size_t)sprintf(b + n, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    } else if (exp10 < 0) {
        b[n++] = '0';
        b[n++] = '.';
        for (int i = -1; i > exp10; i--) b[n++] = '0';
        memcpy(b + n, d, (size_t)nd);
        n += (size_t)nd;
    } else {
        int point = exp10 + 1; /* digits before the point */
        for (int i = 0; i < point; i++) b[n++] = i < nd ? d[i] : '0';
        b[n++] = '.';
        if (nd > point) {
            memcpy(b + n, d + point, (size_t)(nd - point));
            n += (size_t)(nd - point);
        } else {
            b[n++] = '0';
        }
    }
    b[n] = '\0';
    return n;
}

/* repr(v) in Python: "nan", "inf", "-inf", "-0.0", or the shortest decimal
 * that reads back as v. */
static size_t repr_double(double v, char b[32])
{
    if (isnan(v)) return (size_t)sprintf(b, "nan");
    if (isinf(v)) return (size_t)sprintf(b, v < 0 ? "-inf" : "inf");
    if (v == 0) return (size_t)sprintf(b, signbit(v) ? "-0.0" : "0.0");
    char e[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    return repr_digits(v, p, b);
}

/* str(type_checkers.ToShortestFloat(v)) in Python: the decimal of 6 or more
 * significant digits (%.{p}g, p from 6 up) that reads back as the same
 * float, then repr() of that decimal as a double. */
static size_t repr_float(float v, char b[32])
{
    if (isnan(v) || isinf(v) || v == 0) return repr_double((double)v, b);
    char g[40];
    int p = 6;
    for (; p < 9; p++) {
        snprintf(g, sizeof g, "%.*g", p, (double)v);
        if ((float)strtod(g, NULL) == v) break;
    }
    snprintf(g, sizeof g, "%.*g", p, (double)v);
    return repr_double(strtod(g, NULL), b);
}

static void put_number(out *o, const onnxio_field_desc *f, const void *v)
{
    char b[32];
    if (o->style == ONNXIO_TEXT_STR) {
        if (f->kind == ONNXIO_KIND_FLOAT) put_float(o, *(const float *)v);
        else put_double(o, *(const double *)v);
        return;
    }
    size_t n = f->kind == ONNXIO_KIND_FLOAT ? repr_float(*(const float *)v, b)
                                             : repr_double(*(const double *)v, b);
    if (o->style == ONNXIO_TEXT_JSON && (b[0] == 'n' || b[n - 1] == 'f')) {
        puts_(o, b[0] == 'n' ? "\"NaN\"" : b[0] == '-' ? "\"-Infinity\"" : "\"Infinity\"");
        return;
    }
    put(o, b, n);
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
    case ONNXIO_KIND_FLOAT:
    case ONNXIO_KIND_DOUBLE: put_number(o, f, v); break;
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

/* ---- JSON ------------------------------------------------------------ */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64.b64encode: the standard alphabet, '=' padding. */
static void put_base64(out *o, const uint8_t *p, size_t n)
{
    char q[4096];
    size_t k = 0;
    put(o, "\"", 1);
    for (size_t i = 0; i < n && !o->failed; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        q[k++] = b64[v >> 18];
        q[k++] = b64[(v >> 12) & 63];
        q[k++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        q[k++] = i + 2 < n ? b64[v & 63] : '=';
        if (k == sizeof q) {
            put(o, q, k);
            k = 0;
        }
    }
    put(o, q, k);
    put(o, "\"", 1);
}

size_t onnxio__utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int hex4(const char *p, const char *end, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        if (p + i >= end) return 0;
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

onnxio__json_error onnxio__json_string(const char **pp, const char *end, unsigned flags,
                                       int (*put)(void *ctx, const char *bytes, size_t n), void *ctx)
{
    const char *p = *pp, *open = p;
    if (p >= end || *p != '"') return ONNXIO__JSON_UNTERMINATED;
    p++;
    for (;;) {
        const char *run = p;
        while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) {
            if ((unsigned char)*p < 0x80 || !(flags & ONNXIO__JSON_STRICT_UTF8)) {
                p++;
                continue;
            }
            size_t n = onnxio__utf8_sequence((const unsigned char *)p, (size_t)(end - p));
            if (!n) {
                *pp = p;
                return ONNXIO__JSON_UTF8;
            }
            p += n;
        }
        if (p > run && !put(ctx, run, (size_t)(p - run))) return *pp = p, ONNXIO__JSON_SINK;
        if (p >= end) return *pp = open, ONNXIO__JSON_UNTERMINATED;
        if (*p == '"') {
            *pp = p + 1;
            return ONNXIO__JSON_OK;
        }
        if (*p != '\\') return *pp = p, ONNXIO__JSON_CONTROL;
        const char *esc = p;
        if (end - p < 2) return *pp = open, ONNXIO__JSON_UNTERMINATED;
        char e = p[1], b;
        p += 2;
        switch (e) {
        case '"': case '\\': case '/': b = e; break;
        case 'b': b = '\b'; break;
        case 'f': b = '\f'; break;
        case 'n': b = '\n'; break;
        case 'r': b = '\r'; break;
        case 't': b = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (!hex4(p, end, &cp)) return *pp = esc, ONNXIO__JSON_HEX;
            p += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff) return *pp = esc, ONNXIO__JSON_LOW_SURROGATE;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return *pp = esc, ONNXIO__JSON_HIGH_SURROGATE;
                if (!hex4(p + 2, end, &lo)) return *pp = p, ONNXIO__JSON_HEX;
                if (lo < 0xdc00 || lo > 0xdfff) return *pp = esc, ONNXIO__JSON_HIGH_SURROGATE;
                p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp == 0 && (flags & ONNXIO__JSON_NO_NUL)) return *pp = esc, ONNXIO__JSON_NUL;
            char u[4];
            if (!put(ctx, u, onnxio__utf8_encode(cp, u))) return *pp = esc, ONNXIO__JSON_SINK;
            continue;
        }
        default: return *pp = esc, ONNXIO__JSON_ESCAPE;
        }
        if (!put(ctx, &b, 1)) return *pp = esc, ONNXIO__JSON_SINK;
    }
}

ONNXIO_API int onnxio_json_write_string(const void *data, size_t size, unsigned flags, onnxio_write_fn out, void *ctx)
{
    const unsigned char *s = data;
    char esc[16];
    int r;
    if ((r = out(ctx, "\"", 1))) return r;
    size_t run = 0; /* bytes written as they are, pending */
    for (size_t i = 0; i < size; i++) {
        unsigned char c = s[i];
        const char *e = NULL;
        size_t elen = 2, skip = 0;
        if (c >= 0x80) {
            size_t len = onnxio__utf8_sequence(s + i, size - i);
            if (!len) {
                if (flags & ONNXIO_JSON_INVALID_SURROGATE) elen = (size_t)snprintf(esc, sizeof esc, "\\udc%02x", c), e = esc;
                else if (flags & ONNXIO_JSON_INVALID_REPLACE) e = "\\ufffd", elen = 6;
            } else if (flags & ONNXIO_JSON_ASCII) {
                uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
                for (size_t k = 1; k < len; k++) cp = cp << 6 | (s[i + k] & 0x3f);
                if (cp > 0xffff) {
                    cp -= 0x10000;
                    elen = (size_t)snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xd800 + (unsigned)(cp >> 10),
                                            0xdc00 + (unsigned)(cp & 0x3ff));
                } else {
                    elen = (size_t)snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
                }
                e = esc;
                skip = len - 1;
            } else {
                run += len;
                i += len - 1;
                continue;
            }
        } else {
            switch (c) {
            case '"': e = "\\\""; break;
            case '\\': e = "\\\\"; break;
            case '\b': e = "\\b"; break;
            case '\f': e = "\\f"; break;
            case '\n': e = "\\n"; break;
            case '\r': e = "\\r"; break;
            case '\t': e = "\\t"; break;
            default:
                if (c < 0x20 || (c == 0x7f && (flags & ONNXIO_JSON_ESCAPE_DEL)))
                    elen = (size_t)snprintf(esc, sizeof esc, "\\u%04x", c), e = esc;
            }
        }
        if (!e) {
            run++;
            continue;
        }
        if (run && (r = out(ctx, s + i - run, run))) return r;
        run = 0;
        if ((r = out(ctx, e, elen))) return r;
        i += skip;
    }
    if (run && (r = out(ctx, s + size - run, run))) return r;
    return out(ctx, "\"", 1);
}

static int out_write(void *ctx, const void *bytes, size_t n)
{
    out *o = ctx;
    put(o, bytes, n);
    return o->failed;
}

/* json.dumps(str, ensure_ascii=True) of a string field's value, invalid
 * UTF-8 as Python's surrogateescape decoding has it. */
static void put_json_string(out *o, const char *s, size_t n)
{
    onnxio_json_write_string(s, n, ONNXIO_JSON_ASCII | ONNXIO_JSON_ESCAPE_DEL | ONNXIO_JSON_INVALID_SURROGATE,
                             out_write, o);
}

static void json_message(out *o, const onnxio_message *m, int depth);

static void json_value(out *o, const onnxio_field_desc *f, const void *v, int depth)
{
    switch (f->kind) {
    case ONNXIO_KIND_MESSAGE: json_message(o, *(const onnxio_message *const *)v, depth); break;
    case ONNXIO_KIND_INT32: printf_(o, "%" PRId32, *(const int32_t *)v); break;
    case ONNXIO_KIND_INT64: printf_(o, "\"%" PRId64 "\"", *(const int64_t *)v); break;
    case ONNXIO_KIND_UINT64: printf_(o, "\"%" PRIu64 "\"", *(const uint64_t *)v); break;
    case ONNXIO_KIND_FLOAT:
    case ONNXIO_KIND_DOUBLE: put_number(o, f, v); break;
    case ONNXIO_KIND_ENUM: {
        const char *name = onnxio_enum_value_name(f->enum_type, *(const int32_t *)v);
        if (name) {
            put(o, "\"", 1);
            puts_(o, name);
            put(o, "\"", 1);
        } else {
            printf_(o, "%" PRId32, *(const int32_t *)v);
        }
        break;
    }
    case ONNXIO_KIND_STRING: {
        const onnxio_string *s = v;
        put_json_string(o, s->data, s->size);
        break;
    }
    case ONNXIO_KIND_BYTES: {
        const onnxio_string *s = v;
        put_base64(o, (const uint8_t *)s->data, s->size);
        break;
    }
    case ONNXIO_KIND_RAW: {
        const onnxio_span *s = v;
        if (!s->data && s->size) o->failed = o->missing = 1;
        else put_base64(o, s->data, s->size);
        break;
    }
    default: break;
    }
}

/* json.dumps(indent=2) of the message's fields in field-number order (as
 * ListFields gives them); `depth` is the indentation of the opening brace. */
static void json_message(out *o, const onnxio_message *m, int depth)
{
    if (depth > ONNXIO_MAX_DEPTH) {
        o->failed = o->too_deep = 1;
        return;
    }
    const onnxio_message_desc *desc = m->desc;
    int first = 1;
    for (size_t i = 0; i < desc->field_count && !o->failed; i++) {
        const onnxio_field_desc *f = &desc->fields[i];
        if (!onnxio_field_present(m, f)) continue;
        put(o, first ? "{\n" : ",\n", 2);
        first = 0;
        indent(o, depth + 1);
        put(o, "\"", 1);
        puts_(o, f->name);
        put(o, "\": ", 3);
        const void *member = (const char *)m + f->offset;
        if (f->label >= ONNXIO_LABEL_REPEATED) {
            const onnxio__array *a = member;
            size_t es = onnxio__elem_size(f);
            put(o, "[\n", 2);
            for (size_t k = 0; k < a->size; k++) {
                if (k) put(o, ",\n", 2);
                indent(o, depth + 2);
                json_value(o, f, (const char *)a->data + k * es, depth + 2);
            }
            put(o, "\n", 1);
            indent(o, depth + 1);
            put(o, "]", 1);
        } else {
            json_value(o, f, member, depth + 1);
        }
    }
    if (first) {
        put(o, "{}", 2);
        return;
    }
    put(o, "\n", 1);
    indent(o, depth);
    put(o, "}", 1);
}

/* ---- entry points ------------------------------------------------------ */

static void release_text(void *ctx, void *data, size_t size)
{
    (void)ctx;
    (void)size;
    onnxio__free(data);
}

/* Writes `msg` into o (handed to `flush` as the buffer fills, when set). */
static onnxio_status write_text(const void *msg, const onnxio_text_options *opts, const char *what,
                                int (*flush)(void *, const char *, size_t), void *flush_user, out *o)
{
    onnxio_text_options cfg;
    memset(o, 0, sizeof *o);
    o->flush = flush;
    o->flush_user = flush_user;
    onnxio_status s = onnxio__copy_options(&cfg, sizeof cfg, opts, "onnxio_text_options", ONNXIO__TEXT_OPTIONS_0_2_SIZE);
    if (s) return s;
    if (cfg.style == ONNXIO_TEXT_ONNX)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                            "%s: ONNX's textual syntax (ONNXIO_TEXT_ONNX) is read, not written; onnx.printer "
                            "writes it",
                            what);
    if ((unsigned)cfg.style > ONNXIO_TEXT_JSON)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: unknown text style %d", what, (int)cfg.style);
    o->style = cfg.style;
    o->max_bytes = cfg.style == ONNXIO_TEXT_JSON ? 0 : cfg.max_bytes_shown;
    if (o->style == ONNXIO_TEXT_JSON) json_message(o, msg, 0);
    else print_message(o, msg, 0);
    return ONNXIO_OK;
}

static onnxio_status finish(const out *o, const char *what)
{
    if (o->too_deep)
        return onnxio__fail(ONNXIO_ERR_DEPTH, "%s: messages nested deeper than %d levels", what, ONNXIO_MAX_DEPTH);
    if (o->missing)
        return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "%s: a raw_data payload was never loaded", what);
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_text_format(const void *msg, const onnxio_text_options *opts, onnxio_buffer **out_buf)
{
    if (!msg || !out_buf) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "text_format: NULL argument");
    *out_buf = NULL;
    out o;
    onnxio_status s = write_text(msg, opts, "text_format", NULL, NULL, &o);
    if (s) return s;
    onnxio_buffer *b = o.failed ? NULL : onnxio_buffer_wrap(o.buf, o.size, release_text, NULL);
    if (!b) {
        onnxio__free(o.buf);
        s = finish(&o, "text_format");
        return s ? s : onnxio__fail(ONNXIO_ERR_NO_MEMORY, "text_format: out of memory");
    }
    *out_buf = b;
    return ONNXIO_OK;
}

onnxio_status onnxio__text_write(const void *msg, const onnxio_text_options *opts, const char *what,
                                int (*put)(void *user, const char *bytes, size_t n), void *user)
{
    out o;
    onnxio_status s = write_text(msg, opts, what, put, user, &o);
    if (s) return s;
    out_flush(&o);
    onnxio__free(o.buf);
    s = finish(&o, what);
    if (s) return s;
    if (o.failed) return onnxio__fail(ONNXIO_ERR_IO, "%s: cannot write the output", what);
    return ONNXIO_OK;
}
