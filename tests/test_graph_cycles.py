"""A cycle made by editing a node's input slot (issue 23, item 18): every walk over the
graph (the scalar backward's, the shared topological order of the tensor engine, explain
and autograd.grad) raises GraphCycleError instead of running a node before its inputs."""

from __future__ import annotations

import numpy as np
import pytest

from modelwright_autograd import Neuron, Value, grad
from modelwright_autograd.explain import explain
from modelwright_autograd.graph import GraphCycleError, topological_order
from modelwright_autograd.tensor import Tensor


def _cycle():
    """d = a * b + 1, then the product's first input edited to d: d uses itself."""
    a, b = Value(2.0, label="a"), Value(3.0, label="b")
    c = a * b
    d = c + 1
    c._a = d
    return a, d


@pytest.mark.parametrize("create_graph", [False, True])
def test_backward_over_an_edited_cycle_raises(create_graph):
    _, d = _cycle()
    with pytest.raises(GraphCycleError, match="the graph has a cycle"):
        d.backward(create_graph=create_graph)


def test_a_node_made_its_own_input_raises():
    x = Value(1.5)
    y = x.tanh()
    y._a = y
    with pytest.raises(GraphCycleError):
        y.backward()


def test_a_cycle_through_a_fused_nodes_inputs_raises():
    neuron = Neuron(3, activation="relu", seed=0)
    x = [Value(1.0).tanh(), Value(2.0).tanh(), Value(0.5).tanh()]
    out = neuron(x)  # one fused node: its inputs are the tuple _b
    loss = out * 2
    x[1]._a = loss  # an input of the neuron now depends on the neuron
    with pytest.raises(GraphCycleError):
        loss.backward()


def test_explain_and_grad_refuse_the_cycle():
    a, d = _cycle()
    with pytest.raises(GraphCycleError):
        explain(d)
    with pytest.raises(GraphCycleError):
        grad(d, [a])
    with pytest.raises(GraphCycleError):
        topological_order(d)


def test_a_tensor_cycle_raises():
    x = Tensor(np.ones(3), requires_grad=True)
    y = x * 2.0
    z = (y + 1.0).sum()
    y._prev = (z,)
    with pytest.raises(GraphCycleError):
        z.backward()


def test_shared_nodes_are_not_a_cycle():
    """A diamond meets its shared node twice, both after it is listed: d/da of
    (a*a) + (a*a)*(a*a) at a = 3 is 2a + 4a**3 = 114."""
    a = Value(3.0)
    sq = a * a
    out = sq + sq * sq
    out.backward()
    assert a.grad == 2 * 3.0 + 4 * 3.0**3
