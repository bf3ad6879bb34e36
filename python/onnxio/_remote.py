"""Remote sources: ``onnxio.load`` of an fsspec URL
(``s3://bucket/model.onnx``, ``https://host/model.onnx``, ``memory://m.onnx``,
any protocol fsspec knows) or of an fsspec file object (``fsspec.open(url)``
opened, or anything with ``.fs`` and ``.path``).

``file://`` and ``local://`` URLs, and fsspec file objects on the local
file system, are not remote: they load as their path does, by the
library's checked local loader (``local_path``), for a model, a
``base_dir``, ``load_external_data_for_model`` and ``read_tensor``.

fsspec is imported only here, only when such a source is given (ImportError
naming ``pip install onnxio[remote]`` otherwise); a protocol needs its own
package as well (s3fs for s3://, aiohttp for http(s)://, gcsfs for gs://).

What is fetched (every request a byte range, ``fs.cat_file(path, start,
end)``, on a thread pool of ``num_threads`` threads, 0: 16):

- The first 64 bytes (is it an ``.onnxz`` archive: onnxio_detect_format).
- An ``.onnxz`` archive (larger than 64 KiB + 64 bytes, loaded as a
  ModelProto, without verify_checksum or progress), structure first: the
  last 64 KiB, which the library opens (``onnxio_archive_open_tail``:
  end records, ZIP64 records and central directory validated as a local
  load does, names, sizes and overlaps checked); when the directory starts
  earlier the library says from where, and that range is fetched (an
  archive whose end record is not in the tail is fetched whole and loaded
  as before). Then the ``__MODEL_PROTO`` entry, parsed; the library
  resolves every external tensor to its entry (``onnxio_archive_ranges``);
  ``payload_fn`` is asked for each; only the entries kept are fetched: each
  entry's span (local header and data, ``onnxio_archive_entry_span``),
  coalesced as external data is, in parallel, into buffers whose addresses
  match the file offsets modulo 64 (aligned entries stay aligned); bytes
  the tail already holds are not fetched again. On arrival the library
  checks each entry's local header against the central directory, its
  CRC-32 (``verify_crc``, on by default) and inflates deflated entries
  (``onnxio_archive_entry_read``); payloads are views of those buffers.
  Local headers of entries never fetched are never checked (a local load
  checks them all). A whole load fetches the file plus 64 bytes.
- Any other model file, whole: one request, or 8 MiB pieces in parallel for a
  larger one, into one 64-byte-aligned buffer. The library parses it from
  that buffer with ``no_copy``: inline payloads are views of the fetched
  bytes, never copied again. A single ``.onnx`` with inline payloads is thus
  fetched exactly once, byte for byte: its structure interleaves with its
  payloads, and a structure-first reader would need the parser to skip
  ``raw_data`` it has not fetched and ask for the next piece of structure
  (not built: selective loads of such a file fetch it whole).
- External data: the library lists the external tensors of the parsed
  model with their checked ranges (``onnxio_external_ranges``: the keys
  parsed, the location checked by the same rules as a local load, no
  absolute path, no ``..`` component; the range checked against the data
  file's size, which is asked with ``fs.size``; the length against the
  tensor's type and shape). The data files are located next to the model
  (``base_dir`` when given: a URL or a path of the model's file system).
  Ranges of one file are sorted, deduplicated (tensors sharing bytes share
  one buffer) and coalesced across gaps of at most 64 KiB and 1/32 of the
  bytes they join (alignment padding), so at most about 3% more than the
  payloads is fetched; each run is fetched in 8 MiB pieces in parallel into
  one aligned buffer, and each tensor's payload is set to its slice of that
  buffer (``onnxio_tensor_set_fetched_payload``) without another copy. The
  one copy is from the bytes object fsspec returns into that buffer.

Options: ``no_copy`` is accepted and changes nothing (a remote load always
places payloads in the buffers it fetched, which is what no_copy would
give); ``payload_fn`` is called for every external payload before anything
is fetched (False: not fetched, the tensor stays external; a buffer: the
range is fetched straight into it), and for inline payloads by the library;
``verify_checksum`` with external data is refused (ValueError: it needs
every data file whole); ``verify_crc`` defaults to on for archives.
"""
from __future__ import annotations

import os
import posixpath
import re
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from onnxio import _onnxio

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_PIECE = 8 << 20          # bytes per request
_GAP = 64 << 10           # largest gap coalesced
_GAP_FRACTION = 32        # ... and at most 1/32 of the bytes it joins
_ALIGN = 64
_DEFAULT_THREADS = 16



