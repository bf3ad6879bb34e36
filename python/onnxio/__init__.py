"""onnxio: ONNX model files read and written without libprotobuf, with the
API of the ``onnx`` package.

Switch by changing an import::

    import onnxio as onnx
    model = onnx.load("model.onnx")          # a ModelProto, as onnx.load gives
    onnx.save(model, "copy.onnx")            # the same bytes onnx.save writes

The message classes (``ModelProto``, ``TensorProto``, ...) come from the C
extension ``onnxio._onnxio`` and point into C messages; the functions
(loads and saves in ``onnxio._io``, their options in ``onnxio._options``)
map onnx's keyword arguments, plus onnxio's own (``no_copy``,
``num_threads``, ``base_dir``, ``skip_raw_data``, ``alignment``,
``max_external_file_size``, ...), onto the C library's options
(``onnxio.h``). Loading, saving, parsing and serializing release the GIL;
on the main thread, Ctrl-C (KeyboardInterrupt) stops a load or a save
within about 50 ms, a save leaving the old files as they were.

Errors: a file the operating system refuses raises the ``OSError`` that
``open()`` would (``FileNotFoundError``, ``PermissionError``,
``IsADirectoryError``, ..., with ``errno`` and ``filename``), other file
errors ``OSError``, malformed bytes ``onnxio.DecodeError`` (a ``ValueError``),
refused external data (unsafe location, out-of-range offset or length,
checksum mismatch) ``onnxio.ExternalDataError`` (a ``ValueError``), a
malformed or unsafe ``.onnxz`` archive ``onnxio.ArchiveError`` (a
``DecodeError``), serializing a payload that was skipped at load ``onnxio.EncodeError``, bad
argument types ``TypeError`` and bad values ``ValueError``. Each comes
from the library's status (its class in ``status.def``); the package lists
none itself. They are caught as onnx users catch them, and no class changes
its bases after it is made: ``DecodeError`` (and ``ArchiveError``) is also a
``google.protobuf.message.DecodeError`` when protobuf is installed (fixed
at import). Refused external data raises ``ExternalDataError``; once the
onnx package is loaded (before onnxio, after it, or by one of onnxio's
toolbox modules), what is raised is a subclass of it that is also
``onnx.checker.ValidationError``, which onnx raises for the same refusals,
so ``except onnx.checker.ValidationError`` and ``except
onnxio.ExternalDataError`` both catch it; onnxio does not import onnx for
it.

Nesting depth: no message tree crashes the interpreter, however deep (a
tree built in Python by reading sub-messages in a loop can be nested a
million levels; every walk of the extension uses the heap, and the library
refuses what it cannot walk):

- reading (``load``, ``load_from_string``, ``ParseFromString``,
  ``FromString``, unpickling) refuses input nested past ``max_depth``
  (``ParseOptions.max_depth``) with ``DecodeError``;
- writing (``SerializeToString``, ``ByteSize``, pickling, ``save``,
  ``str``/``repr``, which write the text format) refuses a tree nested
  past what a load reads back with ``EncodeError``: past the reader's
  default depth for ``SerializeToString``/``ByteSize``/pickle, past
  ``save``'s ``max_depth`` (``SerializeOptions.max_depth``), past the most
  any ``max_depth`` allows for ``str``;
- in-memory copies (``copy.copy``, ``copy.deepcopy``, ``CopyFrom``,
  ``MergeFrom``, ``append``/``extend`` of a message) raise ``DecodeError``
  past the most any ``max_depth`` allows (upb raises its DecodeError for ``MergeFrom`` and
  ``copy.copy`` of a tree nested past its reader's limit; onnxio's copies
  go 10x deeper);
- ``==`` and ``DiscardUnknownFields`` work at any depth (upb crashes in
  ``==`` at such depths);
- a message initialized from nested dicts raises ``RecursionError`` past
  Python's recursion limit, as any nested structure Python walks.

.onnxz archives (a zip file: one stored entry per large tensor payload, on
an aligned file offset, and the model last as the entry ``__MODEL_PROTO``):
``load`` recognizes one by its first bytes (path, file object or bytes),
``save`` writes one when the path ends in ``.onnxz``, and
``replace_archive_model`` swaps the model of an existing archive in place.

The text formats "textproto" and "json" are read and written by the C
library, byte for byte as onnx (protobuf's text_format and json_format)
writes them; "onnxtxt" (ONNX's textual syntax) is read by the C library
into the message onnx.parser builds, and written by the ``onnx`` package's
printer (imported only then).

onnx's toolbox: ``onnxio.checker``, ``shape_inference``,
``version_converter``, ``printer``, ``inliner`` (onnx's C++ code on
onnxio's serialized bytes), ``compose``, ``utils``, ``model_container``,
``reference`` (onnx's Python code, messages converted at the boundary) and
``defs`` take onnxio's messages and return onnxio's; they need the onnx
package (ImportError naming ``pip install onnx`` otherwise) and
import it only when first used. ``parser`` is onnx.parser's API on the C
library's reader (onnx's ParseError when onnx is installed; it works
without). The onnx package's messages are taken wherever onnxio takes a
message.
"""
from __future__ import annotations

