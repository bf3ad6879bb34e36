#!/usr/bin/env python3
"""The benchmark from the user's side: loading and saving
float16 LLM-shaped models of several sizes with onnxio, against onnx (upb),
onnx_ir, safetensors and the physical limits of this machine (a read(2)
loop, cat, write + fsync), warm and cold, all in one run.

    make bench                                         # runs this with BENCH_USER_ARGS
    .venv/bin/python bench/bench_user.py [--sizes 0.5,3.5] [--repeats 3] [--no-chart]
    .venv/bin/python bench/bench_user.py --sizes 0.5,3.5,16     # the full run
    .venv/bin/python bench/bench_user.py --methods cat,"onnxio copy" --sizes 0.5 --repeats 1   # a quick look

Disk: a size takes about 4x its payload in .cache/models/user (kept between
runs; --remove-after drops it once measured) plus 1x for the saves: the 16
GiB size needs ~80 GiB free, and the run stops before making a model that
does not fit.

Models: scripts/make_llm.py makes each size once in .cache/models/user/
llm_<GIB>g/ (a 32-layer float16 decoder, 258 initializers, payload the
nearest to GIB GiB): the same tensors as one .onnx file, as .onnx + one
external data file, as .onnxz, and as .safetensors.

Every measurement runs in a fresh child process that imports one library
(numpy with it) and then, untimed, puts the files the operation reads in
the cache state asked for:
  cold  os.sync(), then posix_fadvise(POSIX_FADV_DONTNEED) on every file of
        the size's models, in every layout: a 16 GiB run in which each
        child evicted only its own files left in the cache what earlier
        children had read of the other layouts, and there a warm child
        found 22-100 % of the file it had just read still cached, and warm
        .onnxz copies of fully cached files took 7.5-12 s where external
        data took 2.6-5.4 s;
        fincore (util-linux) then tells how many of their bytes are still
        cached ("cached" in the JSON; a warning is printed above 1 %; when
        fincore is missing, eviction is not verified and the run says so);
  warm  the same, then every file read once with the read loop: each warm child
        finds the files cached the same way (pages an earlier child left,
        cached in other sizes, would otherwise stay and change the copy's
        speed).
In both states, as much new memory as the files hold (at most what is free
beside the page cache) is then touched and freed (see free page reporting
below).
Then one operation is timed (time.perf_counter around it):
  read loop         readinto() of 8 MiB at a time into one reused buffer, file after file
  cat               `cat FILES > /dev/null` (a child process)
  onnxio copy       onnxio.load(path): payloads copied, threads default (one per core,
                    two per core while reads wait on the device), ranges the page cache
                    does not hold read directly (direct_io); "1t": num_threads=1;
                    "buffered": direct_io=False. .onnxz copy loads check CRC-32 (the default)
  onnxio no_copy+touch  onnxio.load(path, no_copy=True), then one byte of every
                    4096 of every initializer read through numpy_helper.to_array (a view)
  onnx              onnx.load(path) (upb); single files only below 2 GiB (protobuf's limit)
  onnx_ir lazy+touch  onnx_ir.load(path), then every page of every initializer's
                    const_value.numpy() touched as above (single files below 2 GiB)
  safetensors load_file   safetensors.numpy.load_file(path)
  safetensors safe_open+touch  safe_open(path, "np"), get_tensor of every key, touched
and the child reports the seconds and its peak RSS growth (VmHWM after the
operation minus VmRSS before it; file pages mapped by the operation count).
Saves (the model loaded untimed from the external data layout, then saved into
an emptied scratch directory beside the models; a save writes new files, so
warm and cold do not apply): onnxio.save_model to .onnx, .onnx + external
data and .onnxz, with fsync (the default) and fsync=False; the physical
limits are write() of the same number of bytes from one 8 MiB buffer, with
and without fsync. Structure: the RSS growth of onnxio.load(path,
skip_raw_data=True) of the single file.

On a VM with free page reporting (its state is printed first), memory a
process frees goes back to the hypervisor, and the next process that
touches fresh memory pays a fault in the host for it: copies into new
memory then vary by 2-10x between children. Raising
/sys/module/page_reporting/parameters/min_free_ms (where the kernel has it)
for the run keeps freed memory in the guest, as on a machine without a
hypervisor, and so does raising max_waiting_mib above what a child frees:
memory freed past that much was reported without waiting (12 loads of
3.5 GiB in one process: 1,152 MiB reported with 1024, and half of one
layout's loads took twice the time; none with 16384). At 16 GiB a child
frees more than that (the evicted page cache, then its own copy), and a
run with 16384 handed over 400 GiB back; so for the full run, as root:

    echo 300000 > /sys/module/page_reporting/parameters/min_free_ms      # its maximum here
    echo 1048576 > /sys/module/page_reporting/parameters/max_waiting_mib

The run prints how much was handed back during it: even with these
settings it was 114 GiB in a 10-minute run at 16 GiB, and 4 GiB left free
for a minute took 7x as long to touch again as 4 GiB the process had just
freed. So each child touches and frees as much memory as the
files hold, or as is free beside the page cache, before the timer starts.

The figures are medians of --repeats children per operation and state (the
repeats interleaved: round 1 of everything, then round 2, ..., each round
in its own shuffled order, from a fixed seed). GiB/s is
payload bytes / s. Ratios: "/cat" against cat of the same files in the same
state, "/ext" against onnxio copy of the external data layout in the same
state. Then the targets print PASS or MISS (or "not measured").
Writes bench/out/bench_user.json (every run) and docs/bench_user.png
(seconds per GiB against size; unless --no-chart). The per-message
operations are bench/bench_messages.py (`make bench` runs it after this).
"""
import argparse
import datetime
import json
import mmap
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import make_llm  # noqa: E402  (stdlib and numpy only at import)

