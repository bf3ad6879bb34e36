"""protobuf's reflection API on onnxio's messages, against protobuf's own
descriptors of the onnx package (onnx.onnx_ml_pb2, onnx_data_pb2,
onnx_operators_ml_pb2 on protobuf/upb) as the reference:

- every message and enum type: the Descriptor, FieldDescriptor,
  OneofDescriptor, EnumDescriptor, EnumValueDescriptor and FileDescriptor
  attributes equal protobuf's, with the same identity relations
  (field.message_type is the Descriptor of that class, containing_type
  back-links, by-name and by-number maps holding the listed objects);
- every public attribute protobuf's descriptors have, onnxio's have;
- the message methods generic code calls (ListFields, HasField,
  ClearField, WhichOneof, ...) behave as protobuf's, errors included;
- google.protobuf.text_format and json_format give for onnxio's messages
  what they give for the equal onnx messages, and read into them;
- pickle and copy round trips.
"""
import copy
import pickle

import pytest
from google.protobuf import descriptor as pb_descriptor
from google.protobuf import descriptor_pb2, json_format, text_format

import onnx
import onnxio
from onnx import onnx_data_pb2, onnx_ml_pb2, onnx_operators_ml_pb2
from onnxio import _onnxio as _ext

PB_MODULES = (onnx_ml_pb2, onnx_data_pb2, onnx_operators_ml_pb2)


def walk(d):
    yield d
    for n in d.nested_types:
        yield from walk(n)


def pb_messages():
    """{full name: protobuf Descriptor} of every message of the schema."""
    out = {}
    for m in PB_MODULES:
        for top in m.DESCRIPTOR.message_types_by_name.values():
            for d in walk(top):
                out[d.full_name] = d
    return out


def pb_enums():
    out = {}
    for m in PB_MODULES:
        out.update({e.full_name: e for e in m.DESCRIPTOR.enum_types_by_name.values()})
    for d in pb_messages().values():
        out.update({e.full_name: e for e in d.enum_types})
    return out


PB_MESSAGES = pb_messages()
PB_ENUMS = pb_enums()


def cls(mod, full_name):
    obj = mod
    for part in full_name[len("onnx."):].split("."):
        obj = getattr(obj, part)
    return obj


def ours_of(pd):
    """onnxio's descriptor of the same message or enum as protobuf's `pd`."""
    if pd is None:
        return None
    return cls(onnxio, pd.full_name).DESCRIPTOR  # a message class or an enum wrapper


def same_ref(ours, theirs):
    """`ours` is onnxio's descriptor of the thing protobuf's `theirs` is (or
    both are None)."""
    if theirs is None:
        return ours is None
    return ours is ours_of(theirs)


def test_schema_types_are_the_same_set():
    assert set(PB_MESSAGES) == set(_ext._messages)
    assert set(PB_ENUMS) == set(_ext._enums)
    assert len(PB_MESSAGES) >= 30


# ---- descriptors --------------------------------------------------------------

FIELD_ATTRS = ("name", "full_name", "number", "index", "type", "cpp_type", "is_repeated", "is_required",
               "is_packed", "has_presence", "is_extension", "default_value", "has_default_value", "camelcase_name",
               "json_name", "has_options")


def check_options(ours, theirs):
    assert ours.has_options == theirs.has_options
    a, b = ours.GetOptions(), theirs.GetOptions()
    assert type(a) is type(b)
    assert a.SerializeToString() == b.SerializeToString()
    assert ours.GetOptions() is a  # one options object per descriptor


