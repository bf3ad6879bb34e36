"""onnxio.external_data_helper: the functions of ``onnx.external_data_helper``
over onnxio's messages.

External data (ONNX IR, "External Data"): a tensor with data_location =
EXTERNAL keeps its payload in a file named by its external_data entry
"location", relative to the model's directory, at "offset" for "length" bytes
(both optional). These functions mark tensors external, write their payloads
to such files, and read them back, with the results of onnx 1.23: the same
files, byte for byte, and the same model bytes.

Paths are checked as onnx checks them before any file is opened: a location
must be relative, must not contain "..", must not be or pass through a
symbolic link leading outside the base directory, and a file read must be a
regular file with a single hard link; offset and length are checked against
the file size before anything is read. A refused location raises
ExternalDataError (onnx raises its checker's ValidationError).

Payloads are written from and read into memory without extra copies where
the extension allows it (the payload view of numpy_helper).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import uuid
import warnings
from collections.abc import Callable, Iterable
from itertools import chain
from typing import IO, Any

from onnxio import _onnxio as _C

AttributeProto = _C.AttributeProto
FunctionProto = _C.FunctionProto
GraphProto = _C.GraphProto
ModelProto = _C.ModelProto
TensorProto = _C.TensorProto

if hasattr(_C, "ExternalDataError"):
    ExternalDataError = _C.ExternalDataError
else:

    class ExternalDataError(ValueError):  # type: ignore[no-redef]
        """An external data location or range that is refused."""


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
    """The external_data entries of a tensor as attributes: location (str),
    offset and length (int or None), checksum (str or None), basepath (str).

    Raises ValueError for a negative (or non-numeric) offset or length;
    warns about and ignores unknown keys."""

    def __init__(self, tensor: Any) -> None:
        self.location = ""
        self.offset: Any = None
        self.length: Any = None
        self.checksum = None
        self.basepath = ""

        unknown_keys: set[str] = set()
        unknown_key_count = 0
        for entry in tensor.external_data:
            if entry.key in _ALLOWED_EXTERNAL_DATA_KEYS:
                setattr(self, entry.key, entry.value)
            else:
                unknown_key_count += 1
                if len(unknown_keys) < _MAX_UNKNOWN_KEYS_IN_WARNING:
                    truncated = entry.key[:_MAX_KEY_DISPLAY_LENGTH]
                    if len(entry.key) > _MAX_KEY_DISPLAY_LENGTH:
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

        if self.offset is not None:
            self.offset = int(self.offset)
            if self.offset < 0:
                raise ValueError(
                    f"External data offset must be non-negative, got {self.offset} for tensor {tensor.name!r}"
                )

        if self.length is not None:
            self.length = int(self.length)
            if self.length < 0:
                raise ValueError(
                    f"External data length must be non-negative, got {self.length} for tensor {tensor.name!r}"
                )


# ---- safe opening (what onnx's C++ open_external_data checks) ---------------


def _has_parent_ref(rel: str) -> bool:
    # onnx refuses any ".." in the normalized location, not only whole
    # components ("a..b" too); the same rule keeps the same files refused.
    return ".." in rel


def _inside(path: str, base_dir: str) -> bool:
    real = os.path.realpath(path)
    base = os.path.realpath(base_dir or ".")
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _open_external_data_fd(base_dir: str, location: str, tensor_name: str, read_only: bool) -> int:
    """Open the external data file `location` under `base_dir` and return a
    file descriptor (read-only, or read-write and created if missing).

    Raises ExternalDataError for a refused location (empty, absolute,
    "..", a symlink, outside base_dir, not a regular file, several hard
    links), FileNotFoundError/OSError when opening fails."""
    if not location:
        raise ExternalDataError(
            f"Location of external TensorProto ( tensor name: {tensor_name}) should not be empty."
        )
    if os.path.isabs(location):
        if read_only:
            raise ExternalDataError(
                f"Location of external TensorProto ( tensor name: {tensor_name}) should be a relative path, "
                f"but it is an absolute path: {location}"
            )
        raise ExternalDataError(
            f"External data location for tensor {tensor_name} is empty or absolute: {location}"
        )
    rel = os.path.normpath(location)
    if not read_only and rel == ".":
        raise ExternalDataError(f"External data location for tensor {tensor_name} is invalid: {location}")
    if _has_parent_ref(rel):
        raise ExternalDataError(
            f"Data of TensorProto ( tensor name: {tensor_name}) should be file inside '{base_dir}', "
            f"but '{location}' points outside the directory."
        )
    data_path = os.path.join(base_dir, rel)

    if read_only:
        if os.path.islink(data_path):
            raise ExternalDataError(
                f"Data of TensorProto ( tensor name: {tensor_name}) should be stored in {data_path}, "
                "but it is a symbolic link."
            )
        if not _inside(data_path, base_dir):
            raise ExternalDataError(f"Tensor {tensor_name} external data resolves outside model directory.")
        if not os.path.exists(data_path):
            raise FileNotFoundError(
                f"Data of TensorProto ( tensor name: {tensor_name}) should be stored in {data_path}, "
                "but it does not exist."
            )
    elif not _inside(os.path.dirname(data_path) or ".", base_dir):
        raise ExternalDataError(f"Tensor {tensor_name} external data resolves outside model directory.")

    flags = (os.O_RDONLY if read_only else os.O_RDWR | os.O_CREAT) | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(data_path, flags, 0o666)
    except OSError as e:
        if getattr(os, "O_NOFOLLOW", 0) and os.path.islink(data_path):
            raise ExternalDataError(
                f"Data of TensorProto ( tensor name: {tensor_name}) should be stored in {data_path}, "
                "but it is a symbolic link."
            ) from e
        raise
    try:
        # Checked on the open file, so that a swap of the path after the
        # checks above cannot lead elsewhere.
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ExternalDataError(
                f"Data of TensorProto ( tensor name: {tensor_name}) should be stored in {data_path}, "
                "but it is not regular file."
            )
        try:
            path_st = os.stat(os.path.realpath(data_path))
        except OSError:
            path_st = None
        if path_st is None or (path_st.st_dev, path_st.st_ino) != (st.st_dev, st.st_ino):
            raise ExternalDataError(
                f"Tensor {tensor_name} external data: fd/path mismatch (possible TOCTOU attack)."
            )
        if not _inside(data_path, base_dir):
            raise ExternalDataError(f"Tensor {tensor_name} external data resolves outside model directory.")
        if st.st_nlink > 1:
            raise ExternalDataError(
                f"Tensor {tensor_name} external data has multiple hard links (possible hardlink attack)."
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _validate_external_data_file_bounds(data_file: IO[bytes], info: ExternalDataInfo, tensor_name: str) -> bytes:
    """Check offset and length against the file's size, then read them.
    ValueError when they do not fit: nothing is allocated before the check."""
    file_size = os.fstat(data_file.fileno()).st_size

    if info.offset is not None:
        if info.offset > file_size:
            raise ValueError(
                f"External data offset ({info.offset}) exceeds file size ({file_size}) for tensor {tensor_name!r}"
            )
        data_file.seek(info.offset)

    if info.length is not None:
        read_start = info.offset if info.offset is not None else 0
        available = file_size - read_start
        if info.length > available:
            raise ValueError(
                f"External data length ({info.length}) exceeds available data "
                f"({available} bytes from offset {read_start}) "
                f"for tensor {tensor_name!r}"
            )
        return data_file.read(info.length)
    return data_file.read()


def _read_external_data_bytes(tensor: Any, base_dir: str) -> bytes:
    """The bytes of `tensor`'s external data, read from under base_dir; the
    tensor is not changed."""
    info = ExternalDataInfo(tensor)
    fd = _open_external_data_fd(base_dir, info.location, tensor.name, True)
    with os.fdopen(fd, "rb") as data_file:
        return _validate_external_data_file_bounds(data_file, info, tensor.name)


def _payload(tensor: Any) -> Any:
    from onnxio import numpy_helper

    return numpy_helper._raw_payload(tensor)


def load_external_data_for_tensor(tensor: Any, base_dir: str) -> None:
    """Read `tensor`'s external data from under base_dir into raw_data;
    then data_location is DEFAULT and external_data is empty. A raw_data
    the tensor already had is replaced.

    Raises ExternalDataError / ValueError / OSError (see the module doc)."""
    from onnxio import numpy_helper

    numpy_helper._set_raw_data(tensor, _read_external_data_bytes(tensor, base_dir))
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


def load_external_data_for_model(model: Any, base_dir: str) -> None:
    """load_external_data_for_tensor for every external tensor of `model`
    (initializers, also in subgraphs, and attribute tensors)."""
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
            "<uuid>.data"), else one file per tensor named after the tensor
            (a uuid when the name is not a valid file name).
        location: the one file's path, relative to the model's directory.
        size_threshold: the threshold onnx uses, compared with
            sys.getsizeof(raw_data) (the payload's length plus 33 bytes).
        convert_attribute: also attribute tensors, not only initializers.

    Raises:
        ValueError: an absolute location. FileExistsError: `location` exists
            (relative to the current directory, as onnx checks it).
    """
    tensors: Iterable[Any] = _get_initializer_tensors(model)
    if convert_attribute:
        tensors = _get_all_tensors(model)

    def big_enough(tensor: Any) -> bool:
        size = _payload_size(tensor)
        return size is not None and size + _BYTES_OVERHEAD >= size_threshold

    if all_tensors_to_one_file:
        file_name = str(uuid.uuid1()) + ".data"
        if location:
            if os.path.isabs(location):
                raise ValueError("location must be a relative path that is relative to the model path.")
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
                    tensor_location = str(uuid.uuid1())
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

    Raises ExternalDataError: no raw_data, a refused location, or an offset
    before the end of the file or too far past it."""
    info = ExternalDataInfo(tensor)

    payload = _payload(tensor)
    if payload is None:
        raise ExternalDataError("raw_data field doesn't exist.")

    fd = _open_external_data_fd(base_path, info.location, tensor.name, False)
    with os.fdopen(fd, "r+b") as data_file:
        data_file.seek(0, 2)
        if info.offset is not None:
            # A tensor goes at the end of the file, possibly after an
            # alignment gap of less than one boundary: an earlier offset would
            # overwrite data, a far later one pad with untrusted zeros.
            file_size = data_file.tell()
            padding = info.offset - file_size
            if not 0 <= padding <= _MAX_EXTERNAL_DATA_PADDING:
                raise ExternalDataError(
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
    """Whether a tensor name can be used as a file name as it is."""
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
