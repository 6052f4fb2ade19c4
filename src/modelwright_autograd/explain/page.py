"""The interactive page: one self-contained HTML file that steps through a backward pass.

Everything the page shows comes from a ``Trace`` (the one ``--json`` prints), and every
number and sentence is formatted here, in Python. The page has one or two views:

* ``"graph"``: every value is a box (``picture.py``'s layout), every page has it;
* ``"neurons"``: a network drawn as layers of neurons (``network.py``), one box per neuron
  showing its pre-activation, output and gradient on one sample at a time, the loss's own
  arithmetic one box; stepping backward walks neuron by neuron.

A network's page carries both, and a selector switches between them at the same step of
the trace; ``view`` chooses the one it opens with (``"auto"``: neurons for graphs of more
than ``NEURON_VIEW_ABOVE`` nodes). The other view's data is a JSON script element the
page parses only when first switched to. Either way the script only replays prepared
changes: for each step, the list of ``[element id, slot, text before, text after]`` that
the step changes (ids and slots numbered, to keep the file small; a slot is the
element's child of that class, or ``@state``/``@grad`` for its ``data-state``/
``data-grad`` attribute; an edge's state follows its node's), so a step costs what it
changes, not the graph's size. The graph view's picture is JSON too (boxes, edges,
labels) that the script draws only near the window: boxes within half a window of it,
the edges with an end in it and the labels near it, kept in a grid of cells; a step, a
scroll or a zoom draws what comes near and removes what is a window away, and a box
drawn later shows the replay's latest text, so a 5,000-node graph is a few thousand
elements in the page. Nothing is fetched: styles and script are inline, and every piece
of text from the trace is escaped (in the markup by ``html.escape``, in the embedded
JSON by escaping ``<``, ``>`` and ``&``; the script writes text with ``textContent``
only).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from html import escape
from importlib import resources
from pathlib import Path

from ..files import atomic_write, check_writable
from . import picture
from .network import Instance, Network, Neuron, find_network
from .picture import _cut, edge_label, edge_paths, layout, node_lines, sum_text
from .trace import LEGEND, Step, Trace, _fmt, _json_number, _short, local_text

#: ``view="auto"`` draws neurons when the graph has more nodes than this (and has neurons).
NEURON_VIEW_ABOVE = 200
VIEWS = ("auto", "graph", "neurons")
PREFIX = "mw"  # the SVG ids the script looks up: mw-n<id>, mw-e<node>-<input position>
#: Labels from the trace are wrapped in these (Unicode's first-strong and pop isolates,
#: the plain-text form of ``unicode-bidi: isolate``) wherever they sit inside a sentence,
#: so a right-to-left override in a label cannot reorder the words around it.
FSI, PDI = "\u2068", "\u2069"


def _iso(name: str) -> str:
    return f"{FSI}{name}{PDI}"


class _Changes:
    """The page's state, slot by slot, and the changes each step makes to it. A change is
    ``[element, slot, text before, text after]``, the element and the slot given by their
    place in ``ids`` and ``slots`` (a number is shorter than a name repeated 80,000 times)."""

    def __init__(self) -> None:
        self.state: dict[tuple[str, str], str] = {}
        self.steps: list[list[list]] = []
        self.ids: dict[str, int] = {}
        self.slots: dict[str, int] = {}

    def data(self) -> dict:
        """The changes, as the page's script reads them."""
        return {"changes": self.steps, "ids": list(self.ids), "slots": list(self.slots)}

    def start(self, elem: str, slot: str, value: str) -> None:
        self.state[(elem, slot)] = value

    def next_step(self) -> None:
        self.steps.append([])

    def set(self, elem: str, slot: str, value: str) -> None:
        old = self.state.get((elem, slot), "")
        if old != value:
            elem_at = self.ids.setdefault(elem, len(self.ids))
            slot_at = self.slots.setdefault(slot, len(self.slots))
            self.steps[-1].append([elem_at, slot_at, old, value])
            self.state[(elem, slot)] = value


def _grad_text(parts: list[str], total: float) -> str:
    """``1 + 2 = 3`` once a value has collected on several paths, else ``3``."""
    text = _fmt(total)
    if len(parts) > 1:
        shown = parts if len(parts) <= 4 else [*parts[:2], "...", parts[-1]]
        text = f"{' + '.join(shown)} = {text}"
    return text


