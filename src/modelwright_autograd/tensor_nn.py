"""Neural-net building blocks on Tensors, named and initialised as in ``torch.nn``.

``Module`` finds its parameters by looking through its attributes (Tensors that require
grad, sub-modules, lists of sub-modules), so a layer only has to assign them. The names
it finds are torch's (``0.weight`` in a Sequential or an MLP) and key ``state_dict()``;
``checkpoint.py`` saves and loads them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .checks import describe, positive_int
from .nn import ACTIVATIONS, mlp_layer_key, state_dict_key_problems
from .seeding import numpy_rng
from .tensor import Tensor, linear

Seed = int | np.random.Generator | np.random.RandomState | None


class Module:
    """Base class: ``forward`` does the work, ``module(x)`` calls it."""

    def forward(self, *args: Any) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any) -> Tensor:
        return self.forward(*args)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """(name, tensor) for every parameter, in attribute order, each tensor once."""
        seen: set[int] = set()
        for name, p in self._walk(prefix):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def _walk(self, prefix: str) -> Iterator[tuple[str, Tensor]]:
        for attr, value in vars(self).items():
            if isinstance(value, Tensor):
                if value.requires_grad:
                    yield prefix + attr, value
            elif isinstance(value, Module):
                yield from value._walk(f"{prefix}{attr}.")
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield from item._walk(f"{prefix}{attr}.{i}.")

    def parameters(self) -> list[Tensor]:
        return [p for _, p in self.named_parameters()]

    def zero_grad(self) -> None:
        """Set every parameter's grad to None (as torch's default), since backward()
        adds into ``grad`` rather than overwriting it."""
        for p in self.parameters():
            p.grad = None

    def state_dict(self) -> dict[str, np.ndarray]:
        """A copy of every parameter's data, keyed by name."""
        return {name: p.data.copy() for name, p in self.named_parameters()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Copy ``state``'s arrays into the parameters, after checking every key, shape and
        value: on any mismatch nothing is changed and the ValueError names each bad key.
        A number that a float32 parameter cannot hold (1e300 would become inf) is refused."""
        params = dict(self.named_parameters())
        problems = state_dict_key_problems(params, state)
        arrays = {}
        for name, p in params.items():
            if name not in state:
                continue
            value = np.asarray(state[name])
            if value.dtype.kind not in "fiu":
                problems.append(f"{name} holds {value.dtype} data, not numbers")
            elif value.shape != p.data.shape:
                problems.append(
                    f"size mismatch for {name}: checkpoint shape {value.shape}, "
                    f"model shape {p.data.shape}"
                )
            else:
                with np.errstate(over="ignore", invalid="ignore"):
                    cast = value.astype(p.data.dtype)
                overflowed = np.isinf(cast) & ~np.isinf(value)
                if overflowed.any():
                    i = int(np.flatnonzero(overflowed)[0])
                    problems.append(
                        f"{name}[{i}] = {float(value.ravel()[i])!r} is too large for {p.data.dtype}"
                    )
                arrays[name] = cast
        if problems:
            raise ValueError(f"load_state_dict for {type(self).__name__}: " + "; ".join(problems))
        for name, value in arrays.items():  # validated: these copies cannot fail
            params[name].data[...] = value


class Linear(Module):
    """y = x W^T + b with W of shape (out_features, in_features), as ``torch.nn.Linear``.

    Weight and bias start uniform in [-1/sqrt(in_features), 1/sqrt(in_features)], which
    is what torch's kaiming-uniform (a = sqrt(5)) default works out to.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        seed: Seed = None,
        dtype: Any = np.float64,
    ) -> None:
        self.in_features = positive_int(in_features, "Linear in_features")
        self.out_features = positive_int(out_features, "Linear out_features")
        rng = numpy_rng(seed)
        bound = 1.0 / math.sqrt(self.in_features)
        w = rng.uniform(-bound, bound, (self.out_features, self.in_features))
        self.weight = Tensor(w, requires_grad=True, dtype=dtype)
        self.bias: Tensor | None = None
        if bias:
            b = rng.uniform(-bound, bound, (self.out_features,))
            self.bias = Tensor(b, requires_grad=True, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)

    def __repr__(self) -> str:
        return (
            f"Linear(in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None})"
        )


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.relu()

    def __repr__(self) -> str:
        return "ReLU()"


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()

    def __repr__(self) -> str:
        return "Tanh()"


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.sigmoid()

    def __repr__(self) -> str:
        return "Sigmoid()"


class Sequential(Module):
    """Modules applied in order (in ``layers``); parameters are named ``<i>.<name>`` as in
    ``torch.nn.Sequential``."""

    def __init__(self, *modules: Module) -> None:
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: item {i} is not a Module: {describe(m)}")
        self.layers = list(modules)

    def forward(self, x: Tensor) -> Tensor:
        for m in self.layers:
            x = m(x)
        return x

    def _walk(self, prefix: str) -> Iterator[tuple[str, Tensor]]:
        for i, m in enumerate(self.layers):
            yield from m._walk(f"{prefix}{i}.")

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __repr__(self) -> str:
        return f"Sequential({', '.join(repr(m) for m in self.layers)})"


class MLP(Module):
    """The tensor twin of ``nn.MLP``: ``MLP(2, [16, 16, 1])`` is Linear layers with the
    activation between them and a linear output. Input (N, nin) or (nin,); output
    (N, nouts[-1]) or (nouts[-1],), a Tensor even for one output. ``layers[l].weight``
    row j holds the weights of the scalar MLP's ``layers[l].neurons[j]``. Parameters are
    named as in ``torch.nn.Sequential(Linear, act, ..., Linear)``: ``0.weight``, ``2.weight``.
    """

    def __init__(
        self,
        nin: int,
        nouts: Sequence[int],
        activation: str = "relu",
        seed: Seed = None,
        dtype: Any = np.float64,
    ) -> None:
        nin = positive_int(nin, "MLP nin")
        if len(nouts) == 0:
            raise ValueError("MLP needs at least one layer size in nouts")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        rng = None if seed is None else numpy_rng(seed)  # one generator for all layers
        sizes = [nin, *nouts]
        self.layers = [
            Linear(sizes[i], sizes[i + 1], seed=rng, dtype=dtype) for i in range(len(nouts))
        ]
        self.activation = activation

    def _walk(self, prefix: str) -> Iterator[tuple[str, Tensor]]:
        for i, layer in enumerate(self.layers):
            yield from layer._walk(f"{prefix}{mlp_layer_key(i)}.")

    def forward(self, x: Tensor) -> Tensor:
        nin = self.layers[0].in_features
        expected = f"MLP expects a Tensor of shape (..., {nin}) ({nin} features per row)"
        if not isinstance(x, Tensor):  # an ndarray's repr spans lines: keep the message one
            raise TypeError(f"{expected}, got {' '.join(describe(x).split())}")
        if x.data.ndim == 0 or x.shape[-1] != nin:
            raise ValueError(f"{expected}, got shape {x.shape}")
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i != last:
                x = getattr(x, self.activation)()
        return x

    def __repr__(self) -> str:
        sizes = [self.layers[0].in_features] + [layer.out_features for layer in self.layers]
        return f"MLP({sizes[0]}, {sizes[1:]}, activation={self.activation!r})"
