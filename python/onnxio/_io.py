"""Loads and saves: onnxio.load / load_model / load_model_from_string / load_tensor and
save / save_model / save_tensor, as onnx's functions of the same names, on the C library."""

from __future__ import annotations

import os

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes and exceptions)
from onnxio._options import (
    ExternalDataOptions, ParseOptions, SerializeOptions, _check_options, _parse_kwargs, _takes_options,
)
from onnxio._formats import (
    _BYTES_OVERHEAD, _DEFAULT_FORMAT, _file_path, _format_text, _is_bytes_like, _is_path, _is_remote, _parse_text,
    _read_bytes, _remote_module, _resolve_format, _write_bytes,
)
from onnxio._progress import _with_progress

def _load(cls, f, fmt, load_external_data, kwargs):
    """Loads one message of class `cls` from a path, file object or bytes."""
    if _is_remote(f):  # a URL or an fsspec file object: onnxio/_remote.py
        from onnxio import _remote

        local = _remote.local_path(f)
        if local is None:
            if fmt not in (None, _DEFAULT_FORMAT):
                raise ValueError(f"remote loads read the protobuf format only, not {fmt!r}")
            return _remote.load(cls, f, load_external_data, kwargs)
        f = local  # file:// and local://: loaded as the path is, with every local check
    if isinstance(kwargs.get("base_dir"), str) and "://" in kwargs["base_dir"]:
        kwargs["base_dir"] = _remote_module().local_dir(kwargs["base_dir"])
    fmt = _resolve_format(fmt, f)
    path = None if _is_bytes_like(f) else _file_path(f)
    if fmt != _DEFAULT_FORMAT:
        msg = _parse_text(fmt, _read_bytes(f), cls, kwargs.get("max_depth") or 0, kwargs.get("max_expansion") or 0)
        if cls is ModelProto and load_external_data and path and not kwargs.get("skip_raw_data"):  # noqa: F405
            ext = {k: v for k, v in kwargs.items() if k != "base_dir" and k != "load_external_data"}
            _onnxio._load_external_data(msg, kwargs.get("base_dir") or os.path.dirname(path), **ext)
        return msg
    if cls is ModelProto and not load_external_data:  # noqa: F405
        kwargs["load_external_data"] = False
    if _is_path(f):
        return _onnxio._load_file(f, cls, **kwargs)
    if _is_bytes_like(f):
        return _onnxio._load_bytes(f, cls, **kwargs)
    if not (hasattr(f, "read") and callable(f.read)):
        raise TypeError(f"expected a path, a file object or bytes, not {type(f).__name__}")
    data = f.read()
    if cls is ModelProto and path and load_external_data and kwargs.get("base_dir") is None:  # noqa: F405
        # As onnx: external data of a named file object is under its directory.
        kwargs["base_dir"] = os.path.dirname(path)
    return _onnxio._load_bytes(data, cls, **kwargs)


