/* The onnxio._onnxio module: its method table, module definition,
 * multi-phase init (Py_mod_exec) and the lifetime of its module state
 * (pyonnxio_state in state.h: the classes, the exceptions, the class
 * registry, the busy trees). The entry points it lists cross into the C
 * library (load, parse, save, serialize, external data), each with the GIL
 * released around the C call (pyonnxio_call_unlocked, gil.h); they live in
 * the files pyonnxio.h lists, one job each.
 *
 * Every entry point is private to the package (names start with '_'); the
 * public, onnx-compatible functions are in python/onnxio/__init__.py, which
 * maps onnx's keyword arguments onto the entry points' keyword arguments.
 * Those keep the field names of the C option structs (onnxio.h):
 *
 *   parse:     raw_data_threshold, alignment, num_threads, no_copy,
 *              load_external_data, base_dir, skip_raw_data, max_depth,
 *              payload_fn, verify_checksum, verify_crc, max_expansion, direct_io
 *   serialize: raw_data_threshold, alignment, num_threads, location,
 *              size_threshold, all_tensors_to_one_file, convert_attribute,
 *              max_file_size, checksum, max_depth
 *
 * Errors: every failed status goes through pyonnxio_raise (or
 * pyonnxio_raise_writing for serialize, save and text), which expands
 * onnxio/status.def (errors.c): no status is listed in the entry points.
 * The format rules external data follows (key parsing, location spelling,
 * the checked open, data type sizes, the .onnxz name rule) are wrapped for
 * the Python helpers (external.c) so that they have no copy of them.
 *
 * Lifetime while the GIL is released: the entry points hold their
 * arguments (so the Python message and any input bytes stay alive) and an
 * extra reference to the message's arena (pyonnxio_call_unlocked), so the C
 * message cannot go away under the C call even if another thread drops
 * every Python reference. */
#include "message.h"
#include "pyonnxio.h"

/* Every entry point, in the order the module has always listed them; the
 * file of each is named in pyonnxio.h. */
#define KW(fn) (PyCFunction)(void (*)(void))(fn), METH_VARARGS | METH_KEYWORDS

