"""Reliability of the `onnxio` command (issue "Reliability", the CLI part):
inputs at the edges of the formats, and a command that is interrupted or
runs out of room.

- An .onnxz archive aligned past 64 KiB starts with a zero byte; the command
  must take it for an archive as the library does (info lists its entries,
  convert reads them).
- A node without op_type; a data file or archive entry shorter than the
  ranges its tensors refer to; tensors whose external_data keys are
  invalid: info reports them instead of failing or misbehaving.
- SIGTERM, SIGINT or SIGHUP during a save leave no temporary file and the
  previous output untouched; so does a save past `ulimit -f`, which fails
  with "File too large" instead of killing the process.
- --max-expansion reaches the library.

Expected values come from the onnx package, zipfile and numpy (or, for
--max-expansion, from the library itself called through ctypes with the same
option), never from the command's own output alone.

The command is $ONNXIO_CLI, by default <repo>/build/onnxio; the library
$ONNXIO_LIB. Run with an ASan/UBSan build of the command (e.g. the onnxio of
scripts/fuzz.sh's build directory) to catch undefined behaviour too: every
successful run here must leave stderr empty.
"""

import ctypes
import json
import resource
import signal
import subprocess
import time
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxio_ctypes
from clitool import CLI, info_json, run, run_ok

MODEL_ENTRY = "__MODEL_PROTO"


def temporary_files(directory):
    """The hidden files of onnxio saves: temporary files
    (".NAME.onnxio-tmp-XXXXXXXXXXXX") and journals (".NAME.onnxio-journal")."""
    return sorted(p.name for p in Path(directory).iterdir() if p.name.startswith(".") and ".onnxio-" in p.name)


def external_keys(t):
    return {e.key: e.value for e in t.external_data}


def set_external(t, **keys):
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    for k, v in keys.items():
        e = t.external_data.add()
        e.key, e.value = k, str(v)


def weights(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w0": rng.standard_normal((64, 100)).astype(np.float32),  # 25600 B
        "w1": rng.integers(-9, 9, 3000).astype(np.int64),  # 24000 B
        "w2": rng.standard_normal(2000).astype(np.float16),  # 4000 B
    }


def model_of(arrays, nodes=None):
    inits = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    outs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in arrays.items()]
    graph = helper.make_graph(nodes or [], "g", [], outs, initializer=inits)
    return helper.make_model(graph, producer_name="test_cli_reliability",
                             opset_imports=[helper.make_opsetid("", 17)])


def archive_arrays(path):
    """The initializers of an .onnxz archive, read with zipfile and numpy:
    each external tensor's bytes are cut from its entry."""
    got = {}
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        model = onnx.load_model_from_string(z.read(MODEL_ENTRY))
        for t in model.graph.initializer:
            if t.data_location == TensorProto.EXTERNAL:
                keys = external_keys(t)
                raw = z.read(keys["location"])
                off = int(keys.get("offset", 0))
                n = int(keys["length"]) if "length" in keys else len(raw) - off
                t.raw_data = raw[off:off + n]
                t.data_location = TensorProto.DEFAULT
                del t.external_data[:]
            got[t.name] = numpy_helper.to_array(t)
    return got


def assert_tensors_equal(path, arrays):
    """The model at `path`, loaded by onnx (external data read) or, for an
    .onnxz archive, by archive_arrays, holds exactly `arrays` as
    initializers, none left external."""
    if str(path).endswith(".onnxz"):
        got = archive_arrays(path)
    else:
        got = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    assert set(got) == set(arrays)
    for name, a in arrays.items():
        assert got[name].dtype == a.dtype and got[name].shape == a.shape, name
        assert np.array_equal(got[name], a), name


# ---- an archive aligned past 64 KiB ------------------------------------------


@pytest.fixture
def aligned_archive(tmp_path):
    arrays = weights()
    src = tmp_path / "m.onnx"
    onnx.save(model_of(arrays), str(src))
    arch = tmp_path / "a.onnxz"
    run_ok("convert", src, arch, "--alignment", "131072")
    data = arch.read_bytes()
    # the case at hand: the first entry's data is at 128 KiB, so the file
    # starts with the gap before it, not with a local header
    assert data[0] == 0 and not data.startswith(b"PK")
    with zipfile.ZipFile(arch) as z:
        assert z.testzip() is None
    return arrays, arch