@_takes_options(ParseOptions)
def load_model(
    f,
    format: str | None = None,  # noqa: A002 (onnx's name)
    load_external_data: bool = True,
    *,
    options: ParseOptions | None = None,
    progress=None,
    **explicit,
) -> ModelProto:  # noqa: F405
    """Loads a ModelProto, as ``onnx.load_model``.

    Args:
        f: a path (str or os.PathLike), a file object (its ``read()`` bytes;
            its ``name``, when it has one, locates external data), or a
            bytes-like object holding the serialized model. Any of them may
            hold an .onnxz archive (recognized by its first bytes, whatever
            the name): its tensors are read from their entries (with
            ``load_external_data=False`` they stay external, their
            ``location`` naming entries, as ``replace_archive_model``
            wants them).
        format: "protobuf" (default; inferred from the file extension when
            ``f`` is a path) or a textual format of onnx: "textproto" and
            "json" (read by the C library as protobuf's text_format and
            json_format read them), "onnxtxt" (ONNX's textual syntax, read
            by the C library as onnx.parser reads it).
        load_external_data: read tensors stored in external data files, from
            the model's directory (or ``base_dir``). A bytes input reads them
            only when ``base_dir`` is given.
        no_copy, num_threads, base_dir, skip_raw_data, verify_checksum,
        max_depth, raw_data_threshold, alignment, payload_fn, verify_crc,
        max_expansion, direct_io: see ``ParseOptions``. With ``no_copy``, payloads point into the file's
            memory mapping (or into ``f`` when it is bytes-like, which then
            stays alive and, if it is a bytearray, cannot be resized while
            the model uses it).
        options: a ParseOptions giving all of these at once; keyword
            arguments that differ from their defaults override it.
        progress: None (default: silent), a callable ``progress(done,
            total)`` called with the payload bytes placed so far and in all
            (``onnxio_parse_options.progress``: on the calling thread, with
            the GIL, at least every MiB, last with done == total; an
            exception it raises stops the load and propagates), or True: a
            tqdm bar when tqdm is installed, else a line on stderr drawn
            only when it is a terminal.

    Returns:
        The ModelProto.

    Raises:
        FileNotFoundError, OSError, onnxio.DecodeError (malformed bytes,
        nesting past max_depth, or past max_expansion), onnxio.ArchiveError (a DecodeError: a
        malformed or unsafe .onnxz archive), onnxio.ExternalDataError
        (refused external data; in an archive, a tensor whose location is
        not an entry or whose range does not fit it, a CRC-32 mismatch),
        TypeError, ValueError.
    """
    kwargs = _parse_kwargs(options, explicit)
    return _with_progress(progress, "loading", f, kwargs,
                          lambda: _load(ModelProto, f, format, load_external_data, kwargs))  # noqa: F405


@_takes_options(ParseOptions)
def load_model_from_string(
    s,
    format: str = _DEFAULT_FORMAT,  # noqa: A002
    *,
    options: ParseOptions | None = None,
    progress=None,
    **explicit,
) -> ModelProto:  # noqa: F405
    """Parses a serialized ModelProto from a bytes-like object, as
    ``onnx.load_model_from_string``. External data is read only when
    ``base_dir`` is given. ``s`` may hold an .onnxz archive, whose tensors
    are read from its entries. The other keyword arguments (progress too)
    are load_model's.
    Raises onnxio.DecodeError for malformed bytes, TypeError for a str
    in the protobuf format."""
    kwargs = _parse_kwargs(options, explicit)
    if format != _DEFAULT_FORMAT:
        return _parse_text(format, s, ModelProto, kwargs.get("max_depth") or 0,  # noqa: F405
                           kwargs.get("max_expansion") or 0)
    if isinstance(s, str):
        raise TypeError(f"Parameter 'serialized' must be bytes, but got type: {type(s)}")
    return _with_progress(progress, "loading", None, kwargs,
                          lambda: _onnxio._load_bytes(s, ModelProto, **kwargs))  # noqa: F405


@_takes_options(ParseOptions, only=("no_copy", "num_threads", "skip_raw_data", "max_depth", "raw_data_threshold",
                                    "alignment", "max_expansion"))
def load_tensor(
    f,
    format: str | None = None,  # noqa: A002
    **explicit,
) -> TensorProto:  # noqa: F405
    """Loads a TensorProto from a path, file object or bytes-like object,
    as ``onnx.load_tensor`` (the keyword arguments are load_model's)."""
    kwargs = _parse_kwargs(None, explicit)
    return _load(TensorProto, f, format, False, kwargs)  # noqa: F405


@_takes_options(ParseOptions, only=("no_copy", "skip_raw_data", "max_depth", "max_expansion"))
def load_tensor_from_string(
    s,
    format: str = _DEFAULT_FORMAT,  # noqa: A002
    **explicit,
) -> TensorProto:  # noqa: F405
    """Parses a serialized TensorProto, as ``onnx.load_tensor_from_string``
    (the keyword arguments are load_model's)."""
    if format != _DEFAULT_FORMAT:
        return _parse_text(format, s, TensorProto, explicit.get("max_depth", 0),  # noqa: F405
                           explicit.get("max_expansion", 0))
    if isinstance(s, str):
        raise TypeError(f"Parameter 'serialized' must be bytes, but got type: {type(s)}")
    return _onnxio._load_bytes(s, TensorProto, **explicit)  # noqa: F405


