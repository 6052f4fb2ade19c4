"""The language models through the command line, in-process: a tiny run of each model end
to end (train, evaluate, sample, export), the shipped corpora and their checksums, the data
refusals and the one-line errors (exit 2, before any work), Ctrl-C keeping the best
checkpoint."""

import hashlib
import json
import os

import numpy as np
import pytest

from modelwright_autograd import cli
from modelwright_autograd.checkpoint import save_checkpoint
from modelwright_autograd.lm import corpus as C
from modelwright_autograd.lm.scoring import counting_bigram_loss
from modelwright_autograd.tensor import nn as tensor_nn
from modelwright_autograd.training import language as L
from modelwright_autograd.training import lm_run

TINY_GPT = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16"]
TINY = {
    "bigram": ["--steps", "60", "--eval-interval", "30"],
    "mlp": ["--steps", "4", "--n-embd", "4", "--eval-interval", "2"],
    "transformer": ["--steps", "3", "--n-layer", "1", "--n-head", "2", "--n-embd", "8"],
    "gpt": ["--steps", "4", "--eval-interval", "2", "--eval-iters", "2", *TINY_GPT],
}


def _train(tmp_path, *options, name="run", code=0):
    out = tmp_path / name
    assert cli.main(["train", *options, "--out", str(out), "--quiet"]) == code
    return out


def test_the_shipped_corpora_match_their_notice():
    notice = (C.builtin_path("names").parent / "README.md").read_text()
    for name, filename in C.BUILTIN.items():
        raw = C.builtin_path(name).read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        assert digest == C.SHA256[filename]
        assert digest in notice
    words = C.builtin_path("names").read_text().split()
    assert len(words) == 32_033 and max(map(len, words)) == 15


def test_names_split_is_makemores_and_seeded():
    text, _ = C.read_source("names", None)
    names = C.split_names(text, 1337, "names")
    assert len(names.test) == 1000 and len(names.train) == 31_033
    assert names.block_size() == 16 and names.vocab.size == 27
    again = C.split_names(text, 1337, "names")
    assert again.test == names.test
    assert C.split_names(text, 1, "names").test != names.test
    x, y = names.examples(["ab"])
    assert x[0, :4].tolist() == [0, 1, 2, 0] and y[0, :4].tolist() == [1, 2, 0, -1]


def test_text_split_is_nanogpts():
    text, _ = C.read_source("shakespeare", None)
    split = C.split_text(text, 64, "shakespeare")
    assert split.vocab.size == 65
    assert len(split.train) == int(len(text) * 0.9) and len(split.val) == len(text) - len(
        split.train
    )
    assert split.vocab.decode(split.train[:14]) == "First Citizen:"


