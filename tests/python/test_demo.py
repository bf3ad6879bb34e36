"""What `make demo` runs: scripts/demo.sh on a small model (each step
echoes its own command, the results match the onnx package's bytes, the
end says where the files are and how big), the demo's requirements
(requirements/demo.txt: what the demo's scripts import, and included in
the full set of requirements.txt), and scripts/ticker.sh, which keeps a
long quiet step from going 15 s without a line.
"""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
CONV = (Path(os.environ.get("ONNXIO_LIBONNX_TESTDATA", "/usr/share/libonnx-testdata/data"))
        / "pytorch-operator" / "test_operator_conv" / "model.onnx")


def pins(path):
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-r"):
            name, version = line.split("==")
            out[re.sub(r"\[.*\]", "", name).lower().replace("_", "-")] = version
    return out


def test_demo_requirements_cover_the_demo_and_are_in_the_full_set():
    demo = pins(REPO / "requirements" / "demo.txt")
    check = pins(REPO / "requirements" / "check.txt")
    # requirements.txt includes the quick tier's set, which includes the demo's.
    assert "-r requirements/check.txt" in (REPO / "requirements.txt").read_text().splitlines()
    assert "-r demo.txt" in (REPO / "requirements" / "check.txt").read_text().splitlines()
    full = pins(REPO / "requirements.txt")
    assert not set(demo) & (set(full) | set(check)), "a demo pin repeated"
    assert not set(check) & set(full), "a quick-tier pin repeated in requirements.txt"
    # the third-party modules the demo's Python scripts import
    imported = set()
    for script in (REPO / "scripts" / "make_gpt2.py", REPO / "tests" / "python" / "onnxref.py"):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names}
    assert third_party <= set(demo), third_party - set(demo)
    assert {"onnx", "numpy", "protobuf", "ml-dtypes"} <= set(demo)


@pytest.mark.slow
def test_ticker_prints_while_running_and_keeps_the_status(tmp_path):
    ticker = REPO / "scripts" / "ticker.sh"
    env = dict(os.environ, ONNXIO_TICK_SECONDS="1")
    r = subprocess.run([str(ticker), "step", "sleep", "4.5"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    assert re.search(r"^step: still running, \d+ s$", r.stderr, re.M), r.stderr
    r = subprocess.run([str(ticker), "step", "sh", "-c", "echo out; exit 3"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert (r.returncode, r.stdout) == (3, "out\n")


def test_demo_script_on_a_small_model(tmp_path):
    needs("onnxio command", "scripts/demo.sh runs build/onnxio")
    needs("libonnx-testdata", "the demo's model")
    assert CONV.exists(), f"{CONV}: not in this libonnx-testdata"
    out = tmp_path / "demo"
    r = subprocess.run([str(REPO / "scripts" / "demo.sh"), str(CONV)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, DEMO_PYTHON=sys.executable, DEMO_OUT=str(out)))
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "$ unzip -tq m.onnxz" in r.stdout and "onnxio -tq" not in r.stdout, r.stdout
    assert f"demo: its files are in {out} (" in r.stdout, r.stdout
    # the results are the onnx package's bytes of the model, and no reference copy is left
    work = out / "conv"
    assert (work / "copy.onnx").read_bytes() == CONV.read_bytes()
    assert (work / "back.onnx").read_bytes() == onnx.load(str(work / "ext.onnx")).SerializeToString()
    want = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(CONV)).graph.initializer}
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(work / "z.onnx")).graph.initializer}
    assert want.keys() == got.keys() and all(np.array_equal(want[k], got[k]) for k in want)
    assert not list(work.glob("*.ref"))


def test_quick_tier_installs_only_its_packages():
    """make check, with no .venv yet, bootstraps the quick tier's set
    (requirements/check.txt), which holds none of the heavy packages only
    other tiers need; the quick tests that would use them skip."""
    import subprocess

    out = subprocess.run(["make", "-n", "--no-print-directory", "check", "PYTHON=.no-such-venv/bin/python"], cwd=REPO,
                         capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""}).stdout
    assert "scripts/bootstrap.sh check" in out, out[:2000]
    check = pins(REPO / "requirements" / "check.txt")
    heavy = {"torch", "moto", "boto3", "s3fs", "matplotlib", "grpcio-tools", "cibuildwheel", "atheris", "onnxscript"}
    assert not heavy & set(check), heavy & set(check)
    assert heavy <= set(pins(REPO / "requirements.txt")) | {"moto"} and "moto" in (REPO / "requirements.txt").read_text()
