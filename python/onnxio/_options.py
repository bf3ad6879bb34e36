"""The option classes of loads and saves (ParseOptions, SerializeOptions, ExternalDataOptions,
TensorBufferOptions) and the keyword arguments they become."""

from __future__ import annotations

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes and exceptions)

class _Options:
    """Shared behaviour of the option classes: keyword construction with
    checked names, equality, repr."""

    __slots__ = ()
    _defaults: dict = {}

    def __init__(self, **kwargs):
        for name, default in self._all_defaults().items():
            setattr(self, name, kwargs.pop(name, default))
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}")

    @classmethod
    def _all_defaults(cls) -> dict:
        out: dict = {}
        for klass in reversed(cls.__mro__):
            out.update(klass.__dict__.get("_defaults", {}))
        return out

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._all_defaults())

    def __repr__(self):
        args = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._all_defaults())
        return f"{type(self).__name__}({args})"


class TensorBufferOptions(_Options):
    """How tensor payloads are placed in memory (``onnxio_tensor_buffer_options``).

    raw_data_threshold: payloads of at least this many bytes are "large":
        copied by the thread pool, borrowed by no_copy, consolidated.
        0 means the default, 1024 bytes.
    alignment: alignment in bytes (a power of two) of large payload buffers
        and of offsets in consolidated buffers and external data files.
        0 means the default: 64 in memory, 4096 in external data files;
        1 means none.
    """

    __slots__ = ("raw_data_threshold", "alignment")
    _defaults = {"raw_data_threshold": 0, "alignment": 0}


class ParseOptions(TensorBufferOptions):
    """Options of a load or parse (``onnxio_parse_options``), with the
    fields of TensorBufferOptions.

    num_threads: threads for payload copies and external data reads
        (0: one per core; 1: none). The result does not depend on it.
    no_copy: payloads point into the input (the file's memory mapping, or
        the bytes object) instead of being copied; the mapping or object
        stays alive as long as one of them does.
    load_external_data: None (the default: on for files, and for bytes when
        base_dir is given), True or False.
    base_dir: the directory external data locations are resolved under
        (default: the model file's directory).
    skip_raw_data: parse structure only; payloads keep their size but no
        bytes (saving such a model raises EncodeError).
    max_depth: maximum message nesting (0: 100, protobuf's default); deeper
        input raises DecodeError. Values above 1000 (ONNXIO_MAX_DEPTH)
        are taken as 1000, however large; a negative one is a ValueError.
    payload_fn: None, or ``payload_fn(tensor, size, external)`` called once
        per payload before it is read: return None/True to load it, False
        to skip it (an external one stays external), or a writable
        C-contiguous buffer of at least ``size`` bytes to copy it into
        (the tensor then keeps that object alive). ``tensor`` must not be
        modified. An exception it raises stops the load and propagates.
    verify_checksum: check the SHA-1 of external data files that have a
        "checksum" key; a mismatch raises ExternalDataError.
    verify_crc: .onnxz archives: check the CRC-32 of every entry the load
        reads. None (the default): on for copy loads, off with no_copy
        (checking would read every page of the mapping); True or False. A
        mismatch raises ExternalDataError.
    max_expansion: the most a load may allocate for structure and payloads
        (copies, inflated .onnxz entries, payload_fn placements), as a
        multiple of the bytes it reads (the model and every distinct
        external data file or archive entry), plus 1 MiB
        (``onnxio_parse_options.max_expansion``,
        ``ONNXIO_EXPANSION_ALLOWANCE``). 0: the library's default, 100;
        ``2**64 - 1``: no limit. Past it the load raises DecodeError before
        allocating more: it stops zip bombs, overlapping external data
        ranges and floods of empty messages.
    direct_io: copy loads read the payload ranges that the page cache does
        not hold with direct I/O (O_DIRECT, Linux): from the device into the
        payload memory, with no page-cache copy in between, and those pages
        are then not cached for a later load (``onnxio_parse_options.direct_io``).
        None (the default) and True: on; False: every read goes through the
        page cache. Either way, a copy load whose files, with what of them
        is cached, do not fit in the available memory beside its copies
        drops what it has read from the page cache as it goes.
    """

    __slots__ = ("num_threads", "no_copy", "load_external_data", "base_dir", "skip_raw_data", "max_depth",
                 "payload_fn", "verify_checksum", "verify_crc", "max_expansion", "direct_io")
    _defaults = {"num_threads": 0, "no_copy": False, "load_external_data": None, "base_dir": None,
                 "skip_raw_data": False, "max_depth": 0, "payload_fn": None, "verify_checksum": False,
                 "verify_crc": None, "max_expansion": 0, "direct_io": None}

    def _kwargs(self) -> dict:
        return {n: getattr(self, n) for n in self._all_defaults()}


