/* A small pthread pool for payload copies, reads and writes (docs/design.md
 * "parallel"). Jobs are byte moves with no dependencies between them: the
 * structure is parsed or written on the calling thread while the workers
 * move payloads, and onnxio__pool_finish has the calling thread help with
 * what is left and then waits. Large jobs are cut into pieces so that one
 * big tensor still spreads over every thread. A pool of one thread runs
 * each job when it is added: nothing is queued, nothing is started. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool/pool.h"

/* Pieces of this size keep every thread busy on one large tensor while
 * costing one lock round trip per 8 MiB. */
#define PIECE_SIZE ONNXIO__CRC_PIECE
#define MAX_THREADS 64
/* With a cancel poll, a serial pool runs a large job in pieces of this
 * size and polls between them (a cold read of 64 MiB takes tens of ms). */
#define CANCEL_PIECE ((uint64_t)64 << 20)
/* A pool of several threads runs its jobs on the calling thread until
 * they have moved this many bytes: starting and joining the workers cost
 * a parse of a 1.6 KB model with one 1 KB payload 65 us on a 2-core VM
 * (1 us without them), the time a memcpy of about 1 MiB takes. A model of
 * small payloads starts no thread. */
#define THREADS_FROM ((uint64_t)1 << 20)

/* Direct reads (docs/io.md, "Cold ranges are read directly"). A cold buffered read of a
 * file into new memory is a read into the page cache and a copy out of it:
 * on this project's 2-core VM, two threads reading a cold 3.5 GiB file in 8
 * MiB preads took 3.9 s, the same reads with O_DIRECT 1.33 s and `cat` 1.28
 * s (0.5 GiB: 0.33, 0.18 and 0.18 s). A job's range is read directly when
 * fewer than half of its pages are cached (a warm read from the page
 * cache is several times faster than the device): straight into the job's
 * memory where the file offset and the address allow it, through a bounce
 * buffer of each thread where they do not (the payload then costs a
 * memcpy, 0.184 against 0.180 s at 0.5 GiB). */
struct onnxio__pool_file {
    int fd;                 /* the jobs' descriptor */
    bool direct_tried;      /* dfd opened (for the file's first cold job) */
    int dfd;                /* the same file, O_DIRECT; -1: cannot, or not yet */
    uint32_t mem_align, offset_align;
    atomic_bool off;        /* a direct read failed as unsupported (EINVAL): buffered from then on */
    struct onnxio__pool_file *next;
};
/* Each thread's bounce buffer: whole huge pages, so that a direct read
 * into it pins a few pages, not 512. */
#define BOUNCE_SIZE ((size_t)2 << 20)

