"""The real files the tests run over: libonnx-testdata, the onnx package's
backend test data and ../shared/corpus, each .onnx (ModelProto) and .pb
test-data file with the message type it holds.
"""
import os
import re
from pathlib import Path

import onnx
from onnx import onnx_data_pb2

import onnxio_ctypes as ox

LIBONNX_TESTDATA = Path(os.environ.get("ONNXIO_LIBONNX_TESTDATA", "/usr/share/libonnx-testdata/data"))
BACKEND_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
CORPUS = ox.SHARED / "corpus"

# TypeProto.value member -> the message a test-data file of that type holds
TYPE_TO_CLASS = {
    "tensor_type": onnx.TensorProto,
    "sequence_type": onnx_data_pb2.SequenceProto,
    "map_type": onnx_data_pb2.MapProto,
    "optional_type": onnx_data_pb2.OptionalProto,
    "sparse_tensor_type": onnx.SparseTensorProto,
}

SOURCES = {
    "libonnx-testdata": (LIBONNX_TESTDATA, "the Debian package libonnx-testdata is not installed"),
    "onnx-backend-data": (BACKEND_DATA, "the installed onnx package has no backend test data"),
    "shared-corpus": (CORPUS, "../shared/corpus not found (a clone without ../shared; CI has it)"),
}

_IO_RE = re.compile(r"^(?:(?P<prefix>.+)_)?(?P<io>input|output)_(?P<i>\d+)\.pb$")


class _ModelCache:
    def __init__(self):
        self.graphs = {}

    def graph(self, path):
        if path not in self.graphs:
            try:
                m = onnx.ModelProto.FromString(path.read_bytes())
                self.graphs[path] = m.graph
            except Exception:  # noqa: BLE001 - an unreadable model just gives no type
                self.graphs[path] = None
        return self.graphs[path]


def message_class_for(pb_path, models):
    """The message class of a test-data file, from the model's TypeProto of
    the matching graph input/output. Two layouts:
      <dir>/model.onnx + <dir>/test_data_set_N/{input,output}_i.pb
      <dir>/<name>.onnx + <dir>/<name>_{input,output}_i.pb   (backend data "light")
    Falls back to TensorProto."""
    m = _IO_RE.match(pb_path.name)
    if not m:
        return onnx.TensorProto
    if m["prefix"]:
        model = pb_path.parent / f"{m['prefix']}.onnx"
    else:
        model = pb_path.parent.parent / "model.onnx"
    if not model.exists():
        return onnx.TensorProto
    g = models.graph(model)
    if g is None:
        return onnx.TensorProto
    values = g.input if m["io"] == "input" else g.output
    i = int(m["i"])
    if i >= len(values):
        return onnx.TensorProto
    which = values[i].type.WhichOneof("value")
    return TYPE_TO_CLASS.get(which, onnx.TensorProto)


def collect(root):
    """(path, message class) of every .onnx and .pb file under root."""
    models = _ModelCache()
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            if fn.endswith(".onnx"):
                out.append((p, onnx.ModelProto))
            elif fn.endswith(".pb"):
                out.append((p, message_class_for(p, models)))
    return out
