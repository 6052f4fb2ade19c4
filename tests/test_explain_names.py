"""The names ``explain`` shows: a label with a control character, a NUL or a lone surrogate
keeps every view well formed (the SVG parses as XML, Graphviz renders the DOT, the page is
UTF-8), and two leaves with the same label stay two variables with two gradients. The
gradients are checked against the engine's own and PyTorch's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from xml.etree import ElementTree

import pytest
import torch

from modelwright_autograd import Value
from modelwright_autograd.explain import (
    ExpressionError,
    draw_graph,
    explain,
    parse_expression,
    save_graph,
)

HAS_DOT = shutil.which("dot") is not None
SVG = "{http://www.w3.org/2000/svg}"

#: Labels no view could carry as they are, and the name each is shown under.
HOSTILE = {
    "a\x00b": "a\\x00b",
    "a\x01b": "a\\x01b",
    "a\x1b[31mb": "a\\x1b[31mb",
    "a\tb": "a\\x09b",
    "a\x85b": "a\\x85b",
    "a\udcffb": "a\\udcffb",
    "a\ufffeb": "a\\ufffeb",
}


def _page_data(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="mw-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def _svg_names(svg: str) -> list[str]:
    root = ElementTree.fromstring(svg)  # raises on a document that is not well formed XML
    return [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "name"]


def _renders(dot_file) -> str:
    """The SVG Graphviz's own ``dot`` makes of the file (it must succeed)."""
    result = subprocess.run(["dot", "-Tsvg", str(dot_file)], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode("utf-8")


@pytest.mark.parametrize("label", list(HOSTILE), ids=[ascii(k) for k in HOSTILE])
def test_a_label_with_a_control_character_keeps_every_view_well_formed(label, tmp_path):
    a, b = Value(2.0, label=label), Value(3.0, label="b")
    out = a * b
    trace = explain(out, html=tmp_path / "p.html")
    shown = HOSTILE[label]
    assert trace.grads == {shown: 3.0, "b": 2.0}
    assert shown in _svg_names(draw_graph(out).svg())
    assert f"d/d{shown} = 3" in trace.to_text()
    assert json.loads(trace.to_json())["grads"] == {shown: 3.0, "b": 2.0}
    for text in (trace.to_text(), trace.to_json(), draw_graph(out).source):
        text.encode("utf-8")  # no lone surrogate left
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    page = (tmp_path / "p.html").read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]", page)
    assert {item[0] for item in _page_data(page)["gradItems"]} == {shown, "b"}


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("label", list(HOSTILE), ids=[ascii(k) for k in HOSTILE])
def test_graphviz_renders_the_dot_text_of_a_hostile_label(label, tmp_path):
    a = Value(2.0, label=label)
    out = a * Value(3.0, label="b")
    out.backward()
    path = save_graph(out, tmp_path / "g.dot")
    rendered = _renders(path)
    ElementTree.fromstring(rendered)
    assert HOSTILE[label] in rendered  # the escape, drawn as text


def test_direction_marks_joiners_and_other_scripts_are_not_escaped():
    for label in ("x\u202eevil", "ab\u200dc", "\u05d0\u05d1", "a\u00a0b", "\u0641\u200c\u064a"):
        trace = explain(Value(2.0, label=label) * 3)
        assert list(trace.grads) == [label]


def test_an_expression_holding_a_nul_or_a_lone_surrogate_is_refused_in_one_line():
    for text, what in (("a\x00*b", "a NUL at column 2"), ("a*\udcffb", "\\udcff (not UTF-8)")):
        with pytest.raises(ExpressionError) as info:
            parse_expression(text, {"a": 1.0, "b": 2.0})
        assert what in str(info.value) and "\n" not in str(info.value)


def test_white_space_python_allows_is_a_space_in_the_labels():
    out = parse_expression("a\t*\x0cb", {"a": 2.0, "b": 3.0})
    assert out.label == "a * b"


