"""Second derivatives of every op of both engines against torch.autograd in float64.

The op's double backward is checked the way torch's gradgradcheck does it: with the
upstream gradient u as a variable too, g = J(x)^T u is taken with create_graph=True, and the
gradient of s = sum_i <w_i, g_i> with respect to both x and u (d s/dx is the second
derivative, d s/du is J w, the op applied forward) must match torch.autograd.grad. A
linear op (add, reshape) has no second derivative in x but its double backward still
has to carry u.

The tensor rows come from the op tables of tests/test_tensor_ops.py (binary ops over the
broadcasting table, unary ops, matmul shapes, reductions over every dim, indexing, shape
ops, softmax, losses): an op added to those tables is checked here too, and
``test_every_tensor_rule_is_differentiated_twice`` fails for a rule no row reaches. The
scalar rows are keyed by backward rule and must cover every rule engine.py has. The fused
nodes are among the rows: sum_values and Value.dot (scalar), linear, cross_entropy,
log_softmax and the reductions (tensor).
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest
import torch
from test_report_ops import engine_rules
from test_tensor_ops import (
    BINARY,
    EINSUM,
    INDEXES,
    MATMUL_SHAPES,
    REDUCE,
    REDUCE_CASES,
    SHAPE_OPS,
    SHAPE_PAIRS,
    UNARY,
    _torch_index,
    _values,
)

import modelwright_autograd.tensor.functional as F
from modelwright_autograd import Tensor, Value, cat, einsum, grad, outer, stack, sum_values
from modelwright_autograd import tensor as tensor_module
from modelwright_autograd.graph import topological_order
from modelwright_autograd.tensor import conv, linear_relu, nn_ops
from modelwright_autograd.tensor import functional as functional_module

TF = torch.nn.functional
TOL = 1e-9
pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")


def _torch_double(fn, arrays, u, ws):
    """torch's g = J^T u, and d<w, g>/d(x, u), in float64."""
    xs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    ut = torch.tensor(u, dtype=torch.float64, requires_grad=True)
    out = fn(*xs)
    gs = torch.autograd.grad(out, xs, ut, create_graph=True, allow_unused=True)
    s = sum(((g * torch.tensor(w)).sum() for g, w in zip(gs, ws) if g is not None), ut.sum() * 0)
    seconds = torch.autograd.grad(s, [*xs, ut], allow_unused=True)
    like = [*arrays, u]
    first = [np.zeros_like(a) if g is None else g.numpy(force=True) for g, a in zip(gs, arrays)]
    # force=True: torch answers a zero second derivative (abs) with a lazy ZeroTensor
    return first, [
        np.zeros_like(a) if d is None else d.numpy(force=True) for d, a in zip(seconds, like)
    ]


def _ours_double(fn, arrays, u, ws):
    """The same on the tensor engine, with grad() and, for d/dx, with backward() too."""
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    ut = Tensor(u, requires_grad=True)
    out = fn(*xs)
    gs = grad(out, xs, ut, create_graph=True, allow_unused=True)
    terms = [(g * w).sum() for g, w in zip(gs, ws) if g is not None]
    s = sum(terms, ut.sum() * 0.0)
    seconds = grad(s, [*xs, ut], allow_unused=True)
    like = [*arrays, u]
    first = [np.zeros_like(a) if g is None else g.data for g, a in zip(gs, arrays)]
    second = [np.zeros_like(a) if d is None else d.data for d, a in zip(seconds, like)]
    # backward(create_graph=True) walks the graph with the same rules: same numbers
    out.backward(u, create_graph=True)
    got = [x.grad for x in xs]
    for x in xs:
        x.grad = None
    live = [(g * w).sum() for g, w in zip(got, ws) if g is not None and g.requires_grad]
    if live:
        sum(live[1:], live[0]).backward()
    for x, d in zip(xs, second):
        np.testing.assert_allclose(np.zeros_like(d) if x.grad is None else x.grad, d, atol=TOL)
    return first, second


def check_double(ours, theirs, arrays, seed=0):
    rng = np.random.default_rng(seed + 500)
    with torch.no_grad():
        out_shape = tuple(theirs(*[torch.tensor(a) for a in arrays]).shape)
    u = rng.standard_normal(out_shape)
    ws = [rng.standard_normal(np.shape(a)) for a in arrays]
    got_first, got_second = _ours_double(ours, arrays, u, ws)
    want_first, want_second = _torch_double(theirs, arrays, u, ws)
    for got, want in zip(got_first + got_second, want_first + want_second):
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


# ---------------------------------------------------------------------- the tensor rows
def _reduce_row(op, dim, keepdim):
    ours, theirs = REDUCE[op]
    return (
        lambda t: ours(t, dim, keepdim),
        lambda t: theirs(t, dim, keepdim),
        [_values((2, 3, 4), 20)],
    )


