"""The learners: an engine's model plus the loss it is trained with, behind one interface.

``ScalarLearner`` wraps an ``nn.MLP`` of Values (micrograd's arithmetic, one Value per
score), ``TensorLearner`` a ``tensor_nn.MLP``; the loop only sees the ``Learner`` protocol.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..data import Dataset
from ..graph import no_grad
from ..scalar import losses
from ..scalar.compiler import compiled
from ..scalar.engine import Value
from ..scalar.nn import MLP
from ..tensor import Tensor
from ..tensor import functional as F
from ..tensor import nn as tensor_nn
from .settings import TrainConfig


class Learner(Protocol):
    """What the training loop, scoring and outputs need from a model and its loss."""

    model: Any

    def parameters(self) -> list[Any]: ...

    def forward(self, X: np.ndarray, y: np.ndarray) -> tuple[Any, np.ndarray]:
        """The loss graph on a batch and the predicted classes."""
        ...

    def loss_value(self, loss: Any) -> float: ...

    def train(self, mode: bool) -> None:
        """Training mode (True, for fit) or evaluation mode (False, for scoring)."""
        ...

    def scores(self, X: np.ndarray) -> np.ndarray:
        """The raw score of every row, without recording a graph."""
        ...


class ScalarLearner:
    """An ``nn.MLP`` of Values with one output: the score, positive meaning class 1."""

    def __init__(self, config: TrainConfig, nin: int, model: MLP | None = None) -> None:
        if model is None:  # random.Random(seed) draws what random.seed(seed) would
            nouts = [*config.hidden, 1]
            model = MLP(nin, nouts, config.activation, seed=random.Random(config.seed))
        self.model = model
        self.loss_name = config.loss
        self.l2 = config.l2
        self._loss_fn = losses.LOSSES[config.loss]

    def parameters(self) -> list[Value]:
        return self.model.parameters()

    def targets(self, y: np.ndarray) -> list[float]:
        """-1/+1 for the hinge and squared losses, 0/1 for binary cross-entropy."""
        return [float(t) for t in (y if self.loss_name == "bce" else 2 * y - 1)]

    def forward(self, X: np.ndarray, y: np.ndarray) -> tuple[Value, np.ndarray]:
        """The loss graph on a batch (data loss + l2 * sum of squared weights) and the
        predicted classes, with micrograd's arithmetic: one Value per score."""
        scores = [self.model(row) for row in X.tolist()]
        loss = self._objective(scores, self.targets(y))
        return loss, _classes([s.data for s in scores])

    def _objective(self, scores: list[Value], targets: list[float]) -> Value:
        loss = self._loss_fn(scores, targets)
        if self.l2:
            params = self.model.parameters()
            loss = loss + self.l2 * Value.dot(params, params)
        return loss

    def compiled_step(self, X: np.ndarray, y: np.ndarray) -> Callable[[], tuple[float, np.ndarray]]:
        """The batch's loss and gradient as one compiled function (scalar/compiler.py),
        its numbers the same as ``forward`` and ``backward()`` give, bit for bit. Each call
        sets every parameter's grad and returns the loss and the predicted classes."""
        rows, targets = X.tolist(), self.targets(y)
        params = self.parameters()

        def loss_and_scores(*_: Value) -> list[Value]:
            scores = [self.model(row) for row in rows]
            return [self._objective(scores, targets), *scores]

        step = compiled(loss_and_scores, params)

        def run() -> tuple[float, np.ndarray]:
            (loss, *scores), grads = step([p.data for p in params])
            for p, g in zip(params, grads):
                p.grad = g
            return loss, _classes(scores)

        return run

    def loss_value(self, loss: Value) -> float:
        return loss.data

    def train(self, mode: bool) -> None:
        """An MLP of Values behaves the same in both modes."""

    def scores(self, X: np.ndarray) -> np.ndarray:
        """The raw score of every row, without recording a graph."""
        with no_grad():
            return np.array([self.model(row).data for row in X.tolist()], dtype=np.float64)


def _classes(scores: list[float]) -> np.ndarray:
    """Class 1 where the score is positive."""
    return np.fromiter((s > 0.0 for s in scores), dtype=np.int64, count=len(scores))


class TensorLearner:
    """A ``tensor_nn.MLP``: one output score for the two-class sets (as ScalarLearner, with
    the same losses from ``functional``), ten logits and cross-entropy for digits; or, with
    ``--model cnn``, a ``tensor_nn.CNN`` on the digits."""

    def __init__(
        self, config: TrainConfig, nin: int, num_classes: int, model: tensor_nn.MLP | None = None
    ) -> None:
        if model is None and config.model == "cnn":
            side = round(nin**0.5)  # the digits' rows are 8x8 images
            model = tensor_nn.CNN(side, config.hidden, num_classes, seed=config.seed)
        elif model is None:
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
        if self.loss_name == "ce":  # (N, C) logits, class indices
            scores, target = out, y
            predicted = np.argmax(out.data, axis=1)
        else:  # (N, 1) scores -> (N,); targets 0/1 for bce, -1/+1 for the others
            scores = out.reshape(-1)
            target = (y if self.loss_name == "bce" else 2 * y - 1).astype(np.float64)
            predicted = (scores.data > 0.0).astype(np.int64)
        loss = F.LOSSES[self.loss_name](scores, target)
        if self.l2:
            loss = loss + self.l2 * sum((p * p).sum() for p in self.model.parameters())
        return loss, predicted

    def loss_value(self, loss: Tensor) -> float:
        return loss.item()

    def train(self, mode: bool) -> None:
        """The CNN's batch norms use batch statistics in training, running ones after."""
        self.model.train(mode)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """The raw score of every row (two-class models), without recording a graph."""
        with no_grad():
            return self.model(Tensor(X)).data[:, 0].astype(np.float64)


def make_learner(config: TrainConfig, data: Dataset, model: Any = None) -> Learner:
    """The learner for ``config.engine``, around a new model or the one given."""
    if config.engine == "scalar":
        return ScalarLearner(config, data.num_features, model)
    return TensorLearner(config, data.num_features, data.num_classes, model)
