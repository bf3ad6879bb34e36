/* Zip records (PKWARE APPNOTE 6.3.10) for the .onnxz container (docs/onnxz.md):
 * reading and validating an archive's structure, inflating an entry,
 * writing local headers, the central directory and the end records, and
 * replacing the model of an archive in place. The container seam
 * (container_zip.c) and the save pipeline (save.c) use these; nothing else
 * knows a zip record.
 *
 * Reading trusts nothing: the end records, the ZIP64 records, every central
 * header and every local header are checked against each other and the file
 * size, names are checked for unsafe paths and duplicates, entries for
 * overlaps, before the model is parsed or any payload allocated. Inflating
 * refuses a recorded size deflate cannot produce before allocating, and
 * charges the load's expansion budget. Replacing the model appends, so
 * that the weights never move. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>

#include "io/container.h"

#define MODEL_ENTRY ONNXIO__MODEL_ENTRY

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
    /* Archives opened from their tail (onnxio_archive_open_tail): whether
     * the local header was checked (pub.data_offset is known), the end of
     * the bytes a reader fetches for the entry, and the entry whose local
     * header follows it in the file (NULL: the central directory does). */
    bool checked;
    uint64_t span_end;
    const struct entry *next;
    /* onnxio__archive_set_crc: the CRC-32 of the bytes as read. */
    bool crc_known;
    uint32_t crc_read;
} entry;

/* One line of the digests entry: an entry name and its record. */
typedef struct digest_line {
    const char *name, *value;
    size_t name_size, value_size;
} digest_line;

struct onnxio_archive {
    const uint8_t *data;  /* the file's bytes from `base` to `size` */
    uint64_t size;        /* the file's size */
    uint64_t base;        /* 0, or for an archive opened from its tail the file offset of data[0] */
    uint64_t need;        /* a read past the tail: the first byte it needs (else UINT64_MAX) */
    onnxio_buffer *owner; /* a reference, or NULL (borrowed) */
    int fd;               /* -1: only in memory */
    bool whole;           /* every entry will be read (onnxio__archive_open) */
    int own_fd;           /* fd was opened here */
    char *what;           /* how errors name it: "archive <file>", or "the archive" (the caller names the file) */
    entry *entries;
    size_t count;
    char *names;          /* every name, NUL-terminated */
    size_t *by_name;      /* entry indexes sorted by name */
    size_t model;         /* index of __MODEL_PROTO */
    uint64_t cd_offset, cd_size;
    uint64_t end_offset;  /* where the end records start */
    /* Its block digests (onnxio__archive_digests): the digests entry's
     * bytes, copied, and its lines sorted by entry name. */
    bool digests_set;
    char *digests;
    digest_line *lines;
    size_t line_count;
};

/* The bytes at file offset `off` (inside the bytes held: see held). */
static const uint8_t *at(const onnxio_archive *a, uint64_t off) { return a->data + (off - a->base); }
/* Whether the `n` bytes at `off` are held; if not, records that the read
 * needs the file from `from` on (an archive opened from its tail). */
static bool held(onnxio_archive *a, uint64_t off, uint64_t n, uint64_t from)
{
    if (off >= a->base && off <= a->size && n <= a->size - off) return true;
    if (from < a->need) a->need = from;
    return false;
}
/* The status of a read that needs bytes before the tail (a->need). */
#define NEED_MORE ONNXIO_ERR_ARCHIVE

