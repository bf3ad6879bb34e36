#!/usr/bin/env python3
"""Benchmarks onnxio against libprotobuf (C++) and the onnx Python package.

    make bench                         # builds everything, then runs this
    .venv/bin/python bench/bench.py [--repeats N] [--json FILE] [--no-write]

Models (made once by `make models`, in .cache/models/):
  gpt2.onnx                  GPT-2-small shapes, ~500 MB of raw_data in one
                             file (scripts/make_gpt2.py)
  gpt2_external/gpt2.onnx    the same with its payloads in gpt2.onnx.data,
                             written by onnx (scripts/make_gpt2_external.py)
  many_nodes.onnx            200,000 nodes (scripts/make_many_nodes.py)

For each model it runs, one after the other in the same invocation:

  bench/out/onnxio_bench   onnxio (C, build/libonnxio.a), 1 and 2 threads
  bench/out/pb_bench       libprotobuf's generated C++ classes (single-file
                           models; libprotobuf has no external data)
  this script              the onnx package: load_model_from_string /
                           SerializeToString / onnx.load / onnx.save
                           (in a child process, so that each model starts
                           with a clean heap)

then the same model as .onnx, .onnx + external data and .onnxz, each
written and read back by onnxio (onnxio_bench --archive), then measures the
peak memory of one load per fresh process (onnxio copy and
no_copy, onnx.load), checks the targets on the medians, prints
everything, and (unless --no-write) replaces the results section of
BENCHMARKS.md and draws docs/bench.png. Each tool reads the file once before
timing, so every figure is with the file in the page cache. Every run of
every operation goes to --json (default bench/out/results.json).
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
MODELS = os.path.join(ROOT, ".cache", "models")
GPT2 = os.path.join(MODELS, "gpt2.onnx")
GPT2_EXT = os.path.join(MODELS, "gpt2_external", "gpt2.onnx")
MANY = os.path.join(MODELS, "many_nodes.onnx")
BENCHMARKS_MD = os.path.join(ROOT, "BENCHMARKS.md")
CHART = os.path.join(ROOT, "docs", "bench.png")
BEGIN, END = "<!-- bench.py results: begin -->", "<!-- bench.py results: end -->"

# (label, onnxio key, libprotobuf key, onnx Python key) for single-file models
ROWS = [
    ("parse from memory, 1 thread", "parse_1t", "parse", "parse"),
    ("parse from memory, 2 threads", "parse_2t", "parse", "parse"),
    ("parse from memory, no_copy", "parse_no_copy", "parse", "parse"),
    ("serialize to memory", "serialize", "serialize", "serialize"),
    ("load file, 1 thread", "load_file_1t", "load_file", "load_file"),
    ("load file, 2 threads", "load_file_2t", "load_file", "load_file"),
    ("load file, no_copy (mmap)", "load_file_no_copy", "load_file", "load_file"),
    ("save file, 1 thread", "save_file_1t", "save_file", "save_file"),
    ("save file, 2 threads", "save_file_2t", "save_file", "save_file"),
]
# ... and for the model with external data (no libprotobuf column)
EXT_ROWS = [
    ("load, external data, 1 thread", "load_file_1t", None, "load_file"),
    ("load, external data, 2 threads", "load_file_2t", None, "load_file"),
    ("load, external data, no_copy (mmap)", "load_file_no_copy", None, "load_file"),
    ("save, external data, 1 thread", "save_file_1t", None, "save_file"),
    ("save, external data, 2 threads", "save_file_2t", None, "save_file"),
]


# ---- the onnx package, in child processes ------------------------------------

def python_worker(model, repeats, out_dir, external):
    """Times the onnx package on one model; prints one JSON object."""
    import onnx

    samples = {}

    def timed(name, fn, before=None):
        runs = samples.setdefault(name, [])
        for _ in range(repeats):
            if before:
                before()
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)

    result = {"tool": "onnx-python", "version": onnx.__version__,
              "protobuf": __import__("google.protobuf").protobuf.__version__,
              "model": model, "repeats": repeats}
    if not external:
        with open(model, "rb") as f:
            data = f.read()
        timed("parse", lambda: onnx.load_model_from_string(data))
        m = onnx.load_model_from_string(data)
        out = {}
        timed("serialize", lambda: out.__setitem__("b", m.SerializeToString()))
        result["identical"] = out.pop("b") == data
        timed("load_file", lambda: onnx.load(model))
        dst = os.path.join(out_dir, "python_out.onnx")
        timed("save_file", lambda: onnx.save(m, dst))
        os.unlink(dst)
    else:
        timed("load_file", lambda: onnx.load(model))
        m = onnx.load(model)
        dst = os.path.join(out_dir, "python_out.onnx")
        location = "python_out.onnx.data"
        work = {}

        def fresh():
            # onnx.save with external data empties the tensors of the model it
            # is given and appends to an existing data file: every run starts
            # from an untouched copy and no data file (neither is timed).
            if os.path.exists(os.path.join(out_dir, location)):
                os.unlink(os.path.join(out_dir, location))
            work["m"] = onnx.ModelProto()
            work["m"].CopyFrom(m)

        timed("save_file", lambda: onnx.save(work["m"], dst, save_as_external_data=True,
                                             all_tensors_to_one_file=True, location=location,
                                             size_threshold=1024), before=fresh)
        back = onnx.load(dst)
        result["identical"] = back.SerializeToString() == m.SerializeToString()
        os.unlink(dst)
        os.unlink(os.path.join(out_dir, location))
    result["samples"] = samples
    print(json.dumps(result))


def status_bytes(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1


def python_rss(model):
    """One onnx.load in this fresh process; prints the growth of resident memory."""
    import onnx

    before = status_bytes("VmRSS")
    t0 = time.perf_counter()
    m = onnx.load(model)
    t = time.perf_counter() - t0
    peak = status_bytes("VmHWM")
    print(json.dumps({"tool": "onnx-python", "model": model, "seconds": t, "rss_before": before,
                      "peak": peak, "growth": peak - before,
                      "payload_bytes": sum(len(i.raw_data) for i in m.graph.initializer)}))


# ---- running and collecting ---------------------------------------------------

def run_json(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip() or f"exit status {p.returncode}").splitlines()[-1]}
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "no JSON in output: " + p.stdout[-200:]}


def warm(path):
    """Reads a file (and an external data file next to it) into the page cache."""
    d = os.path.dirname(path)
    for p in [path] + [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".data")]:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


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
            "python": platform.python_version(), "load_before": os.getloadavg()}


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


def median(result, key):
    runs = sorted((result or {}).get("samples", {}).get(key) or [])
    if not runs:
        return None
    mid = len(runs) // 2
    return runs[mid] if len(runs) % 2 else (runs[mid - 1] + runs[mid]) / 2


def best(result, key):
    runs = (result or {}).get("samples", {}).get(key) or []
    return min(runs) if runs else None


# ---- formatting ---------------------------------------------------------------

def fmt_t(v):
    if v is None:
        return "n/a"
    return f"{v:.4f}" if v < 10 else f"{v:.2f}"


def fmt_ratio(base, ours):
    if base is None or ours is None or ours <= 0:
        return "n/a"
    return f"{base / ours:.2f}x"


def mib(n):
    return f"{n / 2**20:,.1f}"


def times_table(results, stat):
    lines = ["| model | operation | onnxio (s) | libprotobuf C++ (s) | onnx Python (s) "
             "| onnxio vs C++ | onnxio vs Python |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        name = os.path.relpath(r["model"], MODELS)
        for label, ok, ck, pk in (EXT_ROWS if r["external"] else ROWS):
            ov, pv = stat(r["onnxio"], ok), stat(r["python"], pk)
            cv = stat(r.get("libprotobuf"), ck) if ck else None
            lines.append(f"| {name} | {label} | {fmt_t(ov)} | {fmt_t(cv)} | {fmt_t(pv)} "
                         f"| {fmt_ratio(cv, ov)} | {fmt_ratio(pv, ov)} |")
    return "\n".join(lines)


ARCHIVE_ROWS = [
    ("load, copy, 1 thread", "load_1t", "load_file"),
    ("load, copy, 2 threads", "load_2t", "load_file"),
    ("load, no_copy (mmap)", "load_no_copy", "load_file"),
    ("save, 1 thread", "save_1t", "save_file"),
    ("save, 2 threads", "save_2t", "save_file"),
]


def archive_table(arch, by_name, stat):
    """The .onnxz container against the single .onnx file and .onnx +
    external data, all written and read by onnxio in one process
    (onnxio_bench --archive), with the onnx package on the same two layouts
    from this run as the reference."""
    lines = ["| gpt2, onnxio | .onnx (s) | .onnx + external data (s) | .onnxz (s) "
             "| .onnx / .onnxz | external / .onnxz | onnx package: .onnx / .onnxz "
             "| onnx package: external / .onnxz |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    samples = (arch or {}).get("samples", {})
    one = lambda layout, key: stat({"samples": samples.get(layout, {})}, key)
    for label, key, pkey in ARCHIVE_ROWS:
        a, e, z = one("onnx", key), one("onnx_external", key), one("onnxz", key)
        pa = stat(by_name.get("gpt2", {}).get("python"), pkey)
        pe = stat(by_name.get("gpt2_ext", {}).get("python"), pkey)
        lines.append(f"| {label} | {fmt_t(a)} | {fmt_t(e)} | {fmt_t(z)} | {fmt_ratio(a, z)} "
                     f"| {fmt_ratio(e, z)} | {fmt_ratio(pa, z)} | {fmt_ratio(pe, z)} |")
    z = one("onnxz", "load_1t_no_crc")
    a, e = one("onnx", "load_1t"), one("onnx_external", "load_1t")
    lines.append(f"| load, copy, 1 thread, verify_crc off | {fmt_t(a)} | {fmt_t(e)} | {fmt_t(z)} "
                 f"| {fmt_ratio(a, z)} | {fmt_ratio(e, z)} | | |")
    return "\n".join(lines)


def memory_table(mem):
    lines = ["| load of gpt2.onnx | time (s) | peak RSS growth (MiB) | of which private (MiB) "
             "| payload (MiB) | structure (MiB) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for key, label in (("onnxio_copy_1t", "onnxio, copy, 1 thread"),
                       ("onnxio_copy_2t", "onnxio, copy, 2 threads"),
                       ("onnxio_no_copy", "onnxio, no_copy"),
                       ("python", "onnx.load")):
        m = mem.get(key) or {}
        if "error" in m or not m:
            lines.append(f"| {label} | {m.get('error', 'n/a')} | | | | |")
            continue
        anon = mib(m["anon_growth"]) if "anon_growth" in m else "n/a"
        struct = mib(m["structure_bytes"]) if "structure_bytes" in m else "n/a"
        lines.append(f"| {label} | {m['seconds']:.3f} | {mib(m['growth'])} | {anon} "
                     f"| {mib(m['payload_bytes'])} | {struct} |")
    return "\n".join(lines)


def targets(by_name, mem):
    """The targets on the medians: (label, measured, limit text, value, limit, ok)."""
    g, e, n = by_name.get("gpt2"), by_name.get("gpt2_ext"), by_name.get("many")
    out = []

    def ratio_row(label, ours, base, limit, cmp="le", what="onnxio / reference"):
        if ours is None or base is None or base <= 0:
            out.append((label, "n/a", f"{what} <= {limit}", None, limit, None))
            return
        v = ours / base
        ok = v <= limit
        out.append((label, f"{ours:.4f} s / {base:.4f} s = {v:.3f}", f"<= {limit}", v, limit, ok))

    if g:
        onnx_load = median(g["python"], "load_file")
        ratio_row("gpt2.onnx copy load, 1 thread / onnx.load",
                  median(g["onnxio"], "load_file_1t"), onnx_load, 0.6)
        t1, t2 = median(g["onnxio"], "load_file_1t"), median(g["onnxio"], "load_file_2t")
        if t1 and t2:
            out.append(("gpt2.onnx copy load, 2 threads / 1 thread",
                        f"{t2:.4f} s / {t1:.4f} s = {t2 / t1:.3f}", "< 1 (faster still)",
                        t2 / t1, 1.0, t2 < t1))
        nc = median(g["onnxio"], "load_file_no_copy")
        if nc and onnx_load:
            out.append(("gpt2.onnx no_copy load vs onnx.load",
                        f"{onnx_load:.4f} s / {nc:.5f} s = {onnx_load / nc:,.0f}x faster",
                        ">= 50x faster", nc / onnx_load, 1 / 50, onnx_load / nc >= 50))
        ratio_row("gpt2.onnx save, 2 threads (= one per core) / onnx.save",
                  median(g["onnxio"], "save_file_2t"), median(g["python"], "save_file"), 0.7)
    if e:
        ratio_row("external data: load, 2 threads / onnx.load",
                  median(e["onnxio"], "load_file_2t"), median(e["python"], "load_file"), 0.6)
        ratio_row("external data: save, 2 threads / onnx.save(save_as_external_data)",
                  median(e["onnxio"], "save_file_2t"), median(e["python"], "save_file"), 0.6)
    if n:
        ratio_row("many_nodes.onnx parse, 1 thread / C++ ParseFromArray",
                  median(n["onnxio"], "parse_1t"), median(n["libprotobuf"], "parse"), 0.5)
        ratio_row("many_nodes.onnx serialize / C++ SerializeToArray",
                  median(n["onnxio"], "serialize"), median(n["libprotobuf"], "serialize"), 1.0)
    for key, label in (("onnxio_copy_1t", "copy load, 1 thread"), ("onnxio_copy_2t", "copy load, 2 threads")):
        m = mem.get(key)
        if m and "growth" in m:
            base = m["payload_bytes"] + m["structure_bytes"]
            v = m["growth"] / base
            out.append((f"peak RSS growth, {label} / (payload + structure)",
                        f"{mib(m['growth'])} MiB / {mib(base)} MiB = {v:.3f}", "<= 1.1", v, 1.1,
                        v <= 1.1))
    m = mem.get("onnxio_no_copy")
    if m and "growth" in m:
        s = m["structure_bytes"]
        v = m["growth"] / s
        out.append(("peak RSS growth, no_copy load / structure",
                    f"{mib(m['growth'])} MiB / {mib(s)} MiB = {v:.2f}", "<= 1.1", v, 1.1, v <= 1.1))
        v = m["anon_growth"] / s
        out.append(("private memory growth, no_copy load / structure",
                    f"{mib(m['anon_growth'])} MiB / {mib(s)} MiB = {v:.2f}", "<= 1.1", v, 1.1,
                    v <= 1.1))
    return out


def targets_table(rows):
    lines = ["| target | measured (medians) | target | result |", "| --- | --- | --- | --- |"]
    for label, measured, limit_text, _, _, ok in rows:
        res = "n/a" if ok is None else "PASS" if ok else "**MISS**"
        lines.append(f"| {label} | {measured} | {limit_text} | {res} |")
    return "\n".join(lines)


def chart(rows, path):
    """One bar per target: measured / limit, log scale; at most 1 passes."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench: matplotlib is not installed; no chart", file=sys.stderr)
        return False
    rows = [r for r in rows if r[3] is not None]
    labels = [r[0] for r in rows][::-1]
    vals = [r[3] / r[4] for r in rows][::-1]
    colors = ["#2e7d32" if r[5] else "#c62828" for r in rows][::-1]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.4))
    ax.barh(range(len(rows)), vals, color=colors)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    for i, v in enumerate(vals):
        ax.text(v, i, f" {v:.2g}", va="center", fontsize=7)
    ax.set_xlabel("measured / target limit (log scale; left of the line: target met)")
    ax.set_title("onnxio benchmark targets (green PASS, red MISS), medians")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_benchmarks_md(section):
    with open(BENCHMARKS_MD) as f:
        text = f.read()
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(BENCHMARKS_MD, "w") as f:
        f.write(text)


