#!/bin/sh
# Builds a seed corpus for fuzz_decode in the directory given (default
# ./fuzz-seeds): small real models as they are (parsed as ModelProto), and
# test-data tensors with a first byte that makes fuzz_decode parse the rest
# as TensorProto (1), SequenceProto (8), MapProto (9) or OptionalProto (10).
# Usage: tests/fuzz/make_seeds.sh [out-dir] [max-bytes]
set -eu
out=${1:-fuzz-seeds}
max=${2:-65536}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus="$repo/../shared/corpus"
testdata=/usr/share/libonnx-testdata/data
mkdir -p "$out"
n=0
add() { # add <file> <prefix-byte-in-octal or ''>
    size=$(wc -c < "$1")
    [ "$size" -le "$max" ] || return 0
    name=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
    if [ -n "$2" ]; then
        { printf "\\$2"; cat "$1"; } > "$out/$2-$name"
    else
        cp "$1" "$out/m-$name"
    fi
    n=$((n + 1))
}
if [ -d "$corpus" ]; then
    for f in "$corpus"/*.onnx "$corpus"/*/*.onnx; do [ -f "$f" ] && add "$f" ''; done
fi
if [ -d "$testdata" ]; then
    for f in "$testdata"/node/*/model.onnx "$testdata"/simple/*/model.onnx; do [ -f "$f" ] && add "$f" ''; done
    for d in "$testdata"/node/test_abs "$testdata"/node/test_cast_FLOAT_to_STRING \
             "$testdata"/node/test_identity_sequence "$testdata"/node/test_identity_opt \
             "$testdata"/node/test_optional_has_element "$testdata"/node/test_strnormalizer_export_monday_casesensintive_lower; do
        [ -d "$d" ] || continue
        for f in "$d"/test_data_set_0/*.pb; do
            case "$d/${f##*/}" in
                *sequence*/input_*) add "$f" 010 ;; # 8: SequenceProto
                *opt*/input_*) add "$f" 012 ;;      # 10: OptionalProto
                *) add "$f" 001 ;;                  # 1: TensorProto
            esac
        done
    done
fi
echo "$n seeds in $out"
