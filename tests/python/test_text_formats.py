"""The text formats onnx.save / onnx.load write and read (format="textproto"
and format="json"), done by onnxio's C library (onnxio_text_format and
onnxio_text_parse), against Python protobuf's own writers and readers:

- writing: byte for byte google.protobuf.text_format.MessageToString and
  json_format.MessageToJson(preserving_proto_field_name=True), over every
  file of the conformance corpus (../shared/corpus, libonnx-testdata, the onnx
  package's backend test data: models and test-data files), and hand-built
  messages (every field of every message, edge floats and random float bits,
  integer extremes, strings with every byte and every escape);
- reading: the text protobuf wrote, read by onnxio, serializes to the very
  bytes protobuf's reader gives; hand-written texts that protobuf accepts
  (comments, '<>', lists, hex and octal, "NaN", camelCase names, base64
  without padding, ...) give the same message, and texts protobuf refuses
  are refused with a DecodeError that names the line and column;
- the Python API: onnxio.save / load with those formats give onnx's files and
  messages, and need no onnx package.
"""
import json
import os
import struct
import subprocess
import sys
import time

import onnx
import pytest
from google.protobuf import json_format, text_format

import onnxio
from onnxio import _onnxio
from conftest import needs
from datafiles import collect
from protobuild import CLASSES, MESSAGE_IDS, filled_variants, ld, tag
from test_text import BAD_UTF8, SPECIAL_DOUBLES, SPECIAL_FLOATS, STRINGS, random_bits, text_diff

STYLES = ("textproto", "json")


def reference_text(style, msg):
    """What onnx's serializers write for `msg` (an onnx package message)."""
    if style == "textproto":
        return text_format.MessageToString(msg).encode()
    return json_format.MessageToJson(msg, preserving_proto_field_name=True).encode()


def reference_parse(style, cls, text):
    """protobuf's reading of `text` into a new `cls`, serialized."""
    msg = cls()
    if style == "textproto":
        text_format.Parse(text, msg)
    else:
        json_format.Parse(text, msg)
    return msg.SerializeToString()


def onnxio_class(full_name):
    obj = onnxio
    for part in full_name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


class Cases:
    """Collects differences, so that one run reports all of them."""

    def __init__(self, style):
        self.style = style
        self.failures = []
        self.count = 0

    def fail(self, what):
        self.failures.append(what)

    def check(self, label, full_name, data, write=True, read=True):
        """`data` (wire bytes of a `full_name` message) written by onnxio as
        protobuf writes it, and protobuf's text read back by onnxio as
        protobuf reads it."""
        self.count += 1
        data = bytes(data)
        ref = CLASSES[full_name].FromString(data)
        expected = reference_text(self.style, ref)
        cls = onnxio_class(full_name)
        if write:
            msg = _onnxio._load_bytes(data, cls, **({"load_external_data": False} if cls is onnxio.ModelProto else {}))
            try:
                got = _onnxio._text_format(msg, self.style)
            except onnxio.OnnxioError as e:
                self.fail(f"{label} ({full_name}): onnxio failed: {e}")
                return
            if got != expected:
                self.fail(f"{label} ({full_name}): onnxio's {self.style} != protobuf's\n  "
                          + text_diff(expected.decode("utf-8", "replace"), got.decode("utf-8", "replace")))
        if read:
            try:
                want = reference_parse(self.style, CLASSES[full_name], expected)
            except (text_format.ParseError, json_format.ParseError):
                # protobuf cannot read what it wrote: json_format writes the
                # largest floats as 3.4028235e+38 and refuses that on
                # reading, as past FLT_MAX. onnxio reads the value written.
                want = CLASSES[full_name].FromString(data).SerializeToString()
            try:
                back = _onnxio._serialize(_onnxio._text_parse(expected, cls, self.style))
            except onnxio.DecodeError as e:
                self.fail(f"{label} ({full_name}): onnxio cannot read protobuf's {self.style}: {e}")
                return
            if back != want:
                self.fail(f"{label} ({full_name}): protobuf's {self.style} read by onnxio gives other bytes "
                          f"({len(back)} vs {len(want)})")

    def check_msg(self, label, msg, **kw):
        self.check(label, msg.DESCRIPTOR.full_name, msg.SerializeToString(), **kw)

    def report(self, what, limit=15):
        print(f"\n{what} ({self.style}): {self.count} messages, {len(self.failures)} differ")
        if self.failures:
            pytest.fail(f"{what} ({self.style}): {len(self.failures)} of {self.count} differ (first {limit}):\n"
                        + "\n".join(self.failures[:limit]), pytrace=False)


# ---- real files ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("source", ["shared-corpus", "libonnx-testdata", "onnx-backend-data"])
def test_real_files(source, style):
    root = needs(source)
    c = Cases(style)
    t0 = time.monotonic()
    for path, cls in collect(root):
        c.check(str(path), cls.DESCRIPTOR.full_name, path.read_bytes())
    print(f"\n{source}: {c.count} files in {time.monotonic() - t0:.1f} s")
    c.report(source)