static PyMethodDef module_methods[] = {
    /* load.c */
    {"_load_file", KW(pyonnxio_load_file), pyonnxio_load_file_doc},
    {"_load_bytes", KW(pyonnxio_load_bytes), pyonnxio_load_bytes_doc},
    {"_load_external_data", KW(pyonnxio_load_external_data), pyonnxio_load_external_data_doc},
    {"_load_tensor_external_data", KW(pyonnxio_load_tensor_external_data),
     pyonnxio_load_tensor_external_data_doc},
    /* save.c, stream.c, wire.c, text.c, coerce.c */
    {"_save_file", KW(pyonnxio_save_file), pyonnxio_save_file_doc},
    {"_save_streaming", KW(pyonnxio_save_streaming), pyonnxio_save_streaming_doc},
    {"_serialize", pyonnxio_wire_serialize, METH_O, pyonnxio_wire_serialize_doc},
    {"_text_format", pyonnxio_text_format, METH_VARARGS, pyonnxio_text_format_doc},
    {"_unknown_fields", pyonnxio_wire_unknown_fields, METH_O, pyonnxio_wire_unknown_fields_doc},
    {"_text_parse", KW(pyonnxio_text_parse), pyonnxio_text_parse_doc},
    {"_coerce", pyonnxio_coerce, METH_O, pyonnxio_coerce_doc},
    {"_archive_replace_model", KW(pyonnxio_archive_replace_model), pyonnxio_archive_replace_model_doc},
    /* payload.c */
    {"_consolidate", KW(pyonnxio_consolidate), pyonnxio_consolidate_doc},
    {"_payload_view", pyonnxio_tensor_payload_view, METH_O, pyonnxio_tensor_payload_view_doc},
    {"_set_raw_data", pyonnxio_set_raw_data, METH_VARARGS, pyonnxio_set_raw_data_doc},
    {"_share_raw_data", pyonnxio_share_raw_data, METH_VARARGS, pyonnxio_share_raw_data_doc},
    /* external.c */
    {"_has_pending_external", pyonnxio_has_pending_external, METH_O, pyonnxio_has_pending_external_doc},
    {"_external_ref_parse", pyonnxio_external_ref_parse, METH_O, pyonnxio_external_ref_parse_doc},
    {"_check_location", pyonnxio_check_location, METH_O, pyonnxio_check_location_doc},
    {"_external_data_open", KW(pyonnxio_external_data_open), pyonnxio_external_data_open_doc},
    {"_tensor_raw_size", pyonnxio_tensor_raw_size, METH_O, pyonnxio_tensor_raw_size_doc},
    {"_path_is_archive", pyonnxio_path_is_archive, METH_O, pyonnxio_path_is_archive_doc},
    /* tables.c, errors.c */
    {"_data_types", pyonnxio_data_types, METH_NOARGS, pyonnxio_data_types_doc},
    {"_options", pyonnxio_options, METH_NOARGS, pyonnxio_options_doc},
    {"_raise_status", KW(pyonnxio_raise_status), pyonnxio_raise_status_doc},
    {"_external_data_error", pyonnxio_external_data_error, METH_NOARGS, pyonnxio_external_data_error_doc},
    /* safetensors.c */
    {"_safetensors_load_into", KW(pyonnxio_safetensors_load_into), pyonnxio_safetensors_load_into_doc},
    {"_safetensors_save", KW(pyonnxio_safetensors_save), pyonnxio_safetensors_save_doc},
    /* remote sources (remote.c) */
    {"_external_ranges", pyonnxio_remote_external_ranges, METH_VARARGS, pyonnxio_remote_external_ranges_doc},
    {"_set_fetched_payload", pyonnxio_remote_set_payload, METH_VARARGS, pyonnxio_remote_set_payload_doc},
    {"_bytes_are_archive", pyonnxio_remote_is_archive, METH_O, pyonnxio_remote_is_archive_doc},
    {"_archive_open_tail", pyonnxio_remote_archive_open_tail, METH_VARARGS, pyonnxio_remote_archive_open_tail_doc},
    {"_archive_entries", pyonnxio_remote_archive_entries, METH_O, pyonnxio_remote_archive_entries_doc},
    {"_archive_entry_read", pyonnxio_remote_archive_read, METH_VARARGS, pyonnxio_remote_archive_read_doc},
    {"_archive_ranges", pyonnxio_remote_archive_ranges, METH_VARARGS, pyonnxio_remote_archive_ranges_doc},
    {"_archive_set_digests", pyonnxio_remote_archive_set_digests, METH_VARARGS,
     pyonnxio_remote_archive_set_digests_doc},
    {"_archive_check", pyonnxio_remote_archive_check, METH_VARARGS, pyonnxio_remote_archive_check_doc},
    /* tensor slices (slice.c) */
    {"_tensor_file_open", KW(pyonnxio_tensor_file_open), pyonnxio_tensor_file_open_doc},
    {"_tensor_file_close", pyonnxio_tensor_file_close, METH_O, pyonnxio_tensor_file_close_doc},
    {"_tensor_file_info", pyonnxio_tensor_file_info, METH_VARARGS, pyonnxio_tensor_file_info_doc},
    {"_tensor_file_initializers", pyonnxio_tensor_file_initializers, METH_O, pyonnxio_tensor_file_initializers_doc},
    {"_tensor_file_read", pyonnxio_tensor_file_read, METH_VARARGS, pyonnxio_tensor_file_read_doc},
    {NULL, NULL, 0, NULL},
};

#undef KW

/* Whether a module object of the extension exists: the one variable of
 * the extension shared by the whole process. Nothing reaches the module
 * state through it (every function reaches it through its module, a class
 * or a message object, state.h); it keeps a second module object from
 * being made while one exists (PEP 630, "Opt-Out: Limiting to One Module
 * Object per Process", whose flag this is). A second module object would
 * make a second set of classes: messages of one would not be messages to
 * the other's entry points and methods, and a tree one marks busy would
 * not be busy to the other. Set by module_exec and cleared by module_free,
 * both with the GIL held, in the main interpreter only. */
static int module_exists;

