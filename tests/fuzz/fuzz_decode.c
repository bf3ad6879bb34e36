/* libFuzzer target for the decoder (see docs/fuzzing.md).
 *
 * Every input is parsed as a ModelProto, in copy mode and in no_copy mode
 * (with a refcounted owner). The input minus its first byte is also parsed as
 * the message type the first byte picks (TensorProto, GraphProto, ...), so
 * that the fuzzer can reach every message from short inputs while seeds
 * taken from real .onnx files still exercise ModelProto.
 *
 * Whatever parses must be stable: serialize -> parse -> serialize gives the
 * same bytes, the exact-size pass agrees with the output, the re-parsed
 * message and a deep copy compare equal to the original, and the text format
 * prints. Malformed input must fail with a status and a message, never crash
 * or leak. A broken invariant aborts, which libFuzzer reports as a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_types.h"
#include "onnxio/onnxio.h"


static void fail(const char *what, const onnxio_message_desc *desc)
{
    fprintf(stderr, "fuzz_decode: %s (%s): %s\n", what, desc->name, onnxio_last_error());
    abort();
}

static void noop_release(void *ctx, void *data, size_t size)
{
    (void)data;
    (void)size;
    (*(int *)ctx)++;
}

static void check_stable(const onnxio_message_desc *desc, void *msg)
{
    uint64_t size = onnxio_serialized_size(msg);
    onnxio_buffer *out1 = NULL;
    if (onnxio_serialize(msg, &out1) != ONNXIO_OK) fail("serialize after a successful parse", desc);
    if (onnxio_buffer_size(out1) != size) fail("serialized_size disagrees with serialize", desc);

    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) abort();
    void *again = NULL;
    if (onnxio_parse(desc, onnxio_buffer_data(out1), onnxio_buffer_size(out1), NULL, NULL, arena, &again) != ONNXIO_OK)
        fail("re-parse of our own output", desc);
    onnxio_buffer *out2 = NULL;
    if (onnxio_serialize(again, &out2) != ONNXIO_OK) fail("serialize of the re-parsed message", desc);
    if (onnxio_buffer_size(out1) != onnxio_buffer_size(out2) ||
        memcmp(onnxio_buffer_data(out1), onnxio_buffer_data(out2), onnxio_buffer_size(out1)) != 0)
        fail("serialize -> parse -> serialize is not stable", desc);
    if (onnxio_message_equal(again, msg) != 1) fail("re-parsed message differs from the original", desc);

    void *copy = onnxio_message_clone(arena, msg);
    if (!copy) fail("clone", desc);
    if (onnxio_message_equal(copy, msg) != 1) fail("clone differs from the original", desc);
    onnxio_buffer *out3 = NULL;
    if (onnxio_serialize(copy, &out3) != ONNXIO_OK || onnxio_buffer_size(out3) != onnxio_buffer_size(out1) ||
        memcmp(onnxio_buffer_data(out3), onnxio_buffer_data(out1), onnxio_buffer_size(out1)) != 0)
        fail("clone serializes differently", desc);

    onnxio_text_options topts = {0};
    onnxio_buffer *text = NULL;
    if (onnxio_text_format(msg, &topts, &text) != ONNXIO_OK) fail("text_format", desc);
    onnxio_buffer_unref(text);
    topts.max_bytes_shown = 8;
    text = NULL;
    if (onnxio_text_format(msg, &topts, &text) != ONNXIO_OK) fail("text_format (max_bytes_shown 8)", desc);
    onnxio_buffer_unref(text);

    onnxio_buffer_unref(out1);
    onnxio_buffer_unref(out2);
    onnxio_buffer_unref(out3);
    onnxio_arena_unref(arena);
}

static void parse_one(const onnxio_message_desc *desc, const uint8_t *data, size_t size, int mode, int max_depth)
{
    onnxio_parse_options opts = {0};
    opts.no_copy = mode != 0;
    opts.max_depth = max_depth;
    /* a small threshold so that short inputs also make "large" payloads */
    opts.raw_data_threshold = (mode == 2) ? 1 : 0;
    int released = 0;
    onnxio_buffer *owner = NULL;
    if (mode == 2) {
        owner = onnxio_buffer_wrap((void *)data, size, noop_release, &released);
        if (!owner) abort();
    }
    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) abort();
    void *msg = NULL;
    onnxio_status st = onnxio_parse(desc, data, size, owner, &opts, arena, &msg);
    if (st == ONNXIO_OK) {
        if (!msg) fail("OK without a message", desc);
        check_stable(desc, msg);
    } else {
        if (msg) fail("failure with a message", desc);
        if (st != ONNXIO_ERR_DECODE && st != ONNXIO_ERR_DEPTH) fail("unexpected status", desc);
        if (!onnxio_last_error()[0]) fail("failure without a message", desc);
    }
    onnxio_arena_unref(arena);
    onnxio_buffer_unref(owner);
    if (mode == 2 && released != 1) fail("owner not released exactly once", desc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* copy a "large" input into its own block so that ASan sees reads past it */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);

    for (int mode = 0; mode < 3; mode++) parse_one(&onnxio_desc_ModelProto, buf, size, mode, 0);
    if (size >= 1) {
        uint8_t sel = buf[0];
        const onnxio_message_desc *desc = fuzz_types[sel % FUZZ_TYPE_COUNT];
        int max_depth = (sel & 0x80) ? 1 + (sel >> 4 & 7) : 0; /* sometimes a small depth limit */
        for (int mode = 0; mode < 3; mode++) parse_one(desc, buf + 1, size - 1, mode, max_depth);
    }
    free(buf);
    return 0;
}
