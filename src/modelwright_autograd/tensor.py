"""The tensor engine: ``Tensor`` wraps a NumPy array and remembers how it was made.

It mirrors the scalar engine (engine.py): each op is a forward function directly above its
backward rule ``rule(g, out, ctx, need, *inputs)``, written with the op-building kit
below so that it serves both the fast pass (arrays) and ``backward(create_graph=True)``
(Tensors). docs/design.md explains the design, dtypes and speed.
"""

from __future__ import annotations

import itertools
import math
import numbers
import string
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Union

import numpy as np

from .checks import describe, positive_int
from .graph import GradMode, enable_grad, topological_order

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


def check_tensor(x: object, where: str) -> Tensor:
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
    """Normalise ``dim`` for a reduction: None (every dim), an int, or a tuple of ints. A
    0-d tensor takes dim 0 or -1 as its one element's dim, as torch, which means all
    (None)."""
    if dim is None:
        return None
    items = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not items:
        raise ValueError(f"{op}: dim=() names no dims; use dim=None to reduce over all of them")
    if ndim == 0:
        for d in items:
            _dim(d, 0, op, extra=1)  # 0 or -1, the range of a 1-element dim
        return None
    dims = tuple(_dim(d, ndim, op) for d in items)
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim {dim!r} names the same dim twice (ndim {ndim})")
    return dims


def _one_dim(dim: int | None, ndim: int, op: str) -> int | None:
    """Normalise the single ``dim`` of prod and argmax-like ops: None for every dim, as for
    dim 0 or -1 of a 0-d tensor (torch accepts those)."""
    if dim is None:
        return None
    if ndim == 0:
        _dim(dim, 0, op, extra=1)  # 0 or -1, the range of a 1-element dim
        return None
    return _dim(dim, ndim, op)


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
    if GradMode.enabled:
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
    return np.add.reduce(x, axis=dims, keepdims=keepdim)  # x.sum() without its wrapper


def expand(g: Arr, dims: Dims, shape: Shape) -> Arr:
    """A reduction's gradient ``g`` repeated over the reduced ``dims`` to ``shape``."""
    if not isinstance(g, Tensor):
        full = np.empty(shape, dtype=g.dtype)
        # g broadcasts as it is when every dim was reduced or the reduced ones were kept
        whole = dims is None or g.ndim == len(shape)
        full[...] = g if whole else g.reshape(_kept_shape(shape, dims))
        return full
    kept = g.reshape(_kept_shape(shape, dims))
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
    if isinstance(g, Tensor):
        g = grad_for(t, g)
        t.grad = g if t.grad is None else t.grad + g
        return
    shape = t.data.shape
    if t.grad is not None:
        t.grad += g if g.shape == shape else _unbroadcast(g, shape)
        return
    if g.shape != shape:
        g, fresh = _unbroadcast(g, shape), True
    else:
        fresh = g is not upstream and type(g) is np.ndarray and g.base is None
    fresh = fresh and type(g) is np.ndarray and g.dtype == t.data.dtype
    t.grad = g if fresh else np.array(g, dtype=t.data.dtype)


def grad_for(t: Tensor, g: Arr) -> Arr:
    """``g`` made a gradient of ``t``: summed back to t's shape where t was broadcast, and
    in t's dtype (a float32 tensor gets a float32 gradient, as torch casts each gradient to
    its input's dtype); on Tensors the cast is a node, so it differentiates again."""
    g = sum_to(g, t.data.shape)
    dtype = t.data.dtype
    if raw(g).dtype == dtype:
        return g
    if isinstance(g, Tensor):
        return make_node(g.data.astype(dtype), (g,), "cast", _cast_backward)
    return g.astype(dtype)


def _cast_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = a in another dtype:  dc/da = 1 (grad_for casts g back to a's dtype)."""
    return (g,)


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
    """x ** n for a number n (a Python float keeps a float32 tensor float32); a Tensor or
    array exponent is its own op, ``_pow_tensor``."""
    if isinstance(exponent, (Tensor, np.ndarray)):
        return _pow_tensor(a, _lift(exponent, a, "**"))
    if isinstance(exponent, bool) or not isinstance(exponent, numbers.Real):
        raise TypeError(
            f"Tensor ** exponent: the exponent must be a number or a Tensor, got "
            f"{describe(exponent)}"
        )
    n = float(exponent)
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
    data, prev = _linear_forward(input, weight, bias, "linear")
    return make_node(data, prev, "linear", _linear_backward)


def _linear_backward(g: Arr, out: Arr, ctx: None, need: Need, x: Arr, w: Arr, *b: Arr) -> Grads:
    """y = x W^T + b:  dx = dy W, dW = dy^T x (summed over all batch rows), db = sum dy."""
    gx = g @ w if need[0] else None
    if g.ndim != 2:  # a batch of any shape is a batch of rows
        g, x = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])
    gw = g.T @ x if need[1] else None
    if not b:
        return gx, gw
    return gx, gw, (sum_dims(g, (0,), False) if need[2] else None)


