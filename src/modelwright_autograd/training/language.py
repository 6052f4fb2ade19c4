"""Training a language model (``train --dataset names|shakespeare|--data PATH --model
bigram|mlp|transformer|gpt``): the settings and their defaults, the loop (AdamW, clipping,
warmup and cosine decay, evaluations every N steps, the best checkpoint kept) and the
outputs (model.json and last.json, each with its .safetensors, metrics.json,
loss_curve.png) in the run's folder.

The defaults are makemore's for the names models and nanoGPT's CPU configuration for the
GPT; docs/language-models.md lists them and the figures they reach.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import save_checkpoint, tensors_file
from ..collector import collection_paused
from ..files import write_json
from ..lm import models
from ..lm.corpus import (
    BUILTIN,
    MAX_WORD_LENGTH,
    NAMES_TEST_WORDS,
    Names,
    Source,
    Text,
    text_batch,
)
from ..lm.sampling import sample_model
from ..lm.scoring import counting_bigram_loss, names_loss, text_loss
from ..optim import AdamW, clip_grad_norm_, warmup_cosine_lr
from ..tensor import threads
from .loop import progress_bar
from .outputs import OutputError
from .run_state import LAST, ResumePoint, rng_states, run_state, signals_deferred

#: The datasets shipped for the language models, and which model each trains by default.
LM_DATASETS = tuple(BUILTIN)
LM_MODELS = models.KINDS
DEFAULT_MODEL = {"names": "transformer", "shakespeare": "gpt", None: "gpt"}
#: Models that read one item a line (makemore's); the GPT reads running text.
NAMES_MODELS = ("bigram", "mlp", "transformer")
#: The most tokens (batch x block) a language-model step takes, from the options or a
#: file's settings: the bigram's default batch (512) of the longest lines a names model
#: takes (64 characters + the start token), 33,280.
MAX_STEP_TOKENS = 512 * (MAX_WORD_LENGTH + 1)
#: The longest --eval-iters (batches per split per evaluation).
MAX_EVAL_ITERS = 10_000


@dataclass(frozen=True)
class LMSettings:
    """Every setting of a language-model run, defaults filled in."""

    model: models.LMConfig
    dataset: str | None
    data: str | None
    steps: int
    batch_size: int
    lr: float
    min_lr: float  # the cosine decay's floor; lr for a constant rate
    warmup: int
    weight_decay: float
    decay_all: bool  # weight decay on every parameter (makemore) or 2-D weights (nanoGPT)
    betas: tuple[float, float]
    grad_clip: float  # 0: none
    eval_interval: int
    eval_iters: int  # text: batches per split per evaluation (names: the whole split)
    threads: int  # the BLAS pool's threads (threadpoolctl)
    seed: int
    source: Source = field(compare=False)

    @property
    def names(self) -> bool:
        return self.model.kind in NAMES_MODELS

    @property
    def label(self) -> str:
        return self.source.label

    def lr_at(self, step: int) -> float:
        """nanoGPT's get_lr (optim.warmup_cosine_lr): linear warmup over ``warmup``
        steps, then cosine decay from lr to min_lr at the last step; constant when
        min_lr == lr."""
        if self.min_lr == self.lr and not self.warmup:
            return self.lr
        return warmup_cosine_lr(step, self.lr, self.warmup, self.steps, self.min_lr)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["model"] = self.model.to_dict()
        d["source"] = self.source.to_dict()
        d["betas"] = list(self.betas)
        return d


#: Per-model training defaults: makemore's (AdamW lr 5e-4, weight decay 0.01 on every
#: parameter, betas 0.9/0.99, batch 32, constant rate) for mlp and transformer, but the
#: transformer's rate decays (cosine) to ``decay_to`` of it over its 10,000 steps, which
#: takes its test loss below 2.00 in that budget (docs/language-models.md); the bigram
#: gets larger batches, a larger rate decayed to ``decay_to`` of it, and no weight decay,
#: so that it reaches the counting model's loss in its budget; nanoGPT's CPU run for gpt.
TRAINING_DEFAULTS: dict[str, dict[str, Any]] = {
    "bigram": dict(
        steps=1000, batch_size=512, lr=0.1, weight_decay=0.0, eval_interval=250, decay_to=0.01
    ),
    "mlp": dict(steps=5000, batch_size=32, lr=5e-4, weight_decay=0.01, eval_interval=500),
    "transformer": dict(
        steps=10_000, batch_size=32, lr=5e-4, weight_decay=0.01, eval_interval=500, decay_to=0.1
    ),
    "gpt": dict(
        steps=2000, batch_size=12, lr=1e-3, weight_decay=0.1, eval_interval=250, decay_to=0.1
    ),
}


def default_training(
    kind: str, steps: int | None = None, lr: float | None = None
) -> dict[str, Any]:
    """The settings train gives a ``kind`` model unless told otherwise; ``steps`` and
    ``lr``, when given, are the run's, and the warmup (nanoGPT's 100, or a twentieth of a
    shorter run) and the decay's floor follow them."""
    d = TRAINING_DEFAULTS[kind]
    gpt = kind == "gpt"
    steps = steps or d["steps"]
    lr = d["lr"] if lr is None else lr
    return dict(
        steps=steps,
        batch_size=d["batch_size"],
        lr=lr,
        min_lr=lr * d.get("decay_to", 1.0),
        warmup=min(100, steps // 20) * gpt,
        weight_decay=d["weight_decay"],
        decay_all=not gpt,
        betas=(0.9, 0.99),
        grad_clip=1.0 if gpt else 0.0,
        eval_interval=d["eval_interval"],
        eval_iters=20,
    )


#: The BLAS threads a language-model run uses unless --threads says otherwise: one per core,
#: the fastest on an idle machine (a busy one runs faster on one: docs/training.md).
DEFAULT_THREADS = os.cpu_count() or 1


def default_model(kind: str, vocab_size: int, block_size: int) -> models.LMConfig:
    """The ``kind`` model train builds unless told otherwise: makemore's transformer and
    MLP (64 wide, 64 hidden), the bigram, nanoGPT's CPU GPT."""
    if kind == "transformer":
        return models.makemore_transformer(vocab_size, block_size)
    config = models.LMConfig(kind, vocab_size, block_size)
    return replace(config, n_embd=64, n_hidden=64) if kind == "mlp" else config


def default_settings(
    model: models.LMConfig,
    source: Source,
    seed: int,
    steps: int | None = None,
    lr: float | None = None,
) -> LMSettings:
    """The settings train gives a run of ``model`` on ``source``'s text unless told
    otherwise: ``default_training``'s for its kind, DEFAULT_THREADS."""
    return LMSettings(
        model=model,
        dataset=source.dataset,
        data=source.path,
        threads=DEFAULT_THREADS,
        seed=seed,
        source=source,
        **default_training(model.kind, steps, lr),
    )


#: What a run needs besides its arrays: the interpreter, NumPy and the corpus.
BASE_MEMORY = 256 * 2**20
#: The bytes a checkpoint's writing holds at once, per weight (its float.hex strings).
SAVE_BYTES_PER_WEIGHT = 160


def memory_estimate(settings: LMSettings) -> int:
    """The bytes a run needs at its peak, from the sizes alone: the weights, their
    gradients, AdamW's two moments and its two scratch arrays (6 arrays of the weights'
    size), then the larger of what a batch keeps for the backward pass (per token and
    layer about 64 x n_embd plus 8 x n_head x block numbers, the attention's, and 4 x vocab
    for the logits) and what writing a checkpoint holds, plus BASE_MEMORY. The factors
    bound what tracemalloc and the peak RSS measured, from makemore's transformer to
    nanoGPT's Shakespeare GPT (docs/training.md)."""
    c = settings.model
    itemsize = 8 if c.dtype == "float64" else 4
    weights = models.num_parameters(c)
    per_token = max(c.n_layer, 1) * (64 * c.n_embd + 8 * c.n_head * c.block_size)
    per_token += 4 * c.vocab_size
    activations = itemsize * settings.batch_size * c.block_size * per_token
    return 6 * itemsize * weights + max(activations, SAVE_BYTES_PER_WEIGHT * weights) + BASE_MEMORY


def available_memory() -> int | None:
    """The bytes the system can give a process now without swapping (Linux's
    MemAvailable), or None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# ---------------------------------------------------------------------- the optimiser
def make_optimizer(model: models.LanguageModel, settings: LMSettings) -> AdamW:
    """The run's AdamW (``models.configure_optimizers`` with its settings)."""
    return models.configure_optimizers(
        model, settings.weight_decay, settings.lr, settings.betas, settings.decay_all
    )


# ---------------------------------------------------------------------- the loop
@dataclass
class LMHistory:
    """The training loss of every step, the evaluations, the best one, the time taken."""

    loss: list[float] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    best: dict[str, float] | None = None
    seconds: float = 0.0
    tokens: int = 0
    #: the exception that stopped the loop early (KeyboardInterrupt...), else None
    interrupted: type[BaseException] | None = None
    #: the step whose training or held-out loss was not finite (the loop stopped there)
    diverged: int | None = None
    diverged_loss: float | None = None
    #: the step the run started from (0, or where a resumed run's checkpoint stopped)
    start: int = 0
    #: what a checkpoint of the last step needs to resume from it (run_state.run_state)
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def steps_done(self) -> int:
        """The steps the model has taken in all, counting those before a resume."""
        return self.start + len(self.loss)


def _batches(settings: LMSettings, corpus: Names | Text, rng: np.random.Generator):
    """The training batches, forever: makemore's (random words, with replacement, as its
    InfiniteDataLoader) or nanoGPT's (random windows of the text)."""
    if isinstance(corpus, Names):
        width = corpus.block_size()
        while True:  # each batch's rows built when drawn: memory a batch, not the corpus
            rows = rng.integers(0, len(corpus.train), size=settings.batch_size)
            yield corpus.train.take(rows).examples(width)
    while True:
        yield text_batch(corpus.train, settings.model.block_size, settings.batch_size, rng)


def evaluate_lm(
    model: models.LanguageModel, settings: LMSettings, corpus: Names | Text, seed: int
) -> dict[str, float]:
    """Train and held-out loss. Names: the whole test set, and the same seeded sample of
    as many training words (makemore scores 1,000 of each); text: nanoGPT's estimate,
    ``eval_iters`` random batches of each split."""
    if isinstance(corpus, Names):
        rng = np.random.default_rng(seed)
        count = min(len(corpus.train), max(len(corpus.test), NAMES_TEST_WORDS))
        sample = corpus.train.take(rng.choice(len(corpus.train), count, replace=False))
        return {
            "train": names_loss(model, corpus, sample),
            "test": names_loss(model, corpus, corpus.test),
        }
    b, n = settings.batch_size, settings.eval_iters
    return {
        "train": text_loss(model, corpus.train, b, n, seed),
        "val": text_loss(model, corpus.val, b, n, seed + 1),
    }


def held_out(corpus: Names | Text) -> str:
    return "test" if isinstance(corpus, Names) else "val"


class _Diverged(Exception):
    """A loss stopped being finite: fit_lm ends its loop (and keeps the best checkpoint)."""


def fit_lm(
    model: models.LanguageModel,
    settings: LMSettings,
    corpus: Names | Text,
    progress: Any,
    save_best: Any = None,
    stop_on: tuple[type[BaseException], ...] = (KeyboardInterrupt,),
    finishing: Callable[[], None] | None = None,
    resume: ResumePoint | None = None,
    show: Any = None,
) -> LMHistory:
    """AdamW steps up to ``settings.steps``, from step 0 or from where ``resume`` (a
    checkpoint's optimiser and generator states; the model holds its weights) stopped;
    an evaluation at the start, every ``eval_interval`` steps and after the last, each
    passed to ``show(step, losses)`` if given; ``save_best(step, losses, state)``
    whenever the held-out loss is the lowest so far (after step 0), ``state`` being what
    resuming from there needs. One of ``stop_on`` (Ctrl-C) ends it early, with
    ``interrupted`` set to its type; so does a training or held-out loss that is not
    finite, with ``diverged`` set to its step; ``history.state`` is the state after the
    last whole step either way (a step is never left half done: see
    run_state.signals_deferred). ``finishing()`` is called when the last step is done,
    within reach of ``stop_on``: a signal handler that stops raising then leaves no moment
    at which an interrupt escapes."""
    history = LMHistory(start=resume.step if resume is not None else 0)
    optimizer = make_optimizer(model, settings)
    params = model.parameters()
    rng = np.random.default_rng([settings.seed, 1])
    if resume is not None:
        resume.restore(model, optimizer, rng)
    batches = _batches(settings, corpus, rng)
    split = held_out(corpus)
    model.train(True)
    start = time.perf_counter()
    rngs = rng_states(model, rng)

    def stop_if_not_finite(step: int, value: float) -> None:
        if not math.isfinite(value):
            history.diverged, history.diverged_loss = step, value
            if finishing is not None:
                finishing()
            raise _Diverged

    def evaluate(step: int) -> None:
        losses = evaluate_lm(model, settings, corpus, settings.seed + 2)
        for value in losses.values():
            stop_if_not_finite(step, value)
        history.evals.append({"step": step, **losses})
        if show is not None:
            show(step, losses)
        if step and (history.best is None or losses[split] < history.best[split]):
            if save_best is not None:
                save_best(step, losses, run_state(model, optimizer, step, rngs))
            history.best = {"step": step, **losses}  # once saved

    try:
        evaluate(history.start)
        for step in range(history.start, settings.steps):
            x, y = next(batches)
            with collection_paused():
                loss = model.loss(x, y)
                value = loss.item()
                stop_if_not_finite(step, value)
                optimizer.zero_grad()
                loss.backward(inputs=params)  # no interior gradient outlives its use
                del loss
                if settings.grad_clip:
                    clip_grad_norm_(params, settings.grad_clip)
                for group in optimizer.param_groups:
                    group["lr"] = settings.lr_at(step)
                with signals_deferred():
                    optimizer.step()
                    history.loss.append(value)
                    history.tokens += x.size
                    rngs = rng_states(model, rng)
            done = step + 1
            if done % settings.eval_interval == 0 or done == settings.steps:
                evaluate(done)
            seconds = time.perf_counter() - start
            progress.set_postfix(
                loss=f"{value:.4f}", tok_s=f"{history.tokens / seconds:,.0f}", refresh=False
            )
            progress.update(1)
        if finishing is not None:
            finishing()
    except _Diverged:
        pass  # history.diverged says where
    except stop_on as e:
        history.interrupted = type(e)
    history.seconds = time.perf_counter() - start
    history.state = run_state(model, optimizer, history.steps_done, rngs)
    return history


def run_lm_training(
    settings: LMSettings,
    corpus: Names | Text,
    out: Path,
    quiet: bool = False,
    stop_on: tuple[type[BaseException], ...] = (KeyboardInterrupt,),
    finishing: Callable[[], None] | None = None,
    resume: tuple[models.LanguageModel, ResumePoint] | None = None,
) -> dict[str, Any]:
    """A whole run into the staging folder ``out``: the best checkpoint (model.json) as
    training goes, then the last step's (last.json), metrics.json and loss_curve.png.
    ``resume`` is a checkpoint's model and where it stopped, to continue from. After
    Ctrl-C the files are written from what there is, and ``interrupted`` is set in the
    result; ``finishing`` as fit_lm's."""
    model = resume[0] if resume else models.build(settings.model, seed=settings.seed)
    metadata = {
        "data": {**settings.source.to_dict(), "seed": settings.seed},
        "vocab": {"tokens": corpus.vocab.tokens, "boundary": corpus.vocab.boundary},
        "training": settings.to_dict(),
    }

    def save_best(step: int, losses: dict[str, float], state: dict[str, Any]) -> None:
        best = {**metadata, "best": {"step": step, **losses}, **state}
        _write(out, "model.json", lambda path: save_checkpoint(path, model, best))

    start = resume[1].step if resume else 0
    with (
        threads.limit(settings.threads),
        progress_bar(
            settings.steps, f"train {settings.label} {settings.model.kind}", quiet, start
        ) as progress,
    ):
        show = None if quiet else partial(_show_evaluation, progress, model, corpus, settings)
        history = fit_lm(
            model,
            settings,
            corpus,
            progress,
            save_best,
            stop_on,
            finishing,
            resume and resume[1],
            show,
        )
    files = []
    if history.best is not None:
        last = {**metadata, "best": history.best, **history.state}
        _write(out, LAST, lambda path: save_checkpoint(path, model, last))
        files = ["model.json", "model.safetensors", LAST, tensors_file(LAST).name]
    extra: dict[str, Any] = {}
    if isinstance(corpus, Names) and settings.model.kind == "bigram":
        extra["counting_bigram"] = {
            split: counting_bigram_loss(corpus, corpus.train, words)
            for split, words in (("train", corpus.train), ("test", corpus.test))
        }
    metrics = {
        "config": settings.to_dict(),
        "split": _split_record(settings, corpus),
        "parameters": sum(p.data.size for p in model.parameters()),
        "loss": history.loss,
        "evals": history.evals,
        "best": history.best,
        **extra,
        "steps_done": history.steps_done,
        "start_step": history.start,
        "resumed_from": str(resume[1].path) if resume else None,
        "interrupted": history.interrupted is not None,
        "diverged_at_step": history.diverged,
        "train_seconds": round(history.seconds, 3),
        "tokens_per_second": round(history.tokens / history.seconds, 1)
        if history.seconds
        else None,
    }
    _write(out, "metrics.json", lambda path: write_json(path, metrics))
    _write(out, "loss_curve.png", lambda path: _plot(path, settings, history, corpus))
    files += ["metrics.json", "loss_curve.png"]
    return {"history": history, "files": files, "metrics": metrics}


def diverged_message(settings: LMSettings, history: LMHistory) -> str:
    """The one line a run that stopped on a non-finite loss ends with."""
    return (
        f"training stopped: a non-finite loss ({history.diverged_loss}) at step "
        f"{history.diverged:,}; try a smaller --lr (it was {settings.lr:g})"
    )


#: What each evaluation line shows when not --quiet (makemore prints 10 names).
EVAL_SAMPLES = {"names": 5, "text": 1}
EVAL_SAMPLE_CHARS = 100


def _show_evaluation(
    progress: Any,
    model: models.LanguageModel,
    corpus: Names | Text,
    settings: LMSettings,
    step: int,
    losses: dict[str, float],
) -> None:
    """An evaluation's line on stderr, above the progress bar, and a few samples drawn
    with their own generator (training's are untouched): names on one line, or text
    continuing the training text's first character."""
    split = held_out(corpus)
    names = isinstance(corpus, Names)
    samples = sample_model(
        model,
        corpus.vocab,
        EVAL_SAMPLES["names" if names else "text"],
        "" if names else corpus.vocab.decode(corpus.train[:1].tolist()),  # the text's start
        EVAL_SAMPLE_CHARS,
        1.0,
        None,
        settings.seed + 3 + step,
    )
    model.train(True)
    lines = [f"step {step:,}: train loss {losses['train']:.4f}, {split} loss {losses[split]:.4f}"]
    if names:
        lines.append("  samples: " + ", ".join(samples))
    else:
        lines += ["  | " + line for line in samples[0].split("\n")]
    progress.write("\n".join(lines), file=sys.stderr)


def _split_record(settings: LMSettings, corpus: Names | Text) -> dict[str, Any]:
    if isinstance(corpus, Names):
        return {
            "kind": "names",
            "seed": settings.seed,
            "rule": "test = min(1000, 10%) of the words by a seeded permutation (makemore)",
            "train_words": len(corpus.train),
            "test_words": len(corpus.test),
            "vocab": corpus.vocab.tokens,
        }
    return {
        "kind": "text",
        "rule": "first 90% of the characters train, last 10% validation (nanoGPT)",
        "train_chars": len(corpus.train),
        "val_chars": len(corpus.val),
        "vocab": corpus.vocab.tokens,
    }


def _write(out: Path, name: str, write: Any) -> None:
    try:
        write(out / name)
    except OSError as e:
        raise OutputError(name, e.strerror or str(e)) from e


def _plot(path: Path, settings: LMSettings, history: LMHistory, corpus: Any) -> None:
    from ..plots import plot_lm_curve

    weights = models.num_parameters(settings.model)
    title = f"{settings.label}: {settings.model.kind}, {weights:,} weights"
    plot_lm_curve(path, history.loss, history.evals, held_out(corpus), title, history.start)
