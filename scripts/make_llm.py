#!/usr/bin/env python3
"""Makes the float16 LLM-shaped models of bench/bench_user.py, deterministically.

    .venv/bin/python scripts/make_llm.py --gib 0.5 [--out-dir .cache/models/user] [--force]
                                          [--layouts onnx,ext,onnxz,safetensors]

One model per size, in OUT_DIR/llm_<GIB>g/, in four layouts of the same
tensors (same names, shapes and bytes):

  model.onnx            one file, payloads in raw_data (over 2 GiB too: onnxio writes it)
  ext/model.onnx        the same with every payload in ext/model.onnx.data
  model.onnxz           the .onnxz archive (stored entries)
  model.safetensors     safetensors.numpy.save_file of the same arrays
  manifest.json         dimensions, tensor count, payload bytes, file sizes (written last)

The shape is a decoder of 32 layers: per layer two norm vectors (hidden),
q, k, v, o (hidden x hidden), up (hidden x 4*hidden) and down (4*hidden x
hidden), plus the embedding (32000 x hidden) and a final norm: 258
initializers. hidden is the multiple of 64 that brings the payload nearest
to --gib GiB. The graph is Gather, Mul, MatMul and Add over them (valid
ONNX, opset 17). Values are random float16 of magnitude below 0.25 from a
fixed-seed generator (numpy's PCG64, seed 14).

Memory: each array is made, copied into its tensor (from_array) and dropped,
so the process holds about one payload (the model); the three onnxio saves
write from it, and safetensors writes from numpy views of its payloads.
Everything is written into llm_<GIB>g.tmp/ and renamed into place at the
end, so an interrupted run leaves no model that looks complete.
"""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, ".cache", "models", "user")
LAYERS = 32
VOCAB = 32000
SEED = 14
LAYOUTS = {"onnx": "model.onnx", "ext": os.path.join("ext", "model.onnx"),
           "ext_data": os.path.join("ext", "model.onnx.data"), "onnxz": "model.onnxz",
           "safetensors": "model.safetensors"}


def size_label(gib):
    return f"{float(gib):g}"


def model_dir(out_dir, gib):
    return os.path.join(out_dir, f"llm_{size_label(gib)}g")


def payload_bytes(hidden):
    per_layer = 4 * hidden * hidden + 2 * 4 * hidden * hidden + 2 * hidden
    return 2 * (LAYERS * per_layer + VOCAB * hidden + hidden)


def choose_hidden(gib):
    target = gib * 2**30
    return min(range(64, 65536, 64), key=lambda h: abs(payload_bytes(h) - target))


def tensor_specs(hidden):
    """(name, shape) of every initializer, in graph order."""
    specs = [("embed.weight", (VOCAB, hidden))]
    for i in range(LAYERS):
        p = f"layers.{i}."
        specs += [(p + "attn_norm.weight", (hidden,)), (p + "q.weight", (hidden, hidden)),
                  (p + "k.weight", (hidden, hidden)), (p + "v.weight", (hidden, hidden)),
                  (p + "o.weight", (hidden, hidden)), (p + "mlp_norm.weight", (hidden,)),
                  (p + "up.weight", (hidden, 4 * hidden)), (p + "down.weight", (4 * hidden, hidden))]
    specs.append(("final_norm.weight", (hidden,)))
    return specs


def build_nodes(helper):
    nodes = [helper.make_node("Gather", ["embed.weight", "input_ids"], ["x0"], name="embed")]
    x = "x0"
    for i in range(LAYERS):
        p = f"layers.{i}."

        def node(op, ins, out):
            nodes.append(helper.make_node(op, ins, [p + out], name=p + out))
            return p + out

        n = node("Mul", [x, p + "attn_norm.weight"], "n1")
        q = node("MatMul", [n, p + "q.weight"], "q")
        k = node("MatMul", [n, p + "k.weight"], "k")
        v = node("MatMul", [n, p + "v.weight"], "v")
        a = node("Add", [node("Add", [q, k], "qk"), v], "qkv")
        x = node("Add", [x, node("MatMul", [a, p + "o.weight"], "o")], "x1")
        n = node("Mul", [x, p + "mlp_norm.weight"], "n2")
        d = node("MatMul", [node("MatMul", [n, p + "up.weight"], "up"), p + "down.weight"], "down")
        x = node("Add", [x, d], "x2")
    nodes.append(helper.make_node("Mul", [x, "final_norm.weight"], ["hidden"], name="final_norm"))
    return nodes


