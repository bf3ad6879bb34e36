/* The .onnxz container (docs/design.md "Files", docs/onnxz.md): a zip archive
 * (PKWARE APPNOTE 6.3.10) whose stored entries hold tensor payloads on
 * aligned file offsets and whose entry "__MODEL_PROTO" holds the
 * ModelProto, its tensors referring to their entries through the external
 * data keys.
 *
 * Reading trusts nothing: the end records, the ZIP64 records, every central
 * header and every local header are checked against each other and the file
 * size, names are checked for unsafe paths and duplicates, entries for
 * overlaps, before the model is parsed or any payload allocated. Payloads
 * then go through payload.c like any external data (borrowed from the
 * mapping with no_copy, read by the pool otherwise), with CRC-32s computed
 * as the bytes move. Writing lays every entry out first, writes payloads
 * and their CRC-32s on the pool, then the headers; replacing the model
 * appends, so that the weights never move. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"

#define MODEL_ENTRY "__MODEL_PROTO"
#define DEFAULT_ALIGNMENT 64

/* Record signatures and sizes (APPNOTE 4.3). */
#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define LOCAL_SIZE 30
#define CENTRAL_SIZE 46
#define END_SIZE 22
#define END64_SIZE 56
#define LOCATOR64_SIZE 20
#define MAX_COMMENT 0xFFFF

/* Extra field IDs: ZIP64 (APPNOTE 4.5.3), and onnxio's alignment padding
 * (bytes "ox"; its data is zeros and means nothing). */
#define EXTRA_ZIP64 0x0001
#define EXTRA_PADDING 0x786F

/* What onnxio writes: made by UNIX (3), spec version 4.5 (ZIP64); entries
 * need 2.0, or 4.5 with ZIP64 fields; regular files, mode 0644; the DOS
 * time 1980-01-01 00:00 so that the bytes depend only on the model. */
#define VERSION_MADE_BY ((3u << 8) | 45u)
#define VERSION_NEEDED 20u
#define VERSION_NEEDED64 45u
#define EXTERNAL_ATTR (0100644u << 16)
#define DOS_DATE 0x0021u
#define DOS_TIME 0u

/* Deflate cannot expand data more than about 1032 times; a recorded size
 * beyond that is a lie, and no buffer is sized from it. */
#define MAX_INFLATE_RATIO 1032u

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static uint8_t *wr16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}
static uint8_t *wr32(uint8_t *p, uint32_t v) { return wr16(wr16(p, v & 0xFFFF), v >> 16); }
static uint8_t *wr64(uint8_t *p, uint64_t v) { return wr32(wr32(p, (uint32_t)v), (uint32_t)(v >> 32)); }

/* One entry as read: the public fields, and where its central header is. */
typedef struct entry {
    onnxio_archive_entry pub;
    uint16_t flags;
    uint64_t central_offset; /* of its central header, and its size */
    uint64_t central_size;
} entry;

struct onnxio_archive {
    const uint8_t *data;
    size_t size;
    onnxio_buffer *owner; /* a reference, or NULL (borrowed) */
    int fd;               /* -1: only in memory */
    int own_fd;           /* fd was opened here */
    char *what;           /* the file named in errors */
    entry *entries;
    size_t count;
    char *names;          /* every name, NUL-terminated */
    size_t *by_name;      /* entry indexes sorted by name */
    size_t model;         /* index of __MODEL_PROTO */
    uint64_t cd_offset, cd_size;
    uint64_t end_offset;  /* where the end records start */
};

int onnxio__is_archive(const void *data, size_t size)
{
    const uint8_t *p = data;
    /* A zero first byte is never protobuf (field number 0), and it is how an
     * archive aligned to more than 64 KiB starts: with the gap before its
     * first local header. */
    if (size >= END_SIZE && p[0] == 0) return 1;
    return size >= 4 && p[0] == 'P' && p[1] == 'K' && ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6));
}

bool onnxio__verify_crc(const onnxio_parse_options *opts)
{
    if (!opts || opts->verify_crc == ONNXIO_DEFAULT) return !(opts && opts->no_copy);
    return opts->verify_crc == ONNXIO_ON;
}

