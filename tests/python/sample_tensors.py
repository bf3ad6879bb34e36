"""Arrays of the dtypes and shapes the slice and shard tests cut (an
import of tests/python, as datafiles is): every kind of element the
payload readers handle, including bfloat16, packed int4, a scalar and an
empty tensor."""
import os

import ml_dtypes
import numpy as np
import onnx

import onnxio


def sample_arrays(rng: np.random.Generator) -> dict:
    return {
        "f32": rng.standard_normal((37, 23)).astype(np.float32),
        "f16": rng.standard_normal((64, 48)).astype(np.float16),
        "bf16": rng.standard_normal((12, 40)).astype(ml_dtypes.bfloat16),
        "i64": rng.integers(-(2**40), 2**40, size=(11,), dtype=np.int64),
        "i8": rng.integers(-128, 127, size=(5, 6, 7), dtype=np.int8),
        "b": rng.integers(0, 2, size=(9, 4)).astype(bool),
        "f64": rng.standard_normal((3, 4, 5, 6)),
        "scalar": np.array(3.5, dtype=np.float32),
        "empty": np.zeros((0, 5), dtype=np.uint8),
        "i4": rng.integers(-8, 7, size=(8, 6)).astype(ml_dtypes.int4),
    }


def save_layouts(model, d) -> dict:
    """`model` (an onnx ModelProto) saved in the directory `d` as one .onnx
    file (by onnx), as .onnx + one external data file with every tensor
    external (by onnx), and as an .onnxz archive (by onnxio): the paths by
    layout name, "single", "external" and "onnxz"."""
    single = str(d / "m.onnx")
    onnx.save(model, single)
    os.mkdir(d / "ext")
    external = str(d / "ext" / "m.onnx")
    onnx.save(model, external, save_as_external_data=True, location="m.data", size_threshold=0)
    archive = str(d / "m.onnxz")
    onnxio.save(onnxio.load(single), archive)
    return {"single": single, "external": external, "onnxz": archive}
