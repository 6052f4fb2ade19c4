"""grad, jacobian, hessian, hvp and jvp on both engines against torch.autograd (float64),
third derivatives, the Hessian of a small MLP's loss, and gradgradcheck."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

import modelwright_autograd.tensor.functional as F
from modelwright_autograd import (
    GradcheckError,
    Tensor,
    Value,
    grad,
    gradcheck,
    gradgradcheck,
    hessian,
    hvp,
    jacobian,
    jvp,
    sum_values,
)
from modelwright_autograd.scalar.nn import MLP
from modelwright_autograd.tensor.nn import Linear

TAF = torch.autograd.functional
TOL = 1e-10
RNG = np.random.default_rng(3)


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _close(got, want, tol=TOL):
    """Nested tuples of Tensors/floats against torch's nested tuples of tensors."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, tol)
        return
    got = got.data if isinstance(got, (Tensor, Value)) else got
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------------- grad()
def test_grad_returns_gradients_without_touching_dot_grad():
    x, y = Value(1.5), Value(-0.5)
    out = x * y + x.tanh()
    gx, gy = grad(out, [x, y])
    assert (gx, gy) == pytest.approx((-0.5 + 1 - math.tanh(1.5) ** 2, 1.5), rel=1e-15)
    assert x.grad == y.grad == 0.0 and out.grad == 0.0
    a = Tensor([1.0, 2.0], requires_grad=True)
    (ga,) = grad((a * a).sum(), a)
    np.testing.assert_array_equal(ga.data, [2.0, 4.0])
    assert a.grad is None and not ga.requires_grad


def test_grad_sums_over_outputs_with_grad_outputs_like_torch():
    xs = [RNG.normal(size=(3, 4)), RNG.normal(size=(4,))]
    v1, v2 = RNG.normal(size=(3, 4)), RNG.normal(size=(3,))
    ours = [Tensor(x, requires_grad=True) for x in xs]
    theirs = [_t(x).requires_grad_() for x in xs]
    got = grad([ours[0] * ours[1], ours[0] @ ours[1]], ours, [v1, v2])
    want = torch.autograd.grad(
        [theirs[0] * theirs[1], theirs[0] @ theirs[1]], theirs, [_t(v1), _t(v2)]
    )
    _close(got, tuple(want))


def test_grad_with_respect_to_an_interior_node():
    x = Value(0.3)
    h = x * 2.0
    (gh,) = grad((h.tanh() * h), h)
    assert gh == pytest.approx((1 - math.tanh(0.6) ** 2) * 0.6 + math.tanh(0.6), rel=1e-15)


def test_grad_errors_like_torch():
    x, z = Value(1.0), Value(2.0)
    with pytest.raises(RuntimeError, match="input 1 is not used in the graph"):
        grad(x * x, [x, z])
    assert grad(x * x, [x, z], allow_unused=True) == (2.0, None)
    t = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="only for one-element outputs"):
        grad(t * 2.0, t)
    with pytest.raises(RuntimeError, match="input 0 does not require grad"):
        grad((t * 2.0).sum(), Tensor([1.0]))
    with pytest.raises(RuntimeError, match="output 0 does not require grad"):
        grad(Tensor([1.0]).sum(), t)
    with pytest.raises(ValueError, match="grad_outputs 0 has shape"):
        grad(t * 2.0, t, np.ones(3))
    with pytest.raises(TypeError, match="same engine"):
        grad(x * x, t)
    with pytest.raises(ValueError, match="2 grad_outputs for 1 outputs"):
        grad(x * x, x, [1.0, 2.0])


def test_grad_on_relu_flat_side_is_zero_not_unused():
    # x reaches the output, but relu passes no gradient: torch gives 0, not an error
    x = Value(-1.0)
    assert grad(x.relu(), x) == (0.0,)


def test_grad_create_graph_differentiates_again_and_leaves_dot_grad_alone():
    x = Value(0.7)
    (g,) = grad(x**4, x, create_graph=True)
    (h,) = grad(g, x, create_graph=True)
    (k,) = grad(h, x)
    assert (g.data, h.data, k) == pytest.approx((4 * 0.7**3, 12 * 0.7**2, 24 * 0.7), rel=1e-14)
    assert x.grad == 0.0


