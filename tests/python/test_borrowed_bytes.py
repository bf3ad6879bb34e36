"""Parses of an immutable bytes object borrow it, as upb's binding does
(docs/memory.md): large payloads point into the bytes object, which the
tensors keep alive, and are exported read-only; mutable buffers are copied.
Values are checked against the onnx package's parse of the same bytes."""

import ctypes
import gc
import io
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxio

WEIGHT = np.arange(16384, dtype=np.float32).reshape(128, 128)


@pytest.fixture(scope="module")
def data():
    small = numpy_helper.from_array(np.arange(4, dtype=np.int64), "small")
    big = numpy_helper.from_array(WEIGHT, "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 128])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 128])], [small, big])
    return helper.make_model(graph).SerializeToString()


def address(b: bytes) -> int:
    return ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value


def inside(arr: np.ndarray, b: bytes) -> bool:
    at = arr.__array_interface__["data"][0]
    return address(b) <= at and at + arr.nbytes <= address(b) + len(b)


PARSERS = {
    "FromString": lambda d: onnxio.ModelProto.FromString(d),
    "ParseFromString": lambda d: (lambda m: (m.ParseFromString(d), m)[1])(onnxio.ModelProto()),
    "MergeFromString": lambda d: (lambda m: (m.MergeFromString(d), m)[1])(onnxio.ModelProto()),
    "load_model_from_string": lambda d: onnxio.load_model_from_string(d),
    "load_from_string": lambda d: onnxio.load_from_string(d),
    "load(file object)": lambda d: onnxio.load(io.BytesIO(d)),
}


@pytest.mark.parametrize("parse", PARSERS.values(), ids=PARSERS.keys())
def test_immutable_bytes_are_borrowed(data, parse):
    want = onnx.ModelProto.FromString(data)
    if parse is PARSERS["load(file object)"]:
        # BytesIO.read() makes a new bytes object: borrowed, not checked by address.
        m = parse(data)
        assert m.SerializeToString() == data
        return
    before = sys.getrefcount(data)
    m = parse(data)
    arr = onnxio.numpy_helper.to_array(m.graph.initializer[1])
    np.testing.assert_array_equal(arr, numpy_helper.to_array(want.graph.initializer[1]))
    assert inside(arr, data), "the payload was copied"
    assert not arr.flags.writeable
    with pytest.raises(ValueError):
        arr[0, 0] = 1
    assert sys.getrefcount(data) > before  # the payload holds the bytes object
    # The small payload is copied in line; the tree serializes to the input.
    np.testing.assert_array_equal(onnxio.numpy_helper.to_array(m.graph.initializer[0]), np.arange(4))
    assert m.SerializeToString() == data
    del m, arr
    gc.collect()
    assert sys.getrefcount(data) == before


@pytest.mark.parametrize("kind", ["bytearray", "memoryview", "numpy"])
def test_mutable_buffers_are_copied(data, kind):
    buf = bytearray(data)
    src = {"bytearray": buf, "memoryview": memoryview(buf), "numpy": np.frombuffer(buf, np.uint8)}[kind]
    m = onnxio.ModelProto.FromString(src)
    m2 = onnxio.load_model_from_string(src)
    buf[:] = bytes(len(buf))  # the caller changes its buffer after the parse
    want = numpy_helper.to_array(onnx.ModelProto.FromString(data).graph.initializer[1])
    for model in (m, m2):
        arr = onnxio.numpy_helper.to_array(model.graph.initializer[1])
        np.testing.assert_array_equal(arr, want)
        assert model.SerializeToString() == data


def test_setting_raw_data_leaves_the_bytes_alone(data):
    m = onnxio.ModelProto.FromString(data)
    t = m.graph.initializer[1]
    t.raw_data = bytes(len(t.raw_data))
    assert not onnxio.numpy_helper.to_array(t).any()
    # The input is unchanged: onnx still reads the original weight from it.
    np.testing.assert_array_equal(numpy_helper.to_array(onnx.ModelProto.FromString(data).graph.initializer[1]),
                                  WEIGHT)


def test_an_asked_alignment_copies(data):
    m = onnxio.load_model_from_string(data, alignment=4096)
    arr = onnxio.numpy_helper.to_array(m.graph.initializer[1])
    assert not inside(arr, data)
    assert arr.__array_interface__["data"][0] % 4096 == 0
    np.testing.assert_array_equal(arr, WEIGHT)
