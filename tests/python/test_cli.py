"""Tests of the `onnxio` command: exit statuses and messages, help, and the
verbs info, print and convert checked against what the onnx package reports
for the same files.

The command is taken from $ONNXIO_CLI, by default <repo>/build/onnxio.
Models come from /usr/share/libonnx-testdata/data, from <repo>/../shared/corpus
(those tests are skipped when it is absent) and from models built here.
"""

import json
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxref
from clitool import CLI, REPO, info_json, run, run_ok
from conftest import needs

SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"

VERBS = ["info", "print", "convert"]

needs_corpus = pytest.mark.needs("shared-corpus")


def assert_usage_error(rc, out, err, verb=None):
    assert rc == 2, err
    assert out == b""
    if verb:
        assert err.startswith(f"onnxio: {verb}: ")
        assert f"usage: onnxio {verb}" in err
    else:
        assert "usage: onnxio" in err


def assert_failure(rc, out, err, verb, file):
    assert rc == 1, err
    assert out == b""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"onnxio: {verb}: {file}: ")
    assert len(lines[0]) > len(f"onnxio: {verb}: {file}: ")


# ---- models ------------------------------------------------------------

TESTDATA_MODELS = [
    "node/test_add",
    "node/test_loop11",
    "simple/test_sequence_model1",
    "simple/test_expand_shape_model1",
    "pytorch-converted/test_Conv3d",
    "pytorch-operator/test_operator_conv",
]


def libonnx_model(name):
    path = needs("libonnx-testdata") / name / "model.onnx"
    assert path.exists(), f"{path}: not in this libonnx-testdata"
    return path


def corpus_models():
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.glob("*.onnx")) + sorted(CORPUS.glob("*/*.onnx"))


def corpus_model(fragment):
    needs("shared-corpus")
    for p in corpus_models():
        if fragment in str(p):
            return p
    pytest.fail(f"no model of {CORPUS} matches {fragment}")


@pytest.fixture
def synthetic(tmp_path):
    """A model with payloads on both sides of the default threshold (1024
    bytes), typed-data and string tensors (which stay inline), metadata and
    awkward names."""
    rng = np.random.default_rng(0)
    arrays = {
        "tiny": rng.standard_normal(4).astype(np.float32),  # 16 B
        "below": rng.standard_normal(255).astype(np.float32),  # 1020 B
        "exactly": rng.standard_normal(256).astype(np.float32),  # 1024 B
        "medium": rng.integers(-9, 9, 512).astype(np.int64),  # 4096 B
        "large": rng.standard_normal((100, 250)).astype(np.float32),  # 100000 B
        "half": rng.standard_normal((8, 200)).astype(np.float16),  # 3200 B
    }
    inits = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    inits.append(helper.make_tensor("typed", TensorProto.FLOAT, [300], np.arange(300, dtype=np.float32)))
    inits.append(helper.make_tensor("words", TensorProto.STRING, [3], [b"ab", b"cde", b""]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 250])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 100])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("MatMul", ["x", "large_t"], ["y0"]),
        helper.make_node("Transpose", ["large"], ["large_t"]),
        helper.make_node("Identity", ["y0"], ["y"]),
        helper.make_node("Identity", ["tiny"], ["z"]),
    ]
    graph = helper.make_graph(nodes, "synthetic", [x], [y, z], initializer=inits)
    model = helper.make_model(
        graph,
        producer_name="test_cli",
        producer_version="1.0",
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
    )
    model.domain = "org.example"
    model.model_version = 7
    helper.set_model_props(model, {"author": 'quote " back \\ newline \n tab \t ctl \x01 snow \u2603'})
    path = tmp_path / "synthetic.onnx"
    path.write_bytes(model.SerializeToString())
    return path


# ---- what onnx says ----------------------------------------------------


def graph_tensors(g):
    """Every TensorProto of a graph, subgraphs included (as
    onnx.external_data_helper walks them)."""
    yield from g.initializer
    for sp in g.sparse_initializer:
        yield sp.values
        yield sp.indices
    for n in g.node:
        for a in n.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from graph_tensors(a.g)
            for sub in a.graphs:
                yield from graph_tensors(sub)


def model_tensors(m):
    yield from graph_tensors(m.graph)
    for f in m.functions:
        for n in f.node:
            for a in n.attribute:
                if a.HasField("t"):
                    yield a.t
                yield from a.tensors


def is_external(t):
    return t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL


def external_info(t):
    return {e.key: e.value for e in t.external_data}


SUB_BYTE = {TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT4E2M1}
if hasattr(TensorProto, "INT2"):
    SUB_BYTE |= {TensorProto.INT2, TensorProto.UINT2}


def expected_bytes(t, base_dir):
    """Payload bytes as `info` reports them: raw_data, external length, or
    the typed data (numpy's nbytes; strings by length)."""
    if is_external(t):
        info = external_info(t)
        if "length" in info:
            return int(info["length"])
        p = base_dir / info.get("location", "")
        if p.is_file():
            return max(p.stat().st_size - int(info.get("offset", 0)), 0)
        return 0
    if t.HasField("raw_data"):
        return len(t.raw_data)
    if t.data_type == TensorProto.STRING:
        return sum(len(s) for s in t.string_data)
    if t.data_type in SUB_BYTE:
        return len(t.int32_data)  # one packed byte per entry
    try:
        return numpy_helper.to_array(t).nbytes
    except Exception:  # e.g. weightless models: dims without data
        item = helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        return (
            4 * len(t.float_data)
            + 8 * len(t.double_data)
            + 8 * len(t.int64_data)
            + item * len(t.int32_data)
            + (4 if t.data_type == TensorProto.UINT32 else 8) * len(t.uint64_data)
        )


