"""Lifetime, leaks, threads and the GIL in the onnxio package.

A sub-message or a numpy view of a payload kept after its model is deleted
or cleared stays valid and right; a no_copy load from a bytes object keeps
that object alive (its reference count says so); loading and dropping a
model with megabytes of payload 200 times leaves resident memory flat; two
threads loading and saving at once get correct results; a load releases the
GIL (another thread runs while it is in the C library).

References: numpy arrays and bytes made before the load, and the onnx
package's reading of the same bytes.
"""

import gc
import os
import sys
import threading
import time

import numpy as np
import onnx
from onnx import helper as oh
from onnx import numpy_helper as onh
import pytest

import onnxio
from onnxio import _onnxio


def make_model(mb=4, seed=0, tensors=4):
    rng = np.random.default_rng(seed)
    n = max(1, int(mb * (1 << 20) / 4 / tensors))
    arrays = [rng.standard_normal(n).astype(np.float32) for _ in range(tensors)]
    inits = [onh.from_array(a, f"w{i}") for i, a in enumerate(arrays)]
    nodes = [oh.make_node("Identity", [f"w{i}"], [f"y{i}"]) for i in range(tensors)]
    g = oh.make_graph(nodes, "g", [], [oh.make_tensor_value_info(f"y{i}", onnx.TensorProto.FLOAT, [n])
                                       for i in range(tensors)], inits)
    return oh.make_model(g).SerializeToString(), arrays


@pytest.fixture(scope="module")
def model():
    return make_model()


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# ---- lifetime ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["del", "Clear", "ClearField"])
@pytest.mark.parametrize("mode", ["copy", "no_copy", "file", "file_no_copy"])
def test_views_and_submessages_outlive_their_model(tmp_path, model, how, mode):
    data, arrays = model
    if mode.startswith("file"):
        p = tmp_path / "m.onnx"
        p.write_bytes(data)
        m = onnxio.load(p, no_copy=mode == "file_no_copy")
    else:
        m = onnxio.load(bytes(data), no_copy=mode == "no_copy")
    graph = m.graph
    node = m.graph.node[1]
    t = m.graph.initializer[2]
    view = np.frombuffer(_onnxio._payload_view(t), np.float32)
    graph_bytes = onnx.ModelProto.FromString(data).graph.SerializeToString()
    if how == "del":
        del m
    elif how == "Clear":
        m.Clear()
        assert len(m.graph.node) == 0
    else:
        m.ClearField("graph")
        assert not m.HasField("graph")
    gc.collect()
    if mode.startswith("file"):
        os.unlink(tmp_path / "m.onnx")  # the mapping, not the name, keeps no_copy payloads alive
    # Allocate and touch memory so that freed blocks would be reused.
    junk = [bytearray(os.urandom(64)) * (1 << 14) for _ in range(8)]
    assert np.array_equal(view, arrays[2])
    assert node.op_type == "Identity" and list(node.input) == ["w1"]
    assert t.name == "w2" and np.array_equal(np.frombuffer(t.raw_data, np.float32), arrays[2])
    assert graph.SerializeToString() == graph_bytes
    del junk


def test_view_outlives_tensor_replacement(model):
    data, arrays = model
    m = onnxio.load(data)
    t = m.graph.initializer[0]
    view = np.frombuffer(_onnxio._payload_view(t), np.float32)
    t.raw_data = b"\0" * 8  # the tensor drops its payload; the view keeps it
    del t, m
    gc.collect()
    assert np.array_equal(view, arrays[0])


def test_no_copy_keeps_the_bytes_object_alive(model):
    data = bytes(model[0])  # a private object: nothing else refers to it
    base = sys.getrefcount(data)
    m = onnxio.load(data, no_copy=True)
    assert sys.getrefcount(data) > base
    view = _onnxio._payload_view(m.graph.initializer[0])
    del m
    gc.collect()
    assert sys.getrefcount(data) > base  # the view's payload still points into it
    del view
    gc.collect()
    assert sys.getrefcount(data) == base
    # Without no_copy an immutable bytes object is borrowed all the same
    # (docs/memory.md); a bytearray is copied, and nothing holds it.
    m = onnxio.load(data)
    assert sys.getrefcount(data) > base
    del m
    gc.collect()
    assert sys.getrefcount(data) == base
    mutable = bytearray(data)
    base = sys.getrefcount(mutable)
    m = onnxio.load(mutable)
    assert sys.getrefcount(mutable) == base
    del m


