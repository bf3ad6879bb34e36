/* The payload-container seam (docs/design.md, "The container seam"): where
 * the bytes of external tensors live, behind one small interface, the way
 * sqlite3_vfs keeps SQLite's core away from file systems. A tensor's
 * location names an entry of its container; the container finds and checks
 * it, and says where its bytes are (in memory, in a file, or both). The one
 * load pipeline (load.c) and the one save pipeline (save.c) work on any
 * container; a third kind of container costs one file.
 *
 * Implementations: a directory of external data files (container_dir.c)
 * and an .onnxz zip archive (container_zip.c). */
#ifndef ONNXIO_CONTAINER_H
#define ONNXIO_CONTAINER_H

#include "io/io.h"

/* One opened entry: a data file, or an archive entry. Owned by its
 * container (valid until it is closed). */
typedef struct onnxio__entry {
    const char *name;        /* what the location named, for messages */
    uint64_t size;           /* bytes of data */
    const uint8_t *data;     /* the bytes in memory (a mapping, an inflated copy), or NULL */
    onnxio_buffer *owner;    /* keeps `data` alive (NULL: the caller's bytes) */
    bool borrow;             /* no_copy may point payloads into `data` (else they are copied) */
    /* `data` is this load's own copy of the bytes (an archive read whole,
     * onnxio__archive_read), held by `owner` alone: a copy load too takes
     * it as the payload of the first tensor that is the whole entry,
     * instead of copying it again (`adopted` once taken). */
    bool owned, adopted;
    int fd;                  /* the same bytes in a file, read with pread (-1: none) */
    uint64_t offset;         /* where they start in fd */
    bool has_crc;            /* the bytes must have this CRC-32 (zip entries) */
    uint32_t crc32;
    bool crc_done;           /* their CRC-32 is known already: crc_got (computed as they were read) */
    uint32_t crc_got;
    /* The load pipeline's state for this entry. */
    bool read;               /* a loaded payload comes from it */
    uint32_t *crc_pieces;    /* its CRC-32, piece by piece (see onnxio__job.crc) */
    onnxio__crc_slots slots;
    bool hashed;             /* its SHA-1 (verify_checksum), computed once */
    char sha1[41];
    /* The container's: what the entry is (a file's device and inode, an
     * archive entry's address), so that locations naming the same bytes
     * share one entry, and the list of open entries. */
    uint64_t key[2];
    struct onnxio__entry *next;
} onnxio__entry;

typedef struct onnxio__container onnxio__container;
struct onnxio__container {
    /* Finds and checks the entry that tensor `t`'s external data
     * reference `r` names (onnxio__container_find first: the same entry is
     * opened once), adding the bytes it reads to `budget->input` and
     * charging what it allocates. Errors name the tensor. */
    onnxio_status (*open)(onnxio__container *c, const onnxio_TensorProto *t, const onnxio_external_ref *r,
                          onnxio__budget *budget, onnxio__entry **out);
    /* Frees what the implementation added to an entry (not the entry). */
    void (*release)(onnxio__entry *e);
    /* Frees what the implementation holds itself, after the entries (NULL:
     * nothing). */
    void (*finish)(onnxio__container *c);
    /* The block digest record of entry `e` kept by the container itself
     * (an archive's digests entry), *value NULL when it has none; NULL:
     * records live in the tensors only. Errors name the container. */
    onnxio_status (*record)(onnxio__container *c, const onnxio__entry *e, onnxio__budget *budget, const char **value,
                            size_t *size);
    /* The open entries (container.c keeps them). */
    onnxio__entry *entries;
    /* An .onnxz archive's entries (onnxio__mark_loaded_entry), not data
     * files. */
    bool archive;
};

/* The block digests of tensor `t`, whose payload is `length` bytes of
 * entry `e`: its own record (metadata_props), else the container's
 * (load.c; also check.c's). *found false when it has none. */
onnxio_status onnxio__entry_digests(onnxio__container *c, const onnxio__entry *e, const onnxio_TensorProto *t,
                                    uint64_t length, onnxio__budget *budget, onnxio__digests *out, bool *found);

/* container.c: the entry with this key, or NULL. */
onnxio__entry *onnxio__container_find(onnxio__container *c, uint64_t key0, uint64_t key1);
/* Adds an entry the implementation allocated (with onnxio__malloc) and
 * filled; the container frees it. */
void onnxio__container_add(onnxio__container *c, onnxio__entry *e, uint64_t key0, uint64_t key1);
/* Frees every entry (release, then the entry) and the container. */
void onnxio__container_close(onnxio__container *c);

/* External data files under `base_dir` (container_dir.c). `model_path`
 * (NULL when unknown) is refused as a data file (ONNXIO_ERR_PATH_SELF). With
 * opts->no_copy each file is mapped once and its payloads borrow from it;
 * otherwise they are read with pread. */
