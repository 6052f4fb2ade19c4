"""Optimisers for anything with ``.data`` and ``.grad``: Values (floats) and Tensors
(NumPy arrays) alike. The update rules follow ``torch.optim`` step for step, with torch's
parameter groups; ``clip_grad_norm_`` and the learning-rate schedules are torch's too."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def _non_negative(name: str, x: object) -> float:
    """``x`` as a float, or a TypeError (not a number) / ValueError (negative or nan)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    if not x >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {x!r}")
    return float(x)


def _is_parameter(p: object) -> bool:
    return hasattr(p, "data") and hasattr(p, "grad")


class _GroupState:
    """What a step keeps for one parameter group besides its settings: the parameters
    and, for Tensor parameters of one dtype, their FlatState (flat_state.py; else None) and
    the buffer their arrays tile if they tile one (``share_buffer``, as tensor_nn.MLP's
    do), which a step can then update with one operation."""

    def __init__(self, params: list[Any]) -> None:
        self.params = params
        self.flat: Any = None
        self.tiled: tuple[list[Any], Any] = ([], None)
        if not params or any(isinstance(p.data, float) for p in params):
            return  # Values: plain floats, no NumPy
        from .flat_state import FlatState

        if FlatState.fits(params):
            arrays = [p.data for p in params]
            self.flat = FlatState(arrays)
            self.tiled = (arrays, self.flat.tiled(arrays))

    def shared_buffer(self) -> Any:
        """The buffer the parameters tile, if each ``.data`` is still the view it was when
        the optimiser was made (the user may have replaced one), else None."""
        arrays, buffer = self.tiled
        if buffer is None or any(p.data is not a for p, a in zip(self.params, arrays)):
            return None
        return buffer

    def gradients(self, weight_decay: float) -> list[tuple[int, Any, Any]]:
        """(index, parameter, gradient) for each parameter that has a gradient, with L2
        weight decay folded in (``g + weight_decay * p``, in the gradient's dtype) as torch
        does."""
        with_grads = [(i, p, p.grad) for i, p in enumerate(self.params) if p.grad is not None]
        if not weight_decay:
            return with_grads
        return [(i, p, g + weight_decay * p.data) for i, p, g in with_grads]


_NO_LR = (
    "optimizer.lr: the learning rate is per parameter group, as in torch: use "
    "optimizer.param_groups[i]['lr'] (a scheduler such as LambdaLR sets it for you)"
)


