/* Reading ONNX's textual syntax (onnxio_text_parse with ONNXIO_TEXT_ONNX):
 * the language of onnx.parser and onnx.printer, files named *.onnxtxt.
 *
 * The reader follows onnx/defs/parser.cc (ONNX 1.23) step by step, so that
 * it accepts what onnx.parser accepts and builds the message it builds,
 * field presence and order of repeated elements included:
 *
 *   model     := ['<' key ':' value {',' key ':' value} '>'] graph {function}
 *   graph     := id [inputs] '=' '>' '(' [vinfo {',' vinfo}] ')'
 *                ['<' [(vinfo ['=' data]) {',' ...}] '>'] '{' {node} '}'
 *   function  := ['<' key ':' value {',' ...} '>'] id ['<' fattrs '>']
 *                '(' fio ')' '=' '>' '(' fio ')' ['<' vinfos '>'] '{' {node} '}'
 *   node      := ['[' [id] ']'] ids '=' [domain '.'] op [':' overload]
 *                [attrs] '(' ids ')' [attrs]
 *   attr      := name [':' attrtype] '=' (value | '[' [value {',' value}] ']')
 *   value     := literal | '@' id | type [[id] ['='] data] | graph
 *   type      := prim ['[' [dim {',' dim}] ']'] | seq '(' type ')' | ...
 *
 * with its quirks kept: an error in the default value of a function's
 * attribute is dropped (onnx.parser ignores that status) and reading goes
 * on from where it stopped; list values of tensors, graphs and types are
 * read but not kept; a graph, function or node read alone ends where its
 * syntax ends (what follows is not read); the text ends at its first NUL
 * byte (onnx.parser takes a C string). Where onnx.parser's C++ throws
 * (an integer past 64 bits, a float past its range, '-' apart from its
 * digits), this reader reports ONNXIO_ERR_SYNTAX.
 *
 * Errors carry onnx.parser's own words at onnx.parser's own position; an
 * error that may be dropped is only recorded (no line count), so that
 * text full of them costs no more than text without. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"
#include "proto/text_read.h"

typedef onnxio__text_reader reader;

typedef struct ox {
    reader *r;
    /* A ParseError of onnx.parser (a status it may drop) is pending: its
     * words and where. Errors it throws, and every other status (depth,
     * memory), are in r->status, which nothing drops. */
    int soft;
    const char *soft_at;
    char soft_msg[256];
} ox;

typedef struct str {
    const char *p;
    size_t n;
} str;

/* ---- errors ----------------------------------------------------------------- */

static int perr(ox *x, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
static int perr(ox *x, const char *fmt, ...)
{
    if (x->r->status) return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->soft_msg, sizeof x->soft_msg, fmt, ap);
    va_end(ap);
    x->soft = 1;
    x->soft_at = x->r->p;
    return 0;
}

/* What onnx.parser throws on (never dropped). */
static int thrown(ox *x, const char *at, const char *what, str text)
{
    onnxio__text_fail(x->r, at, ONNXIO_ERR_SYNTAX, "%s: %.*s", what, (int)(text.n < 64 ? text.n : 64), text.p);
    return 0;
}

static int no_memory(ox *x)
{
    onnxio__text_no_memory(x->r);
    return 0;
}

/* ---- messages ------------------------------------------------------------------ */

/* The field of index `index` (ONNXIO_FIELD_<Message>_<field>): the
 * schema lists fields by number, each at the position of its index. */
static const onnxio_field_desc *field(const void *msg, unsigned index)
{
    return &((const onnxio_message *)msg)->desc->fields[index];
}

/* A new message at nesting `depth` (the top is 0). */
static void *new_message(ox *x, const onnxio_message_desc *desc, int depth)
{
    if (depth > x->r->max_depth) return onnxio__text_too_deep(x->r, x->r->p), NULL;
    void *m = onnxio_message_new(x->r->arena, desc);
    if (!m) no_memory(x);
    return m;
}

/* protobuf's mutable_<field>(): the sub-message, created (and present)
 * when absent; in a oneof, the other members go. */
static void *sub(ox *x, void *msg, unsigned index, int depth)
{
    const onnxio_field_desc *f = field(msg, index);
    void **slot = onnxio__member(msg, f);
    if (*slot) return *slot;
    void *m = new_message(x, f->message, depth);
    if (!m) return NULL;
    onnxio_set_has(msg, index);
    *slot = m;
    return m;
}

/* Sets sub-message `index` of msg to `m`. */
static void set_sub(void *msg, unsigned index, void *m)
{
    onnxio_set_has(msg, index);
    *(void **)onnxio__member(msg, field(msg, index)) = m;
}

/* Appends a new message to repeated field `index` of msg. */
static void *add(ox *x, void *msg, unsigned index, int depth)
{
    const onnxio_field_desc *f = field(msg, index);
    if (depth > x->r->max_depth) return onnxio__text_too_deep(x->r, x->r->p), NULL;
    void *m = onnxio_list_add(x->r->arena, onnxio__member(msg, f), f->message);
    if (!m) no_memory(x);
    return m;
}

/* Appends `m` (made apart) to repeated field `index` of msg. */
static int push(ox *x, void *msg, unsigned index, void *m)
{
    void **slot = onnxio_array_append(x->r->arena, onnxio__member(msg, field(msg, index)), sizeof(void *));
    if (!slot) return no_memory(x);
    *slot = m;
    return 1;
}

static void clear(void *msg, unsigned index)
{
    onnxio_field_clear(msg, field(msg, index));
}

static int set_str(ox *x, void *msg, unsigned index, str s)
{
    if (onnxio_string_set(x->r->arena, onnxio__member(msg, field(msg, index)), s.p ? s.p : "", s.n))
        return no_memory(x);
    onnxio_set_has(msg, index);
    return 1;
}

static onnxio_string *add_str(ox *x, void *msg, unsigned index, str s)
{
    onnxio_string *e = onnxio_array_append(x->r->arena, onnxio__member(msg, field(msg, index)), sizeof *e);
    if (!e || onnxio_string_set(x->r->arena, e, s.p ? s.p : "", s.n)) return no_memory(x), NULL;
    return e;
}

static void set_i32(void *msg, unsigned index, int32_t v)
{
    *(int32_t *)onnxio__member(msg, field(msg, index)) = v;
    onnxio_set_has(msg, index);
}

static void set_i64(void *msg, unsigned index, int64_t v)
{
    *(int64_t *)onnxio__member(msg, field(msg, index)) = v;
    onnxio_set_has(msg, index);
}

static int append(ox *x, void *array, const void *v, size_t size)
{
    void *e = onnxio_array_append(x->r->arena, array, size);
    if (!e) return no_memory(x);
    memcpy(e, v, size);
    return 1;
}

/* ---- characters (ParserBase) -------------------------------------------------- */

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* White space and '#' comments (to the end of the line). */
static void skip_space(ox *x)
{
    reader *r = x->r;
    for (;;) {
        while (r->p < r->end && is_space((unsigned char)*r->p)) r->p++;
        if (r->p == r->end || *r->p != '#') return;
        const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
        r->p = nl ? nl : r->end;
    }
}

