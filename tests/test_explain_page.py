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


def _changes(data, step):
    """The changes of one step (0-based) as ``(element id, slot, old, new)``."""
    ids, slots = data["ids"], data["slots"]
    return [(ids[e], slots[s], old, new) for e, s, old, new in data["changes"][step]]


def _replay(data, upto):
    """The page's slots after ``upto`` backward steps, as the script replays them."""
    state = {}
    for step in range(upto):
        for elem, slot, old, new in _changes(data, step):
            assert state.get((elem, slot), old) == old  # each change starts where the last ended
            state[(elem, slot)] = new
    return state


def test_page_is_built_from_the_trace_and_ends_at_the_engines_gradients():
    trace = _reuse_trace()
    data = _data(page_html(trace))
    assert [s["box"] for s in data["steps"]] == [f"mw-n{s.id}" for s in trace.steps]
    # after the last step, each variable's "gradients so far" item is the engine's gradient
    end = _replay(data, len(trace.steps))
    for k, (name, _, _) in enumerate(data["gradItems"]):
        assert json.loads(end[(f"mw-g{k}", "@grad")]) == trace.grads[name]
    a = next(k for k, item in enumerate(data["gradItems"]) if item[0] == "a")
    assert _replay(data, 1)[(f"mw-g{a}", "text")] == "a = -0.604368"  # via tanh(a*b + c) * a
    assert end[(f"mw-g{a}", "text")] == "a = -0.604368 + -0.63474 = -1.23911"  # a accumulates
    # backward, each change undoes itself: step 4 then back to 3 is step 3
    three = _replay(data, 3)
    for elem, slot, old, _ in _changes(data, 3):
        assert three.get((elem, slot), old) == old


def test_every_label_is_escaped():
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&amp;"
    x = Value(1.5, label=hostile)
    y = Value(2.0, label='"><svg onload=alert(3)>')
    trace = explain(x * y + x)  # the labels name them
    html = page_html(trace)
    assert "<script>alert" not in html and "<img" not in html and "<svg onload" not in html
    parser = _Tags()
    parser.feed(html)
    assert [t for t, _ in parser.tags].count("script") == 2  # the data and the page's own
    assert not any(k.startswith("on") for _, attrs in parser.tags for k in attrs)
    # the script draws the graph from the JSON, putting text in as text only
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", html)
    data = _data(html)  # the JSON still carries the names, unharmed
    assert any(hostile[:19] + "…" + hostile[-19:] in s["sentence"] for s in data["steps"])
    # and in a broken run's view, where x, reused, has a share overwritten: every name in
    # its sentences (the panel, the list, the why) is escaped in the markup, JSON in its data
    html = page_html(explain(x * y + x, broken="assign"))
    assert "<script>alert" not in html and "<img" not in html and "<svg onload" not in html
    parser = _Tags()
    parser.feed(html)
    assert [t for t, _ in parser.tags].count("script") == 3  # two views' data, the page's own
    assert not any(k.startswith("on") for _, attrs in parser.tags for k in attrs)
    broken = _view_data(html, "broken")
    assert any(
        "Goes wrong here" in line and hostile[:19] in line
        for s in broken["steps"]
        for line in s["lines"]
    )


def test_nfkc_names_reach_the_page_as_the_parser_reads_them(tmp_path):
    page = tmp_path / "p.html"
    assert main(["explain", "ﬁ*ａ + ℌ", "ﬁ=2", "ａ=3", "ℌ=1", "--html", str(page)]) == 0
    data = _data(page.read_text())
    assert {item[0] for item in data["gradItems"]} == {"fi", "a", "H"}


