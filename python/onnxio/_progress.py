"""Progress of loads and saves: the display progress=True draws, and the callback plumbing."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes and exceptions)
from onnxio._formats import _is_path

def _human(n: int) -> str:
    """Bytes in binary units, as the onnxio command prints them."""
    if n < 1024:
        return f"{n} B"
    v = n / 1024.0
    for unit in ("KiB", "MiB", "GiB"):
        if v < 1024.0:
            return f"{v:.1f} {unit}"
        v /= 1024.0
    return f"{v:.1f} TiB"


class _ProgressDisplay:
    """``progress=True``: a tqdm bar when tqdm is importable, else the
    onnxio command's line on stderr, drawn only when stderr is a terminal
    (at most ten times a second). A progress callable: (done, total)."""

    def __init__(self, what: str, subject):
        self.desc = f"{what} {os.path.basename(os.fspath(subject))}" if _is_path(subject) else what
        self.bar: Any = None  # the tqdm bar, made at the first call
        self.drawn = False
        self.last_draw = 0.0
        self.start = time.monotonic()
        try:
            import tqdm  # noqa: F401
            self.tqdm = tqdm.tqdm
        except ImportError:
            self.tqdm = None

    def __call__(self, done: int, total: int) -> None:
        if self.tqdm is not None:
            if self.bar is None:
                self.bar = self.tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=self.desc)
            self.bar.update(done - self.bar.n)
            return
        now = time.monotonic()
        if done < total and now - self.last_draw < 0.1:
            return
        stream = sys.stderr
        if stream is None or not stream.isatty() or os.environ.get("TERM") == "dumb":
            return
        self.last_draw = now
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        left = (total - done) / rate if rate > 0 else None
        eta = "-:--" if left is None else f"{int(left) // 60}:{int(left) % 60:02d}"
        percent = int(done * 100 / total) if total else 100
        filled = int(done * 20 / total) if total else 20
        stream.write(f"\r\033[Konnxio: {self.desc} {percent:3d}% [{'#' * filled}{'-' * (20 - filled)}] "
                     f"{_human(done)}/{_human(total)} {rate / 1e6:.1f} MB/s ETA {eta}")
        stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.drawn = False


def _progress_fn(progress, what: str, subject):
    """The callable behind a ``progress=`` argument (None when there is
    none): a callable as it is, True a _ProgressDisplay, None/False none."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _ProgressDisplay(what, subject)
    if not callable(progress):
        raise TypeError(f"progress must be a callable (done, total), True or None, not {type(progress).__name__}")
    return progress


def _with_progress(progress, what: str, subject, kwargs: dict, run):
    """Runs run() with kwargs["progress"] set from `progress`; a display
    made for progress=True is closed however the call ends."""
    fn = _progress_fn(progress, what, subject)
    if fn is None:
        return run()
    kwargs["progress"] = fn
    try:
        return run()
    finally:
        if isinstance(fn, _ProgressDisplay):
            fn.close()
