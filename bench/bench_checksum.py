#!/usr/bin/env python3
"""What the external data checksum (SHA-1 of the data file) costs a convert,
and what block digests (SHA-256 of each MiB) cost a load.

    .venv/bin/python bench/bench_checksum.py [--rounds 7] [--model .cache/models/gpt2.onnx]

Runs `onnxio convert` in fresh processes, each pair interleaved, warm (the
input in the page cache) and cold (os.sync() and POSIX_FADV_DONTNEED on
the input files before each run):

  save    IN.onnx -> OUT.onnx --external-data OUT.data, without and with
          --checksum (the SHA-1 computed while the pool writes);
  verify  the checksummed model -> OUT.onnx --inline, without and with
          --verify-checksum (the SHA-1 of the data file computed on a thread
          of its own while IN is loaded and OUT written).

Then block digests: the model saved with --digests, loaded by the Python
package (a copy load, in this process, interleaved) with its digests
checked (the default) and with verify_digests=False, warm and cold. Every
checksum key written is compared with hashlib's SHA-1 of its data file,
and every block digest with hashlib's SHA-256 of its block, first. Prints
markdown tables: medians, spread (min-max), the ratio with/without and the
target (<= 1.15).
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
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_slices  # noqa: E402
TARGET = 1.15


def evict(paths):
    os.sync()
    bench_slices.evict(paths)


def warm(paths):
    os.sync()  # the last run's writes, not this one's
    bench_slices.warm(paths)


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


def check_digests_against_hashlib(model):
    import onnx

    m = onnx.load(model, load_external_data=False)
    n = 0
    for t in m.graph.initializer:
        keys = {e.key: e.value for e in t.external_data}
        record = {e.key: e.value for e in t.metadata_props}.get("onnxio.sha256")
        if not record:
            continue
        block, hexs = record.split(":")
        block, offset, length = int(block), int(keys["offset"]), int(keys["length"])
        with open(os.path.join(os.path.dirname(model), keys["location"]), "rb") as f:
            f.seek(offset)
            data = f.read(length)
        want = "".join(hashlib.sha256(data[i:i + block]).hexdigest() for i in range(0, length, block))
        if hexs != want:
            raise SystemExit(f"bench_checksum: {t.name}: block digests differ from hashlib's SHA-256")
        n += 1
    if not n:
        raise SystemExit(f"bench_checksum: {model} has no block digests")


def digest_loads(model, rounds):
    import onnxio

    files = [model, os.path.join(os.path.dirname(model), "dg.data")]
    rows = []
    for cold in (False, True):
        times = {True: [], False: []}
        for _ in range(rounds):
            for verify in (True, False):
                (evict if cold else warm)(files)
                t0 = time.perf_counter()
                m = onnxio.load_model(model, verify_digests=verify)
                times[verify].append(time.perf_counter() - t0)
                del m
        rows.append(("cold" if cold else "warm", times[False], times[True]))
    return rows


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
        dg = os.path.join(tmp, "dg.onnx")
        subprocess.run([cli, "convert", args.model, dg, "--external-data", "dg.data", "--digests"], check=True)
        check_digests_against_hashlib(dg)
        loads = digest_loads(dg, args.rounds)
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
    print(f"\n`onnxio.load_model` (a copy load) of the same model saved with `--digests`, {args.rounds} interleaved "
          f"pairs each, in one process; medians (min-max):\n")
    print("| cache | `verify_digests=False` | checked (the default) | ratio | target | result |")
    print("|---|---:|---:|---:|---:|---|")
    for state, plain, flagged in loads:
        a, b = statistics.median(plain), statistics.median(flagged)
        print(f"| {state} | {a:.3f} s ({min(plain):.2f}-{max(plain):.2f}) | {b:.3f} s ({min(flagged):.2f}-"
              f"{max(flagged):.2f}) | {b / a:.3f} | <= {TARGET} | {'PASS' if b / a <= TARGET else 'MISS'} |")
    data = os.urandom(256 << 20)
    t0 = time.perf_counter()
    hashlib.sha1(data).digest()
    sha1 = (256 << 20) / (time.perf_counter() - t0) / 1e9
    t0 = time.perf_counter()
    hashlib.sha256(data).digest()
    sha256 = (256 << 20) / (time.perf_counter() - t0) / 1e9
    print(f"\nhashlib on 256 MiB in memory, one core, for scale: SHA-1 {sha1:.2f} GB/s, SHA-256 {sha256:.2f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
