"""The page's neuron view (``page.py`` assembles the page): a network drawn as layers of
neurons, one box per neuron showing its pre-activation, output and gradient on one sample
at a time, the loss's own arithmetic one box; stepping backward walks neuron by neuron."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from html import escape

from .network import Instance, Network, Neuron
from .picture import clip
from .replay import PREFIX, Changes, sentence
from .trace import Step, Trace, fmt, json_number, local_text

# The neuron view's layout: a column per layer (the inputs first, the loss last).
N_W, N_H, N_GAP_X, N_GAP_Y, N_MARGIN = 168, 68, 96, 10, 16


def neuron_view(trace: Trace, net: Network) -> tuple[dict, str, str]:
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
        return fmt(totals.get(node_id, 0.0))

    done: set[tuple] = set()  # the units whose step has run: ("neuron", j, sample), ("loss",)
    loss_box = f"{PREFIX}-loss"
    pre = {d: _pre_activation(trace, d) for n in net.neurons for d in _dots(n)}

    def frame(sample: int, current: tuple | None, setter: Callable[[str, str, str], None]) -> None:
        """Every box as it stands now, on ``sample``, written with ``setter``."""
        xs = net.inputs.get(sample, ())
        for k, x in enumerate(xs):
            setter(f"{PREFIX}-i{k}", "data", clip(f"data {fmt(nodes[x].data)}"))
            setter(f"{PREFIX}-i{k}", "grad", clip(f"grad {grad_of(x)}"))
        for j, neuron in enumerate(net.neurons):
            box = f"{PREFIX}-u{j}"
            inst = neuron.instances.get(sample)
            if inst is None:
                for slot in ("pre", "act", "grad"):
                    setter(box, slot, "-")
                setter(box, "@state", "")
                continue
            setter(box, "pre", clip(f"pre {fmt(pre[inst.dot])}"))
            setter(box, "act", clip(f"{_act_name(trace, inst)} {fmt(nodes[inst.out].data)}"))
            setter(box, "grad", clip(f"grad {grad_of(inst.out)}"))
            setter(box, "@grad", json.dumps(json_number(totals.get(inst.out, 0.0))))
            state = "done" if ("neuron", j, sample) in done else ""
            setter(box, "@state", "current" if current == ("neuron", j, sample) else state)
        setter(loss_box, "grad", clip(f"grad {grad_of(len(nodes) - 1)}"))
        loss_state = "done" if ("loss",) in done else ""
        setter(loss_box, "@state", "current" if current == ("loss",) else loss_state)
        layer = net.neurons[current[1]].layer if current and current[0] == "neuron" else -1
        for c in range(1, len(columns)):
            band_on = (c == layer + 1) or (current == ("loss",) and c == len(columns) - 1)
            setter(f"{PREFIX}-b{c}", "@state", "active" if band_on else "")

    ch = Changes()
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
        f"what it pushed to each weight. The last box is `{loss_name(trace, net)}`: the "
        'arithmetic after the last layer runs there. The "view" selector above shows every '
        "value instead, at the same step of the pass."
    )
    return data, svg, note


def loss_name(trace: Trace, net: Network) -> str:
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
        lines = [sentence(s) for s in group]
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
    lines = [f"grad in = {fmt(out_step.grad if out_step else 0.0)}"]
    pre = _pre_activation(trace, inst.dot)
    dead = nodes[inst.dot].op == "dot_relu" and not nodes[inst.dot].data > 0.0
    if dead:
        lines.append(
            f"output 0: local derivative 0, nothing reaches its {2 * k + 1} inputs "
            f"(pre-activation {fmt(pre)} ≤ 0, so relu passes no gradient back)."
        )
    else:
        act = _act_name(trace, inst)
        lines.append(f"pre-activation {fmt(pre)}, {act} gives {fmt(nodes[inst.out].data)}")
        if out_step is not None and out_step is not dot_step:
            lines.append(f"{act}'s local derivative: {local_text(out_step.inputs[0])}")
        if dot_step is not None:
            lines.append(
                f"it pushes {fmt(dot_step.inputs[-1].pushed)} to its bias, and to each "
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
                    fmt(w.data),
                    fmt(x.data),
                    fmt(w.pushed),
                    fmt(totals.get(w.id, 0.0)) if w.pushed is not None else "-",
                    fmt(x.pushed),
                ]
            )
        b = ins[-1]
        rows.append(
            [
                "bias",
                fmt(b.data),
                "",
                fmt(b.pushed),
                fmt(totals.get(b.id, 0.0)) if b.pushed is not None else "-",
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
        box(elem, [("name", clip(f"input {k + 1}")), ("data", ""), ("grad", "")], "constant")
    for j, neuron in enumerate(net.neurons):
        elem = f"{PREFIX}-u{j}"
        title = f"layer {neuron.layer + 1} neuron {neuron.index + 1}"
        box(elem, [("name", clip(title)), ("pre", ""), ("act", ""), ("grad", "")], "op")
    out = trace.nodes[-1]
    box(
        f"{PREFIX}-loss",
        [("name", loss_name(trace, net)), ("data", clip(f"data {fmt(out.data)}")), ("grad", "")],
        "op",
    )
    parts.append("</svg>")
    return "\n".join(parts)
