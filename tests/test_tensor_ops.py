"""Tensor operations against PyTorch (float64): values within 1e-9, gradients within 1e-6,
under broadcasting, plus a finite-difference gradcheck over the same table."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import modelwright_autograd.functional as F
from modelwright_autograd import Tensor, cat, gradcheck, stack

TF = torch.nn.functional


def _values(shape, seed, kind="any"):
    """Deterministic test values: 'any' in [-2, 2], 'pos' in [0.5, 2], 'away' (from zero)
    in +-[0.5, 2] so divisions and relu kinks are well conditioned."""
    rng = np.random.default_rng(seed)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "away":
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return rng.uniform(-2.0, 2.0, shape)


def compare(ours_fn, torch_fn, arrays, seed=0):
    """Run both engines on the same float64 inputs, backpropagate the same random upstream
    gradient, and compare outputs (1e-9) and every input's gradient (1e-6)."""
    ours_in = [Tensor(a, requires_grad=True) for a in arrays]
    torch_in = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    ours = ours_fn(*ours_in)
    theirs = torch_fn(*torch_in)
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-9, atol=1e-9)
    upstream = np.random.default_rng(seed + 1000).standard_normal(ours.shape)
    ours.backward(upstream)
    theirs.backward(torch.tensor(upstream))
    for o, t in zip(ours_in, torch_in):
        assert o.grad is not None and o.grad.shape == o.shape
        np.testing.assert_allclose(o.grad, t.grad.numpy(), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------- the op tables
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, "any"),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, "any"),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, "any"),
    "div": (lambda a, b: a / b, lambda a, b: a / b, "away"),
}

SHAPE_PAIRS = [
    ((3, 4), (4,)),
    ((2, 1, 4), (3, 1)),
    ((1,), (5, 3)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((4, 1), (1, 5)),
    ((2, 3), (2, 3)),
    ((3, 1, 1), (1, 2, 1)),
    ((1, 1), (3,)),
]

UNARY = {
    "neg": (lambda x: -x, lambda x: -x, "any"),
    "exp": (lambda x: x.exp(), lambda x: x.exp(), "any"),
    "log": (lambda x: x.log(), lambda x: x.log(), "pos"),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh(), "any"),
    "relu": (lambda x: x.relu(), lambda x: x.relu(), "away"),
    "sigmoid": (lambda x: x.sigmoid(), lambda x: x.sigmoid(), "any"),
    "sigmoid_big": (lambda x: (x * 40.0).sigmoid(), lambda x: (x * 40.0).sigmoid(), "away"),
    "pow2": (lambda x: x**2, lambda x: x**2, "any"),
    "pow3": (lambda x: x**3, lambda x: x**3, "any"),
    "pow_half": (lambda x: x**0.5, lambda x: x**0.5, "pos"),
    "pow_neg": (lambda x: x**-1.5, lambda x: x**-1.5, "pos"),
    "pow0": (lambda x: x**0, lambda x: x**0, "any"),
    "radd": (lambda x: 2.5 + x, lambda x: 2.5 + x, "any"),
    "rsub": (lambda x: 2.5 - x, lambda x: 2.5 - x, "any"),
    "rmul": (lambda x: -1.5 * x, lambda x: -1.5 * x, "any"),
    "rdiv": (lambda x: 3.0 / x, lambda x: 3.0 / x, "away"),
    "add_num": (lambda x: x + 2, lambda x: x + 2, "any"),
    "div_num": (lambda x: x / 4.0, lambda x: x / 4.0, "any"),
    "numpy_scalar": (lambda x: np.float64(2.0) * x, lambda x: 2.0 * x, "any"),
    "array_left": (
        lambda x: np.arange(4.0) - x,
        lambda x: torch.arange(4.0, dtype=torch.float64) - x,
        "any",
    ),
}

MATMUL_SHAPES = [
    ((4,), (4,)),
    ((4,), (4, 3)),
    ((2, 3), (3,)),
    ((3, 4), (4, 2)),
    ((5, 2, 3), (3, 4)),
    ((5, 2, 3), (1, 3, 4)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3,), (2, 3, 4)),
    ((2, 3, 4), (4,)),
]

