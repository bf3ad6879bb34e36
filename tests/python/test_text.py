"""onnxio's text format (onnxio_text_format) against Python protobuf's
str(message), which is upb's text encoder: fields in number order, two-space
indentation, floats as the shortest of %.6g / %.9g that reads back the same
(doubles %.15g / %.17g), enum values by name, strings C-escaped (UTF-8 kept
in string fields, octal escapes for bytes fields), unknown fields not
printed.

Runs over every model of ../shared/corpus, every model and a quarter of the
test-data files of libonnx-testdata (all non-tensor ones), and hand-built
messages with tricky floats and strings. Also checks that max_bytes_shown
abbreviates only bytes fields longer than the limit.
"""
import random
import struct
import time

import onnx
import pytest
from onnx import onnx_data_pb2

import onnxio_ctypes as ox
from conftest import needs
from datafiles import collect
from protobuild import CLASSES, FD, MESSAGE_IDS, filled_variants, ld, tag, varint


@pytest.fixture(scope="module", autouse=True)
def _library():
    ox.lib()


def line_diff(a, b, radius=60):
    """Two lines shown around their first differing column."""
    col = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, col - radius)
    cut = "..." if lo else ""
    return (f"column {col + 1}: {cut}{a[lo:col + radius]!r}"
            f"{'...' if len(a) > col + radius else ''}\n      vs {cut}{b[lo:col + radius]!r}"
            f"{'...' if len(b) > col + radius else ''}")


def text_diff(expected, got, context=2):
    """Where two texts differ: line number and the lines around it."""
    el, gl = expected.split("\n"), got.split("\n")
    for i in range(max(len(el), len(gl))):
        e = el[i] if i < len(el) else "<end of text>"
        g = gl[i] if i < len(gl) else "<end of text>"
        if e != g:
            lo = max(0, i - context)
            ctx = "\n".join(f"      {ln[:160]!r}" for ln in el[lo:i])
            return (f"{len(expected)} vs {len(got)} characters; first difference at line {i + 1}:\n"
                    + (f"{ctx}\n" if ctx else "")
                    + f"    python: {e[:300]!r}\n    onnxio: {g[:300]!r}\n    {line_diff(e, g)}")
    return "texts equal"


class TextCases:
    def __init__(self):
        self.failures = []
        self.count = 0

    def check(self, label, name, data, expected=None):
        self.count += 1
        data = bytes(data)
        if expected is None:
            expected = str(CLASSES[name].FromString(data))
        try:
            got = ox.text(name, data)
        except (ox.OnnxioError, KeyError) as e:
            self.failures.append(f"{label} ({name}): onnxio failed: {e}")
            return
        if got != expected:
            self.failures.append(f"{label} ({name}): onnxio text != str(message)\n  {text_diff(expected, got)}"
                                 f"\n  input: {data[:80].hex()}{'...' if len(data) > 80 else ''} ({len(data)} bytes)")

    def check_msg(self, label, msg):
        self.check(label, msg.DESCRIPTOR.full_name, msg.SerializeToString(), str(msg))

    def report(self, what, limit=20):
        print(f"\n{what}: {self.count} texts compared, {len(self.failures)} differ")
        if self.failures:
            more = len(self.failures) - limit
            pytest.fail(f"{what}: {len(self.failures)} of {self.count} texts differ"
                        + (f" (first {limit} shown)" if more > 0 else "") + ":\n"
                        + "\n".join(self.failures[:limit]), pytrace=False)


# ---- real files -------------------------------------------------------------------


@pytest.mark.slow
def test_text_corpus():
    root = needs("shared-corpus")
    c = TextCases()
    t0 = time.monotonic()
    for path, cls in collect(root):
        c.check(str(path), cls.DESCRIPTOR.full_name, path.read_bytes())
    print(f"\nshared-corpus: {c.count} files in {time.monotonic() - t0:.1f} s")
    c.report("shared-corpus")


def test_text_libonnx_testdata():
    root = needs("libonnx-testdata")
    c = TextCases()
    t0 = time.monotonic()
    tensors = 0
    for path, cls in collect(root):
        # every model and every non-tensor file; a deterministic quarter of the tensors
        if cls is onnx.TensorProto:
            tensors += 1
            if tensors % 4:
                continue
        c.check(str(path), cls.DESCRIPTOR.full_name, path.read_bytes())
    print(f"\nlibonnx-testdata: {c.count} files in {time.monotonic() - t0:.1f} s")
    c.report("libonnx-testdata")


