"""Tests of the `onnxio` command with .onnxz archives: `convert` to and from
archives and `info` on an archive.

Every check is made against an independent reader: Python's zipfile (entry
list, CRC-32s via testzip, each entry's bytes), `unzip -t` when installed,
the local headers parsed here with struct (data offsets, the padding extra
field), and the onnx package (onnx.load of what comes back out, every
initializer compared with numpy).

The command is taken from $ONNXIO_CLI, by default <repo>/build/onnxio.
"""

import json
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxref
from clitool import run, run_ok
from conftest import needs

MODEL_ENTRY = "__MODEL_PROTO"


def assert_usage_error(rc, out, err):
    assert rc == 2, err
    assert out == b""
    assert err.startswith("onnxio: convert: ")
    assert "usage: onnxio convert" in err


def assert_failure(rc, out, err, verb, file):
    assert rc == 1, err
    assert out == b""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"onnxio: {verb}: {file}: ")


# ---- models ----------------------------------------------------------------


def make_model():
    """A few tensors from a few bytes to a few MiB: raw_data ones on both sides
    of the default threshold (1024), typed-data and string ones (which stay
    inline), and a Constant node whose tensor an archive takes too."""
    rng = np.random.default_rng(1)
    arrays = {
        "tiny": rng.standard_normal(4).astype(np.float32),  # 16 B
        "below": rng.standard_normal(255).astype(np.float32),  # 1020 B
        "exactly": rng.standard_normal(256).astype(np.float32),  # 1024 B
        "odd/name:1": rng.integers(-9, 9, 777).astype(np.int64),  # 6216 B
        "half": rng.standard_normal((33, 65)).astype(np.float16),  # 4290 B
        "big": rng.standard_normal((512, 1100)).astype(np.float32),  # 2.1 MiB
    }
    inits = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    inits.append(helper.make_tensor("typed", TensorProto.FLOAT, [300], np.arange(300, dtype=np.float32)))
    inits.append(helper.make_tensor("words", TensorProto.STRING, [3], [b"ab", b"cde", b""]))
    const = numpy_helper.from_array(rng.standard_normal(2000).astype(np.float32), "const_value")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1100])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 512])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, [2000])
    nodes = [
        helper.make_node("Transpose", ["big"], ["big_t"]),
        helper.make_node("MatMul", ["x", "big_t"], ["y"]),
        helper.make_node("Constant", [], ["c"], value=const),
    ]
    graph = helper.make_graph(nodes, "archived", [x], [y, c], initializer=inits)
    return helper.make_model(graph, producer_name="test_cli_archive", opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(make_model(), str(path))  # written by libprotobuf
    return path


def raw_sizes(path):
    """Bytes of every raw_data payload of the model, initializers and
    Constant tensors, by tensor name."""
    m = onnx.load(str(path), load_external_data=False)
    sizes = {t.name: len(t.raw_data) for t in m.graph.initializer if t.HasField("raw_data")}
    for n in m.graph.node:
        for a in n.attribute:
            if a.HasField("t") and a.t.HasField("raw_data"):
                sizes[a.t.name] = len(a.t.raw_data)
    return sizes


def entry_name(tensor_name):
    """The entry name the writer gives a tensor (when no other clashes)."""
    name = "".join(ch if ch.isalnum() and ch.isascii() or ch in "._-" else "_" for ch in tensor_name)
    return "_" + name[1:] if name.startswith(".") else name


def assert_same_tensors(a_path, b_path):
    a = onnx.load(str(a_path))  # reads external data
    b = onnx.load(str(b_path))
    assert [t.name for t in a.graph.initializer] == [t.name for t in b.graph.initializer]
    for x, y in zip(a.graph.initializer, b.graph.initializer):
        xa, ya = numpy_helper.to_array(x), numpy_helper.to_array(y)
        assert xa.dtype == ya.dtype and xa.shape == ya.shape, x.name
        assert np.array_equal(xa, ya), x.name


# ---- the archive, read independently ---------------------------------------


def local_headers(path):
    """For each entry (zipfile's central directory view), what its local
    header says: the data offset and the extra fields, parsed here."""
    data = Path(path).read_bytes()
    out = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            off = info.header_offset
            sig, _ver, _flags, method, _t, _d, crc, csize, usize, nlen, elen = struct.unpack(
                "<IHHHHHIIIHH", data[off : off + 30]
            )
            assert sig == 0x04034B50, info.filename
            assert data[off + 30 : off + 30 + nlen].decode() == info.filename
            extra = data[off + 30 + nlen : off + 30 + nlen + elen]
            ids, pos = [], 0
            while pos + 4 <= len(extra):
                eid, esize = struct.unpack("<HH", extra[pos : pos + 4])
                ids.append(eid)
                pos += 4 + esize
            assert pos == len(extra), info.filename
            out[info.filename] = {
                "data_offset": off + 30 + nlen + elen,
                "method": method,
                "extra_ids": ids,
            }
    return out


def check_archive(path, alignment=64):
    """The archive is valid for zipfile and unzip, has __MODEL_PROTO last,
    stored tensor entries whose data starts on `alignment`, and a model whose
    external tensors refer to those entries within their bounds."""
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None  # every CRC-32 checks
        infos = z.infolist()
        names = [i.filename for i in infos]
        assert names[-1] == MODEL_ENTRY and names.count(MODEL_ENTRY) == 1
        assert len(set(names)) == len(names)
        entries = {i.filename: z.read(i.filename) for i in infos}
    p = subprocess.run([needs("unzip", "an independent check of the archives"), "-t", str(path)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "No errors detected" in p.stdout
    headers = local_headers(path)
    for name, h in headers.items():
        if name == MODEL_ENTRY:
            continue
        assert h["method"] == 0, name  # stored
        assert h["data_offset"] % alignment == 0, (name, h["data_offset"])
        # any padding is carried in onnxio's extra field (0x786F, "ox")
        assert set(h["extra_ids"]) <= {0x786F, 0x0001}, (name, h["extra_ids"])
    model = onnx.load_model_from_string(entries[MODEL_ENTRY])
    referenced = {}
    for t in tensors_of(model):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        kv = {e.key: e.value for e in t.external_data}
        loc, off, length = kv["location"], int(kv.get("offset", 0)), int(kv["length"])
        assert loc in entries and loc != MODEL_ENTRY, loc
        assert off + length <= len(entries[loc])
        referenced[t.name] = entries[loc][off : off + length]
    return entries, referenced


def tensors_of(model):
    yield from model.graph.initializer
    for n in model.graph.node:
        for a in n.attribute:
            if a.HasField("t"):
                yield a.t


# ---- convert: onnx <-> onnxz -------------------------------------------------


def test_round_trip_is_byte_identical(model_path, tmp_path):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch)
    entries, referenced = check_archive(arch)
    sizes = raw_sizes(model_path)
    # what got an entry: every raw_data payload of at least 1024 bytes,
    # Constant attributes included, with its exact bytes
    want = {name for name, size in sizes.items() if size >= 1024}
    assert set(referenced) == want
    original = onnx.load(str(model_path))
    for t in tensors_of(original):
        if t.name in want:
            assert referenced[t.name] == t.raw_data, t.name
    assert set(entries) == {entry_name(n) for n in want} | {MODEL_ENTRY}

    back = tmp_path / "back.onnx"
    run_ok("convert", arch, back)  # an archive IN is read inline by default
    assert back.read_bytes() == onnxref.inlined_bytes(arch)
    assert_same_tensors(back, model_path)
    # --inline says the same thing explicitly
    run_ok("convert", arch, tmp_path / "inline.onnx", "--inline")
    assert (tmp_path / "inline.onnx").read_bytes() == back.read_bytes()


@pytest.mark.parametrize("copy", ["--copy", "--no-copy"])
@pytest.mark.parametrize("threads", ["1", "0"])
def test_round_trip_load_modes(model_path, tmp_path, copy, threads):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch, copy, "--threads", threads)
    reference = tmp_path / "ref.onnxz"
    run_ok("convert", model_path, reference, "--threads", "1")
    assert arch.read_bytes() == reference.read_bytes()  # same bytes whatever N or mode
    back = tmp_path / "back.onnx"
    run_ok("convert", arch, back, copy, "--threads", threads)
    assert back.read_bytes() == onnxref.inlined_bytes(arch)


def test_round_trip_testdata(tmp_path):
    src = needs("libonnx-testdata") / "pytorch-converted/test_Conv3d/model.onnx"
    assert src.exists(), f"{src}: not in this libonnx-testdata"
    arch = tmp_path / "m.onnxz"
    run_ok("convert", src, arch, "--size-threshold", "0")
    _, referenced = check_archive(arch)
    assert set(referenced) == {n for n, s in raw_sizes(src).items() if s > 0}
    back = tmp_path / "back.onnx"
    run_ok("convert", arch, back)
    assert back.read_bytes() == onnxref.inlined_bytes(arch)
    assert_same_tensors(back, src)


@pytest.mark.parametrize("alignment", [None, "64", "4096", "4K", "1"])
def test_alignment(model_path, tmp_path, alignment):
    arch = tmp_path / "m.onnxz"
    args = ["convert", model_path, arch, "--size-threshold", "0"]
    if alignment:
        args += ["--alignment", alignment]
    run_ok(*args)
    want = {None: 64, "4K": 4096}.get(alignment) or int(alignment)
    _, referenced = check_archive(arch, alignment=want)
    assert len(referenced) == len([s for s in raw_sizes(model_path).values() if s > 0])
    if want > 1:
        # padding was needed somewhere, so the check above is not vacuous
        offsets = [h["data_offset"] for n, h in local_headers(arch).items() if n != MODEL_ENTRY]
        assert all(o % want == 0 for o in offsets)
    run_ok("convert", arch, tmp_path / "back.onnx")
    assert (tmp_path / "back.onnx").read_bytes() == onnxref.inlined_bytes(arch)


@pytest.mark.parametrize("threshold,limit", [("0", 1), ("1", 1), ("1024", 1024), ("1025", 1025),
                                             ("5K", 5120), ("1M", 1 << 20), ("64M", 1 << 26)])
def test_size_threshold(model_path, tmp_path, threshold, limit):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch, "--size-threshold", threshold)
    entries, referenced = check_archive(arch)
    sizes = raw_sizes(model_path)
    assert set(referenced) == {n for n, s in sizes.items() if s >= limit and s > 0}
    assert len(entries) == len(referenced) + 1
    run_ok("convert", arch, tmp_path / "back.onnx")
    assert (tmp_path / "back.onnx").read_bytes() == onnxref.inlined_bytes(arch)


