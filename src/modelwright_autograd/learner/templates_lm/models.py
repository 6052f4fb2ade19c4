"""Language models on your Tensor: makemore's MLP and nanoGPT's GPT, under their parameter
names (check compares every gradient with torch's by name), and nanoGPT's AdamW.

A model maps token ids idx (B, T), an integer NumPy array, to logits (B, T, vocab); called
with targets (B, T) it also returns the mean cross-entropy: logits, loss = model(idx, targets).
The parameters, their names and shapes are given (torch's: Linear's weight is (out, in));
your job is TODOs 30 to 37, the forward passes and the optimizer. Check with:
modelwright-autograd check .
"""

import math
from dataclasses import dataclass

import numpy as np

from .engine import Tensor, cross_entropy
from .lm_ops import cat, dropout, embedding, gelu, layer_norm, masked_fill, softmax, split


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
        # TODO 30: x (..., in) times weight transposed, plus the bias when there is one.
        raise NotImplementedError("TODO 30: Linear's forward")


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
        # TODO 31: makemore's forward. For k in range(block_size): the embedding of idx
        # (each position's k-th previous token), then shift idx one place right
        # (np.roll(idx, 1, axis=1)) with the blank token, vocab_size, at position 0.
        # Concatenate the block_size embeddings on the last axis (cat), then
        # mlp["0"], tanh, mlp["2"]: the logits (B, T, vocab_size).
        # Return logits, _loss(logits, targets) (or None without targets).
        raise NotImplementedError("TODO 31: makemore's MLP forward")


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
        # TODO 32: nanoGPT's attention on x (B, T, C).
        #   q, k, v = split(self.c_attn(x), C, dim=2)
        #   each: reshape to (B, T, n_head, hs), then transpose to (B, n_head, T, hs);
        #   scores q @ k^T (transpose the last two axes) times 1 / sqrt(hs);
        #   the causal mask: masked_fill -inf where np.triu(np.ones((T, T), bool), 1), BEFORE
        #   softmax over the last axis; dropout(att, self.dropout, self.training);
        #   y = att @ v, transposed back to (B, T, n_head, hs), reshaped to (B, T, C);
        #   then c_proj and dropout.
        raise NotImplementedError("TODO 32: CausalSelfAttention's forward")


class FeedForward(Module):
    """nanoGPT's MLP: c_fc (4x wider), GELU, c_proj."""

    def __init__(self, config):
        self.c_fc = Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = config.dropout

    def __call__(self, x):
        # TODO 33: c_fc, gelu, c_proj, dropout.
        raise NotImplementedError("TODO 33: FeedForward's forward")


class Block(Module):
    def __init__(self, config):
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = FeedForward(config)

    def __call__(self, x):
        # TODO 34: pre-norm residuals: x + attn(ln_1(x)), then that + mlp(ln_2(of it)).
        raise NotImplementedError("TODO 34: Block's forward")


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
        # TODO 35: token embeddings wte(idx) plus position embeddings wpe(np.arange(T)),
        # dropout, every block of h in turn, ln_f, lm_head: the logits. Return
        # logits, _loss(logits, targets) (or None without targets).
        raise NotImplementedError("TODO 35: GPT's forward")


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
        # TODO 36: torch's AdamW, for each group's parameters p with its weight_decay wd
        # and its lr = group["lr"] (a schedule sets each group's lr between steps):
        #   t += 1 (once per step); p.data *= 1 - lr * wd;
        #   m = b1 m + (1 - b1) grad;  v = b2 v + (1 - b2) grad**2   (in place: m[...] = ...)
        #   p.data -= lr * (m / (1 - b1**t)) / (sqrt(v / (1 - b2**t)) + eps)
        raise NotImplementedError("TODO 36: AdamW's step")


def configure_optimizers(model, weight_decay, learning_rate, betas):
    """nanoGPT's: weight decay on the 2-D weights (matrices, embeddings), none on biases
    and layer norms' gains."""
    # TODO 37: two groups of model.parameters(): those of 2 or more dimensions with
    # weight_decay, the rest (biases, layer norms' gains) with 0.0; return
    # AdamW(groups, learning_rate, betas).
    raise NotImplementedError("TODO 37: configure_optimizers")
