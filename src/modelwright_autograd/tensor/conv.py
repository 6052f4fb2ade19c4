"""Convolution and pooling on Tensors, as in ``torch.nn.functional`` (``functional``
re-exports them; import that as ``F``).

Convolution is im2col and one matrix product: ``unfold`` copies every window of the
(padded) input into a row of a matrix, so a convolution is that matrix times the flattened
kernels. ``unfold`` and its adjoint ``fold`` are ops of their own, each the other's
gradient, so ``conv2d``'s rule and the pools (written as ``unfold`` plus Tensor ops) can be
differentiated again. docs/design.md ("Convolution") says why this and not a loop.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..checks import describe
from . import (
    Arr,
    Grads,
    Need,
    Tensor,
    check_tensor,
    make_node,
    permute,
    sum_dims,
    swapaxes,
)

Pair = tuple[int, int]


# ---------------------------------------------------------------------- argument checks
def _pair(value: object, name: str, op: str, minimum: int) -> Pair:
    """An int or a pair of ints, each at least ``minimum``, as a pair."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(items) != 2 or any(
        isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in items
    ):
        raise TypeError(f"{op}: {name} must be an int or a pair of ints, got {describe(value)}")
    if any(v < minimum for v in items):
        raise ValueError(f"{op}: {name} must be at least {minimum}, got {value!r}")
    return int(items[0]), int(items[1])


def _single(value: object, name: str, op: str) -> object:
    """conv1d's int (or 1-tuple) argument as the pair conv2d needs: 1 along the dummy dim."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise TypeError(f"{op}: {name} must be an int or a 1-tuple, got {describe(value)}")
        value = value[0]
    return value


@dataclass(frozen=True)
class Window:
    """Where a sliding window goes over the last two dims of an (N, C, H, W) input: the
    kernel, stride and dilation per dim, the padding (before, after) per dim, the channel
    groups, the input's shape and the output's (oH, oW)."""

    kernel: Pair
    stride: Pair
    dilation: Pair
    padding: tuple[Pair, Pair]
    groups: int
    shape: tuple[int, int, int, int]
    out: Pair

    @property
    def span(self) -> Pair:
        """The dilated kernel's extent: d*(k-1)+1 per dim."""
        return tuple(d * (k - 1) + 1 for d, k in zip(self.dilation, self.kernel))  # type: ignore[return-value]

    @property
    def reach(self) -> Pair:
        """How far the dilated kernel reaches past its first tap: d*(k-1) per dim."""
        return self.span[0] - 1, self.span[1] - 1

    @property
    def cols(self) -> tuple[int, int, int]:
        """The shape of ``unfold``'s matrix: (groups, C/groups*kH*kW, N*oH*oW)."""
        n, c = self.shape[:2]
        g = self.groups
        return g, c // g * self.kernel[0] * self.kernel[1], n * self.out[0] * self.out[1]