# ---- hand-built messages --------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", MESSAGE_IDS)
def test_every_field(name, style):
    """Every field of every message set (nested, empty sub-messages, each
    oneof member), and the empty message."""
    c = Cases(style)
    c.check_msg("empty", CLASSES[name]())
    for label, msg in filled_variants(name):
        c.check_msg(label, msg)
    c.report(name)


@pytest.mark.parametrize("style", STYLES)
def test_floats(style):
    """Floats go through ToShortestFloat and repr(), doubles through repr():
    edge values and random bit patterns (every exponent, denormals, NaN
    payloads), in packed arrays and singular fields."""
    c = Cases(style)
    c.check("special floats", "onnx.TensorProto", ld(4, b"".join(struct.pack("<f", v) for v in SPECIAL_FLOATS)))
    c.check("special doubles", "onnx.TensorProto", ld(10, b"".join(struct.pack("<d", v) for v in SPECIAL_DOUBLES)))
    for v in SPECIAL_FLOATS:
        c.check(f"AttributeProto.f = {v!r}", "onnx.AttributeProto", tag(2, 5) + struct.pack("<f", v))
    rf, rd = random_bits(3000, 4, 11), random_bits(3000, 8, 12)
    for i in range(0, 3000, 500):
        c.check(f"random float bits #{i}", "onnx.TensorProto", ld(4, b"".join(rf[i:i + 500])))
        c.check(f"random double bits #{i}", "onnx.TensorProto", ld(10, b"".join(rd[i:i + 500])))
    scale = [struct.pack("<f", 10.0 ** e * 1.2345678) for e in range(-40, 39)]
    c.check("powers of ten (fixed and exponent notation)", "onnx.TensorProto", ld(4, b"".join(scale)))
    scaled = [struct.pack("<d", 10.0 ** e * 1.2345678901234) for e in range(-300, 300, 7)]
    c.check("double powers of ten", "onnx.TensorProto", ld(10, b"".join(scaled)))
    c.report("floats")


@pytest.mark.parametrize("style", STYLES)
def test_integers(style):
    c = Cases(style)
    c.check_msg("int64 extremes", onnx.TensorProto(dims=[0, -1, 2**63 - 1, -(2**63)], int64_data=[-(2**63), 2**63 - 1]))
    c.check_msg("int32 extremes", onnx.TensorProto(data_type=1, int32_data=[2**31 - 1, -(2**31), -1, 0]))
    c.check_msg("uint64 extremes", onnx.TensorProto(uint64_data=[0, 1, 2**63, 2**64 - 1]))
    c.check_msg("int64 attribute", onnx.AttributeProto(i=-(2**63), ints=[0, -1, 2**63 - 1]))
    c.report("integers")


@pytest.mark.parametrize("style", STYLES)
def test_strings(style):
    """string fields (UTF-8; JSON escapes every non-ASCII code point) and
    bytes fields (octal escapes in text, base64 in JSON)."""
    c = Cases(style)
    for s in STRINGS:
        c.check_msg(f"name = {s!r}", onnx.TensorProto(name=s, doc_string=s))
        c.check_msg(f"s = {s!r} (bytes)", onnx.AttributeProto(name="a", s=s.encode(), strings=[s.encode(), b""]))
    every = bytes(range(256))
    for n in range(5):  # every base64 padding
        c.check_msg(f"raw_data of {n} bytes", onnx.TensorProto(raw_data=every[:n]))
    c.check_msg("raw_data with every byte", onnx.TensorProto(raw_data=every))
    c.check_msg("string_data with every byte", onnx.TensorProto(string_data=[every, every[::-1]]))
    if style == "textproto":
        # protobuf hands a string field that is not UTF-8 to the writers as
        # bytes: text_format escapes them as onnxio does; json_format writes
        # Python's repr() of the bytes object, which is not the field's value.
        for b in BAD_UTF8:
            c.check(f"string field holding {b!r}", "onnx.TensorProto", ld(8, b), read=False)
    c.report("strings")


@pytest.mark.parametrize("style", STYLES)
def test_unknown_enum_numbers(style):
    """An enum number that names no value is an unknown field once read
    (ONNX's enums are closed), so neither writer shows it."""
    c = Cases(style)
    c.check("data_location 7", "onnx.TensorProto", tag(14, 0) + bytes([7]) + ld(8, b"t"))
    c.check("AttributeProto.type 99", "onnx.AttributeProto", tag(20, 0) + bytes([99]) + ld(1, b"a"))
    c.report("unknown enum numbers")


# ---- texts written by hand: accepted and refused as protobuf does ------------------------

