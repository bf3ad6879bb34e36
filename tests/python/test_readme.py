"""The README's "Get going" blocks, each run as written, all its lines in
one shell, in the environment the README promises: `env -i` with only
PATH=/usr/local/bin:/usr/bin:/bin (so python3 is the system's, not a
developer's pyenv) and a new HOME (and the user's pip configuration,
copied into it, so that pip reaches the same package index), on a copy
of this tree (without build trees or
virtual environments) holding a model.onnx and the README's C program as
app.c. The command-line and Python blocks share their first line, `make
wheel` and the install of that wheel into a new venv, which runs once;
the C block builds,
installs into the new HOME's ~/.local and runs a program built against
that install. What each produced is checked with the onnx package, and
every file the blocks and the program leave in the tree is one .gitignore
ignores (a user's `git status` stays clean).
test_packaging.py (pip wheel) and test_install.py (cmake --install,
pkg-config, find_package) check the installs further.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
NOT_COPIED = shutil.ignore_patterns(".git", "build", "build-*", ".venv*", "venv", ".cache", "out", "__pycache__",
                                    ".pytest_cache", "*.egg-info")


def block(name):
    m = re.search(rf"<!-- get-going: {name} -->\s*```sh\n(.*?)```", README, re.S)
    assert m, f"README.md has no get-going block {name!r}"
    return [line for line in m.group(1).strip().splitlines() if line.strip()]


def write_model(path):
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(2, 2), "W")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["H"]), helper.make_node("Relu", ["H"], ["Y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [1, 2])], [w])
    onnx.save(helper.make_model(graph), path)


README_PATH = "/usr/local/bin:/usr/bin:/bin"


def clean_env(home):
    """env -i with the README's PATH and HOME only, plus the user's pip
    configuration."""
    home.mkdir(exist_ok=True)
    env = {"PATH": README_PATH, "HOME": str(home)}
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    user_conf = Path.home() / ".config" / "pip" / "pip.conf"
    if user_conf.exists():
        (home / ".config" / "pip").mkdir(parents=True, exist_ok=True)
        shutil.copy(user_conf, home / ".config" / "pip" / "pip.conf")
    return env


def run_lines(lines, cwd, env):
    r = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "bash", "-e", "-c", "\n".join(lines)],
                       cwd=cwd, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, ("\n".join(lines), r.stdout[-4000:], r.stderr[-4000:])
    return r.stdout


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of this tree with model.onnx and app.c in it, and a new HOME."""
    for tool in ("bash", "env", "python3", "cmake", "cc", "pkg-config"):
        needs(tool, "the README's blocks run with it")
    base = tmp_path_factory.mktemp("get-going")
    src = base / "onnxio"
    shutil.copytree(REPO, src, ignore=NOT_COPIED, symlinks=True)
    write_model(src / "model.onnx")
    program = re.search(r"<!-- c-program -->\s*```c\n(.*?)```", README, re.S)
    assert program, "README.md has no C example program"
    (src / "app.c").write_text(program.group(1))
    (base / "before").write_text("\n".join(sorted(_files(src))))
    return src, clean_env(base / "home")


def _files(root):
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _not_ignored(src):
    """The paths the blocks made in the copy `src` that this repository's
    .gitignore does not ignore (model.onnx and app.c are the test's)."""
    before = set((src.parent / "before").read_text().splitlines())
    # Top-level: a new directory counts once (named with a '/', as
    # .gitignore's directory patterns want).
    made = sorted(p + "/" if (src / p).is_dir() else p for p in _files(src) - before if "/" not in p)
    if not made:
        return []
    r = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", "--stdin"], input="\n".join(made),
                       capture_output=True, text=True)
    ignored = set(r.stdout.split())
    return [p for p in made if p not in ignored]


@pytest.fixture(scope="module")
def pip_installed(tree):
    """The first line of the command-line and Python blocks (the same
    install), run once."""
    src, env = tree
    install = block("cli")[0]
    assert block("python")[0] == install
    run_lines([install], src, env)
    return src, env


def test_every_block_installs_then_uses():
    for name in ("cli", "python", "c"):
        assert len(block(name)) >= 2, (name, block(name))


@pytest.mark.slow
def test_cli_block(pip_installed):
    src, env = pip_installed
    out = run_lines(block("cli")[1:], src, env)
    assert "MatMul" in out and "Relu" in out, out


@pytest.mark.slow
def test_python_block(pip_installed):
    src, env = pip_installed
    assert run_lines(block("python")[1:], src, env) == "2 nodes\n"


@pytest.mark.slow
def test_c_block(tree):
    src, env = tree
    out = run_lines(block("c"), src, env)
    assert out.endswith("2 nodes, 1 initializers\n"), out
    home = Path(env["HOME"])
    assert (home / ".local" / "lib" / "pkgconfig" / "onnxio.pc").exists()
    assert (home / ".local" / "bin" / "onnxio").exists()
    # the program's output, read by onnx, is the model it read
    assert onnx.load(str(src / "out.onnx")).SerializeToString() == onnx.load(str(src / "model.onnx")).SerializeToString()
    # What the blocks leave in the tree, .gitignore ignores.
    assert _not_ignored(src) == [], _not_ignored(src)


def test_readme_environment_is_the_system_python():
    """The README's PATH finds the system's python3 (Debian's), whatever the
    developer's shell has first: that is the one the blocks must work
    with."""
    r = subprocess.run(["env", "-i", f"PATH={README_PATH}", "bash", "-c", "command -v python3"], capture_output=True,
                       text=True)
    assert r.stdout.strip() in ("/usr/bin/python3", "/usr/local/bin/python3"), r.stdout


def test_make_check_runs_the_c_tests_after_the_c_block():
    """The C block configures build/ with ONNXIO_TESTS=OFF; make check
    reconfigures it with the C tests on, and its ctest fails when it finds
    none instead of passing."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "check"], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "MAKEFLAGS": ""}).stdout
    configure = [line for line in out.splitlines() if " -B build " in line and "cmake" in line]
    assert configure and all("-DONNXIO_TESTS=ON" in line for line in configure), configure
    ctest = [line for line in out.splitlines() if re.search(r"\bctest --", line)]
    assert ctest and all("--no-tests=error" in line for line in ctest), ctest
