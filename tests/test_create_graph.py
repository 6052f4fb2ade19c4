"""backward(create_graph=True): gradients with history, differentiated again, against torch.

Each case builds f on both engines and on torch (float64), takes the gradient with a graph,
then differentiates a weighted sum of the gradient's entries (a Hessian-vector product):
the rules' second pass must match torch.autograd.grad(..., create_graph=True).
"""

import numpy as np
import pytest
import torch

import modelwright_autograd.tensor as T
import modelwright_autograd.tensor.functional as F
from modelwright_autograd import Value, enable_grad, is_grad_enabled, no_grad, sum_values
from modelwright_autograd.tensor import Tensor, linear

TOL = 1e-10
# torch warns that backward(create_graph=True) ties a leaf and its grad in a cycle; so do we
# (the grad's graph reaches the leaf), which is what these tests exercise.
pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")


def _torch_second(f, xs, weights):
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    out = f(*ts)
    grads = torch.autograd.grad(out, ts, create_graph=True)
    h = sum((g * torch.as_tensor(w, dtype=torch.float64)).sum() for g, w in zip(grads, weights))
    second = torch.autograd.grad(h, ts, allow_unused=True)
    first = [g.detach().numpy() for g in grads]
    return first, [np.zeros_like(x) if s is None else s.numpy() for s, x in zip(second, xs)]


# ---------------------------------------------------------------------- scalar engine
SCALAR = {
    "mul": (lambda a, b: a * b * a, [1.5, -0.7]),
    "div": (lambda a, b: a / b, [1.3, -0.6]),
    "pow-constant": (lambda a, b: a**3 * b, [1.2, 0.8]),
    "pow-value": (lambda a, b: a**b, [1.4, 2.3]),
    "exp": (lambda a, b: (a * b).exp(), [0.4, -0.9]),
    "log": (lambda a, b: (a * b).log(), [0.7, 2.1]),
    "tanh": (lambda a, b: (a * b).tanh(), [0.6, -1.1]),
    "sigmoid": (lambda a, b: (a - b).sigmoid(), [0.3, -0.8]),
    "relu": (lambda a, b: (a * b).relu() * a, [1.1, 0.9]),
    "sum": (lambda a, b: sum_values([a * a, a * b, b]) * b, [0.8, -1.3]),
    "dot": (lambda a, b: Value.dot([a, b], [b * b, a], a), [0.9, 1.7]),
}
# Edge points (relu's flat side and kink, a zero exponent): the rules give None there, so a
# leaf's grad may stay the float 0.0 where torch has a zero tensor.
SCALAR_EDGE = {
    "relu-flat": (lambda a, b: (a * b).relu() * a, [-1.1, 0.9]),
    "relu-kink": (lambda a, b: (a * b).relu() * a, [0.0, 0.9]),
    "relu-flat-inf": (lambda a, b: (a * b).relu() * (a * 1e308 * 10.0), [-1.1, 0.9]),
    "pow-zero-exponent": (lambda a, b: a**b * a, [1.4, 0.0]),
}


def _torch_scalar(name):
    return {
        "exp": lambda a, b: (a * b).exp(),
        "log": lambda a, b: (a * b).log(),
        "tanh": lambda a, b: (a * b).tanh(),
        "sigmoid": lambda a, b: (a - b).sigmoid(),
        "relu": lambda a, b: (a * b).relu() * a,
        "sum": lambda a, b: (a * a + a * b + b) * b,
        "dot": lambda a, b: a + a * (b * b) + b * a,
    }.get(name, SCALAR[name][0])


def _check_scalar_second(f, torch_f, xs):
    """Compare f's gradients (create_graph) and the gradient of their weighted sum with
    torch's; returns the first gradients. A rule that gives None leaves a float 0.0."""
    weights = [0.7, -1.3]
    leaves = [Value(x) for x in xs]
    f(*leaves).backward(create_graph=True)
    grads = [leaf.grad for leaf in leaves]
    want_first, want_second = _torch_second(torch_f, [np.float64(x) for x in xs], weights)
    got_first = [g.data if isinstance(g, Value) else g for g in grads]
    assert got_first == pytest.approx([float(w) for w in want_first], rel=TOL)
    for leaf in leaves:
        leaf.grad = 0.0
    h = grads[0] * weights[0] + grads[1] * weights[1]
    if isinstance(h, Value):
        h.backward()
    got = [leaf.grad for leaf in leaves]
    assert got == pytest.approx([float(w) for w in want_second], rel=TOL, abs=TOL)
    return grads


