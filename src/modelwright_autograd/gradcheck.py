"""Check analytic gradients against central finite differences, for both engines.

NumPy and the tensor engine are imported only for a tensor check, so checking Values
needs nothing outside the standard library.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .checks import as_float
from .graph import no_grad
from .scalar.engine import Value

if TYPE_CHECKING:
    from .tensor import Tensor


class GradcheckError(AssertionError):
    """Raised when an analytic gradient disagrees with its finite-difference estimate."""


def gradcheck(
    f: Callable[..., Any],
    inputs: Sequence[Any],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    value: type | None = None,
) -> bool:
    """Compare ``backward()``'s gradient of ``f(*values)`` with central differences.

    For each input i the numeric estimate is (f(x + eps*e_i) - f(x - eps*e_i)) / (2*eps);
    it must agree with the analytic gradient within ``atol + rtol * |numeric|``. Returns
    True, or raises GradcheckError naming the input and both numbers.

    With numbers as inputs, ``f`` takes and returns Values: this package's, or the class
    given as ``value`` (a learner's own engine, with ``data``, ``grad`` and ``backward()``).
    If any input is a NumPy array or a Tensor, ``f`` takes and returns Tensors and
    ``_gradcheck_tensor`` does the check.
    """
    if _has_array(inputs):
        return _gradcheck_tensor(f, inputs, eps, atol, rtol)
    xs = [as_float(x, "gradcheck input") for x in inputs]
    if not xs:
        raise ValueError("gradcheck needs at least one input")
    value = value or Value
    leaves = [value(x) for x in xs]
    out = f(*leaves)
    if not isinstance(out, value):
        raise TypeError(f"gradcheck: f must return a Value, got {type(out).__name__}")
    out.backward()

    def evaluate(values: list[float]) -> float:
        return float(f(*[value(v) for v in values]).data)

    _check_differences(xs, [leaf.grad for leaf in leaves], evaluate, eps, atol, rtol)
    return True


def _has_array(inputs: Sequence[Any]) -> bool:
    """Whether any input is a NumPy array or a Tensor (neither exists before NumPy loads)."""
    np = sys.modules.get("numpy")
    if np is None:
        return False
    from .tensor import Tensor

    return any(isinstance(x, (np.ndarray, Tensor)) for x in inputs)


def _check_close(analytic: float, numeric: float, atol: float, rtol: float, where: str) -> None:
    """Raise GradcheckError unless |analytic - numeric| <= atol + rtol*|numeric| (or both nan)."""
    allowed = atol + rtol * abs(numeric)
    if math.isnan(numeric) and math.isnan(analytic):
        return
    if not abs(analytic - numeric) <= allowed:
        raise GradcheckError(
            f"gradient of {where} is wrong: analytic {analytic!r} vs numeric {numeric!r} "
            f"(difference {abs(analytic - numeric):.3g}, allowed {allowed:.3g})"
        )


def _check_differences(
    xs: list[Any],
    analytic: list[Any],
    evaluate: Callable[[list[Any]], float],
    eps: float,
    atol: float,
    rtol: float,
    what: str = "",
) -> None:
    """Compare ``analytic[i]`` (a float, or an array of ``xs[i]``'s shape) with central
    differences of ``evaluate`` at ``xs``, one input element at a time."""
    for i, x in enumerate(xs):
        if isinstance(x, float):
            plus, minus = list(xs), list(xs)
            plus[i] += eps
            minus[i] -= eps
            numeric = (evaluate(plus) - evaluate(minus)) / (2.0 * eps)
            _check_close(analytic[i], numeric, atol, rtol, f"{what}input {i} (x={x!r})")
            continue
        import numpy as np

        for index in np.ndindex(x.shape):
            plus, minus = list(xs), list(xs)
            plus[i], minus[i] = x.copy(), x.copy()
            plus[i][index] += eps
            minus[i][index] -= eps
            numeric = (evaluate(plus) - evaluate(minus)) / (2.0 * eps)
            where = f"{what}input {i} at index {index} (x={x[index]!r})"
            _check_close(float(analytic[i][index]), numeric, atol, rtol, where)


def _float64_arrays(inputs: Sequence[Any]) -> list[Any]:
    """Each input (an array, a Tensor or a number) as a new float64 array."""
    import numpy as np

    from .tensor import Tensor

    return [np.array(x.data if isinstance(x, Tensor) else x, dtype=np.float64) for x in inputs]


def _gradcheck_tensor(
    f: Callable[..., Tensor],
    inputs: Sequence[Any],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
) -> bool:
    """The tensor form of ``gradcheck``, in float64 whatever the inputs' dtype.

    A non-scalar output is first contracted with a fixed random array w of its shape, so
    the check is of the vector-Jacobian product: ``backward(w)`` against central
    differences of sum(w * f(x)), one input element at a time. A random w (rather than
    all ones) keeps errors that cancel in a plain sum, such as a wrong sign on one
    output, from hiding.
    """
    import numpy as np

    from .tensor import Tensor

    xs = _float64_arrays(inputs)
    if not xs:
        raise ValueError("gradcheck needs at least one input")
    leaves = [Tensor(x, requires_grad=True) for x in xs]
    out = f(*leaves)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: f must return a Tensor, got {type(out).__name__}")
    w = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(w)

    def evaluate(values: list[np.ndarray]) -> float:
        with no_grad():
            return float((w * f(*[Tensor(v) for v in values]).data).sum())

    analytic = [np.zeros_like(x) if t.grad is None else t.grad for x, t in zip(xs, leaves)]
    _check_differences(xs, analytic, evaluate, eps, atol, rtol)
    return True


def gradgradcheck(
    f: Callable[..., Any],
    inputs: Sequence[Any],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
) -> bool:
    """Check second derivatives, as torch's ``gradgradcheck``: the derivative of the
    gradient, taken by ``create_graph=True``, against central differences of the gradient.

    The gradients are contracted to one number, s(x) = sum_i <w_i, J_i(x)^T u>, with fixed
    random u (over the output) and w (over each input), so one finite difference per input
    element checks every second derivative at once without cancellations hiding an error.
    Inputs as for ``gradcheck``: numbers for Values, arrays or Tensors for Tensors.
    """
    from .autograd import grad

    tensor = _has_array(inputs)
    if tensor:
        import numpy as np

        from .tensor import Tensor

        xs: list[Any] = _float64_arrays(inputs)
        rng = np.random.default_rng(seed)
    else:
        import random

        xs = [as_float(x, "gradgradcheck input") for x in inputs]
        rng = random.Random(seed)
    if not xs:
        raise ValueError("gradgradcheck needs at least one input")

    def weights(shape: tuple[int, ...]) -> Any:
        return rng.standard_normal(shape) if tensor else rng.gauss(0.0, 1.0)

    def leaves_of(values: list[Any]) -> list[Any]:
        return [Tensor(v, requires_grad=True) if tensor else Value(v) for v in values]

    probe = f(*leaves_of(xs))
    u = weights(probe.shape) if tensor else 1.0
    ws = [weights(x.shape) if tensor else weights(()) for x in xs]

    def contracted(leaves: list[Any], create_graph: bool) -> Any:
        gs = grad(f(*leaves), leaves, u, create_graph=create_graph, allow_unused=True)
        terms = [(g * w).sum() if tensor else g * w for g, w in zip(gs, ws) if g is not None]
        return sum(terms[1:], terms[0]) if terms else 0.0

    def evaluate(values: list[Any]) -> float:
        s = contracted(leaves_of(values), False)
        return s if isinstance(s, float) else float(s.data)

    leaves = leaves_of(xs)
    s = contracted(leaves, True)
    live = not isinstance(s, float) and (s.requires_grad if tensor else True)
    seconds = grad(s, leaves, allow_unused=True) if live else (None,) * len(xs)
    analytic = [
        (np.zeros_like(x) if tensor else 0.0) if d is None else (d.data if tensor else d)
        for x, d in zip(xs, seconds)
    ]
    _check_differences(xs, analytic, evaluate, eps, atol, rtol, "the gradient, ")
    return True
