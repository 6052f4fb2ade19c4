"""A run's settings: ``TrainConfig``, the per-dataset defaults and the bounds on its work.

With no options a run is micrograd's demo exactly (see docs/training.md); cli/train.py turns
the options into a ``TrainConfig``, and a bad option or combination is a ``UsageError``
(exit code 2) raised before anything is trained or written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..checkpoint import MAX_LAYERS, MAX_PARAMETERS, Architecture
from ..scalar import losses

#: --loss names: the keys of ``losses.LOSSES`` and ``functional.LOSSES`` (the same set).
#: ``ce`` (cross-entropy) is the multi-class loss, for digits; the others score two classes.
LOSS_NAMES = tuple(losses.LOSSES)
BINARY_LOSS_NAMES = tuple(name for name in LOSS_NAMES if name != "ce")
OPTIMIZERS = ("sgd", "momentum", "adam")
#: --model names: an MLP for every dataset, a small CNN (tensor_nn.CNN) for the digits.
MODELS = ("mlp", "cnn")


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
    # --model cnn: Adam's rate chosen by trials on seeds 1-5 (docs/training.md); the
    # others are the MLP's, not tuned for the CNN.
    ("digits-cnn", "sgd"): 0.1,
    ("digits-cnn", "momentum"): 0.01,
    ("digits-cnn", "adam"): 2e-3,
}
MOMENTUM = 0.9
DEFAULT_L2 = 1e-4  # --l2
#: --model cnn's defaults: the two convolutions' channels and the optimiser steps
#: (docs/training.md says how they were chosen).
CNN_CHANNELS = (32, 64)
CNN_STEPS = 1500
LR_DECAY_TO = 0.1  # plain SGD ends at this fraction of its starting learning rate
#: --samples bounds, also applied to a checkpoint's stored data settings. A million 2-D
#: points is 16 MB for NumPy; far more is a typo (or a corrupt file) that ends in a
#: MemoryError. What a given engine and network can take is bounded by WORK_LIMITS.
MIN_SAMPLES, MAX_SAMPLES = 2, 1_000_000
MAX_STEPS = 1_000_000
#: The largest --noise: the 2-D datasets lie within a few units of the origin, so this is
#: a million times their spread, far past burying them; larger (up to 1e308) makes points
#: that overflow to inf, and then every loss is nan.
MAX_NOISE = 1e6
#: What one run may cost, checked with the options before anything is built (see
#: ``check_work``; measured in docs/training.md, CPU times on the 2-core machine).
#: Multiply-adds ("MACs") count points x weights. "pass": MACs of one forward pass over the
#: training set (scoring does one, a full-batch step one and its backward); at the scalar
#: limit, 14,836 points through 16,16, a step took 5.5 s and the run peaked at 0.6 GB.
#: "activations": floats the tensor engine holds for a pass, points x the sum of the layer
#: widths; a million points through 2-16-16-1 (35 million) took 1.7 s a step and peaked at
#: 1.9 GB. "run" and "run activations": the same summed over all the steps, about a quarter
#: of an hour (scalar) and four minutes (tensor) at those rates.
WORK_LIMITS = {
    "scalar": {"pass": 5_000_000, "run": 10**9},
    "tensor": {
        "pass": 10**10,
        "activations": 40_000_000,
        "run": 10**12,
        "run activations": 5 * 10**9,
    },
}
#: scikit-learn's digits: 1,797 images of 8x8 pixels, ten classes.
DIGITS_IMAGES, DIGITS_FEATURES, DIGITS_CLASSES = 1797, 64, 10


class UsageError(Exception):
    """An option that makes no sense, alone or with the others: the exit code 2 of a usage
    error."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        self.message = message
        super().__init__(f"argument {option}: {message}")


class TrainingDiverged(RuntimeError):
    """The loss stopped being a finite number: the learning rate, the noise or the L2
    weight is too large (``suspects`` names the ones that are)."""


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
    model: str = "mlp"  # "cnn": tensor_nn.CNN with ``hidden`` as its two channel counts
    compile: bool = False  # the scalar step as one compiled function (scalar/compiler.py)

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


def default_lr(dataset: str, loss: str, model: str, optimizer: str) -> float:
    """A run's learning rate when --lr is not given: its row of DEFAULT_LR."""
    if dataset == "digits":
        family = "digits-cnn" if model == "cnn" else "digits"
    else:
        family = "2d-mse" if loss == "mse" else "2d"
    return DEFAULT_LR[family, optimizer]


