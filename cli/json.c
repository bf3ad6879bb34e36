#include "json.h"

#include "onnxio/onnxio.h"

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
    cli_json_escape(j->out, key, strlen(key));
    fputs(": ", j->out);
    j->after_key = 1;
}

static int file_write(void *ctx, const void *bytes, size_t n)
{
    return fwrite(bytes, 1, n, ctx) == n ? 0 : -1;
}

void cli_json_escape(FILE *out, const char *data, size_t size)
{
    /* The library's JSON strings: DEL escaped, invalid UTF-8 as U+FFFD. */
    onnxio_json_write_string(data, size, ONNXIO_JSON_ESCAPE_DEL | ONNXIO_JSON_INVALID_REPLACE, file_write, out);
}

void cli_json_string(cli_json *j, const char *data, size_t size)
{
    before_value(j);
    cli_json_escape(j->out, data ? data : "", data ? size : 0);
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
