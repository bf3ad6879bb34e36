"""onnxio.helper against onnx.helper: the same calls must give messages with
identical SerializeToString() bytes (and the same str(), the same
exceptions, the same mapping results).

Every TensorProto data type goes through make_tensor with a list of values
and with raw=True (numpy array and bytes); every attribute type through
make_attribute; shapes unset, empty, symbolic and with None dims; sparse
tensors, sequences, maps, optionals, functions, training info, models with
opset imports and metadata. A subprocess checks that onnxio.helper imports
and works with the onnx package hidden.
"""

import math
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import onnx
import onnx.checker
from google.protobuf.message import Message as _PbMessage
import onnx.helper as oh
import pytest

import onnxio
import onnxio.helper as xh

OT = onnx.TensorProto
XT = onnxio.TensorProto

ALL_TYPES = [v for k, v in OT.DataType.items() if k != "UNDEFINED"]
def tparams(types):
    return [pytest.param(t, id=OT.DataType.Name(t)) for t in types]

INT_TYPES = {OT.UINT8, OT.INT8, OT.UINT16, OT.INT16, OT.INT32, OT.INT64, OT.UINT32, OT.UINT64, OT.UINT4, OT.INT4,
             OT.UINT2, OT.INT2}


def same(a, b):
    """a (onnxio) and b (onnx) serialize to the same bytes and print the same."""
    ab = a.SerializeToString()
    bb = b.SerializeToString()
    assert ab == bb
    assert str(a) == str(b)
    return ab


def sample(dt, n=6, seed=0):
    """n values of TensorProto type dt as a numpy array of onnx's dtype,
    covering negative, fractional and extreme values where the type has them."""
    rng = np.random.default_rng(seed + dt)
    np_dtype = oh.tensor_dtype_to_np_dtype(dt)
    if dt == OT.STRING:
        return np.array(["a", "bé", "", "xyz", "0", "long string " * 3][:n], dtype=object)
    if dt == OT.BOOL:
        return rng.integers(0, 2, n).astype(bool)
    if dt in (OT.COMPLEX64, OT.COMPLEX128):
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np_dtype)
    if np.issubdtype(np_dtype, np.integer) or np_dtype in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                                            ml_dtypes.uint2):
        info = ml_dtypes.iinfo(np_dtype)
        vals = rng.integers(max(info.min, -(2**31)), min(info.max, 2**31 - 1), n, endpoint=True).astype(np_dtype)
        vals[0] = info.min
        vals[-1] = info.max
        return vals
    # floating types: keep within the type's range
    info = ml_dtypes.finfo(np_dtype)
    vals = (rng.standard_normal(n) * min(float(info.max) / 4, 100.0)).astype(np_dtype)
    vals[0] = info.max
    return vals


@pytest.mark.parametrize("dt", tparams(ALL_TYPES))
def test_make_tensor_vals_every_type(dt):
    vals = sample(dt)
    dims = [2, 3]
    if dt == OT.STRING:
        lst = list(vals)
    elif dt in (OT.COMPLEX64, OT.COMPLEX128, OT.BOOL):
        lst = vals.tolist()
    elif dt in INT_TYPES:
        lst = [int(v) for v in vals]
    else:  # floats, as users write them
        lst = vals.astype(np.float64).tolist()
    a = xh.make_tensor("t", dt, dims, lst)
    b = oh.make_tensor("t", dt, dims, lst)
    same(a, b)
    # numpy array input goes through the same path
    if dt != OT.STRING:
        same(xh.make_tensor("t", dt, dims, vals), oh.make_tensor("t", dt, dims, vals))


@pytest.mark.parametrize("dt", tparams([t for t in ALL_TYPES if t != OT.STRING]))
@pytest.mark.parametrize("n", [5, 6, 1, 0])
def test_make_tensor_raw_every_type(dt, n):
    vals = sample(dt, n=max(n, 1))[:n]
    a = xh.make_tensor("r", dt, [n], vals, raw=True)
    b = oh.make_tensor("r", dt, [n], vals, raw=True)
    raw = same(a, b)
    # bytes input: the payload as onnx wrote it
    payload = b.raw_data
    same(xh.make_tensor("r", dt, [n], payload, raw=True), oh.make_tensor("r", dt, [n], payload, raw=True))
    assert a.raw_data == payload
    assert len(raw) > 0


