"""The gradient check against PyTorch: the same computation in the engine and in torch
(float64), data within 1e-9 and every leaf gradient within 1e-6 (relative to the size of
the number once it exceeds 1).

Each function below is written once and run twice, on ``Value`` leaves and on torch leaf
tensors: both support the same operators and the methods exp/log/tanh/relu/sigmoid.
"""

import math

import pytest
import torch

from modelwright_autograd import Value, sum_values

DATA_TOL = 1e-9
GRAD_TOL = 1e-6


def _close(got: float, want: float, tol: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return abs(got - want) <= tol * max(1.0, abs(want))


def check_against_torch(fn, inputs, torch_fn=None):
    """Run fn on Values and torch_fn (default: fn) on float64 torch leaves; compare."""
    leaves = [Value(x) for x in inputs]
    out = fn(*leaves)
    out.backward()

    tleaves = [torch.tensor(float(x), dtype=torch.float64, requires_grad=True) for x in inputs]
    tout = (torch_fn or fn)(*tleaves)
    tout.backward()

    assert _close(out.data, tout.item(), DATA_TOL), (out.data, tout.item())
    for i, (leaf, tleaf) in enumerate(zip(leaves, tleaves)):
        want = 0.0 if tleaf.grad is None else tleaf.grad.item()
        assert _close(leaf.grad, want, GRAD_TOL), f"leaf {i}: engine {leaf.grad} torch {want}"


# Each op alone, on a few points of its domain (including negative and fractional ones).
UNARY = {
    "neg": lambda a: -a,
    "exp": lambda a: a.exp(),
    "tanh": lambda a: a.tanh(),
    "relu": lambda a: a.relu(),
    "sigmoid": lambda a: a.sigmoid(),
    "pow-int-2": lambda a: a**2,
    "pow-int-3": lambda a: a**3,
    "pow-int-minus-2": lambda a: a**-2,
    "pow-zero": lambda a: a**0,
    "radd": lambda a: 2 + a,
    "rsub": lambda a: 2 - a,
    "rmul": lambda a: 2 * a,
    "rtruediv": lambda a: 2 / a,
    "add-number": lambda a: a + 2.5,
    "sub-number": lambda a: a - 2.5,
    "mul-number": lambda a: a * -1.5,
    "div-number": lambda a: a / 3.0,
    "rpow-2": lambda a: 2**a,
    "rpow-e": lambda a: math.e**a,
    "rpow-fraction": lambda a: 0.3**a,
}
POSITIVE_UNARY = {  # domain: a > 0
    "log": lambda a: a.log(),
    "pow-float-half": lambda a: a**0.5,
    "pow-float-1.7": lambda a: a**1.7,
    "pow-float-minus-1.5": lambda a: a**-1.5,
}
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}
POINTS = [-2.5, -1.0, -0.3, 0.7, 1.0, 3.2]
POSITIVE_POINTS = [0.05, 0.7, 1.0, 3.2, 40.0]


