"""What a new learner walking init/check met: slips the reports did not name, and starter
texts that led to an error. Each engine is a solved one with one slip a learner made on
the walk; its row must fail with words naming that slip (the numbers are PyTorch's, the
grader's oracle)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from modelwright_autograd.learner.backprop.grader import find_exercise, grade_backprop
from modelwright_autograd.learner.locate import locate
from modelwright_autograd.learner.report import FAIL, PASS, Report
from modelwright_autograd.learner.scalar.grader import grade
from modelwright_autograd.learner.scalar.oracle import torch_oracle
from modelwright_autograd.learner.starter import write_starter

ENGINES = Path(__file__).parent / "learner_engines"
TEMPLATES = Path(__file__).parents[1] / "src" / "modelwright_autograd" / "learner" / "templates"
CALM = 30.0  # seconds per check: room for a loaded machine


def _slipped(source: Path, folder: Path, old: str, new: str, name: str = "engine.py") -> Path:
    """``source`` with ``old`` (there exactly once) replaced by ``new``, written to
    folder/name."""
    text = source.read_text()
    assert text.count(old) == 1, old
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text.replace(old, new))
    return path


def _row(report: Report, name: str):
    return next(row for row in report.rows if name in row.name.split(", "))


@pytest.mark.parametrize(
    ("op", "old", "new", "words"),
    [
        (  # the square taken of the difference, not of t
            "tanh",
            "self.grad += (1 - out.data**2) * out.grad",
            "self.grad += (1 - out.data) ** 2 * out.grad",
            "(1 - t)**2 squares the difference",
        ),
        (  # .grad read where .data belongs: each input gains 0 * out.grad
            "a * b",
            "            self.grad += other.data * out.grad\n"
            "            other.grad += self.data * out.grad\n",
            "            self.grad += other.grad * out.grad\n"
            "            other.grad += self.grad * out.grad\n",
            "does the rule read other.grad where other.data belongs?",
        ),
        (  # the exponent's parentheses left out
            "a ** n",
            "self.grad += other * self.data ** (other - 1) * out.grad",
            "self.grad += (other * self.data**other - 1) * out.grad",
            "** binds before - and *",
        ),
        (  # -= for +=: every gradient of exp comes out negated
            "exp",
            "self.grad += out.data * out.grad",
            "self.grad -= out.data * out.grad",
            "the sign is flipped",
        ),
    ],
)
def test_a_scalar_rule_slip_is_named(tmp_path, op, old, new, words):
    path = _slipped(ENGINES / "solved_starter.py", tmp_path, old, new)
    report = grade(locate(path), torch_oracle(), CALM, 120.0)
    row = _row(report, op)
    assert row.status == FAIL and words in row.diagnosis, report.to_text()
    assert not report.passed


def test_the_order_reproduce_says_which_todo_it_waits_for(tmp_path):
    """The walk is judged before the rules: a sort with no visited set fails while TODO 3
    is still open, and its reproduce block (which multiplies) says it needs TODO 3."""
    path = _slipped(
        ENGINES / "solved_starter.py",
        tmp_path,
        "            self.grad += other.data * out.grad\n"
        "            other.grad += self.data * out.grad\n",
        '            raise NotImplementedError("TODO 3: the backward of a * b")\n',
    )
    path.write_text(path.read_text().replace("elif node not in visited:", "else:"))
    report = grade(locate(path), torch_oracle(), CALM, 120.0)
    order = _row(report, "order")
    assert order.status == FAIL and "counted 2 times" in order.diagnosis, report.to_text()
    assert order.reproduce[-1].endswith("TODO 3: the backward of a * b")
    assert "not done yet: TODO 3" in _row(report, "a * b").diagnosis


def test_a_rule_checked_through_an_unfinished_product_waits_for_it(tmp_path):
    """Each rule is also run times 3 (upstream gradient 3, through *): with + done and
    TODO 3 open, a + b fails because a * b does, not under TODO 3's words as if + were
    the product."""
    path = _slipped(
        ENGINES / "solved_starter.py",
        tmp_path,
        "            self.grad += other.data * out.grad\n"
        "            other.grad += self.data * out.grad\n",
        '            raise NotImplementedError("TODO 3: the backward of a * b")\n',
    )
    report = grade(locate(path), torch_oracle(), CALM, 120.0)
    assert _row(report, "a * b").diagnosis == "not done yet: TODO 3: the backward of a * b"
    for op in ("a + b", "tanh", "exp"):
        assert _row(report, op).diagnosis == "fails because 'a * b' fails", report.to_text()


def test_the_starter_neuron_keeps_nonlin_for_its_call(tmp_path):
    """TODO 9's and TODO 10's comments followed word for word: TODO 10 reads self.nonlin,
    which the given part of __init__ must set (TODO 9 asks only for w and b), and the
    MLP's last layer comes out linear."""
    text = (TEMPLATES / "nn.py").read_text()
    bodies = {
        "9": "self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]\n"
        "        self.b = Value(0.0)",
        "10": "act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)\n"
        "        return act.tanh() if self.nonlin else act",
        "11": "return self.w + [self.b]",
        "12": "self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]",
        "13": "return [p for part in self.PARTS for p in part.parameters()]",
        "14": "for p in self.parameters():\n            p.grad = 0.0",
    }

    def fill(match: re.Match[str]) -> str:
        body = bodies[match[2]]
        if "PARTS" in body:
            body = body.replace("PARTS", "neurons" if "Layer" in match[3] else "layers")
        return match[1] + body

    text = re.sub(r'( +)raise NotImplementedError\("TODO (\d+): ([^"]*)"\)', fill, text)
    package = tmp_path / "walkpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text((ENGINES / "solved_starter.py").read_text())
    (package / "nn.py").write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.find_spec("walkpkg.nn")
        nn = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(nn)
        model = nn.MLP(2, [3, 1])
        assert model.layers[0].neurons[0].nonlin and not model.layers[-1].neurons[0].nonlin
        assert len(model.parameters()) == 3 * 3 + 4
        out = model([0.5, -0.25])
        out.backward()
        assert all(p.grad != 0.0 for p in model.layers[-1].parameters())
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "walkpkg" or m.startswith("walkpkg.")]:
            del sys.modules[name]


