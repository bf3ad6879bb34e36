"""onnxio.numpy_helper against onnx.numpy_helper: numpy round trips for every
ONNX data type (same dtype, same bits, same serialized tensor), sequences,
maps and optionals, external data, and the view semantics of to_array
(onnxio returns a view of the payload where onnx copies):

- copy-mode load: the array is writable and IS the tensor's payload
  (writing into it changes what the model serializes);
- no_copy load: read-only;
- the array outlives its tensor and model.
"""

import gc
import os

import ml_dtypes
import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
import pytest

import onnxio
import onnxio.helper as xh
import onnxio.numpy_helper as xnh

OT = onnx.TensorProto
XT = onnxio.TensorProto
NUMERIC_TYPES = [pytest.param(v, id=k) for k, v in OT.DataType.items() if k not in ("UNDEFINED", "STRING")]


def sample(dt, shape, seed=0):
    """An array of onnx's dtype for data type dt, with extreme values, NaN
    where the type has one, negatives where it is signed."""
    n = int(np.prod(shape))
    rng = np.random.default_rng(seed * 100 + dt)
    np_dtype = oh.tensor_dtype_to_np_dtype(dt)
    if dt == OT.BOOL:
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt in (OT.COMPLEX64, OT.COMPLEX128):
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np_dtype).reshape(shape)
    if np.issubdtype(np_dtype, np.integer) or np_dtype in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                                            ml_dtypes.uint2):
        info = ml_dtypes.iinfo(np_dtype)
        vals = rng.integers(max(info.min, -(2**31)), min(info.max, 2**31 - 1), n, endpoint=True).astype(np_dtype)
        if n >= 2:
            vals[0], vals[-1] = info.min, info.max
        return vals.reshape(shape)
    info = ml_dtypes.finfo(np_dtype)
    vals = (rng.standard_normal(n) * min(float(info.max) / 4, 100.0)).astype(np_dtype)
    if n >= 3:
        vals[0], vals[1] = info.max, info.min
        if dt not in (OT.FLOAT4E2M1, OT.FLOAT6E2M3, OT.FLOAT6E3M2):  # these have no NaN
            vals[2] = np.nan
    return vals.reshape(shape)


def same_array(a, b):
    """Same dtype, shape and bits (NaN-safe)."""
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    if a.dtype == object:
        assert a.tolist() == b.tolist()
    else:
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def to_x(msg):
    return getattr(onnxio, type(msg).__name__).FromString(msg.SerializeToString())


