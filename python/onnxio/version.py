"""onnx.version under onnxio's name: ``version`` is the onnx API version
onnxio implements (``onnxio.__version__``, what code written against onnx
compares), ``git_version`` is empty as in onnx's wheels, and
``onnxio_version`` is onnxio's own release."""
from onnxio import _onnxio

version = _onnxio._onnx_version
git_version = ""
onnxio_version = _onnxio._library_version

__all__ = ["version", "git_version", "onnxio_version"]