def check_file(ours, theirs):
    assert ours.name == theirs.name and ours.package == theirs.package
    assert list(ours.message_types_by_name) == list(theirs.message_types_by_name)
    for name, d in ours.message_types_by_name.items():
        assert same_ref(d, theirs.message_types_by_name[name])
    assert list(ours.enum_types_by_name) == list(theirs.enum_types_by_name)
    for name, e in ours.enum_types_by_name.items():
        assert same_ref(e, theirs.enum_types_by_name[name])
    assert [f.name for f in ours.dependencies] == [f.name for f in theirs.dependencies]
    assert list(ours.public_dependencies) == list(theirs.public_dependencies) == []
    assert dict(ours.extensions_by_name) == dict(theirs.extensions_by_name) == {}
    assert dict(ours.services_by_name) == dict(theirs.services_by_name) == {}
    check_options(ours, theirs)
    a, b = descriptor_pb2.FileDescriptorProto(), descriptor_pb2.FileDescriptorProto()
    ours.CopyToProto(a)
    theirs.CopyToProto(b)
    assert a == b
    assert descriptor_pb2.FileDescriptorProto.FromString(ours.serialized_pb) == \
        descriptor_pb2.FileDescriptorProto.FromString(theirs.serialized_pb)


def check_enum(ours, theirs):
    for attr in ("name", "full_name", "is_closed"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert ours.file.name == theirs.file.name
    if ours.containing_type is not None:
        assert ours.file is ours.containing_type.file
    assert same_ref(ours.containing_type, theirs.containing_type)
    assert len(ours.values) == len(theirs.values)
    for v, pv in zip(ours.values, theirs.values):
        assert (v.name, v.number, v.index) == (pv.name, pv.number, pv.index)
        assert v.type is ours
        check_options(v, pv)
        assert ours.values_by_name[v.name] is v
    assert list(ours.values_by_name) == list(theirs.values_by_name)
    assert list(ours.values_by_number) == list(theirs.values_by_number)
    for n, v in ours.values_by_number.items():
        assert v.name == theirs.values_by_number[n].name and v is ours.values_by_name[v.name]
    check_options(ours, theirs)
    a, b = descriptor_pb2.EnumDescriptorProto(), descriptor_pb2.EnumDescriptorProto()
    ours.CopyToProto(a)
    theirs.CopyToProto(b)
    assert a == b


def check_field(ours, theirs, owner):
    for attr in FIELD_ATTRS:
        assert getattr(ours, attr) == getattr(theirs, attr), f"{theirs.full_name}.{attr}"
        assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), f"{theirs.full_name}.{attr}"
    # protobuf 7 dropped FieldDescriptor.label (older protobuf and code
    # written for it read it); onnxio keeps it, as protobuf 6 gave it
    want_label = theirs.LABEL_REPEATED if theirs.is_repeated else theirs.LABEL_OPTIONAL
    assert getattr(theirs, "label", want_label) == want_label == ours.label
    assert ours.containing_type is owner
    assert ours.extension_scope is None and theirs.extension_scope is None
    assert ours.file is owner.file
    assert same_ref(ours.message_type, theirs.message_type)
    if ours.message_type is not None:
        assert ours.message_type is cls(onnxio, theirs.message_type.full_name).DESCRIPTOR
    assert same_ref(ours.enum_type, theirs.enum_type)
    if theirs.containing_oneof is None:
        assert ours.containing_oneof is None
    else:
        assert ours.containing_oneof is owner.oneofs_by_name[theirs.containing_oneof.name]
    check_options(ours, theirs)


