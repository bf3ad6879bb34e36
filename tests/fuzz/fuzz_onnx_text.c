/* libFuzzer target for the reader of ONNX's textual syntax
 * (onnxio_text_parse with ONNXIO_TEXT_ONNX; see docs/fuzzing.md).
 *
 * The first byte picks the message type (bits 0-1: ModelProto, GraphProto,
 * FunctionProto, NodeProto, what onnx.parser's entry points read) and, with
 * bit 2, a small max_depth (bits 3-5 plus 1); the other bytes are the text.
 * Whatever reads must serialize, and its bytes parse back to an equal
 * message that serializes to the same bytes. Text that does not read must
 * fail with ONNXIO_ERR_SYNTAX, ONNXIO_ERR_DEPTH or ONNXIO_ERR_EXPANSION and
 * a message, never crash, hang or leak. A broken invariant aborts, which
 * libFuzzer reports as a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxio/onnxio.h"

static const onnxio_message_desc *const types[] = {&onnxio_desc_ModelProto, &onnxio_desc_GraphProto,
                                                   &onnxio_desc_FunctionProto, &onnxio_desc_NodeProto};

static void fail(const char *what, const onnxio_message_desc *desc)
{
    fprintf(stderr, "fuzz_onnx_text: %s (%s): %s\n", what, desc->name, onnxio_last_error());
    abort();
}

static int same(const onnxio_buffer *a, const onnxio_buffer *b)
{
    return onnxio_buffer_size(a) == onnxio_buffer_size(b) &&
           (onnxio_buffer_size(a) == 0 || memcmp(onnxio_buffer_data(a), onnxio_buffer_data(b), onnxio_buffer_size(a)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const onnxio_message_desc *desc = types[data[0] & 3];
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = ONNXIO_TEXT_ONNX;
    if (data[0] & 4) o.max_depth = ((data[0] >> 3) & 7) + 1;
    /* the text in its own block, so that ASan sees a read past its end */
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) abort();
    void *msg = NULL;
    onnxio_status st = onnxio_text_parse(desc, text, size - 1, &o, arena, &msg);
    if (st == ONNXIO_OK) {
        if (!msg) fail("OK without a message", desc);
        onnxio_buffer *b1 = NULL, *b2 = NULL;
        void *back = NULL;
        if (onnxio_serialize(msg, &b1) != ONNXIO_OK) fail("serialize", desc);
        if (onnxio_parse(desc, onnxio_buffer_data(b1), onnxio_buffer_size(b1), NULL, NULL, arena, &back) != ONNXIO_OK)
            fail("parse of the serialized message", desc);
        if (onnxio_message_equal(back, msg) != 1) fail("binary round trip differs", desc);
        if (onnxio_serialize(back, &b2) != ONNXIO_OK || !same(b1, b2)) fail("binary bytes not stable", desc);
        onnxio_buffer_unref(b1);
        onnxio_buffer_unref(b2);
    } else {
        if (msg) fail("failure with a message", desc);
        if (st != ONNXIO_ERR_SYNTAX && st != ONNXIO_ERR_DEPTH && st != ONNXIO_ERR_EXPANSION)
            fail("unexpected status", desc);
        if (!onnxio_last_error()[0]) fail("failure without a message", desc);
    }
    onnxio_arena_unref(arena);
    free(text);
    return 0;
}
