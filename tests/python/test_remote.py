"""Remote loads: onnxio.load of fsspec URLs and file objects,
against a real S3 API server on loopback (moto's ThreadedMotoServer, behind
a proxy that counts the bytes of every GET), an HTTP server with Range
support on loopback (counting the bytes it serves) and memory://.

References: the local load of the same files (SerializeToString equal), and
the bytes a load needs computed with the onnx package (the model file plus
every external tensor's length, as onnx reads the keys)."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import needs

fsspec = needs("fsspec", "remote loads need it")

import onnxio  # noqa: E402
from remote_servers import CountingProxy, RangeHTTPServer  # noqa: E402

LAYOUTS = {"ext": "ext.onnx", "inline": "inline.onnx", "onnxz": "model.onnxz", "pertensor": "pt/model.onnx"}


def _model(sizes=(3000, 70000, 5, 250000, 1024, 40000)):
    rng = np.random.default_rng(16)
    inits = [numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), f"w{i}") for i, n in enumerate(sizes)]
    # a Constant node's attribute tensor and a tiny inline one: the library's walk, not a list in Python
    const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
        rng.standard_normal(600).astype(np.float32), "cval"))
    graph = helper.make_graph([const, helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], initializer=inits)
    return onnxio.from_onnx(helper.make_model(graph))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{relative path: bytes} of the model saved in every layout, and the
    local directory."""
    d = tmp_path_factory.mktemp("remote")
    m = _model()
    onnxio.save(m, str(d / LAYOUTS["ext"]), save_as_external_data=True, location="ext.bin", size_threshold=1024,
                convert_attribute=True, update_model=False)  # m is saved again below
    onnxio.save(m, str(d / LAYOUTS["inline"]))
    onnxio.save(m, str(d / LAYOUTS["onnxz"]))
    os.makedirs(d / "pt")
    onnxio.save(m, str(d / LAYOUTS["pertensor"]), save_as_external_data=True, all_tensors_to_one_file=False,
                update_model=False)
    out = {}
    for root, _dirs, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, d).replace(os.sep, "/")] = open(p, "rb").read()
    return d, out


def _needed(local_dir, layout) -> int:
    """Bytes a load of `layout` needs, by the onnx package: the model file
    plus the external payload ranges (unique per file, offset, length)."""
    path = os.path.join(local_dir, LAYOUTS[layout])
    total = os.path.getsize(path)
    if layout in ("inline", "onnxz"):
        return total
    m = onnx.load(path, load_external_data=False)
    seen = set()
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data

    for t in _get_all_tensors(m):
        if uses_external_data(t):
            info = ExternalDataInfo(t)
            seen.add((info.location, info.offset or 0, info.length))
    return total + sum(length for _loc, _off, length in seen)


def _local(local_dir, layout):
    return onnxio.load(os.path.join(local_dir, LAYOUTS[layout])).SerializeToString()


# ---- HTTP -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def http(files):
    needs("aiohttp", "fsspec's http:// needs it")
    _d, data = files
    server = RangeHTTPServer({"/m/" + k: v for k, v in data.items()})
    yield server
    server.stop()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_http_equals_local_and_bytes_bounded(http, files, layout):
    d, _data = files
    http.reset()
    got = onnxio.load(f"{http.url}/m/{LAYOUTS[layout]}")
    assert got.SerializeToString() == _local(d, layout)
    needed = _needed(d, layout)
    assert http.served >= needed  # every needed byte came over the wire
    if layout in ("ext", "pertensor", "onnxz"):  # .onnxz: structure first, then the entries
        assert http.served <= 1.05 * needed, (http.served, needed)
    else:  # inline payloads: the file, fetched once
        assert http.served == needed, (http.served, needed)


def test_http_payload_fn_fetches_only_selected(http, files):
    d, data = files
    http.reset()
    keep = {"w1", "w5"}  # w3 (1 MB) lies between them: coalescing must not fetch it
    got = onnxio.load(f"{http.url}/m/ext.onnx", payload_fn=lambda t, size, external: t.name in keep)
    ref = onnx.load(os.path.join(d, "ext.onnx"))
    for t in got.graph.initializer:
        if t.name in keep:
            want = next(r for r in ref.graph.initializer if r.name == t.name)
            np.testing.assert_array_equal(onnxio.numpy_helper.to_array(t), numpy_helper.to_array(want))
        elif t.name != "w2":  # w2 (5 floats) is inline, under the threshold
            assert t.data_location == TensorProto.EXTERNAL
    needed = len(data["ext.onnx"]) + 4 * (70000 + 40000)
    assert needed <= http.served <= 1.05 * needed, (http.served, needed)


