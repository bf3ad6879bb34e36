"""Slices of tensors read straight from a model file.

``onnxio.read_tensor(source, name, index)`` gives ``to_array(tensor)[index]``
for an initializer of a model file without loading the model: the file's
structure is parsed from a private mapping (no payload page is read), then
only the bytes of the requested elements are read, one ``pread`` per
contiguous run, on the library's thread pool (``onnxio_tensor_file_read`` of
the C library, which holds every rule: bounds, packed types, where the
bytes are). The source is an ``.onnx`` file, an ``.onnx`` file with external
data, or an ``.onnxz`` archive.

``index`` is a numpy basic index: integers (negative ones count from the
end; the axis is dropped), slices with step 1 or None (clamped as numpy
clamps them), and one Ellipsis; fewer entries than axes leave the rest
whole. Anything else (steps other than 1, None/newaxis, arrays, lists,
booleans) raises ``IndexError``. For the 4- and 2-bit types each run of
the slice must begin and end on whole bytes of the payload (``ValueError``
otherwise).

Bytes read: pass ``stats={}`` and it is filled with ``bytes`` (of the
slice), ``bytes_read`` (payload bytes read for it, counted by the reader:
structure not included), ``runs`` (preads) and ``payload_bytes`` (of the
whole tensor). With ``no_copy=True`` and a slice that is one contiguous run
of a byte-sized type, the array is a view of the file's private mapping
(nothing is read until it is used: ``bytes_read`` is 0 and ``view`` True);
otherwise it is read as without ``no_copy``.

``TensorFile(path)`` opens a file once for many reads (the structure is
parsed once); ``read_tensor`` also takes one as its source.
"""

from __future__ import annotations

import operator
import os
from typing import Any

import numpy as np

from onnxio import _onnxio as _C

__all__ = ["TensorFile", "read_tensor"]


class TensorFile:
    """A model file opened for slices: its structure parsed, no payload read.

    ``names()`` lists the main graph's initializers, ``info(name)`` gives
    ``(data_type, shape)``, ``read(name, index)`` reads a slice. Close it
    with ``close()`` or a ``with`` block (arrays already returned stay
    valid). Reads may come from several threads; a ``close()`` while some
    are in flight lets them finish (the last one closes the file), and
    every call after it raises ``ValueError``."""

    def __init__(self, path: str | os.PathLike, *, num_threads: int = 0, base_dir: str | os.PathLike | None = None,
                 max_expansion: int = 0):
        from onnxio._remote import local_dir

        kwargs: dict[str, Any] = {"num_threads": num_threads, "max_expansion": max_expansion}
        if base_dir is not None:
            kwargs["base_dir"] = local_dir(os.fspath(base_dir))
        self.path = local_dir(os.fspath(path))  # a file:// URL is its path
        self._cap = _C._tensor_file_open(self.path, **kwargs)

    def close(self) -> None:
        if self._cap is not None:
            _C._tensor_file_close(self._cap)
            self._cap = None

    def __enter__(self) -> TensorFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _handle(self):
        if self._cap is None:
            raise ValueError(f"{self.path}: the TensorFile is closed")
        return self._cap

    def names(self) -> list[str]:
        """Names of the main graph's initializers, in file order."""
        return [n for n, _, _ in _C._tensor_file_initializers(self._handle())]

    def info(self, name: str) -> tuple[int, tuple[int, ...]]:
        """``(data_type, shape)`` of initializer ``name``; ``KeyError`` when there is none."""
        found = _C._tensor_file_info(self._handle(), name)
        if found is None:
            raise KeyError(f"{self.path} has no initializer named {name!r}")
        return found[1], tuple(found[2])

    def read(self, name: str, index: Any = None, *, no_copy: bool = False, stats: dict | None = None) -> np.ndarray:
        """``numpy_helper.to_array(initializer)[index]``, reading only the slice's bytes."""
        from onnxio import numpy_helper

        data_type, shape = self.info(name)
        if data_type == 8:  # STRING: the values are in the structure, one string per element
            ranges, kept = _ranges(index, shape, name)
            import onnxio

            model = onnxio.load_model(self.path, load_external_data=False)
            tensor = next(t for t in _initializers(model.graph) if t.name == name)
            whole = numpy_helper.to_array(tensor)
            return whole[tuple(slice(a, b) for a, b in ranges)].reshape(kept)
        tensor, kept = self._read_tensor(name, index, no_copy=no_copy, stats=stats)
        return numpy_helper.to_array(tensor).reshape(kept)

    def _read_tensor(self, name: str, index: Any = None, *, no_copy: bool = False, stats: dict | None = None):
        """The slice as a TensorProto (``data_type`` and ``name`` of the
        initializer, ``dims`` the slice's lengths on every axis, ``raw_data``
        its bytes, packed types packed) and the shape numpy's indexing gives
        (integer axes dropped); ``stats`` as ``read``. ``onnxio.shard`` puts
        such payloads into a model without another copy."""
        _, shape = self.info(name)
        ranges, kept = _ranges(index, shape, name)
        tensor, (nbytes, read, runs, payload), view = _C._tensor_file_read(self._handle(), name, ranges, no_copy)
        if stats is not None:
            stats.update(bytes=nbytes, bytes_read=read, runs=runs, payload_bytes=payload, view=bool(view))
        return tensor, kept


