/* state.h: the module state of onnxio._onnxio and how a function reaches
 * it, and what every file of the extension includes first (Python.h, the
 * library's header, the CPython 3.9 shims).
 *
 * Everything the extension makes at import and keeps (PEP 489 multi-phase
 * init, PEP 573 module state, as CPython's _bz2module.c) lives in the
 * module object's state: its classes, its exceptions, the registry of
 * message classes (message.c) and the trees that calls without the GIL are
 * reading (gil.c). There is no process-wide pointer to it. A function
 * reaches it through what it is given:
 *   - an entry point of the method table through its module (`self`):
 *     pyonnxio_state_of_module;
 *   - a method, slot or getter of a message object through the object,
 *     which keeps the state of its class (PyOnnxioMessage.st, message.h);
 *   - a class method or tp_new through the class: pyonnxio_state_of_type;
 *   - a callback from the library through the context its caller filled.
 * Every class the extension makes holds a reference to the module (its
 * ht_module), so the state outlives every object of those classes. */
#ifndef ONNXIO_PY_STATE_H
#define ONNXIO_PY_STATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "onnxio/onnxio.h"

/* CPython 3.9 lacks these three (3.10 added them); the same definitions. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
static inline PyObject *Py_XNewRef(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}
static inline int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *value)
{
    if (!value) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "PyModule_AddObjectRef() must be called with an exception raised if value is NULL");
        return -1;
    }
    Py_INCREF(value);
    int rc = PyModule_AddObject(m, name, value);
    if (rc < 0) Py_DECREF(value);
    return rc;
}
#endif

/* The text of a macro's value, for docstrings that quote a library default
 * (PYONNXIO_STR(ONNXIO_DEFAULT_MAX_DEPTH) is "100"): options.def's values,
 * never spelled here. */
#define PYONNXIO_STR_(x) #x
#define PYONNXIO_STR(x) PYONNXIO_STR_(x)

/* The most trees that calls without the GIL read at once (gil.c). */
#define PYONNXIO_BUSY_MAX 64

struct pyonnxio_registry; /* message.c */

/* The module state. The module's GC traverse and clear (module.c) cover
 * what it references. */
typedef struct pyonnxio_state {
    PyTypeObject *message_type;   /* onnxio.Message, the base of every message class (classes.c) */
    newfunc message_new;          /* its own tp_new and tp_init, as made from its spec (classes.c) */
    initproc message_init;
    PyTypeObject *payload_type;   /* _Payload, behind payload views (payload.c) */
    PyTypeObject *scalar_type;    /* RepeatedScalarContainer (repeated.c) */
    PyTypeObject *composite_type; /* RepeatedCompositeContainer */
    PyObject *decode_error;       /* the exceptions (errors.c) */
    PyObject *encode_error;
    PyObject *external_data_error;
    PyObject *archive_error;
    PyObject *external_data_validation_error; /* made once onnx's checker is loaded, or NULL */
    struct pyonnxio_registry *registry;       /* descriptor <-> class (message.c) */
    unsigned long main_thread;                /* threading.main_thread()'s ident (progress.c) */
    int sole;                                 /* the module object module.c's module_exists is set for */
    /* The arenas whose trees calls without the GIL read (gil.c), each with
     * a count. Changed and read with the GIL held. */
    struct pyonnxio_busy_tree {
        onnxio_arena *arena;
        int count;
    } busy[PYONNXIO_BUSY_MAX];
    int busy_used;
} pyonnxio_state;

/* The module definition (module.c), by which a class's module is told from
 * another extension's. */
extern struct PyModuleDef pyonnxio_module_def;

/* The state of the module object `module` (an entry point's `self`). */
static inline pyonnxio_state *pyonnxio_state_of_module(PyObject *module)
{
    return (pyonnxio_state *)PyModule_GetState(module);
}

/* The state of the module that made class `tp`, or the first of its bases
 * that the extension made (`tp` may be a Python subclass of a message
 * class), as PyType_GetModuleByDef finds it (CPython 3.11 on): the class
 * itself is looked at first, then its bases. NULL, with no exception set,
 * for a class the extension did not make (nor any base of it). */
static inline pyonnxio_state *pyonnxio_state_of_type(PyTypeObject *tp)
{
    for (; tp; tp = tp->tp_base) {
        if (!PyType_HasFeature(tp, Py_TPFLAGS_HEAPTYPE)) continue;
        PyObject *m = ((PyHeapTypeObject *)tp)->ht_module;
        if (m && PyModule_GetDef(m) == &pyonnxio_module_def) return (pyonnxio_state *)PyModule_GetState(m);
    }
    return NULL;
}

#endif
