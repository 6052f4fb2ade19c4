"""``modelwright-autograd check``: grade a learner's engine in its sandbox."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import Any

from ..printing import emit
from .options import Subparsers, nonempty_path, real_number

#: The longest --timeout of check: ten minutes per check, 90 for training.
MAX_CHECK_TIMEOUT = 600.0
#: The shortest: starting Python and importing an engine takes a good part of a second.
MIN_CHECK_TIMEOUT = 1.0


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
            "on the digits. A backprop exercise (init --backprop: a module defining forward "
            "and dlogprobs) gets one row per tensor, each gradient against PyTorch's autograd "
            "of the same forward, then the fused forms and training. A tensor engine with "
            "init --lm's lm_ops.py and models.py beside it then gets the LM checks, which need "
            "PyTorch: each op forward and backward, makemore's MLP and a GPT (the loss and "
            "every parameter's gradient by name), and AdamW training on names and Tiny "
            "Shakespeare, each loss equal to torch's. A repository (PATH holds pyproject.toml, "
            "as init writes it) then gets the course's definition of done: its tests pass, a "
            "unit test per op, REPORT.md, the loss curve, the README, the git history. "
            "Exit code 0 when the build gate passes (and the definition of done is met), 1 "
            "when not, 2 for a PATH that cannot be checked, 130 on Ctrl-C, 143 on SIGTERM, "
            "129 on SIGHUP (the engine's processes are killed first)."
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
        type=real_number(
            "--timeout", positive=True, minimum=MIN_CHECK_TIMEOUT, maximum=MAX_CHECK_TIMEOUT
        ),
        default=10.0,
        metavar="SECONDS",
        help=(
            f"time allowed for each check (default 10, at least {MIN_CHECK_TIMEOUT:g}, at most "
            f"{MAX_CHECK_TIMEOUT:g}; training gets 9 times this)"
        ),
    )
    parser.set_defaults(func=run_check)


def grade_backprop_exercise(exercise: Any, args: argparse.Namespace) -> Any:
    """The backprop-by-hand report: PyTorch is its only oracle (OracleError without it)."""
    from ..learner.backprop.grader import grade_backprop
    from ..learner.scalar.oracle import OracleError

    if args.oracle == "fd":
        raise OracleError("backprop by hand is checked against PyTorch only, not --oracle fd")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise OracleError("backprop by hand is checked against PyTorch: install torch") from None
    return grade_backprop(exercise, args.timeout, 9 * args.timeout)


class Stopped(BaseException):
    """SIGTERM or SIGHUP during ``check``: ends it as Ctrl-C does (a BaseException, so no
    ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def run_check(args: argparse.Namespace) -> int:
    """Grade the engine at PATH (and a repository's definition of done): 0 when the gate
    passes (and the definition of done is met), 1 when not, 2 for a PATH that
    cannot be checked, 128 + the signal's number on SIGINT, SIGTERM or SIGHUP (the
    engine's processes are killed on the way out)."""
    started = time.monotonic()  # the verdict line's time is the whole check's
    from ..learner.backprop.grader import find_exercise
    from ..learner.done import grade_done, is_repository, read_git
    from ..learner.locate import LocateError, locate
    from ..learner.report import printable
    from ..learner.scalar.grader import grade
    from ..learner.scalar.oracle import OracleError, choose_oracle

    caught = (signal.SIGTERM, signal.SIGHUP)
    in_main = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.signal(signum, _stopped) for signum in caught} if in_main else {}
    try:
        exercise = find_exercise(args.path)  # backprop by hand (init --backprop), or None
        if exercise is not None:
            report = grade_backprop_exercise(exercise, args)
            report.seconds = time.monotonic() - started
            return emit([report.to_json() if args.json else report.to_text()]) or (
                0 if report.passed else 1
            )
        target = locate(args.path)
        repository = is_repository(target.path)  # the definition of done is graded too
        git = read_git(target.path) if repository else None  # before the learner's code runs
        oracle = choose_oracle(args.oracle)  # imports torch: seconds Ctrl-C may fall in
        report = grade(target, oracle, args.timeout, 9 * args.timeout)
        if git is not None:
            report.done = grade_done(target.path, report, 9 * args.timeout, git)
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
    report.seconds = time.monotonic() - started
    status = emit([report.to_json() if args.json else report.to_text()])
    return status or (0 if report.done_met else 1)
