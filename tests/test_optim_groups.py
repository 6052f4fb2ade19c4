"""AdamW, parameter groups, clip_grad_norm_ and the learning-rate schedules against
torch.optim, torch.nn.utils and torch.optim.lr_scheduler (float64 unless said), step for
step; nanoGPT's schedule against its formula written out below."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from modelwright_autograd import (
    SGD,
    Adam,
    AdamW,
    LambdaLR,
    Tensor,
    Value,
    WarmupCosineLR,
    clip_grad_norm_,
)
from modelwright_autograd.flat_state import share_buffer
from modelwright_autograd.optim import warmup_cosine_lr

pytestmark = pytest.mark.filterwarnings(
    "ignore:invalid value encountered in multiply",  # inf * 0, as torch's nan
    "ignore:Detected call of `lr_scheduler.step\\(\\)` before",  # no optimiser steps there
)

# (name, shape): a small model's parameters, 2-D weights and 1-D biases/gains as a GPT has
SHAPES = [("wte", (5, 4)), ("w", (3, 4)), ("b", (3,)), ("ln", (4,)), ("head", (2, 3))]
X = np.random.default_rng(7).standard_normal((6, 4))


def _loss(p, x):
    """A smooth loss of the five parameters, in either engine."""
    wte, w, b, ln, head = p
    h = (x @ w.T + b).tanh()
    return ((h @ head.T) ** 2).sum() + ((wte * ln) ** 2).mean() + (wte @ ln).tanh().sum()


def _params(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for _, s in SHAPES]
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def _nanogpt_groups(params, weight_decay):
    """nanoGPT's configure_optimizers: decay on the 2-D weights only."""
    return [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]


def _train_both(make_ours, make_theirs, steps=10, dtype=np.float64, tiled=False, hook=None):
    """``steps`` steps of both optimisers on the same loss; yields after each step."""
    ours, theirs = _params(dtype)
    if tiled:
        share_buffer(ours)
    opt, topt = make_ours(ours), make_theirs(theirs)
    x, tx = Tensor(X.astype(dtype)), torch.tensor(X.astype(dtype))
    for step in range(steps):
        opt.zero_grad()
        topt.zero_grad()
        loss, tloss = _loss(ours, x), _loss(theirs, tx)
        loss.backward()
        tloss.backward()
        if hook is not None:
            hook(step, ours, theirs)
        opt.step()
        topt.step()
        yield step, loss.item(), tloss.item(), ours, theirs


def _assert_close(ours, theirs, tol):
    for p, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("tiled", [False, True], ids=["separate arrays", "one buffer"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": 1e-3, "betas": (0.9, 0.99)},
        {"lr": 0.05, "betas": (0.8, 0.999), "eps": 1e-6},
        {"lr": 0.02, "weight_decay": 0.3},  # the default group's decay as well
    ],
    ids=["nanogpt", "betas_eps", "both_decay"],
)
def test_adamw_with_nanogpt_groups_matches_torch_step_for_step(kwargs, tiled):
    def groups(params):
        g = _nanogpt_groups(params, 0.1)
        if "weight_decay" in kwargs:
            del g[0]["weight_decay"]  # this group takes the constructor's
        return g

    moved = None
    for _, loss, tloss, ours, theirs in _train_both(
        lambda ps: AdamW(groups(ps), **kwargs),
        lambda ts: torch.optim.AdamW(groups(ts), **kwargs),
        tiled=tiled,
    ):
        assert loss == pytest.approx(tloss, rel=1e-12, abs=1e-12)
        _assert_close(ours, theirs, 1e-12)
        moved = ours
    start = _params()[0]
    assert all(not np.allclose(p.data, s.data) for p, s in zip(moved, start))


def test_adamw_decays_the_weights_only_of_its_decay_group():
    """With a zero gradient Adam's step is 0 and AdamW's is the decay alone: the decay
    group shrinks by exactly (1 - lr*wd) per step, the other group does not move."""
    ours, _ = _params()
    opt = AdamW(_nanogpt_groups(ours, 0.1), lr=0.01)
    before = [p.data.copy() for p in ours]
    for p in ours:
        p.grad = np.zeros_like(p.data)
    opt.step()
    for p, b in zip(ours, before):
        np.testing.assert_array_equal(p.data, b * (1 - 0.01 * 0.1) if b.ndim >= 2 else b)


def test_adamw_in_float32_matches_torch_float32():
    for _, loss, tloss, ours, theirs in _train_both(
        lambda ps: AdamW(_nanogpt_groups(ps, 0.1), lr=1e-2, betas=(0.9, 0.99)),
        lambda ts: torch.optim.AdamW(_nanogpt_groups(ts, 0.1), lr=1e-2, betas=(0.9, 0.99)),
        dtype=np.float32,
    ):
        assert all(p.dtype == np.float32 for p in ours)
        assert loss == pytest.approx(tloss, rel=1e-5)
        _assert_close(ours, theirs, 1e-5)


