"""onnxio.safetensors against the safetensors package (0.8), numpy and the onnx
package: files written by safetensors load into onnxio models with the
values numpy had; files onnxio writes read back with safetensors, byte for
byte what safetensors itself writes for the same tensors; no_copy payloads
lie in a mapping of the file; malformed files raise clear errors and leave
the model as it was; the `onnxio convert` command both ways."""
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnx.numpy_helper
import pytest

from conftest import needs

safetensors = needs("safetensors", "the reference of onnxio.safetensors")
import safetensors.numpy as stnp  # noqa: E402

import onnxio  # noqa: E402
import onnxio.numpy_helper  # noqa: E402
import onnxio.safetensors as ost  # noqa: E402

RNG = np.random.default_rng(15)

ARRAYS = {
    "f32": RNG.standard_normal((3, 5)).astype(np.float32),
    "f16": RNG.standard_normal((4, 4)).astype(np.float16),
    "f64": RNG.standard_normal((7,)).astype(np.float64),
    "i8": RNG.integers(-128, 127, (2, 3, 4), dtype=np.int8),
    "u8": RNG.integers(0, 255, (9,), dtype=np.uint8),
    "i16": RNG.integers(-30000, 30000, (5,), dtype=np.int16),
    "u16": RNG.integers(0, 60000, (5,), dtype=np.uint16),
    "i32": RNG.integers(-(2**31), 2**31 - 1, (6,), dtype=np.int32),
    "u32": RNG.integers(0, 2**32 - 1, (6,), dtype=np.uint32),
    "i64": RNG.integers(-(2**62), 2**62, (3, 2), dtype=np.int64),
    "u64": RNG.integers(0, 2**63, (3,), dtype=np.uint64),
    "bool": RNG.integers(0, 2, (8,)).astype(bool),
    "c64": (RNG.standard_normal(4) + 1j * RNG.standard_normal(4)).astype(np.complex64),
    "bf16": RNG.standard_normal((3, 3)).astype(ml_dtypes.bfloat16),
    "scalar": np.array(2.5, dtype=np.float32),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "big": RNG.standard_normal((64, 64)).astype(np.float32),
}


def onnx_model(arrays, fill=0):
    """An onnx package model whose initializers have the arrays' names,
    types and shapes, and other values (`fill`)."""
    inits = [onnx.numpy_helper.from_array(np.full(a.shape, fill).astype(a.dtype), name) for name, a in arrays.items()]
    graph = onnx.helper.make_graph([], "g", [], [], initializer=inits)
    return onnx.helper.make_model(graph)


def onnxio_model(arrays, fill=0):
    return onnxio.load_from_string(onnx_model(arrays, fill).SerializeToString())


def initializers(model):
    return {t.name: t for t in model.graph.initializer}


def check_values(model, arrays):
    """Values through onnxio's numpy_helper, and through the onnx package
    from onnxio's serialized bytes (an independent reader)."""
    by_name = initializers(model)
    reparsed = onnx.load_from_string(model.SerializeToString())
    ref = {t.name: onnx.numpy_helper.to_array(t) for t in reparsed.graph.initializer}
    for name, a in arrays.items():
        got = onnxio.numpy_helper.to_array(by_name[name])
        assert got.dtype == a.dtype and got.shape == a.shape, name
        assert got.tobytes() == a.tobytes(), name
        assert ref[name].tobytes() == a.tobytes(), name


def file_mappings(path):
    """(start, end) of this process's mappings of `path` (/proc/self/maps)."""
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].strip() == real:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


@pytest.mark.parametrize("no_copy", [False, True])
def test_load_files_written_by_safetensors(tmp_path, no_copy):
    path = tmp_path / "w.safetensors"
    stnp.save_file(ARRAYS, str(path), metadata={"format": "np"})
    model = onnxio_model(ARRAYS)
    assert ost.load_into(model, path, no_copy=no_copy) is model
    check_values(model, ARRAYS)
    big = onnxio.numpy_helper.to_array(initializers(model)["big"])
    lo, hi = np.lib.array_utils.byte_bounds(big)
    inside = [m for m in file_mappings(path) if m[0] <= lo and hi <= m[1]]
    if no_copy:
        assert inside, "a no_copy payload does not lie in a mapping of the file"
        assert not big.flags.writeable
    else:
        assert not inside
    # The loaded tensors are plain raw_data tensors.
    t = initializers(model)["f32"]
    assert t.HasField("raw_data") and not t.float_data and not t.external_data