# ---- save -----------------------------------------------------------------------


def _save_kwargs(options, explicit: dict) -> dict:
    _check_options(options, SerializeOptions)
    out = (options or SerializeOptions())._kwargs()
    defaults = dict(SerializeOptions._all_defaults(), **ExternalDataOptions._all_defaults())
    for name, value in explicit.items():
        if value is not defaults[name] and value != defaults[name]:
            out[name] = value
    return out


def _write_pending_external(proto, path: str, kwargs: dict):
    """A copy of `proto` whose tensors marked external in Python (by
    external_data_helper.convert_model_to_external_data) were written to
    their files under the model's directory, as onnx.save does with
    write_external_data_tensors."""
    from onnxio import external_data_helper

    copy = type(proto)()
    copy.CopyFrom(proto)
    written = external_data_helper.write_external_data_tensors(copy, os.path.dirname(path))
    return copy if written is None else written


def _is_archive_name(f, path) -> bool:
    """True when saving to `f` means an .onnxz archive: a path the library
    calls an archive's (onnxio_path_is_archive, on the name as given), or a
    file object whose name is one."""
    if _is_path(f):
        return _onnxio._path_is_archive(f)
    return path is not None and _onnxio._path_is_archive(path) and not _is_bytes_like(f)


def _serialize(proto, kwargs: dict) -> bytes:
    """The bytes of `proto` for a file object. The library serializes to
    memory with the default max_depth only (onnxio_serialized_size takes no
    options); a larger max_depth goes through a save to a private temporary
    file, which takes it."""
    if not kwargs.get("max_depth"):
        return _onnxio._serialize(proto)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="onnxio-") as d:
        tmp = os.path.join(d, "message.pb")
        _onnxio._save_file(proto, tmp, num_threads=kwargs.get("num_threads", 0), max_depth=kwargs["max_depth"])
        with open(tmp, "rb") as readable:
            return readable.read()


def _check_archive_save(proto, f, fmt, *, save_as_external_data, location, all_tensors_to_one_file, kwargs):
    """ValueError for what an .onnxz save cannot do."""
    if not _is_path(f):
        raise ValueError("an .onnxz archive is written only to a path (the library writes it atomically, by "
                         f"name), not to a file object ({getattr(f, 'name', f)!r})")
    if fmt != _DEFAULT_FORMAT:
        raise ValueError(f"an .onnxz archive holds a protobuf model; format {fmt!r} does not apply")
    refused = [name for name, given in (("save_as_external_data", bool(save_as_external_data)),
                                        ("location", location is not None),
                                        ("all_tensors_to_one_file=False", all_tensors_to_one_file is False),
                                        ("max_external_file_size", bool(kwargs.get("max_file_size"))),
                                        ("checksum", bool(kwargs.get("checksum")))) if given]
    if refused:
        raise ValueError(f"{', '.join(refused)}: external data options do not apply to an .onnxz archive "
                         f"({os.fsdecode(f)!r}), whose large tensors are entries of the archive itself")
    if _onnxio._has_pending_external(proto):
        raise ValueError("tensors marked external in Python (convert_model_to_external_data) cannot be saved to an "
                         ".onnxz archive; large tensors become entries of the archive by themselves")


