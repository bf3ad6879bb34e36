#!/usr/bin/env python3
"""Atheris fuzz target for the onnxio Python package (scripts/fuzz.sh runs it
for FUZZ_SECONDS with the C fuzzers' seeds; docs/fuzzing.md).

It fuzzes the package as installed in .venv (``make python-install``), not
the tree's python/ folder: what users import. Every input is

- loaded as a ModelProto (``onnxio.load_model_from_string``), in copy and
  in no_copy mode (bytes that start like a zip archive load as .onnxz);
- parsed as a TensorProto (``TensorProto.FromString``), the whole input and,
  when it starts with the byte 1 (the tensor seeds of make_seeds.sh), the
  rest of it;
- loaded as a ModelProto in the text formats (``format="textproto"`` and
  ``"json"``).

Whatever loads goes through SerializeToString (which must give bytes that
parse back and serialize to the same bytes), ByteSize, str(), == (with the
re-parsed copy), copy.deepcopy, a pickle round trip, and the
external_data_helper reads (ExternalDataInfo, load_external_data_for_model /
_for_tensor) with base_dir a private empty temporary directory, so that no
input can read a file. A walk of every field (ListFields, WhichOneof, the
values, numpy_helper.to_array of every tensor) reads the whole tree through
the extension; being instrumented, it also gives atheris coverage that tells
models of different shapes apart (the C extension itself is not
instrumented), so the corpus keeps varied models, not only tiny inputs.

Only the package's documented exceptions may come out: DecodeError,
ArchiveError, ExternalDataError, EncodeError (all ValueErrors), OSError
(FileNotFoundError for the data files the empty directory lacks),
MemoryError, ValueError; numpy_helper.to_array may also raise what its
docstring (and onnx's) says: TypeError for data_type UNDEFINED, KeyError for
a number that is no data type. Anything else (TypeError, SystemError,
RecursionError, a broken invariant's AssertionError), a crash or a hang
(-timeout) is a finding: atheris writes the input to -artifact_prefix and
exits non-zero.

    .venv/bin/python tests/fuzz/fuzz_python.py -max_total_time=60 CORPUS SEEDS...
"""
import copy
import os
import pickle
import sys
import tempfile
import warnings

import atheris

with atheris.instrument_imports():
    import onnxio
    import onnxio.external_data_helper as xed
    import onnxio.numpy_helper  # noqa: F401  (imported by the helpers; instrumented with them)

# ONNXIO_FUZZ_ANY_PACKAGE=1: fuzz whatever onnxio is importable (an ASan and
# coverage build of the package, docs/fuzzing.md).
if "site-packages" not in os.path.dirname(onnxio.__file__) and os.environ.get("ONNXIO_FUZZ_ANY_PACKAGE") != "1":
    sys.exit(f"fuzz_python: onnxio imported from {onnxio.__file__}, not the installed package (make python-install)")

# The documented exceptions (onnxio/__init__.py's docstring). DecodeError,
# ArchiveError, ExternalDataError and EncodeError are ValueErrors; they are
# listed for the reader.
ALLOWED = (onnxio.DecodeError, onnxio.ArchiveError, onnxio.ExternalDataError, onnxio.EncodeError, OSError,
           MemoryError, ValueError)

EMPTY_DIR = tempfile.mkdtemp(prefix="onnxio-fuzz-")


# numpy_helper.to_array's documented exceptions, on top of ALLOWED.
TO_ARRAY_ALLOWED = ALLOWED + (TypeError, KeyError)

# protobuf's FieldDescriptor constants (onnxio's descriptors have them too).
TYPE_MESSAGE = onnxio.FieldDescriptor.TYPE_MESSAGE
TYPE_BYTES = onnxio.FieldDescriptor.TYPE_BYTES
TYPE_STRING = onnxio.FieldDescriptor.TYPE_STRING