def test_external_data_to_archive_and_back(model_path, tmp_path):
    ext_dir = tmp_path / "ext"
    ext_dir.mkdir()
    ext = ext_dir / "ext.onnx"
    run_ok("convert", model_path, ext, "--external-data", "weights.bin")
    assert (ext_dir / "weights.bin").exists()

    arch = tmp_path / "m.onnxz"
    run_ok("convert", ext, arch)  # external data is read, wherever OUT is
    check_archive(arch)

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    back = out_dir / "back.onnx"
    run_ok("convert", arch, back, "--external-data", "data.bin", "--size-threshold", "2K")
    m = onnx.load(str(back), load_external_data=False)
    moved = {t.name for t in m.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    assert moved == {n for n, s in raw_sizes(model_path).items() if s >= 2048 and n != "const_value"}
    assert all(
        {e.key: e.value for e in t.external_data}["location"] == "data.bin"
        for t in m.graph.initializer if t.name in moved
    )
    assert_same_tensors(back, model_path)

    per = out_dir / "per.onnx"
    run_ok("convert", arch, per, "--one-file-per-tensor")
    assert_same_tensors(per, model_path)
    inline = out_dir / "inline.onnx"
    run_ok("convert", per, inline, "--inline")
    assert inline.read_bytes() == onnxref.inlined_bytes(per)


def test_external_data_with_base_dir(model_path, tmp_path):
    (tmp_path / "data").mkdir()
    ext = tmp_path / "data" / "ext.onnx"
    run_ok("convert", model_path, ext, "--external-data", "weights.bin")
    moved = tmp_path / "moved.onnx"
    shutil.copy(ext, moved)  # its data file stays in data/
    arch = tmp_path / "m.onnxz"
    rc, out, err = run("convert", moved, arch)
    assert_failure(rc, out, err, "convert", moved)
    run_ok("convert", moved, arch, "--base-dir", tmp_path / "data")
    run_ok("convert", arch, tmp_path / "back.onnx")
    assert (tmp_path / "back.onnx").read_bytes() == onnxref.inlined_bytes(arch)


def test_archive_to_archive(model_path, tmp_path):
    a = tmp_path / "a.onnxz"
    run_ok("convert", model_path, a, "--size-threshold", "0")
    b = tmp_path / "b.onnxz"
    run_ok("convert", a, b, "--alignment", "4096", "--size-threshold", "4K")
    _, referenced = check_archive(b, alignment=4096)
    assert set(referenced) == {n for n, s in raw_sizes(model_path).items() if s >= 4096}
    c = tmp_path / "c.onnxz"
    run_ok("convert", b, c, "--size-threshold", "0")
    # the same archive as made directly: rewriting loses and adds nothing
    assert c.read_bytes() == a.read_bytes()
    # in place, from the mapping of the file being replaced
    run_ok("convert", c, c, "--alignment", "4096", "--size-threshold", "4K")
    assert c.read_bytes() == b.read_bytes()


def test_archive_detected_by_content(model_path, tmp_path):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch)
    renamed = tmp_path / "looks_like.onnx"
    shutil.copy(arch, renamed)
    run_ok("convert", renamed, tmp_path / "back.onnx")
    assert (tmp_path / "back.onnx").read_bytes() == onnxref.inlined_bytes(arch)
    j = json.loads(run_ok("info", "--json", renamed))
    assert j["archive"] is not None