@pytest.mark.parametrize("name", SCALAR)
def test_scalar_second_derivatives_match_torch(name):
    grads = _check_scalar_second(SCALAR[name][0], _torch_scalar(name), SCALAR[name][1])
    assert all(isinstance(g, Value) for g in grads)


@pytest.mark.parametrize("name", SCALAR_EDGE)
def test_scalar_second_derivatives_at_edge_points_match_torch(name):
    f, xs = SCALAR_EDGE[name]
    _check_scalar_second(f, f, xs)


def test_scalar_third_derivative_of_tanh():
    # d3/dx3 tanh x = -2 sech^2 x (1 - 3 tanh^2 x)... checked against torch directly
    x = Value(0.4)
    x.tanh().backward(create_graph=True)
    g1 = x.grad
    x.grad = 0.0
    g1.backward(create_graph=True)
    g2 = x.grad
    x.grad = 0.0
    g2.backward()
    t = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    (d1,) = torch.autograd.grad(t.tanh(), t, create_graph=True)
    (d2,) = torch.autograd.grad(d1, t, create_graph=True)
    (d3,) = torch.autograd.grad(d2, t)
    assert (g1.data, g2.data, x.grad) == pytest.approx((d1.item(), d2.item(), d3.item()), rel=TOL)


def test_scalar_leaf_grad_accumulates_as_a_node_like_torch():
    # torch: y = x**3; y.backward(create_graph=True) -> x.grad = 3x^2 (with history);
    # x.grad.backward() then adds d(3x^2)/dx = 6x into x.grad: 3x^2 + 6x = 12 + 12 = 24 at x=2
    x = Value(2.0)
    (x**3).backward(create_graph=True)
    assert isinstance(x.grad, Value) and x.grad.data == 12.0
    x.grad.backward()
    t = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    (t**3).backward(create_graph=True)
    t.grad.backward()
    assert float(x.grad.data if isinstance(x.grad, Value) else x.grad) == t.grad.item() == 24.0


def test_scalar_create_graph_twice_accumulates_like_torch():
    x = Value(1.5)
    (x * x).backward(create_graph=True)
    (x * x).backward(create_graph=True)
    t = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    (t * t).backward(create_graph=True)
    (t * t).backward(create_graph=True)
    assert x.grad.data == t.grad.item() == 6.0
    assert isinstance(x.grad, Value)


def test_scalar_first_order_grads_stay_floats():
    x = Value(1.5)
    (x * x).backward()
    assert type(x.grad) is float


# ---------------------------------------------------------------------- tensor engine
RNG = np.random.default_rng(7)


def _arr(*shape):
    return RNG.normal(size=shape)


