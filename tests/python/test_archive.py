""".onnxz archives from Python: what onnxio writes, what it reads, what it
refuses, and the in-place model replacement with its crash safety.

The references are independent of onnxio: Python's zipfile, `unzip -t` (when
installed), local headers parsed here with struct, archives written here by
zipfile or by a minimal zip writer, the onnx package (its models, its
numpy_helper arrays, its SerializeToString, its own external-data save) and
numpy.
"""

import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
import zipfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as onh
import pytest

import onnxio
import onnxref
from conftest import needs

MODEL = "__MODEL_PROTO"
PAD_ID = 0x786F

# ---- models -------------------------------------------------------------------


def _arr(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


def make_model():
    """Tensors of several dtypes and sizes (below and above the 1024-byte
    threshold), names with '/' and ':' and names that differ only by case, a
    Constant node attribute tensor, a subgraph initializer, a string tensor."""
    inits = [
        onh.from_array(_arr(np.float32, 1000, 1), "enc/w:0"),        # 4000 B
        onh.from_array(_arr(np.int64, 10, 2), "b"),                  # 80 B: inline
        onh.from_array(_arr(np.float16, 3000, 3), "half"),           # 6000 B
        onh.from_array(_arr(np.uint8, 2048, 4), "W"),                # 2048 B
        onh.from_array(_arr(np.int8, 2048, 5), "w"),                 # 2048 B, same name case-folded
        onh.from_array(_arr(np.float64, 300, 6).reshape(3, 100), "dec/x:1"),  # 2400 B
        onh.from_array(_arr(np.bool_, 50, 7), "mask"),               # 50 B
        onh.from_array(_arr(np.int32, 257, 8), "i32"),               # 1028 B
        oh.make_tensor("names", TensorProto.STRING, [2], [b"a", b"bc"]),
    ]
    const = oh.make_node("Constant", [], ["c"], value=onh.from_array(_arr(np.float32, 600, 9), "const/val"))
    sub_init = onh.from_array(_arr(np.float32, 512, 10), "sub/k")   # 2048 B
    then_g = oh.make_graph([oh.make_node("Identity", ["sub/k"], ["t_out"])], "then", [],
                           [oh.make_tensor_value_info("t_out", TensorProto.FLOAT, [512])], [sub_init])
    else_g = oh.make_graph([oh.make_node("Identity", ["c"], ["e_out"])], "else", [],
                           [oh.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    nodes = [
        const,
        oh.make_node("Add", ["x", "enc/w:0"], ["y"], name="add"),
        oh.make_node("If", ["cond"], ["z"], name="if", then_branch=then_g, else_branch=else_g),
    ]
    graph = oh.make_graph(
        nodes, "g",
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1000]),
         oh.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, [1000]),
         oh.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        inits)
    return oh.make_model(graph, producer_name="test_archive", opset_imports=[oh.make_opsetid("", 17)])


def all_tensors(model):
    """(path, TensorProto) of every tensor of an onnx model: initializers and
    attribute tensors, in subgraphs too."""
    out = []

    def graph(g, where):
        for t in g.initializer:
            out.append((f"{where}/init:{t.name}", t))
        for n in g.node:
            for a in n.attribute:
                if a.HasField("t"):
                    out.append((f"{where}/{n.name or n.op_type}.{a.name}", a.t))
                for k, t in enumerate(a.tensors):
                    out.append((f"{where}/{n.name or n.op_type}.{a.name}[{k}]", t))
                if a.HasField("g"):
                    graph(a.g, f"{where}/{n.name or n.op_type}.{a.name}")
                for k, sg in enumerate(a.graphs):
                    graph(sg, f"{where}/{n.name or n.op_type}.{a.name}[{k}]")

    graph(model.graph, "main")
    return out


def assert_same_tensors(got, want):
    """Every tensor of `got` (an onnx model) has the array of `want`'s."""
    g, w = all_tensors(got), all_tensors(want)
    assert [p for p, _ in g] == [p for p, _ in w]
    for (path, tg), (_, tw) in zip(g, w):
        assert tg.data_location != TensorProto.EXTERNAL, path
        ag, aw = onh.to_array(tg), onh.to_array(tw)
        assert ag.dtype == aw.dtype and ag.shape == aw.shape, path
        assert np.array_equal(ag, aw), path


def to_onnx(m):
    return onnxio.to_onnx(m)


# ---- independent archive checks --------------------------------------------------------


def local_header(data, offset):
    """(name, extra, data offset) of the local header at `offset`, parsed here."""
    sig, _ver, _flags, _method, _t, _d, _crc, _cs, _us, nlen, xlen = struct.unpack_from("<IHHHHHIIIHH", data, offset)
    assert sig == 0x04034B50
    name = bytes(data[offset + 30: offset + 30 + nlen])
    extra = bytes(data[offset + 30 + nlen: offset + 30 + nlen + xlen])
    return name, extra, offset + 30 + nlen + xlen


def extra_ids(extra):
    ids, at = [], 0
    while at + 4 <= len(extra):
        i, n = struct.unpack_from("<HH", extra, at)
        ids.append(i)
        at += 4 + n
    assert at == len(extra)
    return ids