TEXT_ACCEPTED = [
    ("onnx.ModelProto", 'ir_version: 7 producer_name: "a" graph { name: "g" }'),
    ("onnx.ModelProto", "ir_version:7,producer_name:'a';graph:{name:\"g\"}"),
    ("onnx.ModelProto", 'graph < name: "g" node [ { op_type: "Relu" }, <op_type: "Add"> ] node: [] >'),
    ("onnx.ModelProto", '# a comment\nir_version: 0x10 # trailing\n  opset_import { version: 010 }\n'),
    ("onnx.ModelProto", "ir_version: -0 model_version: 0X7fffffffffffffff"),
    ("onnx.ModelProto", "ir_version: 9223372036854775807 model_version: -9223372036854775808"),
    ("onnx.ModelProto", 'metadata_props { key: "k" value: "v" } metadata_props: { key: "k2" }'),
    ("onnx.ModelProto", ""),
    ("onnx.ModelProto", "  \n\t# only a comment"),
    ("onnx.TensorProto", "dims: [1, 2, 3] data_type: 1 float_data: [1.5, -inf, inf, nan, 1e10, 2f, .5, 1E-3]"),
    ("onnx.TensorProto", "float_data: [-Infinity, INF, NaN, nanf, -inff, 1e39, -1e39, 3.4028235e38, 1e-50, 7]"),
    ("onnx.TensorProto", "double_data: [1, -2.5, 1e308, 5e-324, 0.1, -0.0, 1.7976931348623157e308]"),
    ("onnx.TensorProto", "int64_data: [-9223372036854775808, 9223372036854775807] uint64_data: [18446744073709551615, 0x10]"),
    ("onnx.TensorProto", "int32_data: 0x7fffffff int32_data: -0x80000000 int32_data: -017 data_type: 1"),
    ("onnx.TensorProto", 'name: "a" "b" \'c\' doc_string: "\\u00e9\\U0001F642 \\x41\\101\\7\\n\\t\\\\\\"\\\'\\a\\b\\f\\v\\?"'),
    ("onnx.TensorProto", 'raw_data: "\\001\\x02\\xff\\xF\\377\\0" string_data: ["a", \'\', "\\303\\251"]'),
    ("onnx.TensorProto", 'name: "é中🙂" data_location: EXTERNAL external_data { key: "location" value: "x" }'),
    ("onnx.TensorProto", "data_type: 99"),
    ("onnx.TensorProto", 'name: "\\q\\?\\8\\9"'),
    ("onnx.AttributeProto", "type: FLOATS"),
    ("onnx.AttributeProto", "type: 6"),
    ("onnx.AttributeProto", 'name: "t" type: TENSOR t { dims: 1 } f: 0.25 i: -1 s: "x" floats: [] ints: [1, 2]'),
    ("onnx.TypeProto", 'tensor_type { elem_type: 1 shape { dim { dim_value: 3 } dim { dim_param: "N" } } }'),
    ("onnx.TypeProto", "sequence_type { elem_type { optional_type { elem_type { map_type { key_type: 7 } } } } }"),
]

TEXT_REFUSED = [
    ("onnx.ModelProto", "ir_version: 1 ir_version: 2", "should not have multiple"),
    ("onnx.ModelProto", 'graph { name: "a" } graph { name: "b" }', "should not have multiple"),
    ("onnx.ModelProto", "no_such_field: 1", "no field named"),
    ("onnx.ModelProto", "ir_version 7", "Expected \":\""),
    ("onnx.ModelProto", 'ir_version: "7"', "integer"),
    ("onnx.ModelProto", "ir_version: 1.5", "integer"),
    ("onnx.ModelProto", "ir_version: 9223372036854775808", "range"),
    ("onnx.ModelProto", "ir_version: -9223372036854775809", "range"),
    ("onnx.ModelProto", "ir_version: 99999999999999999999999", "range"),
    ("onnx.ModelProto", 'graph { name: "g" ', "Expected"),
    ("onnx.ModelProto", 'producer_name: "abc', ""),
    ("onnx.ModelProto", 'producer_name: "a\nb"', ""),
    ("onnx.ModelProto", 'producer_name: "\\xff"', "UTF-8"),
    ("onnx.ModelProto", 'producer_name: "\\x"', "escape"),
    ("onnx.ModelProto", 'producer_name: "\\u12"', "escape"),
    ("onnx.ModelProto", 'producer_name: "\\ud800"', "escape"),
    ("onnx.ModelProto", 'producer_name: "\\U00110000"', "escape"),
    ("onnx.ModelProto", 'producer_name: "\\400"', "escape"),
    ("onnx.ModelProto", "[onnx.ext]: 1", ""),
    ("onnx.ModelProto", "graph: [ { } ]", ""),
    ("onnx.ModelProto", "ir_version: ", "integer"),
    ("onnx.ModelProto", "}", ""),
    ("onnx.AttributeProto", "type: NOT_A_TYPE", "no value named"),
    ("onnx.AttributeProto", "type: 99", "no value with number"),
    ("onnx.TensorProto", "data_location: 7", "no value with number"),
    ("onnx.TensorProto", "data_type: 2147483648", "range"),
    ("onnx.TensorProto", "dims: [1, 2", ""),
    ("onnx.TensorProto", "dims: [1 2]", ""),
    ("onnx.TensorProto", "uint64_data: -1", "range"),
    ("onnx.TensorProto", "int32_data: 2147483648", "range"),
    ("onnx.TensorProto", "float_data: 0x10", "float"),
    ("onnx.TensorProto", "float_data: abc", "float"),
    ("onnx.TensorProto", 'float_data: "1"', "float"),
    ("onnx.TypeProto", "tensor_type { } sequence_type { }", "oneof"),
]

