"""``modelwright-autograd check`` on a backprop-by-hand exercise (``init --backprop``): the
learner's forward and each of their gradient functions run in the supervised child process
(``probe.py`` beside this file), and each gradient is compared with PyTorch's autograd of
the same forward on the same weights and batch, one row per tensor.

A row is judged twice: against PyTorch's gradient, and against the gradient the step should
give from the learner's *own* gradients of the tensors after it (``Reference.parts``). So a
tensor that only inherits a wrong gradient says so in one line, and a wrong one is
diagnosed from its own numbers (``diagnose``). Then the two fused forms, then training:
plain SGD with the learner's backward on batches of the names, step for step beside
PyTorch's.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...files import UnreadableFile, read_bounded
from ..base import borrowed_row
from ..child import EngineProcess
from ..report import FAIL, PASS, Report, Row
from ..words import TODO, error_text, failure_text
from . import diagnose
from .reference import (
    BATCH,
    FORWARD,
    FUSED,
    FUSED_PASS,
    GRADIENTS,
    Reference,
    batches,
    consumers,
    init_params,
    torch_training,
)

MAX_HANGS = 2  # after this many timeouts the remaining rows are not run
TRAIN_STEPS, LEARNING_RATE = 30, 0.1
FUNCTIONS = ["forward", *(f"d{name}" for name in GRADIENTS), *(f for f, _, _ in FUSED)]
FUNCTIONS += ["backward", "backward_fused"]
GATE = "BACKPROP GATE PASSED: every gradient matches PyTorch's, and trains as PyTorch's"


@dataclass(frozen=True)
class Exercise:
    """The learner's module to import, and the folder to put on sys.path."""

    shown: str
    file: Path

    def load_request(self) -> dict[str, Any]:
        return {
            "do": "backprop_load",
            "sys_path": str(self.file.parent),
            "module": self.file.stem,
            "file": str(self.file),
            "files": [str(p) for p in sorted(self.file.parent.glob("*.py"))],
            "functions": FUNCTIONS,
        }


def _is_exercise(path: Path) -> bool:
    try:
        text = read_bounded(path, 2**22).decode("utf-8", errors="replace")
    except (UnreadableFile, OSError):
        return False
    return all(re.search(rf"^def\s+{name}\b", text, re.M) for name in ("forward", "dlogprobs"))


def find_exercise(path: str | Path) -> Exercise | None:
    """The backprop exercise at PATH (a .py file defining forward and dlogprobs, or a folder
    holding one, backprop.py first), or None when PATH is not one."""
    where = Path(path)
    try:
        if where.is_file():
            found = where.suffix == ".py" and _is_exercise(where)
            return Exercise(str(path), where.resolve()) if found else None
        if not where.is_dir():
            return None
        modules = sorted(where.glob("*.py"), key=lambda p: (p.name != "backprop.py", p.name))
    except OSError:
        return None
    found = next((p for p in modules if _is_exercise(p)), None)
    return None if found is None else Exercise(str(path), found.resolve())


class BackpropReport(Report):
    """The report with the backprop gate's verdict."""

    @property
    def passed(self) -> bool:
        trained = [r for r in self.rows if r.name.startswith("training")]
        return self.failed == 0 and len(trained) == 2 and all(r.status == PASS for r in trained)

    @property
    def verdict(self) -> str:
        if self.passed:
            return GATE
        return f"not yet: {self.failed} of {self.counted} checks fail"


