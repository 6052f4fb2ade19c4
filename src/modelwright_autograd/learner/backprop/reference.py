"""PyTorch's side of the backprop-by-hand check: the same forward as the starter's, step by
step in float64, its autograd gradients, and each step's own vector-Jacobian product.

``FORWARD`` lists the steps (the tensor made, the tensors read, the op); ``GRADIENTS`` the
learner's functions in the order the starter's TODOs come. ``local`` is what judges one
function on its own: the gradient its step should return given the learner's gradients of
the tensors after it, so a wrong tensor is told apart from one that only inherits a wrong
gradient, and each path of a tensor used twice is known (the overwritten-not-added bug).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...lm.corpus import builtin_path

VOCAB, BLOCK, EMBED, HIDDEN, BATCH = 27, 3, 10, 64, 32  # the starter's sizes
EPS = 1e-5
PARAMETERS = ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias")


@dataclass(frozen=True)
class Step:
    out: str
    reads: tuple[str, ...]
    op: Callable[..., Any]
    words: str  # the forward line, for the report


def _loss(logprobs: Any, Yb: Any) -> Any:
    return -logprobs[range(logprobs.shape[0]), Yb].mean()


FORWARD = [
    Step("emb", ("C", "Xb"), lambda C, Xb: C[Xb], "emb = C[Xb]"),
    Step("embcat", ("emb",), lambda e: e.reshape(e.shape[0], -1), "embcat = emb.reshape(n, -1)"),
    Step("hprebn", ("embcat", "W1", "b1"), lambda e, W, b: e @ W + b, "hprebn = embcat @ W1 + b1"),
    Step(
        "bnmeani",
        ("hprebn",),
        lambda h: h.sum(0, keepdim=True) / h.shape[0],
        "bnmeani = hprebn.sum(0, keepdims=True) / n",
    ),
    Step("bndiff", ("hprebn", "bnmeani"), lambda h, m: h - m, "bndiff = hprebn - bnmeani"),
    Step("bndiff2", ("bndiff",), lambda x: x**2, "bndiff2 = bndiff**2"),
    Step(
        "bnvar",
        ("bndiff2",),
        lambda x: x.sum(0, keepdim=True) / (x.shape[0] - 1),
        "bnvar = bndiff2.sum(0, keepdims=True) / (n - 1)",
    ),
    Step("bnvar_inv", ("bnvar",), lambda v: (v + EPS) ** -0.5, "bnvar_inv = (bnvar + EPS)**-0.5"),
    Step("bnraw", ("bndiff", "bnvar_inv"), lambda x, i: x * i, "bnraw = bndiff * bnvar_inv"),
    Step(
        "hpreact",
        ("bngain", "bnraw", "bnbias"),
        lambda g, r, b: g * r + b,
        "hpreact = bngain * bnraw + bnbias",
    ),
    Step("h", ("hpreact",), lambda x: x.tanh(), "h = tanh(hpreact)"),
    Step("logits", ("h", "W2", "b2"), lambda h, W, b: h @ W + b, "logits = h @ W2 + b2"),
    Step(
        "logit_maxes",
        ("logits",),
        lambda x: x.max(1, keepdim=True).values,
        "logit_maxes = logits.max(1, keepdims=True)",
    ),
    Step(
        "norm_logits",
        ("logits", "logit_maxes"),
        lambda x, m: x - m,
        "norm_logits = logits - logit_maxes",
    ),
    Step("counts", ("norm_logits",), lambda x: x.exp(), "counts = exp(norm_logits)"),
    Step(
        "counts_sum",
        ("counts",),
        lambda c: c.sum(1, keepdim=True),
        "counts_sum = counts.sum(1, keepdims=True)",
    ),
    Step("counts_sum_inv", ("counts_sum",), lambda s: s**-1, "counts_sum_inv = counts_sum**-1"),
    Step(
        "probs", ("counts", "counts_sum_inv"), lambda c, i: c * i, "probs = counts * counts_sum_inv"
    ),
    Step("logprobs", ("probs",), lambda p: p.log(), "logprobs = log(probs)"),
    Step("loss", ("logprobs", "Yb"), _loss, "loss = -logprobs[range(n), Yb].mean()"),
]
MADE_BY = {step.out: step for step in FORWARD}
#: The learner's gradient functions in TODO order: the forward's tensors, last first.
GRADIENTS = [
    "logprobs", "probs", "counts_sum_inv", "counts_sum", "counts", "norm_logits",
    "logit_maxes", "logits", "h", "W2", "b2", "hpreact", "bngain", "bnbias", "bnraw",
    "bnvar_inv", "bnvar", "bndiff2", "bndiff", "bnmeani", "hprebn", "embcat", "W1", "b1",
    "emb", "C",
]  # fmt: skip
#: The fused forms: (function, the tensor whose gradient it gives, the gradients it reads).
FUSED = [("dlogits_fused", "logits", ()), ("dhprebn_fused", "hprebn", ("hpreact",))]
#: The functions backward_fused uses (the starter's FUSED list).
FUSED_PASS = [
    "dlogits_fused", "dh", "dW2", "db2", "dhpreact", "dbngain", "dbnbias", "dhprebn_fused",
    "dembcat", "dW1", "db1", "demb", "dC",
]  # fmt: skip
INTEGER = ("Xb", "Yb")


def consumers(name: str) -> list[Step]:
    """The steps that read ``name`` (two for a tensor used twice)."""
    return [step for step in FORWARD if name in step.reads]


def init_params(seed: int) -> dict[str, np.ndarray]:
    """Parameters scaled as the starter's init_params scales them (not the same numbers:
    the check's own, sent to the learner's forward and to PyTorch's)."""
    rng = np.random.default_rng(seed)
    fan_in = BLOCK * EMBED
    return {
        "C": rng.standard_normal((VOCAB, EMBED)),
        "W1": rng.standard_normal((fan_in, HIDDEN)) * (5 / 3) / fan_in**0.5,
        "b1": rng.standard_normal(HIDDEN) * 0.1,
        "W2": rng.standard_normal((HIDDEN, VOCAB)) * 0.1,
        "b2": rng.standard_normal(VOCAB) * 0.1,
        "bngain": 1.0 + 0.1 * rng.standard_normal((1, HIDDEN)),
        "bnbias": 0.1 * rng.standard_normal((1, HIDDEN)),
    }


