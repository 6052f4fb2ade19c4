"""scaled_dot_product_attention (one fused node, nn_ops.py) against torch's in float64 and
against the unfused graph of our own ops (q k^T * scale, mask, softmax, dropout, @ v):
outputs and gradients to 1e-12, second derivatives as test_higher_order checks them,
dropout with the same seeded mask, float32 kept, bad calls refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_higher_order import check_double

import modelwright_autograd.tensor.functional as F
from modelwright_autograd import Tensor, where

TF = torch.nn.functional
TOL = 1e-12
pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _dead_row_mask():
    """A (5, 6) boolean mask whose row 2 attends to nothing (torch gives that row 0)."""
    mask = np.random.default_rng(9).random((5, 6)) > 0.4
    mask[:, 0] = True
    mask[2] = False
    return mask


def _float_mask():
    """Scores to add, with -inf at some positions (not a whole row)."""
    m = np.random.default_rng(10).standard_normal((5, 6))
    m[1, 2:] = -np.inf
    return m


QKV = [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3)]  # batch 2, 3 heads, L 5, S 6, E 4, Ev 3
SQUARE = [(2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 3)]
# name: (shapes of q, k, v, keyword arguments); masks are constants of the call
CASES = {
    "plain": (QKV, {}),
    "causal": (SQUARE, {"is_causal": True}),
    "causal-L<S": (QKV, {"is_causal": True}),  # torch's causal mask is the top-left tril
    "bool-mask": (QKV, {"attn_mask": np.random.default_rng(8).random((5, 6)) > 0.3}),
    "bool-mask-dead-row": (QKV, {"attn_mask": _dead_row_mask()}),
    "bool-mask-per-head": (QKV, {"attn_mask": np.random.default_rng(8).random((3, 5, 6)) > 0.3}),
    "float-mask": (QKV, {"attn_mask": _float_mask()}),
    "scale": (QKV, {"scale": 0.3, "is_causal": True}),
    "unbatched": ([(5, 4), (6, 4), (6, 3)], {"is_causal": True}),
    "broadcast-batch": ([(2, 1, 5, 4), (3, 6, 4), (1, 3, 6, 3)], {}),
    "one-position": ([(2, 1, 4), (2, 1, 4), (2, 1, 3)], {"is_causal": True}),
}


def _torch_kwargs(kwargs):
    return {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _run(fn, arrays, upstream, kind):
    leaves = [kind(a) for a in arrays]
    out = fn(*leaves)
    out.backward(upstream if kind is not torch.tensor else torch.tensor(upstream))
    return out, leaves


def _ours_leaf(a):
    return Tensor(a, requires_grad=True)


def _torch_leaf(a):
    return torch.tensor(a, requires_grad=True)


def _compare(ours, theirs, arrays, tol=TOL):
    leaves = [_ours_leaf(a) for a in arrays]
    out = ours(*leaves)
    tleaves = [_torch_leaf(a) for a in arrays]
    ref = theirs(*tleaves)
    assert out.shape == tuple(ref.shape) and out.dtype == np.float64
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=tol, atol=tol)
    upstream = np.random.default_rng(3).standard_normal(out.shape)
    out.backward(upstream)
    ref.backward(torch.tensor(upstream))
    for i, (t, r) in enumerate(zip(leaves, tleaves)):
        want = np.zeros(t.shape) if r.grad is None else r.grad.numpy()
        np.testing.assert_allclose(t.grad, want, rtol=tol, atol=tol, err_msg=f"input {i}")
    return out


@pytest.mark.parametrize("name", CASES)
def test_attention_matches_torch(name):
    shapes, kwargs = CASES[name]
    _compare(
        lambda *t: F.scaled_dot_product_attention(*t, **kwargs),
        lambda *t: TF.scaled_dot_product_attention(*t, **_torch_kwargs(kwargs)),
        _arrays(*shapes),
    )


def unfused(q, k, v, attn_mask=None, is_causal=False, scale=None, dropout_p=0.0, generator=None):
    """The same attention as separate nodes of our engine."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        attn_mask = np.tri(q.shape[-2], k.shape[-2], dtype=bool)
    if attn_mask is not None and attn_mask.dtype == bool:
        scores = where(attn_mask, scores, -np.inf)
    elif attn_mask is not None:
        scores = scores + attn_mask
    weights = scores.softmax(-1)
    if dropout_p:
        weights = F.dropout(weights, dropout_p, generator=generator)
    return weights @ v


