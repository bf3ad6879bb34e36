"""onnxio.safetensors: a model's initializers to and from ``.safetensors``
files (https://github.com/huggingface/safetensors), through the C library
(``onnxio_safetensors_load_into`` / ``onnxio_safetensors_save``), which holds
every rule of the format: the header's checks, the dtype <-> ONNX data type
table, the writer's layout.

dtypes map to ONNX data types one to one: BOOL, U8, I8, U16, I16, U32, I32,
U64, I64, F16, BF16, F32, F64, C64 (COMPLEX64), F8_E4M3 (FLOAT8E4M3FN),
F8_E4M3FNUZ, F8_E5M2, F8_E5M2FNUZ, F8_E8M0. F4, F6_E2M3 and F6_E3M2 are read
in headers but not loaded (their bit packing is not specified alike by both
formats); ONNX types safetensors lacks (STRING, COMPLEX128, 2- and 4-bit
integers, FLOAT4E2M1, FLOAT6*) are not saved.

A malformed file raises ``onnxio.DecodeError`` (a ValueError) naming the
tensor and the byte of the file; a missing file FileNotFoundError.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Optional, Union

from . import _onnxio

__all__ = ["load_into", "save"]

_Path = Union[str, "os.PathLike[str]"]


def load_into(model, path: _Path, names: Optional[Iterable[str]] = None, no_copy: bool = False, *,
              allow_unknown: bool = False, num_threads: int = 0):
    """Fills the initializers of ``model.graph`` (an ``onnxio.ModelProto``) by
    name from the .safetensors file at ``path``, and returns ``model``.

    names=None loads every tensor of the file into the initializer of the
    same name; a tensor that no initializer has raises DecodeError unless
    ``allow_unknown`` (it is then skipped); initializers the file lacks keep
    what they hold. With ``names``, exactly those tensors are loaded (each
    must be in the file and in the model). Each initializer must already
    have the tensor's data type and dims: otherwise DecodeError, e.g.
    "tensor 'w': safetensors has F32 [4, 4], the model has FLOAT16 [4, 4]".

    A loaded initializer holds its values in raw_data (its typed data
    fields, external_data and data_location are cleared). ``no_copy=True``:
    raw_data points into a private memory mapping of the file (numpy arrays
    from ``numpy_helper.to_array`` are then read-only views of it); else the
    bytes are read into memory of the model's own (on ``num_threads``
    threads, 0: one per core). Everything is checked and read before the
    first initializer changes: on error the model is unchanged.
    """
    if names is not None:
        names = list(names)
    _onnxio._safetensors_load_into(model, os.fspath(path), names=names, no_copy=bool(no_copy),
                                   allow_unknown=bool(allow_unknown), num_threads=num_threads)
    return model


def save(model, path: _Path, names: Optional[Iterable[str]] = None, *,
         metadata: Optional[Mapping[str, str]] = None, fsync: bool = True, num_threads: int = 0,
         max_expansion: int = 0) -> None:
    """Writes the initializers of ``model.graph`` (names=None: all of them;
    else those named) as a .safetensors file at ``path``, atomically: a
    temporary file beside it, fsync'd (unless ``fsync=False``) and renamed
    over it, so that a failed save leaves the previous file whole.

    The layout is the reference writer's (``safetensors.numpy.save_file``):
    tensors ordered by dtype, larger first, then by name; the header padded
    with spaces to a multiple of 8 bytes; ``metadata`` (str to str) as
    "__metadata__". Values held in typed fields (float_data, int32_data, ...)
    are written as ``numpy_helper.to_array`` reads them. ``model`` may be an
    onnx package ModelProto too; it is not modified. A data type safetensors
    cannot hold raises EncodeError (a ValueError), as does a tensor whose
    data was never loaded. Tensors whose payloads add up to more than
    ``max_expansion`` times the distinct bytes they come from (0: the
    default, as ``save_model``'s) raise ExpansionError before anything is
    written: a model whose tensors share one range is not written once per
    tensor.
    """
    if names is not None:
        names = list(names)
    if metadata is not None:
        metadata = dict(metadata)
    _onnxio._safetensors_save(_onnxio._coerce(model), os.fspath(path), names=names, metadata=metadata,
                              fsync=bool(fsync), num_threads=num_threads, max_expansion=max_expansion)