def _cli(*args: str | bytes, cwd) -> subprocess.CompletedProcess:
    """The real command, in a child process, with arguments as raw bytes if given so."""
    argv = [sys.executable.encode(), b"-m", b"modelwright_autograd", b"explain"]
    argv += [os.fsencode(a) for a in args]
    return subprocess.run(argv, capture_output=True, cwd=cwd, timeout=120)


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
def test_cli_a_form_feed_in_the_expression_draws_well_formed_files(tmp_path):
    expression = "tanh(a\x0c*b) +\tc"
    outputs = ["--graph", "g.svg", "--html", "p.html"]
    result = _cli(expression, "a=2", "b=3", "c=1", *outputs, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", result.stdout)
    assert b"tanh(a *b) + c" in result.stdout
    assert "tanh(a *b) + c" in _svg_names((tmp_path / "g.svg").read_text())
    page = (tmp_path / "p.html").read_bytes().decode("utf-8")
    assert {item[0] for item in _page_data(page)["gradItems"]} == {"a", "b", "c"}
    result = _cli(expression, "a=2", "b=3", "c=1", "--graph", "g.dot", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    ElementTree.fromstring(_renders(tmp_path / "g.dot"))


def test_cli_an_argument_that_is_not_utf8_is_refused_in_one_line(tmp_path):
    result = _cli(b"a*\xffb", b"a=1", b"b=2", "--graph", "g.svg", cwd=tmp_path)
    assert result.returncode == 2
    err = result.stderr.decode("utf-8")
    assert err.count("\n") == 1 and "lone surrogate \\udcff (not UTF-8) at column 3" in err
    assert "Traceback" not in err and not (tmp_path / "g.svg").exists()


# ---------------------------------------------------------------------- same labels
def _torch_grads(values: list[float], f) -> list[float]:
    xs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    f(*xs).backward()
    return [x.grad.item() for x in xs]


def test_two_leaves_with_one_label_are_two_variables_with_their_own_gradients(tmp_path):
    a1, a2, b = Value(2.0, label="a"), Value(-3.0, label="a"), Value(0.5, label="b")
    out = (a1 * a2).tanh() + a2 * b
    trace = explain(out, html=tmp_path / "p.html")
    expected = _torch_grads([2.0, -3.0, 0.5], lambda x, y, z: (x * y).tanh() + y * z)
    assert list(trace.grads) == ["a", "a#2", "b"]  # in the order the graph reaches them
    assert [trace.grads[k] for k in ("a", "a#2", "b")] == [a1.grad, a2.grad, b.grad]
    assert [a1.grad, a2.grad, b.grad] == pytest.approx(expected, rel=1e-12)
    kinds = {n.name: n.kind for n in trace.nodes if not n.inputs}
    assert kinds == {"a": "variable", "a#2": "variable", "b": "variable"}
    text = trace.to_text()
    assert f"d/da   = {a1.grad:.6g}" in text and f"d/da#2 = {a2.grad:.6g}" in text
    assert {"a", "a#2", "b"} <= set(_svg_names(draw_graph(out).svg()))
    data = _page_data((tmp_path / "p.html").read_text())  # in a browser: test_explain_browser
    assert [item[0] for item in data["gradItems"]] == ["a", "a#2", "b"]


def test_a_label_that_looks_like_a_suffix_is_not_taken_twice():
    xs = [Value(float(k + 1), label=lab) for k, lab in enumerate(["a", "a#2", "a", "a"])]
    out = xs[0] * xs[1] + xs[2] * xs[3]
    trace = explain(out)
    assert len(trace.grads) == 4 == len(set(trace.grads))
    assert list(trace.grads) == ["a", "a#2", "a#3", "a#4"]
    assert list(trace.grads.values()) == [x.grad for x in xs] == [2.0, 1.0, 4.0, 3.0]


def test_long_labels_cut_to_the_same_name_stay_distinct():
    left, right = Value(2.0, label="x" * 30 + "1" + "x" * 30), Value(5.0, label="x" * 61)
    trace = explain(left * right)
    assert len(trace.grads) == 2
    assert sorted(trace.grads.values()) == sorted([left.grad, right.grad]) == [2.0, 5.0]


def test_given_names_win_over_labels():
    a1, a2 = Value(2.0, label="a"), Value(3.0, label="a")
    trace = explain(a1 * a2, {"x": a1, "y": a2})
    assert trace.grads == {"x": 3.0, "y": 2.0}
    assert [n.name for n in trace.nodes if not n.inputs] == ["x", "y"]
