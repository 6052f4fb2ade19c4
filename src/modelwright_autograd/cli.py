"""The ``modelwright-autograd`` command line: argparse and printing only.

Each command is an ``add_<name>(subparsers)`` that declares its options and sets
``func`` to a ``run_<name>(args, ...)`` returning the exit code; ``COMMANDS`` lists them in
``--help`` order, so a new command is one such pair and one line there. The work itself is
in ``training`` (train, evaluate), ``explain`` and ``learner`` (init, check).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .checkpoint import (
    ENGINES,
    MAX_PARAMETERS,
    TORCH_MISSING,
    CheckpointError,
    export_torch,
    load_checkpoint,
)
from .checks import shown_path
from .data import DATASETS
from .files import NotARegularFile, refuse_non_regular
from .nn import ACTIVATIONS
from .printing import emit
from .training import language
from .training.evaluate import evaluate_checkpoint
from .training.loop import run_training
from .training.outputs import OutputError, RunFolder
from .training.settings import (
    CNN_CHANNELS,
    CNN_STEPS,
    LOSS_NAMES,
    MAX_NOISE,
    MAX_SAMPLES,
    MAX_STEPS,
    MIN_SAMPLES,
    MODELS,
    OPTIMIZERS,
    WORK_LIMITS,
    TrainingDiverged,
    UsageError,
    resolve_config,
)

Subparsers = Any  # argparse's _SubParsersAction, which it does not export


# ---------------------------------------------------------------------- argument types
def whole_number(option: str, minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` to ``maximum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    parse.__name__ = option  # argparse names the type in some messages
    return parse


def real_number(
    option: str, *, positive: bool, maximum: float | None = None
) -> Callable[[str], float]:
    """An argparse type: a finite number, greater than 0 or at least 0, and at most
    ``maximum`` when one is given."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if positive and not value > 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
        if not positive and value < 0:
            raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {text}")
        return value

    parse.__name__ = option
    return parse