class BackpropGrader:
    """Runs every backprop row against one exercise, into a report."""

    def __init__(
        self, exercise: Exercise, timeout: float, train_timeout: float, process: Any = None
    ) -> None:
        """``process`` answers as ``child.EngineProcess`` does (the tests pass one that runs
        the probe in their own process); by default the supervised child."""
        self.exercise = exercise
        self.timeout, self.train_timeout = timeout, train_timeout
        self.process = process or EngineProcess(
            exercise.load_request(), str(exercise.file.parent), timeout
        )
        self.report = BackpropReport(exercise.shown, "PyTorch autograd (float64)")
        self.hangs = 0
        self.found: list[str] = []
        self.ref = _reference()
        self.params, self.Xb, self.Yb = self.ref.params, self.ref.Xb, self.ref.Yb
        self.grads: dict[str, np.ndarray] = {}  # the learner's, by tensor name
        self.status: dict[str, str] = {}

    # ------------------------------------------------------------------ plumbing
    def ask(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        reply = self.process.ask(request, timeout or self.timeout)
        if reply.get("failure") == "timeout":
            self.hangs += 1
        return reply

    def add(self, name: str, status: str, text: str) -> None:
        self.status[name] = status
        self.report.rows.append(Row(name, status, text))

    def forward_request(self) -> dict[str, Any]:
        return {
            "do": "backprop_forward",
            "params": {k: _sent(v) for k, v in self.params.items()},
            "Xb": self.Xb.tolist(),
            "Yb": self.Yb.tolist(),
            "names": [step.out for step in FORWARD],
        }

    def step(self, function: str, into: str | None) -> dict[str, Any]:
        """The learner's ``function`` on the forward; after a restart (a step that hung or
        crashed) the forward is run again and the gradients so far given back first."""
        request = {"do": "backprop_step", "function": function, "into": into}
        reply = self.ask(request)
        if reply.get("error", {}).get("type") == "NoState":
            again = self.ask(self.forward_request())
            if "failure" in again or "error" in again:
                return again
            grads = {k: _sent(v) for k, v in self.grads.items()}
            restored = self.ask({"do": "backprop_restore", "grads": grads})
            if "failure" in restored or "error" in restored:
                return restored
            reply = self.ask(request)
        return reply

    # ------------------------------------------------------------------ the run
    def run(self) -> Report:
        started = time.monotonic()
        with self.process:
            try:
                if self.check_loads() and self.check_forward():
                    for check in (self.check_gradients, self.check_fused, self.check_training):
                        if self.hangs >= MAX_HANGS:
                            text = f"not run: the code hung {MAX_HANGS} times; fix that first"
                            self.add("the other checks", FAIL, text)
                            break
                        check()
                    self.check_own_work()
            finally:
                self.report.seconds = time.monotonic() - started
                self.report.engine_output = self.process.output_tail(5)
                self.report.isolation = self.process.isolation
                self.report.isolated = self.process.isolated
        return self.report

    def check_own_work(self) -> None:
        if self.hangs >= MAX_HANGS:
            return
        folder, module = self.exercise.file.parent, self.exercise.file.stem
        imports = [f"import sys; sys.path.insert(0, {str(folder)!r})", f"import {module}"]
        row = borrowed_row(self.ask, "the gradients", module, imports)
        if row is not None:
            self.status[row.name] = row.status
            self.report.rows.append(row)

    def check_loads(self) -> bool:
        loaded = self.process.load()
        where = self.exercise.file.name
        if "failure" in loaded or "error" in loaded:
            text = failure_text(loaded, f"importing {where}")
            if loaded.get("failure") == "timeout":
                text += "; code at the top of a module runs on import"
            self.add("exercise loads", FAIL, text)
            return False
        self.found = loaded["found"]
        missing = [name for name in FUNCTIONS if name not in self.found]
        count = sum(name.startswith("d") for name in self.found)
        text = f"{where}: forward and {count} gradient functions"
        if missing:
            text += f"; missing: {', '.join(missing)}"
        self.add("exercise loads", PASS if "forward" in self.found else FAIL, text)
        return "forward" in self.found

    def check_forward(self) -> bool:
        reply = self.ask(self.forward_request())
        name = "forward"
        if "failure" in reply or "error" in reply:
            self.add(name, FAIL, failure_text(reply, "forward(params, Xb, Yb)"))
            return False
        for step in FORWARD:
            sent = reply["tensors"][step.out]
            if "error" in sent:
                text = f"f.{step.out}: {error_text(sent['error'])}"
                self.add(name, FAIL, text + "; the check needs every tensor under its name")
                return False
            got, want = _array(sent), self.ref.values[step.out]
            if not diagnose.agree(got, want):
                differs = (
                    f"shape {got.shape}, not {want.shape}"
                    if got.shape != want.shape
                    else f"max difference {float(np.abs(got - want).max()):.3g}"
                )
                text = (
                    f"f.{step.out} is not PyTorch's {step.words} ({differs}): the gradients "
                    "are checked against the starter's forward, so put it back"
                )
                self.add(name, FAIL, text)
                return False
        self.add(name, PASS, f"every tensor equals PyTorch's, loss {self.ref.values['loss']:.4f}")
        return True

    def check_gradients(self) -> None:
        for name in GRADIENTS:
            if self.hangs >= MAX_HANGS:
                return
            function = f"d{name}"
            if function not in self.found:
                self.add(function, FAIL, f"{self.exercise.file.name} has no {function}(f, d)")
                continue
            reply = self.step(function, name)
            if "failure" in reply or "error" in reply:
                self.add(function, FAIL, self.raised_text(function, name, reply))
                continue
            got = _array(reply["grad"])
            self.grads[name] = got
            self.judge(function, name, got)

    def raised_text(self, function: str, name: str, reply: dict[str, Any]) -> str:
        error = reply.get("error")
        if error and error["type"] == "NotImplementedError":
            return f"{TODO} {error['message'] or function}"
        if error and error["type"] == "AttributeError":
            missing = re.search(r"attribute '(\w+)'", error["message"])
            if missing and f"d{missing.group(1)}" in self.status:
                return f"needs d.{missing.group(1)}: d{missing.group(1)} above gave none"
        text = failure_text(reply, f"{function}(f, d)")
        wrong = [f"d{s.out}" for s in consumers(name) if self.status.get(f"d{s.out}") == FAIL]
        if wrong and "error" in reply:
            verb = "is" if len(wrong) == 1 else "are"
            return f"{text} (probably because {' and '.join(wrong)} above {verb} wrong)"
        return text + diagnose.error_hint(name)

    def judge(self, function: str, name: str, got: np.ndarray) -> None:
        want = self.ref.grads[name]
        if diagnose.agree(got, want):
            self.add(function, PASS, diagnose.verdict(got, want))
            return
        try:
            parts = self.ref.parts(name, self.grads)
        except (KeyError, ValueError) as error:  # an upstream gradient missing or misshapen
            upstream = str(error.args[0]).strip("'")
            self.add(function, FAIL, f"not judged: d{upstream} above is wrong: fix that first")
            return
        local = sum(parts.values())
        if diagnose.agree(got, local):
            wrong = [out for out in parts if self.status.get(f"d{out}") == FAIL]
            because = " and ".join(f"d{out}" for out in wrong) or "an upstream gradient"
            verb = "are" if len(wrong) > 1 else "is"
            text = f"right given {because} above, which {verb} wrong: fix that first"
            self.add(function, FAIL, text)
            return
        self.add(function, FAIL, diagnose.wrong_text(name, got, local, parts, BATCH, self.Xb))

    def check_fused(self) -> None:
        for function, name, reads in FUSED:
            if self.hangs >= MAX_HANGS:
                return
            if function not in self.found:
                self.add(function, FAIL, f"{self.exercise.file.name} has no {function}(f, d)")
                continue
            reply = self.step(function, None)
            if "failure" in reply or "error" in reply:
                self.add(function, FAIL, self.raised_text(function, name, reply))
                continue
            got, want = _array(reply["grad"]), self.ref.grads[name]
            if diagnose.agree(got, want):
                self.add(function, PASS, diagnose.verdict(got, want))
                continue
            upstream = " and ".join(f"d{r}" for r in reads)
            try:
                local = self.ref.fused_local(name, self.grads)
            except (KeyError, ValueError):  # the gradient it reads is missing or misshapen
                self.add(function, FAIL, f"not judged: {upstream} above is wrong: fix that first")
                continue
            if diagnose.agree(got, local):
                self.add(function, FAIL, f"right given {upstream} above, which is wrong")
                continue
            values = {**self.ref.values, "dhpreact": self.grads.get("hpreact")}
            self.add(function, FAIL, diagnose.fused_text(name, got, local, values, BATCH))

    def check_training(self) -> None:
        want = torch_training(TRAIN_STEPS, 3, 4, LEARNING_RATE)
        for fused in (False, True):
            name = "training (fused)" if fused else "training (step by step)"
            function = "backward_fused" if fused else "backward"
            if function not in self.found:
                self.add(name, FAIL, f"{self.exercise.file.name} has no {function}(f)")
                continue
            request = {**_training_request(), "fused": fused}
            reply = self.ask(request, self.train_timeout)
            if "failure" in reply or "error" in reply:
                text = failure_text(reply, f"{TRAIN_STEPS} steps of SGD with {function}")
                self.add(
                    name, FAIL, text + ("" if text.startswith(TODO) else self.rows_cause(fused))
                )
                continue
            got = np.array(reply["losses"])
            steps = f"{TRAIN_STEPS} steps of SGD on batches of the names"
            if np.allclose(got, want, rtol=1e-6, atol=0.0) and want[-1] < want[0]:
                gap = float(np.abs(got - np.array(want)).max())
                text = (
                    f"{steps}: the loss falls from {got[0]:.4f} to {got[-1]:.4f}, as "
                    f"PyTorch's (max difference {gap:.2g})"
                )
                self.add(name, PASS, text)
                continue
            k = int(np.argmax(~np.isclose(got, want, rtol=1e-6, atol=0.0)))
            text = (
                f"{steps}: at step {k} your loss is {got[k]:.6g}, PyTorch's {want[k]:.6g}"
                + self.rows_cause(fused)
            )
            self.add(name, FAIL, text)

    def rows_cause(self, fused: bool) -> str:
        """' (wrong above: dW2, ...)': the failing rows of the functions that pass uses."""
        used = FUSED_PASS if fused else [f"d{name}" for name in GRADIENTS]
        failing = [name for name in used if self.status.get(name) == FAIL]
        if not failing:
            return ""
        more = ", ..." if len(failing) > 4 else ""
        return f" (wrong above: {', '.join(failing[:4])}{more})"


@functools.cache
def _reference() -> Reference:
    """PyTorch's forward and gradients on the check's weights and batch (the same every
    check: made once a process)."""
    ((Xb, Yb),) = batches(1, seed=2)
    return Reference(init_params(seed=1), Xb, Yb)


@functools.cache
def _training_request() -> dict[str, Any]:
    """The training request's weights and batches (the same every check)."""
    return {
        "do": "backprop_train",
        "params": {k: _sent(v) for k, v in init_params(seed=3).items()},
        "batches": [[X.tolist(), Y.tolist()] for X, Y in batches(TRAIN_STEPS, seed=4)],
        "lr": LEARNING_RATE,
    }


def _sent(a: np.ndarray) -> dict[str, Any]:
    return {"shape": list(a.shape), "data": [float(v) for v in a.ravel()]}


def _array(sent: dict[str, Any]) -> np.ndarray:
    return np.array(sent["data"], dtype=float).reshape(sent["shape"])


def grade_backprop(
    exercise: Exercise, timeout: float = 10.0, train_timeout: float = 90.0
) -> Report:
    """Grade the backprop exercise and return the report."""
    return BackpropGrader(exercise, timeout, train_timeout).run()
