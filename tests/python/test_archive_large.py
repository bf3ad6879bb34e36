""".onnxz archives past 4 GiB: ZIP64 sizes and offsets, from Python.

One uint8 tensor of 4 GiB + 1 MiB (its entry needs ZIP64 sizes) followed by
a small float32 tensor (its entry starts past 4 GiB: a ZIP64 offset). The
source is built without onnxio and without holding 4 GiB in Python: numpy
writes the payloads to an external data file, onnx's protobuf classes write
the small model that points at it. Then onnxio loads it with no_copy
(payloads borrowed from the data file's mapping) and saves an .onnxz, which
is checked by:

1. zipfile: the entries' sizes and offsets, the model entry parsed by onnx,
   a few ranges of the big entry and the whole small one read through it;
2. struct parsing of the local headers, the central directory and the end
   records: ZIP64 extra fields and the ZIP64 end record and locator where
   the values need them;
3. `unzip -l` and `unzip -t` (about 10 s: it reads the 4 GiB and checks
   the CRC-32s; ONNXIO_TEST_UNZIP_T=0 leaves it out);
4. a numpy memmap of the archive at the big entry's data offset, compared
   with the pattern, and onnxio's no_copy load of the archive, whose payload
   must be the same pattern at the same bytes of the file.

Needs about 2 x 4 GiB of free disk (the data file is deleted as soon as the
archive is written) and a 64-bit Python; skipped with the reason otherwise.
About 35 s on a 2-core VM with a local disk (25 s without `unzip -t`).
"""
import os
import shutil
import struct
import subprocess
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as oh
import pytest

import onnxio
from conftest import needs

MiB = 1 << 20
GiB = 1 << 30
BIG = 4 * GiB + MiB
SMALL = 1024  # float32 elements
BLOCK = 16 * MiB
MODEL = "__MODEL_PROTO"


def pattern_chunks(seed, size):
    """(offset, uint8 array) pieces covering `size` bytes: a random 16 MiB
    block XORed with a byte that changes every block, so that bytes read
    from the wrong offset do not match."""
    base = np.random.default_rng(seed).integers(0, 256, BLOCK, dtype=np.uint8)
    for k, off in enumerate(range(0, size, BLOCK)):
        n = min(BLOCK, size - off)
        yield off, base[:n] ^ np.uint8((k * 37 + seed) & 0xFF)


def pattern_at(seed, start, n):
    """`n` bytes of the pattern from `start` (within one block)."""
    base = np.random.default_rng(seed).integers(0, 256, BLOCK, dtype=np.uint8)
    k, off = divmod(start, BLOCK)
    assert off + n <= BLOCK
    return base[off: off + n] ^ np.uint8((k * 37 + seed) & 0xFF)


def check_pattern(arr, seed, what):
    for off, chunk in pattern_chunks(seed, len(arr)):
        got = arr[off: off + len(chunk)]
        if not np.array_equal(got, chunk):
            bad = int(np.flatnonzero(got != chunk)[0])
            pytest.fail(f"{what}: byte {off + bad} is {int(got[bad])}, expected {int(chunk[bad])}")


SMALL_DATA = np.random.default_rng(99).standard_normal(SMALL).astype(np.float32)


def need_resources(tmp_path):
    if sys.maxsize < 1 << 40:
        pytest.skip("needs a 64-bit Python")
    free = shutil.disk_usage(tmp_path).free
    if free < 2 * BIG + GiB:
        pytest.skip(f"needs {(2 * BIG + GiB) / GiB:.1f} GiB free disk in {tmp_path}, has {free / GiB:.1f}")


