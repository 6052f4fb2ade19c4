"""The op-building kit: the internal API every tensor op (in this package, in
functional.py, nn_ops.py and new ones) is written with.

``make_node`` (core.py) builds an op's result. A backward rule
``rule(g, out, ctx, need, *inputs)`` returns one gradient per input (None where ``need[i]``
is False or there is none); it is called with ndarrays in the fast first-order pass and
with Tensors under ``backward(create_graph=True)``, so it must compute with operators
(which both types have) and the helpers here, each NumPy on arrays and a Tensor op on
Tensors. ``raw``, ``sum_to`` and ``grad_for`` live in core.py, which the walk needs them in.

The kit's own ops, each forward above its rule:

    op                     forward    rule                d(out)/d(input)
    expand(g, dims, shape) expand     expand_backward    1 (the engine sums back)
    scatter(g, key, ...)   scatter    _scatter_backward   the elements at key
    where(cond, a, b)      where      _where_backward     1 where cond (a), where not (b)
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import numpy as np

from ..checks import describe
from .core import (
    Arr,
    Dims,
    Grads,
    Need,
    Operand,
    Shape,
    Tensor,
    kept_shape,
    lift,
    make_node,
    promoted,
    raw,
)


def sum_dims(x: Arr, dims: Dims, keepdim: bool) -> Arr:
    """``x`` summed over ``dims`` (normalised dims, or None for all)."""
    if isinstance(x, Tensor):
        return x.sum(dims, keepdim=keepdim)
    return np.add.reduce(x, axis=dims, keepdims=keepdim)  # x.sum() without its wrapper


def expand(g: Arr, dims: Dims, shape: Shape) -> Arr:
    """A reduction's gradient ``g`` repeated over the reduced ``dims`` to ``shape``."""
    if not isinstance(g, Tensor):
        full = np.empty(shape, dtype=g.dtype)
        # g broadcasts as it is when every dim was reduced or the reduced ones were kept
        whole = dims is None or g.ndim == len(shape)
        full[...] = g if whole else g.reshape(kept_shape(shape, dims))
        return full
    kept = g.reshape(kept_shape(shape, dims))
    return make_node(np.broadcast_to(kept.data, shape).copy(), (kept,), "expand", expand_backward)


def expand_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """Repeating moves copies of a value: the engine sums the gradient back to a's shape."""
    return (g,)


def swapaxes(x: Arr, d0: int, d1: int) -> Arr:
    return x.transpose(d0, d1) if isinstance(x, Tensor) else np.swapaxes(x, d0, d1)


def permute(x: Arr, order: Shape) -> Arr:
    return x.permute(*order) if isinstance(x, Tensor) else np.transpose(x, order)


def exp(x: Arr) -> Arr:
    return x.exp() if isinstance(x, Tensor) else np.exp(x)


def sigmoid_array(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x) without overflow: with e = e^-|x|, it is 1/(1+e) for x >= 0 and
    e/(1+e) below, so exp never sees a large positive argument."""
    e = np.exp(-np.abs(x))
    s = 1.0 / (1.0 + e)
    return np.where(x >= 0.0, s, e * s)


def sigmoid(x: Arr) -> Arr:
    return x.sigmoid() if isinstance(x, Tensor) else sigmoid_array(x)


def select(mask: np.ndarray, x: Arr | float, y: Arr | float) -> Arr:
    """``x`` where ``mask`` holds, else ``y`` (either may be a number): ``np.where`` on
    arrays, a ``where`` node on Tensors, so the unselected side passes no gradient."""
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        return where(mask, x, y)
    dtype = (x if isinstance(x, np.ndarray) else y).dtype  # type: ignore[union-attr]
    return np.where(mask, x, y).astype(dtype, copy=False)


def zero_where(mask: np.ndarray, g: Arr) -> Arr:
    """``g`` with 0 where ``mask`` holds: a selection, never a product with a 0/1 mask,
    which would turn an inf or nan in ``g`` into nan rather than 0 (torch selects too).

    On an array it selects without branching: ``np.where`` on a mask of random signs (a
    ReLU's) mispredicts a branch per element, several times slower at a batch's size;
    AND-ing g's bits with all ones (kept) or all zeros gives g itself or +0.0, exactly
    what the selection gives."""
    if type(g) is not np.ndarray:
        return select(mask, 0.0, g)
    ints = _SAME_SIZE_INT[g.itemsize]
    keep = np.asarray(mask).astype(ints)
    keep -= 1  # -1 (all ones) where kept, else 0
    into = keep if keep.shape == g.shape else None  # no new array unless g broadcasts
    return np.bitwise_and(g.view(ints), keep, out=into).view(g.dtype)


# by itemsize: the integer type whose bits a float's are viewed as
_SAME_SIZE_INT = {n: np.dtype(f"i{n}") for n in (2, 4, 8)}


def prod_dims(x: Arr, d: int | None, keepdim: bool) -> Arr:
    """The product of ``x`` over dim ``d`` (every element for None)."""
    if isinstance(x, Tensor):
        return x.prod(d, keepdim=keepdim)
    return x.prod(axis=d, keepdims=keepdim)


def zeros_like(x: Arr) -> Arr:
    """Zeros of x's shape: a gradient that is 0 whatever the upstream gradient holds."""
    z = np.zeros_like(raw(x))
    return make_node(z, (), "", None) if isinstance(x, Tensor) else z


def scatter(g: Arr, key: Any, basic: bool, shape: Shape) -> Arr:
    """Zeros of ``shape`` with ``g`` added at ``key`` (an element selected several times by
    an integer array receives the sum: ``np.add.at``, as ``grad[key] += g`` keeps one)."""
    if not isinstance(g, Tensor):
        full = np.zeros(shape, dtype=g.dtype)
        if basic:  # basic indexing never selects an element twice
            full[key] = g
        elif type(key) is np.ndarray and key.dtype.kind in "iu" and key.size:
            add_rows(full, key, g)
        else:
            np.add.at(full, key, g)
        return full
    data = scatter(g.data, key, basic, shape)
    return make_node(data, (g,), "scatter", _scatter_backward, (key, basic))


def add_rows(full: np.ndarray, rows: np.ndarray, g: np.ndarray) -> None:
    """``full[rows[i]] += g[i]`` for every i, a row repeating any number of times (an
    embedding's backward): the rows sorted, each run of equal rows summed by
    ``np.add.reduceat``, several times faster than ``np.add.at``."""
    flat = rows.reshape(-1) % full.shape[0]  # -1 and n-1 are one row
    order = np.argsort(flat, kind="stable")
    flat = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], flat[1:] != flat[:-1])))
    picked = g.reshape(flat.size, *full.shape[1:])[order]
    full[flat[starts]] += np.add.reduceat(picked, starts, axis=0)  # each row once


