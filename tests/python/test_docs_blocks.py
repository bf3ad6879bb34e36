"""Every fenced code block of README.md and docs/*.md runs as written
(blocks without a language are text: layouts and diagrams).

Each block is run here, in a scratch directory holding the model.onnx the
docs speak of (input "x", float [1, 2]; MatMul by an initializer, then
Relu), or is named in ELSEWHERE with the test that runs it or why it
cannot run on this machine. A block that is neither fails the collection
test, so a new example is run from the day it is written.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)

# (file, the block's first line) -> where it runs, or why it cannot.
ELSEWHERE = {
    ("README.md", "apt install python3-venv python3-dev cmake gcc pkgconf libdeflate-dev          # Debian, Ubuntu"):
        "the package managers of three systems (dnf and brew are not on this one); scripts/bootstrap.sh installs "
        "the Debian line's packages",
    ("README.md", "make wheel && python3 -m venv venv && venv/bin/pip install dist/onnxio-*.whl"):
        "tests/python/test_readme.py (the cli and python blocks)",
    ("README.md", 'cmake -S . -B build -DONNXIO_TESTS=OFF -DCMAKE_INSTALL_LIBDIR=lib && cmake --build build -j4 && '
                  'cmake --install build --prefix "$HOME/.local"'): "tests/python/test_readme.py (the c block)",
    ("README.md", 'cc -std=c11 -Wall -Wextra app.c -o app $(pkg-config --cflags --libs onnxio) -Wl,-rpath,'
                  '"$(pkg-config --variable=libdir onnxio)"'): "tests/python/test_install.py",
    ("README.md", "#include <onnxio/onnxio.h>"): "tests/python/test_readme.py and test_install.py (the program)",
    ("README.md", "make demo   # builds, then runs `onnxio info` and round trips on real models"):
        "tests/python/test_demo.py (make demo); make check and make test are what CI runs",
}


def blocks():
    """(file name, index, language, text) of every fenced block."""
    out = []
    for path in DOCS:
        for i, m in enumerate(FENCE.finditer(path.read_text())):
            out.append((str(path.relative_to(REPO)), i, m.group(1), m.group(2)))
    return out


def first_line(text):
    return text.strip().splitlines()[0] if text.strip() else ""


def to_run():
    return [b for b in blocks() if (b[0], first_line(b[3])) not in ELSEWHERE and b[2] in ("python", "sh")]


def write_model(path):
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(2, 2), "W")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])], [w])
    # IR version 10: what the onnxruntime of the tests reads (onnx 1.23 writes 14).
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)


def test_every_block_is_run_or_accounted_for():
    """Every block is run by this file or named in ELSEWHERE, and every
    ELSEWHERE entry names a block that exists."""
    found = blocks()
    keys = {(f, first_line(t)) for f, _, _, t in found}
    assert not set(ELSEWHERE) - keys, set(ELSEWHERE) - keys
    # A block without a language is text (a layout, a diagram), not code.
    unrun = [(f, i, lang) for f, i, lang, t in found
             if (f, first_line(t)) not in ELSEWHERE and lang not in ("python", "sh", "")]
    assert not unrun, unrun
    assert len(to_run()) >= 5


# Blocks that build the package or the library from a copy of the tree
# (minutes): the slow tier.
SLOW = ("pip install .", "cmake -S . -B build")


@pytest.mark.parametrize("block", [pytest.param(b, id=f"{b[0]}:{b[1]}",
                                                marks=[pytest.mark.slow] if any(s in b[3] for s in SLOW) else [])
                                   for b in to_run()])
def test_block_runs_as_written(block, tmp_path):
    name, _index, lang, text = block
    work = tmp_path / "work"
    if any(s in text for s in SLOW):  # it builds this tree: in a copy of it
        shutil.copytree(REPO, work, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", "build", "build-*", ".venv*", "venv", ".cache", "dist", "__pycache__"))
        program = re.search(r"<!-- c-program -->\s*```c\n(.*?)```", (REPO / "README.md").read_text(), re.S)
        (work / "app.c").write_text(program.group(1))
    else:
        work.mkdir()
    write_model(work / "model.onnx")
    home = tmp_path / "home"
    home.mkdir()
    if lang == "python":
        if "torch" in text:
            needs("torch")
        if "onnxruntime" in text:
            needs("onnxruntime")
        if "onnx_ir" in text or "onnxio.ir" in text:
            needs("onnx_ir")
        cmd = [sys.executable, "-c", text]
        env = dict(os.environ)
    else:
        cli = needs("onnxio command")
        for tool in ("bash", "cmake", "cc", "pkg-config", "unzip"):
            needs(tool)
        cmd = ["bash", "-e", "-c", text]
        env = {"PATH": f"{Path(cli).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home)}
        env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
        user_conf = Path.home() / ".config" / "pip" / "pip.conf"
        if user_conf.exists():
            (home / ".config" / "pip").mkdir(parents=True)
            shutil.copy(user_conf, home / ".config" / "pip" / "pip.conf")
    r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, (name, text, r.stdout[-3000:], r.stderr[-3000:])
