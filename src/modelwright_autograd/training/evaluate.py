"""Scoring a saved checkpoint, on the data it was trained on or on new data.

The checkpoint's stored data settings are checked with the command-line options' limits,
so a hand-edited or corrupt file fails with a clear ``CheckpointError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import CheckpointError, load_checkpoint, shown
from ..checks import is_finite_non_negative, is_json_int
from ..data import DATASETS, load_dataset
from .learners import make_learner
from .loop import score
from .results import Score
from .settings import (
    LOSS_NAMES,
    MAX_NOISE,
    MAX_SAMPLES,
    MIN_SAMPLES,
    SettingError,
    TrainConfig,
)


@dataclass(frozen=True)
class Evaluation:
    """What ``evaluate`` found: the model, the data it was scored on, a Score per split."""

    architecture: str
    data: dict[str, Any]
    trained_on_it: bool
    scores: dict[str, Score]


def _stored_data_config(path: Path, stored: Any) -> dict[str, Any]:
    """The checkpoint's data settings, checked with the same limits as the command-line
    options, so a hand-edited or corrupt file fails clearly instead of deep in NumPy."""
    if not isinstance(stored, dict):
        raise CheckpointError(path, "has no 'data' settings (was it written by train?)")
    name, samples, noise, seed = (stored.get(k) for k in ("dataset", "samples", "noise", "seed"))
    if name not in DATASETS:
        raise CheckpointError(path, f"unknown dataset {shown(name)} in its data settings")
    if not (is_json_int(seed) and 0 <= seed < 2**32):
        raise CheckpointError(
            path, f"bad seed {shown(seed)} in its data settings (must be 0 to 2**32 - 1)"
        )
    if name != "digits":
        if not (is_json_int(samples) and MIN_SAMPLES <= samples <= MAX_SAMPLES):
            raise CheckpointError(
                path,
                f"bad samples {shown(samples)} in its data settings "
                f"(must be a whole number from {MIN_SAMPLES} to {MAX_SAMPLES:,})",
            )
        if not (is_finite_non_negative(noise) and noise <= MAX_NOISE):
            raise CheckpointError(
                path,
                f"bad noise {shown(noise)} in its data settings (must be 0 to {MAX_NOISE:g})",
            )
        noise = noise + 0.0  # -0.0 is 0
    return {"dataset": name, "samples": samples, "noise": noise, "seed": seed}


def evaluate_checkpoint(
    path: Path,
    dataset: str | None = None,
    samples: int | None = None,
    noise: float | None = None,
    seed: int | None = None,
    check_cost: Callable[[Path, TrainConfig, bool], None] | None = None,
) -> Evaluation:
    """Load a checkpoint and score it (training objective and accuracy) on the data it was
    trained on, regenerated from its stored settings, or on data the arguments change.
    ``check_cost(path, config, samples_given)``, the caller's budget (the command line's
    ``budgets.check_scoring_cost``), may refuse the scoring pass before any data is made."""
    checkpoint = load_checkpoint(path)
    arch = checkpoint.architecture
    stored = _stored_data_config(path, checkpoint.metadata.get("data"))
    objective = checkpoint.metadata.get("objective")
    if not isinstance(objective, dict) or objective.get("loss") not in LOSS_NAMES:
        raise CheckpointError(path, "has no valid 'objective' (its loss and l2 weight)")
    loss_name, l2 = objective["loss"], objective.get("l2", 0.0)
    if not is_finite_non_negative(l2):
        raise CheckpointError(
            path, f"bad l2 weight {shown(l2)} in its objective (must be a finite number >= 0)"
        )
    if l2 > float(np.finfo(arch.dtype).max):  # a float32 model would compute with inf
        raise CheckpointError(path, f"bad l2 weight {shown(l2)}: too large for a {arch.dtype}")
    if (loss_name == "ce") != (arch.nouts[-1] > 1) or (
        loss_name == "ce" and arch.engine == "scalar"
    ):
        raise CheckpointError(path, f"loss {loss_name!r} does not fit a {arch.describe()}")

    wanted = dict(stored)
    if dataset is not None and dataset != stored["dataset"]:
        wanted.update(dataset=dataset, samples=100, noise=0.1)
    if wanted["dataset"] == "digits":
        for setting, value in (("samples", samples), ("noise", noise)):
            if value is not None:
                raise SettingError(setting, "does not apply to --dataset digits (1,797 images)")
        wanted.update(samples=None, noise=None)
    for key, value in (("samples", samples), ("noise", noise), ("seed", seed)):
        if value is not None:
            wanted[key] = value
    config = TrainConfig(
        loss=loss_name, l2=float(l2), engine=arch.engine, model=arch.model, **wanted
    )
    if check_cost is not None:
        one_pass = replace(
            config, hidden=tuple(arch.nouts[:-1]), activation=arch.activation, steps=1
        )
        check_cost(path, one_pass, samples is not None)
    data = load_dataset(wanted["dataset"], wanted["samples"], wanted["noise"], wanted["seed"])
    outputs = data.num_classes if loss_name == "ce" else 1
    if (data.num_features, outputs) != (arch.nin, arch.nouts[-1]):
        problem = (
            f"{wanted['dataset']} has {data.num_features} features and {data.num_classes} "
            f"classes; the checkpoint holds a {arch.describe()}"
        )
        if wanted["dataset"] == stored["dataset"]:  # its own data settings do not fit its model
            raise CheckpointError(path, f"its data settings do not fit its model: {problem}")
        raise SettingError("dataset", problem)
    learner = make_learner(config, data, checkpoint.model)
    # Weights of inf or NaN, or a negative running variance, make NaN and infinities on the
    # way: the loss says so (run_evaluate adds a note), NumPy's warnings would only add
    # lines with source paths.
    with np.errstate(all="ignore"):
        scores = {"train": score(learner, data.X_train, data.y_train)[0]}
        if data.X_test is not None:
            scores["test"] = score(learner, data.X_test, data.y_test)[0]
    return Evaluation(arch.describe(), wanted, wanted == stored, scores)
