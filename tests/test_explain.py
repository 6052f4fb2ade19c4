"""The learner's tools: the expression parser, the backward trace, the graph picture and the
``explain`` command. Expected numbers are derived by hand (a*b + c at a=2, b=3, c=4) or
come from PyTorch float64."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import warnings
from pathlib import Path
from xml.etree import ElementTree

import pytest
import torch

from modelwright_autograd import Value
from modelwright_autograd.cli import main
from modelwright_autograd.explain import (
    ExpressionError,
    GraphvizMissingWarning,
    GraphvizTooSlow,
    draw_graph,
    explain,
    parse_assignments,
    parse_expression,
    picture,
    save_graph,
)
from modelwright_autograd.graph import topological_order

HAS_DOT = shutil.which("dot") is not None
SVG = "{http://www.w3.org/2000/svg}"


def _abc():
    variables = parse_assignments(["a=2", "b=3", "c=4"])
    return parse_expression("a*b + c", variables), variables


# ---------------------------------------------------------------------- the trace
def test_trace_of_a_times_b_plus_c_has_the_hand_derived_numbers():
    out, variables = _abc()
    trace = explain(out, variables)
    assert trace.value == 10.0
    assert trace.grads == {"a": 3.0, "b": 2.0, "c": 1.0}
    assert [(s.node, s.op, s.data, s.grad) for s in trace.steps] == [
        ("a*b + c", "+", 10.0, 1.0),  # the seed: dL/dL = 1
        ("a*b", "*", 6.0, 1.0),  # receives 1 from the + node
    ]
    add, mul = trace.steps
    assert [(i.node, i.data, i.local, i.pushed) for i in add.inputs] == [
        ("a*b", 6.0, 1.0, 1.0),
        ("c", 4.0, 1.0, 1.0),
    ]
    # d(a*b)/da = b = 3 and d(a*b)/db = a = 2, each times the 1.0 that arrived
    assert [(i.node, i.role, i.formula, i.local, i.pushed) for i in mul.inputs] == [
        ("a", "left", "b", 3.0, 3.0),
        ("b", "right", "a", 2.0, 2.0),
    ]
    # explain ran the real backward pass
    assert (variables["a"].grad, variables["b"].grad, variables["c"].grad) == (3.0, 2.0, 1.0)


def test_text_trace_is_the_table_a_learner_writes():
    out, variables = _abc()
    text = str(explain(out, variables))
    lines = text.splitlines()
    assert lines[0] == "a*b + c = 10"
    header = next(i for i, line in enumerate(lines) if line.startswith("step"))
    assert lines[header].split() == [
        "step", "node", "op", "data", "grad", "in", "input", "role", "data", "local", "pushed"
    ]  # fmt: skip
    rows = [line.split() for line in lines[header + 1 : header + 5]]
    assert rows == [
        ["1", "a*b", "+", "c", "+", "10", "1", "a*b", "left", "6", "1", "1"],
        ["c", "right", "4", "1", "1"],
        ["2", "a*b", "*", "6", "1", "a", "left", "2", "b", "=", "3", "3"],
        ["b", "right", "3", "a", "=", "2", "2"],
    ]
    # the legend explains every column of the header
    legend = lines[lines.index(next(line for line in lines if "The columns:" in line)) + 1 :]
    for column in ("step", "node", "op", "data", "grad in", "input", "role", "local", "pushed"):
        assert any(line.startswith(f"  {column} ") for line in legend[:header]), column
    assert "d/da = 3" in text and "d/db = 2" in text and "d/dc = 1" in text


def test_a_variable_used_twice_is_one_value_and_accumulates():
    a = Value(3.0, label="a")
    out = parse_expression("a*a + a", {"a": a})
    assert set(topological_order(out)) >= {a}
    assert sum(1 for n in topological_order(out) if not n._prev) == 1  # a is the only leaf
    trace = explain(out, {"a": a})
    assert a.grad == 2 * 3.0 + 1  # dL/da = 2a + 1
    assert trace.grads == {"a": 7.0}
    mul = trace.steps[1]
    assert [(i.node, i.pushed) for i in mul.inputs] == [("a", 3.0), ("a", 3.0)]


@pytest.mark.parametrize(
    ("expression", "point"),
    [
        ("tanh(a*b + c) ** 2 / exp(-a) - log(c) + sigmoid(a) * relu(b)", (0.5, -1.5, 2.0)),
        ("(a - b) / (c ** a) + a ** b - relu(-c)", (1.5, 2.0, 0.7)),
        ("-a * -b + 2 ** c - a / 3", (-1.0, 4.0, 0.5)),
    ],
)
def test_trace_agrees_with_torch_and_adds_up(expression, point):
    variables = {name: Value(x, label=name) for name, x in zip("abc", point)}
    out = parse_expression(expression, variables)
    trace = explain(out, variables)

    tvars = {
        n: torch.tensor(x, dtype=torch.float64, requires_grad=True) for n, x in zip("abc", point)
    }
    env = {"exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "relu": torch.relu}
    env["sigmoid"] = torch.sigmoid
    tout = eval(expression, {"__builtins__": {}, **env}, tvars)  # test-side oracle only
    tout.backward()
    assert math.isclose(trace.value, tout.item(), rel_tol=1e-12)
    for name in "abc":
        assert math.isclose(trace.grads[name], tvars[name].grad.item(), rel_tol=1e-9, abs_tol=1e-12)

    # The narration is the backward pass: summing what the steps push into a node, in
    # step order, reproduces that node's gradient exactly.
    received: dict[str, float] = {}
    for step in trace.steps:
        if step.node != trace.output:
            assert step.grad == received[step.node], step.node
        for i in step.inputs:
            if i.pushed is not None:
                received[i.node] = received.get(i.node, 0.0) + i.pushed
    for name in "abc":
        assert received.get(name, 0.0) == trace.grads[name]


def test_local_derivative_is_the_ops_own_and_pushed_is_local_times_grad():
    x = Value(0.5, label="x")
    out = parse_expression("tanh(x) * 4", {"x": x})
    trace = explain(out, {"x": x})
    mul, tanh = trace.steps
    assert (mul.inputs[0].local, mul.inputs[0].formula) == (4.0, "4")
    assert mul.inputs[1].local is None  # the number 4 is a constant: no gradient for it
    assert tanh.grad == 4.0
    assert math.isclose(tanh.inputs[0].local, 1 - math.tanh(0.5) ** 2, rel_tol=1e-15)
    assert math.isclose(tanh.inputs[0].pushed, 4 * (1 - math.tanh(0.5) ** 2), rel_tol=1e-15)


def test_constant_exponent_has_no_local_derivative():
    a = Value(3.0, label="a")
    trace = explain(a**2, {"a": a})
    (step,) = trace.steps
    assert [(i.role, i.formula, i.local, i.pushed) for i in step.inputs] == [
        ("base", "2*a**1", 6.0, 6.0),
        ("exponent", "a**2*log(a)", None, None),
    ]
    rows = [line.split() for line in trace.to_text().splitlines()]
    assert ["2", "exponent", "2", "-", "-"] in rows  # the exponent: no derivative, no push


def test_explain_of_a_leaf_and_of_unlabelled_nodes():
    leaf = Value(2.0, label="w")
    trace = explain(leaf)
    assert trace.steps == () and trace.grads == {"w": 1.0}
    assert "is a leaf" in str(trace)
    x, y = Value(1.0, label="x"), Value(2.0)
    trace = explain((x + y) * 3.0)
    assert trace.output == "v2" and trace.steps[1].node == "v1"
    assert trace.grads == {"x": 3.0}  # only labelled leaves are reported by default
    with pytest.raises(TypeError, match="explain needs a Value, got float"):
        explain(2.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "variables, said",
    [
        ("list", "variables must map names to Values (a dict, {'a': a}), got list"),
        ("str", "variables must map names to Values (a dict, {'a': a}), got str"),
        ("number", "variables['a'] is int, not a Value"),
    ],
)
def test_explain_refuses_variables_that_are_not_a_dict_of_values_before_the_pass(variables, said):
    a = Value(2.0, label="a")
    out = a * a
    given = {"list": [a], "str": "a", "number": {"a": 3}}[variables]
    with pytest.raises(TypeError, match=re.escape(said)) as err:
        explain(out, given)  # type: ignore[arg-type]
    assert "\n" not in str(err.value) and a.grad == 0.0  # one line; no backward() ran


def test_explain_says_when_a_leaf_already_had_a_gradient():
    out, variables = _abc()
    out.backward()
    trace = explain(out, variables)
    assert variables["a"].grad == 6.0  # backward() accumulates into leaves, as in torch
    assert any("already had grad 3" in note for note in trace.notes)


def test_json_shape_and_non_finite_numbers():
    a = Value(0.0, label="a")
    d = explain(a.log(), {"a": a}).to_dict()
    assert set(d) == {"value", "grads", "nodes", "steps"}
    assert d["value"] == "-inf" and d["grads"] == {"a": "inf"}
    json.dumps(d, allow_nan=False)  # strict JSON


# ---------------------------------------------------------------------- the parser
def test_parser_builds_the_expected_values():
    v = parse_assignments(["x=2", "y=-0.5", "z=1e3"])
    assert {n: val.data for n, val in v.items()} == {"x": 2.0, "y": -0.5, "z": 1000.0}
    assert parse_expression("x ** 2 + -y * (z / 100)", v).data == 4.0 + 0.5 * 10.0
    assert parse_expression("-2 ** 2", {}).data == -4.0  # Python precedence: -(2**2)
    assert parse_expression("relu(-x) + sigmoid(0) + tanh(0) + exp(0) + log(1)", v).data == 1.5
    node = parse_expression("(x * y)", v)
    assert node.label == "x * y" and node._op == "*"
    assert parse_expression("x", v) is v["x"]
    assert parse_expression("1e999", {}).data == math.inf


# (expression, message fragment, the text the carets must sit under)
REJECTED = [
    ("a.real", "attribute access ('.real')", ".real"),
    ("(1).real + a", "attribute access ('.real')", ".real"),
    ("print(a)", "function 'print' is not allowed", "print"),
    ("__import__('os').system('touch X')", "function '__import__' is not allowed", "__import__"),
    ("import os", "not a valid expression", "i"),
    ("a[0]", "subscripts (indexing) are not allowed", "a[0]"),
    ("lambda: a", "lambda functions are not allowed", "lambda: a"),
    ("a + d", "'d' has no value: give it as d=<number>", "d"),
    ("a // 2", "operator // is not allowed", "//"),
    ("(a) % (a)", "operator % is not allowed", "%"),
    ("exp + 1", "exp is a function: call it as exp(x)", "exp"),
    ("exp(a, a)", "exp() takes exactly one argument, got 2", "exp(a, a)"),
    ("exp(x=a)", "exp() takes no keyword arguments", "x=a"),
    ("exp(*a)", "starred arguments (*x) are not allowed", "*a"),
    ("exp(a)(a)", "only the functions exp, log, tanh, relu, sigmoid can be called", "exp(a)"),
    ("'text' + a", "'text' is not a number", "'text'"),
    ("a + True", "True is not a number", "True"),
    ("2j * a", "2j is not a number", "2j"),
    ("+a", "unary + is not allowed", "+a"),
    ("not a", "unary not is not allowed", "not a"),
    ("a < 1", "comparisons are not allowed", "a < 1"),
    ("a if a else 1", "conditional expressions", "a if a else 1"),
    ("(a := 2)", "assignments (:=) are not allowed", "a := 2"),
    ("a, a", "tuples", "a, a"),
    ("[a]", "lists are not allowed", "[a]"),
    ("f'{a}'", "f-strings are not allowed", "f'{a}'"),
    ("a +", "not a valid expression: invalid syntax", ""),
    ("1" + "0" * 400 + " * a", "too large for a float", "1" + "0" * 400),
    ("a\n+ 1", "must be on one line", "\n"),
]


@pytest.mark.parametrize(("expression", "message", "pointed"), REJECTED)
def test_rejected_expressions_point_at_the_offending_part(expression, message, pointed):
    variables = {"a": Value(1.0, label="a")}
    with pytest.raises(ExpressionError) as info:
        parse_expression(expression, variables)
    error = info.value
    assert message in error.message
    start = expression.find(pointed) if pointed else len(expression)
    assert error.start == start, (error.start, start)
    assert error.column == start + 1
    line = str(error)  # one line: the text shown with the offending part between » and «
    assert "\n" not in line and line.startswith(error.message) and message in line
    shown = line.split(f"(column {start + 1}): ", 1)[1]
    assert shown.index("»") == start
    assert shown[start + 1 :].startswith(pointed.replace("\n", " ")[:40])


def test_column_counts_characters_not_utf8_bytes():
    with pytest.raises(ExpressionError) as info:
        parse_expression("é.x + 1", {"é": 1.0})
    assert info.value.start == 1 and info.value.end == 3  # under '.x'
    assert str(info.value).startswith(
        "attribute access ('.x') is not allowed (column 2): é».x« + 1"
    )


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["a=x"], "the value of a must be a number, got 'x'"),
        (["a"], "expected name=value, got 'a'"),
        (["a="], "the value of a must be a number, got ''"),
        (["=3"], "'' is not a valid variable name"),
        (["1a=2"], "'1a' is not a valid variable name"),
        (["for=1"], "'for' is not a valid variable name"),
        (["exp=2"], "'exp' is a function name"),
        (["a=1", "a=2"], "variable 'a' is given twice"),
    ],
)
def test_bad_assignments_are_rejected(pairs, message):
    with pytest.raises(ExpressionError, match=None) as info:
        parse_assignments(pairs)
    assert message in info.value.message


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(ExpressionError, match="nested more than 200 levels"):
        parse_expression("(" * 150 + "a" + ")" * 150 + "**a" * 600, {"a": 1.0})
    with pytest.raises(ExpressionError, match="nested more than 200 levels"):
        parse_expression("-" * 9000 + "a", {"a": 1.0})  # Python's own parser gives up
    assert parse_expression("a" + "+a" * 5000, {"a": 1.0}).data == 5001.0  # flat: one level


# ---------------------------------------------------------------------- the command
def test_cli_prints_the_trace(capsys):
    assert main(["explain", "a*b + c", "a=2", "b=3", "c=4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("a*b + c = 10\n")
    assert "d/da = 3" in out


def test_cli_json(capsys):
    assert main(["explain", "a*a + a", "a=3", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d) == {"value", "grads", "nodes", "steps"}
    assert d["value"] == 12.0 and d["grads"] == {"a": 7.0}
    mul = d["steps"][1]
    assert mul["op"] == "*" and mul["grad"] == 1.0
    assert [(i["node"], i["local"], i["pushed"]) for i in mul["inputs"]] == [
        ("a", 3.0, 3.0),
        ("a", 3.0, 3.0),
    ]
    assert set(mul) == {"step", "id", "node", "op", "data", "grad", "inputs"}
    assert d["nodes"][mul["inputs"][0]["id"]]["name"] == "a"


@pytest.mark.parametrize(("expression", "message", "pointed"), REJECTED[:20])
def test_cli_rejects_with_exit_code_2_and_a_pointer(capsys, expression, message, pointed):
    assert main(["explain", expression, "a=1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
    assert captured.err.count("\n") == 1 and f"»{pointed}«" in captured.err


@pytest.mark.parametrize("pair", ["a=x", "a", "1a=2", "exp=1"])
def test_cli_rejects_bad_pairs_with_exit_code_2(capsys, pair):
    assert main(["explain", "a", pair]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "»" in err and err.count("\n") == 1
    assert pair in err.replace("»", "").replace("«", "")  # the pair, its fault marked


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('touch X')",
        "exp(a).__class__.__bases__[0].__subclasses__()",
        "open('X', 'w')",
        "(lambda: __import__('os').system('touch X'))()",
        "[__import__('os').system('touch X') for _ in (1,)]",
    ],
)
def test_nothing_is_executed(tmp_path, monkeypatch, capsys, expression):
    monkeypatch.chdir(tmp_path)
    assert main(["explain", expression, "a=1"]) == 2
    assert list(tmp_path.iterdir()) == []
    assert "error:" in capsys.readouterr().err


def test_cli_notes_unused_variables(capsys):
    assert main(["explain", "a + 1", "a=1", "b=2", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["grads"] == {"a": 1.0, "b": 0.0}
    assert "b is given but not used" in captured.err


def test_cli_refuses_unknown_graph_formats(tmp_path, capsys):
    assert main(["explain", "a", "a=1", "--graph", str(tmp_path / "g.jpg")]) == 2
    assert "use a .svg, .png, .pdf or .dot" in capsys.readouterr().err
    assert main(["explain", "a", "a=1", "--graph", str(tmp_path / "no" / "g.svg")]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {tmp_path / 'no' / 'g.svg'}" in err and "does not exist" in err


# ---------------------------------------------------------------------- the picture
def _svg_texts(svg):
    """The text of every <text> element of an SVG, unescaped, and the parsed tree."""
    root = ElementTree.fromstring(svg)  # also proves the SVG is well-formed XML
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")], root


def test_graph_has_a_node_per_value_with_op_data_and_grad():
    out, _ = _abc()
    out.backward()
    graph = draw_graph(out)
    texts, root = _svg_texts(graph.svg())
    boxes = [g for g in root.iter(f"{SVG}g") if "node" in g.get("class", "").split()]
    assert len(boxes) == len(topological_order(out)) == 5
    for line in ("a", "b", "c", "a*b", "a*b + c", "op *", "op +", "data 6", "grad 3", "grad 2"):
        assert line in texts, line
    edges = [g for g in root.iter(f"{SVG}g") if g.get("class") == "edge"]
    assert len(edges) == 4  # one per input
    # each edge says which operand it is and what backward pushed along it
    assert {"left: 1", "right: 1", "left: 3", "right: 2"} <= set(texts)
    source = graph.source
    assert source.startswith("digraph {") and source.count("->") == 4
    assert "a*b | op * | data 6 | grad 1" in source


def test_layout_is_left_to_right_by_depth():
    out, _ = _abc()
    graph = draw_graph(out)
    order = topological_order(out)
    x = {node.label: graph.layout.x[k] for k, node in enumerate(order)}
    assert x["a"] == x["b"] < x["a*b"] == x["c"] < x["a*b + c"]  # c sits by its one use


def test_picture_shows_a_reused_value_collecting_from_both_paths():
    a, b, c = (Value(x, label=n) for x, n in ((2.0, "a"), (-0.5, "b"), (0.3, "c")))
    out = (a * b + c).tanh() * a
    out.backward()
    texts, _ = _svg_texts(draw_graph(out).svg())
    t = math.tanh(2.0 * -0.5 + 0.3)
    via_product = -0.5 * (1 - t * t) * 2.0  # d out/d a through a*b, by the chain rule
    assert f"grad {a.grad:.6g}" in texts
    assert f"= {t:.6g} + {via_product:.6g}" in texts  # the sum, under a's grad
    assert f"right: {t:.6g}" in texts and f"left: {via_product:.6g}" in texts


def test_graph_escapes_labels_in_svg_and_dot():
    a = Value(1.0, label='x{1}|<y> "q"')
    graph = draw_graph(a * 2.0)
    assert r"x\{1\}\|\<y\> \"q\"" in graph.source
    texts, _ = _svg_texts(graph.svg())
    assert 'x{1}|<y> "q"' in texts and "<y>" not in graph.svg()


def test_graph_shows_itself_in_a_notebook_as_svg():
    out, _ = _abc()
    svg = draw_graph(out)._repr_svg_()
    assert svg.startswith("<svg") and "a*b + c" in svg


def test_save_graph_draws_svg_without_graphviz(tmp_path, monkeypatch):
    out, _ = _abc()
    out.backward()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` to be found
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: SVG needs no Graphviz
        assert save_graph(out, tmp_path / "g.svg") == tmp_path / "g.svg"
    texts, _ = _svg_texts((tmp_path / "g.svg").read_text())
    assert "grad 3" in texts
    with pytest.warns(GraphvizMissingWarning) as record:
        written = save_graph(out, tmp_path / "g.png")
    assert written == tmp_path / "g.svg"  # a picture, not DOT text
    assert "dot" in str(record[0].message) and str(tmp_path / "g.svg") in str(record[0].message)


def test_cli_without_dot_draws_svg(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["explain", "a*b + c", "a=2", "b=3", "c=4", "--graph", "out.svg"]) == 0
    captured = capsys.readouterr()
    assert "graph written to out.svg" in captured.err
    assert "<svg" in (tmp_path / "out.svg").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.svg"]  # no temp files left
    assert captured.out.startswith("a*b + c = 10")


def test_save_graph_writes_dot_text_for_dot_names(tmp_path):
    out, _ = _abc()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert save_graph(out, tmp_path / "g.dot") == tmp_path / "g.dot"
    assert "op *" in (tmp_path / "g.dot").read_text()
    with pytest.raises(ValueError, match=r"\.svg, \.png, \.pdf"):
        save_graph(out, tmp_path / "g.jpeg")


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot program is not installed")
def test_save_graph_png_with_graphviz(tmp_path):
    out, _ = _abc()
    assert save_graph(out, tmp_path / "g.png") == tmp_path / "g.png"
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Graphviz's dot takes minutes over the layout of this small accepted sum.
SLOW_TO_LAY_OUT = "+".join(["a"] * 150)


def _our_dot_processes() -> list[str]:
    """The `dot` processes (zombies too) whose parent is this one."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1]
        if name == "dot" and int(fields.split()[1]) == os.getpid():
            found.append(entry.name)
    return found


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot program is not installed")
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_layout_longer_than_its_limit_is_stopped_and_leaves_no_dot(tmp_path):
    out = parse_expression(SLOW_TO_LAY_OUT, {"a": 1.0})
    out.backward()
    with pytest.raises(GraphvizTooSlow, match=r"more than 0\.5 s .*\.svg \(laid out in Python"):
        save_graph(out, tmp_path / "g.png", dot_seconds=0.5)
    assert _our_dot_processes() == []  # killed and waited for
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot program is not installed")
def test_cli_a_layout_too_slow_for_png_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(picture, "DOT_SECONDS", 0.5)
    assert main(["explain", SLOW_TO_LAY_OUT, "a=1", "--graph", "g.pdf"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "modelwright-autograd explain: error: --graph g.pdf: Graphviz's dot took more than "
        "0.5 s to lay the graph out and was stopped; draw it as .svg (laid out in Python, "
        "no Graphviz) instead\n"
    )
    assert list(tmp_path.iterdir()) == []
    assert main(["explain", SLOW_TO_LAY_OUT, "a=1", "--graph", "g.svg"]) == 0  # as it says


def test_unicode_names_are_normalised_like_pythons_parser():
    # ast folds the fullwidth "ａ" to "a" (NFKC); the name=value pairs must agree with it
    out = parse_expression("ａ*2", parse_assignments(["ａ=3"]))
    assert out.data == 6.0
    out = parse_expression("ａ*b", {"ａ": 3.0, "b": 2.0})
    assert out.data == 6.0


# ---------------------------------------------------------------------- read literally
def test_a_number_in_the_expression_is_a_constant(capsys):
    assert main(["explain", "a**2", "a=-2", "--json"]) == 0
    (step,) = json.loads(capsys.readouterr().out)["steps"]
    base, exponent = step["inputs"]
    assert (base["role"], base["local"], base["pushed"]) == ("base", -4.0, -4.0)  # 2a at -2
    assert (exponent["role"], exponent["local"], exponent["pushed"]) == ("exponent", None, None)
    assert main(["explain", "a**2", "a=-2"]) == 0
    assert "nan" not in capsys.readouterr().out


def test_roles_cannot_be_read_as_the_users_variables():
    variables = parse_assignments(["a=2", "b=3", "c=4"])
    trace = explain(parse_expression("c*a - b/c + c**b", variables), variables)
    roles = {i.role for s in trace.steps for i in s.inputs}
    assert roles == {"left", "right", "base", "exponent"}
    assert not roles & set(variables)


def test_accumulation_is_shown_where_it_happens():
    variables = parse_assignments(["a=2", "b=-0.5", "c=0.3"])
    trace = explain(parse_expression("tanh(a*b + c) * a", variables), variables)
    t = math.tanh(2.0 * -0.5 + 0.3)
    via_product = -0.5 * (1 - t * t) * 2.0
    total = t + via_product
    assert trace.grads["a"] == total
    line = f"a: {t:.6g} (via tanh(a*b + c) * a) + {via_product:.6g} (via a*b) = {total:.6g}"
    assert trace.accumulations() == [line]
    assert f"  {line}" in str(trace)


@pytest.mark.parametrize(
    ("expression", "point"),
    [
        ("a*b + c/a - b", (2.0, -0.5, 0.3)),
        ("tanh(a) * exp(b) / log(c)", (0.4, 0.2, 3.0)),
        ("sigmoid(a - b) ** c", (0.4, 0.2, 3.0)),
        ("a ** b + -c", (1.5, 0.5, 2.0)),
    ],
)
def test_local_formulas_give_the_rules_numbers(expression, point):
    # each formula, read as an expression over the same variables, gives the rule's number
    variables = {n: Value(x, label=n) for n, x in zip("abc", point)}
    trace = explain(parse_expression(expression, variables), variables)
    checked = 0
    for s in trace.steps:
        for i in s.inputs:
            if i.local is None:
                continue
            value = parse_expression(i.formula, dict(zip("abc", point))).data
            assert math.isclose(value, i.local, rel_tol=1e-12), (i.formula, value, i.local)
            checked += 1
    assert checked >= 4


def test_help_lists_the_languages_functions(capsys):
    from modelwright_autograd.explain.expr import FUNCTIONS

    with pytest.raises(SystemExit):
        main(["explain", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert " ".join(FUNCTIONS) in help_text


# ---------------------------------------------------------------------- size and paths
def _balanced(n):
    """n copies of a*b+c summed as a balanced tree of brackets: 8 characters a copy."""
    if n == 1:
        return "a*b+c"
    return f"({_balanced(n // 2)})+({_balanced(n - n // 2)})"


def test_big_expressions_finish_or_are_refused_clearly(capsys):
    from modelwright_autograd.explain.expr import MAX_LENGTH, MAX_NODES

    fifteen = _balanced(1500)  # 15 KB of 1500 terms
    assert 14_000 < len(fifteen) <= MAX_LENGTH
    assert main(["explain", fifteen, "a=1", "b=2", "c=3"]) == 0
    out = capsys.readouterr().out
    assert "d/da = 3000" in out  # 1500 uses of a*b, each pushing b = 2
    longest = max(len(line) for line in out.splitlines())
    assert longest < 400  # labels are cut: no row is padded to the whole expression
    assert "…" in out

    sixty_three = _balanced(6300)  # 63 KB: refused by its length, at once
    assert len(sixty_three) > 60_000
    assert main(["explain", sixty_three, "a=1", "b=2", "c=3"]) == 2
    err = capsys.readouterr().err
    assert f"the limit is {MAX_LENGTH:,}" in err and len(err) < 300

    many = _balanced(1200).replace("a*b+c", "-" * 10 + "a")  # 11 operations a term
    assert len(many) < MAX_LENGTH
    with pytest.raises(ExpressionError, match=f"more than {MAX_NODES:,} parts") as info:
        parse_expression(many, {"a": 1.0, "b": 2.0})
    assert len(str(info.value)) < 400  # the message shows a window of the text, not all


def test_ten_megabytes_from_python_are_refused_by_length_first():
    huge = "a+" * 5_000_000
    with pytest.raises(ExpressionError, match="characters long"):
        parse_expression(huge, {"a": 1.0})


def test_long_python_labels_are_cut_in_every_view():
    a = Value(1.0, label="x" * 5000)
    trace = explain(a * 2.0)
    assert max(len(line) for line in str(trace).splitlines()) < 200
    assert len(trace.steps[0].inputs[0].node) <= 40


@pytest.mark.parametrize("where", ["/proc/x.svg", "DIR/x.svg", "DIR/none/x.svg"])
@pytest.mark.parametrize("option", ["--graph", "--html"])
def test_unwritable_outputs_are_one_line_errors_before_the_work(tmp_path, capsys, where, option):
    (tmp_path / "x.svg").mkdir()  # a folder where the file should go
    path = where.replace("DIR", str(tmp_path))
    if option == "--html":
        path = path.replace(".svg", ".html")
        (tmp_path / "x.html").mkdir()
    assert main(["explain", "a*b", "a=1", "b=2", option, path]) == 2  # a usage error
    captured = capsys.readouterr()
    assert captured.out == ""  # checked before the trace was printed
    assert captured.err.count("\n") == 1 and f"cannot write {path}" in captured.err


def test_a_full_disk_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    # simulated: the write itself fails with ENOSPC after the path check passed
    import errno

    from modelwright_autograd.explain import picture

    def full(path, write, binary=False):
        raise OSError(errno.ENOSPC, "No space left on device", f"{path}.1234.tmp")

    monkeypatch.setattr(picture, "atomic_write", full)
    path = str(tmp_path / "g.svg")
    assert main(["explain", "a*b", "a=1", "b=2", "--graph", path]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {path}: No space left" in err


def test_the_docs_explain_excerpts_are_what_the_command_prints(capsys):
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[1] / "docs" / "explain.md"
    section = doc.read_text("utf-8")
    table, accumulation = re.findall(r"```text\n(.*?)```", section, re.S)[:2]
    assert main(["explain", "a*b + c", "a=2", "b=3", "c=4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(line in out for line in table.splitlines()), table
    assert main(["explain", "tanh(a*b + c) * a", "a=2", "b=-0.5", "c=0.3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(line in out for line in accumulation.splitlines()), accumulation


@pytest.mark.parametrize("pair", ["a" * 1_000_000, "1" * 1_000_000 + "=2", "a=" + "x" * 1_000_000])
def test_huge_name_value_pairs_give_short_messages(capsys, pair):
    assert main(["explain", "a", pair]) == 2
    assert len(capsys.readouterr().err) < 500


def test_a_relu_neuron_is_narrated_with_the_dots_derivatives():
    from modelwright_autograd import Neuron

    neuron = Neuron(2, seed=3)
    xs = [Value(0.5, label="x1"), Value(-1.5, label="x2")]
    names = {"w1": neuron.w[0], "w2": neuron.w[1], "b": neuron.b}
    for name, p in names.items():
        p.label = name
    out = neuron(xs)
    assert out._op == "dot_relu"
    if not out.data > 0.0:  # make it active: the inactive node runs no rule at all
        neuron.b.data += 10.0 - out.data
        out = neuron(xs)
    trace = explain(out, {**names, "x1": xs[0], "x2": xs[1]})
    (step,) = trace.steps
    assert [i.role for i in step.inputs] == ["weight1", "weight2", "input1", "input2", "bias"]
    assert [i.formula for i in step.inputs] == ["x1", "x2", "w1", "w2", "1"]
    assert [i.local for i in step.inputs] == [0.5, -1.5, neuron.w[0].data, neuron.w[1].data, 1.0]
    assert trace.grads["w1"] == 0.5 and trace.grads["x2"] == neuron.w[1].data
