/* Reading messages from text: protobuf's text format, as
 * google.protobuf.text_format.Parse reads it, and protobuf JSON, as
 * google.protobuf.json_format.Parse reads it (onnxio_text_parse in
 * onnxio.h; ONNX's textual syntax is text_onnx.c; the helpers every text
 * reader shares are text_read.c). Both walk the input once, straight
 * into the message tree: no token list, no JSON document in between.
 * Memory grows with what the text holds, never with a number it states.
 * Writing is src/proto/text.c. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"
#include "proto/text_read.h"

typedef onnxio__text_reader reader;

#define SYNTAX(r, at, ...) onnxio__text_fail(r, at, ONNXIO_ERR_SYNTAX, __VA_ARGS__)

static int put_utf8(reader *r, uint32_t cp)
{
    char b[4];
    return onnxio__text_scratch_put(r, b, onnxio__utf8_encode(cp, b));
}

/* ---- storing values ------------------------------------------------------ */

static const char *full_name(const onnxio_message *m) { return m->desc->full_name; }

/* Where one value of `f` goes in `m`: a new element of a repeated field, or
 * the singular member, marked present (protobuf's text format refuses a
 * singular scalar given twice; JSON lets the last one win). NULL on error. */
static void *value_slot(reader *r, const char *at, onnxio_message *m, const onnxio_field_desc *f, int once)
{
    void *member = onnxio__member(m, f);
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        void *e = onnxio_array_append(r->arena, member, onnxio__elem_size(f));
        if (!e) onnxio__text_no_memory(r);
        return e;
    }
    if (once && onnxio_field_present(m, f)) {
        SYNTAX(r, at, "Message type \"%s\" should not have multiple \"%s\" fields.", full_name(m), f->name);
        return NULL;
    }
    if (f->kind == ONNXIO_KIND_RAW) onnxio_span_clear(member);
    onnxio_set_has(m, f->index);
    return member;
}

/* The sub-message for one value of message field `f`: a new element, or the
 * singular one (created when absent; given twice, the text format refuses
 * it and JSON merges into it). */
static onnxio_message *message_slot(reader *r, const char *at, onnxio_message *m, const onnxio_field_desc *f)
{
    void *member = onnxio__member(m, f);
    onnxio_message *sub;
    if (!r->json && f->label < ONNXIO_LABEL_REPEATED && onnxio_field_present(m, f)) {
        SYNTAX(r, at, "Message type \"%s\" should not have multiple \"%s\" fields.", full_name(m), f->name);
        return NULL;
    }
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        sub = onnxio_list_add(r->arena, member, f->message);
    } else {
        onnxio_message **slot = member;
        if (!*slot) {
            onnxio_set_has(m, f->index);
            *slot = onnxio_message_new(r->arena, f->message);
        }
        sub = *slot;
    }
    if (!sub) onnxio__text_no_memory(r);
    return sub;
}

/* Integer `v` (negative when `neg`, magnitude `mag`) into the member of
 * an integer or enum field. An enum number that names no value is refused
 * (the enums of ONNX are closed: protobuf's readers refuse it too). */
static int store_integer(reader *r, const char *at, const onnxio_field_desc *f, void *dst, int neg, uint64_t mag)
{
    switch (f->kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM:
        if (neg ? mag > (uint64_t)INT32_MAX + 1 : mag > INT32_MAX) break;
        *(int32_t *)dst = neg ? (int32_t)(0 - (int64_t)mag) : (int32_t)mag;
        if (f->kind == ONNXIO_KIND_ENUM && !onnxio_enum_value_name(f->enum_type, *(int32_t *)dst))
            return SYNTAX(r, at,
                          r->json ? "Invalid enum value %s%llu for enum type %s"
                                  : "Enum type has no value with number %s%llu (%s).",
                          neg ? "-" : "", (unsigned long long)mag, f->enum_type->full_name),
                   0;
        return 1;
    case ONNXIO_KIND_INT64:
        if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > INT64_MAX) break;
        *(int64_t *)dst = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        return 1;
    case ONNXIO_KIND_UINT64:
        if (neg && mag) break;
        *(uint64_t *)dst = mag;
        return 1;
    default: break;
    }
    return SYNTAX(r, at, "Integer out of range for field \"%s\".", f->name), 0;
}

/* The doubles that round to infinity as floats: FLT_MAX plus half its ulp. */
#define FLOAT_LIMIT ((double)FLT_MAX + 0x1p103)

static void store_real(const onnxio_field_desc *f, void *dst, double v)
{
    if (f->kind == ONNXIO_KIND_DOUBLE) {
        *(double *)dst = v;
    } else if (isfinite(v) && fabs(v) > FLT_MAX) {
        /* What a float field becomes in protobuf when given a larger double:
         * the nearest float, infinity past the largest. */
        *(float *)dst = copysignf(fabs(v) < FLOAT_LIMIT ? FLT_MAX : INFINITY, v < 0 ? -1.0f : 1.0f);
    } else {
        *(float *)dst = (float)v;
    }
}

