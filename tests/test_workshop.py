"""The workshop (issue 43): `init` writes a repository in the course's shape, and `check`
finds the engine in a repository of the learner's own shape."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from modelwright_autograd.cli import main
from modelwright_autograd.learner.done import (
    check_git,
    check_loss_curve,
    check_readme,
    check_report,
    check_tests,
    check_unit_tests,
    defined_ops,
    grade_done,
    is_repository,
    ops_named,
    read_git,
)
from modelwright_autograd.learner.locate import LocateError, locate
from modelwright_autograd.learner.report import ABSENT, FAIL, NOTE, PASS, WAIT, Report, Row
from modelwright_autograd.learner.scalar.cases import OP_CHECKS
from modelwright_autograd.learner.starter import project_names, write_starter

ENGINES = Path(__file__).parent / "learner_engines"
SOLVED = ENGINES / "solved_starter.py"
SOLVED_NN = ENGINES / "solved_nn.py"
WAITS = "waits for the build gate: run check again once it passes"
# A learner's test leaving a mark beside tests/ when it runs.
MARKS = (
    "from pathlib import Path\n\n\n"
    "def test_marks():\n    (Path(__file__).parents[1] / 'ran').touch()\n"
)


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True)


@pytest.mark.parametrize("tensor", [False, True])
def test_init_writes_a_repository_in_the_course_s_shape(tmp_path, tensor):
    repo = tmp_path / "My Engine"
    write_starter(repo, tensor=tensor)
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if ".git" not in p.parts)
    assert files == [
        ".gitignore",
        "README.md",
        "REPORT.md",
        "pyproject.toml",
        "src",
        "src/my_engine",
        "src/my_engine/__init__.py",
        "src/my_engine/engine.py",
        "src/my_engine/nn.py",
        "starter.ipynb",
        "tests",
        "tests/test_gradcheck.py",
        "tests/test_ops.py",
        "train.py",
    ]
    for path in repo.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            text = path.read_text()
            assert "{{" not in text and "mygrad" not in text, path  # every name filled in
    assert "raise NotImplementedError" in (repo / "src/my_engine/engine.py").read_text()
    assert "from my_engine.engine import" in (repo / "tests/test_gradcheck.py").read_text()
    assert "TODO: test_mul_" in (repo / "tests/test_ops.py").read_text()
    # a git repository on main with nothing committed, every file waiting to be added
    assert _git(repo, "rev-parse", "--verify", "HEAD").returncode != 0
    assert _git(repo, "symbolic-ref", "--short", "HEAD").stdout.strip() == "main"
    untracked = _git(repo, "status", "--porcelain").stdout.split("\n")
    assert "?? src/" in untracked and "?? tests/" in untracked


def test_the_pyproject_is_one_uv_and_pip_accept(tmp_path):
    """PEP 621 and PEP 735 as uv and pip read them: numpy, matplotlib and scikit-learn to
    run; pytest and torch (pinned as this project pins it) in the test extra, which the
    dev group `uv sync` installs by default names; pytest finds the package in src/."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader")
    write_starter(tmp_path / "mine")
    data = tomllib.loads((tmp_path / "mine" / "pyproject.toml").read_text())
    project = data["project"]
    assert project["name"] == "mine" and project["version"] == "0.1.0"
    assert project["readme"] == "README.md" and project["requires-python"] == ">=3.10"
    runtime = {Requirement(r).name for r in project["dependencies"]}
    assert runtime == {"numpy", "matplotlib", "scikit-learn"}
    test = [Requirement(r) for r in project["optional-dependencies"]["test"]]
    assert {r.name: str(r.specifier) for r in test} == {"pytest": ">=7", "torch": "==2.13.0"}
    ours = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert "torch==2.13.0" in ours["project"]["optional-dependencies"]["test"]
    dev = [Requirement(r) for r in data["dependency-groups"]["dev"]]
    assert [(r.name, r.extras) for r in dev] == [("mine", {"test"})]
    assert data["build-system"]["build-backend"] == "setuptools.build_meta"
    assert data["tool"]["setuptools"]["packages"]["find"]["where"] == ["src"]
    assert data["tool"]["pytest"]["ini_options"]["pythonpath"] == ["src"]


