"""A run's settings: ``TrainConfig``, the per-dataset defaults and ``resolve_config``.

With no options a run is micrograd's demo exactly (see docs/training.md); a bad option or
combination is a ``UsageError`` (exit code 2) raised before anything is trained or written.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from typing import Any

from .. import losses

#: --loss names: the two-class losses of ``losses.LOSSES`` (and ``functional.LOSSES``),
#: and cross-entropy for digits.
BINARY_LOSS_NAMES = tuple(losses.LOSSES)
LOSS_NAMES = (*BINARY_LOSS_NAMES, "ce")
OPTIMIZERS = ("sgd", "momentum", "adam")


#: Starting learning rates when --lr is not given, chosen by training moons with every
#: loss and optimiser. The squared loss's gradient 2*(s - y) grows with the score, so plain
#: SGD needs a tenth of the hinge loss's rate not to diverge. Plain SGD decays linearly to
#: a tenth of its rate over the run; momentum and Adam keep theirs.
DEFAULT_LR = {
    ("2d", "sgd"): 1.0,
    ("2d", "momentum"): 0.1,
    ("2d", "adam"): 0.05,
    ("2d-mse", "sgd"): 0.1,
    ("2d-mse", "momentum"): 0.05,
    ("2d-mse", "adam"): 0.05,
    ("digits", "sgd"): 0.1,
    ("digits", "momentum"): 0.01,
    ("digits", "adam"): 1e-3,
}
MOMENTUM = 0.9
LR_DECAY_TO = 0.1  # plain SGD ends at this fraction of its starting learning rate
#: --samples bounds, also applied to a checkpoint's stored data settings. A million 2-D
#: points is 16 MB for NumPy; far more is a typo (or a corrupt file) that ends in a
#: MemoryError, and the scalar engine would take hours over them anyway.
MIN_SAMPLES, MAX_SAMPLES = 2, 1_000_000


class UsageError(Exception):
    """An option that makes no sense, alone or with the others: argparse's exit code 2."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"argument {option}: {message}")


class TrainingDiverged(RuntimeError):
    """The loss stopped being a finite number: the learning rate is usually too large."""


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a run, with the per-dataset defaults filled in."""

    dataset: str = "moons"
    samples: int | None = 100
    noise: float | None = 0.1
    hidden: tuple[int, ...] = (16, 16)
    activation: str = "relu"
    loss: str = "svm"
    optimizer: str = "sgd"
    lr: float = 1.0
    steps: int = 100
    batch_size: int | None = None  # None: the whole training set every step
    l2: float = 1e-4
    seed: int = 1337
    engine: str = "scalar"

    @property
    def lr_decay(self) -> bool:
        """Plain SGD follows the course schedule: lr * (1 - 0.9 * step / steps)."""
        return self.optimizer == "sgd"

    def lr_at(self, step: int) -> float:
        if not self.lr_decay:
            return self.lr
        return self.lr * (1.0 - (1.0 - LR_DECAY_TO) * step / self.steps)

    def data_config(self) -> dict[str, Any]:
        """What regenerates the training data exactly (stored in the checkpoint)."""
        return {
            "dataset": self.dataset,
            "samples": self.samples,
            "noise": self.noise,
            "seed": self.seed,
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        d["lr_decay"] = self.lr_decay
        return d


def resolve_config(args: argparse.Namespace) -> TrainConfig:
    """Fill in the defaults that depend on the dataset and check the options together."""
    digits = args.dataset == "digits"
    if digits:
        for option, value in (("--samples", args.samples), ("--noise", args.noise)):
            if value is not None:
                raise UsageError(option, "does not apply to --dataset digits (1,797 images)")
        if args.engine == "scalar":
            raise UsageError("--engine", "--dataset digits needs the tensor engine")
        if args.loss not in (None, "ce"):
            raise UsageError("--loss", "--dataset digits has 10 classes: use ce")
    elif args.loss == "ce":
        binary = ", ".join(BINARY_LOSS_NAMES)
        raise UsageError(
            "--loss", f"ce is for digits; {args.dataset} has two classes (use {binary})"
        )
    optimizer = args.optimizer or ("adam" if digits else "sgd")
    loss = args.loss or ("ce" if digits else "svm")
    family = "digits" if digits else ("2d-mse" if loss == "mse" else "2d")
    return TrainConfig(
        dataset=args.dataset,
        samples=None if digits else (args.samples if args.samples is not None else 100),
        noise=None if digits else (args.noise if args.noise is not None else 0.1),
        hidden=args.hidden or ((128, 64) if digits else (16, 16)),
        activation=args.activation,
        loss=loss,
        optimizer=optimizer,
        lr=args.lr if args.lr is not None else DEFAULT_LR[family, optimizer],
        steps=args.steps if args.steps is not None else (1000 if digits else 100),
        batch_size=args.batch_size if args.batch_size is not None else (32 if digits else None),
        l2=args.l2,
        seed=args.seed,
        engine=args.engine or ("tensor" if digits else "scalar"),
    )
