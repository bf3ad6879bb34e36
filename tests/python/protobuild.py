"""Building ONNX messages and protobuf wire bytes for the tests: the schema
as the `onnx` package's descriptors (compiled from the same .proto files as
onnxio's tables), hand-made wire encoding, value lists with the edge cases of
each scalar type, and a generic filler that sets every field of a message.
"""
import struct

from google.protobuf import descriptor as _d
from google.protobuf import message_factory
from onnx import onnx_data_pb2, onnx_ml_pb2, onnx_operators_ml_pb2

FD = _d.FieldDescriptor
MASK64 = (1 << 64) - 1
INF = float("inf")
NAN = float("nan")

# ---- the schema, from the onnx package's descriptors ----------------------------


def _walk(descs):
    for d in descs:
        yield d
        yield from _walk(d.nested_types)


MESSAGES = []
for _mod in (onnx_ml_pb2, onnx_data_pb2, onnx_operators_ml_pb2):
    MESSAGES.extend(_walk(_mod.DESCRIPTOR.message_types_by_name.values()))
BY_NAME = {d.full_name: d for d in MESSAGES}
CLASSES = {d.full_name: message_factory.GetMessageClass(d) for d in MESSAGES}
MESSAGE_IDS = [d.full_name for d in MESSAGES]

# ---- wire encoding by hand --------------------------------------------------------


def varint(n):
    n &= MASK64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(num, wt):
    return varint((num << 3) | wt)


def ld(num, payload):
    return tag(num, 2) + varint(len(payload)) + payload


WIRE_TYPE = {
    FD.TYPE_INT32: 0, FD.TYPE_INT64: 0, FD.TYPE_UINT64: 0, FD.TYPE_ENUM: 0,
    FD.TYPE_FLOAT: 5, FD.TYPE_DOUBLE: 1,
    FD.TYPE_STRING: 2, FD.TYPE_BYTES: 2, FD.TYPE_MESSAGE: 2,
}
SCALAR_TYPES = (FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT64, FD.TYPE_ENUM, FD.TYPE_FLOAT, FD.TYPE_DOUBLE)


def enc_scalar(ftype, v):
    """The payload of one scalar element (no tag)."""
    if ftype == FD.TYPE_FLOAT:
        return struct.pack("<f", v)
    if ftype == FD.TYPE_DOUBLE:
        return struct.pack("<d", v)
    return varint(v)


def scalar_field(f, v):
    """One occurrence of scalar/string/bytes field f with value v, unpacked."""
    if f.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
        return ld(f.number, v.encode() if isinstance(v, str) else v)
    return tag(f.number, WIRE_TYPE[f.type]) + enc_scalar(f.type, v)


def packed_field(f, values):
    return ld(f.number, b"".join(enc_scalar(f.type, v) for v in values))


# ---- values ---------------------------------------------------------------------

VALUES = {
    FD.TYPE_INT32: [0, 1, -1, 127, 128, 300, -(2**31), 2**31 - 1],
    FD.TYPE_INT64: [0, 1, -1, 2**32, 2**63 - 1, -(2**63)],
    FD.TYPE_UINT64: [0, 1, 2**63, 2**64 - 1],
    FD.TYPE_FLOAT: [0.0, -0.0, 1.0, 0.1, -2.5, INF, -INF, NAN, 1e-45, 1.17549435e-38, 3.4028234663852886e38],
    FD.TYPE_DOUBLE: [0.0, -0.0, 0.1, 1 / 3, -1e300, INF, -INF, NAN, 5e-324, 1.7976931348623157e308],
    FD.TYPE_STRING: ["", "a", "héllo wörld", "中文 🙂 \u200b", "\x00\x01\t\n\"'\\\x7f", "x" * 200],
    FD.TYPE_BYTES: [b"", b"\x00", b"\xff\xfe\x80\"\\", bytes(range(256)), b"\xab" * 5000],
}


def values_for(f):
    if f.type == FD.TYPE_ENUM:
        return [v.number for v in f.enum_type.values]
    return VALUES[f.type]


def pick(f, variant):
    vals = values_for(f)
    # Prefer values that are not the default for filled messages.
    return vals[(variant * 3 + 2) % len(vals)]