def layer_sizes(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated positive layer sizes such as 16,16."""
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive layer sizes such as 16,16, got {text!r}"
        )
    return sizes


def nonempty_path(what: str) -> Callable[[str], Path]:
    """An argparse type: a path, which may not be empty (``Path("")`` would be "."), so
    an unset shell variable is an error, not the current folder."""

    def parse(text: str) -> Path:
        if not text:
            raise argparse.ArgumentTypeError(f"expected {what}, got an empty string")
        return Path(text)

    parse.__name__ = "path"
    return parse


file_path = nonempty_path("a file name")


def shell_word(text: str) -> str:
    """``text`` as one word a POSIX shell reads back unchanged: quoted when it needs it,
    and as ``$'...'`` with escapes when it holds a newline or another control character."""
    if text.isprintable():
        return shlex.quote(text)
    escaped = "".join(
        "\\" + c if c in "\\'" else c if c.isprintable() else c.encode("unicode_escape").decode()
        for c in text
    )
    return f"$'{escaped}'"


def random_seed(text: str) -> int:
    """An argparse type: a seed NumPy accepts, 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2**32 - 1, got {value}")
    return value


def _add_data_options(parser: argparse.ArgumentParser, for_evaluate: bool) -> None:
    default = "the checkpoint's" if for_evaluate else None
    parser.add_argument(
        "--dataset",
        choices=DATASETS if for_evaluate else (*DATASETS, *language.LM_DATASETS),
        default=None if for_evaluate else "moons",
        help=f"the data (default: {default or 'moons'}); moons and circles come from "
        "scikit-learn, xor and spiral are two-class toys; digits is scikit-learn's 1,797 8x8 "
        "digits, split 80/20 (stratified) into train and test"
        + (
            ""
            if for_evaluate
            else "; names (32,033 first names) and shakespeare (Tiny Shakespeare, 1.1 MB) "
            "train a character-level language model (see the language-model options)"
        ),
    )
    parser.add_argument(
        "--samples",
        type=whole_number("--samples", MIN_SAMPLES, MAX_SAMPLES),
        metavar="N",
        help=f"points to generate for a 2-D dataset, {MIN_SAMPLES} to {MAX_SAMPLES:,} "
        f"(default: {default or 100})"
        + (
            ""
            if for_evaluate
            else "; points x weights must stay within "
            f"{WORK_LIMITS['scalar']['pass']:,} for the scalar engine and points x (sum of "
            f"layer widths) within {WORK_LIMITS['tensor']['activations']:,} for the tensor "
            "engine"
        ),
    )
    parser.add_argument(
        "--noise",
        type=real_number("--noise", positive=False, maximum=MAX_NOISE),
        metavar="SD",
        help=f"std. deviation of the noise on each point, 0 to {MAX_NOISE:g} (default: "
        f"{default or 0.1})",
    )
    parser.add_argument(
        "--seed",
        type=random_seed,
        default=None if for_evaluate else 1337,
        help=f"seed for the data, the weights and the batch order (default: "
        f"{default or 1337}; 1337 reproduces micrograd's demo)",
    )


# ---------------------------------------------------------------------- train
def add_train(subparsers: Subparsers) -> None:
    """The ``train`` command's options."""
    p = subparsers.add_parser(
        "train",
        help="train an MLP and save its curves, decision boundary and checkpoint",
        description="Train an MLP. With no options: micrograd's demo (moons, MLP 2-16-16-1, "
        "hinge loss + 1e-4 L2, 100 full-batch SGD steps, lr 1.0 -> 0.1). --dataset digits "
        "trains a 64-128-64-10 MLP on scikit-learn's digits with the tensor engine. A run writes "
        "model.json (the checkpoint), metrics.json and loss_curve.png, plus decision_boundary.png "
        "for the 2-D sets or confusion_matrix.png and misclassified.png for digits.",
    )
    _add_data_options(p, for_evaluate=False)
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
        "metrics.json and loss_curve.png.",
    )
    g.add_argument(
        "--data",
        type=file_path,
        metavar="PATH",
        help=f"a UTF-8 text file of at most {language.C.MAX_DATA_BYTES:,} bytes and "
        f"{language.M.MAX_VOCAB} distinct characters: one item a line for bigram, mlp and "
        f"transformer (lines of at most {language.C.MAX_WORD_LENGTH} characters), running "
        "text for gpt",
    )
    g.add_argument(
        "--block-size",
        type=whole_number("--block-size", 1, language.M.MAX_BLOCK),
        metavar="N",
        help="context length in characters (gpt: default 64; mlp: default the longest "
        "line + 1, as transformer and bigram always use)",
    )
    for name, what in (("layer", "blocks"), ("head", "attention heads"), ("embd", "width")):
        g.add_argument(
            f"--n-{name}",
            type=whole_number(f"--n-{name}", 1, 4096),
            metavar="N",
            help=f"transformer and gpt: {what} (default 4, 4, and 128 for gpt or 64 for "
            "transformer; mlp: --n-embd is its embedding width, default 64)"
            if name == "embd"
            else f"transformer and gpt: {what} (default 4)",
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
        "--dtype",
        choices=("float32", "float64"),
        help="the parameters' floating-point type (default float32)",
    )