def test_no_copy_outlives_the_model(tmp_path):
    path = tmp_path / "w.safetensors"
    stnp.save_file({"big": ARRAYS["big"]}, str(path))
    model = onnxio_model({"big": ARRAYS["big"]})
    ost.load_into(model, path, no_copy=True)
    arr = onnxio.numpy_helper.to_array(model.graph.initializer[0])
    del model
    assert arr.tobytes() == ARRAYS["big"].tobytes()


def test_names_and_unknown_tensors(tmp_path):
    path = tmp_path / "w.safetensors"
    sub = {k: ARRAYS[k] for k in ("f32", "i64", "bf16")}
    stnp.save_file(sub, str(path))
    # Only the named ones.
    model = onnxio_model(sub, fill=1)
    ost.load_into(model, path, names=["i64"])
    vals = {t.name: onnxio.numpy_helper.to_array(t) for t in model.graph.initializer}
    assert vals["i64"].tobytes() == sub["i64"].tobytes()
    assert (vals["f32"] == 1).all()
    with pytest.raises(onnxio.DecodeError, match="no tensor named 'nope'"):
        ost.load_into(model, path, names=["nope"])
    # A file tensor the model lacks: refused, or skipped with allow_unknown.
    small = onnxio_model({"f32": sub["f32"]}, fill=1)
    before = small.SerializeToString()
    with pytest.raises(onnxio.DecodeError, match="tensor '(i64|bf16)': the model has no initializer"):
        ost.load_into(small, path)
    assert small.SerializeToString() == before
    ost.load_into(small, path, allow_unknown=True)
    check_values(small, {"f32": sub["f32"]})


def test_mismatch_names_both_sides(tmp_path):
    path = tmp_path / "w.safetensors"
    stnp.save_file({"w": np.zeros((4, 4), np.float32), "v": np.ones(3, np.float32)}, str(path))
    model = onnxio_model({"w": np.zeros((4, 4), np.float16), "v": np.zeros(3, np.float32)})
    before = model.SerializeToString()
    with pytest.raises(onnxio.DecodeError, match=r"tensor 'w': safetensors has F32 \[4, 4\], the model has FLOAT16 \[4, 4\]"):
        ost.load_into(model, path)
    assert model.SerializeToString() == before  # v was not filled either
    model = onnxio_model({"w": np.zeros((2, 8), np.float32), "v": np.zeros(3, np.float32)})
    with pytest.raises(onnxio.DecodeError, match=r"safetensors has F32 \[4, 4\], the model has FLOAT \[2, 8\]"):
        ost.load_into(model, path)


