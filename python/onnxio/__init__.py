"""onnxio: ONNX model files read and written without libprotobuf, with the
API of the ``onnx`` package.

Switch by changing an import::

    import onnxio as onnx
    model = onnx.load("model.onnx")          # a ModelProto, as onnx.load gives
    onnx.save(model, "copy.onnx")            # the same bytes onnx.save writes

The message classes (``ModelProto``, ``TensorProto``, ...) come from the C
extension ``onnxio._onnxio`` and point into C messages; the functions here
map onnx's keyword arguments, plus onnxio's own (``no_copy``,
``num_threads``, ``base_dir``, ``skip_raw_data``, ``alignment``,
``max_external_file_size``, ...), onto the C library's options
(``onnxio.h``). Loading, saving, parsing and serializing release the GIL;
on the main thread, Ctrl-C (KeyboardInterrupt) stops a save within about
50 ms, the old files left as they were (a load stops at its end, or within
50 ms with ``progress=``).

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
none itself. They are caught as onnx users catch them: ``DecodeError`` (and
``ArchiveError``) is also a ``google.protobuf.message.DecodeError`` when
protobuf is installed, and ``ExternalDataError`` an
``onnx.checker.ValidationError`` (what onnx raises for refused external
data) once the onnx package is loaded, before onnxio or by one of onnxio's
toolbox modules (``onnxio.checker`` ...); onnxio does not import onnx for
it.

Nesting depth: no message tree crashes the interpreter, however deep (a
tree built in Python by reading sub-messages in a loop can be nested a
million levels; every walk of the extension uses the heap, and the library
refuses what it cannot walk):

- reading (``load``, ``load_from_string``, ``ParseFromString``,
  ``FromString``, unpickling) refuses input nested past ``max_depth``
  (default 100, at most 1000) with ``DecodeError``;
- writing (``SerializeToString``, ``ByteSize``, pickling, ``save``,
  ``str``/``repr``, which write the text format) refuses a tree nested
  past what a load reads back with ``EncodeError``: past 100 levels for
  ``SerializeToString``/``ByteSize``/pickle (the reader's default), past
  ``save``'s ``max_depth`` (default 100, at most 1000), past 1000 for ``str``;
- in-memory copies (``copy.copy``, ``copy.deepcopy``, ``CopyFrom``,
  ``MergeFrom``, ``append``/``extend`` of a message) raise ``DecodeError``
  past 1000 levels (upb raises its DecodeError for ``MergeFrom`` and
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
package (ImportError naming ``pip install onnxio[onnx]`` otherwise) and
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


def _adopt_base(cls: type, base: type) -> None:
    """Makes `base` (an exception class of protobuf or onnx) a base of
    onnxio's exception class `cls`, so that `except base` catches it."""
    if not issubclass(cls, base):
        cls.__bases__ = cls.__bases__ + (base,)


def _adopt_onnx_bases() -> None:
    """ExternalDataError becomes an onnx.checker.ValidationError (called
    when onnx is loaded: at import if it already is, and by _bridge)."""
    checker = sys.modules.get("onnx.onnx_cpp2py_export.checker")
    if checker is not None:
        _adopt_base(ExternalDataError, checker.ValidationError)


try:
    import google.protobuf.message as _protobuf_message  # 0.5 ms; protobuf is optional
except ImportError:  # pragma: no cover
    pass
else:
    _adopt_base(DecodeError, _protobuf_message.DecodeError)
_adopt_onnx_bases()

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


# ---- options -----------------------------------------------------------------


class _Options:
    """Shared behaviour of the option classes: keyword construction with
    checked names, equality, repr."""

    __slots__ = ()
    _defaults: dict = {}

    def __init__(self, **kwargs):
        for name, default in self._all_defaults().items():
            setattr(self, name, kwargs.pop(name, default))
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}")

    @classmethod
    def _all_defaults(cls) -> dict:
        out: dict = {}
        for klass in reversed(cls.__mro__):
            out.update(klass.__dict__.get("_defaults", {}))
        return out

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._all_defaults())

    def __repr__(self):
        args = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._all_defaults())
        return f"{type(self).__name__}({args})"


class TensorBufferOptions(_Options):
    """How tensor payloads are placed in memory (``onnxio_tensor_buffer_options``).

    raw_data_threshold: payloads of at least this many bytes are "large":
        copied by the thread pool, borrowed by no_copy, consolidated.
        0 means the default, 1024 bytes.
    alignment: alignment in bytes (a power of two) of large payload buffers
        and of offsets in consolidated buffers and external data files.
        0 means the default: 64 in memory, 4096 in external data files;
        1 means none.
    """

    __slots__ = ("raw_data_threshold", "alignment")
    _defaults = {"raw_data_threshold": 0, "alignment": 0}


