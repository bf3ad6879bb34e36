#!/usr/bin/env python3
"""Builds a GPT-2-small-shaped ONNX model with random weights.

    .venv/bin/python scripts/make_gpt2.py [--out .cache/models/gpt2.onnx] [--force]

The shapes are those of GPT-2 small (12 layers, hidden size 768, 12 heads,
vocabulary 50257, 1024 positions; 124,439,808 float32 parameters, about
500 MB); the weights are random (numpy, fixed seed), so the file is the same
on every run and machine. Every weight is an initializer holding its bytes in
raw_data, as exporters write them. The graph is the usual decoder-only
transformer: token and position embeddings (Gather), per layer
LayerNormalization, a fused QKV projection (MatMul/Add) split into heads
(Split/Reshape/Transpose), scaled, causally masked Softmax attention, an
output projection, an MLP with Gelu (tanh approximation), residual Adds, and
the final LayerNormalization with logits tied to the token embedding.

The model is for benchmarks and demos of reading and writing; it has never
been trained. The file is written once (skipped when it exists, unless
--force), to a temporary name first and renamed, and checked with the
path-based onnx.checker. Peak memory is about 1.5 GB.
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N_LAYER = 12
N_EMBD = 768
N_HEAD = 12
N_VOCAB = 50257
N_POSITIONS = 1024
OPSET = 20  # Gelu is in the default domain from opset 20
SEED = 20240611


def build(seed=SEED):
    rng = np.random.default_rng(seed)
    inits = []
    nodes = []
    params = 0

    def weight(name, shape, std=0.02):
        nonlocal params
        arr = rng.standard_normal(shape, dtype=np.float32)
        arr *= np.float32(std)
        params += arr.size
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ones(name, n):
        nonlocal params
        params += n
        inits.append(numpy_helper.from_array(np.ones(n, np.float32), name))
        return name

    def zeros(name, n):
        nonlocal params
        params += n
        inits.append(numpy_helper.from_array(np.zeros(n, np.float32), name))
        return name

    def node(op, inputs, outputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    head_dim = N_EMBD // N_HEAD

    # Shared constants.
    const("const_zero_i64", 0, np.int64)
    const("const_one_i64", 1, np.int64)
    const("const_axes_01", [0, 1], np.int64)
    const("const_starts_00", [0, 0], np.int64)
    const("const_shape_heads", [0, 0, N_HEAD, head_dim], np.int64)
    const("const_shape_merge", [0, 0, N_EMBD], np.int64)
    const("const_attn_scale", 1.0 / np.sqrt(head_dim))
    # Causal mask: 0 on and below the diagonal, a large negative value above.
    mask = np.triu(np.full((N_POSITIONS, N_POSITIONS), -1e4, np.float32), k=1)
    inits.append(numpy_helper.from_array(mask, "causal_mask"))

    # Embeddings: tokens plus positions 0..seq-1.
    wte = weight("transformer.wte.weight", (N_VOCAB, N_EMBD))
    wpe = weight("transformer.wpe.weight", (N_POSITIONS, N_EMBD), std=0.01)
    seq_1d = node("Shape", ["input_ids"], ["seq_len_1d"], "shape_seq", start=1, end=2)
    seq = node("Squeeze", [seq_1d], ["seq_len"], "squeeze_seq")
    pos = node("Range", ["const_zero_i64", seq, "const_one_i64"], ["position_ids"], "range_pos")
    tok_emb = node("Gather", [wte, "input_ids"], ["tok_emb"], "gather_wte", axis=0)
    pos_emb = node("Gather", [wpe, pos], ["pos_emb"], "gather_wpe", axis=0)
    x = node("Add", [tok_emb, pos_emb], ["h_0"], "add_embeddings")

    # The mask for this sequence length: causal_mask[:seq, :seq].
    ends = node("Concat", [seq_1d, seq_1d], ["mask_ends"], "concat_mask_ends", axis=0)
    mask_s = node("Slice", ["causal_mask", "const_starts_00", ends, "const_axes_01"],
                  ["mask_seq"], "slice_mask")

    for i in range(N_LAYER):
        p = f"transformer.h.{i}"
        n = f"h{i}"
        # Attention block.
        ln1 = node("LayerNormalization", [x, ones(f"{p}.ln_1.weight", N_EMBD),
                                          zeros(f"{p}.ln_1.bias", N_EMBD)],
                   [f"{n}.ln_1"], f"{n}/ln_1", axis=-1, epsilon=1e-5)
        qkv = node("MatMul", [ln1, weight(f"{p}.attn.c_attn.weight", (N_EMBD, 3 * N_EMBD))],
                   [f"{n}.qkv_mm"], f"{n}/attn/c_attn/matmul")
        qkv = node("Add", [qkv, zeros(f"{p}.attn.c_attn.bias", 3 * N_EMBD)],
                   [f"{n}.qkv"], f"{n}/attn/c_attn/add")
        q, k, v = node("Split", [qkv], [f"{n}.q", f"{n}.k", f"{n}.v"], f"{n}/attn/split",
                       axis=2, num_outputs=3)
        heads = {}
        for t, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            r = node("Reshape", [{"q": q, "k": k, "v": v}[t], "const_shape_heads"],
                     [f"{n}.{t}_heads"], f"{n}/attn/reshape_{t}")
            heads[t] = node("Transpose", [r], [f"{n}.{t}_t"], f"{n}/attn/transpose_{t}",
                            perm=perm)
        scores = node("MatMul", [heads["q"], heads["k"]], [f"{n}.scores"], f"{n}/attn/qk")
        scores = node("Mul", [scores, "const_attn_scale"], [f"{n}.scores_scaled"],
                      f"{n}/attn/scale")
        scores = node("Add", [scores, mask_s], [f"{n}.scores_masked"], f"{n}/attn/mask")
        probs = node("Softmax", [scores], [f"{n}.probs"], f"{n}/attn/softmax", axis=-1)
        ctx = node("MatMul", [probs, heads["v"]], [f"{n}.ctx"], f"{n}/attn/pv")
        ctx = node("Transpose", [ctx], [f"{n}.ctx_t"], f"{n}/attn/transpose_ctx",
                   perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "const_shape_merge"], [f"{n}.ctx_merged"],
                   f"{n}/attn/merge_heads")
        a = node("MatMul", [ctx, weight(f"{p}.attn.c_proj.weight", (N_EMBD, N_EMBD))],
                 [f"{n}.attn_mm"], f"{n}/attn/c_proj/matmul")
        a = node("Add", [a, zeros(f"{p}.attn.c_proj.bias", N_EMBD)], [f"{n}.attn_out"],
                 f"{n}/attn/c_proj/add")
        x = node("Add", [x, a], [f"{n}.resid_attn"], f"{n}/residual_attn")
        # MLP block.
        ln2 = node("LayerNormalization", [x, ones(f"{p}.ln_2.weight", N_EMBD),
                                          zeros(f"{p}.ln_2.bias", N_EMBD)],
                   [f"{n}.ln_2"], f"{n}/ln_2", axis=-1, epsilon=1e-5)
        f = node("MatMul", [ln2, weight(f"{p}.mlp.c_fc.weight", (N_EMBD, 4 * N_EMBD))],
                 [f"{n}.fc_mm"], f"{n}/mlp/c_fc/matmul")
        f = node("Add", [f, zeros(f"{p}.mlp.c_fc.bias", 4 * N_EMBD)], [f"{n}.fc"],
                 f"{n}/mlp/c_fc/add")
        f = node("Gelu", [f], [f"{n}.gelu"], f"{n}/mlp/gelu", approximate="tanh")
        f = node("MatMul", [f, weight(f"{p}.mlp.c_proj.weight", (4 * N_EMBD, N_EMBD))],
                 [f"{n}.mlp_mm"], f"{n}/mlp/c_proj/matmul")
        f = node("Add", [f, zeros(f"{p}.mlp.c_proj.bias", N_EMBD)], [f"{n}.mlp_out"],
                 f"{n}/mlp/c_proj/add")
        x = node("Add", [x, f], [f"h_{i + 1}"], f"{n}/residual_mlp")

    x = node("LayerNormalization", [x, ones("transformer.ln_f.weight", N_EMBD),
                                    zeros("transformer.ln_f.bias", N_EMBD)],
             ["ln_f"], "ln_f", axis=-1, epsilon=1e-5)
    # Logits tied to the token embedding, as in GPT-2.
    wte_t = node("Transpose", [wte], ["wte_t"], "lm_head/transpose_wte", perm=[1, 0])
    node("MatMul", [x, wte_t], ["logits"], "lm_head/matmul")

    graph = helper.make_graph(
        nodes, "gpt2_small_random",
        inputs=[helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                              ["batch", "sequence"])],
        outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                               ["batch", "sequence", N_VOCAB])],
        initializer=inits,
        doc_string="GPT-2 small shapes, random weights (onnxio scripts/make_gpt2.py)")
    model = helper.make_model(graph, producer_name="onnxio-scripts",
                              producer_version="1", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    helper.set_model_props(model, {"seed": str(seed), "parameters": str(params)})
    return model, params


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(".cache", "models", "gpt2.onnx"))
    ap.add_argument("--force", action="store_true", help="rebuild even if the file exists")
    args = ap.parse_args()

    if os.path.exists(args.out) and not args.force:
        print(f"make_gpt2: {args.out} exists, skipped")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    t0 = time.time()
    model, params = build()
    tmp = args.out + ".tmp"
    onnx.save_model(model, tmp)
    del model
    onnx.checker.check_model(tmp)  # path-based: no 2 GB in-memory limit
    os.replace(tmp, args.out)
    print(f"make_gpt2: wrote {args.out} ({os.path.getsize(args.out):,} bytes, "
          f"{params:,} parameters) in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
