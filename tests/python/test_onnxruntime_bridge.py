"""onnxio.onnxruntime: onnxruntime sessions on onnxio's models,
the weights handed over without a copy.

References: onnxruntime loading the same model from its path (the outputs
must be bit-equal with the same prepacking setting), the payloads' own
addresses, and resident memory measured in a fresh process against the
weights' size, with a route known to copy (onnxruntime from the serialized
bytes) as the control that shows the measurement sees a copy.
"""
import gc
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as onh
import pytest

from conftest import needs

ort = needs("onnxruntime", "onnxio.onnxruntime runs on it")

import ml_dtypes  # noqa: E402

import onnxio  # noqa: E402
import onnxio.onnxruntime as bridge  # noqa: E402
from onnxio import numpy_helper as xnh  # noqa: E402

D = 384
BATCH = 3
CPU = ["CPUExecutionProvider"]


def chain_model(layers=3, d=D, seed=0):
    """MatMul + Add layers (float32 [d, d] weights, [d] biases), then a
    bfloat16 scale (Cast to float, Mul: the ml_dtypes route) and a Reshape
    whose int64 shape (16 bytes) stays in the serialized structure."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x = "x"
    for i in range(layers):
        w = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32)
        b = rng.standard_normal(d).astype(np.float32)
        inits += [onh.from_array(w, f"w{i}"), onh.from_array(b, f"b{i}")]
        nodes += [oh.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]), oh.make_node("Add", [f"m{i}", f"b{i}"], [f"y{i}"])]
        x = f"y{i}"
    scale = rng.standard_normal(d).astype(ml_dtypes.bfloat16)
    inits += [onh.from_array(scale, "scale"), onh.from_array(np.array([BATCH, 2, d // 2], np.int64), "shape")]
    nodes += [oh.make_node("Cast", ["scale"], ["scale_f"], to=TensorProto.FLOAT),
              oh.make_node("Mul", [x, "scale_f"], ["z"]), oh.make_node("Reshape", ["z", "shape"], ["out"])]
    g = oh.make_graph(nodes, "chain", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, d])],
                      [oh.make_tensor_value_info("out", TensorProto.FLOAT, [BATCH, 2, d // 2])], inits)
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)], ir_version=9)


def options(prepack=False):
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_prepacking", "0" if prepack else "1")
    return so


X = np.random.default_rng(1).standard_normal((BATCH, D)).astype(np.float32)


def reference(path, prepack=False):
    return ort.InferenceSession(str(path), options(prepack), providers=CPU).run(None, {"x": X})[0]


def run(session):
    return session.run(None, {"x": X})[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The chain model as one .onnx (onnx.save), as .onnx + external data
    (onnx.save) and as .onnxz (onnxio.save)."""
    d = tmp_path_factory.mktemp("bridge")
    model = chain_model()
    single, ext, onnxz = d / "chain.onnx", d / "ext" / "chain.onnx", d / "chain.onnxz"
    ext.parent.mkdir()
    onnx.save(model, str(single))
    onnx.save(model, str(ext), save_as_external_data=True, location="chain.data", size_threshold=1024)
    onnxio.save(onnxio.load(str(single)), str(onnxz))
    return {"single": single, "ext": ext, "onnxz": onnxz}


@pytest.mark.parametrize("layout", ["single", "ext", "onnxz"])
@pytest.mark.parametrize("how", ["path", "copy", "no_copy"])
@pytest.mark.parametrize("prepack", [False, True])
def test_outputs_equal_onnxruntime_from_the_path(files, layout, how, prepack):
    path = files[layout]
    # onnxruntime does not read .onnxz: the reference is the same model's .onnx
    want = reference(files["single"] if layout == "onnxz" else path, prepack)
    model = str(path) if how == "path" else onnxio.load(str(path), no_copy=(how == "no_copy"))
    s = bridge.InferenceSession(model, options(prepack) if prepack else None, providers=CPU)
    assert isinstance(s, ort.InferenceSession)
    assert np.array_equal(run(s), want)
    # every tensor of 1024 bytes or more went over as an OrtValue
    assert sorted(n for n, _ in _handed(s)) == sorted(f"{p}{i}" for p in "wb" for i in range(3))