class ExternalDataOptions(_Options):
    """Moving payloads to external data files on save
    (``onnxio_external_data_options``).

    location: the data file's name, relative to the model's directory
        (None: payloads stay in the model, unless all_tensors_to_one_file
        is False).
    size_threshold: payloads of at least this many bytes move (0: 1024).
    all_tensors_to_one_file: None/True: all to ``location``; False: one
        file per tensor, named from the tensor.
    convert_attribute: also move tensors in attributes, sparse tensors and
        functions (default: initializers only, as onnx).
    max_file_size: when non-zero, split the data into files of at most
        this many bytes ("<stem>-00001-of-0000N<ext>").
    checksum: write a "checksum" key (SHA-1 of the data file).
    """

    __slots__ = ("location", "size_threshold", "all_tensors_to_one_file", "convert_attribute", "max_file_size",
                 "checksum")
    _defaults = {"location": None, "size_threshold": 0, "all_tensors_to_one_file": None,
                 "convert_attribute": False, "max_file_size": 0, "checksum": False}


class SerializeOptions(TensorBufferOptions):
    """Options of a save (``onnxio_serialize_options``), with the fields of
    TensorBufferOptions.

    num_threads: threads for payload writes (0: one per core; 1: none);
        the bytes written do not depend on it.
    external_data: an ExternalDataOptions (default: no external data).
    max_depth: a tree nested deeper than this is refused with EncodeError
        (``onnxio_serialize_options.max_depth``): 0 means 100, what a load
        reads back by default; values above 1000 are taken as 1000. Load
        what was saved with a higher value with the same ``max_depth``.
    fsync: True (default): every file is fsync'd before it replaces its
        target (a crash or a power cut leaves the old files or the new
        ones). False: no fsync, for scratch outputs: a killed save still
        leaves the old or the new files, a power cut may leave a new file
        incomplete (``onnxio_serialize_options.fsync``).
    max_expansion: a save whose payloads add up to more than this many
        times the distinct bytes they come from (tensors sharing one buffer),
        plus 1 MiB, is refused with ExpansionError before anything is
        written (``onnxio_serialize_options.max_expansion``; 0: 100).
    """

    __slots__ = ("num_threads", "external_data", "max_depth", "fsync", "max_expansion")
    _defaults = {"num_threads": 0, "external_data": None, "max_depth": 0, "fsync": True, "max_expansion": 0}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.external_data is None:
            self.external_data = ExternalDataOptions()

    def _kwargs(self) -> dict:
        out = {"num_threads": self.num_threads, "raw_data_threshold": self.raw_data_threshold,
               "alignment": self.alignment, "max_depth": self.max_depth, "fsync": self.fsync,
               "max_expansion": self.max_expansion}
        ext = self.external_data or ExternalDataOptions()
        out.update({n: getattr(ext, n) for n in ExternalDataOptions._all_defaults()})
        return out


def _check_options(options, cls):
    if options is not None and not isinstance(options, cls):
        raise TypeError(f"options must be an onnxio.{cls.__name__} or None, not {type(options).__name__}")


def _parse_kwargs(options, explicit: dict) -> dict:
    """The C keyword arguments: `options` first, then every explicit
    keyword argument that differs from its default."""
    _check_options(options, ParseOptions)
    out = (options or ParseOptions())._kwargs()
    defaults = ParseOptions._all_defaults()
    for name, value in explicit.items():
        if value is not defaults[name] and value != defaults[name]:
            out[name] = value
    return out
