/* numpy's str(array) (numpy/_core/arrayprint.py, default options): the
 * element formats (FloatingFormat with floatmode 'maxprec' and precision 8,
 * IntegerFormat, BoolFormat, ComplexFloatingFormat, repr for the objects of
 * a STRING tensor, str for the types numpy has through ml_dtypes: the
 * floats of 16 bits and fewer but FLOAT16, the 4- and 2-bit integers,
 * unaligned as ml_dtypes prints them) are fitted to the elements shown,
 * then _formatArray lays them out: nested brackets, rows wrapped at 75
 * columns, '...' in place of all but 3 items at each edge of an axis when
 * the array has more than 1000 elements. What each data type's elements
 * are (their bits, integer or float format, numpy or ml_dtypes) comes from
 * the library's table, onnxio_data_type_info. */
#include "npprint.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LINE_WIDTH 75
#define THRESHOLD 1000
#define EDGE 3
#define PRECISION 8

/* ---- a growing string ------------------------------------------------------ */

typedef struct sb {
    char *p;
    size_t n, cap;
    int failed;
} sb;

static void sb_put(sb *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_puts(sb *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_spaces(sb *b, size_t n)
{
    while (n--) sb_put(b, " ", 1);
}

/* ---- element values ----------------------------------------------------------- */

enum kind { K_DOUBLE, K_FLOAT, K_HALF };

/* The value of the bit pattern `b` of a binary float of format `d`
 * (onnxio.h, onnxio_float_kind). Every NaN is the same (ml_dtypes prints
 * each as "nan", and numpy's formats do not look at its sign). */
static double float_value(const onnxio_data_type_desc *d, uint64_t b)
{
    unsigned eb = d->exponent_bits, mb = d->mantissa_bits;
    uint64_t emax = ((uint64_t)1 << eb) - 1, mmax = ((uint64_t)1 << mb) - 1;
    uint64_t e = (b >> mb) & emax, m = b & mmax;
    int neg = d->float_kind != ONNXIO_FLOAT_FNU && ((b >> (eb + mb)) & 1);
    switch (d->float_kind) {
    case ONNXIO_FLOAT_IEEE:
        if (e == emax) return m ? NAN : neg ? -INFINITY : INFINITY;
        break;
    case ONNXIO_FLOAT_FN:
        if (e == emax && m == mmax) return NAN;
        break;
    case ONNXIO_FLOAT_FNUZ:
        if (neg && e == 0 && m == 0) return NAN;
        break;
    case ONNXIO_FLOAT_FNU:
        if (e == emax) return NAN;
        return ldexp((double)(m + mmax + 1), (int)e - d->exponent_bias - (int)mb);
    default: break;
    }
    double v = e == 0 ? ldexp((double)m, 1 - d->exponent_bias - (int)mb)
                      : ldexp((double)(m + mmax + 1), (int)e - d->exponent_bias - (int)mb);
    return neg ? -v : v;
}

/* x rounded to the nearest value of the kind (ties to even). */
static double to_kind(double x, enum kind k)
{
    if (k == K_DOUBLE || x == 0 || !isfinite(x)) return x;
    if (k == K_FLOAT) return (double)(float)x;
    double a = fabs(x);
    if (a >= 65520.0) return copysign(INFINITY, x);
    int e;
    frexp(a, &e);
    int q = e - 11 < -24 ? -24 : e - 11; /* the exponent of one unit in the last place */
    return copysign(ldexp(nearbyint(ldexp(a, -q)), q), x);
}

/* The shortest decimal digits of |v| that read back as v in its kind:
 * digits (no trailing zeros) and the power of ten of the first one. */
static void shortest(double v, enum kind k, char *digits, int *e10)
{
    char buf[48];
    v = fabs(v);
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        if (to_kind(strtod(buf, NULL), k) == v) break;
    }
    size_t n = 0;
    const char *s = buf;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = '\0';
    *e10 = atoi(s + 1);
}

/* A finite value as numpy's dragon4 writes it with unique digits, at most
 * `PRECISION` fractional ones (rounded), trailing zeros trimmed: its sign
 * ("-", "+" or ""), integer part, fractional part and, in scientific
 * form, the exponent. */
typedef struct parts {
    char sign[2];
    char ip[400], fp[400];
    int exp;
} parts;

static void strip_zeros(char *s)
{
    size_t n = strlen(s);
    while (n && s[n - 1] == '0') s[--n] = '\0';
}

static void positional(double v, enum kind k, int plus, int cap, parts *o)
{
    char d[32];
    int e;
    snprintf(o->sign, sizeof o->sign, "%s", signbit(v) ? "-" : plus ? "+" : "");
    shortest(v, k, d, &e);
    int n = (int)strlen(d);
    if (cap && n - 1 - e > PRECISION) {
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", PRECISION, fabs(v));
        char *dot = strchr(buf, '.');
        *dot = '\0';
        snprintf(o->ip, sizeof o->ip, "%s", buf);
        snprintf(o->fp, sizeof o->fp, "%s", dot + 1);
        strip_zeros(o->fp);
    } else if (e >= 0) {
        int i = 0;
        for (; i <= e; i++) o->ip[i] = i < n ? d[i] : '0';
        o->ip[i] = '\0';
        snprintf(o->fp, sizeof o->fp, "%s", n > e + 1 ? d + e + 1 : "");
    } else {
        snprintf(o->ip, sizeof o->ip, "0");
        int i = 0;
        for (; i < -e - 1; i++) o->fp[i] = '0';
        snprintf(o->fp + i, sizeof o->fp - (size_t)i, "%s", d);
    }
    if (v == 0) snprintf(o->fp, sizeof o->fp, "%s", "");
}

static void scientific(double v, enum kind k, int plus, parts *o)
{
    char d[32];
    int e;
    snprintf(o->sign, sizeof o->sign, "%s", signbit(v) ? "-" : plus ? "+" : "");
    shortest(v, k, d, &e);
    if (strlen(d) - 1 > PRECISION) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.*e", PRECISION, fabs(v));
        size_t n = 0;
        const char *s = buf;
        for (; *s != 'e'; s++)
            if (*s != '.') d[n++] = *s;
        d[n] = '\0';
        e = atoi(s + 1);
        strip_zeros(d + 1);
    }
    o->ip[0] = d[0];
    o->ip[1] = '\0';
    snprintf(o->fp, sizeof o->fp, "%s", d + 1);
    o->exp = e;
}

