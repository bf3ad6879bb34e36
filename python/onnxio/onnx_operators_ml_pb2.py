"""onnxio.onnx_pb under the name of onnx.onnx_operators_ml_pb2 (see onnx_pb)."""
from onnxio.onnx_pb import *  # noqa: F401,F403
from onnxio._descriptors import FILES as _FILES

DESCRIPTOR = _FILES["onnx/onnx-operators-ml.proto"]
