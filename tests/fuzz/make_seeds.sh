#!/bin/sh
# Builds a seed corpus for fuzz_decode in the directory given (default
# ./fuzz-seeds): small real models as they are (parsed as ModelProto), and
# test-data tensors with a first byte that makes fuzz_decode parse the rest
# as TensorProto (1), SequenceProto (8), MapProto (9) or OptionalProto (10).
#
# With a third argument, the path of the onnxio CLI (scripts/fuzz.sh builds
# it), it also makes small .onnxz archives for fuzz_archive in a directory of
# their own (the fourth argument, default <out-dir>-archive), so that
# fuzz_decode's seeds stay as they were: some of the models above converted
# with `onnxio convert IN OUT.onnxz --size-threshold 16` (so that small
# models get tensor entries too), and,
# when python3 is there, archives written by Python's zipfile (stored and
# deflated entries, with and without forced ZIP64 records, some of them
# repacked from the converted archives).
#
# With the CLI too, small .safetensors files for fuzz_safetensors in a fifth
# directory (default <out-dir>-safetensors): written by python3 code here
# (every dtype, scalars, empty tensors, metadata, escapes in names, padded
# and unpadded headers), and some of the models above converted with
# `onnxio convert IN OUT.safetensors` (onnxio's own writer).
# Usage: tests/fuzz/make_seeds.sh [out-dir] [max-bytes] [onnxio-cli [archive-out-dir [safetensors-out-dir]]]
set -eu
out=${1:-fuzz-seeds}
max=${2:-65536}
cli=${3:-}
zout=${4:-$out-archive}
stout=${5:-$out-safetensors}
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

