/* The POSIX half of the OS layer (os.c says what the layer is): Linux
 * first, with what macOS lacks falling back. Its Win32 twin is os_win.c;
 * both define the same functions of sys.h. */
#ifdef _WIN32
typedef int onnxio__os_unix_empty; /* ISO C: no empty translation unit */
#else
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#if !defined(__APPLE__)
#include <sys/random.h>
#endif
#include <sys/stat.h>
#ifdef __linux__
#include <sys/sysinfo.h>
#endif
#include <unistd.h>

#include "base/sys.h"

#define fail_now(op, err) onnxio__fail_now((op), (err))

/* ---- files --------------------------------------------------------------- */

int onnxio__sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    if (fail_now(ONNXIO__OP_OPEN, (flags & O_CREAT) ? ENOSPC : EIO)) return -1;
    return openat(dirfd, path, flags | O_CLOEXEC, mode);
}

int onnxio__close(int fd)
{
    return fd >= 0 ? close(fd) : 0;
}

int onnxio__sys_fstat(int fd, struct stat *st)
{
    return fstat(fd, st);
}

int onnxio__sys_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    return fstatat(dirfd, path, st, flags);
}

ssize_t onnxio__sys_readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
    return readlinkat(dirfd, path, buf, size);
}

int onnxio__sys_dup(int fd)
{
    if (fail_now(ONNXIO__OP_OPEN, EMFILE)) return -1;
    return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

int onnxio__sys_set_blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

ssize_t onnxio__sys_getrandom(void *buf, size_t n)
{
#if defined(__APPLE__) /* no getrandom; arc4random_buf never fails nor blocks */
    arc4random_buf(buf, n);
    return (ssize_t)n;
#else
    return getrandom(buf, n, GRND_NONBLOCK);
#endif
}

char *onnxio__sys_realpath(const char *path, char out[PATH_MAX])
{
    if (fail_now(ONNXIO__OP_OPEN, EIO)) return NULL;
    return realpath(path, out);
}

int onnxio__sys_each_entry(int dir_fd, void (*fn)(void *ctx, const char *name), void *ctx)
{
    int fd = onnxio__sys_dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        onnxio__close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) fn(ctx, e->d_name);
    closedir(d);
    return 0;
}

ssize_t onnxio__sys_pread(int fd, void *buf, size_t n, uint64_t offset)
{
    if (fail_now(ONNXIO__OP_READ, EIO)) return -1;
    return pread(fd, buf, n, (off_t)offset);
}

ssize_t onnxio__sys_pwrite(int fd, const void *buf, size_t n, uint64_t offset)
{
    if (fail_now(ONNXIO__OP_WRITE, ENOSPC)) return -1;
    return pwrite(fd, buf, n, (off_t)offset);
}

ssize_t onnxio__sys_write(int fd, const void *buf, size_t n)
{
    if (fail_now(ONNXIO__OP_WRITE, ENOSPC)) return -1;
    return write(fd, buf, n);
}

int onnxio__sys_fsync(int fd)
{
    if (fail_now(ONNXIO__OP_SYNC, EIO)) return -1;
    return fsync(fd);
}

int onnxio__sys_ftruncate(int fd, uint64_t size)
{
    if (fail_now(ONNXIO__OP_TRUNCATE, ENOSPC)) return -1;
    return ftruncate(fd, (off_t)size);
}

int onnxio__sys_renameat(int olddir, const char *oldpath, int newdir, const char *newpath)
{
    if (fail_now(ONNXIO__OP_RENAME, EIO)) return -1;
    return renameat(olddir, oldpath, newdir, newpath);
}

int onnxio__sys_unlinkat(int dirfd, const char *path, int flags)
{
    if (fail_now(ONNXIO__OP_UNLINK, EIO)) return -1;
    return unlinkat(dirfd, path, flags);
}

int onnxio__sys_faccessat(int dirfd, const char *path, int mode, int flags)
{
    return faccessat(dirfd, path, mode, flags);
}

int onnxio__sys_fchmod(int fd, mode_t mode)
{
    return fchmod(fd, mode);
}

