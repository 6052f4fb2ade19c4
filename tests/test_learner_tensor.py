"""`modelwright-autograd init --tensor` and `check` on tensor engines.

Each engine of tests/learner_engines/tensor/variants.py is the solved tensor starter with
one classic bug (or a correct one written differently; beside it, files of engines that
hang, crash or eat memory); each broken one, written out as a file, must fail with its own
diagnosis, the correct ones, the solved starter and this project's own Tensor must pass.
The end-to-end grading of all of them runs once (in parallel) in the slow run; the default
run grades one engine through the command line.
"""

from __future__ import annotations

import ast
import difflib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_learner import CALM, TIMEOUT, _grade_all, _row

import modelwright_autograd
from modelwright_autograd.cli import main
from modelwright_autograd.learner.report import FAIL, PASS, Report, Row
from modelwright_autograd.learner.scalar.oracle import finite_difference_oracle, torch_oracle
from modelwright_autograd.learner.starter import ENTRIES, project_names, write_starter
from modelwright_autograd.learner.tensor.cases import (
    COMPOSITE_OPS,
    composite_programs,
    reuse_programs,
)
from modelwright_autograd.learner.tensor.grader import OP_SPECS
from modelwright_autograd.learner.tensor.oracle import agree, tensor_oracle
from tests.learner_engines.tensor import variants
from tests.learner_engines.write import source, write

ENGINES = Path(__file__).parent / "learner_engines" / "tensor"
SOLVED = ENGINES / "solved_starter.py"  # engine.py and nn.py of the starter, solved, in one

# engines of their own, files in tests/learner_engines/tensor/ -> (the row that must fail, words)
HOSTILE = {
    "hangs": ("seed", f"did not finish in {TIMEOUT:g} s"),
    "crashes": ("seed", "killed by SIGSEGV"),
    "eats_memory": ("seed", "MemoryError"),
}
# engine -> (the row that must fail, words its diagnosis must contain)
BROKEN = {name: (row, words) for name, (_, row, words) in variants.BUGS.items()} | HOSTILE
ONE_BUG = list(variants.BUGS)
WRITTEN_DIFFERENTLY = list(variants.WRITTEN_DIFFERENTLY)
NOTED = list(variants.NOTED)  # right gradients, a note on how they are kept


def solved_tensor_starter(folder: Path) -> Path:
    """The tensor starter as `init --tensor` writes it, with engine.py and nn.py solved."""
    write_starter(folder, tensor=True)
    package = folder / "src" / project_names(folder)[1]
    engine, nn = SOLVED.read_text().split("\nclass Module:", 1)
    (package / "engine.py").write_text(engine)
    (package / "nn.py").write_text(
        "import numpy as np\n\nfrom .engine import Tensor\n\n\nclass Module:" + nn
    )
    return folder


@pytest.fixture(scope="session")
def oracle():
    found = torch_oracle()
    assert found is not None, "torch is a test dependency"
    return found


# ------------------------------------------------------------------ the default run


def test_init_tensor_writes_the_tensor_starter_and_refuses_a_non_empty_folder(tmp_path, capsys):
    target = tmp_path / "mine"
    assert main(["init", "--tensor", str(target)]) == 0
    assert sorted(p.name for p in target.iterdir()) == sorted(ENTRIES)
    engine = (target / "src" / "mine" / "engine.py").read_text()
    assert "class Tensor" in engine and "import numpy as np" in engine
    assert engine.count("raise NotImplementedError(") == 17  # backward(), unbroadcast, 15 rules
    nn = (target / "src" / "mine" / "nn.py").read_text()
    assert nn.count("raise NotImplementedError(") == 4
    assert json.loads((target / "starter.ipynb").read_text())["nbformat"] == 4
    assert main(["init", "--tensor", str(target)]) == 2
    assert "not empty" in capsys.readouterr().err


def _all_programs():
    # relu's exact zeros are left out: differences cannot see which side of the kink torch takes
    return [case.program for spec in OP_SPECS for case in spec.cases() if case.kind != "zeros"]


def test_finite_differences_agree_with_torch_on_every_tensor_program(oracle):
    by_torch = tensor_oracle(oracle)
    by_differences = tensor_oracle(finite_difference_oracle())
    for program in _all_programs():
        out, grads = by_torch(program)
        out_fd, grads_fd = by_differences(program)
        assert agree(out_fd, out), program
        assert all(agree(g_fd, g) for g_fd, g in zip(grads_fd, grads)), program


