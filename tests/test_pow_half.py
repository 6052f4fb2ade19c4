"""``x ** 0.5`` and ``x ** -0.5`` as torch computes them, in both engines: torch takes them
as sqrt and 1/sqrt (not C's pow), so (-0.0) ** 0.5 is -0.0 with gradient -inf, (-inf) **
0.5 is nan, and the last bit of a gradient like 0.5 * 3 ** -0.5 is 1/sqrt's. Compared with
torch bit for bit: nan for nan (whatever its sign bit), the sign of zero included, except
a scalar leaf's gradient, which starts at +0.0 and so cannot become -0.0 (docs/design.md, Speed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from modelwright_autograd import Tensor, Value

INPUTS = [3.0, 0.7, 2.5e10, 1e-300, 0.0, -0.0, math.inf, -math.inf, math.nan, -4.0]
EXPONENTS = [0.5, -0.5]


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _torch(x: float, n: float, dtype=torch.float64) -> tuple[float, float]:
    t = torch.tensor(x, dtype=dtype, requires_grad=True)
    out = t**n
    out.backward()
    return out.item(), t.grad.item()


@pytest.mark.parametrize("n", EXPONENTS)
@pytest.mark.parametrize("x", INPUTS, ids=repr)
def test_value_power_matches_torch_bit_for_bit(x, n):
    v = Value(x)
    out = v**n
    out.backward()
    data, grad = _torch(x, n)
    assert _same(out.data, data), (out.data, data)
    assert _same(v.grad + 0.0, grad + 0.0), (v.grad, grad)  # +0.0: -0.0 becomes 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", EXPONENTS)
def test_tensor_power_matches_torch_bit_for_bit(n, dtype):
    x = Tensor(np.array(INPUTS, dtype=dtype), requires_grad=True)
    with np.errstate(all="ignore"):  # nan and inf on purpose
        out = x**n
        out.backward(np.ones(len(INPUTS), dtype=dtype))
    t = torch.tensor(np.array(INPUTS, dtype=dtype), requires_grad=True)
    (t**n).backward(torch.ones(len(INPUTS), dtype=t.dtype))
    for ours, theirs in ((out.data, (t**n).detach().numpy()), (x.grad, t.grad.numpy())):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
        numbers = ~np.isnan(theirs)
        np.testing.assert_array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))


def test_second_derivative_of_a_square_root_matches_torch():
    """Under create_graph the rule's a ** -0.5 is itself the op, so it differentiates as
    torch's does: d2/dx2 sqrt(x) = -1/4 x**-1.5."""
    v = Value(3.0)
    (v**0.5).backward(create_graph=True)
    first = v.grad
    v.grad = 0.0
    first.backward()
    t = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(t**0.5, t, create_graph=True)
    g.backward()
    assert _same(first.data, g.item()) and _same(v.grad, t.grad.item())
