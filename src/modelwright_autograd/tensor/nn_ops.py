"""Dropout, attention, normalisation and embedding on Tensors, as in
``torch.nn.functional`` (``functional`` re-exports them; import that as ``F``)."""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import describe
from ..seeding import numpy_rng
from . import (
    Arr,
    Grads,
    Need,
    Tensor,
    check_tensor,
    make_node,
    raw,
    sum_dims,
    swapaxes,
    threads,
    where,
)

Pair = tuple[int, int]


# ---------------------------------------------------------------------- dropout
def dropout(input: Tensor, p: float = 0.5, training: bool = True, generator: Any = None) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) in training;
    the identity otherwise, as ``torch.nn.functional.dropout``. ``generator`` (an int seed
    or a NumPy generator; None: NumPy's global one) makes the mask reproducible."""
    check_tensor(input, "dropout: input")
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a probability between 0 and 1, got {p!r}")
    if not training or p == 0.0:
        return input
    x = input.data
    flat, scale = x.reshape(-1), (0.0 if p == 1.0 else 1.0 / (1.0 - p))  # a copy if need be
    kept, out = np.empty(x.shape, dtype=bool), np.empty(x.shape, dtype=x.dtype)
    parts = threads.spans(flat.size, 1)
    draws = _span_draws(generator, parts, 1)

    def dropout_block(i: int, j: int) -> None:
        mine = kept.reshape(-1)[i:j]
        np.greater_equal(draws(i, j), p, out=mine)
        np.multiply(flat[i:j], _dropout_mask(mine, scale, x.dtype), out=out.reshape(-1)[i:j])

    threads.run(dropout_block, parts)
    return make_node(out, (input,), "dropout", _dropout_backward, (kept, scale))


def _span_draws(generator: Any, parts: list[threads.Span], size: int) -> Any:
    """A function of a span (i, j) of ``parts`` giving its (j - i) * size uniform draws in
    [0, 1): the numbers one draw of them all in order would give (``generator``: an int
    seed, a NumPy generator, or None for NumPy's global one), whichever thread asks. On
    one thread the spans are drawn in order; on more, a PCG64 Generator (NumPy's default)
    gives each span a copy jumped ahead to its place, and another draws them all first."""
    rng = numpy_rng(generator)
    if threads.get_num_threads() == 1 or len(parts) < 2:  # threads.run: in order, here
        return lambda i, j: rng.random((j - i) * size)
    bits = getattr(rng, "bit_generator", None)
    if type(bits) not in (np.random.PCG64, np.random.PCG64DXSM):  # advance(n): n draws
        # (Philox's advance counts blocks of four, and the others have none)
        drawn = {span: rng.random((span[1] - span[0]) * size) for span in parts}
        return lambda i, j: drawn.pop((i, j))
    kind, state = type(bits), bits.state
    bits.advance(parts[-1][1] * size)  # past every draw, as one draw of them all would:
    after = bits.state  # which leaves a buffered half of a 32-bit draw as it was
    after.update(has_uint32=state["has_uint32"], uinteger=state["uinteger"])
    bits.state = after

    def draws(i: int, j: int) -> np.ndarray:
        mine = kind(0)
        mine.state = state
        mine.advance(i * size)
        return np.random.Generator(mine).random((j - i) * size)

    return draws


def _dropout_mask(kept: np.ndarray, scale: float, dtype: Any) -> np.ndarray:
    """The mask as numbers: ``scale`` where an element is kept, else 0, in ``dtype``."""
    return np.multiply(kept, scale, dtype=dtype)


def _dropout_backward(g: Arr, out: Arr, ctx: tuple[np.ndarray, float], need: Need, a: Arr) -> Grads:
    """c = a * m, m the mask (1/(1-p) where kept, else 0):  da = dc * m. The node keeps
    the booleans, not the mask: a quarter of a float32 mask's memory."""
    kept, scale = ctx
    return (g * _dropout_mask(kept, scale, raw(g).dtype),)


# ---------------------------------------------------------------------- attention
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    generator: Any = None,
) -> Tensor:
    """dropout(softmax(q k^T * scale + mask)) @ v as one node, as
    ``torch.nn.functional.scaled_dot_product_attention``: ``query`` (..., L, E), ``key``
    (..., S, E), ``value`` (..., S, Ev), leading dims broadcast; ``scale`` defaults to
    1/sqrt(E). ``attn_mask`` broadcasts to (..., L, S): boolean (True takes part) or float
    (added to the scores; a float Tensor gets a gradient). ``is_causal`` lets position i
    attend to positions 0..i only. A row with nothing to attend to gives 0, as torch's.
    Dropout (probability ``dropout_p``, applied whenever it is above 0, as torch's) draws
    its mask as ``dropout`` does from ``generator`` (an int seed or a NumPy generator;
    None: NumPy's global one). docs/derivations.md derives the rule."""
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(t, f"{op}: {name}")
        if t.ndim < 2:
            raise ValueError(f"{op}: {name} must have at least 2 dims, got shape {t.shape}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"{op}: query {query.shape}, key {key.shape} and value {value.shape} need "
            "query (..., L, E), key (..., S, E) and value (..., S, Ev)"
        )
    if (
        isinstance(dropout_p, bool)
        or not isinstance(dropout_p, numbers.Real)
        or not 0.0 <= dropout_p < 1.0
    ):
        raise ValueError(f"{op}: dropout_p must be a probability in [0, 1), got {dropout_p!r}")
    if scale is None:
        scale = 1.0 / np.sqrt(query.shape[-1])
    elif isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{op}: scale must be a number or None, got {describe(scale)}")
    scale = float(scale)
    lengths = (query.shape[-2], key.shape[-2])
    keep, added = _attention_mask(attn_mask, is_causal, lengths, op)
    extra = added.data if added is not None else None  # the scores to add, if any
    if extra is None:
        extra = _causal(*lengths)[1] if is_causal else _minus_inf_where_not(keep)
    lead = _batch_shape(query, key, value, extra, op)
    batch, (length, source) = lead or (1,), lengths  # one batch dim at least, to cut
    q, k, v = (_batched(t.data, batch) for t in (query, key, value))
    if extra is not None and extra.ndim > 2:  # else one array serves every pair
        extra = _batched(extra, batch)
    probs = np.empty((*batch, length, source), np.result_type(q, k))
    out = np.empty((*batch, length, v.shape[-1]), np.result_type(probs, v))
    dead = np.zeros((*batch, length, 1), dtype=bool)  # the rows with nothing to attend to
    kept = None  # dropout's booleans: the node keeps these, not the mask (a quarter the size)
    per_item = math.prod(batch[1:]) * length * source  # scores of an item of the first dim
    parts = threads.spans(batch[0], per_item)
    if dropout_p:
        kept = np.empty(probs.shape, dtype=bool)
        draws = _span_draws(generator, parts, per_item)

    def attention_block(i: int, j: int) -> None:  # items i..j-1 of the first batch dim, in cache
        scores = probs[i:j]
        np.matmul(q[i:j], np.swapaxes(k[i:j], -1, -2), out=scores)
        scores *= scale
        if extra is not None:
            scores += extra if extra.ndim < 3 else extra[i:j]
        _safe_softmax(scores, dead[i:j])
        if kept is not None:
            draw = draws(i, j).reshape(scores.shape)
            scores = scores * _dropped(
                np.greater_equal(draw, dropout_p, out=kept[i:j]), dropout_p, scores
            )
        np.matmul(scores, v[i:j], out=out[i:j])

    threads.run(attention_block, parts)
    dead = dead.reshape((*lead, length, 1)) if dead.any() else None
    prev = (query, key, value) if added is None else (query, key, value, added)
    ctx = (probs, (kept, dropout_p), scale, keep, dead, lead)
    return make_node(
        out.reshape((*lead, *out.shape[-2:])), prev, op, _scaled_dot_product_attention_backward, ctx
    )


