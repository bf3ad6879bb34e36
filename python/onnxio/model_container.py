"""onnx.model_container with onnxio's messages: make_large_model and
make_large_tensor_proto take onnxio messages (converted at the boundary);
ModelContainer is onnx's own class, and its `model_proto` an onnx
ModelProto (onnxio.from_onnx converts it).

Needs the onnx package (`pip install onnxio[onnx]`).
"""
from onnxio import _bridge

_mc = _bridge.require("onnx.model_container")
ModelContainer = _mc.ModelContainer


def make_large_model(graph, large_initializers=None, **kwargs):
    """onnx.model_container.make_large_model: an onnx ModelContainer
    (its model_proto is onnx's)."""
    return _mc.make_large_model(_bridge.to_onnx(graph), large_initializers, **_bridge.to_onnx(kwargs))


def make_large_tensor_proto(location: str, tensor_name: str, tensor_type: int, shape):
    """onnx.model_container.make_large_tensor_proto: an onnxio TensorProto."""
    return _bridge.from_onnx(_mc.make_large_tensor_proto(location, tensor_name, tensor_type, shape))


_bridge.export_converted(_mc, globals())
