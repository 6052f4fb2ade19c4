"""Checkpoints in safetensors (format version 3): every older kind (tests/data/legacy, written
by the code before) loads, evaluates, samples and resumes with the numbers that code
measured; converting one is lossless; and a crafted safetensors file (lying sizes or
offsets, truncated, overlapping, 2**40 elements, a dtype the architecture has not) is one
line and exit code 2 or a CheckpointError, read no further than its header."""

from __future__ import annotations

import json
import os
import shutil
import stat
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save

from modelwright_autograd import MLP, cli
from modelwright_autograd.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_into,
    save_checkpoint,
)
from modelwright_autograd.tensor import nn as tensor_nn
from modelwright_autograd.training.evaluate import evaluate_checkpoint
from modelwright_autograd.training.lm_run import evaluate_lm_run, load_lm_run, sample_lm
from tests.legacy_v2 import as_version_2

LEGACY = Path(__file__).parent / "data" / "legacy"
EXPECTED = json.loads((LEGACY / "expected.json").read_text())


# ---------------------------------------------------------------------- older files
@pytest.mark.parametrize("name", ["v2_scalar_model.json", "v2_tensor_model.json"])
def test_a_version_2_mlp_evaluates_to_what_its_training_measured(name):
    scores = evaluate_checkpoint(LEGACY / name).scores
    expected = EXPECTED[name]
    assert scores["train"].loss == expected["final_loss"]
    assert scores["train"].accuracy == expected["final_accuracy"]
    if "test_loss" in expected:
        assert scores["test"].loss == expected["test_loss"]


def test_a_version_2_gpt_evaluates_and_samples_as_the_code_that_wrote_it():
    expected = EXPECTED["v2_gpt_last.json"]
    run = load_lm_run(LEGACY / "v2_gpt_last.json")
    assert evaluate_lm_run(run, 3, 5) == expected["evaluate_batches_3_seed_5"]
    samples = sample_lm(run, 2, "A", 40, 1.0, None, 1)
    assert samples == expected["sample_num_2_prompt_A_tokens_40_seed_1"]


def test_a_version_2_gpt_resumes_to_the_unbroken_runs_losses(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    shutil.copy(LEGACY / "v2_gpt_last.json", run / "last.json")
    out = tmp_path / "resumed"
    assert (
        cli.main(["train", "--resume", str(run), "--steps", "4", "--out", str(out), "--quiet"]) == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    unbroken = EXPECTED["v2_gpt_last.json"]
    # float32 sums in the same order: the same bits as the 4-step run of the old code
    assert metrics["loss"] == unbroken["unbroken_run_loss"][2:]
    assert metrics["evals"] == unbroken["unbroken_run_evals"][1:]
    assert json.loads((out / "last.json").read_text())["version"] == 3


@pytest.mark.parametrize(
    "name", ["v2_gpt_last.json", "v2_scalar_model.json", "v2_tensor_model.json"]
)
def test_a_version_2_file_saved_again_and_turned_back_is_the_same_document(tmp_path, name):
    """Loading an old file and saving it loses nothing: every weight, moment, step and
    setting comes back (as_version_2 writes what the old code wrote, bit for bit)."""
    old = load_checkpoint(LEGACY / name)
    save_checkpoint(tmp_path / name, old.model, old.metadata)
    as_version_2(tmp_path / name)
    assert json.loads((tmp_path / name).read_text()) == json.loads((LEGACY / name).read_text())


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("v1_scalar_model.json", None),
        ("v1_tensor_model.json", None),
        ("v1_tensor32_model.json", None),
        ("tensor_nn_save.npz", "npz"),
    ],
)
def test_version_1_and_npz_files_still_load_and_convert_exactly(tmp_path, name, model):
    if model == "npz":
        model = tensor_nn.MLP(2, [3, 2])  # what wrote it: MLP(2, [3, 2], seed=0)
        load_into(model, LEGACY / name)
        saved = np.load(LEGACY / name)
        assert np.array_equal(model.state_dict()["2.bias"], saved["layers.1.bias"])
    else:
        model = load_checkpoint(LEGACY / name).model
    save_checkpoint(tmp_path / "model.json", model)
    again = load_checkpoint(tmp_path / "model.json").model
    for key, value in model.state_dict().items():
        assert np.array_equal(np.asarray(again.state_dict()[key]), np.asarray(value))


