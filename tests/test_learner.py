"""`modelwright-autograd init` and `check`: the starter, and the grader on real engines.

Each engine of tests/learner_engines/variants.py is the solved starter with one classic bug
(beside it, files of engines that hang, crash, recurse or do not import); each, written out
as a file, must fail with its own diagnosis. micrograd 0.1.0, this project's own Value and
the solved starter must pass. The engines are graded in parallel (each in its own child
process) once per session.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import modelwright_autograd
import modelwright_autograd.learner
from modelwright_autograd import GradcheckError, gradcheck
from modelwright_autograd.cli import main
from modelwright_autograd.learner import gradcheck_random
from modelwright_autograd.learner.child import EngineProcess
from modelwright_autograd.learner.locate import locate
from modelwright_autograd.learner.report import FAIL, NOTE
from modelwright_autograd.learner.scalar.cases import BEST_LINE, TRAIN_TARGET
from modelwright_autograd.learner.scalar.grader import grade
from modelwright_autograd.learner.scalar.oracle import (
    OracleError,
    choose_oracle,
    close,
    finite_difference_oracle,
    torch_oracle,
)
from modelwright_autograd.learner.scalar.programs import OPS, random_programs
from modelwright_autograd.learner.starter import ENTRIES, project_names, write_starter
from tests.learner_engines import variants
from tests.learner_engines.write import source, write

ENGINES = Path(__file__).parent / "learner_engines"
SOLVED = ENGINES / "solved_starter.py"  # the starter's engine.py with every TODO filled in
TIMEOUT = 2.0  # seconds per check for the hanging engine: stopped twice, then given up
CALM = 15.0  # seconds per check for every other engine: room for a loaded machine


def _words(words: str, path: Path) -> str:
    """``words`` with each {at:TEXT} made NAME.py:N, the line of the engine at ``path``
    holding TEXT."""
    lines = path.read_text().splitlines()
    return re.sub(
        r"\{at:(.+?)\}",
        lambda at: f"{path.name}:{next(i for i, line in enumerate(lines, 1) if at[1] in line)}",
        words,
    )


# engines of their own, files in tests/learner_engines/ -> (the row that must fail, words)
HOSTILE = {
    "hangs": ("seed", f"did not finish in {TIMEOUT:g} s"),
    "recurses_forever": ("a * b", "RecursionError"),
    "crashes": ("seed", "killed by SIGSEGV"),
    "eats_memory": ("seed", "MemoryError"),
    "does_not_import": ("engine loads", "ModuleNotFoundError: No module named"),
    "no_value": ("engine loads", "has no class Value"),
    "exits_on_import": ("engine loads", "sys.exit(0)"),
}
# engine -> (the row that must fail, words its diagnosis must contain)
BROKEN = {name: (row, words) for name, (_, row, words) in variants.BUGS.items()} | HOSTILE
ONE_BUG = list(variants.BUGS)
SOLVED_NN = ENGINES / "solved_nn.py"  # the starter's nn.py with every TODO filled in


def _line(text: str) -> int:
    """The number of the line of solved_nn.py holding ``text``."""
    lines = SOLVED_NN.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


# network bug -> (the line of solved_nn.py, what it becomes, the row that fails, its words)
NETWORK_BUGS = {
    "zero_grad_does_nothing": (
        "            p.grad = 0.0",
        "            p.grad == 0.0  # noqa: B015",
        "zero_grad()",
        f"MLP.zero_grad (nn.py:{_line('def zero_grad')}) left 41 of 41 grads",
    ),
    "linear_neuron": (
        "        return act.tanh() if self.nonlin else act",
        "        return act",
        "network bends",
        f"no nonlinearity anywhere. Neuron.__call__ (nn.py:{_line('def __call__')}) must apply",
    ),
    "bias_not_in_parameters": (
        "        return [*self.w, self.b]",
        "        return self.w",
        "parameters()",
        f"Neuron.parameters (nn.py:{_line('return [*self.w, self.b]') - 1}) returns 3 Values "
        "for Neuron(3); 3 weights and a bias make 4: one per neuron is missing. Is the bias "
        "left out?",
    ),
    "shared_weight": (
        "        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]",
        "        self.w = [Value(random.uniform(-1, 1))] * nin",
        "parameters()",
        "Neuron(3).parameters() lists 4 Values but only 2 distinct objects",
    ),
    "parameters_are_copies": (
        "        return [*self.w, self.b]",
        "        return [Value(p.data) for p in [*self.w, self.b]]",
        "parameters()",
        f"Neuron.parameters (nn.py:{_line('return [*self.w, self.b]') - 1}) returns new Values "
        "on each call: copies",
    ),
    "weights_by_data": (
        "        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)",
        "        act = sum((wi.data * xi for wi, xi in zip(self.w, x)), self.b)",
        "network gradients",
        "those are 0. Does Neuron.__call__ use each weight's Value (not its .data)",
    ),
    "layer_repeats_neuron": (
        "        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]",
        "        self.neurons = [Neuron(nin, **kwargs)] * nout",
        "parameters()",
        "Layer(3, 4).parameters() lists 16 Values but only 4 distinct objects: Layer's neurons "
        "are one object repeated (Layer(3, 4) holds 4 Neurons that are 1 object(s); the "
        "Neuron's own Values are distinct). [Neuron(...)] * n is n references to one Neuron, so "
        "they compute and train as one: make each, [Neuron(...) for _ in range(n)], in "
        f"Layer.__init__ (nn.py:{_line('self.neurons = ') - 1})",
    ),
    "relu_on_the_last_layer": (
        "        return act.tanh() if self.nonlin else act",
        "        return act.relu()",
        "network trains",
        "accuracy 50%; the output is exactly 0 for 100 of the 100 points: a relu on the last "
        "layer? Where it gives 0 it passes no gradient. Neuron.__call__ (nn.py:"
        f"{_line('def __call__')}) must leave the last layer linear (nonlin=False)",
    ),
    "relu_dead_units": (  # relu units whose bias starts at -0.5: many never see an input above 0
        "        self.b = Value(0.0)\n        self.nonlin = nonlin\n\n    def __call__(self, x):\n"
        "        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)\n"
        "        return act.tanh() if self.nonlin else act",
        "        self.b = Value(-0.5)\n        self.nonlin = nonlin\n\n    def __call__(self, x):\n"
        "        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)\n"
        "        return act.relu() if self.nonlin else act",
        "network trains",
        "58 of the 105 parameters got gradient 0 at every step: they never train",
    ),
    "weights_start_at_zero": (
        "        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]",
        "        self.w = [Value(0.0) for _ in range(nin)]",
        "network bends",
        "MLP(2, [8, 8, 1]) gives 0 for every input: its output does not depend on x (flat, not "
        "bent). Do the weights all start at 0",
    ),
    "bias_default_argument": (  # every Neuron's bias is the one Value made when def ran
        "    def __init__(self, nin, nonlin=True):\n"
        "        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]\n"
        "        self.b = Value(0.0)",
        "    def __init__(self, nin, nonlin=True, b=Value(0.0)):\n"
        "        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]\n"
        "        self.b = b",
        "parameters()",
        "Layer(3, 4).parameters() lists 16 Values but only 13 distinct objects: its 4 Neurons "
        "are distinct objects, but they share Values: a Value made once and given to every "
        "Neuron. A default argument, such as b=Value(0.0), is made once",
    ),
    "layer_returns_list": (  # issue 39: check passed, the notebook's loop raised
        "        return out[0] if len(out) == 1 else out",
        "        return out",
        "network trains",
        "MLP(2, [8, 8, 1])(x) returns a list of 1, not a Value: the starter notebook's "
        "training loop, (model(x) - y) ** 2, raises TypeError on it",
    ),
    "mlp_skips_last_layer": (
        "        return [p for layer in self.layers for p in layer.parameters()]",
        "        return [p for layer in self.layers[:-1] for p in layer.parameters()]",
        "parameters()",
        f"MLP.parameters (nn.py:{_line('for layer in self.layers for p') - 1}) returns 36 "
        "Values for MLP(3, [4, 4, 1])",
    ),
}


@pytest.fixture(scope="session")
def oracle():
    found = torch_oracle()
    assert found is not None, "torch is a test dependency"
    return found


def _grade_all(paths, oracle):
    """Grade the engines at ``paths`` in parallel (each runs in its own child process)."""

    def one(path):
        timeout = TIMEOUT if path.stem == "hangs" else CALM
        return grade(locate(path), oracle, timeout, 120.0)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(paths, pool.map(one, paths)))


def package_of(folder: Path) -> Path:
    """Where `init` put the engine and the network of the repository in ``folder``."""
    return folder / "src" / project_names(folder)[1]


def solved_starter(folder: Path, nn: str | None = None) -> Path:
    """The starter as `init` writes it, with the solved engine.py and nn.py (or ``nn``) in
    its package: it passes the gate."""
    write_starter(folder)
    package = package_of(folder)
    (package / "engine.py").write_text(SOLVED.read_text())
    nn = SOLVED_NN.read_text() if nn is None else nn
    (package / "nn.py").write_text(nn.replace("from engine import", "from .engine import"))
    return folder


def network_bug(folder: Path, name: str) -> Path:
    """The solved starter with NETWORK_BUGS[name] planted in its nn.py."""
    line, bug, _, _ = NETWORK_BUGS[name]
    nn = SOLVED_NN.read_text()
    assert nn.count(line + "\n") == 1, name
    return solved_starter(folder, nn.replace(line + "\n", bug + "\n"))


@pytest.fixture(scope="session")
def engine_files(tmp_path_factory):
    """Every engine of tests/learner_engines/ the grader is run on, as files in one folder."""
    folder = tmp_path_factory.mktemp("engines")
    names = [*BROKEN, *variants.NOTED, *variants.WRITTEN_DIFFERENTLY]
    return {name: write(name, folder) for name in names}


@pytest.fixture(scope="session")
def broken_reports(oracle, tmp_path_factory, engine_files):
    """Every broken engine, the untouched starter, the starter with engine.py solved and
    nn.py untouched, and every network bug, graded once."""
    starter = tmp_path_factory.mktemp("starter")
    write_starter(starter)
    half = tmp_path_factory.mktemp("engine_done")
    write_starter(half)
    (package_of(half) / "engine.py").write_text(SOLVED.read_text())
    first = tmp_path_factory.mktemp("todo_1_done")
    write_starter(first)
    engine = (package_of(first) / "engine.py").read_text()
    todo = engine[engine.index("        # TODO 1: the backward pass.") :]
    todo = todo[: todo.index("\n\n") + 1]
    solved = SOLVED.read_text()
    walk = solved[solved.index("        topo, visited, stack") : solved.index("    # Built from")]
    (package_of(first) / "engine.py").write_text(engine.replace(todo, walk.rstrip() + "\n"))
    folders = {"starter": starter, "todo_1_done": first, "engine_done": half}
    for name in NETWORK_BUGS:
        folders[name] = network_bug(tmp_path_factory.mktemp("bug"), name)  # a short package
    paths = list(engine_files.values()) + list(folders.values())
    reports = _grade_all(paths, oracle)
    stems = {folder: name for name, folder in folders.items()}
    return {stems.get(path, path.stem): r for path, r in reports.items()}


def _row(report, name):
    return next(row for row in report.rows if row.name == name)


@pytest.mark.xdist_group("broken_reports")
@pytest.mark.parametrize("engine", list(BROKEN))
def test_each_broken_engine_fails_with_its_own_diagnosis(broken_reports, engine_files, engine):
    report = broken_reports[engine]
    row_name, words = BROKEN[engine]
    row = _row(report, row_name)
    assert row.status == FAIL, report.to_text()
    assert _words(words, engine_files[engine]) in row.diagnosis, report.to_text()
    assert not report.passed and report.verdict.startswith("not yet:")


@pytest.mark.xdist_group("broken_reports")
@pytest.mark.parametrize("bug", list(NETWORK_BUGS))
def test_each_network_bug_fails_with_its_own_diagnosis(broken_reports, bug):
    report = broken_reports[bug]
    _, _, row_name, words = NETWORK_BUGS[bug]
    row = _row(report, row_name)
    assert row.status == FAIL and words in row.diagnosis, report.to_text()
    engine_rows = [r for r in report.rows if r.name in ("seed", "order", "reuse", "a * b")]
    assert all(r.status == "pass" for r in engine_rows), report.to_text()


@pytest.mark.xdist_group("broken_reports")
@pytest.mark.parametrize("bug", [*ONE_BUG, *NETWORK_BUGS])
def test_one_cause_is_one_block_on_one_screen(broken_reports, bug):
    """A one-bug engine's report: one row with a reproduce block, the rows failing because
    of it one line each, and the whole text within 40 lines."""
    report = broken_reports[bug]
    blocks = [row.name for row in report.rows if row.reproduce]
    assert len(blocks) == 1, (blocks, report.to_text())
    for row in report.rows:
        if row.status == FAIL and not row.reproduce:
            assert row.diagnosis.startswith("fails because '"), report.to_text()
    assert len(report.to_text().splitlines()) <= 40, report.to_text()


@pytest.mark.xdist_group("broken_reports")
def test_a_correct_engine_written_differently_passes_every_check(broken_reports):
    report = broken_reports["solved_differently"]  # _prev a list, int grads, its own -
    assert report.failed == 0, report.to_text()
    assert _row(report, "order").status == "pass"
    report = broken_reports["solved_own_rules"]  # own - / and neg rules, Kahn's walk
    assert report.failed == 0, report.to_text()
    assert _row(report, "a / b").status == "pass"
    assert _row(report, "two backward() calls").status == NOTE


def test_each_broken_engine_is_the_solved_starter_with_one_small_change():
    solved = SOLVED.read_text().splitlines()
    for name in ONE_BUG:
        broken = source(name).splitlines()
        changed = [
            line
            for line in difflib.unified_diff(solved, broken, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        assert 0 < len(changed) <= 40, (name, changed)
    assert len(ONE_BUG) >= 33


@pytest.mark.xdist_group("broken_reports")
def test_the_classic_bugs_name_the_right_place(broken_reports):
    # a bug's own row fails; the rows it cannot touch still pass
    assert _row(broken_reports["overwrite_mul"], "a * b").status == "pass"
    assert _row(broken_reports["tanh_from_input"], "a * b").status == "pass"
    assert _row(broken_reports["relu_at_zero"], "tanh").status == "pass"
    # no-seed and a leaf's _backward are named as the cause on the op rows too
    assert _row(broken_reports["no_seed"], "a + b").diagnosis == "fails because 'seed' fails"
    leaf = _row(broken_reports["leaf_backward"], "a * b").diagnosis
    assert leaf == "fails because 'leaf _backward' fails"
    # a sort that is not a reverse topological order is the cause of the op rows' failures
    for engine in ("forward_order", "preorder_sort"):
        assert _row(broken_reports[engine], "a * b").diagnosis == "fails because 'order' fails"


@pytest.mark.xdist_group("broken_reports")
def test_the_note_on_two_backward_calls_says_what_torch_does(broken_reports):
    """Separate graphs sharing leaves add up as torch's leaves do; one graph twice gives 18
    in a micrograd-style engine (the interior grads the first call left are pushed again)
    where torch gives 12 with retain_graph=True and raises without it."""
    import torch

    a, b = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (2.0, 3.0))
    out = (a * b) * 2
    out.backward(retain_graph=True)
    out.backward()
    assert a.grad.item() == 12.0
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out = (a * b) * 2
        out.backward()
        out.backward()
    a.grad = None
    (a * b).backward()
    (a + b).backward()
    assert a.grad.item() == 4.0
    note = _row(broken_reports["solved_differently"], "two backward() calls")
    assert note.status == NOTE, note
    assert "over calls on separate graphs, as PyTorch's leaves do" in note.diagnosis
    assert "one graph twice, (a*b)*2, gives a.grad 18 here and 12 in torch" in note.diagnosis


@pytest.mark.xdist_group("broken_reports")
def test_a_recursive_sort_is_a_note_not_a_failure(broken_reports):
    report = broken_reports["recursive_topo"]
    assert report.failed == 0, report.to_text()
    chain = _row(report, "5,000-node chain")
    assert chain.status == NOTE and "recursion limit" in chain.diagnosis
    assert "explicit stack" in chain.diagnosis


@pytest.mark.xdist_group("broken_reports")
def test_the_untouched_starter_fails_naming_its_todos(broken_reports):
    report = broken_reports["starter"]
    assert not report.passed
    assert "TODO 1: backward()" in _row(report, "seed").diagnosis
    assert "TODO 9: Neuron.__init__" in _row(report, "parameters()").diagnosis
    for row, todo in (("a + b", "TODO 2"), ("a * b", "TODO 3"), ("a ** n", "TODO 4")):
        assert todo in _row(report, row).diagnosis
    assert "TODO 5" in _row(report, "tanh").diagnosis
    assert "TODO 6" in _row(report, "relu").diagnosis
    assert "TODO 8: the backward of log" in _row(report, "log").diagnosis
    assert _row(report, "engine loads").status == "pass"


@pytest.mark.xdist_group("broken_reports")
def test_each_todo_shows_progress(broken_reports):
    """With only TODO 1 done the seed and the walk's order pass (they need no rule), and
    with engine.py done the network rows name nn.py's TODOs."""
    first = broken_reports["todo_1_done"]
    assert _row(first, "seed").status == "pass" and _row(first, "order").status == "pass"
    assert "TODO 2: the backward of a + b" in _row(first, "a + b").diagnosis
    report = broken_reports["engine_done"]
    assert report.failed > 0
    assert all(_row(report, row).status == "pass" for row in ("seed", "order", "a * b", "reuse"))
    assert "TODO 9: Neuron.__init__" in _row(report, "parameters()").diagnosis
    assert _row(report, "zero_grad()").diagnosis == "fails because 'parameters()' fails"