# ---- main -----------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="runs of each operation (default 7)")
    ap.add_argument("--json", default=os.path.join(OUT, "results.json"))
    ap.add_argument("--no-write", action="store_true",
                    help="do not touch BENCHMARKS.md and docs/bench.png")
    ap.add_argument("--python-worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--python-rss", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.python_worker:
        model, repeats, out_dir, external = args.python_worker
        python_worker(model, int(repeats), out_dir, external == "1")
        return 0
    if args.python_rss:
        python_rss(args.python_rss)
        return 0

    onnxio_bin = os.path.join(OUT, "onnxio_bench")
    pb_bin = os.path.join(OUT, "pb_bench")
    for b in (onnxio_bin, pb_bin):
        if not os.access(b, os.X_OK):
            sys.exit(f"bench.py: {b} is missing; run `make bench`")
    for m in (GPT2, GPT2_EXT, MANY):
        if not os.path.exists(m):
            sys.exit(f"bench.py: {m} is missing; run `make models`")

    t_start = time.time()
    mach = machine()
    results, by_name = [], {}
    failed = False
    with tempfile.TemporaryDirectory(dir=OUT, prefix="tmp-") as tmp:
        for name, m, external in (("gpt2", GPT2, False), ("gpt2_ext", GPT2_EXT, True),
                                  ("many", MANY, False)):
            print(f"bench: {os.path.relpath(m, MODELS)}, {args.repeats} runs of each operation",
                  file=sys.stderr)
            warm(m)
            r = {"model": m, "external": external, "bytes": os.path.getsize(m)}
            cmds = [("onnxio", [onnxio_bin] + (["--external"] if external else [])
                     + [m, str(args.repeats), tmp])]
            if not external:
                cmds.append(("libprotobuf", [pb_bin, m, str(args.repeats), tmp]))
            cmds.append(("python", [sys.executable, os.path.abspath(__file__), "--python-worker",
                                    m, str(args.repeats), tmp, "1" if external else "0"]))
            for key, cmd in cmds:
                t0 = time.time()
                r[key] = run_json(cmd)
                status = r[key].get("error") or (
                    "ok" if r[key].get("identical") else "ok, but output differs from input")
                print(f"bench:   {key}: {status} ({time.time() - t0:.1f} s)", file=sys.stderr)
                if "error" in r[key] or not r[key].get("identical") or \
                        r[key].get("saved_identical") is False:
                    failed = True
            results.append(r)
            by_name[name] = r

        # The three layouts of gpt2.onnx, written and read by onnxio.
        print("bench: gpt2.onnx as .onnx, .onnx + external data and .onnxz", file=sys.stderr)
        t0 = time.time()
        archive = run_json([onnxio_bin, "--archive", GPT2, str(args.repeats), tmp])
        status = archive.get("error") or ("ok" if archive.get("identical") else "loads differ from the model")
        print(f"bench:   onnxio --archive: {status} ({time.time() - t0:.1f} s)", file=sys.stderr)
        if "error" in archive or not archive.get("identical"):
            failed = True

    # Peak memory: one load per fresh process, so that nothing an earlier
    # load freed is reused and VmHWM is this load's own.
    print("bench: peak memory of one load of gpt2.onnx per process", file=sys.stderr)
    warm(GPT2)
    mem = {
        "onnxio_copy_1t": run_json([onnxio_bin, "--rss", GPT2, "copy", "1"]),
        "onnxio_copy_2t": run_json([onnxio_bin, "--rss", GPT2, "copy", "2"]),
        "onnxio_no_copy": run_json([onnxio_bin, "--rss", GPT2, "no_copy", "1"]),
        "python": run_json([sys.executable, os.path.abspath(__file__), "--python-rss", GPT2]),
    }
    for k, v in mem.items():
        if "error" in v:
            failed = True
            print(f"bench:   {k}: {v['error']}", file=sys.stderr)

    target_rows = targets(by_name, mem)
    report = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "commit": commit(),
              "machine": mach, "load_after": os.getloadavg(), "repeats": args.repeats,
              "seconds": time.time() - t_start, "results": results, "archive": archive, "memory": mem,
              "targets": [{"target": t[0], "measured": t[1], "limit": t[2], "pass": t[5]}
                          for t in target_rows]}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")

    lo = report["load_after"]
    # The commit and the date go to the JSON report only: BENCHMARKS.md
    # describes the code as it is, not a dated run.
    head = (f"Machine: {mach['cpus']} CPUs ({mach['cpu']}), {mach['memory']}, {mach['system']}; "
            f"{args.repeats} runs of each operation; "
            f"load average {mach['load_before'][0]:.2f} before and {lo[0]:.2f} after the run "
            f"({report['seconds']:.0f} s). Ratios: baseline time / onnxio time (above 1: onnxio "
            f"is faster).")
    section = "\n".join([
        head, "",
        "### Targets", "", targets_table(target_rows), "",
        "![targets](docs/bench.png)", "",
        f"### Median of {args.repeats}", "", times_table(results, median), "",
        f"### Best of {args.repeats}", "", times_table(results, best), "",
        "### Peak memory of one load (fresh process each)", "", memory_table(mem), "",
        f"### The .onnxz container: median of {args.repeats}", "",
        "Copy loads of the archive check every entry's CRC-32 (the default); the last row "
        "turns that off. Ratios: the other layout's time / the .onnxz time (above 1: .onnxz "
        "is faster). File sizes: " + ", ".join(
            f"{k} {mib(v)} MiB" for k, v in (archive.get("file_bytes") or {}).items()) + ".", "",
        archive_table(archive, by_name, median),
    ])
    print("\n" + section)
    for r in results:
        for key in ("onnxio", "libprotobuf", "python"):
            if key not in r:
                continue
            name = os.path.relpath(r["model"], MODELS)
            if "error" in r[key]:
                print(f"\n{key} failed on {name}: {r[key]['error']}")
            elif not r[key].get("identical"):
                print(f"\n{key}: {name}: the round trip did not give back the input")
            elif r[key].get("saved_identical") is False:
                print(f"\n{key}: the saved {name} differs from the input")
    if not args.no_write:
        write_benchmarks_md(section)
        drew = chart(target_rows, CHART)
        print(f"\nwrote {os.path.relpath(BENCHMARKS_MD, ROOT)}"
              + (f" and {os.path.relpath(CHART, ROOT)}" if drew else ""))
    print(f"JSON: {os.path.relpath(args.json, ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
