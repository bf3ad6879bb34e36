"""Tests of `onnxio check` (the library's onnxio_check_model): no false alarm
on the real models onnx.checker accepts; each structural error that
onnx.checker rejects, built with onnx.helper, found and placed; every
problem of a model listed, in text and in JSON; the exit statuses.

onnx.checker.check_model is the independent reference: each broken model
is asserted to be rejected by it before `onnxio check` is run on it. The
errors that onnxio finds and onnx does not (a raw_data longer than its
shape, a typed field with more values than it, a domain imported twice,
an external data range past its file, a checksum key that is not the
file's SHA-1) have tests of their own that say so.
"""
import hashlib
import json

import numpy as np
import onnx
import onnx.checker
import pytest
from onnx import TensorProto, helper, numpy_helper

from clitool import run
from conftest import needs

T = TensorProto


def check(path, *args):
    """(exit status, stdout text, stderr text) of `onnxio check PATH`."""
    rc, out, err = run("check", *args, path)
    return rc, out.decode("utf-8"), err


def check_json(path):
    rc, out, err = run("check", "--json", path)
    assert rc in (0, 1), err
    assert err == ""
    report = json.loads(out)
    assert report["problem_count"] == len(report["problems"])
    assert report["ok"] == (rc == 0)
    return rc, report


def model(nodes, inits=(), inputs=None, outputs=None, opsets=None, ir=8, functions=()):
    inputs = [helper.make_tensor_value_info("x", T.FLOAT, [2])] if inputs is None else inputs
    outputs = [helper.make_tensor_value_info("y", T.FLOAT, [2])] if outputs is None else outputs
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=opsets or [helper.make_opsetid("", 17)], functions=list(functions))
    m.ir_version = ir
    return m


def weight(name="w", values=(1.0, 2.0)):
    return helper.make_tensor(name, T.FLOAT, [len(values)], list(values))


def relu(i, o, **kw):
    return helper.make_node("Relu", [i], [o], **kw)


def add_w(**kw):
    return helper.make_node("Add", ["x", "w"], ["y"], **kw)


def rejected_by_onnx(m):
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)


def save(tmp_path, m, name="m.onnx"):
    p = tmp_path / name
    p.write_bytes(m.SerializeToString())
    return p


def problems_of(tmp_path, m):
    rc, report = check_json(save(tmp_path, m))
    assert rc == 1
    return report["problems"]


def has(problems, rule, **where):
    """Whether one problem has the rule and every field of `where`."""
    return any(p["rule"] == rule and all(p[k] == v for k, v in where.items()) for p in problems)


# ---- a good model ------------------------------------------------------------

def test_a_good_model_passes(tmp_path):
    m = model([add_w()], inits=[weight()])
    onnx.checker.check_model(m)
    p = save(tmp_path, m)
    rc, out, err = check(p)
    assert (rc, out, err) == (0, "ok\n", "")
    rc, report = check_json(p)
    assert rc == 0 and report["problems"] == [] and report["file"] == str(p)


def test_an_empty_tensor_with_empty_raw_data_passes(tmp_path):
    """numpy_helper.from_array of a 0-element array sets raw_data to b"":
    onnx.checker counts only a non-empty field as data, and so does check."""
    w = numpy_helper.from_array(np.zeros((0, 4), np.float32), "w")
    assert w.HasField("raw_data") and w.raw_data == b""
    m = model([relu("w", "y")], [w])
    onnx.checker.check_model(m)
    rc, report = check_json(save(tmp_path, m))
    assert (rc, report["problems"]) == (0, [])


def test_subgraphs_see_their_outer_scope(tmp_path):
    then_g = helper.make_graph([relu("x", "t1")], "then", [], [helper.make_tensor_value_info("t1", T.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["e1"])], "else", [],
                               [helper.make_tensor_value_info("e1", T.FLOAT, [2])])
    # a subgraph input may take the name of an outer value (onnx.checker
    # lets it), and an empty input is an absent optional one
    body = helper.make_graph([helper.make_node("Clip", ["x", "", ""], ["b1"])], "body",
                             [helper.make_tensor_value_info("x", T.FLOAT, [2])],
                             [helper.make_tensor_value_info("b1", T.FLOAT, [2])])
    cond = helper.make_tensor("c", T.BOOL, [], [True])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
               helper.make_node("If", ["c"], ["z"], then_branch=body, else_branch=body)],
              inits=[cond, weight()])
    onnx.checker.check_model(m)
    assert check(save(tmp_path, m))[0] == 0


