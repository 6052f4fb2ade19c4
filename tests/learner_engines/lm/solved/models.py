"""Language models on your Tensor: makemore's MLP and nanoGPT's GPT, under their parameter
names (check compares every gradient with torch's by name), and nanoGPT's AdamW.

A model maps token ids idx (B, T), an integer NumPy array, to logits (B, T, vocab); called
with targets (B, T) it also returns the mean cross-entropy: logits, loss = model(idx, targets).
"""

import math
from dataclasses import dataclass

import numpy as np
from engine import Tensor, cross_entropy
from lm_ops import cat, dropout, embedding, gelu, layer_norm, masked_fill, softmax, split


class Module:
    """named_parameters() walks the attributes as torch does: a Tensor is a parameter, a
    Module, list or dict is walked with its name (or index, or key) as a prefix, and a
    Tensor met twice (a tied weight) is listed once, under its first name."""

    training = True

    def named_parameters(self, prefix="", seen=None):
        seen = set() if seen is None else seen
        for name, value in vars(self).items():
            yield from _named(value, prefix + name, seen)

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def zero_grad(self):
        for p in self.parameters():
            p.grad = np.zeros_like(p.data)

    def train(self, mode=True):
        for module in _modules(self):
            module.training = mode
        return self

    def eval(self):
        return self.train(False)


def _named(value, name, seen):
    if isinstance(value, Tensor):
        if id(value) not in seen:
            seen.add(id(value))
            yield name, value
    elif isinstance(value, Module):
        yield from value.named_parameters(name + ".", seen)
    elif isinstance(value, (list, dict)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            yield from _named(item, f"{name}.{key}", seen)


def _modules(value):
    if isinstance(value, Module):
        yield value
        value = list(vars(value).values())
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from _modules(item)


class Linear(Module):
    """torch's nn.Linear: weight (out, in), y = x @ weight.T + bias."""

    def __init__(self, nin, nout, bias=True):
        bound = 1.0 / math.sqrt(nin)
        self.weight = Tensor(np.random.uniform(-bound, bound, (nout, nin)))
        self.bias = Tensor(np.random.uniform(-bound, bound, nout)) if bias else None

    def __call__(self, x):
        out = x @ self.weight.T
        return out if self.bias is None else out + self.bias


class Embedding(Module):
    def __init__(self, num, dim):
        self.weight = Tensor(np.random.randn(num, dim))

    def __call__(self, idx):
        return embedding(self.weight, idx)


class LayerNorm(Module):
    def __init__(self, dim, bias=True):
        self.weight = Tensor(np.ones(dim))
        self.bias = Tensor(np.zeros(dim)) if bias else None

    def __call__(self, x):
        return layer_norm(x, self.weight, self.bias)


# ---------------------------------------------------------------------- makemore's MLP
@dataclass
class MLPConfig:
    vocab_size: int = 27
    block_size: int = 3  # how many previous tokens the MLP sees
    n_embd: int = 8
    n_embd2: int = 32  # the hidden layer's width


class MLP(Module):
    """makemore's MLP: the embeddings of the block_size previous tokens (the blank token,
    id vocab_size, before the start), concatenated, a tanh hidden layer, the logits.
    Parameters: wte.weight, mlp.0.weight, mlp.0.bias, mlp.2.weight, mlp.2.bias (torch's
    Sequential names its Tanh mlp.1)."""

    def __init__(self, config):
        self.config = config
        c = config
        self.wte = Embedding(c.vocab_size + 1, c.n_embd)
        self.mlp = {
            "0": Linear(c.block_size * c.n_embd, c.n_embd2),
            "2": Linear(c.n_embd2, c.vocab_size),
        }

    def __call__(self, idx, targets=None):
        idx = np.array(idx)
        embs = []
        for _ in range(self.config.block_size):
            embs.append(self.wte(idx))
            idx = np.roll(idx, 1, axis=1)
            idx[:, 0] = self.config.vocab_size
        x = cat(embs, -1)
        logits = self.mlp["2"](self.mlp["0"](x).tanh())
        return logits, None if targets is None else _loss(logits, targets)


def _loss(logits, targets):
    b, t, v = logits.shape
    return cross_entropy(logits.reshape(b * t, v), np.asarray(targets).reshape(b * t))


# ---------------------------------------------------------------------- nanoGPT's GPT
@dataclass
class GPTConfig:
    """nanoGPT's, with its defaults (GPT-2's sizes): give every size you want."""

    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(Module):
    def __init__(self, config):
        self.c_attn = Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head = config.n_head
        self.dropout = config.dropout

    def __call__(self, x):
        b, t, c = x.shape
        nh, hs = self.n_head, c // self.n_head
        q, k, v = split(self.c_attn(x), c, dim=2)
        q = q.reshape(b, t, nh, hs).transpose(0, 2, 1, 3)  # (B, nh, T, hs)
        k = k.reshape(b, t, nh, hs).transpose(0, 2, 1, 3)
        v = v.reshape(b, t, nh, hs).transpose(0, 2, 1, 3)
        att = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hs))
        att = masked_fill(att, np.triu(np.ones((t, t), dtype=bool), 1), -np.inf)
        att = dropout(softmax(att, dim=-1), self.dropout, self.training)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
        return dropout(self.c_proj(y), self.dropout, self.training)


