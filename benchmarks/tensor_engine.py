"""Section 3: the tensor engine against PyTorch (CPU) and a hand-written NumPy floor.

Three implementations of the same two workloads, from the same starting weights, fed the
same batches in the same order, each on one thread (see ``run``):

* digits: MLP 64-128-64-10 (ReLU), cross-entropy, Adam (lr 1e-3), batch 32 and 256, one epoch
  over the 80% training split of ``load_digits`` (standardised with the split's own mean
  and std), shuffled mini-batches;
* moons: micrograd's demo as tensors, MLP 2-16-16-1 on 100 samples full batch, SVM loss
  + 1e-4 L2, SGD with lr = 1.0 - 0.9*k/100, starting from micrograd's weights.

The NumPy floor is the same maths written by hand with no autograd at all: what this
approach (NumPy arrays, Python-level ops) cannot beat. PyTorch gets as many intra-op
threads as NumPy's BLAS has (one). The first epoch (digits) and the first run (moons)
double as a check that the three compute the same losses; the report shows the largest
difference.
Epochs are interleaved (torch, NumPy, ours, torch, ...) so drift hits all three alike.
"""

from __future__ import annotations

import gc
import itertools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from modelwright_autograd import collection_paused
from modelwright_autograd.optim import SGD, Adam
from modelwright_autograd.tensor import Tensor
from modelwright_autograd.tensor import functional as F
from modelwright_autograd.tensor import nn as tensor_nn

from .common import Sizes, log, max_abs_diff, summarize
from .machine import numpy_blas
from .scalar import DEMO_STEP0_LOSS, demo_data, demo_lr, micrograd_model

DIGITS_SIZES = (64, 128, 64, 10)
MOONS_SIZES = (2, 16, 16, 1)
DIGITS_BATCHES = (32, 256)
ADAM_LR = 1e-3
BETAS = (0.9, 0.999)
EPS = 1e-8
L2 = 1e-4
ENGINES = ("torch", "numpy floor", "ours")  # the order of the report's rows

Layers = list[tuple[np.ndarray, np.ndarray]]  # [(W of shape (in, out), b of shape (out,))]


# ------------------------------------------------------------------------------ data
def digits_data(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The 80% training split of load_digits (shuffled with seed 0), standardised."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    train = order[: int(0.8 * len(order))]
    X = digits.data[train].astype(np.float64)
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0.0] = 1.0  # the always-blank border pixels
    return ((X - mean) / std).astype(dtype), digits.target[train].astype(np.int64)


def epoch_batches(n: int, epochs: int, limit: int | None, batch: int) -> list[list[np.ndarray]]:
    """Index arrays of each epoch's shuffled mini-batches (the last one may be short)."""
    rng = np.random.default_rng(1)
    result = []
    for _ in range(epochs):
        order = rng.permutation(n)
        batches = [order[i : i + batch] for i in range(0, n, batch)]
        result.append(batches[:limit] if limit else batches)
    return result


def init_layers(sizes: tuple[int, ...], dtype: str) -> Layers:
    """torch.nn.Linear's default range, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), seeded."""
    rng = np.random.default_rng(2)
    layers = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        bound = 1.0 / math.sqrt(fan_in)
        W = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(dtype)
        b = rng.uniform(-bound, bound, fan_out).astype(dtype)
        layers.append((W, b))
    return layers


def micrograd_layers(dtype: str) -> Layers:
    """micrograd's demo weights (``random.seed(1337)``) as matrices: W[i, j] is neuron j's
    weight on input i."""
    mlp = micrograd_model()
    layers = []
    for layer in mlp.layers:
        W = np.array([[float(w.data) for w in n.w] for n in layer.neurons], dtype=dtype).T
        b = np.array([float(n.b.data) for n in layer.neurons], dtype=dtype)
        layers.append((np.ascontiguousarray(W), b))
    return layers


