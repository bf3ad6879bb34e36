"""What the onnx-toolbox modules of onnxio (checker, shape_inference,
version_converter, printer, parser, inliner, compose, utils, reference,
model_container, defs) share: importing the onnx package with an error that
says what to install, messages to serialized bytes (onnxio's, onnx's, or
bytes as they are) and back, and conversion at the boundary of onnx's
Python-level functions.

Messages cross as their serialized bytes: an onnxio message is serialized by
the library (`_onnxio._serialize`), an onnx message by protobuf; results
are parsed by the library with `no_copy` (the payloads borrow the bytes
object onnx's C++ code returned: no second copy).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import os
import tempfile
from typing import Any

from onnxio import _onnxio

INSTALL = "pip install onnx"

# protobuf's limit on one serialized message; onnx checks models against it.
MAXIMUM_PROTOBUF = 2147483647


def require(module: str):
    """onnx's module `module` ("onnx.checker", ...), or ImportError naming
    the package to install."""
    try:
        loaded = importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"onnxio.{module.split('.', 1)[1]} runs the onnx package's {module}, which is not "
                          f"installed: {INSTALL}") from e
    return loaded


def full_name(obj: Any) -> str | None:
    """The protobuf full name of a message of onnxio or of the onnx package
    ("onnx.ModelProto"), or None for anything else."""
    descriptor = getattr(type(obj), "DESCRIPTOR", None)
    name = getattr(descriptor, "full_name", None)
    return name if isinstance(name, str) and name.startswith("onnx.") else None


def is_onnxio(obj: Any) -> bool:
    """Whether `obj` is an onnxio message."""
    return isinstance(obj, _onnxio.Message)


def serialized(obj: Any, want: str, error: str) -> bytes:
    """The serialized bytes of `obj`, a message of class `want`
    ("onnx.NodeProto") of onnxio or of the onnx package; TypeError(`error`)
    for anything else."""
    if full_name(obj) != want:
        raise TypeError(error)
    if is_onnxio(obj):
        return _onnxio._serialize(obj)
    return obj.SerializeToString()


def parsed(data: bytes, name: str):
    """The onnxio message of class `name` ("onnx.ModelProto") that `data`
    holds; its payloads borrow `data`."""
    return _onnxio._load_bytes(data, _onnxio._messages[name], no_copy=True)


def by_path(model: Any, run):
    """Runs `run(path)` on the model written to a temporary .onnx file
    (for models past protobuf's 2 GiB, which onnx's C++ entry points take
    only by path); returns its result."""
    import onnxio

    with tempfile.TemporaryDirectory(prefix="onnxio-") as d:
        path = os.path.join(d, "model.onnx")
        onnxio.save(model if is_onnxio(model) else onnxio.from_onnx(model), path)
        return run(path, d)


# ---- conversion at the boundary of onnx's Python functions -------------------


def _each_message(value: Any, convert) -> Any:
    """`value` with every message in it (at the top, or in a list, tuple or
    dict) replaced by `convert(message)`."""
    if full_name(value) is not None:
        return convert(value)
    if isinstance(value, list):
        return [_each_message(v, convert) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_each_message(v, convert) for v in value)
    if isinstance(value, dict):
        return {k: _each_message(v, convert) for k, v in value.items()}
    return value


def to_onnx(value: Any) -> Any:
    """`value` with every onnxio message in it replaced by the equal onnx
    message (onnxio.to_onnx)."""
    import onnxio

    return _each_message(value, lambda m: onnxio.to_onnx(m) if is_onnxio(m) else m)


def from_onnx(value: Any) -> Any:
    """`value` with every onnx message in it replaced by the equal onnxio
    message (onnxio.from_onnx)."""
    import onnxio

    return _each_message(value, lambda m: m if is_onnxio(m) else onnxio.from_onnx(m))


def converting(fn):
    """`fn` (a function of onnx's Python modules) taking onnxio messages
    too and returning onnxio messages where it returns onnx ones. When it
    changes an argument in place (`inplace=True`, as onnx.compose's
    functions take it), the change is copied back into the onnxio message
    that was passed."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        given = dict(bound.arguments)
        for name, value in given.items():
            bound.arguments[name] = to_onnx(value)
        result = fn(*bound.args, **bound.kwargs)
        if given.get("inplace"):
            for name, value in given.items():
                if is_onnxio(value):
                    value.CopyFrom(from_onnx(bound.arguments[name]))
        return from_onnx(result)

    return wrapper


def export_converted(module: Any, namespace: dict) -> None:
    """Puts every name of onnx's module `module` (its private helpers too,
    which onnx's tests call) that `namespace` lacks into it: its functions wrapped by `converting`, message classes it
    imported (``from onnx.onnx_pb import ModelProto``) as onnxio's, other
    values as they are; modules it imported are left out."""
    for name in [n for n in dir(module) if not n.startswith("__")]:
        if name in namespace:
            continue
        value = getattr(module, name)
        if inspect.ismodule(value):
            continue
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            value = converting(value)
        elif isinstance(value, type):  # a message class of onnx's: onnxio's; another class as it is
            value = _onnxio._messages.get(full_name_of_class(value) or "", value)
        namespace[name] = value


def full_name_of_class(cls: type) -> str | None:
    """The protobuf full name of a message class, or None."""
    return getattr(getattr(cls, "DESCRIPTOR", None), "full_name", None)