def test_deflated_archive(model_path, tmp_path):
    """An archive written by another tool, every entry deflated: read, and
    rewritten with stored, aligned entries."""
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch)
    deflated = tmp_path / "deflated.onnxz"
    with zipfile.ZipFile(arch) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    j = json.loads(run_ok("info", "--json", deflated))
    assert {e["method"] for e in j["archive"]["entries"]} == {"deflate"}
    assert j["archive"]["zero_copy_entries"] == 0
    restored = tmp_path / "restored.onnxz"
    run_ok("convert", deflated, restored)
    assert restored.read_bytes() == arch.read_bytes()
    run_ok("convert", deflated, tmp_path / "back.onnx")
    assert (tmp_path / "back.onnx").read_bytes() == onnxref.inlined_bytes(deflated)


# ---- convert: usage errors and failures --------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--external-data", "w.bin"],
        ["--one-file-per-tensor"],
        ["--max-file-size", "1M"],
        ["--checksum"],
        ["--inline"],
        ["--convert-attribute"],
        ["--alignment", "48"],
        ["--alignment", "0"],
        ["--size-threshold", "lots"],
    ],
)
def test_usage_errors_for_archive_out(model_path, tmp_path, args):
    out = tmp_path / "out.onnxz"
    rc, stdout, err = run("convert", model_path, out, *args)
    assert_usage_error(rc, stdout, err)
    assert not out.exists()
    if args[0] not in ("--alignment", "--size-threshold"):
        assert args[0] in err and ".onnxz" in err