@pytest.mark.parametrize("name", [n for n in CASES if n != "bool-mask-dead-row"])
def test_the_fused_node_is_the_unfused_graph(name):
    """(A row with nothing to attend to is nan in the unfused graph, 0 in torch's and ours.)"""
    shapes, kwargs = CASES[name]
    arrays = _arrays(*shapes, seed=1)
    fused = [_ours_leaf(a) for a in arrays]
    parts = [_ours_leaf(a) for a in arrays]
    out = F.scaled_dot_product_attention(*fused, **kwargs)
    ref = unfused(*parts, **kwargs)
    np.testing.assert_allclose(out.data, ref.data, rtol=TOL, atol=TOL)
    upstream = np.random.default_rng(4).standard_normal(out.shape)
    out.backward(upstream)
    ref.backward(upstream)
    for a, b in zip(fused, parts):
        np.testing.assert_allclose(a.grad, b.grad, rtol=TOL, atol=TOL)
    assert out._op == "scaled_dot_product_attention"  # one node, straight on the leaves
    assert all(a is b for a, b in zip(out._prev, fused))


def test_dropout_draws_the_mask_dropout_draws_and_matches_torch_under_that_mask():
    shapes, p, seed = SQUARE, 0.3, 11
    arrays = _arrays(*shapes, seed=2)
    keep = np.random.default_rng(seed).random((2, 3, 5, 5)) >= p  # F.dropout's draw

    def theirs(q, k, v):
        weights = TF.scaled_dot_product_attention(q, k, torch.eye(5, dtype=q.dtype), is_causal=True)
        return (weights * torch.tensor(keep) / (1 - p)) @ v

    out = _compare(
        lambda *t: F.scaled_dot_product_attention(*t, is_causal=True, dropout_p=p, generator=seed),
        theirs,
        arrays,
    )
    fused = [_ours_leaf(a) for a in arrays]
    parts = [_ours_leaf(a) for a in arrays]
    ours = F.scaled_dot_product_attention(*fused, dropout_p=p, is_causal=True, generator=seed)
    ref = unfused(*parts, is_causal=True, dropout_p=p, generator=seed)
    np.testing.assert_allclose(ours.data, ref.data, rtol=TOL, atol=TOL)
    ours.sum().backward()
    ref.sum().backward()
    for a, b in zip(fused, parts):
        np.testing.assert_allclose(a.grad, b.grad, rtol=TOL, atol=TOL)
    np.testing.assert_array_equal(ours.data, out.data)  # the same seed, the same mask
    other = F.scaled_dot_product_attention(*fused, dropout_p=p, is_causal=True, generator=12)
    assert not np.allclose(other.data, ours.data)


def test_a_float_mask_tensor_gets_its_gradient_as_torch():
    arrays = [*_arrays(*QKV, seed=5), np.random.default_rng(6).standard_normal((3, 5, 6))]
    _compare(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
        arrays,
    )


SECOND = {
    **{name: CASES[name] for name in ("plain", "causal-L<S", "bool-mask-dead-row", "scale")},
    "float-mask": (QKV, {"attn_mask": _float_mask()}),
}


@pytest.mark.parametrize("name", SECOND)
def test_attention_second_derivatives_match_torch(name):
    shapes, kwargs = SECOND[name]
    check_double(
        lambda *t: F.scaled_dot_product_attention(*t, **kwargs),
        lambda *t: TF.scaled_dot_product_attention(*t, **_torch_kwargs(kwargs)),
        _arrays(*shapes, seed=7),
    )


