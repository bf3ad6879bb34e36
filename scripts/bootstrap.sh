#!/usr/bin/env bash
# Installs what building, testing and benchmarking onnxio need, and nothing
# when it is all there already (a second run takes well under a second).
#
#   scripts/bootstrap.sh            Debian packages + .venv with requirements.txt
#                                   (the tests and benchmarks: make test, make bench)
#   scripts/bootstrap.sh check      the Debian packages, and .venv with
#                                   requirements/check.txt only (what `make check`,
#                                   the quick tier, installs when .venv is missing);
#                                   a .venv that has requirements.txt already does
#   scripts/bootstrap.sh demo       what `make demo` needs only: fewer Debian
#                                   packages, and .venv-demo with requirements/demo.txt
#                                   (onnx and numpy, about 150 MB against 1.6 GB)
#   scripts/bootstrap.sh wheel      what `make wheel` needs only: Python's headers,
#                                   and .venv-wheel with requirements/wheel.txt (zig cc,
#                                   CMake, scikit-build-core, auditwheel; no system
#                                   compiler, CMake or library)
#   ONNXIO_NO_VENV=1 scripts/bootstrap.sh [demo|wheel]   Debian packages only
#
# Debian packages: checked with dpkg-query; missing ones are installed with
# apt-get when running as root, otherwise the exact command is printed and
# the script exits 1. The Python environment: made with whatever `python3`
# is on PATH, filled from its requirements file(s); a stamp file in it holds
# their hash (and the Python version) so that pip only runs when they
# change. pip runs quietly, with a line on stderr every 10 s
# (scripts/ticker.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

mode="${1:-all}"
case "$mode" in
    all | check | demo | wheel) ;;
    *) echo "usage: scripts/bootstrap.sh [check|demo|wheel]" >&2; exit 2 ;;
esac

log() { printf 'bootstrap: %s\n' "$*" >&2; }

# ---- Debian packages -------------------------------------------------------

if [[ $mode == wheel ]]; then
    packages=()            # zig cc and CMake come from PyPI; Python.h is checked below
else
packages=(              # the build and the demo
    build-essential       # gcc, g++ (the libprotobuf benchmark), make
    cmake
    pkgconf               # pkg-config: finds libdeflate; the install test builds programs with onnxio.pc
    zlib1g-dev            # the C tests' reference: crc32, and deflate to build archives as zip tools do
    libdeflate-dev        # CRC-32 of .onnxz entries
    unzip                 # an independent check of the .onnxz archives onnxio writes (tests, demo)
    libonnx-testdata      # ONNX's own test models, used by tests and the demo
)
fi
if [[ $mode == all || $mode == check ]]; then
    packages+=(           # the tests and benchmarks
        clang                 # libFuzzer targets
        libclang-rt-14-dev    # clang's sanitizer and libFuzzer runtimes
        libisal2              # a faster CRC-32, loaded at run time when present (src/base/digest.c)
        strace                # counts the fsync calls of saves with fsync off (tests)
        abigail-tools         # abidiff: the library's ABI against 0.2 (tests/python/test_abi.py)
        libprotobuf-dev       # C++ baseline in bench/
        protobuf-compiler
    )
fi
if [[ $mode == all ]]; then
    packages+=(           # the slow tests only
        gcc-aarch64-linux-gnu # the Arm SHA instructions' code, built for 64-bit Arm
        libc6-dev-arm64-cross
        qemu-user             # and run there (tests/python/test_arm.py)
    )
fi

# The Python that makes the venv: python3 on PATH, or ONNXIO_PYTHON_BASE
# (`make wheel PYTHON=/path/to/python3.X`: a wheel for that version).
base="${ONNXIO_PYTHON_BASE:-python3}"
py="$(command -v "$base" || true)"
if [[ -z "$py" && $base == python3 ]]; then
    packages+=(python3 python3-venv)
elif [[ -z "$py" ]]; then
    log "no Python at $base"
    exit 1
elif ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    # Debian's own python3 ships venv's pip bootstrap separately.
    packages+=(python3-venv)
fi
# The tests run the README's blocks with the system's own python3 (its
# PATH is /usr/local/bin:/usr/bin:/bin), whatever python3 comes first here.
if [[ ($mode == all || $mode == check) && -x /usr/bin/python3 ]] && ! /usr/bin/python3 -c 'import venv, ensurepip, os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' >/dev/null 2>&1; then
    packages+=(python3-venv python3-dev)
fi
# The extension compiles against the headers of the Python that makes the
# venv: Debian's own python3 ships them separately.
if [[ -n "$py" ]] && ! "$py" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
    packages+=(python3-dev)
fi

missing=()
for p in "${packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
    if [[ "$(id -u)" != 0 ]]; then
        log "missing Debian packages: ${missing[*]}"
        log "install them as root with:"
        printf "  sudo sh -c '%s'\n" "$cmd" >&2
        exit 1
    fi
    log "installing Debian packages: ${missing[*]}"
    # Another apt or dpkg (unattended upgrades, a second bootstrap) may hold
    # the lock: wait for it, up to 10 minutes, instead of failing at once.
    lock=(-o DPkg::Lock::Timeout=600)
    apt-get "${lock[@]}" update
    DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y --no-install-recommends "${missing[@]}"
fi

# ---- Python environment ----------------------------------------------------

if [[ "${ONNXIO_NO_VENV:-0}" == 1 ]]; then
    exit 0
fi

if [[ $mode == demo ]]; then
    venv="$root/.venv-demo"
    reqs=(requirements/demo.txt)
    check='import onnx, numpy'
elif [[ $mode == wheel ]]; then
    venv="$root/.venv-wheel"
    if [[ -n "${ONNXIO_PYTHON_BASE:-}" ]]; then
        venv="$root/.venv-wheel-$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    fi
    reqs=(requirements/wheel.txt)
    check='import ziglang, cmake, scikit_build_core, auditwheel'
elif [[ $mode == check ]]; then
    venv="$root/.venv"
    reqs=(requirements/check.txt requirements/demo.txt)
    check='import onnx, numpy, pytest, google.protobuf, onnxruntime, onnx_ir, scikit_build_core, mypy, build'
else
    venv="$root/.venv"
    reqs=(requirements.txt requirements/check.txt requirements/demo.txt)
    check='import onnx, numpy, pytest, google.protobuf, grpc_tools, onnxruntime, onnx_ir, scikit_build_core, mypy, build'
fi
stamp="$venv/.onnxio-requirements.sha256"
py="$(command -v "$base")"
pyver="$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
want="$(cat "${reqs[@]}" | sha256sum | cut -d' ' -f1) python-$pyver"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi
# The quick tier is content with the whole set.
full="$(cat requirements.txt requirements/check.txt requirements/demo.txt | sha256sum | cut -d' ' -f1) python-$pyver"
if [[ $mode == check && -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$full" ]]; then
    exit 0
fi

have="$("$venv/bin/python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || true)"
if [[ "$have" != "$pyver" ]]; then
    log "creating $venv with $py ($pyver)"
    rm -rf "$venv"
    "$py" -m venv "$venv"
fi
log "installing ${reqs[0]} into $venv (pip, quiet; a line every 10 s)"
"$root/scripts/ticker.sh" "bootstrap: pip install -r ${reqs[0]}" \
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "${reqs[0]}"
"$venv/bin/python" -c "$check"
printf '%s\n' "$want" > "$stamp"
log "Python environment ready: $venv ($(du -sh "$venv" | cut -f1))"