def test_aligned_archive_info(aligned_archive):
    arrays, arch = aligned_archive
    with zipfile.ZipFile(arch) as z:
        infos = z.infolist()
    j = info_json(arch)
    assert j["archive"] is not None
    assert [e["name"] for e in j["archive"]["entries"]] == [i.filename for i in infos]
    sizes = {i.filename: i.file_size for i in infos}
    ext = j["external_data"]
    assert {f["location"] for f in ext} == set(sizes) - {MODEL_ENTRY}
    for f in ext:
        assert f["exists"] is True and f["file_size"] == sizes[f["location"]]
        assert f["short"] is False
    assert j["external_tensors"] == len(arrays)
    text = run_ok("info", arch).decode()
    assert "(missing)" not in text and "no such entry" not in text
    assert f"archive:          {len(infos)} entries" in text


@pytest.mark.parametrize("mode", [[], ["--copy"], ["--inline"]])
def test_aligned_archive_convert(aligned_archive, tmp_path, mode):
    arrays, arch = aligned_archive
    out = tmp_path / "c.onnx"
    run_ok("convert", arch, out, *mode)
    m = onnx.load(str(out), load_external_data=False)
    assert not any(t.data_location == TensorProto.EXTERNAL for t in m.graph.initializer)
    assert_tensors_equal(out, arrays)


def test_aligned_archive_to_archive(aligned_archive, tmp_path):
    arrays, arch = aligned_archive
    again = tmp_path / "b.onnxz"
    run_ok("convert", arch, again)
    assert_tensors_equal(again, arrays)


# ---- a node without op_type --------------------------------------------------


def test_info_node_without_op_type(tmp_path):
    """An invalid node (op_type unset) is counted like the others; with a
    sanitized build this also catches memcmp on the unset string."""
    bare = onnx.NodeProto()
    bare.input.append("x")
    bare.output.append("y")
    custom = onnx.NodeProto()
    custom.output.append("z")
    custom.domain = "com.example"
    empty = onnx.NodeProto()
    empty.op_type = ""  # set, but empty
    nodes = [bare, custom, helper.make_node("Relu", ["x"], ["r"]), empty,
             helper.make_node("Relu", ["r"], ["s"])]
    graph = helper.make_graph(nodes, "g", [], [])
    path = tmp_path / "no_op_type.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())

    m = onnx.load(str(path))
    want = Counter(("" if n.domain == "ai.onnx" else n.domain, n.op_type) for n in m.graph.node)
    j = info_json(path)
    assert j["node_count"] == len(m.graph.node)
    assert {(o["domain"], o["op_type"]): o["count"] for o in j["op_types"]} == dict(want)
    text = run_ok("info", path).decode()
    lines = [line.split() for line in text.splitlines()]
    assert ["2", "(no", "op_type)"] in lines  # bare and empty
    assert ["1", "(no", "op_type)", "(com.example)"] in lines
    assert ["2", "Relu"] in lines


# ---- data files and entries shorter than their references --------------------


def external_model(tmp_path, arrays, location="w.bin"):
    """`arrays` saved by onnx with every tensor in one external file."""
    path = tmp_path / "ext.onnx"
    onnx.save_model(model_of(arrays), str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location, size_threshold=0)
    m = onnx.load(str(path), load_external_data=False)
    needed = max(int(external_keys(t).get("offset", 0)) + int(external_keys(t)["length"])
                 for t in m.graph.initializer)
    return path, tmp_path / location, needed


def test_info_short_data_file(tmp_path):
    arrays = weights()
    path, data, needed = external_model(tmp_path, arrays)
    full = data.stat().st_size
    assert full >= needed

    j = info_json(path)
    (f,) = j["external_data"]
    assert f["exists"] is True and f["file_size"] == full
    assert f["needed_bytes"] == needed and f["short"] is False
    assert "(short" not in run_ok("info", path).decode()

    with open(data, "r+b") as fh:
        fh.truncate(1000)
    j = info_json(path)
    (f,) = j["external_data"]
    assert f["file_size"] == 1000 and f["needed_bytes"] == needed and f["short"] is True
    text = run_ok("info", path).decode()
    assert "w.bin: 3 tensors, " in text
    assert f"(short: 1000 bytes, its tensors need {needed})" in text
    # the load itself refuses such a file; info only reports it
    rc, _, err = run("convert", path, tmp_path / "x.onnx", "--inline")
    assert rc == 1 and "w.bin" in err


