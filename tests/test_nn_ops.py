"""Convolution, pooling, dropout, normalisation and embedding (nn_ops, via functional)
against torch.nn.functional in float64: forward within 1e-9, gradients within 1e-6, second
derivatives under create_graph, the public gradcheck, edge cases and invalid calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwright_autograd.tensor.functional as F
from modelwright_autograd import Tensor, autograd, gradcheck
from modelwright_autograd.graph import topological_order
from modelwright_autograd.tensor import conv, nn_ops

FWD, GRAD = 1e-9, 1e-6
pytestmark = pytest.mark.filterwarnings(
    "ignore:Using backward\\(\\) with create_graph=True",
    "ignore:Using padding='same'",
)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _against_torch(ours, theirs, arrays, seed=0):
    """Run both on the same float64 arrays with the same upstream gradient; compare."""
    ts = [Tensor(a, requires_grad=True) for a in arrays]
    out = ours(*ts)
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    ref = theirs(*tt)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=0, atol=FWD)
    assert out.shape == tuple(ref.shape)
    upstream = _rng(seed + 1).normal(size=out.shape)
    out.backward(upstream)
    ref.backward(torch.tensor(upstream))
    for i, (t, r) in enumerate(zip(ts, tt)):
        expected = np.zeros(t.shape) if r.grad is None else r.grad.numpy()
        got = np.zeros(t.shape) if t.grad is None else t.grad
        np.testing.assert_allclose(got, expected, rtol=0, atol=GRAD, err_msg=f"input {i}")


def _shapes(*shapes, seed=0):
    rng = _rng(seed)
    return [rng.normal(size=s) for s in shapes]


# ---------------------------------------------------------------------- convolution
CONV2D = [
    # (input shape, weight shape, kwargs)
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2}),
    ((1, 3, 5, 5), (2, 3, 3, 3), {"padding": 1}),
    ((2, 2, 8, 7), (3, 2, 3, 3), {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 1)}),
    ((2, 4, 6, 6), (6, 2, 3, 3), {"groups": 2, "padding": 1}),
    ((2, 4, 6, 6), (4, 1, 3, 3), {"groups": 4, "stride": 2}),  # depthwise
    ((2, 3, 6, 5), (4, 3, 1, 1), {}),  # 1x1
    ((2, 3, 6, 5), (4, 3, 4, 2), {"padding": "same"}),  # even kernel: more padding after
    ((2, 3, 6, 5), (4, 3, 3, 3), {"padding": "valid"}),
    ((3, 6, 5), (2, 3, 3, 3), {"padding": 1}),  # unbatched (C, H, W)
    ((2, 1, 8, 8), (16, 1, 3, 3), {"padding": 1}),  # the digits CNN's first layer
    # dx as a transposed convolution: stride 1, groups, dilation, uneven padding
    ((2, 4, 7, 6), (4, 2, 3, 2), {"groups": 2, "padding": (2, 1), "dilation": (2, 1)}),
    ((2, 3, 5, 5), (3, 3, 1, 1), {"padding": 1}),  # padding past the kernel's reach: fold
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs,ws,kw", CONV2D)
def test_conv2d_matches_torch(xs, ws, kw, bias):
    arrays = _shapes(xs, ws, (ws[0],))
    if not bias:
        arrays = arrays[:2]
    _against_torch(
        lambda *a: F.conv2d(*a, **kw),
        lambda *a: TF.conv2d(*a, **kw),
        arrays,
    )


CONV1D = [
    ((2, 3, 9), (4, 3, 3), {}),
    ((2, 3, 9), (4, 3, 3), {"stride": 2, "padding": 1}),
    ((2, 4, 9), (2, 2, 2), {"groups": 2, "dilation": 3}),
    ((3, 9), (2, 3, 4), {"padding": "same"}),
]


@pytest.mark.parametrize("xs,ws,kw", CONV1D)
def test_conv1d_matches_torch(xs, ws, kw):
    arrays = _shapes(xs, ws, (ws[0],))
    _against_torch(lambda *a: F.conv1d(*a, **kw), lambda *a: TF.conv1d(*a, **kw), arrays)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 2),
    groups=st.sampled_from([1, 2]),
    cin=st.integers(1, 2),
    cout=st.integers(1, 2),
    h=st.integers(1, 7),
    w=st.integers(1, 7),
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    seed=st.integers(0, 2**16),
)
def test_conv2d_hypothesis_shapes(n, groups, cin, cout, h, w, k, stride, dilation, padding, seed):
    c, o = cin * groups, cout * groups
    span = [d * (kk - 1) + 1 for d, kk in zip(dilation, k)]
    if span[0] > h + 2 * padding[0] or span[1] > w + 2 * padding[1]:
        with pytest.raises(ValueError, match="larger than the padded input"):
            F.conv2d(
                Tensor(np.zeros((n, c, h, w))),
                Tensor(np.zeros((o, cin, *k))),
                padding=padding,
                dilation=dilation,
                groups=groups,
            )
        return
    kw = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    arrays = _shapes((n, c, h, w), (o, cin, *k), (o,), seed=seed)
    _against_torch(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), arrays, seed)


# ---------------------------------------------------------------------- pooling
POOLS = [
    ("max", (2, 3, 6, 6), (2,), {}),
    ("max", (2, 3, 7, 5), (3,), {"stride": 2, "padding": 1}),
    ("max", (2, 3, 7, 5), ((3, 2),), {"stride": 1}),  # overlapping windows
    ("max", (2, 3, 7, 7), (2,), {"stride": 1, "dilation": 2}),
    ("max", (3, 6, 6), (2,), {}),  # unbatched
    ("avg", (2, 3, 6, 6), (2,), {}),
    ("avg", (2, 3, 7, 5), (3,), {"stride": 2, "padding": 1}),
    ("avg", (2, 3, 7, 5), (3,), {"stride": 2, "padding": 1, "count_include_pad": False}),
    ("avg", (2, 3, 7, 5), ((2, 3),), {"stride": (1, 2), "divisor_override": 4}),
]


def _pool(kind):
    return (F.max_pool2d, TF.max_pool2d) if kind == "max" else (F.avg_pool2d, TF.avg_pool2d)


@pytest.mark.parametrize("kind,xs,args,kw", POOLS)
def test_pool_matches_torch(kind, xs, args, kw):
    ours, theirs = _pool(kind)
    _against_torch(lambda x: ours(x, *args, **kw), lambda x: theirs(x, *args, **kw), _shapes(xs))


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["max", "avg"]),
    shape=st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(1, 7), st.integers(1, 7)),
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pad=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    ties=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_pool_hypothesis_shapes(kind, shape, k, stride, pad, ties, seed):
    pad = tuple(min(p, kk // 2) for p, kk in zip(pad, k))
    if k[0] > shape[2] + 2 * pad[0] or k[1] > shape[3] + 2 * pad[1]:
        return
    x = _shapes(shape, seed=seed)[0]
    if ties:  # few distinct values: windows with several equal maxima
        x = np.round(x)
    ours, theirs = _pool(kind)
    kw = {"stride": stride, "padding": pad}
    _against_torch(lambda t: ours(t, k, **kw), lambda t: theirs(t, k, **kw), [x], seed)


def test_max_pool_ties_go_to_the_first_maximum_and_nan_wins():
    x = np.zeros((1, 1, 2, 4))
    x[0, 0, 1, 3] = np.nan
    t = Tensor(x, requires_grad=True)
    out = F.max_pool2d(t, 2)
    out.sum().backward()
    assert out.data[0, 0, 0, 0] == 0.0 and np.isnan(out.data[0, 0, 0, 1])
    expected = np.zeros_like(x)
    expected[0, 0, 0, 0] = 1.0  # the first of four zeros
    expected[0, 0, 1, 3] = 1.0  # the nan
    np.testing.assert_array_equal(t.grad, expected)
    ref = torch.tensor(x, requires_grad=True)
    TF.max_pool2d(ref, 2).sum().backward()
    np.testing.assert_array_equal(t.grad, ref.grad.numpy())


# ---------------------------------------------------------------------- normalisation
def test_layer_norm_matches_torch():
    x, w, b = _shapes((3, 4, 5), (4, 5), (4, 5))
    _against_torch(
        lambda x, w, b: F.layer_norm(x, (4, 5), w, b),
        lambda x, w, b: TF.layer_norm(x, (4, 5), w, b),
        [x, w, b],
    )
    _against_torch(
        lambda x: F.layer_norm(x, 5, eps=1e-3), lambda x: TF.layer_norm(x, (5,), eps=1e-3), [x]
    )


@pytest.mark.parametrize(
    ("shape", "normalized", "affine"),
    [
        ((3, 4, 5), (4, 5), "wb"),
        ((2, 3, 6), 6, "w"),
        ((2, 3, 6), 6, "b"),
        ((2, 3, 6), 6, ""),
        ((6,), 6, "wb"),  # no leading dims
        ((0, 4), 4, "wb"),  # an empty batch
    ],
)
def test_layer_norm_is_one_node_and_matches_torch(shape, normalized, affine):
    dims = (normalized,) if isinstance(normalized, int) else normalized
    x, w, b = _shapes(shape, dims, dims, seed=5)
    given = [x] + [a for a, c in ((w, "w"), (b, "b")) if c in affine]

    def ours(x, *wb):
        out = F.layer_norm(x, normalized, *_affine_args(wb, affine))
        assert out._op == "layer_norm" and out._prev == (x, *wb)
        return out

    def theirs(x, *wb):
        return TF.layer_norm(x, dims, *_affine_args(wb, affine))

    _against_torch(ours, theirs, given)


def _affine_args(wb, affine):
    """(weight, bias) for layer_norm from the ones ``affine`` names ("w", "b", both, none)."""
    given = iter(wb)
    return [next(given) if c in affine else None for c in "wb"]


def test_layer_norm_keeps_float32_and_takes_integers_as_float64():
    x, w, b = (a.astype(np.float32) for a in _shapes((4, 3, 8), (8,), (8,), seed=6))
    ts = [Tensor(a, requires_grad=True) for a in (x, w, b)]
    out = F.layer_norm(*ts[:1], 8, *ts[1:])
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ref = TF.layer_norm(tt[0], (8,), *tt[1:])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=0, atol=1e-5)
    upstream = _rng(7).normal(size=out.shape).astype(np.float32)
    out.backward(upstream)
    ref.backward(torch.tensor(upstream))
    for t, r in zip(ts, tt):
        assert t.grad.dtype == np.float32
        np.testing.assert_allclose(t.grad, r.grad.numpy(), rtol=0, atol=1e-4)
    ints = np.arange(12).reshape(3, 4) % 5
    got = F.layer_norm(Tensor(ints), 4)
    assert got.dtype == np.float64
    expected = TF.layer_norm(torch.tensor(ints, dtype=torch.float64), (4,))
    np.testing.assert_allclose(got.data, expected.numpy(), rtol=0, atol=FWD)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)])
def test_batch_norm_training_and_running_statistics_match_torch(shape):
    x, w, b = _shapes(shape, (3,), (3,))
    ours = [np.zeros(3), np.ones(3)]
    theirs = [torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)]
    for step in range(3):
        xs = x * (step + 1) + step
        _against_torch(
            lambda x, w, b: F.batch_norm(x, *ours, w, b, training=True, momentum=0.3),
            lambda x, w, b: TF.batch_norm(x, *theirs, w, b, training=True, momentum=0.3),
            [xs, w, b],
        )
        for a, t in zip(ours, theirs):
            np.testing.assert_allclose(a, t.numpy(), rtol=0, atol=FWD)
    _against_torch(
        lambda x, w, b: F.batch_norm(x, Tensor(ours[0]), Tensor(ours[1]), w, b, eps=1e-3),
        lambda x, w, b: TF.batch_norm(x, *theirs, w, b, eps=1e-3),
        [x, w, b],
    )


def test_embedding_matches_torch():
    idx = np.array([[1, 0, 3], [3, 3, -1 % 5]])
    (w,) = _shapes((5, 3))
    _against_torch(lambda w: F.embedding(idx, w), lambda w: TF.embedding(torch.tensor(idx), w), [w])
    _against_torch(
        lambda w: F.embedding(idx, w, padding_idx=3),
        lambda w: TF.embedding(torch.tensor(idx), w, padding_idx=3),
        [w],
    )
    empty = F.embedding(np.zeros((0,), dtype=np.int64), Tensor(w))
    assert empty.shape == (0, 3)


# ---------------------------------------------------------------------- dropout
def test_dropout_masks_scales_and_is_reproducible():
    x = Tensor(np.ones((200, 50)), requires_grad=True)
    out = F.dropout(x, 0.3, generator=5)
    kept = out.data != 0
    assert abs(kept.mean() - 0.7) < 0.02  # 10,000 draws: 5 standard errors is 0.023
    np.testing.assert_allclose(out.data[kept], 1 / 0.7, rtol=1e-15)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad, out.data)  # d(x * mask/(1-p))/dx = mask/(1-p)
    np.testing.assert_array_equal(F.dropout(x, 0.3, generator=5).data, out.data)
    assert not np.array_equal(F.dropout(x, 0.3, generator=6).data, out.data)
    np.random.seed(3)
    first = F.dropout(x, 0.5).data
    np.random.seed(3)
    np.testing.assert_array_equal(F.dropout(x, 0.5).data, first)
    assert F.dropout(x, 0.3, training=False) is x and F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).data, 0.0)
    assert F.dropout(Tensor(np.ones(3), dtype=np.float32), 0.5).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_is_one_node_whose_gradient_is_the_mask(dtype):
    """dropout(x) = x * m, m = 1/(1-p) where kept, else 0: one node on x whose rule gives
    dc * m, and under create_graph a gradient that differentiates again (d2/dx2 of
    sum(dropout(x)^2) is 2 m^2)."""
    rng = np.random.default_rng(0)
    x0, g = rng.standard_normal((30, 20)).astype(dtype), rng.standard_normal((30, 20))
    x = Tensor(x0, requires_grad=True)
    out = F.dropout(x, 0.3, generator=5)
    assert out._op == "dropout" and out._prev == (x,) and out.dtype == dtype
    mask = (np.random.default_rng(5).random(x0.shape) >= 0.3) / dtype(0.7)
    np.testing.assert_array_equal(out.data, x0 * mask.astype(dtype))
    out.backward(g.astype(dtype))
    np.testing.assert_array_equal(x.grad, g.astype(dtype) * mask.astype(dtype))
    x.grad = None
    (first,) = autograd.grad((F.dropout(x, 0.3, generator=5) ** 2).sum(), [x], create_graph=True)
    first.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * mask**2, rtol=1e-6)


# ---------------------------------------------------------------------- create_graph
SECOND = {
    "conv2d": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
        lambda x, w, b: TF.conv2d(x, w, b, stride=2, padding=1, groups=2),
        [(2, 4, 5, 5), (4, 2, 3, 2), (4,)],
    ),
    "conv1d": (
        lambda x, w: F.conv1d(x, w, padding=1),
        lambda x, w: TF.conv1d(x, w, padding=1),
        [(2, 2, 6), (3, 2, 3)],
    ),
    "max_pool2d": (
        lambda x: F.max_pool2d(x, 2, 1, 1),
        lambda x: TF.max_pool2d(x, 2, 1, 1),
        [(2, 2, 4, 5)],
    ),
    "avg_pool2d": (
        lambda x: F.avg_pool2d(x, 3, 2, 1),
        lambda x: TF.avg_pool2d(x, 3, 2, 1),
        [(2, 2, 5, 5)],
    ),
    "layer_norm": (
        lambda x, w: F.layer_norm(x, 4, w),
        lambda x, w: TF.layer_norm(x, (4,), w),
        [(3, 4), (4,)],
    ),
    "layer_norm, weight and bias over 2 dims": (
        lambda x, w, b: F.layer_norm(x, (2, 3), w, b),
        lambda x, w, b: TF.layer_norm(x, (2, 3), w, b),
        [(3, 2, 3), (2, 3), (2, 3)],
    ),
    "layer_norm, bias only": (  # torch's fused node fails this (a bias and no weight in
        # the gradients' graph): the reference adds the bias after it
        lambda x, b: F.layer_norm(x, 4, bias=b),
        lambda x, b: TF.layer_norm(x, (4,)) + b,
        [(2, 3, 4), (4,)],
    ),
    "layer_norm, no affine, no leading dims": (
        lambda x: F.layer_norm(x, 5, eps=1e-3),
        lambda x: TF.layer_norm(x, (5,), eps=1e-3),
        [(5,)],
    ),
    "batch_norm": (
        lambda x, w: F.batch_norm(x, None, None, w, training=True),
        lambda x, w: TF.batch_norm(x, None, None, w, training=True),
        [(4, 3, 2), (3,)],
    ),
    "embedding": (
        lambda w: F.embedding(np.array([0, 2, 2]), w) * w[1],
        lambda w: TF.embedding(torch.tensor([0, 2, 2]), w) * w[1],
        [(3, 3)],
    ),
    "dropout": (  # torch's twin: x times the same mask
        lambda x: F.dropout(x, 0.4, generator=7),
        lambda x: x * torch.tensor((np.random.default_rng(7).random((3, 4)) >= 0.4) / 0.6),
        [(3, 4)],
    ),
    "scaled_dot_product_attention": (  # more rows in tests/test_attention.py
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
        [(2, 3, 4), (2, 3, 4), (2, 3, 2)],
    ),
}


@pytest.mark.parametrize("name", SECOND)
def test_create_graph_second_derivatives_match_torch(name):
    ours, theirs, shapes = SECOND[name]
    arrays = _shapes(*shapes, seed=2)
    weights = _shapes(*shapes, seed=3)
    ts = [Tensor(a, requires_grad=True) for a in arrays]
    (ours(*ts) ** 2).sum().backward(create_graph=True)
    grads = [t.grad for t in ts]
    for t in ts:
        t.grad = None
    sum((g * w).sum() for g, w in zip(grads, weights)).backward()
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    tg = torch.autograd.grad((theirs(*tt) ** 2).sum(), tt, create_graph=True)
    h = sum((g * torch.tensor(w)).sum() for g, w in zip(tg, weights))
    second = torch.autograd.grad(h, tt, allow_unused=True)
    for g, r in zip(grads, tg):
        np.testing.assert_allclose(g.data, r.detach().numpy(), rtol=0, atol=GRAD)
    for t, s in zip(ts, second):
        expected = np.zeros(t.shape) if s is None else s.numpy()
        got = np.zeros(t.shape) if t.grad is None else t.grad
        np.testing.assert_allclose(got, expected, rtol=0, atol=GRAD)


def test_every_nn_ops_rule_is_differentiated_twice():
    """Every backward rule in tensor/conv.py and tensor/nn_ops.py (conv2d's, batch_norm's,
    unfold's and fold's) is reached by a row of SECOND, in the first pass or in the
    gradient's own graph."""
    reached = set()
    for ours, _, shapes in SECOND.values():
        ts = [Tensor(a, requires_grad=True) for a in _shapes(*shapes)]
        out = ours(*ts)
        out.backward(np.ones(out.shape), create_graph=True)
        roots = [out, *(t.grad for t in ts if isinstance(t.grad, Tensor))]
        for root in roots:
            reached |= {node._backward for node in topological_order(root)}
    rules = {
        obj
        for module in (conv, nn_ops)
        for name, obj in vars(module).items()
        if name.endswith("_backward")
    }
    assert rules and not rules - reached, sorted(r.__name__ for r in rules - reached)


