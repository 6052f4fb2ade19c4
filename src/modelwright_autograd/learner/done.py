"""The course project's definition of done, graded on a repository after the build gate:
"a clean repository, passing tests, a network that visibly learns, and the derivation
report". One row each, naming what is missing:

- tests pass: the learner's pytest run to its end in their environment (their ``.venv``'s
  Python when there is one), under the supervisor the engine runs under, in time;
- unit tests: a test function named after each operation the engine defines;
- REPORT.md: a section per operation naming it, with a formula and a derivative and no
  TODO left, a training section, about one page;
- loss curve: ``results/loss_curve.png`` and ``results/loss.csv``, whose loss falls;
- README: an install command and a test command, no TODO left;
- git history: commits, and nothing uncommitted; the three checkpoint commits are a note.

While the build gate fails, only README and git history are graded; the other rows wait.

Files are read, never run, except the tests and git, which run as the learner's code does
(``command.run_supervised``). A repository is a folder holding ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import math
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from ..files import UnreadableFile, read_bounded
from .command import run_supervised
from .report import ABSENT, FAIL, NOTE, PASS, WAIT, Report, Row
from .scalar.cases import OP_CHECKS
from .tensor.cases import OP_SPECS

CHECKPOINTS = (
    "Value class and operations",
    "backward + gradient check passes",
    "MLP trains on make_moons",
)
PAGE_WORDS = 1000  # "about one page": a page of formulas and prose, counted as wc -w does
MAX_TEXT_BYTES = 2**20  # a README, a report, a test module or a loss file
MAX_TEST_FILES = 200
GIT_TIMEOUT = 30.0
LOSS_FILE = Path("results") / "loss.csv"
LOSS_CURVE = Path("results") / "loss_curve.png"
PNG = b"\x89PNG\r\n\x1a\n"
# The rows not graded while the build gate fails, and what they say instead.
WAITING = ("tests pass", "unit tests", "REPORT.md", "loss curve")
WAITS = "waits for the build gate: run check again once it passes"
# The op each row of the gate is about (scalar and tensor rows share the labels they share).
OP_OF_ROW = {check.label: check.op for check in OP_CHECKS} | {s.label: s.op for s in OP_SPECS}
# The words that name each op in a test's name or a report's heading.
OP_WORDS = {
    "add": ("add", "addition"),
    "sub": ("sub", "subtract", "subtraction"),
    "mul": ("mul", "multiply", "multiplication"),
    "div": ("div", "divide", "division", "truediv"),
    "pow": ("pow", "power"),
    "neg": ("neg", "negate", "negation"),
    "matmul": ("matmul", "matrix_product"),
    "log_softmax": ("log_softmax", "logsoftmax"),
    "cross_entropy": ("cross_entropy", "crossentropy"),
}
INSTALL = re.compile(r"\b(uv sync|pip3? install|uv pip install|poetry install|conda install)\b")
DERIVATIVE = re.compile(r"∂|\\partial|\\frac\s*\{\s*d|\bd[A-Za-z]*\s*/\s*d[A-Za-z]|d\(.+\)/d")


def is_repository(path: Path) -> bool:
    """Whether PATH is a project whose definition of done is graded."""
    return path.is_dir() and (path / "pyproject.toml").is_file()


@dataclass
class GitState:
    """What git says of the repository, read before anything of the learner's runs."""

    problem: str = ""  # why the history cannot be judged ("" when it can)
    subjects: tuple[str, ...] = ()
    uncommitted: tuple[str, ...] = ()


def read_git(repo: Path) -> GitState:
    """The commits' subjects and the uncommitted changes, from git run under the
    supervisor (a repository's config can make git run commands)."""
    git = shutil.which("git")
    if not (repo / ".git").exists():
        return GitState("not a git repository: git init, then commit your work")
    if git is None:
        return GitState("git is not installed here, so the history cannot be read")
    log = run_supervised([git, "log", "--format=%s"], str(repo), GIT_TIMEOUT)
    if log.code != 0:
        if "does not have any commits" in log.output:
            return GitState("no commits yet: commit your work")
        return GitState(f"git log {log.how}: {_last_line(log.output)}")
    status = run_supervised([git, "status", "--porcelain"], str(repo), GIT_TIMEOUT)
    if status.code != 0:
        return GitState(f"git status {status.how}: {_last_line(status.output)}")
    return GitState(
        subjects=tuple(log.output.splitlines()),
        uncommitted=tuple(line for line in status.output.splitlines() if line.strip()),
    )


