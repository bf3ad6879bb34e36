"""A small ctypes binding to libonnxio, used only by the tests in this folder.

It parses bytes as a message (by name) and serializes them back, prints the
text format, and reads the descriptor tables of the schema (proto.h) as plain
Python data. The library is $ONNXIO_LIB, or <repo>/build/libonnxio.so.
"""
import ctypes
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
LIB_PATH = Path(os.environ.get("ONNXIO_LIB", str(REPO / "build" / "libonnxio.so")))
CLI_PATH = Path(os.environ.get("ONNXIO_CLI", str(REPO / "build" / "onnxio")))

# onnxio_kind and onnxio_label (proto.h), in declaration order.
KINDS = ["INT32", "INT64", "UINT64", "FLOAT", "DOUBLE", "STRING", "BYTES", "RAW", "ENUM", "MESSAGE"]
LABELS = ["OPTIONAL", "ONEOF", "REPEATED", "PACKED"]


class OnnxioError(Exception):
    """A failed onnxio call: the status name and onnxio_last_error()."""

    def __init__(self, func, status, message):
        self.func = func
        self.status = status
        self.message = message
        super().__init__(f"{func} failed: {status}: {message}")


# ---- struct layouts of proto.h ------------------------------------------------

class EnumValue(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("number", ctypes.c_int32)]


class EnumDesc(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("full_name", ctypes.c_char_p),
        ("values", ctypes.POINTER(EnumValue)),
        ("value_count", ctypes.c_size_t),
    ]


class MessageDesc(ctypes.Structure):
    pass


class FieldDesc(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("number", ctypes.c_uint32),
        ("kind", ctypes.c_uint8),
        ("label", ctypes.c_uint8),
        ("oneof", ctypes.c_uint16),
        ("oneof_name", ctypes.c_char_p),
        ("index", ctypes.c_uint32),
        ("offset", ctypes.c_uint32),
        ("message", ctypes.POINTER(MessageDesc)),
        ("enum_type", ctypes.POINTER(EnumDesc)),
    ]


MessageDesc._fields_ = [
    ("name", ctypes.c_char_p),
    ("full_name", ctypes.c_char_p),
    ("size", ctypes.c_size_t),
    ("fields", ctypes.POINTER(FieldDesc)),
    ("field_count", ctypes.c_size_t),
]


