/* The library's tables as Python data, read once by the package: the data
 * type table (_data_types, src/datatype.def), the option table (_options,
 * src/options.def), the schema's tables for reflection (_schema_fields,
 * _schema_rows, src/schema.def) and the file extension table
 * (_extensions, onnxio_file_extension_at). */
#include "pyonnxio.h"

/* ---- data types ---------------------------------------------------------------- */

const char pyonnxio_data_types_doc[] =
    "_data_types() -> tuple[dict, ...]\n"
    "The library's data type table (onnxio_data_type_at), one dict per TensorProto.DataType value\n"
    "but UNDEFINED, in the order of onnx's TENSOR_TYPE_MAP. Keys: data_type, name (\"FLOAT16\"),\n"
    "bits (0 for STRING), storage (the data type whose typed field holds the values), element\n"
    "(\"BOOL\", \"INT\", \"UINT\", \"FLOAT\", \"COMPLEX\", \"STRING\"), exponent_bits, mantissa_bits,\n"
    "exponent_bias, float_kind (\"IEEE\", \"FN\", \"FNUZ\", \"FINITE\", \"FNU\"; None for no float),\n"
    "numpy (the numpy dtype's name), ml_dtypes (True when numpy has it through ml_dtypes only), npy\n"
    "(the .npy descr or None), safetensors (the dtype or None), dlpack_code (None when not\n"
    "exported), text (the name in ONNX's textual syntax).";

static PyObject *opt_str(const char *s)
{
    if (s) return PyUnicode_FromString(s);
    Py_RETURN_NONE;
}

static PyObject *data_type_record(const onnxio_data_type_desc *d)
{
    static const char *const elements[] = {NULL, "BOOL", "INT", "UINT", "FLOAT", "COMPLEX", "STRING"};
    static const char *const floats[] = {NULL, "IEEE", "FN", "FNUZ", "FINITE", "FNU"};
    const char *element = (size_t)d->element < sizeof elements / sizeof *elements ? elements[d->element] : NULL;
    const char *fk = (size_t)d->float_kind < sizeof floats / sizeof *floats ? floats[d->float_kind] : NULL;
    PyObject *code = d->dlpack_code < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(d->dlpack_code);
    if (!code) return NULL;
    return Py_BuildValue("{s:i,s:s,s:I,s:i,s:N,s:I,s:I,s:i,s:N,s:s,s:O,s:N,s:N,s:N,s:s}", "data_type",
                         (int)d->data_type, "name", d->name, "bits", d->bits, "storage", (int)d->storage, "element",
                         opt_str(element), "exponent_bits", d->exponent_bits, "mantissa_bits", d->mantissa_bits,
                         "exponent_bias", d->exponent_bias, "float_kind", opt_str(fk), "numpy", d->numpy,
                         "ml_dtypes", d->ml_dtypes ? Py_True : Py_False, "npy", opt_str(d->npy), "safetensors",
                         opt_str(d->safetensors), "dlpack_code", code, "text", d->text);
}

PyObject *pyonnxio_data_types(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    size_t n = 0;
    while (onnxio_data_type_at(n)) n++;
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *r = data_type_record(onnxio_data_type_at(i));
        if (!r) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, (Py_ssize_t)i, r);
    }
    return out;
}

/* ---- options ------------------------------------------------------------------ */

const char pyonnxio_options_doc[] =
    "_options() -> dict\n"
    "The library's option table (src/options.def), for the option classes of onnxio/_options.py.\n"
    "Keys: constants ({name: value}, ONNXIO_<name>), structs (a tuple of (struct, python_class, doc),\n"
    "python_class None where the package has none) and options (a tuple of (struct, member,\n"
    "python_default, doc) in each struct's order: python_default is the Python literal that leaves\n"
    "the option at its default, None where the class has no such attribute).";

