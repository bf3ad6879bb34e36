#include "walk.h"

typedef struct walk {
    cli_visit_fn visit;
    void *ctx;
} walk;

static onnxio_status each(void *msg, void *parent, const onnxio_field_desc *field, void *ctx)
{
    (void)parent;
    (void)field;
    walk *w = ctx;
    w->visit(w->ctx, msg);
    return ONNXIO_OK;
}

void cli_walk(void *msg, cli_visit_fn visit, void *ctx)
{
    walk w = {visit, ctx};
    /* A parsed tree is at most max_depth deep, within ONNXIO_MAX_DEPTH:
     * the walk cannot fail on it. */
    (void)onnxio_visit(msg, NULL, each, &w);
}
