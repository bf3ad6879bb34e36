/* File helpers built on either half of the OS layer (os_unix.c,
 * os_win.c): whole reads and writes, the checked open of a regular file,
 * and the drop of a mapping's pages around the ranges kept. Above the
 * halves, so that os.c, which the halves call, calls neither. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "base/sys.h"

void onnxio__map_keep_only(const uint8_t *start, const uint8_t *end, uint8_t *const *kept, size_t n)
{
    const uint8_t *at = start;
    for (size_t i = 0; i <= n; i++) {
        const uint8_t *next = i < n ? kept[2 * i] : end;
        if (next > at) onnxio__map_drop(at, (size_t)(next - at));
        if (i < n && kept[2 * i + 1] > at) at = kept[2 * i + 1];
    }
}

onnxio_status onnxio__write_all(int fd, const void *data, size_t size, const char *what)
{
    const uint8_t *p = data;
    while (size) {
        ssize_t n = onnxio__sys_write(fd, p, size > (1u << 30) ? (1u << 30) : size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return onnxio__fail(ONNXIO_ERR_IO, "cannot write %s: %s", what, n < 0 ? strerror(errno) : "no progress");
        p += n;
        size -= (size_t)n;
    }
    return ONNXIO_OK;
}

onnxio_status onnxio__read_at(int fd, void *buf, uint64_t n, uint64_t offset, const char *what)
{
    uint8_t *p = buf;
    for (uint64_t done = 0; done < n;) {
        size_t step = n - done > (1u << 30) ? (1u << 30) : (size_t)(n - done);
        ssize_t got = onnxio__sys_pread(fd, p + done, step, offset + done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            return onnxio__fail(got < 0 ? onnxio__errno_status(errno) : ONNXIO_ERR_IO,
                                "cannot read %llu bytes at offset %llu of %s: %s", (unsigned long long)n,
                                (unsigned long long)offset, what, got < 0 ? strerror(errno) : "the file is shorter");
        done += (uint64_t)got;
    }
    return ONNXIO_OK;
}

onnxio_status onnxio__open_regular(int dirfd, const char *path, int flags, const char *what, int *fd_out,
                                   uint64_t *size)
{
    *fd_out = -1;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the type is
     * checked on the open file right after. */
    int fd = onnxio__sys_openat(dirfd, path, flags | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0) {
        int err = errno;
        return onnxio__fail(onnxio__errno_status(err), "cannot open %s: %s", what, strerror(err));
    }
    struct stat st;
    if (onnxio__sys_fstat(fd, &st) != 0) {
        int err = errno;
        onnxio__close(fd);
        return onnxio__fail(ONNXIO_ERR_IO, "cannot stat %s: %s", what, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        onnxio__close(fd);
        return onnxio__fail_errno(ONNXIO_ERR_PATH_SPECIAL, S_ISDIR(st.st_mode) ? EISDIR : 0, "%s is not a regular file (%s)",
                                  what, onnxio__file_type(st.st_mode));
    }
    /* Back to blocking reads: O_NONBLOCK means nothing for regular files,
     * but a caller may hand the descriptor on. */
    onnxio__sys_set_blocking(fd);
    if (size) *size = (uint64_t)st.st_size;
    *fd_out = fd;
    return ONNXIO_OK;
}