def unzip_ok(path):
    r = subprocess.run([needs("unzip", "an independent check of the archives"), "-t", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "No errors detected" in r.stdout


def check_written_archive(path, alignment=64):
    """What every archive onnxio writes must be: a valid zip for zipfile and
    unzip, unique names (also case-folded), __MODEL_PROTO last in the
    directory and in the file, tensor data on multiples of `alignment`, the
    padding extra field where padding was needed. Returns {name: (data
    offset, ZipInfo)}."""
    data = open(path, "rb").read()
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        infos = z.infolist()
        start_dir = z.start_dir
    unzip_ok(path)
    names = [i.filename for i in infos]
    assert len(set(names)) == len(names)
    assert len({n.casefold() for n in names}) == len(names)
    assert names[-1] == MODEL
    model = infos[-1]
    assert model.header_offset == max(i.header_offset for i in infos)
    out = {}
    for info in infos:
        name, extra, off = local_header(data, info.header_offset)
        assert name == info.filename.encode()
        out[info.filename] = (off, info)
        if info.filename == MODEL:
            assert off + info.compress_size == start_dir  # last in the file, right before the directory
            continue
        assert info.compress_type == zipfile.ZIP_STORED
        assert off % alignment == 0, (info.filename, off)
        if (info.header_offset + 30 + len(name)) % alignment != 0:
            assert PAD_ID in extra_ids(extra), info.filename
    return out


# ---- writing ---------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path):
    m = make_model()
    om = onnxio.from_onnx(m)
    p = tmp_path / "m.onnxz"
    onnxio.save(om, str(p))
    entries = check_written_archive(p)

    # The model entry, read by zipfile and parsed by onnx: every tensor of at
    # least 1024 bytes refers to its own entry, whose bytes are the payload.
    with zipfile.ZipFile(p) as z:
        inner = onnx.load_model_from_string(z.read(MODEL))
        used = set()
        for (path, t), (_, orig) in zip(all_tensors(inner), all_tensors(m)):
            if orig.HasField("raw_data") and len(orig.raw_data) >= 1024:
                assert t.data_location == TensorProto.EXTERNAL, path
                keys = {e.key: e.value for e in t.external_data}
                assert [e.key for e in t.external_data] == ["location", "offset", "length"]
                assert keys["offset"] == "0" and keys["length"] == str(len(orig.raw_data))
                assert keys["location"] in entries and keys["location"] != MODEL
                assert z.read(keys["location"]) == orig.raw_data, path
                used.add(keys["location"])
                assert not t.HasField("raw_data")
            else:
                assert t.data_location != TensorProto.EXTERNAL, path
                assert t == orig, path
        assert used == set(entries) - {MODEL}
    # A Constant attribute tensor and a subgraph initializer are entries too.
    assert len(used) == 8

    # The model as it was before the archive was written: tensors read from
    # entries have no data_location (onnx, loading the extracted archive as
    # external data, would set DEFAULT on them: an archive is not external
    # data to its user).
    with tempfile.TemporaryDirectory() as d, zipfile.ZipFile(p) as z:
        z.extractall(d)
        as_external_data = onnx.load(os.path.join(d, MODEL))
    assert any(t.HasField("data_location") for t in as_external_data.graph.initializer)
    want = m
    assert onnxref.inlined(p) == want
    assert not any(t.HasField("data_location") for t in want.graph.initializer)
    for kwargs in ({}, {"no_copy": True}, {"num_threads": 1}, {"no_copy": True, "verify_crc": True}):
        got = to_onnx(onnxio.load(str(p), **kwargs))
        assert_same_tensors(got, m)
        assert got == want, kwargs
    # Bytes, bytearray and a file object hold the same archive.
    raw = p.read_bytes()
    assert to_onnx(onnxio.load_model_from_string(raw)) == want
    assert to_onnx(onnxio.load_model_from_string(bytearray(raw), no_copy=True)) == want
    with open(p, "rb") as f:
        assert to_onnx(onnxio.load(f)) == want
    # Back to .onnx: the bytes onnx writes.
    back = tmp_path / "back.onnx"
    onnxio.save(onnxio.load(str(p), no_copy=True), str(back))
    assert back.read_bytes() == want.SerializeToString()


def test_no_copy_views_point_into_the_file(tmp_path):
    m = make_model()
    p = tmp_path / "m.onnxz"
    onnxio.save(onnxio.from_onnx(m), str(p))
    entries = check_written_archive(p)
    loaded = onnxio.load(str(p), no_copy=True)
    t = next(t for t in loaded.graph.initializer if t.name == "enc/w:0")
    view = onnxio._onnxio._payload_view(t)
    assert view.readonly  # borrowed from the read-only mapping, not copied
    off, info = entries["enc_w_0"]
    assert bytes(view) == p.read_bytes()[off: off + info.file_size]


@pytest.mark.parametrize("load_alignment", [0, 128, 4096])
def test_copy_load_keeps_each_payload_where_it_is_in_a_page(tmp_path, load_alignment):
    """A copy load reads each large payload with pread into memory that
    starts where its entry's data starts in a page (mod 4096), as zipfile
    and the local headers place it, when the load's alignment allows (the
    kernel then copies page to page: docs/io.md, "Cold ranges are read directly"); the
    bytes are numpy's, and always aligned as the load asks."""
    sizes = {"big": 3 << 20, "mid1": 512 << 10, "mid2": 300 << 10, "mid3": 260 << 10}
    arrays = {n: _arr(np.uint8, s, i) for i, (n, s) in enumerate(sizes.items())}
    graph = oh.make_graph([], "g", [], [], [onh.from_array(a, n) for n, a in arrays.items()])
    p = tmp_path / "m.onnxz"
    onnxio.save(onnxio.from_onnx(oh.make_model(graph)), str(p))  # alignment 64
    entries = check_written_archive(p)
    phases = {n: entries[n][0] % 4096 for n in sizes}
    assert len(set(phases.values())) > 1, phases  # not all on one place in a page
    m = onnxio.load(str(p), alignment=load_alignment)
    placed = 0
    for t in m.graph.initializer:
        got = onnxio.numpy_helper.to_array(t)
        np.testing.assert_array_equal(got, arrays[t.name])
        align = load_alignment or 64
        assert got.ctypes.data % align == 0, t.name
        if phases[t.name] % align == 0:
            assert got.ctypes.data % 4096 == phases[t.name], (t.name, phases[t.name], got.ctypes.data % 4096)
            placed += 1
    assert placed >= (0 if load_alignment == 4096 else 2), phases


@pytest.mark.parametrize("alignment", [4096, 1, 128])
def test_alignment(tmp_path, alignment):
    m = make_model()
    p = tmp_path / "m.onnxz"
    onnxio.save(onnxio.from_onnx(m), str(p), alignment=alignment)
    check_written_archive(p, alignment)
    assert to_onnx(onnxio.load(str(p), no_copy=True)) == onnxref.inlined(p)
    assert to_onnx(onnxio.load(str(p))) == onnxref.inlined(p)


def test_size_threshold(tmp_path):
    m = make_model()
    payloads = [t.raw_data for _, t in all_tensors(m) if t.HasField("raw_data")]
    for threshold, want in ((0, sum(1 for r in payloads if r)), (1, sum(1 for r in payloads if r)),
                            (2048, sum(1 for r in payloads if len(r) >= 2048)), (10 ** 9, 0)):
        p = tmp_path / f"t{threshold}.onnxz"
        onnxio.save(onnxio.from_onnx(m), str(p), size_threshold=threshold)
        entries = check_written_archive(p)
        assert len(entries) - 1 == want, threshold
        assert to_onnx(onnxio.load(str(p))) == onnxref.inlined(p)
        assert to_onnx(onnxio.load(str(p), no_copy=True)) == onnxref.inlined(p)


def test_save_refuses_external_options(tmp_path):
    om = onnxio.from_onnx(make_model())
    p = str(tmp_path / "m.onnxz")
    for kwargs in ({"save_as_external_data": True}, {"location": "x.data"},
                   {"save_as_external_data": True, "all_tensors_to_one_file": False},
                   {"all_tensors_to_one_file": False}, {"max_external_file_size": 1 << 20},
                   {"checksum": True}):
        with pytest.raises(ValueError, match="do not apply to an .onnxz archive"):
            onnxio.save(om, p, **kwargs)
        assert not os.path.exists(p)
    with pytest.raises(ValueError, match="only to a path"):
        with open(p, "wb") as f:
            onnxio.save(om, f)
    with pytest.raises(ValueError, match="format"):
        onnxio.save(om, p, format="textproto")
    # A model loaded without its data cannot be saved: its payloads are missing.
    good = tmp_path / "good.onnxz"
    onnxio.save(om, str(good))
    lazy = onnxio.load(str(good), load_external_data=False)
    with pytest.raises(onnxio.EncodeError, match="still external"):
        onnxio.save(lazy, str(tmp_path / "again.onnxz"))


# ---- reading archives written by zipfile ------------------------------------------------


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("model_first", [True, False])
def test_archive_made_by_zipfile(tmp_path, compression, model_first):
    m = make_model()
    d = tmp_path / "src"
    d.mkdir()
    source = onnx.ModelProto()
    source.CopyFrom(m)  # onnx.save_model moves the payloads of the model it saves
    onnx.save_model(source, str(d / "m.onnx"), save_as_external_data=True, location="m.data", size_threshold=1024)
    want = onnx.load(str(d / "m.onnx"))  # onnx's own reading of its external data
    assert_same_tensors(want, m)
    p = tmp_path / "z.onnxz"
    with zipfile.ZipFile(p, "w", compression) as z:
        items = [(MODEL, d / "m.onnx"), ("m.data", d / "m.data")]
        for name, src in (items if model_first else items[::-1]):
            z.write(src, name)
    # The model onnx.load gives for the same files, but for data_location:
    # DEFAULT there (read from a data file), absent here (read from an
    # archive entry).
    assert all(t.HasField("data_location") for t in want.graph.initializer if len(t.raw_data) >= 1024)
    want = onnxref.inlined(p)
    assert not any(t.HasField("data_location") for t in want.graph.initializer)
    for kwargs in ({}, {"no_copy": True}, {"num_threads": 1}, {"verify_crc": False}):
        got = to_onnx(onnxio.load(str(p), **kwargs))
        assert_same_tensors(got, m)
        assert_same_tensors(got, want)
        assert got == want, kwargs
    # Unloaded, the tensors name the entry.
    lazy = to_onnx(onnxio.load(str(p), load_external_data=False))
    locs = {e.value for _, t in all_tensors(lazy) for e in t.external_data if e.key == "location"}
    assert locs == {"m.data"}
    got = to_onnx(onnxio.load_model_from_string(p.read_bytes(), no_copy=True))
    assert got == want


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_archive_made_by_zipfile_streaming(compression):
    """zipfile writing to an unseekable stream (data descriptors, flag 0x08)
    and with ZIP64 extra fields forced on a small entry."""
    import io

    class Unseekable(io.RawIOBase):
        def __init__(self):
            self.buf = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.buf += b
            return len(b)

        def seekable(self):
            return False

    u = Unseekable()
    with zipfile.ZipFile(u, "w", compression) as z:
        z.writestr("w.bin", W.tobytes())
        z.writestr(MODEL, external_model())
    data = bytes(u.buf)
    assert struct.unpack_from("<H", data, 6)[0] & 0x08
    got = onh.to_array(to_onnx(load_bytes(data)).graph.initializer[0])
    assert np.array_equal(got, W)
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", compression) as z:
        with z.open("w.bin", "w", force_zip64=True) as f:
            f.write(W.tobytes())
        z.writestr(MODEL, external_model())
    for kwargs in ({}, {"no_copy": True}):
        got = onh.to_array(to_onnx(load_bytes(b.getvalue(), **kwargs)).graph.initializer[0])
        assert np.array_equal(got, W)


# ---- hostile archives -------------------------------------------------------------------


def _local(name, crc, csize, usize, method=0, flags=0, extra=b""):
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 0x21, crc, csize, usize,
                       len(name), len(extra)) + name + extra


def _central(name, crc, csize, usize, offset, method=0, flags=0, extra=b""):
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, flags, method, 0, 0x21, crc, csize, usize,
                       len(name), len(extra), 0, 0, 0, 0o100644 << 16, offset) + name + extra


