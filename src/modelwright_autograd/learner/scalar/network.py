"""The network checks, mixed into ``grader.Grader``: the learner's own Neuron, Layer and
MLP, built in the child process. parameters() counted and checked for identity against
the architecture, zero_grad() called on grads of 1.5, the network's bend (an MLP affine
in its input has no nonlinearity), its gradients against differences of its own forward,
and training with its own parameters() and zero_grad() to a bar no straight line reaches.
"""

from __future__ import annotations

from typing import Any

from ..base import GraderBase
from ..report import ABSENT, FAIL, PASS, Row, printable
from ..words import TODO, error_text, failure_text, network_right, training_verdict
from .cases import (
    AFFINE_PAIRS,
    AFFINE_TOLERANCE,
    ARCHITECTURE,
    BEST_LINE,
    NEURONS,
    OP_CHECKS,
    TRAIN_EPOCHS,
    TRAIN_TARGET,
)
from .oracle import close


class NetworkChecks(GraderBase):
    """The network rows of the report."""

    def library_lines(self, name: str, *lines: str) -> list[str]:
        """A reproduce block that imports ``name`` from the learner's library (seeding
        random as the grader did) and runs ``lines``."""
        shown = list(lines)
        seeding = [i for i, line in enumerate(shown) if line.startswith("random.seed")]
        if seeding:
            shown[seeding[0]] = "import random; " + shown[seeding[0]]
        return [*self.target.library_import_lines(name), *shown]

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
            self.add(Row(name, FAIL, failure_text(reply, "MLP(3, [4, 4, 1]).parameters()")))
            return
        shown = []
        for level in reply["levels"]:
            if level.get("skipped"):
                continue
            cls = level["name"]
            made, want, parts, seed = ARCHITECTURE[cls]
            if "error" in level:
                error = level["error"]
                text = f"{made}.parameters() raised {error_text(error)}"
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
                text = _repeated_text(level, made, shown)
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
            self.add(Row(name, FAIL, failure_text(reply, "MLP(3, [4, 4, 1]).zero_grad()")))
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
            self.add(
                Row(
                    name,
                    PASS,
                    f"sets all {reply['count']} grads of MLP(3, [4, 4, 1]) to 0",
                )
            )

    def check_network_nonlinear(self) -> None:
        """An MLP with no nonlinearity is a straight line however deep: f(p) + f(q) equals
        2 f((p + q) / 2) for every pair p, q exactly when f is affine."""
        name = "network bends"
        if not self.has_mlp:
            return
        reply = self.ask({"do": "affine", "pairs": AFFINE_PAIRS})
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, failure_text(reply, "MLP(2, [8, 8, 1])(x)")))
            return
        if reply["mlp"] > AFFINE_TOLERANCE:
            self.add(Row(name, PASS, "MLP(2, [8, 8, 1]) is not affine in its input"))
            return
        if reply["constant"] is not None:
            text = (
                f"MLP(2, [8, 8, 1]) gives {reply['constant']:g} for every input: its output "
                "does not depend on x (flat, not bent). Do the weights all start at 0, or "
                "does every unit start where its "
                "nonlinearity is flat (a relu below 0 for every input)? Each weight needs its "
                "own random start, random.uniform(-1, 1)"
            )
        elif reply.get("neuron", 1.0) <= AFFINE_TOLERANCE:
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
        if cause and ("failure" in reply or "error" in reply or not network_right(reply)):
            self.because(name, cause)
            return
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, failure_text(reply, "MLP(3, [4, 4, 1])")))
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
            elif sum(g == 0.0 for g in grads) >= len(wrong):
                text += (
                    ": those are 0. Does Neuron.__call__ use each weight's Value (not its "
                    ".data) in sum(w * x) + b?"
                )
            self.add(Row(name, FAIL, text, self.gradient_lines(i, differences[i][0])))

    def gradient_lines(self, i: int, difference: float) -> list[str]:
        """Lines that build the network as network_gradients did and print parameter
        ``i``'s gradient beside its central difference."""
        return self.library_lines(
            "MLP",
            "random.seed(1); model = MLP(3, [4, 4, 1]); params = model.parameters()",
            "nudge = random.Random(2)",
            "for p in params: p.data += nudge.uniform(-0.2, 0.2)",
            "loss = lambda: (model([0.5, -1.2, 0.8]) - 0.25) ** 2",
            f"loss().backward(); p, h = params[{i}], 1e-6",
            "g = p.grad; p.data += h; up = loss().data; p.data -= 2 * h; down = loss().data",
            f"print(g, (up - down) / (2 * h))  # expected: {difference:.6g} twice",
        )

    def check_training(self) -> None:
        """SGD with the learner's own parameters() and zero_grad() on make_moons, to an
        accuracy no straight line reaches on these points (TRAIN_TARGET)."""
        name = "network trains"
        if not self.has_mlp:
            return
        basic = ("seed", "leaf _backward", "order", "reuse", "a nonlinearity")
        basic += ("two backward() calls",)
        network = ("parameters()", "zero_grad()", "network bends", "network gradients")
        cause = next((row for row in (*basic, *network) if self.failed(row)), None)
        if cause:
            self.because(name, cause)
            return
        import numpy as np

        from ...data import make_2d

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
            self.add(Row(name, FAIL, failure_text(reply, "training MLP(2, [8, 8, 1])")))
            return
        if "returned" in reply:
            where = f" ({reply['where']})" if reply["where"] else ""
            text = (
                f"MLP(2, [8, 8, 1])(x) returns {printable(reply['returned'][:60])}, not a Value: "
                "the starter notebook's training loop, (model(x) - y) ** 2, raises TypeError on "
                "it. A Layer of one neuron returns that neuron's Value itself: "
                f"out[0] if len(out) == 1 else out, in Layer.__call__{where}"
            )
            lines = self.library_lines(
                "MLP",
                "model = MLP(2, [8, 8, 1])",
                "print(type(model([0.5, -1.0])).__name__)  # expected: Value",
            )
            self.add(Row(name, FAIL, text, lines))
            return
        history = reply["history"]
        (loss0, _), (loss1, accuracy) = history[0], history[-1]
        epochs = len(history) - 1
        text = (
            f"MLP(2, [8, 8, 1]), moons, SGD: loss {loss0:.3f} -> {loss1:.3f} in {epochs} "
            f"epoch(s), accuracy {accuracy:.0%}"
        )
        ok, why = training_verdict(
            loss0,
            loss1,
            accuracy >= TRAIN_TARGET,
            f"{TRAIN_TARGET:.0%} accuracy (the best straight line through these 100 points "
            f"classifies {BEST_LINE:.0%})",
        )
        if ok:
            self.add(Row(name, PASS, text))
            return
        start = [
            "random.seed(0); model = MLP(2, [8, 8, 1])",
            "grid = [[x / 4, y / 4] for x in range(-8, 9) for y in range(-8, 9)]",
        ]
        lines = []
        if _stuck_at_zero(reply, len(X)):  # show that the output is never below 0
            lines = self.library_lines(
                "MLP",
                *start,
                "print(min(model(x).data for x in grid))",
                "# expected: below 0 somewhere (the labels are -1 and +1); a relu never is",
            )
        elif reply["no_gradient"]:  # show the parameters a whole grid gives no gradient
            lines = self.library_lines(
                "MLP",
                *start,
                "sum((model(x) - 1) ** 2 for x in grid).backward()",
                "print(sum(p.grad == 0 for p in model.parameters()), len(model.parameters()))",
                "# expected: few or no zeros: a gradient 0 at every point never trains",
            )
        self.add(Row(name, FAIL, text + (_stuck(reply, len(X)) or why), lines))


