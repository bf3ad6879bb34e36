/* The io layer (docs/design.md, "Layers"): files and the save
 * transaction (file.c), external data directories (container_dir.c),
 * payload placement (payload.c), the load and save pipelines, .onnxz
 * records (zip.c). Containers have their own header, io/container.h. */
#ifndef ONNXIO_IO_IO_H
#define ONNXIO_IO_IO_H

#include "pool/pool.h"
#include "proto/codec.h"

/* ---- payload sources: what a load hands to payload placement ---------- */

/* CRC-32 pieces that a payload copy fills (see onnxio__job.crc); `filled`
 * is set when the copy is queued, so that a payload that was borrowed or
 * skipped instead is known to be unchecked. */
typedef struct onnxio__crc_slots {
    uint32_t *piece;
    bool filled;
} onnxio__crc_slots;
typedef struct onnxio__payload_src {
    const uint8_t *data;  /* the bytes in memory, or NULL when only in a file */
    onnxio_buffer *owner; /* keeps `data` alive for no_copy (NULL: borrowed) */
    int fd;               /* the same bytes in a file (-1: none): read with pread */
    uint64_t offset;      /* their offset in fd */
    uint64_t size;
    bool external;        /* from an external data file: loading clears data_location/external_data */
    bool entry;           /* external, from an .onnxz entry: data_location is cleared, not DEFAULT */
    const char *what;     /* file named in read errors (NULL: the tensor name) */
    bool copy;            /* copy even with no_copy (bytes not aligned for borrowing) */
    bool owned;           /* the bytes are this load's own (container.h, onnxio__entry.owned): taken, not copied, by a copy load too */
    onnxio__crc_slots *crc; /* compute the CRC-32 of the bytes as they are copied (NULL: no) */
    /* Check the bytes' block digests (see onnxio__job.expect) as each piece
     * of them is copied or read, while it is in cache (NULL: no); *checked
     * is set when a job took them on (else the caller checks the placed
     * bytes itself). */
    const uint8_t (*expect)[32];
    uint64_t digest_block;
    bool *checked;
    /* The container entry the bytes come from (NULL: inline): with no_copy,
     * payloads loaded from the same entry, offset and size share one
     * buffer when they must be copied. */
    const void *share;
    uint64_t share_offset;
} onnxio__payload_src;

/* ---- container_dir.c: external data in a directory -------------------- */

/* Where a location led: the directory holding its last component (an open
 * descriptor) and that component's name; `exists` with its lstat. */
typedef struct onnxio__resolved {
    int dir_fd;
    char *name;
    bool exists;
    struct stat st;
} onnxio__resolved;
/* A base directory opened once for many walks: its descriptor and its
 * real path (what an absolute symlink target must stay under). */
typedef struct onnxio__base {
    int fd;
    char real[PATH_MAX];
} onnxio__base;
onnxio_status onnxio__base_open(const char *base_dir, onnxio__base *out);
void onnxio__base_close(onnxio__base *b);
/* Walks `location` (already checked with onnxio_check_location) under the
 * base directory with openat and O_NOFOLLOW, following symlinks only while
 * they stay inside (onnxio_external_data_open's rules). A missing last
 * component is not an error (exists false); a missing directory is. */
onnxio_status onnxio__resolve_in(const onnxio__base *b, const char *location, onnxio__resolved *out);
void onnxio__resolved_free(onnxio__resolved *r);
/* What an existing data file must be: not the model file (`model`, NULL
 * when unknown: ONNXIO_ERR_PATH_SELF), a regular file (PATH_SPECIAL) with
 * one link (PATH_LINK). */
onnxio_status onnxio__resolved_check(const onnxio__resolved *r, const char *location, const struct stat *model);
/* Opens the existing file `r` names with `flags` (O_RDONLY or O_RDWR) once
 * onnxio__resolved_check passes: with O_NOFOLLOW | O_NONBLOCK, and checked
 * again on the descriptor. */
onnxio_status onnxio__open_resolved(const onnxio__resolved *r, const char *location, const struct stat *model, int flags,
                                    int *fd);

/* payload.c: placing loaded payloads (copy, borrow, callback) and filling
 * them through the pool. */