def expected_shape(vi):
    tp = vi.type
    which = tp.WhichOneof("value")
    if which not in ("tensor_type", "sparse_tensor_type"):
        return None, None
    tt = getattr(tp, which)
    elem = TensorProto.DataType.Name(tt.elem_type)
    if not tt.HasField("shape"):
        return elem, None
    dims = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return elem, dims


def norm_domain(d):
    return "" if d == "ai.onnx" else d


def check_info_against_onnx(path):
    m = onnx.load(str(path), load_external_data=False)
    j = info_json(path)
    base = Path(path).parent

    assert j["ir_version"] == m.ir_version
    assert j["producer_name"] == m.producer_name
    assert j["producer_version"] == m.producer_version
    assert j["domain"] == m.domain
    assert j["model_version"] == m.model_version
    assert j["file_size"] == Path(path).stat().st_size
    assert [(o["domain"], o["version"]) for o in j["opset_import"]] == [
        (o.domain, o.version) for o in m.opset_import
    ]
    assert [(p["key"], p["value"]) for p in j["metadata_props"]] == [
        (p.key, p.value) for p in m.metadata_props
    ]
    g = m.graph
    assert j["graph_name"] == g.name

    init_names = {t.name for t in g.initializer}
    for key, values in (("inputs", g.input), ("outputs", g.output)):
        got = j[key]
        assert [v["name"] for v in got] == [v.name for v in values]
        for v, vi in zip(got, values):
            elem, shape = expected_shape(vi)
            assert v["elem_type"] == elem, vi.name
            assert v["shape"] == shape, vi.name
            assert v["initializer"] == (vi.name in init_names)

    assert j["node_count"] == len(g.node)
    want_ops = Counter((norm_domain(n.domain), n.op_type) for n in g.node)
    got_ops = [(o["domain"], o["op_type"], o["count"]) for o in j["op_types"]]
    assert {(d, t): c for d, t, c in got_ops} == dict(want_ops)
    counts = [c for _, _, c in got_ops]
    assert counts == sorted(counts, reverse=True)

    sizes = [expected_bytes(t, base) for t in g.initializer]
    assert j["initializers"]["count"] == len(g.initializer)
    assert j["initializers"]["bytes"] == sum(sizes)
    largest = j["initializers"]["largest"]
    assert [t["bytes"] for t in largest] == sorted(sizes, reverse=True)[:10]
    by_name = {t.name: t for t in g.initializer}
    for t in largest:
        ref = by_name[t["name"]]
        assert t["dims"] == list(ref.dims)
        assert t["data_type"] == TensorProto.DataType.Name(ref.data_type)
        assert t["external"] == is_external(ref)

    assert [s["name"] for s in j["sparse_initializers"]] == [
        s.values.name for s in g.sparse_initializer
    ]
    assert [s["dims"] for s in j["sparse_initializers"]] == [list(s.dims) for s in g.sparse_initializer]

    ext = [t for t in model_tensors(m) if is_external(t)]
    assert j["external_tensors"] == len(ext)
    want_files = Counter(external_info(t).get("location") for t in ext if external_info(t).get("location"))
    assert {f["location"]: f["tensors"] for f in j["external_data"]} == dict(want_files)
    for f in j["external_data"]:
        assert f["exists"] == (base / f["location"]).is_file()
        assert f["bytes"] == sum(
            expected_bytes(t, base) for t in ext if external_info(t).get("location") == f["location"]
        )

    assert [(f["domain"], f["name"], f["node_count"]) for f in j["functions"]] == [
        (f.domain, f.name, len(f.node)) for f in m.functions
    ]
    assert j["training_info"] == len(m.training_info)
    return j


# ---- global usage ------------------------------------------------------


def test_version():
    out = run_ok("--version").decode()
    assert out.startswith("onnxio ") and out.strip().split()[1][0].isdigit()


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"]])
def test_global_help(args):
    out = run_ok(*args).decode()
    assert out.startswith("usage: onnxio")
    for verb in VERBS:
        assert f"  {verb} " in out
    assert "Exit status" in out


def test_no_arguments():
    assert_usage_error(*run())


def test_unknown_command():
    rc, out, err = run("frobnicate", "x.onnx")
    assert_usage_error(rc, out, err)
    assert "unknown command 'frobnicate'" in err


def test_unknown_global_option():
    rc, out, err = run("--frobnicate")
    assert_usage_error(rc, out, err)
    assert "'--frobnicate'" in err


def test_help_unknown_command():
    rc, out, err = run("help", "frobnicate")
    assert_usage_error(rc, out, err)


@pytest.mark.parametrize("verb", VERBS)
def test_verb_help(verb):
    out = run_ok(verb, "--help").decode()
    assert out.startswith(f"usage: onnxio {verb} ")
    assert "--help" in out
    assert run_ok("help", verb).decode() == out
    assert run_ok(verb, "-h").decode() == out
    # --help wins wherever it is, even next to bad arguments.
    assert run_ok(verb, "a", "b", "c", "--help").decode() == out