def check_work(config: TrainConfig) -> None:
    """Refuse a run whose model could not be checkpointed or whose cost is beyond
    WORK_LIMITS, as a UsageError naming the option to change. Only sizes are multiplied
    here: nothing is allocated, so a huge --hidden is refused at once."""
    digits = config.dataset == "digits"
    nin = DIGITS_FEATURES if digits else 2
    widths = (nin, *config.hidden, DIGITS_CLASSES if config.loss == "ce" else 1)
    weights = Architecture(config.engine, nin, widths[1:], config.activation).num_parameters()
    macs = weights  # an MLP uses each weight once per point
    if config.model == "cnn":  # a conv weight is used at every position: 8x8, then 4x4
        c1, c2 = config.hidden
        cnn = Architecture("tensor", nin, (c1, c2, DIGITS_CLASSES), "relu", model="cnn")
        weights = cnn.num_parameters()
        macs = 9 * c1 * 64 + 9 * c1 * c2 * 16 + 4 * c2 * DIGITS_CLASSES
        widths = (nin, 64 * c1, 16 * c1, 16 * c2, 4 * c2, DIGITS_CLASSES)
    engine = f"the {config.engine} engine"
    if len(widths) - 1 > MAX_LAYERS:
        raise UsageError(
            "--hidden",
            f"{len(config.hidden):,} hidden sizes make {len(widths) - 1:,} layers; a "
            f"checkpoint holds at most {MAX_LAYERS:,}",
        )
    if weights > MAX_PARAMETERS[config.engine]:
        sizes = ",".join(map(str, config.hidden))
        if len(sizes) > 40:  # thousands of layers: keep the message one short line
            sizes = f"{sizes[:37]}..."
        raise UsageError(
            "--hidden",
            f"{sizes} makes a {config.model.upper()} of {weights:,} weights; a {config.engine} "
            "checkpoint "
            f"holds at most {MAX_PARAMETERS[config.engine]:,}",
        )
    limits = WORK_LIMITS[config.engine]
    points = DIGITS_IMAGES if digits else config.samples or 0
    smaller = "a smaller --hidden" if digits else "fewer --samples or a smaller --hidden"
    if config.engine == "scalar":
        smaller += " (or --engine tensor)"
    size_option = "--hidden" if digits else "--samples"
    per_pass = points * macs
    if per_pass > limits["pass"]:
        raise UsageError(
            size_option,
            f"{points:,} points through {weights:,} weights is {per_pass:,} multiply-adds a "
            f"pass; {engine} allows {limits['pass']:,}: use {smaller}",
        )
    activations = points * sum(widths)
    if activations > limits.get("activations", activations):
        raise UsageError(
            size_option,
            f"{points:,} points through layers {'-'.join(map(str, widths))} hold "
            f"{activations:,} floats a pass; {engine} allows {limits['activations']:,}: "
            f"use {smaller}",
        )
    batch = min(config.batch_size or points, points)
    for what, per_step in (("run", macs), ("run activations", sum(widths))):
        total = config.steps * batch * per_step
        if total > limits.get(what, total):
            unit = "multiply-adds" if what == "run" else "activation floats"
            raise UsageError(
                "--steps",
                f"{config.steps:,} steps of {batch:,} points is {total:.2g} {unit} in all; "
                f"{engine} allows {limits[what]:.0e}: use fewer --steps or a smaller "
                f"--batch-size",
            )


#: Settings above these are the likely cause when a run diverges: the 2-D datasets lie
#: within a few units of the origin, so noise above 1 buries them, and an L2 weight
#: above 1 outweighs any data loss. A learning rate is suspect above ten times its default.
UNUSUAL_NOISE, UNUSUAL_L2, UNUSUAL_LR_FACTOR = 1.0, 1.0, 10.0


def divergence_advice(config: TrainConfig) -> str:
    """What to change after the loss became non-finite: the settings that are unusually
    large, or, when none is, every setting that can cause it."""
    usual_lr = default_lr(config.dataset, config.loss, config.model, config.optimizer)
    settings = {"--lr": config.lr, "--noise": config.noise, "--l2": config.l2}
    unusual = {
        "--lr": config.lr > UNUSUAL_LR_FACTOR * usual_lr,
        "--noise": config.noise is not None and config.noise > UNUSUAL_NOISE,
        "--l2": config.l2 > UNUSUAL_L2,
    }
    suspects = [o for o in settings if unusual[o]] or [
        o for o in settings if settings[o] is not None
    ]
    named = [f"{o} (it was {settings[o]:g})" for o in suspects]
    choices = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"
    return f"try a smaller {choices}"
