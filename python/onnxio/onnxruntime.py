"""onnxruntime sessions on onnxio's models, the weights handed over without a
copy.

``InferenceSession(model)`` returns a real ``onnxruntime.InferenceSession``
for an onnxio ``ModelProto`` (or a path: ``.onnx``, with external data or
not, or ``.onnxz``, loaded with ``no_copy=True``)::

    import onnxio
    from onnxio.onnxruntime import InferenceSession

    model = onnxio.load("model.onnx", no_copy=True)   # payloads in the file's mapping
    sess = InferenceSession(model, providers=["CPUExecutionProvider"])
    sess.run(None, {"x": x})

The route (chosen by measurement, onnxruntime 1.31.1; BENCHMARKS.md,
"Handoff to onnxruntime", has the figures): onnxruntime gets the
model's structure as serialized bytes in which every initializer of the
main graph of at least ``min_size`` bytes (but those it reads itself, below) has no ``raw_data``
but a placeholder external-data
reference (location ``PLACEHOLDER``, an empty file shipped in this package,
found through the session option
``session.model_external_initializers_file_folder_path``), and gets the
payloads through ``SessionOptions.add_initializer``: one ``OrtValue`` per
tensor, made by ``OrtValue.ortvalue_from_numpy`` on the numpy view
``numpy_helper.to_array`` gives of the payload. onnxruntime uses that
memory as it is (its tensor's data pointer is the payload's: for a
``no_copy`` model, the file's mapping) and never reads the placeholder;
an initializer it was not given would fail loudly ("out of bounds"
reading the empty file), never read zeros.

The other routes, measured and not taken:
``add_external_initializers`` (the API made for this) copies every tensor
into onnxruntime's own memory at session creation (a 128 MiB model: +136
MiB per session); ``add_initializer`` on a graph that still holds the
payloads does not copy the OrtValue but makes onnxruntime parse and hold
the payloads of the bytes during creation; an initializer without data
fails onnxruntime's size check, one removed from ``graph.initializer`` fails
"is not a graph input, initializer, or output", a graph input backed by an
added initializer still asks for a feed, the in-memory marker
``*/_ORT_MEM_ADDR_/*`` is refused in a model, and
``add_external_initializers_from_files_in_memory`` copies (its
documentation says so).

Prepacking: onnxruntime repacks the weights of some kernels (MatMul, Gemm,
...) into a layout of its own at session creation. That is a second copy
of those weights, per session, and the original, which onnxio owns,
cannot be freed under it. ``InferenceSession`` therefore sets the session
option ``session.disable_prepacking`` to ``"1"`` unless the caller's
``sess_options`` already sets it (``"0"`` turns prepacking back on: more
memory, and some kernels run faster; outputs differ in the last bits).

Lifetime: the returned session holds the ``OrtValue``s (each holding its
numpy view, each view holding a reference to its payload's buffer: the
file mapping for a ``no_copy`` model) in its attribute
``_onnxio_initializers`` ({name: OrtValue}); the weights stay alive as long as the session,
whatever becomes of ``model``. Several sessions on one model share its
payloads: each gets its own ``OrtValue``s on the same bytes.

What stays in the serialized structure (and is copied by onnxruntime as
usual): initializers under ``min_size`` bytes (default 1024, the library's
``raw_data_threshold``). Below it an ``OrtValue`` per tensor costs more than
the copy, and the small tensors that shape inference reads (a Reshape's
shape, a Slice's starts, ...) must stay: onnxruntime refuses one held
outside the bytes ("Cannot parse data from external tensors"). Also left
there: initializers of subgraphs (``If``/``Loop`` bodies),
``sparse_initializer``, ``Constant`` nodes, tensors stored in typed fields
(``float_data``, ...) and those whose payload ``to_array`` cannot view
(packed 4- and 2-bit types, big-endian hosts).

onnxruntime is imported when ``InferenceSession`` is first called
(ImportError naming ``pip install onnxruntime`` when it is missing).
"""
from __future__ import annotations

import os
import re
import typing
from collections.abc import Iterable
from typing import Any

import numpy as np

from onnxio import numpy_helper

