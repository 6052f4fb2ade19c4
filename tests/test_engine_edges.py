"""Edges of the scalar engine: the numerics table in docs/numerics.md (checked against
torch row by row), bad input, NumPy scalars, gradient accumulation across backward() calls,
a million-node chain, and graphs with exponentially many paths."""

import gc
import math
import re
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

from modelwright_autograd import MLP, SGD, Adam, Value, sum_values

NUMERICS_DOC = Path(__file__).resolve().parent.parent / "docs" / "numerics.md"


# ------------------------------------------------------------------ the numerics table


def _numerics_rows():
    """(expression, data, [gradients]) for every row of the table in docs/numerics.md."""
    rows = []
    pattern = re.compile(r"^\|\s*`([^`]+)`\s*\|([^|]+)\|([^|]+)\|\s*$")
    for line in NUMERICS_DOC.read_text().splitlines():
        m = pattern.match(line)
        if m:
            expr, data, grads = m.groups()
            rows.append((expr, float(data), [float(g) for g in grads.split(",")]))
    return rows


NUMERICS_ROWS = _numerics_rows()


def _evaluate(expr, make_leaf):
    """Evaluate a table expression; each Value(x) in it becomes make_leaf(x)."""
    leaves = []

    def leaf(x):
        leaves.append(make_leaf(float(x)))
        return leaves[-1]

    namespace = {"__builtins__": {}, "Value": leaf, "nan": math.nan, "inf": math.inf}
    out = eval(expr, namespace)
    out.backward()
    return out, leaves


def _same(got, want):
    """Equal as IEEE numbers, with nan == nan and the sign of zero and infinity compared."""
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


def test_numerics_table_is_present_and_covers_the_spec():
    expressions = {row[0] for row in NUMERICS_ROWS}
    assert len(NUMERICS_ROWS) >= 30
    for needed in [
        "Value(1000.0).tanh()",
        "Value(-1000.0).tanh()",
        "Value(-1000.0).sigmoid()",
        "Value(1000.0).sigmoid()",
        "Value(1000.0).exp()",
        "Value(-1000.0).exp()",
        "Value(0.0).log()",
        "Value(-1.0).log()",
        "1 / Value(0.0)",
        "-1 / Value(0.0)",
        "Value(0.0) ** -1",
        "Value(-8.0) ** (1/3)",
        "Value(0.0).relu()",
        "Value(0) ** Value(0)",
    ]:
        assert needed in expressions


@pytest.mark.parametrize(
    ("expr", "data", "grads"), NUMERICS_ROWS, ids=[row[0] for row in NUMERICS_ROWS]
)
def test_numerics_table_row(expr, data, grads):
    """The doc's numbers are torch's numbers, and the engine's."""
    tout, tleaves = _evaluate(
        expr, lambda x: torch.tensor(x, dtype=torch.float64, requires_grad=True)
    )
    torch_grads = [t.grad.item() for t in tleaves]
    assert len(grads) == len(tleaves), "one gradient per Value(...) leaf"
    assert _same(tout.item(), data), f"doc says {data}, torch gives {tout.item()}"
    for want, got in zip(grads, torch_grads):
        assert _same(got, want), f"doc says gradient {want}, torch gives {got}"

    out, leaves = _evaluate(expr, Value)
    assert _same(out.data, data), f"engine data {out.data!r}, torch {data!r}"
    engine_grads = [leaf.grad for leaf in leaves]
    for got, want in zip(engine_grads, grads):
        assert _same(got, want), f"engine grads {engine_grads}, torch {grads}"


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: Value("3"), ["Value()", "real number", "str", "'3'"]),
        (lambda: Value(None), ["Value()", "NoneType", "None"]),
        (lambda: Value(1 + 2j), ["Value()", "complex", "(1+2j)"]),
        (lambda: Value([1.0]), ["Value()", "list", "[1.0]"]),
        (lambda: Value(True), ["Value()", "bool", "True"]),
        (lambda: Value(np.bool_(True)), ["Value()", "bool"]),
        (lambda: Value(np.array([1.0, 2.0])), ["Value()", "ndarray"]),
        (lambda: Value(1.0) + "a", ["+", "str", "'a'"]),
        (lambda: "a" + Value(1.0), ["+", "str", "'a'"]),
        (lambda: Value(1.0) * None, ["*", "NoneType", "None"]),
        (lambda: None * Value(1.0), ["*", "NoneType", "None"]),
        (lambda: Value(1.0) - "a", ["-", "str"]),
        (lambda: Value(1.0) / [2.0], ["/", "list"]),
        (lambda: Value(1.0) + True, ["+", "bool", "True"]),
        (lambda: Value(2) ** "x", ["**", "str", "'x'"]),
        (lambda: Value(2) ** False, ["**", "bool"]),
        (lambda: "x" ** Value(2), ["**", "str"]),
        (lambda: sum_values([Value(1.0), "2"]), ["sum", "str"]),
        (lambda: Value.dot([Value(1.0)], [None]), ["dot", "NoneType"]),
        (lambda: Value(1.0).backward("1"), ["backward", "str"]),
    ],
)
def test_bad_input_is_a_clear_type_error(make, words):
    with pytest.raises(TypeError) as info:
        make()
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


