#!/usr/bin/env python3
"""Makes the external-data twin of the GPT-2-shaped benchmark model.

    .venv/bin/python scripts/make_gpt2_external.py [--src .cache/models/gpt2.onnx]
        [--out .cache/models/gpt2_external/gpt2.onnx] [--force]

The same graph and weights as scripts/make_gpt2.py's single file, written
by the onnx package itself (onnx.save with save_as_external_data=True, one
data file named gpt2.onnx.data next to the model, size_threshold 1024), so
that the benchmark's external-data rows start from a file onnxio did not
write. The model gets its own directory because external data locations are
relative to the model's directory. Skipped when the model exists, unless
--force; both files are written under temporary names and renamed.
"""
import argparse
import os
import shutil
import sys
import tempfile

import onnx

LOCATION = "gpt2.onnx.data"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.path.join(".cache", "models", "gpt2.onnx"))
    ap.add_argument("--out", default=os.path.join(".cache", "models", "gpt2_external", "gpt2.onnx"))
    ap.add_argument("--force", action="store_true", help="rebuild even if the model exists")
    args = ap.parse_args()
    if os.path.exists(args.out) and not args.force:
        print(f"{args.out} exists (use --force to rebuild)", file=sys.stderr)
        return 0
    if not os.path.exists(args.src):
        sys.exit(f"make_gpt2_external.py: {args.src} is missing; run scripts/make_gpt2.py first")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    model = onnx.load(args.src)
    # onnx appends to an existing data file, so write into a fresh directory
    # and move both files into place.
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".tmp-") as tmp:
        onnx.save(model, os.path.join(tmp, os.path.basename(args.out)), save_as_external_data=True,
                  all_tensors_to_one_file=True, location=LOCATION, size_threshold=1024)
        os.replace(os.path.join(tmp, LOCATION), os.path.join(out_dir, LOCATION))
        os.replace(os.path.join(tmp, os.path.basename(args.out)), args.out)
    onnx.checker.check_model(args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out):,} bytes) and {LOCATION} "
          f"({os.path.getsize(os.path.join(out_dir, LOCATION)):,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