def test_malformed_files(tmp_path):
    good = tmp_path / "good.safetensors"
    stnp.save_file({"w": np.arange(8, dtype=np.float32)}, str(good))
    data = good.read_bytes()
    model = onnxio_model({"w": np.zeros(8, np.float32)})
    before = model.SerializeToString()
    bad = tmp_path / "bad.safetensors"
    n = struct.unpack("<Q", data[:8])[0]
    cases = {
        "truncated data": data[:-1],
        "truncated header": data[: 8 + n // 2],
        "short": data[:5],
        "huge N": struct.pack("<Q", 2**63) + data[8:],
        "bad JSON": data.replace(b'"shape":', b'"shape" '),
        "unknown dtype": data.replace(b'"F32"', b'"F33"'),
        "size mismatch": data.replace(b"[8]", b"[9]"),
    }
    for name, blob in cases.items():
        bad.write_bytes(blob)
        # The reference refuses each too.
        with pytest.raises(Exception):
            stnp.load_file(str(bad))
        for no_copy in (False, True):
            with pytest.raises(onnxio.DecodeError, match="bad.safetensors") as e:
                ost.load_into(model, bad, no_copy=no_copy)
            assert "byte" in str(e.value) or "tensor" in str(e.value), (name, str(e.value))
            assert model.SerializeToString() == before, name
    with pytest.raises(FileNotFoundError):
        ost.load_into(model, tmp_path / "missing.safetensors")


def test_many_metadata_keys_and_a_key_twice(tmp_path):
    """300,000 __metadata__ keys (a 4 MB header; the format allows 100 MB)
    load in a fresh interpreter under a generous timeout: comparing each
    key with every earlier one took minutes here. A key given twice is
    refused, where the reference keeps the last value silently."""
    path = tmp_path / "many.safetensors"
    w = np.arange(4, dtype=np.float32)
    stnp.save_file({"w": w}, str(path), metadata={f"key{i}": str(i) for i in range(300_000)})
    with safetensors.safe_open(str(path), "np") as f:
        assert len(f.metadata()) == 300_000
    code = ("import json, sys, numpy as np, onnx, onnx.numpy_helper, onnxio, onnxio.safetensors as ost\n"
            "g = onnx.helper.make_graph([], 'g', [], [], "
            "initializer=[onnx.numpy_helper.from_array(np.zeros(4, np.float32), 'w')])\n"
            "m = onnxio.load_from_string(onnx.helper.make_model(g).SerializeToString())\n"
            "ost.load_into(m, sys.argv[1])\n"
            "print(json.dumps(onnxio.numpy_helper.to_array(m.graph.initializer[0]).tolist()))\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == w.tolist()

    header = b'{"__metadata__":{"a":"1","b":"2","a":"3"},"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
    header += b" " * (-len(header) % 8)
    dup = tmp_path / "dup.safetensors"
    dup.write_bytes(struct.pack("<Q", len(header)) + header + w.tobytes())
    with safetensors.safe_open(str(dup), "np") as f:
        assert f.metadata() == {"a": "3", "b": "2"}
    model = onnxio_model({"w": np.zeros(4, np.float32)})
    at = 8 + header.index(b'"a":"3"')
    with pytest.raises(onnxio.DecodeError, match=f"file byte {at}\\): __metadata__ key 'a' appears twice"):
        ost.load_into(model, dup)

def test_save_read_by_safetensors(tmp_path):
    model = onnxio.load_from_string(onnx_model(ARRAYS).SerializeToString())
    for t in model.graph.initializer:
        t.CopyFrom(onnxio.numpy_helper.from_array(ARRAYS[t.name], t.name))
    path = tmp_path / "out.safetensors"
    ost.save(model, path)
    got = stnp.load_file(str(path))
    assert sorted(got) == sorted(ARRAYS)
    for name, a in ARRAYS.items():
        assert got[name].dtype == a.dtype and got[name].shape == a.shape and got[name].tobytes() == a.tobytes()
    # Byte for byte what the reference writer makes of the same tensors.
    ref = tmp_path / "ref.safetensors"
    stnp.save_file(ARRAYS, str(ref))
    assert path.read_bytes() == ref.read_bytes()
    # Header length a multiple of 8.
    assert struct.unpack("<Q", path.read_bytes()[:8])[0] % 8 == 0


def test_save_metadata_names_and_onnx_models(tmp_path):
    sub = {k: ARRAYS[k] for k in ("f16", "u8", "big")}
    m = onnx_model(sub)
    for t in m.graph.initializer:
        t.CopyFrom(onnx.numpy_helper.from_array(sub[t.name], t.name))
    path = tmp_path / "out.safetensors"
    # An onnx package model is accepted for saving.
    ost.save(m, path, names=["u8", "f16"], metadata={"format": "pt", "q\"\\": "é\n"})
    with safetensors.safe_open(str(path), framework="np") as f:
        assert f.metadata() == {"format": "pt", "q\"\\": "é\n"}
        assert sorted(f.keys()) == ["f16", "u8"]
        assert f.get_tensor("f16").tobytes() == sub["f16"].tobytes()
    with pytest.raises(ValueError, match="no initializer named 'zz'"):
        ost.save(m, path, names=["zz"])


def test_save_typed_fields(tmp_path):
    """Tensors made by helper.make_tensor (values in float_data, int32_data,
    int64_data) are written as onnx's numpy_helper.to_array reads them."""
    tensors = [
        onnx.helper.make_tensor("f", onnx.TensorProto.FLOAT, [2, 2], [1.0, -2.0, 3.5, 4.0]),
        onnx.helper.make_tensor("h", onnx.TensorProto.FLOAT16, [3], np.array([1, -2, 0.5], np.float16)),
        onnx.helper.make_tensor("b", onnx.TensorProto.BFLOAT16, [2], np.array([1.5, -3], ml_dtypes.bfloat16)),
        onnx.helper.make_tensor("i", onnx.TensorProto.INT64, [2], [7, -9]),
        onnx.helper.make_tensor("s", onnx.TensorProto.INT8, [3], [-1, 2, -3]),
        onnx.helper.make_tensor("u", onnx.TensorProto.UINT32, [2], [1, 2**32 - 1]),
        onnx.helper.make_tensor("d", onnx.TensorProto.DOUBLE, [1], [0.25]),
        onnx.helper.make_tensor("t", onnx.TensorProto.BOOL, [2], [True, False]),
    ]
    assert not any(t.raw_data for t in tensors)
    m = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], initializer=tensors))
    path = tmp_path / "typed.safetensors"
    ost.save(onnxio.load_from_string(m.SerializeToString()), path)
    got = stnp.load_file(str(path))
    for t in tensors:
        want = onnx.numpy_helper.to_array(t)
        assert got[t.name].dtype == want.dtype and got[t.name].tobytes() == want.tobytes(), t.name