OUT_JSON = os.path.join(ROOT, "bench", "out", "bench_user.json")
SEED_ORDER = 14
CHART = os.path.join(ROOT, "docs", "bench_user.png")
CHUNK = 8 << 20
TWO_GIB = 2**31

LAYOUT_FILES = {"onnx": ["onnx"], "ext": ["ext", "ext_data"], "onnxz": ["onnxz"], "safetensors": ["safetensors"]}
LAYOUT_LABEL = {"onnx": ".onnx", "ext": ".onnx+ext", "onnxz": ".onnxz", "safetensors": ".safetensors"}
# (method, layouts); each is measured warm and cold.
LOADS = [
    ("read loop", ["onnx", "ext", "onnxz", "safetensors"]),
    ("cat", ["onnx", "ext", "onnxz", "safetensors"]),
    # The limit of a load that hands back its own copy: the same reads into
    # memory the process has not touched yet, which it must take from the
    # system (asked for huge pages, as onnxio's payload buffers are; on this
    # VM, memory not touched before costs up to ~1 s a GiB).
    ("read into new memory", ["onnx", "ext", "onnxz", "safetensors"]),
    ("onnxio copy", ["onnx", "ext", "onnxz"]),
    ("onnxio copy 1t", ["onnx", "ext", "onnxz"]),
    ("onnxio copy buffered", ["onnx", "ext", "onnxz"]),
    ("onnxio no_copy+touch", ["onnx", "ext", "onnxz"]),
    ("onnx", ["onnx", "ext"]),
    ("onnx_ir lazy+touch", ["onnx", "ext"]),
    ("safetensors load_file", ["safetensors"]),
    ("safetensors safe_open+touch", ["safetensors"]),
]
SAVES = [
    ("write+fsync", ["onnx", "ext", "onnxz"]),
    ("write", ["onnx", "ext", "onnxz"]),
    ("onnxio save", ["onnx", "ext", "onnxz"]),
    ("onnxio save fsync=False", ["onnx", "ext", "onnxz"]),
]
STATES = ("warm", "cold")


# ---- the child ----------------------------------------------------------------

def page_reporting():
    """The VM's free page reporting, when the kernel has it: freed memory
    handed back to the hypervisor, whose first touch after that costs a
    fault in the host (up to ~1 s a GiB on this project's VMs). None on
    machines without it. reported_kib counts what was handed back since
    boot (where the kernel has it): the run prints how much of it was its own."""
    base = "/sys/module/page_reporting/parameters/"
    try:
        with open(base + "page_reporting_order") as f:
            order = int(f.read())
    except OSError:
        return None
    found = {"order": order}
    for name in ("min_free_ms", "max_waiting_mib", "reported_kib"):
        try:
            with open(base + name) as f:
                found[name] = int(f.read())
        except OSError:
            found[name] = None
    return found


