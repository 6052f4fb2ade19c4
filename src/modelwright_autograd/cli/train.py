"""``modelwright-autograd train``: its options (the MLPs' and the language models') and
the run, written to a run folder that is complete or absent."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

from ..checkpoint import ENGINES
from ..checks import MAX_LM_BLOCK, MAX_LM_VOCAB, MAX_PARAMETERS, check_lm_sizes, shown_path
from ..lm import models
from ..lm.corpus import (
    MAX_DATA_BYTES,
    MAX_WORD_LENGTH,
    CorpusError,
    Names,
    Text,
    read_source,
    split_names,
    split_text,
)
from ..printing import emit
from ..scalar.nn import ACTIVATIONS
from ..training import language
from ..training.loop import run_training
from ..training.outputs import OutputError, RunFolder
from ..training.resume import prepare_resume
from ..training.run_state import ResumePoint
from ..training.settings import (
    BINARY_LOSS_NAMES,
    CNN_CHANNELS,
    CNN_STEPS,
    DEFAULT_L2,
    LOSS_NAMES,
    MAX_STEPS,
    MODELS,
    OPTIMIZERS,
    SettingError,
    TrainConfig,
    TrainingDiverged,
    default_lr,
)
from .budgets import WORK_LIMITS, check_lm_work, check_work
from .options import (
    Subparsers,
    UsageError,
    add_data_options,
    file_path,
    layer_sizes,
    option_name,
    real_number,
    whole_number,
)
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
    add_data_options(
        p,
        for_evaluate=False,
        samples_budget="; points x weights must stay within "
        f"{WORK_LIMITS['scalar']['pass']:,} for the scalar engine and points x (sum of layer "
        f"widths) within {WORK_LIMITS['tensor']['activations']:,} for the tensor engine",
    )
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
        help="threads for NumPy's BLAS and the engine (default: one per core, "
        f"{language.DEFAULT_THREADS} here, the fastest on an idle machine; on a busy one "
        "--threads 1 is faster, see docs/training.md)",
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
    if wants_language_model(args) or args.resume is not None:
        return run_train_lm(args, parser)
    run: RunFolder | None = None
    with interrupts_raise():
        try:
            try:
                refuse_lm_options(args)
                config = resolve_config(args)
                run = RunFolder.claim(args.out, config.dataset, args.overwrite)
            except (UsageError, SettingError) as e:
                parser.error(str(UsageError.of(e)))  # exits with code 2
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
                    settings, corpus = resolve_lm(args)
                run = RunFolder.claim(args.out, settings.label, args.overwrite)
            except (UsageError, SettingError) as e:
                parser.error(str(UsageError.of(e)))
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


# ---------------------------------------------------------------------- options to settings
def resolve_config(args: argparse.Namespace) -> TrainConfig:
    """Fill in the defaults that depend on the dataset and check the options together."""
    digits = args.dataset == "digits"
    model = args.model or "mlp"
    if model not in MODELS:
        raise UsageError(
            "--model",
            f"{model} is a language model: use it with --dataset names, --dataset "
            "shakespeare or --data PATH",
        )
    cnn = model == "cnn"
    if cnn:
        if not digits:
            raise UsageError("--model", "cnn needs images: use it with --dataset digits")
        if args.hidden is not None and len(args.hidden) != 2:
            raise UsageError("--hidden", "--model cnn takes two sizes, the conv layers' channels")
        if args.activation not in (None, "relu"):
            raise UsageError("--activation", "--model cnn uses relu")
    if digits:
        for option, value in (("--samples", args.samples), ("--noise", args.noise)):
            if value is not None:
                raise UsageError(option, "does not apply to --dataset digits (1,797 images)")
        if args.engine == "scalar":
            raise UsageError("--engine", "--dataset digits needs the tensor engine")
        if args.loss not in (None, "ce"):
            raise UsageError("--loss", "--dataset digits has 10 classes: use ce")
    elif args.loss == "ce":
        binary = ", ".join(BINARY_LOSS_NAMES)
        raise UsageError(
            "--loss", f"ce is for digits; {args.dataset} has two classes (use {binary})"
        )
    if args.compile:
        _check_compile(args, digits)
    optimizer = args.optimizer or ("adam" if digits else "sgd")
    loss = args.loss or ("ce" if digits else "svm")
    config = TrainConfig(
        dataset=args.dataset,
        samples=None if digits else (args.samples if args.samples is not None else 100),
        noise=None if digits else (args.noise if args.noise is not None else 0.1),
        hidden=args.hidden or (CNN_CHANNELS if cnn else (128, 64) if digits else (16, 16)),
        activation=args.activation or "relu",
        loss=loss,
        optimizer=optimizer,
        lr=args.lr if args.lr is not None else default_lr(args.dataset, loss, model, optimizer),
        steps=args.steps
        if args.steps is not None
        else (CNN_STEPS if cnn else 1000 if digits else 100),
        batch_size=args.batch_size if args.batch_size is not None else (32 if digits else None),
        l2=args.l2 if args.l2 is not None else DEFAULT_L2,
        seed=args.seed,
        engine=args.engine or ("tensor" if digits else "scalar"),
        model=model,
        compile=bool(args.compile),
    )
    check_work(config)
    return config


def _check_compile(args: argparse.Namespace, digits: bool) -> None:
    """--compile writes out the scalar engine's one full-batch graph (scalar/compiler.py)."""
    if digits or args.engine == "tensor":
        raise UsageError("--compile", "compiles the scalar engine's graph: use --engine scalar")
    if args.batch_size is not None:
        raise UsageError("--compile", "compiles one full-batch graph: drop --batch-size")
    if args.loss == "bce":
        raise UsageError(
            "--compile", "bce reads the scores' numbers to choose its formula: use svm or mse"
        )