def test_adamw_with_a_parameter_that_misses_a_gradient_matches_torch():
    """A parameter with no gradient on some step takes no step (not even the decay) and
    counts its own steps, as in torch; the group leaves its flat arrays for that."""

    def drop(step, ours, theirs):
        if step in (0, 3):
            ours[1].grad = None
            theirs[1].grad = None

    for _, _, _, ours, theirs in _train_both(
        lambda ps: AdamW(_nanogpt_groups(ps, 0.1), lr=0.01),
        lambda ts: torch.optim.AdamW(_nanogpt_groups(ts, 0.1), lr=0.01),
        hook=drop,
    ):
        _assert_close(ours, theirs, 1e-12)


@pytest.mark.parametrize(
    "ours_cls, torch_cls, kwargs, group_settings",
    [
        (SGD, torch.optim.SGD, {"lr": 0.01}, [{"lr": 0.05, "momentum": 0.9}, {}]),
        (SGD, torch.optim.SGD, {"lr": 0.01, "weight_decay": 0.1}, [{"weight_decay": 0.0}, {}]),
        (Adam, torch.optim.Adam, {"lr": 0.01}, [{"weight_decay": 0.2}, {"betas": (0.5, 0.9)}]),
        (AdamW, torch.optim.AdamW, {"lr": 0.01}, [{"lr": 0.03, "eps": 1e-4}, {}]),
    ],
    ids=["sgd-lr-momentum", "sgd-decay", "adam", "adamw-lr-eps"],
)
def test_every_optimiser_takes_parameter_groups_as_torch(
    ours_cls, torch_cls, kwargs, group_settings
):
    def groups(params):
        return [
            {"params": params[:2], **group_settings[0]},
            {"params": params[2:], **group_settings[1]},
        ]

    for _, _, _, ours, theirs in _train_both(
        lambda ps: ours_cls(groups(ps), **kwargs), lambda ts: torch_cls(groups(ts), **kwargs)
    ):
        _assert_close(ours, theirs, 1e-12)


def test_param_groups_hold_each_groups_settings_as_torch():
    ours, theirs = _params()
    opt = AdamW(_nanogpt_groups(ours, 0.1), lr=1e-3, betas=(0.9, 0.99))
    topt = torch.optim.AdamW(_nanogpt_groups(theirs, 0.1), lr=1e-3, betas=(0.9, 0.99))
    assert len(opt.param_groups) == len(topt.param_groups) == 2
    for group, tgroup in zip(opt.param_groups, topt.param_groups):
        for key in ("lr", "betas", "eps", "weight_decay"):
            assert group[key] == tgroup[key], key
        assert [p.shape for p in group["params"]] == [tuple(t.shape) for t in tgroup["params"]]
    extra = Tensor(np.ones(3), requires_grad=True)
    opt.add_param_group({"params": extra, "lr": 0.5})
    assert opt.param_groups[2]["params"] == [extra] and opt.param_groups[2]["lr"] == 0.5
    assert opt.param_groups[2]["weight_decay"] == 1e-2  # AdamW's default, as torch's


def test_an_adamw_step_on_values_matches_torch():
    ours = [Value(0.5), Value(-1.5)]
    theirs = [torch.tensor(v.data, dtype=torch.float64, requires_grad=True) for v in ours]
    opt = AdamW([{"params": ours[:1]}, {"params": ours[1:], "weight_decay": 0.0}], lr=0.1)
    topt = torch.optim.AdamW(
        [{"params": theirs[:1]}, {"params": theirs[1:], "weight_decay": 0.0}], lr=0.1
    )
    for _ in range(5):
        for o, t in ((opt, ours), (topt, theirs)):
            o.zero_grad()
            ((t[0] * t[1]).tanh() + t[0] ** 2).backward()
            o.step()
        assert [p.data for p in ours] == pytest.approx([t.item() for t in theirs], rel=1e-12)


BAD_GROUPS = [
    (lambda p: AdamW([p[0], {"params": p[1:]}]), TypeError, "not a mixture"),
    (lambda p: AdamW([{"params": p}, {"params": p[:1]}]), ValueError, "more than once"),
    (lambda p: AdamW([{"params": p, "lr": -1.0}]), ValueError, "learning rate must be >= 0"),
    (lambda p: AdamW([{"params": p, "betas": (0.9, 1.0)}]), ValueError, r"betas .* \[0, 1\)"),
    (lambda p: AdamW([{"lr": 0.1}]), TypeError, "a dict with 'params'"),
    (lambda p: AdamW(p[0]), TypeError, "iterable of parameters"),
    (lambda p: SGD([{"params": p, "momentum": "x"}], lr=0.1), TypeError, "momentum"),
    (lambda p: AdamW([]), ValueError, "empty parameter list"),
]