static onnxio_status bad(const onnxio_archive *a, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
static onnxio_status bad(const onnxio_archive *a, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return onnxio__fail(ONNXIO_ERR_ARCHIVE, "archive %s: %s", a->what, msg);
}

/* ---- reading the structure ----------------------------------------- */

/* The end records: the classic end of central directory record, and the
 * ZIP64 locator and record when present. */
typedef struct end_info {
    uint64_t count, cd_size, cd_offset;
    uint64_t end_offset; /* first byte of the end records */
} end_info;

/* Reads the end records whose classic record is at `pos`. */
static onnxio_status read_end(const onnxio_archive *a, uint64_t pos, end_info *e)
{
    const uint8_t *p = a->data + pos;
    if (rd16(p + 4) != 0 || rd16(p + 6) != 0 || rd16(p + 8) != rd16(p + 10))
        return bad(a, "the end of central directory record at byte %llu describes a multi-disk archive",
                   (unsigned long long)pos);
    e->count = rd16(p + 10);
    e->cd_size = rd32(p + 12);
    e->cd_offset = rd32(p + 16);
    e->end_offset = pos;
    if (pos < LOCATOR64_SIZE || rd32(a->data + pos - LOCATOR64_SIZE) != SIG_LOCATOR64) {
        if (e->count == 0xFFFF || e->cd_size == 0xFFFFFFFF || e->cd_offset == 0xFFFFFFFF)
            return bad(a, "the end of central directory record at byte %llu needs ZIP64 records, and there are none",
                       (unsigned long long)pos);
        return ONNXIO_OK;
    }
    const uint8_t *l = a->data + pos - LOCATOR64_SIZE;
    uint64_t rec = rd64(l + 8);
    if (rd32(l + 4) != 0 || rd32(l + 16) > 1)
        return bad(a, "the ZIP64 end of central directory locator describes a multi-disk archive");
    /* The record must lie right before its locator: nothing hides between. */
    if (rec > pos - LOCATOR64_SIZE || pos - LOCATOR64_SIZE - rec < END64_SIZE || rd32(a->data + rec) != SIG_END64 ||
        rd64(a->data + rec + 4) != pos - LOCATOR64_SIZE - rec - 12)
        return bad(a, "the ZIP64 end of central directory locator points at byte %llu, where there is no ZIP64 end "
                      "record ending at the locator",
                   (unsigned long long)rec);
    const uint8_t *r = a->data + rec;
    if (rd32(r + 16) != 0 || rd32(r + 20) != 0 || rd64(r + 24) != rd64(r + 32))
        return bad(a, "the ZIP64 end of central directory record describes a multi-disk archive");
    uint64_t count = rd64(r + 32), cd_size = rd64(r + 40), cd_offset = rd64(r + 48);
    /* A classic field either says "see ZIP64" or agrees with it. */
    if ((e->count != 0xFFFF && e->count != count) || (e->cd_size != 0xFFFFFFFF && e->cd_size != cd_size) ||
        (e->cd_offset != 0xFFFFFFFF && e->cd_offset != cd_offset))
        return bad(a, "the end of central directory record (%llu entries, %llu bytes at %llu) and its ZIP64 record "
                      "(%llu entries, %llu bytes at %llu) disagree",
                   (unsigned long long)e->count, (unsigned long long)e->cd_size, (unsigned long long)e->cd_offset,
                   (unsigned long long)count, (unsigned long long)cd_size, (unsigned long long)cd_offset);
    e->count = count;
    e->cd_size = cd_size;
    e->cd_offset = cd_offset;
    e->end_offset = rec;
    return ONNXIO_OK;
}

static int cd_fits(const end_info *e)
{
    return e->cd_offset <= e->end_offset && e->cd_size == e->end_offset - e->cd_offset;
}

/* Finds the end records. The classic record normally ends the file
 * (its comment reaching the last byte); if none does, the last one whose
 * central directory ends right before it is used: what an interrupted
 * model replacement leaves (docs/onnxz.md, "Replacing the model"). */
static onnxio_status find_end(const onnxio_archive *a, end_info *e)
{
    if (a->size < END_SIZE) return bad(a, "%zu bytes are too few for a zip archive", a->size);
    uint64_t lowest = a->size - END_SIZE > MAX_COMMENT ? a->size - END_SIZE - MAX_COMMENT : 0;
    for (uint64_t pos = a->size - END_SIZE + 1; pos-- > lowest;) {
        const uint8_t *p = a->data + pos;
        if (rd32(p) == SIG_END && pos + END_SIZE + rd16(p + 20) == a->size) return read_end(a, pos, e);
    }
    for (uint64_t pos = a->size - END_SIZE + 1; pos-- > 0;) {
        const uint8_t *p = a->data + pos;
        if (p[0] != 'P' || rd32(p) != SIG_END) continue;
        end_info c;
        if (read_end(a, pos, &c) == ONNXIO_OK && cd_fits(&c)) {
            *e = c;
            return ONNXIO_OK;
        }
    }
    return bad(a, "no end of central directory record (not a zip archive, or truncated)");
}

/* Reads the ZIP64 extra field of a header: the values of the fields that
 * hold 0xFFFFFFFF (0xFFFF for the disk), in APPNOTE order. */
static onnxio_status read_extra(const onnxio_archive *a, const char *name, const uint8_t *x, size_t n, uint64_t *usize,
                                uint64_t *csize, uint64_t *offset, int central)
{
    int need_u = *usize == 0xFFFFFFFF, need_c = *csize == 0xFFFFFFFF, need_o = offset && *offset == 0xFFFFFFFF;
    int found = 0;
    for (size_t at = 0; at < n;) {
        if (n - at < 4) return bad(a, "entry '%s': its %s extra field is cut short", name, central ? "central" : "local");
        uint16_t id = rd16(x + at), len = rd16(x + at + 2);
        if (len > n - at - 4)
            return bad(a, "entry '%s': a %s extra field runs past its header", name, central ? "central" : "local");
        if (id == EXTRA_ZIP64) {
            if (found) return bad(a, "entry '%s': two ZIP64 extra fields", name);
            found = 1;
            const uint8_t *v = x + at + 4;
            size_t left = len;
            uint64_t *want[3] = {need_u ? usize : NULL, need_c ? csize : NULL, need_o ? offset : NULL};
            for (int k = 0; k < 3; k++) {
                if (!want[k]) continue;
                if (left < 8)
                    return bad(a, "entry '%s': its ZIP64 extra field lacks a value its header says it holds", name);
                *want[k] = rd64(v);
                v += 8;
                left -= 8;
            }
        }
        at += 4 + (size_t)len;
    }
    if (!found && (need_u || need_c || need_o))
        return bad(a, "entry '%s': its %s header holds 0xFFFFFFFF without a ZIP64 extra field", name,
                   central ? "central" : "local");
    return ONNXIO_OK;
}

/* Entry names become paths when an archive is extracted: refuse the
 * dangerous ones (APPNOTE 4.4.17: relative, forward slashes). */
static onnxio_status check_name(const onnxio_archive *a, const uint8_t *name, size_t n)
{
    if (n == 0) return bad(a, "an entry has an empty name");
    if (memchr(name, '\0', n)) return bad(a, "entry name '%.*s' contains a NUL byte", (int)n, (const char *)name);
    if (name[0] == '/' || name[0] == '\\' || (n >= 2 && name[1] == ':'))
        return bad(a, "entry name '%.*s' is an absolute path", (int)(n > 200 ? 200 : n), (const char *)name);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && name[j] != '/' && name[j] != '\\') j++;
        if (j - i == 2 && name[i] == '.' && name[i + 1] == '.')
            return bad(a, "entry name '%.*s' has a '..' component", (int)(n > 200 ? 200 : n), (const char *)name);
        i = j + 1;
    }
    return ONNXIO_OK;
}

static int by_name_cmp(const void *x, const void *y)
{
    const entry *p = *(const entry *const *)x, *q = *(const entry *const *)y;
    size_t n = p->pub.name_size < q->pub.name_size ? p->pub.name_size : q->pub.name_size;
    int c = memcmp(p->pub.name, q->pub.name, n);
    if (c) return c;
    return (p->pub.name_size > q->pub.name_size) - (p->pub.name_size < q->pub.name_size);
}

static int by_offset_cmp(const void *x, const void *y)
{
    const entry *p = x, *q = y;
    return (p->pub.header_offset > q->pub.header_offset) - (p->pub.header_offset < q->pub.header_offset);
}

/* Reads one central header at `at` into e (its name copied to *names). */
static onnxio_status read_central(onnxio_archive *a, uint64_t at, uint64_t cd_end, entry *e, char **names)
{
    const uint8_t *p = a->data + at;
    if (cd_end - at < CENTRAL_SIZE || rd32(p) != SIG_CENTRAL)
        return bad(a, "no central directory header at byte %llu", (unsigned long long)at);
    uint16_t nlen = rd16(p + 28), xlen = rd16(p + 30), clen = rd16(p + 32);
    if ((uint64_t)CENTRAL_SIZE + nlen + xlen + clen > cd_end - at)
        return bad(a, "the central directory header at byte %llu runs past the central directory", (unsigned long long)at);
    onnxio_status s = check_name(a, p + CENTRAL_SIZE, nlen);
    if (s) return s;
    memcpy(*names, p + CENTRAL_SIZE, nlen);
    (*names)[nlen] = '\0';
    e->pub.name = *names;
    e->pub.name_size = nlen;
    *names += nlen + 1;
    const char *name = e->pub.name;
    e->flags = rd16(p + 8);
    e->pub.method = rd16(p + 10);
    e->pub.crc32 = rd32(p + 16);
    e->pub.compressed_size = rd32(p + 20);
    e->pub.size = rd32(p + 24);
    e->pub.header_offset = rd32(p + 42);
    e->central_offset = at;
    e->central_size = (uint64_t)CENTRAL_SIZE + nlen + xlen + clen;
    if (e->flags & 0x41) return bad(a, "entry '%s' is encrypted", name);
    if (e->pub.method != 0 && e->pub.method != 8)
        return bad(a, "entry '%s' uses compression method %u (only stored and deflate are read)", name, e->pub.method);
    uint32_t disk = rd16(p + 34);
    if ((s = read_extra(a, name, p + CENTRAL_SIZE + nlen, xlen, &e->pub.size, &e->pub.compressed_size,
                        &e->pub.header_offset, 1)))
        return s;
    if (disk != 0 && disk != 0xFFFF) return bad(a, "entry '%s' starts on disk %u of a multi-disk archive", name, disk);
    if (e->pub.method == 0 && e->pub.size != e->pub.compressed_size)
        return bad(a, "entry '%s' is stored but its sizes differ (%llu and %llu bytes)", name,
                   (unsigned long long)e->pub.size, (unsigned long long)e->pub.compressed_size);
    return ONNXIO_OK;
}