def _ask_payload_fn(payload_fn, tensor, length):
    """What ``payload_fn`` says of an external payload of ``length`` bytes:
    False (not fetched), None (fetched into a buffer of the load's own), or
    a writable byte view of ``length`` bytes of the caller's buffer to fetch
    it into."""
    if payload_fn is None:
        return None
    r = payload_fn(tensor, length, True)
    if r is False:
        return False
    if r is None or r is True:
        return None
    view = memoryview(r).cast("B")
    if view.readonly or view.nbytes < length:
        raise ValueError(f"payload_fn for tensor {tensor.name!r} returned a buffer that is read-only "
                         f"or smaller than {length} bytes")
    return view[:length]

def is_url(f) -> bool:
    return isinstance(f, str) and _URL.match(f) is not None


_LOCAL_SCHEMES = ("file://", "local://")


def local_path(f):
    """The path of a ``file://`` or ``local://`` URL (what follows the
    scheme, as fsspec's local file system reads it: not percent-decoded, a
    path without a leading '/' relative to the current directory), or of an
    fsspec file object on the local file system; None for anything else.
    Such sources are loaded as that path is, by the library's checked local
    loader (the open walk that refuses a symlink leading out of the model's
    directory), never through fsspec."""
    if isinstance(f, str):
        low = f[:8].lower()
        for scheme in _LOCAL_SCHEMES:
            if low.startswith(scheme):
                return f[len(scheme):]
        return None
    fs = getattr(f, "fs", None)
    protocol = getattr(fs, "protocol", None)
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    if fs is not None and ("file" in protocols or "local" in protocols) and isinstance(getattr(f, "path", None), str) \
            and type(fs).__module__.split(".")[0] == "fsspec":
        return f.path
    return None


def local_dir(base_dir):
    """`base_dir` with a ``file://``/``local://`` URL made its path (see
    local_path); anything else as it is."""
    if isinstance(base_dir, str):
        path = local_path(base_dir)
        if path is not None:
            return path
    return base_dir


def is_remote(f) -> bool:
    """A URL, or an fsspec file object (has ``fs`` and ``path`` from
    fsspec)."""
    if is_url(f):
        return True
    fs = getattr(f, "fs", None)
    return fs is not None and type(fs).__module__.split(".")[0] in ("fsspec", "s3fs", "gcsfs", "adlfs") \
        and isinstance(getattr(f, "path", None), str)


def _fsspec():
    try:
        import fsspec
    except ImportError as e:  # pragma: no cover
        raise ImportError("loading from a URL or an fsspec file object needs fsspec: "
                          "pip install fsspec (or pip install onnxio[remote])") from e
    return fsspec


def _resolve(f):
    """(file system, path) of a URL or an fsspec file object."""
    if is_url(f):
        fs, path = _fsspec().core.url_to_fs(f)
        return fs, path
    return f.fs, f.path


def _aligned(size: int):
    """A writable, 64-byte-aligned buffer of `size` bytes (a numpy array)."""
    import numpy as np

    raw = np.empty(size + _ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start:start + size]


class _Fetcher:
    """Range requests on one file system, on a thread pool."""

    def __init__(self, fs, threads: int):
        self.fs = fs
        self.threads = threads if threads and threads > 0 else _DEFAULT_THREADS
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0

    def _cat(self, path: str, start: int, end: int) -> bytes:
        data = self.fs.cat_file(path, start=start, end=end)
        if len(data) != end - start:
            raise OSError(f"{path}: asked for bytes {start}-{end - 1}, got {len(data)} bytes "
                          "(the file changed, or the server ignores range requests)")
        with self.lock:
            self.requests += 1
            self.bytes += len(data)
        return data

    def fetch(self, jobs):
        """jobs: (path, start, end, dest) with dest a writable buffer of
        end - start bytes; each is fetched in pieces of _PIECE bytes, in
        parallel, copied into dest."""
        pieces = []
        for path, start, end, dest in jobs:
            view = memoryview(dest).cast("B")
            for at in range(start, end, _PIECE):
                stop = min(end, at + _PIECE)
                pieces.append((path, at, stop, view[at - start:stop - start]))

        def one(piece):
            path, at, stop, out = piece
            out[:] = self._cat(path, at, stop)

        if len(pieces) <= 1 or self.threads == 1:
            for p in pieces:
                one(p)
            return
        with ThreadPoolExecutor(max_workers=min(self.threads, len(pieces))) as pool:
            for future in [pool.submit(one, p) for p in pieces]:
                future.result()

    def whole(self, path: str, size: int):
        """The whole file: an aligned buffer."""
        buf = _aligned(size)
        self.fetch([(path, 0, size, buf)])
        return buf


