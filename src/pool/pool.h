/* The pool layer (docs/design.md, "Layers"): byte moves, reads and
 * writes run on a few threads (pool.c). */
#ifndef ONNXIO_POOL_POOL_H
#define ONNXIO_POOL_POOL_H

#include <pthread.h>

#include "memory/memory.h"

/* pool.c: payload byte moves run on a few threads (docs/design.md "parallel"). */
typedef enum onnxio__job_kind {
    ONNXIO__JOB_COPY,   /* memcpy(dst, src, size) */
    ONNXIO__JOB_PREAD,  /* read `size` bytes at `offset` of `fd` into dst */
    ONNXIO__JOB_PWRITE, /* write `size` bytes from src at `offset` of `fd` */
    ONNXIO__JOB_CRC,    /* only the CRC-32 of src (crc must be set) */
    ONNXIO__JOB_MOVE,   /* memmove(dst, src, size), then rest (below): the ranges may overlap, so it is never cut in pieces (no crc) */
    ONNXIO__JOB_DIGEST, /* only the block digests of src, checked against `expect` (below) */
} onnxio__job_kind;
typedef struct onnxio__job {
    onnxio__job_kind kind;
    int fd;
    uint64_t offset;
    uint8_t *dst;
    const uint8_t *src;
    uint64_t size;
    const char *what; /* file or tensor named in errors; must outlive the pool */
    /* The buffer that dst points into, or NULL. A queued job holds a
     * reference to it until onnxio__pool_finish, because the payload it fills
     * can be replaced before it runs (raw_data, or a whole tensor, read twice
     * in one message: the last one wins). */
    onnxio_buffer *keep;
    /* When set, the CRC-32 (zlib's crc32) of the bytes the job moves is
     * computed as they move: the job is cut into ONNXIO__CRC_PIECE pieces
     * (also on a serial pool) and piece k stores its CRC in crc[k]; after
     * onnxio__pool_finish, onnxio__crc_join gives the whole CRC. */
    uint32_t *crc;
    /* Block digests (docs/design.md, "Block digests"): the bytes the job
     * moves are blocks of `digest_block` bytes (a power of two dividing
     * ONNXIO__CRC_PIECE), the last one shorter, numbered from
     * `first_block`. A PWRITE job stores the SHA-256 of block k (counted
     * from the job's start) in digest[k] before it writes; a DIGEST job,
     * and a COPY or PREAD job once it has moved a piece, compares it with
     * expect[k] and fails with ONNXIO_ERR_CHECKSUM naming `tensor`, the
     * block and its bytes. Pieces are cut on block boundaries. */
    uint8_t (*digest)[32];
    const uint8_t (*expect)[32];
    uint64_t digest_block, first_block;
    const char *tensor;
    /* Not payload bytes: a job the progress of the operation does not
     * count (CRC and DIGEST jobs are never counted). */
    bool not_payload;
    /* Set by the pool (onnxio__pool_read_direct): the direct descriptor
     * of fd that a read reads through when its range is not cached. */
    struct onnxio__pool_file *direct;
    /* Set by the pool (drop_behind in pool.c): a buffered read of the job
     * drops the pages it copied out from the page cache. */
    bool drop_behind;
    /* MOVE: then rest_size bytes from rest to rest_dst (after the move). */
    const uint8_t *rest;
    uint8_t *rest_dst;
    uint64_t rest_size;
} onnxio__job;

typedef struct onnxio__pool onnxio__pool;
/* num_threads as in the options: 0 = one per core, 1 = serial. */
int onnxio__num_threads(int requested);
onnxio_status onnxio__pool_new(int num_threads, onnxio__pool **out);
/* Queues a job (a serial pool runs it now). The memory it touches must stay
 * valid until onnxio__pool_finish. After a failure, later jobs are dropped
 * and the failure is returned. */
onnxio_status onnxio__pool_add(onnxio__pool *pool, const onnxio__job *job);
/* Lets the pool read PREAD jobs' ranges that the page cache does not hold
 * with direct I/O (O_DIRECT): the device writes them into the job's
 * memory, with no page-cache copy in between (docs/design.md, "Cold
 * reads"). For copy loads: the bytes read this way are not left in the
 * page cache. Ranges mostly cached, and files or systems that cannot read
 * directly, are read as before. Call before the first job is added. */
void onnxio__pool_read_direct(onnxio__pool *pool, bool on);
/* The rule for "cold" (pool.c): fewer than half of the pages of the range
 * are in the page cache (false when the kernel cannot tell). A cold range
 * is read directly; a cold .onnxz archive is read whole
 * (onnxio__archive_read). */
bool onnxio__file_cold(int fd, uint64_t offset, uint64_t size);
/* Runs one job now on the calling thread (last error set on failure). */
onnxio_status onnxio__job_run(const onnxio__job *job);
/* Runs what is left (the calling thread helps), waits for every job, frees
 * the pool and returns the first failure. Must be called before the memory
 * of any queued job is freed, also on error paths. NULL is a no-op. */
onnxio_status onnxio__pool_finish(onnxio__pool *pool);

/* One function run on a thread of its own beside the pool (the SHA-1 of a
 * data file while the pool writes it and the file is synced), its signals
 * blocked as a worker's. onnxio__task_start runs it on the calling thread
 * instead when `num_threads` (as in the options) means serial, or when no
 * thread can start; onnxio__task_join waits for it and returns `s` when it
 * is a failure (the caller's own, its message kept), else the task's
 * status, its message set again on the calling thread. Every started task
 * must be joined, also on error paths; joining one never started returns
 * `s`. */
typedef struct onnxio__task {
    onnxio_status (*fn)(void *arg);
    void *arg;
    onnxio_status status;
    char error[512];
    pthread_t thread;
    bool running, started;
} onnxio__task;
void onnxio__task_start(onnxio__task *t, int num_threads, onnxio_status (*fn)(void *arg), void *arg);
onnxio_status onnxio__task_join(onnxio__task *t, onnxio_status s);

#endif
