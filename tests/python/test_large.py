"""Single .onnx files past 2 GiB: onnxio writes them and reads them back, in
copy and no_copy mode, with every payload byte checked.

Two models: (a) one uint8 tensor of 2 GiB + 100 MiB, (b) nine tensors of
256 MiB (2.25 GiB in all, each under 2 GiB). Each is built without onnxio's
help (numpy writes the payloads to an external data file, onnx writes the
small model that points at it), then:

1. `onnxio convert --inline` makes the single > 2 GiB file (a no_copy load
   of the external data, a save with 64-bit sizes);
2. a protobuf reader written here (a tag walk over the file with a numpy
   memmap) finds every initializer's raw_data and checks its offset, length
   and bytes against the numpy pattern;
3. no_copy load: `onnxio convert` (which loads with no_copy) back to an
   external data file, checked through onnx's own reading of the small model
   and the same patterns;
4. copy load: onnxio_load_model with default options (payloads copied into
   owned buffers) and onnxio_save_model to a new file, which must equal the
   > 2 GiB file byte for byte.

Also pins down that the onnx package cannot write such a file: its
ModelProto (upb) refuses to serialize past 2 GiB.

Each case needs about 2 x its size in free disk (the files are deleted as
soon as they are checked) and 2.5 x in free memory (the copy load, and the
onnx check that holds the payload twice); it is skipped with the reason when
the machine has less. About 30 s per case on a 2-core VM with a local disk.
"""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from google.protobuf.message import EncodeError
from onnx import TensorProto, helper

from conftest import needs
from onnxio_ctypes import CLI_PATH, LIB_PATH

MiB = 1 << 20
GiB = 1 << 30
BLOCK = 16 * MiB  # the repeating unit of a payload pattern
CHUNK = 64 * MiB  # the unit of file comparisons

CASES = {
    "one_tensor_2.1GiB": [("big", 2 * GiB + 100 * MiB, 1)],
    "nine_tensors_2.25GiB": [(f"w{i}", 256 * MiB, 10 + i) for i in range(9)],
}


# ---- payload patterns -------------------------------------------------------

def pattern_chunks(seed, size):
    """Yields (offset, uint8 array) covering `size` bytes: a random 16 MiB
    block of this seed, XORed with a byte that changes every block, so a
    payload read from the wrong tensor or the wrong offset does not match."""
    base = np.random.default_rng(seed).integers(0, 256, BLOCK, dtype=np.uint8)
    for k, off in enumerate(range(0, size, BLOCK)):
        n = min(BLOCK, size - off)
        yield off, base[:n] ^ np.uint8((k * 37 + seed) & 0xFF)


def check_payload(mm, offset, size, seed, what):
    for off, chunk in pattern_chunks(seed, size):
        got = mm[offset + off: offset + off + len(chunk)]
        if not np.array_equal(got, chunk):
            bad = int(np.flatnonzero(got != chunk)[0])
            pytest.fail(f"{what}: payload byte {off + bad} (file offset {offset + off + bad}) "
                        f"is {int(got[bad])}, expected {int(chunk[bad])}")


# ---- an independent protobuf reader -------------------------------------------

