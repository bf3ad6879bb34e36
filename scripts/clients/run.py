"""Runs the test suites of third-party packages that use onnx heavily
(converters, optimizers, graph builders) twice, with the real onnx and with
`import onnx` resolved to onnxio, and prints, package by package, how many
of the tests that pass natively also pass on onnxio, with the causes of the
others grouped (exception type and first message line, most common first).

    python3 scripts/clients/run.py                    every package below
    python3 scripts/clients/run.py spox onnxslim      some of them
    python3 scripts/clients/run.py --examples 3       failing test ids and
                                                      traceback lines per cause

The packages, their pinned versions, their test files and the packages their
tests need are in PACKAGES (the one place to change them). Each package's
sdist comes from PyPI (pip download --no-binary :all:) and its tests run
from the extracted sdist; the package itself is installed from that sdist.
Packages whose sdist has no tests (onnx-ir, onnxscript) are run from their
git repository at the release tag (`git archive`), whose tests sit beside
the package's modules, which pytest imports from there: the repository is
a local clone given with --source NAME=PATH (this machine reaches PyPI
only), and nothing of it is kept in this tree.

Environment: .cache/clients/venv, made here, sees the packages of the
repository's .venv (made by scripts/bootstrap.sh: onnx, onnxruntime, torch,
pytest...) through a .pth file and gets on top of them the tests' extra
packages (EXTRA) and the sdists, with --no-deps. onnxio is the tree's:
installed into that venv from this checkout (pip install
--no-build-isolation --no-deps, incremental in build/python/ as for `make
python-install`); --venv-onnxio uses the one already in .venv instead.

The onnxio run is the onnx suite's (scripts/onnx_suite/outcomes.py): pytest
with the plugin scripts/onnx_suite/onnx_as_onnxio.py (-p onnx_as_onnxio),
which makes every `import onnx` give what `import onnxio as onnx` gives;
nothing of the packages is patched. Needs the network and takes a while
(every package, both runs: about 5 minutes on 2 cores, most of it ndonnx's
5,000 tests): not part of `make test`.
Each run's outcomes are kept in .cache/clients/<package>/{native,onnxio}.xml
and the summary in .cache/clients/summary.json.
"""
import argparse
import collections
import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".cache" / "clients"
VENV = WORK / "venv"
sys.path.insert(0, str(ROOT / "scripts" / "onnx_suite"))
from outcomes import cause, key_lines, outcomes, pytest_command  # noqa: E402

# The tests' packages that .venv does not have, for every package below.
EXTRA = ["pytest-timeout==2.4.0"]

