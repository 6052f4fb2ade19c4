"""Optimisers and losses against torch.optim and torch.nn.functional (float64), and no_grad."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from modelwright_autograd import (
    SGD,
    Adam,
    Tensor,
    Value,
    binary_cross_entropy_with_logits,
    cross_entropy,
    is_grad_enabled,
    mse_loss,
    no_grad,
    svm_loss,
)
from modelwright_autograd.scalar import losses
from modelwright_autograd.tensor import functional

START = [0.5, -1.2, 2.0, 0.03]


def _objective(p):
    """A small non-quadratic loss of four parameters; works on Values and on tensors."""
    a, b, c, d = p
    return (a * b - 1.0) ** 2 + (c.tanh() + d) ** 2 + (a - c) ** 4 * 0.1 + d.exp() * 0.3


def _run_both(make_ours, make_theirs, steps=6):
    params = [Value(x) for x in START]
    ours = make_ours(params)
    tparams = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in START]
    theirs = make_theirs(tparams)
    for _ in range(steps):
        ours.zero_grad()
        _objective(params).backward()
        ours.step()
        theirs.zero_grad()
        _objective(tparams).backward()
        theirs.step()
        for p, t in zip(params, tparams):
            assert p.data == pytest.approx(t.item(), rel=1e-9, abs=1e-9)
    # the parameters moved (a no-op optimiser would pass the comparison too trivially)
    assert all(p.data != x for p, x in zip(params, START))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": 0.05},
        {"lr": 0.05, "momentum": 0.9},
        {"lr": 0.05, "weight_decay": 0.01},
        {"lr": 0.03, "momentum": 0.5, "weight_decay": 0.1},
    ],
    ids=["plain", "momentum", "weight_decay", "both"],
)
def test_sgd_matches_torch(kwargs):
    _run_both(lambda ps: SGD(ps, **kwargs), lambda ts: torch.optim.SGD(ts, **kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"lr": 0.1},
        {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-6},
        {"lr": 0.05, "weight_decay": 0.1},
    ],
    ids=["defaults", "lr", "betas_eps", "weight_decay"],
)
def test_adam_matches_torch(kwargs):
    _run_both(lambda ps: Adam(ps, **kwargs), lambda ts: torch.optim.Adam(ts, **kwargs))


def test_sgd_step_by_hand():
    # p = 1.0, g = 2.0, lr = 0.1: p -> 1.0 - 0.2 = 0.8; with momentum 0.5 the second step
    # uses buf = 0.5*2 + 2 = 3 (same gradient), so p -> 0.8 - 0.3 = 0.5
    p = Value(1.0)
    opt = SGD([p], lr=0.1, momentum=0.5)
    p.grad = 2.0
    opt.step()
    assert p.data == pytest.approx(0.8, rel=1e-15)
    opt.step()
    assert p.data == pytest.approx(0.5, rel=1e-15)


def test_optimizer_argument_errors():
    with pytest.raises(ValueError, match="empty"):
        SGD([], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        SGD([Value(1.0)], lr=-1.0)
    with pytest.raises(TypeError, match=r"\.data and \.grad"):
        SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="betas"):
        Adam([Value(1.0)], betas=(1.0, 0.999))


# ------------------------------------------------------------------ losses


def _compare_loss(ours, theirs, preds, targets):
    leaves = [Value(x) for x in preds]
    loss = ours(leaves, targets)
    loss.backward()
    t = torch.tensor(preds, dtype=torch.float64, requires_grad=True)
    tloss = theirs(t, torch.tensor(targets, dtype=torch.float64))
    tloss.backward()
    assert math.isfinite(loss.data)
    assert loss.data == pytest.approx(tloss.item(), rel=1e-9, abs=1e-12)
    for leaf, g in zip(leaves, t.grad.tolist()):
        assert leaf.grad == pytest.approx(g, rel=1e-6, abs=1e-12)


def test_svm_loss_matches_torch():
    scores = [0.3, -2.0, 1.7, -0.4, 0.99]
    labels = [1.0, -1.0, -1.0, 1.0, 1.0]
    _compare_loss(svm_loss, lambda s, y: torch.relu(1 - y * s).mean(), scores, labels)


def test_mse_loss_matches_torch():
    _compare_loss(mse_loss, F.mse_loss, [0.3, -2.0, 1.7, 4.5], [0.0, -1.5, 2.0, 4.5])


@pytest.mark.parametrize(
    ("logits", "labels"),
    [
        ([0.3, -2.0, 1.7, 0.0], [1.0, 0.0, 0.0, 1.0]),
        ([1000.0, -1000.0, 1000.0, -1000.0], [1.0, 0.0, 0.0, 1.0]),  # no overflow
        ([40.0, -40.0, 36.5, -700.0, 710.0], [0.0, 1.0, 1.0, 0.0, 1.0]),
        ([0.8, -0.3], [0.25, 0.7]),  # soft labels
    ],
    ids=["moderate", "plus-minus-1000", "large", "soft"],
)
def test_bce_with_logits_matches_torch(logits, labels):
    _compare_loss(
        binary_cross_entropy_with_logits, F.binary_cross_entropy_with_logits, logits, labels
    )


def test_bce_with_logits_extremes_by_hand():
    # z = 1000, y = 0: loss = z = 1000, dloss/dz = sigmoid(z) - y = 1
    # z = -1000, y = 0: loss = log(1 + e^-1000) = 0, dloss/dz = 0
    z1, z2 = Value(1000.0), Value(-1000.0)
    loss = binary_cross_entropy_with_logits([z1, z2], [0.0, 0.0])  # mean of (1000, 0) = 500
    loss.backward()
    assert loss.data == 500.0
    assert (z1.grad, z2.grad) == (0.5, 0.0)  # each term's slope times 1/2


@pytest.mark.parametrize("loss", [svm_loss, mse_loss, binary_cross_entropy_with_logits])
def test_losses_check_sizes(loss):
    with pytest.raises(ValueError, match="2 predictions but 3 targets"):
        loss([Value(1.0), Value(2.0)], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="at least one"):
        loss([], [])


TORCH_LOSSES = {
    "svm": lambda s, y: torch.relu(1 - y * s).mean(),
    "mse": F.mse_loss,
    "bce": F.binary_cross_entropy_with_logits,
}


def test_both_engines_have_one_loss_table_with_the_same_names():
    assert list(losses.LOSSES) == list(functional.LOSSES) == [*TORCH_LOSSES, "ce"]
    for name in losses.LOSSES:
        assert losses.LOSSES[name].__name__ == functional.LOSSES[name].__name__


@pytest.mark.parametrize("name", sorted(TORCH_LOSSES))
def test_both_engines_two_class_losses_match_torch(name):
    scalar, tensor = losses.LOSSES[name], functional.LOSSES[name]
    assert scalar.__name__ == tensor.__name__
    scores = [0.3, -2.0, 1.7, -0.4, 0.99]
    targets = [0.0, 1.0, 1.0, 0.0, 1.0] if name == "bce" else [1.0, -1.0, -1.0, 1.0, 1.0]
    _compare_loss(scalar, TORCH_LOSSES[name], scores, targets)
    t = Tensor(scores, requires_grad=True)
    loss = tensor(t, targets)
    loss.backward()
    expected = torch.tensor(scores, dtype=torch.float64, requires_grad=True)
    texpected = TORCH_LOSSES[name](expected, torch.tensor(targets, dtype=torch.float64))
    texpected.backward()
    assert loss.item() == pytest.approx(texpected.item(), rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(t.grad, expected.grad.numpy(), rtol=1e-12, atol=1e-15)


CE_CASES = {
    "moderate": (
        [[0.3, -2.0, 1.7], [0.0, 0.5, -0.5], [2.0, 2.0, 2.0], [-1.0, 3.0, 0.1]],
        [2, 0, 1, 1],
    ),
    "plus-minus-1000": ([[1000.0, -1000.0], [-1000.0, 1000.0], [0.0, 0.0]], [1, 1, 0]),
    "one-example": ([[0.25, -0.75, 1.5, 0.0]], [3]),
}


@pytest.mark.parametrize("case", sorted(CE_CASES))
def test_cross_entropy_on_values_and_tensors_matches_torch(case):
    rows, targets = CE_CASES[case]
    leaves = [[Value(x) for x in row] for row in rows]
    loss = cross_entropy(leaves, targets)
    loss.backward()
    t = torch.tensor(rows, dtype=torch.float64, requires_grad=True)
    tloss = F.cross_entropy(t, torch.tensor(targets))
    tloss.backward()
    assert math.isfinite(loss.data)
    assert loss.data == pytest.approx(tloss.item(), rel=1e-12, abs=1e-12)
    got = np.array([[v.grad for v in row] for row in leaves])
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-9, atol=1e-15)
    x = Tensor(rows, requires_grad=True)
    tensor_loss = functional.LOSSES["ce"](x, np.array(targets))
    tensor_loss.backward()
    assert tensor_loss.item() == pytest.approx(tloss.item(), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-9, atol=1e-15)


def test_cross_entropy_by_hand():
    # two equal scores: loss = log 2, gradient (softmax - onehot) = (1/2 - 1, 1/2)
    a, b = Value(0.7), Value(0.7)
    loss = cross_entropy([[a, b]], [0])
    loss.backward()
    assert loss.data == pytest.approx(math.log(2.0), rel=1e-15)
    assert (a.grad, b.grad) == (-0.5, 0.5)


def test_cross_entropy_refuses_bad_input():
    row = [Value(1.0), Value(2.0)]
    with pytest.raises(ValueError, match="2 predictions but 1 targets"):
        cross_entropy([row, row], [0])
    with pytest.raises(ValueError, match="at least one"):
        cross_entropy([], [])
    with pytest.raises(ValueError, match="holds no scores"):
        cross_entropy([[]], [0])
    with pytest.raises(ValueError, match="rows of 2 and 1 scores"):
        cross_entropy([row, row[:1]], [0, 0])
    with pytest.raises(IndexError, match="target 2 is out of range for 2 classes"):
        cross_entropy([row], [2])
    with pytest.raises(TypeError, match="class index"):
        cross_entropy([row], [1.0])
    with pytest.raises(TypeError, match="class index"):
        cross_entropy([row], [True])


# ------------------------------------------------------------------ no_grad


def test_no_grad_makes_results_without_history():
    a, b = Value(2.0), Value(3.0)
    assert is_grad_enabled()
    with no_grad():
        assert not is_grad_enabled()
        c = (a * b).tanh() + a
        d = Value.dot([a, b], [b, a], 1.0)
    assert is_grad_enabled()
    for out in (c, d):
        assert out._prev == () and out._backward is None and out._op == ""
    assert d.data == 13.0  # 1 + 2*3 + 3*2
    c.backward()  # a constant: backward touches nothing but itself
    assert (a.grad, b.grad) == (0.0, 0.0)
    e = a * b  # recording is back on after the block
    e.backward()
    assert (a.grad, b.grad) == (3.0, 2.0)


def test_no_grad_restores_mode_after_an_exception_and_nests():
    with pytest.raises(RuntimeError), no_grad():
        raise RuntimeError("boom")
    assert is_grad_enabled()
    with no_grad():
        with no_grad():
            pass
        assert not is_grad_enabled()
    assert is_grad_enabled()


def test_parameter_update_under_no_grad_like_torch():
    # the torch idiom: update weights in place without recording the update
    w = Value(1.0)
    loss = (w * 3.0 - 1.0) ** 2  # dloss/dw = 2 * (3w - 1) * 3 = 12 at w = 1
    loss.backward()
    with no_grad():
        w.data -= 0.01 * w.grad
    assert w.data == pytest.approx(0.88, rel=1e-15) and w._prev == ()


def test_adam_counts_steps_per_parameter_as_torch_does():
    # a parameter with no gradient on the first step has taken one step fewer
    ours = [Value(1.0), Value(1.0)]
    theirs = [torch.tensor(1.0, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    opt, topt = Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1)
    for step in range(3):
        for p, t in zip(ours, theirs, strict=True):
            p.grad, t.grad = 0.5, torch.tensor(0.5, dtype=torch.float64)
        if step == 0:  # the second parameter gets no gradient on the first step
            ours[1].grad = None
            theirs[1].grad = None
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs, strict=True):
        assert p.data == pytest.approx(t.item(), rel=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: Adam(ps, weight_decay=-1.0),
        lambda ps: Adam(ps, eps=-1e-8),
        lambda ps: Adam(ps, betas=(0.9, 1.0)),
        lambda ps: SGD(ps, lr=-0.1),
        lambda ps: SGD(ps, lr=0.1, momentum=-0.5),
    ],
)
def test_optimiser_settings_out_of_range_are_value_errors(make):
    with pytest.raises(ValueError, match="must"):
        make([Value(1.0)])


def test_optimiser_settings_of_the_wrong_type_are_type_errors():
    with pytest.raises(TypeError, match="momentum must be a number, got str"):
        SGD([Value(1.0)], lr=0.1, momentum="x")
