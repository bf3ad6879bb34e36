#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang, ASan and
# UBSan, the library instrumented for coverage too, and runs each one for
# FUZZ_SECONDS (default 60) seeded from real ONNX files; then runs the
# atheris target of the Python package (tests/fuzz/fuzz_python.py) for as
# long, with the same seeds (models, tensors and archives). `make test` runs
# it (make test-fuzz installs the package into .venv first:
# fuzz_python.py fuzzes the installed package, as users import it).
#
#   scripts/fuzz.sh                 build build-fuzz/ and run every fuzzer
#   FUZZ_SECONDS=600 scripts/fuzz.sh fuzz_decode    one fuzzer, longer
#   FUZZ_SECONDS=300 scripts/fuzz.sh fuzz_python    the Python target only
#                                   (the package as installed in .venv:
#                                   `make python-install` first)
#   FUZZ_BUILD=build-fuzz-x FUZZ_CACHE=.cache/fuzz-x scripts/fuzz.sh fuzz_archive
#                                   other build and cache directories
#   FUZZ_PYTHON=/path/to/python     the interpreter of fuzz_python.py
#                                   (default .venv/bin/python; it needs
#                                   atheris, pinned in requirements.txt)
#
# Seeds: .onnx and .pb files of at most 64 KiB from libonnx-testdata and
# ../shared/corpus (a fixed selection of a few hundred), copied to
# .cache/fuzz/seed/, plus what tests/fuzz/make_seeds.sh makes when it exists
# (.cache/fuzz/seed-tests/). fuzz_archive is seeded only with the small
# .onnxz archives make_seeds.sh makes with the onnxio CLI (built here too)
# and python3's zipfile (.cache/fuzz/seed-archive/); fuzz_cli (the onnxio
# command run in-process) and fuzz_slice with both; fuzz_safetensors only
# with the .safetensors files make_seeds.sh writes
# (.cache/fuzz/seed-safetensors/); fuzz_text and fuzz_onnx_text with seed
# models printed as text (.cache/fuzz/seed-text/, seed-onnx-text/). What a
# fuzzer finds
# beyond them accumulates in
# .cache/fuzz/corpus/NAME/; a crash leaves its input in
# .cache/fuzz/artifacts/ and makes the script exit 1 (after the other
# fuzzers have run). Exits 0 with a note when there are no fuzz targets.
# fuzz_python.py's findings (a crash, an exception other than the package's
# documented ones, a broken invariant, a hang) go to the same places.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
SHARED="${SHARED:-$root/../shared}"
TESTDATA="${TESTDATA:-/usr/share/libonnx-testdata/data}"
CC_FUZZ="${CC_FUZZ:-clang}"
build="${FUZZ_BUILD:-build-fuzz}"
cache="${FUZZ_CACHE:-.cache/fuzz}"
max_seed=65536

# The fuzzers' temporary files (fuzz_python.py's empty directory among them:
# libFuzzer ends the process without Python's atexit) go in one directory,
# removed when this script ends.
TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/onnxio-fuzz-run-XXXXXX")"
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

