"""protobuf's reflection API over onnxio's schema.

``Message.DESCRIPTOR`` of every message class, the ``DESCRIPTOR`` of every
enum (``TensorProto.DataType.DESCRIPTOR``) and the file descriptors of
onnx-ml.proto, onnx-data.proto and onnx-operators-ml.proto, with the
attributes and methods of protobuf's ``Descriptor``, ``FieldDescriptor``,
``OneofDescriptor``, ``EnumDescriptor``, ``EnumValueDescriptor`` and
``FileDescriptor`` and the values protobuf gives for the onnx package's
generated modules (``onnx.onnx_ml_pb2`` ...), so that code walking messages
generically (``google.protobuf.text_format``, ``json_format``, converters
reading ``DESCRIPTOR``) takes onnxio's messages.

Everything is built once, at import, from the schema tables of the C
extension (src/schema.def): ``_onnxio._schema_fields`` (each field's name,
number, protobuf type, label, packing, oneof and message or enum type) and
``_onnxio._schema_rows`` (the files, the declaration order of messages,
enums and fields). Rules of protobuf that the schema does not list are
here: json_name and camelcase_name of a field name, default values of a
proto2 field, and the options objects (``GetOptions()``: protobuf's
``descriptor_pb2`` messages when protobuf is installed).

What is not provided: a descriptor pool (``FileDescriptor.pool`` is None;
protobuf's pool holds protobuf's classes, not onnxio's), extensions and
services (ONNX declares none: the maps are empty), and upb's internal
``_GetFeatures``. Descriptors are read-only, as protobuf's.
"""
from __future__ import annotations

from typing import Any

from onnxio import _onnxio


class DescriptorAttributeError(AttributeError):
    """An attribute protobuf's descriptors have and onnxio's do not (the
    descriptor pool internals); an AttributeError, so ``hasattr`` and
    ``getattr`` with a default work."""


class _DescriptorBase:
    __slots__ = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute {name!r} of {type(self).__name__} objects is not writable")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise DescriptorAttributeError(f"onnxio's {type(self).__name__} has no attribute {name!r}")

    def __repr__(self):
        return f"<onnxio.{type(self).__name__} {getattr(self, 'full_name', self.name)}>"

    def _set(self, **attrs):
        for name, value in attrs.items():
            object.__setattr__(self, name, value)


# ---- options -----------------------------------------------------------------

_OPTIMIZE_FOR = {"SPEED": 1, "CODE_SIZE": 2, "LITE_RUNTIME": 3}


class _PlainOptions:
    """The options of a descriptor where protobuf is not installed: the
    fields protobuf's option messages have, at their values for ONNX."""

    def __init__(self, kind: str, **values):
        self._kind = kind
        self.__dict__.update(values)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return False  # every other option of ONNX's schema is an unset bool

    def HasField(self, name):  # noqa: N802 (protobuf's name)
        return name in self.__dict__ and not name.startswith("_")

    def ListFields(self):  # noqa: N802 (protobuf's name)
        return [(name, v) for name, v in self.__dict__.items() if not name.startswith("_")]

    def __eq__(self, other):
        return isinstance(other, _PlainOptions) and self.__dict__ == other.__dict__

    def __repr__(self):
        return f"{self._kind}({', '.join(f'{k}={v!r}' for k, v in self.ListFields())})"


def _options(kind: str, **values):
    """A new options message of protobuf's descriptor_pb2 (``kind``:
    "MessageOptions", "FieldOptions", ...) with ``values`` set."""
    try:
        from google.protobuf import descriptor_pb2
    except ImportError:
        return _PlainOptions(kind, **values)
    return getattr(descriptor_pb2, kind)(**values)


class _HasOptions(_DescriptorBase):
    __slots__ = ("has_options", "_options_kind", "_option_values", "_options_cache")
    has_options: bool

    def _init_options(self, kind: str, **values):
        self._set(has_options=bool(values), _options_kind=kind, _option_values=values, _options_cache=None)

    def GetOptions(self):  # noqa: N802 (protobuf's name)
        """The options of the descriptor, protobuf's descriptor_pb2 message
        of them (one object per descriptor, as protobuf)."""
        if self._options_cache is None:
            object.__setattr__(self, "_options_cache", _options(self._options_kind, **self._option_values))
        return self._options_cache


