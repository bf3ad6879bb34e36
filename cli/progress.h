/*
 * A progress indicator for long steps: while a step runs, a line
 * `onnxio: loading model.onnx ... 2.4 s` is redrawn on stderr, and erased
 * when the step ends. It appears only when stderr is a terminal and the
 * step has run for a moment (short steps print nothing), so that scripts
 * and pipes see clean output. The library reports no progress of its own,
 * so this shows that work is going on and for how long.
 */
#ifndef ONNXIO_CLI_PROGRESS_H
#define ONNXIO_CLI_PROGRESS_H

/* Starts the indicator for one step, e.g. ("loading", "model.onnx"). Steps
 * do not nest: a begin while one is running is ignored. Both strings must
 * live until cli_progress_end. */
void cli_progress_begin(const char *what, const char *subject);
/* Stops the indicator and erases its line. A no-op when none is running. */
void cli_progress_end(void);

#endif
