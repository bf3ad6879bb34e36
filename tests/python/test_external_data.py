"""External data written by onnxio and read by the onnx package, and the
other way round.

Models are small and built here with onnx.helper. onnxio saves them through
`onnxio convert` with each external-data mode (one file, one file per tensor,
split files, checksums, convert_attribute, alignment, threads); `onnx.load`
must read them and give the same numpy arrays as the original, and
`hashlib.sha1` of each data file must equal its "checksum" key. Models saved
by onnx with external data must load in onnxio (`convert --inline`) and give
what onnx's own `load` gives.

The command is $ONNXIO_CLI (see onnxio_ctypes.py).
"""

import hashlib
import os
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import needs

CLI_PATH = needs("onnxio command")


def run(*args):
    p = subprocess.run([str(CLI_PATH), *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def run_ok(*args):
    rc, err = run(*args)
    assert rc == 0, f"onnxio {' '.join(map(str, args))}: rc {rc}: {err}"
    assert err == ""


# ---- the model ---------------------------------------------------------


def build_model():
    """Initializers of several sizes and types, one in an If subgraph, a
    Constant node and a function's Constant node holding tensors."""
    rng = np.random.default_rng(1)
    arrays = {
        "small": rng.standard_normal(8).astype(np.float32),  # 32 B: stays inline
        "w/1": rng.standard_normal((30, 50)).astype(np.float32),  # 6000 B
        "W.1": rng.integers(-100, 100, 700).astype(np.int64),  # 5600 B, a name clash when case is folded
        "half": rng.standard_normal((40, 40)).astype(np.float16),  # 3200 B
        "bytes": rng.integers(0, 255, 1500).astype(np.uint8),  # 1500 B
    }
    inits = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    sub_init = numpy_helper.from_array(rng.standard_normal(600).astype(np.float32), "sub_w")  # 2400 B
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["sub_w"], ["t_out"])],
        "then",
        [],
        [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [600])],
        initializer=[sub_init],
    )
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["small"], ["e_out"])],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)],
    )
    const = numpy_helper.from_array(rng.standard_normal(500).astype(np.float32), "const_value")  # 2000 B
    fconst = numpy_helper.from_array(rng.standard_normal(300).astype(np.float64), "fconst_value")  # 2400 B
    nodes = [
        helper.make_node("Constant", [], ["c"], value=const),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("F", [], ["fz"], domain="local"),
    ]
    func = onnx.helper.make_function(
        "local", "F", [], ["fz"], [helper.make_node("Constant", [], ["fz"], value=fconst)],
        [helper.make_opsetid("", 17)],
    )
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("fz", TensorProto.DOUBLE, None)],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[func]
    )
    return model


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "src" / "model.onnx"
    path.parent.mkdir()
    onnx.save(build_model(), str(path))
    return path


def named_tensors(model):
    """name -> TensorProto for every tensor onnx's external-data helper
    knows: initializers (subgraphs too) and attribute tensors (functions
    too)."""
    from onnx.external_data_helper import _get_all_tensors

    return {t.name: t for t in _get_all_tensors(model)}


def arrays_of(path):
    return {n: numpy_helper.to_array(t) for n, t in named_tensors(onnx.load(str(path))).items()}


def assert_same_arrays(got_path, want_path):
    got, want = arrays_of(got_path), arrays_of(want_path)
    assert sorted(got) == sorted(want)
    for n in want:
        assert got[n].dtype == want[n].dtype and got[n].shape == want[n].shape, n
        assert np.array_equal(got[n], want[n]), n


def external_refs(path):
    """name -> {key: value} of every external tensor, as onnx reads them."""
    m = onnx.load(str(path), load_external_data=False)
    return {
        n: {e.key: e.value for e in t.external_data}
        for n, t in named_tensors(m).items()
        if t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL
    }


def payload_sizes(path):
    return {n: len(t.raw_data) for n, t in named_tensors(onnx.load(str(path))).items()}


