"""``modelwright-autograd evaluate``: score a checkpoint on its data or new data."""

from __future__ import annotations

import argparse
import math
import sys
from functools import partial
from pathlib import Path
from typing import Any

from ..checkpoint import CheckpointError, load_checkpoint
from ..checks import shown_path
from ..lm.models import LMArchitecture
from ..printing import emit
from ..training import language, lm_run
from ..training.evaluate import evaluate_checkpoint
from ..training.settings import SettingError
from .budgets import check_scoring_cost
from .options import Subparsers, UsageError, add_data_options, file_path, whole_number


def add_evaluate(subparsers: Subparsers) -> None:
    """The ``evaluate`` command's options."""
    p = subparsers.add_parser(
        "evaluate",
        help="load a checkpoint and report its loss and accuracy",
        description="Load model.json written by train and print the training objective and "
        "accuracy, by default on the data it was trained on (regenerated from the settings "
        "stored in the checkpoint); the data options override them.",
    )
    p.add_argument(
        "run",
        nargs="?",
        type=file_path,
        metavar="RUN",
        help="a run folder or its model.json (or give --checkpoint)",
    )
    p.add_argument(
        "--checkpoint",
        type=file_path,
        metavar="FILE",
        help="a model.json written by train",
    )
    add_data_options(p, for_evaluate=True)
    p.add_argument(
        "--eval-iters",
        type=whole_number("--eval-iters", 1, language.MAX_EVAL_ITERS),
        default=200,
        metavar="N",
        help="a text language model: random batches of each split to average (default "
        "200, as nanoGPT); a names model is scored on every word",
    )
    p.set_defaults(func=partial(run_evaluate, parser=p))


def run_evaluate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Score a checkpoint and print it: 0; 2 for a missing or bad checkpoint or a bad option
    (bad input); 1 when a language model's data cannot be found again or it is broken."""
    if (args.run is None) == (args.checkpoint is None):
        both = ", not both" if args.run is not None else ""
        parser.error(f"give a RUN (a run folder or model.json) or --checkpoint FILE{both}")
    path = lm_run.checkpoint_file(args.run) if args.run is not None else args.checkpoint
    try:
        checkpoint = load_checkpoint(path)
        if isinstance(checkpoint.architecture, LMArchitecture):
            return _evaluate_lm(args, parser, path, checkpoint)
        result = evaluate_checkpoint(
            path, args.dataset, args.samples, args.noise, args.seed, check_scoring_cost
        )
    except CheckpointError as e:  # a file that is not a checkpoint this takes: bad input
        print(f"modelwright-autograd evaluate: {e}", file=sys.stderr)
        return 2
    except (UsageError, SettingError) as e:
        parser.error(str(UsageError.of(e)))
    settings = ", ".join(f"{k} {v}" for k, v in result.data.items() if v is not None)
    which = "the data it was trained on" if result.trained_on_it else "new data"
    lines = [f"{shown_path(path)}: {result.architecture}, evaluated on {which} ({settings})"]
    for split, found in result.scores.items():
        if result.trained_on_it:
            name, where = split, "training set" if split == "train" else "held-out test set"
        elif split == "train":  # not the data it was trained on: say so on every line
            name, where = "data", "new data, not its training set"
        else:
            name, where = split, "the new data's held-out test set"
        lines.append(f"{name:<6} {found.describe()}  ({where})")
    if not all(math.isfinite(found.loss) for found in result.scores.values()):
        print(
            "modelwright-autograd evaluate: note: the loss is not a finite number (the "
            "model's numbers overflowed, or its weights hold NaN, infinities or a negative "
            "variance)",
            file=sys.stderr,
        )
    return emit(lines)


def _evaluate_lm(
    args: argparse.Namespace, parser: argparse.ArgumentParser, path: Path, checkpoint: Any
) -> int:
    """evaluate for a language model: its loss per character on its training and
    held-out splits, the data found again from its stored settings."""
    for option in ("dataset", "samples", "noise", "seed"):
        if getattr(args, option) is not None:
            parser.error(f"argument --{option}: a language model is evaluated on its own data")
    run = lm_run.load_lm_run(path, checkpoint)
    try:
        losses = lm_run.evaluate_lm_run(run, args.eval_iters, seed=1337)
    except lm_run.NotALanguageModel as e:
        print(f"modelwright-autograd evaluate: {e}", file=sys.stderr)
        return 1
    how = (
        "every word of each split"
        if run.names
        else f"{args.eval_iters} random batches of each split"
    )
    lines = [f"{shown_path(path)}: {checkpoint.architecture.describe()}, scored on {how}"]
    for split, value in losses.items():
        lines.append(f"{split:<6} loss {value:.4f} nats per character")
    broken = [value for value in losses.values() if not math.isfinite(value)]
    if broken:
        emit(lines)
        print(
            f"modelwright-autograd evaluate: the model is broken: its loss is {broken[0]} "
            "(its weights hold NaN or infinities, or its numbers overflow)",
            file=sys.stderr,
        )
        return 1
    return emit(lines)