@pytest.mark.parametrize("model", sorted(TINY))
def test_a_tiny_run_of_each_model_end_to_end(tmp_path, capsys, model):
    dataset = "shakespeare" if model == "gpt" else "names"
    out = _train(tmp_path, "--dataset", dataset, "--model", model, *TINY[model])
    files = ["last.json", "last.safetensors", "loss_curve.png", "metrics.json", "model.json"]
    files.append("model.safetensors")
    assert sorted(p.name for p in out.iterdir()) == files
    metrics = json.loads((out / "metrics.json").read_text())
    split = "val" if model == "gpt" else "test"
    assert metrics["config"]["model"]["kind"] == model
    assert len(metrics["loss"]) == metrics["steps_done"] == metrics["config"]["steps"]
    assert metrics["evals"][0]["step"] == 0 and metrics["best"]["step"] > 0
    assert metrics["tokens_per_second"] > 0 and not metrics["interrupted"]
    assert metrics["split"]["kind"] == ("text" if model == "gpt" else "names")
    capsys.readouterr()
    assert cli.main(["evaluate", str(out), "--eval-iters", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("train") and lines[2].startswith(split)
    if model != "gpt":  # the names models are scored exactly: the best test loss again
        assert float(lines[2].split()[2]) == pytest.approx(metrics["best"]["test"], abs=1e-4)


@pytest.mark.slow
def test_the_learned_bigram_agrees_with_counting(tmp_path, capsys):
    """The default bigram run: its test loss within 0.01 of the counting model's."""
    out = _train(tmp_path, "--dataset", "names", "--model", "bigram")
    metrics = json.loads((out / "metrics.json").read_text())
    text, _ = C.read_source("names", None)
    names = C.split_names(text, 1337, "names")
    counted = counting_bigram_loss(names, names.train, names.test)
    assert metrics["counting_bigram"]["test"] == pytest.approx(counted, abs=1e-12)
    assert abs(metrics["best"]["test"] - counted) < 0.01


def test_sample_is_deterministic_and_marks_names(tmp_path, capsys):
    out = _train(tmp_path, "--dataset", "names", "--model", "bigram", *TINY["bigram"])
    capsys.readouterr()
    runs = []
    for seed in ("3", "3", "4"):
        assert cli.main(["sample", str(out), "--num", "30", "--seed", seed]) == 0
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1] and runs[0] != runs[2]
    lines = runs[0].splitlines()
    headers = [line for line in lines if line.endswith(":")]
    assert [h.split(" ", 1)[1] for h in headers] == [
        "samples that are in train:",
        "samples that are in test:",
        "samples that are new:",
    ]
    assert sum(int(h.split()[0]) for h in headers) == 30
    text, _ = C.read_source("names", None)
    names = C.split_names(text, 1337, "names")
    train_names = lines[1 : 1 + int(headers[0].split()[0])]
    assert set(train_names) <= set(names.train)
    assert cli.main(["sample", str(out), "--num", "5", "--prompt", "ka", "--seed", "1"]) == 0
    sampled = [w for w in capsys.readouterr().out.splitlines() if not w.endswith(":")]
    assert len(sampled) == 5 and all(w.startswith("ka") for w in sampled)


def test_sample_continues_a_prompt(tmp_path, capsys):
    out = _train(tmp_path, "--dataset", "shakespeare", *TINY["gpt"])
    capsys.readouterr()
    args = ["sample", str(out), "--prompt", "ROMEO:", "--tokens", "40", "--seed", "9"]
    assert cli.main([*args, "--top-k", "5", "--temperature", "0.8"]) == 0
    first = capsys.readouterr().out
    assert cli.main([*args, "--top-k", "5", "--temperature", "0.8"]) == 0
    assert capsys.readouterr().out == first
    assert first.startswith("ROMEO:") and len(first.rstrip("\n")) == len("ROMEO:") + 40


def _usage_error(capsys, argv):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("modelwright-autograd")
    return err


def test_sample_refusals_are_one_line_exit_2(tmp_path, capsys):
    out = _train(tmp_path, "--dataset", "shakespeare", *TINY["gpt"])
    classic = tmp_path / "mlp.json"
    save_checkpoint(classic, tensor_nn.MLP(2, [3, 1], seed=0))
    capsys.readouterr()
    assert "not a language model" in _usage_error(capsys, ["sample", str(classic)])
    assert "'é'" in _usage_error(capsys, ["sample", str(out), "--prompt", "café"])
    big = str(lm_run.MAX_SAMPLE_TOKENS + 1)
    assert "at most 100,000" in _usage_error(capsys, ["sample", str(out), "--tokens", big])
    capsys.readouterr()
    # --top-k above the vocabulary keeps every token, as nanoGPT's min(top_k, vocab_size)
    for k in ("65", "1000"):
        assert cli.main(["sample", str(out), "--top-k", k, "--tokens", "20", "--seed", "3"]) == 0
        clamped = capsys.readouterr().out
        assert cli.main(["sample", str(out), "--tokens", "20", "--seed", "3"]) == 0
        assert clamped == capsys.readouterr().out


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "empty"),
        (b"\n \n", "empty"),
        (b"abc\x00def\n" * 10, "binary"),
        (b"caf\xe9\nbob\n", "not UTF-8"),
        ("\n".join(chr(0x4E00 + i) * 2 for i in range(300)).encode(), "distinct characters"),
        (b"a" * 100 + b"\nbob\n", "a line of 100"),
        (b"ann\n", "1 non-empty line"),
    ],
    ids=["empty", "blank", "binary", "latin-1", "300 characters", "long line", "one line"],
)
def test_data_refusals_before_any_work(tmp_path, capsys, content, problem):
    data = tmp_path / "data.txt"
    data.write_bytes(content)
    err = _usage_error(
        capsys, ["train", "--data", str(data), "--model", "bigram", "--out", str(tmp_path / "r")]
    )
    assert "--data" in err and problem in err
    assert not (tmp_path / "r").exists()


