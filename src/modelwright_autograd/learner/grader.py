"""The checks of ``modelwright-autograd check``: what each asks the learner's engine, what
the oracle says, and the diagnosis in a learner's words.

Every check sends programs or one named probe to the engine's child process (see
``child``), compares the replies with the oracle, and makes one ``Row``. When a check can
tell the classic bugs apart it names them: each candidate bug is a formula for the wrong
gradient that bug gives, and the one matching the learner's numbers is the diagnosis.
Rows that fail because an earlier, more basic row failed say so (``see seed``), so a
learner fixes causes first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .child import EngineProcess
from .locate import Target
from .oracle import Oracle, close
from .programs import NONLINEARITIES, OPS, Program, input_names, random_programs, to_code
from .report import ABSENT, FAIL, NOTE, PASS, Report, Row

RANDOM_PROGRAMS = 300
CHAIN_LENGTH = 5000
TODO = "not done yet:"  # how a diagnosis of NotImplementedError begins
MAX_HANGS = 2  # after this many timeouts the remaining checks are not run
BECAUSE = "fails because "  # how a row failing only because of a more basic one begins

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


def _single(op: str, point: list[float]) -> Program:
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
        ],
    ),
    OpCheck(
        "a + b",
        "add",
        [[2.0, -3.0], [-0.5, 1.25]],
        True,
        [("only one input received the gradient: both get out.grad", lambda a, b: [1.0, 0.0])],
    ),
    OpCheck(
        "a ** n",
        "pow",
        [[1.5, 3.0], [-2.0, 2.0], [0.8, -1.0], [2.5, 0.5]],
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
        ],
    ),
    OpCheck(
        "-a", "neg", [[1.5], [-2.0]], True, [("sign: d(-a)/da = -1", lambda a: [1.0])], ("mul",)
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
    OpCheck("log", "log", [[0.5], [2.5]], False, [("sign: d(log a)/da = 1/a", lambda a: [-1 / a])]),
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
_METHOD = {"tanh": "tanh", "relu": "relu", "exp": "exp", "log": "log", "sigmoid": "sigmoid"}
_DUNDER = {"add": "__add__", "mul": "__mul__", "pow": "__pow__", "neg": "__neg__"}
_DUNDER |= {"sub": "__sub__", "div": "__truediv__", "rpow": "__rpow__"}


class Grader:
    """Runs every check against one engine and collects the rows."""

    def __init__(
        self, target: Target, oracle: Oracle, timeout: float, train_timeout: float
    ) -> None:
        self.target = target
        self.oracle = oracle
        self.timeout = timeout
        self.train_timeout = train_timeout
        self.process = EngineProcess(target.load_request(), str(target.sys_path), timeout)
        self.report = Report(target.shown, oracle.description)
        self.hangs = 0
        self.has_mlp = False
        self.loaded: dict[str, Any] = {}  # the child's answer to "load"
        self.walk_traced = False
        self.causes: dict[str, str] = {}  # row failing only because of another -> that row
        self.status: dict[str, str] = {}  # op name -> status of its row
        self.rows: dict[str, Row] = {}

    # ------------------------------------------------------------------ plumbing
    def add(self, row: Row) -> Row:
        if row.diagnosis.startswith(TODO):
            row.reproduce = []  # the TODO's own message says where: nothing to reproduce
        self.report.rows.append(row)
        self.rows[row.name] = row
        return row

    def ask(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """The engine's reply to one request; a timeout is counted (see MAX_HANGS)."""
        reply = self.process.ask(request, timeout or self.timeout)
        if reply.get("failure") == "timeout":
            self.hangs += 1
        return reply

    def run_programs(self, programs: list[Program]) -> list[dict[str, Any]] | dict[str, Any]:
        """The engine's result for each program, or the failure that stopped them all."""
        reply = self.ask({"do": "programs", "programs": programs})
        return reply if "failure" in reply or "error" in reply else reply["results"]

    def failed(self, name: str) -> bool:
        row = self.rows.get(name)
        return row is not None and row.status == FAIL

    def because(self, name: str, cause: str, note: str = "") -> Row:
        """A row that fails only because the more basic row ``cause`` fails: one line,
        nothing to reproduce (the cause's row has the block). A cause that fails because
        of another is followed to the one with the block."""
        cause = self.causes.get(cause, cause)
        self.causes[name] = cause
        return self.add(Row(name, FAIL, f"{BECAUSE}'{cause}' fails{note}"))

    def root_cause(self) -> str | None:
        """The basic row whose failure makes every gradient wrong, if one fails."""
        return next((row for row in ("seed", "leaf _backward") if self.failed(row)), None)

    def where_rule(self, program: Program) -> str:
        """Where the rule of the program's last op is defined (``engine.py:41``), or ""."""
        reply = self.ask({"do": "walk", "program": program})
        if "failure" in reply or "error" in reply or not reply["traced"]:
            return ""
        return reply["where"]["rules"][-1]

    def code(self, program: Program) -> list[str]:
        out, grads = self.oracle.evaluate(program)
        names = [f"{n}.grad" for n in input_names(program)]
        return to_code(
            program, self.target.import_lines, dict(zip(["out.data", *names], [out, *grads]))
        )

    # ------------------------------------------------------------------ the run
    def run(self) -> Report:
        """Every check in order (the basic ones first, so later rows can name them as the
        cause); stops early when the engine does not load or keeps hanging."""
        started = time.monotonic()
        with self.process:
            try:
                if self.check_loads():
                    if self.loaded.get("kind") == "tensor":
                        from .tensor_grader import run_tensor_checks

                        run_tensor_checks(self)
                    else:
                        self._run_checks()
            finally:
                self.report.seconds = time.monotonic() - started
                self.report.engine_output = self.process.output_tail(5)
        return self.report

    def _run_checks(self) -> None:
        ops = [lambda check=check: self.check_op(check) for check in OP_CHECKS]
        for check in (
            self.check_shape,
            self.check_seed,
            self.check_leaf_backward,
            self.check_walk,
            *ops,
            self.check_numbers,
            self.check_nonlinearity,
            self.check_reuse,
            self.check_order,
            self.check_random,
            self.check_accumulation,
            self.check_chain,
            self.check_parameters,
            self.check_zero_grad,
            self.check_network_nonlinear,
            self.check_network_gradients,
            self.check_training,
        ):
            if self.hangs >= MAX_HANGS:
                text = f"not run: the engine hung {MAX_HANGS} times; fix that first"
                self.add(Row("the other checks", FAIL, text))
                return
            check()

    def check_loads(self) -> bool:
        loaded = self.process.load()
        name = "engine loads"
        where = self.target.value_file
        if "failure" in loaded:
            if loaded["failure"] == "timeout":
                text = (
                    f"importing {where} did not finish in {self.timeout:g} s: code at the top "
                    "of a module runs on import; is there a loop or a training run there?"
                )
            else:
                text = f"the process importing {where} {loaded['how']}"
            self.add(Row(name, FAIL, text))
            return False
        if "error" in loaded:
            error = loaded["error"]
            if error["type"] == "NoValue":
                text = f"{where} has no class {self.target.class_name}"
            else:
                text = f"importing {where} raised {_error_text(error)}"
            self.add(Row(name, FAIL, text, [*self.target.import_lines]))
            return False
        self.loaded = loaded
        found = f"{self.target.class_name} from {self.target.value_module}"
        if loaded.get("kind") == "tensor":
            found += " (a tensor engine: NumPy arrays)"
        if loaded.get("mlp"):
            found += f"; {', '.join(loaded['library'])} from "
            found += self.target.mlp_module or self.target.value_module
        else:
            found += "; no MLP"
        self.has_mlp = bool(loaded.get("mlp"))
        self.add(Row(name, PASS, found))
        return True

    def check_shape(self) -> None:
        reply = self.ask({"do": "shape"})
        name = "Value's parts"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "Value(2.0)")))
            return
        problems = []
        if reply["data"] != 2.0:
            problems.append(f"Value(2.0).data is {reply['data']!r}")
        if reply["grad"] != 0.0:
            problems.append(f"a new Value's grad is {reply['grad']!r}: it must start at 0")
        if not reply["has_backward_method"]:
            problems.append("there is no backward() method")
        if problems:
            self.add(Row(name, FAIL, "; ".join(problems)))
            return
        children = reply["children"]
        text = "data, grad starting at 0, backward()"
        text += f", children in .{children}" if children else " (children under another name)"
        self.add(Row(name, PASS, text))

    def check_seed(self) -> None:
        """backward() on a leaf: nothing but the seed can give it a gradient, so this
        passes as soon as backward() (TODO 1) is done, before any rule is."""
        reply = self.ask({"do": "seed"})
        name = "seed"
        lines = [*self.target.import_lines, "a = Value(3.0)", "a.backward()", "print(a.grad)"]
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "Value(3.0).backward()"), lines))
        elif reply["grad"] != 1.0:
            text = (
                f"after a.backward() on a = Value(3.0), a.grad is {reply['grad']!r}: backward() "
                "forgets to seed 1.0. d(out)/d(out) = 1; set self.grad = 1.0 before walking"
            )
            self.add(Row(name, FAIL, text, [*lines[:-1], "print(a.grad)  # expected: 1.0"]))
        elif self._seeded_after_walk():
            text = (
                "(a * b).backward() leaves out.grad 1.0 but a.grad and b.grad 0: the seed is "
                "set after the walk, so every rule pushed 0. Set self.grad = 1.0 first"
            )
            self.add(Row(name, FAIL, text, self.code(SEED_PROGRAM)))
        else:
            self.add(Row(name, PASS, "backward() sets the output's gradient to 1.0"))

    def _seeded_after_walk(self) -> bool:
        """True when a * b ends with out.grad 1 and no gradient below it (a rule still a
        TODO, or wrong, says nothing here: the op rows judge it)."""
        results = self.run_programs([SEED_PROGRAM])
        if isinstance(results, dict) or "error" in results[0]:
            return False
        return results[0]["out_grad"] == 1.0 and results[0]["grads"] == [0.0, 0.0]

    def check_leaf_backward(self) -> None:
        reply = self.ask({"do": "leaf_backward"})
        name = "leaf _backward"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "a leaf's _backward()")))
        elif not reply["ran"]:
            self.add(Row(name, PASS, "a leaf has no zero-argument _backward to run"))
        elif reply["grad_after"] != 0.75 or reply["data_after"] != 3.0:
            text = (
                "a leaf's _backward is not a no-op: with grad 0.75, calling it left grad "
                f"{reply['grad_after']!r}. A leaf has no inputs to push to: "
                "self._backward = lambda: None"
            )
            lines = [
                *self.target.import_lines,
                "a = Value(3.0)",
                "a.grad = 0.75",
                "a._backward()",
                "print(a.grad)  # expected 0.75",
            ]
            self.add(Row(name, FAIL, text, lines))
        else:
            self.add(Row(name, PASS, "a leaf's _backward changes nothing"))

    def check_op(self, check: OpCheck) -> None:
        points = check.points
        if not self.oracle.exact_at_kinks:  # differences see 0.5 at relu's kink, torch 0
            points = [p for p in points if not (check.op == "relu" and p[0] == 0.0)]
        programs = [_single(check.op, point) for point in points]
        if check.op not in ("pow", "rpow"):  # the chain rule: upstream gradient 3, not 1
            chained = _single(check.op, points[0])
            chained["steps"].append(["mul_c", len(chained["inputs"]), 3.0])
            programs.append(chained)
        results = self.run_programs(programs)
        name = check.label
        if isinstance(results, dict):
            self.status[check.op] = FAIL
            self.add(Row(name, FAIL, _failure_text(results, check.label)))
            return
        for result in results:
            if "error" in result and _absent(result, check.op):
                status = FAIL if check.required else ABSENT
                text = f"not defined: define {_DUNDER.get(check.op) or check.op}"
                if not check.required:
                    text = "not defined (optional)"
                self.status[check.op] = status
                self.add(Row(name, status, text))
                return
        diagnosis, program = self._op_diagnosis(check, programs, results)
        self.status[check.op] = FAIL if diagnosis else PASS
        if diagnosis.startswith(BECAUSE):
            self.because(name, diagnosis.removeprefix(BECAUSE))
        elif diagnosis:
            self.add(Row(name, FAIL, diagnosis, self.code(program)))
        else:
            what = "forward and gradient match the oracle"
            if len(points) < len(check.points):
                what += " (relu'(0) is checked against PyTorch only)"
            self.add(Row(name, PASS, what))

    def _op_diagnosis(
        self, check: OpCheck, programs: list[Program], results: list[dict[str, Any]]
    ) -> tuple[str, Program]:
        """The words for the first wrong result, or ("", ...) when all are right."""
        wrong = []
        for program, result in zip(programs, results):
            if "error" in result:
                return _result_error(result, self.oracle, program), program
            out, grads = self.oracle.evaluate(program)
            if not close(result["out"], out):
                return (
                    f"the forward is wrong: {_inputs_text(program)} gives {result['out']!r}, "
                    f"expected {out!r}",
                    program,
                )
            if not all(close(g, w) for g, w in zip(result["grads"], grads)):
                wrong.append((program, result, grads))
        if not wrong:
            return "", programs[0]
        program, result, grads = wrong[0]
        got = ", ".join(f"{g:.6g}" for g in result["grads"])
        want = ", ".join(f"{g:.6g}" for g in grads)
        generic = f"wrong gradient at {_inputs_text(program)}: got {got}, expected {want}"
        basis = [op for op in check.built_on if self.status.get(op) == FAIL]
        cause = self.root_cause()
        if cause:
            return BECAUSE + cause, program
        if basis:
            return BECAUSE + self.causes.get(_label(basis[0]), _label(basis[0])), program
        alone = [(p, r) for p, r, _ in wrong if len(p["steps"]) == 1]
        k = _multiple([(r["grads"], w) for _, r, w in wrong]) if len(wrong) == len(results) else 0
        if k:
            rule = self.where_rule(program)
            return (
                f"counted {k} times: every gradient of {check.label} is {k} times the right one "
                f"(got {got}, expected {want}): its rule adds to each input's grad {k} times"
                + (f"; look at {rule}" if rule else ""),
                program,
            )
        if not alone:  # right as the output, wrong when its result feeds another op
            if self.failed("order"):
                return BECAUSE + "order", program
            if check.op != "mul" and self.status.get("mul") == FAIL:
                return BECAUSE + "a * b", program
            if all(close(x * 3.0, w) for x, w in zip(result["grads"], grads)):
                words = "multiply the local derivative by out.grad (the chain rule)"
                return f"the backward ignores out.grad: {words}", program
            return (
                f"right as the output, but wrong when its result feeds another op: got {got}, "
                f"expected {want}. Does backward() run each node's _backward only after all "
                "of its users'?",
                program,
            )
        if check.op == "relu":
            leaked = [p["inputs"][0] for p, r in alone if p["inputs"][0] <= 0]
            if leaked:
                at = " and ".join(f"a = {x:g}" for x in leaked)
                return (
                    f"relu passes gradient where its output is 0 (at {at}): "
                    "self.grad += (out.data > 0) * out.grad",
                    next(p for p, _ in alone if p["inputs"][0] <= 0),
                )
        for words, bug in check.bugs:
            if all(_matches(bug, p, r) for p, r in alone):
                return words, alone[0][0]
        return generic, program

    def check_numbers(self) -> None:
        """a + 2, 2 * a, 1 - a, ...: plain numbers on either side of a Value."""
        programs = [_single(op, [1.5, 2.0]) for op, _, _ in NUMBER_FORMS]
        results = self.run_programs(programs)
        name = "numbers with Values"
        if isinstance(results, dict):
            self.add(Row(name, FAIL, _failure_text(results, "a + 2")))
            return
        for (op, example, fix), program, result in zip(NUMBER_FORMS, programs, results):
            if "error" in result and result["error"]["type"] == "NotAValue":
                self.add(Row(name, FAIL, _result_error(result), self.code(program)))
                return
            if "error" in result and result["stage"] == "forward":
                words = f"{example} raised {_error_text(result['error'])}: {fix}"
                self.add(Row(name, FAIL, words, self.code(program)))
                return
            if "error" in result:
                self.add(Row(name, FAIL, _result_error(result), self.code(program)))
                return
            out, grads = self.oracle.evaluate(program)
            if not close(result["out"], out):
                text = f"{example} gives {result['out']!r} at a = 1.5, expected {out!r}"
                if op in ("rsub", "rdiv") and close(result["out"], _swapped(op, 1.5, 2.0)):
                    text += f": the operands are swapped; {fix}"
                self.add(Row(name, FAIL, text, self.code(program)))
                return
            if not close(result["grads"][0], grads[0]):
                basic = [op for op in _DUNDER if self.status.get(op) == FAIL]
                if self.root_cause() or basic:
                    cause = self.root_cause() or _label(basic[0])
                    self.because(name, cause)
                    return
                text = f"{example}: a.grad is {result['grads'][0]!r}, expected {grads[0]!r}"
                self.add(Row(name, FAIL, text, self.code(program)))
                return
        self.add(Row(name, PASS, ", ".join(example for _, example, _ in NUMBER_FORMS)))

    def check_nonlinearity(self) -> None:
        present = [op for op in NONLINEARITIES if self.status.get(op) == PASS]
        name = "a nonlinearity"
        if present:
            self.add(Row(name, PASS, ", ".join(present) + " (the gate needs one)"))
        elif any(self.status.get(op) == FAIL for op in NONLINEARITIES):
            failing = next(op for op in NONLINEARITIES if self.status.get(op) == FAIL)
            self.because(name, _label(failing))
        else:
            self.add(Row(name, FAIL, "the gate needs at least one: define tanh() or relu()"))

    def check_reuse(self) -> None:
        """A value used twice must receive the sum of both paths' gradients."""
        cases: list[tuple[str, Program]] = []
        for op, point in (("add", 2.0), ("mul", 3.0), ("sub", 2.0), ("div", 2.0)):
            if self.status.get(op) == PASS:
                cases.append((op, {"inputs": [point], "steps": [[op, 0, 0]]}))
        if self.status.get("add") == PASS:
            for check in OP_CHECKS:
                if check.op in ("add", "mul", "sub", "div", "rpow"):
                    continue
                if self.status.get(check.op) == PASS:
                    first = _single(check.op, check.points[-1])
                    first["steps"].append(["add", 1, 0])
                    cases.append((check.op, first))
        name = "reuse"
        if not cases:
            basic = [op for op in ("add", "mul") if self.status.get(op) == FAIL]
            if basic:
                self.because(name, self.root_cause() or _label(basic[0]))
            else:
                self.add(Row(name, FAIL, "not run: no binary op (+ * - /) passes on its own yet"))
            return
        results = self.run_programs([p for _, p in cases])
        if isinstance(results, dict):
            self.add(Row(name, FAIL, _failure_text(results, "a * a")))
            return
        overwritten, multiples, first_wrong = [], [], None
        for (op, program), result in zip(cases, results):
            if "error" in result:
                self.add(Row(name, FAIL, _result_error(result), self.code(program)))
                return
            _, grads = self.oracle.evaluate(program)
            if not close(result["grads"][0], grads[0]):
                k = _multiple([(result["grads"], grads)])
                (multiples if k else overwritten).append((op, k))
                first_wrong = first_wrong or program
        cause = self.root_cause() or ("order" if self.failed("order") else None)
        if first_wrong is not None and cause:
            self.because(name, cause)
        elif multiples and not overwritten:
            op, k = multiples[0]
            program = next(p for o, p in cases if o == op)
            _, grads = self.oracle.evaluate(program)
            rule = self.where_rule(program)
            text = (
                f"counted {k} times: a value used twice in {_op_words(op)} gets {k} times the "
                f"right gradient ({grads[0] * k:g} for {grads[0]:g}): the rule adds the same "
                "path twice when both inputs are one Value; the walk already calls it once"
                + (f"; look at {rule}" if rule else "")
            )
            self.add(Row(name, FAIL, text, self.code(program)))
        elif first_wrong is not None:
            ops = [op for op, _ in overwritten + multiples]
            basic = [op for op in ops if op in ("add", "mul")] or ops
            text = (
                "the gradient was overwritten, not accumulated: `=` where `+=` belongs in "
                f"the backward of {' and '.join(map(_op_words, basic))}. A value used twice "
                "gets the sum of both paths"
            )
            others = [op for op in ops if op not in basic]
            if others:
                text += f" (also seen through {', '.join(map(_op_words, others))})"
            self.add(Row(name, FAIL, text, self.code(first_wrong)))
        else:
            shown = " ".join(_op_words(op).replace(" ", "") for op, _ in cases)
            self.add(Row(name, PASS, f"a value used twice accumulates ({shown})"))

    def check_walk(self) -> None:
        """The order backward() calls the rules in, watched on ORDER_PROGRAM (the rules
        themselves are not run, so this needs only TODO 1): every node once, after all of
        its users. When the walk cannot be watched, ``check_order`` judges it by numbers."""
        reply = self.ask({"do": "walk", "program": ORDER_PROGRAM})
        if "failure" in reply or "error" in reply or not reply["traced"] or not reply["calls"]:
            self.walk_traced = False
            return
        self.walk_traced = True
        name = "order"
        text = walk_diagnosis(ORDER_PROGRAM, reply)
        if text:
            self.add(Row(name, FAIL, text, self.code(ORDER_PROGRAM)))
        else:
            self.add(Row(name, PASS, "a diamond graph: every node once, after all its users"))

    def check_order(self) -> None:
        """ORDER_PROGRAM by numbers, for a walk ``check_walk`` could not watch."""
        if self.walk_traced:
            return
        program = ORDER_PROGRAM
        results = self.run_programs([program])
        name = "order"
        if isinstance(results, dict):
            self.add(Row(name, FAIL, _failure_text(results, "a diamond graph")))
            return
        result = results[0]
        if "error" in result:
            self.add(Row(name, FAIL, _result_error(result), self.code(program)))
            return
        _, grads = self.oracle.evaluate(program)
        if all(close(g, w) for g, w in zip(result["grads"], grads)):
            self.add(Row(name, PASS, "a diamond graph: every node waits for all its users"))
            return
        k = _multiple([(result["grads"], grads)])
        basic = [op for op in ("add", "mul") if self.status.get(op) == FAIL]
        cause = self.root_cause() or (_label(basic[0]) if basic else None)
        if (
            cause is None
            and self.failed("reuse")
            and not self.rows["reuse"].diagnosis.startswith("not")
        ):
            cause = "reuse"
        if cause:
            self.because(name, cause)
            return
        if k:
            text = f"counted {k} times: {OVERCOUNTED}"
        elif result["grads"] == [0.0, 0.0]:
            text = (
                "the inputs got no gradient: backward() must call every node's _backward, "
                "outputs first: walk the topological order in reverse"
            )
        else:
            text = (
                "a node passed its gradient on before all of its users had pushed theirs: "
                "sort topologically and walk in reverse"
            )
        self.add(Row(name, FAIL, text, self.code(program)))

    def check_random(self) -> None:
        ops = [op for op, status in self.status.items() if status in (PASS, FAIL)]
        ops += [op for op, _, _ in NUMBER_FORMS if not self.failed("numbers with Values")]
        name = "random expressions"
        programs = random_programs(ops, RANDOM_PROGRAMS, seed=0)
        results = self.run_programs(programs)
        if isinstance(results, dict):
            self.add(Row(name, FAIL, _failure_text(results, "random expressions")))
            return
        wrong = []
        for program, result in zip(programs, results):
            if "error" in result and result["error"]["type"] == "NotImplementedError":
                self.add(Row(name, FAIL, _result_error(result)))
                return
            if "error" in result:
                wrong.append(program)
                continue
            out, grads = self.oracle.evaluate(program)
            if not close(result["out"], out) or not all(
                close(g, w) for g, w in zip(result["grads"], grads)
            ):
                wrong.append(program)
        if not wrong:
            text = f"{len(programs)} random graphs of {len(set(ops))} ops match the oracle"
            self.add(Row(name, PASS, text))
            return
        smallest = min(wrong, key=lambda p: (len(p["steps"]), len(p["inputs"])))
        failing = [check.label for check in OP_CHECKS if self.status.get(check.op) == FAIL]
        causes = [self.root_cause(), "order" if self.failed("order") else None]
        causes += ["reuse" if self.failed("reuse") else None, *failing]
        text = f"{len(wrong)} of {len(programs)} random graphs disagree with the oracle"
        cause = next((c for c in causes if c), None)
        if cause:
            self.because(name, cause)
        else:
            self.add(Row(name, FAIL, text + "; the smallest is below", self.code(smallest)))

    def check_accumulation(self) -> None:
        reply = self.ask({"do": "accumulate"})
        name = "two backward() calls"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, NOTE, "could not run: " + _failure_text(reply, "backward()")))
            return
        first, second = reply["after_first"], reply["after_second"]
        if close(second, first + 1.0):
            text = "grads add up over backward() calls, as PyTorch's leaves do"
        else:
            text = (
                f"a.grad was {first:g} after (a*b).backward() and {second:g} after "
                "(a+b).backward(): the second call did not add to it (PyTorch's leaves "
                "would hold 4)"
            )
        self.add(Row(name, NOTE, text))

    def check_chain(self) -> None:
        reply = self.ask({"do": "chain", "n": CHAIN_LENGTH})
        name = f"{CHAIN_LENGTH:,}-node chain"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, NOTE, "could not run: " + _failure_text(reply, "a long chain")))
        elif reply["recursion"]:
            text = (
                "backward() hit Python's recursion limit (RecursionError): the topological "
                "sort is recursive, as micrograd's is, which fails near 1,000 nodes deep. "
                "Fine for the gate's small networks; for deep graphs, sort with an explicit "
                "stack of (node, children_done) pairs instead of recursion"
            )
            self.add(Row(name, NOTE, text))
        else:
            want = 1.0001**CHAIN_LENGTH
            ok = close(reply["grad"], want)
            verdict = "right" if ok else f"{reply['grad']:.6g}, expected {want:.6g}"
            self.add(Row(name, NOTE, f"backward() walks it without recursion; gradient {verdict}"))

    def library_lines(self, name: str, *lines: str) -> list[str]:
        """A reproduce block that imports ``name`` from the learner's library (seeding
        random as the grader did) and runs ``lines``."""
        seeds = ["import random"] if any(line.startswith("random.seed") for line in lines) else []
        return [*self.target.library_import_lines(name), *seeds, *lines]

    def check_parameters(self) -> None:
        """parameters() of Neuron(3), Layer(3, 4) and MLP(3, [4, 4, 1]): every weight and
        bias once, each its own Value."""
        name = "parameters()"
        if not self.has_mlp:
            text = "no MLP in the engine's module or nn.py: the gate asks for one"
            self.add(Row("network", ABSENT, text))
            return
        reply = self.ask({"do": "parameters"})
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "MLP(3, [4, 4, 1]).parameters()")))
            return
        shown = []
        for level in reply["levels"]:
            if level.get("skipped"):
                continue
            cls = level["name"]
            made, want, parts, seed = ARCHITECTURE[cls]
            if "error" in level:
                error = level["error"]
                text = f"{made}.parameters() raised {_error_text(error)}"
                if error["type"] == "NotImplementedError":
                    text = f"{TODO} {error['message'] or 'NotImplementedError'}"
                self.add(Row(name, FAIL, text))
                return
            count, distinct, values = level["count"], level["distinct"], level["values"]
            method = f"{cls}.parameters" + (f" ({level['where']})" if level["where"] else "")
            lines = self.library_lines(
                cls,
                f"random.seed({seed})",
                f"params = {made}.parameters()",
                "print(len(params), len({id(p) for p in params}))",
                f"# expected: {want} {want} ({parts}, each its own Value)",
            )
            if count != want:
                text = f"{method} returns {count} Values for {made}; {parts} make {want}"
                if want - count == NEURONS[cls]:
                    text += ": one per neuron is missing. Is the bias left out?"
                self.add(Row(name, FAIL, text, lines))
                return
            if distinct < count:
                text = (
                    f"{made}.parameters() lists {count} Values but only {distinct} distinct "
                    "objects: weights that share one Value train as one. Does Neuron.__init__ "
                    "repeat one Value ([Value(x)] * nin is nin references to one object)?"
                )
                self.add(Row(name, FAIL, text, lines))
                return
            if not level["same"]:
                text = (
                    f"{method} returns new Values on each call: copies, which the forward "
                    "does not use, so training and zero_grad() never reach the network. Return "
                    "the Values themselves"
                )
                lines = self.library_lines(
                    cls,
                    f"model = {made}",
                    "print(model.parameters()[0] is model.parameters()[0])  # expected: True",
                )
                self.add(Row(name, FAIL, text, lines))
                return
            if values < count:
                text = f"{method} returns {count - values} things that are not Values"
                self.add(Row(name, FAIL, text + ": return the Values themselves", lines))
                return
            shown.append(f"{made} {count}")
        self.add(Row(name, PASS, ", ".join(shown) + " Values, each once"))

    def check_zero_grad(self) -> None:
        """zero_grad() called on a network whose grads are all 1.5: all become 0."""
        name = "zero_grad()"
        if not self.has_mlp:
            return
        reply = self.ask({"do": "zero_grad"})
        if self.failed("parameters()") and ("error" in reply or reply.get("left")):
            self.because(name, "parameters()")
        elif "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "MLP(3, [4, 4, 1]).zero_grad()")))
        elif not reply["defined"]:
            text = "MLP has no zero_grad(): define it (on Module) to set every grad to 0"
            self.add(Row(name, FAIL, text))
        elif reply["left"]:
            where = f" ({reply['where']})" if reply["where"] else ""
            text = (
                f"MLP.zero_grad{where} left {reply['left']} of {reply['count']} grads as they "
                "were (1.5): set each parameter's grad to 0, as p.grad = 0.0 does. A training "
                "loop calls it before each backward(), so stale gradients pile up"
            )
            lines = self.library_lines(
                "MLP",
                "model = MLP(3, [4, 4, 1])",
                "for p in model.parameters():",
                "    p.grad = 1.5",
                "model.zero_grad()",
                "print(sorted({p.grad for p in model.parameters()}))",
                "# expected: [0.0]",
            )
            self.add(Row(name, FAIL, text, lines))
        else:
            self.add(Row(name, PASS, f"sets all {reply['count']} grads of MLP(3, [4, 4, 1]) to 0"))

    def check_network_nonlinear(self) -> None:
        """An MLP with no nonlinearity is a straight line however deep: f(p) + f(q) equals
        2 f((p + q) / 2) for every pair p, q exactly when f is affine."""
        name = "network bends"
        if not self.has_mlp:
            return
        reply = self.ask({"do": "affine", "pairs": AFFINE_PAIRS})
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "MLP(2, [8, 8, 1])(x)")))
            return
        if reply["mlp"] > AFFINE_TOLERANCE:
            self.add(Row(name, PASS, "MLP(2, [8, 8, 1]) is not affine in its input"))
            return
        if reply.get("neuron", 1.0) <= AFFINE_TOLERANCE:
            where = f" ({reply['where']})" if reply.get("where") else ""
            text = (
                f"MLP(2, [8, 8, 1]) is affine in its input: no nonlinearity anywhere. "
                f"Neuron.__call__{where} must apply tanh() (or relu()) to sum(w * x) + b "
                "unless nonlin is False; without it, every layer together is one straight line"
            )
        else:
            text = (
                "MLP(2, [8, 8, 1]) is affine in its input though Neuron(2) is not: does "
                "MLP.__init__ make every layer linear? Only the last one is"
            )
        p, q = AFFINE_PAIRS[0]
        middle = [round((a + b) / 2, 12) for a, b in zip(p, q)]
        lines = self.library_lines(
            "MLP",
            "random.seed(0)",
            "model = MLP(2, [8, 8, 1])",
            f"print(model({p}).data + model({q}).data - 2 * model({middle}).data)",
            "# expected: not 0 (a network that bends); an affine one gives 0",
        )
        self.add(Row(name, FAIL, text, lines))

    def check_network_gradients(self) -> None:
        name = "network gradients"
        if not self.has_mlp:
            return
        rows = ["order", "reuse", "parameters()", *(check.label for check in OP_CHECKS)]
        cause = self.root_cause() or next((r for r in rows if self.failed(r)), None)
        if self.failed("parameters()"):
            self.because(name, "parameters()")
            return
        reply = self.ask({"do": "network_gradients"})
        if cause and ("failure" in reply or "error" in reply or not _network_right(reply)):
            self.because(name, cause)
            return
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "MLP(3, [4, 4, 1])")))
            return
        grads, differences = reply["grads"], reply["differences"]
        wrong = [
            i
            for i, (g, pair) in enumerate(zip(grads, differences))
            if not any(close(g, d) for d in pair)
        ]
        n = len(grads)
        if all(pair[0] == 0.0 for pair in differences):
            text = (
                "changing the Values parameters() returns does not change the network's "
                "output: does parameters() return the Values the forward uses (not copies)?"
            )
            self.add(Row(name, FAIL, text))
        elif not wrong:
            text = f"all {n} of MLP(3, [4, 4, 1]) match differences of its own forward"
            self.add(Row(name, PASS, text))
        else:
            i = wrong[0]
            text = (
                f"{len(wrong)} of {n} parameter gradients differ from central differences of "
                f"the network's own forward; parameter {i}: {grads[i]:.6g}, differences "
                f"give {differences[i][0]:.6g}"
            )
            if all(g == 0.0 for g in grads):
                text += (
                    ": all are 0. Does the forward build its output from the parameters' "
                    "Values (not their .data), and does parameters() return those Values?"
                )
            self.add(Row(name, FAIL, text))

    def check_training(self) -> None:
        """SGD with the learner's own parameters() and zero_grad() on make_moons, to an
        accuracy no straight line reaches on these points (TRAIN_TARGET)."""
        name = "network trains"
        if not self.has_mlp:
            return
        basic = ("seed", "leaf _backward", "order", "reuse", "a nonlinearity")
        network = ("parameters()", "zero_grad()", "network bends", "network gradients")
        cause = next((row for row in (*basic, *network) if self.failed(row)), None)
        if cause:
            self.because(name, cause)
            return
        import numpy as np

        from ..data import make_2d

        X, y = make_2d("moons", 100, 0.1, np.random.RandomState(0))
        request = {
            "do": "train",
            "X": [[float(v) for v in x] for x in X],
            "y": [2.0 * float(t) - 1.0 for t in y],
            "lr": 0.1,
            "batch": 10,
            "epochs": TRAIN_EPOCHS,
            "target": TRAIN_TARGET,
        }
        reply = self.ask(request, self.train_timeout)
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "training MLP(2, [8, 8, 1])")))
            return
        history = reply["history"]
        (loss0, _), (loss1, accuracy) = history[0], history[-1]
        epochs = len(history) - 1
        text = (
            f"MLP(2, [8, 8, 1]), moons, SGD: loss {loss0:.3f} -> {loss1:.3f} in {epochs} "
            f"epoch(s), accuracy {accuracy:.0%}"
        )
        ok = loss1 < loss0 and accuracy >= TRAIN_TARGET
        if loss1 == loss0:
            text += "; the loss did not move at all: the SGD updates do not reach the network"
        elif not ok:
            text += (
                f"; the gate needs the loss to fall and {TRAIN_TARGET:.0%} accuracy (the best "
                f"straight line through these 100 points classifies {BEST_LINE:.0%})"
            )
        self.add(Row(name, PASS if ok else FAIL, text))


