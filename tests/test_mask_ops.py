"""tril, triu, masked_fill and cumsum (issue 20) against torch in float64: the table rows
of tests/test_tensor_ops.py (SHAPE_OPS, which test_higher_order also differentiates
twice) plus the cases that table does not reach: every diagonal, masks of every
broadcast, -inf before a softmax as nanoGPT masks attention, nan, 0-d and empty inputs,
float32, and bad calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_tensor_ops import compare

from modelwright_autograd import Tensor, cumsum, masked_fill, tril, triu

TF = torch.nn.functional


def _x(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape)


@pytest.mark.parametrize("diagonal", [-4, -1, 0, 1, 2, 5])
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 3, 4, 4), (1, 4)], ids=str)
@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangles_for_every_diagonal_like_torch(op, shape, diagonal):
    ours = {"tril": tril, "triu": triu}[op]
    theirs = getattr(torch, op)
    compare(lambda t: ours(t, diagonal) * t, lambda t: theirs(t, diagonal) * t, [_x(*shape)])


def test_a_nan_outside_the_triangle_becomes_zero_as_in_torch():
    x = np.array([[1.0, np.nan], [np.inf, 2.0]])
    np.testing.assert_array_equal(tril(Tensor(x)).data, torch.tril(torch.tensor(x)).numpy())
    np.testing.assert_array_equal(triu(Tensor(x)).data, torch.triu(torch.tensor(x)).numpy())
    t = Tensor(np.ones((2, 2)), requires_grad=True)
    tril(t).backward(np.full((2, 2), np.inf))
    np.testing.assert_array_equal(t.grad, [[np.inf, 0.0], [np.inf, np.inf]])  # selected, not *0


MASKS = {  # mask shape -> broadcast against the (2, 3, 4) input
    "same": (2, 3, 4),
    "row": (4,),
    "column": (3, 1),
    "batch": (2, 1, 1),
    "bigger": (5, 2, 3, 4),
    "grows": (2, 2, 3, 1),
}


@pytest.mark.parametrize("name", MASKS)
def test_masked_fill_broadcasts_the_mask_like_torch(name):
    mask = np.random.default_rng(3).random(MASKS[name]) > 0.5
    compare(
        lambda t: masked_fill(t, mask, 0.75) * t,
        lambda t: torch.masked_fill(t, torch.tensor(mask), 0.75) * t,
        [_x(2, 3, 4)],
    )


def test_masked_fill_with_minus_inf_then_softmax_is_nanogpts_causal_attention():
    """nanoGPT's slow path: att.masked_fill(bias[:T, :T] == 0, -inf) then softmax."""
    causal = Tensor(np.ones((4, 4))).tril()
    torch_causal = torch.ones(4, 4).tril()
    compare(
        lambda t: (t @ t.transpose(-1, -2)).masked_fill(causal == 0, -np.inf).softmax(-1),
        lambda t: (t @ t.transpose(-1, -2)).masked_fill(torch_causal == 0, -np.inf).softmax(-1),
        [_x(2, 4, 3)],
    )


def test_masked_fill_takes_a_comparisons_tensor_and_keeps_the_dtype():
    x = Tensor(np.array([1.0, -2.0, 3.0]), dtype=np.float32, requires_grad=True)
    y = x.masked_fill(x < 0, 1e-3)
    assert y.dtype == np.float32 and y.data.tolist() == pytest.approx([1.0, 1e-3, 3.0])
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0] and x.grad.dtype == np.float32
    assert x.cumsum(0).dtype == np.float32
    assert Tensor(np.ones((2, 2)), dtype=np.float32).triu().dtype == np.float32


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cumsum_along_every_dim_like_torch(dim):
    compare(lambda t: cumsum(t, dim) ** 2, lambda t: torch.cumsum(t, dim) ** 2, [_x(2, 3, 4)])


def test_cumsum_of_0d_empty_and_boolean_tensors_like_torch():
    compare(lambda t: t.cumsum(0) * 3.0, lambda t: t.cumsum(0) * 3.0, [np.array(1.5)])
    compare(lambda t: t.cumsum(-1), lambda t: t.cumsum(-1), [np.zeros((2, 0))])
    counts = (Tensor(_x(3, 4)) > 0).cumsum(1)
    want = (torch.tensor(_x(3, 4)) > 0).cumsum(1)
    assert counts.dtype == np.int64 and str(want.dtype) == "torch.int64"
    np.testing.assert_array_equal(counts.data, want.numpy())


BAD = [
    (lambda: tril(Tensor(np.ones(3))), ValueError, "at least 2 dims, got shape \\(3,\\)"),
    (lambda: triu(Tensor(np.ones((2, 2))), 0.5), TypeError, "diagonal must be an int"),
    (lambda: tril(np.ones((2, 2))), TypeError, "tril: input must be a Tensor"),
    (
        lambda: masked_fill(Tensor(np.ones(3)), np.array([1, 0, 1]), 0.0),
        TypeError,
        "mask must be boolean",
    ),
    (
        lambda: masked_fill(Tensor(np.ones(3)), np.ones(2, bool), 0.0),
        ValueError,
        r"mask \(2,\) and input \(3,\) cannot broadcast",
    ),
    (
        lambda: masked_fill(Tensor(np.ones(3)), np.ones(3, bool), "x"),
        TypeError,
        "value must be a number",
    ),
    (lambda: cumsum(Tensor(np.ones((2, 3))), 2), IndexError, "dim 2 is out of range"),
    (lambda: cumsum(Tensor(np.ones(3)), None), TypeError, "dim must be an int"),
]


@pytest.mark.parametrize("call, error, message", BAD)
def test_bad_calls_are_refused_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()
