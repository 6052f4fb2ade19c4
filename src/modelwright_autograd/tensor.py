"""The tensor engine: ``Tensor`` wraps a NumPy array and remembers how it was made.

It mirrors the scalar engine (engine.py): each op is a forward function directly above its
backward rule ``rule(g, out, ctx, need, *inputs)``, written with the op-building kit
below so that it serves both the fast pass (arrays) and ``backward(create_graph=True)``
(Tensors). docs/design.md explains the design, dtypes and speed.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np

from .checks import describe
from .graph import _GradMode, topological_order

Operand = Union["Tensor", np.ndarray, float, int]
Shape = tuple[int, ...]

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_new = object.__new__


# ---------------------------------------------------------------------- input checking
def _to_array(data: object, where: str, dtype: Any = None) -> np.ndarray:
    """A new float ndarray holding ``data``, or a TypeError naming what was given.

    The result never shares memory with ``data``: a parameter built from a caller's
    array must not change that array when an optimiser updates it in place.
    """
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype not in _FLOAT_DTYPES:
            raise TypeError(f"{where}: dtype must be float32 or float64, got {dtype}")
    if isinstance(data, Tensor):
        arr = data.data
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)
    elif isinstance(data, (list, tuple)) or (
        isinstance(data, numbers.Real) and not isinstance(data, bool)
    ):
        try:
            arr = np.asarray(data)
        except ValueError:  # NumPy's complaint about ragged nested lists
            raise ValueError(
                f"{where}: nested lists must be rectangular (every row the same length), "
                f"got {describe(data)}"
            ) from None
        if dtype is None and arr.dtype.kind in "fiu":
            dtype = np.dtype(np.float64)  # lists and Python numbers are float64
    else:
        raise TypeError(
            f"{where} needs real numbers (a number, nested lists of numbers or a NumPy "
            f"array), got {describe(data)}"
        )
    if arr.dtype.kind not in "fiu":
        raise TypeError(
            f"{where} needs real numbers, got {describe(data)} (NumPy dtype {arr.dtype})"
        )
    if dtype is None:
        dtype = arr.dtype if arr.dtype in _FLOAT_DTYPES else np.dtype(np.float64)
    return np.array(arr, dtype=dtype, copy=True)


def _check_tensor(x: object, where: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{where} must be a Tensor, got {describe(x)}")
    return x


def _lift(x: Operand, like: Tensor, op: str) -> Tensor:
    """x as a Tensor: Tensors pass through, NumPy arrays become constants, and a number
    becomes a constant of ``like``'s dtype (so float32 * 0.5 stays float32, as in torch)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return make_node(np.asarray(x, dtype=like.data.dtype), (), "", None)
    if isinstance(x, np.ndarray):
        return make_node(_to_array(x, f"{op} operand"), (), "", None)
    raise TypeError(f"unsupported operand for {op}: Tensor and {describe(x)}")


def _dim(d: object, ndim: int, op: str, extra: int = 0) -> int:
    """Normalise one dim (negative counts from the end) or raise naming dim and ndim.

    ``extra=1`` lets the dim name a new position one past the end (for ``stack``).
    """
    if isinstance(d, bool) or not isinstance(d, numbers.Integral):
        raise TypeError(f"{op}: dim must be an int, got {describe(d)}")
    n = ndim + extra
    if not -n <= d < n:
        valid = f"valid dims are {-n} to {n - 1}" if n else "it has no dims"
        raise IndexError(f"{op}: dim {d} is out of range for a tensor with ndim {ndim} ({valid})")
    return int(d) % n


def _dims(dim: int | Sequence[int] | None, ndim: int, op: str) -> tuple[int, ...] | None:
    """Normalise ``dim`` for a reduction: None (every dim), an int, or a tuple of ints."""
    if dim is None:
        return None
    items = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not items:
        raise ValueError(f"{op}: dim=() names no dims; use dim=None to reduce over all of them")
    dims = tuple(_dim(d, ndim, op) for d in items)
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim {dim!r} names the same dim twice (ndim {ndim})")
    return dims


