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

#include "io/save.h"

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
    /* Windows reads a backslash as a separator too: each component is then
     * walked on its own, so that no reparse point inside "a\\b" is
     * crossed by the system's own path lookup. Elsewhere it is a byte of
     * a name. */
    if (ONNXIO__OS_WINDOWS)
        for (char *q = w.pending; *q; q++)
            if (*q == '\\') *q = '/';
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
            if (n < 0 && errno == EOPNOTSUPP) {
                /* Windows: a reparse point (symlink, junction, mount
                 * point) is never followed, wherever it leads. */
                s = onnxio__fail(ONNXIO_ERR_PATH_ESCAPES,
                                 "external data location '%s': '%s' is a reparse point (a symlink or junction), "
                                 "never followed on Windows",
                                 location, c);
                break;
            }
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

/* ---- writing: data files beside the model (onnxio__dir_writer) ------------------- */

/* Data files written before the pool is drained and they are closed:
 * bounds the descriptors held in one-file-per-tensor mode. */
#define FILES_PER_BATCH 64

/* One payload going to a data file. */
typedef struct out_item {
    onnxio_TensorProto *tensor;
    size_t file;
    uint64_t offset;
    uint8_t (*digests)[32]; /* with cfg->digests: its block digests, filled as it is written */
} out_item;

typedef struct out_file {
    char *location;       /* relative to the model's directory */
    onnxio__resolved res; /* where it goes */
    int fd;               /* the temporary file while it is written */
    uint64_t size;
    size_t first, count;  /* its payloads: items[first, first + count) */
    char digest[41];
    /* Streaming saves: its payloads still to come. Such a file is not
     * written by write_batch: it is made when its first streamed payload
     * arrives, and synced and closed after its last. */
    size_t pending;
} out_file;

typedef struct dir_plan {
    out_item *items;     /* sel.tensors, in order */
    size_t item_count;
    out_file *files;
    size_t count;
    char *dir;           /* the model's directory */
    onnxio__base base;
} dir_plan;

static uint64_t align_up(uint64_t x, uint64_t a) { return a > 1 && x % a ? x + (a - x % a) : x; }

/* The block count of a payload of `size` bytes. */
static size_t digest_count(uint64_t size) { return size ? (size_t)((size - 1) / ONNXIO_DIGEST_BLOCK + 1) : 0; }

/* A PWRITE job of item `i`'s `size` bytes from `data`, with its block
 * digests when the save writes them. */
static onnxio_status item_job(dir_plan *d, size_t i, const void *data, uint64_t size, bool digests, onnxio__job *job)
{
    out_item *it = &d->items[i];
    *job = (onnxio__job){.kind = ONNXIO__JOB_PWRITE, .fd = d->files[it->file].fd, .offset = it->offset, .src = data,
                         .size = size, .what = d->files[it->file].location};
    if (!digests || !size) return ONNXIO_OK;
    if (!it->digests && !(it->digests = onnxio__malloc(digest_count(size) * sizeof *it->digests)))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for block digests");
    job->digest = it->digests;
    job->digest_block = ONNXIO_DIGEST_BLOCK;
    job->tensor = onnxio__tensor_name(it->tensor);
    return ONNXIO_OK;
}

static void dir_writer_free(void *state)
{
    dir_plan *d = state;
    if (!d) return;
    for (size_t k = 0; k < d->count; k++) {
        onnxio__free(d->files[k].location);
        onnxio__resolved_free(&d->files[k].res);
    }
    onnxio__free(d->files);
    for (size_t i = 0; d->items && i < d->item_count; i++) onnxio__free(d->items[i].digests);
    onnxio__free(d->items);
    onnxio__free(d->dir);
    onnxio__base_close(&d->base);
    onnxio__free(d);
}