REDUCTION_DIMS = [None, 0, 1, 2, -1, -3, (0, 1), (0, 2), (1, 2), (2, 0), (-1, 0), (0, 1, 2)]

TORCH_REDUCE = {
    "sum": lambda x, d, k: torch.sum(x, dim=d, keepdim=k),
    "mean": lambda x, d, k: torch.mean(x, dim=d, keepdim=k),
    "max": lambda x, d, k: torch.amax(x, dim=() if d is None else d, keepdim=k),
}


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_broadcast_like_torch(op, shapes):
    ours, theirs, kind = BINARY[op]
    a = _values(shapes[0], 1, "any")
    b = _values(shapes[1], 2, kind)
    compare(ours, theirs, [a, b])


@settings(derandomize=True, max_examples=40, deadline=None)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3),
    op=st.sampled_from(sorted(BINARY)),
)
def test_binary_ops_on_generated_broadcast_shapes(shapes, op):
    ours, theirs, kind = BINARY[op]
    sa, sb = shapes.input_shapes
    compare(ours, theirs, [_values(sa, 3, "any"), _values(sb, 4, kind)])


@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_like_torch(op):
    ours, theirs, kind = UNARY[op]
    compare(ours, theirs, [_values((3, 4), 5, kind)])
    compare(ours, theirs, [_values((), 6, kind)])


def test_sigmoid_is_stable_for_huge_inputs():
    x = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    compare(lambda t: t.sigmoid(), lambda t: t.sigmoid(), [x])
    assert np.all(np.isfinite(Tensor(x).sigmoid().data))


def test_relu_and_division_edge_cases_like_torch():
    x = np.array([-0.0, 0.0, np.nan, -1.0, 2.0])
    compare(lambda t: t.relu(), lambda t: t.relu(), [x])
    out = Tensor(x).relu().data
    assert np.signbit(out[0]) and not np.signbit(out[1])  # relu(-0.0) is -0.0, as torch
    # b*b underflows to 0 for b = 1e-200; d(a/b)/db = -(a/b)/b is still finite
    a, b = np.array([1e-200, 3e-170]), np.array([1e-200, 1e-170])
    compare(lambda s, t: s / t, lambda s, t: s / t, [a, b])


def test_shared_and_repeated_inputs_like_torch():
    def f(a, b):
        c = a * b + a  # a used twice, b broadcast
        return (c * c).tanh() - c / (b * b + 1.0)

    compare(f, f, [_values((2, 3), 7), _values((3,), 8)])
    compare(lambda a: a + a, lambda a: a + a, [_values((2, 3), 9)])
    compare(lambda a: a * a, lambda a: a * a, [_values((2, 3), 10)])


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_like_torch(shapes):
    a, b = _values(shapes[0], 11), _values(shapes[1], 12)
    compare(lambda x, y: x @ y, lambda x, y: x @ y, [a, b])


def test_matmul_with_a_constant_array_on_either_side():
    w = _values((4, 3), 13)
    compare(lambda x: x @ w, lambda x: x @ torch.tensor(w), [_values((2, 4), 14)])
    v = _values((5, 2), 15)
    compare(lambda x: v @ x, lambda x: torch.tensor(v) @ x, [_values((2, 3), 16)])


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xshape", [(5, 4), (4,), (2, 3, 4)], ids=str)
def test_linear_like_torch(xshape, bias):
    arrays = [_values(xshape, 17), _values((3, 4), 18)] + ([_values((3,), 19)] if bias else [])
    compare(F.linear, TF.linear, arrays)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", REDUCTION_DIMS, ids=str)
@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_reductions_over_every_dim_like_torch(op, dim, keepdim):
    x = _values((2, 3, 4), 20)
    compare(
        lambda t: getattr(t, op)(dim=dim, keepdim=keepdim),
        lambda t: TORCH_REDUCE[op](t, dim, keepdim),
        [x],
    )


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)], ids=str)
def test_max_ties_share_the_gradient_like_torch_amax(dim):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [5.0, 5.0, 5.0]])
    compare(lambda t: t.max(dim=dim), lambda t: TORCH_REDUCE["max"](t, dim, False), [x])
    compare(lambda t: t.amax(dim=dim), lambda t: TORCH_REDUCE["max"](t, dim, False), [x])


