"""Tensor slices: onnxio.read_tensor against numpy slicing of the
onnx package's full load, in every layout (one .onnx file, .onnx + external
data, .onnxz written by onnxio.save); the bytes read (counted by the reader,
and by the kernel's rchar in a subprocess); the CLI's cat (numpy.load as the
reference) and extract (onnx.load)."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxio
from onnxio.slices import TensorFile
from sample_tensors import sample_arrays, save_layouts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("ONNXIO_CLI", os.path.join(REPO, "build", "onnxio"))

RNG = np.random.default_rng(16)


def _tensors():
    arrays = sample_arrays(RNG)
    return {k: numpy_helper.from_array(v, k) for k, v in arrays.items()}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    d = tmp_path_factory.mktemp("slices")
    inits = list(_tensors().values())
    # A tensor whose values are in a typed field (float_data), not raw_data.
    inits.append(helper.make_tensor("typed", TensorProto.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6]))
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], inits)
    model = helper.make_model(graph)
    paths = save_layouts(model, d)
    ref = {t.name: numpy_helper.to_array(t) for t in onnx.load(paths["single"]).graph.initializer}
    return paths, ref


def _random_index(rng, shape):
    items = []
    for dim in shape:
        r = rng.random()
        if r < 0.25 and dim > 0:
            items.append(int(rng.integers(-dim, dim)))
        elif r < 0.4:
            items.append(slice(None))
        else:
            a, b = sorted(rng.integers(-dim - 2, dim + 3, size=2).tolist())
            items.append(slice(a if rng.random() < 0.8 else None, b if rng.random() < 0.8 else None))
    if items and rng.random() < 0.3:  # an Ellipsis in place of a run of whole axes
        k = int(rng.integers(0, len(items)))
        items = items[:k] + [Ellipsis]
    if items and rng.random() < 0.2:
        items = items[: int(rng.integers(0, len(items)))]  # fewer items than axes
    return tuple(items)


SLICEABLE = ["f32", "f16", "bf16", "i64", "i8", "b", "f64", "scalar", "empty"]


@pytest.mark.parametrize("layout", ["single", "external", "onnxz"])
def test_random_slices_equal_numpy_slicing_of_onnx_load(layouts, layout):
    paths, ref = layouts
    rng = np.random.default_rng(hash(layout) & 0xFFFF)
    with TensorFile(paths[layout]) as f:
        assert set(SLICEABLE) <= set(f.names())
        for name in SLICEABLE:
            want_full = ref[name]
            got_full = f.read(name)
            assert got_full.dtype == want_full.dtype and got_full.shape == want_full.shape
            assert np.array_equal(got_full, want_full)
            for _ in range(25):
                index = _random_index(rng, want_full.shape)
                want = want_full[index]
                st = {}
                got = f.read(name, index, stats=st)
                assert got.shape == want.shape, (name, index)
                assert got.dtype == want.dtype
                assert np.array_equal(got, want), (name, index)
                # The reader reads exactly the slice's bytes, never more.
                assert st["bytes"] == want.nbytes
                assert st["bytes_read"] == want.nbytes
    # The one-call form gives the same.
    assert np.array_equal(onnxio.read_tensor(paths[layout], "f16", (slice(3, 9), -1)), ref["f16"][3:9, -1])


@pytest.mark.parametrize("layout", ["single", "external", "onnxz"])
def test_packed_int4_whole_bytes(layouts, layout):
    paths, ref = layouts
    want = ref["i4"]  # (8, 6): 3 bytes a row
    for index in [(), (slice(2, 5),), (3,), (slice(1, 7), slice(0, 4)), (Ellipsis, slice(2, 6))]:
        got = onnxio.read_tensor(paths[layout], "i4", index)
        assert got.dtype == want.dtype and np.array_equal(got, want[index]), index
    with pytest.raises(ValueError, match="splits a byte"):
        onnxio.read_tensor(paths[layout], "i4", (slice(None), slice(1, 4)))
    with pytest.raises(ValueError, match="splits a byte"):
        onnxio.read_tensor(paths[layout], "i4", (slice(None), slice(0, 3)))


@pytest.mark.parametrize("layout", ["single", "external", "onnxz"])
def test_no_copy_views(layouts, layout):
    paths, ref = layouts
    st = {}
    got = onnxio.read_tensor(paths[layout], "f32", slice(5, 20), no_copy=True, stats=st)
    assert st["view"] and st["bytes_read"] == 0
    assert np.array_equal(got, ref["f32"][5:20])
    assert got.base is not None and not got.flags.owndata
    st = {}
    got = onnxio.read_tensor(paths[layout], "f32", (slice(5, 20), slice(0, 3)), no_copy=True, stats=st)
    assert not st["view"] and st["runs"] == 15
    assert np.array_equal(got, ref["f32"][5:20, 0:3])


def test_errors(layouts):
    paths, _ = layouts
    p = paths["single"]
    with pytest.raises(KeyError, match="nope"):
        onnxio.read_tensor(p, "nope")
    with pytest.raises(IndexError, match="step"):
        onnxio.read_tensor(p, "f32", slice(0, 10, 2))
    with pytest.raises(IndexError, match="newaxis"):
        onnxio.read_tensor(p, "f32", (None,))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 23"):
        onnxio.read_tensor(p, "f32", (0, 23))
    with pytest.raises(IndexError, match="too many indices"):
        onnxio.read_tensor(p, "f32", (0, 0, 0))
    with pytest.raises(IndexError, match="single ellipsis"):
        onnxio.read_tensor(p, "f32", (Ellipsis, Ellipsis))
    with pytest.raises(IndexError, match="only integers"):
        onnxio.read_tensor(p, "f32", [0, 1])
    assert np.array_equal(onnxio.read_tensor(p, "typed", 0), np.array([1, 2, 3], np.float32))
    with pytest.raises(FileNotFoundError):
        onnxio.read_tensor(p + ".missing", "f32")
    # The C library's own bounds check, below the Python index rules.
    with TensorFile(p) as f:
        with pytest.raises(ValueError, match=r"tensor 'f32': axis 0: range \[30, 40\) is not within \[0, 37\)"):
            onnxio._onnxio._tensor_file_read(f._cap, "f32", [(30, 40), (0, 1)])
        with pytest.raises(ValueError, match="has 2 axes, the slice gives 1 ranges"):
            onnxio._onnxio._tensor_file_read(f._cap, "f32", [(0, 1)])


def _typed_tensors():
    """Tensors whose values are in typed fields, as the onnx package's
    make_tensor packs them (int32_data for FLOAT16, BFLOAT16, BOOL, INT8,
    packed INT4 bytes, FLOAT8; uint64_data for UINT32; ...), and strings."""
    T = TensorProto
    r = np.random.default_rng(5)
    f = r.standard_normal(24).astype(np.float32)
    made = [helper.make_tensor("t_float", T.FLOAT, [2, 3, 4], f),
            helper.make_tensor("t_double", T.DOUBLE, [4, 6], f.astype(np.float64) / 3),
            helper.make_tensor("t_f16", T.FLOAT16, [4, 6], f.astype(np.float16)),
            helper.make_tensor("t_bf16", T.BFLOAT16, [4, 6], f),
            helper.make_tensor("t_bool", T.BOOL, [4, 6], f > 0),
            helper.make_tensor("t_i8", T.INT8, [4, 6], (f * 50).astype(np.int8)),
            helper.make_tensor("t_u16", T.UINT16, [4, 6], (abs(f) * 9000).astype(np.uint16)),
            helper.make_tensor("t_i32", T.INT32, [4, 6], (f * 1e6).astype(np.int32)),
            helper.make_tensor("t_u32", T.UINT32, [4, 6], (abs(f) * 1e9).astype(np.uint32)),
            helper.make_tensor("t_i64", T.INT64, [4, 6], (f * 1e12).astype(np.int64)),
            helper.make_tensor("t_u64", T.UINT64, [4, 6], (abs(f) * 1e18).astype(np.uint64)),
            helper.make_tensor("t_c64", T.COMPLEX64, [2, 3], (f[:6] + 1j * f[6:12]).astype(np.complex64)),
            helper.make_tensor("t_c128", T.COMPLEX128, [2, 3], f[:6] + 1j * f[6:12]),
            helper.make_tensor("t_i4", T.INT4, [4, 6], np.clip(f * 4, -8, 7).astype(np.int8)),
            helper.make_tensor("t_f8", T.FLOAT8E4M3FN, [4, 6], f),
            helper.make_tensor("t_str", T.STRING, [2, 3], [b"a", b"bc", "\u00e9t\u00e9".encode(), b"", b"x'y", b"q"]),
            helper.make_tensor("t_scalar", T.FLOAT, [], [2.5])]
    if hasattr(T, "FLOAT6E2M3"):
        made.append(helper.make_tensor("t_f6", T.FLOAT6E2M3, [4, 8], np.clip(np.resize(f, 32), -7, 7)))
    return made


def test_typed_fields_read_as_onnx_reads_them(tmp_path):
    """Values in typed fields are read (whole, then sliced) and equal the
    onnx package's numpy_helper.to_array, in a model file and in an
    archive."""
    made = _typed_tensors()
    model = helper.make_model(helper.make_graph([], "g", [], [], made))
    paths = save_layouts(model, tmp_path)
    for layout in ("single", "onnxz"):
        for t in made:
            want = numpy_helper.to_array(t)
            # (rows of FLOAT6 begin on whole bytes, not every third column)
            cases = [None, (0,), (slice(1, 3),), (Ellipsis, slice(2, None))][: 3 if t.name == "t_f6" else 4]
            for index in cases if want.ndim else [None]:
                got = onnxio.read_tensor(paths[layout], t.name, index)
                ref = want[index] if index is not None else want
                assert got.dtype == ref.dtype and got.shape == ref.shape, (t.name, index)
                assert got.tobytes() == ref.tobytes() if ref.dtype != object else list(got.ravel()) == list(ref.ravel())


def test_typed_fields_bounded(tmp_path):
    """A typed field is converted whole only up to 64 MiB decoded: a shape
    of more is refused before anything is allocated for it, and a count of
    values that does not match the shape is named."""
    big = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[2**24 + 1], float_data=[0.0])
    short = TensorProto(name="short", data_type=TensorProto.INT64, dims=[3], int64_data=[1, 2])
    path = tmp_path / "typed.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], [big, short])), str(path))
    with pytest.raises(ValueError, match="typed field .* 67108868 bytes decoded: more than the 67108864"):
        onnxio.read_tensor(str(path), "big", slice(0, 1))
    with pytest.raises(ValueError, match="tensor 'short' holds 2 values in its typed data field, its type and shape need 3"):
        onnxio.read_tensor(str(path), "short")


def _weights_model(d, layout):
    """Eight weights of 256 rows; returns (path, payload bytes, {name: array} from the onnx package)."""
    inits = [numpy_helper.from_array(RNG.standard_normal((256, 64 + 32 * i)).astype(np.float16), f"w{i}")
             for i in range(8)]
    graph = helper.make_graph([], "g", [], [], inits)
    model = helper.make_model(graph)
    path = str(d / f"w_{layout}.onnx")
    if layout == "single":
        onnx.save(model, path)
    elif layout == "external":
        onnx.save(model, path, save_as_external_data=True, location=f"w_{layout}.data", size_threshold=0)
    else:
        path = str(d / "w.onnxz")
        onnxio.save(onnxio.load_from_string(model.SerializeToString()), path)
    return path, sum(len(t.raw_data) for t in inits), {t.name: numpy_helper.to_array(t) for t in inits}


@pytest.mark.parametrize("layout", ["single", "external", "onnxz"])
def test_an_eighth_of_the_rows_reads_an_eighth_of_the_payload(tmp_path, layout):
    path, payload, ref = _weights_model(tmp_path, layout)
    read = 0
    with TensorFile(path) as f:
        for name in f.names():
            st = {}
            got = f.read(name, slice(0, 256 // 8), stats=st)
            assert np.array_equal(got, ref[name][: 256 // 8])
            read += st["bytes_read"]
            assert st["runs"] == 1
    assert read <= payload / 8


def test_rchar_of_a_slice_read(tmp_path):
    """The kernel's count of bytes read (rchar) by a process reading an
    eighth of every weight of a model with external data: at most an eighth
    of the payload plus the structure (the .onnx file)."""
    path, payload, _ = _weights_model(tmp_path, "external")
    structure = os.path.getsize(path)
    code = f"""
