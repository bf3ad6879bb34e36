"""onnx.serialization for onnxio's messages: the registry of formats that
``onnxio.load`` / ``save`` read and write, by format name and file
extension, with the same API as onnx's (``registry.get(fmt)``,
``registry.register(serializer)``, ``registry.get_format_from_file_extension``,
``ProtoSerializer``), so that a serializer a program registers is used by
``onnxio.save(..., format=...)`` and ``onnxio.load`` as onnx uses it.

The formats registered here, each reading and writing what onnx's does:

- "protobuf" (.onnx, .pb): the C library's codec;
- "textproto" (.txtpb, .textproto, .prototxt, .pbtxt) and "json" (.json,
  .onnxjson): the C library's text writers and readers
  (``onnxio_text_format`` / ``onnxio_text_parse``), byte for byte protobuf's
  ``text_format`` and ``json_format``; a malformed text raises
  ``onnxio.DecodeError``, which is also ``text_format.ParseError`` /
  ``json_format.ParseError`` when the program has imported that module (as
  a program that catches it has);
- "onnxtxt" (.onnxtxt, .onnxtext): onnx's printer and parser
  (``onnxio.printer`` / ``onnxio.parser``; needs the onnx package).

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
    file_extensions = frozenset({".onnx", ".pb"})

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


def _parse_error(fmt: str, err):
    """`err` (an onnxio.DecodeError from the text reader) as an instance
    that is also protobuf's ParseError of that format, when the program has
    imported protobuf's text_format / json_format; else `err` itself."""
    module = sys.modules.get("google.protobuf.json_format" if fmt == "json" else "google.protobuf.text_format")
    base = getattr(module, "ParseError", None)
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
        would take more than `max_expansion` (0: 100) times the text's size
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


class _TextualSerializer:
    """ONNX's textual syntax, through onnx's printer and parser."""

    supported_format = "onnxtxt"
    file_extensions = frozenset({".onnxtxt", ".onnxtext"})

    def serialize_proto(self, proto) -> bytes:
        from onnxio import printer

        return printer.to_text(proto).encode(_ENCODING)

    def deserialize_proto(self, serialized, proto):
        import onnxio
        from onnxio import parser

        warnings.warn("The onnxtxt format is experimental. Please report any errors to the ONNX GitHub repository.",
                      stacklevel=2)
        if not isinstance(serialized, (bytes, str)):
            raise TypeError(f"Parameter 'serialized' must be bytes or str, but got type: {type(serialized)}")
        text = serialized.decode(_ENCODING) if isinstance(serialized, bytes) else serialized
        for cls, parse in ((onnxio.ModelProto, parser.parse_model), (onnxio.GraphProto, parser.parse_graph),
                           (onnxio.FunctionProto, parser.parse_function), (onnxio.NodeProto, parser.parse_node)):
            if isinstance(proto, cls):
                return parse(text)
        raise ValueError(f"Unsupported proto type: {type(proto)}")


registry = _Registry()
registry.register(_ProtobufSerializer())
registry.register(_LibraryTextSerializer("textproto", {".txtpb", ".textproto", ".prototxt", ".pbtxt"}))
registry.register(_LibraryTextSerializer("json", {".json", ".onnxjson"}))
registry.register(_TextualSerializer())