class _Sized(ctypes.Structure):
    """An onnxio option struct: struct_size first, set to the struct's size."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.struct_size = ctypes.sizeof(self)


class ParseOptions(_Sized):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("raw_data_threshold", ctypes.c_uint64),
        ("alignment", ctypes.c_uint64),
        ("num_threads", ctypes.c_int),
        ("no_copy", ctypes.c_bool),
        ("load_external_data", ctypes.c_int),
        ("base_dir", ctypes.c_char_p),
        ("skip_raw_data", ctypes.c_bool),
        ("max_depth", ctypes.c_int),
        ("payload_fn", ctypes.c_void_p),
        ("payload_ctx", ctypes.c_void_p),
        ("verify_checksum", ctypes.c_bool),
        ("verify_crc", ctypes.c_int),
        ("max_expansion", ctypes.c_uint64),
    ]


class TextOptions(_Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("max_bytes_shown", ctypes.c_uint64)]


# ---- loading ------------------------------------------------------------------

_lib = None


def lib():
    """The loaded library (loaded once). Raises FileNotFoundError with a hint
    when it has not been built."""
    global _lib
    if _lib is not None:
        return _lib
    if not LIB_PATH.exists():
        raise FileNotFoundError(
            f"{LIB_PATH} does not exist: build it first "
            f"(cmake -S . -B build && cmake --build build) or set ONNXIO_LIB")
    L = ctypes.CDLL(str(LIB_PATH))
    vp = ctypes.c_void_p
    sig = {
        "onnxio_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "onnxio_last_error": (ctypes.c_char_p, []),
        "onnxio_arena_new": (vp, []),
        "onnxio_arena_unref": (None, [vp]),
        "onnxio_message_desc_by_name": (ctypes.POINTER(MessageDesc), [ctypes.c_char_p]),
        "onnxio_enum_value_name": (ctypes.c_char_p, [ctypes.POINTER(EnumDesc), ctypes.c_int32]),
        "onnxio_parse": (ctypes.c_int, [ctypes.POINTER(MessageDesc), ctypes.c_char_p, ctypes.c_size_t,
                                        vp, ctypes.POINTER(ParseOptions), vp, ctypes.POINTER(vp)]),
        "onnxio_serialize": (ctypes.c_int, [vp, ctypes.POINTER(vp)]),
        "onnxio_serialized_size": (ctypes.c_uint64, [vp]),
        "onnxio_buffer_data": (ctypes.POINTER(ctypes.c_uint8), [vp]),
        "onnxio_buffer_size": (ctypes.c_size_t, [vp]),
        "onnxio_buffer_unref": (None, [vp]),
        "onnxio_text_format": (ctypes.c_int, [vp, ctypes.POINTER(TextOptions), ctypes.POINTER(vp)]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(L, name)
        fn.restype = res
        fn.argtypes = args
    _lib = L
    return L


def _check(func, status):
    if status != 0:
        L = lib()
        name = L.onnxio_status_name(status)
        name = name.decode() if name else str(status)
        err = L.onnxio_last_error()
        raise OnnxioError(func, name, err.decode("utf-8", "replace") if err else "")


def desc(name):
    """The onnxio_message_desc pointer for a message name ("TensorProto",
    "onnx.TensorProto.Segment", ...); KeyError when onnxio has none."""
    d = lib().onnxio_message_desc_by_name(name.encode())
    if not d:
        raise KeyError(f"onnxio_message_desc_by_name({name!r}) returned NULL")
    return d


def _buffer_bytes(buf):
    L = lib()
    n = L.onnxio_buffer_size(buf)
    if n == 0:
        return b""
    return ctypes.string_at(L.onnxio_buffer_data(buf), n)


class _Parsed:
    """Context manager: a message parsed from bytes in a fresh arena."""

    def __init__(self, name, data, no_copy=False):
        self.name, self.data, self.no_copy = name, bytes(data), no_copy

    def __enter__(self):
        L = lib()
        d = desc(self.name)
        self.arena = L.onnxio_arena_new()
        if not self.arena:
            raise MemoryError("onnxio_arena_new returned NULL")
        out = ctypes.c_void_p()
        opts = ParseOptions()
        opts.no_copy = self.no_copy
        try:
            _check(f"onnxio_parse({self.name})",
                   L.onnxio_parse(d, self.data, len(self.data), None, ctypes.byref(opts),
                                  self.arena, ctypes.byref(out)))
        except BaseException:
            L.onnxio_arena_unref(self.arena)
            raise
        if not out.value:
            L.onnxio_arena_unref(self.arena)
            raise OnnxioError(f"onnxio_parse({self.name})", "ONNXIO_OK", "returned OK but *out is NULL")
        return out

    def __exit__(self, *exc):
        lib().onnxio_arena_unref(self.arena)
        return False


def roundtrip(name, data, no_copy=False):
    """Parses `data` as message `name` with onnxio and serializes it back."""
    L = lib()
    with _Parsed(name, data, no_copy) as msg:
        size = L.onnxio_serialized_size(msg)
        buf = ctypes.c_void_p()
        _check(f"onnxio_serialize({name})", L.onnxio_serialize(msg, ctypes.byref(buf)))
        try:
            out = _buffer_bytes(buf)
        finally:
            L.onnxio_buffer_unref(buf)
    if len(out) != size:
        raise OnnxioError(f"onnxio_serialize({name})", "SIZE",
                          f"onnxio_serialized_size said {size} but {len(out)} bytes were written")
    return out


def text_bytes(name, data, max_bytes_shown=0):
    """onnxio_text_format of `data` parsed as `name`, as raw bytes."""
    L = lib()
    with _Parsed(name, data) as msg:
        opts = TextOptions(max_bytes_shown=max_bytes_shown)
        buf = ctypes.c_void_p()
        _check(f"onnxio_text_format({name})", L.onnxio_text_format(msg, ctypes.byref(opts), ctypes.byref(buf)))
        try:
            return _buffer_bytes(buf)
        finally:
            L.onnxio_buffer_unref(buf)


def text(name, data, max_bytes_shown=0):
    """onnxio_text_format of `data` parsed as `name`, decoded as UTF-8 (bytes
    that are not UTF-8 become surrogates, so nothing is lost)."""
    return text_bytes(name, data, max_bytes_shown).decode("utf-8", "surrogateescape")


# ---- descriptor tables --------------------------------------------------------

def _s(p):
    return p.decode() if p is not None else None


def _enum_dict(e):
    return {
        "name": _s(e.name),
        "full_name": _s(e.full_name),
        "values": [(_s(e.values[i].name), e.values[i].number) for i in range(e.value_count)],
    }


def _message_dict(m):
    fields = []
    for i in range(m.field_count):
        f = m.fields[i]
        fields.append({
            "name": _s(f.name),
            "number": f.number,
            "kind": KINDS[f.kind] if f.kind < len(KINDS) else f"?{f.kind}",
            "label": LABELS[f.label] if f.label < len(LABELS) else f"?{f.label}",
            "oneof": f.oneof,
            "oneof_name": _s(f.oneof_name),
            "index": f.index,
            "offset": f.offset,
            "message": _s(f.message.contents.full_name) if f.message else None,
            "enum": _s(f.enum_type.contents.full_name) if f.enum_type else None,
        })
    return {"name": _s(m.name), "full_name": _s(m.full_name), "size": m.size, "fields": fields}


def all_messages():
    """Every message descriptor of onnxio_all_messages, as dicts:
    {name, full_name, size, fields: [{name, number, kind, label, oneof,
    oneof_name, index, offset, message, enum}]} (message/enum: full names)."""
    L = lib()
    n = ctypes.c_size_t.in_dll(L, "onnxio_all_message_count").value
    arr = (ctypes.POINTER(MessageDesc) * n).in_dll(L, "onnxio_all_messages")
    return [_message_dict(arr[i].contents) for i in range(n)]


def all_enums():
    """Every enum descriptor of onnxio_all_enums, as dicts:
    {name, full_name, values: [(name, number), ...]} in declaration order."""
    L = lib()
    n = ctypes.c_size_t.in_dll(L, "onnxio_all_enum_count").value
    arr = (ctypes.POINTER(EnumDesc) * n).in_dll(L, "onnxio_all_enums")
    return [_enum_dict(arr[i].contents) for i in range(n)]


def enum_value_name(enum_full_name, number):
    """onnxio_enum_value_name for the enum with this full name (None: NULL)."""
    L = lib()
    n = ctypes.c_size_t.in_dll(L, "onnxio_all_enum_count").value
    arr = (ctypes.POINTER(EnumDesc) * n).in_dll(L, "onnxio_all_enums")
    for i in range(n):
        if _s(arr[i].contents.full_name) == enum_full_name:
            return _s(L.onnxio_enum_value_name(arr[i], number))
    raise KeyError(enum_full_name)


# ---- helpers for failure messages ---------------------------------------------

def first_diff(a, b):
    """Offset of the first differing byte of a and b (the shorter length when
    one is a prefix of the other); None when equal."""
    if a == b:
        return None
    n = min(len(a), len(b))
    # Compare in chunks first: files are up to a few MB.
    step = 4096
    lo = 0
    while lo < n and a[lo:lo + step] == b[lo:lo + step]:
        lo += step
    for i in range(lo, min(lo + step, n)):
        if a[i] != b[i]:
            return i
    return n


def hex_context(data, offset, radius=16):
    """`data` around `offset` as hex, with the byte at offset in brackets."""
    lo = max(0, offset - radius)
    hi = min(len(data), offset + radius)
    parts = []
    for i in range(lo, hi):
        parts.append(f"[{data[i]:02x}]" if i == offset else f"{data[i]:02x}")
    if offset >= len(data):
        parts.append("[<end>]")
    return f"@{lo}: " + " ".join(parts)


def describe_diff(expected, got, what_expected="expected", what_got="got"):
    """A few lines saying where two byte strings differ."""
    off = first_diff(expected, got)
    if off is None:
        return "equal"
    return (f"sizes {what_expected}={len(expected)} {what_got}={len(got)}, first difference at byte {off}\n"
            f"    {what_expected}: {hex_context(expected, off)}\n"
            f"    {what_got}: {hex_context(got, off)}")
