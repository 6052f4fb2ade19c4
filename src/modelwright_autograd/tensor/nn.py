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

from ..checks import describe, positive_int
from ..flat_state import share_buffer
from ..scalar.nn import ACTIVATIONS, mlp_layer_key, state_dict_key_problems
from ..seeding import numpy_rng
from . import Tensor, linear, linear_relu
from .conv import Pair, avg_pool2d, conv2d, max_pool2d
from .nn_ops import batch_norm, dropout, embedding, layer_norm

Seed = int | np.random.Generator | np.random.RandomState | None


class Module:
    """Base class: ``forward`` does the work, ``module(x)`` calls it.

    ``training`` (True until ``eval()``) switches Dropout and BatchNorm between their two
    behaviours; ``train()`` and ``eval()`` set it on the module and every sub-module.
    Buffers (BatchNorm's running statistics) are the attributes a class names in
    ``_buffers``: arrays that are saved in ``state_dict()`` but are not parameters.
    """

    training = True
    _buffers: tuple[str, ...] = ()

    def forward(self, *args: Any) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any) -> Tensor:
        return self.forward(*args)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, sub-module) for the sub-modules held in attributes or lists."""
        for attr, value in vars(self).items():
            if isinstance(value, Module):
                yield attr, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{attr}.{i}", item

    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode``) here and in every sub-module; returns self."""
        if not isinstance(mode, bool):
            raise TypeError(f"train: mode must be a bool, got {describe(mode)}")
        self.training = mode
        for _, child in self.named_children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """(name, tensor) for every parameter, in attribute order, each tensor once."""
        seen: set[int] = set()
        for name, p in self._walk(prefix, False):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def _walk(self, prefix: str, buffers: bool) -> Iterator[tuple[str, Any]]:
        """This module's parameters (and buffers), then each sub-module's, as torch orders
        a state_dict."""
        for attr, value in vars(self).items():
            if isinstance(value, Tensor) and value.requires_grad:
                yield prefix + attr, value
        if buffers:
            for attr in self._buffers:
                yield prefix + attr, getattr(self, attr)
        for name, child in self.named_children():
            yield from child._walk(f"{prefix}{name}.", buffers)

    def parameters(self) -> list[Tensor]:
        return [p for _, p in self.named_parameters()]

    def zero_grad(self) -> None:
        """Set every parameter's grad to None (as torch's default), since backward()
        adds into ``grad`` rather than overwriting it."""
        for p in self.parameters():
            p.grad = None

    def _state(self) -> dict[str, np.ndarray]:
        """The arrays behind every parameter and buffer, by name (not copies)."""
        return {name: _array(t) for name, t in self._walk("", True)}

    def state_dict(self) -> dict[str, np.ndarray]:
        """A copy of every parameter's and buffer's data, keyed by name."""
        return {name: a.copy() for name, a in self._state().items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Copy ``state``'s arrays into the parameters and buffers, after checking every
        key, shape and value: on any mismatch nothing is changed and the ValueError names
        each bad key. A number that a float32 parameter cannot hold (1e300 would become
        inf) is refused."""
        params = self._state()
        problems = state_dict_key_problems(params, state)
        arrays = {}
        for name, p in params.items():
            if name not in state:
                continue
            value = np.asarray(state[name])
            if value.dtype.kind not in "fiu":
                problems.append(f"{name} holds {value.dtype} data, not numbers")
            elif value.shape != p.shape:
                problems.append(
                    f"size mismatch for {name}: checkpoint shape {value.shape}, "
                    f"model shape {p.shape}"
                )
            else:
                with np.errstate(over="ignore", invalid="ignore"):
                    cast = value.astype(p.dtype)
                overflowed = np.isinf(cast) & ~np.isinf(value)
                if overflowed.any():
                    i = int(np.flatnonzero(overflowed)[0])
                    problems.append(
                        f"{name}[{i}] = {float(value.ravel()[i])!r} is too large for {p.dtype}"
                    )
                arrays[name] = cast
        if problems:
            raise ValueError(f"load_state_dict for {type(self).__name__}: " + "; ".join(problems))
        for name, value in arrays.items():  # validated: these copies cannot fail
            params[name][...] = value


def _array(t: Tensor | np.ndarray) -> np.ndarray:
    """The array a parameter (a Tensor) or a buffer (a Tensor or an ndarray) holds."""
    return t.data if isinstance(t, Tensor) else t


def _uniform(rng: Any, fan_in: int, shape: tuple[int, ...], dtype: Any) -> Tensor:
    """A parameter uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)]: torch's default for the
    weights (kaiming_uniform with a = sqrt(5) works out to this bound) and the biases of
    Linear and Conv2d."""
    bound = 1.0 / math.sqrt(fan_in)
    return Tensor(rng.uniform(-bound, bound, shape), requires_grad=True, dtype=dtype)


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
        fan_in, shape = self.in_features, (self.out_features, self.in_features)
        self.weight = _uniform(rng, fan_in, shape, dtype)
        self.bias = _uniform(rng, fan_in, (self.out_features,), dtype) if bias else None

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

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for i, m in enumerate(self.layers):
            yield str(i), m

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
        share_buffer(self.parameters())  # so that Adam updates them in one subtraction
        self.activation = activation

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for i, layer in enumerate(self.layers):
            yield mlp_layer_key(i), layer

    def forward(self, x: Tensor) -> Tensor:
        nin = self.layers[0].in_features
        if not isinstance(x, Tensor):  # an ndarray's repr spans lines: keep the message one
            raise TypeError(f"{self._expects()}, got {' '.join(describe(x).split())}")
        if x.data.ndim == 0 or x.shape[-1] != nin:
            raise ValueError(f"{self._expects()}, got shape {x.shape}")
        *hidden, output = self.layers
        for layer in hidden:
            # The common case in one node; a layer swapped in (a subclass, another module)
            # is called, so its own forward runs.
            if self.activation == "relu" and type(layer) is Linear:
                x = linear_relu(x, layer.weight, layer.bias)
            else:
                x = getattr(layer(x), self.activation)()
        return output(x)

    def _expects(self) -> str:
        nin = self.layers[0].in_features
        return f"MLP expects a Tensor of shape (..., {nin}) ({nin} features per row)"

    def __repr__(self) -> str:
        sizes = [self.layers[0].in_features] + [layer.out_features for layer in self.layers]
        return f"MLP({sizes[0]}, {sizes[1:]}, activation={self.activation!r})"


# ---------------------------------------------------------------------- convolutional nets
class Conv2d(Module):
    """2-D convolution with a (out_channels, in_channels/groups, kH, kW) weight, as
    ``torch.nn.Conv2d``, initialised as torch does (fan_in = in_channels/groups * kH*kW)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Pair,
        stride: int | Pair = 1,
        padding: int | Pair | str = 0,
        dilation: int | Pair = 1,
        groups: int = 1,
        bias: bool = True,
        seed: Seed = None,
        dtype: Any = np.float64,
    ) -> None:
        self.in_channels = positive_int(in_channels, "Conv2d in_channels")
        self.out_channels = positive_int(out_channels, "Conv2d out_channels")
        self.groups = positive_int(groups, "Conv2d groups")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(
                f"Conv2d: in_channels {in_channels} and out_channels {out_channels} must both "
                f"be divisible by groups {groups}"
            )
        kh, kw = self.kernel_size = _positive_pair(kernel_size, "Conv2d kernel_size")
        self.stride, self.padding, self.dilation = stride, padding, dilation
        rng = numpy_rng(seed)
        fan_in = self.in_channels // self.groups * kh * kw
        shape = (self.out_channels, self.in_channels // self.groups, kh, kw)
        self.weight = _uniform(rng, fan_in, shape, dtype)
        self.bias = _uniform(rng, fan_in, (self.out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return conv2d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def __repr__(self) -> str:
        return (
            f"Conv2d({self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding!r})"
        )


def _positive_pair(value: Any, what: str) -> Pair:
    items = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(items) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}")
    return positive_int(items[0], what), positive_int(items[1], what)


class MaxPool2d(Module):
    """The largest value of each window, as ``torch.nn.MaxPool2d``."""

    def __init__(
        self,
        kernel_size: int | Pair,
        stride: int | Pair | None = None,
        padding: int | Pair = 0,
        dilation: int | Pair = 1,
    ) -> None:
        self.kernel_size, self.stride = kernel_size, stride
        self.padding, self.dilation = padding, dilation

    def forward(self, x: Tensor) -> Tensor:
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)

    def __repr__(self) -> str:
        return f"MaxPool2d(kernel_size={self.kernel_size}, stride={self.stride})"


class AvgPool2d(Module):
    """The mean of each window, as ``torch.nn.AvgPool2d``."""

    def __init__(
        self,
        kernel_size: int | Pair,
        stride: int | Pair | None = None,
        padding: int | Pair = 0,
        count_include_pad: bool = True,
    ) -> None:
        self.kernel_size, self.stride = kernel_size, stride
        self.padding, self.count_include_pad = padding, count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        return avg_pool2d(
            x, self.kernel_size, self.stride, self.padding, count_include_pad=self.count_include_pad
        )

    def __repr__(self) -> str:
        return f"AvgPool2d(kernel_size={self.kernel_size}, stride={self.stride})"


class Flatten(Module):
    """Dims ``start_dim`` to ``end_dim`` merged into one, as ``torch.nn.Flatten`` (by
    default everything but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)

    def __repr__(self) -> str:
        return f"Flatten(start_dim={self.start_dim}, end_dim={self.end_dim})"


class Dropout(Module):
    """Zero each element with probability ``p`` in training mode (scaling the rest by
    1/(1-p)), the identity in eval mode, as ``torch.nn.Dropout``. ``seed`` makes the masks
    reproducible."""

    def __init__(self, p: float = 0.5, seed: Seed = None) -> None:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability between 0 and 1, got {p!r}")
        self.p = float(p)
        self._rng = numpy_rng(seed)

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training, self._rng)

    def __repr__(self) -> str:
        return f"Dropout(p={self.p})"


class LayerNorm(Module):
    """Normalisation over the last dims, with a weight (ones) and bias (zeros) of
    ``normalized_shape``, as ``torch.nn.LayerNorm``."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype: Any = np.float64,
    ) -> None:
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(
            positive_int(n, "LayerNorm normalized_shape") for n in normalized_shape
        )
        self.eps = eps
        shape = self.normalized_shape
        self.weight = Tensor(np.ones(shape), True, dtype) if elementwise_affine else None
        self.bias = Tensor(np.zeros(shape), True, dtype) if elementwise_affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def __repr__(self) -> str:
        return f"LayerNorm({self.normalized_shape}, eps={self.eps})"