def test_an_initializer_may_be_a_graph_input(tmp_path):
    m = model([relu("x", "y")], inits=[weight("x")])
    onnx.checker.check_model(m)
    assert check(save(tmp_path, m))[0] == 0


def test_a_local_function_sees_its_own_inputs(tmp_path):
    f = helper.make_function("local", "F", ["a"], ["b"], [relu("a", "b")], [helper.make_opsetid("", 17)])
    m = model([helper.make_node("F", ["x"], ["y"], domain="local")],
              opsets=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[f])
    onnx.checker.check_model(m)
    assert check(save(tmp_path, m))[0] == 0


# ---- each error class, rejected by onnx.checker ------------------------------

def _no_ir_version():
    m = model([relu("x", "y")])
    m.ClearField("ir_version")
    return m


def _no_opset_import():
    m = model([relu("x", "y")])
    m.ClearField("opset_import")
    return m


def _typed(data_type, dims, field, values, name="w"):
    t = helper.make_tensor(name, T.FLOAT, [1], [0.0])
    t.ClearField("float_data")
    t.data_type = data_type
    t.ClearField("dims")
    t.dims.extend(dims)
    getattr(t, field).extend(values)
    return t


def _with_tensor(t):
    return model([helper.make_node("Identity", [t.name], ["y"])], inits=[t])


def _attribute(build):
    m = model([helper.make_node("LeakyRelu", ["x"], ["y"])])
    a = helper.make_attribute("alpha", 0.5)
    build(a)
    m.graph.node[0].attribute.append(a)
    return m


def _subgraph(nodes, outputs=("t1",)):
    sub = helper.make_graph(nodes, "then", [], [helper.make_tensor_value_info(o, T.FLOAT, [2]) for o in outputs])
    other = helper.make_graph([relu("x", "e1")], "else", [], [helper.make_tensor_value_info("e1", T.FLOAT, [2])])
    return model([helper.make_node("If", ["c"], ["y"], then_branch=sub, else_branch=other)],
                 inits=[helper.make_tensor("c", T.BOOL, [], [True])])


def _function(nodes, inputs=("a",), outputs=("b",), opsets=None):
    f = helper.make_function("local", "F", list(inputs), list(outputs), nodes,
                             [helper.make_opsetid("", 17)] if opsets is None else opsets)
    return model([helper.make_node("F", ["x"], ["y"], domain="local")],
                 opsets=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[f])


def _raw(n_bytes):
    t = numpy_helper.from_array(np.zeros(2, np.float32), "w")
    t.raw_data = bytes(n_bytes)
    return t


