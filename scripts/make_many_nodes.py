#!/usr/bin/env python3
"""Builds an ONNX model with 200,000 small nodes: a structure-heavy file.

    .venv/bin/python scripts/make_many_nodes.py [--out .cache/models/many_nodes.onnx]
                                               [--nodes 200000] [--attributes] [--force]

The graph is one long chain Add -> Relu -> Identity -> Add -> ... over a
float tensor of shape [1, 4]; every Add adds its own tiny initializer (4
floats in raw_data, deterministic). Where gpt2.onnx measures payload
throughput, this file measures per-message cost: about 270,000 messages,
most of them a few dozen bytes. Written once (skipped when it exists,
unless --force), checked with the path-based onnx.checker.

With --attributes the chain is Transpose (perm) -> LeakyRelu (alpha) ->
Reshape (allowzero, its shape an initializer) -> ..., every node with a
doc string, and every fourth intermediate tensor has a value_info entry
(TypeProto -> Tensor -> TensorShapeProto -> Dimensions): the sub-message
shapes real graphs have (50,000 value_info entries for 200,000 nodes).
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 20


def build(n_nodes):
    nodes = []
    inits = []
    prev = "X"
    ops = ("Add", "Relu", "Identity")
    values = np.arange(4, dtype=np.float32)
    for i in range(n_nodes - 1):  # the last node names the output
        op = ops[i % 3]
        out = f"t{i}"
        if op == "Add":
            w = f"w{i}"
            inits.append(numpy_helper.from_array(values * np.float32((i % 7) - 3) / 8, w))
            nodes.append(helper.make_node("Add", [prev, w], [out], name=f"n{i}"))
        else:
            nodes.append(helper.make_node(op, [prev], [out], name=f"n{i}"))
        prev = out
    nodes.append(helper.make_node("Identity", [prev], ["Y"], name="output"))
    graph = helper.make_graph(
        nodes, "many_nodes",
        inputs=[helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
        outputs=[helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])],
        initializer=inits,
        doc_string=f"{n_nodes} small nodes (onnxio scripts/make_many_nodes.py)")
    model = helper.make_model(graph, producer_name="onnxio-scripts", producer_version="1",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def build_attributes(n_nodes):
    nodes, infos = [], []
    prev = "X"
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [4, 8])
    for i in range(n_nodes - 1):
        out = f"t{i}"
        doc = f"node {i} of the attribute chain"
        if i % 3 == 0:
            node = helper.make_node("Transpose", [prev], [out], name=f"n{i}", perm=[1, 0], doc_string=doc)
        elif i % 3 == 1:
            node = helper.make_node("LeakyRelu", [prev], [out], name=f"n{i}", alpha=0.01 * (i % 5 + 1), doc_string=doc)
        else:
            node = helper.make_node("Reshape", [prev, "shape"], [out], name=f"n{i}", allowzero=0, doc_string=doc)
        nodes.append(node)
        if i % 4 == 0:
            dims = [8, 4] if i % 3 == 0 else ["batch", 8] if i % 3 == 1 else [4, 8]
            infos.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, dims, doc_string=f"value {i}"))
        prev = out
    nodes.append(helper.make_node("Identity", [prev], ["Y"], name="output"))
    graph = helper.make_graph(
        nodes, "many_attributes",
        inputs=[helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 8])],
        outputs=[helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", "N"])],
        initializer=[shape], value_info=infos,
        doc_string=f"{n_nodes} nodes with attributes (onnxio scripts/make_many_nodes.py --attributes)")
    model = helper.make_model(graph, producer_name="onnxio-scripts", producer_version="1",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(".cache", "models", "many_nodes.onnx"))
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--attributes", action="store_true",
                    help="nodes with attributes, doc strings and value_info (see above)")
    ap.add_argument("--force", action="store_true", help="rebuild even if the file exists")
    args = ap.parse_args()

    if os.path.exists(args.out) and not args.force:
        print(f"make_many_nodes: {args.out} exists, skipped")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    t0 = time.time()
    model = build_attributes(args.nodes) if args.attributes else build(args.nodes)
    tmp = args.out + ".tmp"
    onnx.save_model(model, tmp)
    n = len(model.graph.node)
    del model
    onnx.checker.check_model(tmp)
    os.replace(tmp, args.out)
    print(f"make_many_nodes: wrote {args.out} ({os.path.getsize(args.out):,} bytes, "
          f"{n:,} nodes) in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
