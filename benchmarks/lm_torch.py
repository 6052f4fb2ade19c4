"""The language models again, written in PyTorch as makemore and nanoGPT write them: the
oracle the tests compare gradients and training steps with, the module an exported
checkpoint loads into, and the side the benchmark times ours against.

Parameter names are nanoGPT's and makemore's (``transformer.h.0.attn.c_attn.weight``,
``mlp.0.weight``, ``logits``), so ``load_state_dict`` takes our models' state dicts as
they are. Only this file and the tests import torch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class Bigram(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        v = cfg["vocab_size"]
        self.logits = nn.Parameter(torch.zeros((v, v)))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.logits[idx]


class MLP(nn.Module):
    """makemore's MLP, line for line (the rolls and the blank token)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.block_size, self.vocab_size = cfg["block_size"], cfg["vocab_size"]
        self.wte = nn.Embedding(cfg["vocab_size"] + 1, cfg["n_embd"])
        self.mlp = nn.Sequential(
            nn.Linear(self.block_size * cfg["n_embd"], cfg["n_hidden"]),
            nn.Tanh(),
            nn.Linear(cfg["n_hidden"], self.vocab_size),
        )

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        embs = []
        for _ in range(self.block_size):
            embs.append(self.wte(idx))
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size
        return self.mlp(torch.cat(embs, -1))


class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        c, bias = cfg["n_embd"], cfg["bias"]
        self.c_attn = nn.Linear(c, 3 * c, bias=bias)
        self.c_proj = nn.Linear(c, c, bias=bias)
        self.n_head, self.n_embd, self.dropout = cfg["n_head"], c, cfg["dropout"]
        self.resid_dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class FeedForward(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        c, bias = cfg["n_embd"], cfg["bias"]
        self.c_fc = nn.Linear(c, 4 * c, bias=bias)
        self.gelu = nn.GELU(approximate=cfg["gelu"])
        self.c_proj = nn.Linear(4 * c, c, bias=bias)
        self.dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.mlp = FeedForward(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT (model.py), with makemore's transformer as the untied, biased,
    tanh-GELU case; nanoGPT's initialisation when cfg["init"] is "gpt2"."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.cfg = cfg
        c = cfg["n_embd"]
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(cfg["vocab_size"], c),
                wpe=nn.Embedding(cfg["block_size"], c),
                drop=nn.Dropout(cfg["dropout"]),
                h=nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])]),
                ln_f=LayerNorm(c, cfg["bias"]),
            )
        )
        self.lm_head = nn.Linear(c, cfg["vocab_size"], bias=False)
        if cfg["tie_weights"]:
            self.transformer.wte.weight = self.lm_head.weight
        if cfg["init"] == "gpt2":
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg["n_layer"]))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        tr = self.transformer
        x = tr.drop(tr.wte(idx) + tr.wpe(pos))
        for block in tr.h:
            x = block(x)
        return self.lm_head(tr.ln_f(x))

    def configure_optimizers(
        self, weight_decay: float, lr: float, betas: tuple[float, float]
    ) -> torch.optim.AdamW:
        """nanoGPT's: weight decay on the 2-D weights only."""
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)


MODELS = {"bigram": Bigram, "mlp": MLP, "transformer": GPT, "gpt": GPT}


def build(cfg: dict[str, Any], dtype: torch.dtype = torch.float32) -> nn.Module:
    return MODELS[cfg["kind"]](cfg).to(dtype)


def from_ours(model: Any, dtype: torch.dtype = torch.float64) -> nn.Module:
    """The torch twin of one of our language models, holding the same weights."""
    twin = build(model.config.to_dict(), dtype)
    state = {k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()}
    twin.load_state_dict(state)
    return twin


def loss(twin: nn.Module, x: np.ndarray, y: np.ndarray) -> torch.Tensor:
    logits = twin(torch.from_numpy(x))
    v = logits.size(-1)
    return F.cross_entropy(logits.view(-1, v), torch.from_numpy(y).view(-1), ignore_index=-1)
