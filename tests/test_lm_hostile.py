"""The language models against bad input, as a hostile or careless user gives it: a diverging
run, empty and missing prompts, edited and bloated checkpoints, a broken (NaN) model,
sampling settings torch refuses, escape sequences in file names and in the text, and the
option an error names. Each is one line (or a clean refusal in Python) and a sensible exit
code; nothing is lost, nothing is printed raw to the terminal."""

import json
import math
import re
import tracemalloc

import numpy as np
import pytest
import torch

from modelwright_autograd import cli
from modelwright_autograd.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from modelwright_autograd.lm import corpus as C
from modelwright_autograd.lm import models as M
from modelwright_autograd.lm.sampling import BrokenModel, generate
from modelwright_autograd.lm.scoring import counting_bigram_loss
from modelwright_autograd.tensor import Tensor
from modelwright_autograd.tensor.nn_ops import embedding
from modelwright_autograd.training import language as L
from tests.legacy_v2 import as_version_2, copy_checkpoint

TINY_GPT = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16"]
GPT = ["--model", "gpt", *TINY_GPT, "--eval-iters", "2"]


def _train(tmp_path, *options, name="run", code=0):
    out = tmp_path / name
    assert cli.main(["train", *options, "--out", str(out), "--quiet"]) == code
    return out


def _strict_json(path):
    def refuse(constant):
        raise AssertionError(f"{path.name} holds {constant}, which is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _one_line(capsys, argv, code):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == code
    err = capsys.readouterr().err
    return err.strip().splitlines()[-1]


def _error(capsys, argv, code=1):
    """Run ``argv``, expect exit ``code`` and exactly one line on stderr; return it."""
    assert cli.main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.fixture(scope="module")
def gpt_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpt")
    return _train(tmp, "--dataset", "shakespeare", *GPT, "--steps", "2")


@pytest.fixture(scope="module")
def names_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    return _train(tmp, "--dataset", "names", "--model", "bigram", "--steps", "4")


# ---------------------------------------------------------------------- 10. divergence
def test_a_diverging_run_stops_and_keeps_its_best_checkpoint(tmp_path, capsys):
    options = ["--dataset", "shakespeare", *GPT, "--lr", "1e6", "--steps", "40"]
    out = _train(tmp_path, *options, "--eval-interval", "1", code=1)
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    stopped = re.search(r"training stopped: a non-finite loss \(nan\) at step (\d+)", captured.err)
    assert stopped, captured.err
    step = int(stopped.group(1))
    metrics = _strict_json(out / "metrics.json")
    assert metrics["diverged_at_step"] == step and metrics["steps_done"] == step
    assert all(math.isfinite(x) for x in metrics["loss"])
    best = metrics["best"]["step"]
    assert 0 < best <= step and f"kept the best checkpoint (step {best})" in captured.err
    saved = load_checkpoint(out / "model.json")
    weights = saved.model.state_dict().values()
    assert all(np.isfinite(w).all() for w in weights)
    assert saved.metadata["best"]["step"] == best
    # before the first checkpoint nothing is kept, and it says so
    gone = _train(tmp_path, *options, "--eval-interval", "30", name="b", code=1)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "training stopped: a non-finite loss" in err
    assert err.rstrip().endswith(f"nothing was kept ({gone} was removed)")
    assert not gone.exists()


# ---------------------------------------------------------------------- 11. prompts
def test_an_empty_prompt_starts_where_no_prompt_does(gpt_run, capsys):
    argv = ["sample", str(gpt_run), "--tokens", "20", "--seed", "5"]
    assert cli.main([*argv, "--prompt", ""]) == 0
    empty = capsys.readouterr().out
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == empty
    assert empty.startswith("\n") and len(empty) == 1 + 20 + 1  # the newline, 20, print's


def test_a_gpt_trained_without_newlines_samples_from_its_first_character(tmp_path, capsys):
    data = tmp_path / "one-line.txt"
    data.write_text("to be or not to be, that is the question " * 60)
    out = _train(tmp_path, "--data", str(data), *GPT, "--steps", "2")
    capsys.readouterr()
    assert cli.main(["sample", str(out), "--tokens", "10"]) == 0
    sampled = capsys.readouterr().out
    assert sampled.startswith(" ") and len(sampled) == 1 + 10 + 1  # " " sorts first


# ---------------------------------------------------------------------- 12. edited files
@pytest.mark.parametrize(
    "field, value",
    [("path", None), ("path", 7), ("path", ""), ("seed", -1), ("seed", True), ("sha256", 1)],
)
def test_edited_data_settings_are_one_line_naming_the_field(
    tmp_path, names_run, capsys, field, value
):
    model = tmp_path / "model.json"
    copy_checkpoint(names_run / "model.json", model)

    def change(doc):
        doc["data"]["dataset"] = None if field == "path" else doc["data"]["dataset"]
        doc["data"][field] = value

    _edit(model, change)
    err = _error(capsys, ["evaluate", str(model)])
    assert f"the checkpoint's 'data.{field}' is" in err
    assert cli.main(["sample", str(model), "--num", "3"]) == 0
    assert f"'data.{field}'" in capsys.readouterr().out


def test_an_edited_batch_size_is_one_line_naming_the_field(tmp_path, gpt_run, capsys):
    model = tmp_path / "model.json"
    copy_checkpoint(gpt_run / "model.json", model)
    _edit(model, lambda doc: doc["training"].update(batch_size=True))
    err = _error(capsys, ["evaluate", str(model), "--eval-iters", "1"], code=2)
    assert "'training.batch_size' is bool True" in err


def test_tied_weights_that_differ_in_the_file_are_refused(tmp_path, gpt_run, capsys):
    model = tmp_path / "model.json"
    copy_checkpoint(gpt_run / "model.json", model)
    assert load_checkpoint(model).architecture.config.tie_weights
    as_version_2(model)  # the weights in the JSON, where one copy is edited

    def change(doc):
        data = doc["state_dict"]["lm_head.weight"]["data"]
        data[0] = float.hex(float.fromhex(data[0]) + 1.0)

    _edit(model, change)
    with pytest.raises(CheckpointError, match=r"'lm_head\.weight' differs from 'transformer\.wte"):
        load_checkpoint(model)
    assert "differs" in _error(capsys, ["evaluate", str(model)], code=2)


def test_bloated_metadata_is_refused_before_parsing_with_memory_bounded(tmp_path, gpt_run):
    model = tmp_path / "model.json"
    doc = json.loads((gpt_run / "model.json").read_text())
    text = json.dumps(doc)
    # 2.5 million empty lists (7.5 MB): parsed, about 160 MB of Python lists
    model.write_text(text[:-1] + ', "notes": [' + "[]," * 2_500_000 + "[]]}")
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match=r"JSON values.*bloated metadata"):
            load_checkpoint(model)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * model.stat().st_size  # the bytes and their text, not a parse


