#!/usr/bin/env python3
"""Slices: read 1/8 of the rows of every weight of a float16
LLM-shaped model, in each layout, against a full load.

    PYTHONPATH=python .venv/bin/python bench/bench_slices.py [--gib 2] [--repeat 3]

The model is scripts/make_llm.py's (made once, in .cache/models/scale/llm_<GIB>g/,
layouts model.onnx, ext/model.onnx + ext/model.onnx.data, model.onnxz). For
each layout, in a fresh process each time: a full load (onnxio.load) and the
slice read (onnxio.slices.TensorFile, then read(name, slice(0, rows // 8))
for every initializer), cold (every file of the model evicted from the page
cache with posix_fadvise(POSIX_FADV_DONTNEED) before the process starts) and
warm (read once before). Reported: the payload bytes the reader read
(stats["bytes_read"], summed) against the payload, the kernel's rchar of
the process during the reads (from /proc/self/io), and the median time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

CHILD = r"""
import json, sys, time
import onnxio, onnxio.numpy_helper
from onnxio.slices import TensorFile
def rchar():
    with open('/proc/self/io') as fp:
        return int(next(l for l in fp if l.startswith('rchar')).split()[1])
path, mode = sys.argv[1], sys.argv[2]
r0 = rchar(); t0 = time.perf_counter()
read = 0
if mode == 'full':
    m = onnxio.load(path)
    read = sum(len(t.raw_data) for t in m.graph.initializer)
else:
    with TensorFile(path) as f:
        for name in f.names():
            _, shape = f.info(name)
            st = {}
            f.read(name, slice(0, max(1, shape[0] // 8)) if shape else None, stats=st)
            read += st['bytes_read']
t = time.perf_counter() - t0
print(json.dumps({'seconds': t, 'bytes_read': read, 'rchar': rchar() - r0}))
"""


def evict(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(paths):
    for p in paths:
        with open(p, "rb") as fp:
            while fp.read(1 << 24):
                pass


def run(path, mode):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, "-c", CHILD, path, mode], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, ".cache", "models", "scale"))
    args = ap.parse_args()
    import make_llm

    d = make_llm.model_dir(args.out_dir, args.gib)
    if not os.path.exists(os.path.join(d, "manifest.json")):
        make_llm.make(args.gib, args.out_dir, layouts=("onnx", "ext", "onnxz"))
    manifest = json.load(open(os.path.join(d, "manifest.json")))
    payload = manifest["payload_bytes"]
    layouts = {
        ".onnx": (os.path.join(d, "model.onnx"), [os.path.join(d, "model.onnx")]),
        ".onnx + external data": (os.path.join(d, "ext", "model.onnx"),
                                  [os.path.join(d, "ext", "model.onnx"), os.path.join(d, "ext", "model.onnx.data")]),
        ".onnxz": (os.path.join(d, "model.onnxz"), [os.path.join(d, "model.onnxz")]),
    }
    print(f"model: {d}: {manifest['initializers']} initializers, payload {payload / 2**30:.2f} GiB "
          f"(hidden {manifest['hidden']})")
    rows = []
    for label, (path, files) in layouts.items():
        structure = os.path.getsize(files[0]) - (payload if len(files) == 1 else 0)
        for cache in ("cold", "warm"):
            res = {}
            for mode in ("full", "slice"):
                times, last = [], None
                for _ in range(args.repeat):
                    (evict if cache == "cold" else warm)(files)
                    last = run(path, mode)
                    times.append(last["seconds"])
                res[mode] = (statistics.median(times), last)
            s_t, s = res["slice"]
            f_t, _ = res["full"]
            rows.append((label, cache, s["bytes_read"], s["rchar"], s_t, f_t, structure))
            print(f"{label:24} {cache}: slice {s_t:.3f} s, full load {f_t:.3f} s, "
                  f"read {s['bytes_read'] / payload:.4f} of the payload (rchar {s['rchar'] / payload:.4f})", flush=True)
    print()
    print("| layout | cache | bytes read by the reader / payload | rchar / payload | 1/8 of the rows: time | full load: time | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, cache, read, rchar, s_t, f_t, _ in rows:
        print(f"| {label} | {cache} | {read / payload:.4f} ({read / 2**20:.1f} MiB) | {rchar / payload:.4f} | "
              f"{s_t:.3f} s | {f_t:.3f} s | {f_t / s_t:.1f}x |")
    ok = all(read <= payload / 8 for _, _, read, _, _, _, _ in rows)
    print(f"\ntarget (bytes read <= payload / 8, structure not counted): {'PASS' if ok else 'MISS'}")


if __name__ == "__main__":
    main()
