"""onnxio_json_write_string, the library's one JSON string writer, against
Python's json module: ensure_ascii=True for protobuf's json_format (with
surrogateescape for bytes that are not UTF-8), ensure_ascii=False for
safetensors headers (serde_json) and the CLI (invalid UTF-8 as U+FFFD)."""
import ctypes
import json

import pytest

import onnxio_ctypes

ESCAPE_DEL, ASCII, INVALID_SURROGATE, INVALID_REPLACE = 1, 2, 4, 8

STRINGS = [
    b"",
    b"plain",
    b'quote " and backslash \\',
    b"\b\f\n\r\t and \x00\x01\x1f controls",
    b"del \x7f",
    "caf\u00e9 \u20ac \u4e2d\u6587".encode(),
    "past the BMP \U0001f600 \U0010ffff".encode(),
    b"bad \xff byte, cut \xe2\x82, overlong \xc0\xaf, surrogate \xed\xa0\x80",
    b"x" * 5000 + "\u00e9".encode() + b'"' * 3,
]

WRITE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def write_string(data: bytes, flags: int) -> bytes:
    L = onnxio_ctypes.lib()
    f = L.onnxio_json_write_string
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, WRITE_FN, ctypes.c_void_p]
    out = bytearray()

    @WRITE_FN
    def collect(ctx, p, n):
        out.extend(ctypes.string_at(p, n))
        return 0

    assert f(data, len(data), flags, collect, None) == 0
    return bytes(out)


def python_ascii(data: bytes) -> bytes:
    # json.dumps escapes DEL? It does not: protobuf's writer (and onnxio) do.
    s = json.dumps(data.decode("utf-8", "surrogateescape"), ensure_ascii=True)
    return s.replace("\x7f", "\\u007f").encode()


@pytest.mark.parametrize("data", STRINGS, ids=range(len(STRINGS)))
def test_ascii_as_json_dumps(data):
    assert write_string(data, ASCII | ESCAPE_DEL | INVALID_SURROGATE) == python_ascii(data)


@pytest.mark.parametrize("data", [s for s in STRINGS if b"bad" not in s], ids=lambda s: repr(s[:12]))
def test_utf8_as_json_dumps_without_ensure_ascii(data):
    want = json.dumps(data.decode(), ensure_ascii=False).encode()
    assert write_string(data, 0) == want
    # The CLI's flavour differs only in DEL.
    assert write_string(data, ESCAPE_DEL | INVALID_REPLACE) == want.replace(b"\x7f", b"\\u007f")
    assert json.loads(write_string(data, 0)) == data.decode()


def test_invalid_utf8_replaced_or_kept():
    data = STRINGS[7]
    # Each byte Python's decoder refuses (surrogateescape marks them one by
    # one) becomes one U+FFFD.
    per_byte = "".join("\ufffd" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in data.decode("utf-8", "surrogateescape"))
    assert json.loads(write_string(data, INVALID_REPLACE)) == per_byte
    assert write_string(data, 0) == b'"' + data + b'"'  # kept as it is


def test_a_failing_write_stops_the_string():
    L = onnxio_ctypes.lib()
    f = L.onnxio_json_write_string
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, WRITE_FN, ctypes.c_void_p]
    calls = []

    @WRITE_FN
    def fail_second(ctx, p, n):
        calls.append(n)
        return 7 if len(calls) == 2 else 0

    assert f(b'a"b"c', 5, 0, fail_second, None) == 7
    assert len(calls) == 2