class Optimizer:
    """Holds the parameters in ``param_groups`` (as torch: a list of dicts, each with its
    ``"params"`` and its own settings, such as ``"lr"`` and ``"weight_decay"``);
    ``zero_grad()`` clears their gradients between steps, ``step()`` updates them.

    ``params`` is an iterable of parameters (one group) or of dicts, each a group whose
    missing settings are the constructor's (``defaults``)."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if _is_parameter(params) or isinstance(params, dict):
            raise TypeError(
                f"{type(self).__name__}: params must be an iterable of parameters or of "
                f"dicts (parameter groups), got one {type(params).__name__}"
            )
        self.defaults = self._checked(dict(defaults))
        self.param_groups: list[dict[str, Any]] = []
        self._states: list[Any] = []
        items = list(params)
        if not items:
            raise ValueError("optimizer got an empty parameter list")
        kinds = {isinstance(item, dict) for item in items}
        if kinds == {True, False}:
            raise TypeError(
                f"{type(self).__name__}: params must be all parameters or all dicts "
                "(parameter groups), not a mixture"
            )
        for group in items if kinds == {True} else [{"params": items}]:
            self.add_param_group(group)

    @property
    def lr(self) -> float:
        """There is none: each group has its own ``"lr"``, as in torch. Reading or setting
        ``optimizer.lr`` is an error rather than an attribute nothing reads."""
        raise AttributeError(_NO_LR)

    @lr.setter
    def lr(self, value: float) -> None:
        raise AttributeError(_NO_LR)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group: a dict with ``"params"`` and any settings to override (the others
        are the constructor's); a parameter may belong to one group only."""
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError(
                f"{type(self).__name__}: a parameter group must be a dict with 'params', "
                f"got {type(param_group).__name__}"
            )
        params = param_group["params"]
        params = [params] if _is_parameter(params) else list(params)
        for p in params:
            if not _is_parameter(p):
                raise TypeError(f"optimizer parameters need .data and .grad, got {type(p)}")
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if len({id(p) for p in params} | seen) != len(params) + len(seen):
            raise ValueError(
                f"{type(self).__name__}: a parameter appears more than once in the parameter groups"
            )
        group = self._checked({**self.defaults, **param_group, "params": params})
        self.param_groups.append(group)
        self._states.append(self._new_state(params))

    @staticmethod
    def _checked(group: dict[str, Any]) -> dict[str, Any]:
        """``group`` with its settings checked (each a number >= 0, betas in [0, 1))."""
        names = {"lr": "learning rate", "momentum": "momentum", "weight_decay": "weight_decay"}
        for key, name in {**names, "eps": "eps"}.items():
            if key in group:
                group[key] = _non_negative(name, group[key])
        if "betas" in group:
            betas = group["betas"]
            beta1, beta2 = (_non_negative("betas", b) for b in betas)
            if not (beta1 < 1.0 and beta2 < 1.0):
                raise ValueError(f"betas must each be in [0, 1), got {betas!r}")
            group["betas"] = (beta1, beta2)
        return group

    def _new_state(self, params: list[Any]) -> Any:
        return _GroupState(params)

    def zero_grad(self) -> None:
        """Reset gradients: 0.0 for a Value, None for a Tensor (as torch does)."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = 0.0 if isinstance(p.grad, float) else None

    def step(self) -> None:
        """Update every parameter that has a gradient, in place, each group with its own
        settings; every gradient's shape is checked before any parameter moves."""
        self._check_shapes()
        for group, state in zip(self.param_groups, self._states):
            self._update(group, state)

    def _update(self, group: dict[str, Any], state: Any) -> None:
        raise NotImplementedError

    def _check_shapes(self) -> None:
        """A gradient must have its parameter's shape, as NumPy would broadcast a (1,) or
        (1, n) one into the update, or a flat copy place its numbers wrongly."""
        many = len(self.param_groups) > 1
        for k, group in enumerate(self.param_groups):
            for i, p in enumerate(group["params"]):
                g = p.grad
                shape = getattr(p.data, "shape", None)
                if g is not None and shape is not None and getattr(g, "shape", shape) != shape:
                    where = f" of param_groups[{k}]" if many else ""
                    raise ValueError(
                        f"{type(self).__name__}: parameter {i}{where} has shape {shape} but "
                        f"its gradient has shape {g.shape}"
                    )


class _SGDState(_GroupState):
    """SGD's momentum buffers, and where a group's gradients are gathered (below)."""

    def __init__(self, params: list[Any]) -> None:
        super().__init__(params)
        self.buffers: list[Any] = [None] * len(params)
        # Gathering the gradients is a pass over every element (about a nanosecond each)
        # that saves a few NumPy calls per parameter (about a microsecond each): it pays
        # for small parameters only, as on the moons MLP, and costs on 64-128-64-10.
        self.gather_pays = self.flat is not None and self.flat.size <= 1000 * len(params)
        if self.tiled[1] is not None:
            self.flat_grad = self.flat.zeros()[0]  # where the gradients are gathered


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
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    def _new_state(self, params: list[Any]) -> _SGDState:
        return _SGDState(params)

    def _update(self, group: dict[str, Any], state: _SGDState) -> None:
        lr, momentum = group["lr"], group["momentum"]
        if not momentum and self._step_shared(group, state):
            return
        for i, p, g in state.gradients(group["weight_decay"]):
            if momentum:
                buf = state.buffers[i]
                # torch starts the buffer at a copy of the first gradient: a Tensor's grad
                # array is added to in place by a later backward(), so it cannot be shared
                buf = copy.copy(g) if buf is None else momentum * buf + g
                state.buffers[i] = buf
                g = buf
            p.data -= lr * g

    @staticmethod
    def _step_shared(group: dict[str, Any], state: _SGDState) -> bool:
        """The step above (no momentum) as three NumPy calls (five with weight decay) for
        small parameters that tile one buffer (``share_buffer``) and all have gradients,
        arrays of their dtype and shape (any other dtype would be rounded to it first);
        False, having done nothing, for any others. The arithmetic is the per-parameter
        step's, element by element."""
        buffer = state.shared_buffer() if state.gather_pays else None
        grads = [p.grad for p in state.params]
        if buffer is None or not state.flat.holds(grads):
            return False
        g = state.flat.gather(grads, state.flat_grad)
        if group["weight_decay"]:
            decay = group["weight_decay"] * buffer
            decay += g
            g = decay
        g *= group["lr"]
        buffer -= g
        return True


