"""The training loop: ``fit`` runs the optimiser steps, ``score`` measures a model, and
``run_training`` does a whole run (data, learner, loop, scores, outputs)."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..collector import collection_paused
from ..data import Dataset, load_dataset
from ..graph import no_grad
from ..optim import SGD, Adam, Optimizer
from .learners import Learner, make_learner
from .outputs import write_outputs
from .results import History, Score
from .settings import MOMENTUM, TrainConfig, TrainingDiverged, divergence_advice


def batch_indices(n: int, batch_size: int | None, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Index arrays, one per step: all of 0..n-1 every time for full-batch training,
    otherwise consecutive slices of a fresh shuffle each epoch (the last may be short)."""
    if batch_size is None or batch_size >= n:
        everything = np.arange(n)
        while True:
            yield everything
    while True:
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            yield order[start : start + batch_size]


def make_optimizer(config: TrainConfig, params: Sequence[Any]) -> Optimizer:
    if config.optimizer == "adam":
        return Adam(params, lr=config.lr)
    momentum = MOMENTUM if config.optimizer == "momentum" else 0.0
    return SGD(params, lr=config.lr, momentum=momentum)


def fit(learner: Learner, data: Dataset, config: TrainConfig, progress: Any) -> History:
    """Run ``config.steps`` optimiser steps, recording the loss and accuracy of each batch
    (measured in the forward pass that the step's gradient comes from, as micrograd does)."""
    optimizer = make_optimizer(config, learner.parameters())
    batches = batch_indices(
        len(data.y_train), config.batch_size, np.random.default_rng([config.seed, 1])
    )
    history = History([], [], 0.0)
    learner.train(True)
    start = time.perf_counter()
    compiled_step = None
    if config.compile:  # one full batch: the same graph every step (settings.py checks)
        compiled_step = learner.compiled_step(data.X_train, data.y_train)  # type: ignore[attr-defined]
    for step in range(config.steps):
        idx = next(batches)
        yb = data.y_train[idx]
        with collection_paused():  # the step builds no cycles: see collector.py
            if compiled_step is not None:  # the loss, and every parameter's grad set
                loss, (loss_value, predicted) = None, compiled_step()
            else:
                loss, predicted = learner.forward(data.X_train[idx], yb)
                loss_value = learner.loss_value(loss)
            if not math.isfinite(loss_value):
                raise TrainingDiverged(
                    f"training diverged: the loss is {loss_value} at step {step}; "
                    f"{divergence_advice(config)}"
                )
            accuracy = float(np.mean(predicted == yb))
            history.loss.append(loss_value)
            history.accuracy.append(accuracy)
            if loss is not None:
                optimizer.zero_grad()
                loss.backward()
            for group in optimizer.param_groups:
                group["lr"] = config.lr_at(step)
            optimizer.step()
            del loss  # drop the graph while the collector is still paused
        progress.set_postfix(loss=f"{loss_value:.4g}", acc=f"{accuracy:.1%}", refresh=False)
        progress.update(1)
    history.seconds = time.perf_counter() - start
    return history


def score(learner: Learner, X: np.ndarray, y: np.ndarray) -> tuple[Score, np.ndarray]:
    """The training objective and accuracy on (X, y), computed without a graph, and the
    predicted classes, in evaluation mode."""
    learner.train(False)
    with no_grad():
        loss, predicted = learner.forward(X, y)
    correct = int(np.sum(predicted == y))
    return Score(learner.loss_value(loss), correct, len(y)), predicted


@contextlib.contextmanager
def progress_bar(steps: int, desc: str, quiet: bool, initial: int = 0) -> Iterator[Any]:
    """A run's progress bar on stderr, with NumPy's overflow warnings off (they would only
    repeat what a non-finite loss says clearly), starting at step ``initial`` (a resumed
    run's). tqdm's disable=None draws only when stderr is a terminal, so logs stay clean;
    ``quiet`` draws nothing."""
    from tqdm import tqdm

    with (
        tqdm(
            total=steps,
            initial=initial,
            desc=desc,
            unit="step",
            disable=True if quiet else None,
            file=sys.stderr,
        ) as progress,
        np.errstate(over="ignore", invalid="ignore"),
    ):
        yield progress


def run_training(config: TrainConfig, out: Path, quiet: bool = False) -> dict[str, Any]:
    """Train, evaluate, write the outputs into the existing folder ``out`` (a run's staging
    folder, see ``outputs.RunFolder``); return the summary printed by the command."""
    data = load_dataset(config.dataset, config.samples, config.noise, config.seed)
    learner = make_learner(config, data)
    with progress_bar(config.steps, f"train {config.dataset}", quiet) as progress:
        history = fit(learner, data, config, progress)
        train_score, _ = score(learner, data.X_train, data.y_train)
        test = None
        if data.X_test is not None:
            test = score(learner, data.X_test, data.y_test)
    for final in (train_score, test[0] if test else train_score):
        if not math.isfinite(final.loss):
            raise TrainingDiverged(
                f"training diverged: the final loss is {final.loss}; {divergence_advice(config)}"
            )
    files = write_outputs(out, learner, data, config, history, train_score, test)
    return {
        "train": train_score,
        "test": test[0] if test else None,
        "seconds": history.seconds,
        "files": files,
    }
