"""Every field of every message, against libprotobuf.

The `onnx` package's classes are compiled from the same schema (proto2). For
each message of onnx-ml.proto, onnx-data.proto and onnx-operators-ml.proto
these tests build bytes (with the classes, walking the descriptors
generically, or by hand for encodings the classes never write) and check

    onnxio roundtrip(bytes) == Class.FromString(bytes).SerializeToString()

and that onnxio rejects exactly the bytes libprotobuf rejects. Each test
collects every failing case and reports them all: the case, the input bytes,
what libprotobuf wrote and what onnxio wrote (hex), and where they differ.
Each case runs with payloads copied and with no_copy.
"""
from itertools import permutations

import onnx
import pytest
from google.protobuf import message as _message

import onnxio_ctypes as ox
from protobuild import (
    FD,
    MESSAGES,
    BY_NAME,
    CLASSES,
    MESSAGE_IDS,
    varint,
    tag,
    ld,
    WIRE_TYPE,
    SCALAR_TYPES,
    scalar_field,
    packed_field,
    values_for,
    pick,
    several,
    oneof_choice_fields,
    fill,
    filled,
    filled_variants,
    unknown_pieces,
    overlong,
    chunks,
)


# ---- running the cases ----------------------------------------------------------


class Cases:
    """Collects results; every case runs through libprotobuf and onnxio (in
    copy and no_copy mode)."""

    def __init__(self):
        self.failures = []
        self.count = 0
        self.noncanonical = 0

    def check(self, name, label, data, expect_equal_input=False):
        self.count += 1
        data = bytes(data)
        try:
            expected = CLASSES[name].FromString(data).SerializeToString()
        except _message.DecodeError:
            expected = None
        if expected is not None and expected != data:
            self.noncanonical += 1
            if expect_equal_input:
                self.failures.append(f"[{name}] {label}: (test bug?) libprotobuf does not write back "
                                     f"bytes its own classes wrote\n    input:    {short_hex(data)}\n"
                                     f"    expected: {short_hex(expected)}")
        for no_copy in (False, True):
            mode = " [no_copy]" if no_copy else ""
            try:
                got = ox.roundtrip(name, data, no_copy=no_copy)
            except ox.OnnxioError as e:
                got = e
            except KeyError as e:
                self.failures.append(f"[{name}] {label}: onnxio has no such message: {e}")
                return
            if expected is None:
                if not isinstance(got, ox.OnnxioError):
                    self.failures.append(
                        f"[{name}] {label}{mode}: libprotobuf rejects these bytes, onnxio accepts them\n"
                        f"    input: {short_hex(data)}\n    onnxio wrote: {short_hex(got)}")
                    return
            elif isinstance(got, ox.OnnxioError):
                self.failures.append(f"[{name}] {label}{mode}: onnxio rejects bytes libprotobuf accepts: {got}\n"
                                     f"    input:    {short_hex(data)}\n    expected: {short_hex(expected)}")
                return
            elif got != expected:
                self.failures.append(
                    f"[{name}] {label}{mode}: onnxio != libprotobuf\n"
                    f"    input:    {short_hex(data)}\n    expected: {short_hex(expected)}\n"
                    f"    got:      {short_hex(got)}\n    " + ox.describe_diff(expected, got).replace("\n", "\n    "))
                return

    def check_msg(self, label, msg):
        self.check(msg.DESCRIPTOR.full_name, label, msg.SerializeToString(), expect_equal_input=True)

    def report(self, what, limit=15):
        print(f"\n{what}: {self.count} cases ({self.noncanonical} with non-canonical input), "
              f"{len(self.failures)} failures")
        if self.failures:
            shown = self.failures[:limit]
            more = len(self.failures) - len(shown)
            pytest.fail(f"{what}: {len(self.failures)} of {self.count} cases fail"
                        + (f" (first {limit} shown)" if more else "") + ":\n" + "\n".join(shown),
                        pytrace=False)


def short_hex(b, limit=160):
    h = b.hex()
    if len(h) > 2 * limit:
        return f"{h[:2 * limit]}... ({len(b)} bytes)"
    return f"{h} ({len(b)} bytes)"


@pytest.fixture(scope="module", autouse=True)
def _library():
    ox.lib()