def linear_relu(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``linear(input, weight, bias).relu()`` as one node: an MLP's hidden layer, whose
    backward is relu's rule then linear's (one node fewer per layer to build and walk).

    relu's search for -0.0 (which ``np.maximum`` would make +0.0) is spared when no bias
    element is 0: x W^T + b is -0.0 only where b is, as a sum is -0.0 only when both of
    its terms are. Only for a bias of the product's dtype: one added in another dtype is
    rounded to it first, and a tiny nonzero float64 bias can round to a float32 -0.0."""
    data, prev = _linear_forward(input, weight, bias, "linear_relu")
    if (
        bias is not None
        and bias.data.dtype == data.dtype
        and np.count_nonzero(bias.data) == bias.data.size  # .all(), quicker
    ):
        out = np.maximum(data, 0.0, out=data)
    else:
        out = _relu_array(data, overwrite=True)
    return make_node(out, prev, "linear_relu", _linear_relu_backward)


def _linear_relu_backward(
    g: Arr, out: Arr, ctx: None, need: Need, x: Arr, w: Arr, *b: Arr
) -> Grads:
    """y = relu(z), z = x W^T + b:  dz = dy where y > 0 (relu's rule, nan passing), then
    linear's rule on dz."""
    gz = zero_where(raw(out) <= 0.0, g)
    return _linear_backward(gz, None, None, need, x, w, *b)


def _linear_forward(
    input: Tensor, weight: Tensor, bias: Tensor | None, op: str
) -> tuple[np.ndarray, tuple[Tensor, ...]]:
    """x @ W^T + b after checking the shapes (op names the caller in errors), and the
    node's inputs."""
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor)):  # messages on error only
        check_tensor(input, f"{op}: input")
        check_tensor(weight, f"{op}: weight")
    x, w = input.data, weight.data
    if w.ndim != 2 or x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise ValueError(
            f"{op}: input {x.shape} and weight {w.shape}: the weight must be "
            "(out_features, in_features) and the input's last dim in_features"
        )
    data = x @ w.T
    if bias is None:
        return data, (input, weight)
    if not isinstance(bias, Tensor):
        check_tensor(bias, f"{op}: bias")
    if bias.data.shape != (w.shape[0],):
        raise ValueError(
            f"{op}: bias {bias.data.shape} must be ({w.shape[0]},) for weight {w.shape}"
        )
    data += bias.data  # in place: ``data`` is a fresh product
    return data, (input, weight, bias)


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
    """max(0, x) with relu(nan) = nan and relu(-0.0) = -0.0, as in torch (and Value.relu)."""
    return make_node(_relu_array(a.data), (a,), "relu", _relu_backward)