def test_http_payload_fn_buffer_is_filled(http, files):
    d, _data = files
    target = np.zeros(250000, dtype=np.float32)

    def place(t, size, external):
        return target if t.name == "w3" else None

    got = onnxio.load(f"{http.url}/m/ext.onnx", payload_fn=place)
    ref = onnx.load(os.path.join(d, "ext.onnx"))
    want = numpy_helper.to_array(next(r for r in ref.graph.initializer if r.name == "w3"))
    np.testing.assert_array_equal(target, want)
    assert got.SerializeToString() == _local(d, "ext")


def test_http_missing_and_bad_urls(http):
    with pytest.raises(FileNotFoundError):
        onnxio.load(f"{http.url}/m/nothing.onnx")
    with pytest.raises(ValueError, match="nosuchproto"):
        onnxio.load("nosuchproto://x/model.onnx")


def _hostile(data, location):
    m = onnxio.load_model_from_string(data["ext.onnx"])
    t = m.graph.initializer[1]
    for e in t.external_data:
        if e.key == "location":
            e.value = location
    return m.SerializeToString()


@pytest.mark.parametrize("location", ["../ext.bin", "/etc/passwd", "sub/../../ext.bin", "C:/x.bin"])
def test_hostile_locations_refused_before_fetching(files, location):
    needs("aiohttp", "fsspec's http:// needs it")
    _d, data = files
    server = RangeHTTPServer({"/a/b/m.onnx": _hostile(data, location), "/a/ext.bin": data["ext.bin"],
                              "/a/b/ext.bin": data["ext.bin"], "/etc/passwd": b"x" * 100})
    try:
        with pytest.raises(onnxio.ExternalDataError):
            onnxio.load(f"{server.url}/a/b/m.onnx")
        assert server.served == len(server.files["/a/b/m.onnx"])  # nothing but the model
    finally:
        server.stop()


@pytest.mark.parametrize("location", ["%2e%2e/ext.bin", "%2E%2E/ext.bin", ".%2e/ext.bin", "sub/%2e%2e/%2e%2e/ext.bin",
                                      "..%2fext.bin", "sub%2f..%2f..%2fext.bin", "%2fetc/passwd", "%5c..%5cext.bin",
                                      "..\\ext.bin", "sub\\..\\..\\ext.bin", "ext.bin%00.x", "%252e%252e/ext.bin",
                                      "%2e%2e%2fext.bin", "..;/ext.bin", "%2e%2e;/ext.bin", "sub/..;x=1/..;/ext.bin",
                                      "..;%2fext.bin", "..%3b/ext.bin"])
def test_percent_encoded_locations_refused_and_never_requested(files, location):
    """A location is checked as the HTTP client and server will read it
    (percent-decoded, path parameters dropped as servlet containers drop
    them): every request stays in the model's directory."""
    import posixpath
    import urllib.parse

    needs("aiohttp", "fsspec's http:// needs it")
    _d, data = files
    server = RangeHTTPServer({"/a/b/m.onnx": _hostile(data, location), "/a/ext.bin": data["ext.bin"],
                              "/a/b/ext.bin": data["ext.bin"], "/etc/passwd": b"x" * 100, "/ext.bin": data["ext.bin"]})
    try:
        with pytest.raises(onnxio.ExternalDataError, match="'..' component|absolute|NUL"):
            onnxio.load(f"{server.url}/a/b/m.onnx")
        resolved = list(server.paths)
        for _ in range(2):  # decoded as a server might, up to twice, backslashes as separators
            resolved = [posixpath.normpath("/".join(s.split(";", 1)[0] for s in
                                                    urllib.parse.unquote(p).replace("\\", "/").split("/")))
                        for p in resolved]
        assert server.paths and all(p.startswith("/a/b/") for p in resolved), server.paths
        assert server.served == len(server.files["/a/b/m.onnx"])  # nothing but the model
    finally:
        server.stop()


@pytest.mark.parametrize("location, target", [("e x.bin", "/a/b/e%20x.bin"), ("e%20x.bin", "/a/b/e%20x.bin"),
                                              ("ext.bin#x", "/a/b/ext.bin%23x"), ("%2e/ext.bin", "/a/b/ext.bin"),
                                              ("ext;v=1.bin", "/a/b/ext;v=1.bin")])
