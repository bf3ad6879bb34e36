"""Consolidation of payloads into one buffer, and conversion to and from the onnx package's messages."""

from __future__ import annotations

import typing

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes and exceptions)
from onnxio._options import TensorBufferOptions, _check_options
from onnxio._formats import _class_name

def consolidate_tensors_to_buffer(model, options: TensorBufferOptions | None = None):
    """Moves every loaded raw_data payload of at least
    ``options.raw_data_threshold`` bytes (default 1024) under ``model`` (any
    message) into one new buffer, each at an offset that is a multiple of
    ``options.alignment`` (default 64), and returns a writable memoryview of
    that buffer, or None when no payload qualified. The view keeps the
    buffer alive; the tensors share it (writing into the view changes
    them). Smaller, skipped and external payloads stay as they were."""
    _check_options(options, TensorBufferOptions)
    o = options or TensorBufferOptions()
    return _onnxio._consolidate(model, raw_data_threshold=o.raw_data_threshold, alignment=o.alignment)


def _onnx_class(full_name: str):
    """The onnx package's class of a proto name ("onnx.TensorProto.Segment"):
    protobuf's class for the descriptor onnx's generated modules registered,
    found in protobuf's pool rather than by attribute, so that it is onnx's
    class even where `onnx` names onnxio (``import onnxio as onnx`` put
    into sys.modules)."""
    import onnx  # noqa: F401  (registers onnx's descriptors)
    from google.protobuf import descriptor_pool, message_factory

    return message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(full_name))


def from_onnx(proto) -> Message:  # noqa: F405
    """The onnxio message equal to an ``onnx`` package message (of any
    ONNX class), parsed from the bytes its SerializeToString() gives (the
    extension's conversion, as constructors and append use it; an onnxio
    message gives a copy).

    The parse copies the payloads: a no_copy parse (payloads borrowing the
    bytes object) takes as much memory once the bytes object is gone, saves
    0.05 s on GPT-2 but costs 0.04 s more on the 200,000-node model."""
    if isinstance(proto, _onnxio.Message):
        return _onnxio._load_bytes(_onnxio._serialize(proto), type(proto))
    converted = _onnxio._coerce(proto)
    if converted is proto:
        raise TypeError(f"expected a message of the onnx package, not {type(proto).__name__}")
    return converted


def to_onnx(proto) -> typing.Any:
    """The ``onnx`` package message equal to an onnxio message (imports onnx)."""
    full_name = _class_name(type(proto))
    if "." not in full_name:
        raise TypeError(f"expected an onnxio message, not {type(proto).__name__}")
    return _onnx_class(full_name).FromString(_onnxio._serialize(proto))