def _end(count, cd_size, cd_offset):
    return struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, cd_size, cd_offset, 0)


def build_zip(items, extra_central=(), zip64_end=None):
    """A zip written here, record by record. `items`: dicts with name and
    data, and optional overrides: method, flags, crc, lcrc (local CRC),
    lname (local name), usize/csize (both headers), lusize (local size),
    offset (the central header's local header offset), lextra/cextra (extra
    fields), deflate (compress the data). `extra_central`: more raw central
    headers, each a function of the local offsets. `zip64_end`: (count,
    size, offset) of a ZIP64 end record written before the classic one
    (None: the real values), or False for none."""
    out = bytearray()
    centrals, offsets = [], {}
    for it in items:
        name = it["name"].encode()
        raw = it["data"]
        method = it.get("method", 8 if it.get("deflate") else 0)
        if it.get("deflate"):
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            stored = c.compress(raw) + c.flush()
        else:
            stored = raw
        crc = it.get("crc", zlib.crc32(raw))
        csize, usize = it.get("csize", len(stored)), it.get("usize", len(raw))
        off = len(out)
        offsets[it["name"]] = off
        out += _local(it.get("lname", it["name"]).encode(), it.get("lcrc", crc), csize, it.get("lusize", usize),
                      method, it.get("flags", 0), it.get("lextra", b"")) + stored
        centrals.append(_central(name, crc, csize, usize, it.get("offset", off), method, it.get("flags", 0),
                                 it.get("cextra", b"")))
    for f in extra_central:
        centrals.append(f(offsets))
    cd_off = len(out)
    cd = b"".join(centrals)
    out += cd
    if zip64_end is not None:
        count, size, offset = zip64_end
        rec = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, size, offset)
        out += struct.pack("<IIQI", 0x07064B50, 0, rec, 1)
    out += _end(len(centrals), len(cd), cd_off)
    return bytes(out)


