"""onnxio.ir (to_ir / from_ir) against the real onnx_ir: every model of the
corpora gives, byte for byte, what onnx_ir gives through the onnx package
(serde.serialize_model(serde.deserialize_model(onnx.load(path)))); tensor
payloads are shared both ways (checked by address), writes show through,
and payloads outlive the model they came from."""
import gc
import glob
import importlib
import sys

import numpy as np
import pytest

import onnx
from onnx import numpy_helper as onnx_numpy_helper

import onnxio
from conftest import needs
from onnxio import _onnxio, numpy_helper

ir = needs("onnx_ir", "onnxio.ir bridges to it")
from onnx_ir import serde  # noqa: E402

from onnxio.ir import OnnxioTensor, from_ir, to_ir  # noqa: E402


def address(buffer) -> int:
    """The address of the first byte of a buffer (numpy array or memoryview)."""
    return np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0] if not isinstance(
        buffer, np.ndarray) else buffer.__array_interface__["data"][0]


def payload_address(tensor) -> int:
    """Where an onnxio TensorProto's raw_data lives (the extension's payload view)."""
    view = _onnxio._payload_view(tensor)
    assert view is not None
    return address(view)


def corpus_paths(source):
    root = needs(source)
    paths = sorted(glob.glob(str(root / "**" / "*.onnx"), recursive=True))
    assert paths, f"no .onnx file under {root}"
    return paths


@pytest.mark.parametrize("source", ["libonnx-testdata", "shared-corpus"])
def test_corpus_round_trip_is_onnx_irs(source):
    """from_ir(to_ir(m)) and onnx_ir's own serializer on to_ir(m) give the
    reference's bytes; where onnx_ir refuses a model through onnx, it
    refuses it through onnxio with the same error class."""
    failures, compared, refused = [], 0, 0
    for path in corpus_paths(source):
        try:
            proto = onnx.load(path)
        except Exception:  # noqa: BLE001 - a model onnx cannot load (its external data is missing)
            with pytest.raises(Exception):  # noqa: B017 - the loaders' errors differ (onnxio's are its own)
                onnxio.load(path)
            continue
        try:
            want = serde.serialize_model(serde.deserialize_model(proto)).SerializeToString()
        except Exception as e:  # noqa: BLE001 - onnx_ir's refusal is the reference too
            with pytest.raises(type(e)):
                from_ir(to_ir(onnxio.load(path)))
            refused += 1
            continue
        model = to_ir(onnxio.load(path))
        ours = from_ir(model)
        assert type(ours) is onnxio.ModelProto
        if ours.SerializeToString() != want:
            failures.append(path)
        elif serde.serialize_model(model).SerializeToString() != want:
            failures.append(path + " (onnx_ir writing a to_ir model)")
        compared += 1
    assert not failures, failures[:10]
    assert compared > refused


