"""Pictures of a graph with no Graphviz needed: a layered layout computed here, an SVG
writer, and DOT text for those who have Graphviz.

The layout puts inputs on the left and the output on the right: an op node sits one layer
right of its deepest input, a leaf one layer left of its first use, and each layer is
ordered by where its nodes' users are, which keeps most edges short and uncrossed. The same
layout draws ``draw_graph``'s picture and the interactive page (``page.py``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import warnings
from dataclasses import dataclass
from html import escape
from pathlib import Path

from ..files import atomic_write, check_writable
from ..scalar.engine import Value
from .trace import Trace, fmt, record

#: Formats ``save_graph`` writes: SVG and DOT text itself, PNG and PDF through Graphviz.
FORMATS = ("svg", "dot", "gv", "png", "pdf")
#: The longest Graphviz's ``dot`` may take over a PNG or PDF, in seconds: its layout of some
#: small graphs (a 150-term a+a+...+a) runs for minutes.
DOT_SECONDS = 60.0

BOX_W, BOX_H = 176, 84  # a node's box; five 15-pixel lines of 12-pixel text
GAP_X, GAP_Y = 130, 24  # room between layers for the edge labels, and between rows
MARGIN = 16
LANE = 18  # an edge that skips layers runs below the boxes, one lane each
#: Fused ops (one node for many inputs): in a big graph, the leaves that only feed one of
#: them are folded into its box, so a neuron is one box, not one per weight.
FUSED_OPS = ("sum", "dot", "dot_relu")
FOLD_ABOVE = 60  # fold when the graph has more nodes than this
_CHARS = 24  # characters that fit on a line of a box

# Okabe-Ito colours, distinguishable with any common colour-vision deficiency.
FILL = {"variable": "#d6e9f8", "constant": "#eeeeee", "op": "#ffffff"}
STROKE = {"variable": "#0072b2", "constant": "#666666", "op": "#333333"}


@dataclass(frozen=True)
class Layout:
    """Where each shown node's box goes (top-left corner), and which nodes are folded
    into a fused node's box (``folded[leaf] = fused node``)."""

    x: dict[int, float]
    y: dict[int, float]
    width: float
    height: float
    folded: dict[int, int]
    lanes: float  # where the first lane below the boxes runs (see ``to_svg``)

    def folded_count(self) -> dict[int, int]:
        """How many leaves are folded into each fused node that has any."""
        count: dict[int, int] = {}
        for fused in self.folded.values():
            count[fused] = count.get(fused, 0) + 1
        return count


def layout(trace: Trace, fold: bool | None = None) -> Layout:
    """Lay out ``trace.nodes`` left to right by depth (linear in the graph's size, plus a
    sort per layer). ``fold`` defaults to folding graphs of more than FOLD_ABOVE nodes."""
    nodes = trace.nodes
    users: list[list[int]] = [[] for _ in nodes]
    for n in nodes:
        for i in n.inputs:
            users[i].append(n.id)
    if fold is None:
        fold = len(nodes) > FOLD_ABOVE
    folded = {
        n.id: users[n.id][0]
        for n in nodes
        if fold
        and not n.inputs
        and users[n.id]
        and len(set(users[n.id])) == 1
        and nodes[users[n.id][0]].op in FUSED_OPS
    }
    layer = [0] * len(nodes)
    for n in nodes:  # topological: inputs first
        if n.inputs:
            layer[n.id] = 1 + max(layer[i] for i in n.inputs)
    for n in nodes:
        if not n.inputs and users[n.id]:  # a leaf sits just left of its first use
            layer[n.id] = min(layer[u] for u in users[n.id]) - 1
    shown = [n.id for n in nodes if n.id not in folded]
    depth = max((layer[i] for i in shown), default=0)
    by_layer: list[list[int]] = [[] for _ in range(depth + 1)]
    for i in shown:
        by_layer[layer[i]].append(i)
    tallest = max(len(ids) for ids in by_layer)
    pitch = BOX_H + GAP_Y
    x: dict[int, float] = {}
    y: dict[int, float] = {}
    for k in range(depth, -1, -1):  # from the output back: each layer follows its users
        ids = by_layer[k]

        def where_used(i: int) -> float:
            placed = [y[u] for u in users[i] if u in y]
            return sum(placed) / len(placed) if placed else 0.0

        ids.sort(key=lambda i: (where_used(i), i))
        top = MARGIN + (tallest - len(ids)) * pitch / 2
        for row, i in enumerate(ids):
            x[i] = MARGIN + k * (BOX_W + GAP_X)
            y[i] = top + row * pitch
    width = 2 * MARGIN + (depth + 1) * BOX_W + depth * GAP_X
    lanes = MARGIN + tallest * pitch - GAP_Y + LANE
    long_edges = sum(
        1 for n in nodes if n.id in x for i in n.inputs if i in x and layer[n.id] - layer[i] > 1
    )
    height = lanes + LANE * long_edges + MARGIN - (LANE if not long_edges else 0)
    return Layout(x, y, width, height, folded, lanes)