@pytest.mark.parametrize("args", [["--size-threshold", "10"], ["--alignment", "64"]])
def test_usage_errors_for_archive_in(model_path, tmp_path, args):
    """Archive options with an archive IN but a plain OUT still need
    --external-data: they would do nothing."""
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch)
    out = tmp_path / "out.onnx"
    assert_usage_error(*run("convert", arch, out, *args))
    assert not out.exists()


def test_help_mentions_archives():
    text = run_ok("convert", "--help").decode()
    assert ".onnxz" in text and "--alignment" in text and "64" in text
    assert all(len(line) <= 80 for line in text.splitlines()[4:])
    text = run_ok("info", "--help").decode()
    assert ".onnxz" in text and "zero-copy" in text


def corrupt(arch, tmp_path):
    """A copy of `arch` with one byte of the largest entry's data flipped."""
    headers = local_headers(arch)
    with zipfile.ZipFile(arch) as z:
        big = max((i for i in z.infolist() if i.filename != MODEL_ENTRY), key=lambda i: i.file_size)
    data = bytearray(arch.read_bytes())
    data[headers[big.filename]["data_offset"] + big.file_size // 2] ^= 0x55
    bad = tmp_path / "bad.onnxz"
    bad.write_bytes(bytes(data))
    with zipfile.ZipFile(bad) as z:
        assert z.testzip() == big.filename  # the reference sees it too
    return bad


@pytest.mark.parametrize("mode", [["--copy"], ["--no-copy"], []])
@pytest.mark.parametrize("out_name", ["out.onnx", "out.onnxz"])
def test_corrupted_archive(model_path, tmp_path, mode, out_name):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch)
    bad = corrupt(arch, tmp_path)
    out = tmp_path / out_name
    rc, stdout, err = run("convert", bad, out, *mode)
    assert_failure(rc, stdout, err, "convert", bad)
    assert "CRC" in err
    assert not out.exists()


