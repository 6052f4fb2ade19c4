"""The scalar engine's structural promises: no per-node reference cycles, no per-node
__dict__, a retained node's size, and clear errors for numbers float64 cannot hold."""

import gc
import random
import tracemalloc

import pytest

from modelwright_autograd import MLP, Value, sum_values, svm_loss


def test_a_dropped_graph_leaves_nothing_for_the_cycle_collector():
    model = MLP(2, [8, 8, 1], seed=0)
    rng = random.Random(1)
    xs = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(20)]
    ys = [1.0 if x[0] * x[1] > 0 else -1.0 for x in xs]
    gc.collect()
    gc.disable()  # only the explicit collection below may run
    try:
        loss = svm_loss([model(x) for x in xs], ys)
        loss.backward()
        del loss
        # reference counting already freed the whole graph: no cycle is left to find
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_values_have_slots_not_a_dict():
    v = Value(1.0) * 2.0
    with pytest.raises(AttributeError):
        v.something_else = 1


def test_a_retained_node_costs_at_most_120_bytes():
    # x = x * c, 100,000 times: each product keeps one node and one float alive, and its
    # two inputs sit in the node's slots, not in a tuple of their own (docs/design.md).
    x, c = Value(1.0), Value(1.000001)
    products = 100_000
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = x
        for _ in range(products):
            out = out * c
        per_node = (tracemalloc.get_traced_memory()[0] - before) / products
    finally:
        tracemalloc.stop()
    assert per_node <= 120, f"{per_node:.1f} bytes per retained node"


def test_a_custom_op_of_any_arity_keeps_its_inputs_in_order():
    # Value(data, _prev, _op, _backward) for 1, 2 and 3 inputs: _prev gives them back as
    # given, and backward() hands each rule's gradients to the right input.
    a, b, c = Value(2.0), Value(3.0), Value(5.0)

    def scaled(*weights):
        def rule(g, out, *xs):
            return tuple(w * g for w in weights)

        return rule

    one = Value(4.0, (a,), "one", scaled(7.0))
    two = Value(6.0, (b, a), "two", scaled(11.0, 13.0))
    three = Value(8.0, (c, b, a), "three", scaled(17.0, 19.0, 23.0))
    assert one._prev == (a,) and two._prev == (b, a) and three._prev == (c, b, a)
    sum_values([one, two, three]).backward()
    assert (a.grad, b.grad, c.grad) == (7.0 + 13.0 + 23.0, 11.0 + 19.0, 17.0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sum_values([]),
        lambda: sum_values(x for x in []),
        lambda: Value(2.0, [], "c", lambda g, out: ()),
        lambda: Value(2.0, iter([]), "c", lambda g, out: ()),
    ],
)
def test_a_node_without_inputs_is_a_leaf(make):
    # With no inputs there is nothing to pass a gradient to: no rule, no op, and
    # backward() only seeds it, as on any leaf (here as the root and as an input).
    node = make()
    assert node._prev == () and node._backward is None and node._op == ""
    node.backward()
    assert node.grad == 1.0
    x = Value(3.0)
    (x * make()).backward()
    assert x.grad == make().data


@pytest.mark.parametrize("bad", [(Value(1.0), None), (None,), (Value(1.0), 2.0), ["a"]])
def test_a_custom_op_whose_inputs_are_not_values_is_refused(bad):
    with pytest.raises(TypeError, match=r"^Value\(\): _prev must hold Values, got "):
        Value(1.0, bad, "x", lambda g, out, *xs: (g,) * len(xs))


def test_ints_beyond_float64_say_so():
    with pytest.raises(OverflowError, match=r"Value\(\): int .* too large for a float64"):
        Value(10**400)
    with pytest.raises(OverflowError, match=r"operand of \+: int .* too large"):
        Value(1.0) + 10**400


def test_n_values_are_combined_into_one_node_by_sum_values():
    total = sum_values([Value(1.0), 2.0, Value(3.5)])
    assert total.data == 6.5 and total._op == "sum" and len(total._prev) == 3
