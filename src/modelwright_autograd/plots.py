"""The pictures a training run leaves behind, drawn with matplotlib's Agg renderer.

Figures are built as ``matplotlib.figure.Figure`` objects on an Agg canvas, never through
``pyplot``: no display is needed, no global backend is switched, and nothing leaks between
figures. Each PNG is written atomically (see ``files.atomic_write``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from .files import atomic_write

_CLASS_COLOURS = ("#d95f02", "#1b9e77")  # class 0, class 1: distinguishable in greyscale too
_DPI = 110


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path: str | os.PathLike[str]) -> None:
    """Render ``fig`` to a PNG at ``path``, atomically."""
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=_DPI), binary=True)


def _moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """The mean of each run of ``window`` consecutive values (len - window + 1 of them)."""
    cumulative = np.cumsum(np.insert(values, 0, 0.0))
    return (cumulative[window:] - cumulative[:-window]) / window


def plot_loss_curve(
    path: str | os.PathLike[str],
    loss: Sequence[float],
    accuracy: Sequence[float],
    title: str,
    batch_label: str = "training set",
) -> None:
    """Loss (left) and accuracy (right) at every step. Mini-batch curves are noisy, so
    when there are many steps a moving average is drawn over the faint raw values."""
    loss_arr = np.asarray(loss, dtype=np.float64)
    acc_arr = np.asarray(accuracy, dtype=np.float64)
    steps = np.arange(len(loss_arr))
    window = len(loss_arr) // 50 if len(loss_arr) > 200 else 1
    fig = _new_figure(10.0, 4.0)
    ax_loss, ax_acc = fig.subplots(1, 2)
    for ax, values, name in ((ax_loss, loss_arr, "loss"), (ax_acc, acc_arr, "accuracy")):
        if window > 1:
            ax.plot(steps, values, color="#9ecae1", linewidth=0.8, label=f"{name} per step")
            smooth = _moving_average(values, window)
            ax.plot(
                steps[window - 1 :],
                smooth,
                color="#08519c",
                linewidth=1.8,
                label=f"mean of {window} steps",
            )
            ax.legend(loc="best")
        else:
            ax.plot(steps, values, color="#08519c", linewidth=1.8)
        ax.set_xlabel("step")
        ax.set_ylabel(f"{name} ({batch_label})")
        ax.grid(True, alpha=0.3)
    ax_acc.set_ylim(min(0.0, float(np.nanmin(acc_arr)) if acc_arr.size else 0.0), 1.02)
    fig.suptitle(title)
    save_figure(fig, path)


def plot_decision_boundary(
    path: str | os.PathLike[str],
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    y: np.ndarray,
    title: str,
    resolution: int = 60,
) -> None:
    """Shade the plane by the model's predicted class and draw the data on top.

    ``predict`` maps an (m, 2) array of points to m scores, positive meaning class 1. The
    grid covers the data with a margin of a quarter of its extent on every side.
    """
    lo, hi = X.min(axis=0), X.max(axis=0)
    margin = 0.25 * np.maximum(hi - lo, 1e-9)
    xs = np.linspace(lo[0] - margin[0], hi[0] + margin[0], resolution)
    ys = np.linspace(lo[1] - margin[1], hi[1] + margin[1], resolution)
    gx, gy = np.meshgrid(xs, ys)
    scores = np.asarray(predict(np.column_stack([gx.ravel(), gy.ravel()])), dtype=np.float64)
    predicted = (scores > 0).reshape(gx.shape).astype(np.float64)

    fig = _new_figure(6.0, 5.4)
    ax = fig.subplots()
    ax.contourf(
        gx, gy, predicted, levels=[-0.5, 0.5, 1.5], cmap=ListedColormap(_CLASS_COLOURS), alpha=0.3
    )
    if scores.min() < 0.0 < scores.max():  # the boundary itself, where the score is 0
        ax.contour(gx, gy, scores.reshape(gx.shape), levels=[0.0], colors="k", linewidths=1.0)
    for label, colour in enumerate(_CLASS_COLOURS):
        mask = y == label
        ax.scatter(
            X[mask, 0],
            X[mask, 1],
            s=22,
            color=colour,
            edgecolors="k",
            linewidths=0.5,
            label=f"class {label}",
        )
    ax.set_xlim(xs[0], xs[-1])
    ax.set_ylim(ys[0], ys[-1])
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.legend(loc="upper right")
    ax.set_title(title)
    save_figure(fig, path)


def confusion_counts(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> np.ndarray:
    """counts[i, j] = how many examples of class i were predicted as class j."""
    counts = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(counts, (y_true, y_pred), 1)
    return counts


def plot_confusion_matrix(
    path: str | os.PathLike[str],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    num_classes: int,
    title: str,
) -> None:
    """A heat map of the confusion matrix with each count written in its cell."""
    counts = confusion_counts(y_true, y_pred, num_classes)
    fig = _new_figure(6.0, 5.4)
    ax = fig.subplots()
    image = ax.imshow(counts, cmap="Blues")
    fig.colorbar(image, ax=ax, label="examples")
    threshold = counts.max() / 2.0
    for i in range(num_classes):
        for j in range(num_classes):
            ax.text(
                j,
                i,
                str(counts[i, j]),
                ha="center",
                va="center",
                fontsize=8,
                color="white" if counts[i, j] > threshold else "black",
            )
    ticks = np.arange(num_classes)
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    ax.set_title(title)
    save_figure(fig, path)


def plot_misclassified(
    path: str | os.PathLike[str],
    images: np.ndarray,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    title: str,
    max_images: int = 40,
) -> None:
    """A grid of the test images the model got wrong, each titled "true -> predicted"."""
    wrong = np.flatnonzero(y_true != y_pred)[:max_images]
    columns = 8
    rows = max(1, -(-len(wrong) // columns))
    fig = _new_figure(1.2 * columns, 1.35 * rows + 0.6)
    axes = np.atleast_1d(fig.subplots(rows, columns)).ravel()
    for ax in axes:
        ax.set_axis_off()
    for ax, i in zip(axes, wrong):
        ax.imshow(images[i], cmap="gray_r", interpolation="nearest")
        ax.set_title(f"{y_true[i]} -> {y_pred[i]}", fontsize=9, color="#b2182b")
    if len(wrong) == 0:
        axes[0].text(0.0, 0.5, "no misclassified images", fontsize=12, va="center")
    total = int(np.sum(y_true != y_pred))
    shown = f" (first {len(wrong)} shown)" if total > len(wrong) else ""
    fig.suptitle(f"{title}: {total} misclassified, true -> predicted{shown}")
    save_figure(fig, path)


def plot_lm_curve(
    path: str | os.PathLike[str],
    loss: Sequence[float],
    evals: Sequence[dict[str, float]],
    held_out: str,
    title: str,
    start: int = 0,
) -> None:
    """A language model's training: the loss of every step's batch (faint, with a moving
    average when there are many) and the evaluations of the training and held-out
    (``held_out``: "test" or "val") loss; ``loss[0]`` is step ``start + 1``'s."""
    values = np.asarray(loss, dtype=np.float64)
    steps = np.arange(start + 1, start + len(values) + 1)
    fig = _new_figure(7.0, 4.2)
    ax = fig.subplots()
    window = len(values) // 50 if len(values) > 200 else 1
    ax.plot(steps, values, color="#c6dbef", linewidth=0.8, label="batch loss")
    if window > 1:
        ax.plot(
            steps[window - 1 :],
            _moving_average(values, window),
            color="#6baed6",
            linewidth=1.2,
            label=f"mean of {window} steps",
        )
    if evals:
        at = [e["step"] for e in evals]
        ax.plot(at, [e["train"] for e in evals], "o-", color="#08519c", label="train loss")
        ax.plot(at, [e[held_out] for e in evals], "s-", color="#d95f02", label=f"{held_out} loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy per character (nats)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    fig.suptitle(title)
    save_figure(fig, path)
