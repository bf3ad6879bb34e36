"""Real onnx messages wherever onnxio takes a message:
constructors, CopyFrom, MergeFrom, append, extend, insert, helper
functions, save, to_array. Each result is compared with onnx doing the same
with its own messages (the serialized bytes), and the type errors for
messages of the wrong class are protobuf's."""
import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
import onnx.parser
import pytest

import onnxio
import onnxio.helper as xh
import onnxio.numpy_helper as xnh


def ser(m):
    return m.SerializeToString()


@pytest.fixture
def parts():
    g = onnx.parser.parse_graph("g (float[2] x) => (float[2] y) { t = Relu(x)\n y = Neg(t) }")
    w = onh.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    return g, w


def test_constructors_take_onnx_messages(parts):
    g, w = parts
    ours = onnxio.GraphProto(name="g", node=list(g.node), initializer=[w], input=list(g.input))
    theirs = onnx.GraphProto(name="g", node=list(g.node), initializer=[w], input=list(g.input))
    assert ser(ours) == ser(theirs)
    m = onnxio.ModelProto(graph=g, ir_version=8)
    assert ser(m) == ser(onnx.ModelProto(graph=g, ir_version=8))
    assert ser(onnxio.AttributeProto(name="t", t=w)) == ser(onnx.AttributeProto(name="t", t=w))


def test_copy_merge_append_extend_insert(parts):
    g, w = parts
    ours, theirs = onnxio.GraphProto(), onnx.GraphProto()
    for target in (ours, theirs):
        target.CopyFrom(g)
        target.MergeFrom(g)
        target.node.append(g.node[0])
        target.node.extend([g.node[1], g.node[0]])
        target.node.insert(1, g.node[1])
        target.initializer.append(w)
    assert type(ours.node[0]) is onnxio.NodeProto
    assert ser(ours) == ser(theirs)
    # wrong classes: protobuf's TypeErrors
    with pytest.raises(TypeError, match="same class"):
        ours.node.append(w)
    with pytest.raises(TypeError, match="same class"):
        ours.CopyFrom(w)
    with pytest.raises(TypeError):
        onnxio.GraphProto(node=[w])
    # the copy is a copy: changing the onnx message later changes nothing
    n = oh.make_node("Abs", ["a"], ["b"])
    ours.node.append(n)
    n.op_type = "Changed"
    assert ours.node[-1].op_type == "Abs"


def test_helpers_take_onnx_messages(parts):
    g, w = parts
    ours = xh.make_model(xh.make_graph(list(g.node), "h", list(g.input), list(g.output), [w]), producer_name="p")
    theirs = oh.make_model(oh.make_graph(list(g.node), "h", list(g.input), list(g.output), [w]), producer_name="p")
    assert type(ours) is onnxio.ModelProto and ser(ours) == ser(theirs)
    f = xh.make_function("d", "f", ["x"], ["y"], list(g.node), [oh.make_opsetid("", 15)])
    assert ser(f) == ser(oh.make_function("d", "f", ["x"], ["y"], list(g.node), [oh.make_opsetid("", 15)]))
    assert np.array_equal(xnh.to_array(w), onh.to_array(w))


def test_save_takes_onnx_messages(tmp_path, parts):
    g, w = parts
    m = oh.make_model(g)
    onnxio.save(m, tmp_path / "m.onnx")
    assert (tmp_path / "m.onnx").read_bytes() == ser(m)
    onnxio.save_tensor(w, tmp_path / "w.pb")
    assert (tmp_path / "w.pb").read_bytes() == ser(w)
    with pytest.raises(TypeError):
        onnxio.save(w, tmp_path / "x.onnx")  # a TensorProto is not a model


def test_from_onnx_to_onnx_every_class():
    for full, cls in onnxio._onnxio._messages.items():
        ours = cls()
        theirs = onnxio.to_onnx(ours)
        assert theirs.DESCRIPTOR.full_name == full and type(theirs).__module__.startswith("onnx")
        back = onnxio.from_onnx(theirs)
        assert type(back) is cls and ser(back) == ser(theirs)


def test_errors_caught_as_onnx_users_catch_them(tmp_path):
    import google.protobuf.message

    with pytest.raises(google.protobuf.message.DecodeError):
        onnxio.load_model_from_string(b"\xff\xff")
    with pytest.raises(google.protobuf.message.DecodeError):  # onnx's own class raises the same
        onnx.load_model_from_string(b"\xff\xff")
    # refused external data: onnx raises onnx.checker.ValidationError
    t = onh.from_array(np.zeros(4, np.float32), "w")
    t.ClearField("raw_data")
    t.data_location = onnx.TensorProto.EXTERNAL
    t.external_data.add(key="location", value="/etc/passwd")
    m = oh.make_model(oh.make_graph([], "g", [], [], [t]))
    onnx.save(m, str(tmp_path / "m.onnx"))
    with pytest.raises(onnx.checker.ValidationError):
        onnx.load(str(tmp_path / "m.onnx"))
    with pytest.raises(onnx.checker.ValidationError):
        onnxio.load(tmp_path / "m.onnx")
    with pytest.raises(ValueError):  # and still a ValueError, as before
        onnxio.load(tmp_path / "m.onnx")


