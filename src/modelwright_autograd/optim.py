"""Optimisers for anything with ``.data`` and ``.grad``: Values (floats) and Tensors
(NumPy arrays) alike. The update rules follow ``torch.optim`` step for step."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any


def _non_negative(name: str, x: object) -> float:
    """``x`` as a float, or a TypeError (not a number) / ValueError (negative or nan)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    if not x >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {x!r}")
    return float(x)


class Optimizer:
    """Holds the parameters; ``zero_grad()`` clears their gradients between steps."""

    def __init__(self, params: Iterable[Any], lr: float) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        for p in self.params:
            if not (hasattr(p, "data") and hasattr(p, "grad")):
                raise TypeError(f"optimizer parameters need .data and .grad, got {type(p)}")
        self.lr = _non_negative("learning rate", lr)

    def zero_grad(self) -> None:
        """Reset gradients: 0.0 for a Value, None for a Tensor (as torch does)."""
        for p in self.params:
            p.grad = 0.0 if isinstance(p.grad, float) else None

    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        raise NotImplementedError

    def _flat_layout(self) -> Any:
        """For Tensor parameters of one dtype, their FlatState (flat_state.py), else None;
        notes whether their arrays tile one buffer (``share_buffer``, as tensor_nn.MLP's
        do), which a step can then update with one operation."""
        self._tiled: tuple[list[Any], Any] = ([], None)
        if any(isinstance(p.data, float) for p in self.params):
            return None  # Values: plain floats, no NumPy
        from .flat_state import FlatState

        if not FlatState.fits(self.params):
            return None
        arrays = [p.data for p in self.params]
        flat = FlatState(arrays)
        self._tiled = (arrays, flat.tiled(arrays))
        return flat

    def _shared_buffer(self) -> Any:
        """The buffer the parameters tile, if each ``.data`` is still the view it was when
        the optimiser was made (the user may have replaced one), else None."""
        arrays, buffer = self._tiled
        if buffer is None or any(p.data is not a for p, a in zip(self.params, arrays)):
            return None
        return buffer

    def _gradients(self, weight_decay: float) -> list[tuple[int, Any, Any]]:
        """(index, parameter, gradient) for each parameter that has a gradient, with L2
        weight decay folded in (``g + weight_decay * p``, in the gradient's dtype) as torch
        does; every shape is checked before any parameter is updated."""
        with_grads = [(i, p, p.grad) for i, p in enumerate(self.params) if p.grad is not None]
        self._check_shapes(with_grads)
        if not weight_decay:
            return with_grads
        return [(i, p, g + weight_decay * p.data) for i, p, g in with_grads]

    def _check_shapes(self, with_grads: list[tuple[int, Any, Any]]) -> None:
        """Each (index, parameter, gradient): a gradient must have its parameter's shape, as
        NumPy would broadcast a (1,) or (1, n) one into the update, or a flat copy place
        its numbers wrongly."""
        for i, p, g in with_grads:
            shape = getattr(p.data, "shape", None)
            if shape is not None and getattr(g, "shape", shape) != shape:
                raise ValueError(
                    f"{type(self).__name__}: parameter {i} has shape {shape} but its "
                    f"gradient has shape {g.shape}"
                )


class SGD(Optimizer):
    """p -= lr * g, with optional momentum (``buf = momentum * buf + g``) and L2 weight
    decay (``g += weight_decay * p``), exactly as ``torch.optim.SGD``."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr)
        self.momentum = _non_negative("momentum", momentum)
        self.weight_decay = _non_negative("weight_decay", weight_decay)
        self._buffers: list[Any] = [None] * len(self.params)
        self._flat = self._flat_layout()
        # Gathering the gradients is a pass over every element (about a nanosecond each)
        # that saves a few NumPy calls per parameter (about a microsecond each): it pays
        # for small parameters only, as on the moons MLP, and costs on 64-128-64-10.
        self._gather_pays = self._flat is not None and self._flat.size <= 1000 * len(self.params)
        if self._tiled[1] is not None:
            self._flat_grad = self._flat.zeros()[0]  # where the gradients are gathered

    def step(self) -> None:
        if not self.momentum and self._step_shared():
            return
        for i, p, g in self._gradients(self.weight_decay):
            if self.momentum:
                buf = self._buffers[i]
                # torch starts the buffer at a copy of the first gradient: a Tensor's grad
                # array is added to in place by a later backward(), so it cannot be shared
                buf = copy.copy(g) if buf is None else self.momentum * buf + g
                self._buffers[i] = buf
                g = buf
            p.data -= self.lr * g

    def _step_shared(self) -> bool:
        """The step above (no momentum) as three NumPy calls (five with weight decay) for
        small parameters that tile one buffer (``share_buffer``) and all have gradients,
        arrays of their dtype and shape (any other dtype would be rounded to it first);
        False, having done nothing, for any others. The arithmetic is the per-parameter
        step's, element by element."""
        buffer = self._shared_buffer() if self._gather_pays else None
        grads = [p.grad for p in self.params]
        if buffer is None or not self._flat.holds(grads):
            return False
        g = self._flat.gather(grads, self._flat_grad)
        if self.weight_decay:
            decay = self.weight_decay * buffer
            decay += g
            g = decay
        g *= self.lr
        buffer -= g
        return True


