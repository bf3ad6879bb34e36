"""C and C++ programs built against an installed onnxio, as its users build
them: `cmake --install build --prefix DIR`, then tests/install/consumer.c
(and the same file as C++17, consumer.cpp) built four ways in each language
(find_package(onnxio) with onnxio::onnxio and onnxio::onnxio_static;
pkg-config shared, and pkg-config --static in a static executable) and run:
each saves a model, loads it back and compares. The shared library is
versioned (SONAME libonnxio.so.MAJOR) and exports the public API only.
The README's C build lines are run too.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import needs

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
CONSUMER = REPO / "tests" / "install"
TOOLS = ("cmake", "cc", "c++", "pkg-config")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert r.returncode == 0, f"{cmd if isinstance(cmd, str) else ' '.join(map(str, cmd))}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def header_version():
    text = (REPO / "include" / "onnxio" / "onnxio.h").read_text()
    return re.search(r'#define ONNXIO_VERSION_STRING "([^"]+)"', text).group(1)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    for tool in TOOLS:
        needs(tool, "the programs are built as users build them")
    needs("build tree", "the library is installed from it")
    run(["cmake", "--build", str(BUILD), "-j2"])
    dest = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", str(BUILD), "--prefix", str(dest)])
    return dest


def needed(binary):
    """The shared libraries an executable names (ldd, one per line)."""
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    return r.stdout


def test_installed_tree(prefix):
    version = header_version()
    major = version.split(".")[0]
    lib = prefix / "lib"
    for name in (f"libonnxio.so.{version}", "libonnxio.a", "pkgconfig/onnxio.pc",
                 "cmake/onnxio/onnxioConfig.cmake", "cmake/onnxio/onnxioConfigVersion.cmake"):
        assert (lib / name).exists(), name
    assert os.readlink(lib / "libonnxio.so") == f"libonnxio.so.{major}"
    assert os.readlink(lib / f"libonnxio.so.{major}") == f"libonnxio.so.{version}"
    assert f"Library soname: [libonnxio.so.{major}]" in run(["readelf", "-d", str(lib / "libonnxio.so")])
    exported = run(["nm", "-D", "--defined-only", str(lib / "libonnxio.so")]).split("\n")
    names = [line.split()[-1] for line in exported if line.strip()]
    assert names and all(n.startswith("onnxio_") and not n.startswith("onnxio__") for n in names), \
        [n for n in names if not n.startswith("onnxio_") or n.startswith("onnxio__")][:10]
    for h in ("onnxio.h", "proto.h", "schema.def", "status.def"):
        assert (prefix / "include" / "onnxio" / h).exists(), h
    assert (prefix / "bin" / "onnxio").exists()
    assert (lib / "pkgconfig" / "onnxio.pc").read_bytes().endswith(b"}\n")
    assert run([str(prefix / "bin" / "onnxio"), "--version"]).strip().endswith(version)


def test_make_install(tmp_path):
    """make install PREFIX=DIR installs the same tree as cmake --install."""
    for tool in (*TOOLS, "make"):
        needs(tool)
    needs("build tree", "make install installs from it")
    run(["make", "--no-print-directory", "install", f"PREFIX={tmp_path}"], cwd=REPO,
        env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
    version = header_version()
    for name in ("include/onnxio/onnxio.h", f"lib/libonnxio.so.{version}", "lib/libonnxio.a",
                 "lib/pkgconfig/onnxio.pc", "lib/cmake/onnxio/onnxioConfig.cmake", "bin/onnxio"):
        assert (tmp_path / name).exists(), name


def test_find_package(prefix, tmp_path):
    """find_package(onnxio): onnxio::onnxio and onnxio::onnxio_static, C and C++."""
    out = tmp_path / "build"
    run(["cmake", "-S", str(CONSUMER), "-B", str(out), f"-DCMAKE_PREFIX_PATH={prefix}"])
    run(["cmake", "--build", str(out)])
    for lang in ("c", "cxx"):
        for kind in ("shared", "static"):
            exe = out / f"consumer_{lang}_{kind}"
            assert run([str(exe), str(tmp_path / f"{lang}_{kind}.onnx")]) == f"onnxio {header_version()} ok\n"
            assert ("libonnxio.so" in needed(exe)) == (kind == "shared"), (exe, needed(exe))


@pytest.mark.parametrize("lang,compiler,source,std", [("c", "cc", "consumer.c", "-std=c11"),
                                                       ("cxx", "c++", "consumer.cpp", "-std=c++17")])
def test_pkg_config(prefix, tmp_path, lang, compiler, source, std):
    """pkg-config --cflags --libs onnxio (shared), and --static for a static
    executable; the .pc file is relocatable (found from where it is)."""
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "onnxio"], env=env).split()
    static_flags = run(["pkg-config", "--static", "--cflags", "--libs", "onnxio"], env=env).split()
    assert "-ldeflate" in static_flags and "-ldeflate" not in flags
    assert not {"-lz", "-lcrypto"} & set(static_flags), static_flags
    libdir = run(["pkg-config", "--variable=libdir", "onnxio"], env=env).strip()
    warn = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
    shared, static = tmp_path / f"{lang}_shared", tmp_path / f"{lang}_static"
    run([compiler, std, *warn, "-o", str(shared), str(CONSUMER / source), *flags, f"-Wl,-rpath,{libdir}"])
    run([compiler, "-static", std, *warn, "-o", str(static), str(CONSUMER / source), *static_flags])
    for exe in (shared, static):
        assert run([str(exe), str(tmp_path / f"{exe.name}.onnx")]) == f"onnxio {header_version()} ok\n"
    assert "libonnxio.so" in needed(shared)
    assert "libonnxio" not in needed(static)


def test_readme_c_lines(prefix, tmp_path):
    """The README's C section: its build commands, run as written (with
    the prefix of this install), build a program that runs."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- c-build: tested by tests/python/test_install.py -->\s*```sh\n(.*?)```", readme, re.S)
    assert block, "README.md has no tested C build block"
    program = re.search(r"<!-- c-program -->\s*```c\n(.*?)```", readme, re.S)
    assert program, "README.md has no C example program"
    (tmp_path / "app.c").write_text(program.group(1))
    env = dict(os.environ, PREFIX=str(prefix), PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    for line in block.group(1).strip().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            run(["bash", "-c", line], cwd=tmp_path, env=env)
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    w = numpy_helper.from_array(np.arange(1024, dtype=np.float32), "W")
    node = helper.make_node("Identity", ["W"], ["Y"])
    model = helper.make_model(helper.make_graph([node], "g", [], [helper.make_tensor_value_info(
        "Y", onnx.TensorProto.FLOAT, [1024])], [w]))
    onnx.save(model, tmp_path / "in.onnx")
    for exe in ("app", "app-static"):
        out = tmp_path / f"{exe}-out" / "out.onnx"
        out.parent.mkdir()
        r = subprocess.run([str(tmp_path / exe), str(tmp_path / "in.onnx"), str(out)], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout == "1 nodes, 1 initializers\n", (exe, r.stdout, r.stderr)
        # onnx reads what the program wrote, weights from the data file
        back = onnx.load(str(out))
        assert (out.parent / "weights.data").exists()
        assert np.array_equal(numpy_helper.to_array(back.graph.initializer[0]), np.arange(1024, dtype=np.float32))


# Hides libdeflate from a configure (its pkg-config lookup), as a machine
# without its development files.
HIDE_SYSTEM_LIBS = ([], {"PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": ""})


@pytest.mark.parametrize("hide,env,line", [
    (["-DONNXIO_TESTS=ON", "-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON"], {},
     "onnxio needs zlib for its tests (ONNXIO_TESTS=OFF builds without them): apt install zlib1g-dev"
     " | dnf install zlib-devel | brew install zlib"),
    (["-DONNXIO_BUNDLED=OFF", "-DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON"], {},
     "onnxio needs pkg-config: apt install pkgconf | dnf install pkgconf-pkg-config | brew install pkgconf"),
    (["-DONNXIO_BUNDLED=OFF"], {"PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": ""},
     "onnxio needs libdeflate: apt install libdeflate-dev | dnf install libdeflate-devel | brew install libdeflate"),
    (["-DONNXIO_PYTHON=ON", "-DCMAKE_DISABLE_FIND_PACKAGE_Python=ON"], {},
     "onnxio needs the Python headers (3.9 or later): apt install python3-dev | dnf install python3-devel"
     " | brew install python"),
    ([], {"CC": "/nonexistent/cc"},
     "onnxio needs a C compiler: apt install gcc | dnf install gcc | xcode-select --install"),
], ids=["zlib-for-tests", "pkg-config", "libdeflate", "python-headers", "compiler"])
def test_missing_build_dependency_names_the_package(tmp_path, hide, env, line):
    """A configure that cannot find a build dependency (hidden here), and
    may not use the copy in third_party/ (ONNXIO_BUNDLED=OFF), fails with
    one line naming the package to install, not CMake's generic "required
    packages were not found"."""
    needs("cmake")
    r = subprocess.run(["cmake", "-S", str(REPO), "-B", str(tmp_path / "b"), "-DONNXIO_TESTS=OFF", *hide],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, **env))
    assert r.returncode != 0
    lines = [x.strip() for x in (r.stdout + r.stderr).splitlines()]
    assert line in lines, r.stdout + r.stderr


@pytest.mark.slow
def test_build_without_system_libdeflate(tmp_path):
    """Without the system's libdeflate (hidden from the configure), the
    build takes the copy kept in third_party/ and says so; the shared
    library exports the onnxio API only, not the copy's functions; the
    command it builds links neither zlib nor libdeflate (ldd), writes an .onnxz whose
    entries unzip(1) checks (CRC-32), and reads back one whose entries
    Python's zipfile deflated (inflate, CRC-32), equal to the model onnx
    wrote."""
    import zipfile

    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    needs("cmake")
    flags, env = HIDE_SYSTEM_LIBS
    b = tmp_path / "b"
    out = run(["cmake", "-S", str(REPO), "-B", str(b), "-DONNXIO_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release", *flags],
              env=dict(os.environ, **env))
    assert "onnxio: libdeflate: the copy in third_party/libdeflate" in out and "zlib" not in out, out
    run(["cmake", "--build", str(b), "-j2", "--target", "onnxio_cli", "onnxio_shared"])
    exported = [line.split()[-1] for line in run(["nm", "-D", "--defined-only", str(b / "libonnxio.so")]).splitlines()
                if line.strip()]
    assert exported and all(n.startswith("onnxio_") for n in exported), [n for n in exported
                                                                         if not n.startswith("onnxio_")][:10]
    cli = b / "onnxio"
    assert not re.search(r"libz\.so|libdeflate|libcrypto", needed(cli)), needed(cli)

    w = numpy_helper.from_array(np.arange(4096, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4096])], [w])
    model = helper.make_model(g)
    onnx.save(model, str(tmp_path / "m.onnx"))
    run([str(cli), "convert", str(tmp_path / "m.onnx"), str(tmp_path / "m.onnxz")])
    needs("unzip")
    run(["unzip", "-tq", str(tmp_path / "m.onnxz")])

    # An archive with deflated entries, written by zipfile from the entries
    # onnxio wrote.
    with zipfile.ZipFile(tmp_path / "m.onnxz") as src, \
            zipfile.ZipFile(tmp_path / "d.onnxz", "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    run([str(cli), "convert", str(tmp_path / "d.onnxz"), str(tmp_path / "back.onnx")])
    back = onnx.load(str(tmp_path / "back.onnx"))
    assert back.SerializeToString() == model.SerializeToString()