def test_make_tensor_raw_non_contiguous_and_big_endian():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for arr in (base[:, ::2], base.T, base.astype(">f4"), np.asfortranarray(base)):
        same(xh.make_tensor("x", XT.FLOAT, list(arr.shape), arr, raw=True),
             oh.make_tensor("x", OT.FLOAT, list(arr.shape), arr, raw=True))


def test_make_tensor_scalar_and_empty():
    same(xh.make_tensor("s", XT.FLOAT, [], [1.5]), oh.make_tensor("s", OT.FLOAT, [], [1.5]))
    same(xh.make_tensor("e", XT.INT64, [0, 3], []), oh.make_tensor("e", OT.INT64, [0, 3], []))
    same(xh.make_tensor("", XT.DOUBLE, [1], [2.0]), oh.make_tensor("", OT.DOUBLE, [1], [2.0]))


def raises_like(fx, fo, same_message=True):
    """fx (onnxio) raises the exception type fo (onnx) raises, with the same
    message unless the message comes from the message classes (protobuf's
    wording is not onnxio's)."""
    with pytest.raises(Exception) as eo:
        fo()
    with pytest.raises(type(eo.value)) as ex:
        fx()
    if same_message:
        assert str(ex.value) == str(eo.value)


def test_make_tensor_errors():
    raises_like(lambda: xh.make_tensor("s", XT.STRING, [1], b"x", raw=True),
                lambda: oh.make_tensor("s", OT.STRING, [1], b"x", raw=True))
    raises_like(lambda: xh.make_tensor("f", XT.FLOAT, [3], [1.0, 2.0]),
                lambda: oh.make_tensor("f", OT.FLOAT, [3], [1.0, 2.0]))
    raises_like(lambda: xh.make_tensor("f", XT.FLOAT, [3], b"\0" * 8, raw=True),
                lambda: oh.make_tensor("f", OT.FLOAT, [3], b"\0" * 8, raw=True))
    raises_like(lambda: xh.make_tensor("f", XT.FLOAT, [1], [1.0], raw=True),
                lambda: oh.make_tensor("f", OT.FLOAT, [1], [1.0], raw=True))
    raises_like(lambda: xh.make_tensor("f", XT.INT4, [5], np.zeros(4, ml_dtypes.int4), raw=True),
                lambda: oh.make_tensor("f", OT.INT4, [5], np.zeros(4, ml_dtypes.int4), raw=True))
    with pytest.raises(KeyError):
        xh.make_tensor("u", 0, [1], [1])


def test_float8_saturation_and_e8m0_rounding():
    vals = [1e9, -1e9, 0.3, float("nan"), float("inf"), -0.0, 3.0e-3]
    for dt in (OT.FLOAT8E4M3FN, OT.FLOAT8E4M3FNUZ, OT.FLOAT8E5M2, OT.FLOAT8E5M2FNUZ, OT.FLOAT8E8M0):
        same(xh.make_tensor("f8", dt, [len(vals)], vals), oh.make_tensor("f8", dt, [len(vals)], vals))


def test_make_sparse_tensor():
    values = xh.make_tensor("v", XT.FLOAT, [3], [1.0, 2.0, 3.0])
    indices = xh.make_tensor("i", XT.INT64, [3], [0, 4, 9])
    ov = oh.make_tensor("v", OT.FLOAT, [3], [1.0, 2.0, 3.0])
    oi = oh.make_tensor("i", OT.INT64, [3], [0, 4, 9])
    same(xh.make_sparse_tensor(values, indices, [2, 5]), oh.make_sparse_tensor(ov, oi, [2, 5]))
    # 2-D indices
    idx2 = xh.make_tensor("i", XT.INT64, [3, 2], [0, 0, 0, 4, 1, 4])
    oidx2 = oh.make_tensor("i", OT.INT64, [3, 2], [0, 0, 0, 4, 1, 4])
    same(xh.make_sparse_tensor(values, idx2, [2, 5]), oh.make_sparse_tensor(ov, oidx2, [2, 5]))


def both(name, *args, **kwargs):
    """The same helper call on both sides; message arguments are given as
    onnx messages and converted for onnxio by bytes."""
    xargs = [to_x(a) for a in args]
    xkw = {k: to_x(v) for k, v in kwargs.items()}
    return getattr(xh, name)(*xargs, **xkw), getattr(oh, name)(*args, **kwargs)


