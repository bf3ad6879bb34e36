"""Amplification: a small file must not make onnxio
allocate or write without bound.

- A load may allocate at most max_expansion (default 100) times the bytes it
  reads, plus 1 MiB, for structure and payloads together; past that it
  raises (a ValueError naming max_expansion) before allocating more.
- With no_copy, tensors that refer to the same bytes share one buffer, so
  500 tensors over one 4 MiB entry cost 4 MiB, not 2 GB.
- A deflate bomb (64 MiB of zeros in 65 KB) is refused however many tensors
  share it, by the library and by `onnxio convert --inline` alike.
- A save writes at most max_expansion times the distinct bytes its payloads
  come from: every route (save, save to .onnxz, .safetensors, the
  command's convert and extract) refuses 1,000 tensors over one 4 MiB range
  before writing.

The inputs are built with zipfile, numpy and the onnx package; the expected
contents come from them, and memory is measured in a child process
(ru_maxrss), not asked of onnxio.
"""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxio

REPO = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("ONNXIO_CLI", REPO / "build" / "onnxio"))


def external_model(names, location, offsets, length, dtype=TensorProto.UINT8):
    """An onnx ModelProto whose initializers all refer to `location`."""
    inits = []
    for name, offset in zip(names, offsets):
        t = TensorProto(name=name, data_type=dtype, dims=[length])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        inits.append(t)
    graph = helper.make_graph([], "g", [], [], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def archive(path, entries, compression=zipfile.ZIP_STORED):
    """A zip archive written by Python's zipfile, __MODEL_PROTO last."""
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in entries:
            z.writestr(name, data)
    return path


def peak_rss_mb(code):
    """Runs `code` in a fresh interpreter; returns its peak RSS in MiB."""
    script = code + "\nimport resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    return int(out.stdout.split()[-1]) / 1024


@pytest.fixture(scope="module")
def shared_entry(tmp_path_factory):
    """500 tensors, each the whole of one 4 MiB stored entry (4.2 MB file)."""
    d = tmp_path_factory.mktemp("shared")
    w = np.random.default_rng(0).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes()
    names = [f"t{i}" for i in range(500)]
    model = external_model(names, "w", [0] * 500, len(w))
    path = archive(d / "shared.onnxz", [("w", w), ("__MODEL_PROTO", model.SerializeToString())])
    return path, w


def test_shared_entry_no_copy_costs_its_bytes_once(shared_entry):
    path, w = shared_entry
    m = onnxio.load(str(path), no_copy=True)
    arrays = [onnxio.numpy_helper.to_array(t) for t in m.graph.initializer]
    assert len(arrays) == 500
    want = np.frombuffer(w, np.uint8)
    assert np.array_equal(arrays[0], want) and np.array_equal(arrays[-1], want)
    # one buffer for all of them: the first and the last view the same bytes
    assert np.shares_memory(arrays[0], arrays[-1])
    baseline = peak_rss_mb("import onnxio, numpy")
    rss = peak_rss_mb(f"import onnxio\nm = onnxio.load({str(path)!r}, no_copy=True)\n"
                      "assert len(m.graph.initializer) == 500")
    assert rss - baseline < 100, f"{rss - baseline:.0f} MiB for a 4 MiB payload shared 500 times"


def test_shared_entry_copy_is_refused(shared_entry):
    """A copy load gives every tensor bytes of its own (2 GB here): past
    max_expansion, refused before allocating them."""
    path, _ = shared_entry
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.load(str(path))


@pytest.fixture(scope="module")
def deflate_bomb(tmp_path_factory):
    """100 tensors sharing one 64 MiB entry of zeros, deflated: ~65 KB."""
    d = tmp_path_factory.mktemp("bomb")
    zeros = bytes(64 << 20)
    names = [f"t{i}" for i in range(100)]
    model = external_model(names, "w", [0] * 100, len(zeros))
    path = archive(d / "bomb.onnxz", [("w", zeros), ("__MODEL_PROTO", model.SerializeToString())],
                   compression=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 200_000
    with zipfile.ZipFile(path) as z:
        assert z.getinfo("w").file_size == 64 << 20  # what zipfile says it holds
    return path


@pytest.mark.parametrize("no_copy", [False, True])
def test_deflate_bomb_refused(deflate_bomb, no_copy):
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.load(str(deflate_bomb), no_copy=no_copy)


def test_deflate_bomb_when_trusted(deflate_bomb):
    """Raising max_expansion loads it; with no_copy the 100 tensors share
    the one inflated buffer."""
    m = onnxio.load(str(deflate_bomb), no_copy=True, max_expansion=10_000)
    a = [onnxio.numpy_helper.to_array(t) for t in m.graph.initializer]
    assert len(a) == 100 and not a[0].any() and a[0].size == 64 << 20
    assert np.shares_memory(a[0], a[-1])


@pytest.mark.needs("onnxio command")
def test_deflate_bomb_convert_inline(deflate_bomb, tmp_path):
    """`onnxio convert --inline` wrote 6.7 GB for this file; now it stops."""
    out = tmp_path / "out.onnx"
    p = subprocess.run([str(CLI), "convert", str(deflate_bomb), str(out), "--inline"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 1 and "max_expansion" in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []


def empty_initializers(n):
    """A ModelProto of n empty initializers, 2 bytes each on the wire."""
    graph = b"\x2a\x00" * n
    size, varint = len(graph), b""
    while True:
        b, size = size & 0x7F, size >> 7
        varint += bytes([b | (0x80 if size else 0)])
        if not size:
            break
    return b"\x08\x08" + b"\x3a" + varint + graph


def test_empty_messages_refused(tmp_path):
    """300,000 empty initializers (600 KB) need about 180x their size in
    structure: refused by default, loaded when allowed."""
    data = empty_initializers(300_000)
    assert len(onnx.load_model_from_string(data).graph.initializer) == 300_000  # valid protobuf
    path = tmp_path / "empty.onnx"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.load(str(path), no_copy=True)
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.load_model_from_string(data)
    m = onnxio.load(str(path), no_copy=True, max_expansion=1000)
    assert len(m.graph.initializer) == 300_000


def test_overlapping_ranges(tmp_path):
    """Ranges of one 4 MiB data file that overlap: with no_copy they are
    views of its mapping (nothing copied); a copy load that would copy 2 GB
    of it is refused."""
    data = np.random.default_rng(1).integers(0, 256, 4 << 20, dtype=np.uint8)
    (tmp_path / "w.bin").write_bytes(data.tobytes())
    n = (4 << 20) - 1000
    model = external_model([f"t{i}" for i in range(500)], "w.bin", range(500), n)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    m = onnxio.load(str(path), no_copy=True)
    a = onnxio.numpy_helper.to_array(m.graph.initializer[499])
    assert np.array_equal(a, data[499:499 + n])
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.load(str(path))


def test_ordinary_models_load_with_the_default(tmp_path):
    """The default leaves real models alone: a model with many small
    initializers and nodes (onnx-built) loads in both modes."""
    rng = np.random.default_rng(2)
    inits = [onnx.numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), f"c{i}") for i in range(20000)]
    nodes = [helper.make_node("Identity", [f"c{i}"], [f"o{i}"]) for i in range(20000)]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("o0", TensorProto.FLOAT, [3])],
                              initializer=inits)
    model = helper.make_model(graph)
    path = tmp_path / "small_things.onnx"
    path.write_bytes(model.SerializeToString())
    for no_copy in (False, True):
        m = onnxio.load(str(path), no_copy=no_copy)
        assert m.SerializeToString() == model.SerializeToString()


