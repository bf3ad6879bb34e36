"""onnxio.external_data_helper against onnx.external_data_helper: the same
calls on the same model give the same model bytes and the same data files,
byte for byte (one file, one file per tensor, attribute tensors, subgraphs,
functions), loading external data back gives what onnx gives, and the same
locations are refused (absolute, "..", symbolic links, hard links, ranges
past the end of the file).

Where the library's policy differs from onnx's on purpose (one policy for
onnxio.load and these helpers: "a..b" is a name, "sub/../x" is refused,
offsets are digits only so "+0" is refused, symlinks inside the base
directory are followed), test_reliability.py asserts the library's
side and shows onnx's.
"""

import os
import re
import warnings

import numpy as np
import onnx
import onnx.external_data_helper as oed
import onnx.helper as oh
import onnx.numpy_helper as onh
import pytest

import onnxio
import onnxio.external_data_helper as xed
import onnxio.numpy_helper as xnh

OT = onnx.TensorProto


def arr(n, dtype=np.float32, seed=0):
    return (np.random.default_rng(seed).standard_normal(n) * 100).astype(dtype)


def model_bytes():
    """A model with tensors everywhere external data can be: graph
    initializers (big and small), an attribute tensor, a subgraph initializer,
    a list-of-tensors attribute, and a function's attribute tensor."""
    then_g = oh.make_graph([oh.make_node("Identity", ["sub_w"], ["t"])], "then", [],
                           [oh.make_tensor_value_info("t", OT.FLOAT, [700])],
                           [onh.from_array(arr(700, seed=1), "sub_w")])
    else_g = oh.make_graph([oh.make_node("Constant", [], ["e"], value=onh.from_array(arr(600, seed=2), "else_c"))],
                           "else", [], [oh.make_tensor_value_info("e", OT.FLOAT, [600])])
    nodes = [
        oh.make_node("Constant", [], ["c"], value=onh.from_array(arr(500, seed=3), "const_attr")),
        oh.make_node("If", ["cond"], ["z"], then_branch=then_g, else_branch=else_g),
        oh.make_node("Custom", ["w"], ["q"], domain="local",
                     tlist=[onh.from_array(arr(400, seed=4), "l0"), onh.from_array(arr(3, seed=5), "l1")]),
    ]
    inits = [
        onh.from_array(arr(1024, seed=6), "w"),
        onh.from_array(arr(4, seed=7), "small"),
        onh.from_array(np.arange(300, dtype=np.int64), "idx"),
        oh.make_tensor("fields", OT.FLOAT, [300], arr(300, seed=8)),  # float_data, not raw: never external
        onh.from_array(arr(247, seed=9), "edge"),  # 988 bytes + 33 = 1021 < 1024
        onh.from_array(arr(248, seed=10), "edge2"),  # 992 + 33 = 1025 >= 1024
    ]
    g = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("cond", OT.BOOL, [])],
                      [oh.make_tensor_value_info("z", OT.FLOAT, ["N"])], inits)
    fn = oh.make_function("local", "Custom", ["x"], ["y"],
                          [oh.make_node("Constant", [], ["y"], value=onh.from_array(arr(800, seed=11), "fn_c"))],
                          [oh.make_opsetid("", 18)])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 18), oh.make_opsetid("local", 1)], functions=[fn])
    return m.SerializeToString()


def both_models(data=None):
    data = data or model_bytes()
    return onnxio.load_model_from_string(data), onnx.load_model_from_string(data)


def files_of(d):
    return {n: (d / n).read_bytes() for n in sorted(os.listdir(d))}


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    x, o = tmp_path / "x", tmp_path / "o"
    x.mkdir()
    o.mkdir()
    # convert_model_to_external_data checks `location` against the current
    # directory (as onnx does): run where no such file exists.
    monkeypatch.chdir(tmp_path)
    return x, o


@pytest.mark.parametrize("convert_attribute", [False, True])
@pytest.mark.parametrize("size_threshold", [1024, 0, 3000])
def test_one_file_same_bytes(dirs, convert_attribute, size_threshold):
    xd, od = dirs
    xm, om = both_models()
    kw = dict(all_tensors_to_one_file=True, location="weights.bin", size_threshold=size_threshold,
              convert_attribute=convert_attribute)
    xed.convert_model_to_external_data(xm, **kw)
    oed.convert_model_to_external_data(om, **kw)
    assert xm.SerializeToString() == om.SerializeToString()  # marked, payloads still inline
    xed.write_external_data_tensors(xm, str(xd))
    oed.write_external_data_tensors(om, str(od))
    assert xm.SerializeToString() == om.SerializeToString()
    assert files_of(xd) == files_of(od)
    assert list(files_of(xd)) == ["weights.bin"]


