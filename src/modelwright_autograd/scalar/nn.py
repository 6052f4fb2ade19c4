"""A tiny neural-net library built only from ``Value``: Module, Neuron, Layer, MLP."""

from __future__ import annotations

import random
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from ..checks import MAX_PARAMETERS, describe, positive_int
from ..seeding import scalar_rng
from .engine import Operand, Value, as_value, dot_relu_unchecked, dot_unchecked

#: The hidden-layer nonlinearities both engines' nets offer (a ``Value``/``Tensor`` method each).
ACTIVATIONS = ("relu", "tanh", "sigmoid")


def mlp_layer_key(i: int) -> str:
    """The ``state_dict`` prefix of an MLP's ``i``-th linear layer, in both engines: its
    index in the equivalent ``torch.nn.Sequential(Linear, act, Linear, act, ..., Linear)``,
    so a state dict loads into that torch model as it is."""
    return str(2 * i)


def state_dict_key_problems(expected: Iterable[str], given: Iterable[str]) -> list[str]:
    """What ``load_state_dict`` of either engine says about missing and unexpected keys."""
    expected, given = list(expected), list(given)
    expected_set, given_set = set(expected), set(given)
    problems = []
    missing = [k for k in expected if k not in given_set]
    unexpected = [k for k in given if k not in expected_set]
    if missing:
        problems.append(f"missing keys {missing}")
    if unexpected:
        problems.append(f"unexpected keys {unexpected}")
    return problems


def _check_weights(count: int, what: str) -> None:
    """Refuse a net of more than MAX_PARAMETERS["scalar"] weights before building any,
    as the CLI does: each is a Value (~110 bytes, ~4 us), so ``MLP(2, [10**6, 10**6])``
    would otherwise grind for a minute towards terabytes before a MemoryError."""
    limit = MAX_PARAMETERS["scalar"]
    if count > limit:
        raise ValueError(
            f"{what} would hold {count:,} weights; the scalar engine builds at most {limit:,} "
            "(use tensor_nn for a larger net)"
        )


#: A parameter group: a weight matrix (a list of rows of Values) or a bias vector.
Group = list[list[Value]] | list[Value]


def _shape(group: Group) -> tuple[int, ...]:
    return (len(group), len(group[0])) if isinstance(group[0], list) else (len(group),)


def _values(group: Group) -> list[Value]:
    """The group's Values, row by row."""
    return [v for row in group for v in row] if isinstance(group[0], list) else group  # type: ignore[misc]


