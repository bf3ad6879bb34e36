"""onnx.defs under onnxio's name: the operator schemas (OpSchema,
get_schema, get_all_schemas_with_history, onnx_opset_version,
has, ...) are onnx's C++ registry, so every name is onnx's own object. The
messages they hand out (OpSchema.function_body, get_function_with_opset_version,
...) are onnx's; onnxio.from_onnx converts one.

Needs the onnx package (`pip install onnxio[onnx]`).
"""
from onnxio import _bridge

_defs = _bridge.require("onnx.defs")
globals().update({k: v for k, v in vars(_defs).items() if not k.startswith("__")})