W = np.arange(1000, dtype=np.float32)


def external_model(location="w.bin", offset=0, length=None):
    """A model whose one initializer is external: `location`, offset, length."""
    t = onh.from_array(W, "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length or W.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = oh.make_graph([oh.make_node("Identity", ["w"], ["y"])], "g", [],
                      [oh.make_tensor_value_info("y", TensorProto.FLOAT, [1000])], [t])
    return oh.make_model(g).SerializeToString()


def base_items(**w_overrides):
    return [dict(name="w.bin", data=W.tobytes(), **w_overrides), dict(name=MODEL, data=external_model())]


def load_bytes(data, **kwargs):
    return onnxio.load_model_from_string(data, **kwargs)


def test_hand_written_base_archive_is_valid(tmp_path):
    """The writer the hostile cases patch makes archives that zipfile,
    unzip and onnxio accept."""
    data = build_zip(base_items())
    p = tmp_path / "base.onnxz"
    p.write_bytes(data)
    with zipfile.ZipFile(p) as z:
        assert z.testzip() is None
    unzip_ok(p)
    m = load_bytes(data)
    assert np.array_equal(onh.to_array(to_onnx(m).graph.initializer[0]), W)
    assert np.array_equal(onh.to_array(to_onnx(onnxio.load(str(p), no_copy=True)).graph.initializer[0]), W)
    deflated = build_zip(base_items(deflate=True))
    assert np.array_equal(onh.to_array(to_onnx(load_bytes(deflated)).graph.initializer[0]), W)
    # With a classic end record and a ZIP64 one that agree.
    z64 = build_zip(base_items())
    cd_off = struct.unpack_from("<I", z64, len(z64) - 6)[0]
    cd_size = struct.unpack_from("<I", z64, len(z64) - 10)[0]
    agreeing = build_zip(base_items(), zip64_end=(2, cd_size, cd_off))
    assert np.array_equal(onh.to_array(to_onnx(load_bytes(agreeing)).graph.initializer[0]), W)
    with zipfile.ZipFile(__import__("io").BytesIO(agreeing)) as z:
        assert z.testzip() is None


def _archive_error(data, match, **kwargs):
    with pytest.raises(onnxio.ArchiveError, match=match) as e:
        load_bytes(data, **kwargs)
    assert isinstance(e.value, onnxio.DecodeError) and isinstance(e.value, ValueError)
    return e


def test_hostile_dotdot_name():
    _archive_error(build_zip(base_items() + [dict(name="sub/../../evil", data=b"x")]), "'..' component")


def test_hostile_backslash_dotdot_name():
    _archive_error(build_zip(base_items() + [dict(name="sub\\..\\evil", data=b"x")]), "'..' component")


def test_hostile_absolute_name():
    _archive_error(build_zip(base_items() + [dict(name="/etc/evil", data=b"x")]), "absolute path")


def test_hostile_drive_name():
    _archive_error(build_zip(base_items() + [dict(name="C:evil", data=b"x")]), "absolute path")


def test_hostile_duplicate_names(tmp_path):
    # Written by zipfile itself (it warns, and writes both).
    p = tmp_path / "dup.onnxz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("w.bin", W.tobytes())
            z.writestr("w.bin", W.tobytes())
            z.writestr(MODEL, external_model())
    with pytest.raises(onnxio.ArchiveError, match="two entries are named 'w.bin'"):
        onnxio.load(str(p))


def test_hostile_two_central_headers_same_local_header():
    extra = [lambda off: _central(b"w2.bin", zlib.crc32(W.tobytes()), W.nbytes, W.nbytes, off["w.bin"])]
    e = _archive_error(build_zip(base_items(), extra_central=extra), "w2.bin")
    assert "names 'w.bin'" in str(e.value)


