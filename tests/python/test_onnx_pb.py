"""onnxio.onnx_pb and its aliases against onnx's generated modules: every
name those modules export (but imported modules) is there, as the onnxio
class of the same message or the same enum value, and DESCRIPTOR is the
FileDescriptor of the same .proto file."""
import importlib

import onnx
import pytest

import onnxio

MODULES = ["onnx_pb", "onnx_ml_pb2", "onnx_data_pb", "onnx_data_pb2", "onnx_operators_pb", "onnx_operators_ml_pb2"]


@pytest.mark.parametrize("name", MODULES)
def test_generated_module_names(name):
    theirs = importlib.import_module(f"onnx.{name}")
    ours = importlib.import_module(f"onnxio.{name}")
    names = [n for n in dir(theirs) if not n.startswith("_") and n != "DESCRIPTOR" and not n.startswith("onnx_dot_")]
    assert names
    for n in names:
        want, got = getattr(theirs, n), getattr(ours, n)
        if isinstance(want, int):
            assert got == want, n
        elif isinstance(want, type):
            assert got is getattr(onnxio, n) and got.DESCRIPTOR.full_name == want.DESCRIPTOR.full_name, n
        else:  # an enum wrapper
            assert dict(got.items()) == dict(want.items()), n
    assert ours.DESCRIPTOR.name == theirs.DESCRIPTOR.name
    assert ours.DESCRIPTOR.serialized_pb == theirs.DESCRIPTOR.serialized_pb
    assert all(ours.DESCRIPTOR.message_types_by_name[m] is getattr(ours, m).DESCRIPTOR
               for m in theirs.DESCRIPTOR.message_types_by_name)


def test_classes_from_generated_modules_mix():
    from onnxio.onnx_pb import NodeProto
    from onnxio.onnx_ml_pb2 import GraphProto
    g = GraphProto(name="g", node=[NodeProto(op_type="Relu", input=["x"], output=["y"])])
    want = onnx.GraphProto(name="g", node=[onnx.NodeProto(op_type="Relu", input=["x"], output=["y"])])
    assert g.SerializeToString() == want.SerializeToString()
