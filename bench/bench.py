#!/usr/bin/env python3
"""Benchmarks onnxio against libprotobuf (C++) and the onnx Python package.

    make bench                         # builds everything, then runs this
    .venv/bin/python bench/bench.py [--repeats N] [--threads T] [--json FILE] [MODEL ...]

For each model (default: .cache/models/gpt2.onnx and many_nodes.onnx, made
by scripts/make_gpt2.py and scripts/make_many_nodes.py) it runs, one after
the other in the same invocation:

  bench/out/onnxio_bench   onnxio (C, build/libonnxio.a)
  bench/out/pb_bench       libprotobuf's generated C++ classes
  this script              the onnx package: load_model_from_string /
                           SerializeToString / onnx.load / onnx.save
                           (in a child process, so that each model starts
                           with a clean heap)

and prints two tables, the best and the median of N runs, in seconds, with
the ratios (baseline time / onnxio time: above 1 means onnxio is faster).
The median is there because the first runs of an operation often pay for
fresh memory (page faults) and later ones reuse the allocator's pages, so
the best run can flatter a tool whose heap happened to stay warm. Each tool
reads the file once before timing, so every figure is with the file in the
page cache. The JSON with every figure and the machine goes to --json
(default bench/out/results.json).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
DEFAULT_MODELS = [os.path.join(ROOT, ".cache", "models", m)
                  for m in ("gpt2.onnx", "many_nodes.onnx")]

# (key in the results, label, onnxio key, libprotobuf key, onnx Python key)
ROWS = [
    ("parse", "parse from memory", "parse", "parse", "parse"),
    ("parse_no_copy", "parse from memory, no_copy", "parse_no_copy", "parse", "parse"),
    ("serialize", "serialize to memory", "serialize", "serialize", "serialize"),
    ("load_file", "load file", "load_file", "load_file", "load_file"),
    ("load_file_no_copy", "load file, no_copy (mmap)", "load_file_no_copy", "load_file",
     "load_file"),
    ("save_file", "save file", "save_file", "save_file", "save_file"),
]


def python_worker(model, repeats, out_dir):
    """Times the onnx package on one model; prints one JSON object."""
    import onnx

    samples = {}

    def best(fn, name):
        runs = samples.setdefault(name, [])
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        return min(runs)

    with open(model, "rb") as f:
        data = f.read()
    parse = best(lambda: onnx.load_model_from_string(data), "parse")
    m = onnx.load_model_from_string(data)
    out = {}
    serialize = best(lambda: out.__setitem__("b", m.SerializeToString()), "serialize")
    identical = out.pop("b") == data
    load_file = best(lambda: onnx.load(model), "load_file")
    dst = os.path.join(out_dir, "python_out.onnx")
    save_file = best(lambda: onnx.save(m, dst), "save_file")
    os.unlink(dst)
    print(json.dumps({
        "tool": "onnx-python", "version": onnx.__version__,
        "protobuf": __import__("google.protobuf").protobuf.__version__,
        "model": model, "bytes": len(data), "repeats": repeats,
        "parse": parse, "serialize": serialize, "load_file": load_file,
        "save_file": save_file, "identical": identical, "samples": samples}))


def run_json(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip() or f"exit status {p.returncode}").splitlines()[-1]}
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "no JSON in output: " + p.stdout[-200:]}


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {"cpus": os.cpu_count(), "cpu": cpu, "memory": mem,
            "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}


def commit():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no",
                                "--", "src", "include", "CMakeLists.txt"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+local changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def fmt_t(v):
    if v is None:
        return "n/a"
    return f"{v:.4f}" if v < 10 else f"{v:.2f}"


def fmt_ratio(base, ours):
    if base is None or ours is None or ours <= 0:
        return "n/a"
    return f"{base / ours:.2f}x"


def stat(result, key, how):
    """The best or the median time of one operation of one tool, or None."""
    if how == "best":
        return result.get(key)
    runs = sorted(result.get("samples", {}).get(key) or [])
    if not runs:
        return None
    mid = len(runs) // 2
    return runs[mid] if len(runs) % 2 else (runs[mid - 1] + runs[mid]) / 2


def table(results, how):
    lines = ["| model | operation | onnxio (s) | libprotobuf C++ (s) | onnx Python (s) "
             "| onnxio vs C++ | onnxio vs Python |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        name = os.path.basename(r["model"])
        o, c, p = r["onnxio"], r["libprotobuf"], r["python"]
        for _, label, ok, ck, pk in ROWS:
            ov, cv, pv = stat(o, ok, how), stat(c, ck, how), stat(p, pk, how)
            lines.append(f"| {name} | {label} | {fmt_t(ov)} | {fmt_t(cv)} | {fmt_t(pv)} "
                         f"| {fmt_ratio(cv, ov)} | {fmt_ratio(pv, ov)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--repeats", type=int, default=7, help="runs of each operation (default 7)")
    ap.add_argument("--threads", type=int, default=0,
                    help="onnxio num_threads (default 0: one per core)")
    ap.add_argument("--json", default=os.path.join(OUT, "results.json"))
    ap.add_argument("--python-worker", nargs=3, metavar=("MODEL", "REPEATS", "OUT_DIR"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.python_worker:
        model, repeats, out_dir = args.python_worker
        python_worker(model, int(repeats), out_dir)
        return 0

    onnxio_bin = os.path.join(OUT, "onnxio_bench")
    pb_bin = os.path.join(OUT, "pb_bench")
    for b in (onnxio_bin, pb_bin):
        if not os.access(b, os.X_OK):
            sys.exit(f"bench.py: {b} is missing; run `make bench`")
    for m in args.models:
        if not os.path.exists(m):
            sys.exit(f"bench.py: {m} is missing; run `make bench` (or scripts/make_*.py)")

    results = []
    failed = False
    with tempfile.TemporaryDirectory(dir=OUT, prefix="tmp-") as tmp:
        for m in args.models:
            m = os.path.abspath(m)
            name = os.path.basename(m)
            print(f"bench: {name} ({os.path.getsize(m):,} bytes), {args.repeats} runs of each operation",
                  file=sys.stderr)
            r = {"model": m, "bytes": os.path.getsize(m)}
            for key, cmd in (
                    ("onnxio", [onnxio_bin, m, str(args.repeats), tmp, str(args.threads)]),
                    ("libprotobuf", [pb_bin, m, str(args.repeats), tmp]),
                    ("python", [sys.executable, os.path.abspath(__file__),
                                "--python-worker", m, str(args.repeats), tmp])):
                t0 = time.time()
                r[key] = run_json(cmd)
                status = r[key].get("error") or (
                    "ok" if r[key].get("identical") else "ok, but output differs from input")
                print(f"bench:   {key}: {status} ({time.time() - t0:.1f} s)", file=sys.stderr)
                if "error" in r[key] or not r[key].get("identical") or \
                        r[key].get("saved_identical") is False:
                    failed = True
            results.append(r)

    report = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "commit": commit(),
              "machine": machine(),
              "repeats": args.repeats, "threads": args.threads, "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")

    mach = report["machine"]
    print(f"\nMachine: {mach['cpus']} CPUs ({mach['cpu']}), {mach['memory']}, {mach['system']}; "
          f"onnxio {report['commit']}; onnxio num_threads={args.threads}; "
          f"ratios are baseline time / onnxio time (>1: onnxio faster)\n")
    print(f"Best of {args.repeats}:\n")
    print(table(results, "best"))
    print(f"\nMedian of {args.repeats}:\n")
    print(table(results, "median"))
    for r in results:
        for key in ("onnxio", "libprotobuf", "python"):
            if "error" in r[key]:
                print(f"\n{key} failed on {os.path.basename(r['model'])}: {r[key]['error']}")
            elif not r[key].get("identical"):
                print(f"\n{key}: serializing {os.path.basename(r['model'])} "
                      f"did not give back the input bytes")
            elif r[key].get("saved_identical") is False:
                print(f"\n{key}: the saved {os.path.basename(r['model'])} differs from the input")
    print(f"\nJSON: {os.path.relpath(args.json, ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
