"""ONNX's textual syntax read by the C library (onnxio_text_parse with
ONNXIO_TEXT_ONNX), against onnx's own parser:

- every model of libonnx-testdata and ../shared/corpus (files up to 20 MB),
  written by onnx.printer.to_text and read back by onnx.parser.parse_model
  and by onnxio: the same serialized bytes (a text onnx.parser refuses is
  counted and must be refused by onnxio too);
- hand-written texts for the corners of the grammar (every type, data
  type, attribute form, list, reference, subgraph, function, header key,
  comment, escape, odd number, and what onnx.parser ignores or refuses):
  the same bytes, or the same ParseError message (position, context and
  words), or, where onnx's C++ throws, a ParseError;
- the Python API: onnxio.parser with onnx's names and errors and without
  the onnx package, onnxio.load / load_from_string with format="onnxtxt"
  and their max_depth / max_expansion.
"""
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnx.parser
import onnx.printer
import pytest
from onnx import helper, numpy_helper

import onnxio
from conftest import needs

pytestmark = pytest.mark.filterwarnings("ignore:The onnxtxt format is experimental")

PARSERS = ("parse_model", "parse_graph", "parse_function", "parse_node")


def _reference(name, text):
    """onnx.parser's result: ("ok", bytes), ("error", message bytes) for a
    ParseError, or ("thrown", exception) for what its C++ throws."""
    try:
        return "ok", getattr(onnx.parser, name)(text).SerializeToString()
    except onnx.parser.ParseError as e:
        return "error", e.args[0]
    except (ValueError, IndexError, RuntimeError) as e:
        return "thrown", e


def _ours(name, text):
    try:
        got = getattr(onnxio.parser, name)(text)
    except onnxio.parser.ParseError as e:
        return "error", e.args[0]
    assert type(got).__module__ == "onnxio"
    return "ok", got.SerializeToString()


def check_same(name, text):
    """onnxio reads `text` as onnx.parser does; returns onnx's outcome."""
    kind, want = _reference(name, text)
    got_kind, got = _ours(name, text)
    if kind == "ok":
        assert got_kind == "ok", (name, text, got)
        assert got == want, (name, text)
    elif kind == "error":
        assert (got_kind, got) == ("error", want), (name, text)
    else:
        assert got_kind == "error", (name, text, want)
        assert got.startswith(b"[ParseError at position (line: "), got
    return kind


# ---- every model printed and read back -----------------------------------------------


