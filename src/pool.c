/* A small pthread pool for payload copies, reads and writes (docs/design.md
 * "parallel"). Jobs are byte moves with no dependencies between them: the
 * structure is parsed or written on the calling thread while the workers
 * move payloads, and onnxio__pool_finish has the calling thread help with
 * what is left and then waits. Large jobs are cut into pieces so that one
 * big tensor still spreads over every thread. A pool of one thread runs
 * each job when it is added: nothing is queued, nothing is started. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Pieces of this size keep every thread busy on one large tensor while
 * costing one lock round trip per 8 MiB. */
#define PIECE_SIZE ONNXIO__CRC_PIECE
#define MAX_THREADS 64

struct onnxio__pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* workers: a job was added or the pool is closing */
    pthread_cond_t idle;     /* finish: a worker finished its job */
    onnxio__job *jobs;
    size_t count, capacity, next, running;
    int threads;             /* wanted, counting the calling thread */
    int started;             /* workers started so far */
    int closing;
    pthread_t workers[MAX_THREADS];
    onnxio_buffer **keeps;   /* references held for queued jobs (job.keep) */
    size_t keep_count, keep_capacity;
    onnxio_status status;    /* the first failure */
    char error[512];
    /* The operation's progress (onnxio__progress_now() when the pool was
     * made), or NULL: counted by whichever thread runs a job, reported by
     * the thread that made the pool (in add and finish). */
    onnxio__progress *progress;
};