/* The bytes in r->scratch into a string, bytes or raw_data member. */
static int store_bytes(reader *r, const char *at, const onnxio_field_desc *f, void *dst)
{
    if (f->kind == ONNXIO_KIND_STRING &&
        onnxio__text_utf8_prefix((const unsigned char *)r->scratch, r->scratch_size) != r->scratch_size)
        return SYNTAX(r, at, "String field \"%s\" is not valid UTF-8.", f->name), 0;
    if (f->kind == ONNXIO_KIND_RAW) {
        /* An owned payload, outside the arena: charged to the budget. */
        onnxio_status s = onnxio__budget_take(&r->budget, r->scratch_size, "raw_data");
        if (s) return onnxio__text_fail(r, at, s, "%s", onnxio_last_error()), 0;
        if (onnxio_span_copy_from(dst, r->scratch, r->scratch_size)) return onnxio__text_no_memory(r), 0;
        return 1;
    }
    if (onnxio_string_set(r->arena, dst, r->scratch, r->scratch_size)) return onnxio__text_no_memory(r), 0;
    return 1;
}

/* Decimal, 0x hex or 0 octal digits (no sign) of [p, e) into *mag; 0 when
 * they are not an integer or pass 2^64 - 1. */
static int parse_magnitude(const char *p, const char *e, uint64_t *mag)
{
    unsigned base = 10;
    if (e - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (e - p > 1 && p[0] == '0') {
        base = 8;
        p++;
    }
    if (p == e) return 0;
    uint64_t v = 0;
    for (; p < e; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
        else if (*p >= 'A' && *p <= 'F') d = (unsigned)(*p - 'A' + 10);
        else return 0;
        if (d >= base || v > (UINT64_MAX - d) / base) return 0;
        v = v * base + d;
    }
    *mag = v;
    return 1;
}

/* ---- protobuf text format --------------------------------------------------- */

typedef enum tok_kind { TOK_END, TOK_IDENT, TOK_NUMBER, TOK_STRING, TOK_CHAR } tok_kind;
typedef struct token {
    tok_kind kind;
    const char *p, *e;
} token;

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Skips white space and # comments. */
static void skip_space(reader *r)
{
    while (r->p < r->end) {
        char c = *r->p;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
            r->p++;
        } else if (c == '#') {
            while (r->p < r->end && *r->p != '\n') r->p++;
        } else {
            break;
        }
    }
}

/* The next token, as protobuf's Python tokenizer cuts them: an identifier
 * ([A-Za-z_] then [0-9A-Za-z_+-]), a number ([0-9+-] or '.' and a digit,
 * then [0-9A-Za-z_.+-]), a quoted string on one line, or one character. */
static token peek(reader *r)
{
    skip_space(r);
    token t = {TOK_END, r->p, r->p};
    if (r->p == r->end) return t;
    const char *q = r->p;
    char c = *q;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
        t.kind = TOK_IDENT;
        while (++q < r->end && (ident_char(*q) || *q == '+' || *q == '-')) {}
    } else if ((c >= '0' && c <= '9') || c == '+' || c == '-' ||
               (c == '.' && q + 1 < r->end && q[1] >= '0' && q[1] <= '9')) {
        t.kind = TOK_NUMBER;
        while (++q < r->end && (ident_char(*q) || *q == '.' || *q == '+' || *q == '-')) {}
    } else if (c == '"' || c == '\'') {
        t.kind = TOK_STRING;
        while (++q < r->end && *q != c && *q != '\n')
            if (*q == '\\' && q + 1 < r->end && q[1] != '\n') q++;
        if (q < r->end && *q == c) q++;
        else t.kind = TOK_CHAR; /* unterminated: refused where a value is read */
    } else {
        t.kind = TOK_CHAR;
        q++;
    }
    t.e = q;
    return t;
}

static token next(reader *r)
{
    token t = peek(r);
    r->p = t.e;
    return t;
}

static int is_char(token t, char c) { return t.kind == TOK_CHAR && t.e - t.p == 1 && *t.p == c; }

static int try_char(reader *r, char c)
{
    token t = peek(r);
    if (!is_char(t, c)) return 0;
    r->p = t.e;
    return 1;
}

static int expect_char(reader *r, char c)
{
    token t = peek(r);
    if (is_char(t, c)) {
        r->p = t.e;
        return 1;
    }
    if (t.kind == TOK_END) return SYNTAX(r, t.p, "Expected \"%c\".", c), 0;
    return SYNTAX(r, t.p, "Expected \"%c\", found \"%.*s\".", c, (int)(t.e - t.p), t.p), 0;
}

static int token_is(token t, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(t.e - t.p) == n && memcmp(t.p, s, n) == 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One quoted string token, unescaped and appended to r->scratch as Python
 * protobuf's CUnescape does: \n \t \r \a \b \f \v \\ \' \", \ooo (1 to 3
 * octal digits, a byte), \xh or \xhh (a byte), \uXXXX and \UXXXXXXXX (a code
 * point, written as UTF-8); a backslash before any other character stays,
 * with the character. */