@functools.cache
def names_examples() -> tuple[np.ndarray, np.ndarray]:
    """makemore's examples from the shipped names: each character with the BLOCK before it
    (0 is '.', a name's start and end)."""
    stoi = {ch: i for i, ch in enumerate(".abcdefghijklmnopqrstuvwxyz")}
    X, Y = [], []
    for word in builtin_path("names").read_text(encoding="utf-8").split():
        context = [0] * BLOCK
        for ch in word + ".":
            X.append(context)
            Y.append(stoi[ch])
            context = [*context[1:], stoi[ch]]
    return np.array(X, dtype=np.int64), np.array(Y, dtype=np.int64)


def batches(count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` random batches of BATCH examples of the names."""
    X, Y = names_examples()
    rng = np.random.default_rng(seed)
    picks = [rng.integers(0, len(X), BATCH) for _ in range(count)]
    return [(X[i], Y[i]) for i in picks]


class Reference:
    """The forward in PyTorch float64 on given parameters and batch: every tensor's value
    and its gradient by autograd."""

    def __init__(self, params: dict[str, np.ndarray], Xb: np.ndarray, Yb: np.ndarray) -> None:
        import torch

        self.torch = torch
        self.params, self.Xb, self.Yb = params, Xb, Yb
        t: dict[str, Any] = {
            name: torch.tensor(a, dtype=torch.float64, requires_grad=True)
            for name, a in params.items()
        }
        t["Xb"], t["Yb"] = torch.tensor(Xb), torch.tensor(Yb)
        for step in FORWARD:
            t[step.out] = step.op(*(t[r] for r in step.reads))
            t[step.out].retain_grad()
        t["loss"].backward()
        self.values = {k: v.detach().numpy() for k, v in t.items()}
        self.grads = {k: v.grad.numpy() for k, v in t.items() if k not in INTEGER and k != "loss"}

    def parts(self, name: str, upstream: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The gradient reaching ``name`` through each step that reads it, given the
        gradients ``upstream`` of those steps' outputs (the learner's): each step's
        vector-Jacobian product at this forward's values, the other paths held fixed.
        KeyError names a missing upstream, ValueError one of the wrong shape."""
        torch = self.torch
        out = {}
        for step in consumers(name):
            args = [
                torch.tensor(self.values[r], requires_grad=r not in INTEGER) for r in step.reads
            ]
            made = step.op(*args)
            if step.out == "loss":
                g = torch.ones((), dtype=torch.float64)
            else:
                given = upstream[step.out]
                if given.shape != tuple(made.shape):
                    raise ValueError(step.out)
                g = torch.tensor(given, dtype=torch.float64)
            (grad,) = torch.autograd.grad(made, [args[step.reads.index(name)]], g)
            out[step.out] = grad.numpy()
        return out

    def fused_local(self, name: str, upstream: dict[str, np.ndarray]) -> np.ndarray:
        """The fused form's gradient given the learner's gradient it reads: dlogits needs
        none; dhprebn is batch norm's whole VJP from the learner's dhpreact."""
        torch = self.torch
        if name == "logits":
            return self.grads["logits"]
        given = upstream["hpreact"]
        if given.shape != self.values["hpreact"].shape:
            raise ValueError("hpreact")
        t = {k: torch.tensor(self.values[k]) for k in ("bngain", "bnbias")}
        t["hprebn"] = torch.tensor(self.values["hprebn"], requires_grad=True)
        for step in FORWARD[3:10]:  # bnmeani .. hpreact
            t[step.out] = step.op(*(t[r] for r in step.reads))
        (grad,) = torch.autograd.grad(t["hpreact"], [t["hprebn"]], torch.tensor(given))
        return grad.numpy()


@functools.cache
def torch_training(steps: int, seed: int, batch_seed: int, lr: float) -> list[float]:
    """PyTorch's losses for ``steps`` steps of plain SGD with autograd's gradients, from
    ``init_params(seed)`` on ``batches(steps, batch_seed)`` (kept: the same every check)."""
    params = init_params(seed)
    losses = []
    for Xb, Yb in batches(steps, batch_seed):
        ref = Reference(params, Xb, Yb)
        losses.append(float(ref.values["loss"]))
        params = {k: p - lr * ref.grads[k] for k, p in params.items()}
    return losses
