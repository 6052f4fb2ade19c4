"""The checks of ``modelwright-autograd check`` on a tensor engine (a ``Tensor`` class, or a
``Value`` whose data is a NumPy array), and the diagnosis of the classic tensor bugs.

``grader.Grader`` loads the engine and, seeing a tensor engine, hands itself to
``run_tensor_checks``: the same child process, report, rows and caps. Every op runs over a
table of shapes (a scalar, a row, a column with a matrix, 3-D batches, keepdims on and off,
``@`` on 1-D, 2-D and batched operands); each program's loss is ``(out * W).sum()`` with a
constant W, so out.grad is a generic array. A wrong gradient usually still has the right
shape, or the wrong shape fails far from its cause, so each classic bug is recognised from
the pattern of the table (which shapes fail, and how) or from a formula for the wrong
gradient it gives, and named with the line to look at.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import MAX_HANGS
from .report import ABSENT, FAIL, PASS, Row
from .tensor_oracle import agree, array_of, forward, tensor_oracle
from .tensor_programs import OPS, Program, input_names, to_code
from .words import TODO, _error_text, _failure_text

if TYPE_CHECKING:
    from .base import GraderBase as Grader

Shape = tuple[int, ...]
# A candidate bug: (words, the gradients it gives from the inputs and out.grad W).
Bug = tuple[str, Callable[..., list[np.ndarray]]]

EPOCHS = 20  # SGD epochs on the digits
TARGET_ACCURACY = 0.95
AFFINE_GAP = 1e-9  # |f(mid) - mean(f(x1), f(x2))| / |f| below this on every pair: affine


def run_tensor_checks(grader: Grader) -> None:
    """Every tensor check, in order, into ``grader``'s report."""
    TensorChecks(grader).run()


# ---------------------------------------------------------------------- the programs
def _array(values: np.ndarray) -> dict[str, Any]:
    return {"shape": list(values.shape), "data": [float(v) for v in values.ravel()]}


def _numbers(rng: np.random.RandomState, shape: Shape, low: float, high: float) -> np.ndarray:
    """Uniform in [low, high] with two decimals, kept 0.1 away from 0 (relu's kink)."""
    x = np.round(rng.uniform(low, high, shape), 2)
    return np.where(np.abs(x) < 0.1, 0.5, x)


def _weight(rng: np.random.RandomState, shape: Shape) -> dict[str, Any]:
    w = np.round(rng.uniform(0.3, 1.5, shape), 1) * rng.choice([-1.0, 1.0], shape)
    return _array(np.asarray(w))


def _program(
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
    program: Program = {"inputs": [_array(a) for a in arrays], "steps": steps}
    if weighted:
        program["weight"] = _weight(rng, forward(program).shape)
    return program


def _shapes_text(program: Program) -> str:
    shapes = [tuple(x["shape"]) for x in program["inputs"]]
    return " and ".join(str(s) for s in shapes)


def _look(result: dict[str, Any], step: int = 0) -> str:
    """' (look at engine.py:57)': where it raised, else where the op's _backward is."""
    where = result.get("error", {}).get("where") or (result.get("rules") or [""])[step]
    return f" (look at {where})" if where else ""


# ---------------------------------------------------------------------- the op table
@dataclass(frozen=True)
class Case:
    """One program of an op's table, and what it exercises."""

    program: Program
    leading: bool = False  # an input broadcast by adding axes on the left
    stretched: bool = False  # an input broadcast by stretching an axis of size 1
    kind: str = ""  # matmul: 1-D, 2-D, square, batch, batch-broadcast; sum: axis words


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
            program = _program(seed + i, [a, b], [[op, 0, 1]], positive=(1,) if op == "div" else ())
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
        Case(_program(40 + i, [a, b], [["matmul", 0, 1]]), kind=kind)
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
                _program(seed + i, [shape], [[op, 0, axis, keepdims]]),
                kind="" if axis is None or keepdims else "dropped",
            )
            for i, (shape, axis, keepdims) in enumerate(REDUCTIONS)
        ]

    return cases


def _unary_cases(
    op: str, seed: int, positive: bool = False, shapes: tuple[Shape, ...] = ((2, 3), (4, 2, 3))
) -> Callable[[], list[Case]]:
    def cases() -> list[Case]:
        made = []
        for i, shape in enumerate(shapes):
            pos = (0,) if positive else ()
            made.append(Case(_program(seed + i, [shape], [[op, 0]], positive=pos)))
        return made

    return cases


def _reshape_cases() -> list[Case]:
    return [
        Case(_program(70, [(2, 3)], [["reshape", 0, [3, 2]]])),
        Case(_program(71, [(2, 3, 4)], [["reshape", 0, [6, 4]]])),
    ]