def _relu_array(x: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """relu on an array (written into x itself with ``overwrite``, for an array the caller
    has just made). ``np.maximum`` is branch-free, where ``np.where`` on a mask of random
    signs costs a mispredicted branch per element (several times slower on this
    project's machine); maximum gives +0.0 at x = -0.0, so the zeros, rare and so a cheap
    select, keep x (counted rather than ``any()``-ed: count_nonzero is the quicker)."""
    zero = x == 0.0
    if np.count_nonzero(zero):
        return np.where(zero, x, np.maximum(x, 0.0))
    return np.maximum(x, 0.0, out=x if overwrite else None)


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
        _dim(dim, 0, op, extra=1)  # 0 or -1, the range of a 1-element dim
        return ValuesIndices(_reshaped(a, (), op), make_node(np.int64(0), (), "", None))
    d = _dim(dim, a.data.ndim, op)
    try:
        idx = arg(a.data, axis=d, keepdims=keepdim)
    except ValueError:
        raise ValueError(
            f"{op}: cannot take the {op} over an empty dim (shape {a.shape})"
        ) from None
    grids = np.indices(idx.shape, sparse=True)  # an index array for every other dim
    rest = d + 1 if keepdim else d  # where the other dims' grids resume
    key = (*grids[:d], idx, *grids[rest:])
    values = make_node(a.data[key], (a,), op, _getitem_backward, (key, False))
    return ValuesIndices(values, make_node(idx.astype(np.int64), (), "", None))


def _extreme(a: Tensor, dim: Any, keepdim: bool, op: str, rule: Callable[..., Grads]) -> Tensor:
    """``max`` or ``min`` (``op``) over ``dim``, or an error naming an empty dim."""
    dims = _dims(dim, a.data.ndim, op)
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
    if type(key) is np.ndarray:  # a mini-batch's rows: nothing for _index_key to check
        basic = False
    else:
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


# ====================================================================== everyday ops (issue 15)
# Elementwise functions, comparisons, reductions, shape ops and products, each forward
# directly above its rule, as in the sections above; docs/tensor-ops.md tabulates their
# gradients.


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
    return x.erf() if isinstance(x, Tensor) else _erf_array(x)


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _erf_array(x: np.ndarray) -> np.ndarray:
    """erf elementwise. NumPy has none, so this is the C library's erf (``math.erf``) on
    each element: exact to the last bit or so, and slow (about a microsecond an element)."""
    return np.asarray(_ERF(x), dtype=x.dtype)


def _constant(x: np.ndarray, like: Arr) -> np.ndarray:
    """A mask or factor as an array of ``like``'s dtype, so a float32 gradient stays float32."""
    return np.asarray(x, dtype=raw(like).dtype)


def _number(x: object, what: str) -> float:
    """A real number (not a bool) as a float, or a TypeError naming ``what``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{what} must be a number, got {describe(x)}")
    return float(x)


def _sizes(sizes: tuple[Any, ...], op: str) -> tuple[int, ...]:
    """Sizes given as ``f(2, 3)`` or ``f((2, 3))``, checked to be ints."""
    target = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    for n in target:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"{op}: sizes must be ints, got {describe(n)} in {tuple(target)!r}")
    return tuple(int(n) for n in target)


# ---------------------------------------------------------------------- elementwise
def _abs(a: Tensor) -> Tensor:
    return make_node(np.abs(a.data), (a,), "abs", _abs_backward)


def _abs_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = |a|:  dc/da = sign(a), 0 at a = 0 (as torch)."""
    return (g * np.sign(raw(a)),)


def _sqrt(a: Tensor) -> Tensor:
    """Square root: nan below 0 (NumPy also warns)."""
    return make_node(np.sqrt(a.data), (a,), "sqrt", _sqrt_backward)


def _sqrt_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = sqrt(a):  dc/da = 1 / (2c), inf at a = 0 (as torch)."""
    with np.errstate(divide="ignore"):
        return (g / (2.0 * out),)


def _sign(a: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element."""
    return make_node(np.sign(a.data), (a,), "sign", _sign_backward)


def _sign_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = sign(a) is flat wherever it is differentiable:  dc/da = 0 (as torch)."""
    return (zeros_like(a),)


def _sin(a: Tensor) -> Tensor:
    return make_node(np.sin(a.data), (a,), "sin", _sin_backward)


def _sin_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = sin a:  dc/da = cos a."""
    return (g * cos(a),)


def _cos(a: Tensor) -> Tensor:
    return make_node(np.cos(a.data), (a,), "cos", _cos_backward)


def _cos_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = cos a:  dc/da = -sin a."""
    return (-g * sin(a),)


def _log1p(a: Tensor) -> Tensor:
    """ln(1 + x), accurate for tiny x where 1 + x rounds to 1."""
    return make_node(np.log1p(a.data), (a,), "log1p", _log1p_backward)


def _log1p_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = ln(1 + a):  dc/da = 1 / (1 + a)."""
    return (g / (1.0 + a),)


def _expm1(a: Tensor) -> Tensor:
    """e^x - 1, accurate for tiny x where e^x rounds to 1."""
    return make_node(np.expm1(a.data), (a,), "expm1", _expm1_backward)


def _expm1_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = e^a - 1:  dc/da = e^a = c + 1."""
    return (g * (out + 1.0),)


def _erf(a: Tensor) -> Tensor:
    """The error function (gelu is built on it)."""
    return make_node(_erf_array(a.data), (a,), "erf", _erf_backward)


def _erf_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = erf a:  dc/da = 2/sqrt(pi) e^(-a^2)."""
    return (g * (exp(a * a * -1.0) * (2.0 / math.sqrt(math.pi))),)


def _clamp(a: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Each element limited to [min, max] (either may be None), as ``torch.clamp``: the
    result is min(max(x, min), max), so max wins when min > max."""
    if min is None and max is None:
        raise ValueError("clamp: give min, max or both (both are None)")
    lo = -math.inf if min is None else _number(min, "clamp: min")
    hi = math.inf if max is None else _number(max, "clamp: max")
    data = np.minimum(np.maximum(a.data, a.data.dtype.type(lo)), a.data.dtype.type(hi))
    return make_node(data, (a,), "clamp", _clamp_backward, (lo, hi))


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
    other = _lift(other, input, op)
    return make_node(_elementwise(op, ufunc, input, other), (input, other), op, rule)


def _tie_shares(g: Arr, A: np.ndarray, B: np.ndarray, loses: np.ufunc, need: Need) -> Grads:
    """maximum's and minimum's gradients: none to the side that ``loses`` (np.less for
    maximum), all of g to the other, half to each at a tie."""
    share = g * _constant(np.where(A == B, 0.5, 1.0), g)
    return (
        zero_where(loses(A, B), share) if need[0] else None,
        zero_where(loses(B, A), share) if need[1] else None,
    )


def where(condition: Any, input: Operand, other: Operand) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (all three broadcast), as
    ``torch.where``; ``condition`` is boolean, such as a comparison's result."""
    cond = condition.data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise TypeError(
            f"where: condition must be boolean (a comparison's result), got dtype {cond.dtype}"
        )
    like = input if isinstance(input, Tensor) else other
    if not isinstance(like, Tensor):
        like = Tensor(input)
    a, b = _lift(input, like, "where"), _lift(other, like, "where")
    try:
        data = np.where(cond, a.data, b.data)
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


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, else negative_slope * x (``torch.nn.functional.leaky_relu``)."""
    check_tensor(input, "leaky_relu: input")
    slope = _number(negative_slope, "leaky_relu: negative_slope")
    x = input.data
    data = np.where(x > 0.0, x, x * x.dtype.type(slope))
    return make_node(data, (input,), "leaky_relu", _leaky_relu_backward, slope)


def _leaky_relu_backward(g: Arr, out: Arr, slope: float, need: Need, a: Arr) -> Grads:
    """c = a if a > 0 else s*a:  dc/da = 1 for a > 0, else s (so s at 0, as torch)."""
    return (g * _constant(np.where(raw(a) > 0.0, 1.0, slope), g),)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (where the two
    agree to within e^-threshold), as ``torch.nn.functional.softplus``."""
    check_tensor(input, "softplus: input")
    b = _number(beta, "softplus: beta")
    t = _number(threshold, "softplus: threshold")
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
    return (g * (zero_where(linear, sigmoid(a * b)) + _constant(linear, g)),)


_GELU_K = math.sqrt(2.0 / math.pi)  # the tanh form's scale
_GELU_C = 0.044715  # and its cubic coefficient


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Phi(x), Phi the standard normal CDF 0.5 (1 + erf(x / sqrt 2)), or with
    ``approximate='tanh'`` 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi), as
    ``torch.nn.functional.gelu``."""
    check_tensor(input, "gelu: input")
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input.data
    if approximate == "tanh":
        data = 0.5 * x * (1.0 + np.tanh(_GELU_K * (x + _GELU_C * x * x * x)))
    else:
        data = 0.5 * x * (1.0 + _erf_array(x * math.sqrt(0.5)))
    return make_node(data, (input,), "gelu", _gelu_backward, approximate)


def _gelu_backward(g: Arr, out: Arr, approximate: str, need: Need, a: Arr) -> Grads:
    """c = a Phi(a):  dc/da = Phi(a) + a phi(a), phi(a) = e^(-a^2/2) / sqrt(2 pi).
    tanh form, t = tanh(u), u = k(a + 0.044715 a^3):
    dc/da = 0.5 (1 + t) + 0.5 a (1 - t^2) k (1 + 3 * 0.044715 a^2)."""
    if approximate == "tanh":
        t = tanh((a + a * a * a * _GELU_C) * _GELU_K)
        du = (a * a * (3.0 * _GELU_C) + 1.0) * _GELU_K
        return (g * ((t + 1.0) * 0.5 + a * (1.0 - t * t) * du * 0.5),)
    cdf = (erf(a * math.sqrt(0.5)) + 1.0) * 0.5
    pdf = exp(a * a * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
    return (g * (cdf + a * pdf),)


def _pow_tensor(a: Tensor, b: Tensor) -> Tensor:
    """a ** b for a Tensor exponent (broadcast); ``Tensor ** Tensor`` and ``2 ** t``."""
    return make_node(_elementwise("pow", np.power, a, b), (a, b), "**", _pow_tensor_backward)


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
    return _pow_tensor(_lift(other, a, "**"), a)


# ---------------------------------------------------------------------- comparisons
def _comparison(symbol: str, ufunc: np.ufunc) -> Callable[[Tensor, Any], Any]:
    """The operator ``symbol``: an elementwise comparison giving a boolean Tensor with no
    gradient (a constant), as torch; any other operand is NotImplemented, so ``t == None``
    is False and ``t < 'x'`` a TypeError, as Python's rules give."""

    def compare(a: Tensor, other: Any) -> Any:
        if isinstance(other, Tensor):
            b = other.data
        elif isinstance(other, (np.ndarray, numbers.Real)):
            b = other
        else:
            return NotImplemented
        try:
            data = ufunc(a.data, b)
        except ValueError:
            raise ValueError(
                f"{symbol}: shapes {a.shape} and {np.shape(b)} cannot broadcast"
            ) from None
        return make_node(data, (), "", None)

    compare.__name__ = f"compare{symbol}"
    compare.__doc__ = f"a {symbol} b elementwise: a boolean Tensor with no gradient."
    return compare


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
    d = _one_dim(dim, a.data.ndim, "prod")
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
    kept = _kept_shape(A.shape, None if d is None else (d,))
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
        return _number(correction, f"{op}: correction")
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
    dims = _dims(dim, a.data.ndim, op)
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
    kept = _kept_shape(raw(a).shape, dims)
    centred = a - sum_dims(a, dims, True) * (1.0 / max(count, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.float64(2.0) / np.float64(max(count - c, 0.0))
    return g.reshape(kept) * (centred * float(scale))


def _std_backward(g: Arr, out: Arr, ctx: tuple[Dims, int, float], need: Need, a: Arr) -> Grads:
    """s = sqrt(v):  ds/da = (dv/da) / (2s), taken as 0 where s = 0 (as torch)."""
    kept = _kept_shape(raw(a).shape, ctx[0])
    s = out.reshape(kept)
    with np.errstate(divide="ignore", invalid="ignore"):
        gv = zero_where(raw(s) == 0.0, g.reshape(kept) / (s * 2.0))
    return (_var_grad(gv, a, *ctx),)


def _logsumexp(a: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """log(sum(e^x)) over ``dim`` (required, as torch), as m + log(sum(e^(x - m))) with m
    the max, so no exp overflows; an infinite max is left out of the shift, as torch."""
    if dim is None:
        raise TypeError("logsumexp: dim is required (an int or a tuple of ints), as in torch")
    dims = _dims(dim, a.data.ndim, "logsumexp")
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
    kept = _kept_shape(raw(a).shape, dims)
    return (g.reshape(kept) * exp(a - out.reshape(kept)),)


def _argmax(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest value (the first one at a tie, as torch) over ``dim``, or
    into the flattened tensor for None: an int64 Tensor with no gradient."""
    return _arg_extreme(a, dim, keepdim, "argmax", np.argmax)


def _argmin(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the smallest value, as ``argmax``."""
    return _arg_extreme(a, dim, keepdim, "argmin", np.argmin)


def _arg_extreme(a: Tensor, dim: int | None, keepdim: bool, op: str, fn: Any) -> Tensor:
    d = _one_dim(dim, a.data.ndim, op)
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
    dims = _dims(dim, a.data.ndim, "norm")
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
    kept = _kept_shape(raw(a).shape, dims)
    gk, n, A = g.reshape(kept), out.reshape(kept), raw(a)
    if p == 1.0:
        return (gk * np.sign(A),)
    if p == 2.0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return (a * zero_where(raw(n) == 0.0, gk / n),)
    top = (np.abs(A) == raw(n)) | np.isnan(A)
    count = top.sum(axis=dims, keepdims=True, dtype=A.dtype)
    return (gk * (np.sign(A) * top / count),)


# ---------------------------------------------------------------------- shape operations
def _reshaped(a: Tensor, shape: Shape, op: str) -> Tensor:
    """``a``'s elements in ``shape``, a node whose rule is reshape's."""
    return make_node(a.data.reshape(shape), (a,), op, _reshape_backward)


def _squeeze(a: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Drop size-1 dims: all of them, or those among ``dim`` (others are kept, as torch)."""
    dims = _dims(dim, a.data.ndim, "squeeze")
    shape = a.data.shape
    kept = [n for i, n in enumerate(shape) if n != 1 or (dims is not None and i not in dims)]
    return _reshaped(a, tuple(kept), "squeeze")


def _unsqueeze(a: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (-ndim-1 to ndim)."""
    d = _dim(dim, a.data.ndim, "unsqueeze", extra=1)
    shape = a.data.shape
    return _reshaped(a, (*shape[:d], 1, *shape[d:]), "unsqueeze")


def _flatten(a: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one (a 0-d tensor becomes shape (1,), as torch)."""
    shape = a.data.shape
    if not shape:
        return _reshaped(a, (1,), "flatten")
    s = _dim(start_dim, len(shape), "flatten")
    e = _dim(end_dim, len(shape), "flatten")
    if s > e:
        raise ValueError(
            f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (shape {a.shape})"
        )
    return _reshaped(a, (*shape[:s], math.prod(shape[s : e + 1]), *shape[e + 1 :]), "flatten")


def _expand_to(a: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """``a`` repeated along its size-1 dims (and new leading dims) to ``sizes``, as
    ``torch.Tensor.expand``: -1 keeps a dim's size; the result is a read-only view."""
    target = _sizes(sizes, "expand")
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
    return make_node(np.broadcast_to(a.data, tuple(full)), (a,), "expand", _expand_backward)


def _flip(a: Tensor, dims: int | Sequence[int]) -> Tensor:
    """Reverse the order of elements along ``dims``."""
    ds = _dims(dims, a.data.ndim, "flip") or ()
    key = tuple(slice(None, None, -1) if i in ds else slice(None) for i in range(a.data.ndim))
    return make_node(a.data[key], (a,), "flip", _basic_index_backward, key)


def _basic_index_backward(g: Arr, out: Arr, key: tuple[slice, ...], need: Need, a: Arr) -> Grads:
    """flip moves a's elements one to one: reading the gradient at ``key`` (the reversal)
    gives each element of a its own."""
    return (g[key],)


def _repeat(a: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """Tile ``a``: dim i repeated sizes[i] times (extra leading sizes add dims), as
    ``torch.Tensor.repeat``."""
    reps = _sizes(sizes, "repeat")
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
    d = _dim(dim, a.data.ndim, "split")
    n = a.data.shape[d]
    s = split_size_or_sections
    if isinstance(s, (list, tuple)):
        sizes = list(_sizes((s,), "split"))
        if sum(sizes) != n or any(k < 0 for k in sizes):
            raise ValueError(
                f"split: sections {tuple(sizes)} must be non-negative and sum to {n}, the "
                f"size of dim {d} of {a.shape}"
            )
    else:
        size = _sizes((s,), "split")[0]
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
    n = a.data.shape[_dim(dim, a.data.ndim, "chunk")]
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
    widths = _sizes((pad,), "pad")
    shape = input.data.shape
    if len(widths) % 2 or len(widths) // 2 > len(shape):
        raise ValueError(
            f"pad: {widths} must be (before, after) pairs, at most {len(shape)} of them for "
            f"shape {input.shape}"
        )
    v = _number(value, "pad: value")
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


# ---------------------------------------------------------------------- products
def outer(input: Tensor, vec2: Operand) -> Tensor:
    """The outer product of two 1-D tensors, ``input[i] * vec2[j]``, as ``torch.outer``."""
    check_tensor(input, "outer: input")
    other = _lift(vec2, input, "outer")
    if input.data.ndim != 1 or other.data.ndim != 1:
        raise ValueError(f"outer: both inputs must be 1-D, got {input.shape} and {other.shape}")
    data = np.outer(input.data, other.data)
    return make_node(data, (input, other), "outer", _outer_backward)


def _outer_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr, b: Arr) -> Grads:
    """C = a b^T:  da = dC b, db = dC^T a."""
    return (g @ b if need[0] else None), (a @ g if need[1] else None)


def einsum(subscripts: str, *operands: Operand | Sequence[Operand]) -> Tensor:
    """Sum of products over the indices ``subscripts`` names, as ``torch.einsum``: e.g.
    'ij,jk->ik' (matmul), 'bij,bjk->bik' (batch), 'i,j->ij' (outer), 'ii->' (trace),
    '...ij->...ji'. Any subscripts NumPy's einsum parses; operands may also come as one
    list. The gradient of each operand is again an einsum (docs/tensor-ops.md)."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a str, got {describe(subscripts)}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    like = next((x for x in operands if isinstance(x, Tensor)), None)
    if like is None:
        raise TypeError(f"einsum: at least one operand must be a Tensor, got {len(operands)}")
    ts = tuple(_lift(x, like, "einsum") for x in operands)  # type: ignore[arg-type]
    try:
        data = np.einsum(subscripts, *[t.data for t in ts], optimize=True)
    except ValueError as e:
        shapes = ", ".join(str(t.shape) for t in ts)
        raise ValueError(f"einsum: {subscripts!r} does not fit shapes {shapes}: {e}") from None
    spec = _einsum_spec(subscripts, [t.data.ndim for t in ts])
    return make_node(data, ts, "einsum", _einsum_backward, spec)


def _einsum_spec(subscripts: str, ndims: list[int]) -> tuple[list[str], str, str]:
    """The subscripts with every index a letter: each input's, the output's (implicit
    output: the indices used once, sorted, as NumPy) and the letters left unused. An
    ellipsis becomes unused letters, right-aligned across the inputs as broadcasting is."""
    s = subscripts.replace(" ", "")
    lhs, arrow, rhs = s.partition("->")
    ins = lhs.split(",")
    free = [c for c in string.ascii_letters if c not in s]
    width = max((nd - len(t) + 3 for t, nd in zip(ins, ndims) if "..." in t), default=0)
    ell, spare = "".join(free[:width]), "".join(free[width:])
    named = lhs.replace("...", "").replace(",", "")
    if arrow:
        out = rhs.replace("...", ell)
    else:
        out = ell + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    filled = [
        t.replace("...", ell[width - (nd - len(t) + 3) :]) if "..." in t else t
        for t, nd in zip(ins, ndims)
    ]
    repeats = max(len(t) - len(set(t)) for t in filled)
    if repeats > len(spare):
        raise ValueError(f"einsum: {subscripts!r} uses too many letters to differentiate")
    return filled, out, spare


def _einsum_any(subscripts: str, operands: list[Arr]) -> Arr:
    if any(isinstance(x, Tensor) for x in operands):
        return einsum(subscripts, *operands)
    return np.einsum(subscripts, *operands, optimize=True)


def _einsum_backward(
    g: Arr, out: Arr, spec: tuple[list[str], str, str], need: Need, *ops: Arr
) -> Grads:
    """C = einsum(s_1, ..., s_n -> s_out):  dC/dX_k is the einsum of dC (indexed s_out)
    with the other operands, to s_k. An index repeated in s_k (a diagonal, a trace) gets a
    fresh letter tied to the first by an identity matrix; an index summed in X_k alone, or
    present elsewhere only with size 1 (broadcast up to X_k's size), gets a vector of ones
    of X_k's size, so every index of s_k appears among the inputs at its size. Where X_k
    has size 1 and the others more, the engine sums the gradient back down (sum_to)."""
    ins, outs, spare = spec
    dtype = raw(g).dtype
    grads: list[Arr | None] = []
    for k, sub in enumerate(ins):
        if not need[k]:
            grads.append(None)
            continue
        size = dict(zip(sub, raw(ops[k]).shape))
        terms = [outs] + [s for j, s in enumerate(ins) if j != k]
        args = [g] + [x for j, x in enumerate(ops) if j != k]
        target, fresh = "", iter(spare)
        for c in sub:
            if c in target:
                new = next(fresh)
                terms.append(c + new)
                args.append(np.eye(size[c], dtype=dtype))
                target += new
            else:
                target += c
        seen: dict[str, int] = {}  # each index's largest size among the terms so far
        for t, x in zip(terms, args):
            for c, n in zip(t, raw(x).shape):
                seen[c] = max(seen.get(c, 0), n)
        for c in dict.fromkeys(sub):
            if seen.get(c, 0) < size[c]:  # absent, or only of size 1 broadcast against X_k
                terms.append(c)
                args.append(np.ones(size[c], dtype=dtype))
        grads.append(_einsum_any(",".join(terms) + "->" + target, args))
    return tuple(grads)


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
    amax = _amax
    reshape = _reshape
    transpose = _transpose
    permute = _permute
    T = property(_T)
    softmax = _softmax
    log_softmax = _log_softmax

    # The everyday ops (issue 15), defined in their section above.
    __rpow__ = _rpow
    __abs__ = _abs
    __lt__ = _comparison("<", np.less)
    __le__ = _comparison("<=", np.less_equal)
    __gt__ = _comparison(">", np.greater)
    __ge__ = _comparison(">=", np.greater_equal)
    __eq__ = _comparison("==", np.equal)  # type: ignore[assignment]
    __ne__ = _comparison("!=", np.not_equal)  # type: ignore[assignment]
    # Defining __eq__ would drop the hash; the graph walk keeps nodes in sets by identity.
    __hash__ = object.__hash__
    abs = _abs
    sqrt = _sqrt
    sign = _sign
    sin = _sin
    cos = _cos
    log1p = _log1p
    expm1 = _expm1
    erf = _erf
    clamp = _clamp
    clip = _clamp
    maximum = maximum
    minimum = minimum
    min = _min
    amin = _amin
    prod = _prod
    var = _var
    std = _std
    logsumexp = _logsumexp
    argmax = _argmax
    argmin = _argmin
    norm = _norm
    squeeze = _squeeze
    unsqueeze = _unsqueeze
    flatten = _flatten
    expand = _expand_to
    flip = _flip
    repeat = _repeat
    split = _split
    chunk = _chunk
    outer = outer

    def __bool__(self) -> bool:
        """The truth of a one-element tensor (``if (x > 0).item()`` reads better); any
        other size is ambiguous, an error as in torch."""
        if self.data.size != 1:
            raise RuntimeError(
                f"bool: the truth value of a tensor of shape {self.shape} is ambiguous; "
                "reduce it first (for example (t > 0).sum() or t.max())"
            )
        return bool(self.data.reshape(()))

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
            seed = np.empty(self.data.shape, dtype=self.data.dtype)
            seed.fill(1)  # np.ones() is this in a Python wrapper
        elif create_graph and isinstance(gradient, Tensor):
            seed = gradient  # kept as it is: the gradients may depend on it too, as in torch
        else:
            seed = _to_array(gradient, "backward(gradient)", self.data.dtype)
        if seed.shape != self.data.shape:
            raise ValueError(
                f"backward: gradient has shape {seed.shape} but the tensor has shape {self.shape}"
            )
        order = topological_order(self, leaves=False)  # a leaf has no rule to run
        for node in order:
            if node._prev:
                node.grad = None
        if create_graph:
            if not isinstance(seed, Tensor):
                seed = make_node(seed, (), "", None)
            with enable_grad():  # as torch: a create_graph pass records even under no_grad()
                _backward_walk(self, order, seed, True)
            return
        _backward_walk(self, order, seed, False)


def _backward_walk(root: Tensor, order: list[Tensor], seed: Arr, create_graph: bool) -> None:
    """Run every node's rule in reverse topological order, accumulating into the inputs."""
    _accumulate(root, seed, None)
    if create_graph:  # the same rules on the nodes: the gradients get history
        for node in reversed(order):
            rule, g = node._backward, node.grad
            if rule is None or g is None:
                continue
            prev = node._prev
            need = tuple([p.requires_grad for p in prev])
            grads = rule(g, node, node._ctx, need, *prev)
            for p, gp, n in zip(prev, grads, need):
                if n and gp is not None:
                    _accumulate(p, gp, g)
        return
    for node in reversed(order):
        rule, g = node._backward, node.grad
        if rule is None or g is None:
            continue
        prev = node._prev
        need = tuple([p.requires_grad for p in prev])  # a list first: faster than a generator
        grads = rule(g, node.data, node._ctx, need, *[p.data for p in prev])
        for p, gp, n in zip(prev, grads, need):
            if n and gp is not None:
                # _accumulate's two common cases written out (a call per edge saved): a
                # later arrival of the input's shape is added in place; a first arrival
                # the rule has just made, of the input's shape and dtype, is kept as it is
                data = p.data
                if type(gp) is np.ndarray and gp.shape == data.shape:
                    if p.grad is not None:
                        p.grad += gp
                        continue
                    if gp is not g and gp.base is None and gp.dtype == data.dtype:
                        p.grad = gp
                        continue
                _accumulate(p, gp, g)