typedef struct onnxio__payloads onnxio__payloads;
/* `opts` resolved; `budget` (not NULL) is charged for every payload byte
 * the load allocates. `pool`: where jobs go; NULL: a pool of the payloads'
 * own, made with the first job (opts->num_threads, direct_io) and finished
 * by onnxio__payloads_finish. */
onnxio_status onnxio__payloads_new(const onnxio_parse_options *opts, onnxio__pool *pool, onnxio__budget *budget,
                                   onnxio__payloads **out);
/* Runs and waits for the jobs of the payloads' own pool (none when a pool
 * was given or no job was queued); returns the first failure. Call before
 * the memory of any queued job is freed, also on error paths. */
onnxio_status onnxio__payloads_finish(onnxio__payloads *p);
/* Loads one payload into `tensor`, or, with a payload callback, remembers
 * it for onnxio__payloads_resolve. */
onnxio_status onnxio__payload_take(onnxio__payloads *p, onnxio_TensorProto *tensor, const onnxio__payload_src *src);
/* In-place mode, for a copy load whose input `input` is its own copy of
 * the whole file (onnxio__read_whole), without payload or progress
 * callbacks: the large payloads stay in it, each moved by a few bytes to
 * be aligned as the load's alignment (at most 64) says, and each tensor
 * holds a view of its bytes (onnxio__buffer_view); when the payloads are
 * freed, the pages of the input that no tensor holds are given back. A
 * payload that would move more than 4 KiB gets a block of its own. */
void onnxio__payloads_in_place(onnxio__payloads *p, onnxio_buffer *input);
/* Bytes past the end of the file that an in-place input has (zeros): room
 * for the last payloads to move right. */
#define ONNXIO__IN_PLACE_SLACK ((size_t)8192)
/* Places what waits for the end of the parse (in-place payloads), and asks
 * the payload callback about every remembered payload and places it. */
onnxio_status onnxio__payloads_resolve(onnxio__payloads *p);
void onnxio__payloads_free(onnxio__payloads *p);

/* file.c: mapping files, and the save transaction (docs/design.md, "The
 * save protocol"). */
/* Maps a whole file private (copy-on-write); an empty file gives a buffer
 * of size 0; anything but a regular file is refused (ONNXIO_ERR_IO) without
 * blocking. With fd_out, the open descriptor is returned too (the caller
 * closes it); otherwise it is closed. */
onnxio_status onnxio__map_file(const char *path, onnxio_buffer **out, int *fd_out);
/* Reads `size` bytes at `offset` of the file `fd` into `dst` in one read
 * on the calling thread (preads of up to 1 GiB: the kernel splits each
 * into requests it sends all at once), with direct I/O where the range is
 * not cached and `direct` (`what` names the file in errors). Reading a
 * whole cold 0.5 GiB file so took 0.22 s here, against 0.30-0.32 s in 8
 * MiB reads one after another, 0.28 s in 32 MiB reads, 0.25 s in 128 MiB
 * reads, 0.24-0.31 s in 8 MiB reads on 2 to 8 threads, and `cat` 0.26 s. */
onnxio_status onnxio__read_into(int fd, uint64_t offset, uint64_t size, uint8_t *dst, const char *what, bool direct);
/* The whole file `fd` of `size` bytes read so (onnxio__read_into) into a
 * new buffer laid out as the file, with ONNXIO__IN_PLACE_SLACK bytes more:
 * a cold copy load of a single file (model.c), parsed from that buffer in
 * in-place mode (onnxio__payloads_in_place). */
onnxio_status onnxio__read_whole(int fd, uint64_t size, const char *what, const onnxio_parse_options *opts,
                                 onnxio_buffer **out);
/* Maps the whole open file `fd` private (as onnxio__map_file); `what`
 * names it in errors. The caller keeps and closes fd. */
onnxio_status onnxio__map_fd(int fd, const char *what, onnxio_buffer **out);
/* Reading ahead of a parse in a file mapping: the mapping is set to
 * random access (the caller does it, and undoes it after), so a fault
 * reads only its page (unless the load reads the whole file: then a fault
 * reads the 2 MiB folio around it, onnxio__map_whole in model.c), and the
 * parse asks for the bytes ahead of it itself, through
 * onnxio__decode_config.reached, a window at a time, once it is within
 * half a window of the end of what it asked for. The window doubles while
 * the parse reads on (structure), from 64 KiB to 8 MiB, and starts again
 * at the minimum after a skipped payload: a payload is then read at most
 * 64 KiB into, where the kernel's read-around (8 MiB here) read much of
 * every large tensor during a no_copy load. */
