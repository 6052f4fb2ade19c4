"""Each op's source templates (``@emits`` beside its rule in scalar/engine.py) compute what
the op and its rule compute, bit for bit, at ordinary and special numbers: the compiler's
code has no derivative of its own, only these templates, so this is where a template
drifting from its rule would show."""

from __future__ import annotations

import itertools
import math

import pytest
from test_compiler import SPECIALS, same
from test_report_ops import engine_rules

from modelwright_autograd import Value, sum_values
from modelwright_autograd.scalar import engine
from modelwright_autograd.scalar.compiler import NAMESPACE
from modelwright_autograd.scalar.engine import Grad, source_of

GRADS = [1.0, -0.75, 0.0, math.inf, math.nan]

#: One node builder per rule: inputs (floats) -> the node the op makes.
BUILDERS = {
    "_add_backward": (2, lambda a, b: a + b),
    "_sub_backward": (2, lambda a, b: a - b),
    "_mul_backward": (2, lambda a, b: a * b),
    "_div_backward": (2, lambda a, b: a / b),
    "_neg_backward": (1, lambda a: -a),
    "_pow_backward": (2, lambda a, b: a**b),
    "_exp_backward": (1, lambda a: a.exp()),
    "_log_backward": (1, lambda a: a.log()),
    "_tanh_backward": (1, lambda a: a.tanh()),
    "_relu_backward": (1, lambda a: a.relu()),
    "_sigmoid_backward": (1, lambda a: a.sigmoid()),
    "_sum_backward": (3, lambda a, b, c: sum_values([a, b, c])),
    "_dot_backward": (3, lambda a, b, c: Value.dot([a, b], [c, a], b)),
    "_dot_relu_backward": (3, lambda a, b, c: Value.dot([a, b], [c, a], b, relu=True)),
}
CONSTANT_POWERS = [2.0, 0.5, -0.5, -1.5, 0.0, 3.0, -1.0]


def evaluate(expr: str, env: dict[str, float]) -> float:
    return eval(expr, {**NAMESPACE, **env})


def template_grads(source, g: float, out: float, inputs: list[float]) -> list[float | None]:
    """What the templates give each input, None where they give no gradient."""
    names = [f"x{i}" for i in range(len(inputs))]
    env = {"g": g, "out": out, **dict(zip(names, inputs))}
    if source.relu:  # the gradient reaching the rule is relu's, as the compiler gates it
        gate = engine._relu_backward.source.grads("g", "out", "out")[0]
        env["g"] = 0.0 if evaluate(gate.zero_if, env) else evaluate(gate.expr, env)
    result = []
    for grad in source.grads("g", "out", *names):
        if grad is None:
            result.append(None)
            continue
        grad = grad if isinstance(grad, Grad) else Grad(grad)
        zero = grad.zero_if is not None and evaluate(grad.zero_if, env)
        result.append(None if zero else evaluate(grad.expr, env))
    return result


def template_forward(source, inputs: list[float]) -> float:
    names = [f"x{i}" for i in range(len(inputs))]
    expr = source.forward(*names)
    env = dict(zip(names, inputs))
    value = evaluate(" + ".join(expr) if isinstance(expr, list) else expr, env)
    if source.relu:
        value = evaluate(engine._relu_backward.source.forward("t"), {"t": value})
    return value


def check_node(node: Value) -> None:
    source = source_of(node)
    inputs = [p.data for p in node._prev]
    assert same(template_forward(source, inputs), node.data), (node._op, inputs)
    rule = node._backward or engine._dot_relu_backward  # an inactive neuron records none
    for g in GRADS:
        want = rule(g, node.data, *inputs)
        got = template_grads(source, g, node.data, inputs)
        assert len(got) == len(want)
        for i, (x, y) in enumerate(zip(got, want)):
            assert (x is None) == (y is None), (node._op, inputs, g, i, x, y)
            assert x is None or same(x, y), (node._op, inputs, g, i, x, y)


def test_every_rule_has_templates():
    for name in engine_rules():
        assert isinstance(getattr(engine, name).source, engine.Source), name


@pytest.mark.parametrize("rule", sorted(BUILDERS))
def test_templates_agree_with_the_op_and_its_rule(rule):
    arity, build = BUILDERS[rule]
    for numbers in itertools.product(SPECIALS, repeat=arity):
        node = build(*[Value(x) for x in numbers])
        assert node._backward in (getattr(engine, rule), None)
        check_node(node)


def test_constant_power_templates_agree_with_the_rule():
    for x, n in itertools.product(SPECIALS, CONSTANT_POWERS):
        node = Value(x) ** n
        assert node._backward is engine._powc_backward
        check_node(node)


def test_every_rule_is_checked():
    assert set(BUILDERS) | {"_powc_backward"} == engine_rules()
