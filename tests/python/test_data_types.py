"""The library's data type table (src/datatype.def: onnxio_data_type_info,
onnxio_data_type_at; in Python _onnxio._data_types()) against independent
references, column by column, for every TensorProto.DataType value of the
installed onnx package:

- the rows: one per value but UNDEFINED, in the order of onnx's
  TENSOR_TYPE_MAP, with the enum's names and onnx.helper's storage types;
- numpy: onnx.helper.tensor_dtype_to_np_dtype's dtype (numpy's own, or
  ml_dtypes' for the small floats and the 4- and 2-bit integers);
- bits: numpy's itemsize, or ml_dtypes' iinfo / finfo bit width for the
  packed 4-, 2- and 6-bit types;
- the float formats: numpy's / ml_dtypes' finfo, and the value of every bit
  pattern of the floats of 16 bits and fewer as ml_dtypes / numpy read it;
- npy: numpy's own descr (numpy.lib.format.dtype_to_descr);
- safetensors: the dtype the safetensors package writes in a header for a
  tensor of that numpy dtype (and none where it refuses the dtype), and its
  writer's order of dtypes;
- DLPack: the type code and bits torch writes when it exports a tensor of
  that dtype, and the dtypes torch and numpy read from onnxio's exports;
- text: the name onnx's parser (PrimitiveTypeNameMap) reads as that type.
"""

import ctypes
import json
import struct

import ml_dtypes
import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import helper as oh

import onnxio
import onnxio.safetensors
from onnxio import _onnxio

ROWS = _onnxio._data_types()
BY_TYPE = {row["data_type"]: row for row in ROWS}
ONNX_TYPES = [(name, value) for name, value in onnx.TensorProto.DataType.items() if value != 0]
IDS = [name for name, _ in ONNX_TYPES]


def np_dtype(row):
    return np.dtype(getattr(ml_dtypes, row["numpy"]) if row["ml_dtypes"] else row["numpy"])


def test_one_row_per_data_type_in_onnx_order():
    from onnx import _mapping

    assert [row["data_type"] for row in ROWS] == list(_mapping.TENSOR_TYPE_MAP)
    assert sorted(BY_TYPE) == sorted(value for _, value in ONNX_TYPES)
    assert len(BY_TYPE) == len(ROWS)


@pytest.mark.parametrize("name,value", ONNX_TYPES, ids=IDS)
def test_name_storage_and_numpy_dtype(name, value):
    row = BY_TYPE[value]
    assert row["name"] == name
    assert row["storage"] == oh.tensor_dtype_to_storage_tensor_dtype(value)
    want = oh.tensor_dtype_to_np_dtype(value)
    assert row["numpy"] == want.name
    assert row["ml_dtypes"] == (want.type.__module__ == "ml_dtypes")
    assert np_dtype(row) == want


@pytest.mark.parametrize("name,value", ONNX_TYPES, ids=IDS)
def test_bits_and_element_kind(name, value):
    row = BY_TYPE[value]
    dt = oh.tensor_dtype_to_np_dtype(value)
    if dt.kind == "O":
        assert (row["bits"], row["element"]) == (0, "STRING")
        return
    kinds = {"b": "BOOL", "i": "INT", "u": "UINT", "f": "FLOAT", "c": "COMPLEX"}
    if row["ml_dtypes"]:
        try:
            info = ml_dtypes.iinfo(dt)
            kind = "INT" if info.min < 0 else "UINT"
        except ValueError:
            info = ml_dtypes.finfo(dt)
            kind = "FLOAT"
        assert row["bits"] == info.bits
        assert row["element"] == kind
    else:
        assert row["bits"] == dt.itemsize * 8
        assert row["element"] == kinds[dt.kind]


FLOATS = [(name, value) for name, value in ONNX_TYPES if BY_TYPE[value]["element"] in ("FLOAT", "COMPLEX")]


@pytest.mark.parametrize("name,value", FLOATS, ids=[n for n, _ in FLOATS])
def test_float_formats(name, value):
    row = BY_TYPE[value]
    dt = oh.tensor_dtype_to_np_dtype(value)
    info = ml_dtypes.finfo(dt) if row["ml_dtypes"] else np.finfo(dt)
    assert (row["exponent_bits"], row["mantissa_bits"]) == (info.nexp, info.nmant)
    # The smallest normal number: 2^(1 - bias), or 2^-bias where the
    # smallest exponent is a normal number too (no subnormals: FNU).
    assert info.minexp == (-row["exponent_bias"] if row["float_kind"] == "FNU" else 1 - row["exponent_bias"])


def reference_value(row, b):
    """The value of bit pattern b by the table's format facts (onnxio.h,
    onnxio_float_kind), in Python."""
    eb, mb, bias, kind = row["exponent_bits"], row["mantissa_bits"], row["exponent_bias"], row["float_kind"]
    emax, mmax = (1 << eb) - 1, (1 << mb) - 1
    e, m = (b >> mb) & emax, b & mmax
    neg = kind != "FNU" and (b >> (eb + mb)) & 1
    if kind == "IEEE" and e == emax:
        return np.nan if m else (-np.inf if neg else np.inf)
    if (kind == "FN" and e == emax and m == mmax) or (kind == "FNUZ" and neg and e == 0 and m == 0):
        return np.nan
    if kind == "FNU":
        return np.nan if e == emax else (1 + m / 2**mb) * 2.0 ** (e - bias)
    v = (m / 2**mb) * 2.0 ** (1 - bias) if e == 0 else (1 + m / 2**mb) * 2.0 ** (e - bias)
    return -v if neg else v


