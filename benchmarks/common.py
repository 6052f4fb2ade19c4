"""Helpers shared by the benchmark sections: timing statistics, logging, atomic JSON."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Sizes:
    """Every workload size in one place; ``smoke()`` shrinks them to run in seconds."""

    repeats: int = 3
    steps: int = 100  # our scalar engine's steps on the demo workload
    micrograd_steps: int = 100
    chain_mults: int = 1_000_000
    small_chain_mults: int = 900
    wide_leaves: int = 1_000_000
    tree_leaves: int = 2**19  # a balanced tree of + over 2**19 leaves: 1,048,575 nodes
    digits_batches: int | None = None  # None: the whole training set each epoch
    moons_steps: int = 100
    tensor_repeats: int = 15  # interleaved epochs (digits) and runs (moons) per engine
    sweep_samples: tuple[int, ...] = (50, 100, 200, 400)
    sweep_widths: tuple[int, ...] = (8, 16, 32)
    sweep_rounds: int = 15  # interleaved steps of ours and the floor per sweep point
    memory_samples: int | None = None  # the compiled section's bytes per node (None: all)
    dtype: str = "float64"
    smoke: bool = False

    @classmethod
    def smoke_sizes(cls) -> Sizes:
        return cls(
            repeats=1,
            steps=2,
            micrograd_steps=2,
            chain_mults=10_000,
            small_chain_mults=900,
            wide_leaves=10_000,
            tree_leaves=2**12,
            digits_batches=5,
            moons_steps=3,
            tensor_repeats=2,
            sweep_samples=(20, 40),
            sweep_widths=(4, 8),
            sweep_rounds=2,
            memory_samples=10,
            smoke=True,
        )


def log(message: str) -> None:
    """Progress goes to stderr so that stdout carries only the Markdown report."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """Median with min and max of repeated measurements (seconds, bytes, ...)."""
    values = [float(s) for s in samples]
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
        "samples": values,
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run fn once after a full collection (so earlier garbage is not billed to it) and
    return (seconds, result). The cyclic GC stays enabled: its cost is part of the engine."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON atomically with the package's ``files.write_json``, creating the
    directory first (a result with no data, such as an empty comparison, is NaN)."""
    from modelwright_autograd.files import write_json

    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data, indent=2, allow_nan=True)


def max_abs_diff(a: Sequence[float], b: Sequence[float]) -> float:
    """The largest |a[i] - b[i]| over the common length of two loss curves (nan if empty)."""
    return max((abs(x - y) for x, y in zip(a, b)), default=float("nan"))
