"""Check analytic gradients against central finite differences."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .engine import Value, _as_float


class GradcheckError(AssertionError):
    """Raised when an analytic gradient disagrees with its finite-difference estimate."""


def gradcheck(
    f: Callable[..., Value],
    inputs: Sequence[float],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
) -> bool:
    """Compare ``backward()``'s gradient of ``f(*values)`` with central differences.

    For each input i the numeric estimate is (f(x + eps*e_i) - f(x - eps*e_i)) / (2*eps);
    it must agree with the analytic gradient within ``atol + rtol * |numeric|``. Returns
    True, or raises GradcheckError naming the input and both numbers.
    """
    xs = [_as_float(x, "gradcheck input") for x in inputs]
    if not xs:
        raise ValueError("gradcheck needs at least one input")
    leaves = [Value(x) for x in xs]
    out = f(*leaves)
    if not isinstance(out, Value):
        raise TypeError(f"gradcheck: f must return a Value, got {type(out).__name__}")
    out.backward()

    def evaluate(values: list[float]) -> float:
        return f(*[Value(v) for v in values]).data

    for i, leaf in enumerate(leaves):
        plus, minus = list(xs), list(xs)
        plus[i] += eps
        minus[i] -= eps
        numeric = (evaluate(plus) - evaluate(minus)) / (2.0 * eps)
        analytic = leaf.grad
        both_nan = math.isnan(numeric) and math.isnan(analytic)
        if not both_nan and not abs(analytic - numeric) <= atol + rtol * abs(numeric):
            raise GradcheckError(
                f"gradient of input {i} (x={xs[i]!r}) is wrong: analytic {analytic!r} vs "
                f"numeric {numeric!r} (difference {abs(analytic - numeric):.3g}, "
                f"allowed {atol + rtol * abs(numeric):.3g})"
            )
    return True