def _handed(session):
    return list(session._onnxio_initializers.items())


def test_default_is_no_prepacking_and_an_onnx_model_works(files):
    so = ort.SessionOptions()
    s = bridge.InferenceSession(onnx.load(str(files["single"])), so, providers=CPU)
    assert so.get_session_config_entry("session.disable_prepacking") == "1"
    assert np.array_equal(run(s), reference(files["single"], prepack=False))


def test_onnxruntime_uses_the_payloads_memory(files):
    """The OrtValues point at the payloads, and onnxruntime computes with that
    memory: a weight changed in the onnxio model after the session was made
    changes the session's output to onnxruntime's output for the changed
    model (a copy would keep the old output)."""
    model = onnxio.load(str(files["single"]))  # copy load: writable payloads
    s = bridge.InferenceSession(model, providers=CPU)
    addresses = {t.name: np.frombuffer(onnxio._onnxio._payload_view(t), np.uint8).ctypes.data
                 for t in model.graph.initializer if t.name[0] in "wb"}
    for name, value in _handed(s):
        assert value.data_ptr() == addresses[name], name
    before = run(s)
    w1 = xnh.to_array(model.graph.initializer[2])
    assert model.graph.initializer[2].name == "w1" and w1.flags.writeable
    w1 *= np.float32(-0.5)
    changed = onnx.load(str(files["single"]))
    changed.graph.initializer[2].CopyFrom(onh.from_array(onh.to_array(changed.graph.initializer[2]) * np.float32(-0.5),
                                                         "w1"))
    want = ort.InferenceSession(changed.SerializeToString(), options(), providers=CPU).run(None, {"x": X})[0]
    after = run(s)
    assert not np.array_equal(after, before)
    assert np.array_equal(after, want)


def test_the_session_keeps_the_payloads_alive(files):
    want = reference(files["single"])
    for no_copy in (False, True):
        model = onnxio.load(str(files["single"]), no_copy=no_copy)
        s = bridge.InferenceSession(model, providers=CPU)
        del model
        gc.collect()
        # allocate and fill memory where a freed payload would have been
        junk = [np.full(D * D, np.nan, np.float32) for _ in range(16)]
        assert np.array_equal(run(s), want)
        del junk
    s = bridge.InferenceSession(str(files["ext"]), providers=CPU)  # the model is never the caller's
    gc.collect()
    assert np.array_equal(run(s), want)


def test_four_sessions_share_one_no_copy_model(files):
    model = onnxio.load(str(files["single"]), no_copy=True)
    want = reference(files["single"])
    sessions = [bridge.InferenceSession(model, providers=CPU) for _ in range(4)]
    for s in sessions:
        assert np.array_equal(run(s), want)
    pointers = [{n: v.data_ptr() for n, v in _handed(s)} for s in sessions]
    assert pointers[0] == pointers[1] == pointers[2] == pointers[3]
    # ... and they lie in the file's mapping
    with open("/proc/self/maps") as f:
        spans = [tuple(int(a, 16) for a in line.split()[0].split("-")) for line in f
                 if line.rstrip().endswith(str(files["single"]))]
    assert spans
    for p in pointers[0].values():
        assert any(lo <= p < hi for lo, hi in spans), hex(p)


