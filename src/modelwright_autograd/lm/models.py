"""Character-level language models on the tensor engine: makemore's ladder (bigram, MLP,
transformer) and nanoGPT's GPT.

Every model maps token ids (B, T) to logits (B, T, vocab) and is a ``tensor_nn.Module``, so
its ``state_dict()`` names are torch's: the transformer and the GPT use nanoGPT's own
(``transformer.wte.weight``, ``transformer.h.0.attn.c_attn.weight``, ..., ``lm_head.weight``),
which is what ``export`` writes. ``LMArchitecture`` is what a checkpoint stores to rebuild one.
docs/language-models.md walks through them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import positive_int
from ..optim import AdamW
from ..seeding import numpy_rng
from ..tensor import Tensor, gelu
from ..tensor import functional as F
from ..tensor.nn import Dropout, Embedding, LayerNorm, Linear, Module, Sequential, Tanh

#: The models, in makemore's order (gpt is nanoGPT's).
KINDS = ("bigram", "mlp", "transformer", "gpt")
#: The loss skips the targets equal to this: makemore pads a name's targets with -1.
IGNORE_INDEX = -1
#: nanoGPT's GPTConfig fields (its checkpoints' ``model_args``), which LMConfig shares.
NANOGPT_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size", "dropout")


@dataclass(frozen=True)
class LMConfig:
    """The sizes and options of a model; the defaults are nanoGPT's CPU configuration."""

    kind: str
    vocab_size: int
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    #: the MLP's hidden width (makemore's n_embd2)
    n_hidden: int = 64
    bias: bool = False
    dropout: float = 0.0
    #: "none" (erf, nanoGPT's nn.GELU()) or "tanh" (makemore's NewGELU)
    gelu: str = "none"
    #: the output head shares the token embedding's matrix (nanoGPT)
    tie_weights: bool = True
    #: "gpt2": N(0, 0.02) weights, zero biases, residual projections scaled by
    #: 1/sqrt(2 n_layer) (nanoGPT); "torch": torch's default initialisation (makemore)
    init: str = "gpt2"
    dtype: str = "float32"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def makemore_transformer(vocab_size: int, block_size: int, **changes: Any) -> LMConfig:
    """makemore's default model: 4 layers, 4 heads, 64 wide, biases, tanh GELU, no tying,
    torch's initialisation."""
    defaults = dict(n_layer=4, n_head=4, n_embd=64, bias=True, gelu="tanh", tie_weights=False)
    defaults.update(init="torch", dtype="float32")
    return LMConfig("transformer", vocab_size, block_size, **{**defaults, **changes})


def check_config(config: LMConfig) -> LMConfig:
    """A ValueError naming the first setting that cannot make a model. Structure only: the
    size budgets are ``checks.check_lm_sizes``, applied by the commands and file loaders."""
    if config.kind not in KINDS:
        raise ValueError(f"unknown model {config.kind!r}; expected one of {KINDS}")
    for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "n_hidden"):
        positive_int(getattr(config, name), name)
    if config.n_embd % config.n_head:
        raise ValueError(
            f"n_embd {config.n_embd} must be divisible by n_head {config.n_head} (each head "
            "gets an equal share)"
        )
    if not (isinstance(config.dropout, float) and 0.0 <= config.dropout < 1.0):
        raise ValueError(f"dropout must be a number from 0 to below 1, got {config.dropout!r}")
    checks = (("gelu", ("none", "tanh")), ("init", ("gpt2", "torch")))
    for name, allowed in (*checks, ("dtype", ("float32", "float64"))):
        if getattr(config, name) not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {getattr(config, name)!r}")
    for name in ("bias", "tie_weights"):
        if not isinstance(getattr(config, name), bool):
            raise ValueError(f"{name} must be true or false, got {getattr(config, name)!r}")
    return config


def num_parameters(config: LMConfig) -> int:
    """How many numbers the model's state_dict holds (a tied matrix counted under both of
    its names, as the state_dict lists it), from the sizes alone."""
    v, t, c = config.vocab_size, config.block_size, config.n_embd
    if config.kind == "bigram":
        return v * v
    if config.kind == "mlp":
        return (v + 1) * c + (t * c + 1) * config.n_hidden + (config.n_hidden + 1) * v
    b = config.bias
    per_layer = 2 * (c + b * c)  # two LayerNorms
    per_layer += 3 * c * c + b * 3 * c + c * c + b * c  # c_attn, attn.c_proj
    per_layer += 4 * c * c + b * 4 * c + 4 * c * c + b * c  # c_fc, mlp.c_proj
    return v * c + t * c + config.n_layer * per_layer + (c + b * c) + v * c