import json, onnxio
from onnxio.slices import TensorFile
def rchar():
    with open('/proc/self/io') as fp:
        return int(next(l for l in fp if l.startswith('rchar')).split()[1])
f = TensorFile({path!r}); names = f.names()
import onnxio.numpy_helper  # imports done before counting
f.read(names[0], slice(0, 0))  # the lazy imports of a read, and a read of nothing
before = rchar()
for n in names:
    f.read(n, slice(0, 32))
after = rchar()
print(json.dumps(after - before))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    delta = json.loads(out)
    assert payload / 8 <= delta <= payload / 8 + structure + 4096, (delta, payload, structure)


cli = pytest.mark.needs("onnxio command")


@cli
@pytest.mark.parametrize("layout", ["single", "external", "onnxz"])
def test_cli_cat_npy(layouts, layout, tmp_path):
    paths, ref = layouts
    for name, spec, index in [("f16", "2:10,-5:", (slice(2, 10), slice(-5, None))),
                              ("i64", "-3", (-3,)),
                              ("f64", "...,1:3", (Ellipsis, slice(1, 3))),
                              ("f32", None, ())]:
        out = tmp_path / f"{name}.npy"
        args = [CLI, "cat", paths[layout], name, "--output", str(out)] + (["--slice", spec] if spec else [])
        subprocess.run(args, check=True, capture_output=True)
        got = np.load(out)
        want = ref[name][index]
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    p = subprocess.run([CLI, "cat", paths[layout], "i8", "--slice", "0,0"], capture_output=True, text=True, check=True)
    lines = p.stdout.splitlines()
    assert lines[0] == "i8: INT8 [7] slice 0,0"
    assert "\n".join(lines[1:]) == str(ref["i8"][0, 0])
    p = subprocess.run([CLI, "cat", paths[layout], "bf16", "--output", str(tmp_path / "x.npy")], capture_output=True,
                       text=True)
    assert p.returncode == 1 and "BFLOAT16 has no numpy .npy type" in p.stderr
    p = subprocess.run([CLI, "cat", paths[layout], "f32", "--slice", "0:40:2"], capture_output=True, text=True)
    assert p.returncode == 2 and "steps are not supported" in p.stderr


