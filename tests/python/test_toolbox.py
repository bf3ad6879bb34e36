"""onnx's toolbox on onnxio's messages: onnxio.checker,
shape_inference, version_converter, printer, parser, inliner, compose,
utils, reference, model_container and defs. Each call on onnxio messages is
compared with the same call of the onnx package on onnx messages: the same
serialized result, the same exception and message. Also: real onnx messages
and bytes and paths taken where onnx takes them, and the ImportError that
names the package to install when onnx is missing.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import onnx.checker
import onnx.compose
import onnx.inliner
import onnx.numpy_helper
import onnx.parser
import onnx.printer
import onnx.shape_inference
import onnx.utils
import onnx.version_converter
import pytest
from onnx.reference import ReferenceEvaluator as OnnxEvaluator

import onnxio
from conftest import needs

TEXT = """
<ir_version: 8, opset_import: ["" : 15, "local" : 1]>
agraph (float[N, 128] X, float[128, 10] W, float[10] B) => (float[N, 10] C) {
    T = MatMul(X, W)
    S = Add(T, B)
    C = local.Double(S)
}
<domain: "local", opset_import: ["" : 15]>
Double (x) => (y) {
    y = Add(x, x)
}
"""

ALL_MODULES = ["checker", "shape_inference", "version_converter", "printer", "parser", "inliner", "compose", "utils",
               "reference", "model_container", "defs"]


def ser(m):
    return m.SerializeToString()


@pytest.fixture
def pair():
    """(onnxio model, onnx model) of TEXT, each parsed by its package."""
    ours = onnxio.parser.parse_model(TEXT)
    theirs = onnx.parser.parse_model(TEXT)
    assert type(ours) is onnxio.ModelProto and ser(ours) == ser(theirs)
    return ours, theirs


def _testdata_models():
    root = needs("libonnx-testdata") / "node"
    names = ["test_conv_with_strides_padding", "test_lstm_defaults", "test_loop11", "test_if", "test_gemm_default_no_bias"]
    paths = [root / n / "model.onnx" for n in names]
    absent = [str(p) for p in paths if not p.exists()]
    assert not absent, f"not in this libonnx-testdata: {absent}"
    return paths


def same_error(call_ours, call_theirs):
    """Both raise, the same class and message."""
    with pytest.raises(Exception) as theirs:
        call_theirs()
    with pytest.raises(Exception) as ours:
        call_ours()
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_every_module_is_there():
    for name in ALL_MODULES:
        assert getattr(onnxio, name).__name__ == f"onnxio.{name}"
    # onnx's exception classes are the ones onnxio's modules raise and export
    assert onnxio.checker.ValidationError is onnx.checker.ValidationError
    assert onnxio.shape_inference.InferenceError is onnx.shape_inference.InferenceError
    assert onnxio.version_converter.ConvertError is onnx.version_converter.ConvertError
    assert onnxio.parser.ParseError is onnx.parser.ParseError


def test_public_names_of_onnx_modules():
    for name in ALL_MODULES:
        theirs = __import__(f"onnx.{name}", fromlist=["_"])
        ours = getattr(onnxio, name)
        public = getattr(theirs, "__all__", None) or [n for n in dir(theirs) if not n.startswith("_")]
        modules = {n for n in public if type(getattr(theirs, n)).__name__ == "module"}
        missing = [n for n in public if n not in modules and not hasattr(ours, n)]
        assert not missing, f"onnxio.{name} lacks {missing}"


# ---- the C++-backed modules --------------------------------------------------


def test_checker(pair):
    ours, theirs = pair
    for full in (False, True):
        onnxio.checker.check_model(ours, full_check=full)
    onnxio.checker.check_model(theirs)  # onnx's own messages too
    onnxio.checker.check_model(ser(ours))
    ctx = onnxio.checker.C.CheckerContext()
    ctx.ir_version, ctx.opset_imports = 8, {"": 15, "local": 1}
    onnxio.checker.check_graph(ours.graph, ctx)
    onnxio.checker.check_node(ours.graph.node[0])
    onnxio.checker.check_function(ours.functions[0])
    onnxio.checker.check_value_info(ours.graph.input[0])
    onnxio.checker.check_tensor(onnxio.helper.make_tensor("t", onnxio.TensorProto.FLOAT, [2], [1.0, 2.0]))
    onnxio.checker.check_attribute(onnxio.helper.make_attribute("a", 1))
    # a broken model: the same ValidationError as onnx gives
    bad_ours, bad_theirs = onnxio.ModelProto(), onnx.ModelProto()
    bad_ours.CopyFrom(ours)
    bad_theirs.CopyFrom(theirs)
    bad_ours.graph.node[0].op_type = "NoSuchOp"
    bad_theirs.graph.node[0].op_type = "NoSuchOp"
    same_error(lambda: onnxio.checker.check_model(bad_ours), lambda: onnx.checker.check_model(bad_theirs))
    same_error(lambda: onnxio.checker.check_node(ours.graph), lambda: onnx.checker.check_node(theirs.graph))


def test_checker_by_path(tmp_path, pair):
    ours, theirs = pair
    onnxio.save(ours, tmp_path / "m.onnx")
    onnxio.checker.check_model(tmp_path / "m.onnx", full_check=True)
    onnxio.checker.check_model(str(tmp_path / "m.onnx"))


@pytest.mark.parametrize("data_prop", [False, True])
def test_shape_inference_same_as_onnx(data_prop):
    for path in _testdata_models():
        theirs = onnx.shape_inference.infer_shapes(onnx.load(str(path)), check_type=True, data_prop=data_prop)
        ours = onnxio.shape_inference.infer_shapes(onnxio.load(path), check_type=True, data_prop=data_prop)
        assert type(ours) is onnxio.ModelProto
        assert ser(ours) == ser(theirs), path
        # bytes in, and onnx's message in: the same result, as onnxio's
        assert ser(onnxio.shape_inference.infer_shapes(path.read_bytes(), data_prop=data_prop)) == \
            ser(onnx.shape_inference.infer_shapes(path.read_bytes(), data_prop=data_prop))
        mixed = onnxio.shape_inference.infer_shapes(onnx.load(str(path)), check_type=True, data_prop=data_prop)
        assert type(mixed) is onnxio.ModelProto and ser(mixed) == ser(theirs)


def test_shape_inference_errors_and_path(tmp_path, pair):
    ours, theirs = pair
    same_error(lambda: onnxio.shape_inference.infer_shapes("x.onnx"),
               lambda: onnx.shape_inference.infer_shapes("x.onnx"))
    same_error(lambda: onnxio.shape_inference.infer_shapes(42), lambda: onnx.shape_inference.infer_shapes(42))
    onnxio.save(ours, tmp_path / "a.onnx")
    onnx.save(theirs, str(tmp_path / "b.onnx"))
    onnxio.shape_inference.infer_shapes_path(tmp_path / "a.onnx", tmp_path / "a2.onnx")
    onnx.shape_inference.infer_shapes_path(str(tmp_path / "b.onnx"), str(tmp_path / "b2.onnx"))
    assert (tmp_path / "a2.onnx").read_bytes() == (tmp_path / "b2.onnx").read_bytes()
    # an incompatible model: onnx's InferenceError, with onnx's message
    bad_ours, bad_theirs = onnxio.ModelProto(), onnx.ModelProto()
    bad_ours.CopyFrom(ours)
    bad_theirs.CopyFrom(theirs)
    for m in (bad_ours, bad_theirs):
        m.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 64
    same_error(lambda: onnxio.shape_inference.infer_shapes(bad_ours, strict_mode=True),
               lambda: onnx.shape_inference.infer_shapes(bad_theirs, strict_mode=True))


def test_infer_node_outputs_and_function_types(pair):
    ours, theirs = pair
    schema = onnx.defs.get_schema("MatMul", 15)

    def args(mod, m):
        types = {i.name: i.type for i in m.graph.input}
        return schema, m.graph.node[0], types

    got = onnxio.shape_inference.infer_node_outputs(*args(onnxio, ours))
    want = onnx.shape_inference.infer_node_outputs(*args(onnx, theirs))
    assert {k: ser(v) for k, v in got.items()} == {k: ser(v) for k, v in want.items()}
    assert all(type(v) is onnxio.TypeProto for v in got.values())
    f_ours, f_theirs = ours.functions[0], theirs.functions[0]
    t = onnxio.helper.make_tensor_type_proto(onnxio.TensorProto.FLOAT, [3])
    got = onnxio.shape_inference.infer_function_output_types(f_ours, [t], [])
    want = onnx.shape_inference.infer_function_output_types(
        f_theirs, [onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [3])], [])
    assert [ser(x) for x in got] == [ser(x) for x in want]


def test_version_converter():
    for path in _testdata_models():
        for target in (11, 18):
            try:
                want = onnx.version_converter.convert_version(onnx.load(str(path)), target)
            except Exception as e:  # noqa: BLE001
                same_error(lambda: onnxio.version_converter.convert_version(onnxio.load(path), target),
                           lambda: (_ for _ in ()).throw(e))
                continue
            got = onnxio.version_converter.convert_version(onnxio.load(path), target)
            assert type(got) is onnxio.ModelProto and ser(got) == ser(want), (path, target)
    same_error(lambda: onnxio.version_converter.convert_version(b"", 11),
               lambda: onnx.version_converter.convert_version(b"", 11))


def test_printer_and_parser(pair):
    ours, theirs = pair
    for get in (lambda m: m, lambda m: m.graph, lambda m: m.graph.node[0], lambda m: m.functions[0]):
        assert onnxio.printer.to_text(get(ours)) == onnx.printer.to_text(get(theirs))
        assert onnxio.printer.to_text(get(theirs)) == onnx.printer.to_text(get(theirs))
    same_error(lambda: onnxio.printer.to_text(ours.graph.input[0]), lambda: onnx.printer.to_text(theirs.graph.input[0]))
    text = onnx.printer.to_text(theirs.graph)
    for name in ("parse_graph", "parse_node", "parse_function"):
        src = {"parse_graph": text, "parse_node": "y = Add(x, x)",
               "parse_function": onnx.printer.to_text(theirs.functions[0])}[name]
        got, want = getattr(onnxio.parser, name)(src), getattr(onnx.parser, name)(src)
        assert type(got).__name__ == type(want).__name__ and type(got).__module__ == "onnxio"
        assert ser(got) == ser(want)
    same_error(lambda: onnxio.parser.parse_model("agraph ("), lambda: onnx.parser.parse_model("agraph ("))


def test_inliner(pair):
    ours, theirs = pair
    got = onnxio.inliner.inline_local_functions(ours)
    assert type(got) is onnxio.ModelProto and ser(got) == ser(onnx.inliner.inline_local_functions(theirs))
    got = onnxio.inliner.inline_selected_functions(ours, [("local", "Double")])
    assert ser(got) == ser(onnx.inliner.inline_selected_functions(theirs, [("local", "Double")]))


# ---- the Python-level modules ----------------------------------------------


def test_compose(pair):
    ours, theirs = pair
    got = onnxio.compose.add_prefix(ours, "p_")
    assert type(got) is onnxio.ModelProto and ser(got) == ser(onnx.compose.add_prefix(theirs, "p_"))
    # inplace: the onnxio message passed is changed, as onnx changes its own
    g_ours, g_theirs = onnxio.GraphProto(), onnx.GraphProto()
    g_ours.CopyFrom(ours.graph)
    g_theirs.CopyFrom(theirs.graph)
    onnxio.compose.add_prefix_graph(g_ours, "q_", inplace=True)
    onnx.compose.add_prefix_graph(g_theirs, "q_", inplace=True)
    assert ser(g_ours) == ser(g_theirs)
    a = onnxio.parser.parse_model('<ir_version: 8, opset_import: ["" : 15]> a (float[2] x) => (float[2] y) { y = Relu(x) }')
    b = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 15]> b (float[2] u) => (float[2] v) { v = Neg(u) }')
    got = onnxio.compose.merge_models(a, b, io_map=[("y", "u")])  # mixed: onnxio and onnx
    want = onnx.compose.merge_models(onnxio.to_onnx(a), b, io_map=[("y", "u")])
    assert type(got) is onnxio.ModelProto and ser(got) == ser(want)
    assert onnxio.compose.check_overlapping_names(a.graph, a.graph) == \
        onnx.compose.check_overlapping_names(onnxio.to_onnx(a.graph), onnxio.to_onnx(a.graph))


def test_utils_extract_model(tmp_path, pair):
    ours, theirs = pair
    ours, theirs = onnxio.shape_inference.infer_shapes(ours), onnx.shape_inference.infer_shapes(theirs)
    onnxio.save(ours, tmp_path / "m.onnx")
    onnxio.utils.extract_model(tmp_path / "m.onnx", tmp_path / "x.onnx", ["X", "W"], ["T"])
    onnx.utils.extract_model(str(tmp_path / "m.onnx"), str(tmp_path / "y.onnx"), ["X", "W"], ["T"])
    assert (tmp_path / "x.onnx").read_bytes() == (tmp_path / "y.onnx").read_bytes()
    got = onnxio.utils.Extractor(ours).extract_model(["X", "W"], ["T"])
    want = onnx.utils.Extractor(theirs).extract_model(["X", "W"], ["T"])
    assert type(got) is onnxio.ModelProto and ser(got) == ser(want)


def test_reference_evaluator(pair):
    ours, theirs = pair
    rng = np.random.default_rng(0)
    feeds = {"X": rng.standard_normal((3, 128), dtype=np.float32),
             "W": rng.standard_normal((128, 10), dtype=np.float32),
             "B": rng.standard_normal(10, dtype=np.float32)}
    want = OnnxEvaluator(theirs).run(None, feeds)
    for proto in (ours, ser(ours)):
        got = onnxio.reference.ReferenceEvaluator(proto).run(None, feeds)
        assert len(got) == len(want) and all(np.array_equal(g, w) for g, w in zip(got, want))
    # a node and a function of onnxio's, functions passed as onnxio messages
    node = onnxio.helper.make_node("Add", ["a", "b"], ["c"])
    out = onnxio.reference.ReferenceEvaluator(node).run(None, {"a": np.float32(1), "b": np.float32(2)})
    assert out[0] == 3
    f = onnxio.reference.ReferenceEvaluator(ours.graph, opsets={"": 15, "local": 1},
                                           functions=list(ours.functions)).run(None, feeds)
    assert np.array_equal(f[0], want[0])


def test_reference_submodules_and_ops_take_onnxio_messages():
    """onnx.reference's submodules are attributes of onnxio.reference once
    imported (`import onnx.reference.op_run` then
    `onnx.reference.op_run.OpRun` with onnx mapped to onnxio), and the op
    classes load_op gives take onnxio messages as attribute values, giving
    what onnx's give for onnx's messages (onnxscript's constant folder)."""
    import importlib

    import onnx.reference.op_run

    assert onnxio.reference.op_run is onnx.reference.op_run
    assert onnxio.reference.ops.load_op is not None
    with pytest.raises(AttributeError):
        onnxio.reference.no_such_module  # noqa: B018
    value = np.array([2.5], np.float32)
    shape = np.array([2, 3], np.int64)
    want = onnx.reference.ops.load_op("", "ConstantOfShape", 21).eval(shape, value=onnx.numpy_helper.from_array(value))
    got = onnxio.reference.ops.load_op("", "ConstantOfShape", 21).eval(shape,
                                                                        value=onnxio.numpy_helper.from_array(value))
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert issubclass(onnxio.reference.ops.load_op("", "Add", 14), onnx.reference.op_run.OpRun)
    importlib.import_module("onnx.reference.ops")


def test_model_container_and_defs(tmp_path):
    g = onnxio.helper.make_graph([onnxio.helper.make_node("Identity", ["x"], ["y"])], "g",
                                 [onnxio.helper.make_tensor_value_info("x", onnxio.TensorProto.FLOAT, [2])],
                                 [onnxio.helper.make_tensor_value_info("y", onnxio.TensorProto.FLOAT, [2])])
    c = onnxio.model_container.make_large_model(g)
    assert ser(c.model_proto) == ser(onnx.model_container.make_large_model(onnxio.to_onnx(g)).model_proto)
    t = onnxio.model_container.make_large_tensor_proto("#w", "w", onnxio.TensorProto.FLOAT, [2, 3])
    assert type(t) is onnxio.TensorProto
    assert ser(t) == ser(onnx.model_container.make_large_tensor_proto("#w", "w", onnx.TensorProto.FLOAT, [2, 3]))
    assert onnxio.defs.onnx_opset_version() == onnx.defs.onnx_opset_version()
    assert onnxio.defs.get_schema("Relu").since_version == onnx.defs.get_schema("Relu").since_version


def test_model_container_holds_onnxio_messages(tmp_path):
    """A container's model is an onnxio ModelProto; saved and loaded back it
    gives the files and arrays onnx's container gives."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = onnxio.helper.make_graph(
        [onnxio.helper.make_node("Identity", ["w"], ["y"])], "g", [],
        [onnxio.helper.make_tensor_value_info("y", onnxio.TensorProto.FLOAT, [2, 3])],
        initializer=[onnxio.model_container.make_large_tensor_proto("#w", "w", onnxio.TensorProto.FLOAT, [2, 3])])
    c = onnxio.model_container.make_large_model(g, {"#w": w})
    assert isinstance(c, onnxio.model_container.ModelContainer) and type(c.model_proto) is onnxio.ModelProto
    assert isinstance(c, onnx.model_container.ModelContainer)  # onnx's functions take it
    c.model_proto.producer_name = "changed"  # the container's own model, not a copy
    assert c.model_proto.producer_name == "changed"
    ref = onnx.model_container.make_large_model(onnxio.to_onnx(g), {"#w": w})
    ref.model_proto.producer_name = "changed"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    saved = c.save(str(tmp_path / "a" / "m.onnx"), all_tensors_to_one_file=True)
    ref.save(str(tmp_path / "b" / "m.onnx"), all_tensors_to_one_file=True)
    assert type(saved) is onnxio.ModelProto
    for name in ("m.onnx", "m.onnx.weight"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    back = onnxio.model_container.ModelContainer()
    back.load(str(tmp_path / "a" / "m.onnx"))
    want = onnx.model_container.ModelContainer()
    want.load(str(tmp_path / "b" / "m.onnx"))
    assert type(back.model_proto) is onnxio.ModelProto
    assert ser(back.model_proto) == ser(want.model_proto)
    assert sorted(back.large_initializers) == sorted(want.large_initializers)
    for k, v in want.large_initializers.items():
        assert np.array_equal(back.large_initializers[k], v)


def test_defs_give_onnxio_messages():
    """Schemas from onnxio.defs hand out onnxio messages equal to onnx's."""
    s = onnxio.defs.get_schema("Celu")
    ref = onnx.defs.get_schema("Celu")
    assert isinstance(s, onnxio.defs.OpSchema) and (s.name, s.since_version) == (ref.name, ref.since_version)
    body = s.function_body
    assert type(body) is onnxio.FunctionProto and ser(body) == ser(ref.function_body)
    version = ref.function_opset_versions[-1]
    want = ref.get_function_with_opset_version(version)  # onnx's: the serialized FunctionProto
    assert want and s.get_function_with_opset_version(version) == want  # bytes, as onnx's
    alpha = onnxio.defs.get_schema("LeakyRelu").attributes["alpha"]
    assert isinstance(alpha, onnxio.defs.OpSchema.Attribute)
    assert type(alpha.default_value) is onnxio.AttributeProto
    assert ser(alpha.default_value) == ser(onnx.defs.get_schema("LeakyRelu").attributes["alpha"].default_value)
    assert alpha.required == onnx.defs.get_schema("LeakyRelu").attributes["alpha"].required
    every = onnxio.defs.get_all_schemas_with_history()
    assert len(every) == len(onnx.defs.get_all_schemas_with_history())
    assert all(isinstance(x, onnxio.defs.OpSchema) for x in every[:50])
    # onnx's own schemas still give onnx's messages: the registry is shared, not patched.
    assert type(ref.function_body) is onnx.FunctionProto


# ---- without onnx -------------------------------------------------------------


def test_import_error_names_the_package():
    code = textwrap.dedent("""
        import sys
        sys.modules["onnx"] = None  # as if onnx were not installed
        import onnxio
        m = onnxio.ModelProto(ir_version=8)  # the core needs nothing
        assert onnxio.load_model_from_string(m.SerializeToString()) == m
        import importlib
        for name in %r:
            try:
                importlib.import_module("onnxio." + name)
            except ImportError as e:
                assert "pip install onnx" in str(e), (name, str(e))
            else:
                raise AssertionError(name + " imported without onnx")
            # As an attribute: the same ImportError, as docs/python.md says.
            try:
                getattr(onnxio, name)
            except ImportError as e:
                assert "pip install onnx" in str(e) and "onnxio[" not in str(e), (name, str(e))
            else:
                raise AssertionError(name + " reached without onnx")
        # the parser is the C library's: it needs no onnx
        assert onnxio.parser.parse_node("y = Relu(x)").op_type == "Relu"
        print("ok")
    """ % ([name for name in ALL_MODULES if name != "parser"],))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_import_onnxio_does_not_import_onnx():
    r = subprocess.run([sys.executable, "-c", "import sys, onnxio; print('onnx' in sys.modules)"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stderr