def clip(text: str, chars: int = _CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def node_lines(
    trace: Trace, node_id: int, folded_count: int = 0, before_pass: bool = False
) -> list[str]:
    """The text in a node's box: name, op, data, grad (and, for a fused node in a big
    graph, how many leaves are folded into it); ``before_pass``: the grad it started with."""
    n = trace.nodes[node_id]
    kind = {"variable": "variable", "constant": "constant"}.get(n.kind, f"op {n.op}")
    if folded_count:
        kind += f" +{folded_count} in"
    grad = n.grad
    if before_pass:
        grad = trace.before.get(n.name, 0.0) if n.kind == "variable" else 0.0
    shown = "-" if n.kind == "constant" else fmt(grad)  # a constant needs no gradient
    return [clip(n.name), clip(kind), clip(f"data {fmt(n.data)}"), clip(f"grad {shown}")]


def to_svg(
    trace: Trace, where: Layout | None = None, prefix: str = "mw", before_pass: bool = False
) -> str:
    """The graph as a standalone SVG document (every piece of text escaped). Edges carry
    their role and, once backward has run, the amount pushed along them; a value that
    collected gradient on several paths shows the sum under its grad. ``before_pass``
    draws the graph as it stood before backward (the page's first frame): every gradient
    is what the leaf held before, or 0, and the edges carry only their roles."""
    where = layout(trace) if where is None else where
    received = {} if before_pass else trace.received()
    pushed_shown = bool(trace.steps) and trace.steps[0].grad != 0.0 and not before_pass
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mw-graph" role="img" '
        f'width="{where.width:.0f}" height="{where.height:.0f}" '
        f'viewBox="0 0 {where.width:.0f} {where.height:.0f}" '
        f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">',
        f"<title>computation graph of {escape(trace.output)}</title>",
        f'<defs><marker id="{prefix}-arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#555555"/></marker></defs>',
    ]
    folded_count = where.folded_count()
    pushes = {
        (s.id, k): i for s in trace.steps for k, i in enumerate(s.inputs)
    }  # what each edge (user, input position) carried
    for dst, k, src, path, lx, ly, _, _ in edge_paths(trace, where):
        step = pushes.get((dst, k))
        role = step.role if step else ""
        amount = "" if step is None or not pushed_shown else fmt(step.pushed)
        label = edge_label(role, amount)
        parts.append(
            f'<g class="edge" id="{prefix}-e{dst}-{k}" data-src="{src}" data-dst="{dst}">'
            f'<path d="{path}" fill="none" stroke="#555555" stroke-width="1.3" '
            f'marker-end="url(#{prefix}-arrow)"/>'
            f'<text class="label" x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle" '
            f'font-size="11" fill="#222222" paint-order="stroke" stroke="#ffffff" '
            f'stroke-width="3">{escape(label)}</text></g>'
        )
    for n in trace.nodes:
        if n.id not in where.x:
            continue
        x, y = where.x[n.id], where.y[n.id]
        lines = node_lines(trace, n.id, folded_count.get(n.id, 0), before_pass)
        parts_of_sum = received.get(n.id, [])
        sum_line = sum_text([fmt(a) for _, a in parts_of_sum]) if pushed_shown else ""
        parts.append(
            f'<g class="node {n.kind}" id="{prefix}-n{n.id}" data-id="{n.id}">'
            f"<title>{escape(n.name)}</title>"
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{BOX_W}" height="{BOX_H}" rx="6" '
            f'fill="{FILL[n.kind]}" stroke="{STROKE[n.kind]}" stroke-width="1.5"/>'
        )
        classes = ("name", "op", "data", "grad", "sum")
        for row, (cls, text) in enumerate(zip(classes, [*lines, sum_line])):
            weight = ' font-weight="bold"' if cls == "name" else ""
            parts.append(
                f'<text class="{cls}" x="{x + 8:.1f}" y="{y + 17 + 15 * row:.1f}" '
                f'fill="#111111"{weight}>{escape(text)}</text>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def edge_paths(trace: Trace, where: Layout) -> list[tuple]:
    """Every drawn edge as ``(user, input position, input, SVG path, label x, label y, bend,
    in a lane)``: an edge that skips a layer runs below the boxes in a lane of its own, the
    others curve across the gap between two columns (``bend`` pixels lower at its end when
    it is the second edge between the same two boxes) with their label in it, never on a
    box."""
    lane = where.lanes
    edges = []  # (gap it sits in or None for a lane, label y, position, src, dst, path, label x)
    for n in trace.nodes:
        if n.id not in where.x:
            continue
        seen: dict[int, int] = {}
        for k, src in enumerate(n.inputs):
            if src in where.folded:
                continue
            twin = seen.get(src, 0)  # a * a: the second edge bends the other way
            seen[src] = twin + 1
            bend = 16.0 * twin
            x1, y1 = where.x[src] + BOX_W, where.y[src] + BOX_H / 2
            x2, y2 = where.x[n.id], where.y[n.id] + BOX_H / 2 + bend
            mid = (x1 + x2) / 2
            if x2 - x1 > 2 * GAP_X:  # it skips a layer: run below the boxes
                q = GAP_X / 2
                path = (
                    f"M{_c(x1)},{_c(y1)} C{_c(x1 + q)},{_c(y1)} {_c(x1 + q)},{_c(lane)} "
                    f"{_c(x1 + GAP_X)},{_c(lane)} L{_c(x2 - GAP_X)},{_c(lane)} "
                    f"C{_c(x2 - q)},{_c(lane)} {_c(x2 - q)},{_c(y2)} {_c(x2 - 2)},{_c(y2)}"
                )
                edges.append((None, lane - 4, k, src, n.id, path, mid, bend, True))
                lane += LANE
            else:
                path = (
                    f"M{_c(x1)},{_c(y1)} C{_c(mid)},{_c(y1 + bend)} {_c(mid)},{_c(y2)} "
                    f"{_c(x2 - 2)},{_c(y2)}"
                )
                ly = (y1 + y2) / 2 + bend * 3 / 8 + 4
                edges.append((x1, ly, k, src, n.id, path, mid, bend, False))
    _spread(edges)
    return [
        (dst, k, src, path, lx, ly, bend, lane)
        for _, ly, k, src, dst, path, lx, bend, lane in edges
    ]


def _c(v: float) -> str:
    """A coordinate to a tenth of a pixel, as short as it goes: 12.0 is "12"."""
    return f"{v:.1f}".removesuffix(".0")


#: An edge label fits in the gap between two columns: at most this many characters.
LABEL_CHARS = 17
_LABEL_PITCH = 15  # labels in one gap are at least this far apart, so none overlap


def edge_label(role: str, amount: str) -> str:
    """An edge's label, short enough for its gap: ``left: 1.5``, else just the amount."""
    if amount in ("", "-"):
        return clip(role, LABEL_CHARS)
    label = f"{role}: {amount}"
    return label if len(label) <= LABEL_CHARS else clip(amount, LABEL_CHARS)


def sum_text(parts: list[str]) -> str:
    """A box's accumulation line, ``= 1 + 2``, once it has collected on two paths."""
    return clip("= " + " + ".join(parts)) if len(parts) > 1 else ""


def _spread(edges: list) -> None:
    """Move labels in the same gap apart (down) so that no two overlap: several edges
    leaving one node would otherwise stack their labels on top of each other."""
    by_gap: dict[float, list[int]] = {}
    for k, e in enumerate(edges):
        if e[0] is not None:
            by_gap.setdefault(e[0], []).append(k)
    for ks in by_gap.values():
        ks.sort(key=lambda k: edges[k][1])
        last = -1e9
        for k in ks:
            e = edges[k]
            y = max(e[1], last + _LABEL_PITCH)
            edges[k] = (e[0], y, *e[2:])
            last = y


def to_dot(trace: Trace) -> str:
    """The graph as Graphviz DOT text: one record per node, edges labelled by role."""
    lines = [
        "digraph {",
        "  rankdir=LR",
        '  node [shape=record fontname="Helvetica" fontsize=11]',
        '  edge [fontname="Helvetica" fontsize=9]',
    ]
    for n in trace.nodes:
        fields = [n.name] + ([f"op {n.op}"] if n.op else [])
        fields += [f"data {fmt(n.data)}", f"grad {fmt(n.grad)}"]
        label = "{" + " | ".join(_escape_record(f) for f in fields) + "}"
        lines.append(f'  n{n.id} [label="{label}"]')
    roles = {(s.id, k): i.role for s in trace.steps for k, i in enumerate(s.inputs)}
    for n in trace.nodes:
        for k, src in enumerate(n.inputs):
            role = _escape_record(roles.get((n.id, k), ""))
            lines.append(f'  n{src} -> n{n.id} [label="{role}"]')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _escape_record(text: str) -> str:
    """Escape the characters that structure a Graphviz record label."""
    text = text.replace("\n", " ").replace("\r", " ")
    for ch in '\\{}|<>"':
        text = text.replace(ch, "\\" + ch)
    return text


class Graph:
    """A picture of a graph: ``svg()`` (drawn here), ``source`` (DOT text), ``save(path)``.
    In a notebook it shows itself as SVG, so no Graphviz is needed to see it."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.layout = layout(trace)

    def __repr__(self) -> str:
        return f"<Graph of {self.trace.output!r}: {len(self.trace.nodes)} nodes>"

    def svg(self, prefix: str = "mw") -> str:
        return to_svg(self.trace, self.layout, prefix)

    def _repr_svg_(self) -> str:
        return self.svg(prefix=f"mw{id(self):x}")  # several pictures in one notebook

    @property
    def source(self) -> str:
        """DOT text, for Graphviz's ``dot``."""
        return to_dot(self.trace)

    def save(self, path: str | os.PathLike[str], dot_seconds: float | None = None) -> Path:
        """Write the picture; see ``save_graph``."""
        path = Path(path)
        kind = path.suffix.lower().lstrip(".")
        if kind not in FORMATS:
            raise ValueError(
                f"cannot tell the picture format from {path.name!r}: use a name ending in "
                ".svg, .png, .pdf, or .dot for DOT text"
            )
        check_writable(path)
        if kind == "svg":
            data = self.svg().encode("utf-8")
        elif kind in ("dot", "gv"):
            data = self.source.encode("utf-8")
        else:
            try:
                data = _render_with_graphviz(self.source, kind, dot_seconds)
            except _NoGraphviz as missing:
                path = path.with_suffix(".svg")
                check_writable(path)
                data = self.svg().encode("utf-8")
                warnings.warn(
                    f"{missing} so the graph was drawn as SVG to {path} instead. Install "
                    f"Graphviz (e.g. `apt install graphviz`, `pip install graphviz`) for "
                    f".{kind}, or convert the SVG: "
                    f"`rsvg-convert -f {kind} {shlex.quote(str(path))}`",
                    GraphvizMissingWarning,
                    stacklevel=3,
                )
        atomic_write(path, lambda f: f.write(data), binary=True)
        return path


class GraphvizMissingWarning(UserWarning):
    """``save_graph`` drew SVG because Graphviz (the program or the package) is missing."""


class _NoGraphviz(Exception):
    pass


class GraphvizTooSlow(Exception):
    """Graphviz's ``dot`` took longer than it was given to lay the graph out (it was ended)."""


def _render_with_graphviz(source: str, kind: str, seconds: float | None = None) -> bytes:
    """Render DOT text with Graphviz's ``dot``, ended after ``seconds`` (``DOT_SECONDS``
    when None) with ``GraphvizTooSlow``. The graphviz package, required as documented, is
    imported only here, so nothing else needs it; ``dot`` is run directly, as its
    ``pipe()`` has no time limit."""
    seconds = DOT_SECONDS if seconds is None else seconds
    try:
        import graphviz  # noqa: F401  (only to know it is there)
    except ImportError:
        raise _NoGraphviz("the graphviz Python package is not installed,") from None
    try:
        done = subprocess.run(  # on the timeout, run() kills dot and waits for it
            ["dot", f"-T{kind}"],
            input=source.encode("utf-8"),
            stdout=subprocess.PIPE,
            timeout=seconds,
            check=True,
        )
    except FileNotFoundError:
        raise _NoGraphviz("Graphviz's `dot` program was not found,") from None
    except subprocess.TimeoutExpired:
        raise GraphvizTooSlow(
            f"Graphviz's dot took more than {seconds:g} s to lay the graph out and was "
            "stopped; draw it as .svg (laid out in Python, no Graphviz) instead"
        ) from None
    return done.stdout


def draw_graph(value: Value) -> Graph:
    """A picture of everything ``value`` depends on: one box per Value with its name, op,
    data and grad, an arrow from each input labelled with its role and, after
    ``backward()``, with what was pushed along it. Leaves are constants unless labelled."""
    if not isinstance(value, Value):
        raise TypeError(f"draw_graph needs a Value, got {type(value).__name__}")
    return Graph(record(value))


def save_graph(
    value: Value, path: str | os.PathLike[str], dot_seconds: float | None = None
) -> Path:
    """Draw ``value``'s graph to ``path`` and return the path written: .svg is drawn here
    (no Graphviz needed), .dot/.gv is DOT text, .png/.pdf go through Graphviz's ``dot``,
    given ``dot_seconds`` (``DOT_SECONDS`` when None) before ``GraphvizTooSlow``.
    Without Graphviz, .png/.pdf become an .svg beside it, with a warning saying so. The
    path is checked first, and files are replaced atomically."""
    return draw_graph(value).save(path, dot_seconds)
