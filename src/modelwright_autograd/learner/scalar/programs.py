"""Expressions the grader builds in a learner's engine, written once as small programs.

A program is JSON-able data: ``{"inputs": [2.0, -1.5], "steps": [["mul", 0, 1],
["tanh", 2]]}``. Slots ``0..n-1`` are the inputs (leaf Values), each step appends one slot,
and the last step is the output. A step names an op from ``OPS`` and the slots it reads;
ops with a constant carry the number last (``["pow", 0, 3.0]`` is ``a ** 3.0``). Slots can
be read by several steps, so a program can reuse a value and build diamonds.

Each op is a Python template (``"{x} ** {c}"``), the one description used three ways: the
child process evaluates it on the learner's ``Value``, the PyTorch oracle on float64
tensors, and ``to_code`` renders it into the lines a learner pastes to reproduce a failure.
The child loads this file by path into no entry of ``sys.modules``: ``Op`` is a NamedTuple,
as a dataclass with string annotations would look its module up there by name.
"""

from __future__ import annotations

import math
import random
from typing import Any, NamedTuple

Program = dict[str, Any]


class Op(NamedTuple):
    """One operation: its template, how many Values it reads, and whether a constant
    follows them."""

    template: str
    arity: int
    constant: bool = False


OPS: dict[str, Op] = {
    "add": Op("{x} + {y}", 2),
    "mul": Op("{x} * {y}", 2),
    "sub": Op("{x} - {y}", 2),
    "div": Op("{x} / {y}", 2),
    "pow": Op("{x} ** {c}", 1, constant=True),
    "neg": Op("-{x}", 1),
    "add_c": Op("{x} + {c}", 1, constant=True),
    "mul_c": Op("{x} * {c}", 1, constant=True),
    "sub_c": Op("{x} - {c}", 1, constant=True),
    "div_c": Op("{x} / {c}", 1, constant=True),
    "radd": Op("{c} + {x}", 1, constant=True),
    "rmul": Op("{c} * {x}", 1, constant=True),
    "rsub": Op("{c} - {x}", 1, constant=True),
    "rdiv": Op("{c} / {x}", 1, constant=True),
    "rpow": Op("{c} ** {x}", 1, constant=True),
    "tanh": Op("{x}.tanh()", 1),
    "relu": Op("{x}.relu()", 1),
    "exp": Op("{x}.exp()", 1),
    "log": Op("{x}.log()", 1),
    "sigmoid": Op("{x}.sigmoid()", 1),
}

NONLINEARITIES = ("tanh", "relu", "sigmoid")


def step_expression(step: list[Any], names: list[str]) -> str:
    """The Python expression of one step, reading its inputs from ``names``."""
    op = OPS[step[0]]
    fields = {"x": names[step[1]]}
    if op.arity == 2:
        fields["y"] = names[step[2]]
    if op.constant:
        fields["c"] = repr(float(step[-1]))
    return op.template.format(**fields)


def evaluate(program: Program, leaf: Any) -> list[Any]:
    """Run ``program`` with ``leaf(number)`` making each input; return every slot.

    The child process calls this with the learner's ``Value``, the oracles with their own
    number types. Each template is evaluated with the slots bound to names: exactly the
    code ``to_code`` shows.
    """
    slots = [leaf(x) for x in program["inputs"]]
    for step in program["steps"]:
        slots.append(evaluate_step(step, slots))
    return slots


def evaluate_step(step: list[Any], slots: list[Any]) -> Any:
    """The value of one step, reading its inputs from ``slots``."""
    op = OPS[step[0]]
    env = {"x": slots[step[1]]}
    if op.arity == 2:
        env["y"] = slots[step[2]]
    if op.constant:
        env["c"] = float(step[-1])
    return eval(_compiled(step[0]), {}, env)


_CODE_CACHE: dict[str, Any] = {}


def _compiled(name: str) -> Any:
    if name not in _CODE_CACHE:
        source = OPS[name].template.format(x="x", y="y", c="c")
        _CODE_CACHE[name] = compile(source, f"<{name}>", "eval")
    return _CODE_CACHE[name]


def input_names(program: Program) -> list[str]:
    """a, b, c, ... for the inputs (a0, a1, ... past 26)."""
    n = len(program["inputs"])
    letters = "abcdefghijklmnopqrstuvwxyz"
    return list(letters[:n]) if n <= len(letters) else [f"a{i}" for i in range(n)]


def slot_names(program: Program) -> list[str]:
    """The names the reproduce block gives each slot: a, b, ..., v1, v2, ..., out."""
    steps = len(program["steps"])
    return [*input_names(program), *(f"v{k}" for k in range(1, steps)), "out"]


def to_code(program: Program, import_lines: list[str], expected: dict[str, float]) -> list[str]:
    """Pasteable lines that build ``program`` in the learner's engine, call backward()
    and print what the grader compared, with the oracle's numbers in a comment."""
    names = slot_names(program)
    first = len(program["inputs"])
    lines = list(import_lines)
    for name, x in zip(names, program["inputs"]):
        lines.append(f"{name} = Value({float(x)!r})")
    for i, step in enumerate(program["steps"]):
        lines.append(f"{names[first + i]} = {step_expression(step, names)}")
    lines.append("out.backward()")
    shown = ", ".join(f"{n}.grad" for n in input_names(program))
    want = ", ".join(f"{label} {value:.10g}" for label, value in expected.items())
    lines.append(f"print(out.data, {shown})  # expected: {want}")
    return lines


