"""The ``train`` and ``evaluate`` commands.

``modelwright-autograd train`` with no options is the course workload, done with exactly
micrograd's demo arithmetic: ``make_moons(100, noise=0.1)`` after seeding with 1337,
``MLP(2, [16, 16, 1])`` from ``random.Random(1337)``, the hinge loss
``mean(relu(1 - y*score)) + 1e-4 * sum(p*p)``, and 100 full-batch SGD steps with the
learning rate falling linearly from 1.0 (``lr = 1.0 - 0.9*k/100``). Its first loss is
micrograd's 0.8958441028683222 exactly. Later losses agree with micrograd's to ~1e-14
relative, not bit for bit, and cannot: micrograd keeps a node's inputs in a ``set``, so the
order in which it adds up a weight's gradient contributions follows object addresses and
changes from one run of micrograd to the next (its own step-1 loss varies in the last bit).

``--engine tensor`` trains the same MLP shape with NumPy Tensors (torch's initialisation,
so different starting weights); ``--dataset digits`` is the tensor engine's workload.

A run writes its outputs only once training has finished: every option is checked before
anything happens (a bad one is a usage error, exit code 2), and a run that diverges writes
nothing (exit code 1).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from . import functional as F
from . import losses, tensor_nn
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint, write_json
from .data import DATASETS, DATASETS_2D, Dataset, load_dataset
from .engine import Value
from .graph import no_grad
from .nn import MLP
from .optim import SGD, Adam, Optimizer
from .tensor import Tensor

ENGINES = ("scalar", "tensor")
BINARY_LOSSES = ("svm", "mse", "bce")
LOSSES = (*BINARY_LOSSES, "ce")
OPTIMIZERS = ("sgd", "momentum", "adam")
ACTIVATIONS = ("relu", "tanh")

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


# ---------------------------------------------------------------------- configuration
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
        raise UsageError(
            "--loss",
            f"ce is for digits; {args.dataset} has two classes (use {', '.join(BINARY_LOSSES)})",
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


# ---------------------------------------------------------------------- the scalar engine
_SCALAR_LOSSES = {"svm": losses.svm_loss, "mse": losses.mse_loss, "bce": losses.bce_with_logits}


class ScalarLearner:
    """An ``nn.MLP`` of Values with one output: the score, positive meaning class 1."""

    def __init__(self, config: TrainConfig, nin: int, model: MLP | None = None) -> None:
        if model is None:  # random.Random(seed) draws what random.seed(seed) would
            nouts = [*config.hidden, 1]
            model = MLP(nin, nouts, config.activation, seed=random.Random(config.seed))
        self.model = model
        self.loss_name = config.loss
        self.l2 = config.l2
        self._loss_fn = _SCALAR_LOSSES[config.loss]

    def parameters(self) -> list[Value]:
        return self.model.parameters()

    def targets(self, y: np.ndarray) -> list[float]:
        """-1/+1 for the hinge and squared losses, 0/1 for binary cross-entropy."""
        return [float(t) for t in (y if self.loss_name == "bce" else 2 * y - 1)]

    def forward(self, X: np.ndarray, y: np.ndarray) -> tuple[Value, np.ndarray]:
        """The loss graph on a batch (data loss + l2 * sum of squared weights) and the
        predicted classes, with micrograd's arithmetic: one Value per score."""
        scores = [self.model(row) for row in X.tolist()]
        loss = self._loss_fn(scores, self.targets(y))
        if self.l2:
            params = self.model.parameters()
            loss = loss + self.l2 * Value.dot(params, params)
        predicted = np.fromiter((s.data > 0.0 for s in scores), dtype=np.int64, count=len(scores))
        return loss, predicted

    def loss_value(self, loss: Value) -> float:
        return loss.data

    def scores(self, X: np.ndarray) -> np.ndarray:
        """The raw score of every row, without recording a graph."""
        with no_grad():
            return np.array([self.model(row).data for row in X.tolist()], dtype=np.float64)


