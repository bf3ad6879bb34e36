/* The entries of an .onnxz archive as a payload container (docs/design.md,
 * "The container seam"; docs/onnxz.md): a tensor's location is an entry
 * name. Stored entries are read where they are, from the archive's file
 * (pread) or mapping (borrowed with no_copy when their address is aligned);
 * deflated entries are inflated once, however many tensors refer to them,
 * and their bytes charged to the load's expansion budget. */
#include <errno.h>
#include <string.h>

#include "io/save.h"

/* An archive entry: the entry first (container.c frees it), then its own. */
typedef struct zip_entry {
    onnxio__entry e;
    onnxio_buffer *inflated; /* deflated entries: their bytes */
    const onnxio_archive_entry *pub;
    char name[300];          /* "entry 'Y'", for messages */
} zip_entry;


typedef struct zip_container {
    onnxio__container base;
    onnxio_archive *archive;
    uint64_t alignment;
    /* An archive read whole (onnxio__archive_read): the view that holds
     * each stored entry opened (the container's reference). */
    bool read;
    onnxio_buffer **views;
    size_t view_count, view_capacity;
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
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': external data location '%s' is not an entry of %s",
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
    z->pub = pub;
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
        if (c->read) {
            /* Read whole (the archive is in memory only): the bytes are
             * this load's, their CRC-32 most often known; a view of them
             * is what the tensor that takes them holds. */
            onnxio_buffer *view = NULL;
            if (!onnxio__grow((void **)&c->views, &c->view_capacity, c->view_count, sizeof *c->views) ||
                !(view = onnxio__buffer_view(z->e.owner, (uint8_t *)z->e.data, (size_t)pub->size))) {
                onnxio__free(z);
                return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            }
            c->views[c->view_count++] = view;
            z->e.owner = view;
            z->e.owned = true;
            z->e.crc_done = onnxio__archive_known_crc(a, pub, &z->e.crc_got);
        }
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

static onnxio_status zip_record(onnxio__container *base, const onnxio__entry *e, onnxio__budget *budget,
                                const char **value, size_t *size)
{
    return onnxio__archive_record(((zip_container *)base)->archive, ((const zip_entry *)e)->pub, budget, value, size);
}

static int view_cmp(const void *x, const void *y)
{
    const uint8_t *a = onnxio_buffer_data(*(onnxio_buffer *const *)x), *b = onnxio_buffer_data(*(onnxio_buffer *const *)y);
    return a < b ? -1 : a > b;
}

/* An archive read whole: what no tensor took goes back now. A view that a
 * tensor holds keeps its pages (and gives them back when the tensor goes);
 * every page of the archive's bytes outside those views is given back. */
static void zip_finish(onnxio__container *base)
{
    zip_container *c = (zip_container *)base;
    if (c->read) {
        onnxio_buffer *bytes = onnxio__archive_owner(c->archive);
        const uint8_t *at = onnxio_buffer_data(bytes), *end = at + onnxio_buffer_size(bytes);
        size_t kept = 0;
        for (size_t i = 0; i < c->view_count; i++) {
            if (onnxio_buffer_refcount(c->views[i]) > 1) c->views[kept++] = c->views[i];
            else onnxio_buffer_unref(c->views[i]); /* gives its own pages back */
        }
        if (kept) qsort(c->views, kept, sizeof *c->views, view_cmp);
        /* Their ranges, in address order. */
        uint8_t **ranges = onnxio__malloc((kept ? 2 * kept : 1) * sizeof *ranges);
        for (size_t i = 0; ranges && i < kept; i++) {
            ranges[2 * i] = onnxio_buffer_data(c->views[i]);
            ranges[2 * i + 1] = ranges[2 * i] + onnxio_buffer_size(c->views[i]);
        }
        /* Out of memory: nothing is given back before the tensors go. */
        if (ranges) onnxio__map_keep_only(at, end, ranges, kept);
        onnxio__free(ranges);
        for (size_t i = 0; i < kept; i++) onnxio_buffer_unref(c->views[i]);
    }
    onnxio__free(c->views);
}

onnxio_status onnxio__zip_container(onnxio_archive *archive, const onnxio_parse_options *opts, bool read,
                                    onnxio__container **out)
{
    zip_container *c = onnxio__calloc(1, sizeof *c);
    if (!c) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    c->base.open = zip_open;
    c->base.release = zip_release;
    c->base.finish = zip_finish;
    c->base.record = zip_record;
    c->base.archive = true;
    c->archive = archive;
    c->alignment = opts->alignment;
    c->read = read;
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

/* ---- cold copy loads: the archive read whole (container.h) ------------ */

/* The tail read first: where the end records and, nearly always, the
 * central directory are. */
#define READ_TAIL ((uint64_t)64 << 10)
/* Reads start on multiples of this (every direct I/O offset alignment seen:
 * 512 here), so that each is read in place. */
#define READ_ALIGN ((uint64_t)4096)

uint64_t onnxio__archive_one_read_max = ONNXIO__WHOLE_MAX;

/* One read of the plan: [start, end) of the file into the same offsets of
 * the buffer, the CRC-32 of each pool piece of it in crc[]. */
typedef struct planned {
    uint64_t start, end;
    uint32_t *crc;
} planned;

static int offset_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The tail of the file read into `bytes` at its own offsets, from `*from`
 * on, until it holds the end records and the central directory: the
 * archive as its tail describes it, or NULL (not an archive, as far as
 * the tail says: the caller's usual path says what is wrong). */
static onnxio_status read_tail(int fd, uint64_t size, const char *what, uint8_t *bytes, uint64_t *from,
                               onnxio_archive **tail)
{
    *tail = NULL;
    uint64_t at = size > READ_TAIL ? (size - READ_TAIL) / READ_ALIGN * READ_ALIGN : 0;
    onnxio_status s = onnxio__read_at(fd, bytes + at, size - at, at, what);
    /* open_tail asks for the one range it lacks (a central directory that
     * starts earlier, then perhaps ZIP64 records before it). */
    for (int tries = 0; !s && tries < 4; tries++) {
        uint64_t need = UINT64_MAX;
        s = onnxio_archive_open_tail(bytes + at, (size_t)(size - at), size, NULL, &need, tail);
        if (s || *tail || need >= at) break;
        uint64_t more = need / READ_ALIGN * READ_ALIGN;
        s = onnxio__read_at(fd, bytes + more, at - more, more, what);
        at = more;
    }
    *from = at;
    return s;
}

/* The CRC-32 of `n` bytes at file offset `d` (the data of an entry) from
 * the plan's reads: the read that holds d computed the CRC-32 of
 * [r.start, r.end) as it landed; when the data runs at least to its end
 * (so the read holds no byte of the next entry), CRC(data) is that CRC with
 * the bytes before d taken out (CRC(A || B) = CRC(A) x^8|B| + CRC(B), zlib's
 * crc32_combine, so CRC(B) = CRC(A || B) ^ crc32_combine(CRC(A), 0, |B|)),
 * continued over what lies past r.end (at most the next read's first 4 KiB,
 * or the tail). False when the entry is not laid out so (data followed by
 * other bytes before the next local header: another tool's archive), or
 * starts far past its read's start. */
static bool crc_from_reads(const uint8_t *bytes, const planned *reads, size_t count, uint64_t d, uint64_t n,
                           uint32_t *crc)
{
    size_t lo = 0, hi = count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (reads[mid].start <= d) lo = mid;
        else hi = mid;
    }
    if (!count || reads[lo].start > d || d >= reads[lo].end) return false;
    const planned *r = &reads[lo];
    /* A local header is at most 30 + 65535 + 65535 bytes. */
    if (d - r->start > ((uint64_t)132 << 10) || d + n < r->end) return false;
    uint32_t before = onnxio__crc32(0, bytes + r->start, d - r->start);
    uint32_t c = onnxio__crc_join(r->crc, r->end - r->start) ^ onnxio__crc_combine(before, 0, r->end - d);
    *crc = onnxio__crc32(c, bytes + r->end, d + n - r->end);
    return true;
}

onnxio_status onnxio__archive_read(int fd, uint64_t size, const char *what, const onnxio_parse_options *opts,
                                   onnxio_archive **out)
{
    *out = NULL;
    if (size == 0 || size > SIZE_MAX - READ_ALIGN) return ONNXIO_OK;
    const char *name = what ? what : "the archive"; /* in read errors */
    /* Laid out as the file: a read at a multiple of READ_ALIGN lands at
     * the same multiple, so the device writes it in place. */
    onnxio_buffer *buffer = onnxio_buffer_new((size_t)size, READ_ALIGN);
    if (!buffer) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for the %llu bytes of %s",
                                     (unsigned long long)size, name);
    uint8_t *bytes = onnxio_buffer_data(buffer);
    uint64_t from;
    onnxio_archive *tail;
    onnxio_status s = read_tail(fd, size, name, bytes, &from, &tail);
    if (s == ONNXIO_ERR_ARCHIVE || (!s && !tail)) {
        /* Not an archive, as far as its tail says: the usual path reads
         * the file, and says what is wrong with the file named. */
        onnxio__clear_error();
        s = ONNXIO_OK;
    }
    if (s || !tail) {
        onnxio_buffer_unref(buffer);
        return s;
    }
    /* The plan: reads cut where the local headers start (rounded down). */
    size_t n = onnxio_archive_entry_count(tail), cut_count = 0, count = 0, pieces = 0;
    uint64_t *cuts = onnxio__malloc((n + 2) * sizeof *cuts);
    planned *reads = onnxio__malloc((n + 1) * sizeof *reads);
    uint32_t *crcs = NULL;
    onnxio__pool *pool = NULL;
    bool verify = opts->verify_crc == ONNXIO_ON;
    if (!cuts || !reads) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    if (!s) {
        cuts[cut_count++] = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t h = onnxio_archive_entry_at(tail, i)->header_offset;
            if (h < from) cuts[cut_count++] = h / READ_ALIGN * READ_ALIGN;
        }
        qsort(cuts, cut_count, sizeof *cuts, offset_cmp);
        cuts[cut_count++] = from;
        for (size_t i = 0; i + 1 < cut_count; i++)
            if (cuts[i + 1] > cuts[i]) {
                reads[count++] = (planned){cuts[i], cuts[i + 1], NULL};
                pieces += onnxio__crc_pieces(cuts[i + 1] - cuts[i]);
            }
        if (!(crcs = onnxio__calloc(pieces ? pieces : 1, sizeof *crcs))) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    onnxio_archive_close(tail);
    /* Up to ONNXIO__WHOLE_MAX (onnxio__archive_one_read_max), everything
     * before the tail in one read
     * (onnxio__read_into, as a single file is read), then the CRC-32 of
     * each planned read on the pool, from memory. Above, the planned reads
     * on the pool, in 8 MiB pieces, each piece's CRC-32 computed as it
     * lands. Cold archives, fresh processes: 0.5 GiB, medians of 11, 0.250
     * s in one read against 0.251 s on the pool in C, and 0.255 s against
     * 0.276-0.288 s through the Python package (`cat` 0.257 s); 3.5 GiB,
     * medians of 6, 2.16 s against 1.84 s (`cat` 2.08 s). */
    if (!s) s = onnxio__pool_new(opts->num_threads, &pool);
    bool one_read = from <= onnxio__archive_one_read_max;
    if (!s && one_read) s = onnxio__read_into(fd, 0, from, bytes, name, opts->direct_io == ONNXIO_ON);
    if (!s) onnxio__pool_read_direct(pool, opts->direct_io == ONNXIO_ON);
    for (size_t i = 0, slot = 0; !s && i < count; i++) {
        reads[i].crc = crcs + slot;
        slot += onnxio__crc_pieces(reads[i].end - reads[i].start);
        onnxio__job job = {.kind = one_read ? ONNXIO__JOB_CRC : ONNXIO__JOB_PREAD, .fd = fd, .offset = reads[i].start,
                           .size = reads[i].end - reads[i].start, .what = name, .crc = verify ? reads[i].crc : NULL};
        if (one_read) job.src = bytes + reads[i].start, job.not_payload = true;
        else job.dst = bytes + reads[i].start;
        if (!one_read || verify) s = onnxio__pool_add(pool, &job);
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    onnxio__free(cuts);
    /* Validated from the bytes read, as from a mapping; each stored
     * entry's CRC-32 known from the reads' where they allow it (checked
     * when the load reads the entry; the others are computed then). */
    onnxio_archive *a = NULL;
    if (!s) s = onnxio__archive_open(bytes, (size_t)size, buffer, -1, what, false, &a);
    for (size_t i = 0; !s && verify && i < onnxio_archive_entry_count(a); i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(a, i);
        uint32_t crc;
        if (e->method == ONNXIO_ARCHIVE_STORED && crc_from_reads(bytes, reads, count, e->data_offset, e->size, &crc))
            onnxio__archive_set_crc(a, e, crc);
    }
    onnxio__free(reads);
    onnxio__free(crcs);
    onnxio_buffer_unref(buffer);
    if (s) {
        onnxio_archive_close(a);
        return s;
    }
    *out = a;
    return ONNXIO_OK;
}

/* ---- writing: an .onnxz archive (onnxio__zip_writer) ------------------------------ */

/* Every selected tensor an entry (e[i] for sel.tensors[i]); with block
 * digests their entry (e[n - 2]); the model the last entry (e[n - 1]),
 * then the central directory. */
typedef struct zip_plan {
    onnxio__zip_out *e;
    size_t n;
    uint8_t (**digests)[32]; /* with cfg->digests: each tensor entry's, filled as it is written */
    char *digest_text;       /* the digests entry */
    onnxio__names *names;
    onnxio_buffer *model;
    uint64_t cd_offset; /* where the next entry (then the directory) starts */
    int fd;             /* the archive's temporary file */
} zip_plan;

static void zip_writer_free(void *state)
{
    zip_plan *z = state;
    if (!z) return;
    for (size_t i = 0; z->e && i < z->n; i++) {
        onnxio__free(z->e[i].crc_pieces);
        onnxio_buffer_unref(z->e[i].keep);
    }
    for (size_t i = 0; z->digests && i + 2 < z->n; i++) onnxio__free(z->digests[i]);
    onnxio__free(z->digests);
    onnxio__free(z->digest_text);
    onnxio__free(z->e);
    onnxio_buffer_unref(z->model);
    onnxio__names_free(z->names);
    onnxio__free(z);
}

/* Each tensor's entry, named after it, and its place: the same places
 * whenever the model is known (the model, last, is placed once it is
 * serialized, after them, not aligned). The tensors refer to their
 * entries now. */
static onnxio_status zip_writer_plan(onnxio__saving *sv, const char *path)
{
    (void)path;
    zip_plan *z = onnxio__calloc(1, sizeof *z);
    if (!z) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    z->fd = -1;
    sv->state = z;
    z->n = sv->sel.count + 1 + (sv->cfg->digests ? 1 : 0);
    z->e = onnxio__calloc(z->n, sizeof *z->e);
    z->names = onnxio__names_new(z->n);
    if (sv->cfg->digests && !(z->digests = onnxio__calloc(sv->sel.count + 1, sizeof *z->digests)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    if (!z->e || !z->names || onnxio__names_reserve(z->names, ONNXIO__MODEL_ENTRY) < 0 ||
        onnxio__names_reserve(z->names, ONNXIO__DIGESTS_ENTRY) < 0)
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    uint64_t align = onnxio__save_alignment(sv->cfg, false);
    for (size_t i = 0; i < sv->sel.count; i++) {
        onnxio_TensorProto *t = sv->sel.tensors[i];
        const char *name = onnxio__names_unique(z->names, onnxio__tensor_name(t));
        if (!name) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        z->e[i] = (onnxio__zip_out){.name = name, .name_size = strlen(name), .src = t->raw_data.data,
                                    .size = t->raw_data.size, .keep = onnxio_buffer_ref(t->raw_data.owner)};
        /* A data_location that was present (DEFAULT: the tensor held its
         * payload) comes back present when the entry is loaded. An
         * archive's block digests are in its own entry, not the tensor's. */
        bool had_location = onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location);
        onnxio__digests_remove(t);
        onnxio_status s = onnxio__refer(sv->scratch, t, name, 0, NULL);
        if (!s && had_location) s = onnxio__add_key(sv->scratch, t, ONNXIO__KEY_DATA_LOCATION, "DEFAULT");
        if (s) return s;
        z->cd_offset = onnxio__zip_place(&z->e[i], z->cd_offset, align);
    }
    return ONNXIO_OK;
}

/* The PWRITE job of tensor entry `i` from `data`: its CRC-32 pieces, and
 * its block digests when the save writes them. */
static onnxio_status entry_job(zip_plan *z, size_t i, const void *data, onnxio__job *job)
{
    onnxio__zip_out *e = &z->e[i];
    *job = (onnxio__job){.kind = ONNXIO__JOB_PWRITE, .fd = z->fd, .offset = e->data, .src = data, .size = e->size,
                         .what = "the archive", .crc = e->crc_pieces};
    if (!z->digests || !e->size) return ONNXIO_OK;
    size_t blocks = (size_t)((e->size - 1) / ONNXIO_DIGEST_BLOCK + 1);
    if (!z->digests[i] && !(z->digests[i] = onnxio__malloc(blocks * sizeof *z->digests[i])))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for block digests");
    job->digest = z->digests[i];
    job->digest_block = ONNXIO_DIGEST_BLOCK;
    job->tensor = e->name;
    return ONNXIO_OK;
}

/* The data of every tensor entry, its CRC-32 computed on the way
 * (streamed ones: when they come). */
static onnxio_status zip_writer_write(onnxio__saving *sv, const char *path)
{
    (void)path;
    zip_plan *z = sv->state;
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__txn_create(sv->txn, -1, NULL, &z->fd);
    if (!s) s = onnxio__pool_new(sv->cfg->num_threads, &pool);
    for (size_t i = 0; !s && i + 1 + !!z->digests < z->n; i++) {
        onnxio__zip_out *e = &z->e[i];
        if (!(e->crc_pieces = onnxio__calloc(onnxio__crc_pieces(e->size), sizeof *e->crc_pieces))) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            break;
        }
        if (!e->src) continue;
        onnxio__job job;
        if (!(s = entry_job(z, i, e->src, &job))) s = onnxio__pool_add(pool, &job);
    }
    onnxio_status s2 = onnxio__pool_finish(pool);
    return s ? s : s2;
}

static onnxio_status zip_writer_put(onnxio__saving *sv, size_t item, const void *data)
{
    zip_plan *z = sv->state;
    onnxio__job job;
    onnxio__pool *pool = NULL;
    onnxio_status s = entry_job(z, item, data, &job);
    if (!s) s = onnxio__pool_new(sv->cfg->num_threads, &pool);
    if (!s) s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    return s ? s : s2;
}

/* The digests entry: its header, then a line per tensor entry, in entry
 * order: "NAME BLOCK:HEX" (docs/onnxz.md). */
static onnxio_status digests_entry(zip_plan *z, size_t tensors)
{
    size_t size = sizeof ONNXIO__DIGESTS_HEADER - 1;
    for (size_t i = 0; i < tensors; i++) {
        uint64_t blocks = z->e[i].size ? (z->e[i].size - 1) / ONNXIO_DIGEST_BLOCK + 1 : 0;
        size += z->e[i].name_size + 1 + 24 + 64 * (size_t)blocks + 1;
    }
    char *text = z->digest_text = onnxio__malloc(size + 1);
    if (!text) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for the digests entry");
    size_t at = (size_t)snprintf(text, size + 1, "%s", ONNXIO__DIGESTS_HEADER);
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < tensors; i++) {
        uint64_t blocks = z->e[i].size ? (z->e[i].size - 1) / ONNXIO_DIGEST_BLOCK + 1 : 0;
        at += (size_t)snprintf(text + at, size + 1 - at, "%s %u:", z->e[i].name, (unsigned)ONNXIO_DIGEST_BLOCK);
        for (uint64_t k = 0; k < blocks; k++)
            for (int b = 0; b < 32; b++) {
                text[at++] = digits[z->digests[i][k][b] >> 4];
                text[at++] = digits[z->digests[i][k][b] & 15];
            }
        text[at++] = '\n';
    }
    onnxio__zip_out *d = &z->e[z->n - 2];
    *d = (onnxio__zip_out){.name = ONNXIO__DIGESTS_ENTRY, .name_size = sizeof ONNXIO__DIGESTS_ENTRY - 1,
                           .src = (const uint8_t *)text, .size = at};
    return ONNXIO_OK;
}

/* Writes entry `e` (not a tensor's) at its place, its CRC-32 on the way. */
static onnxio_status write_entry(zip_plan *z, onnxio__zip_out *e)
{
    if (!(e->crc_pieces = onnxio__calloc(onnxio__crc_pieces(e->size), sizeof *e->crc_pieces)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(1, &pool);
    if (s) return s;
    onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = z->fd, .offset = e->data, .src = e->src, .size = e->size,
                       .what = "the archive", .crc = e->crc_pieces, .not_payload = true};
    s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    return s ? s : s2;
}

/* The model entry, last, then the directory; the padding was never
 * written: the file is exactly what was laid out. */
static onnxio_status zip_writer_model(onnxio__saving *sv)
{
    zip_plan *z = sv->state;
    onnxio_status s = ONNXIO_OK;
    if (z->digests) {
        onnxio__zip_out *d = &z->e[z->n - 2];
        if ((s = digests_entry(z, z->n - 2))) return s;
        z->cd_offset = onnxio__zip_place(d, z->cd_offset, 1);
        if ((s = write_entry(z, d))) return s;
    }
    onnxio__zip_out *m = &z->e[z->n - 1];
    if ((s = onnxio__serialize(sv->copy, sv->cfg->max_depth, &z->model))) return s;
    *m = (onnxio__zip_out){.name = ONNXIO__MODEL_ENTRY, .name_size = sizeof ONNXIO__MODEL_ENTRY - 1,
                           .src = onnxio_buffer_data(z->model), .size = onnxio_buffer_size(z->model)};
    z->cd_offset = onnxio__zip_place(m, z->cd_offset, 1);
    if ((s = write_entry(z, m))) return s;
    for (size_t i = 0; i < z->n; i++) z->e[i].crc = onnxio__crc_join(z->e[i].crc_pieces, z->e[i].size);
    uint64_t end;
    if ((s = onnxio__zip_write_directory(z->fd, "the archive", z->e, z->n, NULL, 0, 0, z->cd_offset, &end))) return s;
    if (onnxio__sys_ftruncate(z->fd, end) != 0)
        return onnxio__fail(ONNXIO_ERR_IO, "cannot size the archive: %s", strerror(errno));
    return ONNXIO_OK;
}

const onnxio__writer onnxio__zip_writer = {
    .every_tensor = true,
    .external_refused = true,
    .seeks = "an archive is written with seeks",
    .plan = zip_writer_plan,
    .write = zip_writer_write,
    .put = zip_writer_put,
    .model = zip_writer_model,
    .free = zip_writer_free,
};
