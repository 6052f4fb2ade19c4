"""Property-based check: random expression graphs, engine versus torch (float64).

A graph is a small program: a few leaves, then steps that each apply one op to nodes
chosen by index from everything built so far. Indices repeat freely, so a node is often
reused on several paths (the case where ``+=`` in backward matters). Every op is kept in a
safe domain by construction: log and fractional powers take ``t*t + 0.5`` (always > 0),
division divides by ``t*t + 0.5``, and exp of a number beyond 5 in size takes its tanh
first, so no step produces nan or an infinite slope; magnitudes are bounded by rejecting
the rare graph whose values run past 1e6.
"""

import math

import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from modelwright_autograd import Value, sum_values
from modelwright_autograd.graph import topological_order
from modelwright_autograd.scalar.engine import interior_order


def _positive(t):
    return t * t + 0.5


def _sum3(a, b, c):
    """The fused sum_values in the engine; the plain sum in torch."""
    return sum_values([a, b, c]) if isinstance(a, Value) else a + b + c


def _dot2(a, b, c, d, e):
    """The fused Value.dot in the engine: e + a*c + b*d."""
    return Value.dot([a, b], [c, d], e) if isinstance(a, Value) else e + a * c + b * d


def _data(x):
    return x.data if isinstance(x, Value) else x.item()


# name -> (arity, function of the operands); each works on Values and on torch tensors
OPS = {
    "add": (2, lambda a, b: a + b),
    "sub": (2, lambda a, b: a - b),
    "mul": (2, lambda a, b: a * b),
    "div": (2, lambda a, b: a / _positive(b)),
    "pow_value": (2, lambda a, b: _positive(a) ** b.tanh()),
    "neg": (1, lambda a: -a),
    "exp": (1, lambda a: a.tanh().exp() if abs(_data(a)) > 5 else a.exp()),
    "log": (1, lambda a: _positive(a).log()),
    "tanh": (1, lambda a: a.tanh()),
    "relu": (1, lambda a: a.relu()),
    "sigmoid": (1, lambda a: a.sigmoid()),
    "pow_2": (1, lambda a: a**2),
    "pow_3": (1, lambda a: a**3),
    "pow_minus_1": (1, lambda a: _positive(a) ** -1),
    "pow_half": (1, lambda a: _positive(a) ** 0.5),
    "pow_1.5": (1, lambda a: _positive(a) ** 1.5),
    "radd": (1, lambda a: 2 + a),
    "rsub": (1, lambda a: 2 - a),
    "rmul": (1, lambda a: -1.5 * a),
    "rdiv": (1, lambda a: 2 / _positive(a)),
    "rpow": (1, lambda a: 2 ** a.tanh()),
    "sum3": (3, _sum3),
    "dot2": (5, _dot2),
}


step = st.tuples(
    st.sampled_from(sorted(OPS)), st.lists(st.integers(0, 10**6), min_size=5, max_size=5)
)
graphs = st.tuples(
    st.lists(st.floats(-2.0, 2.0, allow_nan=False), min_size=1, max_size=4),
    st.lists(step, min_size=1, max_size=25),
)


def _run(leaf_values, steps, make_leaf):
    leaves = [make_leaf(x) for x in leaf_values]
    nodes = list(leaves)
    for name, picks in steps:
        arity, op = OPS[name]
        # indices count back from the newest node; repeated picks reuse a node on several paths
        args = [nodes[-1 - (p % len(nodes))] for p in picks[:arity]]
        out = op(*args)
        if not abs(_data(out)) < 1e6:
            return None, leaves
        nodes.append(out)
    return nodes[-1], leaves


def _interior_nodes(root):
    seen, stack, found = set(), [root], []
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(node._prev)
            if node._backward is not None:
                found.append(node)
    return found


def _close(got, want, tol):
    return abs(got - want) <= tol * max(1.0, abs(want))