def test_hostile_overlapping_entries():
    """Entry 'a' holds, inside its data, a valid local header and data of
    'w.bin' (the overlapping-entries zip bomb layout)."""
    wb = W.tobytes()
    inner = _local(b"w.bin", zlib.crc32(wb), len(wb), len(wb)) + wb
    outer = b"\0" * 16 + inner + b"\0" * 16
    extra = [lambda off: _central(b"w.bin", zlib.crc32(wb), len(wb), len(wb), off["a"] + 30 + 1 + 16)]
    data = build_zip([dict(name="a", data=outer), dict(name=MODEL, data=external_model())], extra_central=extra)
    _archive_error(data, "entries 'a' and 'w.bin' overlap")


def test_hostile_data_past_central_directory():
    # Both headers agree on a size that runs over the model entry and into the directory.
    data = build_zip(base_items(usize=W.nbytes + 5000, csize=W.nbytes + 5000))
    _archive_error(data, "run into the central directory or past the end of the file")


def test_hostile_data_past_end_of_file():
    data = build_zip(base_items(usize=0x7FFFFFFF, csize=0x7FFFFFFF))
    _archive_error(data, "run into the central directory or past the end of the file")


def test_hostile_local_name_differs():
    _archive_error(build_zip(base_items(lname="x.bin")), "its local header at byte 0 names 'x.bin'")


def test_hostile_local_size_differs():
    _archive_error(build_zip(base_items(lusize=W.nbytes - 4)), "local header .* and central header .* disagree")


def test_hostile_local_crc_differs():
    _archive_error(build_zip(base_items(lcrc=12345)), "local header \\(CRC 00003039.* disagree")


def test_hostile_zip64_end_disagrees():
    good = build_zip(base_items())
    cd_size, cd_off = struct.unpack_from("<II", good, len(good) - 10)
    _archive_error(build_zip(base_items(), zip64_end=(3, cd_size, cd_off)), "and its ZIP64 record .* disagree")
    _archive_error(build_zip(base_items(), zip64_end=(2, cd_size, cd_off + 1)), "disagree|ZIP64")


def test_hostile_ffffffff_without_zip64_extra():
    _archive_error(build_zip(base_items(usize=0xFFFFFFFF, csize=0xFFFFFFFF)),
                   "holds 0xFFFFFFFF without a ZIP64 extra field")


def test_hostile_classic_end_wants_zip64_records():
    good = bytearray(build_zip(base_items()))
    struct.pack_into("<I", good, len(good) - 6, 0xFFFFFFFF)  # cd offset "in ZIP64", with no ZIP64 records
    _archive_error(bytes(good), "needs ZIP64 records")


def test_hostile_missing_model():
    _archive_error(build_zip([dict(name="w.bin", data=W.tobytes()), dict(name="model.onnx", data=external_model())]),
                   "no entry named __MODEL_PROTO")


def test_hostile_truncated():
    good = build_zip(base_items())
    _archive_error(good[:-5], "no end of central directory record")
    _archive_error(b"PK\x03\x04", "too few")


def test_tensor_location_not_an_entry(tmp_path):
    data = build_zip([dict(name="other.bin", data=W.tobytes()), dict(name=MODEL, data=external_model())])
    with pytest.raises(onnxio.ExternalDataError, match="'w.bin' is not an entry of the archive"):
        load_bytes(data)
    # Left unloaded, the reference is not followed.
    p = tmp_path / "loc.onnxz"
    p.write_bytes(data)
    lazy = to_onnx(onnxio.load(str(p), load_external_data=False))
    assert lazy.graph.initializer[0].external_data[0].value == "w.bin"


def test_tensor_location_is_the_model_entry():
    data = build_zip([dict(name="w.bin", data=W.tobytes()), dict(name=MODEL, data=external_model(location=MODEL))])
    with pytest.raises(onnxio.ExternalDataError, match="model entry itself"):
        load_bytes(data)


def test_tensor_range_past_entry():
    data = build_zip([dict(name="w.bin", data=W.tobytes()), dict(name=MODEL, data=external_model(offset=8))])
    with pytest.raises(onnxio.ExternalDataError, match="runs past the end of entry 'w.bin'"):
        load_bytes(data)
    data = build_zip([dict(name="w.bin", data=W.tobytes()[:-4]), dict(name=MODEL, data=external_model())])
    with pytest.raises(onnxio.ExternalDataError, match="runs past the end of entry"):
        load_bytes(data)
    data = build_zip([dict(name="w.bin", data=W.tobytes()), dict(name=MODEL, data=external_model(offset=5000))])
    with pytest.raises(onnxio.ExternalDataError, match="past the end of entry"):
        load_bytes(data)


@pytest.mark.parametrize("deflate", [False, True])
def test_crc_mismatch(tmp_path, deflate):
    wb = bytearray(W.tobytes())
    good_crc = zlib.crc32(wb)
    wb[100] ^= 0x40
    data = build_zip([dict(name="w.bin", data=bytes(wb), crc=good_crc, deflate=deflate),
                      dict(name=MODEL, data=external_model())])
    p = tmp_path / "crc.onnxz"
    p.write_bytes(data)
    with zipfile.ZipFile(p) as z:  # the reference agrees the entry is bad
        assert z.testzip() == "w.bin"
    with pytest.raises(onnxio.ExternalDataError, match="entry 'w.bin' has CRC-32"):
        onnxio.load(str(p))
    with pytest.raises(onnxio.ExternalDataError, match="CRC-32"):
        load_bytes(data)
    if deflate:  # inflating always checks
        with pytest.raises(onnxio.ExternalDataError, match="CRC-32"):
            onnxio.load(str(p), verify_crc=False)
        return
    flipped = np.frombuffer(bytes(wb), dtype=np.float32)
    for kwargs in ({"verify_crc": False}, {"no_copy": True}, {"options": onnxio.ParseOptions(verify_crc=False)}):
        got = onh.to_array(to_onnx(onnxio.load(str(p), **kwargs)).graph.initializer[0])
        assert np.array_equal(got, flipped) and not np.array_equal(got, W)
    with pytest.raises(onnxio.ExternalDataError, match="CRC-32"):
        onnxio.load(str(p), no_copy=True, verify_crc=True)