static onnxio_status bad(const onnxio_archive *a, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
static onnxio_status bad(const onnxio_archive *a, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return onnxio__fail(ONNXIO_ERR_ARCHIVE, "%s: %s", a->what, msg);
}

/* ---- reading the structure ----------------------------------------- */

/* The end records: the classic end of central directory record, and the
 * ZIP64 locator and record when present. */
typedef struct end_info {
    uint64_t count, cd_size, cd_offset;
    uint64_t end_offset; /* first byte of the end records */
} end_info;

/* Reads the end records whose classic record is at `pos`. */
static onnxio_status read_end(onnxio_archive *a, uint64_t pos, end_info *e)
{
    const uint8_t *p = at(a, pos);
    if (rd16(p + 4) != 0 || rd16(p + 6) != 0 || rd16(p + 8) != rd16(p + 10))
        return bad(a, "the end of central directory record at byte %llu describes a multi-disk archive",
                   (unsigned long long)pos);
    e->count = rd16(p + 10);
    e->cd_size = rd32(p + 12);
    e->cd_offset = rd32(p + 16);
    e->end_offset = pos;
    if (pos >= LOCATOR64_SIZE && !held(a, pos - LOCATOR64_SIZE, LOCATOR64_SIZE, pos - LOCATOR64_SIZE)) return NEED_MORE;
    if (pos < LOCATOR64_SIZE || rd32(at(a, pos - LOCATOR64_SIZE)) != SIG_LOCATOR64) {
        if (e->count == 0xFFFF || e->cd_size == 0xFFFFFFFF || e->cd_offset == 0xFFFFFFFF)
            return bad(a, "the end of central directory record at byte %llu needs ZIP64 records, and there are none",
                       (unsigned long long)pos);
        return ONNXIO_OK;
    }
    const uint8_t *l = at(a, pos - LOCATOR64_SIZE);
    uint64_t rec = rd64(l + 8);
    if (rd32(l + 4) != 0 || rd32(l + 16) > 1)
        return bad(a, "the ZIP64 end of central directory locator describes a multi-disk archive");
    /* The record must lie right before its locator: nothing hides between. */
    bool before = rec <= pos - LOCATOR64_SIZE && pos - LOCATOR64_SIZE - rec >= END64_SIZE;
    if (before && !held(a, rec, pos - LOCATOR64_SIZE - rec, rec)) return NEED_MORE;
    if (!before || rd32(at(a, rec)) != SIG_END64 || rd64(at(a, rec) + 4) != pos - LOCATOR64_SIZE - rec - 12)
        return bad(a, "the ZIP64 end of central directory locator points at byte %llu, where there is no ZIP64 end "
                      "record ending at the locator",
                   (unsigned long long)rec);
    const uint8_t *r = at(a, rec);
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
static onnxio_status find_end(onnxio_archive *a, end_info *e)
{
    if (a->size < END_SIZE) return bad(a, "%llu bytes are too few for a zip archive", (unsigned long long)a->size);
    uint64_t lowest = a->size - END_SIZE > MAX_COMMENT ? a->size - END_SIZE - MAX_COMMENT : 0;
    for (uint64_t pos = a->size - END_SIZE + 1; pos-- > lowest;) {
        if (!held(a, pos, END_SIZE, lowest)) return NEED_MORE;
        const uint8_t *p = at(a, pos);
        if (rd32(p) == SIG_END && pos + END_SIZE + rd16(p + 20) == a->size) return read_end(a, pos, e);
    }
    /* The fallback reads the whole file. */
    if (!held(a, 0, a->size, 0)) return NEED_MORE;
    for (uint64_t pos = a->size - END_SIZE + 1; pos-- > 0;) {
        const uint8_t *p = at(a, pos);
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
 * dangerous ones (APPNOTE 4.4.17: relative, forward slashes), by the rule
 * of external data locations. */
static onnxio_status check_name(const onnxio_archive *a, const uint8_t *name, size_t n)
{
    onnxio_status s;
    const char *why = onnxio__path_problem((const char *)name, n, &s);
    if (!why) return ONNXIO_OK;
    return bad(a, "entry name '%.*s' %s", (int)strnlen((const char *)name, n > 200 ? 200 : n), (const char *)name, why);
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
    const entry *p = *(entry *const *)x, *q = *(entry *const *)y;
    return (p->pub.header_offset > q->pub.header_offset) - (p->pub.header_offset < q->pub.header_offset);
}

/* Reads one central header at `at` into e (its name copied to *names). */
static onnxio_status read_central(onnxio_archive *a, uint64_t at_, uint64_t cd_end, entry *e, char **names)
{
    uint64_t at = at_;
    const uint8_t *p = a->data + (at - a->base);
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
    if (e->pub.method != ONNXIO_ARCHIVE_STORED && e->pub.method != ONNXIO_ARCHIVE_DEFLATED)
        return bad(a, "entry '%s' uses compression method %u (only stored and deflate are read)", name, e->pub.method);
    uint32_t disk = rd16(p + 34);
    if ((s = read_extra(a, name, p + CENTRAL_SIZE + nlen, xlen, &e->pub.size, &e->pub.compressed_size,
                        &e->pub.header_offset, 1)))
        return s;
    if (disk != 0 && disk != 0xFFFF) return bad(a, "entry '%s' starts on disk %u of a multi-disk archive", name, disk);
    if (e->pub.method == ONNXIO_ARCHIVE_STORED && e->pub.size != e->pub.compressed_size)
        return bad(a, "entry '%s' is stored but its sizes differ (%llu and %llu bytes)", name,
                   (unsigned long long)e->pub.size, (unsigned long long)e->pub.compressed_size);
    return ONNXIO_OK;
}

static onnxio_status overlap(const onnxio_archive *a, const entry *e, const entry *next)
{
    /* Only offsets the central directory gives: the same words whether
     * the local header was read or not (onnxio_archive_open_tail). */
    return bad(a, "entries '%s' and '%s' overlap (the first, from byte %llu, has %llu bytes of data; the second starts at "
                  "byte %llu)",
               e->pub.name, next->pub.name, (unsigned long long)e->pub.header_offset,
               (unsigned long long)e->pub.compressed_size, (unsigned long long)next->pub.header_offset);
}

/* Checks an entry's local header against its central header: `p` holds
 * the file's bytes from the header on, `avail` of them (the whole rest of
 * the file, or for an archive opened from its tail the entry's span: then
 * an entry whose header or data reach past it overlaps the next one). */
static onnxio_status read_local(onnxio_archive *a, entry *e, const uint8_t *p, uint64_t avail)
{
    const char *name = e->pub.name;
    uint64_t h = e->pub.header_offset;
    if (h > a->cd_offset || a->cd_offset - h < LOCAL_SIZE)
        return bad(a, "entry '%s': its local header offset %llu is not before the central directory", name,
                   (unsigned long long)h);
    if (!p) {
        p = at(a, h);
        avail = a->size - h;
    }
    if (avail < LOCAL_SIZE + e->pub.name_size)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: entry '%s': %llu bytes are too few for its local header",
                            a->what, name, (unsigned long long)avail);
    if (rd32(p) != SIG_LOCAL) return bad(a, "entry '%s': no local header at byte %llu", name, (unsigned long long)h);
    uint16_t flags = rd16(p + 6), method = rd16(p + 8), nlen = rd16(p + 26), xlen = rd16(p + 28);
    uint64_t data = h + LOCAL_SIZE + nlen + xlen;
    if (data > a->cd_offset) return bad(a, "entry '%s': its local header runs into the central directory", name);
    if (nlen != e->pub.name_size || memcmp(p + LOCAL_SIZE, e->pub.name, nlen) != 0) {
        uint64_t shown = nlen > 200 ? 200 : nlen;
        if (shown > avail - LOCAL_SIZE) shown = avail - LOCAL_SIZE;
        return bad(a, "entry '%s': its local header at byte %llu names '%.*s'", name, (unsigned long long)h, (int)shown,
                   (const char *)p + LOCAL_SIZE);
    }
    if (data - h > avail) {
        /* Only past a span: the header reaches into the next entry. */
        e->pub.data_offset = data;
        if (!e->next) return bad(a, "entry '%s': its local header runs into the central directory", name);
        return overlap(a, e, e->next);
    }
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
    if (e->pub.compressed_size > avail - (data - h))
        return e->next ? overlap(a, e, e->next)
                       : bad(a, "entry '%s': its %llu bytes at byte %llu run into the central directory", name,
                             (unsigned long long)e->pub.compressed_size, (unsigned long long)data);
    e->checked = true;
    return ONNXIO_OK;
}

/* The checks of read_local that the central header alone allows, with
 * the smallest local header (no extra field) standing for the real one:
 * pub.data_offset becomes the lowest offset its data can have. */
static onnxio_status lower_local(onnxio_archive *a, entry *e)
{
    const char *name = e->pub.name;
    uint64_t h = e->pub.header_offset;
    if (h > a->cd_offset || a->cd_offset - h < LOCAL_SIZE)
        return bad(a, "entry '%s': its local header offset %llu is not before the central directory", name,
                   (unsigned long long)h);
    uint64_t data = h + LOCAL_SIZE + e->pub.name_size;
    if (data > a->cd_offset) return bad(a, "entry '%s': its local header runs into the central directory", name);
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
    /* From a tail: the directory (inside the file, as cd_fits says) must be
     * held before anything is sized from it. */
    if (!held(a, e.cd_offset, e.cd_size, e.cd_offset)) return NEED_MORE;
    a->count = (size_t)e.count;
    a->entries = onnxio__calloc(a->count ? a->count : 1, sizeof *a->entries);
    a->by_name = onnxio__calloc(a->count ? a->count : 1, sizeof *a->by_name);
    if (e.cd_size >= SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
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
    /* The local headers sit before their entries' data, spread over the
     * file: in a file mapping, the kernel's read-around of each header's
     * fault (8 MiB here) read much of the payloads that a no_copy load
     * never touches. So the mapping is set to random access and the pages
     * of the headers are asked for at once, then read. A load that reads
     * every entry reads whole folios instead (onnxio__map_whole): 4 KiB
     * folios at each header made the kernel read the entries around them
     * in 4 KiB folios too (a cold copy load of a 0.5 GiB archive through
     * the Python package: 0.320 s, 0.212 s with whole folios). */
    bool mapped = a->fd >= 0 && a->size, random = mapped && !a->whole;
    if (mapped && a->whole) onnxio__map_whole(a->data, a->size);
    if (random) {
        onnxio__map_random(a->data, a->size, true);
        for (size_t i = 0; i < a->count; i++) {
            uint64_t h = a->entries[i].pub.header_offset;
            if (h < a->size) onnxio__map_willneed(a->data + h, a->size - h < 4096 ? (size_t)(a->size - h) : 4096);
        }
    }
    /* From a tail, the local headers are not here: each is checked when
     * its entry's bytes arrive (onnxio_archive_entry_read); until then the
     * smallest header its central header allows stands for it. */
    for (size_t i = 0; i < a->count && !s; i++)
        s = a->base ? lower_local(a, &a->entries[i]) : read_local(a, &a->entries[i], NULL, 0);
    if (random) onnxio__map_random(a->data, a->size, false);
    /* Whole folios were mapped around each header, with random access too
     * (the kernel maps a large folio whole: 385 MiB of a 3.5 GiB archive
     * the read loop had cached, 258 headers): their pages leave the
     * process (a copy load's peak memory is its payloads); a later access
     * maps them again. */
    if (mapped) onnxio__map_drop(a->data, a->size);
    if (s) return s;
    /* No two entries may share bytes. */
    entry **sorted = onnxio__malloc((a->count ? a->count : 1) * sizeof *sorted);
    if (!sorted) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < a->count; i++) sorted[i] = &a->entries[i];
    qsort(sorted, a->count, sizeof *sorted, by_offset_cmp);
    for (size_t i = 0; i < a->count && !s; i++) {
        entry *e = sorted[i], *next = i + 1 < a->count ? sorted[i + 1] : NULL;
        if (next && e->pub.data_offset + e->pub.compressed_size > next->pub.header_offset) s = overlap(a, e, next);
        /* What a reader fetches for the entry: its local header (at most
         * 30 + name + 65535 bytes) and data, never past the next header. */
        uint64_t end = next ? next->pub.header_offset : a->cd_offset;
        uint64_t most = e->pub.header_offset + LOCAL_SIZE + e->pub.name_size + 0xFFFF + e->pub.compressed_size;
        e->span_end = end < most ? end : most;
        e->next = next;
        if (a->base) e->pub.data_offset = 0; /* known once checked */
    }
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

static onnxio_status crc_mismatch(const onnxio_archive *a, const entry *e, uint32_t got);
static onnxio_status inflate_entry(const onnxio_archive *a, const entry *e, const uint8_t *in, onnxio__budget *budget,
                                   onnxio_buffer **out);

/* Opens the archive of `file_size` bytes whose bytes from `base` on are
 * at `data`; *need (when not NULL) says where a read past them would
 * start (UINT64_MAX: none needed). */
static onnxio_status open_archive(const uint8_t *data, uint64_t base, uint64_t file_size, onnxio_buffer *owner, int fd,
                                  const char *what, bool whole, uint64_t *need, onnxio_archive **out)
{
    *out = NULL;
    onnxio_archive *a = onnxio__calloc(1, sizeof *a);
    size_t n = what ? strlen(what) + sizeof "archive " : sizeof "the archive";
    if (!a || !(a->what = onnxio__malloc(n))) {
        onnxio__free(a);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    if (what) snprintf(a->what, n, "archive %s", what);
    else memcpy(a->what, "the archive", sizeof "the archive");
    a->data = data;
    a->size = file_size;
    a->base = base;
    a->need = UINT64_MAX;
    a->owner = onnxio_buffer_ref(owner);
    a->fd = fd;
    a->whole = whole;
    onnxio_status s = read_structure(a);
    uint64_t needed = a->need;
    if (need) *need = needed;
    if (s) {
        onnxio_archive_close(a);
        if (needed != UINT64_MAX) {
            onnxio__clear_error();
            return ONNXIO_OK;
        }
        return s;
    }
    *out = a;
    return ONNXIO_OK;
}

onnxio_status onnxio__archive_open(const uint8_t *data, size_t size, onnxio_buffer *owner, int fd, const char *what,
                                   bool whole, onnxio_archive **out)
{
    return open_archive(data, 0, size, owner, fd, what, whole, NULL, out);
}

ONNXIO_API onnxio_status onnxio_archive_open_tail(const void *tail, size_t tail_size, uint64_t file_size,
                                                  onnxio_buffer *owner, uint64_t *need, onnxio_archive **out)
{
    if (!out || !need || (!tail && tail_size) || tail_size > file_size)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_open_tail: NULL argument, or a tail longer than the file");
    onnxio__clear_error();
    *need = UINT64_MAX;
    return open_archive(tail, file_size - tail_size, file_size, owner, -1, "(bytes)", false, need, out);
}

ONNXIO_API onnxio_status onnxio_archive_entry_span(const onnxio_archive *a, const onnxio_archive_entry *pub,
                                                   uint64_t *start, uint64_t *end)
{
    if (!a || !pub || !start || !end || (const entry *)pub < a->entries || (const entry *)pub >= a->entries + a->count)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_entry_span: NULL argument or not an entry of the archive");
    const entry *e = (const entry *)pub;
    *start = e->pub.header_offset;
    *end = e->span_end;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_archive_entry_read(onnxio_archive *a, const onnxio_archive_entry *pub, const void *bytes,
                                                   size_t size, bool verify_crc, uint64_t max_expansion,
                                                   const void **data, onnxio_buffer **inflated)
{
    if (!a || !pub || !data || !inflated || (!bytes && size) || (const entry *)pub < a->entries ||
        (const entry *)pub >= a->entries + a->count)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_entry_read: NULL argument or not an entry of the archive");
    onnxio__clear_error();
    *data = NULL;
    *inflated = NULL;
    entry *e = &a->entries[(const entry *)pub - a->entries];
    if (size < e->span_end - e->pub.header_offset)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: entry '%s': %zu bytes given, its span is %llu", a->what,
                            e->pub.name, size, (unsigned long long)(e->span_end - e->pub.header_offset));
    /* Only the span counts: past it lies the next entry. */
    onnxio_status s = read_local(a, e, bytes, e->span_end - e->pub.header_offset);
    if (s) return s;
    const uint8_t *in = (const uint8_t *)bytes + (e->pub.data_offset - e->pub.header_offset);
    if (e->pub.method == ONNXIO_ARCHIVE_DEFLATED) {
        onnxio__budget budget = {onnxio__max_expansion(max_expansion), e->pub.compressed_size, 0, 0};
        if ((s = inflate_entry(a, e, in, &budget, inflated))) return s;
        *data = onnxio_buffer_data(*inflated);
        return ONNXIO_OK;
    }
    if (verify_crc) {
        uint32_t crc = onnxio__crc32(0, in, e->pub.size);
        if (crc != e->pub.crc32) return crc_mismatch(a, e, crc);
    }
    *data = in;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_archive_open_bytes(const void *data, size_t size, onnxio_buffer *owner,
                                                   onnxio_archive **out)
{
    if (!out || (!data && size)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_open_bytes: NULL argument");
    onnxio__clear_error();
    return onnxio__archive_open(data, size, owner, -1, "(bytes)", false, out);
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
    s = onnxio__archive_open(onnxio_buffer_data(map), onnxio_buffer_size(map), map, fd, path, false, out);
    onnxio_buffer_unref(map);
    if (s) onnxio__close(fd);
    else (*out)->own_fd = 1;
    return s;
}

ONNXIO_API void onnxio_archive_close(onnxio_archive *a)
{
    if (!a) return;
    if (a->own_fd) onnxio__close(a->fd);
    onnxio_buffer_unref(a->owner);
    onnxio__free(a->entries);
    onnxio__free(a->by_name);
    onnxio__free(a->names);
    onnxio__free(a->what);
    onnxio__free(a->digests);
    onnxio__free(a->lines);
    onnxio__free(a);
}

/* ---- block digests (docs/onnxz.md, "The block digests entry") ----------- */

static int line_cmp(const void *x, const void *y)
{
    const digest_line *a = x, *b = y;
    size_t n = a->name_size < b->name_size ? a->name_size : b->name_size;
    int d = memcmp(a->name, b->name, n);
    return d ? d : (a->name_size > b->name_size) - (a->name_size < b->name_size);
}

/* The digests entry's `size` bytes: the header line, then "NAME RECORD"
 * lines, each name once; the records are checked when a tensor asks for
 * one (onnxio__digests_parse). */
ONNXIO_API onnxio_status onnxio_archive_set_digests(onnxio_archive *a, const void *bytes, size_t size)
{
    if (!a || (!bytes && size)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_set_digests: NULL argument");
    onnxio__free(a->digests);
    onnxio__free(a->lines);
    a->digests = NULL;
    a->lines = NULL;
    a->line_count = 0;
    a->digests_set = false;
    size_t head = sizeof ONNXIO__DIGESTS_HEADER - 1, capacity = 0;
    if (size < head || memcmp(bytes, ONNXIO__DIGESTS_HEADER, head) != 0)
        return onnxio__fail(ONNXIO_ERR_ARCHIVE, "%s: its %s entry does not start with \"%.*s\"", a->what,
                            ONNXIO__DIGESTS_ENTRY, (int)head - 1, ONNXIO__DIGESTS_HEADER);
    if (!(a->digests = onnxio__malloc(size))) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy(a->digests, bytes, size);
    const char *p = a->digests + head, *end = a->digests + size;
    for (size_t line = 2; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp = nl ? memchr(p, ' ', (size_t)(nl - p)) : NULL;
        if (!sp || sp == p)
            return onnxio__fail(ONNXIO_ERR_ARCHIVE, "%s: line %zu of its %s entry is not \"NAME RECORD\"", a->what, line,
                                ONNXIO__DIGESTS_ENTRY);
        if (!onnxio__grow((void **)&a->lines, &capacity, a->line_count, sizeof *a->lines))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        a->lines[a->line_count++] = (digest_line){p, sp + 1, (size_t)(sp - p), (size_t)(nl - sp - 1)};
        p = nl + 1;
    }
    if (a->line_count) qsort(a->lines, a->line_count, sizeof *a->lines, line_cmp);
    for (size_t i = 1; i < a->line_count; i++)
        if (line_cmp(&a->lines[i - 1], &a->lines[i]) == 0)
            return onnxio__fail(ONNXIO_ERR_ARCHIVE, "%s: its %s entry names '%.*s' twice", a->what,
                                ONNXIO__DIGESTS_ENTRY, (int)a->lines[i].name_size, a->lines[i].name);
    a->digests_set = true;
    return ONNXIO_OK;
}

onnxio_status onnxio__archive_record(onnxio_archive *a, const onnxio_archive_entry *e, onnxio__budget *budget,
                                     const char **value, size_t *size)
{
    *value = NULL;
    *size = 0;
    if (!a->digests_set) {
        const onnxio_archive_entry *d = onnxio__archive_find_n(a, ONNXIO__DIGESTS_ENTRY, sizeof ONNXIO__DIGESTS_ENTRY - 1);
        if (!d) {
            a->digests_set = true; /* none */
        } else if (d->data_offset < a->base) {
            return onnxio__fail(ONNXIO_ERR_ARCHIVE, "%s: its %s entry was not read (onnxio_archive_set_digests)",
                                a->what, ONNXIO__DIGESTS_ENTRY);
        } else {
            const uint8_t *bytes;
            onnxio_buffer *owner = NULL;
            onnxio_status s = onnxio__archive_entry_bytes(a, d, true, budget, &bytes, &owner);
            if (!s) s = onnxio_archive_set_digests(a, bytes, (size_t)d->size);
            onnxio_buffer_unref(owner);
            if (s) return s;
        }
    }
    digest_line key = {.name = e->name, .name_size = strlen(e->name)};
    const digest_line *hit = a->line_count ? bsearch(&key, a->lines, a->line_count, sizeof key, line_cmp) : NULL;
    if (hit) {
        *value = hit->value;
        *size = hit->value_size;
    }
    return ONNXIO_OK;
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

ONNXIO_API bool onnxio_archive_entry_is_model(const onnxio_archive_entry *e)
{
    return e && e->name_size == sizeof MODEL_ENTRY - 1 && memcmp(e->name, MODEL_ENTRY, e->name_size) == 0;
}

ONNXIO_API bool onnxio_archive_entry_borrowable(const onnxio_archive_entry *e, uint64_t alignment)
{
    alignment = onnxio__alignment(alignment);
    /* A mapping starts on a page: an offset's alignment is its address's. */
    return e && e->method == ONNXIO_ARCHIVE_STORED && e->data_offset % alignment == 0;
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
    return onnxio__fail(ONNXIO_ERR_CHECKSUM, "%s: entry '%s' has CRC-32 %08x, its header says %08x", a->what,
                        e->pub.name, got, e->pub.crc32);
}

/* libdeflate's decompressor, from onnxio's allocator where libdeflate
 * takes one per decompressor (1.19 and later: the copy in third_party/),
 * so that its allocation is counted and can fail like the rest. */
static struct libdeflate_decompressor *new_decompressor(void)
{
#if LIBDEFLATE_VERSION_MAJOR > 1 || LIBDEFLATE_VERSION_MINOR >= 19
    struct libdeflate_options o = {.sizeof_options = sizeof o, .malloc_func = onnxio__malloc,
                                   .free_func = onnxio__free};
    return libdeflate_alloc_decompressor_ex(&o);
#else
    return libdeflate_alloc_decompressor();
#endif
}

/* Inflates a deflated entry into a new buffer (its CRC-32 checked), the
 * bytes charged to `budget`: in one call, its size being known (libdeflate
 * inflates whole buffers 2.3 times as fast as zlib's inflate streams:
 * docs/design.md, "One build"). */
static onnxio_status inflate_entry(const onnxio_archive *a, const entry *e, const uint8_t *in, onnxio__budget *budget,
                                   onnxio_buffer **out)
{
    *out = NULL;
    const char *name = e->pub.name;
    uint64_t csize = e->pub.compressed_size, usize = e->pub.size;
    if (usize / MAX_INFLATE_RATIO > csize + 1)
        return bad(a, "entry '%s' claims %llu bytes from %llu deflated ones, more than deflate can give", name,
                   (unsigned long long)usize, (unsigned long long)csize);
    if (usize > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "entry '%s': %llu bytes do not fit in memory", name,
                                               (unsigned long long)usize);
    char what[320];
    snprintf(what, sizeof what, "%.90s: entry '%.200s'", a->what, name);
    onnxio_status s = onnxio__budget_take(budget, usize, what);
    if (s) return s;
    onnxio_buffer *b = onnxio_buffer_new(usize ? (size_t)usize : 1, (size_t)onnxio__alignment(0));
    if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "entry '%s': out of memory for %llu bytes", name, (unsigned long long)usize);
    struct libdeflate_decompressor *d = new_decompressor();
    if (!d) {
        onnxio_buffer_unref(b);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot start inflating entry '%s'", name);
    }
    uint8_t *dst = onnxio_buffer_data(b);
    /* Exactly usize bytes, or a failure: SHORT_OUTPUT for fewer,
     * INSUFFICIENT_SPACE for more. */
    enum libdeflate_result r = libdeflate_deflate_decompress(d, in, (size_t)csize, dst, (size_t)usize, NULL);
    libdeflate_free_decompressor(d);
    if (r != LIBDEFLATE_SUCCESS) {
        onnxio_buffer_unref(b);
        return bad(a, "entry '%s': its deflate data %s", name,
                   r == LIBDEFLATE_INSUFFICIENT_SPACE ? "inflates to more than its recorded size"
                   : r == LIBDEFLATE_SHORT_OUTPUT     ? "inflates to less than its recorded size"
                                                      : "is corrupt or ends early");
    }
    uint32_t crc = onnxio__crc32(0, dst, usize);
    if (crc != e->pub.crc32) {
        onnxio_buffer_unref(b);
        return crc_mismatch(a, e, crc);
    }
    *out = b;
    return ONNXIO_OK;
}

onnxio_status onnxio__archive_entry_bytes(onnxio_archive *a, const onnxio_archive_entry *pub, bool verify_crc,
                                         onnxio__budget *budget, const uint8_t **data, onnxio_buffer **owner)
{
    const entry *e = (const entry *)pub;
    if (e->pub.method == ONNXIO_ARCHIVE_DEFLATED) {
        onnxio_status s = inflate_entry(a, e, a->data + e->pub.data_offset, budget, owner);
        if (s) return s;
        *data = onnxio_buffer_data(*owner);
        return ONNXIO_OK;
    }
    *data = a->data + e->pub.data_offset;
    if (verify_crc) {
        uint32_t crc = e->crc_known ? e->crc_read : onnxio__crc32(0, *data, e->pub.size);
        if (crc != e->pub.crc32) return crc_mismatch(a, e, crc);
    }
    *owner = onnxio_buffer_ref(a->owner);
    return ONNXIO_OK;
}

void onnxio__archive_set_crc(onnxio_archive *a, const onnxio_archive_entry *pub, uint32_t crc)
{
    entry *e = &a->entries[(const entry *)pub - a->entries];
    e->crc_known = true;
    e->crc_read = crc;
}

bool onnxio__archive_known_crc(const onnxio_archive *a, const onnxio_archive_entry *pub, uint32_t *crc)
{
    const entry *e = (const entry *)pub;
    (void)a;
    *crc = e->crc_read;
    return e->crc_known;
}

const onnxio_archive_entry *onnxio__archive_model(const onnxio_archive *a) { return &a->entries[a->model].pub; }
const onnxio_archive_entry *onnxio__archive_find_n(const onnxio_archive *a, const char *name, size_t n)
{
    const entry *e = find_n(a, name, n);
    return e ? &e->pub : NULL;
}
const char *onnxio__archive_what(const onnxio_archive *a) { return a->what; }
int onnxio__archive_fd(const onnxio_archive *a) { return a->fd; }
const uint8_t *onnxio__archive_data(const onnxio_archive *a) { return a->data; }
onnxio_buffer *onnxio__archive_owner(const onnxio_archive *a) { return a->owner; }

/* ---- writing -------------------------------------------------------- */

typedef onnxio__zip_out out_entry;

static int needs64(uint64_t v) { return v >= 0xFFFFFFFFu; }

/* The largest padding an extra field can carry: the whole extra field
 * of a local header is at most 65535 bytes, ZIP64 sizes included. */
#define MAX_PAD (65535u - 20u)

/* Places an entry whose local header may start at `at`: the data goes on
 * the next multiple of `align`, the local header's extra field carrying
 * the padding (ZIP64 sizes first when the entry needs them). Alignments
 * larger than an extra field can pad leave the rest as a gap of
 * unreferenced bytes before the local header. Returns the end of its data. */
uint64_t onnxio__zip_place(out_entry *e, uint64_t at, uint64_t align)
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

/* The fields local and central headers share (APPNOTE 4.3.7, 4.3.12),
 * from "version needed" to "extra field length": onnxio's entries are
 * stored, without flags, at the fixed DOS time; `size64` puts the sizes in
 * a ZIP64 extra field. */
static uint8_t *put_shared(uint8_t *p, const out_entry *e, int size64, int zip64, uint32_t extra)
{
    p = wr16(p, zip64 ? VERSION_NEEDED64 : VERSION_NEEDED);
    p = wr16(p, 0);                    /* flags */
    p = wr16(p, ONNXIO_ARCHIVE_STORED); /* method */
    p = wr16(p, DOS_TIME);
    p = wr16(p, DOS_DATE);
    p = wr32(p, e->crc);
    p = wr32(p, size64 ? 0xFFFFFFFFu : (uint32_t)e->size);
    p = wr32(p, size64 ? 0xFFFFFFFFu : (uint32_t)e->size);
    p = wr16(p, (uint32_t)e->name_size);
    return wr16(p, extra);
}

/* The ZIP64 extra field: the sizes when `sizes`, the header's offset when
 * `offset` (APPNOTE 4.5.3: in that order, only those that overflow). */
static uint8_t *put_zip64(uint8_t *p, const out_entry *e, int sizes, int offset)
{
    p = wr16(p, EXTRA_ZIP64);
    p = wr16(p, (sizes ? 16u : 0u) + (offset ? 8u : 0u));
    if (sizes) {
        p = wr64(p, e->size);
        p = wr64(p, e->size);
    }
    return offset ? wr64(p, e->header) : p;
}

static uint8_t *put_local(uint8_t *p, const out_entry *e)
{
    uint64_t pad = e->pad;
    int z = needs64(e->size);
    p = wr32(p, SIG_LOCAL);
    p = put_shared(p, e, z, z, (uint32_t)((z ? 20 : 0) + pad));
    memcpy(p, e->name, e->name_size);
    p += e->name_size;
    if (z) p = put_zip64(p, e, 1, 0);
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
    p = put_shared(p, e, zs, z != 0, z ? 4 + z : 0);
    p = wr16(p, 0); /* comment */
    p = wr16(p, 0); /* disk */
    p = wr16(p, 0); /* internal attributes */
    p = wr32(p, EXTERNAL_ATTR);
    p = wr32(p, zo ? 0xFFFFFFFFu : (uint32_t)e->header);
    memcpy(p, e->name, e->name_size);
    p += e->name_size;
    return z ? put_zip64(p, e, zs, zo) : p;
}

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

/* Writes the local headers, the central directory and the end records of
 * `n` entries laid out in `e` (data already written), the directory at
 * `cd_offset`; `extra_central` raw central headers of other entries go
 * first (replacing a model keeps the others' as they were). */
onnxio_status onnxio__zip_write_directory(int fd, const char *what, out_entry *e, size_t n,
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

/* ---- replacing the model ------------------------------------------- */

static onnxio_status sync_fd(int fd, const char *what, bool on)
{
    if (on && onnxio__sys_fsync(fd) != 0) return onnxio__fail(ONNXIO_ERR_IO, "cannot sync %s: %s", what, strerror(errno));
    return ONNXIO_OK;
}

onnxio_status onnxio__zip_replace_prepare(const onnxio_archive *a, onnxio__zip_replace *r)
{
    memset(r, 0, sizeof *r);
    /* The central headers of every other entry, as they are. */
    for (size_t i = 0; i < a->count; i++)
        if (i != a->model) r->kept_size += a->entries[i].central_size;
    if (!(r->kept = onnxio__malloc(r->kept_size ? (size_t)r->kept_size : 1)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0, at = 0; i < a->count; i++) {
        if (i == a->model) continue;
        memcpy(r->kept + at, a->data + a->entries[i].central_offset, (size_t)a->entries[i].central_size);
        at += a->entries[i].central_size;
        r->kept_count++;
    }
    /* The old directory, with room for the end records that follow it
     * once it is copied past the new end. */
    r->old_size = a->size;
    r->old_count = a->count;
    r->old_cd_size = a->cd_size;
    uint64_t room = r->old_cd_size + end_size(r->old_count, r->old_cd_size, UINT64_MAX);
    if (room > SIZE_MAX || !(r->old_cd = onnxio__malloc((size_t)room))) {
        onnxio__zip_replace_free(r);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    memcpy(r->old_cd, a->data + a->cd_offset, (size_t)r->old_cd_size);
    return ONNXIO_OK;
}

void onnxio__zip_replace_free(onnxio__zip_replace *r)
{
    onnxio__free(r->kept);
    onnxio__free(r->old_cd);
    r->kept = r->old_cd = NULL;
}

onnxio_status onnxio__zip_replace_model_entry(int fd, const char *path, const onnxio__zip_replace *r,
                                              const uint8_t *model, uint64_t model_size, bool fsync)
{
    onnxio_status s = ONNXIO_OK;
    out_entry m = {0};
    bool appended = false, committed = false;
    m.name = MODEL_ENTRY;
    m.name_size = sizeof MODEL_ENTRY - 1;
    m.src = model;
    m.size = model_size;
    m.crc = onnxio__crc32(0, m.src, m.size);
    /* New layout: [old archive][new model][new directory][end], ending at
     * `final`. First a copy of the old directory and end records goes
     * after `final`, so that the file stays the old archive while the new
     * bytes are written before it; cutting the file at `final` then
     * switches to the new archive in one step. */
    const uint64_t old_size = r->old_size, kept_size = r->kept_size, kept_count = r->kept_count;
    uint64_t cd_offset = onnxio__zip_place(&m, old_size, 1);
    uint64_t final = cd_offset + kept_size + central_size(&m) + end_size(kept_count + 1, kept_size + central_size(&m), cd_offset);
    uint64_t tail = r->old_cd_size + end_size(r->old_count, r->old_cd_size, final);
    put_end(r->old_cd + r->old_cd_size, r->old_count, r->old_cd_size, final);
    appended = true;
    if ((s = pwrite_all(fd, r->old_cd, tail, final, path)) || (s = sync_fd(fd, path, fsync))) goto done;
    if ((s = pwrite_all(fd, m.src, m.size, m.data, path))) goto done;
    uint64_t end;
    if ((s = onnxio__zip_write_directory(fd, path, &m, 1, r->kept, kept_size, kept_count, cd_offset, &end))) goto done;
    if ((s = sync_fd(fd, path, fsync))) goto done;
    if (end != final) {
        s = onnxio__fail(ONNXIO_ERR_IO, "internal error: the new directory ends at %llu, not %llu",
                         (unsigned long long)end, (unsigned long long)final);
        goto done;
    }
    if (onnxio__sys_ftruncate(fd, final) != 0) {
        /* Windows refuses to shrink a file a view maps (a no_copy load of
         * the archive, here or in another process): the file then stays
         * the old archive, the bytes appended behind it included. */
        if (errno == EBUSY)
            s = onnxio__fail(ONNXIO_ERR_IO,
                             "cannot switch %s to the new model: a mapping of it is alive (a no_copy load of the "
                             "archive) and the system refuses to shrink a mapped file; it still holds the old model",
                             path);
        else s = onnxio__fail(ONNXIO_ERR_IO, "cannot truncate %s: %s", path, strerror(errno));
        goto done;
    }
    committed = true;
    if ((s = sync_fd(fd, path, fsync))) s = onnxio__context(s, "the new model is in place (committed) but may not be on disk");
done:
    /* A failure before the switch: what was appended goes, and the file is
     * byte for byte what it was (it stayed a valid archive meanwhile). */
    if (s && appended && !committed && onnxio__sys_ftruncate(fd, old_size) == 0 && fsync) onnxio__sys_fsync(fd);
    return s;
}