JSON_ACCEPTED = [
    ("onnx.ModelProto", '{"irVersion": "7", "producer_name": "a", "graph": {"name": "g", "node": [{"opType": "Relu"}]}}'),
    ("onnx.ModelProto", '{"ir_version": 7}'),
    ("onnx.ModelProto", '{"ir_version": 7.0, "model_version": 1e1}'),
    ("onnx.ModelProto", '{"ir_version": "-9223372036854775808", "model_version": 9223372036854775807}'),
    ("onnx.ModelProto", '{"ir_version": null, "graph": null, "opset_import": null}'),
    ("onnx.ModelProto", '{"graph": {}, "opset_import": [{}, {"domain": "", "version": "1"}]}'),
    ("onnx.ModelProto", ' \n\t{ } \n'),
    ("onnx.ModelProto", '{"ir_version": 1, "irVersion": 2}'),
    ("onnx.ModelProto", '{"graph": {"name": "a"}, "graph": null}'.replace('"graph": null', '"producerName": "p"')),
    ("onnx.TensorProto", '{"dims": ["1", 2, -3], "float_data": [1, "NaN", "Infinity", "-Infinity", "1.5", 2.5e-3, -0.0]}'),
    ("onnx.TensorProto", '{"data_type": 11, "double_data": [1e308, 5e-324, "1e-7", 0.1]}'),
    ("onnx.TensorProto", '{"data_type": 1, "uint64_data": ["18446744073709551615", 0]}'),
    ("onnx.TensorProto", '{"data_type": "1"}'),
    ("onnx.AttributeProto", '{"type": "FLOATS"}'),
    ("onnx.AttributeProto", '{"type": 6}'),
    ("onnx.AttributeProto", '{"type": "6"}'),
    ("onnx.TensorProto", '{"data_location": "EXTERNAL"}'),
    ("onnx.TensorProto", '{"raw_data": "AQID"}'),
    ("onnx.TensorProto", '{"raw_data": "AQI"}'),
    ("onnx.TensorProto", '{"raw_data": "-_8="}'),
    ("onnx.TensorProto", '{"raw_data": "+/8"}'),
    ("onnx.TensorProto", '{"raw_data": ""}'),
    ("onnx.TensorProto", '{"string_data": ["AA==", "/w"], "rawData": "AAAA"}'),
    ("onnx.TensorProto", '{"name": "\\u00e9\\ud83d\\ude42\\n\\t\\"\\\\\\/\\b\\f\\r", "doc_string": "é中🙂"}'),
    ("onnx.TensorProto", '{"dims": []}'),
    ("onnx.TensorProto", '{"float_data": [3.4028234663852886e38, -3.4028234663852886e38, 1e-50]}'),
    ("onnx.TypeProto", '{"tensorType": {"elemType": 1, "shape": {"dim": [{"dimValue": "3"}, {"dim_param": "N"}]}}}'),
    ("onnx.TypeProto", '{"tensor_type": null, "sequence_type": {}}'),
]

JSON_REFUSED = [
    ("onnx.ModelProto", '{"ir_version": 1.5}', "integer"),
    ("onnx.ModelProto", '{"ir_version": "1.5"}', "integer"),
    ("onnx.ModelProto", '{"ir_version": " 1"}', "integer"),
    ("onnx.ModelProto", '{"ir_version": true}', ""),
    ("onnx.ModelProto", '{"ir_version": "9223372036854775808"}', "range"),
    ("onnx.ModelProto", '{"ir_version": 9223372036854775808}', "range"),
    ("onnx.ModelProto", '{"ir_version": 1e20}', "range"),
    ("onnx.ModelProto", '{"nope": 1}', "no field named"),
    ("onnx.ModelProto", '{"ir_version": 1, "ir_version": 2}', "duplicate"),
    ("onnx.ModelProto", '{"opset_import": {}}', "[]"),
    ("onnx.ModelProto", '{"opset_import": [null]}', "null"),
    ("onnx.ModelProto", '{"graph": "x"}', "object"),
    ("onnx.ModelProto", "", ""),
    ("onnx.ModelProto", "{", ""),
    ("onnx.ModelProto", '{"ir_version":}', ""),
    ("onnx.ModelProto", "{} x", ""),
    ("onnx.ModelProto", '{"ir_version": 1,}', ""),
    ("onnx.ModelProto", "{'ir_version': 1}", ""),
    ("onnx.ModelProto", '{"producer_name": 5}', ""),
    ("onnx.ModelProto", '{"producer_name": "a\nb"}', ""),
    ("onnx.ModelProto", '{"producer_name": "\\ud800"}', "surrogate"),
    ("onnx.ModelProto", '{"producer_name": "\\x41"}', ""),
    ("onnx.TensorProto", '{"float_data": [NaN]}', "NaN"),
    ("onnx.TensorProto", '{"float_data": [Infinity]}', "Infinity"),
    ("onnx.TensorProto", '{"float_data": ["nan"]}', "NaN"),
    ("onnx.TensorProto", '{"float_data": [1e39]}', "large"),
    ("onnx.TensorProto", '{"float_data": ["abc"]}', "float"),
    ("onnx.TensorProto", '{"dims": 1}', "[]"),
    ("onnx.AttributeProto", '{"type": "NOPE"}', "enum"),
    ("onnx.AttributeProto", '{"type": 99}', "Invalid enum value 99"),
    ("onnx.TensorProto", '{"data_location": 7}', "Invalid enum value 7"),
    ("onnx.TensorProto", '{"data_type": 1.5e400}', ""),
    ("onnx.TensorProto", '{"raw_data": "A"}', "base64"),
    ("onnx.TensorProto", '{"raw_data": 1}', ""),
    ("onnx.TypeProto", '{"tensor_type": {}, "sequence_type": {}}', "oneof"),
]


