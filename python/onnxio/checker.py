"""onnx.checker on onnxio's messages (and onnx's, and bytes and paths where
onnx takes them): the same functions, contexts and ValidationError, which
run onnx's C++ checker on the message's serialized bytes; onnxio serializes
its own messages, so no protobuf object is made.

Beyond onnx: check_model of an in-memory model past protobuf's 2 GiB (which
onnx refuses with ValueError) writes it to a temporary file and checks that
by path, as onnx checks a path.

Needs the onnx package (`pip install onnx`).
"""
from __future__ import annotations

import os
from typing import Any

from onnxio import _bridge

_checker = _bridge.require("onnx.checker")
C = _checker.C
MAXIMUM_PROTOBUF = _checker.MAXIMUM_PROTOBUF
DEFAULT_CONTEXT = _checker.DEFAULT_CONTEXT
LEXICAL_SCOPE_CONTEXT = _checker.LEXICAL_SCOPE_CONTEXT
ValidationError = _checker.ValidationError
IR_VERSION = _checker.IR_VERSION


def _bytes(proto: Any, cls: str) -> bytes:
    # onnx's message for anything else (_ensure_proto_type)
    return _bridge.serialized(proto, f"onnx.{cls}", f"The proto message needs to be of type '{cls}'")


def check_value_info(value_info, ctx=DEFAULT_CONTEXT) -> None:
    """onnx.checker.check_value_info."""
    return C.check_value_info(_bytes(value_info, "ValueInfoProto"), ctx)


def check_tensor(tensor, ctx=DEFAULT_CONTEXT) -> None:
    """onnx.checker.check_tensor."""
    return C.check_tensor(_bytes(tensor, "TensorProto"), ctx)


def check_attribute(attr, ctx=DEFAULT_CONTEXT, lexical_scope_ctx=LEXICAL_SCOPE_CONTEXT) -> None:
    """onnx.checker.check_attribute."""
    return C.check_attribute(_bytes(attr, "AttributeProto"), ctx, lexical_scope_ctx)


def check_node(node, ctx=DEFAULT_CONTEXT, lexical_scope_ctx=LEXICAL_SCOPE_CONTEXT) -> None:
    """onnx.checker.check_node."""
    return C.check_node(_bytes(node, "NodeProto"), ctx, lexical_scope_ctx)


def check_function(function, ctx=None, lexical_scope_ctx=LEXICAL_SCOPE_CONTEXT) -> None:
    """onnx.checker.check_function: without `ctx`, the IR version and
    opsets come from the function's opset_import, as onnx makes them."""
    data = _bytes(function, "FunctionProto")
    if ctx is None:
        from onnxio import helper

        ctx = C.CheckerContext()
        ctx.ir_version = helper.find_min_ir_version_for(function.opset_import, ignore_unknown=True)
        ctx.opset_imports = {o.domain: o.version for o in function.opset_import}
    C.check_function(data, ctx, lexical_scope_ctx)


def check_graph(graph, ctx=DEFAULT_CONTEXT, lexical_scope_ctx=LEXICAL_SCOPE_CONTEXT) -> None:
    """onnx.checker.check_graph."""
    return C.check_graph(_bytes(graph, "GraphProto"), ctx, lexical_scope_ctx)


def check_sparse_tensor(sparse, ctx=DEFAULT_CONTEXT) -> None:
    """onnx.checker.check_sparse_tensor."""
    C.check_sparse_tensor(_bytes(sparse, "SparseTensorProto"), ctx)


def check_model(model, full_check: bool = False, skip_opset_compatibility_check: bool = False,
                check_custom_domain: bool = False) -> None:
    """onnx.checker.check_model: a path is checked by path (its external data
    is read from beside it), bytes as they are, a ModelProto of onnxio or of
    onnx serialized; one past 2 GiB by way of a temporary file."""
    flags = (full_check, skip_opset_compatibility_check, check_custom_domain)
    if isinstance(model, (str, os.PathLike)):
        return C.check_model_path(os.fspath(model), *flags)
    if isinstance(model, bytes):
        if len(model) > MAXIMUM_PROTOBUF:
            raise ValueError("This protobuf of onnx model is too large (>2GiB). Call check_model with model path "
                             "instead.")
        return C.check_model(model, *flags)
    if _bridge.full_name(model) == "onnx.ModelProto" and model.ByteSize() > MAXIMUM_PROTOBUF:
        return _bridge.by_path(model, lambda path, _: C.check_model_path(path, *flags))
    return C.check_model(_bytes(model, "ModelProto"), *flags)


_bridge.export_converted(_bridge.require("onnx.checker"), globals())