def _cross_entropy_cases() -> list[Case]:
    return [
        Case(_program(80, [(4, 5)], [["cross_entropy", 0, [0, 3, 1, 4]]], weighted=False)),
        Case(
            _program(
                81, [(3, 4)], [["cross_entropy", 0, [2, 0, 3]], ["mul_c", 1, 2.5]], weighted=False
            ),
            kind="upstream",
        ),
    ]


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
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
    OpSpec("transpose", "transpose", False, _unary_cases("transpose", 72, shapes=((2, 3), (4, 2)))),
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
        _unary_cases("relu", 96),
        [
            (
                "relu passes gradient where its output is 0: the gradient flows only where "
                "out.data > 0, self.grad += (out.data > 0) * out.grad",
                lambda a, g: [g],
            )
        ],
    ),
    OpSpec(
        "log_softmax",
        "log_softmax",
        False,
        _unary_cases("log_softmax", 98),
        [
            (
                "log_softmax's backward dropped the sum: with s = softmax(a) and g = out.grad, "
                "d/da = g - s * g.sum(axis, keepdims=True), not g - s",
                lambda a, g: [g - _softmax(a)],
            ),
            (
                "log_softmax's backward sums g over every axis: g.sum(axis, keepdims=True), "
                "over the softmax's own axis only",
                lambda a, g: [g - _softmax(a) * g.sum()],
            ),
        ],
    ),
    OpSpec("cross_entropy", "cross_entropy", False, _cross_entropy_cases),
]
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@"}
_METHOD = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__"}
_METHOD |= {"matmul": "__matmul__"}

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


def _array_text(a: np.ndarray) -> str:
    return " ".join(np.array2string(a, precision=6, separator=", ").split())