/* Checks an entry's local header against its central header. */
static onnxio_status read_local(onnxio_archive *a, entry *e)
{
    const char *name = e->pub.name;
    uint64_t h = e->pub.header_offset;
    if (h > a->cd_offset || a->cd_offset - h < LOCAL_SIZE)
        return bad(a, "entry '%s': its local header offset %llu is not before the central directory", name,
                   (unsigned long long)h);
    const uint8_t *p = a->data + h;
    if (rd32(p) != SIG_LOCAL) return bad(a, "entry '%s': no local header at byte %llu", name, (unsigned long long)h);
    uint16_t flags = rd16(p + 6), method = rd16(p + 8), nlen = rd16(p + 26), xlen = rd16(p + 28);
    uint64_t data = h + LOCAL_SIZE + nlen + xlen;
    if (data > a->cd_offset) return bad(a, "entry '%s': its local header runs into the central directory", name);
    if (nlen != e->pub.name_size || memcmp(p + LOCAL_SIZE, e->pub.name, nlen) != 0)
        return bad(a, "entry '%s': its local header at byte %llu names '%.*s'", name, (unsigned long long)h,
                   (int)(nlen > 200 ? 200 : nlen), (const char *)p + LOCAL_SIZE);
    if (method != e->pub.method || (flags & 0x49) != (e->flags & 0x49))
        return bad(a, "entry '%s': its local header (method %u, flags 0x%x) and central header (method %u, flags 0x%x) disagree",
                   name, method, flags, e->pub.method, e->flags);
    if (!(flags & 0x08)) {
        /* Sizes and CRC are in the local header too (no data descriptor). */
        uint64_t usize = rd32(p + 22), csize = rd32(p + 18);
        onnxio_status s = read_extra(a, name, p + LOCAL_SIZE + nlen, xlen, &usize, &csize, NULL, 0);
        if (s) return s;
        if (rd32(p + 14) != e->pub.crc32 || usize != e->pub.size || csize != e->pub.compressed_size)
            return bad(a, "entry '%s': its local header (CRC %08x, %llu bytes) and central header (CRC %08x, %llu bytes) disagree",
                       name, rd32(p + 14), (unsigned long long)usize, e->pub.crc32, (unsigned long long)e->pub.size);
    } else {
        onnxio_status s = read_extra(a, name, p + LOCAL_SIZE + nlen, xlen, &(uint64_t){0}, &(uint64_t){0}, NULL, 0);
        if (s) return s;
    }
    if (e->pub.compressed_size > a->cd_offset - data)
        return bad(a, "entry '%s': its %llu bytes at byte %llu run into the central directory or past the end of the file",
                   name, (unsigned long long)e->pub.compressed_size, (unsigned long long)data);
    e->pub.data_offset = data;
    return ONNXIO_OK;
}

static onnxio_status read_structure(onnxio_archive *a)
{
    end_info e;
    onnxio_status s = find_end(a, &e);
    if (s) return s;
    if (!cd_fits(&e))
        return bad(a, "the central directory (%llu bytes at byte %llu) does not end where the end records start (byte %llu)",
                   (unsigned long long)e.cd_size, (unsigned long long)e.cd_offset, (unsigned long long)e.end_offset);
    a->cd_offset = e.cd_offset;
    a->cd_size = e.cd_size;
    a->end_offset = e.end_offset;
    /* Every central header takes at least CENTRAL_SIZE bytes: the count
     * cannot size an allocation larger than the file. */
    if (e.count > e.cd_size / CENTRAL_SIZE)
        return bad(a, "the end record says %llu entries, more than a %llu-byte central directory can hold",
                   (unsigned long long)e.count, (unsigned long long)e.cd_size);
    a->count = (size_t)e.count;
    a->entries = onnxio__calloc(a->count ? a->count : 1, sizeof *a->entries);
    a->by_name = onnxio__calloc(a->count ? a->count : 1, sizeof *a->by_name);
    a->names = onnxio__malloc((size_t)e.cd_size + 1);
    if (!a->entries || !a->by_name || !a->names) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    char *names = a->names;
    uint64_t at = e.cd_offset, cd_end = e.cd_offset + e.cd_size;
    for (size_t i = 0; i < a->count; i++) {
        if ((s = read_central(a, at, cd_end, &a->entries[i], &names))) return s;
        at += a->entries[i].central_size;
    }
    if (at != cd_end)
        return bad(a, "the central directory has %llu bytes after its %zu entries", (unsigned long long)(cd_end - at),
                   a->count);
    for (size_t i = 0; i < a->count; i++)
        if ((s = read_local(a, &a->entries[i]))) return s;
    /* No two entries may share bytes. */
    entry *sorted = onnxio__malloc((a->count ? a->count : 1) * sizeof *sorted);
    if (!sorted) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy(sorted, a->entries, a->count * sizeof *sorted);
    qsort(sorted, a->count, sizeof *sorted, by_offset_cmp);
    for (size_t i = 0; i + 1 < a->count && !s; i++)
        if (sorted[i].pub.data_offset + sorted[i].pub.compressed_size > sorted[i + 1].pub.header_offset)
            s = bad(a, "entries '%s' and '%s' overlap (bytes %llu to %llu, and from %llu)", sorted[i].pub.name,
                    sorted[i + 1].pub.name, (unsigned long long)sorted[i].pub.header_offset,
                    (unsigned long long)(sorted[i].pub.data_offset + sorted[i].pub.compressed_size),
                    (unsigned long long)sorted[i + 1].pub.header_offset);
    onnxio__free(sorted);
    if (s) return s;
    const entry **order = onnxio__malloc((a->count ? a->count : 1) * sizeof *order);
    if (!order) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < a->count; i++) order[i] = &a->entries[i];
    qsort(order, a->count, sizeof *order, by_name_cmp);
    for (size_t i = 0; i < a->count; i++) a->by_name[i] = (size_t)(order[i] - a->entries);
    onnxio__free(order);
    for (size_t i = 0; i + 1 < a->count; i++) {
        const entry *p = &a->entries[a->by_name[i]], *q = &a->entries[a->by_name[i + 1]];
        if (p->pub.name_size == q->pub.name_size && memcmp(p->pub.name, q->pub.name, p->pub.name_size) == 0)
            return bad(a, "two entries are named '%s'", p->pub.name);
    }
    const onnxio_archive_entry *m = onnxio_archive_find(a, MODEL_ENTRY);
    if (!m) return bad(a, "no entry named " MODEL_ENTRY " (the model)");
    a->model = (size_t)((const entry *)m - a->entries);
    return ONNXIO_OK;
}

