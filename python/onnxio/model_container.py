"""onnx.model_container on onnxio's messages: ModelContainer,
make_large_model and make_large_tensor_proto are onnx's own code, run with
`onnx` meaning onnxio (its messages, helper, numpy_helper, checker and
external data helpers), so a container's ``model_proto`` is an onnxio
ModelProto and what it saves is what onnx's container saves. Loading the
large initializers back reads them through onnxio's checked external data
loader.

Needs the onnx package (`pip install onnx`): the code is its.
"""
from __future__ import annotations

import inspect
import os
import sys
from typing import Any

import numpy as np

from onnxio import _bridge

_mc = _bridge.require("onnx.model_container")


def _rehost() -> dict:
    """onnx's module source executed in a namespace of its own, then its
    globals `onnx` and `ext_data` pointed at onnxio's: every function and
    method looks them up when it runs."""
    import onnxio
    from onnxio import external_data_helper

    ns: dict = {"__name__": __name__, "__file__": _mc.__file__, "__package__": "onnxio"}
    exec(compile(inspect.getsource(_mc), _mc.__file__, "exec"), ns)  # noqa: S102 (the onnx package's own code)
    ns["onnx"] = onnxio
    ns["ext_data"] = external_data_helper
    return ns


_ns = _rehost()
# both loaded at import: a type checker knows them as Any
_RehostedModelContainer: Any = _ns["ModelContainer"]
_OnnxModelContainer: Any = _mc.ModelContainer


class ModelContainer(_RehostedModelContainer, _OnnxModelContainer):
    """onnx's ModelContainer on onnxio's messages (its code, run with
    `onnx` meaning onnxio, comes first; onnx's own class is a base too, so
    that onnx's functions that check isinstance(x, ModelContainer), such as
    the reference evaluator's, take it)."""


    def _load_large_initializers(self, file_path):
        """Loads the large initializers (onnx's method, the data read by
        onnxio's checked loader instead of onnx's private helpers)."""
        from onnxio import external_data_helper, helper

        if self.model_proto_ is None:
            raise RuntimeError("A model must be loaded before loading the weights.")
        self.large_initializers = {}
        base_dir = os.path.dirname(file_path)
        for i, tensor in enumerate(external_data_helper._get_all_tensors(self.model_proto_)):
            if not external_data_helper.uses_external_data(tensor):
                continue
            raw = external_data_helper._read_external_data_bytes(tensor, base_dir)
            key = f"#t{i}"
            _ns["_set_external_data"](tensor, location=key)
            array = np.frombuffer(raw, dtype=helper.tensor_dtype_to_np_dtype(tensor.data_type))
            if sys.byteorder == "big":
                array = array.byteswap()
            self.large_initializers[key] = array.reshape(tuple(tensor.dims))


_ns["ModelContainer"] = ModelContainer
globals().update({k: v for k, v in _ns.items() if not k.startswith("__") and k not in globals()})
make_large_model = _ns["make_large_model"]
make_large_tensor_proto = _ns["make_large_tensor_proto"]

__all__ = ["ModelContainer", "make_large_model", "make_large_tensor_proto"]
