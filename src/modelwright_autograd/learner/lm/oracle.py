"""The LM checks' reference: the same ops, makemore's MLP, nanoGPT's GPT and AdamW in
PyTorch float64, from the weights the grader sets (``cases``). Imported only when torch is.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .cases import GPT_CONFIG, MODEL_CONFIGS, OpCase


def run_op(case: OpCase) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The case's output and the gradient of (out * W).sum() for each of its tensors."""
    leaves = {
        k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in case.tensors.items()
    }
    scope: dict[str, Any] = {
        "torch": torch,
        "F": F,
        "np": np,
        "math": math,
        **case.arrays,
        **leaves,
    }
    exec(case.torch_code, scope)
    out = scope["out"]
    (out * torch.tensor(case.weight)).sum().backward()
    grads = {
        k: t.grad.numpy() if t.grad is not None else np.zeros(t.shape) for k, t in leaves.items()
    }
    return out.detach().numpy(), grads


# ---------------------------------------------------------------------- the models
class _Masks:
    """nanoGPT's dropouts as given masks, taken in call order (none given: no dropout,
    nanoGPT's default of 0); set on every module of a model by ``run_model``."""

    def __init__(self, masks: list[np.ndarray] | None = None) -> None:
        self.left = [torch.from_numpy(m) for m in masks or []]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.left.pop(0) if self.left else x


_NO_DROPOUT = _Masks()


