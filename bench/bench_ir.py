#!/usr/bin/env python3
"""The onnx-ir bridge: onnxio.ir.to_ir / from_ir against onnx_ir
over protobuf (the onnx package).

    .venv/bin/python bench/bench_ir.py [--repeats N] [--models gpt2,many_nodes] [--models-dir DIR]

Routes, each in a fresh child process per run (a clean heap, only its
libraries imported), every step timed once; the figures are medians over
`--repeats` runs (default 3):

  onnxio:   m = onnxio.load(path)          ir = to_ir(m)
            p = from_ir(ir)                 onnxio.save(p, out)
  protobuf: m = onnx.load(path)            ir = serde.deserialize_model(m)
            p = serde.serialize_model(ir)   onnx.save(p, out)
            (and onnx_ir.load(path) for file-to-IR: onnx.load without
            external data, then deserialize_model)
  protobuf, GC paused: the same with gc.disable() first, since onnxio.ir
            pauses the cyclic collector during its conversions: the last
            columns show what is left without that difference

Rows: "to IR" and "from IR" are the in-memory conversions; "file to IR" is
load + to_ir; "IR to file" is from_ir + save. The ratio is onnxio /
protobuf: PASS when below 1 (faster than going through protobuf), MISS
otherwise. Each onnxio child checks that its file's bytes equal the
protobuf child's (the same model, written by the two routes).

Models: .cache/models/gpt2.onnx (GPT-2-small shapes, ~500 MB of raw_data)
and many_nodes.onnx (200,000 nodes), made by `make models` (or in --models-dir).
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_FILES = {"gpt2": "gpt2.onnx", "many_nodes": "many_nodes.onnx"}

WORKER = r"""
import hashlib, json, os, sys, time
route, path, out = sys.argv[1:4]
r = {}
clock = time.perf_counter
if route == "protobuf, GC paused":
    import gc
    gc.disable()
if route == "onnxio":
    import onnxio
    from onnxio.ir import from_ir, to_ir
    t0 = clock(); m = onnxio.load(path); t1 = clock(); ir = to_ir(m); t2 = clock()
    p = from_ir(ir); t3 = clock(); onnxio.save(p, out); t4 = clock()
else:
    import onnx, onnx_ir
    from onnx_ir import serde
    t0 = clock(); m = onnx.load(path); t1 = clock(); ir = serde.deserialize_model(m); t2 = clock()
    p = serde.serialize_model(ir); t3 = clock(); onnx.save(p, out); t4 = clock()
    del m, ir, p
    s0 = clock(); onnx_ir.load(path); r["onnx_ir.load"] = clock() - s0
r.update({"load": t1 - t0, "to IR": t2 - t1, "from IR": t3 - t2, "save": t4 - t3,
          "file to IR": t2 - t0, "IR to file": t4 - t2})
with open(out, "rb") as f:
    r["sha256"] = hashlib.sha256(f.read()).hexdigest()
os.unlink(out)
print(json.dumps(r))
"""


def run(route, path, tmp):
    out = os.path.join(tmp, f"{route}.onnx")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "python"), env.get("PYTHONPATH")) if p)
    res = subprocess.run([sys.executable, "-c", WORKER, route, path, out], capture_output=True, text=True, env=env)
    if res.returncode != 0:
        sys.exit(f"{route} on {path} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="many_nodes,gpt2")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, ".cache", "models"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_ir-", dir=args.models_dir) as tmp:
        for name in args.models.split(","):
            path = os.path.join(args.models_dir, MODEL_FILES[name])
            if not os.path.exists(path):
                sys.exit(f"{path} is missing: make models")
            runs = {"onnxio": [], "protobuf": [], "protobuf, GC paused": []}
            for _ in range(args.repeats):
                for route in runs:
                    runs[route].append(run(route, path, tmp))
            same = len({r["sha256"] for rs in runs.values() for r in rs}) == 1

            def med(route, key):
                return statistics.median(r[key] for r in runs[route])

            for key, ref in (("to IR", "to IR"), ("from IR", "from IR"), ("file to IR", "file to IR"),
                             ("file to IR", "onnx_ir.load"), ("IR to file", "IR to file")):
                ours, theirs, paused = med("onnxio", key), med("protobuf", ref), med("protobuf, GC paused", ref)
                label = key if ref == key else f"{key} (vs onnx_ir.load)"
                rows.append((name, label, ours, theirs, paused, same))
    print(f"medians of {args.repeats} fresh processes per route; seconds; ratio = onnxio / protobuf\n")
    print("| model | step | onnxio | protobuf | ratio | vs protobuf | protobuf, GC paused | ratio | same bytes |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |")
    for name, label, ours, theirs, paused, same in rows:
        ratio = ours / theirs
        verdict = "PASS" if ratio < 1 else "MISS"
        print(f"| {name} | {label} | {ours:.3f} | {theirs:.3f} | {ratio:.2f} | {verdict} | {paused:.3f} | "
              f"{ours / paused:.2f} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