def _batch_shape(query: Tensor, key: Tensor, value: Tensor, extra: Any, op: str) -> tuple:
    """The batch dims that query, key, value and the mask broadcast to."""
    try:
        lead = np.broadcast_shapes(query.shape[:-2], key.shape[:-2])
        if extra is not None:
            lead = np.broadcast_shapes(lead, np.shape(extra)[:-2])
            scores = (query.shape[-2], key.shape[-2])
            if np.broadcast_shapes(scores, np.shape(extra)[-2:]) != scores:
                raise ValueError  # a mask broadcasts to the (L, S) scores, as torch's
    except ValueError:
        raise ValueError(
            f"{op}: query {query.shape}, key {key.shape} and mask "
            f"{np.shape(extra) if extra is not None else None} cannot broadcast"
        ) from None
    try:
        return np.broadcast_shapes(lead, value.shape[:-2])
    except ValueError:
        raise ValueError(
            f"{op}: the batch dims of query {query.shape}, key {key.shape} and value "
            f"{value.shape} cannot broadcast"
        ) from None


def _batched(a: np.ndarray, batch: tuple[int, ...]) -> np.ndarray:
    """a's matrices broadcast to the batch dims ``batch`` (a view)."""
    return np.broadcast_to(a, (*batch, *a.shape[-2:]))


