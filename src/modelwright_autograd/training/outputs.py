"""A run's outputs: the checkpoint, metrics.json and the pictures, in one directory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..checkpoint import save_checkpoint
from ..data import DATASETS_2D, Dataset
from ..files import write_json
from .learners import Learner
from .settings import TrainConfig

if TYPE_CHECKING:
    from .loop import History, Score


def default_out_dir(dataset: str) -> Path:
    """runs/<dataset>-<timestamp>, with -2, -3... if that already exists."""
    base = Path("runs") / f"{dataset}-{time.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def _title(config: TrainConfig, data: Dataset) -> str:
    outputs = data.num_classes if config.loss == "ce" else 1
    sizes = "-".join(str(n) for n in (data.num_features, *config.hidden, outputs))
    return (
        f"{config.dataset}: {config.engine} MLP {sizes} {config.activation}, "
        f"{config.loss} loss, {config.optimizer}"
    )


def write_outputs(
    out: Path,
    learner: Learner,
    data: Dataset,
    config: TrainConfig,
    history: History,
    train_score: Score,
    test: tuple[Score, np.ndarray] | None,
) -> list[str]:
    """Write checkpoint, metrics and pictures into ``out``; return the file names."""
    from .. import plots  # matplotlib is only imported when there is something to draw

    out.mkdir(parents=True, exist_ok=True)
    metadata = {"data": config.data_config(), "objective": {"loss": config.loss, "l2": config.l2}}
    save_checkpoint(out / "model.json", learner.model, metadata)
    metrics: dict[str, Any] = {
        "config": config.to_dict(),
        "loss": history.loss,
        "accuracy": history.accuracy,
        "final_loss": train_score.loss,
        "final_accuracy": train_score.accuracy,
    }
    if test is not None:
        metrics["test_loss"] = test[0].loss
        metrics["test_accuracy"] = test[0].accuracy
    metrics["train_seconds"] = round(history.seconds, 3)
    write_json(out / "metrics.json", metrics)
    files = ["model.json", "metrics.json", "loss_curve.png"]
    batch_label = "batch" if config.batch_size else "training set"
    plots.plot_loss_curve(
        out / "loss_curve.png", history.loss, history.accuracy, _title(config, data), batch_label
    )
    if config.dataset in DATASETS_2D:
        plots.plot_decision_boundary(
            out / "decision_boundary.png",
            learner.scores,
            data.X_train,
            data.y_train,
            _title(config, data),
            # one Value graph per grid point is slow; one matrix product for all is not
            resolution=60 if config.engine == "scalar" else 200,
        )
        files.append("decision_boundary.png")
    if test is not None and data.test_images is not None:
        test_score, predicted = test
        plots.plot_confusion_matrix(
            out / "confusion_matrix.png",
            data.y_test,
            predicted,
            data.num_classes,
            f"{config.dataset} test set: {test_score.accuracy:.2%} correct",
        )
        plots.plot_misclassified(
            out / "misclassified.png",
            data.test_images,
            data.y_test,
            predicted,
            f"{config.dataset} test set",
        )
        files += ["confusion_matrix.png", "misclassified.png"]
    return files