class FeedForward(Module):
    """nanoGPT's MLP: c_fc (4x wider), GELU, c_proj."""

    def __init__(self, config):
        self.c_fc = Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = config.dropout

    def __call__(self, x):
        return dropout(self.c_proj(gelu(self.c_fc(x))), self.dropout, self.training)


class Block(Module):
    def __init__(self, config):
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = FeedForward(config)

    def __call__(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(Module):
    """nanoGPT's GPT: token and position embeddings, n_layer blocks, a final layer norm, and
    a head tied to the token embedding (lm_head.weight is transformer.wte.weight)."""

    def __init__(self, config):
        self.config = config
        c = config
        self.transformer = {
            "wte": Embedding(c.vocab_size, c.n_embd),
            "wpe": Embedding(c.block_size, c.n_embd),
            "h": [Block(c) for _ in range(c.n_layer)],
            "ln_f": LayerNorm(c.n_embd, bias=c.bias),
        }
        self.lm_head = Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.transformer["wte"].weight
        for name, p in self.named_parameters():  # nanoGPT's init, which check compares
            if p.data.ndim == 2:  # matrices, embeddings: N(0, 0.02), residual ones smaller
                std = 0.02 / math.sqrt(2 * c.n_layer) if name.endswith("c_proj.weight") else 0.02
                p.data[...] = np.random.normal(0.0, std, p.data.shape)
            elif name.endswith("bias"):
                p.data[...] = 0.0

    def __call__(self, idx, targets=None):
        idx = np.asarray(idx)
        tr = self.transformer
        x = tr["wte"](idx) + tr["wpe"](np.arange(idx.shape[1]))
        x = dropout(x, self.config.dropout, self.training)
        for block in tr["h"]:
            x = block(x)
        logits = self.lm_head(tr["ln_f"](x))
        return logits, None if targets is None else _loss(logits, targets)


# ---------------------------------------------------------------------- training
class AdamW:
    """torch.optim.AdamW over parameter groups [{"params": [...], "weight_decay": wd}]; each
    group keeps its own "lr" (lr unless given), which nanoGPT's loop sets every step."""

    def __init__(self, param_groups, lr, betas=(0.9, 0.99), eps=1e-8):
        self.param_groups = [{"lr": lr, **group} for group in param_groups]
        self.betas, self.eps = betas, eps
        self.t = 0
        params = [p for group in param_groups for p in group["params"]]
        self.m = {id(p): np.zeros_like(p.data) for p in params}
        self.v = {id(p): np.zeros_like(p.data) for p in params}

    def zero_grad(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = np.zeros_like(p.data)

    def step(self):
        self.t += 1
        b1, b2 = self.betas
        for group in self.param_groups:
            for p in group["params"]:
                m, v = self.m[id(p)], self.v[id(p)]
                lr = group["lr"]
                p.data *= 1.0 - lr * group["weight_decay"]
                m[...] = b1 * m + (1 - b1) * p.grad
                v[...] = b2 * v + (1 - b2) * p.grad**2
                m_hat = m / (1 - b1**self.t)
                v_hat = v / (1 - b2**self.t)
                p.data -= lr * m_hat / (np.sqrt(v_hat) + self.eps)


def configure_optimizers(model, weight_decay, learning_rate, betas):
    """nanoGPT's: weight decay on the 2-D weights (matrices, embeddings), none on biases
    and layer norms' gains."""
    params = model.parameters()
    groups = [
        {"params": [p for p in params if p.data.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.data.ndim < 2], "weight_decay": 0.0},
    ]
    return AdamW(groups, learning_rate, betas)
