"""The scalar engine's structural promises: no per-node reference cycles, no per-node
__dict__, and clear errors for numbers float64 cannot hold."""

import gc
import random

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
    assert not hasattr(v, "__dict__")
    with pytest.raises(AttributeError):
        v.something_else = 1


def test_ints_beyond_float64_say_so():
    with pytest.raises(OverflowError, match=r"Value\(\): int .* too large for a float64"):
        Value(10**400)
    with pytest.raises(OverflowError, match=r"operand of \+: int .* too large"):
        Value(1.0) + 10**400


def test_n_values_are_combined_by_a_function_not_a_value_method():
    # Value.sum(values) read like Tensor.sum(), which reduces one tensor: a trap (issue 10).
    assert not hasattr(Value, "sum")
    total = sum_values([Value(1.0), 2.0, Value(3.5)])
    assert total.data == 6.5 and total._op == "sum" and len(total._prev) == 3
