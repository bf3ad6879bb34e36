/* progress.h: the progress callback of loads and saves, and their Ctrl-C
 * check (progress.c has the rules). */
#ifndef ONNXIO_PY_PROGRESS_H
#define ONNXIO_PY_PROGRESS_H

#include "state.h"

/* A Python progress callable `fn(done, total)` behind onnxio_progress_fn,
 * or the signal check of a call without one. */
typedef struct pyonnxio_progress {
    PyObject *fn; /* borrowed, or NULL */
    int signals;  /* no fn: check for signals */
    uint64_t last_check_ns;
    PyObject *exc_type, *exc_value, *exc_tb;
} pyonnxio_progress;
/* Sets up `p` for the callable `fn` and points *opt_fn / *opt_user (the
 * options' progress and progress_user) at it; None: no callback, and with
 * `signals` the signal check on the main thread (st->main_thread). -1 with
 * TypeError for anything else that is not callable. */
int pyonnxio_progress_init(pyonnxio_state *st, pyonnxio_progress *p, PyObject *fn, int signals,
                           onnxio_progress_fn *opt_fn, void **opt_user);
/* With the GIL: 1 when the callback raised (the exception is set now). */
int pyonnxio_progress_raised(pyonnxio_progress *p);
/* On the main thread, installs the signal check of `p` as a load's cancel
 * poll (onnxio_parse_options.cancel): Ctrl-C stops a load without a
 * callable. */
void pyonnxio_progress_cancel_poll(pyonnxio_state *st, pyonnxio_progress *p, onnxio_cancel_fn *opt_fn,
                                   void **opt_user);

#endif