/* The next character after white space, 0 at the end. */
static int next_char(ox *x)
{
    skip_space(x);
    return x->r->p < x->r->end ? (unsigned char)*x->r->p : 0;
}

static int matches_here(ox *x, char c)
{
    if (x->r->p < x->r->end && *x->r->p == c) {
        x->r->p++;
        return 1;
    }
    return 0;
}

static int matches(ox *x, char c)
{
    skip_space(x);
    return matches_here(x, c);
}

static int match(ox *x, char c)
{
    return matches(x, c) ? 1 : perr(x, "Expected character %c not found.", c);
}

static int match_here(ox *x, char c)
{
    return matches_here(x, c) ? 1 : perr(x, "Expected character %c not found.", c);
}

/* [A-Za-z_][A-Za-z0-9_]* after white space, or nothing. */
static str optional_identifier(ox *x)
{
    reader *r = x->r;
    skip_space(x);
    const char *from = r->p;
    if (r->p < r->end && (is_alpha(*r->p) || *r->p == '_'))
        while (++r->p < r->end && (is_alpha(*r->p) || is_digit(*r->p) || *r->p == '_')) {}
    return (str){from, (size_t)(r->p - from)};
}

static int identifier(ox *x, str *id)
{
    *id = optional_identifier(x);
    return id->n ? 1 : perr(x, "Identifier expected but not found.");
}

/* The identifier that follows, left unread (the white space before it is
 * read). */
static str peek_identifier(ox *x)
{
    str id = optional_identifier(x);
    x->r->p = id.p;
    return id;
}

static int str_is(str s, const char *t)
{
    size_t n = strlen(t);
    return s.n == n && memcmp(s.p, t, n) == 0;
}

/* "inf", "infinity" or "nan" in any case, and no digit after it: what
 * NextIsValidFloatString takes (it looks at 9 letters at most). */
static int next_is_float_word(ox *x)
{
    reader *r = x->r;
    skip_space(x);
    const char *q = r->p;
    while (q < r->end && is_alpha(*q) && q - r->p <= 8) q++;
    if (q == r->p || (q < r->end && is_digit(*q))) return 0;
    char w[10];
    size_t n = (size_t)(q - r->p);
    for (size_t i = 0; i < n; i++) w[i] = (char)(r->p[i] >= 'A' && r->p[i] <= 'Z' ? r->p[i] - 'A' + 'a' : r->p[i]);
    w[n] = '\0';
    return strcmp(w, "inf") == 0 || strcmp(w, "infinity") == 0 || strcmp(w, "nan") == 0;
}

/* ---- literals -------------------------------------------------------------------- */

typedef enum lit_kind { LIT_UNDEFINED, LIT_INT, LIT_FLOAT, LIT_STRING } lit_kind;

/* A literal: a string's value (in r->scratch or the input: valid until the
 * next literal), or a number's text as written ('-', maybe white space,
 * then the digits or the word). */
typedef struct lit {
    lit_kind kind;
    str v;
} lit;

/* Whether std::from_chars reads all of `s`: '-'?, then inf / infinity /
 * nan (any case), or digits with at most one '.' and an exponent with
 * digits. (The literal reader makes no other shape.) */
static int number_text_ok(str s)
{
    const char *p = s.p, *e = s.p + s.n;
    if (p < e && *p == '-') p++;
    if (p < e && is_alpha(*p)) return 1; /* a word the reader checked */
    if (p == e || !is_digit(*p)) return 0;
    while (p < e && (is_digit(*p) || *p == '.')) p++;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p == e || !is_digit(*p)) return 0;
        while (p < e && is_digit(*p)) p++;
    }
    return p == e;
}

/* ParserBase::Parse(Literal&). */
static int literal(ox *x, lit *out)
{
    reader *r = x->r;
    out->kind = LIT_UNDEFINED;
    out->v = (str){NULL, 0};
    int c = next_char(x);
    const char *from = r->p;
    if (c == '"') {
        int escaped = 0;
        r->p++;
        while (r->p < r->end && *r->p != '"') {
            if (*r->p == '\\') {
                escaped = 1;
                if (++r->p == r->end) return perr(x, "Incomplete string literal.");
            }
            r->p++;
        }
        if (r->p == r->end) return perr(x, "Incomplete string literal.");
        r->p++;
        out->kind = LIT_STRING;
        const char *q = from + 1, *e = r->p - 1;
        if (!escaped) {
            out->v = (str){q, (size_t)(e - q)};
            return 1;
        }
        /* each backslash goes; the byte after it is kept as it is */
        r->scratch_size = 0;
        while (q < e) {
            const char *run = q;
            while (q < e && *q != '\\') q++;
            if (q > run && !onnxio__text_scratch_put(r, run, (size_t)(q - run))) return 0;
            if (q < e && !onnxio__text_scratch_put(r, ++q, 1)) return 0;
            if (q < e) q++;
        }
        out->v = (str){r->scratch, r->scratch_size};
        return 1;
    }
    if (c == '-') {
        r->p++;
        c = next_char(x);
    }
    if (is_alpha(c)) {
        if (!next_is_float_word(x)) return perr(x, "Encountered invalid float literal!");
        while (r->p < r->end && is_alpha(*r->p)) r->p++;
        str v = {from, (size_t)(r->p - from)};
        /* '-' apart from the word: from_chars refuses it, and onnx.parser
         * then leaves the literal undefined. */
        if (v.p[0] != '-' || is_alpha(v.p[1])) {
            out->kind = LIT_FLOAT;
            out->v = v;
        }
        return 1;
    }
    if (is_digit(c)) {
        int point = 0;
        r->p++;
        while (r->p < r->end && (is_digit(*r->p) || *r->p == '.')) {
            if (*r->p == '.') {
                if (point) break;
                point = 1;
            }
            r->p++;
        }
        if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
            point = 1;
            r->p++;
            if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
            while (r->p < r->end && is_digit(*r->p)) r->p++;
        }
        out->kind = point ? LIT_FLOAT : LIT_INT;
        out->v = (str){from, (size_t)(r->p - from)};
    }
    return 1;
}

/* std::stoll / std::stoull of an integer literal's text ('-'?, digits).
 * *neg and *mag; 0 (thrown) when '-' stands apart or the digits pass
 * 2^64 - 1. */
static int integer_text(ox *x, str v, int *neg, uint64_t *mag)
{
    const char *p = v.p, *e = v.p + v.n;
    *neg = p < e && *p == '-';
    p += *neg;
    if (p == e || !is_digit(*p)) return thrown(x, v.p, "Invalid integer", v);
    if (!onnxio__text_decimal(p, e, mag)) return thrown(x, v.p, "Integer out of range", v);
    return 1;
}