import importlib
import os
import sys
import time
import typing

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes)
from onnxio._onnxio import ArchiveError, DecodeError, EncodeError, ExternalDataError  # noqa: F401

# Repeated fields are MutableSequences, as protobuf registers its containers:
# generic code (onnx_ir, onnxscript) tells them from scalars by isinstance.
import collections.abc as _abc  # noqa: E402

_abc.MutableSequence.register(_onnxio.RepeatedScalarContainer)
_abc.MutableSequence.register(_onnxio.RepeatedCompositeContainer)


if typing.TYPE_CHECKING:  # pragma: no cover
    from typing import IO

# The drop-in's version is that of the onnx API it implements (the schema
# and the Python functions of onnx 1.23.2), so that code gating on
# `onnx.__version__` after `import onnxio as onnx` takes the path for that
# onnx. onnxio's own version: onnxio.version.onnxio_version, `onnxio
# --version`, importlib.metadata.version("onnxio").
__version__ = _onnxio._onnx_version

# The onnx package is built with ONNX-ML; onnxio's schema includes onnx-ml.proto.
ONNX_ML = True

_SUBMODULES = ("helper", "numpy_helper", "external_data_helper", "safetensors", "slices",
               "sharding",
               # onnx's toolbox on onnxio's messages (they need the onnx package but parser)
               "checker", "shape_inference", "version_converter", "printer", "parser", "inliner", "compose",
               "utils", "reference", "model_container", "defs",
               # onnxio's classes under the names of onnx's generated modules
               "onnx_pb", "onnx_ml_pb2", "onnx_data_pb", "onnx_data_pb2", "onnx_operators_pb",
               "onnx_operators_ml_pb2",
               # onnxruntime sessions on onnxio's payloads (needs the onnxruntime package)
               "onnxruntime",
               # onnxio models to onnx_ir models and back (needs onnx_ir)
               "ir",
               "serialization", "version")
# Submodules of onnx that onnxio does not implement: the onnx package's own
# (they need it installed), so that every attribute onnx has, onnxio has.
_ONNX_SUBMODULES = ("backend", "bin", "frontend", "gen_proto", "tools", "_mapping", "onnx_cpp2py_export")
# Functions onnx exports at the top level from its external_data_helper.
_EXTERNAL_DATA_FUNCTIONS = ("convert_model_to_external_data", "load_external_data_for_model",
                            "write_external_data_tensors")

# ---- enums and descriptors (protobuf's reflection: onnxio/_descriptors.py) -----

from onnxio import _descriptors  # noqa: E402  (sets Message.DESCRIPTOR of every class)
from onnxio._descriptors import (  # noqa: E402,F401
    Descriptor, DescriptorAttributeError, EnumDescriptor, EnumTypeWrapper, EnumValueDescriptor, FieldDescriptor,
    FileDescriptor, OneofDescriptor)


