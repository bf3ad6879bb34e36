"""The Python package as pip builds and installs it (pyproject.toml:
scikit-build-core driving CMakeLists.txt):

- the installed package has the type stubs (`_onnxio.pyi`, generated from
  the schema tables, and `py.typed`), and mypy on a typical script finds
  the message fields with their types and flags a misspelt one;
- the stubs cover every message class, enum value and entry point of the
  extension as it is at run time;
- mypy finds no error in the installed package, and stubtest finds its
  stubs (`_onnxio.pyi` and the annotations of its modules) matching the
  package at run time, but for what stubtest_allowlist.txt lists;
- `pip wheel .` makes a platform wheel holding the extension, the stubs and
  the `onnxio` command, which installs into a new virtual environment
  (no build step: nothing is compiled) and works there, command included;
- the `onnxio` command is on the PATH of the environment pip installed into.
"""
import ast
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import onnxio
from conftest import needs
from onnxio import _onnxio

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(onnxio.__file__).parent


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_installed_package_has_stubs_and_command():
    assert (PACKAGE / "py.typed").exists()
    assert (PACKAGE / "_onnxio.pyi").exists()
    cli = Path(sys.executable).parent / "onnxio"
    assert cli.exists(), f"{cli}: pip did not install the onnxio command"
    assert run([str(cli), "--version"]).strip() == f"onnxio {onnxio.version.onnxio_version}"


def _stub_names():
    tree = ast.parse((PACKAGE / "_onnxio.pyi").read_text())
    classes, functions = {}, set()
    variables = {t.target.id for t in tree.body if isinstance(t, ast.AnnAssign)}

    def walk(body, prefix):
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                classes[name] = {t.target.id for t in node.body if isinstance(t, ast.AnnAssign)}
                walk(node.body, name + ".")
            elif isinstance(node, ast.FunctionDef) and not prefix:
                functions.add(node.name)

    walk(tree.body, "")
    return classes, functions, variables


def test_stubs_cover_the_extension():
    """Every message class (its fields and <FIELD>_FIELD_NUMBER), every
    nested enum (its values, also in the enclosing scope), the values of
    every top-level enum (module constants: the enum itself is onnxio's,
    no class of the extension) and every function of the extension module
    is in the stubs."""
    classes, functions, variables = _stub_names()
    for full_name, cls in _onnxio._messages.items():
        name = full_name[len("onnx."):]
        assert name in classes, name
        for f in cls.DESCRIPTOR.fields:
            assert f.name in classes[name], f"{name}.{f.name}"
            assert f"{f.name.upper()}_FIELD_NUMBER" in classes[name], f"{name}.{f.name.upper()}_FIELD_NUMBER"
    for full_name, enum in _onnxio._enums.items():
        name = full_name[len("onnx."):]
        if "." not in name:  # onnx.Version: its values are the extension's, the enum is not
            assert not hasattr(_onnxio, name) and name not in classes, name
            for value, number in enum:
                assert getattr(_onnxio, value) == number and value in variables, value
            continue
        assert name in classes, name
        for value, _number in enum:
            assert value in classes[name], f"{name}.{value}"
            assert value in classes[name.rpartition(".")[0]], f"{name.rpartition('.')[0]}.{value}"
    runtime_functions = {n for n in dir(_onnxio) if callable(getattr(_onnxio, n)) and type(getattr(_onnxio, n)).__name__
                         == "builtin_function_or_method"}
    assert runtime_functions <= functions, sorted(runtime_functions - functions)


@pytest.mark.slow
def test_mypy_knows_the_fields(tmp_path):
    needs("mypy", "it checks the type stubs")
    script = tmp_path / "typical.py"
    script.write_text('''import onnxio
from onnxio import helper

model = onnxio.load("model.onnx")
for node in model.graph.node:
    print(node.op_type, list(node.input))
tensor = model.graph.initializer[0]
reveal_type(tensor.dims)
reveal_type(tensor.data_type)
reveal_type(onnxio.TensorProto.FLOAT)
reveal_type(model.graph.node[0].attribute[0].t.raw_data)
reveal_type(onnxio.TensorProto.Segment(begin=1).end)
model.graph.node.append(onnxio.NodeProto(op_type="Relu", input=["x"], output=["y"]))
print(model.graph.nodes)
onnxio.NodeProto(op_typ="Relu")
''')
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(script)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    out = r.stdout
    assert 'Revealed type is "onnxio._onnxio.RepeatedScalarContainer[int]"' in out, out
    assert re.search(r'typical.py:9: note: Revealed type is "int"', out), out
    assert 'Revealed type is "onnxio._onnxio.TensorProto.DataType"' in out, out
    assert re.search(r'typical.py:11: note: Revealed type is "bytes"', out), out
    assert re.search(r'typical.py:12: note: Revealed type is "int"', out), out
    assert re.search(r'typical.py:14: error: "GraphProto" has no attribute "nodes"', out), out
    assert re.search(r'typical.py:15: error: Unexpected keyword argument "op_typ"', out), out
    assert out.count("error:") == 2, out