def replace_archive_model(model, path, *, num_threads: int = 0) -> None:
    """Replaces the model (the entry ``__MODEL_PROTO``) of the existing
    .onnxz archive at ``path`` by ``model``, in place: the new model and
    central directory are appended, no tensor entry moves or is rewritten,
    and a crash at any point leaves a valid archive with either the old or
    the new model. The old model's bytes stay in the file, unreferenced,
    until the archive is saved anew with ``save``.

    ``model`` is typically the archive loaded with
    ``load_external_data=False`` and then edited: its external tensors must
    name entries of the archive (offset and length within them), checked as
    on load; tensors that hold loaded raw_data are written inline in the new
    model. The GIL is released during the call; one writer at a time (a
    concurrent one gets OSError).

    Raises:
        FileNotFoundError, OSError, onnxio.ArchiveError (the file is not a
        valid archive), onnxio.ExternalDataError (a tensor refers to no
        entry, or past its end), TypeError, ValueError.
    """
    if not isinstance(model, ModelProto):  # noqa: F405
        raise TypeError(f"model must be an onnxio.ModelProto, not {type(model).__name__}")
    if not _is_path(path):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    _onnxio._archive_replace_model(model, path, num_threads=num_threads)


# onnx's own arguments (save_as_external_data ... max_external_file_size,
# with onnx's names and defaults) are written out; the options that are
# SerializeOptions' own come from the option list.
@_takes_options(SerializeOptions, only=("raw_data_threshold", "alignment", "num_threads", "max_depth", "fsync",
                                        "max_expansion", "digests"))