class Terminated(Exception):
    """SIGTERM, turned into an exception so a run ends as in-order as after Ctrl-C."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """Within the block, SIGINT raises KeyboardInterrupt and SIGTERM Terminated, whatever
    handled them before (launch.py's, which end the program at once while it starts),
    unless it is ignored. Python runs signal handlers in the main thread only, so
    elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: _terminated}
    previous = {  # a signal the program was started ignoring (``nohup``, ``cmd &``) stays so
        signum: signal.signal(signum, handler)
        for signum, handler in wanted.items()
        if signal.getsignal(signum) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


#: Exit codes of an interrupted run: the shell's 128 + the signal's number.
EXIT_INTERRUPTED = {KeyboardInterrupt: 128 + signal.SIGINT, Terminated: 128 + signal.SIGTERM}


def run_train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Train, write the outputs, print the summary: 0; 1 if training diverged or the
    outputs cannot be written; 2 for a bad option or --out; 130 after Ctrl-C (SIGINT) and
    143 after SIGTERM. Whatever the ending, the run folder is complete or absent."""
    if language.wants_language_model(args):
        return run_train_lm(args, parser)
    fail = partial(print, "modelwright-autograd train:", file=sys.stderr)
    run: RunFolder | None = None

    def kept() -> str:
        return run.kept() if run is not None else "nothing was written"

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
        except TrainingDiverged as e:
            fail(f"{e}; {kept()}")
            return 1
        except OutputError as e:
            fail(f"cannot write {shown_path(run.path / e.name)}: {e.reason}; {kept()}")
            return 1
        except OSError as e:  # the folder itself (renaming it into place)
            where = shown_path(run.path if run else args.out)
            fail(f"cannot finish {where}: {e.strerror or e}; {kept()}")
            return 1
        except (KeyboardInterrupt, Terminated) as e:
            name = "SIGINT" if isinstance(e, KeyboardInterrupt) else "SIGTERM"
            fail(f"interrupted ({name}); {kept()}")
            return EXIT_INTERRUPTED[type(e)]
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
    steps keeps the best checkpoint saved so far, with the metrics and curve up to then."""
    fail = partial(print, "modelwright-autograd train:", file=sys.stderr)
    run: RunFolder | None = None
    stopped: type[BaseException] | None = None

    def kept() -> str:
        return run.kept() if run is not None else "nothing was written"

    with interrupts_raise():
        try:
            try:
                settings, corpus = language.resolve_lm(args)
                run = RunFolder.claim(args.out, settings.label, args.overwrite)
            except UsageError as e:
                parser.error(str(e))
            with run:
                result = language.run_lm_training(
                    settings, corpus, run.staging, args.quiet, (KeyboardInterrupt, Terminated)
                )
                stopped = result["history"].interrupted
                if stopped is not None and "model.json" not in result["files"]:
                    raise stopped  # nothing was saved yet: keep nothing
                run.commit()
        except TrainingDiverged as e:
            fail(f"{e}; {kept()}")
            return 1
        except OutputError as e:
            fail(f"cannot write {shown_path(run.path / e.name)}: {e.reason}; {kept()}")
            return 1
        except OSError as e:
            fail(f"cannot finish {shown_path(run.path if run else args.out)}: {e.strerror or e}")
            return 1
        except (KeyboardInterrupt, Terminated) as e:
            name = "SIGINT" if isinstance(e, KeyboardInterrupt) else "SIGTERM"
            fail(f"interrupted ({name}); {kept()}")
            return EXIT_INTERRUPTED[type(e)]
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
        f"trained in {history.seconds:.2f} s ({len(history.loss):,} steps, "
        f"{metrics['tokens_per_second'] or 0:,.0f} tokens/s); outputs in {run.shown}/: "
        f"{', '.join(result['files'])}"
    )
    if stopped is not None:
        name = "SIGINT" if stopped is KeyboardInterrupt else "SIGTERM"
        lines.append(f"interrupted ({name}) after step {len(history.loss):,}: kept the above")
        emit(lines)
        return EXIT_INTERRUPTED[stopped]
    return emit(lines)


