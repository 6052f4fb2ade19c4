"""The scalar engine's float arithmetic with IEEE results: where Python raises (``1 / 0.0``,
``math.exp(1000)``, ``math.log(0.0)``, a negative base to a fractional power) these give
inf or nan, as C and torch do. The rules and the compiled code (compiler.py) both call them.
"""

from __future__ import annotations

import math

INF = math.inf
_NAN = math.nan


def ieee_div(a: float, b: float) -> float:
    """``a / b`` with IEEE results for division by zero (``1/0 = inf``, ``0/0 = nan``)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0.0 or a != a:
            return _NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)


def _is_odd_integer(x: float) -> bool:
    return x.is_integer() and x % 2 == 1


def ieee_pow(a: float, b: float) -> float:
    """``a ** b`` as C's ``pow`` (and torch) give it: inf on overflow or 0 ** negative, nan
    for a negative base with a fractional exponent, instead of Python's exceptions or
    complex numbers."""
    try:
        return math.pow(a, b)
    except OverflowError:
        negative = a < 0 and _is_odd_integer(b)
        return -INF if negative else INF
    except ValueError:
        if a == 0.0:  # 0 ** negative: the sign of zero survives odd integer powers
            odd = _is_odd_integer(b)
            return math.copysign(INF, a) if odd else INF
        return _NAN  # negative base, fractional exponent


def _ieee_sqrt(x: float) -> float:
    """The square root as IEEE gives it: nan below 0 (-inf included), -0.0 at -0.0."""
    return math.sqrt(x) if x >= 0.0 else _NAN


def const_pow(a: float, n: float) -> float:
    """a ** n for a constant exponent, as torch computes it: n = 0.5 as sqrt and n = -0.5 as
    its reciprocal (so (-0.0) ** 0.5 is -0.0 and (-inf) ** 0.5 nan, where C's pow gives 0.0
    and inf, and the last bit is sqrt's), any other n as C's pow."""
    if n == 0.5:
        return _ieee_sqrt(a)
    if n == -0.5:
        return ieee_div(1.0, _ieee_sqrt(a))
    return ieee_pow(a, n)


def ieee_exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def ieee_log(x: float) -> float:
    if x == 0.0:
        return -INF
    if x < 0.0:
        return _NAN
    return math.log(x)


def ieee_sigmoid(x: float) -> float:
    """1 / (1 + e^-x), computed so that neither branch can overflow."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = ieee_exp(x)
    return e / (1.0 + e)