static int exp_digits(int e)
{
    int a = abs(e), n = 1;
    while (a >= 10) a /= 10, n++;
    return n < 2 ? 2 : n;
}

/* FloatingFormat, fitted to the values it is given. */
typedef struct ffmt {
    enum kind kind;
    int plus;
    int exp_format;
    int pad_left, pad_right, precision, exp_size;
} ffmt;

typedef struct fvals {
    const double *v;
    size_t n;
} fvals;

static void ffmt_fill(ffmt *f, enum kind k, int plus, const double *v, size_t n)
{
    *f = (ffmt){.kind = k, .plus = plus};
    double mx = 0, mn = INFINITY;
    size_t finite = 0, nonzero = 0;
    int neginf = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            if (isinf(v[i]) && v[i] < 0) neginf = 1;
            continue;
        }
        finite++;
        double a = fabs(v[i]);
        if (a == 0) continue;
        nonzero++;
        if (a > mx) mx = a;
        if (a < mn) mn = a;
    }
    if (nonzero && (mx >= to_kind(1e8, k) || mn < to_kind(1e-4, k) || to_kind(mx / mn, k) > 1000.0)) f->exp_format = 1;
    if (finite == 0) {
        f->pad_left = f->pad_right = 0;
        f->exp_size = -1;
    } else {
        parts p;
        int left = 0, right = 0, ex = 0;
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(v[i])) continue;
            if (f->exp_format) scientific(v[i], k, plus, &p);
            else positional(v[i], k, plus, 1, &p);
            int l = (int)(strlen(p.sign) + strlen(p.ip)), r = (int)strlen(p.fp);
            if (l > left) left = l;
            if (r > right) right = r;
            if (f->exp_format && exp_digits(p.exp) + 1 > ex) ex = exp_digits(p.exp) + 1;
        }
        f->pad_left = left;
        if (f->exp_format) {
            f->exp_size = ex - 1;
            f->precision = right;
            f->pad_right = f->exp_size + 2 + f->precision;
        } else {
            f->pad_right = right;
            f->exp_size = -1;
        }
    }
    if (finite != n) {
        int offset = f->pad_right + 1, nanlen = 3, inflen = 3 + (plus || neginf);
        if (nanlen - offset > f->pad_left) f->pad_left = nanlen - offset;
        if (inflen - offset > f->pad_left) f->pad_left = inflen - offset;
    }
}