/* Decides the data files and every payload's file and offset. */
static onnxio_status plan_files(const onnxio__selection *sel, const onnxio_serialize_options *cfg,
                                const char *model_name, dir_plan *d)
{
    const onnxio_external_data_options *x = &cfg->external_data;
    size_t n = sel->count;
    if (n == 0) return ONNXIO_OK;
    if (!(d->items = onnxio__calloc(n, sizeof *d->items))) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    d->item_count = n;
    for (size_t i = 0; i < n; i++) d->items[i].tensor = sel->tensors[i];
    uint64_t alignment = onnxio__save_alignment(cfg, true);
    if (x->all_tensors_to_one_file == ONNXIO_OFF) {
        d->files = onnxio__calloc(n, sizeof *d->files);
        onnxio__names *set = onnxio__names_new(n + 1);
        onnxio_status s = ONNXIO_OK;
        if (!d->files || !set || onnxio__names_reserve(set, model_name) < 0)
            s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        for (size_t i = 0; !s && i < n; i++) {
            out_file *f = &d->files[i];
            f->fd = f->res.dir_fd = -1;
            d->count = i + 1;
            const char *name = onnxio__names_unique(set, onnxio__tensor_name(d->items[i].tensor));
            if (!name || !(f->location = onnxio__strdup(name))) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
            f->size = d->items[i].tensor->raw_data.size;
            f->first = i;
            f->count = 1;
            d->items[i].file = i;
        }
        onnxio__names_free(set);
        return s;
    }
    uint64_t limit = x->max_file_size;
    size_t file = 0;
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t size = d->items[i].tensor->raw_data.size;
        uint64_t at = align_up(end, alignment);
        /* A payload that would cross the limit starts the next file; one
         * larger than the limit gets a file of its own. */
        if (limit && end > 0 && (at > limit || size > limit - at)) {
            file++;
            at = 0;
        }
        d->items[i].file = file;
        d->items[i].offset = at;
        end = at + size;
    }
    size_t nfiles = limit ? file + 1 : 1;
    if (!(d->files = onnxio__calloc(nfiles, sizeof *d->files))) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    /* "<stem>-00001-of-0000N<ext>": the extension is the last '.' of the
     * file name part (not a leading one). */
    const char *fname = onnxio_path_file_name(x->location);
    const char *dot = strrchr(fname, '.');
    if (!dot || dot == fname) dot = fname + strlen(fname);
    for (size_t k = 0; k < nfiles; k++) {
        out_file *f = &d->files[k];
        f->fd = f->res.dir_fd = -1;
        d->count = k + 1;
        if (!limit) f->location = onnxio__strdup(x->location);
        else {
            size_t len = strlen(x->location) + 64;
            if ((f->location = onnxio__malloc(len)))
                snprintf(f->location, len, "%.*s-%05zu-of-%05zu%s", (int)(dot - x->location), x->location, k + 1, nfiles,
                         dot);
        }
        if (!f->location) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        out_file *f = &d->files[d->items[i].file];
        if (f->count == 0) f->first = i;
        f->count++;
        f->size = d->items[i].offset + d->items[i].tensor->raw_data.size;
    }
    return ONNXIO_OK;
}

/* A still-external tensor whose location is a file this save replaces
 * would silently point at the new bytes. */
static onnxio_status check_stale(const onnxio__selection *sel, const dir_plan *d)
{
    for (size_t i = 0; i < sel->stale_count; i++) {
        const onnxio_TensorProto *t = sel->stale[i];
        onnxio_external_ref r;
        if (onnxio_external_ref_parse(t, &r)) {
            onnxio__clear_error();
            continue;
        }
        const char *loc = r.location;
        while (loc[0] == '.' && loc[1] == '/') loc += 2;
        for (size_t k = 0; k < d->count; k++)
            if (strcmp(loc, d->files[k].location) == 0)
                return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                                    "tensor '%s' still refers to external data in '%s', which this save replaces; "
                                    "load its external data first",
                                    onnxio__tensor_name(t), loc);
    }
    return ONNXIO_OK;
}

static onnxio_status dir_writer_plan(onnxio__saving *sv, const char *path)
{
    const onnxio_external_data_options *x = &sv->cfg->external_data;
    onnxio_status s;
    if (x->all_tensors_to_one_file != ONNXIO_OFF && (s = onnxio_check_location(x->location, strlen(x->location))))
        return s;
    dir_plan *d = onnxio__calloc(1, sizeof *d);
    if (!d) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    d->base.fd = -1;
    sv->state = d;
    if ((s = plan_files(&sv->sel, sv->cfg, onnxio_path_file_name(path), d))) return s;
    return check_stale(&sv->sel, d);
}

/* Where data file `f` goes under the model's directory `dir`: the
 * location's rules, the checked walk (symlinks followed only inside),
 * never the model file, never a file with other hard links or a special
 * file. */
static onnxio_status resolve_file(out_file *f, const onnxio__base *dir, const struct stat *model)
{
    onnxio_status s = onnxio_check_location(f->location, strlen(f->location));
    if (!s) s = onnxio__resolve_in(dir, f->location, &f->res);
    /* As named, or as a symlink inside the directory leads. */
    if (!s && (onnxio__txn_reserved_name(onnxio_path_file_name(f->location)) || onnxio__txn_reserved_name(f->res.name)))
        s = onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                         "external data location '%s' is a name saves use for their own journal or temporary files",
                         f->location);
    if (!s && f->res.exists) s = onnxio__resolved_check(&f->res, f->location, model);
    return s;
}