def _cases(table):
    return pytest.mark.parametrize("name,text", [(n, t) for n, t, *_ in table], ids=[t[:40] for _, t, *_ in table])


def _check_accepted(style, name, text):
    want = reference_parse(style, CLASSES[name], text)  # protobuf accepts it (the table is right)
    got = _onnxio._serialize(_onnxio._text_parse(text.encode(), onnxio_class(name), style))
    assert got == want, f"{style} {text!r}: onnxio read {got.hex()}, protobuf {want.hex()}"


def _check_refused(style, name, text, words):
    with pytest.raises(Exception):  # noqa: B017 - the table is right: protobuf refuses it
        reference_parse(style, CLASSES[name], text)
    with pytest.raises(onnxio.DecodeError) as e:
        _onnxio._text_parse(text.encode(), onnxio_class(name), style)
    msg = str(e.value)
    assert "line " in msg and "column " in msg, msg
    assert words.lower() in msg.lower(), f"{text!r}: {msg!r} does not mention {words!r}"


@_cases(TEXT_ACCEPTED)
def test_text_accepted(name, text):
    _check_accepted("textproto", name, text)


@pytest.mark.parametrize("name,text,words", TEXT_REFUSED, ids=[t[1][:40] for t in TEXT_REFUSED])
def test_text_refused(name, text, words):
    _check_refused("textproto", name, text, words)


@_cases(JSON_ACCEPTED)
def test_json_accepted(name, text):
    _check_accepted("json", name, text)


@pytest.mark.parametrize("name,text,words", JSON_REFUSED, ids=[t[1][:40] for t in JSON_REFUSED])
def test_json_refused(name, text, words):
    _check_refused("json", name, text, words)


@pytest.mark.parametrize("text", ['{"graph": []}', '{"graph": ["a"]}', "[]", '""'])
def test_json_stricter_than_python_protobuf(text):
    """Where a message is due, Python's json_format iterates whatever value
    it finds, so an empty list passes as an empty message (and a list of
    strings reads them as keys). onnxio wants an object there."""
    with pytest.raises(onnxio.DecodeError, match="object|expected '{'"):
        _onnxio._text_parse(text.encode(), onnxio.ModelProto, "json")


def test_largest_float_json_reads_back():
    """json_format writes FLT_MAX as 3.4028235e+38 and then refuses to read
    it ("Float value too large"): a model with a clip bound at FLT_MAX saved
    by onnx.save(format="json") does not load in onnx. onnxio reads it back
    to FLT_MAX, and refuses only what would round to infinity."""
    t = onnx.TensorProto(float_data=[3.4028234663852886e38, -3.4028234663852886e38])
    text = json_format.MessageToJson(t, preserving_proto_field_name=True)
    assert "3.4028235e+38" in text
    with pytest.raises(json_format.ParseError, match="too large"):
        json_format.Parse(text, onnx.TensorProto())
    assert _onnxio._serialize(_onnxio._text_parse(text, onnxio.TensorProto, "json")) == t.SerializeToString()
    limit = 3.4028234663852886e38 + 2.0**103  # rounds to infinity as a float
    with pytest.raises(onnxio.DecodeError, match="too large"):
        _onnxio._text_parse(json.dumps({"float_data": [limit]}), onnxio.TensorProto, "json")


def test_error_position():
    with pytest.raises(onnxio.DecodeError, match=r"text format, line 3 column 3: .*no field named \"bogus\""):
        _onnxio._text_parse(b'ir_version: 1\ngraph {\n  bogus: 2\n}', onnxio.ModelProto, "textproto")
    with pytest.raises(onnxio.DecodeError, match=r"JSON, line 2 column 29: .*integer"):
        _onnxio._text_parse(b'{\n "graph": {}, "ir_version": "x"}', onnxio.ModelProto, "json")


@pytest.mark.parametrize("style", STYLES)
def test_nesting_limit(style):
    """Deep text is refused at max_depth (no stack overflow at any depth)."""
    def nested(n):  # 1 + 3 * n levels
        if style == "json":
            return '{"graph": ' + '{"node": [{"attribute": [{"g": ' * n + "{}" + "}]}]}" * n + "}"
        return "graph { " + "node { attribute { g { " * n + "} } } " * n + "}"
    deep = nested(40)
    with pytest.raises(onnxio.DecodeError, match="deeper"):
        _onnxio._text_parse(deep.encode(), onnxio.ModelProto, style)
    _onnxio._text_parse(deep.encode(), onnxio.ModelProto, style, max_depth=1000)
    with pytest.raises(onnxio.DecodeError, match="deeper"):
        _onnxio._text_parse(nested(100_000).encode(), onnxio.ModelProto, style, max_depth=1000)


# ---- the Python API ----------------------------------------------------------------------


