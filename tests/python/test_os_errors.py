"""An operating system refusal raises what Python's own open() raises for
the same path: the same OSError subclass (FileNotFoundError,
IsADirectoryError, PermissionError), errno, and filename (the path the
caller passed); the message names that path, not a file of onnxio's own
(the save journal).

Reference: open() on the same path in the same process, with the mode of
the operation ("rb" for a load, "wb" for a save).
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from onnx import helper

import onnxio
from conftest import needs


def empty_model():
    return onnxio.load_model_from_string(helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString())


def opened(path, mode):
    try:
        open(path, mode).close()
    except OSError as e:
        return e
    pytest.fail(f"open({path!r}, {mode!r}) succeeded")


def check(raised, path, mode):
    want = opened(path, mode)
    got = raised.value
    assert type(got) is type(want), (got, want)
    assert (got.errno, got.filename) == (want.errno, want.filename), (got, want)
    assert got.strerror and str(path) in got.strerror, got


def test_load_missing_file(tmp_path):
    path = str(tmp_path / "missing.onnx")
    with pytest.raises(OSError) as raised:
        onnxio.load(path)
    check(raised, path, "rb")


def test_load_a_directory(tmp_path):
    with pytest.raises(OSError) as raised:
        onnxio.load(str(tmp_path))
    check(raised, str(tmp_path), "rb")


def test_save_into_a_missing_directory(tmp_path):
    path = str(tmp_path / "no" / "m.onnx")
    with pytest.raises(OSError) as raised:
        onnxio.save(empty_model(), path)
    check(raised, path, "wb")


def test_save_onto_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OSError) as raised:
        onnxio.save(empty_model(), str(tmp_path / "d"))
    check(raised, str(tmp_path / "d"), "wb")


_READ_ONLY_DIR = textwrap.dedent("""
    import json, sys, onnxio
    from onnx import helper
    path = sys.argv[1]
    model = onnxio.load_model_from_string(helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString())
    out = {}
    for what, call in (("open", lambda: open(path, "wb")), ("save", lambda: onnxio.save(model, path)),
                       ("save_ext", lambda: onnxio.save(model, path, save_as_external_data=True))):
        try:
            call()
            out[what] = None
        except OSError as e:
            out[what] = [type(e).__name__, e.errno, e.filename, str(e)]
    print(json.dumps(out))
    """)


def test_save_into_a_read_only_directory(tmp_path):
    """Run in a child process without the capability that lets root write
    anywhere (setpriv), so that the directory's mode holds for root too."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    path = str(ro / "m.onnx")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    cmd = [sys.executable, "-c", _READ_ONLY_DIR, path]
    if os.geteuid() == 0:
        setpriv = needs("setpriv", "as root, it drops CAP_DAC_OVERRIDE")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"] + cmd
    try:
        out = json.loads(subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout)
    finally:
        ro.chmod(0o755)
    want = out.pop("open")
    assert want and want[0] == "PermissionError", want
    for what, got in out.items():
        assert got[:3] == want[:3], (what, got, want)
        assert "journal" not in got[3], (what, got)
    assert os.listdir(ro) == []
