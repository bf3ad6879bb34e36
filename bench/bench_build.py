"""Messages built from Python: 100,000 nodes made with
helper.make_node, then a graph and a model, by onnx (upb) and by onnxio,
each in a fresh process; prints the anonymous memory they take (RSS growth),
what stays after they are dropped, and the time, with the ratio onnxio /
onnx against the targets (memory <= 1.5x, after the drop <= 1.2x,
time <= 1.0x). Medians of --repeats processes per package.

    .venv/bin/python bench/bench_build.py [--repeats 3] [--nodes 100000]
"""
import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import gc, json, sys, time
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
if sys.argv[1] == "onnx":
    from onnx import helper
else:
    from onnxio import helper
n = int(sys.argv[2])
gc.collect()
r0 = rss()
t0 = time.perf_counter()
nodes = [helper.make_node("Add", [f"a{i}", f"b{i}"], [f"c{i}"], name=f"n{i}") for i in range(n)]
t1 = time.perf_counter()
r1 = rss()
model = helper.make_model(helper.make_graph(nodes, "g", [], []))
t2 = time.perf_counter()
r2 = rss()
del nodes, model
gc.collect()
r3 = rss()
print(json.dumps({"nodes_mib": r1 - r0, "model_mib": r2 - r0, "after_drop_mib": r3 - r0,
                  "make_node_s": t1 - t0, "graph_model_s": t2 - t1}))
"""


def measure(package, nodes, repeats):
    runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, package, str(nodes)], check=True,
                                      capture_output=True, text=True).stdout) for _ in range(repeats)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=100_000)
    args = ap.parse_args()
    theirs, ours = measure("onnx", args.nodes, args.repeats), measure("onnxio", args.nodes, args.repeats)
    rows = [("memory of the nodes (MiB)", "nodes_mib", 1.5), ("memory with graph and model (MiB)", "model_mib", 1.5),
            ("memory after the drop (MiB)", "after_drop_mib", 1.2), ("make_node x N (s)", "make_node_s", 1.0),
            ("make_graph + make_model (s)", "graph_model_s", 1.0)]
    print(f"{'':34} {'onnx':>9} {'onnxio':>9} {'ratio':>7}  target")
    for label, key, target in rows:
        a, b = theirs[key], ours[key]
        ratio = b / a if a else float("inf")
        print(f"{label:34} {a:9.3f} {b:9.3f} {ratio:7.3f}  <= {target} {'PASS' if ratio <= target else 'MISS'}")


if __name__ == "__main__":
    main()
