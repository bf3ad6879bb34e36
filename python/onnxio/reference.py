"""onnx.reference on onnxio's messages: ReferenceEvaluator takes an onnxio
ModelProto, GraphProto, FunctionProto or NodeProto (or onnx's, or a path
or bytes, as onnx's does), and `functions` of either kind; outputs are
numpy arrays, as onnx's are.

The evaluator is onnx's Python code; the message is converted to onnx's
once, at construction (onnxio.to_onnx), so running costs what it costs in
onnx.

Needs the onnx package (`pip install onnx`).
"""
import sys
import types
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


def __getattr__(name: str) -> Any:
    """onnx.reference's submodules (op_run, ops, ...) as attributes, as
    `onnx.reference.op_run` is once `import onnx.reference.op_run` ran:
    with `onnx` mapped to onnxio, that import finds the module onnx's
    evaluator loaded and binds no attribute here. `ops` is onnx's, with
    load_op's classes taking onnxio messages as attribute values."""
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(f"{_reference.__name__}.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return _ops_module(module) if name == "ops" else module


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


class _Module(types.ModuleType):
    """This module's class: the import system binds a submodule it loads
    here (`import onnx.reference.ops` with onnx mapped to onnxio sets
    `ops`); `ops` is bound as its wrapper (_ops_module)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "ops" and isinstance(value, types.ModuleType) and value.__name__ == f"{_reference.__name__}.ops":
            value = _ops_module(value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Module

_OPS: dict = {}


def _ops_module(ops):
    """onnx.reference.ops with load_op wrapped (_accepting_onnxio); every
    other name is onnx's."""
    wrapped = _OPS.get("module")
    if wrapped is None:
        wrapped = types.ModuleType(ops.__name__, ops.__doc__)
        wrapped.__dict__.update(vars(ops))

        def load_op(*args, **kwargs):
            return _accepting_onnxio(ops.load_op(*args, **kwargs))

        load_op.__doc__ = ops.load_op.__doc__
        wrapped.load_op = load_op
        _OPS["module"] = wrapped
    return wrapped


def _accepting_onnxio(cls):
    """onnx's reference op class `cls`, whose eval and create take onnxio
    messages as attribute values (converted to onnx's, as the evaluator's
    inputs are): onnxscript's constant folder calls
    load_op(...).eval(x, value=<TensorProto>)."""
    if not isinstance(cls, type):
        return cls
    sub = _OPS.get(cls)
    if sub is None:
        def eval(klass, *args, **kwargs):  # noqa: A001  (OpRun.eval's name)
            return super(sub, klass).eval(*args, **_bridge.to_onnx(kwargs))

        def create(klass, *args, **kwargs):
            return super(sub, klass).create(*args, **_bridge.to_onnx(kwargs))

        sub = type(cls.__name__, (cls,), {"eval": classmethod(eval), "create": classmethod(create),
                                          "__module__": cls.__module__, "__doc__": cls.__doc__,
                                          "__qualname__": cls.__qualname__})
        _OPS[cls] = sub
    return sub
