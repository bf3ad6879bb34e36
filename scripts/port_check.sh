#!/usr/bin/env bash
# Compiles the library's and the command's sources for another platform
# with zig cc (from .venv-wheel, `scripts/bootstrap.sh wheel`), which carries
# the C library headers of Linux (glibc, musl), macOS and Windows (MinGW),
# and prints each compile error once: the portability gaps that a build on
# that platform meets first. Nothing is linked or run; it finds what does
# not compile, not what behaves differently.
#
#   scripts/port_check.sh [zig target ...]
#
# Default targets: x86_64-linux-musl aarch64-linux-gnu.2.28 aarch64-macos
# x86_64-windows-gnu. Exits 1 when any target has errors.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ -x .venv-wheel/bin/python ]] || scripts/bootstrap.sh wheel || exit 2
(($#)) || set -- x86_64-linux-musl aarch64-linux-gnu.2.28 aarch64-macos x86_64-windows-gnu
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# The headers CMake generates (onnxio/limits.h, the .def copies): a
# configure of the host build, with zig cc for this machine.
PATH="$root/.venv-wheel/bin:$PATH" CC="$root/scripts/zigcc" ONNXIO_PYTHON="$root/.venv-wheel/bin/python" \
    cmake -S . -B "$out/build" -DONNXIO_TESTS=OFF -DONNXIO_BUNDLED=ON >"$out/configure.log" 2>&1 ||
    { cat "$out/configure.log"; exit 2; }
status=0
for target in "$@"; do
    errors="$(for f in src/*/*.c cli/*.c; do
        .venv-wheel/bin/python -m ziglang cc -target "$target" -std=c11 -D_GNU_SOURCE -DONNXIO_BUILDING \
            -Iinclude -I"$out/build/include" -Isrc -Icli -Ithird_party -Ithird_party/libdeflate \
            -c -o "$out/x.o" "$f" 2>&1 | grep -E ': (fatal )?error: ' | grep -v 'too many errors'
    done | sort -u)"
    if [[ -z "$errors" ]]; then
        echo "$target: compiles"
    else
        echo "$target: $(wc -l <<<"$errors") errors in $(cut -d: -f1 <<<"$errors" | sort -u | wc -l) files"
        sed 's/^/  /' <<<"$errors"
        status=1
    fi
done
exit $status
