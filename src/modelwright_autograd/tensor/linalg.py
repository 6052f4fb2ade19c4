"""Linear algebra of the tensor engine: products, each forward directly above its backward
rule (kit.py), bound as Tensor methods at the end.

    op             forward       rule                    gradients
    A @ B          _matmul       _matmul_backward        dA = dC B^T, dB = A^T dC
    linear         linear        _linear_backward        dx = dy W, dW = dy^T x, db = sum dy
    linear_relu    linear_relu   _linear_relu_backward   relu's rule, then linear's
    outer          outer         _outer_backward         da = dC b, db = dC^T a
    einsum         einsum        _einsum_backward        an einsum of dC with the others
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from ..checks import describe
from .core import Arr, Grads, Need, Operand, Tensor, check_tensor, lift, make_node, raw, sum_to
from .elementwise import relu_array
from .kit import sum_dims, swapaxes, zero_where


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
    other = lift(other, a, "@")
    try:
        data = np.matmul(a.data, other.data)
    except ValueError:
        raise ValueError(_matmul_error(a, other)) from None
    return make_node(data, (a, other), "@", _matmul_backward)


def _rmatmul(a: Tensor, other: np.ndarray) -> Tensor:
    if not isinstance(other, np.ndarray):
        raise TypeError(f"unsupported operand for @: {describe(other)} and Tensor")
    return _matmul(lift(other, a, "@"), a)


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
    shape = x.shape
    if g.ndim != 2:  # a batch of any shape is a batch of rows: one BLAS product, not many
        g, x = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])
    gx = None
    if need[0] and isinstance(g, Tensor):
        gx = (g @ w).reshape(shape)
    elif need[0]:  # into an array of x's shape: a fresh array the walk keeps, not a view
        gx = np.empty(shape, np.result_type(g, w))  # of one, which it would copy
        np.matmul(g, w, out=gx.reshape(g.shape[0], w.shape[1]))
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
        out = relu_array(data, overwrite=True)
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
    if x.ndim > 2:  # (..., in) as rows: NumPy's stacked matmul with w.T is far slower
        data = (x.reshape(-1, x.shape[-1]) @ w.T).reshape(*x.shape[:-1], w.shape[0])
    else:
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


# ---------------------------------------------------------------------- products
def outer(input: Tensor, vec2: Operand) -> Tensor:
    """The outer product of two 1-D tensors, ``input[i] * vec2[j]``, as ``torch.outer``."""
    check_tensor(input, "outer: input")
    other = lift(vec2, input, "outer")
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
    ts = tuple(lift(x, like, "einsum") for x in operands)  # type: ignore[arg-type]
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


# ---------------------------------------------------------------------- Tensor methods
Tensor.__matmul__ = _matmul
Tensor.__rmatmul__ = _rmatmul
Tensor.outer = outer
