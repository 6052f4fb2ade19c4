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

This module holds the run and the engine's basic checks (its parts, the seed, the walk's
order); the op checks are in ``tensor_ops``, the network checks in ``tensor_network``, what
they ask in ``tensor_cases``, their words in ``words``, the plumbing in ``tensor_base``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import MAX_HANGS
from ..report import FAIL, NOTE, PASS, Row
from ..words import EARLY_ORDER, NO_GRADIENT_ORDER, array_text, failure_text, look_at
from .cases import OP_SPECS, make_program
from .network import TensorNetworkChecks
from .ops import TensorOpChecks
from .oracle import agree, array_of
from .programs import to_code

if TYPE_CHECKING:
    from ..base import GraderBase as Grader

NARROW = {"float32": 7, "float16": 3}  # dtypes narrower than float64: their significant digits


def _narrow_text(dtype: str) -> str:
    """Words for an engine keeping its arrays in ``dtype`` (float32)."""
    return (
        f"Tensor(x).data is {dtype} for a float64 x: {dtype} keeps about {NARROW[dtype]} "
        f"significant digits, so the engine's numbers agree with PyTorch's float64 to about "
        f"1e-{NARROW[dtype]} at best, and central differences of its own forward (the network "
        "checks use them) are noise. Keep float64: np.array(data, dtype=float)"
    )


def run_tensor_checks(grader: Grader) -> None:
    """Every tensor check, in order, into ``grader``'s report (a failing one names its
    passing rows only: there are many, and their words are long)."""
    grader.report.terse = True
    TensorChecks(grader).run()


