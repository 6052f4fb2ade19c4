"""Reductions of the tensor engine (and softmax, a reduction's normalisation), each
forward directly above its backward rule (kit.py), bound as Tensor methods at the end.

    op                   forward              rule                  d(c)/d(a)
    sum                  _sum                 _sum_backward         1 (expand)
    mean                 _mean                _mean_backward        1/N
    amax, max            _amax, _max          _max_backward         1/k at the k maxima
    max(dim), min(dim)   _extreme_or_along    getitem_backward     1 at the index
    amin, min            _amin, _min          _min_backward         1/k at the k minima
    prod                 _prod                _prod_backward        the product of the others
    var                  _var                 _var_backward         2(a - mean)/(N - c)
    std                  _std                 _std_backward         (dvar/da) / (2s)
    logsumexp            _logsumexp           _logsumexp_backward   e^(a - c), the softmax
    argmax, argmin       _argmax, _argmin     (none: indices)
    norm (p = 2, 1, inf) _norm                _norm_backward        a/n, sign a, shared sign
    softmax              _softmax             _softmax_backward     s (g - sum(g s))
    log_softmax          _log_softmax         _log_softmax_backward g - e^c sum(g)
    cumsum (a scan)      cumsum               _cumsum_backward      g's sums from the end
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..checks import describe
from .core import (
    Arr,
    Dims,
    Grads,
    Need,
    Shape,
    Tensor,
    kept_shape,
    make_node,
    raw,
    wrap_dim,
    wrap_dims,
    wrap_one_dim,
)
from .kit import as_number, check_kind, exp, expand, prod_dims, select, sum_dims, zero_where
from .shape import getitem_backward, reshaped


# ---------------------------------------------------------------------- reductions
def _sum(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` (an int, a tuple of ints, or None for every dim)."""
    dims = wrap_dims(dim, a.data.ndim, "sum")
    data = a.data.sum(axis=dims, keepdims=keepdim)
    return make_node(data, (a,), "sum", _sum_backward, dims)


def _sum_backward(g: Arr, out: Arr, dims: Dims, need: Need, a: Arr) -> Grads:
    """c = sum of a over dims:  dc/da = 1 for every summed element."""
    return (expand(g, dims, a.shape),)