# ---------------------------------------------------------------------- words


def walk_diagnosis(program: Program, reply: dict[str, Any]) -> str:
    """What is wrong with the walk a ``walk`` reply recorded on ``program`` ("" when every
    op node ran once, after all of its users), with the line to look at."""
    where = reply["where"]
    backward = f"; look at {where['backward']} (backward)" if where["backward"] else ""
    if reply["copies"]:
        init = f"; look at {where['init']} (__init__)" if where["init"] else ""
        return (
            "counted once per path: _prev holds copies of the children, so the sort cannot "
            "see two paths meet at a node, and its gradient comes out a whole multiple of "
            f"the right one. Keep the Values themselves: self._prev = set(_children){init}"
        )
    n, steps = len(program["inputs"]), program["steps"]
    calls = reply["calls"]
    counts = {slot: calls.count(slot) for slot in range(n, n + len(steps))}
    k = max(counts.values())
    if k > 1:
        return (
            f"counted {k} times: backward() ran a node's _backward {k} times, once per path to "
            "it, so its gradient reached its inputs more than once. The topological sort needs "
            f"a visited set, to list each node once{backward}"
        )
    missing = [slot for slot, count in counts.items() if count == 0]
    if missing:
        return (
            f"backward() ran the _backward of {len(counts) - len(missing)} of the "
            f"{len(counts)} nodes: it must call every node's{backward}"
        )
    position = {slot: calls.index(slot) for slot in counts}
    pairs = [  # (node, one of its users)
        (read, n + j)
        for j, step in enumerate(steps)
        for read in step[1 : 1 + OPS[step[0]].arity]
        if read >= n
    ]
    early = [(node, user) for node, user in pairs if position[node] < position[user]]
    if not early:
        return ""
    if position[n + len(steps) - 1] == 0:
        return (
            "a node passed its gradient on before all of its users had pushed theirs (a "
            "breadth-first walk does that on a diamond): sort topologically and walk in "
            f"reverse{backward}"
        )
    if len(early) == len(pairs):
        return (
            "every node ran before its users: the walk goes through the topological order "
            f"forwards. Walk the topological order in reverse: for node in reversed(topo){backward}"
        )
    return (
        "a node ran before one of its users though the walk is reversed: the sort appends a "
        "node before its children (pre-order). Append it after all of its children "
        f"(post-order){backward}"
    )


