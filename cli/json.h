/*
 * A small streaming JSON writer (RFC 8259) for `onnxio info --json`:
 * indented output, commas and nesting handled by the writer, strings
 * escaped. Strings from a model are arbitrary bytes; bytes that are not
 * valid UTF-8 are written as U+FFFD so that the output is always valid JSON.
 */
#ifndef ONNXIO_CLI_JSON_H
#define ONNXIO_CLI_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_JSON_MAX_DEPTH 32

typedef struct cli_json {
    FILE *out;
    int depth;
    int count[CLI_JSON_MAX_DEPTH]; /* values written so far at each level */
    int flat[CLI_JSON_MAX_DEPTH];  /* level written on one line */
    int after_key;                 /* a key was written; its value comes next */
} cli_json;

void cli_json_init(cli_json *j, FILE *out);

void cli_json_begin_object(cli_json *j);
void cli_json_end_object(cli_json *j);
void cli_json_begin_array(cli_json *j);
void cli_json_end_array(cli_json *j);
/* An array written on one line ([1, 3, 224, 224]); for short arrays of
 * scalars. Ends with cli_json_end_array. */
void cli_json_begin_flat_array(cli_json *j);

/* The key of the next member of the current object. */
void cli_json_key(cli_json *j, const char *key);

void cli_json_string(cli_json *j, const char *data, size_t size);
void cli_json_cstring(cli_json *j, const char *s);
void cli_json_int(cli_json *j, int64_t v);
void cli_json_uint(cli_json *j, uint64_t v);
void cli_json_bool(cli_json *j, int v);
void cli_json_null(cli_json *j);

/* Writes `data` as a JSON string (quotes included) to `out`: the library's
 * onnxio_json_write_string, DEL escaped, invalid UTF-8 as U+FFFD. */
void cli_json_escape(FILE *out, const char *data, size_t size);

#endif