class ParseOptions(TensorBufferOptions):
    """Options of a load or parse (``onnxio_parse_options``), with the
    fields of TensorBufferOptions.

    num_threads: threads for payload copies and external data reads
        (0: one per core; 1: none). The result does not depend on it.
    no_copy: payloads point into the input (the file's memory mapping, or
        the bytes object) instead of being copied; the mapping or object
        stays alive as long as one of them does.
    load_external_data: None (the default: on for files, and for bytes when
        base_dir is given), True or False.
    base_dir: the directory external data locations are resolved under
        (default: the model file's directory).
    skip_raw_data: parse structure only; payloads keep their size but no
        bytes (saving such a model raises EncodeError).
    max_depth: maximum message nesting (0: 100, protobuf's default); deeper
        input raises DecodeError. Values above 1000 (ONNXIO_MAX_DEPTH)
        are taken as 1000, however large; a negative one is a ValueError.
    payload_fn: None, or ``payload_fn(tensor, size, external)`` called once
        per payload before it is read: return None/True to load it, False
        to skip it (an external one stays external), or a writable
        C-contiguous buffer of at least ``size`` bytes to copy it into
        (the tensor then keeps that object alive). ``tensor`` must not be
        modified. An exception it raises stops the load and propagates.
    verify_checksum: check the SHA-1 of external data files that have a
        "checksum" key; a mismatch raises ExternalDataError.
    verify_crc: .onnxz archives: check the CRC-32 of every entry the load
        reads. None (the default): on for copy loads, off with no_copy
        (checking would read every page of the mapping); True or False. A
        mismatch raises ExternalDataError.
    max_expansion: the most a load may allocate for structure and payloads
        (copies, inflated .onnxz entries, payload_fn placements), as a
        multiple of the bytes it reads (the model and every distinct
        external data file or archive entry), plus 1 MiB
        (``onnxio_parse_options.max_expansion``,
        ``ONNXIO_EXPANSION_ALLOWANCE``). 0: the library's default, 100;
        ``2**64 - 1``: no limit. Past it the load raises DecodeError before
        allocating more: it stops zip bombs, overlapping external data
        ranges and floods of empty messages.
    direct_io: copy loads read the payload ranges that the page cache does
        not hold with direct I/O (O_DIRECT, Linux): from the device into the
        payload memory, with no page-cache copy in between, and those pages
        are then not cached for a later load (``onnxio_parse_options.direct_io``).
        None (the default) and True: on; False: every read goes through the
        page cache. Either way, a copy load whose files, with what of them
        is cached, do not fit in the available memory beside its copies
        drops what it has read from the page cache as it goes.
    """

    __slots__ = ("num_threads", "no_copy", "load_external_data", "base_dir", "skip_raw_data", "max_depth",
                 "payload_fn", "verify_checksum", "verify_crc", "max_expansion", "direct_io")
    _defaults = {"num_threads": 0, "no_copy": False, "load_external_data": None, "base_dir": None,
                 "skip_raw_data": False, "max_depth": 0, "payload_fn": None, "verify_checksum": False,
                 "verify_crc": None, "max_expansion": 0, "direct_io": None}

    def _kwargs(self) -> dict:
        return {n: getattr(self, n) for n in self._all_defaults()}


class ExternalDataOptions(_Options):
    """Moving payloads to external data files on save
    (``onnxio_external_data_options``).

    location: the data file's name, relative to the model's directory
        (None: payloads stay in the model, unless all_tensors_to_one_file
        is False).
    size_threshold: payloads of at least this many bytes move (0: 1024).
    all_tensors_to_one_file: None/True: all to ``location``; False: one
        file per tensor, named from the tensor.
    convert_attribute: also move tensors in attributes, sparse tensors and
        functions (default: initializers only, as onnx).
    max_file_size: when non-zero, split the data into files of at most
        this many bytes ("<stem>-00001-of-0000N<ext>").
    checksum: write a "checksum" key (SHA-1 of the data file).
    """

    __slots__ = ("location", "size_threshold", "all_tensors_to_one_file", "convert_attribute", "max_file_size",
                 "checksum")
    _defaults = {"location": None, "size_threshold": 0, "all_tensors_to_one_file": None,
                 "convert_attribute": False, "max_file_size": 0, "checksum": False}


class SerializeOptions(TensorBufferOptions):
    """Options of a save (``onnxio_serialize_options``), with the fields of
    TensorBufferOptions.

    num_threads: threads for payload writes (0: one per core; 1: none);
        the bytes written do not depend on it.
    external_data: an ExternalDataOptions (default: no external data).
    max_depth: a tree nested deeper than this is refused with EncodeError
        (``onnxio_serialize_options.max_depth``): 0 means 100, what a load
        reads back by default; values above 1000 are taken as 1000. Load
        what was saved with a higher value with the same ``max_depth``.
    fsync: True (default): every file is fsync'd before it replaces its
        target (a crash or a power cut leaves the old files or the new
        ones). False: no fsync, for scratch outputs: a killed save still
        leaves the old or the new files, a power cut may leave a new file
        incomplete (``onnxio_serialize_options.fsync``).
    max_expansion: a save whose payloads add up to more than this many
        times the distinct bytes they come from (tensors sharing one buffer),
        plus 1 MiB, is refused with ExpansionError before anything is
        written (``onnxio_serialize_options.max_expansion``; 0: 100).
    """

    __slots__ = ("num_threads", "external_data", "max_depth", "fsync", "max_expansion")
    _defaults = {"num_threads": 0, "external_data": None, "max_depth": 0, "fsync": True, "max_expansion": 0}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.external_data is None:
            self.external_data = ExternalDataOptions()

    def _kwargs(self) -> dict:
        out = {"num_threads": self.num_threads, "raw_data_threshold": self.raw_data_threshold,
               "alignment": self.alignment, "max_depth": self.max_depth, "fsync": self.fsync,
               "max_expansion": self.max_expansion}
        ext = self.external_data or ExternalDataOptions()
        out.update({n: getattr(ext, n) for n in ExternalDataOptions._all_defaults()})
        return out


def _check_options(options, cls):
    if options is not None and not isinstance(options, cls):
        raise TypeError(f"options must be an onnxio.{cls.__name__} or None, not {type(options).__name__}")


def _parse_kwargs(options, explicit: dict) -> dict:
    """The C keyword arguments: `options` first, then every explicit
    keyword argument that differs from its default."""
    _check_options(options, ParseOptions)
    out = (options or ParseOptions())._kwargs()
    defaults = ParseOptions._all_defaults()
    for name, value in explicit.items():
        if value is not defaults[name] and value != defaults[name]:
            out[name] = value
    return out