static int int64_of(ox *x, str v, int64_t *out)
{
    int neg;
    uint64_t mag;
    if (!integer_text(x, v, &neg, &mag)) return 0;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return thrown(x, v.p, "Integer out of range", v);
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 1;
}

/* std::stoull: a negative number wraps around, as strtoull gives it. */
static int uint64_of(ox *x, str v, uint64_t *out)
{
    int neg;
    uint64_t mag;
    if (!integer_text(x, v, &neg, &mag)) return 0;
    *out = neg ? 0 - mag : mag;
    return 1;
}

/* LocaleIndependentStof / Stod: the nearest float (double), infinity and
 * NaN by name ("-nan" with its sign bit set); a number past the largest
 * finite value is thrown, one below the smallest becomes 0 or a
 * subnormal. */
static int real_of(ox *x, str v, int single, double *out)
{
    const char *what = single ? "Failed to parse float from string" : "Failed to parse double from string";
    if (!number_text_ok(v)) return thrown(x, v.p, what, v);
    char small[64], *buf = small;
    if (v.n >= sizeof small && !(buf = onnxio__malloc(v.n + 1))) return no_memory(x);
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    const char *word = buf + (buf[0] == '-');
    int named = is_alpha(*word);
    double d;
    if (single) {
        float f = strtof(buf, NULL);
        d = f;
    } else {
        d = strtod(buf, NULL);
    }
    if (named && (word[0] | 0x20) == 'n') d = copysign(NAN, buf[0] == '-' ? -1.0 : 1.0);
    if (buf != small) onnxio__free(buf);
    if (!named && isinf(d)) return thrown(x, v.p, what, v);
    *out = d;
    return 1;
}

/* ParserBase::Parse(int64_t&) and the others: a literal of one kind. */
static int int64_token(ox *x, int64_t *v)
{
    lit l;
    if (!literal(x, &l)) return 0;
    if (l.kind != LIT_INT) return perr(x, "Integer value expected, but not found.");
    return int64_of(x, l.v, v);
}

static int uint64_token(ox *x, uint64_t *v)
{
    lit l;
    if (!literal(x, &l)) return 0;
    if (l.kind != LIT_INT) return perr(x, "Integer value expected, but not found.");
    return uint64_of(x, l.v, v);
}

static int real_token(ox *x, int single, double *v)
{
    lit l;
    if (!literal(x, &l)) return 0;
    if (l.kind != LIT_INT && l.kind != LIT_FLOAT) return perr(x, "Unexpected literal type.");
    return real_of(x, l.v, single, v);
}

static int string_token(ox *x, str *s)
{
    lit l;
    if (!literal(x, &l)) return 0;
    if (l.kind != LIT_STRING) return perr(x, "String value expected, but not found.");
    *s = l.v;
    return 1;
}

static int quotable_identifier(ox *x, str *id)
{
    return next_char(x) == '"' ? string_token(x, id) : identifier(x, id);
}

static int optional_quotable_identifier(ox *x, str *id)
{
    if (next_char(x) == '"') return string_token(x, id);
    *id = optional_identifier(x);
    return 1;
}

/* An identifier, a quoted one, or nothing; *found also when nothing is
 * followed by ',' (an empty name). */
static int optional_quotable_identifier_found(ox *x, str *id, int *found)
{
    if (next_char(x) == '"') {
        *found = 1;
        return string_token(x, id);
    }
    *id = optional_identifier(x);
    *found = id->n || next_char(x) == ',';
    return 1;
}

/* ---- names of types and keywords ------------------------------------------------------ */

/* The number of enum value `name` when it is `id` in lower case (not
 * UNDEFINED), else 0: the type names of AttributeTypeNameMap ("ints",
 * "type_proto"). */
static int32_t lower_enum(const onnxio_enum_desc *e, str id)
{
    for (size_t i = 0; i < e->value_count; i++) {
        const char *name = e->values[i].name;
        if (e->values[i].number == 0 || strlen(name) != id.n) continue;
        size_t k = 0;
        while (k < id.n && id.p[k] == (name[k] >= 'A' && name[k] <= 'Z' ? name[k] - 'A' + 'a' : name[k])) k++;
        if (k == id.n) return e->values[i].number;
    }
    return 0;
}

/* The data type a PrimitiveTypeNameMap name ("float16") names, else 0. */
static int32_t primitive_type(str id)
{
    const onnxio_data_type_desc *d;
    for (size_t i = 0; (d = onnxio_data_type_at(i)); i++)
        if (str_is(id, d->text)) return d->data_type;
    return 0;
}

typedef enum keyword {
    KW_NONE, KW_IR_VERSION, KW_OPSET_IMPORT, KW_PRODUCER_NAME, KW_PRODUCER_VERSION, KW_DOMAIN, KW_MODEL_VERSION,
    KW_DOC_STRING, KW_METADATA_PROPS, KW_SEQ, KW_MAP, KW_OPTIONAL, KW_SPARSE_TENSOR, KW_OPAQUE, KW_OVERLOAD
} keyword;

static keyword keyword_of(str id)
{
    static const char *const names[] = {"", "ir_version", "opset_import", "producer_name", "producer_version",
                                        "domain", "model_version", "doc_string", "metadata_props", "seq", "map",
                                        "optional", "sparse_tensor", "opaque", "overload"};
    for (size_t i = 1; i < sizeof names / sizeof *names; i++)
        if (str_is(id, names[i])) return (keyword)i;
    return KW_NONE;
}

static int next_is_type(ox *x)
{
    str id = peek_identifier(x);
    if (primitive_type(id)) return 1;
    keyword k = keyword_of(id);
    return k == KW_SEQ || k == KW_MAP || k == KW_OPTIONAL || k == KW_SPARSE_TENSOR || k == KW_OPAQUE;
}

/* ---- the grammar (OnnxParser) ------------------------------------------------------ */

static int parse_type(ox *x, onnxio_TypeProto *tp, int depth);
static int parse_graph(ox *x, onnxio_GraphProto *g, int depth);

/* A comma-separated list of names, empty ones allowed: "Op(,x)" has two
 * inputs, the first empty; "Op(x,)" one. */
static int parse_id_list(ox *x, void *msg, unsigned index)
{
    clear(msg, index);
    str id = {0};
    int found;
    if (!optional_quotable_identifier_found(x, &id, &found)) return 0;
    if (!found) return 1;
    if (!add_str(x, msg, index, id)) return 0;
    while (matches(x, ',')) {
        if (!optional_quotable_identifier_found(x, &id, &found)) return 0;
        if (!found) break;
        if (!add_str(x, msg, index, id)) return 0;
    }
    return 1;
}

