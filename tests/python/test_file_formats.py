"""What a file load reads a file as, against independent references: the
library's onnxio_load_file (through the extension's _load_file, which calls
it, and through the command, which adds nothing but its progress display)
reads protobuf text format, JSON and ONNX's textual syntax to the bytes
that onnx's own parsers give (google.protobuf.text_format,
google.protobuf.json_format, onnx.parser.parse_model), by extension and by
content under other names; a binary model whose first bytes are printable
stays binary; and the Python registry's extensions are onnx's, read from
the library's table."""
import numpy as np
import onnx
import onnx.parser
import onnx.printer
import pytest
from google.protobuf import json_format, text_format
from onnx import TensorProto, helper, numpy_helper
from onnx import serialization as onnx_serialization

import onnxio
from onnxio import _onnxio
from onnxio import serialization as onnxio_serialization
from clitool import run, run_ok


def reference_model(s=b"\x00\xff bytes"):
    """A model with strings, enums, floats, int64s, bytes, subgraphs,
    attributes of each kind and metadata: what a text reader can get
    wrong (`s`: a bytes attribute; onnx.printer takes UTF-8 only)."""
    w = numpy_helper.from_array(np.array([[0.5, -1e-30], [3.25, float("inf")]], np.float32), "w")
    i64 = numpy_helper.from_array(np.array([-(2**62), 7], np.int64), "i64")
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 2])])
    nodes = [
        helper.make_node("Add", ["x", "w"], ["s"], name="add\u00e9"),
        helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=then),
        helper.make_node("Custom", ["s"], ["z"], domain="my.domain", f=0.1, i=-3, s=s,
                         floats=[1.5, -2.0], ints=[1, 2, 3], strings=[b"a", b"b"]),
    ]
    g = helper.make_graph(nodes, "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2]),
                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                          [w, i64], doc_string="a \"quoted\"\nline")
    m = helper.make_model(g, producer_name="test", opset_imports=[helper.make_opsetid("", 21),
                                                                   helper.make_opsetid("my.domain", 1)])
    helper.set_model_props(m, {"key": "value \u2713"})
    return m


def library_load(path, cls=onnxio.ModelProto):
    """The message onnxio_load_file reads from `path`, serialized."""
    return _onnxio._load_file(str(path), cls, load_external_data=False).SerializeToString()


@pytest.mark.parametrize("name", ["m.txtpb", "m.textproto", "m.prototxt", "m.pbtxt", "m.model", "textproto.onnx"])
def test_textproto_reads_as_text_format(tmp_path, name):
    model = reference_model()
    text = text_format.MessageToString(model)
    want = text_format.Parse(text, onnx.ModelProto()).SerializeToString()
    path = tmp_path / name
    path.write_text(text)
    assert library_load(path) == want
    out = tmp_path / "out.onnx"
    run_ok("convert", path, out)
    assert out.read_bytes() == want


@pytest.mark.parametrize("name", ["m.json", "m.onnxjson", "json.onnx", "m"])
def test_json_reads_as_json_format(tmp_path, name):
    model = reference_model()
    text = json_format.MessageToJson(model)
    want = json_format.Parse(text, onnx.ModelProto()).SerializeToString()
    path = tmp_path / name
    path.write_text(text)
    assert library_load(path) == want
    out = tmp_path / "out.onnx"
    run_ok("convert", path, out)
    assert out.read_bytes() == want


@pytest.mark.filterwarnings("ignore:The onnxtxt format is experimental")
@pytest.mark.parametrize("name", ["m.onnxtxt", "m.onnxtext", "onnxtxt.onnx", "m.txt"])
def test_onnx_text_reads_as_onnx_parser(tmp_path, name):
    text = onnx.printer.to_text(reference_model(s=b"utf-8 bytes \xc3\xa9"))
    want = onnx.parser.parse_model(text).SerializeToString()
    path = tmp_path / name
    path.write_text(text)
    assert library_load(path) == want
    out = tmp_path / "out.onnx"
    run_ok("convert", path, out)
    assert out.read_bytes() == want


def test_other_messages_in_text(tmp_path):
    """onnxio_load_file reads any message in text: a TensorProto as
    text_format reads it, through `print --type` too."""
    t = numpy_helper.from_array(np.arange(6, dtype=np.int32).reshape(2, 3), "t")
    path = tmp_path / "t.txtpb"
    path.write_text(text_format.MessageToString(t))
    want = text_format.Parse(path.read_text(), onnx.TensorProto()).SerializeToString()
    assert library_load(path, onnxio.TensorProto) == want
    printed = run_ok("print", "--type", "TensorProto", "--format", "textproto", "--full", path).decode()
    assert text_format.Parse(printed, onnx.TensorProto()).SerializeToString() == want


def test_binary_with_printable_start_stays_binary(tmp_path):
    """A binary model whose first 64 bytes are printable, which the
    content rule calls text: under a binary or an unknown name it is read
    as binary protobuf, as onnx reads it; named as text, it is text (and
    fails as text)."""
    m = onnx.ModelProto()
    op = m.opset_import.add()
    op.domain, op.version = "a" * 61, 1
    m.opset_import.add(domain="", version=17)
    data = m.SerializeToString()
    assert all(32 <= b < 127 or b in b"\t\n\r" for b in data[:64])
    for name in ("m.onnx", "m.pb", "m"):
        path = tmp_path / name
        path.write_bytes(data)
        assert library_load(path) == data == onnx.load(str(path)).SerializeToString()
        out = tmp_path / "out.onnx"
        run_ok("convert", path, out)
        assert out.read_bytes() == data
    named = tmp_path / "m.txtpb"
    named.write_bytes(data)
    # "BA" then "=": ONNX's textual syntax by its content
    with pytest.raises(onnxio.DecodeError, match=r"m\.txtpb: ONNX textual syntax, line 2 column 2: "):
        _onnxio._load_file(str(named), onnxio.ModelProto)
    rc, _, err = run("info", named)
    assert rc == 1 and "ONNX textual syntax, line 2 column 2: " in err, err


def test_binary_content_under_a_text_name_is_binary(tmp_path):
    """Content first: a binary model named .json is binary protobuf."""
    data = reference_model().SerializeToString()
    path = tmp_path / "binary.json"
    path.write_bytes(data)
    assert library_load(path) == data
    out = tmp_path / "out.onnx"
    run_ok("convert", path, out)
    assert out.read_bytes() == data


def test_registry_extensions_are_onnx_from_the_library():
    """onnxio.serialization's extensions are onnx's, and come from the
    library's table (_onnxio._extensions, onnxio_file_extension_at)."""
    table = _onnxio._extensions
    assert (".onnxz", "onnxz") in table
    for fmt in ("protobuf", "textproto", "json", "onnxtxt"):
        mine = onnxio_serialization.registry.get(fmt).file_extensions
        assert isinstance(mine, frozenset)
        assert mine == set(onnx_serialization.registry.get(fmt).file_extensions), fmt
        assert mine == {ext for ext, name in table if name == fmt}, fmt
    for ext in {ext for ext, _ in table} | {".JSON", ".txt", "", "json", ".onnxz"}:
        assert (onnxio_serialization.registry.get_format_from_file_extension(ext)
                == onnx_serialization.registry.get_format_from_file_extension(ext)), ext