#: The train options that only the 2-D and digits models take.
_CLASSIC_OPTIONS = (
    "samples",
    "noise",
    "hidden",
    "activation",
    "loss",
    "optimizer",
    "l2",
    "engine",
    "compile",
)
#: The train options that only the language models take.
LM_OPTIONS = (
    "data",
    "block_size",
    "n_layer",
    "n_head",
    "n_embd",
    "dropout",
    "bias",
    "eval_interval",
    "eval_iters",
    "weight_decay",
    "dtype",
    "warmup_iters",
    "min_lr",
    "max_iters",
    "threads",
)
#: The size options a model does not have.
_NOT_FOR = {
    "bigram": ("n_layer", "n_head", "n_embd", "dropout", "bias"),
    "mlp": ("n_layer", "n_head", "dropout", "bias"),
}


def refuse_lm_options(args: argparse.Namespace) -> None:
    """A UsageError for a language-model option given to a 2-D or digits run."""
    for name in LM_OPTIONS:
        if getattr(args, name, None) is not None:
            raise UsageError(
                option_name(name),
                "is for the language models (--dataset names or shakespeare, or --data)",
            )


def wants_language_model(args: argparse.Namespace) -> bool:
    """Whether ``train``'s options ask for a language model: a text dataset or --data."""
    return args.dataset in language.LM_DATASETS or getattr(args, "data", None) is not None


def steps_option(args: argparse.Namespace) -> int | None:
    """--steps, or its nanoGPT name --max-iters (the same number: the steps the run takes
    in all); a UsageError for both."""
    if args.steps is not None and getattr(args, "max_iters", None) is not None:
        raise UsageError("--max-iters", "is nanoGPT's name for --steps: give one of them")
    return args.steps if args.steps is not None else getattr(args, "max_iters", None)


