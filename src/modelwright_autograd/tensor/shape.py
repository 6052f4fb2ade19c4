"""Shape and indexing ops of the tensor engine, each forward directly above its backward
rule (kit.py), bound as Tensor methods at the end. None changes a value (tril and triu
keep a triangle and zero the rest); each rule moves the gradient back to where its value
came from.

    op                            forward                rule                  gradient
    reshape, squeeze, unsqueeze,  _reshape, reshaped    _reshape_backward     reshaped back
      flatten
    transpose, permute, T         _transpose, _permute   _transpose/_permute   dims put back
    t[key]                        _getitem               getitem_backward     scattered (added)
    cat, stack                    cat, stack             _cat/_stack_backward  each its slice
    expand                        _expand_to             expand_backward      summed back
    flip                          _flip                  _basic_index_backward flipped back
    repeat                        _repeat                _repeat_backward      copies summed
    split, chunk                  _split, _chunk         (index nodes)
    pad                           pad                    _pad_backward         the inside
    tril, triu                    tril, triu             _triangle_backward    the triangle
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import describe, positive_int
from .core import (
    ADD_INTO,
    Arr,
    Grads,
    Need,
    Shape,
    Tensor,
    check_tensor,
    make_node,
    raw,
    wrap_dim,
    wrap_dims,
)
from .kit import (
    add_rows,
    as_number,
    expand_backward,
    permute,
    scatter,
    size_args,
    sum_dims,
    swapaxes,
    zero_where,
)


# ---------------------------------------------------------------------- shape operations
def _reshape(a: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """The same elements in a new shape: ``t.reshape(2, 3)`` or ``t.reshape((2, -1))``."""
    target = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    for n in target:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"reshape: sizes must be ints, got {describe(n)} in {target!r}")
    try:
        data = a.data.reshape(target)
    except ValueError:
        raise ValueError(
            f"reshape: cannot reshape {a.shape} ({a.data.size} elements) into {tuple(target)}"
        ) from None
    return make_node(data, (a,), "reshape", _reshape_backward)


def _reshape_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """Reshaping moves no values: the gradient is reshaped back."""
    return (g.reshape(a.shape),)


def _transpose(a: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    d0 = wrap_dim(dim0, a.data.ndim, "transpose")
    d1 = wrap_dim(dim1, a.data.ndim, "transpose")
    return make_node(np.swapaxes(a.data, d0, d1), (a,), "transpose", _transpose_backward, (d0, d1))


def _transpose_backward(g: Arr, out: Arr, ctx: tuple[int, int], need: Need, a: Arr) -> Grads:
    """Swapping dims moves values: swap the gradient's dims back."""
    return (swapaxes(g, *ctx),)


def _permute(a: Tensor, *dims: int) -> Tensor:
    """Reorder the dims: result dim i is input dim ``dims[i]``."""
    order = tuple(wrap_dim(d, a.data.ndim, "permute") for d in dims)
    if sorted(order) != list(range(a.data.ndim)):
        raise ValueError(
            f"permute: {dims!r} is not an ordering of the {a.data.ndim} dims of {a.shape}"
        )
    return make_node(np.transpose(a.data, order), (a,), "permute", _permute_backward, order)


def _permute_backward(g: Arr, out: Arr, order: Shape, need: Need, a: Arr) -> Grads:
    """Undo the permutation on the gradient with the inverse ordering."""
    return (permute(g, tuple(int(i) for i in np.argsort(order))),)


def _T(a: Tensor) -> Tensor:
    """The dims reversed: the matrix transpose for a 2-D tensor."""
    return _permute(a, *reversed(range(a.data.ndim)))


def _index_key(key: Any) -> tuple[Any, bool]:
    """Check an index and report whether it is basic (ints, slices, None, ...) only."""
    parts = key if isinstance(key, tuple) else (key,)
    fixed = []
    basic = True
    for k in parts:
        if isinstance(k, Tensor):
            raise TypeError(
                "index: a Tensor holds floats and cannot be an index; index with ints, "
                "slices or an integer NumPy array"
            )
        if isinstance(k, list):
            k = np.asarray(k)
        elif isinstance(k, np.ndarray):
            k = k.copy()  # kept for the backward: a caller refilling theirs cannot move it
        if not (
            k is None
            or k is Ellipsis
            or isinstance(k, slice)
            or (isinstance(k, numbers.Integral) and not isinstance(k, bool))
        ):
            basic = False
        fixed.append(k)
    return (tuple(fixed) if isinstance(key, tuple) else fixed[0]), basic


