"""onnx.compose on onnxio's messages (and onnx's): merge_models,
merge_graphs, add_prefix, add_prefix_graph, expand_out_dim(_graph),
check_overlapping_names.

onnx's functions are Python over protobuf's message API; they run as they
are, on onnx messages converted at the boundary (onnxio.to_onnx on the way
in, onnxio.from_onnx on the way out; `inplace=True` copies the result back
into the onnxio message passed). Measured against running them on onnxio's
classes, the conversion costs less than the Python walk itself does on
either, and it is exact by construction.

Needs the onnx package (`pip install onnx`).
"""
from onnxio import _bridge

_bridge.export_converted(_bridge.require("onnx.compose"), globals())
