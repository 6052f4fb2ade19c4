"""``modelwright-autograd train``: its options (the MLPs' and the language models') and
the run, written to a run folder that is complete or absent."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from ..checkpoint import ENGINES, MAX_PARAMETERS
from ..checks import MAX_LM_BLOCK, MAX_LM_VOCAB, shown_path
from ..lm.corpus import MAX_DATA_BYTES, MAX_WORD_LENGTH
from ..printing import emit
from ..scalar.nn import ACTIVATIONS
from ..training import language
from ..training.loop import run_training
from ..training.outputs import OutputError, RunFolder
from ..training.resume import resolve_resume
from ..training.settings import (
    CNN_CHANNELS,
    CNN_STEPS,
    LOSS_NAMES,
    MAX_STEPS,
    MODELS,
    OPTIMIZERS,
    WORK_LIMITS,
    TrainingDiverged,
    UsageError,
    resolve_config,
)
from .options import Subparsers, add_data_options, file_path, layer_sizes, real_number, whole_number
from .signals import EXIT_INTERRUPTED, Terminated, interrupts_raise, interrupts_raise_once


def add_train(subparsers: Subparsers) -> None:
    """The ``train`` command's options."""
    p = subparsers.add_parser(
        "train",
        help="train an MLP or a language model and save its checkpoint, metrics and curves",
        description="Train an MLP or a character-level language model (see the "
        "language-model options below). With no options: micrograd's demo (moons, MLP 2-16-16-1, "
        "hinge loss + 1e-4 L2, 100 full-batch SGD steps, lr 1.0 -> 0.1). --dataset digits "
        "trains a 64-128-64-10 MLP on scikit-learn's digits with the tensor engine. A run writes "
        "model.json (the checkpoint; its tensors in model.safetensors beside it), metrics.json "
        "and loss_curve.png, plus decision_boundary.png "
        "for the 2-D sets or confusion_matrix.png and misclassified.png for digits.",
    )
    add_data_options(p, for_evaluate=False)
    p.add_argument(
        "--hidden",
        type=layer_sizes,
        metavar="SIZES",
        help="hidden layer sizes, comma-separated (default: 16,16; digits 128,64); the MLP "
        f"may have at most {MAX_PARAMETERS['scalar']:,} weights with the scalar engine, "
        f"{MAX_PARAMETERS['tensor']:,} with the tensor engine (what a checkpoint holds)",
    )
    p.add_argument(
        "--model",
        choices=tuple(dict.fromkeys((*MODELS, *language.LM_MODELS))),
        help="mlp (default) or cnn: two 3x3 conv layers with ReLU and 2x2 max pooling, then "
        "a linear head (--dataset digits only; --hidden gives the conv channels, default "
        f"{','.join(map(str, CNN_CHANNELS))}; {CNN_STEPS} steps). Language models: bigram, "
        "mlp (makemore's), transformer (makemore's; default for names) or gpt (nanoGPT's; "
        "default for shakespeare and --data)",
    )
    p.add_argument(
        "--activation",
        choices=ACTIVATIONS,
        help="hidden-layer nonlinearity (default: relu)",
    )
    p.add_argument(
        "--loss",
        choices=LOSS_NAMES,
        help="svm (hinge, labels -1/+1, the default), mse (labels -1/+1) or bce "
        "(labels 0/1) for the 2-D sets; ce (cross-entropy) for digits",
    )
    p.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        help="sgd (lr decays linearly to a tenth; default for 2-D), momentum "
        "(SGD with momentum 0.9) or adam (default for digits)",
    )
    p.add_argument(
        "--lr",
        type=real_number("--lr", positive=True),
        help="(starting) learning rate (default: sgd 1.0, momentum 0.1, adam 0.05; with "
        "--loss mse sgd 0.1, momentum 0.05; digits: sgd 0.1, momentum 0.01, adam 0.001)",
    )
    p.add_argument(
        "--steps",
        type=whole_number("--steps", 1, MAX_STEPS),
        help=f"optimiser steps, at most {MAX_STEPS:,} (default: 100; digits 1000); steps x "
        f"batch x weights must stay within {WORK_LIMITS['scalar']['run']:.0e} multiply-adds "
        f"for the scalar engine, {WORK_LIMITS['tensor']['run']:.0e} for the tensor engine, "
        f"and steps x batch x (sum of layer widths) within "
        f"{WORK_LIMITS['tensor']['run activations']:.0e} for the tensor engine",
    )
    p.add_argument(
        "--batch-size",
        type=whole_number("--batch-size"),
        metavar="N",
        help="examples per step (default: the whole training set; digits 32)",
    )
    p.add_argument(
        "--l2",
        type=real_number("--l2", positive=False),
        help="weight of the L2 penalty sum(p*p) added to the loss (default: 1e-4)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        help="scalar (Value graph) or tensor (NumPy arrays); default scalar, digits needs tensor",
    )
    p.add_argument(
        "--compile",
        action="store_true",
        default=None,
        help="write the scalar engine's full-batch step out as straight-line Python once, "
        "then train through it: the same losses, bit for bit, in a fraction of the time "
        "(svm or mse loss; docs/performance.md)",
    )
    p.add_argument(
        "--out",
        type=file_path,
        metavar="DIR",
        help="output folder (default: a new runs/<dataset>-<timestamp>/); created when the "
        "run starts and filled only when it has finished; refused if another run is using "
        "it or it already holds files",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="let --out replace a previous run's files (only when the run has finished; a "
        "folder holding anything else is never touched)",
    )
    p.add_argument(
        "--quiet", action="store_true", help="no progress bar; print only the final summary"
    )
    _add_lm_options(p)
    p.set_defaults(func=partial(run_train, parser=p))