def test_a_dot_product_backward_that_raises_says_what_it_raised(tmp_path):
    """(3,) @ (3,) makes a number, so out.grad has shape (); a rule treating the 1-D a as
    a row first raises AxisError. The row names the case, the right rule for it, and what
    was raised."""
    old = (
        "            if a.ndim == 1 and b.ndim == 1:  # a dot product: out is a number\n"
        "                self.grad += g * b\n"
        "                other.grad += g * a\n"
        "                return\n"
    )
    path = _slipped(ENGINES / "tensor" / "solved_starter.py", tmp_path, old, "")
    report = grade(locate(path), torch_oracle(), CALM, 120.0)
    row = _row(report, "a @ b")
    assert row.status == FAIL, report.to_text()
    assert "d/da = out.grad * b and d/db = out.grad * a" in row.diagnosis
    assert "raised AxisError" in row.diagnosis
    assert _row(report, "a * b").status == PASS


@pytest.mark.parametrize(
    ("old", "symbol"),
    [
        ("self.grad += unbroadcast(other.data * out.grad, self.shape)", "*"),
        (
            "self.grad += unbroadcast(out.grad, self.shape)\n"
            "            other.grad += unbroadcast(-out.grad",
            "-",
        ),
    ],
)
def test_a_tensor_rule_assigning_only_its_first_input_is_named_by_reuse(tmp_path, old, symbol):
    """self.grad = ..., other.grad += ...: right on `a op a` (the second use adds back what
    the first overwrote), wrong once `+ a` has given a its share first. The reuse row
    names the op; before, reuse passed and 'order' blamed the sort."""
    new = old.replace("self.grad +=", "self.grad =")
    path = _slipped(ENGINES / "tensor" / "solved_starter.py", tmp_path, old, new)
    report = grade(locate(path), torch_oracle(), CALM, 120.0)
    reuse = _row(report, "reuse")
    words = f"`=` where `+=` belongs in the backward of {symbol}."
    assert reuse.status == FAIL and words in reuse.diagnosis, report.to_text()
    assert "sort topologically" not in _row(report, "order").diagnosis
    assert not report.passed


def test_backprop_names_two_wrong_gradients_above_in_the_plural(tmp_path):
    """dcounts missing its path through counts_sum: dnorm_logits and dlogit_maxes are
    right given it, and dlogits right given both of them."""
    solved = ENGINES / "backprop" / "solved" / "backprop.py"
    text = solved.read_text()
    start = text.index("def dcounts(f, d):")
    end = text.index("\ndef ", start + 1)
    wrong = "def dcounts(f, d):\n    return f.counts_sum_inv * d.probs\n\n"  # one path of two
    (tmp_path / "backprop.py").write_text(text[:start] + wrong + text[end + 1 :])
    report = grade_backprop(find_exercise(tmp_path), CALM, 120.0)
    dlogits = _row(report, "dlogits")
    assert dlogits.status == FAIL, report.to_text()
    assert "dlogit_maxes and dnorm_logits above, which are wrong" in dlogits.diagnosis
    assert _row(report, "dlogit_maxes").diagnosis.endswith("which is wrong: fix that first")


@pytest.mark.parametrize("tensor", [False, True])
def test_train_py_finds_the_package_without_an_install(tmp_path, tensor):
    """README step 3 says `python train.py`; after `uv sync` that python is not the
    .venv's, so the package is not installed for it. train.py finds it in src/ (as pytest
    and the notebook do): the untouched starter stops at a TODO of its network."""
    write_starter(tmp_path / "repo", tensor=tensor)
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run(
        [sys.executable, "train.py"],
        cwd=tmp_path / "repo",
        env={**environment, "MPLBACKEND": "Agg"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode != 0 and "ModuleNotFoundError" not in ran.stderr, ran.stderr
    assert "NotImplementedError: TODO" in ran.stderr, ran.stderr