class Adam(Optimizer):
    """Adam with bias correction (Kingma & Ba, 2015), arranged as ``torch.optim.Adam``:

    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
    p -= lr/(1 - b1**t) * m / (sqrt(v)/sqrt(1 - b2**t) + eps)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr)
        beta1, beta2 = (_non_negative("betas", b) for b in betas)
        if not (beta1 < 1.0 and beta2 < 1.0):
            raise ValueError(f"betas must each be in [0, 1), got {betas!r}")
        self.betas = (beta1, beta2)
        self.eps = _non_negative("eps", eps)
        self.weight_decay = _non_negative("weight_decay", weight_decay)
        # Per parameter, as torch keeps them: a parameter that had no gradient on some
        # step has taken fewer steps, and its bias correction must count only its own.
        self._steps = [0] * len(self.params)
        self._m: list[Any] = [0.0] * len(self.params)
        self._v: list[Any] = [0.0] * len(self.params)
        self._flat = self._flat_state()

    def _flat_state(self) -> Any:
        """For Tensor parameters of one dtype, m and v as views into flat arrays (see
        flat_state.py), so that a step is a dozen NumPy calls for the whole model."""
        flat = self._flat_layout()
        if flat is None:
            return None
        self._m_flat, self._m = flat.zeros()
        self._v_flat, self._v = flat.zeros()
        self._g_flat, self._scratch = flat.zeros()[0], flat.zeros()[0]
        return flat

    def step(self) -> None:
        if self._flat is not None:
            if all(p.grad is not None for p in self.params):
                self._step_flat()
                return
            # Some parameter has no gradient: from now on the parameters may have taken
            # different numbers of steps, so each gets its own arrays (copies of its
            # views) and the per-parameter update below.
            self._m = [m.copy() for m in self._m]
            self._v = [v.copy() for v in self._v]
            self._flat = None
        beta1, beta2 = self.betas
        for i, p, g in self._gradients(self.weight_decay):
            t = self._steps[i] = self._steps[i] + 1
            m = self._m[i] = beta1 * self._m[i] + (1.0 - beta1) * g
            v = self._v[i] = beta2 * self._v[i] + (1.0 - beta2) * (g * g)
            step_size = self.lr / (1.0 - beta1**t)
            correction2_sqrt = math.sqrt(1.0 - beta2**t)
            p.data -= step_size * (m / ((v**0.5) / correction2_sqrt + self.eps))

    def _step_flat(self) -> None:
        """The update above for every parameter at once, on the flat arrays (every
        parameter has a gradient, so all have taken the same number of steps)."""
        flat = self._flat
        beta1, beta2 = self.betas
        t = self._steps[0] + 1
        self._steps = [t] * len(self.params)
        buffer = self._shared_buffer()
        grads = [p.grad for p in self.params]
        self._check_shapes([(i, p, grad) for i, (p, grad) in enumerate(zip(self.params, grads))])
        g = flat.gather(grads, self._g_flat)
        if self.weight_decay:
            data = buffer
            if data is None:
                data = flat.gather([p.data for p in self.params], self._scratch)
            g += self.weight_decay * data
        update = flat.adam_update(
            g,
            self._m_flat,
            self._v_flat,
            self._scratch,
            self.betas,
            self.eps,
            self.lr / (1.0 - beta1**t),
            math.sqrt(1.0 - beta2**t),
        )
        if buffer is not None:
            buffer -= update
        else:
            flat.subtract_from([p.data for p in self.params], update)