def test_model_entry_crc_mismatch():
    model = bytearray(external_model())
    crc = zlib.crc32(model)
    model[-1] ^= 1
    data = build_zip([dict(name="w.bin", data=W.tobytes()), dict(name=MODEL, data=bytes(model), crc=crc)])
    with pytest.raises(onnxio.ExternalDataError, match="'__MODEL_PROTO' has CRC-32"):
        load_bytes(data)


def test_hostile_encrypted():
    _archive_error(build_zip(base_items(flags=1)), "entry 'w.bin' is encrypted")


def test_hostile_unsupported_method():
    _archive_error(build_zip(base_items(method=12)), "compression method 12")


def test_hostile_deflate_bomb_claim():
    """An entry claiming 1 TiB from a few hundred deflated bytes (ZIP64 sizes)
    is refused by the ratio check, before any buffer is sized from it (an
    allocation would fail with MemoryError, or inflating would report a
    size mismatch)."""
    claim = 1 << 40
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    stored = c.compress(W.tobytes()) + c.flush()
    z64 = struct.pack("<HHQQ", 1, 16, claim, len(stored))
    items = [dict(name="w.bin", data=W.tobytes(), deflate=True, usize=0xFFFFFFFF, csize=0xFFFFFFFF,
                  lextra=z64, cextra=z64),
             dict(name=MODEL, data=external_model())]
    data = build_zip(items)
    _archive_error(data, "claims 1099511627776 bytes from .* deflated ones, more than deflate can give")
    # A 32-bit claim too.
    items = [dict(name="w.bin", data=W.tobytes(), deflate=True, usize=0xFFFFFFF0),
             dict(name=MODEL, data=external_model())]
    _archive_error(build_zip(items), "more than deflate can give")


def test_hostile_deflate_size_lie():
    # Within the ratio, but not what the data inflates to.
    items = [dict(name="w.bin", data=W.tobytes(), deflate=True, usize=W.nbytes + 8),
             dict(name=MODEL, data=external_model())]
    _archive_error(build_zip(items), "inflates to less than its recorded size")


def test_archive_error_is_a_decode_error():
    assert issubclass(onnxio.ArchiveError, onnxio.DecodeError)
    assert issubclass(onnxio.ArchiveError, ValueError)
    assert onnxio.ArchiveError.__module__ == "onnxio"
    assert onnxio.ArchiveError is onnxio._onnxio.ArchiveError
    with pytest.raises(onnxio.DecodeError):
        load_bytes(b"PK\x05\x06" + b"\0" * 10)


# ---- replacing the model -----------------------------------------------------------------


def edited(model_onnx, tag):
    """What the edit in `edit` does, on an onnx model."""
    m = onnx.ModelProto()
    m.CopyFrom(model_onnx)
    m.graph.node[1].name = f"add-{tag}"
    e = m.metadata_props.add()
    e.key, e.value = "edit", tag
    m.doc_string = f"edited {tag} " + "x" * 300000  # a large model makes the writes take a while
    return m


def edit(om, tag):
    om.graph.node[1].name = f"add-{tag}"
    e = om.metadata_props.add()
    e.key, e.value = "edit", tag
    om.doc_string = f"edited {tag} " + "x" * 300000


def tensor_entries(path):
    data = open(path, "rb").read()
    with zipfile.ZipFile(path) as z:
        out = {}
        for i in z.infolist():
            if i.filename != MODEL:
                _, _, off = local_header(data, i.header_offset)
                out[i.filename] = (i.header_offset, off, i.file_size, i.CRC, data[off: off + i.file_size])
        return out, z.getinfo(MODEL).header_offset


def test_replace_archive_model(tmp_path):
    m = make_model()
    p = tmp_path / "m.onnxz"
    onnxio.save(onnxio.from_onnx(m), str(p))
    before, model_at = tensor_entries(p)
    prefix = p.read_bytes()[:model_at]

    want = onnxref.inlined(p)  # what onnx loads from the extracted archive
    for tag in ("one", "two"):  # two replacements in a row
        lazy = onnxio.load(str(p), load_external_data=False)
        edit(lazy, tag)
        onnxio.replace_archive_model(lazy, str(p))
        want = edited(want, tag)
        got = to_onnx(onnxio.load(str(p)))
        assert got == want
        assert_same_tensors(got, m)
        assert to_onnx(onnxio.load(str(p), no_copy=True)) == want
        after, new_model_at = tensor_entries(p)
        assert after == before  # same entries, same offsets, same bytes
        assert new_model_at > model_at
        assert p.read_bytes()[:len(prefix)] == prefix  # nothing before the first model moved
        with zipfile.ZipFile(p) as z:
            assert z.testzip() is None
            assert [i.filename for i in z.infolist()][-1] == MODEL
            inner = onnx.load_model_from_string(z.read(MODEL))
            assert inner.graph.node[1].name == f"add-{tag}"
        unzip_ok(p)
        model_at = new_model_at


def test_replace_with_loaded_payloads_inlines_them(tmp_path):
    m = make_model()
    p = tmp_path / "m.onnxz"
    onnxio.save(onnxio.from_onnx(m), p)  # pathlib paths too
    loaded = onnxref.inlined(p)  # what onnx loads from the extracted archive
    before, _ = tensor_entries(p)
    full = onnxio.load(str(p))  # payloads loaded: written inline in the new model
    full.graph.node[1].name = "inline"
    onnxio.replace_archive_model(full, p)
    after, _ = tensor_entries(p)
    assert after == before
    with zipfile.ZipFile(p) as z:
        inner = onnx.load_model_from_string(z.read(MODEL))
    assert all(t.data_location != TensorProto.EXTERNAL for _, t in all_tensors(inner))
    want = onnx.ModelProto()
    want.CopyFrom(loaded)
    want.graph.node[1].name = "inline"
    assert to_onnx(onnxio.load(str(p))) == want