@atheris.instrument_func
def walk(root):
    """Reads every set field of the tree (a heap stack: any depth)."""
    stack = [root]
    while stack:
        msg = stack.pop()
        for oneof in msg.DESCRIPTOR.oneofs:
            name = msg.WhichOneof(oneof.name)
            assert name is None or msg.HasField(name)
        for fd, value in msg.ListFields():
            if fd.type == TYPE_MESSAGE:
                if fd.is_repeated:
                    assert len(value) == len(list(value))
                    stack.extend(value)
                else:
                    assert msg.HasField(fd.name)
                    stack.append(value)
            elif fd.is_repeated:
                assert len(list(value)) == len(value) > 0
            elif fd.type in (TYPE_BYTES, TYPE_STRING):
                assert isinstance(value, (bytes, str))
        if isinstance(msg, onnxio.TensorProto):
            try:
                array = onnxio.numpy_helper.to_array(msg, base_dir=EMPTY_DIR)
            except TO_ARRAY_ALLOWED:
                pass
            else:
                assert array.shape == tuple(msg.dims) or msg.data_type == onnxio.TensorProto.STRING


def check_empty_dir():
    # The helpers only read: the private directory stays empty.
    assert not os.listdir(EMPTY_DIR), os.listdir(EMPTY_DIR)


def attempt(f, *args, **kwargs):
    """f(...), or None when it raises a documented exception."""
    try:
        return f(*args, **kwargs)
    except ALLOWED:
        return None


def again_without_unknown(msg):
    """msg's bytes without unknown fields (the text formats do not carry them)."""
    dup = copy.deepcopy(msg)
    dup.DiscardUnknownFields()
    return dup.SerializeToString()


def exercise(msg):
    """Every operation on a message that loaded; invariants are asserts."""
    cls = type(msg)
    data = attempt(msg.SerializeToString)
    if data is not None:
        # What onnxio writes, it reads back (the same default max_depth), and
        # writing the re-read message gives the same bytes.
        again = cls.FromString(data)
        assert again.SerializeToString() == data
        assert again == msg and not (again != msg)
        assert msg.ByteSize() == len(data)
        restored = pickle.loads(pickle.dumps(msg))
        assert type(restored) is cls and restored.SerializeToString() == data
    else:
        attempt(msg.ByteSize)
        attempt(pickle.dumps, msg)
    assert msg == msg
    walk(msg)
    text = attempt(str, msg)
    assert text is None or isinstance(text, str)
    for fmt in ("textproto", "json"):
        # Writing text fails only for a payload never loaded (EncodeError);
        # what is written reads back to the same bytes, unless it holds a
        # string that is not UTF-8 (written escaped, refused on reading, as
        # protobuf does) or a NaN (its payload bits are not written).
        written = attempt(onnxio._formats._format_text, fmt, msg)
        if written is not None and data is not None:
            back = attempt(onnxio._formats._parse_text, fmt, written, cls)
            if back is not None and "nan" not in written.decode().lower():
                assert back.SerializeToString() == again_without_unknown(msg), fmt
    dup = attempt(copy.deepcopy, msg)
    if dup is not None:
        assert dup == msg
        if data is not None:
            assert dup.SerializeToString() == data


def external_reads(msg):
    """The external_data_helper reads, from an empty directory: they may
    only refuse (or find no file)."""
    tensors = [msg] if isinstance(msg, onnxio.TensorProto) else attempt(list, xed._get_all_tensors(msg)) or []
    for t in tensors:
        attempt(xed.ExternalDataInfo, t)
        if xed.uses_external_data(t):
            attempt(xed.load_external_data_for_tensor, t, EMPTY_DIR)
    if isinstance(msg, onnxio.ModelProto):
        attempt(xed.load_external_data_for_model, msg, EMPTY_DIR)
    check_empty_dir()


def TestOneInput(data: bytes) -> None:  # noqa: N802 (atheris' name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExternalDataInfo warns about unknown keys, as onnx
        for no_copy in (False, True):
            model = attempt(onnxio.load_model_from_string, data, no_copy=no_copy)
            if model is not None:
                exercise(model)
                external_reads(model)
        blobs = [data]
        if data[:1] == b"\x01":
            blobs.append(data[1:])
        for blob in blobs:
            tensor = attempt(onnxio.TensorProto.FromString, blob)
            if tensor is not None:
                exercise(tensor)
                external_reads(tensor)
        for fmt in ("textproto", "json"):
            model = attempt(onnxio.load_model_from_string, data, format=fmt)
            if model is not None:
                exercise(model)


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