def _getitem(a: Tensor, key: Any) -> Tensor:
    """NumPy indexing: ints, slices, None, ``...`` and integer arrays (repeats allowed)."""
    if type(key) is np.ndarray:  # a mini-batch's rows: nothing for _index_key to check
        key, basic = key.copy(), False  # (a copy, as _index_key makes)
    else:
        key, basic = _index_key(key)
    try:
        data = a.data[key]
    except IndexError as e:
        raise IndexError(f"index: {e} (tensor shape {a.shape})") from None
    return make_node(data, (a,), "index", getitem_backward, (key, basic))


def getitem_backward(g: Arr, out: Arr, ctx: tuple[Any, bool], need: Need, a: Arr) -> Grads:
    """c = a[key]:  each selected element of a receives its element of dc; an element
    selected several times by an integer array receives the sum."""
    key, basic = ctx
    return (scatter(g, key, basic, a.shape),)


def _getitem_add_into(grad: np.ndarray, g: np.ndarray, ctx: tuple[Any, bool]) -> None:
    """The same rule, added into a gradient ``a`` already owns (the walk's ADD_INTO)."""
    key, basic = ctx
    if basic:  # each selected element once
        grad[key] += g
    elif type(key) is np.ndarray and key.dtype.kind in "iu" and key.size:
        add_rows(grad, key, g)
    else:
        np.add.at(grad, key, g)


ADD_INTO[getitem_backward] = _getitem_add_into


