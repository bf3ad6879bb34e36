"""DLPack export of tensor payloads: onnxio.TensorProto.__dlpack__ and
__dlpack_device__ (python/ext/dlpack.c), for torch.from_dlpack and
np.from_dlpack.

References: torch and numpy as the consumers; the onnx package builds the
tensors and models and reads back what onnxio saved; numpy / ml_dtypes
arrays made before the export are the expected values; the payload address
comes from numpy's view of the payload (numpy_helper.to_array, the buffer
protocol); the DLPack structs are read with ctypes in upstream's layout
(dlpack.h, version 1.1), independently of the extension's header; a second
torch module trained from copies of the same weights is the reference of
the training step.
"""

import ctypes
import gc

import ml_dtypes
import numpy as np
import onnx
from onnx import helper as oh
from onnx import numpy_helper as onh
import pytest

import onnxio
from conftest import needs
from onnxio import numpy_helper

torch = needs("torch", "the consumer of the DLPack capsules")

READ_ONLY = 1 << 0
IS_COPIED = 1 << 1


# ---- the DLPack structs, upstream's layout (dlpack.h 1.1) ---------------------------


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


class _Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def capsule_struct(capsule):
    """The managed tensor inside an unconsumed capsule (versioned or legacy).
    The capsule must outlive the result."""
    name = _get_name(capsule)
    kind = {b"dltensor_versioned": _Versioned, b"dltensor": _Legacy}[name]
    return kind.from_address(_get_pointer(capsule, name))


def payload_address(t):
    """The address of t's raw_data, from numpy's buffer-protocol view."""
    return numpy_helper.to_array(t).__array_interface__["data"][0]


def data_file_mapped(path):
    with open("/proc/self/maps") as f:
        return any(line.rstrip("\n").endswith(str(path)) for line in f)


# ---- models ---------------------------------------------------------------------


