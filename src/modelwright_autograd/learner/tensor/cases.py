"""What the tensor checks ask: the programs (inputs, steps and the weight W of each loss
``(out * W).sum()``), each op's table of shapes with the classic bugs it can name, the number
forms, and the training run's settings. ``tensor_grader`` runs them, with ``tensor_ops`` and
``tensor_network``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .oracle import array_of, forward
from .programs import OPS, Program

Shape = tuple[int, ...]
# A candidate bug: (words, the gradients it gives from the inputs and out.grad W).
Bug = tuple[str, Callable[..., list[np.ndarray]]]

EPOCHS = 20  # SGD epochs on the digits
TARGET_ACCURACY = 0.95
AFFINE_GAP = 1e-9  # |f(mid) - mean(f(x1), f(x2))| / |f| below this on every pair: affine


# ---------------------------------------------------------------------- the programs
def array_json(values: np.ndarray) -> dict[str, Any]:
    return {"shape": list(values.shape), "data": [float(v) for v in values.ravel()]}


def _numbers(rng: np.random.RandomState, shape: Shape, low: float, high: float) -> np.ndarray:
    """Uniform in [low, high] with two decimals, kept 0.1 away from 0 (relu's kink)."""
    x = np.round(rng.uniform(low, high, shape), 2)
    return np.where(np.abs(x) < 0.1, 0.5, x)


def _weight(rng: np.random.RandomState, shape: Shape) -> dict[str, Any]:
    w = np.round(rng.uniform(0.3, 1.5, shape), 1) * rng.choice([-1.0, 1.0], shape)
    return array_json(np.asarray(w))


def make_program(
    seed: int,
    shapes: list[Shape],
    steps: list[list[Any]],
    positive: tuple[int, ...] = (),
    weighted: bool = True,
) -> Program:
    """Inputs of ``shapes`` (those in ``positive`` in [0.5, 2]), ``steps``, and a weight
    of the output's shape (found by running the steps on zeros-free NumPy arrays)."""
    rng = np.random.RandomState(seed)
    arrays = [
        _numbers(rng, s, 0.5, 2.0) if i in positive else _numbers(rng, s, -2.0, 2.0)
        for i, s in enumerate(shapes)
    ]
    program: Program = {"inputs": [array_json(a) for a in arrays], "steps": steps}
    if weighted:
        program["weight"] = _weight(rng, forward(program).shape)
    return program


# ---------------------------------------------------------------------- the op table
@dataclass(frozen=True)
class Case:
    """One program of an op's table, and what it exercises."""

    program: Program
    leading: bool = False  # an input broadcast by adding axes on the left
    stretched: bool = False  # an input broadcast by stretching an axis of size 1
    kind: str = ""  # matmul: 1-D, 2-D, ...; sum: "dropped"; relu: "zeros" (torch's oracle only)


@dataclass(frozen=True)
class OpSpec:
    label: str
    op: str
    required: bool
    cases: Callable[[], list[Case]]
    bugs: list[Bug] = field(default_factory=list)  # on the first (same-shape) case


BROADCASTS: list[tuple[Shape, Shape]] = [
    ((2, 3), (2, 3)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((3,), (2, 3)),
    ((2, 3), (3,)),
    ((1, 3), (2, 3)),
    ((2, 1), (2, 3)),
    ((2, 3), (2, 1)),
    ((2, 1), (1, 3)),
    ((4, 2, 3), (2, 3)),
    ((4, 1, 3), (4, 2, 1)),
]


def _stretched(shape: Shape, out: Shape) -> bool:
    tail = out[len(out) - len(shape) :] if shape else ()
    return any(s == 1 and o != 1 for s, o in zip(shape, tail))


def _binary_cases(op: str, seed: int) -> Callable[[], list[Case]]:
    def cases() -> list[Case]:
        made = []
        for i, (a, b) in enumerate(BROADCASTS):
            program = make_program(
                seed + i, [a, b], [[op, 0, 1]], positive=(1,) if op == "div" else ()
            )
            out = tuple(np.broadcast_shapes(a, b))
            made.append(
                Case(
                    program,
                    leading=len(a) < len(out) or len(b) < len(out),
                    stretched=_stretched(a, out) or _stretched(b, out),
                )
            )
        return made

    return cases


MATMULS: list[tuple[str, Shape, Shape]] = [
    ("2-D", (2, 3), (3, 4)),
    ("square", (3, 3), (3, 3)),
    ("1-D", (3,), (3,)),
    ("1-D", (2, 3), (3,)),
    ("1-D", (3,), (3, 4)),
    ("batch", (5, 2, 3), (5, 3, 4)),
    ("batch-broadcast", (5, 2, 3), (3, 4)),
]


def _matmul_cases() -> list[Case]:
    return [
        Case(make_program(40 + i, [a, b], [["matmul", 0, 1]]), kind=kind)
        for i, (kind, a, b) in enumerate(MATMULS)
    ]


REDUCTIONS: list[tuple[Shape, int | None, bool]] = [
    ((2, 3), None, False),
    ((2, 3), 0, True),
    ((2, 3), 1, True),
    ((2, 3), 0, False),
    ((2, 3), 1, False),
    ((2, 3), -1, False),
    ((2, 3, 4), 1, True),
    ((2, 3, 4), 1, False),
]


def _reduction_cases(op: str, seed: int) -> Callable[[], list[Case]]:
    def cases() -> list[Case]:
        return [
            Case(
                make_program(seed + i, [shape], [[op, 0, axis, keepdims]]),
                kind="" if axis is None or keepdims else "dropped",
            )
            for i, (shape, axis, keepdims) in enumerate(REDUCTIONS)
        ]

    return cases


def _unary_cases(
    op: str,
    seed: int,
    positive: bool = False,
    shapes: tuple[Shape, ...] = ((2, 3), (4, 2, 3)),
    zeros: bool = False,
) -> Callable[[], list[Case]]:
    def cases() -> list[Case]:
        made = []
        for i, shape in enumerate(shapes):
            pos = (0,) if positive else ()
            made.append(Case(make_program(seed + i, [shape], [[op, 0]], positive=pos)))
        if zeros:  # exact zeros: where relu's mask must say 0, as torch's does
            program = make_program(seed + len(shapes), [(2, 3)], [[op, 0]])
            program["inputs"][0]["data"][::2] = [0.0, 0.0, 0.0]
            made.append(Case(program, kind="zeros"))
        return made

    return cases


def _transpose_cases() -> list[Case]:
    """2-D, where every order is its own inverse, and an order of three axes that is not
    (NumPy's transpose(1, 2, 0); an engine whose transpose swaps two axes, as torch's
    does, skips it)."""
    return [
        *_unary_cases("transpose", 72, shapes=((2, 3), (4, 2)))(),
        Case(make_program(74, [(2, 3, 4)], [["transpose_axes", 0]]), kind="axes"),
    ]


def _reshape_cases() -> list[Case]:
    return [
        Case(make_program(70, [(2, 3)], [["reshape", 0, [3, 2]]])),
        Case(make_program(71, [(2, 3, 4)], [["reshape", 0, [6, 4]]])),
    ]


def _cross_entropy_cases() -> list[Case]:
    return [
        Case(make_program(80, [(4, 5)], [["cross_entropy", 0, [0, 3, 1, 4]]], weighted=False)),
        Case(
            make_program(
                81, [(3, 4)], [["cross_entropy", 0, [2, 0, 3]], ["mul_c", 1, 2.5]], weighted=False
            ),
            kind="upstream",
        ),
        _large(make_program(82, [(3, 4)], [["cross_entropy", 0, [2, 0, 3]]], weighted=False)),
    ]


def _large(program: Program) -> Case:
    """The program with its input scaled to hundreds (up to 1000): exp overflows there
    unless the max is subtracted first, as torch does (torch's oracle only)."""
    program["inputs"][0]["data"] = [500.0 * v for v in program["inputs"][0]["data"]]
    return Case(program, kind="large")


def softmax_array(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


OP_SPECS = [
    OpSpec(
        "a * b",
        "mul",
        True,
        _binary_cases("mul", 10),
        [
            (
                "each input received its own value: d(a*b)/da = b, so "
                "self.grad += other.data * out.grad (and the other way round)",
                lambda a, b, g: [a * g, b * g],
            ),
            ("treated like +: d(a*b)/da = b, not 1", lambda a, b, g: [g, g]),
        ],
    ),
    OpSpec("a + b", "add", True, _binary_cases("add", 0)),
    OpSpec(
        "a - b",
        "sub",
        True,
        _binary_cases("sub", 20),
        [("the sign of the second input: d(a-b)/db = -1", lambda a, b, g: [g, g])],
    ),
    OpSpec(
        "a / b",
        "div",
        True,
        _binary_cases("div", 30),
        [
            ("division's sign: d(a/b)/db = -a/b**2", lambda a, b, g: [g / b, a / b**2 * g]),
            ("d(a/b)/db = -a/b**2: the a is missing", lambda a, b, g: [g / b, -g / b**2]),
        ],
    ),
    OpSpec("a @ b", "matmul", True, _matmul_cases),
    OpSpec("sum", "sum", True, _reduction_cases("sum", 50)),
    OpSpec("mean", "mean", False, _reduction_cases("mean", 60)),
    OpSpec("reshape", "reshape", False, _reshape_cases),
    OpSpec("transpose", "transpose", False, _transpose_cases),
    OpSpec("exp", "exp", False, _unary_cases("exp", 90)),
    OpSpec("log", "log", False, _unary_cases("log", 92, positive=True)),
    OpSpec(
        "tanh",
        "tanh",
        False,
        _unary_cases("tanh", 94),
        [
            (
                "tanh's derivative was taken from the input instead of the output: "
                "1 - t**2 with t = out.data (the tanh), not 1 - self.data**2",
                lambda a, g: [(1 - a**2) * g],
            )
        ],
    ),
    OpSpec(
        "relu",
        "relu",
        False,
        _unary_cases("relu", 96, zeros=True),
        [
            (
                "relu passes gradient where its output is 0: the gradient flows only where "
                "out.data > 0, self.grad += (out.data > 0) * out.grad",
                lambda a, g: [g],
            ),
            (
                "relu's mask is wrong at exactly 0: torch's relu passes no gradient where its "
                "input is 0, so the mask is self.data > 0 (or out.data > 0), not >= 0",
                lambda a, g: [(a >= 0) * g],
            ),
        ],
    ),
    OpSpec(
        "log_softmax",
        "log_softmax",
        False,
        lambda: [
            *_unary_cases("log_softmax", 98)(),
            _large(make_program(96, [(2, 3)], [["log_softmax", 0]])),
        ],
        [
            (
                "log_softmax's backward dropped the sum: with s = softmax(a) and g = out.grad, "
                "d/da = g - s * g.sum(axis, keepdims=True), not g - s",
                lambda a, g: [g - softmax_array(a)],
            ),
            (
                "log_softmax's backward sums g over every axis: g.sum(axis, keepdims=True), "
                "over the softmax's own axis only",
                lambda a, g: [g - softmax_array(a) * g.sum()],
            ),
        ],
    ),
    OpSpec("cross_entropy", "cross_entropy", False, _cross_entropy_cases),
]
# A tensor used twice, one row per op whose rule it exercises: (the op, the ops it needs
# passing on their own, the input's shape, the steps). Each rule must add (+=) into its
# inputs' gradients; one that assigns (=) loses the other path's share. `(a op a) + a`, not
# `a op a` alone: a rule assigning its first input's grad and adding its second's is right
# on `a op a` (the second use adds back what the first overwrote), not after `+ a` has
# given a its share first. Every row goes through +, so a wrong + is named alone.
REUSES: list[tuple[str, tuple[str, ...], Shape, list[list[Any]]]] = [
    ("add", ("add",), (3, 3), [["add", 0, 0], ["add", 1, 0]]),
    ("sub", ("sub", "add"), (3, 3), [["sub", 0, 0], ["add", 1, 0]]),
    ("mul", ("mul", "add"), (3, 3), [["mul", 0, 0], ["add", 1, 0]]),
    ("div", ("div", "add"), (3, 3), [["div", 0, 0], ["add", 1, 0]]),
    ("matmul", ("matmul", "add"), (3, 3), [["matmul", 0, 0], ["add", 1, 0]]),
    ("transpose", ("transpose", "matmul"), (2, 3), [["transpose", 0], ["matmul", 1, 0]]),
    ("sum", ("sum", "add"), (2, 3), [["sum", 0, 0, False], ["add", 0, 1]]),
    ("mean", ("mean", "add"), (2, 3), [["mean", 0, 1, True], ["add", 0, 1]]),
    ("reshape", ("reshape", "add"), (1, 6), [["reshape", 0, [6]], ["add", 0, 1]]),
    ("exp", ("exp", "add"), (2, 3), [["exp", 0], ["add", 1, 0]]),
    ("log", ("log", "add"), (2, 3), [["log", 0], ["add", 1, 0]]),
    ("tanh", ("tanh", "add"), (2, 3), [["tanh", 0], ["add", 1, 0]]),
    ("relu", ("relu", "add"), (2, 3), [["relu", 0], ["add", 1, 0]]),
    ("log_softmax", ("log_softmax", "add"), (2, 3), [["log_softmax", 0], ["add", 1, 0]]),
]
REUSE_BASIC = ("add", "sub", "mul", "div", "matmul")  # `(a op a) + a`: its rule and +'s


def reuse_programs(passing: set[str]) -> list[tuple[str, Program]]:
    """The reuse row's programs whose ops pass on their own."""
    return [
        (op, make_program(110 + i, [shape], steps, positive=(0,) if op in ("div", "log") else ()))
        for i, (op, needs, shape, steps) in enumerate(REUSES)
        if set(needs) <= passing
    ]


def twice_program() -> Program:
    """a * b, backward(), then a new graph from the same leaves and backward() again."""
    return {**make_program(130, [(2, 3), (2, 3)], [["mul", 0, 1]]), "repeat": 2}


# Random expressions of 3-6 steps over the shape table: each step reads the step before and
# maybe an earlier slot (that slot, or the same one twice, is then used twice).
COMPOSITE_OPS = ("add", "sub", "mul", "matmul", "sum", "mean", "transpose", "reshape")
COMPOSITE_OPS += ("exp", "tanh", "relu", "log_softmax")
COMPOSITES = 12


def _composite_step(rng: np.random.RandomState, values: list[np.ndarray]) -> list[Any] | None:
    """One random step reading the last slot, or None when the op does not fit its shape."""
    last, x = len(values) - 1, values[-1]
    op = COMPOSITE_OPS[rng.randint(len(COMPOSITE_OPS))]
    other = rng.randint(len(values))
    if op in ("add", "sub", "mul"):
        try:
            shape = np.broadcast_shapes(x.shape, values[other].shape)
        except ValueError:
            return None
        pair = [last, other] if rng.randint(2) else [other, last]
        return [op, *pair] if len(shape) <= 3 and np.prod(shape) <= 24 else None
    if op == "matmul":
        y = values[other]
        if x.ndim == 2 and y.ndim in (1, 2) and x.shape[-1] == y.shape[0]:
            return [op, last, other]
        return None
    if op in ("sum", "mean"):
        if x.ndim == 0:
            return None
        axis = rng.randint(-1, x.ndim)
        return [op, last, None if axis < 0 else axis, bool(rng.randint(2))]
    if op == "transpose":
        return [op, last] if x.ndim == 2 else None
    if op == "reshape":
        return [op, last, [x.size] if x.ndim > 1 else [1, x.size]] if x.size > 1 else None
    if op == "exp":
        return [op, last] if np.all(np.abs(x) < 3) else None
    if op == "log_softmax":
        return [op, last] if x.ndim >= 1 else None
    return [op, last]


def composite_programs() -> list[tuple[set[str], Program]]:
    """COMPOSITES random expressions (seeded: the same every run), with the ops each uses."""
    made = []
    for seed in range(COMPOSITES):
        rng = np.random.RandomState(200 + seed)
        a, b = BROADCASTS[rng.randint(len(BROADCASTS))]
        program = make_program(200 + seed, [a, b], [["add", 0, 1]], weighted=False)
        program["steps"] = [[("add", "sub", "mul")[rng.randint(3)], 0, 1]]
        values = [*(array_of(x) for x in program["inputs"]), forward(program)]
        for _ in range(rng.randint(2, 6)):
            step = None
            while step is None:
                step = _composite_step(rng, values)
            program["steps"].append(step)
            values.append(forward(program))
        program["weight"] = _weight(rng, values[-1].shape)
        made.append(({step[0] for step in program["steps"]}, program))
    return made


SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@"}
METHOD = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__"}
METHOD |= {"matmul": "__matmul__"}

NUMBER_FORMS = [
    ("add_c", "a + 2", "__add__ must turn a plain number into a Tensor first"),
    ("radd", "2 + a", "define __radd__"),
    ("mul_c", "a * 2", "__mul__ must turn a plain number into a Tensor first"),
    ("rmul", "2 * a", "define __rmul__"),
    ("sub_c", "a - 2", "__sub__ must accept a plain number"),
    ("rsub", "2 - a", "define __rsub__ (returning other - self)"),
    ("div_c", "a / 2", "__truediv__ must accept a plain number"),
    ("rdiv", "2 / a", "define __rtruediv__ (returning other / self)"),
]


COVERS = {
    "add": ": scalar, row, column, 3-D batch",
    "matmul": ": 1-D, 2-D, batched, b over a batch",
    "sum": ": axis None/0/1/-1, 3-D, keepdims",
}
for _op in ("sub", "mul", "div"):
    COVERS[_op] = COVERS["add"]
COVERS["mean"] = COVERS["sum"]


def reduced_shape(shape: Shape, axis: int | None, keepdims: bool) -> Shape:
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    axis %= len(shape)
    if keepdims:
        return tuple(1 if i == axis else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i != axis)


def fill_args(program: Program) -> dict[str, str]:
    step = program["steps"][0]
    return OPS[step[0]].args(step[1 + OPS[step[0]].arity :])
