#!/usr/bin/env bash
# What `make demo` runs once the library is built and the tools installed:
# round trips through the onnxio command on two models, with a timing for
# each step, checking the bytes of each result against a reference.
#
#   scripts/demo.sh [MODEL ...]
#
# Default models: a PyTorch-exported convolution with its weights from ONNX's
# own test data (libonnx-testdata), and the GPT-2-small-shaped model that
# scripts/make_gpt2.py writes to .cache/models/gpt2.onnx (about 500 MB; made
# here when missing). For each model:
#   onnxio info M
#   onnxio convert M copy.onnx                              copy.onnx == M
#   onnxio convert M ext.onnx --external-data ext.onnx.data  sizes shown
#   onnxio convert ext.onnx back.onnx --inline              back.onnx == onnx's
#   onnxio convert M m.onnxz; unzip -t m.onnxz               the .onnxz container
#   onnxio convert m.onnxz z.onnx                            z.onnx == onnx's
# "onnx's": the bytes the onnx package writes for the same model once it has
# read the external data in (onnx.load, then SerializeToString; an archive
# extracted with zipfile first: tests/python/onnxref.py). That is M with
# data_location = DEFAULT on each tensor that went through a data file, as
# onnx's loader leaves it.
# Work files go to .cache/demo/<model>/ (DEMO_OUT/<model>/; replaced on every run; the onnx
# package's reference bytes are removed once compared); the end says where
# they are and how big. Exits 1 on any failed command or byte mismatch.
# Python: DEMO_PYTHON, else .venv-demo's (scripts/bootstrap.sh demo), else
# .venv's. The slow Python steps (making GPT-2, the onnx package's reference
# bytes) say every 10 s that they are still running (scripts/ticker.sh); the
# onnxio steps, timed, take a second or two on GPT-2.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

onnxio="$root/build/onnxio"
testdata="${TESTDATA:-/usr/share/libonnx-testdata/data}"
conv="$testdata/pytorch-operator/test_operator_conv/model.onnx"
gpt2="$root/.cache/models/gpt2.onnx"
python="${DEMO_PYTHON:-}"
if [[ -z "$python" ]]; then
    python="$root/.venv-demo/bin/python"
    [[ -x "$python" ]] || python="$root/.venv/bin/python"
fi
[[ "$python" == /* ]] || python="$root/$python"
ticker="$root/scripts/ticker.sh"
out="${DEMO_OUT:-$root/.cache/demo}"   # where the work files go

if [[ ! -x "$onnxio" ]]; then
    echo "demo: $onnxio is missing; run \`make\` first" >&2
    exit 1
fi

if (($#)); then
    models=("$@")
else
    if [[ ! -f "$gpt2" ]]; then
        echo "demo: making $gpt2 (once)"
        "$ticker" make_gpt2 "$python" scripts/make_gpt2.py --out "$gpt2"
    fi
    models=("$conv" "$gpt2")
fi

now() { date +%s.%N; }
rows=()
failed=0

# run LABEL CMD...: runs CMD in the current directory, times it, records a row.
run() {
    local label="$1"
    shift
    local t0 t1 status=ok
    echo "\$ $(basename "$1") ${*:2}"
    t0=$(now)
    if ! "$@"; then
        status=FAILED
        failed=1
    fi
    t1=$(now)
    rows+=("$(awk -v n="$name" -v l="$label" -v a="$t0" -v b="$t1" -v s="$status" \
        'BEGIN { printf "%-12s %-44s %9.3f  %s", n, l, b - a, s }')")
    [[ $status == ok ]]
}

same() { # same A B: records whether two files hold the same bytes
    local what="$1"
    if cmp -s "$2" "$3"; then
        rows+=("$(printf '%-12s %-44s %9s  %s' "$name" "$what" "" "identical")")
        echo "    $2 and $3 are identical"
    else
        rows+=("$(printf '%-12s %-44s %9s  %s' "$name" "$what" "" "DIFFERENT")")
        echo "    $2 and $3 DIFFER: $(cmp "$2" "$3" 2>&1 | head -1)" >&2
        failed=1
    fi
}

size() { stat -c %s "$1"; }

onnx_reference() { # onnx_reference IN OUT: the bytes onnx writes for IN, external data read in
    PYTHONPATH="$root/tests/python" "$ticker" "    onnx reference" "$python" -c \
        'import sys, onnxref; open(sys.argv[2], "wb").write(onnxref.inlined_bytes(sys.argv[1]))' "$1" "$2" || {
        echo "    the onnx package could not read $1" >&2
        failed=1
        return 1
    }
}

for model in "${models[@]}"; do
    if [[ ! -f "$model" ]]; then
        echo "demo: $model is missing" >&2
        exit 1
    fi
    model="$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"
    case "$model" in
        "$conv") name=conv ;;
        "$gpt2") name=gpt2 ;;
        *) name="$(basename "$model" .onnx)"; [[ $name == model ]] && name="$(basename "$(dirname "$model")")" ;;
    esac
    work="$out/$name"
    rm -rf "$work"
    mkdir -p "$work"
    echo
    echo "==== $name: $model ($(size "$model") bytes)"
    cd "$work"
    run "info" "$onnxio" info "$model" || true
    if run "convert M copy.onnx" "$onnxio" convert "$model" copy.onnx; then
        same "copy.onnx == M" "$model" copy.onnx
    fi
    if run "convert M ext.onnx --external-data" "$onnxio" convert "$model" ext.onnx \
        --external-data ext.onnx.data; then
        echo "    ext.onnx: $(size ext.onnx) bytes, ext.onnx.data: $(size ext.onnx.data 2>/dev/null || echo missing) bytes"
        rows+=("$(printf '%-12s %-44s %9s  %s' "$name" "  ext.onnx + ext.onnx.data bytes" "" \
            "$(size ext.onnx) + $(size ext.onnx.data 2>/dev/null || echo missing)")")
        if run "convert ext.onnx back.onnx --inline" "$onnxio" convert ext.onnx back.onnx --inline &&
            onnx_reference ext.onnx ext.ref; then
            same "back.onnx == onnx.load(ext.onnx)" ext.ref back.onnx
            rm -f ext.ref
        fi
    fi
    if run "convert M m.onnxz" "$onnxio" convert "$model" m.onnxz; then
        echo "    m.onnxz: $(size m.onnxz) bytes"
        if command -v unzip >/dev/null; then
            run "unzip -t m.onnxz (not onnxio: every CRC-32)" unzip -tq m.onnxz || true
        fi
        if run "convert m.onnxz z.onnx" "$onnxio" convert m.onnxz z.onnx && onnx_reference m.onnxz z.ref; then
            same "z.onnx == onnxref of unzipped m.onnxz" z.ref z.onnx
            rm -f z.ref
        fi
    fi
    cd "$root"
done

echo
printf '%-12s %-44s %9s  %s\n' model step seconds result
printf '%-12s %-44s %9s  %s\n' ----- ---- ------- ------
printf '%s\n' "${rows[@]}"
if ((failed)); then
    echo "demo: FAILED" >&2
    exit 1
fi
echo "demo: every round trip gives the bytes libprotobuf and the onnx package give"
if [[ -d "$out" ]]; then
    echo "demo: its files are in $out ($(du -sh "$out" | cut -f1)); rm -rf $out (make clean, for .cache/demo) removes them"
fi
if [[ -f "$gpt2" ]]; then
    echo "demo: the GPT-2-shaped model is $gpt2 ($(du -sh "$gpt2" | cut -f1), kept for the next run)"
fi
