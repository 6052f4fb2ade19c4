"""`modelwright-autograd init --backprop` and `check` on backprop-by-hand exercises.

tests/learner_engines/backprop/solved/ is the starter solved; each variant below replaces
one function of it with a classic slip and must fail on its row with its own diagnosis,
every other gradient row still passing (a correct function written differently must pass).
The default run grades the variants with the probe in this process (the diagnoses, fast)
and the solved folder once through the command line; the slow run grades every variant
through the real sandbox, plus code that hangs and code that crashes.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from modelwright_autograd.cli import main
from modelwright_autograd.learner.backprop import grader as backprop_grader
from modelwright_autograd.learner.backprop.grader import (
    GATE,
    BackpropGrader,
    find_exercise,
    grade_backprop,
)
from modelwright_autograd.learner.backprop.reference import GRADIENTS
from modelwright_autograd.learner.report import FAIL, PASS
from modelwright_autograd.learner.starter import BACKPROP_TEMPLATES

SOLVED = Path(__file__).parent / "learner_engines" / "backprop" / "solved" / "backprop.py"
PROBE = Path(backprop_grader.__file__).with_name("probe.py")
TEMPLATES = PROBE.parent.parent / "templates_backprop"

# variant -> (the function replacing the solved one, the row that must fail, its words)
VARIANTS = {
    "no_sum_over_broadcast": (
        "def dcounts_sum_inv(f, d):\n    return f.counts * d.probs\n",
        "dcounts_sum_inv",
        "a sum over the broadcast axis missing. counts_sum_inv was stretched along axis 1",
    ),
    "keepdims_lost": (
        "def dcounts_sum_inv(f, d):\n    return (f.counts * d.probs).sum(1)\n",
        "dcounts_sum_inv",
        "keepdims lost (the numbers are right)",
    ),
    "bias_not_summed": (
        "def db2(f, d):\n    return d.logits\n",
        "db2",
        "a sum over the broadcast axis missing. b2 was stretched along axis 0",
    ),
    "bessel_n_not_n_minus_1": (
        "def dbndiff2(f, d):\n    return np.ones_like(f.bndiff2) / f.bndiff2.shape[0] * d.bnvar\n",
        "dbndiff2",
        "n where n - 1 belongs",
    ),
    "counts_overwritten": (
        "def dcounts(f, d):\n    return f.counts_sum_inv * d.probs\n",
        "dcounts",
        "overwritten instead of added: this is the gradient through probs alone",
    ),
    "bndiff_overwritten": (
        "def dbndiff(f, d):\n    return f.bnvar_inv * d.bnraw\n",
        "dbndiff",
        "overwritten instead of added: this is the gradient through bnraw alone",
    ),
    "hprebn_overwritten": (
        "def dhprebn(f, d):\n    return d.bndiff.copy()\n",
        "dhprebn",
        "overwritten instead of added: this is the gradient through bndiff alone",
    ),
    "transpose_wrong_side": (
        "def dW2(f, d):\n    return d.logits.T @ f.h\n",
        "dW2",
        "a transpose on the wrong side (its transpose is right)",
    ),
    "transpose_missing": (
        "def dh(f, d):\n    return d.logits @ f.W2\n",
        "dh",
        "for out = a @ b, da = dout @ b.T",
    ),
    "embedding_rows_assigned": (
        "def dC(f, d):\n    out = np.zeros_like(f.C)\n    out[f.Xb] += d.emb\n    return out\n",
        "dC",
        "wrong for those seen more than once",
    ),
    "loss_summed_not_averaged": (
        "def dlogprobs(f, d):\n    out = np.zeros_like(f.logprobs)\n"
        "    out[np.arange(len(f.Yb)), f.Yb] = -1.0\n    return out\n",
        "dlogprobs",
        "n times too big: a 1/n is missing",
    ),
    "mean_path_without_1_over_n": (
        "def dhprebn(f, d):\n    return d.bndiff + d.bnmeani\n",
        "dhprebn",
        "the path through bnmeani is 32 times PyTorch's: n times too big",
    ),
    "variance_sign": (
        "def dbnvar(f, d):\n    return 0.5 * (f.bnvar + EPS) ** -1.5 * d.bnvar_inv\n",
        "dbnvar",
        "the sign is flipped",
    ),
    "fused_no_onehot": (
        "def dlogits_fused(f, d):\n"
        "    probs = np.exp(f.logits - f.logits.max(1, keepdims=True))\n"
        "    return probs / probs.sum(1, keepdims=True) / len(f.Yb)\n",
        "dlogits_fused",
        "the one-hot is missing",
    ),
    "fused_batch_norm_biased": (
        "def dhprebn_fused(f, d):\n    n, g = f.hprebn.shape[0], d.hpreact\n"
        "    return f.bngain * f.bnvar_inv / n * (\n"
        "        n * g - g.sum(0) - f.bnraw * (g * f.bnraw).sum(0)\n    )\n",
        "dhprebn_fused",
        "this forward divides by n - 1 (Bessel's correction)",
    ),
}
# Correct functions written differently: every row passes.
DIFFERENT = {
    "dC_loop": (
        "def dC(f, d):\n    out = np.zeros_like(f.C)\n"
        "    for i in range(f.Xb.shape[0]):\n        for j in range(f.Xb.shape[1]):\n"
        "            out[f.Xb[i, j]] += d.emb[i, j]\n    return out\n"
    ),
    "logsumexp_fused": (
        "def dlogits_fused(f, d):\n    n = len(f.Yb)\n"
        "    shifted = f.logits - f.logits.max(1, keepdims=True)\n"
        "    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))\n"
        "    grad = np.exp(logp)\n    grad[np.arange(n), f.Yb] -= 1\n    return grad / n\n"
    ),
}


def variant_source(replacement: str) -> str:
    """The solved backprop.py with the function ``replacement`` defines put in its place."""
    source = SOLVED.read_text()
    name = ast.parse(replacement).body[0].name
    node = next(n for n in ast.parse(source).body if getattr(n, "name", None) == name)
    lines = source.splitlines(keepends=True)
    return "".join(lines[: node.lineno - 1]) + replacement + "".join(lines[node.end_lineno :])


def write_variant(folder: Path, replacement: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "backprop.py").write_text(variant_source(replacement))
    return folder


class InProcess:
    """Answers as child.EngineProcess does, with the probe's handlers run in this process
    (no sandbox, no restarts): for the diagnoses only. Replies go through JSON as the
    child's do."""

    isolation, isolated = "", True

    def __init__(self, file: Path) -> None:
        self.file = file
        names = {"__name__": "_test_backprop_probe", "__builtins__": __builtins__}
        exec(compile(PROBE.read_text(), str(PROBE), "exec"), names)
        self.probe = names

    def _import(self, name: str, file: str) -> object:
        spec = importlib.util.spec_from_file_location(f"_variant_{id(self)}", file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def load(self) -> dict:
        request = find_exercise(self.file).load_request()
        path = list(self.probe["sys"].path)  # the probe adds the folder: put it back after
        try:
            return self.probe["load"](request, {}, _describe, self._import)
        finally:
            self.probe["sys"].path[:] = path

    def ask(self, request: dict, timeout: float) -> dict:
        try:
            reply = self.probe["HANDLERS"][request["do"]](request)
        except Exception as error:
            reply = {"error": _describe(error)}
        return json.loads(json.dumps(reply))

    def output_tail(self, lines: int) -> list[str]:
        return []

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _describe(error: BaseException) -> dict:
    return {"type": type(error).__name__, "message": str(error), "where": ""}


def grade_here(folder: Path):
    exercise = find_exercise(folder)
    return BackpropGrader(exercise, 10.0, 90.0, InProcess(exercise.file)).run()


def _row(report, name):
    return next(row for row in report.rows if row.name == name)


def test_variant_sources_replace_one_function():
    for replacement, _, _ in VARIANTS.values():
        source = variant_source(replacement)
        assert replacement in source and source.count("\ndef ") == SOLVED.read_text().count(
            "\ndef "
        )


def test_solved_passes_in_process():
    report = grade_here(SOLVED.parent)
    assert report.passed, report.to_text()
    assert report.verdict == GATE


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_fails_with_its_diagnosis(tmp_path, variant):
    replacement, row_name, words = VARIANTS[variant]
    report = grade_here(write_variant(tmp_path / variant, replacement))
    row = _row(report, row_name)
    assert row.status == FAIL and words in row.diagnosis, report.to_text()
    assert not report.passed
    # the rows before it pass: each row is judged on its own numbers
    before = [f"d{name}" for name in GRADIENTS]
    if row_name in before:
        for name in before[: before.index(row_name)]:
            assert _row(report, name).status == PASS, report.to_text()


@pytest.mark.parametrize("variant", list(DIFFERENT))
def test_correct_functions_written_differently_pass(tmp_path, variant):
    report = grade_here(write_variant(tmp_path / variant, DIFFERENT[variant]))
    assert report.passed, report.to_text()


def test_a_row_right_given_a_wrong_upstream_says_so(tmp_path):
    replacement = "def dprobs(f, d):\n    return -d.logprobs / f.probs\n"
    report = grade_here(write_variant(tmp_path / "upstream", replacement))
    assert "the sign is flipped" in _row(report, "dprobs").diagnosis
    assert _row(report, "dcounts_sum_inv").diagnosis.startswith("right given dprobs above")
    assert _row(report, "dlogits_fused").status == PASS  # reads no gradient of the chain
    assert "at step 0" not in _row(report, "training (step by step)").diagnosis


def test_a_changed_forward_fails_its_row_and_nothing_after_it_runs(tmp_path):
    source = SOLVED.read_text()
    biased = source.replace("/ (n - 1)  # variance, Bessel's n - 1", "/ n")
    assert biased != source
    (tmp_path / "backprop.py").write_text(biased)
    report = grade_here(tmp_path)
    assert [row.name for row in report.rows] == ["exercise loads", "forward"]
    assert "f.bnvar is not PyTorch's bnvar = bndiff2.sum(0, keepdims=True) / (n - 1)" in (
        _row(report, "forward").diagnosis
    )


def test_a_misshapen_gradient_leaves_the_rows_that_read_it_not_judged(tmp_path):
    replacement = "def dhpreact(f, d):\n    return ((1.0 - f.h**2) * d.h).sum(0)\n"
    report = grade_here(write_variant(tmp_path / "misshapen", replacement))
    assert "summed over axis 0, which hpreact was not broadcast along" in (
        _row(report, "dhpreact").diagnosis
    )
    for name in ("dbngain", "dhprebn_fused"):
        assert _row(report, name).diagnosis == "not judged: dhpreact above is wrong: fix that first"


def test_init_writes_the_backprop_starter_and_check_grades_it(tmp_path, capsys):
    folder = tmp_path / "bp"
    assert main(["init", "--backprop", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted(BACKPROP_TEMPLATES)
    assert main(["check", str(folder)]) == 1
    text = capsys.readouterr().out
    assert "not done yet: TODO 1: dlogprobs" in text and "not done yet: TODO 28" in text
    assert main(["check", str(SOLVED.parent)]) == 0
    assert GATE in capsys.readouterr().out


def test_init_refuses_both_starters(tmp_path, capsys):
    assert main(["init", "--backprop", "--tensor", str(tmp_path / "x")]) == 2
    assert "choose one of --tensor and --backprop" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_starter_is_the_solved_copy_with_todos():
    """The forward and the given functions of the starter and of the solved copy are the
    same code: the check grades the solved copy's forward, which must be the learner's."""
    starter = ast.parse((TEMPLATES / "backprop.py").read_text())
    solved = ast.parse(SOLVED.read_text())

    def given(tree):
        return {
            n.name: ast.dump(n)
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("d")
        }

    assert given(starter) == given(solved)


def test_check_without_torch_oracle_is_refused(capsys):
    assert main(["check", "--oracle", "fd", str(SOLVED.parent)]) == 2
    assert "checked against PyTorch only" in capsys.readouterr().err


# ------------------------------------------------------------------ slow: the sandbox
@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    folders = {name: write_variant(root / name, r) for name, (r, _, _) in VARIANTS.items()}
    folders["hangs"] = write_variant(
        root / "hangs", "def dlogits_fused(f, d):\n    while True:\n        pass\n"
    )
    folders["crashes"] = write_variant(
        root / "crashes", "def dbnraw(f, d):\n    import os\n    os._exit(3)\n"
    )

    def one(item):
        name, folder = item
        timeout = 2.0 if name == "hangs" else 15.0
        return name, grade_backprop(find_exercise(folder), timeout, 120.0)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, folders.items()))


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_fails_in_the_sandbox(sandboxed, variant):
    _, row_name, words = VARIANTS[variant]
    row = _row(sandboxed[variant], row_name)
    assert row.status == FAIL and words in row.diagnosis


@pytest.mark.slow
def test_hanging_and_crashing_code_fail_their_row_only(sandboxed):
    hangs, crashes = sandboxed["hangs"], sandboxed["crashes"]
    assert "did not finish in 2 s" in _row(hangs, "dlogits_fused").diagnosis
    assert _row(hangs, "dhprebn_fused").status == PASS  # restarted, d.hpreact given back
    assert "exited with code 3" in _row(crashes, "dbnraw").diagnosis
    assert _row(crashes, "dbnvar_inv").status == FAIL  # needs dbnraw
    assert _row(crashes, "dhprebn_fused").status == PASS  # after a restart


@pytest.mark.slow
def test_the_starter_s_train_py_trains_with_the_solved_backward(tmp_path):
    (tmp_path / "backprop.py").write_text(SOLVED.read_text())
    (tmp_path / "train.py").write_text((TEMPLATES / "train.py").read_text())
    for flags in ([], ["--fused"]):
        done = subprocess.run(
            [sys.executable, "train.py", *flags],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        losses = [float(line.split()[-1]) for line in done.stdout.splitlines()]
        assert done.returncode == 0 and losses[0] > 3.0 and losses[-1] < 2.6, done.stderr


def test_find_exercise_takes_the_module_or_its_folder_and_nothing_else(tmp_path):
    assert find_exercise(SOLVED.parent).file == SOLVED
    assert find_exercise(SOLVED).file == SOLVED
    (tmp_path / "notes.txt").write_text(SOLVED.read_text())
    assert find_exercise(tmp_path / "notes.txt") is None
    assert find_exercise(tmp_path) is None  # no .py file defines the exercise
    assert find_exercise(Path(__file__).parent / "learner_engines" / "tensor") is None