def make_model(seed=0):
    """An onnx model (built by the onnx package) of float32 initializers of
    several sizes, and their arrays."""
    rng = np.random.default_rng(seed)
    arrays = {"big": rng.standard_normal((64, 33)).astype(np.float32),
              "small": rng.standard_normal((3, 5)).astype(np.float32),
              "ints": rng.integers(-1000, 1000, (7,)).astype(np.int64)}
    inits = [onh.from_array(a, name) for name, a in arrays.items()]
    nodes = [oh.make_node("Identity", [n], [n + "_out"]) for n in arrays]
    outs = [oh.make_tensor_value_info(n + "_out", oh.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in arrays.items()]
    return oh.make_model(oh.make_graph(nodes, "g", [], outs, inits)), arrays


def save_external(model, path, alignment=64):
    """onnxio saves the onnx package's model with every payload in an
    external data file at aligned offsets; returns the data file's path."""
    onnxio.save(onnxio.from_onnx(model), str(path), save_as_external_data=True, location=path.name + ".data",
                size_threshold=0, alignment=alignment)
    return path.parent / (path.name + ".data")


@pytest.fixture
def copy_loaded(tmp_path):
    model, arrays = make_model()
    p = tmp_path / "m.onnx"
    onnx.save(model, str(p))
    return onnxio.load(str(p)), arrays


@pytest.fixture
def no_copy_external(tmp_path):
    model, arrays = make_model(seed=1)
    p = tmp_path / "ext.onnx"
    data = save_external(model, p)
    return onnxio.load(str(p), no_copy=True), arrays, data


# ---- sharing --------------------------------------------------------------------


def test_device():
    t = onnxio.TensorProto.FromString(onh.from_array(np.zeros(2, np.float32), "z").SerializeToString())
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU, device 0
    assert torch.from_dlpack(t).device == torch.device("cpu")


def test_copy_load_shares_memory_with_torch(copy_loaded):
    m, arrays = copy_loaded
    for init in m.graph.initializer:
        x = torch.from_dlpack(init)
        assert x.data_ptr() == payload_address(init), init.name
        assert x.dtype == {"big": torch.float32, "small": torch.float32, "ints": torch.int64}[init.name]
        assert tuple(x.shape) == arrays[init.name].shape
        np.testing.assert_array_equal(x.numpy(), arrays[init.name])
        np.testing.assert_array_equal(x.numpy(), numpy_helper.to_array(init))
        cap = init.__dlpack__(max_version=(1, 0))
        s = capsule_struct(cap)
        assert (s.major, s.minor) >= (1, 0) and s.flags == 0  # writable, not a copy
        assert s.dl_tensor.byte_offset == 0 and s.dl_tensor.data == x.data_ptr()
        assert [s.dl_tensor.shape[i] for i in range(s.dl_tensor.ndim)] == list(arrays[init.name].shape)


def test_writes_through_torch_reach_raw_data(copy_loaded):
    m, arrays = copy_loaded
    big = next(i for i in m.graph.initializer if i.name == "big")
    x = torch.from_dlpack(big)
    x[3, 4] = 1234.5
    x[-1] *= 2
    expected = arrays["big"].copy()
    expected[3, 4] = 1234.5
    expected[-1] *= 2
    assert big.raw_data == expected.tobytes()
    # and onnx reads the saved model with the change
    assert np.array_equal(onh.to_array(onnx.load_model_from_string(m.SerializeToString()).graph.initializer[0]),
                          expected)


def test_numpy_from_dlpack_shares(copy_loaded):
    m, arrays = copy_loaded
    small = next(i for i in m.graph.initializer if i.name == "small")
    a = np.from_dlpack(small)
    assert a.__array_interface__["data"][0] == payload_address(small)
    assert a.flags.writeable
    np.testing.assert_array_equal(a, arrays["small"])
    a[0, 0] = -7.25
    assert np.frombuffer(small.raw_data, np.float32)[0] == -7.25


def test_no_copy_external_shares_read_only(no_copy_external):
    m, arrays, data = no_copy_external
    before = data.read_bytes()
    for init in m.graph.initializer:
        addr = payload_address(init)
        assert addr % 64 == 0, "alignment=64 in the data file, the mapping page aligned"
        x = torch.from_dlpack(init)
        assert x.data_ptr() == addr
        np.testing.assert_array_equal(x.numpy(), arrays[init.name])
        a = np.from_dlpack(init)
        assert a.__array_interface__["data"][0] == addr
        assert not a.flags.writeable  # numpy honours DLPack's read-only flag
        np.testing.assert_array_equal(a, arrays[init.name])
        s = capsule_struct(init.__dlpack__(max_version=(1, 0)))
        assert s.flags == READ_ONLY
    assert data.read_bytes() == before


def test_legacy_capsule(copy_loaded, no_copy_external):
    m, arrays = copy_loaded
    init = m.graph.initializer[0]
    cap = init.__dlpack__()
    assert _get_name(cap) == b"dltensor"
    s = capsule_struct(cap)
    assert s.dl_tensor.data == payload_address(init)
    assert (s.dl_tensor.dtype.code, s.dl_tensor.dtype.bits, s.dl_tensor.dtype.lanes) == (2, 32, 1)  # kDLFloat
    assert [s.dl_tensor.strides[i] for i in range(s.dl_tensor.ndim)] == [33, 1]
    # A read-only payload: a legacy capsule cannot carry the flag, so it is a copy...
    ro, ro_arrays, _ = no_copy_external
    init = ro.graph.initializer[0]
    s = capsule_struct(cap := init.__dlpack__())
    assert s.dl_tensor.data != payload_address(init)
    assert bytes((ctypes.c_char * ro_arrays[init.name].nbytes).from_address(s.dl_tensor.data)) == \
        ro_arrays[init.name].tobytes()
    del cap
    # ...or a refusal with copy=False.
    with pytest.raises(BufferError, match=f"tensor '{init.name}'.*read-only"):
        init.__dlpack__(copy=False)


def _unaligned_inline_model(tmp_path, want_aligned):
    """A no_copy load of an inline float32 payload whose address is (or is
    not) a multiple of 4: the name's length moves raw_data in the file."""
    a = np.arange(300, dtype=np.float32)
    for k in range(1, 9):
        model = oh.make_model(oh.make_graph([], "g", [], [], [onh.from_array(a, "w" * k)]))
        p = tmp_path / f"inline{k}.onnx"
        onnx.save(model, str(p))
        m = onnxio.load(str(p), no_copy=True)
        if (payload_address(m.graph.initializer[0]) % 4 == 0) == want_aligned:
            return m, a
    pytest.fail("no name length gave the wanted alignment")


def test_no_copy_inline_aligned_is_shared(tmp_path):
    m, a = _unaligned_inline_model(tmp_path, want_aligned=True)
    init = m.graph.initializer[0]
    x = torch.from_dlpack(init)
    assert x.data_ptr() == payload_address(init)
    np.testing.assert_array_equal(x.numpy(), a)


def test_no_copy_unaligned_is_copied_or_refused(tmp_path):
    m, a = _unaligned_inline_model(tmp_path, want_aligned=False)
    init = m.graph.initializer[0]
    x = torch.from_dlpack(init)  # copy=None: a copy, since the address does not suit float32
    assert x.data_ptr() != payload_address(init) and x.data_ptr() % 64 == 0
    np.testing.assert_array_equal(x.numpy(), a)
    s = capsule_struct(cap := init.__dlpack__(max_version=(1, 0)))
    assert s.flags == IS_COPIED  # a private copy: writable, flagged as copied
    del cap
    with pytest.raises(BufferError, match=f"tensor '{init.name}' \\(FLOAT\\).*not a multiple of its element size"):
        init.__dlpack__(max_version=(1, 0), copy=False)
    # numpy_helper.to_array stays the (unaligned, read-only) view of the mapping
    v = numpy_helper.to_array(init)
    assert not v.flags.aligned and not v.flags.writeable
    np.testing.assert_array_equal(v, a)


def test_copy_true_always_copies(copy_loaded):
    m, arrays = copy_loaded
    init = m.graph.initializer[0]
    x = torch.from_dlpack(init, copy=True)
    assert x.data_ptr() != payload_address(init)
    x[0, 0] = 99.0
    assert numpy_helper.to_array(init)[0, 0] == arrays[init.name][0, 0]
    s = capsule_struct(cap := init.__dlpack__(max_version=(1, 0), copy=True))
    assert s.flags == IS_COPIED
    del cap


# ---- training: weights from a no_copy model, updated in place, saved ------------------


def test_train_one_step_in_place_and_save(tmp_path):
    rng = np.random.default_rng(7)
    weights = {"fc1.weight": rng.standard_normal((16, 8)).astype(np.float32),
               "fc1.bias": rng.standard_normal(16).astype(np.float32),
               "fc2.weight": rng.standard_normal((3, 16)).astype(np.float32),
               "fc2.bias": rng.standard_normal(3).astype(np.float32)}
    nodes = [oh.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1),
             oh.make_node("Relu", ["h"], ["r"]),
             oh.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["y"], transB=1)]
    graph = oh.make_graph(nodes, "mlp", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 8])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, 3])],
                          [onh.from_array(w, n) for n, w in weights.items()])
    path = tmp_path / "mlp.onnx"
    data_file = save_external(oh.make_model(graph), path)
    on_disk = data_file.read_bytes()
    model = onnxio.load(str(path), no_copy=True)
    inits = {t.name: t for t in model.graph.initializer}

    def mlp():
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))

    net, ref = mlp(), mlp()
    for name, p in zip(weights, list(net.parameters())):
        shared = torch.from_dlpack(inits[name])
        assert shared.data_ptr() == payload_address(inits[name])
        p.data = shared  # the parameter now is the payload's memory
    for name, p in zip(weights, list(ref.parameters())):
        p.data = torch.from_numpy(weights[name].copy())
    x = torch.from_numpy(rng.standard_normal((5, 8)).astype(np.float32))
    target = torch.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
    for module in (net, ref):
        opt = torch.optim.SGD(module.parameters(), lr=0.1)
        opt.zero_grad()
        torch.nn.functional.mse_loss(module(x), target).backward()
        opt.step()

    trained = {name: p.detach().numpy() for name, p in zip(weights, net.parameters())}
    for name, p in zip(weights, ref.parameters()):
        np.testing.assert_array_equal(trained[name], p.detach().numpy())
        assert not np.array_equal(trained[name], weights[name]), f"{name} did not change"
        # the step updated the payload in place: the model holds the trained values
        assert dict(zip(weights, net.parameters()))[name].data_ptr() == payload_address(inits[name])
        np.testing.assert_array_equal(numpy_helper.to_array(inits[name]), trained[name])

    out = tmp_path / "trained.onnx"
    onnxio.save(model, str(out))
    saved = {t.name: onh.to_array(t) for t in onnx.load(str(out)).graph.initializer}
    assert saved.keys() == weights.keys()
    for name in weights:
        np.testing.assert_array_equal(saved[name], trained[name])
    onnx.checker.check_model(onnx.load(str(out)))
    # the mapping is private: the data file on disk still has the old weights
    assert data_file.read_bytes() == on_disk