# ---------------------------------------------------------------------- gradcheck
GRADCHECK = {
    "conv2d": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2)),
        [(2, 2, 5, 6), (3, 2, 2, 2), (3,)],
    ),
    "conv1d": (lambda x, w: F.conv1d(x, w, stride=2), [(1, 2, 7), (2, 2, 3)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 1), [(1, 2, 4, 4)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(1, 2, 5, 5)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (2, 3), w, b), [(2, 2, 3), (2, 3), (2, 3)]),
    "layer_norm, no affine": (lambda x: F.layer_norm(x, 4), [(3, 4)]),
    "batch_norm": (lambda x: F.batch_norm(x, None, None, training=True), [(3, 2, 2, 2)]),
    "embedding": (lambda w: F.embedding(np.array([[0, 1], [1, 1]]), w), [(2, 4)]),
}


@pytest.mark.parametrize("name", GRADCHECK)
def test_gradcheck(name):
    f, shapes = GRADCHECK[name]
    assert gradcheck(lambda *ts: (f(*ts) ** 2).sum(), _shapes(*shapes, seed=4))


# ---------------------------------------------------------------------- edges
def test_float32_stays_float32_and_empty_batches_work():
    x = Tensor(np.ones((2, 1, 4, 4)), dtype=np.float32, requires_grad=True)
    w = Tensor(np.ones((2, 1, 3, 3)), dtype=np.float32, requires_grad=True)
    y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float32
    for out in (
        F.conv2d(Tensor(np.zeros((0, 1, 4, 4))), Tensor(np.zeros((2, 1, 3, 3)))),
        F.max_pool2d(Tensor(np.zeros((0, 1, 4, 4))), 2),
        F.avg_pool2d(Tensor(np.zeros((0, 1, 4, 4))), 2),
    ):
        assert out.shape[0] == 0


