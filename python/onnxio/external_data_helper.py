"""onnxio.external_data_helper: the functions of ``onnx.external_data_helper``
over onnxio's messages.

External data (ONNX IR, "External Data"): a tensor with data_location =
EXTERNAL keeps its payload in a file named by its external_data entry
"location", relative to the model's directory, at "offset" for "length" bytes
(both optional). These functions mark tensors external, write their payloads
to such files, and read them back, with the results of onnx 1.23: the same
files, byte for byte, and the same model bytes.

One policy: every rule of external data is the C library's, the same one
``onnxio.load`` and ``onnxio.save`` apply (docs/security.md); nothing here
checks a path or parses a key itself.

- The keys (ExternalDataInfo) are read by ``onnxio_external_ref_parse``:
  offset and length are plain decimal numbers (digits only: "+0", " 1",
  "0x10" and negative numbers are refused), the location is checked by
  ``onnxio_check_location``: not empty, relative, no ".." component ("a..b"
  is a name, unlike onnx, which refuses any ".." substring).
- Reading a tensor's data (load_external_data_for_tensor / _for_model,
  numpy_helper.to_array) goes through the library's loader: the file is
  reached from base_dir one component at a time, a symlink is followed only
  while it stays under base_dir (onnx refuses every symlink), anything but a
  regular file (a FIFO, a device, a socket, a directory) is refused without
  being opened (the walk of ``onnxio_external_data_open``, which the writer
  below uses too), a file with other hard links is refused, offset and length are checked against the file's size and
  against the tensor's data_type and dims, all before anything is allocated
  or read.
- Writing (save_external_data, which appends) opens the data file with
  ``onnxio_external_data_open`` in append mode: the same checks, the file
  created when missing.

A refused location, file or range raises ExternalDataError (a
ValueError; onnx raises its checker's ValidationError for the same
refusals, which this module also names ValidationError), a missing file
FileNotFoundError, another failure of the operating system OSError.

What the standalone helpers cannot know: they get only base_dir, not the
model file's path, so a location naming the model file itself is not
refused here (``onnxio.load`` refuses it, knowing the model's path). Run
them on models whose locations you trust for that, or load through
``onnxio.load``.

Payloads are written from and read into memory without extra copies where
the extension allows it (the payload view of numpy_helper).
"""

from __future__ import annotations

import os
import re
import sys
import uuid
import warnings
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from onnxio import _dtypes
from onnxio import _onnxio as _C

AttributeProto = _C.AttributeProto
FunctionProto = _C.FunctionProto
GraphProto = _C.GraphProto
ModelProto = _C.ModelProto
TensorProto = _C.TensorProto

ExternalDataError = _C.ExternalDataError


# onnx's name for the same failures (onnx.checker.ValidationError).
ValidationError = ExternalDataError

# Only the keys of the spec are read from external_data; others are warned
# about and ignored (onnx's defence against attribute injection). "basepath"
# is kept because set_external_data writes it.
_ALLOWED_EXTERNAL_DATA_KEYS = frozenset({"location", "offset", "length", "checksum", "basepath"})
_SORTED_ALLOWED_KEYS = sorted(_ALLOWED_EXTERNAL_DATA_KEYS)
_MAX_UNKNOWN_KEYS_IN_WARNING = 10
_MAX_KEY_DISPLAY_LENGTH = 100

# The largest alignment gap save_external_data accepts before a tensor.
_MAX_EXTERNAL_DATA_PADDING = 64 * 1024

# sys.getsizeof of a bytes object is its length plus this header; onnx's
# size_threshold compares sys.getsizeof(tensor.raw_data), and onnxio gets the
# same decision from the payload's length without copying the payload.
_BYTES_OVERHEAD = sys.getsizeof(b"")