# ---------------------------------------------------------------------- the tensor engine
class TensorLearner:
    """A ``tensor_nn.MLP``: one output score for the two-class sets (as ScalarLearner, with
    the same losses from ``functional``), ten logits and cross-entropy for digits."""

    def __init__(
        self, config: TrainConfig, nin: int, num_classes: int, model: tensor_nn.MLP | None = None
    ) -> None:
        if model is None:
            nouts = [*config.hidden, num_classes if config.loss == "ce" else 1]
            model = tensor_nn.MLP(nin, nouts, config.activation, seed=config.seed)
        self.model = model
        self.loss_name = config.loss
        self.l2 = config.l2

    def parameters(self) -> list[Tensor]:
        return self.model.parameters()

    def forward(self, X: np.ndarray, y: np.ndarray) -> tuple[Tensor, np.ndarray]:
        """The loss graph on a batch (data loss + l2 * sum of squared weights) and the
        predicted classes: the whole batch goes through each layer as one matrix product."""
        out = self.model(Tensor(X))
        if self.loss_name == "ce":
            loss = F.cross_entropy(out, y)
            predicted = np.argmax(out.data, axis=1)
        else:
            s = out.reshape(-1)  # (N, 1) scores -> (N,)
            if self.loss_name == "bce":
                loss = F.binary_cross_entropy_with_logits(s, y.astype(np.float64))
            else:
                target = (2 * y - 1).astype(np.float64)  # -1/+1
                if self.loss_name == "mse":
                    loss = F.mse_loss(s, target)
                else:  # the hinge loss, as losses.svm_loss
                    loss = (1.0 - target * s).relu().mean()
            predicted = (s.data > 0.0).astype(np.int64)
        if self.l2:
            loss = loss + self.l2 * sum((p * p).sum() for p in self.model.parameters())
        return loss, predicted

    def loss_value(self, loss: Tensor) -> float:
        return loss.item()

    def scores(self, X: np.ndarray) -> np.ndarray:
        """The raw score of every row (two-class models), without recording a graph."""
        with no_grad():
            return self.model(Tensor(X)).data[:, 0].astype(np.float64)


# ---------------------------------------------------------------------- the training loop
@dataclass
class History:
    loss: list[float]
    accuracy: list[float]
    seconds: float


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


def fit(learner: Any, data: Dataset, config: TrainConfig, progress: Any) -> History:
    """Run ``config.steps`` optimiser steps, recording the loss and accuracy of each batch
    (measured in the forward pass that the step's gradient comes from, as micrograd does)."""
    optimizer = make_optimizer(config, learner.parameters())
    batches = batch_indices(
        len(data.y_train), config.batch_size, np.random.default_rng([config.seed, 1])
    )
    history = History([], [], 0.0)
    start = time.perf_counter()
    for step in range(config.steps):
        idx = next(batches)
        yb = data.y_train[idx]
        loss, predicted = learner.forward(data.X_train[idx], yb)
        loss_value = learner.loss_value(loss)
        if not math.isfinite(loss_value):
            raise TrainingDiverged(
                f"training diverged: the loss is {loss_value} at step {step}; "
                f"try a smaller --lr (it was {config.lr:g})"
            )
        accuracy = float(np.mean(predicted == yb))
        history.loss.append(loss_value)
        history.accuracy.append(accuracy)
        optimizer.zero_grad()
        loss.backward()
        optimizer.lr = config.lr_at(step)
        optimizer.step()
        progress.set_postfix(loss=f"{loss_value:.4f}", acc=f"{accuracy:.1%}", refresh=False)
        progress.update(1)
    history.seconds = time.perf_counter() - start
    return history


@dataclass(frozen=True)
class Score:
    """Loss and accuracy of a model on one set of examples."""

    loss: float
    correct: int
    total: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.total

    def describe(self) -> str:
        return f"loss {self.loss:.6f}  accuracy {self.accuracy:.2%} ({self.correct}/{self.total})"


def score(learner: Any, X: np.ndarray, y: np.ndarray) -> tuple[Score, np.ndarray]:
    """The training objective and accuracy on (X, y), computed without a graph, and the
    predicted classes."""
    with no_grad():
        loss, predicted = learner.forward(X, y)
    correct = int(np.sum(predicted == y))
    return Score(learner.loss_value(loss), correct, len(y)), predicted


# ---------------------------------------------------------------------- outputs
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
    learner: Any,
    data: Dataset,
    config: TrainConfig,
    history: History,
    train_score: Score,
    test: tuple[Score, np.ndarray] | None,
) -> list[str]:
    """Write checkpoint, metrics and pictures into ``out``; return the file names."""
    from . import plots  # matplotlib is only imported when there is something to draw

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


