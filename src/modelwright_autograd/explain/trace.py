"""The narrated backward pass: ``explain(value)`` runs ``backward()`` and records every step.

For every node, in the reverse topological order backward() uses, the trace holds the
gradient that arrived, each input's local derivative (its formula and its value) and the
amount pushed to that input. The numbers are not a second copy of the calculus: each comes
from calling the node's own backward rule, which returns its inputs' gradients, so the
narration cannot disagree with the engine. A node whose gradient is 0.0, which backward()
may skip (its rule would push only +-0.0), is shown with its zeros all the same, and so is
an inactive ReLU neuron (a ``dot_relu`` whose output is 0), for which the engine records no
rule at all: its step says that nothing reaches its inputs. The same
``Trace`` is printed as a table, as JSON (``to_dict``), drawn by ``picture.py`` and
animated by ``page.py``; ``narrate.explain`` runs the pass and records it (this module
imports neither, so the trace sits below every view of it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..graph import topological_order
from ..scalar.engine import Value

#: Node names in tables and pictures are cut to this many characters.
MAX_NAME = 40
#: An accumulation line shows at most this many terms (the first and the last few).
MAX_TERMS = 8

#: What each column of the printed table means (also the page's legend).
LEGEND = (
    ("step", "the order in which backward() walks the nodes"),
    ("node", "the value whose rule runs: its text in the expression (v1, v2... if unnamed)"),
    ("op", "the operation that made it"),
    ("data", "its value, from the forward pass"),
    ("grad in", "d(output)/d(node): the gradient that arrived, summed over every use"),
    ("input", "one of the node's inputs"),
    (
        "role",
        "which operand the input is: left/right of + - * /, base/exponent of **,\n"
        "input of a function, term1.. of a sum, weight1../input1../bias of a dot (dot_relu)",
    ),
    ("data", "the input's value"),
    ("local", "d(node)/d(input), the op's own derivative: its formula = its value"),
    (
        "pushed",
        "local * grad in, added (+=) to the input's grad; '-' for a constant\n"
        "(a number in the expression), which needs no gradient",
    ),
)


@dataclass(frozen=True)
class Node:
    """One Value of the graph. ``id`` is its index in topological order (inputs first)."""

    id: int
    name: str
    op: str
    data: float
    grad: float
    inputs: tuple[int, ...]
    kind: str  # "variable" (a leaf whose gradient is reported), "constant" or "op"


@dataclass(frozen=True)
class InputStep:
    """What one node passed to one of its inputs during backward.

    ``local`` is d(node)/d(input), ``formula`` the same derivative written with the
    inputs' names, and ``pushed`` = local * (gradient that arrived), the amount added to
    the input's grad. ``local`` and ``pushed`` are None for a constant.
    """

    id: int
    node: str
    role: str
    data: float
    formula: str
    local: float | None
    pushed: float | None


@dataclass(frozen=True)
class Step:
    """One node visited by backward: its gradient on arrival and what it pushed on."""

    step: int
    id: int
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
    nodes: tuple[Node, ...]
    steps: tuple[Step, ...]
    grads: dict[str, float]
    before: dict[str, float]
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"<Trace of {self.output!r}: {len(self.steps)} steps, grads {self.grads}>"

    def __str__(self) -> str:
        return self.to_text()

    def received(self) -> dict[int, list[tuple[str, float]]]:
        """For each node id, what each use pushed into it, in the order it arrived:
        ``[(name of the node that pushed, amount), ...]``."""
        into: dict[int, list[tuple[str, float]]] = {}
        for s in self.steps:
            for i in s.inputs:
                if i.pushed is not None:
                    into.setdefault(i.id, []).append((s.node, i.pushed))
        return into

    def accumulations(self) -> list[str]:
        """One line per value that collects gradient on several paths, in the order they
        first receive some: ``a: -0.604 (via tanh(a*b + c)) + -0.635 (via a*b) = -1.239``."""
        lines = []
        received = self.received()
        names = {n.id: n.name for n in self.nodes}
        for node_id, parts in received.items():
            prior = self.before.get(names[node_id], 0.0) if not self.nodes[node_id].inputs else 0.0
            if len(parts) + (prior != 0.0) < 2:
                continue
            terms = [f"{_fmt(prior)} (before)"] if prior != 0.0 else []
            total = prior
            for via, amount in parts:
                terms.append(f"{_fmt(amount)} (via {via})")
                total += amount
            if len(terms) > MAX_TERMS:  # keep the line readable: the first and last few
                hidden = len(terms) - MAX_TERMS + 1
                terms[MAX_TERMS - 3 : -2] = [f"... ({hidden} more)"]
            lines.append(f"{names[node_id]}: {' + '.join(terms)} = {_fmt(total)}")
        return lines

    def to_dict(self) -> dict:
        """``{"value", "grads", "nodes", "steps"}``; non-finite numbers become the strings
        "inf", "-inf" and "nan", since JSON has no literal for them."""
        return {
            "value": _json_number(self.value),
            "grads": {k: _json_number(v) for k, v in self.grads.items()},
            "nodes": [
                {
                    "id": n.id,
                    "name": n.name,
                    "op": n.op,
                    "kind": n.kind,
                    "data": _json_number(n.data),
                    "grad": _json_number(n.grad),
                    "inputs": list(n.inputs),
                }
                for n in self.nodes
            ],
            "steps": [
                {
                    "step": s.step,
                    "id": s.id,
                    "node": s.node,
                    "op": s.op,
                    "data": _json_number(s.data),
                    "grad": _json_number(s.grad),
                    "inputs": [
                        {
                            "id": i.id,
                            "node": i.node,
                            "role": i.role,
                            "data": _json_number(i.data),
                            "formula": i.formula,
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
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_text(self) -> str:
        lines = [f"{self.output} = {_fmt(self.value)}", ""]
        if self.steps:
            lines += [
                "Backward pass, in reverse topological order (each node comes after every "
                "node that uses it).",
                "The columns:",
                *(
                    f"  {name:<8} {meaning}".replace("\n", "\n" + " " * 11)
                    for name, meaning in LEGEND
                ),
                "",
            ]
            header = tuple(name for name, _ in LEGEND)
            rows = [header]
            for s in self.steps:
                for k, i in enumerate(s.inputs):
                    left = (str(s.step), s.node, s.op, _fmt(s.data), _fmt(s.grad))
                    rows.append(
                        (
                            *(left if k == 0 else ("",) * 5),
                            i.node,
                            i.role,
                            _fmt(i.data),
                            local_text(i),
                            _fmt(i.pushed),
                        )
                    )
            widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
            for r in rows:
                lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
            lines.append("")
        else:
            lines += ["The output is a leaf: backward() only seeds its gradient.", ""]
        accumulations = self.accumulations()
        if accumulations:
            lines.append(
                "Accumulation: a value used on several paths adds up (+=) what each pushed:"
            )
            lines += [f"  {line}" for line in accumulations]
            lines.append("")
        if self.grads:
            lines.append(f"Gradients of {self.output}:")
            width = max(len(name) for name in self.grads)
            lines += [f"  d/d{name.ljust(width)} = {_fmt(g)}" for name, g in self.grads.items()]
        lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines)


def local_text(i: InputStep) -> str:
    """``b = 3``: the local derivative's formula and value (just ``1`` when they agree)."""
    if i.local is None:
        return "-"
    value = _fmt(i.local)
    return value if i.formula in ("", value) else f"{i.formula} = {value}"


