"""``train --resume RUN``: continue a language-model run from a checkpoint with its
settings, data split, optimiser state, step and generators, so that it takes the steps an
unbroken run would have (docs/training.md).

``RUN`` is a run folder (its ``last.json``, the last step taken; an imported run's
``model.json``, its only checkpoint) or a checkpoint file (``RUN/model.json`` is the best
so far). The resumed run writes a new run folder (``--out``
or the default ``runs/<dataset>-<time>/``), whose metrics.json names the checkpoint in
``resumed_from``; the old folder is only read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import CheckpointError
from ..lm import models
from ..lm.corpus import Names, Source, Text
from .language import (
    DEFAULT_THREADS,
    LMSettings,
    make_optimizer,
)
from .lm_run import NotALanguageModel, load_lm_run
from .run_state import LAST, ResumePoint
from .settings import SettingError

#: The settings a checkpoint's "training" entry must hold: whole numbers with their least
#: value, and finite numbers (lr above 0, the others at least 0).
_INTS = {"steps": 1, "batch_size": 1, "warmup": 0, "eval_interval": 1, "eval_iters": 1, "seed": 0}
_FLOATS = ("lr", "min_lr", "weight_decay", "grad_clip")


def resume_file(run: Path) -> Path:
    """The checkpoint ``--resume`` reads: a folder's last.json, or the file given."""
    return run / LAST if run.is_dir() else run


def _whole(x: Any) -> bool:
    return type(x) is int


def _real(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def _settings(
    path: Path, training: dict[str, Any], config: models.LMConfig, data: Any
) -> LMSettings:
    """The LMSettings a checkpoint's ``"training"`` entry records, each value checked."""
    bad = [
        k for k, least in _INTS.items() if not (_whole(training.get(k)) and training[k] >= least)
    ]
    bad += [k for k in _FLOATS if not (_real(training.get(k)) and training[k] >= 0)]
    if not bad and (training["lr"] <= 0 or training["seed"] >= 2**32):
        bad.append("lr" if training["lr"] <= 0 else "seed")
    betas = training.get("betas")
    if not (
        isinstance(betas, list) and len(betas) == 2 and all(_real(b) and 0 <= b < 1 for b in betas)
    ):
        bad.append("betas")
    if type(training.get("decay_all")) is not bool:
        bad.append("decay_all")
    if bad or not isinstance(data, dict):
        raise CheckpointError(path, f"has bad training settings: {', '.join(bad) or 'data'}")
    source = Source(data.get("dataset"), data.get("path"), data.get("sha256"))
    return LMSettings(
        model=config,
        dataset=source.dataset,
        data=source.path,
        betas=(float(betas[0]), float(betas[1])),
        decay_all=training["decay_all"],
        threads=DEFAULT_THREADS,
        source=source,
        **{k: training[k] for k in _INTS},
        **{k: float(training[k]) for k in _FLOATS},
    )


def prepare_resume(
    run: Path,
    steps: int | None = None,
    eval_interval: int | None = None,
    eval_iters: int | None = None,
    threads: int | None = None,
    check_work: Callable[[LMSettings], None] | None = None,
) -> tuple[LMSettings, Names | Text, models.LanguageModel, ResumePoint]:
    """The settings, corpus, model and resume point to continue ``run`` (a run folder or a
    checkpoint, as --resume takes), with the settings a resumed run may change: a
    SettingError of ``resume`` for a checkpoint that cannot be resumed, or data that has
    changed since, of ``steps`` for a run already at its last step. ``check_work``, the
    caller's budget (the command line's ``budgets.check_lm_work``), may refuse the
    settings before any state is restored."""
    path = resume_file(run)
    no_last = SettingError(
        "resume",
        f"{run} has no {LAST} to resume from: language-model runs write one (an "
        "MLP run is quick to train again)",
    )
    imported_only = run.is_dir() and not path.exists()
    if imported_only:  # an imported run's one checkpoint is its model.json
        path = run / "model.json"
        if not path.exists():
            raise no_last
    try:
        saved = load_lm_run(path)
        if imported_only and "imported" not in saved.checkpoint.metadata:
            raise no_last
        point = ResumePoint.read(path, saved.checkpoint.metadata)
        settings = _settings(
            path,
            saved.training,
            saved.checkpoint.architecture.config,
            saved.checkpoint.metadata["data"],
        )
    except NotALanguageModel as e:
        raise no_last if imported_only else SettingError("resume", str(e)) from None
    except CheckpointError as e:
        raise SettingError("resume", str(e)) from None
    if saved.corpus is None:
        raise SettingError("resume", f"cannot resume {path}: {saved.missing}")
    changes = {
        "steps": steps,
        "eval_interval": eval_interval,
        "eval_iters": eval_iters,
        "threads": threads,
    }
    settings = replace(settings, **{k: v for k, v in changes.items() if v is not None})
    if point.step >= settings.steps:
        raise SettingError(
            "steps",
            f"{path} is at step {point.step:,} of the run's {settings.steps:,}: give --steps "
            f"above {point.step:,} to train further",
        )
    if check_work is not None:
        check_work(settings)
    try:  # every saved state is checked now, into a spare optimiser, before any run starts
        point.restore(saved.model, make_optimizer(saved.model, settings), np.random.default_rng())
    except CheckpointError as e:
        raise SettingError("resume", str(e)) from None
    return settings, saved.corpus, saved.model, point
