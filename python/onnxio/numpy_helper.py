"""onnxio.numpy_helper: the functions of ``onnx.numpy_helper`` over onnxio's
messages (TensorProto <-> numpy arrays, SequenceProto <-> lists, MapProto <->
dicts, OptionalProto <-> optional values).

Results are those of onnx 1.23 (dtypes, values, and for from_array the
serialized bytes of the tensor), with two differences in cost, not in value:

- ``to_array`` of a tensor whose payload is in raw_data returns a numpy
  VIEW of the payload, not a copy, when numpy can read the payload as it is
  (little-endian host, a dtype of one whole byte or more: everything but the
  4-bit, 2-bit and 6-bit types). The view keeps the payload's memory alive on
  its own: it stays valid after the tensor, its model and their arena are
  gone. It is writable when the payload is memory the library allocated (a
  copy-mode load, from_array, make_tensor(raw=True) from an array) and then
  shares memory with the tensor: writing into the array changes the tensor.
  It is read-only when the payload belongs to something else (a no_copy load
  maps the file or borrows the caller's bytes; raw_data set from a bytes
  object keeps that object). onnx's arrays from raw_data are read-only
  copies.
- ``from_array`` copies the array once into raw_data (onnx copies it twice:
  tobytes, then into the message).

bfloat16, float8, float6 and the 4-bit and 2-bit types use ml_dtypes, as
onnx does.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from onnxio import _onnxio as _C
from onnxio import _dtypes
from onnxio._dtypes import _raw_payload, _set_raw_data  # noqa: F401  (the package's modules call them here too)

_TensorProto = _C.TensorProto
_SequenceProto = _C.SequenceProto
_MapProto = _C.MapProto
_OptionalProto = _C.OptionalProto

_LITTLE = sys.byteorder == "little"

# The packed types, by bits per element (INT4, UINT4, FLOAT4E2M1; UINT2,
# INT2; FLOAT6E2M3, FLOAT6E3M2).
_PACKED_4BIT = _dtypes._types_of_bits(4)
_PACKED_2BIT = _dtypes._types_of_bits(2)
_PACKED_6BIT = _dtypes._FLOAT6_TYPES


def _little_endian_buffer(array: np.ndarray) -> Any:
    """A buffer with the bytes of tobytes_little_endian(array): the array
    itself reinterpreted as uint8 when it is C-contiguous and little-endian
    (no copy here), otherwise the bytes of a converted copy."""
    if _LITTLE and array.flags.c_contiguous and array.dtype.byteorder in "<=|" and array.dtype != object:
        # uint8 because numpy refuses to export ml_dtypes arrays through the
        # buffer protocol ("cannot include dtype 'E' in a buffer").
        return array.reshape(-1).view(np.uint8)
    return tobytes_little_endian(array)


def to_float8e8m0(
    x: np.ndarray,
    saturate: bool = True,
    round_mode: str = "up",
) -> np.ndarray:
    """Convert an array (cast to float32 first) to float8e8m0 (the exponent
    byte of float32): ml_dtypes.float8_e8m0fnu values, same shape.

    Args:
        x: input values.
        saturate: stay at the largest finite value instead of rounding to NaN.
        round_mode: "nearest", "up" or "down"; ValueError otherwise.
    """
    x_f32 = np.asarray(x, dtype=np.float32)
    f_bits = x_f32.view(np.uint32)

    exponent = (f_bits >> 23) & 0xFF
    # uint16 so that rounding up from 0xFE cannot wrap around.
    exponent = exponent.astype(np.uint16)

    special_mask = exponent == 0xFF  # noqa: PLR2004
    output = np.zeros_like(exponent, dtype=np.uint8)
    output[special_mask] = 0xFF  # NaN/Inf stay the all-ones exponent

    normal_mask = ~special_mask

    if round_mode == "nearest":
        g = ((f_bits & 0x400000) > 0).astype(np.uint8)
        r = ((f_bits & 0x200000) > 0).astype(np.uint8)
        s = ((f_bits & 0x1FFFFF) > 0).astype(np.uint8)
        lsb = (exponent > 0).astype(np.uint8)

        round_up = (g == 1) & ((r == 1) | (s == 1) | (lsb == 1))

        increment = np.zeros_like(exponent)
        increment[round_up & normal_mask] = 1

        if saturate:
            max_mask = (exponent == 0xFE) & round_up & normal_mask  # noqa: PLR2004
            increment[max_mask] = 0

        exponent += increment

    elif round_mode == "up":
        has_fraction = (f_bits & 0x7FFFFF) > 0
        round_up = has_fraction & normal_mask

        if saturate:
            max_mask = (exponent == 0xFE) & round_up  # noqa: PLR2004
            round_up[max_mask] = False

        exponent += round_up.astype(np.uint16)

    elif round_mode == "down":
        pass

    else:
        raise ValueError(f"Unsupported rounding mode: {round_mode}")

    exponent = exponent.astype(np.uint8)
    output[normal_mask] = exponent[normal_mask]
    return output.view(ml_dtypes.float8_e8m0fnu)


def _unpack_4bit(data: npt.NDArray[np.uint8], dims: Sequence[int]) -> npt.NDArray[np.uint8]:
    """Unpack two 4-bit values per byte (low nibble first) into one byte
    each, reshaped to dims. ValueError when data is too short."""
    result = np.empty([data.size * 2], dtype=data.dtype)
    array_low = data & np.uint8(0x0F)
    array_high = data & np.uint8(0xF0)
    array_high >>= np.uint8(4)
    result[0::2] = array_low
    result[1::2] = array_high
    expected_elements = math.prod(dims)
    if result.size == expected_elements + 1:
        # the padding nibble of an odd number of elements
        result = result[:-1]
    if expected_elements > result.size:
        raise ValueError(
            f"Packed 4-bit data ({data.size} bytes, {result.size} elements unpacked) "
            f"is too small for the declared shape {list(dims)} "
            f"({expected_elements} elements required)."
        )
    result.resize(dims, refcheck=False)
    return result


def _pack_4bitx2(array: np.ndarray) -> npt.NDArray[np.uint8]:
    """Pack an array of 4-bit values (one per byte, in range) two per byte,
    low nibble first; flat uint8 result."""
    array_flat = array.ravel().view(np.uint8).copy()
    size = array.size
    odd_sized = size % 2 == 1
    if odd_sized:
        array_flat.resize([size + 1], refcheck=False)
    array_flat &= 0x0F
    array_flat[1::2] <<= 4
    return array_flat[0::2] | array_flat[1::2]


def _unpack_2bit(data: npt.NDArray[np.uint8], dims: Sequence[int]) -> npt.NDArray[np.uint8]:
    """Unpack four 2-bit values per byte (lowest bits first) into one byte
    each, reshaped to dims. ValueError when data is too short."""
    result = np.empty([data.size * 4], dtype=data.dtype)
    result[0::4] = data & 0x03
    result[1::4] = (data >> 2) & 0x03
    result[2::4] = (data >> 4) & 0x03
    result[3::4] = (data >> 6) & 0x03
    expected_elements = math.prod(dims)
    if result.size > expected_elements:
        result = result[:expected_elements]
    if expected_elements > result.size:
        raise ValueError(
            f"Packed 2-bit data ({data.size} bytes, {result.size} elements unpacked) "
            f"is too small for the declared shape {list(dims)} "
            f"({expected_elements} elements required)."
        )
    result.resize(dims, refcheck=False)
    return result


def _pack_2bitx4(array: np.ndarray) -> npt.NDArray[np.uint8]:
    """Pack an array of 2-bit values four per byte, lowest bits first."""
    array_flat = array.ravel().view(np.uint8).copy()
    size = array.size
    pad_len = size % 4
    if pad_len:
        array_flat.resize([size + (4 - pad_len)], refcheck=False)
    array_flat &= 0x03
    array_flat[1::4] <<= 2
    array_flat[2::4] <<= 4
    array_flat[3::4] <<= 6
    return array_flat[0::4] | array_flat[1::4] | array_flat[2::4] | array_flat[3::4]


def _pack_6bit(values: np.ndarray) -> npt.NDArray[np.uint8]:
    """Pack 6-bit codes four to three bytes (LSB first), trimmed to
    ceil(n * 6 / 8) bytes."""
    flat = values.astype(np.uint8, copy=False).ravel() & 0x3F
    n = flat.size
    packed_size = math.ceil(n * 6 / 8)
    pad = -n % 4
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, dtype=np.uint8)])
    v0, v1, v2, v3 = flat[0::4], flat[1::4], flat[2::4], flat[3::4]
    packed = np.empty((v0.size, 3), dtype=np.uint8)
    packed[:, 0] = v0 | ((v1 & 0x03) << 6)
    packed[:, 1] = (v1 >> 2) | ((v2 & 0x0F) << 4)
    packed[:, 2] = (v2 >> 4) | (v3 << 2)
    return packed.reshape(-1)[:packed_size]


def _unpack_6bit(data: np.ndarray, dims: Sequence[int]) -> npt.NDArray[np.uint8]:
    """Unpack a _pack_6bit buffer into one uint8 per element, shaped dims.
    ValueError when data is too short."""
    original_size = math.prod(dims)
    num_groups = -(-original_size // 4)
    needed_bytes = num_groups * 3
    min_bytes = -(-original_size * 6 // 8)
    data = data.astype(np.uint8, copy=False)
    if data.size < min_bytes:
        raise ValueError(
            f"Packed 6-bit data ({data.size} bytes) is too small for the declared "
            f"shape {list(dims)} ({min_bytes} bytes required)."
        )
    bulk_bytes = min(data.size, needed_bytes) // 3 * 3
    bulk_groups = bulk_bytes // 3
    unpacked = np.empty((num_groups, 4), dtype=np.uint8)
    b0, b1, b2 = data[0:bulk_bytes:3], data[1:bulk_bytes:3], data[2:bulk_bytes:3]
    unpacked[:bulk_groups, 0] = b0 & 0x3F
    unpacked[:bulk_groups, 1] = ((b0 >> 6) & 0x03) | ((b1 & 0x0F) << 2)
    unpacked[:bulk_groups, 2] = ((b1 >> 4) & 0x0F) | ((b2 & 0x03) << 4)
    unpacked[:bulk_groups, 3] = (b2 >> 2) & 0x3F
    if bulk_groups < num_groups:
        # only the last, incomplete group is padded, not a copy of all data
        tail = np.zeros(3, dtype=np.uint8)
        rest = data[bulk_bytes:]
        tail[: rest.size] = rest
        t0, t1, t2 = tail
        unpacked[bulk_groups, 0] = t0 & 0x3F
        unpacked[bulk_groups, 1] = ((t0 >> 6) & 0x03) | ((t1 & 0x0F) << 2)
        unpacked[bulk_groups, 2] = ((t1 >> 4) & 0x0F) | ((t2 & 0x03) << 4)
        unpacked[bulk_groups, 3] = (t2 >> 2) & 0x3F
    return unpacked.reshape(-1)[:original_size].reshape(dims)


def to_array(tensor: Any, base_dir: str = "") -> np.ndarray:  # noqa: PLR0911
    """Convert a TensorProto to a numpy array of shape tensor.dims.

    Args:
        tensor: a TensorProto.
        base_dir: the directory that external data locations are relative to
            (the tensor is not changed: its data stays external).

    Returns:
        An array of _dtypes.tensor_dtype_to_np_dtype(tensor.data_type) (an
        object array of str for STRING). For raw_data of a byte-sized type
        on a little-endian host, a view of the payload (see the module
        docstring: writable only for privately owned payloads).

    Raises:
        ValueError: a segment tensor, a negative dimension, or data that does
            not fit dims.
        TypeError: data_type UNDEFINED. KeyError: an unknown data_type.
        ExternalDataError / OSError: external data that cannot be read.
    """
    tensor = _C._coerce(tensor)  # an onnx package TensorProto too
    if tensor.HasField("segment"):
        raise ValueError("Currently not supporting loading segments.")
    if tensor.data_type == _TensorProto.UNDEFINED:
        raise TypeError("The element type in the input tensor is UNDEFINED.")

    dims = tensor.dims
    for i, d in enumerate(dims):
        if d < 0:
            # onnx reshapes to -1 here, which gives data of any length a
            # shape that is not dims; a negative dimension is not a shape.
            raise ValueError(f"tensor {tensor.name!r}: dims[{i}] is {d}; a dimension cannot be negative")

    tensor_dtype = tensor.data_type
    np_dtype = _dtypes.tensor_dtype_to_np_dtype(tensor_dtype)
    storage_np_dtype = _dtypes.tensor_dtype_to_np_dtype(_dtypes.tensor_dtype_to_storage_tensor_dtype(tensor_dtype))
    storage_field = _dtypes.tensor_dtype_to_field(tensor_dtype)

    if tensor_dtype == _TensorProto.STRING:
        utf8_strings = getattr(tensor, storage_field)
        ss = [s.decode("utf-8") for s in utf8_strings]
        return np.asarray(ss).astype(np_dtype).reshape(dims)

    from onnxio import external_data_helper

    # External data is read without changing the tensor, as onnx does:
    # writing it into raw_data would leave data_location stale.
    raw_data = None
    if external_data_helper.uses_external_data(tensor):
        raw_data = external_data_helper._read_external_data_bytes(tensor, base_dir)
    else:
        raw_data = _raw_payload(tensor)

    if raw_data is not None:
        if not _LITTLE:
            raw_data = np.frombuffer(raw_data, dtype=np_dtype).byteswap().tobytes()

        if tensor_dtype in _PACKED_4BIT:
            data = np.frombuffer(raw_data, dtype=np.uint8)
            return _unpack_4bit(data, dims).view(np_dtype)

        if tensor_dtype in _PACKED_2BIT:
            data = np.frombuffer(raw_data, dtype=np.uint8)
            return _unpack_2bit(data, dims).view(np_dtype)

        if tensor_dtype in _PACKED_6BIT:
            # raw_data is always the packed stream: sniffing the length
            # would be ambiguous (3 elements pack into 3 bytes).
            data = np.frombuffer(raw_data, dtype=np.uint8)
            return _unpack_6bit(data, dims).view(np_dtype)

        # A memoryview of the payload makes this a view, not a copy.
        return np.frombuffer(raw_data, dtype=np_dtype).reshape(dims)

    if tensor_dtype in {
        _TensorProto.BFLOAT16,
        _TensorProto.FLOAT16,
        _TensorProto.INT16,
        _TensorProto.UINT16,
    }:
        return (
            np.array(tensor.int32_data, dtype=np.int32)
            .view(np.uint32)
            .astype(np.uint16)
            .reshape(dims)
            .view(np_dtype)
        )

    if tensor_dtype in {
        _TensorProto.FLOAT8E4M3FN,
        _TensorProto.FLOAT8E4M3FNUZ,
        _TensorProto.FLOAT8E5M2,
        _TensorProto.FLOAT8E5M2FNUZ,
        _TensorProto.FLOAT8E8M0,
        _TensorProto.BOOL,
    }:
        return (
            np.array(tensor.int32_data, dtype=np.int32)
            .view(np.uint32)
            .astype(np.uint8)
            .view(np_dtype)
            .reshape(dims)
        )

    if tensor_dtype in _PACKED_6BIT:
        # Only the low 6 bits of each int32_data entry count.
        return (
            (np.array(tensor.int32_data, dtype=np.int32).view(np.uint32).astype(np.uint8) & 0x3F)
            .view(np_dtype)
            .reshape(dims)
        )

    if tensor_dtype in _PACKED_4BIT:
        data = np.array(tensor.int32_data, dtype=np.int32).view(np.uint32).astype(np.uint8)
        return _unpack_4bit(data, dims).view(np_dtype)

    if tensor_dtype in _PACKED_2BIT:
        data = np.array(tensor.int32_data, dtype=np.int32).view(np.uint32).astype(np.uint8)
        return _unpack_2bit(data, dims).view(np_dtype)

    data = getattr(tensor, storage_field)
    if tensor_dtype in (_TensorProto.COMPLEX64, _TensorProto.COMPLEX128):
        return np.array(data, dtype=storage_np_dtype).view(dtype=np_dtype).reshape(dims)

    return np.asarray(data, dtype=storage_np_dtype).astype(np_dtype).reshape(dims)


def tobytes_little_endian(array: np.ndarray) -> bytes:
    """The bytes of `array` in C order and little-endian byte order."""
    if array.dtype.byteorder == ">" or (sys.byteorder == "big" and array.dtype.byteorder == "="):
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.tobytes()


def from_array(array: np.ndarray, /, name: str | None = None) -> Any:
    """Convert a numpy array to a new TensorProto.

    Args:
        array: any array whose dtype has a TensorProto type (see
            onnxio.helper.np_dtype_to_tensor_dtype); str/object arrays become STRING
            tensors (elements must be str or bytes).
        name: the tensor's name (set when non-empty).

    Returns:
        A TensorProto with dims = array.shape and the little-endian payload in
        raw_data (4/2/6-bit types packed), copied once: the tensor does not
        share memory with `array`. STRING tensors fill string_data.

    Raises:
        ValueError: a dtype with no TensorProto type.
        NotImplementedError: an object array element that is not str/bytes.
    """
    tensor = _TensorProto()
    tensor.dims.extend(array.shape)
    if name:
        tensor.name = name
    if array.dtype == object or np.issubdtype(array.dtype, np.str_):
        tensor.data_type = _TensorProto.STRING
        flat_array = array.flatten()
        strings = []
        for e in flat_array:
            if isinstance(e, str):
                strings.append(e.encode("utf-8"))
            elif isinstance(e, bytes):
                strings.append(e)
            else:
                raise NotImplementedError(
                    f"Unrecognized object in the object array, expect a string, or array of bytes: {type(e)}"
                )
        tensor.string_data.extend(strings)
        return tensor

    dtype = _dtypes.np_dtype_to_tensor_dtype(array.dtype)
    if dtype in _PACKED_4BIT:
        array = _pack_4bitx2(array)
    if dtype in _PACKED_2BIT:
        array = _pack_2bitx4(array)
    if dtype in _PACKED_6BIT:
        array = _pack_6bit(array.view(np.uint8))

    _set_raw_data(tensor, _little_endian_buffer(array))
    tensor.data_type = dtype
    return tensor


def to_list(sequence: Any) -> list[Any]:
    """Convert a SequenceProto to a list (of arrays, lists or dicts).
    TypeError for an unsupported elem_type."""
    elem_type = sequence.elem_type
    if elem_type == _SequenceProto.TENSOR:
        return [to_array(v) for v in sequence.tensor_values]
    if elem_type == _SequenceProto.SPARSE_TENSOR:
        return [to_array(v) for v in sequence.sparse_tensor_values]
    if elem_type == _SequenceProto.SEQUENCE:
        return [to_list(v) for v in sequence.sequence_values]
    if elem_type == _SequenceProto.MAP:
        return [to_dict(v) for v in sequence.map_values]
    raise TypeError("The element type in the input sequence is not supported.")


def from_list(lst: list[Any], name: str | None = None, dtype: int | None = None) -> Any:
    """Convert a list to a SequenceProto: dicts -> MAP, lists -> SEQUENCE,
    anything else -> TENSOR (through np.asarray); `dtype` (a
    SequenceProto.DataType) forces the element type, needed for an empty
    list that is not a list of tensors. TypeError for mixed element types."""
    sequence = _SequenceProto()
    if name:
        sequence.name = name

    if dtype is not None:
        elem_type = dtype
    elif len(lst) > 0:
        first_elem = lst[0]
        if isinstance(first_elem, dict):
            elem_type = _SequenceProto.MAP
        elif isinstance(first_elem, list):
            elem_type = _SequenceProto.SEQUENCE
        else:
            elem_type = _SequenceProto.TENSOR
    else:
        elem_type = _SequenceProto.TENSOR
    sequence.elem_type = elem_type

    if (len(lst) > 0) and not all(isinstance(elem, type(lst[0])) for elem in lst):
        raise TypeError(
            "The element type in the input list is not the same "
            "for all elements and therefore is not supported as a sequence."
        )

    if elem_type == _SequenceProto.TENSOR:
        for tensor in lst:
            sequence.tensor_values.extend([from_array(np.asarray(tensor))])
    elif elem_type == _SequenceProto.SEQUENCE:
        for seq in lst:
            sequence.sequence_values.extend([from_list(seq)])
    elif elem_type == _SequenceProto.MAP:
        for mapping in lst:
            sequence.map_values.extend([from_dict(mapping)])
    else:
        raise TypeError(
            "The element type in the input list is not a tensor, sequence, or map and is not supported."
        )
    return sequence


def to_dict(map_proto: Any) -> dict[Any, Any]:
    """Convert a MapProto to a dict. IndexError when the numbers of keys and
    values differ."""
    key_list: list[Any] = []
    if map_proto.key_type == _TensorProto.STRING:
        key_list = list(map_proto.string_keys)
    else:
        key_list = list(map_proto.keys)

    value_list = to_list(map_proto.values)
    if len(key_list) != len(value_list):
        raise IndexError(
            f"Length of keys and values for MapProto (map name: {map_proto.name}) are not the same."
        )
    return dict(zip(key_list, value_list))


def from_dict(dict_: dict[Any, Any], name: str | None = None) -> Any:
    """Convert a non-empty dict with keys of one integer or string type and
    values of one type to a MapProto. ValueError for an empty dict,
    TypeError for mixed or unsupported key/value types."""
    map_proto = _MapProto()
    if name:
        map_proto.name = name
    if not dict_:
        raise ValueError("Cannot convert an empty dictionary to MapProto.")
    keys = list(dict_)
    raw_key_type = np.result_type(keys[0])
    key_type = _dtypes.np_dtype_to_tensor_dtype(raw_key_type)

    valid_key_int_types = {
        _TensorProto.INT8,
        _TensorProto.INT16,
        _TensorProto.INT32,
        _TensorProto.INT64,
        _TensorProto.UINT8,
        _TensorProto.UINT16,
        _TensorProto.UINT32,
        _TensorProto.UINT64,
    }

    if not (all(np.result_type(key) == raw_key_type for key in keys)):
        raise TypeError(
            "The key type in the input dictionary is not the same "
            "for all keys and therefore is not valid as a map."
        )

    values = list(dict_.values())
    raw_value_type = np.result_type(values[0])
    if not all(np.result_type(val) == raw_value_type for val in values):
        raise TypeError(
            "The value type in the input dictionary is not the same "
            "for all values and therefore is not valid as a map."
        )

    value_seq = from_list(values)

    map_proto.key_type = key_type
    if key_type == _TensorProto.STRING:
        map_proto.string_keys.extend(keys)
    elif key_type in valid_key_int_types:
        map_proto.keys.extend(keys)
    else:
        raise TypeError(f"Unsupported map key type: {key_type}")
    map_proto.values.CopyFrom(value_seq)
    return map_proto


def to_optional(optional: Any) -> Any | None:
    """Convert an OptionalProto to its value (array, list, dict, or None
    for UNDEFINED). TypeError for an unsupported elem_type."""
    elem_type = optional.elem_type
    if elem_type == _OptionalProto.UNDEFINED:
        return None
    if elem_type == _OptionalProto.TENSOR:
        return to_array(optional.tensor_value)
    if elem_type == _OptionalProto.SPARSE_TENSOR:
        return to_array(optional.sparse_tensor_value)
    if elem_type == _OptionalProto.SEQUENCE:
        return to_list(optional.sequence_value)
    if elem_type == _OptionalProto.MAP:
        return to_dict(optional.map_value)
    if elem_type == _OptionalProto.OPTIONAL:
        return to_optional(optional.optional_value)
    raise TypeError("The element type in the input optional is not supported.")


def from_optional(opt: Any | None, name: str | None = None, dtype: int | None = None) -> Any:
    """Convert a value to an OptionalProto: dict -> MAP, list -> SEQUENCE,
    None -> UNDEFINED, else TENSOR; `dtype` (an OptionalProto.DataType)
    forces the type. TypeError for an invalid dtype or an unsupported one."""
    optional = _OptionalProto()
    if name:
        optional.name = name

    if dtype is not None:
        if dtype not in _OptionalProto.DataType.values():
            raise TypeError(f"{dtype} must be a valid OptionalProto.DataType.")
        elem_type = dtype
    elif isinstance(opt, dict):
        elem_type = _OptionalProto.MAP
    elif isinstance(opt, list):
        elem_type = _OptionalProto.SEQUENCE
    elif opt is None:
        elem_type = _OptionalProto.UNDEFINED
    else:
        elem_type = _OptionalProto.TENSOR

    optional.elem_type = elem_type

    if opt is not None:
        if elem_type == _OptionalProto.TENSOR:
            optional.tensor_value.CopyFrom(from_array(opt))
        elif elem_type == _OptionalProto.SEQUENCE:
            optional.sequence_value.CopyFrom(from_list(opt))
        elif elem_type == _OptionalProto.MAP:
            optional.map_value.CopyFrom(from_dict(opt))
        else:
            raise TypeError(
                "The element type in the input is not a tensor, sequence, or map and is not supported."
            )
    return optional


def create_random_int(input_shape: tuple[int], dtype: np.dtype, seed: int = 1) -> np.ndarray:
    """A random integer array of `input_shape` and integer `dtype` (values
    within the int32 range), seeded with np.random.seed(seed) as onnx does.
    TypeError for a non-integer dtype."""
    np.random.seed(seed)
    if dtype in (
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
    ):
        end = min(np.iinfo(dtype).max, np.iinfo(np.int32).max)
        start = max(np.iinfo(dtype).min, np.iinfo(np.int32).min)
        return np.random.randint(start, end, size=input_shape).astype(dtype)
    raise TypeError(f"{dtype} is not supported by create_random_int.")


def saturate_cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Cast x to dtype, clamping values outside its range to its min/max
    (integers are rounded first)."""
    if np.issubdtype(dtype, np.integer) or dtype in (
        ml_dtypes.int4,
        ml_dtypes.uint4,
        ml_dtypes.int2,
        ml_dtypes.uint2,
    ):
        info: ml_dtypes.iinfo | ml_dtypes.finfo = ml_dtypes.iinfo(dtype)
        x = np.round(x)
    else:
        info = ml_dtypes.finfo(dtype)

    return np.clip(x, info.min, info.max).astype(dtype)