def write_source(tmp_path):
    """big.data (the big payload, then the small one) and m.onnx pointing at it."""
    data = tmp_path / "big.data"
    with open(data, "wb") as f:
        for _, chunk in pattern_chunks(1, BIG):
            f.write(chunk.tobytes())
        f.write(SMALL_DATA.tobytes())

    def external(name, dtype, dims, offset, length):
        t = TensorProto(name=name, data_type=dtype, dims=dims, data_location=TensorProto.EXTERNAL)
        for k, v in (("location", "big.data"), ("offset", str(offset)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        return t

    inits = [external("big", TensorProto.UINT8, [BIG], 0, BIG),
             external("small", TensorProto.FLOAT, [SMALL], BIG, SMALL * 4)]
    g = oh.make_graph([oh.make_node("Identity", ["small"], ["y"])], "g", [],
                      [oh.make_tensor_value_info("y", TensorProto.FLOAT, [SMALL])], inits)
    model = oh.make_model(g)
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    return data, tmp_path / "m.onnx"


def central_records(raw, start, count):
    """(name, csize, usize, offset fields, extra) of each central header."""
    out, at = [], start
    for _ in range(count):
        (sig, _mb, _vn, _fl, _me, _t, _d, _crc, cs, us, nlen, xlen, clen, _dk, _ia, _ea,
         off) = struct.unpack_from("<IHHHHHHIIIHHHHHII", raw, at)
        assert sig == 0x02014B50
        name = bytes(raw[at + 46: at + 46 + nlen]).decode()
        extra = bytes(raw[at + 46 + nlen: at + 46 + nlen + xlen])
        out.append((name, cs, us, off, extra))
        at += 46 + nlen + xlen + clen
    return out


def zip64_values(extra):
    at = 0
    while at + 4 <= len(extra):
        i, n = struct.unpack_from("<HH", extra, at)
        if i == 1:
            return struct.unpack_from(f"<{n // 8}Q", extra, at + 4)
        at += 4 + n
    return None


@pytest.mark.slow
def test_archive_past_4gib(tmp_path):
    need_resources(tmp_path)
    unzip = needs("unzip", "an independent check of the archive")
    archive = tmp_path / "m.onnxz"
    data = tmp_path / "big.data"
    try:
        data, src = write_source(tmp_path)
        model = onnxio.load(str(src), no_copy=True)  # borrowed from big.data's mapping
        onnxio.save(model, str(archive))
        del model
    except BaseException:
        archive.unlink(missing_ok=True)
        raise
    finally:
        data.unlink(missing_ok=True)  # the archive is all that is needed from here on

    try:
        size = archive.stat().st_size
        assert size > BIG
        with zipfile.ZipFile(archive) as z:
            infos = {i.filename: i for i in z.infolist()}
            assert [i.filename for i in z.infolist()] == ["big", "small", MODEL]
            big, small = infos["big"], infos["small"]
            assert big.file_size == big.compress_size == BIG
            assert big.compress_type == zipfile.ZIP_STORED
            assert big.header_offset == 0
            assert small.header_offset > 4 * GiB  # a ZIP64 offset
            assert small.file_size == SMALL * 4
            assert np.array_equal(np.frombuffer(z.read("small"), np.float32), SMALL_DATA)
            inner = onnx.load_model_from_string(z.read(MODEL))
            keys = {t.name: {e.key: e.value for e in t.external_data} for t in inner.graph.initializer}
            # Loaded from external data, the tensors had data_location DEFAULT:
            # the archive keeps its presence (docs/onnxz.md, "The model entry").
            mark = {"onnxio.data_location": "DEFAULT"}
            assert keys == {"big": {"location": "big", "offset": "0", "length": str(BIG), **mark},
                            "small": {"location": "small", "offset": "0", "length": str(SMALL * 4), **mark}}
            with z.open("big") as f:  # the first bytes, through zipfile's own reader
                assert np.array_equal(np.frombuffer(f.read(MiB), np.uint8), pattern_at(1, 0, MiB))
            start_dir = z.start_dir

        with open(archive, "rb") as f:
            raw = f.read(4096)
            # The big entry's local header: sizes in its ZIP64 extra field.
            sig, _v, _fl, _me, _t, _d, _crc, cs, us, nlen, xlen = struct.unpack_from("<IHHHHHIIIHH", raw, 0)
            assert sig == 0x04034B50 and (cs, us) == (0xFFFFFFFF, 0xFFFFFFFF)
            assert zip64_values(raw[30 + nlen: 30 + nlen + xlen])[:2] == (BIG, BIG)
            big_data = 30 + nlen + xlen
            assert big_data % 64 == 0
            f.seek(start_dir)
            tail = f.read()
        cd = central_records(tail, 0, 3)
        assert cd[0][1:3] == (0xFFFFFFFF, 0xFFFFFFFF) and zip64_values(cd[0][4])[:2] == (BIG, BIG)
        assert cd[1][3] == 0xFFFFFFFF and zip64_values(cd[1][4]) == (small.header_offset,)
        # End records: a ZIP64 end record and locator, the classic record deferring to them.
        assert tail[-22:-18] == b"PK\x05\x06"
        assert struct.unpack_from("<I", tail, len(tail) - 6)[0] == 0xFFFFFFFF
        assert tail[-42:-38] == b"PK\x06\x07"
        rec = struct.unpack_from("<Q", tail, len(tail) - 42 + 8)[0]
        assert rec > 4 * GiB
        assert tail[rec - start_dir: rec - start_dir + 4] == b"PK\x06\x06"
        count, cd_size, cd_off = struct.unpack_from("<QQQ", tail, rec - start_dir + 32)
        assert (count, cd_off) == (3, start_dir) and cd_size == rec - start_dir

        r = subprocess.run([unzip, "-l", str(archive)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert str(BIG) in r.stdout and "3 files" in r.stdout
        if os.environ.get("ONNXIO_TEST_UNZIP_T", "1") != "0":
            r = subprocess.run([unzip, "-t", str(archive)], capture_output=True, text=True)
            assert r.returncode == 0 and "No errors detected" in r.stdout, r.stdout + r.stderr

        # The file's bytes at the entry's data offset: the pattern.
        mm = np.memmap(archive, dtype=np.uint8, mode="r", offset=big_data, shape=(BIG,))
        check_pattern(mm, 1, "archive bytes of 'big'")

        # onnxio's no_copy load: the payload is those bytes of the mapping.
        loaded = onnxio.load(str(archive), no_copy=True)
        by_name = {t.name: t for t in loaded.graph.initializer}
        # Read from an entry: as before the archive, where the load from
        # big.data had set data_location (DEFAULT). A bool, not the tensor,
        # in the assertion: pytest would print 4 GiB of raw_data.
        had_location = by_name["big"].HasField("data_location") and by_name["big"].data_location == 0
        assert had_location
        view = onnxio._onnxio._payload_view(by_name["big"])
        assert view.readonly and len(view) == BIG
        arr = np.frombuffer(view, np.uint8)
        for start in (0, BIG // 3, 4 * GiB - 7, BIG - 4096):
            assert np.array_equal(arr[start: start + 4096], mm[start: start + 4096]), start
        check_pattern(arr, 1, "onnxio no_copy payload of 'big'")
        small_view = onnxio._onnxio._payload_view(by_name["small"])
        assert np.array_equal(np.frombuffer(small_view, np.float32), SMALL_DATA)
        del arr, view, small_view, by_name, loaded, mm
    finally:
        archive.unlink(missing_ok=True)  # 4 GiB: not left behind in pytest's tmp dirs, even on failure
