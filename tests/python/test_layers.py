"""scripts/check_layers.py, the layer check make test runs: it passes on
the repository, and fails on a copy with an include that goes up a layer,
a circle of private headers, a file directly in src/, or a file its layer's
row of docs/design.md does not list."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_layers.py"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def tree(tmp_path):
    shutil.copytree(REPO / "src", tmp_path / "src")
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "design.md", tmp_path / "docs" / "design.md")
    return tmp_path


def test_the_repository_passes():
    r = run(REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_include_up_a_layer_fails(tree):
    decode = tree / "src" / "proto" / "decode.c"
    decode.write_text('#include "io/io.h"\n' + decode.read_text())
    r = run(tree)
    assert r.returncode == 1
    assert "src/proto/decode.c: includes src/io/io.h, of a higher layer (src/io above src/proto)" in r.stdout


def test_a_circle_of_headers_fails(tree):
    wire = tree / "src" / "proto" / "wire.h"
    wire.write_text('#include "proto/codec.h"\n' + wire.read_text())
    codec = tree / "src" / "proto" / "codec.h"
    codec.write_text('#include "proto/wire.h"\n' + codec.read_text())
    r = run(tree)
    assert r.returncode == 1
    assert "include circle:" in r.stdout


def test_a_file_outside_the_layers_or_the_table_fails(tree):
    (tree / "src" / "stray.c").write_text("int stray;\n")
    (tree / "src" / "io" / "unlisted.c").write_text("int unlisted;\n")
    r = run(tree)
    assert r.returncode == 1
    assert "src/stray.c: a source file directly in src/" in r.stdout
    assert "src/io/unlisted.c: not in its layer's row of docs/design.md" in r.stdout


def package_imports(root):
    """module -> the modules of the package it imports (anywhere in it,
    function-local imports included)."""
    import ast

    graph = {}
    for f in root.glob("*.py"):
        deps = set()
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "onnxio":
                parts = n.module.split(".")
                deps |= {a.name for a in n.names} if len(parts) == 1 else {parts[1]}
            elif isinstance(n, ast.Import):
                deps |= {a.name.split(".")[1] for a in n.names if a.name.startswith("onnxio.")}
        graph[f.stem] = {d for d in deps if (root / f"{d}.py").exists() and d != f.stem}
    return graph


def circles(graph):
    """The import circles of `graph` (strongly connected components of more
    than one module), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_python_package_has_no_import_circle():
    assert circles(package_imports(REPO / "python" / "onnxio")) == []


def test_an_import_circle_is_found(tmp_path):
    pkg = tmp_path / "onnxio"
    pkg.mkdir()
    (pkg / "a.py").write_text("from onnxio import b\n")
    (pkg / "b.py").write_text("def f():\n    from onnxio import a\n")
    (pkg / "c.py").write_text("from onnxio import a\n")
    assert circles(package_imports(pkg)) == [["a", "b"]]