/* Dimensions: '?', a quoted or bare name, or a number. */
static int parse_shape(ox *x, onnxio_TensorShapeProto *shape, int depth)
{
    clear(shape, ONNXIO_FIELD_TensorShapeProto_dim);
    do {
        onnxio_TensorShapeProto_Dimension *d;
        if (matches(x, '?')) {
            if (!add(x, shape, ONNXIO_FIELD_TensorShapeProto_dim, depth + 1)) return 0;
        } else if (next_char(x) == '"') {
            str id = {0};
            if (!string_token(x, &id)) return 0;
            if (!(d = add(x, shape, ONNXIO_FIELD_TensorShapeProto_dim, depth + 1)) ||
                !set_str(x, d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_param, id))
                return 0;
        } else {
            str id = optional_identifier(x);
            if (id.n) {
                if (!(d = add(x, shape, ONNXIO_FIELD_TensorShapeProto_dim, depth + 1)) ||
                    !set_str(x, d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_param, id))
                    return 0;
            } else {
                int64_t v = 0;
                if (!int64_token(x, &v) || !(d = add(x, shape, ONNXIO_FIELD_TensorShapeProto_dim, depth + 1))) return 0;
                set_i64(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value, v);
            }
        }
    } while (matches(x, ','));
    return 1;
}

/* The "[dims]" of a tensor or sparse tensor type (msg: TypeProto.Tensor or
 * .SparseTensor, whose fields elem_type and shape have the same indexes):
 * none is a scalar (an empty shape), "[]" an unknown rank (no shape). */
static int parse_dims(ox *x, void *msg, unsigned shape_index, int depth)
{
    clear(msg, shape_index);
    if (matches(x, '[')) {
        if (!matches(x, ']')) {
            onnxio_TensorShapeProto *shape = sub(x, msg, shape_index, depth + 1);
            if (!shape || !parse_shape(x, shape, depth + 1)) return 0;
            return match(x, ']');
        }
        return 1;
    }
    return sub(x, msg, shape_index, depth + 1) != NULL;
}

/* An opaque type's "name", "domain.parts" or "domain, name", its parts
 * joined with '.' in r->scratch. */
static int dotted_name(ox *x)
{
    reader *r = x->r;
    str part = {0};
    if (!identifier(x, &part)) return 0;
    r->scratch_size = 0;
    if (!onnxio__text_scratch_put(r, part.p, part.n)) return 0;
    while (matches(x, '.')) {
        if (!identifier(x, &part)) return 0;
        if (!onnxio__text_scratch_put(r, ".", 1) || !onnxio__text_scratch_put(r, part.p, part.n)) return 0;
    }
    return 1;
}

/* Parse(TypeProto&); tp is at nesting `depth`. */
static int parse_type(ox *x, onnxio_TypeProto *tp, int depth)
{
    str id = {0};
    if (!identifier(x, &id)) return 0;
    int32_t dtype = primitive_type(id);
    if (dtype) {
        onnxio_TypeProto_Tensor *t = sub(x, tp, ONNXIO_FIELD_TypeProto_tensor_type, depth + 1);
        if (!t) return 0;
        set_i32(t, ONNXIO_FIELD_TypeProto_Tensor_elem_type, dtype);
        return parse_dims(x, t, ONNXIO_FIELD_TypeProto_Tensor_shape, depth + 1);
    }
    switch (keyword_of(id)) {
    case KW_SEQ:
    case KW_OPTIONAL: {
        int seq = keyword_of(id) == KW_SEQ;
        if (!match(x, '(')) return 0;
        void *s = sub(x, tp, seq ? ONNXIO_FIELD_TypeProto_sequence_type : ONNXIO_FIELD_TypeProto_optional_type,
                      depth + 1);
        onnxio_TypeProto *elem =
            s ? sub(x, s, seq ? ONNXIO_FIELD_TypeProto_Sequence_elem_type : ONNXIO_FIELD_TypeProto_Optional_elem_type,
                    depth + 2)
              : NULL;
        return elem && parse_type(x, elem, depth + 2) && match(x, ')');
    }
    case KW_MAP: {
        if (!match(x, '(')) return 0;
        onnxio_TypeProto_Map *m = sub(x, tp, ONNXIO_FIELD_TypeProto_map_type, depth + 1);
        if (!m || !identifier(x, &id)) return 0;
        if (!(dtype = primitive_type(id))) return perr(x, "Expecting primitive type as map key type.");
        set_i32(m, ONNXIO_FIELD_TypeProto_Map_key_type, dtype);
        if (!match(x, ',')) return 0;
        onnxio_TypeProto *value = sub(x, m, ONNXIO_FIELD_TypeProto_Map_value_type, depth + 2);
        return value && parse_type(x, value, depth + 2) && match(x, ')');
    }
    case KW_SPARSE_TENSOR: {
        if (!match(x, '(') || !identifier(x, &id)) return 0;
        if (!(dtype = primitive_type(id))) return perr(x, "Unexpected type in sparse-tensor element type.");
        onnxio_TypeProto_SparseTensor *t = sub(x, tp, ONNXIO_FIELD_TypeProto_sparse_tensor_type, depth + 1);
        if (!t) return 0;
        set_i32(t, ONNXIO_FIELD_TypeProto_SparseTensor_elem_type, dtype);
        return parse_dims(x, t, ONNXIO_FIELD_TypeProto_SparseTensor_shape, depth + 1) && match(x, ')');
    }
    case KW_OPAQUE: {
        if (!match(x, '(')) return 0;
        onnxio_TypeProto_Opaque *o = sub(x, tp, ONNXIO_FIELD_TypeProto_opaque_type, depth + 1);
        if (!o) return 0;
        clear(o, ONNXIO_FIELD_TypeProto_Opaque_domain);
        clear(o, ONNXIO_FIELD_TypeProto_Opaque_name);
        if (matches(x, ')')) return 1;
        if (!dotted_name(x)) return 0;
        str joined = {x->r->scratch, x->r->scratch_size};
        if (matches(x, ',')) {
            if (!set_str(x, o, ONNXIO_FIELD_TypeProto_Opaque_domain, joined) || !identifier(x, &id) ||
                !set_str(x, o, ONNXIO_FIELD_TypeProto_Opaque_name, id))
                return 0;
        } else if (!set_str(x, o, ONNXIO_FIELD_TypeProto_Opaque_name, joined)) {
            return 0;
        }
        return match(x, ')');
    }
    default: return perr(x, "Unexpected type.");
    }
}

/* Parse(ValueInfoProto&): [type] name. */
static int parse_value_info(ox *x, onnxio_ValueInfoProto *vi, int depth)
{
    if (next_is_type(x)) {
        onnxio_TypeProto *tp = sub(x, vi, ONNXIO_FIELD_ValueInfoProto_type, depth + 1);
        if (!tp || !parse_type(x, tp, depth + 1)) return 0;
    }
    str name = {0};
    return quotable_identifier(x, &name) && set_str(x, vi, ONNXIO_FIELD_ValueInfoProto_name, name);
}

/* "key": "value" pairs, at least one. */
static int parse_string_pairs(ox *x, void *msg, unsigned index, int depth)
{
    do {
        onnxio_StringStringEntryProto *e = add(x, msg, index, depth + 1);
        str s = {0};
        if (!e || !string_token(x, &s) || !set_str(x, e, ONNXIO_FIELD_StringStringEntryProto_key, s) ||
            !match(x, ':') || !string_token(x, &s) || !set_str(x, e, ONNXIO_FIELD_StringStringEntryProto_value, s))
            return 0;
    } while (matches(x, ','));
    return 1;
}

