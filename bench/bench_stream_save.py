"""Streaming save demonstration: N GiB of generated float16
weights streamed to an .onnx + external data file under an address-space
limit (RLIMIT_AS), peak RSS (VmHWM) reported, throughput compared with a
write+fsync loop of the same bytes, and the result loaded back (no_copy)
and spot-checked against the generator's values. Deletes its files unless
--keep.

    python bench/bench_stream_save.py --gib 32 --tensor-mib 64 --limit-gib 2
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import time

CHILD = r"""
import os, resource, sys, time
import numpy as np
import onnxio
from onnxio import TensorProto, helper
out, n, mib, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
shape = [(mib << 20) // 2 // 4096, 4096]
m = helper.make_model(helper.make_graph([], "g", [], [], initializer=[
    TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT16, dims=shape) for i in range(n)]))
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
def gen():
    buf = np.empty(shape, dtype=np.float16)
    for i in range(n):
        buf[...] = np.float16(i % 2048)
        buf[0, :8] = np.arange(8, dtype=np.float16) + i
        yield f"w{i}", buf
t = time.perf_counter()
onnxio.save_streaming(m, gen(), out, save_as_external_data=True, location="weights.data")
dt = time.perf_counter() - t
hwm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(f"SECONDS {dt} HWM {hwm}")
"""


def write_fsync(path, total, chunk):
    buf = bytearray(chunk)
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        done = 0
        while done < total:
            done += os.write(fd, memoryview(buf)[: min(chunk, total - done)])
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=32)
    ap.add_argument("--tensor-mib", type=int, default=64)
    ap.add_argument("--limit-gib", type=float, default=2)
    ap.add_argument("--dir", default="/work/main/.cache/models/scale")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    n = int(a.gib * 1024 // a.tensor_mib)
    total = n * (a.tensor_mib << 20)
    limit = int(a.limit_gib * (1 << 30))
    os.makedirs(a.dir, exist_ok=True)
    out = os.path.join(a.dir, "stream.onnx")
    for name in ("stream.onnx", "weights.data", "dd.bin"):  # a failed run's leftovers
        if os.path.exists(os.path.join(a.dir, name)):
            os.unlink(os.path.join(a.dir, name))
    # The reference first, deleted before the streamed model is written:
    # the disk need hold only one copy of the bytes.
    dd = write_fsync(os.path.join(a.dir, "dd.bin"), total, 64 << 20)
    os.unlink(os.path.join(a.dir, "dd.bin"))
    r = subprocess.run([sys.executable, "-c", CHILD, out, str(n), str(a.tensor_mib), str(limit)],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(r.stderr)
    f = r.stdout.split()
    secs, hwm = float(f[1]), int(f[3])
    import numpy as np

    import onnxio

    m = onnxio.load(out, no_copy=True)
    assert len(m.graph.initializer) == n
    for i in sorted({0, 1, n // 2, n - 1}):
        arr = onnxio.numpy_helper.to_array(m.graph.initializer[i])
        assert arr.dtype == np.float16 and arr.size == (a.tensor_mib << 20) // 2
        assert np.all(arr[1:] == np.float16(i % 2048)) and np.all(arr[0, 8:] == np.float16(i % 2048))
        assert np.array_equal(arr[0, :8], np.arange(8, dtype=np.float16) + i)
    del m
    gib = total / (1 << 30)
    print(f"streamed {n} float16 tensors of {a.tensor_mib} MiB = {gib:.2f} GiB under RLIMIT_AS "
          f"{a.limit_gib} GiB")
    print(f"streaming save: {secs:.1f} s, {gib / secs:.2f} GiB/s; peak RSS (VmHWM) {hwm / (1 << 20):.0f} MiB "
          f"(bound: largest tensor + 256 MiB = {a.tensor_mib + 256} MiB)")
    print(f"write+fsync of the same bytes: {dd:.1f} s, {gib / dd:.2f} GiB/s")
    print(f"loaded back (no_copy), tensors 0, 1, n/2, n-1 checked against the generator: ok")
    if not a.keep:
        for name in ("stream.onnx", "weights.data"):
            try:
                os.unlink(os.path.join(a.dir, name))
            except FileNotFoundError:
                pass


if __name__ == "__main__":
    main()