def test_info_corrupted_archive_structure(model_path, tmp_path):
    """A damaged central directory is refused by info (which reads no
    entry data, so a flipped data byte alone is not seen there)."""
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch)
    data = arch.read_bytes()
    cd = data.rfind(b"PK\x01\x02")
    bad = tmp_path / "bad.onnxz"
    bad.write_bytes(data[:cd] + b"XX" + data[cd + 2 :])
    assert_failure(*run("info", bad), "info", bad)
    assert_failure(*run("info", "--json", bad), "info", bad)


# ---- info --------------------------------------------------------------------


def expected_alignment(offset):
    return min(offset & -offset, 4096)


def test_info_json(model_path, tmp_path):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch, "--size-threshold", "0")
    j = json.loads(run_ok("info", "--json", arch))
    # the usual summary, as for the .onnx file
    plain = json.loads(run_ok("info", "--json", model_path))
    assert plain["archive"] is None
    for key in ("ir_version", "producer_name", "opset_import", "graph_name", "inputs", "outputs",
                "node_count", "op_types"):
        assert j[key] == plain[key], key
    assert j["initializers"]["count"] == plain["initializers"]["count"]
    assert j["initializers"]["bytes"] == plain["initializers"]["bytes"]
    assert j["file_size"] == arch.stat().st_size

    headers = local_headers(arch)
    with zipfile.ZipFile(arch) as z:
        infos = z.infolist()
    a = j["archive"]
    assert [e["name"] for e in a["entries"]] == [i.filename for i in infos]
    for e, info in zip(a["entries"], infos):
        assert e["size"] == info.file_size
        assert e["compressed_size"] == info.compress_size
        assert e["crc32"] == info.CRC
        assert e["method"] == "stored"
        assert e["header_offset"] == info.header_offset
        assert e["data_offset"] == headers[info.filename]["data_offset"]
        assert e["alignment"] == expected_alignment(e["data_offset"])
        assert e["model"] == (info.filename == MODEL_ENTRY)
        if e["model"]:
            assert e["zero_copy"] is None
        else:
            assert e["zero_copy"] is True and e["alignment"] >= 64
    assert a["entry_count"] == len(infos)
    assert a["bytes"] == sum(i.file_size for i in infos)
    assert a["tensor_entries"] == len(infos) - 1
    assert a["zero_copy_entries"] == len(infos) - 1

    # external data: the entries, all there, with their sizes
    ext = {f["location"]: f for f in j["external_data"]}
    sizes = {i.filename: i.file_size for i in infos}
    assert set(ext) == set(sizes) - {MODEL_ENTRY}
    for loc, f in ext.items():
        assert f["exists"] is True and f["file_size"] == sizes[loc] and f["tensors"] == 1
        assert f["bytes"] == sizes[loc]
    assert j["external_tensors"] == len(ext)


