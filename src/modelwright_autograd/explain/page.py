"""The interactive page: one self-contained HTML file that steps through a backward pass.

Everything the page shows comes from a ``Trace`` (the one ``--json`` prints), and every
number and sentence is formatted here, in Python. The page has one to three views:

* ``"graph"``: every value is a box (``picture.py``'s layout), every page has it;
* ``"neurons"``: a network drawn as layers of neurons (``neuron_view.py``), one box per
  neuron showing its pre-activation, output and gradient on one sample at a time, the
  loss's own arithmetic one box; stepping backward walks neuron by neuron;
* ``"broken"``: the trace's broken run (``trace.broken``, ``explain --break``) drawn as
  the graph view is, its steps in the order the broken walk ran them, the boxes and steps
  where it goes wrong marked.

A selector switches between the views at the same step of the trace; ``view`` chooses
the one it opens with (``"auto"``: neurons for graphs of more than ``NEURON_VIEW_ABOVE``
nodes). The other views' data are JSON script elements the page parses only when first
switched to. Either way the script only replays prepared changes: for each step, the
list of ``[element id, slot, text before, text after]`` that the step changes (ids and
slots numbered, to keep the file small; a slot is the element's child of that class, or
``@state``/``@grad``/``@mark`` for its ``data-state``/``data-grad``/``data-mark``
attribute; an edge's state follows its node's), so a step costs what it changes, not the
graph's size. The graph view's picture is JSON too (boxes, edges, labels) that the
script draws only near the window: boxes within half a window of it, the edges with an
end in it and the labels near it, kept in a grid of cells; a step, a scroll or a zoom
draws what comes near and removes what is a window away, and a box drawn later shows the
replay's latest text, so a 5,000-node graph is a few thousand elements in the page.
Nothing is fetched: styles and script are inline, and every piece of text from the trace
is escaped (in the markup by ``html.escape``, in the embedded JSON by escaping ``<``,
``>`` and ``&``; the script writes text with ``textContent`` only).
"""

from __future__ import annotations

import json
import os
import re
from html import escape
from importlib import resources
from pathlib import Path

from ..files import atomic_write, check_writable
from . import picture
from .network import find_network
from .neuron_view import loss_name, neuron_view
from .picture import clip, edge_label, edge_paths, layout, node_lines, sum_text
from .replay import PREFIX, Changes, iso, sentence
from .trace import (
    BREAKS,
    LEGEND,
    BrokenRun,
    Step,
    Trace,
    fmt,
    joined,
    json_number,
    local_text,
    shorten_middle,
)

#: ``view="auto"`` draws neurons when the graph has more nodes than this (and has neurons).
NEURON_VIEW_ABOVE = 200
VIEWS = ("auto", "graph", "neurons")


def _grad_text(parts: list[str], total: float) -> str:
    """``1 + 2 = 3`` once a value has collected on several paths, else ``3``."""
    text = fmt(total)
    if len(parts) > 1:
        shown = parts if len(parts) <= 4 else [*parts[:2], "...", parts[-1]]
        text = f"{' + '.join(shown)} = {text}"
    return text