# ---- onnxio saves, onnx loads ------------------------------------------

MODES = {
    "one_file": ["--external-data", "w.bin"],
    "threads2": ["--external-data", "w.bin", "--threads", "2"],
    "per_tensor": ["--one-file-per-tensor"],
    "split": ["--external-data", "w.bin", "--max-file-size", "8000"],
    "checksum": ["--external-data", "w.bin", "--checksum"],
    "split_checksum": ["--external-data", "w.bin", "--max-file-size", "7K", "--checksum", "--convert-attribute"],
    "convert_attribute": ["--external-data", "w.bin", "--convert-attribute"],
    "per_tensor_attribute": ["--one-file-per-tensor", "--convert-attribute", "--checksum"],
    "alignment64": ["--external-data", "w.bin", "--alignment", "64"],
    "alignment1": ["--external-data", "w.bin", "--alignment", "1", "--size-threshold", "0"],
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_onnxio_saves_onnx_loads(src, tmp_path, mode):
    args = MODES[mode]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "model.onnx"
    run_ok("convert", src, out, *args)
    assert_same_arrays(out, src)

    sizes = payload_sizes(src)
    refs = external_refs(out)
    threshold = 1 if "--size-threshold" in args else 1024
    attribute = "--convert-attribute" in args
    initializers = {"small", "w/1", "W.1", "half", "bytes", "sub_w"}
    want = {n for n, s in sizes.items() if s >= threshold and (attribute or n in initializers)}
    assert set(refs) == want

    alignment = 4096
    if "--alignment" in args:
        alignment = int(args[args.index("--alignment") + 1])
    files = {}
    for name, ref in refs.items():
        assert int(ref["length"]) == sizes[name]
        files.setdefault(ref["location"], []).append((int(ref["offset"]), int(ref["length"]), name))
        if "--one-file-per-tensor" not in args:
            assert int(ref["offset"]) % alignment == 0, (name, ref)
    # every data file: exactly its payloads and zero padding, nothing after
    for location, spans in files.items():
        data = (out_dir / location).read_bytes()
        assert max(o + n for o, n, _ in spans) == len(data)
        mask = np.zeros(len(data), bool)
        for o, n, _ in spans:
            mask[o:o + n] = True
        assert not np.frombuffer(data, np.uint8)[~mask].any()
        digest = hashlib.sha1(data).hexdigest()
        for _, _, name in spans:
            if "--checksum" in args:
                assert refs[name]["checksum"] == digest
            else:
                assert "checksum" not in refs[name]

    if "--one-file-per-tensor" in args:
        names = list(files)
        assert len(names) == len(refs)  # one file each
        assert len({n.lower() for n in names}) == len(names)
        assert all(n.replace(".", "").replace("_", "").replace("-", "").isalnum() for n in names)
        assert "model.onnx" not in {n.lower() for n in names}
        assert files.get("w_1") and files.get("W.1") is not None
    elif "--max-file-size" in args:
        limit = {"8000": 8000, "7K": 7168}[args[args.index("--max-file-size") + 1]]
        n = len(files)
        assert n > 1
        assert sorted(files) == [f"w-{i:05d}-of-{n:05d}.bin" for i in range(1, n + 1)]
        for location, spans in files.items():
            size = (out_dir / location).stat().st_size
            assert size <= limit or len(spans) == 1, (location, size)
    else:
        assert list(files) == ["w.bin"]
    # onnxio loads it back too, checksums verified
    back = tmp_path / "back.onnx"
    run_ok("convert", out, back, "--inline", "--verify-checksum")
    assert_same_arrays(back, src)


def test_threads_give_identical_bytes(src, tmp_path):
    outs = []
    for threads in ("1", "2", "3"):
        d = tmp_path / f"t{threads}"
        d.mkdir()
        run_ok("convert", src, d / "m.onnx", "--external-data", "w.bin", "--convert-attribute", "--checksum",
               "--threads", threads, "--size-threshold", "1")
        outs.append(((d / "m.onnx").read_bytes(), (d / "w.bin").read_bytes()))
    assert outs[0] == outs[1] == outs[2]


def test_verify_checksum_refuses_changed_data(src, tmp_path):
    """convert --verify-checksum hashes IN while it saves OUT: a mismatch
    fails it before OUT is replaced (an OUT that existed stays as it was;
    OUT that is IN too), naming the tensor and the file."""
    out = tmp_path / "m.onnx"
    run_ok("convert", src, out, "--external-data", "w.bin", "--checksum")
    data = bytearray((tmp_path / "w.bin").read_bytes())
    data[10] ^= 0xFF
    (tmp_path / "w.bin").write_bytes(bytes(data))
    rc, err = run("convert", out, tmp_path / "back.onnx", "--inline", "--verify-checksum")
    assert rc == 1 and "SHA-1" in err and "w.bin" in err and hashlib.sha1(data).hexdigest() in err
    assert not (tmp_path / "back.onnx").exists()
    (tmp_path / "back.onnx").write_bytes(b"the old file")
    for target in (tmp_path / "back.onnx", out):
        before = target.read_bytes()
        rc, err = run("convert", out, target, "--inline", "--verify-checksum")
        assert rc == 1 and "SHA-1" in err, err
        assert target.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir() if p.name != "src") == ["back.onnx", "m.onnx", "w.bin"]
    # without --verify-checksum the (changed) bytes load
    run_ok("convert", out, tmp_path / "back.onnx", "--inline")