int onnxio__sys_flock(int fd, int op)
{
    int r;
    do r = flock(fd, op);
    while (r != 0 && errno == EINTR);
    return r;
}

void *onnxio__sys_mmap(size_t size, int prot, int flags, int fd)
{
    if (fail_now(ONNXIO__OP_MAP, ENOMEM)) return MAP_FAILED;
    return mmap(NULL, size, prot, flags, fd, 0);
}

void *onnxio__sys_mmap_at(void *addr, size_t size, int prot, int flags, int fd, uint64_t offset)
{
    if (fail_now(ONNXIO__OP_MAP, ENOMEM)) return MAP_FAILED;
    if (offset > (uint64_t)INT64_MAX) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    return mmap(addr, size, prot, flags | MAP_FIXED, fd, (off_t)offset);
}

int onnxio__sys_munmap(void *p, size_t size)
{
    return munmap(p, size);
}

/* cachestat(2) (Linux 6.5): the page-cache state of a range of a file.
 * glibc has no wrapper; the number is the same on every architecture. */
#ifdef __linux__
#include <sys/syscall.h>
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
struct onnxio__cachestat_range {
    uint64_t off, len;
};
struct onnxio__cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};
#endif

int onnxio__sys_cached(int fd, uint64_t offset, uint64_t size, uint64_t *cached)
{
#ifdef __linux__
    struct onnxio__cachestat_range r = {offset, size};
    struct onnxio__cachestat cs;
    if (syscall(SYS_cachestat, fd, &r, &cs, 0) != 0) return -1;
    *cached = cs.nr_cache * (uint64_t)onnxio__page_size();
    return 0;
#else
    (void)fd, (void)offset, (void)size, (void)cached;
    errno = ENOSYS;
    return -1;
#endif
}

uint64_t onnxio__sys_available_memory(void)
{
    if (onnxio__test_available_memory) return onnxio__test_available_memory;
    uint64_t kib = UINT64_MAX;
#ifdef __linux__
    /* Not through the wrappers above: what the fault injection counts is
     * the operation's own I/O, and this read changes nothing if it fails. */
    int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return UINT64_MAX;
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (n <= 0) return UINT64_MAX;
    buf[n] = 0;
    const char *at = strstr(buf, "MemAvailable:");
    if (at) {
        char *end;
        unsigned long long v = strtoull(at + 13, &end, 10);
        if (end > at + 13) kib = v;
    }
#endif
    return kib == UINT64_MAX || kib > UINT64_MAX / 1024 ? UINT64_MAX : kib * 1024;
}

uint64_t onnxio__sys_free_memory(void)
{
    if (onnxio__test_available_memory) return onnxio__test_available_memory;
#ifdef __linux__
    struct sysinfo si;
    if (sysinfo(&si) == 0) return (uint64_t)si.freeram * (si.mem_unit ? si.mem_unit : 1);
#endif
    return 0;
}

void onnxio__sys_drop_cached(int fd, uint64_t offset, uint64_t size)
{
#if defined(POSIX_FADV_DONTNEED)
    if (offset <= INT64_MAX && size <= INT64_MAX - offset) (void)posix_fadvise(fd, (off_t)offset, (off_t)size, POSIX_FADV_DONTNEED);
#else
    (void)fd, (void)offset, (void)size;
#endif
}