def _add_lm_options(p: argparse.ArgumentParser) -> None:
    """train's options for the language models (docs/language-models.md)."""
    g = p.add_argument_group(
        "language models",
        "--dataset names or shakespeare, or --data PATH, trains a character-level language "
        "model. Defaults: makemore's for bigram, mlp and transformer (AdamW lr 5e-4, weight "
        "decay 0.01, batch 32; bigram lr 0.1) and nanoGPT's CPU configuration for gpt (4 "
        "layers, 4 heads, 128 wide, block 64, batch 12, 2,000 steps, lr 1e-3 with 100 "
        "warmup steps and cosine decay to 1e-4, weight decay 0.1 on 2-D weights, clipping at "
        "1.0). A run writes model.json (the best checkpoint so far, kept after Ctrl-C), "
        "last.json (the last step's, which --resume continues), metrics.json and "
        "loss_curve.png, and prints each evaluation with a few samples (not with --quiet).",
    )
    g.add_argument(
        "--data",
        type=file_path,
        metavar="PATH",
        help=f"a UTF-8 text file of at most {MAX_DATA_BYTES:,} bytes and "
        f"{MAX_LM_VOCAB} distinct characters: one item a line for bigram, mlp and "
        f"transformer (lines of at most {MAX_WORD_LENGTH} characters), running "
        "text for gpt",
    )
    g.add_argument(
        "--block-size",
        type=whole_number("--block-size", 1, MAX_LM_BLOCK),
        metavar="N",
        help="context length in characters (gpt: default 64; mlp: default the longest "
        "line + 1, as transformer and bigram always use)",
    )
    for name, help in (
        ("layer", "transformer and gpt: the number of blocks (default 4)"),
        ("head", "transformer and gpt: attention heads per block (default 4)"),
        ("embd", "the embedding width (default: gpt 128, transformer 64, mlp 64)"),
    ):
        g.add_argument(
            f"--n-{name}", type=whole_number(f"--n-{name}", 1, 4096), metavar="N", help=help
        )
    g.add_argument(
        "--dropout",
        type=real_number("--dropout", positive=False, maximum=0.99),
        metavar="P",
        help="transformer and gpt: dropout probability (default 0)",
    )
    g.add_argument(
        "--bias",
        action=argparse.BooleanOptionalAction,
        help="transformer and gpt: biases in the Linear layers and LayerNorms (default: "
        "gpt none, as nanoGPT's Shakespeare run; transformer with, as makemore)",
    )
    g.add_argument(
        "--weight-decay",
        type=real_number("--weight-decay", positive=False, maximum=1.0),
        metavar="WD",
        help="AdamW's decoupled weight decay (default: 0.01, gpt 0.1 on 2-D weights only)",
    )
    g.add_argument(
        "--eval-interval",
        type=whole_number("--eval-interval", 1, MAX_STEPS),
        metavar="N",
        help="steps between evaluations of the train and held-out loss (default: gpt and "
        "bigram 250, mlp and transformer 500)",
    )
    g.add_argument(
        "--eval-iters",
        type=whole_number("--eval-iters", 1, language.MAX_EVAL_ITERS),
        metavar="N",
        help="gpt: random batches per split in each evaluation (default 20, as nanoGPT's "
        "CPU run); the names models score the whole of each split",
    )
    g.add_argument(
        "--max-iters",
        type=whole_number("--max-iters", 1, MAX_STEPS),
        metavar="N",
        help="nanoGPT's name for --steps: the optimiser steps the run takes in all (give "
        "one of the two)",
    )
    g.add_argument(
        "--warmup-iters",
        type=whole_number("--warmup-iters", 0, MAX_STEPS),
        metavar="N",
        help="steps of linear warmup before the cosine decay (default: gpt 100, or "
        "min(100, steps // 20) when --steps is given; the names models 0)",
    )
    g.add_argument(
        "--min-lr",
        type=real_number("--min-lr", positive=False),
        metavar="LR",
        help="the rate the cosine decay ends at, at most --lr (default: a tenth of --lr for "
        "gpt and transformer, a hundredth for bigram; mlp keeps a constant rate, --lr)",
    )
    g.add_argument(
        "--threads",
        type=whole_number("--threads", 1, 256),
        metavar="N",
        help=f"threads for NumPy's BLAS (default: one per core, {language.DEFAULT_THREADS} "
        "here, the fastest on an idle machine; on a busy one --threads 1 is faster, see "
        "docs/training.md)",
    )
    g.add_argument(
        "--resume",
        type=file_path,
        metavar="RUN",
        help="continue a language-model run where it stopped, into a new run folder: RUN "
        "is its folder (its last.json, the last step) or a checkpoint (RUN/model.json, the "
        "best); the same settings, data, optimiser state and random state, so the losses "
        "are those of an unbroken run; only --steps, --eval-interval, --eval-iters and "
        "--threads may change",
    )
    g.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        help="the parameters' floating-point type (default float32)",
    )


