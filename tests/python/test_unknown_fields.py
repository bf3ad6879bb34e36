"""Unknown fields exposed (onnxio.unknown_fields, message.UnknownFields(),
onnxio_unknown_field_next), against protobuf's own
google.protobuf.unknown_fields.UnknownFieldSet on the same bytes given to
onnx's messages: every wire type, groups nested in groups, unknown fields
in sub-messages, enum numbers with no name."""
import struct

import onnx
import pytest
from google.protobuf import unknown_fields as pb_unknown

import onnxio
from onnxio import _onnxio
from onnxio.unknown_fields import UnknownFieldSet
from protobuild import ld, tag, varint


def as_tuples(field_set):
    """A set (protobuf's or onnxio's) as plain nested tuples."""
    out = []
    for f in field_set:
        data = as_tuples(f.data) if f.wire_type == 3 else f.data
        out.append((f.field_number, f.wire_type, data))
    return out


GROUP = tag(104, 3) + tag(1, 0) + varint(5) + tag(2, 3) + ld(3, b"in") + tag(2, 4) + tag(104, 4)
UNKNOWN = (tag(99, 0) + varint(2**64 - 1) + tag(100, 1) + struct.pack("<d", 1.5) + ld(101, b"abc")
           + tag(103, 5) + struct.pack("<I", 0xDEADBEEF) + GROUP + ld(102, b""))


@pytest.mark.parametrize("name,data", [
    ("ModelProto", UNKNOWN),
    ("ModelProto", tag(1, 0) + varint(7) + UNKNOWN + ld(7, ld(2, b"g") + UNKNOWN) + tag(99, 0) + varint(3)),
    ("TensorProto", tag(14, 0) + varint(7) + ld(8, b"t") + tag(14, 0) + varint(1)),  # data_location 7: no name
    ("AttributeProto", tag(20, 0) + varint(99) + ld(1, b"a") + UNKNOWN),
    ("ModelProto", b""),
])
def test_same_as_protobuf(name, data):
    ref = getattr(onnx, name).FromString(data)
    msg = getattr(onnxio, name).FromString(data)
    want = as_tuples(pb_unknown.UnknownFieldSet(ref))
    assert as_tuples(UnknownFieldSet(msg)) == want
    assert as_tuples(msg.UnknownFields()) == want
    if name == "ModelProto" and ref.HasField("graph"):
        assert as_tuples(msg.graph.UnknownFields()) == as_tuples(pb_unknown.UnknownFieldSet(ref.graph)) != []
    assert msg.SerializeToString() == ref.SerializeToString()  # kept and written back
    msg.DiscardUnknownFields()
    assert len(msg.UnknownFields()) == 0


def test_fields_and_repr():
    s = onnxio.ModelProto.FromString(UNKNOWN).UnknownFields()
    assert len(s) == 6
    assert [f.field_number for f in s] == [99, 100, 101, 103, 104, 102]
    assert s[0].data == 2**64 - 1 and s[2].data == b"abc" and s[3].data == 0xDEADBEEF
    assert isinstance(s[4].data, UnknownFieldSet) and s[4].data[1].data[0].data == b"in"
    assert "field_number=101" in repr(s)


@pytest.mark.parametrize("bad", [b"\x00", b"\xf8\x06", tag(5, 2) + b"\x05ab", tag(5, 3) + tag(1, 0),
                                 tag(5, 3) + tag(6, 4), tag(5, 1) + b"\x00", tag(5, 7), b"\x80"])
def test_malformed_bytes_refused(bad):
    """The bytes reader (also reached for a group's contents) refuses what
    is not wire format with a DecodeError, never reads past the end."""
    with pytest.raises(onnxio.DecodeError, match="unknown fields, at byte"):
        _onnxio._unknown_fields(bad)


def test_deep_groups_no_recursion():
    deep = tag(5, 3) * 100_000 + tag(5, 4) * 100_000
    (number, wire_type, inner), = _onnxio._unknown_fields(deep)
    assert (number, wire_type, len(inner)) == (5, 3, len(deep) - 2)