def _proc_kib(field, path="/proc/self/status"):
    """A "Field:   N kB" line of /proc/self/status or /proc/meminfo, in KiB."""
    with open(path) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _read_loop(files, buf):
    mv = memoryview(buf)
    n = 0
    for p in files:
        with open(p, "rb", buffering=0) as f:
            while True:
                k = f.readinto(mv)
                if not k:
                    break
                n += k
    return n


def _write_loop(path, nbytes, buf, fsync):
    mv = memoryview(buf)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = nbytes
        while left:
            left -= os.write(fd, mv[:min(left, len(mv))])
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _fincore(files):
    """Bytes of `files` in the page cache, or None without fincore."""
    if not shutil.which("fincore"):
        return None
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *files],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(x) for x in out.split())


def _memory_in_guest(nbytes):
    """Touches `nbytes` of new memory and frees it, or as much of it as is
    free beside the page cache (MemFree less 1 GiB: a warm child's files
    stay cached): the operation's fresh memory, and the page cache a cold
    read fills, then come from pages the guest has just used. Otherwise they
    may be pages the guest gave back to the host (free page reporting),
    whose first touch costs a fault in the host: a warm child that follows
    a cold one (whose load took the pages its eviction freed) paid it for
    all of its memory (warm 3.5 GiB copies took 0.6-5.1 s, cold 1.6-2.0 s),
    and here 4 GiB of memory left free (60 s, or by another process) took
    3.7-4.3 s to touch, against 0.5 s when just freed by the same process. Done in both states, after the cache state is set. The
    process's peak RSS (VmHWM) is reset after it (clear_refs 5, Linux 4.0),
    so that the peak measured is the operation's; where it cannot be,
    nothing is touched."""
    import numpy as np
    nbytes = min(nbytes, _proc_kib("MemFree", "/proc/meminfo") * 1024 - (1 << 30)) // 4096 * 4096
    if nbytes <= 0:
        return
    try:
        clear = open("/proc/self/clear_refs", "w")
    except OSError:
        return
    with clear:
        mem = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
        mem.madvise(mmap.MADV_HUGEPAGE)
        np.frombuffer(mem, dtype=np.uint8)[::4096] = 1
        mem.close()
        clear.write("5")


def _touch(arr):
    b = arr.reshape(-1).view("uint8")
    return int(b[::4096].sum()) if b.size else 0


def child(spec):
    method, files, state, path = spec["method"], spec["files"], spec["state"], spec["path"]
    op = None
    if method.startswith("onnxio"):
        import onnxio
        from onnxio import numpy_helper
        if method == "onnxio copy":
            op = lambda: onnxio.load(path)  # noqa: E731
        elif method == "onnxio copy 1t":
            op = lambda: onnxio.load(path, num_threads=1)  # noqa: E731
        elif method == "onnxio copy buffered":
            op = lambda: onnxio.load(path, direct_io=False)  # noqa: E731
        elif method == "onnxio no_copy+touch":
            def op():
                m = onnxio.load(path, no_copy=True)
                s = sum(_touch(numpy_helper.to_array(t)) for t in m.graph.initializer)
                return m, s
        elif method == "onnxio structure":
            op = lambda: onnxio.load(path, skip_raw_data=True)  # noqa: E731
        elif method.startswith("onnxio save"):
            model = onnxio.load(spec["source"])
            kwargs = {"fsync": "fsync=False" not in method}
            if spec["layout"] == "ext":
                kwargs.update(save_as_external_data=True, location=os.path.basename(path) + ".data")
            op = lambda: onnxio.save_model(model, path, **kwargs)  # noqa: E731
    elif method == "onnx":
        import onnx
        op = lambda: onnx.load(path)  # noqa: E731
    elif method == "onnx_ir lazy+touch":
        import onnx_ir

        def op():
            m = onnx_ir.load(path)
            s = sum(_touch(v.const_value.numpy()) for v in m.graph.initializers.values())
            return m, s
    elif method == "safetensors load_file":
        import safetensors.numpy
        op = lambda: safetensors.numpy.load_file(path)  # noqa: E731
    elif method == "safetensors safe_open+touch":
        from safetensors import safe_open

        def op():
            s = 0
            with safe_open(path, "np") as f:
                for k in f.keys():
                    s += _touch(f.get_tensor(k))
            return s
    buf = bytearray(CHUNK)
    if method == "read loop":
        op = lambda: _read_loop(files, buf)  # noqa: E731
    elif method == "read into new memory":
        def op():
            # Private anonymous memory, as onnxio's payload buffers (mmap's
            # default for -1 is MAP_SHARED: shared memory, 4 KiB pages, and
            # 2.5x slower to fill here).
            mem = mmap.mmap(-1, max(1, sum(os.path.getsize(p) for p in files)), flags=mmap.MAP_PRIVATE)
            mem.madvise(mmap.MADV_HUGEPAGE)  # as onnxio's payload buffers from 2 MiB
            mv, at = memoryview(mem), 0
            for p in files:
                with open(p, "rb", buffering=0) as f:
                    while k := f.readinto(mv[at:at + CHUNK]):
                        at += k
            mv.release()
            return mem
    elif method == "cat":
        def op():
            with open(os.devnull, "wb") as null:
                subprocess.run(["cat", *files], stdout=null, check=True)
    elif method in ("write+fsync", "write"):
        buf[:] = os.urandom(CHUNK)
        op = lambda: _write_loop(path, spec["bytes"], buf, method == "write+fsync")  # noqa: E731
    if op is None:
        raise SystemExit(f"unknown method {method!r}")

    evict = sorted(set(files) | set(spec.get("evict", ())))
    if evict:
        os.sync()
        for p in evict:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    if state == "warm":
        _read_loop(files, buf)
    if files:
        _memory_in_guest(sum(os.path.getsize(p) for p in files))
    cached = _fincore(files) if files else None
    rss0 = _proc_kib("VmRSS")
    t0 = time.perf_counter()
    result = op()
    seconds = time.perf_counter() - t0
    hwm = _proc_kib("VmHWM")
    rss1 = _proc_kib("VmRSS")
    del result
    print(json.dumps({"seconds": seconds, "cached": cached, "peak_rss_delta": (hwm - rss0) * 1024,
                      "rss_delta": (rss1 - rss0) * 1024}))