shopt -s nullglob
sources=(tests/fuzz/fuzz_*.c)
if ((${#sources[@]} == 0)); then
    echo "fuzz: no tests/fuzz/fuzz_*.c, skipped"
    exit 0
fi

echo "==> fuzz: configure and build $build/ ($CC_FUZZ, ASan+UBSan, libFuzzer)"
# The library gets coverage instrumentation from CMAKE_C_FLAGS
# (fuzzer-no-link); ONNXIO_SANITIZE adds ASan and UBSan everywhere and the
# fuzz targets link libFuzzer itself.
CMAKE="${CMAKE:-cmake}"
CC="$CC_FUZZ" "$CMAKE" -S . -B "$build" -DONNXIO_FUZZ=ON -DONNXIO_SANITIZE=ON -DONNXIO_TESTS=OFF \
    -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
targets=()
for src in "${sources[@]}"; do targets+=("$(basename "$src" .c)"); done
# The CLI converts seed models to .onnxz archives (tests/fuzz/make_seeds.sh).
"$CMAKE" --build "$build" -j"$JOBS" --target "${targets[@]}" onnxio_cli

# ---- seed corpus -----------------------------------------------------------

# A fixed, spread-out selection (every Nth file in sorted order) so that the
# seeds are the same on every machine with the same inputs.
pick() { # pick EVERY < list-of-files
    awk -v n="$1" 'NR % n == 1 || n == 1'
}
small() { find "$@" -type f \( -name '*.onnx' -o -name '*.pb' \) -size -"$((max_seed + 1))"c 2>/dev/null | LC_ALL=C sort; }

seed="$cache/seed"
rm -rf "$seed"
mkdir -p "$seed"
{
    if [[ -d "$SHARED/corpus" ]]; then small "$SHARED/corpus"; fi
    if [[ -d "$TESTDATA" ]]; then
        small "$TESTDATA" | { grep '/model\.onnx$' || true; } | pick 5  # ~210 of 1,072 models
        small "$TESTDATA" | { grep '\.pb$' || true; } | pick 32         # ~100 of 3,200 tensors
    fi
} | while IFS= read -r f; do
    # Named by content: duplicates collapse.
    h="$(sha1sum "$f" | cut -c1-40)"
    cp "$f" "$seed/$h"
done
n_seed=$(find "$seed" -type f | wc -l)
if ((n_seed == 0)); then
    echo "fuzz: no seed files found (looked in $TESTDATA and $SHARED/corpus); fuzzing from empty" >&2
fi
echo "==> fuzz: $n_seed seed files in $seed"
seeds=("$seed")
# Seeds the fuzz targets' author made for them (e.g. tensors with a leading
# type byte), when tests/fuzz provides a script for that.
archive_seeds=()
safetensors_seeds=()
if [[ -f tests/fuzz/make_seeds.sh ]]; then
    rm -rf "$cache/seed-tests" "$cache/seed-archive" "$cache/seed-safetensors"
    made="$(sh tests/fuzz/make_seeds.sh "$cache/seed-tests" "$max_seed" "$build/onnxio" "$cache/seed-archive" \
        "$cache/seed-safetensors")"
    echo "==> fuzz: tests/fuzz/make_seeds.sh: $(printf '%s\n' "$made" | tail -n 1)"
    seeds+=("$cache/seed-tests")
    if [[ -d "$cache/seed-archive" ]]; then
        echo "==> fuzz: tests/fuzz/make_seeds.sh: $(printf '%s\n' "$made" | grep 'archive seeds' || true)"
        archive_seeds+=("$cache/seed-archive")
    fi
    if [[ -d "$cache/seed-safetensors" ]]; then
        echo "==> fuzz: tests/fuzz/make_seeds.sh: $(printf '%s\n' "$made" | grep 'safetensors seeds' || true)"
        safetensors_seeds+=("$cache/seed-safetensors")
    fi
fi

# fuzz_text reads text: small seed models as the CLI prints them in protobuf
# text format and JSON, after the byte that picks the style (0: text format,
# 1: JSON; both ModelProto).
text_seed="$cache/seed-text"
rm -rf "$text_seed"
mkdir -p "$text_seed"
n_text=0
for f in "$seed"/*; do
    [[ -f "$f" ]] && (($(wc -c <"$f") <= 16384)) || continue
    for b in 0 1; do
        fmt=textproto
        ((b == 1)) && fmt=json
        if ! { printf "\\$b"; "$build/onnxio" print --format "$fmt" --full "$f" 2>/dev/null; } >"$text_seed/$b-${f##*/}"; then
            rm -f "$text_seed/$b-${f##*/}"
        fi
    done
    n_text=$((n_text + 1))
    ((n_text < 80)) || break
done
echo "==> fuzz: $(find "$text_seed" -type f | wc -l) text seeds in $text_seed"

# fuzz_onnx_text reads ONNX's textual syntax: small seed models as
# onnx.printer writes them (the model, its graph, its first node and its
# functions, after the byte that picks the type: 0 model, 1 graph,
# 2 function, 3 node), when the onnx package is there to print them.
onnx_text_seed="$cache/seed-onnx-text"
rm -rf "$onnx_text_seed"
mkdir -p "$onnx_text_seed"
"${FUZZ_PYTHON:-$root/.venv/bin/python}" - "$seed" "$onnx_text_seed" <<'PY' 2>/dev/null || true
import os, sys
import onnx, onnx.printer
src, out = sys.argv[1], sys.argv[2]
n = 0
for name in sorted(os.listdir(src)):
    path = os.path.join(src, name)
    if os.path.getsize(path) > 16384 or n >= 80:
        continue
    try:
        m = onnx.load_model_from_string(open(path, "rb").read())
        parts = [(0, m), (1, m.graph)] + [(3, node) for node in m.graph.node[:1]] + [(2, f) for f in m.functions]
        for kind, msg in parts:
            with open(os.path.join(out, f"{kind}-{name}"), "wb") as f:
                f.write(bytes([kind]) + onnx.printer.to_text(msg).encode())
        n += 1
    except Exception:
        continue
PY
echo "==> fuzz: $(find "$onnx_text_seed" -type f | wc -l) ONNX text seeds in $onnx_text_seed"

# ---- run -------------------------------------------------------------------

want=("$@")
failed=()
export ASAN_OPTIONS="${FUZZ_ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${FUZZ_UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$cache/artifacts"
# Runs one fuzzer (the command after NAME and CORPUS) for FUZZ_SECONDS over
# its corpus and the seeds in `these`; on a failure prints the end of its log
# and how to reproduce each artifact, and adds NAME to `failed`.
fuzz_one() {
    local name="$1" corpus="$2"
    shift 2
    # -rss_limit_mb: malformed sizes must not turn into huge allocations.
    "$@" -max_total_time="$FUZZ_SECONDS" -timeout=25 -rss_limit_mb=2048 \
        -max_len="$max_seed" -print_final_stats=1 \
        -artifact_prefix="$cache/artifacts/$name-" "$corpus" "${these[@]}" \
        >"$cache/$name.log" 2>&1 &
    local pid=$! waited=0
    # A line of progress every 15 s: inputs run and coverage so far.
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        waited=$((waited + 1))
        if ((waited % 15 == 0)); then
            echo "    $name: ${waited}s of ${FUZZ_SECONDS}s: $(grep -aE '^#[0-9]+[[:space:]]+[a-zA-Z]+ +cov: ' \
                "$cache/$name.log" | tail -n 1 | awk '{sub("#", "", $1); print $1 " inputs, coverage " $4}')"
        fi
    done
    if wait "$pid"; then
        grep -E 'DONE|^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$cache/$name.log" || true
    else
        echo "fuzz: $name FAILED; last lines of $cache/$name.log:" >&2
        tail -n 60 "$cache/$name.log" >&2
        for a in "$cache/artifacts/$name-"*; do
            [[ -e "$a" ]] && echo "fuzz: reproduce with: $* $a" >&2
        done
        failed+=("$name")
    fi
}

for src in "${sources[@]}"; do
    name="$(basename "$src" .c)"
    if ((${#want[@]})) && [[ " ${want[*]} " != *" $name "* ]]; then
        continue
    fi
    bin="$build/$name"
    if [[ ! -x "$bin" ]]; then
        echo "fuzz: $bin was not built" >&2
        failed+=("$name")
        continue
    fi
    corpus="$cache/corpus/$name"
    mkdir -p "$corpus"
    # Each fuzzer's seeds: archives for fuzz_archive, both for fuzz_cli
    # (the command takes either), model files otherwise.
    these=("${seeds[@]}")
    if [[ "$name" == fuzz_archive ]]; then
        these=("${archive_seeds[@]}")
    elif [[ "$name" == fuzz_cli || "$name" == fuzz_slice ]]; then
        these=("${seeds[@]}" "${archive_seeds[@]}")
    elif [[ "$name" == fuzz_text ]]; then
        these=("$text_seed")
    elif [[ "$name" == fuzz_onnx_text ]]; then
        these=("$onnx_text_seed")
    elif [[ "$name" == fuzz_safetensors ]]; then
        these=("${safetensors_seeds[@]}")
    fi
    echo "==> fuzz: $name for ${FUZZ_SECONDS}s"
    fuzz_one "$name" "$corpus" "$bin"
done

# ---- the Python package (atheris) -----------------------------------------

py_target=tests/fuzz/fuzz_python.py
if [[ -f "$py_target" ]] && { ((${#want[@]} == 0)) || [[ " ${want[*]} " == *" fuzz_python "* ]]; }; then
    py="${FUZZ_PYTHON:-$root/.venv/bin/python}"
    name=fuzz_python
    corpus="$cache/corpus/$name"
    mkdir -p "$corpus"
    if ! "$py" -c 'import atheris, onnxio' >/dev/null 2>&1; then
        echo "fuzz: $name: $py cannot import atheris and onnxio (requirements.txt pins atheris;" \
            "make python-install installs onnxio)" >&2
        failed+=("$name")
    else
        echo "==> fuzz: $name for ${FUZZ_SECONDS}s ($("$py" -c 'import onnxio; print(onnxio.__file__)'))"
        # Models, tensors (with the type byte of make_seeds.sh) and archives.
        these=("${seeds[@]}" "${archive_seeds[@]}")
        fuzz_one "$name" "$corpus" "$py" "$py_target"
    fi
fi

if ((${#failed[@]})); then
    echo "fuzz: failed: ${failed[*]} (inputs in $cache/artifacts/)" >&2
    exit 1
fi
echo "==> fuzz: all fuzzers ran clean"
