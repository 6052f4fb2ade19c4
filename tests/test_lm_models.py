"""The language models against PyTorch: every parameter's gradient in float64 for each model
(benchmarks/lm_torch.py holds the torch versions, written as makemore and nanoGPT write
them), ten training steps of AdamW with clipping and the warmup-cosine schedule on the same
batches, and the export read back into the torch GPT under nanoGPT's names."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from benchmarks import lm_torch as LT
from modelwright_autograd.checkpoint import (
    CheckpointError,
    export_torch,
    load_checkpoint,
    save_checkpoint,
)
from modelwright_autograd.lm import corpus as C
from modelwright_autograd.lm import models as M
from modelwright_autograd.training import language as L

V, T = 7, 6

CONFIGS = {
    "bigram": M.LMConfig("bigram", V, T, dtype="float64"),
    "mlp": M.LMConfig("mlp", V, T, n_embd=4, n_hidden=6, dtype="float64"),
    "transformer": M.makemore_transformer(V, T, n_layer=2, n_head=2, n_embd=8, dtype="float64"),
    "gpt": M.LMConfig("gpt", V, T, n_layer=2, n_head=2, n_embd=8, dtype="float64"),
    "gpt-bias-untied": M.LMConfig(
        "gpt", V, T, n_layer=2, n_head=2, n_embd=8, bias=True, tie_weights=False, dtype="float64"
    ),
}


def _batch(seed, b=3, t=T):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, V, (b, t)), rng.integers(0, V, (b, t))
    y[0, t // 2 :] = M.IGNORE_INDEX  # a padded name: those targets count for nothing
    return x, y


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_parameter_gradient_matches_torch_float64(name):
    model = M.build(CONFIGS[name], seed=3)
    if name == "bigram":  # it starts at zero: give it something to differentiate
        model.logits.data[...] = np.random.default_rng(4).standard_normal(model.logits.shape)
    x, y = _batch(5)
    loss = model.loss(x, y)
    loss.backward()
    twin = LT.from_ours(model)
    expected = LT.loss(twin, x, y)
    expected.backward()
    assert abs(loss.item() - expected.item()) <= 1e-9
    ours = dict(model.named_parameters())
    theirs = {n: p.grad.numpy() for n, p in twin.named_parameters()}
    assert sorted(ours) == sorted(theirs)
    for n, p in ours.items():
        np.testing.assert_allclose(p.grad, theirs[n], rtol=1e-6, atol=1e-9, err_msg=n)


def test_parameter_counts_match_the_state_dict():
    for config in CONFIGS.values():
        model = M.build(config, seed=0)
        stored = sum(np.asarray(v).size for v in model.state_dict().values())
        assert M.num_parameters(config) == stored


def test_gpt_initialisation_is_nanogpts():
    config = M.LMConfig("gpt", 65, 64, n_layer=4, n_head=4, n_embd=128)
    model = M.build(config, seed=0)
    params = dict(model.named_parameters())
    assert model.lm_head.weight is model.transformer.wte.weight  # tied
    c_proj = np.concatenate([p.data.ravel() for n, p in params.items() if "c_proj" in n])
    c_attn = np.concatenate([p.data.ravel() for n, p in params.items() if "c_attn" in n])
    assert abs(c_proj.std() - 0.02 / np.sqrt(8)) < 0.0005
    assert abs(c_attn.std() - 0.02) < 0.0005
    assert all(np.all(p.data == 1.0) for n, p in params.items() if "ln_" in n)


def _settings(kind, corpus, steps=10, **changes):
    config = replace(CONFIGS[kind], vocab_size=corpus.vocab.size, block_size=T)
    gpt = kind == "gpt"
    return L.LMSettings(
        model=config,
        dataset=None,
        data=None,
        steps=steps,
        batch_size=4,
        lr=3e-3,
        min_lr=3e-4 if gpt else 3e-3,
        warmup=3 if gpt else 0,
        weight_decay=0.1 if gpt else 0.01,
        decay_all=not gpt,
        betas=(0.9, 0.99),
        grad_clip=0.5 if gpt else 0.0,
        eval_interval=1000,
        eval_iters=1,
        threads=1,
        seed=7,
        source=C.Source(None, "test", "0"),
        **changes,
    )


class _Quiet:
    def set_postfix(self, **kwargs):
        pass

    def update(self, n):
        pass


TEXT = "the quick brown fox jumps over the lazy dog; " * 20
WORDS = "\n".join(["anna", "bob", "carla", "dave", "eve", "frank", "gina", "hal", "ivy", "jo"] * 3)


@pytest.mark.parametrize("kind", ["gpt", "transformer"])
def test_ten_training_steps_match_torch_to_1e9(kind):
    """AdamW (2-D weights only for gpt, every parameter for makemore's transformer), global
    norm clipping at 0.5 (gpt: small enough to act), warmup and cosine decay, the same
    batches: the same loss at every step."""
    gpt = kind == "gpt"
    corpus = C.split_text(TEXT, T, "test") if gpt else C.split_names(WORDS, 0, "test")
    settings = _settings(kind, corpus)
    if kind == "transformer":
        settings = replace(settings, model=replace(settings.model, block_size=corpus.block_size()))
    model = M.build(settings.model, seed=11)
    twin = LT.from_ours(model)
    history = L.fit_lm(model, settings, corpus, _Quiet())
    batches = L._batches(settings, corpus, np.random.default_rng([settings.seed, 1]))
    if kind == "gpt":
        optimizer = twin.configure_optimizers(settings.weight_decay, settings.lr, settings.betas)
    else:
        optimizer = torch.optim.AdamW(
            twin.parameters(), lr=settings.lr, betas=settings.betas, weight_decay=0.01
        )
    expected, norms = [], []
    for step in range(settings.steps):
        for group in optimizer.param_groups:
            group["lr"] = settings.lr_at(step)
        x, y = next(batches)
        loss = LT.loss(twin, x, y)
        expected.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        if settings.grad_clip:
            norms.append(torch.nn.utils.clip_grad_norm_(twin.parameters(), settings.grad_clip))
        optimizer.step()
    np.testing.assert_allclose(history.loss, expected, rtol=0, atol=1e-9)
    assert not settings.grad_clip or max(norms) > settings.grad_clip  # the clipping acted
    assert history.loss[-1] < history.loss[0]


def test_the_schedule_is_nanogpts_get_lr():
    corpus = C.split_text(TEXT, T, "test")
    s = replace(_settings("gpt", corpus, steps=2000), lr=1e-3, min_lr=1e-4, warmup=100)

    def get_lr(it):  # nanoGPT train.py, with lr_decay_iters = max_iters = 2000
        if it < 100:
            return 1e-3 * (it + 1) / (100 + 1)
        if it > 2000:
            return 1e-4
        ratio = (it - 100) / (2000 - 100)
        return 1e-4 + 0.5 * (1.0 + np.cos(np.pi * ratio)) * (1e-3 - 1e-4)

    for it in (0, 50, 99, 100, 101, 1000, 1999, 2000):
        assert s.lr_at(it) == pytest.approx(get_lr(it), rel=1e-12)


def test_the_names_transformer_decays_its_rate_and_the_mlp_keeps_makemores():
    """train's defaults (benchmarks.lm._settings resolves them as the CLI does): the
    transformer from 5e-4 down a cosine to 5e-5 at its 10,000th step, halfway at step
    5,000 (5e-5 + 0.5 x 4.5e-4); the MLP constant at makemore's 5e-4."""
    from benchmarks.lm import _corpus, _settings

    names = _corpus("names")
    s = _settings("transformer", names, seed=1)
    assert (s.steps, s.warmup) == (10_000, 0)
    for step, lr in ((0, 5e-4), (5000, 2.75e-4), (10_000, 5e-5)):
        assert s.lr_at(step) == pytest.approx(lr, rel=1e-12)
    mlp = _settings("mlp", names, seed=1)
    assert {mlp.lr_at(step) for step in (0, 2500, 5000)} == {5e-4}


def test_export_loads_into_nanogpts_module_with_the_same_logits(tmp_path):
    config = M.LMConfig("gpt", 11, 8, n_layer=2, n_head=2, n_embd=16, dtype="float32")
    model = M.build(config, seed=2)
    save_checkpoint(tmp_path / "model.json", model)
    export_torch(tmp_path / "model.json", tmp_path / "gpt.pt")
    doc = torch.load(tmp_path / "gpt.pt", weights_only=True)
    names = set(doc["state_dict"])
    assert {"transformer.wte.weight", "transformer.h.0.attn.c_attn.weight", "lm_head.weight"} <= (
        names
    )
    assert doc["model_args"] == {
        "n_layer": 2,
        "n_head": 2,
        "n_embd": 16,
        "block_size": 8,
        "bias": False,
        "vocab_size": 11,
        "dropout": 0.0,
    }
    cfg = {**doc["model_args"], "kind": "gpt", "gelu": "none", "tie_weights": True}
    twin = LT.build({**cfg, "init": "torch"}, torch.float32)
    twin.load_state_dict(doc["state_dict"])
    x = np.random.default_rng(0).integers(0, 11, (3, 8))
    loaded = load_checkpoint(tmp_path / "model.json").model
    ours = loaded(x).data
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)