def to_x(v):
    """An onnx message (or list of them) as the onnxio message of the same bytes."""
    if isinstance(v, _PbMessage):
        cls = getattr(onnxio, type(v).__name__)
        return cls.FromString(v.SerializeToString())
    if isinstance(v, (list, tuple)) and v and all(
        isinstance(e, _PbMessage) for e in v
    ):
        return [to_x(e) for e in v]
    return v


def test_to_x_converts():
    t = oh.make_tensor("v", OT.FLOAT, [1], [1.0])
    x = to_x(t)
    assert isinstance(x, XT)
    assert x.SerializeToString() == t.SerializeToString()


def otensor(name="t", dims=(2,), dt=OT.FLOAT):
    n = math.prod(dims)
    return oh.make_tensor(name, dt, list(dims), list(range(n)))


def ograph(name="g"):
    node = oh.make_node("Relu", ["x"], ["y"])
    x = oh.make_tensor_value_info("x", OT.FLOAT, [2])
    y = oh.make_tensor_value_info("y", OT.FLOAT, [2])
    return oh.make_graph([node], name, [x], [y])


ATTRIBUTE_VALUES = {
    "int": 3,
    "neg_int": -(2**40),
    "bool": True,
    "np_int": np.int64(7),
    "float": 0.5,
    "np_float": np.float32(1.25),
    "str": "héllo",
    "bytes": b"\x00\xffraw",
    "tensor": otensor(),
    "sparse": oh.make_sparse_tensor(otensor("v"), otensor("i", dt=OT.INT64), [5]),
    "graph": ograph(),
    "type_proto": oh.make_tensor_type_proto(OT.FLOAT, ["N", 3]),
    "ints": [1, -2, 3],
    "floats": [1.5, -2.0],
    "mixed_numbers": [1, 2.5],
    "strings": ["a", b"b", "ç"],
    "tensors": [otensor("a"), otensor("b")],
    "sparse_tensors": [oh.make_sparse_tensor(otensor("v"), otensor("i", dt=OT.INT64), [5])],
    "graphs": [ograph("g1"), ograph("g2")],
    "type_protos": [oh.make_tensor_type_proto(OT.INT64, []), oh.make_sequence_type_proto(
        oh.make_tensor_type_proto(OT.FLOAT, None))],
    "tuple": (4, 5),
    "generator": "gen",
}


@pytest.mark.parametrize("kind", list(ATTRIBUTE_VALUES))
def test_make_attribute_every_type(kind):
    value = ATTRIBUTE_VALUES[kind]
    if kind == "generator":
        a = xh.make_attribute("a", (i for i in range(3)))
        b = oh.make_attribute("a", (i for i in range(3)))
    else:
        a, b = both("make_attribute", "a", value, doc_string="doc")
    same(a, b)
    # get_attribute_value gives equal values (messages compared by bytes)
    va, vb = xh.get_attribute_value(a), oh.get_attribute_value(b)
    if isinstance(vb, list):
        assert len(va) == len(vb)
        for x, y in zip(va, vb):
            assert (x.SerializeToString() == y.SerializeToString()) if hasattr(y, "SerializeToString") else x == y
    elif hasattr(vb, "SerializeToString"):
        assert va.SerializeToString() == vb.SerializeToString()
    else:
        assert va == vb and type(va) is type(vb)


@pytest.mark.parametrize("attr_type", [
    onnx.AttributeProto.INTS, onnx.AttributeProto.FLOATS, onnx.AttributeProto.STRINGS,
    onnx.AttributeProto.TENSORS, onnx.AttributeProto.GRAPHS, onnx.AttributeProto.SPARSE_TENSORS,
    onnx.AttributeProto.TYPE_PROTOS])
def test_make_attribute_empty_list_with_type(attr_type):
    same(xh.make_attribute("e", [], attr_type=attr_type), oh.make_attribute("e", [], attr_type=attr_type))