class _AdamState(_GroupState):
    """Adam's moments and step counts for one group. Per parameter, as torch keeps them: a
    parameter that had no gradient on some step has taken fewer steps, and its bias
    correction must count only its own. For Tensor parameters of one dtype, m and v are
    views into flat arrays (see flat_state.py), so that a step is a dozen NumPy calls for
    the whole group."""

    def __init__(self, params: list[Any]) -> None:
        super().__init__(params)
        self.steps = [0] * len(params)
        self.m: list[Any] = [0.0] * len(params)
        self.v: list[Any] = [0.0] * len(params)
        if self.flat is not None:
            self.m_flat, self.m = self.flat.zeros()
            self.v_flat, self.v = self.flat.zeros()
            self.g_flat, self.scratch = self.flat.zeros()[0], self.flat.scratch()

    def unflatten(self) -> None:
        """From now on the parameters may take different numbers of steps: each gets its
        own arrays (copies of its views) and the per-parameter update."""
        self.m = [m.copy() for m in self.m]
        self.v = [v.copy() for v in self.v]
        self.flat = None


class Adam(Optimizer):
    """Adam with bias correction (Kingma & Ba, 2015), arranged as ``torch.optim.Adam``:

    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
    p -= lr/(1 - b1**t) * m / (sqrt(v)/sqrt(1 - b2**t) + eps)

    ``weight_decay`` is L2 (``g += weight_decay * p``, as torch's Adam); ``AdamW``
    decouples it.
    """

    decoupled = False  # AdamW: p *= 1 - lr * weight_decay, apart from the gradient

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _new_state(self, params: list[Any]) -> _AdamState:
        return _AdamState(params)

    def state_dict(self) -> dict[str, Any]:
        """torch's layout: ``{"state": {i: {"step", "exp_avg", "exp_avg_sq"}},
        "param_groups": [{settings..., "params": [i, ...]}]}``, each parameter numbered
        across the groups in order; a parameter that has taken no step has no entry. The
        moments are copies (NumPy arrays; floats for Values); ``step`` is an int (torch: a
        0-d float tensor)."""
        state: dict[int, dict[str, Any]] = {}
        groups = []
        first = 0
        for group, gs in zip(self.param_groups, self._states):
            for i in range(len(gs.params)):
                if gs.steps[i]:
                    state[first + i] = {
                        "step": gs.steps[i],
                        "exp_avg": copy.copy(gs.m[i]),
                        "exp_avg_sq": copy.copy(gs.v[i]),
                    }
            settings = {k: v for k, v in group.items() if k != "params"}
            groups.append({**settings, "params": list(range(first, first + len(gs.params)))})
            first += len(gs.params)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state ``state_dict()`` returned (of an optimiser over parameters of the
        same groups and shapes): the moments, step counts and each group's settings. Every
        check runs first: a ValueError names the fault and leaves this optimiser as it was."""
        groups, state = state_dict.get("param_groups"), state_dict.get("state")
        if not isinstance(groups, list) or not isinstance(state, dict):
            raise ValueError("optimizer state_dict: needs 'state' and 'param_groups'")
        sizes = [len(g["params"]) for g in self.param_groups]
        theirs = [len(g.get("params", ())) for g in groups]
        if theirs != sizes:
            raise ValueError(
                f"optimizer state_dict: its groups hold {theirs} parameters, this "
                f"optimizer's {sizes}"
            )
        params = [p for g in self.param_groups for p in g["params"]]
        loaded: dict[int, tuple[int, Any, Any]] = {}
        for i, entry in state.items():
            if not (isinstance(i, int) and 0 <= i < len(params)):
                raise ValueError(f"optimizer state_dict: no parameter {i!r}")
            step, m, v = entry.get("step"), entry.get("exp_avg"), entry.get("exp_avg_sq")
            if isinstance(step, bool) or not isinstance(step, int) or step < 1:
                raise ValueError(f"optimizer state_dict: parameter {i} has step {step!r}")
            shape = getattr(params[i].data, "shape", ())
            for name, moment in (("exp_avg", m), ("exp_avg_sq", v)):
                if getattr(moment, "shape", ()) != shape:
                    raise ValueError(
                        f"optimizer state_dict: parameter {i}'s {name} has shape "
                        f"{getattr(moment, 'shape', ())}, the parameter {shape}"
                    )
            loaded[i] = (step, m, v)
        new_groups = [
            self._checked({**g, **{k: v for k, v in saved.items() if k != "params"}})
            for g, saved in zip(self.param_groups, groups)
        ]
        first = 0
        for k, gs in enumerate(self._states):
            self.param_groups[k] = new_groups[k]
            mine = [loaded.get(first + i, (0, None, None)) for i in range(len(gs.params))]
            if gs.flat is not None and len({step for step, _, _ in mine}) > 1:
                gs.unflatten()
            for i, (step, m, v) in enumerate(mine):
                gs.steps[i] = step
                _assign(gs.m, i, m)
                _assign(gs.v, i, v)
            first += len(gs.params)

    def _update(self, group: dict[str, Any], state: _AdamState) -> None:
        if state.flat is not None:
            if all(p.grad is not None for p in state.params):
                self._step_flat(group, state)
                return
            state.unflatten()  # some parameter has no gradient
        lr, (beta1, beta2), eps, decay = (group[k] for k in ("lr", "betas", "eps", "weight_decay"))
        for i, p, g in state.gradients(0.0 if self.decoupled else decay):
            if self.decoupled and decay:
                p.data *= 1.0 - lr * decay
            t = state.steps[i] = state.steps[i] + 1
            m = state.m[i] = beta1 * state.m[i] + (1.0 - beta1) * g
            v = state.v[i] = beta2 * state.v[i] + (1.0 - beta2) * (g * g)
            step_size = lr / (1.0 - beta1**t)
            correction2_sqrt = math.sqrt(1.0 - beta2**t)
            p.data -= step_size * (m / ((v**0.5) / correction2_sqrt + eps))

    def _step_flat(self, group: dict[str, Any], state: _AdamState) -> None:
        """The update above for every parameter of the group at once, on the flat arrays
        (every parameter has a gradient, so all have taken the same number of steps)."""
        flat = state.flat
        lr, (beta1, beta2), decay = group["lr"], group["betas"], group["weight_decay"]
        t = state.steps[0] + 1
        state.steps = [t] * len(state.params)
        buffer = state.shared_buffer()
        g = flat.gather([p.grad for p in state.params], state.g_flat)
        if decay and not self.decoupled and buffer is not None:
            g += decay * buffer
        elif decay and not self.decoupled:
            flat.add_scaled(g, [p.data for p in state.params], decay)
        update = flat.adam_update(
            g,
            state.m_flat,
            state.v_flat,
            state.scratch,
            group["betas"],
            group["eps"],
            lr / (1.0 - beta1**t),
            math.sqrt(1.0 - beta2**t),
        )
        arrays = [buffer] if buffer is not None else [p.data for p in state.params]
        if decay and self.decoupled:
            for a in arrays:
                a *= 1.0 - lr * decay
        if buffer is not None:
            buffer -= update
        else:
            flat.subtract_from(arrays, update)


def _assign(moments: list[Any], i: int, value: Any) -> None:
    """Set moment ``i`` (zero for None) in place when it is an array, so that a view into
    the flat state stays one."""
    current = moments[i]
    if hasattr(current, "shape"):
        current[...] = 0.0 if value is None else value
    elif value is None:
        moments[i] = 0.0
    else:
        moments[i] = copy.copy(value) if hasattr(value, "shape") else float(value)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as
    ``torch.optim.AdamW``: each step first shrinks the parameter, p *= 1 - lr *
    weight_decay, then takes Adam's step on the gradient alone."""

    decoupled = True

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)


