/* External data in a directory (docs/design.md, "The container seam"): the
 * data files of a model live under its directory (or a base directory), and
 * this file is the one way they are found and opened.
 *
 * A location is walked from the base directory one component at a time with
 * openat and O_NOFOLLOW, never as a whole path: a symlink met on the way is
 * read (readlinkat) and followed only while what it names stays under the
 * base directory, resolved the same way; the type of the last component is
 * looked at (fstatat) before it is opened, so a FIFO, a device or a socket
 * is refused without being opened; the file is then opened with O_NONBLOCK
 * and checked again on the descriptor (same inode, regular, one link). So
 * nothing outside the base directory is ever opened, however the directory
 * is laid out or changes meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/container.h"

/* As the kernel's limit on symlinks in one path resolution. */
#define MAX_HOPS 40

typedef struct walk {
    int *fds;            /* directory stack: fds[0] is the base directory */
    size_t depth, capacity;
    char *pending;       /* what is left to walk: components separated by '/' */
    size_t hops;
} walk;

static void walk_free(walk *w)
{
    for (size_t i = 0; i < w->depth; i++) onnxio__close(w->fds[i]);
    onnxio__free(w->fds);
    onnxio__free(w->pending);
    w->fds = NULL;
    w->pending = NULL;
    w->depth = 0;
}