static int unescape_text(reader *r, token t)
{
    const char *p = t.p + 1, *e = t.e - 1;
    while (p < e) {
        const char *run = p;
        while (p < e && *p != '\\') p++;
        if (p > run && !onnxio__text_scratch_put(r, run, (size_t)(p - run))) return 0;
        if (p == e) break;
        const char *esc = p++;
        char c = *p++;
        char b;
        switch (c) {
        case 'n': b = '\n'; break;
        case 't': b = '\t'; break;
        case 'r': b = '\r'; break;
        case 'a': b = '\a'; break;
        case 'b': b = '\b'; break;
        case 'f': b = '\f'; break;
        case 'v': b = '\v'; break;
        case '\\': case '\'': case '"': b = c; break;
        case 'x': {
            int v = 0, n = 0, d;
            while (n < 2 && p < e && (d = hexval(*p)) >= 0) {
                v = v * 16 + d;
                p++;
                n++;
            }
            if (!n) return SYNTAX(r, esc, "Invalid escape sequence \"\\x\" without hex digits."), 0;
            b = (char)v;
            break;
        }
        case 'u':
        case 'U': {
            int want = c == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int i = 0; i < want; i++, p++) {
                int d = p < e ? hexval(*p) : -1;
                if (d < 0) return SYNTAX(r, esc, "Invalid escape sequence \"\\%c\": %d hex digits wanted.", c, want), 0;
                v = v * 16 + (uint32_t)d;
            }
            if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
                return SYNTAX(r, esc, "Invalid escape sequence: U+%X is not a Unicode scalar value.", (unsigned)v), 0;
            if (!put_utf8(r, v)) return 0;
            continue;
        }
        default:
            if (c >= '0' && c <= '7') {
                int v = c - '0', n = 1;
                while (n < 3 && p < e && *p >= '0' && *p <= '7') {
                    v = v * 8 + (*p++ - '0');
                    n++;
                }
                if (v > 255) return SYNTAX(r, esc, "Invalid escape sequence: octal value above \\377."), 0;
                b = (char)v;
                break;
            }
            if (!onnxio__text_scratch_put(r, esc, 1)) return 0;
            b = c;
            break;
        }
        if (!onnxio__text_scratch_put(r, &b, 1)) return 0;
    }
    return 1;
}

/* A string value: one or more adjacent quoted strings, joined, in r->scratch. */
static int text_string(reader *r)
{
    r->scratch_size = 0;
    token t = peek(r);
    if (t.kind != TOK_STRING) return SYNTAX(r, t.p, "Expected string but found \"%.*s\".", (int)(t.e - t.p), t.p), 0;
    do {
        r->p = t.e;
        if (!unescape_text(r, t)) return 0;
        t = peek(r);
    } while (t.kind == TOK_STRING);
    return 1;
}

/* An integer token: optional sign, then decimal, 0x hex or 0 octal. */
static int text_integer(reader *r, token t, int *neg, uint64_t *mag)
{
    const char *p = t.p;
    *neg = 0;
    if (t.kind == TOK_NUMBER && p < t.e && (*p == '-' || *p == '+')) *neg = *p++ == '-';
    if (t.kind != TOK_NUMBER || !parse_magnitude(p, t.e, mag)) {
        if (t.kind == TOK_NUMBER && p < t.e && *p >= '0' && *p <= '9') {
            /* digits that overflow 64 bits are out of range, not a syntax error */
            const char *q = p;
            while (q < t.e && *q >= '0' && *q <= '9') q++;
            if (q == t.e) return SYNTAX(r, t.p, "Integer out of range: %.*s", (int)(t.e - t.p), t.p), 0;
        }
        return SYNTAX(r, t.p, "Expected integer but found \"%.*s\".", (int)(t.e - t.p), t.p), 0;
    }
    return 1;
}

static int ieq(const char *p, const char *e, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(e - p) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != s[i]) return 0;
    }
    return 1;
}

/* A float token as protobuf's ParseFloat reads it: a decimal number,
 * "inf", "infinity", "nan" (any case, inf with a sign), an 'f' suffix. */