def _model():
    import numpy as np
    from onnx import helper, numpy_helper
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "W")
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm", doc_string="é\n\"q\"")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, ["N", 4])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("ext,fmt", [(".txtpb", "textproto"), (".json", "json"), (".onnx", "textproto"),
                                     (".onnx", "json"), (".onnxjson", None), (".pbtxt", None)])
def test_save_and_load_like_onnx(tmp_path, ext, fmt):
    """onnxio.save writes the file onnx.save writes (format named, or taken
    from the extension); onnxio.load reads it to the message onnx.load
    gives; from bytes and file objects too."""
    ref = _model()
    a, b = tmp_path / f"onnx{ext}", tmp_path / f"onnxio{ext}"
    onnx.save(ref, a, format=fmt)
    onnxio.save(onnxio.from_onnx(ref), b, format=fmt)
    assert b.read_bytes() == a.read_bytes()
    want = onnx.load(a, format=fmt).SerializeToString()
    assert onnxio.load(a, format=fmt).SerializeToString() == want
    with open(a, "rb") as f:
        assert onnxio.load(f, format=fmt or ("json" if "json" in ext else "textproto")).SerializeToString() == want
    real_fmt = fmt or ("json" if "json" in ext else "textproto")
    assert onnxio.load_from_string(a.read_bytes(), format=real_fmt).SerializeToString() == want
    t = ref.graph.initializer[0]
    tb = tmp_path / f"t{ext}"
    onnxio.save_tensor(onnxio.from_onnx(t), tb, format=real_fmt)
    assert tb.read_bytes() == onnx.serialization.registry.get(real_fmt).serialize_proto(t)
    assert onnxio.load_tensor(tb, format=real_fmt).SerializeToString() == t.SerializeToString()