def test_max_tie_gradient_by_hand():
    x = Tensor([1.0, 4.0, 4.0, 4.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1 / 3, 1 / 3, 1 / 3])


def test_reductions_of_a_0d_tensor():
    compare(lambda t: t.sum(), lambda t: t.sum(), [np.array(1.5)])
    compare(lambda t: t.max(), lambda t: t.amax(), [np.array(1.5)])


INDEXES = [
    1,
    -1,
    slice(1, 3),
    (slice(None), 2),
    (1, slice(None, None, 2)),
    (Ellipsis, -1),
    (None, 1),
    (2, 3),
    np.array([0, 2, 0, 0]),
    [3, 3, 1],
    (np.array([0, 0, 1]), np.array([1, 1, 2])),
    (slice(1, None), np.array([4, 0, 4])),
]


def _torch_index(key):
    if isinstance(key, tuple):
        return tuple(_torch_index(k) for k in key)
    return torch.from_numpy(key) if isinstance(key, np.ndarray) else key


@pytest.mark.parametrize("key", INDEXES, ids=repr)
def test_indexing_like_torch(key):
    compare(lambda t: t[key], lambda t: t[_torch_index(key)], [_values((4, 5), 21)])


def test_repeated_indices_accumulate():
    x = Tensor([10.0, 20.0, 30.0], requires_grad=True)
    x[np.array([0, 2, 0, 0])].sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 1.0])


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_and_log_softmax_like_torch(fn, dim):
    x = _values((3, 4, 5), 22) * 3
    compare(
        lambda t: getattr(F, fn)(t, dim),
        lambda t: getattr(TF, fn)(t, dim=dim),
        [x],
    )
    compare(lambda t: getattr(t, fn)(dim), lambda t: getattr(t, fn)(dim), [x])


EXTREME_LOGITS = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, 1000.0], [3.0, 1.0, 2.0]])


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_is_stable_for_logits_of_plus_minus_1000(fn):
    compare(lambda t: getattr(t, fn)(1), lambda t: getattr(TF, fn)(t, dim=1), [EXTREME_LOGITS])
    assert np.all(np.isfinite(getattr(Tensor(EXTREME_LOGITS), fn)(1).data))


@pytest.mark.parametrize(
    "logits, target",
    [
        (_values((6, 4), 23) * 3, [0, 3, 1, 1, 2, 0]),
        (EXTREME_LOGITS, [0, 0, 1]),  # a true class losing by 2000
        (_values((5,), 24), 3),  # unbatched
    ],
    ids=["random", "extreme", "unbatched"],
)
def test_cross_entropy_like_torch(logits, target):
    t = np.asarray(target)
    compare(
        lambda x: F.cross_entropy(x, t),
        lambda x: TF.cross_entropy(x, torch.from_numpy(t)),
        [logits],
    )


def test_cross_entropy_on_extreme_logits_is_exact():
    loss = F.cross_entropy(Tensor(EXTREME_LOGITS[:2]), np.array([1, 0]))
    assert loss.item() == pytest.approx(2000.0, rel=1e-12)


def test_svm_loss_like_torch():
    s = _values((6,), 28, kind="away")
    y = np.random.default_rng(29).choice([-1.0, 1.0], 6)
    compare(lambda x: F.svm_loss(x, y), lambda x: torch.relu(1 - torch.tensor(y) * x).mean(), [s])


def test_mse_and_bce_with_logits_like_torch():
    a, b = _values((4, 3), 25), _values((4, 3), 26)
    compare(F.mse_loss, TF.mse_loss, [a, b])
    z = np.array([[-100.0, -3.0, 0.0], [0.5, 4.0, 100.0]])
    y = np.random.default_rng(27).uniform(0.0, 1.0, (2, 3))
    compare(F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits, [z, y])
    # a constant target given as an array
    compare(
        lambda x: F.binary_cross_entropy_with_logits(x, y),
        lambda x: TF.binary_cross_entropy_with_logits(x, torch.tensor(y)),
        [z],
    )