static int text_real(reader *r, token t, double *v)
{
    if (t.kind == TOK_NUMBER || t.kind == TOK_IDENT) {
        const char *p = t.p, *e = t.e;
        int neg = 0;
        if (p < e && (*p == '-' || *p == '+')) neg = *p++ == '-';
        while (e > p && (e[-1] == 'f' || e[-1] == 'F') && !ieq(p, e, "inf")) e--;
        if (ieq(p, e, "inf") || ieq(p, e, "infinity")) {
            *v = neg ? -INFINITY : INFINITY;
            return 1;
        }
        if (ieq(p, e, "nan")) {
            *v = neg ? copysign(NAN, -1.0) : NAN; /* Python's float("-nan"): the sign bit set */
            return 1;
        }
        char buf[128];
        size_t n = (size_t)(e - t.p);
        int ok = n > 0 && n < sizeof buf;
        for (const char *q = p; ok && q < e; q++)
            ok = (*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-';
        if (ok) {
            memcpy(buf, t.p, n);
            buf[n] = '\0';
            char *end;
            *v = strtod(buf, &end);
            if (end == buf + n) return 1;
        }
    }
    return SYNTAX(r, t.p, "Couldn't parse float: %.*s", (int)(t.e - t.p), t.p), 0;
}

static int text_message_body(reader *r, onnxio_message *m, int depth, char close);

/* One value of field f (already past the name and ':'). */
static int text_value(reader *r, onnxio_message *m, const onnxio_field_desc *f, int depth)
{
    if (f->kind == ONNXIO_KIND_MESSAGE) {
        token t = peek(r);
        char close = is_char(t, '<') ? '>' : '}';
        if (!expect_char(r, close == '>' ? '<' : '{')) return 0;
        if (depth + 1 > r->max_depth)
            return onnxio__text_too_deep(r, t.p), 0;
        onnxio_message *sub = message_slot(r, t.p, m, f);
        return sub && text_message_body(r, sub, depth + 1, close);
    }
    token t = peek(r);
    const char *at = t.p;
    switch (f->kind) {
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES:
    case ONNXIO_KIND_RAW: {
        if (!text_string(r)) return 0;
        void *dst = value_slot(r, at, m, f, 1);
        return dst && store_bytes(r, at, f, dst);
    }
    case ONNXIO_KIND_FLOAT:
    case ONNXIO_KIND_DOUBLE: {
        double v;
        if (!text_real(r, t, &v)) return 0;
        r->p = t.e;
        void *dst = value_slot(r, at, m, f, 1);
        if (dst) store_real(f, dst, v);
        return dst != NULL;
    }
    case ONNXIO_KIND_ENUM:
        if (t.kind == TOK_IDENT) {
            for (size_t i = 0; i < f->enum_type->value_count; i++) {
                const onnxio_enum_value *ev = &f->enum_type->values[i];
                if (token_is(t, ev->name)) {
                    r->p = t.e;
                    int32_t *dst = value_slot(r, at, m, f, 1);
                    if (dst) *dst = ev->number;
                    return dst != NULL;
                }
            }
            return SYNTAX(r, at, "Enum type \"%s\" has no value named %.*s.", f->enum_type->full_name,
                          (int)(t.e - t.p), t.p),
                   0;
        }
        /* a number: */
        /* fall through */
    default: {
        int neg;
        uint64_t mag;
        if (!text_integer(r, t, &neg, &mag)) return 0;
        r->p = t.e;
        int64_t tmp[1];
        if (!store_integer(r, at, f, tmp, neg, mag)) return 0;
        void *dst = value_slot(r, at, m, f, 1);
        if (dst) memcpy(dst, tmp, onnxio__elem_size(f));
        return dst != NULL;
    }
    }
}

/* One field of m: name, ':' (optional before a message), a value or a
 * [list], then an optional ',' or ';'. */
static int text_field(reader *r, onnxio_message *m, int depth)
{
    token name = next(r);
    if (name.kind != TOK_IDENT) {
        if (is_char(name, '['))
            return SYNTAX(r, name.p, "Message type \"%s\": extensions and Any are not part of ONNX.", full_name(m)), 0;
        return SYNTAX(r, name.p, "Expected identifier or number, got %.*s.", (int)(name.e - name.p), name.p), 0;
    }
    const onnxio_field_desc *f = NULL;
    for (size_t i = 0; i < m->desc->field_count && !f; i++)
        if (token_is(name, m->desc->fields[i].name)) f = &m->desc->fields[i];
    if (!f)
        return SYNTAX(r, name.p, "Message type \"%s\" has no field named \"%.*s\".", full_name(m),
                      (int)(name.e - name.p), name.p),
               0;
    const onnxio_field_desc *other = onnxio__oneof_other(m, f);
    if (other)
        return SYNTAX(r, name.p,
                      "Field \"%s\" is specified along with field \"%s\", another member of oneof \"%s\" for message "
                      "type \"%s\".",
                      f->name, other->name, f->oneof_name, full_name(m)),
               0;
    if (f->kind == ONNXIO_KIND_MESSAGE) try_char(r, ':');
    else if (!expect_char(r, ':')) return 0;
    if (f->label >= ONNXIO_LABEL_REPEATED && try_char(r, '[')) {
        if (!try_char(r, ']')) {
            for (;;) {
                if (!text_value(r, m, f, depth)) return 0;
                if (try_char(r, ']')) break;
                if (!expect_char(r, ',')) return 0;
            }
        }
    } else if (!text_value(r, m, f, depth)) {
        return 0;
    }
    if (!try_char(r, ',')) try_char(r, ';');
    return 1;
}

/* Fields until `close` ('}' or '>'), or, for the top level (close 0), until
 * the end of the input. */
static int text_message_body(reader *r, onnxio_message *m, int depth, char close)
{
    for (;;) {
        token t = peek(r);
        if (close && is_char(t, close)) {
            r->p = t.e;
            return 1;
        }
        if (t.kind == TOK_END) {
            if (close) return SYNTAX(r, t.p, "Expected \"%c\".", close), 0;
            return 1;
        }
        if (!text_field(r, m, depth)) return 0;
    }
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_space(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int json_peek(reader *r)
{
    json_space(r);
    return r->p < r->end ? (unsigned char)*r->p : -1;
}

static int json_expect(reader *r, char c)
{
    if (json_peek(r) == c) {
        r->p++;
        return 1;
    }
    if (r->p == r->end) return SYNTAX(r, r->p, "Failed to load JSON: expected '%c', found the end of the input.", c), 0;
    return SYNTAX(r, r->p, "Failed to load JSON: expected '%c'.", c), 0;
}

static int json_literal(reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) >= n && memcmp(r->p, word, n) == 0) {
        r->p += n;
        return 1;
    }
    return 0;
}

static int json_put(void *ctx, const char *bytes, size_t n) { return onnxio__text_scratch_put(ctx, bytes, n); }

/* A JSON string (r->p at its '"'), unescaped into r->scratch
 * (onnxio__json_string). Lone surrogates are refused (json_format refuses
 * them in every field). */
static int json_string(reader *r)
{
    const char *at = r->p;
    r->scratch_size = 0;
    if (r->p == r->end || *r->p != '"') return SYNTAX(r, at, "Failed to load JSON: expected a string."), 0;
    switch (onnxio__json_string(&r->p, r->end, 0, json_put, r)) {
    case ONNXIO__JSON_OK: return 1;
    case ONNXIO__JSON_SINK: return 0; /* recorded by onnxio__text_scratch_put */
    case ONNXIO__JSON_CONTROL:
        return SYNTAX(r, r->p, "Failed to load JSON: invalid control character in a string."), 0;
    case ONNXIO__JSON_ESCAPE: return SYNTAX(r, r->p, "Failed to load JSON: invalid \\escape."), 0;
    case ONNXIO__JSON_HEX: return SYNTAX(r, r->p, "Failed to load JSON: invalid \\uXXXX escape."), 0;
    case ONNXIO__JSON_LOW_SURROGATE:
    case ONNXIO__JSON_HIGH_SURROGATE: return SYNTAX(r, r->p, "Unpaired surrogate"), 0;
    default: return SYNTAX(r, at, "Failed to load JSON: unterminated string."), 0;
    }
}

/* A JSON number or one of Python's extensions NaN, Infinity, -Infinity.
 * *integral: written without fraction or exponent (then *neg and *mag hold
 * it exactly, *big when it passes 2^64 - 1); *v: its value as a double. */
typedef struct json_number {
    double v;
    int integral, neg, big;
    uint64_t mag;
} json_number;

static int json_number_at(reader *r, json_number *n)
{
    const char *p = r->p;
    memset(n, 0, sizeof *n);
    if (json_literal(r, "NaN")) {
        n->v = NAN;
        return 1;
    }
    if (json_literal(r, "Infinity")) {
        n->v = INFINITY;
        return 1;
    }
    if (json_literal(r, "-Infinity")) {
        n->v = -INFINITY;
        return 1;
    }
    const char *q = p;
    if (q < r->end && *q == '-') q++;
    const char *digits = q;
    if (q < r->end && *q == '0') q++;
    else if (q < r->end && *q >= '1' && *q <= '9')
        while (q < r->end && *q >= '0' && *q <= '9') q++;
    else
        return SYNTAX(r, p, "Failed to load JSON: expected a value."), 0;
    const char *int_end = q;
    n->integral = 1;
    if (q < r->end && *q == '.') {
        const char *f = ++q;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
        if (q == f) return SYNTAX(r, p, "Failed to load JSON: a number with no digits after '.'."), 0;
        n->integral = 0;
    }
    if (q < r->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < r->end && (*q == '+' || *q == '-')) q++;
        const char *f = q;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
        if (q == f) return SYNTAX(r, p, "Failed to load JSON: a number with no exponent digits."), 0;
        n->integral = 0;
    }
    char buf[512];
    size_t len = (size_t)(q - p);
    if (len >= sizeof buf) {
        /* Longer numbers are kept exact by Python but do not fit any field
         * exactly either: read their magnitude only. */
        n->v = *p == '-' ? -HUGE_VAL : HUGE_VAL;
        n->big = 1;
    } else {
        memcpy(buf, p, len);
        buf[len] = '\0';
        n->v = strtod(buf, NULL);
    }
    n->neg = *p == '-';
    if (n->integral && !n->big) n->big = !onnxio__text_decimal(digits, int_end, &n->mag);
    r->p = q;
    return 1;
}

