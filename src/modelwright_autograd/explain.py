"""Watch a backward pass: a step-by-step trace and a picture of the graph.

* ``explain(value)`` runs ``value.backward()`` and returns a ``Trace``: for every node, in
  the reverse topological order backward() uses, the gradient that arrived, each input's
  local derivative and the contribution pushed to it. Printed, it is the table a learner
  would write by hand.
* ``draw_graph(value)`` returns a ``graphviz.Digraph`` with each node's op, data and grad;
  ``save_graph(value, "out.svg")`` renders it, or writes the DOT text when Graphviz's
  ``dot`` program is missing.
* ``modelwright-autograd explain "a*b + c" a=2 b=3 c=4 [--json] [--graph out.svg]`` does
  both from the command line (the expression language is in ``expr.py``).

The local derivatives are not a second copy of the calculus: each comes from running the
node's own backward rule on detached copies of its inputs with an upstream gradient of 1,
so the narration cannot disagree with the engine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import graphviz

from .engine import Value, _powc_backward
from .expr import ExpressionError, parse_assignments, parse_expression
from .files import atomic_write
from .graph import topological_order

#: Picture formats ``save_graph`` renders with ``dot``; ``.dot``/``.gv`` write DOT text.
RENDER_FORMATS = ("svg", "png", "pdf")
_RANKDIRS = ("LR", "RL", "TB", "BT")


# ---------------------------------------------------------------------- the trace
@dataclass(frozen=True)
class InputStep:
    """What one node passed to one of its inputs during backward.

    ``local`` is d(node)/d(input) and ``pushed`` = local * (gradient that arrived at the
    node), the amount added to ``input.grad``. Both are None for a constant exponent
    (``a ** 3``), which the engine gives no gradient.
    """

    node: str
    role: str
    data: float
    local: float | None
    pushed: float | None


@dataclass(frozen=True)
class Step:
    """One node visited by backward: its gradient on arrival and what it pushed on."""

    step: int
    node: str
    op: str
    data: float
    grad: float
    inputs: tuple[InputStep, ...]


@dataclass(frozen=True, repr=False)
class Trace:
    """A narrated backward pass: ``str(trace)`` is the table, ``to_dict()`` the JSON form."""

    output: str
    value: float
    steps: tuple[Step, ...]
    grads: dict[str, float]
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"<Trace of {self.output!r}: {len(self.steps)} steps, grads {self.grads}>"

    def __str__(self) -> str:
        return self.to_text()

    def to_dict(self) -> dict:
        """``{"value": ..., "grads": {...}, "steps": [...]}``; non-finite numbers become
        the strings "inf", "-inf" and "nan", since JSON has no literal for them."""
        return {
            "value": _json_number(self.value),
            "grads": {k: _json_number(v) for k, v in self.grads.items()},
            "steps": [
                {
                    "step": s.step,
                    "node": s.node,
                    "op": s.op,
                    "data": _json_number(s.data),
                    "grad": _json_number(s.grad),
                    "inputs": [
                        {
                            "node": i.node,
                            "role": i.role,
                            "data": _json_number(i.data),
                            "local": _json_number(i.local),
                            "pushed": _json_number(i.pushed),
                        }
                        for i in s.inputs
                    ],
                }
                for s in self.steps
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_text(self) -> str:
        lines = [f"{self.output} = {_fmt(self.value)}", ""]
        if self.steps:
            lines += [
                "Backward pass, in reverse topological order (each node comes after every "
                "node that uses it):",
                "  grad in = d(output)/d(node), the gradient that arrived at the node",
                "  local   = d(node)/d(input), the op's own derivative",
                "  pushed  = local * grad in, added (+=) to the input's grad",
                "",
            ]
            header = ("step", "node", "op", "data", "grad in", "input", "as", "data", "local")
            rows = [(*header, "pushed")]
            for s in self.steps:
                for k, i in enumerate(s.inputs):
                    left = (str(s.step), s.node, s.op, _fmt(s.data), _fmt(s.grad))
                    rows.append(
                        (
                            *(left if k == 0 else ("",) * 5),
                            i.node,
                            i.role,
                            _fmt(i.data),
                            _fmt(i.local),
                            _fmt(i.pushed),
                        )
                    )
            widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
            for r in rows:
                lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
            lines.append("")
        else:
            lines += ["The output is a leaf: backward() only seeds its gradient.", ""]
        if self.grads:
            lines.append(f"Gradients of {self.output}:")
            width = max(len(name) for name in self.grads)
            lines += [f"  d/d{name.ljust(width)} = {_fmt(g)}" for name, g in self.grads.items()]
        lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines)


def explain(value: Value, variables: Mapping[str, Value] | None = None) -> Trace:
    """Run ``value.backward()`` and record every step of it (see ``Trace``).

    ``variables`` names the leaves whose gradients to report (default: every labelled
    leaf). Like ``backward()``, this adds into leaf gradients: call ``zero_grad()`` first
    for a fresh pass over leaves that were used before.
    """
    if not isinstance(value, Value):
        raise TypeError(f"explain needs a Value, got {type(value).__name__}")
    order = topological_order(value)
    names = _node_names(order)
    if variables is None:
        variables = {n.label: n for n in order if not n._prev and n.label}
    notes = [
        f"{name} already had grad {_fmt(v.grad)} from an earlier backward(); "
        "backward() adds to leaf gradients (zero_grad() starts afresh)"
        for name, v in variables.items()
        if v.grad != 0.0
    ]
    value.backward()

    # After backward(), an interior node's grad is exactly what it held when its rule
    # ran: every node that uses it came earlier in the walk, and nothing writes to it
    # afterwards. So the steps can be read off the finished pass.
    steps = []
    for node in reversed(order):
        if node._backward is None:
            continue
        local = _run_rule(node, 1.0)
        pushed = _run_rule(node, node.grad)
        constant_exponent = node._backward is _powc_backward
        inputs = tuple(
            InputStep(
                names[p],
                role,
                p.data,
                None if constant_exponent and k == 1 else local[k],
                None if constant_exponent and k == 1 else pushed[k],
            )
            for k, (p, role) in enumerate(zip(node._prev, _roles(node)))
        )
        steps.append(Step(len(steps) + 1, names[node], node._op, node.data, node.grad, inputs))
    grads = {name: v.grad for name, v in variables.items()}
    return Trace(names[value], value.data, tuple(steps), grads, tuple(notes))


def _run_rule(node: Value, upstream: float) -> list[float]:
    """What ``node``'s backward rule gives each input, given ``upstream`` as its grad: one
    gradient per input position, so ``a * a`` reports both uses separately."""
    return node._input_grads(upstream)


def _roles(node: Value) -> list[str]:
    """Each input's name in the op's formula (REPORT.md): a, b; x1..xn; w1..wn, x1..xn, b."""
    n = len(node._prev)
    if node._op == "sum":
        return [f"x{i + 1}" for i in range(n)]
    if node._op == "dot":
        k = (n - 1) // 2
        return [*(f"w{i + 1}" for i in range(k)), *(f"x{i + 1}" for i in range(k)), "b"]
    if node._backward is _powc_backward:
        return ["a", "n"]
    return ["a", "b"][:n] if n <= 2 else [f"in{i + 1}" for i in range(n)]


def _node_names(order: list[Value]) -> dict[Value, str]:
    """A readable name per node: its label, else a constant's value, else v1, v2..."""
    names: dict[Value, str] = {}
    count = 0
    for node in order:
        if node.label:
            names[node] = node.label
        elif not node._prev:
            names[node] = _fmt(node.data)
        else:
            count += 1
            names[node] = f"v{count}"
    return names