TENSOR = {
    "matmul": (lambda a, b: ((a @ b).tanh()).sum(), [_arr(3, 4), _arr(4, 2)]),
    "matmul-1d": (lambda a, b: ((a @ b) ** 2).sum(), [_arr(4), _arr(2, 4, 3)]),
    "sum": (lambda a, b: ((a * b).sum(0) ** 3).sum(), [_arr(3, 4), _arr(3, 4)]),
    "mean": (lambda a, b: ((a * b).mean(1, keepdim=True) ** 2).mean(), [_arr(3, 4), _arr(3, 4)]),
    "broadcast-add": (lambda a, b: ((a + b) ** 3).sum(), [_arr(3, 4), _arr(4)]),
    "broadcast-mul": (lambda a, b: ((a * b).exp()).sum(), [_arr(3, 1), _arr(2, 1, 4)]),
    "softmax": (lambda a, b: (a.softmax(1) * b).sum(), [_arr(3, 5), _arr(3, 5)]),
    "log_softmax": (lambda a, b: (a.log_softmax(0) * b).sum(), [_arr(4, 3), _arr(4, 3)]),
    "linear": (lambda a, b: linear(a, b, b[0]).tanh().sum(), [_arr(5, 3), _arr(3, 3)]),
    "max-div-log": (lambda a, b: (a.amax(1) / (b * b + 1.0).log()).sum(), [_arr(3, 4), _arr(3)]),
    "index-cat-stack": (
        lambda a, b: (_cat([a[[0, 2, 0]], b]) ** 3).sum() + (_stack([a[1], b[0]]) ** 2).sum(),
        [_arr(3, 4), _arr(2, 4)],
    ),
    "transpose-reshape": (
        lambda a, b: ((a.transpose(0, 1).reshape(2, 6) @ b) ** 2).sum(),
        [_arr(3, 4), _arr(6, 2)],
    ),
    "sigmoid-relu": (lambda a, b: ((a * b).sigmoid() * (a - b).relu()).sum(), [_arr(4), _arr(4)]),
    # the everyday ops of issue 15
    "sin-cos-sqrt-abs": (
        lambda a, b: ((a.sin() * b.cos()) / (b * b + 1.0).sqrt() + a.abs() * b).sum(),
        [_arr(3, 4), _arr(4)],
    ),
    "log1p-expm1-erf": (
        lambda a, b: ((a * a).log1p() * b.expm1() + (a * b).erf()).sum(),
        [_arr(3, 2), _arr(3, 2)],
    ),
    "pow-tensor": (lambda a, b: ((a * a + 0.5) ** b + 2.0 ** (a * b)).sum(), [_arr(3, 4), _arr(4)]),
    "maximum-where-clamp": (
        lambda a, b: (
            _maximum(a, b) ** 2 * _where(a > 0, a, b * b) + (a * b).clamp(-0.5, 0.5) * a
        ).sum(),
        [_arr(3, 4), _arr(3, 4)],
    ),
    "gelu-softplus-leaky": (
        lambda a, b: (
            _gelu(a * b) + _gelu_tanh(a) * b + _softplus(a * b, 2.0) + _leaky(a) * b
        ).sum(),
        [_arr(5), _arr(5)],
    ),
    "prod-var-std": (
        lambda a, b: (a.prod(0) * b.var(0) + a.std(0) * b.std()).sum(),
        [_arr(3, 4), _arr(3, 4)],
    ),
    "logsumexp-norm-min": (
        lambda a, b: (a.logsumexp(1) * b.norm(dim=1) + (a * b).amin(1) ** 2).sum(),
        [_arr(3, 4), _arr(3, 4)],
    ),
    "shape-ops": (
        lambda a, b: (
            (a.unsqueeze(0).expand(2, 3, 4).flip(2).repeat(1, 2, 1).flatten(1) ** 2).sum()
            * (_pad(b, (1, 1)).squeeze(0) ** 3).sum()
        ),
        [_arr(3, 4), _arr(1, 3)],
    ),
    "pad-crop": (lambda a, b: ((_pad(a, (-1, 2, 1, -1)) ** 3) * b).sum(), [_arr(3, 4), _arr(3, 5)]),
    "einsum-outer": (
        lambda a, b: (
            _einsum("ij,jk->ik", a, a.T).tanh().sum()
            + _einsum("ii->", a[:, :3] * a[:, :3]) * (b.outer(b) ** 2).sum()
            + _einsum("bi,bi->b", a, a).sin().sum()
        ),
        [_arr(3, 4), _arr(3)],
    ),
}