# ---- names -------------------------------------------------------------------


def _camelcase(name: str) -> str:
    """protobuf's FieldDescriptor.camelcase_name of a field name."""
    out: list[str] = []
    upper = False
    for c in name:
        if c == "_":
            upper = bool(out)
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    if out and out[0].isupper():
        out[0] = out[0].lower()
    return "".join(out)


def _json_name(name: str) -> str:
    """protoc's json_name of a field name (what protobuf's FieldDescriptor.json_name gives)."""
    out: list[str] = []
    upper = False
    for c in name:
        if c == "_":
            upper = True
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    return "".join(out)


# ---- the descriptor classes ----------------------------------------------------


class FileDescriptor(_HasOptions):
    """A .proto file of the ONNX schema, as protobuf's FileDescriptor."""

    __slots__ = ("name", "package", "message_types_by_name", "enum_types_by_name", "extensions_by_name",
                 "services_by_name", "dependencies", "public_dependencies", "pool")
    name: str
    package: str
    message_types_by_name: dict[str, Descriptor]
    enum_types_by_name: dict[str, EnumDescriptor]
    extensions_by_name: dict[str, FieldDescriptor]  # empty: ONNX declares no extension
    services_by_name: dict[str, Any]  # empty: ONNX declares no service
    dependencies: list[FileDescriptor]
    public_dependencies: list[FileDescriptor]
    pool: None  # no descriptor pool (see the module docstring)

    def CopyToProto(self, proto):  # noqa: N802 (protobuf's name)
        """Fills a descriptor_pb2.FileDescriptorProto."""
        proto.name = self.name
        proto.package = self.package
        for dep in self.dependencies:
            proto.dependency.append(dep.name)
        for m in self.message_types_by_name.values():
            m.CopyToProto(proto.message_type.add())
        for e in self.enum_types_by_name.values():
            e.CopyToProto(proto.enum_type.add())
        if self.has_options:
            proto.options.CopyFrom(self.GetOptions())

    @property
    def serialized_pb(self) -> bytes:
        """The FileDescriptorProto of the file, serialized (needs protobuf)."""
        from google.protobuf import descriptor_pb2
        proto = descriptor_pb2.FileDescriptorProto()
        self.CopyToProto(proto)
        return proto.SerializeToString()


class EnumValueDescriptor(_HasOptions):
    """A value of an enum, as protobuf's EnumValueDescriptor."""

    __slots__ = ("name", "number", "index", "type")
    name: str
    number: int
    index: int
    type: EnumDescriptor

    def __repr__(self):
        return f"<onnxio.EnumValueDescriptor {self.type.full_name}.{self.name} = {self.number}>"


class EnumDescriptor(_HasOptions):
    """An enum, as protobuf's EnumDescriptor."""

    __slots__ = ("name", "full_name", "file", "containing_type", "values", "values_by_name", "values_by_number",
                 "is_closed")
    name: str
    full_name: str
    file: FileDescriptor
    containing_type: Descriptor | None
    values: list[EnumValueDescriptor]
    values_by_name: dict[str, EnumValueDescriptor]
    values_by_number: dict[int, EnumValueDescriptor]
    is_closed: bool

    def CopyToProto(self, proto):  # noqa: N802 (protobuf's name)
        """Fills a descriptor_pb2.EnumDescriptorProto."""
        proto.name = self.name
        for v in self.values:
            proto.value.add(name=v.name, number=v.number)


class OneofDescriptor(_HasOptions):
    """A oneof, as protobuf's OneofDescriptor."""

    __slots__ = ("name", "full_name", "index", "containing_type", "fields")
    name: str
    full_name: str
    index: int
    containing_type: Descriptor
    fields: list[FieldDescriptor]