def test_info_json_alignment_4096(model_path, tmp_path):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch, "--alignment", "4096")
    a = json.loads(run_ok("info", "--json", arch))["archive"]
    for e in a["entries"]:
        if not e["model"]:
            assert e["alignment"] == 4096 and e["data_offset"] % 4096 == 0 and e["zero_copy"]


def test_info_unaligned_entries(model_path, tmp_path):
    """Entries written by zipfile (stored, no padding) are mostly not on 64:
    info says which ones a no_copy load can borrow."""
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch)
    plain_zip = tmp_path / "plain.onnxz"
    with zipfile.ZipFile(arch) as src, zipfile.ZipFile(plain_zip, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    headers = local_headers(plain_zip)
    a = json.loads(run_ok("info", "--json", plain_zip))["archive"]
    want = sum(1 for n, h in headers.items() if n != MODEL_ENTRY and h["data_offset"] % 64 == 0)
    assert a["zero_copy_entries"] == want < a["tensor_entries"]
    for e in a["entries"]:
        assert e["data_offset"] == headers[e["name"]]["data_offset"]
        if not e["model"]:
            assert e["zero_copy"] == (e["data_offset"] % 64 == 0)
    # still a valid model for onnxio, copied where unaligned
    run_ok("convert", plain_zip, tmp_path / "back.onnx")
    assert (tmp_path / "back.onnx").read_bytes() == onnxref.inlined_bytes(plain_zip)
    text = run_ok("info", plain_zip).decode()
    assert f"{want} of {a['tensor_entries']} tensor entries zero-copy" in text


def test_info_text(model_path, tmp_path):
    arch = tmp_path / "m.onnxz"
    run_ok("convert", model_path, arch, "--alignment", "128")
    text = run_ok("info", arch).decode()
    for word in ("test_cli_archive", "archived", "MatMul", "ai.onnx 17"):
        assert word in text, word
    assert "(missing)" not in text and "no such entry" not in text
    headers = local_headers(arch)
    with zipfile.ZipFile(arch) as z:
        infos = z.infolist()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("archive:"))
    assert lines[start].split() == ["archive:", str(len(infos)), "entries"]
    rows = lines[start + 2 : start + 2 + len(infos)]
    for row, info in zip(rows, infos):
        fields = row.split()
        assert fields[0] == info.filename
        offset = headers[info.filename]["data_offset"]
        # name, size (number and unit), method, offset, alignment, zero-copy
        assert fields[3:] == ["stored", str(offset), str(expected_alignment(offset)),
                              "-" if info.filename == MODEL_ENTRY else "yes"]
    total = lines[start + 2 + len(infos)]
    n = len(infos)
    assert total.startswith(f"  total: {n} entries, ")
    assert f"({sum(i.file_size for i in infos)} bytes)" in total
    assert total.endswith(f"{n - 1} of {n - 1} tensor entries zero-copy")
    # the external data are the entries, with their count
    assert f"external data:    {n - 1} tensors in {n - 1} archive entries" in text


def test_info_plain_model_unchanged(model_path):
    """No archive section for an ordinary model."""
    text = run_ok("info", model_path).decode()
    assert "\narchive:" not in text and "zero-copy" not in text