def test_text_onnx_backend_data():
    root = needs("onnx-backend-data")
    c = TextCases()
    for path, cls in collect(root):
        if cls is onnx.ModelProto:
            c.check(str(path), cls.DESCRIPTOR.full_name, path.read_bytes())
    c.report("onnx-backend-data models")


# ---- hand-built messages ------------------------------------------------------------

SPECIAL_FLOATS = [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.5, 1e-5, 1e-4, 123456.0, 1234567.0, 12345678.0,
    16777216.0, 16777217.0, 1e10, 1e21, 1e22, 1e-7, 3.14159265, 2.7182818, 100.0, 1e6, 999999.0, 9999999.0,
    1e-45, 1.4e-45, 1.17549435e-38, 1.1754942e-38, 3.4028234663852886e38, 3.4e38, -3.4028234663852886e38,
    float("inf"), float("-inf"), float("nan"), 0.1 + 0.2, 65504.0, 6.1035e-05, 5.96e-08,
]
SPECIAL_DOUBLES = [
    0.0, -0.0, 1.0, 0.1, 0.2, 0.1 + 0.2, 1 / 3, 2 / 3, 1e-7, 1e16, 1e17, 1e21, 1e22, 1e23, 2**53, 2**53 + 2.0,
    123456789012345678.0, 5e-324, 2.2250738585072014e-308, 2.2250738585072009e-308, 1.7976931348623157e308,
    float("inf"), float("-inf"), float("nan"), 3.141592653589793, 100.0, 1e100, 9007199254740993.0, 0.30000000000000004,
]


def random_bits(n, size, seed):
    rng = random.Random(seed)
    return [rng.getrandbits(8 * size).to_bytes(size, "little") for _ in range(n)]


def test_text_floats():
    """Floats and doubles: edge values, and random bit patterns (every
    exponent, denormals, NaN payloads of both signs) in the packed arrays
    and in singular fields."""
    c = TextCases()
    fl = b"".join(struct.pack("<f", v) for v in SPECIAL_FLOATS)
    db = b"".join(struct.pack("<d", v) for v in SPECIAL_DOUBLES)
    c.check("special floats", "onnx.TensorProto", ld(4, fl))
    c.check("special doubles", "onnx.TensorProto", ld(10, db))
    for v in SPECIAL_FLOATS:
        c.check(f"AttributeProto.f = {v!r}", "onnx.AttributeProto", tag(2, 5) + struct.pack("<f", v))
    rf = random_bits(4000, 4, 1)
    rd = random_bits(4000, 8, 2)
    # bit patterns with a small exponent range too (numbers near 1), so that
    # the %.6g / %.9g choice is exercised on ordinary values
    rng = random.Random(3)
    near = [struct.pack("<f", rng.uniform(-1000, 1000)) for _ in range(4000)]
    neard = [struct.pack("<d", rng.uniform(-1000, 1000)) for _ in range(4000)]
    specials = [bytes.fromhex(h) for h in ("0100a07f", "0000c0ff", "0100807f", "ffffffff", "01000000", "ffff7f00")]
    for i in range(0, 4000, 500):
        c.check(f"random float bits #{i}", "onnx.TensorProto", ld(4, b"".join(rf[i:i + 500])))
        c.check(f"random double bits #{i}", "onnx.TensorProto", ld(10, b"".join(rd[i:i + 500])))
        c.check(f"random floats near 1 #{i}", "onnx.AttributeProto", ld(7, b"".join(near[i:i + 500])))
        c.check(f"random doubles near 1 #{i}", "onnx.TensorProto", ld(10, b"".join(neard[i:i + 500])))
    c.check("NaN payloads and denormals", "onnx.TensorProto", ld(4, b"".join(specials)))
    c.report("floats")