class FieldDescriptor(_HasOptions):
    """A field, as protobuf's FieldDescriptor (with its TYPE_*, CPPTYPE_*
    and LABEL_* constants)."""

    __slots__ = ("name", "full_name", "number", "index", "type", "cpp_type", "label", "is_repeated", "is_required",
                 "is_packed", "has_presence", "message_type", "enum_type", "containing_type", "containing_oneof",
                 "is_extension", "extension_scope", "default_value", "has_default_value", "camelcase_name",
                 "json_name", "file")
    name: str
    full_name: str
    number: int
    index: int
    type: int  # a TYPE_* constant
    cpp_type: int  # a CPPTYPE_* constant
    label: int  # a LABEL_* constant
    is_repeated: bool
    is_required: bool
    is_packed: bool
    has_presence: bool
    message_type: Descriptor | None
    enum_type: EnumDescriptor | None
    containing_type: Descriptor
    containing_oneof: OneofDescriptor | None
    is_extension: bool
    extension_scope: Descriptor | None
    default_value: Any
    has_default_value: bool
    camelcase_name: str
    json_name: str
    file: FileDescriptor

    TYPE_DOUBLE = 1
    TYPE_FLOAT = 2
    TYPE_INT64 = 3
    TYPE_UINT64 = 4
    TYPE_INT32 = 5
    TYPE_FIXED64 = 6
    TYPE_FIXED32 = 7
    TYPE_BOOL = 8
    TYPE_STRING = 9
    TYPE_GROUP = 10
    TYPE_MESSAGE = 11
    TYPE_BYTES = 12
    TYPE_UINT32 = 13
    TYPE_ENUM = 14
    TYPE_SFIXED32 = 15
    TYPE_SFIXED64 = 16
    TYPE_SINT32 = 17
    TYPE_SINT64 = 18
    MAX_TYPE = 18

    CPPTYPE_INT32 = 1
    CPPTYPE_INT64 = 2
    CPPTYPE_UINT32 = 3
    CPPTYPE_UINT64 = 4
    CPPTYPE_DOUBLE = 5
    CPPTYPE_FLOAT = 6
    CPPTYPE_BOOL = 7
    CPPTYPE_ENUM = 8
    CPPTYPE_STRING = 9
    CPPTYPE_MESSAGE = 10
    CPPTYPE_BYTES = 9  # upb's FieldDescriptor has it (= CPPTYPE_STRING)
    MAX_CPPTYPE = 10

    LABEL_OPTIONAL = 1
    LABEL_REQUIRED = 2
    LABEL_REPEATED = 3
    MAX_LABEL = 3

    MAX_FIELD_NUMBER = (1 << 29) - 1
    FIRST_RESERVED_FIELD_NUMBER = 19000
    LAST_RESERVED_FIELD_NUMBER = 19999

    def __repr__(self):
        return f"<onnxio.FieldDescriptor {self.full_name}>"


