"""A saved language-model run (``sample``, ``evaluate``, ``export`` and ``import`` read
one): its checkpoint, vocabulary and settings, the corpus found again exactly as it was
split in training, its losses and its samples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checkpoint import (
    Checkpoint,
    CheckpointError,
    load_checkpoint,
)
from ..checks import describe, is_json_int, shown_path, shown_text
from ..lm import models
from ..lm.corpus import (
    BUILTIN,
    CorpusError,
    Names,
    Text,
    Vocabulary,
    read_source,
    split_names,
    split_text,
)
from ..lm.sampling import sample_model
from ..lm.scoring import names_loss, text_loss
from .language import MAX_STEP_TOKENS


class NotALanguageModel(Exception):
    """``sample`` or an LM evaluation was given a run whose model is not a language model."""


#: The most characters ``sample`` writes (--num x --tokens), and the longest --prompt.
MAX_SAMPLE_TOKENS = 100_000
MAX_PROMPT = 10_000


@dataclass
class LMRun:
    """A language-model run read back: its checkpoint, vocabulary and, when the data it
    was trained on can be found again unchanged, its corpus split as in training."""

    checkpoint: Checkpoint
    vocab: Vocabulary
    training: dict[str, Any]
    corpus: Names | Text | None
    missing: str | None  # why ``corpus`` is None

    @property
    def model(self) -> models.LanguageModel:
        return self.checkpoint.model

    @property
    def names(self) -> bool:
        return self.vocab.boundary


def checkpoint_file(run: Path) -> Path:
    """A run folder's model.json, or the file given."""
    return run / "model.json" if run.is_dir() else run


def load_lm_run(run: Path, checkpoint: Checkpoint | None = None) -> LMRun:
    """Read a language-model run (its folder or model.json): a CheckpointError for a file
    that is not a sound checkpoint, NotALanguageModel for one of another model."""
    path = checkpoint_file(run)
    checkpoint = checkpoint or load_checkpoint(path)
    if not isinstance(checkpoint.architecture, models.LMArchitecture):
        raise NotALanguageModel(
            f"{path} holds a {checkpoint.architecture.describe()}, not a language model "
            "(train one with --dataset names, --dataset shakespeare or --data)"
        )
    meta = checkpoint.metadata
    vocab_doc, data, training = meta.get("vocab"), meta.get("data"), meta.get("training")
    config = checkpoint.architecture.config
    if not (
        isinstance(vocab_doc, dict)
        and isinstance(vocab_doc.get("tokens"), str)
        and isinstance(vocab_doc.get("boundary"), bool)
        and len(vocab_doc["tokens"]) == config.vocab_size
        and len(set(vocab_doc["tokens"])) == config.vocab_size
    ):
        raise CheckpointError(
            path, f"no valid 'vocab' ({config.vocab_size} distinct tokens and 'boundary')"
        )
    if not isinstance(data, dict) or not isinstance(training, dict):
        raise CheckpointError(path, "no 'data' and 'training' settings (was it written by train?)")
    tokens, boundary = vocab_doc["tokens"], vocab_doc["boundary"]
    vocab = Vocabulary(tokens[1:] if boundary else tokens, boundary)
    corpus, missing = _find_corpus(data, vocab, config, "imported" in checkpoint.metadata)
    return LMRun(checkpoint, vocab, training, corpus, missing)


def _find_corpus(
    data: dict[str, Any], vocab: Vocabulary, config: models.LMConfig, imported: bool
) -> tuple[Names | Text | None, str | None]:
    """The corpus split exactly as in training, if its file is there and unchanged (an
    imported run may have none)."""
    dataset, path, digest, seed = (data.get(k) for k in ("dataset", "path", "sha256", "seed"))
    problem = None
    if imported and dataset is None and path is None:
        return None, "it was imported without its data (import it with --data or --dataset)"
    if dataset not in (None, *BUILTIN):
        problem = f"'data.dataset' is {describe(dataset)}, not one of {tuple(BUILTIN)}"
    elif dataset is None and not (isinstance(path, str) and path and "\0" not in path):
        problem = f"'data.path' is {describe(path)}, not the path of a file"
    elif not isinstance(digest, str):
        problem = f"'data.sha256' is {describe(digest)}, not a checksum"
    elif not (is_json_int(seed) and seed >= 0):
        problem = f"'data.seed' is {describe(seed)}, not a whole number of at least 0"
    if problem is not None:
        return None, f"the checkpoint's {shown_text(problem)}"
    try:
        text, source = read_source(dataset, path if dataset is None else None)
    except CorpusError as e:
        return None, f"its data cannot be read ({e})"
    if source.sha256 != digest:
        where = shown_path(source.path) if source.path else dataset
        return None, f"{where} has changed since training (its sha256 differs)"
    try:
        if vocab.boundary:
            corpus: Names | Text = split_names(text, seed, source.label)
        else:
            corpus = split_text(text, config.block_size, source.label)
    except CorpusError as e:
        return None, str(e)
    if corpus.vocab != vocab:
        return None, "its data's vocabulary differs from the checkpoint's"
    return corpus, None


def evaluate_lm_run(run: LMRun, batches: int, seed: int) -> dict[str, float]:
    """The loss per character of a saved model: names, on every word of the training and
    test splits; text, nanoGPT's estimate over ``batches`` random batches of each split."""
    if run.corpus is None:
        raise NotALanguageModel(f"cannot evaluate: {run.missing}")
    model, corpus = run.model, run.corpus
    if isinstance(corpus, Names):
        return {
            "train": names_loss(model, corpus, corpus.train),
            "test": names_loss(model, corpus, corpus.test),
        }
    batch = run.training.get("batch_size")
    if not (is_json_int(batch) and 1 <= batch * model.block_size <= MAX_STEP_TOKENS):
        raise CheckpointError(
            run.checkpoint.path, f"'training.batch_size' is {describe(batch)}, not a batch size"
        )
    return {
        "train": text_loss(model, corpus.train, batch, batches, seed),
        "val": text_loss(model, corpus.val, batch, batches, seed + 1),
    }


def sample_lm(
    run: LMRun,
    num: int,
    prompt: str,
    tokens: int | None,
    temperature: float,
    top_k: int | None,
    seed: int,
) -> list[str]:
    """``num`` samples: names (makemore: from the start token, and ``prompt`` if given,
    until the end token or the longest name) or ``tokens`` characters of text continuing
    ``prompt`` (nanoGPT). The same seed gives the same samples."""
    return sample_model(run.model, run.vocab, num, prompt, tokens, temperature, top_k, seed)
