"""The op checks, mixed into ``grader.Grader``: each op on its own and fed into another,
with its classic bugs named from the learner's numbers; numbers on either side of a
Value; a nonlinearity; a value used twice; random expressions of every op that exists.
"""

from __future__ import annotations

from typing import Any

from ..base import GraderBase
from ..report import ABSENT, FAIL, PASS, Row
from ..words import (
    BECAUSE,
    bug_matches,
    error_text,
    failure_text,
    inputs_text,
    is_absent,
    multiple_of,
    op_label,
    op_words,
    overwritten_text,
    result_error,
    swapped_result,
)
from .cases import (
    DUNDERS,
    METHODS,
    NUMBER_FORMS,
    OP_CHECKS,
    RANDOM_PROGRAMS,
    RULE_STARTS,
    UPSTREAM,
    OpCheck,
    single_op,
)
from .oracle import close
from .programs import NONLINEARITIES, Program, input_names, random_programs


class OpChecks(GraderBase):
    """The op rows of the report."""

    def check_op(self, check: OpCheck) -> None:
        points = check.points
        if not self.oracle.exact_at_kinks:  # differences see 0.5 at relu's kink, torch 0
            points = [p for p in points if not (check.op == "relu" and p[0] == 0.0)]
        programs = [single_op(check.op, point) for point in points]
        chained = single_op(check.op, points[0])  # the chain rule: upstream gradient 3, not 1
        chained["steps"].append(["mul_c", len(chained["inputs"]), UPSTREAM])
        programs.append(chained)
        results = self.run_programs(programs)
        name = check.label
        if isinstance(results, dict):
            self.status[check.op] = FAIL
            self.add(Row(name, FAIL, failure_text(results, check.label)))
            return
        for result in results:
            if "error" in result and is_absent(result, METHODS.get(check.op, check.op)):
                status = FAIL if check.required else ABSENT
                text = f"not defined: define {DUNDERS.get(check.op) or check.op}"
                if not check.required:
                    text = "not defined (optional)"
                self.status[check.op] = status
                self.add(Row(name, status, text))
                return
        diagnosis, program = self._op_diagnosis(check, programs, results)
        lines: list[str] = []
        if not diagnosis:
            diagnosis, lines = self._rule_diagnosis(check, programs[0])
        self.status[check.op] = FAIL if diagnosis else PASS
        if diagnosis.startswith(BECAUSE):
            self.because(name, diagnosis.removeprefix(BECAUSE))
        elif diagnosis:
            self.add(Row(name, FAIL, diagnosis, lines or self.code(program)))
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
        basis = [op for op in check.built_on if self.status.get(op) == FAIL]
        for program, result in zip(programs, results):
            if "error" in result and basis:  # a / b raising in the ** it is built from
                return BECAUSE + self.causes.get(op_label(basis[0]), op_label(basis[0])), program
            chained = program is programs[-1] and check.op != "mul"  # times 3: through *
            if "error" in result and chained and self.status.get("mul") == FAIL:
                return BECAUSE + self.causes.get("a * b", "a * b"), program
            if "error" in result:
                return result_error(result, self.oracle, program), program
            out, grads = self.oracle.evaluate(program)
            if not close(result["out"], out):
                return (
                    f"the forward is wrong: {inputs_text(program)} gives {result['out']!r}, "
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
        generic = f"wrong gradient at {inputs_text(program)}: got {got}, expected {want}"
        cause = self.root_cause()
        if cause:
            return BECAUSE + cause, program
        if basis:
            return BECAUSE + self.causes.get(op_label(basis[0]), op_label(basis[0])), program
        alone = [(p, r) for p, r, _ in wrong if len(p["steps"]) == 1]
        k = multiple_of([(r["grads"], w) for _, r, w in wrong]) if len(wrong) == len(results) else 0
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
            if all(bug_matches(bug, p, r) for p, r in alone):
                return words, alone[0][0]
        flipped = [(p, r, w) for p, r, w in wrong if len(p["steps"]) == 1]
        if all(close(g, -x) for _, r, w in flipped for g, x in zip(r["grads"], w)):
            rule = self.where_rule(flipped[0][0])
            return (
                f"the sign is flipped: {generic.removeprefix('wrong gradient ')}: each input's "
                "grad gains its local derivative times out.grad (+=, not -=; is a minus in the "
                "derivative?)" + (f"; look at {rule}" if rule else ""),
                flipped[0][0],
            )
        return generic, program

    def _rule_diagnosis(self, check: OpCheck, program: Program) -> tuple[str, list[str]]:
        """The op's rule called alone, with out.grad = UPSTREAM and its inputs' grads
        starting at RULE_STARTS: each must gain its local derivative times out.grad and
        nothing else ("" when it does, or when the rule cannot be called so: an op built
        from others, a rule taking arguments). A rule that replaces the grads (=) is left
        to 'reuse', which names it."""
        n = len(program["inputs"])
        starts = RULE_STARTS[:n]
        reply = self.ask({"do": "rule", "program": program, "upstream": UPSTREAM, "starts": starts})
        if "failure" in reply or "error" in reply or not reply["ran"]:
            return "", []
        _, local = self.oracle.evaluate(program)
        want = [s + UPSTREAM * g for s, g in zip(starts, local)]
        got = reply["grads"]
        if all(close(g, w) for g, w in zip(got, want)):
            return "", []
        if all(close(g, UPSTREAM * d) for g, d in zip(got, local)):
            return "", []  # = where += belongs: the reuse row names it
        names = input_names(program)
        shown = ", ".join(f"{x}.grad {s:g}" for x, s in zip(names, starts))
        text = (
            f"{check.label}'s rule called alone, with out.grad = {UPSTREAM:g} and {shown} "
            f"before it, left {', '.join(f'{g:.6g}' for g in got)}, expected "
            f"{', '.join(f'{w:.6g}' for w in want)}: "
        )
        if all(close(g, s + d) for g, s, d in zip(got, starts, local)):
            text += "the backward ignores out.grad: multiply the local derivative by out.grad"
        elif n == 2 and close(got[0], want[0]) and close(got[1], starts[1] + got[0]):
            text += (
                f"{names[1]}.grad received {names[0]}.grad (after its update), not its own share "
                "of out.grad: other.grad += (local derivative) * out.grad, not self.grad. It is "
                f"right only while {names[0]}.grad is 0 when the rule runs"
            )
        else:
            text += "each input's grad must gain its local derivative times out.grad, nothing else"
        rule = self.where_rule(program)
        built = self.code(program)
        lines = built[: built.index("out.backward()")]
        grads = ", ".join(f"{x}.grad" for x in names)
        lines.append(f"{grads}, out.grad = {', '.join(map(repr, [*starts, UPSTREAM]))}")
        lines.append("out._backward()  # the rule alone")
        expected = " ".join(f"{w:.10g}" for w in want)
        lines.append(f"print({grads})  # expected: {expected}")
        return text + (f"; look at {rule}" if rule else ""), lines

    def check_numbers(self) -> None:
        """a + 2, 2 * a, 1 - a, ...: plain numbers on either side of a Value."""
        programs = [single_op(op, [1.5, 2.0]) for op, _, _ in NUMBER_FORMS]
        results = self.run_programs(programs)
        name = "numbers with Values"
        if isinstance(results, dict):
            self.add(Row(name, FAIL, failure_text(results, "a + 2")))
            return
        for (op, example, fix), program, result in zip(NUMBER_FORMS, programs, results):
            if "error" in result and result["error"]["type"] == "NotAValue":
                self.add(Row(name, FAIL, result_error(result), self.code(program)))
                return
            if "error" in result and result["stage"] == "forward":
                words = f"{example} raised {error_text(result['error'])}: {fix}"
                self.add(Row(name, FAIL, words, self.code(program)))
                return
            if "error" in result:
                self.add(Row(name, FAIL, result_error(result), self.code(program)))
                return
            out, grads = self.oracle.evaluate(program)
            if not close(result["out"], out):
                text = f"{example} gives {result['out']!r} at a = 1.5, expected {out!r}"
                if op in ("rsub", "rdiv") and close(result["out"], swapped_result(op, 1.5, 2.0)):
                    text += f": the operands are swapped; {fix}"
                self.add(Row(name, FAIL, text, self.code(program)))
                return
            if not close(result["grads"][0], grads[0]):
                basic = [op for op in DUNDERS if self.status.get(op) == FAIL]
                if self.root_cause() or basic:
                    cause = self.root_cause() or op_label(basic[0])
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
            self.because(name, op_label(failing))
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
                    first = single_op(check.op, check.points[-1])
                    first["steps"].append(["add", 1, 0])
                    cases.append((check.op, first))
        name = "reuse"
        if not cases:
            basic = [op for op in ("add", "mul") if self.status.get(op) == FAIL]
            if basic:
                self.because(name, self.root_cause() or op_label(basic[0]))
            else:
                self.add(
                    Row(
                        name,
                        FAIL,
                        "not run: no binary op (+ * - /) passes on its own yet",
                    )
                )
            return
        results = self.run_programs([p for _, p in cases])
        if isinstance(results, dict):
            self.add(Row(name, FAIL, failure_text(results, "a * a")))
            return
        overwritten, multiples, first_wrong = [], [], None
        for (op, program), result in zip(cases, results):
            if "error" in result:
                self.add(Row(name, FAIL, result_error(result), self.code(program)))
                return
            _, grads = self.oracle.evaluate(program)
            if not close(result["grads"][0], grads[0]):
                k = multiple_of([(result["grads"], grads)])
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
                f"counted {k} times: a value used twice in {op_words(op)} gets {k} times the "
                f"right gradient ({grads[0] * k:g} for {grads[0]:g}): the rule adds the same "
                "path twice when both inputs are one Value; the walk already calls it once"
                + (f"; look at {rule}" if rule else "")
            )
            self.add(Row(name, FAIL, text, self.code(program)))
        elif first_wrong is not None:
            ops = [op for op, _ in overwritten + multiples]
            text = overwritten_text(ops, ("add", "mul"), op_words, "value")
            self.add(Row(name, FAIL, text, self.code(first_wrong)))
        else:
            shown = " ".join(op_words(op).replace(" ", "") for op, _ in cases)
            self.add(Row(name, PASS, f"a value used twice adds up ({shown})"))

    def check_random(self) -> None:
        ops = [op for op, status in self.status.items() if status in (PASS, FAIL)]
        ops += [op for op, _, _ in NUMBER_FORMS if not self.failed("numbers with Values")]
        name = "random expressions"
        programs = random_programs(ops, RANDOM_PROGRAMS, seed=0)
        results = self.run_programs(programs)
        if isinstance(results, dict):
            self.add(Row(name, FAIL, failure_text(results, "random expressions")))
            return
        wrong = []
        for program, result in zip(programs, results):
            if "error" in result and result["error"]["type"] == "NotImplementedError":
                self.add(Row(name, FAIL, result_error(result)))
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
