"""An optimiser's per-parameter arrays held as views into one flat array.

Adam keeps two arrays per parameter (m and v) and updates each with about a dozen NumPy
calls; on a small MLP those calls, not the arithmetic, are most of the optimiser's time.
With every parameter's state as a slice of one flat array, the update is a dozen calls
for the whole model, plus one copy in (the gradients) and one subtraction out per
parameter. The optimiser leaves the parameters where they are: nothing the user holds
changes identity. A module may keep its own parameters as views of one buffer
(``share_buffer``, as ``tensor_nn.MLP`` does); Adam then subtracts from that buffer once.
Used by ``optim.Adam`` and ``optim.SGD`` for Tensor parameters, and by ``clip_grad_norm_``:
all of the optimisers' NumPy is here, so that optim.py and the scalar engine need none.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

#: Elements of each array a pass of the Adam update works on: four such chunks stay in the
#: CPU's cache (32,768 float32 are 128 KB).
_CHUNK = 32_768


class FlatState:
    """Flat buffers laid out like ``arrays`` (one slice per array, in order)."""

    def __init__(self, arrays: Sequence[np.ndarray]) -> None:
        self.shapes = [a.shape for a in arrays]
        self.dtype = np.result_type(*arrays)
        bounds = np.cumsum([0] + [a.size for a in arrays])
        self.slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        self.sizes = [a.size for a in arrays]
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
        """Copy ``arrays`` into their slices of ``out`` (one ``concatenate`` when each has
        its slice's size; otherwise slice by slice, where a wrong size is an error)."""
        if [a.size for a in arrays] == self.sizes:
            return np.concatenate(arrays, axis=None, out=out, casting="unsafe")
        for s, a in zip(self.slices, arrays):
            out[s] = a.reshape(-1)
        return out

    def holds(self, arrays: Sequence[Any]) -> bool:
        """Whether every one of ``arrays`` is a NumPy array of this state's dtype and of its
        slice's shape."""
        return all(
            type(a) is np.ndarray and a.dtype == self.dtype and a.shape == shape
            for a, shape in zip(arrays, self.shapes)
        )

    def scratch(self) -> np.ndarray:
        """Working space for ``adam_update``: one chunk."""
        return np.empty(min(self.size, _CHUNK), dtype=self.dtype)

    def add_scaled(self, out: np.ndarray, arrays: Sequence[np.ndarray], scale: float) -> None:
        """``out += scale * (the arrays gathered)``, slice by slice, with no gathered copy."""
        for s, a in zip(self.slices, arrays):
            out[s] += scale * a.reshape(-1)

    @staticmethod
    def adam_update(
        g: np.ndarray,
        m: np.ndarray,
        v: np.ndarray,
        scratch: np.ndarray,
        betas: tuple[float, float],
        eps: float,
        step_size: float,
        correction2_sqrt: float,
    ) -> np.ndarray:
        """Adam's update on flat arrays: m and v are advanced in place and the step to
        subtract is returned, written over g (the gradients, gathered for this step).
        The arithmetic of ``optim.Adam``'s per-parameter step in its order, written into
        a chunk of ``scratch`` and into g rather than a new array per operation, and a
        chunk at a time, so that a chunk's arrays stay in the cache through all ten steps
        (elementwise, so the same numbers as on the whole arrays)."""
        beta1, beta2 = betas
        for i in range(0, g.size, _CHUNK):
            part = slice(i, i + _CHUNK)
            gp, mp, vp = g[part], m[part], v[part]
            sp = scratch[: gp.size]
            mp *= beta1
            mp += np.multiply(gp, 1.0 - beta1, out=sp)
            vp *= beta2
            np.multiply(gp, gp, out=sp)
            sp *= 1.0 - beta2
            vp += sp
            denom = np.sqrt(vp, out=gp)  # what v**0.5 computes
            denom /= correction2_sqrt
            denom += eps
            np.divide(mp, denom, out=denom)
            denom *= step_size
        return g

    def tiled(self, arrays: Sequence[np.ndarray]) -> np.ndarray | None:
        """The one flat array that ``arrays`` are, in order, the consecutive slices of
        (laid out as this state is, as ``share_buffer`` makes them), or None: then a
        single operation on that buffer is one on every array."""
        base = arrays[0].base
        if not (
            type(base) is np.ndarray
            and base.ndim == 1
            and base.size == self.size
            and base.dtype == self.dtype
            and base.flags.writeable
        ):
            return None
        start, step = base.ctypes.data, base.itemsize
        for s, a in zip(self.slices, arrays):
            if (
                a.base is not base
                or not a.flags.c_contiguous
                or a.ctypes.data != start + s.start * step
            ):
                return None
        return base

    def subtract_from(self, arrays: Sequence[np.ndarray], flat: np.ndarray) -> None:
        """``array -= its slice of flat`` for each array, in place."""
        for s, shape, a in zip(self.slices, self.shapes, arrays):
            a -= flat[s].reshape(shape)


def share_buffer(tensors: Sequence[Any]) -> None:
    """Move the tensors' data into one new flat array, each ``.data`` becoming a view of
    its slice (same values, shapes and dtype). A module does this with its parameters so
    that ``Adam`` can update them all with one subtraction (``FlatState.tiled``); a
    ``.data`` the user later replaces is simply no longer part of the buffer."""
    if not FlatState.fits(tensors):
        return  # mixed dtypes: one buffer would change some
    arrays = [t.data for t in tensors]
    flat = FlatState(arrays)
    views = flat.zeros()[1]
    for t, a, view in zip(tensors, arrays, views):
        view[...] = a
        t.data = view


def array_norm(a: np.ndarray, p: float) -> float:
    """The p-norm of an array's elements (p > 0, or inf for the largest magnitude),
    computed in the array's dtype: one gradient's part of ``clip_grad_norm_``'s total. The
    2-norm squares the elements themselves (a * a is |a| * |a|), so it needs no copy."""
    a = np.asarray(a).reshape(-1)
    if not a.size:
        return 0.0
    if p == 2.0:
        return float(np.sqrt(np.dot(a, a)))
    a = np.abs(a)
    if p == np.inf:
        return float(a.max())
    return float(np.sum(a**p) ** (1.0 / p))