@pytest.mark.xdist_group("broken_reports")
def test_a_hanging_engine_is_stopped_within_the_timeouts(broken_reports):
    report = broken_reports["hangs"]
    assert report.seconds < 2 * TIMEOUT + 10
    last = report.rows[-1]
    assert last.status == FAIL and "not run: the engine hung 2 times" in last.diagnosis


def _run_block(row, cwd):
    """Run a row's reproduce lines in a fresh Python from ``cwd``: (printed words, the
    words after '# expected:')."""
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(row.reproduce)], capture_output=True, text=True, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    expected = "\n".join(row.reproduce).split("# expected:")[1].split("\n")[0]
    return done.stdout.replace(",", " ").split(), expected.replace(",", " ").split()


def _numbers(words):
    return [float(w) for w in words if w[:1].isdigit() or w[:1] == "-"]


@pytest.mark.xdist_group("broken_reports")
def test_the_reproduce_lines_run_from_anywhere_and_show_the_bug(broken_reports, tmp_path):
    printed, expected = _run_block(_row(broken_reports["overwrite_mul"], "reuse"), tmp_path)
    printed, expected = _numbers(printed), _numbers(expected)
    assert printed[0] == pytest.approx(expected[0])  # the forward is right
    assert printed[1] != pytest.approx(expected[1])  # the gradient is not: the bug shows
    # counted more than once: the gradient printed is bigger than the one expected
    for engine, row in (("no_visited", "order"), ("prev_copies", "order")):
        printed, expected = _run_block(_row(broken_reports[engine], row), tmp_path)
        printed, expected = _numbers(printed), _numbers(expected)
        assert printed[0] == pytest.approx(expected[0])
        assert abs(printed[1]) > abs(expected[1]) * 1.1, engine
    printed, expected = _run_block(_row(broken_reports["mul_square_twice"], "reuse"), tmp_path)
    assert _numbers(printed)[1] == pytest.approx(2 * _numbers(expected)[1])  # 12 for 6


