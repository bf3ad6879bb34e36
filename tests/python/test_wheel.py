"""The wheels: `make wheel`'s manylinux_2_28 wheel, and a wheel built by pip
from the sdist with the system's zlib, libdeflate and OpenSSL development
files hidden (the library links none of them; libdeflate is compiled in). Each, installed into a fresh venv, runs wheel_smoke.py (load,
save with external data and a checksum, .onnxz both ways, from Python and
from the `onnxio` command) with the system's libdeflate, libcrypto and
ISA-L made unreadable. Files are hidden in a private mount namespace: each
bind-mounted over with /dev/null (a directory with an empty one).
pyproject.toml's cibuildwheel configuration is checked to expand to the
platforms it is meant for.
"""
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
PLAT = f"manylinux_2_28_{platform.machine()}"
SMOKE = Path(__file__).with_name("wheel_smoke.py")
LIBS = ("libdeflate.so.0", "libcrypto.so.3", "libisal.so.2")
MULTIARCH = f"{platform.machine()}-linux-gnu"
INCLUDE_DIRS = ("/usr/include", f"/usr/include/{MULTIARCH}", "/usr/local/include")
PC_DIRS = (f"/usr/lib/{MULTIARCH}/pkgconfig", "/usr/lib/pkgconfig", "/usr/share/pkgconfig", "/usr/local/lib/pkgconfig")
HEADERS = ("zlib.h", "zconf.h", "libdeflate.h", "openssl")
PC_FILES = ("zlib.pc", "libdeflate.pc", "openssl.pc", "libcrypto.pc", "libssl.pc")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"
    return r.stdout + r.stderr


def existing(dirs, names):
    return [os.path.join(d, n) for d in dirs for n in names if os.path.lexists(os.path.join(d, n))]


def hidden_run(paths, command, tmp_path):
    """Runs `command` (a shell line) in a private mount namespace where every
    path of `paths` reads as empty: a file as /dev/null, a directory as an
    empty one."""
    needs("unshare", "files are hidden in a private mount namespace")
    empty = tmp_path / "empty-dir"
    empty.mkdir(exist_ok=True)
    lines = ["set -e"]
    for p in paths:
        real = os.path.realpath(p)
        lines.append(f"mount --bind {empty if os.path.isdir(real) else '/dev/null'} {real}")
    lines.append(command)
    return run(["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(lines)])


def smoke(wheel, tmp_path):
    """Installs `wheel` into a fresh venv and runs wheel_smoke.py there with
    the system libraries hidden; numpy comes from .venv through a .pth
    file, after the venv's own site-packages."""
    venv = tmp_path / "v"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--disable-pip-version-check", "--no-deps", "--no-index", "-q", str(wheel)])
    site = next(venv.glob("lib/python3*/site-packages"))
    outer = next((REPO / ".venv").glob("lib/python3*/site-packages"))
    (site / "zz_outer.pth").write_text(str(outer) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    libs = existing((f"/lib/{MULTIARCH}", f"/usr/lib/{MULTIARCH}", "/usr/lib"), LIBS)
    out = hidden_run(libs, f"{venv / 'bin' / 'python'} {SMOKE} {work} {' '.join(LIBS)}", tmp_path)
    assert "python ok" in out and "cli ok" in out, out
    assert not re.search(r"libdeflate|libcrypto|libisal|libz\.so", run(["ldd", str(venv / "bin" / "onnxio")]))
    # The extension exports its module's entry point only: the library and
    # the copy of libdeflate in it stay inside.
    ext = next(site.glob("onnxio/_onnxio*.so"))
    exported = [line.split()[-1] for line in run(["nm", "-D", "--defined-only", str(ext)]).splitlines() if line.strip()]
    assert exported == ["PyInit__onnxio"], exported[:10]
    # The command's output, read by the onnx package.
    import numpy as np
    import onnx
    from onnx import numpy_helper
    back = onnx.load(str(work / "back.onnx"))
    assert np.array_equal(numpy_helper.to_array(back.graph.initializer[0]), np.arange(50000, dtype=np.float32))


@pytest.mark.slow
def test_make_wheel_is_manylinux_and_runs_without_system_libraries(tmp_path):
    out = run(["make", "--no-print-directory", "wheel", f"WHEEL_DIR={tmp_path / 'dist'}"], cwd=REPO)
    wheels = list((tmp_path / "dist").glob(f"onnxio-*-{PLAT}.whl"))
    assert len(wheels) == 1, out
    assert f'consistent with\nthe following platform tag: "{PLAT}"' in out, out
    assert wheels[0].stat().st_size <= 10 << 20
    smoke(wheels[0], tmp_path)


@pytest.mark.slow
def test_sdist_builds_without_system_headers(tmp_path):
    needs("cc", "pip builds the sdist with the system's C compiler")
    needs("build", "it makes the sdist")
    run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path / "sdist"), str(REPO)])
    sdists = list((tmp_path / "sdist").glob("onnxio-*.tar.gz"))
    assert len(sdists) == 1, sdists
    hide = existing(INCLUDE_DIRS, HEADERS) + existing(PC_DIRS, PC_FILES)
    # Inside, the hidden files are empty: the build cannot have used them.
    checks = " && ".join(f"test ! -s {p}" if not os.path.isdir(p) else f"test -z \"$(ls -A {p})\"" for p in hide)
    out = hidden_run(hide, f"{checks or 'true'} && {sys.executable} -m pip wheel --disable-pip-version-check "
                           f"--no-build-isolation --no-deps -v -w {tmp_path / 'whl'} {sdists[0]}", tmp_path)
    assert re.search(r"onnxio: libdeflate: the copy in third_party/libdeflate \(", out), out[-4000:]
    wheels = list((tmp_path / "whl").glob("onnxio-*.whl"))
    assert len(wheels) == 1, out[-4000:]
    smoke(wheels[0], tmp_path)


