"""Sharded loading: onnxio.shard against numpy.array_split of the
onnx package's full load, for several plans, world sizes, layouts (one .onnx
file, .onnx + external data, .onnxz) and dtypes, from a path and from a
model in memory; the bytes read (the reader's count against the parts'
sizes worked out with numpy); the errors. Then the torchrun test: 4 gloo
processes each shard a GPT-2-shaped model, all_gather rebuilds every weight,
compared with a full load, and each rank reads at most 1.05 / world_size of
the payload (the reader's count and the kernel's rchar)."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxio
from conftest import missing, needs
from onnxio import numpy_helper as onnxio_numpy_helper
from sample_tensors import sample_arrays, save_layouts

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(1616)


def _arrays():
    return {**sample_arrays(RNG), "big": RNG.standard_normal((256, 96)).astype(np.float32)}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    d = tmp_path_factory.mktemp("shard")
    inits = [numpy_helper.from_array(v, k) for k, v in _arrays().items()]
    # Values in typed fields (float_data, int64_data) and strings, not raw_data.
    inits.append(helper.make_tensor("typed", TensorProto.FLOAT, [4, 3], np.arange(12, dtype=np.float32)))
    inits.append(helper.make_tensor("typed64", TensorProto.INT64, [6], [1, -2, 3, -4, 5, -6]))
    inits.append(helper.make_tensor("str", TensorProto.STRING, [5], [b"a", b"bc", b"", b"def", b"g"]))
    inits[0].doc_string = "kept"
    const = numpy_helper.from_array(RNG.standard_normal(700).astype(np.float32), "const_value")
    graph = helper.make_graph([helper.make_node("Constant", [], ["c"], value=const)], "g", [],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [700])], inits)
    model = helper.make_model(graph)
    paths = save_layouts(model, d)
    full = onnx.load(paths["single"])
    ref = {t.name: numpy_helper.to_array(t) for t in full.graph.initializer}
    return paths, ref


LAYOUTS = ["single", "external", "onnxz"]

# Plans and the axis (or None: whole) they give each tensor, worked out by
# hand for the test.
PLANS = [
    ({}, {}),
    ({"*": 0, "scalar": "replicate"},
     {n: 0 for n in ["f32", "f16", "bf16", "i64", "i8", "b", "f64", "empty", "i4", "big", "typed", "typed64", "str"]}),
    ({"f32": -1, "f16": 1, "bf16": 1, "i8": 2, "f64": 3, "f*": 0, "b": 1, "typed": 1, "str": 0, "big": 1,
      "empty": 1, "i4": 0},
     {"f32": 1, "f16": 1, "bf16": 1, "i8": 2, "f64": 3, "b": 1, "typed": 1, "str": 0, "big": 1, "empty": 1,
      "i4": 0}),
    ({"[fb]*": 1, "*64": 0, "i?": -1},  # f32 f16 f64 bf16 b big: 1; i64 typed64: 0; i8 i4: last axis
     {"f32": 1, "f16": 1, "f64": 1, "bf16": 1, "b": 1, "big": 1, "i64": 0, "typed64": 0, "i8": 2}),
]


def _want(ref, axes, rank, world):
    out = {}
    for name, array in ref.items():
        if name in axes:
            out[name] = np.array_split(array, world, axis=axes[name])[rank]
        else:
            out[name] = array
    return out


def _check(model, want):
    got = {t.name: onnxio_numpy_helper.to_array(t) for t in model.graph.initializer}
    assert list(got) == list(want)
    for name, w in want.items():
        g = got[name]
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.shape, w.shape)
        assert np.array_equal(g, w), name


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("plan_index", range(len(PLANS)))
def test_parts_equal_array_split_of_onnx_load(layouts, layout, plan_index):
    paths, ref = layouts
    plan, axes = PLANS[plan_index]
    if plan_index == 3:  # i4 on its last axis (6 elements, 3 bytes a row) splits bytes for most world sizes
        plan = dict(plan, i4="replicate")
    loaded = onnxio.load(paths[layout])
    for world in (1, 2, 3, 4, 7):
        parts_by_rank = []
        for rank in range(world):
            want = _want(ref, axes, rank, world)
            model = onnxio.shard(paths[layout], rank, world, plan)
            _check(model, want)
            # A model in memory (onnxio's, and the onnx package's) gives the same model.
            assert onnxio.shard(loaded, rank, world, plan).SerializeToString() == model.SerializeToString()
            parts_by_rank.append(model)
            # The rest of the model is the load's.
            assert [n.op_type for n in model.graph.node] == ["Constant"]
            assert np.array_equal(onnxio_numpy_helper.to_array(model.graph.node[0].attribute[0].t),
                                  onnxio_numpy_helper.to_array(loaded.graph.node[0].attribute[0].t))
            assert model.graph.initializer[0].doc_string == "kept"
        # The parts, put back together, are the whole tensors.
        for name, axis in axes.items():
            pieces = [onnxio_numpy_helper.to_array(next(t for t in m.graph.initializer if t.name == name))
                      for m in parts_by_rank]
            assert np.array_equal(np.concatenate(pieces, axis=axis), ref[name]), name


@pytest.mark.parametrize("layout", LAYOUTS)
def test_world_size_one_is_the_load(layouts, layout):
    paths, _ = layouts
    full = onnxio.load(paths[layout]).SerializeToString()
    plan = {n: 0 for n in ["f32", "f16", "big", "i64", "typed", "str", "empty"]}
    assert onnxio.shard(paths[layout], 0, 1, plan).SerializeToString() == full
    assert onnxio.shard(paths[layout], 0, 1, {}).SerializeToString() == full


def test_onnx_package_model_and_input_unchanged(layouts):
    paths, ref = layouts
    model = onnx.load(paths["single"])
    before = model.SerializeToString()
    part = onnxio.shard(model, 2, 3, {"big": 1, "f32": 0})
    assert isinstance(part, onnxio.ModelProto)
    assert model.SerializeToString() == before
    loaded = onnxio.load(paths["single"])
    before = loaded.SerializeToString()
    onnxio.shard(loaded, 1, 3, {"big": 1, "f32": 0, "typed": 0, "i4": 0})
    assert loaded.SerializeToString() == before
    _check(part, _want(ref, {"big": 1, "f32": 0}, 2, 3))


def test_in_memory_contiguous_parts_are_views(layouts):
    paths, _ = layouts
    loaded = onnxio.load(paths["single"])
    source = {t.name: onnxio_numpy_helper.to_array(t) for t in loaded.graph.initializer}
    part = onnxio.shard(loaded, 1, 4, {"big": 0, "f32": 1})
    got = {t.name: onnxio_numpy_helper.to_array(t) for t in part.graph.initializer}
    assert np.shares_memory(got["big"], source["big"])  # rows: one contiguous run of the payload
    assert not np.shares_memory(got["f32"], source["f32"])  # columns: copied
    assert np.shares_memory(got["f16"], source["f16"])  # replicated: the same payload


def _payload(array):
    return len(numpy_helper.from_array(array).raw_data) if array.dtype != object else 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bytes_read_are_the_parts(layouts, layout):
    """The reader's count: exactly the bytes of this rank's parts (numpy's
    nbytes of np.array_split's piece), of the replicated tensors whole and
    of the Constant's value, never more."""
    paths, ref = layouts
    plan = {"big": 0, "f16": 1, "f64": 2, "f32": 1, "i4": 0}
    axes = {"big": 0, "f16": 1, "f64": 2, "f32": 1, "i4": 0}
    raw = [n for n in ref if n not in ("typed", "typed64", "str")]  # values in typed fields come with the structure
    const = 700 * 4
    for world in (2, 4, 5):
        total_split = 0
        for rank in range(world):
            st = {}
            onnxio.shard(paths[layout], rank, world, plan, stats=st)
            want = _want(ref, axes, rank, world)
            parts = sum(_payload(want[n]) for n in raw if n in axes)
            whole = sum(_payload(ref[n]) for n in raw if n not in axes)
            assert st["bytes_read"] == parts + whole + const, (world, rank, st)
            assert st["other_payload_bytes"] == const
            assert st["split_payload_bytes"] == sum(_payload(ref[n]) for n in axes)
            assert sorted(st["split"]) == sorted(axes)
            total_split += parts
            # About 1/world of the split payload: array_split's pieces differ by one row at most.
            assert parts <= st["split_payload_bytes"] / world * 1.25
        assert total_split == sum(_payload(ref[n]) for n in axes)


def test_exact_names_win_over_patterns_and_first_pattern_wins(layouts):
    paths, ref = layouts
    plan = {"b*": 0, "big": 1, "*": "replicate", "f*": 1}
    model = onnxio.shard(paths["single"], 1, 2, plan)
    _check(model, _want(ref, {"big": 1, "b": 0, "bf16": 0}, 1, 2))


def test_uneven(layouts):
    paths, ref = layouts
    # 37 rows on 4 ranks: 10, 9, 9, 9 (array_split), not torch.chunk's 10, 10, 10, 7.
    sizes = [onnxio.shard(paths["single"], r, 4, {"f32": 0}).graph.initializer[0].dims[0] for r in range(4)]
    assert sizes == [10, 9, 9, 9]
    # 5 rows on 7 ranks: the last two get none.
    sizes = [[t for t in onnxio.shard(paths["external"], r, 7, {"i8": 0}).graph.initializer
              if t.name == "i8"][0].dims[0] for r in range(7)]
    assert sizes == [1, 1, 1, 1, 1, 0, 0]
    with pytest.raises(ValueError, match=r"'f32'.*37 elements.*world_size 4 does not divide"):
        onnxio.shard(paths["single"], 0, 4, {"f32": 0}, uneven="error")
    onnxio.shard(paths["single"], 0, 4, {"big": 0}, uneven="error")  # 256 rows: fine
    with pytest.raises(ValueError, match="uneven"):
        onnxio.shard(paths["single"], 0, 4, {"big": 0}, uneven="chunk")


@pytest.mark.parametrize("source", ["path", "model"])
def test_errors(layouts, source):
    paths, _ = layouts
    src = paths["external"] if source == "path" else onnxio.load(paths["external"])
    with pytest.raises(ValueError, match=r"plan\['f32'\]: tensor 'f32' of shape \(37, 23\) has no axis 2"):
        onnxio.shard(src, 0, 2, {"f32": 2})
    with pytest.raises(ValueError, match="has no axis -3"):
        onnxio.shard(src, 0, 2, {"f32": -3})
    with pytest.raises(ValueError, match="'scalar'.*has no axis 0.*scalar"):
        onnxio.shard(src, 0, 2, {"s*": 0})
    with pytest.raises(ValueError, match=r"match no initializer.*\['nope\*', 'f33'\]"):
        onnxio.shard(src, 0, 2, {"nope*": 0, "f32": 0, "f33": "replicate"})
    with pytest.raises(ValueError, match="world_size must be at least 1, not 0"):
        onnxio.shard(src, 0, 0, {})
    for rank in (-1, 2, 5):
        with pytest.raises(ValueError, match=f"rank {rank} is out of range for world_size 2"):
            onnxio.shard(src, rank, 2, {})
    for value in ("split", 1.5, True, None):
        with pytest.raises(ValueError, match=r"plan\['f32'\].*an axis \(int\) or 'replicate'"):
            onnxio.shard(src, 0, 2, {"f32": value})
    with pytest.raises(TypeError):
        onnxio.shard(src, 0, 2, [("f32", 0)])
    with pytest.raises(TypeError):
        onnxio.shard(src, 0.0, 2, {})


def test_packed_split_inside_a_byte_from_a_path(layouts):
    paths, ref = layouts
    # i4 (8, 6): 3 bytes a row; 2 ranks on the last axis cut rows at 3 elements, inside a byte.
    with pytest.raises(ValueError, match="splits a byte"):
        onnxio.shard(paths["single"], 0, 2, {"i4": 1})
    # In memory the packed part is written anew.
    part = onnxio.shard(onnxio.load(paths["single"]), 1, 2, {"i4": 1})
    _check(part, _want(ref, {"i4": 1}, 1, 2))


def test_external_not_loaded_in_memory(layouts):
    paths, _ = layouts
    model = onnxio.load(paths["external"], load_external_data=False)
    with pytest.raises(ValueError, match="external and not loaded"):
        onnxio.shard(model, 0, 2, {"big": 0})


def test_name_shared_with_a_constant(tmp_path):
    """A Constant's value named like an initializer: a path cannot tell
    them apart (a clear error); the loaded model shards."""
    w = RNG.standard_normal((8, 4)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(w * 2, "w"))],
                              "g", [], [helper.make_tensor_value_info("c", TensorProto.FLOAT, [8, 4])],
                              [numpy_helper.from_array(w, "w")])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(graph), path)
    with pytest.raises(ValueError, match="cannot tell apart"):
        onnxio.shard(path, 0, 2, {"w": 0})
    part = onnxio.shard(onnxio.load(path), 1, 2, {"w": 0})
    assert np.array_equal(onnxio_numpy_helper.to_array(part.graph.initializer[0]), w[4:])
    assert np.array_equal(onnxio_numpy_helper.to_array(part.graph.node[0].attribute[0].t), w * 2)


