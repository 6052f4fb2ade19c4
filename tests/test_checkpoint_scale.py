"""Checkpoints at scale and ambiguous ones (issue 23, items 16, 19, 20, 24): loading and
exporting in time linear in the layers (counted, not timed), a bound on the layers, two
names for one tensor refused, and the scalar net's size guarded in the library."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from modelwright_autograd import MLP, cli
from modelwright_autograd import checkpoint as ckpt
from modelwright_autograd.checkpoint import (
    MAX_PARAMETERS,
    CheckpointError,
    load_checkpoint,
    load_into,
)
from modelwright_autograd.scalar import nn
from modelwright_autograd.scalar.nn import state_dict_key_problems
from modelwright_autograd.tensor import Tensor
from modelwright_autograd.tensor import nn as tensor_nn

LEGACY = Path(__file__).parent / "data" / "legacy"


def _deep_checkpoint(path: Path, layers: int, engine: str) -> Path:
    """A valid version-2 checkpoint of ``layers`` 1x1 layers, written as a file would be."""
    state = {}
    for i in range(layers):
        state[f"{2 * i}.weight"] = {"shape": [1, 1], "data": [(0.5).hex()]}
        state[f"{2 * i}.bias"] = {"shape": [1], "data": [(0.25).hex()]}
    arch = {"nin": 1, "nouts": [1] * layers, "activation": "relu"}
    doc = {"format": ckpt.FORMAT, "version": 2, "engine": engine, "architecture": arch}
    path.write_text(json.dumps({**doc, "state_dict": state}))
    return path


def _calls(work) -> int:
    """How many Python and C function calls ``work()`` makes (a generator's resumption
    counts): a count of operations, the same on any machine, for comparing sizes."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("engine", ["scalar", "tensor"])
def test_loading_a_deep_checkpoint_takes_work_linear_in_its_layers(tmp_path, engine):
    small = _deep_checkpoint(tmp_path / "small.json", 100, engine)
    large = _deep_checkpoint(tmp_path / "large.json", 400, engine)
    loaded = load_checkpoint(large)
    assert len(loaded.model.state_dict()) == 800
    ratio = _calls(lambda: load_checkpoint(large)) / _calls(lambda: load_checkpoint(small))
    assert ratio < 4 * 1.25  # four times the layers: quadratic work would be ~16 times


def test_exporting_a_deep_checkpoint_takes_work_linear_in_its_layers(tmp_path):
    torch = pytest.importorskip("torch")
    small = load_checkpoint(_deep_checkpoint(tmp_path / "small.json", 100, "tensor")).model
    large = load_checkpoint(_deep_checkpoint(tmp_path / "large.json", 400, "tensor")).model
    x = np.array([[1.0], [-3.0], [0.75]])
    ours = large(Tensor(x)).data
    theirs = ckpt.to_torch(large)(torch.from_numpy(x)).detach().numpy()
    assert np.array_equal(ours, theirs)  # 0.5 * x + 0.25, exact in binary, 400 times
    ratio = _calls(lambda: ckpt.to_torch(large)) / _calls(lambda: ckpt.to_torch(small))
    assert ratio < 4 * 1.25


def test_state_dict_key_problems_hashes_each_key_a_bounded_number_of_times():
    hashes = 0

    class Key(str):
        def __hash__(self) -> int:
            nonlocal hashes
            hashes += 1
            return str.__hash__(self)

    names = [Key(f"{i}.weight") for i in range(1_000)]
    assert state_dict_key_problems(names, [*names[1:], Key("x")]) == [
        "missing keys ['0.weight']",
        "unexpected keys ['x']",
    ]
    assert hashes <= 4 * 1_000  # one set of each list, one lookup per key


def test_a_checkpoint_of_more_layers_than_the_limit_is_refused_at_once(tmp_path, monkeypatch):
    limit = ckpt.MAX_LAYERS
    at_limit = load_checkpoint(_deep_checkpoint(tmp_path / "ok.json", limit, "tensor"))
    assert len(at_limit.architecture.nouts) == limit
    # 0.5 * x + 0.25 a thousand times over: the fixed point 0.5, exactly
    assert at_limit.model(Tensor(np.array([[0.5]]))).data.item() == 0.5
    path = _deep_checkpoint(tmp_path / "deep.json", limit + 1, "tensor")
    with pytest.raises(CheckpointError, match=f"{limit + 1:,} layers, more than the {limit:,}"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match=f"{limit + 1:,} layers"):
        ckpt.save_checkpoint(tmp_path / "x.json", tensor_nn.MLP(1, [1] * (limit + 1)))
    assert not (tmp_path / "x.json").exists()


