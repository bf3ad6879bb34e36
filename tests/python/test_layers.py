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
