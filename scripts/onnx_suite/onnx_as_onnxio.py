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
for name in dir(onnxio):
    if not name.startswith("__"):
        setattr(proxy, name, getattr(onnxio, name))
PROVIDED = tuple(m.name for m in pkgutil.iter_modules(onnxio.__path__) if not m.name.startswith("_"))
for sub in PROVIDED:
    module = importlib.import_module(f"onnxio.{sub}")
    setattr(proxy, sub, module)
    sys.modules[f"onnx.{sub}"] = module
sys.modules["onnx"] = proxy


def pytest_report_header(config):
    return f"onnx resolved to onnxio {onnxio.__version__} for: the top level, " + ", ".join(PROVIDED)