def test_module_and_top_level_name():
    import onnxio.sharding

    assert "sharding" in dir(onnxio) and "shard" in dir(onnxio)
    assert callable(onnxio.shard) and onnxio.sharding.shard_bounds(10, 3, 4) == (8, 10)
    for n, w in [(10, 4), (37, 4), (5, 7), (0, 3), (256, 4)]:
        got = [onnxio.sharding.shard_bounds(n, r, w) for r in range(w)]
        want = np.array_split(np.arange(n), w)
        assert [b - a for a, b in got] == [len(p) for p in want]
        assert [a for a, b in got if b > a] == [int(p[0]) for p in want if len(p)]


# ---- the torchrun test --------------------------------------------------------------

D, LAYERS, VOCAB, CTX = 256, 4, 8192, 512
WORLD = 4
# Megatron-style tensor parallelism: the embedding by vocabulary rows, the
# attention's qkv and the MLP's fc by columns (and their biases), the two
# output projections by rows; their biases and the layer norms replicated.
GPT2_PLAN = {"wte": 0, "wpe": 1, "*.attn.c_attn.weight": 1, "*.attn.c_attn.bias": 0,
             "*.attn.c_proj.weight": 0, "*.mlp.c_fc.weight": 1, "*.mlp.c_fc.bias": 0,
             "*.mlp.c_proj.weight": 0, "*.c_proj.bias": "replicate"}