# ---------------------------------------------------------------------- graph plumbing
def make_node(
    data: Any,
    prev: tuple[Tensor, ...],
    op: str,
    backward: Callable[[Tensor], None] | None,
    ctx: Any = None,
) -> Tensor:
    """The output node of an op, built without the public constructor's checks.

    It records ``(prev, op, backward, ctx)`` only if grad mode is on and some input
    requires grad; otherwise it is a constant with no history.
    """
    if type(data) is not np.ndarray:  # ufuncs turn 0-d arrays into NumPy scalars
        data = np.asarray(data)
    out = _new(Tensor)
    out.data = data
    out.grad = None
    out.label = ""
    if _GradMode.enabled:
        for p in prev:
            if p.requires_grad:
                out.requires_grad = True
                out._prev = prev
                out._op = op
                out._backward = backward
                out._ctx = ctx
                return out
    out.requires_grad = False
    out._prev = ()
    out._op = ""
    out._backward = None
    out._ctx = None
    return out


def _unbroadcast(grad: np.ndarray, shape: Shape) -> np.ndarray:
    """Sum ``grad``, shaped like a broadcast result, back down to an input's ``shape``.

    Broadcasting repeats an input along the leading dims it lacks and along its size-1
    axes; each repeat's gradient is added back. Returns ``grad`` itself when no summing is
    needed, else a new array.
    """
    if grad.shape == shape:
        return grad
    return grad.sum(axis=_broadcast_axes(grad.shape, shape), keepdims=True).reshape(shape)


def _broadcast_axes(big: Shape, shape: Shape) -> tuple[int, ...]:
    """The axes of ``big`` along which an input of ``shape`` was repeated by broadcasting."""
    lead = len(big) - len(shape)
    return tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and big[lead + i] != 1
    )


def _kept_shape(shape: Shape, dims: tuple[int, ...] | None) -> Shape:
    """The shape a reduction over ``dims`` has with keepdim=True: 1 at each reduced dim."""
    return tuple(1 if dims is None or i in dims else n for i, n in enumerate(shape))


# ---------------------------------------------------------------------- the op-building kit
# The internal API every op (here, in functional.py, and new ones) is written with.
# ``make_node`` builds an op's result. A backward rule ``rule(g, out, ctx, need, *inputs)``
# returns one gradient per input (None where ``need[i]`` is False or there is none); it is
# called with ndarrays in the fast first-order pass and with Tensors under
# ``backward(create_graph=True)``, so it must compute with operators (which both types
# have) and the helpers below, each NumPy on arrays and a Tensor op on Tensors.
Arr = Union["Tensor", np.ndarray]  # what a rule computes with
Need = tuple[bool, ...]  # need[i]: whether input i wants a gradient
Dims = tuple[int, ...] | None
Grads = tuple[Union["Tensor", np.ndarray, None], ...]


def raw(x: Arr) -> np.ndarray:
    """The array inside: for a rule's masks and tests, which are constants."""
    return x.data if isinstance(x, Tensor) else x


def sum_to(g: Arr, shape: Shape) -> Arr:
    """``g`` summed back to ``shape`` over the axes broadcasting repeated (see the engine)."""
    if not isinstance(g, Tensor):
        return _unbroadcast(g, shape)
    if g.shape == shape:
        return g
    return g.sum(_broadcast_axes(g.shape, shape), keepdim=True).reshape(shape)


def sum_dims(x: Arr, dims: Dims, keepdim: bool) -> Arr:
    """``x`` summed over ``dims`` (normalised dims, or None for all)."""
    if isinstance(x, Tensor):
        return x.sum(dims, keepdim=keepdim)
    return x.sum(axis=dims, keepdims=keepdim)


