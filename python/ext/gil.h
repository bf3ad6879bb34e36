/* gil.h: library calls made with the GIL released (gil.c), and the busy
 * marks of the trees they read.
 *
 * Every call of the extension that releases the GIL goes through
 * pyonnxio_call_unlocked. The entry points hold their arguments (so the
 * Python objects and any input bytes stay alive); for a tree that Python
 * code can reach, the helper also takes its own reference to the tree's
 * arena, so the C messages cannot go away under the call even if another
 * thread drops every Python reference, and marks the tree busy, so that a
 * write into it from another thread or from a callback of the call raises
 * RuntimeError instead of freeing or moving what the call reads (a payload,
 * a repeated field's array). */
#ifndef ONNXIO_PY_GIL_H
#define ONNXIO_PY_GIL_H

#include "state.h"

/* A library call for pyonnxio_call_unlocked: runs without the GIL, so it
 * touches no Python object. A callback of the library that needs Python
 * while it runs takes the GIL with PyGILState_Ensure and gives it back with
 * PyGILState_Release (the calling thread's own thread state: the extension
 * runs in the main interpreter only, module.c). */
typedef onnxio_status (*pyonnxio_unlocked_fn)(void *ctx);

/* Runs fn(ctx) with the GIL released, and returns 0 with fn's status in
 * *status. `tree` is the arena of the message tree the call reads or
 * writes when Python code can reach it: for the call's duration the helper
 * holds a reference to it and marks it busy (pyonnxio_busy_enter); when it
 * cannot be marked, fn is not called and the helper returns -1 with
 * RuntimeError set. `tree` NULL: the call uses nothing that Python code can
 * change meanwhile (a tree only the caller knows yet, memory the caller
 * keeps alive); `st` may then be NULL. With the GIL. */
int pyonnxio_call_unlocked(pyonnxio_state *st, onnxio_arena *tree, pyonnxio_unlocked_fn fn, void *ctx,
                           onnxio_status *status);

/* Copies `size` bytes from `src` to `dst` with the GIL released
 * (pyonnxio_call_unlocked without a tree): the caller keeps both alive and
 * `src` unchanged meanwhile. */
void pyonnxio_copy_unlocked(void *dst, const void *src, size_t size);

/* Marks the tree of `arena` as being read by a call that releases the GIL
 * (a save, a serialization): until the matching pyonnxio_busy_leave, a
 * write into it (pyonnxio_busy_refuses, which pyonnxio_message_get checks
 * for a write) raises RuntimeError. With the GIL. 0, or -1 with
 * RuntimeError when PYONNXIO_BUSY_MAX trees are busy already. */
int pyonnxio_busy_enter(pyonnxio_state *st, onnxio_arena *arena);
void pyonnxio_busy_leave(pyonnxio_state *st, onnxio_arena *arena);
/* 1 with RuntimeError set when the tree of `arena` is busy, else 0. */
int pyonnxio_busy_refuses(pyonnxio_state *st, onnxio_arena *arena);

#endif