def test_text_formats_need_no_onnx(tmp_path):
    """With the onnx package unimportable, format="textproto" and "json"
    still save and load (the C library does them)."""
    script = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "onnx" or name.startswith("onnx.") or name.startswith("google.protobuf"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import onnxio
m = onnxio.ModelProto(ir_version=8, producer_name="p", graph=onnxio.GraphProto(name="g"))
for fmt, ext in (("textproto", "txtpb"), ("json", "json")):
    p = {str(tmp_path)!r} + "/m." + ext
    onnxio.save(m, p)
    assert onnxio.load(p) == m, fmt
    print(fmt, open(p).read().replace(chr(10), " "))
assert "onnx" not in sys.modules and "google.protobuf" not in sys.modules
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert 'textproto ir_version: 8 producer_name: "p" graph {   name: "g" }' in r.stdout
    assert json.loads(r.stdout.split("json ", 1)[1]) == {"ir_version": "8", "producer_name": "p", "graph": {"name": "g"}}


def test_external_data_with_text_formats(tmp_path):
    """save_as_external_data with a text format: the weights go to the data
    file and the text names them, as onnx does; loading reads them back."""
    import numpy as np
    from onnx import helper, numpy_helper
    w = numpy_helper.from_array(np.arange(4096, dtype=np.float32), "W")
    ref = helper.make_model(helper.make_graph([], "g", [], [], [w]))
    for fmt in STYLES:
        d_onnx, d_io = tmp_path / f"a_{fmt}", tmp_path / f"b_{fmt}"
        d_onnx.mkdir()
        d_io.mkdir()
        # onnx.save marks the tensors of the model it is given external: a copy
        onnx.save(onnx.ModelProto.FromString(ref.SerializeToString()), d_onnx / "m.txt", format=fmt,
                  save_as_external_data=True, location="w.bin")
        onnxio.save(onnxio.from_onnx(ref), d_io / "m.txt", format=fmt, save_as_external_data=True, location="w.bin")
        assert (d_io / "m.txt").read_bytes() == (d_onnx / "m.txt").read_bytes(), fmt
        assert (d_io / "w.bin").read_bytes() == (d_onnx / "w.bin").read_bytes(), fmt
        got = onnxio.load(d_onnx / "m.txt", format=fmt)
        want = onnx.load(d_onnx / "m.txt", format=fmt)
        assert got.SerializeToString() == want.SerializeToString(), fmt
        assert os.path.getsize(d_io / "m.txt") < 4096


# ---- onnxio.serialization: the registry load and save use ----------------------------------


def test_registry_matches_onnx():
    """The same formats and file extensions as onnx.serialization's registry."""
    from onnx import serialization as theirs

    from onnxio import serialization as ours
    for fmt in ("protobuf", "textproto", "json", "onnxtxt"):
        assert ours.registry.get(fmt).file_extensions == theirs.registry.get(fmt).file_extensions, fmt
        for ext in theirs.registry.get(fmt).file_extensions:
            assert ours.registry.get_format_from_file_extension(ext) == fmt
    with pytest.raises(ValueError, match="Unsupported format: 'yaml'"):
        ours.registry.get("yaml")
    m = onnxio.from_onnx(_model())
    for fmt in ("protobuf", "textproto", "json"):
        # the same bytes as onnx's serializer of the format, on onnx's message
        assert ours.registry.get(fmt).serialize_proto(m) == theirs.registry.get(fmt).serialize_proto(_model())
        back = ours.registry.get(fmt).deserialize_proto(ours.registry.get(fmt).serialize_proto(m), onnxio.ModelProto())
        assert back == m


def test_custom_serializer_is_used_by_load_and_save(tmp_path, monkeypatch):
    """A serializer registered in onnxio.serialization is what onnxio.save
    and load use for its format and extensions, as with onnx."""
    from onnxio import serialization

    # The registry is the process's: the registration ends with the test.
    monkeypatch.setattr(serialization.registry, "_serializers", dict(serialization.registry._serializers))
    monkeypatch.setattr(serialization.registry, "_extension_to_format",
                        dict(serialization.registry._extension_to_format))

    class Upper:
        supported_format = "upper-json"
        file_extensions = frozenset({".ujson"})

        def serialize_proto(self, proto):
            return serialization.registry.get("json").serialize_proto(proto).upper()

        def deserialize_proto(self, serialized, proto):
            return serialization.registry.get("json").deserialize_proto(serialized.lower(), proto)

    serialization.registry.register(Upper())
    m = onnxio.ModelProto(producer_name="p", graph=onnxio.GraphProto(name="g"))
    onnxio.save(m, tmp_path / "m.ujson")
    assert (tmp_path / "m.ujson").read_bytes().startswith(b'{\n  "PRODUCER_NAME": "P"')
    assert onnxio.load(tmp_path / "m.ujson") == m
    assert onnxio.load_model_from_string((tmp_path / "m.ujson").read_bytes(), format="upper-json") == m


@pytest.mark.parametrize("fmt,module", [("textproto", text_format), ("json", json_format)])
def test_errors_are_protobufs_parse_errors(fmt, module):
    """A malformed text raises onnxio.DecodeError, which is also the
    ParseError of protobuf's module for the format (what onnx.load raises),
    with its line and column."""
    bad = b"ir_version: 1\n  nope: 2" if fmt == "textproto" else b'{\n  "nope": 2}'
    with pytest.raises(module.ParseError) as e:
        onnxio.load_model_from_string(bad, format=fmt)
    assert isinstance(e.value, onnxio.DecodeError)
    with pytest.raises(module.ParseError):
        onnx.load_model_from_string(bad, format=fmt)
    if fmt == "textproto":
        assert (e.value.GetLine(), e.value.GetColumn()) == (2, 3)


# Odd inputs, each read by protobuf (json_format.Parse / text_format.Parse on
# the onnx package's messages) and by onnxio: the same serialized bytes (NaN
# sign and payload bits included), or both refuse.
_B64_ODD = ["AB=C", "QUJD=REVG", "QU=JD", "QUI=D", "QU==JD", "A=B=C=D", "QU=JDQU=JD", "QQ", "QQ=", "QQ==", "QQ===",
            "QQ====", "Q", "Q=", "Q===", "QUJD====REVG", "-_-_", "+/+/", "-_8", "Q U J D", "QUJ\\nD", "QUJ=", " QUJD ",
            "Q\\tU", "QUJ D", "QUJDR", "QUJDRQ", "QUJDRQ=", "=QUJD", "==QUJD", "QUJDR=", "QUJDR===", "QUJD RQ",
            "QUJD RQ=", "QU\\u00e9JD", "QUJ*D", "QUJDRQ=X", "QUJDRU=", "ab=cd=ef==gh", "=", "====", "QQ=QQ==",
            "QUI=QUI=", "QQ==QUI="]
_REALS = ["nan", "-nan", "+nan", "NaN", "-NaN", "NAN", "inf", "-inf", "+inf", "Infinity", "-Infinity", "-INF",
          "nanf", "-nanf", "inff", "-inff", "1.5f", "-0", "-0.0"]
_JSON_REALS = ["NaN", "-NaN", "nan", "-nan", "+nan", "Infinity", "-Infinity", "inf", "-inf", "+Infinity", "INF",
               "-iNfInItY", " 1", "1 ", " NaN", "-nan\\t", "1_0", "1_0.2_5e1_0", "1__0", "_1", "1_", "1_.5", "1.5",
               "-0", "1e5", "0x10", "1.5f", "+1", ".5", "5.", "nan(1)", "\\u004eaN", "1\\u00a0", "\\u3000-1\\u2029",
               "\\u200b1"]  # (Python also takes non-ASCII digits, "\\u0661" for 1: onnxio does not)
ODD_TEXTS = (
    [("json", "onnx.TensorProto", '{"raw_data": "%s"}' % s) for s in _B64_ODD]
    + [("json", "onnx.TensorProto", '{"string_data": ["%s", "QQ"]}' % s) for s in _B64_ODD]
    + [("textproto", "onnx.TensorProto", f"{f}: {v}") for v in _REALS for f in ("float_data", "double_data")]
    + [("textproto", "onnx.TensorProto", f"{f}: [1, {v}]") for v in _REALS for f in ("float_data", "double_data")]
    + [("textproto", "onnx.AttributeProto", f"f: {v}") for v in _REALS]
    + [("json", "onnx.TensorProto", '{"%s": ["%s"]}' % (f, v)) for v in _JSON_REALS
       for f in ("float_data", "double_data")]
    + [("json", "onnx.AttributeProto", '{"f": "%s"}' % v) for v in _JSON_REALS]
    + [("json", "onnx.TensorProto", '{"%s": [%s]}' % (f, v)) for f in ("float_data", "double_data")
       for v in ("-0", "-0.0", "-0e0", "0", "1" + "0" * 39, "-1" + "0" * 39, "340282356779733661637539395458142568448",
                 "1e39", "1e400", "1e-400", "-1e-400")]
)


def _read_both(style, name, text):
    try:
        want = reference_parse(style, CLASSES[name], text)
    except Exception:  # noqa: BLE001 - protobuf refuses it
        want = None
    try:
        got = _onnxio._serialize(_onnxio._text_parse(text.encode(), onnxio_class(name), style))
    except onnxio.DecodeError:
        got = None
    return want, got


@pytest.mark.parametrize("style,name,text", ODD_TEXTS, ids=[f"{s}:{t[:40]}" for s, _n, t in ODD_TEXTS])
def test_odd_inputs_read_as_protobuf(style, name, text):
    want, got = _read_both(style, name, text)
    assert got == want, f"{style} {text!r}: onnxio {got and got.hex()}, protobuf {want and want.hex()}"


def test_nan_sign_bits_as_protobuf():
    """-nan keeps its sign bit in both formats and both widths, as Python's float("-nan") does."""
    for style, text in [("textproto", "float_data: -nan double_data: -nan"),
                        ("json", '{"float_data": ["-nan"], "double_data": ["-NaN"]}')]:
        t = _onnxio._text_parse(text.encode(), onnxio.TensorProto, style)
        assert struct.pack("<f", t.float_data[0]) == struct.pack("<f", -float("nan")) == b"\x00\x00\xc0\xff"
        assert struct.pack("<d", t.double_data[0]) == struct.pack("<d", -float("nan"))


def test_random_base64_as_json_format():
    """Random strings of base64 digits, '=', spaces and other characters as
    bytes fields: onnxio's reading is json_format's."""
    import random

    rng = random.Random(13)
    alphabet = "QUJDa8-_+/===  \t*\u00e9"
    for _ in range(3000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        text = json.dumps({"raw_data": s})
        want, got = _read_both("json", "onnx.TensorProto", text)
        assert got == want, f"{s!r}: onnxio {got and got.hex()}, protobuf {want and want.hex()}"


# ---- the expansion budget of text reads ----------------------------------------------------


def _empty_initializers_json(n):
    """A model of n empty initializers in the tightest JSON (3 bytes each):
    each becomes a whole TensorProto, about 120 times its text."""
    return json.dumps({"graph": {"initializer": [{}] * n}}, separators=(",", ":")).encode()


@pytest.mark.slow
def test_text_expansion_refused_at_the_default_and_raised(tmp_path):
    n = 1_500_000
    text = _empty_initializers_json(n)
    with pytest.raises(onnxio.DecodeError, match="max_expansion"):
        onnxio.load_model_from_string(text, format="json")
    path = tmp_path / "m.json"
    path.write_bytes(text)
    with pytest.raises(onnxio.DecodeError, match=r"max_expansion \(100\)"):
        onnxio.load(str(path))
    m = onnxio.load(str(path), max_expansion=1000)
    assert len(m.graph.initializer) == n == len(json.loads(text)["graph"]["initializer"])


def _relu_chain(n=20000):
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1])])
    return helper.make_model(graph)