def test_make_attribute_errors():
    raises_like(lambda: xh.make_attribute("e", []), lambda: oh.make_attribute("e", []))
    raises_like(lambda: xh.make_attribute("m", [1, "a"]), lambda: oh.make_attribute("m", [1, "a"]))
    raises_like(lambda: xh.make_attribute("n", None), lambda: oh.make_attribute("n", None))
    raises_like(lambda: xh.make_attribute("t", 1, attr_type=xh.AttributeProto.FLOAT),
                lambda: oh.make_attribute("t", 1, attr_type=onnx.AttributeProto.FLOAT))
    raises_like(lambda: xh.make_attribute("t", [1.5], attr_type=xh.AttributeProto.INTS),
                lambda: oh.make_attribute("t", [1.5], attr_type=onnx.AttributeProto.INTS), same_message=False)
    raises_like(lambda: xh.make_attribute("t", [1, 2], attr_type=xh.AttributeProto.TENSORS),
                lambda: oh.make_attribute("t", [1, 2], attr_type=onnx.AttributeProto.TENSORS), same_message=False)


def test_make_attribute_ref_and_errors():
    for kw in ({}, {"doc_string": "d"}, {"ref_attr_name": "outer"}):
        same(xh.make_attribute_ref("alpha", xh.AttributeProto.FLOAT, **kw),
             oh.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT, **kw))
    raises_like(lambda: xh.make_attribute_ref("", xh.AttributeProto.INT),
                lambda: oh.make_attribute_ref("", onnx.AttributeProto.INT))
    ref = xh.make_attribute_ref("alpha", xh.AttributeProto.FLOAT)
    oref = oh.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT)
    raises_like(lambda: xh.get_attribute_value(ref), lambda: oh.get_attribute_value(oref))
    undefined = onnxio.AttributeProto(name="u")
    assert xh.get_attribute_value(undefined) is None


def test_make_node_and_get_node_attr_value():
    kwargs = dict(alpha=0.5, axes=[0, 1], mode="constant", value=otensor(), skipped=None)
    a = xh.make_node("Op", ["a", "b"], ["c"], name="n", doc_string="d", domain="com.x", overload="o",
                     **{k: to_x(v) for k, v in kwargs.items()})
    b = oh.make_node("Op", ["a", "b"], ["c"], name="n", doc_string="d", domain="com.x", overload="o", **kwargs)
    same(a, b)
    # empty domain given explicitly is written; name/doc_string empty are not
    same(xh.make_node("Relu", ["x"], ["y"], name="", domain=""), oh.make_node("Relu", ["x"], ["y"], name="", domain=""))
    same(xh.make_node("Relu", [], []), oh.make_node("Relu", [], []))
    assert xh.get_node_attr_value(a, "axes") == [0, 1]
    assert xh.get_node_attr_value(a, "mode") == b"constant"
    raises_like(lambda: xh.get_node_attr_value(a, "none"), lambda: oh.get_node_attr_value(b, "none"))
    dup_x = onnxio.NodeProto.FromString(a.SerializeToString())
    dup_x.attribute.extend([xh.make_attribute("alpha", 1.0)])
    dup_o = onnx.NodeProto.FromString(b.SerializeToString())
    dup_o.attribute.extend([oh.make_attribute("alpha", 1.0)])
    raises_like(lambda: xh.get_node_attr_value(dup_x, "alpha"), lambda: oh.get_node_attr_value(dup_o, "alpha"))


SHAPES = [None, [], ["N", 3], [None, 2, "batch"], [0], [1, 2, 3, 4]]


@pytest.mark.parametrize("shape", SHAPES, ids=[repr(s) for s in SHAPES])
def test_value_infos_and_type_protos(shape):
    same(*both("make_tensor_value_info", "v", OT.FLOAT, shape))
    same(*both("make_tensor_value_info", "v", OT.INT64, shape, doc_string="doc"))
    same(*both("make_sparse_tensor_value_info", "s", OT.FLOAT, shape))
    same(*both("make_tensor_type_proto", OT.BOOL, shape))
    same(*both("make_sparse_tensor_type_proto", OT.DOUBLE, shape))
    same(*both("make_tensor_sequence_value_info", "q", OT.FLOAT, shape))
    if shape:
        den = [f"d{i}" for i in range(len(shape))]
        same(*both("make_tensor_value_info", "v", OT.FLOAT, shape, shape_denotation=den))
        same(*both("make_sparse_tensor_value_info", "v", OT.FLOAT, shape, shape_denotation=den))
        same(*both("make_tensor_sequence_value_info", "v", OT.FLOAT, shape, elem_shape_denotation=den))