class TensorChecks(TensorOpChecks, TensorNetworkChecks):
    """Runs every tensor check against one engine, into the scalar grader's report."""

    def run(self) -> None:
        ops = [lambda spec=spec: self.check_op(spec) for spec in OP_SPECS]
        for check in (
            self.check_parts,
            self.check_seed,
            *ops,
            self.check_numbers,
            self.check_nonlinearity,
            self.check_reuse,
            self.check_twice,
            self.check_order,
            self.check_composites,
            self.check_network_gradients,
            self.check_affine,
            self.check_training,
        ):
            if self.g.hangs >= MAX_HANGS:
                text = f"not run: the engine hung {MAX_HANGS} times; fix that first"
                self.g.add(Row("the other checks", FAIL, text))
                return
            check()

    # ------------------------------------------------------------------ the rows
    def check_parts(self) -> None:
        reply = self.g.ask({"do": "tensor_parts"})
        name = f"{self.g.target.class_name}'s parts"
        if "failure" in reply or "error" in reply:
            self.g.add(Row(name, FAIL, failure_text(reply, "a new tensor of a (2, 3) array")))
            return
        problems = []
        data = array_of(reply["data"])
        if not agree(data, np.arange(6.0).reshape(2, 3)):
            problems.append(f"Tensor(x).data has shape {data.shape}, not x's (2, 3)")
        grad = reply["grad"]
        if grad is not None and not agree(array_of(grad), np.zeros((2, 3))):
            problems.append(
                f"a new Tensor's grad is {array_text(array_of(grad))}: it must be zeros "
                "of data's shape (np.zeros_like(self.data))"
            )
        if not reply["has_backward_method"]:
            problems.append("there is no backward() method")
        dtype = reply.get("dtypes", ["", ""])[0]
        if dtype in NARROW:
            self.narrow = dtype
            problems.append(_narrow_text(dtype))
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
        program = make_program(1, [(2, 3)], [["sum", 0, None, False]], weighted=False)
        name = "seed"
        result = self.one_result(name, program, "a.sum().backward()")
        if result is None:
            return
        if "error" in result:
            self.g.add(Row(name, FAIL, self.result_text(program, result), self.code(program)))
            return
        seed = array_of(result["loss_grad"])
        if not agree(seed, np.ones(seed.shape)) or seed.size != 1:
            text = (
                f"after out.backward(), out.grad is {array_text(seed)}: backward() must seed "
                "ones of the output's shape (np.ones_like(self.data)) before walking"
            )
            self.g.add(Row(name, FAIL, text, self.code(program)))
        elif not self.right(program, result):
            text = "the seed is 1, but a.sum()'s gradient is not ones of a's shape" + look_at(
                result
            )
            self.g.add(Row(name, FAIL, text, self.code(program)))
        elif text := self._wide_seed_text():
            program = make_program(2, [(2, 3)], [["sum", 0, 0, False]], weighted=False)
            lines = to_code(
                program, self.g.target.import_lines, False, {}, self.g.target.class_name
            )
            lines = lines[: lines.index("out.backward()") + 1]
            lines.append("print(out.grad)  # expected: [1. 1. 1.], ones of out's shape (3,)")
            self.g.add(Row(name, FAIL, text, lines))
        else:
            self.g.add(Row(name, PASS, "backward() seeds the output's gradient with ones"))
            self._note_grad_dtype(result)

    def _wide_seed_text(self) -> str:
        """Words for a seed that is not ones of the output's shape on an output of shape
        (3,), a.sum(0).backward() ('' when it is, or backward() refuses such an output
        before seeding, as torch's does without a gradient)."""
        program = make_program(2, [(2, 3)], [["sum", 0, 0, False]], weighted=False)
        results = self.results([program])
        if isinstance(results, dict) or "loss_grad" not in results[0]:
            return ""
        seed = array_of(results[0]["loss_grad"])
        if agree(seed, np.ones(3)) or (seed.shape == (3,) and not np.any(seed)):
            return ""
        shown = f"{float(seed):g}" if seed.ndim == 0 else array_text(seed)
        return (
            f"out = a.sum(0) has shape (3,), and after out.backward() out.grad is "
            f"{shown}: backward() seeds the number 1.0 (self.grad = 1.0), right for a "
            "loss of one number only. The seed is ones of the output's shape: self.grad = "
            "np.ones_like(self.data)"
        )

    def _note_grad_dtype(self, result: dict[str, Any]) -> None:
        """A note when the gradients are kept narrower than the data (float32 grads)."""
        data, grad = result.get("dtypes", ["", ""])
        if grad in NARROW and data not in NARROW:
            text = (
                f"a.grad is a {grad} array (a.data {data}): {grad} keeps about "
                f"{NARROW[grad]} significant digits, so the gradients agree with PyTorch's "
                f"float64 to about 1e-{NARROW[grad]} only; inside the gate's 1e-6 here, but keep "
                "them float64, as the data: np.zeros_like(self.data)"
            )
            self.g.add(Row("gradient dtype", NOTE, text))

    def check_order(self) -> None:
        """L = sum(W * (c + (c * 3) * 2)) with c = a * b: c has a near user and a far
        one, so a walk that is not reverse-topological gives c's rule too little."""
        program = make_program(
            120,
            [(2, 3), (2, 3)],
            [["mul", 0, 1], ["mul_c", 2, 3.0], ["mul_c", 3, 2.0], ["add", 2, 4]],
        )
        name = "order"
        result = self.one_result(name, program, "a diamond graph")
        if result is None:
            return
        ops_fail = self.status.get("add") == FAIL or self.status.get("mul") == FAIL
        if "error" in result and ops_fail:  # the failing op's block is above
            text = "a diamond graph's backward raised an error (probably because of + or * above)"
            self.g.add(Row(name, FAIL, text))
            return
        if "error" in result:
            self.g.add(Row(name, FAIL, self.result_text(program, result), self.code(program)))
            return
        if self.right(program, result):
            self.g.add(Row(name, PASS, "a diamond graph: every node waits for all its users"))
            return
        if ops_fail:
            text = "wrong gradients on a diamond graph of + and *" + (
                self._cause() or ", which fail above"
            )
            self.g.add(Row(name, FAIL, text))  # the cause's block is above
            return
        if self._cause():
            text = "wrong gradients on a diamond graph of + and *" + self._cause()
        elif self.g.failed("reuse"):
            text = "wrong gradients on a diamond graph (probably because of 'reuse' above)"
            self.g.add(Row(name, FAIL, text))  # the cause's block is above
            return
        elif all(not np.any(array_of(g)) for g in result["grads"]):
            text = NO_GRADIENT_ORDER
        else:
            text = EARLY_ORDER
        self.g.add(Row(name, FAIL, text, self.code(program)))