static onnxio_status walk_push(walk *w, int fd)
{
    if (!onnxio__grow((void **)&w->fds, &w->capacity, w->depth, sizeof *w->fds)) {
        onnxio__close(fd);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    w->fds[w->depth++] = fd;
    return ONNXIO_OK;
}

/* Replaces the pending path by `head` followed by what is left after `rest`. */
static onnxio_status splice_pending(walk *w, const char *head, size_t head_size, const char *rest)
{
    size_t rest_size = strlen(rest);
    char *p = onnxio__malloc(head_size + 1 + rest_size + 1);
    if (!p) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy(p, head, head_size);
    p[head_size] = '/';
    memcpy(p + head_size + 1, rest, rest_size + 1);
    onnxio__free(w->pending);
    w->pending = p;
    return ONNXIO_OK;
}

onnxio_status onnxio__base_open(const char *base_dir, onnxio__base *out)
{
    out->fd = -1;
    if (!onnxio__sys_realpath(base_dir, out->real)) {
        int err = errno;
        return onnxio__fail(onnxio__errno_status(err), "base directory %s: %s", base_dir, strerror(err));
    }
    out->fd = onnxio__sys_openat(AT_FDCWD, out->real, O_RDONLY | O_DIRECTORY, 0);
    if (out->fd < 0) {
        int err = errno;
        return onnxio__fail(onnxio__errno_status(err), "cannot open the base directory %s: %s", out->real,
                            strerror(err));
    }
    return ONNXIO_OK;
}

void onnxio__base_close(onnxio__base *b)
{
    onnxio__close(b->fd);
    b->fd = -1;
}

onnxio_status onnxio__resolve_in(const onnxio__base *b, const char *location, onnxio__resolved *out)
{
    memset(out, 0, sizeof *out);
    out->dir_fd = -1;
    walk w = {0};
    onnxio_status s = ONNXIO_OK;
    const char *base_real = b->real;
    /* The walk owns every descriptor on its stack: its own copy of the
     * base directory's. */
    int base = onnxio__sys_dup(b->fd);
    if (base < 0) {
        int err = errno;
        return onnxio__fail(onnxio__errno_status(err), "cannot open the base directory %s: %s", base_real, strerror(err));
    }
    if ((s = walk_push(&w, base))) return s;
    if (!(w.pending = onnxio__strdup(location))) {
        walk_free(&w);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    for (;;) {
        /* The next component, and what follows it. */
        char *c = w.pending;
        while (*c == '/') c++;
        if (!*c) {
            s = onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "external data location '%s' names a directory", location);
            break;
        }
        char *end = strchr(c, '/');
        char *rest = end ? end + 1 : c + strlen(c);
        if (end) *end = '\0';
        bool last = true;
        for (const char *r = rest; *r; r++)
            if (*r != '/') {
                last = false;
                break;
            }
        if (strcmp(c, ".") == 0 && !last) {
            memmove(w.pending, rest, strlen(rest) + 1);
            continue;
        }
        if (strcmp(c, "..") == 0) {
            /* Only a symlink's target can say "..": the location itself was
             * refused for it. It may not climb above the base directory. */
            if (w.depth <= 1) {
                s = onnxio__fail(ONNXIO_ERR_PATH_ESCAPES,
                                 "external data location '%s' leads outside the base directory %s (a symlink's '..')",
                                 location, base_real);
                break;
            }
            onnxio__close(w.fds[--w.depth]);
            if (last) {
                s = onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "external data location '%s' names a directory", location);
                break;
            }
            memmove(w.pending, rest, strlen(rest) + 1);
            continue;
        }
        int dir = w.fds[w.depth - 1];
        struct stat st;
        if (onnxio__sys_fstatat(dir, c, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            int err = errno;
            if (last && err == ENOENT) {
                out->exists = false;
            } else {
                s = onnxio__fail(onnxio__errno_status(err), "external data location '%s': '%s': %s", location, c,
                                 strerror(err));
                break;
            }
        } else if (S_ISLNK(st.st_mode)) {
            if (++w.hops > MAX_HOPS) {
                s = onnxio__fail(ONNXIO_ERR_IO, "external data location '%s': too many levels of symbolic links",
                                 location);
                break;
            }
            char target[PATH_MAX];
            ssize_t n = onnxio__sys_readlinkat(dir, c, target, sizeof target - 1);
            if (n <= 0) {
                int err = n < 0 ? errno : ENOENT;
                s = onnxio__fail(ONNXIO_ERR_IO, "external data location '%s': cannot read the symlink '%s': %s",
                                 location, c, strerror(err));
                break;
            }
            target[n] = '\0';
            if (target[0] == '/') {
                /* An absolute target is followed only into the base
                 * directory: from there the walk starts again. */
                size_t bl = strlen(base_real);
                bool root = bl == 1;
                if (!(root || (strncmp(target, base_real, bl) == 0 && (target[bl] == '/' || target[bl] == '\0')))) {
                    s = onnxio__fail(ONNXIO_ERR_PATH_ESCAPES,
                                     "external data location '%s' leads outside the base directory %s (symlink '%s' -> %s)",
                                     location, base_real, c, target);
                    break;
                }
                while (w.depth > 1) onnxio__close(w.fds[--w.depth]);
                const char *inside = root ? target : target + bl;
                if ((s = splice_pending(&w, inside, strlen(inside), rest))) break;
            } else if ((s = splice_pending(&w, target, (size_t)n, rest))) {
                break;
            }
            continue;
        } else if (!last) {
            if (!S_ISDIR(st.st_mode)) {
                s = onnxio__fail(ONNXIO_ERR_NOT_FOUND, "external data location '%s': '%s' is not a directory", location,
                                 c);
                break;
            }
            int fd = onnxio__sys_openat(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
            if (fd < 0) {
                int err = errno;
                s = onnxio__fail(onnxio__errno_status(err), "external data location '%s': cannot open '%s': %s",
                                 location, c, strerror(err));
                break;
            }
            if ((s = walk_push(&w, fd))) break;
            memmove(w.pending, rest, strlen(rest) + 1);
            continue;
        } else {
            out->exists = true;
            out->st = st;
        }
        /* The last component: hand over its directory and name. */
        if (!(out->name = onnxio__strdup(c))) {
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            break;
        }
        out->dir_fd = w.fds[--w.depth];
        break;
    }
    walk_free(&w);
    if (s) onnxio__resolved_free(out);
    return s;
}

void onnxio__resolved_free(onnxio__resolved *r)
{
    onnxio__close(r->dir_fd);
    onnxio__free(r->name);
    r->dir_fd = -1;
    r->name = NULL;
}

onnxio_status onnxio__resolved_check(const onnxio__resolved *r, const char *location, const struct stat *model)
{
    if (model && r->st.st_dev == model->st_dev && r->st.st_ino == model->st_ino)
        return onnxio__fail(ONNXIO_ERR_PATH_SELF, "external data location '%s' is the model file itself", location);
    if (!S_ISREG(r->st.st_mode))
        return onnxio__fail(ONNXIO_ERR_PATH_SPECIAL, "external data location '%s' is %s, not a regular file", location,
                            onnxio__file_type(r->st.st_mode));
    /* Another name of the same inode can be anywhere on the file system:
     * the base directory would not bound what is read. */
    if (r->st.st_nlink > 1)
        return onnxio__fail(ONNXIO_ERR_PATH_LINK, "external data file '%s' has %llu hard links", location,
                            (unsigned long long)r->st.st_nlink);
    return ONNXIO_OK;
}

onnxio_status onnxio__open_resolved(const onnxio__resolved *r, const char *location, const struct stat *model, int flags,
                                    int *fd_out)
{
    *fd_out = -1;
    onnxio_status s = onnxio__resolved_check(r, location, model);
    if (s) return s;
    int fd = onnxio__sys_openat(r->dir_fd, r->name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0) {
        int err = errno;
        return onnxio__fail(onnxio__errno_status(err), "cannot open external data file '%s': %s", location,
                            strerror(err));
    }
    struct stat st;
    if (onnxio__sys_fstat(fd, &st) != 0 || st.st_dev != r->st.st_dev || st.st_ino != r->st.st_ino ||
        !S_ISREG(st.st_mode) || st.st_nlink > 1) {
        onnxio__close(fd);
        return onnxio__fail(ONNXIO_ERR_IO, "external data file '%s' changed while it was being opened", location);
    }
    onnxio__sys_set_blocking(fd);
    *fd_out = fd;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_external_data_open(const char *base_dir, const char *location, onnxio_open_mode mode,
                                                   int *fd, uint64_t *size)
{
    if (!base_dir || !location || !fd || (mode != ONNXIO_OPEN_READ && mode != ONNXIO_OPEN_APPEND))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "external_data_open: NULL argument or unknown mode");
    onnxio__clear_error();
    *fd = -1;
    onnxio_status s = onnxio_check_location(location, strlen(location));
    if (s) return s;
    onnxio__base b;
    onnxio__resolved r;
    s = onnxio__base_open(base_dir, &b);
    if (!s) s = onnxio__resolve_in(&b, location, &r);
    onnxio__base_close(&b);
    if (s) return s;
    if (r.exists) {
        s = onnxio__open_resolved(&r, location, NULL, mode == ONNXIO_OPEN_READ ? O_RDONLY : O_RDWR, fd);
        if (!s && size) *size = (uint64_t)r.st.st_size;
    } else if (mode == ONNXIO_OPEN_READ) {
        s = onnxio__fail(ONNXIO_ERR_NOT_FOUND, "external data file '%s' does not exist under %s", location, base_dir);
    } else {
        *fd = onnxio__sys_openat(r.dir_fd, r.name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
        if (*fd < 0) {
            int err = errno;
            s = onnxio__fail(onnxio__errno_status(err), "cannot create external data file '%s': %s", location,
                             strerror(err));
        } else if (size) {
            *size = 0;
        }
    }
    onnxio__resolved_free(&r);
    return s;
}

/* ---- the container ------------------------------------------------------ */

/* A data file: the entry first (container.c frees it), then its own. */
typedef struct dir_entry {
    onnxio__entry e;
    char *location;
    onnxio_buffer *map; /* no_copy: the whole file, mapped once */
} dir_entry;

typedef struct dir_container {
    onnxio__container base;
    struct stat model; /* the model file (st_nlink 0: unknown), never a data file */
    bool no_copy;
    onnxio__base dir;  /* base_dir, opened at the first location (fd -1: not yet) */
    char base_dir[];
} dir_container;

static onnxio_status dir_open(onnxio__container *base, const onnxio_TensorProto *t, const onnxio_external_ref *r,
                              onnxio__budget *budget, onnxio__entry **out)
{
    dir_container *c = (dir_container *)base;
    /* A location already walked names the file it named then: the one
     * opened (and checked) is used again, not looked up anew. */
    for (onnxio__entry *e = base->entries; e; e = e->next)
        if (strcmp(((dir_entry *)e)->location, r->location) == 0) {
            *out = e;
            return ONNXIO_OK;
        }
    onnxio__resolved res;
    onnxio_status s = c->dir.fd < 0 ? onnxio__base_open(c->base_dir, &c->dir) : ONNXIO_OK;
    if (!s) s = onnxio__resolve_in(&c->dir, r->location, &res);
    if (s) return onnxio__context(s, "tensor '%s'", onnxio__tensor_name(t));
    dir_entry *d = NULL;
    int fd = -1;
    if (!res.exists) {
        s = onnxio__fail(ONNXIO_ERR_NOT_FOUND, "tensor '%s': external data file '%s' does not exist under %s",
                         onnxio__tensor_name(t), r->location, c->base_dir);
        goto done;
    }
    /* Another location for a file already open ("./a", a symlink). */
    if ((*out = onnxio__container_find(base, (uint64_t)res.st.st_dev, (uint64_t)res.st.st_ino))) goto done;
    if ((s = onnxio__open_resolved(&res, r->location, c->model.st_nlink ? &c->model : NULL, O_RDONLY, &fd))) {
        s = onnxio__context(s, "tensor '%s'", onnxio__tensor_name(t));
        goto done;
    }
    if ((d = onnxio__calloc(1, sizeof *d))) d->e.fd = -1;
    if (!d || !(d->location = onnxio__strdup(r->location))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    d->e.name = d->location;
    d->e.fd = fd;
    d->e.size = (uint64_t)res.st.st_size;
    fd = -1;
    if (c->no_copy) {
        /* Mapped from the descriptor that passed the checks, not reopened
         * by name. */
        if ((s = onnxio__map_fd(d->e.fd, r->location, &d->map))) goto done;
        d->e.data = onnxio_buffer_data(d->map);
        d->e.owner = d->map;
        d->e.size = onnxio_buffer_size(d->map);
        d->e.borrow = true;
    }
    budget->input += d->e.size;
    onnxio__container_add(base, &d->e, (uint64_t)res.st.st_dev, (uint64_t)res.st.st_ino);
    *out = &d->e;
    d = NULL;
done:
    onnxio__close(fd);
    if (d) {
        base->release(&d->e);
        onnxio__free(d);
    }
    onnxio__resolved_free(&res);
    return s;
}

static void dir_release(onnxio__entry *e)
{
    dir_entry *d = (dir_entry *)e;
    onnxio__close(d->e.fd);
    onnxio_buffer_unref(d->map);
    onnxio__free(d->location);
}

static void dir_finish(onnxio__container *base)
{
    onnxio__base_close(&((dir_container *)base)->dir);
}

onnxio_status onnxio__dir_container(const char *base_dir, const char *model_path, const onnxio_parse_options *opts,
                                    onnxio__container **out)
{
    size_t n = strlen(base_dir);
    dir_container *c = onnxio__calloc(1, sizeof *c + n + 1);
    if (!c) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy(c->base_dir, base_dir, n + 1);
    c->base.open = dir_open;
    c->base.release = dir_release;
    c->base.finish = dir_finish;
    c->dir.fd = -1;
    c->no_copy = opts->no_copy;
    if (!model_path || onnxio__sys_fstatat(AT_FDCWD, model_path, &c->model, 0) != 0) c->model.st_nlink = 0;
    *out = &c->base;
    return ONNXIO_OK;
}
