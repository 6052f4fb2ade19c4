"""The oracle a learner's tensor engine is graded against: PyTorch float64 when the scalar
oracle is torch's, otherwise central finite differences on NumPy arrays (``Arr``).

Both answer, for a tensor program (see ``programs.py``): the output array and the
gradient of the loss with respect to every input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..scalar.oracle import ATOL, RTOL, Oracle
from .programs import Array, Program, evaluate, evaluate_step

TensorAnswer = tuple[np.ndarray, list[np.ndarray]]


def array_of(x: Array) -> np.ndarray:
    """A program's {"shape", "data"} as a float64 array."""
    return np.array(x["data"], dtype=float).reshape(x["shape"])


def agree(got: np.ndarray, want: np.ndarray) -> bool:
    """Same shape, every element within the grader's tolerance (nan where nan)."""
    return got.shape == want.shape and bool(
        np.all(np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True))
    )


def tensor_oracle(oracle: Oracle) -> Callable[[Program], TensorAnswer]:
    """The tensor counterpart of the scalar ``oracle`` (torch, or finite differences)."""
    return _torch_run if oracle.name == "torch" else _difference_run


def _torch_run(program: Program) -> TensorAnswer:
    import torch
    import torch.nn.functional as F

    def leaf(x: Array) -> torch.Tensor:
        return torch.tensor(array_of(x), dtype=torch.float64, requires_grad=True)

    def constant(x: Array) -> torch.Tensor:
        return torch.tensor(array_of(x), dtype=torch.float64)

    def cross_entropy(logits: torch.Tensor, targets: Any) -> torch.Tensor:
        return F.cross_entropy(logits, torch.as_tensor(targets))

    def numpy_leaf(x: Array) -> torch.Tensor:  # transpose(1, 2, 0) as NumPy's: a permute
        return leaf(x).detach().as_subclass(_numpy_transpose_class()).requires_grad_()

    permutes = any(step[0] == "transpose_axes" for step in program["steps"])
    env = {"np": np, "cross_entropy": cross_entropy}
    slots = evaluate(program, numpy_leaf if permutes else leaf, constant, env)
    leaves = slots[: len(program["inputs"])]
    grads = torch.autograd.grad(slots[-1], leaves, allow_unused=True)
    out = slots[-2].detach().numpy()
    return out, [np.zeros(t.shape) if g is None else g.numpy() for t, g in zip(leaves, grads)]


def _numpy_transpose_class() -> type:
    import torch

    class NumpyTranspose(torch.Tensor):
        """A torch tensor whose transpose takes an order of every axis, as NumPy's does."""

        def transpose(self, *axes: int) -> torch.Tensor:
            return self.permute(*axes) if len(axes) != 2 else super().transpose(*axes)

    return NumpyTranspose


def _difference_run(program: Program) -> TensorAnswer:
    """Five-point central differences of the loss, element by element."""
    inputs = [array_of(x) for x in program["inputs"]]

    def run(arrays: list[np.ndarray]) -> list[Any]:
        chosen = iter(arrays)
        env = {"np": np, "cross_entropy": _cross_entropy}
        return evaluate(program, lambda x: Arr(next(chosen)), array_of, env)

    def loss(arrays: list[np.ndarray]) -> float:
        return float(run(arrays)[-1].a)

    grads = []
    for i, x in enumerate(inputs):
        g = np.zeros(x.shape)
        for index in np.ndindex(x.shape):
            h = 1e-3 * max(1.0, abs(float(x[index])))

            def at(delta: float, index: tuple[int, ...] = index, i: int = i) -> float:
                moved = inputs[i].copy()
                moved[index] += delta
                return loss([*inputs[:i], moved, *inputs[i + 1 :]])

            g[index] = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h)
        grads.append(g)
    return np.asarray(run(inputs)[-2].a), grads


def forward(program: Program) -> np.ndarray:
    """The program's output on plain arrays (no loss, no gradient)."""
    slots = [Arr(array_of(x)) for x in program["inputs"]]
    for step in program["steps"]:
        slots.append(evaluate_step(step, slots, {"np": np, "cross_entropy": _cross_entropy}))
    return slots[-1].a


def _value(x: Any) -> Any:
    return x.a if isinstance(x, Arr) else x


class Arr:
    """A NumPy array with the methods the programs call (``Arr(x).sum(1, True)``), so
    they run on plain arrays for the finite-difference oracle."""

    __array_ufunc__ = None  # ndarray * Arr defers to Arr.__rmul__

    def __init__(self, a: Any) -> None:
        self.a = np.asarray(a, dtype=float)

    def __add__(self, o: Any) -> Arr:
        return Arr(self.a + _value(o))

    def __radd__(self, o: Any) -> Arr:
        return Arr(_value(o) + self.a)

    def __sub__(self, o: Any) -> Arr:
        return Arr(self.a - _value(o))

    def __rsub__(self, o: Any) -> Arr:
        return Arr(_value(o) - self.a)

    def __mul__(self, o: Any) -> Arr:
        return Arr(self.a * _value(o))

    def __rmul__(self, o: Any) -> Arr:
        return Arr(_value(o) * self.a)

    def __truediv__(self, o: Any) -> Arr:
        return Arr(self.a / _value(o))

    def __rtruediv__(self, o: Any) -> Arr:
        return Arr(_value(o) / self.a)

    def __matmul__(self, o: Any) -> Arr:
        return Arr(self.a @ _value(o))

    def sum(self, axis: int | None = None, keepdims: bool = False) -> Arr:
        return Arr(self.a.sum(axis=axis, keepdims=keepdims))

    def mean(self, axis: int | None = None, keepdims: bool = False) -> Arr:
        return Arr(self.a.mean(axis=axis, keepdims=keepdims))

    def reshape(self, *shape: int) -> Arr:
        return Arr(self.a.reshape(shape))

    def transpose(self, *axes: int) -> Arr:
        return Arr(np.transpose(self.a, axes or None))

    @property
    def T(self) -> Arr:
        return Arr(self.a.T)

    def exp(self) -> Arr:
        return Arr(np.exp(self.a))

    def log(self) -> Arr:
        return Arr(np.log(self.a))

    def tanh(self) -> Arr:
        return Arr(np.tanh(self.a))

    def relu(self) -> Arr:
        return Arr(np.maximum(self.a, 0.0))

    def log_softmax(self, axis: int = -1) -> Arr:
        shifted = self.a - self.a.max(axis=axis, keepdims=True)
        return Arr(shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True)))


def _cross_entropy(logits: Arr, targets: Any) -> Arr:
    log_probs = logits.log_softmax(1).a
    return Arr(-log_probs[np.arange(len(log_probs)), np.asarray(targets)].mean())