def test_location_requested_as_checked(files, location, target):
    """What is requested is the checked location, quoted: a '#' or '?' is
    part of the file's name, not a fragment or query the client drops."""
    needs("aiohttp", "fsspec's http:// needs it")
    d, data = files
    server = RangeHTTPServer({"/a/b/m.onnx": _hostile(data, location), "/a/b/ext.bin": data["ext.bin"]})
    server.files[target] = data["ext.bin"]
    try:
        got = onnxio.load(f"{server.url}/a/b/m.onnx")
        data_paths = [p for p in server.paths if p != "/a/b/m.onnx"]
        assert target in data_paths and set(data_paths) <= {target, "/a/b/ext.bin"}, server.paths  # w1 at target
        ref = onnx.load(os.path.join(d, "ext.onnx"))
        for t, r in zip(got.graph.initializer, ref.graph.initializer):
            np.testing.assert_array_equal(onnxio.numpy_helper.to_array(t), numpy_helper.to_array(r))
    finally:
        server.stop()


def test_missing_data_file_and_bad_range(files):
    needs("aiohttp", "fsspec's http:// needs it")
    _d, data = files
    server = RangeHTTPServer({"/m.onnx": data["ext.onnx"], "/ext.bin": data["ext.bin"][:1000]})
    try:
        with pytest.raises(onnxio.ExternalDataError, match="past the end|exceeds"):
            onnxio.load(f"{server.url}/m.onnx")
        del server.files["/ext.bin"]
        with pytest.raises(FileNotFoundError):
            onnxio.load(f"{server.url}/m.onnx")
    finally:
        server.stop()


# ---- memory:// and file objects ------------------------------------------------------


@pytest.fixture()
def memfs(files):
    _d, data = files
    fs = fsspec.filesystem("memory")
    for k, v in data.items():
        fs.pipe(f"/r16/{k}", v)
    yield fs
    fs.rm("/r16", recursive=True)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_memory_url_and_file_object(memfs, files, layout):
    d, _data = files
    want = _local(d, layout)
    assert onnxio.load(f"memory://r16/{LAYOUTS[layout]}").SerializeToString() == want
    with memfs.open(f"/r16/{LAYOUTS[layout]}", "rb") as f:
        assert onnxio.load(f).SerializeToString() == want
    # no_copy is accepted and changes nothing remotely
    assert onnxio.load(f"memory://r16/{LAYOUTS[layout]}", no_copy=True, num_threads=2).SerializeToString() == want


def test_memory_load_external_false_then_helper(memfs, files):
    d, _data = files
    m = onnxio.load("memory://r16/ext.onnx", load_external_data=False)
    assert any(t.data_location == TensorProto.EXTERNAL for t in m.graph.initializer)
    onnxio.load_external_data_for_model(m, "memory://r16")
    assert m.SerializeToString() == _local(d, "ext")


def test_payload_equals_numpy_and_is_aligned(memfs, files):
    d, _data = files
    m = onnxio.load("memory://r16/ext.onnx")
    ref = onnx.load(os.path.join(d, "ext.onnx"))
    for t, r in zip(m.graph.initializer, ref.graph.initializer):
        a = onnxio.numpy_helper.to_array(t)
        np.testing.assert_array_equal(a, numpy_helper.to_array(r))


# ---- file:// and local:// ------------------------------------------------------------


@pytest.fixture()
def symlinked(files, tmp_path):
    """A model whose data file is a symlink leading out of its directory
    (refused by a local load), and an honest copy of it."""
    d, data = files
    (tmp_path / "m").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "ok").mkdir()
    (tmp_path / "out" / "ext.bin").write_bytes(data["ext.bin"])
    os.symlink(tmp_path / "out" / "ext.bin", tmp_path / "m" / "ext.bin")
    for sub in ("m", "ok"):
        (tmp_path / sub / "ext.onnx").write_bytes(data["ext.onnx"])
    (tmp_path / "ok" / "ext.bin").write_bytes(data["ext.bin"])
    return tmp_path


def _refusal(call):
    with pytest.raises(onnxio.ExternalDataError) as e:
        call()
    return type(e.value), str(e.value)