# ---------------------------------------------------------------------- the new format
def test_the_tensors_are_safetensors_in_the_models_dtype_with_the_adamw_state(tmp_path):
    run = LEGACY / "v2_gpt_last.json"
    old = load_checkpoint(run)
    save_checkpoint(tmp_path / "last.json", old.model, old.metadata)
    doc = json.loads((tmp_path / "last.json").read_text())
    assert doc["version"] == 3 and "state" not in doc["optimizer"]
    tensors = load_file(tmp_path / doc["tensors"]["file"])  # anyone's reader
    for name, value in old.model.state_dict().items():
        assert tensors[name].dtype == np.float32 and np.array_equal(tensors[name], value)
    for name, entry in old.metadata["optimizer"]["state"].items():
        assert tensors[f"optimizer.state.{name}.step"] == entry["step"] == 2
        assert np.array_equal(tensors[f"optimizer.state.{name}.exp_avg"], entry["exp_avg"])
    scalar = MLP(2, [3, 1], seed=0)
    save_checkpoint(tmp_path / "s.json", scalar)
    assert load_file(tmp_path / "s.safetensors")["0.weight"].dtype == np.float64
    umask = os.umask(0)
    os.umask(umask)
    for name in ("s.json", "s.safetensors"):  # as any new file, whoever wrote it
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask


def test_a_pair_whose_ids_differ_is_refused_by_name(tmp_path):
    save_checkpoint(tmp_path / "a.json", MLP(2, [3, 1], seed=0))
    save_checkpoint(tmp_path / "b.json", MLP(2, [3, 1], seed=1))
    shutil.copy(tmp_path / "b.safetensors", tmp_path / "a.safetensors")
    with pytest.raises(CheckpointError, match="not the tensor file it was saved with"):
        load_checkpoint(tmp_path / "a.json")
    with pytest.raises(CheckpointError, match="give the checkpoint's JSON file"):
        load_checkpoint(tmp_path / "b.safetensors")