# (id, model, rule, the fields of the problem that say where)
ERRORS = [
    ("ir_version absent", _no_ir_version, "ir-version", {"graph": "model"}),
    ("opset_import absent", _no_opset_import, "opset", {"graph": "model"}),
    ("node domain not imported", lambda: model([relu("x", "y", domain="custom")]), "opset",
     {"graph": "graph", "node_index": 0}),
    ("input not defined", lambda: model([relu("x", "t"), relu("z", "y", name="second")]), "undefined",
     {"graph": "graph", "node_index": 1, "node": "second", "tensor": "z"}),
    ("input defined later", lambda: model([relu("t", "y"), relu("x", "t")]), "undefined",
     {"node_index": 0, "tensor": "t"}),
    ("output defined twice", lambda: model([relu("x", "t"), relu("x", "t"), relu("t", "y")]), "redefined",
     {"node_index": 1, "tensor": "t"}),
    ("output redefines an initializer", lambda: model([relu("x", "w"), relu("w", "y")], inits=[weight()]),
     "redefined", {"node_index": 0, "tensor": "w"}),
    ("output redefines a graph input", lambda: model([relu("x", "x"), relu("x", "y")]), "redefined",
     {"node_index": 0, "tensor": "x"}),
    ("graph input twice", lambda: model([relu("x", "y")], inputs=[helper.make_tensor_value_info("x", T.FLOAT, [2])] * 2),
     "redefined", {"tensor": "x", "node_index": None}),
    ("initializer twice", lambda: model([add_w()], inits=[weight(), weight()]), "redefined", {"tensor": "w"}),
    ("initializer not an input at ir_version 3", lambda: model([add_w()], inits=[weight()], ir=3), "redefined",
     {"tensor": "w"}),
    ("initializer without a name", lambda: model([relu("x", "y")], inits=[weight("")]), "name", {"graph": "graph"}),
    ("graph output not defined",
     lambda: model([relu("x", "y")], outputs=[helper.make_tensor_value_info("q", T.FLOAT, [2])]), "undefined",
     {"tensor": "q", "node_index": None}),
    ("subgraph input not defined", lambda: _subgraph([relu("nowhere", "t1")]), "undefined",
     {"graph": "graph/node[0]:then_branch", "node_index": 0, "tensor": "nowhere"}),
    ("subgraph reads its node's own output", lambda: _subgraph([relu("y", "t1")]), "undefined",
     {"graph": "graph/node[0]:then_branch", "tensor": "y"}),
    ("subgraph output redefines an outer name", lambda: _subgraph([relu("x", "c")], outputs=("c",)), "redefined",
     {"graph": "graph/node[0]:then_branch", "node_index": 0, "tensor": "c"}),
    ("function body reads an outer name", lambda: _function([relu("x", "b")]), "undefined",
     {"graph": "function[local:F]", "node_index": 0, "tensor": "x"}),
    ("function node domain not imported by the function", lambda: _function([relu("a", "b")], opsets=[]), "opset",
     {"graph": "function[local:F]", "node_index": 0}),
    ("function output twice", lambda: _function([relu("a", "b")], outputs=("b", "b")), "function",
     {"graph": "function[local:F]", "tensor": "b"}),
    ("float_data short", lambda: _with_tensor(_typed(T.FLOAT, [3], "float_data", [1.0, 2.0])), "tensor",
     {"tensor": "w"}),
    ("complex64 needs two floats an element", lambda: _with_tensor(_typed(T.COMPLEX64, [2], "float_data", [1.0, 2.0])),
     "tensor", {"tensor": "w"}),
    ("string_data short", lambda: _with_tensor(_typed(T.STRING, [2], "string_data", [b"a"])), "tensor",
     {"tensor": "w"}),
    ("values in another type's field", lambda: _with_tensor(_typed(T.FLOAT, [2], "int32_data", [1, 2])), "tensor",
     {"tensor": "w"}),
    ("two data fields", lambda: _with_tensor(_two_fields()), "tensor", {"tensor": "w"}),
    ("raw_data short", lambda: _with_tensor(_raw(4)), "tensor", {"tensor": "w"}),
    ("data in an empty tensor", lambda: _with_tensor(_typed(T.FLOAT, [0], "float_data", [1.0])), "tensor",
     {"tensor": "w"}),
    ("data_type UNDEFINED", lambda: _with_tensor(_typed(T.UNDEFINED, [1], "float_data", [1.0])), "tensor",
     {"tensor": "w"}),
    ("data_type unknown", lambda: _with_tensor(_typed(77, [1], "float_data", [1.0])), "tensor", {"tensor": "w"}),
    ("attribute FLOAT holding i", lambda: _attribute(lambda a: (a.ClearField("f"), setattr(a, "i", 3))), "attribute",
     {"node_index": 0, "attribute": "alpha"}),
    ("attribute UNDEFINED holding f", lambda: _attribute(lambda a: setattr(a, "type", 0)), "attribute",
     {"node_index": 0, "attribute": "alpha"}),
    ("attribute without type", lambda: _attribute(lambda a: a.ClearField("type")), "attribute",
     {"node_index": 0, "attribute": "alpha"}),
    ("attribute with two values", lambda: _attribute(lambda a: setattr(a, "i", 2)), "attribute",
     {"attribute": "alpha"}),
    ("attribute twice", lambda: _attribute_twice(), "node",
     {"node_index": 0, "attribute": "alpha"}),
    ("attribute in a subgraph of the wrong type",
     lambda: _subgraph([_bad_attribute_node()]), "attribute",
     {"graph": "graph/node[0]:then_branch", "node_index": 0, "attribute": "alpha"}),
]


def _two_fields():
    t = _typed(T.FLOAT, [2], "float_data", [1.0, 2.0])
    t.raw_data = bytes(8)
    return t