# ---------------------------------------------------------------------- the checks
class TensorChecks:
    """The tensor engine's rows, written into the scalar grader's report."""

    def __init__(self, grader: Grader) -> None:
        self.g = grader
        self.evaluate = tensor_oracle(grader.oracle)
        self._answers: dict[str, tuple[np.ndarray, list[np.ndarray]]] = {}
        self.status = grader.status
        self.loss_ops_wrong: list[str] = []  # "a * b", "sum": wrong on their first case

    def run(self) -> None:
        ops = [lambda spec=spec: self.check_op(spec) for spec in OP_SPECS]
        for check in (
            self.check_parts,
            self.check_seed,
            *ops,
            self.check_numbers,
            self.check_nonlinearity,
            self.check_reuse,
            self.check_order,
            self.check_network_gradients,
            self.check_affine,
            self.check_training,
        ):
            if self.g.hangs >= MAX_HANGS:
                text = f"not run: the engine hung {MAX_HANGS} times; fix that first"
                self.g.add(Row("the other checks", FAIL, text))
                return
            check()

    # ------------------------------------------------------------------ plumbing
    def want(self, program: Program) -> tuple[np.ndarray, list[np.ndarray]]:
        key = json.dumps(program, sort_keys=True)
        if key not in self._answers:
            self._answers[key] = self.evaluate(program)
        return self._answers[key]

    def results(self, programs: list[Program]) -> list[dict[str, Any]] | dict[str, Any]:
        reply = self.g.ask({"do": "tensor_programs", "programs": programs})
        return reply if "failure" in reply or "error" in reply else reply["results"]

    def code(self, program: Program) -> list[str]:
        _, grads = self.want(program)
        expected = {f"{n}.grad": _array_text(g) for n, g in zip(input_names(program), grads)}
        requires_grad = bool(self.g.loaded.get("requires_grad"))
        target = self.g.target
        lines = to_code(program, target.import_lines, requires_grad, expected, target.class_name)
        if any(step[0] == "cross_entropy" for step in program["steps"]):
            module = self.g.loaded.get("cross_entropy") or self.g.target.value_module
            lines.insert(len(self.g.target.import_lines), f"from {module} import cross_entropy")
        return lines

    def right(self, program: Program, result: dict[str, Any]) -> bool:
        _, grads = self.want(program)
        return all(agree(array_of(got), w) for got, w in zip(result["grads"], grads))

    def _cause(self) -> str:
        """Why an op's row may fail without a bug of its own: the seed, or the loss's ops."""
        if self.g.failed("seed"):
            return " (probably because of 'seed' above)"
        if self.loss_ops_wrong:
            return (
                " (every check's loss is (out * W).sum(), and "
                f"{' and '.join(self.loss_ops_wrong)} fail above on same-shape arrays: fix "
                "that first)"
            )
        return ""

    def _ops_cause(self, text: str) -> str:
        """A row failing after op rows did: it is built from those ops (nothing for a
        TODO, which names itself)."""
        if text.startswith(TODO):
            return ""
        failing = [spec.label for spec in OP_SPECS if self.status.get(spec.op) == FAIL]
        if self.g.failed("seed"):
            failing.insert(0, "seed")
        if not failing:
            return ""
        return f" (probably because of {', '.join(repr(n) for n in failing)} above)"

    def todo_text(self, program: Program, result: dict[str, Any]) -> str:
        """A TODO's words, and whether the op's own rule is right already (checked with
        the grader's walk when backward() is the TODO)."""
        error = result["error"]
        text = f"{TODO} {error['message'] or 'NotImplementedError'}"
        alone = result.get("alone")
        if not alone:
            return text
        if "error" in alone:
            same = alone["error"]["message"] == error["message"]
            if alone["error"]["type"] == "NotImplementedError" and not same:
                text += f"; and its rule: {alone['error']['message']}"
        elif self.right(program, alone):
            text += " (the op's own backward rule is already right)"
        else:
            text += " (and with the grader's walk, this op's rule gives wrong gradients)"
        return text

    def result_text(self, program: Program, result: dict[str, Any]) -> str:
        error = result["error"]
        if error["type"] == "NotImplementedError":
            return self.todo_text(program, result)
        if error["type"] == "NotATensor":
            return f"{_error_text(error)}: each op must return a new Tensor"
        return f"{result['stage']} raised {_error_text(error)}"

    # ------------------------------------------------------------------ the rows
    def check_parts(self) -> None:
        reply = self.g.ask({"do": "tensor_parts"})
        name = f"{self.g.target.class_name}'s parts"
        if "failure" in reply or "error" in reply:
            self.g.add(Row(name, FAIL, _failure_text(reply, "a new tensor of a (2, 3) array")))
            return
        problems = []
        data = array_of(reply["data"])
        if not agree(data, np.arange(6.0).reshape(2, 3)):
            problems.append(f"Tensor(x).data has shape {data.shape}, not x's (2, 3)")
        grad = reply["grad"]
        if grad is not None and not agree(array_of(grad), np.zeros((2, 3))):
            problems.append(
                f"a new Tensor's grad is {_array_text(array_of(grad))}: it must be zeros "
                "of data's shape (np.zeros_like(self.data))"
            )
        if not reply["has_backward_method"]:
            problems.append("there is no backward() method")
        if problems:
            self.g.add(Row(name, FAIL, "; ".join(problems)))
            return
        text = "data an array, grad " + (
            "None until backward() (as torch)" if grad is None else "zeros of its shape"
        )
        children = reply["children"]
        text += f", .{children}" if children else " (children under another name)"
        self.g.add(Row(name, PASS, text + ", backward()"))

    def check_seed(self) -> None:
        program = _program(1, [(2, 3)], [["sum", 0, None, False]], weighted=False)
        results = self.results([program])
        name = "seed"
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, _failure_text(results, "a.sum().backward()")))
            return
        result = results[0]
        if "error" in result:
            self.g.add(Row(name, FAIL, self.result_text(program, result), self.code(program)))
            return
        seed = array_of(result["loss_grad"])
        if not agree(seed, np.ones(seed.shape)) or seed.size != 1:
            text = (
                f"after out.backward(), out.grad is {_array_text(seed)}: backward() must seed "
                "ones of the output's shape (np.ones_like(self.data)) before walking"
            )
            self.g.add(Row(name, FAIL, text, self.code(program)))
        elif not self.right(program, result):
            text = "the seed is 1, but a.sum()'s gradient is not ones of a's shape" + _look(result)
            self.g.add(Row(name, FAIL, text, self.code(program)))
        else:
            self.g.add(Row(name, PASS, "backward() seeds the output's gradient with ones"))

    def check_op(self, spec: OpSpec) -> None:
        cases = spec.cases()
        results = self.results([c.program for c in cases])
        name = spec.label
        if isinstance(results, dict):
            self.status[spec.op] = FAIL
            self.g.add(Row(name, FAIL, _failure_text(results, spec.label)))
            return
        wrong: list[tuple[Case, dict[str, Any]]] = []
        for case, result in zip(cases, results):
            if "error" in result and _absent(result, spec.op):
                status = FAIL if spec.required else ABSENT
                method = _METHOD.get(spec.op, spec.op)
                text = (
                    f"not defined: define {method}"
                    if spec.required
                    else (f"{method} is not defined (optional)")
                )
                self.status[spec.op] = status
                self.g.add(Row(name, status, text))
                return
            if "error" in result and (
                result["stage"] == "forward" or result["error"]["type"] == "NotImplementedError"
            ):
                self.status[spec.op] = FAIL
                text = self.result_text(case.program, result)
                self.g.add(Row(name, FAIL, text, self.code(case.program)))
                return
            if "error" in result:
                wrong.append((case, result))
                continue
            out, _ = self.want(case.program)
            got = array_of(result["out"])
            if not agree(got, out):
                self.status[spec.op] = FAIL
                text = (
                    f"the forward is wrong for {_shapes_text(case.program)}: got shape "
                    f"{got.shape}, expected {out.shape}"
                    if got.shape != out.shape
                    else f"the forward is wrong for {_shapes_text(case.program)}"
                )
                self.g.add(Row(name, FAIL, text, self.code(case.program)))
                return
            if not self.right(case.program, result):
                wrong.append((case, result))
        if not wrong:
            self.status[spec.op] = PASS
            text = f"forward and gradients match on {len(cases)} shapes"
            self.g.add(Row(name, PASS, text + _COVERS.get(spec.op, "")))
            return
        self.status[spec.op] = FAIL
        text, program = self.diagnose(spec, cases, wrong)
        if spec.op in ("mul", "sum") and wrong[0][0] is cases[0]:
            self.loss_ops_wrong.append(spec.label)  # the loss's own op, on its basic case
        self.g.add(Row(name, FAIL, text, self.code(program)))

    def diagnose(
        self, spec: OpSpec, cases: list[Case], wrong: list[tuple[Case, dict[str, Any]]]
    ) -> tuple[str, Program]:
        """The words for an op's wrong gradients: a classic bug when the pattern or the
        numbers say which, else what differs."""
        case, result = wrong[0]
        cause = self._cause()
        if cause:
            return self.generic(case, result) + cause, case.program
        named = None
        if spec.op in _SYMBOL and spec.op != "matmul":
            named = self.broadcast_bug(spec, cases, wrong)
        elif spec.op == "matmul":
            named = self.matmul_bug(wrong)
        elif spec.op in ("sum", "mean"):
            named = self.reduction_bug(spec, wrong)
        elif spec.op == "cross_entropy":
            named = self.cross_entropy_bug(wrong)
        if named is None:
            named = self.formula_bug(spec, wrong)
        if named is None:
            named = self.upstream_bug(wrong)
        if named is not None:
            return named
        return self.generic(case, result), case.program

    def generic(self, case: Case, result: dict[str, Any]) -> str:
        program = case.program
        expression = OPS[program["steps"][0][0]].template.format(x="a", y="b", **_fill(program))
        where = _look(result)
        if "error" in result:
            return f"{expression} with {_shapes_text(program)}: the backward raised " + (
                f"{_error_text(result['error'])}"
            )
        _, grads = self.want(program)
        parts = []
        for n, got, want in zip(input_names(program), result["grads"], grads):
            got = array_of(got)
            if got.shape != want.shape:
                parts.append(f"{n}.grad has shape {got.shape}, {n} has {want.shape}")
            elif not agree(got, want):
                parts.append(f"{n}.grad is {_array_text(got)}, expected {_array_text(want)}")
        return f"{expression} with {_shapes_text(program)}: " + "; ".join(parts) + where

    def broadcast_bug(
        self, spec: OpSpec, cases: list[Case], wrong: list[tuple[Case, dict[str, Any]]]
    ) -> tuple[str, Program] | None:
        """A gradient not summed back over the broadcast dimensions: the same-shape case is
        right and broadcast cases raise in the backward or leave a gradient of the wrong
        shape."""
        if any(not (c.leading or c.stretched) for c, _ in wrong):
            return None
        if not all(self._shape_trouble(c.program, r) for c, r in wrong):
            return None
        case, result = wrong[0]
        symbol = _SYMBOL[spec.op]
        a, b = (tuple(x["shape"]) for x in case.program["inputs"])
        out = tuple(np.broadcast_shapes(a, b))
        small = a if a != out else b
        how = self._shape_trouble(case.program, result)
        if all(c.stretched and not c.leading for c, _ in wrong):
            text = (
                f"the gradient was summed over the axes broadcasting added on the left, but "
                f"not over the axes of size 1 it stretched: in {a} {symbol} {b}, the {small} "
                f"input was stretched to {out}, so its gradient is out.grad summed over those "
                f"axes with keepdims=True; {how}"
            )
        else:
            text = (
                f"the gradient was not summed back over the broadcast dimensions: in {a} "
                f"{symbol} {b}, the {small} input was broadcast to {out}, so its gradient is "
                f"out.grad summed back to {small} (over the axes added on the left, and over "
                f"the axes of size 1, keepdims=True); {how}"
            )
        return text + _look(result), case.program

    def _shape_trouble(self, program: Program, result: dict[str, Any]) -> str:
        """How a broadcast case went wrong, if by shape: '' when not."""
        if "error" in result:
            message = result["error"]["message"]
            if "broadcast" in message or "shape" in message:
                return f"the backward raised {result['error']['type']}: {message}"
            return ""
        _, grads = self.want(program)
        for n, got, want in zip(input_names(program), result["grads"], grads):
            if tuple(got["shape"]) != want.shape:
                return f"{n} {want.shape} received a gradient of shape {tuple(got['shape'])}"
        return ""

    def matmul_bug(self, wrong: list[tuple[Case, dict[str, Any]]]) -> tuple[str, Program] | None:
        kinds = {c.kind for c, _ in wrong}
        case, result = wrong[0]
        if kinds & {"2-D", "square"}:
            square = next((r for c, r in wrong if c.kind == "square" and "error" not in r), None)
            if square is not None or any(
                self._shape_trouble(c.program, r) for c, r in wrong if c.kind == "2-D"
            ):
                if square is not None:
                    c = next(c for c, _ in wrong if c.kind == "square")
                    if not self._untransposed(c.program, square):
                        return None
                first = next(c for c, _ in wrong if c.kind in ("2-D", "square"))
                text = (
                    "a transpose is missing in the backward of @: for out = a @ b, "
                    "d/da = out.grad @ b.T and d/db = a.T @ out.grad (each gradient has its "
                    "input's shape: (n, k) and (k, m))"
                )
                r = next(r for c, r in wrong if c is first)
                return text + _look(r), first.program
            return None
        if kinds <= {"1-D"}:
            text = (
                "the 2-D rule does not cover a 1-D operand: a 1-D a is a row (1, k) and a 1-D "
                "b a column (k, 1); compute with those, then drop the added axis from the "
                f"gradient again (failing: {self._shapes(wrong)})"
            )
            return text + _look(result), case.program
        if kinds <= {"batch-broadcast"}:
            a, b = (tuple(x["shape"]) for x in case.program["inputs"])
            text = (
                f"in {a} @ {b}, b was used by every matrix of the batch: its gradient is "
                f"a.T @ out.grad summed over the batch axes (unbroadcast to {b})"
            )
            return text + _look(result), case.program
        if kinds <= {"batch", "batch-broadcast"}:
            text = (
                "batched @: the rule must transpose the last two axes only, "
                "np.swapaxes(x, -1, -2); .T reverses every axis of a 3-D array "
                f"(failing: {self._shapes(wrong)})"
            )
            return text + _look(result), case.program
        return None

    def _untransposed(self, program: Program, result: dict[str, Any]) -> bool:
        a, b = (array_of(x) for x in program["inputs"])
        g = array_of(program["weight"])
        got_a, got_b = (array_of(x) for x in result["grads"])
        return any(agree(got_a, c) for c in (g @ b, b @ g)) or any(
            agree(got_b, c) for c in (a @ g, g @ a, g.T @ a)
        )

    @staticmethod
    def _shapes(wrong: list[tuple[Case, dict[str, Any]]]) -> str:
        return ", ".join(
            " @ ".join(str(tuple(x["shape"])) for x in c.program["inputs"]) for c, _ in wrong
        )

    def reduction_bug(
        self, spec: OpSpec, wrong: list[tuple[Case, dict[str, Any]]]
    ) -> tuple[str, Program] | None:
        case, result = wrong[0]
        step = case.program["steps"][0]
        shape = tuple(case.program["inputs"][0]["shape"])
        if all(c.kind == "dropped" for c, _ in wrong):
            kept = list(_reduced(shape, step[2], True))
            gone = list(_reduced(shape, step[2], False))
            text = (
                f"{spec.op}'s backward does not put the reduced axis back: with axis="
                f"{step[2]} and keepdims=False, out.grad has shape {tuple(gone)} and must "
                f"become {tuple(kept)} (np.expand_dims(out.grad, axis)) before it spreads "
                f"over the input's {shape}"
            )
            return text + _look(result), case.program
        if spec.op == "mean":
            ratios = []
            for c, r in wrong:
                if "error" in r:
                    return None
                shape = tuple(c.program["inputs"][0]["shape"])
                averaged = int(np.prod(shape)) // int(
                    np.prod(_reduced(shape, c.program["steps"][0][2], False))
                )
                got, want = array_of(r["grads"][0]), self.want(c.program)[1][0]
                ratios.append((got, want, averaged, int(np.prod(shape))))
            if all(agree(got, want * n) for got, want, n, _ in ratios):
                n = ratios[0][2]
                text = (
                    f"mean's backward is missing the 1/n: each input element gets out.grad / n, "
                    f"n the number of elements averaged (here {n})"
                )
                return text + _look(result), case.program
            if all(agree(got, want * n / size) for got, want, n, size in ratios):
                text = (
                    "mean's backward divides by every element of the input, not by the n "
                    "averaged into each output: n = self.data.size // out.data.size"
                )
                return text + _look(result), case.program
        return None

    def cross_entropy_bug(
        self, wrong: list[tuple[Case, dict[str, Any]]]
    ) -> tuple[str, Program] | None:
        candidates = [
            (
                "the cross_entropy gradient is off by the one-hot: d/dlogits = (softmax - "
                "onehot(targets)) / N; the 1 at each row's target was not subtracted",
                lambda p, y, n, c: p / n * c,
            ),
            (
                "the cross_entropy gradient is missing the 1/N of the mean over the batch: "
                "(softmax - onehot) / N",
                lambda p, y, n, c: (p - y) * c,
            ),
            (
                "the cross_entropy gradient has the one-hot's sign swapped: onehot - softmax "
                "where softmax - onehot belongs",
                lambda p, y, n, c: (y - p) / n * c,
            ),
        ]
        for words, bug in candidates:
            matched = True
            for case, result in wrong:
                if "error" in result:
                    return None
                logits = array_of(case.program["inputs"][0])
                steps = case.program["steps"]
                targets = np.asarray(steps[0][2])
                c = steps[1][2] if len(steps) > 1 else 1.0
                onehot = np.zeros_like(logits)
                onehot[np.arange(len(targets)), targets] = 1.0
                predicted = bug(_softmax(logits, 1), onehot, len(targets), c)
                matched = matched and agree(array_of(result["grads"][0]), predicted)
            if matched:
                case, result = wrong[0]
                return words + _look(result), case.program
        return None

    def formula_bug(
        self, spec: OpSpec, wrong: list[tuple[Case, dict[str, Any]]]
    ) -> tuple[str, Program] | None:
        for words, bug in spec.bugs:
            if all(self._matches(bug, c.program, r) for c, r in wrong):
                case, result = wrong[0]
                return words + _look(result), case.program
        return None

    def _matches(
        self, bug: Callable[..., list[np.ndarray]], program: Program, result: dict[str, Any]
    ) -> bool:
        if "error" in result or "weight" not in program:
            return False
        arrays = [array_of(x) for x in program["inputs"]]
        g = array_of(program["weight"])
        try:
            with np.errstate(all="ignore"):
                predicted = bug(*arrays, g)
        except (ArithmeticError, ValueError):
            return False
        return all(agree(array_of(got), p) for got, p in zip(result["grads"], predicted))

    def upstream_bug(self, wrong: list[tuple[Case, dict[str, Any]]]) -> tuple[str, Program] | None:
        """Right with out.grad = ones, wrong with W: the rule ignores out.grad."""
        for case, result in wrong:
            if "error" in result or "weight" not in case.program:
                return None
            ones = {**case.program, "weight": _array(np.ones(case.program["weight"]["shape"]))}
            if not self.right(ones, result):
                return None
        case, result = wrong[0]
        text = (
            "the backward ignores out.grad: multiply the local derivative by out.grad "
            "(the chain rule)"
        )
        return text + _look(result), case.program

    def check_numbers(self) -> None:
        programs = [
            _program(100 + i, [(2, 3)], [[op, 0, 2.0]]) for i, (op, _, _) in enumerate(NUMBER_FORMS)
        ]
        results = self.results(programs)
        name = "numbers with Tensors"
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, _failure_text(results, "a + 2")))
            return
        for (op, example, fix), program, result in zip(NUMBER_FORMS, programs, results):
            if "error" in result and result["stage"] == "forward":
                words = f"{example} raised {_error_text(result['error'])}: {fix}"
                self.g.add(Row(name, FAIL, words, self.code(program)))
                return
            if "error" in result:
                text = self.result_text(program, result)
                self.g.add(Row(name, FAIL, text + self._ops_cause(text), self.code(program)))
                return
            out, _ = self.want(program)
            if not agree(array_of(result["out"]), out):
                text = f"{example} gives the wrong values"
                if op in ("rsub", "rdiv"):
                    text += f": are the operands swapped? {fix}"
                self.g.add(Row(name, FAIL, text, self.code(program)))
                return
            if not self.right(program, result):
                text = f"{example}: a.grad is wrong" + (self._cause() or _look(result, -1))
                self.g.add(Row(name, FAIL, text, self.code(program)))
                return
        self.g.add(Row(name, PASS, ", ".join(example for _, example, _ in NUMBER_FORMS)))

    def check_nonlinearity(self) -> None:
        present = [op for op in ("tanh", "relu") if self.status.get(op) == PASS]
        name = "a nonlinearity"
        if present:
            self.g.add(Row(name, PASS, ", ".join(present) + " (the gate needs one)"))
        elif any(self.status.get(op) == FAIL for op in ("tanh", "relu")):
            self.g.add(Row(name, FAIL, "the gate needs tanh or relu working: see above"))
        else:
            self.g.add(Row(name, FAIL, "the gate needs at least one: define tanh() or relu()"))

    def check_reuse(self) -> None:
        """A tensor used twice receives the sum of both paths' gradients."""
        cases = []
        for op, seed in (("add", 110), ("mul", 111), ("matmul", 112)):
            if self.status.get(op) == PASS:
                shape = (3, 3)
                cases.append((op, _program(seed, [shape], [[op, 0, 0]])))
        for op, seed in (("exp", 113), ("tanh", 114), ("relu", 115)):
            if self.status.get(op) == PASS and self.status.get("add") == PASS:
                cases.append((op, _program(seed, [(2, 3)], [[op, 0], ["add", 1, 0]])))
        name = "reuse"
        if not cases:
            self.g.add(Row(name, FAIL, "not run: neither + nor * passes on its own yet"))
            return
        results = self.results([p for _, p in cases])
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, _failure_text(results, "a * a")))
            return
        overwritten, first = [], None
        for (op, program), result in zip(cases, results):
            if "error" in result:
                self.g.add(Row(name, FAIL, self.result_text(program, result), self.code(program)))
                return
            if not self.right(program, result):
                overwritten.append(op)
                first = first or (program, result)
        if not overwritten:
            shown = ", ".join(_SYMBOL.get(op, op) for op, _ in cases)
            self.g.add(Row(name, PASS, f"a tensor used twice accumulates, through {shown}"))
            return
        basic = [op for op in overwritten if op in ("add", "mul", "matmul")] or overwritten
        text = (
            "the gradient was overwritten, not accumulated: `=` where `+=` belongs in the "
            f"backward of {' and '.join(_SYMBOL.get(op, op) for op in basic)}. A tensor used "
            "twice gets the sum of both paths"
        )
        others = [op for op in overwritten if op not in basic]
        if others:
            text += f" (also seen through {', '.join(others)})"
        program, result = first
        self.g.add(Row(name, FAIL, text + (self._cause() or _look(result)), self.code(program)))

    def check_order(self) -> None:
        """L = sum(W * (c + (c * 3) * 2)) with c = a * b: c has a near user and a far
        one, so a walk that is not reverse-topological gives c's rule too little."""
        program = _program(
            120,
            [(2, 3), (2, 3)],
            [["mul", 0, 1], ["mul_c", 2, 3.0], ["mul_c", 3, 2.0], ["add", 2, 4]],
        )
        results = self.results([program])
        name = "order"
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, _failure_text(results, "a diamond graph")))
            return
        result = results[0]
        if "error" in result:
            self.g.add(Row(name, FAIL, self.result_text(program, result), self.code(program)))
            return
        if self.right(program, result):
            self.g.add(Row(name, PASS, "a diamond graph: every node waits for all its users"))
            return
        if self._cause() or self.status.get("add") == FAIL or self.status.get("mul") == FAIL:
            text = "wrong gradients on a diamond graph of + and *" + (
                self._cause() or ", which fail above"
            )
        elif self.g.failed("reuse"):
            text = "wrong gradients on a diamond graph (probably because of 'reuse' above)"
        elif all(not np.any(array_of(g)) for g in result["grads"]):
            text = (
                "the inputs got no gradient: backward() must call every node's _backward, "
                "outputs first: walk the topological order in reverse"
            )
        else:
            text = (
                "a node passed its gradient on before all of its users had pushed theirs: "
                "sort topologically and walk in reverse"
            )
        self.g.add(Row(name, FAIL, text, self.code(program)))

    def check_network_gradients(self) -> None:
        name = "network gradients"
        library = self.g.loaded.get("library", [])
        if not library:
            self.g.add(
                Row(name, ABSENT, "no Linear or MLP found (in the engine's module or nn.py)")
            )
            return
        reply = self.g.ask({"do": "tensor_network"})
        if "failure" in reply or "error" in reply:
            text = _failure_text(reply, "Linear(4, 3) and MLP(4, [5, 3])")
            self.g.add(Row(name, FAIL, text + self._ops_cause(text)))
            return
        problems, passed, formula = [], [], ""
        for layer, entry in reply["layers"].items():
            grads = [array_of(g) for g in entry["grads"]]
            differences = [array_of(d) for d in entry["differences"]]
            n = len(grads)
            if entry["forward"] is False:
                problems.append(
                    f"{layer}'s output is not x @ W + b with its own parameters W and b (3,): "
                    "is the bias added?"
                )
            elif entry["distinct"] < n:
                problems.append(
                    f"{layer}.parameters() lists {n - entry['distinct']} tensor(s) twice"
                )
            elif all(not np.any(d) for d in differences):
                problems.append(
                    f"changing the tensors {layer}.parameters() returns does not change its "
                    "output: does parameters() return the tensors the forward uses (not copies)?"
                )
            elif not all(agree(g, d) for g, d in zip(grads, differences)):
                i = next(i for i, (g, d) in enumerate(zip(grads, differences)) if not agree(g, d))
                problems.append(
                    f"{layer}: parameter {i} (shape {differences[i].shape}) has gradient "
                    f"{_array_text(grads[i])}, central differences of its own forward give "
                    f"{_array_text(differences[i])}"
                )
            elif not entry["zeroed"]:
                problems.append(
                    f"{layer}.zero_grad() left gradients that are not zero: backward() adds "
                    "into grad, so each training step would add the last one's"
                )
            else:
                passed.append(layer)
                if entry["forward"]:
                    formula = "; Linear is x @ W + b"
        if problems:
            text = "; ".join(problems)
            self.g.add(Row(name, FAIL, text + self._ops_cause(text)))
        else:
            text = (
                f"{', '.join(passed)}: gradients match differences, zero_grad() zeroes "
                f"them{formula}"
            )
            self.g.add(Row(name, PASS, text))

    def check_affine(self) -> None:
        name = "network bends"
        if not self.g.loaded.get("mlp"):
            self.g.add(Row(name, ABSENT, "no MLP found"))
            return
        reply = self.g.ask({"do": "tensor_affine"})
        if "failure" in reply or "error" in reply:
            text = _failure_text(reply, "MLP(64, [32, 10])")
            self.g.add(Row(name, FAIL, text + self._ops_cause(text)))
            return
        gaps = reply["gaps"]
        if all(gap < AFFINE_GAP for gap in gaps):
            text = (
                f"MLP(64, [32, 10]) is affine in its input: f((x1 + x2) / 2) = (f(x1) + "
                f"f(x2)) / 2 on all {len(gaps)} random pairs, so its layers compose to one "
                "x @ W + b. Is the activation applied between the layers, and its result "
                "used? (The digits are nearly linearly separable: accuracy cannot tell.)"
            )
            self.g.add(Row(name, FAIL, text))
        else:
            text = (
                f"MLP(64, [32, 10]) is not affine: f at midpoints off by up to "
                f"{max(gaps):.2g} of |f| ({len(gaps)} pairs)"
            )
            self.g.add(Row(name, PASS, text))

    def check_training(self) -> None:
        name = "network trains"
        if not self.g.loaded.get("mlp"):
            self.g.add(Row(name, ABSENT, "no MLP found: the gate asks for one that trains"))
            return
        from ..data import load_digits_split

        digits = load_digits_split(0)
        request = {
            "do": "tensor_train",
            "X_train": [[round(float(v), 6) for v in row] for row in digits.X_train],
            "y_train": [int(t) for t in digits.y_train],
            "X_test": [[round(float(v), 6) for v in row] for row in digits.X_test],
            "y_test": [int(t) for t in digits.y_test],
            "lr": 0.1,
            "batch": 32,
            "epochs": EPOCHS,
        }
        reply = self.g.ask(request, self.g.train_timeout)
        if "failure" in reply or "error" in reply:
            text = _failure_text(reply, "training MLP(64, [32, 10])")
            self.g.add(Row(name, FAIL, text + self._ops_cause(text)))
            return
        history = reply["history"]
        (loss0, _), (loss1, accuracy) = history[0], history[-1]
        text = (
            f"MLP(64, [32, 10]) on the digits ({len(digits.y_train)} train, "
            f"{len(digits.y_test)} test), {reply['loss']}, SGD lr 0.1, batches of 32, its own "
            f"parameters()/zero_grad(): loss {loss0:.4g} -> {loss1:.4g} in "
            f"{len(history) - 1} epochs, test accuracy {accuracy:.1%}"
        )
        ok = loss1 < loss0 and accuracy >= TARGET_ACCURACY
        if loss1 == loss0:
            text += "; the loss did not move at all: the SGD updates do not reach the network"
        elif not ok:
            text += f"; the gate needs the loss to fall and {TARGET_ACCURACY:.0%} test accuracy"
        self.g.add(Row(name, PASS if ok else FAIL, text + ("" if ok else self._ops_cause(text))))


_COVERS = {
    "add": ": scalar, row, column, 3-D batch",
    "matmul": ": 1-D, 2-D, batched, b over a batch",
    "sum": ": axis None/0/1/-1, 3-D; keepdims",
}
for _op in ("sub", "mul", "div"):
    _COVERS[_op] = _COVERS["add"]
_COVERS["mean"] = _COVERS["sum"]


def _reduced(shape: Shape, axis: int | None, keepdims: bool) -> Shape:
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    axis %= len(shape)
    if keepdims:
        return tuple(1 if i == axis else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i != axis)


def _fill(program: Program) -> dict[str, str]:
    step = program["steps"][0]
    return OPS[step[0]].args(step[1 + OPS[step[0]].arity :])


def _absent(result: dict[str, Any], op: str) -> bool:
    """True when the step failed because the Tensor has no such method or operator."""
    if result.get("stage") != "forward":
        return False
    error = result["error"]
    message = error["message"]
    if error["type"] == "AttributeError":
        return f"'{op}'" in message and not error["where"]
    if error["type"] == "NameError":
        return "cross_entropy" in message
    unsupported = ("unsupported operand", "bad operand type")
    return error["type"] == "TypeError" and any(text in message for text in unsupported)