def _size(fs, path: str) -> int:
    size = fs.size(path)
    if size is None:
        raise OSError(f"{path}: the server does not say the file's size (no Content-Length)")
    return int(size)


_URL_ROOT = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://[^/]*)(.*)$")


def _decoded(location: str) -> str:
    """`location` percent-decoded once (what an HTTP client or server makes
    of it)."""
    return urllib.parse.unquote(location, errors="surrogateescape")


_SEGMENT = re.compile(r"[/\\]")


def _without_path_parameters(location: str) -> str:
    """`location` as servlet containers (Tomcat, Jetty) resolve a request
    path: each segment cut at its first ';' (its path parameters) before
    the dot segments are resolved, so that "..;/x" is "../x" to them."""
    return "/".join(seg.split(";", 1)[0] or "." for seg in _SEGMENT.split(location))


def _check_remote_location(location: str) -> None:
    """The library's location rules (onnxio_check_location) on what a
    remote location means to the servers that read it: once
    percent-decoded, "%2e%2e/x" is "../x" to an HTTP client, "..%2fx" is
    "../x" to a server that decodes "%2f", "%00" a NUL, "%5c" a backslash;
    with path parameters dropped, "..;/x" is "../x" to a servlet container.
    Every decoding is checked, to a fixpoint, each with and without its
    path parameters, so a server that decodes twice gets nothing else
    either; the error is the library's for the location as read, naming
    the one written."""
    seen = location
    for _ in range(len(location) + 1):  # each decoding shortens the string
        for form, how in ((seen, "percent-decoded"), (_without_path_parameters(seen), "read as a servlet container reads")):
            if form == location:
                continue  # the library checked the location as written
            try:
                _onnxio._check_location(form)
            except ValueError as e:
                raise type(e)(f"{e} ({how} from the location {location!r})") from None
        decoded = _decoded(seen)
        if decoded == seen:
            return
        seen = decoded


def _join(base: str, location: str) -> str:
    """`location` (checked by the library: relative, no '..'; and by
    _check_remote_location) under the directory `base` of a file system
    path or a URL (an HTTP file system's paths are URLs: their scheme and
    host are kept as they are). Under a URL the location is percent-decoded
    once and quoted again, so the request is exactly the path checked: no
    '%2e%2e' left for the client to resolve, and '?', '#', '%' and spaces
    are parts of the name, not of the URL."""
    m = _URL_ROOT.match(base)
    if m:
        root, rest = m.group(1), m.group(2) or "/"
        name = urllib.parse.quote(_decoded(location), safe="/", errors="surrogateescape")
        return root + posixpath.normpath(posixpath.join(rest, name))
    return posixpath.normpath(posixpath.join(base, location) if base else location)


def _coalesce(ranges):
    """Sorted unique (offset, length) ranges of one file -> runs
    [start, end, [(offset, length), ...]]."""
    runs = []
    for off, length in ranges:
        if runs:
            run = runs[-1]
            gap = off - run[1]
            if gap <= 0 or (gap <= _GAP and gap * _GAP_FRACTION <= run[3] + length):
                run[1] = max(run[1], off + length)
                run[2].append((off, length))
                run[3] += length
                continue
        runs.append([off, off + length, [(off, length)], length])
    return runs


def fetch_external(model, fs, base: str, fetcher: _Fetcher, payload_fn=None, model_path: str | None = None,
                   verify_checksum: bool = False) -> None:
    """Fetches and sets the payload of every external tensor of `model`
    from the data files under `base` (a path of `fs`)."""
    sizes: dict = {}
    paths: dict = {}

    def path_of(location: str) -> str:
        p = paths.get(location)
        if p is None:
            _check_remote_location(location)
            p = paths[location] = _join(base, location)
        return p

    def size_fn(location: str) -> int:
        if location not in sizes:
            p = path_of(location)
            if model_path is not None and p == _join("", model_path):
                raise _onnxio._external_data_error()(
                    f"external data location {location!r} names the model file itself")
            sizes[location] = _size(fs, p)
        return sizes[location]

    ranges = _onnxio._external_ranges(model, size_fn)
    if not ranges:
        return
    if verify_checksum:
        raise ValueError("verify_checksum is not supported for remote external data (it needs every data "
                         "file whole); load without it")
    placed = []                 # (tensor, path, offset, length, view) fetched straight into a payload_fn buffer
    wanted: dict = {}           # path -> {(offset, length): [tensor, ...]}
    for tensor, location, offset, length in ranges:
        dest = _ask_payload_fn(payload_fn, tensor, length)
        if dest is False:
            continue
        if dest is not None:
            placed.append((tensor, path_of(location), offset, length, dest))
            continue
        wanted.setdefault(path_of(location), {}).setdefault((offset, length), []).append(tensor)

    jobs = []
    sets = []                   # (tensor, buffer, start within it, length)
    for path, by_range in wanted.items():
        for start, end, members, _useful in _coalesce(sorted(by_range)):
            buf = _aligned(end - start)
            jobs.append((path, start, end, buf))
            for off, length in members:
                for tensor in by_range[(off, length)]:
                    sets.append((tensor, buf, off - start, length))
    for tensor, path, offset, length, view in placed:
        jobs.append((path, offset, offset + length, view))
    fetcher.fetch(jobs)
    for tensor, buf, at, length in sets:
        _onnxio._set_fetched_payload(tensor, buf[at:at + length])
    for tensor, _path, _offset, _length, view in placed:
        _onnxio._set_fetched_payload(tensor, view)