# ---------------------------------------------------------------------- 13. a broken model
def _broken(tmp_path, run):
    """A copy of ``run``'s checkpoint whose weights are all NaN (its data files intact)."""
    model = tmp_path / "model.json"
    loaded = load_checkpoint(run / "model.json")
    state = {name: np.full_like(w, np.nan) for name, w in loaded.model.state_dict().items()}
    loaded.model.load_state_dict(state)
    save_checkpoint(model, loaded.model, loaded.metadata)
    return model


@pytest.mark.parametrize("which", ["gpt", "names"])
def test_a_nan_model_is_called_broken_with_a_non_zero_exit(
    tmp_path, gpt_run, names_run, capsys, which
):
    model = _broken(tmp_path, gpt_run if which == "gpt" else names_run)
    assert cli.main(["evaluate", str(model), "--eval-iters", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the model is broken: its loss is nan" in err
    err = _error(capsys, ["sample", str(model), "--num", "2"])
    assert err == (  # a whole sentence, the same cause as evaluate gives
        "modelwright-autograd sample: the model is broken: its next-character logits are NaN "
        "or infinite (its weights hold NaN or infinities, or its numbers overflow)"
    )
    with pytest.raises(BrokenModel):
        start = np.zeros((1, 1), dtype=np.int64)
        generate(load_checkpoint(model).model, start, 2, np.random.default_rng(0))


# ---------------------------------------------------------------------- 14. as torch
def test_generate_refuses_what_torch_refuses(gpt_run):
    model = load_checkpoint(gpt_run / "model.json").model
    idx = np.zeros((2, 1), dtype=np.int64)
    rng = np.random.default_rng(0)
    logits = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    with pytest.raises(RuntimeError, match="`inf`, `nan` or element < 0"):  # torch's refusal
        torch.multinomial(torch.softmax(logits / 5e-324, -1), 1)
    with pytest.raises(ValueError, match="inf, nan or element < 0"):
        generate(model, idx, 3, rng, temperature=5e-324)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="temperature must be a positive finite number"):
            generate(model, idx, 3, rng, temperature=bad)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="top_k must be a whole number of at least 1"):
            generate(model, idx, 3, rng, top_k=bad)
    with pytest.raises(ValueError, match="at least one token"):
        generate(model, idx[:, :0], 3, rng)
    assert generate(model, idx, 3, rng, temperature=1e-300).shape == (2, 4)  # finite: fine


def test_sample_refuses_a_subnormal_temperature_in_one_line(gpt_run, capsys):
    argv = ["sample", str(gpt_run), "--temperature", "5e-324", "--tokens", "5"]
    assert "sample: --temperature: temperature 5e-324 is too small" in _one_line(capsys, argv, 2)