/* Every data file's place, checked: beside the model as it is named (its
 * link, if it is one), where a load of `path` looks for them. */
static onnxio_status resolve_files(dir_plan *d, const char *path)
{
    if (!(d->dir = onnxio__model_dir(path, NULL))) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    struct stat model_st;
    bool have_model = onnxio__sys_fstatat(AT_FDCWD, path, &model_st, 0) == 0;
    onnxio_status s = onnxio__base_open(d->dir, &d->base);
    if (s) return s;
    for (size_t k = 0; k < d->count; k++) {
        if ((s = resolve_file(&d->files[k], &d->base, have_model ? &model_st : NULL))) return s;
        /* A data file that does not exist yet but would be created as the
         * model file itself: the same directory and name. */
        struct stat a, b;
        if (!d->files[k].res.exists && strcmp(d->files[k].res.name, onnxio_path_file_name(path)) == 0 &&
            onnxio__sys_fstat(d->files[k].res.dir_fd, &a) == 0 && onnxio__sys_fstatat(AT_FDCWD, d->dir, &b, 0) == 0 &&
            a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return onnxio__fail(ONNXIO_ERR_PATH_SELF, "external data location '%s' is the model file itself",
                                d->files[k].location);
        for (size_t j = 0; j < k; j++)
            if (d->files[j].res.exists && d->files[k].res.exists && d->files[j].res.st.st_dev == d->files[k].res.st.st_dev &&
                d->files[j].res.st.st_ino == d->files[k].res.st.st_ino)
                return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "external data files '%s' and '%s' are the same file",
                                    d->files[j].location, d->files[k].location);
    }
    return ONNXIO_OK;
}

/* The SHA-1 of the files [first, end) of a plan, from the payloads in
 * memory, the gaps between them as zeros. */
typedef struct batch_digest {
    dir_plan *d;
    size_t first, end;
} batch_digest;

static onnxio_status digest_batch(void *arg)
{
    const batch_digest *b = arg;
    dir_plan *d = b->d;
    onnxio_status s = ONNXIO_OK;
    for (size_t k = b->first; !s && k < b->end; k++) {
        out_file *f = &d->files[k];
        if (f->pending) continue;
        onnxio__sha1 h;
        if ((s = onnxio__sha1_begin(&h))) break;
        uint64_t at = 0;
        for (size_t i = f->first; !s && i < f->first + f->count; i++) {
            const onnxio_TensorProto *t = d->items[i].tensor;
            s = onnxio__sha1_zeros(&h, d->items[i].offset - at);
            if (!s) s = onnxio__sha1_update(&h, t->raw_data.data, t->raw_data.size);
            at = d->items[i].offset + t->raw_data.size;
        }
        if (!s) s = onnxio__sha1_zeros(&h, f->size - at);
        if (s) onnxio__sha1_abort(&h);
        else s = onnxio__sha1_end(&h, f->digest);
    }
    return s;
}

/* Writes the files [first, end) of the plan as temporary files of `txn`:
 * payloads as PWRITE jobs on a pool, the gaps left as holes (zeros); then
 * every file is synced and closed. The SHA-1s are computed from memory
 * meanwhile, on a task of their own, so that they overlap the writes and
 * the syncs (the device's time). */
static onnxio_status write_batch(onnxio__txn *txn, dir_plan *d, size_t first, size_t end,
                                 const onnxio_serialize_options *cfg)
{
    onnxio__pool *pool = NULL;
    onnxio_status s = onnxio__pool_new(cfg->num_threads, &pool);
    if (s) return s;
    for (size_t k = first; !s && k < end; k++) {
        out_file *f = &d->files[k];
        if (f->pending) continue;
        if ((s = onnxio__txn_create(txn, f->res.dir_fd, f->res.name, &f->fd))) break;
        /* The whole size at once: the padding between payloads reads as
         * zeros whatever order the jobs run in. */
        if (onnxio__sys_ftruncate(f->fd, f->size) != 0) {
            s = onnxio__fail(ONNXIO_ERR_IO, "cannot size %s to %llu bytes: %s", f->location, (unsigned long long)f->size,
                             strerror(errno));
            break;
        }
    }
    batch_digest digest = {d, first, end};
    onnxio__task task = {0};
    if (!s && cfg->external_data.checksum) onnxio__task_start(&task, cfg->num_threads, digest_batch, &digest);
    for (size_t k = first; !s && k < end; k++) {
        out_file *f = &d->files[k];
        if (f->pending) continue;
        for (size_t i = f->first; !s && i < f->first + f->count; i++) {
            const onnxio_TensorProto *t = d->items[i].tensor;
            onnxio__job job;
            if (!(s = item_job(d, i, t->raw_data.data, t->raw_data.size, cfg->digests, &job)))
                s = onnxio__pool_add(pool, &job);
        }
    }
    /* Every queued write must be over before a file is synced or removed. */
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s) s = s2;
    for (size_t k = first; !s && k < end; k++)
        if (!d->files[k].pending) s = onnxio__txn_sync(txn, d->files[k].fd);
    return onnxio__task_join(&task, s);
}