def test_info_missing_data_file(tmp_path):
    path, data, needed = external_model(tmp_path, weights())
    data.unlink()
    (f,) = info_json(path)["external_data"]
    assert f["exists"] is False and f["file_size"] is None and f["short"] is None
    assert f["needed_bytes"] == needed
    assert "w.bin: 3 tensors, " in run_ok("info", path).decode()
    assert "(missing)" in run_ok("info", path).decode()


def write_archive(path, entries, model):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(name, data)
        z.writestr(MODEL_ENTRY, model.SerializeToString())


def test_info_short_archive_entry(tmp_path):
    """An entry shorter than the ranges its tensors refer to (an archive
    written by another tool): flagged as for a data file."""
    a = np.arange(100, dtype=np.float32)
    b = np.arange(50, dtype=np.float32)
    model = model_of({"a": a, "b": b, "c": b})
    ta, tb, tc = model.graph.initializer
    for t in model.graph.initializer:
        t.ClearField("raw_data")
    set_external(ta, location="wa", offset=0, length=a.nbytes)  # 400 of 400: fits
    set_external(tb, location="wb", offset=100, length=b.nbytes)  # 100 + 200 of 250
    set_external(tc, location="wb", offset=260)  # no length, past the end
    arch = tmp_path / "short.onnxz"
    write_archive(arch, [("wa", a.tobytes()), ("wb", bytes(250))], model)
    with zipfile.ZipFile(arch) as z:
        sizes = {i.filename: i.file_size for i in z.infolist()}

    j = info_json(arch)
    ext = {f["location"]: f for f in j["external_data"]}
    assert ext["wa"]["file_size"] == sizes["wa"] and ext["wa"]["short"] is False
    assert ext["wa"]["needed_bytes"] == a.nbytes
    assert ext["wb"]["file_size"] == sizes["wb"] == 250 and ext["wb"]["short"] is True
    assert ext["wb"]["needed_bytes"] == 300 and ext["wb"]["tensors"] == 2
    text = run_ok("info", arch).decode()
    assert "(short: 250 bytes, its tensors need 300)" in text
    assert text.count("(short") == 1


# ---- invalid external data references ----------------------------------------


def test_info_invalid_references(tmp_path):
    """Tensors whose external_data keys break the rules (onnx-ml.proto:
    a relative location, decimal offset and length) are listed with the
    reason, and the rest of the summary is still there."""
    arrays = {name: np.arange(8, dtype=np.float32) + i for i, name in enumerate("abcdefg")}
    model = model_of(arrays)
    t = {x.name: x for x in model.graph.initializer}
    for x in model.graph.initializer:
        x.ClearField("raw_data")
    set_external(t["a"], location="good.bin", offset=0, length=32)
    set_external(t["b"], offset=0, length=32)  # no location
    set_external(t["c"], location="/etc/passwd", length=32)
    set_external(t["d"], location="../up.bin", length=32)
    set_external(t["e"], location="good.bin", offset="0x10", length=32)
    set_external(t["f"], location="good.bin", offset=32, length="-32")
    set_external(t["g"], location="sub/../../x.bin", length=32)
    (tmp_path / "good.bin").write_bytes(bytes(64))
    path = tmp_path / "bad_refs.onnx"
    path.write_bytes(model.SerializeToString())

    bad = {"b", "c", "d", "e", "f", "g"}
    j = info_json(path)
    assert j["external_tensors"] == 7
    refs = j["invalid_external_refs"]
    assert {r["tensor"] for r in refs} == bad
    status = {r["tensor"]: r["status"] for r in refs}
    assert status["c"] == "ONNXIO_ERR_PATH_ABSOLUTE"
    assert status["d"] == status["g"] == "ONNXIO_ERR_PATH_PARENT"
    assert status["b"] == status["e"] == status["f"] == "ONNXIO_ERR_EXTERNAL_DATA"
    assert all(r["message"] for r in refs)
    (f,) = j["external_data"]
    assert f["location"] == "good.bin" and f["tensors"] == 1 and f["exists"] is True
    assert f["needed_bytes"] == 32 and f["short"] is False
    sizes = {x["name"]: x["bytes"] for x in j["initializers"]["largest"]}
    assert sizes["a"] == 32 and all(sizes[n] == 0 for n in bad)

    text = run_ok("info", path).decode()
    assert "external data:    7 tensors in 1 file" in text
    assert "invalid references: 6 tensors" in text
    assert "/etc/passwd" in text and "../up.bin" in text and "0x10" in text