def record(
    value: Value,
    variables: Mapping[str, Value] | None = None,
    order: list[Value] | None = None,
    before: Mapping[str, float] | None = None,
    notes: tuple[str, ...] = (),
) -> Trace:
    """The trace of the graph's current state, without running backward (``draw_graph``
    uses it to label a picture with what the last pass pushed)."""
    order = topological_order(value) if order is None else order
    variables = name_variables(order, variables)
    ids = {node: k for k, node in enumerate(order)}
    reported = {id(v) for v in variables.values()}
    names = _node_names(order, variables)
    nodes = tuple(
        Node(
            ids[n],
            names[n],
            _escaped(n._op),
            n.data,
            n.grad,
            tuple(ids[p] for p in n._prev),
            "op" if n._prev else ("variable" if id(n) in reported else "constant"),
        )
        for n in order
    )
    # After backward(), an interior node's grad is exactly what it held when its rule
    # ran: every node that uses it came earlier in the walk, and nothing writes to it
    # afterwards. So the steps can be read off the finished pass.
    steps = []
    for node in reversed(order):
        if not node._prev:
            continue
        if node._backward is None:  # an inactive dot_relu: the engine records no rule
            local = pushed = [0.0] * len(node._prev)  # relu passes nothing back
        else:
            local = _run_rule(node, 1.0)
            pushed = _run_rule(node, node.grad)
        roles = _roles(node)
        constant = [nodes[ids[p]].kind == "constant" for p in node._prev]
        formulas = _formulas(node, roles, [names[p] for p in node._prev], constant)
        inputs = tuple(
            InputStep(
                ids[p],
                names[p],
                roles[k],
                p.data,
                formulas[k],
                *((None, None) if constant[k] else (local[k], pushed[k])),
            )
            for k, p in enumerate(node._prev)
        )
        op = _escaped(node._op)
        steps.append(Step(len(steps) + 1, ids[node], names[node], op, node.data, node.grad, inputs))
    grads = {name: v.grad for name, v in variables.items()}
    return Trace(names[value], value.data, nodes, tuple(steps), grads, dict(before or {}), notes)


