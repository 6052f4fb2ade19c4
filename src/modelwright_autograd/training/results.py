"""What a training run measures: the loop's ``History`` and a model's ``Score``, records
that loop.py makes and outputs.py and evaluate.py write (below all three, so none of them
imports another for its types)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class History:
    """The loss and accuracy of every step's batch, and the time the loop took."""

    loss: list[float]
    accuracy: list[float]
    seconds: float


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
        loss = f"{self.loss:.6e}" if abs(self.loss) >= 1e6 else f"{self.loss:.6f}"  # not 300 digits
        return f"loss {loss}  accuracy {self.accuracy:.2%} ({self.correct}/{self.total})"
