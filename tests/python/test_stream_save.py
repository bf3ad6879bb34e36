"""onnxio.save_streaming: tensors from an iterator, checked
against the onnx package's load, numpy, and onnxio.save's bytes of the same
full model; errors leave old files; memory bounded by the largest tensor."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest

import onnxio
from onnxio import TensorProto, helper


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "a": rng.standard_normal((64, 33)).astype(np.float32),
        "b": rng.standard_normal((300,)).astype(np.float16),
        "c": rng.integers(-100, 100, size=(7, 5, 3)).astype(np.int64),
        "tiny": np.array([1.5, 2.5], dtype=np.float32),
        "mask": rng.integers(0, 2, size=(999,)).astype(bool),
    }


def structure(arrs):
    inits = [TensorProto(name=n, data_type=helper.np_dtype_to_tensor_dtype(a.dtype), dims=list(a.shape))
             for n, a in arrs.items()]
    return helper.make_model(helper.make_graph([], "g", [], [], initializer=inits))


def full(arrs):
    inits = [onnxio.numpy_helper.from_array(a, n) for n, a in arrs.items()]
    return helper.make_model(helper.make_graph([], "g", [], [], initializer=inits))


def files(d):
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))}


LAYOUTS = [
    ("m.onnx", {}),
    ("m.onnx", dict(save_as_external_data=True, location="m.data")),
    ("m.onnx", dict(save_as_external_data=True, location="m.data", alignment=1, size_threshold=0, checksum=True)),
    ("m.onnx", dict(save_as_external_data=True, all_tensors_to_one_file=False)),
    ("m.onnxz", {}),
]


@pytest.mark.parametrize("name,kw", LAYOUTS)
def test_same_bytes_as_save_and_onnx_loads_it(tmp_path, name, kw):
    arrs = arrays()
    (tmp_path / "s").mkdir()
    (tmp_path / "w").mkdir()
    # A generator, in an order that is not the model's.
    gen = ((n, arrs[n]) for n in reversed(list(arrs)))
    onnxio.save_streaming(structure(arrs), gen, str(tmp_path / "s" / name), **kw)
    onnxio.save_model(full(arrs), str(tmp_path / "w" / name), **kw)
    streamed, whole = files(tmp_path / "s"), files(tmp_path / "w")
    assert streamed == whole and streamed
    if name.endswith(".onnx"):
        m = onnx.load(str(tmp_path / "s" / name))  # the onnx package, external data too
        got = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    else:
        m = onnxio.load(str(tmp_path / "s" / name))
        got = {t.name: onnxio.numpy_helper.to_array(t) for t in m.graph.initializer}
    assert set(got) == set(arrs)
    for n, a in arrs.items():
        np.testing.assert_array_equal(got[n], a)
        assert got[n].dtype == a.dtype


def test_tensorprotos_and_non_contiguous(tmp_path):
    arrs = arrays(1)
    src = [onnxio.numpy_helper.from_array(arrs["a"], "a")]
    src += [("b", arrs["b"]), ("c", np.asfortranarray(arrs["c"])), ("tiny", arrs["tiny"].astype(">f4")),
            ("mask", arrs["mask"])]
    onnxio.save_streaming(structure(arrs), iter(src), str(tmp_path / "m.onnx"))
    onnxio.save_model(full(arrs), str(tmp_path / "w.onnx"))
    assert (tmp_path / "m.onnx").read_bytes() == (tmp_path / "w.onnx").read_bytes()


def test_errors_name_the_tensor_and_keep_old_files(tmp_path):
    arrs = arrays()
    path = str(tmp_path / "m.onnx")
    onnxio.save_model(full(arrays(5)), path, save_as_external_data=True, location="m.data")
    before = files(tmp_path)
    cases = [
        ([(n, a) for n, a in arrs.items() if n != "c"], onnxio.EncodeError, "'c'"),            # missing
        (list(arrs.items()) + [("a", arrs["a"])], onnxio.EncodeError, "'a' was given twice"),  # duplicate
        ([("zzz", arrs["a"])], onnxio.EncodeError, "'zzz'"),                                  # unknown
        ([("a", arrs["a"][:10])] , onnxio.EncodeError, "'a'"),                               # byte count
        ([("a", arrs["a"].astype(np.float64))], TypeError, "'a'"),                            # dtype
    ]
    for items, exc, text in cases:
        with pytest.raises(exc, match=text):
            onnxio.save_streaming(structure(arrs), iter(items), path, save_as_external_data=True, location="m.data")
        assert files(tmp_path) == before

    def failing():
        yield "a", arrs["a"]
        raise RuntimeError("the generator broke")

    with pytest.raises(RuntimeError, match="generator broke"):
        onnxio.save_streaming(structure(arrs), failing(), path, save_as_external_data=True, location="m.data")
    assert files(tmp_path) == before


MEMORY_CHILD = textwrap.dedent(r"""
    import os, resource, sys
    import numpy as np
    import onnxio
    from onnxio import TensorProto, helper
    out, n, mib, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    shape = (mib << 20) // 2 // 4096, 4096
    m = helper.make_model(helper.make_graph([], "g", [], [], initializer=[
        TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT16, dims=list(shape)) for i in range(n)]))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:  # the whole model cannot be held under the limit
        np.ones(n * (mib << 20), dtype=np.uint8)
        print("WHOLE-FITS")
    except MemoryError:
        pass
    def gen():
        buf = np.empty(shape, dtype=np.float16)
        for i in range(n):
            buf[...] = i  # one buffer, refilled: a generator of the weights
            yield f"w{i}", buf
    onnxio.save_streaming(m, gen(), out, save_as_external_data=True, location="m.data", num_threads=2,
                          fsync=False)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            print("HWM", int(line.split()[1]) * 1024)
""")


@pytest.mark.slow
def test_memory_bounded_by_largest_tensor(tmp_path):
    n, mib = 16, 64  # 1 GiB of float16 in 64 MiB tensors
    limit = 900 << 20
    out = str(tmp_path / "m.onnx")
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", MEMORY_CHILD, out, str(n), str(mib), str(limit)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "WHOLE-FITS" not in r.stdout
    hwm = int(r.stdout.split("HWM")[1])
    assert hwm <= (mib << 20) + (256 << 20), hwm
    m = onnxio.load(out, no_copy=True)
    assert len(m.graph.initializer) == n
    for i in (0, 7, n - 1):
        a = onnxio.numpy_helper.to_array(m.graph.initializer[i])
        assert a.dtype == np.float16 and a.shape == ((mib << 20) // 8192, 4096)
        assert a[0, 0] == i and a[-1, -1] == i and np.all(a[::97] == i)
    assert os.path.getsize(tmp_path / "m.data") == n * (mib << 20)