def _repeated_text(level: dict[str, Any], made: str, shown: list[str]) -> str:
    """Words for parameters() listing one object more than once: a Layer (an MLP) whose
    parts are one object repeated when the level below passed (``shown``) or its parts
    are recorded as repeated, else weights repeated in a Neuron."""
    count, distinct, parts = level["count"], level["distinct"], level["parts"]
    text = f"{made}.parameters() lists {count} Values but only {distinct} distinct objects"
    cls = level["name"]
    if cls != "Neuron" and parts and parts[1] == parts[0]:  # distinct parts, shared Values
        part = {"Layer": "Neuron", "MLP": "Layer"}[cls]
        return text + (
            f": its {parts[0]} {part}s are distinct objects, but they share Values: a Value "
            f"made once and given to every {part}. A default "
            "argument, such as b=Value(0.0), is made once, when def runs: make each Value "
            "inside __init__"
        )
    if cls != "Neuron" and ((parts and parts[1] < parts[0]) or shown):
        part = {"Layer": "Neuron", "MLP": "Layer"}[cls]
        held = f"holds {parts[0]} {part}s that are {parts[1]} object(s)" if parts else ""
        init = f" ({level['init']})" if level["init"] else ""
        return text + (
            f": {cls}'s {part.lower()}s are one object repeated ({made} {held or 'repeats one'}"
            f"; the {part}'s own Values are distinct). [{part}(...)] * n is n references to "
            f"one {part}, so they compute and train as one: make each, [{part}(...) for _ in "
            f"range(n)], in {cls}.__init__{init}"
        )
    return text + (
        ": weights that share one Value train as one. Does Neuron.__init__ repeat one Value "
        "([Value(x)] * nin is nin references to one object)?"
    )


def _stuck_at_zero(reply: dict[str, Any], points: int) -> bool:
    """The trained network's output is exactly 0 on a tenth of the points or more."""
    return reply["zero_outputs"] >= points / 10


def _stuck(reply: dict[str, Any], points: int) -> str:
    """What the training run recorded that names a likely cause: outputs exactly 0 on
    many of the ``points`` (a relu on the last layer), parameters whose gradient was 0 at
    every step."""
    where = f" ({reply['where']})" if reply["where"] else ""
    if _stuck_at_zero(reply, points):
        return (
            f"; the output is exactly 0 for {reply['zero_outputs']} of the {points} points: "
            "a relu on the last layer? Where it gives 0 it passes no gradient. "
            f"Neuron.__call__{where} must leave the last layer linear (nonlin=False)"
        )
    if reply["no_gradient"]:
        return (
            f"; {reply['no_gradient']} of the {reply['parameters']} parameters got gradient 0 at "
            "every step: they never train. Does the forward use their .data (a float, cut off "
            "from the graph), or do their units sit where the nonlinearity is flat for every "
            "point (a relu whose input is below 0: a dead unit)?"
        )
    return ""
