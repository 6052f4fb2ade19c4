"""An optimiser's per-parameter arrays held as views into one flat array.

Adam keeps two arrays per parameter (m and v) and updates each with about a dozen NumPy
calls; on a small MLP those calls, not the arithmetic, are most of the optimiser's time.
With every parameter's state as a slice of one flat array, the update is a dozen calls
for the whole model, plus one copy in (the gradients) and one subtraction out per
parameter. The parameters themselves are left where they are: nothing the user holds
changes identity. Used by ``optim.Adam`` for Tensor parameters (this module is the only
part of the optimisers that needs NumPy).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np


class FlatState:
    """Flat buffers laid out like ``arrays`` (one slice per array, in order)."""

    def __init__(self, arrays: Sequence[np.ndarray]) -> None:
        self.shapes = [a.shape for a in arrays]
        self.dtype = np.result_type(*arrays)
        bounds = np.cumsum([0] + [a.size for a in arrays])
        self.slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        self.size = int(bounds[-1])

    @classmethod
    def fits(cls, params: Sequence[Any]) -> bool:
        """True for NumPy parameters of one floating dtype (Values and mixed dtypes keep
        the per-parameter path)."""
        arrays = [p.data for p in params]
        return all(type(a) is np.ndarray for a in arrays) and (
            len({a.dtype for a in arrays}) == 1 and arrays[0].dtype.kind == "f"
        )

    def zeros(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """A flat zero buffer and its per-array views, shaped like the arrays."""
        flat = np.zeros(self.size, dtype=self.dtype)
        return flat, [flat[s].reshape(shape) for s, shape in zip(self.slices, self.shapes)]

    def gather(self, arrays: Sequence[np.ndarray], out: np.ndarray) -> np.ndarray:
        """Copy ``arrays`` into their slices of ``out``."""
        for s, a in zip(self.slices, arrays):
            out[s] = a.reshape(-1)
        return out

    def subtract_from(self, arrays: Sequence[np.ndarray], flat: np.ndarray) -> None:
        """``array -= its slice of flat`` for each array, in place."""
        for s, shape, a in zip(self.slices, self.shapes, arrays):
            a -= flat[s].reshape(shape)