class Descriptor(_HasOptions):
    """A message type, as protobuf's Descriptor."""

    __slots__ = ("name", "full_name", "file", "containing_type", "fields", "fields_by_name", "fields_by_number",
                 "fields_by_camelcase_name", "nested_types", "nested_types_by_name", "enum_types",
                 "enum_types_by_name", "enum_values_by_name", "oneofs", "oneofs_by_name", "extensions",
                 "extensions_by_name", "extension_ranges", "is_extendable", "_concrete_class", "_reserved_ranges",
                 "_reserved_names")
    name: str
    full_name: str
    file: FileDescriptor
    containing_type: Descriptor | None
    fields: list[FieldDescriptor]
    fields_by_name: dict[str, FieldDescriptor]
    fields_by_number: dict[int, FieldDescriptor]
    fields_by_camelcase_name: dict[str, FieldDescriptor]
    nested_types: list[Descriptor]
    nested_types_by_name: dict[str, Descriptor]
    enum_types: list[EnumDescriptor]
    enum_types_by_name: dict[str, EnumDescriptor]
    enum_values_by_name: dict[str, EnumValueDescriptor]
    oneofs: list[OneofDescriptor]
    oneofs_by_name: dict[str, OneofDescriptor]
    extensions: list[FieldDescriptor]  # empty: ONNX declares no extension
    extensions_by_name: dict[str, FieldDescriptor]
    extension_ranges: list[tuple[int, int]]
    is_extendable: bool
    _concrete_class: type[_onnxio.Message]
    _reserved_ranges: list[tuple[int, int]]
    _reserved_names: list[str]

    def EnumValueName(self, enum, value):  # noqa: N802 (protobuf's name)
        """The name of value ``value`` of the nested enum named ``enum``."""
        return self.enum_types_by_name[enum].values_by_number[value].name

    def CopyToProto(self, proto):  # noqa: N802 (protobuf's name)
        """Fills a descriptor_pb2.DescriptorProto."""
        proto.name = self.name
        for f in self.fields:
            fp = proto.field.add(name=f.name, number=f.number, label=f.label, type=f.type)
            if f.message_type is not None:
                fp.type_name = "." + f.message_type.full_name
            elif f.enum_type is not None:
                fp.type_name = "." + f.enum_type.full_name
            if f.containing_oneof is not None:
                fp.oneof_index = f.containing_oneof.index
            if f.has_options:
                fp.options.CopyFrom(f.GetOptions())
        for n in self.nested_types:
            n.CopyToProto(proto.nested_type.add())
        for e in self.enum_types:
            e.CopyToProto(proto.enum_type.add())
        for o in self.oneofs:
            proto.oneof_decl.add(name=o.name)
        for start, end in self._reserved_ranges:
            proto.reserved_range.add(start=start, end=end)
        proto.reserved_name.extend(self._reserved_names)


# ---- building them from the schema tables -------------------------------------

_SCALAR_DEFAULTS = {
    FieldDescriptor.CPPTYPE_INT32: 0, FieldDescriptor.CPPTYPE_INT64: 0, FieldDescriptor.CPPTYPE_UINT32: 0,
    FieldDescriptor.CPPTYPE_UINT64: 0, FieldDescriptor.CPPTYPE_DOUBLE: 0.0, FieldDescriptor.CPPTYPE_FLOAT: 0.0,
    FieldDescriptor.CPPTYPE_BOOL: False,
}


def _default_value(type_: int, cpp_type: int, repeated: bool, enum: EnumDescriptor | None):
    """protobuf's FieldDescriptor.default_value of a proto2 field without
    an explicit default (ONNX declares none)."""
    if repeated:
        return []
    if cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        return None
    if enum is not None:
        return enum.values[0].number
    if type_ == FieldDescriptor.TYPE_STRING:
        return ""
    if type_ == FieldDescriptor.TYPE_BYTES:
        return b""
    return _SCALAR_DEFAULTS[cpp_type]


def _parent(full_name: str) -> str:
    return full_name.rpartition(".")[0]


