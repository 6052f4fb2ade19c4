"""What every tensor check shares: the scalar grader's child process and rows (``base``'s
``GraderBase``), the oracle's answers kept per program, the reproduce blocks, and the rows
that fail only because of the loss's ops or the seed. ``tensor_grader.TensorChecks`` runs the
checks on it (with ``tensor_ops.TensorOpChecks`` and ``tensor_network.TensorNetworkChecks``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from ..report import FAIL, Row
from ..words import TODO, array_text, error_text, failure_text, look_at
from .cases import OP_SPECS, SYMBOL
from .oracle import agree, array_of, tensor_oracle
from .programs import OPS, Program, input_names, to_code

if TYPE_CHECKING:
    from ..base import GraderBase as Grader

SAME_CAUSE = "the same cause as "  # how a row whose cause another row shows begins


class TensorBase:
    """The scalar grader `g` the rows go into, the oracle's answers, the shared words."""

    def __init__(self, grader: Grader) -> None:
        self.g = grader
        self.evaluate = tensor_oracle(grader.oracle)
        self._answers: dict[str, tuple[np.ndarray, list[np.ndarray]]] = {}
        self.status = grader.status
        self.loss_ops_wrong: list[str] = []  # "a * b", "sum": wrong on their first case
        self.broadcast_helper: dict[str, str] = {}  # op -> the helper its broadcast bug is in
        self.broadcast_first: dict[str, str] = {}  # helper -> the first row naming it
        self.narrow = ""  # the dtype of the engine's data when narrower than float64

    # ------------------------------------------------------------------ plumbing
    def want(self, program: Program) -> tuple[np.ndarray, list[np.ndarray]]:
        key = json.dumps(program, sort_keys=True)
        if key not in self._answers:
            out, grads = self.evaluate(program)
            times = program.get("repeat", 1)  # each backward adds into the leaves' grads
            self._answers[key] = out, [g * times for g in grads]
        return self._answers[key]

    def results(self, programs: list[Program]) -> list[dict[str, Any]] | dict[str, Any]:
        reply = self.g.ask({"do": "tensor_programs", "programs": programs})
        return reply if "failure" in reply or "error" in reply else reply["results"]

    def one_result(self, name: str, program: Program, what: str) -> dict[str, Any] | None:
        """``program``'s result, or None once a failing row named ``name`` says that the
        engine's process gave none (``what`` is the code it was running)."""
        results = self.results([program])
        if isinstance(results, dict):
            self.g.add(Row(name, FAIL, failure_text(results, what)))
            return None
        return results[0]

    def code(self, program: Program) -> list[str]:
        _, grads = self.want(program)
        expected = {f"{n}.grad": array_text(g) for n, g in zip(input_names(program), grads)}
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

    def shared_text(self, program: Program, result: dict[str, Any]) -> str:
        """Words for two leaves holding one gradient array after backward() ('' if none)."""
        if not result.get("shared"):
            return ""
        names = input_names(program)
        i, j = result["shared"][0]
        return (
            f"after backward(), {names[i]}.grad and {names[j]}.grad are one array: a rule "
            "stored out.grad itself (or a view of it) as an input's gradient, so an in-place "
            "+= into one changes the other (and out.grad). Add into each tensor's own array "
            "(self.grad += g) or store a copy; torch never shares a leaf's gradient"
        )

    def written_text(self, program: Program, result: dict[str, Any]) -> str:
        """Words for an op that changed a tensor's numbers in place ('' when none did):
        the op reading that tensor, and in which pass."""
        if not result.get("written"):
            return ""
        slot, stage = result["written"][0]
        steps = program["steps"]
        readers = [
            (j, step[0]) for j, step in enumerate(steps) if slot in step[1 : 1 + OPS[step[0]].arity]
        ]
        who = " or ".join(f"{SYMBOL.get(op, op)}'s" for _, op in readers) or "the loss's *"
        name = _slot_name(program, slot)
        when = "the forward" if stage == "forward" else "backward()"
        look = look_at(result, readers[0][0]) if readers and stage == "backward" else ""
        return (
            f"{who} {stage} changed its input's data in place: after {when}, {name}.data no "
            "longer holds the numbers it was made with, and every other use of it sees the new "
            "ones. "
            "No op may write into an input's array: `x = self.data` is that array, not a copy, "
            "so `x **= -1`, `x += ...` or np.maximum(x, 0, out=x) change the input itself. "
            f"Compute into a new array (1 / self.data){look}"
        )

    def data_code(self, program: Program, result: dict[str, Any]) -> list[str]:
        """The reproduce block, printing the data of the input an op wrote into too."""
        slot = result["written"][0][0]
        if slot >= len(program["inputs"]):
            return self.code(program)
        name = _slot_name(program, slot)
        made = array_text(array_of(program["inputs"][slot]))
        return [*self.code(program), f"print({name}.data)", f"# expected {name}.data: {made}"]

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
        failing = [  # a row naming another's cause is covered by that row
            spec.label
            for spec in OP_SPECS
            if self.status.get(spec.op) == FAIL
            and not self.g.rows[spec.label].diagnosis.startswith(SAME_CAUSE)
        ]
        if self.g.failed("seed"):
            failing.insert(0, "seed")
        if not failing:
            return ""
        return f" (probably because of {', '.join(repr(n) for n in failing)} above)"

    def failed_text(self, reply: dict[str, Any], what: str, program: Program | None = None) -> str:
        """Words for ``what`` that hung, crashed or raised; briefly, naming where, when op
        rows failed above (their block shows the cause)."""
        text = failure_text(reply, what) if program is None else self.result_text(program, reply)
        because = self._ops_cause(text)
        error = reply.get("error")
        if because and error:  # the line only: the cause's row says more
            where = f" ({error['where'].split(' in ')[0]})" if error["where"] else ""
            return f"{what} raised {error['type']}{where}{because}"
        return text + because

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
            return f"{error_text(error)}: each op must return a new Tensor"
        return f"{result['stage']} raised {error_text(error)}"


def _slot_name(program: Program, slot: int) -> str:
    """A slot's name in the reproduce block: a, b, ... for the inputs, v1, v2, ... then out."""
    n, steps = len(program["inputs"]), len(program["steps"])
    if slot < n:
        return input_names(program)[slot]
    return "out" if slot == n + steps - 1 else f"v{slot - n + 1}"