def _einsum_row(subscripts, shapes):
    return (
        lambda *ts: einsum(subscripts, *ts),
        lambda *ts: torch.einsum(subscripts, *ts),
        [_values(s, 35 + i) for i, s in enumerate(shapes)],
    )


TENSOR_ROWS = {
    **{
        f"{op}{shapes}": (
            BINARY[op][0],
            BINARY[op][1],
            [_values(shapes[0], 1), _values(shapes[1], 2, BINARY[op][2])],
        )
        for op in BINARY
        for shapes in SHAPE_PAIRS
    },
    **{
        f"{op}{shape}": (f, g, [_values(shape, 5, kind)])
        for op, (f, g, kind) in UNARY.items()
        for shape in [(3, 4), ()]
    },
    **{
        f"matmul{shapes}": (
            lambda a, b: a @ b,
            lambda a, b: a @ b,
            [_values(shapes[0], 11), _values(shapes[1], 12)],
        )
        for shapes in MATMUL_SHAPES
    },
    **{
        f"{op}(dim={dim},keepdim={k})": _reduce_row(op, dim, k)
        for op, dim in REDUCE_CASES
        for k in (False, True)
    },
    **{f"einsum{subscripts}": _einsum_row(subscripts, shapes) for subscripts, shapes in EINSUM},
    "outer": (outer, torch.outer, [_values((3,), 36), _values((4,), 37)]),
    **{
        f"index{key!r}": (
            lambda t, k=key: t[k],
            lambda t, k=key: t[_torch_index(k)],
            [_values((4, 5), 21)],
        )
        for key in INDEXES
    },
    **{name: (f, g, [_values((2, 3, 4), 28)]) for name, (f, g) in SHAPE_OPS.items()},
    **{
        f"{fn}(dim={d})": (
            lambda t, fn=fn, d=d: getattr(F, fn)(t, d),
            lambda t, fn=fn, d=d: getattr(TF, fn)(t, dim=d),
            [_values((3, 4, 5), 22) * 3],
        )
        for fn in ("softmax", "log_softmax")
        for d in (0, 1, -1)
    },
    "cross_entropy": (
        lambda x: F.cross_entropy(x, np.array([0, 3, 1, 1, 2, 0])),
        lambda x: TF.cross_entropy(x, torch.tensor([0, 3, 1, 1, 2, 0])),
        [_values((6, 4), 23) * 3],
    ),
    "cross_entropy-unbatched": (
        lambda x: F.cross_entropy(x, 3),
        lambda x: TF.cross_entropy(x, torch.tensor(3)),
        [_values((5,), 24)],
    ),
    "bce_with_logits": (
        F.binary_cross_entropy_with_logits,
        TF.binary_cross_entropy_with_logits,
        [_values((2, 3), 25), np.random.default_rng(27).uniform(0.0, 1.0, (2, 3))],
    ),
    "mse": (F.mse_loss, TF.mse_loss, [_values((4, 3), 25), _values((4, 3), 26)]),
    "svm": (
        lambda x: F.svm_loss(x, np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])),
        lambda x: torch.relu(1 - torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]) * x).mean(),
        [_values((6,), 28, "away") * 3],
    ),
    "svm-target": (
        F.svm_loss,
        lambda s, y: torch.relu(1 - y * s).mean(),
        [_values((2, 3), 28, "away") * 3, _values((2, 3), 40)],
    ),
    **{
        f"linear{shape}{'+bias' if bias else ''}": (
            F.linear,
            TF.linear,
            [_values(shape, 17), _values((3, 4), 18)] + ([_values((3,), 19)] if bias else []),
        )
        for shape in [(5, 4), (4,), (2, 3, 4)]
        for bias in (True, False)
    },
    **{
        f"linear_relu{shape}{'+bias' if bias else ''}": (
            linear_relu,
            lambda *a: torch.relu(TF.linear(*a)),
            [_values(shape, 17), _values((3, 4), 18)] + ([_values((3,), 19)] if bias else []),
        )
        for shape in [(5, 4), (2, 3, 4)]
        for bias in (True, False)
    },
    # a float32 leaf under float64 work: its gradient is cast to float32 (a cast node), as
    # torch's is at a float32 step
    "float32-input": (
        lambda a, b: a * b,
        lambda a, b: a.float().double() * b,
        [_values((2, 3), 38).astype(np.float32), _values((2, 3), 39)],
    ),
    "cat": (
        lambda a, b, c: cat([a, b, c], 1),
        lambda a, b, c: torch.cat([a, b, c], 1),
        [_values((2, 3), 29), _values((2, 1), 30), _values((2, 2), 31)],
    ),
    "stack": (
        lambda a, b: stack([a, b], 2),
        lambda a, b: torch.stack([a, b], 2),
        [_values((2, 3), 32), _values((2, 3), 33)],
    ),
}