def _numbers(value: Any, shape: tuple[int, ...]) -> list[float] | None:
    """The real numbers of ``value``, row by row, if it is a nested sequence of ``shape``,
    else None. NumPy arrays and torch tensors are read through their ``tolist()``."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or len(value) != shape[0]:
        return None
    if len(shape) == 1:
        ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
        return [float(x) for x in value] if ok else None
    flat: list[float] = []
    for row in value:
        numbers = _numbers(row, shape[1:])
        if numbers is None:
            return None
        flat.extend(numbers)
    return flat


def _check_activation(activation: str | None) -> None:
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(
            f"activation must be one of {ACTIVATIONS} or None (linear), got {activation!r}"
        )


class Module:
    """Anything with parameters: ``parameters()`` lists them, ``zero_grad()`` resets them,
    ``state_dict()`` copies their numbers out under torch's names and ``load_state_dict()``
    copies them back in."""

    def parameters(self) -> list[Value]:
        return []

    def zero_grad(self) -> None:
        """Set every parameter's grad to 0.0; call it before each backward() in a loop,
        because backward() adds to ``grad`` rather than overwriting it."""
        for p in self.parameters():
            p.grad = 0.0

    def _named_groups(self) -> dict[str, Group]:
        """Each named parameter group, keyed as in torch's ``state_dict``."""
        return {}

    def state_dict(self) -> dict[str, list[list[float]] | list[float]]:
        """A copy of every parameter's number, keyed and shaped as torch's: ``0.weight`` is
        a list of rows (out_features, in_features), ``0.bias`` a list (out_features,)."""
        return {
            name: [[v.data for v in row] for row in group]  # type: ignore[union-attr]
            if isinstance(group[0], list)
            else [v.data for v in group]  # type: ignore[union-attr]
            for name, group in self._named_groups().items()
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Copy ``state``'s numbers (nested lists, NumPy arrays or torch tensors) into the
        parameters, after checking every key and shape: on any mismatch nothing is changed
        and the ValueError names each bad key."""
        groups = self._named_groups()
        problems = state_dict_key_problems(groups, state)
        found: dict[str, list[float]] = {}
        for name, group in groups.items():
            if name in state:
                numbers = _numbers(state[name], _shape(group))
                if numbers is None:
                    problems.append(f"{name} is not a {_shape(group)} array of real numbers")
                else:
                    found[name] = numbers
        if problems:
            raise ValueError(f"load_state_dict for {type(self).__name__}: " + "; ".join(problems))
        for name, numbers in found.items():  # validated: these assignments cannot fail
            for p, v in zip(_values(groups[name]), numbers):
                p.data = v


class Neuron(Module):
    """act(w . x + b): weights drawn uniformly from [-1, 1], bias 0, as in the course.
    ``activation=None`` makes a linear neuron (micrograd's ``nonlin=False``)."""

    def __init__(
        self,
        nin: int,
        activation: str | None = "relu",
        seed: int | random.Random | None = None,
        fused: bool = True,
    ) -> None:
        positive_int(nin, "Neuron's number of inputs")
        _check_weights(nin + 1, f"Neuron({nin})")
        _check_activation(activation)
        rng = scalar_rng(seed)
        self.w = [Value(rng.uniform(-1.0, 1.0)) for _ in range(nin)]
        self.b = Value(0.0)
        self.activation = activation
        self.fused = fused

    def __call__(self, x: Sequence[Operand]) -> Value:
        if len(x) != len(self.w):
            raise ValueError(f"Neuron expects {len(self.w)} inputs, got {len(x)}")
        return self._forward([as_value(xi, "Neuron input") for xi in x])

    def _forward(self, xs: list[Value]) -> Value:
        """The neuron on inputs already checked and lifted to Values (Layer's hot path)."""
        if self.fused and self.activation == "relu":  # the whole neuron as one node
            return dot_relu_unchecked(self.w, xs, self.b)
        if self.fused:  # one node for the whole pre-activation (see Value.dot)
            act = dot_unchecked(self.w, xs, self.b)
        else:  # the textbook form: a chain of products and sums, 2n nodes
            act = sum((wi * xi for wi, xi in zip(self.w, xs)), self.b)
        if self.activation is None:
            return act
        return getattr(act, self.activation)()

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]

    def __repr__(self) -> str:
        kind = self.activation.capitalize() if self.activation else "Linear"
        return f"{kind}Neuron({len(self.w)})"


class Layer(Module):
    """``nout`` neurons reading the same inputs. Always returns a list, even of one Value,
    so a one-neuron hidden layer feeds the next layer like any other."""

    def __init__(
        self,
        nin: int,
        nout: int,
        activation: str | None = "relu",
        seed: int | random.Random | None = None,
        fused: bool = True,
    ) -> None:
        positive_int(nin, "Layer's number of inputs")
        positive_int(nout, "Layer's number of outputs")
        _check_weights((nin + 1) * nout, f"Layer({nin}, {nout})")
        rng = None if seed is None else scalar_rng(seed)  # one generator for all neurons
        self.neurons = [Neuron(nin, activation, rng, fused) for _ in range(nout)]

    def __call__(self, x: Sequence[Operand]) -> list[Value]:
        nin = len(self.neurons[0].w)
        if len(x) != nin:
            raise ValueError(f"Layer expects {nin} inputs, got {len(x)}")
        xs = [as_value(xi, "Layer input") for xi in x]  # lift numbers once, not per neuron
        return [n._forward(xs) for n in self.neurons]

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def _named_groups(self) -> dict[str, Group]:
        """As ``torch.nn.Linear``: ``weight`` row j is neuron j's weights."""
        return {"weight": [n.w for n in self.neurons], "bias": [n.b for n in self.neurons]}

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
        positive_int(nin, "MLP's number of inputs")
        if len(nouts) == 0:
            raise ValueError("MLP needs at least one layer size in nouts")
        if activation not in ACTIVATIONS:  # the output layer alone is linear
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        sizes = [nin, *(positive_int(n, "MLP's layer size") for n in nouts)]
        weights = sum((a + 1) * b for a, b in pairwise(sizes))
        _check_weights(weights, f"MLP({nin}, {reprlib.repr(list(nouts))})")
        rng = None if seed is None else scalar_rng(seed)  # one generator for all layers
        last = len(nouts) - 1
        self.layers = [
            Layer(sizes[i], sizes[i + 1], activation if i != last else None, rng, fused)
            for i in range(len(nouts))
        ]
        self.nin = nin
        self.nouts = list(nouts)
        self.activation = activation

    def __call__(self, x: Sequence[Operand]) -> Value | list[Value]:
        if not hasattr(x, "__len__") or isinstance(x, (str, bytes)):
            raise TypeError(
                f"MLP expects {self.nin} inputs (a sequence of {self.nin} numbers or Values), "
                f"got {describe(x)}"
            )
        if len(x) != self.nin:
            raise ValueError(f"MLP expects {self.nin} inputs, got {len(x)}")
        out: list[Value] = list(x)  # type: ignore[arg-type]
        for layer in self.layers:
            out = layer(out)
        return out[0] if len(out) == 1 else out

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def _named_groups(self) -> dict[str, Group]:
        return {
            f"{mlp_layer_key(i)}.{name}": group
            for i, layer in enumerate(self.layers)
            for name, group in layer._named_groups().items()
        }

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