# ---------------------------------------------------------------------- gradient clipping
def clip_grad_norm_(
    parameters: Any,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> float:
    """Scale the gradients of ``parameters`` in place so that their total norm (the
    ``norm_type``-norm of all their elements together) is at most ``max_norm``, as
    ``torch.nn.utils.clip_grad_norm_``: each is multiplied by min(1, max_norm / (total +
    1e-6)). Returns the total norm before clipping, as a float (torch: a 0-d tensor). A
    nan or infinite total is an error with ``error_if_nonfinite``; otherwise, as in torch,
    a nan total makes every gradient nan and an infinite one zeroes the finite ones."""
    params = [parameters] if _is_parameter(parameters) else list(parameters)
    max_norm = _non_negative("clip_grad_norm_: max_norm", max_norm)
    p = _non_negative("clip_grad_norm_: norm_type", norm_type)
    if p == 0.0:
        raise ValueError("clip_grad_norm_: norm_type must be > 0 (a p-norm or inf), got 0")
    grads = [q.grad for q in params if q.grad is not None]
    if not grads:
        return 0.0
    if all(isinstance(g, float) for g in grads):
        total = _vector_norm([abs(g) for g in grads], p)
    else:
        from .flat_state import array_norm

        total = _vector_norm([array_norm(g, p) for g in grads], p)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
            f"{total}, so they cannot be clipped (error_if_nonfinite=True)"
        )
    coef = min(max_norm / (total + 1e-6), 1.0)  # min(nan, 1.0) is nan, as torch's clamp
    if coef != 1.0:
        for q in params:
            if q.grad is not None:
                q.grad *= coef
    return total