# ------------------------------------------------------------------- the NumPy floor
class NumpyMLP:
    """The MLP with its forward and backward written out by hand: no graph, no autograd.

    ``params`` is [W1, b1, W2, b2, ...]; ``grads`` matches it after a backward.
    """

    def __init__(self, layers: Layers) -> None:
        self.params = [a.copy() for pair in layers for a in pair]
        self.grads = [np.zeros_like(p) for p in self.params]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0

    def _forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Logits, and each layer's input (the ReLU outputs backward needs)."""
        inputs = []
        h = x
        last = len(self.params) // 2 - 1
        for i in range(0, len(self.params), 2):
            inputs.append(h)
            h = h @ self.params[i] + self.params[i + 1]
            if i // 2 != last:
                h = np.maximum(h, 0.0)
        return h, inputs

    def _backward(self, dout: np.ndarray, inputs: list[np.ndarray]) -> None:
        """Given d(loss)/d(logits), fill grads: dW = h.T @ d, db = sum(d), and through a
        ReLU the gradient passes where its output was positive."""
        for i in reversed(range(0, len(self.params), 2)):
            h = inputs[i // 2]
            self.grads[i] = h.T @ dout
            self.grads[i + 1] = dout.sum(axis=0)
            if i:
                dout = (dout @ self.params[i].T) * (h > 0.0)

    def cross_entropy_step(self, x: np.ndarray, y: np.ndarray) -> float:
        """Forward, mean softmax cross-entropy, backward (d/dlogits = (softmax - onehot)/B)."""
        logits, inputs = self._forward(x)
        z = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        rows = np.arange(len(y))
        loss = float(np.mean(np.log(s[:, 0]) - z[rows, y]))
        d = e / s
        d[rows, y] -= 1.0
        d /= len(y)
        self._backward(d, inputs)
        return loss

    def svm_step(self, x: np.ndarray, y: np.ndarray) -> float:
        """Forward, mean(relu(1 - y*s)) + 1e-4 * sum(p**2), backward."""
        scores, inputs = self._forward(x)
        margins = 1.0 - y[:, None] * scores
        positive = margins > 0.0
        reg = sum(float(np.vdot(p, p)) for p in self.params)
        loss = float(np.mean(np.maximum(margins, 0.0))) + L2 * reg
        self._backward(-(y[:, None] * positive) / len(y), inputs)
        for p, g in zip(self.params, self.grads):
            g += (2.0 * L2) * p
        return loss

    def adam(self, lr: float) -> None:
        """torch.optim.Adam's update, in place."""
        self.t += 1
        beta1, beta2 = BETAS
        step_size = lr / (1.0 - beta1**self.t)
        correction2_sqrt = math.sqrt(1.0 - beta2**self.t)
        for p, g, m, v in zip(self.params, self.grads, self.m, self.v):
            m *= beta1
            m += (1.0 - beta1) * g
            v *= beta2
            v += (1.0 - beta2) * (g * g)
            p -= step_size * m / (np.sqrt(v) / correction2_sqrt + EPS)

    def sgd(self, lr: float) -> None:
        for p, g in zip(self.params, self.grads):
            p -= lr * g


def numpy_digits_epoch(net: NumpyMLP, X: np.ndarray, y: np.ndarray, batches) -> list[float]:
    losses = []
    for idx in batches:
        losses.append(net.cross_entropy_step(X[idx], y[idx]))
        net.adam(ADAM_LR)
    return losses


def numpy_moons_run(layers: Layers, X: np.ndarray, y: np.ndarray, steps: int) -> list[float]:
    net = NumpyMLP(layers)
    losses = []
    for k in range(steps):
        losses.append(net.svm_step(X, y))
        net.sgd(demo_lr(k))
    return losses


# ------------------------------------------------------------------------- PyTorch
def torch_mlp(layers: Layers) -> Any:
    import torch

    modules: list[Any] = []
    for i, (W, b) in enumerate(layers):
        linear = torch.nn.Linear(W.shape[0], W.shape[1], dtype=torch.from_numpy(W).dtype)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(W.T.copy()))
            linear.bias.copy_(torch.from_numpy(b))
        modules.append(linear)
        if i != len(layers) - 1:
            modules.append(torch.nn.ReLU())
    return torch.nn.Sequential(*modules)


