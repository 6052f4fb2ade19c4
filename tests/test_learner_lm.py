"""`modelwright-autograd init --lm` and `check` on a learner's language models.

tests/learner_engines/lm/solved/ is the LM starter solved (its engine.py is the solved tensor
starter); variants.py lists its one-bug variants, each with the row that must fail and the
words of its diagnosis, and correct engines written differently that must pass. Their
end-to-end grading runs once, in parallel, in the slow run; the default run checks init,
the replies' shapes and the diagnoses on numbers made by the reference itself.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from test_learner import CALM, _row

import modelwright_autograd.learner
from modelwright_autograd.cli import main
from modelwright_autograd.learner.lm import cases
from modelwright_autograd.learner.lm.checks import GATE, op_problem
from modelwright_autograd.learner.lm.replies import well_formed_lm
from modelwright_autograd.learner.locate import locate
from modelwright_autograd.learner.report import FAIL, PASS
from modelwright_autograd.learner.scalar.grader import grade
from modelwright_autograd.learner.scalar.oracle import finite_difference_oracle, torch_oracle
from modelwright_autograd.learner.starter import LM_MODULES, LM_TOP
from tests.learner_engines.write import source

HERE = Path(__file__).parent / "learner_engines"
SOLVED = HERE / "lm" / "solved"
TEMPLATES_LM = Path(modelwright_autograd.learner.__file__).parent / "templates_lm"
sys.path.insert(0, str(HERE / "lm"))
from variants import BUGS, WRITTEN_DIFFERENTLY  # noqa: E402


def solved_copy(folder: Path) -> Path:
    """solved/ as files of their own (its engine.py link followed)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in SOLVED.iterdir():
        if path.suffix == ".py":
            shutil.copyfile(path, folder / path.name)
    return folder


def edited(folder: Path, edits: list[tuple[str, list[tuple[str | None, str]]]]) -> Path:
    """solved/ with each file's (old, new) replacements; an old of None appends new."""
    solved_copy(folder)
    for name, changes in edits:
        text = (folder / name).read_text()
        for old, new in changes:
            if old is None:
                text += new
                continue
            assert text.count(old) == 1, (folder.name, old)
            text = text.replace(old, new)
        (folder / name).write_text(text)
    return folder


# ---------------------------------------------------------------------- init --lm
def test_init_lm_writes_the_tensor_repository_and_the_lm_files(tmp_path, capsys):
    assert main(["init", "--lm", str(tmp_path / "new")]) == 0
    package = tmp_path / "new" / "src" / "new"
    assert sorted(p.name for p in package.iterdir()) == sorted(
        ["__init__.py", "engine.py", "nn.py", *LM_MODULES]
    )
    assert all((tmp_path / "new" / name).is_file() for name in LM_TOP)
    assert "class Tensor" in (package / "engine.py").read_text()
    assert "from .engine import Tensor" in (package / "lm_ops.py").read_text()
    assert "from new.models import" in (tmp_path / "new" / "lm.ipynb").read_text()
    assert capsys.readouterr().out.startswith("wrote ")