def test_every_onnx_data_type_is_known():
    assert set(xh.get_all_tensor_dtypes()) == set(oh.get_all_tensor_dtypes())


def test_shape_unset_vs_empty_differ():
    unset = xh.make_tensor_value_info("v", XT.FLOAT, None)
    scalar = xh.make_tensor_value_info("v", XT.FLOAT, [])
    assert not unset.type.tensor_type.HasField("shape")
    assert scalar.type.tensor_type.HasField("shape")
    assert unset.SerializeToString() != scalar.SerializeToString()


def test_shape_errors():
    raises_like(lambda: xh.make_tensor_value_info("v", XT.FLOAT, [1.5]),
                lambda: oh.make_tensor_value_info("v", OT.FLOAT, [1.5]))
    raises_like(lambda: xh.make_sparse_tensor_type_proto(XT.FLOAT, [1.5]),
                lambda: oh.make_sparse_tensor_type_proto(OT.FLOAT, [1.5]))
    raises_like(lambda: xh.make_tensor_type_proto(XT.FLOAT, [1, 2], ["a"]),
                lambda: oh.make_tensor_type_proto(OT.FLOAT, [1, 2], ["a"]))


def test_composite_type_protos():
    inner = oh.make_tensor_type_proto(OT.FLOAT, ["N"])
    same(*both("make_sequence_type_proto", inner))
    same(*both("make_optional_type_proto", inner))
    same(*both("make_map_type_proto", OT.INT64, inner))
    same(*both("make_value_info", "m", oh.make_map_type_proto(OT.STRING, inner), doc_string="d"))
    same(*both("make_value_info", "m", inner))
    same(*both("make_empty_tensor_value_info", "e"))


def test_sequence_map_optional():
    t1, t2 = otensor("a"), otensor("b", (3,))
    seq_a, seq_b = both("make_sequence", "s", onnx.SequenceProto.TENSOR, [t1, t2])
    same(seq_a, seq_b)
    same(*both("make_sequence", "u", onnx.SequenceProto.UNDEFINED, []))
    sp = oh.make_sparse_tensor(otensor("v"), otensor("i", dt=OT.INT64), [5])
    same(*both("make_sequence", "sp", onnx.SequenceProto.SPARSE_TENSOR, [sp]))
    same(*both("make_sequence", "ss", onnx.SequenceProto.SEQUENCE, [seq_b]))
    m = oh.make_map("m", OT.INT64, [1, 2], seq_b)
    same(*both("make_map", "m", OT.INT64, [1, 2], seq_b))
    same(*both("make_map", "m", OT.STRING, [b"a", b"b"], seq_b))
    same(*both("make_map", "m", OT.FLOAT, [1, 2], seq_b))
    same(*both("make_sequence", "sm", onnx.SequenceProto.MAP, [m]))
    opt = oh.make_optional("o", onnx.OptionalProto.TENSOR, t1)
    same(*both("make_optional", "o", onnx.OptionalProto.TENSOR, t1))
    same(*both("make_optional", "o", onnx.OptionalProto.UNDEFINED, None))
    same(*both("make_optional", "o", onnx.OptionalProto.SEQUENCE, seq_b))
    same(*both("make_optional", "o", onnx.OptionalProto.MAP, m))
    same(*both("make_optional", "o", onnx.OptionalProto.SPARSE_TENSOR, sp))
    same(*both("make_optional", "o", onnx.OptionalProto.OPTIONAL, opt))
    same(*both("make_sequence", "so", onnx.OptionalProto.OPTIONAL, [opt]))
    raises_like(lambda: xh.make_sequence("s", 99, []), lambda: oh.make_sequence("s", 99, []))
    raises_like(lambda: xh.make_optional("o", 99, None), lambda: oh.make_optional("o", 99, None))


def omodel_parts():
    init = [otensor("w", (2, 2)), oh.make_tensor("b", OT.FLOAT, [2], np.ones(2, np.float32), raw=True)]
    nodes = [
        oh.make_node("MatMul", ["x", "w"], ["xw"]),
        oh.make_node("Add", ["xw", "b"], ["y"], name="add"),
        oh.make_node("If", ["c"], ["z"], then_branch=ograph("then"), else_branch=ograph("else")),
    ]
    inputs = [oh.make_tensor_value_info("x", OT.FLOAT, ["N", 2]), oh.make_tensor_value_info("c", OT.BOOL, [])]
    outputs = [oh.make_tensor_value_info("y", OT.FLOAT, ["N", 2]), oh.make_tensor_value_info("z", OT.FLOAT, None)]
    vi = [oh.make_tensor_value_info("xw", OT.FLOAT, ["N", 2])]
    sparse = [oh.make_sparse_tensor(otensor("sv"), otensor("si", dt=OT.INT64), [4])]
    return nodes, inputs, outputs, init, vi, sparse