PyObject *pyonnxio_options(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    static const struct {
        const char *name;
        unsigned long long value;
    } constants[] = {
#define ONNXIO_CONSTANT(NAME, VALUE, DOC) {#NAME, (unsigned long long)(VALUE)},
#define ONNXIO_OPTIONS(STRUCT, PYTHON, DOC)
#define ONNXIO_OPTION(STRUCT, MEMBER, TYPE, PYTHON, DOC)
#include "onnxio/options.def"
#undef ONNXIO_CONSTANT
#undef ONNXIO_OPTIONS
#undef ONNXIO_OPTION
    };
    static const struct {
        const char *name, *python, *doc;
    } structs[] = {
#define ONNXIO_CONSTANT(NAME, VALUE, DOC)
#define ONNXIO_OPTIONS(STRUCT, PYTHON, DOC) {#STRUCT, PYTHON, DOC},
#define ONNXIO_OPTION(STRUCT, MEMBER, TYPE, PYTHON, DOC)
#include "onnxio/options.def"
#undef ONNXIO_CONSTANT
#undef ONNXIO_OPTIONS
#undef ONNXIO_OPTION
    };
    static const struct {
        const char *options, *member, *python, *doc;
    } options[] = {
#define ONNXIO_CONSTANT(NAME, VALUE, DOC)
#define ONNXIO_OPTIONS(STRUCT, PYTHON, DOC)
#define ONNXIO_OPTION(STRUCT, MEMBER, TYPE, PYTHON, DOC) {#STRUCT, #MEMBER, PYTHON, DOC},
#include "onnxio/options.def"
#undef ONNXIO_CONSTANT
#undef ONNXIO_OPTIONS
#undef ONNXIO_OPTION
    };
    PyObject *c = PyDict_New(), *st = PyTuple_New(sizeof structs / sizeof *structs),
             *op = PyTuple_New(sizeof options / sizeof *options), *out = NULL;
    if (!c || !st || !op) goto done;
    for (size_t i = 0; i < sizeof constants / sizeof *constants; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(constants[i].value);
        int r = v ? PyDict_SetItemString(c, constants[i].name, v) : -1;
        Py_XDECREF(v);
        if (r < 0) goto done;
    }
    for (size_t i = 0; i < sizeof structs / sizeof *structs; i++) {
        PyObject *t = Py_BuildValue("(szs)", structs[i].name, structs[i].python, structs[i].doc);
        if (!t) goto done;
        PyTuple_SET_ITEM(st, (Py_ssize_t)i, t);
    }
    for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
        PyObject *t = Py_BuildValue("(sszs)", options[i].options, options[i].member, options[i].python, options[i].doc);
        if (!t) goto done;
        PyTuple_SET_ITEM(op, (Py_ssize_t)i, t);
    }
    out = Py_BuildValue("{s:O,s:O,s:O}", "constants", c, "structs", st, "options", op);
done:
    Py_XDECREF(c);
    Py_XDECREF(st);
    Py_XDECREF(op);
    return out;
}


/* ---- schema tables for reflection ------------------------------------------- */

/* The Python package builds Message.DESCRIPTOR and the enums' descriptors
 * (onnxio/_descriptors.py, protobuf's reflection API) from two tables of
 * the schema: _schema_fields and _schema_rows. It hands each class its
 * Descriptor back through _install_descriptor, which keeps the
 * FieldDescriptor of every field for ListFields. */

/* Protobuf's FieldDescriptor.TYPE_* and CPPTYPE_* of a field kind. */
enum { TYPE_DOUBLE = 1, TYPE_FLOAT = 2, TYPE_INT64 = 3, TYPE_UINT64 = 4, TYPE_INT32 = 5, TYPE_STRING = 9,
       TYPE_MESSAGE = 11, TYPE_BYTES = 12, TYPE_ENUM = 14 };
enum { CPPTYPE_INT32 = 1, CPPTYPE_INT64 = 2, CPPTYPE_UINT64 = 4, CPPTYPE_DOUBLE = 5, CPPTYPE_FLOAT = 6,
       CPPTYPE_ENUM = 8, CPPTYPE_STRING = 9, CPPTYPE_MESSAGE = 10 };

static void field_types(const onnxio_field_desc *f, int *type, int *cpp)
{
    switch (f->kind) {
    case ONNXIO_KIND_INT32: *type = TYPE_INT32; *cpp = CPPTYPE_INT32; return;
    case ONNXIO_KIND_INT64: *type = TYPE_INT64; *cpp = CPPTYPE_INT64; return;
    case ONNXIO_KIND_UINT64: *type = TYPE_UINT64; *cpp = CPPTYPE_UINT64; return;
    case ONNXIO_KIND_FLOAT: *type = TYPE_FLOAT; *cpp = CPPTYPE_FLOAT; return;
    case ONNXIO_KIND_DOUBLE: *type = TYPE_DOUBLE; *cpp = CPPTYPE_DOUBLE; return;
    case ONNXIO_KIND_STRING: *type = TYPE_STRING; *cpp = CPPTYPE_STRING; return;
    case ONNXIO_KIND_ENUM: *type = TYPE_ENUM; *cpp = CPPTYPE_ENUM; return;
    case ONNXIO_KIND_MESSAGE: *type = TYPE_MESSAGE; *cpp = CPPTYPE_MESSAGE; return;
    default: *type = TYPE_BYTES; *cpp = CPPTYPE_STRING; return; /* BYTES, RAW */
    }
}

/* _schema_fields: {message full name: ((name, number, type, cpp_type,
 * repeated, packed, oneof name or None, message full name or None, enum
 * full name or None), ...) in field-number order}. */