def make_learner(config: TrainConfig, data: Dataset, model: Any = None) -> Any:
    """The learner for ``config.engine``, around a new model or the one given."""
    if config.engine == "scalar":
        return ScalarLearner(config, data.num_features, model)
    return TensorLearner(config, data.num_features, data.num_classes, model)


def run_training(config: TrainConfig, out: Path, quiet: bool = False) -> dict[str, Any]:
    """Train, evaluate, write the outputs; return the summary printed by the command."""
    from tqdm import tqdm

    data = load_dataset(config.dataset, config.samples, config.noise, config.seed)
    learner = make_learner(config, data)
    # disable=None: tqdm draws only when stderr is a terminal, so logs stay clean
    with (
        tqdm(
            total=config.steps,
            desc=f"train {config.dataset}",
            unit="step",
            disable=True if quiet else None,
            file=sys.stderr,
        ) as progress,
        np.errstate(over="ignore", invalid="ignore"),
    ):
        # NumPy's overflow warnings would only repeat what TrainingDiverged says clearly
        history = fit(learner, data, config, progress)
        train_score, _ = score(learner, data.X_train, data.y_train)
        test = None
        if data.X_test is not None:
            test = score(learner, data.X_test, data.y_test)
    for final in (train_score, test[0] if test else train_score):
        if not math.isfinite(final.loss):
            raise TrainingDiverged(
                f"training diverged: the final loss is {final.loss}; "
                f"try a smaller --lr (it was {config.lr:g})"
            )
    files = write_outputs(out, learner, data, config, history, train_score, test)
    return {
        "train": train_score,
        "test": test[0] if test else None,
        "seconds": history.seconds,
        "out": out,
        "files": files,
    }


# ---------------------------------------------------------------------- command line
def _positive_int(option: str, minimum: int = 1, maximum: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    parse.__name__ = option  # argparse names the type in some messages
    return parse


def _float(option: str, *, positive: bool):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if positive and not value > 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
        if not positive and value < 0:
            raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
        return value

    parse.__name__ = option
    return parse


def _hidden(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive layer sizes such as 16,16, got {text!r}"
        )
    return sizes


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2**32 - 1, got {value}")
    return value


def _add_data_options(parser: argparse.ArgumentParser, for_evaluate: bool) -> None:
    default = "the checkpoint's" if for_evaluate else None
    parser.add_argument(
        "--dataset",
        choices=DATASETS,
        default=None if for_evaluate else "moons",
        help=f"the data (default: {default or 'moons'}); moons and circles come from "
        "scikit-learn, xor and spiral are two-class toys; digits is scikit-learn's 1,797 8x8 "
        "digits, split 80/20 (stratified) into train and test",
    )
    parser.add_argument(
        "--samples",
        type=_positive_int("--samples", MIN_SAMPLES, MAX_SAMPLES),
        metavar="N",
        help=f"points to generate for a 2-D dataset, {MIN_SAMPLES} to {MAX_SAMPLES:,} "
        f"(default: {default or 100})",
    )
    parser.add_argument(
        "--noise",
        type=_float("--noise", positive=False),
        metavar="SD",
        help=f"std. deviation of the noise on each point (default: {default or 0.1})",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        default=None if for_evaluate else 1337,
        help=f"seed for the data, the weights and the batch order (default: "
        f"{default or 1337}; 1337 reproduces micrograd's demo)",
    )


def register_train(subparsers: Any) -> None:
    """Add the ``train`` subcommand."""
    p = subparsers.add_parser(
        "train",
        help="train an MLP and save its curves, decision boundary and checkpoint",
        description="Train an MLP. With no options: micrograd's demo (moons, MLP 2-16-16-1, "
        "hinge loss + 1e-4 L2, 100 full-batch SGD steps, lr 1.0 -> 0.1). --dataset digits "
        "trains a 64-128-64-10 MLP on scikit-learn's digits with the tensor engine. A run writes "
        "model.json (the checkpoint), metrics.json and loss_curve.png, plus decision_boundary.png "
        "for the 2-D sets or confusion_matrix.png and misclassified.png for digits.",
    )
    _add_data_options(p, for_evaluate=False)
    p.add_argument(
        "--hidden",
        type=_hidden,
        metavar="SIZES",
        help="hidden layer sizes, comma-separated (default: 16,16; digits 128,64)",
    )
    p.add_argument(
        "--activation",
        choices=ACTIVATIONS,
        default="relu",
        help="hidden-layer nonlinearity (default: relu)",
    )
    p.add_argument(
        "--loss",
        choices=LOSSES,
        help="svm (hinge, labels -1/+1, the default), mse (labels -1/+1) or bce "
        "(labels 0/1) for the 2-D sets; ce (cross-entropy) for digits",
    )
    p.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        help="sgd (lr decays linearly to a tenth; default for 2-D), momentum "
        "(SGD with momentum 0.9) or adam (default for digits)",
    )
    p.add_argument(
        "--lr",
        type=_float("--lr", positive=True),
        help="(starting) learning rate (default: sgd 1.0, momentum 0.1, adam 0.05; with "
        "--loss mse sgd 0.1, momentum 0.05; digits: sgd 0.1, momentum 0.01, adam 0.001)",
    )
    p.add_argument(
        "--steps", type=_positive_int("--steps"), help="optimiser steps (default: 100; digits 1000)"
    )
    p.add_argument(
        "--batch-size",
        type=_positive_int("--batch-size"),
        metavar="N",
        help="examples per step (default: the whole training set; digits 32)",
    )
    p.add_argument(
        "--l2",
        type=_float("--l2", positive=False),
        default=1e-4,
        help="weight of the L2 penalty sum(p*p) added to the loss (default: 1e-4)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        help="scalar (Value graph) or tensor (NumPy arrays); default scalar, digits needs tensor",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output directory (default: runs/<dataset>-<timestamp>/)",
    )
    p.add_argument(
        "--quiet", action="store_true", help="no progress bar; print only the final summary"
    )
    p.set_defaults(func=partial(_train_command, parser=p))