onnxio_status onnxio__dir_container(const char *base_dir, const char *model_path, const onnxio_parse_options *opts,
                                    onnxio__container **out);

/* The entries of an opened archive (container_zip.c); the archive must
 * outlive the container. Stored entries are read from the archive's file
 * or mapping (borrowed with no_copy when their address is a multiple of
 * opts->alignment), deflated ones inflated once. `read`: the archive is
 * one that onnxio__archive_read made: each stored entry is owned (see
 * onnxio__entry), its CRC-32 known from the reads where they allowed it
 * (onnxio__archive_known_crc), and held by a view of the
 * archive's bytes (onnxio__buffer_view), so that its memory goes with its
 * tensor; when the container closes, the bytes of the archive that no
 * tensor took (local headers, the model entry, the central directory,
 * entries copied or not loaded) are given back. */
onnxio_status onnxio__zip_container(onnxio_archive *archive, const onnxio_parse_options *opts, bool read,
                                    onnxio__container **out);

/* A cold copy load of an .onnxz archive (docs/io.md, "Cold ranges are read directly"):
 * the file `fd` of `size` bytes (`what` names it, as onnxio__archive_open
 * takes it; NULL: "the archive") read whole into one new
 * buffer, laid out as the file, with direct reads (the tail first, for
 * the central directory; then the rest, planned as reads that start at
 * the entries' local headers, rounded down to 4 KiB, so that each is
 * aligned for O_DIRECT and in place: see onnxio__archive_one_read_max),
 * the CRC-32 of every planned read computed; then the archive validated
 * from those bytes, and each stored
 * entry's CRC-32 derived from the reads' (onnxio__archive_set_crc), to be
 * checked when the load reads the entry, as any load checks it.
 * *out: the archive over the buffer, for onnxio__zip_container(..., true);
 * NULL when the tail does not describe an archive (the caller's usual
 * path then says what is wrong). Not for a load with progress (its total
 * is the payload bytes, known only once the model is parsed). */
onnxio_status onnxio__archive_read(int fd, uint64_t size, const char *what, const onnxio_parse_options *opts,
                                   onnxio_archive **out);
/* Up to this many bytes before its tail, onnxio__archive_read reads an
 * archive in one read and computes the CRC-32s after; above, in 8 MiB
 * pieces on the pool, each CRC-32 as its piece lands. ONNXIO__WHOLE_MAX;
 * tests lower it to take the second way on small archives. */
extern uint64_t onnxio__archive_one_read_max;

/* The load pipeline (load.c): every tensor under `root` whose data is
 * external is checked against its entry (location, range, type and shape)
 * before any payload is allocated; with verify_checksum the SHA-1 of each
 * entry with a "checksum" key is checked; then the payloads are placed
 * (payload.c: borrowed, copied on the pool, or where payload_fn says),
 * tensors referring to the same bytes sharing one buffer, and the CRC-32 of
 * every entry that has one is checked as its bytes are copied (verify_crc).
 * `opts` resolved. */
onnxio_status onnxio__load_external_payloads(onnxio_message *root, onnxio__container *c,
                                             const onnxio_parse_options *opts, onnxio__budget *budget);

/* load.c: calls fn for every tensor under `root` whose data is external
 * (data_location EXTERNAL), with its external_data keys parsed
 * (onnxio_external_ref_parse's errors stop the walk); the first status
 * fn returns other than ONNXIO_OK stops it too. */
onnxio_status onnxio__visit_external(onnxio_message *root,
                                     onnxio_status (*fn)(void *ctx, onnxio_TensorProto *t, const onnxio_external_ref *r),
                                     void *ctx);

/* load.c: checks tensor `t`'s range `r` against an entry of `size` bytes
 * named `name` (for messages): offset and length (the rest of it when
 * absent) inside it, the length what the tensor's type and shape need.
 * ONNXIO_ERR_EXTERNAL_RANGE or ONNXIO_ERR_EXTERNAL_DATA; *length is the
 * payload's length. Shared by the load pipeline, onnxio_external_ranges
 * (remote.c) and the slice reader (slice.c). */
onnxio_status onnxio__check_external_range(const onnxio_TensorProto *t, const onnxio_external_ref *r, uint64_t size,
                                           const char *name, uint64_t *length);

/* load.c: with verify_checksum, the "checksum" key of `r` checked
 * against the SHA-1 of the whole entry `e` (computed once per entry, kept
 * in it): ONNXIO_ERR_CHECKSUM on a mismatch, naming tensor `t`. The load
 * pipeline runs its checks on a task beside the payloads; onnxio_check_model
 * calls it directly. */
onnxio_status onnxio__check_sha1(onnxio__entry *e, const onnxio_TensorProto *t, const onnxio_external_ref *r);

#endif
