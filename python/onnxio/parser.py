"""onnx.parser returning onnxio messages: ONNX's textual syntax read by the
C library (``onnxio_text_parse`` with ``ONNXIO_TEXT_ONNX``), which builds
the message onnx's C++ parser builds, byte for byte.

The API is onnx's: ``parse_model``, ``parse_graph``, ``parse_function`` and
``parse_node`` take a str and return a message; text they do not accept
raises ``ParseError`` with onnx's message (``[ParseError at position (line:
L column: C)]``, the line, what was expected, as bytes). ``ParseError`` is
onnx's class when the onnx package is installed; without it these functions
still work. Where onnx's C++ throws instead (an integer past 64 bits, a
float past its range: ValueError, IndexError or RuntimeError from onnx),
onnxio raises ParseError naming the line and column. Nesting past 100
levels raises onnxio.DecodeError (onnx's protobuf refuses it too).
"""
from __future__ import annotations

import re
import typing

from onnxio import _bridge, _onnxio

try:
    _onnx_parser = _bridge.require("onnx.parser")
except ImportError:  # the functions work without onnx; only onnx's own names are missing
    _onnx_parser = None

if _onnx_parser is not None:
    C = _onnx_parser.C
    ParseError = _onnx_parser.ParseError
elif not typing.TYPE_CHECKING:  # a type checker sees onnx's class only (Any: it is loaded at import)

    class ParseError(Exception):  # noqa: N818 (onnx's name)
        """Text that onnx.parser does not accept (onnx.parser.ParseError
        when the onnx package is installed)."""


_POSITION = re.compile(rb"ONNX textual syntax, line (\d+) column (\d+): (.*)\Z", re.S)
_SPACE = b" \t\n\v\f\r"


def _error_context(text: bytes, pos: int) -> bytes:
    """onnx's ParserBase::GetErrorContext: the line of the last non-space
    character at or before byte `pos`."""
    if not text:
        return b""
    p = pos if pos < len(text) else len(text) - 1
    while p > 0 and text[p] in _SPACE:
        p -= 1
    while p > 0 and text[p] != ord("\n"):
        p -= 1
    start = p + 1 if p > 0 else 0
    end = text.find(b"\n", start)
    return text[start:] if end < 0 else text[start:end]


def _parse_error(err: Exception, text: bytes) -> Exception:
    """The library's syntax error `err` as onnx's ParseError, with the
    message onnx's parser gives."""
    m = _POSITION.search(str(err).encode("utf-8", "surrogateescape"))
    if not m:
        return ParseError(str(err).encode())
    line, column, what = int(m.group(1)), int(m.group(2)), m.group(3)
    text = text.split(b"\0", 1)[0]  # onnx's parser reads a C string
    start = 0
    for _ in range(line - 1):
        start = text.find(b"\n", start) + 1
        if start == 0:  # not a position of this text: no context
            start = len(text)
            break
    context = _error_context(text, start + column - 1)
    return ParseError(b"[ParseError at position (line: %d column: %d)]\nError context: %s\n%s"
                      % (line, column, context, what))


def _parse(text: str, name: str):
    if not isinstance(text, str):
        raise TypeError(f"parse expects a str, not {type(text).__name__}")
    data = text.encode("utf-8")
    try:
        return _onnxio._text_parse(data, _onnxio._messages[name], "onnxtxt")
    except _onnxio.DecodeError as e:
        what = str(e)
        if type(e) is _onnxio.DecodeError and "ONNX textual syntax, line " in what and \
                ": messages nested deeper than " not in what:
            raise _parse_error(e, data) from None
        raise


def parse_model(model_text: str):
    """onnx.parser.parse_model: an onnxio ModelProto."""
    return _parse(model_text, "onnx.ModelProto")


def parse_graph(graph_text: str):
    """onnx.parser.parse_graph: an onnxio GraphProto (what follows the
    graph's closing brace is not read, as in onnx)."""
    return _parse(graph_text, "onnx.GraphProto")


def parse_function(function_text: str):
    """onnx.parser.parse_function: an onnxio FunctionProto."""
    return _parse(function_text, "onnx.FunctionProto")


def parse_node(node_text: str):
    """onnx.parser.parse_node: an onnxio NodeProto."""
    return _parse(node_text, "onnx.NodeProto")


if _onnx_parser is not None:
    _bridge.export_converted(_onnx_parser, globals())