@pytest.mark.parametrize("scheme", ["file://", "local://", "FILE://"])
def test_file_url_takes_the_checked_local_path(symlinked, files, scheme):
    d, _data = files
    bad = str(symlinked / "m" / "ext.onnx")
    ok = str(symlinked / "ok" / "ext.onnx")
    by_path = _refusal(lambda: onnxio.load(bad))
    assert "symlink" in by_path[1] or "outside" in by_path[1] or "escapes" in by_path[1], by_path
    assert _refusal(lambda: onnxio.load(scheme + bad)) == by_path
    assert _refusal(lambda: onnxio.load(bad, base_dir=scheme + str(symlinked / "m"))) == by_path
    assert _refusal(lambda: onnxio.read_tensor(scheme + bad, "w1")) == _refusal(lambda: onnxio.read_tensor(bad, "w1"))
    # the data directory named by URL: for a model held in memory, and for one fetched remotely
    m = onnxio.load(bad, load_external_data=False)
    by_dir = _refusal(lambda: onnxio.load_external_data_for_model(m, str(symlinked / "m")))
    assert _refusal(lambda: onnxio.load_external_data_for_model(m, scheme + str(symlinked / "m"))) == by_dir
    fs = fsspec.filesystem("memory")
    fs.pipe("/fileurl/ext.onnx", files[1]["ext.onnx"])
    try:
        assert _refusal(lambda: onnxio.load("memory://fileurl/ext.onnx", base_dir=scheme + str(symlinked / "m"))) \
            == _refusal(lambda: onnxio.load(files[1]["ext.onnx"], base_dir=str(symlinked / "m")))
        got = onnxio.load("memory://fileurl/ext.onnx", base_dir=scheme + str(symlinked / "ok"))
        assert got.SerializeToString() == _local(d, "ext")
    finally:
        fs.rm("/fileurl", recursive=True)
    # an honest model: the same load either way, equal to the onnx package's
    want = onnxio.load(ok).SerializeToString()
    assert want == _local(d, "ext")
    assert onnxio.load(scheme + ok).SerializeToString() == want
    ref = onnx.load(ok)
    np.testing.assert_array_equal(onnxio.read_tensor(scheme + ok, "w1"),
                                  numpy_helper.to_array(next(t for t in ref.graph.initializer if t.name == "w1")))


def test_fsspec_local_file_object_takes_the_checked_local_path(symlinked):
    bad = str(symlinked / "m" / "ext.onnx")
    by_path = _refusal(lambda: onnxio.load(bad))
    with fsspec.open("file://" + bad, "rb") as f:
        assert _refusal(lambda: onnxio.load(f)) == by_path
    assert _refusal(lambda: onnxio.load(fsspec.open("file://" + bad))) == by_path


# ---- S3 (moto's server on loopback) ----------------------------------------------------


@pytest.fixture(scope="module")
def s3(files):
    needs("s3fs", "s3:// needs it")
    server_mod = needs("moto.server", "the S3 tests' server")
    boto3 = needs("boto3")
    import s3fs

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    moto = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    proxy = CountingProxy(f"http://{host}:{port}")
    client = boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1")
    client.create_bucket(Bucket="models")
    _d, data = files
    for k, v in data.items():
        client.put_object(Bucket="models", Key=k, Body=v)
    old_conf = fsspec.config.conf.get("s3")
    fsspec.config.conf["s3"] = {"key": "testing", "secret": "testing",
                                "client_kwargs": {"endpoint_url": proxy.url, "region_name": "us-east-1"}}
    s3fs.S3FileSystem.clear_instance_cache()
    yield proxy
    s3fs.S3FileSystem.clear_instance_cache()
    if old_conf is None:
        fsspec.config.conf.pop("s3", None)
    else:
        fsspec.config.conf["s3"] = old_conf
    proxy.stop()
    moto.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_s3_equals_local_and_bytes_bounded(s3, files, layout):
    d, _data = files
    s3.reset()
    got = onnxio.load(f"s3://models/{LAYOUTS[layout]}")
    assert got.SerializeToString() == _local(d, layout)
    needed = _needed(d, layout)
    assert s3.served >= needed
    if layout in ("ext", "pertensor", "onnxz"):
        assert s3.served <= 1.05 * needed, (s3.served, needed)
    else:
        assert s3.served == needed, (s3.served, needed)


def test_s3_file_object_and_errors(s3, files):
    import s3fs

    d, _data = files
    fs = s3fs.S3FileSystem()
    with fs.open("models/ext.onnx", "rb") as f:
        assert onnxio.load(f).SerializeToString() == _local(d, "ext")
    with pytest.raises(FileNotFoundError):
        onnxio.load("s3://models/missing.onnx")
    with pytest.raises((FileNotFoundError, OSError)):
        onnxio.load("s3://no-such-bucket/model.onnx")


# ---- .onnxz structure first ------------------------------------------------------------