@pytest.mark.parametrize("convert_attribute", [False, True])
def test_file_per_tensor_same_bytes(dirs, convert_attribute):
    xd, od = dirs
    xm, om = both_models()
    xed.convert_model_to_external_data(xm, all_tensors_to_one_file=False, convert_attribute=convert_attribute)
    oed.convert_model_to_external_data(om, all_tensors_to_one_file=False, convert_attribute=convert_attribute)
    assert xm.SerializeToString() == om.SerializeToString()
    xed.write_external_data_tensors(xm, str(xd))
    oed.write_external_data_tensors(om, str(od))
    assert xm.SerializeToString() == om.SerializeToString()
    assert files_of(xd) == files_of(od)
    assert "w" in files_of(xd) and "small" not in files_of(xd)


def test_generated_names(dirs):
    """No location: a "<uuid>.data" file; a tensor name that is not a file
    name: a uuid. The names differ from onnx's, the contents do not."""
    xd, od = dirs
    data = model_bytes()
    xm, om = both_models(data)
    xed.convert_model_to_external_data(xm)
    oed.convert_model_to_external_data(om)
    xed.write_external_data_tensors(xm, str(xd))
    oed.write_external_data_tensors(om, str(od))
    (xname, xcontent), = files_of(xd).items()
    (oname, ocontent), = files_of(od).items()
    assert re.fullmatch(r"[0-9a-f-]{36}\.data", xname)
    assert xcontent == ocontent
    assert xm.SerializeToString() == om.SerializeToString().replace(oname.encode(), xname.encode())

    m = onnx.load_model_from_string(data)
    m.graph.initializer[0].name = "a/b"
    xm, om = both_models(m.SerializeToString())
    xed.convert_model_to_external_data(xm, all_tensors_to_one_file=False)
    loc = [e.value for e in xm.graph.initializer[0].external_data if e.key == "location"]
    assert re.fullmatch(r"[0-9a-f-]{36}", loc[0])


def test_convert_errors(dirs):
    xm, om = both_models()
    with pytest.raises(ValueError):
        xed.convert_model_to_external_data(xm, location=os.path.abspath("abs.bin"))
    open("exists.bin", "wb").close()
    with pytest.raises(FileExistsError):
        oed.convert_model_to_external_data(om, location="exists.bin")
    with pytest.raises(FileExistsError):
        xed.convert_model_to_external_data(xm, location="exists.bin")
    assert xm.SerializeToString() == om.SerializeToString()  # nothing changed on either side


def onnx_saved_external(tmp_path, **kw):
    """A model saved by onnx with external data; returns (dir, path)."""
    d = tmp_path / "saved"
    d.mkdir()
    path = d / "m.onnx"
    onnx.save_model(onnx.load_model_from_string(model_bytes()), str(path), save_as_external_data=True, **kw)
    return d, path


@pytest.mark.parametrize("kw", [dict(location="m.data", convert_attribute=True),
                                dict(all_tensors_to_one_file=False, size_threshold=0)])
def test_load_external_data_for_model(tmp_path, monkeypatch, kw):
    monkeypatch.chdir(tmp_path)
    d, path = onnx_saved_external(tmp_path, **kw)
    unloaded = onnx.load(str(path), load_external_data=False)
    om = onnx.load(str(path), load_external_data=False)
    xm = onnxio.load_model_from_string(unloaded.SerializeToString())
    assert any(xed.uses_external_data(t) for t in xed._get_all_tensors(xm))
    xed.load_external_data_for_model(xm, str(d))
    oed.load_external_data_for_model(om, str(d))
    assert xm.SerializeToString() == om.SerializeToString()
    assert not any(xed.uses_external_data(t) for t in xed._get_all_tensors(xm))
    assert xm.SerializeToString() == onnx.load(str(path)).SerializeToString()


