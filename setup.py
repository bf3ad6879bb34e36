"""Builds the onnxio._onnxio extension: the C library (src/*.c) and the
extension (python/ext/*.c) compiled together into one module, so the wheel
needs no shared library beside it. pyproject.toml has the metadata; this file
only describes the extension, which pyproject.toml cannot, and the version,
which comes from ONNXIO_VERSION_STRING in include/onnxio/onnxio.h (one
place for the library, the command and the package).

Build outputs go under build/python/ (setuptools' build_base), inside the
folder that `make clean` removes, never beside the sources.

The public header onnxio/proto.h includes "onnxio/schema.def"; the schema
rows live in src/schema.def (docs/design.md), so the build copies them into a
scratch include directory, as CMake does for build/include/onnxio/."""
import glob
import os
import re
import shutil

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def rel(*parts):
    return os.path.join(*parts)


BUILD_BASE = rel("build", "python")


def library_version():
    with open(rel("include", "onnxio", "onnxio.h"), encoding="utf-8") as f:
        m = re.search(r'#define ONNXIO_VERSION_STRING "([^"]+)"', f.read())
    if not m:
        raise RuntimeError("ONNXIO_VERSION_STRING not found in include/onnxio/onnxio.h")
    return m.group(1)


def schema_include_dir():
    inc = rel(BUILD_BASE, "include")
    os.makedirs(rel(inc, "onnxio"), exist_ok=True)
    for name in ("schema.def", "status.def"):
        shutil.copyfile(rel("src", name), rel(inc, "onnxio", name))
    return inc


os.chdir(HERE)
sources = sorted(glob.glob(rel("src", "*.c"))) + sorted(glob.glob(rel("python", "ext", "*.c")))

setup(
    version=library_version(),
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    ext_modules=[
        Extension(
            "onnxio._onnxio",
            sources=sources,
            include_dirs=[schema_include_dir(), "include", rel("python", "ext")],
            libraries=["crypto", "z", "pthread"],
            extra_compile_args=["-std=c11", "-O2", "-fvisibility=hidden", "-D_GNU_SOURCE", "-DONNXIO_BUILDING",
                                "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                                "-Wno-unused-parameter", "-Wno-cast-function-type"],
            depends=glob.glob(rel("src", "*.h")) + glob.glob(rel("python", "ext", "*.h"))
            + [rel("src", "schema.def"), rel("src", "status.def"), rel("include", "onnxio", "onnxio.h"),
               rel("include", "onnxio", "proto.h")],
        )
    ],
)
