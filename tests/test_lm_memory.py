"""The language models' memory estimate, which replaced the fixed cap on weights: it bounds
what a training step allocates (measured with tracemalloc), a run it does not fit is
refused with one line giving the estimate, and nanoGPT's Shakespeare GPT (10.8M weights)
trains."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from modelwright_autograd import cli
from modelwright_autograd.cli import train as cli_train
from modelwright_autograd.lm import models as M
from modelwright_autograd.optim import clip_grad_norm_
from modelwright_autograd.training import language as L

SHAKESPEARE = ["--n-layer", "6", "--n-head", "6", "--n-embd", "384", "--block-size", "256"]


def _settings(argv):
    return cli_train.resolve_lm(cli.build_parser().parse_args(["train", *argv]))[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["--dataset", "shakespeare", "--n-layer", "2", "--batch-size", "4"],
        ["--dataset", "shakespeare", "--n-embd", "64", "--block-size", "128", "--dropout", "0.2"],
        ["--dataset", "names", "--model", "transformer", "--batch-size", "16"],
    ],
)
def test_the_estimate_bounds_what_two_training_steps_allocate(argv):
    settings = _settings(argv)
    model = M.build(settings.model, seed=0)
    tracemalloc.start()
    try:
        optimizer = L.make_optimizer(model, settings)
        params = model.parameters()
        rng = np.random.default_rng(0)
        shape = (settings.batch_size, settings.model.block_size)
        for _ in range(2):
            x = rng.integers(0, settings.model.vocab_size, shape)
            loss = model.loss(x, rng.integers(0, settings.model.vocab_size, shape))
            optimizer.zero_grad()
            loss.backward()
            del loss
            clip_grad_norm_(params, 1.0)
            optimizer.step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    weights = 4 * M.num_parameters(settings.model)  # built before tracing began
    assert peak + weights <= L.memory_estimate(settings) - L.BASE_MEMORY


def test_a_run_that_does_not_fit_is_refused_with_the_estimate(tmp_path, capsys, monkeypatch):
    argv = ["train", "--dataset", "shakespeare", *SHAKESPEARE, "--batch-size", "64"]
    monkeypatch.setattr(L, "available_memory", lambda: None)  # the settings, on any machine
    need = L.memory_estimate(_settings(argv[1:]))
    monkeypatch.setattr(L, "available_memory", lambda: 2**30)
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--out", str(tmp_path / "r")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--batch-size: training the gpt (10,770,048 weights" in err[0]
    assert need > 2**30 and f"needs about {need / 2**30:.1f} GiB" in err[0]
    assert "1.0 GiB is available" in err[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_nanogpts_shakespeare_gpt_trains(tmp_path, capsys):
    """10.8M weights, block 256 (a batch of 1 keeps the test short): a step, an
    evaluation, the checkpoints written and read back."""
    out = tmp_path / "run"
    argv = ["train", "--dataset", "shakespeare", *SHAKESPEARE, "--batch-size", "1"]
    argv += ["--steps", "2", "--eval-iters", "1", "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    # 6 blocks of 12 x 384^2, the tied token embedding 65 x 384, the positions 256 x 384,
    # 13 LayerNorm gains of 384 (no biases)
    weights = 6 * 12 * 384**2 + 65 * 384 + 256 * 384 + 13 * 384
    assert metrics["parameters"] == weights == 10_745_088 and metrics["steps_done"] == 2
    assert all(np.isfinite(metrics["loss"]))
    capsys.readouterr()
    assert cli.main(["sample", str(out), "--tokens", "5"]) == 0