# ---------------------------------------------------------------------- third derivatives
THIRD = {
    "tanh": lambda x: x.tanh(),
    "exp": lambda x: x.exp(),
    "sigmoid": lambda x: x.sigmoid(),
    "pow": lambda x: x**3.5,
    "pow-value": lambda x: x**x,
    "log": lambda x: x.log(),
}


@pytest.mark.parametrize("name", THIRD)
def test_third_derivatives_match_torch(name):
    f = THIRD[name]
    xs = np.array([0.4, 1.3, 0.9])
    want = []
    t = _t(xs).requires_grad_()
    d = f(t).sum()
    for _ in range(3):
        (d,) = torch.autograd.grad(d, t, create_graph=True)
        want.append(d.detach().numpy().copy())
        d = d.sum()
    # the tensor engine (pow-value has no tensor form: exponents there are numbers)
    if name != "pow-value":
        x = Tensor(xs, requires_grad=True)
        d = f(x).sum()
        for order in range(3):
            (d,) = grad(d, x, create_graph=True)
            np.testing.assert_allclose(d.data, want[order], rtol=TOL)
            d = d.sum()
    # the scalar engine
    for i, xi in enumerate(xs):
        v = Value(float(xi))
        d = f(v)
        for order in range(3):
            (d,) = grad(d, v, create_graph=True)
            assert d.data == pytest.approx(want[order][i], rel=TOL)


# ---------------------------------------------------------------------- the functional API
def _scalar_f(a, b, c):
    return (a * b).tanh() * c.exp() + a**3 / b + (c * a).sigmoid().log()


def test_scalar_engine_functional_api_matches_torch():
    xs = [0.7, -1.2, 0.4]
    txs = tuple(_t(x) for x in xs)
    v = [0.3, -0.5, 1.1]
    tv = tuple(_t(x) for x in v)
    _close(jacobian(_scalar_f, xs), TAF.jacobian(_scalar_f, txs))
    _close(jacobian(_scalar_f, xs, strategy="forward-mode"), TAF.jacobian(_scalar_f, txs))
    _close(hessian(_scalar_f, xs), TAF.hessian(_scalar_f, txs))
    out, hv = hvp(_scalar_f, xs, v)
    want_out, want_hv = TAF.hvp(_scalar_f, txs, tv)
    assert out == pytest.approx(want_out.item(), rel=1e-15)
    _close(hv, want_hv)
    out, jv = jvp(_scalar_f, xs, v)
    _close(jv, TAF.jvp(_scalar_f, txs, tv)[1])

    # one input, several outputs
    def two(a):
        return a.tanh(), a * a.exp()

    _close(jacobian(two, 0.3), TAF.jacobian(two, _t(0.3)))
    _close(jvp(two, 0.3, 2.0)[1], TAF.jvp(two, _t(0.3), _t(2.0))[1])
    assert hessian(lambda a: a**3, 2.0) == 12.0


def _tensor_f(a, b):
    return (a @ b).tanh() * a.sum(1, keepdim=True).exp() + (b.T**2).log_softmax(1)[:, :3]


def test_tensor_engine_functional_api_matches_torch():
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 3))
    ta, tb = _t(a), _t(b)
    va, vb = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 3))
    want_j = TAF.jacobian(_tensor_f, (ta, tb))
    _close(jacobian(_tensor_f, [a, b]), want_j)
    _close(jacobian(_tensor_f, [a, b], strategy="forward-mode"), want_j)
    _close(jvp(_tensor_f, [a, b], [va, vb])[1], TAF.jvp(_tensor_f, (ta, tb), (_t(va), _t(vb)))[1])

    def scalar(a, b):
        return _tensor_f(a, b).sum()

    _close(hessian(scalar, [a, b]), TAF.hessian(scalar, (ta, tb)))
    _close(hvp(scalar, [a, b], [va, vb])[1], TAF.hvp(scalar, (ta, tb), (_t(va), _t(vb)))[1])
    # one input: shapes out.shape + in.shape, as torch
    jac = jacobian(lambda x: x.tanh().sum(0), a)
    assert jac.shape == (4, 3, 4)
    assert hessian(lambda x: (x**3).sum(), a).shape == (3, 4, 3, 4)