def _models(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(".onnx") and os.path.getsize(os.path.join(dirpath, fn)) <= 20 << 20:
                yield os.path.join(dirpath, fn)


@pytest.mark.parametrize("source", ["libonnx-testdata", pytest.param("shared-corpus", marks=pytest.mark.slow)])
def test_printed_models_read_as_onnx_reads_them(source):
    root = needs(source)
    counts = {"identical": 0, "onnx.parser failed": 0, "printer failed": 0}
    for path in _models(root):
        model = onnx.load(path, load_external_data=False)
        try:
            text = onnx.printer.to_text(model)
        except Exception:  # noqa: BLE001 - onnx's printer refuses some models (raw_data of the wrong size)
            counts["printer failed"] += 1
            continue
        kind = check_same("parse_model", text)
        counts["identical" if kind == "ok" else "onnx.parser failed"] += 1
        if kind == "ok":
            # the same through onnxio.load, from bytes
            got = onnxio.load_from_string(text.encode(), format="onnxtxt")
            assert got.SerializeToString() == onnx.parser.parse_model(text).SerializeToString(), path
    print(f"\n{source}: {counts}")
    assert counts["identical"] > 0


# ---- hand-written corners of the grammar -------------------------------------------------

HEADER = '<ir_version: 10, opset_import: ["" : 21]>\n'

MODELS = [
    # the header: every key, repeated keys, escapes, empty lists
    '<ir_version: 7, opset_import: ["" : 18, "com.ms" : 1], producer_name: "p", producer_version: "1.0",'
    ' domain: "ai.x", model_version: 3, doc_string: "a \\"doc\\"\\n\\\\ é", metadata_props: ["k": "v", "k2": ""]>'
    ' g () => () {}',
    '<ir_version: 1, ir_version: 2, opset_import: [], opset_import: ["" : 1], metadata_props: [],'
    ' metadata_props: ["a": "b"]> g () => () {}',
    "<ir_version: -5, model_version: 0> g () => () {}",
    "<ir_version: 9223372036854775807, model_version: -9223372036854775808> g () => () {}",
    "<> g () => () {}",
    "<ir_version 8> g () => () {}",
    "<seq: 1> g () => () {}",
    "<ir_version: 8,> g () => () {}",
    '<producer_name: 5> g () => () {}',
    '<ir_version: "8"> g () => () {}',
    "<ir_version: 8.0> g () => () {}",
    "<ir_version: 0x10> g () => () {}",
    "<ir_version: 00012> g () => () {}",
    "<ir_version: 99999999999999999999> g () => () {}",
    "<ir_version: - 8> g () => () {}",
    # no header; graph forms
    "g () => () {}",
    "g => () {}",
    '"a graph" (x) => (y) { y = Identity(x) }',
    "_g1 (x) => (y) {\n}\n",
    "g () = > () {}",
    "g () =>() {}",
    "g (x) => (y)",
    "g (x) => (y) { y = Identity(x) } trailing",
    "g (x) => (y) { y = Identity(x) }\n# only a comment after\n",
    "",
    "   \n# nothing but a comment",
    # every primitive type, shapes of every kind
    "g (float a, uint8 b, int8 c, uint16 d, int16 e, int32 f, int64 h, string i, bool j, float16 k, double l,"
    " uint32 m, uint64 n, complex64 o, complex128 p, bfloat16 q, float8e4m3fn r, float8e4m3fnuz s, float8e5m2 t,"
    " float8e5m2fnuz u, float8e8m0 v, uint4 w, int4 x, float4e2m1 y, uint2 z, int2 aa, float6e2m3 ab,"
    " float6e3m2 ac) => () {}",
    'g (float[] a, float[?] b, float[N, 3, "a b", ?, M_2] c, float[0] d, float[-1] e) => (float[1,2] y) {}',
    "g (float[,] a) => () {}",
    "g (float[3.5] a) => () {}",
    "g (undefined a) => () {}",
    "g (Float a) => () {}",
    # sequence, map, optional, sparse and opaque types
    "g (seq(float[N]) a, seq(seq(int64)) b, map(int64, seq(float)) c, optional(seq(float[2])) d,"
    " optional(float) e) => (map(string, float[]) y) {}",
    "g (sparse_tensor(float[2,3]) a, sparse_tensor(float) b, sparse_tensor(float[]) c,"
    " sparse_tensor(int64[N]) d) => () {}",
    "g (opaque() a, opaque(foo) b, opaque(com.x, Name) c, opaque(a.b.c) d, opaque(a.b, c) e) => () {}",
    "g (map(seq(float), float) a) => () {}",
    "g (sparse_tensor(seq(float)) a) => () {}",
    "g (opaque(a,) a) => () {}",
    "g (opaque(a.) a) => () {}",
    "g (seq float a) => () {}",
    "g (seq) => () {}",
    "g (float seq, int64 map) => (opaque) {}",
    # initializers with values: every data type, in inputs and in the value_info list
    "g (int8[2] a = {1, -128}, uint8[2] b = {0, 255}, int16[1] c = {-32768}, uint16[1] d = {65535},"
    " int32[2] e = {2147483647, -2147483648}, int64[2] f = {9223372036854775807, -9223372036854775808},"
    " uint32[1] h = {4294967295}, uint64[3] i = {18446744073709551615, -1, 0}, bool[2] j = {1, 0},"
    " float16[1] k = {15360}, bfloat16[1] l = {16256}, float8e4m3fn[1] m = {56}, float8e4m3fnuz[1] n = {1},"
    " float8e5m2[1] o = {2}, float8e5m2fnuz[1] p = {3}, float8e8m0[1] q = {127}, int4[2] r = {7, -8},"
    " uint4[1] s = {15}, int2[1] t = {1}, uint2[1] u = {3}, float4e2m1[1] v = {6}, float6e2m3[1] w = {5},"
    " float6e3m2[1] x = {9}) => () {}",
    "g (float[12] a = {1, -0, 0, inf, -inf, nan, -nan, 1e-45, 3.4028235e38, 1.5e-50, 0.1, 16777217},"
    " double[8] b = {0.1, 1e308, -nan, 5e-324, 2.2250738585072014e-308, 1, -0.0, 1.7976931348623157e308},"
    " complex64[1] c = {1, 2}, complex128[1] d = {3, 4.5}, string[3] e = {\"a\", \"b\\\"c\", \"\"}) => () {}",
    "g () => () <float[2] w = {1.5, 2}, int64 s = {5}, float[N] v, string[1] t = {\"x\"}, float[0] z = {}> {}",
    'g () => () <float[2] w = ["location": "w.bin", "offset": "0", "length": "8"], float[1] x = ["k": "v"]> {}',
    "g (float[2] a =, float b) => () {}",
    "g (float[2] a = {}) => () {}",
    "g (float[2] a) => () <float[2] w => {}",
    "g (int8[1] a = {128}) => () {}",
    "g (int8[1] a = {3000000000}) => () {}",
    "g (int32[1] a = {2147483648}) => () {}",
    "g (float[N] a = {1}) => () {}",
    "g (float[?] a = {1}) => () {}",
    "g (float[] a = {1}) => () {}",
    "g (a = {1}) => () {}",
    "g (seq(float) a = {1}) => () {}",
    "g (int64[1] a = {1.5}) => () {}",
    "g (int64[1] a = {inf}) => () {}",
    'g (int64[1] a = {"1"}) => () {}',
    "g (float[1] a = {1e39}) => () {}",
    "g (double[1] a = {1e309}) => () {}",
    "g (float[1] a = {1e}) => () {}",
    "g (float[1] a = {1.e5, 2.}) => () {}",
    "g (float[1] a = {1.5.3}) => () {}",
    "g (float[1] a = {.5}) => () {}",
    "g (float[1] a = {+5}) => () {}",
    "g (float[1] a = {- 5}) => () {}",
    "g (float[1] a = {-inf, - inf}) => () {}",
    "g (float[1] a = {infinity, -Infinity, NaN, NAN, iNf}) => () {}",
    "g (float[1] a = {infinit}) => () {}",
    "g (float[1] a = {inf5}) => () {}",
    "g (float[1] a = {nanx}) => () {}",
    'g (string[1] a = {1}) => () {}',
    'g (float[2] w = []) => () {}',
    'g (float[2] w = ["a" "b"]) => () {}',
    "g (uint64[1] a = {18446744073709551616}) => () {}",
    "g (uint64[1] a = {-18446744073709551615}) => () {}",
    # nodes: names, outputs, domains, overloads, empty and quoted names
    HEADER + "g (x) => (y) {\n [n] t = A(x)\n [] u = B(t)\n [\"a name\"] y = C(u)\n}",
    HEADER + 'g (x) => (y) { a, , "b c" = Foo("x y", , x) y = Bar(a,) z = Baz(,) w = Q() v = R("") }',
    HEADER + "g (x) => (y) { y = com.ms.x.Op(x) z = .Op(x) }",
    HEADER + "g (x) => (y) { w = a..b(x) }",
    HEADER + "g (x) => (y) { y = com . ms . Op(x) }",
    HEADER + "g (x) => (y) { y = .Op(x) z = .a.Op(x) }",
    HEADER + "g (x) => (y) { y = d.Op:ov1(x) z = Op : ov2 (x) }",
    HEADER + "g (x) => (y) { z = Op:(x) }",
    HEADER + "g (x) => (y) { y = Op:ov(x) }",
    HEADER + "g (x) => (y) { y = (x) }",
    HEADER + "g (x) => (y) { = Op(x) }",
    HEADER + "g (x) => (y) { y = Op x }",
    HEADER + "g (x) => (y) { y = Op(x }",
    HEADER + "g (x) => (y) { [x y = Op(x) }",
    # attributes of every form
    HEADER + 'g (x) => (y) { y = Op <i = 1, n = -2, f = 1.5, e = 1e-3, s = "str", q = "a\\\\b\\"c",'
    ' fi: float = 3, nz: float = -0, ff: float = 2.5, ii: int = 7, ss: string = "x", r = @other,'
    ' rr: int = @"quoted ref", big = 9223372036854775807> (x) }',
    HEADER + "g (x) => (y) { y = Op <a = inf, b = -inf, c = NaN, d = -nan, e = Infinity, f = INF> (x) }",
    HEADER + 'g (x) => (y) { y = Op <a = [1, 2, -3], b = [1.5, 2], c = ["x", "y"], d: floats = [1, 2],'
    ' e: ints = [], f: floats = [], g: strings = [], h: tensors = [], i: graphs = [], j: type_protos = [],'
    ' k: sparse_tensors = []> (x) }',
    HEADER + "g (x) => (y) { y = Op <a = [1, 2.5]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = [1.5, 2]> (x) }",
    HEADER + 'g (x) => (y) { y = Op <a = ["s", 1]> (x) }',
    HEADER + "g (x) => (y) { y = Op <a = []> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: int = []> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: tensor = []> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: ints = 5> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: int = 1.5> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: bogus = 1> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: string = 1> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: ints = [1, 2.5]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = [@r, 1]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: ints = [@r]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = 99999999999999999999> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = 1e39> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: float = 99999999999999999999> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = - 5> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = - inf> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = -> (x) }",
    HEADER + 'g (x) => (y) { y = Op <a = -"s"> (x) }',
    HEADER + "g (x) => (y) { y = Op <a = {1}> (x) }",
    HEADER + "g (x) => (y) { y = Op <a => (x) }",
    HEADER + "g (x) => (y) { y = Op <a> (x) }",
    HEADER + "g (x) => (y) { y = Op <> (x) }",
    HEADER + 'g (x) => (y) { y = Op <"a" = 1> (x) }',
    # tensors and types as attribute values
    HEADER + 'g (x) => (y) { y = Op <a = float[2] {1, 2}, b = float[2] name {3, 4}, c = float[2] = {5, 6},'
    ' d = float {7}, e = int64[2] "q" {1, 2}, f = string[1] {"s"}, h = float[2] n2, i = float[1] = ["k": "v"],'
    ' t: tensor = int32[1] {5}> (x) }',
    HEADER + "g (x) => (y) { y = Op <a = float[N], b = seq(float), c = map(int64, float[2]), d = float,"
    " e = optional(float[]), f = sparse_tensor(float[2]), t: type_proto = float[3]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = [float[2] {1, 2}, float {3}], b = [float, int64[N]]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: tensors = [float[2] {1, 2}], b: type_protos = [float]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = float[N] {1}> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = seq(float) {1}> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: int = float[2] {1, 2}> (x) }",
    HEADER + "g (x) => (y) { y = Op <a: tensor = float[2]> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = float[2] {1, 2}}> (x) }",
    # subgraphs as attribute values, nested, in lists, and after the inputs
    HEADER + "g (x) => (y) {\n y = If (x) <then_branch = then (float[1] a = {1}) => (a) { b = Identity(a) },"
    " else_branch = else () => (float c) <float[1] c = {2}> { }>\n}",
    HEADER + "g (x) => (y) { y = Loop <body = b1 () => () { z = If <then_branch = b2 () => () { w = C() }> () }> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = [b1 () => () {}, b2 () => () {}], b: graphs = [b3 () => () {}]> (x) }",
    HEADER + "g (x) => (y) { y = Op <body: graph = b () => () {}> (x) }",
    HEADER + "g (x) => (y) { y = Op (x) <a = 1, b = 2> z = Op2 (y) }",
    HEADER + "g (x) => (y) { y = Op <a = 1> (x) <b = 2> }",
    HEADER + "g (x) => (y) { y = Op <a = _sub () => () {}> (x) }",
    HEADER + "g (x) => (y) { y = Op <a = sub (> (x) }",
    # functions: header keys, attributes with and without defaults (errors there ignored), typed io, value_info
    HEADER + 'g (x) => (y) { y = local.F(x) }\n<domain: "local", opset_import: ["" : 21], doc_string: "d",'
    ' overload: "o1">\nF <a, b: int = 3, c = 1.5, "d q", e: ints = [1, 2]> (float[N] x, w) => (y, int64 z)'
    " <float t> { t = Neg(x) y = Relu(t) }\n"
    '<domain: "local", opset_import: ["" : 21]>\n"quoted F" (x) => (y) { y = Relu(x) }',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a: int = "s", b: int = 1.5, c: bogus = 1, d> (x) => (y) { y = I(x) }',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a: int = "s"> (x) => (y) { y = I(x) }',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a: int = 1.5, b: float = "s", c: string = 1, d> (x) => (y) {}',
    # ... and what they leave half made stays, reading going on where the error was
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = sub () => () { y = Op <z: int = "q"> (x) => (y) { y = Id(x) }',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = sub (float[2] w = {1, "s"> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = sub () => () <int64[1] v = {"s"> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\n'
    'F <a = sub () => () { y = Op(x) [n] z = d.Op2:o <q: int = "s"> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = float[2] {1, "s"> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = float[2] n = ["k": "v", "k2": 5> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a: int = seq(float> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = [1, 2, "s"> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a: floats = [1, 2.5, "s"> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = sub (seq(float x) => () {}> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = @> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = [1, "s"], b = 2> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a: ints = 5, b> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = float[N] {1}, b> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = sub (float[2] x = {1, "s"}) => () {}, b> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = sub () => () { y = Op <z: int = "q"> () }, b> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a = 99999999999999999999, b> (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d">\nF <a: int => (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d", bogus: 1>\nF (x) => (y) {}',
    HEADER + 'g () => () {}\n<domain: "d", ir_version: 1>\nF (x) => (y) {}',
    HEADER + 'g () => () {}\nF () => () <> {}',
    HEADER + 'g () => () {}\nF (x) => (y) <float[2] t, seq(float) u> {}',
    HEADER + 'g () => () {}\nF (x) => (y) <float[2] t = {1, 2}> {}',
    HEADER + 'g () => () {}\nF (x,) => (y) {}',
    HEADER + 'g () => () {}\nF (float x) => (y) {} G () => () {}',
    HEADER + "g () => () {}\nF",
    HEADER + "g () => () {} {}",
    # comments, white space, escapes, names
    "# leading comment\n<ir_version: 8 # after a value\n, opset_import: [\"\" : 18]> # more\n"
    "g (x) # here\n => (y) {\r\n\ty = Id(x) # end\n}# no newline at the end",
    "<doc_string: \"line 1\nline 2 \\\n \\q \\\\\\\" é \u20ac \U0001f600\"> g () => () {}",
    '<doc_string: "unterminated> g () => () {}',
    '<doc_string: "ends with a backslash\\',
    "\v\f g () => () {}",
    'g ("quoted input" x) => () {}',
    'g (float "quoted name") => (float[N] "out put") { "out put" = Identity("quoted name") }',
    "g (x1_, _2) => () {}",
    "g (float 1x) => () {}",
    "g (float x-y) => () {}",
    "g\u00e9 () => () {}",
]

GRAPHS = [
    "g (float[N] x) => (float[N] y) { y = Relu(x) }",
    "g (float[N] x) => (float[N] y) { y = Relu(x) } anything after %%",
    '"q g" () => () {}',
    "g () => ()",
    "",
]

FUNCTIONS = [
    '<domain: "d", opset_import: ["" : 18]> F (x) => (y) { y = Relu(x) }',
    "F <a: int = 1> (x) => (y) { y = Relu(x) } trailing",
    'F <a: int = "s", b> (x) => (y) {}',
    "<overload: \"o\", doc_string: \"d\"> F () => () {}",
    "F (x) => (y)",
    "<opset_import: []> F",
]

NODES = [
    "y = Add(x, x)",
    "y = Add(x, x) trailing text",
    "[name] y = com.d.Op:ov <a = 1, g = b () => () {}> (x, , z)",
    "y = Op (x) <a = [1, 2]>",
    "= Op()",
    "y Op()",
    "",
]

CASES = ([("parse_model", t) for t in MODELS] + [("parse_graph", t) for t in GRAPHS]
         + [("parse_function", t) for t in FUNCTIONS] + [("parse_node", t) for t in NODES])


@pytest.mark.parametrize("name,text", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_grammar_corners_as_onnx_parser(name, text):
    check_same(name, text)


def test_corner_cases_cover_every_outcome():
    """The table has texts onnx.parser accepts, refuses and throws on."""
    kinds = {_reference(name, text)[0] for name, text in CASES}
    assert kinds == {"ok", "error", "thrown"}


def test_nul_ends_the_text():
    """onnx.parser reads a C string: the text ends at its first NUL."""
    assert check_same("parse_model", "g () => () {}\0 garbage {{{") == "ok"
    assert check_same("parse_model", "g () => (\0) {}") == "error"
    assert check_same("parse_node", 'y = Op <s = "a\0b"> (x)') == "error"


def test_models_built_by_helper():
    """Models the onnx helper builds (names that need quotes, every
    attribute type the printer writes, initializers and value_info):
    printed and read back as onnx reads them."""
    sub = helper.make_graph([helper.make_node("Neg", ["a"], ["b"])], "sub_g",
                            [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, ["n"])],
                            [helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, ["n"])])
    t = numpy_helper.from_array(np.array([[1.5, -2], [np.inf, np.nan]], np.float32), "t")
    node = helper.make_node("Custom", ["x 1", "", "w"], ["y"], name="n 1", domain="my.dom", i=3, f=0.1, s="s\"q",
                            ints=[1, -2], floats=[0.5, 1e-30], strings=["a", "b"], t=t, g=sub,
                            tp=helper.make_tensor_type_proto(onnx.TensorProto.INT64, [None, 3]))
    graph = helper.make_graph(
        [node, helper.make_node("Identity", ["y"], ["z"])], "main",
        [helper.make_tensor_value_info("x 1", onnx.TensorProto.FLOAT, ["batch", "a b", 3]),
         helper.make_tensor_value_info("w", onnx.TensorProto.DOUBLE, [2])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0.1, 1e300]), "w"),
         numpy_helper.from_array(np.arange(6, dtype=np.int8).reshape(2, 3), "i8"),
         numpy_helper.from_array(np.array([1, 2], np.uint64), "u64"),
         numpy_helper.from_array(np.array([True, False]), "bools"),
         numpy_helper.from_array(np.array([1.5], np.float16), "h")],
        value_info=[helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("my.dom", 1)],
                              producer_name="prod", doc_string="doc\nstring")
    helper.set_model_props(model, {"key": "value", "k\"2": "v\\2"})
    text = onnx.printer.to_text(model)
    assert check_same("parse_model", text) == "ok"
    for g in (model.graph, sub):
        check_same("parse_graph", onnx.printer.to_text(g))
    check_same("parse_node", onnx.printer.to_text(node))