class LanguageModel(Module):
    """Token ids (B, T) -> logits (B, T, vocab_size); ``loss`` is their cross-entropy."""

    config: LMConfig

    @property
    def block_size(self) -> int:
        return self.config.block_size

    def loss(self, idx: np.ndarray, targets: np.ndarray) -> Tensor:
        """Mean cross-entropy of the next-token predictions, skipping targets of -1."""
        logits = self(idx)
        v = logits.shape[-1]
        return F.cross_entropy(logits.reshape(-1, v), targets.reshape(-1), IGNORE_INDEX)


class Bigram(LanguageModel):
    """makemore's bigram: a (vocab, vocab) table of logits, row = the current character,
    starting at zero (every next character equally likely)."""

    def __init__(self, config: LMConfig, seed: Any = None) -> None:
        self.config = config
        v = config.vocab_size
        self.logits = Tensor(np.zeros((v, v)), requires_grad=True, dtype=config.dtype)

    def forward(self, idx: np.ndarray) -> Tensor:
        return F.embedding(idx, self.logits)


class MLP(LanguageModel):
    """makemore's MLP (Bengio et al. 2003): the embeddings of the ``block_size`` previous
    tokens (a blank token, id vocab_size, before the start), concatenated, through one tanh
    hidden layer of ``n_hidden`` to the logits."""

    def __init__(self, config: LMConfig, seed: Any = None) -> None:
        self.config = config
        rng = numpy_rng(seed)
        v, t, c, h = config.vocab_size, config.block_size, config.n_embd, config.n_hidden
        self.wte = Embedding(v + 1, c, seed=rng, dtype=config.dtype)
        self.mlp = Sequential(  # as makemore's: the second Linear is mlp.2
            Linear(t * c, h, seed=rng, dtype=config.dtype),
            Tanh(),
            Linear(h, v, seed=rng, dtype=config.dtype),
        )

    def forward(self, idx: np.ndarray) -> Tensor:
        b, t = idx.shape
        k = self.config.block_size
        # context[..., j] = the token j + 1 places back (j = 0: the token itself), as
        # makemore's k rolls of idx with the blank token shifted in
        padded = np.concatenate([np.full((b, k - 1), self.config.vocab_size), idx], axis=1)
        windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=1)[:, :t, ::-1]
        x = self.wte(windows).reshape(b, t, k * self.config.n_embd)
        return self.mlp(x)


class CausalSelfAttention(Module):
    """Multi-head self-attention in which each position sees itself and the positions
    before it: one projection to q, k, v (``c_attn``), scaled dot products, a causal mask,
    softmax, the weighted values, and an output projection (``c_proj``)."""

    def __init__(self, config: LMConfig, rng: Any) -> None:
        c, dt = config.n_embd, config.dtype
        self.n_head = config.n_head
        self.c_attn = Linear(c, 3 * c, bias=config.bias, seed=rng, dtype=dt)
        self.c_proj = Linear(c, c, bias=config.bias, seed=rng, dtype=dt)
        self.dropout = config.dropout
        self.resid_dropout = Dropout(config.dropout, seed=rng)
        self._rng = rng  # the attention dropout's masks

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        nh = self.n_head
        # q, k, v: each (B, nh, T, hs), views of the one projection; picked before they are
        # transposed, so their gradients are written into one array of the projection's
        # layout, which needs no copy to reach c_attn
        qkv = self.c_attn(x).reshape(b, t, 3, nh, c // nh)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        # softmax(q k^T / sqrt(hs), each position seeing itself and earlier ones) @ v, as
        # one node (its rule in docs/derivations.md)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=p, is_causal=True, generator=self._rng
        )
        y = y.transpose(1, 2).reshape(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class FeedForward(Module):
    """The block's MLP: 4x wider, GELU, back (``c_fc``, ``c_proj``)."""

    def __init__(self, config: LMConfig, rng: Any) -> None:
        c, dt = config.n_embd, config.dtype
        self.c_fc = Linear(c, 4 * c, bias=config.bias, seed=rng, dtype=dt)
        self.c_proj = Linear(4 * c, c, bias=config.bias, seed=rng, dtype=dt)
        self.approximate = config.gelu
        self.dropout = Dropout(config.dropout, seed=rng)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(gelu(self.c_fc(x), self.approximate)))


