"""The onnxio command for the CLI tests: where it is and how it is run.

The command is $ONNXIO_CLI, by default <repo>/build/onnxio; a test module
that imports this is skipped when neither is there.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("ONNXIO_CLI", REPO / "build" / "onnxio"))

if "ONNXIO_CLI" not in os.environ and not CLI.exists():
    pytest.skip(f"{CLI} is not built (cmake --build build)", allow_module_level=True)


def run(*args, cwd=None, **kwargs):
    """Runs the command; returns (returncode, stdout bytes, stderr text)."""
    p = subprocess.run(
        [str(CLI), *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=cwd,
        timeout=300,
        **kwargs,
    )
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def run_ok(*args, cwd=None):
    """Runs the command, which must succeed; returns its stdout bytes."""
    rc, out, err = run(*args, cwd=cwd)
    assert rc == 0, f"onnxio {' '.join(map(str, args))}: rc {rc}: {err}"
    # Nothing on stderr when it is not a terminal: no progress, no chatter.
    assert err == ""
    return out


def info_json(path):
    return json.loads(run_ok("info", "--json", path))