# ---- tests ----------------------------------------------------------------------


def test_messages_known_to_onnxio():
    missing = []
    for name in MESSAGE_IDS:
        try:
            ox.desc(name)
        except KeyError:
            missing.append(name)
    assert not missing, f"onnxio has no descriptor for {missing}"


@pytest.mark.parametrize("name", MESSAGE_IDS)
def test_each_field_alone(name):
    """Each field on its own: every value of the type's list (defaults set
    explicitly included: 0, 0.0, -0.0, "", b"", empty sub-message), repeated
    fields with 0, 1 and several elements, each oneof member alone."""
    c = Cases()
    cls = CLASSES[name]
    c.check_msg("empty message", cls())
    for f in BY_NAME[name].fields:
        if f.type == FD.TYPE_MESSAGE:
            sub_name = f.message_type.full_name
            if f.is_repeated:
                m = cls()
                getattr(m, f.name).add()
                c.check_msg(f"{f.name}: one empty element", m)
                m = cls()
                rep = getattr(m, f.name)
                rep.add()
                fill(rep.add(), 1)
                rep.add()
                c.check_msg(f"{f.name}: three elements", m)
            else:
                m = cls()
                getattr(m, f.name).SetInParent()
                c.check_msg(f"{f.name}: empty sub-message", m)
                m = cls()
                getattr(m, f.name).CopyFrom(filled(sub_name, 1))
                c.check_msg(f"{f.name}: filled sub-message", m)
        elif f.is_repeated:
            for vals in ([values_for(f)[0]], several(f), values_for(f)):
                m = cls()
                getattr(m, f.name).extend(vals)
                c.check_msg(f"{f.name}: {len(vals)} elements", m)
        else:
            for v in values_for(f):
                m = cls()
                setattr(m, f.name, v)
                c.check_msg(f"{f.name} = {v!r:.40}", m)
    c.report(name)


@pytest.mark.parametrize("name", MESSAGE_IDS)
def test_filled_messages(name):
    """Every field set at once, sub-messages filled two levels down; one
    message per member of each oneof."""
    c = Cases()
    for label, msg in filled_variants(name):
        c.check_msg(label, msg)
    c.report(name)


def _repeated_scalars():
    for d in MESSAGES:
        for f in d.fields:
            if f.is_repeated and f.type in SCALAR_TYPES:
                yield pytest.param(d.full_name, f.name, id=f"{d.full_name}.{f.name}")


@pytest.mark.parametrize("name,field", list(_repeated_scalars()))
def test_packed_and_unpacked(name, field):
    """Repeated scalars in both encodings, whatever the schema says: onnxio
    must accept the unpacked form of packed fields and the packed form of
    unpacked ones, in any mix, and write what libprotobuf writes."""
    c = Cases()
    desc = BY_NAME[name]
    f = desc.fields_by_name[field]
    vals = several(f) + [values_for(f)[-1]]
    unpacked = [scalar_field(f, v) for v in vals]
    other = [ch for g, ch in chunks(filled(name, 1)) if g is not f]
    c.check(name, "unpacked", b"".join(unpacked))
    c.check(name, "packed", packed_field(f, vals))
    c.check(name, "packed, one element", packed_field(f, vals[:1]))
    c.check(name, "packed, empty", packed_field(f, []))
    c.check(name, "two packed runs", packed_field(f, vals[:2]) + packed_field(f, vals[2:]))
    c.check(name, "packed then unpacked", packed_field(f, vals[:2]) + b"".join(unpacked[2:]))
    c.check(name, "unpacked then packed then empty packed",
            b"".join(unpacked[:2]) + packed_field(f, vals[2:]) + packed_field(f, []))
    if other:
        c.check(name, "unpacked elements around other fields",
                unpacked[0] + other[0] + b"".join(unpacked[1:3]) + b"".join(other[1:]) + b"".join(unpacked[3:]))
        c.check(name, "packed runs around other fields",
                packed_field(f, vals[:1]) + b"".join(other) + packed_field(f, vals[1:]))
    if f.type == FD.TYPE_FLOAT:
        c.check(name, "float NaN payloads and denormals, packed",
                ld(f.number, bytes.fromhex("0100a07f" "0000c0ff" "0100807f" "01000000" "00000080")))
    if f.type == FD.TYPE_DOUBLE:
        c.check(name, "double NaN payloads, unpacked",
                tag(f.number, 1) + bytes.fromhex("010000000000f07f") + tag(f.number, 1) + bytes.fromhex("000000000000f8ff"))
    if WIRE_TYPE[f.type] == 0:
        c.check(name, "packed overlong varints", ld(f.number, bytes.fromhex("8000" "818080" "ffffffff0f")))
    c.report(f"{name}.{field}")