/* The values of a tensor whose type was read (Parse(TensorProto&, const
 * TypeProto&)): "{v, ...}" into the field of its data type, or "[key:
 * value, ...]" external data, or nothing. */
static int parse_tensor_data(ox *x, onnxio_TensorProto *t, const onnxio_TypeProto *type, int depth)
{
    const onnxio_TypeProto_Tensor *tt = type ? type->tensor_type : NULL;
    if (!tt) return perr(x, "Error parsing TensorProto (expected a tensor type).");
    int32_t elem = tt->elem_type;
    set_i32(t, ONNXIO_FIELD_TensorProto_data_type, elem);
    if (!tt->shape) return perr(x, "Error parsing TensorProto (expected a tensor shape).");
    for (size_t i = 0; i < tt->shape->dim.size; i++) {
        const onnxio_TensorShapeProto_Dimension *d = tt->shape->dim.data[i];
        if (!onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value))
            return perr(x, "Error parsing TensorProto shape (expected numeric dimension).");
        if (!append(x, &t->dims, &d->dim_value, sizeof d->dim_value)) return 0;
    }
    if (matches(x, '{')) {
        if (matches(x, '}')) return 1;
        /* Each value goes to the typed field of the data type's storage type. */
        const onnxio_data_type_desc *dd = onnxio_data_type_info(elem);
        int32_t storage = dd ? dd->storage : ONNXIO_TensorProto_DataType_UNDEFINED;
        do {
            switch (storage) {
            case ONNXIO_TensorProto_DataType_INT32: { /* INT32 and the types it stores */
                int64_t v = 0;
                if (!int64_token(x, &v)) return 0;
                if (v > INT32_MAX || v < INT32_MIN)
                    return perr(x, "Mismatch between data type and value: %%d, %%d%d%lld", (int)elem, (long long)v);
                int32_t w = (int32_t)v;
                if (!append(x, &t->int32_data, &w, sizeof w)) return 0;
                break;
            }
            case ONNXIO_TensorProto_DataType_INT64: {
                int64_t v = 0;
                if (!int64_token(x, &v) || !append(x, &t->int64_data, &v, sizeof v)) return 0;
                break;
            }
            case ONNXIO_TensorProto_DataType_UINT64: { /* UINT32, UINT64 */
                uint64_t v = 0;
                if (!uint64_token(x, &v) || !append(x, &t->uint64_data, &v, sizeof v)) return 0;
                break;
            }
            case ONNXIO_TensorProto_DataType_FLOAT: { /* FLOAT, COMPLEX64 */
                double v = 0;
                if (!real_token(x, 1, &v)) return 0;
                float f = (float)v;
                if (!append(x, &t->float_data, &f, sizeof f)) return 0;
                break;
            }
            case ONNXIO_TensorProto_DataType_DOUBLE: { /* DOUBLE, COMPLEX128 */
                double v = 0;
                if (!real_token(x, 0, &v) || !append(x, &t->double_data, &v, sizeof v)) return 0;
                break;
            }
            case ONNXIO_TensorProto_DataType_STRING: {
                str s = {0};
                if (!string_token(x, &s) || !add_str(x, t, ONNXIO_FIELD_TensorProto_string_data, s)) return 0;
                break;
            }
            default: return perr(x, "Unhandled type: %%d%d", (int)elem);
            }
        } while (matches(x, ','));
        return match(x, '}');
    }
    if (matches(x, '[')) {
        set_i32(t, ONNXIO_FIELD_TensorProto_data_location, ONNXIO_TensorProto_DataLocation_EXTERNAL);
        return parse_string_pairs(x, t, ONNXIO_FIELD_TensorProto_external_data, depth) && match(x, ']');
    }
    return 1;
}

/* AttributeProto.type names (AttributeProto_AttributeType_Name). */
static const char *attr_type_name(int32_t type)
{
    const char *n = onnxio_enum_value_name(&onnxio_enum_AttributeProto_AttributeType, type);
    return n ? n : "";
}

static int is_singleton_type(int32_t t)
{
    return t == ONNXIO_AttributeProto_AttributeType_FLOAT || t == ONNXIO_AttributeProto_AttributeType_INT ||
           t == ONNXIO_AttributeProto_AttributeType_STRING || t == ONNXIO_AttributeProto_AttributeType_TENSOR ||
           t == ONNXIO_AttributeProto_AttributeType_GRAPH || t == ONNXIO_AttributeProto_AttributeType_SPARSE_TENSOR ||
           t == ONNXIO_AttributeProto_AttributeType_TYPE_PROTO;
}

static int32_t singleton_type(int32_t t)
{
    switch (t) {
    case ONNXIO_AttributeProto_AttributeType_FLOATS: return ONNXIO_AttributeProto_AttributeType_FLOAT;
    case ONNXIO_AttributeProto_AttributeType_INTS: return ONNXIO_AttributeProto_AttributeType_INT;
    case ONNXIO_AttributeProto_AttributeType_STRINGS: return ONNXIO_AttributeProto_AttributeType_STRING;
    case ONNXIO_AttributeProto_AttributeType_TENSORS: return ONNXIO_AttributeProto_AttributeType_TENSOR;
    case ONNXIO_AttributeProto_AttributeType_GRAPHS: return ONNXIO_AttributeProto_AttributeType_GRAPH;
    case ONNXIO_AttributeProto_AttributeType_SPARSE_TENSORS: return ONNXIO_AttributeProto_AttributeType_SPARSE_TENSOR;
    case ONNXIO_AttributeProto_AttributeType_TYPE_PROTOS: return ONNXIO_AttributeProto_AttributeType_TYPE_PROTO;
    default: return t;
    }
}

static void set_attr_type(onnxio_AttributeProto *a, int32_t type)
{
    set_i32(a, ONNXIO_FIELD_AttributeProto_type, type);
}

static int set_attr_float(ox *x, onnxio_AttributeProto *a, str v)
{
    double d;
    set_attr_type(a, ONNXIO_AttributeProto_AttributeType_FLOAT);
    if (!real_of(x, v, 1, &d)) return 0;
    a->f = (float)d;
    onnxio_set_has(a, ONNXIO_FIELD_AttributeProto_f);
    return 1;
}

/* ParseSingleAttributeValue: one value into `a` (at nesting `depth`),
 * which must then have type `expected` unless that is UNDEFINED. */
