/* The base layer's floor (docs/design.md, "Layers"): compiler macros,
 * errors (error.c) and the OS layer (os.c, with its two halves os_unix.c
 * and os_win.c): every allocation and system call of the library.
 * Included by every other private header. */
#ifndef ONNXIO_BASE_SYS_H
#define ONNXIO_BASE_SYS_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "onnxio/onnxio.h"

/* The flags and types of the OS layer's functions are POSIX's on every
 * system: the POSIX half (os_unix.c) takes the system's own; on Windows,
 * os_win.h gives them values that the Win32 half (os_win.c) reads, so
 * that nothing above src/base knows which half it runs on. */
#ifdef _WIN32
#include "base/os_win.h"
#define ONNXIO__OS_WINDOWS 1
#else
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>
#define ONNXIO__OS_WINDOWS 0
typedef sigset_t onnxio__signals;
#endif

/* Where the system cannot rename over a file in use, the Windows half
 * moves the old file aside first, to "<name>.onnxio-old-<16 hex>" beside
 * it (os_win.c, onnxio__sys_renameat); a save killed between that move
 * and the rename leaves it there, which the save's replay (txn.c) puts
 * back or removes. */
#define ONNXIO__ASIDE_INFIX ".onnxio-old-"
#define ONNXIO__ASIDE_HEX 16

/* The last path separator of `path`: '/', and on Windows '\\' too; NULL
 * when there is none. */
static inline const char *onnxio__last_separator(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (ONNXIO__OS_WINDOWS) {
        const char *back = strrchr(path, '\\');
        if (back && (!slash || back > slash)) slash = back;
    }
    return slash;
}

#if defined(_WIN32)
/* The DLL's exports: the API only (with no dllexport at all, the linker
 * would export every external symbol). */
#define ONNXIO_API __declspec(dllexport)
#elif defined(__GNUC__)
#define ONNXIO_API __attribute__((visibility("default")))
#else
#define ONNXIO_API
#endif
#if defined(__GNUC__) && defined(_WIN32)
/* mingw-w64's C99 printf (__USE_MINGW_ANSI_STDIO, cmake/mingw-w64.cmake). */
#define ONNXIO_PRINTF(a, b) __attribute__((format(gnu_printf, a, b)))
#elif defined(__GNUC__)
#define ONNXIO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#endif
#if defined(__GNUC__)
#define ONNXIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define ONNXIO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ONNXIO_ALWAYS_INLINE inline __attribute__((always_inline))
#define ONNXIO_PREFETCH(p) __builtin_prefetch(p)
#else
#define ONNXIO_ALWAYS_INLINE inline
#define ONNXIO_PREFETCH(p) ((void)0)
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


/* ---- os.c, os_unix.c, os_win.c: the OS layer -------------------------- */

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

int onnxio__sys_openat(int dirfd, const char *path, int flags, mode_t mode); /* O_CLOEXEC added */
int onnxio__close(int fd); /* fd < 0: nothing */
int onnxio__sys_fstat(int fd, struct stat *st);
int onnxio__sys_fstatat(int dirfd, const char *path, struct stat *st, int flags);
ssize_t onnxio__sys_readlinkat(int dirfd, const char *path, char *buf, size_t size);
ssize_t onnxio__sys_pread(int fd, void *buf, size_t n, uint64_t offset);
ssize_t onnxio__sys_pwrite(int fd, const void *buf, size_t n, uint64_t offset);
ssize_t onnxio__sys_write(int fd, const void *buf, size_t n);
onnxio_status onnxio__write_all(int fd, const void *data, size_t size, const char *what);
int onnxio__sys_fsync(int fd);
int onnxio__sys_ftruncate(int fd, uint64_t size);
int onnxio__sys_renameat(int olddir, const char *oldpath, int newdir, const char *newpath);
int onnxio__sys_unlinkat(int dirfd, const char *path, int flags);
int onnxio__sys_fchmod(int fd, mode_t mode);
/* faccessat: whether `path` under dirfd may be accessed for `mode`
 * (W_OK, ...); 0, or -1 with errno (EACCES). On Windows, W_OK is refused
 * for a read-only file. */
int onnxio__sys_faccessat(int dirfd, const char *path, int mode, int flags);
int onnxio__sys_flock(int fd, int op); /* EINTR retried */
int onnxio__sys_dup(int fd); /* a new descriptor of the same file, close-on-exec */
int onnxio__sys_set_blocking(int fd); /* O_NONBLOCK cleared */
ssize_t onnxio__sys_getrandom(void *buf, size_t n); /* without blocking */
char *onnxio__sys_realpath(const char *path, char out[PATH_MAX]);
/* The absolute path of what `fd` has open (a directory), as
 * onnxio__sys_realpath writes paths; an onnxio__malloc'd string, or NULL
 * when the system cannot say (no /proc/self/fd). */
char *onnxio__sys_fd_path(int fd);
/* The user whose files and journals a save counts as its own (geteuid;
 * 0 on Windows, where os_win.c reports every file's st_uid as 0: a file's
 * owner there is a SID, and the directory's ACL is what keeps other users'
 * files out). */
unsigned long onnxio__sys_uid(void);
/* The processors online (sysconf(_SC_NPROCESSORS_ONLN)); 1 when unknown. */
unsigned onnxio__sys_cpu_count(void);
/* Blocks every signal on the calling thread, the mask before in *old
 * (pthread_sigmask); restore puts it back. On Windows nothing: a console
 * control handler runs on a thread of its own, never inside the library's
 * code on another thread. */
void onnxio__sys_signals_block(onnxio__signals *old);
void onnxio__sys_signals_restore(const onnxio__signals *old);
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

/* fail_now of the fault injection (below), for the two halves of the OS
 * layer: counts one operation of kind `op`; true when it must fail now
 * (errno is then `err`). */
bool onnxio__fail_now(int op, int err);

/* Fault injection, for the tests (tests/c/test_faults.c): operations of the
 * kinds in `mask` (1 << onnxio__op) are counted from now; the nth counted
 * one fails (errno ENOMEM, ENOSPC or EIO as the kind suggests), or, with
 * `crash`, kills the process (SIGKILL) before it happens; with `persistent`
 * every later one fails too. nth 0 counts without failing; mask 0 stops. */
typedef enum onnxio__op {
    ONNXIO__OP_ALLOC,    /* malloc, calloc, realloc, aligned blocks, libdeflate's decompressors */
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
/* `n` blocks put aside for reuse (n > 0; arena.c's spare and cached
 * blocks) or taken back (n < 0): a kept block is not a leak. */
void onnxio__alloc_kept(long n);

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

/* ---- error.c ---------------------------------------------------------- */

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

#endif