def expand(g: Arr, dims: Dims, shape: Shape) -> Arr:
    """A reduction's gradient ``g`` repeated over the reduced ``dims`` to ``shape``."""
    kept = g.reshape(_kept_shape(shape, dims))
    if not isinstance(g, Tensor):
        full = np.empty(shape, dtype=g.dtype)
        full[...] = kept
        return full
    return make_node(np.broadcast_to(kept.data, shape).copy(), (kept,), "expand", _expand_backward)


def _expand_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """Repeating moves copies of a value: the engine sums the gradient back to a's shape."""
    return (g,)


def swapaxes(x: Arr, d0: int, d1: int) -> Arr:
    return x.transpose(d0, d1) if isinstance(x, Tensor) else np.swapaxes(x, d0, d1)


def permute(x: Arr, order: Shape) -> Arr:
    return x.permute(*order) if isinstance(x, Tensor) else np.transpose(x, order)


def exp(x: Arr) -> Arr:
    return x.exp() if isinstance(x, Tensor) else np.exp(x)


def sigmoid(x: Arr) -> Arr:
    return x.sigmoid() if isinstance(x, Tensor) else _sigmoid_array(x)


def zero_where(mask: np.ndarray, g: Arr) -> Arr:
    """``g`` with 0 where ``mask`` holds (exact on arrays; a product with 0/1 on Tensors)."""
    if isinstance(g, Tensor):
        return g * (~mask).astype(g.dtype)
    return np.where(mask, 0.0, g).astype(g.dtype, copy=False)


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
        else:
            np.add.at(full, key, g)
        return full
    data = scatter(g.data, key, basic, shape)
    return make_node(data, (g,), "scatter", _scatter_backward, (key, basic))


def _scatter_backward(g: Arr, out: Arr, ctx: tuple[Any, bool], need: Need, a: Arr) -> Grads:
    """c = zeros with a added at key:  dc/da picks the elements at key back out."""
    return (g[ctx[0]],)


def _accumulate(t: Tensor, g: Arr, upstream: Arr) -> None:
    """Add gradient ``g`` into ``t.grad``, first summing it back to t's shape if t was
    broadcast: the one place the tensor engine accumulates.

    Arrays: the first arrival is stored without a copy when it is an array the rule has
    just made (not ``upstream``, not a view), later ones added in place. Tensors (under
    create_graph): out of place, ``old + g``, so the gradient keeps its history.
    """
    shape = t.data.shape
    if not isinstance(g, Tensor):
        fresh = g is not upstream and type(g) is np.ndarray and g.base is None
        if g.shape != shape:
            g, fresh = _unbroadcast(g, shape), True
        if t.grad is None:
            fresh = fresh and type(g) is np.ndarray and g.dtype == t.data.dtype
            t.grad = g if fresh else np.array(g, dtype=t.data.dtype)
        else:
            t.grad += g
        return
    g = sum_to(g, shape)
    t.grad = g if t.grad is None else t.grad + g


def _elementwise(op: str, ufunc: np.ufunc, a: Tensor, b: Tensor) -> np.ndarray:
    """ufunc(a, b) under broadcasting, with an error naming both shapes."""
    try:
        return ufunc(a.data, b.data)
    except ValueError:
        raise ValueError(f"{op}: shapes {a.shape} and {b.shape} cannot broadcast") from None


# ---------------------------------------------------------------------- binary arithmetic
# Each forward is followed by its rule ``rule(g, out, ctx, need, *inputs)`` (see the kit
# above): it returns one gradient per input, skipping those with ``need[i]`` False.


def _add(a: Tensor, other: Operand) -> Tensor:
    other = _lift(other, a, "add")
    return make_node(_elementwise("add", np.add, a, other), (a, other), "+", _add_backward)