RSS_CHILD = textwrap.dedent("""
    import gc, json, sys
    import numpy as np, onnxruntime as ort, onnxio
    import onnxio.onnxruntime as bridge
    path, way, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    def rss():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
    model = onnxio.load(path, no_copy=True)
    x = np.ones((1, 4096), np.float32)
    for t in model.graph.initializer:  # every weight resident before the first measurement
        onnxio.numpy_helper.to_array(t).sum()
    so = lambda: (lambda o: (o.add_session_config_entry("session.disable_prepacking", "1"), o)[1])(ort.SessionOptions())
    sizes, sessions = [rss()], []
    for _ in range(n):
        if way == "bridge":
            s = bridge.InferenceSession(model, so(), providers=["CPUExecutionProvider"])
        else:  # the control: onnxruntime from the serialized bytes copies the weights
            s = ort.InferenceSession(model.SerializeToString(), so(), providers=["CPUExecutionProvider"])
        s.run(None, {"x": x})
        sessions.append(s)
        gc.collect()
        sizes.append(rss())
    print(json.dumps(sizes))
""")


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    """64 MiB of float32 weights: MatMuls [4096, 1024], 8 x [1024, 1024],
    [1024, 4096] on an input [1, 4096]."""
    rng = np.random.default_rng(2)
    shapes = [(4096, 1024)] + [(1024, 1024)] * 8 + [(1024, 4096)]
    nodes, inits, x = [], [], "x"
    for i, shape in enumerate(shapes):
        inits.append(onh.from_array(rng.standard_normal(shape).astype(np.float32) / np.float32(32), f"w{i}"))
        nodes.append(oh.make_node("MatMul", [x, f"w{i}"], [f"y{i}"]))
        x = f"y{i}"
    g = oh.make_graph(nodes, "big", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4096])],
                      [oh.make_tensor_value_info(x, TensorProto.FLOAT, [1, 4096])], inits)
    path = tmp_path_factory.mktemp("big") / "big.onnx"
    onnx.save(oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)], ir_version=9), str(path))
    return path, sum(int(np.prod(s)) * 4 for s in shapes)


def _rss_steps(path, way, n):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, "-c", RSS_CHILD, str(path), way, str(n)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    sizes = json.loads(p.stdout.strip().splitlines()[-1])
    return [b - a for a, b in zip(sizes, sizes[1:])]


def test_sessions_add_no_copy_of_the_weights(big_model):
    """In a fresh process, with the no_copy model's weights already resident:
    each bridge session (made and run once) adds well under the weights'
    size to RSS, 4 of them together too; the control, onnxruntime from the
    serialized bytes, adds at least the weights' size per session."""
    path, weights = big_model
    assert weights == 64 << 20
    steps = _rss_steps(path, "bridge", 4)
    assert sum(steps) < 0.25 * weights, (steps, weights)
    control = _rss_steps(path, "bytes", 2)
    assert all(s > 0.8 * weights for s in control), (control, weights)


