"""Elementwise ops of the tensor engine, each forward directly above its backward rule
``rule(g, out, ctx, need, *inputs)`` (kit.py), bound as Tensor methods at the end.

    op                         forward          rule                     d(c)/d(input)
    a + b, a - b               _add, _sub       _add/_sub_backward       1, 1 / 1, -1
    a * b, a / b               _mul, _div       _mul/_div_backward       b, a / 1/b, -c/b
    number + t, - * /          _radd, ...       (the above, swapped)
    a % b (remainder)          _remainder       _remainder_backward      1, -floor(a/b)
    a // b, number % t         _floor_divide    (none, as torch: raises) -
    a ** n (a number)          _pow             _pow_backward            n a^(n-1)
    a ** b, number ** t        _pow_tensor      _pow_tensor_backward     b a^(b-1), c ln a
    -a                         _neg             _neg_backward            -1
    exp, log                   _exp, _log       _exp/_log_backward       c / 1/a
    tanh, sigmoid              _tanh, _sigmoid  _tanh/_sigmoid_backward  1-c^2 / c(1-c)
    relu                       _relu            _relu_backward           1 where c > 0
    abs, sign                  _abs, _sign      _abs/_sign_backward      sign(a) / 0
    sqrt                       _sqrt            _sqrt_backward           1/(2c)
    sin, cos                   _sin, _cos       _sin/_cos_backward       cos a / -sin a
    log1p, expm1               _log1p, _expm1   _log1p/_expm1_backward   1/(1+a) / c+1
    erf                        _erf             _erf_backward            2/sqrt(pi) e^-a^2
    clamp (clip)               _clamp           _clamp_backward          1 inside [lo, hi]
    maximum, minimum           maximum, minimum _maximum/_minimum_bw.    1 to the winner
    < <= > >= == !=            _comparison      (none: a constant)
    ~ (bool, integer)          _invert          (none: a constant)
    masked_fill                masked_fill      _masked_fill_backward    1 where not filled

``where`` is the kit's selection (kit.py); leaky_relu, softplus and gelu are in
activations.py; docs/tensor-ops.md tabulates the gradients.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ..checks import describe
from .core import (
    Arr,
    Grads,
    Need,
    Operand,
    Tensor,
    check_tensor,
    lift,
    make_node,
    promoted,
    raw,
    result_type,
)
from .kit import (
    as_number,
    check_kind,
    constant,
    cos,
    erf_array,
    exp,
    log,
    sigmoid_array,
    sin,
    zero_where,
    zeros_like,
)


def _floating(a: Tensor) -> np.ndarray:
    """a's array for a function with float values (exp, sin, ...): a bool or integer one in
    float64, the default float, as torch promotes it (NumPy would give float16 for bool)."""
    return a.data if a.data.dtype.kind == "f" else a.data.astype(np.float64)


def _elementwise(
    op: str, ufunc: np.ufunc, a: Tensor, b: Tensor, floating: bool = False
) -> np.ndarray:
    """ufunc(a, b) under broadcasting, in the dtype torch promotes the two to (in float64
    for a ``floating`` op such as true division of integers), with an error naming both
    shapes."""
    A, B = promoted(a, b, floating)
    try:
        return ufunc(A, B)
    except ValueError:
        try:
            np.broadcast_shapes(A.shape, B.shape)
        except ValueError:
            raise ValueError(f"{op}: shapes {a.shape} and {b.shape} cannot broadcast") from None
        raise  # the shapes broadcast: the error is the ufunc's own


# ---------------------------------------------------------------------- binary arithmetic
# Each forward is followed by its rule ``rule(g, out, ctx, need, *inputs)`` (see
# kit.py): it returns one gradient per input, skipping those with ``need[i]`` False.


def _add(a: Tensor, other: Operand) -> Tensor:
    other = lift(other, a, "add")
    return make_node(_elementwise("add", np.add, a, other), (a, other), "+", _add_backward)


def _add_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a + b:  dc/da = 1, dc/db = 1 (the engine sums each back to its input's shape)."""
    return g, g


def _sub(a: Tensor, other: Operand) -> Tensor:
    _check_no_bool(other)
    other = lift(other, a, "sub")
    _check_no_bool(a, other)
    return make_node(_elementwise("sub", np.subtract, a, other), (a, other), "-", _sub_backward)


