"""onnx.printer on onnxio's messages (or onnx's): the ONNX textual syntax
written by onnx's C++ printer from the serialized bytes.

Needs the onnx package (`pip install onnx`).
"""
from __future__ import annotations

from onnxio import _bridge

C = _bridge.require("onnx.printer").C

_PRINTERS = {"onnx.ModelProto": "model_to_text", "onnx.FunctionProto": "function_to_text",
             "onnx.GraphProto": "graph_to_text", "onnx.NodeProto": "node_to_text"}


def to_text(proto) -> str:
    """onnx.printer.to_text: a ModelProto, FunctionProto, GraphProto or
    NodeProto."""
    name = _bridge.full_name(proto)
    if name not in _PRINTERS:
        raise TypeError("Unsupported argument type.")
    return getattr(C, _PRINTERS[name])(_bridge.serialized(proto, name, "Unsupported argument type."))


_bridge.export_converted(_bridge.require("onnx.printer"), globals())
