"""What the checks of ``modelwright-autograd check`` ask a learner's engine: each op's
points and its classic bugs, each bug a formula for the wrong gradients it gives; numbers
on either side of a Value; the diamond the walk is watched on; what parameters() must
list; the inputs that show whether a network bends; the training bar."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .programs import OPS, Program

RANDOM_PROGRAMS = 300
CHAIN_LENGTH = 5000

# The diamond the order check watches the walk on: c = a*-2 reaches L = u + m3 by a short
# path (u = c*2) and a long one (m1 = c*3, m2 = m1*2, m3 = m2*0.5). Both paths pass through
# a node, so a pre-order sort always lists c before one of its users, and c is nearer L by
# the short path, so a breadth-first walk always reaches c before m1 has pushed into it.
ORDER_PROGRAM: Program = {
    "inputs": [1.5],
    "steps": [
        ["mul_c", 0, -2.0],
        ["mul_c", 1, 2.0],
        ["mul_c", 1, 3.0],
        ["mul_c", 3, 2.0],
        ["mul_c", 4, 0.5],
        ["add", 2, 5],
    ],
}
SEED_PROGRAM: Program = {"inputs": [2.0, 3.0], "steps": [["mul", 0, 1]]}
# Every rule also runs with an upstream gradient that is not 1 (a rule leaving out out.grad
# is right where its op is the output), and called alone with its inputs' grads starting
# at RULE_STARTS (one that adds another input's grad is right while those are 0).
UPSTREAM = 3.0
RULE_STARTS = [0.5, -0.25]
# A ladder: each rung makes d from e by one to three halvings, then e = d + e. Each e has
# two users, one the other's input, so a sort that takes a node pushed twice before it is
# done lists it twice on a rung where d comes first in e's set of children; the rungs'
# lengths vary where the Values are made, so some rung has that order (a set of Values
# iterates by id).
LADDER_RUNGS = 20


def _ladder() -> Program:
    steps: list[list[object]] = [["mul", 0, 1]]
    e = 2
    for k in range(LADDER_RUNGS):
        d = e
        for _ in range(k % 3 + 1):
            steps.append(["mul_c", d, 0.5])
            d = len(steps) + 1
        steps.append(["add", d, e])
        e = len(steps) + 1
    return {"inputs": [0.5, -1.5], "steps": steps}


LADDER_PROGRAM: Program = _ladder()
OVERCOUNTED = (
    "a gradient is counted once per path to a node, so it comes out a whole multiple "
    "of the right one. The causes that give exactly that: a topological sort with no "
    "visited set, _prev holding copies of the children, a rule pushing the same path twice"
)

# The network checks: what parameters() must list for each part of the library (the
# reproduce block's constructor, how many Values, what they are, the seed it uses).
ARCHITECTURE = {
    "Neuron": ("Neuron(3)", 4, "3 weights and a bias", 1),
    "Layer": ("Layer(3, 4)", 16, "4 neurons of 3 weights and a bias", 1),
    "MLP": ("MLP(3, [4, 4, 1])", 41, "16 + 20 + 5 weights and biases", 1),
}
NEURONS = {"Neuron": 1, "Layer": 4, "MLP": 9}
# Pairs of inputs far apart: an affine f has f(p) + f(q) == 2 f((p + q) / 2) for each.
AFFINE_PAIRS = [
    [[-1.5, 0.3], [1.2, -0.8]],
    [[0.4, 1.1], [-0.9, -1.3]],
    [[2.0, 0.0], [-0.5, 1.5]],
]
AFFINE_TOLERANCE = 1e-9  # relative bend below which the network counts as affine
# Training: make_moons(100, noise 0.1, seed 0). The best straight line through these points
# classifies BEST_LINE of them (tests/test_learner.py finds it by trying every line), so a
# network without a nonlinearity cannot reach TRAIN_TARGET.
BEST_LINE = 0.90
TRAIN_TARGET = 0.95
TRAIN_EPOCHS = 40


@dataclass(frozen=True)
class OpCheck:
    """One op's row: the programs' inputs, whether the gate requires it, and the classic
    bugs: (words, the gradients that bug gives as a function of the inputs)."""

    label: str
    op: str
    points: list[list[float]]
    required: bool
    bugs: list[tuple[str, Callable[..., list[float]]]]
    built_on: tuple[str, ...] = ()  # ops a course engine often builds this one from


def single_op(op: str, point: list[float]) -> Program:
    """The program ``op`` applied to the point's Values (its last number is the constant
    when the op takes one)."""
    spec = OPS[op]
    if spec.constant:
        return {"inputs": point[:-1], "steps": [[op, 0, point[-1]]]}
    return {"inputs": point, "steps": [[op, *range(spec.arity)]]}


OP_CHECKS = [
    OpCheck(
        "a * b",
        "mul",
        [[2.0, -3.0], [-0.5, 1.25]],
        True,
        [
            (
                "each input received its own value: d(a*b)/da = b, so "
                "self.grad += other.data * out.grad (and the other way round)",
                lambda a, b: [a, b],
            ),
            ("treated like +: d(a*b)/da = b, not 1", lambda a, b: [1.0, 1.0]),
            (
                "both gradients stayed 0: does the rule read other.grad where other.data "
                "belongs? d(a*b)/da is b's value: self.grad += other.data * out.grad",
                lambda a, b: [0.0, 0.0],
            ),
        ],
    ),
    OpCheck(
        "a + b",
        "add",
        [[2.0, -3.0], [-0.5, 1.25]],
        True,
        [
            (
                "only one input received the gradient: both get out.grad",
                lambda a, b: [1.0, 0.0],
            )
        ],
    ),
    OpCheck(
        "a ** n",
        "pow",
        [[1.5, 3.0], [-2.0, 2.0], [0.8, -1.0], [2.5, 0.5], [0.0, 2.0]],
        True,
        [
            (
                "the power rule is missing its factor n: d(a**n)/da = n * a**(n-1)",
                lambda a, n: [a ** (n - 1)],
            ),
            (
                "the exponent was not lowered: d(a**n)/da = n * a**(n-1), not n * a**n",
                lambda a, n: [n * a**n],
            ),
            (
                "n * a**n - 1 is (n * a**n) - 1: ** binds before - and *, so the exponent "
                "needs its parentheses: n * a**(n - 1)",
                lambda a, n: [n * a**n - 1],
            ),
        ],
    ),
    OpCheck(
        "-a",
        "neg",
        [[1.5], [-2.0]],
        True,
        [("sign: d(-a)/da = -1", lambda a: [1.0])],
        ("mul",),
    ),
    OpCheck(
        "a - b",
        "sub",
        [[2.0, -3.0], [-0.5, 1.25]],
        True,
        [("the sign of the second input: d(a-b)/db = -1", lambda a, b: [1.0, 1.0])],
        ("add", "neg", "mul"),
    ),
    OpCheck(
        "a / b",
        "div",
        [[3.0, -2.0], [-1.5, 0.5]],
        True,
        [
            ("division's sign: d(a/b)/db = -a/b**2", lambda a, b: [1 / b, a / b**2]),
            ("d(a/b)/db = -a/b**2: the a is missing", lambda a, b: [1 / b, -1 / b**2]),
        ],
        ("mul", "pow"),
    ),
    OpCheck(
        "tanh",
        "tanh",
        [[0.7], [-1.3]],
        False,
        [
            (
                "tanh's derivative was taken from the input instead of the output: "
                "1 - t**2 with t = out.data (the tanh), not 1 - self.data**2",
                lambda a: [1 - a**2],
            ),
            (
                "tanh's derivative is 1 - t**2: the square is missing",
                lambda a: [1 - math.tanh(a)],
            ),
            (
                "tanh's derivative is 1 - t**2, t squared alone: (1 - t)**2 squares the "
                "difference. self.grad += (1 - out.data**2) * out.grad",
                lambda a: [(1 - math.tanh(a)) ** 2],
            ),
            (
                "tanh's rule gives out.data, exp's derivative: a rule made in a loop reads the "
                "loop's variables when it runs, so every rule gets the last one's (late "
                "binding). Bind them when the rule is made, as default arguments",
                lambda a: [math.tanh(a)],
            ),
        ],
    ),
    OpCheck("relu", "relu", [[-1.5], [0.0], [2.0]], False, []),
    OpCheck(
        "exp",
        "exp",
        [[0.5], [-1.2]],
        False,
        [("d(exp a)/da = exp(a), which is out.data, not the input a", lambda a: [a])],
    ),
    OpCheck(
        "log",
        "log",
        [[0.5], [2.5]],
        False,
        [
            ("sign: d(log a)/da = 1/a", lambda a: [-1 / a]),
            (
                "log's derivative was taken from the output instead of the input: "
                "d(log a)/da = 1/a with a = self.data, not out.data (the log)",
                lambda a: [1 / math.log(a)],
            ),
        ],
    ),
    OpCheck(
        "sigmoid",
        "sigmoid",
        [[0.3], [-2.0]],
        False,
        [
            (
                "sigmoid's derivative was taken from the input instead of the output: "
                "s * (1 - s) with s = out.data",
                lambda a: [a * (1 - a)],
            )
        ],
    ),
    OpCheck("2 ** a", "rpow", [[1.5, 2.0], [-0.5, 3.0]], False, []),
]

# Numbers on either side of a Value: (step, example, what to define when it is missing)
NUMBER_FORMS = [
    ("add_c", "a + 2", "__add__ must turn a plain number into a Value first"),
    ("radd", "2 + a", "define __radd__"),
    ("mul_c", "a * 2", "__mul__ must turn a plain number into a Value first"),
    ("rmul", "2 * a", "define __rmul__"),
    ("sub_c", "a - 2", "__sub__ must accept a plain number"),
    ("rsub", "2 - a", "define __rsub__ (returning other - self)"),
    ("div_c", "a / 2", "__truediv__ must accept a plain number"),
    ("rdiv", "2 / a", "define __rtruediv__ (returning other / self)"),
]
METHODS = {
    "tanh": "tanh",
    "relu": "relu",
    "exp": "exp",
    "log": "log",
    "sigmoid": "sigmoid",
}
DUNDERS = {"add": "__add__", "mul": "__mul__", "pow": "__pow__", "neg": "__neg__"}
DUNDERS |= {"sub": "__sub__", "div": "__truediv__", "rpow": "__rpow__"}