def _graph_view(trace: Trace, run: BrokenRun | None = None) -> tuple[dict, str]:
    """The graph view: its data for the script (the picture too, drawn by the script as
    the window reaches it) and a note on folded leaves. With ``run``, the "broken" view of
    that broken run (``trace`` is ``run.trace``): its marked steps are marked."""
    where = layout(trace)
    nodes = trace.nodes
    ch = Changes()
    totals: dict[int, float] = {}
    terms: dict[int, list[str]] = {}
    variables = {n.name: n.id for n in nodes if n.kind == "variable"}
    grad_items = [[name, variables.get(shorten_middle(name), -1)] for name in trace.grads]
    item_of: dict[int, list[int]] = {}
    for k, (_, node_id) in enumerate(grad_items):
        item_of.setdefault(node_id, []).append(k)

    def show(node_id: int) -> None:
        """Set a node's box and its item in "gradients so far" to its current total."""
        text = _grad_text(terms[node_id], totals[node_id])
        if node_id in where.x:
            ch.set(f"{PREFIX}-n{node_id}", "grad", clip(f"grad {fmt(totals[node_id])}"))
            ch.set(f"{PREFIX}-n{node_id}", "sum", sum_text(terms[node_id]))
            ch.set(f"{PREFIX}-n{node_id}", "@grad", json.dumps(json_number(totals[node_id])))
        for k in item_of.get(node_id, []):
            ch.set(f"{PREFIX}-g{k}", "text", f"{grad_items[k][0]} = {text}")
            ch.set(f"{PREFIX}-g{k}", "@grad", json.dumps(json_number(totals[node_id])))

    for n in nodes:  # the first frame: before the pass (as ``to_svg(before_pass=True)``)
        prior = trace.before.get(n.name, 0.0) if n.kind == "variable" else 0.0
        if prior != 0.0:
            totals[n.id], terms[n.id] = prior, [f"{fmt(prior)} (before)"]
        shown = "-" if n.kind == "constant" else fmt(prior)
        ch.start(f"{PREFIX}-n{n.id}", "grad", clip(f"grad {shown}"))
        ch.start(f"{PREFIX}-n{n.id}", "@grad", json.dumps(prior))
    for k, (name, node_id) in enumerate(grad_items):
        prior = totals.get(node_id, 0.0)
        ch.start(f"{PREFIX}-g{k}", "text", f"{name} = {_grad_text(terms.get(node_id, []), prior)}")
        ch.start(f"{PREFIX}-g{k}", "@grad", json.dumps(prior))
    for s in trace.steps:
        for k, i in enumerate(s.inputs):
            if i.id not in where.folded:
                ch.start(f"{PREFIX}-e{s.id}-{k}", "label", edge_label(i.role, ""))

    ch_start = dict(ch.state)
    steps = []
    previous: Step | None = None
    for s in trace.steps:
        ch.next_step()
        if previous is not None:
            ch.set(f"{PREFIX}-n{previous.id}", "@state", "done")
        else:  # the seed: backward() sets the output's grad to 1 before any rule runs
            root = nodes[-1]
            totals[root.id], terms[root.id] = root.grad, [fmt(root.grad)]
            show(root.id)
        ch.set(f"{PREFIX}-n{s.id}", "@state", "current")
        mark = joined(run.said[s.step], iso) if run and s.step in run.said else None
        if mark:  # the box stays marked from here on
            ch.set(f"{PREFIX}-n{s.id}", "@mark", "wrong")
        rows = []
        for k, i in enumerate(s.inputs):
            rows.append([i.node, i.role, fmt(i.data), local_text(i), fmt(i.pushed)])
            if i.id not in where.folded:  # its state follows the node's (the script sets it)
                ch.set(f"{PREFIX}-e{s.id}-{k}", "label", edge_label(i.role, fmt(i.pushed)))
            if i.pushed is None:
                continue
            if run and run.mode == "assign":  # = : what was there is gone
                totals[i.id], terms[i.id] = 0.0, []
            totals[i.id] = totals.get(i.id, 0.0) + i.pushed
            terms.setdefault(i.id, []).append(fmt(i.pushed))
            show(i.id)
        arrived = _grad_text(terms.get(s.id, []), totals.get(s.id, s.grad))
        said = sentence(s)
        lines = [f"grad in = {arrived}"]
        lines += [said.split(": ", 1)[1]] if s.op == "dot_relu" and not s.data > 0 else []
        if mark:
            wrong = "Goes wrong here" if s.step == run.wrong_step else "Wrong here too"
            lines.append(f"{wrong}: {mark}")
            said = f"{said} {wrong}: {mark}"
        steps.append(
            {
                "box": f"{PREFIX}-n{s.id}",
                "head": f"{'Broken run, step' if run else 'Backward step'} {s.step} of "
                f"{len(trace.steps)}: {iso(s.node)}",
                "lines": lines,
                "cols": ["input", "role", "data", "local", "pushed"],
                "rows": rows,
                "sentence": said,
                "status": said,
            }
            | ({"wrong": s.step == run.wrong_step} if mark else {})
        )
        previous = s
    forward = [
        {
            "box": f"{PREFIX}-n{n.id}",
            "sentence": f"{iso(n.name)}: {n.op} of "
            + ", ".join(iso(nodes[i].name) for i in n.inputs)
            + f" = {fmt(n.data)}",
            "data": clip(f"data {fmt(n.data)}"),
        }
        for n in nodes
        if n.inputs and n.id in where.x
    ]
    folded = len(where.folded)
    note = (
        f"{folded} leaves that each feed one fused node (sum or dot) are folded into that "
        "node's box; the step panel lists every input."
        if folded
        else ""
    )
    folded_count = where.folded_count()
    drawn = [  # a box is [node id, x, y, kind, its lines of text before the pass]
        [
            n.id,
            where.x[n.id],
            where.y[n.id],
            n.kind,
            *node_lines(trace, n.id, folded_count.get(n.id, 0), before_pass=True),
        ]
        for n in nodes
        if n.id in where.x
    ]
    # an edge is [user, input position, input, label y, label, bend], and its path if it
    # runs in a lane (the script draws the others' curves as ``edge_paths`` does)
    edges = [
        [dst, k, src, ly, ch_start[(f"{PREFIX}-e{dst}-{k}", "label")], bend]
        + ([path] if in_lane else [])
        for dst, k, src, path, _, ly, bend, in_lane in edge_paths(trace, where)
    ]
    height = max([where.height, *(e[3] + picture.MARGIN for e in edges)])  # labels spread down
    data = {
        "view": "broken" if run else "graph",
        "steps": steps,
        **ch.data(),
        "forward": forward,
        "gradItems": [
            [name, ch_start[(f"{PREFIX}-g{k}", "text")], ch_start[(f"{PREFIX}-g{k}", "@grad")]]
            for k, (name, _) in enumerate(grad_items)
        ],
        "samples": 0,
        **({"ready": f"The same pass, broken ({run.mode}): {BREAKS[run.mode]}."} if run else {}),
        "graph": {
            "title": f"computation graph of {trace.output}",
            "size": [round(where.width), round(height)],
            "box": [picture.BOX_W, picture.BOX_H],
            "fill": picture.FILL,
            "stroke": picture.STROKE,
            "nodes": drawn,
            "edges": edges,
        },
    }
    return data, note