# ---- element types ----------------------------------------------------------------

_T = onnx.TensorProto
DTYPES = [
    (_T.BOOL, np.bool_, torch.bool),
    (_T.INT8, np.int8, torch.int8),
    (_T.INT16, np.int16, torch.int16),
    (_T.INT32, np.int32, torch.int32),
    (_T.INT64, np.int64, torch.int64),
    (_T.UINT8, np.uint8, torch.uint8),
    (_T.UINT16, np.uint16, torch.uint16),
    (_T.UINT32, np.uint32, torch.uint32),
    (_T.UINT64, np.uint64, torch.uint64),
    (_T.FLOAT16, np.float16, torch.float16),
    (_T.FLOAT, np.float32, torch.float32),
    (_T.DOUBLE, np.float64, torch.float64),
    (_T.COMPLEX64, np.complex64, torch.complex64),
    (_T.COMPLEX128, np.complex128, torch.complex128),
    (_T.BFLOAT16, ml_dtypes.bfloat16, torch.bfloat16),
    (_T.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn),
    (_T.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, torch.float8_e4m3fnuz),
    (_T.FLOAT8E5M2, ml_dtypes.float8_e5m2, torch.float8_e5m2),
    (_T.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, torch.float8_e5m2fnuz),
    (_T.FLOAT8E8M0, ml_dtypes.float8_e8m0fnu, torch.float8_e8m0fnu),
]