def _build() -> tuple[dict[str, FileDescriptor], dict[str, Descriptor], dict[str, EnumDescriptor]]:
    """Builds every descriptor. Returns (files by name, message descriptors
    by full name, enum descriptors by full name)."""
    rows = _onnxio._schema_rows
    schema_fields = _onnxio._schema_fields

    files: dict[str, FileDescriptor] = {}
    messages: dict[str, Descriptor] = {}
    enums: dict[str, EnumDescriptor] = {}
    file_of: dict[str, FileDescriptor] = {}  # top-level full name -> file
    declared: dict[str, list[str]] = {}
    reserved_ranges: dict[str, list[tuple[int, int]]] = {}
    reserved_names: dict[str, list[str]] = {}
    message_order: list[str] = []
    enum_order: list[str] = []

    current: FileDescriptor | None = None
    last_message = ""  # the message that the rows which follow describe
    for row in rows:
        kind = row[0]
        if kind == "file":
            current = FileDescriptor()
            current._init_options("FileOptions", optimize_for=_OPTIMIZE_FOR[row[2]])
            current._set(name=row[1], package="onnx", message_types_by_name={}, enum_types_by_name={},
                         extensions_by_name={}, services_by_name={}, dependencies=[], public_dependencies=[],
                         pool=None)
            files[row[1]] = current
        elif current is None:
            raise SystemError(f"onnxio: the schema rows name no file before {row!r}")
        elif kind == "message":
            last_message = row[1]
            message_order.append(row[1])
            file_of[row[1]] = current
        elif kind == "enum":
            enum_order.append(row[1])
            file_of[row[1]] = current
        elif kind == "field_order":
            declared[last_message] = [n.strip() for n in row[1].split(",")]
        elif kind == "reserved":
            reserved_ranges.setdefault(last_message, []).append((int(row[1]), int(row[2])))
        elif kind == "reserved_name":
            reserved_names.setdefault(last_message, []).append(row[1])

    for full in message_order:
        d = Descriptor()
        d._init_options("MessageOptions")
        messages[full] = d
    for full in enum_order:
        e = EnumDescriptor()
        e._init_options("EnumOptions")
        enums[full] = e

    def file_for(full: str) -> FileDescriptor:
        while _parent(full) in messages:
            full = _parent(full)
        return file_of[full]

    # enums
    for full, e in enums.items():
        parent = messages.get(_parent(full))
        values: list[EnumValueDescriptor] = []
        e._set(name=full.rpartition(".")[2], full_name=full, file=file_for(full), containing_type=parent,
               values=values, values_by_name={}, values_by_number={}, is_closed=True)
        for i, (name, number) in enumerate(_onnxio._enums[full]):
            v = EnumValueDescriptor()
            v._init_options("EnumValueOptions")
            v._set(name=name, number=number, index=i, type=e)
            values.append(v)
            e.values_by_name[name] = v
            e.values_by_number.setdefault(number, v)  # the first name of an aliased number, as protobuf
        if parent is None:
            e.file.enum_types_by_name[e.name] = e

    # messages
    for full, d in messages.items():
        parent = messages.get(_parent(full))
        f_ = file_for(full)
        d._set(name=full.rpartition(".")[2], full_name=full, file=f_, containing_type=parent, fields=[],
               fields_by_name={}, fields_by_number={}, fields_by_camelcase_name={}, nested_types=[],
               nested_types_by_name={}, enum_types=[], enum_types_by_name={}, enum_values_by_name={}, oneofs=[],
               oneofs_by_name={}, extensions=[], extensions_by_name={}, extension_ranges=[], is_extendable=False,
               _concrete_class=_onnxio._messages[full], _reserved_ranges=reserved_ranges.get(full, []),
               _reserved_names=reserved_names.get(full, []))
        if parent is None:
            f_.message_types_by_name[d.name] = d
        else:
            parent.nested_types.append(d)
            parent.nested_types_by_name[d.name] = d
    for full, e in enums.items():
        parent = e.containing_type
        if parent is not None:
            parent.enum_types.append(e)
            parent.enum_types_by_name[e.name] = e
            for v in e.values:
                parent.enum_values_by_name[v.name] = v

    for full, d in messages.items():
        rows_by_name = {r[0]: r for r in schema_fields[full]}
        order = declared.get(full) or [r[0] for r in schema_fields[full]]
        if sorted(order) != sorted(rows_by_name):
            raise SystemError(f"onnxio: the declared field order of {full} does not name its fields")
        for index, name in enumerate(order):
            _name, number, type_, cpp_type, repeated, packed, oneof_name, message_full, enum_full = rows_by_name[name]
            enum = enums[enum_full] if enum_full else None
            oneof = None
            if oneof_name is not None:
                oneof = d.oneofs_by_name.get(oneof_name)
                if oneof is None:
                    oneof = OneofDescriptor()
                    oneof._init_options("OneofOptions")
                    oneof._set(name=oneof_name, full_name=f"{full}.{oneof_name}", index=len(d.oneofs),
                               containing_type=d, fields=[])
                    d.oneofs.append(oneof)
                    d.oneofs_by_name[oneof_name] = oneof
            f = FieldDescriptor()
            if packed:
                f._init_options("FieldOptions", packed=True)
            else:
                f._init_options("FieldOptions")
            f._set(name=name, full_name=f"{full}.{name}", number=number, index=index, type=type_, cpp_type=cpp_type,
                   label=FieldDescriptor.LABEL_REPEATED if repeated else FieldDescriptor.LABEL_OPTIONAL,
                   is_repeated=repeated, is_required=False, is_packed=packed, has_presence=not repeated,
                   message_type=messages[message_full] if message_full else None, enum_type=enum,
                   containing_type=d, containing_oneof=oneof, is_extension=False, extension_scope=None,
                   default_value=_default_value(type_, cpp_type, repeated, enum), has_default_value=False,
                   camelcase_name=_camelcase(name), json_name=_json_name(name), file=d.file)
            d.fields.append(f)
            d.fields_by_name[name] = f
            d.fields_by_number[number] = f
            d.fields_by_camelcase_name[f.camelcase_name] = f
            if oneof is not None:
                oneof.fields.append(f)
            if f.message_type is not None and f.message_type.file is not d.file:
                if f.message_type.file not in d.file.dependencies:
                    d.file.dependencies.append(f.message_type.file)
    return files, messages, enums


