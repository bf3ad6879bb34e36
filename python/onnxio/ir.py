"""onnxio models to onnx_ir models and back, sharing tensor payloads.

::

    import onnxio
    from onnxio.ir import to_ir, from_ir

    ir_model = to_ir(onnxio.load("model.onnx"))     # an onnx_ir.Model
    ...                                             # passes, rewrites (onnx_ir's API)
    onnxio.save(from_ir(ir_model), "out.onnx")

The conversion is onnx_ir's own (``onnx_ir.serde``) running on onnxio's
messages, which have protobuf's API: ``to_ir(m)`` is
``serde.deserialize_model(m)`` and ``from_ir(g)`` is
``serde.serialize_model_into(onnxio.ModelProto(), g)``, so the result is
byte for byte what onnx_ir gives through the ``onnx`` package
(``serde.serialize_model(serde.deserialize_model(onnx.load(path)))``);
there is no list of ONNX fields here.

Payloads are shared, not copied:

- ``to_ir``: each tensor (initializers, tensor attributes) is an
  :class:`OnnxioTensor`, an ``onnx_ir.serde.TensorProtoTensor`` over the
  onnxio ``TensorProto`` whose ``numpy()`` is a view of the payload
  (``onnxio.numpy_helper.to_array``'s memory; writable when onnxio owns
  it, read-only for ``no_copy`` loads). The tensor holds the
  ``TensorProto`` and so the payload: the IR model stays valid after the
  onnxio model is deleted.
- ``from_ir``: an ``OnnxioTensor`` is copied into the new model with
  ``CopyFrom``, which shares its payload; an ``onnx_ir.Tensor`` over a
  numpy array (what passes create) gets ``raw_data`` pointing at the
  array's memory (the extension's ``_share_raw_data``: the model holds a
  reference to the array), when its byte representation (onnx_ir's
  ``tobytes()``) is that memory. Other tensors (packed 4-bit values, string
  tensors, ``LazyTensor``...) are written by onnx_ir, as bytes.

For this, importing this module wraps two functions of ``onnx_ir.serde``
(``deserialize_tensor`` and ``serialize_tensor_into``); the wrappers change
nothing for the ``onnx`` package's messages, except that a model from
``to_ir`` can also be written by onnx_ir itself (``onnx_ir.save``,
``serde.serialize_model``): its tensors are converted to ``onnx``'s
``TensorProto`` on the way.

Python's cyclic garbage collector is paused during each conversion (onnx_ir
makes a few objects per node and value, and each collection walks them all
again: about half of deserialize_model's time on a 200,000-node model).

onnx_ir is imported with this module (ImportError naming
``pip install onnx-ir`` if it is missing); ``import onnxio`` never imports it.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Any, Iterator

import numpy as np

from onnxio import _bridge, _onnxio

try:
    import onnx_ir
    from onnx_ir import _core, serde
except ImportError as _e:  # pragma: no cover - exercised without onnx_ir
    raise ImportError(f"onnxio.ir converts to and from onnx_ir models, which is not installed: pip install onnx-ir"
                      ) from _e

__all__ = ["OnnxioTensor", "from_ir", "to_ir"]

_TensorProto = _onnxio.TensorProto
_payload_view = _onnxio._payload_view
_share_raw_data = _onnxio._share_raw_data
_EXTERNAL: int = _TensorProto.EXTERNAL  # an int at run time (the stub types it as the enum)
_DataType = onnx_ir.DataType
# onnx_ir's own rule for the bytes of a Tensor (packing of sub-byte types,
# byte order); without it (another onnx_ir), from_ir lets onnx_ir copy.
_byte_representation = getattr(_core, "_create_np_array_for_byte_representation", None)


class OnnxioTensor(serde.TensorProtoTensor):  # pylint: disable=too-many-ancestors
    """An onnx_ir tensor over an onnxio ``TensorProto`` (``raw``): the
    proto's fields as ``TensorProtoTensor`` has them, and ``numpy()`` a view
    of the payload, not a copy, for the byte-sized data types stored in
    ``raw_data`` (other layouts are converted as onnx_ir converts them)."""

    __slots__ = ()

    def numpy(self) -> np.ndarray:
        proto = self._proto
        dtype = self.dtype
        if dtype.bitwidth % 8 == 0 and dtype not in (_DataType.STRING, _DataType.UNDEFINED) \
                and proto.data_location != _EXTERNAL:
            view = _payload_view(proto)
            if view is not None:
                return np.frombuffer(view, dtype=dtype.numpy().newbyteorder("<")).reshape(proto.dims)
        return super().numpy()


# ---- the two wrappers in onnx_ir.serde ---------------------------------------

_deserialize_tensor = serde.deserialize_tensor
_serialize_tensor_into = serde.serialize_tensor_into


def _deserialize_tensor_wrapper(proto: Any, base_path: Any = "") -> Any:
    tensor = _deserialize_tensor(proto, base_path)
    if type(proto) is _TensorProto and type(tensor) is serde.TensorProtoTensor:
        tensor.__class__ = OnnxioTensor  # same layout (no slots of its own)
    return tensor


class _WithoutBytes:
    """`tensor` to onnx_ir's serializer, with an empty ``tobytes()``: the
    fields are written by onnx_ir, ``raw_data`` then shared by from_ir."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: Any) -> None:
        self._tensor = tensor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tensor, name)

    def __repr__(self) -> str:
        return repr(self._tensor)

    def tobytes(self) -> bytes:
        return b""


