"""The onnxio command for the CLI tests: where it is and how it is run.

The command is $ONNXIO_CLI, by default <repo>/build/onnxio; a test module
that imports this is skipped when it is not there (failed where CI=true:
conftest.needs).
"""
import json
import subprocess
from pathlib import Path

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
CLI = needs("onnxio command")


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