static void ffmt_put(const ffmt *f, double v, sb *out)
{
    if (!isfinite(v)) {
        const char *r = isnan(v) ? (f->plus ? "+nan" : "nan") : v < 0 ? "-inf" : f->plus ? "+inf" : "inf";
        int w = f->pad_left + f->pad_right + 1 - (int)strlen(r);
        sb_spaces(out, w > 0 ? (size_t)w : 0);
        sb_puts(out, r);
        return;
    }
    parts p;
    if (f->exp_format) {
        scientific(v, f->kind, f->plus, &p);
        /* min_digits: the value's own digits up to the precision of the
         * longest, not zeros (dragon4 goes on past the unique ones). */
        if ((int)strlen(p.fp) < f->precision) {
            char buf[64];
            snprintf(buf, sizeof buf, "%.*e", f->precision, fabs(v));
            char *e = strchr(buf, 'e');
            p.exp = atoi(e + 1);
            *e = '\0';
            snprintf(p.fp, sizeof p.fp, "%s", buf + 2);
            p.ip[0] = buf[0];
        }
        int l = (int)(strlen(p.sign) + strlen(p.ip));
        sb_spaces(out, f->pad_left > l ? (size_t)(f->pad_left - l) : 0);
        sb_puts(out, p.sign);
        sb_puts(out, p.ip);
        sb_puts(out, ".");
        sb_puts(out, p.fp);
        char ebuf[16];
        snprintf(ebuf, sizeof ebuf, "e%c%0*d", p.exp < 0 ? '-' : '+', f->exp_size, abs(p.exp));
        sb_puts(out, ebuf);
    } else {
        positional(v, f->kind, f->plus, 1, &p);
        int l = (int)(strlen(p.sign) + strlen(p.ip)), r = (int)strlen(p.fp);
        sb_spaces(out, f->pad_left > l ? (size_t)(f->pad_left - l) : 0);
        sb_puts(out, p.sign);
        sb_puts(out, p.ip);
        sb_puts(out, ".");
        sb_puts(out, p.fp);
        sb_spaces(out, f->pad_right > r ? (size_t)(f->pad_right - r) : 0);
    }
}

/* A scalar as numpy's str(np.float32(x)) writes it: positional between
 * 1e-4 and 1e16 (and 0), with at least one fractional digit; otherwise
 * scientific, no '.' when there is one digit. */
static void scalar_float(double v, enum kind k, int plus, int bare, sb *out)
{
    if (!isfinite(v)) {
        sb_puts(out, isnan(v) ? (plus ? "+nan" : "nan") : v < 0 ? "-inf" : plus ? "+inf" : "inf");
        return;
    }
    char d[32], buf[820];
    int e;
    shortest(v, k, d, &e);
    double a = fabs(v);
    sb_puts(out, signbit(v) ? "-" : plus ? "+" : "");
    if (a == 0 || (a < 1e16 && a >= 1e-4)) {
        parts p;
        positional(v, k, 0, 0, &p);
        snprintf(buf, sizeof buf, "%s.%s", p.ip, p.fp[0] ? p.fp : "0");
        /* Python's complex repr: no ".0" */
        if (bare && !p.fp[0]) snprintf(buf, sizeof buf, "%s", p.ip);
    } else {
        snprintf(buf, sizeof buf, "%c%s%s", d[0], d[1] ? "." : "", d + 1);
        size_t n = strlen(buf);
        snprintf(buf + n, sizeof buf - n, "e%c%02d", e < 0 ? '-' : '+', abs(e));
    }
    sb_puts(out, buf);
}

/* ---- the array -------------------------------------------------------------- */

typedef struct arr {
    const onnxio_data_type_desc *d;
    const uint8_t *data;
    const onnxio_string *const *strings;
    const int64_t *shape;
    size_t rank;
    uint64_t *stride;
    int summarize;
    ffmt re, im; /* floats and complex */
    int width;   /* integers */
} arr;

/* The kind of a numpy float (of a complex number's parts) by its bits. */
static enum kind kind_of(const onnxio_data_type_desc *d)
{
    unsigned bits = d->element == ONNXIO_ELEMENT_COMPLEX ? d->bits / 2 : d->bits;
    return bits == 32 ? K_FLOAT : bits == 16 ? K_HALF : K_DOUBLE;
}

/* numpy's own floats (float16, float32, float64). */
static int is_float(const onnxio_data_type_desc *d)
{
    return d->element == ONNXIO_ELEMENT_FLOAT && !d->ml_dtypes;
}