def torch_digits_epoch(model: Any, opt: Any, X: Any, y: Any, batches) -> list[float]:
    import torch
    from torch.nn.functional import cross_entropy

    losses = []
    for idx in batches:
        i = torch.from_numpy(idx)
        loss = cross_entropy(model(X[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def torch_moons_run(layers: Layers, X: Any, y: Any, steps: int) -> list[float]:
    import torch

    model = torch_mlp(layers)
    params = list(model.parameters())
    losses = []
    for k in range(steps):
        scores = model(X)[:, 0]
        data_loss = torch.relu(1 - y * scores).mean()
        loss = data_loss + L2 * sum((p * p).sum() for p in params)
        model.zero_grad()
        loss.backward()
        lr = demo_lr(k)
        with torch.no_grad():
            for p in params:
                p -= lr * p.grad
        losses.append(loss.item())
    return losses


# ---------------------------------------------------------------- our tensor engine
def ours_mlp(layers: Layers) -> tensor_nn.MLP:
    """``tensor_nn.MLP`` (torch's layout: weight (out, in)) holding the given weights."""
    sizes = [layers[0][0].shape[0]] + [W.shape[1] for W, _ in layers]
    model = tensor_nn.MLP(sizes[0], sizes[1:], seed=0, dtype=layers[0][0].dtype)
    for linear, (W, b) in zip(model.layers, layers):
        linear.weight.data[...] = W.T
        linear.bias.data[...] = b
    return model


def ours_digits_epoch(model: tensor_nn.MLP, opt: Adam, X: Tensor, y, batches) -> list[float]:
    """One epoch, each step inside ``collection_paused()`` as the training loop runs it;
    the batch is ``X[idx]`` of the whole set as a Tensor, as torch's loop indexes its."""
    losses = []
    for idx in batches:
        with collection_paused():
            loss = F.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.data))
            del loss  # drop the graph before the collector is back on
    return losses


def ours_moons_run(layers: Layers, X, y, steps: int) -> list[float]:
    """``steps`` SGD steps written as a user of this engine writes them: the loss is
    ``F.svm_loss`` (one node) of the model's scores; the L2 term reaches the gradients
    through ``SGD(weight_decay=2 * L2)`` (the gradient of L2 * sum(p*p) is 2 * L2 * p,
    torch's way of adding it) and its value, L2 * sum of np.vdot(p, p) as the floor
    computes it, is added to the reported loss; ``opt.zero_grad()`` clears the gradients.
    Each step runs inside ``collection_paused()`` as the training loop runs it."""
    model = ours_mlp(layers)
    params = model.parameters()
    opt = SGD(params, lr=demo_lr(0), weight_decay=2.0 * L2)
    x, y_col = Tensor(X), Tensor(y[:, None])
    losses = []
    for k in range(steps):
        with collection_paused():
            data_loss = F.svm_loss(model(x), y_col)
            opt.zero_grad()
            data_loss.backward()
            penalty = L2 * sum(float(np.vdot(p.data, p.data)) for p in params)
            opt.param_groups[0]["lr"] = demo_lr(k)
            opt.step()
            losses.append(float(data_loss.data) + penalty)
            del data_loss
    return losses


# ------------------------------------------------------------------------- the run
def _interleaved(runners: dict[str, Callable[[int], Any]], repeats: int) -> dict[str, list[float]]:
    """Time each runner ``repeats`` times in CPU time (``process_time``: other processes on
    the machine are not billed), alternating between them; runner(r) gets the repeat's
    index."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    for r in range(repeats):
        for name, fn in runners.items():
            gc.collect()
            start = time.process_time()
            fn(r)
            times[name].append(time.process_time() - start)
    return times


THREADS = 1


def run(sizes: Sizes) -> dict[str, Any]:
    """One thread each for NumPy's BLAS and torch: the times are CPU time, which an idle
    worker thread spinning for work would inflate, and on a shared two-core machine extra
    threads mostly measure the neighbours (these arrays are too small to gain from them)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=THREADS, user_api="blas"):
        return _run(sizes)


