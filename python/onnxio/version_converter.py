"""onnx.version_converter on onnxio's ModelProto (or onnx's): onnx's C++
converter on the serialized bytes, the result an onnxio ModelProto.

Needs the onnx package (`pip install onnx`).
"""
from __future__ import annotations

from onnxio import _bridge

_vc = _bridge.require("onnx.version_converter")
C = _vc.C
ConvertError = _vc.ConvertError


def convert_version(model, target_version: int):
    """onnx.version_converter.convert_version."""
    data = _bridge.serialized(model, "onnx.ModelProto",
                              f"VersionConverter only accepts ModelProto as model, incorrect type: {type(model)}")
    if not isinstance(target_version, int):
        raise TypeError(f"VersionConverter only accepts int as target_version, incorrect type: "
                        f"{type(target_version)}")
    return _bridge.parsed(C.convert_version(data, target_version), "onnx.ModelProto")


_bridge.export_converted(_bridge.require("onnx.version_converter"), globals())
