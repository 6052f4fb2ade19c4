"""A fused ReLU neuron (one ``dot_relu`` node) gives exactly what the unfused pair (``dot``
then ``relu``) gives: the same output and the same gradients bit for bit, including the
inactive neurons whose backward is skipped, infinite and nan inputs (0 * inf stays nan),
and second derivatives under create_graph. The unfused pair is itself checked against
torch elsewhere (test_engine_torch.py, test_nn.py)."""

from __future__ import annotations

import math

import pytest
import torch

from modelwright_autograd import Value, sum_values
from modelwright_autograd.scalar.engine import dot_relu_unchecked, dot_unchecked
from modelwright_autograd.scalar.nn import MLP, Neuron

INF, NAN = math.inf, math.nan


def _same(a: float, b: float) -> bool:
    """Equal as IEEE bit patterns go: nan equals nan, and 0.0 differs from -0.0."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _neuron(fused: bool, ws, xs, b, upstream: float = 1.5):
    w = [Value(v) for v in ws]
    x = [Value(v) for v in xs]
    bias = Value(b)
    out = dot_relu_unchecked(w, x, bias) if fused else dot_unchecked(w, x, bias).relu()
    (out * upstream).backward()
    return out.data, [v.grad for v in (*w, *x, bias)]


CASES = {
    "active": ([0.5, -1.0, 2.0], [1.0, 0.25, 0.75], 0.1),
    "inactive": ([0.5, -1.0, 2.0], [-1.0, 0.25, -0.75], 0.1),
    "exactly zero": ([1.0, 1.0], [0.5, -0.5], 0.0),
    "minus zero": ([1.0], [-0.0], -0.0),
    "inf input, active": ([0.5, 1.0], [INF, 1.0], 0.0),
    "inf input, inactive": ([0.5, 1.0], [-INF, 1.0], 0.0),
    "nan input": ([0.5, 1.0], [NAN, 1.0], 0.0),
    "inf weight times zero": ([INF, 1.0], [0.0, -1.0], 0.0),
}


@pytest.mark.parametrize("case", CASES)
def test_fused_neuron_equals_dot_then_relu_bit_for_bit(case):
    ws, xs, b = CASES[case]
    fused_out, fused_grads = _neuron(True, ws, xs, b)
    plain_out, plain_grads = _neuron(False, ws, xs, b)
    assert _same(fused_out, plain_out)
    assert all(_same(f, p) for f, p in zip(fused_grads, plain_grads)), (fused_grads, plain_grads)


def test_inactive_neuron_with_infinite_input_gives_nan_like_torch():
    w, x = Value(0.5), Value(-INF)
    out = dot_relu_unchecked([w], [x], Value(0.0))
    out.backward()
    tw = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    tx = torch.tensor(-INF, dtype=torch.float64, requires_grad=True)
    torch.relu(tw * tx).backward()
    assert out.data == 0.0 and math.isnan(w.grad) and math.isnan(tw.grad.item())


def test_mlp_fused_and_unfused_train_identically():
    fused, plain = MLP(3, [5, 4, 1], seed=2), MLP(3, [5, 4, 1], seed=2, fused=False)
    X = [[1.0, -2.0, 0.5], [-0.3, 0.8, 1.1], [2.0, 0.1, -1.5], [0.0, 0.0, 0.0]]
    for _ in range(3):
        grads = []
        for model in (fused, plain):
            loss = sum_values([(1 + -model(x)).relu() for x in X])
            model.zero_grad()
            loss.backward()
            grads.append([p.grad for p in model.parameters()])
            for p in model.parameters():
                p.data -= 0.1 * p.grad
        assert grads[0] == grads[1]
    assert [p.data for p in fused.parameters()] == [p.data for p in plain.parameters()]


def test_second_derivatives_through_a_fused_neuron_equal_the_unfused():
    results = []
    for fused in (True, False):
        n = Neuron(2, seed=4, fused=fused)
        for p, v in zip(n.parameters(), (0.9, -0.4, 0.1)):  # active at x
            p.data = v
        x = [Value(0.7), Value(-0.2)]
        out = n(x) ** 2
        out.backward(create_graph=True)
        first = x[0].grad
        n.zero_grad()
        x[0].grad = x[1].grad = 0.0
        first.backward()
        results.append((first.data, [v.grad for v in (*n.w, n.b, *x)]))
    assert results[0] == results[1]
    assert results[0][0] != 0.0  # the neuron is active: the check is not vacuous
