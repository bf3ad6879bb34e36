"""Progress of long operations.

Python: ``progress=`` of load_model / load_model_from_string / save_model
is told the payload bytes done and in all; the total is checked against the
sum of the tensors' nbytes as numpy computes them from the onnx package's
own reading of the file; an exception raised in the callback propagates and
leaves the existing file byte for byte and no temporary file;
``progress=True`` drives tqdm when it is importable (a stand-in module
records the calls) and otherwise stays silent when stderr is not a terminal.

The command: ``onnxio convert`` run under a pseudo-terminal draws the line
with bytes done/total, percentage, rate and ETA on stderr; the same command
with stderr to a pipe prints nothing on it.
"""
import os
import re
import select
import signal
import subprocess
import sys
import time
import types

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxio
from clitool import CLI

MiB = 1 << 20


def make_model(path, sizes, seed=0):
    """A model of float32 initializers of `sizes` elements, written by onnx."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.random(n, dtype=np.float32), f"w{i}") for i, n in enumerate(sizes)]
    # A small one copied in line, and an int64 one.
    inits.append(numpy_helper.from_array(np.arange(5, dtype=np.int64), "small"))
    graph = helper.make_graph([], "g", [], [], initializer=inits)
    onnx.save(helper.make_model(graph), str(path))
    return path


def payload_nbytes(path):
    """The sum of the initializers' nbytes, from onnx's reading."""
    model = onnx.load(str(path))
    return sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return make_model(tmp_path_factory.mktemp("progress") / "m.onnx", [5 * MiB, MiB // 4, 3000])


def check_calls(calls, total):
    assert calls, "the callback was never called"
    dones = [d for d, _ in calls]
    assert all(t == total for _, t in calls), calls
    assert dones == sorted(dones), calls
    assert dones[-1] == total
    assert all(d < total for d in dones[:-1]), calls


@pytest.mark.parametrize("num_threads", [1, 0])
@pytest.mark.parametrize("no_copy", [False, True])
def test_load_reports_payload_bytes(model_path, num_threads, no_copy):
    total = payload_nbytes(model_path)
    calls = []
    model = onnxio.load_model(model_path, num_threads=num_threads, no_copy=no_copy,
                              progress=lambda d, t: calls.append((d, t)))
    check_calls(calls, total)
    if not no_copy:
        # 20 MiB moved in pieces: some call comes before the end.
        assert len(calls) >= 2, calls
    assert len(model.graph.initializer) == 4
    calls = []
    onnxio.load_model_from_string(model_path.read_bytes(), progress=lambda d, t: calls.append((d, t)))
    check_calls(calls, total)


@pytest.mark.parametrize("external", [False, True])
def test_save_reports_payload_bytes(model_path, tmp_path, external):
    total = payload_nbytes(model_path)
    model = onnxio.load_model(model_path)
    calls = []
    out = tmp_path / "out.onnx"
    onnxio.save_model(model, out, save_as_external_data=external, location="out.data" if external else None,
                      progress=lambda d, t: calls.append((d, t)))
    check_calls(calls, total)
    assert len(calls) >= 2, calls
    # And the file is the model.
    assert payload_nbytes(out) == total
    calls = []
    onnxio.load_model(out, progress=lambda d, t: calls.append((d, t)))
    check_calls(calls, total)


class Stop(Exception):
    pass


@pytest.mark.parametrize("when", ["first", "last"])
@pytest.mark.parametrize("target", ["out.onnx", "out.onnxz", "ext"])
def test_exception_cancels_save_and_keeps_the_file(model_path, tmp_path, when, target):
    old = onnxio.load_model(make_model(tmp_path / "old.onnx", [MiB], seed=1))
    new = onnxio.load_model(model_path)
    external = target == "ext"
    out = tmp_path / ("out.onnx" if external else target)
    kw = dict(save_as_external_data=True, location="out.data") if external else {}
    onnxio.save_model(old, out, **kw)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    seen = []

    def stop(done, total):
        seen.append((done, total))
        if when == "first" or done == total:
            raise Stop(f"at {done}")

    with pytest.raises(Stop):
        onnxio.save_model(new, out, progress=stop, **kw)
    assert seen
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after.keys() == before.keys()  # no temporary file, no journal
    for name in before:
        assert after[name] == before[name], name


def test_exception_cancels_load(model_path):
    with pytest.raises(Stop, match="at 0"):
        onnxio.load_model(model_path, progress=lambda d, t: (_ for _ in ()).throw(Stop(f"at {d}")))
    with pytest.raises(TypeError):
        onnxio.load_model(model_path, progress=42)
    # The next load is unaffected.
    assert len(onnxio.load_model(model_path).graph.initializer) == 4


def test_progress_true_uses_tqdm(model_path, monkeypatch):
    """A stand-in tqdm module records what the bar was told."""
    bars = []

    class FakeBar:
        def __init__(self, total, **kw):
            self.total, self.kw, self.n, self.closed = total, kw, 0, False
            bars.append(self)

        def update(self, k):
            assert k >= 0
            self.n += k

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeBar))
    onnxio.load_model(model_path, progress=True)
    total = payload_nbytes(model_path)
    assert len(bars) == 1
    assert bars[0].total == total and bars[0].n == total and bars[0].closed
    assert bars[0].kw["unit"] == "B" and "m.onnx" in bars[0].kw["desc"]


def test_progress_true_without_tqdm_is_silent_off_a_terminal(model_path, tmp_path):
    """Without tqdm and with stderr a pipe, progress=True prints nothing."""
    code = ("import sys; sys.modules['tqdm'] = None\n"
            "import onnxio\n"
            f"m = onnxio.load_model({str(model_path)!r}, progress=True)\n"
            f"onnxio.save_model(m, {str(tmp_path / 'o.onnx')!r}, progress=True)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == b"" and r.stdout == b""


# ---- the command under a pseudo-terminal -------------------------------------------

LINE = re.compile(rb"onnxio: (loading|saving) \S+ +\d+% \[[#-]{20}\] [\d.]+ (B|KiB|MiB|GiB)/[\d.]+ (KiB|MiB|GiB) "
                  rb"[\d.]+ MB/s ETA (\d+:\d\d|-:--)")


@pytest.fixture(scope="module")
def large_model(tmp_path_factory):
    # 96 MiB: a save with fsync takes a few hundred ms on the test machine.
    return make_model(tmp_path_factory.mktemp("progress_cli") / "large.onnx", [12 * MiB, 12 * MiB])


def run_on_pty(args, env):
    """Runs the command with stderr on a pseudo-terminal; (rc, stderr bytes)."""
    master, slave = os.openpty()
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    rc = p.wait(timeout=60)
    os.close(master)
    return rc, out


def test_cli_progress_line_on_a_terminal(large_model, tmp_path):
    env = dict(os.environ, ONNXIO_PROGRESS_DELAY="0", TERM="xterm")
    out = tmp_path / "copy.onnx"
    rc, err = run_on_pty([str(CLI), "convert", str(large_model), str(out)], env)
    assert rc == 0, err
    lines = [m.group(0) for m in LINE.finditer(err)]
    assert any(line.startswith(b"onnxio: saving") for line in lines), err[-2000:]
    # A line with bytes moved and a rate, not just the start (the first byte
    # count is drawn at once: convert's no_copy load reports its payloads
    # borrowed in one call; later lines of a fast save may fall between
    # redraws).
    assert re.search(rb"(loading|saving) \S+ +\d+% \[#+-*\] [\d.]+ MiB/96.0 MiB [1-9][\d.]* MB/s ETA", err), err[-2000:]
    # Every line drawn is erased at the end: the stream ends with the erase.
    assert err.endswith(b"\r\x1b[K"), err[-200:]
    assert out.read_bytes() == large_model.read_bytes()


def test_cli_no_progress_into_a_pipe(large_model, tmp_path):
    env = dict(os.environ, ONNXIO_PROGRESS_DELAY="0", TERM="xterm")
    out = tmp_path / "copy.onnx"
    r = subprocess.run([str(CLI), "convert", str(large_model), str(out)], capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == b""
    assert out.read_bytes() == large_model.read_bytes()


def _interrupted(code: str, argv: list, ready: str, wait):
    """Runs `code` in a child Python, waits for its line starting with the
    word `ready`, then for wait(child, words of that line), sends SIGINT;
    returns the child's output words after it and the time
    (CLOCK_MONOTONIC, the system's) the signal was sent."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, text=True, env=env)
    try:
        words = child.stdout.readline().split()
        assert words[:1] == [ready], words
        wait(child, words)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        return child.communicate(timeout=120)[0].split(), sent
    finally:
        child.kill()
        child.wait()


_SAVE_UNTIL_CTRL_C = r"""
import sys, time
import numpy as np
import onnxio
from onnxio import helper, numpy_helper
out, mib = sys.argv[1], int(sys.argv[2])
tensors = [numpy_helper.from_array(np.full((mib // 4, MIB_FLOATS), i + 7, np.float32), f"w{i}") for i in range(4)]
model = helper.make_model(helper.make_graph([], "g", [], [], tensors))
print("ready", flush=True)
try:
    onnxio.save_model(model, out, save_as_external_data=True, location="m.data")
    print("saved", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
""".replace("MIB_FLOATS", str(MiB // 4))


@pytest.mark.slow
def test_ctrl_c_stops_a_save_and_keeps_the_old_files(tmp_path):
    """SIGINT during a save without progress= (a 1 GiB model with external
    data, the signal sent once the save's first temporary file exists)
    raises KeyboardInterrupt out of the save, well before the save would
    end, and leaves the old files (written by the onnx package) byte for
    byte, with no temporary file."""
    old = helper.make_model(helper.make_graph([], "g", [], [], [
        numpy_helper.from_array(np.arange(MiB, dtype=np.float32), "w0")]))
    onnx.save_model(old, str(tmp_path / "m.onnx"), save_as_external_data=True, location="m.data",
                    size_threshold=0)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    def save_begun(child, words):
        deadline = time.monotonic() + 120
        while set(os.listdir(tmp_path)) <= before.keys():  # the save has not begun
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.001)

    out, sent = _interrupted(_SAVE_UNTIL_CTRL_C, [str(tmp_path / "m.onnx"), "1024"], "ready", save_begun)
    assert out[0] == "interrupted", out
    # CLOCK_MONOTONIC is the system's: the child's time of the exception
    # against the parent's time of the signal. Checked every 50 ms; the
    # bound is loose for a loaded machine, the save itself takes seconds.
    assert float(out[1]) - sent < 1.0, float(out[1]) - sent
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after.keys() == before.keys()  # no temporary file, no journal
    for name in before:
        assert after[name] == before[name], name


_LOAD_UNTIL_CTRL_C = r"""
import os, sys, time
import onnxio

def evict():
    # Out of the page cache: the load reads from the device.
    for name in ("m.onnx", "m.data"):
        fd = os.open(os.path.join(os.path.dirname(sys.argv[1]), name), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

evict()
started = time.monotonic()
onnxio.load(sys.argv[1])  # how long a whole load takes here, now
whole = time.monotonic() - started
evict()
print("loading", whole, flush=True)
try:
    onnxio.load(sys.argv[1])
    print("loaded", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
"""


@pytest.mark.slow
def test_ctrl_c_stops_a_load(tmp_path):
    """SIGINT early in a load without progress= (2 GiB of external data
    out of the page cache, about a second to load on the project's machine)
    raises KeyboardInterrupt out of the load in less than half the time a
    whole load takes in the same process (measured just before, so that a
    loaded machine slows both), not after the whole load."""
    mib = 2048
    # Made with onnxio's helpers: onnx cannot serialize a model past 2 GiB.
    tensors = [onnxio.numpy_helper.from_array(np.full((mib // 4, MiB // 4), i + 7, np.float32), f"w{i}")
               for i in range(4)]
    model = onnxio.helper.make_model(onnxio.helper.make_graph([], "g", [], [], tensors))
    onnxio.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True, location="m.data")
    del model, tensors
    whole = []

    def early(child, words):
        whole.append(float(words[1]))
        time.sleep(whole[0] / 10)

    out, sent = _interrupted(_LOAD_UNTIL_CTRL_C, [str(tmp_path / "m.onnx")], "loading", early)
    assert out[0] == "interrupted", out
    assert float(out[1]) - sent < whole[0] / 2, (float(out[1]) - sent, whole[0])