def test_dot_with_mismatched_lengths_is_a_value_error():
    with pytest.raises(ValueError, match="2 weights but 3 inputs"):
        Value.dot([1.0, 2.0], [1.0, 2.0, 3.0])


def test_numpy_and_fraction_scalars_are_accepted_as_floats():
    for x, want in [
        (np.float64(2.5), 2.5),
        (np.float32(2.5), 2.5),
        (np.int64(3), 3.0),
        (np.int32(-4), -4.0),
        (Fraction(1, 4), 0.25),
        (7, 7.0),
    ]:
        v = Value(x)
        assert type(v.data) is float and v.data == want


@pytest.mark.parametrize("scalar", [np.float64(2), np.float32(2), np.int64(2)])
def test_numpy_scalar_on_the_left_gives_a_value(scalar):
    x = Value(3.0)
    for out, data, grad in [
        (scalar * x, 6.0, 2.0),  # d(2x)/dx = 2
        (scalar + x, 5.0, 1.0),
        (scalar - x, -1.0, -1.0),
        (scalar / x, 2.0 / 3.0, -2.0 / 9.0),  # d(2/x)/dx = -2/x**2
        (scalar**x, 8.0, 8.0 * math.log(2.0)),  # d(2**x)/dx = 2**x ln 2
    ]:
        assert type(out) is Value
        x.grad = 0.0
        out.backward()
        assert out.data == pytest.approx(data, rel=1e-15)
        assert x.grad == pytest.approx(grad, rel=1e-15)
    assert type(Value(3.0) * scalar) is Value
    assert type(Value(3.0) ** scalar) is Value


# ------------------------------------------------------------------ accumulation like torch


def _leaf(x):
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


def test_two_backward_calls_on_one_graph_accumulate_like_torch():
    a, b = Value(1.5), Value(-2.0)
    out = (a * b + a.tanh()) * b
    out.backward()
    out.backward()

    ta, tb = _leaf(1.5), _leaf(-2.0)
    tout = (ta * tb + ta.tanh()) * tb
    tout.backward(retain_graph=True)
    tout.backward()
    assert a.grad == pytest.approx(ta.grad.item(), rel=1e-12)
    assert b.grad == pytest.approx(tb.grad.item(), rel=1e-12)
    # and it is twice a single pass (the interior nodes do not double-count)
    single = Value(1.5)
    ((single * -2.0 + single.tanh()) * -2.0).backward()
    assert a.grad == pytest.approx(2 * single.grad, rel=1e-15)


def test_two_graphs_sharing_a_leaf_accumulate_like_torch():
    a, b, c = Value(0.7), Value(1.3), Value(-0.4)
    shared = a * b  # an interior node used by both graphs
    (shared * c).backward()
    (shared.exp() + a).backward()

    ta, tb, tc = _leaf(0.7), _leaf(1.3), _leaf(-0.4)
    tshared = ta * tb
    (tshared * tc).backward(retain_graph=True)
    (tshared.exp() + ta).backward()
    for v, t in [(a, ta), (b, tb), (c, tc)]:
        assert v.grad == pytest.approx(t.grad.item(), rel=1e-12)


def test_a_graph_built_on_a_backpropagated_output_accumulates_like_torch():
    # y was already backpropagated; z = 3*y. Leaf grads add (dy/da + dz/da), as in torch.
    a = Value(2.0)
    y = a * a
    y.backward()
    z = y * 3.0
    z.backward()
    ta = _leaf(2.0)
    ty = ta * ta
    ty.backward(retain_graph=True)
    (ty * 3.0).backward()
    assert a.grad == ta.grad.item() == 16.0  # 2a + 6a = 8a at a = 2


def test_module_zero_grad_resets_accumulated_gradients():
    model = MLP(2, [3, 1], seed=0)
    loss = model([0.5, -1.0]) ** 2
    loss.backward()
    first = [p.grad for p in model.parameters()]
    assert any(g != 0.0 for g in first)
    loss.backward()  # accumulates: every grad doubles
    assert [p.grad for p in model.parameters()] == [2 * g for g in first]
    model.zero_grad()
    assert all(p.grad == 0.0 for p in model.parameters())
    loss.backward()  # after zero_grad a pass gives the single-pass gradient again
    assert [p.grad for p in model.parameters()] == first


