"""A run's settings: ``TrainConfig``, the per-dataset defaults and the bounds on its data.

With no options a run is micrograd's demo exactly (see docs/training.md); cli/train.py turns
the options into a ``TrainConfig``, and a setting that cannot be used is a
``SettingError`` raised before anything is trained or written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

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
#: MemoryError. What a given engine and network can take is the command line's budget
#: (cli/budgets.py).
MIN_SAMPLES, MAX_SAMPLES = 2, 1_000_000
#: The most optimiser steps a run's settings hold, from the options or a file (a nanoGPT
#: config's larger max_iters is not one train would take).
MAX_STEPS = 1_000_000
#: The largest --noise: the 2-D datasets lie within a few units of the origin, so this is
#: a million times their spread, far past burying them; larger (up to 1e308) makes points
#: that overflow to inf, and then every loss is nan.
MAX_NOISE = 1e6
#: scikit-learn's digits: 1,797 images of 8x8 pixels, ten classes.
DIGITS_IMAGES, DIGITS_FEATURES, DIGITS_CLASSES = 1797, 64, 10


class SettingError(ValueError):
    """A setting that cannot be used, alone or with the others: ``setting`` names it as the
    settings do (``steps``; ``out``, the run folder; ``resume``, the run to continue) and
    ``message`` says why. The command line names the option instead (exit code 2)."""

    def __init__(self, setting: str, message: str) -> None:
        self.setting = setting
        self.message = message
        super().__init__(f"{setting}: {message}")


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
