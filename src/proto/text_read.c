/* The helpers every text reader shares (text_read.h): errors that name
 * the line and column, the scratch buffer of string values, the memory
 * and depth refusals, UTF-8 prefixes and decimal integers. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/codec.h"
#include "proto/text_read.h"

typedef onnxio__text_reader reader;

onnxio_status onnxio__text_fail(reader *r, const char *at, onnxio_status status, const char *fmt, ...)
{
    if (r->status) return r->status;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t line = 1;
    const char *line_start = r->start;
    for (const char *q = r->start; q < at && q < r->end; q++)
        if (*q == '\n') {
            line++;
            line_start = q + 1;
        }
    r->status = onnxio__fail(status, "%s, line %zu column %zu: %s", r->format, line, (size_t)(at - line_start) + 1,
                             what);
    return r->status;
}

onnxio_status onnxio__text_no_memory(reader *r)
{
    if (r->status) return r->status;
    if (onnxio__arena_limit_hit(r->arena))
        return onnxio__text_fail(r, r->p, ONNXIO_ERR_EXPANSION,
                                 "the message needs more memory than max_expansion (%llu) times the text's %llu "
                                 "bytes plus %u MiB allows (%zu bytes so far); raise max_expansion if the input is "
                                 "trusted",
                                 (unsigned long long)r->budget.ratio, (unsigned long long)r->budget.input,
                                 (unsigned)(ONNXIO_EXPANSION_ALLOWANCE >> 20), onnxio_arena_used(r->arena));
    r->status = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "%s: out of memory", r->format);
    return r->status;
}

int onnxio__text_scratch_put(reader *r, const void *p, size_t n)
{
    if (n == 0) return 1;
    if (r->scratch_cap - r->scratch_size < n) {
        size_t cap = r->scratch_cap ? r->scratch_cap : 256;
        while (cap - r->scratch_size < n) cap *= 2;
        char *b = onnxio__realloc(r->scratch, cap);
        if (!b) return onnxio__text_no_memory(r), 0;
        r->scratch = b;
        r->scratch_cap = cap;
    }
    memcpy(r->scratch + r->scratch_size, p, n);
    r->scratch_size += n;
    return 1;
}

size_t onnxio__text_utf8_prefix(const unsigned char *p, size_t n)
{
    size_t i = 0, len;
    for (; i < n; i += len)
        if (!(len = p[i] < 0x80 ? 1 : onnxio__utf8_sequence(p + i, n - i))) break;
    return i;
}

onnxio_status onnxio__text_too_deep(reader *r, const char *at)
{
    return onnxio__text_fail(r, at, ONNXIO_ERR_DEPTH, "messages nested deeper than %d", r->max_depth);
}

/* Decimal digits only (Python's int(str)). */
int onnxio__text_decimal(const char *p, const char *e, uint64_t *mag)
{
    if (p == e) return 0;
    uint64_t v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return 0;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *mag = v;
    return 1;
}