def _check_no_bool(*operands: Operand) -> None:
    """Refuse a subtraction with a bool tensor or a Python bool, as torch does."""
    for x in operands:
        if isinstance(x, bool) or (isinstance(x, Tensor) and x.data.dtype == np.bool_):
            raise TypeError(
                "sub: subtraction with a bool tensor or a bool is not defined (nor in torch); "
                "to invert a mask use ~mask, or convert it first: mask * 1.0"
            )


def _sub_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a - b:  dc/da = 1, dc/db = -1."""
    return g, (-g if need[1] else None)


def _mul(a: Tensor, other: Operand) -> Tensor:
    other = lift(other, a, "mul")
    return make_node(_elementwise("mul", np.multiply, a, other), (a, other), "*", _mul_backward)


def _mul_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a * b:  dc/da = b, dc/db = a."""
    return (g * b if need[0] else None), (g * a if need[1] else None)


def _div(a: Tensor, other: Operand) -> Tensor:
    other = lift(other, a, "div")
    data = _elementwise("div", np.true_divide, a, other, floating=True)
    return make_node(data, (a, other), "/", _div_backward)


def _div_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a / b:  dc/da = 1/b, dc/db = -a/b**2, computed as torch does, -(a/b)/b = -c/b,
    because b*b underflows to 0 (or overflows) where c/b is still a normal float."""
    return (g / b if need[0] else None), (-g * (out / b) if need[1] else None)


# Reflected forms: ``2 - t`` and friends lift the number to a constant of the dtype it
# promotes t to (t's own for a float t).
def _radd(a: Tensor, other: Operand) -> Tensor:
    return _add(lift(other, a, "add"), a)


def _rsub(a: Tensor, other: Operand) -> Tensor:
    _check_no_bool(other)
    return _sub(lift(other, a, "sub"), a)


def _rmul(a: Tensor, other: Operand) -> Tensor:
    return _mul(lift(other, a, "mul"), a)


def _rdiv(a: Tensor, other: Operand) -> Tensor:
    return _div(lift(other, a, "div"), a)


def _remainder(a: Tensor, other: Operand) -> Tensor:
    """a % b as torch.remainder: a - floor(a / b) * b, the sign of b (Python's %); nan for
    a float b of 0, and an integer b of 0 a ZeroDivisionError, as in torch."""
    other = lift(other, a, "remainder")
    data = _floor_op("%", np.remainder, a, other)
    return make_node(data, (a, other), "%", _remainder_backward)


def _remainder_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a - floor(a/b) * b:  dc/da = 1, dc/db = -floor(a/b) (torch's formula; the floor
    is constant between its jumps)."""
    if not need[1]:
        return g, None
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant under create_graph
        return (g if need[0] else None), -g * np.floor_divide(raw(a), raw(b))


def _rremainder(a: Tensor, other: Operand) -> Tensor:
    """number % t: torch gives no derivative for t (remainder.Scalar_Tensor has none), and
    neither does this: a backward() through it raises, as torch's does."""
    other = lift(other, a, "remainder")
    data = _floor_op("%", np.remainder, other, a)
    return make_node(data, (a,), "%", _no_derivative, "remainder")


def _floor_divide(a: Tensor, other: Operand) -> Tensor:
    """a // b as torch.floor_divide: floor(a / b) (inf for a float b of 0, an integer b of
    0 a ZeroDivisionError). torch records it but has no derivative for it: a backward()
    through it raises, as torch's does."""
    other = lift(other, a, "floor_divide")
    data = _floor_op("//", np.floor_divide, a, other)
    return make_node(data, (a, other), "//", _no_derivative, "floor_divide")


def _rfloor_divide(a: Tensor, other: Operand) -> Tensor:
    """number // t (see _floor_divide)."""
    return _floor_divide(lift(other, a, "floor_divide"), a)


def _floor_op(symbol: str, ufunc: np.ufunc, a: Tensor, b: Tensor) -> np.ndarray:
    """% or // in the dtype torch promotes a and b to, refused where torch refuses it."""
    dtype = result_type(a, b)
    if dtype == np.bool_:
        raise TypeError(f"{symbol}: not defined for two bool operands (nor in torch)")
    if dtype.kind in "iu" and not np.all(promoted(a, b)[1]):
        raise ZeroDivisionError(f"{symbol}: integer division by zero (as in torch)")
    with np.errstate(divide="ignore", invalid="ignore"):
        return _elementwise(symbol, ufunc, a, b)


def _no_derivative(g: Arr, out: Arr, op: str, need: Need, *inputs: Arr) -> Grads:
    """The rule of an op torch records but cannot differentiate: the same refusal."""
    raise RuntimeError(f"{op}: no derivative is defined for it (as in torch)")


def _pow(a: Tensor, exponent: float) -> Tensor:
    """x ** n for a number n (a Python float keeps a float32 tensor float32); a Tensor or
    array exponent is its own op, ``_pow_tensor``."""
    if isinstance(exponent, (Tensor, np.ndarray)):
        return _pow_tensor(a, lift(exponent, a, "**"))
    if not isinstance(exponent, numbers.Real):
        raise TypeError(
            f"Tensor ** exponent: the exponent must be a number or a Tensor, got "
            f"{describe(exponent)}"
        )
    n = float(exponent)
    if a.data.dtype.kind != "f":  # bool or integer: torch's promotion (int ** 2 stays int)
        dtype = result_type(a, exponent)
        if dtype == np.bool_:  # bool ** True is the tensor, bool ** False all True
            data = a.data.copy() if exponent else np.ones_like(a.data)
        else:
            data = np.power(a.data.astype(dtype, copy=False), dtype.type(exponent))
        return make_node(data, (a,), "**", _pow_backward, n)
    return make_node(power(a.data, n), (a,), "**", _pow_backward, n)


def power(x: Arr, n: float) -> Arr:
    """x ** n for a number n, as torch computes it: NumPy already takes n = 0.5 as sqrt, and
    n = -0.5 is 1/sqrt(x) here (C's pow differs at -0.0 and -inf, and in the last bit)."""
    if n == -0.5 and type(x) is np.ndarray:
        return 1.0 / np.sqrt(x)
    return x**n


def _pow_backward(g: Arr, out: Arr, n: float, need: Need, a: Arr) -> Grads:
    """c = a ** n:  dc/da = n * a**(n-1) (0 when n = 0, as in torch)."""
    if n == 0.0:
        return (zeros_like(a),)
    return (n * power(a, n - 1.0) * g,)


def _neg(a: Tensor) -> Tensor:
    return make_node(np.negative(a.data), (a,), "neg", _neg_backward)


def _neg_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = -a:  dc/da = -1."""
    return (-g,)


# ---------------------------------------------------------------------- unary functions
def _exp(a: Tensor) -> Tensor:
    """e ** x elementwise (inf beyond about 709.78 in float64, as in torch)."""
    return make_node(np.exp(_floating(a)), (a,), "exp", _exp_backward)


def _exp_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = e**a:  dc/da = e**a, which is c itself."""
    return (out * g,)


def _log(a: Tensor) -> Tensor:
    """Natural log: -inf at 0 and nan below it (NumPy also warns)."""
    return make_node(np.log(_floating(a)), (a,), "log", _log_backward)


def _log_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = ln a:  dc/da = 1/a."""
    return (g / a,)


def _tanh(a: Tensor) -> Tensor:
    return make_node(np.tanh(_floating(a)), (a,), "tanh", _tanh_backward)


def _tanh_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = tanh a:  dc/da = 1 - c**2."""
    return ((1.0 - out * out) * g,)


def _relu(a: Tensor) -> Tensor:
    """max(0, x) with relu(nan) = nan and relu(-0.0) = -0.0, as in torch (and Value.relu);
    an integer tensor stays integer, a bool one is refused (as torch)."""
    check_kind(a, "relu", "fiu")
    return make_node(relu_array(a.data), (a,), "relu", _relu_backward)


def relu_array(x: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """relu on an array (written into x itself with ``overwrite``, for an array the caller
    has just made). ``np.maximum`` is branch-free, where ``np.where`` on a mask of random
    signs costs a mispredicted branch per element (several times slower on this
    project's machine); maximum gives +0.0 at x = -0.0, so the zeros, rare and so a cheap
    select, keep x (counted rather than ``any()``-ed: count_nonzero is the quicker)."""
    zero = x == 0.0
    floor = x.dtype.type(0)  # 0 of x's dtype, so an integer x stays integer
    if np.count_nonzero(zero):
        return np.where(zero, x, np.maximum(x, floor))
    return np.maximum(x, floor, out=x if overwrite else None)


def _relu_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = max(0, a):  dc/da = 0 where c <= 0 (so 0 at a = 0), else 1, as in torch; the
    test is "c <= 0" so that nan passes its gradient on, as torch's does."""
    return (zero_where(raw(out) <= 0.0, g),)


def _sigmoid(a: Tensor) -> Tensor:
    return make_node(sigmoid_array(_floating(a)), (a,), "sigmoid", _sigmoid_backward)


def _sigmoid_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = 1/(1 + e**-a):  dc/da = c * (1 - c)."""
    return (out * (1.0 - out) * g,)


# ---------------------------------------------------------------------- elementwise
def _abs(a: Tensor) -> Tensor:
    check_kind(a, "abs", "fiu")  # not for bool, as torch
    return make_node(np.abs(a.data), (a,), "abs", _abs_backward)


def _abs_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = |a|:  dc/da = sign(a), 0 at a = 0 (as torch)."""
    return (g * np.sign(raw(a)),)


def _sqrt(a: Tensor) -> Tensor:
    """Square root: nan below 0 (NumPy also warns)."""
    return make_node(np.sqrt(_floating(a)), (a,), "sqrt", _sqrt_backward)


def _sqrt_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = sqrt(a):  dc/da = 1 / (2c), inf at a = 0 (as torch)."""
    with np.errstate(divide="ignore"):
        return (g / (2.0 * out),)


def _sign(a: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (a bool tensor is its own sign, as torch)."""
    data = a.data.copy() if a.data.dtype == np.bool_ else np.sign(a.data)
    return make_node(data, (a,), "sign", _sign_backward)


def _sign_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = sign(a) is flat wherever it is differentiable:  dc/da = 0 (as torch)."""
    return (zeros_like(a),)


def _sin(a: Tensor) -> Tensor:
    return make_node(np.sin(_floating(a)), (a,), "sin", _sin_backward)


def _sin_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = sin a:  dc/da = cos a."""
    return (g * cos(a),)


def _cos(a: Tensor) -> Tensor:
    return make_node(np.cos(_floating(a)), (a,), "cos", _cos_backward)


def _cos_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = cos a:  dc/da = -sin a."""
    return (-g * sin(a),)


def _log1p(a: Tensor) -> Tensor:
    """ln(1 + x), accurate for tiny x where 1 + x rounds to 1."""
    return make_node(np.log1p(_floating(a)), (a,), "log1p", _log1p_backward)


def _log1p_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = ln(1 + a):  dc/da = 1 / (1 + a)."""
    return (g / (1.0 + a),)


def _expm1(a: Tensor) -> Tensor:
    """e^x - 1, accurate for tiny x where e^x rounds to 1."""
    return make_node(np.expm1(_floating(a)), (a,), "expm1", _expm1_backward)


def _expm1_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = e^a - 1:  dc/da = e^a = c + 1."""
    return (g * (out + 1.0),)


def _erf(a: Tensor) -> Tensor:
    """The error function (gelu is built on it)."""
    return make_node(erf_array(_floating(a)), (a,), "erf", _erf_backward)


def _erf_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = erf a:  dc/da = 2/sqrt(pi) e^(-a^2)."""
    return (g * (exp(a * a * -1.0) * (2.0 / math.sqrt(math.pi))),)


def _clamp(a: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Each element limited to [min, max] (either may be None), as ``torch.clamp``: the
    result is min(max(x, min), max), so max wins when min > max."""
    if min is None and max is None:
        raise ValueError("clamp: give min, max or both (both are None)")
    lo = -math.inf if min is None else _bound(min, "clamp: min")
    hi = math.inf if max is None else _bound(max, "clamp: max")
    dtype = result_type(a, min, max)  # as torch: clamp(int, 0.5, 1.5) is float
    if dtype == np.bool_:
        raise TypeError(
            "clamp: not defined for a bool tensor with bool bounds (nor in torch); give "
            "number bounds, clamp(0, 1), or convert first: x * 1"
        )
    data = a.data.astype(dtype, copy=False)
    if min is not None:
        data = np.maximum(data, dtype.type(min))
    if max is not None:
        data = np.minimum(data, dtype.type(max))
    return make_node(data, (a,), "clamp", _clamp_backward, (lo, hi))


def _bound(x: object, what: str) -> float:
    """A clamp bound as a float: any real number, a bool too (as torch takes it)."""
    if not isinstance(x, numbers.Real):
        raise TypeError(f"{what} must be a number, got {describe(x)}")
    return float(x)


def _clamp_backward(g: Arr, out: Arr, ctx: tuple[float, float], need: Need, a: Arr) -> Grads:
    """c = clamp(a, lo, hi):  dc/da = 1 where lo <= a <= hi (the boundary included, as
    torch), else 0."""
    lo, hi = ctx
    x = raw(a)
    return (zero_where(~((x >= lo) & (x <= hi)), g),)


def maximum(input: Tensor, other: Operand) -> Tensor:
    """The elementwise larger of two tensors (broadcast), as ``torch.maximum``; nan wins."""
    return _pairwise(input, other, "maximum", np.maximum, _maximum_backward)


def _maximum_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = max(a, b):  dc/da = 1 where a > b, dc/db = 1 where b > a, and 1/2 each at a tie
    (torch's rule); where either is nan both get the whole gradient, as in torch."""
    return _tie_shares(g, raw(a), raw(b), np.less, need)


def minimum(input: Tensor, other: Operand) -> Tensor:
    """The elementwise smaller of two tensors (broadcast), as ``torch.minimum``; nan wins."""
    return _pairwise(input, other, "minimum", np.minimum, _minimum_backward)


def _minimum_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = min(a, b):  dc/da = 1 where a < b, dc/db = 1 where b < a, 1/2 each at a tie."""
    return _tie_shares(g, raw(a), raw(b), np.greater, need)


def _pairwise(
    input: Tensor, other: Operand, op: str, ufunc: np.ufunc, rule: Callable[..., Grads]
) -> Tensor:
    """The node of a broadcasting two-input function (maximum, minimum)."""
    check_tensor(input, f"{op}: input")
    other = lift(other, input, op)
    return make_node(_elementwise(op, ufunc, input, other), (input, other), op, rule)


def _tie_shares(g: Arr, A: np.ndarray, B: np.ndarray, loses: np.ufunc, need: Need) -> Grads:
    """maximum's and minimum's gradients: none to the side that ``loses`` (np.less for
    maximum), all of g to the other, half to each at a tie."""
    share = g * constant(np.where(A == B, 0.5, 1.0), g)
    return (
        zero_where(loses(A, B), share) if need[0] else None,
        zero_where(loses(B, A), share) if need[1] else None,
    )


def _pow_tensor(a: Tensor, b: Tensor) -> Tensor:
    """a ** b for a Tensor exponent (broadcast); ``Tensor ** Tensor`` and ``2 ** t``."""
    if a.data.dtype == np.bool_ and b.data.dtype == np.bool_:
        raise TypeError("pow: a bool tensor ** a bool tensor is not defined (nor in torch)")
    return make_node(_elementwise("pow", _power, a, b), (a, b), "**", _pow_tensor_backward)


def _power(A: Arr, B: Arr) -> Arr:
    """np.power(A, B), and an integer to a negative integer power as torch gives it where
    NumPy refuses: 1 for a base of 1, 1 or -1 for -1 (an even or odd power), else 0."""
    if A.dtype.kind != "i" or not (B < 0).any():
        return np.power(A, B)
    A, B = np.broadcast_arrays(A, B)
    negative = B < 0
    out = np.power(A, np.where(negative, 0, B))
    one_over = np.where(A == 1, 1, np.where(A == -1, 1 - 2 * (B % 2), 0))
    return np.where(negative, one_over, out).astype(out.dtype, copy=False)


def _pow_tensor_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a ** b:  dc/da = b a^(b-1), dc/db = c ln a. As torch: dc/da = 0 where b = 0, and
    dc/db = 0 where a = 0 and b >= 0 (the limit, where c ln a would be 0 * -inf). The masks
    sit where torch's do (around g b a^(b-1); on c ln a alone), so second derivatives at the
    masked points agree with torch's too."""
    A, B = raw(a), raw(b)
    with np.errstate(divide="ignore", invalid="ignore"):  # the masked cases are exact
        ga = zero_where(B == 0.0, g * (b * a ** (b - 1.0))) if need[0] else None
        gb = g * zero_where((A == 0.0) & (B >= 0.0), out * log(a)) if need[1] else None
    return ga, gb


def _rpow(a: Tensor, other: Operand) -> Tensor:
    """number ** t: the number lifted to a constant of t's dtype."""
    return _pow_tensor(lift(other, a, "**"), a)


# ---------------------------------------------------------------------- comparisons
def _comparison(symbol: str, ufunc: np.ufunc) -> Callable[[Tensor, Any], Any]:
    """The operator ``symbol``: an elementwise comparison giving a boolean Tensor with no
    gradient (a constant), as torch; any other operand is NotImplemented, so ``t == None``
    is False and ``t < 'x'`` a TypeError, as Python's rules give."""

    def compare(a: Tensor, other: Any) -> Any:
        A = a.data
        if isinstance(other, Tensor) or (
            isinstance(other, numbers.Real) and not isinstance(other, bool)
        ):  # compared in the dtype torch promotes the two to
            A, b = promoted(a, lift(other, a, symbol))
        elif isinstance(other, (np.ndarray, numbers.Real)):
            b = other
        else:
            return NotImplemented
        try:
            data = ufunc(A, b)
        except ValueError:
            raise ValueError(
                f"{symbol}: shapes {a.shape} and {np.shape(b)} cannot broadcast"
            ) from None
        return make_node(data, (), "", None)

    compare.__name__ = f"compare{symbol}"
    compare.__doc__ = f"a {symbol} b elementwise: a boolean Tensor with no gradient."
    return compare


# ---------------------------------------------------------------------- masked_fill
def masked_fill(input: Tensor, mask: Any, value: float) -> Tensor:
    """``input`` with the number ``value`` wherever the boolean ``mask`` holds (the two
    broadcast), as ``torch.masked_fill``; ``-inf`` before a softmax removes positions."""
    check_tensor(input, "masked_fill: input")
    cond = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    if cond.dtype != np.bool_:
        raise TypeError(f"masked_fill: mask must be boolean, got dtype {cond.dtype}")
    fill = np.asarray(as_number(value, "masked_fill: value"), dtype=input.dtype)
    try:
        data = np.where(cond, fill, input.data)
    except ValueError:
        raise ValueError(
            f"masked_fill: mask {cond.shape} and input {input.shape} cannot broadcast"
        ) from None
    return make_node(data, (input,), "masked_fill", _masked_fill_backward, cond)


def _masked_fill_backward(g: Arr, out: Arr, mask: np.ndarray, need: Need, a: Arr) -> Grads:
    """c = value where mask, else a:  dc/da = 0 where filled, 1 elsewhere."""
    return (zero_where(mask, g),)


def _invert(a: Tensor) -> Tensor:
    """~a: the logical not of a bool tensor (the bitwise not of an integer one), a constant
    with no gradient, as torch's."""
    if a.data.dtype.kind not in "biu":
        raise TypeError(f"~: defined for bool and integer tensors, got dtype {a.data.dtype}")
    return make_node(np.invert(a.data), (), "", None)


# ---------------------------------------------------------------------- Tensor methods
Tensor.__add__ = _add
Tensor.__radd__ = _radd
Tensor.__sub__ = _sub
Tensor.__rsub__ = _rsub
Tensor.__mul__ = _mul
Tensor.__rmul__ = _rmul
Tensor.__truediv__ = _div
Tensor.__rtruediv__ = _rdiv
Tensor.__mod__ = _remainder
Tensor.__rmod__ = _rremainder
Tensor.__floordiv__ = _floor_divide
Tensor.__rfloordiv__ = _rfloor_divide
Tensor.remainder = _remainder
Tensor.floor_divide = _floor_divide
Tensor.__pow__ = _pow
Tensor.__rpow__ = _rpow
Tensor.__neg__ = _neg
Tensor.__invert__ = _invert
Tensor.__abs__ = _abs
Tensor.__lt__ = _comparison("<", np.less)
Tensor.__le__ = _comparison("<=", np.less_equal)
Tensor.__gt__ = _comparison(">", np.greater)
Tensor.__ge__ = _comparison(">=", np.greater_equal)
Tensor.__eq__ = _comparison("==", np.equal)  # type: ignore[assignment]
Tensor.__ne__ = _comparison("!=", np.not_equal)  # type: ignore[assignment]
Tensor.exp = _exp
Tensor.log = _log
Tensor.tanh = _tanh
Tensor.relu = _relu
Tensor.sigmoid = _sigmoid
Tensor.abs = _abs
Tensor.sqrt = _sqrt
Tensor.sign = _sign
Tensor.sin = _sin
Tensor.cos = _cos
Tensor.log1p = _log1p
Tensor.expm1 = _expm1
Tensor.erf = _erf
Tensor.clamp = _clamp
Tensor.clip = _clamp
Tensor.maximum = maximum
Tensor.minimum = minimum
Tensor.masked_fill = masked_fill