_TAIL = 64 << 10          # the first request for an archive's end records and directory
_HEAD = 64                # bytes that tell an archive (onnxio_detect_format)
# Options the structure-first archive reader takes; others (verify_checksum:
# SHA-1 of whole entries, progress) load the archive fetched whole.
_ARCHIVE_OPTIONS = {"num_threads", "payload_fn", "verify_crc", "max_expansion", "skip_raw_data", "load_external_data",
                    "max_depth", "raw_data_threshold", "alignment", "direct_io"}


def _aligned_at(size: int, offset: int):
    """A writable buffer of `size` bytes whose address is `offset` modulo
    64: the file's aligned offsets land on aligned addresses."""
    import numpy as np

    raw = np.empty(size + _ALIGN, dtype=np.uint8)
    start = (offset - raw.ctypes.data) % _ALIGN
    return raw[start:start + size]


def _load_archive(fetcher: _Fetcher, path: str, size: int, cls, load_external_data: bool, kwargs: dict):
    """Structure first (module doc): the end records and the central
    directory from the tail, the model entry, then the entries the load
    needs. None when the archive must be read whole (the library asks for
    the file from byte 0: no end record in the tail)."""
    verify_crc = kwargs.get("verify_crc")
    verify_crc = True if verify_crc is None else bool(verify_crc)
    max_expansion = kwargs.get("max_expansion") or 0
    start = max(0, size - _TAIL)
    tail = _aligned_at(size - start, start)
    fetcher.fetch([(path, start, size, tail)])
    while True:
        archive = _onnxio._archive_open_tail(tail, size)
        if not isinstance(archive, int):
            break
        need = archive                # checked by the library: inside the file, before the tail
        if need <= 0:
            return None, tail
        more = _aligned_at(size - need, need)
        fetcher.fetch([(path, need, start, more[:start - need])])
        more[start - need:] = tail
        tail, start = more, need
    entries = _onnxio._archive_entries(archive)
    index = {e[0]: i for i, e in enumerate(entries)}

    def read(runs_of):
        """Fetches the spans of the entries `runs_of` (indexes), coalesced,
        in parallel; returns {index: uncompressed bytes}, each checked."""
        spans = sorted((entries[i][1], entries[i][2] - entries[i][1], i) for i in set(runs_of))
        jobs, placed = [], []
        copies = []
        for run_start, run_end, members, _useful in _coalesce([(a, n) for a, n, _i in spans]):
            buf = _aligned_at(run_end - run_start, run_start)
            # What the tail holds is not fetched again.
            cut = min(run_end, max(run_start, start))
            if cut > run_start:
                jobs.append((path, run_start, cut, buf[:cut - run_start]))
            if cut < run_end:
                copies.append((buf[cut - run_start:], tail[cut - start:run_end - start]))
            placed.append((run_start, buf))
        fetcher.fetch(jobs)
        for dst, src in copies:
            dst[:] = src
        out = {}
        k = 0
        for a, n, i in spans:
            while not (placed[k][0] <= a < placed[k][0] + len(placed[k][1])):
                k += 1
            run_start, buf = placed[k]
            out[i] = _onnxio._archive_entry_read(archive, i, buf[a - run_start:a - run_start + n], verify_crc,
                                                 max_expansion)
        return out

    model_index = next(i for i, e in enumerate(entries) if e[5])
    # The block digests entry, beside the model's (the writer puts it just
    # before): the library checks each fetched entry against it.
    digests_index = index.get("__BLOCK_DIGESTS") if kwargs.get("verify_digests") is not False else None
    first = read([model_index] + ([digests_index] if digests_index is not None else []))
    model_bytes = first[model_index]
    if digests_index is not None:
        _onnxio._archive_set_digests(archive, first[digests_index])
    opts = {k: v for k, v in kwargs.items() if k not in ("verify_crc", "load_external_data", "verify_digests")}
    model = _onnxio._load_bytes(model_bytes, cls, no_copy=True, load_external_data=False, **opts)
    if not load_external_data or kwargs.get("load_external_data") is False:
        return model, None
    ranges = _onnxio._archive_ranges(archive, model)
    if not ranges or kwargs.get("skip_raw_data"):
        return model, None
    payload_fn = kwargs.get("payload_fn")
    wanted = []                  # (tensor, entry index, offset, length, destination or None)
    for tensor, name, offset, length in ranges:
        dest = _ask_payload_fn(payload_fn, tensor, length)
        if dest is False:
            continue
        wanted.append((tensor, index[name], offset, length, dest))
    data = read([w[1] for w in wanted])
    for tensor, i, offset, length, dest in wanted:
        view = data[i][offset:offset + length]
        if digests_index is not None:
            _onnxio._archive_check(archive, tensor, i, view)
        if dest is not None:
            dest[:] = view
            view = dest
        _onnxio._set_fetched_payload(tensor, view, True)
    return model, None