def test_validation_error_when_onnx_comes_later(tmp_path):
    # onnx imported after onnxio: refused external data is caught as
    # onnx.checker.ValidationError and as onnxio.ExternalDataError, and no
    # exception class of onnxio changed its bases.
    import subprocess
    import sys

    t = onh.from_array(np.zeros(4, np.float32), "w")
    t.ClearField("raw_data")
    t.data_location = onnx.TensorProto.EXTERNAL
    t.external_data.add(key="location", value="/etc/passwd")
    onnx.save(oh.make_model(oh.make_graph([], "g", [], [], [t])), str(tmp_path / "m.onnx"))
    code = (
        "import onnxio, sys\n"
        "assert 'onnx' not in sys.modules\n"
        "before = {c: c.__bases__ for c in (onnxio.DecodeError, onnxio.ExternalDataError, onnxio.ArchiveError)}\n"
        "import onnx.checker\n"
        "try:\n"
        f"    onnxio.load({str(tmp_path / 'm.onnx')!r})\n"
        "except onnx.checker.ValidationError as e:\n"
        "    assert isinstance(e, onnxio.ExternalDataError) and isinstance(e, ValueError), type(e).__mro__\n"
        "assert before == {c: c.__bases__ for c in before}\n"
        "assert onnxio.ExternalDataError.__bases__ == (ValueError,)\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "ok", r.stderr


def test_decode_error_bases_fixed_at_import():
    import google.protobuf.message

    assert onnxio.DecodeError.__bases__ == (ValueError, google.protobuf.message.DecodeError)
    assert issubclass(onnxio.ArchiveError, google.protobuf.message.DecodeError)


def test_repr_as_onnx():
    import glob

    from conftest import needs

    root = needs("libonnx-testdata")
    paths = sorted(glob.glob(str(root / "node" / "*" / "model.onnx")))[:200]
    assert paths, f"no node/*/model.onnx under {root}"
    text = ('<ir_version: 8, opset_import: ["" : 15, "local" : 1], producer_name: "p", domain: "d">\n'
            'g (float[2] x) => (float[2] y) { y = local.F <a = 1> (x) }\n'
            '<domain: "local", opset_import: ["" : 15]> F <a> (x) => (y) { y = Relu(x) }')
    models = [onnx.load(p) for p in paths] + [onnx.parser.parse_model(text), onnx.ModelProto()]
    for m in models:
        ours = onnxio.from_onnx(m)
        assert repr(ours) == repr(m)
        assert repr(ours.graph) == repr(m.graph)
        for f_ours, f_theirs in zip(ours.functions, m.functions):
            assert repr(f_ours) == repr(f_theirs)
    assert repr(onnxio.TensorProto(name="x")) == repr(onnx.TensorProto(name="x"))  # the others: text format


def test_protobuf_text_and_json_modules_take_onnxio_messages():
    """google.protobuf's text_format and json_format read onnxio's
    descriptors (test_reflection.py covers every message type)."""
    from google.protobuf import json_format, text_format

    m = onnxio.ModelProto(ir_version=3)
    ref = onnx.ModelProto(ir_version=3)
    assert text_format.MessageToString(m) == text_format.MessageToString(ref)
    assert json_format.MessageToJson(m) == json_format.MessageToJson(ref)
    assert text_format.Parse("ir_version: 3", onnxio.ModelProto()) == m
    assert m.DESCRIPTOR.file.name == "onnx/onnx-ml.proto"
    assert m.DESCRIPTOR.full_name == "onnx.ModelProto"
    # what protobuf's descriptors have and onnxio's do not: an AttributeError
    assert not hasattr(m.DESCRIPTOR, "_GetFeatures") and getattr(m.DESCRIPTOR, "nope", None) is None


def test_from_onnx_large_model_borrows_protobufs_bytes():
    """From 64 MiB on, from_onnx keeps the payloads in the bytes protobuf
    serialized to instead of copying them: the message is exact, and its
    payloads stay valid after the onnx message and every other reference
    are gone."""
    import gc

    w = np.arange(18 * 2**20, dtype=np.float32)  # 72 MiB
    ref = oh.make_model(oh.make_graph([], "g", [], [], [onh.from_array(w, "W")]))
    want = ref.SerializeToString()
    m = onnxio.from_onnx(ref)
    del ref
    gc.collect()
    assert m.SerializeToString() == want
    got = xnh.to_array(m.graph.initializer[0])
    assert got.shape == w.shape and np.array_equal(got, w)


def test_the_package_own_refusals_are_validation_errors_too(tmp_path):
    # save_external_data refuses an offset inside the existing data file in
    # Python; with onnx loaded it is caught as onnx raises it.
    t = xnh.from_array(np.arange(4, dtype=np.float32), "w")
    (tmp_path / "d.bin").write_bytes(b"0123456789")
    onnxio.external_data_helper.set_external_data(t, "d.bin", offset=2)
    with pytest.raises(onnx.checker.ValidationError, match="must be between"):
        onnxio.external_data_helper.save_external_data(t, str(tmp_path))
    with pytest.raises(onnxio.ExternalDataError):
        onnxio.external_data_helper.save_external_data(t, str(tmp_path))