def test_help_texts_document_options():
    assert "--json" in run_ok("info", "--help").decode()
    text = run_ok("print", "--help").decode()
    for opt in ("--full", "--type", "--max-bytes", "--external"):
        assert opt in text
    text = run_ok("convert", "--help").decode()
    for opt in ("--external-data", "--size-threshold", "--inline"):
        assert opt in text


# ---- usage errors (2) and failures (1) per verb ------------------------


@pytest.mark.parametrize(
    "verb,args",
    [
        ("info", []),
        ("info", ["a.onnx", "b.onnx"]),
        ("info", ["a.onnx", "--frobnicate"]),
        ("info", ["a.onnx", "-x"]),
        ("info", ["a.onnx", "--json=yes"]),
        ("print", []),
        ("print", ["a.onnx", "--type"]),
        ("print", ["a.onnx", "--type", "NoSuchProto"]),
        ("print", ["a.onnx", "--max-bytes", "lots"]),
        ("print", ["a.onnx", "--type", "TensorProto", "--external"]),
        ("convert", []),
        ("convert", ["a.onnx"]),
        ("convert", ["a.onnx", "b.onnx", "c.onnx"]),
        ("convert", ["a.onnx", "b.onnx", "--external-data"]),
        ("convert", ["a.onnx", "b.onnx", "--external-data", "w.bin", "--inline"]),
        ("convert", ["a.onnx", "b.onnx", "--size-threshold", "10"]),
        ("convert", ["a.onnx", "b.onnx", "--external-data", "w.bin", "--size-threshold", "ten"]),
        ("convert", ["a.onnx", "b.onnx", "--external-data", "w.bin", "--size-threshold", "-1"]),
        ("convert", ["a.onnx", "b.onnx", "--frobnicate"]),
    ],
)
def test_usage_errors(verb, args, tmp_path):
    rc, out, err = run(verb, *args, cwd=tmp_path)
    assert_usage_error(rc, out, err, verb)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("verb", VERBS)
def test_missing_file(verb, tmp_path):
    missing = tmp_path / "missing.onnx"
    args = [verb, missing] + ([tmp_path / "out.onnx"] if verb == "convert" else [])
    assert_failure(*run(*args), verb, missing)
    assert not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("verb", VERBS)
def test_malformed_file(verb, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + b"garbage")  # length past the end
    args = [verb, bad] + ([tmp_path / "out.onnx"] if verb == "convert" else [])
    assert_failure(*run(*args), verb, bad)
    assert not (tmp_path / "out.onnx").exists()


def text_model_files(d):
    """Files of a model written by the onnx package as JSON, textproto and ONNX's
    textual syntax, and a JSON document (json.loads reads it) whose bytes,
    read as protobuf, open groups deeper than 100 before anything else
    fails."""
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [numpy_helper.from_array(np.ones(2, np.float32), "w")])
    model = helper.make_model(graph)
    files = {}
    for fmt in ("json", "textproto", "onnxtxt"):
        files[fmt] = d / f"model.{fmt}"
        onnx.save(model, str(files[fmt]), format=fmt)
    nested = d / "nested.json"
    nested.write_text('{ "{' + " {{" * 150 + '": "x" }')
    json.loads(nested.read_text())
    files["nested"] = nested
    return files


@pytest.mark.filterwarnings("ignore:The onnxtxt format is experimental")
def test_text_models_are_named_text(tmp_path):
    """Every verb that reads a model reads JSON, protobuf text format and
    ONNX's textual syntax (test_text_models_read_like_binary compares the
    outputs) and says where JSON that is not a model fails; the Python
    package reads each as the onnx package does."""
    import onnxio

    files = text_model_files(tmp_path)
    out = tmp_path / "out.onnx"
    for fmt, path in files.items():
        for args in (["info", path], ["print", path], ["convert", path, out], ["bench", path], ["cat", path, "w"],
                     ["extract", path, out, "--tensors", "w"]):
            rc, stdout, err = run(*args)
            if fmt != "nested":
                assert rc == 0, (args, err)
                out.unlink(missing_ok=True)
                continue
            assert_failure(rc, stdout, err, args[0], path)
            assert 'JSON, line 1 column 3: Message type "onnx.ModelProto" has no field named' in err, (args, err)
            assert not out.exists()
        if fmt != "nested":
            loaded = onnxio.load(str(path), format=fmt)
            assert loaded.SerializeToString() == onnx.load(str(path), format=fmt).SerializeToString()