# ---------------------------------------------------------------------- evaluate
def add_evaluate(subparsers: Subparsers) -> None:
    """The ``evaluate`` command's options."""
    p = subparsers.add_parser(
        "evaluate",
        help="load a checkpoint and report its loss and accuracy",
        description="Load model.json written by train and print the training objective and "
        "accuracy, by default on the data it was trained on (regenerated from the settings "
        "stored in the checkpoint); the data options override them.",
    )
    p.add_argument(
        "run",
        nargs="?",
        type=file_path,
        metavar="RUN",
        help="a run folder or its model.json (or give --checkpoint)",
    )
    p.add_argument(
        "--checkpoint",
        type=file_path,
        metavar="FILE",
        help="a model.json written by train",
    )
    _add_data_options(p, for_evaluate=True)
    p.add_argument(
        "--eval-iters",
        type=whole_number("--eval-iters", 1, language.MAX_EVAL_ITERS),
        default=200,
        metavar="N",
        help="a text language model: random batches of each split to average (default "
        "200, as nanoGPT); a names model is scored on every word",
    )
    p.set_defaults(func=partial(run_evaluate, parser=p))


def run_evaluate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Score a checkpoint and print it: 0, 1 for a bad checkpoint, 2 for a bad option."""
    if (args.run is None) == (args.checkpoint is None):
        parser.error("give a RUN (a run folder or model.json) or --checkpoint FILE, not both")
    path = language.checkpoint_file(args.run) if args.run is not None else args.checkpoint
    try:
        checkpoint = load_checkpoint(path)
        if isinstance(checkpoint.architecture, language.M.LMArchitecture):
            return _evaluate_lm(args, parser, path, checkpoint)
        result = evaluate_checkpoint(path, args.dataset, args.samples, args.noise, args.seed)
    except CheckpointError as e:
        print(f"modelwright-autograd evaluate: {e}", file=sys.stderr)
        return 1
    except UsageError as e:
        parser.error(str(e))
    settings = ", ".join(f"{k} {v}" for k, v in result.data.items() if v is not None)
    which = "the data it was trained on" if result.trained_on_it else "new data"
    lines = [f"{shown_path(path)}: {result.architecture}, evaluated on {which} ({settings})"]
    for split, found in result.scores.items():
        if result.trained_on_it:
            name, where = split, "training set" if split == "train" else "held-out test set"
        elif split == "train":  # not the data it was trained on: say so on every line
            name, where = "data", "new data, not its training set"
        else:
            name, where = split, "the new data's held-out test set"
        lines.append(f"{name:<6} {found.describe()}  ({where})")
    if not all(math.isfinite(found.loss) for found in result.scores.values()):
        print(
            "modelwright-autograd evaluate: note: the loss is not a finite number (the "
            "model's numbers overflowed, or its weights hold NaN, infinities or a negative "
            "variance)",
            file=sys.stderr,
        )
    return emit(lines)


def _evaluate_lm(
    args: argparse.Namespace, parser: argparse.ArgumentParser, path: Path, checkpoint: Any
) -> int:
    """evaluate for a language model: its loss per character on its training and
    held-out splits, the data found again from its stored settings."""
    for option in ("dataset", "samples", "noise", "seed"):
        if getattr(args, option) is not None:
            parser.error(f"argument --{option}: a language model is evaluated on its own data")
    run = language.load_lm_run(path, checkpoint)
    try:
        losses = language.evaluate_lm_run(run, args.eval_iters, seed=1337)
    except language.NotALanguageModel as e:
        print(f"modelwright-autograd evaluate: {e}", file=sys.stderr)
        return 1
    how = (
        "every word of each split"
        if run.names
        else f"{args.eval_iters} random batches of each split"
    )
    lines = [f"{shown_path(path)}: {checkpoint.architecture.describe()}, scored on {how}"]
    for split, value in losses.items():
        lines.append(f"{split:<6} loss {value:.4f} nats per character")
    return emit(lines)


# ---------------------------------------------------------------------- export
def add_export(subparsers: Subparsers) -> None:
    """The ``export`` command's arguments."""
    p = subparsers.add_parser(
        "export",
        help="write a checkpoint as a PyTorch state_dict (needs torch)",
        description="Write the model in CHECKPOINT (a model.json written by train) to OUT with "
        'torch.save({"architecture": ..., "state_dict": ...}); the state_dict loads into '
        "torch.nn.Sequential(Linear, activation, ..., Linear) and predicts the same numbers. "
        "docs/checkpoints.md shows the lines that rebuild it. PyTorch must be installed.",
    )
    p.add_argument("checkpoint", type=file_path, metavar="CHECKPOINT", help="a model.json")
    p.add_argument("out", type=file_path, metavar="OUT", help="the file to write, e.g. model.pt")
    p.set_defaults(func=partial(run_export, parser=p))