def _dropped(kept: np.ndarray, p: float, like: np.ndarray) -> np.ndarray:
    """Attention dropout's mask as numbers: 1/(1-p) where kept, else 0, in like's dtype."""
    return _dropout_mask(kept, 1.0 / (1.0 - p), like.dtype)


def _attention_mask(
    attn_mask: Any, is_causal: bool, lengths: Pair, op: str
) -> tuple[np.ndarray | None, Tensor | None]:
    """The mask as (positions that take part, or None; a float Tensor to add, or None)."""
    if attn_mask is None:
        if not is_causal:
            return None, None
        return _causal(*lengths)[0], None
    if is_causal:
        raise ValueError(f"{op}: pass attn_mask or is_causal=True, not both")
    data = raw(attn_mask) if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
    if data.dtype == np.bool_:
        return data, None
    if data.dtype.kind != "f":
        raise TypeError(
            f"{op}: attn_mask must be boolean (True takes part) or float (added), "
            f"got dtype {data.dtype}"
        )
    if not isinstance(attn_mask, Tensor):
        attn_mask = make_node(data, (), "", None)
    return None, attn_mask


@functools.lru_cache(maxsize=4)
def _causal(length: int, source_length: int) -> tuple[np.ndarray, np.ndarray]:
    """The causal mask of an (L, S) attention (row i: True at 0..i) and its scores to add
    (0 there, -inf elsewhere), read-only: made once a shape, not at every call."""
    keep = np.tri(length, source_length, dtype=bool)
    blocked = _minus_inf_where_not(keep)
    keep.flags.writeable = blocked.flags.writeable = False
    return keep, blocked


def _minus_inf_where_not(keep: np.ndarray | None) -> np.ndarray | None:
    """A boolean mask as scores to add: 0 where it holds, -inf elsewhere (as torch turns
    it; one addition is faster than a selection)."""
    if keep is None:
        return None
    return np.where(keep, np.float32(0.0), np.float32(-np.inf))


def _row_sums(x: np.ndarray) -> np.ndarray:
    """x summed over its last dim, keeping it: a product with a column of ones, which BLAS
    does several times faster than NumPy's reduction over short rows."""
    return x @ np.ones((x.shape[-1], 1), dtype=x.dtype)


def _row_max(x: np.ndarray) -> np.ndarray:
    """x's maximum over its last dim, keeping it (nan if a row holds one), read at each
    row's argmax: argmax scans a row in one C call, where the ufunc reduction pays about
    0.1 us of set-up a row (2.5x faster on a GPT's 64-wide scores)."""
    n = x.shape[-1]
    at = np.argmax(x, axis=-1).reshape(-1)
    at += np.arange(0, at.size * n, n)  # each row's argmax as an index into x flattened
    return x.reshape(-1)[at].reshape((*x.shape[:-1], 1))


def _safe_softmax(scores: np.ndarray, dead: np.ndarray) -> None:
    """softmax over the last dim, in place, computed as e^(x - max); a row of -inf only
    (nothing to attend to) gives zeros, as torch's, and is marked True in ``dead`` (a
    boolean (..., L, 1) array)."""
    top = _row_max(scores)
    any_dead = np.equal(top, -np.inf, out=dead).any()
    if any_dead:
        top[dead] = 0.0
    scores -= top
    np.exp(scores, out=scores)
    total = _row_sums(scores)
    if any_dead:
        total[dead] = 1.0  # 0 / 1: the row stays 0
    scores /= total


