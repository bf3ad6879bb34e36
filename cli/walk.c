#include "walk.h"

/* Every onnxio_<Message>_list has this layout (proto.h, ONNXIO_ARRAY_TYPE). */
typedef struct any_list {
    void **data;
    size_t size;
    size_t capacity;
} any_list;

void cli_walk(void *msg, cli_visit_fn visit, void *ctx)
{
    const onnxio_message_desc *desc = ((onnxio_message *)msg)->desc;
    visit(ctx, msg);
    for (size_t i = 0; i < desc->field_count; i++) {
        const onnxio_field_desc *f = &desc->fields[i];
        if (f->kind != ONNXIO_KIND_MESSAGE)
            continue;
        void *p = onnxio_field_ptr(msg, f);
        if (f->label == ONNXIO_LABEL_REPEATED) {
            const any_list *list = p;
            for (size_t j = 0; j < list->size; j++)
                if (list->data[j])
                    cli_walk(list->data[j], visit, ctx);
        } else {
            void *sub = *(void **)p;
            if (sub)
                cli_walk(sub, visit, ctx);
        }
    }
}