def _train_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        config = resolve_config(args)
        if args.out is not None and args.out.exists() and not args.out.is_dir():
            raise UsageError("--out", f"{args.out} exists and is not a directory")
    except UsageError as e:
        parser.error(str(e))  # exits with code 2
    out = args.out if args.out is not None else default_out_dir(config.dataset)
    try:
        result = run_training(config, out, quiet=args.quiet)
    except TrainingDiverged as e:
        print(f"modelwright-autograd train: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"modelwright-autograd train: cannot write the outputs: {e}", file=sys.stderr)
        return 1
    lines = [f"final  {result['train'].describe()}  (training set)"]
    if result["test"] is not None:
        lines.append(f"test   {result['test'].describe()}  (held-out test set)")
    lines.append(
        f"trained in {result['seconds']:.2f} s ({config.steps} steps); "
        f"outputs in {out}/: {', '.join(result['files'])}"
    )
    return _emit(lines)


def _emit(lines: list[str]) -> int:
    """Print the summary and return 0; if the reader has gone (``| head``), stop quietly."""
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 1
    return 0


def register_evaluate(subparsers: Any) -> None:
    """Add the ``evaluate`` subcommand."""
    p = subparsers.add_parser(
        "evaluate",
        help="load a checkpoint and report its loss and accuracy",
        description="Load model.json written by train and print the training objective and "
        "accuracy, by default on the data it was trained on (regenerated from the settings "
        "stored in the checkpoint); the data options override them.",
    )
    p.add_argument(
        "--checkpoint",
        type=Path,
        required=True,
        metavar="FILE",
        help="a model.json written by train",
    )
    _add_data_options(p, for_evaluate=True)
    p.set_defaults(func=partial(_evaluate_command, parser=p))


@dataclass(frozen=True)
class Evaluation:
    """What ``evaluate`` found: the model, the data it was scored on, a Score per split."""

    architecture: str
    data: dict[str, Any]
    trained_on_it: bool
    scores: dict[str, Score]


def _whole(x: Any) -> bool:
    """A JSON integer; Python counts true and false as the ints 1 and 0, JSON does not."""
    return isinstance(x, int) and not isinstance(x, bool)


def _finite_non_negative(x: Any) -> bool:
    """A JSON number (not a bool) that is a finite float64 and at least 0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x) and x >= 0
    except OverflowError:  # an int too large for a float64
        return False


def _stored_data_config(path: Path, stored: Any) -> dict[str, Any]:
    """The checkpoint's data settings, checked with the same limits as the command-line
    options, so a hand-edited or corrupt file fails clearly instead of deep in NumPy."""
    if not isinstance(stored, dict):
        raise CheckpointError(path, "has no 'data' settings (was it written by train?)")
    name, samples, noise, seed = (stored.get(k) for k in ("dataset", "samples", "noise", "seed"))
    if name not in DATASETS:
        raise CheckpointError(path, f"unknown dataset {name!r} in its data settings")
    if not (_whole(seed) and 0 <= seed < 2**32):
        raise CheckpointError(
            path, f"bad seed {seed!r} in its data settings (must be 0 to 2**32 - 1)"
        )
    if name != "digits":
        if not (_whole(samples) and MIN_SAMPLES <= samples <= MAX_SAMPLES):
            raise CheckpointError(
                path,
                f"bad samples {samples!r} in its data settings "
                f"(must be a whole number from {MIN_SAMPLES} to {MAX_SAMPLES:,})",
            )
        if not _finite_non_negative(noise):
            raise CheckpointError(
                path, f"bad noise {noise!r} in its data settings (must be a finite number >= 0)"
            )
    return {"dataset": name, "samples": samples, "noise": noise, "seed": seed}


def evaluate_checkpoint(
    path: Path,
    dataset: str | None = None,
    samples: int | None = None,
    noise: float | None = None,
    seed: int | None = None,
) -> Evaluation:
    """Load a checkpoint and score it (training objective and accuracy) on the data it was
    trained on, regenerated from its stored settings, or on data the arguments change."""
    checkpoint = load_checkpoint(path)
    arch = checkpoint.architecture
    stored = _stored_data_config(path, checkpoint.metadata.get("data"))
    objective = checkpoint.metadata.get("objective")
    if not isinstance(objective, dict) or objective.get("loss") not in LOSSES:
        raise CheckpointError(path, "has no valid 'objective' (its loss and l2 weight)")
    loss_name, l2 = objective["loss"], objective.get("l2", 0.0)
    if not _finite_non_negative(l2):
        raise CheckpointError(
            path, f"bad l2 weight {l2!r} in its objective (must be a finite number >= 0)"
        )
    if (loss_name == "ce") != (arch.nouts[-1] > 1) or (
        loss_name == "ce" and arch.engine == "scalar"
    ):
        raise CheckpointError(path, f"loss {loss_name!r} does not fit a {arch.describe()}")

    wanted = dict(stored)
    if dataset is not None and dataset != stored["dataset"]:
        wanted.update(dataset=dataset, samples=100, noise=0.1)
    if wanted["dataset"] == "digits":
        for option, value in (("--samples", samples), ("--noise", noise)):
            if value is not None:
                raise UsageError(option, "does not apply to --dataset digits (1,797 images)")
        wanted.update(samples=None, noise=None)
    for key, value in (("samples", samples), ("noise", noise), ("seed", seed)):
        if value is not None:
            wanted[key] = value
    data = load_dataset(wanted["dataset"], wanted["samples"], wanted["noise"], wanted["seed"])
    outputs = data.num_classes if loss_name == "ce" else 1
    if (data.num_features, outputs) != (arch.nin, arch.nouts[-1]):
        raise UsageError(
            "--dataset",
            f"{wanted['dataset']} has {data.num_features} features and {data.num_classes} "
            f"classes; the checkpoint holds a {arch.describe()}",
        )
    config = TrainConfig(loss=loss_name, l2=float(l2), engine=arch.engine, **wanted)
    learner = make_learner(config, data, checkpoint.model)
    scores = {"train": score(learner, data.X_train, data.y_train)[0]}
    if data.X_test is not None:
        scores["test"] = score(learner, data.X_test, data.y_test)[0]
    return Evaluation(arch.describe(), wanted, wanted == stored, scores)


def _evaluate_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        result = evaluate_checkpoint(
            args.checkpoint, args.dataset, args.samples, args.noise, args.seed
        )
    except CheckpointError as e:
        print(f"modelwright-autograd evaluate: {e}", file=sys.stderr)
        return 1
    except UsageError as e:
        parser.error(str(e))
    settings = ", ".join(f"{k} {v}" for k, v in result.data.items() if v is not None)
    which = "the data it was trained on" if result.trained_on_it else "new data"
    lines = [f"{args.checkpoint}: {result.architecture}, evaluated on {which} ({settings})"]
    for split, found in result.scores.items():
        where = "training set" if split == "train" else "held-out test set"
        lines.append(f"{split:<6} {found.describe()}  ({where})")
    return _emit(lines)
