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
from collections.abc import Callable, Mapping
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
    broken: BrokenRun | None = None  # the same pass run with a mistake (breaks.py)

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
            terms = [f"{fmt(prior)} (before)"] if prior != 0.0 else []
            total = prior
            for via, amount in parts:
                terms.append(f"{fmt(amount)} (via {via})")
                total += amount
            if len(terms) > MAX_TERMS:  # keep the line readable: the first and last few
                hidden = len(terms) - MAX_TERMS + 1
                terms[MAX_TERMS - 3 : -2] = [f"... ({hidden} more)"]
            lines.append(f"{names[node_id]}: {' + '.join(terms)} = {fmt(total)}")
        return lines

    def to_dict(self) -> dict:
        """``{"value", "grads", "nodes", "steps"}``; non-finite numbers become the strings
        "inf", "-inf" and "nan", since JSON has no literal for them."""
        return {
            "value": json_number(self.value),
            "grads": {k: json_number(v) for k, v in self.grads.items()},
            "nodes": [
                {
                    "id": n.id,
                    "name": n.name,
                    "op": n.op,
                    "kind": n.kind,
                    "data": json_number(n.data),
                    "grad": json_number(n.grad),
                    "inputs": list(n.inputs),
                }
                for n in self.nodes
            ],
            "steps": [_step_dict(s) for s in self.steps],
        } | ({"broken": self.broken.to_dict()} if self.broken is not None else {})

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_text(self) -> str:
        lines = [f"{self.output} = {fmt(self.value)}", ""]
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
            lines += [*_table(self.steps), ""]
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
            lines += [f"  d/d{name.ljust(width)} = {fmt(g)}" for name, g in self.grads.items()]
        lines += [f"Note: {n}" for n in self.notes]
        if self.broken is not None:
            lines += ["", self.broken.to_text()]
        return "\n".join(lines)


#: The mistakes a broken run makes (``explain(..., broken=...)``, ``explain --break``): the
#: chapter's exercises 3 (why reverse topological order) and 4 (why += and not =).
BREAKS = {
    "order": "the rules run in forward order, as the nodes were made (inputs first), so "
    "each runs before the nodes that use it have pushed into its grad (exercise 3)",
    "assign": "each rule writes its inputs' gradients with = where backward() adds them "
    "with +=, so a value used twice keeps only the share written last (exercise 4)",
}


#: A broken run's "why" lists what went wrong at this many steps at most.
MAX_WHY = 8


class Name(str):
    """A node's or a variable's name inside a ``sentence``."""


def sentence(*pieces: str) -> tuple[str, ...]:
    """Words to show, the ``Name`` pieces kept apart: text at even places, names at odd
    ones (``joined`` makes it a line; the page isolates each name)."""
    out = [""]
    for piece in pieces:
        if isinstance(piece, Name):
            out += [str(piece), ""]
        else:
            out[-1] += piece
    return tuple(out)


def joined(words: tuple[str, ...], name: Callable[[str], str] = str) -> str:
    """A ``sentence`` as one line, each name written by ``name``."""
    return "".join(name(w) if k % 2 else w for k, w in enumerate(words))


@dataclass(frozen=True, repr=False)
class BrokenRun:
    """The backward pass of a trace run again with one mistake (``BREAKS``), really run
    by ``breaks.broken_run``.

    ``trace`` is the broken run: its steps in the order its rules ran, each step's
    ``grad`` what its node held when its rule ran, ``grads`` what it gives each variable.
    ``right`` is what the right pass gives them (from zero, as the broken run starts),
    ``wrong`` the variables whose broken gradient differs, ``said`` what went wrong at
    each step that did (by step number) and ``summary`` what the break did, each a
    ``sentence``; ``marks`` and ``why`` are them as text."""

    mode: str
    trace: Trace
    right: dict[str, float]
    wrong: tuple[str, ...]
    said: dict[int, tuple[str, ...]]
    summary: tuple[str, ...]

    def __repr__(self) -> str:
        return f"<BrokenRun {self.mode!r} of {self.trace.output!r}: wrong {list(self.wrong)}>"

    def __str__(self) -> str:
        return self.to_text()

    @property
    def wrong_step(self) -> int | None:
        """The step where the run first goes wrong (None when none does)."""
        return min(self.said, default=None)

    @property
    def marks(self) -> dict[int, str]:
        """What went wrong at each step that did, by step number."""
        return {n: joined(words) for n, words in self.said.items()}

    @property
    def why(self) -> tuple[str, ...]:
        """What the break did, then what went wrong at each step (the first MAX_WHY)."""
        return self.why_with(str)

    def why_with(self, name: Callable[[str], str]) -> tuple[str, ...]:
        """``why``, each name written by ``name`` (the page isolates them)."""
        steps = list(self.said.items())
        lines = [joined(self.summary, name)]
        lines += [f"Step {n}: {joined(words, name)}" for n, words in steps[:MAX_WHY]]
        if len(steps) > MAX_WHY:
            lines.append(f"... and {len(steps) - MAX_WHY} more steps where it goes wrong")
        return tuple(lines)

    def to_dict(self) -> dict:
        """``{"break", "what", "grads", "right", "wrong", "wrong_step", "why", "steps"}``;
        a step where something went wrong has a ``"mark"`` saying what."""
        return {
            "break": self.mode,
            "what": BREAKS[self.mode],
            "grads": {k: json_number(v) for k, v in self.trace.grads.items()},
            "right": {k: json_number(v) for k, v in self.right.items()},
            "wrong": list(self.wrong),
            "wrong_step": self.wrong_step,
            "why": list(self.why),
            "steps": [_step_dict(s, self.marks.get(s.step)) for s in self.trace.steps],
        }

    def to_text(self) -> str:
        lines = [f"The same pass with a break ({self.mode}): {BREAKS[self.mode]}.", ""]
        if self.trace.steps:
            how = "written (=)" if self.mode == "assign" else "added (+=)"
            lines += [
                f"Columns as above, but 'grad in' is what the node held when its rule ran "
                f"and 'pushed' is {how}:",
                *_table(self.trace.steps, self.marks),
                "",
            ]
        if self.right:
            lines.append(f"Gradients of {self.trace.output}, right and broken:")
            width = max(len(name) for name in self.right)
            right = {name: fmt(g) for name, g in self.right.items()}
            right_width = max(len(text) for text in right.values())
            for name, text in right.items():
                broken = f"broken {fmt(self.trace.grads[name])}"
                wrong = "  wrong" if name in self.wrong else ""
                lines.append(
                    f"  d/d{name.ljust(width)} = {text.ljust(right_width)}  {broken}{wrong}"
                )
        lines += ["Why:", *(f"  {line}" for line in self.why)]
        return "\n".join(lines)


