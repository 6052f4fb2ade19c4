"""The interactive page: one self-contained HTML file that steps through a backward pass.

Everything the page shows comes from a ``Trace`` (the one ``--json`` prints): the graph is
``picture.py``'s SVG with its layout, and every number and sentence is formatted here, in
Python, so the script in the page only chooses which prepared text to show at each step.
Nothing is fetched: styles and script are inline, and every piece of text from the trace
is escaped (in the markup by ``html.escape``, in the embedded JSON by escaping ``<``, ``>``
and ``&``; the script writes text with ``textContent`` only).
"""

from __future__ import annotations

import json
import os
import re
from html import escape
from importlib import resources
from pathlib import Path

from ..files import atomic_write, check_writable
from .picture import layout, to_svg
from .trace import LEGEND, Trace, _fmt, _json_number, _short, local_text

#: Graphs up to this wide (in pixels) shrink to fit the window; wider ones scroll.
FIT_WIDTH = 1600
PREFIX = "mw"  # the SVG ids the script looks up: mw-n<id>, mw-e<node>-<input position>


def _view(trace: Trace, folded: dict[int, int]) -> dict:
    """What the script needs, prepared: per step the panel's rows and the edges it lights;
    per node the gradient after each push it received, as a number and as text."""
    nodes = trace.nodes
    history: dict[int, list] = {}
    if not trace.steps:  # the output is a leaf: backward() only seeds it
        history[nodes[-1].id] = [[0, _json_number(nodes[-1].grad), _fmt(nodes[-1].grad)]]
    else:
        out = trace.steps[0].id
        history[out] = [[1, _json_number(trace.steps[0].grad), f"{_fmt(trace.steps[0].grad)}"]]
    totals: dict[int, float] = {}
    terms: dict[int, list[str]] = {}
    for n in nodes:  # a leaf that kept a gradient from an earlier backward() starts there
        prior = trace.before.get(n.name, 0.0) if n.kind == "variable" else 0.0
        if prior != 0.0:
            totals[n.id], terms[n.id] = prior, [f"{_fmt(prior)} (before)"]
            history[n.id] = [[0, _json_number(prior), _fmt(prior)]]
    steps = []
    for s in trace.steps:
        rows = []
        for k, i in enumerate(s.inputs):
            edge = None if i.id in folded else f"{PREFIX}-e{s.id}-{k}"
            rows.append([i.node, i.role, _fmt(i.data), local_text(i), _fmt(i.pushed), edge])
            if i.pushed is None:
                continue
            totals[i.id] = totals.get(i.id, 0.0) + i.pushed
            terms.setdefault(i.id, []).append(_fmt(i.pushed))
            parts = terms[i.id]
            text = _fmt(totals[i.id])
            if len(parts) > 1:
                shown = parts if len(parts) <= 4 else [*parts[:2], "...", parts[-1]]
                text = f"{' + '.join(shown)} = {text}"
            history.setdefault(i.id, []).append([s.step, _json_number(totals[i.id]), text])
        pushed = [f"{_fmt(i.pushed)} to {i.node}" for i in s.inputs if i.pushed is not None]
        if len(pushed) > 6:  # a fused node: the panel lists every input
            pushed[4:] = [f"and {len(pushed) - 4} more"]
        pushes = ", ".join(pushed)
        sentence = f"Step {s.step}: {s.node} ({s.op}) has grad {_fmt(s.grad)}; " + (
            f"it pushes {pushes}." if pushes else "its inputs are constants."
        )
        steps.append({"id": s.id, "op": s.op, "rows": rows, "sentence": sentence})
    variables = {n.name: n.id for n in nodes if n.kind == "variable"}
    forward = [
        {
            "id": n.id,
            "sentence": f"{n.name}: {n.op} of "
            + ", ".join(nodes[i].name for i in n.inputs)
            + f" = {_fmt(n.data)}",
        }
        for n in nodes
        if n.inputs
    ]
    return {
        "nodes": [
            {"id": n.id, "name": n.name, "data": _fmt(n.data), "constant": n.kind == "constant"}
            for n in nodes
        ],
        "history": {str(k): v for k, v in history.items()},
        "steps": steps,
        "forward": forward,
        "gradNodes": [[name, variables.get(_short(name), -1)] for name in trace.grads],
    }


def _script_json(data: dict) -> str:
    """JSON that can sit inside a <script> element: no ``<``, ``>`` or ``&`` survives."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_html(trace: Trace) -> str:
    """The whole page, as one string of HTML."""
    where = layout(trace)
    svg = to_svg(trace, where, PREFIX)
    view = _view(trace, where.folded)
    legend = "".join(
        f"<dt>{escape(name)}</dt><dd>{escape(meaning)}</dd>" for name, meaning in LEGEND[4:]
    )
    steps = "".join(f"<li>{escape(s['sentence'])}</li>" for s in view["steps"])
    grads = "".join(
        f"<li><span class='var'>{escape(name)}</span> = {escape(_fmt(g))}</li>"
        for name, g in trace.grads.items()
    )
    accumulations = "".join(f"<li>{escape(line)}</li>" for line in trace.accumulations())
    folded = len(where.folded)
    note = (
        f"<p class='note'>{folded} leaves that each feed one fused node (sum or dot) are "
        "folded into that node's box; the step panel lists every input.</p>"
        if folded
        else ""
    )
    template = resources.files(__package__).joinpath("page_template.html").read_text("utf-8")
    replacements = {
        "@TITLE@": escape(f"Backpropagation through {trace.output}"),
        "@OUTPUT@": escape(trace.output),
        "@VALUE@": escape(_fmt(trace.value)),
        "@SVG@": svg,
        "@LEGEND@": legend,
        "@STEPS@": steps,
        "@GRADS@": grads,
        "@ACCUMULATIONS@": accumulations or "<li>No value is used more than once.</li>",
        "@NOTE@": note,
        "@DATA@": _script_json(view),
        "@COUNT@": str(len(trace.steps)),
        "@FIT@": "fit" if where.width <= FIT_WIDTH else "",
        "@WIDTH@": f"{where.width:.0f}",
    }
    # one pass, so text put in (a label that reads "@DATA@") is never replaced again
    return re.sub(r"@[A-Z]+@", lambda m: replacements[m.group()], template)


def write_page(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write the page for ``trace`` to ``path`` (checked first, replaced atomically)."""
    path = check_writable(path)
    html = page_html(trace)
    atomic_write(path, lambda f: f.write(html))
    return path


class Page:
    """The page of a trace for a notebook: shows itself inline, in a sandboxed iframe."""

    def __init__(self, trace: Trace, height: int = 640) -> None:
        self.trace = trace
        self.height = height

    def _repr_html_(self) -> str:
        html = page_html(self.trace)
        return (
            f'<iframe srcdoc="{escape(html, quote=True)}" sandbox="allow-scripts" '
            f'style="width:100%;height:{self.height}px;border:1px solid #ccc" '
            f'title="{escape("backward pass of " + self.trace.output)}"></iframe>'
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_page(self.trace, path)