def _add_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a + b:  dc/da = 1, dc/db = 1 (the engine sums each back to its input's shape)."""
    return g, g


def _sub(a: Tensor, other: Operand) -> Tensor:
    other = _lift(other, a, "sub")
    return make_node(_elementwise("sub", np.subtract, a, other), (a, other), "-", _sub_backward)


def _sub_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a - b:  dc/da = 1, dc/db = -1."""
    return g, (-g if need[1] else None)


def _mul(a: Tensor, other: Operand) -> Tensor:
    other = _lift(other, a, "mul")
    return make_node(_elementwise("mul", np.multiply, a, other), (a, other), "*", _mul_backward)


def _mul_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a * b:  dc/da = b, dc/db = a."""
    return (g * b if need[0] else None), (g * a if need[1] else None)


def _div(a: Tensor, other: Operand) -> Tensor:
    other = _lift(other, a, "div")
    return make_node(_elementwise("div", np.true_divide, a, other), (a, other), "/", _div_backward)


def _div_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """c = a / b:  dc/da = 1/b, dc/db = -a/b**2, computed as torch does, -(a/b)/b = -c/b,
    because b*b underflows to 0 (or overflows) where c/b is still a normal float."""
    return (g / b if need[0] else None), (-g * (out / b) if need[1] else None)


# Reflected forms: ``2 - t`` and friends lift the number to a constant of t's dtype.
def _radd(a: Tensor, other: Operand) -> Tensor:
    return _add(_lift(other, a, "add"), a)


def _rsub(a: Tensor, other: Operand) -> Tensor:
    return _sub(_lift(other, a, "sub"), a)


def _rmul(a: Tensor, other: Operand) -> Tensor:
    return _mul(_lift(other, a, "mul"), a)


def _rdiv(a: Tensor, other: Operand) -> Tensor:
    return _div(_lift(other, a, "div"), a)


def _pow(a: Tensor, exponent: float) -> Tensor:
    """x ** n for a number n (a Python float keeps a float32 tensor float32)."""
    if isinstance(exponent, bool) or not isinstance(exponent, numbers.Real):
        raise TypeError(
            f"Tensor ** exponent: the exponent must be a number, got {describe(exponent)}"
        )
    n = float(exponent)
    return make_node(a.data**n, (a,), "**", _pow_backward, n)


def _pow_backward(g: Arr, out: Arr, n: float, need: Need, a: Arr) -> Grads:
    """c = a ** n:  dc/da = n * a**(n-1) (0 when n = 0, as in torch)."""
    if n == 0.0:
        return (zeros_like(a),)
    return (n * a ** (n - 1.0) * g,)


def _neg(a: Tensor) -> Tensor:
    return make_node(np.negative(a.data), (a,), "neg", _neg_backward)


def _neg_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = -a:  dc/da = -1."""
    return (-g,)


# ---------------------------------------------------------------------- matmul
def _matmul_error(a: Tensor, b: Tensor) -> str:
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        return f"matmul: {sa} @ {sb}: both operands need at least one dim"
    ka, kb = sa[-1], sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        return f"matmul: {sa} @ {sb}: inner dimensions {ka} and {kb} differ"
    return f"matmul: {sa} @ {sb}: batch dimensions {sa[:-2]} and {sb[:-2]} cannot broadcast"


def _matmul(a: Tensor, other: Tensor | np.ndarray) -> Tensor:
    """Matrix product with torch's (and NumPy's) rules: 1-D @ 1-D is a dot product, a 1-D
    operand is treated as a row (left) or column (right) vector and that dim dropped from
    the result, and leading batch dims broadcast."""
    if not isinstance(other, (Tensor, np.ndarray)):
        raise TypeError(f"unsupported operand for @: Tensor and {describe(other)}")
    other = _lift(other, a, "@")
    try:
        data = np.matmul(a.data, other.data)
    except ValueError:
        raise ValueError(_matmul_error(a, other)) from None
    return make_node(data, (a, other), "@", _matmul_backward)


def _rmatmul(a: Tensor, other: np.ndarray) -> Tensor:
    if not isinstance(other, np.ndarray):
        raise TypeError(f"unsupported operand for @: {describe(other)} and Tensor")
    return _matmul(_lift(other, a, "@"), a)


def _matmul_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """C = A @ B:  dA = dC @ B^T, dB = A^T @ dC (the engine sums each back over broadcast
    batch dims).

    A 1-D operand is first given back the dim matmul dropped (A as a 1-row matrix, B as a
    1-column matrix, and dC the matching size-1 axis), so one formula covers every case.
    """
    A, B, G = a, b, g
    if B.ndim == 1:
        B, G = B[:, None], G[..., None]
    if A.ndim == 1:
        A, G = A[None, :], G[..., None, :]
    ga = gb = None
    if need[0]:
        ga = sum_to(G @ swapaxes(B, -1, -2), A.shape).reshape(a.shape)
    if need[1]:
        gb = sum_to(swapaxes(A, -1, -2) @ G, B.shape).reshape(b.shape)
    return ga, gb


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias as one node, as ``torch.nn.functional.linear``.

    ``weight`` is (out_features, in_features); ``input`` is (..., in_features). Fused for
    the same reason as ``Value.dot``: one node and one backward call per layer instead of
    three (transpose, matmul, add).
    """
    _check_tensor(input, "linear: input")
    _check_tensor(weight, "linear: weight")
    if weight.data.ndim != 2 or input.data.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"linear: input {input.shape} and weight {weight.shape}: the weight must be "
            "(out_features, in_features) and the input's last dim in_features"
        )
    data = input.data @ weight.data.T
    if bias is None:
        return make_node(data, (input, weight), "linear", _linear_backward)
    _check_tensor(bias, "linear: bias")
    if bias.shape != (weight.shape[0],):
        raise ValueError(
            f"linear: bias {bias.shape} must be ({weight.shape[0]},) for weight {weight.shape}"
        )
    data += bias.data  # in place: ``data`` is a fresh product
    return make_node(data, (input, weight, bias), "linear", _linear_backward)


