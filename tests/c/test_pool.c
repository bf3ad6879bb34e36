/* The thread pool (src/pool.c): every job's bytes moved exactly where they
 * belong, and every CRC piece equal to zlib's crc32 of its bytes, for 1 to
 * 8 threads, with jobs queued in two batches (the second while the workers
 * already run the first), copies and preads mixed, sizes from 1 byte to
 * several pieces. The reference is the source bytes themselves and zlib. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"
#include "testutil.h"

#define MIB (1u << 20)

/* Job sizes: small, a piece and a bit, several pieces, odd lengths. */
static const uint64_t sizes[] = {1, 1000, MIB, ONNXIO__CRC_PIECE + 5, 3 * ONNXIO__CRC_PIECE + 4097, 77777,
                                 2 * ONNXIO__CRC_PIECE, 12345 + MIB, 513};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define ROUNDS 3 /* each size this many times, per kind */

static void run(int threads, const uint8_t *src, int fd, uint64_t total, const char *what)
{
    uint8_t *dst = malloc(2 * total);
    memset(dst, 0xAA, 2 * total);
    size_t njobs = 2 * NSIZES * ROUNDS;
    uint32_t **crcs = calloc(njobs, sizeof *crcs);
    uint64_t *at = calloc(njobs, sizeof *at), *len = calloc(njobs, sizeof *len);
    onnxio__pool *pool = NULL;
    CHECK_STATUS(onnxio__pool_new(threads, &pool), ONNXIO_OK);
    uint64_t off = 0;
    for (size_t k = 0; k < njobs && pool; k++) {
        /* Half-way through, give the workers time to start. */
        if (k == njobs / 2) nanosleep(&(struct timespec){0, 2000000}, NULL);
        uint64_t n = sizes[k % NSIZES];
        at[k] = off;
        len[k] = n;
        crcs[k] = k % 3 == 0 ? calloc(onnxio__crc_pieces(n), sizeof **crcs) : NULL;
        onnxio__job job = {.dst = dst + off, .size = n, .what = what, .crc = crcs[k]};
        if ((k / NSIZES) % 2 == 0) {
            job.kind = ONNXIO__JOB_PREAD;
            job.fd = fd;
            job.offset = off;
        } else {
            job.kind = ONNXIO__JOB_COPY;
            job.src = src + off;
        }
        CHECK_STATUS(onnxio__pool_add(pool, &job), ONNXIO_OK);
        off += n;
    }
    CHECK_STATUS(onnxio__pool_finish(pool), ONNXIO_OK);
    CHECK_MSG(off <= total, "the jobs fit the source");
    CHECK_MSG(memcmp(dst, src, off) == 0, "threads %d: every job's bytes in place", threads);
    bool untouched = true;
    for (uint64_t i = off; i < 2 * total; i++) untouched &= dst[i] == 0xAA;
    CHECK_MSG(untouched, "threads %d: nothing written past the jobs", threads);
    for (size_t k = 0; k < njobs; k++) {
        if (!crcs[k]) continue;
        for (size_t i = 0; i < onnxio__crc_pieces(len[k]); i++) {
            uint64_t from = (uint64_t)i * ONNXIO__CRC_PIECE;
            uint64_t n = len[k] - from < ONNXIO__CRC_PIECE ? len[k] - from : ONNXIO__CRC_PIECE;
            CHECK_MSG(crcs[k][i] == (uint32_t)crc32(0, src + at[k] + from, (uInt)n),
                      "threads %d: job %zu, CRC piece %zu equals zlib's", threads, k, i);
        }
        CHECK_MSG(onnxio__crc_join(crcs[k], len[k]) == (uint32_t)crc32(0, src + at[k], (uInt)len[k]),
                  "threads %d: job %zu, joined CRC equals zlib's", threads, k);
        free(crcs[k]);
    }
    free(crcs);
    free(at);
    free(len);
    free(dst);
}

int main(void)
{
    char *dir = tu_make_temp_dir("onnxio-test-pool");
    uint64_t total = 0;
    for (size_t i = 0; i < NSIZES; i++) total += 2 * ROUNDS * sizes[i];
    uint8_t *src = malloc(total);
    uint32_t x = 12345;
    for (uint64_t i = 0; i < total; i++) {
        x = x * 1103515245u + 12345u;
        src[i] = (uint8_t)(x >> 24);
    }
    char *path = tu_path_join(dir, "source.bin");
    tu_write_file(path, src, total);
    int fd = onnxio__sys_openat(AT_FDCWD, path, O_RDONLY, 0);
    tu_begin("pool: copies and preads of 1 byte to several pieces, queued in two batches, on 1 to 8 threads");
    CHECK(fd >= 0);
    for (int threads = 1; fd >= 0 && threads <= 8; threads++) run(threads, src, fd, total, "source.bin");
    tu_end();
    onnxio__close(fd);
    free(src);
    free(path);
    tu_remove_tree(dir);
    free(dir);
    return tu_finish();
}
