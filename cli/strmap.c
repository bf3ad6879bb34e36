#include "strmap.h"

#include <stdlib.h>
#include <string.h>

void cli_strmap_init(cli_strmap *m)
{
    memset(m, 0, sizeof *m);
}

void cli_strmap_free(cli_strmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* FNV-1a over both strings, with a separator so that ("ab","") and
 * ("a","b") differ. */
static uint64_t hash_pair(onnxio_string a, onnxio_string b)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < a.size; i++) {
        h ^= (unsigned char)a.data[i];
        h *= 1099511628211ULL;
    }
    h ^= 0xFF;
    h *= 1099511628211ULL;
    for (size_t i = 0; i < b.size; i++) {
        h ^= (unsigned char)b.data[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static int same(onnxio_string x, onnxio_string y)
{
    return x.size == y.size && (x.size == 0 || memcmp(x.data, y.data, x.size) == 0);
}

static cli_strmap_entry *probe(const cli_strmap *m, onnxio_string a, onnxio_string b)
{
    size_t mask = m->capacity - 1;
    size_t i = (size_t)hash_pair(a, b) & mask;
    for (;;) {
        cli_strmap_entry *e = &m->slots[i];
        if (!e->used || (same(e->a, a) && same(e->b, b)))
            return e;
        i = (i + 1) & mask;
    }
}

cli_strmap_entry *cli_strmap_find(const cli_strmap *m, onnxio_string a, onnxio_string b)
{
    if (m->capacity == 0)
        return NULL;
    cli_strmap_entry *e = probe(m, a, b);
    return e->used ? e : NULL;
}

static int grow(cli_strmap *m)
{
    size_t cap = m->capacity ? m->capacity * 2 : 64;
    cli_strmap old = *m;
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) {
        *m = old;
        return -1;
    }
    m->capacity = cap;
    for (size_t i = 0; i < old.capacity; i++)
        if (old.slots[i].used)
            *probe(m, old.slots[i].a, old.slots[i].b) = old.slots[i];
    free(old.slots);
    return 0;
}

cli_strmap_entry *cli_strmap_upsert(cli_strmap *m, onnxio_string a, onnxio_string b,
                                    uint64_t init, int *added)
{
    if (added)
        *added = 0;
    /* Load factor at most 1/2. */
    if ((m->count + 1) * 2 > m->capacity && grow(m) != 0)
        return NULL;
    cli_strmap_entry *e = probe(m, a, b);
    if (!e->used) {
        e->used = 1;
        e->a = a;
        e->b = b;
        e->value = init;
        m->count++;
        if (added)
            *added = 1;
    }
    return e;
}