# ---- formats and files ---------------------------------------------------------

_DEFAULT_FORMAT = "protobuf"
_BYTES_OVERHEAD = sys.getsizeof(b"")
def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def _is_bytes_like(f) -> bool:
    if isinstance(f, (bytes, bytearray, memoryview)):
        return True
    try:
        memoryview(f).release()
        return not _is_path(f) and not hasattr(f, "read")
    except TypeError:
        return False


def _is_remote(f) -> bool:
    """A URL ("s3://...", "https://...", "memory://...") or an fsspec file
    object: loaded by onnxio._remote (fsspec imported only then)."""
    if isinstance(f, str):
        return "://" in f and _remote_module().is_url(f)
    return hasattr(f, "fs") and hasattr(f, "path") and _remote_module().is_remote(f)


def _remote_module():
    from onnxio import _remote

    return _remote


def _file_path(f) -> str | None:
    """The absolute path of a path or a named file object (onnx's
    _get_file_path), None otherwise."""
    if _is_path(f):
        return os.path.abspath(os.fsdecode(f))
    name = getattr(f, "name", None)
    if isinstance(name, (str, bytes, os.PathLike)) and not isinstance(name, int):
        return os.path.abspath(os.fsdecode(name))
    return None


def _resolve_format(fmt, f) -> str:
    if fmt is not None:
        return fmt
    path = _file_path(f) if not _is_bytes_like(f) else None
    if path is not None:
        from onnxio import serialization

        return serialization.registry.get_format_from_file_extension(os.path.splitext(path)[1]) or _DEFAULT_FORMAT
    return _DEFAULT_FORMAT


def _parse_text(fmt: str, data, cls, max_depth: int = 0, max_expansion: int = 0):
    """A message of class `cls` read from `data` in format `fmt` (not
    "protobuf") by the serializer onnxio.serialization registers for it
    (the library's text readers: within max_depth and max_expansion)."""
    from onnxio import serialization

    serializer = serialization.registry.get(fmt)
    if isinstance(serializer, serialization._LibraryTextSerializer):
        return serializer.parse(data, cls, max_depth, max_expansion)  # a new message, no copy
    return serializer.deserialize_proto(data, cls())


def _format_text(fmt: str, msg) -> bytes:
    """`msg` written in format `fmt` by the serializer registered for it."""
    from onnxio import serialization

    return serialization.registry.get(fmt).serialize_proto(msg)


def _read_bytes(f):
    if hasattr(f, "read") and callable(f.read):
        return f.read()
    with open(f, "rb") as readable:
        return readable.read()


def _write_bytes(content, f) -> None:
    if hasattr(f, "write") and callable(f.write):
        f.write(content)
    else:
        with open(f, "wb") as writable:
            writable.write(content)


def _class_name(cls) -> str:
    for full, klass in getattr(_onnxio, "_messages", {}).items():
        if klass is cls:
            return full
    return cls.__name__


# ---- progress ----------------------------------------------------------------------


def _human(n: int) -> str:
    """Bytes in binary units, as the onnxio command prints them."""
    if n < 1024:
        return f"{n} B"
    v = n / 1024.0
    for unit in ("KiB", "MiB", "GiB"):
        if v < 1024.0:
            return f"{v:.1f} {unit}"
        v /= 1024.0
    return f"{v:.1f} TiB"


class _ProgressDisplay:
    """``progress=True``: a tqdm bar when tqdm is importable, else the
    onnxio command's line on stderr, drawn only when stderr is a terminal
    (at most ten times a second). A progress callable: (done, total)."""

    def __init__(self, what: str, subject):
        self.desc = f"{what} {os.path.basename(os.fspath(subject))}" if _is_path(subject) else what
        self.bar = None
        self.drawn = False
        self.last_draw = 0.0
        self.start = time.monotonic()
        try:
            import tqdm  # noqa: F401
            self.tqdm = tqdm.tqdm
        except ImportError:
            self.tqdm = None

    def __call__(self, done: int, total: int) -> None:
        if self.tqdm is not None:
            if self.bar is None:
                self.bar = self.tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=self.desc)
            self.bar.update(done - self.bar.n)
            return
        now = time.monotonic()
        if done < total and now - self.last_draw < 0.1:
            return
        stream = sys.stderr
        if stream is None or not stream.isatty() or os.environ.get("TERM") == "dumb":
            return
        self.last_draw = now
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        left = (total - done) / rate if rate > 0 else None
        eta = "-:--" if left is None else f"{int(left) // 60}:{int(left) % 60:02d}"
        percent = int(done * 100 / total) if total else 100
        filled = int(done * 20 / total) if total else 20
        stream.write(f"\r\033[Konnxio: {self.desc} {percent:3d}% [{'#' * filled}{'-' * (20 - filled)}] "
                     f"{_human(done)}/{_human(total)} {rate / 1e6:.1f} MB/s ETA {eta}")
        stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.drawn = False