def test_oversized_data_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(C, "MAX_DATA_BYTES", 1000)
    data = tmp_path / "big.txt"
    data.write_text("hello world\n" * 100)
    err = _usage_error(capsys, ["train", "--data", str(data), "--out", str(tmp_path / "r")])
    assert "1,200 bytes, more than the 1,000" in err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "FIFO" in _usage_error(capsys, ["train", "--data", str(fifo)])


def test_option_mixups_are_usage_errors(tmp_path, capsys):
    name = str(tmp_path / "r")
    cases = [
        (["--dataset", "names", "--hidden", "8"], "--hidden"),
        (["--dataset", "names", "--model", "bigram", "--n-layer", "2"], "--n-layer"),
        (["--dataset", "names", "--model", "transformer", "--block-size", "8"], "longest name"),
        (["--dataset", "moons", "--block-size", "8"], "language models"),
        (["--dataset", "moons", "--model", "gpt"], "language model"),
        (["--dataset", "shakespeare", "--n-embd", "30", "--n-head", "4"], "divisible"),
        (["--dataset", "shakespeare", "--batch-size", "1000"], "tokens a step"),
        (["--dataset", "shakespeare", "--n-embd", "2048"], "checkpoint holds"),
    ]
    for options, problem in cases:
        assert problem in _usage_error(capsys, ["train", *options, "--out", name])
        assert not (tmp_path / "r").exists()


def test_your_own_text_file_trains(tmp_path, capsys):
    data = tmp_path / "story.txt"
    data.write_text("It was a dark and stormy night; the rain fell in torrents. " * 40)
    out = _train(tmp_path, "--data", str(data), *TINY["gpt"])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["config"]["source"]["path"] == str(data.resolve())
    capsys.readouterr()
    assert cli.main(["sample", str(out), "--prompt", "It", "--tokens", "10"]) == 0
    data.write_text("changed")
    assert cli.main(["evaluate", str(out)]) == 1
    assert "changed since training" in capsys.readouterr().err


def test_ctrl_c_keeps_the_best_checkpoint(tmp_path, capsys, monkeypatch):
    batches = L._batches

    def interrupted(settings, corpus, rng):
        for step, batch in enumerate(batches(settings, corpus, rng)):
            if step == 5:
                raise KeyboardInterrupt
            yield batch

    monkeypatch.setattr(L, "_batches", interrupted)
    options = ["--dataset", "shakespeare", *TINY["gpt"], "--steps", "50"]
    out = _train(tmp_path, *options, code=130)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["interrupted"] and metrics["steps_done"] == 5
    assert metrics["best"]["step"] == 4 and (out / "model.json").exists()
    assert "interrupted (SIGINT) after step 5" in capsys.readouterr().out
    # before the first checkpoint nothing is kept
    monkeypatch.setattr(L, "_batches", interrupted)
    gone = _train(tmp_path, *options, "--eval-interval", "20", name="b", code=130)
    assert not gone.exists()


def test_makemore_examples_and_counting_by_hand():
    names = C.split_names("ab\nba\nab\nbb\n", 0, "toy")
    counted = counting_bigram_loss(names, ["ab"], ["ab"], smoothing=1.0)
    # counts from "ab": .->a, a->b, b->. once each; 3 tokens, add-one: each row sums to 4
    assert counted == pytest.approx(-np.log(2 / 4))
