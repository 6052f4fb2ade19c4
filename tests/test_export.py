"""Export to PyTorch: the exported state_dict, loaded into the matching
torch.nn.Sequential rebuilt by the documented recipe, predicts what our model predicts on
its training data (float64, max difference below 1e-12), for a moons model trained with
the scalar engine and a digits model trained with the tensor engine. Without torch the
command says how to install it (torch hidden in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import modelwright_autograd.tensor.functional as F
from modelwright_autograd import MLP, SGD, Adam, cli, svm_loss
from modelwright_autograd.checkpoint import (
    export_torch,
    load_checkpoint,
    save_checkpoint,
    to_torch,
)
from modelwright_autograd.data import load_dataset
from modelwright_autograd.graph import no_grad
from modelwright_autograd.tensor import Tensor
from modelwright_autograd.tensor import nn as tensor_nn


def rebuild(path: Path) -> torch.nn.Sequential:
    """The recipe in docs/checkpoints.md, with torch alone."""
    saved = torch.load(path)  # weights_only: plain data and tensors
    arch = saved["architecture"]
    act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}
    sizes = [arch["nin"], *arch["nouts"]]
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        if i:
            layers.append(act[arch["activation"]]())
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1], dtype=getattr(torch, arch["dtype"])))
    model = torch.nn.Sequential(*layers)
    model.load_state_dict(saved["state_dict"])
    return model


def _export(tmp_path: Path, model, data: dict) -> tuple[Path, Path]:
    path, out = tmp_path / "model.json", tmp_path / "model.pt"
    save_checkpoint(path, model, {"data": data})
    assert cli.main(["export", str(path), str(out)]) == 0
    return path, out


def _training_data(checkpoint) -> np.ndarray:
    data = checkpoint.metadata["data"]
    return load_dataset(data["dataset"], data["samples"], data["noise"], data["seed"]).X_train


def test_a_moons_model_of_the_scalar_engine_predicts_the_same_in_torch(tmp_path, capsys):
    settings = {"dataset": "moons", "samples": 100, "noise": 0.1, "seed": 1337}
    data = load_dataset(*settings.values())
    model = MLP(2, [16, 16, 1], seed=1337)
    opt = SGD(model.parameters(), lr=0.5)
    labels = [2.0 * t - 1.0 for t in data.y_train]
    for _ in range(5):  # a few steps of training, so the weights are not the initial ones
        loss = svm_loss([model(list(x)) for x in data.X_train], labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    path, out = _export(tmp_path, model, settings)
    assert "wrote" in capsys.readouterr().out
    checkpoint = load_checkpoint(path)
    X = _training_data(checkpoint)
    with no_grad():
        ours = np.array([checkpoint.model(list(x)).data for x in X])
    with torch.no_grad():
        theirs = rebuild(out)(torch.from_numpy(X)).numpy()[:, 0]
        helper = to_torch(checkpoint.model)(torch.from_numpy(X)).numpy()[:, 0]
    assert len(X) == 100 and np.ptp(ours) > 0.1  # trained, not all zero
    assert np.max(np.abs(ours - theirs)) < 1e-12
    assert np.max(np.abs(ours - helper)) < 1e-12


def test_a_digits_model_of_the_tensor_engine_predicts_the_same_in_torch(tmp_path):
    settings = {"dataset": "digits", "samples": None, "noise": None, "seed": 1337}
    data = load_dataset(*settings.values())
    model = tensor_nn.MLP(64, [128, 64, 10], seed=1337)
    opt = Adam(model.parameters(), lr=1e-3)
    for _ in range(20):
        loss = F.cross_entropy(model(Tensor(data.X_train)), data.y_train)
        opt.zero_grad()
        loss.backward()
        opt.step()
    path, out = _export(tmp_path, model, settings)
    checkpoint = load_checkpoint(path)
    X = _training_data(checkpoint)
    with no_grad():
        ours = checkpoint.model(Tensor(X)).data
    with torch.no_grad():
        theirs = rebuild(out)(torch.from_numpy(X)).numpy()
    assert ours.shape == theirs.shape == (1437, 10)
    assert np.max(np.abs(ours - theirs)) < 1e-12
    assert np.array_equal(ours.argmax(axis=1), theirs.argmax(axis=1))


def test_export_from_python_keeps_a_float32_models_dtype(tmp_path):
    model = tensor_nn.MLP(3, [5, 2], activation="sigmoid", seed=0, dtype=np.float32)
    export_torch(model, tmp_path / "m.pt")
    torch_model = rebuild(tmp_path / "m.pt")
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    with no_grad(), torch.no_grad():
        ours = model(Tensor(x)).data
        theirs = torch_model(torch.from_numpy(x)).numpy()
    assert theirs.dtype == np.float32
    assert np.max(np.abs(ours - theirs)) < 1e-6  # float32 arithmetic, summed in other orders
    assert os.listdir(tmp_path) == ["m.pt"]  # written atomically: no temporary file left


def test_export_without_torch_says_how_to_install_it(tmp_path):
    model = tensor_nn.MLP(2, [3, 1], seed=0)
    save_checkpoint(tmp_path / "model.json", model)
    hide_torch = (
        "import sys; sys.modules['torch'] = None; from modelwright_autograd import cli; "
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide_torch, "export", str(tmp_path / "model.json"), "m.pt"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "PyTorch is not installed; install it with: pip install torch" in result.stderr
    assert not (tmp_path / "m.pt").exists()


def test_export_of_a_bad_checkpoint_or_to_a_bad_place_is_one_line(tmp_path, capsys):
    model_json = tmp_path / "model.json"
    model_json.write_text("{}")
    assert cli.main(["export", str(model_json), str(tmp_path / "m.pt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a modelwright-autograd checkpoint" in err
    save_checkpoint(model_json, tensor_nn.MLP(2, [1], seed=0))
    target = tmp_path / "no-such-folder" / "m.pt"
    with pytest.raises(SystemExit) as info:
        cli.main(["export", str(model_json), str(target)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-folder does not exist" in err
    with pytest.raises(SystemExit) as info:
        cli.main(["export", str(model_json), ""])
    assert info.value.code == 2
    assert "OUT: expected a file name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        cli.main(["export", str(model_json), str(tmp_path / "." / "model.json")])
    assert info.value.code == 2
    assert "model.json is the checkpoint itself" in capsys.readouterr().err
    assert load_checkpoint(model_json).architecture.describe() == "tensor MLP 2-1 (relu)"