# Constants the random programs draw from; exponents kept to the ones every course engine
# supports (an int or float power of a Value).
_CONSTANTS = (2.0, -1.5, 0.5, 3.0)
_EXPONENTS = (2.0, 3.0, -1.0, 0.5)
_BASES = (2.0, 0.5, 3.0)


def random_programs(ops: list[str], count: int, seed: int = 0) -> list[Program]:
    """``count`` random programs using only ``ops``, each with 1-4 inputs and 3-10 steps.

    Steps read mostly recent slots, so values are reused and graphs branch and rejoin.
    Each candidate step is computed in floats first and refused when it leaves the region
    where every oracle is exact: a division or log near 0, relu near its kink, a value
    beyond 20 in size, a fractional power of a small or negative base.
    """
    rng = random.Random(seed)
    programs = []
    while len(programs) < count:
        inputs = [round(rng.uniform(-2.0, 2.0), 3) for _ in range(rng.randint(1, 4))]
        values = list(inputs)
        steps: list[list[Any]] = []
        target = rng.randint(3, 10)
        tries = 0
        while len(steps) < target and tries < 200:
            tries += 1
            name = rng.choice(ops)
            op = OPS[name]
            x = _pick(rng, len(values))
            step: list[Any] = [name, x]
            if op.arity == 2:
                step.append(_pick(rng, len(values)))
            if op.constant:
                pool = _EXPONENTS if name == "pow" else _BASES if name == "rpow" else _CONSTANTS
                step.append(rng.choice(pool))
            result = _safe_float_step(step, values)
            if result is None:
                continue
            steps.append(step)
            values.append(result)
        program = _prune({"inputs": inputs, "steps": steps})
        if len(program["steps"]) >= 3:
            programs.append(program)
    return programs


def _prune(program: Program) -> Program:
    """Drop the steps the output does not depend on, renumbering the slots."""
    n_inputs, steps = len(program["inputs"]), program["steps"]
    if not steps:
        return program
    needed = {n_inputs + len(steps) - 1}
    for index in range(len(steps) - 1, -1, -1):
        if n_inputs + index in needed:
            step = steps[index]
            needed.update(step[1 : 1 + OPS[step[0]].arity])
    renumber = {i: i for i in range(n_inputs)}
    kept = []
    for index, step in enumerate(steps):
        if n_inputs + index in needed:
            arity = OPS[step[0]].arity
            reads = [renumber[i] for i in step[1 : 1 + arity]]
            kept.append([step[0], *reads, *step[1 + arity :]])
            renumber[n_inputs + index] = n_inputs + len(kept) - 1
    return {"inputs": program["inputs"], "steps": kept}


def _pick(rng: random.Random, n: int) -> int:
    """A slot index, favouring the latest slots so the graph grows deep, not wide."""
    return max(0, n - 1 - int(rng.expovariate(0.7)))


def _safe_float_step(step: list[Any], values: list[float]) -> float | None:
    """The step's value in floats, or None when it is too near an edge to test fairly."""
    name, x = step[0], values[step[1]]
    y = values[step[2]] if OPS[name].arity == 2 else None
    c = step[-1] if OPS[name].constant else None
    too_near_an_edge = (
        (name == "div" and abs(y) < 0.3)
        or (name == "rdiv" and abs(x) < 0.3)
        or (name == "log" and x < 0.3)
        or (name == "relu" and abs(x) < 0.1)
        or (name == "pow" and (abs(x) < 0.3 or (c == 0.5 and x < 0.3)))
        or (name == "rpow" and abs(x) > 4.0)
        or (name == "exp" and x > 3.0)
    )
    if too_near_an_edge:
        return None
    result = evaluate_step(step, [Real(v) for v in values]).value
    return result if abs(result) <= 20.0 else None


class Real:
    """A plain float with the ops' methods (``Real(2.0).tanh()``), so programs run on
    floats: the finite-difference oracle and the random generator use it."""

    __slots__ = ("value",)

    def __init__(self, value: float) -> None:
        self.value = float(value)

    @staticmethod
    def _of(x: Any) -> float:
        return x.value if isinstance(x, Real) else float(x)

    def __add__(self, o: Any) -> Real:
        return Real(self.value + Real._of(o))

    def __radd__(self, o: Any) -> Real:
        return Real(Real._of(o) + self.value)

    def __mul__(self, o: Any) -> Real:
        return Real(self.value * Real._of(o))

    def __rmul__(self, o: Any) -> Real:
        return Real(Real._of(o) * self.value)

    def __sub__(self, o: Any) -> Real:
        return Real(self.value - Real._of(o))

    def __rsub__(self, o: Any) -> Real:
        return Real(Real._of(o) - self.value)

    def __truediv__(self, o: Any) -> Real:
        return Real(self.value / Real._of(o))

    def __rtruediv__(self, o: Any) -> Real:
        return Real(Real._of(o) / self.value)

    def __pow__(self, o: Any) -> Real:
        return Real(self.value ** Real._of(o))

    def __rpow__(self, o: Any) -> Real:
        return Real(Real._of(o) ** self.value)

    def __neg__(self) -> Real:
        return Real(-self.value)

    def tanh(self) -> Real:
        return Real(math.tanh(self.value))

    def relu(self) -> Real:
        return Real(max(0.0, self.value))

    def exp(self) -> Real:
        return Real(math.exp(self.value))

    def log(self) -> Real:
        return Real(math.log(self.value))

    def sigmoid(self) -> Real:
        return Real(1.0 / (1.0 + math.exp(-self.value)))
