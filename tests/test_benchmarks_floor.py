"""The benchmarks' pure-Python floor computes what the engine computes: the same loss and,
to 1e-12, the same gradients, step after step of the demo's SGD; and its first loss is the
one micrograd's demo notebook prints. Without this the floor would be a number, not a
yardstick."""

from __future__ import annotations

import itertools
import random

import pytest

from benchmarks.scalar import (
    DEMO_SIZES,
    DEMO_STEP0_LOSS,
    demo_data,
    demo_lr,
    initial_weights,
    ours_loss,
    ours_model,
)
from benchmarks.scalar_floor import FloorMLP


def _compare(sizes, weights, X, y, steps):
    model = ours_model(weights, True, sizes)
    params = model.parameters()
    floor = FloorMLP(list(sizes), weights)
    losses = []
    for k in range(steps):
        loss = ours_loss(model, X, y)
        model.zero_grad()
        loss.backward()
        floor_loss, gW, gB = floor.svm_loss_and_grads(X, y)
        assert floor_loss == pytest.approx(loss.data, abs=1e-12)
        assert floor.flat((gW, gB)) == pytest.approx([p.grad for p in params], abs=1e-12)
        lr = demo_lr(k)
        for p in params:
            p.data -= lr * p.grad
        floor.sgd(gW, gB, lr)
        assert floor.flat() == pytest.approx([p.data for p in params], abs=1e-12)
        losses.append(floor_loss)
    return losses


def test_floor_matches_the_engine_on_micrograds_demo():
    X, y = demo_data()
    losses = _compare(DEMO_SIZES, initial_weights(), X.tolist(), [float(v) for v in y], 3)
    assert losses[0] == pytest.approx(DEMO_STEP0_LOSS, abs=1e-12)
    assert losses[2] < losses[0]


def test_floor_matches_the_engine_on_other_shapes():
    rng = random.Random(5)
    for sizes in ((3, 5, 1), (2, 4, 6, 3, 1)):
        n_params = sum((a + 1) * b for a, b in itertools.pairwise(sizes))
        weights = [rng.uniform(-1.0, 1.0) for _ in range(n_params)]
        X = [[rng.gauss(0.0, 1.0) for _ in range(sizes[0])] for _ in range(12)]
        y = [rng.choice((-1.0, 1.0)) for _ in range(12)]
        _compare(sizes, weights, X, y, 2)


def test_floor_refuses_a_parameter_count_that_does_not_fit():
    with pytest.raises(ValueError, match="more parameters"):
        FloorMLP([2, 1], [0.0] * 4)
