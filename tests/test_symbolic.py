"""scalar/symbolic.py, the compiler's way of writing an op and its rule out: code with
branches, run on symbols, gives source that computes what the code computes on floats,
at every point, each branch included (the compiler's own tests check every engine op)."""

from __future__ import annotations

import itertools
import math

from modelwright_autograd.scalar.compiler import NAMESPACE
from modelwright_autograd.scalar.symbolic import Env, Grad, Sym, gradients, run, value

POINTS = [-3.0, -0.0, 0.0, 1.0, 2.0, 2.5, math.inf, math.nan]


def _unbound(prefix: str, sym: Sym) -> str:
    raise AssertionError(f"nothing here is written once: {sym}")


def _symbols(*names: str) -> tuple[Env, list[Sym]]:
    env = Env(_unbound, "t")
    return env, [Sym(name, env) for name in names]


def _same(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is y
    return x == y or (math.isnan(x) and math.isnan(y))


def _evaluate(grad: str | Grad | None, point: dict[str, float]) -> float | None:
    if grad is None:
        return None
    grad = grad if isinstance(grad, Grad) else Grad(grad)
    if grad.zero_if is not None and eval(grad.zero_if, dict(NAMESPACE), point):
        return None
    return eval(grad.expr, dict(NAMESPACE), point)


def rule(g, out, a):
    """A rule with branches of the shapes the joiner meets: or, not, and (each gradient's
    conditions are the others' too, left out where they change nothing), and a gradient
    with none at all."""
    first = None if a < 0.0 or out == 1.0 else g * a
    second = None if not a > 2.0 else g - a
    third = None if a == 1.0 and out >= 0.0 else -(g * a)
    return first, second, third, None


def test_a_rules_branches_become_conditions_that_compute_what_it_does():
    env, symbols = _symbols("g", "out", "a")
    grads = gradients(run(rule, env, *symbols), env)
    assert grads[3] is None
    for g, out, a in itertools.product([1.0, -0.5], POINTS, POINTS):
        got = [_evaluate(x, {"g": g, "out": out, "a": a}) for x in grads]
        want = list(rule(g, out, a))
        assert all(map(_same, got, want)), (g, out, a, got, want)


def clamp(x):
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


def test_a_forwards_branches_become_one_expression():
    env, (x,) = _symbols("x")
    expr = value(run(clamp, env, x), env)
    for point in POINTS:
        assert _same(eval(expr.text, dict(NAMESPACE), {"x": point}), clamp(point)), point
