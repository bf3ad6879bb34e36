/* Library calls made with the GIL released (pyonnxio_call_unlocked), and
 * the busy marks of the trees they read, kept in the module state. gil.h
 * has the rules. */
#include <string.h>

#include "gil.h"

int pyonnxio_busy_enter(pyonnxio_state *st, onnxio_arena *arena)
{
    for (int i = 0; i < st->busy_used; i++)
        if (st->busy[i].arena == arena) return ++st->busy[i].count, 0;
    if (st->busy_used == PYONNXIO_BUSY_MAX) {
        PyErr_SetString(PyExc_RuntimeError, "onnxio: too many saves in progress at once (" PYONNXIO_STR(PYONNXIO_BUSY_MAX) ")");
        return -1;
    }
    st->busy[st->busy_used++] = (struct pyonnxio_busy_tree){arena, 1};
    return 0;
}

void pyonnxio_busy_leave(pyonnxio_state *st, onnxio_arena *arena)
{
    for (int i = 0; i < st->busy_used; i++)
        if (st->busy[i].arena == arena) {
            if (--st->busy[i].count == 0) st->busy[i] = st->busy[--st->busy_used];
            return;
        }
}

int pyonnxio_busy_refuses(pyonnxio_state *st, onnxio_arena *arena)
{
    for (int i = 0; i < st->busy_used; i++)
        if (st->busy[i].arena == arena) {
            PyErr_SetString(PyExc_RuntimeError,
                            "cannot change a message while a save or serialization of its tree is in progress "
                            "(from a progress callback or another thread): change it after that call returns");
            return 1;
        }
    return 0;
}

int pyonnxio_call_unlocked(pyonnxio_state *st, onnxio_arena *tree, pyonnxio_unlocked_fn fn, void *ctx,
                           onnxio_status *status)
{
    onnxio_arena *keep = NULL;
    if (tree) {
        keep = onnxio_arena_ref(tree);
        if (pyonnxio_busy_enter(st, keep) < 0) {
            onnxio_arena_unref(keep);
            return -1;
        }
    }
    onnxio_status s;
    Py_BEGIN_ALLOW_THREADS
    s = fn(ctx);
    Py_END_ALLOW_THREADS
    if (keep) {
        pyonnxio_busy_leave(st, keep);
        onnxio_arena_unref(keep);
    }
    *status = s;
    return 0;
}

typedef struct copy_call {
    void *dst;
    const void *src;
    size_t size;
} copy_call;

static onnxio_status copy_run(void *ctx)
{
    copy_call *c = ctx;
    memcpy(c->dst, c->src, c->size);
    return ONNXIO_OK;
}

void pyonnxio_copy_unlocked(void *dst, const void *src, size_t size)
{
    copy_call c = {dst, src, size};
    onnxio_status s;
    pyonnxio_call_unlocked(NULL, NULL, copy_run, &c, &s);
}
