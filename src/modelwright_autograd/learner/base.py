"""What every check of ``modelwright-autograd check`` shares: the engine's child process,
the report's rows, the rows that fail only because of another, the reproduce blocks.
``grader.Grader`` runs the checks on it (with ``ops.OpChecks`` and
``network.NetworkChecks``); ``tensor_grader`` runs a tensor engine's on the same base.
"""

from __future__ import annotations

from typing import Any

from .child import EngineProcess
from .locate import Target
from .report import FAIL, Report, Row
from .scalar.oracle import Oracle
from .scalar.programs import Program, input_names, to_code
from .words import BECAUSE, TODO

MAX_HANGS = 2  # after this many timeouts the remaining checks are not run
#: Autograd libraries the learner's code must not import: with one, the gradients are not
#: the learner's own (``borrowed_row``); this package's Tensor and Value too.
BORROWED = (
    "torch",
    "jax",
    "tensorflow",
    "autograd",
    "tinygrad",
    "micrograd",
    "mlx",
    "modelwright_autograd",
)
STOP_AT = 0.8  # the share of its timeout after which the child stops a request itself


class GraderBase:
    """One engine's child process, the rows so far and what the checks learned."""

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
        """The engine's reply to one request; a timeout is counted (see MAX_HANGS). The
        child stops the request itself a little before the timeout, so a timeout can say
        where the learner's code was (``where``)."""
        timeout = timeout or self.timeout
        reply = self.process.ask({**request, "stop_after": STOP_AT * timeout}, timeout)
        if reply.get("error", {}).get("type") == "StoppedByGrader":
            self.process.close()  # the request ended half-way: start afresh
            reply = {"failure": "timeout", "seconds": timeout, "where": reply["error"]["where"]}
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
            program,
            self.target.import_lines,
            dict(zip(["out.data", *names], [out, *grads])),
        )


def borrowed_row(ask: Any, what: str, own: str, imports: list[str]) -> Row | None:
    """A failing row when the learner's process (``ask``: the grader's) has imported an
    autograd library other than ``own`` (the graded code's top-level package: a learner's
    package may be called micrograd), after every other check (a lazy import counts once it
    has run); None when it has not, or cannot say. ``what``: whose gradients these are meant
    to be; ``imports``: the lines that import the learner's code, for the reproduce block."""
    names = [name for name in BORROWED if name != own]
    reply = ask({"do": "borrowed", "names": names})
    modules = reply.get("modules") or []
    if "failure" in reply or "error" in reply or not modules:
        return None
    text = (
        f"your code imported {' and '.join(modules)} (in its process here): {what} must be "
        "your own, on NumPy alone; the gate cannot pass with another library's autograd"
    )
    listed = ", ".join(map(repr, names))
    lines = [
        *imports,
        "import sys  # an import inside a function shows once that function has run",
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {{{listed}}}))",
    ]
    return Row("own work", FAIL, text, lines)