static int json_message(reader *r, onnxio_message *m, int depth);

/* The string in r->scratch as Python's int() of a str reads it here: an
 * optional sign, then decimal digits only. 1 with *neg and *mag set; 0 when
 * it is not that; -1 when its digits pass 2^64 - 1. */
static int scratch_integer(reader *r, int *neg, uint64_t *mag)
{
    *neg = 0;
    if (!r->scratch_size) return 0;
    const char *p = r->scratch, *e = r->scratch + r->scratch_size;
    if (p < e && (*p == '-' || *p == '+')) *neg = *p++ == '-';
    if (p == e) return 0;
    for (const char *q = p; q < e; q++)
        if (*q < '0' || *q > '9') return 0;
    return onnxio__text_decimal(p, e, mag) ? 1 : -1;
}

/* Base64 digit values, both alphabets (+/ and -_); -2 for '=', -1 for
 * anything else. */
static const signed char b64_value[256] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, 62, -1, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -2, -1, -1,
    -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, 63,
    -1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/* The UTF-8 bytes of the characters Python's str.isspace() takes (what
 * float() strips), past the ASCII ones. */
static const char *const py_spaces[] = {
    "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83",
    "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89", "\xe2\x80\x8a",
    "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80",
};

/* Bytes of the whitespace character at the start (at_end 0) or the end
 * (at_end 1) of [p, e), 0 when there is none. */
static size_t py_space(const char *p, const char *e, int at_end)
{
    if (p == e) return 0;
    char c = at_end ? e[-1] : *p;
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) return 1;
    for (size_t i = 0; i < sizeof py_spaces / sizeof *py_spaces; i++) {
        size_t k = strlen(py_spaces[i]);
        if ((size_t)(e - p) >= k && memcmp(at_end ? e - k : p, py_spaces[i], k) == 0) return k;
    }
    return 0;
}

/* Python's float(text) on the n bytes at s (json_format reads a quoted
 * float so): whitespace around the number is skipped (str.isspace()'s), an
 * underscore between two digits is dropped, "inf", "infinity" and "nan" in
 * any case with a sign ("-nan" has its sign bit set); otherwise a decimal
 * number (no hex, no "nan(...)"). 0 when it is not one. Non-ASCII digits,
 * which Python also takes, are refused. */
