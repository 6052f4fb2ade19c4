"""``train --compile``: the scalar engine's full-batch step compiled once
(scalar/compiler.py) trains to the same losses, accuracies and weights as the interpreter,
bit for bit; what it cannot compile is refused in one line, exit code 2."""

from __future__ import annotations

import json

import pytest
from safetensors.numpy import load_file

from modelwright_autograd import cli
from modelwright_autograd.data import load_dataset
from modelwright_autograd.training.learners import make_learner
from modelwright_autograd.training.loop import fit
from modelwright_autograd.training.settings import TrainConfig

SMALL = ["--samples", "30", "--steps", "25", "--hidden", "5,4", "--quiet"]


def _train(tmp_path, name, *options):
    out = tmp_path / name
    assert cli.main(["train", *SMALL, *options, "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    return metrics, load_file(str(out / "model.safetensors"))


class _Quiet:
    def set_postfix(self, **kwargs):
        pass

    def update(self, n):
        pass


@pytest.mark.parametrize(
    "settings", [{}, {"loss": "mse", "activation": "tanh"}, {"optimizer": "adam", "lr": 0.01}]
)
def test_fit_compiled_gives_the_interpreters_losses_and_weights(settings):
    runs = []
    for compile in (False, True):
        config = TrainConfig(samples=30, hidden=(5, 4), steps=25, compile=compile, **settings)
        data = load_dataset(config.dataset, config.samples, config.noise, config.seed)
        learner = make_learner(config, data)
        history = fit(learner, data, config, _Quiet())
        runs.append((history.loss, history.accuracy, [p.data for p in learner.parameters()]))
    assert runs[0] == runs[1]  # floats compared with ==: bit for bit but the sign of zero


@pytest.mark.slow
@pytest.mark.parametrize("options", [[], ["--loss", "mse", "--activation", "tanh"]])
def test_compiled_training_is_the_interpreters_to_the_bit(tmp_path, options):
    metrics, model = _train(tmp_path, "interpreted", *options)
    compiled_metrics, compiled_model = _train(tmp_path, "compiled", *options, "--compile")
    for key in ("loss", "accuracy", "final_loss", "final_accuracy"):
        assert compiled_metrics[key] == metrics[key], key
    assert compiled_metrics["config"]["compile"] is True and metrics["config"]["compile"] is False
    assert compiled_model.keys() == model.keys()
    for name, weights in model.items():  # the same bytes: bit for bit, the sign of zero too
        assert compiled_model[name].tobytes() == weights.tobytes(), name


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--engine", "tensor"], "use --engine scalar"),
        (["--batch-size", "8"], "drop --batch-size"),
        (["--loss", "bce"], "use svm or mse"),
        (["--dataset", "digits"], "use --engine scalar"),
        (["--dataset", "names"], "--compile: does not apply to a language model"),
    ],
)
def test_what_cannot_be_compiled_is_refused(tmp_path, capsys, options, message):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "--compile", *options, "--out", str(out), "--quiet"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--compile" in err
    assert not out.exists()
