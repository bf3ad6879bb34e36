/* The OS layer (docs/design.md, "The OS layer"): every allocation and every
 * system call the library makes goes through the functions of this file
 * and of its two halves, os_unix.c (POSIX: Linux, macOS) and os_win.c
 * (Win32), as SQLite's core reaches files only through its VFS (whose
 * os_unix.c and os_win.c this split follows). One place to see what
 * onnxio asks of the system, and one place where the tests make any of it
 * fail (fault injection, as SQLite's test_malloc.c does) or stop the process
 * at that instant (crash points for the save protocol).
 *
 * This file holds what both halves use: the fault injection, the
 * allocator's wrappers and the helpers that turn failures into statuses;
 * os_files.c, the file helpers built on either half.
 * The functions keep the system's conventions (-1 or NULL with errno); the
 * files layer turns failures into statuses and messages. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#ifdef _WIN32
#include <malloc.h>
#endif

/* ---- fault injection -------------------------------------------------- */

static struct {
    atomic_uint mask;       /* operations that count (1 << onnxio__op) */
    atomic_long countdown;  /* counted operations left before the fault; 0: off */
    atomic_long counted;    /* counted operations so far */
    atomic_long live;       /* allocations not freed yet, while tracking */
    atomic_bool tracking;   /* count live allocations (tests only: an atomic per malloc costs) */
    atomic_int crash;       /* the fault kills the process instead of failing */
    atomic_int persistent;  /* every counted operation after the first fault fails too */
    atomic_int hit;         /* a fault happened */
    atomic_int hit_op;      /* the kind of operation it hit */
} fault;

void onnxio__fault_set(unsigned mask, long nth, bool crash, bool persistent)
{
    atomic_store(&fault.countdown, 0);
    atomic_store(&fault.counted, 0);
    atomic_store(&fault.hit, 0);
    atomic_store(&fault.crash, crash);
    atomic_store(&fault.persistent, persistent);
    atomic_store(&fault.countdown, nth);
    atomic_store(&fault.mask, mask);
}

long onnxio__fault_counted(void) { return atomic_load(&fault.counted); }
bool onnxio__fault_hit(void) { return atomic_load(&fault.hit) != 0; }
onnxio__op onnxio__fault_hit_op(void) { return (onnxio__op)atomic_load(&fault.hit_op); }
long onnxio__alloc_live(void) { return atomic_load(&fault.live); }
void onnxio__alloc_track(bool on) { atomic_store(&fault.tracking, on); }

static inline void live_add(long n)
{
    if (ONNXIO_UNLIKELY(atomic_load_explicit(&fault.tracking, memory_order_relaxed)))
        atomic_fetch_add_explicit(&fault.live, n, memory_order_relaxed);
}

void onnxio__alloc_kept(long n) { live_add(-n); }

/* Counts one operation of kind `op`; true when it must fail now (errno is
 * then set to `err`). */
bool onnxio__fail_now(int op, int err)
{
    unsigned mask = atomic_load_explicit(&fault.mask, memory_order_relaxed);
    if (ONNXIO_LIKELY(!(mask & (1u << op)))) return false;
    long n = atomic_fetch_add(&fault.counted, 1) + 1;
    long at = atomic_load(&fault.countdown);
    if (at <= 0 || n < at) return false;
    if (n > at && !atomic_load(&fault.persistent)) return false;
    atomic_store(&fault.hit, 1);
    atomic_store(&fault.hit_op, (int)op);
    if (atomic_load(&fault.crash)) {
        /* As a kill -9 would: no atexit handlers, no flushing. */
#ifdef SIGKILL
        raise(SIGKILL);
#endif
        _exit(137);
    }
    errno = err;
    return true;
}

/* ---- memory ------------------------------------------------------------- */

/* Windows has no posix_memalign, and a block of _aligned_malloc must go
 * back through _aligned_free: there every block is an _aligned_ one, so
 * that onnxio__free takes any of them. */
#ifdef _WIN32
#define malloc(n) _aligned_malloc((n), 16)
#define realloc(p, n) _aligned_realloc((p), (n), 16)
#define free(p) _aligned_free(p)
static void *win_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = _aligned_malloc(n * size, 16);
    if (p) memset(p, 0, n * size);
    return p;
}
#define calloc(n, size) win_calloc((n), (size))
#endif

void *onnxio__malloc(size_t n)
{
    if (onnxio__fail_now(ONNXIO__OP_ALLOC, ENOMEM)) return NULL;
    void *p = malloc(n ? n : 1);
    if (p) live_add(1);
    return p;
}

/* glibc's calloc (2.36) bypasses its per-thread cache (tcache), so a small
 * zeroed allocation made on every call (a parse's pool and payload state)
 * went through _int_malloc each time: those come from malloc and are
 * cleared here. */
#define SMALL_ZEROED 1024u

void *onnxio__calloc(size_t n, size_t size)
{
    if (onnxio__fail_now(ONNXIO__OP_ALLOC, ENOMEM)) return NULL;
    void *p;
    if (n && size && n <= SMALL_ZEROED / size) {
        if ((p = malloc(n * size))) {
#if defined(__GNUC__)
            __asm__ volatile("" : : "r"(p) : "memory"); /* else GCC makes the pair a calloc again */
#endif
            memset(p, 0, n * size);
        }
    } else {
        p = calloc(n ? n : 1, size ? size : 1);
    }
    if (p) live_add(1);
    return p;
}

void *onnxio__realloc(void *old, size_t n)
{
    if (onnxio__fail_now(ONNXIO__OP_ALLOC, ENOMEM)) return NULL;
    void *p = realloc(old, n ? n : 1);
    if (p && !old) live_add(1);
    return p;
}

void *onnxio__aligned_alloc(size_t alignment, size_t n)
{
    if (onnxio__fail_now(ONNXIO__OP_ALLOC, ENOMEM)) return NULL;
    void *p = NULL;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
#ifdef _WIN32
    if (!(p = _aligned_malloc(n ? n : 1, alignment))) return NULL;
#else
    if (posix_memalign(&p, alignment, n ? n : 1) != 0) return NULL;
#endif
    live_add(1);
    return p;
}

void onnxio__free(void *p)
{
    if (!p) return;
    live_add(-1);
    free(p);
}
#ifdef _WIN32
#undef malloc
#undef realloc
#undef free
#undef calloc
#endif

char *onnxio__strdup(const char *s)
{
    return onnxio__strndup(s, strlen(s));
}

char *onnxio__strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = onnxio__malloc(len + 1);
    if (!p) return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

/* ---- what both halves share -------------------------------------------- */

uint64_t onnxio__test_available_memory;

/* ---- status-level helpers (the file helpers over the halves: os_files.c) --- */

onnxio_status onnxio__errno_status(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR: return ONNXIO_ERR_NOT_FOUND;
    case ENOMEM: return ONNXIO_ERR_NO_MEMORY;
    default: return ONNXIO_ERR_IO;
    }
}

const char *onnxio__file_type(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISREG(mode)) return "a regular file";
    return "not a regular file";
}