def _mean(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` (an int, a tuple of ints, or None for every dim) of a float
    tensor: a bool or integer one is refused, as torch refuses it."""
    if a.data.dtype.kind != "f":
        raise TypeError(
            f"mean: the input must be a float tensor, got dtype {a.data.dtype} (as in torch, "
            "which cannot infer the output dtype); convert it first, t * 1.0"
        )
    dims = wrap_dims(dim, a.data.ndim, "mean")
    count = 1
    for d in range(a.data.ndim) if dims is None else dims:
        count *= a.data.shape[d]
    data = a.data.mean(axis=dims, keepdims=keepdim)
    return make_node(data, (a,), "mean", _mean_backward, (dims, count))


def _mean_backward(g: Arr, out: Arr, ctx: tuple[Dims, int], need: Need, a: Arr) -> Grads:
    """c = (sum of a over dims) / count:  dc/da = 1/count for every averaged element."""
    dims, count = ctx
    return (expand(g / count, dims, a.shape),)


def _amax(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """The largest value over ``dim`` (an int, a tuple, or None for all), values only, as
    ``torch.amax``: tied maxima share the gradient."""
    return _extreme(a, dim, keepdim, "max", _max_backward)


class ValuesIndices(NamedTuple):
    """What ``max(dim)`` and ``min(dim)`` return, as torch's ``torch.return_types.max``:
    the values and their int64 indices along the dim."""

    values: Tensor
    indices: Tensor


def _max(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | ValuesIndices:
    """As ``torch.max``: with no ``dim`` the largest element (a 0-d Tensor, ties sharing the
    gradient); with an int ``dim`` the (values, indices) of the largest along it, the first
    index at a tie, the gradient going to that index alone. ``amax`` is values only."""
    return _extreme_or_along(a, dim, keepdim, "max", _max_backward, np.argmax)


def _extreme_or_along(
    a: Tensor, dim: int | None, keepdim: bool, op: str, rule: Callable[..., Grads], arg: Any
) -> Tensor | ValuesIndices:
    """``max`` or ``min`` (``op``): over everything with ``rule``, or along ``dim``, where
    ``arg`` (np.argmax or np.argmin: the first index at a tie, a nan wins) picks each index
    and the values are read there by an index node."""
    if dim is None:
        if keepdim:
            raise TypeError(
                f"{op}: keepdim needs a dim, as in torch; a{op}(keepdim=True) keeps all"
            )
        return _extreme(a, None, False, op, rule)
    if a.data.ndim == 0:  # torch accepts dim 0 or -1 for a 0-d tensor
        wrap_dim(dim, 0, op, extra=1)  # 0 or -1, the range of a 1-element dim
        return ValuesIndices(reshaped(a, (), op), make_node(np.int64(0), (), "", None))
    d = wrap_dim(dim, a.data.ndim, op)
    try:
        idx = arg(a.data, axis=d, keepdims=keepdim)
    except ValueError:
        raise ValueError(
            f"{op}: cannot take the {op} over an empty dim (shape {a.shape})"
        ) from None
    grids = np.indices(idx.shape, sparse=True)  # an index array for every other dim
    rest = d + 1 if keepdim else d  # where the other dims' grids resume
    key = (*grids[:d], idx, *grids[rest:])
    values = make_node(a.data[key], (a,), op, getitem_backward, (key, False))
    return ValuesIndices(values, make_node(idx.astype(np.int64), (), "", None))


def _extreme(a: Tensor, dim: Any, keepdim: bool, op: str, rule: Callable[..., Grads]) -> Tensor:
    """``max`` or ``min`` (``op``) over ``dim``, or an error naming an empty dim."""
    dims = wrap_dims(dim, a.data.ndim, op)
    try:
        data = getattr(a.data, op)(axis=dims, keepdims=keepdim)
    except ValueError:
        raise ValueError(
            f"{op}: cannot take the {op} over an empty dim (shape {a.shape})"
        ) from None
    return make_node(data, (a,), op, rule, dims)


def _max_backward(g: Arr, out: Arr, dims: Dims, need: Need, a: Arr) -> Grads:
    """c = max of a over dims:  dc/da = 1/k at each of the k elements equal to the max and 0
    elsewhere, so tied maxima share the gradient equally (as ``torch.amax``)."""
    A = raw(a)
    kept = kept_shape(A.shape, dims)
    mask = raw(out).reshape(kept) == A
    ties = mask.sum(axis=dims, keepdims=True, dtype=A.dtype)
    return (mask.astype(A.dtype) * (g.reshape(kept) / ties),)


# ---------------------------------------------------------------------- softmax
def _softmax(a: Tensor, dim: int) -> Tensor:
    """e^x / sum(e^x) along ``dim``, computed as e^(x - max) so no exp can overflow."""
    check_kind(a, "softmax", "f")  # as torch: no softmax of integers or bools
    if a.data.ndim == 0:  # one element, dim 0 or -1 as torch: e^(a - a) = 1, grad 0
        wrap_dim(dim, 1, "softmax")
        return (a - a).exp()
    d = wrap_dim(dim, a.data.ndim, "softmax")
    e = np.exp(a.data - a.data.max(axis=d, keepdims=True))
    e /= e.sum(axis=d, keepdims=True)
    return make_node(e, (a,), "softmax", _softmax_backward, d)


def _softmax_backward(g: Arr, out: Arr, d: int, need: Need, a: Arr) -> Grads:
    """s = softmax(a):  ds_i/da_j = s_i (delta_ij - s_j), so da = s * (g - sum(g * s))."""
    return (out * (g - sum_dims(g * out, (d,), True)),)


def _log_softmax(a: Tensor, dim: int) -> Tensor:
    """x - log(sum(e^x)) along ``dim``, as (x - max) - log(sum(e^(x - max))): stable for
    logits of +-1000, where the naive form gives inf - inf."""
    check_kind(a, "log_softmax", "f")
    if a.data.ndim == 0:  # one element: a - a = 0 (nan for inf or nan, as torch), grad 0
        wrap_dim(dim, 1, "log_softmax")
        return a - a
    d = wrap_dim(dim, a.data.ndim, "log_softmax")
    shifted = a.data - a.data.max(axis=d, keepdims=True)
    data = shifted - np.log(np.exp(shifted).sum(axis=d, keepdims=True))
    return make_node(data, (a,), "log_softmax", _log_softmax_backward, d)


def _log_softmax_backward(g: Arr, out: Arr, d: int, need: Need, a: Arr) -> Grads:
    """c = log_softmax(a):  dc_i/da_j = delta_ij - softmax_j, so da = g - e^c * sum(g)."""
    return (g - exp(out) * sum_dims(g, (d,), True),)


# ---------------------------------------------------------------------- reductions
def _amin(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """The smallest value over ``dim``, values only, as ``torch.amin``."""
    return _extreme(a, dim, keepdim, "min", _min_backward)


def _min(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | ValuesIndices:
    """As ``torch.min``: the smallest element, or (values, indices) along an int ``dim``
    (see ``max``)."""
    return _extreme_or_along(a, dim, keepdim, "min", _min_backward, np.argmin)


def _min_backward(g: Arr, out: Arr, dims: Dims, need: Need, a: Arr) -> Grads:
    """c = min of a over dims:  as for max, 1/k at each of the k elements equal to c."""
    return _max_backward(g, out, dims, need, a)


def _prod(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The product over one ``dim``, or over every element for None (as ``torch.prod``)."""
    d = wrap_one_dim(dim, a.data.ndim, "prod")
    data = a.data.prod(axis=d, keepdims=keepdim)
    return make_node(data, (a,), "prod", _prod_backward, d)


def _prod_backward(g: Arr, out: Arr, d: int | None, need: Need, a: Arr) -> Grads:
    """c = prod of a over dim:  dc/da_i = the product of the other elements, in memory
    linear in the reduced length, as torch: c / a_i where the slice holds no zero; where it
    does, p / a_i times the product of the zeros at a nonzero a_i (p the product of the
    nonzero elements), and at a zero p times the product of the other zeros (1 for a single
    zero, the other one for two, 0 for more). The zeros stay variables (selected, not
    constants), so the rule differentiates again exactly to second order (docs/tensor-ops.md)."""
    A = raw(a)
    kept = kept_shape(A.shape, None if d is None else (d,))
    gk = g.reshape(kept)
    zero = A == 0.0
    if not zero.any():
        return (gk * (out.reshape(kept) / a),)
    count = np.broadcast_to(zero.sum(axis=d, keepdims=True), A.shape)
    nonzeros = select(zero, 1.0, a)
    zeros = select(zero, a, 1.0)
    p = prod_dims(nonzeros, d, True)
    at_nonzero = p / nonzeros * prod_dims(zeros, d, True)
    other_zero = sum_dims(select(zero, a, 0.0), None if d is None else (d,), True) - a
    at_zero = p * select(count == 1, 1.0, select(count == 2, other_zero, 0.0))
    return (gk * select(zero, at_zero, at_nonzero),)


def _correction(unbiased: bool | None, correction: float | None, op: str) -> float:
    """The number subtracted from the count: ``correction``, or 1/0 for ``unbiased``
    True/False, default 1 (Bessel's correction), as torch."""
    if unbiased is not None and correction is not None:
        raise ValueError(f"{op}: give unbiased or correction, not both")
    if correction is not None:
        return as_number(correction, f"{op}: correction")
    if unbiased is None:
        return 1.0
    if not isinstance(unbiased, bool):
        raise TypeError(f"{op}: unbiased must be a bool, got {describe(unbiased)}")
    return 1.0 if unbiased else 0.0


def _var(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    """sum((x - mean)^2) / (N - correction) over ``dim`` (N elements), as ``torch.var``:
    correction 1 by default (unbiased), 0 for the population variance."""
    ctx, data = _variance(a, dim, unbiased, keepdim, correction, "var")
    return make_node(data, (a,), "var", _var_backward, ctx)


def _std(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    """The square root of ``var`` (same arguments), as ``torch.std``."""
    ctx, data = _variance(a, dim, unbiased, keepdim, correction, "std")
    return make_node(np.sqrt(data), (a,), "std", _std_backward, ctx)


def _variance(
    a: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any, op: str
) -> tuple[tuple[Dims, int, float], np.ndarray]:
    """var's and std's checked arguments (dims, N, correction) and the variance's array."""
    dims = wrap_dims(dim, a.data.ndim, op)
    c = _correction(unbiased, correction, op)
    count = math.prod(_reduced_sizes(a.data.shape, dims))
    with np.errstate(divide="ignore", invalid="ignore"):
        data = _var_array(a.data, dims, count, c, keepdim)
    return (dims, count, c), data


def _reduced_sizes(shape: Shape, dims: Dims) -> list[int]:
    return [n for i, n in enumerate(shape) if dims is None or i in dims]


def _var_array(x: np.ndarray, dims: Dims, count: int, c: float, keepdim: bool) -> np.ndarray:
    """The variance on arrays, dividing by max(N - c, 0) as torch (so 0/0 = nan when
    N <= c), without NumPy's degrees-of-freedom warning."""
    centred = x - x.mean(axis=dims, keepdims=True) if count else x
    ss = (centred * centred).sum(axis=dims, keepdims=keepdim)
    return ss / x.dtype.type(max(count - c, 0.0))


def _var_backward(g: Arr, out: Arr, ctx: tuple[Dims, int, float], need: Need, a: Arr) -> Grads:
    """v = sum((a - mean)^2) / (N - c):  dv/da = 2 (a - mean) / (N - c) (the mean's own
    dependence on a sums to zero against a - mean)."""
    return (_var_grad(g, a, *ctx),)


def _var_grad(g: Arr, a: Arr, dims: Dims, count: int, c: float) -> Arr:
    kept = kept_shape(raw(a).shape, dims)
    centred = a - sum_dims(a, dims, True) * (1.0 / max(count, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.float64(2.0) / np.float64(max(count - c, 0.0))
    return g.reshape(kept) * (centred * float(scale))


def _std_backward(g: Arr, out: Arr, ctx: tuple[Dims, int, float], need: Need, a: Arr) -> Grads:
    """s = sqrt(v):  ds/da = (dv/da) / (2s), taken as 0 where s = 0 (as torch)."""
    kept = kept_shape(raw(a).shape, ctx[0])
    s = out.reshape(kept)
    with np.errstate(divide="ignore", invalid="ignore"):
        gv = zero_where(raw(s) == 0.0, g.reshape(kept) / (s * 2.0))
    return (_var_grad(gv, a, *ctx),)


def _logsumexp(a: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """log(sum(e^x)) over ``dim`` (required, as torch), as m + log(sum(e^(x - m))) with m
    the max, so no exp overflows; an infinite max is left out of the shift, as torch."""
    if dim is None:
        raise TypeError("logsumexp: dim is required (an int or a tuple of ints), as in torch")
    dims = wrap_dims(dim, a.data.ndim, "logsumexp")
    x = a.data
    m = x.max(axis=dims, keepdims=True, initial=-np.inf)
    m = np.where(np.isinf(m), 0.0, m).astype(x.dtype)
    with np.errstate(divide="ignore"):
        data = np.log(np.exp(x - m).sum(axis=dims, keepdims=True)) + m
    if not keepdim:
        data = data.reshape(() if dims is None else _reduced_shape(x.shape, dims))
    return make_node(data, (a,), "logsumexp", _logsumexp_backward, dims)


def _reduced_shape(shape: Shape, dims: tuple[int, ...]) -> Shape:
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def _logsumexp_backward(g: Arr, out: Arr, dims: tuple[int, ...], need: Need, a: Arr) -> Grads:
    """c = log(sum(e^a)):  dc/da = e^a / sum(e^a) = e^(a - c), the softmax."""
    kept = kept_shape(raw(a).shape, dims)
    return (g.reshape(kept) * exp(a - out.reshape(kept)),)


def _argmax(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest value (the first one at a tie, as torch) over ``dim``, or
    into the flattened tensor for None: an int64 Tensor with no gradient."""
    return _arg_extreme(a, dim, keepdim, "argmax", np.argmax)


def _argmin(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the smallest value, as ``argmax``."""
    return _arg_extreme(a, dim, keepdim, "argmin", np.argmin)


def _arg_extreme(a: Tensor, dim: int | None, keepdim: bool, op: str, fn: Any) -> Tensor:
    d = wrap_one_dim(dim, a.data.ndim, op)
    try:
        data = fn(a.data, axis=d, keepdims=keepdim)
    except ValueError:
        raise ValueError(f"{op}: no elements to choose from (shape {a.shape}, dim {dim})") from None
    return make_node(np.asarray(data, dtype=np.int64), (), "", None)


def _norm(
    a: Tensor,
    p: float | str = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
) -> Tensor:
    """The vector p-norm over ``dim`` (every element for None): p = 2 (also 'fro', the
    default in torch), 1 (sum of |x|) or inf (max |x|), as ``torch.norm``."""
    order = 2.0 if p == "fro" else p
    if isinstance(order, bool) or order not in (1, 2, math.inf):
        raise ValueError(f"norm: p must be 1, 2, 'fro' or inf, got {p!r}")
    dims = wrap_dims(dim, a.data.ndim, "norm")
    x = a.data
    if order == 2:
        data = np.sqrt((x * x).sum(axis=dims, keepdims=keepdim))
    elif order == 1:
        data = np.abs(x).sum(axis=dims, keepdims=keepdim)
    else:
        try:
            data = np.abs(x).max(axis=dims, keepdims=keepdim)
        except ValueError:
            raise ValueError(
                f"norm: the inf-norm over an empty dim is undefined (shape {a.shape})"
            ) from None
    return make_node(data, (a,), "norm", _norm_backward, (float(order), dims))


def _norm_backward(g: Arr, out: Arr, ctx: tuple[float, Dims], need: Need, a: Arr) -> Grads:
    """n = ||a||_p:  p=2: dn/da = a / n (0 where n = 0, as torch); p=1: sign(a);
    p=inf: sign(a) shared equally among the k elements with |a| = n (nan counts as one)."""
    p, dims = ctx
    kept = kept_shape(raw(a).shape, dims)
    gk, n, A = g.reshape(kept), out.reshape(kept), raw(a)
    if p == 1.0:
        return (gk * np.sign(A),)
    if p == 2.0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return (a * zero_where(raw(n) == 0.0, gk / n),)
    top = (np.abs(A) == raw(n)) | np.isnan(A)
    count = top.sum(axis=dims, keepdims=True, dtype=A.dtype)
    return (gk * (np.sign(A) * top / count),)


# ---------------------------------------------------------------------- running sums
def cumsum(input: Tensor, dim: int) -> Tensor:
    """Running sums along ``dim``, as ``torch.cumsum``: c_i = a_0 + ... + a_i."""
    if input.ndim == 0:
        wrap_dim(dim, 0, "cumsum", extra=1)  # 0 or -1, the range of a 1-element dim
        return make_node(input.data.copy(), (input,), "cumsum", _cumsum_backward, None)
    d = wrap_dim(dim, input.ndim, "cumsum")
    return make_node(np.cumsum(input.data, axis=d), (input,), "cumsum", _cumsum_backward, d)


def _cumsum_backward(g: Arr, out: Arr, d: int | None, need: Need, a: Arr) -> Grads:
    """c_i = sum_{j<=i} a_j along d:  dc_i/da_j = 1 for every i >= j, so da_j is the sum of
    g_i over i >= j, the running sum of g taken from the end (flip, cumsum, flip)."""
    if d is None:
        return (g,)
    if isinstance(g, Tensor):
        return (g.flip(d).cumsum(d).flip(d),)
    return (np.flip(np.cumsum(np.flip(g, d), axis=d), d),)


# ---------------------------------------------------------------------- Tensor methods
Tensor.sum = _sum
Tensor.mean = _mean
Tensor.max = _max
Tensor.amax = _amax
Tensor.min = _min
Tensor.amin = _amin
Tensor.prod = _prod
Tensor.var = _var
Tensor.std = _std
Tensor.logsumexp = _logsumexp
Tensor.argmax = _argmax
Tensor.argmin = _argmin
Tensor.norm = _norm
Tensor.softmax = _softmax
Tensor.log_softmax = _log_softmax
Tensor.cumsum = cumsum
