"""onnxio's schema tables (src/schema.def via onnxio_all_messages and
onnxio_all_enums) against the published .proto files, both ways: every
message, field and enum of the .proto files is in onnxio with the same
number, type, label, oneof and packing, and onnxio has nothing more.

References: the .proto files the installed `onnx` package ships (onnx
1.23.2), compared exactly; and ../shared/spec/*.proto (the published ONNX
1.23.0 schema: a clone without ../shared skips that comparison), compared
exactly but for the two TensorProto.DataType values onnx 1.23.2 added
after it, FLOAT6E2M3 = 27 and FLOAT6E3M2 = 28 (onnxio follows the package
its users run).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

import onnxio_ctypes as ox
from conftest import missing, needs

PROTO_FILES = ["onnx-ml.proto", "onnx-data.proto", "onnx-operators-ml.proto"]
FDP = descriptor_pb2.FieldDescriptorProto

KIND_TO_TYPE = {
    "INT32": FDP.TYPE_INT32,
    "INT64": FDP.TYPE_INT64,
    "UINT64": FDP.TYPE_UINT64,
    "FLOAT": FDP.TYPE_FLOAT,
    "DOUBLE": FDP.TYPE_DOUBLE,
    "STRING": FDP.TYPE_STRING,
    "BYTES": FDP.TYPE_BYTES,
    "RAW": FDP.TYPE_BYTES,  # TensorProto.raw_data: a bytes field kept as a payload span
    "ENUM": FDP.TYPE_ENUM,
    "MESSAGE": FDP.TYPE_MESSAGE,
}
TYPE_NAMES = {v: k for k, v in FDP.Type.items()}


def spec_dir():
    return ox.SHARED / "spec"


def package_proto_dir():
    import onnx
    return Path(onnx.__file__).parent


def compile_protos(src_dir, tmp_path):
    """The FileDescriptorSet of the three .proto files of src_dir, laid out
    as onnx/*.proto (they import "onnx/onnx-ml.proto")."""
    needs("grpc_tools", "its protoc compiles the .proto files")
    inc = tmp_path / "inc"
    (inc / "onnx").mkdir(parents=True)
    for f in PROTO_FILES:
        shutil.copyfile(src_dir / f, inc / "onnx" / f)
    out = tmp_path / "schema.desc"
    cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{inc}", f"--descriptor_set_out={out}",
           "--include_imports"] + [f"onnx/{f}" for f in PROTO_FILES]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"protoc failed ({' '.join(cmd)}):\n{r.stdout}\n{r.stderr}"
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(out.read_bytes())
    names = sorted(f.name for f in fds.file)
    assert names == sorted(f"onnx/{f}" for f in PROTO_FILES), names
    return fds


def proto_tables(fds):
    """({full_name: message info}, {full_name: [(value, number), ...]}) of a
    FileDescriptorSet; nested messages and enums included."""
    messages, enums = {}, {}

    def add_enum(prefix, e):
        enums[f"{prefix}.{e.name}"] = [(v.name, v.number) for v in e.value]

    def add_message(prefix, m):
        full = f"{prefix}.{m.name}"
        fields = []
        for f in m.field:
            oneof = None
            # proto3_optional synthetic oneofs do not occur in proto2, but be exact.
            if f.HasField("oneof_index") and not f.proto3_optional:
                oneof = m.oneof_decl[f.oneof_index].name
            fields.append({
                "name": f.name,
                "number": f.number,
                "type": f.type,
                "type_name": f.type_name.lstrip(".") if f.type_name else None,
                "label": f.label,
                "oneof": oneof,
                "packed": f.options.packed if f.options.HasField("packed") else False,
            })
        messages[full] = {"fields": fields, "oneofs": [o.name for o in m.oneof_decl]}
        for n in m.nested_type:
            add_message(full, n)
        for e in m.enum_type:
            add_enum(full, e)

    for f in fds.file:
        assert f.syntax in ("", "proto2"), f"{f.name}: syntax {f.syntax!r}, expected proto2"
        for m in f.message_type:
            add_message(f.package, m)
        for e in f.enum_type:
            add_enum(f.package, e)
    return messages, enums


def onnxio_field_as_proto(f):
    """An onnxio field descriptor in the terms of FieldDescriptorProto."""
    kind, label = f["kind"], f["label"]
    type_name = f["message"] if kind == "MESSAGE" else f["enum"] if kind == "ENUM" else None
    return {
        "name": f["name"],
        "number": f["number"],
        "type": KIND_TO_TYPE.get(kind, f"unknown kind {kind}"),
        "type_name": type_name,
        "label": FDP.LABEL_REPEATED if label in ("REPEATED", "PACKED") else FDP.LABEL_OPTIONAL,
        "oneof": f["oneof_name"] if label == "ONEOF" else None,
        "packed": label == "PACKED",
    }


def fmt_field(f):
    t = TYPE_NAMES.get(f["type"], f["type"])
    if f["type_name"]:
        t += f"({f['type_name']})"
    lab = {FDP.LABEL_OPTIONAL: "optional", FDP.LABEL_REPEATED: "repeated",
           FDP.LABEL_REQUIRED: "required"}.get(f["label"], f["label"])
    s = f"{lab} {t} {f['name']} = {f['number']}"
    if f["packed"]:
        s += " [packed]"
    if f["oneof"]:
        s += f" (oneof {f['oneof']})"
    return s


# What onnx 1.23.2 has beyond the published 1.23.0 schema (see the docstring).
NEWER_THAN_SPEC = {"onnx.TensorProto.DataType": {("FLOAT6E2M3", 27), ("FLOAT6E3M2", 28)}}


def compare(fds, source, allowed_extra=None):
    """Every difference between the .proto tables and onnxio's, as lines."""
    pmsgs, penums = proto_tables(fds)
    omsgs = {m["full_name"]: m for m in ox.all_messages()}
    oenums = {e["full_name"]: e for e in ox.all_enums()}
    errors = []
    if len(omsgs) != len(ox.all_messages()):
        errors.append("onnxio_all_messages lists a message twice")
    if len(oenums) != len(ox.all_enums()):
        errors.append("onnxio_all_enums lists an enum twice")

    for name in sorted(set(pmsgs) - set(omsgs)):
        errors.append(f"message {name}: in {source}, missing in onnxio")
    for name in sorted(set(omsgs) - set(pmsgs)):
        errors.append(f"message {name}: in onnxio, not in {source}")
    for name in sorted(set(pmsgs) & set(omsgs)):
        pm, om = pmsgs[name], omsgs[name]
        pf = {f["number"]: f for f in pm["fields"]}
        of = {}
        for f in om["fields"]:
            if f["number"] in of:
                errors.append(f"{name}: onnxio lists field number {f['number']} twice")
            of[f["number"]] = onnxio_field_as_proto(f)
        for num in sorted(set(pf) - set(of)):
            errors.append(f"{name}: field {fmt_field(pf[num])} missing in onnxio")
        for num in sorted(set(of) - set(pf)):
            errors.append(f"{name}: onnxio has field {fmt_field(of[num])}, not in {source}")
        for num in sorted(set(pf) & set(of)):
            if pf[num] != of[num]:
                errors.append(f"{name}: field {num}: {source}: {fmt_field(pf[num])}; onnxio: {fmt_field(of[num])}")
        # oneof groups: members of one proto oneof share one onnxio id, and
        # different oneofs have different ids.
        groups = {}
        for f in om["fields"]:
            if f["label"] == "ONEOF" or f["oneof"] or f["oneof_name"]:
                if f["label"] != "ONEOF" or not f["oneof"] or not f["oneof_name"]:
                    errors.append(f"{name}.{f['name']}: inconsistent oneof data: label {f['label']}, "
                                  f"oneof id {f['oneof']}, oneof_name {f['oneof_name']!r}")
                groups.setdefault(f["oneof_name"], set()).add(f["oneof"])
        for oname, ids in groups.items():
            if len(ids) != 1:
                errors.append(f"{name}: members of oneof {oname} have different onnxio ids {sorted(ids)}")
        for oname in pm["oneofs"]:
            if oname not in groups:
                errors.append(f"{name}: oneof {oname} has no members in onnxio")
        all_ids = [next(iter(ids)) for ids in groups.values() if len(ids) == 1]
        if len(all_ids) != len(set(all_ids)):
            errors.append(f"{name}: two oneofs share an onnxio oneof id: {groups}")

    for name in sorted(set(penums) - set(oenums)):
        errors.append(f"enum {name}: in {source}, missing in onnxio")
    for name in sorted(set(oenums) - set(penums)):
        errors.append(f"enum {name}: in onnxio, not in {source}")
    for name in sorted(set(penums) & set(oenums)):
        pv, ov = penums[name], oenums[name]["values"]
        allowed = (allowed_extra or {}).get(name, set())
        if allowed:
            ov = [v for v in ov if tuple(v) not in allowed]
            if len(ov) + len(allowed) != len(oenums[name]["values"]):
                errors.append(f"enum {name}: onnxio lacks values of onnx 1.23.2 {sorted(allowed)}")
        if pv != ov:
            missing = [v for v in pv if v not in ov]
            extra = [v for v in ov if v not in pv]
            errors.append(f"enum {name}: values differ: missing in onnxio {missing}, extra in onnxio {extra}"
                          + ("" if missing or extra else " (order differs)"))
    return errors


def test_schema_matches_spec(tmp_path):
    d = needs("shared-spec", "test_schema_matches_onnx_package compares with the onnx package's .proto files")
    assert d == spec_dir()
    absent = [f for f in PROTO_FILES if not (d / f).exists()]
    assert not absent, f"{d} lacks {absent}"
    fds = compile_protos(d, tmp_path)
    errors = compare(fds, "spec", allowed_extra=NEWER_THAN_SPEC)
    if errors:
        pytest.fail(f"onnxio's schema differs from {d} ({len(errors)}):\n" + "\n".join(errors), pytrace=False)


def test_schema_matches_onnx_package(tmp_path):
    d = package_proto_dir()
    if not all((d / f).exists() for f in PROTO_FILES):
        missing("onnx .proto files", f"none in {d}")
    fds = compile_protos(d, tmp_path)
    import onnx
    errors = compare(fds, f"onnx {onnx.__version__} package")
    if errors:
        pytest.fail(f"onnxio's schema differs from {d} ({len(errors)}):\n" + "\n".join(errors), pytrace=False)


def test_descriptor_tables_are_consistent():
    """Invariants proto.h states: fields in ascending number order, index is
    the position (has-bit index, < 64), C names are the proto names with
    '_' for '.', members in field order inside the struct, lookups by every
    name spelling work."""
    errors = []
    header = 48  # sizeof(onnxio_message) on LP64: desc, has, cached_size, unknown{data,size,capacity}
    for m in ox.all_messages():
        full = m["full_name"]
        expect_c = full[len("onnx."):].replace(".", "_") if full.startswith("onnx.") else None
        if m["name"] != expect_c:
            errors.append(f"{full}: C name {m['name']!r}, expected {expect_c!r}")
        nums = [f["number"] for f in m["fields"]]
        if nums != sorted(nums) or len(set(nums)) != len(nums):
            errors.append(f"{full}: field numbers not strictly ascending: {nums}")
        if len(m["fields"]) > 64:
            errors.append(f"{full}: {len(m['fields'])} fields do not fit 64 has-bits")
        prev = header - 1
        for i, f in enumerate(m["fields"]):
            if f["index"] != i:
                errors.append(f"{full}.{f['name']}: index {f['index']}, expected {i}")
            if not (prev < f["offset"] < m["size"]):
                errors.append(f"{full}.{f['name']}: offset {f['offset']} not after {prev} and inside size {m['size']}")
            prev = f["offset"]
            if (f["kind"] == "MESSAGE") != (f["message"] is not None):
                errors.append(f"{full}.{f['name']}: kind {f['kind']} with message {f['message']}")
            if (f["kind"] == "ENUM") != (f["enum"] is not None):
                errors.append(f"{full}.{f['name']}: kind {f['kind']} with enum {f['enum']}")
            if f["kind"] == "RAW" and (full, f["name"]) != ("onnx.TensorProto", "raw_data"):
                errors.append(f"{full}.{f['name']}: kind RAW is only for TensorProto.raw_data")
            if f["label"] == "PACKED" and f["kind"] not in ("INT32", "INT64", "UINT64", "FLOAT", "DOUBLE", "ENUM"):
                errors.append(f"{full}.{f['name']}: PACKED {f['kind']}")
        short = full[len("onnx."):]
        for spelling in (full, short, m["name"]):
            try:
                d = ox.desc(spelling)
                if d.contents.full_name.decode() != full:
                    errors.append(f"onnxio_message_desc_by_name({spelling!r}) gave {d.contents.full_name!r}")
            except KeyError as e:
                errors.append(str(e))
    for bogus in ("", "onnx.", "NoSuchProto", "onnx.TensorProto.Nope", "TensorProto.", ".TensorProto"):
        if ox.lib().onnxio_message_desc_by_name(bogus.encode()):
            errors.append(f"onnxio_message_desc_by_name({bogus!r}) is not NULL")
    for e in ox.all_enums():
        full = e["full_name"]
        expect_c = full[len("onnx."):].replace(".", "_")
        if e["name"] != expect_c:
            errors.append(f"enum {full}: C name {e['name']!r}, expected {expect_c!r}")
        for vname, num in e["values"]:
            got = ox.enum_value_name(full, num)
            if got != vname:
                errors.append(f"onnxio_enum_value_name({full}, {num}) = {got!r}, expected {vname!r}")
        for bad in (-1, 1000, 2**31 - 1):
            if bad not in [v for _, v in e["values"]] and ox.enum_value_name(full, bad) is not None:
                errors.append(f"onnxio_enum_value_name({full}, {bad}) is not NULL")
    if errors:
        pytest.fail(f"{len(errors)} problems in the descriptor tables:\n" + "\n".join(errors), pytrace=False)
