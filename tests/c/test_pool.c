/* The thread pool (src/pool/pool.c): every job's bytes moved exactly where they
 * belong, and every CRC piece equal to zlib's crc32 of its bytes, for 1 to
 * 8 threads, with jobs queued in two batches (the second while the workers
 * already run the first), copies and preads mixed, sizes from 1 byte to
 * several pieces. The reference is the source bytes themselves and zlib. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/mman.h>
#endif
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "io/io.h"
#include "testutil.h"

#define MIB (1u << 20)

/* Job sizes: small, a piece and a bit, several pieces, odd lengths. */
static const uint64_t sizes[] = {1, 1000, MIB, ONNXIO__CRC_PIECE + 5, 3 * ONNXIO__CRC_PIECE + 4097, 77777,
                                 2 * ONNXIO__CRC_PIECE, 12345 + MIB, 513};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define ROUNDS 3 /* each size this many times, per kind */

static void small_jobs_start_no_thread(const uint8_t *src, uint64_t total)
{
    if (!CHECK(total >= 2 * MIB)) return;
    uint8_t *dst = calloc(1, 2 * MIB);
    onnxio__pool *pool = NULL;
    CHECK_STATUS(onnxio__pool_new(4, &pool), ONNXIO_OK);
    int before = tu_thread_count();
    CHECK(before > 0);
    uint64_t off = 0;
    for (int k = 0; k < 16 && pool; k++, off += MIB / 16) {
        onnxio__job job = {.kind = ONNXIO__JOB_COPY, .dst = dst + off, .src = src + off, .size = MIB / 16, .what = "small"};
        CHECK_STATUS(onnxio__pool_add(pool, &job), ONNXIO_OK);
        if (!CHECK_MSG(tu_thread_count() == before, "job %d (%llu bytes so far) started no thread", k,
                       (unsigned long long)(off + MIB / 16)))
            break;
    }
    CHECK_MSG(pool && memcmp(dst, src, off) == 0, "the small jobs' bytes are in place before finish");
    onnxio__job big = {.kind = ONNXIO__JOB_COPY, .dst = dst + off, .src = src + off, .size = MIB, .what = "big"};
    CHECK_STATUS(onnxio__pool_add(pool, &big), ONNXIO_OK);
    CHECK_MSG(tu_thread_count() > before, "the job past 1 MiB started the workers");
    CHECK_STATUS(onnxio__pool_finish(pool), ONNXIO_OK);
    CHECK(memcmp(dst, src, 2 * MIB) == 0);
    free(dst);
}

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

/* Direct reads (pool.c, onnxio__pool_read_direct) of a file evicted from
 * the page cache: jobs whose file offset and memory address agree modulo
 * 512 (read straight into place, their unaligned ends through the bounce
 * buffer), jobs where they do not (through the bounce buffer), jobs of one
 * byte to several pieces, with CRCs; every byte against the source, every
 * CRC against zlib, nothing written outside the jobs, and the file left
 * out of the page cache (the proof that the reads went around it). */
