/* SKELETON, replaced by message.c's owner. */
#include "pyonnxio.h"
int pyonnxio_message_init(PyObject *module) { (void)module; return 0; }