static onnxio_status dir_writer_write(onnxio__saving *sv, const char *path)
{
    dir_plan *d = sv->state;
    onnxio_status s = resolve_files(d, path);
    /* Files with streamed payloads are written as those come. */
    for (size_t i = 0; !s && i < d->item_count; i++)
        if (!d->items[i].tensor->raw_data.data) d->files[d->items[i].file].pending++;
    for (size_t k = 0; !s && k < d->count; k += FILES_PER_BATCH)
        s = write_batch(sv->txn, d, k, k + FILES_PER_BATCH < d->count ? k + FILES_PER_BATCH : d->count, sv->cfg);
    return s;
}

/* Writes item `i` (`data`, its tensor's raw_data.size bytes) on a pool of
 * its own. */
static onnxio_status write_item(dir_plan *d, size_t i, const void *data, const onnxio_serialize_options *cfg)
{
    onnxio__job job;
    onnxio__pool *pool = NULL;
    onnxio_status s = item_job(d, i, data, d->items[i].tensor->raw_data.size, cfg->digests, &job);
    if (!s) s = onnxio__pool_new(cfg->num_threads, &pool);
    if (!s) s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    return s ? s : s2;
}

/* A streamed payload's data file is made (sized, and its payloads that are
 * not streamed written) when its first streamed payload comes; after its
 * last, its SHA-1 is read back (the payloads came in any order), and it
 * is synced and closed. */
static onnxio_status dir_writer_put(onnxio__saving *sv, size_t item, const void *data)
{
    dir_plan *d = sv->state;
    out_file *f = &d->files[d->items[item].file];
    onnxio_status s = ONNXIO_OK;
    if (f->fd < 0) {
        if ((s = onnxio__txn_create(sv->txn, f->res.dir_fd, f->res.name, &f->fd))) return s;
        if (onnxio__sys_ftruncate(f->fd, f->size) != 0)
            return onnxio__fail(ONNXIO_ERR_IO, "cannot size %s to %llu bytes: %s", f->location,
                                (unsigned long long)f->size, strerror(errno));
        for (size_t i = f->first; !s && i < f->first + f->count; i++)
            if (d->items[i].tensor->raw_data.data) s = write_item(d, i, d->items[i].tensor->raw_data.data, sv->cfg);
    }
    if (!s) s = write_item(d, item, data, sv->cfg);
    if (!s && --f->pending == 0) {
        if (sv->cfg->external_data.checksum) s = onnxio__sha1_fd(f->fd, 0, f->size, f->location, f->digest);
        if (!s) s = onnxio__txn_sync(sv->txn, f->fd);
        f->fd = -1;
    }
    return s;
}

/* The moved tensors refer to their files; then the model file. */
static onnxio_status dir_writer_model(onnxio__saving *sv)
{
    dir_plan *d = sv->state;
    onnxio_status s = ONNXIO_OK;
    for (size_t i = 0; !s && i < d->item_count; i++) {
        const out_file *f = &d->files[d->items[i].file];
        onnxio_TensorProto *t = d->items[i].tensor;
        size_t blocks = digest_count(t->raw_data.size);
        /* The record goes with the bytes: written anew, or dropped. */
        if (sv->cfg->digests)
            s = onnxio__digests_set(sv->scratch, t, ONNXIO_DIGEST_BLOCK, (const uint8_t(*)[32])d->items[i].digests, blocks);
        else onnxio__digests_remove(t);
        if (!s) s = onnxio__refer(sv->scratch, t, f->location, d->items[i].offset,
                                  sv->cfg->external_data.checksum ? f->digest : NULL);
    }
    return s ? s : onnxio__write_main(sv->txn, sv->copy, sv->cfg, NULL, NULL, &sv->model_fd);
}

const onnxio__writer onnxio__dir_writer = {
    .seeks = "a model with external data needs a directory",
    .plan = dir_writer_plan,
    .write = dir_writer_write,
    .put = dir_writer_put,
    .model = dir_writer_model,
    .free = dir_writer_free,
};