def test_replace_refuses_bad_references(tmp_path):
    m = make_model()
    p = tmp_path / "m.onnxz"
    onnxio.save(onnxio.from_onnx(m), str(p))
    original = p.read_bytes()
    lazy = onnxio.load(str(p), load_external_data=False)
    t = next(t for t in lazy.graph.initializer if t.name == "enc/w:0")
    for e in t.external_data:
        if e.key == "location":
            e.value = "nope.bin"
    with pytest.raises(onnxio.ExternalDataError, match="not an entry"):
        onnxio.replace_archive_model(lazy, str(p))
    assert p.read_bytes() == original
    lazy = onnxio.load(str(p), load_external_data=False)
    t = next(t for t in lazy.graph.initializer if t.name == "enc/w:0")
    for e in t.external_data:
        if e.key == "offset":
            e.value = "64"
    with pytest.raises(onnxio.ExternalDataError, match="runs past the end of entry"):
        onnxio.replace_archive_model(lazy, str(p))
    assert p.read_bytes() == original
    plain = tmp_path / "m.onnx"
    onnxio.save(onnxio.from_onnx(m), str(plain))
    with pytest.raises(onnxio.ArchiveError):
        onnxio.replace_archive_model(lazy, str(plain))
    with pytest.raises(FileNotFoundError):
        onnxio.replace_archive_model(lazy, str(tmp_path / "missing.onnxz"))
    with pytest.raises(TypeError):
        onnxio.replace_archive_model(b"not a model", str(p))


_CHILD = textwrap.dedent("""
    import resource, signal, sys, time
    import onnxio
    path, limit, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    # Python ignores SIGXFSZ at startup; the default action (the process is
    # killed at the write that crosses the limit) is the realistic crash.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    m = onnxio.load(path, load_external_data=False)
    m.graph.node[1].name = "add-" + tag
    e = m.metadata_props.add()
    e.key, e.value = "edit", tag
    m.doc_string = "edited " + tag + " " + "x" * 300000
    if limit:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    print("ready", flush=True)
    t0 = time.perf_counter()
    onnxio.replace_archive_model(m, path)
    print("done", time.perf_counter() - t0, flush=True)
""")


def _child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(onnxio.__file__))]
                                        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _ends_with_end_record(path):
    data = open(path, "rb").read()
    return len(data) >= 22 and data[-22:-18] == b"PK\x05\x06" and data[-2:] == b"\0\0"


