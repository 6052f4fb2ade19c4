"""Measuring a language model: its mean loss per character on a names split (every
character of every word, exactly) or on running text (nanoGPT's estimate: the mean over
random batches), and the counting bigram model's loss beside the learned one."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ..graph import no_grad
from .corpus import Names, text_batch
from .models import IGNORE_INDEX, LanguageModel

#: Words scored per forward pass at the context of makemore's names (16): this bounds the
#: memory of scoring a large split. The MLP's and the transformer's activations grow with
#: the square of the context, so a longer one scores fewer words at a time (1,000 words
#: at the longest context, 65, held about 1 GB in the default MLP).
SCORE_WORDS = 1000
_SCORE_CONTEXT = 16


def _chunks(names: Names, words: Sequence[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """makemore's (x, y) rows of ``words``, SCORE_WORDS at a time at a context of 16,
    fewer by the square of a longer one."""
    words, block = names.as_words(words), names.block_size()
    step = max(1, SCORE_WORDS * _SCORE_CONTEXT**2 // max(block, _SCORE_CONTEXT) ** 2)
    for start in range(0, len(words), step):
        yield words.take(slice(start, start + step)).examples(block)


def names_loss(model: LanguageModel, names: Names, words: Sequence[str]) -> float:
    """The mean cross-entropy per predicted character (each letter and the end of each
    name) over ``words``, in evaluation mode, without a graph."""
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            for xb, yb in _chunks(names, words):
                n = int(np.count_nonzero(yb != IGNORE_INDEX))
                total += model.loss(xb, yb).item() * n
                count += n
    finally:
        model.train(was_training)
    return total / count


def text_loss(
    model: LanguageModel, data: np.ndarray, batch_size: int, batches: int, seed: int
) -> float:
    """nanoGPT's estimate_loss for one split: the mean loss of ``batches`` random batches
    (drawn by a generator seeded with ``seed``), in evaluation mode, without a graph."""
    rng = np.random.default_rng(seed)
    block = model.block_size
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            losses = [
                model.loss(*text_batch(data, block, batch_size, rng)).item() for _ in range(batches)
            ]
    finally:
        model.train(was_training)
    return float(np.mean(losses))


def bigram_counts(names: Names, words: Sequence[str]) -> np.ndarray:
    """N[i, j]: how often token j follows token i in ``words`` (with the boundary token 0
    before and after each word)."""
    counts = np.zeros((names.vocab.size, names.vocab.size), dtype=np.int64)
    for x, y in _chunks(names, words):
        keep = y != IGNORE_INDEX
        np.add.at(counts, (x[keep], y[keep]), 1)
    return counts


def counting_bigram_loss(
    names: Names, train_words: Sequence[str], words: Sequence[str], smoothing: float = 1.0
) -> float:
    """The loss on ``words`` of the counting model: P(j | i) = (N[i, j] + smoothing) /
    sum_j (N[i, j] + smoothing) with N counted on ``train_words`` (makemore lecture 1's
    model, with its add-one smoothing so no test bigram has probability 0)."""
    counts = bigram_counts(names, train_words) + smoothing
    log_p = np.log(counts / counts.sum(axis=1, keepdims=True))
    test = bigram_counts(names, words)
    return float(-(test * log_p).sum() / test.sum())