struct onnxio__pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* workers: a job was added or the pool is closing */
    pthread_cond_t idle;     /* finish: a worker finished its job */
    onnxio__job *jobs;
    size_t count, capacity, next, running;
    int threads;             /* wanted, counting the calling thread */
    /* Wanted once a read goes to the device directly: a thread waiting on
     * the device uses no core, so more of them keep more reads in flight
     * (num_threads 0: twice the cores; else num_threads). A cold 0.5 GiB
     * load on 2 cores: 0.195-0.201 s with 4 threads, 0.210-0.216 s with 2;
     * warm copies, which use the cores, stay at `threads` (0.042 s with 2
     * threads, 0.052-0.057 s with 3 or 4). */
    int io_threads;
    bool reading_direct;     /* a job that reads directly was queued */
    int started;             /* workers started so far */
    int closing;
    /* The lock and conditions are made with the first job of a pool of
     * several threads, the worker and bounce arrays when first needed: a
     * parse that queues no job (every small input) makes no pool at all:
     * its payloads make theirs with the first job (payload.c). */
    bool synced;
    uint64_t ran_here;       /* bytes of the jobs run on the calling thread before any worker started */
    pthread_t *workers;      /* MAX_THREADS of them */
    onnxio_buffer **keeps;   /* references held for queued jobs (job.keep) */
    size_t keep_count, keep_capacity;
    onnxio_status status;    /* the first failure */
    char error[512];
    /* The operation's progress (onnxio__progress_now() when the pool was
     * made), or NULL: counted by whichever thread runs a job, reported by
     * the thread that made the pool (in add and finish). */
    onnxio__progress *progress;
    /* The operation's cancel poll (onnxio__cancel_now()), or NULL: polled
     * by the thread that made the pool where it reports progress, and
     * while it waits; once cancelled, workers drop the jobs left. */
    onnxio__cancel *cancel;
    /* Drop-behind (drop_behind): the memory free when the first read was
     * queued, and MemAvailable when first needed; the sizes of the files
     * read, and how much of them was cached when each was first read;
     * whether reads drop behind (once they do, they go on). */
    bool free_known, memory_known, dropping;
    uint64_t free, available, file_bytes, cached_files;
    bool direct;             /* onnxio__pool_read_direct */
    struct onnxio__pool_file *files; /* one per descriptor read so far (file_of) */
    /* Bounce buffers by thread slot (workers 0.., the calling thread
     * MAX_THREADS - 1), made by that thread on its first need; the array,
     * by the calling thread with the first direct read. */
    onnxio_buffer **bounce;
};

int onnxio__num_threads(int requested)
{
    if (requested > 0) return requested > MAX_THREADS ? MAX_THREADS : requested;
    /* Asked once per process: glibc reads /sys/devices/system/cpu/online
     * on every call (three system calls, about 3 us: more than the whole
     * parse of a small model). */
    static atomic_int cores;
    int n = atomic_load_explicit(&cores, memory_order_relaxed);
    if (n == 0) {
        unsigned c = onnxio__sys_cpu_count();
        n = c > MAX_THREADS ? MAX_THREADS : (int)c;
        atomic_store_explicit(&cores, n, memory_order_relaxed);
    }
    return n;
}

/* Bytes moved between CRC updates: small enough that they are still in
 * the cache when the CRC reads them. A 1 MiB pread leaves its bytes out of
 * the cache on this project's machine: ISA-L's CRC-32 then read them at
 * 18 GB/s, against 61 GB/s after a 128 KiB pread (one thread, warm file).
 * Warm 0.5 GiB .onnxz loads, one process, interleaved with the same model
 * as external data, medians of 25: the CRC added 21-22 ms of CPU (+10%
 * wall) with 1 MiB steps, 7-11 ms (+3%) with 128 KiB. */
#define CRC_STEP (128u << 10)

bool onnxio__file_cold(int fd, uint64_t offset, uint64_t size)
{
    uint64_t cached;
    return onnxio__sys_cached(fd, offset, size, &cached) == 0 && cached < size / 2;
}

/* Reads [at, end) of the direct descriptor into dst through `bounce`.
 * 0: done; 1: not possible this way (the caller reads buffered); -1: an
 * I/O error (errno set). */
static int bounce_read(struct onnxio__pool_file *d, uint8_t *bounce, uint8_t *dst, uint64_t at, uint64_t end)
{
    uint64_t a = d->offset_align;
    while (at < end) {
        uint64_t from = at / a * a;
        uint64_t to = (end + a - 1) / a * a;
        size_t want = to - from > BOUNCE_SIZE ? BOUNCE_SIZE : (size_t)(to - from);
        ssize_t n = onnxio__sys_pread(d->dfd, bounce, want, from);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno == EINVAL ? 1 : -1;
        /* Short of the bytes asked for: the end of the file, or a read the
         * device cut; the buffered read says which. */
        if ((uint64_t)n <= at - from) return 1;
        uint64_t got = from + (uint64_t)n < end ? from + (uint64_t)n - at : end - at;
        memcpy(dst, bounce + (at - from), (size_t)got);
        dst += got;
        at += got;
    }
    return 0;
}

