"""What the LM checks ask a learner's ``lm_ops.py`` and ``models.py``: the op cases (the
learner's code and torch's for the same thing), the model sizes, the weights the grader sets,
and the batches both train on. NumPy only: ``oracle`` (torch) and the child's probe read it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: makemore's MLP on names (nanoGPT's names: vocab_size, block_size, n_embd; makemore's n_embd2),
#: its sizes other than MLPConfig's defaults and the notebook's, so one written in as a number
#: shows: the vocabulary too is two more than the names' 27 (their ids are below it all the same).
MLP_CONFIG: dict[str, Any] = {"vocab_size": 29, "block_size": 5, "n_embd": 6, "n_embd2": 20}
#: A small nanoGPT (dropout 0, its default; bias on, so every kind of parameter is there),
#: its sizes all different, and none the notebook's (nor Shakespeare's 65 characters), so one
#: used for another or written in shows (the head size, 3, is not sqrt(n_embd) either, so the
#: two wrong attention scales differ).
GPT_CONFIG: dict[str, Any] = {
    "block_size": 12,
    "vocab_size": 67,
    "n_layer": 3,
    "n_head": 8,
    "n_embd": 24,
    "dropout": 0.0,
    "bias": True,
}
#: The training runs: steps, batch, learning rate, the authors' betas (makemore's, nanoGPT's:
#: they differ, so an AdamW that ignores its betas shows) and weight decay.
TRAINING: dict[str, dict[str, Any]] = {
    "MLP": {
        "steps": 20,
        "batch": 16,
        "length": 8,
        "lr": 1e-2,
        "betas": [0.9, 0.99],
        "weight_decay": 0.01,
    },
    "GPT": {
        "steps": 10,
        "batch": 4,
        "length": 12,
        "lr": 3e-3,
        "betas": [0.9, 0.95],
        "weight_decay": 0.1,
    },
}
#: The configs of the model rows: the GPT again without biases (nanoGPT's train.py default);
#: and larger ones built only to judge the weights each model draws itself (enough of them for
#: tight statistics, n_layer 4 so that c_proj's 0.02 / sqrt(2 n_layer) is no other formula's).
MODEL_CONFIGS: dict[str, dict[str, Any]] = {
    "MLP": MLP_CONFIG,
    "GPT": GPT_CONFIG,
    "GPT without biases": {**GPT_CONFIG, "bias": False},
    "MLP init": {"vocab_size": 29, "block_size": 5, "n_embd": 24, "n_embd2": 200},
    "GPT init": {**GPT_CONFIG, "block_size": 32, "n_layer": 4, "n_head": 4, "n_embd": 64},
}
SEED = 38
#: The batch length in the model rows: shorter than block_size (the GPT's 12, the MLP's 5),
#: so a position embedding that adds the whole table, or the wrong rows of it, and an MLP
#: that needs block_size tokens (sampling starts from one) show.
MODEL_LENGTH = {"GPT": 11, "MLP": 3}
#: The positions of a second call without targets on the same model, on one row (as
#: sampling makes): a mask or position ids kept from the first call, at its length, and a
#: batch of one squeezed away, show.
SHORT_LENGTH = 2


@dataclass
class OpCase:
    """One op row: the learner's code (reading ``tensors`` as Tensors and ``arrays`` as
    NumPy arrays, setting ``out``), torch's code for the same, and the constant W of the loss
    (out * W).sum()."""

    name: str
    code: str
    torch_code: str
    tensors: dict[str, np.ndarray]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    weight: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: dropout in training: no torch to compare with; the row checks its own rules
    random: bool = False
    #: rows whose failure this one shares (it says so in one line instead)
    after: tuple[str, ...] = ()
    #: the functions a failure points at (none given: every one the code calls)
    looks: tuple[str, ...] = ()


def _numbers(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return np.round(rng.normal(0.0, scale, shape), 2)


def op_cases() -> list[OpCase]:
    """The op rows, in the order a learner meets them in lm_ops.py."""
    rng = np.random.default_rng(SEED)
    causal = np.triu(np.ones((3, 3), dtype=bool), 1)
    cases = [
        OpCase(
            "embedding",
            "out = embedding(w, idx)",
            "out = F.embedding(torch.from_numpy(idx), w)",
            {"w": _numbers(rng, 5, 3)},
            {"idx": np.array([[1, 3, 1], [0, 1, 4]])},  # row 1 three times
        ),
        OpCase(
            "split",
            "a, b, c = split(x, 2, dim=1)\nout = a * b + c",
            "a, b, c = x.split(2, dim=1)\nout = a * b + c",
            {"x": _numbers(rng, 2, 6)},
        ),
        OpCase(
            "split along dim 0",
            "a, b = split(x, 2, dim=0)\nout = a * b",
            "a, b = x.split(2, dim=0)\nout = a * b",
            {"x": _numbers(rng, 4, 3)},
            after=("split",),
        ),
        OpCase(
            "cat",
            "out = cat([x, y, x], -1)",
            "out = torch.cat([x, y, x], -1)",
            {"x": _numbers(rng, 2, 3), "y": _numbers(rng, 2, 2)},
        ),
        OpCase(
            "cat along dim 0",
            "out = cat([x, y], 0)",
            "out = torch.cat([x, y], 0)",
            {"x": _numbers(rng, 2, 3), "y": _numbers(rng, 1, 3)},
            after=("cat",),
        ),
        OpCase(
            "masked_fill",
            "out = masked_fill(x, mask, -100.0)",  # -inf: in causal softmax (-inf * W is nan)
            "out = x.masked_fill(torch.from_numpy(mask), -100.0)",
            {"x": _numbers(rng, 2, 3, 3)},
            {"mask": causal},
        ),
        OpCase(
            "softmax",
            "out = softmax(x, dim=1)",
            "out = F.softmax(x, dim=1)",
            {"x": _numbers(rng, 2, 3, 2)},
        ),
        OpCase(
            "softmax along dim 0",
            "out = softmax(x, dim=0)",
            "out = F.softmax(x, dim=0)",
            {"x": _numbers(rng, 3, 2, 2)},
            after=("softmax",),
        ),
        OpCase(
            "softmax of large numbers",
            "out = softmax(x, dim=-1)",
            "out = F.softmax(x, dim=-1)",
            {"x": np.array([[1000.0, 999.0, 990.0], [-1000.0, -999.5, -1001.0]])},
            after=("softmax",),
        ),
        OpCase(
            "causal softmax",
            "out = softmax(masked_fill(x, mask, -np.inf), dim=-1)",
            "out = F.softmax(x.masked_fill(torch.from_numpy(mask), float('-inf')), dim=-1)",
            {"x": _numbers(rng, 2, 3, 3)},
            {"mask": causal},
            after=("softmax", "masked_fill"),
        ),
        OpCase(
            "layer_norm",
            "out = layer_norm(x, w, b)",
            "out = F.layer_norm(x, (4,), w, b, 1e-5)",
            {
                "x": _numbers(rng, 2, 3, 4),
                "w": 1.0 + _numbers(rng, 4, scale=0.3),
                "b": _numbers(rng, 4),
            },
        ),
        OpCase("gelu", "out = gelu(x)", "out = F.gelu(x)", {"x": _numbers(rng, 2, 5, scale=2.0)}),
        OpCase(
            "dropout in eval",
            "out = dropout(x, 0.5, False)",
            "out = x * 1.0",
            {"x": _numbers(rng, 2, 4)},
        ),
        OpCase(
            "dropout in training",  # two calls: each must draw its own mask, on 4-D x as att's
            "out = cat([dropout(x, 0.25, True), dropout(x, 0.25, True)], 0)",
            "",
            {"x": 1.0 + np.abs(_numbers(rng, 2, 2, 20, 25))},  # no zeros: a zero out is a drop
            random=True,
            after=("dropout in eval", "cat along dim 0"),
            looks=("dropout",),
        ),
        OpCase(
            "heads' transpose",
            "out = x.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3)",
            "out = x.view(2, 3, 2, 2).transpose(1, 2)",
            {"x": _numbers(rng, 2, 3, 4)},
        ),
        OpCase(
            "attention scores",
            "out = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(2))",
            "out = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(2))",
            {"q": _numbers(rng, 2, 2, 3, 2), "k": _numbers(rng, 2, 2, 3, 2)},
        ),
    ]
    for case in cases:
        shape = _output_shape(case)
        case.weight = np.round(rng.normal(0.0, 1.0, shape), 2)
    return cases


def _output_shape(case: OpCase) -> tuple[int, ...]:
    """The output's shape, from the NumPy arithmetic of the same code (no engine)."""
    shapes = {
        "embedding": (2, 3, 3),
        "split": (2, 2),
        "split along dim 0": (2, 3),
        "cat": (2, 8),
        "cat along dim 0": (3, 3),
        "dropout in training": (4, 2, 20, 25),
        "heads' transpose": (2, 2, 3, 2),
        "attention scores": (2, 2, 3, 3),
    }
    return shapes.get(case.name, next(iter(case.tensors.values())).shape)