def test_functional_results_with_create_graph_are_differentiable():
    a = Tensor(RNG.normal(size=(3,)), requires_grad=True)
    H = hessian(lambda x: (x**4).sum(), a, create_graph=True)
    (d,) = grad(H.sum(), a)  # d/da of sum(diag(12 a^2)) = 24 a
    np.testing.assert_allclose(d.data, 24 * a.data, rtol=1e-14)
    x = Value(0.5)
    _, jv = jvp(lambda t: t**3, x, 1.0, create_graph=True)
    assert grad(jv, x)[0] == pytest.approx(6 * 0.5, rel=1e-15)


def test_functional_errors():
    with pytest.raises(ValueError, match="v is required"):
        jvp(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="v 0 has shape"):
        hvp(lambda x: x.sum(), np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="one-element Tensor"):
        hessian(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="strategy"):
        jacobian(lambda x: x, 1.0, strategy="sideways")
    with pytest.raises(TypeError, match="must return Values"):
        jacobian(lambda x: "nope", 1.0)


def test_outputs_that_do_not_depend_on_the_inputs_give_zeros_like_torch():
    a = np.ones(2)
    np.testing.assert_array_equal(jacobian(lambda x: Tensor([1.0, 2.0]), a).data, np.zeros((2, 2)))
    np.testing.assert_array_equal(hessian(lambda x: (x * 3.0).sum(), a).data, np.zeros((2, 2)))
    assert hessian(lambda p, q: p * 2.0 + q, [1.0, 2.0]) == ((0.0, 0.0), (0.0, 0.0))


# ---------------------------------------------------------------------- an MLP's Hessian
X = RNG.normal(size=(5, 2))
Y = RNG.normal(size=(5,))


def test_scalar_mlp_loss_hessian_matches_torch():
    model = MLP(2, [3, 1], activation="tanh", seed=0)
    neurons = [n for layer in model.layers for n in layer.neurons]
    start = [p.data for p in model.parameters()]

    def loss(*ps):
        i = 0
        for n in neurons:  # the model's parameters, replaced by the Hessian's leaves
            n.w, n.b = list(ps[i : i + len(n.w)]), ps[i + len(n.w)]
            i += len(n.w) + 1
        errs = [(model(list(map(float, x))) - float(y)) ** 2 for x, y in zip(X, Y)]
        return sum_values(errs) / len(errs)

    def torch_loss(*ps):
        w1 = torch.stack([torch.stack(ps[k * 3 : k * 3 + 2]) for k in range(3)])
        b1 = torch.stack([ps[k * 3 + 2] for k in range(3)])
        w2, b2 = torch.stack(ps[9:12]), ps[12]
        h = torch.tanh(_t(X) @ w1.T + b1)
        return ((h @ w2 + b2 - _t(Y)) ** 2).mean()

    want = TAF.hessian(torch_loss, tuple(_t(p) for p in start))
    _close(hessian(loss, start), want, tol=1e-6)


def test_tensor_mlp_loss_hessian_matches_torch():
    l1, l2 = Linear(2, 3, seed=0), Linear(3, 1, seed=1)
    params = [l1.weight.data, l1.bias.data, l2.weight.data, l2.bias.data]

    def loss(w1, b1, w2, b2):
        h = F.linear(Tensor(X), w1, b1).tanh()
        return F.mse_loss(F.linear(h, w2, b2).reshape(5), Y)

    def torch_loss(w1, b1, w2, b2):
        h = torch.tanh(torch.nn.functional.linear(_t(X), w1, b1))
        return torch.nn.functional.mse_loss(torch.nn.functional.linear(h, w2, b2).reshape(5), _t(Y))

    _close(hessian(loss, params), TAF.hessian(torch_loss, tuple(_t(p) for p in params)), tol=1e-6)