def test_big_graphs_fold_their_weights_into_the_fused_nodes():
    model = MLP(1, [16, 16, 1])
    x = Value(0.5, label="x")
    out = model([x])
    params = {f"p{i}": p for i, p in enumerate(model.parameters())}
    trace = explain(out, {"x": x, **params})
    assert len(trace.nodes) > 300  # a 2-layer MLP on one input: hundreds of nodes
    html = page_html(trace, view="graph")
    data = _data(html)
    assert data["view"] == "graph"
    boxes = data["graph"]["nodes"]  # the boxes the script draws (as the window reaches them)
    assert len(boxes) < 100  # every weight and bias is folded into its neuron's dot box
    assert "leaves that each feed one fused node" in html
    assert sum(len(s["rows"]) for s in data["steps"]) == sum(len(s.inputs) for s in trace.steps)


def test_a_network_is_drawn_neuron_by_neuron():
    from benchmarks.explain_page import mlp_trace

    trace, params = mlp_trace([16, 16, 1], 20)
    html = page_html(trace)  # auto: more than NEURON_VIEW_ABOVE nodes, made of neurons
    data = _data(html)
    assert data["view"] == "neurons" and data["samples"] == 20
    assert html.count('<g class="node ') == 2 + 16 + 16 + 1 + 1  # inputs, neurons, loss
    assert "Backpropagation through loss" in html
    # every neuron on every sample is one step, and every trace step belongs to one
    neuron_steps = [s for s in data["steps"] if s["box"].startswith("mw-u")]
    assert len(neuron_steps) == 20 * 33
    # each neuron step's table lists its weights and bias, with what the trace pushed
    by_dot = {s.id: s for s in trace.steps}
    layer2 = next(
        s for s in neuron_steps if s["head"].endswith("layer 2, neuron 1 (sample 1 of 20)")
    )
    assert len(layer2["rows"]) == 16 + 1 and layer2["rows"][-1][0] == "bias"
    pushed = sorted(r[3] for r in layer2["rows"])
    dots = [s for s in by_dot.values() if len(s.inputs) == 33]
    assert any(
        sorted(f"{i.pushed:.6g}" for i in s.inputs[:16] + s.inputs[-1:]) == pushed for s in dots
    )
    # at the end, the weight grads in the table of a neuron's last step are the engine's
    last = {}
    for s in neuron_steps:
        last[s["box"]] = s
    names = {n.id: n.name for n in trace.nodes}
    for s in last.values():
        for row, shown in zip(s["rows"], _weights_of(trace, s)):
            assert row[4] == f"{params[names[shown]].grad:.6g}"
    # dead ReLU neurons have their step, and say why nothing reaches their inputs
    dead = [s for s in neuron_steps if "nothing reaches its" in s["sentence"]]
    assert dead and all("local derivative 0" in s["sentence"] for s in dead)


@pytest.mark.parametrize(
    ("activation", "widths", "points"),
    [("relu", [3, 4, 1], 1), ("relu", [5, 2], 3), ("tanh", [4, 4, 2], 2), ("sigmoid", [3, 1], 4)],
)
def test_the_neuron_view_ends_at_the_engines_gradients(activation, widths, points):
    import random

    from modelwright_autograd.explain.network import find_network

    rng = random.Random(len(widths) * 10 + points)
    model = MLP(2, widths, activation=activation, seed=rng.randrange(100))
    params = {f"p{i}": p for i, p in enumerate(model.parameters())}
    outs = []
    for _ in range(points):
        out = model([Value(rng.uniform(-2, 2)), Value(rng.uniform(-2, 2))])
        outs += out if isinstance(out, list) else [out]
    loss = sum((o * o for o in outs), Value(0.0))
    trace = explain(loss, params)
    html = page_html(trace, view="neurons")
    data = _data(html)
    net = find_network(trace)
    assert net.samples == points
    assert [len(layer) for layer in net.layers] == widths
    # one step per neuron per sample, plus the loss's arithmetic around them
    neuron_steps = [s for s in data["steps"] if s["box"].startswith("mw-u")]
    assert len(neuron_steps) == sum(widths) * points
    # after the last step, every box of the sample shown holds the engine's numbers
    end = _replay(data, len(data["steps"]))
    sample = data["sampleAt"][-1]
    for j, neuron in enumerate(net.neurons):
        inst = neuron.instances[sample]
        out_grad = json.loads(end.get((f"mw-u{j}", "@grad"), "0"))
        assert out_grad == trace.nodes[inst.out].grad  # the engine's, exactly
        dot = trace.nodes[inst.dot]
        if dot.op == "dot":  # the pre-activation shown is the dot's own value
            assert end.get((f"mw-u{j}", "pre"), _initial(html, j, "pre")) == f"pre {dot.data:.6g}"
    # each neuron step's table is what the trace's step pushed to each weight and the bias
    for s in neuron_steps:
        j = int(s["box"][len("mw-u") :])
        shown = int(s["head"].rsplit("(sample ", 1)[1].split(" ")[0]) - 1
        dot_step = next(t for t in trace.steps if t.id == net.neurons[j].instances[shown].dot)
        k = len(dot_step.inputs) // 2
        assert [r[3] for r in s["rows"]] == [
            f"{i.pushed:.6g}" for i in (*dot_step.inputs[:k], dot_step.inputs[-1])
        ]


