"""The train and evaluate commands, run in-process through ``cli.main`` in temporary
directories: outputs and pictures, the training loop against PyTorch, reproducibility,
usage errors (exit 2, nothing written), broken checkpoints (exit 1), both engines."""

import io
import json
import re
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest
import torch

from modelwright_autograd import cli
from modelwright_autograd.data import load_dataset
from modelwright_autograd.tensor import nn as tensor_nn
from modelwright_autograd.training.evaluate import evaluate_checkpoint
from modelwright_autograd.training.learners import ScalarLearner, TensorLearner
from modelwright_autograd.training.loop import fit
from modelwright_autograd.training.settings import TrainConfig
from tests.legacy_v2 import as_version_2

SMALL = ["--samples", "30", "--steps", "5", "--hidden", "4,4", "--quiet"]
MICROGRAD_STEP0_LOSS = 0.8958441028683222  # micrograd's demo.ipynb, step 0


def _train(tmp_path, *options, name="run"):
    out = tmp_path / name
    assert cli.main(["train", *options, "--out", str(out)]) == 0
    return out, json.loads((out / "metrics.json").read_text())


def _check_png(path):
    """A real image, not blank: some spread in the pixels and more than a few colours."""
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    assert image.shape[0] > 200 and image.shape[1] > 200
    assert image.std() > 0.05
    channels = np.round(image * 255).astype(np.uint32).reshape(-1, image.shape[2])
    packed = channels[:, 0] << 16 | channels[:, 1] << 8 | channels[:, 2]  # one int per colour
    assert len(np.unique(packed)) > 20


class _Quiet:
    def set_postfix(self, **kwargs):
        pass

    def update(self, n):
        pass


# ---------------------------------------------------------------------- end to end
def test_small_scalar_run_end_to_end_and_evaluate_reproduces_it(tmp_path, capsys):
    out, metrics = _train(tmp_path, *SMALL)
    assert sorted(p.name for p in out.iterdir()) == [
        "decision_boundary.png",
        "loss_curve.png",
        "metrics.json",
        "model.json",
        "model.safetensors",
    ]
    _check_png(out / "loss_curve.png")
    _check_png(out / "decision_boundary.png")
    assert {"config", "loss", "accuracy", "final_loss", "final_accuracy"} <= set(metrics)
    assert "test_loss" not in metrics  # the 2-D sets train on every point, no held-out split
    assert len(metrics["loss"]) == len(metrics["accuracy"]) == 5
    config = metrics["config"]
    assert (config["dataset"], config["samples"], config["hidden"]) == ("moons", 30, [4, 4])
    assert (config["engine"], config["loss"], config["optimizer"]) == ("scalar", "svm", "sgd")
    printed = capsys.readouterr()
    assert printed.err == ""  # --quiet: no progress bar
    assert f"accuracy {metrics['final_accuracy']:.2%}" in printed.out
    assert str(out) in printed.out

    # evaluate regenerates the same 30 points from the checkpoint and gets the same numbers
    assert cli.main(["evaluate", "--checkpoint", str(out / "model.json")]) == 0
    shown = capsys.readouterr().out
    assert "evaluated on the data it was trained on" in shown
    correct, total = map(int, re.search(r"\((\d+)/(\d+)\)", shown).groups())
    assert total == 30 and correct / total == metrics["final_accuracy"]
    result = evaluate_checkpoint(out / "model.json")
    assert result.scores["train"].loss == metrics["final_loss"]  # bit for bit
    assert result.scores["train"].accuracy == metrics["final_accuracy"]


def test_evaluate_on_other_data(tmp_path, capsys):
    out, _ = _train(tmp_path, *SMALL)
    capsys.readouterr()
    assert cli.main(["evaluate", "--checkpoint", str(out / "model.json"), "--seed", "7"]) == 0
    shown = capsys.readouterr().out
    assert "new data" in shown and "seed 7" in shown and "(" in shown
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", "--checkpoint", str(out / "model.json"), "--dataset", "digits"])
    assert info.value.code == 2
    assert "--dataset: digits has 64 features" in capsys.readouterr().err


def test_default_output_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", *SMALL]) == 0
    assert cli.main(["train", *SMALL]) == 0  # same second: a second directory, not a clash
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2
    for run in runs:
        assert re.fullmatch(r"moons-\d{8}-\d{6}(-\d+)?", run.name)
        assert (run / "model.json").exists() and (run / "metrics.json").exists()


def test_progress_bar_only_on_a_terminal(tmp_path, capsys, monkeypatch):
    _train(tmp_path, *SMALL[:-1], name="not-a-tty")  # without --quiet
    assert capsys.readouterr().err == ""  # stderr is not a terminal here: no bar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    _train(tmp_path, *SMALL[:-1], name="tty")
    drawn = terminal.getvalue()
    final_line = drawn.rsplit("\r", 1)[-1]  # the bar stays, at its final state
    assert "5/5" in final_line and "loss=" in final_line and "acc=" in final_line