SMALL_FLOATS = [(n, v) for n, v in FLOATS if BY_TYPE[v]["element"] == "FLOAT" and BY_TYPE[v]["bits"] <= 16]


@pytest.mark.parametrize("name,value", SMALL_FLOATS, ids=[n for n, _ in SMALL_FLOATS])
def test_float_format_reads_every_bit_pattern_as_ml_dtypes_does(name, value):
    row = BY_TYPE[value]
    dt = oh.tensor_dtype_to_np_dtype(value)
    patterns = np.arange(1 << row["bits"], dtype=np.uint16 if row["bits"] == 16 else np.uint8)
    with np.errstate(invalid="ignore"):
        want = patterns.view(dt).astype(np.float64)
    got = np.array([reference_value(row, int(b)) for b in patterns])
    np.testing.assert_array_equal(got, want)
    assert {s for s in np.signbit(want[want == 0])} == {s for s in np.signbit(got[got == 0])}


@pytest.mark.parametrize("name,value", ONNX_TYPES, ids=IDS)
def test_npy_descr(name, value):
    row = BY_TYPE[value]
    dt = oh.tensor_dtype_to_np_dtype(value)
    if row["ml_dtypes"] or dt.kind == "O":
        assert row["npy"] is None  # numpy alone cannot read such a .npy file
    else:
        assert row["npy"] == np.lib.format.dtype_to_descr(dt)


def safetensors_header(specs):
    import safetensors

    buf = np.zeros(64, np.uint8)
    data = safetensors.serialize({k: safetensors.TensorSpec(dtype=d, shape=[2], data_ptr=buf.ctypes.data,
                                                             data_len=n) for k, (d, n) in specs.items()})
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + size])


@pytest.mark.parametrize("name,value", ONNX_TYPES, ids=IDS)
def test_safetensors_dtype(name, value):
    """The safetensors package names the header dtype of a tensor from its
    numpy / torch dtype name; the types it refuses have none here."""
    import safetensors

    row = BY_TYPE[value]
    if row["safetensors"] is None:
        with pytest.raises(safetensors.SafetensorError, match="Unknown dtype"):
            safetensors_header({"x": (row["numpy"], 1)})
    else:
        header = safetensors_header({"x": (row["numpy"], 2 * row["bits"] // 8)})
        assert header["x"]["dtype"] == row["safetensors"]


def test_safetensors_writer_orders_dtypes_as_safetensors_does(tmp_path):
    """onnxio's writer orders tensors by the rank of their dtype in the
    reference implementation's Dtype enum (larger first): the same order as
    safetensors' own writer for one tensor of every dtype both have."""
    rows = [row for row in ROWS if row["safetensors"]]
    names = {row["name"]: f"t{i:02d}" for i, row in enumerate(reversed(rows))}  # name order != dtype order
    want = safetensors_header({names[r["name"]]: (r["numpy"], 2 * r["bits"] // 8) for r in rows})
    inits = [onnxio.TensorProto(name=names[r["name"]], data_type=r["data_type"], dims=[2],
                                raw_data=bytes(2 * r["bits"] // 8)) for r in rows]
    model = onnxio.ModelProto(graph=onnxio.GraphProto(name="g", initializer=inits))
    path = tmp_path / "all.safetensors"
    onnxio.safetensors.save(model, path)
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    got = json.loads(data[8:8 + size])
    order = lambda h: sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"])  # noqa: E731
    assert order(got) == order(want)
    assert {k: got[k]["dtype"] for k in order(got)} == {k: want[k]["dtype"] for k in order(want)}


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def torch_dlpack_type(torch, dtype):
    """(code, bits, lanes) of the DLPack capsule torch exports for a tensor of `dtype`."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    capsule = torch.utils.dlpack.to_dlpack(torch.zeros(2, dtype=dtype))
    t = _DLTensor.from_address(get(capsule, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    return t.dtype.code, t.dtype.bits, t.dtype.lanes


@pytest.mark.parametrize("name,value", ONNX_TYPES, ids=IDS)
def test_dlpack_code(name, value):
    torch = pytest.importorskip("torch", reason="torch is not installed (requirements.txt: torch==2.13.0, CPU build)")
    row = BY_TYPE[value]
    if row["dlpack_code"] is None:
        t = onnxio.TensorProto(name="t", data_type=value, dims=[2], raw_data=b"\0\0")
        with pytest.raises(BufferError):
            t.__dlpack__()
        return
    torch_dtype = getattr(torch, row["numpy"])
    assert torch_dlpack_type(torch, torch_dtype) == (row["dlpack_code"], row["bits"], 1)
    a = np.zeros(3, np_dtype(row))
    t = onnxio.TensorProto.FromString(oh.make_tensor("t", value, [3], a.tobytes(), raw=True).SerializeToString())
    assert torch.from_dlpack(t).dtype == torch_dtype
    if not row["ml_dtypes"]:
        assert np.from_dlpack(t).dtype == np_dtype(row)


@pytest.mark.parametrize("name,value", ONNX_TYPES, ids=IDS)
def test_textual_syntax_name(name, value):
    text = BY_TYPE[value]["text"]
    source = f"g ({text}[2] x) => ({text}[2] y) {{ y = Identity(x) }}"
    assert onnx.parser.parse_graph(source).input[0].type.tensor_type.elem_type == value
    import onnxio.parser

    assert onnxio.parser.parse_graph(source).input[0].type.tensor_type.elem_type == value
