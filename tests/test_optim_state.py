"""AdamW's state as torch lays it out (state_dict / load_state_dict), and as JSON in a
checkpoint (optim_state.py): the same moments as torch's, and a run continued from the
saved state takes the same steps as one never stopped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from modelwright_autograd import Tensor
from modelwright_autograd.checkpoint import load_checkpoint, save_checkpoint
from modelwright_autograd.lm import models as M
from modelwright_autograd.optim import AdamW
from modelwright_autograd.optim_state import (
    OptimizerStateError,
    optimizer_from_json,
    optimizer_to_json,
)


def test_adamw_state_dict_is_torchs():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in ((3, 4), (4,), (2,))]
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    opt = AdamW([{"params": ours[:2]}, {"params": ours[2:], "weight_decay": 0.0}], lr=0.05)
    topt = torch.optim.AdamW(
        [{"params": theirs[:2]}, {"params": theirs[2:], "weight_decay": 0.0}], lr=0.05
    )
    for _ in range(3):
        for p, t in zip(ours, theirs):
            g = rng.standard_normal(p.shape)
            p.grad, t.grad = g.copy(), torch.from_numpy(g.copy())
        opt.step()
        topt.step()
    mine, torchs = opt.state_dict(), topt.state_dict()
    assert [g["params"] for g in mine["param_groups"]] == [[0, 1], [2]]
    assert [g["params"] for g in torchs["param_groups"]] == [[0, 1], [2]]
    for i, entry in torchs["state"].items():
        assert mine["state"][i]["step"] == int(entry["step"]) == 3
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(mine["state"][i][key], entry[key].numpy(), rtol=1e-13)
    for g, tg in zip(mine["param_groups"], torchs["param_groups"]):
        assert (g["lr"], g["betas"], g["eps"], g["weight_decay"]) == (
            tg["lr"],
            tg["betas"],
            tg["eps"],
            tg["weight_decay"],
        )


_CONFIG = M.check_config(M.LMConfig("gpt", 10, 8, n_layer=1, n_head=2, n_embd=8, dtype="float64"))


def _model_and_optimizer():
    model = M.build(_CONFIG, seed=1)
    params = model.parameters()
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return model, AdamW(groups, lr=1e-2, betas=(0.9, 0.99))


def _steps(model, optimizer, n, seed):
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(n):
        x, y = rng.integers(0, 10, (4, 8)), rng.integers(0, 10, (4, 8))
        loss = model.loss(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_a_run_continued_from_the_saved_state_is_the_unbroken_run(tmp_path):
    model, opt = _model_and_optimizer()
    _steps(model, opt, 3, seed=0)
    save_checkpoint(tmp_path / "run.json", model, {"optimizer": optimizer_to_json(opt, model)})
    doc = load_checkpoint(tmp_path / "run.json").metadata["optimizer"]
    assert doc["param_groups"][0]["params"][0] == "transformer.wte.weight"
    copy, copy_opt = _model_and_optimizer()
    copy.load_state_dict(model.state_dict())
    optimizer_from_json(Path("run.json"), doc, copy_opt, copy)
    assert _steps(copy, copy_opt, 4, seed=1) == _steps(model, opt, 4, seed=1)


@pytest.mark.parametrize(
    "spoil, words",
    [
        (lambda d: d.update(type="SGD"), "not an AdamW"),
        (lambda d: d["state"]["transformer.wte.weight"].update(exp_avg="@@"), "not base64"),
        (lambda d: d["state"]["transformer.wte.weight"].update(exp_avg="AAAA"), "bytes of"),
        (lambda d: d["state"].update(nope=d["state"]["transformer.wte.weight"]), "not a parameter"),
        (lambda d: d["state"]["transformer.wte.weight"].update(step=0), "no step count"),
        (lambda d: d["param_groups"].reverse(), "unlike this run"),
    ],
)
def test_a_bad_state_is_one_line_and_changes_nothing(spoil, words):
    model, opt = _model_and_optimizer()
    _steps(model, opt, 2, seed=0)
    doc = optimizer_to_json(opt, model)
    spoil(doc)
    fresh, fresh_opt = _model_and_optimizer()
    before = fresh_opt.state_dict()
    with pytest.raises(OptimizerStateError, match=words) as e:
        optimizer_from_json(Path("run.json"), doc, fresh_opt, fresh)
    assert "\n" not in str(e.value)
    assert fresh_opt.state_dict()["state"] == before["state"] == {}
