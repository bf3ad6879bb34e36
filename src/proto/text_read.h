/* The state and helpers (text_read.c) shared by the text readers:
 * protobuf's text format and JSON (text_parse.c, which also holds
 * onnxio_text_parse) and ONNX's textual syntax (text_onnx.c). Errors name the line and column,
 * the arena grows within the expansion budget of onnxio_text_parse, and
 * integers past 64 bits are refused the same way in every style. */
#ifndef ONNXIO_TEXT_READ_H
#define ONNXIO_TEXT_READ_H

#include <stddef.h>
#include <stdint.h>

#include "proto/codec.h"

typedef struct onnxio__text_reader {
    const char *start, *p, *end;
    onnxio_arena *arena;
    int max_depth;
    const char *format;     /* "text format", "JSON" or "ONNX textual syntax", for messages */
    int json;
    onnxio_status status;   /* the first error */
    char *scratch;          /* a string value being unescaped */
    size_t scratch_size, scratch_cap;
    onnxio__budget budget;  /* the text's size as input; raw_data charged here, the arena by its limit */
} onnxio__text_reader;

/* Records the first error, naming the line and column (both from 1; the
 * column counts bytes) of `at`; returns it (the first one when an error was
 * already recorded). */
onnxio_status onnxio__text_fail(onnxio__text_reader *r, const char *at, onnxio_status status, const char *fmt, ...)
    ONNXIO_PRINTF(4, 5);
/* An allocation failed: ONNXIO_ERR_EXPANSION when the arena reached the
 * expansion budget, else ONNXIO_ERR_NO_MEMORY; recorded and returned. */
onnxio_status onnxio__text_no_memory(onnxio__text_reader *r);
/* ONNXIO_ERR_DEPTH at `at`: a message nested deeper than r->max_depth. */
onnxio_status onnxio__text_too_deep(onnxio__text_reader *r, const char *at);
/* Appends n bytes to r->scratch; 0 (the error recorded) when out of memory. */
int onnxio__text_scratch_put(onnxio__text_reader *r, const void *p, size_t n);
/* The length of the longest well-formed UTF-8 prefix of the n bytes at p. */
size_t onnxio__text_utf8_prefix(const unsigned char *p, size_t n);
/* Decimal digits only of [p, e) into *mag; 0 when there are none, or
 * another character, or they pass 2^64 - 1. */
int onnxio__text_decimal(const char *p, const char *e, uint64_t *mag);

/* ONNX's textual syntax (text_onnx.c) into `m`, a new ModelProto,
 * GraphProto, FunctionProto or NodeProto, with r set up as for the other
 * styles. Returns r->status after recording any error. */
onnxio_status onnxio__text_parse_onnx(onnxio__text_reader *r, onnxio_message *m);

#endif
