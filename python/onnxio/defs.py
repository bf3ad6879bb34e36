"""onnx.defs under onnxio's name: the operator schemas (OpSchema,
get_schema, get_all_schemas_with_history, onnx_opset_version, has, ...)
are onnx's C++ registry. The messages a schema hands out are onnxio's:
``schema.function_body`` and each attribute's ``default_value``
(``get_function_with_opset_version`` and the other methods that return a
serialized FunctionProto return its bytes, as onnx's do: parse them with
``onnxio.FunctionProto.FromString``). Schemas returned here are views of onnx's that convert
those at the boundary (``isinstance(s, onnxio.defs.OpSchema)`` holds);
every other name is onnx's own object, and the registry is shared with the
onnx package (onnx's own schemas keep giving onnx's messages).

Needs the onnx package (`pip install onnx`).
"""
from __future__ import annotations

from typing import Any

from onnxio import _bridge

_defs = _bridge.require("onnx.defs")
globals().update({k: v for k, v in vars(_defs).items() if not k.startswith("__")})

OpSchema = _defs.OpSchema


class _Attribute:
    """An OpSchema.Attribute whose ``default_value`` is an onnxio AttributeProto."""

    __slots__ = ("_attribute",)

    def __init__(self, attribute):
        object.__setattr__(self, "_attribute", attribute)

    @property  # type: ignore[misc]  # read-only on purpose: it answers onnx's class
    def __class__(self):  # noqa: D105 (isinstance(a, OpSchema.Attribute) holds)
        return OpSchema.Attribute

    @property
    def default_value(self):
        return _bridge.from_onnx(self._attribute.default_value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._attribute, name)

    def __repr__(self) -> str:
        return repr(self._attribute)


class _Schema:
    """An OpSchema whose messages are onnxio's (see the module docstring)."""

    __slots__ = ("_schema",)

    def __init__(self, schema):
        object.__setattr__(self, "_schema", schema)

    @property  # type: ignore[misc]  # read-only on purpose: it answers onnx's class
    def __class__(self):  # noqa: D105 (isinstance(s, OpSchema) holds)
        return OpSchema

    @property
    def function_body(self):
        return _bridge.from_onnx(self._schema.function_body)

    @property
    def attributes(self) -> dict:
        return {name: _Attribute(a) for name, a in self._schema.attributes.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._schema, name)

    def __eq__(self, other) -> bool:
        return _unwrap(other) == self._schema

    def __hash__(self) -> int:
        return hash(self._schema)

    def __repr__(self) -> str:
        return repr(self._schema)


def _wrap(schema):
    return _Schema(schema) if isinstance(schema, _defs.OpSchema) and type(schema) is not _Schema else schema


def _unwrap(schema):
    return object.__getattribute__(schema, "_schema") if type(schema) is _Schema else schema


def get_schema(*args, **kwargs):
    """onnx.defs.get_schema: the schema, with onnxio messages."""
    return _wrap(_defs.get_schema(*args, **kwargs))


def get_all_schemas() -> list:
    return [_wrap(s) for s in _defs.get_all_schemas()]


def get_all_schemas_with_history() -> list:
    return [_wrap(s) for s in _defs.get_all_schemas_with_history()]


def get_function_ops() -> list:
    return [_wrap(s) for s in _defs.get_function_ops()]


def register_schema(schema) -> None:
    _defs.register_schema(_unwrap(schema))