# Edge points, where a rule masks part of its gradient: masking must select (as torch),
# not multiply by 0/1, or an inf in the masked part turns into nan.
EDGE = {
    "std-constant": (lambda a, b: (a.std(1) * b).sum(), [np.full((2, 3), 2.0), _arr(2)]),
    "std-constant-all": (lambda a, b: a.std() * (b * b).sum(), [np.full(3, -1.5), _arr(2)]),
    "pow-b-zero": (lambda a, b: (a**b).sum(), [np.array([0.0, 2.0, 1.5]), np.zeros(3)]),
    "pow-a-zero": (lambda a, b: (a**b).sum(), [np.zeros(3), np.array([0.0, 2.0, 1.5])]),
    "rpow-zero-base": (lambda a, b: (0.0 ** (a * a) * b).sum(), [np.array([1.0, 2.0]), _arr(2)]),
    "relu-zeros": (lambda a, b: ((a * b).relu() * a).sum(), [np.zeros(4), _arr(4)]),
    "clamp-boundary": (
        lambda a, b: ((a * b).clamp(0.0, 1.0) * a).sum(),
        [np.array([0.0, 1.0, 0.5, 2.0]), np.ones(4)],
    ),
    "where-constant": (lambda a, b: (_where(a > 0, a, b * b) * b).sum(), [np.zeros(3), _arr(3)]),
    "maximum-ties": (lambda a, b: (_maximum(a, b) ** 3).sum(), [np.ones(3), np.ones(3)]),
}


def _torch_or_ours(ours, theirs):
    """One call for both engines: torch's function on torch tensors, ours otherwise."""

    def call(*args, **kwargs):
        fn = theirs if any(isinstance(x, torch.Tensor) for x in args) else ours
        return fn(*args, **kwargs)

    return call


TF = torch.nn.functional
_maximum = _torch_or_ours(T.maximum, torch.maximum)
_where = _torch_or_ours(T.where, torch.where)
_einsum = _torch_or_ours(T.einsum, torch.einsum)
_gelu = _torch_or_ours(F.gelu, TF.gelu)
_softplus = _torch_or_ours(F.softplus, TF.softplus)
_leaky = _torch_or_ours(F.leaky_relu, TF.leaky_relu)
_pad = _torch_or_ours(F.pad, TF.pad)


def _gelu_tanh(x):
    return _gelu(x, approximate="tanh")


def _cat(ts):
    from modelwright_autograd.tensor import cat

    return torch.cat(ts) if isinstance(ts[0], torch.Tensor) else cat(ts)


def _stack(ts):
    from modelwright_autograd.tensor import stack

    return torch.stack(ts) if isinstance(ts[0], torch.Tensor) else stack(ts)


def _torch_tensor_fn(name):
    return {
        "linear": lambda a, b: torch.nn.functional.linear(a, b, b[0]).tanh().sum(),
    }.get(name, TENSOR[name][0])


def _tensor_second(f, xs, weights):
    ts = [Tensor(x, requires_grad=True) for x in xs]
    f(*ts).backward(create_graph=True)
    grads = [t.grad for t in ts]
    assert all(isinstance(g, Tensor) for g in grads)
    for t in ts:
        t.grad = None
    h = sum(((g * w).sum() for g, w in zip(grads, weights)), Tensor(0.0))
    h.backward()
    second = [np.zeros_like(x) if t.grad is None else t.grad for t, x in zip(ts, xs)]
    return [g.data for g in grads], second


@pytest.mark.parametrize("name", TENSOR)
def test_tensor_second_derivatives_match_torch(name):
    f, xs = TENSOR[name]
    weights = [_arr(*x.shape) for x in xs]
    got_first, got_second = _tensor_second(f, xs, weights)
    want_first, want_second = _torch_second(_torch_tensor_fn(name), xs, weights)
    for got, want in zip(got_first + got_second, want_first + want_second):
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("name", EDGE)
def test_tensor_second_derivatives_at_edge_points_match_torch(name):
    f, xs = EDGE[name]
    weights = [_arr(*x.shape) for x in xs]
    with np.errstate(all="ignore"):
        got_first, got_second = _tensor_second(f, xs, weights)
    want_first, want_second = _torch_second(f, xs, weights)
    for got, want in zip(got_first + got_second, want_first + want_second):
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize(
    "f",
    [lambda a: a.std(), lambda a: a.norm(), lambda a: a.norm(dim=1).sum()],
    ids=["std", "norm", "norm-dim"],
)
def test_masked_first_derivatives_under_create_graph_are_zero_not_nan(f):
    # torch: d std / dx at a constant x and d ||x|| / dx at x = 0 are 0 (the limit chosen
    # by a masked selection); a 0/1 product under create_graph gave inf * 0 = nan
    x = np.zeros((2, 2))
    t = Tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        f(t).backward(create_graph=True)
    tt = torch.tensor(x, requires_grad=True)
    (want,) = torch.autograd.grad(f(tt), tt, create_graph=True)
    assert isinstance(t.grad, Tensor)
    np.testing.assert_array_equal(t.grad.data, want.detach().numpy())


