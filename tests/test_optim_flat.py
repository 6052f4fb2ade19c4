"""Adam on Tensors keeps its state in flat arrays (optim.py, flat_state.py): the results
are torch.optim.Adam's, the parameters stay the user's own arrays, and a parameter that
misses a gradient still counts its own steps, as in torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from modelwright_autograd import Adam, Tensor


def _pair(shapes, dtype=np.float64):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    return ours, theirs, rng


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_flat_adam_matches_torch_when_a_parameter_misses_a_gradient(weight_decay):
    ours, theirs, rng = _pair([(3, 4), (4,), (2, 3)])
    opt = Adam(ours, lr=0.05, weight_decay=weight_decay)
    topt = torch.optim.Adam(theirs, lr=0.05, weight_decay=weight_decay)
    for step in range(5):
        for k, (p, t) in enumerate(zip(ours, theirs)):
            g = rng.standard_normal(p.shape)
            missing = step == 1 and k == 2  # the last parameter skips step 1
            p.grad = None if missing else g.copy()
            t.grad = None if missing else torch.from_numpy(g.copy())
        opt.step()
        topt.step()
        for p, t in zip(ours, theirs):
            np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_flat_adam_updates_the_parameters_own_arrays_in_place():
    ours, _, rng = _pair([(3, 4), (4,)])
    arrays = [p.data for p in ours]
    before = [a.copy() for a in arrays]
    opt = Adam(ours, lr=0.1)
    for p in ours:
        p.grad = rng.standard_normal(p.shape)
    opt.step()
    for p, a, b in zip(ours, arrays, before):
        assert p.data is a and a.base is None  # still the user's array, not a view
        assert not np.array_equal(a, b)


def test_float32_parameters_stay_float32():
    ours, theirs, rng = _pair([(2, 2), (2,)], np.float32)
    opt, topt = Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1)
    for _ in range(3):
        for p, t in zip(ours, theirs):
            g = rng.standard_normal(p.shape).astype(np.float32)
            p.grad, t.grad = g.copy(), torch.from_numpy(g.copy())
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        assert p.data.dtype == np.float32
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-6)