def test_small_initializers_stay_in_the_bytes(files):
    model = onnxio.load(str(files["single"]))
    data, names, arrays = bridge.handoff_parts(model)
    assert sorted(names) == sorted(f"{p}{i}" for p in "wb" for i in range(3))
    stripped = onnx.load_from_string(data)
    by_name = {t.name: t for t in stripped.graph.initializer}
    assert onh.to_array(by_name["shape"]).tolist() == [BATCH, 2, D // 2]  # 24 bytes: inline
    assert onh.to_array(by_name["scale"]).dtype == ml_dtypes.bfloat16  # 768 bytes: inline
    for name, array in zip(names, arrays):
        t = by_name[name]
        assert t.data_location == TensorProto.EXTERNAL and not t.raw_data
        assert {e.key: e.value for e in t.external_data} == {
            "location": bridge.PLACEHOLDER, "offset": "0", "length": str(array.nbytes)}
    assert len(data) < 4096
    # the model passed in is unchanged
    assert model.SerializeToString() == files["single"].read_bytes()
    # the bfloat16 scale feeds a Cast of constants (folded by onnxruntime): kept whatever its size
    s = bridge.InferenceSession(model, providers=CPU, min_size=1)
    assert "scale" not in dict(_handed(s))
    assert np.array_equal(run(s), reference(files["single"]))


def reads_at_creation_model():
    """Conv + BatchNormalization (fused by onnxruntime, which reads the
    weights at session creation), a Transpose of a weight (folded), a
    Reshape (its shape read by shape inference) and a bfloat16 weight
    (handed over); and an input for it."""
    rng = np.random.default_rng(3)
    f32 = np.float32
    inits = [onh.from_array(rng.standard_normal((8, 4, 3, 3)).astype(f32), "conv_w"),
             onh.from_array(rng.standard_normal(8).astype(f32), "conv_b")]
    inits += [onh.from_array(v, n) for n, v in (("bn_s", rng.random(8).astype(f32) + 1),
                                               ("bn_b", rng.standard_normal(8).astype(f32)),
                                               ("bn_m", rng.standard_normal(8).astype(f32)),
                                               ("bn_v", rng.random(8).astype(f32) + 1))]
    inits += [onh.from_array(rng.standard_normal((64, 128)).astype(f32), "wt"),
              onh.from_array(np.array([2, 64], np.int64), "shape2"),
              onh.from_array(rng.standard_normal((3, 64)).astype(ml_dtypes.bfloat16), "w_bf16")]
    nodes = [oh.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], pads=[1, 1, 1, 1]),
             oh.make_node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], ["n"]),
             oh.make_node("Flatten", ["n"], ["f"]),  # [2, 8 * 4 * 4 = 128]
             oh.make_node("Transpose", ["wt"], ["wt_t"]),  # [128, 64]
             oh.make_node("MatMul", ["f", "wt_t"], ["m"]),
             oh.make_node("Reshape", ["m", "shape2"], ["r"]),
             oh.make_node("Cast", ["r"], ["r16"], to=TensorProto.BFLOAT16),
             oh.make_node("Concat", ["r16", "w_bf16"], ["c16"], axis=0),  # [2 + 3, 64]
             oh.make_node("Cast", ["c16"], ["y"], to=TensorProto.FLOAT)]
    g = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 4, 4])],
                      [oh.make_tensor_value_info("y", TensorProto.FLOAT, [5, 64])], inits)
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)], ir_version=9)
    x = rng.standard_normal((2, 4, 4, 4)).astype(f32)
    return model, x


def test_what_onnxruntime_reads_while_it_makes_the_session_stays_in_the_bytes():
    """Tensors onnxruntime reads at session creation cannot be handed over:
    constant folding (a Transpose of a weight: kept beforehand), a fusion
    that rewrites weights (Conv + BatchNormalization: onnxruntime fails on
    the placeholder, and the call retries with the conv weight kept) and
    shape inference (a Reshape's shape, with min_size=1: retried too).
    The outputs are onnxruntime's for the same bytes; the bfloat16 weight
    goes over as an OrtValue of ONNX type BFLOAT16."""
    model, x = reads_at_creation_model()
    try:
        want = ort.InferenceSession(model.SerializeToString(), options(), providers=CPU).run(None, {"x": x})[0]
    except Exception as e:  # pragma: no cover
        pytest.skip(f"this onnxruntime has no CPU kernel for part of the model: {e}")
    s = bridge.InferenceSession(onnxio.from_onnx(model), providers=CPU, min_size=1)
    handed = dict(_handed(s))
    assert sorted(handed) == ["w_bf16"], sorted(handed)  # the rest is read at creation
    assert handed["w_bf16"].data_type() == "tensor(bfloat16)"
    assert np.array_equal(s.run(None, {"x": x})[0], want)
    # with sess_options, no retry: the error names the initializer and the way out
    with pytest.raises(ValueError, match=r"initializer 'shape2'.*keep=\['shape2'\]"):
        bridge.InferenceSession(onnxio.from_onnx(model), options(), providers=CPU, min_size=1)
    with pytest.raises(ValueError, match=r"initializer '(conv_[wb]|bn_[sbmv])'.*keep=\['(conv_[wb]|bn_[sbmv])'\]"):
        bridge.InferenceSession(onnxio.from_onnx(model), options(), providers=CPU, min_size=1, keep=["shape2"])
    s = bridge.InferenceSession(onnxio.from_onnx(model), options(), providers=CPU, min_size=1,
                                keep=["shape2", "conv_w", "conv_b", "bn_s", "bn_b", "bn_m", "bn_v"])
    assert np.array_equal(s.run(None, {"x": x})[0], want)