static int parse_single_value(ox *x, onnxio_AttributeProto *a, int32_t expected, int depth)
{
    int next = next_char(x);
    if (is_alpha(next) || next == '_') {
        if (next_is_type(x)) {
            onnxio_TypeProto *tp = new_message(x, &onnxio_desc_TypeProto, depth + 1);
            if (!tp || !parse_type(x, tp, depth + 1)) return 0;
            next = next_char(x);
            if (next == '{' || next == '=' || peek_identifier(x).n) {
                set_attr_type(a, ONNXIO_AttributeProto_AttributeType_TENSOR);
                onnxio_TensorProto *t = sub(x, a, ONNXIO_FIELD_AttributeProto_t, depth + 1);
                str name = {0};
                if (!t || !set_str(x, t, ONNXIO_FIELD_TensorProto_name, (str){"", 0}) ||
                    !optional_quotable_identifier(x, &name) || !set_str(x, t, ONNXIO_FIELD_TensorProto_name, name))
                    return 0;
                (void)matches(x, '=');
                if (!parse_tensor_data(x, t, tp, depth + 1)) return 0;
            } else {
                /* `a` is new: it has no tp to copy into */
                set_attr_type(a, ONNXIO_AttributeProto_AttributeType_TYPE_PROTO);
                set_sub(a, ONNXIO_FIELD_AttributeProto_tp, tp);
            }
        } else if (next_is_float_word(x)) {
            lit l;
            if (!literal(x, &l)) return 0;
            if (!set_attr_float(x, a, l.v)) return 0;
        } else {
            set_attr_type(a, ONNXIO_AttributeProto_AttributeType_GRAPH);
            onnxio_GraphProto *g = sub(x, a, ONNXIO_FIELD_AttributeProto_g, depth + 1);
            if (!g || !parse_graph(x, g, depth + 1)) return 0;
        }
    } else if (matches(x, '@')) {
        str name = {0};
        if (!quotable_identifier(x, &name) || !set_str(x, a, ONNXIO_FIELD_AttributeProto_ref_attr_name, name))
            return 0;
    } else {
        lit l;
        if (!literal(x, &l)) return 0;
        switch (l.kind) {
        case LIT_UNDEFINED: return perr(x, "Internal error");
        case LIT_INT:
            if (expected == ONNXIO_AttributeProto_AttributeType_FLOAT) {
                /* an integer where a float is expected: read as a float ("-0" stays -0.0) */
                if (!set_attr_float(x, a, l.v)) return 0;
            } else {
                int64_t v = 0;
                set_attr_type(a, ONNXIO_AttributeProto_AttributeType_INT);
                if (!int64_of(x, l.v, &v)) return 0;
                set_i64(a, ONNXIO_FIELD_AttributeProto_i, v);
            }
            break;
        case LIT_FLOAT:
            if (!set_attr_float(x, a, l.v)) return 0;
            break;
        case LIT_STRING:
            set_attr_type(a, ONNXIO_AttributeProto_AttributeType_STRING);
            if (!set_str(x, a, ONNXIO_FIELD_AttributeProto_s, l.v)) return 0;
            break;
        }
    }
    if (expected != ONNXIO_AttributeProto_AttributeType_UNDEFINED && expected != a->type)
        return perr(x, "Mismatch between expected type %s and specified value's type%s", attr_type_name(expected),
                    attr_type_name(a->type));
    return 1;
}

/* Parse(AttributeProto&, name): [':' type] '=' value or [values]; `a` is
 * at nesting `depth`. */
static int parse_attribute_named(ox *x, onnxio_AttributeProto *a, str name, int depth)
{
    if (!set_str(x, a, ONNXIO_FIELD_AttributeProto_name, name)) return 0;
    if (matches(x, ':')) {
        str t = {0};
        if (!identifier(x, &t)) return 0;
        int32_t type = lower_enum(&onnxio_enum_AttributeProto_AttributeType, t);
        if (!type) return perr(x, "Unexpected attribute type.");
        set_attr_type(a, type);
    }
    if (!match(x, '=')) return 0;
    if (next_char(x) != '[') return parse_single_value(x, a, a->type, depth);
    if (!match(x, '[')) return 0;
    if (next_char(x) != ']') {
        /* each value is read into a scratch attribute; numbers and strings
         * are kept, other values dropped (as onnx.parser does) */
        onnxio_AttributeProto *v = new_message(x, &onnxio_desc_AttributeProto, depth);
        if (!v) return 0;
        do {
            onnxio_message_clear(v);
            if (!parse_single_value(x, v, singleton_type(a->type), depth)) return 0;
            switch (v->type) {
            case ONNXIO_AttributeProto_AttributeType_INT:
                set_attr_type(a, ONNXIO_AttributeProto_AttributeType_INTS);
                if (!append(x, &a->ints, &v->i, sizeof v->i)) return 0;
                break;
            case ONNXIO_AttributeProto_AttributeType_FLOAT:
                set_attr_type(a, ONNXIO_AttributeProto_AttributeType_FLOATS);
                if (!append(x, &a->floats, &v->f, sizeof v->f)) return 0;
                break;
            case ONNXIO_AttributeProto_AttributeType_STRING:
                /* the value is in the arena already: shared, not copied */
                if (!append(x, &a->strings, &v->s, sizeof v->s)) return 0;
                set_attr_type(a, ONNXIO_AttributeProto_AttributeType_STRINGS);
                break;
            default: break;
            }
        } while (matches(x, ','));
    } else {
        if (a->type == ONNXIO_AttributeProto_AttributeType_UNDEFINED)
            return perr(x, "Empty list attribute value requires type annotation.");
        if (is_singleton_type(a->type)) return perr(x, "Singleton attribute value cannot be specified as a list.");
    }
    return match(x, ']');
}

/* Parse(AttrList&): ['<' attr {',' attr} '>'] into repeated field `index`
 * of msg (a NodeProto). */
static int parse_attributes(ox *x, void *msg, unsigned index, int depth)
{
    clear(msg, index);
    if (!matches(x, '<')) return 1;
    do {
        onnxio_AttributeProto *a = add(x, msg, index, depth + 1);
        str name = {0};
        if (!a || !identifier(x, &name) || !parse_attribute_named(x, a, name, depth + 1)) return 0;
    } while (matches(x, ','));
    return match(x, '>');
}

/* Parse(NodeProto&); the node is at nesting `depth`. */
static int parse_node(ox *x, onnxio_NodeProto *node, int depth)
{
    reader *r = x->r;
    if (matches(x, '[')) {
        str name = {0};
        if (!set_str(x, node, ONNXIO_FIELD_NodeProto_name, (str){"", 0}) || !optional_quotable_identifier(x, &name) ||
            !set_str(x, node, ONNXIO_FIELD_NodeProto_name, name) || !match(x, ']'))
            return 0;
    }
    if (!parse_id_list(x, node, ONNXIO_FIELD_NodeProto_output) || !match(x, '=')) return 0;
    /* [domain '.'] op: the parts before the last '.' joined with '.' */
    str id = optional_identifier(x);
    r->scratch_size = 0;
    while (matches(x, '.')) {
        if (r->scratch_size && !onnxio__text_scratch_put(r, ".", 1)) return 0;
        if (!onnxio__text_scratch_put(r, id.p, id.n) || !identifier(x, &id)) return 0;
    }
    if (!set_str(x, node, ONNXIO_FIELD_NodeProto_domain, (str){r->scratch, r->scratch_size}) ||
        !set_str(x, node, ONNXIO_FIELD_NodeProto_op_type, id))
        return 0;
    if (matches(x, ':')) {
        str overload = {0};
        if (!identifier(x, &overload) || !set_str(x, node, ONNXIO_FIELD_NodeProto_overload, overload)) return 0;
    }
    if (!parse_attributes(x, node, ONNXIO_FIELD_NodeProto_attribute, depth) || !match(x, '(') ||
        !parse_id_list(x, node, ONNXIO_FIELD_NodeProto_input) || !match(x, ')'))
        return 0;
    /* the attributes may come after the inputs */
    if (node->attribute.size == 0 && !parse_attributes(x, node, ONNXIO_FIELD_NodeProto_attribute, depth)) return 0;
    return 1;
}