SHAPES = [(2, 3), (5,), (), (0,), (3, 1, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
@pytest.mark.parametrize("dt", NUMERIC_TYPES)
def test_from_array_to_array_every_type(dt, shape):
    arr = sample(dt, shape)
    xt = xnh.from_array(arr, name="w")
    ot = onh.from_array(arr, name="w")
    assert xt.SerializeToString() == ot.SerializeToString()
    back = xnh.to_array(xt)
    same_array(back, onh.to_array(ot))
    same_array(back, arr)
    # onnxio's array does not share memory with the input array
    assert not np.shares_memory(back, arr)


@pytest.mark.parametrize("dt", NUMERIC_TYPES)
def test_to_array_of_field_storage_every_type(dt):
    """Tensors with values in float_data / int32_data / ... (make_tensor
    without raw), and the same tensors parsed from onnx's bytes."""
    arr = sample(dt, (2, 3), seed=1)
    ot = oh.make_tensor("t", dt, [2, 3], arr)
    xt = xh.make_tensor("t", dt, [2, 3], arr)
    assert xt.SerializeToString() == ot.SerializeToString()
    same_array(xnh.to_array(xt), onh.to_array(ot))
    same_array(xnh.to_array(to_x(ot)), onh.to_array(ot))


@pytest.mark.parametrize("dt", NUMERIC_TYPES)
def test_raw_tensors_from_onnx_bytes(dt):
    arr = sample(dt, (7,), seed=2)
    ot = oh.make_tensor("t", dt, [7], arr, raw=True)
    xt = to_x(ot)
    same_array(xnh.to_array(xt), onh.to_array(ot))


def test_non_contiguous_big_endian_and_fortran_arrays():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for arr in (base[:, ::2], base.T, np.asfortranarray(base), base[::-1], base[1:3, 2:5]):
        xt, ot = xnh.from_array(arr), onh.from_array(arr)
        assert xt.SerializeToString() == ot.SerializeToString()
        same_array(xnh.to_array(xt), onh.to_array(ot))
    # a big-endian dtype has no TensorProto type in onnx's table either
    with pytest.raises(ValueError):
        onh.from_array(base.astype(">f8"))
    with pytest.raises(ValueError):
        xnh.from_array(base.astype(">f8"))


def test_strings():
    for arr in (np.array(["a", "bé", ""], dtype=object), np.array([[b"x", "y"], ["", "z"]], dtype=object),
                np.array(["unicode", "str"]), np.array([], dtype=object)):
        xt, ot = xnh.from_array(arr, "s"), onh.from_array(arr, "s")
        assert xt.SerializeToString() == ot.SerializeToString()
        same_array(xnh.to_array(xt), onh.to_array(ot))
    with pytest.raises(NotImplementedError):
        xnh.from_array(np.array([1, "a"], dtype=object))
    with pytest.raises(NotImplementedError):
        onh.from_array(np.array([1, "a"], dtype=object))


def test_errors_like_onnx():
    with pytest.raises(ValueError):
        xnh.from_array(np.zeros(2, dtype="datetime64[s]"))
    t = onnxio.TensorProto(name="u")
    with pytest.raises(TypeError):
        xnh.to_array(t)
    bad = to_x(onnx.TensorProto(name="b", data_type=OT.FLOAT, dims=[3], raw_data=b"\0" * 8))
    with pytest.raises(ValueError):
        xnh.to_array(bad)
    seg = onnx.TensorProto(name="s", data_type=OT.FLOAT, dims=[1], float_data=[1.0])
    seg.segment.begin = 0
    with pytest.raises(ValueError):
        xnh.to_array(to_x(seg))
    short4 = onnx.TensorProto(name="p", data_type=OT.INT4, dims=[5], raw_data=b"\0")
    with pytest.raises(ValueError):
        onh.to_array(short4)
    with pytest.raises(ValueError):
        xnh.to_array(to_x(short4))


@pytest.mark.parametrize(
    "fields",
    [
        {"data_type": OT.FLOAT},  # the fuzzer's find: no data at all
        {"data_type": OT.FLOAT, "raw_data": b"\0" * 12},
        {"data_type": OT.INT32, "int32_data": [1, 2, 3]},
        {"data_type": OT.STRING, "string_data": [b"a", b"b"]},
    ],
)
def test_negative_dimension_is_refused(fields):
    # onnx reshapes to dims, so -1 takes whatever length the data has: the
    # array's shape is then not the tensor's dims (numpy is the witness).
    t = onnx.TensorProto(name="neg", dims=[-1], **fields)
    assert onh.to_array(t).shape != tuple(t.dims)
    with pytest.raises(ValueError, match=r"'neg': dims\[0\] is -1"):
        xnh.to_array(to_x(t))


def test_sequences_maps_optionals():
    lists = [
        [np.arange(3, dtype=np.int64), np.ones((2, 2), np.float32)],
        [[np.arange(2, dtype=np.int32)], [np.zeros(1, np.float64)]],
        [{1: np.arange(2)}, {2: np.arange(3)}],
        [],
    ]
    for lst in lists:
        xs, os_ = xnh.from_list(lst, name="l"), onh.from_list(lst, name="l")
        assert xs.SerializeToString() == os_.SerializeToString()
        assert repr(xnh.to_list(xs)) == repr(onh.to_list(os_))
    xs = xnh.from_list([], dtype=onnx.SequenceProto.MAP)
    assert xs.SerializeToString() == onh.from_list([], dtype=onnx.SequenceProto.MAP).SerializeToString()
    with pytest.raises(TypeError):
        xnh.from_list([np.arange(2), [1]])

    dicts = [{1: np.arange(2), 3: np.arange(2)}, {np.int8(1): np.arange(3)},
             {np.uint64(7): np.float32([1.5, 2.5])}]
    for d in dicts:
        xm, om = xnh.from_dict(d, name="m"), onh.from_dict(d, name="m")
        assert xm.SerializeToString() == om.SerializeToString()
        assert repr(xnh.to_dict(xm)) == repr(onh.to_dict(om))
    # string keys fail in onnx 1.23 too (np.result_type("a") is |S0, no TensorProto type)
    for bad in ({}, {1: np.arange(2), "x": np.arange(2)}, {1: np.arange(2), 2: 1.5}, {1.5: np.arange(2)},
                {"a": np.float32(1.0)}):
        with pytest.raises(Exception) as eo:
            onh.from_dict(bad)
        with pytest.raises(type(eo.value)):
            xnh.from_dict(bad)

    for opt, kw in [(None, {}), (np.arange(4, dtype=np.int16), {}), ([np.arange(2)], {}),
                    ({1: np.arange(2)}, {})]:
        xo, oo = xnh.from_optional(opt, name="o", **kw), onh.from_optional(opt, name="o", **kw)
        assert xo.SerializeToString() == oo.SerializeToString()
        assert repr(xnh.to_optional(xo)) == repr(onh.to_optional(oo))
    # an empty TENSOR optional: made the same, and unreadable on both sides
    xo = xnh.from_optional(None, dtype=onnx.OptionalProto.TENSOR)
    oo = onh.from_optional(None, dtype=onnx.OptionalProto.TENSOR)
    assert xo.SerializeToString() == oo.SerializeToString()
    with pytest.raises(TypeError):
        onh.to_optional(oo)
    with pytest.raises(TypeError):
        xnh.to_optional(xo)
    with pytest.raises(TypeError):
        xnh.from_optional(None, dtype=99)
    nested = oh.make_optional("n", onnx.OptionalProto.OPTIONAL, onh.from_optional(np.arange(2)))
    assert repr(xnh.to_optional(to_x(nested))) == repr(onh.to_optional(nested))


def test_conversions_and_packing_like_onnx():
    x = np.array([0.0, 1e-3, 0.3, 1.0, 3.5, 1e30, -2.0, np.nan, np.inf, 2.0**127 * 1.5], dtype=np.float32)
    for mode in ("up", "down", "nearest"):
        for sat in (True, False):
            same_array(xnh.to_float8e8m0(x, sat, mode), onh.to_float8e8m0(x, sat, mode))
    with pytest.raises(ValueError):
        xnh.to_float8e8m0(x, round_mode="bad")
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4, np.int8, np.uint16):
        same_array(xnh.saturate_cast(x * 100, dtype), onh.saturate_cast(x * 100, dtype))
    for dtype in (np.int8, np.uint64, np.int32):
        same_array(xnh.create_random_int((3, 4), dtype, seed=5), onh.create_random_int((3, 4), dtype, seed=5))
    with pytest.raises(TypeError):
        xnh.create_random_int((2,), np.float32)
    for arr in (np.arange(5, dtype=">i4"), np.arange(5, dtype="<i4"), np.arange(6.0).reshape(2, 3).T):
        assert xnh.tobytes_little_endian(arr) == onh.tobytes_little_endian(arr)
    for n in range(0, 10):
        v = np.arange(n, dtype=np.uint8) % 64
        assert xnh._pack_4bitx2(v % 16).tobytes() == onh._pack_4bitx2(v % 16).tobytes()
        assert xnh._pack_2bitx4(v % 4).tobytes() == onh._pack_2bitx4(v % 4).tobytes()
        assert xnh._pack_6bit(v).tobytes() == onh._pack_6bit(v).tobytes()
        same_array(xnh._unpack_6bit(onh._pack_6bit(v), [n]), v)


def test_external_data_with_base_dir(tmp_path):
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    (tmp_path / "w.bin").write_bytes(b"\xff" * 16 + arr.tobytes() + b"\xee" * 8)
    ot = onnx.TensorProto(name="w", data_type=OT.FLOAT, dims=[3, 4], data_location=OT.EXTERNAL)
    for k, v in (("location", "w.bin"), ("offset", "16"), ("length", str(arr.nbytes))):
        e = ot.external_data.add()
        e.key, e.value = k, v
    xt = to_x(ot)
    got = xnh.to_array(xt, base_dir=str(tmp_path))
    same_array(got, onh.to_array(ot, base_dir=str(tmp_path)))
    same_array(got, arr)
    # the tensor still describes external data (onnx does not change it either)
    assert xt.SerializeToString() == ot.SerializeToString()
    # a missing file fails on both sides
    with pytest.raises(Exception):
        onh.to_array(ot, base_dir=str(tmp_path / "nowhere"))
    with pytest.raises((OSError, ValueError)):
        xnh.to_array(xt, base_dir=str(tmp_path / "nowhere"))


# ---- views -----------------------------------------------------------------


def saved_model(tmp_path, arrays):
    inits = [onh.from_array(a, name=f"w{i}") for i, a in enumerate(arrays)]
    g = oh.make_graph([], "g", [], [oh.make_tensor_value_info("w0", OT.FLOAT, None)], inits)
    path = str(tmp_path / "m.onnx")
    onnx.save_model(oh.make_model(g), path)
    return path


def test_to_array_is_a_writable_view_after_copy_load(tmp_path):
    arr = np.arange(1000, dtype=np.float32).reshape(10, 100)
    path = saved_model(tmp_path, [arr, np.arange(5, dtype=np.int64)])
    m = onnxio.load(path)
    t = m.graph.initializer[0]
    a = xnh.to_array(t)
    same_array(a, arr)
    assert a.flags.writeable
    b = xnh.to_array(t)
    assert np.shares_memory(a, b)  # both are the payload, not copies
    a[0, 0] = 42.0
    assert xnh.to_array(t)[0, 0] == 42.0
    expected = arr.copy()
    expected[0, 0] = 42.0
    ref = onnx.load_model_from_string(m.SerializeToString())
    same_array(onh.to_array(ref.graph.initializer[0]), expected)


def test_to_array_view_outlives_model(tmp_path):
    arr = np.linspace(0, 1, 4096, dtype=np.float64)
    path = saved_model(tmp_path, [arr])
    m = onnxio.load(path)
    a = xnh.to_array(m.graph.initializer[0])
    del m
    gc.collect()
    for _ in range(3):  # churn the allocator: a dangling view would read reused memory
        onnxio.load(path)
        [np.ones(4096) for _ in range(20)]
    same_array(a, arr)


def test_to_array_read_only_after_no_copy_load(tmp_path):
    arr = np.arange(256, dtype=np.int32)
    path = saved_model(tmp_path, [arr])
    m = onnxio.load(path, no_copy=True)
    a = xnh.to_array(m.graph.initializer[0])
    same_array(a, arr)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 1
    del m
    gc.collect()
    same_array(a, arr)
    with open(path, "rb") as f:
        data = f.read()
    m2 = onnxio.load_model_from_string(data, no_copy=True)
    a2 = xnh.to_array(m2.graph.initializer[0])
    assert not a2.flags.writeable
    del m2, data
    gc.collect()
    same_array(a2, arr)


def test_views_of_tensors_made_in_python():
    arr = np.arange(6, dtype=np.float32)
    t = xnh.from_array(arr)
    a = xnh.to_array(t)
    assert a.flags.writeable  # from_array copied into a payload the tensor owns
    arr[0] = 99.0  # the tensor does not share the input array
    assert xnh.to_array(t)[0] == 0.0
    # raw=True from bytes keeps the bytes object: its view is read-only
    tb = xh.make_tensor("b", XT.FLOAT, [6], np.arange(6, dtype=np.float32).tobytes(), raw=True)
    ab = xnh.to_array(tb)
    assert not ab.flags.writeable
    same_array(ab, np.arange(6, dtype=np.float32))
    # packed types come out unpacked: a copy, never a view
    t4 = xnh.from_array(np.array([1, -2, 3], dtype=ml_dtypes.int4))
    a4 = xnh.to_array(t4)
    a4[0] = 0
    same_array(xnh.to_array(t4), np.array([1, -2, 3], dtype=ml_dtypes.int4))


def test_no_copy_of_large_file_payload(tmp_path):
    """The no_copy view reads the mapped file: the same bytes onnx reads."""
    arr = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    path = saved_model(tmp_path, [arr])
    m = onnxio.load(path, no_copy=True)
    a = xnh.to_array(m.graph.initializer[0])
    ref = onh.to_array(onnx.load(path).graph.initializer[0])
    same_array(a, ref)
    assert os.path.getsize(path) > arr.nbytes
