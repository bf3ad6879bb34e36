/* The onnxio._onnxio module: init, exceptions, and the entry points that
 * cross into the C library (see pyonnxio.h). SKELETON: module.c's owner
 * fills in the functions below. */
#include "pyonnxio.h"

PyObject *pyonnxio_DecodeError;
PyObject *pyonnxio_EncodeError;

PyObject *pyonnxio_raise(onnxio_status status)
{
    const char *msg = onnxio_last_error();
    PyObject *type = PyExc_ValueError;
    switch (status) {
    case ONNXIO_ERR_DECODE:
    case ONNXIO_ERR_DEPTH: type = pyonnxio_DecodeError; break;
    case ONNXIO_ERR_NOT_FOUND: type = PyExc_FileNotFoundError; break;
    case ONNXIO_ERR_IO: type = PyExc_OSError; break;
    case ONNXIO_ERR_NO_MEMORY: type = PyExc_MemoryError; break;
    case ONNXIO_ERR_MISSING_PAYLOAD: type = pyonnxio_EncodeError; break;
    default: break;
    }
    PyErr_SetString(type, msg && *msg ? msg : onnxio_status_name(status));
    return NULL;
}

static PyMethodDef module_methods[] = {
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "onnxio._onnxio", "onnxio's C extension: the message classes and the C entry points.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__onnxio(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    pyonnxio_DecodeError = PyErr_NewException("onnxio.DecodeError", PyExc_ValueError, NULL);
    pyonnxio_EncodeError = PyErr_NewException("onnxio.EncodeError", PyExc_ValueError, NULL);
    if (!pyonnxio_DecodeError || !pyonnxio_EncodeError) goto fail;
    Py_INCREF(pyonnxio_DecodeError);
    Py_INCREF(pyonnxio_EncodeError);
    if (PyModule_AddObject(m, "DecodeError", pyonnxio_DecodeError) < 0) goto fail;
    if (PyModule_AddObject(m, "EncodeError", pyonnxio_EncodeError) < 0) goto fail;
    if (pyonnxio_message_init(m) < 0 || pyonnxio_repeated_init(m) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
