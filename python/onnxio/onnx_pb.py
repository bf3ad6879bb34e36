"""onnxio's classes under the names of onnx's generated modules.

Code written for onnx imports message classes from them as often as from
``onnx`` itself (``from onnx.onnx_pb import TensorProto``,
``onnx.onnx_ml_pb2.ModelProto``, ``from onnx.onnx_data_pb2 import
SequenceProto``). ``onnxio.onnx_pb`` and its aliases ``onnx_ml_pb2``,
``onnx_data_pb``, ``onnx_data_pb2``, ``onnx_operators_pb`` and
``onnx_operators_ml_pb2`` each hold every top-level message class of the
schema and the top-level enums with their values (``Version``,
``IR_VERSION``, ``OperatorStatus``, ``STABLE``...), taken from the schema's
descriptors: a superset of what each onnx module has. They have no
``DESCRIPTOR`` (a protobuf FileDescriptor, which onnxio has no use for).
"""
import onnxio as _onnxio_package
from onnxio import _onnxio

for _full, _cls in _onnxio._messages.items():
    if _full.count(".") == 1:  # "onnx.ModelProto": a top-level message
        globals()[_cls.__name__] = _cls
for _full, _enum in _onnxio_package._ENUMS.items():
    if _full.count(".") == 1:  # "onnx.Version": a top-level enum
        globals()[_enum._name] = _enum
        globals().update(_enum.items())
del _full, _cls, _enum