# ---- the parent ---------------------------------------------------------------

def run_child(spec):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return {"error": last[:200]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def layout_paths(mdir, manifest, layout):
    return [os.path.join(mdir, manifest["files"][k]) for k in LAYOUT_FILES[layout]]


def skip_reason(method, layout, manifest):
    if method in ("onnx", "onnx_ir lazy+touch") and layout == "onnx" and manifest["file_bytes"].get("onnx", 0) >= TWO_GIB:
        return "skipped: a single file of 2 GiB or more (protobuf's limit)"
    return None


def summarize(runs):
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"] if runs else "not run", "runs": runs}
    out = {"runs": [r["seconds"] for r in ok], "median": statistics.median(r["seconds"] for r in ok),
           "peak_rss_delta": statistics.median(r["peak_rss_delta"] for r in ok),
           "rss_delta": statistics.median(r["rss_delta"] for r in ok)}
    cached = [r["cached"] for r in ok if r["cached"] is not None]
    out["cached"] = max(cached) if cached else None
    if len(ok) < len(runs):
        out["errors"] = [r["error"] for r in runs if "error" in r]
    return out


def measure_size(gib, args, log):
    # Disk: the four layouts (when not yet made) and one layout's save in the scratch directory.
    payload = make_llm.payload_bytes(make_llm.choose_hidden(gib))
    present = os.path.exists(os.path.join(make_llm.model_dir(args.models, gib), "manifest.json"))
    need = int((1.05 if present else len(args.layouts_list) + 1.1) * payload)
    os.makedirs(args.models, exist_ok=True)
    free = shutil.disk_usage(args.models).free
    if free < need:
        raise SystemExit(f"bench_user: {gib:g} GiB needs {need / 2**30:.1f} GiB of free disk "
                         f"({'the scratch saves' if present else 'four layouts and the scratch saves'}); "
                         f"{args.models} has {free / 2**30:.1f} GiB (--remove-after drops each size's "
                         f"models once measured)")
    # Made in a child process: this one imports none of the libraries it measures.
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm.py"), "--gib", f"{gib:g}",
                    "--out-dir", args.models, "--layouts", ",".join(args.layouts_list)], check=True, stdout=sys.stderr)
    mdir = make_llm.model_dir(args.models, gib)
    with open(os.path.join(mdir, "manifest.json")) as f:
        manifest = json.load(f)
    scratch = os.path.join(args.models, "scratch")
    # Every child evicts every file of this size's models, not only its own
    # (see the module's docstring).
    evict = sorted(os.path.join(d, n) for d, _, names in os.walk(mdir) for n in names)
    jobs = []  # (kind, key, state, spec)
    for method, layouts in LOADS:
        for layout in layouts:
            if (method not in args.methods_set and args.methods_set) or layout not in args.layouts_list:
                continue
            if skip_reason(method, layout, manifest):
                continue
            files = layout_paths(mdir, manifest, layout)
            for state in STATES:
                jobs.append(("load", f"{method} | {layout}", state,
                             {"method": method, "files": files, "state": state, "path": files[0], "evict": evict}))
    for method, layouts in SAVES:
        for layout in layouts:
            if (method not in args.methods_set and args.methods_set) or layout not in args.layouts_list \
                    or "ext" not in args.layouts_list:  # a save's source is the ext layout
                continue
            name = {"onnx": "model.onnx", "ext": "model.onnx", "onnxz": "model.onnxz"}[layout]
            nbytes = sum(os.path.getsize(p) for p in layout_paths(mdir, manifest, layout))
            jobs.append(("save", f"{method} | {layout}", "save",
                         {"method": method, "files": [], "state": "save", "path": os.path.join(scratch, name),
                          "layout": layout, "bytes": nbytes, "evict": evict,
                          "source": layout_paths(mdir, manifest, "ext")[0]}))
    runs = {}
    n = len(jobs) * args.repeats
    i = 0
    t_start = time.perf_counter()
    # Each round in its own order (a fixed seed): a child that runs right
    # after one that freed much memory pays the host's faults for it
    # (free page reporting), and in a fixed order that was always the
    # same layout (.onnx, after "read into new memory" of .onnxz).
    order = random.Random(SEED_ORDER)
    for r in range(args.repeats):
        round_jobs = list(jobs)
        order.shuffle(round_jobs)
        for kind, key, state, spec in round_jobs:
            i += 1
            if kind == "save":
                shutil.rmtree(scratch, ignore_errors=True)
                os.makedirs(scratch)
            res = run_child(spec)
            if kind == "save":
                shutil.rmtree(scratch, ignore_errors=True)
                os.sync()
            runs.setdefault((kind, key, state), []).append(res)
            if args.verbose:
                log(f"  [{i}/{n}] {key} {state}: {res}")
        log(f"  round {r + 1}/{args.repeats} done ({time.perf_counter() - t_start:.0f} s)")
    structure = run_child({"method": "onnxio structure", "files": layout_paths(mdir, manifest, "onnx"),
                           "state": "warm", "path": layout_paths(mdir, manifest, "onnx")[0]})
    res = {"manifest": manifest, "load": {}, "save": {}, "skipped": {},
           "structure_rss_bytes": structure.get("rss_delta"),
           "structure_file_bytes": manifest["file_bytes"]["ext"]}
    if args.remove_after:
        shutil.rmtree(mdir)
    for (kind, key, state), rr in runs.items():
        res[kind].setdefault(key, {})[state] = summarize(rr)
    for method, layouts in LOADS:
        for layout in layouts:
            why = skip_reason(method, layout, manifest)
            if why:
                res["skipped"][f"{method} | {layout}"] = why
    return res