# name: version (PyPI sdist), extra packages its tests need, test paths
# (relative to the sdist's root) and those left out (--ignore).
# "repo": the tag of the package's git repository whose tree is tested
# (from --source NAME=PATH) instead of an sdist; "root": the directory of
# that tree the package is imported from (a .pth file of the venv names
# it, so that both runs, and onnxio.ir, import the same package as the
# tests beside its modules).
# Not here: onnxconverter-common (its last sdist, 1.14.0, imports
# onnx.mapping, which onnx 1.23 no longer has: 3 tests pass natively);
# onnx-graphsurgeon (no sdist with tests on PyPI); onnxmltools (no tests in
# its sdist).
PACKAGES = {
    # Graph builder: builds models node by node from onnx's schemas
    # (onnx.defs), runs type inference and the reference evaluator.
    "spox": {
        "version": "0.18.2",
        "extra": [],
        "tests": ["tests"],
        "ignore": [],
    },
    # Array library (the array API standard) on spox: every operation
    # builds ONNX nodes; the results are computed by onnxruntime.
    "ndonnx": {
        "version": "0.23.0",
        "extra": ["spox==0.18.2", "hypothesis==6.170.17", "sortedcontainers==2.4.0", "ndindex==1.10.1"],
        "tests": ["tests"],
        "ignore": [],
    },
    # Optimizer: its own copy of onnx-graphsurgeon, constant folding,
    # fusions, symbolic shape inference. Left out: the tests that need model
    # zoos under /data, torchvision, timm, ultralytics or optimum, and
    # test_folder.py (a command that parses sys.argv when imported), and
    # test_shape_folding.py (which of its tests pass changes from one run
    # to the next, natively too).
    "onnxslim": {
        "version": "0.1.98",
        "extra": ["colorama==0.4.6"],
        "tests": ["tests"],
        "ignore": ["tests/test_amd.py", "tests/test_benchmark.py", "tests/test_modelzoo.py",
                   "tests/test_nvidia.py", "tests/test_onnx_nets.py", "tests/test_ultralytics.py",
                   "tests/test_issue_reproducers.py", "tests/test_folder.py", "tests/test_shape_folding.py",
                   "tests/exporters"],
    },
    # Converter: scikit-learn to ONNX. The whole suite (1,071 tests) takes
    # more than 10 minutes a run on 2 cores; these files cover the
    # converter's core (topology, parser, options, variable names, the
    # algebra on onnx.helper with If and Scan subgraphs, onnx_helper's
    # load/save, the optimisation of the graph) and converters of several
    # kinds (linear, trees, forests, k-means, MLP, scalers, encoders, text
    # with string tensors, pipelines), each model run with onnxruntime.
    "skl2onnx": {
        "version": "1.20.0",
        "extra": ["scikit-learn==1.8.0", "scipy==1.17.1", "pandas==2.3.3", "joblib==1.6.0", "cloudpickle==3.1.3",
                  "threadpoolctl==3.8.0", "pytz==2026.6", "tzdata==2026.6"],
        "tests": [f"tests/test_{f}.py" for f in (
            "algebra_onnx_operators", "algebra_onnx_operators_if", "algebra_onnx_operators_scan",
            "algebra_symbolic", "algebra_to_onnx", "topology_prune", "parsing_options", "convert_options",
            "raw_name", "variable_names", "optimisation", "onnx_helper", "onnx_rare_helper", "utils_sklearn",
            "sklearn_glm_regressor_converter", "sklearn_decision_tree_converters",
            "sklearn_random_forest_converters", "sklearn_k_means_converter", "sklearn_mlp_converter",
            "sklearn_scaler_converter", "sklearn_one_hot_encoder_converter", "sklearn_label_encoder_converter",
            "sklearn_tfidf_vectorizer_converter", "sklearn_pipeline")],
        "ignore": [],
    },
    # The IR that torch's ONNX exporter (dynamo=True) and onnxscript build
    # models with: reads and writes protos field by field, generically.
    # Left out: the tests that need the network (model hubs).
    "onnx-ir": {
        "version": "1.0.0",
        "repo": "v1.0.0",
        "root": "src",
        "extra": ["sympy==1.14.0", "mpmath==1.3.0"],
        "tests": ["src"],
        "ignore": [],
    },
    # torch's exporter's function library and optimizer on onnx-ir. Left
    # out, for packages the tests need that are not installed here:
    # transformers (the model tests under tools/ and the torch_lib
    # e2e tests), and torchvision.
    "onnxscript": {
        "version": "0.7.1",
        "repo": "v0.7.1",
        "root": ".",
        "extra": ["expecttest==0.1.6", "hypothesis==6.170.17", "sortedcontainers==2.4.0",
                  "pytest-subtests==0.15.0", "pyyaml==6.0.3", "sympy==1.14.0", "mpmath==1.3.0"],
        "tests": ["onnxscript"],
        "ignore": ["onnxscript/function_libs/torch_lib/ops", "onnxscript/tools"],
    },
}

PER_TEST_TIMEOUT = 300  # seconds (pytest-timeout): a hung test fails, the run goes on
PER_RUN_TIMEOUT = 3600  # seconds: the most one pytest run may take


def sh(*args, **kw):
    print("   $", " ".join(map(str, args)), flush=True)
    subprocess.run([str(a) for a in args], check=True, **kw)


def python():
    return VENV / "bin" / "python"