# ---- enums -------------------------------------------------------------------


class EnumTypeWrapper:
    """An ONNX enum, as protobuf's ``EnumTypeWrapper``: ``DESCRIPTOR`` (its
    EnumDescriptor), ``Name(number)``, ``Value(name)``, ``keys()``,
    ``values()``, ``items()`` (declaration order) and each value as an
    attribute (``TensorProto.DataType.FLOAT``)."""

    ValueType = int
    DESCRIPTOR: EnumDescriptor

    def __init__(self, enum_type: EnumDescriptor):
        self.DESCRIPTOR = enum_type
        self._enum_type = enum_type
        self._full_name = enum_type.full_name
        self._name = enum_type.name
        self._items = tuple((v.name, v.number) for v in enum_type.values)
        self._by_name = dict(self._items)
        self._by_number: dict[int, str] = {n: v.name for n, v in enum_type.values_by_number.items()}

    def Name(self, number: int) -> str:  # noqa: N802 (protobuf's name)
        """The name of an enum value. ``TypeError`` for a non-int,
        ``ValueError`` for a number that is no value of the enum."""
        try:
            return self._by_number[number]
        except KeyError:
            pass
        if not isinstance(number, int):
            raise TypeError(f"Enum value for {self._name} must be an int, but got {type(number)} {number!r}.")
        raise ValueError(f"Enum {self._name} has no name defined for value {number!r}")

    def Value(self, name: str) -> int:  # noqa: N802 (protobuf's name)
        """The number of an enum value name; ``ValueError`` when unknown."""
        try:
            return self._by_name[name]
        except KeyError:
            pass
        raise ValueError(f"Enum {self._name} has no value defined for name {name!r}")

    def keys(self) -> list[str]:
        """The value names, in declaration order."""
        return [n for n, _ in self._items]

    def values(self) -> list[int]:
        """The value numbers, in declaration order."""
        return [v for _, v in self._items]

    def items(self) -> list[tuple[str, int]]:
        """(name, number) pairs, in declaration order."""
        return list(self._items)

    def __getattr__(self, name: str) -> int:
        by_name = self.__dict__.get("_by_name")
        if by_name is not None and name in by_name:
            return by_name[name]
        raise AttributeError(f"Enum {self.__dict__.get('_name', '?')} has no value defined for name {name!r}")

    def __repr__(self) -> str:
        return f"<EnumTypeWrapper {self._full_name}>"


FILES, MESSAGES, ENUMS = _build()
for _full, _descriptor in MESSAGES.items():
    _onnxio._install_descriptor(_onnxio._messages[_full], _descriptor)
del _full, _descriptor