def _run(sizes: Sizes) -> dict[str, Any]:
    import torch

    torch.set_num_threads(THREADS)
    threads = int(numpy_blas().get("threads") or 1)
    dtype = sizes.dtype
    info = {
        "title": "Tensor engine vs PyTorch CPU vs NumPy floor",
        "dtype": dtype,
        "numpy_blas_threads": threads,
        "torch_threads": torch.get_num_threads(),
    }

    # ---- digits: one epoch = every mini-batch of the training split (or the first few)
    X, y = digits_data(dtype)
    Xt, yt, Xours = torch.from_numpy(X), torch.from_numpy(y), Tensor(X)
    digits: dict[int, tuple[dict[str, list[float]], dict[str, list[float]], int]] = {}
    for batch in DIGITS_BATCHES:
        epochs = epoch_batches(len(y), sizes.tensor_repeats + 1, sizes.digits_batches, batch)
        layers = init_layers(DIGITS_SIZES, dtype)
        tmodel = torch_mlp(layers)
        topt = torch.optim.Adam(tmodel.parameters(), lr=ADAM_LR, betas=BETAS, eps=EPS)
        npnet = NumpyMLP(layers)
        omodel = ours_mlp(layers)
        oopt = Adam(omodel.parameters(), lr=ADAM_LR, betas=BETAS, eps=EPS)
        epoch_runners: dict[str, Callable[[list[np.ndarray]], list[float]]] = {
            "torch": lambda b, m=tmodel, o=topt: torch_digits_epoch(m, o, Xt, yt, b),
            "numpy floor": lambda b, n=npnet: numpy_digits_epoch(n, X, y, b),
            "ours": lambda b, m=omodel, o=oopt: ours_digits_epoch(m, o, Xours, y, b),
        }
        log(f"tensor: digits batch {batch}, warm-up epoch ({len(epochs[0])} batches)")
        first = {name: fn(epochs[0]) for name, fn in epoch_runners.items()}
        log(f"tensor: digits batch {batch}, {sizes.tensor_repeats} timed epochs, interleaved")
        times = _interleaved(
            {name: (lambda r, fn=fn, e=epochs: fn(e[r + 1])) for name, fn in epoch_runners.items()},
            sizes.tensor_repeats,
        )
        digits[batch] = (times, first, len(epochs[0]))

    # ---- moons: micrograd's demo as tensors, full batch, time per step
    Xm, ym = demo_data()
    Xm, ym = Xm.astype(dtype), ym.astype(dtype)
    mlayers = micrograd_layers(dtype)
    Xmt, ymt = torch.from_numpy(Xm), torch.from_numpy(ym)
    steps = sizes.moons_steps
    moon_runners: dict[str, Callable[[], list[float]]] = {
        "torch": lambda: torch_moons_run(mlayers, Xmt, ymt, steps),
        "numpy floor": lambda: numpy_moons_run(mlayers, Xm, ym, steps),
        "ours": lambda: ours_moons_run(mlayers, Xm, ym, steps),
    }
    moon_curves = {name: fn() for name, fn in moon_runners.items()}
    log(f"tensor: moons, {steps} steps x {sizes.tensor_repeats} repeats each, interleaved")
    moons_times = _interleaved(
        {name: (lambda r, fn=fn: fn()) for name, fn in moon_runners.items()},
        sizes.tensor_repeats,
    )

    rows = []
    workloads = [
        (f"digits batch {batch}", times, first, 1.0) for batch, (times, first, _) in digits.items()
    ]
    for workload, times, curves, unit in [
        *workloads,
        ("moons", moons_times, moon_curves, 1.0 / steps),
    ]:
        group = [
            {
                "workload": workload,
                "engine": name,
                "seconds": summarize([t * unit for t in times[name]]),
                "max_abs_loss_diff_vs_torch": max_abs_diff(curves[name], curves["torch"]),
                "first_loss": curves[name][0],
            }
            for name in ENGINES
        ]
        by_name = {row["engine"]: row["seconds"]["median"] for row in group}
        for row in group:
            row["ratio_vs_torch"] = row["seconds"]["median"] / by_name["torch"]
            row["ratio_vs_numpy_floor"] = row["seconds"]["median"] / by_name["numpy floor"]
        rows += group
    info.update(
        {
            "digits": {
                "layers": list(DIGITS_SIZES),
                "batches": list(DIGITS_BATCHES),
                "train_samples": len(y),
                "batches_per_epoch": {b: n for b, (_, _, n) in digits.items()},
                "optimizer": f"Adam lr={ADAM_LR}",
                "unit": "seconds per epoch",
            },
            "moons": {
                "layers": list(MOONS_SIZES),
                "samples": len(ym),
                "steps": steps,
                "unit": "seconds per step",
                "demo_step0_loss": DEMO_STEP0_LOSS,
            },
            "rows": rows,
        }
    )
    return info