# ---------------------------------------------------------------------- the training loop
def test_training_loop_matches_pytorch_and_micrograds_first_loss():
    """The default workload, shortened to five steps, against the same steps written in
    torch (float64): hinge loss + 1e-4 L2, full batch, lr = 1.0 * (1 - 0.9*k/steps)."""
    steps = 5
    config = TrainConfig(steps=steps)
    data = load_dataset("moons", 100, 0.1, 1337)
    learner = ScalarLearner(config, 2)
    layers = [
        (
            torch.tensor([[w.data for w in n.w] for n in layer.neurons], dtype=torch.float64),
            torch.tensor([n.b.data for n in layer.neurons], dtype=torch.float64),
        )
        for layer in learner.model.layers
    ]
    params = [t.requires_grad_() for pair in layers for t in pair]
    X = torch.tensor(data.X_train)
    y = torch.tensor(2.0 * data.y_train - 1.0)
    expected = []
    for k in range(steps):
        h = X
        for i, (W, b) in enumerate(layers):
            h = h @ W.T + b
            if i < len(layers) - 1:
                h = torch.relu(h)
        loss = torch.relu(1 - y * h[:, 0]).mean() + 1e-4 * sum((p * p).sum() for p in params)
        expected.append(loss.item())
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= (1.0 - 0.9 * k / steps) * p.grad

    history = fit(learner, data, config, _Quiet())
    assert history.loss[0] == MICROGRAD_STEP0_LOSS
    assert history.loss == pytest.approx(expected, rel=1e-12, abs=0)
    # the scalar MLP lists each neuron's weights then its bias: row j of W, then b[j]
    in_scalar_order = [
        v for W, b in layers for row, bias in zip(W.tolist(), b.tolist()) for v in [*row, bias]
    ]
    trained = [p.data for p in learner.parameters()]
    assert trained == pytest.approx(in_scalar_order, rel=1e-10, abs=1e-12)


def test_scalar_and_tensor_learners_compute_the_same_loss():
    """Same weights, same batch: the Value graph and the Tensor graph agree for every loss."""
    data = load_dataset("moons", 40, 0.2, 3)
    for loss in ("svm", "mse", "bce"):
        config = TrainConfig(loss=loss, hidden=(5, 3), activation="tanh")
        scalar = ScalarLearner(config, 2)
        model = tensor_nn.MLP(2, [5, 3, 1], activation="tanh", seed=0)
        for layer, tlayer in zip(scalar.model.layers, model.layers):
            tlayer.weight.data[:] = [[w.data for w in n.w] for n in layer.neurons]
            tlayer.bias.data[:] = [n.b.data for n in layer.neurons]
        tensor = TensorLearner(config, 2, 2, model)
        s_loss, s_pred = scalar.forward(data.X_train, data.y_train)
        t_loss, t_pred = tensor.forward(data.X_train, data.y_train)
        assert t_loss.item() == pytest.approx(s_loss.data, rel=1e-13)
        assert np.array_equal(s_pred, t_pred)


def test_same_seed_same_curve_and_different_seeds_differ(tmp_path):
    options = [*SMALL, "--batch-size", "8"]
    out_a, first = _train(tmp_path, *options, name="a")
    out_b, again = _train(tmp_path, *options, name="b")
    assert first["loss"] == again["loss"] and first["accuracy"] == again["accuracy"]
    assert (out_a / "model.json").read_bytes() == (out_b / "model.json").read_bytes()
    _, other = _train(tmp_path, *options, "--seed", "2", name="c")
    assert other["loss"] != first["loss"]


@pytest.mark.parametrize(
    "options",
    [
        ["--loss", "mse", "--optimizer", "momentum"],
        ["--loss", "bce", "--optimizer", "adam", "--activation", "tanh"],
        ["--engine", "tensor", "--loss", "bce", "--optimizer", "momentum"],
        ["--engine", "tensor", "--activation", "sigmoid"],  # every net activation is offered
        ["--engine", "tensor", "--dataset", "spiral", "--loss", "mse", "--optimizer", "adam"],
        ["--dataset", "circles", "--l2", "0"],
        ["--dataset", "xor", "--batch-size", "7"],
    ],
)
def test_options_combinations_run_and_are_recorded(tmp_path, options):
    out, metrics = _train(tmp_path, *SMALL, *options)
    config = metrics["config"]
    for flag, value in zip(options[::2], options[1::2]):
        recorded = config[flag[2:].replace("-", "_")]
        assert recorded == (value if isinstance(recorded, str) else type(recorded)(value))
    assert evaluate_checkpoint(out / "model.json").scores["train"].loss == metrics["final_loss"]


