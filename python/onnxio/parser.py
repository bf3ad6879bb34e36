"""onnx.parser returning onnxio messages: onnx's C++ parser of the ONNX
textual syntax gives serialized bytes, which onnxio parses (payloads borrow
them).

Needs the onnx package (`pip install onnxio[onnx]`).
"""
from __future__ import annotations

from onnxio import _bridge

_parser = _bridge.require("onnx.parser")
C = _parser.C
ParseError = _parser.ParseError


def _parse(fn, text: str, name: str):
    success, msg, data = fn(text)
    if success:
        return _bridge.parsed(data, name)
    raise ParseError(msg)


def parse_model(model_text: str):
    """onnx.parser.parse_model: an onnxio ModelProto."""
    return _parse(C.parse_model, model_text, "onnx.ModelProto")


def parse_graph(graph_text: str):
    """onnx.parser.parse_graph: an onnxio GraphProto."""
    return _parse(C.parse_graph, graph_text, "onnx.GraphProto")


def parse_function(function_text: str):
    """onnx.parser.parse_function: an onnxio FunctionProto."""
    return _parse(C.parse_function, function_text, "onnx.FunctionProto")


def parse_node(node_text: str):
    """onnx.parser.parse_node: an onnxio NodeProto."""
    return _parse(C.parse_node, node_text, "onnx.NodeProto")


_bridge.export_converted(_bridge.require("onnx.parser"), globals())