int onnxio__num_threads(int requested)
{
    if (requested > 0) return requested > MAX_THREADS ? MAX_THREADS : requested;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* Bytes moved between CRC updates: small enough that they are still in
 * the cache when the CRC reads them. */
#define CRC_STEP (1u << 20)

static onnxio_status run_job(const onnxio__job *j, char *error, size_t error_size)
{
    uint32_t crc = 0;
    if (j->kind == ONNXIO__JOB_COPY || j->kind == ONNXIO__JOB_CRC) {
        if (!j->crc) {
            memcpy(j->dst, j->src, (size_t)j->size);
            return ONNXIO_OK;
        }
        for (uint64_t at = 0; at < j->size; at += CRC_STEP) {
            size_t n = j->size - at < CRC_STEP ? (size_t)(j->size - at) : CRC_STEP;
            if (j->kind == ONNXIO__JOB_COPY) memcpy(j->dst + at, j->src + at, n);
            crc = onnxio__crc32(crc, j->src + at, n);
        }
        *j->crc = crc;
        return ONNXIO_OK;
    }
    int reading = j->kind == ONNXIO__JOB_PREAD;
    if (j->crc && !reading) crc = onnxio__crc32(0, j->src, j->size);
    uint64_t step = j->crc && reading ? CRC_STEP : (1u << 30);
    for (uint64_t done = 0; done < j->size;) {
        uint64_t want = j->size - done;
        size_t n1 = want > step ? (size_t)step : (size_t)want;
        off_t at = (off_t)(j->offset + done);
        ssize_t n = reading ? onnxio__sys_pread(j->fd, j->dst + done, n1, (uint64_t)at)
                            : onnxio__sys_pwrite(j->fd, j->src + done, n1, (uint64_t)at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(error, error_size, "cannot %s %llu bytes at offset %llu of %s: %s", reading ? "read" : "write",
                     (unsigned long long)j->size, (unsigned long long)j->offset, j->what,
                     n < 0 ? strerror(errno)
                           : reading ? "the file is shorter than expected (changed while loading?)" : "no progress");
            return ONNXIO_ERR_IO;
        }
        if (j->crc && reading) crc = onnxio__crc32(crc, j->dst + done, (size_t)n);
        done += (uint64_t)n;
    }
    if (j->crc) *j->crc = crc;
    return ONNXIO_OK;
}

onnxio_status onnxio__job_run(const onnxio__job *job)
{
    char error[512];
    onnxio_status s = run_job(job, error, sizeof error);
    return s ? onnxio__fail(s, "%s", error) : ONNXIO_OK;
}

static bool counted(const onnxio__job *j) { return j->kind != ONNXIO__JOB_CRC && !j->not_payload; }

/* The calling thread reports progress (the lock not held); a cancel
 * becomes the pool's failure, so that the jobs left are dropped. */
static onnxio_status report(onnxio__pool *p, bool threaded)
{
    onnxio_status s = onnxio__progress_report(p->progress, false);
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
static void drain(onnxio__pool *p, bool caller)
{
    while (p->next < p->count) {
        onnxio__job j = p->jobs[p->next++];
        p->running++;
        pthread_mutex_unlock(&p->lock);
        char error[512];
        bool dropped = p->status != ONNXIO_OK; /* after a failure */
        onnxio_status s = dropped ? ONNXIO_OK : run_job(&j, error, sizeof error);
        if (!dropped && !s && p->progress && counted(&j)) onnxio__progress_add(p->progress, j.size);
        if (caller && p->progress) report(p, true);
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
    for (;;) {
        drain(p, false);
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
    p->progress = onnxio__progress_now();
    if (p->threads > 1) {
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        pthread_cond_init(&p->idle, NULL);
    }
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
    return piece;
}

onnxio_status onnxio__pool_add(onnxio__pool *p, const onnxio__job *job)
{
    if (job->size == 0) {
        if (job->crc) job->crc[0] = 0;
        return ONNXIO_OK;
    }
    /* Reported before the job is queued, so that the first call says 0
     * bytes done: once the job is queued a worker may finish a piece of
     * it before this thread reports. */
    if (p->progress && !p->status) {
        onnxio_status s = report(p, p->threads > 1);
        if (s) return onnxio__fail(s, "%s", p->error);
    }
    if (p->threads <= 1) {
        if (p->status) return p->status;
        onnxio_status s = ONNXIO_OK;
        /* Cut as on the workers: a CRC piece is the same whatever the count
         * (and progress is reported after each piece). */
        uint64_t step = job->crc || p->progress ? PIECE_SIZE : job->size;
        for (uint64_t at = 0; !s && at < job->size; at += step) {
            onnxio__job piece = piece_of(job, at, step);
            s = onnxio__job_run(&piece);
            if (!s && p->progress && counted(&piece)) {
                onnxio__progress_add(p->progress, piece.size);
                s = onnxio__progress_report(p->progress, false);
            }
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
    for (uint64_t at = 0; !s && at < job->size; at += PIECE_SIZE) {
        onnxio__job piece = piece_of(job, at, PIECE_SIZE);
        s = push(p, &piece);
    }
    /* Workers start with the first job, so a load without large payloads
     * never starts a thread. */
    if (!s && p->started < p->threads - 1) {
        /* Workers block every signal (they inherit the mask): a process's
         * handlers run on its own threads, where onnxio's state is
         * consistent (onnxio_remove_temporary_files relies on it). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        while (p->started < p->threads - 1) {
            if (pthread_create(&p->workers[p->started], NULL, worker, p) != 0) break;
            p->started++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (!s) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (!s && p->progress) s = report(p, true);
    if (s == ONNXIO_ERR_NO_MEMORY) return onnxio__fail(s, "out of memory for the job list");
    if (s) return onnxio__fail(s, "%s", p->error);
    return ONNXIO_OK;
}

onnxio_status onnxio__pool_finish(onnxio__pool *p)
{
    if (!p) return ONNXIO_OK;
    onnxio_status s;
    if (p->threads > 1) {
        pthread_mutex_lock(&p->lock);
        drain(p, true);
        while (p->running) {
            pthread_cond_wait(&p->idle, &p->lock);
            if (p->progress) {
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
    onnxio__free(p->keeps);
    onnxio__free(p->jobs);
    onnxio__free(p);
    return s;
}