def test_init_lm_into_a_tensor_repository_adds_what_is_missing_and_keeps_every_file(
    tmp_path, capsys
):
    folder = tmp_path / "mine"
    assert main(["init", "--tensor", str(folder)]) == 0
    engine = folder / "src" / "mine" / "engine.py"
    engine.write_text(engine.read_text() + "# mine\n")
    (folder / "src" / "mine" / "models.py").write_text("# my own models.py\n")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["init", "--lm", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("added lm_ops.py, LM.md, lm.ipynb to ") and "keeping your files" in out
    assert all(p.read_bytes() == data for p, data in before.items())  # nothing replaced
    assert (folder / "src" / "mine" / "lm_ops.py").exists()
    assert main(["init", "--lm", str(folder)]) == 0  # again: nothing is missing
    assert "nothing to add" in capsys.readouterr().out


def test_init_lm_into_a_flat_tensor_folder_imports_without_a_package(tmp_path):
    folder = tmp_path / "flat"
    folder.mkdir()
    shutil.copyfile(HERE / "tensor" / "solved_starter.py", folder / "engine.py")
    assert main(["init", "--lm", str(folder)]) == 0
    assert "from engine import Tensor" in (folder / "lm_ops.py").read_text()
    assert "from lm_ops import" in (folder / "models.py").read_text()
    assert "from models import" in (folder / "lm.ipynb").read_text()


def test_init_lm_refuses_a_scalar_engine_and_a_folder_without_an_engine(tmp_path, capsys):
    folder = tmp_path / "scalar"
    assert main(["init", str(folder)]) == 0
    names = sorted(p.name for p in folder.rglob("*"))
    capsys.readouterr()
    assert main(["init", "--lm", str(folder)]) == 2
    assert "is a scalar engine (class Value)" in capsys.readouterr().err
    assert sorted(p.name for p in folder.rglob("*")) == names  # nothing written
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("")
    assert main(["init", "--lm", str(tmp_path / "other")]) == 2
    assert "holds no tensor engine" in capsys.readouterr().err
    assert main(["init", "--lm", "--tensor", str(tmp_path / "both")]) == 2


def test_the_lm_templates_are_the_solved_files_with_their_bodies_as_todos():
    for name in ("lm_ops.py", "models.py"):
        template = ast.parse((TEMPLATES_LM / name).read_text())
        solved = ast.parse((SOLVED / name).read_text())
        assert _definitions(template) == _definitions(solved), name
    todos = " ".join((TEMPLATES_LM / n).read_text() for n in LM_MODULES)
    assert all(f'NotImplementedError("TODO {n}:' in todos for n in range(22, 38))


def _definitions(tree: ast.Module) -> list[str]:
    return [
        f"{node.name}.{item.name}" if isinstance(item, ast.FunctionDef) else node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        for item in ([node] if isinstance(node, ast.FunctionDef) else [node, *node.body])
        if isinstance(item, (ast.FunctionDef, ast.ClassDef))
    ]


# ---------------------------------------------------------------------- the pieces
def test_line_of_reads_the_source_and_gives_up_quietly(tmp_path):
    """The grader finds the line to look at by reading the learner's file, never running
    or parsing it (a file that does not parse still has its lines); a file it cannot read
    gives no line rather than an error."""
    from modelwright_autograd.learner.locate import MAX_SOURCE_BYTES, line_of

    good = tmp_path / "models.py"
    good.write_text(
        "import os\n\n\ndef softmax(x):\n    pass\n\n\nclass A:\n    x = 1\n\n"
        "    def helper(self):\n        def forward():\n            pass\n\n"
        "# a comment at the margin\n    def forward(self):\n        os.abort()\n\n\n"
        "class B:\n    def backward(self):\n        pass\n"
    )
    assert line_of(good, "softmax") == "models.py:4"
    assert line_of(good, "A.forward") == "models.py:16"  # not helper's inner forward
    assert line_of(good, "A.backward") is None and line_of(good, "C") is None
    assert line_of(good, "B.backward") == "models.py:21"
    (tmp_path / "syntax.py").write_text("def f(:\n")
    assert line_of(tmp_path / "syntax.py", "f") == "syntax.py:1"
    (tmp_path / "big.py").write_text("#" * (MAX_SOURCE_BYTES + 1) + "\ndef f():\n    pass\n")
    assert line_of(tmp_path / "big.py", "f") is None
    assert line_of(tmp_path / "missing.py", "f") is None


def test_two_losses_are_printed_with_the_digits_that_tell_them_apart():
    from modelwright_autograd.learner.lm.checks import losses_text

    assert losses_text(1.5, 2.5) == "1.5, torch's 2.5"
    assert losses_text(3.4722512, 3.4722534) == "3.472251, torch's 3.472253"
    assert losses_text(5.617241, 5.617241) == "5.61724, torch's 5.61724"  # equal: 6 digits


def test_a_forged_reply_is_refused():
    array = {"shape": [1], "data": [1.0]}
    model = {"do": "lm_model", "weights": {"w": array}}
    assert well_formed_lm(model, {"loss": 1.0, "grads": {"w": array}})
    assert not well_formed_lm(model, {"loss": 1, "grads": {"w": array}})
    assert not well_formed_lm(model, {"loss": 1.0, "grads": {"w": [1.0]}})
    assert not well_formed_lm(model, {"loss": 1.0, "grads": {}})  # a gradient left out
    sampled = {**model, "logits": True}
    reply = {"loss": 1.0, "grads": {"w": array}, "logits": array, "short_logits": array}
    assert well_formed_lm(sampled, reply)
    assert not well_formed_lm(sampled, {"loss": 1.0, "grads": {"w": array}, "logits": array})
    op = {"do": "lm_op", "case": {"tensors": {"x": array}}}
    assert not well_formed_lm(op, {"out": array, "grads": {"x": {"shape": [2]}}})
    assert not well_formed_lm(op, {"out": array, "grads": {"y": array}})
    assert well_formed_lm(op, {"out": array, "grads": {"x": array}, "changed": ["x"]})
    assert not well_formed_lm(op, {"out": array, "grads": {"x": array}})  # changed left out
    assert not well_formed_lm(op, {"out": array, "grads": {"x": array}, "changed": ["\x1b[2J"]})
    init = {"do": "lm_init", "shapes": {"w": [1]}}  # the weights the model drew itself
    stats = [0.0, 1.0, -2.0, 2.0, 3.0, 0.5, -0.5]  # mean, std, ends, kurtosis, two values
    assert well_formed_lm(init, {"initial": {"w": stats}})
    assert not well_formed_lm(init, {"initial": {"v": stats}})
    assert not well_formed_lm(init, {"initial": {"w": stats[:4]}})
    assert not well_formed_lm(init, {"initial": {"w": [*stats[:6], "2"]}})
    train = {"do": "lm_train", "weights": {"w": array}}
    trained = {"losses": [1.0, 2.0], "first": {"w": array}, "made_with": [0.1, None]}
    assert well_formed_lm(train, {**trained, "repeated": ["w"]})
    assert not well_formed_lm(train, {**trained, "repeated": ["v"]})
    trained["repeated"] = []
    assert not well_formed_lm(train, {**trained, "losses": [1.0, "2"]})
    assert not well_formed_lm(train, {**trained, "made_with": ["0.1"]})
    assert well_formed_lm(train, {"names": [["w", [2, 3]]]})
    assert not well_formed_lm(train, {"names": [["w", [2.5]]]})


def test_the_gpt_trains_on_nanogpts_schedule_and_the_mlp_on_a_constant_lr():
    """nanoGPT's get_lr over the GPT's 10 steps (warmup 2, cosine to lr / 10 at step 9),
    by hand: 3e-3 (it + 1) / 3, then 3e-4 + 0.5 (1 + cos(pi (it - 2) / 7)) 2.7e-3; the
    MLP's run sets no rate (makemore's loop keeps the optimizer's lr)."""
    rates = cases.TRAINING["GPT"]["rates"]
    assert rates == cases.learning_rates(3e-3, 10, 2) and len(rates) == 10
    assert rates[:3] == pytest.approx([1e-3, 2e-3, 3e-3], rel=1e-12)
    assert rates[3] == pytest.approx(0.0028663079718, rel=1e-10)  # cos(pi/7) = 0.9009688679
    assert rates[9] == pytest.approx(3e-4, rel=1e-12)
    assert rates[2:] == sorted(rates[2:], reverse=True) and len(set(rates)) == 10
    assert "rates" not in cases.TRAINING["MLP"]


def test_an_init_is_judged_by_the_authors_laws():
    """Draws from each law pass; zeros, a normal where torch draws a uniform (its std
    alike), c_proj scaled by 1 / n_layer, a one-sided uniform and a gain not 1 each fail,
    naming the parameter."""
    from modelwright_autograd.learner.lm.checks import _initial_problem

    def judged(kind, drawn):
        def stats(a):  # the probe's: mean, std, ends, kurtosis, the first two values
            kurtosis = np.mean((a - a.mean()) ** 4) / a.std() ** 4 if a.std() else 0.0
            return [a.mean(), a.std(), a.min(), a.max(), kurtosis, *a.ravel()[:2]]

        stats = {n: stats(a) for n, a in drawn.items()}
        shapes = {n: a.shape for n, a in drawn.items()}
        found = _initial_problem(kind[:3], cases.initial_laws(kind, shapes), shapes, stats)
        return found and found[0]

    rng = np.random.default_rng(5)
    assert cases.MODEL_CONFIGS["GPT init"]["n_layer"] == 4
    shapes = {"w.weight": (96, 32), "c_proj.weight": (32, 128)}
    laws = cases.initial_laws("GPT init", {**shapes, "ln.weight": (32,), "b.bias": (32,)})
    assert laws["c_proj.weight"] == ("normal", 0.02 / np.sqrt(8))  # 0.02 / sqrt(2 n_layer)
    assert laws["ln.weight"] == ("constant", 1.0) and laws["b.bias"] == ("constant", 0.0)
    gpt = {
        "w.weight": rng.normal(0.0, 0.02, (96, 32)),
        "c_proj.weight": rng.normal(0.0, 0.02 / np.sqrt(8), (32, 128)),
        "ln.weight": np.ones(32),
        "b.bias": np.zeros(32),
    }
    assert judged("GPT init", gpt) is None
    assert judged("GPT init", {**gpt, "w.weight": np.zeros((96, 32))}) == "w.weight"
    over_n_layer = rng.normal(0.0, 0.02 / 4, (32, 128))
    assert judged("GPT init", {**gpt, "c_proj.weight": over_n_layer}) == "c_proj.weight"
    assert judged("GPT init", {**gpt, "ln.weight": np.full(32, 0.5)}) == "ln.weight"
    flat = rng.uniform(-0.02 * np.sqrt(3), 0.02 * np.sqrt(3), (96, 32))  # N(0, 0.02)'s std
    assert judged("GPT init", {**gpt, "w.weight": flat}) == "w.weight"  # kurtosis 1.8, not 3
    twins = {**gpt, "x.weight": gpt["w.weight"].copy()}  # drawn alike: one seeded afresh
    shapes_twins = {**shapes, "x.weight": (96, 32)}
    assert cases.initial_laws("GPT init", shapes_twins)["x.weight"] == ("normal", 0.02)
    assert judged("GPT init", twins) == "x.weight"
    bound = 1 / np.sqrt(120)
    mlp = {
        "wte.weight": rng.normal(0.0, 1.0, (30, 24)),
        "mlp.0.weight": rng.uniform(-bound, bound, (200, 120)),
        "mlp.0.bias": rng.uniform(-bound, bound, 200),
    }
    shapes = {n: a.shape for n, a in mlp.items()}
    assert cases.initial_laws("MLP init", shapes)["mlp.0.bias"] == ("uniform", bound)  # fan-in
    assert judged("MLP init", mlp) is None
    normal = rng.normal(0.0, bound / np.sqrt(3), (200, 120))  # a uniform's std, unbounded
    assert judged("MLP init", {**mlp, "mlp.0.weight": normal}) == "mlp.0.weight"
    one_sided = rng.uniform(0.0, bound, 200)
    assert judged("MLP init", {**mlp, "mlp.0.bias": one_sided}) == "mlp.0.bias"


@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("torch")
    from modelwright_autograd.learner.lm import oracle

    return oracle


def _case(name: str) -> cases.OpCase:
    return next(c for c in cases.op_cases() if c.name == name)


def test_the_op_diagnoses_recognise_their_bugs_from_the_numbers(reference):
    """Each classic bug's numbers, made by hand from the reference's, get its words."""
    case = _case("softmax")
    s, want = reference.run_op(case)
    g = case.weight
    assert "misses the sum term" in op_problem(case, s, {"x": s * g}, s, want)
    assert op_problem(case, s, want, s, want) == ""
    case = _case("embedding")
    out, want = reference.run_op(case)
    assigned = np.zeros_like(case.tensors["w"])
    assigned[case.arrays["idx"]] = case.weight
    assert "np.add.at" in op_problem(case, out, {"w": assigned}, out, want)
    case = _case("layer_norm")
    out, want = reference.run_op(case)
    x, w = case.tensors["x"], case.tensors["w"]
    no_mean = {**want, "x": case.weight * w / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)}
    assert "misses the mean terms" in op_problem(case, out, no_mean, out, want)