@pytest.mark.parametrize("x", POINTS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_op_matches_torch(name, x):
    check_against_torch(UNARY[name], [x])


@pytest.mark.parametrize("x", POSITIVE_POINTS)
@pytest.mark.parametrize("name", POSITIVE_UNARY)
def test_positive_domain_op_matches_torch(name, x):
    check_against_torch(POSITIVE_UNARY[name], [x])


@pytest.mark.parametrize(("x", "y"), [(2.0, 3.0), (-1.5, 0.25), (0.7, -4.0), (-3.0, -0.6)])
@pytest.mark.parametrize("name", BINARY)
def test_binary_op_matches_torch(name, x, y):
    check_against_torch(BINARY[name], [x, y])


@pytest.mark.parametrize(("a", "b"), [(2.0, 3.0), (0.5, -1.5), (3.7, 0.4), (1.3, 2.2)])
def test_value_pow_value_matches_torch(a, b):
    check_against_torch(lambda x, y: x**y, [a, b])


@pytest.mark.parametrize("x", [-40.0, -5.0, 5.0, 40.0])
def test_saturating_ops_far_from_zero(x):
    for fn in (lambda a: a.tanh(), lambda a: a.sigmoid(), lambda a: a.exp()):
        check_against_torch(fn, [x])


@pytest.mark.parametrize("n", [1, 2, 5])
def test_fused_sum_matches_torch(n):
    xs = [0.5 * i - 1.3 for i in range(n)]
    check_against_torch(lambda *vs: sum_values(vs), xs, torch_fn=lambda *ts: torch.stack(ts).sum())


def test_fused_sum_with_reuse_and_numbers():
    # a appears three times and b twice: d/da = 3 (+ 2ab term), checked against torch
    check_against_torch(
        lambda a, b: sum_values([a, b, a, 1.5, a * b, a]),
        [0.8, -2.0],
        torch_fn=lambda a, b: a + b + a + 1.5 + a * b + a,
    )


@pytest.mark.parametrize("n", [1, 3, 8])
def test_fused_dot_matches_torch(n):
    ws = [0.3 * i - 0.7 for i in range(n)]
    xs = [1.1 - 0.4 * i for i in range(n)]
    bias = 0.25

    def engine(*leaves):
        return Value.dot(leaves[:n], leaves[n : 2 * n], leaves[2 * n])

    def reference(*leaves):
        return leaves[2 * n] + (torch.stack(leaves[:n]) * torch.stack(leaves[n : 2 * n])).sum()

    check_against_torch(engine, [*ws, *xs, bias], torch_fn=reference)


def test_fused_dot_shared_inputs_and_numbers():
    # x is both a weight and an input; a plain number is an input; bias defaults to 0
    check_against_torch(
        lambda w, x: Value.dot([w, x, x], [x, 2.0, x]),
        [1.5, -0.7],
        torch_fn=lambda w, x: w * x + x * 2.0 + x * x,
    )


# ------------------------------------------------------------------ composite expressions


def micrograd_sanity(x):
    # micrograd's test_sanity_check: x is used on several paths, y and z reused
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    return h + q + q * x


def micrograd_more_ops(a, b):
    # micrograd's test_more_ops, with c += ... written out as c = c + ...
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    return g + 10.0 / f


def diamond(a, b):
    # a feeds four paths that meet again; every unary op appears
    u = a * b
    v = (a + 1.5).log()  # a > -1.5 on the test points
    w = u.tanh() * v + u.sigmoid() - v.exp() / (b * b + 1)
    return w * a + (w - u).relu() + w**2 + 2**u


def deep_reuse(a, b, c):
    # a running product reuses the previous node twice per step
    x = a
    for _ in range(5):
        x = x * b + x.tanh() - c / (x * x + 1)
    return x + (x - a) ** 2 + (c**a).log()  # c > 0 on the test points


@pytest.mark.parametrize("x", [-4.0, -0.5, 0.3, 2.0])
def test_micrograd_sanity_expression(x):
    check_against_torch(micrograd_sanity, [x])


@pytest.mark.parametrize(("a", "b"), [(-4.0, 2.0), (1.5, -0.5), (0.2, 3.0)])
def test_micrograd_more_ops_expression(a, b):
    check_against_torch(micrograd_more_ops, [a, b])


@pytest.mark.parametrize(("a", "b"), [(0.5, -1.2), (-1.0, 0.8), (2.0, 0.3)])
def test_diamond_expression(a, b):
    check_against_torch(diamond, [a, b])


@pytest.mark.parametrize(("a", "b", "c"), [(0.5, 0.9, 1.5), (-1.2, 1.1, 0.4)])
def test_deep_reuse_expression(a, b, c):
    check_against_torch(deep_reuse, [a, b, c])


def test_leaf_unused_by_output_keeps_zero_grad():
    # b is an input but not on any path: engine grad 0.0, torch grad None
    check_against_torch(lambda a, b: a * 3.0, [2.0, 5.0])


def test_backward_with_seed_gradient_matches_torch():
    leaves = [Value(1.3), Value(-0.4)]
    out = micrograd_more_ops(*leaves)
    out.backward(-2.5)
    tl = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (1.3, -0.4)]
    micrograd_more_ops(*tl).backward(torch.tensor(-2.5, dtype=torch.float64))
    for leaf, t in zip(leaves, tl):
        assert _close(leaf.grad, t.grad.item(), GRAD_TOL)