static void run_direct(int threads, const uint8_t *src, int fd, uint64_t total, const char *what)
{
    enum { SHIFTS = 3 };
    /* Destination offset = file offset + shift: 0 keeps them congruent,
     * 64 and 1 do not. */
    static const uint64_t shift[SHIFTS] = {0, 64, 1};
    uint8_t *dst = tu_aligned_alloc(4096, total + 8192);
    if (!dst) return;
    for (int sh = 0; sh < SHIFTS; sh++) {
        memset(dst, 0xAA, total + 8192);
        tu_evict_fd(fd);
        uint64_t cached_before = 0;
        bool can_tell = onnxio__sys_cached(fd, 0, total, &cached_before) == 0;
        onnxio__pool *pool = NULL;
        CHECK_STATUS(onnxio__pool_new(threads, &pool), ONNXIO_OK);
        if (!pool) break;
        onnxio__pool_read_direct(pool, true);
        size_t njobs = 0;
        uint64_t at[64], len[64];
        uint32_t *crcs[64] = {0};
        /* Jobs with gaps between them (the gaps must stay 0xAA): odd
         * offsets, 512-aligned ones, and a 4 KiB-aligned run of pieces. */
        uint64_t off = 7;
        for (size_t k = 0; k < NSIZES * 2 && njobs < 64; k++) {
            uint64_t n = sizes[k % NSIZES];
            if (k % 3 == 1) off = (off + 511) & ~(uint64_t)511;
            if (k % 3 == 2) off = (off + 4095) & ~(uint64_t)4095;
            if (off + n + 3 > total) break;
            at[njobs] = off;
            len[njobs] = n;
            crcs[njobs] = k % 2 ? calloc(onnxio__crc_pieces(n), sizeof **crcs) : NULL;
            onnxio__job job = {.kind = ONNXIO__JOB_PREAD, .fd = fd, .offset = off, .dst = dst + off + shift[sh],
                               .size = n, .what = what, .crc = crcs[njobs]};
            CHECK_STATUS(onnxio__pool_add(pool, &job), ONNXIO_OK);
            njobs++;
            off += n + 3 + k * 97;
        }
        CHECK_STATUS(onnxio__pool_finish(pool), ONNXIO_OK);
        uint64_t end = 0;
        for (size_t k = 0; k < njobs; k++) {
            CHECK_MSG(memcmp(dst + at[k] + shift[sh], src + at[k], (size_t)len[k]) == 0,
                      "threads %d, shift %llu: job %zu (%llu bytes at %llu) read exactly", threads,
                      (unsigned long long)shift[sh], k, (unsigned long long)len[k], (unsigned long long)at[k]);
            bool gap = true;
            for (uint64_t i = end; i < at[k]; i++) gap &= dst[i + shift[sh]] == 0xAA;
            CHECK_MSG(gap, "threads %d, shift %llu: nothing written before job %zu", threads,
                      (unsigned long long)shift[sh], k);
            end = at[k] + len[k];
            if (crcs[k]) {
                CHECK_MSG(onnxio__crc_join(crcs[k], len[k]) == (uint32_t)crc32(0, src + at[k], (uInt)len[k]),
                          "threads %d, shift %llu: job %zu, CRC equals zlib's", threads, (unsigned long long)shift[sh], k);
                free(crcs[k]);
            }
        }
        bool tail = true;
        for (uint64_t i = end + shift[sh]; i < total + 8192; i++) tail &= dst[i] == 0xAA;
        CHECK_MSG(tail, "threads %d, shift %llu: nothing written after the last job", threads,
                  (unsigned long long)shift[sh]);
        uint64_t cached = 0;
        if (can_tell && cached_before < total / 4 && onnxio__sys_cached(fd, 0, total, &cached) == 0) {
            int probe;
            uint32_t ma, oa;
            if ((probe = onnxio__sys_open_direct(fd, &ma, &oa)) >= 0) {
                onnxio__close(probe);
                CHECK_MSG(cached < total / 4, "threads %d, shift %llu: the reads left the file uncached (%llu of %llu bytes cached)",
                          threads, (unsigned long long)shift[sh], (unsigned long long)cached, (unsigned long long)total);
            } else if (threads == 1 && sh == 0) {
                tu_skip("this file system cannot read %s directly: the reads went through the page cache", what);
            }
        } else if (threads == 1 && sh == 0) {
            tu_skip("the kernel cannot say what is cached (no cachestat): direct reads are off");
        }
    }
    tu_aligned_free(dst);
}

/* A failed direct read fails the pool with the file and range named; a
 * job past the end of the file says the file is shorter. */
static void direct_failures(int fd, uint64_t total, const char *what)
{
    uint8_t *dst = malloc(4 * MIB);
    tu_evict_fd(fd);
    onnxio__pool *pool = NULL;
    CHECK_STATUS(onnxio__pool_new(2, &pool), ONNXIO_OK);
    onnxio__pool_read_direct(pool, true);
    onnxio__fault_set(1u << ONNXIO__OP_READ, 1, false, true);
    onnxio__job job = {.kind = ONNXIO__JOB_PREAD, .fd = fd, .offset = 4096, .dst = dst, .size = 2 * MIB, .what = what};
    onnxio_status s = onnxio__pool_add(pool, &job);
    onnxio_status s2 = onnxio__pool_finish(pool);
    onnxio__fault_set(0, 0, false, false);
    CHECK_STATUS(s ? s : s2, ONNXIO_ERR_IO);
    CHECK_MSG(strstr(onnxio_last_error(), what) && strstr(onnxio_last_error(), "offset 4096"),
              "the read failure names the file and offset: %s", onnxio_last_error());

    tu_evict_fd(fd);
    CHECK_STATUS(onnxio__pool_new(2, &pool), ONNXIO_OK);
    onnxio__pool_read_direct(pool, true);
    job.offset = total - MIB;
    s = onnxio__pool_add(pool, &job);
    s2 = onnxio__pool_finish(pool);
    CHECK_STATUS(s ? s : s2, ONNXIO_ERR_IO);
    CHECK_MSG(strstr(onnxio_last_error(), "shorter"), "a read past the end says the file is shorter: %s",
              onnxio_last_error());
    free(dst);
}