def test_negative_embedding_ids_are_an_index_error_as_in_torch():
    w = np.arange(12.0).reshape(4, 3)
    with pytest.raises(IndexError):
        torch.nn.functional.embedding(torch.tensor([0, -1]), torch.tensor(w))
    with pytest.raises(IndexError, match="index -1 is out of range for 4 embeddings"):
        embedding(np.array([0, -1]), Tensor(w))
    model = M.build(M.LMConfig("bigram", 5, 3), seed=0)
    with pytest.raises(IndexError):
        model(np.array([[1, -2]]))
    assert np.array_equal(embedding(np.array([3, 0]), Tensor(w)).data, w[[3, 0]])


# ---------------------------------------------------------------------- 15. escapes
def test_escape_sequences_in_a_data_file_name_are_printed_escaped(tmp_path, capsys):
    data = tmp_path / "red\x1b[31mname\x07.txt"
    data.write_bytes(b"")
    err = _one_line(capsys, ["train", "--data", str(data), "--out", str(tmp_path / "r")], 2)
    assert "\x1b" not in err and "\x07" not in err
    assert "red\\x1b[31mname\\x07.txt: the file is empty" in err


def test_sampled_escape_sequences_are_printed_escaped(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("ab\x1b[2Jcd\nef\x07gh\n" * 200)
    out = _train(tmp_path, "--data", str(text), *GPT, "--steps", "2", name="text")
    names = tmp_path / "names.txt"
    names.write_text("".join(f"a\x1b{c}b\n" for c in "cdefghijkl" * 5))
    named = _train(tmp_path, "--data", str(names), "--model", "bigram", "--steps", "60")
    capsys.readouterr()
    assert cli.main(["sample", str(out), "--tokens", "300"]) == 0
    sampled = capsys.readouterr().out
    assert "\x1b" not in sampled and "\x07" not in sampled
    assert "\\x1b" in sampled and sampled.count("\n") > 2  # its newlines are kept
    assert cli.main(["sample", str(named), "--num", "30"]) == 0
    sampled = capsys.readouterr().out
    assert "\x1b" not in sampled and "\\x1b" in sampled


# ---------------------------------------------------------------------- 16. limits
def test_an_error_names_the_option_the_user_gave(names_run, gpt_run, capsys):
    err = _one_line(capsys, ["sample", str(names_run), "--num", "10000"], 2)
    assert err.startswith("modelwright-autograd sample: --num: 10,000 samples")
    err = _one_line(capsys, ["sample", str(gpt_run), "--tokens", "100001"], 2)
    assert "sample: --tokens:" in err
    err = _one_line(capsys, ["sample", str(gpt_run), "--num", "300"], 2)  # x 500 default
    assert "sample: --num:" in err


def test_the_documented_longest_line_trains_with_the_default_bigram(tmp_path, capsys):
    data = tmp_path / "long.txt"
    longest = "abcdefgh" * 8
    data.write_text("\n".join([longest, *("abc", "bcd", "cde", "def") * 5]) + "\n")
    assert len(longest) == 64  # docs/language-models.md: lines of at most 64 characters
    _train(tmp_path, "--data", str(data), "--model", "bigram", "--steps", "3")
    data.write_text(longest + "a\nabc\nbcd\n")
    err = _one_line(capsys, ["train", "--data", str(data), "--model", "bigram"], 2)
    assert "a line of 65 characters" in err


# ---------------------------------------------------------------------- 9. memory
def test_a_names_file_costs_a_few_bytes_a_byte(tmp_path):
    """The worst lines (one or two letters: the most words a byte) and one of the longest
    (64 characters, which sets every word's context): reading, splitting, a training
    batch and the counting bigram over every training word stay within 20 bytes a byte
    of the file (benchmarks/lm_data_memory.py measures whole runs)."""
    unit = "".join(f"{a}\n{a}{b}\n" for a in "abcdefghijklmnopqrstuvwxyz" for b in "aeiou")
    data = tmp_path / "short.txt"
    data.write_text("abcdefgh" * 8 + "\n" + unit * (2**19 // len(unit)))
    size = data.stat().st_size
    tracemalloc.start()
    try:
        text, digest = C.read_corpus(data)
        names = C.split_names(text, 0, "short")
        del text
        model = L.default_model("transformer", names.vocab.size, names.block_size())
        settings = L.default_settings(model, C.Source(None, str(data), digest), seed=0)
        x, y = next(L._batches(settings, names, np.random.default_rng(0)))
        counted = counting_bigram_loss(names, names.train, names.test)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(names.train) + len(names.test) == 1 + 2 * 130 * (2**19 // len(unit))
    assert x.shape == y.shape == (32, 65) and math.isfinite(counted)
    assert peak < 20 * size, f"{peak / size:.1f} bytes a byte"
