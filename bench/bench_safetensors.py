"""Loading a .safetensors file into an ONNX model: onnxio.safetensors.load_into
(copy and no_copy) against the safetensors package + onnx
(safetensors.numpy.load_file, then numpy_helper.from_array into the model's
initializers).

    python bench/bench_safetensors.py [--size-mib 512] [--repeat 5]

The file (float16, 64 tensors, ~0.5 GiB by default) and a model whose
initializers have the tensors' names, types and shapes but no data are
made once under .cache/models/handoff/ ($ONNXIO_BENCH_DIR). Each measurement runs in a fresh
process (python -c), which times only the load: the model file's parse
plus filling its initializers, ending with a model that holds every
weight. The file is in the page cache (it was just written or read); the
first run of each method is a warm-up and is dropped. Prints the median of
each method and its ratio to the reference.

no_copy maps the file and reads no payload byte: its payloads are read
(page faults) when first used, so it measures what a no_copy load defers,
not a copy; the method that then reads one byte of every page measures
the mapping's page faults too.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIR = Path(os.environ.get("ONNXIO_BENCH_DIR", REPO / ".cache" / "models" / "handoff"))

SNIPPETS = {
    "onnxio load_into (copy)": """
import time, onnxio, onnxio.safetensors
t = time.perf_counter()
m = onnxio.load(SKELETON)
onnxio.safetensors.load_into(m, WEIGHTS)
print(time.perf_counter() - t)
assert len(m.graph.initializer[0].raw_data) > 0
""",
    "onnxio load_into (no_copy)": """
import time, onnxio, onnxio.safetensors
t = time.perf_counter()
m = onnxio.load(SKELETON)
onnxio.safetensors.load_into(m, WEIGHTS, no_copy=True)
print(time.perf_counter() - t)
""",
    "onnxio load_into (no_copy), then one byte of every page read": """
import time, numpy as np, onnxio, onnxio.safetensors, onnxio.numpy_helper
t = time.perf_counter()
m = onnxio.load(SKELETON)
onnxio.safetensors.load_into(m, WEIGHTS, no_copy=True)
s = sum(int(onnxio.numpy_helper.to_array(i).view(np.uint8)[::4096].sum()) for i in m.graph.initializer)
print(time.perf_counter() - t)
""",
    "safetensors.numpy.load_file + onnx numpy_helper.from_array": """
import time, onnx, onnx.numpy_helper, safetensors.numpy
t = time.perf_counter()
m = onnx.load(SKELETON)
d = safetensors.numpy.load_file(WEIGHTS)
new = [onnx.numpy_helper.from_array(d[i.name], i.name) for i in m.graph.initializer]
del m.graph.initializer[:]
m.graph.initializer.extend(new)
print(time.perf_counter() - t)
""",
}
REFERENCE = "safetensors.numpy.load_file + onnx numpy_helper.from_array"


def make_files(size_mib, count):
    import numpy as np
    import onnx
    import safetensors.numpy

    DIR.mkdir(parents=True, exist_ok=True)
    weights = DIR / f"bench_f16_{size_mib}mib.safetensors"
    skeleton = DIR / f"bench_f16_{size_mib}mib.onnx"
    rows = size_mib * (1 << 20) // count // 2 // 1024
    if not weights.exists() or not skeleton.exists():
        rng = np.random.default_rng(0)
        arrays = {f"layer{i:03d}.weight": rng.standard_normal((rows, 1024), dtype=np.float32).astype(np.float16)
                  for i in range(count)}
        safetensors.numpy.save_file(arrays, str(weights))
        tensors = [onnx.TensorProto(name=n, data_type=onnx.TensorProto.FLOAT16, dims=a.shape) for n, a in arrays.items()]
        graph = onnx.helper.make_graph([], "g", [], [], initializer=tensors)
        onnx.save(onnx.helper.make_model(graph), str(skeleton))
    return weights, skeleton


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--tensors", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    weights, skeleton = make_files(args.size_mib, args.tensors)
    size = weights.stat().st_size
    env_path = str(REPO / "python")
    times = {k: [] for k in SNIPPETS}
    for r in range(args.repeat + 1):
        for name, code in SNIPPETS.items():
            prog = f"SKELETON = {str(skeleton)!r}\nWEIGHTS = {str(weights)!r}\n" + code
            out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                                 env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
            if out.returncode:
                sys.exit(f"{name}: {out.stderr}")
            if r:  # the first round warms the page cache and the imports
                times[name].append(float(out.stdout.split()[-1]))
    ref = statistics.median(times[REFERENCE])
    print(f"file: {weights.name}, {size / 2**30:.3f} GiB, {args.tensors} float16 tensors; "
          f"{args.repeat} fresh processes per method, medians")
    print("| method | median (s) | GB/s | vs reference |")
    print("| --- | --- | --- | --- |")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med:.3f} | {size / med / 1e9:.2f} | {ref / med:.1f}x |")
    print(json.dumps({k: sorted(v) for k, v in times.items()}))


if __name__ == "__main__":
    main()
