/* Files (docs/design.md, "Files"): mapping a file for reading, reading
 * ranges of one into memory (on a serial pool: direct reads where cold),
 * what a file is (its first bytes read, its name's extension), and the
 * paths of the library: the model's directory, a file name, its
 * extension. The save transaction is in txn.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h"

/* ---- mapping -------------------------------------------------------------- */

static void release_mapping(void *ctx, void *data, size_t size)
{
    (void)ctx;
    if (size) onnxio__sys_munmap(data, size);
}

/* A mapping of a large file is made of windows of MAP_WINDOW bytes, each
 * mapped from its own open file description of the file: the kernel keeps
 * read-ahead state per open file description, and one description serving a
 * whole large file read cold page by page was measured up to 2x slower. On a
 * 2-core VM (Linux 6.18, ext4), touching one byte of every page of a 16 GiB
 * file, cold, in one mapping: 10.2-15.6 s (16 runs); the same with a fresh
 * description every 256 MiB (or every tensor, as onnx_ir opens the file once
 * per tensor): 7.3-7.8 s in 10 of 13 runs, 10.6-11.0 s in the other 3. The
 * disk did the same reads in both (about 4,080 reads of 4 MiB, 7.3-8.6 s
 * busy); the extra time was user time on the first touch of each page. The
 * kernel's mechanism is not established; the windows are one contiguous
 * range, so callers see one mapping either way. At most MAP_WINDOWS_MAX
 * windows (the kernel limits the mappings of a process, 65,530 by default).
 * Tests set onnxio__test_map_window (not 0) to make the window smaller. */
#define MAP_WINDOW ((size_t)256 << 20)
#define MAP_WINDOWS_MAX 4096
size_t onnxio__test_map_window;

/* Maps every window of [data, data + size) but the first, which keeps
 * `fd`, again from a new open file description of the same file, at the
 * same addresses. Without /proc/self/fd the one description serves (only
 * slower). False only when a window could neither be mapped anew nor
 * mapped back from `fd` (the range then has a hole: the caller unmaps it
 * all). */
static bool map_windows(int fd, uint8_t *data, size_t size, int prot, int flags)
{
    size_t page = onnxio__page_size();
    size_t window = onnxio__test_map_window ? onnxio__test_map_window : MAP_WINDOW;
    if (window < size / MAP_WINDOWS_MAX) window = size / MAP_WINDOWS_MAX;
    window = (window + page - 1) / page * page;
    for (size_t off = window; off < size; off += window) {
        size_t n = size - off < window ? size - off : window;
        int wfd = onnxio__sys_reopen(fd, O_RDONLY);
        if (wfd < 0) return true;
        void *p = onnxio__sys_mmap_at(data + off, n, prot, flags, wfd, off);
        onnxio__close(wfd);
        if (p == MAP_FAILED) return onnxio__sys_mmap_at(data + off, n, prot, flags, fd, off) != MAP_FAILED;
    }
    return true;
}

onnxio_status onnxio__map_fd(int fd, const char *what, onnxio_buffer **out)
{
    *out = NULL;
    struct stat st;
    if (onnxio__sys_fstat(fd, &st) != 0)
        return onnxio__fail(ONNXIO_ERR_IO, "cannot stat %s: %s", what, strerror(errno));
    if ((uint64_t)st.st_size > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "%s is too large to map", what);
    size_t size = (size_t)st.st_size;
    void *data = NULL;
    if (size) {
        /* Private and writable: a caller that edits a borrowed payload gets
         * its own copy of that page, never a change to the file. Without
         * reserving swap for the whole file (MAP_NORESERVE): under the
         * kernel's default overcommit heuristic a private writable mapping
         * larger than memory is refused (a 32 GiB model on a 24 GiB
         * machine), though only the pages a caller writes take memory. */
        const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_NORESERVE;
        data = onnxio__sys_mmap(size, prot, flags, fd);
        if (data == MAP_FAILED) {
            int err = errno;
            return onnxio__fail(onnxio__errno_status(err), "cannot map %s: %s", what, strerror(err));
        }
        if (!map_windows(fd, data, size, prot, flags)) {
            int err = errno;
            onnxio__sys_munmap(data, size);
            return onnxio__fail(onnxio__errno_status(err), "cannot map %s: %s", what, strerror(err));
        }
    }
    onnxio_buffer *b = onnxio_buffer_wrap(data, size, release_mapping, NULL);
    if (!b) {
        release_mapping(NULL, data, size);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    *out = b;
    return ONNXIO_OK;
}

/* ---- text to a stdio stream ------------------------------------------------------ */

static int put_stream(void *user, const char *bytes, size_t n) { return fwrite(bytes, 1, n, user) != n; }

ONNXIO_API onnxio_status onnxio_text_print(const void *msg, const onnxio_text_options *opts, FILE *stream)
{
    if (!msg || !stream) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "text_print: NULL argument");
    onnxio_status s = onnxio__text_write(msg, opts, "text_print", put_stream, stream);
    if (s) return s;
    if (fflush(stream) != 0) return onnxio__fail(ONNXIO_ERR_IO, "text_print: cannot write the output");
    return ONNXIO_OK;
}