def test_make_graph():
    nodes, inputs, outputs, init, vi, sparse = omodel_parts()
    same(*both("make_graph", nodes, "g", inputs, outputs))
    same(*both("make_graph", nodes, "g", inputs, outputs, init, "doc", vi, sparse))
    same(*both("make_graph", [], "", [], []))


def test_make_function_and_model_with_functions():
    node = oh.make_node("Mul", ["a", "b"], ["c"])
    fa, fb = both("make_function", "custom", "f", ["a", "b"], ["c"], [node], [oh.make_opsetid("", 18)],
                  attributes=["alpha"], attribute_protos=[oh.make_attribute("beta", 2.0)], doc_string="fd",
                  overload="ov", value_info=[oh.make_tensor_value_info("c", OT.FLOAT, [1])])
    same(fa, fb)
    same(*both("make_function", "custom", "g", [], [], [], []))
    graph = ograph()
    ma, mb = both("make_model", graph, opset_imports=[oh.make_opsetid("", 18), oh.make_opsetid("custom", 1)],
                  functions=[fb], producer_name="p", producer_version="1", doc_string="md", model_version=3)
    same(ma, mb)
    onnx.checker.check_model(onnx.ModelProto.FromString(ma.SerializeToString()))


def test_make_model_defaults_and_metadata():
    graph = ograph()
    ma, mb = both("make_model", graph)
    same(ma, mb)
    assert ma.ir_version == onnx.IR_VERSION
    assert ma.opset_import[0].version == onnx.defs.onnx_opset_version()
    onnx.checker.check_model(onnx.ModelProto.FromString(ma.SerializeToString()))
    ma, mb = both("make_model", graph, ir_version=8, opset_imports=[oh.make_opsetid("", 13)])
    same(ma, mb)
    props = {"author": "me", "license": "MIT", "": "empty"}
    xh.set_model_props(ma, props)
    oh.set_model_props(mb, props)
    same(ma, mb)
    xh.set_metadata_props(ma, {"only": "one"})
    oh.set_metadata_props(mb, {"only": "one"})
    same(ma, mb)
    for factory in (lambda m: m.graph, lambda m: m.graph.node[0], lambda m: m.graph.input[0]):
        xh.set_metadata_props(factory(ma), props)
        oh.set_metadata_props(factory(mb), props)
    same(ma, mb)
    t = xh.make_tensor("t", XT.FLOAT, [1], [1.0])
    xh.set_metadata_props(t, props)
    ot = oh.make_tensor("t", OT.FLOAT, [1], [1.0])
    oh.set_metadata_props(ot, props)
    same(t, ot)
    with pytest.raises(AttributeError):
        xh.make_model(to_x(graph), no_such_field=1)


def test_make_model_gen_version():
    graph = ograph()
    for imports in ([oh.make_opsetid("", 9)], [oh.make_opsetid("", 15), oh.make_opsetid("ai.onnx.ml", 3)],
                    [oh.make_opsetid("ai.onnx.training", 1)]):
        same(*both("make_model_gen_version", graph, opset_imports=imports))
    same(*both("make_model_gen_version", graph, ir_version=5, opset_imports=[oh.make_opsetid("", 9)]))
    raises_like(lambda: xh.make_model_gen_version(to_x(graph), opset_imports=[xh.make_opsetid("", 1000)]),
                lambda: oh.make_model_gen_version(graph, opset_imports=[oh.make_opsetid("", 1000)]))