def med(res, kind, key, state):
    return res[kind].get(key, {}).get(state, {}).get("median")


def fmt(x, spec):
    return format(x, spec) if x is not None else "-"


def print_size(gib, res):
    m = res["manifest"]
    payload = m["payload_bytes"]
    gb = payload / 2**30
    print(f"\n== {gib:g} GiB: payload {payload:,} bytes ({gb:.3f} GiB), hidden {m['hidden']}, "
          f"{m['initializers']} initializers ==")
    hdr = "".join(f" {s + ' s':>9} {'GiB/s':>6} {'/cat':>6} {'/ext':>6}" for s in STATES)
    print(f"{'load':40}{hdr} {'peak RSS':>9} {'cached':>7}")
    warns = []
    for method, layouts in LOADS:
        for layout in layouts:
            key = f"{method} | {layout}"
            label = f"{method} {LAYOUT_LABEL[layout]}"
            if key in res["skipped"]:
                print(f"{label:40} {res['skipped'][key]}")
                continue
            if key not in res["load"]:
                continue
            cols = ""
            for state in STATES:
                entry = res["load"][key].get(state, {})
                s = entry.get("median")
                if s is None:
                    cols += f" {'error':>9} {'':>6} {'':>6} {'':>6}"
                    warns.append(f"{label} {state}: {entry.get('error')}")
                    continue
                cat = med(res, "load", f"cat | {layout}", state)
                ext = med(res, "load", "onnxio copy | ext", state)
                cols += (f" {s:9.3f} {gb / s:6.2f} {fmt(s / cat if cat else None, '6.2f'):>6}"
                         f" {fmt(s / ext if ext else None, '6.2f'):>6}")
            cold = res["load"][key].get("cold", {})
            peak = cold.get("peak_rss_delta")
            cached = cold.get("cached")
            fbytes = sum(m["file_bytes"][k] for k in LAYOUT_FILES[layout])
            if cached is not None and cached > 0.01 * fbytes:
                warns.append(f"{label} cold: {cached / fbytes:.1%} of its files still cached after eviction")
            print(f"{label:40}{cols} {fmt(peak / 2**20 if peak is not None else None, '7.0f')}Mi "
                  f"{fmt(cached / fbytes * 100 if cached is not None else None, '6.1f')}%")
    print(f"{'save (new files; no cache state)':40} {'s':>9} {'GiB/s':>6} {'/write':>6} {'/ext':>6}")
    for method, layouts in SAVES:
        for layout in layouts:
            key = f"{method} | {layout}"
            if key not in res["save"]:
                continue
            entry = res["save"][key]["save"]
            s = entry.get("median")
            label = f"{method} {LAYOUT_LABEL[layout]}"
            if s is None:
                print(f"{label:40} error: {entry.get('error')}")
                continue
            ref = med(res, "save", f"{'write' if 'False' in method or method == 'write' else 'write+fsync'} | {layout}",
                      "save")
            ext = med(res, "save", f"onnxio save{' fsync=False' if 'False' in method else ''} | ext", "save")
            print(f"{label:40} {s:9.3f} {gb / s:6.2f} {fmt(s / ref if ref else None, '6.2f'):>6}"
                  f" {fmt(s / ext if ext and method.startswith('onnxio') else None, '6.2f'):>6}")
    print("peak RSS: growth during the cold load (VmHWM - VmRSS before); cached: % of the files' bytes in the "
          "page cache when the cold timer started (fincore)")
    sr = res.get("structure_rss_bytes")
    print(f"structure: {fmt(sr / 2**20 if sr is not None else None, '.1f')} MiB RSS "
          f"(onnxio.load skip_raw_data=True), {res['structure_file_bytes'] / 2**20:.2f} MiB serialized")
    for w in warns:
        print("warning:", w)