@pytest.mark.parametrize("name,field", list(_repeated_scalars()))
def test_unpacked_runs(name, field):
    """Runs of unpacked elements (as proto2 writes AttributeProto.ints and
    floats) of every length that crosses an array's growth, alone, merged
    into elements already there, broken by other fields and by packed runs,
    and cut short in their last element."""
    c = Cases()
    f = BY_NAME[name].fields_by_name[field]
    vals = values_for(f)
    other = [ch for g, ch in chunks(filled(name, 1)) if g is not f]

    def run(n, start=0):
        return b"".join(scalar_field(f, vals[(start + i) % len(vals)]) for i in range(n))

    for n in (1, 3, 4, 5, 8, 9, 33, 1000):
        c.check(name, f"{n} unpacked elements", run(n))
        c.check(name, f"4 unpacked, then {n} more after another field",
                run(4) + (other[0] if other else b"") + run(n, 1))
        c.check(name, f"{n} unpacked, then a packed run, then {n} unpacked",
                run(n) + packed_field(f, vals[:3]) + run(n, 2))
    full = run(6)
    for cut in (1, 2, 3):
        c.check(name, f"6 unpacked elements, the last {cut} bytes cut", full[:-cut])
    c.report(f"{name}.{field} unpacked runs")


@pytest.mark.parametrize("name", MESSAGE_IDS)
def test_unknown_fields(name):
    """Unknown fields of every wire type (varint, fixed64, length-delimited,
    group, fixed32) with unused numbers, before, between and after known
    fields, at top level and in nested messages (three levels down)."""
    c = Cases()
    desc = BY_NAME[name]
    pieces = unknown_pieces(desc)
    allu = b"".join(p for _, p in pieces)
    base = filled(name, 1)
    parts = [ch for _, ch in chunks(base)]
    for label, p in pieces:
        c.check(name, f"unknown {label} alone", p)
        c.check(name, f"unknown {label} after known fields", b"".join(parts) + p)
        c.check(name, f"unknown {label} before known fields", p + b"".join(parts))
    c.check(name, "every unknown wire type, then known fields", allu + b"".join(parts))
    inter = b""
    for i, ch in enumerate(parts):
        inter += pieces[i % len(pieces)][1] + ch
    c.check(name, "unknown fields between known fields", inter + allu)
    c.check(name, "nested unknown fields (3 levels)", nested_unknowns(desc, 3))
    c.report(name)


def nested_unknowns(desc, depth, choice=0):
    """Bytes of a desc message with fields set and unknown fields between
    them, whose message fields carry unknown fields too, `depth` levels."""
    pieces = [p for _, p in unknown_pieces(desc)]
    out = b""
    for i, f in enumerate(oneof_choice_fields(desc, choice)):
        out += pieces[i % len(pieces)]
        if f.type == FD.TYPE_MESSAGE:
            sub = (nested_unknowns(f.message_type, depth - 1, choice) if depth > 0
                   else unknown_pieces(f.message_type)[0][1])
            out += ld(f.number, sub)
            if f.is_repeated:
                out += ld(f.number, b"") + ld(f.number, unknown_pieces(f.message_type)[-1][1])
        elif f.is_repeated:
            out += b"".join(scalar_field(f, v) for v in several(f))
        else:
            out += scalar_field(f, pick(f, i))
    return out + pieces[-2]


