"""Sharded loading for tensor parallelism: ``onnxio.shard``.

``shard(model_or_path, rank, world_size, plan)`` gives rank ``rank``'s model
of ``world_size``: every initializer of the main graph that ``plan`` splits
holds only this rank's part of it (its ``dims`` updated), the others are
whole. From a path, only the bytes of this rank's parts are read (through
``onnxio.slices``, one ``pread`` per contiguous run); from a model already
in memory, the parts are cut from its payloads (views where the part is
contiguous in the payload).

The plan
--------
``plan`` maps initializer names, or ``fnmatch`` patterns (``*``, ``?``,
``[...]``, matched case-sensitively against the whole name), to an axis
(an int, negative ones counting from the end) or ``"replicate"``. An exact
name wins over patterns; otherwise the first matching pattern in the
plan's order decides. Initializers the plan does not name are replicated
(every rank gets them whole), as are the main graph's sparse initializers,
the initializers of subgraphs and the tensors of attributes (``Constant``
values, ...). Errors (``ValueError``, before anything is read): an entry
(name or pattern) that matches no initializer of the main graph (a typo
would otherwise replicate silently), an axis a matched tensor does not
have (a scalar has none), a value other than an int or ``"replicate"``,
``world_size < 1``, ``rank`` outside ``[0, world_size)``.

Uneven splits
-------------
An axis of length ``n`` is cut as ``numpy.array_split`` (and
``torch.tensor_split``) cut it: the first ``n % world_size`` ranks get
``n // world_size + 1`` elements, the others ``n // world_size``; every rank
gets a part (perhaps empty), unlike ``torch.chunk``, which can leave the last
ranks with nothing. ``torch.distributed.all_gather`` needs parts of one
size: pass ``uneven="error"`` to refuse an axis that ``world_size`` does not
divide (``ValueError`` naming the tensor), as tensor-parallel loaders such
as Megatron's do.

Representation
--------------
A part keeps its tensor's other fields (name, ``doc_string``,
``metadata_props``, ...); its values are in ``raw_data``, loaded as a load
leaves a tensor (one read from external data or an ``.onnxz`` entry has
``data_location`` DEFAULT, as after ``onnxio.load``). A split tensor whose
values were in a typed field (``float_data``, ``int64_data``, ...) moves
them to ``raw_data`` (strings stay in ``string_data``). With
``world_size == 1`` the result serializes to the bytes of ``onnxio.load``'s
model. From a path, the 4- and 2-bit types must be split on whole bytes of
the payload (the slice reader's rule, ``ValueError`` otherwise).

Bytes read
----------
Pass ``stats={}``; it is filled with ``bytes_read`` (payload bytes read
from the file: the parts, counted by the slice reader, plus the payloads
of the tensors outside the main graph's initializers, which are loaded
whole; the structure is not counted; 0 for a model in memory),
``payload_bytes`` (every payload of the model), ``shard_bytes`` (the
payload bytes of the returned initializers), ``split_payload_bytes`` and
``replicated_payload_bytes`` (the main graph's initializers, whole, by
kind), ``other_payload_bytes`` (the payloads outside them, from a path; 0 for a
model in memory, whose other tensors are shared as they are), ``runs``
(reads), ``split`` and ``replicated`` (the names, in graph order).

Limits: a tensor outside the main graph's initializers (a ``Constant``
value, a subgraph's initializer) that has the name of one of them cannot be
told apart from it while the file's payloads are being chosen: a load from
a path raises ``ValueError`` then (shard the loaded model instead).
"""

from __future__ import annotations

import fnmatch
import operator
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from onnxio import _onnxio as _C

__all__ = ["REPLICATE", "shard", "shard_bounds"]

REPLICATE = "replicate"
_UNEVEN = ("array_split", "error")


def shard_bounds(length: int, rank: int, world_size: int) -> tuple[int, int]:
    """``(start, stop)`` of rank ``rank``'s part of an axis of ``length``
    elements, as ``numpy.array_split`` cuts it."""
    q, r = divmod(length, world_size)
    start = rank * q + min(rank, r)
    return start, start + q + (1 if rank < r else 0)