SECTIONS = ("speed", "profile", "gpt", "names")


def test_the_benchmarks_products_are_a_gpt_iterations_multiply_adds_counted_by_hand():
    """The speed benchmark's floor (the products alone) does the CPU GPT's multiply-adds:
    per layer 12 N C^2 in the four Linears (N = B T rows, C wide), forward and two
    backward products each, 6 B T^2 C in attention; the head 3 N C V."""
    from benchmarks.lm import _speed_setup, products_of

    settings, model, batches = _speed_setup("cpu", False, 1)
    (x, _), m = batches[0], settings.model
    b, t, c, v = *x.shape, m.n_embd, m.vocab_size
    assert (b, t, c, m.n_layer) == (12, 64, 128, 4)
    by_hand = m.n_layer * (36 * b * t * c * c + 6 * b * t * t * c) + 3 * b * t * c * v
    counted = sum(a.size * b.shape[-1] for a, b in products_of(model, settings))
    assert counted == by_hand


@pytest.mark.slow
def test_the_benchmark_smoke_run(tmp_path):
    """``python -m benchmarks.lm speed profile gpt names --smoke``: toy sizes (speed: the
    CPU GPT and the names transformer, each ratio beside its target; the profile's op
    tables); the GPTs trained from the same weights on the same batches end at the same
    validation loss."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "lm.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.lm", *SECTIONS, "--smoke", "--json", str(out)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.read_text())
    speed = results["speed"]  # the default models, at the first default thread count
    assert [(run["config"], run["threads"]) for run in speed] == [("cpu", 1), ("names", 1)]
    for run in speed:
        assert run["ours"]["median_s"] > 0 and run["torch"]["median_s"] > 0
        assert run["ratio"] == run["ours"]["median_s"] / run["torch"]["median_s"]
        assert run["met"] == (run["ratio"] <= run["target"])
        assert run["products_ratio"] == run["products"]["median_s"] / run["torch"]["median_s"]
    for label in ("nanoGPT's CPU GPT | 1 |", "names transformer | 1 |"):
        assert label in done.stdout
    (run,) = results["gpt"]["runs"]
    assert abs(run["ours"]["val_loss"] - run["torch"]["val_loss"]) < 1e-4
    names = results["names"]
    assert abs(names["bigram"]["test_loss"] - names["counting_bigram_test"]) < 0.5
    profile = results["profile"]
    for side in ("ours", "torch"):
        ops = profile[side]["ops"]
        assert len({op["op"] for op in ops}) == len(ops) >= 10 and all(op["ms"] >= 0 for op in ops)
    for section in ("## Speed", "## Profile", "## Shakespeare GPT", "## names.txt"):
        assert section in done.stdout


def test_a_gpt2_sized_vocabulary_builds_from_python_and_the_loader_refuses_it(tmp_path):
    """Models check structure only: GPT-2's 50,257 tokens build and give torch's logits;
    the size budget is the commands' and the file loaders' (checks.check_lm_sizes)."""
    config = M.LMConfig("gpt", 50257, 4, n_layer=1, n_head=2, n_embd=8, dtype="float64")
    model = M.build(config, seed=1)
    x = np.random.default_rng(0).integers(0, 50257, (2, 4))
    twin = LT.from_ours(model)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    assert theirs.shape == (2, 4, 50257)
    np.testing.assert_allclose(model(x).data, theirs, rtol=1e-9, atol=1e-12)
    save_checkpoint(tmp_path / "model.json", model)
    with pytest.raises(CheckpointError, match="vocab_size must be at most 256, got 50257"):
        load_checkpoint(tmp_path / "model.json")
