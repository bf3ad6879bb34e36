/* What every payload container shares (container.h): its list of open
 * entries, found by what they are, so that a file or an entry named by
 * several locations is opened, mapped or inflated once. */
#include "io/container.h"

onnxio__entry *onnxio__container_find(onnxio__container *c, uint64_t key0, uint64_t key1)
{
    for (onnxio__entry *e = c->entries; e; e = e->next)
        if (e->key[0] == key0 && e->key[1] == key1) return e;
    return NULL;
}

void onnxio__container_add(onnxio__container *c, onnxio__entry *e, uint64_t key0, uint64_t key1)
{
    e->key[0] = key0;
    e->key[1] = key1;
    e->next = c->entries;
    c->entries = e;
}

void onnxio__container_close(onnxio__container *c)
{
    if (!c) return;
    for (onnxio__entry *e = c->entries, *next; e; e = next) {
        next = e->next;
        c->release(e);
        onnxio__free(e->crc_pieces);
        onnxio__free(e);
    }
    if (c->finish) c->finish(c);
    onnxio__free(c);
}