@cli
def test_cli_cat_prints_as_numpy_prints(tmp_path):
    """cat's values are numpy's str() of numpy_helper.to_array(t)[index]:
    shortest round-trip digits, aligned columns, scientific notation where
    numpy chooses it, lines wrapped at 75 columns, '...' summaries past 1000
    elements, scalars as numpy scalars print; for raw_data tensors of every
    type numpy prints (bfloat16 as ml_dtypes prints it) and typed-field ones."""
    import ml_dtypes

    r = np.random.default_rng(7)
    arrays = {
        "f32": r.standard_normal((4, 5)).astype(np.float32),
        "f32_big": r.standard_normal((40, 50)).astype(np.float32),
        "f32_exp": np.array([1e-5, 1.0, 3.5e10, -2], np.float32),
        "f32_nonfinite": np.array([np.nan, 1.5, -np.inf, 0, np.inf], np.float32),
        "f32_one": np.array([3.25], np.float32),
        "f32_zeros": np.zeros((2, 2), np.float32),
        "f16": r.standard_normal((3, 7)).astype(np.float16),
        "f64": r.standard_normal(30),
        "f64_3d": r.standard_normal((12, 11, 10)) * 1e3,
        "i64": r.integers(-10**12, 10**12, (5, 6)),
        "u8": r.integers(0, 255, (3, 4, 5)).astype(np.uint8),
        "i16": np.arange(100, dtype=np.int16),
        "i32_big": np.arange(3000, dtype=np.int32).reshape(30, 100),
        "u64": np.array([0, 2**64 - 1], np.uint64),
        "bool": r.random((2, 9)) < 0.5,
        "c64": np.array([1 + 2j, 3.5 - 4j, 0], np.complex64),
        "bf16": np.array([1, 2.5, -3, 1e-5, 100000], ml_dtypes.bfloat16),
    }
    tensors = []
    for name, a in arrays.items():
        if a.dtype == ml_dtypes.bfloat16:
            tensors.append(helper.make_tensor(name, TensorProto.BFLOAT16, a.shape, a.tobytes(), raw=True))
        else:
            tensors.append(numpy_helper.from_array(a, name))
    tensors += [t for t in _typed_tensors() if t.name not in ("t_i4", "t_f8", "t_f6")]
    path = tmp_path / "p.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], tensors)), str(path))
    checked = 0
    for t in tensors:
        want = numpy_helper.to_array(t)
        cases = [(None, ())]
        if want.ndim >= 1:
            cases.append(("0", (0,)))
        if want.ndim >= 2:
            cases += [("...,1:3", (Ellipsis, slice(1, 3))), ("-1,-1", (-1, -1))]
        for spec, index in cases:
            args = [CLI, "cat", str(path), t.name] + (["--slice", spec] if spec else [])
            p = subprocess.run(args, capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
            assert "\n".join(p.stdout.splitlines()[1:]) == str(want[index]), (t.name, spec)
            checked += 1
    assert checked > 60


@cli
def test_cli_cat_prints_every_bit_pattern_of_the_small_floats(tmp_path):
    """Every bit pattern of the 8-, 6- and 4-bit floats, and the edges of
    FLOAT16 and BFLOAT16 (zeros, subnormals, the largest finite values,
    infinities, NaNs of both signs), print as numpy prints the same array
    (numpy_helper.to_array, ml_dtypes for all but FLOAT16)."""
    import ml_dtypes

    edges16 = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
               0x7E00, 0xFE00, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x007F, 0x0080, 0x7F7F, 0x3555]
    arrays = {
        "f16": np.array(edges16, np.uint16).view(np.float16),
        "bf16": np.array(edges16, np.uint16).view(ml_dtypes.bfloat16),
    }
    for name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"):
        arrays[name] = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name)).reshape(16, 16)
    for name, bits in (("float6_e2m3fn", 6), ("float6_e3m2fn", 6), ("float4_e2m1fn", 4)):
        arrays[name] = np.arange(1 << bits, dtype=np.uint8).view(getattr(ml_dtypes, name))
    tensors = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    path = tmp_path / "floats.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], tensors)), str(path))
    for t in tensors:
        want = numpy_helper.to_array(t)
        p = subprocess.run([CLI, "cat", str(path), t.name], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (t.name, p.stderr)
        assert "\n".join(p.stdout.splitlines()[1:]) == str(want), t.name


@cli
def test_cli_cat_of_no_element_prints_once(tmp_path):
    """A tensor of no element prints as numpy prints it, once, whatever its
    other axes: the nested brackets of [2^62, 2^62, 0] were 2^124 lines.
    numpy makes arrays of [2^30, 2^30, 0] (and refuses larger ones)."""
    big = [2**30, 2**30, 0]
    inits = [helper.make_tensor(n, TensorProto.FLOAT, dims, vals=b"", raw=True)
             for n, dims in [("big", big), ("huge", [2**62, 2**62, 0])]]
    path = tmp_path / "empty.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], inits)), str(path))
    ref = np.zeros(big, np.float32)
    # (name, --slice, the numpy array it equals: numpy refuses [2^62, 2^62, 0]
    # and [1, 1, 0] stands in for it, every array of no element printing [])
    cases = [("big", None, ref, big), ("big", "0:2,1:3", ref[0:2, 1:3], [2, 2, 0]), ("big", "5", ref[5], big[1:]),
             ("huge", None, np.zeros((1, 1, 0)), [2**62, 2**62, 0]),
             ("huge", "0:1,0:1", np.zeros((1, 1, 0)), [1, 1, 0])]
    for name, spec, want, shape in cases:
        assert list(want.shape) == shape or name == "huge"
        args = [CLI, "cat", str(path), name] + (["--slice", spec] if spec else [])
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines() == [f"{name}: FLOAT [{', '.join(map(str, shape))}]" +
                                         (f" slice {spec}" if spec else ""), str(want)]

@cli
@pytest.mark.parametrize("layout", ["single", "external", "onnxz"])
@pytest.mark.parametrize("out_name", ["out.onnx", "out.onnxz"])
def test_cli_extract(layouts, layout, out_name, tmp_path):
    paths, ref = layouts
    out = str(tmp_path / out_name)
    subprocess.run([CLI, "extract", paths[layout], out, "--tensors", "f*,i8"], check=True, capture_output=True)
    model = onnx.load(out) if out_name.endswith(".onnx") else onnxio.load(out)
    kept = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert sorted(kept) == ["f16", "f32", "f64", "i8"]
    for name, value in kept.items():
        assert np.array_equal(value, ref[name])
    inputs = [i.name for i in model.graph.input]
    assert inputs[0] == "x" and sorted(inputs[1:]) == sorted(set(ref) - set(kept) | {"typed"})
    b = next(i for i in model.graph.input if i.name == "b")
    assert b.type.tensor_type.elem_type == TensorProto.BOOL
    assert [d.dim_value for d in b.type.tensor_type.shape.dim] == [9, 4]
    if out_name.endswith(".onnx"):
        onnx.checker.check_model(out)
    p = subprocess.run([CLI, "extract", paths[layout], out, "--tensors", "f*,nothing*"], capture_output=True, text=True)
    assert p.returncode == 1 and "pattern 'nothing*' matches no initializer" in p.stderr


@pytest.mark.parametrize("layout", ["single", "external", "onnxz"])
def test_close_while_other_threads_read(tmp_path, layout):
    """close() while reads are in flight on other threads: every read gives
    numpy's slice of the onnx package's array or ValueError (closed), and
    the handle is freed by the last reader, never under one."""
    import threading

    value = RNG.standard_normal((512, 4096)).astype(np.float32)  # 8 MiB: several pieces on the pool
    model = helper.make_model(helper.make_graph([], "g", [], [], [numpy_helper.from_array(value, "w")]))
    path = str(tmp_path / "w.onnx")
    if layout == "single":
        onnx.save(model, path)
    elif layout == "external":
        onnx.save(model, path, save_as_external_data=True, location="w.data", size_threshold=0)
    else:
        path = str(tmp_path / "w.onnxz")
        onnxio.save(onnxio.load_from_string(model.SerializeToString()), path)
    ref = numpy_helper.to_array(onnx.load(path).graph.initializer[0]) if layout != "onnxz" else value
    assert np.array_equal(ref, value)
    outcomes = {"read": 0, "closed": 0}
    failures = []
    lock = threading.Lock()

    def reader(f, start, no_copy):
        for k in range(4):
            index = (slice(start + k, 512 - k), slice(k, 4096))
            try:
                got = f.read("w", index, no_copy=no_copy)
            except ValueError as e:
                if "closed" not in str(e):
                    failures.append(repr(e))
                with lock:
                    outcomes["closed"] += 1
                return
            except BaseException as e:  # anything else is a failure of the test
                failures.append(repr(e))
                return
            if not np.array_equal(got, ref[index]):
                failures.append(f"wrong data for {index}")
            with lock:
                outcomes["read"] += 1

    for it in range(40):
        f = TensorFile(path, num_threads=4)
        threads = [threading.Thread(target=reader, args=(f, i, i % 2 == 1)) for i in range(4)]
        for t in threads:
            t.start()
        if it % 4:
            threading.Event().wait(0.001 * (it % 8))
        f.close()
        for t in threads:
            t.join()
        with pytest.raises(ValueError, match="closed"):
            f.read("w", (0,))
        f.close()  # closing twice is a no-op
    assert not failures, failures[:5]
    assert outcomes["read"] + outcomes["closed"] > 0


@cli
def test_cli_cat_prints_ml_dtypes_as_they_print(tmp_path):
    """bfloat16, the 8-, 6- and 4-bit floats and the 4- and 2-bit integers
    print as numpy_helper.to_array's ml_dtypes arrays print (str(x) of each
    element, unaligned), whole and by rows, NaN (of either sign bit) and
    infinity included."""
    import ml_dtypes

    def bits(dtype, rows):
        return np.array(rows, np.uint16 if dtype == ml_dtypes.bfloat16 else np.uint8).view(dtype)

    values = np.array([[1, 2.5, -0.125, 3], [448, 0.1015625, -6, 0]], np.float32)
    arrays = {
        "f8e4m3fn": values.astype(ml_dtypes.float8_e4m3fn),
        "f8e4m3fnuz": values.astype(ml_dtypes.float8_e4m3fnuz),
        "f8e5m2": np.array([[1, -np.inf, np.nan, 3], [57344, 1.5e-5, -2, 0]], np.float32).astype(ml_dtypes.float8_e5m2),
        "f8e5m2fnuz": values.astype(ml_dtypes.float8_e5m2fnuz),
        "f8e8m0": np.array([[1, 2, 0.125, 4], [2.0**-127, 2.0**127, 1024, 0.5]], np.float32).astype(
            ml_dtypes.float8_e8m0fnu),
        "f4e2m1": np.array([[1, 0.5, -6, 3], [-0.0, 1.5, 4, -2]], np.float32).astype(ml_dtypes.float4_e2m1fn),
        "f6e2m3": np.array([[0.5, 1.25, -3, 7.5], [1, -0.0, -0.125, 6]], np.float32).astype(ml_dtypes.float6_e2m3fn),
        "f6e3m2": np.array([[0.5, 1.25, -3, 28], [1, 0.0625, -0.25, 6]], np.float32).astype(ml_dtypes.float6_e3m2fn),
        "i4": np.array([[1, -8, 7, 0], [-1, 2, -3, 4]], ml_dtypes.int4),
        "u4": np.array([[1, 15, 7, 0], [9, 2, 3, 4]], ml_dtypes.uint4),
        "i2": np.array([[1, -2, -1, 0], [0, 1, 1, -2]], ml_dtypes.int2),
        "u2": np.array([[1, 3, 2, 0], [0, 1, 3, 2]], ml_dtypes.uint2),
        # Every NaN prints "nan", whatever its sign bit (C's "%g" writes "-nan").
        "bf16_nan": bits(ml_dtypes.bfloat16, [[0xFFC0, 0x3F80, 0x7FC0, 0xFF80], [0xFF81, 0x0001, 0x8000, 0x7F80]]),
        "f8e4m3fn_nan": bits(ml_dtypes.float8_e4m3fn, [[0xFF, 0x7F, 0x80, 0x01], [0xFE, 0x7E, 0x08, 0x88]]),
        "f8e5m2_nan": bits(ml_dtypes.float8_e5m2, [[0xFF, 0xFD, 0x7D, 0xFC], [0x7C, 0x80, 0x01, 0x83]]),
        "f8e8m0_nan": bits(ml_dtypes.float8_e8m0fnu, [[0xFF, 0x00, 0x01, 0x7F], [0x80, 0xFE, 0x7E, 0x81]]),
    }
    tensors = {}
    for name, a in arrays.items():
        try:
            tensors[name] = numpy_helper.from_array(a, name)
        except Exception:  # noqa: BLE001 - an ml_dtypes type this onnx does not map
            continue
    assert len(tensors) >= 16, sorted(tensors)
    path = tmp_path / "ml.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], list(tensors.values()))), str(path))
    for name, t in tensors.items():
        want = numpy_helper.to_array(t)
        for spec, index in ((None, ()), ("1", (1,))):
            args = [CLI, "cat", str(path), name] + (["--slice", spec] if spec else [])
            p = subprocess.run(args, capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, (name, p.stderr)
            assert "\n".join(p.stdout.splitlines()[1:]) == str(want[index]), (name, spec, p.stdout)
