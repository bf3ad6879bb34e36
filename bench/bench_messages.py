"""Messages through the Python package: parse, serialize, CopyFrom,
deepcopy, iterate, compare and build on the 200k-node model, by onnx (upb,
the protobuf 7 backend) and by onnxio; then parse and serialize file by
file over sets of files nobody here made.

Each package runs in fresh processes, one package at a time, the processes
of the two packages alternating (--repeats pairs). In a process every
operation runs --calls times. "first" is the first call: for parse, the
process's first parse, on a fresh heap, as a script that loads once; "warm"
is the median of the calls after it, on memory the heap already holds. The
result of a call is dropped outside the timer. The table gives the medians
over the processes and the ratio onnxio / onnx, checked against the targets
on the warm medians.

The file sets: Debian's libonnx-testdata (every model), ../shared/corpus
(third-party models; skipped when absent) and the generated graph with
attributes, doc strings and value_info (scripts/make_many_nodes.py
--attributes). A process parses (ModelProto.FromString of the file's
bytes) and serializes each file --calls times, file after file; the
per-file time is the median over calls, then over processes. A set's
ratio is the sum of onnxio's per-file times over the sum of onnx's; the
worst file is the largest per-file ratio among files onnxio parses in at
least 5 us (below that the timer's own cost dominates).

Then the fixed cost of a call: ModelProto.FromString of one 1,058-byte
model of libonnx-testdata in a loop (each result dropped in the loop),
best of 7 x 200,000 calls, in 3 processes a package, alternating.

    .venv/bin/python bench/bench_messages.py [--repeats 5] [--calls 9] [--no-sets] [MODEL]

MODEL defaults to .cache/models/many_nodes.onnx (scripts/make_many_nodes.py).
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS = {
    "libonnx-testdata": "/usr/share/libonnx-testdata/data/**/*.onnx",
    "shared corpus": os.path.join(ROOT, "..", "shared", "corpus", "*.onnx"),
    "attribute graph": os.path.join(ROOT, ".cache", "models", "many_attributes.onnx"),
}

SET_CHILD = r"""
import json, statistics, sys, time
pkg, calls, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
lib = __import__(pkg)
FS = lib.ModelProto.FromString
out = {}
for path in paths:
    with open(path, "rb") as f:
        data = f.read()
    try:
        m = FS(data)
    except Exception:  # a file the package cannot parse is left out of both
        continue
    parse, ser = [], []
    for _ in range(calls):
        t0 = time.perf_counter()
        r = FS(data)
        t1 = time.perf_counter()
        del r
        parse.append(t1 - t0)
        t0 = time.perf_counter()
        r = m.SerializeToString()
        t1 = time.perf_counter()
        del r
        ser.append(t1 - t0)
    out[path] = [statistics.median(parse), statistics.median(ser)]
print(json.dumps(out))
"""

FIXED_MODEL = "/usr/share/libonnx-testdata/data/node/test_logsoftmax_axis_0_expanded/model.onnx"
FIXED_CHILD = r"""
import sys, time
lib = __import__(sys.argv[1])
FS = lib.ModelProto.FromString
with open(sys.argv[2], "rb") as f:
    data = f.read()
def loop(n):
    t = time.perf_counter()
    for _ in range(n):
        FS(data)
    return (time.perf_counter() - t) / n
print(min(loop(200000) for _ in range(7)))
"""

CHILD = r"""
import copy, gc, json, statistics, sys, time
pkg, path, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
if pkg == "onnx":
    import onnx as lib
else:
    import onnxio as lib
helper = lib.helper
with open(path, "rb") as f:
    data = f.read()
t0 = time.perf_counter()
m = lib.ModelProto.FromString(data)
first_parse = time.perf_counter() - t0
other = lib.ModelProto.FromString(data)

def copy_from():
    x = lib.ModelProto()
    x.CopyFrom(m)
    return x

def iterate():
    # Reads every node's op_type, inputs and outputs; keeps no containers,
    # so that Python's cyclic GC (the same for both) does not dominate.
    n_chars = 0
    for n in m.graph.node:
        n_chars += len(n.op_type)
        for name in n.input:
            n_chars += len(name)
        for name in n.output:
            n_chars += len(name)
    return n_chars

def build():
    nodes = [helper.make_node("Add", [f"a{i}", f"b{i}"], [f"c{i}"], name=f"n{i}") for i in range(100_000)]
    return helper.make_model(helper.make_graph(nodes, "g", [], []))

ops = {
    "parse": lambda: lib.ModelProto.FromString(data),
    "serialize": lambda: m.SerializeToString(),
    "CopyFrom": copy_from,
    "deepcopy": lambda: copy.deepcopy(m),
    "iterate": iterate,
    "equal": lambda: m == other,
    "build": build,
}
out = {}
for name, fn in ops.items():
    times = []
    for _ in range(calls):
        gc.collect()
        t0 = time.perf_counter()
        r = fn()
        t1 = time.perf_counter()
        del r
        times.append(t1 - t0)
    out[name] = {"first": first_parse if name == "parse" else times[0], "warm": statistics.median(times[1:])}