onnxio_status onnxio__archive_open(const uint8_t *data, size_t size, onnxio_buffer *owner, int fd, const char *what,
                                   onnxio_archive **out)
{
    *out = NULL;
    onnxio_archive *a = onnxio__calloc(1, sizeof *a);
    if (!a || !(a->what = onnxio__strdup(what ? what : "(bytes)"))) {
        onnxio__free(a);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    a->data = data;
    a->size = size;
    a->owner = onnxio_buffer_ref(owner);
    a->fd = fd;
    onnxio_status s = read_structure(a);
    if (s) {
        onnxio_archive_close(a);
        return s;
    }
    *out = a;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_archive_open_bytes(const void *data, size_t size, onnxio_buffer *owner,
                                                   onnxio_archive **out)
{
    if (!out || (!data && size)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_open_bytes: NULL argument");
    onnxio__clear_error();
    return onnxio__archive_open(data, size, owner, -1, NULL, out);
}

ONNXIO_API onnxio_status onnxio_archive_open(const char *path, onnxio_archive **out)
{
    if (!path || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_open: NULL argument");
    onnxio__clear_error();
    *out = NULL;
    onnxio_buffer *map;
    int fd;
    onnxio_status s = onnxio__map_file(path, &map, &fd);
    if (s) return s;
    s = onnxio__archive_open(onnxio_buffer_data(map), onnxio_buffer_size(map), map, fd, path, out);
    onnxio_buffer_unref(map);
    if (s) close(fd);
    else (*out)->own_fd = 1;
    return s;
}

ONNXIO_API void onnxio_archive_close(onnxio_archive *a)
{
    if (!a) return;
    if (a->own_fd && a->fd >= 0) close(a->fd);
    onnxio_buffer_unref(a->owner);
    onnxio__free(a->entries);
    onnxio__free(a->by_name);
    onnxio__free(a->names);
    onnxio__free(a->what);
    onnxio__free(a);
}

ONNXIO_API size_t onnxio_archive_entry_count(const onnxio_archive *a) { return a ? a->count : 0; }

ONNXIO_API const onnxio_archive_entry *onnxio_archive_entry_at(const onnxio_archive *a, size_t index)
{
    return a && index < a->count ? &a->entries[index].pub : NULL;
}

static const entry *find_n(const onnxio_archive *a, const char *name, size_t n)
{
    size_t lo = 0, hi = a->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const entry *e = &a->entries[a->by_name[mid]];
        size_t k = e->pub.name_size < n ? e->pub.name_size : n;
        int c = memcmp(e->pub.name, name, k);
        if (!c) c = (e->pub.name_size > n) - (e->pub.name_size < n);
        if (c == 0) return e;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

ONNXIO_API const onnxio_archive_entry *onnxio_archive_find(const onnxio_archive *a, const char *name)
{
    if (!a || !name) return NULL;
    const entry *e = find_n(a, name, strlen(name));
    return e ? &e->pub : NULL;
}

/* ---- reading the data ---------------------------------------------- */

static onnxio_status crc_mismatch(const onnxio_archive *a, const entry *e, uint32_t got)
{
    return onnxio__fail(ONNXIO_ERR_CHECKSUM, "archive %s: entry '%s' has CRC-32 %08x, its header says %08x", a->what,
                        e->pub.name, got, e->pub.crc32);
}

/* Inflates a deflated entry into a new buffer (its CRC-32 checked). */
static onnxio_status inflate_entry(const onnxio_archive *a, const entry *e, onnxio_buffer **out)
{
    *out = NULL;
    const char *name = e->pub.name;
    uint64_t csize = e->pub.compressed_size, usize = e->pub.size;
    if (usize / MAX_INFLATE_RATIO > csize + 1)
        return bad(a, "entry '%s' claims %llu bytes from %llu deflated ones, more than deflate can give", name,
                   (unsigned long long)usize, (unsigned long long)csize);
    if (usize > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "entry '%s': %llu bytes do not fit in memory", name,
                                               (unsigned long long)usize);
    onnxio_buffer *b = onnxio_buffer_new(usize ? (size_t)usize : 1, DEFAULT_ALIGNMENT);
    if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "entry '%s': out of memory for %llu bytes", name, (unsigned long long)usize);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
        onnxio_buffer_unref(b);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot start inflating entry '%s'", name);
    }
    const uint8_t *in = a->data + e->pub.data_offset;
    uint8_t *dst = onnxio_buffer_data(b);
    uint64_t in_left = csize, out_done = 0;
    uint8_t spare;
    int r = Z_OK;
    while (r == Z_OK) {
        if (z.avail_in == 0 && in_left) {
            z.next_in = (Bytef *)(uintptr_t)in;
            z.avail_in = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
            in += z.avail_in;
            in_left -= z.avail_in;
        }
        /* One spare byte past the recorded size catches data that
         * inflates to more. */
        if (out_done < usize) {
            z.next_out = dst + out_done;
            z.avail_out = usize - out_done > (1u << 30) ? (1u << 30) : (uInt)(usize - out_done);
        } else {
            z.next_out = &spare;
            z.avail_out = 1;
        }
        uInt before = z.avail_out;
        r = inflate(&z, Z_NO_FLUSH);
        uint64_t produced = before - z.avail_out;
        if (out_done >= usize && produced) {
            r = Z_BUF_ERROR;
            break;
        }
        out_done += produced;
        if (r == Z_BUF_ERROR && z.avail_in == 0 && in_left == 0) break;
        if (r == Z_BUF_ERROR) r = Z_OK;
    }
    inflateEnd(&z);
    if (r != Z_STREAM_END || out_done != usize) {
        onnxio_buffer_unref(b);
        return bad(a, "entry '%s': its deflate data %s", name,
                   r == Z_DATA_ERROR ? "is corrupt"
                   : r == Z_STREAM_END || out_done >= usize ? "does not inflate to its recorded size"
                                                             : "ends early");
    }
    uint32_t crc = onnxio__crc32(0, dst, usize);
    if (crc != e->pub.crc32) {
        onnxio_buffer_unref(b);
        return crc_mismatch(a, e, crc);
    }
    *out = b;
    return ONNXIO_OK;
}

onnxio_status onnxio__archive_model(onnxio_archive *a, bool verify_crc, const uint8_t **data, size_t *size,
                                    onnxio_buffer **owner)
{
    const entry *e = &a->entries[a->model];
    if (e->pub.method == 8) {
        onnxio_status s = inflate_entry(a, e, owner);
        if (s) return s;
        *data = onnxio_buffer_data(*owner);
        *size = (size_t)e->pub.size;
        return ONNXIO_OK;
    }
    *data = a->data + e->pub.data_offset;
    *size = (size_t)e->pub.size;
    if (verify_crc) {
        uint32_t crc = onnxio__crc32(0, *data, *size);
        if (crc != e->pub.crc32) return crc_mismatch(a, e, crc);
    }
    *owner = onnxio_buffer_ref(a->owner);
    return ONNXIO_OK;
}

/* A checked reference from a tensor to (part of) an entry. */
typedef struct ref_item {
    onnxio_TensorProto *tensor;
    size_t entry;
    uint64_t offset, length;
} ref_item;

/* Per-entry state of one load. */
typedef struct entry_load {
    onnxio_buffer *inflated; /* deflated entries: their bytes */
    uint32_t *crc;           /* stored entries read whole by a copy: the CRC pieces */
    onnxio__crc_slots slots;
    bool read;               /* a loaded payload comes from it */
} entry_load;

typedef struct load_ctx {
    onnxio_archive *a;
    const onnxio_parse_options *opts;
    ref_item *items;
    size_t count, capacity;
    char **hashed; /* verify_checksum: the SHA-1 of each entry, computed once */
} load_ctx;

static const entry *resolve(const onnxio_archive *a, const onnxio_TensorProto *t, const onnxio__external_ref *r,
                            onnxio_status *s)
{
    const char *loc = r->location->data;
    size_t n = r->location->size;
    while (n > 2 && loc[0] == '.' && loc[1] == '/') {
        loc += 2;
        n -= 2;
    }
    const entry *e = find_n(a, loc, n);
    const char *tname = t->name.data ? t->name.data : "";
    if (!e)
        *s = onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': external data location '%s' is not an entry of archive %s",
                          tname, r->location->data, a->what);
    else if (e == &a->entries[a->model])
        *s = onnxio__fail(ONNXIO_ERR_PATH_SELF, "tensor '%s': external data location '%s' is the model entry itself", tname,
                          r->location->data);
    return *s ? NULL : e;
}

/* Checks one external tensor against the archive (no payload touched). */
static onnxio_status check_ref(const onnxio_archive *a, onnxio_TensorProto *t, ref_item *out)
{
    onnxio__external_ref r;
    onnxio_status s = onnxio__external_ref_read(t, &r);
    if (s) return s;
    const entry *e = resolve(a, t, &r, &s);
    if (!e) return s;
    char where[300];
    snprintf(where, sizeof where, "entry '%.200s'", e->pub.name);
    uint64_t length;
    if ((s = onnxio__external_check_range(t, &r, e->pub.size, where, &length))) return s;
    *out = (ref_item){t, (size_t)(e - a->entries), r.offset, length};
    return ONNXIO_OK;
}

static onnxio_status collect(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    load_ctx *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    if (!onnxio__is_external(t)) return ONNXIO_OK;
    ref_item it;
    onnxio_status s = check_ref(c->a, t, &it);
    if (s) return s;
    if (!onnxio__grow((void **)&c->items, &c->capacity, c->count, sizeof *c->items))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->items[c->count++] = it;
    return ONNXIO_OK;
}

/* The bytes of an entry for reading: the mapping, or its inflated copy. */
static const uint8_t *entry_bytes(const onnxio_archive *a, const entry_load *l, size_t i)
{
    return l[i].inflated ? onnxio_buffer_data(l[i].inflated) : a->data + a->entries[i].pub.data_offset;
}

/* verify_checksum: a "checksum" key is the SHA-1 of the entry's data (the
 * archive's counterpart of a whole data file). */
static onnxio_status verify_sha1(load_ctx *c, entry_load *l, const ref_item *it)
{
    onnxio__external_ref r;
    onnxio_status s = onnxio__external_ref_read(it->tensor, &r);
    if (s || !r.checksum) return s;
    const entry *e = &c->a->entries[it->entry];
    if (!c->hashed[it->entry]) {
        char *hex = onnxio__malloc(41);
        if (!hex) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        if ((s = onnxio__sha1_hex(entry_bytes(c->a, l, it->entry), e->pub.size, hex))) {
            onnxio__free(hex);
            return s;
        }
        c->hashed[it->entry] = hex;
    }
    const char *got = c->hashed[it->entry];
    int same = r.checksum->size == 40;
    for (size_t i = 0; same && i < 40; i++) {
        char ch = r.checksum->data[i];
        same = (ch >= 'A' && ch <= 'F' ? ch - 'A' + 'a' : ch) == got[i];
    }
    if (!same)
        return onnxio__fail(ONNXIO_ERR_CHECKSUM, "tensor '%s': entry '%s' has SHA-1 %s, its checksum key says '%.*s'",
                            it->tensor->name.data ? it->tensor->name.data : "", e->pub.name, got,
                            (int)(r.checksum->size > 64 ? 64 : r.checksum->size), r.checksum->data ? r.checksum->data : "");
    return ONNXIO_OK;
}

onnxio_status onnxio__archive_load_payloads(onnxio_archive *a, onnxio_message *root, const onnxio_parse_options *opts)
{
    load_ctx c = {a, opts, NULL, 0, 0, NULL};
    onnxio_status s = onnxio__visit(root, &onnxio_desc_TensorProto, collect, &c);
    if (s || c.count == 0 || (opts && opts->skip_raw_data)) {
        onnxio__free(c.items);
        return s;
    }
    bool verify = onnxio__verify_crc(opts);
    bool no_copy = opts && opts->no_copy;
    uint64_t align = opts && opts->alignment ? opts->alignment : DEFAULT_ALIGNMENT;
    entry_load *l = onnxio__calloc(a->count, sizeof *l);
    c.hashed = onnxio__calloc(a->count, sizeof *c.hashed);
    if (!l || !c.hashed) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    /* Deflated entries are inflated once, whatever number of tensors
     * share them. */
    for (size_t i = 0; !s && i < c.count; i++) {
        size_t k = c.items[i].entry;
        if (a->entries[k].pub.method == 8 && !l[k].inflated) s = inflate_entry(a, &a->entries[k], &l[k].inflated);
    }
    for (size_t i = 0; !s && opts && opts->verify_checksum && i < c.count; i++) s = verify_sha1(&c, l, &c.items[i]);

    onnxio__pool *pool = NULL;
    onnxio__payloads *payloads = NULL;
    if (!s) s = onnxio__pool_new(opts ? opts->num_threads : 0, &pool);
    if (!s) s = onnxio__payloads_new(opts, pool, &payloads);
    for (size_t i = 0; !s && i < c.count; i++) {
        ref_item *it = &c.items[i];
        const entry *e = &a->entries[it->entry];
        entry_load *el = &l[it->entry];
        onnxio__payload_src src = {
            .data = entry_bytes(a, l, it->entry) + it->offset,
            .owner = el->inflated ? el->inflated : a->owner,
            .fd = el->inflated ? -1 : a->fd,
            .offset = e->pub.data_offset + it->offset,
            .size = it->length,
            .external = true,
            .what = a->what,
        };
        /* Borrowing needs the payload where an aligned buffer would put it. */
        if (no_copy && !el->inflated && (uintptr_t)src.data % align) src.copy = true;
        /* A payload that is its whole stored entry gets its CRC-32 as it is
         * copied; the others are checked from the mapping below. */
        if (verify && !el->inflated && !el->crc && it->offset == 0 && it->length == e->pub.size) {
            if (!(el->crc = onnxio__calloc(onnxio__crc_pieces(e->pub.size), sizeof *el->crc))) {
                s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
                break;
            }
            el->slots.piece = el->crc;
            src.crc = &el->slots;
        }
        s = onnxio__payload_take(payloads, it->tensor, &src);
    }
    if (!s) s = onnxio__payloads_resolve(payloads);
    /* What was loaded and not checked on the way is checked from the
     * mapping, on the same pool. */
    for (size_t i = 0; !s && i < c.count; i++)
        if (!onnxio__is_external(c.items[i].tensor)) l[c.items[i].entry].read = true;
    for (size_t k = 0; !s && verify && k < a->count; k++) {
        entry_load *el = &l[k];
        if (!el->read || el->inflated || el->slots.filled) continue;
        onnxio__free(el->crc);
        if (!(el->crc = onnxio__calloc(onnxio__crc_pieces(a->entries[k].pub.size), sizeof *el->crc))) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            break;
        }
        el->slots.piece = el->crc;
        el->slots.filled = true;
        onnxio__job job = {.kind = ONNXIO__JOB_CRC,
                           .src = a->data + a->entries[k].pub.data_offset,
                           .size = a->entries[k].pub.size,
                           .what = a->what,
                           .crc = el->crc};
        s = onnxio__pool_add(pool, &job);
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    onnxio__payloads_free(payloads);
    for (size_t k = 0; !s && verify && k < a->count; k++) {
        if (!l[k].read || l[k].inflated || !l[k].slots.filled) continue;
        uint32_t crc = onnxio__crc_join(l[k].crc, a->entries[k].pub.size);
        if (crc != a->entries[k].pub.crc32) s = crc_mismatch(a, &a->entries[k], crc);
    }
    for (size_t k = 0; l && k < a->count; k++) {
        onnxio_buffer_unref(l[k].inflated);
        onnxio__free(l[k].crc);
        if (c.hashed) onnxio__free(c.hashed[k]);
    }
    onnxio__free(c.hashed);
    onnxio__free(l);
    onnxio__free(c.items);
    return s;
}

/* ---- writing -------------------------------------------------------- */

/* One entry to write. */
typedef struct out_entry {
    const char *name;         /* owned by the name set (or static) */
    size_t name_size;
    const uint8_t *src;       /* the bytes */
    uint64_t size;
    onnxio_buffer *keep;      /* a reference keeping src alive */
    uint64_t header;          /* file offset of the local header */
    uint64_t data;            /* file offset of the data */
    uint64_t pad;             /* bytes of the padding extra field (0: none) */
    uint32_t crc;
    uint32_t *crc_pieces;
} out_entry;

static int needs64(uint64_t v) { return v >= 0xFFFFFFFFu; }

/* The largest padding an extra field can carry: the whole extra field
 * of a local header is at most 65535 bytes, ZIP64 sizes included. */
#define MAX_PAD (65535u - 20u)

/* Places an entry whose local header may start at `at`: the data goes on
 * the next multiple of `align`, the local header's extra field carrying
 * the padding (ZIP64 sizes first when the entry needs them). Alignments
 * larger than an extra field can pad leave the rest as a gap of
 * unreferenced bytes before the local header. Returns the end of its data. */
static uint64_t place_entry(out_entry *e, uint64_t at, uint64_t align)
{
    uint64_t fixed = LOCAL_SIZE + e->name_size + (needs64(e->size) ? 20 : 0);
    uint64_t base = at + fixed;
    uint64_t p = align > 1 && base % align ? align - base % align : 0;
    /* An extra field is at least its 4-byte header. */
    while (p && p < 4) p += align;
    if (p > MAX_PAD) {
        at += p;
        p = 0;
    }
    e->header = at;
    e->pad = p;
    e->data = at + fixed + p;
    return e->data + e->size;
}

static uint8_t *put_local(uint8_t *p, const out_entry *e)
{
    uint64_t pad = e->pad;
    int z = needs64(e->size);
    p = wr32(p, SIG_LOCAL);
    p = wr16(p, z ? VERSION_NEEDED64 : VERSION_NEEDED);
    p = wr16(p, 0); /* flags */
    p = wr16(p, 0); /* stored */
    p = wr16(p, DOS_TIME);
    p = wr16(p, DOS_DATE);
    p = wr32(p, e->crc);
    p = wr32(p, z ? 0xFFFFFFFFu : (uint32_t)e->size);
    p = wr32(p, z ? 0xFFFFFFFFu : (uint32_t)e->size);
    p = wr16(p, (uint32_t)e->name_size);
    p = wr16(p, (uint32_t)((z ? 20 : 0) + pad));
    memcpy(p, e->name, e->name_size);
    p += e->name_size;
    if (z) {
        p = wr16(p, EXTRA_ZIP64);
        p = wr16(p, 16);
        p = wr64(p, e->size);
        p = wr64(p, e->size);
    }
    if (pad) {
        p = wr16(p, EXTRA_PADDING);
        p = wr16(p, (uint32_t)(pad - 4));
        memset(p, 0, (size_t)(pad - 4));
        p += pad - 4;
    }
    return p;
}

static uint64_t central_size(const out_entry *e)
{
    uint64_t z = (needs64(e->size) ? 16 : 0) + (needs64(e->header) ? 8 : 0);
    return CENTRAL_SIZE + e->name_size + (z ? 4 + z : 0);
}

static uint8_t *put_central(uint8_t *p, const out_entry *e)
{
    int zs = needs64(e->size), zo = needs64(e->header);
    uint32_t z = (zs ? 16u : 0u) + (zo ? 8u : 0u);
    p = wr32(p, SIG_CENTRAL);
    p = wr16(p, VERSION_MADE_BY);
    p = wr16(p, z ? VERSION_NEEDED64 : VERSION_NEEDED);
    p = wr16(p, 0);
    p = wr16(p, 0);
    p = wr16(p, DOS_TIME);
    p = wr16(p, DOS_DATE);
    p = wr32(p, e->crc);
    p = wr32(p, zs ? 0xFFFFFFFFu : (uint32_t)e->size);
    p = wr32(p, zs ? 0xFFFFFFFFu : (uint32_t)e->size);
    p = wr16(p, (uint32_t)e->name_size);
    p = wr16(p, z ? 4 + z : 0);
    p = wr16(p, 0); /* comment */
    p = wr16(p, 0); /* disk */
    p = wr16(p, 0); /* internal attributes */
    p = wr32(p, EXTERNAL_ATTR);
    p = wr32(p, zo ? 0xFFFFFFFFu : (uint32_t)e->header);
    memcpy(p, e->name, e->name_size);
    p += e->name_size;
    if (z) {
        p = wr16(p, EXTRA_ZIP64);
        p = wr16(p, z);
        if (zs) {
            p = wr64(p, e->size);
            p = wr64(p, e->size);
        }
        if (zo) p = wr64(p, e->header);
    }
    return p;
}

/* Bytes of the end records for a central directory of `count` entries,
 * `size` bytes at `offset`. */
static uint64_t end_size(uint64_t count, uint64_t size, uint64_t offset)
{
    int z = count >= 0xFFFF || needs64(size) || needs64(offset);
    return (z ? END64_SIZE + LOCATOR64_SIZE : 0) + END_SIZE;
}

static uint8_t *put_end(uint8_t *p, uint64_t count, uint64_t size, uint64_t offset)
{
    int z = count >= 0xFFFF || needs64(size) || needs64(offset);
    if (z) {
        uint64_t rec = offset + size;
        p = wr32(p, SIG_END64);
        p = wr64(p, END64_SIZE - 12);
        p = wr16(p, VERSION_MADE_BY);
        p = wr16(p, VERSION_NEEDED64);
        p = wr32(p, 0);
        p = wr32(p, 0);
        p = wr64(p, count);
        p = wr64(p, count);
        p = wr64(p, size);
        p = wr64(p, offset);
        p = wr32(p, SIG_LOCATOR64);
        p = wr32(p, 0);
        p = wr64(p, rec);
        p = wr32(p, 1);
    }
    p = wr32(p, SIG_END);
    p = wr16(p, 0);
    p = wr16(p, 0);
    p = wr16(p, count >= 0xFFFF ? 0xFFFF : (uint32_t)count);
    p = wr16(p, count >= 0xFFFF ? 0xFFFF : (uint32_t)count);
    p = wr32(p, needs64(size) ? 0xFFFFFFFFu : (uint32_t)size);
    p = wr32(p, needs64(offset) ? 0xFFFFFFFFu : (uint32_t)offset);
    p = wr16(p, 0);
    return p;
}

static onnxio_status pwrite_all(int fd, const uint8_t *p, uint64_t n, uint64_t at, const char *what)
{
    onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = fd, .offset = at, .src = p, .size = n, .what = what};
    return n ? onnxio__job_run(&job) : ONNXIO_OK;
}

/* Tensors that become entries. */
typedef struct save_ctx {
    uint64_t threshold;
    onnxio_TensorProto **tensors;
    size_t count, capacity;
    const onnxio_archive *refs; /* replacing: external tensors must be its entries */
} save_ctx;

static onnxio_status select_tensor(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    save_ctx *c = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    const char *tname = t->name.data ? t->name.data : "";
    int has_raw = onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    if (!has_raw && onnxio__is_external(t)) {
        if (!c->refs)
            return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD,
                                "tensor '%s' is still external (its data was not loaded): load its external data first",
                                tname);
        ref_item it;
        return check_ref(c->refs, t, &it);
    }
    if (c->refs || !has_raw || t->raw_data.size < c->threshold) return ONNXIO_OK;
    if (!t->raw_data.data) return onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data was not loaded", tname);
    if (!onnxio__grow((void **)&c->tensors, &c->capacity, c->count, sizeof *c->tensors))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->tensors[c->count++] = t;
    return ONNXIO_OK;
}