def _sentence(s: Step) -> str:
    """One step in words (the ordered list and the status line)."""
    if s.op == "dot_relu" and not s.data > 0.0:
        return (
            f"Step {s.step}: {_iso(s.node)} (dot_relu) has output 0: local derivative 0, "
            f"nothing reaches its {len(s.inputs)} inputs."
        )
    pushed = [f"{_fmt(i.pushed)} to {_iso(i.node)}" for i in s.inputs if i.pushed is not None]
    if len(pushed) > 6:  # a fused node: the panel lists every input
        pushed[4:] = [f"and {len(pushed) - 4} more"]
    pushes = ", ".join(pushed)
    return f"Step {s.step}: {_iso(s.node)} ({s.op}) has grad {_fmt(s.grad)}; " + (
        f"it pushes {pushes}." if pushes else "its inputs are constants."
    )


def _graph_view(trace: Trace) -> tuple[dict, str]:
    """The graph view: its data for the script (the picture too, drawn by the script as
    the window reaches it) and a note on folded leaves."""
    where = layout(trace)
    nodes = trace.nodes
    ch = _Changes()
    totals: dict[int, float] = {}
    terms: dict[int, list[str]] = {}
    variables = {n.name: n.id for n in nodes if n.kind == "variable"}
    grad_items = [[name, variables.get(_short(name), -1)] for name in trace.grads]
    item_of: dict[int, list[int]] = {}
    for k, (_, node_id) in enumerate(grad_items):
        item_of.setdefault(node_id, []).append(k)

    def show(node_id: int) -> None:
        """Set a node's box and its item in "gradients so far" to its current total."""
        text = _grad_text(terms[node_id], totals[node_id])
        if node_id in where.x:
            ch.set(f"{PREFIX}-n{node_id}", "grad", _cut(f"grad {_fmt(totals[node_id])}"))
            ch.set(f"{PREFIX}-n{node_id}", "sum", sum_text(terms[node_id]))
            ch.set(f"{PREFIX}-n{node_id}", "@grad", json.dumps(_json_number(totals[node_id])))
        for k in item_of.get(node_id, []):
            ch.set(f"{PREFIX}-g{k}", "text", f"{grad_items[k][0]} = {text}")
            ch.set(f"{PREFIX}-g{k}", "@grad", json.dumps(_json_number(totals[node_id])))

    for n in nodes:  # the first frame: before the pass (as ``to_svg(before_pass=True)``)
        prior = trace.before.get(n.name, 0.0) if n.kind == "variable" else 0.0
        if prior != 0.0:
            totals[n.id], terms[n.id] = prior, [f"{_fmt(prior)} (before)"]
        shown = "-" if n.kind == "constant" else _fmt(prior)
        ch.start(f"{PREFIX}-n{n.id}", "grad", _cut(f"grad {shown}"))
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
        else:  # the seed: backward() sets the output's grad to 1
            totals[s.id], terms[s.id] = s.grad, [_fmt(s.grad)]
            show(s.id)
        ch.set(f"{PREFIX}-n{s.id}", "@state", "current")
        rows = []
        for k, i in enumerate(s.inputs):
            rows.append([i.node, i.role, _fmt(i.data), local_text(i), _fmt(i.pushed)])
            if i.id not in where.folded:  # its state follows the node's (the script sets it)
                ch.set(f"{PREFIX}-e{s.id}-{k}", "label", edge_label(i.role, _fmt(i.pushed)))
            if i.pushed is None:
                continue
            totals[i.id] = totals.get(i.id, 0.0) + i.pushed
            terms.setdefault(i.id, []).append(_fmt(i.pushed))
            show(i.id)
        arrived = _grad_text(terms.get(s.id, []), totals.get(s.id, s.grad))
        sentence = _sentence(s)
        steps.append(
            {
                "box": f"{PREFIX}-n{s.id}",
                "head": f"Backward step {s.step} of {len(trace.steps)}: {_iso(s.node)}",
                "lines": [f"grad in = {arrived}"]
                + ([sentence.split(": ", 1)[1]] if s.op == "dot_relu" and not s.data > 0 else []),
                "cols": ["input", "role", "data", "local", "pushed"],
                "rows": rows,
                "sentence": sentence,
                "status": sentence,
            }
        )
        previous = s
    forward = [
        {
            "box": f"{PREFIX}-n{n.id}",
            "sentence": f"{_iso(n.name)}: {n.op} of "
            + ", ".join(_iso(nodes[i].name) for i in n.inputs)
            + f" = {_fmt(n.data)}",
            "data": _cut(f"data {_fmt(n.data)}"),
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
        "view": "graph",
        "steps": steps,
        **ch.data(),
        "forward": forward,
        "gradItems": [
            [name, ch_start[(f"{PREFIX}-g{k}", "text")], ch_start[(f"{PREFIX}-g{k}", "@grad")]]
            for k, (name, _) in enumerate(grad_items)
        ],
        "samples": 0,
        "graph": {
            "title": f"computation graph of {trace.output}",
            "size": [round(where.width), round(height)],
            "box": [picture.BOX_W, picture.BOX_H],
            "fill": picture._FILL,
            "stroke": picture._STROKE,
            "nodes": drawn,
            "edges": edges,
        },
    }
    return data, note


# The neuron view's layout: a column per layer (the inputs first, the loss last).
N_W, N_H, N_GAP_X, N_GAP_Y, N_MARGIN = 168, 68, 96, 10, 16


def _neuron_view(trace: Trace, net: Network) -> tuple[dict, str, str]:
    """The neuron view: its data for the script, its SVG and a note saying what it shows."""
    nodes = trace.nodes
    columns: list[list[str]] = [[f"{PREFIX}-i{k}" for k in range(len(net.inputs[0]))]]
    columns += [[f"{PREFIX}-u{j}" for j in layer] for layer in net.layers]
    columns.append([f"{PREFIX}-loss"])
    tallest = max(len(c) for c in columns)
    pitch = N_H + N_GAP_Y
    where: dict[str, tuple[float, float]] = {}
    for c, column in enumerate(columns):
        top = N_MARGIN + (tallest - len(column)) * pitch / 2
        for r, box in enumerate(column):
            where[box] = (N_MARGIN + c * (N_W + N_GAP_X), top + r * pitch)
    width = 2 * N_MARGIN + len(columns) * N_W + (len(columns) - 1) * N_GAP_X
    height = 2 * N_MARGIN + tallest * pitch - N_GAP_Y

    # Which view step each trace step belongs to: one per neuron on a sample, and one per
    # run of the loss's own steps.
    def unit_of(s: Step) -> tuple:
        j = net.unit.get(s.id)
        if j is None:
            return ("loss",)
        sample = next(
            k for k, inst in net.neurons[j].instances.items() if s.id in (inst.dot, inst.out)
        )
        return ("neuron", j, sample)

    groups: list[tuple[tuple, list[Step]]] = []
    for s in trace.steps:
        u = unit_of(s)
        if groups and groups[-1][0] == u:
            groups[-1][1].append(s)
        else:
            groups.append((u, [s]))
    first_sample = next((u[2] for u, _ in groups if u[0] == "neuron"), 0)
    samples_at = []  # the sample shown at each position (0 = before the pass)
    shown = first_sample
    for u, _ in groups:
        shown = u[2] if u[0] == "neuron" else shown
        samples_at.append(shown)
    samples_at.insert(0, samples_at[0] if samples_at else first_sample)

    totals: dict[int, float] = {}
    for n in nodes:
        if n.kind == "variable" and trace.before.get(n.name, 0.0) != 0.0:
            totals[n.id] = trace.before[n.name]

    def grad_of(node_id: int) -> str:
        if nodes[node_id].kind == "constant":
            return "-"
        return _fmt(totals.get(node_id, 0.0))

    done: set[tuple] = set()  # the units whose step has run: ("neuron", j, sample), ("loss",)
    loss_box = f"{PREFIX}-loss"
    pre = {d: _pre_activation(trace, d) for n in net.neurons for d in _dots(n)}

    def frame(sample: int, current: tuple | None, setter: Callable[[str, str, str], None]) -> None:
        """Every box as it stands now, on ``sample``, written with ``setter``."""
        xs = net.inputs.get(sample, ())
        for k, x in enumerate(xs):
            setter(f"{PREFIX}-i{k}", "data", _cut(f"data {_fmt(nodes[x].data)}"))
            setter(f"{PREFIX}-i{k}", "grad", _cut(f"grad {grad_of(x)}"))
        for j, neuron in enumerate(net.neurons):
            box = f"{PREFIX}-u{j}"
            inst = neuron.instances.get(sample)
            if inst is None:
                for slot in ("pre", "act", "grad"):
                    setter(box, slot, "-")
                setter(box, "@state", "")
                continue
            setter(box, "pre", _cut(f"pre {_fmt(pre[inst.dot])}"))
            setter(box, "act", _cut(f"{_act_name(trace, inst)} {_fmt(nodes[inst.out].data)}"))
            setter(box, "grad", _cut(f"grad {grad_of(inst.out)}"))
            setter(box, "@grad", json.dumps(_json_number(totals.get(inst.out, 0.0))))
            state = "done" if ("neuron", j, sample) in done else ""
            setter(box, "@state", "current" if current == ("neuron", j, sample) else state)
        setter(loss_box, "grad", _cut(f"grad {grad_of(len(nodes) - 1)}"))
        loss_state = "done" if ("loss",) in done else ""
        setter(loss_box, "@state", "current" if current == ("loss",) else loss_state)
        layer = net.neurons[current[1]].layer if current and current[0] == "neuron" else -1
        for c in range(1, len(columns)):
            band_on = (c == layer + 1) or (current == ("loss",) and c == len(columns) - 1)
            setter(f"{PREFIX}-b{c}", "@state", "active" if band_on else "")

    ch = _Changes()
    frame(samples_at[0], None, ch.start)
    initial = dict(ch.state)
    steps = []
    for p, (u, group) in enumerate(groups, start=1):
        ch.next_step()
        if p == 1 and group:  # the seed
            totals[group[0].id] = group[0].grad
        for s in group:
            for i in s.inputs:
                if i.pushed is not None:
                    totals[i.id] = totals.get(i.id, 0.0) + i.pushed
        done.add(u)
        frame(samples_at[p], u, ch.set)
        steps.append(_neuron_step(trace, net, u, group, p, len(groups), totals))
    data = {
        "view": "neurons",
        "steps": steps,
        **ch.data(),
        "forward": [],
        "gradItems": [],
        "samples": net.samples,
        "sampleAt": samples_at,
        "traceAt": [0, *itertools.accumulate(len(group) for _, group in groups)],
    }
    svg = _neuron_svg(trace, net, columns, where, width, height, initial)
    widths = " → ".join(str(len(c)) for c in columns[1:-1])
    note = (
        f"The network is drawn neuron by neuron: {len(columns[0])} inputs → {widths} → loss, "
        f"one box per neuron on one sample at a time (sample 1 to {net.samples}; the "
        "selector jumps to a sample's first step). Each box shows the neuron's "
        "pre-activation, its output and its gradient; the bands between columns are the "
        "layers' weights. Stepping backward runs one neuron at a time; the panel lists "
        f"what it pushed to each weight. The last box is `{_loss_name(trace, net)}`: the "
        'arithmetic after the last layer runs there. The "view" selector above shows every '
        "value instead, at the same step of the pass."
    )
    return data, svg, note


def _loss_name(trace: Trace, net: Network) -> str:
    """What the last box is: "loss", unless the output is a neuron's own output."""
    return "output" if len(trace.nodes) - 1 in net.unit else "loss"


def _pre_activation(trace: Trace, dot: int) -> float:
    """b + w1*x1 + ... + wn*xn, summed in the engine's order (a dot_relu keeps only relu
    of it)."""
    n = trace.nodes[dot]
    k = len(n.inputs) // 2
    total = trace.nodes[n.inputs[-1]].data
    for w, x in zip(n.inputs[:k], n.inputs[k : 2 * k]):
        total += trace.nodes[w].data * trace.nodes[x].data
    return total


def _dots(neuron: Neuron) -> list[int]:
    return [inst.dot for inst in neuron.instances.values()]


def _act_name(trace: Trace, inst: Instance) -> str:
    if trace.nodes[inst.dot].op == "dot_relu":
        return "relu"
    return trace.nodes[inst.out].op if inst.out != inst.dot else "out"


def _neuron_step(
    trace: Trace,
    net: Network,
    u: tuple,
    group: list[Step],
    p: int,
    count: int,
    totals: dict[int, float],
) -> dict:
    """The panel, the status line and the list item of view step ``p`` (of ``count``):
    ``u`` is its unit (``("neuron", j, sample)`` or ``("loss",)``), ``group`` the trace steps
    it ran and ``totals`` every gradient after them."""
    nodes = trace.nodes
    if u[0] == "loss":
        lines = [_sentence(s) for s in group]
        if len(lines) > 12:
            lines[10:] = [f"... and {len(lines) - 10} more steps"]
        head = f"Backward step {p} of {count}: the loss's own arithmetic ({len(group)} ops)"
        return {
            "box": f"{PREFIX}-loss",
            "sample": -1,
            "head": head,
            "lines": lines,
            "cols": [],
            "rows": [],
            "sentence": f"{head}: " + " ".join(lines[:1]),
            "status": f"{head}. {lines[0]}",
        }
    j, sample = u[1], u[2]
    neuron, inst = net.neurons[j], net.neurons[j].instances[sample]
    where = f"layer {neuron.layer + 1}, neuron {neuron.index + 1}"
    where += f" (sample {sample + 1} of {net.samples})"
    head = f"Backward step {p} of {count}: {where}"
    dot_step = next((s for s in group if s.id == inst.dot), None)
    out_step = next((s for s in group if s.id == inst.out), dot_step)
    k = len(nodes[inst.dot].inputs) // 2
    lines = [f"grad in = {_fmt(out_step.grad if out_step else 0.0)}"]
    pre = _pre_activation(trace, inst.dot)
    dead = nodes[inst.dot].op == "dot_relu" and not nodes[inst.dot].data > 0.0
    if dead:
        lines.append(
            f"output 0: local derivative 0, nothing reaches its {2 * k + 1} inputs "
            f"(pre-activation {_fmt(pre)} ≤ 0, so relu passes no gradient back)."
        )
    else:
        act = _act_name(trace, inst)
        lines.append(f"pre-activation {_fmt(pre)}, {act} gives {_fmt(nodes[inst.out].data)}")
        if out_step is not None and out_step is not dot_step:
            lines.append(f"{act}'s local derivative: {local_text(out_step.inputs[0])}")
        if dot_step is not None:
            lines.append(
                f"it pushes {_fmt(dot_step.inputs[-1].pushed)} to its bias, and to each "
                f"weight and each of its {k} inputs as the table shows"
            )
    rows = []
    if dot_step is not None:
        ins = dot_step.inputs
        for i in range(k):
            w, x = ins[i], ins[k + i]
            rows.append(
                [
                    f"w{i + 1}",
                    _fmt(w.data),
                    _fmt(x.data),
                    _fmt(w.pushed),
                    _fmt(totals.get(w.id, 0.0)) if w.pushed is not None else "-",
                    _fmt(x.pushed),
                ]
            )
        b = ins[-1]
        rows.append(
            [
                "bias",
                _fmt(b.data),
                "",
                _fmt(b.pushed),
                _fmt(totals.get(b.id, 0.0)) if b.pushed is not None else "-",
                "",
            ]
        )
    summary = lines[1] if dead else f"grad {lines[0][10:]}, {lines[1]}"
    return {
        "box": f"{PREFIX}-u{j}",
        "sample": sample,
        "head": head,
        "lines": lines,
        "cols": [
            "weight",
            "value",
            "input",
            "pushed to weight",
            "weight grad so far",
            "pushed to input",
        ],
        "rows": rows,
        "heat": 3,
        "sentence": f"Step {p}: {where}: {summary}",
        "status": f"{head}. {lines[0]}; {lines[1]}",
    }


def _neuron_svg(
    trace: Trace,
    net: Network,
    columns: list[list[str]],
    where: dict[str, tuple[float, float]],
    width: float,
    height: float,
    initial: dict[tuple[str, str], str],
) -> str:
    """The neuron view's picture: boxes (showing their ``initial`` text), and a band per
    layer of weights."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mw-graph" role="img" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">',
        f"<title>the network, layer by layer, down to {escape('loss')}</title>",
    ]
    for c in range(1, len(columns)):
        (lx, ltop), (_, lbottom) = where[columns[c - 1][0]], where[columns[c - 1][-1]]
        (rx, rtop), (_, rbottom) = where[columns[c][0]], where[columns[c][-1]]
        x1, x2 = lx + N_W, rx
        y1a, y1b, y2a, y2b = ltop, lbottom + N_H, rtop, rbottom + N_H
        fan_in, fan_out = len(columns[c - 1]), len(columns[c])
        label = "to loss" if c == len(columns) - 1 else f"{fan_in}×{fan_out} weights"
        parts.append(
            f'<g class="band" id="{PREFIX}-b{c}">'
            f'<path d="M{x1:.1f},{y1a:.1f} L{x2:.1f},{y2a:.1f} L{x2:.1f},{y2b:.1f} '
            f'L{x1:.1f},{y1b:.1f} z" fill="#e8eef5" stroke="#9bb0c6"/>'
            f'<text x="{(x1 + x2) / 2:.1f}" y="{(y2a + y2b) / 2 + 4:.1f}" text-anchor="middle" '
            f'font-size="11" fill="#222222" paint-order="stroke" stroke="#ffffff" '
            f'stroke-width="3">{escape(label)}</text></g>'
        )

    def box(elem: str, lines: list[tuple[str, str]], kind: str) -> None:
        x, y = where[elem]
        state = initial.get((elem, "@state"), "")
        parts.append(
            f'<g class="node {kind}" id="{elem}" data-state="{state}">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{N_W}" height="{N_H}" rx="6" '
            f'fill="{"#d6e9f8" if kind == "variable" else "#ffffff"}" stroke="#333333" '
            f'stroke-width="1.5"/>'
        )
        for row, (cls, text) in enumerate(lines):
            weight = ' font-weight="bold"' if cls == "name" else ""
            parts.append(
                f'<text class="{cls}" x="{x + 8:.1f}" y="{y + 16 + 15 * row:.1f}" '
                f'fill="#111111"{weight}>{escape(initial.get((elem, cls), text))}</text>'
            )
        parts.append("</g>")

    for k, elem in enumerate(columns[0]):
        box(elem, [("name", _cut(f"input {k + 1}")), ("data", ""), ("grad", "")], "constant")
    for j, neuron in enumerate(net.neurons):
        elem = f"{PREFIX}-u{j}"
        title = f"layer {neuron.layer + 1} neuron {neuron.index + 1}"
        box(elem, [("name", _cut(title)), ("pre", ""), ("act", ""), ("grad", "")], "op")
    out = trace.nodes[-1]
    box(
        f"{PREFIX}-loss",
        [("name", _loss_name(trace, net)), ("data", _cut(f"data {_fmt(out.data)}")), ("grad", "")],
        "op",
    )
    parts.append("</svg>")
    return "\n".join(parts)


def _script_json(data: dict) -> str:
    """JSON that can sit inside a <script> element: no ``<``, ``>`` or ``&`` survives."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _about(data: dict, note: str, accumulations: str) -> str:
    """What the page says below the panel about one view: its note, its steps as an
    ordered list, where gradient accumulates."""
    view = data["view"]
    steps = "".join(f"<li>{escape(s['sentence'])}</li>" for s in data["steps"])
    return (
        f"<div id='{PREFIX}-about-{view}' class='about'>"
        + (f"<p class='note'>{escape(note)}</p>" if note else "")
        + f"<h2>The backward pass, step by step ({len(data['steps'])} steps)</h2>"
        f"<ol class='{PREFIX}-steps' id='{PREFIX}-steps-{view}'>{steps}</ol>"
        f"<h2>Where gradient accumulates</h2><ul class='mono'>{accumulations}</ul></div>"
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
    about = [_about(graph, graph_note, accumulations)]
    views, svg, title = [graph], "", trace.output
    if net is not None:
        neurons, svg, note = _neuron_view(trace, net)
        # every weight collects once per sample: the panel's table says so
        about.append(
            _about(
                neurons,
                note,
                "<li>Each weight and bias adds up (+=) what each sample's step pushed to it: "
                'the panel\'s column "weight grad so far" shows the sum at each step.</li>',
            )
        )
        views.append(neurons)
        if re.fullmatch(r"v\d+", trace.output):
            title = _loss_name(trace, net)
        if view == "neurons" or (view == "auto" and len(trace.nodes) > NEURON_VIEW_ABOVE):
            views.reverse()
            about.reverse()
    legend = "".join(
        f"<dt>{escape(name)}</dt><dd>{escape(meaning)}</dd>" for name, meaning in LEGEND[4:]
    )
    grads = "".join(
        f"<li><bdi class='var'>{escape(name)}</bdi> = {escape(_fmt(g))}</li>"
        for name, g in trace.grads.items()
    )
    grads = f"<ul class='mono' id='mw-final'>{grads}</ul>"
    if len(trace.grads) > 20:
        grads = f"<details><summary>{len(trace.grads)} gradients</summary>{grads}</details>"
    samples = "".join(
        f"<option value='{k}'>sample {k + 1} of {net.samples}</option>"
        for k in range(net.samples if net else 0)
    )
    choices = {"neurons": "neurons", "graph": "every value"}
    view_options = "".join(
        f"<option value='{v['view']}'>{choices[v['view']]}</option>" for v in views
    )
    other = (
        f'<script type="application/json" id="mw-data-other">{_script_json(views[1])}</script>'
        if len(views) > 1
        else ""
    )
    template = resources.files(__package__).joinpath("page_template.html").read_text("utf-8")
    replacements = {
        "@TITLE@": escape(f"Backpropagation through {title}"),
        "@OUTPUT@": escape(title),
        "@VALUE@": escape(_fmt(trace.value)),
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