def test_the_embedding_case_repeats_a_row_and_softmax_large_overflows_naively():
    idx = _case("embedding").arrays["idx"]
    assert np.bincount(idx.ravel()).max() >= 3
    with np.errstate(over="ignore", invalid="ignore"):
        x = _case("softmax of large numbers").tensors["x"]
        assert not np.isfinite(np.exp(x) / np.exp(x).sum(-1, keepdims=True)).all()


def test_each_attention_bug_is_told_apart_from_the_others(reference):
    shapes = reference.parameter_shapes("CausalSelfAttention")
    weights = cases.weights_for(shapes, 1, 0.3)
    x = np.random.default_rng(2).normal(0.0, 1.0, (2, 5, cases.GPT_CONFIG["n_embd"]))
    told = reference.attention_bug
    assert told(weights, x, reference.attention_with(weights, x, "")) == ""
    for bug, words in reference.ATTENTION_BUGS.items():
        assert told(weights, x, reference.attention_with(weights, x, bug)) == words


def test_the_reference_attention_is_torchs_module(reference):
    import torch

    shapes = reference.parameter_shapes("CausalSelfAttention")
    weights = cases.weights_for(shapes, 3, 0.3)
    x = np.random.default_rng(4).normal(0.0, 1.0, (2, 5, cases.GPT_CONFIG["n_embd"]))
    module = reference.build("CausalSelfAttention", weights)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    assert np.allclose(reference.attention_with(weights, x, ""), want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- the slow run
def _grade(paths, oracle):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        reports = pool.map(lambda p: grade(locate(p), oracle, CALM, 120.0), paths)
        return dict(zip(paths, reports))


@pytest.fixture(scope="session")
def lm_reports(tmp_path_factory):
    oracle = torch_oracle()
    if oracle is None:
        pytest.skip("torch is the LM checks' reference")
    root = tmp_path_factory.mktemp("lm")
    folders = {"solved": SOLVED}
    for name, (file, changes, _, _) in BUGS.items():
        folders[name] = edited(root / name, [(file, changes)])
    for name, edits in WRITTEN_DIFFERENTLY.items():
        folders[name] = edited(root / name, edits)
    summed = solved_copy(root / "cross_entropy_summed")
    (summed / "engine.py").write_text(source("tensor/cross_entropy_not_mean"))
    folders["cross_entropy_summed"] = summed
    starter = root / "starter"
    main(["init", "--lm", str(starter)])
    shutil.copyfile(HERE / "tensor" / "solved_starter.py", starter / "src/starter/engine.py")
    folders["starter"] = starter
    package = root / "package"  # solved/ as a package in init's repository
    main(["init", "--lm", str(package)])
    for name in ("engine.py", *LM_MODULES):
        text = (SOLVED / name).read_text().replace("from engine", "from .engine")
        (package / "src/package" / name).write_text(text.replace("from lm_ops", "from .lm_ops"))
    folders["package"] = package
    moved = solved_copy(root / "softmax_in_engine")  # lm_ops.py imports it from engine.py
    ops = (moved / "lm_ops.py").read_text()
    rule = ops[ops.index("def softmax(") : ops.index("\n\n\n", ops.index("def softmax("))]
    (moved / "lm_ops.py").write_text(
        ops.replace(rule, "").replace(
            "from engine import Tensor\n", "from engine import Tensor, softmax\n"
        )
    )
    (moved / "engine.py").write_text((moved / "engine.py").read_text() + "\n\n" + rule + "\n")
    folders["softmax_in_engine"] = moved
    big = solved_copy(root / "models_too_big")
    with open(big / "models.py", "a") as f:
        f.write("#" * (5 * 2**20) + "\n")
    folders["models_too_big"] = big
    reports = _grade(list(folders.values()), oracle)
    return {name: reports[path] for name, path in folders.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["solved", "package"])
def test_the_solved_lm_starter_passes_the_lm_gate(lm_reports, name):
    report = lm_reports[name]
    assert report.passed, report.to_text()
    assert report.to_text().splitlines()[-1].startswith(GATE)
    rows = {row.name: row for row in report.rows}
    for name in ("GPT", "makemore's MLP", "MLP trains on names", "GPT trains on Shakespeare"):
        assert rows[name].status == PASS
    assert "all 40 parameters' gradients equal torch's" in rows["GPT"].diagnosis


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUGS))
def test_each_lm_bug_fails_with_its_own_diagnosis(lm_reports, name):
    _, _, row, words = BUGS[name]
    report = lm_reports[name]
    assert not report.passed
    assert _row(report, row).status == FAIL, report.to_text()
    assert words in _row(report, row).diagnosis, report.to_text()
    assert len(report.to_text().splitlines()) <= 40, report.to_text()