def _progress_fn(progress, what: str, subject):
    """The callable behind a ``progress=`` argument (None when there is
    none): a callable as it is, True a _ProgressDisplay, None/False none."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _ProgressDisplay(what, subject)
    if not callable(progress):
        raise TypeError(f"progress must be a callable (done, total), True or None, not {type(progress).__name__}")
    return progress


def _with_progress(progress, what: str, subject, kwargs: dict, run):
    """Runs run() with kwargs["progress"] set from `progress`; a display
    made for progress=True is closed however the call ends."""
    fn = _progress_fn(progress, what, subject)
    if fn is None:
        return run()
    kwargs["progress"] = fn
    try:
        return run()
    finally:
        if isinstance(fn, _ProgressDisplay):
            fn.close()


# ---- load ------------------------------------------------------------------------


def _load(cls, f, fmt, load_external_data, kwargs):
    """Loads one message of class `cls` from a path, file object or bytes."""
    if _is_remote(f):  # a URL or an fsspec file object: onnxio/_remote.py
        from onnxio import _remote

        local = _remote.local_path(f)
        if local is None:
            if fmt not in (None, _DEFAULT_FORMAT):
                raise ValueError(f"remote loads read the protobuf format only, not {fmt!r}")
            return _remote.load(cls, f, load_external_data, kwargs)
        f = local  # file:// and local://: loaded as the path is, with every local check
    if isinstance(kwargs.get("base_dir"), str) and "://" in kwargs["base_dir"]:
        kwargs["base_dir"] = _remote_module().local_dir(kwargs["base_dir"])
    fmt = _resolve_format(fmt, f)
    path = None if _is_bytes_like(f) else _file_path(f)
    if fmt != _DEFAULT_FORMAT:
        msg = _parse_text(fmt, _read_bytes(f), cls, kwargs.get("max_depth") or 0, kwargs.get("max_expansion") or 0)
        if cls is ModelProto and load_external_data and path and not kwargs.get("skip_raw_data"):  # noqa: F405
            ext = {k: v for k, v in kwargs.items() if k != "base_dir" and k != "load_external_data"}
            _onnxio._load_external_data(msg, kwargs.get("base_dir") or os.path.dirname(path), **ext)
        return msg
    if cls is ModelProto and not load_external_data:  # noqa: F405
        kwargs["load_external_data"] = False
    if _is_path(f):
        return _onnxio._load_file(f, cls, **kwargs)
    if _is_bytes_like(f):
        return _onnxio._load_bytes(f, cls, **kwargs)
    if not (hasattr(f, "read") and callable(f.read)):
        raise TypeError(f"expected a path, a file object or bytes, not {type(f).__name__}")
    data = f.read()
    if cls is ModelProto and path and load_external_data and kwargs.get("base_dir") is None:  # noqa: F405
        # As onnx: external data of a named file object is under its directory.
        kwargs["base_dir"] = os.path.dirname(path)
    return _onnxio._load_bytes(data, cls, **kwargs)


def load_model(
    f,
    format: str | None = None,  # noqa: A002 (onnx's name)
    load_external_data: bool = True,
    *,
    no_copy: bool = False,
    num_threads: int = 0,
    base_dir: str | os.PathLike | None = None,
    skip_raw_data: bool = False,
    verify_checksum: bool = False,
    max_depth: int = 0,
    raw_data_threshold: int = 0,
    alignment: int = 0,
    payload_fn=None,
    verify_crc: bool | None = None,
    max_expansion: int = 0,
    options: ParseOptions | None = None,
    progress=None,
    direct_io: bool | None = None,
) -> ModelProto:  # noqa: F405
    """Loads a ModelProto, as ``onnx.load_model``.

    Args:
        f: a path (str or os.PathLike), a file object (its ``read()`` bytes;
            its ``name``, when it has one, locates external data), or a
            bytes-like object holding the serialized model. Any of them may
            hold an .onnxz archive (recognized by its first bytes, whatever
            the name): its tensors are read from their entries (with
            ``load_external_data=False`` they stay external, their
            ``location`` naming entries, as ``replace_archive_model``
            wants them).
        format: "protobuf" (default; inferred from the file extension when
            ``f`` is a path) or a textual format of onnx: "textproto" and
            "json" (read by the C library as protobuf's text_format and
            json_format read them), "onnxtxt" (ONNX's textual syntax, read
            by the C library as onnx.parser reads it).
        load_external_data: read tensors stored in external data files, from
            the model's directory (or ``base_dir``). A bytes input reads them
            only when ``base_dir`` is given.
        no_copy, num_threads, base_dir, skip_raw_data, verify_checksum,
        max_depth, raw_data_threshold, alignment, payload_fn, verify_crc,
        max_expansion, direct_io: see ``ParseOptions``. With ``no_copy``, payloads point into the file's
            memory mapping (or into ``f`` when it is bytes-like, which then
            stays alive and, if it is a bytearray, cannot be resized while
            the model uses it).
        options: a ParseOptions giving all of these at once; keyword
            arguments that differ from their defaults override it.
        progress: None (default: silent), a callable ``progress(done,
            total)`` called with the payload bytes placed so far and in all
            (``onnxio_parse_options.progress``: on the calling thread, with
            the GIL, at least every MiB, last with done == total; an
            exception it raises stops the load and propagates), or True: a
            tqdm bar when tqdm is installed, else a line on stderr drawn
            only when it is a terminal.

    Returns:
        The ModelProto.

    Raises:
        FileNotFoundError, OSError, onnxio.DecodeError (malformed bytes,
        nesting past max_depth, or past max_expansion), onnxio.ArchiveError (a DecodeError: a
        malformed or unsafe .onnxz archive), onnxio.ExternalDataError
        (refused external data; in an archive, a tensor whose location is
        not an entry or whose range does not fit it, a CRC-32 mismatch),
        TypeError, ValueError.
    """
    kwargs = _parse_kwargs(options, dict(no_copy=no_copy, num_threads=num_threads, base_dir=base_dir,
                                         skip_raw_data=skip_raw_data, verify_checksum=verify_checksum,
                                         max_depth=max_depth, raw_data_threshold=raw_data_threshold,
                                         alignment=alignment, payload_fn=payload_fn, verify_crc=verify_crc,
                                         max_expansion=max_expansion, direct_io=direct_io))
    return _with_progress(progress, "loading", f, kwargs,
                          lambda: _load(ModelProto, f, format, load_external_data, kwargs))  # noqa: F405


def load_model_from_string(
    s,
    format: str = _DEFAULT_FORMAT,  # noqa: A002
    *,
    no_copy: bool = False,
    num_threads: int = 0,
    base_dir: str | os.PathLike | None = None,
    skip_raw_data: bool = False,
    verify_checksum: bool = False,
    max_depth: int = 0,
    raw_data_threshold: int = 0,
    alignment: int = 0,
    payload_fn=None,
    verify_crc: bool | None = None,
    max_expansion: int = 0,
    options: ParseOptions | None = None,
    progress=None,
    direct_io: bool | None = None,
) -> ModelProto:  # noqa: F405
    """Parses a serialized ModelProto from a bytes-like object, as
    ``onnx.load_model_from_string``. External data is read only when
    ``base_dir`` is given. ``s`` may hold an .onnxz archive, whose tensors
    are read from its entries. The other keyword arguments (progress too)
    are load_model's.
    Raises onnxio.DecodeError for malformed bytes, TypeError for a str
    in the protobuf format."""
    kwargs = _parse_kwargs(options, dict(no_copy=no_copy, num_threads=num_threads, base_dir=base_dir,
                                         skip_raw_data=skip_raw_data, verify_checksum=verify_checksum,
                                         max_depth=max_depth, raw_data_threshold=raw_data_threshold,
                                         alignment=alignment, payload_fn=payload_fn, verify_crc=verify_crc,
                                         max_expansion=max_expansion, direct_io=direct_io))
    if format != _DEFAULT_FORMAT:
        return _parse_text(format, s, ModelProto, kwargs.get("max_depth") or 0,  # noqa: F405
                           kwargs.get("max_expansion") or 0)
    if isinstance(s, str):
        raise TypeError(f"Parameter 'serialized' must be bytes, but got type: {type(s)}")
    return _with_progress(progress, "loading", None, kwargs,
                          lambda: _onnxio._load_bytes(s, ModelProto, **kwargs))  # noqa: F405


def load_tensor(
    f,
    format: str | None = None,  # noqa: A002
    *,
    no_copy: bool = False,
    num_threads: int = 0,
    skip_raw_data: bool = False,
    max_depth: int = 0,
    raw_data_threshold: int = 0,
    alignment: int = 0,
    max_expansion: int = 0,
) -> TensorProto:  # noqa: F405
    """Loads a TensorProto from a path, file object or bytes-like object,
    as ``onnx.load_tensor`` (the keyword arguments are load_model's)."""
    kwargs = _parse_kwargs(None, dict(no_copy=no_copy, num_threads=num_threads, skip_raw_data=skip_raw_data,
                                      max_depth=max_depth, raw_data_threshold=raw_data_threshold,
                                      alignment=alignment, max_expansion=max_expansion))
    return _load(TensorProto, f, format, False, kwargs)  # noqa: F405


def load_tensor_from_string(
    s,
    format: str = _DEFAULT_FORMAT,  # noqa: A002
    *,
    no_copy: bool = False,
    skip_raw_data: bool = False,
    max_depth: int = 0,
    max_expansion: int = 0,
) -> TensorProto:  # noqa: F405
    """Parses a serialized TensorProto, as ``onnx.load_tensor_from_string``
    (the keyword arguments are load_model's)."""
    if format != _DEFAULT_FORMAT:
        return _parse_text(format, s, TensorProto, max_depth, max_expansion)  # noqa: F405
    if isinstance(s, str):
        raise TypeError(f"Parameter 'serialized' must be bytes, but got type: {type(s)}")
    return _onnxio._load_bytes(s, TensorProto, no_copy=no_copy, skip_raw_data=skip_raw_data,  # noqa: F405
                               max_depth=max_depth, max_expansion=max_expansion)


# ---- save -----------------------------------------------------------------------


def _save_kwargs(options, explicit: dict) -> dict:
    _check_options(options, SerializeOptions)
    out = (options or SerializeOptions())._kwargs()
    defaults = dict(SerializeOptions._all_defaults(), **ExternalDataOptions._all_defaults())
    for name, value in explicit.items():
        if value is not defaults[name] and value != defaults[name]:
            out[name] = value
    return out


def _write_pending_external(proto, path: str, kwargs: dict):
    """A copy of `proto` whose tensors marked external in Python (by
    external_data_helper.convert_model_to_external_data) were written to
    their files under the model's directory, as onnx.save does with
    write_external_data_tensors."""
    from onnxio import external_data_helper

    copy = type(proto)()
    copy.CopyFrom(proto)
    written = external_data_helper.write_external_data_tensors(copy, os.path.dirname(path))
    return copy if written is None else written


def _is_archive_name(f, path) -> bool:
    """True when saving to `f` means an .onnxz archive: a path the library
    calls an archive's (onnxio_path_is_archive, on the name as given), or a
    file object whose name is one."""
    if _is_path(f):
        return _onnxio._path_is_archive(f)
    return path is not None and _onnxio._path_is_archive(path) and not _is_bytes_like(f)


def _serialize(proto, kwargs: dict) -> bytes:
    """The bytes of `proto` for a file object. The library serializes to
    memory with the default max_depth only (onnxio_serialized_size takes no
    options); a larger max_depth goes through a save to a private temporary
    file, which takes it."""
    if not kwargs.get("max_depth"):
        return _onnxio._serialize(proto)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="onnxio-") as d:
        tmp = os.path.join(d, "message.pb")
        _onnxio._save_file(proto, tmp, num_threads=kwargs.get("num_threads", 0), max_depth=kwargs["max_depth"])
        with open(tmp, "rb") as readable:
            return readable.read()