# ---------------------------------------------------------------------- dropout's masks
#: The dropout of the "GPT with dropout in training" row.
DROPOUT_P = 0.5


def dropout_masks(batch: int, length: int) -> list[np.ndarray]:
    """The masks (0 or 1 / (1 - p)) of nanoGPT's dropouts in the GPT, in the order its
    forward calls them: after the embeddings, then in each layer on the attention weights,
    after attention's c_proj and after the MLP's c_proj."""
    c = GPT_CONFIG
    rng = np.random.default_rng(SEED + 6)
    width, heads = (batch, length, c["n_embd"]), (batch, c["n_head"], length, length)
    shapes = [width] + [heads, width, width] * c["n_layer"]
    return [(rng.random(shape) >= DROPOUT_P) / (1.0 - DROPOUT_P) for shape in shapes]


# ---------------------------------------------------------------------- weights and data
def weights_for(
    shapes: dict[str, tuple[int, ...]], seed: int, scale: float
) -> dict[str, np.ndarray]:
    """Weights the grader sets, by name: N(0, scale) matrices and embeddings, layer norms'
    gains near 1, small biases (so no gradient is trivially zero or one)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in shapes.items():
        if len(shape) == 1:  # biases, and layer norms' gains (every other weight is 2-D)
            base = 1.0 if name.endswith("weight") else 0.0
            weights[name] = base + rng.normal(0.0, 0.2, shape)
        else:
            weights[name] = rng.normal(0.0, scale, shape)
    return weights


def gpt2_weights(
    shapes: dict[str, tuple[int, ...]], seed: int, n_layer: int
) -> dict[str, np.ndarray]:
    """nanoGPT's initialisation (N(0, 0.02), residual projections 0.02 / sqrt(2 n_layer),
    zero biases, unit gains), for training."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            weights[name] = np.ones(shape) if name.endswith("weight") else np.zeros(shape)
        else:
            std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else 0.02
            weights[name] = rng.normal(0.0, std, shape)
    return weights