def _zip_layout(data: bytes):
    """{name: (local header offset, end of its data)} and the start of the
    central directory, by Python's zipfile (the independent reference)."""
    import io
    import struct
    import zipfile

    z = zipfile.ZipFile(io.BytesIO(data))
    out = {}
    for info in z.infolist():
        nlen, xlen = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
        start = info.header_offset + 30 + nlen + xlen
        out[info.filename] = (info.header_offset, start + info.compress_size)
    return out, z.start_dir


def _selective_bound(data: bytes, keep_entries) -> int:
    """Bytes a load keeping only `keep_entries` needs: the tail (at most
    64 KiB, or the central directory and end records when larger), the
    model entry and each kept entry (local header and data), and the 64
    bytes that tell an archive."""
    layout, cd = _zip_layout(data)
    tail_start = min(cd, max(0, len(data) - (64 << 10)))
    need = set()
    for name in ["__MODEL_PROTO", *keep_entries]:
        a, b = layout[name]
        need.update(range(a, min(b, tail_start)))
    return 64 + (len(data) - tail_start) + len(need)


@pytest.mark.parametrize("where", ["http", "s3"])
def test_onnxz_selective_fetches_structure_and_kept(request, files, where):
    server = request.getfixturevalue(where)
    d, data = files
    url = f"{server.url}/m/model.onnxz" if where == "http" else "s3://models/model.onnxz"
    keep = {"w1"}
    fn = lambda t, size, external: t.name in keep or not external  # noqa: E731
    server.reset()
    got = onnxio.load(url, payload_fn=fn)
    served = server.served
    local = onnxio.load(os.path.join(d, "model.onnxz"), payload_fn=fn)
    assert got.SerializeToString() == local.SerializeToString()
    bound = _selective_bound(data["model.onnxz"], keep)
    payload = 4 * 70000
    assert payload <= served <= bound + 1024, (served, bound)
    assert served < len(data["model.onnxz"]) / 2  # w3 (1 MB) and the others never fetched


def _archive(tmp_path, n=3, size=40000):
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal(size).astype(np.float32), f"t{i}") for i in range(n)]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], initializer=inits)
    p = str(tmp_path / "a.onnxz")
    onnxio.save(onnxio.from_onnx(helper.make_model(graph)), p)
    return bytearray(open(p, "rb").read())


def _hostile_archives(tmp_path):
    import struct

    good = _archive(tmp_path)
    layout, cd = _zip_layout(bytes(good))
    out = {}
    out["truncated_cd"] = bytes(good[:cd + 30]) + bytes(good[-22:])  # the end record points past its directory
    bad = bytearray(good)                                             # a '..' entry name (central and local)
    for at in (bad.find(b"t1", cd), layout["t1"][0] + 30):
        bad[at:at + 2] = b".."
    out["dotdot"] = bytes(bad)
    bad = bytearray(good)                                             # t1's sizes (both headers) reach into t2
    for at in (bad.find(b"t1", cd) - 46 + 20, layout["t1"][0] + 18):
        size = struct.unpack_from("<I", bad, at)[0] + 300
        struct.pack_into("<II", bad, at, size, size)
    out["overlap"] = bytes(bad)
    bad = bytearray(good)                                             # a flipped byte in t1's data
    bad[layout["t1"][1] - 10] ^= 0xFF
    out["crc"] = bytes(bad)
    return out


def test_onnxz_hostile_remote_errors_equal_local(tmp_path):
    needs("aiohttp", "fsspec's http:// needs it")
    cases = _hostile_archives(tmp_path)
    server = RangeHTTPServer({f"/{k}.onnxz": v for k, v in cases.items()})
    try:
        for name, data in cases.items():
            local = tmp_path / f"{name}.onnxz"
            local.write_bytes(data)
            with pytest.raises(Exception) as want:
                onnxio.load(str(local), verify_crc=True)
            server.reset()
            with pytest.raises(type(want.value)) as got:
                onnxio.load(f"{server.url}/{name}.onnxz")
            # the same error: the class, and the message after the archive's
            # name ("archive (bytes): " remote; "<path>: " and, for the
            # archive's structure, "the archive: " local)
            import re

            strip = lambda e: re.sub(r"^(archive \S+: |\S+: (the archive: )?)", "", str(e))  # noqa: E731
            assert strip(got.value) == strip(want.value), (name, got.value, want.value)
            assert server.served <= len(data) + 64, name  # never more than the file (and its first 64 bytes)
    finally:
        server.stop()