/* Reads the options into *cfg and refuses those that do not apply. */
static onnxio_status check_save_options(const onnxio_serialize_options *opts, onnxio_serialize_options *cfg)
{
    onnxio_status s = onnxio__serialize_config(opts, cfg);
    if (s) return s;
    const onnxio_external_data_options *x = &cfg->external_data;
    if (x->location || x->all_tensors_to_one_file == ONNXIO_OFF || x->max_file_size || x->checksum)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                            "external data options (location, all_tensors_to_one_file, max_file_size, checksum) do not "
                            "apply to an .onnxz archive");
    return ONNXIO_OK;
}

/* Writes the local headers, the central directory and the end records of
 * `n` entries laid out in `e` (data already written), the directory at
 * `cd_offset`; `extra_central` raw central headers of other entries go
 * first (replacing a model keeps the others' as they were). */
static onnxio_status write_directory(int fd, const char *what, out_entry *e, size_t n,
                                     const uint8_t *extra_central, uint64_t extra_size, uint64_t extra_count,
                                     uint64_t cd_offset, uint64_t *file_end)
{
    onnxio_status s = ONNXIO_OK;
    uint8_t *local = onnxio__malloc(LOCAL_SIZE + 65535 + 65535);
    if (!local) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; !s && i < n; i++) {
        uint8_t *end = put_local(local, &e[i]);
        s = pwrite_all(fd, local, (uint64_t)(end - local), e[i].header, what);
    }
    onnxio__free(local);
    if (s) return s;
    uint64_t cd_size = extra_size;
    for (size_t i = 0; i < n; i++) cd_size += central_size(&e[i]);
    uint64_t count = extra_count + n;
    uint64_t total = cd_size + end_size(count, cd_size, cd_offset);
    if (total > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "the central directory does not fit in memory");
    uint8_t *buf = onnxio__malloc((size_t)total), *p = buf;
    if (!buf) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for the central directory");
    if (extra_size) memcpy(p, extra_central, (size_t)extra_size);
    p += extra_size;
    for (size_t i = 0; i < n; i++) p = put_central(p, &e[i]);
    p = put_end(p, count, cd_size, cd_offset);
    s = pwrite_all(fd, buf, total, cd_offset, what);
    onnxio__free(buf);
    *file_end = cd_offset + total;
    return s;
}