@settings(
    derandomize=True,
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(graphs)
def test_random_graph_matches_torch(graph):
    leaf_values, steps = graph
    out, leaves = _run(leaf_values, steps, Value)
    assume(out is not None)
    out.backward()

    tout, tleaves = _run(
        leaf_values, steps, lambda x: torch.tensor(x, dtype=torch.float64, requires_grad=True)
    )
    assert tout is not None
    tout.backward()

    assert _close(out.data, tout.item(), 1e-9), (out.data, tout.item())
    for i, (leaf, tleaf) in enumerate(zip(leaves, tleaves)):
        want = 0.0 if tleaf.grad is None else tleaf.grad.item()
        assume(math.isfinite(want) and abs(want) < 1e12)
        assert _close(leaf.grad, want, 1e-6), f"leaf {i}: engine {leaf.grad}, torch {want}"


@settings(derandomize=True, deadline=None, max_examples=100)
@given(graphs)
def test_random_graph_backward_runs_each_rule_once_and_reruns_accumulate(graph):
    """One backward() calls each node's rule exactly once; a second call doubles every
    leaf gradient, whatever the graph's shape.

    Doubling is up to rounding: a leaf reached by several paths gets its second pass's
    contributions added one by one onto the first total, not summed first.
    """
    leaf_values, steps = graph
    out, leaves = _run(leaf_values, steps, Value)
    assume(out is not None)
    calls = {}
    for node in _interior_nodes(out):
        key = id(node)
        calls[key] = 0

        def counted(*args, rule=node._backward, key=key):
            calls[key] += 1
            return rule(*args)

        node._backward = counted
    out.backward()
    assert set(calls.values()) == {1}
    first = [leaf.grad for leaf in leaves]
    assume(all(math.isfinite(g) for g in first))
    out.backward()
    for g1, leaf in zip(first, leaves):
        assert _close(leaf.grad, 2 * g1, 1e-12)


@settings(derandomize=True, deadline=None, max_examples=200)
@given(graphs)
def test_backward_walks_the_graph_in_the_shared_walks_order(graph):
    """backward()'s own walk, which reads Value's input slots, lists exactly the nodes of
    graph.topological_order(leaves=False), in the same order: the order in which the
    gradients reaching a node are added up, so every gradient's rounding, is the shared
    walk's."""
    leaf_values, steps = graph
    out, _ = _run(leaf_values, steps, Value)
    assume(out is not None)
    walked = interior_order(out)
    shared = topological_order(out, leaves=False)
    assert len(walked) == len(shared)
    assert all(a is b for a, b in zip(walked, shared))


def test_backward_walks_an_empty_sum_as_the_shared_walk_does():
    # sum_values([]) has no inputs, so no rule either: both walks take it for a leaf
    x = Value(2.0)
    out = (x * sum_values([])) + sum_values([x, 1.0])
    walked, shared = interior_order(out), topological_order(out, leaves=False)
    assert len(walked) == len(shared) == 3  # out, the product, the sum of x and 1
    assert all(a is b for a, b in zip(walked, shared))


@settings(derandomize=True, deadline=None, max_examples=100)
@given(graphs, graphs)
def test_one_walk_over_several_roots_lists_each_node_once_after_its_inputs(one, two):
    """topological_order(*roots): the nodes of every root's own walk, each once, each
    after all of its inputs, the first root's walk first."""
    roots = []
    for leaf_values, steps in (one, two):
        out, _ = _run(leaf_values, steps, Value)
        assume(out is not None)
        roots.append(out)
    roots.append(roots[0] * roots[1])  # shares both graphs
    order = topological_order(*roots)
    position = {id(node): i for i, node in enumerate(order)}
    assert len(position) == len(order)
    assert {id(n) for r in roots for n in topological_order(r)} == set(position)
    assert all(position[id(p)] < position[id(n)] for n in order for p in n._prev)
    first = topological_order(roots[0])
    assert all(a is b for a, b in zip(first, order))
