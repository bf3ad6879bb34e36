/* Files: memory-mapped reading and atomic writing (docs/design.md "Files"). A
 * save writes a temporary file in the target directory, fsyncs it and
 * renames it over the target, so a failed save never damages a good file. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static onnxio_status io_error(int err, const char *what, const char *path)
{
    return onnxio__fail(err == ENOENT ? ONNXIO_ERR_NOT_FOUND : err == ENOMEM ? ONNXIO_ERR_NO_MEMORY : ONNXIO_ERR_IO,
                        "%s %s: %s", what, path, strerror(err));
}

static void release_mapping(void *ctx, void *data, size_t size)
{
    (void)ctx;
    if (size) munmap(data, size);
}

onnxio_status onnxio__map_file(const char *path, onnxio_buffer **out, int *fd_out)
{
    *out = NULL;
    if (fd_out) *fd_out = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io_error(errno, "cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return io_error(err, "cannot stat", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return onnxio__fail(ONNXIO_ERR_IO, "%s is not a regular file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "%s is too large to map", path);
    }
    size_t size = (size_t)st.st_size;
    void *data = NULL;
    if (size) {
        /* Private and writable: a caller that edits a borrowed payload gets
         * its own copy of that page, never a change to the file. */
        data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            int err = errno;
            close(fd);
            return io_error(err, "cannot map", path);
        }
    }
    onnxio_buffer *b = onnxio_buffer_wrap(data, size, release_mapping, NULL);
    if (!b) {
        close(fd);
        release_mapping(NULL, data, size);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    if (fd_out) *fd_out = fd;
    else close(fd);
    *out = b;
    return ONNXIO_OK;
}

onnxio_status onnxio__write_all(int fd, const void *data, size_t size, const char *what)
{
    const uint8_t *p = data;
    while (size) {
        ssize_t n = write(fd, p, size > (1u << 30) ? (1u << 30) : size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return onnxio__fail(errno == ENOSPC ? ONNXIO_ERR_IO : ONNXIO_ERR_IO, "cannot write %s: %s", what, strerror(errno));
        }
        p += n;
        size -= (size_t)n;
    }
    return ONNXIO_OK;
}

char *onnxio__dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return onnxio__strdup(".");
    if (slash == path) return onnxio__strdup("/");
    return onnxio__strndup(path, (size_t)(slash - path));
}

char *onnxio__path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = onnxio__malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t n = a;
    if (a && dir[a - 1] != '/') p[n++] = '/';
    memcpy(p + n, name, b + 1);
    return p;
}

/* ---- temporary files, for onnxio_remove_temporary_files ------------ */

/* Every temporary file a save is writing, in a list a signal handler can
 * walk: nodes are published with one atomic store after they are complete,
 * and unlinked from the list (under a lock, against other threads) before
 * they are freed. A handler runs on a thread that is not inside a list
 * change of its own (onnxio's pool threads block signals). */
typedef struct temp_node {
    _Atomic(struct temp_node *) next;
    char *path;
} temp_node;
static _Atomic(temp_node *) temps;
static pthread_mutex_t temps_lock = PTHREAD_MUTEX_INITIALIZER;

static void *temp_register(const char *path)
{
    temp_node *n = onnxio__malloc(sizeof *n);
    if (!n) return NULL;
    if (!(n->path = onnxio__strdup(path))) {
        onnxio__free(n);
        return NULL;
    }
    pthread_mutex_lock(&temps_lock);
    atomic_store(&n->next, atomic_load(&temps));
    atomic_store(&temps, n);
    pthread_mutex_unlock(&temps_lock);
    return n;
}

static void temp_forget(void *node)
{
    temp_node *n = node;
    if (!n) return;
    pthread_mutex_lock(&temps_lock);
    _Atomic(temp_node *) *link = &temps;
    for (temp_node *p = atomic_load(link); p; link = &p->next, p = atomic_load(link))
        if (p == n) {
            atomic_store(link, atomic_load(&n->next));
            break;
        }
    pthread_mutex_unlock(&temps_lock);
    onnxio__free(n->path);
    onnxio__free(n);
}

ONNXIO_API void onnxio_remove_temporary_files(void)
{
    int saved = errno;
    for (temp_node *n = atomic_load(&temps); n; n = atomic_load(&n->next)) unlink(n->path);
    errno = saved;
}