@pytest.mark.parametrize("name", MESSAGE_IDS)
def test_noncanonical_input(name):
    """Bytes libprotobuf reads but never writes: fields in reverse order, a
    singular field repeated (last wins), singular messages repeated
    (merged), overlong varints and sign-extension quirks of int32."""
    c = Cases()
    desc = BY_NAME[name]
    parts = [ch for _, ch in chunks(filled(name, 1))]
    c.check(name, "fields in reverse order", b"".join(reversed(parts)))
    for f in desc.fields:
        if f.is_repeated:
            continue
        if f.type == FD.TYPE_MESSAGE:
            sub = f.message_type.full_name
            a = filled(sub, 1, 0).SerializeToString()
            b = filled(sub, 1, 1, 1).SerializeToString()
            c.check(name, f"{f.name} twice: merged", ld(f.number, a) + ld(f.number, b))
            c.check(name, f"{f.name} twice around other fields: merged",
                    ld(f.number, a) + b"".join(parts) + ld(f.number, b))
            c.check(name, f"{f.name}: empty then filled", ld(f.number, b"") + ld(f.number, a))
            c.check(name, f"{f.name}: filled then empty", ld(f.number, a) + ld(f.number, b""))
        else:
            vals = values_for(f)
            c.check(name, f"{f.name} twice: last wins", scalar_field(f, vals[-1]) + scalar_field(f, vals[1 % len(vals)]))
            c.check(name, f"{f.name} twice around other fields: last wins",
                    scalar_field(f, vals[1 % len(vals)]) + b"".join(parts) + scalar_field(f, vals[0]))
    for f in desc.fields:
        if WIRE_TYPE[f.type] != 0:
            continue
        n = f.number
        c.check(name, f"{f.name}: overlong tag", overlong(tag(n, 0)) + b"\x01")
        for label, enc in (("overlong 0", "8000"), ("overlong 1", "81808000"), ("5-byte -1", "ffffffff0f"),
                           ("10-byte -1", "ffffffffffffffffff01"), ("10-byte with high bits", "ffffffffffffffffff7f"),
                           ("2^32 + 5", "8580808010"), ("2^40 + 1", "818080808020"), ("2^63", "80808080808080808001")):
            c.check(name, f"{f.name}: varint {label}", tag(n, 0) + bytes.fromhex(enc))
    for f in desc.fields:
        if f.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
            c.check(name, f"{f.name}: overlong length", tag(f.number, 2) + bytes.fromhex("8200") + b"ab")
            c.check(name, f"{f.name}: invalid UTF-8", ld(f.number, b"\xff\xc3(\xed\xa0\x80"))
    c.report(name)


@pytest.mark.parametrize("name", MESSAGE_IDS)
def test_wrong_wire_type(name):
    """A known field number with a wire type that does not fit the field is
    not an error: libprotobuf keeps it as an unknown field (wire type 2 on a
    repeated scalar is its packed form)."""
    c = Cases()
    desc = BY_NAME[name]
    parts = [ch for _, ch in chunks(filled(name, 1))]
    for f in desc.fields:
        for wt, payload in ((0, varint(5)), (1, b"\x01" * 8), (2, varint(2) + b"\x01\x02"),
                            (3, tag(1, 0) + b"\x01" + tag(f.number, 4)), (5, b"\x01" * 4)):
            if wt == WIRE_TYPE[f.type]:
                continue
            c.check(name, f"{f.name} with wire type {wt}", tag(f.number, wt) + payload)
            c.check(name, f"{f.name} with wire type {wt} among other fields",
                    b"".join(parts[:1]) + tag(f.number, wt) + payload + b"".join(parts[1:]))
    c.report(name)


def _oneofs():
    for d in MESSAGES:
        for o in d.oneofs:
            yield pytest.param(d.full_name, o.name, id=f"{d.full_name}.{o.name}")


@pytest.mark.parametrize("name,oneof", list(_oneofs()))
def test_oneof_last_member_wins(name, oneof):
    """Two or three oneof members in a row: the last one read wins (a
    message member read again after another member starts afresh); the same
    message member twice is merged."""
    c = Cases()
    o = BY_NAME[name].oneofs_by_name[oneof]

    def enc(f, variant):
        if f.type == FD.TYPE_MESSAGE:
            return ld(f.number, filled(f.message_type.full_name, 1, variant, variant).SerializeToString())
        return scalar_field(f, pick(f, variant))

    for a in o.fields:
        c.check(name, f"{a.name} twice", enc(a, 0) + enc(a, 1))
    for a, b in permutations(o.fields, 2):
        c.check(name, f"{a.name} then {b.name}", enc(a, 0) + enc(b, 1))
        c.check(name, f"{a.name} then {b.name} then {a.name}", enc(a, 0) + enc(b, 1) + enc(a, 1))
    c.report(f"{name} oneof {oneof}")