def run_train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Train, write the outputs, print the summary: 0; 1 if training diverged or the
    outputs cannot be written; 2 for a bad option or --out; 130 after Ctrl-C (SIGINT) and
    143 after SIGTERM. Whatever the ending, the run folder is complete or absent."""
    if language.wants_language_model(args) or args.resume is not None:
        return run_train_lm(args, parser)
    run: RunFolder | None = None
    with interrupts_raise():
        try:
            try:
                language.refuse_lm_options(args)
                config = resolve_config(args)
                run = RunFolder.claim(args.out, config.dataset, args.overwrite)
            except UsageError as e:
                parser.error(str(e))  # exits with code 2
            with run:
                result = run_training(config, run.staging, quiet=args.quiet)
                run.commit()
        except ENDINGS as e:
            return _ended(e, run, args.out)
    lines = [f"final  {result['train'].describe()}  (training set)"]
    if result["test"] is not None:
        lines.append(f"test   {result['test'].describe()}  (held-out test set)")
    lines.append(
        f"trained in {result['seconds']:.2f} s ({config.steps} steps); "
        f"outputs in {run.shown}/: {', '.join(result['files'])}"
    )
    return emit(lines)


def run_train_lm(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Train a language model: exit codes as run_train's. Ctrl-C or SIGTERM during the
    steps keeps the best checkpoint saved so far, with the metrics and curve up to then;
    once one has stopped the steps, later ones are noted, never cutting the writes short.
    An interrupted run never replaces a finished one (--overwrite): it goes beside it."""
    run: RunFolder | None = None
    stopped: type[BaseException] | None = None
    resume = None
    with interrupts_raise_once() as interrupts:  # to the last line printed
        try:
            try:
                if args.resume is not None:
                    settings, corpus, model, point = resolve_resume(args)
                    resume = (model, point)
                else:
                    settings, corpus = language.resolve_lm(args)
                run = RunFolder.claim(args.out, settings.label, args.overwrite)
            except UsageError as e:
                parser.error(str(e))
            with run:
                result = language.run_lm_training(
                    settings,
                    corpus,
                    run.staging,
                    args.quiet,
                    (KeyboardInterrupt, Terminated),
                    interrupts.finishing,
                    resume,
                )
                history = result["history"]
                stopped = history.interrupted or interrupts.stopped_by()
                unfinished = stopped is not None or history.diverged is not None
                if unfinished and "model.json" not in result["files"]:
                    if history.diverged is not None:
                        raise TrainingDiverged(language.diverged_message(settings, history))
                    raise stopped  # nothing was saved yet: keep nothing
                run.commit(keep_previous=unfinished)
            stopped = stopped or interrupts.stopped_by()  # one that came while committing
        except ENDINGS as e:
            return _ended(e, run, args.out)
        lines = _lm_summary(settings, result, run)
        if history.diverged is not None:
            emit(lines)
            _fail(
                f"{language.diverged_message(settings, history)}; kept the best checkpoint "
                f"(step {history.best['step']:,}) in {run.outputs}"
                + (f"; {run.shown} still holds the previous run's files" if run.aside else "")
            )
            return 1
        if stopped is not None:
            name = "SIGINT" if stopped is KeyboardInterrupt else "SIGTERM"
            lines.append(
                f"interrupted ({name}) after step {history.steps_done:,}: kept the above "
                f"(continue with --resume {run.outputs})"
            )
            if run.aside is not None:
                lines.append(f"{run.shown} still holds the previous run's files, unchanged")
            emit(lines)
            return EXIT_INTERRUPTED[stopped]
        return emit(lines)