def _shareable(tensor: Any) -> Any:
    """The C-contiguous numpy array whose memory is ``tensor.tobytes()``,
    for an ``onnx_ir.Tensor`` (exactly: subclasses may have their own
    ``tobytes``) over a numpy array; else None."""
    if type(tensor) is not _core.Tensor or _byte_representation is None or not isinstance(tensor.raw, np.ndarray) \
            or tensor.dtype in (_DataType.STRING, _DataType.UNDEFINED):
        return None
    array = _byte_representation(tensor)
    if not array.flags.c_contiguous or array.dtype.hasobject:
        return None
    # uint8: numpy does not export ml_dtypes arrays through the buffer protocol.
    return array.reshape(-1).view(np.uint8)


def _serialize_tensor_into_wrapper(tensor_proto: Any, from_: Any) -> None:
    if type(tensor_proto) is _TensorProto:
        array = _shareable(from_)
        if array is not None:
            _serialize_tensor_into(tensor_proto, _WithoutBytes(from_))  # type: ignore[arg-type]
            _share_raw_data(tensor_proto, array)
            return
    elif isinstance(from_, serde.TensorProtoTensor) and _bridge.is_onnxio(from_.raw):
        # onnx_ir writing a tensor of to_ir into the onnx package's message:
        # protobuf's CopyFrom takes its own class only.
        ours = from_._proto  # pylint: disable=protected-access
        from_._proto = type(tensor_proto).FromString(_onnxio._serialize(ours))  # pylint: disable=protected-access
        try:
            _serialize_tensor_into(tensor_proto, from_)
        finally:
            from_._proto = ours  # pylint: disable=protected-access
        return
    _serialize_tensor_into(tensor_proto, from_)


if not getattr(serde.deserialize_tensor, "_onnxio", False):
    _deserialize_tensor_wrapper._onnxio = True  # type: ignore[attr-defined]
    _serialize_tensor_into_wrapper._onnxio = True  # type: ignore[attr-defined]
    serde.deserialize_tensor = _deserialize_tensor_wrapper
    serde.serialize_tensor_into = _serialize_tensor_into_wrapper


# ---- the API -----------------------------------------------------------------


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic collector off during a conversion: onnx_ir makes
    millions of objects (a few per node and value), none garbage until the
    conversion ends, and each collection walks them all again (on the
    200,000-node model, about half the time of deserialize_model). Turned
    back on after, when it was on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()



def to_ir(model: Any) -> onnx_ir.Model:
    """The ``onnx_ir.Model`` of `model` (an ``onnxio.ModelProto``; an
    ``onnx.ModelProto`` is converted with ``onnxio.from_onnx`` first),
    built by ``onnx_ir.serde.deserialize_model``; its tensors share the
    model's payloads (:class:`OnnxioTensor`). Python's cyclic garbage
    collector is paused while it runs."""
    if not _bridge.is_onnxio(model):
        if _bridge.full_name(model) != "onnx.ModelProto":
            raise TypeError(f"to_ir takes an onnxio.ModelProto (or an onnx.ModelProto), not {type(model).__name__}")
        import onnxio

        model = onnxio.from_onnx(model)
    elif type(model) is not _onnxio.ModelProto:
        raise TypeError(f"to_ir takes a ModelProto, not {type(model).__name__}")
    with _gc_paused():
        return serde.deserialize_model(model)


def from_ir(model: Any) -> Any:
    """The ``onnxio.ModelProto`` of `model` (an ``onnx_ir.Model``), written
    by ``onnx_ir.serde.serialize_model_into``: the bytes onnx_ir's
    ``serialize_model`` gives, with the payloads shared (see the module's
    docstring). Python's cyclic garbage collector is paused while it runs."""
    if not isinstance(model, _core.Model):
        raise TypeError(f"from_ir takes an onnx_ir.Model, not {type(model).__name__}")
    with _gc_paused():
        return serde.serialize_model_into(_onnxio.ModelProto(), model)  # type: ignore[arg-type]