#: The function (or class method) each bug's row points at, by the row.
LOOKED_AT = {
    "embedding": "embedding",
    "softmax": "softmax",
    "softmax of large numbers": "softmax",
    "softmax along dim 0": "softmax",
    "masked_fill": "masked_fill",
    "layer_norm": "layer_norm",
    "gelu": "gelu",
    "cat": "cat",
    "dropout in eval": "dropout",
    "dropout in training": "dropout",
    "CausalSelfAttention": "CausalSelfAttention.__call__",  # the starter's modules: no forward
}


def _def_line(text: str, name: str) -> int:
    """The line of ``def name(`` at the top level, or of ``def method(`` after ``class
    Name`` for ``Name.method``: counted here from the text, as a reader would find it."""
    lines = text.splitlines()
    if "." not in name:
        return next(i for i, line in enumerate(lines, 1) if line.startswith(f"def {name}("))
    cls, method = name.split(".")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"class {cls}"))
    return next(i for i, line in enumerate(lines[start:], start + 1) if f"def {method}(" in line)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", sorted(n for n, bug in BUGS.items() if bug[2] in LOOKED_AT and "crash" not in n)
)
def test_each_lm_bug_names_the_line_to_look_at(lm_reports, name):
    """An op's row points at the op in lm_ops.py, an attention row at the class's forward
    in models.py, by line, as the tensor checks point at engine.py."""
    file, changes, row, _ = BUGS[name]
    text = (SOLVED / file).read_text()
    for old, new in changes:
        text = text.replace(old, new)
    target = LOOKED_AT[row]
    place = f"look at {file}:{_def_line(text, target)} ({target})"
    assert place in _row(lm_reports[name], row).diagnosis