typedef struct onnxio__read_ahead {
    uintptr_t end;       /* of the mapping */
    uintptr_t asked_end; /* where the read-ahead asked for ends */
    uintptr_t window;    /* the next read-ahead's size */
    uintptr_t kept;      /* where the pages still mapped by the parse start */
} onnxio__read_ahead;
void onnxio__read_ahead_init(onnxio__read_ahead *r, const void *data, size_t size);
/* onnxio__decode_config.reached, with an onnxio__read_ahead as ctx. */
uintptr_t onnxio__read_ahead_reached(void *ctx, const uint8_t *at);
/* The window of a file mapping mapped from its own open file description
 * (file.c, onnxio__map_fd); tests set it (not 0) to make it smaller. */
extern size_t onnxio__test_map_window;
/* The model's directory (onnxio_model_dir: base_dir when not NULL, else
 * the directory part of `path`), onnxio__malloc'd; NULL when out of
 * memory; onnxio__model_dir(path, NULL) is the directory of any file
 * (the part after its last '/' is onnxio_path_file_name). */
char *onnxio__model_dir(const char *path, const char *base_dir);
char *onnxio__path_join(const char *dir, const char *name);

/* The save budget (onnxio_serialize_options.max_expansion, docs/security.md
 * "Limits"): every route that writes payloads (saves of every container,
 * .safetensors files) adds each payload it will write, then checks before
 * anything is written that they add up to at most max_expansion times the
 * distinct bytes they come from (payloads sharing memory count it once),
 * plus ONNXIO_EXPANSION_ALLOWANCE. */
typedef struct onnxio__save_budget {
    struct onnxio__save_range {
        uintptr_t start, end;
    } *ranges;
    size_t count, capacity;
    uint64_t written; /* the payload bytes added: what the save writes */
} onnxio__save_budget;
/* Adds one payload of `size` bytes at `data` (nothing when size is 0).
 * ONNXIO_ERR_NO_MEMORY. */
onnxio_status onnxio__save_budget_add(onnxio__save_budget *b, const void *data, uint64_t size);
/* ONNXIO_ERR_EXPANSION, naming `path`, when what was added is past the
 * budget of `ratio` (resolved; UINT64_MAX: no limit). Frees the ranges. */
onnxio_status onnxio__save_budget_check(onnxio__save_budget *b, const char *path, uint64_t ratio);
void onnxio__save_budget_free(onnxio__save_budget *b);

/* Whether a file name (the last component of a path) is one a save uses
 * for its own bookkeeping: a journal (".<name>.onnxio-journal") or a
 * temporary file (".<name>.onnxio-tmp-<hex>"). A save refuses to write a
 * data file under such a name: the save would remove it as its own. */
bool onnxio__txn_reserved_name(const char *name);
/* A save: every file it writes is a temporary file until the commit. */
typedef struct onnxio__txn onnxio__txn;
/* Begins a save whose main file (the model or the archive) is `path`,
 * written through a symlink to its target: takes the lock of its journal
 * (waiting for another save of it), finishes or undoes a dead save's
 * journal, removes its temporary files. A target that is not a regular
 * file (a pipe, a terminal, /dev/null) makes a stream transaction: only
 * the main file, written in place, sequentially. */
onnxio_status onnxio__txn_begin(const char *path, onnxio__txn **out);
/* fsync off (onnxio_serialize_options.fsync OFF): the transaction writes,
 * journals and renames as always, and never calls fsync. */
void onnxio__txn_no_fsync(onnxio__txn *t);
bool onnxio__txn_is_stream(const onnxio__txn *t);
/* A new temporary file for `name` in the directory `dir_fd` (dir_fd -1 and
 * name NULL: the main file), recorded in the journal before it is made;
 * *fd stays the transaction's. Mode 0666 under the umask, or the mode of
 * the file it replaces; a target that is not writable is refused. */
onnxio_status onnxio__txn_create(onnxio__txn *t, int dir_fd, const char *name, int *fd);
/* fsyncs and closes one file of the transaction (to bound open files). */
onnxio_status onnxio__txn_sync(onnxio__txn *t, int fd);
/* Commits (fsync, journal state, renames: data first, main last, directory
 * fsyncs, journal removed) and frees `t`, also on failure. */