def test_print_other_type_malformed(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x08")  # a tag with no value
    assert_failure(*run("print", "--type", "TensorProto", bad), "print", bad)


def test_convert_to_missing_directory(synthetic, tmp_path):
    out = tmp_path / "no" / "such" / "dir.onnx"
    assert_failure(*run("convert", synthetic, out), "convert", out)


@pytest.mark.parametrize("location", ["/tmp/onnxio-cli-test-abs.bin", "../escape.bin"])
def test_convert_unsafe_location(synthetic, tmp_path, location):
    out = tmp_path / "out.onnx"
    rc, stdout, err = run("convert", synthetic, out, "--external-data", location)
    assert_failure(rc, stdout, err, "convert", out)
    assert not out.exists()
    assert not Path(location).exists() or location.startswith("..")
    assert not (tmp_path.parent / "escape.bin").exists()


def test_convert_location_is_model(synthetic, tmp_path):
    out = tmp_path / "out.onnx"
    assert_failure(*run("convert", synthetic, out, "--external-data", "out.onnx"), "convert", out)


# ---- info ----------------------------------------------------------------


@pytest.mark.parametrize("name", TESTDATA_MODELS)
def test_info_json_testdata(name):
    check_info_against_onnx(libonnx_model(name))


@needs_corpus
@pytest.mark.parametrize("path", corpus_models(), ids=lambda p: p.name)
def test_info_json_corpus(path):
    check_info_against_onnx(path)


def test_info_json_synthetic(synthetic):
    j = check_info_against_onnx(synthetic)
    assert j["producer_name"] == "test_cli"
    assert j["domain"] == "org.example" and j["model_version"] == 7
    assert j["inputs"][0]["shape"] == ["N", 250]
    assert j["outputs"][1]["shape"] is None and j["outputs"][1]["elem_type"] == "FLOAT"
    assert j["initializers"]["largest"][0]["name"] == "large"
    assert j["initializers"]["largest"][0]["bytes"] == 100000
    words = [t for t in j["initializers"]["largest"] if t["name"] == "words"]
    assert words and words[0]["bytes"] == 5 and words[0]["data_type"] == "STRING"
    typed = [t for t in j["initializers"]["largest"] if t["name"] == "typed"]
    assert typed and typed[0]["bytes"] == 1200


def test_info_json_escapes_bytes(tmp_path):
    """Names that are not valid UTF-8 still give valid JSON (U+FFFD)."""
    model = helper.make_model(
        helper.make_graph([], "g", [], []), producer_name="AB@@EF", producer_version='q"\\\n\x02'
    )
    data = model.SerializeToString().replace(b"AB@@EF", b"AB\xff\xfeEF")
    path = tmp_path / "odd.onnx"
    path.write_bytes(data)
    j = info_json(path)
    assert j["producer_name"] == "AB\ufffd\ufffdEF"
    assert j["producer_version"] == 'q"\\\n\x02'


def test_dash_dash_ends_options(synthetic, tmp_path):
    odd = tmp_path / "-odd.onnx"
    odd.write_bytes(synthetic.read_bytes())
    j = json.loads(run_ok("info", "--json", "--", "-odd.onnx", cwd=tmp_path))
    assert j["graph_name"] == "synthetic"
    rc, out, err = run("info", "-odd.onnx", cwd=tmp_path)
    assert_usage_error(rc, out, err, "info")


def test_info_text(synthetic):
    out = run_ok("info", synthetic).decode()
    for text in ("ir_version", "test_cli 1.0", "ai.onnx 17", "ai.onnx.ml 3", "synthetic",
                 "FLOAT [N, 250]", "MatMul", "Identity", "large", "author ="):
        assert text in out, text
    # control characters of names are escaped, not sent to the terminal
    assert "\x01" not in out and "\\x01" in out


@needs_corpus
def test_info_external_and_missing_data():
    j = info_json(corpus_model("mnist-external__mnist/mnist.onnx"))
    assert [f["location"] for f in j["external_data"]] == ["mnist.onnx.data"]
    assert j["external_data"][0]["exists"] is True
    j = info_json(corpus_model("image_classifier16"))
    assert len(j["external_data"]) == 1 and j["external_data"][0]["exists"] is False
    out = run_ok("info", corpus_model("image_classifier16")).decode()
    assert "(missing)" in out


def test_info_external_size_without_length_or_file(tmp_path):
    """An external tensor with no "length" key whose data file is missing
    counts the bytes its data type and dims need (numpy's nbytes), not 0."""
    shapes = {"emb": (TensorProto.FLOAT16, [1000, 1920]), "s": (TensorProto.INT64, [3])}
    inits = []
    for name, (dt, dims) in shapes.items():
        t = TensorProto(name=name, data_type=dt, dims=dims, data_location=TensorProto.EXTERNAL)
        t.external_data.add(key="location", value="gone.bin")
        inits.append(t)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], inits)), str(path))
    want = {n: int(np.prod(d)) * helper.tensor_dtype_to_np_dtype(dt).itemsize for n, (dt, d) in shapes.items()}
    j = info_json(path)
    assert {t["name"]: t["bytes"] for t in j["initializers"]["largest"]} == want
    assert j["initializers"]["bytes"] == sum(want.values())
    assert j["external_data"][0]["exists"] is False and j["external_data"][0]["bytes"] == sum(want.values())


@needs_corpus
def test_info_functions_and_sparse():
    j = info_json(corpus_model("nested_local_function"))
    assert len(j["functions"]) == 2
    j = info_json(corpus_model("sparse_nnz.onnx"))
    assert len(j["sparse_initializers"]) == 1


# ---- print ---------------------------------------------------------------


def small_models():
    models = [libonnx_model(n) for n in ("node/test_add", "node/test_loop11", "simple/test_sequence_model1")]
    if CORPUS.is_dir():
        models += [corpus_model(n) for n in ("sparse_nnz.onnx", "loop.onnx", "conv2d_local_func_example")]
    return models


def test_print_full_equals_onnx_str():
    for path in small_models():
        assert run_ok("print", "--full", path).decode() == str(onnx.load(str(path))), path


def test_print_full_equals_onnx_str_synthetic(synthetic):
    assert run_ok("print", "--full", synthetic).decode() == str(onnx.load(str(synthetic)))