def _install_enums() -> dict:
    """Attaches an EnumTypeWrapper for every enum: nested ones to their
    message class (``TensorProto.DataType``), top-level ones to this module
    (``Version``, ``OperatorStatus``) together with their values as module
    constants (``IR_VERSION``, ``STABLE``, ...), as onnx's generated modules
    export them. Returns {full enum name: wrapper}."""
    wrappers = {full: EnumTypeWrapper(e) for full, e in _descriptors.ENUMS.items()}
    module = globals()
    for cls in getattr(_onnxio, "_messages", {}).values():
        for short, full in getattr(cls, "_enum_types", {}).items():
            if full in wrappers and not isinstance(cls.__dict__.get(short), EnumTypeWrapper):
                try:
                    setattr(cls, short, wrappers[full])
                except (AttributeError, TypeError):  # an immutable class that has its own
                    pass
    for full, wrapper in wrappers.items():
        if full.count(".") == 1:  # "onnx.Version": a top-level enum
            module.setdefault(wrapper._name, wrapper)
            for name, number in wrapper.items():
                module.setdefault(name, number)
    return wrappers


_ENUMS = _install_enums()


# ---- the package face: what its modules define --------------------------------

from onnxio import _repr  # noqa: E402,F401  (repr of ModelProto, GraphProto, FunctionProto)
from onnxio._options import ExternalDataOptions, ParseOptions, SerializeOptions, TensorBufferOptions  # noqa: E402,F401
from onnxio._io import (  # noqa: E402,F401
    load, load_from_string, load_model, load_model_from_string, load_tensor, load_tensor_from_string,
    replace_archive_model, save, save_model, save_tensor,
)
from onnxio._convert import consolidate_tensors_to_buffer, from_onnx, to_onnx  # noqa: E402,F401


# ---- tensor slices (onnxio.slices) -------------------------------------------------


def read_tensor(source, name: str, index=None, *, no_copy: bool = False, num_threads: int = 0, base_dir=None,
                stats: dict | None = None):
    """Initializer ``name`` of the model file ``source`` (or its slice
    ``index``, a numpy basic index with steps of 1) as a numpy array,
    reading only the slice's bytes: ``onnxio.slices.read_tensor``, whose
    docstring has the details (``stats={}`` is filled with the bytes read)."""
    from onnxio import slices

    return slices.read_tensor(source, name, index, no_copy=no_copy, num_threads=num_threads, base_dir=base_dir,
                              stats=stats)


def shard(model_or_path, rank: int, world_size: int, plan, *, num_threads: int = 0, base_dir=None,
          stats: dict | None = None, uneven: str = "array_split"):
    """Rank ``rank``'s model of ``world_size`` for tensor parallelism: the
    main graph's initializers that ``plan`` (name or fnmatch pattern ->
    axis or ``"replicate"``; unnamed ones are replicated) splits hold only
    this rank's part, cut as ``numpy.array_split`` cuts; from a path only
    those bytes are read. ``onnxio.sharding.shard``, whose docstring has
    the details (``stats={}`` is filled with the bytes read)."""
    from onnxio import sharding

    return sharding.shard(model_or_path, rank, world_size, plan, num_threads=num_threads, base_dir=base_dir,
                          stats=stats, uneven=uneven)


# ---- submodules --------------------------------------------------------------------


def __getattr__(name: str):
    """Submodules, imported when first used. One whose package is missing
    (onnx_ir for ``ir``, onnx for the toolbox) raises the ImportError of
    its import, which says what to install (``pip install onnx``), as
    ``import onnxio.checker`` does."""
    if name in _SUBMODULES or name in _ONNX_SUBMODULES:
        module = importlib.import_module(f"onnxio.{name}" if name in _SUBMODULES else f"onnx.{name}")
        globals()[name] = module
        return module
    if name in _EXTERNAL_DATA_FUNCTIONS:
        return getattr(importlib.import_module("onnxio.external_data_helper"), name)
    raise AttributeError(f"module 'onnxio' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_ONNX_SUBMODULES) | set(_EXTERNAL_DATA_FUNCTIONS))


# Streaming saves.
from onnxio._streaming import save_streaming  # noqa: E402,F401
