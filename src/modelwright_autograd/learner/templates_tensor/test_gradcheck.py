"""The gradient check: the same expression built with this engine's Tensor and with
PyTorch (float64) on random arrays, the output and every input's gradient equal to within
1e-6. The loss is (out * W).sum() for a random W, so out.grad is a generic array.

PyTorch is the reference here and nowhere else: the engine itself never imports it.
"""

import numpy as np
import pytest
import torch
from mygrad.engine import Tensor, cross_entropy

TOLERANCE = 1e-6

EXPRESSIONS = {
    "a row broadcast over a matrix": (lambda a, b: a * b + b, [(2, 3), (3,)]),
    "a column": (lambda a, b: a / b - a, [(2, 3), (2, 1)]),
    "@ needs its transposes": (lambda a, b: (a @ b).tanh(), [(2, 3), (3, 4)]),
    "a dropped axis, 1/n": (lambda a: a.sum(1) * a.mean(0, True).sum(), [(2, 3)]),
    "every nonlinearity": (lambda a: a.exp().log_softmax(-1) + a.relu() * a.log(), [(4, 3)]),
    "reshape and transpose": (lambda a: a.reshape(3, 2).T * a, [(2, 3)]),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_gradients_match_pytorch(name):
    f, shapes = EXPRESSIONS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(0.5, 2.0, shape) for shape in shapes]
    mine = [Tensor(a) for a in arrays]
    out = f(*mine)
    W = rng.standard_normal(out.data.shape)
    (out * Tensor(W)).sum().backward()
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    reference = f(*theirs)
    (reference * torch.tensor(W)).sum().backward()
    assert np.allclose(out.data, reference.detach().numpy(), atol=TOLERANCE)
    for i, (m, t) in enumerate(zip(mine, theirs)):
        assert m.grad.shape == t.shape, f"input {i}: its gradient has shape {m.grad.shape}"
        assert np.allclose(m.grad, t.grad.numpy(), atol=TOLERANCE), f"input {i}"


def test_cross_entropy_matches_pytorch():
    rng = np.random.default_rng(1)
    logits, targets = rng.standard_normal((5, 3)), np.array([0, 2, 1, 1, 0])
    mine = Tensor(logits)
    out = cross_entropy(mine, targets)
    out.backward()
    theirs = torch.tensor(logits, requires_grad=True)
    reference = torch.nn.functional.cross_entropy(theirs, torch.tensor(targets))
    reference.backward()
    assert abs(float(out.data) - reference.item()) < TOLERANCE
    assert np.allclose(mine.grad, theirs.grad.numpy(), atol=TOLERANCE)
