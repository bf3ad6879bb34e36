"""onnxio: ONNX model files read and written without libprotobuf, with the
API of the `onnx` package. SKELETON: filled in by the package's owner."""
from onnxio._onnxio import *  # noqa: F401,F403
