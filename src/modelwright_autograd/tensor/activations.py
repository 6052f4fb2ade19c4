"""The activations beyond relu, tanh and sigmoid, as torch.nn.functional's, each forward
directly above its backward rule (kit.py's ``rule(g, out, ctx, need, *inputs)``):

    op                         forward          rule                     d(c)/d(input)
    leaky_relu                 leaky_relu       _leaky_relu_backward     1 or the slope
    softplus                   softplus         _softplus_backward       sigmoid(beta a)
    gelu                       gelu             _gelu_backward           Phi(a) + a phi(a)

GELU is the GPT's costliest step: its float32 form has a fast path (``_gelu_float32``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import threads
from .core import (
    Arr,
    Grads,
    Need,
    Tensor,
    check_tensor,
    make_node,
    raw,
)
from .kit import (
    as_number,
    check_kind,
    constant,
    erf,
    erf_array,
    exp,
    sigmoid,
    tanh,
    zero_where,
)


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, else negative_slope * x (``torch.nn.functional.leaky_relu``)."""
    check_tensor(input, "leaky_relu: input")
    check_kind(input, "leaky_relu", "f")
    slope = as_number(negative_slope, "leaky_relu: negative_slope")
    x = input.data
    data = np.where(x > 0.0, x, x * x.dtype.type(slope))
    return make_node(data, (input,), "leaky_relu", _leaky_relu_backward, slope)


def _leaky_relu_backward(g: Arr, out: Arr, slope: float, need: Need, a: Arr) -> Grads:
    """c = a if a > 0 else s*a:  dc/da = 1 for a > 0, else s (so s at 0, as torch)."""
    return (g * constant(np.where(raw(a) > 0.0, 1.0, slope), g),)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (where the two
    agree to within e^-threshold), as ``torch.nn.functional.softplus``."""
    check_tensor(input, "softplus: input")
    check_kind(input, "softplus", "f")
    b = as_number(beta, "softplus: beta")
    t = as_number(threshold, "softplus: threshold")
    if b == 0.0:
        raise ValueError("softplus: beta must not be 0 (the result divides by it)")
    x = input.data
    bx = x * x.dtype.type(b)
    linear = bx > t
    data = np.where(linear, x, np.log1p(np.exp(np.where(linear, 0.0, bx))) / x.dtype.type(b))
    return make_node(data, (input,), "softplus", _softplus_backward, (b, linear))


def _softplus_backward(
    g: Arr, out: Arr, ctx: tuple[float, np.ndarray], need: Need, a: Arr
) -> Grads:
    """c = log(1 + e^(b a)) / b:  dc/da = sigmoid(b a); 1 in the linear region."""
    b, linear = ctx
    return (g * (zero_where(linear, sigmoid(a * b)) + constant(linear, g)),)


_GELU_K = math.sqrt(2.0 / math.pi)  # the tanh form's scale
_GELU_C = 0.044715  # and its cubic coefficient


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Phi(x), Phi the standard normal CDF 0.5 (1 + erf(x / sqrt 2)), or with
    ``approximate='tanh'`` 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi), as
    ``torch.nn.functional.gelu``."""
    check_tensor(input, "gelu: input")
    check_kind(input, "gelu", "f")
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input.data
    if approximate == "tanh":
        data, saved = _blockwise_forward(_tanh_gelu, x)
    elif x.dtype == np.float32:
        data, saved = _blockwise_forward(_gelu_float32, x)
    else:  # x * (0.5 (1 + erf)): the same bits as 0.5 x (1 + erf), a halving being exact
        saved = erf_array(x * math.sqrt(0.5))
        saved += 1.0  # in place: a fresh array (one temporary per step, not three)
        saved *= 0.5
        data = x * saved
    return make_node(data, (input,), "gelu", _gelu_backward, (approximate, saved))


#: For float32, Phi(x) = (1 + tanh(x S(x^2))) / 2 with S fitted to artanh(erf(x/sqrt 2))/x
#: on [0, 4 sqrt 2] (beyond it Phi rounds to 0 or 1 in float32; the tanh saturates there):
#: S's coefficients of x^0, x^2, x^4, ... (how they were fitted: docs/language-models.md).
_PHI_S = (
    0.7978845994568102,
    0.0363346521285431,
    -3.4438268969966414e-05,
    -5.4439639307709e-05,
    3.772356116858012e-06,
    -1.1098402274029149e-07,
    6.31288955006523e-10,
    2.2477673917140088e-11,
)
_PHI_LIMIT_SQ = np.float32(32.0)  # x^2 is clipped here, at x = 4 sqrt 2