def _window(
    op: str,
    shape: tuple[int, ...],
    kernel: Pair,
    stride: Pair,
    dilation: Pair,
    padding: tuple[Pair, Pair],
    groups: int = 1,
) -> Window:
    """The window geometry, or a ValueError naming the shapes when the (dilated) kernel does
    not fit in the padded input."""
    n, c, h, w = shape
    out = []
    for size, (before, after), k, d, s, axis in zip(
        (h, w), padding, kernel, dilation, stride, ("height", "width")
    ):
        padded, span = size + before + after, d * (k - 1) + 1
        if span > padded:
            raise ValueError(
                f"{op}: the kernel's {axis} {span} (kernel {k}, dilation {d}) is larger than "
                f"the padded input's {axis} {padded} (input shape {tuple(shape)})"
            )
        out.append((padded - span) // s + 1)
    return Window(kernel, stride, dilation, padding, groups, (n, c, h, w), (out[0], out[1]))


# ---------------------------------------------------------------------- im2col and col2im
def _im2col(x: np.ndarray, win: Window, fill: float) -> np.ndarray:
    """Every window of the padded x as a column: (groups, C/groups*kH*kW, N*oH*oW), rows in
    (channel, kernel row, kernel column) order, columns in (n, i, j) order. This layout
    copies runs of neighbouring pixels (the innermost axis is the output column), which is
    several times faster than one window per row."""
    n, c, _, _ = win.shape
    (pt, pb), (pl, pr) = win.padding
    if pt or pb or pl or pr:
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    (sh, sw), (dh, dw), (kh, kw), (oh, ow) = win.stride, win.dilation, win.kernel, win.out
    view = sliding_window_view(x, win.span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    g = win.groups
    view = view.reshape(n, g, c // g, oh, ow, kh, kw)  # splitting C: still a view
    return view.transpose(1, 2, 5, 6, 0, 3, 4).reshape(win.cols)  # the one copy


def _col2im(cols: np.ndarray, win: Window) -> np.ndarray:
    """The adjoint of ``_im2col``: each row's entries added back where they were copied
    from (an input element inside several windows receives the sum), padding cropped."""
    n, c, h, w = win.shape
    (pt, pb), (pl, pr) = win.padding
    (sh, sw), (dh, dw), (kh, kw), (oh, ow) = win.stride, win.dilation, win.kernel, win.out
    g = win.groups
    parts = cols.reshape(g, c // g, kh, kw, n, oh, ow)
    full = np.zeros((n, c, h + pt + pb, w + pl + pr), dtype=cols.dtype)
    grouped = full.reshape(n, g, c // g, *full.shape[2:])
    for i in range(kh):  # one strided add per kernel position
        rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
        for j in range(kw):
            columns = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
            grouped[:, :, :, rows, columns] += parts[:, :, i, j].transpose(2, 0, 1, 3, 4)
    if pt or pb or pl or pr:
        return full[:, :, pt : pt + h, pl : pl + w].copy()
    return full


def unfold(x: Arr, win: Window, fill: float = 0.0) -> Arr:
    """im2col (padding with ``fill``): NumPy on arrays, an op on Tensors."""
    if not isinstance(x, Tensor):
        return _im2col(x, win, fill)
    return make_node(_im2col(x.data, win, fill), (x,), "unfold", _unfold_backward, win)


def _unfold_backward(g: Arr, out: Arr, win: Window, need: Need, x: Arr) -> Grads:
    """cols = unfold(x) copies elements of x:  dx adds each copy's gradient back, fold."""
    return (fold(g, win),)


def fold(cols: Arr, win: Window) -> Arr:
    """col2im: NumPy on arrays, an op on Tensors."""
    if not isinstance(cols, Tensor):
        return _col2im(cols, win)
    return make_node(_col2im(cols.data, win), (cols,), "fold", _fold_backward, win)


def _fold_backward(g: Arr, out: Arr, win: Window, need: Need, cols: Arr) -> Grads:
    """x = fold(cols) sums entries of cols:  dcols copies dx back out, unfold (padding 0:
    the padded positions are not inputs)."""
    return (unfold(g, win, 0.0),)


# ---------------------------------------------------------------------- convolution
def _padding(padding: object, win_args: tuple[Pair, Pair], op: str) -> tuple[Pair, Pair]:
    """conv's padding: an int, a pair, 'valid' (none) or 'same' (output as large as the
    input at stride 1; an even kernel pads one more after than before, as torch)."""
    kernel, dilation = win_args
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return (total[0] // 2, total[0] - total[0] // 2), (total[1] // 2, total[1] - total[1] // 2)
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be 'valid', 'same' or ints, got {padding!r}")
    ph, pw = _pair(padding, "padding", op, 0)
    return (ph, ph), (pw, pw)


def _correlate(x: np.ndarray, w: np.ndarray, win: Window) -> tuple[np.ndarray, np.ndarray]:
    """conv2d on arrays, without bias: the (N, O, oH, oW) output and the columns of x."""
    cols = _im2col(x, win, 0.0)
    g, o = win.groups, w.shape[0]
    n, (oh, ow) = win.shape[0], win.out
    product = w.reshape(g, o // g, -1) @ cols  # (G, O/G, N*L)
    out = product.reshape(g, o // g, n, oh, ow).transpose(2, 0, 1, 3, 4)
    return out.reshape(n, o, oh, ow), cols


def _transposed_kernel(w: np.ndarray, groups: int) -> np.ndarray:
    """The kernel of conv2d's adjoint at stride 1: each group's (O/G, C/G) roles swapped
    and the taps flipped, as (C, O/G, kH, kW)."""
    o, cg, kh, kw = w.shape
    per_group = w[:, :, ::-1, ::-1].reshape(groups, o // groups, cg, kh, kw)
    return per_group.transpose(0, 2, 1, 3, 4).reshape(groups * cg, o // groups, kh, kw)


def _transposable(win: Window, out_channels: int) -> bool:
    """Whether conv2d's input gradient is cheaper as a correlation of dy: at stride 1, when
    no side pads more than the kernel reaches (else dy would need cropping, not padding),
    and dy has no more channels than x (its columns, O*kH*kW rows, are then no larger
    than the fold's C*kH*kW, and the fold's kH*kW passes over the input are saved)."""
    return (
        win.stride == (1, 1)
        and out_channels <= win.shape[1]
        and all(p <= r for r, pads in zip(win.reach, win.padding) for p in pads)
    )


def _input_grad(g: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray:
    """conv2d's input gradient as a transposed convolution (``_transposable`` windows):
    dy padded by the reach less the forward's padding, correlated with the transposed
    kernel by the forward's own code. The same sums as fold(W^T @ dy), without the
    scatter of kH*kW strided adds over the input."""
    (rh, rw), ((top, bottom), (left, right)) = win.reach, win.padding
    pads = (rh - top, rh - bottom), (rw - left, rw - right)
    back = _window("conv2d", g.shape, win.kernel, (1, 1), win.dilation, pads, win.groups)
    return _correlate(g, _transposed_kernel(w, win.groups), back)[0]


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Pair = 1,
    padding: int | Pair | str = 0,
    dilation: int | Pair = 1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation, as ``torch.nn.functional.conv2d``: ``input`` (N, C, H, W) or
    (C, H, W), ``weight`` (O, C/groups, kH, kW), ``bias`` (O,); one node (im2col and a
    matrix product per group)."""
    op = "conv2d"
    check_tensor(input, f"{op}: input")
    check_tensor(weight, f"{op}: weight")
    if weight.ndim != 4:
        raise ValueError(
            f"{op}: weight must be (out_channels, in_channels/groups, kH, kW), got {weight.shape}"
        )
    if input.ndim == 3:
        return conv2d(
            input.reshape(1, *input.shape), weight, bias, stride, padding, dilation, groups
        )[0]
    if input.ndim != 4:
        raise ValueError(f"{op}: input must be (N, C, H, W) or (C, H, W), got {input.shape}")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    o, cg, kh, kw = weight.shape
    c = input.shape[1]
    if c != cg * groups or o % groups:
        raise ValueError(
            f"{op}: input {input.shape} has {c} channels but weight {weight.shape} with "
            f"groups={groups} expects {cg * groups} (and out_channels {o} divisible by groups)"
        )
    if bias is not None:
        check_tensor(bias, f"{op}: bias")
        if bias.shape != (o,):
            raise ValueError(f"{op}: bias {bias.shape} must be ({o},) for weight {weight.shape}")
    stride2 = _pair(stride, "stride", op, 1)
    dilation2 = _pair(dilation, "dilation", op, 1)
    pads = _padding(padding, ((kh, kw), dilation2), op)
    if padding == "same" and stride2 != (1, 1):
        raise ValueError(f"{op}: padding='same' needs stride 1, got stride={stride!r}")
    win = _window(op, input.shape, (kh, kw), stride2, dilation2, pads, int(groups))
    data, cols = _correlate(input.data, weight.data, win)
    prev: tuple[Tensor, ...] = (input, weight)
    if bias is not None:
        data += bias.data[:, None, None]
        prev = (input, weight, bias)
    return make_node(data, prev, op, _conv2d_backward, (win, cols))


def _conv2d_backward(
    g: Arr, out: Arr, ctx: tuple[Window, np.ndarray], need: Need, x: Arr, w: Arr, *b: Arr
) -> Grads:
    """y = W @ unfold(x) per group (+ b):  dx = fold(W^T @ dy), dW = dy @ unfold(x)^T,
    db = dy summed over batch and positions. The fast pass reuses the forward's unfold
    and computes dx as a transposed convolution (``_input_grad``); under create_graph
    unfold is computed again as a node, so dW depends on x, and dx is the fold."""
    win, cols = ctx
    groups = win.groups
    n, o, oh, ow = g.shape
    grouped = permute(g.reshape(n, groups, o // groups, oh, ow), (1, 2, 0, 3, 4))
    grouped = grouped.reshape(groups, o // groups, n * oh * ow)  # dy as (G, O/G, N*L)
    gx = gw = gb = None
    if need[0] and not isinstance(g, Tensor) and _transposable(win, o):
        gx = _input_grad(g, w, win)
    elif need[0]:
        gx = fold(swapaxes(w.reshape(groups, o // groups, -1), 1, 2) @ grouped, win)
    if need[1]:
        c = unfold(x, win) if isinstance(g, Tensor) else cols
        gw = (grouped @ swapaxes(c, 1, 2)).reshape(w.shape)
    if b and need[2]:
        gb = sum_dims(g, (0, 2, 3), False)
    return (gx, gw, gb) if b else (gx, gw)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int = 1,
    padding: int | str = 0,
    dilation: int = 1,
    groups: int = 1,
) -> Tensor:
    """1-D cross-correlation, as ``torch.nn.functional.conv1d``: ``input`` (N, C, L) or
    (C, L), ``weight`` (O, C/groups, k); conv2d over a height of 1."""
    op = "conv1d"
    check_tensor(input, f"{op}: input")
    check_tensor(weight, f"{op}: weight")
    if input.ndim not in (2, 3):
        raise ValueError(f"{op}: input must be (N, C, L) or (C, L), got {input.shape}")
    if weight.ndim != 3:
        raise ValueError(
            f"{op}: weight must be (out_channels, in_channels/groups, k), got {weight.shape}"
        )
    pad = _single(padding, "padding", op)
    pair_pad = pad if isinstance(pad, str) else (0, pad)
    x = input.reshape(*input.shape[:-1], 1, input.shape[-1])
    w = weight.reshape(*weight.shape[:-1], 1, weight.shape[-1])
    try:
        y = conv2d(
            x,
            w,
            bias,
            (1, _single(stride, "stride", op)),
            pair_pad,
            (1, _single(dilation, "dilation", op)),
            groups,
        )
    except (ValueError, TypeError) as e:
        raise type(e)(str(e).replace("conv2d", op)) from None
    return y.reshape(*y.shape[:-2], y.shape[-1])


# ---------------------------------------------------------------------- pooling
def _pool_window(
    op: str, input: Tensor, kernel_size: object, stride: object, padding: object, dilation: object
) -> tuple[Tensor, Window, tuple[int, ...]]:
    """The input as (N*C, 1, H, W), the window over it, and the output shape."""
    check_tensor(input, f"{op}: input")
    if input.ndim not in (3, 4):
        raise ValueError(f"{op}: input must be (N, C, H, W) or (C, H, W), got {input.shape}")
    kernel = _pair(kernel_size, "kernel_size", op, 1)
    stride2 = kernel if stride is None or stride == () else _pair(stride, "stride", op, 1)
    ph, pw = _pair(padding, "padding", op, 0)
    if 2 * ph > kernel[0] or 2 * pw > kernel[1]:
        raise ValueError(
            f"{op}: padding {padding!r} must be at most half the kernel size {kernel_size!r}"
        )
    lead, (h, w) = input.shape[:-2], input.shape[-2:]
    flat = input.reshape(-1, 1, h, w)
    win = _window(
        op, flat.shape, kernel, stride2, _pair(dilation, "dilation", op, 1), ((ph, ph), (pw, pw))
    )
    return flat, win, (*lead, *win.out)


def _no_ceil_mode(op: str, ceil_mode: bool) -> None:
    if ceil_mode:
        raise ValueError(f"{op}: ceil_mode=True is not supported (the output size rounds down)")


def max_pool2d(
    input: Tensor,
    kernel_size: int | Pair,
    stride: int | Pair | None = None,
    padding: int | Pair = 0,
    dilation: int | Pair = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """The largest value of each window, as ``torch.nn.functional.max_pool2d``
    (``stride`` defaults to the kernel size; padding counts as -inf). The gradient goes to
    the first largest element of each window in row-major order, as torch's."""
    op = "max_pool2d"
    _no_ceil_mode(op, ceil_mode)
    flat, win, shape = _pool_window(op, input, kernel_size, stride, padding, dilation)
    cols = unfold(flat, win, -np.inf)  # (1, kH*kW, N*C*L)
    windows = cols.shape[2]
    first_max = cols.data[0].argmax(axis=0)  # nan counts as the largest, as in torch
    return cols[0, first_max, np.arange(windows)].reshape(shape)


def avg_pool2d(
    input: Tensor,
    kernel_size: int | Pair,
    stride: int | Pair | None = None,
    padding: int | Pair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean of each window, as ``torch.nn.functional.avg_pool2d``: padding counts as
    zeros in the sum and, with ``count_include_pad``, in the divisor."""
    op = "avg_pool2d"
    _no_ceil_mode(op, ceil_mode)
    flat, win, shape = _pool_window(op, input, kernel_size, stride, padding, 1)
    sums = unfold(flat, win).sum(1)  # (1, N*C*L)
    if divisor_override is not None:
        divisor: Any = float(_pair(divisor_override, "divisor_override", op, 1)[0])
    elif count_include_pad:
        divisor = float(win.kernel[0] * win.kernel[1])
    else:  # how many real (unpadded) elements each window covers
        inside = Window(
            win.kernel, win.stride, win.dilation, win.padding, 1, (1, 1, *win.shape[2:]), win.out
        )
        counts = _im2col(np.ones(inside.shape, dtype=input.dtype), inside, 0.0).sum(1)
        divisor = np.tile(counts, (1, win.shape[0]))
    return (sums / divisor).reshape(shape)