def _scaled_dot_product_attention_backward(
    g: Arr, out: Arr, ctx: tuple, need: Need, q: Arr, k: Arr, v: Arr, *mask: Arr
) -> Grads:
    """O = D(P) @ V with P = softmax(S), S = Q K^T * scale (+ M, masked to -inf) and D the
    dropout (P times a constant 0 or 1/(1-p) per element):
    dV = D(P)^T dO, dP = D(dO V^T), dS = P * (dP - rowsum(dP * P)), dQ = dS K * scale,
    dK = dS^T Q * scale, dM = dS. The fast pass does it a block of items of the first batch
    dim at a time, as the forward pass does; under create_graph P is computed again from Q and
    K (and M) as nodes, so the second derivative sees how it depends on them."""
    if isinstance(g, Tensor):
        return _attention_graph_rule(g, ctx, need, q, k, v, *mask)
    probs, (kept, dropout_p), scale, _, _, lead = ctx
    batch, (length, source) = probs.shape[:-2], probs.shape[-2:]
    qs, ks, vs, gs = (_batched(a, batch) for a in (q, k, v, g))
    grad_q, grad_k, grad_v, grad_m = (
        np.empty(shape, dtype) if wanted else None
        for wanted, shape, dtype in (
            (need[0], qs.shape, np.result_type(gs, ks)),
            (need[1], ks.shape, np.result_type(gs, qs)),
            (need[2], vs.shape, np.result_type(probs, gs)),
            (mask and need[3], probs.shape, np.result_type(gs, vs)),
        )
    )
    scores_wanted = need[0] or need[1] or (mask and need[3])

    def attention_backward_block(i: int, j: int) -> None:
        p = probs[i:j]
        dropped = None if kept is None else _dropped(kept[i:j], dropout_p, p)
        if grad_v is not None:
            weights = p if dropped is None else p * dropped
            np.matmul(np.swapaxes(weights, -1, -2), gs[i:j], out=grad_v[i:j])
        if not scores_wanted:
            return
        gp = gs[i:j] @ np.swapaxes(vs[i:j], -1, -2)
        if dropped is not None:
            gp *= dropped
        gp -= _row_sums(gp * p)
        gp *= p  # dS
        if grad_q is not None:
            np.matmul(gp, ks[i:j], out=grad_q[i:j])
            grad_q[i:j] *= scale
        if grad_k is not None:
            np.matmul(np.swapaxes(gp, -1, -2), qs[i:j], out=grad_k[i:j])
            grad_k[i:j] *= scale
        if grad_m is not None:
            grad_m[i:j] = gp

    threads.run(
        attention_backward_block, threads.spans(batch[0], math.prod(batch[1:]) * length * source)
    )
    grads = tuple(
        None if a is None else a.reshape((*lead, *a.shape[-2:]))
        for a in (grad_q, grad_k, grad_v, grad_m)
    )
    return grads if mask else grads[:3]


def _attention_graph_rule(
    g: Tensor, ctx: tuple, need: Need, q: Arr, k: Arr, v: Arr, *mask: Arr
) -> Grads:
    """The attention rule as nodes (create_graph), with P computed again."""
    _, (kept, dropout_p), scale, keep, dead, lead = ctx
    scores = (q @ swapaxes(k, -1, -2)) * scale
    if mask:
        scores = scores + mask[0]
    if keep is not None:
        scores = where(keep, scores, -np.inf)
    if dead is not None:  # no -inf rows: their probabilities are set to 0 below
        scores = where(dead, 0.0, scores)
    probs = scores.softmax(-1)
    if dead is not None:
        probs = where(dead, 0.0, probs)
    dropped = None
    if kept is not None:
        dropped = _dropped(kept, dropout_p, raw(probs)).reshape((*lead, *kept.shape[-2:]))
    weights = probs if dropped is None else probs * dropped
    gv = swapaxes(weights, -1, -2) @ g if need[2] else None
    gs = None
    if need[0] or need[1] or (mask and need[3]):
        gp = g @ swapaxes(v, -1, -2)
        if dropped is not None:
            gp = gp * dropped
        gs = probs * (gp - sum_dims(gp * probs, (gp.ndim - 1,), True))
    gq = (gs @ k) * scale if need[0] else None
    gk = (swapaxes(gs, -1, -2) @ q) * scale if need[1] else None
    if mask:
        return gq, gk, gv, (gs if need[3] else None)
    return gq, gk, gv


# ---------------------------------------------------------------------- normalisation
def _affine(
    y: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    shape: tuple[int, ...],
    bshape: tuple[int, ...],
    op: str,
) -> Tensor:
    """y * weight + bias, each (if given) checked to have ``shape`` and broadcast as
    ``bshape``."""
    _check_affine(weight, bias, shape, op)
    if weight is not None:
        y = y * weight.reshape(bshape)
    if bias is not None:
        y = y + bias.reshape(bshape)
    return y


