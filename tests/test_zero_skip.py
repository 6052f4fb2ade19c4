"""backward() skips a node whose gradient is exactly 0.0 when its rule is marked
``@zero_safe`` and its output is finite and nonzero (engine.py, docs/design.md). The skip
must change no number: where a zero gradient meets an infinite local derivative, torch
gives nan and so must we. These tests check that the skip happens only when allowed, and
compare the results where it matters with torch float64, bit for bit (nan for nan)."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
import torch

from modelwright_autograd import MLP, Value, sum_values
from modelwright_autograd.scalar.engine import dot_relu_unchecked, zero_safe

INF, NAN = math.inf, math.nan


def _same(a: float, b: float) -> bool:
    """Equal as IEEE values go, with nan equal to nan."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b


def _spy_node(data: float, marked: bool) -> tuple[Value, Value, list[float]]:
    """A leaf x and a node y = spy(x) whose rule records each call; y holds ``data``."""
    calls: list[float] = []

    def spy(g, out, a):
        calls.append(g)
        return (g,)

    x = Value(2.0)
    return x, Value(data, (x,), "spy", zero_safe(spy) if marked else spy), calls


@pytest.mark.parametrize("data", [3.0, -3.0, 1e-300])
def test_a_marked_rule_with_zero_gradient_and_finite_output_is_skipped(data):
    x, y, calls = _spy_node(data, marked=True)
    (y * 0.0).backward()  # mul's rule gives y the gradient 1 * 0.0 = 0.0
    assert calls == []
    assert x.grad == 0.0


@pytest.mark.parametrize("data", [0.0, -0.0, INF, -INF, NAN])
def test_a_zero_or_non_finite_output_still_runs_the_rule(data):
    _, y, calls = _spy_node(data, marked=True)
    (y * 0.0).backward()
    assert calls == [0.0]


def test_an_unmarked_rule_runs_even_with_a_zero_gradient():
    _, y, calls = _spy_node(3.0, marked=False)
    (y * 0.0).backward()
    assert calls == [0.0]


def test_a_rule_need_not_be_hashable():
    """A custom op's rule may be any callable (here an unhashable dataclass instance):
    the walk reads the mark as an attribute."""

    @dataclasses.dataclass
    class Scale:
        k: float

        def __call__(self, g, out, a):
            return (self.k * g,)

    x = Value(2.0)
    (Value(6.0, (x,), "scale", Scale(3.0)) * 0.0).backward()
    assert x.grad == 0.0


def test_a_nonzero_gradient_always_runs_the_rule():
    x, y, calls = _spy_node(3.0, marked=True)
    (y * 2.0).backward()
    assert calls == [2.0]
    assert x.grad == 2.0


# Each case: a function of leaves whose output is multiplied by 0 before backward, so
# every node below gets the gradient 0.0; with an infinite local derivative somewhere,
# torch's answer is nan, and the skip must not hide it.
ZERO_TIMES_INFINITE = {
    "0 ** 0.5 (pow: infinite derivative, finite output)": ([0.0], lambda t, m: t[0] ** 0.5),
    "division whose -c/b overflows": ([1.0, 1e-300], lambda t, m: t[0] / t[1]),
    "log at 0": ([0.0], lambda t, m: m.log(t[0])),
    "product with an infinite input": ([INF, 2.0], lambda t, m: t[0] * t[1]),
    "exp overflowing": ([800.0], lambda t, m: m.exp(t[0])),
    "relu of a product with an infinite input": ([-INF, 2.0], lambda t, m: m.relu(t[0] * t[1])),
    "a finite chain (every gradient 0)": ([1.5, -0.5], lambda t, m: m.tanh(t[0] * t[1] + t[0])),
}


class _TorchOps:
    log = staticmethod(torch.log)
    exp = staticmethod(torch.exp)
    relu = staticmethod(torch.relu)
    tanh = staticmethod(torch.tanh)


class _OurOps:
    log = staticmethod(lambda v: v.log())
    exp = staticmethod(lambda v: v.exp())
    relu = staticmethod(lambda v: v.relu())
    tanh = staticmethod(lambda v: v.tanh())


@pytest.mark.parametrize("case", ZERO_TIMES_INFINITE)
def test_zero_gradients_meeting_infinite_derivatives_match_torch(case):
    values, fn = ZERO_TIMES_INFINITE[case]
    ours = [Value(v) for v in values]
    (fn(ours, _OurOps) * 0.0).backward()
    theirs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    (fn(theirs, _TorchOps) * 0.0).backward()
    for o, t in zip(ours, theirs):
        assert _same(o.grad, t.grad.item()), (case, o.grad, t.grad.item())


def test_a_fused_neuron_whose_zero_output_hides_an_infinite_input_still_gives_nan():
    w, x = Value(1.0), Value(-INF)  # relu(-inf) = 0: a zero output, so it is not skipped
    (dot_relu_unchecked([w], [x], Value(0.0)) * 0.0).backward()
    tw = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    tx = torch.tensor(-INF, dtype=torch.float64, requires_grad=True)
    (torch.relu(tw * tx) * 0.0).backward()
    assert _same(w.grad, tw.grad.item()) and _same(x.grad, tx.grad.item())
    assert math.isnan(w.grad)


def _svm_loss(model, X, y):
    scores = [model(x) for x in X]
    losses = [(1 + -yi * si).relu() for yi, si in zip(y, scores)]
    params = model.parameters()
    return sum_values(losses) * (1.0 / len(losses)) + 1e-4 * Value.dot(params, params)


def test_a_trained_mlp_whose_samples_mostly_pass_nothing_matches_torch():
    """After training, most samples sit beyond the hinge and their whole subgraph is
    skipped; the gradients still equal torch's, computed on the same weights."""
    rng = random.Random(0)
    X = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(40)]
    y = [1.0 if a * b > 0 else -1.0 for a, b in X]
    model = MLP(2, [8, 8, 1], seed=0)
    for _ in range(60):
        model.zero_grad()
        _svm_loss(model, X, y).backward()
        for p in model.parameters():
            p.data -= 0.5 * p.grad
    model.zero_grad()
    loss = _svm_loss(model, X, y)
    inactive = sum(1 for x, yi in zip(X, y) if 1 - yi * model(x).data <= 0)
    assert inactive >= len(X) // 2  # the case this test is about
    loss.backward()

    params = [
        torch.tensor(p.data, dtype=torch.float64, requires_grad=True) for p in model.parameters()
    ]
    it = iter(params)
    layers = [
        [([next(it) for _ in range(nin)], next(it)) for _ in range(nout)]
        for nin, nout in ((2, 8), (8, 8), (8, 1))
    ]
    total = torch.zeros((), dtype=torch.float64)
    for x, yi in zip(X, y):
        h = [torch.tensor(v, dtype=torch.float64) for v in x]
        for k, layer in enumerate(layers):
            h = [b + sum(w * v for w, v in zip(ws, h)) for ws, b in layer]
            if k < 2:
                h = [torch.relu(v) for v in h]
        total = total + torch.relu(1 - yi * h[0])
    (total / len(X) + 1e-4 * sum(p * p for p in params)).backward()
    for ours, theirs in zip(model.parameters(), params):
        assert abs(ours.grad - theirs.grad.item()) <= 1e-12
