"""The tensor op checks, mixed into ``tensor_grader.TensorChecks``: each op over its table
of shapes, with its classic bugs named from the pattern of the table (which shapes fail, and
how) or from a formula for the wrong gradient; numbers on either side of a Tensor; a
nonlinearity; a tensor used twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..report import ABSENT, FAIL, PASS, Row
from ..words import (
    array_text,
    error_text,
    failure_text,
    is_absent,
    look_at,
    overwritten_text,
    shapes_text,
)
from .base import SAME_CAUSE, TensorBase
from .cases import (
    COVERS,
    METHOD,
    NUMBER_FORMS,
    REUSE_BASIC,
    SYMBOL,
    Case,
    OpSpec,
    array_json,
    composite_programs,
    fill_args,
    make_program,
    reduced_shape,
    reuse_programs,
    softmax_array,
    twice_program,
)
from .oracle import agree, array_of
from .programs import OPS, Program, input_names


def _symbol(op: str) -> str:
    """How an op is written: ``+`` for add, ``exp`` for exp."""
    return SYMBOL.get(op, op)


#: Why an op is wrong only where its inputs are near 1000.
_LARGE = (
    "on inputs near 1000: exp(1000) is inf, so subtract the max along the axis before exp, as "
    "torch does (the result is the same)"
)


class TensorOpChecks(TensorBase):
    """The op rows of the report."""

    def check_op(self, spec: OpSpec) -> None:
        torch = self.g.oracle.name == "torch"  # differences cannot see relu's kink at 0
        cases = [c for c in spec.cases() if c.kind not in ("zeros", "large") or torch]
        results = self.results([c.program for c in cases])
        name = spec.label
        if isinstance(results, dict):
            self.status[spec.op] = FAIL
            self.g.add(Row(name, FAIL, failure_text(results, spec.label)))
            return
        wrong: list[tuple[Case, dict[str, Any]]] = []
        skipped = 0
        for case, result in zip(cases, results):
            if case.kind == "axes" and _two_axes_only(result):  # torch's transpose(d0, d1)
                skipped += 1
                continue
            if "error" in result and is_absent(result, spec.op, ("cross_entropy",)):
                status = FAIL if spec.required else ABSENT
                method = METHOD.get(spec.op, spec.op)
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
                    f"the forward is wrong for {shapes_text(case.program)}: got shape "
                    f"{got.shape}, expected {out.shape}"
                    if got.shape != out.shape
                    else f"the forward is wrong for {shapes_text(case.program)}"
                )
                if case.kind == "large" and got.shape == out.shape:
                    text += f" {_LARGE} (got {array_text(got)})"
                self.g.add(Row(name, FAIL, text, self.code(case.program)))
                return
            written = self.written_text(case.program, result)
            if written:
                self.status[spec.op] = FAIL
                self.g.add(Row(name, FAIL, written, self.data_code(case.program, result)))
                return
            shared = self.shared_text(case.program, result)
            if shared:
                self.status[spec.op] = FAIL
                self.g.add(Row(name, FAIL, shared + look_at(result), self.code(case.program)))
                return
            if not self.right(case.program, result):
                wrong.append((case, result))
        if not wrong:
            self.status[spec.op] = PASS
            shapes = sum(c.kind != "zeros" for c in cases) - skipped  # relu's zeros: an input
            text = f"out and grads match on {shapes} shapes"
            self.g.add(Row(name, PASS, text + COVERS.get(spec.op, "")))
            return
        self.status[spec.op] = FAIL
        text, program = self.diagnose(spec, cases, wrong)
        if spec.op in ("mul", "sum") and wrong[0][0] is cases[0]:
            self.loss_ops_wrong.append(spec.label)  # the loss's own op, on its basic case
        helper = self.broadcast_helper.get(spec.op, "") or self.helper_of_batch(spec, wrong)
        first = self.broadcast_first.setdefault(helper, spec.label) if helper else spec.label
        if first != spec.label:  # one block per cause: the helper's, shown once
            self.g.add(Row(name, FAIL, f"{SAME_CAUSE}'{first}' above, in {helper}"))
        else:
            self.g.add(Row(name, FAIL, text, self.code(program)))

    def helper_of_batch(self, spec: OpSpec, wrong: list[tuple[Case, dict[str, Any]]]) -> str:
        """The helper a broadcast op's row blamed above, when @ fails only where b is
        used by every matrix of a batch and its rule calls that helper too ('' if not)."""
        if spec.op != "matmul" or any(c.kind != "batch-broadcast" for c, _ in wrong):
            return ""
        helper = (wrong[0][1].get("helpers") or [""])[0]
        return helper if helper in self.broadcast_first else ""

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
        if all(c.kind == "large" for c, _ in wrong):
            named = (f"{spec.op}'s backward is wrong {_LARGE}{look_at(result)}", case.program)
        elif spec.op in SYMBOL and spec.op != "matmul":
            named = self.broadcast_bug(spec, cases, wrong)
        elif spec.op == "matmul":
            named = self.matmul_bug(wrong)
        elif spec.op in ("sum", "mean"):
            named = self.reduction_bug(spec, wrong)
        elif spec.op == "cross_entropy":
            named = self.cross_entropy_bug(wrong)
        elif spec.op == "transpose" and all(c.kind == "axes" for c, _ in wrong):
            named = (
                "transpose's backward must undo the order: np.transpose(out.grad, "
                "np.argsort(axes)), not the same axes again (the two agree in 2-D, not for "
                f"transpose(1, 2, 0)){look_at(result)}",
                case.program,
            )
        if named is None:
            named = self.formula_bug(spec, wrong)
        if named is None:
            named = self.upstream_bug(wrong)
        if named is None:
            return self.generic(case, result), case.program
        text, program = named
        raised = next((r["error"] for c, r in wrong if c.program is program and "error" in r), None)
        if raised is not None and "raised" not in text:  # the pattern named; say what it did
            text += f"; there the backward raised {error_text(raised)}"
        return text, program

    def generic(self, case: Case, result: dict[str, Any]) -> str:
        program = case.program
        expression = OPS[program["steps"][0][0]].template.format(x="a", y="b", **fill_args(program))
        where = look_at(result)
        if "error" in result:
            return f"{expression} with {shapes_text(program)}: the backward raised " + (
                f"{error_text(result['error'])}"
            )
        _, grads = self.want(program)
        parts = []
        for n, got, want in zip(input_names(program), result["grads"], grads):
            got = array_of(got)
            if got.shape != want.shape:
                parts.append(f"{n}.grad has shape {got.shape}, {n} has {want.shape}")
            elif not agree(got, want):
                parts.append(f"{n}.grad is {array_text(got)}, expected {array_text(want)}")
        return f"{expression} with {shapes_text(program)}: " + "; ".join(parts) + where

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
        symbol = SYMBOL[spec.op]
        helper = (result.get("helpers") or [""])[0]
        if helper:  # the rule calls a helper of the learner's to reduce the gradient
            self.broadcast_helper[spec.op] = helper
        a, b = (tuple(x["shape"]) for x in case.program["inputs"])
        out = tuple(np.broadcast_shapes(a, b))
        small = a if a != out else b
        how = self._shape_trouble(case.program, result)
        failing = [c for c, _ in wrong]
        stretched_only = all(c.stretched and not c.leading for c in failing)
        added = {id(c): _added_axes(c.program) for c in cases}
        if all(added[id(c)] >= 2 for c in failing) and any(
            added[id(c)] == 1 and c not in failing for c in cases
        ):
            text = (
                f"only one of the axes broadcasting added on the left was summed away: in {a} "
                f"{symbol} {b}, the {small} input gained {len(out) - len(small)} axes, and its "
                "gradient is out.grad summed over every one of them (while, not if); one added "
                f"axis passes; {how}"
            )
        elif stretched_only and any(c.stretched and c not in failing for c in cases):
            # (1, 3)'s gradient summed to (3,) still adds into (1, 3); (2, 1)'s, as (2,), not
            text = (
                f"the axes of size 1 were summed without keepdims=True, which drops them: in "
                f"{a} {symbol} {b}, the {small} input was stretched to {out}, so its gradient "
                f"is out.grad.sum(axis, keepdims=True) over those axes, shape {small}; {how}"
            )
        elif stretched_only:
            text = (
                f"the gradient was summed over the axes broadcasting added on the left, but "
                f"not over the axes of size 1 it stretched: in {a} {symbol} {b}, the {small} "
                f"input was stretched to {out}, so its gradient is out.grad summed over those "
                f"axes with keepdims=True; {how}"
            )
        else:
            what = "the gradient was not summed back"
            if helper:
                what = f"{helper.split(' (')[0]} does not return out.grad summed"
            text = (
                f"{what} over the broadcast dimensions: in {a} "
                f"{symbol} {b}, the {small} input was broadcast to {out}, so its gradient is "
                f"out.grad summed back to {small} (over the axes added on the left, and over "
                f"the axes of size 1, keepdims=True); {how}"
            )
        if helper:
            look = f" (look at {helper}, the helper summing it back)"
            return text + look, case.program
        return text + look_at(result), case.program

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
                return text + look_at(r), first.program
            return None
        if kinds <= {"1-D"} and len(wrong) == 1:  # one 1-D case, the others right
            text = (
                f"only {self._shapes(wrong)} is wrong, the other 1-D cases pass: for a 1-D a, "
                "d/da = out.grad @ b.T and d/db = np.outer(a, out.grad); for a 1-D b, d/da = "
                "np.outer(out.grad, b) and d/db = a.T @ out.grad"
            )
            if all(len(x["shape"]) == 1 for x in case.program["inputs"]):
                text = (
                    f"only {self._shapes(wrong)} is wrong, the other 1-D cases pass: two 1-D "
                    "operands make a number, out.grad has shape (), so d/da = out.grad * b "
                    "and d/db = out.grad * a"
                )
            return text + look_at(result), case.program
        if kinds <= {"1-D"}:
            text = (
                "the 2-D rule does not cover a 1-D operand: a 1-D a is a row (1, k) and a 1-D "
                "b a column (k, 1); compute with those, then drop the added axis from the "
                f"gradient again (failing: {self._shapes(wrong)})"
            )
            return text + look_at(result), case.program
        if kinds <= {"batch-broadcast"}:
            a, b = (tuple(x["shape"]) for x in case.program["inputs"])
            text = (
                f"in {a} @ {b}, b was used by every matrix of the batch: its gradient is "
                f"a.T @ out.grad summed over the batch axes (unbroadcast to {b})"
            )
            return text + look_at(result), case.program
        if kinds <= {"batch", "batch-broadcast"}:
            text = (
                "batched @: the rule must transpose the last two axes only, "
                "np.swapaxes(x, -1, -2); .T reverses every axis of a 3-D array "
                f"(failing: {self._shapes(wrong)})"
            )
            return text + look_at(result), case.program
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
            kept = list(reduced_shape(shape, step[2], True))
            gone = list(reduced_shape(shape, step[2], False))
            text = (
                f"{spec.op}'s backward does not put the reduced axis back: with axis="
                f"{step[2]} and keepdims=False, out.grad has shape {tuple(gone)} and must "
                f"become {tuple(kept)} (np.expand_dims(out.grad, axis)) before it spreads "
                f"over the input's {shape}"
            )
            return text + look_at(result), case.program
        if spec.op == "mean":
            ratios = []
            for c, r in wrong:
                if "error" in r:
                    return None
                shape = tuple(c.program["inputs"][0]["shape"])
                averaged = int(np.prod(shape)) // int(
                    np.prod(reduced_shape(shape, c.program["steps"][0][2], False))
                )
                got, want = array_of(r["grads"][0]), self.want(c.program)[1][0]
                ratios.append((got, want, averaged, int(np.prod(shape))))
            if all(agree(got, want * n) for got, want, n, _ in ratios):
                n = ratios[0][2]
                text = (
                    f"mean's backward is missing the 1/n: each input element gets out.grad / n, "
                    f"n the number of elements averaged (here {n})"
                )
                return text + look_at(result), case.program
            if all(agree(got, want * n / size) for got, want, n, size in ratios) and all(
                c.program["steps"][0][2] == 0 for c, _ in wrong
            ):  # axis 1 and -1 right
                text = (
                    "mean's backward treats axis=0 as no axis (it divides by every element): "
                    "0 is falsy, so `if axis` and `axis or ...` take it for None; test "
                    "`axis is None`"
                )
                return text + look_at(result), case.program
            if all(agree(got, want * n / size) for got, want, n, size in ratios):
                text = (
                    "mean's backward divides by every element of the input, not by the n "
                    "averaged into each output: n = self.data.size // out.data.size"
                )
                return text + look_at(result), case.program
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
                predicted = bug(softmax_array(logits, 1), onehot, len(targets), c)
                matched = matched and agree(array_of(result["grads"][0]), predicted)
            if matched:
                case, result = wrong[0]
                return words + look_at(result), case.program
        return None

    def formula_bug(
        self, spec: OpSpec, wrong: list[tuple[Case, dict[str, Any]]]
    ) -> tuple[str, Program] | None:
        for words, bug in spec.bugs:
            if all(self._matches(bug, c.program, r) for c, r in wrong):
                case, result = wrong[0]
                return words + look_at(result), case.program
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
            ones = {**case.program, "weight": array_json(np.ones(case.program["weight"]["shape"]))}
            if not self.right(ones, result):
                return None
        case, result = wrong[0]
        text = (
            "the backward ignores out.grad: multiply the local derivative by out.grad "
            "(the chain rule)"
        )
        return text + look_at(result), case.program

    def check_numbers(self) -> None:
        programs = [
            make_program(100 + i, [(2, 3)], [[op, 0, 2.0]])
            for i, (op, _, _) in enumerate(NUMBER_FORMS)
        ]
        results = self.results(programs)
        name = "numbers with Tensors"
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, failure_text(results, "a + 2")))
            return
        for (op, example, fix), program, result in zip(NUMBER_FORMS, programs, results):
            if "error" in result and result["stage"] == "forward":
                words = f"{example} raised {error_text(result['error'])}: {fix}"
                self.g.add(Row(name, FAIL, words, self.code(program)))
                return
            if "error" in result:
                text = self.failed_text(result, f"{example}'s {result['stage']}", program)
                code = [] if self._ops_cause(text) else self.code(program)  # the cause's
                self.g.add(Row(name, FAIL, text, code))
                return
            out, _ = self.want(program)
            if not agree(array_of(result["out"]), out):
                text = f"{example} gives the wrong values"
                if op in ("rsub", "rdiv"):
                    text += f": are the operands swapped? {fix}"
                self.g.add(Row(name, FAIL, text, self.code(program)))
                return
            if not self.right(program, result):
                text = f"{example}: a.grad is wrong" + (self._cause() or look_at(result, -1))
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
        """A tensor used twice receives the sum of both paths' gradients, through every op
        that passes on its own."""
        passing = {op for op, status in self.status.items() if status == PASS}
        cases = reuse_programs(passing)
        name = "reuse"
        if not cases:
            self.g.add(Row(name, FAIL, "not run: neither + nor * passes on its own yet"))
            return
        results = self.results([p for _, p in cases])
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, failure_text(results, "a * a")))
            return
        overwritten, first = [], None
        for (op, program), result in zip(cases, results):
            if "error" in result:
                self.g.add(Row(name, FAIL, self.result_text(program, result), self.code(program)))
                return
            changed = self.changed_text(program, result, op)
            if changed:
                self.g.add(Row(name, FAIL, changed, self.code(program)))
                return
            if not self.right(program, result):
                overwritten.append(op)
                first = first or (program, result)
        if not overwritten:
            text = f"a tensor used twice adds up, through {len(cases)} ops (a + a, a.T @ a, ...)"
            self.g.add(Row(name, PASS, text))
            return
        if "add" in overwritten:  # every program goes through +: its = is the cause
            overwritten = ["add"]
        text = overwritten_text(overwritten, REUSE_BASIC, _symbol, "tensor")
        program, result = first
        look = self._cause() or look_at(result, 0)  # step 0 is the op the row is for
        self.g.add(Row(name, FAIL, text + look, self.code(program)))

    def changed_text(self, program: Program, result: dict[str, Any], op: str = "") -> str:
        """Words for a program of ops that are right alone whose output is wrong: ``op``
        (or one of them) changed an input's data in place ('' when the output is right)."""
        out, _ = self.want(program)
        if agree(array_of(result["out"]), out):
            return ""
        shown = " then ".join(_symbol(step[0]) for step in program["steps"])
        who = f"{_symbol(op)}'s forward" if op else "an op"
        return (
            f"the output of {shown} is wrong with a tensor used twice, though each op's is "
            f"right alone: {who} changed its input's data in place (np.maximum(x, 0, "
            "out=x), x.data += ...), so the input's other use saw the changed numbers. "
            "Compute the output into a new array"
        )

    def check_twice(self) -> None:
        """Two backward() calls on two graphs from the same leaves add, as torch's leaves do."""
        name = "second backward"
        if self.status.get("mul") != PASS:
            self.g.add(Row(name, ABSENT, "not run: a * b does not pass on its own yet"))
            return
        program = twice_program()
        result = self.one_result(name, program, "a second backward()")
        if result is None:
            return
        if "error" in result:
            self.g.add(Row(name, FAIL, self.result_text(program, result), self.code(program)))
            return
        if self.right(program, result):
            text = "backward() of a new graph adds into the leaves' grads (torch's do)"
            self.g.add(Row(name, PASS, text))
            return
        _, once = self.want({k: v for k, v in program.items() if k != "repeat"})
        if self.g.failed("reuse"):  # a rule that assigns (=) replaces on the second graph too
            text = "two backward() calls on new graphs from the same leaves: a.grad is wrong"
            self.g.add(Row(name, FAIL, text + " (probably because of 'reuse' above)"))
            return
        if all(agree(array_of(got), g) for got, g in zip(result["grads"], once)):
            text = (
                "a second backward() on a new graph from the same leaves replaced their "
                "gradients: torch's leaves add across separate graphs (a.grad is the sum of "
                "both), so backward() must set only the output's seed and never reset another "
                "tensor's grad; zero_grad() is where a training step starts fresh"
            )
        else:
            text = "two backward() calls on new graphs from the same leaves: a.grad is wrong"
            text += look_at(result)
        self.g.add(Row(name, FAIL, text, self.code(program)))

    def check_composites(self) -> None:
        """Random expressions of 3-6 ops that pass on their own, compared with the oracle."""
        name = "random expressions"
        passing = {op for op, status in self.status.items() if status == PASS}
        chosen = [program for ops, program in composite_programs() if ops <= passing]
        if not chosen:
            self.g.add(Row(name, ABSENT, "not run: their ops do not pass on their own yet"))
            return
        results = self.results(chosen)
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, failure_text(results, "a random expression")))
            return
        wrong = [
            (p, r)
            for p, r in zip(chosen, results)
            if "error" in r or r.get("shared") or r.get("written") or not self.right(p, r)
        ]
        if not wrong:
            text = f"{len(chosen)} seeded expressions of 3-6 ops over the shapes match"
            self.g.add(Row(name, PASS, text))
            return
        program, result = min(wrong, key=lambda w: len(w[0]["steps"]))
        earlier = [n for n in ("reuse", "second backward", "order") if self.g.failed(n)]
        if earlier:
            text = f"{len(wrong)} of {len(chosen)} seeded expressions give wrong gradients"
            because = " and ".join(repr(n) for n in earlier)
            self.g.add(Row(name, FAIL, f"{text} (probably because of {because} above)"))
            return
        if "error" in result:
            text = self.result_text(program, result)
        else:
            text = (
                self.written_text(program, result)
                or self.changed_text(program, result)
                or self.shared_text(program, result)
                or (
                    f"{len(wrong)} of {len(chosen)} seeded expressions of ops that pass on their "
                    "own give wrong gradients: the rules are right alone but not together (a rule "
                    "that writes into out.grad or another tensor's array in place?)"
                )
            )
        self.g.add(Row(name, FAIL, text, self.code(program)))


def _two_axes_only(result: dict[str, Any]) -> bool:
    """transpose(1, 2, 0) raised TypeError: the engine's transpose swaps two axes, as
    torch's does (so no order of three axes to check)."""
    error = result.get("error")
    return result.get("stage") == "forward" and error is not None and error["type"] == "TypeError"


def _added_axes(program: Program) -> int:
    """How many axes broadcasting adds on the left of the smaller input of a binary op."""
    shapes = [tuple(x["shape"]) for x in program["inputs"]]
    return len(np.broadcast_shapes(*shapes)) - min(len(shape) for shape in shapes)
