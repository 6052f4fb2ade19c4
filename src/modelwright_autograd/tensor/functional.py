"""Functions on Tensors, named as in ``torch.nn.functional`` (import it as ``F``).

Activations and softmax forward to the Tensor methods; ``linear``, ``leaky_relu``,
``softplus``, ``gelu`` and ``pad`` are ops of the tensor package (linalg.py, activations.py,
shape.py), where each sits beside its rule;
convolution, pooling, dropout, normalisation, embedding and attention come from nn_ops.py.
The losses each reduce to the mean over the batch, as torch's default.
``cross_entropy``, ``binary_cross_entropy_with_logits`` and ``svm_loss`` are fused single
nodes: their gradients have short closed forms ((softmax - onehot)/N, (sigmoid - y)/N and
-y/N where the margin is violated), cheaper and more accurate than differentiating through
exp, log and a gather.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..checks import describe
from . import (
    Arr,
    Grads,
    Need,
    Tensor,
    check_tensor,
    expand,
    gelu,
    leaky_relu,
    linear,
    make_node,
    pad,
    raw,
    softplus,
    zero_where,
)
from . import sigmoid as sigmoid_any  # the kit's: NumPy on arrays, the op on Tensors
from .conv import avg_pool2d, conv1d, conv2d, max_pool2d
from .nn_ops import batch_norm, dropout, embedding, layer_norm, scaled_dot_product_attention

__all__ = [
    "LOSSES",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "gelu",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "pad",
    "relu",
    "scaled_dot_product_attention",
    "sigmoid",
    "softmax",
    "softplus",
    "svm_loss",
    "tanh",
]


def relu(x: Tensor) -> Tensor:
    return check_tensor(x, "relu: input").relu()


def tanh(x: Tensor) -> Tensor:
    return check_tensor(x, "tanh: input").tanh()


def sigmoid(x: Tensor) -> Tensor:
    return check_tensor(x, "sigmoid: input").sigmoid()


def softmax(x: Tensor, dim: int) -> Tensor:
    """Probabilities along ``dim`` (stable for any finite logits)."""
    return check_tensor(x, "softmax: input").softmax(dim)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    """Log-probabilities along ``dim`` (stable for logits of +-1000)."""
    return check_tensor(x, "log_softmax: input").log_softmax(dim)


def _as_target(target: object, like: Tensor, name: str) -> Tensor:
    """A target of the same shape as ``like``: a Tensor, or array-like data made into a
    constant of like's dtype. Broadcasting is refused: a (N, 1) prediction against an (N,)
    target would silently compare every pair."""
    if not isinstance(target, Tensor):
        target = Tensor(target, dtype=like.dtype)
    if target.shape != like.shape:
        raise ValueError(f"{name}: input shape {like.shape} and target shape {target.shape} differ")
    return target


# ---------------------------------------------------------------------- cross-entropy
def _class_targets(
    target: object, n: int, classes: int, shape: tuple[int, ...], ignore_index: int | None = None
) -> np.ndarray:
    """The class indices as an integer array of ``shape``, each in [0, classes) or equal to
    ``ignore_index``."""
    if isinstance(target, Tensor):
        raise TypeError(
            "cross_entropy: target must be integer class indices (a NumPy integer array or "
            "a list of ints); a Tensor holds floats, so pass the labels themselves"
        )
    t = np.asarray(target)
    if t.dtype.kind not in "iu":
        raise TypeError(
            f"cross_entropy: target must be integer class indices, got {describe(target)} "
            f"(NumPy dtype {t.dtype})"
        )
    if t.shape != shape:
        raise ValueError(
            f"cross_entropy: logits of shape {(n, classes)} need a target of shape {shape}, "
            f"got {t.shape}"
        )
    t = t.reshape(n)
    # one comparison finds both kinds of bad index: as 64-bit ints viewed unsigned, a
    # negative one is above 2**63 - 1, so at least ``classes`` (for int64, no copy)
    bad = t.astype(np.int64, copy=False).view(np.uint64) >= classes
    if ignore_index is not None:
        bad &= t != ignore_index
    if np.count_nonzero(bad):
        raise IndexError(
            f"cross_entropy: target {t[bad][0]} is out of range for {classes} classes "
            f"(valid 0 to {classes - 1})"
        )
    return t


def cross_entropy(logits: Tensor, target: object, ignore_index: int = -100) -> Tensor:
    """Mean over the batch of -log softmax(logits)[target], as
    ``torch.nn.functional.cross_entropy`` with integer class targets.

    ``logits`` is (N, C) with ``target`` N ints, or (C,) with one int. Computed from
    log-sum-exp of the shifted logits, so logits of +-1000 give finite losses. Rows whose
    target is ``ignore_index`` (a padding position) count for nothing: the mean is over the
    others (nan when there are none, as in torch).
    """
    check_tensor(logits, "cross_entropy: logits")
    x = logits.data
    if x.ndim == 2:
        shape = (x.shape[0],)
    elif x.ndim == 1:
        shape, x = (), x[None, :]
    else:
        raise ValueError(f"cross_entropy: logits must be (N, C) or (C,), got {logits.shape}")
    n, classes = x.shape
    if n == 0 or classes == 0:
        raise ValueError(f"cross_entropy: logits of shape {logits.shape} hold no scores")
    t = _class_targets(target, n, classes, shape, ignore_index)
    ignored = t == ignore_index
    # the rows that count, and their targets (all of them, unless some are ignored)
    rows = np.flatnonzero(~ignored) if ignored.any() else np.arange(n)
    kept = t[rows] if len(rows) < n else t
    # max and sums as the ufunc reductions that x.max() and x.sum() call, without their
    # Python wrappers (about a microsecond each, at a mini-batch's size a good part of it)
    top = np.maximum.reduce(x, axis=1, keepdims=True)
    e = np.exp(x - top)
    total = np.add.reduce(e, axis=1)
    # -log p_t = log(sum_j e^(x_j - max)) - (x_t - max): never the log of an underflowed
    # probability, so a wrong class with a margin of 2000 still gives the exact loss 2000.
    # The mean is sum / count, what mean() computes (0 / 0 = nan when every row is ignored).
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = np.add.reduce(np.log(total[rows]) - (x[rows, kept] - top[rows, 0])) / len(rows)
    e /= total[:, None]  # now the softmax probabilities, which the backward rule reuses
    ctx = (e, kept, rows, ignored if len(rows) < n else None)
    return make_node(loss, (logits,), "cross_entropy", _cross_entropy_backward, ctx)


def _cross_entropy_backward(
    g: Arr, out: Arr, ctx: tuple[np.ndarray, ...], need: Need, logits: Arr
) -> Grads:
    """L = mean_i(-log softmax(x_i)[t_i]) over the M rows not ignored:
    dL/dx_i = (softmax(x_i) - onehot(t_i)) / M for those rows, 0 for the ignored ones.

    The fast pass reuses the forward's probabilities (a copy with 1 taken off at each
    target); under create_graph they are computed again as a Tensor op, so that the
    second derivative sees how they depend on x.
    """
    probs, t, rows, ignored = ctx
    if isinstance(logits, Tensor):
        onehot = np.zeros_like(probs)
        onehot[rows, t] = 1.0
        d = (logits.reshape(probs.shape).softmax(1) - onehot) * (g / len(t))
        if ignored is not None:
            d = d * (~ignored[:, None]).astype(probs.dtype)
    else:
        d = probs.copy()
        d[rows, t] -= 1.0
        if ignored is not None:
            d[ignored] = 0.0
        d *= g / len(t)
    return (d if d.shape == logits.shape else d.reshape(logits.shape),)


# ---------------------------------------------------------------------- two-class losses
def svm_loss(input: Tensor, target: object) -> Tensor:
    """Max-margin (hinge) loss mean(relu(1 - target * input)) for targets in {-1, +1}.

    One node rather than four (mul, sub, relu, mean): a small model's step is mostly
    per-node overhead. Its rule repeats the four rules' arithmetic in their order, so the
    gradients are the unfused graph's to the last bit. The margin 1 - y*s is never -0.0
    (a difference is -0.0 only when it is -0.0 - +0.0), so ``np.maximum`` alone is its
    relu, nan kept."""
    check_tensor(input, "svm_loss: input")
    target = _as_target(target, input, "svm_loss")
    hinge = np.maximum(1.0 - target.data * input.data, 0.0)
    mean = hinge.sum() / hinge.size  # what mean() computes, without its Python wrapper
    return make_node(mean, (input, target), "svm_loss", _svm_loss_backward, hinge)


def _svm_loss_backward(g: Arr, out: Arr, hinge: np.ndarray, need: Need, s: Arr, y: Arr) -> Grads:
    """L = mean(relu(1 - y*s)):  dL/ds = -y/N and dL/dy = -s/N where the hinge is positive
    (or nan, which relu passes on), else 0."""
    if isinstance(g, Tensor):  # create_graph: mean's, relu's and sub's rules as nodes
        gm = -zero_where(hinge <= 0.0, expand(g / hinge.size, None, hinge.shape))
    else:  # the same numbers in one selection: -(+0.0) where relu stops g/N, else -(g/N)
        gm = np.where(hinge <= 0.0, -0.0, -(g / hinge.size))
    return (gm * y if need[0] else None), (gm * s if need[1] else None)


def mse_loss(input: Tensor, target: object) -> Tensor:
    """mean((input - target) ** 2); target is a Tensor or array of input's shape."""
    check_tensor(input, "mse_loss: input")
    target = _as_target(target, input, "mse_loss")
    return ((input - target) ** 2).mean()


