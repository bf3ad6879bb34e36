"""onnx.shape_inference on onnxio's messages (and onnx's, and bytes and
paths where onnx takes them): onnx's C++ shape inference and data
propagation run on the serialized bytes (onnxio serializes its own
messages), and the inferred model comes back as an onnxio ModelProto whose
payloads borrow the bytes onnx returned.

Beyond onnx: infer_shapes on an in-memory model past protobuf's 2 GiB runs
by way of a temporary file (infer_shapes_path), where onnx cannot.

Needs the onnx package (`pip install onnx`).
"""
from __future__ import annotations

import os

from onnxio import _bridge

_si = _bridge.require("onnx.shape_inference")
C = _si.C
GraphInferencer = _si.GraphInferencer
InferenceContext = _si.InferenceContext
InferenceError = _si.InferenceError
IR_VERSION = _si.IR_VERSION


def infer_shapes(model, check_type: bool = False, strict_mode: bool = False, data_prop: bool = False):
    """onnx.shape_inference.infer_shapes: a ModelProto (onnxio's or onnx's)
    or bytes in, an onnxio ModelProto out."""
    flags = (check_type, strict_mode, data_prop)
    if isinstance(model, bytes):
        return _bridge.parsed(C.infer_shapes(model, *flags), "onnx.ModelProto")
    if _bridge.full_name(model) == "onnx.ModelProto":
        if model.ByteSize() > _bridge.MAXIMUM_PROTOBUF:
            def run(path, d):
                import onnxio

                out = os.path.join(d, "inferred.onnx")
                C.infer_shapes_path(path, out, *flags)
                return onnxio.load(out)

            return _bridge.by_path(model, run)
        return _bridge.parsed(C.infer_shapes(_bridge.serialized(model, "onnx.ModelProto", ""), *flags),
                              "onnx.ModelProto")
    if isinstance(model, (str, os.PathLike)):
        raise TypeError("infer_shapes only accepts ModelProto or bytes, For Model paths (str or os.PathLike), "
                        "use infer_shapes_path().")
    raise TypeError(f"infer_shapes only accepts ModelProto or bytes, incorrect type: {type(model)}")


def infer_shapes_path(model_path, output_path="", check_type: bool = False, strict_mode: bool = False,
                      data_prop: bool = False) -> None:
    """onnx.shape_inference.infer_shapes_path: file to file, in onnx's C++
    code (external data beside the model is read by it)."""
    if _bridge.full_name(model_path) == "onnx.ModelProto":
        raise TypeError("infer_shapes_path only accepts model Path (String),you can use infer_shapes for the "
                        "ModelProto.")
    try:
        model_path = os.fspath(model_path)
    except TypeError as exp:
        raise TypeError("infer_shapes_path only accepts model path as a string or PathLike, "
                        f"incorrect model path type: {type(model_path)}") from exp
    try:
        output_path = os.fspath(output_path)
    except TypeError as exp:
        raise TypeError("infer_shapes_path only accepts output path as a string or PathLike, "
                        f"incorrect output path type: {type(output_path)}") from exp
    C.infer_shapes_path(model_path, output_path or model_path, check_type, strict_mode, data_prop)


def _ser(message, cls: str) -> bytes:
    return _bridge.serialized(message, f"onnx.{cls}", f"expected a {cls}, not {type(message).__name__}")


def infer_node_outputs(schema, node, input_types, input_data=None, input_sparse_data=None, opset_imports=None,
                       ir_version: int = IR_VERSION):
    """onnx.shape_inference.infer_node_outputs: {output name: onnxio
    TypeProto}."""
    input_data = input_data or {}
    input_sparse_data = input_sparse_data or {}
    opsets = {} if opset_imports is None else {o.domain: o.version for o in opset_imports}
    types = {key: _ser(input_types[key], "TypeProto") for key in node.input if key != ""}
    for key, value in input_types.items():  # also the outer scope's types
        types.setdefault(key, _ser(value, "TypeProto"))
    data = {key: _ser(input_data[key], "TensorProto") for key in node.input if key in input_data}
    sparse = {key: _ser(input_sparse_data[key], "SparseTensorProto") for key in node.input
              if key in input_sparse_data}
    outputs = schema._infer_node_outputs(_ser(node, "NodeProto"), types, data, sparse, opsets, ir_version)
    return {key: _bridge.parsed(out, "onnx.TypeProto") for key, out in outputs.items()}


def infer_function_output_types(function, input_types, attributes):
    """onnx.shape_inference.infer_function_output_types: a list of onnxio
    TypeProto."""
    result = C.infer_function_output_types(_ser(function, "FunctionProto"),
                                           [_ser(x, "TypeProto") for x in input_types],
                                           [_ser(x, "AttributeProto") for x in attributes])
    return [_bridge.parsed(x, "onnx.TypeProto") for x in result]


_bridge.export_converted(_bridge.require("onnx.shape_inference"), globals())