@pytest.mark.parametrize("full_name", sorted(PB_MESSAGES))
def test_message_descriptor_equals_protobufs(full_name):
    theirs = PB_MESSAGES[full_name]
    klass = _ext._messages[full_name]
    ours = klass.DESCRIPTOR
    assert cls(onnxio, full_name) is klass
    assert ours._concrete_class is klass
    assert (ours.name, ours.full_name) == (theirs.name, theirs.full_name)
    assert ours.file.name == theirs.file.name
    assert same_ref(ours.containing_type, theirs.containing_type)
    assert (ours.is_extendable, list(ours.extensions), dict(ours.extensions_by_name), list(ours.extension_ranges)) == \
        (theirs.is_extendable, list(theirs.extensions), dict(theirs.extensions_by_name), list(theirs.extension_ranges))
    check_options(ours, theirs)
    # fields, in declaration order, and the maps holding them
    assert [f.name for f in ours.fields] == [f.name for f in theirs.fields]
    for f, pf in zip(ours.fields, theirs.fields):
        check_field(f, pf, ours)
        assert ours.fields_by_name[f.name] is f and ours.fields_by_number[f.number] is f
        assert ours.fields_by_camelcase_name[f.camelcase_name] is f
    assert list(ours.fields_by_name) == list(theirs.fields_by_name)
    assert sorted(ours.fields_by_number) == sorted(theirs.fields_by_number)
    assert sorted(ours.fields_by_camelcase_name) == sorted(theirs.fields_by_camelcase_name)
    # nested types and enums
    assert [d.name for d in ours.nested_types] == [d.name for d in theirs.nested_types]
    for d, pd in zip(ours.nested_types, theirs.nested_types):
        assert same_ref(d, pd) and d.containing_type is ours and ours.nested_types_by_name[d.name] is d
    assert list(ours.nested_types_by_name) == list(theirs.nested_types_by_name)
    assert [e.name for e in ours.enum_types] == [e.name for e in theirs.enum_types]
    for e, pe in zip(ours.enum_types, theirs.enum_types):
        assert same_ref(e, pe) and e.containing_type is ours and ours.enum_types_by_name[e.name] is e
        check_enum(e, pe)
    assert list(ours.enum_types_by_name) == list(theirs.enum_types_by_name)
    assert sorted(ours.enum_values_by_name) == sorted(theirs.enum_values_by_name)
    for name, v in ours.enum_values_by_name.items():
        pv = theirs.enum_values_by_name[name]
        assert (v.name, v.number, v.type.full_name) == (pv.name, pv.number, pv.type.full_name)
        assert v.type.values_by_name[name] is v
    for e in ours.enum_types:
        for v in e.values:
            assert ours.EnumValueName(e.name, v.number) == theirs.EnumValueName(e.name, v.number)
    # oneofs
    assert [o.name for o in ours.oneofs] == [o.name for o in theirs.oneofs]
    for o, po in zip(ours.oneofs, theirs.oneofs):
        assert (o.name, o.full_name, o.index) == (po.name, po.full_name, po.index)
        assert o.containing_type is ours and ours.oneofs_by_name[o.name] is o
        assert [f.name for f in o.fields] == [f.name for f in po.fields]
        assert all(f is ours.fields_by_name[f.name] and f.containing_oneof is o for f in o.fields)
        check_options(o, po)
    assert list(ours.oneofs_by_name) == list(theirs.oneofs_by_name)
    a, b = descriptor_pb2.DescriptorProto(), descriptor_pb2.DescriptorProto()
    ours.CopyToProto(a)
    theirs.CopyToProto(b)
    assert a == b


@pytest.mark.parametrize("full_name", sorted(PB_ENUMS))
def test_enum_descriptor_and_wrapper_equal_protobufs(full_name):
    theirs = PB_ENUMS[full_name]
    wrapper = cls(onnxio, full_name)
    pb_wrapper = cls(onnx, full_name)
    ours = wrapper.DESCRIPTOR
    check_enum(ours, theirs)
    parent = ours.containing_type
    if parent is None:
        assert ours.file.enum_types_by_name[ours.name] is ours
    else:
        assert parent.enum_types_by_name[ours.name] is ours
    for method in ("keys", "values", "items"):
        assert list(getattr(wrapper, method)()) == list(getattr(pb_wrapper, method)())
    for name, number in pb_wrapper.items():
        assert wrapper.Value(name) == number and wrapper.Name(number) == pb_wrapper.Name(number)
        assert ours.values_by_name[name].number == number
    assert wrapper.ValueType is int


def test_issue_examples():
    """What third-party converters read."""
    assert onnxio.TensorProto.DataType.DESCRIPTOR.values_by_name["FLOAT"].number == 1
    assert onnxio.TensorProto.DESCRIPTOR.enum_types_by_name["DataType"] is onnxio.TensorProto.DataType.DESCRIPTOR
    v = onnxio.TensorProto.DataType.DESCRIPTOR.values[1]
    assert (v.name, v.number, v.index) == ("FLOAT", 1, 1) and not isinstance(v, tuple)
    assert onnxio.ModelProto.DESCRIPTOR.fields_by_name["graph"].message_type is onnxio.GraphProto.DESCRIPTOR
    assert onnxio.AttributeProto.DESCRIPTOR.fields_by_name["type"].enum_type is \
        onnxio.AttributeProto.AttributeType.DESCRIPTOR


