"""Loads beside saves of the same path: a load returns one save's model
with that save's data, whole, or the old one; never a mix and never an
error. Two processes of three threads each save and load one path for
ONNXIO_SOAK_SECONDS (default 20) per layout: one data file, one file per
tensor, an .onnxz archive. Each save writes generation K: the graph's
doc_string says K and every initializer holds K in every element, so a
load that took one save's model and another's data shows it (the
reference for the values is numpy on the loaded arrays)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

SECONDS = float(os.environ.get("ONNXIO_SOAK_SECONDS", "20"))

WORKER = textwrap.dedent(
    r'''
    import json, os, random, sys, threading, time
    import numpy as np
    import onnxio
    from onnxio import helper, numpy_helper, TensorProto

    path, layout, seconds, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    # "both": each thread loads and saves; "saver" / "loader": only that,
    # as user `uid` (the modules are imported first, as root).
    role = sys.argv[5] if len(sys.argv) > 5 else "both"
    uid = int(sys.argv[6]) if len(sys.argv) > 6 else -1
    TENSORS, ELEMENTS = 6, 4096

    def model(gen):
        inits = [numpy_helper.from_array(np.full(ELEMENTS, gen, np.float32), f"w{i}") for i in range(TENSORS)]
        g = helper.make_graph([], "g", [], [helper.make_tensor_value_info("w0", TensorProto.FLOAT, [ELEMENTS])],
                              initializer=inits, doc_string=str(gen))
        return helper.make_model(g)

    def save(gen):
        m = model(gen)
        if layout == "one_file":
            onnxio.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                              location=os.path.basename(path) + ".data", size_threshold=0)
        elif layout == "per_tensor":
            onnxio.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=False, size_threshold=0)
        else:
            onnxio.save_model(m, path)

    if uid >= 0:
        # Once as root in a scratch directory, so that every module a load
        # or save imports lazily is in before the switch (the interpreter
        # may lie where the other user cannot read).
        import shutil, tempfile
        real, scratch = path, tempfile.mkdtemp()
        path = os.path.join(scratch, os.path.basename(real))
        save(1)
        numpy_helper.to_array(onnxio.load(path).graph.initializer[0])
        shutil.rmtree(scratch)
        path = real
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)

    counts = {"loads": 0, "saves": 0, "torn": [], "errors": []}
    lock = threading.Lock()

    def run(k):
        rng = random.Random(seed * 10 + k)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                if role == "saver" or (role == "both" and rng.random() < 0.3):
                    save(rng.randrange(1, 1 << 20))
                    with lock:
                        counts["saves"] += 1
                    continue
                m = onnxio.load(path)
                gen = float(m.graph.doc_string)
                values = {float(v) for t in m.graph.initializer for v in np.unique(numpy_helper.to_array(t))}
                with lock:
                    counts["loads"] += 1
                    if values != {gen} or len(m.graph.initializer) != TENSORS:
                        counts["torn"].append([gen, sorted(values)])
            except Exception as e:  # any failure of a load or save beside another is a finding
                with lock:
                    counts["errors"].append(f"{type(e).__name__}: {e}")

    if seed == 0:
        save(1)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts["errors"] = counts["errors"][:10]
    counts["torn"] = counts["torn"][:10]
    print(json.dumps(counts))
    '''
)


def _soak(path, layout, procs):
    """Runs WORKER processes [(seed, role, uid)] on `path` for SECONDS;
    returns (loads, saves, torn, errors) summed over them."""
    script = Path(path).parent.parent / f"worker-{os.getpid()}.py"
    script.write_text(WORKER)
    try:
        ps = [subprocess.Popen([sys.executable, str(script), path, layout, str(SECONDS), str(seed), role, str(uid)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for seed, role, uid in procs]
        results = []
        for p in ps:
            out, err = p.communicate(timeout=SECONDS * 10 + 120)
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        script.unlink()
    return (sum(r["loads"] for r in results), sum(r["saves"] for r in results),
            [t for r in results for t in r["torn"]], [e for r in results for e in r["errors"]])


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["one_file", "per_tensor", "onnxz"])
def test_loads_beside_saves_are_never_torn(tmp_path, layout):
    path = str(tmp_path / "d" / ("m.onnxz" if layout == "onnxz" else "m.onnx"))
    os.mkdir(tmp_path / "d")
    first = subprocess.run([sys.executable, "-c", WORKER, path, layout, "0", "0"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    loads, saves, torn, errors = _soak(path, layout, [(1, "both", -1), (2, "both", -1)])
    assert loads > 0 and saves > 0, (loads, saves)
    assert not torn, f"{len(torn)} torn loads of {loads} (beside {saves} saves): {torn}"
    assert not errors, f"{len(errors)} failures of {loads} loads and {saves} saves: {errors}"
    # Nothing left behind: no temporary file, no journal.
    left = sorted(n for n in os.listdir(tmp_path / "d") if ".onnxio-" in n)
    assert not left, left


# ---- a tree that changes while it is saved ------------------------------------

import threading  # noqa: E402

import numpy as np  # noqa: E402

import onnx  # noqa: E402  (the reference for what a file holds)
import onnxio  # noqa: E402
from onnxio import helper, numpy_helper  # noqa: E402


def _model(value, n=4, elements=1 << 18):
    inits = [numpy_helper.from_array(np.full(elements, value, np.float32), f"w{i}") for i in range(n)]
    g = helper.make_graph([], "g", [], [helper.make_tensor_value_info("w0", onnxio.TensorProto.FLOAT, [elements])],
                          initializer=inits)
    return helper.make_model(g)


def _values(path):
    m = onnx.load(str(path))
    return {float(v) for t in m.graph.initializer for v in np.unique(onnx.numpy_helper.to_array(t))}


@pytest.mark.parametrize("external", [False, True])
def test_progress_callback_cannot_change_the_tree_being_saved(tmp_path, external):
    path = tmp_path / "m.onnx"
    onnxio.save(_model(1.0), str(path), save_as_external_data=external)
    model = _model(2.0)
    raised = []

    def progress(done, total):
        try:
            model.graph.initializer[0].raw_data = b"\0" * 16
        except RuntimeError as e:
            raised.append(e)
            raise

    with pytest.raises(RuntimeError, match="while a save"):
        onnxio.save(model, str(path), save_as_external_data=external, progress=progress)
    assert raised
    assert _values(path) == {1.0}  # the old files, whole
    # The tree is as it was, and can be changed and saved once the save returned.
    assert len(model.graph.initializer[0].raw_data) == 4 << 18
    model.graph.initializer[0].raw_data = np.full(1 << 18, 3.0, np.float32).tobytes()
    onnxio.save(model, str(path), save_as_external_data=external)
    assert _values(path) == {2.0, 3.0}


def test_another_thread_cannot_change_the_tree_being_saved(tmp_path):
    path = tmp_path / "m.onnx"
    model = _model(2.0)
    outcome = []

    def change():
        try:
            model.graph.initializer.pop()
            outcome.append("changed")
        except RuntimeError as e:
            outcome.append(str(e))

    def progress(done, total):
        if not outcome:
            t = threading.Thread(target=change)
            t.start()
            t.join()

    onnxio.save(model, str(path), save_as_external_data=True, progress=progress)
    assert outcome and "while a save" in outcome[0]
    assert _values(path) == {2.0} and len(onnx.load(str(path)).graph.initializer) == 4


# ---- calls on the same file from inside its own save ---------------------------

def test_progress_callback_loads_the_file_being_saved(tmp_path):
    path = tmp_path / "m.onnx"
    onnxio.save(_model(1.0), str(path), save_as_external_data=True)
    seen = []

    def progress(done, total):
        if not seen:
            m = onnxio.load(str(path))  # the files as they were before this save
            seen.append({float(v) for t in m.graph.initializer for v in np.unique(numpy_helper.to_array(t))})
            seen.append(float(onnxio.read_tensor(str(path), "w1", 5)))

    t = threading.Thread(target=lambda: onnxio.save(_model(2.0), str(path), save_as_external_data=True,
                                                    progress=progress), daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "a load from inside a save of the same file waited for itself"
    assert seen == [{1.0}, 1.0]
    assert _values(path) == {2.0}


def test_progress_callback_saving_the_same_file_fails_at_once(tmp_path):
    path = tmp_path / "m.onnx"
    onnxio.save(_model(1.0), str(path), save_as_external_data=True)
    inner = []

    def progress(done, total):
        if not inner:
            try:
                onnxio.save(_model(3.0), str(path), save_as_external_data=True)
                inner.append("saved")
            except Exception as e:
                inner.append(e)

    result = []
    t = threading.Thread(target=lambda: result.append(
        onnxio.save(_model(2.0), str(path), save_as_external_data=True, progress=progress)), daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "a save from inside a save of the same file waited for itself"
    assert isinstance(inner[0], ValueError) and "inside a save of it" in str(inner[0]), inner
    assert _values(path) == {2.0}


def test_streaming_save_generator_loads_the_file_being_saved(tmp_path):
    path = tmp_path / "m.onnx"
    onnxio.save(_model(1.0), str(path), save_as_external_data=True)
    structure = _model(0.0)
    for t in structure.graph.initializer:
        t.ClearField("raw_data")
    old = []

    def tensors():
        for t in structure.graph.initializer:
            old.append(float(onnxio.read_tensor(str(path), t.name, 0)))
            yield t.name, np.full(1 << 18, 2.0, np.float32)

    done = []
    th = threading.Thread(target=lambda: done.append(
        onnxio.save_streaming(structure, tensors(), str(path), save_as_external_data=True)), daemon=True)
    th.start()
    th.join(60)
    assert not th.is_alive(), "a generator's read of the file being saved waited for the save"
    assert old == [1.0] * 4
    assert _values(path) == {2.0}


# ---- a journal planted by another user -------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="making a file of another user needs root")
def test_planted_journal_of_another_user_blocks_nothing(tmp_path):
    import fcntl

    from conftest import needs

    cli = str(needs("onnxio command"))
    os.chmod(tmp_path, 0o777)
    path = tmp_path / "m.onnx"
    onnxio.save(_model(1.0), str(path), save_as_external_data=True)
    journal = tmp_path / ".m.onnx.onnxio-journal"
    journal.write_bytes(b"")
    os.chmod(journal, 0o666)
    os.chown(journal, 65534, 65534)
    fd = os.open(journal, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held by "the other user" for as long as it likes
        code = textwrap.dedent(f'''
            import onnxio, subprocess, sys
            m = onnxio.load({str(path)!r})
            assert len(m.graph.initializer) == 4
            assert float(onnxio.read_tensor({str(path)!r}, "w0", 0)) == 1.0
            try:
                onnxio.save(m, {str(path)!r}, save_as_external_data=True)
            except OSError as e:
                print("save:", e)
            info = subprocess.run([{cli!r}, "info", {str(path)!r}],
                                  capture_output=True, text=True, timeout=60)
            print("info:", info.returncode)
        ''')
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    finally:
        os.close(fd)
    assert r.returncode == 0, r.stderr
    assert "info: 0" in r.stdout, r.stdout
    assert "save:" in r.stdout and "uid 65534" in r.stdout, r.stdout
    assert journal.exists() and os.stat(journal).st_uid == 65534  # left alone
    assert _values(path) == {1.0}


# ---- another user's loads beside saves -------------------------------------------

SAVER, LOADER, STRANGER = 4242, 4243, 4244


@pytest.fixture
def shared_dir():
    """A model directory that user SAVER owns and saves into and that other
    users may read: outside pytest's tmp_path (mode 0700, root's)."""
    if os.geteuid() != 0:
        pytest.skip("users other than this one need root")
    d = Path(tempfile.mkdtemp(prefix="onnxio-shared-"))
    os.chmod(d.parent / d.name, 0o755)
    inner = d / "models"
    inner.mkdir()
    os.chmod(d, 0o755)
    os.chmod(inner, 0o755)
    os.chown(inner, SAVER, SAVER)
    try:
        yield inner
    finally:
        shutil.rmtree(d)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["one_file", "per_tensor", "onnxz"])
def test_loads_by_another_user_beside_saves_are_never_torn(shared_dir, layout):
    """A service (user SAVER) saves into its directory while user LOADER
    loads: the loader honours the saver's journal (the owner of the
    directory and of the model), so it never returns one save's graph with
    another's weights, and never fails."""
    path = str(shared_dir / ("m.onnxz" if layout == "onnxz" else "m.onnx"))
    first = subprocess.run([sys.executable, "-c", WORKER, path, layout, "0", "0", "saver", str(SAVER)],
                           capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    loads, saves, torn, errors = _soak(path, layout, [(1, "saver", SAVER), (2, "loader", LOADER),
                                                      (3, "loader", LOADER)])
    assert loads > 0 and saves > 0, (loads, saves)
    assert not torn, f"{len(torn)} torn loads of {loads} (beside {saves} saves): {torn}"
    assert not errors, f"{len(errors)} failures of {loads} loads and {saves} saves: {errors}"
    left = sorted(n for n in os.listdir(shared_dir) if ".onnxio-" in n)
    assert not left, left


AS_USER = textwrap.dedent(r'''
    import json, os, sys
    import numpy as np
    import onnxio
    import onnxio.external_data_helper  # imported lazily by to_array: before the switch
    from onnxio import numpy_helper
    uid, path = int(sys.argv[1]), sys.argv[2]
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    try:
        m = onnxio.load(path)
        values = sorted({float(v) for t in m.graph.initializer for v in np.unique(numpy_helper.to_array(t))})
        print(json.dumps({"doc": m.graph.doc_string, "values": values}))
    except OSError as e:
        print(json.dumps({"error": str(e)}))
''')


def _load_as(uid, path, timeout=60):
    """onnxio.load(path) by user `uid` in a new process: {"doc", "values"}
    or {"error"}, and the seconds it took."""
    import time

    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", AS_USER, str(uid), str(path)], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), time.monotonic() - start


def _generation(value):
    m = _model(value, n=2, elements=1024)
    m.graph.doc_string = str(value)
    return m


def _dead_committed_save(d, renamed, owner):
    """In directory `d` (with m.onnx and m.onnx.data of generation 1, as
    onnx saves them): the files a save of generation 2 leaves when it dies
    after its commit point, written as the journal format says
    (docs/design.md, "The save protocol"): each new file as its temporary
    file, a committed journal recording them, and the first `renamed` of
    them (data file first, model last) renamed into place."""
    import secrets

    new = _generation(2.0)
    scratch = d / "scratch"
    scratch.mkdir()
    onnx.save(onnx.ModelProto.FromString(new.SerializeToString()), str(scratch / "m.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="m.onnx.data", size_threshold=0)
    records = b""
    files = []
    for name in ("m.onnx.data", "m.onnx"):  # the data file first, the model last
        tmp = f".{name}.onnxio-tmp-{secrets.token_hex(6)}"
        (scratch / name).rename(d / tmp)
        records += f"{d.resolve()}/{tmp}\0{d.resolve()}/{name}\0".encode()
        files.append((tmp, name))
    scratch.rmdir()
    journal = d / ".m.onnx.onnxio-journal"
    journal.write_bytes(b"onnxio-journal-1C\n" + records)
    for tmp, name in files[:renamed]:
        os.rename(d / tmp, d / name)
    for p in d.iterdir():
        os.chown(p, owner, owner)
        os.chmod(p, 0o644)
    return journal


def _saved_as(d, owner):
    onnx.save(onnx.ModelProto.FromString(_generation(1.0).SerializeToString()), str(d / "m.onnx"),
              save_as_external_data=True, all_tensors_to_one_file=True, location="m.onnx.data", size_threshold=0)
    for p in d.iterdir():
        os.chown(p, owner, owner)
        os.chmod(p, 0o644)


@pytest.mark.parametrize("renamed, want", [(0, 1.0), (2, 2.0)])
def test_dead_committed_save_of_another_user_is_whole(shared_dir, renamed, want):
    """A save by SAVER that died after its commit point, with none or all of
    its renames made: LOADER (who cannot finish it) loads the old model or
    the new one, whole, at once."""
    _saved_as(shared_dir, SAVER)
    _dead_committed_save(shared_dir, renamed, SAVER)
    got, seconds = _load_as(LOADER, shared_dir / "m.onnx")
    assert got == {"doc": str(want), "values": [want]}, got
    assert seconds < 20, seconds


def test_dead_committed_save_cut_between_renames_fails_at_once(shared_dir):
    """Cut between its renames (the data file new, the model old), a dead
    save of SAVER's is no model LOADER may load: an error at once, saying
    whose save it is and what finishes it; SAVER's own load finishes it."""
    _saved_as(shared_dir, SAVER)
    _dead_committed_save(shared_dir, 1, SAVER)
    got, seconds = _load_as(LOADER, shared_dir / "m.onnx")
    assert "stopped between its renames" in got.get("error", "") and f"uid {SAVER}" in got["error"], got
    assert seconds < 20, seconds
    got, _ = _load_as(SAVER, shared_dir / "m.onnx")
    assert got == {"doc": "2.0", "values": [2.0]}, got
    assert not [n for n in os.listdir(shared_dir) if ".onnxio-" in n]
    got, _ = _load_as(LOADER, shared_dir / "m.onnx")
    assert got == {"doc": "2.0", "values": [2.0]}, got


@pytest.mark.parametrize("how", ["read-only journal", "read-only directory"])
def test_committed_journal_that_cannot_be_replayed(shared_dir, how):
    """The owner's load of a model whose dead committed save it cannot
    finish (the directory is read-only: no rename) reads the old files,
    whole, at once; with a read-only journal in a writable directory it
    finishes the save. Neither is taken for a save in progress (which ran
    the load 16 times, then failed)."""
    _saved_as(shared_dir, SAVER)
    journal = _dead_committed_save(shared_dir, 0, SAVER)
    if how == "read-only journal":
        os.chmod(journal, 0o444)
        want = 2.0
    else:
        os.chmod(shared_dir, 0o555)
        want = 1.0
    try:
        got, seconds = _load_as(SAVER, shared_dir / "m.onnx")
    finally:
        os.chmod(shared_dir, 0o755)
    assert got == {"doc": str(want), "values": [want]}, got
    assert seconds < 20, seconds


def test_planted_journal_of_a_stranger_in_a_shared_directory(shared_dir):
    """STRANGER (neither root, nor the owner of the directory or the model)
    plants a committed journal recording files of its own, cut between
    renames, and holds its lock: LOADER's load ignores it, at once, and
    reads SAVER's model."""
    import fcntl

    _saved_as(shared_dir, SAVER)
    os.chmod(shared_dir, 0o777)
    try:
        journal = _dead_committed_save(shared_dir, 0, STRANGER)
        for n in ("m.onnx", "m.onnx.data"):
            os.chown(shared_dir / n, SAVER, SAVER)
        # Its first record's file gone, its second's there: were it
        # trusted, a save cut between its renames.
        next(p for p in shared_dir.iterdir() if p.name.startswith(".m.onnx.data.onnxio-tmp-")).unlink()
        fd = os.open(journal, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            got, seconds = _load_as(LOADER, shared_dir / "m.onnx")
        finally:
            os.close(fd)
    finally:
        os.chmod(shared_dir, 0o755)
    assert got == {"doc": "1.0", "values": [1.0]}, got
    assert seconds < 20, seconds
    assert journal.exists() and os.stat(journal).st_uid == STRANGER  # left alone