/* '{' {node} '}' into repeated field `index` of msg. */
static int parse_nodes(ox *x, void *msg, unsigned index, int depth)
{
    clear(msg, index);
    if (!match(x, '{')) return 0;
    while (!matches(x, '}')) {
        onnxio_NodeProto *n = add(x, msg, index, depth + 1);
        if (!n || !parse_node(x, n, depth + 1)) return 0;
    }
    return 1;
}

/* A graph's inputs: value infos, each with an optional "= data" that
 * makes an initializer of its name (ParseInput). */
static int parse_inputs(ox *x, onnxio_GraphProto *g, int depth)
{
    clear(g, ONNXIO_FIELD_GraphProto_input);
    if (!matches(x, '(') || matches(x, ')')) return 1;
    do {
        onnxio_ValueInfoProto *vi = new_message(x, &onnxio_desc_ValueInfoProto, depth + 1);
        if (!vi || !parse_value_info(x, vi, depth + 1) || !push(x, g, ONNXIO_FIELD_GraphProto_input, vi)) return 0;
        if (matches(x, '=')) {
            onnxio_TensorProto *t = add(x, g, ONNXIO_FIELD_GraphProto_initializer, depth + 1);
            if (!t || !set_str(x, t, ONNXIO_FIELD_TensorProto_name, (str){vi->name.data, vi->name.size}) ||
                !parse_tensor_data(x, t, vi->type, depth + 1))
                return 0;
        }
    } while (matches(x, ','));
    return match(x, ')');
}

/* '<' [value info or initializer {',' ...}] '>' after a graph's outputs
 * (ParseValueInfo). */
static int parse_value_infos(ox *x, onnxio_GraphProto *g, int depth)
{
    clear(g, ONNXIO_FIELD_GraphProto_value_info);
    if (!matches(x, '<') || matches(x, '>')) return 1;
    do {
        onnxio_ValueInfoProto *vi = new_message(x, &onnxio_desc_ValueInfoProto, depth + 1);
        if (!vi || !parse_value_info(x, vi, depth + 1)) return 0;
        if (matches(x, '=')) {
            onnxio_TensorProto *t = add(x, g, ONNXIO_FIELD_GraphProto_initializer, depth + 1);
            if (!t || !set_str(x, t, ONNXIO_FIELD_TensorProto_name, (str){vi->name.data, vi->name.size}) ||
                !parse_tensor_data(x, t, vi->type, depth + 1))
                return 0;
        } else if (!push(x, g, ONNXIO_FIELD_GraphProto_value_info, vi)) {
            return 0;
        }
    } while (matches(x, ','));
    return match(x, '>');
}

static int parse_graph_named(ox *x, str name, onnxio_GraphProto *g, int depth)
{
    if (!set_str(x, g, ONNXIO_FIELD_GraphProto_name, name)) return 0;
    clear(g, ONNXIO_FIELD_GraphProto_initializer);
    if (!parse_inputs(x, g, depth) || !match(x, '=') || !match_here(x, '>')) return 0;
    clear(g, ONNXIO_FIELD_GraphProto_output);
    if (!match(x, '(')) return 0;
    if (!matches(x, ')')) {
        do {
            onnxio_ValueInfoProto *vi = add(x, g, ONNXIO_FIELD_GraphProto_output, depth + 1);
            if (!vi || !parse_value_info(x, vi, depth + 1)) return 0;
        } while (matches(x, ','));
        if (!match(x, ')')) return 0;
    }
    return parse_value_infos(x, g, depth) && parse_nodes(x, g, ONNXIO_FIELD_GraphProto_node, depth);
}

/* Parse(GraphProto&): a (quotable) name, then the graph. */
static int parse_graph(ox *x, onnxio_GraphProto *g, int depth)
{
    str name = {0};
    return quotable_identifier(x, &name) && parse_graph_named(x, name, g, depth);
}

/* '[' ["domain" : version {',' ...}] ']' into repeated field `index`. */
static int parse_opsets(ox *x, void *msg, unsigned index, int depth)
{
    if (!match(x, '[')) return 0;
    if (matches(x, ']')) return 1;
    do {
        onnxio_OperatorSetIdProto *o = add(x, msg, index, depth + 1);
        str domain = {0};
        int64_t version;
        if (!o || !string_token(x, &domain) || !set_str(x, o, ONNXIO_FIELD_OperatorSetIdProto_domain, domain) ||
            !match(x, ':') || !int64_token(x, &version))
            return 0;
        set_i64(o, ONNXIO_FIELD_OperatorSetIdProto_version, version);
    } while (matches(x, ','));
    return match(x, ']');
}

/* A function's inputs or outputs: names, each maybe after its type (a
 * value info of the function then). */
static int parse_function_io(ox *x, onnxio_FunctionProto *fn, unsigned index, int depth)
{
    clear(fn, index);
    if (!match(x, '(')) return 0;
    if (matches(x, ')')) return 1;
    do {
        onnxio_string *name = add_str(x, fn, index, (str){"", 0});
        onnxio_ValueInfoProto *vi = NULL;
        if (!name) return 0;
        size_t slot = ((onnxio_string_array *)onnxio__member(fn, field(fn, index)))->size - 1;
        if (next_is_type(x)) {
            onnxio_TypeProto *tp;
            if (!(vi = add(x, fn, ONNXIO_FIELD_FunctionProto_value_info, depth + 1)) ||
                !(tp = sub(x, vi, ONNXIO_FIELD_ValueInfoProto_type, depth + 2)) || !parse_type(x, tp, depth + 2))
                return 0;
        }
        str id = {0};
        if (!quotable_identifier(x, &id)) return 0;
        name = &((onnxio_string_array *)onnxio__member(fn, field(fn, index)))->data[slot];
        if (onnxio_string_set(x->r->arena, name, id.p, id.n)) return no_memory(x);
        if (vi && !set_str(x, vi, ONNXIO_FIELD_ValueInfoProto_name, id)) return 0;
    } while (matches(x, ','));
    return match(x, ')');
}