def test_payload_set_from_bytes_keeps_the_object_alive():
    payload = os.urandom(1 << 16)
    base = sys.getrefcount(payload)
    t = onnxio.TensorProto()
    _onnxio._set_raw_data(t, payload)
    assert sys.getrefcount(payload) == base + 1
    view = _onnxio._payload_view(t)
    del t
    gc.collect()
    assert bytes(view) == payload
    del view
    gc.collect()
    assert sys.getrefcount(payload) == base


# ---- leaks ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["bytes", "bytes_no_copy", "file", "file_no_copy",
                                  pytest.param("save", marks=pytest.mark.slow), "view"])
def test_no_leak_over_200_loads(tmp_path, model, mode):
    data, _ = model  # 4 MB of payload
    p = tmp_path / "m.onnx"
    p.write_bytes(data)
    out = tmp_path / "out.onnx"

    def once():
        if mode.startswith("bytes"):
            m = onnxio.load(data, no_copy=mode.endswith("no_copy"))
        else:
            m = onnxio.load(p, no_copy=mode.endswith("no_copy"))
        if mode == "save":
            onnxio.save(m, out)
            m.SerializeToString()
        if mode == "view":
            v = np.frombuffer(_onnxio._payload_view(m.graph.initializer[0]), np.float32)
            m.ClearField("graph")
            assert v.size > 0
        del m

    for _ in range(20):
        once()
    gc.collect()
    before = rss_bytes()
    for _ in range(200):
        once()
    gc.collect()
    grown = rss_bytes() - before
    # A leak of the payload would be 200 x 4 MB; allow allocator noise.
    assert grown < 48 << 20, f"resident memory grew by {grown >> 20} MB over 200 loads"


# ---- threads and the GIL ---------------------------------------------------------------


def test_two_threads_loading_and_saving(tmp_path):
    models = [make_model(mb=2, seed=s) for s in (1, 2)]
    errors = []

    def work(i):
        try:
            data, arrays = models[i]
            src = tmp_path / f"src{i}.onnx"
            src.write_bytes(data)
            for j in range(15):
                m = onnxio.load(src if j % 2 else data, num_threads=1 + j % 2)
                assert m.SerializeToString() == data
                out = tmp_path / f"out{i}.onnx"
                onnxio.save(m, out, num_threads=2)
                assert out.read_bytes() == data
                for k, a in enumerate(arrays):
                    assert np.array_equal(np.frombuffer(_onnxio._payload_view(m.graph.initializer[k]), np.float32), a)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _progress_during(call, attempts=40):
    """True when a second thread ran Python code while `call()` ran, on any
    of `attempts` tries. The switch interval is made huge, so that the
    interpreter never takes the GIL from the main thread. Each try wakes a
    thread blocked on an Event (Event.set releases a lock, never the GIL)
    and then calls `call()`: the woken thread needs the GIL to go on, so it
    counts only if `call()` releases the GIL; a call that holds it
    throughout leaves the count as it was, deterministically (the count is
    read before the main thread gives the GIL up)."""
    counter = [0]
    go = threading.Event()
    done = threading.Event()
    stop = [False]

    def waiter():
        while True:
            go.wait()
            go.clear()
            if stop[0]:
                return
            counter[0] += 1
            done.set()

    old = sys.getswitchinterval()
    t = threading.Thread(target=waiter)
    t.start()
    seen = False
    try:
        sys.setswitchinterval(1000.0)
        for _ in range(attempts):
            done.clear()
            before = counter[0]
            go.set()
            call()
            if counter[0] != before:
                seen = True
                break
            done.wait()  # let the waiter finish its turn before the next try
    finally:
        sys.setswitchinterval(old)
        stop[0] = True
        go.set()
        t.join()
    return seen


def test_gil_released_during_load_save_and_serialize(tmp_path):
    data, _ = make_model(mb=64, tensors=2)
    p = tmp_path / "big.onnx"
    p.write_bytes(data)
    m = onnxio.load(p)
    # A bytearray: its payloads are copied (64 MiB, long enough for the
    # other thread to run); immutable bytes are borrowed, a parse of a few
    # microseconds that a busy machine may not schedule the thread within.
    assert _progress_during(lambda: _onnxio._load_bytes(bytearray(data), onnxio.ModelProto, num_threads=1))
    assert _progress_during(lambda: _onnxio._load_file(str(p), onnxio.ModelProto, num_threads=1))
    assert _progress_during(lambda: _onnxio._save_file(m, str(tmp_path / "o.onnx"), num_threads=1))
    assert _progress_during(lambda: _onnxio._serialize(m))