/* Lays out `n` entries from file offset `at`: returns where the next
 * record starts. Only the last one (the model) is not aligned. */
static uint64_t layout(out_entry *e, size_t n, uint64_t at, uint64_t align)
{
    for (size_t i = 0; i < n; i++) at = place_entry(&e[i], at, i + 1 < n ? align : 1);
    return at;
}

/* Serializes the model (tensors already rewritten) into the last entry. */
static onnxio_status model_entry(onnxio_ModelProto *model, int max_depth, out_entry *e, onnxio_buffer **buf)
{
    onnxio_status s = onnxio__serialize(model, max_depth, buf);
    if (s) return s;
    e->name = MODEL_ENTRY;
    e->name_size = sizeof MODEL_ENTRY - 1;
    e->src = onnxio_buffer_data(*buf);
    e->size = onnxio_buffer_size(*buf);
    return ONNXIO_OK;
}

/* Queues the data of every entry on the pool, CRC-32s computed on the way. */
static onnxio_status write_data(onnxio__pool *pool, int fd, const char *what, out_entry *e, size_t n)
{
    onnxio_status s = ONNXIO_OK;
    for (size_t i = 0; !s && i < n; i++) {
        if (!(e[i].crc_pieces = onnxio__calloc(onnxio__crc_pieces(e[i].size), sizeof *e[i].crc_pieces)))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        onnxio__job job = {.kind = ONNXIO__JOB_PWRITE,
                           .fd = fd,
                           .offset = e[i].data,
                           .src = e[i].src,
                           .size = e[i].size,
                           .what = what,
                           .crc = e[i].crc_pieces};
        s = onnxio__pool_add(pool, &job);
    }
    return s;
}