def test_version_table_and_min_ir_version():
    assert xh.VERSION_TABLE == oh.VERSION_TABLE
    assert xh.OP_SET_ID_VERSION_MAP == oh.OP_SET_ID_VERSION_MAP
    assert xh.IR_VERSION == onnx.IR_VERSION
    for dom, ver in [("", 7), ("ai.onnx", 21), ("ai.onnx.ml", 4), ("ai.onnx.preview.training", 1)]:
        assert xh.find_min_ir_version_for([xh.make_opsetid(dom, ver)]) == oh.find_min_ir_version_for(
            [oh.make_opsetid(dom, ver)])
    assert xh.find_min_ir_version_for([]) == oh.find_min_ir_version_for([]) == 3
    assert xh.find_min_ir_version_for([xh.make_opsetid("x", 1)], ignore_unknown=True) == 3
    raises_like(lambda: xh.find_min_ir_version_for([xh.make_opsetid("x", 1)]),
                lambda: oh.find_min_ir_version_for([oh.make_opsetid("x", 1)]))


def test_opsetids_and_training_info():
    same(*both("make_opsetid", "", 18))
    same(*both("make_operatorsetid", "ai.onnx.ml", 3))
    same(*both("make_training_info", ograph("algo"), [("w", "w_new")], ograph("init"), [("a", "b"), ("c", "d")]))
    same(*both("make_training_info", ograph("algo"), [], None, None))


@pytest.mark.parametrize("dt", tparams(oh.get_all_tensor_dtypes()))
def test_dtype_mappings(dt):
    assert xh.tensor_dtype_to_np_dtype(dt) == oh.tensor_dtype_to_np_dtype(dt)
    assert xh.tensor_dtype_to_storage_tensor_dtype(dt) == oh.tensor_dtype_to_storage_tensor_dtype(dt)
    assert xh.tensor_dtype_to_string(dt) == oh.tensor_dtype_to_string(dt)
    assert xh.tensor_dtype_to_field(dt) == oh.tensor_dtype_to_field(dt)
    np_dtype = oh.tensor_dtype_to_np_dtype(dt)
    assert xh.np_dtype_to_tensor_dtype(np_dtype) == oh.np_dtype_to_tensor_dtype(np_dtype)


def test_dtype_mapping_sets_and_errors():
    assert set(xh.get_all_tensor_dtypes()) == set(oh.get_all_tensor_dtypes())
    assert xh.np_dtype_to_tensor_dtype(np.dtype("<U3")) == OT.STRING
    raises_like(lambda: xh.np_dtype_to_tensor_dtype(np.dtype("datetime64[s]")),
                lambda: oh.np_dtype_to_tensor_dtype(np.dtype("datetime64[s]")))
    raises_like(lambda: xh.tensor_dtype_to_np_dtype(0), lambda: oh.tensor_dtype_to_np_dtype(0))
    for t in range(0, 30):
        assert xh._attr_type_to_str(t) == oh._attr_type_to_str(t)


def test_printable_functions():
    nodes, inputs, outputs, init, vi, sparse = omodel_parts()
    og = oh.make_graph(nodes, "g", inputs, outputs, init, "doc", vi)
    og.input.extend([oh.make_tensor_value_info("w", OT.FLOAT, [2, 2])])
    xg = to_x(og)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert xh.printable_graph(xg) == oh.printable_graph(og)
        assert xh.printable_graph(xg, prefix="  ") == oh.printable_graph(og, prefix="  ")
    with pytest.warns(DeprecationWarning):
        xh.printable_graph(xg)
    for xn, on in zip(xg.node, og.node):
        assert xh.printable_node(xn) == oh.printable_node(on)
        assert xh.printable_node(xn, "> ", True)[0] == oh.printable_node(on, "> ", True)[0]
    for xv, ov in zip(xg.input, og.input):
        assert xh.printable_value_info(xv) == oh.printable_value_info(ov)
        assert xh.printable_type(xv.type) == oh.printable_type(ov.type)
    for xt, ot in zip(xg.initializer, og.initializer):
        assert xh.printable_tensor_proto(xt) == oh.printable_tensor_proto(ot)
    for kind, value in ATTRIBUTE_VALUES.items():
        if kind == "generator":
            continue
        a, b = both("make_attribute", kind, value)
        assert xh.printable_attribute(a) == oh.printable_attribute(b), kind
    scalar = oh.make_attribute("s", oh.make_tensor("t", OT.INT32, [], [4]))
    assert xh.printable_attribute(to_x(scalar)) == oh.printable_attribute(scalar)
    assert xh.printable_attribute(onnxio.AttributeProto(name="u")) == oh.printable_attribute(
        onnx.AttributeProto(name="u"))
    dim = onnx.TensorShapeProto.Dimension()
    assert xh.printable_dim(onnxio.TensorShapeProto.Dimension()) == oh.printable_dim(dim) == "?"
    assert xh.printable_type(onnxio.TypeProto()) == oh.printable_type(onnx.TypeProto()) == ""