def _multiple(pairs: list[tuple[list[float], list[float]]]) -> int:
    """k when every gradient got is k times the one wanted, k a whole number >= 2 (some
    wanted gradient not 0), else 0: the mark of a gradient counted k times."""
    found = set()
    for got, want in pairs:
        for g, w in zip(got, want):
            if w == 0.0:
                if g != 0.0:
                    return 0
                continue
            k = round(g / w)
            if k < 2 or not close(g, k * w):
                return 0
            found.add(k)
    return found.pop() if len(found) == 1 else 0


def _label(op: str) -> str:
    """The row name of an op (``a + b``)."""
    return next(check.label for check in OP_CHECKS if check.op == op)


def _network_right(reply: dict[str, Any]) -> bool:
    """Every parameter gradient of a network_gradients reply matches its differences."""
    pairs = zip(reply["grads"], reply["differences"])
    return all(any(close(g, d) for d in pair) for g, pair in pairs)


def _inputs_text(program: Program) -> str:
    names = input_names(program)
    text = ", ".join(f"{n} = {x:g}" for n, x in zip(names, program["inputs"]))
    return text


def _op_words(op: str) -> str:
    return {"add": "+", "mul": "*", "sub": "-", "div": "/", "pow": "**", "neg": "unary -"}.get(
        op, op
    )


