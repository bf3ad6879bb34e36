"""Lets the tests of this folder import their helper modules
(onnxio_ctypes, protobuild, datafiles) whatever pytest's import mode and
working directory; and says, in one place, how a test that needs an
optional tool, package or data set behaves when it is missing (`needs`)."""
import functools
import importlib
import os
import shutil
import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

REPO = Path(__file__).resolve().parents[2]


# ---- optional tools, packages and data ---------------------------------------
#
# A test that needs something outside the onnxio package (a Python package of
# requirements.txt, a command, a data set) gets it from needs("name"), or is
# marked @pytest.mark.needs("name"). When it is missing, the test (or, at
# module level, the module) is skipped with a reason that says what to
# install. Where CI=true (.ci/run sets it, as CI services do) and the
# project's setup provides it (scripts/bootstrap.sh, the install step of the
# README and CONTRIBUTING.md: requirements.txt and the Debian packages; and
# the build, which `make test` makes first), a missing one fails the test
# instead: CI never loses coverage silently. What the setup does not provide
# (../shared beside the clone) is skipped everywhere.

def _pip(spec=""):
    return f"pip install -r requirements.txt{f' ({spec})' if spec else ''}; scripts/bootstrap.sh does it, into .venv"


def _apt(package):
    return f"apt-get install {package}; scripts/bootstrap.sh does it"