def test_resave_in_place(src, tmp_path):
    """Re-saving over the model and data file it was loaded from (mapped,
    the default, and copied) gives a correct model and a data file of
    exactly the right size."""
    out = tmp_path / "m.onnx"
    run_ok("convert", src, out, "--external-data", "w.bin", "--alignment", "1")
    moved = sum(s for n, s in payload_sizes(src).items() if s >= 1024 and n not in ("const_value", "fconst_value"))
    assert (tmp_path / "w.bin").stat().st_size == moved
    for extra in ([], ["--copy"], ["--alignment", "1"], ["--alignment", "1", "--no-copy"]):
        run_ok("convert", out, out, "--external-data", "w.bin", *extra)
        assert_same_arrays(out, src)
        refs = external_refs(out)
        end = max(int(r["offset"]) + int(r["length"]) for r in refs.values())
        assert (tmp_path / "w.bin").stat().st_size == end
    assert (tmp_path / "w.bin").stat().st_size == moved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "src", "w.bin"]


def test_moved_and_base_dir(src, tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    run_ok("convert", src, a / "m.onnx", "--one-file-per-tensor")
    b = tmp_path / "b"
    shutil.move(str(a), str(b))
    assert_same_arrays(b / "m.onnx", src)
    run_ok("convert", b / "m.onnx", tmp_path / "inline.onnx", "--inline")
    assert_same_arrays(tmp_path / "inline.onnx", src)
    # the model alone elsewhere: its data is found through --base-dir
    c = tmp_path / "c"
    c.mkdir()
    shutil.copy(b / "m.onnx", c / "m.onnx")
    rc, err = run("convert", c / "m.onnx", tmp_path / "x.onnx", "--inline")
    assert rc == 1
    run_ok("convert", c / "m.onnx", tmp_path / "x.onnx", "--inline", "--base-dir", b)
    assert_same_arrays(tmp_path / "x.onnx", src)


def test_refused_locations(src, tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out = d / "m.onnx"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.bin").write_bytes(b"x" * 10)
    os.link(outside / "x.bin", d / "hl.bin")
    os.symlink(outside, d / "ld")
    for location in ("hl.bin", "ld/w.bin", "m.onnx"):
        rc, err = run("convert", src, out, "--external-data", location)
        assert rc == 1, location
    # split file names go through the same checks
    rc, err = run("convert", src, out, "--external-data", "ld/w.bin", "--max-file-size", "4K")
    assert rc == 1 and "outside" in err
    assert (outside / "x.bin").read_bytes() == b"x" * 10
    assert sorted(p.name for p in outside.iterdir()) == ["x.bin"]
    assert not out.exists()


# ---- onnx saves, onnxio loads ------------------------------------------


def onnx_reference_bytes(path):
    """onnx's own load (external data read, data_location = DEFAULT left
    set), serialized."""
    return onnx.load(str(path)).SerializeToString()


@pytest.mark.parametrize("one_file", [True, False])
@pytest.mark.parametrize("convert_attribute", [True, False])
def test_onnx_saves_onnxio_loads(tmp_path, one_file, convert_attribute):
    d = tmp_path / "onnx"
    d.mkdir()
    path = d / "model.onnx"
    onnx.save(
        build_model(),
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=one_file,
        location="weights.data",
        size_threshold=1024,
        convert_attribute=convert_attribute,
    )
    assert external_refs(path)  # onnx did write external data
    out = tmp_path / "inline.onnx"
    run_ok("convert", path, out, "--inline")
    assert out.read_bytes() == onnx_reference_bytes(path)
    # and onnxio's no-copy and copy loads agree, with threads
    run_ok("convert", path, tmp_path / "copy.onnx", "--inline", "--copy", "--threads", "2")
    assert (tmp_path / "copy.onnx").read_bytes() == out.read_bytes()
    # re-externalized by onnxio next to onnx's files, then read by onnx
    run_ok("convert", path, d / "again.onnx", "--external-data", "again.bin", "--convert-attribute")
    assert_same_arrays(d / "again.onnx", path)


# ---- the caller's model after a save with external data ----------------------------

def _weights_model():
    w = np.arange(1000, dtype=np.float32)
    g = helper.make_graph([helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(w + 1, "cv"))], "g",
                          [], [], initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(w[:3], "s"),
                                               numpy_helper.from_array(w * 2, "w2")])
    return helper.make_model(g)


