#!/usr/bin/env python3
"""The Python benchmark: the onnxio package against the onnx package, with
onnxruntime session creation and onnx_ir loading as further references.

    make bench-python                  # bootstrap, install, build the models, run this
    .venv/bin/python bench/bench_python.py [--repeats N] [--no-write]

Models (made once by `make models`, in .cache/models/, as for bench/bench.py):
  gpt2.onnx                  GPT-2-small shapes, ~500 MB of raw_data, one file
  gpt2_external/gpt2.onnx    the same with its payloads in gpt2.onnx.data
  many_nodes.onnx            200,000 nodes, 9 MB

Each library runs in a child process of its own (a clean heap, and only that
library imported), one operation after the other, each timed `--repeats`
times after one untimed warm-up run (so the files are in the page cache);
the figures are medians. Loads return a fully usable model: onnx.load
parses everything; onnxio.load parses everything into C structures that the
Python objects point into. `walk` reads every node's op_type and inputs from
Python. Saves write to a temporary directory on the same disk as the models.

It prints a table with onnxio / onnx ratios, checks its targets,
and (unless --no-write) replaces its section of BENCHMARKS.md and draws
docs/bench_python.png.
"""
import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, ".cache", "models")
GPT2 = os.path.join(MODELS, "gpt2.onnx")
GPT2_EXT = os.path.join(MODELS, "gpt2_external", "gpt2.onnx")
MANY = os.path.join(MODELS, "many_nodes.onnx")
BENCHMARKS_MD = os.path.join(ROOT, "BENCHMARKS.md")
CHART = os.path.join(ROOT, "docs", "bench_python.png")
BEGIN, END = "<!-- bench_python.py results: begin -->", "<!-- bench_python.py results: end -->"

MODEL_PATHS = {"gpt2": GPT2, "gpt2_ext": GPT2_EXT, "many_nodes": MANY}


# ---- the workers (run in a child process) -------------------------------------

def timed(fn, repeats):
    fn()  # warm-up: page cache, imports, first-touch costs
    runs = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - t)
        del result
    return runs


def timed_fresh(make, fn, repeats):
    """Like timed, but `fn(obj)` gets a fresh `make()` each run (made
    untimed): onnx.save(save_as_external_data=True) moves the payloads of
    the model it is given out of it, so a second save of the same object
    would write no data."""
    fn(make())
    runs = []
    for _ in range(repeats):
        obj = make()
        gc.collect()
        t = time.perf_counter()
        fn(obj)
        runs.append(time.perf_counter() - t)
        del obj
    return runs


def walk(model):
    n = 0
    for node in model.graph.node:
        n += len(node.op_type)
        for name in node.input:
            n += len(name)
    return n


def work_onnx(repeats, tmp):
    import onnx
    r = {}
    r["load gpt2"] = timed(lambda: onnx.load(GPT2), repeats)
    r["load gpt2_ext"] = timed(lambda: onnx.load(GPT2_EXT), repeats)
    r["load many_nodes"] = timed(lambda: onnx.load(MANY), repeats)
    m = onnx.load(MANY)
    r["walk many_nodes"] = timed(lambda: walk(m), repeats)
    del m
    m = onnx.load(GPT2)
    r["save gpt2"] = timed(lambda: onnx.save(m, os.path.join(tmp, "a.onnx")), repeats)
    del m
    r["save gpt2_ext"] = timed_fresh(lambda: onnx.load(GPT2),
                                     lambda x: onnx.save(x, os.path.join(tmp, "b.onnx"), save_as_external_data=True,
                                                         location="b.onnx.data"), repeats)
    return r


