"""The interactive page (``explain --html``): self-contained, built from the trace, every
label escaped. What it does in a real browser is tested in tests/test_explain_browser.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from modelwright_autograd import MLP, Value
from modelwright_autograd.cli import main
from modelwright_autograd.explain import explain, parse_assignments, parse_expression
from modelwright_autograd.explain.page import Page, page_html


def _data(html):
    """The JSON the page's script reads."""
    match = re.search(r'<script type="application/json" id="mw-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of every <script>."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def _reuse_trace():
    variables = parse_assignments(["a=2", "b=-0.5", "c=0.3"])
    return explain(parse_expression("tanh(a*b + c) * a", variables), variables)


def test_cli_writes_one_self_contained_page(tmp_path, capsys):
    page = tmp_path / "page.html"
    args = ["explain", "tanh(a*b + c) * a", "a=2", "b=-0.5", "c=0.3", "--html", str(page)]
    assert main(args) == 0
    assert f"page written to {page}" in capsys.readouterr().err
    html = page.read_text()
    parser = _Tags()
    parser.feed(html)
    for tag, attrs in parser.tags:  # nothing is loaded from anywhere
        assert tag not in ("link", "img", "iframe", "object", "embed"), tag
        assert "src" not in attrs, (tag, attrs)
        for key, value in attrs.items():
            if key != "xmlns":  # a namespace name, never fetched
                assert not (value or "").startswith(("http:", "https:", "//")), value
    assert not re.search(r"\b(fetch|XMLHttpRequest|import\s*\(|WebSocket)\b", html)
    assert "default-src 'none'" in html  # and the browser is told to refuse any fetch
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]


def test_page_is_built_from_the_trace_and_ends_at_the_engines_gradients():
    trace = _reuse_trace()
    data = _data(page_html(trace))
    assert [s["id"] for s in data["steps"]] == [s.id for s in trace.steps]
    # the last entry of each variable's history is the engine's gradient, exactly
    for name, node_id in data["gradNodes"]:
        assert data["history"][str(node_id)][-1][1] == trace.grads[name]
    a = next(node_id for name, node_id in data["gradNodes"] if name == "a")
    first, second = data["history"][str(a)]
    assert first[2] == "-0.604368"  # via tanh(a*b + c) * a, at step 1
    assert second[2] == "-0.604368 + -0.63474 = -1.23911"  # a visibly accumulates


def test_every_label_is_escaped():
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&amp;"
    x = Value(1.5, label=hostile)
    y = Value(2.0, label='"><svg onload=alert(3)>')
    trace = explain(x * y + x, {"x": x, "y": y})
    html = page_html(trace)
    assert "<script>alert" not in html and "<img" not in html and "<svg onload" not in html
    parser = _Tags()
    parser.feed(html)
    assert [t for t, _ in parser.tags].count("script") == 2  # the data and the page's own
    assert not any(k.startswith("on") for _, attrs in parser.tags for k in attrs)
    data = _data(html)  # the JSON still carries the names, unharmed
    assert {n["name"] for n in data["nodes"]} >= {hostile[:19] + "…" + hostile[-19:]}


def test_nfkc_names_reach_the_page_as_the_parser_reads_them(tmp_path):
    page = tmp_path / "p.html"
    assert main(["explain", "ﬁ*ａ + ℌ", "ﬁ=2", "ａ=3", "ℌ=1", "--html", str(page)]) == 0
    data = _data(page.read_text())
    assert {name for name, _ in data["gradNodes"]} == {"fi", "a", "H"}


def test_big_graphs_fold_their_weights_into_the_fused_nodes():
    model = MLP(1, [16, 16, 1])
    x = Value(0.5, label="x")
    out = model([x])
    params = {f"p{i}": p for i, p in enumerate(model.parameters())}
    trace = explain(out, {"x": x, **params})
    assert len(trace.nodes) > 300  # a 2-layer MLP on one input: hundreds of nodes
    html = page_html(trace)
    boxes = html.count('<g class="node ')
    assert boxes < 100  # every weight and bias is folded into its neuron's dot box
    assert "leaves that each feed one fused node" in html
    data = _data(html)
    assert sum(len(s["rows"]) for s in data["steps"]) == sum(len(s.inputs) for s in trace.steps)


def test_explain_in_python_writes_the_page_and_notebooks_show_it(tmp_path):
    a = Value(3.0, label="a")
    trace = explain(a * a, html=str(tmp_path / "p.html"))
    assert (tmp_path / "p.html").read_text().startswith("<!DOCTYPE html>")
    inline = Page(trace)._repr_html_()
    assert inline.startswith("<iframe srcdoc=") and "<script>" not in inline
    with pytest.raises(OSError, match="cannot write"):
        explain(Value(1.0, label="b") * 2.0, html=str(tmp_path))  # a folder: refused first


def test_pictures_and_pages_need_no_graphviz(tmp_path):
    # with the graphviz package hidden, SVG pictures and pages still work, and PNG says so
    import subprocess
    import sys

    code = f"""
import sys
sys.modules["graphviz"] = None  # any import of it now fails
import warnings
from modelwright_autograd import Value
from modelwright_autograd.explain import GraphvizMissingWarning, draw_graph, explain, save_graph
a = Value(2.0, label="a")
out = a * a
explain(out, html={str(tmp_path / "p.html")!r})
save_graph(out, {str(tmp_path / "g.svg")!r})
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    written = save_graph(out, {str(tmp_path / "g.png")!r})
assert written.suffix == ".svg", written
assert "graphviz Python package is not installed" in str(caught[0].message)
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.svg", "p.html"]


def test_the_trace_imports_none_of_its_views():
    # one direction only: narrate/page/picture import trace, never the other way round
    import ast
    from pathlib import Path

    import modelwright_autograd.explain.trace as trace_module

    tree = ast.parse(Path(trace_module.__file__).read_text("utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    }
    assert not imported & {"page", "picture", "narrate", "command"}, imported