def test_torch_oracle_gives_hand_derived_gradients():
    # d/da sum(W * (a @ b)) = W @ b.T and d/db = a.T @ W; d/da sum(W * a.mean(1)) = W/n
    rng = np.random.default_rng(0)
    a, b, w = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=(2, 4))

    def arr(x):
        return {"shape": list(x.shape), "data": x.ravel().tolist()}

    run = tensor_oracle(torch_oracle())
    out, (ga, gb) = run({"inputs": [arr(a), arr(b)], "steps": [["matmul", 0, 1]], "weight": arr(w)})
    assert agree(out, a @ b) and agree(ga, w @ b.T) and agree(gb, a.T @ w)
    v = rng.normal(size=2)
    _, (gm,) = run({"inputs": [arr(a)], "steps": [["mean", 0, 1, False]], "weight": arr(v)})
    assert agree(gm, np.repeat(v[:, None] / 3, 3, axis=1))


def test_torch_oracle_gives_relu_no_gradient_at_exactly_zero():
    # torch's relu passes out.grad where the input is > 0, so none at an exact 0
    (relu,) = [spec for spec in OP_SPECS if spec.op == "relu"]
    (zeros,) = [case.program for case in relu.cases() if case.kind == "zeros"]
    a = np.array(zeros["inputs"][0]["data"]).reshape(2, 3)
    w = np.array(zeros["weight"]["data"]).reshape(2, 3)
    assert np.count_nonzero(a == 0) == 3
    _, (grad,) = tensor_oracle(torch_oracle())(zeros)
    assert agree(grad, np.where(a > 0, w, 0.0))


def test_the_random_expressions_are_seeded_small_and_reuse_tensors():
    made = composite_programs()
    assert made == composite_programs() and len(made) >= 10  # the same every run
    for ops, program in made:
        assert 3 <= len(program["steps"]) <= 6 and ops <= set(COMPOSITE_OPS)
        assert all(np.prod(x["shape"]) <= 24 for x in program["inputs"])
    reads = [
        [slot for step in p["steps"] for slot in step[1:3] if isinstance(slot, int)]
        for _, p in made
    ]
    assert sum(len(r) != len(set(r)) for r in reads) >= len(made) // 2  # a slot read twice
    used = set().union(*(ops for ops, _ in made))
    assert len(used) >= 8, used


@pytest.mark.slow
def test_finite_differences_agree_with_torch_on_the_reuse_and_random_programs(oracle):
    by_torch = tensor_oracle(oracle)
    by_differences = tensor_oracle(finite_difference_oracle())
    every_op = {spec.op for spec in OP_SPECS}
    programs = [p for _, p in composite_programs()] + [p for _, p in reuse_programs(every_op)]
    for program in programs:
        out, grads = by_torch(program)
        out_fd, grads_fd = by_differences(program)
        assert agree(out_fd, out), program
        assert all(agree(g_fd, g) for g_fd, g in zip(grads_fd, grads)), program