@pytest.mark.parametrize("full_name", sorted(PB_FILES := {m.DESCRIPTOR.name: m for m in PB_MODULES}))
def test_file_descriptor_equals_protobufs(full_name):
    theirs = PB_FILES[full_name].DESCRIPTOR
    ours = next(d for d in (c.DESCRIPTOR for c in _ext._messages.values()) if d.file.name == full_name).file
    check_file(ours, theirs)
    for d in ours.message_types_by_name.values():
        for sub in walk(d):
            assert sub.file is ours
            assert all(f.file is ours for f in sub.fields)
            assert all(e.file is ours for e in sub.enum_types)


def test_field_descriptor_constants_equal_protobufs():
    names = [n for n in dir(pb_descriptor.FieldDescriptor) if n.isupper() and not n.startswith("_")]
    assert len(names) > 30
    for n in names:
        assert getattr(onnxio.FieldDescriptor, n) == getattr(pb_descriptor.FieldDescriptor, n), n


# What protobuf's descriptors have and onnxio's do not: upb's internals.
NOT_PROVIDED = {"_GetFeatures"}


@pytest.mark.parametrize("kind", ["message", "field", "oneof", "enum", "enum_value", "file"])
def test_every_public_attribute_of_protobufs_descriptors_exists(kind):
    pt, ot = onnx.TensorShapeProto.Dimension.DESCRIPTOR, onnxio.TensorShapeProto.Dimension.DESCRIPTOR
    pairs = {
        "message": (pt, ot),
        "field": (pt.fields[0], ot.fields[0]),
        "oneof": (pt.oneofs[0], ot.oneofs[0]),
        "enum": (onnx.TensorProto.DataType.DESCRIPTOR, onnxio.TensorProto.DataType.DESCRIPTOR),
        "enum_value": (onnx.TensorProto.DataType.DESCRIPTOR.values[0],
                       onnxio.TensorProto.DataType.DESCRIPTOR.values[0]),
        "file": (pt.file, ot.file),
    }
    theirs, ours = pairs[kind]
    missing = [n for n in dir(theirs) if not n.startswith("__") and n not in NOT_PROVIDED and not hasattr(ours, n)]
    assert missing == []
    with pytest.raises(AttributeError):
        ours.name = "x"  # read-only, as protobuf's
    with pytest.raises(onnxio.DescriptorAttributeError, match="_GetFeatures"):
        ours._GetFeatures()


# ---- message methods ----------------------------------------------------------

PB_KIND = {5: "int32", 3: "int64", 4: "uint64", 2: "float", 1: "double", 9: "string", 12: "bytes"}
SAMPLES = {"int32": [-5, 7], "int64": [-(2**40), 3], "uint64": [2**63 + 5, 0], "float": [0.5, -3.0],
           "double": [0.1, 1e300], "string": ["h\u00e9llo", ""], "bytes": [b"\x00\xff", b"x"]}


def fill(msg, descriptor, depth=0):
    """Sets every field of msg (oneofs: the last member wins) from a
    protobuf descriptor, the same way for both modules."""
    for f in descriptor.fields:
        if f.type == f.TYPE_MESSAGE:
            if depth > 1:
                continue
            if f.is_repeated:
                fill(getattr(msg, f.name).add(), f.message_type, depth + 1)
            else:
                getattr(msg, f.name).SetInParent()
                fill(getattr(msg, f.name), f.message_type, depth + 1)
            continue
        if f.type == f.TYPE_ENUM:
            values = [f.enum_type.values[-1].number, f.enum_type.values[0].number]
        else:
            values = SAMPLES[PB_KIND[f.type]]
        if f.is_repeated:
            getattr(msg, f.name).extend(values)
        else:
            setattr(msg, f.name, values[0])


def pair(full_name):
    """(onnx message, onnxio message), both filled alike."""
    out = []
    for mod in (onnx, onnxio):
        m = cls(mod, full_name)()
        fill(m, PB_MESSAGES[full_name])
        out.append(m)
    return out


def outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 (the exception is the result compared)
        return ("raises", type(e).__name__, str(e))
    if hasattr(r, "SerializeToString"):
        return ("message", r.DESCRIPTOR.full_name, r.SerializeToString())
    return ("value", r)


def as_names(fields):
    return [(f.full_name, v if not hasattr(v, "SerializeToString") else v.SerializeToString()) for f, v in fields]


@pytest.mark.parametrize("full_name", sorted(PB_MESSAGES))
def test_methods_behave_as_protobufs(full_name):
    theirs, ours = pair(full_name)
    assert ours.SerializeToString() == theirs.SerializeToString()
    # ListFields: (descriptor, value) in number order, descriptors of the class
    lf = ours.ListFields()
    assert [(f.full_name, f.number) for f, _ in lf] == [(f.full_name, f.number) for f, _ in theirs.ListFields()]
    assert all(f is type(ours).DESCRIPTOR.fields_by_name[f.name] for f, _ in lf)
    names = [f.name for f in PB_MESSAGES[full_name].fields] + ["no_such_field"]
    oneofs = [o.name for o in PB_MESSAGES[full_name].oneofs]
    for name in names:
        assert outcome(lambda: ours.HasField(name)) == outcome(lambda: theirs.HasField(name)), name
        assert outcome(lambda: ours.WhichOneof(name)) == outcome(lambda: theirs.WhichOneof(name)), name
    for name in oneofs:
        assert ours.WhichOneof(name) == theirs.WhichOneof(name)
        assert ours.HasField(name) == theirs.HasField(name)
    for method in ("IsInitialized", "FindInitializationErrors", "ByteSize"):
        assert outcome(getattr(ours, method)) == outcome(getattr(theirs, method)), method
    data = theirs.SerializeToString()
    assert ours.MergeFromString(data) == theirs.MergeFromString(data)
    assert ours.SerializeToString() == theirs.SerializeToString()
    # with an unknown field, then without
    unknown = b"\xf8\x07\x01"  # field 127, varint 1
    assert ours.MergeFromString(unknown) == theirs.MergeFromString(unknown)
    assert ours.SerializeToString() == theirs.SerializeToString()
    ours.DiscardUnknownFields()
    theirs.DiscardUnknownFields()
    assert ours.SerializeToString() == theirs.SerializeToString()
    # pickle and copies round trip, to the same class
    for dup in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours), copy.copy(ours)):
        assert type(dup) is type(ours) and dup == ours and dup is not ours
        assert dup.SerializeToString() == theirs.SerializeToString()
    # ClearField, field by field (and of a oneof by its name)
    for name in names + oneofs:
        assert outcome(lambda: ours.ClearField(name)) == outcome(lambda: theirs.ClearField(name)), name
        assert ours.SerializeToString() == theirs.SerializeToString(), name
    assert ours.ListFields() == [] == theirs.ListFields()


def test_has_field_errors_equal_protobufs():
    for fn in (lambda m: m.HasField("dims"), lambda m: m.HasField("nope"), lambda m: m.ClearField("nope"),
               lambda m: m.WhichOneof("name"), lambda m: m.WhichOneof("nope"), lambda m: m.MergeFromString("x"),
               lambda m: m.IsInitialized([])):
        a, b = outcome(lambda: fn(onnxio.TensorProto())), outcome(lambda: fn(onnx.TensorProto()))
        assert a[:2] == b[:2]
    assert outcome(lambda: onnxio.TensorProto().HasField("dims")) == \
        outcome(lambda: onnx.TensorProto().HasField("dims"))  # ValueError, same message


# ---- text_format and json_format ---------------------------------------------