def _check_archive_save(proto, f, fmt, *, save_as_external_data, location, all_tensors_to_one_file, kwargs):
    """ValueError for what an .onnxz save cannot do."""
    if not _is_path(f):
        raise ValueError("an .onnxz archive is written only to a path (the library writes it atomically, by "
                         f"name), not to a file object ({getattr(f, 'name', f)!r})")
    if fmt != _DEFAULT_FORMAT:
        raise ValueError(f"an .onnxz archive holds a protobuf model; format {fmt!r} does not apply")
    refused = [name for name, given in (("save_as_external_data", bool(save_as_external_data)),
                                        ("location", location is not None),
                                        ("all_tensors_to_one_file=False", all_tensors_to_one_file is False),
                                        ("max_external_file_size", bool(kwargs.get("max_file_size"))),
                                        ("checksum", bool(kwargs.get("checksum")))) if given]
    if refused:
        raise ValueError(f"{', '.join(refused)}: external data options do not apply to an .onnxz archive "
                         f"({os.fsdecode(f)!r}), whose large tensors are entries of the archive itself")
    if _onnxio._has_pending_external(proto):
        raise ValueError("tensors marked external in Python (convert_model_to_external_data) cannot be saved to an "
                         ".onnxz archive; large tensors become entries of the archive by themselves")


