#!/usr/bin/env python3
"""The handoff benchmark: weights from onnxio to onnxruntime
without a copy. Time to a ready session and peak RSS of onnxruntime on a
model of >= 1 GiB of float32 weights, each way of getting it there, in
fresh processes.

    .venv/bin/python bench/bench_handoff.py [--gib 1] [--repeats 2] [-v]

The model (made once, cached in .cache/models/handoff/): a chain of
--layers MatMul + Add (a [D, D] float32 weight and a [D] bias each) on an
input [4, D], D = 4096, 16 layers = 1.0 GiB of weights; saved by onnxio as
one .onnx file ("onnx") and as .onnx + one external data file ("ext").

Each measurement is one child process: it imports numpy, onnxruntime and
onnxio, reads VmRSS (the baseline), then times (time.perf_counter) the
way asked to a ready session, runs the session once on a fixed input and
runs the session once on a fixed input (which touches every weight) and
reports the seconds to the ready session and to the first output, VmHWM (peak RSS, absolute),
VmRSS and Pss (smaps_rollup: a page mapped k times counts 1/k) after the
run, and writes the output for the parent to compare. The ways:
  ort path      onnxruntime.InferenceSession(path)
  ort bytes     onnxio.load(path), then
                onnxruntime.InferenceSession(model.SerializeToString())
  onnxio copy   onnxio.onnxruntime.InferenceSession(onnxio.load(path))
  onnxio no_copy  onnxio.onnxruntime.InferenceSession(onnxio.load(path, no_copy=True))
each with onnxruntime's prepacking on (session.disable_prepacking=0, its
default) and off (=1, onnxio.onnxruntime's default). "x4": the same child
makes 4 sessions on the one model (each run once) and reports VmRSS and
Pss after the first and after the fourth. The files are read once by the parent before the runs
(warm page cache); pages of a mapping count in RSS once touched.

Outputs: every way's output is compared with "ort path" of the same layout
and prepacking setting (bit-equal expected; prepacking changes the GEMM
kernel, so on/off differ in the last bits).

Targets (PASS/MISS): peak RSS <= 1.2x the weights (absolute
VmHWM of the child, interpreter and libraries included) for onnxio no_copy;
4 sessions add <= 10% RSS over one (onnxio no_copy); outputs equal. Writes
bench/out/bench_handoff.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = os.path.join(ROOT, ".cache", "models", "handoff")
OUT_JSON = os.path.join(ROOT, "bench", "out", "bench_handoff.json")
D = 4096
BATCH = 4
WAYS = ("ort path", "ort bytes", "onnxio copy", "onnxio no_copy")
MIB = 1 << 20


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def _pss() -> int:
    """Proportional set size in bytes (a page shared by k mappings counts
    1/k), from /proc/self/smaps_rollup."""
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("Pss")


def model_paths(models: str, layers: int) -> dict[str, str]:
    base = os.path.join(models, f"chain_{layers}x{D}")
    return {"onnx": base + ".onnx", "ext": base + "_ext.onnx"}


def make_models(models: str, layers: int) -> None:
    """The chain model, saved by onnxio in both layouts (once)."""
    paths = model_paths(models, layers)
    if all(os.path.exists(p) for p in paths.values()):
        return
    import numpy as np

    import onnxio
    from onnxio import TensorProto, helper, numpy_helper

    os.makedirs(models, exist_ok=True)
    rng = np.random.default_rng(15)
    nodes, inits = [], []
    x = "x"
    for i in range(layers):
        w = rng.standard_normal((D, D), dtype=np.float32)
        w *= np.float32(1 / np.sqrt(D))
        b = rng.standard_normal(D, dtype=np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"y{i}"])]
        x = f"y{i}"
        del w
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, D])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [BATCH, D])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnxio.save(model, paths["onnx"])
    onnxio.save(model, paths["ext"], save_as_external_data=True, location=os.path.basename(paths["ext"]) + ".data")


def child(spec: dict) -> None:
    import numpy as np
    import onnxruntime as ort

    import onnxio
    import onnxio.onnxruntime as bridge

    rss0 = _status_kib("VmRSS")
    way, path, prepack, nsess = spec["way"], spec["path"], spec["prepack"], spec["sessions"]

    def options():
        so = ort.SessionOptions()
        so.add_session_config_entry("session.disable_prepacking", "0" if prepack else "1")
        return so

    providers = ["CPUExecutionProvider"]
    x = np.random.default_rng(0).standard_normal((BATCH, D), dtype=np.float32)
    t0 = time.perf_counter()
    sessions, rss_after, pss_after, outs = [], [], [], []
    seconds = 0.0
    model = None
    for _ in range(nsess):
        if way == "ort path":
            s = ort.InferenceSession(path, options(), providers=providers)
        elif way == "ort bytes":
            model = model or onnxio.load(path)
            s = ort.InferenceSession(model.SerializeToString(), options(), providers=providers)
        elif way == "onnxio copy":
            model = model or onnxio.load(path)
            s = bridge.InferenceSession(model, options(), providers=providers)
        elif way == "onnxio no_copy":
            model = model or onnxio.load(path, no_copy=True)
            s = bridge.InferenceSession(model, options(), providers=providers)
        else:
            raise ValueError(way)
        if not sessions:
            seconds = time.perf_counter() - t0
        sessions.append(s)
        outs.append(s.run(None, {"x": x})[0])  # touches every weight (a mapping's pages count once touched)
        if len(sessions) == 1:
            first = time.perf_counter() - t0
        rss_after.append(_status_kib("VmRSS") * 1024)
        pss_after.append(_pss())
    for o in outs[1:]:
        if not np.array_equal(o, outs[0]):
            raise SystemExit("sessions on one model disagree")
    np.save(spec["out"], outs[0])
    print(json.dumps({"seconds": seconds, "first": first, "rss0": rss0 * 1024, "hwm": _status_kib("VmHWM") * 1024,
                      "rss": rss_after, "pss": pss_after}))


def run_child(spec: dict) -> dict:
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"child {spec} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=16, help=f"MatMul layers of {D}x{D} float32 (16: 1 GiB)")
    ap.add_argument("--repeats", type=int, default=2, help="children per measurement (default 2)")
    ap.add_argument("--models", default=DEFAULT_MODELS, help="where the models are cached")
    ap.add_argument("--json", default=OUT_JSON, help=f"results file (default {os.path.relpath(OUT_JSON, ROOT)})")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every child's result")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return 0

    import numpy as np

    t = time.perf_counter()
    make_models(args.models, args.layers)
    paths = model_paths(args.models, args.layers)
    weights = args.layers * (D * D + D) * 4
    print(f"model: {args.layers} x MatMul+Add, {weights / MIB:.0f} MiB of float32 weights "
          f"({time.perf_counter() - t:.1f} s to make or find)")
    for p in (paths["onnx"], paths["ext"], paths["ext"] + ".data"):  # warm the page cache
        with open(p, "rb") as f:
            while f.read(64 * MIB):
                pass

    plan = []
    for layout in ("onnx", "ext"):
        for prepack in (True, False):
            for way in WAYS:
                plan.append((layout, prepack, way, 1))
        plan.append((layout, False, "onnxio no_copy", 4))
        plan.append((layout, True, "onnxio no_copy", 4))
        plan.append((layout, False, "ort path", 4))
    results: dict[tuple, list[dict]] = {k: [] for k in plan}
    tmp = tempfile.mkdtemp(prefix="bench_handoff_")
    for r in range(args.repeats):
        for key in plan:
            layout, prepack, way, n = key
            out = os.path.join(tmp, f"{layout}_{int(prepack)}_{way.replace(' ', '_')}_{n}_{r}.npy")
            res = run_child({"way": way, "path": paths[layout], "prepack": prepack, "sessions": n, "out": out})
            res["out"] = out
            results[key].append(res)
            if args.verbose:
                print(key, res, flush=True)

    def med(key, f):
        return statistics.median(f(x) for x in results[key])

    rows, doc_rows = [], []
    all_equal = True
    for key in plan:
        layout, prepack, way, n = key
        ref = np.load(results[(layout, prepack, "ort path", 1)][0]["out"])
        equal = all(np.array_equal(np.load(x["out"]), ref) for x in results[key])
        all_equal &= equal
        row = {"layout": layout, "prepack": prepack, "way": way, "sessions": n,
               "seconds": med(key, lambda x: x["seconds"]), "first": med(key, lambda x: x["first"]),"peak": med(key, lambda x: x["hwm"]),
               "growth": med(key, lambda x: x["hwm"] - x["rss0"]),
               "rss1": med(key, lambda x: x["rss"][0]), "rssn": med(key, lambda x: x["rss"][-1]),
               "pss1": med(key, lambda x: x["pss"][0]), "pssn": med(key, lambda x: x["pss"][-1]), "equal": equal}
        doc_rows.append(row)
    base = {(r["layout"], r["prepack"]): r for r in doc_rows if r["way"] == "ort path" and r["sessions"] == 1}
    print(f"\nmedians of {args.repeats} children; peak = VmHWM of the child (absolute), growth = peak - VmRSS "
          f"after imports; x/weights against {weights / MIB:.0f} MiB; 1st output/path: seconds to the first "
          f"output (session + one run) against ort path, same layout and prepacking")
    hdr = ("layout", "prepack", "way", "sessions", "s to session", "s to 1st output", "1st output/path", "peak MiB", "peak/weights",
           "growth MiB", "RSS 1 MiB", "RSS n MiB", "RSS n vs 1", "PSS n vs 1", "output")
    rows.append(hdr)
    for r in doc_rows:
        b = base[(r["layout"], r["prepack"])]
        rows.append((r["layout"], "on" if r["prepack"] else "off", r["way"], str(r["sessions"]),
                     f"{r['seconds']:.2f}", f"{r['first']:.2f}", f"{r['first'] / b['first']:.2f}x", f"{r['peak'] / MIB:.0f}",
                     f"{r['peak'] / weights:.2f}x", f"{r['growth'] / MIB:.0f}", f"{r['rss1'] / MIB:.0f}",
                     f"{r['rssn'] / MIB:.0f}", f"+{(r['rssn'] / r['rss1'] - 1) * 100:.0f}%" if r["sessions"] > 1 else "",
                     f"+{(r['pssn'] / r['pss1'] - 1) * 100:.0f}%" if r["sessions"] > 1 else "",
                     "equal" if r["equal"] else "DIFFERS"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(hdr))]
    for i, row in enumerate(rows):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")

    def verdict(ok):
        return "PASS" if ok else "MISS"

    print("\ntargets, onnxio no_copy with prepacking off (onnxio.onnxruntime's default):")
    for layout in ("onnx", "ext"):
        one = next(r for r in doc_rows if r["layout"] == layout and r["way"] == "onnxio no_copy"
                   and not r["prepack"] and r["sessions"] == 1)
        four = next(r for r in doc_rows if r["layout"] == layout and r["way"] == "onnxio no_copy"
                    and not r["prepack"] and r["sessions"] == 4)
        print(f"  {layout}: peak RSS <= 1.2x weights: {one['peak'] / weights:.2f}x "
              f"{verdict(one['peak'] <= 1.2 * weights)}; 4 sessions add <= 10% RSS over one: "
              f"+{(four['rssn'] / four['rss1'] - 1) * 100:.1f}% {verdict(four['rssn'] <= 1.1 * four['rss1'])}")
    print(f"  outputs equal to onnxruntime from the path: {verdict(all_equal)}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"weights": weights, "layers": args.layers, "repeats": args.repeats, "rows": doc_rows,
                   "raw": {" / ".join(map(str, k)): v for k, v in results.items()}}, f, indent=1)
    print(f"\nwrote {os.path.relpath(args.json, ROOT)}")
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())