# ---- the Python API ------------------------------------------------------------------------


def test_parser_api_is_onnxs():
    assert onnxio.parser.ParseError is onnx.parser.ParseError
    for name in PARSERS:
        assert callable(getattr(onnxio.parser, name))
    with pytest.raises(TypeError):
        onnxio.parser.parse_model(b"g () => () {}")
    # onnx's message, byte for byte, with its context line
    with pytest.raises(onnxio.parser.ParseError) as e:
        onnxio.parser.parse_model("<ir_version: 8>\n\ng (x) => (y) {\n  y = Relu(x\n\n}\n")
    assert e.value.args[0] == (b"[ParseError at position (line: 6 column: 1)]\nError context: }\n"
                               b"Expected character ) not found.")


def test_load_onnxtxt_as_onnx(tmp_path):
    """onnxio.load reads .onnxtxt files (by extension or format) and bytes
    as onnx.load does; other message types are refused as onnx refuses
    them."""
    text = HEADER + "g (float[N] x) => (float[N] y) <float[2] w = {1, 2}> { y = Add(x, w) }\n"
    path = tmp_path / "m.onnxtxt"
    path.write_text(text)
    want = onnx.load(str(path)).SerializeToString()
    assert want == onnx.parser.parse_model(text).SerializeToString()
    assert onnxio.load(str(path)).SerializeToString() == want
    assert onnxio.load(io.BytesIO(path.read_bytes()), format="onnxtxt").SerializeToString() == want
    with open(path, "rb") as f:
        assert onnxio.load(f, format="onnxtxt").SerializeToString() == want
    assert onnxio.load_from_string(text, format="onnxtxt").SerializeToString() == want
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onnxio.load(str(path))
    assert any("experimental" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="Unsupported proto type"):
        onnxio.load_tensor_from_string(b"float[1] t = {1}", format="onnxtxt")
    with pytest.raises(ValueError, match="Unsupported proto type"):
        onnx.load_tensor_from_string(b"float[1] t = {1}", format="onnxtxt")
    ser = onnxio.serialization.registry.get("onnxtxt")
    for cls, text in ((onnxio.GraphProto, "g () => () {}"), (onnxio.NodeProto, "y = A(x)"),
                      (onnxio.FunctionProto, "F (x) => (y) {}")):
        got = ser.deserialize_proto(text.encode(), cls())
        theirs = onnx.serialization.registry.get("onnxtxt")
        want = theirs.deserialize_proto(text.encode(), getattr(onnx, cls.__name__)())
        assert type(got) is cls and got.SerializeToString() == want.SerializeToString()