def _tensor_list(tensors: object, op: str) -> tuple[Tensor, ...]:
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError(f"{op}: expected a non-empty list of Tensors, got {describe(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: item {i} is not a Tensor: {describe(t)}")
    return tuple(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim; their shapes must match in every other dim."""
    ts = _tensor_list(tensors, "cat")
    first = ts[0].shape
    if not first:
        raise ValueError("cat: 0-d tensors have no dim to join along; use stack()")
    d = wrap_dim(dim, len(first), "cat")
    for i, t in enumerate(ts):
        s = t.shape
        if len(s) != len(first) or s[:d] + s[d + 1 :] != first[:d] + first[d + 1 :]:
            raise ValueError(
                f"cat: tensor {i} has shape {s} but tensor 0 has shape {first}; "
                f"shapes must match except in dim {d}"
            )
    data = np.concatenate([t.data for t in ts], axis=d)
    offsets = np.cumsum([t.data.shape[d] for t in ts])[:-1]
    return make_node(data, ts, "cat", _cat_backward, (d, offsets))


def _cat_backward(g: Arr, out: Arr, ctx: tuple[int, Any], need: Need, *ts: Arr) -> Grads:
    """Each input receives the slice of the gradient where its values went."""
    d, offsets = ctx
    bounds = [0, *(int(o) for o in offsets), g.shape[d]]
    lead = (slice(None),) * d
    return tuple(
        g[(*lead, slice(lo, hi))] if n else None for lo, hi, n in zip(bounds[:-1], bounds[1:], need)
    )


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim ``dim``."""
    ts = _tensor_list(tensors, "stack")
    first = ts[0].shape
    for i, t in enumerate(ts):
        if t.shape != first:
            raise ValueError(
                f"stack: tensor {i} has shape {t.shape} but tensor 0 has shape {first}"
            )
    d = wrap_dim(dim, len(first), "stack", extra=1)
    return make_node(np.stack([t.data for t in ts], axis=d), ts, "stack", _stack_backward, d)


def _stack_backward(g: Arr, out: Arr, d: int, need: Need, *ts: Arr) -> Grads:
    """Input i receives index i of the gradient along the stacked dim."""
    lead = (slice(None),) * d
    return tuple(g[(*lead, i)] if n else None for i, n in enumerate(need))


# ---------------------------------------------------------------------- shape operations
def reshaped(a: Tensor, shape: Shape, op: str) -> Tensor:
    """``a``'s elements in ``shape``, a node whose rule is reshape's."""
    return make_node(a.data.reshape(shape), (a,), op, _reshape_backward)


def _squeeze(a: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Drop size-1 dims: all of them, or those among ``dim`` (others are kept, as torch)."""
    dims = wrap_dims(dim, a.data.ndim, "squeeze")
    shape = a.data.shape
    kept = [n for i, n in enumerate(shape) if n != 1 or (dims is not None and i not in dims)]
    return reshaped(a, tuple(kept), "squeeze")


def _unsqueeze(a: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (-ndim-1 to ndim)."""
    d = wrap_dim(dim, a.data.ndim, "unsqueeze", extra=1)
    shape = a.data.shape
    return reshaped(a, (*shape[:d], 1, *shape[d:]), "unsqueeze")


def _flatten(a: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one (a 0-d tensor becomes shape (1,), as torch)."""
    shape = a.data.shape
    if not shape:
        return reshaped(a, (1,), "flatten")
    s = wrap_dim(start_dim, len(shape), "flatten")
    e = wrap_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise ValueError(
            f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (shape {a.shape})"
        )
    return reshaped(a, (*shape[:s], math.prod(shape[s : e + 1]), *shape[e + 1 :]), "flatten")


def _expand_to(a: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """``a`` repeated along its size-1 dims (and new leading dims) to ``sizes``, as
    ``torch.Tensor.expand``: -1 keeps a dim's size; the result is a read-only view."""
    target = size_args(sizes, "expand")
    shape = a.data.shape
    lead = len(target) - len(shape)
    if lead < 0:
        raise ValueError(
            f"expand: {len(target)} sizes {target} for a tensor of shape {shape}; give at "
            f"least {len(shape)}"
        )
    full = []
    for i, n in enumerate(target):
        old = shape[i - lead] if i >= lead else None
        if n == -1 and old is not None:
            n = old
        if n < 0 or (old is not None and old != 1 and n != old):
            raise ValueError(
                f"expand: cannot expand shape {shape} to {target} (dim {i}: size {n}); only "
                "size-1 dims grow, and -1 keeps an existing dim"
            )
        full.append(n)
    return make_node(np.broadcast_to(a.data, tuple(full)), (a,), "expand", expand_backward)


def _flip(a: Tensor, dims: int | Sequence[int]) -> Tensor:
    """Reverse the order of elements along ``dims``."""
    ds = wrap_dims(dims, a.data.ndim, "flip") or ()
    key = tuple(slice(None, None, -1) if i in ds else slice(None) for i in range(a.data.ndim))
    return make_node(a.data[key], (a,), "flip", _basic_index_backward, key)


def _basic_index_backward(g: Arr, out: Arr, key: tuple[slice, ...], need: Need, a: Arr) -> Grads:
    """flip moves a's elements one to one: reading the gradient at ``key`` (the reversal)
    gives each element of a its own."""
    return (g[key],)


def _repeat(a: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """Tile ``a``: dim i repeated sizes[i] times (extra leading sizes add dims), as
    ``torch.Tensor.repeat``."""
    reps = size_args(sizes, "repeat")
    if len(reps) < a.data.ndim or any(r < 0 for r in reps):
        raise ValueError(
            f"repeat: repeat counts {reps} for a tensor of shape {a.shape}: give at least "
            f"{a.data.ndim}, none negative"
        )
    return make_node(np.tile(a.data, reps), (a,), "repeat", _repeat_backward, reps)


def _repeat_backward(g: Arr, out: Arr, reps: Shape, need: Need, a: Arr) -> Grads:
    """c = a tiled:  each element of a receives the sum of its copies' gradients (dim i of
    c, of size r*s, is read as (r, s) and the r copies summed)."""
    shape = raw(a).shape
    padded = (1,) * (len(reps) - len(shape)) + shape
    split = tuple(n for r, s in zip(reps, padded) for n in (r, s))
    summed = sum_dims(g.reshape(split), tuple(range(0, len(split), 2)), False)
    return (summed.reshape(shape),)


def _split(
    a: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0
) -> tuple[Tensor, ...]:
    """Pieces of ``a`` along ``dim``: of ``split_size`` each (the last may be smaller), or of
    the listed sizes, as ``torch.split``. Each piece is an index node."""
    d = wrap_dim(dim, a.data.ndim, "split")
    n = a.data.shape[d]
    s = split_size_or_sections
    if isinstance(s, (list, tuple)):
        sizes = list(size_args((s,), "split"))
        if sum(sizes) != n or any(k < 0 for k in sizes):
            raise ValueError(
                f"split: sections {tuple(sizes)} must be non-negative and sum to {n}, the "
                f"size of dim {d} of {a.shape}"
            )
    else:
        size = size_args((s,), "split")[0]
        if size <= 0 and n > 0:
            raise ValueError(f"split: split_size must be at least 1, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if n else [0]
    lead = (slice(None),) * d
    bounds = [0, *itertools.accumulate(sizes)]
    return tuple(a[(*lead, slice(lo, hi))] for lo, hi in itertools.pairwise(bounds))


def _chunk(a: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunks`` pieces along ``dim`` of ceil(n / chunks) each (so perhaps fewer pieces),
    as ``torch.chunk``."""
    k = positive_int(chunks, "chunk: chunks")
    n = a.data.shape[wrap_dim(dim, a.data.ndim, "chunk")]
    if n == 0:
        return _split(a, [0] * k, dim)
    return _split(a, -(-n // k), dim)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Tensor:
    """``input`` with ``value`` added around it, as ``torch.nn.functional.pad``: ``pad``
    lists (before, after) pairs from the last dim backwards, (left, right, top, bottom)
    for the last two dims. A negative width crops that side instead. Constant mode."""
    check_tensor(input, "pad: input")
    if mode != "constant":
        raise ValueError(f"pad: only mode='constant' is supported, got {mode!r}")
    widths = size_args((pad,), "pad")
    shape = input.data.shape
    if len(widths) % 2 or len(widths) // 2 > len(shape):
        raise ValueError(
            f"pad: {widths} must be (before, after) pairs, at most {len(shape)} of them for "
            f"shape {input.shape}"
        )
    v = as_number(value, "pad: value")
    pairs = [(0, 0)] * (len(shape) - len(widths) // 2)
    pairs += [(widths[i], widths[i + 1]) for i in range(len(widths) - 2, -1, -2)]
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pairs, shape))
    for d, ((lo, hi), n) in enumerate(zip(pairs, shape)):
        if max(-lo, 0) + max(-hi, 0) > n:
            raise ValueError(
                f"pad: {widths} crops {max(-lo, 0) + max(-hi, 0)} from dim {d} of shape "
                f"{input.shape}, which has only {n}"
            )
    kept = input.data[crop]
    data = np.pad(kept, [(max(lo, 0), max(hi, 0)) for lo, hi in pairs], constant_values=v)
    inner = tuple(slice(max(lo, 0), max(lo, 0) + n) for (lo, _), n in zip(pairs, kept.shape))
    cropped = None if kept.shape == shape else crop
    return make_node(data, (input,), "pad", _pad_backward, (inner, cropped))


def _pad_backward(
    g: Arr, out: Arr, ctx: tuple[tuple[slice, ...], Any], need: Need, a: Arr
) -> Grads:
    """pad moves a's kept elements one to one: each reads its gradient at its place inside
    the border (``inner``); elements a negative width cropped away get 0."""
    inner, cropped = ctx
    if cropped is None:
        return (g[inner],)
    return (scatter(g[inner], cropped, True, raw(a).shape),)


# ---------------------------------------------------------------------- triangles
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims, the rest 0, as ``torch.tril``: element
    (i, j) is kept where j - i <= ``diagonal`` (0: the main diagonal and below)."""
    return _triangle(input, diagonal, "tril")


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims, the rest 0, as ``torch.triu``: element
    (i, j) is kept where j - i >= ``diagonal``."""
    return _triangle(input, diagonal, "triu")


def _triangle(a: Tensor, diagonal: int, op: str) -> Tensor:
    check_tensor(a, f"{op}: input")
    if a.ndim < 2:
        raise ValueError(f"{op}: input must have at least 2 dims, got shape {a.shape}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, numbers.Integral):
        raise TypeError(f"{op}: diagonal must be an int, got {describe(diagonal)}")
    rows, cols = a.shape[-2:]
    keep = np.tri(rows, cols, int(diagonal), dtype=bool)  # j - i <= diagonal
    if op == "triu":
        keep = ~np.tri(rows, cols, int(diagonal) - 1, dtype=bool)  # j - i >= diagonal
    data = np.where(keep, a.data, np.zeros((), a.dtype))  # a nan outside becomes 0, as torch
    return make_node(data, (a,), op, _triangle_backward, keep)


def _triangle_backward(g: Arr, out: Arr, keep: np.ndarray, need: Need, a: Arr) -> Grads:
    """c = a inside the triangle, 0 outside:  dc/da = 1 inside, 0 outside."""
    return (zero_where(~keep, g),)


# ---------------------------------------------------------------------- Tensor methods
Tensor.__getitem__ = _getitem
Tensor.reshape = _reshape
Tensor.transpose = _transpose
Tensor.permute = _permute
Tensor.T = property(_T)
Tensor.squeeze = _squeeze
Tensor.unsqueeze = _unsqueeze
Tensor.flatten = _flatten
Tensor.expand = _expand_to
Tensor.flip = _flip
Tensor.repeat = _repeat
Tensor.split = _split
Tensor.chunk = _chunk
Tensor.tril = tril
Tensor.triu = triu