def _table(steps: tuple[Step, ...], marks: Mapping[int, str] | None = None) -> list[str]:
    """The steps as the table's lines, one per input; a step in ``marks`` (by number) has
    ``<- goes wrong here`` after its first line when it is the first of them."""
    header = tuple(name for name, _ in LEGEND)
    rows = [header]
    first = min(marks or {}, default=None)
    marked = []
    for s in steps:
        for k, i in enumerate(s.inputs):
            left = (str(s.step), s.node, s.op, fmt(s.data), fmt(s.grad))
            row = (*(left if k == 0 else ("",) * 5), i.node, i.role, fmt(i.data))
            rows.append((*row, local_text(i), fmt(i.pushed)))
            marked.append(s.step == first and k == 0)
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    return [lines[0]] + [
        line + ("  <- goes wrong here" if m else "") for line, m in zip(lines[1:], marked)
    ]


def _step_dict(s: Step, mark: str | None = None) -> dict:
    """One step as JSON (with ``"mark"``, what went wrong there, for a broken run's)."""
    return {
        "step": s.step,
        "id": s.id,
        "node": s.node,
        "op": s.op,
        "data": json_number(s.data),
        "grad": json_number(s.grad),
        "inputs": [
            {
                "id": i.id,
                "node": i.node,
                "role": i.role,
                "data": json_number(i.data),
                "formula": i.formula,
                "local": json_number(i.local),
                "pushed": json_number(i.pushed),
            }
            for i in s.inputs
        ],
    } | ({"mark": mark} if mark is not None else {})


def local_text(i: InputStep) -> str:
    """``b = 3``: the local derivative's formula and value (just ``1`` when they agree)."""
    if i.local is None:
        return "-"
    value = fmt(i.local)
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
    steps: list[Step] = []
    for node in reversed(order):
        if node._prev:
            steps.append(
                step_of(len(steps) + 1, node, node.grad, pushes(node, node.grad), ids, nodes)
            )
    grads = {name: v.grad for name, v in variables.items()}
    return Trace(names[value], value.data, nodes, tuple(steps), grads, dict(before or {}), notes)


def step_of(
    number: int,
    node: Value,
    held: float,
    pushed: list[float],
    ids: Mapping[Value, int],
    nodes: tuple[Node, ...],
) -> Step:
    """Step ``number``: ``node``'s rule run with ``held`` as its grad, giving ``pushed``
    (``ids``: each Value's place in the graph's order; ``nodes``: the trace's, by place)."""
    local = pushes(node, 1.0)
    names = [nodes[ids[p]].name for p in node._prev]
    roles = _roles(node)
    constant = [nodes[ids[p]].kind == "constant" for p in node._prev]
    formulas = _formulas(node, roles, names, constant)
    inputs = tuple(
        InputStep(
            ids[p],
            names[k],
            roles[k],
            p.data,
            formulas[k],
            *((None, None) if constant[k] else (local[k], pushed[k])),
        )
        for k, p in enumerate(node._prev)
    )
    me = nodes[ids[node]]
    return Step(number, me.id, me.name, me.op, node.data, held, inputs)


def pushes(node: Value, held: float) -> list[float]:
    """What ``node``'s rule gives each input when its grad is ``held``; zeros for an
    inactive dot_relu, for which the engine records no rule (relu passes nothing back)."""
    if node._backward is None:
        return [0.0] * len(node._prev)
    return _run_rule(node, held)


def _run_rule(node: Value, upstream: float) -> list[float]:
    """What ``node``'s backward rule gives each input, given ``upstream`` as its grad: one
    gradient per input position, so ``a * a`` reports both uses separately."""
    return node.input_grads(upstream)


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
        values["exponent"] = _operand(fmt(n))
        first = f"{values['exponent']}*{values['base']}**{_operand(fmt(n - 1))}"
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
        pairs = [(shorten_middle(_escaped(str(name))), v) for name, v in variables.items()]
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
    return shorten_middle(_escaped(node.label if isinstance(node.label, str) else str(node.label)))


def shorten_middle(text: str) -> str:
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
            names[node] = fmt(node.data)
        else:
            count += 1
            names[node] = f"v{count}"
    return names


def fmt(x: float | None) -> str:
    """Six significant digits: 3.0 prints as 3, 1/3 as 0.333333, None as '-'."""
    return "-" if x is None else format(x, ".6g")


def json_number(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