def test_gil_check_is_not_vacuous():
    # A call that holds the GIL throughout (a C loop over a big buffer) lets the other thread make no progress.
    buf = bytes(64 << 20)
    assert not _progress_during(lambda: buf.count(b"\1"), attempts=20)


def test_payload_blocks_and_slabs():
    """Where a copy load puts payloads (docs/memory.md): one of 2 MiB or more
    starts on a huge page boundary; those from 256 KiB to under 2 MiB are
    carved from one slab that starts on one; a view of a slab-mate kept
    after the model is dropped stays right. Values against numpy's arrays."""
    MiB = 1 << 20
    rng = np.random.default_rng(7)
    sizes = {"big0": 3 * MiB, "mid0": MiB, "big1": 5 * MiB // 2, "mid1": 300 << 10, "mid2": MiB + 4, "small": 100 << 10}
    arrays = {k: rng.integers(0, 255, n, dtype=np.uint8) for k, n in sizes.items()}
    g = oh.make_graph([], "g", [], [], [onh.from_array(a, k) for k, a in arrays.items()])
    # A bytearray: copied (an immutable bytes object would be borrowed).
    m = onnxio.load(bytearray(oh.make_model(g).SerializeToString()))
    addr = {}
    for t in m.graph.initializer:
        v = _onnxio._payload_view(t)
        assert bytes(v) == arrays[t.name].tobytes(), t.name
        addr[t.name] = np.frombuffer(v, np.uint8).ctypes.data
    for k in ("big0", "big1"):
        assert addr[k] % (2 * MiB) == 0, k
    mids = sorted(addr[k] for k in ("mid0", "mid1", "mid2"))
    assert mids[0] % (2 * MiB) == 0
    assert mids[-1] + MiB + 4 - mids[0] <= 4 * MiB  # one 4 MiB slab
    kept = onnxio.numpy_helper.to_array(m.graph.initializer[3])
    assert kept.ctypes.data == addr["mid1"]  # a view of the slab
    del m
    gc.collect()
    np.testing.assert_array_equal(kept, arrays["mid1"])


PEAK_CHILD = r"""
import sys, onnxio
def kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
before = kib("VmRSS")
m = onnxio.load(sys.argv[1])
print((kib("VmHWM") - before) * 1024)
"""


@pytest.mark.parametrize("state", ["warm", "cold"])
@pytest.mark.parametrize("layout", ["onnx", "onnxz"])
def test_copy_load_peak_is_the_payload(tmp_path, layout, state):
    """A copy load of a single file or an .onnxz archive grows the
    process's peak resident memory by the payload and the structure, not by
    the file pages its parse (or the archive's read of its local headers)
    maps around each tensor header (decode.c drops them behind it, zip.c
    after the headers): with the file's pages in the cache (evicted, then
    read in order, as `cat` reads: the kernel keeps them in large folios),
    and evicted (a copy load of a small file then faults whole 2 MiB
    folios).
    24 tensors of 3 MiB; the child's VmHWM against what onnx reads."""
    import subprocess
    rng = np.random.default_rng(3)
    inits = [onh.from_array(rng.standard_normal(3 << 18).astype(np.float32), f"w{i}") for i in range(24)]
    model = oh.make_model(oh.make_graph([], "g", [], [], inits))
    payload = sum(len(t.raw_data) for t in model.graph.initializer)
    path = tmp_path / f"m.{layout}"
    if layout == "onnx":
        onnx.save(model, str(path))
    else:
        onnxio.save_model(onnxio.ModelProto.FromString(model.SerializeToString()), str(path))
    # Evicted first either way: the pages a write left cached are small
    # folios, and a read after eviction caches them in large ones.
    os.sync()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    if state == "warm":
        with open(path, "rb") as f:
            while f.read(8 << 20):
                pass
    out = subprocess.run([sys.executable, "-c", PEAK_CHILD, str(path)], check=True, capture_output=True, text=True)
    growth = int(out.stdout)
    assert growth <= payload * 1.05 + (2 << 20), (growth, payload)