def _values(np_dtype, shape):
    rng = np.random.default_rng(3)
    if np_dtype is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(np.dtype(np_dtype), np.integer):
        info = np.iinfo(np_dtype)
        return rng.integers(info.min, info.max, shape, dtype=np_dtype, endpoint=True)
    if np.issubdtype(np.dtype(np_dtype), np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np_dtype)
    return (np.abs(rng.standard_normal(shape)) * 2 + 0.25).astype(np.float32).astype(np_dtype)


@pytest.mark.parametrize("onnx_type,np_dtype,torch_dtype", DTYPES,
                         ids=[onnx.TensorProto.DataType.Name(d[0]) for d in DTYPES])
def test_dtypes(onnx_type, np_dtype, torch_dtype):
    a = _values(np_dtype, (4, 6))
    ref = oh.make_tensor("t", onnx_type, a.shape, a.tobytes(), raw=True)  # the onnx package's tensor
    t = onnxio.TensorProto.FromString(ref.SerializeToString())
    x = torch.from_dlpack(t)
    assert x.dtype == torch_dtype
    assert tuple(x.shape) == a.shape
    assert x.data_ptr() == payload_address(t)
    assert x.view(torch.uint8).numpy().tobytes() == a.tobytes()
    if torch_dtype in (torch.float16, torch.float32, torch.float64, torch.bfloat16):
        np.testing.assert_array_equal(x.float().numpy(), a.astype(np.float32))
    if np_dtype.__module__ == "numpy":  # not the ml_dtypes types, which numpy's from_dlpack does not know
        n = np.from_dlpack(t)
        assert n.dtype == np.dtype(np_dtype)
        np.testing.assert_array_equal(n, a)
        np.testing.assert_array_equal(n, onh.to_array(ref))


def test_scalar_and_empty():
    t = onnxio.TensorProto.FromString(onh.from_array(np.array(2.5, np.float64), "s").SerializeToString())
    assert torch.from_dlpack(t).shape == () and torch.from_dlpack(t).item() == 2.5
    e = onnxio.TensorProto.FromString(onh.from_array(np.zeros((0, 3), np.float32), "e").SerializeToString())
    assert tuple(torch.from_dlpack(e).shape) == (0, 3)
    assert np.from_dlpack(e).shape == (0, 3)


# ---- refusals ------------------------------------------------------------------------


@pytest.mark.parametrize("onnx_type,name", [(_T.INT4, "INT4"), (_T.UINT4, "UINT4"), (_T.FLOAT4E2M1, "FLOAT4E2M1"),
                                            (_T.INT2, "INT2"), (_T.UINT2, "UINT2")])
def test_packed_types_are_refused(onnx_type, name):
    t = onnxio.TensorProto(name="packed", data_type=onnx_type, dims=[4], raw_data=b"\x12\x34")
    with pytest.raises(BufferError, match=f"tensor 'packed' \\({name}\\).*packed several to a byte"):
        torch.from_dlpack(t)


def test_string_tensor_is_refused():
    ref = oh.make_tensor("names", onnx.TensorProto.STRING, [2], [b"a", b"bc"])
    t = onnxio.TensorProto.FromString(ref.SerializeToString())
    with pytest.raises(BufferError, match="tensor 'names' \\(STRING\\).*strings"):
        torch.from_dlpack(t)
    with pytest.raises(BufferError, match="tensor 'names'"):
        np.from_dlpack(t)


