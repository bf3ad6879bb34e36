"""The tag rules against protobuf's Python (upb), on mutated real models.

A tag is a varint of at most 5 bytes whose value fits 32 bits, with a
field number of at least 1 and a wire type of 0 to 5 (4, the end of a
group, only inside one). Each real model is cut into its fields down to
every sub-message (the onnx package's descriptors say which fields are
messages), one tag is rewritten (padded to 2..11 bytes with 0x80
continuation bytes, its field number set to 0, its wire type set to 4,
6 or 7, or a 5-byte tag past 32 bits) and the enclosing lengths are
fixed. onnx's `ModelProto.FromString` (upb) is the reference: onnxio
refuses exactly what it refuses, and what it accepts parses to the same
message (the same bytes when both serialize it).
"""
import random

import onnx
import pytest
from google.protobuf.message import DecodeError

import onnxio
from conftest import needs
from datafiles import CORPUS, LIBONNX_TESTDATA
from protobuild import varint

MODELS_PER_SOURCE = 40
MUTATIONS_PER_MODEL = 12


def _read_varint(data, i):
    v = shift = 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def _split(data, desc):
    """The fields of `data` (a message of type `desc`): a list of
    [tag value, tag bytes, value] where value is bytes, or for a
    sub-message a (descriptor, list) pair."""
    out, i = [], 0
    while i < len(data):
        start = i
        tag, i = _read_varint(data, i)
        tag_bytes = data[start:i]
        wt, number = tag & 7, tag >> 3
        if wt == 0:
            _, j = _read_varint(data, i)
        elif wt == 1:
            j = i + 8
        elif wt == 5:
            j = i + 4
        elif wt == 2:
            n, i = _read_varint(data, i)
            f = desc.fields_by_number.get(number)
            body = data[i:i + n]
            if f is not None and f.message_type is not None:
                out.append([tag, tag_bytes, (f.message_type, _split(body, f.message_type))])
            else:
                out.append([tag, tag_bytes, varint(n) + body])
            i += n
            continue
        else:
            raise ValueError(f"wire type {wt} in a real model")
        out.append([tag, tag_bytes, data[i:j]])
        i = j
    return out


def _join(fields):
    out = bytearray()
    for _tag, tag_bytes, value in fields:
        out += tag_bytes
        if isinstance(value, tuple):
            body = _join(value[1])
            out += varint(len(body)) + body
        else:
            out += value
    return bytes(out)


def _tags(fields, path=()):
    """Every tag's place: a path of indexes into the nested lists."""
    for k, (_tag, _b, value) in enumerate(fields):
        yield path + (k,)
        if isinstance(value, tuple):
            yield from _tags(value[1], path + (k,))


def _at(fields, path):
    for k in path[:-1]:
        fields = fields[k][2][1]
    return fields[path[-1]]


def _padded(value, size):
    """`value`'s varint padded to `size` bytes with 0x80 continuations."""
    enc = bytearray(varint(value))
    while len(enc) < size:
        enc[-1] |= 0x80
        enc.append(0)
    return bytes(enc)


def _mutations(tag):
    number, wt = tag >> 3, tag & 7
    yield "padded", [_padded(tag, n) for n in range(len(varint(tag)) + 1, 12)]
    yield "field 0", [varint(wt)]
    yield "wire types", [varint((number << 3) | w) for w in (4, 6, 7)]
    yield "past 32 bits", [varint(tag | (1 << 32)), varint(((1 << 29) << 3) | wt), varint(((1 << 29) - 1) << 3 | wt)]


def _reference(data):
    try:
        return onnx.ModelProto.FromString(data).SerializeToString()
    except DecodeError:
        return None


def _onnxio(data):
    try:
        return onnxio.ModelProto.FromString(data).SerializeToString()
    except onnxio.DecodeError:
        return None


def _models():
    picked = []
    for root, name in ((LIBONNX_TESTDATA, "libonnx-testdata"), (CORPUS, "shared-corpus")):
        if name == "libonnx-testdata":
            needs(name)
        elif not root.is_dir():
            continue  # a clone without ../shared
        files = sorted(p for p in root.rglob("*.onnx") if p.stat().st_size < (4 << 20))
        rng = random.Random(name)
        picked += rng.sample(files, min(MODELS_PER_SOURCE, len(files)))
    return picked


def test_tag_rules_match_upb_on_mutated_real_models():
    models = _models()
    assert models
    cases = refused = 0
    mismatches = []
    for path in models:
        data = path.read_bytes()
        try:
            fields = _split(data, onnx.ModelProto.DESCRIPTOR)
        except (ValueError, IndexError):
            continue
        assert _join(fields) == data, path  # the cut is exact
        places = list(_tags(fields))
        rng = random.Random(str(path.name))
        for place in rng.sample(places, min(MUTATIONS_PER_MODEL, len(places))):
            field = _at(fields, place)
            original = field[1]
            for kind, encodings in _mutations(field[0]):
                for enc in encodings:
                    field[1] = enc
                    mutated = _join(fields)
                    want, got = _reference(mutated), _onnxio(mutated)
                    cases += 1
                    refused += want is None
                    if (want is None) != (got is None) or (want is not None and want != got):
                        mismatches.append(f"{path.name}: {kind} {enc.hex()} at {place}: "
                                          f"upb {'refuses' if want is None else 'accepts'}, "
                                          f"onnxio {'refuses' if got is None else 'accepts'}"
                                          f"{'' if (want is None) != (got is None) else ' with other bytes'}")
            field[1] = original
    assert cases > 1000 and refused > 0 and refused < cases, (cases, refused)
    assert not mismatches, f"{len(mismatches)} of {cases}: " + "; ".join(mismatches[:10])


@pytest.mark.parametrize("tag, accepted", [
    (bytes([0x88, 0x80, 0x80, 0x80, 0x00]), True),          # 5 bytes: the longest a tag may be
    (bytes([0x88, 0x80, 0x80, 0x80, 0x80, 0x00]), False),   # 6 bytes
    (bytes([0x88] + [0x80] * 8 + [0x00]), False),          # 10 bytes: ir_version, read as a varint
    (bytes([0x88, 0x80, 0x80, 0x80, 0x10]), False),         # 5 bytes past 32 bits
    (bytes([0x00]), False),                                 # field 0
    (bytes([0x0e]), False),                                 # wire type 6
    (bytes([0x0f]), False),                                 # wire type 7
])
def test_tag_lengths_and_values(tag, accepted):
    data = tag + b"\x07"
    assert (_reference(data) is not None) == accepted  # the reference agrees with the table
    if accepted:
        assert onnxio.ModelProto.FromString(data).ir_version == 7
    else:
        with pytest.raises(onnxio.DecodeError):
            onnxio.ModelProto.FromString(data)