/* ---- reading ahead of a parse ----------------------------------------------- */

#define READ_AHEAD_MIN ((uintptr_t)64 << 10)
#define READ_AHEAD_MAX ((uintptr_t)8 << 20)

void onnxio__read_ahead_init(onnxio__read_ahead *r, const void *data, size_t size)
{
    *r = (onnxio__read_ahead){.end = (uintptr_t)data + size, .window = READ_AHEAD_MIN / 2, .kept = (uintptr_t)data};
}

uintptr_t onnxio__read_ahead_reached(void *ctx, const uint8_t *at)
{
    onnxio__read_ahead *r = ctx;
    uintptr_t start, p = (uintptr_t)at;
    if (p > r->asked_end) { /* past a skipped payload */
        start = p;
        r->window = READ_AHEAD_MIN;
        /* The pages behind the parse are unmapped: a fault on a tensor
         * header maps the whole page-cache folio around it (up to 2 MiB on
         * Linux 6.18), which held 48-83 MiB of payload pages in the
         * process during a parse of gpt2. The parse never reads behind
         * itself (strings and small payloads are copied as read), and a
         * no_copy payload there maps again when it is read. */
        onnxio__map_drop((const void *)r->kept, start - r->kept);
        r->kept = start & ~(uintptr_t)4095;
    } else {
        start = r->asked_end;
        if (r->window < READ_AHEAD_MAX) r->window *= 2;
    }
    uintptr_t end = start + r->window;
    if (end > r->end) end = r->end;
    if (end > start) onnxio__map_willneed((const void *)start, (size_t)(end - start));
    r->asked_end = end;
    /* Called again once within half a window of that end. */
    if (end >= r->end) return UINTPTR_MAX;
    return end > r->window / 2 ? end - r->window / 2 + 1 : 0;
}

onnxio_status onnxio__map_file(const char *path, onnxio_buffer **out, int *fd_out)
{
    *out = NULL;
    if (fd_out) *fd_out = -1;
    int fd;
    onnxio_status s = onnxio__open_regular(AT_FDCWD, path, O_RDONLY, path, &fd, NULL);
    if (s) {
        /* A model path the caller named: not external data. */
        if (s == ONNXIO_ERR_PATH_SPECIAL) s = ONNXIO_ERR_IO;
        return s;
    }
    if ((s = onnxio__map_fd(fd, path, out))) {
        onnxio__close(fd);
        return s;
    }
    if (fd_out) *fd_out = fd;
    else onnxio__close(fd);
    return ONNXIO_OK;
}

onnxio_status onnxio__read_into(int fd, uint64_t offset, uint64_t size, uint8_t *dst, const char *what, bool direct)
{
    /* A serial pool runs the job now, whole: one read (in reads of up to 1
     * GiB), directly where the range is cold. */
    onnxio__pool *pool;
    onnxio_status s = onnxio__pool_new(1, &pool);
    if (s) return s;
    onnxio__pool_read_direct(pool, direct);
    onnxio__job job = {.kind = ONNXIO__JOB_PREAD, .fd = fd, .offset = offset, .dst = dst, .size = size, .what = what};
    s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    return s ? s : s2;
}

onnxio_status onnxio__read_whole(int fd, uint64_t size, const char *what, const onnxio_parse_options *opts,
                                 onnxio_buffer **out)
{
    *out = NULL;
    if (size > SIZE_MAX - ONNXIO__IN_PLACE_SLACK)
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "%s: %llu bytes do not fit in memory", what, (unsigned long long)size);
    /* Page-aligned, as the file's offsets: every read is in place; the
     * slack after the file is room for payloads to move right. */
    onnxio_buffer *b = onnxio_buffer_new((size_t)size + ONNXIO__IN_PLACE_SLACK, 4096);
    if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for the %llu bytes of %s", (unsigned long long)size, what);
    onnxio_status s = onnxio__read_into(fd, 0, size, onnxio_buffer_data(b), what, opts->direct_io == ONNXIO_ON);
    if (s) {
        onnxio_buffer_unref(b);
        return s;
    }
    *out = b;
    return ONNXIO_OK;
}

