"""A no_copy load of a model whose file is not in the page cache reads its
structure from the disk, not its payloads: the parse asks
for the pages it reads and keeps the kernel's read-around out of the large
tensors it skips, in a single .onnx file and in an .onnxz archive.

The bytes read from the storage come from the kernel's count for the
process (/proc/self/io, read_bytes); the file is evicted first with
posix_fadvise(DONTNEED), and mincore(2) confirms that none of it stayed
cached (else the test skips: nothing would be measured).
"""
import ctypes
import mmap
import os
import subprocess
import sys

import numpy as np
import pytest

import onnxio
from onnxio import helper, numpy_helper

TENSORS = 24
TENSOR_BYTES = 4 << 20


def _resident_pages(path):
    """How many of the file's pages are in the page cache (mincore(2) on a
    mapping of it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), "mmap")
        try:
            vec = (ctypes.c_ubyte * ((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
            return sum(v & 1 for v in vec)
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def _evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


CHILD = r"""
import sys, onnxio
def read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
before = read_bytes()
m = onnxio.load(sys.argv[1], no_copy=True)
after = read_bytes()
assert len(m.graph.initializer) == int(sys.argv[2])
print(after - before)
"""


@pytest.fixture(scope="module")
def big_model():
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.standard_normal(TENSOR_BYTES // 4).astype(np.float32), f"w{i}")
             for i in range(TENSORS)]
    nodes = [helper.make_node("Identity", [f"w{i}"], [f"y{i}"]) for i in range(TENSORS)]
    outputs = [helper.make_tensor_value_info(f"y{i}", onnxio.TensorProto.FLOAT, [TENSOR_BYTES // 4])
               for i in range(TENSORS)]
    return helper.make_model(helper.make_graph(nodes, "g", [], outputs, initializer=inits))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="no /proc/self/io (task I/O accounting) here")
@pytest.mark.parametrize("suffix", [".onnx", ".onnxz"])
def test_no_copy_load_reads_the_structure_not_the_payloads(tmp_path, big_model, suffix):
    path = str(tmp_path / f"model{suffix}")
    onnxio.save_model(big_model, path)
    size = os.path.getsize(path)
    _evict(path)
    if _resident_pages(path) > 0:
        pytest.skip("the page cache kept the file after posix_fadvise(DONTNEED): nothing to measure")
    out = subprocess.run([sys.executable, "-c", CHILD, path, str(TENSORS)], capture_output=True, text=True, check=True)
    read = int(out.stdout)
    # The structure is a few KiB; what is read besides is the parse's
    # read-ahead after each payload it skips (64 KiB) and a page for each of
    # an archive's local headers. Before, the kernel's read-around of every
    # header's fault (128 KiB with the default read_ahead_kb, 8 MiB on the
    # machine this was measured on) read into the payloads around it.
    assert read <= TENSORS * (96 << 10), f"read {read} bytes of a {size}-byte file"
    # The payloads are still there, from the file, when touched.
    m = onnxio.load(path, no_copy=True)
    for t, want in zip(m.graph.initializer, big_model.graph.initializer):
        np.testing.assert_array_equal(numpy_helper.to_array(t), numpy_helper.to_array(want))


def _can_read_directly(path):
    """Whether this kernel and file system can do what direct_io needs:
    cachestat(2) (Linux 6.5) and O_DIRECT opens of the file."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        class Range(ctypes.Structure):
            _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]
        stat = (ctypes.c_uint64 * 5)()
        if libc.syscall(ctypes.c_long(451), fd, ctypes.byref(Range(0, 0)), stat, 0) != 0:
            return False
    finally:
        os.close(fd)
    try:
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0)))
    except OSError:
        return False
    return hasattr(os, "O_DIRECT")


@pytest.mark.parametrize("layout", ["onnx", "external", "onnxz", "onnx read whole", "onnxz read whole"])
def test_cold_copy_load_reads_around_the_page_cache(tmp_path, big_model, layout):
    """A copy load of evicted files reads the payloads directly (direct_io,
    the default): the values are numpy's, 64-byte aligned and writable, and
    the payload pages are not left in the page cache; with direct_io=False
    the same load leaves them cached. External data lies at 4 KiB-aligned
    offsets (read in place); a single .onnx has its payloads where protobuf
    put them (read through the bounce buffer); an archive's CRC-32s are
    checked as it reads. A cold single file of at most 1 GiB is read whole
    into memory laid out as the file, its payloads moved by less than 64
    bytes there to be aligned (onnxio__read_whole, "onnx read whole"), and a
    cold archive is read whole the same way, each tensor taking its entry's
    bytes there (onnxio__archive_read; "onnxz read whole", where only the
    tail read first stays cached); so for "onnx" and "onnxz" the load here
    has a payload callback (which loads every payload): the file is then
    mapped for its structure only, as a larger one is, and the pool reads
    the payloads."""
    kwargs = {}
    if layout == "external":
        path = str(tmp_path / "model.onnx")
        onnxio.save_model(big_model, path, save_as_external_data=True, location="model.onnx.data",
                          update_model=False)  # the module's fixture: the next tests save it again
        data = str(tmp_path / "model.onnx.data")
    else:
        path = data = str(tmp_path / f"model.{layout.split()[0]}")
        onnxio.save_model(big_model, path)
        if not layout.endswith("read whole"):
            kwargs["payload_fn"] = lambda tensor, size, external: None
    if not _can_read_directly(data):
        pytest.skip("no cachestat(2) or no O_DIRECT on this file system: direct_io reads through the cache")
    pages = (os.path.getsize(data) + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    want = [numpy_helper.to_array(t) for t in big_model.graph.initializer]
    resident = {}
    for direct in (True, False):
        _evict(path)
        _evict(data)
        if _resident_pages(data) > 0:
            pytest.skip("the page cache kept the file after posix_fadvise(DONTNEED): nothing to measure")
        m = onnxio.load(path, direct_io=direct, **kwargs)
        resident[direct] = _resident_pages(data)
        for t, w in zip(m.graph.initializer, want):
            got = numpy_helper.to_array(t)  # a view of the payload
            np.testing.assert_array_equal(got, w)
            assert got.ctypes.data % 64 == 0
            assert got.base is not None and got.flags.writeable
            del got
        del m
    # What stays cached with direct reads is what the parse read: the
    # structure, a page or a read-ahead window around each tensor header;
    # an archive read whole leaves the 64 KiB of its tail.
    assert resident[True] <= (0.02 if layout.endswith("read whole") else 0.25) * pages, resident
    assert resident[False] >= 0.9 * pages, resident


def test_cold_copy_load_of_a_small_file_is_read_whole(tmp_path, big_model):
    """The other side of the test above: without a payload callback, a
    single file of at most 1 GiB is read by the parse through the page
    cache (its faults read whole folios, and the kernel reads ahead), and
    the values are still numpy's."""
    path = str(tmp_path / "model.onnx")
    onnxio.save_model(big_model, path)
    _evict(path)
    if _resident_pages(path) > 0:
        pytest.skip("the page cache kept the file after posix_fadvise(DONTNEED): nothing to measure")
    m = onnxio.load(path)
    for t, w in zip(m.graph.initializer, big_model.graph.initializer):
        np.testing.assert_array_equal(numpy_helper.to_array(t), numpy_helper.to_array(w))