def shard(model_or_path: Any, rank: int, world_size: int, plan: Mapping[str, int | str] | None, *,
          num_threads: int = 0, base_dir: str | os.PathLike | None = None, stats: dict | None = None,
          uneven: str = "array_split") -> Any:
    """Rank ``rank``'s model of ``world_size``: the initializers of the main
    graph that ``plan`` splits hold only this rank's part (see the module
    docstring for the plan, uneven splits and ``stats``).

    Args:
        model_or_path: a path (``.onnx``, ``.onnx`` with external data,
            ``.onnxz``): only this rank's bytes are read; or a ModelProto
            (onnxio's or the onnx package's), which is not changed (the
            result shares its payloads where a part is contiguous).
        rank, world_size: ``0 <= rank < world_size``.
        plan: name or pattern -> axis (int) or ``"replicate"``; None or
            ``{}`` replicates everything.
        num_threads: threads for the reads (0: one per core).
        base_dir: where external data is (default: the model's directory).
        stats: a dict to fill with the byte counts.
        uneven: ``"array_split"`` (default) or ``"error"``.

    Returns:
        An onnxio ModelProto.

    Raises:
        ValueError: a bad plan, rank, world_size or uneven (see above);
        the errors of ``onnxio.load`` and ``onnxio.read_tensor`` for the
        file.
    """
    world_size = _count("world_size", world_size)
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, not {world_size}")
    rank = _count("rank", rank)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is out of range for world_size {world_size} (0 <= rank < {world_size})")
    if uneven not in _UNEVEN:
        raise ValueError(f"uneven must be one of {_UNEVEN}, not {uneven!r}")
    entries = _check_plan(plan)
    if isinstance(model_or_path, (str, bytes, os.PathLike)):
        return _shard_file(os.fsdecode(model_or_path), rank, world_size, entries, num_threads, base_dir, stats,
                           uneven)
    return _shard_model(model_or_path, rank, world_size, entries, stats, uneven)


# ---- the plan ------------------------------------------------------------------------