class Block(Module):
    """A pre-LayerNorm transformer block: x + attn(ln_1(x)), then + mlp(ln_2(x))."""

    def __init__(self, config: LMConfig, rng: Any) -> None:
        c, dt = config.n_embd, config.dtype
        self.ln_1 = LayerNorm(c, bias=config.bias, dtype=dt)
        self.attn = CausalSelfAttention(config, rng)
        self.ln_2 = LayerNorm(c, bias=config.bias, dtype=dt)
        self.mlp = FeedForward(config, rng)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class _Trunk(Module):
    """nanoGPT's ``transformer`` ModuleDict: wte, wpe, the blocks h.0..., ln_f."""

    def __init__(self, config: LMConfig, rng: Any) -> None:
        c, dt = config.n_embd, config.dtype
        self.wte = Embedding(config.vocab_size, c, seed=rng, dtype=dt)
        self.wpe = Embedding(config.block_size, c, seed=rng, dtype=dt)
        self.drop = Dropout(config.dropout, seed=rng)
        self.h = [Block(config, rng) for _ in range(config.n_layer)]
        self.ln_f = LayerNorm(c, bias=config.bias, dtype=dt)


class GPT(LanguageModel):
    """nanoGPT's GPT (and, with ``makemore_transformer``'s settings, makemore's
    Transformer): token plus learned position embeddings, ``n_layer`` pre-LayerNorm blocks,
    a final LayerNorm and a linear head (tied to the token embedding by default)."""

    def __init__(self, config: LMConfig, seed: Any = None, skip_init: bool = False) -> None:
        self.config = config
        rng = numpy_rng(seed)
        self.transformer = _Trunk(config, rng)
        self.lm_head = Linear(
            config.n_embd, config.vocab_size, bias=False, seed=rng, dtype=config.dtype
        )
        if config.tie_weights:
            self.lm_head.weight = self.transformer.wte.weight
        if config.init == "gpt2" and not skip_init:  # skip_init: see build
            self._init_gpt2(rng)

    def _init_gpt2(self, rng: Any) -> None:
        """nanoGPT's _init_weights: every Linear and Embedding weight N(0, 0.02), biases 0;
        then each residual projection (``c_proj.weight``) N(0, 0.02 / sqrt(2 n_layer))."""
        scaled = 0.02 / math.sqrt(2 * self.config.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                p.data[...] = rng.normal(0.0, scaled, p.shape)
            elif name.endswith(".weight") and ".ln_" not in name and "ln_f" not in name:
                p.data[...] = rng.normal(0.0, 0.02, p.shape)
            elif name.endswith(".bias"):
                p.data[...] = 0.0

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """As Module's; with tied weights, the two names of the one matrix must hold the
        same numbers (a file edited to differ would otherwise lose one copy silently)."""
        if self.config.tie_weights:
            head, wte = state.get("lm_head.weight"), state.get("transformer.wte.weight")
            same_shape = head is not None and wte is not None and np.shape(head) == np.shape(wte)
            if same_shape and not np.array_equal(head, wte, equal_nan=True):
                raise ValueError(
                    "'lm_head.weight' differs from 'transformer.wte.weight', the matrix it "
                    "is tied to; a tied model holds the same numbers under both names"
                )
        super().load_state_dict(state)

    def forward(self, idx: np.ndarray) -> Tensor:
        t = idx.shape[1]
        if t > self.config.block_size:
            raise ValueError(
                f"cannot forward a sequence of {t} tokens: the block size is "
                f"{self.config.block_size}"
            )
        tr = self.transformer
        x = tr.drop(tr.wte(idx) + tr.wpe(np.arange(t)))
        for block in tr.h:
            x = block(x)
        return self.lm_head(tr.ln_f(x))


_CLASSES = {"bigram": Bigram, "mlp": MLP, "transformer": GPT, "gpt": GPT}


def build(config: LMConfig, seed: Any = None, skip_init: bool = False) -> LanguageModel:
    """A new model of ``config``, its weights drawn from ``seed``. ``skip_init`` (as
    torch.nn.utils.skip_init) is for a model whose weights are overwritten next, as a
    checkpoint's are: a GPT then leaves out nanoGPT's re-initialisation, three quarters of
    the time a 10.8M GPT takes to build."""
    model_class = _CLASSES[check_config(config).kind]
    return GPT(config, seed, skip_init) if model_class is GPT else model_class(config, seed)


@dataclass(frozen=True)
class LMArchitecture:
    """What a checkpoint stores to rebuild a language model (``checkpoint.py`` reads it
    beside the MLPs' ``Architecture``); the vocabulary is in the checkpoint's metadata."""

    config: LMConfig
    engine: str = field(default="tensor", init=False)
    model: str = field(default="lm", init=False)

    @property
    def dtype(self) -> str:
        return self.config.dtype

    def to_dict(self) -> dict[str, Any]:
        return {"model": "lm", "lm": self.config.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LMArchitecture:
        """The architecture in a checkpoint's dict, or a ValueError saying what is wrong."""
        stored = d.get("lm")
        if not isinstance(stored, dict):
            raise ValueError("a language model's architecture needs its 'lm' settings")
        names = set(LMConfig.__dataclass_fields__)
        unknown = sorted(set(stored) - names)
        if unknown or "kind" not in stored or "vocab_size" not in stored:
            raise ValueError(f"bad 'lm' settings (unknown or missing keys: {unknown[:3]})")
        return cls(check_config(LMConfig(**stored)))

    def describe(self) -> str:
        c = self.config
        if c.kind in ("bigram", "mlp"):
            return f"{c.kind} language model ({c.vocab_size} tokens, context {c.block_size})"
        return (
            f"{c.kind} language model ({c.n_layer} layers, {c.n_head} heads, {c.n_embd} wide, "
            f"block {c.block_size}, {c.vocab_size} tokens)"
        )

    def num_parameters(self) -> int:
        return num_parameters(self.config)

    def build(self) -> LanguageModel:
        """A model of this architecture whose weights a checkpoint then overwrites."""
        return build(self.config, seed=0, skip_init=True)


def torch_state(torch: Any, model: Any) -> dict[str, Any]:
    """The model's state_dict as torch tensors; a tied head is the token embedding's
    tensor under both names, as torch.save stores nanoGPT's."""
    state = {name: torch.tensor(np.asarray(v)) for name, v in model.state_dict().items()}
    if model.config.tie_weights and "lm_head.weight" in state:
        state["lm_head.weight"] = state["transformer.wte.weight"]
    return state


def state_dict_doc(torch: Any, model: LanguageModel) -> dict[str, Any]:
    """``--format state_dict`` for a language model (``checkpoint.export_torch`` writes it):
    its state_dict under nanoGPT's (and makemore's) names, its config, and for the GPT
    nanoGPT's ``model_args`` (GPTConfig's fields), so that
    ``GPT(GPTConfig(**doc["model_args"])).load_state_dict(doc["state_dict"])`` rebuilds it
    in nanoGPT's model.py (docs/checkpoints.md)."""
    arch = LMArchitecture(model.config)
    doc: dict[str, Any] = {
        "format": "modelwright-autograd torch export",
        "architecture": {"engine": "tensor", **arch.to_dict()},
        "state_dict": torch_state(torch, model),
    }
    if model.config.kind == "gpt":
        doc["model_args"] = {k: getattr(model.config, k) for k in NANOGPT_ARGS}
    return doc


def configure_optimizers(
    model: LanguageModel,
    weight_decay: float,
    learning_rate: float,
    betas: tuple[float, float],
    decay_all: bool = False,
) -> AdamW:
    """nanoGPT's ``GPT.configure_optimizers``: AdamW (eps 1e-8) with weight decay on the
    2-D weights only (the first group; biases and LayerNorm gains, the second, are not
    decayed), each group in parameter order; ``decay_all`` decays every parameter in one
    group, as makemore does."""
    params = model.parameters()
    if decay_all:
        groups = [{"params": params, "weight_decay": weight_decay}]
    else:
        groups = [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ]
        groups = [g for g in groups if g["params"]]
    return AdamW(groups, lr=learning_rate, betas=betas, eps=1e-8)
