"""scripts/check_layers.py, the layer check make test runs: it passes on
the repository, and fails on a copy with an include that goes up a layer,
a circle of private headers, a file directly in src/, a file its layer's
row of docs/design.md does not list, a file, the pool or path handling in
src/proto (but for the encoder's sink lines it names, exactly), or a table
of file extensions or path handling in cli/."""
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
    shutil.copytree(REPO / "cli", tmp_path / "cli")
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "design.md", tmp_path / "docs" / "design.md")
    return tmp_path


def append(path, text):
    path.write_text(path.read_text() + text)


def findings(r, path):
    """The lines of check_layers' output about `path` (relative)."""
    return [line for line in r.stdout.splitlines() if line.startswith(path + ":")]


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


def test_proto_files_pool_and_paths_fail(tree):
    """src/proto holds rules on bytes in memory: opening, reading or
    writing a file, a file descriptor, the thread pool and path handling
    are each found, with the line."""
    fmt = tree / "src" / "proto" / "format.c"
    base = len(fmt.read_text().splitlines())
    append(fmt, "\n".join([
        '#include "pool/pool.h"',
        "static int f1(const char *path) { return open(path, 0); }",
        "static long f2(int fd, void *b) { return pread(fd, b, 1, 0); }",
        "static int f3(const char *p) { int fd; return onnxio__open_regular(0, p, 0, p, &fd, NULL); }",
        "static int f4(void *b) { return onnxio__read_at(3, b, 1, 0, \"x\"); }",
        "static void f5(onnxio__pool *p) { (void)p; }",
        "static int f6(void) { return ONNXIO__JOB_PREAD; }",
        "static char *f7(const char *p) { return onnxio__dirname(p); }",
        "static const char *f8(const char *p) { return strrchr(p, '/'); }",
        "static void f9(struct s *s) { s->fd = 1; }",
        "static char *f10(char *p) { return basename(p); }",
    ]) + "\n")
    r = run(tree)
    assert r.returncode == 1
    got = findings(r, "src/proto/format.c")
    want = [
        (1, "the thread pool"), (2, "a file opened, read or written"), (3, "a file opened, read or written"),
        (4, "a file opened, read or written"), (5, "a file opened, read or written"), (6, "the thread pool"),
        (7, "the thread pool"), (8, "path handling"), (9, "path handling"), (10, "a file descriptor"),
        (11, "path handling"),
    ]
    assert len(got) == len(want), got
    for line, (k, why) in zip(got, want):
        assert line.startswith(f"src/proto/format.c:{base + k}: {why}"), (line, k, why)


def test_proto_rules_read_code_only(tree):
    """Comments and the text of strings are not code: naming open() or a
    path's '/' there is no finding."""
    append(tree / "src" / "proto" / "text.c",
           "/* open(path), strrchr(p, '/'), onnxio__pool, int fd */\n"
           "// write(fd, ...) and dirname(path)\n"
           "static const char *const said = \"write(2) to fd 3 with pread() on the onnxio__pool\";\n")
    r = run(tree)
    assert r.returncode == 0, r.stdout


def test_cli_extension_tables_and_paths_fail(tree):
    """cli/ holds no table of file extensions and takes no path apart: an
    extension literal, a '/' character or "/" string, dirname and
    basename are each found; help texts that name ".onnxz" files, and
    comments, are not."""
    common = tree / "cli" / "common.c"
    base = len(common.read_text().splitlines())
    append(common, "\n".join([
        'static const char *const text_exts[] = {".txtpb", ".json"};',
        "static int f1(const char *p) { return strrchr(p, '/') != NULL; }",
        'static int f2(const char *d) { return strcmp(d, "/") == 0; }',
        "static char *f3(char *p) { return dirname(p); }",
        "static char *f4(char *p) { return basename(p); }",
        "static int f5(const char *p) { return p[0] == '/'; }",
        'static int f6(const char *p) { return has_suffix(p, ".onnxz"); }',
        '/* a ".json" file, strrchr(path, \'/\') */',
        'static const char help[] = "an .onnxz OUT, or FILE.npy; see dir/model.onnx";',
    ]) + "\n")
    r = run(tree)
    assert r.returncode == 1
    got = findings(r, "cli/common.c")
    ext, path = "a file extension literal", "path handling"
    want = [(1, ext, '".txtpb"'), (1, ext, '".json"'), (2, path, "'/'"), (3, path, '"/"'), (4, path, "dirname("),
            (5, path, "basename("), (6, path, "'/'"), (7, ext, '".onnxz"')]
    assert len(got) == len(want), got
    for line, (k, why, what) in zip(got, want):
        assert line.startswith(f"cli/common.c:{base + k}: {why}") and line.endswith(what), (line, k, why, what)


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