/* ---- paths ------------------------------------------------------------------ */

/* The model's directory (onnxio_model_dir): `n` bytes at *dir. */
static void model_dir(const char *path, const char *base_dir, const char **dir, size_t *n)
{
    if (base_dir) {
        *dir = base_dir, *n = strlen(base_dir);
        return;
    }
    const char *slash = path ? onnxio__last_separator(path) : NULL;
    if (!slash) *dir = ".", *n = 1;
    /* A root keeps its separator: "/", and on Windows "C:\\". */
    else if (slash == path || (ONNXIO__OS_WINDOWS && slash == path + 2 && path[1] == ':')) *dir = path, *n = (size_t)(slash - path) + 1;
    else *dir = path, *n = (size_t)(slash - path);
}

char *onnxio__model_dir(const char *path, const char *base_dir)
{
    const char *dir;
    size_t n;
    model_dir(path, base_dir, &dir, &n);
    return onnxio__strndup(dir, n);
}

ONNXIO_API size_t onnxio_model_dir(const char *model_path, const char *base_dir, char *buf, size_t size)
{
    const char *dir;
    size_t n;
    model_dir(model_path, base_dir, &dir, &n);
    if (buf && size) {
        size_t k = n < size ? n : 0;
        memcpy(buf, dir, k);
        buf[k] = '\0';
    }
    return n;
}

ONNXIO_API const char *onnxio_path_file_name(const char *path)
{
    const char *slash = path ? onnxio__last_separator(path) : NULL;
    return slash ? slash + 1 : path;
}

ONNXIO_API bool onnxio_location_names_file(const char *location, size_t size, const char *path)
{
    if (!location || !path) return false;
    while (size >= 2 && location[0] == '.' && location[1] == '/') {
        location += 2;
        size -= 2;
    }
    const char *name = onnxio_path_file_name(path);
    return size == strlen(name) && memcmp(location, name, size) == 0;
}

ONNXIO_API const onnxio_file_extension *onnxio_path_extension(const char *path)
{
    const char *name = onnxio_path_file_name(path);
    if (!name) return NULL;
    /* As os.path.splitext: the last '.' of the name, unless only dots
     * come before it (".json" is a name without an extension). */
    const char *dot = strrchr(name, '.'), *stem = name;
    while (*stem == '.') stem++;
    if (!dot || dot < stem) return NULL;
    return onnxio__extension_row(dot, strlen(dot));
}

ONNXIO_API bool onnxio_path_is_archive(const char *path)
{
    const onnxio_file_extension *e = onnxio_path_extension(path);
    return e && e->kind == ONNXIO_FORMAT_ARCHIVE;
}

/* ---- what a file is ------------------------------------------------------------ */

/* The bytes of a file onnxio_detect_file reads: enough for the content
 * rules (64) and for the text style after a few comment lines. */
#define DETECT_HEAD 4096

ONNXIO_API onnxio_file_kind onnxio_detect_kind(const void *data, size_t size, const char *name)
{
    return onnxio__detect_kind(data, data ? size : 0, data ? size : 0, onnxio_path_extension(name));
}

ONNXIO_API onnxio_status onnxio_detect_file(const char *path, onnxio_file_kind *out)
{
    if (!path || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "detect_file: NULL argument");
    onnxio__clear_error();
    int fd;
    uint64_t size;
    onnxio_status s = onnxio__open_regular(AT_FDCWD, path, O_RDONLY, path, &fd, &size);
    if (s) return s;
    uint8_t head[DETECT_HEAD];
    size_t want = size < sizeof head ? (size_t)size : sizeof head;
    s = onnxio__read_at(fd, head, want, 0, path);
    onnxio__close(fd);
    if (s) return s;
    *out = onnxio__detect_kind(head, want, size, onnxio_path_extension(path));
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_detect_file_format(const char *path, onnxio_format *out)
{
    if (!path || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "detect_file_format: NULL argument");
    onnxio_file_kind k;
    onnxio_status s = onnxio_detect_file(path, &k);
    if (!s) *out = k.format;
    return s;
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