def _gpt2(tmp_path):
    """A GPT-2-shaped model (d=256, 4 layers, float32), the weights' axes
    under GPT2_PLAN worked out here, and the payload bytes by kind."""
    rng = np.random.default_rng(2)
    weights = {"wte": ((VOCAB, D), 0), "wpe": ((CTX, D), 1)}
    for i in range(LAYERS):
        p = f"h.{i}"
        weights.update({
            f"{p}.ln_1.weight": ((D,), None), f"{p}.ln_1.bias": ((D,), None),
            f"{p}.attn.c_attn.weight": ((D, 3 * D), 1), f"{p}.attn.c_attn.bias": ((3 * D,), 0),
            f"{p}.attn.c_proj.weight": ((D, D), 0), f"{p}.attn.c_proj.bias": ((D,), None),
            f"{p}.ln_2.weight": ((D,), None), f"{p}.ln_2.bias": ((D,), None),
            f"{p}.mlp.c_fc.weight": ((D, 4 * D), 1), f"{p}.mlp.c_fc.bias": ((4 * D,), 0),
            f"{p}.mlp.c_proj.weight": ((4 * D, D), 0), f"{p}.mlp.c_proj.bias": ((D,), None),
        })
    weights.update({"ln_f.weight": ((D,), None), "ln_f.bias": ((D,), None)})
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.02).astype(np.float32), name)
             for name, (shape, _) in weights.items()]
    # The graph: embedding, then per layer LayerNorm, MatMul + Add (qkv),
    # MatMul + Add (proj), LayerNorm, MatMul + Add (fc), Gelu... kept to
    # valid ONNX ops on the weights.
    nodes = [helper.make_node("Gather", ["wte", "ids"], ["x0"])]
    x = "x0"
    for i in range(LAYERS):
        p = f"h.{i}"
        nodes += [
            helper.make_node("LayerNormalization", [x, f"{p}.ln_1.weight", f"{p}.ln_1.bias"], [f"{p}.a"], axis=-1),
            helper.make_node("MatMul", [f"{p}.a", f"{p}.attn.c_attn.weight"], [f"{p}.b"]),
            helper.make_node("Add", [f"{p}.b", f"{p}.attn.c_attn.bias"], [f"{p}.qkv"]),
            helper.make_node("Slice", [f"{p}.qkv", "zero", "d", "minus1"], [f"{p}.v"]),
            helper.make_node("MatMul", [f"{p}.v", f"{p}.attn.c_proj.weight"], [f"{p}.c"]),
            helper.make_node("Add", [f"{p}.c", f"{p}.attn.c_proj.bias"], [f"{p}.d"]),
            helper.make_node("Add", [x, f"{p}.d"], [f"{p}.r1"]),
            helper.make_node("LayerNormalization", [f"{p}.r1", f"{p}.ln_2.weight", f"{p}.ln_2.bias"], [f"{p}.e"],
                             axis=-1),
            helper.make_node("MatMul", [f"{p}.e", f"{p}.mlp.c_fc.weight"], [f"{p}.f"]),
            helper.make_node("Add", [f"{p}.f", f"{p}.mlp.c_fc.bias"], [f"{p}.g"]),
            helper.make_node("Relu", [f"{p}.g"], [f"{p}.h"]),
            helper.make_node("MatMul", [f"{p}.h", f"{p}.mlp.c_proj.weight"], [f"{p}.i"]),
            helper.make_node("Add", [f"{p}.i", f"{p}.mlp.c_proj.bias"], [f"{p}.j"]),
            helper.make_node("Add", [f"{p}.r1", f"{p}.j"], [f"{p}.out"]),
        ]
        x = f"{p}.out"
    nodes.append(helper.make_node("LayerNormalization", [x, "ln_f.weight", "ln_f.bias"], ["y"], axis=-1))
    consts = [numpy_helper.from_array(np.array([0], np.int64), "zero"),
              numpy_helper.from_array(np.array([D], np.int64), "d"),
              numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    graph = helper.make_graph(nodes, "gpt2", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", D])], inits + consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    single = str(tmp_path / "gpt2.onnx")
    onnxio.save(onnxio.from_onnx(model), single)
    os.mkdir(tmp_path / "ext")
    external = str(tmp_path / "ext" / "gpt2.onnx")
    onnxio.save(onnxio.load(single), external, save_as_external_data=True, location="gpt2.onnx.data")
    archive = str(tmp_path / "gpt2.onnxz")
    onnxio.save(onnxio.load(single), archive)
    axes = {name: axis for name, (_, axis) in weights.items() if axis is not None}
    split = sum(int(np.prod(shape)) * 4 for _, (shape, axis) in weights.items() if axis is not None)
    replicated = sum(int(np.prod(shape)) * 4 for _, (shape, axis) in weights.items() if axis is None) + 3 * 8
    return {"single": single, "external": external, "onnxz": archive}, axes, split, replicated


def _torchrun():
    """The torchrun command of this interpreter's torch (`python -m
    torch.distributed.run` is what the torchrun script runs)."""
    torch = needs("torch", "the torchrun test of onnxio.shard")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        missing("torch", "this build has no torch.distributed with the gloo backend")
    return [sys.executable, "-m", "torch.distributed.run"]


@pytest.mark.slow
def test_torchrun_all_gather_rebuilds_a_gpt2_model(tmp_path):
    torchrun = _torchrun()
    paths, axes, split, replicated = _gpt2(tmp_path)
    payload = split + replicated
    out = tmp_path / "report.json"
    config = {"layouts": paths, "plan": GPT2_PLAN, "axes": axes, "reference": paths["single"], "out": str(out),
              "num_threads": 1}
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), OMP_NUM_THREADS="1")
    proc = subprocess.run([*torchrun, f"--nproc_per_node={WORLD}", "--standalone",
                           os.path.join(HERE, "shard_torchrun.py"), str(tmp_path / "config.json")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["world_size"] == WORLD
    for layout, r in report["layouts"].items():
        assert r["mismatches"] == [], layout
        assert r["checked"] == len(axes) + (LAYERS * 6 + 2) + 3  # every initializer compared
        structure = os.path.getsize(paths[layout]) - (payload if layout != "external" else 0)
        for rank, s in enumerate(r["ranks"]):
            assert s["payload_bytes"] == payload and s["split_payload_bytes"] == split
            # The bound worked out for the plan: an even quarter of the split
            # tensors (every split axis is a multiple of 4) plus the
            # replicated ones whole...
            assert s["bytes_read"] == split // WORLD + replicated, (layout, rank, s)
            # ... and the criterion: at most 1.05 / world_size of the payload.
            assert s["bytes_read"] <= 1.05 * payload / WORLD, (layout, rank, s)
            # The kernel's count for the process during onnxio.shard (the
            # structure comes through the mapping or a few reads).
            assert s["bytes_read"] <= s["rchar"] <= s["bytes_read"] + max(structure, 0) + 65536, (layout, rank, s)