def _initializers(graph):
    """The initializers of ``graph``, then those of its subgraphs (the
    order in which the slice reader looks a name up)."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from _initializers(g)


def read_tensor(source: str | os.PathLike | TensorFile, name: str, index: Any = None, *, no_copy: bool = False,
                num_threads: int = 0, base_dir: str | os.PathLike | None = None,
                stats: dict | None = None) -> np.ndarray:
    """Initializer ``name`` of the model file ``source`` (a path or a
    ``TensorFile``), or its slice ``index``, as a numpy array equal to
    ``numpy_helper.to_array(load(source)...)[index]``, reading only the
    slice's bytes (see the module docstring for ``index``, ``no_copy`` and
    ``stats``).

    Raises ``KeyError`` (no such initializer), ``IndexError`` (an index out
    of bounds or of a kind other than int, slice with step 1, Ellipsis),
    ``ValueError`` (a packed 4-/2-bit slice that splits bytes; values in
    a typed field of more than 64 MiB decoded), and the errors of
    ``onnxio.load`` for the file and its external data."""
    if isinstance(source, TensorFile):
        return source.read(name, index, no_copy=no_copy, stats=stats)
    with TensorFile(source, num_threads=num_threads, base_dir=base_dir) as f:
        return f.read(name, index, no_copy=no_copy, stats=stats)


def _ranges(index: Any, shape: tuple[int, ...], name: str) -> tuple[list[tuple[int, int]], tuple[int, ...]]:
    """``index`` over ``shape`` as one (start, stop) per axis, and the
    result's shape (integer axes dropped), with numpy's rules."""
    rank = len(shape)
    if index is None:
        items: tuple = ()
    elif isinstance(index, tuple):
        items = index
    else:
        items = (index,)
    ellipses = sum(1 for it in items if it is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    explicit = len(items) - ellipses
    if explicit > rank:
        raise IndexError(f"too many indices for tensor {name!r}: it is {rank}-dimensional, but {explicit} were indexed")
    expanded: list = []
    for it in items:
        if it is Ellipsis:
            expanded.extend([slice(None)] * (rank - explicit))
        else:
            expanded.append(it)
    expanded.extend([slice(None)] * (rank - len(expanded)))
    ranges: list[tuple[int, int]] = []
    kept: list[int] = []
    for axis, (it, dim) in enumerate(zip(expanded, shape)):
        if isinstance(it, slice):
            if it.step not in (None, 1):
                raise IndexError(f"tensor {name!r}: axis {axis}: step {it.step!r}; only steps of 1 are read "
                                 "(slice the result for others)")
            start, stop, _ = it.indices(dim)
            stop = max(stop, start)
            ranges.append((start, stop))
            kept.append(stop - start)
            continue
        if it is None:
            raise IndexError(f"tensor {name!r}: None (numpy.newaxis) is not supported; reshape the result")
        if isinstance(it, (bool, np.bool_)) or not hasattr(it, "__index__"):
            raise IndexError(f"tensor {name!r}: only integers, slices with step 1 and Ellipsis are valid indices, "
                             f"not {type(it).__name__}")
        i = operator.index(it)
        if not -dim <= i < dim:
            raise IndexError(f"index {i} is out of bounds for axis {axis} with size {dim} (tensor {name!r})")
        i += dim if i < 0 else 0
        ranges.append((i, i + 1))
    return ranges, tuple(kept)
