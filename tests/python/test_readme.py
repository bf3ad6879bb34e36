"""The README's "Get going" commands: the second command of the command-line
and Python blocks, run as written (the onnxio command and python of the
environment the package is installed in) on a real model in the working
directory, and the C block's commands checked against the tested C section.
Their first commands, the installs, are tested by test_packaging.py
(pip install / pip wheel) and test_install.py (cmake --install, pkg-config).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def block(name):
    m = re.search(rf"<!-- get-going: {name} -->\s*```sh\n(.*?)```", README, re.S)
    assert m, f"README.md has no get-going block {name!r}"
    return [line for line in m.group(1).strip().splitlines() if line.strip()]


def model(tmp_path):
    w = numpy_helper.from_array(np.ones((2, 2), dtype=np.float32), "W")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["H"]), helper.make_node("Relu", ["H"], ["Y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [1, 2])], [w])
    onnx.save(helper.make_model(graph), tmp_path / "model.onnx")


def run_line(line, tmp_path):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    r = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (line, r.stdout, r.stderr)
    return r.stdout


def test_every_block_installs_then_uses():
    for name in ("cli", "python", "c"):
        lines = block(name)
        assert len(lines) == 2, (name, lines)
    assert block("cli")[0] == block("python")[0] == "pip install ."


def test_cli_block(tmp_path):
    model(tmp_path)
    out = run_line(block("cli")[1], tmp_path)
    assert "MatMul" in out and "Relu" in out, out


def test_python_block(tmp_path):
    model(tmp_path)
    assert run_line(block("python")[1], tmp_path) == "2 nodes\n"


def test_c_block_matches_the_tested_c_section():
    """The C block's install is the one of the C section, whose build lines
    and program test_install.py runs."""
    install, build = block("c")
    section = README[README.index("## C: install, then build against it"):]
    assert install in section
    assert build.split("app.c")[0] in section and "$(pkg-config --cflags --libs onnxio)" in build
