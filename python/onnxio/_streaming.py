"""Streaming saves: ``onnxio.save_streaming``.

The rules (which initializers are placeholders, their byte counts, the
layout, the save transaction) are the C library's
(``onnxio_save_streaming``); this module turns the caller's tensors into
(name, bytes) pairs without copying them."""

from __future__ import annotations

import os
from typing import Any

from onnxio import _onnxio
from onnxio._formats import _BYTES_OVERHEAD


def _placeholder_types(model) -> dict:
    """name -> data_type of the main graph's initializers, for a clear dtype
    error before any byte is written (which of them are placeholders is the
    library's rule: it refuses a tensor for any other name)."""
    return {t.name: t.data_type for t in model.graph.initializer}


def _as_bytes(name, value, data_type):
    """The tensor's raw_data bytes as a C-contiguous uint8 view of its own
    memory (copied only when it is not C-contiguous or not little-endian)."""
    import numpy as np

    from onnxio import numpy_helper
    from onnxio.helper import tensor_dtype_to_np_dtype

    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    if type(value).__name__ == "TensorProto":
        value = numpy_helper.to_array(value)
    arr = np.asarray(value)
    if data_type is not None:
        try:
            want = np.dtype(tensor_dtype_to_np_dtype(data_type))
        except Exception:  # noqa: BLE001  (a type numpy cannot name: the byte count is checked by the library)
            want = None
        if want is not None and arr.dtype != want and not (arr.dtype.kind == want.kind
                                                           and arr.dtype.itemsize == want.itemsize
                                                           and arr.dtype.byteorder in "<>"):
            raise TypeError(f"tensor {name!r}: a {arr.dtype} array given, but its initializer's data_type "
                            f"{data_type} is {want}")
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr.reshape(-1).view(np.uint8)


def _pairs(tensors, types):
    for item in tensors:
        if type(item).__name__ == "TensorProto":
            name, value = item.name, item
        else:
            name, value = item
        yield name, _as_bytes(name, value, types.get(name))


def save_streaming(
    model,
    tensors,
    path,
    *,
    save_as_external_data: bool = False,
    all_tensors_to_one_file: bool = True,
    location: str | None = None,
    size_threshold: int = 1024,
    num_threads: int = 0,
    alignment: int = 0,
    max_external_file_size: int = 0,
    checksum: bool = False,
    max_depth: int = 0,
    fsync: bool = True,
    digests: bool = False,
) -> None:
    """Saves ``model`` to ``path`` with its initializers' data arriving one
    tensor at a time from ``tensors``, memory bounded by the largest tensor.

    Args:
        model: an onnxio ModelProto, the structure. Its *placeholders* are the
            initializers (of every graph) without data (no raw_data, no typed
            data, not external): each one's byte count follows from its
            data_type and dims. Initializers that hold data are saved as
            ``save_model`` saves them. ``model`` is not modified.
        tensors: an iterable (a generator) of ``(name, array)`` pairs or of
            TensorProtos, giving every placeholder exactly once, in any order.
            An array (numpy, or anything ``numpy.asarray`` takes) must have
            the placeholder's dtype; it is written from its own buffer when it
            is C-contiguous and little-endian (else from a copy of that one
            tensor); bytes-like values are taken as the raw_data bytes (packed
            4-bit types). Each value is released when the next is pulled.
        path: where the model goes (written atomically, as ``save_model``);
            a name ending in ".onnxz" writes an archive.
        save_as_external_data, all_tensors_to_one_file, location,
            size_threshold, num_threads, alignment, max_external_file_size,
            checksum, max_depth, fsync, digests: as ``save_model`` (block
            digests are computed as each streamed tensor is written). The files are the
            bytes ``save_model`` writes for the model whose placeholders hold
            the streamed arrays, with the same arguments (``location`` None
            with external data: a fresh "<uuid>.data", as save_model).

    Without external data and not an archive, one .onnx file with every
    payload inline is written: its structure first, with holes where the
    payloads go (their lengths are known), filled as they come.

    Raises:
        onnxio.EncodeError: a name that is no placeholder, a tensor given
            twice or never, a byte count that does not match the
            placeholder's data_type and dims (the message names the tensor).
        TypeError: an array whose dtype is not its placeholder's.
        Whatever ``tensors`` raises, which stops the save. Every failure
        leaves the existing files as they were, and no temporary file.
        OSError, onnxio.ExternalDataError: as ``save_model``.
    """
    import onnxio

    model = _onnxio._coerce(model)
    if not isinstance(model, onnxio.ModelProto):
        raise TypeError(f"model must be an onnxio.ModelProto, not {type(model).__name__}")
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    kwargs: dict[str, Any] = dict(num_threads=num_threads, alignment=alignment, max_depth=max_depth, fsync=fsync,
                                  digests=digests)
    if _onnxio._path_is_archive(path):
        if save_as_external_data or location is not None or not all_tensors_to_one_file or checksum \
                or max_external_file_size:
            raise ValueError("external data options do not apply to an .onnxz archive")
        kwargs["size_threshold"] = max(int(size_threshold), 1)
    elif save_as_external_data:
        # As save_model: onnx compares sys.getsizeof(raw_data).
        kwargs["size_threshold"] = max(int(size_threshold) - _BYTES_OVERHEAD, 1)
        kwargs.update(max_file_size=max_external_file_size, checksum=checksum)
        if all_tensors_to_one_file:
            if location is None:
                from onnxio import external_data_helper

                location = external_data_helper._fresh_name() + ".data"
            kwargs["location"] = location
        else:
            kwargs["one_file_per_tensor"] = True
    _onnxio._save_streaming(model, path, _pairs(tensors, _placeholder_types(model)), **kwargs)
