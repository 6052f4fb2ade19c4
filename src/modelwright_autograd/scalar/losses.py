"""Losses on lists of Values, each the mean over the batch (as torch's default).

The same losses under the same names as ``functional`` has for Tensors; ``LOSSES`` maps
the training command's ``--loss`` names to them, the same names as ``functional.LOSSES``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

from ..checks import describe
from .engine import Operand, Value, as_value, sum_values


def _check_sizes(name: str, preds: Sequence[Value], targets: Sequence[float]) -> None:
    if len(preds) != len(targets):
        raise ValueError(f"{name}: {len(preds)} predictions but {len(targets)} targets")
    if len(preds) == 0:
        raise ValueError(f"{name}: needs at least one prediction")


def mean(values: Sequence[Value]) -> Value:
    """The average, written as micrograd writes it: sum(values) * (1 / n)."""
    return sum_values(values) * (1.0 / len(values))


def svm_loss(scores: Sequence[Value], labels: Sequence[float]) -> Value:
    """Max-margin (hinge) loss mean(relu(1 - y * score)) for labels y in {-1, +1}."""
    _check_sizes("svm_loss", scores, labels)
    return mean([(1 + -y * s).relu() for s, y in zip(scores, labels)])


def mse_loss(preds: Sequence[Operand], targets: Sequence[float]) -> Value:
    """mean((pred - target) ** 2)."""
    _check_sizes("mse_loss", preds, targets)  # type: ignore[arg-type]
    return mean([(as_value(p, "mse_loss") - t) ** 2 for p, t in zip(preds, targets)])


def binary_cross_entropy_with_logits(logits: Sequence[Value], labels: Sequence[float]) -> Value:
    """Binary cross-entropy on raw scores z for labels y in {0, 1}, computed stably as
    ``max(z, 0) - z*y + log(1 + exp(-|z|))`` so large |z| never overflows (torch's
    ``binary_cross_entropy_with_logits``)."""
    _check_sizes("binary_cross_entropy_with_logits", logits, labels)
    terms = []
    for z, y in zip(logits, labels):
        z = as_value(z, "binary_cross_entropy_with_logits")
        if z.data >= 0.0:  # max(z, 0) = z and -|z| = -z
            terms.append(z * (1.0 - y) + (1 + (-z).exp()).log())
        else:  # max(z, 0) = 0 and -|z| = z
            terms.append(-z * y + (1 + z.exp()).log())
    return mean(terms)


def cross_entropy(logits: Sequence[Sequence[Operand]], targets: Sequence[int]) -> Value:
    """Mean over the batch of -log softmax(row)[target], as torch's ``cross_entropy`` with
    integer class targets: one row of C scores and one class index per example.

    Each term is ``log(sum_j e^(x_j - m)) + m - x_t`` with m the row's largest score (a
    constant, so no gradient flows through it): scores of +-1000 give finite losses.
    """
    _check_sizes("cross_entropy", logits, targets)  # type: ignore[arg-type]
    classes = len(logits[0])
    if classes == 0:
        raise ValueError("cross_entropy: a row of logits holds no scores")
    terms = []
    for row, t in zip(logits, targets):
        if len(row) != classes:
            raise ValueError(f"cross_entropy: rows of {classes} and {len(row)} scores")
        if isinstance(t, bool) or not isinstance(t, numbers.Integral):
            raise TypeError(f"cross_entropy: a target must be a class index, got {describe(t)}")
        if not 0 <= t < classes:
            raise IndexError(
                f"cross_entropy: target {t} is out of range for {classes} classes "
                f"(valid 0 to {classes - 1})"
            )
        xs = [as_value(x, "cross_entropy") for x in row]
        m = max(x.data for x in xs)
        terms.append(sum_values([(x - m).exp() for x in xs]).log() + m - xs[t])
    return mean(terms)


#: The losses by their ``--loss`` name; ``functional.LOSSES`` has the same names for
#: Tensors. ``ce`` takes a row of class scores per example, the others one score.
LOSSES: dict[str, Callable[..., Value]] = {
    "svm": svm_loss,
    "mse": mse_loss,
    "bce": binary_cross_entropy_with_logits,
    "ce": cross_entropy,
}