def test_print_formats_equal_onnx_save(synthetic, tmp_path):
    """--format textproto / json print the bytes onnx.save writes in those
    formats (JSON with a final newline); --format str is the default."""
    for fmt, ext in (("textproto", "txtpb"), ("json", "json")):
        onnx.save(onnx.load(str(synthetic)), tmp_path / f"m.{ext}", format=fmt)
        want = (tmp_path / f"m.{ext}").read_bytes() + (b"\n" if fmt == "json" else b"")
        assert run_ok("print", "--format", fmt, "--full", synthetic) == want, fmt
    assert run_ok("print", "--format", "str", synthetic) == run_ok("print", synthetic)
    assert_usage_error(*run("print", "--format", "yaml", synthetic), "print")


def test_print_tensor_pb():
    pb = needs("libonnx-testdata") / "node/test_add/test_data_set_0/input_0.pb"
    assert pb.exists(), f"{pb}: not in this libonnx-testdata"
    want = str(onnx.load_tensor(str(pb)))
    assert run_ok("print", "--type", "TensorProto", "--full", pb).decode() == want
    assert run_ok("print", "--type", "onnx.TensorProto", "--max-bytes", "0", pb).decode() == want


def test_print_abbreviates_by_default(synthetic):
    full = run_ok("print", "--full", synthetic)
    short = run_ok("print", synthetic)
    assert len(short) < len(full) // 10
    assert run_ok("print", "--max-bytes", "0", synthetic) == full
    # nothing shorter than 64 bytes is cut
    assert b'raw_data: "' in short


@needs_corpus
def test_print_external_model():
    path = corpus_model("mnist-external__mnist/mnist.onnx")
    stored = run_ok("print", "--full", path).decode()
    assert "data_location: EXTERNAL" in stored and "mnist.onnx.data" in stored
    loaded = run_ok("print", "--full", "--external", path).decode()
    assert "data_location: EXTERNAL" not in loaded
    assert len(loaded) > len(stored)


# ---- convert -------------------------------------------------------------


def libprotobuf_bytes(path):
    return onnx.load(str(path), load_external_data=False).SerializeToString()


def raw_sizes(path):
    m = onnx.load(str(path), load_external_data=False)
    return {t.name: len(t.raw_data) for t in m.graph.initializer if t.HasField("raw_data")}


def assert_same_tensors(a_path, b_path):
    a = onnx.load(str(a_path))  # reads external data
    b = onnx.load(str(b_path))
    assert [t.name for t in a.graph.initializer] == [t.name for t in b.graph.initializer]
    for x, y in zip(a.graph.initializer, b.graph.initializer):
        xa, ya = numpy_helper.to_array(x), numpy_helper.to_array(y)
        assert xa.dtype == ya.dtype and xa.shape == ya.shape, x.name
        assert np.array_equal(xa, ya), x.name


def check_external_round_trip(src, tmp_path, threshold=None):
    ext = tmp_path / "ext.onnx"
    args = ["convert", src, ext, "--external-data", "weights.bin"]
    if threshold is not None:
        args += ["--size-threshold", str(threshold)]
    run_ok(*args)
    assert_same_tensors(ext, src)

    # what moved: raw_data payloads of at least the threshold, nothing else
    limit = 1024 if threshold is None else max(int(threshold), 1)
    sizes = raw_sizes(src)
    # a data file exists exactly when a payload moved (a save that moves
    # nothing writes no empty data file)
    assert (tmp_path / "weights.bin").exists() == any(s >= limit for s in sizes.values())
    m = onnx.load(str(ext), load_external_data=False)
    for t in m.graph.initializer:
        if t.name in sizes and sizes[t.name] >= limit:
            assert is_external(t), t.name
            info = external_info(t)
            assert info["location"] == "weights.bin"
            assert int(info["length"]) == sizes[t.name]
        else:
            assert not is_external(t), t.name
    moved = sum(s for s in sizes.values() if s >= limit)
    if moved:
        assert (tmp_path / "weights.bin").stat().st_size >= moved

    back = tmp_path / "back.onnx"
    run_ok("convert", ext, back, "--inline")
    assert back.read_bytes() == onnxref.inlined_bytes(ext)
    # and that is the source with data_location = DEFAULT on what moved
    assert back.read_bytes() == onnxref.marked_inline(src, moved=lambda t: t.HasField("raw_data")
                                                      and len(t.raw_data) >= limit)
    return ext


