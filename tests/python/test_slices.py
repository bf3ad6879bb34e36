"""Tensor slices (issue 16): onnxio.read_tensor against numpy slicing of the
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
    with pytest.raises(ValueError, match="typed fields"):
        onnxio.read_tensor(p, "typed", 0)
    with pytest.raises(FileNotFoundError):
        onnxio.read_tensor(p + ".missing", "f32")
    # The C library's own bounds check, below the Python index rules.
    with TensorFile(p) as f:
        with pytest.raises(ValueError, match=r"tensor 'f32': axis 0: range \[30, 40\) is not within \[0, 37\)"):
            onnxio._onnxio._tensor_file_read(f._cap, "f32", [(30, 40), (0, 1)])
        with pytest.raises(ValueError, match="has 2 axes, the slice gives 1 ranges"):
            onnxio._onnxio._tensor_file_read(f._cap, "f32", [(0, 1)])


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


cli = pytest.mark.skipif(not os.path.exists(CLI), reason=f"{CLI} is not built")


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
    assert lines[1] == "[" + " ".join(str(v) for v in ref["i8"][0, 0]) + "]"
    p = subprocess.run([CLI, "cat", paths[layout], "bf16", "--output", str(tmp_path / "x.npy")], capture_output=True,
                       text=True)
    assert p.returncode == 1 and "BFLOAT16 has no numpy .npy type" in p.stderr
    p = subprocess.run([CLI, "cat", paths[layout], "f32", "--slice", "0:40:2"], capture_output=True, text=True)
    assert p.returncode == 2 and "steps are not supported" in p.stderr


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