def _run_rule(node: Value, upstream: float) -> list[float]:
    """What ``node``'s backward rule gives each input, given ``upstream`` as its grad: one
    gradient per input position, so ``a * a`` reports both uses separately."""
    return node._input_grads(upstream)


def _roles(node: Value) -> list[str]:
    """Each input's role in its op, in words that are never taken for a variable's name
    in the table (they sit in the "role" column, which the legend explains)."""
    n = len(node._prev)
    if node._op == "sum":
        return [f"term{i + 1}" for i in range(n)]
    if node._op in ("dot", "dot_relu"):
        k = (n - 1) // 2
        return [*(f"weight{i + 1}" for i in range(k)), *(f"input{i + 1}" for i in range(k)), "bias"]
    if node._op == "**":
        return ["base", "exponent"]
    if n == 1:
        return ["input"]
    if n == 2:
        return ["left", "right"]
    return [f"input{i + 1}" for i in range(n)]


#: Each op's local derivatives, written with its inputs' roles (``{input_}``: the name
#: as is, inside a call's brackets). The engine's own rules compute the numbers; tests
#: check the two agree.
_FORMULAS = {
    "+": ("1", "1"),
    "-": ("1", "-1"),
    "*": ("{right}", "{left}"),
    "/": ("1/{right}", "-{left}/{right}**2"),
    "**": ("{exponent}*{base}**({exponent}-1)", "{base}**{exponent}*log({base})"),
    "neg": ("-1",),
    "exp": ("exp({input_})",),
    "log": ("1/{input}",),
    "tanh": ("1 - tanh({input_})**2",),
    "relu": ("1 if {input} > 0 else 0",),
    "sigmoid": ("sigmoid({input_})*(1 - sigmoid({input_}))",),
}


def _formulas(node: Value, roles: list[str], names: list[str], constant: list[bool]) -> list[str]:
    """Each input's local derivative as a formula in the inputs' names (``a*b``: b, a)."""
    shown = [_operand(name) for name in names]
    if node._op == "sum":
        return ["1"] * len(names)
    if node._op in ("dot", "dot_relu"):
        if node._op == "dot_relu" and not node.data > 0.0:  # relu is off: nothing passes
            return ["0 (relu off)"] * len(names)
        k = (len(names) - 1) // 2  # relu on (or no relu): the dot's own derivatives
        return [*shown[k : 2 * k], *shown[:k], "1"]
    templates = _FORMULAS.get(node._op)
    if templates is None or len(templates) != len(names):
        return [""] * len(names)
    values = dict(zip(roles, shown))
    values.update((role + "_", name) for role, name in zip(roles, names))
    if node._op == "**" and constant[1]:  # a number exponent: do n-1 now
        n = node._prev[1].data
        values["exponent"] = _operand(_fmt(n))
        first = f"{values['exponent']}*{values['base']}**{_operand(_fmt(n - 1))}"
        return [first, templates[1].format(**values)]
    return [t.format(**values) for t in templates]


