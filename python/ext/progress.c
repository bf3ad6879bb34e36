/* The progress callback of loads and saves, and their Ctrl-C check.
 *
 * A Python progress callable `fn(done, total)` behind onnxio_progress_fn:
 * the library calls it on the thread that made the load or save, which
 * released the GIL; the trampoline takes the GIL for the call. An exception
 * it raises is kept and cancels the operation (ONNXIO_ERR_CANCELLED); the
 * caller raises it once the GIL is back (pyonnxio_progress_raised).
 *
 * A save without a callable, on the main thread (the one Python runs
 * signal handlers on), installs the trampoline all the same to let Ctrl-C
 * stop it: while the GIL is released, Python's C handler only notes the
 * signal, and its Python handler (KeyboardInterrupt) would run after the
 * whole save, which has replaced the old files by then. Every
 * SIGNAL_CHECK_NS at most, the trampoline takes the GIL and runs the
 * pending handlers (PyErr_CheckSignals); one that raises cancels the save
 * like a callback's exception (the old files stay). Between checks a call
 * costs one clock read. A load without a callable installs the same check
 * as its cancel poll (onnxio_cancel_fn), which, unlike a progress callback,
 * leaves the load's reads and threads as they are. */
#include <time.h>

#include "progress.h"

#define SIGNAL_CHECK_NS 50000000ull /* 50 ms */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int signal_check(pyonnxio_progress *p)
{
    uint64_t now = monotonic_ns();
    if (p->exc_type) return 1;
    if (now - p->last_check_ns < SIGNAL_CHECK_NS) return 0;
    p->last_check_ns = now;
    PyGILState_STATE g = PyGILState_Ensure();
    int failed = PyErr_CheckSignals() < 0;
    if (failed) {
        PyErr_Fetch(&p->exc_type, &p->exc_value, &p->exc_tb);
        if (!p->exc_type) p->exc_type = Py_NewRef(PyExc_SystemError);
    }
    PyGILState_Release(g);
    return failed;
}

static int cancel_trampoline(void *user) { return signal_check(user); }

static int progress_trampoline(void *user, uint64_t done, uint64_t total)
{
    pyonnxio_progress *p = user;
    if (p->exc_type) return 1;
    if (!p->fn) return signal_check(p);
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallFunction(p->fn, "KK", (unsigned long long)done, (unsigned long long)total);
    int failed = !r;
    Py_XDECREF(r);
    if (failed) {
        PyErr_Fetch(&p->exc_type, &p->exc_value, &p->exc_tb);
        if (!p->exc_type) p->exc_type = Py_NewRef(PyExc_SystemError);
    }
    PyGILState_Release(g);
    return failed;
}

int pyonnxio_progress_init(pyonnxio_state *st, pyonnxio_progress *p, PyObject *fn, int signals,
                           onnxio_progress_fn *opt_fn, void **opt_user)
{
    if (fn == Py_None || !fn) {
        if (!signals || PyThread_get_thread_ident() != st->main_thread) return 0;
        p->signals = 1;
        p->last_check_ns = monotonic_ns();
    } else if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
        return -1;
    } else {
        p->fn = fn;
    }
    *opt_fn = progress_trampoline;
    *opt_user = p;
    return 0;
}

int pyonnxio_progress_raised(pyonnxio_progress *p)
{
    if (!p->exc_type) return 0;
    PyErr_Restore(p->exc_type, p->exc_value, p->exc_tb);
    p->exc_type = p->exc_value = p->exc_tb = NULL;
    return 1;
}

void pyonnxio_progress_cancel_poll(pyonnxio_state *st, pyonnxio_progress *p, onnxio_cancel_fn *opt_fn,
                                   void **opt_user)
{
    if (PyThread_get_thread_ident() != st->main_thread) return;
    p->last_check_ns = monotonic_ns();
    *opt_fn = cancel_trampoline;
    *opt_user = p;
}
