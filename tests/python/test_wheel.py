"""The wheel for PyPI (`make wheel`): tagged manylinux_2_28 by auditwheel,
at most 10 MB, and, installed into a fresh venv, working with the system's
libdeflate, libcrypto and ISA-L made unreadable in a private mount
namespace (each path bind-mounted over with /dev/null), from Python and from
the `onnxio` command it installs.
"""
import os
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
HIDDEN = ("libdeflate.so.0", "libcrypto.so.3", "libisal.so.2")
PLAT = f"manylinux_2_28_{platform.machine()}"

SMOKE = r'''
import ctypes, hashlib, os, sys, zipfile
import numpy as np
import onnx
import onnxio
from onnxio import helper, numpy_helper

here = sys.argv[1]
assert onnxio.__file__.startswith(sys.prefix), onnxio.__file__
for lib in sys.argv[2:]:
    try:
        ctypes.CDLL(lib)
    except OSError:
        pass
    else:
        raise AssertionError(f"{lib} is still readable")
w = np.arange(50000, dtype=np.float32)
g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
                      [helper.make_tensor_value_info("y", 1, [w.size])], [numpy_helper.from_array(w, "w")])
model = helper.make_model(g)
path = os.path.join(here, "m.onnx")
onnxio.save_model(model, path, save_as_external_data=True, location="w.bin", size_threshold=0, checksum=True)
ref = onnx.load(path, load_external_data=False).graph.initializer[0]
keys = {e.key: e.value for e in ref.external_data}
assert keys["checksum"] == hashlib.sha1(open(os.path.join(here, "w.bin"), "rb").read()).hexdigest()
back = onnxio.load_model(path, verify_checksum=True)
assert np.array_equal(numpy_helper.to_array(back.graph.initializer[0]), w)
onnxio.save_model(back, os.path.join(here, "m.onnxz"))
with zipfile.ZipFile(os.path.join(here, "m.onnxz")) as z:
    assert z.testzip() is None
again = onnxio.load_model(os.path.join(here, "m.onnxz"))
assert np.array_equal(numpy_helper.to_array(again.graph.initializer[0]), w)
print("python ok")
'''


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}:\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr


@pytest.mark.slow
def test_wheel_installs_and_runs_without_system_libraries(tmp_path):
    needs("unshare", "the system libraries are hidden in a mount namespace")
    out = run(["make", "--no-print-directory", "wheel", f"WHEEL_DIR={tmp_path / 'dist'}"], cwd=REPO)
    wheels = list((tmp_path / "dist").glob(f"onnxio-*-{PLAT}.whl"))
    assert len(wheels) == 1, out
    assert f'consistent with\nthe following platform tag: "{PLAT}"' in out, out
    assert wheels[0].stat().st_size <= 10 << 20

    # A fresh venv; numpy, ml_dtypes and onnx (the smoke test's reference)
    # come from .venv through a .pth file, the package from the wheel.
    venv = tmp_path / "v"
    run(["python3", "-m", "venv", str(venv)])
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
         "--no-index", "-q", str(wheels[0])])
    site = next(venv.glob("lib/python3*/site-packages"))
    outer = next((REPO / ".venv").glob("lib/python3*/site-packages"))
    (site / "zz_outer.pth").write_text(str(outer) + "\n")  # after the venv's own: its onnxio comes first

    hide = [os.path.realpath(p) for name in HIDDEN
            for p in (f"/lib/{platform.machine()}-linux-gnu/{name}", f"/usr/lib/{name}") if os.path.exists(p)]
    (tmp_path / "smoke.py").write_text(SMOKE)
    work = tmp_path / "work"
    work.mkdir()
    cli = venv / "bin" / "onnxio"
    script = textwrap.dedent(f"""
        set -e
        for f in {' '.join(hide)}; do mount --bind /dev/null "$f"; done
        {venv / 'bin' / 'python'} {tmp_path / 'smoke.py'} {work} {' '.join(HIDDEN)}
        {cli} convert {work / 'm.onnx'} {work / 'cli.onnxz'}
        {cli} convert {work / 'cli.onnxz'} {work / 'cli.onnx'} --external-data cli.bin --checksum
        {cli} convert {work / 'cli.onnx'} {work / 'back.onnx'} --inline --verify-checksum
        echo cli ok
    """)
    out = run(["unshare", "-m", "--propagation", "private", "sh", "-c", script])
    assert "python ok" in out and "cli ok" in out, out
    assert not re.search(r"libdeflate|libcrypto|libisal|libz\.so", run(["ldd", str(cli)]))
    import onnx
    import numpy as np
    from onnx import numpy_helper
    back = onnx.load(str(work / "back.onnx"))
    assert np.array_equal(numpy_helper.to_array(back.graph.initializer[0]), np.arange(50000, dtype=np.float32))