@pytest.mark.xdist_group("broken_reports")
def test_the_new_reproduce_lines_show_what_was_recorded(broken_reports, tmp_path):
    """The blocks of the rows added for issue 30 print the bug, not the expected numbers."""
    printed, expected = _run_block(
        _row(broken_reports["topo_default"], "two backward() calls"), tmp_path
    )
    assert float(printed[0]) == 7.0 and float(expected[0]) == 4.0  # 3, then 4 more, not 1
    printed, expected = _run_block(_row(broken_reports["output_skipped"], "seed"), tmp_path)
    assert _numbers(printed)[1:] == [0.0, 0.0] and _numbers(expected)[1:] != [0.0, 0.0]
    printed, expected = _run_block(_row(broken_reports["eq_by_data"], "order"), tmp_path)
    assert _numbers(printed)[1] != pytest.approx(_numbers(expected)[1])
    row = _row(broken_reports["layer_repeats_neuron"], "parameters()")
    assert _run_block(row, tmp_path)[0] == ["16", "4"]
    row = _row(broken_reports["relu_on_the_last_layer"], "network trains")
    assert float(_run_block(row, tmp_path)[0][0]) == 0.0  # never below 0
    zeros, count = _run_block(_row(broken_reports["relu_dead_units"], "network trains"), tmp_path)[
        0
    ]
    assert int(count) == 105 and int(zeros) > 30


