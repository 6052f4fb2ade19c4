"""The learner's tools: the expression parser, the backward trace, the graph picture and the
``explain`` command. Expected numbers are derived by hand (a*b + c at a=2, b=3, c=4) or
come from PyTorch float64."""

from __future__ import annotations

import json
import math
import shutil
import warnings

import pytest
import torch

from modelwright_autograd import Value
from modelwright_autograd.cli import main
from modelwright_autograd.explain import (
    GraphvizMissingWarning,
    draw_graph,
    explain,
    save_graph,
)
from modelwright_autograd.expr import ExpressionError, parse_assignments, parse_expression
from modelwright_autograd.graph import topological_order

HAS_DOT = shutil.which("dot") is not None


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
    assert [(i.node, i.role, i.local, i.pushed) for i in mul.inputs] == [
        ("a", "a", 3.0, 3.0),
        ("b", "b", 2.0, 2.0),
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
        "step", "node", "op", "data", "grad", "in", "input", "as", "data", "local", "pushed"
    ]  # fmt: skip
    rows = [line.split() for line in lines[header + 1 : header + 5]]
    assert rows == [
        ["1", "a*b", "+", "c", "+", "10", "1", "a*b", "a", "6", "1", "1"],
        ["c", "b", "4", "1", "1"],
        ["2", "a*b", "*", "6", "1", "a", "a", "2", "3", "3"],
        ["b", "b", "3", "2", "2"],
    ]
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
    assert mul.inputs[1].local == math.tanh(0.5)
    assert tanh.grad == 4.0
    assert math.isclose(tanh.inputs[0].local, 1 - math.tanh(0.5) ** 2, rel_tol=1e-15)
    assert math.isclose(tanh.inputs[0].pushed, 4 * (1 - math.tanh(0.5) ** 2), rel_tol=1e-15)


def test_constant_exponent_has_no_local_derivative():
    a = Value(3.0, label="a")
    trace = explain(a**2, {"a": a})
    (step,) = trace.steps
    assert [(i.role, i.local, i.pushed) for i in step.inputs] == [
        ("a", 6.0, 6.0),
        ("n", None, None),
    ]
    rows = [line.split() for line in trace.to_text().splitlines()]
    assert ["2", "n", "2", "-", "-"] in rows  # the exponent's row: no derivative, no push


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


def test_explain_says_when_a_leaf_already_had_a_gradient():
    out, variables = _abc()
    out.backward()
    trace = explain(out, variables)
    assert variables["a"].grad == 6.0  # backward() accumulates into leaves, as in torch
    assert any("already had grad 3" in note for note in trace.notes)


def test_json_shape_and_non_finite_numbers():
    a = Value(0.0, label="a")
    d = explain(a.log(), {"a": a}).to_dict()
    assert set(d) == {"value", "grads", "steps"}
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
    lines = str(error).splitlines()
    assert lines[0].startswith(message) or message in lines[0]
    assert lines[2].index("^") - 2 == start  # the caret line sits under the text


def test_column_counts_characters_not_utf8_bytes():
    with pytest.raises(ExpressionError) as info:
        parse_expression("é.x + 1", {"é": 1.0})
    assert info.value.start == 1 and info.value.end == 3  # under '.x'
    assert str(info.value).splitlines()[2] == "   ^^"


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
    with pytest.raises(ExpressionError, match="nested too deeply"):
        parse_expression("a" + "+a" * 20000, {"a": 1.0})
    assert parse_expression("a" + "+a" * 300, {"a": 1.0}).data == 301.0


