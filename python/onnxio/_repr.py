"""The repr of ModelProto, GraphProto and FunctionProto: a one-line summary, as onnx gives."""

from __future__ import annotations

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes and exceptions)

# onnx 1.23 gives ModelProto, GraphProto and FunctionProto a short repr (the
# others keep protobuf's text format): the same, character for character.


def _opsets_repr(protos) -> str:
    return repr({p.domain: p.version for p in protos})


def _model_proto_repr(self) -> str:
    parts = [f"ir_version={self.ir_version}"]
    if self.opset_import:
        parts.append(f"opset_import={_opsets_repr(self.opset_import)}")
    parts += [f"{name}='{getattr(self, name)}'" for name in ("domain", "producer_name", "producer_version")
              if getattr(self, name)]
    parts.append(f"graph={self.graph!r}")  # a message is always true, as in onnx
    if self.functions:
        parts.append(f"functions=<{len(self.functions)} functions>")
    return f"ModelProto({', '.join(parts)})"


def _counts(self, fields) -> list:
    return [f"{name}=<{len(getattr(self, name))} {label}>" for name, label in fields if getattr(self, name)]


def _graph_proto_repr(self) -> str:
    parts = [f"'{self.name}'"] + _counts(self, (("input", "inputs"), ("output", "outputs"),
                                                ("initializer", "initializers"), ("node", "nodes"),
                                                ("value_info", "value_info")))
    return f"GraphProto({', '.join(parts)})"


def _function_proto_repr(self) -> str:
    parts = [f"'{self.name}'"] + [f"{name}='{getattr(self, name)}'" for name in ("domain", "overload")
                                  if getattr(self, name)]
    if self.opset_import:
        parts.append(f"opset_import={_opsets_repr(self.opset_import)}")
    parts += _counts(self, (("input", "inputs"), ("output", "outputs")))
    if self.attribute:
        parts.append(f"attribute={self.attribute}")
    parts += _counts(self, (("node", "nodes"),))
    return f"FunctionProto({', '.join(parts)})"


# The extension's classes take these methods (a checker sees their reprs as methods that cannot be assigned).
ModelProto.__repr__ = _model_proto_repr  # type: ignore[method-assign]  # noqa: F405
GraphProto.__repr__ = _graph_proto_repr  # type: ignore[method-assign]  # noqa: F405
FunctionProto.__repr__ = _function_proto_repr  # type: ignore[method-assign]  # noqa: F405
