"""Block digests: the SHA-256 of each MiB of every payload a save moves to
external data, kept in the tensor's metadata_props ("onnxio.sha256":
"BLOCK:HEX"), checked by loads.

The references: hashlib's SHA-256 of each block of the bytes onnx reads
back for the tensor; the onnx package, which must load and check the files
without a warning; a byte flipped on disk, which must fail the load of that
tensor, naming it and the block, and no other.
"""

import hashlib
import subprocess
import warnings

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import needs

CLI_PATH = needs("onnxio command")
MiB = 1 << 20


def run(*args):
    p = subprocess.run([str(CLI_PATH), *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def build_model():
    """Initializers of 0 bytes, 40 bytes, 1 MiB exactly, 9.5 MiB (ten
    blocks over two of the pool's 8 MiB pieces, the last half full) and
    24,000 bytes, and one in a subgraph."""
    rng = np.random.default_rng(7)
    arrays = {
        "empty": np.zeros((0, 4), np.float32),
        "tiny": rng.standard_normal(10).astype(np.float32),
        "one_mib": rng.integers(0, 255, MiB).astype(np.uint8),
        "big": rng.standard_normal(2490368).astype(np.float32),
        "mid": rng.standard_normal(3000).astype(np.float64),
    }
    sub = numpy_helper.from_array(rng.standard_normal(5000).astype(np.float32), "sub_w")
    then_g = helper.make_graph([helper.make_node("Identity", ["sub_w"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, [5000])], [sub])
    nodes = [helper.make_node("Identity", [n], [n + "_out"]) for n in arrays]
    nodes.append(helper.make_node("If", ["cond"], ["if_out"], then_branch=then_g, else_branch=then_g))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info(n + "_out", helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                           for n, a in arrays.items()]
                          + [helper.make_tensor_value_info("if_out", onnx.TensorProto.FLOAT, [5000])],
                          [numpy_helper.from_array(a, n) for n, a in arrays.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), {**arrays, "sub_w": numpy_helper.to_array(sub)}


def tensors(model):
    g = model.graph
    yield from g.initializer
    for node in g.node:
        for a in node.attribute:
            if a.g:
                yield from a.g.initializer


def records(path):
    """{tensor: (block, [hex digests])} of a saved model, read by onnx."""
    out = {}
    for t in tensors(onnx.load(str(path), load_external_data=False)):
        for e in t.metadata_props:
            if e.key == "onnxio.sha256":
                block, hexs = e.value.split(":")
                out[t.name] = (int(block), [hexs[i:i + 64] for i in range(0, len(hexs), 64)])
    return out


def converted(tmp_path, name, *args):
    """The model saved by `onnxio convert src NAME --digests ARGS...`, and
    its arrays."""
    model, arrays = build_model()
    src = tmp_path / "src.onnx"
    onnx.save(model, src)
    out = tmp_path / name
    rc, err = run("convert", src, out, "--digests", "--size-threshold", "0", *args)
    assert rc == 0, err
    return out, arrays


@pytest.fixture
def saved(tmp_path):
    """The model saved with external data, w.bin."""
    return converted(tmp_path, "m.onnx", "--external-data", "w.bin")


def test_digests_are_hashlibs_and_onnx_reads_the_files(saved):
    out, arrays = saved
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # onnx warns about external_data keys it does not know
        onnx.checker.check_model(str(out), full_check=True)
        back = onnx.load(str(out))
    got = {t.name: numpy_helper.to_array(t) for t in tensors(back)}
    rec = records(out)
    # Every tensor moved to w.bin has a record (an empty one has no block).
    moved = {t.name for t in tensors(onnx.load(str(out), load_external_data=False)) if t.external_data}
    assert set(rec) == moved and {"tiny", "one_mib", "big", "mid", "sub_w"} <= moved
    for name, (block, digests) in rec.items():
        assert block == MiB
        data = got[name].tobytes()
        np.testing.assert_array_equal(got[name], arrays[name])
        assert digests == [hashlib.sha256(data[i:i + block]).hexdigest() for i in range(0, len(data), block)], name
    assert len(rec["big"][1]) == 10 and len(rec["one_mib"][1]) == 1


def test_python_save_writes_the_same_records(saved, tmp_path):
    import onnxio

    out, _ = saved
    model, _ = build_model()
    py = tmp_path / "py" / "m.onnx"
    py.parent.mkdir()
    onnxio.save_model(onnxio.ModelProto.FromString(model.SerializeToString()), py, save_as_external_data=True,
                      location="w.bin", size_threshold=0, digests=True, update_model=False)
    assert records(py) == records(out)
    assert (py.parent / "w.bin").read_bytes() == (out.parent / "w.bin").read_bytes()


def flip(out, name, at):
    """Flips the byte `at` bytes into tensor `name`'s data on disk."""
    t = next(t for t in tensors(onnx.load(str(out), load_external_data=False)) if t.name == name)
    keys = {e.key: e.value for e in t.external_data}
    path = out.parent / keys["location"]
    data = bytearray(path.read_bytes())
    data[int(keys["offset"]) + at] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("no_copy", [False, True])
def test_a_flipped_byte_fails_that_tensor_only(saved, no_copy):
    import onnxio

    out, arrays = saved
    flip(out, "big", 9 * MiB + 5)
    opts = {"no_copy": no_copy, "verify_digests": True} if no_copy else {}
    with pytest.raises(onnxio.ExternalDataError, match=r"tensor 'big': block 9 \(its bytes 9437184 to 9961472"):
        onnxio.load_model(str(out), **opts)
    # Every other tensor still reads, one at a time.
    model = onnxio.load_model(str(out), load_external_data=False)
    for t in tensors(model):
        if t.name == "big" or t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        onnxio.external_data_helper.load_external_data_for_tensor(t, str(out.parent))
        np.testing.assert_array_equal(onnxio.numpy_helper.to_array(t), arrays[t.name])
    big = next(t for t in tensors(model) if t.name == "big")
    with pytest.raises(onnxio.ExternalDataError, match="block 9"):
        onnxio.external_data_helper.load_external_data_for_tensor(big, str(out.parent))
    # The command refuses it too, naming the tensor and the block.
    rc, err = run("convert", out, out.parent / "inline.onnx", "--inline")
    assert rc == 1 and "tensor 'big': block 9" in err
    assert not (out.parent / "inline.onnx").exists()
    # Unchecked, the changed bytes load.
    assert len(onnxio.load_model(str(out), verify_digests=False).graph.initializer[3].raw_data) == arrays["big"].nbytes


def test_a_load_drops_the_records_it_checked(saved):
    import onnxio

    out, arrays = saved
    model = onnxio.load_model(str(out))
    assert not any(len(t.metadata_props) for t in tensors(model))
    kept = onnxio.load_model(str(out), load_external_data=False)
    assert {t.name for t in tensors(kept) if any(e.key == "onnxio.sha256" for e in t.metadata_props)} == set(records(out))


def test_a_save_without_digests_drops_the_records_of_what_it_moves(saved, tmp_path):
    import onnxio

    out, _ = saved
    model = onnxio.load_model(str(out), verify_digests=False)
    again = tmp_path / "again.onnx"
    onnxio.save_model(model, again, save_as_external_data=True, location="again.bin", size_threshold=0)
    assert records(again) == {}


def test_a_malformed_record_is_refused(saved):
    import onnxio

    out, _ = saved
    m = onnx.load(str(out), load_external_data=False)
    for value, what in (("4096x:00", "block size"), ("1048576:" + "ab" * 31, "hex digits"),
                        ("3000:" + "00" * 32, "block size"), ("1048576:" + "zz" * 32 * 10, "hex digit")):
        t = next(t for t in m.graph.initializer if t.name == "big")
        next(e for e in t.metadata_props if e.key == "onnxio.sha256").value = value
        onnx.save(m, str(out))
        with pytest.raises(onnxio.ExternalDataError, match=what):
            onnxio.load_model(str(out))
        onnxio.load_model(str(out), verify_digests=False)


def test_check_names_the_damaged_tensor(saved):
    """`onnxio check` verifies the block digests: a flipped byte is one
    problem naming the tensor and its block (exit 1); --no-data reads no
    data and passes; the undamaged model passes."""
    import json

    out, _ = saved
    rc, err = run("check", out)
    assert rc == 0, err
    flip(out, "sub_w", 100)
    p = subprocess.run([str(CLI_PATH), "check", str(out), "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr
    report = json.loads(p.stdout)
    assert [(q["rule"], q["tensor"]) for q in report["problems"]] == [("digest", "sub_w")]
    assert "block 0 (its bytes 0 to 20000" in report["problems"][0]["message"]
    p = subprocess.run([str(CLI_PATH), "check", str(out), "--no-data"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


# ---- .onnxz archives: the digests entry ---------------------------------------------


def archive_digests(path):
    """{entry: (block, [hex digests])} from the archive's __BLOCK_DIGESTS
    entry, read with zipfile."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        text = z.read("__BLOCK_DIGESTS").decode("ascii")
    head, *lines = text.split("\n")
    assert head == "onnxio block digests 1" and lines[-1] == ""
    out = {}
    for line in lines[:-1]:
        name, record = line.split(" ")
        block, hexs = record.split(":")
        out[name] = (int(block), [hexs[i:i + 64] for i in range(0, len(hexs), 64)])
    return out


@pytest.fixture
def archive(tmp_path):
    """The model saved as an archive."""
    return converted(tmp_path, "m.onnxz")


def test_archive_digests_entry_is_hashlibs(archive, tmp_path):
    """Every tensor entry has a line, its digests hashlib's SHA-256 of the
    entry's bytes as zipfile reads them; unzip -t passes (the entry's own
    CRC-32); the Python save writes the same archive."""
    import zipfile

    import onnxio

    out, _ = archive
    dg = archive_digests(out)
    with zipfile.ZipFile(out) as z:
        assert z.testzip() is None
        entries = [n for n in z.namelist() if n not in ("__MODEL_PROTO", "__BLOCK_DIGESTS")]
        assert set(dg) == set(entries) and z.namelist()[-2:] == ["__BLOCK_DIGESTS", "__MODEL_PROTO"]
        for name in entries:
            data = z.read(name)
            block, digests = dg[name]
            assert block == MiB
            assert digests == [hashlib.sha256(data[i:i + block]).hexdigest() for i in range(0, len(data), block)]
    assert len(dg["big"][1]) == 10
    model, _ = build_model()
    py = tmp_path / "py.onnxz"
    onnxio.save_model(onnxio.ModelProto.FromString(model.SerializeToString()), py, size_threshold=0, digests=True)
    assert py.read_bytes() == out.read_bytes()


def flip_entry(path, name, at):
    import zipfile

    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    with open(path, "r+b") as f:
        f.seek(info.header_offset + 26)
        n, m = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
        f.seek(info.header_offset + 30 + n + m + at)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x40]))


def test_archive_a_flipped_byte_fails_that_tensor_only(archive):
    import onnxio

    out, arrays = archive
    rc, err = run("check", out)
    assert rc == 0, err
    flip_entry(out, "big", 9 * MiB + 5)
    with pytest.raises(onnxio.ExternalDataError, match=r"tensor 'big': block 9 \(its bytes 9437184 to 9961472"):
        onnxio.load_model(str(out))
    # The other tensors load, digests checked, when the damaged one is skipped.
    model = onnxio.load_model(str(out), payload_fn=lambda t, size, external: t.name != "big")
    for t in tensors(model):
        if t.name in arrays and t.name != "big":
            np.testing.assert_array_equal(onnxio.numpy_helper.to_array(t), arrays[t.name])
    p = subprocess.run([str(CLI_PATH), "check", str(out), "--json"], capture_output=True, text=True, timeout=300)
    import json

    problems = json.loads(p.stdout)["problems"]
    assert p.returncode == 1 and [(q["rule"], q["tensor"]) for q in problems] == [("digest", "big")]


# ---- slices: only the blocks a slice touches ----------------------------------------


@pytest.mark.parametrize("layout", ["external", "archive"])
def test_slices_check_the_blocks_they_touch(saved, archive, layout):
    """A slice reads and checks the whole blocks it touches and no other:
    with byte 9 MiB + 5 of 'big' flipped, a slice inside blocks 0-8 reads
    (equal to numpy's), one touching block 9 fails naming it, and `onnxio
    cat` of it fails too."""
    from onnxio.slices import TensorFile

    out, arrays = saved if layout == "external" else archive
    if layout == "external":
        flip(out, "big", 9 * MiB + 5)
    else:
        flip_entry(out, "big", 9 * MiB + 5)
    big = arrays["big"]
    per_block = MiB // 4
    with TensorFile(str(out)) as f:
        np.testing.assert_array_equal(f.read("big", np.s_[100:per_block * 9]), big[100:per_block * 9])
        np.testing.assert_array_equal(f.read("big", np.s_[per_block * 9 + 2:per_block * 9 + 2]), big[:0])
        with pytest.raises(onnxio_error(), match=r"tensor 'big': block 9 \(its bytes 9437184 to 9961472"):
            f.read("big", np.s_[per_block * 9 + 2:per_block * 9 + 3])
        np.testing.assert_array_equal(f.read("mid", np.s_[:]), arrays["mid"])
    rc, err = run("cat", out, "big", "--slice", f"{per_block * 9}:{per_block * 9 + 4}")
    assert rc == 1 and "block 9" in err
    rc, err = run("cat", out, "big", "--slice", "0:4")
    assert rc == 0, err


def onnxio_error():
    import onnxio

    return onnxio.ExternalDataError


def test_remote_ranges_are_checked(saved):
    """A remote load (fsspec's memory filesystem) fetches each payload's
    range and the library checks its blocks before the tensor takes it."""
    fsspec = pytest.importorskip("fsspec")
    import onnxio

    out, arrays = saved
    fs = fsspec.filesystem("memory")
    for p in out.parent.iterdir():
        if p.suffix in (".onnx", ".bin"):
            fs.pipe(f"/digests/{p.name}", p.read_bytes())
    model = onnxio.load_model("memory://digests/m.onnx")
    for t in tensors(model):
        if t.name in arrays:
            np.testing.assert_array_equal(onnxio.numpy_helper.to_array(t), arrays[t.name])
    data = bytearray(fs.cat("/digests/w.bin"))
    t = next(t for t in tensors(onnx.load(str(out), load_external_data=False)) if t.name == "big")
    data[int({e.key: e.value for e in t.external_data}["offset"]) + 9 * MiB + 5] ^= 0x40
    fs.pipe("/digests/w.bin", bytes(data))
    with pytest.raises(onnxio.ExternalDataError, match=r"tensor 'big': block 9 \(its bytes 9437184 to 9961472"):
        onnxio.load_model("memory://digests/m.onnx")


@pytest.mark.parametrize("suffix", [".onnx", ".onnxz"])
def test_a_streaming_save_writes_the_same_digests(saved, archive, tmp_path, suffix):
    """save_streaming(digests=True) hashes each tensor as it arrives: the
    files are the bytes save_model writes with digests (external data and
    an archive)."""
    import onnxio

    model, arrays = build_model()
    skeleton = onnxio.ModelProto.FromString(model.SerializeToString())
    names = []
    for t in skeleton.graph.initializer:
        t.ClearField("raw_data")
        names.append(t.name)
    out = tmp_path / f"s{suffix}"
    kw = dict(save_as_external_data=True, location="w.bin", size_threshold=0) if suffix == ".onnx" else {}
    onnxio.save_streaming(skeleton, ((n, arrays[n]) for n in names), out, digests=True,
                          **({**kw, "size_threshold": 0} if suffix == ".onnxz" else kw))
    want = saved[0] if suffix == ".onnx" else archive[0]
    if suffix == ".onnx":
        assert records(out) == records(want)
        assert (out.parent / "w.bin").read_bytes() == (want.parent / "w.bin").read_bytes()
    else:
        assert archive_digests(out) == archive_digests(want)


def test_remote_archive_entries_are_checked(archive):
    """A remote archive (fsspec's memory filesystem) is read structure
    first: the digests entry comes with the model entry, and each fetched
    entry is checked against it before its tensor takes it."""
    fsspec = pytest.importorskip("fsspec")
    import onnxio

    out, arrays = archive
    fs = fsspec.filesystem("memory")
    fs.pipe("/digests/m.onnxz", out.read_bytes())
    model = onnxio.load_model("memory://digests/m.onnxz")
    for t in tensors(model):
        if t.name in arrays:
            np.testing.assert_array_equal(onnxio.numpy_helper.to_array(t), arrays[t.name])
    flip_entry(out, "big", 9 * MiB + 5)
    fs.pipe("/digests/m.onnxz", out.read_bytes())
    with pytest.raises(onnxio.ExternalDataError, match=r"tensor 'big': block 9 \(its bytes 9437184 to 9961472"):
        onnxio.load_model("memory://digests/m.onnxz", verify_crc=False)
    # Keeping the other tensors fetches and checks only theirs.
    model = onnxio.load_model("memory://digests/m.onnxz", payload_fn=lambda t, size, external: t.name != "big")
    np.testing.assert_array_equal(onnxio.numpy_helper.to_array(
        next(t for t in model.graph.initializer if t.name == "mid")), arrays["mid"])