def work_onnxio(repeats, tmp):
    import onnxio
    r = {}
    for threads in (1, 2):
        r[f"load gpt2 {threads}t"] = timed(lambda: onnxio.load(GPT2, num_threads=threads), repeats)
    r["load gpt2 no_copy"] = timed(lambda: onnxio.load(GPT2, no_copy=True), repeats)
    for threads in (1, 2):
        r[f"load gpt2_ext {threads}t"] = timed(lambda: onnxio.load(GPT2_EXT, num_threads=threads), repeats)
    r["load gpt2_ext no_copy"] = timed(lambda: onnxio.load(GPT2_EXT, no_copy=True), repeats)
    r["load many_nodes"] = timed(lambda: onnxio.load(MANY, num_threads=1), repeats)
    m = onnxio.load(MANY)
    r["walk many_nodes"] = timed(lambda: walk(m), repeats)
    del m
    m = onnxio.load(GPT2)
    for threads in (1, 2):
        r[f"save gpt2 {threads}t"] = timed(lambda: onnxio.save(m, os.path.join(tmp, "a.onnx"), num_threads=threads),
                                           repeats)
    r["save gpt2_ext"] = timed(lambda: onnxio.save(m, os.path.join(tmp, "b.onnx"), save_as_external_data=True,
                                                   location="b.onnx.data"), repeats)
    return r


def work_ort(repeats, tmp):
    import onnxruntime as ort
    r = {}

    def session(path):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    for key, path in MODEL_PATHS.items():
        try:
            r[f"session {key}"] = timed(lambda: session(path), repeats)
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            r[f"session {key}"] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    return r


def work_onnx_ir(repeats, tmp):
    import onnx_ir
    r = {}
    for key, path in MODEL_PATHS.items():
        r[f"load {key}"] = timed(lambda: onnx_ir.load(path), repeats)
    return r


WORKERS = {"onnx": work_onnx, "onnxio": work_onnxio, "onnxruntime": work_ort, "onnx_ir": work_onnx_ir}


