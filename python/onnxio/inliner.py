"""onnx.inliner on onnxio's ModelProto (or onnx's): onnx's C++ inliner on
the serialized bytes, the result an onnxio ModelProto.

Needs the onnx package (`pip install onnx`).
"""
from __future__ import annotations

from onnxio import _bridge

C = _bridge.require("onnx.inliner").C


def _model(model) -> bytes:
    return _bridge.serialized(model, "onnx.ModelProto", f"expected a ModelProto, not {type(model).__name__}")


def inline_local_functions(model, convert_version: bool = False):
    """onnx.inliner.inline_local_functions."""
    return _bridge.parsed(C.inline_local_functions(_model(model), convert_version), "onnx.ModelProto")


def inline_selected_functions(model, function_ids, exclude: bool = False, inline_schema_functions: bool = False):
    """onnx.inliner.inline_selected_functions."""
    fn = C.inline_selected_functions2 if inline_schema_functions else C.inline_selected_functions
    return _bridge.parsed(fn(_model(model), function_ids, exclude), "onnx.ModelProto")


_bridge.export_converted(_bridge.require("onnx.inliner"), globals())