def check(results, sizes):
    """The targets: (label, value, limit, verdict)."""
    lines = []

    def add(label, value, limit):
        if value is None:
            lines.append((label, None, limit, "not measured"))
        else:
            lines.append((label, value, limit, "PASS" if value <= limit else "MISS"))

    for gib in sizes:
        res = results[f"{gib:g}"]
        tag = f"{gib:g} GiB"
        for layout in ("onnx", "ext", "onnxz"):
            s, cat = med(res, "load", f"onnxio copy | {layout}", "cold"), med(res, "load", f"cat | {layout}", "cold")
            add(f"{tag}: cold onnxio copy {LAYOUT_LABEL[layout]} / cat of the same files",
                s / cat if s and cat else None, 1.15)
            new = med(res, "load", f"read into new memory | {layout}", "cold")
            add(f"{tag}: cold onnxio copy {LAYOUT_LABEL[layout]} / read into new memory",
                s / new if s and new else None, 1.15)
        for layout in ("onnx", "ext"):
            s = med(res, "load", f"onnxio no_copy+touch | {layout}", "cold")
            ir = med(res, "load", f"onnx_ir lazy+touch | {layout}", "cold")
            if f"onnx_ir lazy+touch | {layout}" in res["skipped"]:
                continue
            add(f"{tag}: cold onnxio no_copy+touch {LAYOUT_LABEL[layout]} / onnx_ir lazy+touch",
                s / ir if s and ir else None, 1.0)
        for state in STATES:
            z, e = med(res, "load", "onnxio copy | onnxz", state), med(res, "load", "onnxio copy | ext", state)
            add(f"{tag}: {state} onnxio copy .onnxz (CRC on) / .onnx+ext", z / e if z and e else None, 1.1)
        z, e = med(res, "save", "onnxio save | onnxz", "save"), med(res, "save", "onnxio save | ext", "save")
        add(f"{tag}: onnxio save .onnxz / .onnx+ext (fsync)", z / e if z and e else None, 1.1)
        payload = res["manifest"]["payload_bytes"]
        sr = res.get("structure_rss_bytes")
        for layout in ("onnx", "ext", "onnxz"):
            peak = res["load"].get(f"onnxio copy | {layout}", {}).get("cold", {}).get("peak_rss_delta")
            add(f"{tag}: peak RSS of onnxio copy {LAYOUT_LABEL[layout]} / (payload + structure)",
                peak / (payload + sr) if peak is not None and sr is not None else None, 1.05)
    for want in (0.5, 3.5, 16):
        if not any(abs(g - want) < 1e-9 or (want == 16 and g >= 16) for g in sizes):
            lines.append((f"{'>= 16' if want == 16 else f'{want:g}'} GiB: the targets above", None, None,
                          "not measured (add the size to --sizes)"))
    small = [g for g in sizes if abs(g - 0.5) < 1e-9]
    big = [g for g in sizes if g >= 16]
    for layout in ("onnx", "ext", "onnxz"):
        label = f"cold onnxio copy {LAYOUT_LABEL[layout]}: s/GiB at >= 16 GiB / at 0.5 GiB"
        if not small or not big:
            add(label, None, 1.2)
            continue
        a, b = results[f"{small[0]:g}"], results[f"{max(big):g}"]
        sa, sb = med(a, "load", f"onnxio copy | {layout}", "cold"), med(b, "load", f"onnxio copy | {layout}", "cold")
        pa, pb = a["manifest"]["payload_bytes"] / 2**30, b["manifest"]["payload_bytes"] / 2**30
        add(label.replace(">= 16", f"{max(big):g}"), (sb / pb) / (sa / pa) if sa and sb else None, 1.2)
        # The storage's own ratio, for reading the one above: cat of the
        # same files at the same two sizes (no target).
        ca, cb = med(a, "load", f"cat | {layout}", "cold"), med(b, "load", f"cat | {layout}", "cold")
        if ca and cb:
            lines.append((f"  (cat {LAYOUT_LABEL[layout]}: s/GiB at {max(big):g} GiB / at 0.5 GiB, the storage's own)",
                          (cb / pb) / (ca / pa), None, "reference"))
    return lines


