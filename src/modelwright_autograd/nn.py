"""A tiny neural-net library built only from ``Value``: Module, Neuron, Layer, MLP."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from .engine import Operand, Value, _dot, _lift

_ACTIVATIONS = ("relu", "tanh", "sigmoid")


def _make_rng(seed: int | random.Random | None) -> Any:
    """Something with ``uniform(a, b)``: a ``random.Random`` seeded with ``seed``, the one
    given, or for None the ``random`` module itself, whose functions draw from the global
    generator, so ``random.seed(1337)`` before building a model reproduces micrograd's."""
    if seed is None:
        return random
    if isinstance(seed, random.Random):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int or random.Random, got {type(seed).__name__}")
    return random.Random(seed)


class Module:
    """Anything with parameters: ``parameters()`` lists them, ``zero_grad()`` resets them."""

    def parameters(self) -> list[Value]:
        return []

    def zero_grad(self) -> None:
        """Set every parameter's grad to 0.0; call it before each backward() in a loop,
        because backward() adds to ``grad`` rather than overwriting it."""
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    """act(w . x + b): weights drawn uniformly from [-1, 1], bias 0, as in the course."""

    def __init__(
        self,
        nin: int,
        nonlin: bool = True,
        activation: str = "relu",
        seed: int | random.Random | None = None,
        fused: bool = True,
    ) -> None:
        if isinstance(nin, bool) or not isinstance(nin, int) or nin < 1:
            raise ValueError(f"Neuron needs a positive whole number of inputs, got {nin!r}")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {activation!r}")
        rng = _make_rng(seed)
        self.w = [Value(rng.uniform(-1.0, 1.0)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin
        self.activation = activation
        self.fused = fused

    def __call__(self, x: Sequence[Operand]) -> Value:
        if len(x) != len(self.w):
            raise ValueError(f"Neuron expects {len(self.w)} inputs, got {len(x)}")
        return self._forward([_lift(xi, "Neuron input") for xi in x])

    def _forward(self, xs: list[Value]) -> Value:
        """The neuron on inputs already checked and lifted to Values (Layer's hot path)."""
        if self.fused:  # one node for the whole pre-activation (see Value.dot)
            act = _dot(self.w, xs, self.b)
        else:  # the textbook form: a chain of products and sums, 2n nodes
            act = sum((wi * xi for wi, xi in zip(self.w, xs)), self.b)
        if not self.nonlin:
            return act
        return getattr(act, self.activation)()

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]

    def __repr__(self) -> str:
        kind = self.activation.capitalize() if self.nonlin else "Linear"
        return f"{kind}Neuron({len(self.w)})"


class Layer(Module):
    """``nout`` neurons reading the same inputs. Always returns a list, even of one Value,
    so a one-neuron hidden layer feeds the next layer like any other."""

    def __init__(
        self,
        nin: int,
        nout: int,
        nonlin: bool = True,
        activation: str = "relu",
        seed: int | random.Random | None = None,
        fused: bool = True,
    ) -> None:
        if isinstance(nout, bool) or not isinstance(nout, int) or nout < 1:
            raise ValueError(f"Layer needs a positive whole number of outputs, got {nout!r}")
        rng = None if seed is None else _make_rng(seed)  # one generator for all neurons
        self.neurons = [Neuron(nin, nonlin, activation, rng, fused) for _ in range(nout)]

    def __call__(self, x: Sequence[Operand]) -> list[Value]:
        nin = len(self.neurons[0].w)
        if len(x) != nin:
            raise ValueError(f"Layer expects {nin} inputs, got {len(x)}")
        xs = [_lift(xi, "Layer input") for xi in x]  # lift numbers once, not per neuron
        return [n._forward(xs) for n in self.neurons]

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self) -> str:
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    """A multi-layer perceptron: ``MLP(2, [16, 16, 1])`` has two hidden ReLU layers of 16
    and a linear output. With one output it returns a Value, otherwise a list.

    Parameters are ordered layer by layer, neuron by neuron, weights then bias.
    """

    def __init__(
        self,
        nin: int,
        nouts: Sequence[int],
        activation: str = "relu",
        seed: int | random.Random | None = None,
        fused: bool = True,
    ) -> None:
        if isinstance(nin, bool) or not isinstance(nin, int) or nin < 1:
            raise ValueError(f"MLP needs a positive whole number of inputs, got {nin!r}")
        if len(nouts) == 0:
            raise ValueError("MLP needs at least one layer size in nouts")
        rng = None if seed is None else _make_rng(seed)  # one generator for all layers
        sizes = [nin, *nouts]
        last = len(nouts) - 1
        self.layers = [
            Layer(sizes[i], sizes[i + 1], i != last, activation, rng, fused)
            for i in range(len(nouts))
        ]
        self.nin = nin
        self.nouts = list(nouts)
        self.activation = activation

    def __call__(self, x: Sequence[Operand]) -> Value | list[Value]:
        if len(x) != self.nin:
            raise ValueError(f"MLP expects {self.nin} inputs, got {len(x)}")
        out: list[Value] = list(x)  # type: ignore[arg-type]
        for layer in self.layers:
            out = layer(out)
        return out[0] if len(out) == 1 else out

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
