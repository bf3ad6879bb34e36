"""References computed by the onnx package, for tests that compare what
onnxio writes with what onnx writes for the same operation.

onnx's load_external_data_for_tensor leaves each tensor it reads from a file
with `data_location = DEFAULT` set (present) and no external_data keys;
onnxio's loaders do the same, so a model read with its external data and
written again has onnx's bytes, not the bytes of the model before it was
split (those lack the DEFAULT fields).
"""
import tempfile
import zipfile
from pathlib import Path

import onnx


def inlined(path):
    """The model onnx loads from `path`, external data read in (see
    inlined_bytes)."""
    return onnx.load_model_from_string(inlined_bytes(path))


def inlined_bytes(path):
    """The bytes onnx writes for the model at `path` once its external data
    is read in: `onnx.load(path).SerializeToString()`. For an .onnxz archive
    (a zip file whose entries are the model and its external data files),
    the archive is first extracted with zipfile and onnx loads the model
    entry from there; the tensors it read from entries then lose the
    data_location = DEFAULT that onnx leaves on them unless their keys hold
    "onnxio.data_location" (docs/onnxz.md: an archive gives back its
    tensors as they were before it was written)."""
    from onnx.external_data_helper import _get_all_tensors

    path = Path(path)
    if not zipfile.is_zipfile(path):
        return onnx.load(str(path)).SerializeToString()
    with tempfile.TemporaryDirectory() as d, zipfile.ZipFile(path) as z:
        z.extractall(d)
        entry = str(Path(d) / "__MODEL_PROTO")
        was_external = [t.data_location == onnx.TensorProto.EXTERNAL and
                        "onnxio.data_location" not in {e.key for e in t.external_data}
                        for t in _get_all_tensors(onnx.load(entry, load_external_data=False))]
        m = onnx.load(entry)
        for t, external in zip(_get_all_tensors(m), was_external):
            if external:
                t.ClearField("data_location")
        return m.SerializeToString()


def marked_inline(path, moved):
    """The bytes of the model at `path` (read by onnx, its external data
    left alone) with `data_location = DEFAULT` set on every initializer for
    which `moved(tensor)` is true, as a trip through external data and back
    leaves them."""
    m = onnx.load(str(path), load_external_data=False)
    for t in m.graph.initializer:
        if moved(t):
            t.data_location = onnx.TensorProto.DEFAULT
    return m.SerializeToString()
