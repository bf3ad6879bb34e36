"""onnx.reference on onnxio's messages: ReferenceEvaluator takes an onnxio
ModelProto, GraphProto, FunctionProto or NodeProto (or onnx's, or a path
or bytes, as onnx's does), and `functions` of either kind; outputs are
numpy arrays, as onnx's are.

The evaluator is onnx's Python code; the message is converted to onnx's
once, at construction (onnxio.to_onnx), so running costs what it costs in
onnx.

Needs the onnx package (`pip install onnxio[onnx]`).
"""
from typing import Any

from onnxio import _bridge

_reference = _bridge.require("onnx.reference")
_OnnxReferenceEvaluator: Any = _reference.ReferenceEvaluator  # loaded at import: a type checker knows it as Any
__all__ = ["ReferenceEvaluator"]
# onnx's submodules (ops, op_run, ...) are found beside onnx's own: with
# `onnx` mapped to onnxio, `import onnx.reference.ops` still works. Import
# them from onnx.reference (as onnxio.reference.op_run they would be second
# copies, whose OpRun the evaluator does not know).
__path__ = list(_reference.__path__)


def _to_onnx(proto):
    """`proto` for onnx's evaluator: messages converted, and a
    ModelContainer whose model is onnxio's (onnxio.model_container) as an
    onnx container of the converted model sharing its large initializers."""
    import sys

    containers = sys.modules.get("onnx.model_container")
    if containers is not None and isinstance(proto, containers.ModelContainer) and \
            _bridge.is_onnxio(getattr(proto, "model_proto_", None)):
        out = containers.ModelContainer()
        out.model_proto = _bridge.to_onnx(proto.model_proto)
        out.large_initializers = proto.large_initializers
        return out
    return _bridge.to_onnx(proto)


class ReferenceEvaluator(_OnnxReferenceEvaluator):
    """onnx.reference.ReferenceEvaluator, taking onnxio messages (and
    onnxio.model_container's containers) too."""

    def __init__(self, proto, opsets=None, functions=None, *args, **kwargs):
        super().__init__(_to_onnx(proto), _bridge.to_onnx(opsets), _bridge.to_onnx(functions), *args, **kwargs)

    def run(self, output_names, feed_inputs, attributes=None, *args, **kwargs):
        return super().run(output_names, feed_inputs, _bridge.to_onnx(attributes), *args, **kwargs)
