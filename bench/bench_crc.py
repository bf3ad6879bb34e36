#!/usr/bin/env python3
"""What the CRC-32 costs a warm `.onnxz` copy load.

    .venv/bin/python bench/bench_crc.py [--gib 3.5] [--repeats 15] [--models .cache/models/user]

Loads the same float16 LLM-shaped model (scripts/make_llm.py) warm, in one
process, interleaved: as `.onnx` + external data, as `.onnxz` with the
CRC-32 of every entry checked (the default) and as `.onnxz` with
`verify_crc=False`. One process, so that the memory each load takes is
memory the previous one just gave back: in fresh processes, on the VM of
BENCHMARKS.md, the host's faults on fresh memory moved single loads by up
to 4x and hid a difference of 10% (bench_user.py measures fresh processes;
this isolates the CRC). Prints the medians, the ratios to external data,
and the CPU time the CRC added (user time: the copies are the kernel's, so
a load without CRC has almost none) with the rate it implies; then the
CRC-32 of the three libraries src/base/digest.c can use (ISA-L, libdeflate,
zlib), called through ctypes on 1 MiB in cache, each checked against
Python's zlib.crc32 first.
"""
import argparse
import ctypes
import ctypes.util
import gc
import os
import resource
import statistics
import subprocess
import sys
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import make_llm  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from bench_user import CHUNK, _read_loop  # noqa: E402


def crc_libraries(size=1 << 20, total=1 << 30):
    """GB/s of each CRC-32 library found on 1 MiB in cache (ctypes' call
    overhead included: about 1 us, 2% at this size)."""
    data = ctypes.create_string_buffer(os.urandom(size), size)
    want = zlib.crc32(data.raw)
    found = []
    for name, soname, symbol in (("ISA-L crc32_gzip_refl", "isal", "crc32_gzip_refl"),
                                 ("libdeflate libdeflate_crc32", "deflate", "libdeflate_crc32"),
                                 ("zlib crc32", "z", "crc32")):
        lib = ctypes.util.find_library(soname)
        if not lib:
            print(f"{name:28} not on this system")
            continue
        fn = getattr(ctypes.CDLL(lib), symbol)
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        got = fn(0, data, size)
        if got != want:
            raise SystemExit(f"bench_crc: {name} gave {got:08x}, zlib.crc32 {want:08x}")
        n = total // size
        t0 = time.perf_counter()
        for _ in range(n):
            fn(0, data, size)
        found.append((name, n * size / (time.perf_counter() - t0) / 1e9))
    for name, rate in found:
        print(f"{name:28} {rate:6.1f} GB/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=3.5, help="payload size in GiB (default 3.5)")
    ap.add_argument("--repeats", type=int, default=15, help="loads of each kind (default 15)")
    ap.add_argument("--models", default=make_llm.DEFAULT_OUT, help="where the models are cached")
    args = ap.parse_args()
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm.py"), "--gib", f"{args.gib:g}",
                    "--out-dir", args.models, "--layouts", "ext,onnxz"], check=True, stdout=sys.stderr)
    mdir = make_llm.model_dir(args.models, args.gib)
    ext, onnxz = os.path.join(mdir, "ext", "model.onnx"), os.path.join(mdir, "model.onnxz")
    kinds = {"external data": (ext, {}), ".onnxz": (onnxz, {}), ".onnxz verify_crc=False": (onnxz, {"verify_crc": False})}
    _read_loop((ext, ext + ".data", onnxz), bytearray(CHUNK))  # warm: every file in the page cache
    import onnxio
    wall = {k: [] for k in kinds}
    user = {k: [] for k in kinds}
    for _ in range(args.repeats):
        for k, (path, kw) in kinds.items():
            r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            model = onnxio.load(path, **kw)
            t, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
            del model
            gc.collect()
            wall[k].append(t)
            user[k].append(r1.ru_utime - r0.ru_utime)
    payload = os.path.getsize(ext + ".data")
    base = statistics.median(wall["external data"])
    print(f"warm copy loads of {payload / 2**30:.2f} GiB, {args.repeats} of each, interleaved, one process, "
          f"{os.cpu_count()} cores")
    print(f"{'':26} {'median s':>9} {'min s':>7} {'/ext':>6} {'user s':>7}")
    for k in kinds:
        print(f"{k:26} {statistics.median(wall[k]):9.4f} {min(wall[k]):7.4f} "
              f"{statistics.median(wall[k]) / base:6.3f} {statistics.median(user[k]):7.3f}")
    crc = statistics.median(user[".onnxz"]) - statistics.median(user[".onnxz verify_crc=False"])
    if crc > 0:
        print(f"the CRC-32's CPU time: {crc:.3f} s ({payload / crc / 1e9:.0f} GB/s); spread over "
              f"{os.cpu_count()} busy cores that is {crc / os.cpu_count() / base:.1%} of the external-data load")
    print("\nCRC-32 libraries, 1 MiB in cache, one thread (checked against Python's zlib.crc32):")
    crc_libraries()


if __name__ == "__main__":
    main()