def _linear_backward(g: Arr, out: Arr, ctx: None, need: Need, x: Arr, w: Arr, *b: Arr) -> Grads:
    """y = x W^T + b:  dx = dy W, dW = dy^T x (summed over all batch rows), db = sum dy."""
    g2 = g.reshape(-1, g.shape[-1])
    gx = g @ w if need[0] else None
    gw = g2.T @ x.reshape(-1, x.shape[-1]) if need[1] else None
    if not b:
        return gx, gw
    return gx, gw, (sum_dims(g2, (0,), False) if need[2] else None)


# ---------------------------------------------------------------------- unary functions
def _exp(a: Tensor) -> Tensor:
    """e ** x elementwise (inf beyond about 709.78 in float64, as in torch)."""
    return make_node(np.exp(a.data), (a,), "exp", _exp_backward)


def _exp_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = e**a:  dc/da = e**a, which is c itself."""
    return (out * g,)


def _log(a: Tensor) -> Tensor:
    """Natural log: -inf at 0 and nan below it (NumPy also warns)."""
    return make_node(np.log(a.data), (a,), "log", _log_backward)


def _log_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = ln a:  dc/da = 1/a."""
    return (g / a,)


def _tanh(a: Tensor) -> Tensor:
    return make_node(np.tanh(a.data), (a,), "tanh", _tanh_backward)


def _tanh_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = tanh a:  dc/da = 1 - c**2."""
    return ((1.0 - out * out) * g,)


def _relu(a: Tensor) -> Tensor:
    """max(0, x), written as "0 where x < 0" so that relu(nan) is nan and relu(-0.0) is
    -0.0, as in torch (and Value.relu)."""
    return make_node(np.where(a.data < 0.0, 0.0, a.data), (a,), "relu", _relu_backward)


def _relu_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = max(0, a):  dc/da = 0 where c <= 0 (so 0 at a = 0), else 1, as in torch; the
    test is "c <= 0" so that nan passes its gradient on, as torch's does."""
    return (zero_where(raw(out) <= 0.0, g),)