@pytest.mark.xdist_group("broken_reports")
def test_the_network_reproduce_lines_show_the_bug(broken_reports, tmp_path):
    printed, expected = _run_block(
        _row(broken_reports["bias_not_in_parameters"], "parameters()"), tmp_path
    )
    assert printed == ["3", "3"] and expected[:2] == ["4", "4"]
    printed, _ = _run_block(_row(broken_reports["shared_weight"], "parameters()"), tmp_path)
    assert printed == ["4", "2"]
    printed, expected = _run_block(
        _row(broken_reports["zero_grad_does_nothing"], "zero_grad()"), tmp_path
    )
    assert printed == ["[1.5]"] and expected == ["[0.0]"]
    printed, _ = _run_block(_row(broken_reports["linear_neuron"], "network bends"), tmp_path)
    assert abs(float(printed[0])) < 1e-9  # affine: the bend is 0 (up to rounding)
    printed, expected = _run_block(
        _row(broken_reports["weights_by_data"], "network gradients"), tmp_path
    )
    gradient, difference = map(float, printed)
    assert gradient == 0.0 and difference == pytest.approx(float(expected[0]), rel=1e-4)


def test_finite_differences_agree_with_torch_on_every_program_the_grader_uses(oracle):
    fd = finite_difference_oracle()
    for program in random_programs(list(OPS), 300, seed=0):
        out, grads = oracle.evaluate(program)
        out_fd, grads_fd = fd.evaluate(program)
        assert close(out_fd, out)
        assert all(close(g, w) for g, w in zip(grads_fd, grads)), program