@pytest.mark.parametrize("make, error, message", BAD_GROUPS)
def test_bad_parameter_groups_are_refused_clearly(make, error, message):
    with pytest.raises(error, match=message):
        make(_params()[0])


# ---------------------------------------------------------------------- clip_grad_norm_
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, math.inf], ids=str)
@pytest.mark.parametrize("max_norm", [0.5, 1e3], ids=["clips", "leaves"])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, theirs = _params(seed=3)
    rng = np.random.default_rng(4)
    for p, t in zip(ours, theirs):
        p.grad = rng.standard_normal(p.shape)
        t.grad = torch.tensor(p.grad)
    ours[2].grad = None  # a parameter without a gradient is skipped, in both
    theirs[2].grad = None
    total = clip_grad_norm_(ours, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert isinstance(total, float)
    assert total == pytest.approx(ttotal.item(), rel=1e-13)
    for p, t in zip(ours, theirs):
        if p.grad is not None:
            np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=1e-13, atol=0)
    if max_norm < total:  # clipped: the new total norm is max_norm (up to torch's 1e-6)
        assert clip_grad_norm_(ours, 1e9, norm_type) == pytest.approx(max_norm, rel=1e-5)


@pytest.mark.parametrize("bad", [math.inf, math.nan], ids=["inf", "nan"])
def test_clip_grad_norm_of_a_non_finite_gradient_does_what_torch_does(bad):
    grads = [np.array([1.0, bad, -2.0]), np.array([3.0, 4.0])]
    ours = [Tensor(np.zeros(len(g)), requires_grad=True) for g in grads]
    theirs = [torch.zeros(len(g), dtype=torch.float64, requires_grad=True) for g in grads]
    for p, t, g in zip(ours, theirs, grads):
        p.grad, t.grad = g.copy(), torch.tensor(g)
    total = clip_grad_norm_(ours, 1.0)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    np.testing.assert_equal(total, ttotal.item())
    for p, t in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad, t.grad.numpy())  # nan where torch has nan
    for p, g in zip(ours, grads):
        p.grad = g.copy()
    with pytest.raises(RuntimeError, match="error_if_nonfinite=True"):
        clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError):
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)


def test_clip_grad_norm_on_values_and_float32_and_bad_arguments():
    vals = [Value(0.0), Value(0.0)]
    vals[0].grad, vals[1].grad = 3.0, -4.0
    assert clip_grad_norm_(vals, 1.0) == 5.0
    assert [v.grad for v in vals] == pytest.approx([0.6, -0.8], rel=1e-6)
    p = Tensor(np.zeros(2), dtype=np.float32, requires_grad=True)
    p.grad = np.array([3.0, 4.0], dtype=np.float32)
    assert clip_grad_norm_(p, 1.0) == 5.0 and p.grad.dtype == np.float32  # one parameter
    assert clip_grad_norm_([Tensor(np.zeros(2))], 1.0) == 0.0  # no gradients: norm 0
    with pytest.raises(ValueError, match="max_norm must be >= 0"):
        clip_grad_norm_(vals, -1.0)
    with pytest.raises(ValueError, match="norm_type must be > 0"):
        clip_grad_norm_(vals, 1.0, norm_type=0)


