"""The oracle a learner's engine is graded against: PyTorch float64 when torch can be
imported, otherwise central finite differences on plain floats.

Both answer the same question for a program (see ``programs``): the output's value and
the gradient of the output with respect to every input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .programs import Program, Real, evaluate

# |learner - oracle| <= ATOL + RTOL * |oracle|: the course's "match PyTorch to 1e-6",
# scaled for numbers larger than 1.
ATOL = 1e-6
RTOL = 1e-6


def close(got: float, want: float) -> bool:
    """True when ``got`` matches the oracle's ``want`` within the grader's tolerance."""
    if want != want:  # nan
        return got != got
    if abs(want) == float("inf"):
        return got == want
    return abs(got - want) <= ATOL + RTOL * abs(want)


class OracleError(Exception):
    """The oracle asked for cannot be used."""


@dataclass(frozen=True)
class Oracle:
    """``evaluate(program)`` gives (output value, [d output / d input for each input])."""

    name: str
    description: str
    evaluate: Callable[[Program], tuple[float, list[float]]]
    exact_at_kinks: bool


def torch_oracle() -> Oracle | None:
    """The PyTorch float64 oracle, or None when torch cannot be imported."""
    try:
        import torch
    except ImportError:
        return None

    def run(program: Program) -> tuple[float, list[float]]:
        def leaf(x: float) -> torch.Tensor:
            return torch.tensor(float(x), dtype=torch.float64, requires_grad=True)

        slots = evaluate(program, leaf)
        leaves = slots[: len(program["inputs"])]
        out = slots[-1]
        grads = torch.autograd.grad(out, leaves, allow_unused=True)
        return float(out.detach()), [0.0 if g is None else float(g) for g in grads]

    return Oracle(
        "torch",
        f"PyTorch {torch.__version__} float64 (tolerance 1e-6)",
        run,
        exact_at_kinks=True,
    )


def finite_difference_oracle() -> Oracle:
    """Five-point central differences on floats: error about h**4, far below 1e-6."""

    def value(program: Program, inputs: list[float]) -> float:
        return evaluate({**program, "inputs": inputs}, Real)[-1].value

    def run(program: Program) -> tuple[float, list[float]]:
        inputs = [float(x) for x in program["inputs"]]
        grads = []
        for i, x in enumerate(inputs):
            h = 1e-3 * max(1.0, abs(x))

            def at(delta: float, i: int = i, x: float = x) -> float:
                return value(program, [*inputs[:i], x + delta, *inputs[i + 1 :]])

            grads.append((-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h))
        return value(program, inputs), grads

    return Oracle(
        "finite differences",
        "central finite differences on floats (5-point, h = 1e-3; tolerance 1e-6); "
        "install torch to check against PyTorch",
        run,
        exact_at_kinks=False,
    )


def choose_oracle(name: str = "auto") -> Oracle:
    """``auto``: torch when importable, else finite differences; ``torch`` or ``fd`` force
    one (``torch`` raises OracleError when it is not installed)."""
    if name in ("auto", "torch"):
        oracle = torch_oracle()
        if oracle is not None:
            return oracle
        if name == "torch":
            raise OracleError("--oracle torch: torch cannot be imported")
    return finite_difference_oracle()