def save_model(
    proto,
    f,
    format: str | None = None,  # noqa: A002
    *,
    save_as_external_data: bool = False,
    all_tensors_to_one_file: bool = True,
    location: str | None = None,
    size_threshold: int = 1024,
    convert_attribute: bool = False,
    max_external_file_size: int = 0,
    checksum: bool = False,
    options: SerializeOptions | None = None,
    progress=None,
    update_model: bool = True,
    **explicit,
) -> None:
    """Saves a ModelProto, as ``onnx.save_model``: the same bytes.

    Args:
        proto: an onnxio ModelProto, or bytes of one (parsed, then saved as
            onnx does).
        f: a path (the file is written atomically: a temporary file in the
            same directory, renamed over ``f``) or a file object with
            ``write()``.
        format: as load_model.
        save_as_external_data: move payloads to external data files beside
            the model, those whose ``sys.getsizeof(raw_data)`` (as onnx
            measures: the length plus 33) is at least ``size_threshold``.
            As onnx does, ``proto`` is then changed to point at them, once
            the files are written: each moved tensor's raw_data is cleared,
            its data_location set to EXTERNAL and its external_data keys
            set (location, offset, length, checksum), the keys the saved
            model holds (``update_model=False`` leaves it as it was). Needs
            a path, or a file object with a ``name``.
        update_model: with save_as_external_data, False leaves ``proto``
            unchanged (onnxio's own, non-mutating save; the C library's
            onnxio_save_model never changes its model).
        all_tensors_to_one_file: True: one file, ``location`` (default: a
            fresh "<uuid>.data" on every save, as onnx names it); False: one
            file per tensor.
        location, convert_attribute: as onnx.
        num_threads: threads writing payloads (0: one per core); the bytes
            do not depend on it.
        alignment: offset alignment of payloads in the data file (0: the default, see SerializeOptions; 1:
            none, as onnx writes them).
        max_external_file_size: split the data into files of at most this
            many bytes (0: no limit).
        checksum: write a SHA-1 "checksum" key per external tensor.
        digests: write block digests (the SHA-256 of each MiB of every
            payload moved to external data, in the tensor's metadata_props;
            see SerializeOptions). Loads check them by default.
        raw_data_threshold: see TensorBufferOptions.
        max_depth: refuse (EncodeError) a model nested deeper than this
            (0: the default, what load reads back; see SerializeOptions). A model
            saved with a higher value loads with the same ``max_depth``.
        fsync: False skips fsync, for scratch outputs (see SerializeOptions;
            onnx never syncs).
        max_expansion: refuse (ExpansionError) a save whose payloads add up
            to more than this many times the distinct bytes they come from
            (tensors that share one buffer), plus an allowance (0: the default; see SerializeOptions).
        options: a SerializeOptions giving these at once; keyword arguments
            that differ from their defaults override it.
        progress: None (default: silent), a callable ``progress(done,
            total)`` called with the payload bytes written so far and in all
            (``onnxio_serialize_options.progress``; last with done ==
            total, before the file is replaced; an exception it raises
            stops the save, which leaves the existing files as they were,
            and propagates), or True: a tqdm bar when tqdm is installed,
            else a line on stderr drawn only when it is a terminal. Only
            saves to a path (or with external data) report progress.

    Tensors marked external in Python (external_data_helper.
    convert_model_to_external_data) are written by
    external_data_helper.write_external_data_tensors, as onnx does.

    .onnxz archives: when ``f`` is a path ending in ".onnxz", an archive is
    written (atomically): every tensor anywhere in the model (initializers,
    attributes, sparse tensors, functions) whose raw_data has at least
    ``size_threshold`` bytes (here the payload's length, not onnx's
    ``sys.getsizeof``; 0 or 1: every non-empty payload) gets a stored entry
    whose data starts at a multiple of ``alignment`` (0: the default, see SerializeOptions) in the file,
    and the model is the last entry, ``__MODEL_PROTO``. Only a path writes
    an archive: a file object whose name ends in ".onnxz" raises
    ValueError, as do the external data keywords (save_as_external_data,
    location, all_tensors_to_one_file=False, max_external_file_size,
    checksum), a format other than "protobuf", and tensors marked external
    in Python. A tensor still external (loaded with
    load_external_data=False) raises EncodeError: load its data first, or
    use replace_archive_model.

    Raises:
        OSError, onnxio.ExternalDataError (an unsafe location), onnxio.
        EncodeError (a payload skipped at load, nesting past max_depth),
        TypeError, ValueError.
    """
    given = proto  # what save_as_external_data points at the data files (an onnx package model too)
    if isinstance(proto, (bytes, bytearray, memoryview)):
        proto = _onnxio._load_bytes(proto, ModelProto, no_copy=True, load_external_data=False)  # noqa: F405
    proto = _onnxio._coerce(proto)  # an onnx package ModelProto too
    if not isinstance(proto, ModelProto):  # noqa: F405
        raise TypeError(f"proto must be an onnxio.ModelProto or bytes, not {type(proto).__name__}")
    fmt = _resolve_format(format, f)
    path = _file_path(f)
    kwargs = _save_kwargs(options, dict(explicit, checksum=checksum, max_file_size=max_external_file_size,
                                        convert_attribute=convert_attribute))
    saved = _with_progress(progress, "saving", f, kwargs,
                           lambda: _save_model(proto, f, fmt, path, kwargs, save_as_external_data=save_as_external_data,
                                               all_tensors_to_one_file=all_tensors_to_one_file, location=location,
                                               size_threshold=size_threshold, convert_attribute=convert_attribute))
    if save_as_external_data and update_model and saved is not None and not isinstance(given, (bytes, bytearray,
                                                                                              memoryview)):
        _point_at_external_data(given, saved)


def _point_at_external_data(model, saved) -> None:
    """Changes `model` as onnx.save_model changes the model it saves with
    external data: every tensor that the saved model (`saved`, its
    structure as written) holds as external becomes so in `model`, in
    place (references to its sub-messages stay valid), with the saved
    keys. The two trees have the same structure: tensors pair up in the
    order external_data_helper walks them."""
    from onnxio import external_data_helper

    for mine, theirs in zip(external_data_helper._get_all_tensors(model),
                            external_data_helper._get_all_tensors(saved)):
        external = TensorProto.EXTERNAL  # noqa: F405
        if theirs.data_location != external or (mine.data_location == external and not mine.HasField("raw_data")):
            continue
        del mine.external_data[:]
        for entry in theirs.external_data:
            mine.external_data.add(key=entry.key, value=entry.value)
        mine.data_location = external
        mine.ClearField("raw_data")