static int python_float(const char *s, size_t n, double *v)
{
    const char *p = s, *e = s + n;
    for (size_t k; (k = py_space(p, e, 0)) != 0;) p += k;
    for (size_t k; (k = py_space(p, e, 1)) != 0;) e -= k;
    char buf[128];
    size_t w = 0;
    for (const char *q = p; q < e; q++) {
        char c = *q;
        if (c == '_') {
            if (q == p || q + 1 == e || q[-1] < '0' || q[-1] > '9' || q[1] < '0' || q[1] > '9') return 0;
            continue;
        }
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' ||
              ((c | 0x20) >= 'a' && (c | 0x20) <= 'z' && (c | 0x20) != 'x')))
            return 0;
        if (w + 1 >= sizeof buf) return 0;
        buf[w++] = c;
    }
    if (w == 0) return 0;
    buf[w] = '\0';
    const char *b = buf;
    int neg = 0;
    if (*b == '-' || *b == '+') neg = *b++ == '-';
    const char *be = buf + w;
    if (ieq(b, be, "nan")) {
        *v = neg ? copysign(NAN, -1.0) : NAN;
        return 1;
    }
    if (ieq(b, be, "inf") || ieq(b, be, "infinity")) {
        *v = neg ? -INFINITY : INFINITY;
        return 1;
    }
    for (const char *q = b; q < be; q++)
        if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-')) return 0;
    char *end;
    *v = strtod(buf, &end);
    return end == be;
}

/* What json_format reads for a bytes field, in place in r->scratch:
 * base64.urlsafe_b64decode(value + '=' * (4 - len(value) % 4)), that is
 * binascii.a2b_base64 without strict mode. Both alphabets; any other
 * character is skipped; '=' counts only after two or three digits of a
 * quad (elsewhere it is skipped) and ends the input once the quad is
 * complete with it (two '=' after two digits, one after three; a digit
 * between them starts the count again). Returns 0, or why the text is
 * refused: 1 (a lone digit left: a count of digits 1 more than a multiple
 * of 4), 2 (two or three digits left without the '=' that end them:
 * "Incorrect padding"). The output never overtakes the input (3 bytes
 * per 4 digits). */
static int base64_in_place(reader *r)
{
    const unsigned char *in = (const unsigned char *)r->scratch;
    size_t n = r->scratch_size, w = 0;
    size_t total = n + (4 - n % 4); /* the '=' json_format appends */
    char *out = r->scratch;
    unsigned quad = 0, pads = 0, left = 0;
    for (size_t i = 0; i < total; i++) {
        int v = i < n ? b64_value[in[i]] : -2;
        if (v == -2) {
            if (quad >= 2 && quad + ++pads >= 4) {
                r->scratch_size = w;
                return 0;
            }
            continue;
        }
        if (v < 0) continue;
        pads = 0;
        switch (quad) {
        case 0: left = (unsigned)v; quad = 1; break;
        case 1: out[w++] = (char)(left << 2 | (unsigned)v >> 4); left = (unsigned)v & 0xf; quad = 2; break;
        case 2: out[w++] = (char)(left << 4 | (unsigned)v >> 2); left = (unsigned)v & 3; quad = 3; break;
        default: out[w++] = (char)(left << 6 | (unsigned)v); quad = 0; break;
        }
    }
    if (quad == 1) return 1;
    if (quad) return 2;
    r->scratch_size = w;
    return 0;
}