def make_venv(venv_onnxio):
    """.cache/clients/venv: sees .venv's packages, has EXTRA and every
    package's extras (once; redone when the list changes), and the tree's
    onnxio (unless venv_onnxio)."""
    main_sp = sorted((ROOT / ".venv").glob("lib/python3*/site-packages"))
    if not main_sp:
        sys.exit(f"{ROOT / '.venv'} has no site-packages: run scripts/bootstrap.sh (make bootstrap) first")
    if not python().exists():
        sh(sys.executable, "-m", "venv", VENV)
    sp = next(VENV.glob("lib/python3*/site-packages"))
    # addsitedir (not a plain path line) so that .venv's own .pth files apply too.
    (sp / "zz_repo_venv.pth").write_text(f"import site; site.addsitedir({str(main_sp[0])!r})\n")
    wanted = sorted(set(EXTRA + [p for spec in PACKAGES.values() for p in spec["extra"]]))
    stamp = VENV / ".extra"
    if not stamp.exists() or stamp.read_text() != "\n".join(wanted):
        sh(python(), "-m", "pip", "install", "-q", "--no-deps", *wanted)
        stamp.write_text("\n".join(wanted))
    if venv_onnxio:
        for leftover in sp.glob("onnxio*"):
            sh("rm", "-rf", leftover)
    else:
        print("==> onnxio: pip install this tree into .cache/clients/venv", flush=True)
        sh(python(), "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--force-reinstall", ROOT)
    out = subprocess.run([str(python()), "-c", "import onnx, onnxio; print(onnxio.__file__, onnxio.__version__, "
                          "onnx.__file__, onnx.__version__)"], cwd="/", capture_output=True, text=True, check=True)
    print("   onnxio, onnx:", out.stdout.strip(), flush=True)


def sdist(name, version):
    """The extracted sdist (downloaded once), installed into the venv."""
    base = WORK / name
    base.mkdir(parents=True, exist_ok=True)
    archives = [p for p in base.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(f"{name}-{version}")]
    if not archives:
        sh(python(), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", base,
           f"{name}=={version}")
        archives = [p for p in base.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(f"{name}-{version}")]
    archive = archives[0]
    src = base / archive.name[: -len(".tar.gz")]
    if not src.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(base, filter="data")
    have = subprocess.run([str(python()), "-m", "pip", "show", name], capture_output=True, text=True).stdout
    if f"Version: {version}\n" not in have:
        sh(python(), "-m", "pip", "install", "-q", "--no-deps", archive)
    return src


def repository(name, spec, sources):
    """The tree of the package's repository at its tag, from the clone
    given for it (--source NAME=PATH), extracted once."""
    if name not in sources:
        sys.exit(f"{name}: its tests come from its git repository; give a clone with --source {name}=PATH")
    src = WORK / name / f"{name}-{spec['repo']}"
    if not src.is_dir():
        tmp = WORK / name / "extracting"
        sh("rm", "-rf", tmp)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", sources[name], "archive", spec["repo"]], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        tmp.rename(src)
    sp = next(VENV.glob("lib/python3*/site-packages"))
    # Sorted before zz_repo_venv.pth: this tree comes before .venv's copy.
    (sp / f"clients_{name}.pth").write_text(str((src / spec["root"]).resolve()) + "\n")
    module = name.replace("-", "_")
    if (sp / module).is_dir():
        sh(python(), "-m", "pip", "uninstall", "-q", "-y", name)
    return src


