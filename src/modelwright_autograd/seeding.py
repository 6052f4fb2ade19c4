"""Turning a ``seed`` argument into a random generator, the same way for both engines.

None means the global generator (so ``random.seed(1337)`` or ``np.random.seed(0)`` before
building a model reproduces it), an int seeds a new generator, and a generator is used as
it is. NumPy is imported only by ``numpy_rng``, so the scalar engine never loads it.
"""

from __future__ import annotations

import numbers
import random
from typing import Any


def _check_seed(seed: object, kinds: str) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int or {kinds}, got {type(seed).__name__} {seed!r}")
    return int(seed)


def scalar_rng(seed: int | random.Random | None) -> Any:
    """Something with ``uniform(a, b)``: a ``random.Random`` (or the ``random`` module)."""
    if seed is None:
        return random  # random.uniform draws from the generator random.seed() seeds
    if isinstance(seed, random.Random):
        return seed
    return random.Random(_check_seed(seed, "random.Random"))


def numpy_rng(seed: Any) -> Any:
    """Something with ``uniform(low, high, size)``: a NumPy Generator or RandomState (or
    the ``np.random`` module)."""
    import numpy as np

    if seed is None:
        return np.random  # np.random.uniform draws from the generator np.random.seed() seeds
    if isinstance(seed, (np.random.Generator, np.random.RandomState)):
        return seed
    return np.random.default_rng(_check_seed(seed, "np.random.Generator"))