def chart(results, sizes, path):
    """Seconds per GiB against payload size: colour = method, line style and
    marker = layout; one panel each for warm loads, cold loads and saves."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FormatStrFormatter, NullFormatter
    xs = {f"{g:g}": results[f"{g:g}"]["manifest"]["payload_bytes"] / 2**30 for g in sizes}
    methods = [m for m, _ in LOADS] + [m for m, _ in SAVES]
    palette = ["#000000", "#7f7f7f", "#d62728", "#ff7f0e", "#e377c2", "#1f77b4", "#17becf", "#2ca02c", "#bcbd22",
               "#000000", "#7f7f7f", "#d62728", "#ff7f0e"]  # saves reuse the colours of their counterparts
    colour = {m: palette[i % len(palette)] for i, m in enumerate(dict.fromkeys(methods))}
    style = {"onnx": ("-", "o"), "ext": ("--", "s"), "onnxz": (":", "^"), "safetensors": ("-.", "D")}
    fig, axes = plt.subplots(1, 3, figsize=(18, 7.5))
    for ax, (kind, state, title) in zip(axes, (("load", "warm", "load, warm"), ("load", "cold", "load, cold (evicted)"),
                                               ("save", "save", "save (new files)"))):
        for method, layouts in (LOADS if kind == "load" else SAVES):
            for layout in layouts:
                key = f"{method} | {layout}"
                pts = [(xs[g], med(results[g], kind, key, state) / xs[g]) for g in xs
                       if med(results[g], kind, key, state)]
                if pts:
                    ls, mk = style[layout]
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=ls, marker=mk,
                            color=colour[method])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sorted(xs.values()))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%.3g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(FormatStrFormatter("%.3g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("payload (GiB)")
        ax.set_ylabel("seconds per GiB (lower is faster)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    handles = [Line2D([], [], color=colour[m], lw=3, label=m) for m in methods]
    handles[len(LOADS):] = [Line2D([], [], color=colour[m], lw=3, label=f"save: {m}") for m, _ in SAVES]
    handles += [Line2D([], [], color="black", linestyle=ls, marker=mk, label=LAYOUT_LABEL[k])
                for k, (ls, mk) in style.items()]
    fig.legend(handles=handles, loc="lower center", ncol=6, fontsize=8, frameon=False)
    fig.suptitle(f"bench/bench_user.py: medians, {os.cpu_count()} cores "
                 f"(colour: method; line and marker: layout)")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="0.5,3.5", help="payload sizes in GiB, comma-separated (default 0.5,3.5)")
    ap.add_argument("--repeats", type=int, default=3, help="children per operation and state (default 3)")
    ap.add_argument("--models", default=make_llm.DEFAULT_OUT, help="where the models are cached")
    ap.add_argument("--methods", default="", help="only these methods (comma-separated; for quick checks)")
    ap.add_argument("--layouts", default="", help="only these layouts (comma-separated: onnx, ext, onnxz, "
                    "safetensors; the models are made in these only): a 16 GiB run fits the disk with onnx,ext")
    ap.add_argument("--remove-after", action="store_true",
                    help="delete each size's models once measured (disk: the 16 GiB model takes ~64 GiB)")
    ap.add_argument("--no-chart", action="store_true", help="do not write docs/bench_user.png")
    ap.add_argument("--json", default=OUT_JSON, help=f"results file (default {os.path.relpath(OUT_JSON, ROOT)})")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every child's result")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(json.loads(args.child))
    args.methods_set = {m.strip() for m in args.methods.split(",") if m.strip()}
    args.layouts_list = [x.strip() for x in args.layouts.split(",") if x.strip()] or list(make_llm.ALL_LAYOUTS)
    sizes = [float(s) for s in args.sizes.split(",")]

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    have_fincore = shutil.which("fincore") is not None
    print(f"bench_user: sizes {', '.join(f'{g:g}' for g in sizes)} GiB, {args.repeats} repeats, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}")
    if not have_fincore:
        print("eviction NOT verified: fincore (util-linux) is not installed")
    reporting = page_reporting()
    if reporting:
        print(f"free page reporting: freed blocks of 2^{reporting['order']} pages go back to the hypervisor after "
              f"{reporting['min_free_ms']} ms free, or at once past {reporting['max_waiting_mib']} MiB freed; "
              "fresh memory then costs host faults on first touch")
    results = {}
    t0 = time.perf_counter()
    for gib in sizes:
        log(f"size {gib:g} GiB")
        results[f"{gib:g}"] = measure_size(gib, args, log)
        print_size(gib, results[f"{gib:g}"])
    targets = check(results, sizes)
    after = (page_reporting() or {}).get("reported_kib")
    if after is not None and reporting.get("reported_kib") is not None:
        reporting["reported_during_run_kib"] = after - reporting["reported_kib"]
        print(f"\nfree page reporting during the run: {reporting['reported_during_run_kib'] / 2**20:.1f} GiB handed "
              "back to the hypervisor (each GiB of it cost host faults when touched again)")
    print("\ntargets (medians of this run):")
    for label, value, limit, verdict in targets:
        v = f"{value:.3f}" if value is not None else "-"
        lim = f"<= {limit:g}" if limit is not None else ""
        print(f"  {label:78} {v:>7} {lim:>8}  {verdict}")
    versions = {}
    for mod in ("onnxio", "onnx", "onnx_ir", "safetensors", "numpy"):
        try:
            from importlib.metadata import version
            versions[mod] = version(mod)
        except Exception:  # noqa: BLE001 - a missing package is recorded as such
            versions[mod] = None
    doc = {"command": " ".join([os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT)
                                else sys.executable, os.path.relpath(__file__, ROOT), *sys.argv[1:]]),
           "date": datetime.datetime.now().isoformat(timespec="seconds"), "cores": os.cpu_count(),
           "machine": platform.platform(), "versions": versions, "eviction_verified": have_fincore,
           "page_reporting": reporting,
           "repeats": args.repeats, "seconds": time.perf_counter() - t0, "sizes": results,
           "targets": [{"target": lab, "value": v, "limit": lim, "verdict": ver} for lab, v, lim, ver in targets]}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwrote {os.path.relpath(args.json, ROOT)}", end="")
    if not args.no_chart:
        chart(results, sizes, CHART)
        print(f" and {os.path.relpath(CHART, ROOT)}", end="")
    print(f" ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