def _initial(html, j, slot):
    """A neuron box's text as the page's picture draws it, before any step."""
    box = re.search(rf'<g class="node [^"]*" id="mw-u{j}".*?</g>', html, re.S).group(0)
    return re.search(rf'<text class="{slot}"[^>]*>(.*?)</text>', box).group(1)


def _weights_of(trace, step):
    """The weight and bias node ids of the dot node a neuron step ran (from its box)."""
    # the neuron step's rows follow the dot's inputs: w1..wk, then the bias
    head = step["head"]
    sample = int(head.rsplit("(sample ", 1)[1].split(" ")[0]) - 1
    from modelwright_autograd.explain.network import find_network

    net = find_network(trace)
    neuron = net.neurons[int(step["box"][len("mw-u") :])]
    dot = trace.nodes[neuron.instances[sample].dot]
    k = len(dot.inputs) // 2
    return [*dot.inputs[:k], dot.inputs[-1]]


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


def _view_data(html, view):
    """The JSON of a view the page parses when first switched to."""
    match = re.search(rf'<script type="application/json" id="mw-data-{view}">(.*?)</script>', html)
    return json.loads(match.group(1))


def test_the_broken_view_replays_the_broken_run_and_marks_where_it_goes_wrong():
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    trace = explain(a * b + a, broken="assign")
    html = page_html(trace)
    assert _data(html)["view"] == "graph"  # the page opens on the right pass
    data = _view_data(html, "broken")
    assert [s["box"] for s in data["steps"]] == [f"mw-n{s.id}" for s in trace.broken.trace.steps]
    end = _replay(data, len(data["steps"]))
    shown = {
        name: json.loads(end[(f"mw-g{k}", "@grad")])
        for k, (name, _, _) in enumerate(data["gradItems"])
    }
    assert shown == trace.broken.trace.grads == {"a": -3.0, "b": 2.0}  # = kept a*b's b for a
    assert end[("mw-g0", "text")] == "a = -3"  # overwritten, not 1 + -3
    # step 2 (a*b writes over the sum's 1) goes wrong: its box is marked from then on
    assert [s.get("wrong") for s in data["steps"]] == [None, True]
    box = data["steps"][1]["box"]
    assert (box, "@mark") not in _replay(data, 1) and end[(box, "@mark")] == "wrong"
    # the names in what it says are isolated, as in every sentence of the page
    said = "v1 writes -3 into a's grad (=), overwriting the 1 that v2 pushed at step 1"
    assert trace.broken.marks[2].startswith(said)
    isolated = "\u2068v1\u2069 writes -3 into \u2068a\u2069's grad (=), overwriting the 1 that "
    assert data["steps"][1]["lines"][-1].startswith(f"Goes wrong here: {isolated}\u2068v2\u2069")
    assert "<li class=wrong>Step 2:" in html
    assert "<bdi class='var'>a</bdi> = -2 right, -3 broken (wrong)</li>" in html