#: How a run can end before its summary: each is one line saying what was kept.
ENDINGS = (TrainingDiverged, OutputError, OSError, KeyboardInterrupt, Terminated)


def _fail(message: str) -> None:
    print(f"modelwright-autograd train: {message}", file=sys.stderr)


def _ended(e: BaseException, run: RunFolder | None, out: Path | None) -> int:
    """One line for a run that ended early (``e`` one of ENDINGS) saying what was kept,
    and its exit code: 1, or 128 + the signal's number after Ctrl-C or SIGTERM."""
    kept = run.kept() if run is not None else "nothing was written"
    if isinstance(e, (KeyboardInterrupt, Terminated)):
        name = "SIGINT" if isinstance(e, KeyboardInterrupt) else "SIGTERM"
        _fail(f"interrupted ({name}); {kept}")
        return EXIT_INTERRUPTED[type(e)]
    if isinstance(e, TrainingDiverged):
        _fail(f"{e}; {kept}")
    elif isinstance(e, OutputError):
        _fail(f"cannot write {shown_path(run.path / e.name)}: {e.reason}; {kept}")
    else:  # OSError: the folder itself (renaming it into place)
        where = shown_path(run.path if run is not None else out or "the run folder")
        _fail(f"cannot finish {where}: {getattr(e, 'strerror', None) or e}; {kept}")
    return 1


def _lm_summary(settings: language.LMSettings, result: dict, run: RunFolder) -> list[str]:
    """The lines a finished (or stopped) language-model run prints."""
    history, metrics = result["history"], result["metrics"]
    split = "test" if settings.names else "val"
    lines = []
    if history.best is not None:
        best = history.best
        lines.append(
            f"best   step {best['step']:,}: train loss {best['train']:.4f}, {split} loss "
            f"{best[split]:.4f} (saved in model.json)"
        )
    if "counting_bigram" in metrics:
        lines.append(
            f"counting bigram (add-one smoothing): {split} loss "
            f"{metrics['counting_bigram'][split]:.4f}"
        )
    lines.append(
        f"trained in {history.seconds:.2f} s ({len(history.loss):,} steps"
        + (f" from step {history.start:,}" if history.start else "")
        + f", {metrics['config']['threads']} thread(s), "
        f"{metrics['tokens_per_second'] or 0:,.0f} tokens/s); outputs in {run.outputs}/: "
        f"{', '.join(result['files'])}"
    )
    return lines
