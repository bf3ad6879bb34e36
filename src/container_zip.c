/* The entries of an .onnxz archive as a payload container (docs/design.md,
 * "The container seam"; docs/onnxz.md): a tensor's location is an entry
 * name. Stored entries are read where they are, from the archive's file
 * (pread) or mapping (borrowed with no_copy when their address is aligned);
 * deflated entries are inflated once, however many tensors refer to them,
 * and their bytes charged to the load's expansion budget. */
#include <string.h>

#include "container.h"

/* An archive entry: the entry first (container.c frees it), then its own. */
typedef struct zip_entry {
    onnxio__entry e;
    onnxio_buffer *inflated; /* deflated entries: their bytes */
    char name[300];          /* "entry 'Y'", for messages */
} zip_entry;

typedef struct zip_container {
    onnxio__container base;
    onnxio_archive *archive;
    uint64_t alignment;
} zip_container;

/* The entry a tensor's location names ("./" prefixes removed), not the
 * model's. */
static onnxio_status resolve(onnxio_archive *a, const onnxio_TensorProto *t, const onnxio_external_ref *r,
                             const onnxio_archive_entry **out)
{
    const char *loc = r->location;
    size_t n = r->location_size;
    /* "./name" is the same entry, as a path would be the same file. */
    while (n > 2 && loc[0] == '.' && loc[1] == '/') {
        loc += 2;
        n -= 2;
    }
    const onnxio_archive_entry *pub = onnxio__archive_find_n(a, loc, n);
    if (!pub)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': external data location '%s' is not an entry of archive %s",
                            onnxio__tensor_name(t), r->location, onnxio__archive_what(a));
    if (onnxio_archive_entry_is_model(pub))
        return onnxio__fail(ONNXIO_ERR_PATH_SELF, "tensor '%s': external data location '%s' is the model entry itself",
                            onnxio__tensor_name(t), r->location);
    *out = pub;
    return ONNXIO_OK;
}

static onnxio_status zip_open(onnxio__container *base, const onnxio_TensorProto *t, const onnxio_external_ref *r,
                              onnxio__budget *budget, onnxio__entry **out)
{
    zip_container *c = (zip_container *)base;
    onnxio_archive *a = c->archive;
    const onnxio_archive_entry *pub;
    onnxio_status rs = resolve(a, t, r, &pub);
    if (rs) return rs;
    if ((*out = onnxio__container_find(base, (uint64_t)(uintptr_t)pub, 0))) return ONNXIO_OK;
    zip_entry *z = onnxio__calloc(1, sizeof *z);
    if (!z) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    snprintf(z->name, sizeof z->name, "entry '%.200s'", pub->name);
    z->e.name = z->name;
    z->e.size = pub->size;
    z->e.fd = -1;
    budget->input += pub->compressed_size;
    if (pub->method == ONNXIO_ARCHIVE_STORED) {
        /* Stored: the bytes are the archive's, in its file and memory. */
        z->e.data = onnxio__archive_data(a) + pub->data_offset;
        z->e.owner = onnxio__archive_owner(a);
        z->e.fd = onnxio__archive_fd(a);
        z->e.offset = pub->data_offset;
        z->e.borrow = (uintptr_t)z->e.data % c->alignment == 0;
        z->e.has_crc = true;
        z->e.crc32 = pub->crc32;
    } else {
        /* Deflated: inflated once (its CRC-32 checked on the way), and its
         * payloads copied out of that buffer or sharing it. */
        const uint8_t *data;
        onnxio_status s = onnxio__archive_entry_bytes(a, pub, false, budget, &data, &z->inflated);
        if (s) {
            onnxio__free(z);
            return onnxio__context(s, "tensor '%s'", onnxio__tensor_name(t));
        }
        z->e.data = data;
        z->e.owner = z->inflated;
        z->e.borrow = true;
    }
    onnxio__container_add(base, &z->e, (uint64_t)(uintptr_t)pub, 0);
    *out = &z->e;
    return ONNXIO_OK;
}

static void zip_release(onnxio__entry *e) { onnxio_buffer_unref(((zip_entry *)e)->inflated); }

onnxio_status onnxio__zip_container(onnxio_archive *archive, const onnxio_parse_options *opts,
                                    onnxio__container **out)
{
    zip_container *c = onnxio__calloc(1, sizeof *c);
    if (!c) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->base.open = zip_open;
    c->base.release = zip_release;
    c->archive = archive;
    c->alignment = opts->alignment;
    *out = &c->base;
    return ONNXIO_OK;
}

/* ---- remote archives (onnxio.h, "remote sources") -------------------- */

typedef struct ranges_ctx {
    onnxio_archive *archive;
    onnxio_archive_range *items;
    size_t count, capacity;
} ranges_ctx;

static onnxio_status collect(void *ctx, onnxio_TensorProto *t, const onnxio_external_ref *rp)
{
    ranges_ctx *c = ctx;
    onnxio_external_ref r = *rp;
    onnxio_status s;
    const onnxio_archive_entry *pub;
    if ((s = resolve(c->archive, t, &r, &pub))) return s;
    /* The name in messages is the local load's (zip_open). */
    char name[300];
    snprintf(name, sizeof name, "entry '%.200s'", pub->name);
    uint64_t length = 0;
    if ((s = onnxio__check_external_range(t, &r, pub->size, name, &length))) return s;
    if (!onnxio__grow((void **)&c->items, &c->capacity, c->count, sizeof *c->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->items[c->count++] = (onnxio_archive_range){t, pub, r.offset, length};
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_archive_ranges(onnxio_archive *archive, onnxio_message *root, onnxio_archive_range **out,
                                               size_t *count)
{
    if (!archive || !root || !out || !count)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_archive_ranges: NULL argument");
    onnxio__clear_error();
    *out = NULL;
    *count = 0;
    ranges_ctx c = {.archive = archive};
    onnxio_status s = onnxio__visit_external(root, collect, &c);
    if (s) {
        onnxio__free(c.items);
        return s;
    }
    *out = c.items;
    *count = c.count;
    return ONNXIO_OK;
}

ONNXIO_API void onnxio_archive_ranges_free(onnxio_archive_range *ranges) { onnxio__free(ranges); }
