#!/usr/bin/env bash
# Builds the Python extension for development into build-py-<NAME>/ (one
# folder per developer, so parallel builds never clobber each other) and
# links the package's .py files beside it. Then:
#   PYTHONPATH=build-py-<NAME>/lib .venv/bin/python -c 'import onnxio'
# `pip install .` (what `make test` does) is the real install; this is only
# a faster edit-compile loop.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
name="${1:-dev}"
out="build-py-$name"
.venv/bin/python setup.py -q build_ext -j 2 --build-temp "$out/tmp" --build-lib "$out/lib" >/dev/null
for f in python/onnxio/*.py; do
    ln -sf "$PWD/$f" "$out/lib/onnxio/$(basename "$f")"
done
echo "$out/lib"
