"""The library's data type table (src/datatype.def, through
_onnxio._data_types) as the Python package uses it, and a tensor's raw_data
as a buffer: what onnxio.helper, onnxio.numpy_helper and
onnxio.external_data_helper share, so that none of them imports another
for it."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from onnxio import _onnxio as _C

TensorProto = _C.TensorProto

def _types_of_bits(bits: int) -> frozenset[int]:
    """The data types of `bits` bits per element (the library's table)."""
    return frozenset(row["data_type"] for row in _C._data_types() if row["bits"] == bits)


# The 6-bit float types (onnx 1.23.2, data types 27 and 28).
_FLOAT6_TYPES = _types_of_bits(6)


class TensorDtypeMap(NamedTuple):
    """One row of TENSOR_TYPE_MAP: the numpy dtype of a TensorProto data
    type, the data type whose *_data field stores it outside raw_data, and
    its name ("TensorProto.FLOAT")."""

    np_dtype: np.dtype
    storage_dtype: int
    name: str


def _np_dtype(row: dict) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, row["numpy"]) if row["ml_dtypes"] else row["numpy"])


# onnx._mapping.TENSOR_TYPE_MAP (same order, same storage types), from the
# library's data type table (src/datatype.def).
TENSOR_TYPE_MAP: dict[int, TensorDtypeMap] = {
    row["data_type"]: TensorDtypeMap(_np_dtype(row), row["storage"], "TensorProto." + row["name"])
    for row in _C._data_types()
}


def tensor_dtype_to_np_dtype(tensor_dtype: int) -> np.dtype:
    """The numpy dtype of a TensorProto data type (ml_dtypes types for
    bfloat16, float8, float6, 4-bit and 2-bit; object for STRING).
    KeyError for UNDEFINED or an unknown value."""
    return TENSOR_TYPE_MAP[tensor_dtype].np_dtype


def tensor_dtype_to_storage_tensor_dtype(tensor_dtype: int) -> int:
    """The data type whose field stores `tensor_dtype` outside raw_data
    (FLOAT16 -> INT32, UINT32 -> UINT64, ...). KeyError when unknown."""
    return TENSOR_TYPE_MAP[tensor_dtype].storage_dtype


def tensor_dtype_to_string(tensor_dtype: int) -> str:
    """"TensorProto.<NAME>" of a data type. KeyError when unknown."""
    return TENSOR_TYPE_MAP[tensor_dtype].name


@functools.lru_cache(None)
def tensor_dtype_to_field(tensor_dtype: int) -> str:
    """The TensorProto field ("float_data", "int32_data", ...) that stores
    values of `tensor_dtype` outside raw_data. KeyError when unknown."""
    storage_tensor_type_to_field = {
        int(TensorProto.FLOAT): "float_data",
        int(TensorProto.INT32): "int32_data",
        int(TensorProto.INT64): "int64_data",
        int(TensorProto.DOUBLE): "double_data",
        int(TensorProto.UINT32): "uint64_data",
        int(TensorProto.UINT64): "uint64_data",
        int(TensorProto.STRING): "string_data",
    }
    return storage_tensor_type_to_field[TENSOR_TYPE_MAP[tensor_dtype].storage_dtype]


@functools.lru_cache(None)
def np_dtype_to_tensor_dtype(np_dtype: np.dtype) -> int:
    """The TensorProto data type of a numpy dtype (numpy str dtypes are
    STRING). ValueError when there is none."""
    _np_dtype_to_tensor_dtype = {v.np_dtype: k for k, v in TENSOR_TYPE_MAP.items()}
    if np_dtype in _np_dtype_to_tensor_dtype:
        return _np_dtype_to_tensor_dtype[np_dtype]
    if np.issubdtype(np_dtype, np.str_):
        return TensorProto.STRING
    raise ValueError(f"Unable to convert type {np_dtype!r} into TensorProto element type.")


def _raw_payload(tensor: Any) -> Any:
    """The tensor's raw_data as a memoryview sharing the payload (the
    extension's _payload_view), or None when raw_data is unset."""
    return _C._payload_view(tensor)


def _set_raw_data(tensor: Any, data: Any) -> None:
    """Set tensor.raw_data from bytes (kept without a copy) or a contiguous
    buffer (copied once)."""
    _C._set_raw_data(tensor, data)
