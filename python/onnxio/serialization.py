"""onnx.serialization for onnxio's messages: the registry of formats that
``onnxio.load`` / ``save`` read and write, by format name and file
extension, with the same API as onnx's (``registry.get(fmt)``,
``registry.register(serializer)``, ``registry.get_format_from_file_extension``,
``ProtoSerializer``), so that a serializer a program registers is used by
``onnxio.save(..., format=...)`` and ``onnxio.load`` as onnx uses it.

The formats registered here, each reading and writing what onnx's does,
with the file extensions of the C library's extension table
(``onnxio_file_extension_at``, here ``_onnxio._extensions``), the one
home of which extension names which format:

- "protobuf" (.onnx, .pb): the C library's codec;
- "textproto" (.txtpb, .textproto, .prototxt, .pbtxt) and "json" (.json,
  .onnxjson): the C library's text writers and readers
  (``onnxio_text_format`` / ``onnxio_text_parse``), byte for byte protobuf's
  ``text_format`` and ``json_format``; a malformed text raises
  ``onnxio.DecodeError``, which is also ``text_format.ParseError`` /
  ``json_format.ParseError`` when the program has imported that module (as
  a program that catches it has);
- "onnxtxt" (.onnxtxt, .onnxtext): ONNX's textual syntax, read by the C
  library (``onnxio_text_parse``, the message ``onnx.parser`` builds, byte
  for byte; a malformed text raises ``onnxio.DecodeError``, which is also
  ``onnx.parser.ParseError`` when the program has imported ``onnx.parser``
  or ``onnxio.parser``) and written by onnx's printer (``onnxio.printer``;
  needs the onnx package).

Nothing here imports onnx or protobuf.
"""
from __future__ import annotations

import re
import sys
import warnings
from typing import Any, Protocol

from onnxio import _onnxio

__all__ = ["ProtoSerializer", "registry"]

_ENCODING = "utf-8"


def _extensions_of(fmt: str) -> frozenset:
    """The file extensions of format `fmt` in the C library's table."""
    return frozenset(ext for ext, name in _onnxio._extensions if name == fmt)


class ProtoSerializer(Protocol):
    """A serializer-deserializer to and from in-memory messages (onnx's
    protocol: a format name, its file extensions, and the two methods)."""

    supported_format: str
    file_extensions: Any  # a collection of extensions, with their dot: ".onnx"

    def serialize_proto(self, proto) -> Any:
        """The serialized form of `proto`."""

    def deserialize_proto(self, serialized: Any, proto):
        """Reads `serialized` into `proto` and returns it (a new message
        for onnxtxt, as in onnx)."""


class _Registry:
    def __init__(self) -> None:
        self._serializers: dict[str, ProtoSerializer] = {}
        self._extension_to_format: dict[str, str] = {}

    def register(self, serializer: ProtoSerializer) -> None:
        self._serializers[serializer.supported_format] = serializer
        self._extension_to_format.update(dict.fromkeys(serializer.file_extensions, serializer.supported_format))

    def get(self, fmt: str) -> ProtoSerializer:
        """The serializer of format `fmt`; ValueError when none is registered."""
        try:
            return self._serializers[fmt]
        except KeyError:
            raise ValueError(
                f"Unsupported format: '{fmt}'. Supported formats are: {self._serializers.keys()}"
            ) from None

    def get_format_from_file_extension(self, file_extension: str) -> str | None:
        """The format of a file extension (".onnx"), or None."""
        return self._extension_to_format.get(file_extension)


class _ProtobufSerializer:
    supported_format = "protobuf"
    file_extensions = _extensions_of("protobuf")

    def serialize_proto(self, proto) -> bytes:
        if hasattr(proto, "SerializeToString") and callable(proto.SerializeToString):
            return proto.SerializeToString()
        raise TypeError(f"No SerializeToString method is detected.\ntype is {type(proto)}")

    def deserialize_proto(self, serialized: bytes, proto):
        if not isinstance(serialized, bytes):
            raise TypeError(f"Parameter 'serialized' must be bytes, but got type: {type(serialized)}")
        proto.ParseFromString(serialized)
        return proto


_POSITION = re.compile(r"line (\d+) column (\d+): ")
_ERROR_CLASSES: dict = {}


