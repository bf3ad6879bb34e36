/* The library's tables as Python data, read once by the package: the data
 * type table (_data_types, src/datatype.def) and the option table
 * (_options, src/options.def). */
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