def test_info_many_invalid_references(tmp_path):
    """Text lists the first ten; JSON lists every one."""
    arrays = {f"t{i:02d}": np.zeros(2, np.float32) for i in range(25)}
    model = model_of(arrays)
    for x in model.graph.initializer:
        x.ClearField("raw_data")
        set_external(x, location="/abs.bin")
    path = tmp_path / "many.onnx"
    path.write_bytes(model.SerializeToString())
    assert len(info_json(path)["invalid_external_refs"]) == 25
    text = run_ok("info", path).decode()
    assert "invalid references: 25 tensors" in text and "... and 15 more" in text


# ---- signals during a save -----------------------------------------------------


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    """A model of 384 MiB of external data (a few tensors), so that a save
    of it takes long enough to be interrupted."""
    d = tmp_path_factory.mktemp("big")
    n = 24 << 20  # floats per tensor: 96 MiB
    names = ["big0", "big1", "big2", "big3"]
    model = model_of({name: np.zeros(1, np.float32) for name in names})
    with open(d / "big.bin", "wb") as fh:
        for i, t in enumerate(model.graph.initializer):
            a = np.full(n, i + 1, dtype=np.float32)
            set_external(t, location="big.bin", offset=fh.tell(), length=a.nbytes)
            del t.dims[:]
            t.dims.append(n)
            t.ClearField("raw_data")
            fh.write(a.tobytes())
    path = d / "big.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def interrupt_save(args, out_dir, sig, disposition=signal.SIG_DFL):
    """Starts `onnxio ARGS` with `disposition` for `sig`, waits until its
    save has a temporary file in `out_dir`, sends `sig`; returns the exit
    status."""
    # The child gets `disposition` whatever this test runner inherited (under
    # nohup SIGHUP is ignored, and the CLI leaves an ignored signal ignored).
    p = subprocess.Popen([str(CLI), *map(str, args)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(sig, disposition))
    try:
        deadline = time.monotonic() + 120
        while not temporary_files(out_dir):
            if p.poll() is not None:
                pytest.fail(f"the save ended (rc {p.returncode}) before a temporary file was seen: "
                            f"{p.stderr.read().decode()}")
            if time.monotonic() > deadline:
                pytest.fail("no temporary file after 120 s")
            time.sleep(0.001)
        # The library registers a temporary file for removal just after
        # creating it: give it that moment (the save of hundreds of MiB
        # that follows takes far longer).
        time.sleep(0.02)
        if p.poll() is not None:
            pytest.fail(f"the save ended (rc {p.returncode}) before the signal was sent")
        p.send_signal(sig)
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()
    return p.returncode


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("target", ["out.onnx", "out.onnxz"])
def test_signal_during_convert(big_model, tmp_path, sig, target):
    out = tmp_path / target
    old = b"the previous output, which must survive"
    out.write_bytes(old)
    rc = interrupt_save(["convert", big_model, out, "--inline" if target == "out.onnx" else "--copy",
                         "--threads", "1"], tmp_path, sig)
    # killed by the signal itself, as without a handler
    assert rc == -sig
    assert temporary_files(tmp_path) == []
    assert out.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == [target]


def test_ignored_sighup_is_left_ignored(big_model, tmp_path):
    """Under nohup (SIGHUP ignored) a hangup does not stop the save: the
    output is the whole new model, as onnx's checker reads it."""
    out = tmp_path / "out.onnx"
    rc = interrupt_save(["convert", big_model, out, "--external-data", "out.bin", "--threads", "1"],
                        tmp_path, signal.SIGHUP, disposition=signal.SIG_IGN)
    assert rc == 0
    assert temporary_files(tmp_path) == []
    onnx.checker.check_model(str(out), full_check=False)
    model = onnx.load(str(out), load_external_data=False)
    assert [t.name for t in model.graph.initializer] == ["big0", "big1", "big2", "big3"]
    assert (tmp_path / "out.bin").stat().st_size >= 4 * (96 << 20)


def test_signal_during_convert_external(big_model, tmp_path):
    """A save of a model and its data file: neither temporary file stays."""
    out = tmp_path / "out.onnx"
    rc = interrupt_save(["convert", big_model, out, "--external-data", "out.bin", "--threads", "1"],
                        tmp_path, signal.SIGTERM)
    assert rc == -signal.SIGTERM
    assert temporary_files(tmp_path) == []
    assert not out.exists() and not (tmp_path / "out.bin").exists()


# ---- ulimit -f -------------------------------------------------------------------


def limit_file_size(limit):
    def preexec():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


@pytest.mark.parametrize("target,extra", [("out.onnx", []), ("out.onnxz", []),
                                          ("out.onnx", ["--external-data", "out.bin"])])
def test_convert_past_file_size_limit(tmp_path, target, extra):
    arrays = {f"w{i}": np.full(1 << 18, i, np.float32) for i in range(4)}  # 4 MiB in all
    src = tmp_path / "src" / "m.onnx"
    src.parent.mkdir()
    onnx.save(model_of(arrays), str(src))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / target
    old = b"old output"
    out.write_bytes(old)
    rc, stdout, err = run("convert", src, out, *extra, preexec_fn=limit_file_size(1 << 20))
    assert rc == 1, err
    assert stdout == b""
    assert len(err.splitlines()) == 1 and err.startswith("onnxio: convert: ")
    assert "File too large" in err
    assert temporary_files(out_dir) == []
    assert out.read_bytes() == old
    assert sorted(p.name for p in out_dir.iterdir()) == [target]
    # the same convert without the limit succeeds
    run_ok("convert", src, out, *extra)
    assert_tensors_equal(out, arrays)


# ---- --max-expansion -------------------------------------------------------------


VERB_ARGS = {
    "info": lambda path, tmp: ["info", path],
    "print": lambda path, tmp: ["print", path],
    "convert": lambda path, tmp: ["convert", path, tmp / "out.onnx"],
}


@pytest.mark.parametrize("verb", list(VERB_ARGS))
def test_max_expansion_documented(verb):
    text = run_ok(verb, "--help").decode()
    assert "--max-expansion N" in text
    assert f"0: the default, {100})" in text  # ONNXIO_DEFAULT_MAX_EXPANSION


@pytest.mark.parametrize("verb", list(VERB_ARGS))
@pytest.mark.parametrize("value", ["lots", "-1", "1.5", "", "1K", "18446744073709551616"])
def test_max_expansion_usage_errors(verb, value, tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(model_of(weights()), str(path))
    rc, out, err = run(*VERB_ARGS[verb](path, tmp_path), "--max-expansion", value)
    assert rc == 2, err
    assert out == b"" and err.startswith(f"onnxio: {verb}: --max-expansion")
    assert f"usage: onnxio {verb}" in err


@pytest.mark.parametrize("verb", list(VERB_ARGS))
@pytest.mark.parametrize("value", ["0", "1", "100", "18446744073709551615"])
def test_max_expansion_accepted(verb, value, tmp_path):
    """An ordinary model loads whatever the factor: it needs about 1x its
    size plus its structure, within the library's allowance."""
    path = tmp_path / "m.onnx"
    arrays = weights()
    onnx.save(model_of(arrays), str(path))
    want = run_ok(*VERB_ARGS[verb](path, tmp_path))
    assert run_ok(*VERB_ARGS[verb](path, tmp_path), f"--max-expansion={value}") == want
    if verb == "convert":
        assert_tensors_equal(tmp_path / "out.onnx", arrays)


def library_load_status(path, max_expansion):
    """The status name of onnxio_load_model on `path` with this
    max_expansion (structure only, as info loads), from the library itself."""
    L = onnxio_ctypes.lib()
    fn = L.onnxio_load_model
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.POINTER(onnxio_ctypes.ParseOptions), ctypes.c_void_p,
                   ctypes.POINTER(ctypes.c_void_p)]
    opts = onnxio_ctypes.ParseOptions()
    opts.no_copy = True
    opts.skip_raw_data = True
    opts.load_external_data = 2  # ONNXIO_OFF
    opts.max_expansion = max_expansion
    arena = L.onnxio_arena_new()
    out = ctypes.c_void_p()
    try:
        status = fn(str(path).encode(), ctypes.byref(opts), arena, ctypes.byref(out))
    finally:
        L.onnxio_arena_unref(arena)
    return L.onnxio_status_name(status).decode()


@pytest.fixture(scope="module")
def empty_initializers(tmp_path_factory):
    """A 2 MB model of a million empty initializers: 2 bytes each in the
    file, a whole TensorProto each in memory (over 100 times the file)."""
    n = 1_000_000
    graph = b"\x2a\x00" * n
    header = b"\x08\x08"  # ir_version 8
    varint = bytearray()
    v = len(graph)
    while v >= 0x80:
        varint.append(v & 0x7F | 0x80)
        v >>= 7
    varint.append(v)
    path = tmp_path_factory.mktemp("expansion") / "empty_initializers.onnx"
    path.write_bytes(header + b"\x3a" + bytes(varint) + graph)
    m = onnx.load(str(path))
    assert len(m.graph.initializer) == n
    return path


@pytest.mark.parametrize("factor", [None, "0", "1", "1000", "18446744073709551615"])
def test_max_expansion_reaches_the_library(empty_initializers, factor):
    """info with --max-expansion N does what the library does with
    max_expansion = N (None: the option absent, the library default): refuse
    with ONNXIO_ERR_EXPANSION's message, or load. When the library enforces
    the limit, the default refuses this model and a larger factor accepts
    it; when it does not yet, both load, and the test checks only that the
    option is accepted and agrees with the library."""
    want = library_load_status(empty_initializers, int(factor or 0))
    args = ["info", "--json", empty_initializers] + (["--max-expansion", factor] if factor else [])
    rc, out, err = run(*args)
    if want == "ONNXIO_OK":
        assert rc == 0, err
        assert json.loads(out)["initializers"]["count"] == 1_000_000
    else:
        assert want == "ONNXIO_ERR_EXPANSION"
        assert rc == 1 and out == b""
        assert err.startswith(f"onnxio: info: {empty_initializers}: ")


# ---- a data file named as a save's own bookkeeping ---------------------------------

@pytest.mark.parametrize("location", [".out.onnx.onnxio-journal", ".out.onnx.onnxio-tmp-0123456789ab",
                                      ".w.bin.onnxio-tmp-abcdef012345", "sub/.x.onnxio-journal"])
def test_data_file_named_as_bookkeeping_refused(tmp_path, location):
    """A save removes its journal and temporary files as its own: a data
    file under such a name would be written, then removed, leaving the
    model pointing at nothing. The command refuses the location, and the
    library through Python too; nothing is written."""
    import onnxio

    (tmp_path / "sub").mkdir()
    src = tmp_path / "m.onnx"
    onnx.save(model_of(weights()), src)
    out = tmp_path / "out.onnx"
    rc, _out, err = run("convert", str(src), str(out), "--external-data", location)
    assert rc == 1 and "journal or temporary files" in err, (rc, err)
    with pytest.raises(onnxio.ExternalDataError, match="journal or temporary files"):
        onnxio.save_model(onnxio.load(str(src)), str(out), save_as_external_data=True, location=location,
                          size_threshold=0)
    assert not out.exists() and not temporary_files(tmp_path) and not temporary_files(tmp_path / "sub")
    # A name that merely looks alike is a data file like any other.
    run_ok("convert", str(src), str(out), "--external-data", ".out.onnxio-journal.bin")
    assert_tensors_equal(out, weights())


# ---- a binary model whose first bytes are printable ---------------------------------

def test_binary_model_with_printable_start_is_binary(tmp_path):
    """A binary model whose first 64 bytes are printable (it starts with a
    first opset_import whose domain has 61 characters: "BA\\n=aaa...") is
    what onnx and onnxio.load read it as; every verb reads it as binary
    protobuf first, as the library does, and takes it for text only when
    that fails."""
    import onnxio

    m = onnx.ModelProto()
    op = m.opset_import.add()
    op.domain, op.version = "a" * 61, 1
    op = m.opset_import.add()
    op.domain, op.version = "", 17
    data = m.SerializeToString()
    assert data[:1].isalpha() and all(32 <= b < 127 or b in b"\t\n\r\v\f" for b in data[:64])
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    assert onnxio.load(str(path)).SerializeToString() == data  # the library's reading
    info = info_json(path)
    assert "a" * 61 in json.dumps(info), info
    out = tmp_path / "out.onnx"
    run_ok("convert", str(path), str(out))
    assert out.read_bytes() == data
    run_ok("print", str(path))
    # Text in a file without a text extension is still read as text.
    txt = tmp_path / "t.model"
    txt.write_text('ir_version: 8\nopset_import { domain: "" version: 17 }\n')
    run_ok("convert", str(txt), str(out))
    assert onnx.load(str(out)).opset_import[0].version == 17
