/* libFuzzer target for the text readers (onnxio_text_parse; see
 * docs/fuzzing.md).
 *
 * The first byte picks the style (bit 0: protobuf text format or JSON) and
 * the message type (the rest of it); the other bytes are the text. Whatever
 * parses must be stable: written in the same style and read back, it gives
 * an equal message, whose text is the same again; it serializes and its
 * bytes parse back to an equal message. Malformed text must fail with
 * ONNXIO_ERR_SYNTAX or ONNXIO_ERR_DEPTH and a message, never crash, hang or
 * leak. A broken invariant aborts, which libFuzzer reports as a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_types.h"
#include "onnxio/onnxio.h"


static void fail(const char *what, const onnxio_message_desc *desc)
{
    fprintf(stderr, "fuzz_text: %s (%s): %s\n", what, desc->name, onnxio_last_error());
    abort();
}

static int same(const onnxio_buffer *a, const onnxio_buffer *b)
{
    return onnxio_buffer_size(a) == onnxio_buffer_size(b) &&
           (onnxio_buffer_size(a) == 0 || memcmp(onnxio_buffer_data(a), onnxio_buffer_data(b), onnxio_buffer_size(a)) == 0);
}

static void check_stable(const onnxio_message_desc *desc, void *msg, const onnxio_text_options *o)
{
    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) abort();
    onnxio_buffer *t1 = NULL, *t2 = NULL, *b1 = NULL, *b2 = NULL;
    void *again = NULL, *from_bytes = NULL;
    if (onnxio_text_format(msg, o, &t1) != ONNXIO_OK) fail("writing what was read", desc);
    if (onnxio_text_parse(desc, onnxio_buffer_data(t1), onnxio_buffer_size(t1), o, arena, &again) != ONNXIO_OK)
        fail("reading our own text", desc);
    if (onnxio_message_equal(again, msg) != 1) fail("text -> message -> text -> message differs", desc);
    if (onnxio_text_format(again, o, &t2) != ONNXIO_OK || !same(t1, t2)) fail("the text is not stable", desc);
    if (onnxio_serialize(msg, &b1) != ONNXIO_OK) fail("serialize", desc);
    if (onnxio_parse(desc, onnxio_buffer_data(b1), onnxio_buffer_size(b1), NULL, NULL, arena, &from_bytes) != ONNXIO_OK)
        fail("parse of the serialized message", desc);
    if (onnxio_message_equal(from_bytes, msg) != 1) fail("binary round trip differs", desc);
    if (onnxio_serialize(from_bytes, &b2) != ONNXIO_OK || !same(b1, b2)) fail("binary bytes not stable", desc);
    onnxio_buffer_unref(t1);
    onnxio_buffer_unref(t2);
    onnxio_buffer_unref(b1);
    onnxio_buffer_unref(b2);
    onnxio_arena_unref(arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const onnxio_message_desc *desc = fuzz_types[(data[0] >> 1) % FUZZ_TYPE_COUNT];
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = (data[0] & 1) ? ONNXIO_TEXT_JSON : ONNXIO_TEXT_PROTO;
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
        check_stable(desc, msg, &o);
    } else {
        if (msg) fail("failure with a message", desc);
        if (st != ONNXIO_ERR_SYNTAX && st != ONNXIO_ERR_DEPTH) fail("unexpected status", desc);
        if (!onnxio_last_error()[0]) fail("failure without a message", desc);
    }
    onnxio_arena_unref(arena);
    free(text);
    return 0;
}