@pytest.mark.slow
def test_the_lm_diagnoses_are_each_their_own(lm_reports):
    """No bug's row carries the words of another bug diagnosed on the same row."""
    for name, (_, _, row, words) in BUGS.items():
        diagnosis = _row(lm_reports[name], row).diagnosis
        for other, (_, _, other_row, other_words) in BUGS.items():
            if other_row == row and other_words != words:
                assert other_words not in diagnosis, (name, other)


@pytest.mark.slow
def test_the_lm_checks_run_or_say_why_not(lm_reports):
    """lm_ops.py is found by its name even when its softmax comes from the engine (the LM
    checks run and pass); a models.py too big to read fails a row saying so, rather than
    the LM checks being left out and the build gate given."""
    assert lm_reports["softmax_in_engine"].passed, lm_reports["softmax_in_engine"].to_text()
    report = lm_reports["models_too_big"]
    assert not report.passed
    diagnosis = _row(report, "LM checks").diagnosis
    assert "no module importing engine.py defines class GPT (models.py)" in diagnosis
    assert f"models.py is {5 * 2**20 + (SOLVED / 'models.py').stat().st_size + 1:,} bytes" in (
        diagnosis
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WRITTEN_DIFFERENTLY))
def test_correct_lm_engines_written_differently_pass(lm_reports, name):
    assert lm_reports[name].passed, lm_reports[name].to_text()


