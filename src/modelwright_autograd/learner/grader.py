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
    OpCheck("2 ** a", "rpow", [[1.5, 2.0], [-0.5, 3.0]], False, []),
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
        ],
    ),
    OpCheck("relu", "relu", [[-1.5], [0.0], [2.0]], False, []),
    OpCheck("exp", "exp", [[0.5], [-1.2]], False, []),
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
            *ops,
            self.check_numbers,
            self.check_nonlinearity,
            self.check_reuse,
            self.check_order,
            self.check_random,
            self.check_accumulation,
            self.check_chain,
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
            found += "; no MLP found, so the network checks cannot run"
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
        program = {"inputs": [2.0, 3.0], "steps": [["mul", 0, 1]]}
        results = self.run_programs([program])
        name = "seed"
        if isinstance(results, dict):
            self.add(Row(name, FAIL, _failure_text(results, "(a * b).backward()")))
            return
        result = results[0]
        if "error" in result:
            self.add(Row(name, FAIL, _result_error(result), self.code(program)))
        elif result["out_grad"] != 1.0:
            text = (
                f"after out.backward(), out.grad is {result['out_grad']!r}: backward() forgets "
                "to seed 1.0. d(out)/d(out) = 1; set self.grad = 1.0 before walking"
            )
            self.add(Row(name, FAIL, text, self.code(program)))
        else:
            self.add(Row(name, PASS, "backward() sets the output's gradient to 1.0"))

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

    def _root_cause(self) -> str:
        for row in ("seed", "leaf _backward"):
            if self.failed(row):
                return f" (probably because of '{row}' above)"
        return ""

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
                    text = f"{_DUNDER.get(check.op) or check.op} is not defined (optional)"
                self.status[check.op] = status
                self.add(Row(name, status, text))
                return
        diagnosis, program = self._op_diagnosis(check, programs, results)
        self.status[check.op] = FAIL if diagnosis else PASS
        if diagnosis:
            self.add(Row(name, FAIL, diagnosis, self.code(program)))
        else:
            what = f"forward and gradient match the oracle at {len(points)} points"
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
        if self._root_cause() or basis:
            hint = self._root_cause() or (
                f" (if {check.label} is built from {' and '.join(map(_op_words, basis))}, "
                "fix that first)"
            )
            return generic + hint, program
        alone = [(p, r) for p, r, _ in wrong if len(p["steps"]) == 1]
        if not alone:  # right as the output, wrong when its result feeds another op
            if check.op != "mul" and self.status.get("mul") == FAIL:
                return f"right as the output; wrong in ({check.label}) * 3, and * fails", program
            if all(close(x * 3.0, w) for x, w in zip(result["grads"], grads)):
                words = "multiply the local derivative by out.grad (the chain rule)"
                return f"the backward ignores out.grad: {words}", program
            return (
                f"right as the output, but wrong when its result feeds another op: got {got}, "
                f"expected {want}. Does backward() run each node's _backward only after all "
                "of its users' (see 'order')?",
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
                basic_failed = any(self.status.get(op) == FAIL for op in _DUNDER)
                hint = self._root_cause() or (" (see the rows above)" if basic_failed else "")
                text = f"{example}: a.grad is {result['grads'][0]!r}, expected {grads[0]!r}"
                text += hint
                self.add(Row(name, FAIL, text, self.code(program)))
                return
        self.add(Row(name, PASS, ", ".join(example for _, example, _ in NUMBER_FORMS)))

    def check_nonlinearity(self) -> None:
        present = [op for op in NONLINEARITIES if self.status.get(op) == PASS]
        name = "a nonlinearity"
        if present:
            self.add(Row(name, PASS, ", ".join(present) + " (the gate needs one)"))
        elif any(self.status.get(op) == FAIL for op in NONLINEARITIES):
            self.add(Row(name, FAIL, "the gate needs tanh or relu working: see above"))
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
            self.add(Row(name, FAIL, "not run: no binary op (+ * - /) passes on its own yet"))
            return
        results = self.run_programs([p for _, p in cases])
        if isinstance(results, dict):
            self.add(Row(name, FAIL, _failure_text(results, "a * a")))
            return
        overwritten = []
        first_wrong = None
        for (op, program), result in zip(cases, results):
            if "error" in result:
                self.add(Row(name, FAIL, _result_error(result), self.code(program)))
                return
            _, grads = self.oracle.evaluate(program)
            if not close(result["grads"][0], grads[0]):
                overwritten.append(op)
                first_wrong = first_wrong or program
        if overwritten:
            basic = [op for op in overwritten if op in ("add", "mul")] or overwritten
            text = (
                "the gradient was overwritten, not accumulated: `=` where `+=` belongs in "
                f"the backward of {' and '.join(map(_op_words, basic))}. A value used twice "
                "gets the sum of both paths"
            )
            others = [op for op in overwritten if op not in basic]
            if others:
                text += f" (also seen through {', '.join(map(_op_words, others))})"
            self.add(Row(name, FAIL, text + self._root_cause(), self.code(first_wrong)))
        else:
            shown = ", ".join(_op_words(op) for op, _ in cases)
            self.add(Row(name, PASS, f"a value used twice accumulates, through {shown}"))

    def check_order(self) -> None:
        """L = c + (c*3)*2 with c = x*y: c has a near user (+) and a far one (the chain of
        *), so a walk that is not reverse-topological gives c's rule too little."""
        program = {
            "inputs": [1.5, -2.0],
            "steps": [["mul", 0, 1], ["mul_c", 2, 3.0], ["mul_c", 3, 2.0], ["add", 2, 4]],
        }
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
        reuse_ran = self.failed("reuse") and not self.rows["reuse"].diagnosis.startswith("not")
        if self._root_cause():
            text = "wrong gradients on a diamond graph" + self._root_cause()
        elif result["grads"] == [0.0, 0.0]:
            text = (
                "the inputs got no gradient: backward() must call every node's _backward, "
                "outputs first: walk the topological order in reverse"
            )
        elif self.status.get("add") == FAIL or self.status.get("mul") == FAIL:
            text = "wrong gradients on a diamond graph of + and *, which fail above"
        elif reuse_ran:
            text = "wrong gradients on a diamond graph (probably because of 'reuse' above)"
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
        failing_ops = sorted(op for op in set(ops) if self.status.get(op) == FAIL)
        text = f"{len(wrong)} of {len(programs)} random graphs disagree with the oracle"
        if failing_ops:
            text += f" (they use ops failing above: {', '.join(failing_ops)})"
        elif self._root_cause():
            text += self._root_cause()
        elif self.failed("reuse") or self.failed("order"):
            cause = "reuse" if self.failed("reuse") else "order"
            text += f" (probably because of '{cause}' above); the smallest is below"
        else:
            text += "; the smallest is below"
        self.add(Row(name, FAIL, text, self.code(smallest)))

    def check_accumulation(self) -> None:
        reply = self.ask({"do": "accumulate"})
        name = "two backward() calls"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, NOTE, "could not run: " + _failure_text(reply, "backward()")))
            return
        first, second = reply["after_first"], reply["after_second"]
        if close(second, first + 1.0):
            text = (
                "gradients accumulate across backward() calls, as PyTorch's leaves do: "
                "zero them (p.grad = 0) before each backward() in a training loop"
            )
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
            verdict = "right" if ok else f"{reply['grad']!r}, expected {want!r}"
            self.add(Row(name, NOTE, f"backward() walks it without recursion; gradient {verdict}"))

    def check_network_gradients(self) -> None:
        name = "network gradients"
        if not self.has_mlp:
            self.add(Row(name, ABSENT, "no MLP found (in the engine's module or nn.py)"))
            return
        reply = self.ask({"do": "network_gradients"})
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
        if reply["distinct"] < n:
            text = f"parameters() lists {n - reply['distinct']} Value(s) twice"
            self.add(Row(name, FAIL, text))
        elif all(pair[0] == 0.0 for pair in differences):
            text = (
                "changing the Values parameters() returns does not change the network's "
                "output: does parameters() return the Values the forward uses (not copies)?"
            )
            self.add(Row(name, FAIL, text))
        elif not wrong:
            text = (
                f"all {n} parameter gradients of MLP(3, [4, 4, 1]) match central differences "
                "of its own forward to 1e-6"
            )
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
            self.add(Row(name, FAIL, text + self._root_cause()))

    def check_training(self) -> None:
        name = "network trains"
        if not self.has_mlp:
            self.add(Row(name, ABSENT, "no MLP found: the gate asks for one that trains"))
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
            "epochs": 20,
            "target": 0.9,
        }
        reply = self.ask(request, self.train_timeout)
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, _failure_text(reply, "training MLP(2, [8, 8, 1])")))
            return
        history = reply["history"]
        (loss0, _), (loss1, accuracy) = history[0], history[-1]
        epochs = len(history) - 1
        text = (
            f"MLP(2, [8, 8, 1]) on make_moons (100 points), SGD lr 0.1, batches of 10: loss "
            f"{loss0:.3f} -> {loss1:.3f} in {epochs} epoch(s), accuracy {accuracy:.0%}"
        )
        ok = loss1 < loss0 and accuracy >= 0.9
        if loss1 == loss0:
            text += "; the loss did not move at all: the SGD updates do not reach the network"
        elif not ok:
            text += "; the gate needs the loss to fall and at least 90% accuracy"
        self.add(Row(name, PASS if ok else FAIL, text + ("" if ok else self._root_cause())))


# ---------------------------------------------------------------------- words


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
