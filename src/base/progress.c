/* Progress of one load or save (onnxio_progress_fn; docs/design.md,
 * "Progress"). The entry point that takes the options (model.c) makes an
 * onnxio__progress on its stack and makes it the calling thread's current
 * one for the operation; the pools it creates (pool.c) and the payload
 * placement (payload.c) find it there, so that the codec and the pipelines
 * need no new argument. Pool threads only add to `done` (an atomic
 * counter); every call of the callback happens on the calling thread, in
 * onnxio__progress_report. Without a callback nothing is current and
 * nothing is counted. */
#include "base/base.h"

static _Thread_local onnxio__progress *current;

/* The operations running with a progress callback or a cancel poll, in
 * all threads (base.h). While there are none, every thread's current
 * progress and cancel poll are NULL, so an operation without either
 * reads and writes no thread-local variable (in a shared library each
 * access is a call of __tls_get_addr: about 8 of them made a third of an
 * empty parse's time in C): its enter and leave change nothing and the
 * _now functions give NULL. A thread that counts an operation of its own
 * sees its count. */
atomic_size_t onnxio__watched;
/* *saved of an enter that changed nothing. */
static onnxio__progress untouched_progress;
static onnxio__cancel untouched_cancel;

onnxio__progress *onnxio__progress_current(void) { return current; }

void onnxio__progress_enter(onnxio__progress *p, onnxio_progress_fn fn, void *user, onnxio__progress **saved)
{
    *p = (onnxio__progress){.fn = fn, .user = user};
    atomic_init(&p->done, 0);
    if (onnxio__progress_idle(fn, NULL)) {
        *saved = &untouched_progress;
        return;
    }
    if (fn) atomic_fetch_add_explicit(&onnxio__watched, 1, memory_order_relaxed);
    *saved = current;
    /* An operation without a callback counts nothing, also when it runs
     * inside one that has a callback (a load from a save's callback). */
    current = fn ? p : NULL;
}

void onnxio__progress_leave(onnxio__progress **saved)
{
    if (*saved == &untouched_progress) return;
    if (current) atomic_fetch_sub_explicit(&onnxio__watched, 1, memory_order_relaxed); /* its own: it had a callback */
    current = *saved;
}

void onnxio__progress_total(onnxio__progress *p, uint64_t n)
{
    if (p) p->total = n > UINT64_MAX - p->total ? UINT64_MAX : p->total + n;
}

void onnxio__progress_ready(onnxio__progress *p)
{
    if (p) p->ready = true;
}

void onnxio__progress_add(onnxio__progress *p, uint64_t n)
{
    if (p) atomic_fetch_add_explicit(&p->done, n, memory_order_relaxed);
}

onnxio_status onnxio__progress_report(onnxio__progress *p, bool last)
{
    if (!p || !p->fn) return ONNXIO_OK;
    if (p->cancelled) return ONNXIO_ERR_CANCELLED;
    if (p->finished) return ONNXIO_OK;
    uint64_t done = atomic_load_explicit(&p->done, memory_order_relaxed);
    if (done > p->total) done = p->total;
    if (last) {
        done = p->total;
        p->finished = true;
    } else {
        /* done == total is said once, by the last call. */
        if (!p->ready || done == p->total) return ONNXIO_OK;
        if (p->called && done - p->reported < ONNXIO_PROGRESS_STEP) return ONNXIO_OK;
    }
    p->called = true;
    p->reported = done;
    if (p->fn(p->user, done, p->total) != 0) {
        p->cancelled = true;
        return onnxio__fail(ONNXIO_ERR_CANCELLED, "cancelled by the progress callback after %llu of %llu payload bytes",
                            (unsigned long long)done, (unsigned long long)p->total);
    }
    return ONNXIO_OK;
}

/* Cancel polls (onnxio_cancel_fn): current like the progress, polled by
 * the calling thread in the pool (pool.c), read by its workers. */
static _Thread_local onnxio__cancel *current_cancel;

onnxio__cancel *onnxio__cancel_current(void) { return current_cancel; }

void onnxio__cancel_enter(onnxio__cancel *c, onnxio_cancel_fn fn, void *user, onnxio__cancel **saved)
{
    c->fn = fn;
    c->user = user;
    atomic_init(&c->cancelled, false);
    if (onnxio__progress_idle(NULL, fn)) {
        *saved = &untouched_cancel;
        return;
    }
    if (fn) atomic_fetch_add_explicit(&onnxio__watched, 1, memory_order_relaxed);
    *saved = current_cancel;
    current_cancel = fn ? c : NULL;
}

void onnxio__cancel_leave(onnxio__cancel **saved)
{
    if (*saved == &untouched_cancel) return;
    if (current_cancel) atomic_fetch_sub_explicit(&onnxio__watched, 1, memory_order_relaxed); /* its own: it had a poll */
    current_cancel = *saved;
}

bool onnxio__cancelled(onnxio__cancel *c) { return c && atomic_load_explicit(&c->cancelled, memory_order_relaxed); }

onnxio_status onnxio__cancel_poll(onnxio__cancel *c)
{
    if (!c) return ONNXIO_OK;
    if (!atomic_load_explicit(&c->cancelled, memory_order_relaxed)) {
        if (c->fn(c->user) == 0) return ONNXIO_OK;
        atomic_store_explicit(&c->cancelled, true, memory_order_relaxed);
    }
    return onnxio__fail(ONNXIO_ERR_CANCELLED, "cancelled by the cancel poll");
}
