"""Sampling from a language model, as makemore's and nanoGPT's ``generate``: the model's
next-token distribution at the last position (logits / temperature, optionally only the
top k kept), one token drawn, appended, repeated. A seeded generator makes it repeatable."""

from __future__ import annotations

import math

import numpy as np

from ..graph import no_grad
from . import models
from .corpus import Vocabulary
from .models import LanguageModel


class BrokenModel(ValueError):
    """The model's next-token logits are NaN or infinite (its weights hold NaN or
    infinities, or its numbers overflow)."""


def generate(
    model: LanguageModel,
    idx: np.ndarray,
    new_tokens: int,
    rng: np.random.Generator,
    temperature: float = 1.0,
    top_k: int | None = None,
    stop: int | None = None,
) -> np.ndarray:
    """``idx`` (B, T) continued by ``new_tokens`` tokens each, the context cropped to the
    model's block size. With ``stop`` (makemore's boundary token), generation ends early
    once every row has produced it.

    As torch: a ValueError for a temperature that is not a positive finite number or a
    ``top_k`` below 1, or for a distribution that is not finite (logits divided by a
    subnormal temperature overflow, where torch.multinomial says "probability tensor
    contains either inf, nan or element < 0"); BrokenModel when the model's logits
    themselves are not finite."""
    if not (isinstance(temperature, (int, float, np.floating)) and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive finite number, got {temperature!r}")
    if temperature <= 0:
        raise ValueError(f"temperature must be a positive finite number, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a whole number of at least 1, got {top_k!r}")
    if idx.ndim != 2 or idx.shape[1] == 0:
        raise ValueError(f"idx must be (batch, tokens) with at least one token, got {idx.shape}")
    model.eval()
    with no_grad():
        for _ in range(new_tokens):
            context = idx[:, -model.block_size :]
            logits = model(context).data[:, -1, :].astype(np.float64)
            if not np.isfinite(logits).all():
                raise BrokenModel(
                    "its next-character logits are NaN or infinite (its weights hold NaN or "
                    "infinities, or its numbers overflow)"
                )
            with np.errstate(over="ignore"):
                logits = logits / temperature
            if not np.isfinite(logits).all():
                raise ValueError(
                    f"temperature {temperature!r} is too small: the logits divided by it "
                    "overflow (probability tensor contains either inf, nan or element < 0)"
                )
            if top_k is not None and top_k < logits.shape[-1]:
                kth = np.sort(logits, axis=-1)[:, -top_k][:, None]
                logits = np.where(logits < kth, -np.inf, logits)
            probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
            probs /= probs.sum(axis=-1, keepdims=True)
            # inverse transform sampling: the first token whose cumulative probability
            # exceeds a uniform draw
            draws = rng.random((len(idx), 1))
            nxt = np.minimum((np.cumsum(probs, axis=-1) < draws).sum(axis=-1), probs.shape[-1] - 1)
            idx = np.concatenate([idx, nxt[:, None]], axis=1)
            if stop is not None and (idx == stop)[:, 1:].any(axis=1).all():
                break
    return idx


def default_prompt(vocab: Vocabulary) -> str:
    """Where a text model's samples start when no prompt is given (or an empty one): a
    newline, as nanoGPT's sample.py, or the first character of the vocabulary (by code
    point) when the text had no newline."""
    return "\n" if "\n" in vocab.chars else vocab.chars[0]


def sample_model(
    model: models.LanguageModel,
    vocab: Vocabulary,
    num: int,
    prompt: str,
    tokens: int | None,
    temperature: float,
    top_k: int | None,
    seed: int,
) -> list[str]:
    """sample_lm's samples from a model and its vocabulary (during training too); the
    model is left in evaluation mode."""
    rng = np.random.default_rng(seed)
    start = vocab.encode(prompt)
    if vocab.boundary:
        idx = np.tile(np.concatenate([[0], start]), (num, 1))
        steps = max(0, model.block_size - idx.shape[1])
        rows = generate(model, idx, steps, rng, temperature, top_k, stop=0)[:, 1:].tolist()
        return [vocab.decode(row[: row.index(0)] if 0 in row else row) for row in rows]
    idx = np.tile(start, (num, 1))
    out = generate(model, idx, tokens or 0, rng, temperature, top_k)
    return [vocab.decode(row) for row in out]