def _attribute_twice():
    m = model([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.5)])
    m.graph.node[0].attribute.append(helper.make_attribute("alpha", 0.25))
    return m


def _bad_attribute_node():
    n = helper.make_node("LeakyRelu", ["x"], ["t1"], alpha=0.5)
    n.attribute[0].ClearField("f")
    n.attribute[0].i = 1
    return n


@pytest.mark.parametrize("build, rule, where", [pytest.param(*e[1:], id=e[0]) for e in ERRORS])
def test_each_error_onnx_rejects_is_found_and_placed(tmp_path, build, rule, where):
    m = build()
    rejected_by_onnx(m)
    problems = problems_of(tmp_path, m)
    assert has(problems, rule, **where), problems


def test_text_output_names_the_place(tmp_path):
    m = _subgraph([relu("nowhere", "t1", name="inner")])
    rc, out, err = check(save(tmp_path, m))
    assert rc == 1 and err == ""
    lines = out.splitlines()
    assert lines[-1] == "1 problem"
    assert lines[0].startswith("graph/node[0]:then_branch: node 0 'inner': undefined: ")
    assert "'nowhere'" in lines[0]


def test_every_problem_is_listed(tmp_path):
    # an undefined input, a redefined output and a tensor of the wrong size,
    # in text and in JSON
    t = _raw(4)
    m = model([relu("z", "t"), relu("x", "t"), helper.make_node("Add", ["t", "w"], ["y"])], inits=[t])
    rejected_by_onnx(m)
    p = save(tmp_path, m)
    rc, report = check_json(p)
    assert rc == 1
    rules = [(q["rule"], q["tensor"]) for q in report["problems"]]
    assert ("undefined", "z") in rules and ("redefined", "t") in rules and ("tensor", "w") in rules
    assert report["problem_count"] == 3
    rc, out, _ = check(p)
    assert rc == 1 and out.splitlines()[-1] == "3 problems" and len(out.splitlines()) == 4


def test_json_of_two_problems(tmp_path):
    m = model([relu("a", "y"), relu("b", "q")])
    rejected_by_onnx(m)
    rc, report = check_json(save(tmp_path, m))
    assert rc == 1 and not report["ok"]
    assert [(p["rule"], p["node_index"], p["tensor"]) for p in report["problems"]] == [
        ("undefined", 0, "a"), ("undefined", 1, "b")]
    for p in report["problems"]:
        assert set(p) == {"rule", "status", "graph", "node_index", "node", "tensor", "attribute", "message"}
        assert p["status"] is None and p["graph"] == "graph" and p["message"]


# ---- external data -----------------------------------------------------------