def test_convert_round_trip_synthetic(synthetic, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    check_external_round_trip(synthetic, out)
    assert raw_sizes(synthetic)["exactly"] == 1024  # the boundary case is covered


def test_convert_option_spellings(synthetic, tmp_path):
    run_ok("convert", synthetic, tmp_path / "a.onnx", "--external-data=a.bin", "--size-threshold=4096")
    run_ok("convert", "--size-threshold", "4096", "--external-data", "b.bin", synthetic, tmp_path / "b.onnx")
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    m = onnx.load(str(tmp_path / "a.onnx"), load_external_data=False)
    assert {t.name for t in m.graph.initializer if is_external(t)} == {"medium", "large"}


@pytest.mark.parametrize("threshold", ["0", "1", "1024", "4096", "4K", "1M"])
def test_convert_size_threshold(synthetic, tmp_path, threshold):
    out = tmp_path / "out"
    out.mkdir()
    value = {"4K": 4096, "1M": 1 << 20}.get(threshold, threshold)
    check_external_round_trip(synthetic, out, threshold=value)
    # the same with the suffix spelled on the command line
    run_ok("convert", synthetic, out / "again.onnx", "--external-data", "again.bin",
           "--size-threshold", threshold)
    assert_same_tensors(out / "again.onnx", synthetic)


@pytest.mark.parametrize("name", ["pytorch-converted/test_Conv3d", "pytorch-operator/test_operator_conv"])
def test_convert_round_trip_testdata(name, tmp_path):
    check_external_round_trip(libonnx_model(name), tmp_path)


@needs_corpus
@pytest.mark.parametrize(
    "fragment",
    ["rten-onnx__test-data__mnist.onnx", "version-RFB-320.onnx", "pipeline_tfidf", "loop.onnx"],
)
def test_convert_round_trip_corpus(fragment, tmp_path):
    check_external_round_trip(corpus_model(fragment), tmp_path)


def test_convert_plain_is_libprotobuf_bytes(tmp_path):
    for path in small_models():
        out = tmp_path / "out.onnx"
        run_ok("convert", path, out)
        assert out.read_bytes() == libprotobuf_bytes(path), path


def test_convert_in_place(synthetic):
    want = libprotobuf_bytes(synthetic)
    run_ok("convert", synthetic, synthetic)
    assert synthetic.read_bytes() == want


def test_convert_keeps_external(synthetic, tmp_path):
    """A plain convert leaves external tensors external, pointing at the same
    file; outside the input's directory it refuses rather than break them."""
    ext = tmp_path / "ext.onnx"
    run_ok("convert", synthetic, ext, "--external-data", "weights.bin")
    data = (tmp_path / "weights.bin").read_bytes()
    copy = tmp_path / "copy.onnx"
    run_ok("convert", ext, copy)
    assert copy.read_bytes() == libprotobuf_bytes(ext)
    assert (tmp_path / "weights.bin").read_bytes() == data
    assert_same_tensors(copy, synthetic)

    other = tmp_path / "elsewhere"
    other.mkdir()
    rc, out, err = run("convert", ext, other / "copy.onnx")
    assert_failure(rc, out, err, "convert", other / "copy.onnx")
    assert "--inline" in err
    assert list(other.iterdir()) == []
    # --inline and --external-data write anywhere
    run_ok("convert", ext, other / "inline.onnx", "--inline")
    assert (other / "inline.onnx").read_bytes() == onnxref.inlined_bytes(ext)
    run_ok("convert", ext, other / "moved.onnx", "--external-data", "moved.bin")
    assert_same_tensors(other / "moved.onnx", synthetic)

    # the model must not overwrite its own data file
    rc, out, err = run("convert", ext, tmp_path / "weights.bin")
    assert_failure(rc, out, err, "convert", tmp_path / "weights.bin")
    assert (tmp_path / "weights.bin").read_bytes() == data


def test_convert_rewrites_existing_external(synthetic, tmp_path):
    """Re-externalizing into the file the input reads from replaces it."""
    ext = tmp_path / "ext.onnx"
    run_ok("convert", synthetic, ext, "--external-data", "weights.bin")
    run_ok("convert", ext, ext, "--external-data", "weights.bin", "--size-threshold", "2048")
    assert_same_tensors(ext, synthetic)
    m = onnx.load(str(ext), load_external_data=False)
    assert {t.name for t in m.graph.initializer if is_external(t)} == {"medium", "large", "half"}


@needs_corpus
def test_convert_external_corpus(tmp_path):
    src = corpus_model("mnist-external__mnist/mnist.onnx")
    back = tmp_path / "inline.onnx"
    run_ok("convert", src, back, "--inline")
    assert_same_tensors(back, src)
    assert not any(is_external(t) for t in onnx.load(str(back), load_external_data=False).graph.initializer)


@needs_corpus
def test_convert_dangling_external(tmp_path):
    """--inline of a model whose data file is missing fails cleanly."""
    src = corpus_model("image_classifier16")
    out = tmp_path / "out.onnx"
    assert_failure(*run("convert", src, out, "--inline"), "convert", src)
    assert not out.exists()


def test_stdout_write_error(synthetic):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        p = subprocess.run([str(CLI), "print", "--full", str(synthetic)], stdout=full,
                           stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 1
    assert p.stderr.decode().startswith("onnxio: print: ")


# ---- bench --cold ------------------------------------------------------


def bench_cold_lines(path):
    out = run_ok("bench", path, "--cold", "--repeat", "2").decode()
    lines = {line.split(":", 1)[0]: line for line in out.splitlines()}
    return out, lines


def test_bench_cold_external_data(synthetic, tmp_path):
    """--cold drops and reads the files onnx wrote for the model (the model
    and its data file, no other), and loads the payloads onnx counts."""
    m = onnx.load(str(synthetic))
    ext = tmp_path / "ext" / "model.onnx"
    ext.parent.mkdir()
    onnx.save_model(m, str(ext), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=1024)
    written = sorted(p.name for p in ext.parent.iterdir())
    assert written == ["model.onnx", "weights.bin"]
    out, lines = bench_cold_lines(ext)
    listed = lines["cold"].split("dropped:", 1)[1].split()
    assert sorted(Path(p).name for p in listed) == written
    assert all(Path(p).resolve().parent == ext.parent.resolve() for p in listed)
    raw = [t for t in onnx.load(str(ext)).graph.initializer if t.raw_data]
    assert f"in {len(raw)} tensor payloads" in out
    assert lines["read(2) of the same files, cold"].count("2 runs") == 1
    assert "cold" in lines["load (copy, num_threads 0, cold)"]
    assert float(lines["load / read"].split()[-2]) > 0


def test_bench_cold_archive_is_one_file(synthetic, tmp_path):
    archive = tmp_path / "model.onnxz"
    run_ok("convert", synthetic, archive)
    _, lines = bench_cold_lines(archive)
    assert lines["cold"].split("dropped:", 1)[1].split() == [str(archive)]


def test_bench_cold_missing_data_file(synthetic, tmp_path):
    """A data file that is not there is left out of the list, and the load
    itself then fails as any load does."""
    m = onnx.load(str(synthetic))
    ext = tmp_path / "model.onnx"
    onnx.save_model(m, str(ext), save_as_external_data=True, location="gone.bin", size_threshold=1024)
    (tmp_path / "gone.bin").unlink()
    assert_failure(*run("bench", ext, "--cold", "--repeat", "1"), "bench", ext)


def test_bench_warm_reads_every_file_first(synthetic, tmp_path):
    """Without --cold, bench reads the model and its external data files
    into the page cache before timing (a copy load reads cold ranges
    directly and would leave them out of it), and --no-direct-io is taken
    and named in the load's line."""
    from test_cold_reads import _evict, _resident_pages
    m = onnx.load(str(synthetic))
    ext = tmp_path / "model.onnx"
    onnx.save_model(m, str(ext), save_as_external_data=True, location="weights.bin", size_threshold=1024)
    data = tmp_path / "weights.bin"
    _evict(str(data))
    if _resident_pages(str(data)) > 0:
        pytest.skip("the page cache kept the file after posix_fadvise(DONTNEED)")
    out = run_ok("bench", ext, "--repeat", "1").decode()
    pages = (data.stat().st_size + 4095) // 4096
    assert _resident_pages(str(data)) == pages
    assert "load (copy, num_threads 0):" in out
    out = run_ok("bench", ext, "--repeat", "1", "--no-direct-io").decode()
    assert "load (copy, num_threads 0, direct_io off):" in out


def test_text_models_read_like_binary(tmp_path):
    """Every verb that reads a model reads the textproto and JSON files the
    onnx package writes (by extension, and by content under another name),
    their external data from beside them, with the output it gives for the
    binary model."""
    w = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64) / 7, "w")
    b = numpy_helper.from_array(np.arange(5, dtype=np.int64), "b")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])], [w, b])
    binary = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g), str(binary), save_as_external_data=True, location="m.data", size_threshold=1024)
    structure = onnx.load(str(binary), load_external_data=False)
    texts = [tmp_path / "m.textproto", tmp_path / "m.json", tmp_path / "m_textproto.txt", tmp_path / "m_json.txt"]
    for path, fmt in zip(texts, ["textproto", "json", "textproto", "json"]):
        onnx.save(structure, str(path), format=fmt)

    def outputs(path):
        out = {}
        info = run_ok("info", path).decode().splitlines()
        out["info"] = info[1:]  # the first line names the file
        out["print"] = run_ok("print", path)
        out["cat"] = run_ok("cat", path, "w", "--slice", "2:5,-3:") + run_ok("cat", path, "b")
        conv = tmp_path / f"conv_{path.name}.onnx"
        run_ok("convert", path, conv)
        out["convert"] = onnx.load(str(conv)).SerializeToString()
        ext = tmp_path / f"ext_{path.name}.onnx"
        run_ok("extract", path, ext, "--tensors", "w")
        out["extract"] = onnx.load(str(ext)).SerializeToString()
        bench = run_ok("bench", path, "--repeat", "1").decode().splitlines()
        # The payload sizes; the structure's memory (its arena blocks) is
        # sized from the input read, text or binary.
        out["bench"] = bench[0].split(" file, ")[1].split(", ")[0]
        return out

    want = outputs(binary)
    # independent references: the onnx package's values
    assert onnx.load(str(binary)).graph.initializer[0].raw_data == w.raw_data
    assert want["cat"].decode().splitlines()[1:4] == str(numpy_helper.to_array(w)[2:5, -3:]).splitlines()
    for path in texts:
        assert outputs(path) == want, path