# ---------------------------------------------------------------------- the command
def test_cli_prints_the_trace(capsys):
    assert main(["explain", "a*b + c", "a=2", "b=3", "c=4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("a*b + c = 10\n")
    assert "d/da = 3" in out


def test_cli_json(capsys):
    assert main(["explain", "a*a + a", "a=3", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d) == {"value", "grads", "steps"}
    assert d["value"] == 12.0 and d["grads"] == {"a": 7.0}
    mul = d["steps"][1]
    assert mul["op"] == "*" and mul["grad"] == 1.0
    assert [(i["node"], i["local"], i["pushed"]) for i in mul["inputs"]] == [
        ("a", 3.0, 3.0),
        ("a", 3.0, 3.0),
    ]
    assert set(mul) == {"step", "node", "op", "data", "grad", "inputs"}


@pytest.mark.parametrize(("expression", "message", "pointed"), REJECTED[:20])
def test_cli_rejects_with_exit_code_2_and_a_pointer(capsys, expression, message, pointed):
    assert main(["explain", expression, "a=1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
    assert "^" in captured.err


@pytest.mark.parametrize("pair", ["a=x", "a", "1a=2", "exp=1"])
def test_cli_rejects_bad_pairs_with_exit_code_2(capsys, pair):
    assert main(["explain", "a", pair]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and pair in err and "^" in err


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
    assert "folder does not exist" in capsys.readouterr().err


# ---------------------------------------------------------------------- the picture
def test_graph_has_a_node_per_value_with_op_data_and_grad():
    out, _ = _abc()
    out.backward()
    graph = draw_graph(out)
    source = graph.source
    nodes = [line for line in source.splitlines() if '[label="{' in line]
    assert len(nodes) == len(topological_order(out)) == 5
    assert any("a | data 2 | grad 3" in n for n in nodes)
    assert any("b | data 3 | grad 2" in n for n in nodes)
    assert any("c | data 4 | grad 1" in n for n in nodes)
    assert any("a*b | op * | data 6 | grad 1" in n for n in nodes)
    assert any("a*b + c | op + | data 10 | grad 1" in n for n in nodes)
    assert source.count("->") == 4  # one edge per input
    assert graph.format == "svg" and "rankdir=LR" in source
    assert "rankdir=TB" in draw_graph(out, rankdir="TB").source
    with pytest.raises(ValueError, match="rankdir"):
        draw_graph(out, rankdir="sideways")


def test_graph_escapes_record_characters_in_labels():
    a = Value(1.0, label='x{1}|<y> "q"')
    source = draw_graph(a * 2.0).source
    assert r"x\{1\}\|\<y\> \"q\"" in source


def test_missing_dot_writes_dot_text_and_says_how_to_render(tmp_path, monkeypatch):
    out, _ = _abc()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` to be found
    with pytest.warns(GraphvizMissingWarning) as record:
        written = save_graph(out, tmp_path / "out.svg")
    assert written == tmp_path / "out.dot"
    assert not (tmp_path / "out.svg").exists()
    assert written.read_text().startswith("digraph {")
    message = str(record[0].message)
    assert f"dot -Tsvg {tmp_path / 'out.dot'} -o {tmp_path / 'out.svg'}" in message


def test_cli_without_dot_exits_0_with_the_render_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["explain", "a*b + c", "a=2", "b=3", "c=4", "--graph", "out.svg"]) == 0
    captured = capsys.readouterr()
    assert "dot -Tsvg out.dot -o out.svg" in captured.err
    assert (tmp_path / "out.dot").exists() and not (tmp_path / "out.svg").exists()
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
def test_cli_writes_the_svg_when_dot_exists(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["explain", "a*b + c", "a=2", "b=3", "c=4", "--graph", "out.svg"]) == 0
    svg = (tmp_path / "out.svg").read_text()
    assert "<svg" in svg and "data 6" in svg and "grad 3" in svg
    assert "graph written to out.svg" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.svg"]  # no temp files left


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot program is not installed")
def test_save_graph_png(tmp_path):
    out, _ = _abc()
    assert save_graph(out, tmp_path / "g.png") == tmp_path / "g.png"
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unicode_names_are_normalised_like_pythons_parser():
    # ast folds the fullwidth "ａ" to "a" (NFKC); the name=value pairs must agree with it
    out = parse_expression("ａ*2", parse_assignments(["ａ=3"]))
    assert out.data == 6.0
    out = parse_expression("ａ*b", {"ａ": 3.0, "b": 2.0})
    assert out.data == 6.0