def test_tensor_engine_on_moons_end_to_end(tmp_path):
    out, metrics = _train(tmp_path, "--engine", "tensor", "--quiet")
    assert sorted(p.name for p in out.iterdir()) == [
        "decision_boundary.png",
        "loss_curve.png",
        "metrics.json",
        "model.json",
        "model.safetensors",
    ]
    _check_png(out / "decision_boundary.png")
    _check_png(out / "loss_curve.png")
    assert metrics["config"]["engine"] == "tensor" and len(metrics["loss"]) == 100
    assert metrics["final_accuracy"] >= 0.97
    doc = json.loads((out / "model.json").read_text())
    assert doc["engine"] == "tensor" and doc["architecture"]["nouts"] == [16, 16, 1]
    result = evaluate_checkpoint(out / "model.json")
    assert result.scores["train"].loss == metrics["final_loss"]
    assert result.scores["train"].accuracy == metrics["final_accuracy"]


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--steps", "-5"], "--steps"),
        (["--steps", "0"], "--steps"),
        (["--steps", "2.5"], "--steps"),
        (["--hidden", "16,x"], "--hidden"),
        (["--hidden", "16,0"], "--hidden"),
        (["--dataset", "nope"], "--dataset"),
        (["--lr", "0"], "--lr"),
        (["--lr", "-1"], "--lr"),
        (["--lr", "nan"], "--lr"),
        (["--samples", "1"], "--samples"),
        (["--samples", "1000001"], "--samples"),
        (["--noise", "-0.1"], "--noise"),
        (["--batch-size", "0"], "--batch-size"),
        (["--seed", "-1"], "--seed"),
        (["--l2", "-1"], "--l2"),
        (["--loss", "ce"], "--loss"),
        (["--dataset", "digits", "--samples", "50"], "--samples"),
        (["--dataset", "digits", "--engine", "scalar"], "--engine"),
        (["--dataset", "digits", "--loss", "svm"], "--loss"),
    ],
)
def test_bad_options_are_usage_errors_and_write_nothing(
    tmp_path, monkeypatch, capsys, options, named
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        cli.main(["train", *options, "--out", str(tmp_path / "out")])
    assert info.value.code == 2
    assert f": {named}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_out_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("keep me")
    with pytest.raises(SystemExit) as info:
        cli.main(["train", *SMALL, "--out", str(target)])
    assert info.value.code == 2
    assert "--out" in capsys.readouterr().err
    assert target.read_text() == "keep me"


def test_a_diverging_run_exits_1_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    options = ["--loss", "mse", "--lr", "1000", "--samples", "20", "--steps", "10", "--quiet"]
    for engine in ("scalar", "tensor"):
        assert cli.main(["train", *options, "--engine", engine, "--out", str(out)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "training diverged" in err and "--lr" in err
        assert not out.exists()


def test_evaluate_bad_checkpoints_exit_2_with_one_line(tmp_path, capsys):
    missing = tmp_path / "missing.json"
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"format": "modelwright-autograd checkpoint", "vers')
    for path, problem in ((missing, "no such file"), (corrupt, "not valid JSON")):
        assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
        printed = capsys.readouterr()
        assert printed.out == ""
        assert printed.err.count("\n") == 1
        assert str(path) in printed.err and problem in printed.err


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory):
    """The text of a checkpoint from a 5-step run on 30 moons, to edit into broken ones."""
    out = tmp_path_factory.mktemp("small") / "run"
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 0
    as_version_2(out / "model.json")  # one file, the weights in it, to break in any part
    return (out / "model.json").read_text()


def _edit(*keys, value):
    def apply(doc):
        target = doc
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    apply.__name__ = ".".join(str(key) for key in keys)  # the test id
    return apply


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (_edit("objective", "l2", value=True), "bad l2 weight True in its objective"),
        (_edit("objective", "l2", value=-1e-4), "bad l2 weight -0.0001"),
        (_edit("objective", "l2", value=float("nan")), "bad l2 weight nan"),
        (_edit("objective", "l2", value=float("inf")), "bad l2 weight inf"),
        (_edit("objective", "l2", value=10**400), "bad l2 weight 1000000"),
        (_edit("data", "samples", value=10**9), "bad samples 1000000000 in its data"),
        (_edit("data", "samples", value=1), "bad samples 1 in its data"),
        (_edit("data", "samples", value=True), "bad samples True in its data"),
        (_edit("data", "samples", value=30.0), "bad samples 30.0 in its data"),
        (_edit("data", "noise", value=True), "bad noise True in its data"),
        (_edit("data", "noise", value=float("nan")), "bad noise nan in its data"),
        (_edit("data", "noise", value=10**400), "bad noise 1000000"),
        (_edit("data", "seed", value=True), "bad seed True in its data"),
        (_edit("data", "seed", value=2**32), "bad seed 4294967296 in its data"),
        (
            _edit("state_dict", "0.weight", "data", 4, value="0x1.8p+99999"),
            "is too large for a float64",
        ),
        # 3*16 + 17*160000 + 160001 weights: refused before anything is built
        (
            _edit("architecture", "nouts", value=[16, 160000, 1]),
            "architecture has 2,880,049 weights",
        ),
        # the 2-4-4-1 file holds 3*4 + 5*4 + 5 weights; 2-4-40000-1 needs 3*4 + 5*40000 + 40001
        (
            _edit("architecture", "nouts", value=[4, 40000, 1]),
            "'state_dict' holds 37 numbers; a scalar MLP 2-4-40000-1 (relu) has 240,013",
        ),
    ],
)
def test_evaluate_a_corrupt_checkpoint_exits_2_with_one_line(
    tmp_path, capsys, small_checkpoint, edit, problem
):
    doc = json.loads(small_checkpoint)
    edit(doc)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))  # json writes nan and inf as NaN and Infinity
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.count("\n") == 1
    assert str(path) in printed.err and problem in printed.err