/* Parse(FunctionProto&); fn is at nesting `depth`. */
static int parse_function(ox *x, onnxio_FunctionProto *fn, int depth)
{
    if (matches(x, '<')) {
        do {
            str kw = {0}, s = {0};
            if (!identifier(x, &kw) || !match(x, ':')) return 0;
            switch (keyword_of(kw)) {
            case KW_OPSET_IMPORT:
                if (!parse_opsets(x, fn, ONNXIO_FIELD_FunctionProto_opset_import, depth)) return 0;
                break;
            case KW_DOC_STRING:
                if (!string_token(x, &s) || !set_str(x, fn, ONNXIO_FIELD_FunctionProto_doc_string, s)) return 0;
                break;
            case KW_DOMAIN:
                if (!string_token(x, &s) || !set_str(x, fn, ONNXIO_FIELD_FunctionProto_domain, s)) return 0;
                break;
            case KW_OVERLOAD:
                if (!string_token(x, &s) || !set_str(x, fn, ONNXIO_FIELD_FunctionProto_overload, s)) return 0;
                break;
            default: return perr(x, "Unhandled keyword.");
            }
        } while (matches(x, ','));
        if (!match(x, '>')) return 0;
    }
    str name = {0};
    if (!quotable_identifier(x, &name) || !set_str(x, fn, ONNXIO_FIELD_FunctionProto_name, name)) return 0;
    /* '<' attribute names, or names with a default value '>' */
    clear(fn, ONNXIO_FIELD_FunctionProto_attribute);
    clear(fn, ONNXIO_FIELD_FunctionProto_attribute_proto);
    if (matches(x, '<')) {
        do {
            str id = {0};
            if (!quotable_identifier(x, &id)) return 0;
            int next = next_char(x);
            if (next == ':' || next == '=') {
                onnxio_AttributeProto *a = add(x, fn, ONNXIO_FIELD_FunctionProto_attribute_proto, depth + 1);
                if (!a) return 0;
                /* onnx.parser ignores how this ends: an error here is
                 * dropped, and reading goes on from where it stopped */
                if (!parse_attribute_named(x, a, id, depth + 1)) {
                    if (x->r->status) return 0;
                    x->soft = 0;
                }
            } else if (!add_str(x, fn, ONNXIO_FIELD_FunctionProto_attribute, id)) {
                return 0;
            }
        } while (matches(x, ','));
        if (!match(x, '>')) return 0;
    }
    clear(fn, ONNXIO_FIELD_FunctionProto_value_info);
    if (!parse_function_io(x, fn, ONNXIO_FIELD_FunctionProto_input, depth) || !match(x, '=') ||
        !match_here(x, '>') || !parse_function_io(x, fn, ONNXIO_FIELD_FunctionProto_output, depth))
        return 0;
    if (next_char(x) == '<') {
        if (!match(x, '<')) return 0;
        if (!matches(x, '>')) {
            do {
                onnxio_ValueInfoProto *vi = add(x, fn, ONNXIO_FIELD_FunctionProto_value_info, depth + 1);
                if (!vi || !parse_value_info(x, vi, depth + 1)) return 0;
            } while (matches(x, ','));
            if (!match(x, '>')) return 0;
        }
    }
    return parse_nodes(x, fn, ONNXIO_FIELD_FunctionProto_node, depth);
}

/* Parse(ModelProto&): ['<' key: value, ... '>'] graph {function}. */
static int parse_model(ox *x, onnxio_ModelProto *m)
{
    if (matches(x, '<')) {
        do {
            str kw = {0}, s = {0};
            int64_t v = 0;
            if (!identifier(x, &kw) || !match(x, ':')) return 0;
            switch (keyword_of(kw)) {
            case KW_IR_VERSION:
                if (!int64_token(x, &v)) return 0;
                set_i64(m, ONNXIO_FIELD_ModelProto_ir_version, v);
                break;
            case KW_OPSET_IMPORT:
                if (!parse_opsets(x, m, ONNXIO_FIELD_ModelProto_opset_import, 0)) return 0;
                break;
            case KW_PRODUCER_NAME:
                if (!string_token(x, &s) || !set_str(x, m, ONNXIO_FIELD_ModelProto_producer_name, s)) return 0;
                break;
            case KW_PRODUCER_VERSION:
                if (!string_token(x, &s) || !set_str(x, m, ONNXIO_FIELD_ModelProto_producer_version, s)) return 0;
                break;
            case KW_DOMAIN:
                if (!string_token(x, &s) || !set_str(x, m, ONNXIO_FIELD_ModelProto_domain, s)) return 0;
                break;
            case KW_MODEL_VERSION:
                if (!int64_token(x, &v)) return 0;
                set_i64(m, ONNXIO_FIELD_ModelProto_model_version, v);
                break;
            case KW_DOC_STRING:
                if (!string_token(x, &s) || !set_str(x, m, ONNXIO_FIELD_ModelProto_doc_string, s)) return 0;
                break;
            case KW_METADATA_PROPS:
                if (!match(x, '[')) return 0;
                if (!matches(x, ']') &&
                    !(parse_string_pairs(x, m, ONNXIO_FIELD_ModelProto_metadata_props, 0) && match(x, ']')))
                    return 0;
                break;
            default: return perr(x, "Unhandled keyword.");
            }
        } while (matches(x, ','));
        if (!match(x, '>')) return 0;
    }
    onnxio_GraphProto *g = sub(x, m, ONNXIO_FIELD_ModelProto_graph, 1);
    if (!g || !parse_graph(x, g, 1)) return 0;
    while (skip_space(x), x->r->p < x->r->end) {
        onnxio_FunctionProto *fn = add(x, m, ONNXIO_FIELD_ModelProto_functions, 1);
        if (!fn || !parse_function(x, fn, 1)) return 0;
    }
    return 1;
}

onnxio_status onnxio__text_parse_onnx(reader *r, onnxio_message *m)
{
    /* onnx.parser reads a Python str (valid UTF-8) as a C string: it ends
     * at the first NUL. */
    size_t n = (size_t)(r->end - r->start);
    size_t valid = onnxio__text_utf8_prefix((const unsigned char *)r->start, n);
    if (valid < n) return onnxio__text_fail(r, r->start + valid, ONNXIO_ERR_SYNTAX, "the text is not valid UTF-8");
    const char *nul = memchr(r->start, '\0', n);
    if (nul) r->end = nul;
    ox x = {.r = r};
    if (m->desc == &onnxio_desc_ModelProto) parse_model(&x, (onnxio_ModelProto *)m);
    else if (m->desc == &onnxio_desc_GraphProto) parse_graph(&x, (onnxio_GraphProto *)m, 0);
    else if (m->desc == &onnxio_desc_FunctionProto) parse_function(&x, (onnxio_FunctionProto *)m, 0);
    else parse_node(&x, (onnxio_NodeProto *)m, 0);
    if (!r->status && x.soft) onnxio__text_fail(r, x.soft_at, ONNXIO_ERR_SYNTAX, "%s", x.soft_msg);
    return r->status;
}