def test_skipped_payload_is_refused(tmp_path):
    model, _ = make_model()
    p = tmp_path / "m.onnx"
    onnx.save(model, str(p))
    m = onnxio.load(str(p), skip_raw_data=True)
    with pytest.raises(BufferError, match="tensor 'big' \\(FLOAT\\).*skipped at load"):
        torch.from_dlpack(m.graph.initializer[0])


def test_unloaded_external_data_is_refused(tmp_path):
    model, _ = make_model()
    p = tmp_path / "ext.onnx"
    save_external(model, p)
    m = onnxio.load(str(p), load_external_data=False)
    with pytest.raises(BufferError, match="tensor 'big' \\(FLOAT\\).*external data is not loaded"):
        torch.from_dlpack(m.graph.initializer[0])


def test_typed_fields_and_bad_sizes_are_refused():
    typed = onnxio.TensorProto.FromString(
        oh.make_tensor("typed", onnx.TensorProto.FLOAT, [2], [1.0, 2.0]).SerializeToString())
    with pytest.raises(BufferError, match="tensor 'typed'.*typed field"):
        torch.from_dlpack(typed)
    short = onnxio.TensorProto(name="short", data_type=onnxio.TensorProto.FLOAT, dims=[3], raw_data=b"\0" * 8)
    with pytest.raises(BufferError, match="tensor 'short' \\(FLOAT\\).*raw_data holds 8 bytes.*need 12"):
        torch.from_dlpack(short)
    neg = onnxio.TensorProto(name="neg", data_type=onnxio.TensorProto.FLOAT, dims=[-1], raw_data=b"")
    with pytest.raises(BufferError, match="tensor 'neg'.*negative"):
        torch.from_dlpack(neg)
    undefined = onnxio.TensorProto(name="u", raw_data=b"\0")
    with pytest.raises(BufferError, match="tensor 'u' \\(UNDEFINED\\).*data_type is not set"):
        torch.from_dlpack(undefined)


def test_arguments(copy_loaded):
    m, _ = copy_loaded
    init = m.graph.initializer[0]
    with pytest.raises(BufferError, match="CPU"):
        init.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError, match="stream"):
        init.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="max_version"):
        init.__dlpack__(max_version=1)
    with pytest.raises(TypeError):
        init.__dlpack__(None)  # keyword-only
    assert _get_name(init.__dlpack__(dl_device=(1, 0), max_version=(1, 2))) == b"dltensor_versioned"
    assert _get_name(init.__dlpack__(max_version=(0, 8))) == b"dltensor"


# ---- lifetime -----------------------------------------------------------------------


def test_torch_tensor_outlives_copy_loaded_model():
    model, arrays = make_model(seed=3)
    m = onnxio.load_model_from_string(model.SerializeToString())
    xs = {i.name: torch.from_dlpack(i) for i in m.graph.initializer}
    del m
    gc.collect()
    junk = [np.full(10000, 7, np.float32) for _ in range(50)]  # reuse of freed memory would show
    for name, x in xs.items():
        np.testing.assert_array_equal(x.numpy(), arrays[name])
    del junk


def test_no_copy_mapping_lives_with_the_capsule(tmp_path):
    model, arrays = make_model(seed=2)
    data = save_external(model, tmp_path / "life.onnx")
    m = onnxio.load(str(tmp_path / "life.onnx"), no_copy=True)
    x = torch.from_dlpack(m.graph.initializer[0])
    cap = m.graph.initializer[1].__dlpack__(max_version=(1, 0))  # not consumed
    name0 = m.graph.initializer[0].name
    del m
    gc.collect()
    assert data_file_mapped(data)
    np.testing.assert_array_equal(x.numpy(), arrays[name0])
    del x
    gc.collect()
    assert data_file_mapped(data), "the unconsumed capsule still holds the mapping"
    del cap
    gc.collect()
    assert not data_file_mapped(data), "the last export released: the file is unmapped"


def test_numpy_array_outlives_model():
    model, arrays = make_model(seed=4)
    m = onnxio.load_model_from_string(model.SerializeToString())
    a = np.from_dlpack(m.graph.initializer[1])
    name = m.graph.initializer[1].name
    del m
    gc.collect()
    np.testing.assert_array_equal(a, arrays[name])