# ---------------------------------------------------------------------- schedules
def nanogpt_get_lr(it, learning_rate=1e-3, warmup_iters=100, lr_decay_iters=2000, min_lr=1e-4):
    """nanoGPT's train.py get_lr, written out."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def test_warmup_cosine_is_nanogpts_schedule_and_torchs_lambdalr_of_it():
    ours, theirs = _params()
    opt = AdamW(_nanogpt_groups(ours, 0.1), lr=1e-3)
    topt = torch.optim.AdamW(_nanogpt_groups(theirs, 0.1), lr=1e-3)
    sched = WarmupCosineLR(opt, warmup_iters=100, lr_decay_iters=2000, min_lr=1e-4)
    tsched = torch.optim.lr_scheduler.LambdaLR(topt, lambda it: nanogpt_get_lr(it) / 1e-3)
    for it in range(2200):
        want = nanogpt_get_lr(it)
        assert sched.last_epoch == it
        assert [g["lr"] for g in opt.param_groups] == [want, want]  # exactly the formula
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-15)
        assert warmup_cosine_lr(it, 1e-3, 100, 2000, 1e-4) == want
        sched.step()
        tsched.step()
    assert nanogpt_get_lr(0) == 1e-3 / 101 and nanogpt_get_lr(2100) == 1e-4  # the ends


def test_lambdalr_matches_torch_with_one_function_or_one_per_group():
    for make_lambda in (
        lambda: lambda epoch: 0.95**epoch,
        lambda: [lambda epoch: 1.0 / (epoch + 1), lambda epoch: 0.5 * (epoch % 3)],
    ):
        ours, theirs = _params()
        opt = SGD(_nanogpt_groups(ours, 0.0), lr=0.1)
        topt = torch.optim.SGD(_nanogpt_groups(theirs, 0.0), lr=0.1)
        sched, tsched = (
            LambdaLR(opt, make_lambda()),
            torch.optim.lr_scheduler.LambdaLR(topt, make_lambda()),
        )
        for _ in range(7):
            assert sched.get_last_lr() == tsched.get_last_lr()
            assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in topt.param_groups]
            opt.step()
            topt.step()
            sched.step()
            tsched.step()
        assert sched.base_lrs == tsched.base_lrs == [0.1, 0.1]


def test_ten_nanogpt_steps_with_clipping_and_schedule_match_torch():
    """nanoGPT's loop in miniature: schedule, backward, clip at 1.0, AdamW step."""
    ours, theirs = _params()
    opt = AdamW(_nanogpt_groups(ours, 0.1), lr=1e-2, betas=(0.9, 0.99))
    topt = torch.optim.AdamW(_nanogpt_groups(theirs, 0.1), lr=1e-2, betas=(0.9, 0.99))
    sched = WarmupCosineLR(opt, warmup_iters=3, lr_decay_iters=8, min_lr=1e-3)
    x, tx = Tensor(X), torch.tensor(X)
    for it in range(10):
        for group in topt.param_groups:
            group["lr"] = nanogpt_get_lr(it, 1e-2, 3, 8, 1e-3)
        opt.zero_grad()
        topt.zero_grad()
        loss, tloss = _loss(ours, x), _loss(theirs, tx)
        loss.backward()
        tloss.backward()
        norm = clip_grad_norm_([p for g in opt.param_groups for p in g["params"]], 1.0)
        tnorm = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
        assert norm > 1.0 and norm == pytest.approx(tnorm.item(), rel=1e-12)
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-12)
        opt.step()
        topt.step()
        sched.step()
        _assert_close(ours, theirs, 1e-12)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda o: WarmupCosineLR(o, 10, 10, 1e-4), ValueError, "greater than warmup_iters"),
        (lambda o: WarmupCosineLR(o, -1, 10, 1e-4), ValueError, "warmup_iters must be"),
        (lambda o: WarmupCosineLR(o, 1, 10, -1e-4), ValueError, "min_lr must be >= 0"),
        (lambda o: LambdaLR(o, [lambda e: 1.0]), ValueError, "expected 2 lr_lambdas"),
        (lambda o: LambdaLR(o, lambda e: -1.0), ValueError, "learning rate at step 0"),
        (lambda o: LambdaLR(object(), lambda e: 1.0), TypeError, "needs an Optimizer"),
    ],
)
def test_bad_schedules_are_refused_clearly(make, error, message):
    opt = SGD(_nanogpt_groups(_params()[0], 0.0), lr=0.1)
    with pytest.raises(error, match=message):
        make(opt)


def test_adamw_on_parameters_that_tile_one_buffer_matches_torch():
    """One group whose arrays tile one buffer (share_buffer): the decay and the step are
    each one operation on that buffer."""
    for step, _, _, ours, theirs in _train_both(
        lambda ps: AdamW(ps, lr=0.01, weight_decay=0.1),
        lambda ts: torch.optim.AdamW(ts, lr=0.01, weight_decay=0.1),
        tiled=True,
    ):
        if step == 0:
            probe = AdamW(ours, lr=0.01)
            assert probe._states[0].shared_buffer() is not None  # the one-buffer path
        _assert_close(ours, theirs, 1e-12)


def test_optimizer_lr_is_an_error_that_names_param_groups():
    """torch keeps the learning rate per group; an ``opt.lr = x`` that nothing reads would
    silently leave the schedule unapplied (the walkthrough notebook did exactly that)."""
    from modelwright_autograd import Value
    from modelwright_autograd.optim import SGD

    opt = SGD([Value(1.0)], lr=0.5)
    with pytest.raises(AttributeError, match=r"param_groups\[i\]\['lr'\]"):
        opt.lr = 0.1
    with pytest.raises(AttributeError, match="per parameter group"):
        _ = opt.lr
    assert opt.param_groups[0]["lr"] == 0.5