static int is_complex(const onnxio_data_type_desc *d)
{
    return d->element == ONNXIO_ELEMENT_COMPLEX;
}

/* ml_dtypes' floats and integers: printed as str(float(x)) would be in C
 * ("%g"), or as the integer, unaligned, as ml_dtypes' scalars print
 * themselves. */
static int is_ml(const onnxio_data_type_desc *d)
{
    return d->ml_dtypes;
}

/* Element i of a packed type: its bits (6, 4 or 2 of them), a stream
 * low bits first (a 6-bit element may span two bytes). */
static unsigned packed_bits(const uint8_t *data, uint64_t i, unsigned bits)
{
    uint64_t at = i * bits;
    unsigned v = data[at / 8] >> (at % 8);
    if (at % 8 + bits > 8) v |= (unsigned)data[at / 8 + 1] << (8 - at % 8);
    return v & ((1u << bits) - 1);
}

/* The text of an ml_dtypes element (of 16 bits or fewer, packed ones low
 * bits first). */
static void ml_text(const arr *a, uint64_t i, char *buf, size_t n)
{
    unsigned bits = a->d->bits, v;
    if (bits < 8) {
        v = packed_bits(a->data, i, bits);
    } else if (bits == 8) {
        v = a->data[i];
    } else {
        uint16_t h;
        memcpy(&h, a->data + i * 2, 2);
        v = h;
    }
    switch (a->d->element) {
    case ONNXIO_ELEMENT_FLOAT: snprintf(buf, n, "%g", float_value(a->d, v)); return;
    case ONNXIO_ELEMENT_UINT: snprintf(buf, n, "%u", v); return;
    default: snprintf(buf, n, "%d", (int)v - ((v >> (bits - 1)) & 1 ? 1 << bits : 0)); return;
    }
}

/* Element i of a numpy float or complex tensor as a double: part 0 the
 * value (the real part), 1 the imaginary part. */
static double fval(const arr *a, uint64_t i, int part)
{
    size_t width = a->d->bits / 8, w = is_complex(a->d) ? width / 2 : width;
    const uint8_t *p = a->data + i * width + (size_t)part * w;
    switch (w) {
    case 4: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case 8: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    default: {
        uint16_t h;
        memcpy(&h, p, 2);
        return float_value(a->d, h);
    }
    }
}

