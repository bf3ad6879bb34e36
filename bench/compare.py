#!/usr/bin/env python3
"""Two builds of bench/out/onnxio_bench against each other, in one run.

Runs each harness in turn (ROUNDS rounds, so that both see the same state of
the machine) on gpt2.onnx, gpt2 with external data and many_nodes.onnx from
.cache/models (`make models`), and prints the median of every operation's
runs for each, with after / before (below 1: the second build is faster).

    git worktree add /tmp/base COMMIT && make -C /tmp/base all bench-build
    .venv/bin/python bench/compare.py /tmp/base/bench/out/onnxio_bench bench/out/onnxio_bench
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", ".cache", "models")
CASES = [([], "gpt2.onnx", "gpt2.onnx", 5),
         (["--external"], os.path.join("gpt2_external", "gpt2.onnx"), "gpt2 + external data", 5),
         ([], "many_nodes.onnx", "many_nodes.onnx", 15)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    samples = {}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.rounds):
            for flags, model, name, repeats in CASES:
                for which in ("before", "after"):
                    cmd = [getattr(args, which)] + flags + [os.path.join(MODELS, model), str(repeats), out]
                    run = subprocess.run(cmd, capture_output=True, text=True, check=True)
                    for op, runs in json.loads(run.stdout)["samples"].items():
                        samples.setdefault((name, op), {}).setdefault(which, []).extend(runs)
    print("| model | operation | before (s) | after (s) | after / before |")
    print("| --- | --- | ---: | ---: | ---: |")
    for (name, op), s in samples.items():
        a, b = statistics.median(s["before"]), statistics.median(s["after"])
        print(f"| {name} | {op} | {a:.4f} | {b:.4f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