class ExternalDataInfo:
    """The external_data entries of a tensor as attributes, as onnx's class:
    location (str), offset and length (int, or None when the key is
    absent), checksum (str or None), basepath (str, "" when absent).

    The values are the library's reading of the keys
    (``onnxio_external_ref_parse``; the last of a repeated key counts).
    Raises ExternalDataError (a ValueError, as onnx raises ValueError for a
    negative offset or length) for a missing or refused location (empty,
    absolute, a ".." component) and an offset or length that is not a plain
    decimal number. Warns about and ignores keys other than location,
    offset, length, checksum and basepath (onnx's defence against
    attribute injection)."""

    def __init__(self, tensor: Any) -> None:
        self.location = ""
        self.offset: Any = None
        self.length: Any = None
        self.checksum = None
        self.basepath = ""

        unknown_keys: set[str] = set()
        unknown_key_count = 0
        present: set[str] = set()
        for entry in tensor.external_data:
            key = entry.key
            if key in _ALLOWED_EXTERNAL_DATA_KEYS:
                present.add(key)
                if key == "basepath":  # onnx's own key: not read by the library
                    self.basepath = entry.value
            else:
                unknown_key_count += 1
                if len(unknown_keys) < _MAX_UNKNOWN_KEYS_IN_WARNING:
                    if isinstance(key, bytes):  # a parsed key that is not UTF-8 (upb gives bytes too)
                        key = key.decode("utf-8", "backslashreplace")
                    truncated = key[:_MAX_KEY_DISPLAY_LENGTH]
                    if len(key) > _MAX_KEY_DISPLAY_LENGTH:
                        truncated += "..."
                    unknown_keys.add(truncated)

        if unknown_keys:
            shown = sorted(unknown_keys)
            extra = unknown_key_count - len(shown)
            key_list = repr(shown)
            if extra > 0:
                key_list += f" and {extra} more"
            warnings.warn(
                f"Ignoring unknown external data key(s) {key_list} "
                f"for tensor {tensor.name!r}. "
                f"Allowed keys: {_SORTED_ALLOWED_KEYS}",
                stacklevel=2,
            )

        location, offset, length, checksum = _C._external_ref_parse(tensor)
        self.location = location
        self.offset = offset if "offset" in present else None
        self.length = length
        self.checksum = checksum


def _payload(tensor: Any) -> Any:
    return _dtypes._raw_payload(tensor)


def _base(base_dir: Any) -> str:
    """The directory the library resolves locations under: "" (what onnx's
    to_array defaults to) is the current directory."""
    return os.fsdecode(base_dir) if base_dir not in ("", b"", None) else "."


# Payloads of at least this many bytes are read on the library's thread
# pool (one thread per core); smaller ones on the calling thread, since
# starting a pool for each of thousands of small tensors costs more than
# their reads.
_PARALLEL_READ_BYTES = 16 << 20


def _load_tensor(tensor: Any, base_dir: Any) -> None:
    """The library's loader on one external tensor (every check in it)."""
    try:
        size = _C._tensor_raw_size(tensor)
    except ValueError:  # a negative dim: the loader refuses it with its own message
        size = None
    threads = 0 if size is not None and size >= _PARALLEL_READ_BYTES else 1
    _C._load_tensor_external_data(tensor, _base(base_dir), num_threads=threads)


def _read_external_data_bytes(tensor: Any, base_dir: str) -> Any:
    """The bytes of `tensor`'s external data (a memoryview), read by the
    library's loader from under base_dir with all its checks; the tensor is
    not changed (a scratch copy, marked external, is loaded)."""
    scratch = TensorProto()
    scratch.CopyFrom(tensor)
    scratch.ClearField("raw_data")
    scratch.data_location = TensorProto.EXTERNAL
    _load_tensor(scratch, base_dir)
    payload = _payload(scratch)
    return payload if payload is not None else b""


def load_external_data_for_tensor(tensor: Any, base_dir: str) -> None:
    """Read `tensor`'s external data from under base_dir into raw_data;
    then data_location is DEFAULT and external_data is empty. A raw_data
    the tensor already had is replaced. Everything is checked before
    anything is read (see the module doc); a refused tensor is left as it
    was.

    Raises ExternalDataError / FileNotFoundError / OSError (see the module
    doc)."""
    if uses_external_data(tensor):
        # The loader checks every key, the path and the range before it
        # touches the tensor, and reads the payload straight into it.
        _load_tensor(tensor, base_dir)
    else:
        # onnx reads the keys whatever data_location says.
        _dtypes._set_raw_data(tensor, _read_external_data_bytes(tensor, base_dir))
    tensor.data_location = TensorProto.DEFAULT  # present, as onnx leaves it
    del tensor.external_data[:]


def load_external_data_for_model(model: Any, base_dir: str) -> None:
    """load_external_data_for_tensor for every external tensor of `model`
    (initializers, also in subgraphs, and attribute tensors). A URL
    base_dir ("s3://bucket/dir", "https://host/dir") fetches
    every external tensor's range from under it (onnxio._remote; fsspec
    needed), with the library's checks, coalesced and in parallel."""
    if isinstance(base_dir, str) and "://" in base_dir:
        from onnxio import _remote

        base_dir = _remote.local_dir(base_dir)  # file://: read as the path is, with every local check
        if _remote.is_url(base_dir):
            _remote.load_external_data_for_model(model, base_dir)
            return
    for tensor in _get_all_tensors(model):
        if uses_external_data(tensor):
            load_external_data_for_tensor(tensor, base_dir)