def _operand(name: str) -> str:
    """``name`` as it can stand in a formula: bracketed unless a plain name or number."""
    head, _, number = name.partition("#")  # a#2: the second leaf labelled a
    if head.isidentifier() and (not number or number.isdigit()):
        return name
    if name.replace(".", "", 1).isdigit():
        return name
    head, bracket, _ = name.partition("(")
    if head.isidentifier() and bracket and name.endswith(")"):  # a call, f(...)?
        depth = 0
        for k, ch in enumerate(name):
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and ch == ")":
                if k == len(name) - 1:
                    return name
                break
    return f"({name})"


def name_variables(
    order: list[Value], variables: Mapping[str, Value] | None = None
) -> dict[str, Value]:
    """The leaves whose gradients a trace reports, by the names it shows them under:
    ``variables``' names, or else every labelled leaf's label (``order`` is the graph in
    topological order). In each name a control character, a NUL or a lone surrogate is
    written as its escape (``a\\x00b``, see ``_escaped``), and cut to MAX_NAME characters,
    and two leaves never share one: the second leaf labelled ``a`` is ``a#2``, the third
    ``a#3``. Naming a result again gives it back unchanged."""
    if variables is None:
        pairs = [(_name_of(n), n) for n in order if not n._prev and _name_of(n)]
    else:
        pairs = [(_short(_escaped(str(name))), v) for name, v in variables.items()]
    named: dict[str, Value] = {}
    suffix: dict[str, int] = {}  # the next number to try after each name taken
    for name, v in pairs:
        shown = name
        while shown in named:
            suffix[name] = suffix.get(name, 1) + 1
            shown = f"{name}#{suffix[name]}"
        named[shown] = v
    return named


def _escaped(text: str) -> str:
    """``text`` with each character that no view of a trace can carry written as its
    escape: a control character (``\\x00``, ``\\x1b``, a tab), a lone surrogate
    (``\\udcff``, which UTF-8 cannot encode) and U+FFFE/U+FFFF (which XML refuses).
    Everything else stays, so a name in any script, with joiners or direction marks, reads
    as written (the page and the pictures isolate each name's direction)."""
    if text.isprintable():  # the common case: then none of those is in it
        return text
    return "".join(_escaped_char(c) for c in text)


def _escaped_char(c: str) -> str:
    code = ord(c)
    if code < 0x20 or 0x7F <= code < 0xA0:  # C0, DEL and C1 controls
        return f"\\x{code:02x}"
    if 0xD800 <= code < 0xE000 or code in (0xFFFE, 0xFFFF):
        return f"\\u{code:04x}"
    return c


def _name_of(node: Value) -> str:
    """A node's label as text (``_escaped``), cut to MAX_NAME characters."""
    return _short(_escaped(node.label if isinstance(node.label, str) else str(node.label)))


def _short(text: str) -> str:
    """``text`` with its middle cut out when longer than MAX_NAME characters."""
    if len(text) > MAX_NAME:
        half = (MAX_NAME - 1) // 2
        return text[:half] + "…" + text[-half:]
    return text


def _node_names(order: list[Value], variables: Mapping[str, Value]) -> dict[Value, str]:
    """A readable name per node: its name in ``variables`` (from ``name_variables``), else
    its label, else a constant's value, else v1, v2..."""
    given: dict[int, str] = {}
    for name, v in variables.items():
        given.setdefault(id(v), name)
    names: dict[Value, str] = {}
    count = 0
    for node in order:
        label = given.get(id(node)) or _name_of(node)
        if label:
            names[node] = label
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