int onnxio__sys_reopen(int fd, int flags)
{
#ifdef __linux__
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int rfd = onnxio__sys_openat(AT_FDCWD, path, flags | O_NOCTTY, 0);
    if (rfd < 0) return -1;
    /* The same file: the link names what fd has open, whatever its name
     * is now; a /proc that is not the kernel's could name another. */
    struct stat a, b;
    if (fstat(fd, &a) != 0 || fstat(rfd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        close(rfd);
        errno = EINVAL;
        return -1;
    }
    return rfd;
#else
    (void)fd, (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

int onnxio__sys_open_direct(int fd, uint32_t *mem_align, uint32_t *offset_align)
{
#if defined(__linux__) && defined(O_DIRECT) && defined(STATX_DIOALIGN)
    int dfd = onnxio__sys_reopen(fd, O_RDONLY | O_DIRECT | O_NONBLOCK);
    if (dfd < 0) return -1;
    struct statx sx;
    /* Direct I/O alignment known: a file system that cannot say refuses
     * nothing at open but may fail the reads. */
    if (statx(dfd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) != 0 || !(sx.stx_mask & STATX_DIOALIGN) ||
        !sx.stx_dio_mem_align || !sx.stx_dio_offset_align) {
        close(dfd);
        errno = EINVAL;
        return -1;
    }
    *mem_align = sx.stx_dio_mem_align;
    *offset_align = sx.stx_dio_offset_align;
    return dfd;
#else
    (void)fd, (void)mem_align, (void)offset_align;
    errno = ENOSYS;
    return -1;
#endif
}

/* Set by the linker in a dynamically linked program; 0 in a static one. */
extern const char _DYNAMIC[] __attribute__((weak));
/* Weak, so that a static program that does not link them itself gets no
 * dlopen (and no linker warning about it): they are then NULL. */
#pragma weak dlopen
#pragma weak dlsym

void *onnxio__sys_dlsym(const char *library, const char *symbol)
{
    if (!_DYNAMIC || !dlopen || !dlsym) return NULL;
    void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    return h ? dlsym(h, symbol) : NULL;
}

size_t onnxio__page_size(void)
{
    static _Atomic size_t page;
    size_t n = atomic_load_explicit(&page, memory_order_relaxed);
    if (!n) {
        long v = sysconf(_SC_PAGESIZE);
        n = v > 0 ? (size_t)v : 4096;
        atomic_store_explicit(&page, n, memory_order_relaxed);
    }
    return n;
}

/* madvise on the pages that hold [p, p + size). */
static void advise(const void *p, size_t size, int advice)
{
    if (!p || !size) return;
    uintptr_t mask = (uintptr_t)onnxio__page_size() - 1;
    uintptr_t start = (uintptr_t)p & ~mask;
    (void)madvise((void *)start, size + ((uintptr_t)p - start), advice);
}

void onnxio__map_random(const void *p, size_t size, bool random)
{
    advise(p, size, random ? MADV_RANDOM : MADV_NORMAL);
}

void onnxio__map_whole(const void *p, size_t size)
{
    advise(p, size, MADV_NORMAL);
#ifdef MADV_HUGEPAGE
    advise(p, size, MADV_HUGEPAGE);
#endif
}

/* madvise on the whole pages inside [p, p + size). */
static void advise_inside(const void *p, size_t size, int advice)
{
    uintptr_t mask = (uintptr_t)onnxio__page_size() - 1;
    uintptr_t start = ((uintptr_t)p + mask) & ~mask;
    uintptr_t end = ((uintptr_t)p + size) & ~mask;
    if (p && end > start) (void)madvise((void *)start, end - start, advice);
}

void onnxio__map_drop(const void *p, size_t size)
{
    advise_inside(p, size, MADV_DONTNEED);
}

void onnxio__map_hugepage(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE);
#else
    (void)p, (void)size;
#endif
}

void onnxio__map_populate(void *p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    advise_inside(p, size, MADV_POPULATE_WRITE);
#else
    (void)p, (void)size;
#endif
}

void onnxio__map_willneed(const void *p, size_t size)
{
    advise(p, size, MADV_WILLNEED);
}

char *onnxio__sys_fd_path(int fd)
{
    char proc[64], buf[PATH_MAX];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = onnxio__sys_readlinkat(AT_FDCWD, proc, buf, sizeof buf - 1);
    if (n <= 0 || buf[0] != '/') return NULL;
    buf[n] = '\0';
    return onnxio__strdup(buf);
}

unsigned long onnxio__sys_uid(void) { return (unsigned long)geteuid(); }

unsigned onnxio__sys_cpu_count(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (unsigned)c : 1;
}

void onnxio__sys_signals_block(onnxio__signals *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
}

void onnxio__sys_signals_restore(const onnxio__signals *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

#endif