def text_outputs(m):
    return {
        "text": text_format.MessageToString(m),
        "text_one_line": text_format.MessageToString(m, as_one_line=True),
        "text_utf8": text_format.MessageToString(m, as_utf8=True),
        "text_numbers": text_format.MessageToString(m, use_field_number=True),
        "text_short": text_format.MessageToString(m, use_short_repeated_primitives=True, pointy_brackets=True,
                                                  indent=2),
        "json": json_format.MessageToJson(m),
        "json_names": json_format.MessageToJson(m, preserving_proto_field_name=True, indent=None, sort_keys=True),
        "json_ints": json_format.MessageToJson(m, use_integers_for_enums=True),
        "json_all": json_format.MessageToJson(m, always_print_fields_with_no_presence=True),
        "dict": json_format.MessageToDict(m),
        "dict_all": json_format.MessageToDict(m, always_print_fields_with_no_presence=True,
                                              preserving_proto_field_name=True),
    }


@pytest.mark.parametrize("full_name", sorted(PB_MESSAGES))
def test_text_and_json_format_equal_protobufs(full_name):
    theirs, ours = pair(full_name)
    want = text_outputs(theirs)
    got = text_outputs(ours)
    for key in want:
        assert got[key] == want[key], key
    empty = text_outputs(cls(onnx, full_name)())
    assert text_outputs(cls(onnxio, full_name)()) == empty
    # and read back into onnxio's messages, as into onnx's
    data = theirs.SerializeToString()
    for key, parse in (("text", text_format.Parse), ("text_one_line", text_format.Merge),
                       ("text_short", text_format.Parse), ("json", json_format.Parse),
                       ("json_ints", json_format.Parse), ("json_all", json_format.Parse)):
        m = cls(onnxio, full_name)()
        assert parse(want[key], m) is m
        assert m.SerializeToString() == data, key
    # text with field numbers: protobuf's parser refuses it, for both
    if want["text_numbers"]:
        assert outcome(lambda: text_format.Parse(want["text_numbers"], cls(onnxio, full_name)())) == \
            outcome(lambda: text_format.Parse(want["text_numbers"], cls(onnx, full_name)()))
    m = json_format.ParseDict(want["dict"], cls(onnxio, full_name)())
    assert m.SerializeToString() == data
    m = cls(onnxio, full_name)()
    text_format.Merge(want["text"], m)
    text_format.Merge(want["text"], m)
    t = cls(onnx, full_name)()
    text_format.Merge(want["text"], t)
    text_format.Merge(want["text"], t)
    assert m.SerializeToString() == t.SerializeToString()


def test_format_errors_equal_protobufs():
    for text in ("foo: 1", "dims: \"x\"", "data_type: 1 data_type: 2", "segment { begin: x }"):
        a = outcome(lambda: text_format.Parse(text, onnxio.TensorProto()))
        b = outcome(lambda: text_format.Parse(text, onnx.TensorProto()))
        assert a == b, text
    for text in ('{"foo": 1}', '{"dims": ["x"]}', '{"dataLocation": "NOPE"}', '{"segment": 3}', "[]"):
        a = outcome(lambda: json_format.Parse(text, onnxio.TensorProto()))
        b = outcome(lambda: json_format.Parse(text, onnx.TensorProto()))
        assert a == b, text


def test_text_format_print_unknown_fields_refused():
    """protobuf's text_format reads unknown fields through upb's
    UnknownFieldSet, which takes upb messages only (documented)."""
    m = onnxio.TensorProto.FromString(b"\xf8\x07\x01")
    with pytest.raises(TypeError, match="Expected a message object"):
        text_format.MessageToString(m, print_unknown_fields=True)
    assert text_format.MessageToString(m) == text_format.MessageToString(onnx.TensorProto.FromString(b"\xf8\x07\x01"))


def test_equal_to_the_onnx_message_of_the_same_contents():
    """An onnxio message equals the onnx package's message of the same class
    and contents, both ways (onnx's schemas hand out onnx messages that
    code compares with onnxio's after `import onnxio as onnx`)."""
    import onnx

    ours = onnxio.AttributeProto(name="epsilon", f=1e-5, type=onnxio.AttributeProto.FLOAT)
    theirs = onnx.defs.get_schema("BatchNormalization").attributes["epsilon"].default_value
    assert ours == theirs and theirs == ours and not ours != theirs
    assert ours != onnx.AttributeProto(name="epsilon") and ours != onnx.TensorProto()
    assert (ours == 3) is False