ONNXTXT = """<ir_version: 10, opset_import: ["" : 21, "local" : 1], producer_name: "hand">
main (float[N, 4] x, float[4] w = {0.5, -1, 2, 0.25}) => (float[N, 4] y)
   <int64[1] axes = {1}, float[N, 4] t>
{
   # a comment
   [mul] t = Mul (x, w)
   s = ReduceSum <keepdims = 1> (t, axes)
   y = local.Twice (s)
}
<domain: "local", opset_import: ["" : 21]>
Twice (a) => (b) {
   b = Add (a, a)
}
"""


@pytest.mark.filterwarnings("ignore:The onnxtxt format is experimental")
def test_onnxtxt_models_read_as_onnx_parser(tmp_path):
    """ONNX's textual syntax, by extension (.onnxtxt, .onnxtext) or by its
    content (a leading '<', or a graph without the header, after comments):
    `convert` writes the bytes of onnx.parser's model, `info` shows what it
    shows for that model's binary file, `cat` and `extract` read it too and
    external data from beside it; a syntax error names its line and
    column."""
    want = onnx.parser.parse_model(ONNXTXT).SerializeToString()
    binary = tmp_path / "ref.onnx"
    binary.write_bytes(want)
    headerless = ONNXTXT.split(">", 1)[1]
    for name, text in (("m.onnxtxt", ONNXTXT), ("m.onnxtext", ONNXTXT), ("m.txt", ONNXTXT),
                       ("headerless.onnxtxt", headerless), ("headerless.txt", "# a comment\n" + headerless)):
        path = tmp_path / name
        path.write_text(text)
        out = tmp_path / (name + ".onnx")
        run_ok("convert", path, out)
        ref = want if text == ONNXTXT else onnx.parser.parse_model(text).SerializeToString()
        assert out.read_bytes() == ref, name
        if text == ONNXTXT:
            assert run_ok("info", path).decode().splitlines()[1:] == run_ok("info", binary).decode().splitlines()[1:]
        # cat and extract open the file for slices (onnxio_tensor_file_open)
        assert run_ok("cat", path, "w", "--slice", "1:3").decode().splitlines()[1:] == ["[-1.  2.]"], name
        run_ok("extract", path, out, "--tensors", "w")
        assert onnx.load(str(out)).graph.initializer[0].float_data == [0.5, -1, 2, 0.25], name
    # external data beside the text
    (tmp_path / "w.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    ext = tmp_path / "ext.onnxtxt"
    ext.write_text('<ir_version: 10, opset_import: ["" : 21]>\n'
                   'g (float[2, 3] x) => (float[2, 3] y) <float[2, 3] w = ["location": "w.bin"]> { y = Add(x, w) }\n')
    want_w = str(np.arange(6, dtype=np.float32).reshape(2, 3)).splitlines()
    assert run_ok("cat", ext, "w").decode().splitlines()[1:] == want_w
    # errors: onnx.parser's words and position
    bad = tmp_path / "bad.onnxtxt"
    bad.write_text("agraph (float[N] x) => (float[N] y) {\n y = Relu(x\n}\n")
    for args in (["info", bad], ["convert", bad, tmp_path / "bad.onnx"]):
        rc, stdout, err = run(*args)
        assert_failure(rc, stdout, err, args[0], bad)
        assert "ONNX textual syntax, line 3 column 1: Expected character ) not found." in err
    with pytest.raises(onnx.parser.ParseError, match=r"line: 3 column: 1\)"):
        onnx.parser.parse_model(bad.read_text())


def test_info_plurals(tmp_path):
    """Counts of one are singular: "1 tensor in 1 file", not "1 files"."""
    t = TensorProto(name="e", data_type=TensorProto.FLOAT, dims=[2], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="gone.bin")
    path = tmp_path / "one.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], [t])), str(path))
    out = run_ok("info", path).decode()
    assert "external data:    1 tensor in 1 file\n" in out
    assert "  gone.bin: 1 tensor, 8 B (missing)" in out


VERBS_READING_A_MODEL = [("info",), ("print",), ("cat", "w"), ("convert", "OUT"), ("extract", "OUT", "--tensors", "w"),
                         ("bench",), ("check",)]


@pytest.mark.parametrize("verb", VERBS_READING_A_MODEL, ids=lambda v: v[0])
def test_empty_or_truncated_input_is_an_error_in_every_verb(tmp_path, verb):
    """An empty file reads as an empty ModelProto (protobuf's rule, and
    onnx.load's), but no verb has anything to do with one: most often it
    is a failed download or write. Every verb refuses it, saying the file
    is empty, and writes nothing; a truncated model fails every verb
    too (onnx refuses it)."""
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert onnx.load(str(empty)) == onnx.ModelProto()  # what protobuf makes of it
    data = helper.make_model(helper.make_graph([], "g", [], [], initializer=[
        numpy_helper.from_array(np.arange(64, dtype=np.float32), "w")])).SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(Exception):
        onnx.load(str(cut))
    for path in (empty, cut):
        out = tmp_path / "out.onnx"
        args = [str(out) if a == "OUT" else a for a in verb[1:]]
        rc, _out, err = run(verb[0], path, *args)
        assert rc == 1, (verb, path.name, rc, err)
        if path is empty:
            assert "the file is empty (0 bytes)" in err, (verb, err)
        assert not out.exists()


def test_print_of_another_message_says_pass_type(tmp_path):
    """A TensorProto file given to `print` without --type is read as a
    ModelProto: when that fails or finds fields a ModelProto lacks, the
    command says to pass --type; with it, the tensor prints as onnx reads it."""
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    path = tmp_path / "t.pb"
    path.write_bytes(t.SerializeToString())
    rc, _out, err = run("print", path)
    assert "pass --type" in err, err
    out = run_ok("print", "--type", "TensorProto", path).decode()
    assert 'name: "w"' in out and "dims: 2" in out
    # A ModelProto file prints without the note.
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [])), str(model))
    rc, _out, err = run("print", model)
    assert rc == 0 and err == ""


def test_truncated_file_says_truncated(tmp_path):
    """A model cut short: the error says "truncated" and where."""
    data = helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[:-3])
    with pytest.raises(Exception):
        onnx.load(str(path))  # the reference refuses it too
    rc, _out, err = run("info", path)
    assert rc == 1 and "is truncated" in err and "at byte" in err, err
