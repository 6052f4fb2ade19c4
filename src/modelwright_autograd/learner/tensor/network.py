"""The tensor network checks, mixed into ``tensor_grader.TensorChecks``: the learner's own
Linear and MLP built in the child process, their gradients against central differences of
their own forward, parameters() and zero_grad(); the MLP's bend (an MLP affine in its input
has no nonlinearity); training on the digits with its own parameters() and zero_grad().
"""

from __future__ import annotations

import numpy as np

from ..report import ABSENT, FAIL, PASS, Row
from ..words import array_text, training_verdict
from .base import TensorBase
from .cases import AFFINE_GAP, EPOCHS, TARGET_ACCURACY
from .oracle import agree, array_of


class TensorNetworkChecks(TensorBase):
    """The network rows of the report."""

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
            self.g.add(Row(name, FAIL, self.failed_text(reply, "Linear(4, 3) and MLP(4, [5, 3])")))
            return
        problems, passed, formula = [], [], ""
        for layer, entry in reply["layers"].items():
            grads = [array_of(g) for g in entry["grads"]]
            differences = [array_of(d) for d in entry["differences"]]
            n = len(grads)
            if entry.get("unlisted"):
                unlisted = entry["unlisted"]
                problems.append(
                    f"{' and '.join(unlisted)} get{'s' if len(unlisted) == 1 else ''} a gradient "
                    "but parameters() does not return it: no optimizer step updates it "
                    "(parameters() must list every tensor the forward uses)"
                )
            elif entry["forward"] is False:
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
                    f"{array_text(grads[i])}, central differences of its own forward give "
                    f"{array_text(differences[i])}"
                )
            elif not entry["zeroed"]:
                left = entry.get("left", [])
                which = (
                    f" (those of parameters()[{', '.join(map(str, left))}], {len(left)} of {n})"
                    if 0 < len(left) < n
                    else ""
                )
                problems.append(
                    f"{layer}.zero_grad() left gradients that are not zero{which}: backward() "
                    "adds into grad, so each training step would add the last one's"
                )
            else:
                passed.append(layer)
                if entry["forward"]:
                    formula = "; Linear is x @ W + b"
        if problems and self.narrow:  # differences of a float32 forward are noise
            text = (
                f"{', '.join(reply['layers'])}: gradients differ from central differences of "
                f"their own forward, in {self.narrow} (probably because of "
                f"'{self.g.target.class_name}'s parts' above)"
            )
            self.g.add(Row(name, FAIL, text))
        elif problems:
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
            self.g.add(Row(name, FAIL, self.failed_text(reply, "MLP(64, [32, 10])")))
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
                f"not affine: f at midpoints off by up to {max(gaps):.2g} of |f| "
                f"({len(gaps)} pairs)"
            )
            self.g.add(Row(name, PASS, text))

    def check_training(self) -> None:
        name = "network trains"
        if not self.g.loaded.get("mlp"):
            self.g.add(Row(name, ABSENT, "no MLP found: the gate asks for one that trains"))
            return
        from ...data import load_digits_split

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
            self.g.add(Row(name, FAIL, self.failed_text(reply, "training MLP(64, [32, 10])")))
            return
        history = reply["history"]
        (loss0, _), (loss1, accuracy) = history[0], history[-1]
        text = (
            f"MLP(64, [32, 10]) on {len(digits.y_train)} digits ({len(digits.y_test)} held "
            f"out), {reply['loss']}, SGD 0.1 on its parameters(): loss {loss0:.4g} -> "
            f"{loss1:.4g} in {len(history) - 1} epochs, test accuracy {accuracy:.1%}"
        )
        ok, why = training_verdict(
            loss0, loss1, accuracy >= TARGET_ACCURACY, f"{TARGET_ACCURACY:.0%} test accuracy"
        )
        text += why
        self.g.add(Row(name, PASS if ok else FAIL, text + ("" if ok else self._ops_cause(text))))