def _varint(mm, pos):
    result = shift = 0
    while True:
        b = int(mm[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        assert shift < 64, f"varint too long at {pos}"


def _fields(mm, start, end):
    """Yields (field number, wire type, value): the value of a
    length-delimited field is its (offset, length) in the file."""
    pos = start
    while pos < end:
        key, pos = _varint(mm, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(mm, pos)
        elif wire == 1:
            value, pos = None, pos + 8
        elif wire == 2:
            length, pos = _varint(mm, pos)
            value, pos = (pos, length), pos + length
        elif wire == 5:
            value, pos = None, pos + 4
        else:
            raise AssertionError(f"wire type {wire} at byte {pos}")
        assert pos <= end, f"field {number} runs past its message at byte {pos}"
        yield number, wire, value


def initializer_payloads(path):
    """{name: (raw_data offset, length)} of ModelProto.graph (7) .initializer
    (5), from TensorProto.name (8) and raw_data (9)."""
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    found = {}
    for number, wire, value in _fields(mm, 0, len(mm)):
        if number != 7 or wire != 2:
            continue
        g_off, g_len = value
        for gnum, gwire, gval in _fields(mm, g_off, g_off + g_len):
            if gnum != 5 or gwire != 2:
                continue
            name, raw = None, None
            for tnum, twire, tval in _fields(mm, gval[0], gval[0] + gval[1]):
                if tnum == 8 and twire == 2:
                    name = bytes(mm[tval[0]: tval[0] + tval[1]]).decode()
                elif tnum == 9 and twire == 2:
                    raw = tval
                elif tnum == 14:
                    assert tval != 1, f"{name}: data_location is EXTERNAL in a single-file model"
            found[name] = raw
    return mm, found


# ---- helpers ------------------------------------------------------------------

def need_resources(tmp_path, total):
    st = shutil.disk_usage(tmp_path)
    if st.free < 2 * total + GiB:
        pytest.skip(f"needs {(2 * total + GiB) / GiB:.1f} GiB free disk in {tmp_path}, "
                    f"has {st.free / GiB:.1f} GiB")
    with open("/proc/meminfo") as f:
        avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    if avail < 2.5 * total + GiB:
        pytest.skip(f"needs {(2.5 * total + GiB) / GiB:.1f} GiB of available memory, "
                    f"has {avail / GiB:.1f} GiB")
    needs("onnxio command")
    assert LIB_PATH.exists(), f"{LIB_PATH} is not built (make)"


def onnxio(*args):
    p = subprocess.run([str(CLI_PATH), *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, f"onnxio {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr}"


def write_source(tmp_path, tensors):
    """src.onnx with its payloads in src.data, written by numpy and onnx."""
    inits, offset = [], 0
    with open(tmp_path / "src.data", "wb") as f:
        for name, size, seed in tensors:
            for _, chunk in pattern_chunks(seed, size):
                chunk.tofile(f)
            t = TensorProto(name=name, data_type=TensorProto.UINT8, dims=[size])
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "src.data"), ("offset", str(offset)), ("length", str(size))):
                e = t.external_data.add()
                e.key, e.value = k, v
            inits.append(t)
            offset += size
    nodes = [helper.make_node("Identity", [n], [n + "_out"]) for n, _, _ in tensors]
    outs = [helper.make_tensor_value_info(n + "_out", TensorProto.UINT8, [s]) for n, s, _ in tensors]
    graph = helper.make_graph(nodes, "large", [], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.save(model, tmp_path / "src.onnx")


def files_equal(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    ma, mb = np.memmap(a, dtype=np.uint8, mode="r"), np.memmap(b, dtype=np.uint8, mode="r")
    return all(np.array_equal(ma[i: i + CHUNK], mb[i: i + CHUNK]) for i in range(0, len(ma), CHUNK))


def copy_load_and_save(src, dst):
    """onnxio_load_model with NULL options (copy mode: every payload in an
    owned buffer, the file's mapping released before it returns), then
    onnxio_save_model with NULL options (one file)."""
    L = ctypes.CDLL(str(LIB_PATH))
    vp = ctypes.c_void_p
    L.onnxio_arena_new.restype = vp
    L.onnxio_arena_unref.argtypes = [vp]
    L.onnxio_load_model.argtypes = [ctypes.c_char_p, vp, vp, ctypes.POINTER(vp)]
    L.onnxio_save_model.argtypes = [vp, ctypes.c_char_p, vp]
    L.onnxio_last_error.restype = ctypes.c_char_p
    arena = L.onnxio_arena_new()
    try:
        model = vp()
        st = L.onnxio_load_model(str(src).encode(), None, arena, ctypes.byref(model))
        assert st == 0, f"onnxio_load_model: {st}: {L.onnxio_last_error().decode()}"
        st = L.onnxio_save_model(model, str(dst).encode(), None)
        assert st == 0, f"onnxio_save_model: {st}: {L.onnxio_last_error().decode()}"
    finally:
        L.onnxio_arena_unref(arena)


# ---- the tests ----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_single_file_past_2gib(tmp_path, case):
    tensors = CASES[case]
    total = sum(size for _, size, _ in tensors)
    assert total > 2 * GiB
    need_resources(tmp_path, total)
    big = tmp_path / "big.onnx"
    try:
        write_source(tmp_path, tensors)
        onnxio("convert", tmp_path / "src.onnx", big, "--inline")
        os.unlink(tmp_path / "src.data")

        # The single file, read by the walk above.
        assert os.path.getsize(big) > total > 2 * GiB
        mm, payloads = initializer_payloads(big)
        assert sorted(payloads) == sorted(n for n, _, _ in tensors)
        for name, size, seed in tensors:
            offset, length = payloads[name]
            assert length == size, f"{name}: raw_data is {length} bytes, expected {size}"
            check_payload(mm, offset, size, seed, f"{case}: {big.name}: {name}")
        del mm

        # no_copy load (convert maps the file and borrows every payload),
        # saved back to external data; onnx reads the small model.
        onnxio("convert", big, tmp_path / "back.onnx", "--external-data", "back.data")
        back = onnx.load(tmp_path / "back.onnx", load_external_data=False)
        data = np.memmap(tmp_path / "back.data", dtype=np.uint8, mode="r")
        by_name = {t.name: t for t in back.graph.initializer}
        for name, size, seed in tensors:
            t = by_name[name]
            assert t.data_location == TensorProto.EXTERNAL and not t.raw_data
            keys = {e.key: e.value for e in t.external_data}
            assert keys["location"] == "back.data" and int(keys["length"]) == size
            check_payload(data, int(keys["offset"]), size, seed, f"{case}: back.data: {name}")
        del data
        os.unlink(tmp_path / "back.data")
        os.unlink(tmp_path / "back.onnx")

        # copy load, saved as one file again: the same bytes.
        copy = tmp_path / "copy.onnx"
        copy_load_and_save(big, copy)
        assert files_equal(big, copy), f"{case}: a copy-mode load and save changed the file"
        os.unlink(copy)
    finally:
        for f in tmp_path.iterdir():
            f.unlink()


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_onnx_cannot_save_past_2gib(tmp_path, case):
    """The onnx package (protobuf 7, upb) has no way to write these models:
    computing the size already fails, so onnx.save_model never writes a
    byte. Zero payloads of the same sizes are enough to show it."""
    tensors = CASES[case]
    total = sum(size for _, size, _ in tensors)
    need_resources(tmp_path, total)
    model = onnx.ModelProto(ir_version=10)
    model.opset_import.add().version = 21
    for name, size, _ in tensors:
        t = model.graph.initializer.add()
        t.name, t.data_type = name, TensorProto.UINT8
        t.dims.append(size)
        t.raw_data = bytes(size)
    with pytest.raises(EncodeError, match=r"^Failed to serialize proto$"):
        onnx.save_model(model, tmp_path / "onnx.onnx")
    assert not (tmp_path / "onnx.onnx").exists()
    with pytest.raises(EncodeError, match=r"^Failed to serialize proto$"):
        model.SerializeToString()


def test_no_copy_maps_external_data_larger_than_memory(tmp_path):
    """A no_copy load maps a data file twice the machine's memory (sparse: no
    disk): the private writable mapping must not reserve swap for the whole
    file, or the kernel's default overcommit heuristic refuses it
    (ENOMEM) though only written pages would take memory."""
    import onnxio

    with open("/proc/meminfo") as f:
        mem = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    size = 2 * mem
    data = tmp_path / "big.bin"
    with open(data, "wb") as f:
        f.truncate(size)
        f.seek(size - 1)
        f.write(b"\x07")
    t = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[size], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "big.bin"), ("offset", "0"), ("length", str(size))):
        e = t.external_data.add()
        e.key, e.value = k, v
    model = helper.make_model(helper.make_graph([], "g", [], [], initializer=[t]))
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    m = onnxio.load(str(tmp_path / "m.onnx"), no_copy=True)
    arr = onnxio.numpy_helper.to_array(m.graph.initializer[0])
    assert arr.shape == (size,)
    assert arr[-1] == 7 and arr[0] == 0  # the file's bytes, read through the mapping
