"""onnx.utils on onnxio's messages (and onnx's, and paths as onnx takes
them): extract_model and Extractor.

onnx's code runs as it is; messages are converted at the boundary
(onnxio.to_onnx in, onnxio.from_onnx out), as in onnxio.compose.

Needs the onnx package (`pip install onnx`).
"""
from typing import Any

from onnxio import _bridge

_utils = _bridge.require("onnx.utils")
_OnnxExtractor: Any = _utils.Extractor  # loaded at import: a type checker knows it as Any


class Extractor(_OnnxExtractor):
    """onnx.utils.Extractor taking an onnxio ModelProto too; extract_model
    returns an onnxio ModelProto."""

    def __init__(self, model):
        super().__init__(_bridge.to_onnx(model))

    def extract_model(self, input_names, output_names):
        return _bridge.from_onnx(super().extract_model(input_names, output_names))


_bridge.export_converted(_utils, globals())