def worker_main(name, repeats):
    tmp = tempfile.mkdtemp(prefix="bench-py-", dir=MODELS)
    try:
        result = WORKERS[name](repeats, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    json.dump(result, sys.stdout)


# ---- the driver ---------------------------------------------------------------

def run_worker(name, repeats):
    p = subprocess.run([sys.executable, __file__, "--worker", name, "--repeats", str(repeats)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout)


def med(v):
    return statistics.median(v) if isinstance(v, list) else None


def fmt_t(v):
    if v is None:
        return "n/a"
    return f"{v * 1000:.1f} ms" if v < 1 else f"{v:.2f} s"


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()} {platform.release()}"


def versions():
    out = {}
    for mod in ("onnx", "onnxruntime", "onnx_ir", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            out[mod] = "not installed"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md and docs/bench_python.png")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args.worker, args.repeats)

    missing = [p for p in MODEL_PATHS.values() if not os.path.exists(p)]
    if missing:
        sys.exit(f"missing models {missing}: run `make models` first")

    res = {}
    for name in ("onnx", "onnxio", "onnxruntime", "onnx_ir"):
        print(f"running {name} ...", flush=True)
        res[name] = run_worker(name, args.repeats)
        if "error" in res[name]:
            print(f"  {name} failed: {res[name]['error']}")

    ox, io, ort, ir = (res[k] for k in ("onnx", "onnxio", "onnxruntime", "onnx_ir"))

    def m(d, k):
        return med(d.get(k))

    rows = []  # (operation, onnx key, onnxio key)
    for model in ("gpt2", "gpt2_ext"):
        for variant in ("1t", "2t", "no_copy"):
            rows.append((f"load {model}, {variant.replace('1t', '1 thread').replace('2t', '2 threads')}",
                         f"load {model}", f"load {model} {variant}"))
    rows.append(("load many_nodes (200k nodes)", "load many_nodes", "load many_nodes"))
    rows.append(("walk many_nodes: every op_type and input", "walk many_nodes", "walk many_nodes"))
    rows.append(("save gpt2, 1 thread", "save gpt2", "save gpt2 1t"))
    rows.append(("save gpt2, 2 threads", "save gpt2", "save gpt2 2t"))
    rows.append(("save gpt2 with external data", "save gpt2_ext", "save gpt2_ext"))

    lines = ["| operation | onnx | onnxio | onnxio / onnx |", "|---|---:|---:|---:|"]
    chart_rows = []
    for label, ko, ki in rows:
        a, b = m(ox, ko), m(io, ki)
        ratio = f"{b / a:.3f}" if a and b else "n/a"
        if a and b and b / a < 0.01:
            ratio += f" ({a / b:,.0f}x faster)"
        lines.append(f"| {label} | {fmt_t(a)} | {fmt_t(b)} | {ratio} |")
        if a and b:
            chart_rows.append((label, a, b))

    lines += ["", "Further references (medians):", "",
              "| model | onnx.load | onnxio.load (1 thread) | onnxio.load no_copy | onnx_ir.load "
              "| onnxruntime.InferenceSession (optimizations off) |",
              "|---|---:|---:|---:|---:|---:|"]
    for key in MODEL_PATHS:
        s = ort.get(f"session {key}")
        s_txt = fmt_t(med(s)) if isinstance(s, list) else (s or "n/a")
        io_key = "load many_nodes" if key == "many_nodes" else f"load {key} 1t"
        nc = "n/a" if key == "many_nodes" else fmt_t(m(io, f"load {key} no_copy"))
        lines.append(f"| {key} | {fmt_t(m(ox, f'load {key}'))} | {fmt_t(m(io, io_key))} | {nc} "
                     f"| {fmt_t(m(ir, f'load {key}'))} | {s_txt} |")

    def target(label, value, limit, ok):
        return f"| {label} | {value} | {limit} | {'PASS' if ok else '**MISS**'} |"

    t = ["| target | measured | limit | result |", "|---|---|---|---|"]
    a, b = m(ox, "load many_nodes"), m(io, "load many_nodes")
    if a and b:
        t.append(target("onnxio.load of the 200k-node model / onnx.load", f"{b:.4f} / {a:.4f} = {b / a:.3f}",
                        "<= 0.1", b / a <= 0.1))
    a, b = m(ox, "load gpt2"), m(io, "load gpt2 1t")
    if a and b:
        t.append(target("onnxio.load of gpt2.onnx (1 thread) / onnx.load", f"{b:.4f} / {a:.4f} = {b / a:.3f}",
                        "<= 0.6", b / a <= 0.6))
    c = m(io, "load gpt2 no_copy")
    if a and c:
        t.append(target("onnxio.load(no_copy=True) of gpt2.onnx vs onnx.load", f"{a / c:,.0f}x faster",
                        ">= 50x", a / c >= 50))
    a, b = m(ox, "walk many_nodes"), m(io, "walk many_nodes")
    if a and b:
        t.append(target("reading every node's op_type and inputs / onnx", f"{b:.4f} / {a:.4f} = {b / a:.3f}",
                        "<= 1.0", b / a <= 1.0))

    v = versions()
    section = "\n".join([
        BEGIN,
        "## Python: the onnxio package against onnx",
        "",
        f"Measured with `make bench-python` (`.venv/bin/python bench/bench_python.py --repeats {args.repeats}`), "
        f"medians of {args.repeats} runs after a warm-up, each library in a fresh process; files in the page cache.",
        f"Machine: {machine()}. onnx {v['onnx']}, onnxruntime {v['onnxruntime']}, onnx_ir {v['onnx_ir']}.",
        "",
        *t,
        "",
        *lines,
        "",
        "![onnxio vs onnx from Python](docs/bench_python.png)",
        END,
    ])
    print()
    print(section)
    if args.no_write:
        return
    write_section(section)
    draw_chart(chart_rows)
    print(f"\nwrote {os.path.relpath(BENCHMARKS_MD, ROOT)} and {os.path.relpath(CHART, ROOT)}")


def write_section(section):
    text = open(BENCHMARKS_MD).read() if os.path.exists(BENCHMARKS_MD) else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(BENCHMARKS_MD, "w") as f:
        f.write(text)


def draw_chart(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [r[0] for r in rows]
    ratios = [r[2] / r[1] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh(ys, ratios, color=["#2a7" if x <= 1 else "#c33" for x in ratios])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("time, onnxio / onnx (log scale; below 1 is faster)")
    for y, x in zip(ys, ratios):
        ax.text(x, y, f" {x:.3g}", va="center", fontsize=7)
    ax.set_title("onnxio package vs onnx package (medians)")
    fig.tight_layout()
    fig.savefig(CHART, dpi=110)


if __name__ == "__main__":
    main()
