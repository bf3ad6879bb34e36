#!/usr/bin/env python3
"""`onnxio check` against onnx.checker.check_model.

    .venv/bin/python bench/bench_check.py [MODEL] [--rounds 5] [--cli build/onnxio] [--limit 0.3]

MODEL defaults to .cache/models/many_nodes.onnx (`make models`: 200,000
nodes). Interleaved, once per round: `onnxio check MODEL` in a fresh
process (its whole wall time: start, load of the structure, check, exit);
onnx.checker.check_model on the model already loaded with onnx.load (the
check alone: the reference); onnx.checker.check_model(MODEL) (onnx's C++
reads the file itself). The file is read once before, so that every run
finds it in the page cache. Prints a markdown table: the median and the
spread (fastest to slowest) of each, and the ratio of `onnxio check`'s
median to the reference's, PASS when it is at most --limit, MISS otherwise
(exit status 1 on a MISS).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import onnx
import onnx.checker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_cli(cli, model):
    p = subprocess.run([cli, "check", model], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"bench_check: onnxio check {model}: exit status {p.returncode}: {p.stderr.strip()}")


def cell(times):
    return f"{statistics.median(times):.3f} s ({min(times):.3f}-{max(times):.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=os.path.join(ROOT, ".cache", "models", "many_nodes.onnx"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cli", default=os.environ.get("ONNXIO_CLI", os.path.join(ROOT, "build", "onnxio")))
    ap.add_argument("--limit", type=float, default=0.3)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        raise SystemExit(f"bench_check: {args.model} not found (make models makes it)")

    with open(args.model, "rb") as f:  # into the page cache
        while f.read(1 << 24):
            pass
    loaded = onnx.load(args.model)
    onnx.checker.check_model(loaded)  # accepted, and warm
    run_cli(args.cli, args.model)

    cli_t, ref_t, path_t = [], [], []
    for _ in range(args.rounds):
        cli_t.append(timed(lambda: run_cli(args.cli, args.model)))
        ref_t.append(timed(lambda: onnx.checker.check_model(loaded)))
        path_t.append(timed(lambda: onnx.checker.check_model(args.model)))

    ratio = statistics.median(cli_t) / statistics.median(ref_t)
    verdict = "PASS" if ratio <= args.limit else "MISS"
    def shown(path):  # relative to the repository when inside it
        return os.path.relpath(path, ROOT) if os.path.abspath(path).startswith(ROOT + os.sep) else path

    cmd = f"{shown(sys.executable)} bench/bench_check.py {shown(args.model)} --rounds {args.rounds}"
    print(f"#### `{cmd}`")
    print()
    print(f"{os.path.basename(args.model)}, {os.path.getsize(args.model) / 2**20:.1f} MiB, onnx {onnx.__version__}; "
          f"{args.rounds} rounds interleaved, median (fastest-slowest)")
    print()
    print("| what | time | / reference |")
    print("|---|---|---|")
    print(f"| `onnxio check MODEL` (fresh process: load + check) | {cell(cli_t)} | {ratio:.2f} |")
    print(f"| `onnx.checker.check_model(model)`, model loaded (reference) | {cell(ref_t)} | 1.00 |")
    print(f"| `onnx.checker.check_model(path)` | {cell(path_t)} | "
          f"{statistics.median(path_t) / statistics.median(ref_t):.2f} |")
    print()
    print(f"ratio {ratio:.2f}, limit {args.limit}: **{verdict}**")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