def test_text_integers():
    c = TextCases()
    c.check_msg("int64 extremes", onnx.TensorProto(dims=[0, -1, 2**63 - 1, -(2**63)], int64_data=[-(2**63), 2**63 - 1]))
    c.check_msg("int32 extremes", onnx.TensorProto(data_type=-(2**31), int32_data=[2**31 - 1, -(2**31), -1, 0]))
    c.check_msg("uint64 extremes", onnx.TensorProto(uint64_data=[0, 1, 2**63, 2**64 - 1]))
    c.check_msg("int64 attribute", onnx.AttributeProto(i=-(2**63), ints=[0, -1, 2**63 - 1]))
    c.report("integers")


STRINGS = [
    "", "plain", "with space", "tab\there", "new\nline", "cr\rhere", "quote\"s", "apos'trophe", "back\\slash",
    "".join(chr(i) for i in range(32)) + "\x7f", "é", "héllo wörld", "中文字符", "🙂🚀", "\u200b\ufeff", "mixé\n\"中\"\\",
    "?? trigraph ??=", "%s %d %n", "\x00nul",
]
BAD_UTF8 = [b"\xff", b"\x80", b"\xc3", b"a\xc3", b"\xc3(", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
            b"\xe4\xb8", b"\xf0\x9f\x99", "é".encode() + b"\xff" + "中".encode(), b"\xef\xbf\xbf", b"\xf0\x9f\x99\x82\x80"]


def test_text_strings():
    """string fields (UTF-8 printed as is, control characters, quotes and
    backslashes escaped; bytes that are not UTF-8 escaped in octal) and bytes
    fields (every non-printable byte in octal)."""
    c = TextCases()
    for s in STRINGS:
        c.check_msg(f"name = {s!r}", onnx.TensorProto(name=s, doc_string=s))
        c.check_msg(f"s = {s!r} (bytes)", onnx.AttributeProto(name="a", s=s.encode(), strings=[s.encode(), b""]))
    for b in BAD_UTF8:
        c.check(f"string field holding {b!r}", "onnx.TensorProto", ld(8, b))
        c.check(f"repeated string holding {b!r}", "onnx.NodeProto", ld(1, b) + ld(1, b"ok"))
    every = bytes(range(256))
    c.check_msg("raw_data with every byte", onnx.TensorProto(raw_data=every))
    c.check_msg("string_data with every byte", onnx.TensorProto(string_data=[every, every[::-1]]))
    c.check_msg("MapProto.string_keys", onnx_data_pb2.MapProto(string_keys=[every, b"k"]))
    c.check("string field with every byte", "onnx.TensorProto", ld(8, every))
    c.report("strings")


def test_text_enums_and_unknown_fields():
    """Enum values print by name; values not in the enum are unknown fields,
    and unknown fields do not print."""
    c = TextCases()
    for v in onnx.AttributeProto.AttributeType.values():
        c.check_msg(f"AttributeProto.type = {v}", onnx.AttributeProto(name="x", type=v))
    for v in (0, 1):
        c.check_msg(f"data_location = {v}", onnx.TensorProto(data_location=v))
        c.check_msg(f"OperatorProto.status = {v}", onnx.onnx_operators_ml_pb2.OperatorProto(status=v))
    c.check("invalid enum values", "onnx.AttributeProto", tag(20, 0) + varint(99) + ld(1, b"n") + tag(20, 0) + varint(-1))
    c.check("invalid data_location", "onnx.TensorProto", tag(14, 0) + varint(7))
    unknown = (tag(99, 0) + varint(5) + tag(100, 1) + b"\x00" * 8 + ld(101, b"abc") + tag(102, 3) + tag(102, 4)
               + tag(103, 5) + b"\x00" * 4)
    c.check("unknown fields only", "onnx.ModelProto", unknown)
    c.check("unknown fields between known ones", "onnx.ModelProto",
            tag(1, 0) + varint(7) + unknown + ld(7, ld(2, b"g") + unknown) + unknown)
    c.report("enums and unknown fields")


@pytest.mark.parametrize("name", MESSAGE_IDS)
def test_text_filled_messages(name):
    """Every field of every message set (nested, empty sub-messages, each
    oneof member), printed."""
    c = TextCases()
    c.check_msg("empty", CLASSES[name]())
    for label, msg in filled_variants(name):
        c.check_msg(label, msg)
    c.report(name)