/* The bytes of [0, size) of `fd` in the page cache, as mincore(2) on a
 * mapping of the file says (not the library's cachestat); -1: unknown
 * (always on Windows, which has no mincore). */
#ifdef _WIN32
static int64_t resident(int fd, uint64_t size)
{
    (void)fd, (void)size;
    return -1;
}
#else
static int64_t resident(int fd, uint64_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (size_t)((size + (uint64_t)page - 1) / (uint64_t)page);
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *vec = malloc(pages ? pages : 1);
    int64_t n = -1;
    if (map != MAP_FAILED && vec && mincore(map, (size_t)size, vec) == 0) {
        n = 0;
        for (size_t i = 0; i < pages; i++) n += (vec[i] & 1) ? page : 0;
    }
    if (map != MAP_FAILED) munmap(map, (size_t)size);
    free(vec);
    return n;
}
#endif

/* Drop-behind (pool.c, drop_behind): a cached file read whole by the
 * pool's buffered reads leaves the page cache as it goes when it and its
 * cached pages hold more than the memory available (set here through
 * onnxio__test_available_memory), and stays cached when they fit. The
 * bytes are right either way. */
static void drop_behind(int fd, const uint8_t *src, uint64_t total, const char *what)
{
    uint8_t *dst = malloc(total);
    if (!dst) return;
    tu_evict_fd(fd);
    int64_t evicted = resident(fd, total);
    for (int fits = 0; fits < 2; fits++) {
        for (uint64_t at = 0; at < total;) { /* warm: the whole file read once */
            long long n = tu_pread(fd, dst, total - at, at);
            if (n <= 0) break;
            at += (uint64_t)n;
        }
        int64_t before = resident(fd, total);
        onnxio__test_available_memory = fits ? 4 * total : total;
        onnxio__pool *pool = NULL;
        CHECK_STATUS(onnxio__pool_new(2, &pool), ONNXIO_OK);
        if (!pool) break;
        memset(dst, 0, total);
        onnxio__job job = {.kind = ONNXIO__JOB_PREAD, .fd = fd, .offset = 0, .dst = dst, .size = total, .what = what};
        CHECK_STATUS(onnxio__pool_add(pool, &job), ONNXIO_OK);
        CHECK_STATUS(onnxio__pool_finish(pool), ONNXIO_OK);
        onnxio__test_available_memory = 0;
        CHECK_MSG(memcmp(dst, src, (size_t)total) == 0, "%s: read exactly", fits ? "fits" : "does not fit");
        int64_t after = resident(fd, total);
        if (evicted < 0 || evicted > (int64_t)total / 4 || before < (int64_t)total * 9 / 10) {
            if (!fits && ONNXIO__OS_WINDOWS)
                tu_skip_windows("no mincore, and the pool does not drop pages behind: drop-behind not checked");
            else if (!fits)
                tu_skip("mincore cannot tell, or this file system keeps dropped pages: drop-behind not checked");
            continue;
        }
        if (fits)
            CHECK_MSG(after >= (int64_t)total * 9 / 10, "a file that fits stays cached (%lld of %llu bytes)",
                      (long long)after, (unsigned long long)total);
        else
            CHECK_MSG(after <= (int64_t)total / 4, "a file that does not fit leaves the cache as it is read (%lld of %llu bytes)",
                      (long long)after, (unsigned long long)total);
    }
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
    tu_begin("pool: jobs under 1 MiB in all run on the calling thread; the next starts the workers");
    small_jobs_start_no_thread(src, total);
    tu_end();
    tu_begin("pool: direct reads of a file out of the page cache, in place and through the bounce buffer, on 1 to 4 threads");
    for (int threads = 1; fd >= 0 && threads <= 4; threads++) run_direct(threads, src, fd, total, "source.bin");
    tu_end();
    tu_begin("pool: drop-behind of a cached file that does not fit beside its copy, and none when it fits");
    if (fd >= 0) drop_behind(fd, src, total, "source.bin");
    tu_end();
    tu_begin("pool: direct read failures");
    if (fd >= 0) direct_failures(fd, total, "source.bin");
    tu_end();
    onnxio__close(fd);
    free(src);
    free(path);
    tu_remove_tree(dir);
    free(dir);
    return tu_finish();
}