class _BatchNorm(Module):
    """Per-channel normalisation by the batch's statistics in training and by running
    statistics in eval mode, as torch's BatchNorm: weight ones, bias zeros, buffers
    ``running_mean`` (zeros), ``running_var`` (ones) and ``num_batches_tracked``. With
    ``momentum=None`` the running statistics are the plain average over all batches."""

    _buffers = ("running_mean", "running_var", "num_batches_tracked")
    _ndims: tuple[int, ...] = ()
    _layout = ""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        dtype: Any = np.float64,
    ) -> None:
        c = self.num_features = positive_int(num_features, f"{type(self).__name__} num_features")
        self.eps, self.momentum = eps, momentum
        self.weight = Tensor(np.ones(c), True, dtype) if affine else None
        self.bias = Tensor(np.zeros(c), True, dtype) if affine else None
        self.track_running_stats = track_running_stats
        self._buffers = type(self)._buffers if track_running_stats else ()
        self.running_mean = Tensor(np.zeros(c), dtype=dtype)
        self.running_var = Tensor(np.ones(c), dtype=dtype)
        self.num_batches_tracked = np.zeros((), dtype=np.int64)

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in self._ndims:
            shape = x.shape if isinstance(x, Tensor) else describe(x)
            raise ValueError(f"{name}: expected a {self._layout} input, got {shape}")
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"{name}: input {x.shape} has {x.shape[1]} channels, expected {self.num_features}"
            )
        momentum = self.momentum
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked += 1
            if momentum is None:  # cumulative average
                momentum = 1.0 / float(self.num_batches_tracked)
        stats = self.track_running_stats and (self.training or not use_batch)
        return batch_norm(
            x,
            self.running_mean if stats else None,
            self.running_var if stats else None,
            self.weight,
            self.bias,
            use_batch,
            momentum or 0.0,
            self.eps,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.num_features}, eps={self.eps}, momentum={self.momentum})"
        )