def model_with(initializers, nodes=(), inputs=(), outputs=None):
    """An onnxio model of the given initializers (name -> numpy array),
    built by onnxio.helper."""
    from onnxio import helper

    inits = [numpy_helper.from_array(a, name) for name, a in initializers.items()]
    first = next(iter(initializers))
    outputs = outputs or [helper.make_tensor_value_info(first, onnxio.TensorProto.FLOAT, None)]
    graph = helper.make_graph(list(nodes), "g", list(inputs), outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


ARRAYS = {
    "w": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    "h": np.linspace(-2, 2, 10).astype(np.float16),
    "i": np.arange(-5, 5, dtype=np.int64),
    "b": np.array([True, False, True]),
    "u": np.arange(7, dtype=np.uint8),
}


def test_to_ir_tensors_are_views_of_the_payload(tmp_path):
    path = tmp_path / "m.onnx"
    onnxio.save(model_with(ARRAYS), str(path))
    expected = {t.name: onnx_numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    for no_copy in (False, True):
        m = onnxio.load(str(path), no_copy=no_copy)
        model = to_ir(m)
        protos = {t.name: t for t in m.graph.initializer}
        for name, value in model.graph.initializers.items():
            tensor = value.const_value
            assert isinstance(tensor, OnnxioTensor) and tensor.raw == protos[name]
            array = tensor.numpy()
            assert address(array) == payload_address(protos[name]), name
            assert array.dtype == expected[name].dtype and array.shape == expected[name].shape
            np.testing.assert_array_equal(array, expected[name])
            assert tensor.tobytes() == expected[name].tobytes()
            assert array.flags.writeable is (not no_copy)  # a no_copy payload is the file's mapping


def test_writes_through_the_ir_view_reach_the_onnxio_model():
    m = model_with(ARRAYS)
    m = onnxio.load_model_from_string(m.SerializeToString())  # a copy-mode load: onnxio owns the payloads
    model = to_ir(m)
    array = model.graph.initializers["w"].const_value.numpy()
    array[1, 2, 3] = -7.5
    w = next(t for t in m.graph.initializer if t.name == "w")
    assert np.frombuffer(w.raw_data, dtype="<f4")[23] == -7.5
    # and the model written back carries it, in the same memory
    back = from_ir(model)
    w2 = next(t for t in back.graph.initializer if t.name == "w")
    assert payload_address(w2) == payload_address(w)
    assert onnx_numpy_helper.to_array(onnx.TensorProto.FromString(w2.SerializeToString()))[1, 2, 3] == -7.5


def test_from_ir_shares_the_payloads_of_to_ir_tensors():
    m = onnxio.load_model_from_string(model_with(ARRAYS).SerializeToString())
    back = from_ir(to_ir(m))
    before = {t.name: payload_address(t) for t in m.graph.initializer}
    after = {t.name: payload_address(t) for t in back.graph.initializer}
    assert before == after
    assert back.SerializeToString() == serde.serialize_model(serde.deserialize_model(onnxio.to_onnx(m))
                                                              ).SerializeToString()


def new_arrays():
    import ml_dtypes

    return {
        "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
        "f64": np.linspace(0, 1, 5),
        "i32": np.arange(-3, 3, dtype=np.int32),
        "bf16": np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16),
        "f8": np.arange(4, dtype=np.float32).astype(ml_dtypes.float8_e4m3fn),
        "strided": np.arange(20, dtype=np.float32)[::2],  # not contiguous: written by onnx_ir (a copy)
        "i4": np.array([1, -2, 3], dtype=np.int8),        # packed by onnx_ir
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


INT4 = {"i4": ir.DataType.INT4}


def ir_model_with_new_tensors(arrays):
    """An onnx_ir model (from to_ir) with initializers that a pass would
    create: onnx_ir.Tensor over numpy arrays; and a Constant node whose
    value is one."""
    model = to_ir(onnxio.load_model_from_string(model_with(ARRAYS).SerializeToString()))
    graph = model.graph
    tensors = {}
    for name, array in arrays.items():
        tensors[name] = ir.Tensor(array, dtype=INT4.get(name), name=name)
        graph.register_initializer(ir.Value(name=name, const_value=tensors[name]))
    const = ir.node("Constant", [], attributes={"value": ir.Tensor(np.full(3, 9, dtype=np.int64), name="c")})
    graph.append(const)
    return model, tensors, const


def test_from_ir_shares_numpy_memory_of_new_tensors():
    arrays = new_arrays()
    model, tensors, const = ir_model_with_new_tensors(arrays)
    want = serde.serialize_model(model).SerializeToString()  # onnx_ir's own bytes
    ours = from_ir(model)
    assert ours.SerializeToString() == want
    protos = {t.name: t for t in ours.graph.initializer}
    shared = {"f32", "f64", "i32", "bf16", "f8"}
    for name in shared:
        assert payload_address(protos[name]) == address(arrays[name]), name
    for name in ("strided", "i4"):
        assert payload_address(protos[name]) != address(arrays[name]), name
    # the Constant node's tensor too
    value = next(n for n in ours.graph.node if n.op_type == "Constant").attribute[0].t
    assert payload_address(value) == address(const.attributes["value"].value.numpy())
    # writes into the array show in the onnxio model
    arrays["f32"][0, 1] = 100.0
    assert np.frombuffer(protos["f32"].raw_data, dtype="<f4")[1] == 100.0


def test_payloads_outlive_their_source():
    arrays = new_arrays()
    expected = {name: ir.Tensor(a, dtype=INT4.get(name)).tobytes() for name, a in arrays.items()}
    model, tensors, const = ir_model_with_new_tensors(arrays)
    ours = from_ir(model)
    del arrays, model, tensors, const
    gc.collect()
    got = {t.name: t.raw_data for t in ours.graph.initializer}
    for name, data in expected.items():
        assert got[name] == data, name

    # to_ir: the IR model keeps the onnxio model's payloads alive
    m = onnxio.load_model_from_string(model_with(ARRAYS).SerializeToString())
    model = to_ir(m)
    view = model.graph.initializers["w"].const_value.numpy()
    del m
    gc.collect()
    np.testing.assert_array_equal(model.graph.initializers["w"].const_value.numpy(), ARRAYS["w"])
    np.testing.assert_array_equal(view, ARRAYS["w"])
    assert from_ir(model).SerializeToString() == serde.serialize_model(model).SerializeToString()


def test_onnx_model_and_errors():
    m = onnx.load_model_from_string(model_with(ARRAYS).SerializeToString())
    assert from_ir(to_ir(m)).SerializeToString() == serde.serialize_model(serde.deserialize_model(m)
                                                                            ).SerializeToString()
    with pytest.raises(TypeError):
        to_ir(onnxio.GraphProto())
    with pytest.raises(TypeError):
        to_ir(b"bytes")
    with pytest.raises(TypeError):
        from_ir(onnxio.ModelProto())
    # onnx_ir's functions on onnx's messages are unchanged by the wrappers
    t = serde.deserialize_tensor(onnx_numpy_helper.from_array(ARRAYS["w"], "w"))
    assert type(t) is serde.TensorProtoTensor
    assert type(serde.serialize_tensor(ir.Tensor(ARRAYS["w"]))) is onnx.TensorProto


def test_share_raw_data():
    a = np.arange(6, dtype=np.float32)
    t = onnxio.TensorProto(dims=[6], data_type=onnxio.TensorProto.FLOAT)
    _onnxio._share_raw_data(t, a)
    assert t.HasField("raw_data") and payload_address(t) == address(a)
    a[2] = 5
    assert t.raw_data == a.tobytes()
    copy = onnxio.TensorProto()
    copy.CopyFrom(t)
    del a, t
    gc.collect()
    assert np.frombuffer(copy.raw_data, dtype=np.float32).tolist() == [0, 1, 5, 3, 4, 5]
    with pytest.raises((ValueError, BufferError)):
        _onnxio._share_raw_data(onnxio.TensorProto(), np.arange(6)[::2])
    with pytest.raises(TypeError):
        _onnxio._share_raw_data(onnxio.NodeProto(), b"x")


def test_without_onnx_ir_the_error_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx_ir", None)
    monkeypatch.delitem(sys.modules, "onnxio.ir")
    with pytest.raises(ImportError, match="pip install onnx-ir"):
        importlib.import_module("onnxio.ir")


def test_conversions_restore_the_collector():
    m = onnxio.load_model_from_string(model_with(ARRAYS).SerializeToString())
    assert gc.isenabled()
    from_ir(to_ir(m))
    assert gc.isenabled()
    gc.disable()
    try:
        from_ir(to_ir(m))
        assert not gc.isenabled()
    finally:
        gc.enable()