/* A PREAD job read with direct I/O: 0 done, 1 read it buffered instead
 * (cached, or direct reads not possible), -1 an I/O error (errno set). */
static int read_direct(onnxio__pool *p, int slot, const onnxio__job *j)
{
    struct onnxio__pool_file *d = j->direct;
    if (!d || atomic_load_explicit(&d->off, memory_order_relaxed) || !onnxio__file_cold(j->fd, j->offset, j->size)) return 1;
    if (!p->bounce[slot] && !(p->bounce[slot] = onnxio_buffer_new(BOUNCE_SIZE, 4096))) return 1;
    uint8_t *bounce = onnxio_buffer_data(p->bounce[slot]);
    uint64_t a = d->offset_align, end = j->offset + j->size;
    uint64_t mid = (j->offset + a - 1) / a * a, mid_end = end / a * a;
    uint8_t *at = j->dst + (mid - j->offset);
    int r = 0;
    if (mid_end > mid && (uintptr_t)at % d->mem_align == 0) {
        /* Straight into the job's memory; the unaligned ends through the
         * bounce buffer. */
        for (uint64_t done = 0; !r && done < mid_end - mid;) {
            uint64_t left = mid_end - mid - done;
            ssize_t n = onnxio__sys_pread(d->dfd, at + done, left > (1u << 30) ? (1u << 30) : (size_t)left, mid + done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) r = errno == EINVAL ? 1 : -1;
            else if (n == 0 || (uint64_t)n % a) r = 1;
            else done += (uint64_t)n;
        }
        if (!r && mid > j->offset) r = bounce_read(d, bounce, j->dst, j->offset, mid);
        if (!r && end > mid_end) r = bounce_read(d, bounce, j->dst + (mid_end - j->offset), mid_end, end);
    } else {
        r = bounce_read(d, bounce, j->dst, j->offset, end);
    }
    if (r == 1 && errno == EINVAL) atomic_store(&d->off, true);
    return r;
}

/* The message of a failed read or write job: `why`, or errno's text. */
static onnxio_status io_error(const onnxio__job *j, bool reading, const char *why, char *error, size_t error_size)
{
    snprintf(error, error_size, "cannot %s %llu bytes at offset %llu of %s: %s", reading ? "read" : "write",
             (unsigned long long)j->size, (unsigned long long)j->offset, j->what, why ? why : strerror(errno));
    return ONNXIO_ERR_IO;
}

/* The block digests of `size` bytes at `bytes` (see onnxio__job.digest):
 * stored, or compared. Up to 16 blocks at a time go to
 * onnxio__sha256_many, which hashes those of one size together on the
 * CPU's vector lanes (a piece's 1 MiB blocks but its last); then the
 * digests are stored or compared in order. */
static onnxio_status block_digests(const onnxio__job *j, const uint8_t *bytes, char *error, size_t error_size)
{
    enum { BATCH = 16 };
    for (uint64_t at = 0, k = 0; at < j->size;) {
        const uint8_t *data[BATCH];
        size_t size[BATCH], n = 0;
        uint8_t d[BATCH][32];
        for (uint64_t from = at; n < BATCH && from < j->size; from += j->digest_block, n++) {
            data[n] = bytes + from;
            size[n] = j->size - from < j->digest_block ? (size_t)(j->size - from) : (size_t)j->digest_block;
        }
        uint8_t(*got)[32] = j->digest ? j->digest + k : d;
        onnxio__sha256_many(data, size, n, got);
        for (size_t i = 0; i < n; i++, k++) {
            if (j->expect && memcmp(got[i], j->expect[k], 32) != 0) {
                uint64_t block = j->first_block + k, from = block * j->digest_block;
                snprintf(error, error_size,
                         "tensor '%s': block %llu (its bytes %llu to %llu, from %s) does not match its SHA-256 digest",
                         j->tensor ? j->tensor : "", (unsigned long long)block, (unsigned long long)from,
                         (unsigned long long)(from + size[i]), j->what ? j->what : "its data");
                return ONNXIO_ERR_CHECKSUM;
            }
            at += size[i];
        }
    }
    return ONNXIO_OK;
}