def _check_state(path, old, new):
    """The archive at `path` after an interrupted replacement: onnxio loads
    the old or the new model, tensors intact. Returns "old" or "new", and
    whether the file ends with a complete end record."""
    got = to_onnx(onnxio.load(str(path)))
    state = "old" if got == old else "new" if got == new else None
    assert state, "the archive holds neither the old nor the new model"
    assert to_onnx(onnxio.load(str(path), no_copy=True)) == got
    complete = _ends_with_end_record(path)
    if complete:
        # zipfile reads such a file too, and finds the same model.
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None
            inner = onnx.load_model_from_string(z.read(MODEL))
        assert inner.graph.node[1].name == got.graph.node[1].name
    # Otherwise the file ends in a partial copy of the old central directory
    # (the first write of a replacement): only onnxio reads it, through the
    # last end record whose directory ends right before it (the old one);
    # zipfile looks for the end record only at the end of the file.
    return state, complete


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE / SIGXFSZ")
def test_replace_crash_safety(tmp_path):
    import resource  # noqa: F401  (POSIX only)

    m = make_model()
    pristine = tmp_path / "pristine.onnxz"
    onnxio.save(onnxio.from_onnx(m), str(pristine))
    old_size = pristine.stat().st_size
    with zipfile.ZipFile(pristine) as z:
        old_dir = old_size - z.start_dir  # central directory + end record
    # The final size, from a replacement that completes.
    done = tmp_path / "done.onnxz"
    shutil.copy(pristine, done)
    r = subprocess.run([sys.executable, "-c", _CHILD, str(done), "0", "crash"], env=_child_env(),
                       capture_output=True, text=True)
    assert r.returncode == 0 and "done" in r.stdout, r.stderr
    timed = r
    final = done.stat().st_size
    old = onnxref.inlined(pristine)  # what onnx loads from the extracted archive
    new = edited(old, "crash")
    assert to_onnx(onnxio.load(str(done))) == new

    seen = set()
    p = tmp_path / "m.onnxz"
    limits = sorted({old_size, old_size + 1, final - 1, final, final + 1, final + 22, final + old_dir - 23,
                     final + old_dir - 1, final + old_dir, final + old_dir + 1000,
                     *np.linspace(old_size, final, 5).astype(int).tolist(),
                     *np.linspace(final, final + old_dir, 9).astype(int).tolist()})
    for limit in limits:
        shutil.copy(pristine, p)
        r = subprocess.run([sys.executable, "-c", _CHILD, str(p), str(limit), "crash"], env=_child_env(),
                           capture_output=True, text=True)
        if limit < final + old_dir:
            assert r.returncode == -signal.SIGXFSZ, (limit, r.returncode, r.stderr)
        else:
            assert r.returncode == 0, (limit, r.stderr)
        state, complete = _check_state(p, old, new)
        assert state == ("new" if r.returncode == 0 else "old"), limit
        seen.add((state, complete))
        if limit <= final:
            assert p.read_bytes() == pristine.read_bytes()  # killed at the first write, past the limit
    assert ("old", False) in seen  # a partial copy of the old directory, read by onnxio alone
    assert ("old", True) in seen and ("new", True) in seen

    # SIGKILL at random times: mostly within the replacement itself (its
    # duration measured by the child above), sometimes anywhere in the
    # child's life.
    rng = random.Random(1234)
    duration = float(timed.stdout.split()[-1])
    for k in range(30):
        shutil.copy(pristine, p)
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(p), "0", "crash"], env=_child_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if k % 5:
            assert child.stdout.readline().startswith(b"ready")
            time.sleep(rng.uniform(0, 1.5 * duration))
        else:
            time.sleep(rng.uniform(0, 0.3))
        child.kill()
        child.communicate()
        state, complete = _check_state(p, old, new)
        seen.add((state, complete))

    # A replacement that fails with an error (EFBIG: SIGXFSZ ignored, as
    # Python leaves it) leaves the old archive byte for byte (what it
    # appended is cut off again), and a later one works.
    shutil.copy(pristine, p)
    child = _CHILD.replace("signal.signal(signal.SIGXFSZ, signal.SIG_DFL)", "pass")
    r = subprocess.run([sys.executable, "-c", child, str(p), str(final + old_dir // 2), "crash"], env=_child_env(),
                       capture_output=True, text=True)
    assert r.returncode == 1 and "OSError" in r.stderr, r.stderr
    assert _check_state(p, old, new) == ("old", True)
    assert p.read_bytes() == pristine.read_bytes()
    r = subprocess.run([sys.executable, "-c", _CHILD, str(p), "0", "crash"], env=_child_env(),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _check_state(p, old, new) == ("new", True)
    unzip_ok(p)


# ---- .onnx -> .onnxz -> .onnx gives back the same bytes -------------------------

@pytest.mark.parametrize("source", [pytest.param("libonnx-testdata", marks=pytest.mark.slow), "shared-corpus"])
def test_archive_round_trip_gives_back_the_bytes(tmp_path, source):
    """Every model of the set, loaded, saved as .onnxz, loaded from it and
    serialized, equals what the onnx package (protobuf) serializes for the
    original: tensors read from entries come back as they were, without a
    data_location the original did not have."""
    root = needs(source)
    checked, differ = 0, []
    z = tmp_path / "m.onnxz"
    for path in sorted(root.rglob("*.onnx")):
        try:
            want = onnx.load(str(path), load_external_data=False)
        except Exception:  # noqa: BLE001 - a file protobuf does not read is not this test's
            continue
        if any(t.data_location == onnx.TensorProto.EXTERNAL for t in want.graph.initializer):
            continue  # its payloads live in files beside it: not a model of one file
        m = onnxio.load(str(path))
        onnxio.save(m, str(z))
        back = onnxio.load(str(z)).SerializeToString()
        checked += 1
        if back != want.SerializeToString():
            differ.append(path.name)
    assert checked > 0
    assert not differ, f"{len(differ)} of {checked} models differ after .onnxz: {differ[:10]}"


def _explicit_default_models():
    """Models whose tensors carry fields set to their defaults explicitly
    (present on the wire): data_location DEFAULT with raw_data (as
    dynamically quantized exports write their scales and zero points),
    with typed data, with an empty raw_data; in initializers, in a node's
    tensor attribute and in a subgraph's initializer."""
    import numpy as np
    from onnx import helper, numpy_helper

    def t(name, arr, explicit=True, empty_raw=False):
        x = numpy_helper.from_array(arr, name)
        if explicit:
            x.data_location = onnx.TensorProto.DEFAULT
        if empty_raw:
            x.raw_data = b""
        return x

    a = np.arange(2 * 1024, dtype=np.float32).reshape(2, 1024)  # above every threshold: an entry
    typed = helper.make_tensor("typed", onnx.TensorProto.FLOAT, [2], [1.0, 2.0])
    typed.data_location = onnx.TensorProto.DEFAULT
    scale = t("scale", np.array(0.5, np.float32))
    zp = t("zp", np.array(3, np.uint8))
    empty = t("empty", np.zeros((0,), np.float32), empty_raw=True)
    plain = t("plain", a, explicit=False)
    sub = helper.make_graph([helper.make_node("Identity", ["s"], ["o"])], "sub", [],
                            [helper.make_tensor_value_info("o", onnx.TensorProto.FLOAT, [2, 1024])],
                            initializer=[t("s", a)])
    nodes = [helper.make_node("Constant", [], ["c"], value=t("cv", a)),
             helper.make_node("If", ["cond"], ["r"], then_branch=sub, else_branch=sub)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, [2, 1024])],
                          initializer=[t("w", a), scale, zp, typed, empty, plain])
    yield "explicit-defaults", helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_archive_round_trip_keeps_explicit_default_fields(tmp_path):
    """A field set to its default explicitly (data_location: DEFAULT)
    survives .onnx -> .onnxz -> .onnx: the bytes are the original's, as
    protobuf serializes it, through the library and through the command."""
    from conftest import needs

    cli = str(needs("onnxio command"))
    for name, model in _explicit_default_models():
        want = model.SerializeToString()
        src = tmp_path / f"{name}.onnx"
        src.write_bytes(want)
        z = tmp_path / f"{name}.onnxz"
        onnxio.save(onnxio.load(str(src)), str(z))
        with zipfile.ZipFile(z) as f:
            assert len(f.namelist()) >= 4, f.namelist()  # w, cv, s (twice shared or not) and the model
        assert onnxio.load(str(z)).SerializeToString() == want, name
        # Small tensors too, once each is an entry (the quantized exports'
        # scales and zero points).
        subprocess.run([cli, "convert", str(src), str(z), "--size-threshold", "1"], check=True)
        assert onnxio.load(str(z)).SerializeToString() == want, name
        # The archive's model entry is still what onnx reads with its data
        # beside it: unpacked, it loads to the original's values.
        subprocess.run([cli, "convert", str(src), str(z)], check=True)
        out = tmp_path / f"{name}.back.onnx"
        subprocess.run([cli, "convert", str(z), str(out)], check=True)
        assert out.read_bytes() == want, name