class MLP(nn.Module):
    """makemore's MLP, as in makemore.py."""

    def __init__(self, c: dict[str, int]) -> None:
        super().__init__()
        self.block_size, self.vocab_size = c["block_size"], c["vocab_size"]
        self.wte = nn.Embedding(c["vocab_size"] + 1, c["n_embd"])
        self.mlp = nn.Sequential(
            nn.Linear(c["block_size"] * c["n_embd"], c["n_embd2"]),
            nn.Tanh(),
            nn.Linear(c["n_embd2"], c["vocab_size"]),
        )

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        embs = []
        for _ in range(self.block_size):
            embs.append(self.wte(idx))
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size
        logits = self.mlp(torch.cat(embs, -1))
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class CausalSelfAttention(nn.Module):
    """nanoGPT's (its slow path, which is its fast path's arithmetic)."""

    drop = _NO_DROPOUT

    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["bias"])
        self.n_head = c["n_head"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (self.drop(att) @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.drop(self.c_proj(y))


class FeedForward(nn.Module):
    drop = _NO_DROPOUT

    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], bias=c["bias"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], bias=c["bias"])
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], bias=c["bias"])
        self.mlp = FeedForward(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT with its names; dropout (after the embeddings, on the attention
    weights, after each c_proj) only as given masks."""

    drop = _NO_DROPOUT

    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
                wpe=nn.Embedding(c["block_size"], c["n_embd"]),
                h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
                ln_f=nn.LayerNorm(c["n_embd"], bias=c["bias"]),
            )
        )
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        tr = self.transformer
        x = self.drop(tr.wte(idx) + tr.wpe(torch.arange(idx.size(1))))
        for block in tr.h:
            x = block(x)
        logits = self.lm_head(tr.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


MODULES = {
    **{k: partial(GPT if k.startswith("GPT") else MLP, c) for k, c in MODEL_CONFIGS.items()},
    "LayerNorm": lambda: nn.LayerNorm(GPT_CONFIG["n_embd"]),
    "CausalSelfAttention": lambda: CausalSelfAttention(GPT_CONFIG),
    "FeedForward": lambda: FeedForward(GPT_CONFIG),
    "Block": lambda: Block(GPT_CONFIG),
}


def parameter_shapes(kind: str) -> dict[str, tuple[int, ...]]:
    """torch's parameter names and shapes of one of MODULES, in torch's order."""
    return {name: tuple(p.shape) for name, p in MODULES[kind]().named_parameters()}


def build(kind: str, weights: dict[str, np.ndarray]) -> nn.Module:
    module = MODULES[kind]().double()
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.from_numpy(weights[name]))
    return module


def run_module(
    kind: str, weights: dict[str, np.ndarray], x: np.ndarray, weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A part of the GPT on x: its output, x's gradient and each parameter's, of
    (out * weight).sum()."""
    module = build(kind, weights)
    xt = torch.tensor(x, requires_grad=True)
    out = module(xt)
    (out * torch.from_numpy(weight)).sum().backward()
    grads = {n: p.grad.numpy().copy() for n, p in module.named_parameters()}
    return out.detach().numpy(), xt.grad.numpy(), grads


def run_model(
    kind: str,
    weights: dict[str, np.ndarray],
    idx: np.ndarray,
    targets: np.ndarray,
    masks: list[np.ndarray] | None = None,
) -> tuple[float, dict[str, np.ndarray]]:
    """The loss on one batch and every parameter's gradient, by name; with ``masks``, the
    GPT's dropouts multiply by them in nanoGPT's order."""
    model = build(kind, weights)
    drop = _Masks(masks)
    for module in model.modules():
        module.drop = drop
    loss = model(torch.from_numpy(idx), torch.from_numpy(targets))
    loss.backward()
    return float(loss.detach()), {n: p.grad.numpy().copy() for n, p in model.named_parameters()}


def logits(kind: str, weights: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    """The model's logits for ``idx``, every position's (called without targets)."""
    with torch.no_grad():
        return build(kind, weights)(torch.from_numpy(idx)).numpy()


def optimizer(model: nn.Module, settings: dict[str, Any], decay_all: bool = False) -> Any:
    """nanoGPT's configure_optimizers: decay on the parameters of 2 dimensions or more."""
    params = list(model.parameters())
    groups = [
        {
            "params": [p for p in params if decay_all or p.dim() >= 2],
            "weight_decay": settings["weight_decay"],
        },
        {"params": [p for p in params if not decay_all and p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=settings["lr"], betas=tuple(settings["betas"]), eps=1e-8)


def train(
    kind: str,
    weights: dict[str, np.ndarray],
    batches: list[tuple[np.ndarray, np.ndarray]],
    settings: dict[str, Any],
    decay_all: bool = False,
    scheduled: bool = True,
) -> tuple[list[float], dict[str, np.ndarray]]:
    """The loss before each step, and the parameters after the first step; each step's
    learning rate (``settings["rates"]``, when given) set on every param_group first, as
    nanoGPT's loop does (``scheduled=False``: the constructor's lr throughout)."""
    model = build(kind, weights)
    opt = optimizer(model, settings, decay_all)
    losses: list[float] = []
    first: dict[str, np.ndarray] = {}
    for step, (idx, targets) in enumerate(batches):
        for group in opt.param_groups if scheduled and "rates" in settings else ():
            group["lr"] = settings["rates"][step]
        loss = model(torch.from_numpy(idx), torch.from_numpy(targets))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if step == 0:
            first = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    return losses, first


# ---------------------------------------------------------------------- attention's bugs
def attention_with(weights: dict[str, np.ndarray], x: np.ndarray, bug: str) -> np.ndarray:
    """nanoGPT's attention on x, with one classic bug (or "" for none)."""
    w = {n: torch.from_numpy(a) for n, a in weights.items()}
    xt = torch.from_numpy(x)
    b, t, c = xt.shape
    nh = GPT_CONFIG["n_head"]
    hs = c // nh
    q, k, v = F.linear(xt, w["c_attn.weight"], w.get("c_attn.bias")).split(c, dim=2)
    if bug == "heads without transpose":
        q, k, v = (z.reshape(b, nh, t, hs) for z in (q, k, v))
    else:
        q, k, v = (z.view(b, t, nh, hs).transpose(1, 2) for z in (q, k, v))
    scale = {"no scale": 1.0, "scale 1/hs": 1.0 / hs, "scale 1/sqrt(C)": 1.0 / math.sqrt(c)}
    att = (q @ k.transpose(-2, -1)) * scale.get(bug, 1.0 / math.sqrt(hs))
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
    if bug == "mask after softmax":
        att = F.softmax(att, dim=-1).masked_fill(mask, 0.0)
    elif bug == "no mask":
        att = F.softmax(att, dim=-1)
    elif bug == "mask keeps the future":
        att = F.softmax(att.masked_fill(mask.T, float("-inf")), dim=-1)
    else:
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
    y = att @ v
    y = (
        y.reshape(b, t, c)
        if bug == "merge without transpose"
        else y.transpose(1, 2).reshape(b, t, c)
    )
    return F.linear(y, w["c_proj.weight"], w.get("c_proj.bias")).numpy()


ATTENTION_BUGS = {
    "no scale": "the scores are not scaled: multiply q @ k^T by 1 / sqrt(head size) before softmax",
    "scale 1/hs": "the scores are divided by the head size; the scale is 1 / sqrt(head size)",
    "scale 1/sqrt(C)": "the scale uses n_embd; it is 1 / sqrt(head size), n_embd // n_head",
    "mask after softmax": (
        "the mask is applied after softmax: the future is zeroed but the rows no longer sum "
        "to 1; fill -inf into the scores before softmax"
    ),
    "no mask": "no causal mask: each position sees the later ones; fill -inf above the diagonal",
    "mask keeps the future": (
        "the mask hides the past and shows the future: np.triu(..., 1) is the future"
    ),
    "heads without transpose": (
        "the heads are split by reshape alone: (B, T, C) -> (B, T, n_head, hs), then transpose "
        "to (B, n_head, T, hs); a reshape straight to (B, n_head, T, hs) mixes positions"
    ),
    "merge without transpose": (
        "the heads are merged by reshape alone: transpose (B, n_head, T, hs) back to "
        "(B, T, n_head, hs) before reshaping to (B, T, C)"
    ),
}


def attention_bug(weights: dict[str, np.ndarray], x: np.ndarray, got: np.ndarray) -> str:
    """The classic attention bug whose output ``got`` is, or ""."""
    for bug, words in ATTENTION_BUGS.items():
        want = attention_with(weights, x, bug)
        if got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6):
            return words
    return ""