def replace_archive_model(model, path, *, num_threads: int = 0) -> None:
    """Replaces the model (the entry ``__MODEL_PROTO``) of the existing
    .onnxz archive at ``path`` by ``model``, in place: the new model and
    central directory are appended, no tensor entry moves or is rewritten,
    and a crash at any point leaves a valid archive with either the old or
    the new model. The old model's bytes stay in the file, unreferenced,
    until the archive is saved anew with ``save``.

    ``model`` is typically the archive loaded with
    ``load_external_data=False`` and then edited: its external tensors must
    name entries of the archive (offset and length within them), checked as
    on load; tensors that hold loaded raw_data are written inline in the new
    model. The GIL is released during the call; one writer at a time (a
    concurrent one gets OSError).

    Raises:
        FileNotFoundError, OSError, onnxio.ArchiveError (the file is not a
        valid archive), onnxio.ExternalDataError (a tensor refers to no
        entry, or past its end), TypeError, ValueError.
    """
    if not isinstance(model, ModelProto):  # noqa: F405
        raise TypeError(f"model must be an onnxio.ModelProto, not {type(model).__name__}")
    if not _is_path(path):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    _onnxio._archive_replace_model(model, path, num_threads=num_threads)


def save_model(
    proto,
    f,
    format: str | None = None,  # noqa: A002
    *,
    save_as_external_data: bool = False,
    all_tensors_to_one_file: bool = True,
    location: str | None = None,
    size_threshold: int = 1024,
    convert_attribute: bool = False,
    num_threads: int = 0,
    alignment: int = 0,
    max_external_file_size: int = 0,
    checksum: bool = False,
    raw_data_threshold: int = 0,
    max_depth: int = 0,
    fsync: bool = True,
    options: SerializeOptions | None = None,
    progress=None,
    max_expansion: int = 0,
) -> None:
    """Saves a ModelProto, as ``onnx.save_model``: the same bytes.

    Args:
        proto: an onnxio ModelProto, or bytes of one (parsed, then saved as
            onnx does).
        f: a path (the file is written atomically: a temporary file in the
            same directory, renamed over ``f``) or a file object with
            ``write()``.
        format: as load_model.
        save_as_external_data: move payloads to external data files beside
            the model, those whose ``sys.getsizeof(raw_data)`` (as onnx
            measures: the length plus 33) is at least ``size_threshold``; ``proto`` itself is not modified (onnx
            modifies it). Needs a path, or a file object with a ``name``.
        all_tensors_to_one_file: True: one file, ``location`` (default: a
            fresh "<uuid>.data" on every save, as onnx names it); False: one
            file per tensor.
        location, convert_attribute: as onnx.
        num_threads: threads writing payloads (0: one per core); the bytes
            do not depend on it.
        alignment: offset alignment of payloads in the data file (0: 4096, 1:
            none, as onnx writes them).
        max_external_file_size: split the data into files of at most this
            many bytes (0: no limit).
        checksum: write a SHA-1 "checksum" key per external tensor.
        raw_data_threshold: see TensorBufferOptions.
        max_depth: refuse (EncodeError) a model nested deeper than this
            (0: 100, what load reads back by default; at most 1000). A model
            saved with a higher value loads with the same ``max_depth``.
        fsync: False skips fsync, for scratch outputs (see SerializeOptions;
            onnx never syncs).
        max_expansion: refuse (ExpansionError) a save whose payloads add up
            to more than this many times the distinct bytes they come from
            (tensors that share one buffer), plus 1 MiB (0: 100).
        options: a SerializeOptions giving these at once; keyword arguments
            that differ from their defaults override it.
        progress: None (default: silent), a callable ``progress(done,
            total)`` called with the payload bytes written so far and in all
            (``onnxio_serialize_options.progress``; last with done ==
            total, before the file is replaced; an exception it raises
            stops the save, which leaves the existing files as they were,
            and propagates), or True: a tqdm bar when tqdm is installed,
            else a line on stderr drawn only when it is a terminal. Only
            saves to a path (or with external data) report progress.

    Tensors marked external in Python (external_data_helper.
    convert_model_to_external_data) are written by
    external_data_helper.write_external_data_tensors, as onnx does.

    .onnxz archives: when ``f`` is a path ending in ".onnxz", an archive is
    written (atomically): every tensor anywhere in the model (initializers,
    attributes, sparse tensors, functions) whose raw_data has at least
    ``size_threshold`` bytes (here the payload's length, not onnx's
    ``sys.getsizeof``; 0 or 1: every non-empty payload) gets a stored entry
    whose data starts at a multiple of ``alignment`` (0: 64) in the file,
    and the model is the last entry, ``__MODEL_PROTO``. Only a path writes
    an archive: a file object whose name ends in ".onnxz" raises
    ValueError, as do the external data keywords (save_as_external_data,
    location, all_tensors_to_one_file=False, max_external_file_size,
    checksum), a format other than "protobuf", and tensors marked external
    in Python. A tensor still external (loaded with
    load_external_data=False) raises EncodeError: load its data first, or
    use replace_archive_model.

    Raises:
        OSError, onnxio.ExternalDataError (an unsafe location), onnxio.
        EncodeError (a payload skipped at load, nesting past max_depth),
        TypeError, ValueError.
    """
    if isinstance(proto, (bytes, bytearray, memoryview)):
        proto = _onnxio._load_bytes(proto, ModelProto, no_copy=True, load_external_data=False)  # noqa: F405
    proto = _onnxio._coerce(proto)  # an onnx package ModelProto too
    if not isinstance(proto, ModelProto):  # noqa: F405
        raise TypeError(f"proto must be an onnxio.ModelProto or bytes, not {type(proto).__name__}")
    fmt = _resolve_format(format, f)
    path = _file_path(f)
    kwargs = _save_kwargs(options, dict(num_threads=num_threads, alignment=alignment,
                                        raw_data_threshold=raw_data_threshold, checksum=checksum,
                                        max_file_size=max_external_file_size,
                                        convert_attribute=convert_attribute, max_depth=max_depth,
                                        fsync=fsync, max_expansion=max_expansion))
    _with_progress(progress, "saving", f, kwargs,
                   lambda: _save_model(proto, f, fmt, path, kwargs, save_as_external_data=save_as_external_data,
                                       all_tensors_to_one_file=all_tensors_to_one_file, location=location,
                                       size_threshold=size_threshold, convert_attribute=convert_attribute))


