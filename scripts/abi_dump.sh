#!/usr/bin/env bash
# Writes the public ABI of libonnxio.so as built at a commit, as abidw
# describes it (the public headers' types only), to a file:
#
#   scripts/abi_dump.sh COMMIT OUT.abi
#
# tests/abi/onnxio-0.2.abi, the baseline tests/python/test_abi.py compares
# the library with, was made this way from the commit that pinned the 0.2
# option layouts (tests/abi/README.md). Needs abidw (abigail-tools),
# cmake and a C compiler.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: scripts/abi_dump.sh COMMIT OUT.abi" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
commit="$1"
out="$(realpath -m "$2")"
work="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach -q "$work/src" "$commit"
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$work/build" --target onnxio_shared -j"$(nproc)" >/dev/null
lib="$(readlink -f "$work/build/libonnxio.so")"
# The file name of the library, not the temporary path, goes in the dump.
abidw --no-corpus-path --short-locs --headers-dir "$work/src/include/onnxio" --headers-dir "$work/build/include/onnxio" \
    "$lib" | sed "s|comp-dir-path='$work/|comp-dir-path='|" > "$out"
echo "abi_dump: $out ($(git -C "$root" rev-parse --short "$commit"), $(grep -c '<function-decl' "$out") functions)"