def learning_rates(lr: float, steps: int, warmup: int) -> list[float]:
    """nanoGPT's get_lr at each step: a linear warmup over ``warmup`` steps, then a cosine
    down to lr / 10 at the last step."""
    rates = []
    for it in range(steps):
        if it < warmup:
            rates.append(lr * (it + 1) / (warmup + 1))
            continue
        ratio = (it - warmup) / (steps - 1 - warmup)
        rates.append(lr / 10 + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - lr / 10))
    return rates


#: The GPT's run sets each step's rate on every param_group first, as nanoGPT's loop does;
#: makemore's keeps the lr the optimizer was made with.
TRAINING["GPT"]["rates"] = learning_rates(TRAINING["GPT"]["lr"], TRAINING["GPT"]["steps"], 2)


def initial_laws(kind: str, shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[str, float]]:
    """How the authors' models draw each parameter before training, by name (``kind`` one of
    MODEL_CONFIGS, ``shapes`` torch's for it): ("normal",
    std), ("uniform", bound) or ("constant", value). makemore's MLP keeps torch's defaults
    (an Embedding N(0, 1), a Linear's weight and bias U(-1/sqrt(in), 1/sqrt(in))); nanoGPT's
    GPT draws every matrix from N(0, 0.02), its residual projections (c_proj) from
    N(0, 0.02 / sqrt(2 n_layer)), and starts biases at 0 and layer norms' gains at 1."""
    laws: dict[str, tuple[str, float]] = {}
    for name, shape in shapes.items():
        if kind.startswith("MLP"):
            if name.startswith("wte"):
                laws[name] = ("normal", 1.0)
            else:  # a Linear's weight (out, in) and its bias: the bound of the weight's in
                fan_in = shapes[name.replace(".bias", ".weight")][1]
                laws[name] = ("uniform", 1.0 / math.sqrt(fan_in))
        elif name.endswith("c_proj.weight"):
            laws[name] = ("normal", 0.02 / math.sqrt(2 * MODEL_CONFIGS[kind]["n_layer"]))
        elif len(shape) == 2:
            laws[name] = ("normal", 0.02)
        else:
            laws[name] = ("constant", 0.0 if name.endswith("bias") else 1.0)
    return laws


def encode(text: str, vocabulary: str) -> np.ndarray:
    ids = {c: i for i, c in enumerate(vocabulary)}
    return np.array([ids[c] for c in text], dtype=np.int64)


def batches(
    data: np.ndarray, length: int, batch: int, steps: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """nanoGPT's get_batch, seeded: windows of ``length`` tokens and the next ones."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        starts = rng.integers(0, len(data) - length - 1, batch)
        x = np.stack([data[s : s + length] for s in starts])
        y = np.stack([data[s + 1 : s + 1 + length] for s in starts])
        out.append((x, y))
    return out


def names_data(text: str) -> np.ndarray:
    """The first 2,000 names as one stream, '.' before and after each (makemore's token 0)."""
    names = [line.strip() for line in text.splitlines() if line.strip()][:2000]
    stream = "." + ".".join(names) + "."
    return encode(stream, "." + "abcdefghijklmnopqrstuvwxyz")


def shakespeare_data(text: str) -> np.ndarray:
    """The first 20,000 characters in the whole text's vocabulary (65 characters)."""
    return encode(text[:20000], "".join(sorted(set(text))))
