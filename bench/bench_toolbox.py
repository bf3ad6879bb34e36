"""The cost of onnxio's bridges to onnx's toolbox: from_onnx,
to_onnx, checker.check_model and shape_inference.infer_shapes on onnxio's
messages, against the same call of the onnx package on its own messages,
on the 200,000-node model and on GPT-2 (scripts/make_many_nodes.py,
scripts/make_gpt2.py; `make models` makes them). Medians of --repeats runs,
onnx's and onnxio's interleaved, and the ratio onnxio / onnx (below 1:
onnxio faster; the target is at most 1.2).

    .venv/bin/python bench/bench_toolbox.py [--repeats 5] [--text MODEL [--text-only]] [MODEL ...]

The reference for from_onnx and to_onnx is onnx's own copy of a message
through bytes, ModelProto.FromString(m.SerializeToString()).

--text MODEL adds the text formats on MODEL (GPT-2's weights would make
gigabytes of text): onnx.save / onnx.load with format="textproto" and
"json" (protobuf's text_format and json_format) against onnxio's (the C
library), from and to memory.
"""
import argparse
import statistics
import time
from pathlib import Path

import onnx
import onnx.checker
import onnx.serialization
import onnx.shape_inference

import onnxio
import onnxio.checker
import onnxio.shape_inference

MODELS = Path(__file__).resolve().parents[1] / ".cache" / "models"


def median_times(ref, fn, repeats):
    """Medians of `repeats` runs of each, interleaved (noise hits both)."""
    a, b = [], []
    for _ in range(repeats):
        for f, times in ((ref, a), (fn, b)):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
    return statistics.median(a), statistics.median(b)


def text_rows(path):
    theirs = onnx.load(path)
    ours = onnxio.load(path)
    rows = []
    for fmt in ("textproto", "json"):
        ser = onnx.serialization.registry.get(fmt)
        text = ser.serialize_proto(theirs)
        rows += [
            (f"save format={fmt}", lambda ser=ser: ser.serialize_proto(theirs),
             lambda fmt=fmt: onnxio._formats._format_text(fmt, ours)),
            (f"load format={fmt}", lambda ser=ser, text=text: ser.deserialize_proto(text, onnx.ModelProto()),
             lambda fmt=fmt, text=text: onnxio.load_model_from_string(text, format=fmt)),
        ]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=[str(MODELS / "many_nodes.onnx"), str(MODELS / "gpt2.onnx")])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--text", metavar="MODEL", help="also time the text formats on MODEL")
    ap.add_argument("--text-only", action="store_true", help="with --text: only the text formats")
    args = ap.parse_args()
    if args.text_only:
        args.models = []
    print(f"{'model':16} {'call':28} {'onnx s':>9} {'onnxio s':>9} {'ratio':>7}")
    for path in args.models:
        theirs = onnx.load(path)
        ours = onnxio.load(path)
        rows = [
            ("from_onnx", lambda: onnx.ModelProto.FromString(theirs.SerializeToString()),
             lambda: onnxio.from_onnx(theirs)),
            ("to_onnx", lambda: onnx.ModelProto.FromString(theirs.SerializeToString()),
             lambda: onnxio.to_onnx(ours)),
            ("checker.check_model", lambda: onnx.checker.check_model(theirs),
             lambda: onnxio.checker.check_model(ours)),
            ("shape_inference.infer_shapes", lambda: onnx.shape_inference.infer_shapes(theirs),
             lambda: onnxio.shape_inference.infer_shapes(ours)),
        ]
        for name, ref, fn in rows:
            a, b = median_times(ref, fn, args.repeats)
            print(f"{Path(path).stem:16} {name:28} {a:9.4f} {b:9.4f} {b / a:7.3f}", flush=True)
    if args.text:
        for name, ref, fn in text_rows(args.text):
            a, b = median_times(ref, fn, args.repeats)
            print(f"{Path(args.text).stem:16} {name:28} {a:9.4f} {b:9.4f} {b / a:7.3f}", flush=True)


if __name__ == "__main__":
    main()