def grade_done(repo: Path, report: Report, timeout: float, git: GitState) -> list[Row]:
    """The rows of the definition of done for the repository at ``repo``, the engine's
    ops taken from the gate's ``report``. While the gate fails, the rows about the engine
    wait for it (WAITING): its tests would only fail on its TODOs, slowly, and the other
    three would repeat them; README and git, which do not depend on it, are graded."""
    if not report.passed:
        waits = [Row(name, WAIT, WAITS) for name in WAITING]
        return [*waits, check_readme(repo), *check_git(git)]
    ops = defined_ops(report)
    return [
        check_tests(repo, timeout),
        check_unit_tests(repo, ops),
        check_report(repo, ops),
        check_loss_curve(repo),
        check_readme(repo),
        *check_git(git),
    ]


def defined_ops(report: Report) -> list[str] | None:
    """The ops the engine defines (its op rows that are not ``n/a``), or None when the
    engine did not load."""
    rows = {row.name: row for row in report.rows}
    if rows.get("engine loads") is None or rows["engine loads"].status != PASS:
        return None
    return [op for label, op in OP_OF_ROW.items() if label in rows and rows[label].status != ABSENT]


def ops_named(text: str, ops: list[str]) -> set[str]:
    """The ops of ``ops`` that ``text`` (a test's name, a heading) names: as a word of
    its own (``test_mul_twice``, "Multiplication"), longer names first, so
    ``test_log_softmax`` names log_softmax and not log."""
    padded = "_" + re.sub(r"[^a-z0-9]+", "_", text.lower()) + "_"
    found = set()
    words = [(word, op) for op in ops for word in OP_WORDS.get(op, (op,))]
    for word, op in sorted(words, key=lambda pair: -len(pair[0])):
        if f"_{word}_" in padded:
            found.add(op)
            padded = padded.replace(f"_{word}_", "_")
    return found