if typing.TYPE_CHECKING:  # pragma: no cover
    import onnxruntime as _ort  # type: ignore[import-untyped]

__all__ = ["InferenceSession", "PLACEHOLDER", "handoff_parts"]

# The external-data location written for the tensors handed over in memory:
# an empty file beside this module (onnxruntime checks that it exists, and
# reading a tensor from it fails).
PLACEHOLDER = "_onnxruntime_placeholder"
_PLACEHOLDER_DIR = os.path.dirname(os.path.abspath(__file__))

_DISABLE_PREPACKING = "session.disable_prepacking"
_EXTERNAL_FOLDER = "session.model_external_initializers_file_folder_path"


def _import_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as e:  # pragma: no cover (onnxruntime is in requirements.txt)
        raise ImportError("onnxio.onnxruntime needs the onnxruntime package: pip install onnxruntime") from e
    if not hasattr(onnxruntime.OrtValue, "ortvalue_from_numpy_with_onnx_type"):  # pragma: no cover
        raise ImportError(
            f"onnxio.onnxruntime needs OrtValue.ortvalue_from_numpy_with_onnx_type, which onnxruntime "
            f"{onnxruntime.__version__} does not have: pip install -U onnxruntime")
    return onnxruntime


def _load(model: Any) -> Any:
    """The ModelProto for `model`: itself, onnx's converted, or loaded
    (no_copy) from a path or bytes."""
    import onnxio

    if isinstance(model, (str, os.PathLike, bytes, bytearray, memoryview)):
        return onnxio.load(model, no_copy=True)
    if isinstance(model, onnxio.ModelProto):
        return model
    if type(model).__name__ == "ModelProto":  # the onnx package's: converted without copying payloads
        return onnxio.from_onnx(model)
    raise TypeError(f"InferenceSession: model must be an onnxio ModelProto, a path or bytes, not {type(model).__name__}")


def _payload_array(tensor: Any, where: str) -> np.ndarray | None:
    """A numpy view of `tensor`'s raw_data, or None when the tensor has no
    raw_data or to_array cannot view it without a copy (it then stays in
    the serialized bytes). ValueError for a payload skipped at load or
    external data that was not loaded."""
    from onnxio import external_data_helper

    if external_data_helper.uses_external_data(tensor):
        raise ValueError(f"{where}: its data is external and was not loaded (load the model with "
                         f"load_external_data=True, or onnxio.load_external_data_for_model first)")
    view = numpy_helper._raw_payload(tensor)
    if view is None:
        if tensor.HasField("raw_data"):
            raise ValueError(f"{where}: its payload was skipped at load (skip_raw_data=True); "
                             f"load the model without skip_raw_data")
        return None  # typed fields (float_data, ...): small by nature, left in the bytes
    if not isinstance(view, memoryview):  # pragma: no cover (an extension without _payload_view)
        return None
    array = numpy_helper.to_array(tensor)
    raw = np.frombuffer(view, dtype=np.uint8)
    if array.nbytes != raw.nbytes or (raw.nbytes and array.ctypes.data != raw.ctypes.data):
        return None  # unpacked or swapped: a copy, not worth handing over
    return array


def _ortvalue(ort: Any, array: np.ndarray, data_type: int) -> Any:
    """An OrtValue on `array`'s memory (no copy): numpy's own dtypes
    directly, the ml_dtypes ones (bfloat16, float8, ...) reinterpreted as
    unsigned integers of their width with the tensor's ONNX type."""
    if type(array.dtype).__module__ == "numpy.dtypes" and array.dtype.kind in "biufc":
        return ort.OrtValue.ortvalue_from_numpy(array)
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(np.dtype(f"u{array.itemsize}")), data_type)