# ------------------------------------------------------------------ engines that pass


@pytest.mark.slow
def test_micrograd_our_value_and_the_solved_starter_pass_the_gate(oracle, tmp_path):
    import micrograd

    micrograd_dir = Path(micrograd.__file__).parent
    ours = Path(modelwright_autograd.__file__).parent
    solved = solved_starter(tmp_path / "solved")
    differently = solved_starter(tmp_path / "differently")  # _prev a list, int grads, own -
    (package_of(differently) / "engine.py").write_text(source("solved_differently"))
    reports = _grade_all([micrograd_dir, ours, solved, differently], oracle)
    for report in reports.values():
        assert report.passed, report.to_text()
        assert report.verdict == "BUILD GATE PASSED"
    chain = _row(reports[micrograd_dir], "5,000-node chain")
    assert "recursion limit" in chain.diagnosis  # micrograd's recursive sort
    assert _row(reports[micrograd_dir], "tanh").status == "not present"


@pytest.mark.slow
def test_a_network_only_its_last_layer_bends_does_not_reach_the_bar(oracle, tmp_path):
    """tanh on the output alone leaves a straight-line classifier: it trains, but no
    further than a straight line goes (BEST_LINE), short of TRAIN_TARGET."""
    nn = SOLVED_NN.read_text()
    layers = "nonlin=i != len(nouts) - 1"
    assert nn.count(layers) == 1
    folder = solved_starter(tmp_path, nn.replace(layers, "nonlin=i == len(nouts) - 1"))
    report = _grade_all([folder], oracle)[folder]
    assert _row(report, "network bends").status == "pass"  # the output's tanh bends it
    row = _row(report, "network trains")
    assert row.status == FAIL and "the gate needs the loss to fall and 95%" in row.diagnosis
    accuracy = int(row.diagnosis.split("accuracy ")[1].split("%")[0])
    assert accuracy <= 100 * BEST_LINE