print(json.dumps(out))
"""

TARGETS = {"parse": 0.5, "serialize": 0.5, "CopyFrom": 0.5, "deepcopy": 0.5, "iterate": 0.5, "equal": None,
           "build": 1.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=".cache/models/many_nodes.onnx")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=9)
    ap.add_argument("--no-sets", action="store_true", help="only the 200k-node model")
    args = ap.parse_args()
    runs = {"onnx": [], "onnxio": []}
    for _ in range(args.repeats):
        for pkg in runs:
            p = subprocess.run([sys.executable, "-c", CHILD, pkg, args.model, str(args.calls)], check=True,
                               capture_output=True, text=True)
            runs[pkg].append(json.loads(p.stdout))

    def med(pkg, op, kind):
        return statistics.median(r[op][kind] for r in runs[pkg])

    print(f"{args.model}: medians of {args.repeats} processes a package, {args.calls} calls each")
    print(f"{'':10} {'onnx first':>11} {'onnxio':>9} {'ratio':>6}   {'onnx warm':>10} {'onnxio':>9} {'ratio':>6}  target")
    for op, target in TARGETS.items():
        a1, b1, aw, bw = med("onnx", op, "first"), med("onnxio", op, "first"), med("onnx", op, "warm"), med("onnxio", op, "warm")
        verdict = "" if target is None else f"<= {target} {'PASS' if bw / aw <= target else 'MISS'}"
        print(f"{op:10} {a1 * 1e3:9.1f}ms {b1 * 1e3:7.1f}ms {b1 / a1:6.2f}   {aw * 1e3:8.1f}ms {bw * 1e3:7.1f}ms "
              f"{bw / aw:6.2f}  {verdict}")
    if not args.no_sets:
        file_sets(args.repeats, args.calls)
        fixed_cost()


def fixed_cost():
    """The per-call cost of FromString on a model of about 1 KiB."""
    if not os.path.exists(FIXED_MODEL):
        print(f"\nFixed cost: {FIXED_MODEL} not found (Debian's libonnx-testdata)")
        return
    best = {"onnx": [], "onnxio": []}
    for _ in range(3):
        for pkg in best:
            p = subprocess.run([sys.executable, "-c", FIXED_CHILD, pkg, FIXED_MODEL], check=True,
                               capture_output=True, text=True)
            best[pkg].append(float(p.stdout))
    a, b = best["onnx"], best["onnxio"]
    print(f"\nFixed cost (FromString of the {os.path.getsize(FIXED_MODEL):,}-byte testdata model, best of 7 x 200,000, "
          f"3 processes a package): onnxio {min(b) * 1e6:.2f}-{max(b) * 1e6:.2f} us, onnx {min(a) * 1e6:.2f}-"
          f"{max(a) * 1e6:.2f} us (<= 2 us {'PASS' if max(b) <= 2e-6 else 'MISS'})")


def file_sets(repeats, calls):
    """Per-set aggregate parse and serialize ratios, and the worst file."""
    print()
    print(f"File sets: ModelProto.FromString and SerializeToString file by file, medians of {calls} calls, "
          f"then of {repeats} processes a package")
    print(f"{'set':18} {'files':>6} {'parse onnx':>11} {'onnxio':>9} {'ratio':>6}   {'serialize onnx':>15} "
          f"{'onnxio':>9} {'ratio':>6}   worst parse file (>= 5 us)")
    for name, pattern in SETS.items():
        paths = sorted(glob.glob(pattern, recursive=True))
        if not paths:
            print(f"{name:18} (none found: {pattern})")
            continue
        runs = {"onnx": [], "onnxio": []}
        for _ in range(repeats):
            for pkg in runs:
                p = subprocess.run([sys.executable, "-c", SET_CHILD, pkg, str(calls)] + paths, check=True,
                                   capture_output=True, text=True)
                runs[pkg].append(json.loads(p.stdout))
        common = sorted(set.intersection(*(set(r) for rs in runs.values() for r in rs)))
        per = {pkg: {f: [statistics.median(r[f][k] for r in rs) for k in (0, 1)] for f in common}
               for pkg, rs in runs.items()}
        tot = {pkg: [sum(v[k] for v in per[pkg].values()) for k in (0, 1)] for pkg in per}
        worst, worst_file = 0.0, ""
        for f in common:
            if per["onnxio"][f][0] >= 5e-6 and per["onnxio"][f][0] / per["onnx"][f][0] > worst:
                worst, worst_file = per["onnxio"][f][0] / per["onnx"][f][0], f
        a, b = tot["onnx"], tot["onnxio"]
        label = os.path.basename(os.path.dirname(worst_file) if name == "libonnx-testdata" else worst_file)
        print(f"{name:18} {len(common):6} {a[0] * 1e3:9.2f}ms {b[0] * 1e3:7.2f}ms {b[0] / a[0]:6.2f}   "
              f"{a[1] * 1e3:13.2f}ms {b[1] * 1e3:7.2f}ms {b[1] / a[1]:6.2f}   "
              + (f"{worst:.2f} {label}" if worst_file else "none"))


if __name__ == "__main__":
    main()