def _count(what: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return operator.index(value)


def _check_plan(plan: Mapping | None) -> list[tuple[str, int | str]]:
    if plan is None:
        return []
    if not isinstance(plan, Mapping):
        raise TypeError(f"plan must be a mapping of names or patterns to an axis or 'replicate', "
                        f"not {type(plan).__name__}")
    entries = []
    for key, value in plan.items():
        if not isinstance(key, str):
            raise TypeError(f"plan keys are tensor names or patterns (str), not {type(key).__name__}: {key!r}")
        if isinstance(value, str):
            if value != REPLICATE:
                raise ValueError(f"plan[{key!r}]: {value!r}; the value is an axis (int) or 'replicate'")
        elif isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
            raise ValueError(f"plan[{key!r}]: {value!r}; the value is an axis (int) or 'replicate'")
        else:
            value = operator.index(value)
        entries.append((key, value))
    return entries


def _decide(entries: list[tuple[str, int | str]], shapes: dict[str, tuple[int, ...]], world_size: int,
            uneven: str) -> dict[str, int | str]:
    """name -> axis (normalized) or REPLICATE for every initializer, with
    every entry's errors raised before anything is read."""
    exact = {k: v for k, v in entries if k in shapes}
    patterns = [(k, v) for k, v in entries if k not in shapes]
    unmatched = [k for k, _ in patterns if not any(fnmatch.fnmatchcase(n, k) for n in shapes)]
    if unmatched:
        raise ValueError(f"plan entries that match no initializer of the main graph: {unmatched!r} "
                         f"({len(shapes)} initializers; names and fnmatch patterns are matched whole, "
                         "case-sensitively)")
    decided: dict[str, int | str] = {}
    for name, shape in shapes.items():
        key, value = (name, exact[name]) if name in exact else next(
            ((k, v) for k, v in patterns if fnmatch.fnmatchcase(name, k)), (None, REPLICATE))
        if not isinstance(value, str):  # an axis (the one str _check_plan lets through is REPLICATE)
            rank = len(shape)
            if not -rank <= value < rank:
                raise ValueError(f"plan[{key!r}]: tensor {name!r} of shape {shape} has no axis {value}"
                                 + (" (it is a scalar)" if rank == 0 else f" (axes -{rank}..{rank - 1})"))
            value %= rank
            if uneven == "error" and shape[value] % world_size:
                raise ValueError(f"plan[{key!r}]: axis {value} of tensor {name!r} (shape {shape}) has "
                                 f"{shape[value]} elements, which world_size {world_size} does not divide "
                                 "(uneven='error')")
        decided[name] = value
    return decided


def _index(shape: tuple[int, ...], axis: int | str, rank: int, world_size: int) -> tuple[slice, ...]:
    if isinstance(axis, str):  # REPLICATE
        return ()
    start, stop = shard_bounds(shape[axis], rank, world_size)
    return (slice(None),) * axis + (slice(start, stop),)


# ---- putting a part into a tensor ---------------------------------------------------


def _set_payload(tensor: Any, dims: tuple[int, ...], buffer: Any, keep_location: bool, entry: bool = False) -> None:
    """``tensor``'s dims and raw_data (``buffer``, shared, not copied) set
    to a part; data_location as a load leaves it (``keep_location``: the
    tensor was external, and a load marks it DEFAULT, or, read from an
    .onnxz entry (``entry``), clears it)."""
    had_location = tensor.HasField("data_location")
    location = tensor.data_location
    tensor.ClearField("dims")
    tensor.dims.extend(dims)
    _C._set_fetched_payload(tensor, buffer, entry)  # raw_data = buffer, external_data cleared
    if keep_location:
        return
    if had_location:
        tensor.data_location = location
    else:
        tensor.ClearField("data_location")


def _cut_loaded(tensor: Any, index: tuple[slice, ...]) -> None:
    """Cuts ``tensor`` (its values loaded) down to ``index``, in memory:
    the part of a raw payload of whole-byte elements is a view of it when
    it is contiguous there; other parts (non-contiguous, packed types,
    values in typed fields) are written once by numpy_helper.from_array."""
    from onnxio import helper, numpy_helper

    array = numpy_helper.to_array(tensor)
    part = array[index]
    if part.shape == array.shape:
        return
    payload = numpy_helper._raw_payload(tensor) if tensor.HasField("raw_data") else None
    if payload is not None and memoryview(payload).nbytes == array.nbytes:
        # raw_data holds the array's bytes as they are: the part's bytes
        # are a view of them when contiguous, else one copy.
        _set_payload(tensor, part.shape, numpy_helper._little_endian_buffer(part), False)
        return
    if tensor.data_type == tensor.STRING:
        tensor.ClearField("dims")
        tensor.dims.extend(part.shape)
        tensor.ClearField("string_data")
        tensor.string_data.extend(numpy_helper.from_array(np.ascontiguousarray(part)).string_data)
        return
    made = numpy_helper.from_array(np.ascontiguousarray(part))
    if payload is None:  # values in a typed field: they move to raw_data
        tensor.ClearField(helper.tensor_dtype_to_field(tensor.data_type))
    _set_payload(tensor, part.shape, numpy_helper._raw_payload(made), False)


def _payload_size(tensor: Any) -> int:
    """Bytes of ``tensor``'s values (loaded), as a load counts payloads."""
    from onnxio import numpy_helper

    if tensor.HasField("raw_data"):
        return memoryview(numpy_helper._raw_payload(tensor)).nbytes
    if tensor.data_type == tensor.STRING:
        return sum(len(s) for s in tensor.string_data)
    return numpy_helper.to_array(tensor).nbytes


def _new_stats() -> dict:
    return {"bytes_read": 0, "payload_bytes": 0, "shard_bytes": 0, "split_payload_bytes": 0,
            "replicated_payload_bytes": 0, "other_payload_bytes": 0, "runs": 0, "split": [], "replicated": []}


def _count_tensor(st: dict, name: str, axis: int | str, whole: int, part: int) -> None:
    kind = "replicated" if axis == REPLICATE else "split"
    st[kind].append(name)
    st[f"{kind}_payload_bytes"] += whole
    st["payload_bytes"] += whole
    st["shard_bytes"] += part


# ---- from a path: only this rank's bytes ---------------------------------------------


def _shard_file(path: str, rank: int, world_size: int, entries, num_threads: int, base_dir, stats, uneven: str):
    import onnxio
    from onnxio import numpy_helper
    from onnxio.slices import TensorFile

    st = _new_stats()
    with TensorFile(path, num_threads=num_threads, base_dir=base_dir) as f:
        names = f.names()
        shapes = {n: f.info(n)[1] for n in names}
        decided = _decide(entries, shapes, world_size, uneven)
        main = set(names)
        seen: dict[str, int] = {}

        def payload_fn(tensor, size, external):
            # The main graph's initializers are read below, part by part;
            # every other payload is loaded whole (and counted).
            name = tensor.name
            if name in main:
                seen[name] = seen.get(name, 0) + 1
                return False
            st["other_payload_bytes"] += size
            return True

        kwargs: dict[str, Any] = {"num_threads": num_threads, "payload_fn": payload_fn}
        if base_dir is not None:
            kwargs["base_dir"] = base_dir
        model = onnxio.load(path, **kwargs)
        twice = sorted(n for n, c in seen.items() if c > 1)
        if twice:
            raise ValueError(f"{path}: {twice!r} name an initializer of the main graph and another tensor "
                             "(a Constant value, a subgraph's initializer, ...), which onnxio.shard cannot "
                             "tell apart while reading a file: shard the loaded model instead "
                             "(onnxio.shard(onnxio.load(path), ...))")
        st["bytes_read"] += st["other_payload_bytes"]
        st["payload_bytes"] += st["other_payload_bytes"]
        with open(path, "rb") as head:
            archive = _C._bytes_are_archive(head.read(64))
        for tensor in model.graph.initializer:
            name = tensor.name
            axis = decided[name]
            index = _index(shapes[name], axis, rank, world_size)
            if name not in seen:
                # Its values came with the structure (a typed field, or
                # strings): nothing more to read; cut in memory.
                whole = _payload_size(tensor)
                _cut_loaded(tensor, index)
                _count_tensor(st, name, axis, whole, _payload_size(tensor))
                continue
            read: dict = {}
            part, _ = f._read_tensor(name, index, stats=read)
            external = tensor.data_location == tensor.EXTERNAL
            _set_payload(tensor, tuple(part.dims), numpy_helper._raw_payload(part), external, archive and external)
            st["bytes_read"] += read["bytes_read"]
            st["runs"] += read["runs"]
            _count_tensor(st, name, axis, read["payload_bytes"], read["bytes"])
    if stats is not None:
        stats.update(st)
    return model


# ---- from a model in memory ------------------------------------------------------------


def _shard_model(model: Any, rank: int, world_size: int, entries, stats, uneven: str):
    import onnxio

    source = _C._coerce(model)  # an onnx package message too
    if not isinstance(source, onnxio.ModelProto):
        raise TypeError(f"expected a path or a ModelProto, not {type(model).__name__}")
    out = onnxio.ModelProto()
    out.CopyFrom(source)  # payloads shared, not copied
    st = _new_stats()
    inits = list(out.graph.initializer)
    shapes = {t.name: tuple(t.dims) for t in inits}
    decided = _decide(entries, shapes, world_size, uneven)
    for tensor in inits:
        if tensor.data_location == tensor.EXTERNAL:
            raise ValueError(f"tensor {tensor.name!r}: its data is external and not loaded; pass the model's "
                             "path to read only this rank's part, or load its external data first")
        axis = decided[tensor.name]
        whole = _payload_size(tensor)
        _cut_loaded(tensor, _index(shapes[tensor.name], axis, rank, world_size))
        _count_tensor(st, tensor.name, axis, whole, _payload_size(tensor))
    if stats is not None:
        stats.update(st)
    return out
