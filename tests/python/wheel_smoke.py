"""The smoke test of an installed wheel (tests/python/test_wheel.py runs it
with the system's libdeflate, libcrypto and ISA-L hidden; cibuildwheel runs
it on each platform's wheels, pyproject.toml's test-command):

    python wheel_smoke.py [DIR [LIBRARY ...]]

In DIR (default: a new temporary directory): saves a model with external
data and a SHA-1 checksum, checked against hashlib; loads it back verifying
the checksum; writes and reads an .onnxz, checked with zipfile; then the
same with the `onnxio` command installed beside this Python. Each LIBRARY
named must fail to load (ctypes), so that a caller can tell the test ran
with it hidden. Needs only the wheel and its dependencies (numpy).
"""
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

import numpy as np

import onnxio
from onnxio import helper, numpy_helper


def main(argv):
    here = argv[0] if argv else tempfile.mkdtemp(prefix="onnxio-smoke-")
    for lib in argv[1:]:
        try:
            ctypes.CDLL(lib)
        except OSError:
            pass
        else:
            raise AssertionError(f"{lib} is still readable")
    prefix = os.path.realpath(sys.prefix)
    assert os.path.realpath(onnxio.__file__).startswith(prefix), (onnxio.__file__, prefix)

    # Python: external data with a checksum, then .onnxz both ways.
    w = np.arange(50000, dtype=np.float32)
    g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", 1, [w.size])], [numpy_helper.from_array(w, "w")])
    path = os.path.join(here, "m.onnx")
    onnxio.save_model(helper.make_model(g), path, save_as_external_data=True, location="w.bin", size_threshold=0,
                      checksum=True)
    ref = onnxio.load_model(path, load_external_data=False).graph.initializer[0]
    keys = {e.key: e.value for e in ref.external_data}
    with open(os.path.join(here, "w.bin"), "rb") as f:
        data = f.read()
    assert keys["checksum"] == hashlib.sha1(data).hexdigest(), keys
    assert np.array_equal(np.frombuffer(data, np.float32), w)
    back = onnxio.load_model(path, verify_checksum=True)
    assert np.array_equal(numpy_helper.to_array(back.graph.initializer[0]), w)
    onnxio.save_model(back, os.path.join(here, "m.onnxz"))
    with zipfile.ZipFile(os.path.join(here, "m.onnxz")) as z:
        assert z.testzip() is None
        assert z.namelist()[-1] == "__MODEL_PROTO", z.namelist()
    again = onnxio.load_model(os.path.join(here, "m.onnxz"))
    assert np.array_equal(numpy_helper.to_array(again.graph.initializer[0]), w)
    print("python ok")

    # The command the wheel installs, beside this Python.
    cli = shutil.which("onnxio", path=sysconfig.get_path("scripts")) or shutil.which("onnxio")
    assert cli, "no onnxio command installed"

    def run(*args):
        subprocess.run([cli, *args], check=True, cwd=here)

    run("convert", "m.onnx", "cli.onnxz")
    run("convert", "cli.onnxz", "cli.onnx", "--external-data", "cli.bin", "--checksum")
    run("convert", "cli.onnx", "back.onnx", "--inline", "--verify-checksum")
    with open(os.path.join(here, "cli.bin"), "rb") as f:
        assert np.array_equal(np.frombuffer(f.read(), np.float32), w)
    out = onnxio.load_model(os.path.join(here, "back.onnx"), load_external_data=False)
    assert not out.graph.initializer[0].external_data
    assert np.array_equal(numpy_helper.to_array(out.graph.initializer[0]), w)
    print("cli ok")


if __name__ == "__main__":
    main(sys.argv[1:])
