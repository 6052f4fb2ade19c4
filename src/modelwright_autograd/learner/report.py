"""The grader's report: one row per check, the verdict, as text or as JSON."""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass, field
from itertools import zip_longest

PASS, FAIL, ABSENT, NOTE, WAIT = "pass", "fail", "not present", "note", "waits"
_LABEL = {PASS: "pass", FAIL: "FAIL", ABSENT: "n/a ", NOTE: "note", WAIT: "wait"}
WIDTH = 96  # the text report's diagnoses are wrapped to this many columns
# What no isolation changes: the learner's code runs in the process that reports its numbers.
TRUST = "the engine runs as you and reports its own numbers: not a proof (docs/build-your-own.md)"


def printable(text: str) -> str:
    """``text`` with every control or invisible character escaped (``\\x1b``, ``\\n``,
    ``\\u202e``): the learner's messages, prints and file names cannot clear the screen,
    move the cursor or start a line of their own in the report."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


@dataclass
class Row:
    """One check: its name, pass / fail / not present / note / waits (not run until
    another passes), the diagnosis in words, and
    (on failure) lines the learner can paste to see it for themselves."""

    name: str
    status: str
    diagnosis: str
    reproduce: list[str] = field(default_factory=list)


@dataclass
class Report:
    path: str
    oracle: str
    rows: list[Row] = field(default_factory=list)
    engine_output: list[str] = field(default_factory=list)
    seconds: float = 0.0  # the grading's wall time; check's, from its start to the verdict
    isolation: str = ""  # what kept the learner's processes apart (see child.EngineProcess)
    isolated: bool = False  # every layer of it was there: the text report leaves it out
    terse: bool = False  # a failing text report names its passing rows only (the tensor's)
    gate: str = "BUILD GATE PASSED"  # the verdict when it passes (the LM checks' is theirs)
    required: tuple[str, ...] = ("network trains",)  # the rows that must be there and pass
    done: list[Row] = field(default_factory=list)  # the definition of done, for a repository

    @property
    def failed(self) -> int:
        return sum(row.status == FAIL for row in self.rows)

    @property
    def counted(self) -> int:
        """Rows that pass or fail; notes and absent optional ops are not checks."""
        return sum(row.status in (PASS, FAIL) for row in self.rows)

    @property
    def passed(self) -> bool:
        passing = {r.name for r in self.rows if r.status == PASS}
        return self.failed == 0 and all(name in passing for name in self.required)

    @property
    def verdict(self) -> str:
        if self.passed:
            return self.gate
        if self.failed:
            return f"not yet: {self.failed} of {self.counted} checks fail"
        return "not yet: the engine's checks pass, but the gate asks for an MLP that trains"

    @property
    def done_met(self) -> bool:
        """The gate passes and every row of the definition of done passes (or is a note)."""
        return self.passed and all(row.status in (PASS, NOTE) for row in self.done)

    @property
    def done_verdict(self) -> str:
        """``DEFINITION OF DONE: met``, or what is missing (the gate, then each row)."""
        missing = [] if self.passed else ["the build gate"]
        missing += [row.name for row in self.done if row.status == FAIL]
        return "DEFINITION OF DONE: " + ("not yet: " + ", ".join(missing) if missing else "met")

    def to_text(self) -> str:
        """The report as a learner reads it. Neighbouring rows saying the same thing with
        nothing to reproduce (the ops that pass, the rows failing because of one cause)
        share one line; with ``terse``, when a check fails, the rows that pass are named only
        (the JSON keeps their words), so a report for one cause stays short."""
        width = max(len(row.name) for row in self.rows) + 1  # a shared line's comma
        lines = [f"checking {printable(self.path)}", f"oracle: {self.oracle}"]
        if self.isolation and not self.isolated:  # a layer is missing: say which
            lines.extend(textwrap.wrap(f"isolation: {printable(self.isolation)}", WIDTH))
        lines.append("")
        lines.extend(_row_lines(self.rows, width, self.terse and self.failed > 0))
        if self.done:
            lines.append("")
            lines.append("the definition of done (the course's project, docs/build-your-own.md):")
            lines.extend(_row_lines(self.done, max(len(row.name) for row in self.done) + 1))
        if self.engine_output:
            lines.append("")
            lines.append("the engine printed (last lines, not part of the checks):")
            lines.extend(f"  | {printable(line)}" for line in self.engine_output)
        lines.append("")
        lines.extend(textwrap.wrap(TRUST, WIDTH))
        lines.append(f"{self.verdict}  ({self.seconds:.1f} s)")
        if self.done:
            lines.append(self.done_verdict)
        return "\n".join(lines)

    def to_json(self) -> str:
        data = {
            "path": self.path,
            "oracle": self.oracle,
            "checks": [asdict(row) for row in self.rows],
            "failed": self.failed,
            "checked": self.counted,
            "passed": self.passed,
            "verdict": self.verdict,
            "engine_output": self.engine_output,
            "seconds": round(self.seconds, 2),
            "isolation": self.isolation,
            "isolated": self.isolated,
            "trust": TRUST,
        }
        if self.done:
            data["definition_of_done"] = {
                "checks": [asdict(row) for row in self.done],
                "met": self.done_met,
                "verdict": self.done_verdict,
            }
        return json.dumps(data, indent=2, allow_nan=True)


def _row_lines(rows: list[Row], width: int, terse: bool = False) -> list[str]:
    """The rows as text: a label, the names (``width`` wide) and the diagnosis wrapped,
    then the reproduce block; with ``terse``, the rows that pass by name only; rows that
    wait, by name, then why on a line of its own."""
    lines = []
    for names, row in _groups(rows, terse):
        if (terse and row.status == PASS) or row.status == WAIT:
            named = _pack(names, WIDTH - 6)
            lines.append(f"{_LABEL[row.status]}  {named[0]}")
            lines.extend(f"      {more}" for more in named[1:])
            if row.status == WAIT:
                lines.extend(f"      {more}" for more in textwrap.wrap(row.diagnosis, WIDTH - 6))
            continue
        shown = _pack(names, width)
        indent = " " * (len(_LABEL[row.status]) + width + 4)
        text = textwrap.wrap(printable(row.diagnosis), max(40, WIDTH - len(indent))) or [""]
        lines.append(f"{_LABEL[row.status]}  {shown[0].ljust(width)}  {text[0]}")
        rest = zip_longest(shown[1:], text[1:], fillvalue="")
        lines.extend(f"      {name.ljust(width)}  {more}".rstrip() for name, more in rest)
        if row.reproduce:
            lines.append(indent + "reproduce:")
            lines.extend(indent + "  " + printable(code) for code in row.reproduce)
    return lines


def _groups(rows: list[Row], passes: bool = False) -> list[tuple[list[str], Row]]:
    """Runs of neighbouring rows with the same status and diagnosis and no reproduce
    block (any that pass, with ``passes``), as (their names, the first row)."""
    groups: list[tuple[list[str], Row]] = []
    for row in rows:
        if groups and not row.reproduce:
            names, first = groups[-1]
            same = (first.status, first.diagnosis) == (row.status, row.diagnosis)
            same = same or (passes and first.status == row.status == PASS)
            if same and not first.reproduce:
                names.append(row.name)
                continue
        groups.append(([row.name], row))
    return groups


def _pack(names: list[str], width: int) -> list[str]:
    """The names joined by ", " into lines of at most ``width`` characters (a line's
    trailing comma included), breaking only between names."""
    lines = [names[0]]
    for i, name in enumerate(names[1:], 2):
        comma = 1 if i < len(names) else 0
        if len(lines[-1]) + 2 + len(name) + comma <= width:
            lines[-1] += ", " + name
        else:
            lines[-1] += ","
            lines.append(name)
    return lines