/* Integer element i (numpy's integer types) as text. */
static void ival(const arr *a, uint64_t i, char *buf, size_t n)
{
    int sign = a->d->element == ONNXIO_ELEMENT_INT;
    const uint8_t *p = a->data + i * (a->d->bits / 8);
    switch (a->d->bits) {
#define CASE_INT(BITS)                                                                         \
    case BITS: {                                                                               \
        int##BITS##_t s;                                                                       \
        uint##BITS##_t u;                                                                      \
        memcpy(&s, p, sizeof s);                                                               \
        memcpy(&u, p, sizeof u);                                                               \
        if (sign) snprintf(buf, n, "%" PRId##BITS, s);                                         \
        else snprintf(buf, n, "%" PRIu##BITS, u);                                              \
        return;                                                                                \
    }
        CASE_INT(8)
        CASE_INT(16)
        CASE_INT(32)
        CASE_INT(64)
#undef CASE_INT
    default: snprintf(buf, n, "?");
    }
}

/* Python's repr of a str (the UTF-8 bytes s): quotes, escapes. */
static void py_repr(const onnxio_string *s, sb *out)
{
    int sq = memchr(s->data, '\'', s->size) != NULL, dq = memchr(s->data, '"', s->size) != NULL;
    char q = sq && !dq ? '"' : '\'';
    sb_put(out, &q, 1);
    for (size_t i = 0; i < s->size; i++) {
        unsigned char c = (unsigned char)s->data[i];
        char buf[8];
        if (c == '\\') sb_puts(out, "\\\\");
        else if (c == (unsigned char)q) {
            buf[0] = '\\', buf[1] = (char)c;
            sb_put(out, buf, 2);
        } else if (c == '\n') sb_puts(out, "\\n");
        else if (c == '\r') sb_puts(out, "\\r");
        else if (c == '\t') sb_puts(out, "\\t");
        else if (c < 0x20 || c == 0x7f) {
            snprintf(buf, sizeof buf, "\\x%02x", c);
            sb_puts(out, buf);
        } else sb_put(out, (const char *)&c, 1);
    }
    sb_put(out, &q, 1);
}

static void elem(const arr *a, uint64_t i, sb *out)
{
    char buf[64];
    if (is_float(a->d)) {
        ffmt_put(&a->re, fval(a, i, 0), out);
    } else if (is_complex(a->d)) {
        sb im = {0};
        ffmt_put(&a->im, fval(a, i, 1), &im);
        ffmt_put(&a->re, fval(a, i, 0), out);
        size_t sp = im.n;
        while (sp && im.p[sp - 1] == ' ') sp--;
        sb_put(out, im.p ? im.p : "", sp);
        sb_puts(out, "j");
        sb_put(out, im.p ? im.p + sp : "", im.n - sp);
        out->failed |= im.failed;
        free(im.p);
    } else if (is_ml(a->d)) {
        ml_text(a, i, buf, sizeof buf);
        sb_puts(out, buf);
    } else if (a->d->element == ONNXIO_ELEMENT_BOOL) {
        sb_puts(out, a->data[i] ? " True" : "False");
    } else if (a->d->element == ONNXIO_ELEMENT_STRING) {
        py_repr(a->strings[i], out);
    } else {
        ival(a, i, buf, sizeof buf);
        int w = a->width - (int)strlen(buf);
        sb_spaces(out, w > 0 ? (size_t)w : 0);
        sb_puts(out, buf);
    }
}

/* Calls fn on the flat index of every element shown. */
typedef void (*visit_fn)(arr *a, uint64_t i, void *ctx);

static void visit(arr *a, size_t axis, uint64_t base, visit_fn fn, void *ctx)
{
    if (axis == a->rank) {
        fn(a, base, ctx);
        return;
    }
    int64_t n = a->shape[axis];
    int cut = a->summarize && n > 2 * EDGE;
    for (int64_t k = 0; k < n; k++) {
        if (cut && k == EDGE) k = n - EDGE;
        visit(a, axis + 1, base + (uint64_t)k * a->stride[axis], fn, ctx);
    }
}

typedef struct collect {
    double *v;
    size_t n;
    int part;
} collect;

static void collect_f(arr *a, uint64_t i, void *ctx)
{
    collect *c = ctx;
    c->v[c->n++] = fval(a, i, c->part);
}

static void int_width(arr *a, uint64_t i, void *ctx)
{
    (void)ctx;
    char buf[64];
    ival(a, i, buf, sizeof buf);
    if ((int)strlen(buf) > a->width) a->width = (int)strlen(buf);
}

/* _extendLine: the word on the line, or on a new one when it would pass
 * the width (unless the line holds nothing but the indent). */
static void extend_line(sb *s, sb *line, const sb *word, size_t width, size_t indent)
{
    if (line->n + word->n > width && line->n > indent) {
        size_t n = line->n;
        while (n && line->p[n - 1] == ' ') n--;
        sb_put(s, line->p, n);
        sb_puts(s, "\n");
        line->n = 0;
        sb_spaces(line, indent);
    }
    sb_put(line, word->p ? word->p : "", word->n);
}

/* _formatArray's recurser: the sub-array at `base` from `axis` on, with
 * a hanging indent of `indent` spaces, into out. */
static void recurse(const arr *a, size_t axis, uint64_t base, size_t indent, size_t width, sb *out)
{
    if (axis == a->rank) {
        elem(a, base, out);
        return;
    }
    size_t left = a->rank - axis;
    int64_t n = a->shape[axis];
    int summary = a->summarize && n > 2 * EDGE;
    int64_t lead = summary ? EDGE : 0, trail = summary ? EDGE : n;
    sb s = {0};
    uint64_t st = a->stride[axis];
    if (left == 1) {
        size_t ew = width - 1;
        sb line = {0};
        sb_spaces(&line, indent);
        for (int64_t i = 0; i < lead + trail; i++) {
            int64_t k = i < lead ? i : n - (lead + trail - i);
            if (summary && i == lead) {
                sb dots = {0};
                sb_puts(&dots, "...");
                extend_line(&s, &line, &dots, ew, indent);
                sb_puts(&line, " ");
                free(dots.p);
            }
            sb word = {0};
            recurse(a, axis + 1, base + (uint64_t)k * st, indent + 1, width - 1, &word);
            extend_line(&s, &line, &word, ew, indent);
            s.failed |= word.failed;
            free(word.p);
            if (i + 1 < lead + trail) sb_puts(&line, " ");
        }
        sb_put(&s, line.p ? line.p : "", line.n);
        s.failed |= line.failed;
        free(line.p);
    } else {
        for (int64_t i = 0; i < lead + trail; i++) {
            int64_t k = i < lead ? i : n - (lead + trail - i);
            if (summary && i == lead) {
                sb_spaces(&s, indent);
                sb_puts(&s, "...");
                for (size_t j = 0; j + 1 < left; j++) sb_puts(&s, "\n");
            }
            sb_spaces(&s, indent);
            recurse(a, axis + 1, base + (uint64_t)k * st, indent + 1, width - 1, &s);
            if (i + 1 < lead + trail)
                for (size_t j = 0; j + 1 < left; j++) sb_puts(&s, "\n");
        }
    }
    sb_puts(out, "[");
    if (s.n > indent) sb_put(out, s.p + indent, s.n - indent);
    sb_puts(out, "]");
    out->failed |= s.failed;
    free(s.p);
}

int cli_np_prints(int32_t dt)
{
    /* Every data type has a numpy dtype (of numpy or of ml_dtypes). */
    const onnxio_data_type_desc *d = onnxio_data_type_info(dt);
    return d && d->numpy;
}

static void scalar(const arr *a, sb *out)
{
    char buf[64];
    if (is_float(a->d)) {
        scalar_float(fval(a, 0, 0), kind_of(a->d), 0, 0, out);
    } else if (is_complex(a->d)) {
        double re = fval(a, 0, 0), im = fval(a, 0, 1);
        enum kind k = kind_of(a->d);
        if (re == 0 && !signbit(re)) {
            scalar_float(im, k, 0, 1, out);
            sb_puts(out, "j");
        } else {
            sb_puts(out, "(");
            scalar_float(re, k, 0, 1, out);
            scalar_float(im, k, 1, 1, out);
            sb_puts(out, "j)");
        }
    } else if (is_ml(a->d)) {
        ml_text(a, 0, buf, sizeof buf);
        sb_puts(out, buf);
    } else if (a->d->element == ONNXIO_ELEMENT_BOOL) {
        sb_puts(out, a->data[0] ? "True" : "False");
    } else if (a->d->element == ONNXIO_ELEMENT_STRING) {
        sb_put(out, a->strings[0]->data ? a->strings[0]->data : "", a->strings[0]->size);
    } else {
        ival(a, 0, buf, sizeof buf);
        sb_puts(out, buf);
    }
}

int cli_np_print(FILE *fp, int32_t dt, const uint8_t *data, const onnxio_string *const *strings, const int64_t *shape,
                 size_t rank)
{
    if (!cli_np_prints(dt)) return -1;
    const onnxio_data_type_desc *d = onnxio_data_type_info(dt);
    arr a = {.d = d, .data = data, .strings = strings, .shape = shape, .rank = rank};
    uint64_t count = 1;
    for (size_t i = 0; i < rank; i++) count *= (uint64_t)shape[i];
    sb out = {0};
    if (rank == 0) {
        scalar(&a, &out);
    } else if (count == 0) {
        sb_puts(&out, "[]");
    } else {
        if (!(a.stride = malloc(rank * sizeof *a.stride))) return -1;
        for (size_t i = rank; i-- > 0;) a.stride[i] = i + 1 == rank ? 1 : a.stride[i + 1] * (uint64_t)shape[i + 1];
        a.summarize = count > THRESHOLD;
        if (is_float(d) || is_complex(d)) {
            /* The elements shown: at most the array's, which is in memory. */
            collect c = {malloc((size_t)count * sizeof *c.v), 0, 0};
            if (!c.v) {
                free(a.stride);
                return -1;
            }
            visit(&a, 0, 0, collect_f, &c);
            ffmt_fill(&a.re, kind_of(d), 0, c.v, c.n);
            if (is_complex(d)) {
                c.n = 0;
                c.part = 1;
                visit(&a, 0, 0, collect_f, &c);
                ffmt_fill(&a.im, kind_of(d), 1, c.v, c.n);
            }
            free(c.v);
        } else if ((d->element == ONNXIO_ELEMENT_INT || d->element == ONNXIO_ELEMENT_UINT) && !is_ml(d)) {
            visit(&a, 0, 0, int_width, NULL);
        }
        recurse(&a, 0, 0, 1, LINE_WIDTH, &out);
        free(a.stride);
    }
    int failed = out.failed;
    if (!failed) {
        fwrite(out.p ? out.p : "", 1, out.n, fp);
        fputc('\n', fp);
    }
    free(out.p);
    return failed ? -1 : 0;
}