SHAPE_OPS = {
    "reshape": (lambda t: t.reshape(4, 6), lambda t: t.reshape(4, 6)),
    "reshape_tuple": (lambda t: t.reshape((3, -1)), lambda t: t.reshape((3, -1))),
    "transpose": (lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2)),
    "transpose_neg": (lambda t: t.transpose(-1, 1), lambda t: t.transpose(-1, 1)),
    "permute": (lambda t: t.permute(1, 2, 0), lambda t: t.permute(1, 2, 0)),
    "T_2d": (lambda t: t.reshape(6, 4).T, lambda t: t.reshape(6, 4).T),
    "T_3d": (lambda t: t.T, lambda t: t.permute(2, 1, 0)),
}


@pytest.mark.parametrize("op", SHAPE_OPS)
def test_shape_ops_like_torch(op):
    ours, theirs = SHAPE_OPS[op]
    compare(ours, theirs, [_values((2, 3, 4), 28)])


@pytest.mark.parametrize(
    "shapes, dim",
    [(((2, 3), (4, 3)), 0), (((2, 3), (2, 1), (2, 2)), 1), (((2, 3, 1), (2, 3, 2)), -1)],
    ids=str,
)
def test_cat_like_torch(shapes, dim):
    arrays = [_values(s, 29 + i) for i, s in enumerate(shapes)]
    compare(lambda *ts: cat(list(ts), dim), lambda *ts: torch.cat(ts, dim), arrays)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_like_torch(dim):
    arrays = [_values((2, 3), 32 + i) for i in range(3)]
    compare(lambda *ts: stack(list(ts), dim), lambda *ts: torch.stack(ts, dim), arrays)


def test_cat_of_one_tensor_twice_accumulates():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (cat([x, x]) * Tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(x.grad, [4.0, 6.0])


# ---------------------------------------------------------------------- finite differences
GRADCHECK_CASES = [
    *[
        (f"{op}{shapes}", BINARY[op][0], shapes, BINARY[op][2])
        for op in BINARY
        for shapes in SHAPE_PAIRS[:5]
    ],
    *[(op, UNARY[op][0], [(2, 3)], UNARY[op][2]) for op in UNARY if op != "array_left"],
    *[(f"matmul{s}", lambda a, b: a @ b, s, "any") for s in MATMUL_SHAPES[:6]],
    *[
        (f"{op}{d}", lambda t, op=op, d=d: getattr(t, op)(dim=d), [(2, 3, 2)], "any")
        for op in ("sum", "mean", "max")
        for d in (None, 1, (0, 2))
    ],
    ("softmax", lambda t: t.softmax(1), [(3, 4)], "any"),
    ("log_softmax", lambda t: t.log_softmax(0), [(3, 4)], "any"),
    ("cross_entropy", lambda t: F.cross_entropy(t, [2, 0, 3]), [(3, 4)], "any"),
    ("bce", F.binary_cross_entropy_with_logits, [(2, 3), (2, 3)], "any"),
    ("mse", F.mse_loss, [(2, 3), (2, 3)], "any"),
    ("linear", F.linear, [(2, 4), (3, 4), (3,)], "any"),
    ("index", lambda t: t[np.array([0, 2, 0]), 1:], [(3, 3)], "any"),
    ("reshape_T", lambda t: t.reshape(3, 2).T * 2.0, [(2, 3)], "any"),
    ("cat", lambda a, b: cat([a, b], 1), [(2, 3), (2, 1)], "any"),
    ("stack", lambda a, b: stack([a, b], 1), [(2, 3), (2, 3)], "any"),
]


@pytest.mark.parametrize(
    "name, f, shapes, kind", GRADCHECK_CASES, ids=[c[0] for c in GRADCHECK_CASES]
)
def test_gradcheck_over_the_op_table(name, f, shapes, kind):
    arrays = [_values(s, 40 + i, kind) for i, s in enumerate(shapes)]
    assert gradcheck(f, arrays)


def test_gradcheck_catches_a_wrong_gradient():
    from modelwright_autograd import GradcheckError

    # detach() hides one factor from backward, so d(x*x)/dx comes out as x instead of 2x
    with pytest.raises(GradcheckError, match="input 0 at index"):
        gradcheck(lambda x: x.detach() * x, [np.array([1.0, 2.0])])


def test_scalar_gradcheck_still_takes_floats():
    assert gradcheck(lambda a, b: a * b + a.tanh(), [0.3, -1.2])