ALL_LAYOUTS = ("onnx", "ext", "onnxz", "safetensors")


def make(gib, out_dir, force=False, log=print, layouts=ALL_LAYOUTS):
    import onnxio
    import safetensors.numpy
    from onnxio import helper, numpy_helper

    final = model_dir(out_dir, gib)
    manifest_path = os.path.join(final, "manifest.json")
    if os.path.exists(manifest_path) and not force:
        with open(manifest_path) as f:
            have = json.load(f).get("layouts", ALL_LAYOUTS)
        if set(layouts) <= set(have):
            log(f"{final}: present, kept")
            return final
    hidden = choose_hidden(gib)
    specs = tensor_specs(hidden)
    payload = payload_bytes(hidden)
    tmp = final + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "ext"))
    free = shutil.disk_usage(tmp).free
    need = int((len(layouts) + 0.05) * payload)
    if free < need:
        shutil.rmtree(tmp)
        raise SystemExit(f"make_llm: {gib:g} GiB needs {need / 2**30:.1f} GiB of disk for its {len(layouts)} layouts "
                         f"and {out_dir} has {free / 2**30:.1f} GiB free")
    log(f"making {final}: hidden {hidden}, {len(specs)} initializers, payload {payload / 2**30:.3f} GiB")
    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    inits = []
    for name, shape in specs:
        n = int(np.prod(shape))
        bits = rng.integers(0, 1 << 16, n, dtype=np.uint16)
        bits &= 0xB3FF  # exponent below 2**-2: finite, |x| < 0.25
        inits.append(numpy_helper.from_array(bits.view(np.float16).reshape(shape), name))
        del bits
    graph = helper.make_graph(
        build_nodes(helper), "llm", [helper.make_tensor_value_info("input_ids", onnxio.TensorProto.INT64, [1, "seq"])],
        [helper.make_tensor_value_info("hidden", onnxio.TensorProto.FLOAT16, [1, "seq", hidden])],
        initializer=inits)
    del inits
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxio make_llm")
    del graph
    log(f"  built in {time.perf_counter() - t0:.1f} s")
    for key, kwargs in (("onnx", {}), ("ext", {"save_as_external_data": True, "location": "model.onnx.data"}),
                        ("onnxz", {})):
        if key not in layouts:
            continue
        t = time.perf_counter()
        onnxio.save_model(model, os.path.join(tmp, LAYOUTS[key]), **kwargs)
        log(f"  {LAYOUTS[key]} in {time.perf_counter() - t:.1f} s")
    if "safetensors" in layouts:
        t = time.perf_counter()
        arrays = {tp.name: numpy_helper.to_array(tp) for tp in model.graph.initializer}  # views, not copies
        safetensors.numpy.save_file(arrays, os.path.join(tmp, LAYOUTS["safetensors"]))
        del arrays
        log(f"  {LAYOUTS['safetensors']} in {time.perf_counter() - t:.1f} s")
    del model
    manifest = {"gib": gib, "hidden": hidden, "layers": LAYERS, "vocab": VOCAB, "seed": SEED,
                "initializers": len(specs), "payload_bytes": payload,
                "layouts": list(layouts),
                "files": {k: v for k, v in LAYOUTS.items()},
                "file_bytes": {k: os.path.getsize(os.path.join(tmp, v)) for k, v in LAYOUTS.items()
                               if os.path.exists(os.path.join(tmp, v))}}
    with open(os.path.join(tmp, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.sync()
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    log(f"  done in {time.perf_counter() - t0:.1f} s")
    return final


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, required=True, help="payload size in GiB (e.g. 0.5)")
    ap.add_argument("--out-dir", default=DEFAULT_OUT)
    ap.add_argument("--force", action="store_true", help="remake even when present")
    ap.add_argument("--layouts", default=",".join(ALL_LAYOUTS), help="the layouts to write (default: all four)")
    args = ap.parse_args()
    layouts = tuple(x.strip() for x in args.layouts.split(",") if x.strip())
    if not set(layouts) <= set(ALL_LAYOUTS):
        raise SystemExit(f"make_llm: layouts are {', '.join(ALL_LAYOUTS)}")
    make(args.gib, args.out_dir, args.force, layouts=layouts)


if __name__ == "__main__":
    sys.exit(main())