def test_cibuildwheel_configuration_covers_the_platforms():
    cibuildwheel = needs("cibuildwheel", "pyproject.toml's [tool.cibuildwheel] is read by it")
    want = {
        "linux": ["manylinux_x86_64", "manylinux_aarch64", "musllinux_x86_64", "musllinux_aarch64"],
        "macos": ["macosx_x86_64", "macosx_arm64"],
        "windows": ["win_amd64"],
    }
    for plat, tags in want.items():
        ids = run([str(cibuildwheel), "--print-build-identifiers", "--platform", plat], cwd=REPO).split()
        for tag in tags:
            for py in ("cp39", "cp313"):
                assert f"{py}-{tag}" in ids, (plat, ids)
    # The workflow that runs it pins the version the test ran.
    workflow = (REPO / ".github" / "workflows" / "wheels.yml").read_text()
    pin = re.search(r"^cibuildwheel==(\S+)$", (REPO / "requirements.txt").read_text(), re.M)
    assert pin and f"pypa/cibuildwheel@v{pin.group(1)}" in workflow
    for arch in ("x86_64", "aarch64", "x86_64 arm64", "AMD64"):
        assert f"archs: {arch}\n" in workflow, arch


def _cpythons():
    """Every CPython 3.9 to 3.13 on this machine: the system's python3 and
    pyenv's versions (one interpreter per minor version)."""
    found = {}
    candidates = [Path("/usr/bin/python3")]
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(root.glob("3.*/bin/python3.*[0-9]"))
    for py in candidates:
        try:
            v = subprocess.run([str(py), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=60).stdout.strip()
        except OSError:
            continue
        if v in ("3.9", "3.10", "3.11", "3.12", "3.13") and v not in found:
            found[v] = py
    return found


@pytest.mark.slow
def test_make_wheel_for_every_cpython_on_the_machine(tmp_path):
    """`make wheel PYTHON=/path/to/python3.X` for every CPython 3.9-3.13
    found (the system's python3 among them): each gives that version's
    manylinux_2_28 wheel, which pip installs into a fresh venv of that
    Python (with numpy and ml_dtypes from PyPI) where wheel_smoke.py runs.
    The time of each build is printed (BENCHMARKS.md, "Builds and the quick tier")."""
    import time

    pythons = _cpythons()
    assert "3.11" in pythons, pythons  # at least the system's
    for version, py in sorted(pythons.items()):
        tag = "cp" + version.replace(".", "")
        dist = tmp_path / f"dist-{version}"
        start = time.monotonic()
        run(["make", "--no-print-directory", "wheel", f"PYTHON={py}", f"WHEEL_DIR={dist}"], cwd=REPO)
        took = time.monotonic() - start
        wheels = list(dist.glob(f"onnxio-*-{tag}-{tag}-{PLAT}.whl"))
        assert len(wheels) == 1, list(dist.iterdir())
        venv = tmp_path / f"venv-{version}"
        run([str(py), "-m", "venv", str(venv)])
        run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
             str(wheels[0])])
        work = tmp_path / f"work-{version}"
        work.mkdir()
        out = run([str(venv / "bin" / "python"), str(SMOKE), str(work)], cwd=tmp_path)
        assert "python ok" in out and "cli ok" in out, (version, out)
        print(f"{version}: make wheel {took:.0f} s, {wheels[0].name}")