def test_cross_entropy_second_derivative_matches_torch():
    x, w = _arr(4, 5), _arr(4, 5)
    target = np.array([1, 0, 4, 2])
    got_first, got_second = _tensor_second(lambda a: F.cross_entropy(a * a, target), [x], [w])
    want_first, want_second = _torch_second(
        lambda a: torch.nn.functional.cross_entropy(a * a, torch.tensor(target)), [x], [w]
    )
    np.testing.assert_allclose(got_first[0], want_first[0], rtol=TOL, atol=TOL)
    np.testing.assert_allclose(got_second[0], want_second[0], rtol=TOL, atol=TOL)


def test_bce_with_logits_second_derivative_matches_torch():
    z, y, w = _arr(6), RNG.uniform(size=6), _arr(6)
    got_first, got_second = _tensor_second(
        lambda a: F.binary_cross_entropy_with_logits(a * a, y), [z], [w]
    )
    want_first, want_second = _torch_second(
        lambda a: torch.nn.functional.binary_cross_entropy_with_logits(a * a, torch.tensor(y)),
        [z],
        [w],
    )
    np.testing.assert_allclose(got_first[0], want_first[0], rtol=TOL, atol=TOL)
    np.testing.assert_allclose(got_second[0], want_second[0], rtol=TOL, atol=TOL)