def test_instance_name_as_protobuf():
    """upb's messages answer `msg.__name__` with their class name (pytest
    names parameters by it)."""
    import onnx

    assert onnxio.TensorProto().__name__ == onnx.TensorProto().__name__ == "TensorProto"


# ---- what generic code asks of a message: isinstance ------------------------------

def test_messages_are_protobuf_messages():
    """onnxio's classes derive from google.protobuf.message.Message, as
    upb's do: generic walkers recurse into a field when it is a Message."""
    from google.protobuf.message import Message

    for cls in (onnxio.ModelProto, onnxio.TensorShapeProto.Dimension, onnxio.TensorProto.Segment):
        assert issubclass(cls, Message) and isinstance(cls(), Message)
    # What protobuf's Message would raise stays unreachable: onnxio's own
    # methods come first; extensions (which ONNX has none of) raise as
    # protobuf's base does.
    m = onnxio.ModelProto(ir_version=3)
    assert type(m).SerializeToString is not Message.SerializeToString
    # Not a collected object for that: messages form no cycles, and a
    # tracked object costs each allocation (Message, a Python class, is
    # collected; its subclass here is not).
    import gc

    assert not gc.is_tracked(m) and not gc.is_tracked(m.graph) and not gc.is_tracked(m.opset_import.add())
    with pytest.raises(NotImplementedError):
        m.HasExtension(None)


CONTAINS_CASES = [
    # (message, what is set on it, the names asked)
    ("ModelProto", {}, ["ir_version", "graph", "opset_import", "nope"]),
    ("ModelProto", {"ir_version": 0, "producer_name": "x"}, ["ir_version", "producer_name", "graph", "domain"]),
    ("TensorProto", {"data_type": 1, "raw_data": b""}, ["data_type", "raw_data", "dims", "segment", "name"]),
    ("TensorShapeProto.Dimension", {"dim_value": 3}, ["dim_value", "dim_param", "value", "denotation"]),
]


@pytest.mark.parametrize("cls, fields, names", CONTAINS_CASES)
def test_contains_is_has_field(cls, fields, names):
    """`name in message`, as protobuf's Message.__contains__: presence for
    a singular field or a oneof, ValueError for a repeated or unknown one."""
    def make(mod):
        c = mod
        for part in cls.split("."):
            c = getattr(c, part)
        return c(**fields)

    a, b = make(onnx), make(onnxio)
    for name in names:
        try:
            want = name in a
        except ValueError:
            with pytest.raises(ValueError):
                name in b  # noqa: B015
            continue
        assert (name in b) == want, (cls, name)


def test_repeated_fields_are_mutable_sequences():
    """Repeated fields are collections.abc.MutableSequence, as protobuf
    registers its containers (onnx_ir asserts Sequence on string_data), and
    have protobuf's clear()."""
    import collections.abc as abc

    for mod in (onnx, onnxio):
        t = mod.TensorProto(float_data=[1.0, 2.0], string_data=[b"a"])
        m = mod.ModelProto()
        m.opset_import.add(version=6)
        for c in (t.float_data, t.string_data, m.opset_import):
            assert isinstance(c, abc.MutableSequence), (mod.__name__, type(c))
        t.float_data.clear()
        m.opset_import.clear()
        assert len(t.float_data) == 0 and len(m.opset_import) == 0


def test_generic_walker_compares_field_by_field():
    """onnx_ir.testing.assert_onnx_proto_equal walks messages generically:
    it recurses into Message fields and compares the others as sequences or
    values, so that presence does not decide equality. onnxio's messages
    pass it, field by field."""
    from conftest import needs

    needs("onnx_ir")
    import onnx_ir.testing as testing

    for mod in (onnxio,):
        a = mod.ModelProto()
        a.opset_import.add(domain="", version=6)
        b = mod.ModelProto()
        b.opset_import.add(version=6)
        testing.assert_onnx_proto_equal(a, b)
        b.opset_import[0].version = 7
        with pytest.raises(AssertionError):
            testing.assert_onnx_proto_equal(a, b)