def _scatter_backward(g: Arr, out: Arr, ctx: tuple[Any, bool], need: Need, a: Arr) -> Grads:
    """c = zeros with a added at key:  dc/da picks the elements at key back out."""
    return (g[ctx[0]],)


# ---------------------------------------------------------------------- more of the kit
def sin(x: Arr) -> Arr:
    return x.sin() if isinstance(x, Tensor) else np.sin(x)


def cos(x: Arr) -> Arr:
    return x.cos() if isinstance(x, Tensor) else np.cos(x)


def tanh(x: Arr) -> Arr:
    return x.tanh() if isinstance(x, Tensor) else np.tanh(x)


def log(x: Arr) -> Arr:
    return x.log() if isinstance(x, Tensor) else np.log(x)


def erf(x: Arr) -> Arr:
    return x.erf() if isinstance(x, Tensor) else erf_array(x)


@functools.cache
def _erf_ufunc() -> Any:
    """SciPy's erf, imported at the first call (it takes about half of a command's start-up);
    SciPy comes with scikit-learn, a dependency, but the engine itself needs NumPy alone."""
    try:
        from scipy.special import erf
    except ImportError:  # test_package runs the engine with SciPy hidden
        return np.vectorize(math.erf, otypes=[np.float64])
    return erf


def erf_array(x: np.ndarray) -> np.ndarray:
    """erf elementwise. NumPy has none: SciPy's ufunc when SciPy is installed (Cephes,
    within an ulp or two, about 20 ns an element), else the C library's erf (``math.erf``)
    on each element (as accurate, about 150 ns an element)."""
    return np.asarray(_erf_ufunc()(x), dtype=x.dtype)


def constant(x: np.ndarray, like: Arr) -> np.ndarray:
    """A mask or factor as an array of ``like``'s dtype, so a float32 gradient stays float32."""
    return np.asarray(x, dtype=raw(like).dtype)


def as_number(x: object, what: str) -> float:
    """A real number (not a bool) as a float, or a TypeError naming ``what``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{what} must be a number, got {describe(x)}")
    return float(x)


def check_kind(a: Tensor, op: str, kinds: str) -> None:
    """Refuse with a TypeError, as torch refuses it, a tensor whose dtype ``op`` is not
    defined for: ``kinds`` holds the NumPy kinds it takes ("f" floats, "iu" integers,
    "b" bool), e.g. gelu "f" and relu "fiu"."""
    if a.data.dtype.kind not in kinds:
        raise TypeError(
            f"{op}: not defined for {a.data.dtype} tensors (nor in torch); convert first, "
            "e.g. x * 1.0"
        )


def size_args(sizes: tuple[Any, ...], op: str) -> tuple[int, ...]:
    """Sizes given as ``f(2, 3)`` or ``f((2, 3))``, checked to be ints."""
    target = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    for n in target:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"{op}: sizes must be ints, got {describe(n)} in {tuple(target)!r}")
    return tuple(int(n) for n in target)


def where(condition: Any, input: Operand, other: Operand) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (all three broadcast), as
    ``torch.where``; ``condition`` is boolean, such as a comparison's result."""
    cond = condition.data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise TypeError(
            f"where: condition must be boolean (a comparison's result), got dtype {cond.dtype}"
        )
    a = lift(input, other, "where")  # numbers in the dtype torch promotes to
    b = lift(other, a, "where")
    try:
        data = np.where(cond, *promoted(a, b))
    except ValueError:
        raise ValueError(
            f"where: condition {cond.shape}, input {a.shape} and other {b.shape} cannot broadcast"
        ) from None
    return make_node(data, (a, b), "where", _where_backward, cond)


def _where_backward(g: Arr, out: Arr, cond: np.ndarray, need: Need, a: Arr, b: Arr) -> Grads:
    """c = cond ? a : b:  dc/da = 1 where cond holds, dc/db = 1 where it does not."""
    return (
        zero_where(~cond, g) if need[0] else None,
        zero_where(cond, g) if need[1] else None,
    )