@pytest.mark.parametrize("make_opt", [lambda ps: SGD(ps, lr=0.1), lambda ps: Adam(ps)])
def test_optimizer_zero_grad_resets_value_gradients(make_opt):
    params = [Value(1.0), Value(-2.0)]
    (params[0] * params[1]).backward()
    assert [p.grad for p in params] == [-2.0, 1.0]
    make_opt(params).zero_grad()
    assert [p.grad for p in params] == [0.0, 0.0]
    assert all(type(p.grad) is float for p in params)


# ------------------------------------------------------------------ graph size and shape


def test_million_node_chain_under_default_recursion_limit():
    """backward() walks the graph with an explicit stack, not recursion."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default
    # No cycles are made, so the cyclic collector only re-scans a million live nodes
    # (about half the build time); switching it off keeps this test to a second or two.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        a = Value(0.5)
        x = a
        for _ in range(1_000_000):
            x = -x  # one node per step
        x.backward()
        assert x.data == 0.5  # an even number of negations
        assert a.grad == 1.0  # (-1) ** 1_000_000
        del x
    finally:
        sys.setrecursionlimit(limit)
        if gc_was_enabled:
            gc.enable()


def _count_backward_calls(root):
    """Wrap every node's backward rule with a counter; return the dict of counts."""
    counts = {}
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(node._prev)
        if node._backward is not None:
            rule = node._backward
            key = id(node)
            counts[key] = 0

            def counted(*args, rule=rule, key=key):
                counts[key] += 1
                return rule(*args)

            node._backward = counted
    return counts


def test_each_backward_rule_runs_exactly_once_in_a_diamond_heavy_graph():
    # 20 diamonds in a row: each splits x into two products and joins them again.
    # d/da: each diamond multiplies by (2 + 3) = 5, so the gradient is 5**20.
    a = Value(1.0)
    x = a
    for _ in range(20):
        x = x * 2.0 + x * 3.0
    counts = _count_backward_calls(x)
    assert len(counts) == 60  # two products and a sum per diamond
    x.backward()
    assert set(counts.values()) == {1}
    assert a.grad == 5.0**20
    assert x.data == 5.0**20


def test_two_to_the_twenty_paths_through_a_ladder():
    """A 40-node ladder with 2**20 paths from the output to the leaf: one call per node
    (a walk that followed every path would make about 2**20 calls) and torch's numbers."""
    ta = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)

    def ladder(a):
        # rung i: two rails u, v; each new rail reads both old ones, so paths double
        u, v = a, a
        for _ in range(20):
            u, v = u * v, u + v  # 2 nodes per rung, 40 in all
        return u + v

    a = Value(0.3)
    out = ladder(a)
    counts = _count_backward_calls(out)
    out.backward()
    assert len(counts) == 41 and set(counts.values()) == {1}  # 40 rungs' nodes + the top
    tout = ladder(ta)
    tout.backward()
    assert out.data == pytest.approx(tout.item(), rel=1e-9)
    assert a.grad == pytest.approx(ta.grad.item(), rel=1e-6)


def test_backward_twice_does_not_double_count_interior_nodes():
    # interior nodes are reset at the start of each pass, as their gradient is per-pass
    a = Value(3.0)
    b = a * a
    c = b + b
    c.backward()
    assert (b.grad, a.grad) == (2.0, 12.0)  # dc/db = 2; dc/da = 2 * 2a = 12
    c.backward()
    assert (b.grad, a.grad) == (2.0, 24.0)  # leaf accumulates, interior does not


def test_value_label_must_be_a_string():
    with pytest.raises(TypeError, match=r"label must be a str, got int 3"):
        Value(2.0, label=3)
    assert Value(2.0, label="w").label == "w"


# ------------------------------------------------------------------ comparisons


def test_value_comparisons_read_the_data_and_return_bools():
    a, b = Value(2.0), Value(3.0)
    # each result is the float comparison of the data: 2 < 3, 2 <= 2, 3 > 2.5, ...
    assert (a < b, a <= 2.0, b > 2.5, b >= a, a == 2.0, a != b) == (True,) * 6
    assert (b < a, 1 >= a, a == b, Value(2.0) != a) == (False,) * 4  # noqa: SIM300
    assert type(a < b) is bool and type(a == Value(2.0)) is bool
    assert (Value(math.nan) == Value(math.nan)) is False  # nan compares as in IEEE
    assert (a == "2") is False and a != None  # noqa: E711  not a number: not equal
    with pytest.raises(TypeError, match="not supported"):
        a < "3"  # noqa: B015
    assert max([a, b, Value(-1.0)]) is b and sorted([b, a]) == [a, b]


def test_equal_valued_values_stay_distinct_nodes():
    # == compares data, but hashing stays identity, so the graph walk's sets keep both
    a, b = Value(2.0), Value(2.0)
    assert a == b and len({a, b}) == 2 and hash(a) != hash(b)
    c = a * b + a  # dc/da = b + 1 = 3, dc/db = a = 2
    c.backward()
    assert (a.grad, b.grad) == (3.0, 2.0)