@pytest.mark.slow
def test_pip_installs_the_repository_editable_without_the_network(tmp_path):
    repo = tmp_path / "mine"
    write_starter(repo)
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip, "-e", str(repo)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where = subprocess.run(
        [python, "-c", "import mine, mine.engine; print(mine.engine.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(repo / "src" / "mine" / "engine.py"), where.stderr


@pytest.mark.parametrize(
    ("folder", "names"),
    [
        ("modelwright-autograd", ("modelwright-autograd-engine", "modelwright_autograd_engine")),
        ("json", ("json-engine", "json_engine")),
        ("2048", ("my-engine", "my_engine")),
        ("class", ("my-engine", "my_engine")),
        ("Tiny.Grad", ("tiny-grad", "tiny_grad")),
    ],
)
def test_the_package_is_named_after_the_folder_and_shadows_nothing(folder, names):
    assert project_names(Path("/somewhere") / folder) == names


def test_init_says_where_the_engine_is(tmp_path, capsys):
    assert main(["init", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("wrote .git, .gitignore, README.md, REPORT.md, pyproject.toml, src")
    assert out[-1].startswith("next: fill in the TODOs of src/mine/engine.py, then run:")


# ------------------------------------------------------------------ finding the engine


def _package(root: Path, name: str, nn_module: str = "nn.py") -> Path:
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text(SOLVED.read_text())
    nn = SOLVED_NN.read_text().replace("from engine import", "from .engine import")
    (package / nn_module).write_text(nn)
    return package


def test_a_package_at_the_top_of_a_repository_is_found(tmp_path):
    _package(tmp_path, "tinygrad_mine", nn_module="network.py")
    (tmp_path / "train.py").write_text("from tinygrad_mine.engine import Value\n")
    target = locate(tmp_path)
    assert (target.sys_path, target.value_module) == (str(tmp_path), "tinygrad_mine.engine")
    assert target.mlp_module == "tinygrad_mine.network"  # the MLP found beside, by its class


def test_a_package_defining_value_in_its_init_is_imported_by_its_name(tmp_path):
    package = tmp_path / "src" / "onefile"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(SOLVED.read_text())
    assert locate(tmp_path).value_module == "onefile"


def test_two_engines_on_one_level_are_refused_naming_both(tmp_path, capsys):
    _package(tmp_path / "src", "first")
    _package(tmp_path / "src", "second")
    with pytest.raises(LocateError, match="two engines: src/first and src/second"):
        locate(tmp_path)
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"check {tmp_path / 'src' / 'first'}" in err
    assert locate(tmp_path / "src" / "second").value_module == "second.engine"


def test_a_scalar_engine_beside_a_tensor_engine_is_taken(tmp_path):
    _package(tmp_path / "src", "scalar")
    tensor = tmp_path / "src" / "arrays"
    tensor.mkdir()
    (tensor / "engine.py").write_text((ENGINES / "tensor" / "solved_starter.py").read_text())
    assert locate(tmp_path).value_module == "scalar.engine"


def test_the_flat_folder_of_the_older_init_is_found_as_before(tmp_path):
    (tmp_path / "engine.py").write_text(SOLVED.read_text())
    (tmp_path / "nn.py").write_text(SOLVED_NN.read_text())
    target = locate(tmp_path)
    assert (target.value_module, target.mlp_module) == ("engine", "nn")


# ------------------------------------------------------------------ the definition of done

KEPT = ENGINES / "workshop" / "solved"  # a solved repository, less its engine and git
STARTER_OPS = ["mul", "add", "pow", "neg", "sub", "div", "tanh", "relu", "exp", "log"]
LEARNER = ["-c", "user.name=A Learner", "-c", "user.email=learner@example.org"]


def solved_repository(folder: Path, commit: bool = True) -> Path:
    """The kept solved repository in ``folder``, with the solved engine and network in its
    package and (with ``commit``) the course's three checkpoint commits."""
    shutil.copytree(KEPT, folder)
    package = folder / "src" / "solved"
    (package / "engine.py").write_text(SOLVED.read_text())
    nn = SOLVED_NN.read_text().replace("from engine import", "from .engine import")
    (package / "nn.py").write_text(nn)
    if commit:
        assert _git(folder, "-c", "init.defaultBranch=main", "init", "-q").returncode == 0
        for subject, paths in [
            ("Value class and operations", ["pyproject.toml", ".gitignore", "src"]),
            ("backward + gradient check passes", ["tests"]),
            ("MLP trains on make_moons", ["."]),
        ]:
            assert _git(folder, "add", *paths).returncode == 0
            assert _git(folder, *LEARNER, "commit", "-q", "-m", subject).returncode == 0
    return folder


def gate_report(ops: list[str] = STARTER_OPS) -> Report:
    """A gate's report on an engine that loads, defines ``ops`` and passes."""
    rows = [Row("engine loads", PASS, "Value from solved.engine")]
    rows += [Row(c.label, PASS if c.op in ops else ABSENT, "") for c in OP_CHECKS]
    return Report("solved", "torch", [*rows, Row("network trains", PASS, "")])


def _done(repo: Path, ops: list[str] = STARTER_OPS) -> dict[str, Row]:
    """Every row but the tests' run (the slow tests run that), by name."""
    report = gate_report(ops)
    rows = [
        check_unit_tests(repo, defined_ops(report)),
        check_report(repo, defined_ops(report)),
        check_loss_curve(repo),
        check_readme(repo),
        *check_git(read_git(repo)),
    ]
    return {row.name: row for row in rows}


def test_the_ops_the_gate_found_are_the_ones_graded():
    assert defined_ops(gate_report()) == STARTER_OPS  # sigmoid and 2 ** a are n/a
    assert defined_ops(Report("x", "torch", [Row("engine loads", FAIL, "")])) is None


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        ("test_log_softmax_of_a_row", {"log_softmax"}),
        ("test_log_of_one", {"log"}),
        ("Multiplication", {"mul"}),
        ("test_matmul_shapes", {"matmul"}),
        ("test_summary_of_everything", set()),
        ("test_mul_and_add", {"mul", "add"}),
    ],
)
def test_an_op_is_named_by_a_word_of_its_own(text, ops):
    everything = [*STARTER_OPS, "log_softmax", "matmul", "sum"]
    assert ops_named(text, everything) == ops


def test_the_solved_repository_meets_every_row(tmp_path):
    rows = _done(solved_repository(tmp_path / "solved"))
    for name in ("unit tests", "REPORT.md", "loss curve", "README", "git history"):
        assert rows[name].status == PASS, (name, rows[name].diagnosis)
    assert rows["unit tests"].diagnosis == "a test for each of the 10 ops (14 tests in tests/)"
    assert rows["loss curve"].diagnosis.startswith("results/loss_curve.png; loss 0.46")
    assert rows["git history"].diagnosis == "the work is committed: git status is clean"
    assert rows["checkpoints"].status == NOTE
    assert rows["checkpoints"].diagnosis.endswith("all three present")


def _drop(path: Path, text: str) -> None:
    content = path.read_text()
    assert text in content, text
    path.write_text(content.replace(text, ""))


def _section(name: str) -> str:
    report = (KEPT / "REPORT.md").read_text()
    start = report.index(f"## {name}")
    return report[start : report.index("\n## ", start + 1) + 1]


# piece -> (how the copy breaks it, the row, words its diagnosis must hold)
MISSING = {
    "a unit test": (
        lambda r: (r / "tests/test_ops.py").write_text(
            (r / "tests/test_ops.py").read_text().replace("def test_tanh_", "def test_t_")
        ),
        "unit tests",
        "no test named after tanh in tests/",
    ),
    "a stub of a unit test": (
        lambda r: (r / "tests/test_ops.py").write_text(
            (r / "tests/test_ops.py").read_text().replace("def test_exp_", "def test_e_")
            + "\n\ndef test_exp_todo():\n    pass\n"
        ),
        "unit tests",
        "no test named after exp in tests/",
    ),
    "an op's section": (
        lambda r: _drop(r / "REPORT.md", _section("relu")),
        "REPORT.md",
        "no section names relu",
    ),
    "a derivation": (
        lambda r: (r / "REPORT.md").write_text(
            (r / "REPORT.md").read_text().replace(_section("log"), "## log\n\nBackward: TODO\n\n")
        ),
        "REPORT.md",
        "the backward is still a TODO for log",
    ),
    "a derivative": (
        lambda r: (r / "REPORT.md").write_text(
            (r / "REPORT.md")
            .read_text()
            .replace(_section("exp"), "## exp\n\nForward: $c = e^a$. Backward: the same.\n\n")
        ),
        "REPORT.md",
        "no formula with a derivative (dc/da, ∂L/∂a) for exp",
    ),
    "the training section": (
        lambda r: _drop(r / "REPORT.md", "## Training"),
        "REPORT.md",
        "a training section",
    ),
    "one page": (
        lambda r: (r / "REPORT.md").write_text((r / "REPORT.md").read_text() * 2),
        "REPORT.md",
        "1,136 words: about one page is at most 1,000",
    ),
    "the loss numbers": (
        lambda r: (r / "results/loss.csv").unlink(),
        "loss curve",
        "no results/loss.csv: run python train.py",
    ),
    "the loss curve": (
        lambda r: (r / "results/loss_curve.png").unlink(),
        "loss curve",
        "no picture at results/loss_curve.png",
    ),
    "a falling loss": (
        lambda r: (r / "results/loss.csv").write_text("epoch,loss\n1,0.5\n2,0.4\n3,0.45\n"),
        "loss curve",
        "loss 0.5 -> 0.45 over 3 epochs: it should at least halve",
    ),
    "the install line": (
        lambda r: _drop(
            r / "README.md",
            'uv sync                       # or, without uv: pip install -e ".[test]"',
        ),
        "README",
        "missing: how to install (uv sync, or pip install -e '.[test]')",
    ),
    "the test command": (
        lambda r: (r / "README.md").write_text(
            (r / "README.md").read_text().replace("pytest", "tests")
        ),
        "README",
        "how to run the tests (pytest)",
    ),
    "the README's TODOs filled in": (
        lambda r: (r / "README.md").write_text(
            "# solved\n\nTODO: what this is\n" + (r / "README.md").read_text()
        ),
        "README",
        "no TODO left (line 3 has one)",
    ),
    "a commit of everything": (
        lambda r: (r / "notes.txt").write_text("to do\n"),
        "git history",
        "uncommitted: ?? notes.txt",
    ),
    "the repository": (
        lambda r: shutil.rmtree(r / ".git"),
        "git history",
        "not a git repository: git init, then commit your work",
    ),
}


@pytest.mark.parametrize("piece", list(MISSING))
def test_a_repository_missing_a_piece_fails_the_row_naming_it(tmp_path, piece):
    repo = solved_repository(tmp_path / "solved")
    breaks, row, words = MISSING[piece]
    breaks(repo)
    if row != "git history":  # the rest commit what they broke
        _git(repo, "add", "-A")
        _git(repo, *LEARNER, "commit", "-q", "-m", f"without {piece}")
    rows = _done(repo)
    assert rows[row].status == FAIL and words in rows[row].diagnosis, rows[row].diagnosis
    others = [r for name, r in rows.items() if name != row and r.status == FAIL]
    assert others == [], others  # the one piece, and nothing else


def test_the_checkpoint_commits_are_advice_not_a_failure(tmp_path):
    repo = solved_repository(tmp_path / "solved", commit=False)
    assert _git(repo, "init", "-q").returncode == 0
    _git(repo, "add", ".")
    assert _git(repo, *LEARNER, "commit", "-q", "-m", "everything at once").returncode == 0
    rows = _done(repo)
    assert rows["git history"].status == PASS
    assert rows["checkpoints"].status == NOTE
    assert rows["checkpoints"].diagnosis.endswith(
        "not found: Value class and operations; backward + gradient check passes; "
        "MLP trains on make_moons"
    )


def _small_repository(folder: Path, test: str) -> Path:
    """A repository whose one test module is ``test`` (no torch: a quick pytest run)."""
    (folder / "tests").mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "small"\nversion = "0.1.0"\n')
    (folder / "tests" / "test_small.py").write_text(test)
    return folder


def test_the_learner_s_tests_are_run_and_a_failure_is_named(tmp_path):
    passing = _small_repository(tmp_path / "passing", "def test_one():\n    assert 1 + 1 == 2\n")
    row = check_tests(passing, 60.0)
    assert row.status == PASS and row.diagnosis.startswith("1 passed: pytest, with the Python")
    failing = _small_repository(
        tmp_path / "failing",
        "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert 2 * 2 == 5\n",
    )
    row = check_tests(failing, 60.0)
    assert row.status == FAIL, row.diagnosis
    assert "1 failed, 1 passed" in row.diagnosis
    assert "FAILED tests/test_small.py::test_two" in row.diagnosis
    assert not (failing / ".pytest_cache").exists()  # check writes nothing into the repository
    assert not list(failing.rglob("__pycache__"))


def test_a_test_that_hangs_is_stopped_with_everything_it_started(tmp_path):
    hangs = _small_repository(
        tmp_path / "hangs",
        "import subprocess, sys, time\n\n\ndef test_waits():\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "    time.sleep(600)\n",
    )
    row = check_tests(hangs, 3.0)
    assert row.status == FAIL and "did not finish in 3 s (stopped)" in row.diagnosis
    assert "is a test stuck?" in row.diagnosis
    left = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True)
    assert left.stdout == ""  # the test's own child went with it


def test_a_flat_folder_of_the_older_init_gets_no_definition_of_done(tmp_path):
    (tmp_path / "engine.py").write_text(SOLVED.read_text())
    assert not is_repository(tmp_path)
    write_starter(tmp_path / "repo")
    assert is_repository(tmp_path / "repo")


def test_the_report_ends_with_the_definition_of_done(tmp_path):
    report = gate_report()
    report.done = [Row("tests pass", PASS, "9 passed"), Row("README", FAIL, "missing: x")]
    text = report.to_text().splitlines()
    assert text[-2].startswith("BUILD GATE PASSED")  # the gate's own line, unchanged
    assert text[-1] == "DEFINITION OF DONE: not yet: README"
    data = json.loads(report.to_json())
    assert data["verdict"] == "BUILD GATE PASSED" and data["passed"] is True
    assert data["definition_of_done"]["met"] is False
    report.done[1] = Row("README", PASS, "says how")
    assert report.to_text().splitlines()[-1] == "DEFINITION OF DONE: met"
    report.rows[-1] = Row("network trains", FAIL, "")
    assert report.done_verdict == "DEFINITION OF DONE: not yet: the build gate"
    passing = gate_report()  # a row that waits is not a pass, whatever else passes
    passing.done = [Row("tests pass", WAIT, WAITS), Row("README", PASS, "says how")]
    assert passing.passed and not passing.done_met


def test_the_learner_s_tests_wait_for_the_build_gate(tmp_path):
    """While the gate fails, the learner's tests do not run: the rows about the engine wait
    (one line), README and git are graded, and the definition of done is not met. Once the
    gate passes, the tests run."""
    repo = _small_repository(tmp_path / "marks", MARKS)
    failing = gate_report()
    failing.rows[-1] = Row("network trains", FAIL, "not done yet: TODO 14: train")
    failing.done = grade_done(repo, failing, 60.0, read_git(repo))
    assert not (repo / "ran").exists()
    waiting = [row.name for row in failing.done if (row.status, row.diagnosis) == (WAIT, WAITS)]
    assert waiting == ["tests pass", "unit tests", "REPORT.md", "loss curve"]
    assert [(row.name, row.status) for row in failing.done[4:]] == [
        ("README", FAIL),
        ("git history", FAIL),
    ]
    assert not failing.done_met
    verdict = "DEFINITION OF DONE: not yet: the build gate, README, git history"
    assert failing.to_text().splitlines()[-1] == verdict
    shown = f"wait  tests pass, unit tests, REPORT.md, loss curve\n      {WAITS}\n"
    assert shown in failing.to_text()
    passing = gate_report()
    passing.done = grade_done(repo, passing, 60.0, read_git(repo))
    assert (repo / "ran").exists()
    assert passing.done[0].status == PASS and passing.done[0].diagnosis.startswith("1 passed")
    assert WAIT not in {row.status for row in passing.done}


@pytest.mark.slow
def test_a_solved_repository_is_done_and_an_untouched_one_names_every_piece(tmp_path, capsys):
    """The whole check, as a learner runs it: the gate, then every row of the definition
    of done; the solved repository's tests (the gradient check against PyTorch among them)
    run in the sandbox."""
    solved = solved_repository(tmp_path / "solved")
    assert main(["check", "--timeout", "30", str(solved)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[-2].startswith("BUILD GATE PASSED  (")
    assert text[-1] == "DEFINITION OF DONE: met"
    tests = "pass  tests pass    19 passed: pytest, with the Python running check (no .venv"
    assert any(line.startswith(tests) for line in text), text
    untouched = tmp_path / "untouched"
    write_starter(untouched)
    (untouched / "tests" / "test_marks.py").write_text(MARKS)
    assert main(["check", "--json", str(untouched)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"].startswith("not yet: ")  # the gate's words, as before
    done = data["definition_of_done"]
    assert done["verdict"] == "DEFINITION OF DONE: not yet: the build gate, README, git history"
    rows = {row["name"]: (row["status"], row["diagnosis"]) for row in done["checks"]}
    for name in ("tests pass", "unit tests", "REPORT.md", "loss curve"):
        assert rows[name] == (WAIT, WAITS)
    assert not (untouched / "ran").exists()  # the learner's tests waited for the gate
    assert rows["git history"] == (FAIL, "no commits yet: commit your work")


@pytest.mark.slow
def test_the_train_script_writes_a_loss_curve_that_falls(tmp_path):
    repo = solved_repository(tmp_path / "solved", commit=False)
    shutil.rmtree(repo / "results")
    done = subprocess.run(
        [sys.executable, "train.py"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo / "src"), "MPLBACKEND": "Agg"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    row = check_loss_curve(repo)
    assert row.status == PASS, row.diagnosis
    assert (repo / "results" / "decision_boundary.png").read_bytes()[:4] == b"\x89PNG"
    ran, kept = ((folder / "results" / "loss.csv").read_text() for folder in (repo, KEPT))
    ran_losses, kept_losses = ([float(x.split(",")[1]) for x in t.split()[1:]] for t in (ran, kept))
    # the kept run is this one (a set's order moves a sum's rounding in the last digits)
    assert ran_losses == pytest.approx(kept_losses, rel=1e-6)


def test_the_tests_run_with_the_repository_s_own_environment(tmp_path):
    repo = _small_repository(
        tmp_path / "own", "import sys\n\n\ndef test_where():\n    print(sys.prefix)\n"
    )
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(sys.executable)  # as uv sync leaves one
    row = check_tests(repo, 60.0)
    assert row.status == PASS and row.diagnosis == "1 passed: pytest, with .venv/bin/python"


@pytest.mark.slow
def test_the_tensor_repository_s_tests_and_train_script_run_on_the_solved_engine(tmp_path):
    """init --tensor's gradient check (against PyTorch) passes on the solved tensor engine,
    and its train.py writes a loss that falls."""
    repo = tmp_path / "arrays"
    write_starter(repo, tensor=True)
    engine, nn = (ENGINES / "tensor" / "solved_starter.py").read_text().split("\nclass Module:", 1)
    (repo / "src" / "arrays" / "engine.py").write_text(engine)
    nn = "import numpy as np\n\nfrom .engine import Tensor\n\n\nclass Module:" + nn
    (repo / "src" / "arrays" / "nn.py").write_text(nn)
    row = check_tests(repo, 300.0)
    assert row.status == PASS and row.diagnosis.startswith("8 passed"), row.diagnosis
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, "train.py"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    row = check_loss_curve(repo)
    assert row.status == PASS, row.diagnosis


def test_a_test_class_named_after_an_op_counts_for_it(tmp_path):
    repo = _small_repository(
        tmp_path / "classes",
        "class TestTanh:\n    def test_at_zero(self):\n        assert 0 == 0\n\n\n"
        "class TestRelu:\n    def test_later(self):\n        pass\n",
    )
    row = check_unit_tests(repo, ["tanh", "relu"])
    assert row.status == FAIL and row.diagnosis.startswith("no test named after relu in tests/")


def test_a_readme_and_report_are_found_in_any_case(tmp_path):
    repo = solved_repository(tmp_path / "solved", commit=False)
    (repo / "README.md").rename(repo / "Readme.md")
    (repo / "REPORT.md").rename(repo / "report.md")
    assert check_readme(repo).status == PASS
    assert check_report(repo, STARTER_OPS).status == PASS