def test_to_array_reads_external_without_changing_tensor(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d, path = onnx_saved_external(tmp_path, location="m.data")
    om = onnx.load(str(path), load_external_data=False)
    xm = onnxio.load_model_from_string(om.SerializeToString())
    for xt, ot in zip(xm.graph.initializer, om.graph.initializer):
        a, b = xnh.to_array(xt, base_dir=str(d)), onh.to_array(ot, base_dir=str(d))
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert xm.SerializeToString() == om.SerializeToString()


def test_convert_model_from_external_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d, path = onnx_saved_external(tmp_path, location="m.data")
    # loaded with its data, still marked external: convert back to embedded
    om = onnx.load(str(path), load_external_data=False)
    oed.load_external_data_for_model(om, str(d))
    for t in oed._get_initializer_tensors(om):
        if t.HasField("raw_data") and len(t.raw_data) > 1000:
            oed.set_external_data(t, "m.data")
    xm = onnxio.load_model_from_string(om.SerializeToString())
    xed.convert_model_from_external_data(xm)
    oed.convert_model_from_external_data(om)
    assert xm.SerializeToString() == om.SerializeToString()
    assert not any(xed.uses_external_data(t) for t in xed._get_all_tensors(xm))
    # still external, payload not loaded: both refuse
    om = onnx.load(str(path), load_external_data=False)
    xm = onnxio.load_model_from_string(om.SerializeToString())
    with pytest.raises(ValueError):
        oed.convert_model_from_external_data(om)
    with pytest.raises(ValueError):
        xed.convert_model_from_external_data(xm)


def xo_tensor(n=10):
    a = arr(n)
    return xnh.from_array(a, "t"), onh.from_array(a, "t")


def test_set_external_data_and_fields():
    xt, ot = xo_tensor()
    for kw in ({}, dict(offset=4096, length=40), dict(offset=0, length=0, checksum="abc", basepath="base")):
        xed.set_external_data(xt, "f.bin", **kw)
        oed.set_external_data(ot, "f.bin", **kw)
        assert xt.SerializeToString() == ot.SerializeToString()
        assert xed.uses_external_data(xt) and oed.uses_external_data(ot)
    xed.remove_external_data_field(xt, "checksum")
    oed.remove_external_data_field(ot, "checksum")
    assert xt.SerializeToString() == ot.SerializeToString()
    info_x, info_o = xed.ExternalDataInfo(xt), oed.ExternalDataInfo(ot)
    assert vars(info_x) == vars(info_o) == {"location": "f.bin", "offset": 0, "length": 0, "checksum": None,
                                            "basepath": "base"}
    empty_x, empty_o = onnxio.TensorProto(name="e"), onnx.TensorProto(name="e")
    assert not xed.uses_external_data(empty_x)
    with pytest.raises(ValueError):
        oed.set_external_data(empty_o, "f.bin")
    with pytest.raises(ValueError):
        xed.set_external_data(empty_x, "f.bin")
    # data_location set explicitly to DEFAULT is not external either
    xt.data_location = onnxio.TensorProto.DEFAULT
    assert not xed.uses_external_data(xt)


def test_external_data_info_checks():
    xt, _ = xo_tensor()
    xed.set_external_data(xt, "f.bin")
    e = xt.external_data.add()
    e.key, e.value = "evil", "x"
    with pytest.warns(UserWarning, match="evil"):
        info = xed.ExternalDataInfo(xt)
    assert not hasattr(info, "evil")
    for key, value, exc in (("offset", "-1", ValueError), ("length", "-5", ValueError), ("offset", "x", ValueError)):
        xt2, ot2 = xo_tensor()
        xed.set_external_data(xt2, "f.bin")
        oed.set_external_data(ot2, "f.bin")
        for t in (xt2, ot2):
            e = t.external_data.add()
            e.key, e.value = key, value
        with pytest.raises(exc):
            oed.ExternalDataInfo(ot2)
        with pytest.raises(exc):
            xed.ExternalDataInfo(xt2)


def test_save_external_data_offsets(tmp_path):
    xd, od = tmp_path / "x", tmp_path / "o"
    xd.mkdir()
    od.mkdir()
    for d in (xd, od):
        (d / "f.bin").write_bytes(b"\x01" * 100)
    xt, ot = xo_tensor(16)
    xed.set_external_data(xt, "f.bin", offset=128)
    oed.set_external_data(ot, "f.bin", offset=128)
    xed.save_external_data(xt, str(xd))
    oed.save_external_data(ot, str(od))
    assert xt.SerializeToString() == ot.SerializeToString()
    assert files_of(xd) == files_of(od)
    assert len(files_of(xd)["f.bin"]) == 128 + 64
    # an offset inside the existing data, or too far past its end, is refused
    for bad in (10, 192 + 64 * 1024 + 1):
        xt, ot = xo_tensor(16)
        xed.set_external_data(xt, "f.bin", offset=bad)
        oed.set_external_data(ot, "f.bin", offset=bad)
        with pytest.raises(onnx.checker.ValidationError):
            oed.save_external_data(ot, str(od))
        with pytest.raises(xed.ExternalDataError):
            xed.save_external_data(xt, str(xd))
    assert files_of(xd) == files_of(od)


def external_tensor(location, offset=None, length=None):
    t = onnxio.TensorProto(name="t", data_type=onnxio.TensorProto.FLOAT, dims=[4])
    t.data_location = onnxio.TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return t, onnx.TensorProto.FromString(t.SerializeToString())


def both_refuse(xt, ot, base, onnx_exc=onnx.checker.ValidationError, onnxio_exc=None):
    with pytest.raises(onnx_exc):
        oed.load_external_data_for_tensor(ot, str(base))
    with pytest.raises(onnxio_exc or xed.ExternalDataError):
        xed.load_external_data_for_tensor(xt, str(base))
    assert xed.uses_external_data(xt)  # a refused tensor is left as it was


def test_refused_locations(tmp_path):
    base = tmp_path / "model"
    base.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"S" * 16)
    (base / "ok.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    both_refuse(*external_tensor(str(secret)), base)
    both_refuse(*external_tensor("../secret.bin"), base)
    both_refuse(*external_tensor("sub/../../secret.bin"), base)
    both_refuse(*external_tensor(""), base)
    os.symlink(secret, base / "link.bin")
    both_refuse(*external_tensor("link.bin"), base)
    os.symlink(tmp_path, base / "dirlink")
    both_refuse(*external_tensor("dirlink/secret.bin"), base)
    os.link(secret, base / "hard.bin")
    both_refuse(*external_tensor("hard.bin"), base)
    # ranges past the end of the file: ValueError on both sides, nothing read
    both_refuse(*external_tensor("ok.bin", offset=17), base, ValueError, ValueError)
    both_refuse(*external_tensor("ok.bin", offset=8, length=9), base, ValueError, ValueError)
    # and the one good location loads
    xt, ot = external_tensor("ok.bin", offset=0, length=16)
    xed.load_external_data_for_tensor(xt, str(base))
    oed.load_external_data_for_tensor(ot, str(base))
    assert xt.SerializeToString() == ot.SerializeToString()
    assert xnh.to_array(xt).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_refused_write_locations(tmp_path):
    base = tmp_path / "out"
    base.mkdir()
    for loc in (str(tmp_path / "abs.bin"), "../up.bin", "."):
        xt, ot = xo_tensor()
        xed.set_external_data(xt, loc)
        oed.set_external_data(ot, loc)
        with pytest.raises(onnx.checker.ValidationError):
            oed.save_external_data(ot, str(base))
        with pytest.raises(xed.ExternalDataError):
            xed.save_external_data(xt, str(base))
    assert not (tmp_path / "abs.bin").exists() and not (tmp_path / "up.bin").exists()
    os.symlink(tmp_path, base / "dirlink")
    xt, _ = xo_tensor()
    xed.set_external_data(xt, "dirlink/esc.bin")
    with pytest.raises(xed.ExternalDataError):
        xed.save_external_data(xt, str(base))
    assert not (tmp_path / "esc.bin").exists()


def test_tensor_iterators_match_onnx():
    xm, om = both_models()
    for name in ("_get_all_tensors", "_get_initializer_tensors", "_get_attribute_tensors"):
        assert [t.name for t in getattr(xed, name)(xm)] == [t.name for t in getattr(oed, name)(om)]
    assert [t.name for t in xed.get_all_tensors(xm)] == [t.name for t in oed._get_all_tensors(om)]


def test_save_model_writes_tensors_marked_in_python(dirs):
    """onnxio.save_model writes tensors that convert_model_to_external_data
    marked (through write_external_data_tensors), as onnx.save_model does."""
    xd, od = dirs
    xm, om = both_models()
    xed.convert_model_to_external_data(xm, location="w.data", convert_attribute=True)
    oed.convert_model_to_external_data(om, location="w.data", convert_attribute=True)
    onnxio.save_model(xm, str(xd / "m.onnx"))
    onnx.save_model(om, str(od / "m.onnx"))
    assert files_of(xd) == files_of(od)
    reloaded = onnx.load(str(xd / "m.onnx"))
    assert reloaded.SerializeToString() == onnx.load(str(od / "m.onnx")).SerializeToString()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        onnx.checker.check_model(str(xd / "m.onnx"))