def load(cls, f, load_external_data: bool, kwargs: dict):
    """onnxio.load / load_model / load_tensor of a URL or an fsspec file
    object (see the module doc)."""
    fs, path = _resolve(f)
    kwargs = dict(kwargs)
    kwargs.pop("no_copy", None)  # accepted, no effect (module doc)
    base_dir = kwargs.pop("base_dir", None)
    threads = kwargs.get("num_threads") or 0
    payload_fn = kwargs.get("payload_fn")
    fetcher = _Fetcher(fs, threads)
    size = _size(fs, path)
    buf = _aligned(size)
    head = min(size, _HEAD)
    fetcher.fetch([(path, 0, head, buf[:head])])
    if cls is _onnxio.ModelProto and size > _TAIL + _HEAD and _onnxio._bytes_are_archive(buf[:head]) \
            and all(k in _ARCHIVE_OPTIONS or not v for k, v in kwargs.items()):
        model, tail = _load_archive(fetcher, path, size, cls, load_external_data, kwargs)
        if model is not None:
            return model
        # The whole file after all: what the tail holds is not fetched again.
        start = size - len(tail)
        fetcher.fetch([(path, head, start, buf[head:start])])
        buf[start:] = tail
    else:
        fetcher.fetch([(path, head, size, buf[head:])])
    if cls is not _onnxio.ModelProto:
        kwargs.pop("load_external_data", None)
        kwargs.pop("payload_fn", None)
        kwargs.pop("verify_checksum", None)
        kwargs.pop("verify_crc", None)
        kwargs.pop("progress", None)
        return _onnxio._load_bytes(buf, cls, no_copy=True, **kwargs)
    if _onnxio._bytes_are_archive(buf[:64]):
        if kwargs.get("verify_crc") is None:
            kwargs["verify_crc"] = True
        if not load_external_data:
            kwargs["load_external_data"] = False
        return _onnxio._load_bytes(buf, cls, no_copy=True, **kwargs)
    kwargs["load_external_data"] = False
    verify_checksum = kwargs.pop("verify_checksum", False)
    model = _onnxio._load_bytes(buf, cls, no_copy=True, **kwargs)
    if load_external_data and not kwargs.get("skip_raw_data"):
        local_base = local_path(os.fsdecode(base_dir)) if base_dir is not None else None
        if local_base is not None:  # file:// data files: the library's checked local loader
            ext = {k: v for k, v in kwargs.items() if k != "load_external_data"}
            _onnxio._load_external_data(model, local_base, verify_checksum=verify_checksum, **ext)
            return model
        if base_dir is not None:
            base_fs, base = _resolve(os.fsdecode(base_dir)) if is_url(os.fsdecode(base_dir)) else (fs, os.fsdecode(base_dir))
        else:
            base_fs, base = fs, posixpath.dirname(path)
        if base_fs is not fs:
            fetcher = _Fetcher(base_fs, threads)
        fetch_external(model, base_fs, base, fetcher, payload_fn, model_path=path if base_fs is fs else None,
                       verify_checksum=verify_checksum)
    return model


def load_external_data_for_model(model, base_url: str, num_threads: int = 0) -> None:
    """external_data_helper.load_external_data_for_model with a URL as
    base_dir: every external tensor fetched from under it."""
    fs, base = _resolve(base_url)
    fetch_external(model, fs, base, _Fetcher(fs, num_threads))
