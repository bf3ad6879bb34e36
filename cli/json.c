#include "json.h"

#include <inttypes.h>
#include <string.h>

void cli_json_init(cli_json *j, FILE *out)
{
    memset(j, 0, sizeof *j);
    j->out = out;
}

static void indent(cli_json *j)
{
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->out);
}

/* Separator and indentation before a value (or a key) at the current level. */
static void before_value(cli_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0) {
        if (j->count[j->depth] > 0)
            fputs(j->flat[j->depth] ? ", " : ",", j->out);
        if (!j->flat[j->depth])
            indent(j);
    }
    if (j->depth < CLI_JSON_MAX_DEPTH)
        j->count[j->depth]++;
}

static void begin(cli_json *j, char c, int flat)
{
    before_value(j);
    fputc(c, j->out);
    if (j->depth + 1 < CLI_JSON_MAX_DEPTH) {
        j->depth++;
        j->count[j->depth] = 0;
        j->flat[j->depth] = flat;
    }
}

static void end(cli_json *j, char c)
{
    int had = j->count[j->depth] > 0 && !j->flat[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (had)
        indent(j);
    fputc(c, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void cli_json_begin_object(cli_json *j) { begin(j, '{', 0); }
void cli_json_end_object(cli_json *j) { end(j, '}'); }
void cli_json_begin_array(cli_json *j) { begin(j, '[', 0); }
void cli_json_begin_flat_array(cli_json *j) { begin(j, '[', 1); }
void cli_json_end_array(cli_json *j) { end(j, ']'); }

void cli_json_key(cli_json *j, const char *key)
{
    before_value(j);
    fputc('"', j->out);
    cli_json_escape(j->out, key, strlen(key));
    fputs("\": ", j->out);
    j->after_key = 1;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    unsigned cp = c & (0x7Fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void cli_json_escape(FILE *out, const char *data, size_t size)
{
    const unsigned char *s = (const unsigned char *)data;
    size_t i = 0;
    while (i < size) {
        unsigned c = s[i];
        switch (c) {
        case '"': fputs("\\\"", out); i++; continue;
        case '\\': fputs("\\\\", out); i++; continue;
        case '\n': fputs("\\n", out); i++; continue;
        case '\r': fputs("\\r", out); i++; continue;
        case '\t': fputs("\\t", out); i++; continue;
        case '\b': fputs("\\b", out); i++; continue;
        case '\f': fputs("\\f", out); i++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) {
            fprintf(out, "\\u%04x", c);
            i++;
            continue;
        }
        size_t len = utf8_len(s + i, size - i);
        if (len == 0) {
            fputs("\\ufffd", out);
            i++;
            continue;
        }
        fwrite(s + i, 1, len, out);
        i += len;
    }
}

void cli_json_string(cli_json *j, const char *data, size_t size)
{
    before_value(j);
    fputc('"', j->out);
    if (data)
        cli_json_escape(j->out, data, size);
    fputc('"', j->out);
}

void cli_json_cstring(cli_json *j, const char *s)
{
    cli_json_string(j, s, s ? strlen(s) : 0);
}

void cli_json_int(cli_json *j, int64_t v)
{
    before_value(j);
    fprintf(j->out, "%" PRId64, v);
}

void cli_json_uint(cli_json *j, uint64_t v)
{
    before_value(j);
    fprintf(j->out, "%" PRIu64, v);
}

void cli_json_bool(cli_json *j, int v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->out);
}

void cli_json_null(cli_json *j)
{
    before_value(j);
    fputs("null", j->out);
}
