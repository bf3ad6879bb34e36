"""The unknown fields of an onnxio message, as protobuf's
``google.protobuf.unknown_fields`` gives them for onnx's messages.

onnxio keeps every field its schema does not know (and enum numbers with no
name) as it read them, and writes them back after the known fields, as
libprotobuf does. ``UnknownFieldSet(message)`` (or ``message.UnknownFields()``,
the older protobuf spelling, which upb no longer has) lists them in order:

    for f in UnknownFieldSet(model):
        f.field_number, f.wire_type, f.data

``data`` is an int for wire types 0 (varint), 1 (fixed64) and 5 (fixed32),
bytes for 2 (length-delimited), and an ``UnknownFieldSet`` of the group's
fields for 3 (group). The set is a snapshot: it does not follow later changes
of the message. The fields are read by the C library
(``onnxio_unknown_field_next``).
"""
from __future__ import annotations

from onnxio import _onnxio

__all__ = ["UnknownField", "UnknownFieldSet"]


class UnknownField:
    """One unknown field: ``field_number``, ``wire_type`` and ``data``."""

    __slots__ = ("field_number", "wire_type", "data")

    def __init__(self, field_number: int, wire_type: int, data):
        self.field_number = field_number
        self.wire_type = wire_type
        self.data = data

    def __repr__(self) -> str:
        return f"UnknownField(field_number={self.field_number}, wire_type={self.wire_type}, data={self.data!r})"


class UnknownFieldSet:
    """The unknown fields of a message (or of a group's wire bytes), in the
    order they were read; ``len()``, indexing and iteration."""

    __slots__ = ("_fields",)

    def __init__(self, message):
        self._fields = [UnknownField(number, wire_type, UnknownFieldSet(data) if wire_type == 3 else data)
                        for number, wire_type, data in _onnxio._unknown_fields(message)]

    def __len__(self) -> int:
        return len(self._fields)

    def __getitem__(self, index):
        return self._fields[index]

    def __iter__(self):
        return iter(self._fields)

    def __repr__(self) -> str:
        return f"UnknownFieldSet({self._fields!r})"