onnxio_status onnxio__txn_commit(onnxio__txn *t);
/* Removes the temporary files and the journal, and frees `t`. NULL: nothing. */
void onnxio__txn_abort(onnxio__txn *t);
/* Before a load of `path`: replays the journal of a save of it that died,
 * if there is one (waiting for a save in progress). ONNXIO_ERR_IO only
 * when a committed save cannot be finished. */
onnxio_status onnxio__recover(const char *path);
/* After a load of `path` opened the model as `fd` and then its data files:
 * whether a save of `path` may have replaced files in between, so that
 * the load could hold one save's model and another's data. True when the
 * path now leads to another file than `fd` (a save renamed its new model
 * over it: the main file is renamed last) or when a committed journal of
 * this user is there (its renames, data files first, under way or cut
 * short). A load that finds it true starts again (onnxio__recover waits
 * for the save); one that finds it false read the files of one save,
 * since a descriptor keeps the file it opened. Two look-ups; no lock, so
 * that a load needs no write access to the directory. */
bool onnxio__save_crossed(const char *path, int fd);
/* How many times a load starts again before giving up with
 * ONNXIO_ERR_IO: each start waits for the save in progress first. */
#define ONNXIO__LOAD_ATTEMPTS 16

/* write.c: file and entry names made from tensor names: a set compared with ASCII
 * case folded. */
typedef struct onnxio__names onnxio__names;
onnxio__names *onnxio__names_new(size_t expected);
void onnxio__names_free(onnxio__names *set);
/* Adds `name` as it is: 1 added, 0 already there, -1 out of memory. */
int onnxio__names_reserve(onnxio__names *set, const char *name);
/* A new name from `tensor`: characters outside [A-Za-z0-9._-] become '_',
 * never a leading '.', at most 200 bytes of the tensor name, "tensor" when
 * empty, and "_<n>" appended until it is not in the set (case folded). The
 * set owns it. NULL when out of memory. */
const char *onnxio__names_unique(onnxio__names *set, const char *tensor);

/* zip.c: zip records of .onnxz archives (docs/onnxz.md). */
#define ONNXIO__MODEL_ENTRY ONNXIO_ARCHIVE_MODEL_ENTRY
/* The entry of an archive's block digests (docs/onnxz.md), and its first
 * line. */
#define ONNXIO__DIGESTS_ENTRY "__BLOCK_DIGESTS"
#define ONNXIO__DIGESTS_HEADER "onnxio block digests 1\n"
/* Validates the archive held in `size` bytes at `data`, kept alive by
 * `owner` (which gets a reference); fd >= 0 says that `data` is a file
 * mapping of fd, unwritten yet (payload copies are then preads, and the
 * pages mapped while the local headers are read are given back with
 * MADV_DONTNEED); errors name it "archive <what>", or "the archive" when
 * `what` is NULL (the caller names the file). `whole`: the caller will
 * read every entry (a copy load), so the mapping reads whole folios
 * (onnxio__map_whole) instead of each local header's page alone. */
onnxio_status onnxio__archive_open(const uint8_t *data, size_t size, onnxio_buffer *owner, int fd, const char *what,
                                   bool whole, onnxio_archive **out);
/* The bytes of an entry: in the archive's memory when stored (the CRC-32
 * checked when `verify_crc`), else inflated into a new buffer charged to
 * `budget` (CRC-32 checked). *owner is a new reference to what holds them. */
onnxio_status onnxio__archive_entry_bytes(onnxio_archive *a, const onnxio_archive_entry *e, bool verify_crc,
                                         onnxio__budget *budget, const uint8_t **data, onnxio_buffer **owner);
/* Records the CRC-32 of entry `e`'s bytes as they were read into the
 * archive's memory (onnxio__archive_read), so that a check of it compares
 * this instead of reading them again (onnxio__archive_entry_bytes, the
 * load pipeline); onnxio__archive_known_crc gives it back (false: none). */
void onnxio__archive_set_crc(onnxio_archive *a, const onnxio_archive_entry *e, uint32_t crc);
bool onnxio__archive_known_crc(const onnxio_archive *a, const onnxio_archive_entry *e, uint32_t *crc);
const onnxio_archive_entry *onnxio__archive_model(const onnxio_archive *a);
const onnxio_archive_entry *onnxio__archive_find_n(const onnxio_archive *a, const char *name, size_t n);
/* The block digest record of entry `e` (*value NULL: none), from the
 * digests onnxio_archive_set_digests gave, else from the archive's own
 * digests entry, read and parsed at the first call (its CRC-32 checked). */