def test_a_ctrl_c_between_the_two_renames_waits_until_the_pair_is_whole(tmp_path, monkeypatch):
    """A Ctrl-C landing just after the tensors' rename, before the JSON's: the save ends
    with the new pair whole, then the interrupt is raised (it mixed the new tensors with
    the old JSON, which a load refused)."""
    import signal

    from modelwright_autograd import checkpoint

    path = tmp_path / "model.json"
    save_checkpoint(path, MLP(2, [3, 1], seed=0), {"step": 1})
    newer = MLP(2, [3, 1], seed=1)
    real = checkpoint.write_tensors

    def then_ctrl_c(*args, **kwargs):
        real(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(checkpoint, "write_tensors", then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, newer, {"step": 2})
    loaded = load_checkpoint(path)
    assert loaded.metadata["step"] == 2
    assert [p.data for p in loaded.model.parameters()] == [p.data for p in newer.parameters()]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json", "model.safetensors"]


# ---------------------------------------------------------------------- crafted files
def _pair(tmp_path):
    path = tmp_path / "model.json"
    save_checkpoint(path, tensor_nn.MLP(2, [3, 1], seed=0, dtype=np.float32))
    return path, tmp_path / "model.safetensors"


def _split(raw: bytes) -> tuple[dict, bytes]:
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _join(header: dict, data: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _edit(edit):
    def make(tensors: Path) -> None:
        header, data = _split(tensors.read_bytes())
        result = edit(header, data)
        tensors.write_bytes(_join(*result) if isinstance(result, tuple) else result)

    return make


def _entry(name):
    return lambda h: h[name]


def _set_offsets(name, offsets):
    def edit(h, d):
        h[name]["data_offsets"] = offsets
        return h, d

    return _edit(edit)


def _set(name, key, value):
    def edit(h, d):
        h[name][key] = value
        return h, d

    return _edit(edit)


CRAFTED = {
    "truncated": (
        _edit(lambda h, d: (h, d[:-5])),
        "ends at byte 52 of the data; the file holds 47",
    ),
    "a header longer than the file": (
        _edit(lambda h, d: struct.pack("<Q", 10**12) + json.dumps(h).encode() + d),
        "declares a header of 1,000,000,000,000 bytes",
    ),
    "a header that is not JSON": (
        _edit(lambda h, d: struct.pack("<Q", 4) + b"{{{{" + d),
        "its header is not JSON",
    ),
    "overlapping": (_set_offsets("0.weight", [0, 24]), "overlap"),
    "out of range": (_set_offsets("2.bias", [10**9, 10**9 + 4]), "ends at byte 1,000,000,004"),
    "a span unlike its shape": (
        _set_offsets("2.bias", [0, 10**9]),
        "its shape (1,) of F32 takes 4",
    ),
    "2**40 elements": (
        _set("0.weight", "shape", [2**20, 2**20]),
        "claims 1,099,511,627,776 numbers",
    ),
    "a dtype the architecture has not": (
        lambda t: t.write_bytes(
            save(
                {k: v.astype(np.float64) for k, v in load_file(t).items()},
                {
                    "format": "modelwright-autograd tensors",
                    "id": _split(t.read_bytes())[0]["__metadata__"]["id"],
                },
            )
        ),
        "holds '0.bias' as float64 (3,); the tensor MLP 2-3-1 (relu) has float32 (3,)",
    ),
    "an unknown dtype": (_set("0.bias", "dtype", "F8_E4M3"), "has dtype 'F8_E4M3'"),
    "a gap": (_edit(lambda h, d: (h, d + b"\0" * 4)), "4 bytes after its last tensor"),
    "a name twice": (
        _edit(lambda h, d: _raw_header_twice(h, d)),
        "its header names '0.bias' twice",
    ),
    "a header bloated with empty lists": (
        _edit(
            lambda h, d: _raw_header(json.dumps(h)[:-1] + ', "pad": [' + "[]," * 10**5 + "[]]}", d)
        ),
        "JSON values in 300,396 bytes, more than one per 4",
    ),
    "missing": (lambda t: t.unlink(), "its tensors model.safetensors: no such file"),
    "a FIFO": (lambda t: (t.unlink(), __import__("os").mkfifo(t)), "is a FIFO"),
}


def _raw_header(text, d):
    return struct.pack("<Q", len(text)) + text.encode() + d


def _raw_header_twice(h, d):
    text = json.dumps(h)
    twice = text[:-1] + ', "0.bias": ' + json.dumps(h["0.bias"]) + "}"
    return struct.pack("<Q", len(twice)) + twice.encode() + d


@pytest.mark.parametrize("case", CRAFTED, ids=list(CRAFTED))
def test_a_crafted_tensor_file_is_one_line_and_leaves_the_model_unchanged(tmp_path, capsys, case):
    craft, message = CRAFTED[case]
    path, tensors = _pair(tmp_path)
    craft(tensors)
    model = tensor_nn.MLP(2, [3, 1], seed=5, dtype=np.float32)
    before = model.state_dict()
    with pytest.raises(CheckpointError) as info:
        load_into(model, path)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert all(np.array_equal(before[k], v) for k, v in model.state_dict().items())
    with pytest.raises(CheckpointError, match=r"model\.json"):
        load_checkpoint(path)


def test_a_crafted_tensor_file_is_exit_code_2_for_resume(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    old = load_checkpoint(LEGACY / "v2_gpt_last.json")
    save_checkpoint(run / "last.json", old.model, old.metadata)
    shutil.copy(run / "last.json", run / "model.json")
    shutil.copy(run / "last.safetensors", run / "model.safetensors")
    header, data = _split((run / "last.safetensors").read_bytes())
    (run / "last.safetensors").write_bytes(_join(header, data[:-100]))  # truncated
    argv = ["train", "--resume", str(run), "--steps", "4", "--out", str(tmp_path / "x")]
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(truncated?)" in err and not (tmp_path / "x").exists()
    # a NaN in a moment (docs/checkpoints.md: AdamW moments may not be NaN), ids intact
    shutil.copy(run / "model.safetensors", run / "last.safetensors")
    tensors = load_file(run / "last.safetensors")
    tensors["optimizer.state.transformer.wpe.weight.exp_avg"][0, 0] = np.nan
    (run / "last.safetensors").write_bytes(save(tensors, header["__metadata__"]))
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "non-finite number in transformer.wpe.weight's exp_avg" in err


def test_memory_is_bounded_by_the_header_before_the_tensors_are_read(tmp_path, monkeypatch):
    """A header claiming 2**40 numbers of a file of a few bytes is refused from the header
    alone: no tensor is read (safetensors is never opened)."""
    import safetensors

    path, tensors = _pair(tmp_path)
    CRAFTED["2**40 elements"][0](tensors)
    monkeypatch.setattr(safetensors, "safe_open", None)
    with pytest.raises(CheckpointError, match="claims"):
        load_checkpoint(path)