def _check_affine(
    weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...], op: str
) -> None:
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            check_tensor(t, f"{op}: {name}")
            if t.shape != shape:
                raise ValueError(f"{op}: {name} has shape {t.shape}, expected {shape}")


def _normalise(xc: Tensor, var: Tensor | np.ndarray, eps: float) -> Tensor:
    """(x - mean) / sqrt(var + eps)."""
    return xc * (var + eps) ** -0.5


def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the last dims (``normalized_shape``) to mean 0 and variance 1 (the
    biased variance, as torch), then scale by ``weight`` and shift by ``bias``. One node
    rather than nine (a GPT has one per block and sublayer); docs/derivations.md derives
    its rule."""
    op = "layer_norm"
    check_tensor(input, f"{op}: input")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    shape = tuple(int(n) for n in normalized_shape)
    k = len(shape)
    if not k or k > input.ndim or input.shape[input.ndim - k :] != shape:
        raise ValueError(
            f"{op}: normalized_shape {shape} must be the last dims of the input, "
            f"got input {input.shape}"
        )
    _check_affine(weight, bias, shape, op)
    x = input.data if input.data.dtype.kind == "f" else input.data.astype(np.float64)
    n = math.prod(shape)
    rows = x.reshape(math.prod(x.shape[: x.ndim - k]), n)
    count = max(n, 1)  # an empty row's statistics are 0, not 0/0
    xhat, rstd = np.empty(rows.shape, rows.dtype), np.empty((len(rows), 1), rows.dtype)
    w = None if weight is None else weight.data.reshape(-1)
    b = None if bias is None else bias.data.reshape(-1)
    out = None  # xhat * w (+ b in place, when that keeps the product's dtype), or None
    if w is not None:
        out = np.empty(rows.shape, np.result_type(xhat, w))
    in_place = (
        out is not None and b is not None and np.promote_types(out.dtype, b.dtype) == out.dtype
    )

    # the means as one product over all rows: BLAS's sums may depend on where a block starts
    means = _row_sums(rows) / count

    def layer_norm_block(i: int, j: int) -> None:  # rows i..j-1, in cache
        xc = np.subtract(rows[i:j], means[i:j], out=xhat[i:j])
        var = np.einsum("ij,ij->i", xc, xc).reshape(-1, 1)  # the rows' sums of squares
        var /= count
        var += eps
        rstd[i:j] = var**-0.5
        xc *= rstd[i:j]
        if out is not None:
            np.multiply(xc, w, out=out[i:j])
            if in_place:
                out[i:j] += b

    threads.run(layer_norm_block, threads.spans(len(rows), n))
    data = (xhat if out is None else out).reshape(x.shape)
    prev: tuple[Tensor, ...] = (input,)
    if weight is not None:
        prev += (weight,)
    if bias is not None:
        if not in_place:
            data = data + bias.data
        prev += (bias,)
    ctx = (xhat, rstd, tuple(range(x.ndim - k, x.ndim)), eps, weight is not None, bias is not None)
    return make_node(data, prev, op, _layer_norm_backward, ctx)


def _layer_norm_backward(g: Arr, out: Arr, ctx: tuple, need: Need, x: Arr, *wb: Arr) -> Grads:
    """y = xhat * w + b with xhat = (x - mean) * rstd, rstd = (var + eps)^(-1/2), over the
    normalised dims (N values a row): dx = rstd * (dxhat - mean(dxhat) - xhat *
    mean(dxhat * xhat)) with dxhat = dy * w, dw = sum(dy * xhat) and db = sum(dy) over
    the leading dims. The fast pass works on the rows (the normalised dims flattened),
    with its means and sums as BLAS products and the rest in place; under create_graph
    xhat is computed again from x as nodes, so the second derivative sees its
    dependence on x."""
    xhat, rstd, dims, eps, has_w, has_b = ctx
    w = wb[0] if has_w else None
    shape = x.shape[dims[0] :]
    if isinstance(g, Tensor):
        xc = x - x.mean(dims, keepdim=True)
        rstd = ((xc * xc).mean(dims, keepdim=True) + eps) ** -0.5
        xhat = xc * rstd
        dxhat = g * w if has_w else g
        gx = None
        if need[0]:
            m1 = dxhat.mean(dims, keepdim=True)
            m2 = (dxhat * xhat).mean(dims, keepdim=True)
            gx = rstd * (dxhat - m1 - xhat * m2)
        grads: list[Any] = [gx]
        if has_w:  # a sum over the leading dims (reshaped to one: there may be none)
            grads.append((g * xhat).reshape((-1, *shape)).sum(0) if need[1] else None)
        if has_b:
            grads.append(g.reshape((-1, *shape)).sum(0) if need[-1] else None)
        return tuple(grads)
    rows = g.reshape(xhat.shape)
    n = rows.shape[1]
    gy = np.empty(rows.shape, np.result_type(rows, xhat))  # dy * xhat: dw's terms, and
    parts = threads.spans(len(rows), n)  # dxhat * xhat but for the factor w
    threads.run(lambda i, j: np.multiply(rows[i:j], xhat[i:j], out=gy[i:j]), parts)
    grads = [None]
    if has_w:
        grads.append(_column_sums(gy, shape) if need[1] else None)
    if has_b:
        grads.append(_column_sums(rows, shape) if need[-1] else None)
    if need[0]:
        # the means of dxhat = dy * w and of dxhat * xhat: products with the column w / N
        col = np.ones((n, 1), dtype=rows.dtype) if w is None else w.reshape(n, 1)
        col = col / max(n, 1)
        m1, m2 = rows @ col, gy @ col  # over all rows, as the forward pass's means
        gx = np.empty(x.shape, dtype=gy.dtype)
        gx_rows = gx.reshape(rows.shape)  # a view: writing it writes gx

        def layer_norm_backward_block(i: int, j: int) -> None:  # rows i..j-1, in cache
            out = gx_rows[i:j]
            if has_w:
                np.multiply(rows[i:j], w.reshape(-1), out=out)
            else:
                out[...] = rows[i:j]
            out -= m1[i:j]
            out -= np.multiply(xhat[i:j], m2[i:j], out=gy[i:j])  # gy's terms are summed: reuse
            out *= rstd[i:j]

        threads.run(layer_norm_backward_block, parts)
        grads[0] = gx
    return tuple(grads)


def _column_sums(rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """rows (M, N) summed over M, as a new array of ``shape`` (N values): a product with a
    row of ones, faster than NumPy's reduction (see ``_row_sums``)."""
    out = np.empty(shape, dtype=rows.dtype)
    np.matmul(np.ones((1, rows.shape[0]), dtype=rows.dtype), rows, out=out.reshape(1, -1))
    return out