def test_save_refusals_keep_the_old_file(tmp_path):
    path = tmp_path / "out.safetensors"
    stnp.save_file({"x": np.ones(2, np.float32)}, str(path))
    old = path.read_bytes()
    s = onnx.helper.make_tensor("s", onnx.TensorProto.STRING, [1], [b"a"])
    m = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], initializer=[s]))
    with pytest.raises(onnxio.EncodeError, match="tensor 's': data type STRING has no safetensors dtype"):
        ost.save(m, path)
    assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["out.safetensors"]


def test_float8_both_ways(tmp_path):
    """F8_E4M3 and F8_E5M2 (written by safetensors from ml_dtypes arrays;
    read back with safetensors.deserialize, which gives raw bytes)."""
    arrays = {
        "e4": RNG.standard_normal(16).astype(ml_dtypes.float8_e4m3fn),
        "e5": RNG.standard_normal((2, 8)).astype(ml_dtypes.float8_e5m2),
    }
    path = tmp_path / "f8.safetensors"
    stnp.save_file(arrays, str(path))
    model = onnxio_model(arrays)
    ost.load_into(model, path)
    by_name = initializers(model)
    assert by_name["e4"].data_type == onnxio.TensorProto.FLOAT8E4M3FN
    for name, a in arrays.items():
        assert onnxio.numpy_helper.to_array(by_name[name]).tobytes() == a.tobytes()
    out = tmp_path / "out.safetensors"
    ost.save(model, out)
    assert out.read_bytes() == path.read_bytes()
    got = dict(safetensors.deserialize(out.read_bytes()))
    assert got["e5"]["dtype"] == "F8_E5M2" and bytes(got["e5"]["data"]) == arrays["e5"].tobytes()


# ---- the command ---------------------------------------------------------------


def test_cli_convert_both_ways(tmp_path):
    from clitool import run, run_ok

    sub = {k: ARRAYS[k] for k in ("f32", "bf16", "big", "i64")}
    skeleton = tmp_path / "skeleton.onnx"
    onnx.save(onnx_model(sub), str(skeleton))
    weights = tmp_path / "w.safetensors"
    stnp.save_file(sub, str(weights))
    # Fill the initializers from the file, write any format convert writes.
    for out_name in ("full.onnx", "full.onnxz"):
        out = tmp_path / out_name
        run_ok("convert", skeleton, "--weights", weights, out)
        loaded = onnxio.load(str(out))
        check_values(loaded, sub)
    out = tmp_path / "ext.onnx"
    run_ok("convert", skeleton, "--weights", weights, "--external-data", "ext.bin", out)
    check_values(onnxio.load(str(out)), sub)
    reloaded = onnx.load(str(out))
    assert onnx.numpy_helper.to_array(reloaded.graph.initializer[0]).shape == sub[reloaded.graph.initializer[0].name].shape
    # Export: OUT ending in .safetensors.
    back = tmp_path / "back.safetensors"
    run_ok("convert", tmp_path / "full.onnx", back)
    got = stnp.load_file(str(back))
    assert all(got[k].tobytes() == v.tobytes() and got[k].dtype == v.dtype for k, v in sub.items())
    # Errors: a mismatch, usage.
    bad = tmp_path / "bad.safetensors"
    stnp.save_file({"f32": np.zeros((5, 3), np.float32)}, str(bad))
    rc, _, err = run("convert", skeleton, "--weights", bad, tmp_path / "x.onnx")
    assert rc != 0 and "tensor 'f32': safetensors has F32 [5, 3], the model has FLOAT [3, 5]" in err
    assert not (tmp_path / "x.onnx").exists()
    rc, _, err = run("convert", skeleton, "--weights", weights, tmp_path / "x.safetensors")
    assert rc == 2 and "--weights" in err
    rc, _, err = run("convert", skeleton, "--external-data", "a.bin", tmp_path / "x.safetensors")
    assert rc == 2