@pytest.mark.slow
def test_the_finite_difference_oracle_grades_the_same(tmp_path):
    fd = finite_difference_oracle()
    solved = solved_starter(tmp_path / "solved")
    paths = [solved, *(write(name, tmp_path) for name in ("tanh_from_input", "relu_at_zero"))]
    reports = _grade_all(paths, fd)
    assert reports[solved].passed and "finite differences" in reports[solved].oracle
    assert "input instead of the output" in _row(reports[paths[1]], "tanh").diagnosis
    relu = _row(reports[paths[2]], "relu")  # differences cannot judge relu'(0)
    assert relu.status == "pass" and "checked against PyTorch only" in relu.diagnosis


# ------------------------------------------------------------------ the commands


def test_init_writes_the_starter_and_refuses_a_non_empty_folder(tmp_path, capsys):
    target = tmp_path / "mine"
    assert main(["init", str(target)]) == 0
    assert sorted(p.name for p in target.iterdir()) == sorted(ENTRIES)
    notebook = json.loads((target / "starter.ipynb").read_text())
    assert notebook["nbformat"] == 4
    engine = (target / "src" / "mine" / "engine.py").read_text()
    assert engine.count("raise NotImplementedError(") == 8  # backward() and seven rules
    nn = (target / "src" / "mine" / "nn.py").read_text()  # Neuron, Layer, MLP, ...
    todos = [line.split('"')[1] for line in nn.splitlines() if "raise NotImplementedError(" in line]
    assert [t.split(":")[0] for t in todos] == [f"TODO {n}" for n in (14, 9, 10, 11, 12, 13, 13)]
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    assert main(["init", str(target)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    (tmp_path / "file").write_text("x")
    assert main(["init", str(tmp_path / "file")]) == 2


def test_check_refuses_a_path_it_cannot_check(tmp_path, capsys):
    assert main(["check", str(tmp_path / "missing.py")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("x")
    assert main(["check", str(tmp_path / "notes.txt")]) == 2
    assert main(["check", str(tmp_path)]) == 2
    assert "defines a class Value" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        main(["check", "--timeout", "0", str(ENGINES / "no_value.py")])
    assert stopped.value.code == 2


def test_check_json_says_the_same_as_the_text(tmp_path, capsys):
    path = str(write("div_sign", tmp_path))
    assert main(["check", "--json", path]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (
        data["passed"] is False
        and data["verdict"] == f"not yet: {data['failed']} of {data['checked']} checks fail"
    )
    row = next(r for r in data["checks"] if r["name"] == "a / b")
    assert row["status"] == "fail" and "division's sign" in row["diagnosis"]
    assert "# expected:" in row["reproduce"][-1]
    assert main(["check", path]) == 1
    text = capsys.readouterr().out
    assert "FAIL  a / b" in text and text.rstrip().splitlines()[-1].startswith(data["verdict"])


def test_the_engine_s_prints_stay_out_of_the_report(tmp_path, capsys):
    noisy = tmp_path / "noisy.py"
    noisy.write_text(SOLVED.read_text() + '\nprint("hello from the engine")\n')
    main(["check", "--json", str(noisy)])
    data = json.loads(capsys.readouterr().out)  # stdout is the JSON alone
    assert data["engine_output"] == ["hello from the engine"]


def _probe_processes(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
                cwd = os.readlink(entry / "cwd")
            except OSError:  # gone already, or not ours to read
                continue
            if "probe.py" in cmdline and marker in cwd:
                pids.append(int(entry.name))
    return pids


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the child")
def test_ctrl_c_ends_the_check_cleanly_and_kills_the_child(tmp_path):
    engine = tmp_path / "hangs.py"
    engine.write_text((ENGINES / "hangs.py").read_text())
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwright_autograd", "check", "--timeout", "60", str(engine)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(modelwright_autograd.__file__).parents[1])},
    )
    deadline = time.monotonic() + 30
    while not _probe_processes(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _probe_processes(str(tmp_path)), "the child never started"
    time.sleep(0.5)  # let it reach the hanging backward()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip() == "modelwright-autograd check: interrupted"
    assert not _probe_processes(str(tmp_path))


@pytest.mark.slow
def test_the_starter_notebook_runs_on_the_solved_engine(tmp_path, monkeypatch):
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    solved_starter(tmp_path)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(tmp_path / "starter.ipynb", as_version=4)
    nbformat.validate(nb)
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    client = NotebookClient(nb, km=km, timeout=180, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    text = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    assert text.count("ok") >= 5  # the five gradient checks against torch
    assert "200 random expressions match finite differences" in text  # exercise 6
    epochs = [line.split() for line in text.splitlines() if line.startswith("epoch")]
    assert len(epochs) == 30  # epoch N  loss L  accuracy A%
    losses = [float(e[3]) for e in epochs]
    accuracies = [int(e[5].rstrip("%")) for e in epochs]
    assert losses[-1] < losses[0] and max(accuracies) >= 95


def _engine_class(name, folder):
    """The Value class of the engine NAME, written to ``folder`` and imported in this
    process."""
    spec = importlib.util.spec_from_file_location(f"learner_{name}", write(name, folder))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Value


def test_exercise_6_checks_the_learner_s_own_value(tmp_path):
    """gradcheck_random and gradcheck(value=...) judge the learner's class, not ours: the
    solved engine passes, a tanh taken from its input fails with the expression to paste."""
    solved = _engine_class("solved_starter", tmp_path)
    tanh_bug = _engine_class("tanh_from_input", tmp_path)
    assert gradcheck_random(solved, count=100) == 100
    assert gradcheck(lambda a, b: (a * b).tanh() + a**2, [0.3, -1.2], value=solved)
    with pytest.raises(GradcheckError, match="random expressions disagree") as raised:
        gradcheck_random(tanh_bug, count=100)
    assert ".tanh()" in str(raised.value) and "# expected:" in str(raised.value)
    with pytest.raises(GradcheckError, match="input 0"):
        gradcheck(lambda a: a.tanh(), [0.7], value=tanh_bug)


def test_the_training_bar_is_above_the_best_straight_line():
    """No straight line classifies more than BEST_LINE of the moons check trains on, so an
    MLP without a nonlinearity cannot reach TRAIN_TARGET. Every line worth trying passes
    through two of the points (nudged either way), so trying each pair finds the best."""
    import numpy as np

    from modelwright_autograd.data import make_2d

    X, y = make_2d("moons", 100, 0.1, np.random.RandomState(0))
    labels = 2 * y - 1
    i, j = np.triu_indices(len(X), 1)
    along = X[j] - X[i]
    best = 0.0
    for turn in (-1e-7, 1e-7):
        normal = np.stack([-along[:, 1], along[:, 0]], 1)
        normal = normal + turn * along
        scores = normal @ X.T - np.sum(normal * X[i], 1)[:, None]  # one row per line
        for shift in (-1e-9, 1e-9):
            side = np.sign(scores + shift)
            agree = (side == labels).mean(1)
            best = max(best, agree.max(), (1 - agree).max())
    assert best == pytest.approx(BEST_LINE)
    assert TRAIN_TARGET > BEST_LINE


def test_without_torch_the_oracle_is_finite_differences(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    assert choose_oracle().name == "finite differences"
    assert choose_oracle("fd").name == "finite differences"
    with pytest.raises(OracleError, match="torch cannot be imported"):
        choose_oracle("torch")


def test_a_repository_is_searched_for_its_engine_package(tmp_path):
    package = tmp_path / "repo" / "src" / "mygrad"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from .engine import Value\n")
    (package / "engine.py").write_text(SOLVED.read_text())
    nn = (Path(modelwright_autograd.learner.__file__).parent / "templates" / "nn.py").read_text()
    (package / "nn.py").write_text(nn.replace("from engine import", "from .engine import"))
    (tmp_path / "repo" / "tests").mkdir()
    (tmp_path / "repo" / "tests" / "helpers.py").write_text("class Value:\n    pass\n")
    target = locate(tmp_path / "repo")
    assert (target.sys_path, target.value_module) == (str(package.parent), "mygrad.engine")
    assert target.mlp_module == "mygrad.nn"
    with EngineProcess(target.load_request(), target.sys_path, 30.0) as process:
        loaded = process.load()  # the relative imports work: imported as a package
    assert loaded == {"library": ["Neuron", "Layer", "MLP"], "mlp": True}