def test_check_names_a_tensor_bug_and_its_reproduce_lines_show_it(tmp_path, capsys):
    path = str(write("tensor/mean_missing_n", tmp_path / "engines"))  # run from another folder
    assert main(["check", "--json", "--timeout", str(CALM), path]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is False and data["verdict"].startswith("not yet:")
    row = next(r for r in data["checks"] if r["name"] == "mean")
    assert row["status"] == "fail" and "missing the 1/n" in row["diagnosis"]
    assert "(look at mean_missing_n.py:" in row["diagnosis"]
    code = "\n".join(row["reproduce"]) + "\nprint(a.grad.tolist())"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    printed = np.array(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
    expected_line = next(line for line in row["reproduce"] if line.startswith("# expected a.grad:"))
    expected = np.array(ast.literal_eval(expected_line.split(":", 1)[1].strip()))
    assert printed.shape == expected.shape
    ratio = printed / expected  # the bug shows: every element n times too large
    assert np.allclose(ratio, ratio.flat[0]) and ratio.flat[0] > 1.5
    # n, the count averaged (the comment shows the expected gradient to six decimals)
    assert ratio.flat[0] == pytest.approx(round(ratio.flat[0]), rel=1e-4)


# ------------------------------------------------------------------ the slow run


@pytest.fixture(scope="session")
def tensor_reports(oracle, tmp_path_factory):
    starter = tmp_path_factory.mktemp("tensor_starter")
    write_starter(starter, tensor=True)
    solved = solved_tensor_starter(tmp_path_factory.mktemp("tensor_solved"))
    ours = Path(modelwright_autograd.__file__).parent / "tensor"  # the package of Tensor
    names = [*BROKEN, *WRITTEN_DIFFERENTLY, *NOTED]
    folder = tmp_path_factory.mktemp("tensor_engines")
    engines = [write(f"tensor/{name}", folder) for name in names]
    paths = [*engines, starter, solved, ours]
    value = tmp_path_factory.mktemp("value_of_arrays") / "engine.py"
    value.write_text(SOLVED.read_text().replace("Tensor", "Value"))  # a Value holding arrays
    reports = _grade_all([*paths, value], oracle)
    named = dict(zip(names, (reports[path] for path in engines)))
    return named | {
        "starter": reports[starter],
        "solved": reports[solved],
        "ours": reports[ours],
        "value_of_arrays": reports[value],
    }


@pytest.mark.slow
@pytest.mark.parametrize("engine", list(BROKEN))
def test_each_broken_tensor_engine_fails_with_its_own_diagnosis(tensor_reports, engine):
    report = tensor_reports[engine]
    row_name, words = BROKEN[engine]
    row = _row(report, row_name)
    assert row.status == FAIL, report.to_text()
    assert words in row.diagnosis, report.to_text()
    assert not report.passed and report.verdict.startswith("not yet:")


@pytest.mark.slow
def test_each_diagnosis_is_its_own(tensor_reports):
    # no other one-bug engine's report carries a bug's words: each names its own
    for engine in ONE_BUG:
        _, words = BROKEN[engine]
        carriers = [
            other
            for other in ONE_BUG
            if any(words in row.diagnosis for row in tensor_reports[other].rows)
        ]
        assert carriers == [engine], (engine, carriers)


@pytest.mark.slow
def test_a_report_for_one_cause_is_at_most_40_lines(tensor_reports):
    for engine in ONE_BUG:
        text = tensor_reports[engine].to_text()
        assert len(text.splitlines()) <= 40, text
    assert len(tensor_reports["solved"].to_text().splitlines()) <= 40


@pytest.mark.slow
def test_a_bug_in_the_helper_that_reduces_the_gradient_is_one_block(tensor_reports):
    # unbroadcast without keepdims breaks +, -, * and /: one block, at the helper
    report = tensor_reports["unbroadcast_no_keepdims"]
    assert report.to_text().count("reproduce:") == 1, report.to_text()
    assert "(look at unbroadcast (unbroadcast_no_keepdims.py:" in _row(report, "a * b").diagnosis
    for row in ("a + b", "a - b", "a / b"):
        words = _row(report, row).diagnosis
        assert words.startswith("the same cause as 'a * b' above, in unbroadcast ("), words
    # one that sums the added axes from the right breaks @'s b over a batch too: one block
    report = tensor_reports["unbroadcast_from_right"]
    assert report.to_text().count("reproduce:") == 1, report.to_text()
    words = _row(report, "a @ b").diagnosis
    assert words.startswith("the same cause as 'a * b' above, in unbroadcast ("), words
    # a rule that does not call the helper is pointed at itself
    rule = _row(tensor_reports["add_not_unbroadcast"], "a + b").diagnosis
    assert "look at add_not_unbroadcast.py:" in rule and "helper" not in rule


@pytest.mark.slow
def test_the_new_rows_pass_on_correct_engines(tensor_reports):
    for name in ["solved", "ours", "value_of_arrays", *WRITTEN_DIFFERENTLY]:
        report = tensor_reports[name]
        for row in ("reuse", "second backward", "random expressions", "relu"):
            assert _row(report, row).status == PASS, (name, report.to_text())
        assert "14 ops" in _row(report, "reuse").diagnosis, name  # every op, used twice
    # the random expressions see a wrong gradient: here one that 'reuse' named above
    row = _row(tensor_reports["overwrite_sub"], "random expressions")
    assert row.status == FAIL and not row.reproduce, row
    assert row.diagnosis.endswith(
        "seeded expressions give wrong gradients (probably because of 'reuse' above)"
    )


def test_each_broken_tensor_engine_is_the_solved_starter_with_one_small_change():
    solved = SOLVED.read_text().splitlines()
    for name in [*ONE_BUG, *WRITTEN_DIFFERENTLY, *NOTED]:
        broken = source(f"tensor/{name}").splitlines()
        changed = [
            line
            for line in difflib.unified_diff(solved, broken, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        assert 0 < len(changed) <= 40, (name, changed)
    assert len(ONE_BUG) >= 10


@pytest.mark.slow
def test_the_solved_starter_ours_and_engines_written_differently_pass(tensor_reports):
    for name in ["solved", "ours", "value_of_arrays", *WRITTEN_DIFFERENTLY]:
        report = tensor_reports[name]
        assert report.passed and report.verdict == "BUILD GATE PASSED", report.to_text()
        trains = _row(report, "network trains")
        accuracy = float(trains.diagnosis.rsplit("test accuracy ", 1)[1].rstrip("%")) / 100
        assert accuracy >= 0.95
        assert _row(report, "network bends").status == PASS
    assert _row(tensor_reports["ours"], "cross_entropy").status == PASS  # functional.py's
    assert "(a tensor engine" in _row(tensor_reports["value_of_arrays"], "engine loads").diagnosis
    assert _row(tensor_reports["value_of_arrays"], "Value's parts").status == PASS


@pytest.mark.slow
def test_float32_gradients_that_agree_pass_with_a_note_naming_their_dtype(tensor_reports):
    report = tensor_reports["grads_float32"]
    assert report.passed, report.to_text()
    note = _row(report, "gradient dtype")
    assert note.status == "note" and "a.grad is a float32 array (a.data float64)" in note.diagnosis
    for name in ["solved", "ours", *WRITTEN_DIFFERENTLY]:  # float64 grads: no such note
        assert all(row.name != "gradient dtype" for row in tensor_reports[name].rows), name


@pytest.mark.slow
def test_the_untouched_tensor_starter_fails_naming_its_todos(tensor_reports):
    report = tensor_reports["starter"]
    assert not report.passed
    assert "TODO 1: backward()" in _row(report, "seed").diagnosis
    for row, todo in (
        ("a + b", "TODO 3"),
        ("a - b", "TODO 4"),
        ("a * b", "TODO 5"),
        ("a / b", "TODO 6"),
        ("a @ b", "TODO 7"),
        ("transpose", "TODO 8"),
        ("reshape", "TODO 9"),
        ("mean", "TODO 11"),
        ("exp", "TODO 12"),
        ("log_softmax", "TODO 16"),
        ("cross_entropy", "TODO 17"),
        ("network gradients", "TODO 19"),
        ("network bends", "TODO 20"),
    ):
        assert todo in _row(report, row).diagnosis, (row, report.to_text())
    assert _row(report, "engine loads").status == PASS


@pytest.mark.slow
def test_a_hanging_tensor_engine_is_stopped_within_the_timeouts(tensor_reports):
    report = tensor_reports["hangs"]
    assert report.seconds < 2 * TIMEOUT + 10
    last = report.rows[-1]
    assert last.status == FAIL and "not run: the engine hung 2 times" in last.diagnosis
    assert "at most 4 GiB" in _row(tensor_reports["eats_memory"], "seed").diagnosis


@pytest.mark.slow
def test_the_finite_difference_oracle_grades_tensor_engines_the_same(tmp_path):
    solved = solved_tensor_starter(tmp_path / "solved")
    bugs = ("sum_no_expand", "cross_entropy_no_onehot")
    paths = [solved, *(write(f"tensor/{name}", tmp_path) for name in bugs)]
    reports = _grade_all(paths, finite_difference_oracle())
    assert reports[solved].passed and "finite differences" in reports[solved].oracle
    assert "put the reduced axis back" in _row(reports[paths[1]], "sum").diagnosis
    assert "off by the one-hot" in _row(reports[paths[2]], "cross_entropy").diagnosis


@pytest.mark.slow
def test_the_tensor_starter_notebook_runs_on_the_solved_engine(tmp_path, monkeypatch):
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    solved_tensor_starter(tmp_path)
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
    epochs = [line.split() for line in text.splitlines() if line.startswith("epoch")]
    assert len(epochs) == 10
    assert float(epochs[-1][5].rstrip("%")) >= 95.0


def test_a_terse_failing_report_names_its_passing_rows_and_keeps_their_words_in_json():
    rows = [Row(f"check {i}", PASS, "a long explanation of what passed " * 3) for i in range(30)]
    rows.insert(10, Row("reuse", FAIL, "the cause", ["print(a.grad)"]))
    report = Report("engine.py", "torch", rows, terse=True)
    lines = report.to_text().splitlines()
    assert len(lines) <= 16, lines
    assert lines[3].startswith("pass  check 0, check 1,") and "explanation" not in lines[3]
    assert all(f"check {i}" in report.to_text() for i in range(30))  # every row is named
    assert "FAIL  reuse" in report.to_text() and "print(a.grad)" in report.to_text()
    assert json.loads(report.to_json())["checks"][0]["diagnosis"] == rows[0].diagnosis
    # a report that passes, or one not terse (the scalar grader's), keeps every row's words
    assert "explanation" in Report("e.py", "torch", rows[:3], terse=True).to_text()
    assert "explanation" in Report("e.py", "torch", rows).to_text()


def test_a_forged_tensor_reply_is_refused():
    # the learner's code shares the child's process and can write into the reply pipe: a
    # reply that is not the shape of the child's answer is a failure, not a result
    from modelwright_autograd.learner.child import well_formed

    program = {"inputs": [{"shape": [2], "data": [1.0, 2.0]}], "steps": [["exp", 0]]}
    request = {"do": "tensor_programs", "programs": [program]}
    two = {"shape": [2], "data": [0.5, 0.25]}
    right = {"out": two, "loss_grad": {"shape": [], "data": [1.0]}, "grads": [two], "rules": [""]}
    assert well_formed(request, {"results": [right]})
    for forged in (
        {**right, "grads": [{"shape": [2], "data": [0.5]}]},  # data of the wrong size
        {**right, "grads": [{"shape": [2], "data": [1, 10**400]}]},  # not floats
        {**right, "rules": [3]},
        {**right, "helpers": [None]},
        {**right, "shared": [[0, 1]]},  # a pair of leaves the program does not have
        {**right, "shared": [0]},
        {k: v for k, v in right.items() if k != "out"},
        {**right, "written": [[2, "backward"]]},  # the program has slots 0 and 1 only
        {**right, "written": [[0, "later"]]},
        {**right, "dtypes": "ab"},
        {"stage": "backward", "error": {"type": "E", "message": "", "where": ""}, "rules": []}
        | {"loss_grad": {"shape": [2], "data": [1.0]}},  # data of the wrong size
    ):
        assert not well_formed(request, {"results": [forged]})
    assert well_formed(request, {"results": [right | {"written": [[0, "backward"]]}]})
    assert not well_formed({"do": "tensor_affine"}, {"gaps": []})
    assert not well_formed({"do": "tensor_train"}, {"history": [[1.0, True]], "loss": "x"})
    layer = {"grads": [two], "differences": [two], "distinct": 1, "zeroed": True, "forward": None}
    network = {"do": "tensor_network"}
    assert well_formed(network, {"layers": {"Linear(4, 3)": {**layer, "unlisted": ["Linear.b"]}}})
    assert not well_formed(network, {"layers": {"Linear(4, 3)": {**layer, "unlisted": [1]}}})
    not_lists = (5, None, "ab", {"shape": [2], "data": [0.5, 0.25]})  # `grads` once crashed
    for forged in (
        *({**layer, "grads": x} for x in not_lists),
        *({**layer, "differences": x} for x in not_lists),
        {**layer, "differences": []},  # a difference for each gradient
        {k: v for k, v in layer.items() if k != "forward"},  # the check reads it
        {**layer, "forward": 1},
        {**layer, "unlisted": None},
        None,
        [layer],
    ):
        assert not well_formed(network, {"layers": {"Linear(4, 3)": forged}}), forged


def test_a_tensor_engine_s_nets_and_losses_are_found_in_the_modules_that_import_it():
    from modelwright_autograd.learner.locate import locate

    ours = locate(Path(modelwright_autograd.__file__).parent / "tensor")
    assert (ours.class_name, ours.value_module) == ("Tensor", "modelwright_autograd.tensor.core")
    assert ours.mlp_module == "modelwright_autograd.tensor.nn"  # not nn.py's scalar MLP
    assert ours.functions_module == "modelwright_autograd.tensor.functional"
    alone = locate(ENGINES / "hangs.py")  # the engines beside it are not its nets
    assert (alone.class_name, alone.mlp_module, alone.functions_module) == ("Tensor", None, None)
