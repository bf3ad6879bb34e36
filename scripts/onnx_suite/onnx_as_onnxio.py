"""pytest plugin (`-p onnx_as_onnxio`): `import onnx` gives onnxio for every
module onnxio provides, the real onnx package for the rest.

Loaded before the test files are collected, it imports the real `onnx`
(its C++ extension and generated modules), then puts in sys.modules:

- "onnx": a module with the real package's names, overlaid by every public
  name of `onnxio` (the message classes, load/save, from_onnx, ...), and the
  real package's __path__, so that `import onnx.backend.test` and other
  modules onnxio does not provide still come from the real package;
- "onnx.<name>" for each public submodule of the onnxio package (helper,
  numpy_helper, onnx_pb, ...): onnxio's module.

Real onnx modules imported earlier keep the real objects they bound; those
imported later (onnx.backend, onnx.reference when onnxio has none) see
onnxio's, as a user's program would after `import onnxio as onnx`.
"""
import importlib
import pkgutil
import sys
import types

import onnx as _real  # noqa: F401  (loads the real package and its extension first)

import onnxio

_real = sys.modules["onnx"]
proxy = types.ModuleType("onnx", _real.__doc__)
proxy.__dict__.update({k: v for k, v in vars(_real).items() if k not in ("__name__", "__loader__", "__spec__")})
proxy.__spec__ = _real.__spec__
proxy.__loader__ = _real.__loader__
# The submodules onnx has (onnxio's own, such as `ir` and `onnxruntime`, are
# no onnx module: importing them here would import onnx_ir or onnxruntime
# before `onnx` is onnxio, binding the real package in them).
ONNX_HAS = {m.name for m in pkgutil.iter_modules(_real.__path__)}
ONNXIO_ONLY = {m.name for m in pkgutil.iter_modules(onnxio.__path__)} - ONNX_HAS
for name in dir(onnxio):
    if not name.startswith("__") and name not in ONNXIO_ONLY:
        setattr(proxy, name, getattr(onnxio, name))
PROVIDED = tuple(m.name for m in pkgutil.iter_modules(onnxio.__path__)
                 if not m.name.startswith("_") and m.name in ONNX_HAS)
for sub in PROVIDED:
    module = importlib.import_module(f"onnxio.{sub}")
    setattr(proxy, sub, module)
    sys.modules[f"onnx.{sub}"] = module
sys.modules["onnx"] = proxy


def pytest_report_header(config):
    return f"onnx resolved to onnxio {onnxio.__version__} for: the top level, " + ", ".join(PROVIDED)