# ---------------------------------------------------------------------- the rows
def check_tests(repo: Path, timeout: float) -> Row:
    """The learner's pytest, run to its end under the supervisor within ``timeout``, with
    the repository's ``.venv`` when it has one (``uv sync`` makes it), else this Python."""
    name = "tests pass"
    venv = repo / ".venv" / "bin" / "python"
    if venv.is_file():
        python, which = str(venv), "with .venv/bin/python"
    else:
        python, which = sys.executable, "with the Python running check (no .venv here)"
    command = [python, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]
    environment = {"PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
    ran = run_supervised(command, str(repo), timeout, environment)
    summary = _pytest_summary(ran.output)
    if "No module named pytest" in ran.output:
        text = f"pytest is not installed ({which}): uv sync, or pip install -e '.[test]'"
        return Row(name, FAIL, text)
    if ran.timed_out:
        return Row(name, FAIL, f"pytest {ran.how}, {which}; is a test stuck?")
    if ran.code == 0 and summary and "passed" in summary:
        return Row(name, PASS, f"{summary}: pytest, {which}")
    if ran.code == 5:
        return Row(name, FAIL, f"pytest collected no tests in tests/, {which}")
    failing = [line for line in ran.output.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    shown = "; ".join(line[:160] for line in failing[:3])
    more = f" and {len(failing) - 3} more" if len(failing) > 3 else ""
    text = f"pytest {ran.how}, {which}: {summary or _last_line(ran.output)}"
    return Row(name, FAIL, text + (f"; {shown}{more}" if shown else ""))


def check_unit_tests(repo: Path, ops: list[str] | None) -> Row:
    """A test in tests/ named after each of ``ops`` that does something."""
    name = "unit tests"
    if ops is None:
        return Row(name, FAIL, "not judged: the engine does not load, so its ops are unknown")
    tests = _test_functions(repo / "tests")
    named: dict[str, int] = {op: 0 for op in ops}
    for test in tests:
        for op in ops_named(test, ops):
            named[op] += 1
    missing = [op for op, count in named.items() if count == 0]
    if missing:
        text = (
            f"no test named after {', '.join(missing)} in tests/ ({len(tests)} tests there): "
            "name a test after its op (test_mul_..., test_tanh_...) and give it an assert"
        )
        return Row(name, FAIL, text)
    return Row(name, PASS, f"a test for each of the {len(ops)} ops ({len(tests)} tests in tests/)")


def check_report(repo: Path, ops: list[str] | None) -> Row:
    """REPORT.md: a section deriving each of ``ops``, a training section, one page."""
    name = "REPORT.md"
    text = _read(_named(repo, "REPORT.md"))
    if text is None:
        return Row(name, FAIL, "no REPORT.md: the one-page report deriving each op's backward")
    if ops is None:
        return Row(name, FAIL, "not judged: the engine does not load, so its ops are unknown")
    sections = _sections(text)
    why: dict[str, list[str]] = {}
    for op in ops:
        mine = [body for heading, body in sections if op in _heading_ops(heading, ops)]
        if not mine:
            why.setdefault("no section names", []).append(op)
        elif all("TODO" in body for body in mine):
            why.setdefault("the backward is still a TODO for", []).append(op)
        elif not any("=" in body and DERIVATIVE.search(body) for body in mine):
            why.setdefault("no formula with a derivative (dc/da, ∂L/∂a) for", []).append(op)
    problems = [f"{reason} {', '.join(names)}" for reason, names in why.items()]
    training = [body for heading, body in sections if "train" in heading.lower()]
    if not training or all("TODO" in b or len(b.split()) < 20 for b in training):
        problems.append("a training section (the dataset, the loss curve, a surprise)")
    words = len(text.split())
    if words > PAGE_WORDS:
        problems.append(f"{words:,} words: about one page is at most {PAGE_WORDS:,}")
    if problems:
        return Row(name, FAIL, "; ".join(problems))
    return Row(name, PASS, f"derives all {len(ops)} ops and describes the training ({words} words)")


def check_loss_curve(repo: Path) -> Row:
    """train.py's picture of the loss, and its numbers falling to half or less."""
    name = "loss curve"
    curve = repo / LOSS_CURVE
    text = _read(repo / LOSS_FILE)
    if text is None:
        return Row(name, FAIL, f"no {LOSS_FILE}: run python train.py (it writes the curve there)")
    losses = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        try:
            losses.append(float(cells[-1]))
        except ValueError:
            continue  # the header
    if len(losses) < 2 or not all(math.isfinite(x) for x in losses):
        return Row(name, FAIL, f"{LOSS_FILE} holds no run of finite losses (epoch,loss lines)")
    try:
        is_png = read_bounded(curve, 64 * 2**20)[:8] == PNG
    except (OSError, UnreadableFile):
        is_png = False
    if not is_png:
        return Row(name, FAIL, f"no picture at {LOSS_CURVE}: run python train.py")
    falls = f"loss {losses[0]:.4g} -> {losses[-1]:.4g} over {len(losses)} epochs"
    if not losses[-1] <= losses[0] / 2:
        return Row(name, FAIL, f"{falls}: it should at least halve for a network that learns")
    return Row(name, PASS, f"{LOSS_CURVE}; {falls} ({LOSS_FILE})")


def check_readme(repo: Path) -> Row:
    """README.md: how to install the project and run its tests, no TODO left."""
    name = "README"
    text = _read(_named(repo, "README.md"))
    if text is None:
        return Row(name, FAIL, "no README.md: how a stranger installs it and runs the tests")
    missing = []
    if not INSTALL.search(text):
        missing.append("how to install (uv sync, or pip install -e '.[test]')")
    if not re.search(r"\bpytest\b", text):
        missing.append("how to run the tests (pytest)")
    todo = next((i for i, line in enumerate(text.splitlines(), 1) if "TODO" in line), None)
    if todo is not None:
        missing.append(f"no TODO left (line {todo} has one)")
    if missing:
        return Row(name, FAIL, "missing: " + "; ".join(missing))
    return Row(name, PASS, "says how to install it and run the tests")


def check_git(git: GitState) -> list[Row]:
    """The history row (commits, nothing uncommitted) and the checkpoints' note."""
    name = "git history"
    if git.problem:
        return [Row(name, FAIL, git.problem)]
    rows = []
    if git.uncommitted:
        shown = ", ".join(line.strip() for line in git.uncommitted[:4])
        more = f" and {len(git.uncommitted) - 4} more" if len(git.uncommitted) > 4 else ""
        rows.append(Row(name, FAIL, f"uncommitted: {shown}{more}; commit them (or ignore them)"))
    else:
        rows.append(Row(name, PASS, "the work is committed: git status is clean"))
    subjects = [s.strip().lower() for s in git.subjects]
    present = [c for c in CHECKPOINTS if any(c.lower() in s for s in subjects)]
    absent = [c for c in CHECKPOINTS if c not in present]
    text = "all three present" if not absent else "not found: " + "; ".join(absent)
    rows.append(Row("checkpoints", NOTE, f"the course's checkpoint commits: {text}"))
    return rows


# ---------------------------------------------------------------------- reading
def _named(repo: Path, name: str) -> Path:
    """The file of ``repo`` called ``name`` in any case (``Readme.md``), or ``name``."""
    try:
        found = sorted(p for p in repo.iterdir() if p.name.lower() == name.lower())
    except OSError:
        found = []
    return found[0] if found else repo / name


def _read(path: Path) -> str | None:
    try:
        return read_bounded(path, MAX_TEXT_BYTES).decode("utf-8", "replace")
    except (OSError, UnreadableFile):
        return None


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def _pytest_summary(output: str) -> str:
    """pytest's last line ("8 passed, 1 skipped in 2.1s"), its '=' and time dropped."""
    pattern = r"((\d+ \w+)(, \d+ \w+)*) in [\d.]+s"
    found = re.findall(pattern, output)
    return found[-1][0] if found else ""


def _test_functions(folder: Path) -> list[str]:
    """The names of the test functions in ``folder``'s test modules that do something
    (not only ``pass``, ``...``, a skip or ``raise NotImplementedError``); a method's name
    is prefixed with its class's (``TestMul.test_twice`` is test_mul_test_twice)."""
    names: list[str] = []
    files = sorted(folder.rglob("test_*.py")) + sorted(folder.rglob("*_test.py"))
    for path in files[:MAX_TEST_FILES]:
        source = _read(path)
        if source is None:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", node.name).lower()
                names += [f"{prefix}_{f.name}" for f in _tests_in(node.body)]
            names += [f.name for f in _tests_in([node])]
    return names


def _tests_in(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    return [
        node
        for node in body
        if isinstance(node, functions) and node.name.startswith("test") and _does_something(node)
    ]


def _does_something(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for statement in function.body:
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring, or ...
        text = ast.unparse(statement)
        if "NotImplementedError" in text or "skip(" in text:
            continue
        return True
    return False


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, the text under it up to the next heading) for every Markdown heading."""
    parts = re.split(r"^(#{1,6}[ \t].*)$", text, flags=re.M)
    return [(parts[i].lstrip("#").strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def _heading_ops(heading: str, ops: list[str]) -> set[str]:
    """The ops a heading names: by a word ("Multiplication", "tanh") or by the gate's
    label of it ("a * b"), leaving out what is in brackets ("Subtraction (from addition)")."""
    plain = re.sub(r"\([^)]*\)", " ", heading)
    symbolic = {label: op for label, op in OP_OF_ROW.items() if not label.isidentifier()}
    found = {op for label, op in symbolic.items() if op in ops and label in plain}
    return found | ops_named(plain, ops)