static PyObject *schema_fields(void)
{
    PyObject *out = PyDict_New();
    for (size_t i = 0; out && i < onnxio_all_message_count; i++) {
        const onnxio_message_desc *d = onnxio_all_messages[i];
        PyObject *fields = PyTuple_New((Py_ssize_t)d->field_count);
        for (size_t k = 0; fields && k < d->field_count; k++) {
            const onnxio_field_desc *f = &d->fields[k];
            int type, cpp;
            field_types(f, &type, &cpp);
            PyObject *row = Py_BuildValue("(skiiNNzzz)", f->name, (unsigned long)f->number, type, cpp,
                                          PyBool_FromLong(f->label >= ONNXIO_LABEL_REPEATED),
                                          PyBool_FromLong(f->label == ONNXIO_LABEL_PACKED), f->oneof_name,
                                          f->kind == ONNXIO_KIND_MESSAGE ? f->message->full_name : NULL,
                                          f->enum_type ? f->enum_type->full_name : NULL);
            if (!row) Py_CLEAR(fields);
            else PyTuple_SET_ITEM(fields, (Py_ssize_t)k, row);
        }
        if (!fields || PyDict_SetItemString(out, d->full_name, fields) < 0) Py_CLEAR(out);
        Py_XDECREF(fields);
    }
    return out;
}

/* _schema_rows: the rows of src/schema.def that place things in files, in
 * order: ("file", path, optimize_for), ("enum", full name), ("message",
 * full name), and of the message before: ("field_order", "name, name,
 * ..."), ("reserved", "start", "end"), ("reserved_name", name). */
static const struct { const char *kind, *a, *b; } schema_rows[] = {
#define ONNXIO_FILE(PATH, OPTIMIZE_FOR) {"file", PATH, #OPTIMIZE_FOR},
#define ONNXIO_ENUM(E, FULL) {"enum", FULL, NULL},
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_MESSAGE(M, FULL) {"message", FULL, NULL},
#define ONNXIO_ONEOF(M, O)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_FIELD_ORDER(M, ...) {"field_order", #__VA_ARGS__, NULL},
#define ONNXIO_RESERVED(M, START, END) {"reserved", #START, #END},
#define ONNXIO_RESERVED_NAME(M, NAME) {"reserved_name", #NAME, NULL},
#define ONNXIO_END_MESSAGE(M)
#include "onnxio/schema.def"
#undef ONNXIO_FILE
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_MESSAGE
#undef ONNXIO_ONEOF
#undef ONNXIO_FIELD
#undef ONNXIO_FIELD_ORDER
#undef ONNXIO_RESERVED
#undef ONNXIO_RESERVED_NAME
#undef ONNXIO_END_MESSAGE
};

static PyObject *schema_rows_tuple(void)
{
    size_t n = sizeof schema_rows / sizeof schema_rows[0];
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        const char *kind = schema_rows[i].kind, *a = schema_rows[i].a, *b = schema_rows[i].b;
        PyObject *row = b ? Py_BuildValue("(sss)", kind, a, b) : Py_BuildValue("(ss)", kind, a);
        if (!row) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, (Py_ssize_t)i, row);
    }
    return out;
}

/* ---- file extensions -------------------------------------------------------- */

/* _extensions: ((extension, format), ...), the library's extension table
 * (onnxio_file_extension_at) in its order: (".txtpb", "textproto"), ...;
 * onnxio.serialization's registry takes the rows of its formats. */
static PyObject *extensions_tuple(void)
{
    size_t n = 0;
    while (onnxio_file_extension_at(n)) n++;
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        const onnxio_file_extension *e = onnxio_file_extension_at(i);
        PyObject *row = Py_BuildValue("(ss)", e->extension, e->format);
        if (!row) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, (Py_ssize_t)i, row);
    }
    return out;
}

/* The tables published as module attributes: the schema's and the
 * extension table. */
int pyonnxio_schema_tables_add(PyObject *module)
{
    PyObject *extensions = extensions_tuple();
    if (!extensions || PyModule_AddObjectRef(module, "_extensions", extensions) < 0) {
        Py_XDECREF(extensions);
        return -1;
    }
    Py_DECREF(extensions);
    PyObject *fields = schema_fields();
    if (!fields || PyModule_AddObjectRef(module, "_schema_fields", fields) < 0) {
        Py_XDECREF(fields);
        return -1;
    }
    Py_DECREF(fields);
    PyObject *rows = schema_rows_tuple();
    if (!rows || PyModule_AddObjectRef(module, "_schema_rows", rows) < 0) {
        Py_XDECREF(rows);
        return -1;
    }
    Py_DECREF(rows);
    return 0;
}