onnxio_status onnxio__atomic_open(const char *path, onnxio__atomic_file *f)
{
    f->fd = -1;
    f->tmp_path = NULL;
    f->registered = NULL;
    f->final_path = onnxio__strdup(path);
    char *dir = onnxio__dirname(path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!f->final_path || !dir) {
        onnxio__free(dir);
        onnxio__free(f->final_path);
        f->final_path = NULL;
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    size_t n = strlen(dir) + strlen(base) + 32;
    f->tmp_path = onnxio__malloc(n);
    if (!f->tmp_path) {
        onnxio__free(dir);
        onnxio__free(f->final_path);
        f->final_path = NULL;
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    snprintf(f->tmp_path, n, "%s/.%s.tmp-XXXXXX", dir, base);
    onnxio__free(dir);
    f->fd = mkostemp(f->tmp_path, O_CLOEXEC);
    if (f->fd < 0) {
        onnxio_status s = io_error(errno, "cannot create a temporary file for", path);
        onnxio__free(f->tmp_path);
        onnxio__free(f->final_path);
        f->tmp_path = f->final_path = NULL;
        return s;
    }
    /* mkstemp makes 0600; a saved model gets the usual 0666 & ~umask. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(f->fd, 0666 & ~mask);
    if (!(f->registered = temp_register(f->tmp_path))) {
        onnxio__atomic_abort(f);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    return ONNXIO_OK;
}

void onnxio__atomic_abort(onnxio__atomic_file *f)
{
    if (f->fd >= 0) close(f->fd);
    if (f->tmp_path) unlink(f->tmp_path);
    temp_forget(f->registered);
    f->registered = NULL;
    onnxio__free(f->tmp_path);
    onnxio__free(f->final_path);
    f->fd = -1;
    f->tmp_path = f->final_path = NULL;
}

onnxio_status onnxio__atomic_commit(onnxio__atomic_file *f)
{
    onnxio_status s = ONNXIO_OK;
    if (fsync(f->fd) != 0) s = io_error(errno, "cannot sync", f->tmp_path);
    if (!s && close(f->fd) != 0) s = io_error(errno, "cannot close", f->tmp_path);
    f->fd = -1;
    if (!s && rename(f->tmp_path, f->final_path) != 0) s = io_error(errno, "cannot rename onto", f->final_path);
    if (s) {
        onnxio__atomic_abort(f);
        return s;
    }
    temp_forget(f->registered);
    f->registered = NULL;
    /* Make the rename itself durable. */
    char *dir = onnxio__dirname(f->final_path);
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    onnxio__free(dir);
    onnxio__free(f->tmp_path);
    onnxio__free(f->final_path);
    f->tmp_path = f->final_path = NULL;
    return ONNXIO_OK;
}

onnxio_status onnxio__map_fd(int fd, const char *what, onnxio_buffer **out)
{
    *out = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) return io_error(errno, "cannot stat", what);
    if ((uint64_t)st.st_size > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "%s is too large to map", what);
    size_t size = (size_t)st.st_size;
    void *data = NULL;
    if (size) {
        /* Private, as in onnxio__map_file: edits never reach the file. */
        data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) return io_error(errno, "cannot map", what);
    }
    onnxio_buffer *b = onnxio_buffer_wrap(data, size, release_mapping, NULL);
    if (!b) {
        release_mapping(NULL, data, size);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    *out = b;
    return ONNXIO_OK;
}

onnxio_status onnxio__atomic_sync(onnxio__atomic_file *f)
{
    onnxio_status s = ONNXIO_OK;
    if (fsync(f->fd) != 0) s = io_error(errno, "cannot sync", f->tmp_path);
    if (close(f->fd) != 0 && !s) s = io_error(errno, "cannot close", f->tmp_path);
    f->fd = -1;
    return s;
}

onnxio_status onnxio__atomic_rename(onnxio__atomic_file *f)
{
    if (rename(f->tmp_path, f->final_path) != 0) {
        onnxio_status s = io_error(errno, "cannot rename onto", f->final_path);
        onnxio__atomic_abort(f);
        return s;
    }
    temp_forget(f->registered);
    f->registered = NULL;
    onnxio__free(f->tmp_path);
    onnxio__free(f->final_path);
    f->tmp_path = f->final_path = NULL;
    return ONNXIO_OK;
}

void onnxio__sync_dir(const char *path)
{
    char *dir = onnxio__dirname(path);
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    onnxio__free(dir);
}
