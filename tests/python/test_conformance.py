"""Byte-for-byte conformance on real files: every model (.onnx) and every
test-data file (.pb) of libonnx-testdata, of the onnx package's backend test
data and of ../shared/corpus goes through onnxio (parse + serialize) and must
come back as libprotobuf writes it (the `onnx` package's classes:
Message.FromString(b).SerializeToString()), and as the original bytes when
the file is canonical.

A file whose original bytes differ from libprotobuf's own re-serialization
(non-canonical: fields out of order, unpacked packed fields, repeated
singular fields, unknown enum values ...) cannot come back as both. The
contract (docs/design.md "Wire rules") is libprotobuf's bytes, so there onnxio
must equal libprotobuf's re-serialization; such files are listed separately
(with whether onnxio happened to keep the original bytes) rather than failed.

One test per data source (there are thousands of files), each printing how
many files of which message type it checked and failing with every
mismatching file, its first differing offset and hex context.
"""
import time
from collections import Counter

import pytest

import onnxio_ctypes as ox
from conftest import needs
from datafiles import SOURCES, collect


def check_file(path, cls, noncanonical, failures):
    data = path.read_bytes()
    name = cls.DESCRIPTOR.full_name
    try:
        ref = cls.FromString(data).SerializeToString()
    except Exception as e:  # noqa: BLE001
        failures.append(f"{path}: libprotobuf cannot parse it as {name}: {e}")
        return
    for no_copy in (False, True):
        mode = "no_copy" if no_copy else "copy"
        try:
            got = ox.roundtrip(name, data, no_copy=no_copy)
        except ox.OnnxioError as e:
            failures.append(f"{path} ({name}, {mode}): onnxio failed: {e}")
            return
        if got != ref:
            failures.append(f"{path} ({name}, {mode}): onnxio != libprotobuf re-serialization\n  "
                            + ox.describe_diff(ref, got, "libprotobuf", "onnxio"))
            return
    if ref != data:
        kept = "onnxio kept the original bytes" if got == data else "onnxio wrote libprotobuf's bytes"
        noncanonical.append(f"{path} ({name}): original != libprotobuf re-serialization; {kept}\n  "
                            + ox.describe_diff(data, ref, "original", "libprotobuf"))


@pytest.mark.parametrize("source", list(SOURCES))
def test_conformance(source):
    root = needs(source)
    ox.lib()
    t0 = time.monotonic()
    files = collect(root)
    assert files, f"no .onnx or .pb files under {root}"
    counts = Counter(cls.DESCRIPTOR.name for _, cls in files)
    failures, noncanonical = [], []
    nbytes = 0
    for path, cls in files:
        nbytes += path.stat().st_size
        check_file(path, cls, noncanonical, failures)
    dt = time.monotonic() - t0
    print(f"\n{source}: {len(files)} files ({nbytes / 1e6:.1f} MB) checked in {dt:.1f} s from {root}: "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if noncanonical:
        print(f"{source}: {len(noncanonical)} non-canonical files (onnxio equals libprotobuf there):")
        for line in noncanonical:
            print("  " + line)
    if failures:
        pytest.fail(f"{source}: {len(failures)} of {len(files)} files do not round-trip:\n" + "\n".join(failures),
                    pytrace=False)


def test_noncanonical_file_is_reported_not_failed(tmp_path):
    """The non-canonical path of check_file: a model whose fields are out of
    order and whose packed field is unpacked. libprotobuf rewrites it; onnxio
    must write what libprotobuf writes, and the file is listed, not failed."""
    import onnx

    t = onnx.TensorProto(name="w", data_type=1, dims=[2], float_data=[1.0, 2.0])
    g = onnx.GraphProto(name="g", initializer=[t])
    canonical = onnx.ModelProto(ir_version=9, graph=g).SerializeToString()
    tensor = (b"\x42\x01w" + b"\x10\x01" + b"\x08\x02"  # name, data_type, dims: out of order
              + b"\x25\x00\x00\x80\x3f" + b"\x25\x00\x00\x00\x40")  # float_data unpacked
    graph = b"\x12\x01g" + b"\x2a" + bytes([len(tensor)]) + tensor
    data = b"\x3a" + bytes([len(graph)]) + graph + b"\x08\x09"  # graph before ir_version
    assert onnx.ModelProto.FromString(data).SerializeToString() == canonical
    path = tmp_path / "noncanonical.onnx"
    path.write_bytes(data)
    noncanonical, failures = [], []
    check_file(path, onnx.ModelProto, noncanonical, failures)
    assert not failures, "\n".join(failures)
    assert len(noncanonical) == 1 and "onnxio wrote libprotobuf's bytes" in noncanonical[0], noncanonical
