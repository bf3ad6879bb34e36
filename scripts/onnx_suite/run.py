"""Runs the onnx package's own Python test suite twice, with the real onnx and
with `import onnx` resolved to onnxio (onnx_as_onnxio.py), and prints how
many of the tests that pass natively also pass on onnxio, file by file,
with the most common reasons of the others.

    .venv/bin/python scripts/onnx_suite/run.py                  every test file
    .venv/bin/python scripts/onnx_suite/run.py helper_test.py basic_test.py
    .venv/bin/python scripts/onnx_suite/run.py --reasons 40     more reasons

The tests are those of the onnx sdist of the installed version (pip
download onnx==<version> --no-binary :all:, from PyPI), extracted to
.cache/onnx-suite/. Not part of `make test`: it measures the target
"95% of the natively-passing tests pass" and takes a while. Each run's outcomes
are kept in .cache/onnx-suite/{native,onnxio}.xml and the summary in
.cache/onnx-suite/summary.json.
"""
import argparse
import collections
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import onnx

from outcomes import outcomes, pytest_command

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".cache" / "onnx-suite"


def tests_dir():
    """tests/python of the sdist of the installed onnx, downloaded once."""
    version = onnx.__version__
    src = WORK / f"onnx-{version}"
    if (src / "tests" / "python").is_dir():
        return src
    WORK.mkdir(parents=True, exist_ok=True)
    sdist = WORK / f"onnx-{version}.tar.gz"
    if not sdist.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                        "-d", str(WORK), f"onnx=={version}"], check=True)
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"onnx-{version}/tests/python/")]
        tar.extractall(WORK, members=members, filter="data")
    return src


def run(src, files, mode):
    xml = WORK / f"{mode}.xml"
    args, env = pytest_command(sys.executable, mode, xml)
    args += [str(Path("tests/python") / f) for f in files] or ["tests/python"]
    print(f"==> {mode}: pytest {' '.join(files) or 'tests/python'}", flush=True)
    subprocess.run(args, cwd=src, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return outcomes(xml)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="test files of tests/python (default: all)")
    ap.add_argument("--reasons", type=int, default=20, help="how many failure reasons to list")
    args = ap.parse_args()
    src = tests_dir()
    native = run(src, args.files, "native")
    ours = run(src, args.files, "onnxio")
    passing = [t for t, (r, _) in native.items() if r == "passed"]
    per_file = collections.defaultdict(lambda: [0, 0])
    reasons = collections.Counter()
    for t in passing:
        parts = t.split("::")[0].split(".")
        module = next((p for p in parts if p.endswith("_test")), parts[-1])
        per_file[module][0] += 1
        result, message = ours.get(t, ("missing", "not collected"))
        if result == "passed":
            per_file[module][1] += 1
        else:
            reasons[f"{result}: {message}"] += 1
    print(f"\n{'test file':40} {'native':>7} {'onnxio':>7}  share")
    for module, (n, k) in sorted(per_file.items()):
        print(f"{module:40} {n:7} {k:7}  {k / n:6.1%}")
    total = len(passing)
    ok = sum(k for _, k in per_file.values())
    print(f"{'all':40} {total:7} {ok:7}  {ok / max(total, 1):6.1%}")
    print(f"\nwhy the other {total - ok} fail on onnxio (most common first):")
    for reason, count in reasons.most_common(args.reasons):
        print(f"{count:6}  {reason}")
    summary = {"onnx": onnx.__version__, "files": args.files, "native_passed": total, "onnxio_passed": ok,
               "per_file": {m: {"native": n, "onnxio": k} for m, (n, k) in per_file.items()},
               "reasons": reasons.most_common()}
    (WORK / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