def handoff_parts(model: Any, min_size: int = 1024, keep: Iterable[str] = ()) -> tuple[bytes, list[str], list[np.ndarray]]:
    """Splits `model` (a ModelProto, path or bytes) for onnxruntime: the
    serialized structure with a placeholder external-data reference instead
    of each initializer of the main graph that is handed over, and those
    initializers' names and numpy views of their payloads (no copy). The
    model is not changed. `InferenceSession` is this plus the OrtValues.

    Handed over: initializers of at least `min_size` bytes, not named in
    `keep`, whose payload numpy can view, and which onnxruntime's graph
    optimizers will not read: one that only feeds nodes whose inputs are
    all initializers (constant folding reads those) or that a subgraph
    uses stays in the bytes.

    Raises:
        ValueError: an initializer whose payload was skipped at load, or
            whose external data was not loaded (the message names it).
    """
    data, names, arrays, _ = _split(_load(model), min_size, frozenset(keep))
    return data, names, arrays


def _read_by_optimizers(graph: Any) -> set[str]:
    """Initializers of `graph` that onnxruntime's optimizers read: inputs
    of a node whose inputs are all initializers (constant folding), and
    names a subgraph (If/Loop/Scan body) refers to."""
    initializers = {t.name for t in graph.initializer}
    read: set[str] = set()
    stack = []
    for node in graph.node:
        inputs = [i for i in node.input if i]
        if inputs and all(i in initializers for i in inputs):
            read.update(inputs)
        for attr in node.attribute:
            stack.extend([attr.g] if attr.HasField("g") else [])
            stack.extend(attr.graphs)
    while stack:  # every name used anywhere in a subgraph, nested ones included
        sub = stack.pop()
        for node in sub.node:
            read.update(i for i in node.input if i in initializers)
            for attr in node.attribute:
                stack.extend([attr.g] if attr.HasField("g") else [])
                stack.extend(attr.graphs)
    return read