# ---- .onnxz archives (fuzz_archive) ------------------------------------------
if [ -n "$cli" ]; then
    mkdir -p "$zout"
    nz=0
    # The largest of the whole-model seeds just made (m-*): 48 of them,
    # largest first (they are the likeliest to hold payloads of 1024 bytes
    # or more, which become entries), and 16 small ones (archives holding
    # only __MODEL_PROTO). Leak reports of the (sanitized) CLI do not matter
    # here.
    for f in $( (ls -S "$out"/m-* 2>/dev/null | head -n 48; ls -Sr "$out"/m-* 2>/dev/null | awk 'NR % 8 == 1' | head -n 16) | awk '!seen[$0]++'); do
        z="$zout/z-${f##*/}.onnxz"
        if ASAN_OPTIONS=detect_leaks=0 "$cli" convert "$f" "$z" --size-threshold 16 >/dev/null 2>&1 && [ -f "$z" ] &&
            [ "$(wc -c < "$z")" -le "$max" ]; then
            nz=$((nz + 1))
        else
            rm -f "$z"
        fi
    done
    if command -v python3 >/dev/null 2>&1; then
        nz=$((nz + $(python3 - "$zout" "$max" <<'PY'
import glob, os, struct, sys, zipfile

out, limit = sys.argv[1], int(sys.argv[2])

def varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append(v & 0x7F | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)

def field(num, payload):  # length-delimited
    return varint(num << 3 | 2) + varint(len(payload)) + payload

def num(num, v):
    return varint(num << 3) + varint(v)

def tensor(name, loc, off, n):
    keys = [(b"location", loc), (b"offset", str(off).encode()), (b"length", str(n).encode())]
    t = num(1, n) + num(2, 2) + field(8, name)  # dims, UINT8, name
    for k, v in keys:
        t += field(13, field(1, k) + field(2, v))
    return t + num(14, 1)  # data_location EXTERNAL

def model(tensors):
    g = field(2, b"g") + b"".join(field(5, t) for t in tensors)
    return num(1, 8) + field(7, g) + field(8, num(2, 17))

made = 0
def write(name, entries, method, zip64):
    global made
    path = os.path.join(out, name)
    with zipfile.ZipFile(path, "w") as z:
        for ename, data in entries:
            info = zipfile.ZipInfo(ename, (1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            with z.open(info, "w", force_zip64=zip64) as f:
                f.write(data)
    if os.path.getsize(path) > limit:
        os.remove(path)
    else:
        made += 1

w = bytes((i * 37 + 11) & 0xFF for i in range(3000))
v = bytes(i % 7 for i in range(1200))
hand = model([tensor(b"w", b"w", 0, 3000), tensor(b"v", b"v", 100, 1000), tensor(b"w2", b"w", 16, 32)])
for method, mname in ((zipfile.ZIP_STORED, "stored"), (zipfile.ZIP_DEFLATED, "deflated")):
    for zip64 in (False, True):
        tag = mname + ("-zip64" if zip64 else "")
        write("py-hand-%s.onnxz" % tag, [("w", w), ("v", v), ("__MODEL_PROTO", hand)], method, zip64)
        write("py-model-only-%s.onnxz" % tag, [("__MODEL_PROTO", model([]))], method, zip64)
# Repack archives made by the CLI: same entries, zipfile's layout; those
# with the most entries first.
made_by_cli = []
for src in sorted(glob.glob(os.path.join(out, "z-*.onnxz"))):
    try:
        with zipfile.ZipFile(src) as z:
            made_by_cli.append([(e.filename, z.read(e)) for e in z.infolist()])
    except Exception:
        pass
made_by_cli.sort(key=lambda entries: -len(entries))
for i, entries in enumerate(made_by_cli[:8]):
    write("py-repack-%d-deflated.onnxz" % i, entries, zipfile.ZIP_DEFLATED, i % 2 == 1)
    write("py-repack-%d-stored.onnxz" % i, entries, zipfile.ZIP_STORED, i % 2 == 0)
print(made)
PY
)))
    fi
    echo "$nz archive seeds in $zout"

    # ---- .safetensors files (fuzz_safetensors) ---------------------------------
    mkdir -p "$stout"
    ns=0
    for f in $(ls -S "$out"/m-* 2>/dev/null | awk 'NR % 4 == 1' | head -n 32); do
        st="$stout/c-${f##*/}.safetensors"
        if ASAN_OPTIONS=detect_leaks=0 "$cli" convert "$f" "$st" >/dev/null 2>&1 && [ -f "$st" ] &&
            [ "$(wc -c < "$st")" -le "$max" ]; then
            ns=$((ns + 1))
        else
            rm -f "$st"
        fi
    done
    if command -v python3 >/dev/null 2>&1; then
        ns=$((ns + $(python3 - "$stout" <<'PY'
import json, os, struct, sys

out = sys.argv[1]
# dtype: bytes per element (F4, F6_* are read in headers, not loaded)
widths = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "F8_E4M3FNUZ": 1,
          "F8_E5M2FNUZ": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4,
          "C64": 8, "F64": 8, "I64": 8, "U64": 8}
made = 0

def write(name, tensors, metadata=None, pad=True, compact=True):
    """tensors: (name, dtype, shape, nbytes) in file order."""
    global made
    header, data, at = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for tname, dtype, shape, n in tensors:
        header[tname] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}
        data += bytes((at + i) * 29 % 251 for i in range(n))
        at += n
    h = json.dumps(header, separators=(",", ":") if compact else None).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    with open(os.path.join(out, name + ".safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
    made += 1

def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n

write("every-dtype", [(d, d, [2, 3], 6 * w) for d, w in widths.items()], {"format": "pt"})
write("scalars", [("a", "F32", [], 4), ("b", "I64", [], 8)])
write("empty", [("e", "F32", [0, 3], 0), ("s", "U8", [], 1)], pad=False)
write("nothing", [])
write("metadata-only", [], {"k%d" % i: "v" * i for i in range(8)})
write("packed", [("f4", "F4", [4], 2), ("f6", "F6_E2M3", [4], 3), ("w", "F32", [2], 8)])
write("names", [("caf\u00e9", "F16", [2], 4), ("a\"b\\c\n", "U8", [3], 3), ("\U0001f600", "BOOL", [1], 1)],
      {"\u00e9": "\t"}, compact=False)
write("model-like", [("w0", "F32", [4], 16), ("w1", "F32", [2], 8)], {"format": "np"})
write("big-rank", [("r", "U8", [1] * 40 + [2], 2)])
print(made)
PY
)))
    fi
    echo "$ns safetensors seeds in $stout"
fi
echo "$n seeds in $out"