@pytest.mark.parametrize("name", TENSOR_ROWS)
def test_tensor_op_double_backward_matches_torch(name):
    ours, theirs, arrays = TENSOR_ROWS[name]
    check_double(ours, theirs, arrays)


def _rules_of(module):
    """The backward rules a module defines (a package: each of its modules')."""
    if hasattr(module, "__path__"):
        subs = pkgutil.iter_modules(module.__path__, module.__name__ + ".")
        return set().union(*(_rules_of(importlib.import_module(m.name)) for m in subs))
    return {
        obj for name, obj in vars(module).items() if name.endswith("_backward") and callable(obj)
    }


def test_every_tensor_rule_is_differentiated_twice():
    """Every backward rule in the tensor package and functional.py is reached by some row above,
    and so are the kit's own ops (expand, scatter) through the second pass; conv.py's and
    nn_ops.py's rules are tests/test_nn_ops.py's to reach."""
    reached = set()
    for ours, _, arrays in TENSOR_ROWS.values():
        xs = [Tensor(a, requires_grad=True) for a in arrays]
        out = ours(*xs)
        u = Tensor(np.ones(out.shape), requires_grad=True)
        gs = grad(out, xs, u, create_graph=True, allow_unused=True)
        for root in [out, *(g for g in gs if g is not None and g.requires_grad)]:
            reached |= {node._backward for node in topological_order(root)}
    layers = _rules_of(conv) | _rules_of(nn_ops)
    missing = (_rules_of(tensor_module) | _rules_of(functional_module)) - layers - reached
    assert not missing, (
        f"rules no second-derivative row reaches: {sorted(r.__name__ for r in missing)}"
    )


# ---------------------------------------------------------------------- the scalar rows
# Keyed by backward rule: (our function, torch's, inputs).
SCALAR_ROWS = {
    "_add_backward": (lambda a, b: a + b, None, [0.7, -1.3]),
    "_sub_backward": (lambda a, b: a - b, None, [0.7, -1.3]),
    "_mul_backward": (lambda a, b: a * b, None, [0.7, -1.3]),
    "_div_backward": (lambda a, b: a / b, None, [0.7, -1.3]),
    "_neg_backward": (lambda a: -a, None, [0.7]),
    "powc_backward": (lambda a: a**3 + a**-1.5 + a**0.5 + a**0, None, [0.7]),
    "_pow_backward": (lambda a, b: a**b, None, [1.4, 2.3]),
    "_exp_backward": (lambda a: a.exp(), None, [0.4]),
    "_log_backward": (lambda a: a.log(), None, [0.7]),
    "_tanh_backward": (lambda a: a.tanh(), None, [0.6]),
    "_relu_backward": (lambda a, b: a.relu() + b.relu(), None, [1.1, -0.9]),
    "_sigmoid_backward": (lambda a: a.sigmoid(), None, [-0.8]),
    "_sum_backward": (
        lambda a, b: sum_values([a, b, a]),
        lambda a, b: a + b + a,
        [0.8, -1.3],
    ),
    "_dot_backward": (
        lambda a, b, c: Value.dot([a, b], [b, c], c),
        lambda a, b, c: c + a * b + b * c,
        [0.9, 1.7, -0.4],
    ),
    "_dot_relu_backward": (
        lambda a, b, c: Value.dot([a, b], [b, c], c, relu=True),
        lambda a, b, c: (c + a * b + b * c).relu(),
        [0.9, 1.7, -0.4],
    ),
}


def test_every_scalar_rule_has_a_row():
    assert set(SCALAR_ROWS) == engine_rules()


@pytest.mark.parametrize("rule", SCALAR_ROWS)
def test_scalar_op_double_backward_matches_torch(rule):
    ours, theirs, xs = SCALAR_ROWS[rule]
    u, ws = -1.7, [0.6, -1.1, 0.35][: len(xs)]
    leaves = [Value(x) for x in xs]
    uv = Value(u)
    out = ours(*leaves)
    gs = grad(out, leaves, uv, create_graph=True)
    s = sum((g * w for g, w in zip(gs, ws)), uv * 0.0)
    got = grad(s, [*leaves, uv], allow_unused=True)
    got = [0.0 if d is None else d for d in got]
    want_first, want_second = _torch_double(
        theirs or ours, [np.array(x) for x in xs], np.array(u), [np.array(w) for w in ws]
    )
    assert [g.data for g in gs] == pytest.approx([float(w) for w in want_first], rel=TOL)
    assert got == pytest.approx([float(w) for w in want_second], rel=TOL, abs=TOL)
    # backward(create_graph=True) gives the same second derivatives in x
    out.backward(uv, create_graph=True)
    first = [leaf.grad for leaf in leaves]
    for leaf in leaves:
        leaf.grad = 0.0
    sum((g * w for g, w in zip(first, ws)), Value(0.0)).backward()
    assert [leaf.grad for leaf in leaves] == pytest.approx(got[:-1], rel=TOL, abs=TOL)