def set_external_data(
    tensor: Any,
    location: str,
    offset: int | None = None,
    length: int | None = None,
    checksum: str | None = None,
    basepath: str | None = None,
) -> None:
    """Mark `tensor` external: data_location = EXTERNAL and external_data
    replaced by the given keys (in the order location, offset, length,
    checksum, basepath; None ones left out). raw_data is kept (saving writes
    it out). ValueError when the tensor has no raw_data."""
    if _payload(tensor) is None:
        raise ValueError(
            f"Tensor {tensor.name} does not have raw_data field. Cannot set external data for this tensor."
        )

    del tensor.external_data[:]
    tensor.data_location = TensorProto.EXTERNAL
    for k, v in {
        "location": location,
        "offset": int(offset) if offset is not None else None,
        "length": int(length) if length is not None else None,
        "checksum": checksum,
        "basepath": basepath,
    }.items():
        if v is not None:
            entry = tensor.external_data.add()
            entry.key = k
            entry.value = str(v)


def _payload_size(tensor: Any) -> int | None:
    view = _payload(tensor)
    return None if view is None else memoryview(view).nbytes


def _fresh_name() -> str:
    """A new unique file name, as onnx makes one for external data when no
    location is given: a uuid, but uuid4 (random) where onnx takes uuid1,
    which spells the host's MAC address and the time into the name of a
    file that ships with the model."""
    return str(uuid.uuid4())


def convert_model_to_external_data(
    model: Any,
    all_tensors_to_one_file: bool = True,
    location: str | None = None,
    size_threshold: int = 1024,
    convert_attribute: bool = False,
) -> None:
    """Mark the tensors of `model` that have raw_data of at least
    size_threshold as external (nothing is written yet: save_model writes
    the files).

    Args:
        model: the ModelProto, changed in place.
        all_tensors_to_one_file: one file for all (`location`, or a new
            "<uuid>.data", a fresh name as onnx gives), else one file per
            tensor named after the tensor (a uuid when the name is not a
            valid file name).
        location: the one file's path, relative to the model's directory.
        size_threshold: the threshold onnx uses, compared with
            sys.getsizeof(raw_data) (the payload's length plus 33 bytes).
        convert_attribute: also attribute tensors, not only initializers.

    Raises:
        ExternalDataError (a ValueError): a location the library refuses
            (absolute, a ".." component). FileExistsError: `location`
            exists (relative to the current directory, as onnx checks it).
    """
    tensors: Iterable[Any] = _get_initializer_tensors(model)
    if convert_attribute:
        tensors = _get_all_tensors(model)

    def big_enough(tensor: Any) -> bool:
        size = _payload_size(tensor)
        return size is not None and size + _BYTES_OVERHEAD >= size_threshold

    if all_tensors_to_one_file:
        file_name = _fresh_name() + ".data"
        if location:
            # The library's spelling rules (ExternalDataError, a ValueError,
            # as onnx's for an absolute path); onnx checks only isabs here.
            _C._check_location(location)
            if os.path.exists(location):
                raise FileExistsError(f"External data file exists in {location}.")
            file_name = location
        for tensor in tensors:
            if big_enough(tensor):
                set_external_data(tensor, file_name)
    else:
        for tensor in tensors:
            if big_enough(tensor):
                tensor_location = tensor.name
                if not _is_valid_filename(tensor_location):
                    tensor_location = _fresh_name()
                set_external_data(tensor, tensor_location)


def convert_model_from_external_data(model: Any) -> None:
    """Mark every external tensor of `model` as embedded again (external_data
    cleared, data_location DEFAULT); their payloads must already be in
    raw_data (load_external_data_for_model). ValueError otherwise."""
    for tensor in _get_all_tensors(model):
        if uses_external_data(tensor):
            if _payload(tensor) is None:
                raise ValueError("raw_data field doesn't exist.")
            del tensor.external_data[:]
            tensor.data_location = TensorProto.DEFAULT