class BatchNorm1d(_BatchNorm):
    """BatchNorm over (N, C) or (N, C, L) inputs, as ``torch.nn.BatchNorm1d``."""

    _ndims = (2, 3)
    _layout = "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """BatchNorm over (N, C, H, W) inputs, as ``torch.nn.BatchNorm2d``."""

    _ndims = (4,)
    _layout = "(N, C, H, W)"


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of ``embedding_dim``, drawn from
    N(0, 1) as ``torch.nn.Embedding`` (the ``padding_idx`` row zero, and it gets no
    gradient)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        seed: Seed = None,
        dtype: Any = np.float64,
    ) -> None:
        n = self.num_embeddings = positive_int(num_embeddings, "Embedding num_embeddings")
        d = self.embedding_dim = positive_int(embedding_dim, "Embedding embedding_dim")
        w = numpy_rng(seed).standard_normal((n, d))
        if padding_idx is not None:
            if (
                isinstance(padding_idx, bool)
                or not isinstance(padding_idx, int)
                or not -n <= padding_idx < n
            ):
                raise ValueError(
                    f"Embedding: padding_idx must be an int from {-n} to {n - 1}, "
                    f"got {padding_idx!r}"
                )
            padding_idx %= n
            w[padding_idx] = 0.0
        self.padding_idx = padding_idx
        self.weight = Tensor(w, requires_grad=True, dtype=dtype)

    def forward(self, indices: Any) -> Tensor:
        return embedding(indices, self.weight, self.padding_idx)

    def __repr__(self) -> str:
        return f"Embedding({self.num_embeddings}, {self.embedding_dim})"


class CNN(Module):
    """A small convolutional net for square one-channel images (the 8x8 digits): two
    blocks of 3x3 convolution (padding 1), batch normalisation, ReLU and 2x2 max pooling,
    then a linear head. ``channels`` are the two convolutions' output channels. Input
    (N, side*side) rows, as the datasets give them, or (N, 1, side, side) images; output
    (N, classes) logits. Call ``eval()`` before scoring: the batch norms then use their
    running statistics (docs/training.md says why they are there).
    """

    def __init__(
        self,
        side: int,
        channels: Sequence[int] = (16, 32),
        classes: int = 10,
        seed: Seed = None,
        dtype: Any = np.float64,
    ) -> None:
        self.side = positive_int(side, "CNN side")
        if self.side % 4:
            raise ValueError(
                f"CNN: the image side must be a multiple of 4 (two 2x2 pools), got {side}"
            )
        if len(channels) != 2:
            raise ValueError(
                f"CNN needs two channel counts (one per convolution), got {channels!r}"
            )
        c1, c2 = (positive_int(c, "CNN channels") for c in channels)
        self.classes = positive_int(classes, "CNN classes")
        rng = numpy_rng(seed)
        self.conv1 = Conv2d(1, c1, 3, padding=1, seed=rng, dtype=dtype)
        self.bn1 = BatchNorm2d(c1, dtype=dtype)
        self.conv2 = Conv2d(c1, c2, 3, padding=1, seed=rng, dtype=dtype)
        self.bn2 = BatchNorm2d(c2, dtype=dtype)
        self.pool = MaxPool2d(2)
        self.head = Linear(c2 * (self.side // 4) ** 2, self.classes, seed=rng, dtype=dtype)

    @property
    def channels(self) -> tuple[int, int]:
        return self.conv1.out_channels, self.conv2.out_channels

    def forward(self, x: Tensor) -> Tensor:
        n = x.shape[0]
        x = x.reshape(n, 1, self.side, self.side)
        x = self.pool(self.bn1(self.conv1(x)).relu())
        x = self.pool(self.bn2(self.conv2(x)).relu())
        return self.head(x.reshape(n, -1))

    def __repr__(self) -> str:
        return f"CNN(side={self.side}, channels={self.channels}, classes={self.classes})"


def torch_cnn(torch: Any, nin: int, nouts: tuple[int, ...], dtype: Any) -> Any:
    """``CNN`` in torch (for export): a Sequential whose layer names (conv1, bn1, ...,
    head) make its state_dict keys the same as ours. ``torch`` is the torch module."""
    from collections import OrderedDict

    nn = torch.nn
    (c1, c2, classes), side = nouts, math.isqrt(nin)
    layers = OrderedDict(unflatten=nn.Unflatten(1, (1, side, side)))
    for i, (cin, cout) in enumerate(((1, c1), (c1, c2)), start=1):
        layers[f"conv{i}"] = nn.Conv2d(cin, cout, 3, padding=1, dtype=dtype)
        layers[f"bn{i}"] = nn.BatchNorm2d(cout, dtype=dtype)
        layers[f"relu{i}"] = nn.ReLU()
        layers[f"pool{i}"] = nn.MaxPool2d(2)
    layers["flatten"] = nn.Flatten()
    layers["head"] = nn.Linear(c2 * (side // 4) ** 2, classes, dtype=dtype)
    return nn.Sequential(layers)