def _matches(bug: Callable[..., list[float]], program: Program, result: dict[str, Any]) -> bool:
    args = [*program["inputs"]]
    step = program["steps"][0]
    if OPS[step[0]].constant:
        args.append(step[-1])
    try:
        predicted = bug(*args)
    except (ArithmeticError, ValueError):
        return False
    return all(close(g, p) for g, p in zip(result["grads"], predicted))


def _swapped(op: str, a: float, c: float) -> float:
    return a - c if op == "rsub" else a / c


def _absent(result: dict[str, Any], op: str) -> bool:
    """True when the step failed because the Value has no such method or operator."""
    if result.get("stage") != "forward":
        return False
    error = result["error"]
    message = error["message"]
    if error["type"] == "AttributeError":
        return f"'{_METHOD.get(op, op)}'" in message and not error["where"]
    unsupported = ("unsupported operand", "bad operand type")
    return error["type"] == "TypeError" and any(text in message for text in unsupported)


def _error_text(error: dict[str, Any]) -> str:
    if error["type"] == "NotAValue":  # see probe._forward
        return error["message"] + (f" ({error['where']})" if error["where"] else "")
    text = f"{error['type']}: {error['message']}" if error["message"] else error["type"]
    if error["type"] == "MemoryError":
        text += " (the engine's process may use at most 4 GiB)"
    return text + (f" ({error['where']})" if error["where"] else "")