def _sigmoid_array(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x) without overflow: with e = e^-|x|, it is 1/(1+e) for x >= 0 and
    e/(1+e) below, so exp never sees a large positive argument."""
    e = np.exp(-np.abs(x))
    s = 1.0 / (1.0 + e)
    return np.where(x >= 0.0, s, e * s)


def _sigmoid(a: Tensor) -> Tensor:
    return make_node(_sigmoid_array(a.data), (a,), "sigmoid", _sigmoid_backward)


def _sigmoid_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = 1/(1 + e**-a):  dc/da = c * (1 - c)."""
    return (out * (1.0 - out) * g,)


# ---------------------------------------------------------------------- reductions
def _sum(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` (an int, a tuple of ints, or None for every dim)."""
    dims = _dims(dim, a.data.ndim, "sum")
    data = a.data.sum(axis=dims, keepdims=keepdim)
    return make_node(data, (a,), "sum", _sum_backward, dims)


def _sum_backward(g: Arr, out: Arr, dims: Dims, need: Need, a: Arr) -> Grads:
    """c = sum of a over dims:  dc/da = 1 for every summed element."""
    return (expand(g, dims, a.shape),)


def _mean(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` (an int, a tuple of ints, or None for every dim)."""
    dims = _dims(dim, a.data.ndim, "mean")
    count = 1
    for d in range(a.data.ndim) if dims is None else dims:
        count *= a.data.shape[d]
    data = a.data.mean(axis=dims, keepdims=keepdim)
    return make_node(data, (a,), "mean", _mean_backward, (dims, count))


def _mean_backward(g: Arr, out: Arr, ctx: tuple[Dims, int], need: Need, a: Arr) -> Grads:
    """c = (sum of a over dims) / count:  dc/da = 1/count for every averaged element."""
    dims, count = ctx
    return (expand(g / count, dims, a.shape),)


def _max(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """The largest value over ``dim`` (values only, as ``torch.amax``)."""
    dims = _dims(dim, a.data.ndim, "max")
    try:
        data = a.data.max(axis=dims, keepdims=keepdim)
    except ValueError:
        raise ValueError(f"max: cannot take the max over an empty dim (shape {a.shape})") from None
    return make_node(data, (a,), "max", _max_backward, dims)


def _max_backward(g: Arr, out: Arr, dims: Dims, need: Need, a: Arr) -> Grads:
    """c = max of a over dims:  dc/da = 1/k at each of the k elements equal to the max and 0
    elsewhere, so tied maxima share the gradient equally (as ``torch.amax``)."""
    A = raw(a)
    kept = _kept_shape(A.shape, dims)
    mask = raw(out).reshape(kept) == A
    ties = mask.sum(axis=dims, keepdims=True, dtype=A.dtype)
    return (mask.astype(A.dtype) * (g.reshape(kept) / ties),)


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
    d0 = _dim(dim0, a.data.ndim, "transpose")
    d1 = _dim(dim1, a.data.ndim, "transpose")
    return make_node(np.swapaxes(a.data, d0, d1), (a,), "transpose", _transpose_backward, (d0, d1))


def _transpose_backward(g: Arr, out: Arr, ctx: tuple[int, int], need: Need, a: Arr) -> Grads:
    """Swapping dims moves values: swap the gradient's dims back."""
    return (swapaxes(g, *ctx),)


def _permute(a: Tensor, *dims: int) -> Tensor:
    """Reorder the dims: result dim i is input dim ``dims[i]``."""
    order = tuple(_dim(d, a.data.ndim, "permute") for d in dims)
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
    key, basic = _index_key(key)
    try:
        data = a.data[key]
    except IndexError as e:
        raise IndexError(f"index: {e} (tensor shape {a.shape})") from None
    return make_node(data, (a,), "index", _getitem_backward, (key, basic))


def _getitem_backward(g: Arr, out: Arr, ctx: tuple[Any, bool], need: Need, a: Arr) -> Grads:
    """c = a[key]:  each selected element of a receives its element of dc; an element
    selected several times by an integer array receives the sum."""
    key, basic = ctx
    return (scatter(g, key, basic, a.shape),)


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
    d = _dim(dim, len(first), "cat")
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
    d = _dim(dim, len(first), "stack", extra=1)
    return make_node(np.stack([t.data for t in ts], axis=d), ts, "stack", _stack_backward, d)


def _stack_backward(g: Arr, out: Arr, d: int, need: Need, *ts: Arr) -> Grads:
    """Input i receives index i of the gradient along the stacked dim."""
    lead = (slice(None),) * d
    return tuple(g[(*lead, i)] if n else None for i, n in enumerate(need))


# ---------------------------------------------------------------------- softmax
def _softmax(a: Tensor, dim: int) -> Tensor:
    """e^x / sum(e^x) along ``dim``, computed as e^(x - max) so no exp can overflow."""
    d = _dim(dim, a.data.ndim, "softmax")
    e = np.exp(a.data - a.data.max(axis=d, keepdims=True))
    e /= e.sum(axis=d, keepdims=True)
    return make_node(e, (a,), "softmax", _softmax_backward, d)


def _softmax_backward(g: Arr, out: Arr, d: int, need: Need, a: Arr) -> Grads:
    """s = softmax(a):  ds_i/da_j = s_i (delta_ij - s_j), so da = s * (g - sum(g * s))."""
    return (out * (g - sum_dims(g * out, (d,), True)),)


def _log_softmax(a: Tensor, dim: int) -> Tensor:
    """x - log(sum(e^x)) along ``dim``, as (x - max) - log(sum(e^(x - max))): stable for
    logits of +-1000, where the naive form gives inf - inf."""
    d = _dim(dim, a.data.ndim, "log_softmax")
    shifted = a.data - a.data.max(axis=d, keepdims=True)
    data = shifted - np.log(np.exp(shifted).sum(axis=d, keepdims=True))
    return make_node(data, (a,), "log_softmax", _log_softmax_backward, d)


def _log_softmax_backward(g: Arr, out: Arr, d: int, need: Need, a: Arr) -> Grads:
    """c = log_softmax(a):  dc_i/da_j = delta_ij - softmax_j, so da = g - e^c * sum(g)."""
    return (g - exp(out) * sum_dims(g, (d,), True),)


# ---------------------------------------------------------------------- the Tensor class
class Tensor:
    """An array in a computation graph, with the gradient of the final output w.r.t. it.

    ``Tensor(data, requires_grad=False, dtype=None)`` copies ``data`` (a number, nested
    lists or a NumPy array; docs/design.md for dtypes). ``grad`` is None until a
    ``backward()`` reaches the tensor, then an array of its shape; leaves accumulate it
    across calls (as torch's leaf ``.grad``), interior nodes hold the latest pass's.
    """

    # __slots__: no per-instance __dict__, so a node is small and attribute access fast.
    __slots__ = ("_backward", "_ctx", "_op", "_prev", "data", "grad", "label", "requires_grad")
    # Make NumPy defer to Tensor's reflected operators (np.float64(2) * t, array @ t).
    __array_ufunc__ = None

    def __init__(
        self, data: Any, requires_grad: bool = False, dtype: Any = None, label: str = ""
    ) -> None:
        if not isinstance(requires_grad, bool):
            raise TypeError(
                f"Tensor(): requires_grad must be a bool, got {describe(requires_grad)}"
            )
        self.data = _to_array(data, "Tensor()", dtype)
        self.grad: np.ndarray | None = None
        self.requires_grad = requires_grad
        self._prev: tuple[Tensor, ...] = ()
        self._op = ""
        self._backward: Callable[..., Grads] | None = None
        self._ctx: Any = None
        self.label = label

    # ------------------------------------------------------------------ array facts
    @property
    def shape(self) -> Shape:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def size(self, dim: int | None = None) -> Shape | int:
        """The shape, or the length of one dim (as torch's ``size()``)."""
        if dim is None:
            return self.data.shape
        return self.data.shape[_dim(dim, self.data.ndim, "size")]

    def numel(self) -> int:
        """The number of elements."""
        return self.data.size

    def item(self) -> float:
        """The value of a one-element tensor as a Python float."""
        if self.data.size != 1:
            raise ValueError(
                f"item: only a one-element tensor converts to a number; this one has shape "
                f"{self.shape} ({self.data.size} elements)"
            )
        return float(self.data.reshape(()))

    def numpy(self) -> np.ndarray:
        """The data array itself (shared, not copied, as torch's ``numpy()``)."""
        return self.data

    def detach(self) -> Tensor:
        """The same data (shared) as a new leaf with no history that does not require grad."""
        return make_node(self.data, (), "", None)

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="Tensor(")
        extra = ""
        if self.data.dtype != np.float64:
            extra += f", dtype={self.data.dtype}"
        if self._op:
            extra += f", op={self._op!r}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"Tensor({body}{extra})"

    # ------------------------------------------------------------------ operations
    # Each forward lives above, next to its backward rule.
    __add__ = _add
    __radd__ = _radd
    __sub__ = _sub
    __rsub__ = _rsub
    __mul__ = _mul
    __rmul__ = _rmul
    __truediv__ = _div
    __rtruediv__ = _rdiv
    __pow__ = _pow
    __neg__ = _neg
    __matmul__ = _matmul
    __rmatmul__ = _rmatmul
    __getitem__ = _getitem
    exp = _exp
    log = _log
    tanh = _tanh
    relu = _relu
    sigmoid = _sigmoid
    sum = _sum
    mean = _mean
    max = _max
    amax = _max  # torch's name for exactly this: the values only, ties share the gradient
    reshape = _reshape
    transpose = _transpose
    permute = _permute
    T = property(_T)
    softmax = _softmax
    log_softmax = _log_softmax

    # ------------------------------------------------------------------ the backward pass
    def backward(self, gradient: Any = None, create_graph: bool = False) -> None:
        """Add d(self)/d(leaf) into the ``grad`` of every leaf self depends on.

        A one-element tensor is seeded with 1; any other needs ``gradient``, an array of
        its shape (the vector in the vector-Jacobian product). Walks the graph once in
        reverse topological order, so each node has its full gradient before passing it
        on; interior nodes are reset first so only leaves accumulate across calls. With
        ``create_graph=True`` the gradients are Tensors with history, differentiable again.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward: this tensor does not require grad, so it has no graph to walk "
                "(make its leaves with requires_grad=True, outside no_grad())"
            )
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError(
                    "backward: grad can be implicitly created only for scalar outputs; this "
                    f"tensor has shape {self.shape}, so pass gradient= an array of that shape"
                )
            seed = np.ones(self.data.shape, dtype=self.data.dtype)
        else:
            seed = _to_array(gradient, "backward(gradient)", self.data.dtype)
            if seed.shape != self.data.shape:
                raise ValueError(
                    f"backward: gradient has shape {seed.shape} but the tensor has shape "
                    f"{self.shape}"
                )
        order = topological_order(self)
        for node in order:
            if node._prev:
                node.grad = None
        if create_graph:
            seed = make_node(seed, (), "", None)
        _accumulate(self, seed, None)
        for node in reversed(order):
            rule, g = node._backward, node.grad
            if rule is None or g is None:
                continue
            prev = node._prev
            need = tuple(p.requires_grad for p in prev)
            if create_graph:  # the same rule on the nodes: the gradients get history
                grads = rule(g, node, node._ctx, need, *prev)
            else:
                grads = rule(g, node.data, node._ctx, need, *[p.data for p in prev])
            for p, gp, n in zip(prev, grads, need):
                if n and gp is not None:
                    _accumulate(p, gp, g)