static int module_traverse(PyObject *m, visitproc visit, void *arg)
{
    pyonnxio_state *st = PyModule_GetState(m);
    if (!st) return 0;
    Py_VISIT(st->message_type);
    Py_VISIT(st->payload_type);
    Py_VISIT(st->scalar_type);
    Py_VISIT(st->composite_type);
    Py_VISIT(st->decode_error);
    Py_VISIT(st->encode_error);
    Py_VISIT(st->external_data_error);
    Py_VISIT(st->archive_error);
    Py_VISIT(st->external_data_validation_error);
    return pyonnxio_registry_traverse(st, visit, arg);
}

static int module_clear(PyObject *m)
{
    pyonnxio_state *st = PyModule_GetState(m);
    if (!st) return 0;
    Py_CLEAR(st->message_type);
    Py_CLEAR(st->payload_type);
    Py_CLEAR(st->scalar_type);
    Py_CLEAR(st->composite_type);
    Py_CLEAR(st->decode_error);
    Py_CLEAR(st->encode_error);
    Py_CLEAR(st->external_data_error);
    Py_CLEAR(st->archive_error);
    Py_CLEAR(st->external_data_validation_error);
    pyonnxio_registry_clear(st);
    return 0;
}

/* The module object goes: every class made with it went before it (each
 * held a reference to it), and with them every object of the extension. */
static void module_free(void *m)
{
    pyonnxio_state *st = PyModule_GetState((PyObject *)m);
    module_clear((PyObject *)m);
    if (st && st->sole) {
        pyonnxio_registry_free(st);
        module_exists = 0;
    }
}

static int module_exec(PyObject *m)
{
    /* Only the main interpreter: a payload's owner may be released on any
     * thread, which takes the GIL with PyGILState_Ensure, and that knows
     * only the main interpreter (in a sub-interpreter it waits for the GIL
     * its own thread holds). Python 3.12 on refuses the import itself in
     * an isolated sub-interpreter (Py_mod_multiple_interpreters); a legacy
     * one (Py_NewInterpreter, mod_wsgi's default) gets here. */
    if (PyInterpreterState_Get() != PyInterpreterState_Main()) {
        PyErr_SetString(PyExc_ImportError,
                        "onnxio cannot be imported in a sub-interpreter (it runs in the main interpreter only; "
                        "under mod_wsgi, set WSGIApplicationGroup %{GLOBAL})");
        return -1;
    }
    if (module_exists) {
        PyErr_SetString(PyExc_ImportError,
                        "onnxio._onnxio cannot be loaded twice in one process (in a second interpreter, or "
                        "again after leaving sys.modules while its module object still exists)");
        return -1;
    }
    pyonnxio_state *st = pyonnxio_state_of_module(m);
    module_exists = 1;
    st->sole = 1;
    /* The main thread, which alone runs Python's signal handlers (CPython
     * 3.13 no longer exports _PyOS_IsMainThread). */
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *main_thread = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
    PyObject *ident = main_thread ? PyObject_GetAttrString(main_thread, "ident") : NULL;
    Py_XDECREF(threading);
    Py_XDECREF(main_thread);
    if (!ident) return -1;
    st->main_thread = PyLong_AsUnsignedLong(ident);
    Py_DECREF(ident);
    if (PyErr_Occurred()) return -1;
    if (pyonnxio_errors_init(m) < 0) return -1;
    if (pyonnxio_payload_init(m) < 0) return -1;
    if (PyModule_AddStringConstant(m, "_library_version", ONNXIO_VERSION_STRING) < 0) return -1;
    if (PyModule_AddStringConstant(m, "_onnx_version", ONNXIO_ONNX_VERSION_STRING) < 0) return -1;
    if (pyonnxio_message_init(m) < 0 || pyonnxio_repeated_init(m) < 0) return -1;
    if (pyonnxio_dlpack_init(m) < 0) return -1;
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, (void *)module_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

struct PyModuleDef pyonnxio_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "onnxio._onnxio",
    .m_doc = "onnxio's C extension: the message classes and the C entry points.",
    .m_size = sizeof(pyonnxio_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__onnxio(void)
{
    return PyModuleDef_Init(&pyonnxio_module_def);
}