def _enum_fields():
    for d in MESSAGES:
        for f in d.fields:
            if f.type == FD.TYPE_ENUM:
                yield pytest.param(d.full_name, f.name, id=f"{d.full_name}.{f.name}")


@pytest.mark.parametrize("name,field", list(_enum_fields()))
def test_invalid_enum_values(name, field):
    """proto2 enums are closed: a number that is not a value of the enum goes
    to the unknown fields (keeping the bytes it was read as) and the field
    stays as it was; libprotobuf checks the number truncated to 32 bits."""
    c = Cases()
    desc = BY_NAME[name]
    f = desc.fields_by_name[field]
    valid = [v.number for v in f.enum_type.values]
    invalid = [max(valid) + 1, 99, 1000, 2**31 - 1, -1, -(2**31)]
    invalid = [v for v in invalid if v not in valid]
    parts = [ch for g, ch in chunks(filled(name, 1)) if g is not f]
    for v in invalid:
        c.check(name, f"{field} = {v}", scalar_field(f, v))
        c.check(name, f"{field} = {v} among other fields", parts[0] + scalar_field(f, v) + b"".join(parts[1:]) if parts else scalar_field(f, v))
        c.check(name, f"{field} = {valid[-1]} then {v}", scalar_field(f, valid[-1]) + scalar_field(f, v))
        c.check(name, f"{field} = {v} then {valid[-1]}", scalar_field(f, v) + scalar_field(f, valid[-1]))
        c.check(name, f"{field} = {v} then unknown fields",
                scalar_field(f, v) + b"".join(p for _, p in unknown_pieces(desc)))
    for label, enc in (("99 overlong", "e38000"), ("-1 in 5 bytes", "ffffffff0f"), ("-1 in 6 bytes", "ffffffff8f00"),
                       ("2^32 + 1 (truncates to 1)", "8180808010"), ("2^63 (truncates to 0)", "80808080808080808001"),
                       ("valid value overlong", overlong(varint(valid[-1])).hex())):
        c.check(name, f"{field} = {label}", tag(f.number, 0) + bytes.fromhex(enc))
    # nested: the enum field in a message that is a field of another message
    for outer in MESSAGES:
        for of in outer.fields:
            if of.type == FD.TYPE_MESSAGE and of.message_type is desc:
                c.check(outer.full_name, f"{of.name}.{field} = 99", ld(of.number, scalar_field(f, 99) + (parts[0] if parts else b"")))
                break
    c.report(f"{name}.{field}")


# Hand-made malformed inputs: libprotobuf rejects them all; onnxio must too.
MALFORMED = [
    ("onnx.TensorProto", "truncated varint", "0880"),
    ("onnx.TensorProto", "truncated tag", "80"),
    ("onnx.TensorProto", "11-byte varint", "08ffffffffffffffffffff01"),
    ("onnx.TensorProto", "length past the end", "4205ab"),
    ("onnx.TensorProto", "huge length", "42ffffffff0f"),
    ("onnx.TensorProto", "length 2^63", "4280808080808080808001"),
    ("onnx.TensorProto", "field number 0", "0001"),
    ("onnx.TensorProto", "wire type 6", "0e"),
    ("onnx.TensorProto", "wire type 7", "0f"),
    ("onnx.TensorProto", "end group without start", "0801" "0c"),
    ("onnx.TensorProto", "unterminated group", "fb0608010801"),
    ("onnx.TensorProto", "group with the wrong end", "fb06" "0801" "84" "07"),
    ("onnx.TensorProto", "fixed32 truncated", "2500"),
    ("onnx.TensorProto", "fixed64 truncated", "51000000"),
    ("onnx.TensorProto", "packed floats not a multiple of 4", "2203000000"),
    ("onnx.TensorProto", "packed doubles not a multiple of 8", "520400000000"),
    ("onnx.TensorProto", "packed varint truncated", "2a03ffffff"),
    ("onnx.TensorProto", "packed varint runs past its length", "0a0201ff01"),
    ("onnx.TensorProto", "sub-message truncated inside", "1a020880"),
    ("onnx.ModelProto", "graph with bad node", "3a040a02" "0880"),
    ("onnx.ModelProto", "sub-message length past parent", "3a050a0a"),
]


