/* Private declarations shared by the library's source files. */
#ifndef ONNXIO_INTERNAL_H
#define ONNXIO_INTERNAL_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "onnxio/onnxio.h"

#if defined(__GNUC__)
#define ONNXIO_API __attribute__((visibility("default")))
#define ONNXIO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define ONNXIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define ONNXIO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ONNXIO_ALWAYS_INLINE inline __attribute__((always_inline))
#define ONNXIO_PREFETCH(p) __builtin_prefetch(p)
#else
#define ONNXIO_ALWAYS_INLINE inline
#define ONNXIO_PREFETCH(p) ((void)0)
#define ONNXIO_API
#define ONNXIO_PRINTF(a, b)
#define ONNXIO_LIKELY(x) (x)
#define ONNXIO_UNLIKELY(x) (x)
#endif

/* Walks of a message tree (serialize, copy, compare) ask for the cache
 * lines of the element this many places ahead in a repeated message field:
 * the elements lie apart in the arena, and a walk that waits for each one's
 * lines runs at memory latency (200k-node model, serialize: 5.0 ms with the
 * next element asked for, 2.9 ms with the 32nd ahead). */
#define ONNXIO__PREFETCH_AHEAD 32
#define ONNXIO__PREFETCH_MESSAGE(T, m)                                         \
    do {                                                                       \
        for (size_t l_ = 0; l_ < sizeof(onnxio_##T); l_ += 64) ONNXIO_PREFETCH((const char *)(m) + l_); \
        /* a struct 16-byte aligned may end on one line more */                \
        ONNXIO_PREFETCH((const char *)(m) + sizeof(onnxio_##T) - 1);           \
    } while (0)


/* ---- os.c: the OS layer ---------------------------------------------- */

/* Every allocation and system call of the library goes through these
 * (docs/design.md, "The OS layer"); they keep the system's conventions
 * (NULL or -1 with errno). Nothing else in src/ calls malloc, open, write
 * and the like. */
void *onnxio__malloc(size_t n);
void *onnxio__calloc(size_t n, size_t size);
void *onnxio__realloc(void *p, size_t n);
void *onnxio__aligned_alloc(size_t alignment, size_t n);
void onnxio__free(void *p);
char *onnxio__strdup(const char *s);
char *onnxio__strndup(const char *s, size_t n);
/* zlib's z_stream zalloc / zfree. */
void *onnxio__zalloc(void *opaque, unsigned items, unsigned size);
void onnxio__zfree(void *opaque, void *p);

int onnxio__sys_openat(int dirfd, const char *path, int flags, mode_t mode); /* O_CLOEXEC added */
int onnxio__close(int fd); /* fd < 0: nothing */
int onnxio__sys_fstat(int fd, struct stat *st);
int onnxio__sys_fstatat(int dirfd, const char *path, struct stat *st, int flags);
ssize_t onnxio__sys_readlinkat(int dirfd, const char *path, char *buf, size_t size);
ssize_t onnxio__sys_pread(int fd, void *buf, size_t n, uint64_t offset);
ssize_t onnxio__sys_pwrite(int fd, const void *buf, size_t n, uint64_t offset);
ssize_t onnxio__sys_write(int fd, const void *buf, size_t n);
int onnxio__sys_fsync(int fd);
int onnxio__sys_ftruncate(int fd, uint64_t size);
int onnxio__sys_renameat(int olddir, const char *oldpath, int newdir, const char *newpath);
int onnxio__sys_unlinkat(int dirfd, const char *path, int flags);
int onnxio__sys_fchmod(int fd, mode_t mode);
int onnxio__sys_flock(int fd, int op); /* EINTR retried */
int onnxio__sys_dup(int fd); /* a new descriptor of the same file, close-on-exec */
int onnxio__sys_set_blocking(int fd); /* O_NONBLOCK cleared */
ssize_t onnxio__sys_getrandom(void *buf, size_t n); /* without blocking */
char *onnxio__sys_realpath(const char *path, char out[PATH_MAX]);
/* Calls fn(ctx, name) for each entry of the directory `dir_fd` (which
 * stays open); -1 (errno set) when it cannot be read. */
int onnxio__sys_each_entry(int dir_fd, void (*fn)(void *ctx, const char *name), void *ctx);
void *onnxio__sys_mmap(size_t size, int prot, int flags, int fd);
/* mmap with MAP_FIXED: maps [offset, offset + size) of fd at addr, over
 * what was there. On failure what was mapped there may be gone. */
void *onnxio__sys_mmap_at(void *addr, size_t size, int prot, int flags, int fd, uint64_t offset);
int onnxio__sys_munmap(void *p, size_t size);
/* How many bytes of [offset, offset + size) of `fd` are in the page
 * cache, in whole pages (cachestat(2), Linux 6.5): 0, or -1 with errno
 * (ENOSYS: the kernel cannot tell). */
int onnxio__sys_cached(int fd, uint64_t offset, uint64_t size, uint64_t *cached);
/* The memory the kernel could give without swapping (/proc/meminfo's
 * MemAvailable: free memory and the page cache it can reclaim), in bytes;
 * UINT64_MAX when it cannot say. Tests set onnxio__test_available_memory
 * (not 0) to be told that instead. */
uint64_t onnxio__sys_available_memory(void);
extern uint64_t onnxio__test_available_memory;
/* The memory free now, page cache not counted (sysinfo's freeram: a
 * system call, no file read), in bytes; 0 when it cannot say. At most
 * onnxio__sys_available_memory(); tests' value as there. */
uint64_t onnxio__sys_free_memory(void);
/* Drops the cached pages of [offset, offset + size) of `fd` from the page
 * cache (posix_fadvise POSIX_FADV_DONTNEED: advice; only clean pages no
 * process maps, whole pages inside the range). */
void onnxio__sys_drop_cached(int fd, uint64_t offset, uint64_t size);
/* A second open file description of the file `fd` has open, opened with
 * `flags` through /proc/self/fd (so that it is the same file even if its
 * name changed; checked by device and inode): the descriptor, or -1 with
 * errno (ENOSYS where there is no /proc/self/fd). */
int onnxio__sys_reopen(int fd, int flags);
/* A second descriptor of the file `fd` has open, opened read-only with
 * O_DIRECT (onnxio__sys_reopen), and the alignments direct reads of it
 * need (statx's STATX_DIOALIGN: the buffer address, and the file offset and length):
 * the descriptor, or -1 with errno when the system, the file system or
 * the file cannot read directly. */
int onnxio__sys_open_direct(int fd, uint32_t *mem_align, uint32_t *offset_align);
/* The address of `symbol` in the shared library `library` (dlopen with
 * RTLD_NOW | RTLD_LOCAL, never closed), or NULL when it cannot be had: the
 * library or symbol missing, or a statically linked program, which has no
 * dynamic linker to load it with. */
void *onnxio__sys_dlsym(const char *library, const char *symbol);
/* The size of a page of virtual memory (sysconf(_SC_PAGESIZE), looked up
 * once; 4096 where sysconf cannot say): what mmap and madvise align to. */
size_t onnxio__page_size(void);
/* Tells the kernel that a file mapping is read at random (`random`: a
 * fault reads its page and no read-ahead around it) or back to normal. It
 * only tunes paging, so a failure is ignored. */
void onnxio__map_random(const void *p, size_t size, bool random);
/* Tells the kernel that the whole of a file mapping is about to be read
 * (a copy load): a fault reads the 2 MiB page-cache folio around it, and
 * reads ahead (MADV_HUGEPAGE, back from random access). The payload reads
 * that follow then find large folios: a fault that reads only its page
 * leaves 4 KiB folios among them, and the kernel's read-ahead falls back
 * to 4 KiB folios around each (a cold 0.5 GiB single-file copy load took
 * 0.279 s instead of 0.208, `cat` 0.166). Only for files of at most
 * ONNXIO__WHOLE_MAX bytes: where tensors are far apart, the folios read
 * around their headers are islands that break the payload reads'
 * read-ahead in the same way, and a parse that waits for each 2 MiB read
 * starves the pool (a cold 3.5 GiB load: 2.3-2.9 s, 1.3-2.1 s without). */
void onnxio__map_whole(const void *p, size_t size);
#define ONNXIO__WHOLE_MAX ((uint64_t)1 << 30)
/* Asks the kernel to read a range of a file mapping into the page cache
 * now, without waiting for it (MADV_WILLNEED). Both act on the whole pages
 * that hold the range. */
void onnxio__map_willneed(const void *p, size_t size);
/* Faults in, writable, the whole pages inside [p, p + size) of memory
 * about to be written (MADV_POPULATE_WRITE, Linux 5.14): new memory is
 * zeroed here, on the calling thread, instead of inside the read that
 * fills it. It only moves work, so a failure is ignored. */
void onnxio__map_populate(void *p, size_t size);
/* Asks for huge pages behind [p, p + size) (MADV_HUGEPAGE; nothing where
 * the system has none). */
void onnxio__map_hugepage(void *p, size_t size);
/* Gives back the whole pages inside [p, p + size) (MADV_DONTNEED). Of a
 * private file mapping that was never written, the pages stay in the page
 * cache, and a later access maps them again with the file's bytes; of
 * private anonymous memory (onnxio__buffer_view), they are freed, and a
 * later access would see zeros. */
void onnxio__map_drop(const void *p, size_t size);
/* Gives back (onnxio__map_drop) every page of [start, end) outside the `n`
 * ranges [kept[2i], kept[2i + 1]), which are in address order and do not
 * overlap: what a buffer read whole holds beyond the payloads tensors
 * took from it (an archive's or a single file's, docs/memory.md). */
void onnxio__map_keep_only(const uint8_t *start, const uint8_t *end, uint8_t *const *kept, size_t n);

/* The status for an errno: NOT_FOUND (ENOENT, ENOTDIR), NO_MEMORY, else IO. */
onnxio_status onnxio__errno_status(int err);
/* Reads exactly `n` bytes at `offset` (EINTR and short reads retried);
 * `what` names the file in the error. */
onnxio_status onnxio__read_at(int fd, void *buf, uint64_t n, uint64_t offset, const char *what);
/* Opens `path` (relative to dirfd, following symlinks: a path the caller
 * trusts) with O_NONBLOCK, so that a FIFO never blocks, and refuses anything
 * but a regular file (ONNXIO_ERR_PATH_SPECIAL); *size is its size. */
onnxio_status onnxio__open_regular(int dirfd, const char *path, int flags, const char *what, int *fd, uint64_t *size);
/* "a directory", "a FIFO", ... for messages. */
const char *onnxio__file_type(mode_t mode);

/* Fault injection, for the tests (tests/c/test_faults.c): operations of the
 * kinds in `mask` (1 << onnxio__op) are counted from now; the nth counted
 * one fails (errno ENOMEM, ENOSPC or EIO as the kind suggests), or, with
 * `crash`, kills the process (SIGKILL) before it happens; with `persistent`
 * every later one fails too. nth 0 counts without failing; mask 0 stops. */
typedef enum onnxio__op {
    ONNXIO__OP_ALLOC,    /* malloc, calloc, realloc, aligned blocks, zlib's allocations */
    ONNXIO__OP_OPEN,     /* open, create */
    ONNXIO__OP_READ,     /* pread */
    ONNXIO__OP_WRITE,    /* write, pwrite */
    ONNXIO__OP_SYNC,     /* fsync */
    ONNXIO__OP_TRUNCATE, /* ftruncate */
    ONNXIO__OP_RENAME,   /* rename */
    ONNXIO__OP_UNLINK,   /* unlink */
    ONNXIO__OP_MAP,      /* mmap */
} onnxio__op;
void onnxio__fault_set(unsigned mask, long nth, bool crash, bool persistent);
/* Operations counted since onnxio__fault_set. */
long onnxio__fault_counted(void);
/* Whether the fault happened, and the kind of operation it hit. */
bool onnxio__fault_hit(void);
onnxio__op onnxio__fault_hit_op(void);
/* Blocks from onnxio__malloc & co. not freed yet (a leak check), counted
 * from onnxio__alloc_track(true) on: call it before the first allocation. */
long onnxio__alloc_live(void);
void onnxio__alloc_track(bool on);

/* Makes room for one more element in an onnxio__malloc'd array of `count`
 * of `capacity` elements of `elem` bytes (doubling, from 16); 0 when out of
 * memory (the array is unchanged). */
static inline int onnxio__grow(void **array, size_t *capacity, size_t count, size_t elem)
{
    if (count < *capacity) return 1;
    size_t cap = *capacity ? *capacity * 2 : 16;
    void *p = onnxio__realloc(*array, cap * elem);
    if (!p) return 0;
    *array = p;
    *capacity = cap;
    return 1;
}

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

/* ---- format.c ----------------------------------------------------------- */

/* For `size` bytes at `data` that onnxio_detect_format calls text: what
 * kind of text they look like (JSON, protobuf text format, ONNX's textual
 * syntax) and which call reads it, as one clause for an error's context;
 * NULL for anything else. */
const char *onnxio__text_hint(const void *data, size_t size);

/* The rule for a relative path inside a model's reach (an external data
 * location, an archive entry name): NULL when `p` (`n` bytes) keeps it;
 * else what is wrong ("is empty", "contains a NUL byte", "is an absolute
 * path", "has a '..' component"), and *status the status for that. */
const char *onnxio__path_problem(const char *p, size_t n, onnxio_status *status);

/* Refuses a payload length that is not what the tensor's data_type and dims
 * need (onnxio_tensor_raw_size) with ONNXIO_ERR_EXTERNAL_DATA; tensors
 * without a fixed size pass. `where` names the file or entry. */
/* Length of the well-formed UTF-8 sequence of a non-ASCII character at p
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or 0
 * (text.c; the text writers and readers). */
size_t onnxio__utf8_sequence(const unsigned char *p, size_t n);

onnxio_status onnxio__check_raw_size(const onnxio_TensorProto *t, uint64_t length, const char *where);
/* The raw_data bytes (`bytes` of them: onnxio_tensor_raw_size) of a
 * tensor whose values are in its typed field, as onnx's
 * numpy_helper.to_array reads them: float_data (FLOAT, COMPLEX64),
 * double_data (DOUBLE, COMPLEX128), int64_data (INT64), uint64_data
 * (UINT32, UINT64), int32_data for the rest; each value cut to its low
 * bytes, little-endian (the bits of the 16-bit floats, BOOL, 8-bit floats;
 * for 4- and 2-bit types each int32_data value is one packed byte; FLOAT6
 * values, one per element, are packed as raw_data packs them). Written
 * to `dst` (NULL: only checked). `status` (the caller's: ERR_SLICE,
 * ERR_SAFETENSORS), naming the tensor, when the field holds a number of
 * values other than the shape needs. Shared by the slice reader and the
 * safetensors writer. */
onnxio_status onnxio__typed_to_raw(const onnxio_TensorProto *t, uint64_t bytes, uint8_t *dst, onnxio_status status);

/* ---- options.c ---------------------------------------------------------- */

/* Reads the caller's option struct `src` (NULL: the defaults), whose first
 * member is its struct_size, into `dst` of `dst_size` bytes (this version's
 * layout), zero-filled where `src` is shorter: the "Options" rules of
 * onnxio.h. `what` names the struct in errors; `first_size` is what
 * struct_size 0 stands for, the struct's size in 0.2. */
onnxio_status onnxio__copy_options(void *dst, size_t dst_size, const void *src, const char *what, size_t first_size);
/* The size of each option struct in 0.2, what struct_size 0 stands for:
 * the members before the first one added since. A struct with no member
 * added yet is its sizeof; options.c pins every size (LP64), so that the
 * first member added to one fails the build until its macro names it. */
#define ONNXIO__SERIALIZE_OPTIONS_0_2_SIZE offsetof(onnxio_serialize_options, max_expansion)
#define ONNXIO__PARSE_OPTIONS_0_2_SIZE offsetof(onnxio_parse_options, cancel)
#define ONNXIO__TEXT_OPTIONS_0_2_SIZE offsetof(onnxio_text_options, max_expansion)
#define ONNXIO__SAFETENSORS_OPTIONS_0_2_SIZE sizeof(onnxio_safetensors_options)
#define ONNXIO__SLICE_OPTIONS_0_2_SIZE sizeof(onnxio_slice_options)
#define ONNXIO__CONSOLIDATE_OPTIONS_0_2_SIZE sizeof(onnxio_consolidate_options)
/* The public parse options read and checked (alignment a power of two at
 * most 1 GiB, no negative counts), with every default resolved: what the
 * library's load and parse paths use. */
onnxio_status onnxio__parse_config(const onnxio_parse_options *opts, onnxio_parse_options *cfg);
onnxio_status onnxio__serialize_config(const onnxio_serialize_options *opts, onnxio_serialize_options *cfg);
/* The serialize options of an archive save, read and checked: the
 * external data file options do not apply (ONNXIO_ERR_INVALID_ARGUMENT). */
onnxio_status onnxio__archive_save_config(const onnxio_serialize_options *opts, onnxio_serialize_options *cfg);
/* A requested depth limit (0: the default) capped at ONNXIO_MAX_DEPTH. */
int onnxio__depth_limit(int requested);

/* error.c: records the thread's last error and returns `status`. For an
 * ERR_IO or ERR_NOT_FOUND status whose message ends with strerror(errno),
 * errno is kept as the failure's (onnxio_last_errno); else none is. */
onnxio_status onnxio__fail(onnxio_status status, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
/* onnxio__fail with `err` kept as the failure's errno (0: none), for a
 * refusal the message words itself ("it is a directory": EISDIR). */
onnxio_status onnxio__fail_errno(onnxio_status status, int err, const char *fmt, ...) ONNXIO_PRINTF(3, 4);
/* Prefixes the current last error with more context ("loading x.onnx: ..."). */
onnxio_status onnxio__context(onnxio_status status, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
void onnxio__clear_error(void);

/* arena.c: payload spans whose owner reference the arena drops when freed. */
onnxio_status onnxio__arena_track_span(onnxio_arena *arena, onnxio_span *span);
/* The free part of an arena's head block; struct onnxio_arena starts with
 * it, so that the allocations of a parse are a compare and an add, inline. */
typedef struct onnxio__bump {
    char *cur, *end;
} onnxio__bump;
/* arena.c: a new block for what does not fit (NULL when out of memory or
 * past the arena's limit). */
void *onnxio__arena_grow(onnxio_arena *arena, size_t size);
/* `size` uninitialized bytes, 16-byte aligned. */
static inline void *onnxio__arena_bump(onnxio_arena *arena, size_t size)
{
    onnxio__bump *b = (onnxio__bump *)(void *)arena;
    uintptr_t p = ((uintptr_t)b->cur + 15) & ~(uintptr_t)15;
    if (ONNXIO_LIKELY(size && p <= (uintptr_t)b->end && size <= (uintptr_t)b->end - p)) {
        b->cur = (char *)(p + size);
        return (void *)p;
    }
    return onnxio__arena_grow(arena, size);
}
/* `size` (at least 1) uninitialized bytes, unaligned: string contents. */
static inline char *onnxio__arena_bytes(onnxio_arena *arena, size_t size)
{
    onnxio__bump *b = (onnxio__bump *)(void *)arena;
    if (ONNXIO_LIKELY(size <= (size_t)(b->end - b->cur))) {
        char *p = b->cur;
        b->cur += size;
        return p;
    }
    return onnxio__arena_grow(arena, size);
}
/* A NUL-terminated copy of `size` bytes at `data` in the arena (string
 * contents: unaligned); NULL when out of memory. */
static inline char *onnxio__arena_strndup(onnxio_arena *arena, const void *data, size_t size)
{
    char *p = onnxio__arena_bytes(arena, size + 1);
    if (!p) return NULL;
    const char *q = data;
    /* Names are short: up to 16 bytes are copied inline, as two
     * overlapping words, rather than by a call to memcpy. */
    if (size >= 8 && size <= 16) {
        uint64_t a, b;
        memcpy(&a, q, 8);
        memcpy(&b, q + size - 8, 8);
        memcpy(p, &a, 8);
        memcpy(p + size - 8, &b, 8);
    } else if (size >= 4 && size < 8) {
        uint32_t a, b;
        memcpy(&a, q, 4);
        memcpy(&b, q + size - 4, 4);
        memcpy(p, &a, 4);
        memcpy(p + size - 4, &b, 4);
    } else if (size && size < 4) {
        p[0] = q[0];
        p[size / 2] = q[size / 2];
        p[size - 1] = q[size - 1];
    } else if (size) {
        memcpy(p, data, size);
    }
    p[size] = '\0';
    return p;
}
/* `size` zeroed bytes. */
static inline void *onnxio__arena_zalloc(onnxio_arena *arena, size_t size)
{
    void *p = onnxio__arena_bump(arena, size);
    if (p) memset(p, 0, size);
    return p;
}
/* onnxio_message_new without its argument checks, inline for the codec:
 * a zeroed struct; a TensorProto's payload span is made known to the
 * arena. NULL when out of memory. */
static inline void *onnxio__message_new(onnxio_arena *arena, const onnxio_message_desc *desc)
{
    onnxio_message *m = onnxio__arena_zalloc(arena, desc->size);
    if (!m) return NULL;
    m->desc = desc;
    if (desc == &onnxio_desc_TensorProto && onnxio__arena_track_span(arena, &((onnxio_TensorProto *)m)->raw_data))
        return NULL;
    return m;
}
/* arena.c: while `limit` is not 0, the arena's blocks may not total more
 * than it; an allocation past it fails (NULL) and sets limit_hit, so that
 * the caller reports ONNXIO_ERR_EXPANSION rather than out of memory. */
void onnxio__arena_limit(onnxio_arena *arena, size_t limit);
/* A parse of `input` bytes is about to fill the arena: its next block is
 * sized for the tree such input makes (ARENA_PER_INPUT_BYTE times it,
 * within the block limits), so that a small parse takes one block. */
void onnxio__arena_expect(onnxio_arena *arena, size_t input);
bool onnxio__arena_limit_hit(const onnxio_arena *arena);

/* The expansion budget of one load (onnxio.h, "Expansion"): bytes read
 * (`input`) and bytes allocated for structure and payloads (`used`); used
 * may not pass ratio x input + ONNXIO_EXPANSION_ALLOWANCE. */
typedef struct onnxio__budget {
    uint64_t ratio;
    uint64_t input;
    uint64_t used;
} onnxio__budget;
/* The bytes the budget still allows (saturating). */
uint64_t onnxio__budget_left(const onnxio__budget *b);
/* Takes `n` bytes for `what`: ONNXIO_ERR_EXPANSION when they do not fit. */
onnxio_status onnxio__budget_take(onnxio__budget *b, uint64_t n, const char *what);

/* message.c */
static inline void *onnxio__member(const void *msg, const onnxio_field_desc *f)
{
    return (char *)msg + f->offset;
}
/* Generic view of every onnxio_*_array / onnxio_*_list. */
typedef struct onnxio__array {
    void *data;
    size_t size;
    size_t capacity;
} onnxio__array;
/* buffer.c: adds `n` references at once (a copy's deferred references). */
void onnxio__buffer_ref_n(onnxio_buffer *b, size_t n);
/* buffer.c: onnxio_buffer_new whose bytes start `phase` bytes past a page
 * boundary (mod 4096), for a block of at least 2 MiB that a pread fills
 * from a file offset with the same phase: the kernel then copies each page
 * of the page cache to one page, which a warm load of 64-byte-aligned
 * archive entries took 1.7% less time for. `phase`
 * is ignored (0) when it is not a multiple of `alignment`, or the block is
 * smaller (aligned_alloc). */
onnxio_buffer *onnxio__buffer_new_phase(size_t size, size_t alignment, size_t phase);
/* buffer.c: a buffer of the `size` bytes at `data` inside `parent`, memory
 * from onnxio_buffer_new (private, writable: onnxio_buffer_is_allocated is
 * 1), holding a reference to `parent`. With its last reference the whole
 * pages inside its bytes are given back (onnxio__map_drop), then its
 * reference to `parent`: a payload that is a view of a larger block frees
 * its memory when it goes, as a block of its own would. NULL when out of
 * memory. */
onnxio_buffer *onnxio__buffer_view(onnxio_buffer *parent, uint8_t *data, size_t size);
/* Makes room for `extra` more elements of `elem_size`; NULL when out of memory. */
void *onnxio__array_reserve(onnxio_arena *arena, onnxio__array *a, size_t elem_size, size_t extra);
/* Size in bytes of one element of a repeated field. */
size_t onnxio__elem_size(const onnxio_field_desc *f);
onnxio_status onnxio__append_unknown(onnxio_arena *arena, onnxio_message *m, const uint8_t *p, size_t n);
/* onnxio_message_clone with its status (NO_MEMORY or DEPTH). */
onnxio_status onnxio__clone(onnxio_arena *arena, const void *src, void **out);

/* pool.c: payload byte moves run on a few threads (docs/design.md "parallel"). */
typedef enum onnxio__job_kind {
    ONNXIO__JOB_COPY,   /* memcpy(dst, src, size) */
    ONNXIO__JOB_PREAD,  /* read `size` bytes at `offset` of `fd` into dst */
    ONNXIO__JOB_PWRITE, /* write `size` bytes from src at `offset` of `fd` */
    ONNXIO__JOB_CRC,    /* only the CRC-32 of src (crc must be set) */
    ONNXIO__JOB_MOVE,   /* memmove(dst, src, size), then rest (below): the ranges may overlap, so it is never cut in pieces (no crc) */
} onnxio__job_kind;
typedef struct onnxio__job {
    onnxio__job_kind kind;
    int fd;
    uint64_t offset;
    uint8_t *dst;
    const uint8_t *src;
    uint64_t size;
    const char *what; /* file or tensor named in errors; must outlive the pool */
    /* The buffer that dst points into, or NULL. A queued job holds a
     * reference to it until onnxio__pool_finish, because the payload it fills
     * can be replaced before it runs (raw_data, or a whole tensor, read twice
     * in one message: the last one wins). */
    onnxio_buffer *keep;
    /* When set, the CRC-32 (zlib's crc32) of the bytes the job moves is
     * computed as they move: the job is cut into ONNXIO__CRC_PIECE pieces
     * (also on a serial pool) and piece k stores its CRC in crc[k]; after
     * onnxio__pool_finish, onnxio__crc_join gives the whole CRC. */
    uint32_t *crc;
    /* Not payload bytes: a job the progress of the operation does not
     * count (CRC jobs are never counted). */
    bool not_payload;
    /* Set by the pool (onnxio__pool_read_direct): the direct descriptor
     * of fd that a read reads through when its range is not cached. */
    struct onnxio__pool_file *direct;
    /* Set by the pool (drop_behind in pool.c): a buffered read of the job
     * drops the pages it copied out from the page cache. */
    bool drop_behind;
    /* MOVE: then rest_size bytes from rest to rest_dst (after the move). */
    const uint8_t *rest;
    uint8_t *rest_dst;
    uint64_t rest_size;
} onnxio__job;
#define ONNXIO__CRC_PIECE (8u << 20)
/* Pieces (crc slots) of a CRC job of `size` bytes. */
static inline size_t onnxio__crc_pieces(uint64_t size)
{
    return size ? (size_t)((size - 1) / ONNXIO__CRC_PIECE + 1) : 1;
}
/* digest.c: checksums. SHA-1 digests (libcrypto's low-level functions:
 * no library initialization that could fail half-way), as 40 lowercase hex
 * digits and a NUL. */
typedef struct onnxio__sha1 {
    void *ctx;
} onnxio__sha1;
onnxio_status onnxio__sha1_begin(onnxio__sha1 *h);
onnxio_status onnxio__sha1_update(onnxio__sha1 *h, const void *data, uint64_t size);
/* Feeds `n` zero bytes (the padding between aligned payloads). */
onnxio_status onnxio__sha1_zeros(onnxio__sha1 *h, uint64_t n);
/* Finishes and frees the digest (also on failure). */
onnxio_status onnxio__sha1_end(onnxio__sha1 *h, char hex[41]);
void onnxio__sha1_abort(onnxio__sha1 *h);
onnxio_status onnxio__sha1_hex(const void *data, uint64_t size, char hex[41]);
/* The SHA-1 of `size` bytes at `offset` of `fd`, read in 1 MiB pieces. */
onnxio_status onnxio__sha1_fd(int fd, uint64_t offset, uint64_t size, const char *what, char hex[41]);
/* The CRC-32 of A || B from crc1 = CRC-32(A) and crc2 = CRC-32(B) of
 * size2 bytes (zlib's crc32_combine). It is linear: CRC-32(A || B) =
 * onnxio__crc_combine(CRC-32(A), 0, |B|) ^ CRC-32(B). */
uint32_t onnxio__crc_combine(uint32_t crc1, uint32_t crc2, uint64_t size2);
/* The CRC-32 of `size` bytes from the CRCs of their pieces. */
uint32_t onnxio__crc_join(const uint32_t *pieces, uint64_t size);
/* The CRC-32 of `size` bytes at `data`, continuing `crc` (0 to start):
 * ISA-L's when the system has it, else libdeflate's (digest.c). */
uint32_t onnxio__crc32(uint32_t crc, const void *data, uint64_t size);
/* libdeflate's, always (for the tests: both must agree with zlib). */
uint32_t onnxio__crc32_libdeflate(uint32_t crc, const void *data, uint64_t size);
/* "ISA-L" or "libdeflate": which one onnxio__crc32 uses. */
const char *onnxio__crc32_library(void);
typedef struct onnxio__pool onnxio__pool;
/* num_threads as in the options: 0 = one per core, 1 = serial. */
int onnxio__num_threads(int requested);
onnxio_status onnxio__pool_new(int num_threads, onnxio__pool **out);
/* Queues a job (a serial pool runs it now). The memory it touches must stay
 * valid until onnxio__pool_finish. After a failure, later jobs are dropped
 * and the failure is returned. */
onnxio_status onnxio__pool_add(onnxio__pool *pool, const onnxio__job *job);
/* Lets the pool read PREAD jobs' ranges that the page cache does not hold
 * with direct I/O (O_DIRECT): the device writes them into the job's
 * memory, with no page-cache copy in between (docs/design.md, "Cold
 * reads"). For copy loads: the bytes read this way are not left in the
 * page cache. Ranges mostly cached, and files or systems that cannot read
 * directly, are read as before. Call before the first job is added. */
void onnxio__pool_read_direct(onnxio__pool *pool, bool on);
/* The rule for "cold" (pool.c): fewer than half of the pages of the range
 * are in the page cache (false when the kernel cannot tell). A cold range
 * is read directly; a cold .onnxz archive is read whole
 * (onnxio__archive_read). */
bool onnxio__file_cold(int fd, uint64_t offset, uint64_t size);
/* Runs one job now on the calling thread (last error set on failure). */
onnxio_status onnxio__job_run(const onnxio__job *job);
/* Runs what is left (the calling thread helps), waits for every job, frees
 * the pool and returns the first failure. Must be called before the memory
 * of any queued job is freed, also on error paths. NULL is a no-op. */
onnxio_status onnxio__pool_finish(onnxio__pool *pool);

/* payload.c: placing loaded payloads (copy, borrow, callback) and filling
 * them through the pool. */
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
    /* The container entry the bytes come from (NULL: inline): with no_copy,
     * payloads loaded from the same entry, offset and size share one
     * buffer when they must be copied. */
    const void *share;
    uint64_t share_offset;
} onnxio__payload_src;
typedef struct onnxio__payloads onnxio__payloads;
/* `opts` resolved; `budget` (not NULL) is charged for every payload byte
 * the load allocates. */
onnxio_status onnxio__payloads_new(const onnxio_parse_options *opts, onnxio__pool *pool, onnxio__budget *budget,
                                   onnxio__payloads **out);
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

/* decode.c */
typedef struct onnxio__decode_config {
    onnxio_arena *arena;
    onnxio_buffer *owner;   /* keeps input alive in no_copy mode */
    const uint8_t *base;    /* start of the whole input (for error offsets) */
    bool skip_raw_data;
    int max_depth;
    onnxio__payloads *payloads; /* where raw_data goes */
    int fd;                 /* >= 0: the input is this whole file (read payloads with pread) */
    /* The input is a whole file mapping, set to random access during the
     * parse (the caller does it, and undoes it after): the parse reads its
     * own way ahead (decode.c, READ_AHEAD), not into the payloads it skips. */
    bool mapped;
    /* Set when a TensorProto with data_location EXTERNAL was read, so that
     * loading a model without external data skips the walk that looks for
     * it (NULL: not wanted). */
    bool *saw_external;
} onnxio__decode_config;
onnxio_status onnxio__decode(const onnxio__decode_config *cfg, onnxio_message *msg,
                             const uint8_t *data, size_t size);

/* encode.c: a destination for serialized bytes. */
typedef struct onnxio__sink {
    uint8_t *buf;        /* memory output: the whole destination; file output: a staging buffer */
    size_t pos;
    size_t cap;
    int fd;              /* -1 for memory output */
    uint64_t written;    /* file output: bytes of the file before buf (flushed or queued) */
    onnxio_status status;
    onnxio__pool *pool;  /* NULL: payloads are written in line */
    uint64_t threshold;  /* payloads at least this large become pool jobs */
    const char *what;    /* the file named in write errors */
    bool sequential;     /* a pipe or a terminal: write(2) in order, no offsets */
    /* One pass (onnxio_serialize_to): memory output without a size pass.
     * A sub-message's length is written where its cached size (the last
     * parse's or serialization's) says, and moved once the real one is
     * known if its varint is longer or shorter; `grow` makes room. */
    bool one_pass;
    int depth, max_depth;
    onnxio_grow_fn grow; /* NULL: a full destination is an error */
    void *grow_user;
    /* Streaming saves (file output, not sequential): a raw_data without its
     * bytes (data NULL, size > 0) is written as its tag and length, its
     * bytes left as a hole at file offset `at`, which defer records (NULL:
     * such a payload is an error, ONNXIO_ERR_MISSING_PAYLOAD). */
    onnxio_status (*defer)(void *user, const onnxio_TensorProto *t, uint64_t at);
    void *defer_user;
} onnxio__sink;
onnxio_status onnxio__encode(void *msg, onnxio__sink *sink);
/* The size pass with a nesting limit (0: the default; capped): ERR_DEPTH,
 * and *size ONNXIO_SIZE_TOO_DEEP, past it. */
onnxio_status onnxio__size_pass(void *msg, int max_depth, uint64_t *size);
/* onnxio_serialize with a nesting limit. */
onnxio_status onnxio__serialize(void *msg, int max_depth, onnxio_buffer **out);
onnxio_status onnxio__sink_flush(onnxio__sink *sink);

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
/* The window of a file mapping mapped from its own open file description
 * (file.c, onnxio__map_fd); tests set it (not 0) to make it smaller. */
extern size_t onnxio__test_map_window;
onnxio_status onnxio__write_all(int fd, const void *data, size_t size, const char *what);
/* The directory part of a path ("." when none), onnxio__malloc'd; the part
 * after the last '/'. */
char *onnxio__dirname(const char *path);
const char *onnxio__basename(const char *path);
char *onnxio__path_join(const char *dir, const char *name);

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

/* A tensor's name for messages ("" when it has none). */
static inline const char *onnxio__tensor_name(const onnxio_TensorProto *t)
{
    return t->name.data ? t->name.data : "";
}

/* A tensor whose payload is in external data (data_location EXTERNAL). */
static inline bool onnxio__is_external(const onnxio_TensorProto *t)
{
    return onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
           t->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL;
}

/* The fields of TensorProto that hold its values other than raw_data
 * (onnx-ml.proto: float_data, int32_data, string_data, int64_data,
 * double_data, uint64_data), in field-index form; ONNXIO__TYPED_FIELDS of
 * them. */
#define ONNXIO__TYPED_FIELDS 6
extern const unsigned onnxio__tensor_typed_fields[ONNXIO__TYPED_FIELDS];

/* A tensor holding values in one of those fields. */
static inline bool onnxio__has_typed_data(const onnxio_TensorProto *t)
{
    for (size_t i = 0; i < ONNXIO__TYPED_FIELDS; i++) {
        const onnxio_field_desc *f = &onnxio_desc_TensorProto.fields[onnxio__tensor_typed_fields[i]];
        if (((const onnxio__array *)onnxio__member(t, f))->size) return true;
    }
    return false;
}

/* save.c: the save pipeline. `cfg` resolved. */
onnxio_status onnxio__save_plain(void *msg, const char *path, const onnxio_serialize_options *cfg);
onnxio_status onnxio__save_external(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *cfg);
onnxio_status onnxio__save_archive(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *cfg);
/* File and entry names made from tensor names: a set compared with ASCII
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
/* Validates the archive held in `size` bytes at `data`, kept alive by
 * `owner` (which gets a reference); fd >= 0 says that `data` is a file
 * mapping of fd, unwritten yet (payload copies are then preads, and the
 * pages mapped while the local headers are read are given back with
 * MADV_DONTNEED); `what` names it in errors. `whole`: the caller will
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

/* message.c: calls fn(msg, parent, field) for every message of type
 * `target` in the tree under `root` (depth first, in field order), where
 * `parent`/`field` say where it was found (NULL for the root itself). */
typedef onnxio_status (*onnxio__visit_fn)(onnxio_message *msg, onnxio_message *parent,
                                          const onnxio_field_desc *field, void *ctx);
onnxio_status onnxio__visit(onnxio_message *root, const onnxio_message_desc *target,
                            onnxio__visit_fn fn, void *ctx);

/* progress.c: the progress of one load or save (onnxio_progress_fn). */
typedef struct onnxio__progress {
    onnxio_progress_fn fn;
    void *user;
    uint64_t total;        /* payload bytes of the operation */
    _Atomic uint64_t done; /* added to by any thread */
    uint64_t reported;     /* `done` of the last call */
    bool ready;            /* total is final: calls may begin */
    bool called, finished, cancelled;
} onnxio__progress;
/* The cancel poll of one load (onnxio_cancel_fn), made current for the
 * calling thread like the progress; `cancelled` is read by pool threads. */
typedef struct onnxio__cancel {
    onnxio_cancel_fn fn;
    void *user;
    atomic_bool cancelled;
} onnxio__cancel;
/* The calling thread's current cancel poll, or NULL. */
onnxio__cancel *onnxio__cancel_now(void);
/* Makes `c` (for poll `fn`; NULL: none) current until
 * onnxio__cancel_leave(saved). */
void onnxio__cancel_enter(onnxio__cancel *c, onnxio_cancel_fn fn, void *user, onnxio__cancel **saved);
void onnxio__cancel_leave(onnxio__cancel **saved);
/* On the calling thread: polls `c` (NULL: OK), ONNXIO_ERR_CANCELLED (with
 * the error set) once it has said to cancel. */
onnxio_status onnxio__cancel_poll(onnxio__cancel *c);
/* On any thread: whether `c` has been cancelled. */
bool onnxio__cancelled(onnxio__cancel *c);
/* The calling thread's current progress, or NULL (no callback). */
onnxio__progress *onnxio__progress_now(void);
/* Begins an operation with callback `fn` (NULL: nothing is made current,
 * nothing counted); onnxio__progress_leave(saved) ends it, on every path. */
void onnxio__progress_enter(onnxio__progress *p, onnxio_progress_fn fn, void *user, onnxio__progress **saved);
void onnxio__progress_leave(onnxio__progress **saved);
/* Adds `n` bytes to the total (before it is ready); NULL: nothing. */
void onnxio__progress_total(onnxio__progress *p, uint64_t n);
/* The total is final: calls may begin. */
void onnxio__progress_ready(onnxio__progress *p);
/* `n` more bytes are done (any thread); NULL: nothing. */
void onnxio__progress_add(onnxio__progress *p, uint64_t n);
/* On the calling thread: calls the callback when the total is ready and at
 * least ONNXIO_PROGRESS_STEP more bytes are done since the last call, or,
 * with `last`, once with done == total. ONNXIO_ERR_CANCELLED (last error
 * set) when the callback returns non-zero, and on every report after. */
onnxio_status onnxio__progress_report(onnxio__progress *p, bool last);

/* payload.c: marks an external tensor's payload as loaded, as every load
 * leaves it (raw_data present, data_location DEFAULT, no external_data). */
void onnxio__mark_loaded_external(onnxio_TensorProto *t);
/* The same for a payload read from an .onnxz entry: data_location is
 * cleared, as it was before the archive was written (the archive is
 * onnxio's container, not external data to the user). */
void onnxio__mark_loaded_entry(onnxio_TensorProto *t);

#endif