def resolve_lm(args: argparse.Namespace) -> tuple[language.LMSettings, Names | Text]:
    """The settings of a language-model run and its corpus, read and split: a UsageError
    (exit code 2) for anything wrong, before any model is built."""
    given_dataset = args.dataset if args.dataset in language.LM_DATASETS else None
    if args.data is not None and given_dataset is not None:
        raise UsageError("--data", f"give --data or --dataset {given_dataset}, not both")
    for name in _CLASSIC_OPTIONS:
        if getattr(args, name, None) is not None:
            raise UsageError(option_name(name), "does not apply to a language model")
    kind = args.model or language.DEFAULT_MODEL[given_dataset]
    if kind not in language.LM_MODELS:
        raise UsageError(
            "--model", f"{kind} is not a language model; choose from {language.LM_MODELS}"
        )
    for name in _NOT_FOR.get(kind, ()):
        if getattr(args, name) is not None:
            raise UsageError(option_name(name), f"does not apply to --model {kind}")
    try:
        text, source = read_source(given_dataset, args.data)
        if kind in language.NAMES_MODELS:
            corpus: Names | Text = split_names(text, args.seed, source.label)
            block = corpus.block_size()
            if args.block_size is not None and kind != "mlp":
                raise UsageError(
                    "--block-size",
                    f"--model {kind} sees a whole name: its context is the longest name + 1 "
                    f"({block})",
                )
            block = args.block_size or block
        else:
            block = args.block_size or 64
            corpus = split_text(text, block, source.label)
    except CorpusError as e:
        raise UsageError("--data" if args.data is not None else "--dataset", str(e)) from None
    changes = {
        name: getattr(args, name)
        for name in ("n_layer", "n_head", "n_embd", "dropout", "bias", "dtype")
        if getattr(args, name) is not None
    }
    try:
        config = replace(language.default_model(kind, corpus.vocab.size, block), **changes)
        config = models.check_config(config)
        check_lm_sizes(config.block_size, config.vocab_size)
    except ValueError as e:
        raise UsageError("--n-embd" if "n_embd" in str(e) else "--model", str(e)) from None
    settings = language.default_settings(config, source, args.seed, steps_option(args), args.lr)
    warmup = args.warmup_iters if args.warmup_iters is not None else settings.warmup
    if warmup >= settings.steps:
        raise UsageError("--warmup-iters", f"must be less than the run's {settings.steps:,} steps")
    min_lr = args.min_lr if args.min_lr is not None else settings.min_lr
    if min_lr > settings.lr:
        raise UsageError("--min-lr", f"must be at most the learning rate ({settings.lr:g})")
    given = {
        "batch_size": args.batch_size,
        "weight_decay": args.weight_decay,
        "eval_interval": args.eval_interval,
        "eval_iters": args.eval_iters,
        "threads": args.threads,
    }
    settings = replace(
        settings,
        warmup=warmup,
        min_lr=min_lr,
        **{name: value for name, value in given.items() if value is not None},
    )
    check_lm_work(settings)
    return settings, corpus


#: The options a resumed run may change; every other one is the checkpoint's.
RESUME_OPTIONS = ("steps", "max_iters", "eval_interval", "eval_iters", "threads")
#: Options with a default that --resume ignores (train's own, not the run's).
_ALWAYS = {"resume", "out", "overwrite", "quiet", "func", "command", "dataset", "seed"}


def _refuse_out_of_source(resume: Path, out: Path | None) -> None:
    """A UsageError for an ``--out`` that is the folder ``--resume`` reads (by device and
    inode, so a symbolic link, ``..`` or another spelling is seen through): the resumed run
    would replace the run it continues, with or without --overwrite."""
    if out is None:
        return
    source = resume if resume.is_dir() else resume.parent
    try:
        same = os.path.samefile(out, source)
    except (OSError, ValueError):  # --out does not exist yet
        same = os.path.realpath(out) == os.path.realpath(source)
    if same:
        raise UsageError(
            "--out",
            f"{shown_path(out)} is the run --resume continues, which it only reads: "
            "name a new folder",
        )


def resolve_resume(
    args: argparse.Namespace,
) -> tuple[language.LMSettings, Names | Text, models.LanguageModel, ResumePoint]:
    """The settings, corpus, model and resume point of ``--resume``: a UsageError (exit
    code 2) for an option that would change the run, a SettingError for a checkpoint
    that cannot be resumed, or data that has changed since."""
    given = [
        name
        for name, value in vars(args).items()
        if value is not None and value is not False and name not in _ALWAYS
    ]
    if args.dataset != "moons" or args.seed != 1337 or any(n not in RESUME_OPTIONS for n in given):
        name = next((n for n in given if n not in RESUME_OPTIONS), None)
        option = "--" + (name or ("dataset" if args.dataset != "moons" else "seed")).replace(
            "_", "-"
        )
        raise UsageError(
            option,
            "does not apply with --resume: the run keeps its settings (it may change "
            "--steps, --eval-interval, --eval-iters and --threads)",
        )
    _refuse_out_of_source(args.resume, args.out)
    return prepare_resume(
        args.resume,
        steps_option(args),
        args.eval_interval,
        args.eval_iters,
        args.threads,
        check_work=check_lm_work,
    )


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