# ---------------------------------------------------------------------- gradgradcheck
def test_gradgradcheck_passes_on_both_engines():
    assert gradgradcheck(lambda a, b: (a * b).tanh() * a.exp() + b**3 / a, [0.3, -0.7])
    arrays = [RNG.normal(size=(2, 3)), RNG.normal(size=(3,))]
    assert gradgradcheck(lambda a, b: ((a * b).sigmoid() @ b).log_softmax(0), arrays)
    assert gradgradcheck(lambda x: F.cross_entropy(x * x, [1, 0]), [RNG.normal(size=(2, 3))])


def _cube_backward(g, out, a):
    """A deliberately wrong double backward: the right number, 3a^2 g, but a read through
    _raw so under create_graph the gradient has no path back to a."""
    from modelwright_autograd.scalar.engine import _raw

    return (3.0 * _raw(a) ** 2 * g,)


def _cube(a):
    return Value(a.data**3, (a,), "cube", _cube_backward)


def test_gradgradcheck_catches_a_wrong_double_backward_that_gradcheck_misses():
    assert gradcheck(lambda a: _cube(a) * a, [0.8])  # first derivatives are right
    with pytest.raises(GradcheckError, match="gradient, input 0"):
        gradgradcheck(lambda a: _cube(a) * a, [0.8])
    from modelwright_autograd.tensor import make_node, raw

    def cube_backward(g, out, ctx, need, a):
        return (3.0 * raw(a) ** 2 * g,)

    def cube(a):
        return make_node(a.data**3, (a,), "cube", cube_backward)

    assert gradcheck(lambda a: cube(a).sum(), [np.array([0.5, -1.0])])
    with pytest.raises(GradcheckError, match="gradient, input 0 at index"):
        gradgradcheck(lambda a: cube(a).sum(), [np.array([0.5, -1.0])])


# ---------------------------------------------------------------------- the worked example
def test_newton_example_in_the_docs_converges_in_a_handful_of_steps():
    """docs/higher-order.md's Newton block, run here so its step counts are measured: a
    handful for Newton, the counts the page quotes for gradient descent, at a point where
    torch finds the gradient zero."""
    from pathlib import Path

    from test_docs import python_blocks

    page = Path(__file__).resolve().parents[1] / "docs" / "higher-order.md"
    namespace: dict = {}
    for _, code in python_blocks(page.read_text("utf-8")):
        if "def newton" in code:
            exec(code, namespace)
    quoted = re.search(r"It prints `(.*?)`", page.read_text("utf-8"), re.S).group(1)
    assert namespace["summary"] == " ".join(quoted.split())  # the page quotes what it prints
    assert namespace["newton_steps"] < 10
    # torch's gradient of the same loss at Newton's answer: zero, so it is the minimum
    w = _t(namespace["w_newton"]).requires_grad_()
    X, y = _t(namespace["X"]), _t(namespace["y"])
    loss = torch.nn.functional.binary_cross_entropy_with_logits(X @ w, y) + 0.01 * (w * w).sum()
    (g,) = torch.autograd.grad(loss, w)
    assert g.abs().max().item() < 1e-8


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_tensor_backward_keeps_a_gradient_seed_with_history_like_torch():
    # x.grad = 2 x u depends on u too; differentiating it reaches u, as in torch
    x = Tensor([1.0, 2.0], requires_grad=True)
    u = Tensor([0.5, -1.0], requires_grad=True)
    (x * x).backward(u, create_graph=True)
    x.grad.sum().backward()
    tx = _t([1.0, 2.0]).requires_grad_()
    tu = _t([0.5, -1.0]).requires_grad_()
    (tx * tx).backward(tu, create_graph=True)
    tx.grad.sum().backward()
    np.testing.assert_array_equal(u.grad, tu.grad.numpy())
    np.testing.assert_array_equal(x.grad.data, tx.grad.detach().numpy())


def test_jacobian_of_an_empty_output_is_empty():
    # shape out.shape + in.shape = (0, 3) (torch 2.13 raises on this case instead)
    a = np.ones(3)
    for strategy in ("reverse-mode", "forward-mode"):
        assert jacobian(lambda x: x[:0] * 2.0, a, strategy=strategy).shape == (0, 3)