def test_export_of_a_deep_model_names_it_in_one_short_line(tmp_path, capsys):
    pytest.importorskip("torch")
    path = _deep_checkpoint(tmp_path / "deep.json", 1_000, "scalar")
    assert cli.main(["export", str(path), str(tmp_path / "deep.pt")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and len(out) < 200 and "(1,000 layers)" in out


# ---------------------------------------------------------------------- two names, one tensor
def _v1_tensor_doc() -> dict:
    return json.loads((LEGACY / "v1_tensor_model.json").read_text())


def test_a_version_1_file_naming_one_tensor_twice_is_refused(tmp_path):
    doc = _v1_tensor_doc()
    legacy = doc["parameters"]["layers.0.weight"]
    doc["parameters"]["0.weight"] = {**legacy, "data": [(0.0).hex()] * len(legacy["data"])}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match=r"both 'layers\.0\.weight' and '0\.weight'"):
        load_checkpoint(path)
    model = tensor_nn.MLP(2, [3, 1], activation="tanh", seed=5)
    before = model.state_dict()
    with pytest.raises(CheckpointError, match=r"two names for the tensor '0\.weight'"):
        load_into(model, path)
    assert all(np.array_equal(before[k], v) for k, v in model.state_dict().items())


def test_an_npz_naming_one_tensor_twice_is_refused(tmp_path):
    path = tmp_path / "weights.npz"
    np.savez(
        path,
        **{
            "layers.0.weight": np.ones((3, 2)),
            "0.weight": np.zeros((3, 2)),
            "layers.0.bias": np.zeros(3),
            "layers.1.weight": np.ones((1, 3)),
            "layers.1.bias": np.zeros(1),
        },
    )
    with pytest.raises(CheckpointError, match=r"both 'layers\.0\.weight' and '0\.weight'"):
        load_into(tensor_nn.MLP(2, [3, 1]), path)


def test_a_json_key_given_twice_is_refused(tmp_path):
    doc = _v1_tensor_doc()
    text = json.dumps(doc).replace('"format"', '"engine": "scalar", "format"', 1)
    path = tmp_path / "model.json"
    path.write_text(text)
    with pytest.raises(CheckpointError, match="holds the key 'engine' twice"):
        load_checkpoint(path)


# ---------------------------------------------------------------------- the library's size guard
def test_a_scalar_mlp_too_large_is_refused_before_building_a_value(monkeypatch):
    built = 0
    value = nn.Value

    def counted(*args, **kwargs):
        nonlocal built
        built += 1
        assert built < 10_000, "built Values for a net it should refuse"
        return value(*args, **kwargs)

    monkeypatch.setattr(nn, "Value", counted)
    limit = MAX_PARAMETERS["scalar"]
    with pytest.raises(ValueError, match=f"1,000,004,000,000 weights.*at most {limit:,}"):
        MLP(2, [10**6, 10**6])
    with pytest.raises(ValueError, match="at most"):
        nn.Layer(10**6, 10**6)
    with pytest.raises(ValueError, match="at most"):
        nn.Neuron(10**7)
    assert built == 0
    monkeypatch.undo()
    assert len(MLP(2, [3, 1]).parameters()) == 13  # (2 + 1) * 3 + (3 + 1) * 1


def test_export_warns_of_nan_and_infinite_weights(tmp_path, capsys):
    pytest.importorskip("torch")
    model = tensor_nn.MLP(2, [3, 1], seed=0)
    model.layers[0].weight.data[0, 0] = np.nan
    model.layers[1].bias.data[0] = -np.inf
    ckpt.save_checkpoint(tmp_path / "model.json", model)
    assert cli.main(["export", str(tmp_path / "model.json"), str(tmp_path / "m.pt")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "warning: 2 of the weights are NaN or infinite" in err


def test_train_refuses_more_layers_than_a_checkpoint_holds(tmp_path, capsys):
    hidden = ",".join(["1"] * ckpt.MAX_LAYERS)  # and the output layer: one too many
    with pytest.raises(SystemExit) as stopped:
        cli.main(["train", "--hidden", hidden, "--out", str(tmp_path / "run")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "1,000 hidden sizes make 1,001 layers; a checkpoint holds at most 1,000" in err
    assert list(tmp_path.iterdir()) == []