@pytest.mark.slow
def test_a_tensor_bug_stops_the_lm_checks_and_the_starter_names_its_todos(lm_reports):
    report = lm_reports["cross_entropy_summed"]
    assert "missing the 1/N of the mean" in _row(report, "cross_entropy").diagnosis
    assert _row(report, "LM checks").diagnosis == "not run: fix the tensor checks above first"
    starter = lm_reports["starter"]
    assert _row(starter, "embedding").diagnosis.startswith("not done yet: TODO 22")
    assert _row(starter, "GPT").diagnosis == "fails because 'embedding' fails"


@pytest.mark.slow
def test_without_torch_the_lm_checks_say_they_did_not_run(tmp_path):
    report = grade(locate(solved_copy(tmp_path / "fd")), finite_difference_oracle(), CALM, 120.0)
    row = _row(report, "LM checks")
    assert row.status == "note" and "not run without PyTorch" in row.diagnosis
    assert not report.to_text().splitlines()[-1].startswith("LM GATE")


@pytest.mark.slow
def test_the_lm_notebook_trains_and_samples_on_the_solved_starter(tmp_path, monkeypatch):
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    folder = tmp_path / "notebook"
    main(["init", "--lm", str(folder)])
    for name in ("engine.py", *LM_MODULES):
        text = (SOLVED / name).read_text().replace("from engine", "from .engine")
        (folder / "src/notebook" / name).write_text(text.replace("from lm_ops", "from .lm_ops"))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(folder / "lm.ipynb", as_version=4)
    nbformat.validate(nb)
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    client = NotebookClient(nb, km=km, timeout=600, resources={"metadata": {"path": str(folder)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    text = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    losses = [float(line.split()[-1]) for line in text.splitlines() if line.startswith("step")]
    assert len(losses) == 12  # six lines for each model
    assert losses[5] < losses[0] - 0.5 and losses[11] < losses[6] - 0.5  # both learn
    after = text.split(f"{losses[-1]:.4f}\n", 1)[1]  # the samples, after the last loss
    assert after.startswith(".") and "\nROMEO:" in after