def test_tensor_leaf_grad_accumulates_as_a_node_like_torch():
    x = Tensor([2.0, -1.0], requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    x.grad.sum().backward()
    t = torch.tensor([2.0, -1.0], dtype=torch.float64, requires_grad=True)
    (t**3).sum().backward(create_graph=True)
    t.grad.sum().backward()
    np.testing.assert_array_equal(x.grad.data, t.grad.detach().numpy())


def test_tensor_first_order_grads_stay_arrays():
    x = Tensor([2.0, -1.0], requires_grad=True)
    (x * x).sum().backward()
    assert type(x.grad) is np.ndarray


# ---------------------------------------------------------------------- prod
# Rows with no zero, one, two and three zeros: prod's rule has a case for each.
PROD_X = np.array(
    [[1.5, -2.0, 0.5, 3.0], [0.0, 2.0, -1.5, 0.5], [0.0, 2.0, 0.0, 3.0], [0.0, 0.0, 0.0, 2.0]]
)


@pytest.mark.parametrize("d", [1, 0, None])
@pytest.mark.parametrize("row", range(4), ids=["no-zero", "one-zero", "two-zeros", "three"])
def test_prod_first_and_second_derivatives_with_zeros_match_torch(d, row):
    x = PROD_X[row] if d is None else PROD_X if d == 1 else PROD_X.T.copy()

    # the product (its Hessian: the product of all but two elements) and its cube
    def prod(t):
        return t.prod() if d is None else t.prod(d)

    for f in (lambda t: prod(t).sum(), lambda t: (prod(t) ** 3).sum()):
        w = [_arr(*x.shape)]
        got_first, got_second = _tensor_second(f, [x], w)
        want_first, want_second = _torch_second(f, [x], w)
        np.testing.assert_allclose(got_first[0], want_first[0], rtol=TOL, atol=TOL)
        np.testing.assert_allclose(got_second[0], want_second[0], rtol=TOL, atol=TOL)


def test_prod_gradient_under_create_graph_uses_memory_linear_in_the_length():
    import tracemalloc

    n = 2000
    x = Tensor(np.linspace(0.5, 1.5, n), requires_grad=True)
    x.data[[3, 700]] = 0.0  # two zeros: the case with the most work
    tracemalloc.start()
    x.prod().backward(create_graph=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # an n x n gather would be 8 * n^2 = 32 MB; the rule's arrays are a few of 8 n bytes
    assert peak < 2_000_000
    t = torch.tensor(x.data, requires_grad=True)
    (want,) = torch.autograd.grad(t.prod(), t, create_graph=True)
    np.testing.assert_array_equal(x.grad.data, want.detach().numpy())


# ---------------------------------------------------------------------- grad mode
def test_scalar_create_graph_inside_no_grad_records_like_torch():
    # torch turns grad mode on for a create_graph pass: d/da (3a^2) = 6a = 9 at a = 1.5
    a = Value(1.5)
    y = a * a * a
    with no_grad():
        y.backward(create_graph=True)
    assert isinstance(a.grad, Value) and a.grad.data == 6.75
    d = a.grad
    a.grad = 0.0
    d.backward()
    t = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    ty = t * t * t
    with torch.no_grad():
        ty.backward(create_graph=True)
    (d2,) = torch.autograd.grad(t.grad, t)
    assert a.grad == d2.item() == 9.0


def test_tensor_create_graph_inside_no_grad_records_like_torch():
    x = Tensor([1.5, -2.0], requires_grad=True)
    y = (x * x * x).sum()
    with no_grad():
        y.backward(create_graph=True)
    d = x.grad
    assert d.requires_grad
    x.grad = None
    d.sum().backward()
    t = torch.tensor([1.5, -2.0], dtype=torch.float64, requires_grad=True)
    ty = (t * t * t).sum()
    with torch.no_grad():
        ty.backward(create_graph=True)
    (d2,) = torch.autograd.grad(t.grad.sum(), t)
    np.testing.assert_array_equal(x.grad, d2.numpy())


def test_autograd_grad_with_create_graph_inside_no_grad_records_like_torch():
    from modelwright_autograd import grad

    x = Tensor([1.5, -2.0], requires_grad=True)
    y = (x * x * x).sum()
    t = torch.tensor([1.5, -2.0], dtype=torch.float64, requires_grad=True)
    ty = (t * t * t).sum()
    with no_grad():
        (d,) = grad(y, [x], create_graph=True)
    with torch.no_grad():
        (td,) = torch.autograd.grad(ty, [t], create_graph=True)
    assert d.requires_grad and td.requires_grad
    np.testing.assert_array_equal(grad(d.sum(), [x])[0].data, torch.autograd.grad(td.sum(), t)[0])


def test_enable_grad_records_inside_no_grad_and_restores_the_mode():
    a = Value(2.0)
    with no_grad():
        assert not is_grad_enabled()
        with enable_grad():
            assert is_grad_enabled()
            y = a * a
        assert not is_grad_enabled()
        z = a * a
    assert is_grad_enabled()
    assert y._prev == (a, a) and z._prev == ()


def test_float32_leaf_gets_a_float32_grad_under_create_graph_as_torch():
    # x (float32) * y (float64) is float64; torch casts each gradient to its input's dtype
    x = Tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32), requires_grad=True)
    y = Tensor([0.5, -1.0, 2.0], requires_grad=True)
    ((x * y) ** 2).sum().backward(create_graph=True)
    assert x.grad.dtype == np.float32 and y.grad.dtype == np.float64
    gx = x.grad
    x.grad = y.grad = None
    gx.sum().backward()
    assert x.grad.dtype == np.float32 and y.grad.dtype == np.float64
    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float32, requires_grad=True)
    ty = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (tgx,) = torch.autograd.grad(((tx * ty) ** 2).sum(), tx, create_graph=True)
    assert tgx.dtype == torch.float32
    np.testing.assert_allclose(gx.data, tgx.detach().numpy(), rtol=1e-6)
    second = torch.autograd.grad(tgx.sum(), [tx, ty])
    np.testing.assert_allclose(x.grad, second[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(y.grad, second[1].numpy(), rtol=1e-6)