def _save_model(proto, f, fmt, path, kwargs, *, save_as_external_data, all_tensors_to_one_file, location,
                size_threshold, convert_attribute) -> None:
    """save_model once its arguments are checked."""
    if _is_archive_name(f, path):
        _check_archive_save(proto, f, fmt, save_as_external_data=save_as_external_data, location=location,
                            all_tensors_to_one_file=all_tensors_to_one_file, kwargs=kwargs)
        # The payload's length, and 0 means "every non-empty payload" (the
        # library reads 0 as its default, 1024).
        kwargs["size_threshold"] = max(int(size_threshold), 1)
        _onnxio._save_file(proto, f, **kwargs)
        return
    if save_as_external_data:
        kwargs["all_tensors_to_one_file"] = bool(all_tensors_to_one_file)
        # onnx compares sys.getsizeof(tensor.raw_data), the payload's length
        # plus the bytes object's header, so that the same arguments move the
        # same tensors; the C library compares the length (and reads 0 as
        # its default, 1024).
        kwargs["size_threshold"] = max(int(size_threshold) - _BYTES_OVERHEAD, 1)
        if all_tensors_to_one_file:
            if location is None and path is not None:
                from onnxio import external_data_helper

                location = external_data_helper._fresh_name() + ".data"
            kwargs["location"] = location
        if path is None or (kwargs["location"] is None and all_tensors_to_one_file):
            raise ValueError("save_as_external_data needs a path, or a file object with a name")
    wants_external = kwargs.get("location") is not None or kwargs.get("all_tensors_to_one_file") is False
    if path is not None and _onnxio._has_pending_external(proto):
        proto = _write_pending_external(proto, path, kwargs)
    if fmt != _DEFAULT_FORMAT:
        if save_as_external_data:
            # As onnx.save_model: the tensors are marked external (on a copy:
            # the model passed in is not changed), their payloads written
            # to the data files, and the model written in the text format.
            from onnxio import external_data_helper

            copy = type(proto)()
            copy.CopyFrom(proto)
            external_data_helper.convert_model_to_external_data(copy, all_tensors_to_one_file, location,
                                                                size_threshold, convert_attribute)
            proto = _write_pending_external(copy, path, kwargs)
        _write_bytes(_format_text(fmt, proto), f)
        return
    if _is_path(f):
        _onnxio._save_file(proto, f, **kwargs)
    elif not wants_external:
        _write_bytes(_serialize(proto, kwargs), f)
    else:
        # The library writes files by path: save beside f's file under a
        # temporary name (data files go where they belong), then copy the
        # model bytes into f.
        tmp = f"{path}.onnxio-{os.getpid()}-{id(proto)}.tmp"
        try:
            _onnxio._save_file(proto, tmp, **kwargs)
            with open(tmp, "rb") as readable:
                _write_bytes(readable.read(), f)
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


def save_tensor(proto, f, format: str | None = None, *, num_threads: int = 0,  # noqa: A002
                max_depth: int = 0) -> None:
    """Saves a TensorProto (or any message) to a path (atomically) or a
    file object, as ``onnx.save_tensor``. max_depth: as save_model."""
    proto = _onnxio._coerce(proto)  # an onnx package message too
    fmt = _resolve_format(format, f)
    if fmt != _DEFAULT_FORMAT:
        _write_bytes(_format_text(fmt, proto), f)
    elif _is_path(f):
        _onnxio._save_file(proto, f, num_threads=num_threads, max_depth=max_depth)
    else:
        _write_bytes(_serialize(proto, {"num_threads": num_threads, "max_depth": max_depth}), f)