@pytest.mark.parametrize("style", STYLES)
def test_text_max_expansion_honoured(style, tmp_path):
    model = _relu_chain()
    text = reference_text(style, model)
    want = model.SerializeToString()
    for load in (lambda **kw: onnxio.load_model_from_string(text, format=style, **kw),
                 lambda **kw: onnxio.load(str(tmp_path / "m.txt"), format=style, **kw)):
        (tmp_path / "m.txt").write_bytes(text)
        with pytest.raises(onnxio.DecodeError, match=r"max_expansion \(2\)"):
            load(max_expansion=2)
        assert load().SerializeToString() == want
        assert load(max_expansion=50).SerializeToString() == want
    t = onnx.helper.make_tensor("t", onnx.TensorProto.FLOAT, [3], [1, 2, 3])
    ttext = reference_text(style, t)
    assert onnxio.load_tensor_from_string(ttext, format=style, max_expansion=2).SerializeToString() == \
        t.SerializeToString()


def test_text_load_peak_memory_bounded():
    """The refused load allocates no more than its budget: the peak RSS of
    a process that reads 4.5 MB of JSON with max_expansion=10 grows by about
    10 x 4.5 MB, not the 550 MB the whole message takes."""
    code = (
        "import json, resource, onnxio\n"
        "text = json.dumps({'graph': {'initializer': [{}] * 1500000}}, separators=(',', ':')).encode()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    onnxio.load_model_from_string(text, format='json', max_expansion=10)\n"
        "    print('loaded')\n"
        "except onnxio.DecodeError as e:\n"
        "    assert 'max_expansion' in str(e), e\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split()
    assert lines[0] != "loaded"
    assert int(lines[-1]) < 150 << 20, f"peak grew by {int(lines[-1]) >> 20} MiB"