def run_export(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Export a checkpoint for PyTorch: 0, 1 for a bad checkpoint, a missing torch or an
    unwritable OUT, 2 for an OUT that is the checkpoint itself or not a regular file (a
    symlink, device, FIFO or folder, which writing would replace)."""
    shown = shown_path(args.out)
    try:
        refuse_non_regular(args.out)  # before loading: atomic_write checks again at the end
    except NotARegularFile as e:
        parser.error(f"argument OUT: {shown}: {e.strerror}")
    if args.out.resolve() == args.checkpoint.resolve():
        parser.error(f"argument OUT: {shown} is the checkpoint itself; name another file")
    try:
        checkpoint = load_checkpoint(language.checkpoint_file(args.checkpoint))
        export_torch(checkpoint.model, args.out)
    except CheckpointError as e:
        problem = str(e)
    except ImportError:
        problem = TORCH_MISSING
    except OSError as e:  # atomic_write's own message already names the file
        problem = f"cannot write {shown}: {e.strerror}" if e.strerror else str(e)
    else:
        arch = checkpoint.architecture.describe()
        bad = sum(
            int(np.size(v) - np.count_nonzero(np.isfinite(v)))
            for v in checkpoint.model.state_dict().values()
        )
        if bad:
            print(
                f"modelwright-autograd export: warning: {bad:,} of the weights are NaN or "
                "infinite; the exported model will predict NaN or infinities",
                file=sys.stderr,
            )
        if isinstance(checkpoint.architecture, language.M.LMArchitecture):
            return emit([f"wrote {shown}: the {arch} as a state_dict under nanoGPT's names"])
        return emit([f"wrote {shown}: the {arch} as a torch.nn.Sequential state_dict"])
    print(f"modelwright-autograd export: {problem}", file=sys.stderr)
    return 1


# ---------------------------------------------------------------------- sample
def add_sample(subparsers: Subparsers) -> None:
    """The ``sample`` command's options."""
    p = subparsers.add_parser(
        "sample",
        help="write samples from a trained language model",
        description="Sample from the language model of RUN (a run folder or its model.json "
        "written by train). A names model writes whole names, each marked as in the "
        "training set, in the test set or new (as makemore prints them); a text model "
        "continues --prompt. The same --seed gives the same samples. Exit code 2 for a run "
        "that is not a language model, a prompt with characters outside its vocabulary or "
        f"more than {language.MAX_SAMPLE_TOKENS:,} characters in all; 1 for an unreadable "
        "checkpoint.",
    )
    p.add_argument("run", type=file_path, metavar="RUN", help="a run folder or its model.json")
    p.add_argument(
        "--num",
        type=whole_number("--num", 1, 10_000),
        metavar="N",
        help="how many samples (default: 20 names, 1 text)",
    )
    p.add_argument(
        "--prompt",
        metavar="TEXT",
        help="text to continue (default: a newline, as nanoGPT; for names, nothing: each "
        "name starts fresh, or with TEXT)",
    )
    p.add_argument(
        "--tokens",
        type=whole_number("--tokens", 1),
        metavar="N",
        help="text models: characters to write per sample (default 500; --num x --tokens at "
        f"most {language.MAX_SAMPLE_TOKENS:,}); names end at their end token",
    )
    p.add_argument(
        "--temperature",
        type=real_number("--temperature", positive=True, maximum=100.0),
        default=1.0,
        metavar="T",
        help="divide the logits by T: below 1 more likely text, above 1 more surprising "
        "(default 1)",
    )
    p.add_argument(
        "--top-k",
        type=whole_number("--top-k", 1),
        metavar="K",
        help="draw only from the K most likely next characters (default: all)",
    )
    p.add_argument(
        "--seed", type=random_seed, default=1337, help="seed for the draws (default 1337)"
    )
    p.set_defaults(func=partial(run_sample, parser=p))


def run_sample(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print samples: 0; 1 for a bad checkpoint; 2 for a run that is not a language model,
    a prompt outside the vocabulary or too many characters asked for."""
    try:
        run = language.load_lm_run(args.run)
    except CheckpointError as e:
        print(f"modelwright-autograd sample: {e}", file=sys.stderr)
        return 1
    except language.NotALanguageModel as e:
        parser.error(f"argument RUN: {e}")
    vocab = run.vocab
    prompt = args.prompt if args.prompt is not None else ("" if run.names else "\n")
    if len(prompt) > language.MAX_PROMPT:
        parser.error(f"argument --prompt: at most {language.MAX_PROMPT:,} characters")
    missing = vocab.missing(prompt)
    if missing:
        parser.error(
            f"argument --prompt: characters not in the model's vocabulary: "
            f"{''.join(missing[:20])!r} (it knows {vocab.chars!r})"
        )
    if run.names and args.tokens is not None:
        parser.error("argument --tokens: a names model writes each name to its end token")
    num = args.num or (20 if run.names else 1)
    tokens = None if run.names else (args.tokens or 500)
    total = num * (tokens or run.model.block_size)
    if total > language.MAX_SAMPLE_TOKENS:
        parser.error(
            f"argument --tokens: {num:,} samples of {tokens or run.model.block_size:,} "
            f"characters is {total:,}; at most {language.MAX_SAMPLE_TOKENS:,}"
        )
    if args.top_k is not None and args.top_k > vocab.size:
        parser.error(f"argument --top-k: the model has only {vocab.size} tokens")
    samples = language.sample_lm(run, num, prompt, tokens, args.temperature, args.top_k, args.seed)
    if not run.names:
        return emit(["\n---------------\n".join(samples)])
    if run.corpus is None:
        return emit([*samples, f"(not marked as in train/test/new: {run.missing})"])
    train, test = set(run.corpus.train), set(run.corpus.test)
    groups: dict[str, list[str]] = {"in train": [], "in test": [], "new": []}
    for name in samples:
        key = "in train" if name in train else "in test" if name in test else "new"
        groups[key].append(name)
    lines = []
    for key, names in groups.items():
        lines.append(f"{len(names)} samples that are {key}:")
        lines += names
    return emit(lines)


# ---------------------------------------------------------------------- explain
_EXPLAIN_EPILOG = """\
examples:
  modelwright-autograd explain "a*b + c" a=2 b=3 c=4
  modelwright-autograd explain "tanh(w*x + b)" w=-3 x=2 b=6.88 --graph neuron.svg
  modelwright-autograd explain "tanh(a*b + c) * a" a=2 b=-0.5 c=0.3 --html page.html
  modelwright-autograd explain "a*a + a" a=3 --json
  modelwright-autograd explain -- "-a*b" a=2 b=3     (an expression starting with '-')
"""


def add_explain(subparsers: Subparsers) -> None:
    """The ``explain`` command's options."""
    from .explain.expr import FUNCTIONS, MAX_DEPTH, MAX_LENGTH, MAX_NODES

    parser = subparsers.add_parser(
        "explain",
        help="narrate the backward pass of an expression, step by step",
        description=(
            "Build the expression from Values, run backward() and print, for every node "
            "in reverse topological order, the gradient that arrived, each input's local "
            "derivative and what was pushed to it. The expression may use numbers "
            "(constants), the variables given as NAME=VALUE, + - * / **, unary minus, "
            f"parentheses and {' '.join(FUNCTIONS)}; anything else is refused (exit code 2), "
            f"as is an expression longer than {MAX_LENGTH:,} characters, of more than "
            f"{MAX_NODES:,} operations or nested more than {MAX_DEPTH} levels deep "
            "(parentheses, unary minus, ** and calls; a flat sum a+b+c+... is one level). "
            "An output that cannot be written is "
            "exit code 1, checked first, and so is --torch without PyTorch installed "
            "(--torch with --json: exit code 2)."
        ),
        epilog=_EXPLAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("expression", help='for example "a*b + c"')
    parser.add_argument("assignments", nargs="*", metavar="NAME=VALUE", help="e.g. a=2 b=3")
    parser.add_argument(
        "--json", action="store_true", help="print {value, grads, nodes, steps} as JSON instead"
    )
    parser.add_argument(
        "--graph",
        metavar="PATH",
        help="also draw the graph to PATH (.svg, or .dot for DOT text; .png, .pdf with Graphviz)",
    )
    parser.add_argument(
        "--html",
        metavar="PAGE",
        help="also write PAGE (.html): a self-contained page that steps through the pass",
    )
    parser.add_argument(
        "--torch",
        action="store_true",
        help="also build the expression in PyTorch (which must be installed) and print the "
        "grad_fn torch records beside each node, and both gradients (docs/pytorch.md)",
    )
    parser.set_defaults(func=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    """Narrate the backward pass: 0, 2 for a refused expression or argument, 1 when an
    output file cannot be written."""
    from .explain.command import run

    return run(args)


#: The longest path init echoes back; a longer one is described, not printed.
MAX_SHOWN_PATH = 200


def add_init(subparsers: Subparsers) -> None:
    """The ``init`` command's options."""
    parser = subparsers.add_parser(
        "init",
        help="write a starter engine to fill in (engine.py, nn.py, README, notebook)",
        description=(
            "Write a starter for building your own engine into DIR: engine.py with a Value "
            "whose forwards are given and whose backward rules and backward() are TODOs, "
            "nn.py (Neuron, Layer, MLP), a README of steps and starter.ipynb with the "
            "gradient check. DIR must be new or empty, or a symbolic link to an empty "
            "folder (exit code 2 otherwise); an existing folder is filled in place and "
            "keeps its permissions, owner and group, and missing parent folders are "
            "created, as mkdir -p and git init do. A failed write (exit code 1) removes "
            "the files it wrote."
        ),
    )
    parser.add_argument(
        "dir", type=nonempty_path("a folder name"), metavar="DIR", help="a new or empty folder"
    )
    parser.add_argument(
        "--tensor",
        action="store_true",
        help=(
            "the next step: a Tensor over NumPy arrays (broadcasting, @, sum/mean, "
            "log_softmax, cross_entropy) and an nn.py with Linear and MLP, checked on digits"
        ),
    )
    parser.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    """Write the starter: 0; 1 when it cannot be written (nothing is left behind); 2 when
    DIR is not a new or empty folder or not a usable name."""
    from .learner.report import printable
    from .learner.starter import StarterError, write_starter

    try:
        written = write_starter(args.dir, tensor=args.tensor)
    except StarterError as error:
        print(f"modelwright-autograd init: error: {printable(str(error))}", file=sys.stderr)
        return error.exit_code
    shown = shell_word(str(args.dir))
    if len(shown) > MAX_SHOWN_PATH:
        shown = f"the folder given (a path of {len(str(args.dir)):,} characters)"
        check = "modelwright-autograd check on that folder"
    else:
        check = f"modelwright-autograd check {shown}"
    return emit(
        [
            f"wrote {', '.join(p.name for p in written)} to {shown}",
            f"next: fill in the TODOs, then run: {check}",
        ]
    )


#: The longest --timeout of check: ten minutes per check, 90 for training.
MAX_CHECK_TIMEOUT = 600.0


def add_check(subparsers: Subparsers) -> None:
    """The ``check`` command's options."""
    parser = subparsers.add_parser(
        "check",
        help="grade your own engine against the build gate",
        description=(
            "Import your Value (and MLP, if any) from PATH in a separate process and check "
            "every op, gradient accumulation, the backward order and seed, random "
            "expressions and the network against PyTorch (float64, 1e-6) or, without "
            "torch, finite differences. A tensor engine (a Tensor class, or a Value holding "
            "a NumPy array, as init --tensor writes) gets the tensor checks: every op over "
            "a table of broadcast, @ and reduction shapes, Linear/MLP gradients, and training "
            "on the digits. Exit code 0 when the build gate passes, 1 when "
            "not, 2 for a PATH that cannot be checked, 130 on Ctrl-C, 143 on SIGTERM, 129 "
            "on SIGHUP (the engine's processes are killed first)."
        ),
    )
    parser.add_argument(
        "path",
        type=nonempty_path("a file or folder name"),
        metavar="PATH",
        help="your engine: a .py file or a folder",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--oracle",
        choices=("auto", "torch", "fd"),
        default="auto",
        help="torch, finite differences (fd), or torch when importable (default)",
    )
    parser.add_argument(
        "--timeout",
        type=real_number("--timeout", positive=True, maximum=MAX_CHECK_TIMEOUT),
        default=10.0,
        metavar="SECONDS",
        help=(
            "time allowed for each check (default 10, at most "
            f"{MAX_CHECK_TIMEOUT:g}; training gets 9 times this)"
        ),
    )
    parser.set_defaults(func=run_check)


class Stopped(BaseException):
    """SIGTERM or SIGHUP during ``check``: ends it as Ctrl-C does (a BaseException, so no
    ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def run_check(args: argparse.Namespace) -> int:
    """Grade the engine at PATH: 0 when the gate passes, 1 when not, 2 for a PATH that
    cannot be checked, 128 + the signal's number on SIGINT, SIGTERM or SIGHUP (the
    engine's processes are killed on the way out)."""
    from .learner.grader import grade
    from .learner.locate import LocateError, locate
    from .learner.oracle import OracleError, choose_oracle
    from .learner.report import printable

    caught = (signal.SIGTERM, signal.SIGHUP)
    in_main = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.signal(signum, _stopped) for signum in caught} if in_main else {}
    try:
        target = locate(args.path)
        oracle = choose_oracle(args.oracle)  # imports torch: seconds Ctrl-C may fall in
        report = grade(target, oracle, args.timeout, 9 * args.timeout)
    except (LocateError, OracleError) as error:
        print(f"modelwright-autograd check: error: {printable(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("modelwright-autograd check: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        print(f"modelwright-autograd check: interrupted ({name})", file=sys.stderr)
        return 128 + stop.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    status = emit([report.to_json() if args.json else report.to_text()])
    return status or (0 if report.passed else 1)


# ---------------------------------------------------------------------- the program
COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    add_train,
    add_evaluate,
    add_sample,
    add_export,
    add_explain,
    add_init,
    add_check,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="modelwright-autograd",
        description=(
            "Reverse-mode autodiff from scratch: train, evaluate, export and explain; "
            "init and check build your own engine."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]), run the command, return its exit code.

    Ctrl-C (SIGINT) and SIGTERM end every command here with one line and the shell's exit
    code, 130 or 143, instead of a traceback; train and check handle them first themselves
    (to say what was kept, to stop the engine's process). An OSError no command handled
    (a file it cannot write, such as ``explain --graph`` to a FIFO) is one line naming the
    file, exit code 1."""
    name = "modelwright-autograd"
    with interrupts_raise():
        try:
            args = build_parser().parse_args(argv)
            name = f"modelwright-autograd {args.command}"
            return int(args.func(args) or 0)
        except (KeyboardInterrupt, Terminated) as e:
            print(f"{name}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED[type(e)]
        except OSError as e:
            where = f"{shown_path(e.filename)}: " if e.filename else ""
            problem = f"{where}{e.strerror}" if e.strerror else str(e)
            print(f"{name}: error: {problem}", file=sys.stderr)
            return 1