def _script_json(data: dict) -> str:
    """JSON that can sit inside a <script> element: no ``<``, ``>`` or ``&`` survives."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _about(data: dict, note: str, tail: str) -> str:
    """What the page says below the panel about one view: its note, its steps as an
    ordered list (the one where a broken run goes wrong marked), then ``tail``."""
    view = data["view"]
    steps = "".join(
        f"<li{' class=wrong' if s.get('wrong') else ''}>{escape(s['sentence'])}</li>"
        for s in data["steps"]
    )
    return (
        f"<div id='{PREFIX}-about-{view}' class='about'>"
        + (f"<p class='note'>{escape(note)}</p>" if note else "")
        + f"<h2>The backward pass, step by step ({len(data['steps'])} steps)</h2>"
        f"<ol class='{PREFIX}-steps' id='{PREFIX}-steps-{view}'>{steps}</ol>{tail}</div>"
    )


def _broken_about(run: BrokenRun) -> str:
    """The end of the broken view's text: each gradient, right and broken, and why."""
    grads = "".join(
        f"<li><bdi class='var'>{escape(name)}</bdi> = {escape(fmt(right))} right, "
        f"{escape(fmt(run.trace.grads[name]))} broken"
        f"{' (wrong)' if name in run.wrong else ''}</li>"
        for name, right in run.right.items()
    )
    why = "".join(f"<li>{escape(line)}</li>" for line in run.why_with(iso))
    return (
        f"<h2>Gradients, right and broken</h2><ul class='mono' id='{PREFIX}-broken-grads'>"
        f"{grads}</ul><h2>Why</h2><ul id='{PREFIX}-why'>{why}</ul>"
    )