# ---- writes: what a save writes is bounded by what it holds ---------------------

@pytest.fixture(scope="module")
def shared_range(tmp_path_factory):
    """1,000 initializers referring to one 4 MiB range of one data file:
    a 70 KB model that a no_copy load holds in 4 MiB."""
    d = tmp_path_factory.mktemp("range")
    w = np.random.default_rng(1).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes()
    (d / "w.bin").write_bytes(w)
    model = external_model([f"t{i}" for i in range(1000)], "w.bin", [0] * 1000, len(w))
    onnx.save(model, str(d / "m.onnx"))
    return d / "m.onnx", w


@pytest.mark.parametrize("out_name", ["out.onnx", "out.onnxz"])
def test_save_of_shared_payloads_is_refused(shared_range, tmp_path, out_name):
    """Saving a no_copy load of it would write 4.19 GB; refused before a
    byte is written, nothing left behind."""
    path, _ = shared_range
    m = onnxio.load(str(path), no_copy=True)
    with pytest.raises(ValueError, match="max_expansion") as e:
        onnxio.save(m, str(tmp_path / out_name))
    assert "4194304000 payload bytes from 4194304 distinct bytes" in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_safetensors_save_of_shared_payloads_is_refused(shared_range, tmp_path):
    """onnxio.safetensors.save takes the same budget as every save."""
    import onnxio.safetensors

    path, _ = shared_range
    m = onnxio.load(str(path), no_copy=True)
    with pytest.raises(ValueError, match="max_expansion") as e:
        onnxio.safetensors.save(m, str(tmp_path / "out.safetensors"))
    assert "4194304000 payload bytes from 4194304 distinct bytes" in str(e.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.needs("onnxio command")
@pytest.mark.parametrize("out_name, args", [("out.onnx", ["--inline"]), ("out.onnxz", []),
                                            ("out.safetensors", []), ("out.onnx", ["extract", "--tensors", "*"]),
                                            ("out.onnx", ["extract", "--tensors", "t1*,t2*"])])
def test_convert_of_shared_payloads_is_refused(shared_range, tmp_path, out_name, args):
    """Every route of the command that writes payloads (convert to every
    container, a .safetensors file, extract) refuses before writing, and
    without first reading a copy per tensor: its peak memory stays far
    below the 4 GB it would write."""
    import resource

    path, _ = shared_range
    out = tmp_path / out_name
    verb = args[:1] if args[:1] == ["extract"] else ["convert"]
    rest = args[1:] if verb == ["extract"] else args
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run([str(CLI), *verb, str(path), str(out), *rest], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "max_expansion" in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert peak < 1 << 20 or peak == before, f"peak RSS of a child {peak} KiB"  # far below the 4 GB


def test_save_of_shared_payloads_when_trusted(tmp_path):
    """Raised, the bound lets a model with shared payloads be written, with
    the bytes onnx writes for the same model."""
    w = np.arange(1 << 16, dtype=np.uint8)
    (tmp_path / "w.bin").write_bytes(w.tobytes())
    model = external_model([f"t{i}" for i in range(300)], "w.bin", [0] * 300, w.size)
    onnx.save(model, str(tmp_path / "m.onnx"))
    m = onnxio.load(str(tmp_path / "m.onnx"), no_copy=True)
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.save(m, str(tmp_path / "out.onnx"))
    onnxio.save(m, str(tmp_path / "out.onnx"), max_expansion=400)
    want = onnx.load(str(tmp_path / "m.onnx"))
    assert (tmp_path / "out.onnx").read_bytes() == want.SerializeToString()
    # Tied weights (a few tensors sharing one buffer) are far below it.
    m2 = onnxio.load(str(tmp_path / "m.onnx"), no_copy=True)
    del m2.graph.initializer[2:]
    onnxio.save(m2, str(tmp_path / "two.onnx"))
    assert len(onnx.load(str(tmp_path / "two.onnx")).graph.initializer) == 2


# ---- merges: the budget measures what the new bytes make -------------------------

def test_merge_into_a_large_message_charges_only_the_new_bytes():
    """MergeFromString of a small valid model into a message holding
    150,000 nodes appends one node: the node array is copied into a larger
    one, which is what the message held, not what the 25 new bytes make.
    protobuf (upb) merges it; onnxio gives the same bytes. A flood in the
    new bytes is still refused."""
    nodes = [onnx.NodeProto(op_type="Relu", input=[f"x{i}"], output=[f"y{i}"]) for i in range(150_000)]
    big = onnx.ModelProto(ir_version=8, graph=onnx.GraphProto(node=nodes))
    small = onnx.ModelProto(graph=onnx.GraphProto(node=[onnx.NodeProto(op_type="Add", input=["a"])])).SerializeToString()
    assert len(small) <= 25
    want = onnx.ModelProto()
    want.CopyFrom(big)
    want.MergeFromString(small)
    m = onnxio.ModelProto.FromString(big.SerializeToString())
    m.MergeFromString(small)
    assert m.SerializeToString() == want.SerializeToString()
    # What the new bytes make is still bounded: 300,000 empty nodes (600 KB)
    # need far more than 100 times their size, merged or not.
    flood = onnx.ModelProto(graph=onnx.GraphProto(node=[onnx.NodeProto()] * 300_000)).SerializeToString()
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.ModelProto.FromString(flood)
    with pytest.raises(ValueError, match="max_expansion"):
        onnxio.ModelProto.FromString(onnx.ModelProto(ir_version=8).SerializeToString()).MergeFromString(flood)