@pytest.mark.parametrize("given", ["onnxio", "onnx"])
def test_save_with_external_data_points_the_model_at_it(tmp_path, given):
    """save_model(m, path, save_as_external_data=True) changes m as
    onnx.save_model does: the moved tensors, in place, lose raw_data and
    point at the data file; m then serializes to what onnx's model
    serializes to after onnx's save of it. update_model=False leaves m as
    it was."""
    import onnxio

    want = _weights_model()
    onnx.save_model(want, str(tmp_path / "ref.onnx"), save_as_external_data=True, location="x.data",
                    size_threshold=100)
    m = onnxio.from_onnx(_weights_model()) if given == "onnxio" else _weights_model()
    held = m.graph.initializer[0]
    before = m.SerializeToString()
    onnxio.save_model(m, str(tmp_path / "m.onnx"), save_as_external_data=True, location="x.data",
                      size_threshold=100, alignment=1)
    assert m.SerializeToString() == want.SerializeToString()
    assert held.data_location == TensorProto.EXTERNAL and not held.HasField("raw_data")  # in place
    assert (tmp_path / "m.onnx").read_bytes() == (tmp_path / "ref.onnx").read_bytes()
    # The model now loads its payloads from there, as onnx's does.
    helper_module = onnxio.external_data_helper if given == "onnxio" else onnx.external_data_helper
    helper_module.load_external_data_for_model(m, str(tmp_path))
    for t, r in zip(m.graph.initializer, _weights_model().graph.initializer):
        assert np.array_equal(numpy_helper.to_array(onnxio.to_onnx(t) if given == "onnxio" else t),
                              numpy_helper.to_array(r))
    kept = onnxio.from_onnx(_weights_model()) if given == "onnxio" else _weights_model()
    onnxio.save_model(kept, str(tmp_path / "k.onnx"), save_as_external_data=True, location="k.data",
                      size_threshold=100, update_model=False)
    assert kept.SerializeToString() == before