def _fmt(x: float | None) -> str:
    """Six significant digits: 3.0 prints as 3, 1/3 as 0.333333, None as '-'."""
    return "-" if x is None else format(x, ".6g")


def _json_number(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


# ---------------------------------------------------------------------- the picture
class GraphvizMissingWarning(UserWarning):
    """``save_graph`` wrote DOT text because Graphviz's ``dot`` program is not installed."""


def draw_graph(value: Value, format: str = "svg", rankdir: str = "LR") -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of everything ``value`` depends on, one box per Value
    showing its label (when set), op, data and grad, with an arrow from each input.

    Arrows into a node with several inputs are named after the op's formula (a, b, ...),
    so ``a * a`` shows two arrows from the one ``a``. In Jupyter the Digraph displays
    itself; ``save_graph`` writes it to a file.
    """
    if not isinstance(value, Value):
        raise TypeError(f"draw_graph needs a Value, got {type(value).__name__}")
    if rankdir not in _RANKDIRS:
        raise ValueError(f"rankdir must be one of {_RANKDIRS}, got {rankdir!r}")
    order = topological_order(value)
    ids = {node: f"n{i}" for i, node in enumerate(order)}
    dot = graphviz.Digraph(
        format=format,
        graph_attr={"rankdir": rankdir},
        node_attr={"shape": "record", "fontname": "Helvetica", "fontsize": "11"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9"},
    )
    for node in order:
        fields = [node.label] if node.label else []
        if node._op:
            fields.append(f"op {node._op}")
        fields += [f"data {_fmt(node.data)}", f"grad {_fmt(node.grad)}"]
        dot.node(ids[node], "{" + " | ".join(_escape_record(f) for f in fields) + "}")
    for node in order:
        roles = _roles(node) if len(node._prev) > 1 else [""] * len(node._prev)
        for parent, role in zip(node._prev, roles):
            dot.edge(ids[parent], ids[node], **({"label": role} if role else {}))
    return dot


def _escape_record(text: str) -> str:
    """Escape the characters that structure a Graphviz record label."""
    text = text.replace("\n", " ").replace("\r", " ")
    for ch in '\\{}|<>"':
        text = text.replace(ch, "\\" + ch)
    return text


def save_graph(value: Value, path: str | os.PathLike[str], rankdir: str = "LR") -> Path:
    """Render ``value``'s graph to ``path`` (.svg, .png or .pdf; .dot or .gv for DOT text)
    and return the path written.

    Without Graphviz's ``dot`` program, writes the DOT text next to it instead
    (``out.svg`` -> ``out.dot``), warns with the command that renders it, and returns
    that path. Files are replaced atomically.
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in (*RENDER_FORMATS, "dot", "gv"):
        raise ValueError(
            f"cannot tell the picture format from {path.name!r}: "
            "use a name ending in .svg, .png, .pdf, or .dot for DOT text"
        )
    graph = draw_graph(value, format="svg" if fmt in ("dot", "gv") else fmt, rankdir=rankdir)
    if fmt in ("dot", "gv"):
        _write_atomic(path, graph.source.encode("utf-8"))
        return path
    try:
        picture = graph.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        dot_path = path.with_suffix(".dot")
        _write_atomic(dot_path, graph.source.encode("utf-8"))
        warnings.warn(_missing_dot_message(dot_path, path), GraphvizMissingWarning, stacklevel=2)
        return dot_path
    _write_atomic(path, picture)
    return path


def _missing_dot_message(dot_path: Path, wanted: Path) -> str:
    fmt = wanted.suffix.lower().lstrip(".")
    command = f"dot -T{fmt} {shlex.quote(str(dot_path))} -o {shlex.quote(str(wanted))}"
    return (
        f"Graphviz's `dot` program was not found, so the graph was written as DOT text to "
        f"{dot_path}. Install Graphviz (e.g. `apt install graphviz` or `brew install "
        f"graphviz`), then render it with: {command}"
    )


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (files.atomic_write)."""
    atomic_write(path, lambda f: f.write(data), binary=True)


# ---------------------------------------------------------------------- the command
def run(args: argparse.Namespace) -> int:
    """The ``explain`` command (its options are in cli.py): 0 on success, 2 for a refused
    expression or argument."""
    from .cli import emit  # the command line's printing, shared with train and evaluate

    prog = "modelwright-autograd explain: error:"
    if args.graph is not None:
        graph_path = Path(args.graph)
        if graph_path.suffix.lower().lstrip(".") not in (*RENDER_FORMATS, "dot", "gv"):
            print(
                f"{prog} --graph {args.graph!r}: use a .svg, .png, .pdf or .dot file name",
                file=sys.stderr,
            )
            return 2
        if not graph_path.resolve().parent.is_dir():
            print(f"{prog} --graph {args.graph!r}: the folder does not exist", file=sys.stderr)
            return 2
    try:
        variables = parse_assignments(args.assignments)
        out = parse_expression(args.expression, variables)
    except ExpressionError as e:
        print(f"{prog} {e}", file=sys.stderr)
        return 2
    trace = explain(out, variables)
    if emit([trace.to_json() if args.json else trace.to_text()]):
        return 1  # the reader went away (``| head``)
    used = set(topological_order(out))
    for name, v in variables.items():
        if v not in used:
            print(f"note: {name} is given but not used, so its gradient is 0", file=sys.stderr)
    if args.graph is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", GraphvizMissingWarning)
            written = save_graph(out, args.graph)
        for w in caught:
            print(f"note: {w.message}", file=sys.stderr)
        print(f"graph written to {written}", file=sys.stderr)
    return 0