def _stat(t: object, c: int, name: str) -> np.ndarray | None:
    """A running statistic's array (updated in place), checked to have shape (C,)."""
    if t is None:
        return None
    arr = t.data if isinstance(t, Tensor) else t
    if not isinstance(arr, np.ndarray) or arr.shape != (c,) or arr.dtype.kind != "f":
        raise ValueError(
            f"batch_norm: {name} must be a float Tensor or array of shape ({c},), got {describe(t)}"
        )
    return arr


def batch_norm(
    input: Tensor,
    running_mean: Tensor | np.ndarray | None,
    running_var: Tensor | np.ndarray | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) of an (N, C, ...) input, as
    ``torch.nn.functional.batch_norm``. In training: by the batch's mean and biased
    variance, and the running statistics (if given) move ``momentum`` of the way to the
    batch's mean and unbiased variance, in place. Otherwise by the running statistics."""
    op = "batch_norm"
    check_tensor(input, f"{op}: input")
    if input.ndim < 2:
        raise ValueError(f"{op}: input must be (N, C, ...), got {input.shape}")
    c = input.shape[1]
    mean_arr = _stat(running_mean, c, "running_mean")
    var_arr = _stat(running_var, c, "running_var")
    dims = (0, *range(2, input.ndim))
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if training:
        count = input.data.size // c if c else 0
        if count <= 1:
            raise ValueError(
                f"{op}: training needs more than 1 value per channel, got input {input.shape}"
            )
        x = input.data
        mean = x.mean(axis=dims, keepdims=True)
        xc = x - mean
        var = (xc * xc).mean(axis=dims, keepdims=True)
        if mean_arr is not None:
            mean_arr *= 1.0 - momentum
            mean_arr += momentum * mean.reshape(c)
        if var_arr is not None:  # the unbiased variance, as torch keeps
            var_arr *= 1.0 - momentum
            var_arr += momentum * var.reshape(c) * (count / (count - 1))
        inv_std = 1.0 / np.sqrt(var + eps)
        return _batch_norm_node(input, weight, bias, xc * inv_std, inv_std, (dims, eps, bshape))
    if mean_arr is None or var_arr is None:
        raise ValueError(f"{op}: running_mean and running_var are needed when not training")
    y = _normalise(input - mean_arr.reshape(bshape), var_arr.reshape(bshape), eps)
    return _affine(y, weight, bias, (c,), bshape, op)