@pytest.mark.slow
def test_package_type_checks_and_its_stubs_match(tmp_path):
    """`mypy -p onnxio` finds no error in the installed package, and
    `python -m mypy.stubtest onnxio` finds its stubs matching the package
    at run time but for the entries of stubtest_allowlist.txt (what a stub
    cannot say; an entry that matches nothing is an error too). Both read
    [tool.mypy] of pyproject.toml, and both must have checked every module
    of the package, the extension's stubs included."""
    needs("mypy", "it runs mypy and stubtest")
    # stubtest imports every module of the package
    needs("onnx_ir", "stubtest imports onnxio.ir")
    needs("onnxruntime", "stubtest imports onnxio.onnxruntime")
    names = [m.name for m in pkgutil.iter_modules(onnxio.__path__)]
    assert "_onnxio" in names and "helper" in names, names
    modules = 1 + len(names)  # and onnxio itself
    config = str(REPO / "pyproject.toml")
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", config, "--cache-dir", str(tmp_path / "cache"),
                        "-p", "onnxio"], capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Success: no issues found in {modules} source files" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "onnxio", "--mypy-config-file", config,
                        "--allowlist", str(REPO / "tests" / "python" / "stubtest_allowlist.txt")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Success: no issues found in {modules} modules" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_wheel_installs_into_a_new_environment(tmp_path):
    """pip wheel . (offline: the build requirements come from this
    environment) gives a platform wheel with the extension, the stubs and
    the command; a new venv installs it without building anything, and
    both the package and the command work there."""
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(wheels), str(REPO)])
    (wheel,) = wheels.glob("onnxio-*.whl")
    assert re.match(rf"onnxio-{re.escape(onnxio.version.onnxio_version)}-cp\d+-cp\d+-.*linux.*x86_64\.whl", wheel.name), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    for want in ("onnxio/__init__.py", "onnxio/py.typed", "onnxio/_onnxio.pyi"):
        assert want in names, (want, names)
    assert any(re.match(r"onnxio/_onnxio\.cpython-.*\.so$", n) for n in names), names
    assert any(re.match(r"onnxio-[^/]+\.data/scripts/onnxio$", n) for n in names), names
    assert not any(n.endswith((".h", ".a", ".pc")) for n in names), names
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    # pip of this environment installs into the new one; --no-deps: numpy is
    # not needed for what is checked, and the new venv has no index to use
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
         "--no-index", str(wheel)])
    out = run([str(venv / "bin" / "python"), "-c",
               "import onnxio; m = onnxio.ModelProto(ir_version=9, graph=onnxio.GraphProto(name='g')); "
               "print(onnxio.__file__); print(m.SerializeToString().hex())"], cwd=tmp_path)
    path, data = out.split()
    import onnx
    want = onnx.ModelProto(ir_version=9, graph=onnx.GraphProto(name="g")).SerializeToString().hex()
    assert str(venv) in path and data == want
    assert run([str(venv / "bin" / "onnxio"), "--version"]).strip() == f"onnxio {onnxio.version.onnxio_version}"
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}")
    assert run(["onnxio", "--help"], env=env).startswith("usage: onnxio")


@pytest.mark.slow
def test_python_m_build_makes_sdist_and_wheel(tmp_path):
    """python -m build (offline: --no-isolation, this environment's pinned
    scikit-build-core): an sdist holding what the build needs, and a wheel
    built from that sdist."""
    needs("build", "python -m build")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(REPO)])
    (sdist,) = tmp_path.glob("onnxio-*.tar.gz")
    (wheel,) = tmp_path.glob("onnxio-*.whl")
    import tarfile

    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for want in ("pyproject.toml", "CMakeLists.txt", "src/schema.def", "src/proto/text_parse.c", "include/onnxio/onnxio.h",
                 "python/ext/module.c", "python/gen_stubs.c", "python/onnxio/__init__.py", "cli/main.c",
                 "cmake/onnxio.pc.in"):
        assert want in names, want
    assert not any(n.startswith((".cache/", "build/", ".venv/")) for n in names)
    assert "onnxio/_onnxio.pyi" in zipfile.ZipFile(wheel).namelist()


def test_no_build_output_is_tracked():
    """The repository tracks sources, not what builds make: no compiled
    object, program or library (ELF, or an a.out), and nothing that
    .gitignore ignores."""
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    files = [f for f in tracked.decode().split("\0") if f]
    built = []
    for f in files:
        p = REPO / f
        if Path(f).name in ("a.out",) or Path(f).suffix in (".o", ".so", ".a", ".whl", ".pyc"):
            built.append(f)
        elif p.is_file() and not p.is_symlink():
            with open(p, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    built.append(f)
    assert not built, built
    ignored = subprocess.run(["git", "-C", str(REPO), "ls-files", "-ci", "--exclude-standard"], capture_output=True,
                             text=True, check=True).stdout.split()
    assert not ignored, ignored