onnxio_status onnxio__archive_record(onnxio_archive *a, const onnxio_archive_entry *e, onnxio__budget *budget,
                                     const char **value, size_t *size);
/* How errors name the archive ("archive <what>", "the archive"). */
const char *onnxio__archive_what(const onnxio_archive *a);
int onnxio__archive_fd(const onnxio_archive *a);
const uint8_t *onnxio__archive_data(const onnxio_archive *a);
onnxio_buffer *onnxio__archive_owner(const onnxio_archive *a);
/* One entry to write. */
typedef struct onnxio__zip_out {
    const char *name;     /* owned by the caller */
    size_t name_size;
    const uint8_t *src;   /* the bytes */
    uint64_t size;
    onnxio_buffer *keep;  /* a reference keeping src alive (the caller's) */
    uint64_t header;      /* file offset of the local header */
    uint64_t data;        /* file offset of the data */
    uint64_t pad;         /* bytes of the padding extra field (0: none) */
    uint32_t crc;
    uint32_t *crc_pieces; /* the caller's */
} onnxio__zip_out;
/* Places an entry whose local header may start at `at`: its data on the
 * next multiple of `align` (the local header's extra field carries the
 * padding). Returns the end of its data. */
uint64_t onnxio__zip_place(onnxio__zip_out *e, uint64_t at, uint64_t align);
/* Writes the local headers, the central directory (at cd_offset) and the
 * end records of `n` placed entries whose data is written; `extra_central`
 * raw central headers of other entries go first. *file_end: where the file
 * ends. */
onnxio_status onnxio__zip_write_directory(int fd, const char *what, onnxio__zip_out *e, size_t n,
                                         const uint8_t *extra_central, uint64_t extra_size, uint64_t extra_count,
                                         uint64_t cd_offset, uint64_t *file_end);
/* What replacing the model entry of an archive needs of its old
 * structure, copied out of it (onnxio__zip_replace_prepare) so that the
 * archive's mapping can go before the file is cut: Windows refuses to
 * shrink a file a view maps. */
typedef struct onnxio__zip_replace {
    uint8_t *kept;      /* the central headers of every entry but the model */
    uint64_t kept_size, kept_count;
    uint8_t *old_cd;    /* the old central directory, with room for end records */
    uint64_t old_cd_size, old_count;
    uint64_t old_size;  /* the archive's size */
} onnxio__zip_replace;

onnxio_status onnxio__zip_replace_prepare(const onnxio_archive *a, onnxio__zip_replace *r);
void onnxio__zip_replace_free(onnxio__zip_replace *r);
/* Replaces the model entry of the archive `r` was prepared from (the file
 * `fd`, locked by the caller) by the `model_size` serialized bytes at
 * `model`: appended with a new directory, the old one kept past the new
 * end until the file is cut there, so that the file is the old archive
 * or the new one whatever happens (fsync between the steps when
 * `fsync`). */
onnxio_status onnxio__zip_replace_model_entry(int fd, const char *path, const onnxio__zip_replace *r,
                                              const uint8_t *model, uint64_t model_size, bool fsync);

/* payload.c: marks an external tensor's payload as loaded, as every load
 * leaves it (raw_data present, data_location DEFAULT, no external_data). */
void onnxio__mark_loaded_external(onnxio_TensorProto *t);
/* The same for a payload read from an .onnxz entry: data_location is as
 * it was before the archive was written (the archive is onnxio's
 * container, not external data to the user): present (DEFAULT) when the
 * tensor's keys hold ONNXIO__KEY_DATA_LOCATION, the archive writer's mark
 * of a data_location that was present, else absent. */
void onnxio__mark_loaded_entry(onnxio_TensorProto *t);
/* The external_data key an archive's tensor carries, after location,
 * offset and length, when its data_location was present (DEFAULT) before
 * it became an entry (docs/onnxz.md, "The model entry"); its value is
 * "DEFAULT". Other readers ignore it, as they ignore keys they do not
 * know. */
#define ONNXIO__KEY_DATA_LOCATION "onnxio.data_location"

#endif