def several(f, variant=0):
    vals = values_for(f)
    return [vals[(variant + i) % len(vals)] for i in range(min(4, len(vals)))] + [vals[(variant + 1) % len(vals)]]


def oneof_choice_fields(desc, choice):
    """The fields set in a filled message: every field outside oneofs, and of
    each oneof the member number `choice` (modulo the member count)."""
    out = []
    for f in desc.fields:
        o = f.containing_oneof
        if o is None:
            out.append(f)
        elif o.fields[choice % len(o.fields)] is f:
            out.append(f)
    return out


def fill(msg, depth, variant=0, choice=0):
    """Sets every field of msg (one member per oneof): scalars to a
    non-default value, repeated fields to several elements, sub-messages
    filled down to `depth` levels, then present but empty."""
    desc = msg.DESCRIPTOR
    for f in oneof_choice_fields(desc, choice):
        if f.type == FD.TYPE_MESSAGE:
            if f.is_repeated:
                rep = getattr(msg, f.name)
                if depth > 0:
                    fill(rep.add(), depth - 1, variant + 1, choice)
                rep.add()  # an empty element
                if depth > 0:
                    fill(rep.add(), depth - 1, variant + 2, choice + 1)
            else:
                sub = getattr(msg, f.name)
                if depth > 0:
                    fill(sub, depth - 1, variant + 1, choice)
                else:
                    sub.SetInParent()
        elif f.is_repeated:
            getattr(msg, f.name).extend(several(f, variant))
        else:
            setattr(msg, f.name, pick(f, variant))
    return msg


def filled(name, depth=2, variant=0, choice=0):
    return fill(CLASSES[name](), depth, variant, choice)


def filled_variants(name):
    """(label, message) for every field of message `name` set, sub-messages
    filled two levels down: both value variants, once per member of the
    message's largest oneof."""
    choices = max([len(o.fields) for o in BY_NAME[name].oneofs] + [1])
    for choice in range(choices):
        for variant in (0, 1):
            yield f"filled, oneof choice {choice}, variant {variant}", filled(name, 2, variant, choice)


def unused_numbers(desc, count=5):
    used = {f.number for f in desc.fields}
    cands = [15, 16, 17, 30, 99, 127, 128, 1000, 2047, 2048, 16383, 16384, 2**21, 536870911]
    out = [n for n in cands if n not in used]
    assert len(out) >= count
    # spread over 1-, 2-, 3- and 5-byte tags
    return [out[0], out[3], out[6], out[-3], out[-1]][:count]


def unknown_pieces(desc):
    """Unknown fields of every wire type, with numbers desc does not use."""
    n1, n2, n3, n4, n5 = unused_numbers(desc)
    group = (tag(n4, 3) + tag(1, 0) + varint(7) + ld(2, b"hi")
             + tag(3, 3) + tag(1, 5) + b"\x01\x02\x03\x04" + tag(3, 4)  # nested group
             + tag(n4, 4))
    return [
        ("varint", tag(n1, 0) + varint(150)),
        ("varint-10-byte", tag(n1, 0) + varint(-1)),
        ("fixed64", tag(n2, 1) + struct.pack("<Q", 0x0123456789ABCDEF)),
        ("length-delimited", ld(n3, b"hello\x00\xff")),
        ("length-delimited-empty", ld(n3, b"")),
        ("group", group),
        ("group-empty", tag(n4, 3) + tag(n4, 4)),
        ("fixed32", tag(n5, 5) + struct.pack("<I", 0xDEADBEEF)),
        ("same-number-other-wire-type", tag(n1, 5) + b"\x00\x00\x80\x7f"),
    ]


def overlong(enc):
    """A varint encoding one byte longer than needed (same value)."""
    return enc[:-1] + bytes([enc[-1] | 0x80, 0x00])


def chunks(msg):
    """The encoding of each set field of msg on its own, in field order
    (their concatenation is msg.SerializeToString())."""
    out = []
    for f, _ in msg.ListFields():
        m = type(msg)()
        if f.is_repeated:
            getattr(m, f.name).extend(getattr(msg, f.name))
        elif f.type == FD.TYPE_MESSAGE:
            getattr(m, f.name).CopyFrom(getattr(msg, f.name))
        else:
            setattr(m, f.name, getattr(msg, f.name))
        out.append((f, m.SerializeToString()))
    return out