def binary_cross_entropy_with_logits(input: Tensor, target: object) -> Tensor:
    """Binary cross-entropy on raw scores z for targets y in [0, 1], averaged, computed as
    ``max(z, 0) - z*y + log(1 + e^-|z|)`` so large |z| never overflows (as torch)."""
    check_tensor(input, "binary_cross_entropy_with_logits: input")
    target = _as_target(target, input, "binary_cross_entropy_with_logits")
    z, y = input.data, target.data
    loss = (np.maximum(z, 0.0) - z * y + np.log1p(np.exp(-np.abs(z)))).mean()
    return make_node(loss, (input, target), "bce_with_logits", _bce_with_logits_backward)


def _bce_with_logits_backward(g: Arr, out: Arr, ctx: None, need: Need, z: Arr, y: Arr) -> Grads:
    """L = mean(max(z,0) - z*y + log(1 + e^-|z|)):  dL/dz = (sigmoid(z) - y)/N,
    dL/dy = -z/N."""
    scale = g / raw(z).size
    gz = (sigmoid_any(z) - y) * scale if need[0] else None
    return gz, (z * -scale if need[1] else None)


#: The losses by their ``--loss`` name, the same names as ``losses.LOSSES`` for Values.
#: ``ce`` takes (N, C) logits and class indices, the others (N,) scores.
LOSSES: dict[str, Callable[[Tensor, object], Tensor]] = {
    "svm": svm_loss,
    "mse": mse_loss,
    "bce": binary_cross_entropy_with_logits,
    "ce": cross_entropy,
}