def _vector_norm(norms: Sequence[float], p: float) -> float:
    """The p-norm of non-negative numbers (each part's norm): the norm of them all."""
    if p == math.inf:
        return max(norms)
    return math.fsum(x**p for x in norms) ** (1.0 / p)


# ---------------------------------------------------------------------- learning-rate schedules
class LRScheduler:
    """Sets each parameter group's ``"lr"`` from the number of steps taken, as
    ``torch.optim.lr_scheduler.LRScheduler``: made after the optimiser (it sets step 0's
    rate at once), with ``step()`` called after each ``optimizer.step()``. ``base_lrs``
    are the groups' rates when it was made; ``get_last_lr()`` the rates it set last."""

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(self).__name__}: needs an Optimizer, got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self._last_lr: list[float] = []
        self.step()

    def get_lr(self) -> list[float]:
        """Each group's rate at step ``last_epoch``."""
        raise NotImplementedError

    def step(self) -> None:
        """Advance one step and set each group's ``"lr"``."""
        self.last_epoch += 1
        where = f"{type(self).__name__}: the learning rate at step {self.last_epoch}"
        rates = [_non_negative(where, lr) for lr in self.get_lr()]
        for group, lr in zip(self.optimizer.param_groups, rates):
            group["lr"] = lr
        self._last_lr = rates

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(step), as ``torch.optim.lr_scheduler.LambdaLR``;
    ``lr_lambda`` is one function for every group or a list of one per group."""

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
    ) -> None:
        groups = len(getattr(optimizer, "param_groups", ()))
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ValueError(
                    f"LambdaLR: expected {groups} lr_lambdas (one per group), got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        elif callable(lr_lambda):
            self.lr_lambdas = [lr_lambda] * groups
        else:
            raise TypeError(f"LambdaLR: lr_lambda must be callable, got {lr_lambda!r}")
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas)]


def warmup_cosine_lr(
    it: int, lr: float, warmup_iters: int, lr_decay_iters: int, min_lr: float
) -> float:
    """nanoGPT's schedule at step ``it``: a linear warmup lr * (it+1)/(warmup_iters+1)
    for the first ``warmup_iters`` steps, then a cosine from ``lr`` down to ``min_lr`` at
    ``lr_decay_iters``, and ``min_lr`` after."""
    if it < warmup_iters:
        return lr * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (lr - min_lr)


class WarmupCosineLR(LRScheduler):
    """nanoGPT's learning-rate schedule (``warmup_cosine_lr``) from each group's rate:
    ``WarmupCosineLR(optimizer, warmup_iters=100, lr_decay_iters=2000, min_lr=1e-4)``."""

    def __init__(
        self, optimizer: Optimizer, warmup_iters: int, lr_decay_iters: int, min_lr: float
    ) -> None:
        for name, n in (("warmup_iters", warmup_iters), ("lr_decay_iters", lr_decay_iters)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"WarmupCosineLR: {name} must be an int >= 0, got {n!r}")
        if lr_decay_iters <= warmup_iters:
            raise ValueError(
                f"WarmupCosineLR: lr_decay_iters ({lr_decay_iters}) must be greater than "
                f"warmup_iters ({warmup_iters})"
            )
        self.warmup_iters, self.lr_decay_iters = warmup_iters, lr_decay_iters
        self.min_lr = _non_negative("WarmupCosineLR: min_lr", min_lr)
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        return [
            warmup_cosine_lr(
                self.last_epoch, base, self.warmup_iters, self.lr_decay_iters, self.min_lr
            )
            for base in self.base_lrs
        ]