static void join_crcs(out_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) e[i].crc = onnxio__crc_join(e[i].crc_pieces, e[i].size);
}

static void free_entries(out_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++) {
        onnxio__free(e[i].crc_pieces);
        onnxio_buffer_unref(e[i].keep);
    }
    onnxio__free(e);
}

ONNXIO_API onnxio_status onnxio_save_archive(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *opts)
{
    if (!model || !path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "save_archive: NULL argument");
    onnxio__clear_error();
    onnxio_serialize_options cfg;
    onnxio_status s = check_save_options(opts, &cfg);
    if (s) return s;
    opts = &cfg;
    uint64_t align = opts->alignment ? opts->alignment : DEFAULT_ALIGNMENT;
    save_ctx c = {0};
    c.threshold = opts->external_data.size_threshold;
    /* The caller's model stays as it is: the tensors are rewritten in a
     * copy whose payloads are shared, not copied. */
    onnxio_arena *scratch = onnxio_arena_new();
    onnxio_ModelProto *copy = NULL;
    onnxio__names *names = NULL;
    out_entry *e = NULL;
    size_t n = 0;
    onnxio_buffer *model_buf = NULL;
    onnxio__atomic_file f = {-1, NULL, NULL, NULL};
    onnxio__pool *pool = NULL;
    if (!scratch) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    if ((s = onnxio__clone(scratch, model, (void **)&copy))) goto done;
    if ((s = onnxio__visit(&copy->base, &onnxio_desc_TensorProto, select_tensor, &c))) goto done;
    n = c.count + 1;
    e = onnxio__calloc(n, sizeof *e);
    names = onnxio__names_new(n);
    if (!e || !names || onnxio__names_reserve(names, MODEL_ENTRY) < 0) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < c.count; i++) {
        onnxio_TensorProto *t = c.tensors[i];
        const char *name = onnxio__names_unique(names, t->name.data ? t->name.data : "");
        if (!name) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            goto done;
        }
        e[i] = (out_entry){.name = name, .name_size = strlen(name), .src = t->raw_data.data, .size = t->raw_data.size,
                           .keep = onnxio_buffer_ref(t->raw_data.owner)};
        if ((s = onnxio__refer(scratch, t, name, 0, NULL))) goto done;
    }
    if ((s = model_entry(copy, opts->max_depth, &e[n - 1], &model_buf))) goto done;
    uint64_t cd_offset = layout(e, n, 0, align);
    if ((s = onnxio__atomic_open(path, &f))) goto done;
    if ((s = onnxio__pool_new(opts->num_threads, &pool))) goto done;
    s = write_data(pool, f.fd, f.tmp_path, e, n);
    onnxio_status s2 = onnxio__pool_finish(pool);
    pool = NULL;
    if (!s) s = s2;
    if (s) goto done;
    join_crcs(e, n);
    uint64_t end;
    if ((s = write_directory(f.fd, f.tmp_path, e, n, NULL, 0, 0, cd_offset, &end))) goto done;
    /* The padding was never written: the file is exactly what was laid out. */
    if (ftruncate(f.fd, (off_t)end) != 0) {
        s = onnxio__fail(ONNXIO_ERR_IO, "cannot size %s: %s", f.tmp_path, strerror(errno));
        goto done;
    }
    s = onnxio__atomic_commit(&f);