def _gelu_float32(x: np.ndarray, out: np.ndarray, cdf: np.ndarray) -> None:
    """out = x Phi(x) and cdf = Phi(x) of float32 arrays. SciPy's erf is the costliest step
    of a GPT's forward pass; this is nine times faster (0.9 against 8.5 ms on the CPU GPT's
    (768, 512) activations, 1 thread), within 1.8 ulp of Phi for x >= 0 and 4e-7 of the
    GELU (torch's float32 GELU: 1.0 ulp, 2.5e-7; measured over every 16th float32 in
    [-9, 9], tests/test_tensor_ops.py)."""
    coef = [np.float32(c) for c in _PHI_S]
    z = np.multiply(x, x)
    # x^2 clipped, not x: beyond the limit x S(limit^2) only grows, so the tanh stays
    # saturated (the same bits), and one pass is saved
    np.minimum(z, _PHI_LIMIT_SQ, out=z)
    u = np.multiply(z, coef[-1])
    for c in coef[-2:0:-1]:
        u += c
        u *= z
    u += coef[0]
    u *= x
    np.tanh(u, out=cdf)
    cdf += np.float32(1.0)
    cdf *= np.float32(0.5)
    np.multiply(x, cdf, out=out)


def _tanh_gelu(x: np.ndarray, out: np.ndarray, t: np.ndarray) -> None:
    """t = tanh(k (x + 0.044715 x x x)) (kept for the backward, which would otherwise
    compute it again), out = x (0.5 (1 + t)): the same bits as 0.5 x (1 + t), a halving
    being exact."""
    np.multiply(x, _GELU_C, out=t)
    t *= x
    t *= x
    t += x
    t *= _GELU_K
    np.tanh(t, out=t)
    np.add(t, 1.0, out=out)
    out *= 0.5
    out *= x


def _blockwise_forward(rule: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rule(x, out, saved)`` a block at a time (blocks shared among the threads): the
    GELU and what its backward keeps, each a new array of x's shape."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out, saved = np.empty_like(flat), np.empty_like(flat)
    threads.run(lambda i, j: rule(flat[i:j], out[i:j], saved[i:j]), threads.spans(flat.size, 1))
    return out.reshape(x.shape), saved.reshape(x.shape)


def _gelu_backward(g: Arr, out: Arr, ctx: tuple[str, np.ndarray], need: Need, a: Arr) -> Grads:
    """c = a Phi(a):  dc/da = Phi(a) + a phi(a), phi(a) = e^(-a^2/2) / sqrt(2 pi) (Phi
    kept from the forward pass: erf is the costliest ufunc here).
    tanh form, t = tanh(u), u = k(a + 0.044715 a^3) (t kept from the forward pass):
    dc/da = 0.5 (1 + t) + 0.5 a (1 - t^2) k (1 + 3 * 0.044715 a^2)."""
    approximate, saved = ctx  # t for the tanh form, else Phi
    if approximate == "tanh":
        if isinstance(a, Tensor):  # create_graph: t as nodes, so its own derivative counts
            t = tanh((a + a * a * a * _GELU_C) * _GELU_K)
            du = (a * a * (3.0 * _GELU_C) + 1.0) * _GELU_K
            return (g * ((t + 1.0) * 0.5 + a * (1.0 - t * t) * du * 0.5),)
        return (_blockwise(_tanh_gelu_slope, g, a, saved),)
    if isinstance(a, Tensor):  # create_graph: Phi as nodes, so its own derivative counts
        cdf = (erf(a * math.sqrt(0.5)) + 1.0) * 0.5
        pdf = exp(a * a * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
        return (g * (cdf + a * pdf),)
    return (_blockwise(_erf_gelu_slope, g, a, saved),)


def _blockwise(slope: Any, g: np.ndarray, a: np.ndarray, saved: np.ndarray) -> np.ndarray:
    """g * slope(a, saved), in a's dtype, a block at a time (blocks shared among the
    threads): ``slope`` writes dc/da of a block into its first argument."""
    shape = a.shape
    g, a, saved = (np.ascontiguousarray(v).reshape(-1) for v in (g, a, saved))
    d = np.empty(a.shape, a.dtype)

    def slope_block(i: int, j: int) -> None:
        slope(d[i:j], a[i:j], saved[i:j])
        d[i:j] *= g[i:j]

    threads.run(slope_block, threads.spans(d.size, 1))
    return d.reshape(shape)


def _erf_gelu_slope(d: np.ndarray, a: np.ndarray, cdf: np.ndarray) -> None:
    """d = Phi(a) + a phi(a), phi(a) = e^(-a^2/2) / sqrt(2 pi)."""
    np.multiply(a, a, out=d)
    d *= -0.5
    np.exp(d, out=d)
    d *= 1.0 / math.sqrt(2.0 * math.pi)
    d *= a
    d += cdf


def _tanh_gelu_slope(d: np.ndarray, a: np.ndarray, t: np.ndarray) -> None:
    """d = 0.5 (1 + t) + 0.5 a (1 - t^2) k (1 + 3 * 0.044715 a^2)."""
    np.multiply(t, t, out=d)
    np.subtract(1.0, d, out=d)
    d *= a
    du = np.multiply(a, a)
    du *= 3.0 * _GELU_C
    du += 1.0
    du *= _GELU_K
    d *= du
    d *= 0.5
    np.add(t, 1.0, out=du)
    du *= 0.5
    d += du