# onnx's aliases.
load = load_model
load_from_string = load_model_from_string
save = save_model


# ---- consolidation and conversion --------------------------------------------------


def consolidate_tensors_to_buffer(model, options: TensorBufferOptions | None = None):
    """Moves every loaded raw_data payload of at least
    ``options.raw_data_threshold`` bytes (default 1024) under ``model`` (any
    message) into one new buffer, each at an offset that is a multiple of
    ``options.alignment`` (default 64), and returns a writable memoryview of
    that buffer, or None when no payload qualified. The view keeps the
    buffer alive; the tensors share it (writing into the view changes
    them). Smaller, skipped and external payloads stay as they were."""
    _check_options(options, TensorBufferOptions)
    o = options or TensorBufferOptions()
    return _onnxio._consolidate(model, raw_data_threshold=o.raw_data_threshold, alignment=o.alignment)


def _onnx_class(full_name: str):
    """The onnx package's class of a proto name ("onnx.TensorProto.Segment"):
    protobuf's class for the descriptor onnx's generated modules registered,
    found in protobuf's pool rather than by attribute, so that it is onnx's
    class even where `onnx` names onnxio (``import onnxio as onnx`` put
    into sys.modules)."""
    import onnx  # noqa: F401  (registers onnx's descriptors)
    from google.protobuf import descriptor_pool, message_factory

    return message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(full_name))


def from_onnx(proto) -> Message:  # noqa: F405
    """The onnxio message equal to an ``onnx`` package message (of any
    ONNX class), parsed from the bytes its SerializeToString() gives (the
    extension's conversion, as constructors and append use it; an onnxio
    message gives a copy).

    The parse copies the payloads: a no_copy parse (payloads borrowing the
    bytes object) takes as much memory once the bytes object is gone, saves
    0.05 s on GPT-2 but costs 0.04 s more on the 200,000-node model."""
    if isinstance(proto, _onnxio.Message):
        return _onnxio._load_bytes(_onnxio._serialize(proto), type(proto))
    converted = _onnxio._coerce(proto)
    if converted is proto:
        raise TypeError(f"expected a message of the onnx package, not {type(proto).__name__}")
    return converted


def to_onnx(proto) -> typing.Any:
    """The ``onnx`` package message equal to an onnxio message (imports onnx)."""
    full_name = _class_name(type(proto))
    if "." not in full_name:
        raise TypeError(f"expected an onnxio message, not {type(proto).__name__}")
    return _onnx_class(full_name).FromString(_onnxio._serialize(proto))


# ---- repr ----------------------------------------------------------------------
# onnx 1.23 gives ModelProto, GraphProto and FunctionProto a short repr (the
# others keep protobuf's text format): the same, character for character.


def _opsets_repr(protos) -> str:
    return repr({p.domain: p.version for p in protos})


def _model_proto_repr(self) -> str:
    parts = [f"ir_version={self.ir_version}"]
    if self.opset_import:
        parts.append(f"opset_import={_opsets_repr(self.opset_import)}")
    parts += [f"{name}='{getattr(self, name)}'" for name in ("domain", "producer_name", "producer_version")
              if getattr(self, name)]
    parts.append(f"graph={self.graph!r}")  # a message is always true, as in onnx
    if self.functions:
        parts.append(f"functions=<{len(self.functions)} functions>")
    return f"ModelProto({', '.join(parts)})"


def _counts(self, fields) -> list:
    return [f"{name}=<{len(getattr(self, name))} {label}>" for name, label in fields if getattr(self, name)]


def _graph_proto_repr(self) -> str:
    parts = [f"'{self.name}'"] + _counts(self, (("input", "inputs"), ("output", "outputs"),
                                                ("initializer", "initializers"), ("node", "nodes"),
                                                ("value_info", "value_info")))
    return f"GraphProto({', '.join(parts)})"


def _function_proto_repr(self) -> str:
    parts = [f"'{self.name}'"] + [f"{name}='{getattr(self, name)}'" for name in ("domain", "overload")
                                  if getattr(self, name)]
    if self.opset_import:
        parts.append(f"opset_import={_opsets_repr(self.opset_import)}")
    parts += _counts(self, (("input", "inputs"), ("output", "outputs")))
    if self.attribute:
        parts.append(f"attribute={self.attribute}")
    parts += _counts(self, (("node", "nodes"),))
    return f"FunctionProto({', '.join(parts)})"


ModelProto.__repr__ = _model_proto_repr  # noqa: F405
GraphProto.__repr__ = _graph_proto_repr  # noqa: F405
FunctionProto.__repr__ = _function_proto_repr  # noqa: F405


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
    (onnx_ir for ``ir``, onnx for the toolbox) is no attribute: hasattr()
    gives False and the AttributeError says what to install."""
    if name in _SUBMODULES or name in _ONNX_SUBMODULES:
        full = f"onnxio.{name}" if name in _SUBMODULES else f"onnx.{name}"
        try:
            module = importlib.import_module(full)
        except ImportError as e:
            raise AttributeError(f"module 'onnxio' has no attribute {name!r}: {e}") from e
        globals()[name] = module
        return module
    if name in _EXTERNAL_DATA_FUNCTIONS:
        return getattr(importlib.import_module("onnxio.external_data_helper"), name)
    raise AttributeError(f"module 'onnxio' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_ONNX_SUBMODULES) | set(_EXTERNAL_DATA_FUNCTIONS))


# Streaming saves.
from onnxio._streaming import save_streaming  # noqa: E402,F401