def _split(model: Any, min_size: int, keep: frozenset[str]) -> tuple[bytes, list[str], list[np.ndarray], list[int]]:
    """handoff_parts on a ModelProto, with the handed-over tensors' ONNX
    data types."""
    import onnxio

    names: list[str] = []
    arrays: list[np.ndarray] = []
    types: list[int] = []
    graph = model.graph
    kept = keep | _read_by_optimizers(graph)
    for i, tensor in enumerate(graph.initializer):
        array = _payload_array(tensor, f"initializer {i} ({tensor.name!r}) of graph {graph.name!r}")
        if array is None or array.nbytes < min_size or tensor.name in kept:
            continue
        names.append(tensor.name)
        arrays.append(array)
        types.append(tensor.data_type)
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})[0]
        raise ValueError(f"graph {graph.name!r} has two initializers named {twice!r}")
    if not names:
        return model.SerializeToString(), [], [], []
    # A copy of the tree shares the payloads (no bytes are copied); the
    # handed-over ones are cleared there, the model passed in is not changed.
    stripped = onnxio.ModelProto()
    stripped.CopyFrom(model)
    sizes = dict(zip(names, (a.nbytes for a in arrays)))
    for tensor in stripped.graph.initializer:
        length = sizes.get(tensor.name)
        if length is None:
            continue
        tensor.ClearField("raw_data")
        tensor.data_location = onnxio.TensorProto.EXTERNAL
        del tensor.external_data[:]
        for key, value in (("location", PLACEHOLDER), ("offset", "0"), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key = key
            entry.value = value
    return stripped.SerializeToString(), names, arrays, types


def InferenceSession(  # noqa: N802 (onnxruntime's class name)
    model: Any,
    sess_options: _ort.SessionOptions | None = None,
    providers: Any = None,
    *,
    min_size: int = 1024,
    keep: Iterable[str] = (),
    **kwargs: Any,
) -> _ort.InferenceSession:
    """An ``onnxruntime.InferenceSession`` for an onnxio model whose large
    initializers are onnxio's payloads, not copies (module docstring).

    Args:
        model: an onnxio ``ModelProto`` (any load mode; its external data
            loaded), an ``onnx`` ``ModelProto``, or a path (``.onnx``, with
            external data or not, or ``.onnxz``) or bytes, loaded with
            ``onnxio.load(model, no_copy=True)``.
        sess_options: an ``onnxruntime.SessionOptions``, or None for a new
            one whose session logs fatal messages only (so that the
            attempts retried, below, print nothing; a failure still raises
            with onnxruntime's message). It gets the handed-over initializers added and
            ``session.model_external_initializers_file_folder_path`` set
            (so a SessionOptions cannot serve two calls; ValueError when it
            already sets that entry), and ``session.disable_prepacking =
            1`` unless it sets that entry.
        providers: as onnxruntime's (None: onnxruntime's default).
        min_size: initializers of fewer bytes stay in the serialized
            structure (copied by onnxruntime).
        keep: names of initializers to leave in the serialized structure
            whatever their size. Those that onnxruntime's optimizers read
            (constant folding, subgraphs) stay there anyway; one that
            another optimizer reads (a fusion that rewrites weights, say)
            or shape inference needs makes the session creation fail on the
            placeholder, and it is then retried with that initializer kept (only without
            ``sess_options``: ValueError naming it otherwise).
        **kwargs: passed to ``onnxruntime.InferenceSession``
            (``provider_options``, ...).

    Returns:
        An ``onnxruntime.InferenceSession``; its attribute
        ``_onnxio_initializers`` ({name: OrtValue}) holds the OrtValues
        that keep the payloads alive.

    Raises:
        ImportError: onnxruntime is not installed.
        ValueError: an initializer whose payload was skipped at load, or
            whose external data was not loaded (named in the message).
    """
    ort = _import_onnxruntime()
    proto = _load(model)
    kept = frozenset(keep)
    while True:
        data, names, arrays, types = _split(proto, min_size, kept)
        options = sess_options if sess_options is not None else _quiet_options(ort)
        values = _prepare(ort, options, arrays, types, names)
        try:
            session = ort.InferenceSession(data, sess_options=options, providers=providers, **kwargs)
        except Exception as e:
            # An optimizer read a handed-over tensor from the placeholder:
            # that one goes in the bytes (a fresh SessionOptions each try).
            m = _READ_PLACEHOLDER.search(str(e))
            name = m and (m.group(1) or m.group(2))
            if not name or name not in names or name in kept:
                raise
            if sess_options is not None:
                raise ValueError(f"onnxruntime reads initializer {name!r} while it makes the session, and it was "
                                 f"handed over in memory; pass keep=[{name!r}] (or no sess_options: the call "
                                 f"then retries by itself)") from e
            kept |= {name}
            continue
        session._onnxio_initializers = dict(zip(names, values))
        return session


# onnxruntime's messages when it reads a tensor's data from the placeholder
# (an optimizer) or wants it in the bytes (shape inference).
_READ_PLACEHOLDER = re.compile(r"External initializer: (.+?) offset: \d+ size to read"
                               r"|Please load external data into raw data for tensor: (\S+)")


def _quiet_options(ort: Any) -> Any:
    """A SessionOptions whose session logs fatal messages only: an attempt
    that fails on the placeholder (and is retried) prints nothing, and a
    failure that is not retried surfaces as the exception, which carries
    onnxruntime's message."""
    options = ort.SessionOptions()
    options.log_severity_level = 4  # onnxruntime's ORT_LOGGING_LEVEL_FATAL
    return options


def _prepare(ort: Any, options: Any, arrays: list[np.ndarray], types: list[int], names: list[str]) -> list[Any]:
    """Sets `options` up for a handoff: prepacking off unless set, the
    placeholder's folder, and an OrtValue per handed-over tensor (returned)."""
    try:
        options.get_session_config_entry(_DISABLE_PREPACKING)
    except Exception:  # onnxruntime raises a plain RuntimeError for an unset entry
        options.add_session_config_entry(_DISABLE_PREPACKING, "1")
    values = [_ortvalue(ort, a, t) for a, t in zip(arrays, types)]
    if values:
        try:
            folder = options.get_session_config_entry(_EXTERNAL_FOLDER)
        except Exception:  # unset (a plain RuntimeError)
            folder = None
        if folder is not None:
            raise ValueError(f"sess_options sets {_EXTERNAL_FOLDER!r} ({folder!r}); "
                             f"onnxio.onnxruntime.InferenceSession sets it itself (the model's external "
                             f"data is loaded by onnxio)")
        options.add_session_config_entry(_EXTERNAL_FOLDER, _PLACEHOLDER_DIR)
        for name, value in zip(names, values):
            options.add_initializer(name, value)
    return values