def _external(tmp_path, edit=None, name="m.onnx"):
    """A model whose initializer w is in w.bin beside it; edit(tensor) changes
    its external_data keys."""
    w = numpy_helper.from_array(np.arange(1024, dtype=np.float32), "w")
    g = helper.make_graph([add_w()], "g", [helper.make_tensor_value_info("x", T.FLOAT, [1024])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [1024])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    p = tmp_path / name
    onnx.save(m, str(p), save_as_external_data=True, location="w.bin", size_threshold=0)
    if edit:
        m = onnx.load(str(p), load_external_data=False)
        edit(m.graph.initializer[0])
        p.write_bytes(m.SerializeToString())
    return p


def _set_key(t, key, value):
    for e in t.external_data:
        if e.key == key:
            e.value = value
            return
    t.external_data.add(key=key, value=value)


def test_external_data_that_is_there_passes(tmp_path):
    p = _external(tmp_path)
    onnx.checker.check_model(str(p))
    assert check(p) == (0, "ok\n", "")


@pytest.mark.parametrize("location, status", [("missing.bin", "ONNXIO_ERR_NOT_FOUND"),
                                              ("../w.bin", "ONNXIO_ERR_PATH_PARENT")])
def test_external_data_onnx_rejects_is_found(tmp_path, location, status):
    p = _external(tmp_path, lambda t: _set_key(t, "location", location))
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(str(p))
    rc, report = check_json(p)
    assert rc == 1
    assert has(report["problems"], "external-data", tensor="w", status=status), report


def test_external_data_and_a_data_field(tmp_path):
    p = _external(tmp_path, lambda t: t.float_data.append(1.0))
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(str(p))
    rc, report = check_json(p)
    assert has(report["problems"], "tensor", tensor="w")


def test_external_range_past_the_file_stricter_than_onnx(tmp_path):
    # onnx.checker does not read the file's size; a load would refuse it
    p = _external(tmp_path, lambda t: _set_key(t, "offset", "8192"))
    onnx.checker.check_model(str(p))
    rc, report = check_json(p)
    assert has(report["problems"], "external-data", tensor="w", status="ONNXIO_ERR_EXTERNAL_RANGE")


def test_checksums_are_verified(tmp_path):
    p = _external(tmp_path)
    good = hashlib.sha1((tmp_path / "w.bin").read_bytes()).hexdigest()
    m = onnx.load(str(p), load_external_data=False)
    _set_key(m.graph.initializer[0], "checksum", good)
    p.write_bytes(m.SerializeToString())
    assert check(p)[0] == 0
    _set_key(m.graph.initializer[0], "checksum", "0" * 40)
    p.write_bytes(m.SerializeToString())
    onnx.checker.check_model(str(p))  # onnx.checker does not verify checksums
    rc, report = check_json(p)
    assert rc == 1
    assert has(report["problems"], "checksum", tensor="w", status="ONNXIO_ERR_CHECKSUM")
    assert check(p, "--no-data")[0] == 0


def test_an_archive_is_checked_through_its_entries(tmp_path):
    p = _external(tmp_path)
    z = tmp_path / "m.onnxz"
    rc, _, err = run("convert", p, z)
    assert rc == 0, err
    assert check(z) == (0, "ok\n", "")


# ---- stricter than onnx.checker --------------------------------------------

def test_raw_data_longer_than_its_shape(tmp_path):
    m = _with_tensor(_raw(12))
    onnx.checker.check_model(m)  # onnx.checker checks "too small" only
    assert has(problems_of(tmp_path, m), "tensor", tensor="w")


def test_a_typed_field_with_more_values_than_its_shape(tmp_path):
    m = _with_tensor(_typed(T.FLOAT, [2], "float_data", [1.0, 2.0, 3.0]))
    onnx.checker.check_model(m)  # too many values: onnx.checker lets them be
    assert has(problems_of(tmp_path, m), "tensor", tensor="w")


def test_a_domain_imported_twice(tmp_path):
    m = model([relu("x", "y")], opsets=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx", 16)])
    onnx.checker.check_model(m)  # onnx.checker keeps the last
    assert has(problems_of(tmp_path, m), "opset", graph="model")


# ---- usage -------------------------------------------------------------------

def test_bad_usage_exits_2(tmp_path):
    p = save(tmp_path, model([relu("x", "y")]))
    for args in ([], ["--bogus", p], [p, p]):
        rc, out, err = run("check", *args)
        assert rc == 2 and out == b"" and "usage: onnxio check" in err


def test_unreadable_inputs_exit_1(tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    rc, out, err = check(empty)
    assert rc == 1 and out == "" and err.startswith(f"onnxio: check: {empty}: ") and "empty" in err
    rc, out, err = check(tmp_path / "none.onnx")
    assert rc == 1 and out == "" and err.startswith("onnxio: check: ")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff")
    rc, out, err = check(bad)
    assert rc == 1 and out == ""


# ---- no false alarm ----------------------------------------------------------

@pytest.mark.parametrize("source", ["libonnx-testdata", "shared-corpus"])
def test_no_false_alarm_on_what_onnx_accepts(source):
    """Every model of the set that onnx.checker.check_model accepts passes
    `onnxio check`. Models onnx rejects are only counted: onnxio may find
    the same or other problems, or none (it has no operator schemas)."""
    root = needs(source)
    accepted, rejected, alarms = 0, 0, []
    for path in sorted(root.rglob("*.onnx")):
        try:
            onnx.checker.check_model(str(path))
        except Exception:  # noqa: BLE001 - any refusal: not a model onnx accepts
            rejected += 1
            continue
        accepted += 1
        rc, out, err = check(path)
        if rc != 0:
            alarms.append(f"{path}: {rc}: {out[-400:]}{err}")
    print(f"{source}: onnx accepts {accepted}, onnxio passes {accepted - len(alarms)}; onnx rejects {rejected}")
    assert accepted > 0
    assert not alarms, "\n".join(alarms[:20])