static int json_scalar(reader *r, onnxio_message *m, const onnxio_field_desc *f)
{
    int c = json_peek(r);
    const char *at = r->p;
    if (c == '{' || c == '[' || c == 't' || c == 'f')
        return SYNTAX(r, at, "Invalid value for field \"%s\" of message type \"%s\".", f->name, full_name(m)), 0;
    switch (f->kind) {
    case ONNXIO_KIND_STRING: {
        if (c != '"') return SYNTAX(r, at, "Field \"%s\" wants a string.", f->name), 0;
        if (!json_string(r)) return 0;
        void *dst = value_slot(r, at, m, f, 0);
        return dst && store_bytes(r, at, f, dst);
    }
    case ONNXIO_KIND_BYTES:
    case ONNXIO_KIND_RAW: {
        if (c != '"') return SYNTAX(r, at, "Field \"%s\" wants base64 text.", f->name), 0;
        if (!json_string(r)) return 0;
        int bad = base64_in_place(r);
        if (bad)
            return SYNTAX(r, at, "Field \"%s\": invalid base64 (%s).", f->name,
                          bad == 1 ? "a count of digits 1 more than a multiple of 4" : "incorrect padding"),
                   0;
        void *dst = value_slot(r, at, m, f, 0);
        return dst && store_bytes(r, at, f, dst);
    }
    case ONNXIO_KIND_FLOAT:
    case ONNXIO_KIND_DOUBLE: {
        double v;
        if (c == '"') {
            if (!json_string(r)) return 0;
            size_t n = r->scratch_size;
            if (n == 3 && memcmp(r->scratch, "nan", 3) == 0)
                return SYNTAX(r, at, "Couldn't parse float \"nan\", use \"NaN\" instead"), 0;
            if (!python_float(r->scratch, n, &v))
                return SYNTAX(r, at, "Couldn't parse float: %.*s", (int)(n < 64 ? n : 64), r->scratch), 0;
        } else {
            json_number num;
            if (!json_number_at(r, &num)) return 0;
            v = num.v;
            if (isnan(v)) return SYNTAX(r, at, "Couldn't parse NaN, use quoted \"NaN\" instead"), 0;
            if (isinf(v))
                return SYNTAX(r, at, "Couldn't parse %sInfinity or value too %s, use quoted \"%sInfinity\" instead",
                              v < 0 ? "-" : "", v < 0 ? "small" : "large", v < 0 ? "-" : ""),
                       0;
            /* json_format refuses past FLT_MAX, and so refuses the largest
             * floats as its own writer gives them (3.4028235e+38); onnxio
             * refuses only what does not round to a finite float. */
            if (num.integral) {
                /* Python's json gives an int, which json_format turns into a
                 * float without its checks: -0 is 0, and a float field past
                 * FLT_MAX is infinity (store_real). */
                if (v == 0) v = 0;
            } else if (f->kind == ONNXIO_KIND_FLOAT && fabs(v) >= FLOAT_LIMIT) {
                return SYNTAX(r, at, "Float value too %s", v < 0 ? "small" : "large"), 0;
            }
        }
        void *dst = value_slot(r, at, m, f, 0);
        if (dst) store_real(f, dst, v);
        return dst != NULL;
    }
    case ONNXIO_KIND_ENUM:
        if (c == '"') {
            if (!json_string(r)) return 0;
            for (size_t i = 0; i < f->enum_type->value_count; i++) {
                const onnxio_enum_value *ev = &f->enum_type->values[i];
                if (strlen(ev->name) == r->scratch_size && memcmp(ev->name, r->scratch, r->scratch_size) == 0) {
                    int32_t *dst = value_slot(r, at, m, f, 0);
                    if (dst) *dst = ev->number;
                    return dst != NULL;
                }
            }
            /* int(value) of a string of digits */
            int neg;
            uint64_t mag;
            if (scratch_integer(r, &neg, &mag) != 1)
                return SYNTAX(r, at, "Invalid enum value %.*s for enum type %s",
                              (int)(r->scratch_size < 64 ? r->scratch_size : 64), r->scratch,
                              f->enum_type->full_name),
                       0;
            int32_t tmp;
            if (!store_integer(r, at, f, &tmp, neg, mag)) return 0;
            int32_t *dst = value_slot(r, at, m, f, 0);
            if (dst) *dst = tmp;
            return dst != NULL;
        }
        /* a number: */
        /* fall through */
    default: {
        int neg;
        uint64_t mag;
        if (c == '"') {
            if (!json_string(r)) return 0;
            int k = scratch_integer(r, &neg, &mag);
            if (k == 0)
                return SYNTAX(r, at, "Couldn't parse integer: \"%.*s\"", (int)(r->scratch_size < 64 ? r->scratch_size : 64),
                              r->scratch),
                       0;
            if (k < 0) return SYNTAX(r, at, "Integer out of range for field \"%s\".", f->name), 0;
        } else {
            json_number num;
            if (!json_number_at(r, &num)) return 0;
            if (num.integral && !isinf(num.v)) {
                if (num.big) return SYNTAX(r, at, "Integer out of range for field \"%s\".", f->name), 0;
                neg = num.neg;
                mag = num.mag;
            } else {
                if (!isfinite(num.v) || num.v != floor(num.v))
                    return SYNTAX(r, at, "Couldn't parse integer: %.*s", (int)(r->p - at), at), 0;
                neg = num.v < 0;
                double a = fabs(num.v);
                if (a >= 18446744073709551616.0)
                    return SYNTAX(r, at, "Integer out of range for field \"%s\".", f->name), 0;
                mag = (uint64_t)a;
            }
        }
        int64_t tmp[1];
        if (!store_integer(r, at, f, tmp, neg, mag)) return 0;
        void *dst = value_slot(r, at, m, f, 0);
        if (dst) memcpy(dst, tmp, onnxio__elem_size(f));
        return dst != NULL;
    }
    }
}

/* One value of f: a message object or a scalar. */
static int json_value(reader *r, onnxio_message *m, const onnxio_field_desc *f, int depth)
{
    if (f->kind != ONNXIO_KIND_MESSAGE) return json_scalar(r, m, f);
    if (json_peek(r) != '{')
        return SYNTAX(r, r->p, "Field \"%s\" of message type \"%s\" wants an object.", f->name, full_name(m)), 0;
    if (depth + 1 > r->max_depth)
        return onnxio__text_too_deep(r, r->p), 0;
    onnxio_message *sub = message_slot(r, r->p, m, f);
    return sub && json_message(r, sub, depth + 1);
}

/* The field a JSON key names: its lowerCamelCase json_name, or its proto
 * name. *by_json tells which matched. */
static const onnxio_field_desc *json_field(const onnxio_message_desc *d, const char *key, size_t n, int *by_json)
{
    for (size_t i = 0; i < d->field_count; i++) {
        const char *name = d->fields[i].name;
        size_t k = 0;
        int upper = 0, ok = 1;
        for (const char *c = name; *c && ok; c++) {
            if (*c == '_') {
                upper = 1;
                continue;
            }
            char want = upper && *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c;
            upper = 0;
            ok = k < n && key[k++] == want;
        }
        if (ok && k == n) {
            *by_json = 1;
            return &d->fields[i];
        }
    }
    for (size_t i = 0; i < d->field_count; i++)
        if (strlen(d->fields[i].name) == n && memcmp(d->fields[i].name, key, n) == 0) {
            *by_json = 0;
            return &d->fields[i];
        }
    return NULL;
}