def _save_model(proto, f, fmt, path, kwargs, *, save_as_external_data, all_tensors_to_one_file, location,
                size_threshold, convert_attribute):
    """save_model once its arguments are checked. With external data: the
    structure of the model as saved (its tensors pointing at the data
    files), else None."""
    if _is_archive_name(f, path):
        _check_archive_save(proto, f, fmt, save_as_external_data=save_as_external_data, location=location,
                            all_tensors_to_one_file=all_tensors_to_one_file, kwargs=kwargs)
        # The payload's length, and 0 means "every non-empty payload" (the
        # library reads 0 as its default, 1024).
        kwargs["size_threshold"] = max(int(size_threshold), 1)
        _onnxio._save_file(proto, f, **kwargs)
        return
    if save_as_external_data:
        kwargs["all_tensors_to_one_file"] = bool(all_tensors_to_one_file)
        # onnx compares sys.getsizeof(tensor.raw_data), the payload's length
        # plus the bytes object's header, so that the same arguments move the
        # same tensors; the C library compares the length (and reads 0 as
        # its default, 1024).
        kwargs["size_threshold"] = max(int(size_threshold) - _BYTES_OVERHEAD, 1)
        if all_tensors_to_one_file:
            if location is None and path is not None:
                from onnxio import external_data_helper

                location = external_data_helper._fresh_name() + ".data"
            kwargs["location"] = location
        if path is None or (kwargs["location"] is None and all_tensors_to_one_file):
            raise ValueError("save_as_external_data needs a path, or a file object with a name")
    wants_external = kwargs.get("location") is not None or kwargs.get("all_tensors_to_one_file") is False
    if path is not None and _onnxio._has_pending_external(proto):
        proto = _write_pending_external(proto, path, kwargs)
    if fmt != _DEFAULT_FORMAT:
        if save_as_external_data:
            # As onnx.save_model: the tensors are marked external (on a copy:
            # the model passed in is not changed), their payloads written
            # to the data files, and the model written in the text format.
            from onnxio import external_data_helper

            copy = type(proto)()
            copy.CopyFrom(proto)
            external_data_helper.convert_model_to_external_data(copy, all_tensors_to_one_file, location,
                                                                size_threshold, convert_attribute)
            proto = _write_pending_external(copy, path, kwargs)
        _write_bytes(_format_text(fmt, proto), f)
        return proto if save_as_external_data else None
    if _is_path(f):
        _onnxio._save_file(proto, f, **kwargs)
        if save_as_external_data:
            # What was written, read back (its structure only: the data
            # files are not read).
            return _onnxio._load_file(f, ModelProto, load_external_data=False, no_copy=True)  # noqa: F405
    elif not wants_external:
        _write_bytes(_serialize(proto, kwargs), f)
    else:
        # The library writes files by path: save beside f's file under a
        # temporary name (data files go where they belong), then copy the
        # model bytes into f.
        tmp = f"{path}.onnxio-{os.getpid()}-{id(proto)}.tmp"
        try:
            _onnxio._save_file(proto, tmp, **kwargs)
            with open(tmp, "rb") as readable:
                data = readable.read()
            _write_bytes(data, f)
            return _onnxio._load_bytes(data, ModelProto, load_external_data=False)  # noqa: F405
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


def save_tensor(proto, f, format: str | None = None, *, num_threads: int = 0,  # noqa: A002
                max_depth: int = 0) -> None:
    """Saves a TensorProto (or any message) to a path (atomically) or a
    file object, as ``onnx.save_tensor``. max_depth: as save_model."""
    proto = _onnxio._coerce(proto)  # an onnx package message too
    fmt = _resolve_format(format, f)
    if fmt != _DEFAULT_FORMAT:
        _write_bytes(_format_text(fmt, proto), f)
    elif _is_path(f):
        _onnxio._save_file(proto, f, num_threads=num_threads, max_depth=max_depth)
    else:
        _write_bytes(_serialize(proto, {"num_threads": num_threads, "max_depth": max_depth}), f)


# onnx's aliases.
load = load_model
load_from_string = load_model_from_string
save = save_model
