/*
 * A walk over every message of a tree: the library's onnxio_visit, driven
 * by the descriptors (so it reaches tensors in subgraphs, attributes,
 * functions, sparse tensors and training graphs without listing where they
 * can be).
 */
#ifndef ONNXIO_CLI_WALK_H
#define ONNXIO_CLI_WALK_H

#include "onnxio/onnxio.h"

/* Called for each message, parents before children. */
typedef void (*cli_visit_fn)(void *ctx, void *msg);

/* Visits `msg` and every message under it (onnxio_visit; a tree the
 * parser made is within its nesting limit). */
void cli_walk(void *msg, cli_visit_fn visit, void *ctx);

/* 1 when `msg` is a message of type `desc`. */
static inline int cli_is(const void *msg, const onnxio_message_desc *desc)
{
    return ((const onnxio_message *)msg)->desc == desc;
}

#endif
