/* The entries of an .onnxz archive as a payload container (docs/design.md,
 * "The container seam"; docs/onnxz.md): a tensor's location is an entry
 * name. Stored entries are read where they are, from the archive's file
 * (pread) or mapping (borrowed with no_copy when their address is aligned);
 * deflated entries are inflated once, however many tensors refer to them,
 * and their bytes charged to the load's expansion budget. */
#include <string.h>

#include "container.h"

typedef struct zip_entry {
    onnxio__entry e;
    const onnxio_archive_entry *pub;
    onnxio_buffer *inflated; /* deflated entries: their bytes */
    char name[300];          /* "archive X: entry 'Y'", for messages */
    struct zip_entry *next;
} zip_entry;

typedef struct zip_container {
    onnxio__container base;
    onnxio_archive *archive;
    uint64_t alignment;
    zip_entry *entries;
} zip_container;

static const char *name_of(const onnxio_TensorProto *t) { return t->name.data ? t->name.data : ""; }

static onnxio_status zip_open(onnxio__container *base, const onnxio_TensorProto *t, const onnxio_external_ref *r,
                              onnxio__budget *budget, onnxio__entry **out)
{
    zip_container *c = (zip_container *)base;
    onnxio_archive *a = c->archive;
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
                            name_of(t), r->location, onnxio__archive_what(a));
    if (pub == onnxio__archive_model(a))
        return onnxio__fail(ONNXIO_ERR_PATH_SELF, "tensor '%s': external data location '%s' is the model entry itself",
                            name_of(t), r->location);
    for (zip_entry *z = c->entries; z; z = z->next)
        if (z->pub == pub) {
            *out = &z->e;
            return ONNXIO_OK;
        }
    zip_entry *z = onnxio__calloc(1, sizeof *z);
    if (!z) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    z->pub = pub;
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
            return onnxio__context(s, "tensor '%s'", name_of(t));
        }
        z->e.data = data;
        z->e.owner = z->inflated;
        z->e.borrow = true;
    }
    z->next = c->entries;
    c->entries = z;
    *out = &z->e;
    return ONNXIO_OK;
}

static void zip_close(onnxio__container *base)
{
    zip_container *c = (zip_container *)base;
    for (zip_entry *z = c->entries, *next; z; z = next) {
        next = z->next;
        onnxio_buffer_unref(z->inflated);
        onnxio__free(z->e.crc_pieces);
        onnxio__free(z);
    }
    onnxio__free(c);
}

onnxio_status onnxio__zip_container(onnxio_archive *archive, const onnxio_parse_options *opts,
                                    onnxio__container **out)
{
    zip_container *c = onnxio__calloc(1, sizeof *c);
    if (!c) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->base.open = zip_open;
    c->base.close = zip_close;
    c->archive = archive;
    c->alignment = opts->alignment ? opts->alignment : ONNXIO_DEFAULT_ALIGNMENT;
    *out = &c->base;
    return ONNXIO_OK;
}