def page_html(trace: Trace, view: str = "auto") -> str:
    """The whole page, as one string of HTML. ``view`` is the view it opens with: "graph"
    (a box per value), "neurons" (a box per neuron, for networks) or "auto" (neurons for a
    network of more than NEURON_VIEW_ABOVE nodes). A network's page carries both views
    and a selector between them."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    net = find_network(trace)
    if view == "neurons" and net is None:
        raise ValueError("view='neurons' needs a graph made of neurons (dot or dot_relu nodes)")
    graph, graph_note = _graph_view(trace)
    accumulations = "".join(f"<li>{escape(line)}</li>" for line in trace.accumulations())
    accumulations = accumulations or "<li>No value is used more than once.</li>"
    about = [
        _about(
            graph,
            graph_note,
            f"<h2>Where gradient accumulates</h2><ul class='mono'>{accumulations}</ul>",
        )
    ]
    views, svg, title = [graph], "", trace.output
    if net is not None:
        neurons, svg, note = neuron_view(trace, net)
        # every weight collects once per sample: the panel's table says so
        about.append(
            _about(
                neurons,
                note,
                "<h2>Where gradient accumulates</h2><ul class='mono'><li>Each weight and bias "
                "adds up (+=) what each sample's step pushed to it: the panel's column "
                '"weight grad so far" shows the sum at each step.</li></ul>',
            )
        )
        views.append(neurons)
        if re.fullmatch(r"v\d+", trace.output):
            title = loss_name(trace, net)
        if view == "neurons" or (view == "auto" and len(trace.nodes) > NEURON_VIEW_ABOVE):
            views.reverse()
            about.reverse()
    if trace.broken is not None:  # a second track: the same pass, broken
        broken, broken_note = _graph_view(trace.broken.trace, trace.broken)
        note = f"{broken['ready']} {broken_note}".strip()
        about.append(_about(broken, note, _broken_about(trace.broken)))
        views.append(broken)
    legend = "".join(
        f"<dt>{escape(name)}</dt><dd>{escape(meaning)}</dd>" for name, meaning in LEGEND[4:]
    )
    grads = "".join(
        f"<li><bdi class='var'>{escape(name)}</bdi> = {escape(fmt(g))}</li>"
        for name, g in trace.grads.items()
    )
    grads = f"<ul class='mono' id='mw-final'>{grads}</ul>"
    if len(trace.grads) > 20:
        grads = f"<details><summary>{len(trace.grads)} gradients</summary>{grads}</details>"
    samples = "".join(
        f"<option value='{k}'>sample {k + 1} of {net.samples}</option>"
        for k in range(net.samples if net else 0)
    )
    choices = {"neurons": "neurons", "graph": "every value" if net else "the right pass"}
    choices["broken"] = f"broken ({trace.broken.mode})" if trace.broken else ""
    view_options = "".join(
        f"<option value='{v['view']}'>{choices[v['view']]}</option>" for v in views
    )
    other = "".join(  # the views not shown first, parsed when first switched to
        f'<script type="application/json" id="mw-data-{v["view"]}">{_script_json(v)}</script>'
        for v in views[1:]
    )
    template = resources.files(__package__).joinpath("page_template.html").read_text("utf-8")
    replacements = {
        "@TITLE@": escape(f"Backpropagation through {title}"),
        "@OUTPUT@": escape(title),
        "@VALUE@": escape(fmt(trace.value)),
        "@VIEW@": views[0]["view"],
        "@SVG@": svg,
        "@LEGEND@": legend,
        "@GRADS@": grads,
        "@ABOUT@": "".join(about),
        "@SAMPLES@": samples,
        "@VIEWS@": view_options,
        "@DATA@": _script_json(views[0]),
        "@OTHER@": other,
    }
    # one pass, so text put in (a label that reads "@DATA@") is never replaced again
    return re.sub(r"@[A-Z]+@", lambda m: replacements[m.group()], template)


def write_page(trace: Trace, path: str | os.PathLike[str], view: str = "auto") -> Path:
    """Write the page for ``trace`` to ``path`` (checked first, replaced atomically)."""
    path = check_writable(path)
    html = page_html(trace, view)
    atomic_write(path, lambda f: f.write(html))
    return path


class Page:
    """The page of a trace for a notebook: shows itself inline, in a sandboxed iframe."""

    def __init__(self, trace: Trace, height: int = 640, view: str = "auto") -> None:
        self.trace = trace
        self.height = height
        self.view = view

    def _repr_html_(self) -> str:
        html = page_html(self.trace, self.view)
        return (
            f'<iframe srcdoc="{escape(html, quote=True)}" sandbox="allow-scripts" '
            f'style="width:100%;height:{self.height}px;border:1px solid #ccc" '
            f'title="{escape("backward pass of " + self.trace.output)}"></iframe>'
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_page(self.trace, path, self.view)