def run(name, spec, src, mode):
    xml = WORK / name / f"{mode}.xml"
    xml.unlink(missing_ok=True)
    extra = [f"--timeout={PER_TEST_TIMEOUT}", "-p", "no:randomly", "-p", "no:xdist"]
    extra += [f"--ignore={p}" for p in spec["ignore"]]
    args, env = pytest_command(python(), mode, xml, tb="short", extra=extra)
    args += spec["tests"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    log = WORK / name / f"{mode}.log"
    print(f"==> {name} {mode}: pytest {' '.join(spec['tests'])}", flush=True)
    start = time.monotonic()
    with open(log, "w") as f:
        try:
            subprocess.run(args, cwd=src, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=PER_RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"   stopped after {PER_RUN_TIMEOUT} s", flush=True)
    print(f"   {time.monotonic() - start:.0f} s, log {log.relative_to(ROOT)}", flush=True)
    if not xml.exists():
        print("   no outcomes (see the log)", flush=True)
        return {}
    return outcomes(xml, details=True)


def compare(native, ours, examples):
    passing = sorted(t for t, (r, _, _) in native.items() if r == "passed")
    ok = 0
    causes = collections.defaultdict(list)
    for t in passing:
        result, message, text = ours.get(t, ("missing", "not collected", ""))
        if result == "passed":
            ok += 1
        else:
            key = f"{result}: {cause(message, text)}" if result in ("failed", "error") else f"{result}: {message}"
            causes[key].append((t, text))
    ranked = sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {
        "native_collected": len(native),
        "native_passed": len(passing),
        "onnxio_passed": ok,
        "share": ok / len(passing) if passing else None,
        "causes": [{"cause": c, "count": len(items), "tests": [t for t, _ in items[:examples]],
                    "traceback": key_lines(items[0][1], 8)} for c, items in ranked],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packages", nargs="*", help=f"of {', '.join(PACKAGES)} (default: all)")
    ap.add_argument("--causes", type=int, default=12, help="how many failure causes to print per package")
    ap.add_argument("--examples", type=int, default=0, help="failing tests and traceback lines to print per cause")
    ap.add_argument("--venv-onnxio", action="store_true", help="test the onnxio of .venv, not this tree's")
    ap.add_argument("--only", choices=("native", "onnxio"), help="one run; the other's outcomes are read back")
    ap.add_argument("--source", action="append", default=[], metavar="NAME=PATH",
                    help="a git clone of a package tested from its repository (onnx-ir, onnxscript)")
    args = ap.parse_args()
    sources = dict(s.split("=", 1) for s in args.source)
    unknown = [p for p in args.packages if p not in PACKAGES]
    if unknown:
        ap.error(f"unknown package(s) {', '.join(unknown)}; known: {', '.join(PACKAGES)}")
    WORK.mkdir(parents=True, exist_ok=True)
    make_venv(args.venv_onnxio)
    summary_file = WORK / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
    summary = {k: v for k, v in summary.items() if k in PACKAGES}
    for name in args.packages or [p for p in PACKAGES if "repo" not in PACKAGES[p] or p in sources]:
        spec = PACKAGES[name]
        src = repository(name, spec, sources) if "repo" in spec else sdist(name, spec["version"])
        results = {}
        for mode in ("native", "onnxio"):
            if args.only and args.only != mode and (WORK / name / f"{mode}.xml").exists():
                results[mode] = outcomes(WORK / name / f"{mode}.xml", details=True)
            else:
                results[mode] = run(name, spec, src, mode)
        entry = compare(results["native"], results["onnxio"], max(args.examples, 5))
        entry.update(version=spec["version"], tests=spec["tests"], ignore=spec["ignore"])
        summary[name] = entry
        summary_file.write_text(json.dumps(summary, indent=1))
        report(name, entry, args.causes, args.examples)
    print(f"\n{'package':24} {'version':>8} {'native':>7} {'onnxio':>7}  share")
    for name, e in summary.items():
        share = f"{e['share']:6.1%}" if e["share"] is not None else "     -"
        print(f"{name:24} {e['version']:>8} {e['native_passed']:7} {e['onnxio_passed']:7}  {share}")
    print(f"\nsummary: {summary_file.relative_to(ROOT)}")


def report(name, e, n, examples):
    print(f"\n{name} {e['version']}: {e['onnxio_passed']} of {e['native_passed']} natively-passing tests pass "
          f"on onnxio ({e['native_collected']} collected natively)")
    for c in e["causes"][:n]:
        print(f"{c['count']:6}  {c['cause']}")
        if examples:
            for t in c["tests"][:examples]:
                print(f"          {t}")
            for line in c["traceback"]:
                print(f"          | {line[:150]}")


if __name__ == "__main__":
    main()
