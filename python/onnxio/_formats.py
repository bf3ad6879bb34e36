"""Formats and files: which format a call asks for, paths, file objects and bytes, the text formats."""

from __future__ import annotations

import os
import sys

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes and exceptions)

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
