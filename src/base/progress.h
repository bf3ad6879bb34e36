/* Progress and cancel polls (progress.c): the scope of one load or save,
 * made current for the calling thread. Included by base/base.h. */
#ifndef ONNXIO_BASE_PROGRESS_H
#define ONNXIO_BASE_PROGRESS_H

#include "base/sys.h"

/* progress.c: the progress of one load or save (onnxio_progress_fn). */
typedef struct onnxio__progress {
    onnxio_progress_fn fn;
    void *user;
    uint64_t total;        /* payload bytes of the operation */
    _Atomic uint64_t done; /* added to by any thread */
    uint64_t reported;     /* `done` of the last call */
    bool ready;            /* total is final: calls may begin */
    bool called, finished, cancelled;
} onnxio__progress;
/* The cancel poll of one load (onnxio_cancel_fn), made current for the
 * calling thread like the progress; `cancelled` is read by pool threads. */
typedef struct onnxio__cancel {
    onnxio_cancel_fn fn;
    void *user;
    atomic_bool cancelled;
} onnxio__cancel;
/* progress.c: how many operations in the process run with a progress
 * callback or a cancel poll. While there are none, every thread's current
 * progress and cancel poll are NULL, and the _now functions read no
 * thread-local variable (in a shared library each read is a call of
 * __tls_get_addr). */
extern atomic_size_t onnxio__watched;
onnxio__cancel *onnxio__cancel_current(void);
onnxio__progress *onnxio__progress_current(void);
/* The calling thread's current cancel poll, or NULL. */
static inline onnxio__cancel *onnxio__cancel_now(void)
{
    return atomic_load_explicit(&onnxio__watched, memory_order_relaxed) ? onnxio__cancel_current() : NULL;
}
/* Makes `c` (for poll `fn`; NULL: none) current until
 * onnxio__cancel_leave(saved). */
void onnxio__cancel_enter(onnxio__cancel *c, onnxio_cancel_fn fn, void *user, onnxio__cancel **saved);
void onnxio__cancel_leave(onnxio__cancel **saved);
/* On the calling thread: polls `c` (NULL: OK), ONNXIO_ERR_CANCELLED (with
 * the error set) once it has said to cancel. */
onnxio_status onnxio__cancel_poll(onnxio__cancel *c);
/* On any thread: whether `c` has been cancelled. */
bool onnxio__cancelled(onnxio__cancel *c);
/* The calling thread's current progress, or NULL (no callback). */
static inline onnxio__progress *onnxio__progress_now(void)
{
    return atomic_load_explicit(&onnxio__watched, memory_order_relaxed) ? onnxio__progress_current() : NULL;
}
/* Whether an operation without a callback or poll can skip its progress
 * and cancel scope (enter, report, leave): none runs anywhere with one, so
 * every thread's current progress and cancel poll are NULL. */
static inline bool onnxio__progress_idle(onnxio_progress_fn fn, onnxio_cancel_fn cancel)
{
    return !fn && !cancel && atomic_load_explicit(&onnxio__watched, memory_order_relaxed) == 0;
}
/* Begins an operation with callback `fn` (NULL: nothing is made current,
 * nothing counted); onnxio__progress_leave(saved) ends it, on every path. */
void onnxio__progress_enter(onnxio__progress *p, onnxio_progress_fn fn, void *user, onnxio__progress **saved);
void onnxio__progress_leave(onnxio__progress **saved);
/* Adds `n` bytes to the total (before it is ready); NULL: nothing. */
void onnxio__progress_total(onnxio__progress *p, uint64_t n);
/* The total is final: calls may begin. */
void onnxio__progress_ready(onnxio__progress *p);
/* `n` more bytes are done (any thread); NULL: nothing. */
void onnxio__progress_add(onnxio__progress *p, uint64_t n);
/* On the calling thread: calls the callback when the total is ready and at
 * least ONNXIO_PROGRESS_STEP more bytes are done since the last call, or,
 * with `last`, once with done == total. ONNXIO_ERR_CANCELLED (last error
 * set) when the callback returns non-zero, and on every report after. */
onnxio_status onnxio__progress_report(onnxio__progress *p, bool last);

#endif