def _error_base(fmt: str):
    """The ParseError class a program that reads format `fmt` catches, when
    it has imported its module: protobuf's text_format / json_format, or
    for onnxtxt onnx.parser (whose class onnxio.parser exports)."""
    if fmt == "onnxtxt":
        for name in ("onnxio.parser", "onnx.parser"):
            base = getattr(sys.modules.get(name), "ParseError", None)
            if base is not None:
                return base
        return None
    module = sys.modules.get("google.protobuf.json_format" if fmt == "json" else "google.protobuf.text_format")
    return getattr(module, "ParseError", None)


def _parse_error(fmt: str, err):
    """`err` (an onnxio.DecodeError from the text reader) as an instance
    that is also the ParseError of that format (_error_base), when the
    program has imported its module; else `err` itself."""
    base = _error_base(fmt)
    if base is None or isinstance(err, base):
        return err
    cls = _ERROR_CLASSES.get((type(err), base))
    if cls is None:
        cls = type(type(err).__name__, (type(err), base), {"__module__": type(err).__module__})
        _ERROR_CLASSES[(type(err), base)] = cls
    new = cls(*err.args)
    m = _POSITION.search(str(err))
    # text_format.ParseError's GetLine() / GetColumn()
    new._line, new._column = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    return new


class _LibraryTextSerializer:
    """protobuf's text format or JSON, by the C library."""

    def __init__(self, fmt: str, extensions) -> None:
        self.supported_format = fmt
        self.file_extensions = frozenset(extensions)

    def serialize_proto(self, proto) -> bytes:
        return _onnxio._text_format(_onnxio._coerce(proto), self.supported_format)

    def parse(self, serialized, cls, max_depth: int = 0, max_expansion: int = 0):
        """A new message of class `cls` read from `serialized`; one that
        would take more than `max_expansion` (0: the default, see ParseOptions) times the text's size
        plus 1 MiB is refused (DecodeError)."""
        if not isinstance(serialized, (bytes, bytearray, memoryview, str)):
            raise TypeError(f"Parameter 'serialized' must be bytes or str, but got type: {type(serialized)}")
        try:
            return _onnxio._text_parse(serialized, cls, self.supported_format, max_depth=max_depth,
                                       max_expansion=max_expansion)
        except _onnxio.DecodeError as e:
            raise _parse_error(self.supported_format, e) from None

    def deserialize_proto(self, serialized, proto):
        # protobuf's Parse merges into the message it is given
        proto.MergeFrom(self.parse(serialized, type(proto)))
        return proto


class _TextualSerializer(_LibraryTextSerializer):
    """ONNX's textual syntax: read by the C library as onnx.parser reads
    it, written by onnx's printer."""

    _CLASSES = ("onnx.ModelProto", "onnx.GraphProto", "onnx.FunctionProto", "onnx.NodeProto")

    def __init__(self) -> None:
        super().__init__("onnxtxt", _extensions_of("onnxtxt"))

    def serialize_proto(self, proto) -> bytes:
        from onnxio import printer

        return printer.to_text(proto).encode(_ENCODING)

    def parse(self, serialized, cls, max_depth: int = 0, max_expansion: int = 0):
        """A new message of class `cls` (ModelProto, GraphProto,
        FunctionProto or NodeProto, as onnx.parser reads them) read from
        `serialized` (bytes or str), within max_depth and max_expansion."""
        warnings.warn("The onnxtxt format is experimental. Please report any errors to the ONNX GitHub repository.",
                      stacklevel=3)
        if not isinstance(serialized, (bytes, str)):
            raise TypeError(f"Parameter 'serialized' must be bytes or str, but got type: {type(serialized)}")
        name = getattr(getattr(cls, "DESCRIPTOR", None), "full_name", None)
        if name not in self._CLASSES:
            raise ValueError(f"Unsupported proto type: {cls}")
        # onnxio's class of that name (an onnx package class gives onnxio's message)
        return super().parse(serialized, _onnxio._messages[name], max_depth, max_expansion)

    def deserialize_proto(self, serialized, proto):
        # as onnx: a new message is returned, `proto` only names the type
        return self.parse(serialized, type(proto))


registry = _Registry()
registry.register(_ProtobufSerializer())
registry.register(_LibraryTextSerializer("textproto", _extensions_of("textproto")))
registry.register(_LibraryTextSerializer("json", _extensions_of("json")))
registry.register(_TextualSerializer())