def test_load_errors_are_decode_and_parse_errors(tmp_path):
    path = tmp_path / "bad.onnxtxt"
    path.write_text("g (x) => (y) {\n  y = Relu(x\n}\n")
    with pytest.raises(onnxio.DecodeError) as e:
        onnxio.load(str(path))
    assert isinstance(e.value, onnx.parser.ParseError)
    assert "ONNX textual syntax, line 3 column 1: Expected character ) not found." in str(e.value)


def test_depth_and_expansion_limits(tmp_path):
    deep = "g (" + "seq(" * 30 + "float" + ")" * 30 + " x) => () {}"
    with pytest.raises(onnxio.DecodeError, match="nested deeper than 50"):
        onnxio.load_from_string(deep, format="onnxtxt", max_depth=50)
    assert onnxio.load_from_string(deep, format="onnxtxt", max_depth=70).graph.input[0].name == "x"
    with pytest.raises(onnxio.DecodeError, match="nested deeper than 100"):
        onnxio.parser.parse_model("g (" + "seq(" * 60 + "float" + ")" * 60 + " x) => () {}")
    wide = "g (float[" + "?," * 100000 + "?] x) => () {}"
    with pytest.raises(onnxio.DecodeError, match="max_expansion"):
        onnxio.load_from_string(wide, format="onnxtxt", max_expansion=2)
    m = onnxio.load_from_string(wide, format="onnxtxt")
    assert len(m.graph.input[0].type.tensor_type.shape.dim) == 100001


def test_onnxtxt_reads_without_onnx(tmp_path):
    """With the onnx package unimportable, onnxio.parser and
    format="onnxtxt" loads still read ONNX's textual syntax."""
    path = tmp_path / "m.onnxtxt"
    path.write_text(HEADER + "g (float[N] x) => (float[N] y) { y = Relu(x) }\n")
    script = f"""
import sys, warnings
warnings.simplefilter("ignore")
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "onnx" or name.startswith("onnx.") or name.startswith("google.protobuf"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import onnxio
import onnxio.parser
m = onnxio.load({str(path)!r})
assert m.graph.node[0].op_type == "Relu" and m.ir_version == 10, m
assert onnxio.parser.parse_node("y = Relu(x)").op_type == "Relu"
try:
    onnxio.parser.parse_model("g (")
except onnxio.parser.ParseError as e:
    print("ParseError", e.args[0])
assert "onnx" not in sys.modules and "google.protobuf" not in sys.modules
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ParseError b'[ParseError at position (line: 1 column: 4)]" in r.stdout