def _t(*shape):
    return Tensor(np.zeros(shape))


INVALID = [
    (
        lambda: F.conv2d(_t(1, 3, 5, 5), _t(2, 2, 3, 3)),
        ValueError,
        r"input \(1, 3, 5, 5\) has 3 channels but weight \(2, 2, 3, 3\)",
    ),
    (
        lambda: F.conv2d(_t(1, 4, 5, 5), _t(3, 2, 3, 3), groups=2),
        ValueError,
        "out_channels 3 divisible by groups",
    ),
    (
        lambda: F.conv2d(_t(5, 5), _t(2, 1, 3, 3)),
        ValueError,
        r"input must be \(N, C, H, W\) or \(C, H, W\), got \(5, 5\)",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 5, 5), _t(2, 3, 3)),
        ValueError,
        r"weight must be .* got \(2, 3, 3\)",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 2, 5), _t(2, 1, 3, 3)),
        ValueError,
        "kernel's height 3 .* larger than the padded input's height 2",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 5, 5), _t(2, 1, 3, 3), stride=0),
        ValueError,
        "stride must be at least 1",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 5, 5), _t(2, 1, 3, 3), padding=-1),
        ValueError,
        "padding must be at least 0",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 5, 5), _t(2, 1, 3, 3), padding="full"),
        ValueError,
        "padding must be 'valid', 'same'",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 5, 5), _t(2, 1, 3, 3), padding="same", stride=2),
        ValueError,
        "'same' needs stride 1",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 5, 5), _t(2, 1, 3, 3), dilation=1.5),
        TypeError,
        "dilation must be an int or a pair",
    ),
    (
        lambda: F.conv2d(_t(1, 1, 5, 5), _t(2, 1, 3, 3), _t(3)),
        ValueError,
        r"bias \(3,\) must be \(2,\)",
    ),
    (
        lambda: F.conv2d(np.zeros((1, 1, 5, 5)), _t(2, 1, 3, 3)),
        TypeError,
        "conv2d: input must be a Tensor",
    ),
    (lambda: F.conv1d(_t(1, 1, 2), _t(2, 1, 3)), ValueError, "conv1d: the kernel's width 3"),
    (
        lambda: F.conv1d(_t(1, 1, 2, 2), _t(2, 1, 3)),
        ValueError,
        r"conv1d: input must be \(N, C, L\)",
    ),
    (
        lambda: F.max_pool2d(_t(1, 1, 5, 5), 2, padding=2),
        ValueError,
        "padding 2 must be at most half the kernel size 2",
    ),
    (
        lambda: F.max_pool2d(_t(1, 5, 5, 5, 5), 2),
        ValueError,
        r"max_pool2d: input must be .* got \(1, 5, 5, 5, 5\)",
    ),
    (
        lambda: F.max_pool2d(_t(1, 1, 5, 5), 2, ceil_mode=True),
        ValueError,
        "ceil_mode=True is not supported",
    ),
    (lambda: F.avg_pool2d(_t(1, 1, 5, 5), 0), ValueError, "kernel_size must be at least 1"),
    (lambda: F.dropout(_t(3), 1.5), ValueError, "p must be a probability between 0 and 1, got 1.5"),
    (
        lambda: F.layer_norm(_t(2, 3), (2,)),
        ValueError,
        r"normalized_shape \(2,\) must be the last dims of the input, got input \(2, 3\)",
    ),
    (
        lambda: F.layer_norm(_t(2, 3), 3, _t(2)),
        ValueError,
        r"weight has shape \(2,\), expected \(3,\)",
    ),
    (
        lambda: F.batch_norm(_t(1, 3), None, None, training=True),
        ValueError,
        r"more than 1 value per channel, got input \(1, 3\)",
    ),
    (
        lambda: F.batch_norm(_t(4, 3), np.zeros(2), np.ones(3)),
        ValueError,
        r"running_mean must be a float Tensor or array of shape \(3,\)",
    ),
    (
        lambda: F.batch_norm(_t(4, 3), None, None),
        ValueError,
        "running_mean and running_var are needed",
    ),
    (
        lambda: F.batch_norm(_t(4), None, None, training=True),
        ValueError,
        r"input must be \(N, C, ...\), got \(4,\)",
    ),
    (
        lambda: F.embedding(np.array([0, 5]), _t(5, 2)),
        IndexError,
        "index 5 is out of range for 5 embeddings",
    ),
    (lambda: F.embedding(np.array([0.0]), _t(5, 2)), TypeError, "input must be integer indices"),
    (lambda: F.embedding(Tensor([0.0]), _t(5, 2)), TypeError, "not a Tensor of floats"),
    (
        lambda: F.embedding(np.array([0]), _t(5)),
        ValueError,
        r"weight must be \(num_embeddings, embedding_dim\), got \(5,\)",
    ),
    (
        lambda: F.embedding(np.array([0]), _t(5, 2), padding_idx=7),
        ValueError,
        "padding_idx must be an int from -5 to 4, got 7",
    ),
]


@pytest.mark.parametrize("call,error,message", INVALID)
def test_invalid_calls_name_the_problem(call, error, message):
    with pytest.raises(error, match=message):
        call()