done:
    if (s) {
        onnxio__pool_finish(pool);
        if (f.final_path) onnxio__atomic_abort(&f);
        s = onnxio__context(s, "saving %s", path);
    }
    free_entries(e, n);
    onnxio_buffer_unref(model_buf);
    onnxio__names_free(names);
    onnxio__free(c.tensors);
    onnxio_arena_unref(scratch);
    return s;
}

/* ---- replacing the model ------------------------------------------- */

static onnxio_status sync_fd(int fd, const char *what)
{
    if (fsync(fd) != 0) return onnxio__fail(ONNXIO_ERR_IO, "cannot sync %s: %s", what, strerror(errno));
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_archive_replace_model(const char *path, onnxio_ModelProto *model,
                                                      const onnxio_serialize_options *opts)
{
    if (!model || !path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_replace_model: NULL argument");
    onnxio__clear_error();
    onnxio_serialize_options cfg;
    onnxio_status s = check_save_options(opts, &cfg);
    if (s) return s;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return onnxio__fail(errno == ENOENT ? ONNXIO_ERR_NOT_FOUND : ONNXIO_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    onnxio_buffer *map = NULL;
    onnxio_archive *a = NULL;
    onnxio_buffer *model_buf = NULL;
    uint8_t *old_cd = NULL, *kept = NULL;
    out_entry m = {0};
    /* One writer at a time. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        s = onnxio__fail(ONNXIO_ERR_IO, "%s is being written by another process", path);
        goto done;
    }
    if ((s = onnxio__map_fd(fd, path, &map))) goto done;
    if ((s = onnxio__archive_open(onnxio_buffer_data(map), onnxio_buffer_size(map), map, fd, path, &a))) goto done;
    save_ctx c = {.refs = a};
    if ((s = onnxio__visit(&model->base, &onnxio_desc_TensorProto, select_tensor, &c))) goto done;
    if ((s = model_entry(model, cfg.max_depth, &m, &model_buf))) goto done;
    m.crc = onnxio__crc32(0, m.src, m.size);

    /* The central headers of every other entry, as they are. */
    uint64_t kept_size = 0, kept_count = 0;
    for (size_t i = 0; i < a->count; i++)
        if (i != a->model) kept_size += a->entries[i].central_size;
    if (!(kept = onnxio__malloc(kept_size ? (size_t)kept_size : 1))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0, at = 0; i < a->count; i++) {
        if (i == a->model) continue;
        memcpy(kept + at, a->data + a->entries[i].central_offset, (size_t)a->entries[i].central_size);
        at += a->entries[i].central_size;
        kept_count++;
    }
    /* New layout: [old archive][new model][new directory][end], ending at
     * `final`. First a copy of the old directory and end records goes
     * after `final`, so that the file stays the old archive while the new
     * bytes are written before it; cutting the file at `final` then
     * switches to the new archive in one step. */
    uint64_t old_size = a->size;
    uint64_t cd_offset = layout(&m, 1, old_size, 1);
    uint64_t final = cd_offset + kept_size + central_size(&m) + end_size(kept_count + 1, kept_size + central_size(&m), cd_offset);
    uint64_t old_count = a->count, old_cd_size = a->cd_size;
    uint64_t tail = old_cd_size + end_size(old_count, old_cd_size, final);
    if (tail > SIZE_MAX || !(old_cd = onnxio__malloc((size_t)tail))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    memcpy(old_cd, a->data + a->cd_offset, (size_t)old_cd_size);
    put_end(old_cd + old_cd_size, old_count, old_cd_size, final);
    if ((s = pwrite_all(fd, old_cd, tail, final, path)) || (s = sync_fd(fd, path))) goto done;
    if ((s = pwrite_all(fd, m.src, m.size, m.data, path))) goto done;
    uint64_t end;
    if ((s = write_directory(fd, path, &m, 1, kept, kept_size, kept_count, cd_offset, &end))) goto done;
    if ((s = sync_fd(fd, path))) goto done;
    if (end != final) {
        s = onnxio__fail(ONNXIO_ERR_IO, "internal error: the new directory ends at %llu, not %llu",
                         (unsigned long long)end, (unsigned long long)final);
        goto done;
    }
    if (ftruncate(fd, (off_t)final) != 0) {
        s = onnxio__fail(ONNXIO_ERR_IO, "cannot truncate %s: %s", path, strerror(errno));
        goto done;
    }
    s = sync_fd(fd, path);
done:
    if (s) s = onnxio__context(s, "replacing the model of %s", path);
    onnxio_archive_close(a);
    onnxio_buffer_unref(map);
    onnxio_buffer_unref(model_buf);
    onnxio__free(old_cd);
    onnxio__free(kept);
    close(fd);
    return s;
}