def _module(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _command(name):
    # beside the interpreter first: a virtual environment's commands (mypy)
    # are there whether or not it is on PATH
    here = Path(sys.executable).parent / name
    return str(here) if here.is_file() and os.access(here, os.X_OK) else shutil.which(name)


def _dir(path):
    return path if path.is_dir() else None


def _file(path):
    return path if path.is_file() else None


def _in_onnx(*parts):
    onnx = _module("onnx")
    return Path(onnx.__file__).parent.joinpath(*parts) if onnx else Path("/nonexistent")


# name -> (what needs() returns, or None when missing; how to get it; whether
# the project's setup provides it, so that CI=true makes its absence a failure)
NEEDS = {
    # Python packages of requirements.txt (imported; needs() returns the module)
    "onnxruntime": (lambda: _module("onnxruntime"), _pip(), True),
    "onnx_ir": (lambda: _module("onnx_ir"), _pip(), True),
    "safetensors": (lambda: _module("safetensors"), _pip(), True),
    "torch": (lambda: _module("torch"), _pip("torch==2.13.0, the CPU build"), True),
    "onnxscript": (lambda: _module("onnxscript"), _pip("onnxscript: torch.onnx.export(dynamo=True) needs it"), True),
    "fsspec": (lambda: _module("fsspec"), _pip("fsspec, the \"remote\" extra of the package"), True),
    "aiohttp": (lambda: _module("aiohttp"), _pip("s3fs brings it"), True),
    "s3fs": (lambda: _module("s3fs"), _pip(), True),
    "boto3": (lambda: _module("boto3"), _pip(), True),
    "moto.server": (lambda: _module("moto.server"), _pip("moto[server]"), True),
    "mypy": (lambda: _module("mypy"), _pip(), True),
    "clang.cindex": (lambda: _module("clang.cindex"), _pip("libclang"), True),
    "build": (lambda: _module("build"), _pip(), True),
    "grpc_tools": (lambda: _module("grpc_tools"), _pip("grpcio-tools"), True),
    "cibuildwheel": (lambda: _file(Path(sys.executable).parent / "cibuildwheel"), _pip(), True),
    # commands (needs() returns the path)
    "bash": (lambda: _command("bash"), "an essential Debian package", True),
    "env": (lambda: _command("env"), "coreutils, an essential Debian package", True),
    "python3": (lambda: _command("python3"), _apt("python3-venv"), True),
    "unzip": (lambda: _command("unzip"), _apt("unzip"), True),
    "strace": (lambda: _command("strace"), _apt("strace"), True),
    "abidiff": (lambda: _command("abidiff"), _apt("abigail-tools"), True),
    "cmake": (lambda: _command("cmake"), _apt("cmake"), True),
    "cc": (lambda: _command("cc"), _apt("build-essential"), True),
    "c++": (lambda: _command("c++"), _apt("build-essential"), True),
    "make": (lambda: _command("make"), _apt("build-essential"), True),
    "pkg-config": (lambda: _command("pkg-config"), _apt("pkgconf"), True),
    "setpriv": (lambda: _command("setpriv"), "util-linux, an essential Debian package", True),
    "unshare": (lambda: _command("unshare"), "util-linux, an essential Debian package (and root, for a mount namespace)",
                True),
    # data (needs() returns the Path)
    "libonnx-testdata": (lambda: _dir(Path(os.environ.get("ONNXIO_LIBONNX_TESTDATA",
                                                         "/usr/share/libonnx-testdata/data"))),
                         _apt("libonnx-testdata"), True),
    "onnx-backend-data": (lambda: _dir(_in_onnx("backend", "test", "data")),
                          "the onnx package of requirements.txt ships it", True),
    "onnx .proto files": (lambda: _file(_in_onnx("onnx-ml.proto")), "the onnx package of requirements.txt ships them",
                          True),
    "onnxio command": (lambda: _file(Path(os.environ.get("ONNXIO_CLI", REPO / "build" / "onnxio"))),
                       "make builds build/onnxio (or set ONNXIO_CLI)", True),
    "build tree": (lambda: _file(REPO / "build" / "CMakeCache.txt"), "make configures and builds build/", True),
    "windows build": (lambda: _file(REPO / "build-windows" / "onnxio.exe"),
                      "make windows builds build-windows/onnxio.exe (mingw-w64)", True),
    "wine": (lambda: _command("wine64") or _file(Path("/usr/lib/wine/wine64")) or _command("wine"),
             "make windows installs it (Debian's wine64)", True),
    "aarch64-linux-gnu-gcc": (lambda: _command("aarch64-linux-gnu-gcc"),
                              _apt("gcc-aarch64-linux-gnu libc6-dev-arm64-cross"), True),
    "qemu-aarch64": (lambda: _command("qemu-aarch64"), _apt("qemu-user"), True),
    # not provided by the setup: skipped wherever it is absent
    "shared-corpus": (lambda: _dir(REPO.parent / "shared" / "corpus"),
                      "a clone with ../shared beside it, as CI has", False),
    "shared-spec": (lambda: _dir(REPO.parent / "shared" / "spec"),
                    "a clone with ../shared beside it, as CI has", False),
}


def in_ci():
    """Whether this run is CI's (CI=true: .ci/run sets it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@functools.lru_cache(maxsize=None)
def _find(name):
    if name not in NEEDS:
        raise KeyError(f"needs({name!r}): not in conftest.NEEDS (add it there, with how to install it)")
    return NEEDS[name][0]()


def have(name):
    """Whether `name` (a key of NEEDS) is here, without skipping or failing
    (for a choice made at collection, such as a parameter list)."""
    return _find(name) is not None


def missing(name, why=""):
    """Skips the calling test (or module), or fails it where CI=true and
    the setup provides `name`: the one way a test gives up on an absent
    tool, package or data set."""
    _, how, provided = NEEDS[name]
    what = f"{name} is missing{f' ({why})' if why else ''}: {how}"
    if provided and in_ci():
        pytest.fail(f"{what}; CI=true, so its tests fail rather than skip", pytrace=False)
    pytest.skip(what, allow_module_level=True)


def needs(name, why=""):
    """What `name` (a key of NEEDS) gives: the imported module of a Python
    package, the path of a command, the Path of a data set; when it is
    absent, missing(name, why)."""
    found = _find(name)
    if found is None:
        missing(name, why)
    return found


@pytest.hookimpl(tryfirst=True)  # before skip marks: an empty parameter list too
def pytest_runtest_setup(item):
    for mark in item.iter_markers(name="needs"):
        for name in mark.args:
            needs(name, mark.kwargs.get("why", ""))


# ---- crashes -----------------------------------------------------------------

# When pytest itself dies (a crash in the library under test), CI shows only
# the tail of the output, where the faulthandler stack is cut off. The
# Makefile names $ONNXIO_PYTEST_CURRENT here and prints the test that was
# running when the process died.
_CURRENT = os.environ.get("ONNXIO_PYTEST_CURRENT")


def pytest_runtest_logstart(nodeid, location):
    if _CURRENT:
        with open(_CURRENT, "w") as f:
            f.write(nodeid + "\n")


def pytest_configure(config):
    # A helper named like a test is collected and its return value warned
    # about: an error here, so that such a helper is renamed.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestReturnNotNoneWarning")
