#!/usr/bin/env python3
"""What the external data checksum (SHA-1 of the data file) costs a convert.

    .venv/bin/python bench/bench_checksum.py [--rounds 7] [--model .cache/models/gpt2.onnx]

Runs `onnxio convert` in fresh processes, each pair interleaved, warm (the
input in the page cache) and cold (os.sync() and POSIX_FADV_DONTNEED on
the input files before each run):

  save    IN.onnx -> OUT.onnx --external-data OUT.data, without and with
          --checksum (the SHA-1 computed while the pool writes);
  verify  the checksummed model -> OUT.onnx --inline, without and with
          --verify-checksum (the SHA-1 of the data file computed on a thread
          of its own while IN is loaded and OUT written).

Every checksum key written is compared with hashlib's SHA-1 of its data
file first. Prints a markdown table: medians, spread (min-max), the ratio
with/without and the target (<= 1.15).
"""
import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 1.15


def evict(paths):
    os.sync()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(paths):
    os.sync()  # the last run's writes, not this one's
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def run(cli, args, inputs, cold):
    (evict if cold else warm)(inputs)
    t0 = time.perf_counter()
    subprocess.run([cli, "convert", *args], check=True)
    return time.perf_counter() - t0


def checksum_keys(model):
    import onnx

    m = onnx.load(model, load_external_data=False)
    keys = set()
    for t in m.graph.initializer:
        d = {e.key: e.value for e in t.external_data}
        if "checksum" in d:
            keys.add((d["location"], d["checksum"]))
    return keys


def check_against_hashlib(model):
    keys = checksum_keys(model)
    if not keys:
        raise SystemExit(f"bench_checksum: {model} has no checksum key")
    for location, key in keys:
        with open(os.path.join(os.path.dirname(model), location), "rb") as f:
            want = hashlib.sha1(f.read()).hexdigest()
        if key != want:
            raise SystemExit(f"bench_checksum: {location}: checksum key {key}, hashlib's SHA-1 {want}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--model", default=os.path.join(ROOT, ".cache", "models", "gpt2.onnx"))
    ap.add_argument("--onnxio", default=os.path.join(ROOT, "build", "onnxio"))
    args = ap.parse_args()
    cli = args.onnxio
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "bench", "out") if os.path.isdir(
            os.path.join(ROOT, "bench", "out")) else None) as tmp:
        ck = os.path.join(tmp, "ck.onnx")
        subprocess.run([cli, "convert", args.model, ck, "--external-data", "ck.data", "--checksum"], check=True)
        check_against_hashlib(ck)
        saved = os.path.join(tmp, "out.onnx")
        cases = [
            ("save to external data", "--checksum", [args.model, saved, "--external-data", "out.data"],
             [args.model]),
            ("load external data, save inline", "--verify-checksum", [ck, saved, "--inline"],
             [ck, os.path.join(tmp, "ck.data")]),
        ]
        rows = []
        for title, flag, base, inputs in cases:
            for cold in (False, True):
                plain, flagged = [], []
                for _ in range(args.rounds):
                    plain.append(run(cli, base, inputs, cold))
                    flagged.append(run(cli, base + [flag], inputs, cold))
                    if flag == "--checksum":
                        check_against_hashlib(saved)
                rows.append((title, "cold" if cold else "warm", flag, plain, flagged))
    size = os.path.getsize(args.model)
    print(f"`onnxio convert` of {os.path.basename(args.model)} ({size:,} bytes), fresh processes, "
          f"{args.rounds} interleaved pairs each; medians (min-max):\n")
    print("| convert | cache | without | with | flag | ratio | target | result |")
    print("|---|---|---:|---:|---|---:|---:|---|")
    for title, state, flag, plain, flagged in rows:
        a, b = statistics.median(plain), statistics.median(flagged)
        ratio = b / a
        print(f"| {title} | {state} | {a:.3f} s ({min(plain):.2f}-{max(plain):.2f}) | "
              f"{b:.3f} s ({min(flagged):.2f}-{max(flagged):.2f}) | `{flag}` | {ratio:.3f} | <= {TARGET} | "
              f"{'PASS' if ratio <= TARGET else 'MISS'} |")
    data = os.urandom(256 << 20)
    t0 = time.perf_counter()
    hashlib.sha1(data).digest()
    print(f"\nhashlib's SHA-1 on 256 MiB in memory, for scale: {(256 << 20) / (time.perf_counter() - t0) / 1e9:.2f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
