#!/usr/bin/env bash
# The Windows build, cross-compiled with mingw-w64 and tested under Wine:
#
#   scripts/windows.sh build   build-windows/: onnxio.exe, libonnxio.dll and
#                              its import library libonnxio.dll.a, the static
#                              libonnxio.a, and the C tests (.exe)
#   scripts/windows.sh test    build, then ctest in build-windows/ (every C
#                              test through scripts/wine_run.sh)
#
# Installs what it needs from Debian when it is missing (apt-get; as root,
# as on CI): gcc-mingw-w64-x86-64, wine64, and libz-mingw-w64-dev (zlib, the
# C tests' reference, built for mingw-w64). libdeflate is the copy in
# third_party/ (ONNXIO_BUNDLED=ON).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
what="${1:-build}"
need=()
command -v x86_64-w64-mingw32-gcc-posix >/dev/null || need+=(gcc-mingw-w64-x86-64)
command -v wine64 >/dev/null || [[ -x /usr/lib/wine/wine64 ]] || command -v wine >/dev/null || need+=(wine64)
[[ -f /usr/x86_64-w64-mingw32/include/zlib.h ]] || need+=(libz-mingw-w64-dev)
if ((${#need[@]})); then
    echo "==> apt-get install ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
echo "==> build-windows/ with mingw-w64"
cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake -DONNXIO_BUNDLED=ON -DONNXIO_TESTS=ON \
    ${CMAKE_ARGS:-} >/dev/null
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL cmake --build build-windows -j"${JOBS:-$(nproc)}"
[[ "$what" == test ]] || exit 0
echo "==> ctest under Wine in build-windows/"
cd build-windows
rc=0
ctest --output-on-failure --no-tests=error -j"${CTEST_JOBS:-1}" || rc=$?
# What the tests skipped, each line after its test's name (ctest shows a
# passing test's output only in its log): scripts/test.sh sums them up.
awk '/^[0-9]+\/[0-9]+ Testing: /{t = $NF} /skipped on Windows: |skipped: /{sub(/^ */, ""); print t ": " $0}' \
    Testing/Temporary/LastTest.log 2>/dev/null || true
exit "$rc"