def _result_error(
    result: dict[str, Any], oracle: Oracle | None = None, program: Program | None = None
) -> str:
    """Words for a program that raised: a TODO says which, and whether the op's rule is
    right already (checked with the grader's own walk)."""
    error = result["error"]
    if error["type"] == "NotAValue":
        return f"{_error_text(error)}: each op must return a new Value of the engine's own class"
    if error["type"] == "NotImplementedError":
        text = f"{TODO} {error['message'] or 'NotImplementedError'}"
        rules = result.get("rules")
        same = rules and rules.get("error", {}).get("message") == error["message"]
        if rules and not same and oracle is not None and program is not None:
            if "error" in rules:
                if rules["error"]["type"] == "NotImplementedError":
                    text += f"; and its rule: {rules['error']['message']}"
            else:
                _, grads = oracle.evaluate(program)
                if all(close(g, w) for g, w in zip(rules["grads"], grads)):
                    text += " (the op's own backward rule is already right)"
                else:
                    text += " (and with the grader's walk, this op's rule gives wrong gradients)"
        return text
    return f"{result['stage']} raised {_error_text(error)}"


def _failure_text(reply: dict[str, Any], what: str) -> str:
    """Words for a request that did not come back (it hung or crashed) or raised."""
    failure = reply.get("failure")
    if failure == "timeout":
        return (
            f"{what} did not finish in {reply['seconds']:g} s and was stopped: an infinite "
            "loop? (a topological sort that never marks nodes visited loops on a diamond)"
        )
    if failure == "crash":
        output = "; ".join(reply.get("output", []))
        return f"the engine's process {reply['how']} during {what}" + (
            f": {output}" if output else ""
        )
    if reply["error"]["type"] == "NotImplementedError":
        return f"{TODO} {reply['error']['message']}"
    return f"{what} raised {_error_text(reply['error'])}"


def grade(
    target: Target, oracle: Oracle, timeout: float = 10.0, train_timeout: float = 90.0
) -> Report:
    """Run every check against the engine at ``target`` and return the report."""
    return Grader(target, oracle, timeout, train_timeout).run()