def test_the_retries_print_nothing(tmp_path):
    """A session the call retries (min_size=1 on a model onnxruntime reads
    at creation: fusion and shape inference fail on the placeholder first)
    is made without onnxruntime printing an error line; its outputs are
    onnxruntime's on the same file. A model onnxruntime refuses still
    raises, with onnxruntime's message."""
    model, x = reads_at_creation_model()
    path, bad, xs = tmp_path / "m.onnx", tmp_path / "bad.onnx", tmp_path / "x.npy"
    onnx.save(model, str(path))
    model.graph.node[0].op_type = "NoSuchOp"
    onnx.save(model, str(bad))
    np.save(xs, x)
    code = textwrap.dedent(f"""
        import json, numpy as np, onnxruntime as ort, onnxio.onnxruntime as bridge
        cpu = ["CPUExecutionProvider"]
        x = np.load({str(xs)!r})
        s = bridge.InferenceSession({str(path)!r}, providers=cpu, min_size=1)
        so = ort.SessionOptions()
        so.add_session_config_entry("session.disable_prepacking", "1")
        want = ort.InferenceSession({str(path)!r}, so, providers=cpu).run(None, {{"x": x}})[0]
        try:
            bridge.InferenceSession({str(bad)!r}, providers=cpu, min_size=1)
            error = None
        except Exception as e:
            error = str(e)
        print(json.dumps({{"handed": sorted(s._onnxio_initializers), "error": error,
                          "equal": bool(np.array_equal(s.run(None, {{"x": x}})[0], want))}}))
        """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["handed"] == ["w_bf16"] and out["equal"], out
    assert "NoSuchOp" in out["error"], out
    assert "[E:onnxruntime" not in proc.stderr, proc.stderr


def test_a_tensor_left_out_fails_loudly(files):
    """The placeholder is an empty file: an initializer onnxruntime was not
    given cannot be read from it (no silent zeros)."""
    data, names, _ = bridge.handoff_parts(str(files["single"]))
    assert os.path.getsize(os.path.join(os.path.dirname(bridge.__file__), bridge.PLACEHOLDER)) == 0
    so = options()
    so.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                os.path.dirname(bridge.__file__))
    with pytest.raises(Exception, match=r"External initializer: [wb]\d offset: 0 size to read: \d+ given file_length: 0"):
        ort.InferenceSession(data, so, providers=CPU)


def test_bad_input_is_named(files, tmp_path):
    skipped = onnxio.load(str(files["single"]), skip_raw_data=True)
    with pytest.raises(ValueError, match=r"initializer 0 \('w0'\) of graph 'chain'.*skipped at load"):
        bridge.InferenceSession(skipped, providers=CPU)
    external = onnxio.load(str(files["ext"]), load_external_data=False)
    with pytest.raises(ValueError, match=r"initializer 0 \('w0'\).*external and was not loaded"):
        bridge.InferenceSession(external, providers=CPU)
    with pytest.raises(TypeError, match="model must be"):
        bridge.InferenceSession(42, providers=CPU)
    so = ort.SessionOptions()
    so.add_session_config_entry("session.model_external_initializers_file_folder_path", str(tmp_path))
    with pytest.raises(ValueError, match="model_external_initializers_file_folder_path"):
        bridge.InferenceSession(str(files["single"]), so, providers=CPU)
    with pytest.raises(FileNotFoundError):
        bridge.InferenceSession(str(tmp_path / "missing.onnx"), providers=CPU)


def test_missing_onnxruntime_names_the_install():
    code = ("import sys; sys.modules['onnxruntime'] = None\n"
            "import onnxio, onnxio.onnxruntime as b\n"
            "try:\n    b.InferenceSession(onnxio.ModelProto())\n"
            "except ImportError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "pip install onnxruntime" in out