def test_evaluate_samples_beyond_the_limit_is_a_usage_error(tmp_path, capsys, small_checkpoint):
    path = tmp_path / "model.json"
    path.write_text(small_checkpoint)
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", "--checkpoint", str(path), "--samples", "1000001"])
    assert info.value.code == 2
    assert "--samples: must be at most 1,000,000" in capsys.readouterr().err


def test_module_entry_point_help():
    result = subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", "train", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for option in ("--dataset", "--hidden", "--loss", "--optimizer", "--batch-size", "--engine"):
        assert option in result.stdout


# ---------------------------------------------------------------------- the real workloads
@pytest.mark.slow
def test_default_train_is_micrograds_demo_and_reaches_97_percent(tmp_path):
    _, metrics = _train(tmp_path, "--quiet")
    assert metrics["loss"][0] == MICROGRAD_STEP0_LOSS
    assert len(metrics["loss"]) == 100
    assert metrics["final_accuracy"] >= 0.97
    config = metrics["config"]
    assert config["hidden"] == [16, 16] and config["lr"] == 1.0 and config["l2"] == 1e-4
    assert config["batch_size"] is None and config["seed"] == 1337


@pytest.mark.slow
def test_digits_reaches_97_percent_on_the_test_split(tmp_path):
    out, metrics = _train(tmp_path, "--dataset", "digits", "--quiet")
    assert metrics["test_accuracy"] >= 0.97
    assert {"test_loss", "final_loss", "final_accuracy"} <= set(metrics)
    config = metrics["config"]
    assert (config["engine"], config["optimizer"], config["loss"]) == ("tensor", "adam", "ce")
    assert config["hidden"] == [128, 64] and config["batch_size"] == 32
    for picture in ("loss_curve.png", "confusion_matrix.png", "misclassified.png"):
        _check_png(out / picture)
    result = evaluate_checkpoint(out / "model.json")
    assert result.scores["test"].accuracy == metrics["test_accuracy"]
    assert result.scores["test"].loss == metrics["test_loss"]
    assert result.scores["train"].accuracy == metrics["final_accuracy"]


class _Silent:
    """A stand-in for the progress bar fit() updates."""

    def set_postfix(self, **_: object) -> None:
        pass

    def update(self, _: int) -> None:
        pass


@pytest.mark.parametrize(
    "options",
    [{}, {"optimizer": "adam", "lr": 0.05}, {"loss": "bce", "optimizer": "momentum", "lr": 0.1}],
    ids=["default-sgd", "adam", "bce-momentum"],
)
def test_scalar_and_tensor_engines_train_the_same_curve_through_fit(options):
    """The real training loop (fit, the optimisers, the lr schedule) on moons, from the
    same initial weights: the two engines' loss curves agree within 1e-9."""
    data = load_dataset("moons", 100, 0.1, 1337)
    config = TrainConfig(steps=30, **options)
    scalar = ScalarLearner(config, 2)
    model = tensor_nn.MLP(2, [16, 16, 1], seed=0)
    for layer, tlayer in zip(scalar.model.layers, model.layers, strict=True):
        tlayer.weight.data[:] = [[w.data for w in n.w] for n in layer.neurons]
        tlayer.bias.data[:] = [n.b.data for n in layer.neurons]
    tensor = TensorLearner(config, 2, 2, model)
    scalar_curve = fit(scalar, data, config, _Silent()).loss
    tensor_curve = fit(tensor, data, config, _Silent()).loss
    assert len(scalar_curve) == len(tensor_curve) == 30
    assert scalar_curve[-1] < scalar_curve[0]  # it trained
    assert max(abs(a - b) for a, b in zip(scalar_curve, tensor_curve, strict=True)) <= 1e-9
