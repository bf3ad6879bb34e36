"""onnxio's classes under the names of onnx's generated modules.

Code written for onnx imports message classes from them as often as from
``onnx`` itself (``from onnx.onnx_pb import TensorProto``,
``onnx.onnx_ml_pb2.ModelProto``, ``from onnx.onnx_data_pb2 import
SequenceProto``). ``onnxio.onnx_pb`` and its aliases ``onnx_ml_pb2``,
``onnx_data_pb``, ``onnx_data_pb2``, ``onnx_operators_pb`` and
``onnx_operators_ml_pb2`` each hold every top-level message class of the
schema and the top-level enums with their values (``Version``,
``IR_VERSION``, ``OperatorStatus``, ``STABLE``...), taken from the schema's
descriptors: a superset of what each onnx module has. Each module's
``DESCRIPTOR`` is the FileDescriptor of its .proto file, as in onnx's
(onnx-ml.proto for onnx_pb and onnx_ml_pb2, onnx-data.proto for the
onnx_data modules, onnx-operators-ml.proto for the onnx_operators ones).
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
DESCRIPTOR = _onnxio_package._descriptors.FILES["onnx/onnx-ml.proto"]
