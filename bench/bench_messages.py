"""Many small messages through the Python package (issue 14, item 1): parse,
serialize, CopyFrom, deepcopy, iterate, compare and build on the 200k-node
model, by onnx (upb, the protobuf 7 backend) and by onnxio.

Each package runs in fresh processes, one package at a time, the processes
of the two packages alternating (--repeats pairs). In a process every
operation runs --calls times. "first" is the first call: for parse, the
process's first parse, on a fresh heap, as a script that loads once; "warm"
is the median of the calls after it, on memory the heap already holds. The result of a call is dropped outside
the timer. The table gives the medians over the processes and the ratio
onnxio / onnx, checked against issue 14's targets on the warm medians.

    .venv/bin/python bench/bench_messages.py [--repeats 5] [--calls 9] [MODEL]

MODEL defaults to .cache/models/many_nodes.onnx (scripts/make_many_nodes.py).
"""
import argparse
import json
import statistics
import subprocess
import sys

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


if __name__ == "__main__":
    main()