def test_attention_second_derivatives_with_a_mask_tensor_and_dropout_match_torch():
    p, seed = 0.25, 3
    keep = torch.tensor(np.random.default_rng(seed).random((2, 3, 5, 6)) >= p)

    def theirs(q, k, v, m):
        weights = TF.softmax((q @ k.transpose(-2, -1)) * 0.5 + m, dim=-1)
        return (weights * keep / (1 - p)) @ v

    check_double(
        lambda q, k, v, m: F.scaled_dot_product_attention(
            q, k, v, attn_mask=m, dropout_p=p, scale=0.5, generator=seed
        ),
        theirs,
        [*_arrays(*QKV, seed=8), np.random.default_rng(9).standard_normal((5, 6))],
    )


def test_float32_in_float32_out_and_gradients():
    q, k, v = (Tensor(a, dtype=np.float32, requires_grad=True) for a in _arrays(*SQUARE))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1, generator=0)
    assert out.dtype == np.float32
    out.sum().backward()
    assert all(t.grad.dtype == np.float32 for t in (q, k, v))
    tq, tk, tv = (torch.tensor(t.data, requires_grad=True) for t in (q, k, v))
    ref = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    mine = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(mine.data, ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def _t(*shape):
    return Tensor(np.zeros(shape))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: F.scaled_dot_product_attention(_t(2, 3), _t(2, 4), _t(2, 4)), ValueError, "E"),
        (lambda: F.scaled_dot_product_attention(_t(3), _t(3), _t(3)), ValueError, "2 dims"),
        (
            lambda: F.scaled_dot_product_attention(
                _t(2, 3), _t(2, 3), _t(2, 3), attn_mask=np.ones((2, 2), bool), is_causal=True
            ),
            ValueError,
            "not both",
        ),
        (
            lambda: F.scaled_dot_product_attention(_t(2, 3), _t(2, 3), _t(2, 3), dropout_p=1.0),
            ValueError,
            r"dropout_p must be a probability in \[0, 1\)",
        ),
        (
            lambda: F.scaled_dot_product_attention(
                _t(2, 3), _t(2, 3), _t(2, 3), attn_mask=np.ones((2, 2), int)
            ),
            TypeError,
            "boolean .* or float",
        ),
        (
            lambda: F.scaled_dot_product_attention(
                _t(2, 3), _t(2, 3), _t(2, 3), attn_mask=np.ones((3, 3), bool)
            ),
            ValueError,
            "cannot broadcast",
        ),
        (
            lambda: F.scaled_dot_product_attention(_t(2, 2, 3), _t(3, 2, 3), _t(3, 2, 3)),
            ValueError,
            "cannot broadcast",
        ),
        (
            lambda: F.scaled_dot_product_attention(np.zeros((2, 3)), _t(2, 3), _t(2, 3)),
            TypeError,
            "query must be a Tensor",
        ),
    ],
)
def test_bad_calls_are_refused_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_rows_with_inf_or_nan_scores_give_torchs_nan_and_the_others_its_numbers():
    """The softmax's row maxima (read at each row's argmax) keep nan and +inf: a row with
    either gives nan, as torch's; the other rows, and a row with -inf, torch's numbers."""
    q, k, v = _arrays(*QKV, seed=11)
    mask = _float_mask()
    mask[3, 4] = np.inf
    mask[4, 0] = np.nan
    mine = F.scaled_dot_product_attention(Tensor(q), Tensor(k), Tensor(v), attn_mask=mask)
    theirs = TF.scaled_dot_product_attention(*map(torch.tensor, (q, k, v, mask)))
    nan_rows = np.isnan(mine.data).all(axis=-1)
    assert nan_rows[..., 3].all() and nan_rows[..., 4].all() and not nan_rows[..., :3].any()
    np.testing.assert_allclose(mine.data, theirs.numpy(), rtol=TOL, atol=TOL)