def save_external_data(tensor: Any, base_path: str) -> None:
    """Append `tensor`'s raw_data to its external data file under base_path
    (at its "offset" when given: at most 64 KiB past the file's end, the gap
    zero-filled) and record the offset and length it was written at.

    The data file is opened by the library (onnxio_external_data_open,
    append mode: the module doc's checks; created when missing).

    Raises ExternalDataError: no raw_data, a refused location or file, or
    an offset before the end of the file or too far past it."""
    info = ExternalDataInfo(tensor)

    payload = _payload(tensor)
    if payload is None:
        raise _C._external_data_error()("raw_data field doesn't exist.")

    fd, _ = _C._external_data_open(_base(base_path), info.location, append=True)
    with os.fdopen(fd, "r+b") as data_file:
        data_file.seek(0, 2)
        if info.offset is not None:
            # A tensor goes at the end of the file, possibly after an
            # alignment gap of less than one boundary: an earlier offset would
            # overwrite data, a far later one pad with untrusted zeros.
            file_size = data_file.tell()
            padding = info.offset - file_size
            if not 0 <= padding <= _MAX_EXTERNAL_DATA_PADDING:
                raise _C._external_data_error()(
                    f"External data offset ({info.offset}) for tensor {tensor.name!r} "
                    f"must be between the current file size ({file_size}) and "
                    f"{file_size + _MAX_EXTERNAL_DATA_PADDING}."
                )
            if padding > 0:
                data_file.write(b"\0" * padding)
            data_file.seek(info.offset)
        offset = data_file.tell()
        data_file.write(payload)
        set_external_data(tensor, info.location, offset, data_file.tell() - offset)


def _get_all_tensors(onnx_model_proto: Any) -> Iterable[Any]:
    """Every tensor of a model: initializers (also of subgraphs), then
    attribute tensors (also of functions)."""
    return chain(_get_initializer_tensors(onnx_model_proto), _get_attribute_tensors(onnx_model_proto))


def _recursive_attribute_processor(attribute: Any, func: Callable[[Any], Iterable[Any]]) -> Iterable[Any]:
    """func applied to the subgraph(s) of a GRAPH / GRAPHS attribute."""
    if attribute.type == AttributeProto.GRAPH:
        yield from func(attribute.g)
    if attribute.type == AttributeProto.GRAPHS:
        for graph in attribute.graphs:
            yield from func(graph)


def _get_initializer_tensors_from_graph(graph: Any, /) -> Iterable[Any]:
    """The initializers of a graph and of its subgraphs."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            yield from _recursive_attribute_processor(attribute, _get_initializer_tensors_from_graph)


def _get_initializer_tensors(onnx_model_proto: Any) -> Iterable[Any]:
    """The initializers of a model's graph and its subgraphs."""
    yield from _get_initializer_tensors_from_graph(onnx_model_proto.graph)


def _get_attribute_tensors_from_graph(graph_or_function: Any, /) -> Iterable[Any]:
    """The tensors of node attributes (t and tensors) of a graph or
    function, subgraphs included."""
    for node in graph_or_function.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            yield from _recursive_attribute_processor(attribute, _get_attribute_tensors_from_graph)


def _get_attribute_tensors(onnx_model_proto: Any) -> Iterable[Any]:
    """The attribute tensors of a model's graph and of its functions."""
    yield from _get_attribute_tensors_from_graph(onnx_model_proto.graph)
    for function in onnx_model_proto.functions:
        yield from _get_attribute_tensors_from_graph(function)


# Public names for the iterators (the brief's get_all_tensors & co.); onnx
# keeps them private, under the underscore names above.
get_all_tensors = _get_all_tensors
get_initializer_tensors = _get_initializer_tensors
get_attribute_tensors = _get_attribute_tensors


def _is_valid_filename(filename: str) -> bool:
    """Whether a tensor name can be used as a file name as it is (a parsed
    name that is not UTF-8, which reads as bytes, cannot)."""
    if not isinstance(filename, str):
        return False
    exp = re.compile('^[^<>:;,?"*|/]+$')
    match = exp.match(filename)
    return bool(match)


def uses_external_data(tensor: Any) -> bool:
    """Whether the tensor's data_location is set to EXTERNAL."""
    return tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL


def remove_external_data_field(tensor: Any, field_key: str) -> None:
    """Remove the external_data entry with key field_key, in place."""
    for i, field in enumerate(tensor.external_data):
        if field.key == field_key:
            del tensor.external_data[i]


def write_external_data_tensors(model: Any, filepath: str) -> Any:
    """Write the payload of every tensor that is marked external and still
    has raw_data to its file under the directory `filepath`
    (save_external_data), then clear its raw_data. Data files are appended
    to, as in onnx: remove old ones first. Returns `model`."""
    for tensor in _get_all_tensors(model):
        # Only tensors marked (convert_model_to_external_data) and still
        # holding their payload are written.
        if uses_external_data(tensor) and _payload(tensor) is not None:
            save_external_data(tensor, filepath)
            tensor.ClearField("raw_data")

    return model