def test_strip_doc_string():
    nodes, inputs, outputs, init, vi, sparse = omodel_parts()
    og = oh.make_graph(nodes, "g", inputs, outputs, init, "doc", vi)
    om = oh.make_model(og, doc_string="model doc", functions=[
        oh.make_function("d", "f", [], [], [oh.make_node("X", [], [], doc_string="nd")], [], doc_string="fd")])
    om.graph.node[0].doc_string = "node doc"
    om.graph.input[0].doc_string = "input doc"
    om.graph.node[2].attribute[0].g.doc_string = "subgraph doc"
    xm = to_x(om)
    xh.strip_doc_string(xm)
    # onnx 1.23's strip_doc_string fails on protobuf 7 (FieldDescriptor.label
    # is gone), so the reference is cleared by hand, field by field.
    for m in (om, om.graph, om.graph.node[0], om.graph.input[0], om.graph.node[2].attribute[0].g,
              om.functions[0], om.functions[0].node[0]):
        m.ClearField("doc_string")
    same(xm, om)
    assert b"doc" not in xm.SerializeToString()
    with pytest.raises(TypeError):
        xh.strip_doc_string("not a message")


def test_works_without_onnx_installed(tmp_path):
    """onnxio.helper, numpy_helper and external_data_helper import and work
    with every `onnx` import refused."""
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "onnx" or name.startswith("onnx.") or name == "google" or name.startswith("google."):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import numpy as np
import onnxio
from onnxio import helper, numpy_helper, external_data_helper
t = helper.make_tensor("t", onnxio.TensorProto.FLOAT, [2], [1.0, 2.0])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], alpha=1.0)], "g",
                      [helper.make_tensor_value_info("x", 1, ["N"])],
                      [helper.make_tensor_value_info("y", 1, None)], [t])
m = helper.make_model(g)
a = numpy_helper.to_array(numpy_helper.from_array(np.arange(3, dtype=np.int64)))
assert a.tolist() == [0, 1, 2]
assert not any(k == "onnx" or k.startswith("onnx.") for k in sys.modules)
sys.stdout.buffer.write(m.SerializeToString())
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    t = oh.make_tensor("t", OT.FLOAT, [2], [1.0, 2.0])
    g = oh.make_graph([oh.make_node("Relu", ["x"], ["y"], alpha=1.0)], "g",
                      [oh.make_tensor_value_info("x", 1, ["N"])], [oh.make_tensor_value_info("y", 1, None)], [t])
    assert p.stdout == oh.make_model(g).SerializeToString()


@pytest.mark.parametrize("module", ["helper", "numpy_helper", "external_data_helper"])
def test_same_functions_and_signatures_as_onnx(module):
    """Every function and class onnx defines in the module (private ones
    included: code written for onnx calls some) exists in onnxio's with the
    same parameter names, kinds and defaults."""
    import importlib
    import inspect

    o = importlib.import_module("onnx." + module)
    x = importlib.import_module("onnxio." + module)
    # onnx's private copies of the library's rules (opening a data file with
    # its path checks, checking offset and length against the file) are
    # left out on purpose: onnxio's helpers call the C library for them
    # ("one rule, one home"), so code must not find a second policy here.
    deliberately_absent = {"external_data_helper": {"_open_external_data_fd",
                                                    "_validate_external_data_file_bounds"}}.get(module, set())
    for name in deliberately_absent:
        assert hasattr(o, name), f"onnx.{module}.{name} is gone: update this test"
        assert not hasattr(x, name), f"onnxio.{module}.{name} is a second copy of a library rule"
    checked = 0
    for name, f in vars(o).items():
        if not callable(f) or getattr(f, "__module__", None) != o.__name__ or name in deliberately_absent:
            continue
        g = getattr(x, name, None)
        assert g is not None, f"onnxio.{module}.{name} is missing"
        so = [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]
        sx = [(p.name, p.kind, p.default) for p in inspect.signature(g).parameters.values()]
        assert sx == so, name
        checked += 1
    assert checked >= 10