static int json_message(reader *r, onnxio_message *m, int depth)
{
    if (!json_expect(r, '{')) return 0;
    if (json_peek(r) == '}') {
        r->p++;
        return 1;
    }
    /* Keys seen, by field and spelling (json_format refuses a key twice),
     * and oneofs given a value. */
    uint64_t seen_json = 0, seen_name = 0;
    uint16_t oneofs[64];
    size_t oneof_count = 0;
    for (;;) {
        if (json_peek(r) != '"') return SYNTAX(r, r->p, "Failed to load JSON: expected a key in double quotes."), 0;
        const char *key_at = r->p;
        if (!json_string(r)) return 0;
        int by_json = 0;
        const onnxio_field_desc *f = json_field(m->desc, r->scratch, r->scratch_size, &by_json);
        if (!f)
            return SYNTAX(r, key_at, "Message type \"%s\" has no field named \"%.*s\".", full_name(m),
                          (int)(r->scratch_size < 128 ? r->scratch_size : 128), r->scratch),
                   0;
        uint64_t bit = (uint64_t)1 << f->index, *seen = by_json ? &seen_json : &seen_name;
        if (*seen & bit) return SYNTAX(r, key_at, "Failed to load JSON: duplicate key %s.", f->name), 0;
        *seen |= bit;
        if (!json_expect(r, ':')) return 0;
        int c = json_peek(r);
        if (c == 'n' && json_literal(r, "null")) {
            onnxio_field_clear(m, f);
        } else {
            if (f->oneof) {
                for (size_t i = 0; i < oneof_count; i++)
                    if (oneofs[i] == f->oneof)
                        return SYNTAX(r, key_at, "Message type \"%s\" should not have multiple \"%s\" oneof fields.",
                                      full_name(m), f->oneof_name),
                               0;
                if (oneof_count < 64) oneofs[oneof_count++] = f->oneof;
            }
            if (f->label >= ONNXIO_LABEL_REPEATED) {
                onnxio_field_clear(m, f);
                if (c != '[') return SYNTAX(r, r->p, "repeated field %s must be in [].", f->name), 0;
                r->p++;
                if (json_peek(r) == ']') {
                    r->p++;
                } else {
                    for (;;) {
                        if (json_peek(r) == 'n' && json_literal(r, "null"))
                            return SYNTAX(r, r->p - 4,
                                          "null is not allowed to be used as an element in a repeated field %s.",
                                          f->name),
                                   0;
                        if (!json_value(r, m, f, depth)) return 0;
                        if (json_peek(r) == ']') {
                            r->p++;
                            break;
                        }
                        if (!json_expect(r, ',')) return 0;
                    }
                }
            } else if (!json_value(r, m, f, depth)) {
                return 0;
            }
        }
        if (json_peek(r) == '}') {
            r->p++;
            return 1;
        }
        if (!json_expect(r, ',')) return 0;
    }
}

/* ---- entry point ---------------------------------------------------------------- */

ONNXIO_API onnxio_status onnxio_text_parse(const onnxio_message_desc *desc, const void *text, size_t size,
                                           const onnxio_text_options *opts, onnxio_arena *arena, void **out)
{
    if (out) *out = NULL;
    if (!desc || (!text && size) || !arena || !out)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "text_parse: NULL argument");
    onnxio_text_options cfg;
    onnxio_status s = onnxio__copy_options(&cfg, sizeof cfg, opts, "onnxio_text_options", ONNXIO__TEXT_OPTIONS_0_2_SIZE);
    if (s) return s;
    if ((unsigned)cfg.style > ONNXIO_TEXT_ONNX)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "text_parse: unknown text style %d", (int)cfg.style);
    if (cfg.style == ONNXIO_TEXT_ONNX && desc != &onnxio_desc_ModelProto && desc != &onnxio_desc_GraphProto &&
        desc != &onnxio_desc_FunctionProto && desc != &onnxio_desc_NodeProto)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                            "text_parse: ONNX's textual syntax reads a ModelProto, GraphProto, FunctionProto or "
                            "NodeProto, not a %s",
                            desc->name);
    onnxio_message *m = onnxio_message_new(arena, desc);
    if (!m) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "text_parse: out of memory");
    reader r = {.start = text ? text : "", .arena = arena, .max_depth = onnxio__depth_limit(cfg.max_depth)};
    r.p = r.start;
    r.end = r.start + size;
    /* The expansion budget of a load (onnxio.h, "Expansion"), the text
     * being the bytes read: the arena may grow only as far as it allows,
     * and raw_data payloads are charged as they are made. */
    r.budget = (onnxio__budget){onnxio__max_expansion(cfg.max_expansion), size, 0, 0};
    size_t before = onnxio_arena_used(arena);
    uint64_t left = onnxio__budget_left(&r.budget);
    onnxio__arena_limit(arena, left < SIZE_MAX - before ? before + (size_t)left : 0);
    if (cfg.style == ONNXIO_TEXT_ONNX) {
        r.format = "ONNX textual syntax";
        onnxio__text_parse_onnx(&r, m);
    } else if (cfg.style == ONNXIO_TEXT_JSON) {
        r.format = "JSON";
        r.json = 1;
        if (json_message(&r, m, 0) && json_peek(&r) != -1)
            SYNTAX(&r, r.p, "Failed to load JSON: extra data after the top-level object.");
    } else {
        r.format = "text format";
        text_message_body(&r, m, 0, 0);
    }
    onnxio__arena_limit(arena, 0);
    onnxio__free(r.scratch);
    if (r.status) return r.status;
    *out = m;
    return ONNXIO_OK;
}

onnxio_status onnxio__parse_text(const onnxio_message_desc *desc, const void *data, size_t size,
                                 onnxio_text_style style, const onnxio_parse_options *cfg, onnxio_arena *arena,
                                 void **out)
{
    onnxio_text_options to = ONNXIO_TEXT_OPTIONS_INIT;
    to.style = style;
    to.max_depth = cfg->max_depth;
    to.max_expansion = cfg->max_expansion;
    return onnxio_text_parse(desc, data ? data : "", size, &to, arena, out);
}