def _batch_norm_node(
    x: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    xhat: np.ndarray,
    inv_std: np.ndarray,
    ctx: tuple[tuple[int, ...], float, tuple[int, ...]],
) -> Tensor:
    """Training-mode batch norm as one node: y = xhat * weight + bias, where xhat is x
    normalised by the batch's statistics. One node instead of a dozen (a mean, a
    subtraction, a square, a power...) makes the CNN's training step much cheaper."""
    bshape = ctx[2]
    _check_affine(weight, bias, (bshape[1],), "batch_norm")
    data = xhat
    prev: tuple[Tensor, ...] = (x,)
    if weight is not None:
        data = data * weight.data.reshape(bshape)
        prev += (weight,)
    if bias is not None:
        data = data + bias.data.reshape(bshape)
        prev += (bias,)
    node_ctx = (*ctx, weight is not None, bias is not None, xhat, inv_std)
    return make_node(data, prev, "batch_norm", _batch_norm_backward, node_ctx)


def _batch_norm_backward(g: Arr, out: Arr, ctx: tuple, need: Need, x: Arr, *wb: Arr) -> Grads:
    """y = xhat * w + b with xhat = (x - mean) / sqrt(var + eps) over the batch dims:
    dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sqrt(var + eps) with
    dxhat = dy * w (the mean and the variance depend on x too), dw = sum(dy * xhat),
    db = sum(dy). Under create_graph xhat is computed again from x as nodes."""
    dims, eps, bshape, has_w, has_b, xhat, inv_std = ctx
    if isinstance(g, Tensor):
        xc = x - x.mean(dims, keepdim=True)
        inv_std = ((xc * xc).mean(dims, keepdim=True) + eps) ** -0.5
        xhat = xc * inv_std
    dxhat = g * wb[0].reshape(bshape) if has_w else g
    count = raw(g).size // bshape[1]
    gx = None
    if need[0]:
        m1 = sum_dims(dxhat, dims, True) / count
        m2 = sum_dims(dxhat * xhat, dims, True) / count
        gx = inv_std * (dxhat - m1 - xhat * m2)
    grads: list[Any] = [gx]
    if has_w:
        grads.append(sum_dims(g * xhat, dims, False) if need[1] else None)
    if has_b:
        grads.append(sum_dims(g, dims, False) if need[-1] else None)
    return tuple(grads)


# ---------------------------------------------------------------------- embedding
def embedding(input: Any, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer indices ``input`` (any
    shape), as ``torch.nn.functional.embedding``; the row at ``padding_idx`` gets no
    gradient."""
    op = "embedding"
    check_tensor(weight, f"{op}: weight")
    if weight.ndim != 2:
        raise ValueError(
            f"{op}: weight must be (num_embeddings, embedding_dim), got {weight.shape}"
        )
    if isinstance(input, Tensor):
        raise TypeError(
            f"{op}: input must be integer indices (a NumPy int array or list), "
            "not a Tensor of floats"
        )
    idx = np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise TypeError(
            f"{op}: input must be integer indices, got {describe(input)} (dtype {idx.dtype})"
        )
    rows = weight.shape[0]
    # torch refuses a negative index here (IndexError), where NumPy would wrap it
    bad = (idx < 0) | (idx >= rows) if idx.size else np.zeros(0, bool)
    if bad.any():
        raise IndexError(f"{op}: index {idx[bad][0]} is out of range for {rows} embeddings")
    out = weight[idx]
    if padding_idx is None:
        return out
    if (
        isinstance(padding_idx, bool)
        or not isinstance(padding_idx, numbers.Integral)
        or not -rows <= padding_idx < rows
    ):
        raise ValueError(
            f"{op}: padding_idx must be an int from {-rows} to {rows - 1}, got {padding_idx!r}"
        )
    pad = (idx % rows == padding_idx % rows)[..., None]
    if not pad.any():
        return out
    keep = make_node((~pad).astype(weight.dtype), (), "", None)
    frozen = make_node(np.where(pad, weight.data[idx], 0.0).astype(weight.dtype), (), "", None)
    return out * keep + frozen