def test_malformed_rejected():
    c = Cases()
    for name, label, h in MALFORMED:
        data = bytes.fromhex(h)
        try:
            CLASSES[name].FromString(data)
            c.failures.append(f"[{name}] {label}: (test bug) libprotobuf accepts {h}")
        except _message.DecodeError:
            pass
        c.check(name, label, data)
    c.report("malformed input")


def _chain(n):
    """A TypeProto with n messages nested below it (sequence_type, then
    elem_type, alternately)."""
    data = b""
    for i in reversed(range(n)):
        data = ld(4 if i % 2 == 0 else 1, data)  # TypeProto.sequence_type / TypeProto.Sequence.elem_type
    return data


def test_nesting_depth_agrees():
    """Deep nesting: bytes that libprotobuf reads, onnxio must read and write
    alike (default limit 100 in both); past the limit, both refuse."""
    c = Cases()
    for n in (10, 50, 98, 99, 100, 101, 102, 120, 2000):
        c.check("onnx.TypeProto", f"TypeProto with {n} nested messages", _chain(n))
    c.report("nesting depth")


def test_float_bits_preserved():
    """Floats and doubles are copied bit for bit (signaling NaN payloads,
    negative zero, denormals): nothing goes through a conversion."""
    c = Cases()
    floats = ["0100a07f", "0000c0ff", "0100807f", "ffffff7f", "01000000", "00000080", "0000807f"]
    doubles = ["010000000000f07f", "000000000000f8ff", "0100000000000000", "0000000000000080"]
    for h in floats:
        c.check("onnx.AttributeProto", f"f = 0x{h}", tag(2, 5) + bytes.fromhex(h))
        c.check("onnx.AttributeProto", f"floats = [0x{h}] unpacked", tag(7, 5) + bytes.fromhex(h))
        c.check("onnx.TensorProto", f"float_data = [0x{h}] unpacked", tag(4, 5) + bytes.fromhex(h))
    c.check("onnx.TensorProto", "float_data packed, all patterns", ld(4, bytes.fromhex("".join(floats))))
    c.check("onnx.AttributeProto", "floats packed, all patterns", ld(7, bytes.fromhex("".join(floats))))
    for h in doubles:
        c.check("onnx.TensorProto", f"double_data = [0x{h}] unpacked", tag(10, 1) + bytes.fromhex(h))
    c.check("onnx.TensorProto", "double_data packed, all patterns", ld(10, bytes.fromhex("".join(doubles))))
    c.report("float bits")


def test_large_payloads():
    """raw_data and other bytes fields around the 1024-byte payload
    threshold and bigger, alone and with other fields."""
    c = Cases()
    for n in (0, 1, 1023, 1024, 1025, 65536, 3 * 2**20 + 7):
        payload = bytes((i * 7 + 3) & 0xFF for i in range(n))
        t = onnx.TensorProto(name="t", data_type=1, dims=[n], raw_data=payload)
        c.check_msg(f"raw_data {n} bytes", t)
        g = onnx.GraphProto(name="g", initializer=[t, t])
        c.check_msg(f"graph with two {n}-byte initializers", onnx.ModelProto(ir_version=10, graph=g))
        c.check("onnx.TensorProto", f"raw_data {n} bytes twice (last wins)", ld(9, b"x" * 10) + ld(9, payload))
        c.check_msg(f"AttributeProto.s {n} bytes", onnx.AttributeProto(name="a", s=payload, type=3))
    c.report("large payloads")


def test_cases_can_fail():
    """Sanity check of the harness: a wrong expectation is reported."""
    c = Cases()
    orig = ox.roundtrip
    try:
        ox.roundtrip = lambda name, data, no_copy=False: orig(name, data, no_copy) + b"\x00"
        c.check("onnx.TensorProto", "deliberately broken", bytes.fromhex("0801"))
    finally:
        ox.roundtrip = orig
    assert len(c.failures) == 1 and "first difference at byte 2" in c.failures[0], c.failures