def test_text_nesting():
    c = TextCases()
    inner = onnx.GraphProto(name="inner", node=[onnx.NodeProto(op_type="Relu", input=["x"], output=["y"])])
    attr = onnx.AttributeProto(name="body", type=onnx.AttributeProto.GRAPH, g=inner)
    outer = onnx.GraphProto(name="outer", node=[onnx.NodeProto(op_type="Loop", attribute=[attr])])
    model = onnx.ModelProto(ir_version=10, graph=outer, opset_import=[onnx.OperatorSetIdProto(version=21)])
    c.check_msg("graph in an attribute", model)
    t = onnx.TypeProto()
    t.sequence_type.elem_type.map_type.value_type.optional_type.elem_type.tensor_type.shape.dim.add().dim_param = "N"
    c.check_msg("deep TypeProto", t)
    e = onnx.ModelProto()
    e.graph.SetInParent()
    e.graph.node.add()
    c.check_msg("empty sub-messages", e)
    c.report("nesting")


# ---- max_bytes_shown --------------------------------------------------------------

BYTES_PREFIXES = ("raw_data: ", "s: ", "strings: ", "string_data: ", "string_keys: ")


def abbreviation_message(n, text_len):
    """Messages whose every bytes field holds n bytes and whose string
    fields hold text_len characters."""
    payload = bytes((i * 37 + 11) & 0xFF for i in range(n))
    txt = ("abcdefghij" * (text_len // 10 + 1))[:text_len]
    t = onnx.TensorProto(name=txt, doc_string=txt, raw_data=payload, string_data=[payload, payload], dims=[n])
    a = onnx.AttributeProto(name=txt, s=payload, strings=[payload], t=t, doc_string=txt)
    node = onnx.NodeProto(name=txt, op_type=txt, attribute=[a], doc_string=txt)
    m = onnx.ModelProto(doc_string=txt, producer_name=txt,
                        graph=onnx.GraphProto(name=txt, node=[node], initializer=[t]))
    yield m
    yield onnx_data_pb2.MapProto(name=txt, string_keys=[payload, payload])


@pytest.mark.parametrize("limit", [1, 10, 64, 1000])
def test_max_bytes_shown(limit):
    """max_bytes_shown changes the lines of bytes fields longer than the
    limit (they then mention the full size) and nothing else: not shorter
    bytes fields, not string fields however long."""
    failures = []
    for n in sorted({0, 1, limit - 1, limit, limit + 1, 5000}):
        for msg in abbreviation_message(n, limit + 50):
            name = msg.DESCRIPTOR.full_name
            data = msg.SerializeToString()
            full = ox.text(name, data)
            short = ox.text(name, data, max_bytes_shown=limit)
            where = f"[{name}, bytes fields of {n} bytes, max_bytes_shown={limit}]"
            if full != str(msg):
                failures.append(f"{where} full text != str(message): {text_diff(str(msg), full)}")
            fl, sl = full.split("\n"), short.split("\n")
            if len(fl) != len(sl):
                failures.append(f"{where} {len(fl)} lines in full, {len(sl)} abbreviated")
                continue
            changed = 0
            for i, (a, b) in enumerate(zip(fl, sl)):
                is_long_bytes = a.lstrip().startswith(BYTES_PREFIXES) and n > limit
                if not is_long_bytes:
                    if a != b:
                        failures.append(f"{where} line {i + 1} changed but is not a bytes field longer "
                                        f"than the limit: full vs abbreviated at {line_diff(a, b)}")
                    continue
                changed += 1
                field = a.lstrip().split(":")[0]
                if a == b:
                    failures.append(f"{where} line {i + 1} ({field}, {n} bytes) is not abbreviated: {b[:200]!r}")
                elif not b.lstrip().startswith(field + ": ") or str(n) not in b:
                    failures.append(f"{where} line {i + 1}: abbreviated {field} should start with '{field}: ' "
                                    f"and give the size {n}: {b[:200]!r}")
                elif n >= 5000 and len(b) >= len(a):
                    failures.append(f"{where} line {i + 1}: abbreviated line is not shorter ({len(b)} vs {len(a)})")
            if n > limit and changed == 0:
                failures.append(f"{where} no bytes field line found (test bug)")
    if failures:
        pytest.fail(f"max_bytes_shown={limit}: {len(failures)} problems (first 30 shown):\n" + "\n".join(failures[:30]),
                    pytrace=False)