static onnxio_status run_job(onnxio__pool *p, int slot, const onnxio__job *j, char *error, size_t error_size)
{
    uint32_t crc = 0;
    if (j->kind == ONNXIO__JOB_DIGEST) return block_digests(j, j->src, error, error_size);
    if (j->digest && j->kind == ONNXIO__JOB_PWRITE) {
        onnxio_status s = block_digests(j, j->src, error, error_size);
        if (s) return s;
    }
    if (j->kind == ONNXIO__JOB_MOVE) {
        memmove(j->dst, j->src, (size_t)j->size);
        if (j->rest_size) memcpy(j->rest_dst, j->rest, (size_t)j->rest_size);
        return ONNXIO_OK;
    }
    if (j->kind == ONNXIO__JOB_COPY || j->kind == ONNXIO__JOB_CRC) {
        if (!j->crc) {
            memcpy(j->dst, j->src, (size_t)j->size);
            return j->expect ? block_digests(j, j->dst, error, error_size) : ONNXIO_OK;
        }
        for (uint64_t at = 0; at < j->size; at += CRC_STEP) {
            size_t n = j->size - at < CRC_STEP ? (size_t)(j->size - at) : CRC_STEP;
            if (j->kind == ONNXIO__JOB_COPY) memcpy(j->dst + at, j->src + at, n);
            crc = onnxio__crc32(crc, j->src + at, n);
        }
        *j->crc = crc;
        return j->expect ? block_digests(j, j->src, error, error_size) : ONNXIO_OK;
    }
    int reading = j->kind == ONNXIO__JOB_PREAD;
    if (reading && p && p->direct) {
        errno = 0;
        int r = read_direct(p, slot, j);
        if (r < 0) return io_error(j, true, NULL, error, error_size);
        if (r == 0) {
            if (j->crc) *j->crc = onnxio__crc32(0, j->dst, j->size);
            return j->expect ? block_digests(j, j->dst, error, error_size) : ONNXIO_OK;
        }
    }
    if (j->crc && !reading) crc = onnxio__crc32(0, j->src, j->size);
    uint64_t step = j->crc && reading ? CRC_STEP : (1u << 30);
    for (uint64_t done = 0; done < j->size;) {
        uint64_t want = j->size - done;
        size_t n1 = want > step ? (size_t)step : (size_t)want;
        off_t at = (off_t)(j->offset + done);
        ssize_t n = reading ? onnxio__sys_pread(j->fd, j->dst + done, n1, (uint64_t)at)
                            : onnxio__sys_pwrite(j->fd, j->src + done, n1, (uint64_t)at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return io_error(j, reading,
                            n < 0     ? NULL
                            : reading ? "the file is shorter than expected (changed while loading?)"
                                      : "no progress",
                            error, error_size);
        if (j->crc && reading) crc = onnxio__crc32(crc, j->dst + done, (size_t)n);
        done += (uint64_t)n;
    }
    if (j->crc) *j->crc = crc;
    if (reading && j->drop_behind) onnxio__sys_drop_cached(j->fd, j->offset, j->size);
    return reading && j->expect ? block_digests(j, j->dst, error, error_size) : ONNXIO_OK;
}

onnxio_status onnxio__job_run(const onnxio__job *job)
{
    char error[512];
    onnxio_status s = run_job(NULL, 0, job, error, sizeof error);
    return s ? onnxio__fail(s, "%s", error) : ONNXIO_OK;
}

static bool counted(const onnxio__job *j)
{
    return j->kind != ONNXIO__JOB_CRC && j->kind != ONNXIO__JOB_DIGEST && !j->not_payload;
}

/* Whether the calling thread reports progress or polls a cancel. */
static bool watched(const onnxio__pool *p) { return p->progress || p->cancel; }

/* The calling thread reports progress and polls the cancel (the lock not
 * held); a cancel becomes the pool's failure, so that the jobs left are
 * dropped. */
static onnxio_status report(onnxio__pool *p, bool threaded)
{
    onnxio_status s = onnxio__progress_report(p->progress, false);
    if (!s) s = onnxio__cancel_poll(p->cancel);
    if (!s) return ONNXIO_OK;
    if (threaded) pthread_mutex_lock(&p->lock);
    if (!p->status) {
        p->status = s;
        snprintf(p->error, sizeof p->error, "%s", onnxio_last_error());
    }
    if (threaded) pthread_mutex_unlock(&p->lock);
    return s;
}

/* Takes and runs jobs until none is left; the lock is held on entry and
 * exit. `caller`: the thread that made the pool, which reports progress
 * after each job it ran. */
static void drain(onnxio__pool *p, bool caller, int slot)
{
    while (p->next < p->count) {
        onnxio__job j = p->jobs[p->next++];
        p->running++;
        pthread_mutex_unlock(&p->lock);
        char error[512];
        /* After a failure or a cancel. */
        bool dropped = p->status != ONNXIO_OK || onnxio__cancelled(p->cancel);
        onnxio_status s = dropped ? ONNXIO_OK : run_job(p, slot, &j, error, sizeof error);
        if (!dropped && !s && p->progress && counted(&j)) onnxio__progress_add(p->progress, j.size);
        if (caller && watched(p)) report(p, true);
        pthread_mutex_lock(&p->lock);
        if (s && !p->status) {
            p->status = s;
            memcpy(p->error, error, sizeof error);
        }
        p->running--;
        /* With progress, finish wakes after every job to report it. */
        if ((p->running == 0 && p->next == p->count) || p->progress) pthread_cond_broadcast(&p->idle);
    }
}

static void *worker(void *arg)
{
    onnxio__pool *p = arg;
    pthread_mutex_lock(&p->lock);
    /* This worker's place in p->workers: its bounce buffer slot (written
     * by pthread_create while onnxio__pool_add holds the lock). */
    int slot = 0;
    while (!pthread_equal(p->workers[slot], pthread_self())) slot++;
    for (;;) {
        drain(p, false, slot);
        if (p->closing) break;
        pthread_cond_wait(&p->wake, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

onnxio_status onnxio__pool_new(int num_threads, onnxio__pool **out)
{
    onnxio__pool *p = onnxio__calloc(1, sizeof *p);
    if (!p) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    p->threads = onnxio__num_threads(num_threads);
    p->io_threads = num_threads == 0 && p->threads > 1 ? onnxio__num_threads(2 * p->threads) : p->threads;
    p->progress = onnxio__progress_now();
    p->cancel = onnxio__cancel_now();
    *out = p;
    return ONNXIO_OK;
}

static onnxio_status push(onnxio__pool *p, const onnxio__job *j)
{
    if (!onnxio__grow((void **)&p->jobs, &p->capacity, p->count, sizeof *p->jobs))
        return ONNXIO_ERR_NO_MEMORY;
    p->jobs[p->count++] = *j;
    return ONNXIO_OK;
}

static onnxio_status keep(onnxio__pool *p, onnxio_buffer *b)
{
    if (!onnxio__grow((void **)&p->keeps, &p->keep_capacity, p->keep_count, sizeof *p->keeps))
        return ONNXIO_ERR_NO_MEMORY;
    p->keeps[p->keep_count++] = onnxio_buffer_ref(b);
    return ONNXIO_OK;
}

/* The part of `job` from byte `at`, at most `step` bytes (a whole CRC
 * piece when the job computes CRCs). */
static onnxio__job piece_of(const onnxio__job *job, uint64_t at, uint64_t step)
{
    onnxio__job piece = *job;
    piece.size = job->size - at < step ? job->size - at : step;
    piece.offset = job->offset + at;
    if (piece.dst) piece.dst += at;
    if (piece.src) piece.src += at;
    if (piece.crc) piece.crc += at / PIECE_SIZE;
    if (piece.digest_block) {
        if (piece.digest) piece.digest += at / job->digest_block;
        if (piece.expect) piece.expect += at / job->digest_block;
        piece.first_block += at / job->digest_block;
    }
    return piece;
}

void onnxio__pool_read_direct(onnxio__pool *p, bool on) { p->direct = on; }

/* Whether a read of `fd` queued now drops behind: when the files this
 * pool reads from, as large as they are and as much of them as was cached
 * when each was first read, hold more than the memory free when the first
 * read was queued and then more than MemAvailable (read once, when first
 * needed), the copies and the cache cannot both stay, and the kernel would
 * take from the page cache first the pages not read yet (read once, by
 * whatever warmed the file: the inactive list) rather than those just
 * copied out (read a second time: active). Each buffered read then drops
 * the pages it copied out (onnxio__sys_drop_cached), from the first read
 * on, so that what the copies take the cache gives back. Warm 16 GiB copy
 * loads with 7 GiB free beside the cached file, fresh C processes:
 * external data 5.7-7.7 s against 9.4-10.1 s, .onnxz 5.3 against 9.1 s.
 * A load that fits leaves the page cache as it was. */
static bool drop_behind(onnxio__pool *p)
{
    if (p->dropping) return true; /* what is needed only grows */
    /* Free memory first (a system call): MemAvailable is a file to read,
     * which a load that fits in free memory never reads. */
    uint64_t need = p->file_bytes + p->cached_files;
    if (!p->free_known) {
        p->free = onnxio__sys_free_memory();
        p->free_known = true;
    }
    if (need <= p->free) return false;
    if (!p->memory_known) {
        p->available = onnxio__sys_available_memory();
        p->memory_known = true;
    }
    p->dropping = p->available != UINT64_MAX && need > p->available;
    return p->dropping;
}

/* The record of the file `fd`, made at its first read: its size and how
 * much of it is cached then count for drop_behind. NULL when out of
 * memory (the read then neither counts nor reads directly). */
static struct onnxio__pool_file *file_of(onnxio__pool *p, int fd)
{
    struct onnxio__pool_file *f = p->files;
    while (f && f->fd != fd) f = f->next;
    if (f) return f;
    if (!(f = onnxio__calloc(1, sizeof *f))) return NULL;
    f->fd = fd;
    f->dfd = -1;
    f->next = p->files;
    p->files = f;
    struct stat st;
    uint64_t cached;
    if (onnxio__sys_fstat(fd, &st) == 0 && st.st_size > 0) {
        p->file_bytes += (uint64_t)st.st_size;
        if (onnxio__sys_cached(fd, 0, (uint64_t)st.st_size, &cached) == 0) p->cached_files += cached;
    }
    return f;
}

/* The file `f` when it reads directly: its direct descriptor opened for its
 * first cold job (a failed open is remembered: dfd -1), or NULL. */
static struct onnxio__pool_file *direct_of(struct onnxio__pool_file *f)
{
    if (!f) return NULL;
    if (!f->direct_tried) {
        f->direct_tried = true;
        f->dfd = onnxio__sys_open_direct(f->fd, &f->mem_align, &f->offset_align);
    }
    return f->dfd >= 0 ? f : NULL;
}

/* The size of the pieces a job is cut in: never a MOVE (its ranges
 * overlap, so a piece would overwrite the source of the next); on the
 * workers PIECE_SIZE; on a serial pool only where the pieces matter, cut
 * as on the workers (a CRC piece is the same whatever the count, and
 * progress is reported after each piece). */
static uint64_t piece_step(const onnxio__pool *p, const onnxio__job *job, bool serial)
{
    if (job->kind == ONNXIO__JOB_MOVE) return job->size;
    if (!serial || job->crc || job->digest_block || p->progress) return PIECE_SIZE;
    return p->cancel ? CANCEL_PIECE : job->size;
}

onnxio_status onnxio__pool_add(onnxio__pool *p, const onnxio__job *in)
{
    onnxio__job with = *in;
    const onnxio__job *job = &with;
    /* Only a job mostly out of the page cache may read directly: a warm
     * load opens no second descriptor and starts no extra thread. */
    with.direct = NULL;
    if (in->kind == ONNXIO__JOB_PREAD && in->size) {
        struct onnxio__pool_file *f = file_of(p, in->fd);
        with.direct = p->direct && onnxio__file_cold(in->fd, in->offset, in->size) ? direct_of(f) : NULL;
        with.drop_behind = drop_behind(p);
    }
    if (with.direct && !p->bounce && !(p->bounce = onnxio__calloc(MAX_THREADS, sizeof *p->bounce)))
        with.direct = NULL; /* read buffered */
    if (with.direct) p->reading_direct = true;
    int wanted = p->reading_direct ? p->io_threads : p->threads;
    if (job->size == 0) {
        if (job->crc) job->crc[0] = 0;
        return ONNXIO_OK;
    }
    bool here = p->threads <= 1 || (!p->started && !with.direct && job->size <= THREADS_FROM - p->ran_here);
    if (here && p->threads > 1) p->ran_here += job->size;
    if (!here && !p->synced) {
        if (!(p->workers = onnxio__malloc(MAX_THREADS * sizeof *p->workers)))
            return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory for the job list");
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        pthread_cond_init(&p->idle, NULL);
        p->synced = true;
    }
    /* Reported before the job is queued, so that the first call says 0
     * bytes done: once the job is queued a worker may finish a piece of
     * it before this thread reports. */
    if (watched(p) && !p->status) {
        onnxio_status s = report(p, p->synced);
        if (s) return onnxio__fail(s, "%s", p->error);
    }
    if (here) {
        if (p->status) return p->status;
        onnxio_status s = ONNXIO_OK;
        uint64_t step = piece_step(p, job, true);
        for (uint64_t at = 0; !s && at < job->size; at += step) {
            onnxio__job piece = piece_of(job, at, step);
            char error[512];
            if ((s = run_job(p, MAX_THREADS - 1, &piece, error, sizeof error))) onnxio__fail(s, "%s", error);
            if (!s && p->progress && counted(&piece)) {
                onnxio__progress_add(p->progress, piece.size);
                s = onnxio__progress_report(p->progress, false);
            }
            if (!s) s = onnxio__cancel_poll(p->cancel);
        }
        if (s) {
            p->status = s;
            snprintf(p->error, sizeof p->error, "%s", onnxio_last_error());
        }
        return s;
    }
    pthread_mutex_lock(&p->lock);
    onnxio_status s = p->status;
    if (!s && job->keep) s = keep(p, job->keep);
    uint64_t step = piece_step(p, job, false);
    for (uint64_t at = 0; !s && at < job->size; at += step) {
        onnxio__job piece = piece_of(job, at, step);
        s = push(p, &piece);
    }
    /* Workers start with the first job past THREADS_FROM, so a load
     * without large payloads never starts a thread. */
    if (!s && p->started < wanted - 1) {
        /* Workers block every signal (they inherit the mask): a process's
         * handlers run on its own threads, where onnxio's state is
         * consistent (onnxio_remove_temporary_files relies on it). */
        onnxio__signals old;
        onnxio__sys_signals_block(&old);
        while (p->started < wanted - 1) {
            if (pthread_create(&p->workers[p->started], NULL, worker, p) != 0) break;
            p->started++;
        }
        onnxio__sys_signals_restore(&old);
    }
    if (!s) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    /* A direct read pins its destination, faulting (and zeroing) new
     * memory page by page before the device is asked. This thread faults
     * it in meanwhile, while the workers wait on the device: a cold 0.5
     * GiB load, fresh processes, medians of 9: .onnx 0.181 s against
     * 0.199, external data 0.176 against 0.185, .onnxz 0.186 against
     * 0.209; 3.5 GiB .onnx 1.32 against 1.42 s. */
    if (!s && with.direct) {
        /* In pieces with a cancel poll, so that the poll comes often. */
        uint64_t step = p->cancel ? CANCEL_PIECE : with.size;
        for (uint64_t at = 0; !s && at < with.size; at += step) {
            onnxio__map_populate(with.dst + at, (size_t)(with.size - at < step ? with.size - at : step));
            if (p->cancel) s = report(p, true);
        }
    }
    if (!s && watched(p)) s = report(p, true);
    if (s == ONNXIO_ERR_NO_MEMORY) return onnxio__fail(s, "out of memory for the job list");
    if (s) return onnxio__fail(s, "%s", p->error);
    return ONNXIO_OK;
}

onnxio_status onnxio__pool_finish(onnxio__pool *p)
{
    if (!p) return ONNXIO_OK;
    onnxio_status s;
    if (p->synced) {
        pthread_mutex_lock(&p->lock);
        drain(p, true, MAX_THREADS - 1);
        while (p->running) {
            if (p->cancel) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += ONNXIO_CANCEL_POLL_MS * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                    until.tv_sec++;
                    until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&p->idle, &p->lock, &until);
            } else {
                pthread_cond_wait(&p->idle, &p->lock);
            }
            if (watched(p)) {
                pthread_mutex_unlock(&p->lock);
                report(p, true);
                pthread_mutex_lock(&p->lock);
            }
        }
        p->closing = 1;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < p->started; i++) pthread_join(p->workers[i], NULL);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->idle);
    }
    s = p->status;
    if (s) onnxio__fail(s, "%s", p->error);
    for (size_t i = 0; i < p->keep_count; i++) onnxio_buffer_unref(p->keeps[i]);
    for (int i = 0; p->bounce && i < MAX_THREADS; i++) onnxio_buffer_unref(p->bounce[i]);
    onnxio__free(p->bounce);
    onnxio__free(p->workers);
    while (p->files) {
        struct onnxio__pool_file *f = p->files;
        p->files = f->next;
        onnxio__close(f->dfd);
        onnxio__free(f);
    }
    onnxio__free(p->keeps);
    onnxio__free(p->jobs);
    onnxio__free(p);
    return s;
}

/* ---- a task on a thread of its own ------------------------------------- */

static void task_run(onnxio__task *t)
{
    t->status = t->fn(t->arg);
    if (t->status) snprintf(t->error, sizeof t->error, "%s", onnxio_last_error());
}

static void *task_main(void *arg)
{
    task_run(arg);
    return NULL;
}

void onnxio__task_start(onnxio__task *t, int num_threads, onnxio_status (*fn)(void *arg), void *arg)
{
    t->fn = fn;
    t->arg = arg;
    t->status = ONNXIO_OK;
    t->started = true;
    t->running = false;
    if (onnxio__num_threads(num_threads) > 1) {
        onnxio__signals old;
        onnxio__sys_signals_block(&old);
        t->running = pthread_create(&t->thread, NULL, task_main, t) == 0;
        onnxio__sys_signals_restore(&old);
    }
    if (!t->running) task_run(t);
}

onnxio_status onnxio__task_join(onnxio__task *t, onnxio_status s)
{
    if (!t->started) return s;
    if (t->running) pthread_join(t->thread, NULL);
    t->running = t->started = false;
    if (s || !t->status) return s;
    return onnxio__fail(t->status, "%s", t->error);
}
