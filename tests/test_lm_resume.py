"""train --resume: a language-model run continued from a checkpoint (its optimiser state,
step, schedule position and generators) takes the steps of an unbroken run, to 1e-12 in
float64; the new run writes its own folder; and the options that would change the run,
and the options of nanoGPT's names (--max-iters, --warmup-iters, --min-lr, --threads), are
refused with one line and exit code 2 when wrong."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from modelwright_autograd import cli
from modelwright_autograd.checkpoint import load_checkpoint, save_checkpoint
from modelwright_autograd.cli import train as cli_train
from modelwright_autograd.lm import corpus as C
from modelwright_autograd.lm import models as M
from modelwright_autograd.training import language as L
from modelwright_autograd.training.run_state import ResumePoint

TEXT = "the quick brown fox jumps over the lazy dog; " * 20
WORDS = "\n".join(["anna", "bob", "carla", "dave", "eve", "frank", "gina", "hal", "ivy", "jo"] * 3)


def _settings(kind, corpus):
    gpt = kind == "gpt"
    block = 8 if gpt else corpus.block_size()
    config = M.check_config(
        M.LMConfig(kind, corpus.vocab.size, block, n_layer=1, n_head=2, n_embd=8, dropout=0.1)
    )
    return L.LMSettings(
        model=replace(config, dtype="float64"),
        dataset=None,
        data=None,
        steps=12,
        batch_size=4,
        lr=3e-3,
        min_lr=3e-4,
        warmup=3,
        weight_decay=0.1,
        decay_all=not gpt,
        betas=(0.9, 0.99),
        grad_clip=0.5 if gpt else 0.0,
        eval_interval=4,
        eval_iters=2,
        threads=1,
        seed=7,
        source=C.Source(None, "test", "0"),
    )


class _Progress:
    """tqdm's methods fit_lm calls; ``stop_after`` steps, Ctrl-C (as a real one arrives
    between two steps)."""

    def __init__(self, stop_after=None):
        self.done, self.stop_after = 0, stop_after

    def set_postfix(self, **kwargs):
        pass

    def update(self, n):
        self.done += n
        if self.done == self.stop_after:
            raise KeyboardInterrupt

    def write(self, text, file=None):
        self.shown = text


@pytest.mark.parametrize("kind", ["gpt", "transformer"])
def test_resuming_after_step_k_gives_the_unbroken_runs_losses(tmp_path, kind):
    corpus = C.split_text(TEXT, 8, "t") if kind == "gpt" else C.split_names(WORDS, 0, "t")
    settings = _settings(kind, corpus)
    unbroken = M.build(settings.model, seed=3)
    show = L.partial(L._show_evaluation, _Progress(), unbroken, corpus, settings)
    full = L.fit_lm(unbroken, settings, corpus, _Progress(), show=show)
    assert len(full.loss) == 12

    stopped = M.build(settings.model, seed=3)
    first = L.fit_lm(stopped, settings, corpus, _Progress(stop_after=5))
    assert first.interrupted is KeyboardInterrupt and first.steps_done == 5
    np.testing.assert_array_equal(first.loss, full.loss[:5])
    path = tmp_path / "last.json"
    save_checkpoint(path, stopped, first.state)  # through the JSON file, as --resume reads it

    saved = load_checkpoint(path)
    point = ResumePoint.read(path, saved.metadata)
    model = saved.model
    show = L.partial(L._show_evaluation, _Progress(), model, corpus, settings)  # samples too
    rest = L.fit_lm(model, settings, corpus, _Progress(), resume=point, show=show)
    assert rest.start == 5 and rest.steps_done == 12 and rest.evals[0]["step"] == 5
    np.testing.assert_allclose(rest.loss, full.loss[5:], rtol=0, atol=1e-12)
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value, unbroken.state_dict()[name], rtol=0, atol=1e-12)


TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "8", "--eval-interval", "5"]


def _train(tmp_path, *options, name, code=0):
    out = tmp_path / name
    assert cli.main(["train", *options, "--out", str(out), "--quiet"]) == code
    return out


def test_resume_writes_a_new_folder_naming_its_source(tmp_path, capsys):
    names = ["--dataset", "names", "--model", "transformer", *TINY]
    whole = _train(tmp_path, *names, "--steps", "10", name="whole")
    assert sorted(p.name for p in whole.iterdir()) == [
        "last.json",
        "last.safetensors",
        "loss_curve.png",
        "metrics.json",
        "model.json",
        "model.safetensors",
    ]
    before = {p.name: p.read_bytes() for p in whole.iterdir()}
    more = _train(tmp_path, "--resume", str(whole), "--steps", "15", name="more")
    assert {p.name: p.read_bytes() for p in whole.iterdir()} == before  # only read
    metrics = json.loads((more / "metrics.json").read_text())
    assert metrics["resumed_from"] == str(whole / "last.json")
    assert metrics["start_step"] == 10 and metrics["steps_done"] == 15
    assert len(metrics["loss"]) == 5 and metrics["evals"][0]["step"] == 10
    assert "5 steps from step 10" in capsys.readouterr().out
    best = json.loads((more / "model.json").read_text())
    assert best["resume"]["step"] == best["best"]["step"]
    capsys.readouterr()
    again = ["--resume", str(whole), "--steps", "12", "--overwrite"]
    assert _train(tmp_path, *again, name="more") == more  # a run's last.json is its own
    assert json.loads((more / "metrics.json").read_text())["steps_done"] == 12


def test_resume_refuses_an_out_that_is_its_source_by_inode(tmp_path):
    """A real process each: --out the run itself, spelt otherwise, through a symbolic link,
    for a checkpoint file's folder, with or without --overwrite: one line, exit code 2, and
    every byte of the run as it was."""
    run = _train(tmp_path, "--dataset", "names", "--model", "bigram", "--steps", "4", name="r")
    (tmp_path / "link").symlink_to(run)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    cases = [
        (str(run), str(run), ["--overwrite"]),
        (str(run), str(tmp_path / "r" / ".." / "r") + "/", []),
        (str(run / "last.json"), str(tmp_path / "link"), ["--overwrite"]),
        (str(run / "model.json"), "r", []),
    ]
    for source, out, overwrite in cases:
        argv = ["train", "--resume", source, "--steps", "8", "--out", out, *overwrite]
        done = subprocess.run(
            [sys.executable, "-m", "modelwright_autograd", *argv],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
        )  # fmt: skip
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and done.stdout == ""
        assert "--out: " in done.stderr and "is the run --resume continues" in done.stderr
        assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def _usage_error(capsys, argv):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("modelwright-autograd train: ")
    return err[0]


def test_resume_refusals_are_one_line_exit_2(tmp_path, capsys):
    run = _train(tmp_path, "--dataset", "names", "--model", "bigram", "--steps", "4", name="r")
    mlp = _train(tmp_path, "--steps", "2", name="mlp")
    capsys.readouterr()
    out = ["--out", str(tmp_path / "x")]
    cases = [
        (["--resume", str(run), "--lr", "0.1"], "--lr: does not apply with --resume"),
        (["--resume", str(run), "--dataset", "shakespeare"], "--dataset: does not apply"),
        (["--resume", str(run)], "at step 4 of the run's 4"),
        (["--resume", str(run), "--steps", "8", "--max-iters", "8"], "give one of them"),
        (["--resume", str(mlp), "--steps", "8"], "has no last.json to resume from"),
        (["--resume", str(mlp / "model.json"), "--steps", "8"], "not a language model"),
        (["--resume", str(tmp_path / "none"), "--steps", "8"], "--resume"),
    ]
    for options, words in cases:
        assert words in _usage_error(capsys, ["train", *options, *out])
        assert not (tmp_path / "x").exists()
    old = json.loads((run / "model.json").read_text())
    del old["optimizer"]
    (run / "old.json").write_text(json.dumps(old))  # beside the tensors it names
    err = _usage_error(capsys, ["train", "--resume", str(run / "old.json"), "--steps", "9"])
    assert "no optimizer state" in err
    for key, value in (("eval_interval", 0), ("betas", [2.0, 0.5]), ("lr", float("nan"))):
        edited = json.loads((run / "last.json").read_text())
        edited["training"][key] = value
        (run / "edited.json").write_text(json.dumps(edited))
        argv = ["train", "--resume", str(run / "edited.json"), "--steps", "9"]
        assert f"bad training settings: {key}" in _usage_error(capsys, argv)
    spoilt = json.loads((run / "last.json").read_text())
    spoilt["resume"]["rng"]["batches"] = {"bit_generator": "PCG64", "state": "x"}
    (run / "spoilt.json").write_text(json.dumps(spoilt))
    argv = ["train", "--resume", str(run / "spoilt.json"), "--steps", "9", *out]
    assert "generator state NumPy cannot take" in _usage_error(capsys, argv)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "options, words",
    [
        (["--steps", "10", "--max-iters", "10"], "--max-iters: is nanoGPT's name for --steps"),
        (["--steps", "10", "--warmup-iters", "10"], "--warmup-iters: must be less than"),
        (["--lr", "0.01", "--min-lr", "0.02"], "--min-lr: must be at most"),
        (["--min-lr", "-1"], "--min-lr: must be 0 or more"),
        (["--threads", "0"], "--threads: must be at least 1"),
        (["--warmup-iters", "x"], "--warmup-iters: expected a whole number"),
    ],
)
def test_nanogpts_options_refuse_bad_values(tmp_path, capsys, options, words):
    argv = ["train", "--dataset", "shakespeare", *options, "--out", str(tmp_path / "x")]
    assert words in _usage_error(capsys, argv)


def test_nanogpts_options_set_the_schedule_and_threads(tmp_path):
    options = ["--dataset", "shakespeare", "--n-layer", "1", "--n-embd", "16", "--n-head", "2"]
    out = _train(
        tmp_path,
        *options,
        "--max-iters", "6", "--warmup-iters", "2", "--min-lr", "1e-5", "--threads", "2",
        "--eval-iters", "1", "--eval-interval", "3",
        name="r",
    )  # fmt: skip
    config = json.loads((out / "metrics.json").read_text())["config"]
    assert (config["steps"], config["warmup"], config["min_lr"]) == (6, 2, 1e-5)
    assert config["threads"] == 2
    defaults = L.TRAINING_DEFAULTS["gpt"]
    args = cli.build_parser().parse_args(["train", "--dataset", "shakespeare"])
    settings, _ = cli_train.resolve_lm(args)
    assert settings.warmup == 100 and settings.steps == defaults["steps"]
    assert settings.min_lr == pytest.approx(defaults["lr"] / 10)
    args = cli.build_parser().parse_args(["train", "--dataset", "shakespeare", "--steps", "400"])
    assert cli_train.resolve_lm(args)[0].warmup == 20  # min(100, steps // 20)


@pytest.mark.slow
def test_a_real_ctrl_c_then_resume_equals_the_unbroken_run(tmp_path):
    """A real SIGINT to a real process, at whatever step it lands, then --resume: the
    losses after it are the unbroken run's."""
    cmd = [sys.executable, "-m", "modelwright_autograd", "train", "--dataset", "names"]
    cmd += ["--model", "transformer", *TINY, "--steps", "200", "--eval-interval", "20"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    subprocess.run([*cmd, "--out", str(tmp_path / "whole"), "--quiet"], check=True, env=env)
    proc = subprocess.Popen(
        [*cmd, "--out", str(tmp_path / "cut")], stderr=subprocess.PIPE, text=True, env=env
    )
    for line in proc.stderr:
        if line.startswith("step 40:"):
            proc.send_signal(signal.SIGINT)
            break
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    cut = json.loads((tmp_path / "cut" / "metrics.json").read_text())
    k = cut["steps_done"]
    assert 40 <= k < 200 and cut["interrupted"]
    subprocess.run(
        [*cmd[:4], "--resume", str(tmp_path / "cut"), "--out", str(tmp_path / "rest"), "--quiet"],
        check=True,
        env=env,
    )
    whole = json.loads((tmp_path / "whole" / "metrics.json").read_text())
    rest = json.loads((tmp_path / "rest" / "metrics.json").read_text())
    assert rest["start_step"] == k
    assert cut["loss"] == whole["loss"][:k] and rest["loss"] == whole["loss"][k:]
