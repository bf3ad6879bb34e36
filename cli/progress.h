/*
 * A progress indicator for long steps: while a step runs, a line is
 * redrawn on stderr, and erased when the step ends. It appears only when
 * stderr is a terminal (and TERM is not "dumb") and the step has run for a
 * moment (short steps print nothing), so that scripts and pipes see clean
 * output. Once the library reports payload bytes (its progress callback,
 * cli_progress_bytes), the line is, as pip and huggingface_hub draw theirs,
 *
 *   onnxio: loading model.onnx  45% [#########-----------] 120.0 MiB/265.3 MiB 85.2 MB/s ETA 0:02
 *
 * (percentage, bar, bytes done and total in binary units, the rate since
 * the step began in decimal MB/s, the time left at that rate); before
 * that, and for steps with no byte count, a spinner with the seconds
 * elapsed: `onnxio: loading model.onnx ... | 2.4s`.
 */
#ifndef ONNXIO_CLI_PROGRESS_H
#define ONNXIO_CLI_PROGRESS_H

#include <stdint.h>

/* Starts the indicator for one step, e.g. ("loading", "model.onnx"). Steps
 * do not nest: a begin while one is running is ignored. Both strings must
 * live until cli_progress_end. */
void cli_progress_begin(const char *what, const char *subject);
/* Stops the indicator and erases its line. A no-op when none is running. */
void cli_progress_end(void);
/* Whether an indicator is running (stderr is a terminal): only then is
 * cli_progress_bytes worth passing to the library. */
int cli_progress_active(void);
/* An onnxio_progress_fn: `done` of `total` payload bytes of the running
 * step, drawn at the next redraw; never cancels (returns 0). */
int cli_progress_bytes(void *user, uint64_t done, uint64_t total);

#endif
