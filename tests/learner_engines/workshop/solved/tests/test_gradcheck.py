"""The gradient check: the same expression built with this engine's Value and with
PyTorch (float64), the output and every input's gradient equal to within 1e-6.

PyTorch is the reference here and nowhere else: the engine itself never imports it.
"""

import pytest
import torch
from solved.engine import Value

TOLERANCE = 1e-6

EXPRESSIONS = {
    "a * b + b": (lambda a, b: a * b + b, [2.0, -3.0]),
    "a used three times": (lambda a: a * a * a, [1.5]),
    "division and power": (lambda a, b: (a / b) ** 2 - a, [3.0, -2.0]),
    "every nonlinearity": (lambda a: a.tanh() * a.relu() + a.exp() + a.log(), [0.7]),
    "numbers on either side": (lambda a, b: 2 * a - 1 / b + (a * b).tanh(), [0.5, 1.5]),
    "a neuron": (
        lambda w1, w2, x1, x2, b: (w1 * x1 + w2 * x2 + b).tanh(),
        [-3.0, 1.0, 2.0, 0.0, 6.8813735870195432],
    ),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_gradients_match_pytorch(name):
    f, inputs = EXPRESSIONS[name]
    mine = [Value(x) for x in inputs]
    out = f(*mine)
    out.backward()
    theirs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in inputs]
    reference = f(*theirs)
    reference.backward()
    assert abs(out.data - reference.item()) < TOLERANCE
    for i, (m, t) in enumerate(zip(mine, theirs)):
        assert abs(m.grad - t.grad.item()) < TOLERANCE, f"input {i}: {m.grad} vs {t.grad.item()}"
