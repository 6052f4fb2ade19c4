"""The ``modelwright-autograd`` command line: argparse and printing only.

One module per command (train, evaluate, sample, export, import, explain, init, check), each an
``add_<name>(subparsers)`` that declares its options and sets ``func`` to a
``run_<name>(args, ...)`` returning the exit code; ``COMMANDS`` lists them in ``--help``
order, so a new command is one such module and one line there. options.py holds the
argument types the commands share, signals.py the Ctrl-C and SIGTERM handling. The work
itself is in ``training`` (train, evaluate, sample, export), ``explain`` and ``learner``
(init, check).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..checks import shown_path
from .check import add_check
from .evaluate import add_evaluate
from .explain import add_explain
from .export import add_export
from .import_ import add_import
from .init import add_init
from .options import Parser, Subparsers
from .sample import add_sample
from .signals import EXIT_INTERRUPTED, Terminated, interrupts_raise
from .train import add_train

COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    add_train,
    add_evaluate,
    add_sample,
    add_export,
    add_import,
    add_explain,
    add_init,
    add_check,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="modelwright-autograd",
        description=(
            "Reverse-mode autodiff from scratch. train trains an MLP (moons, digits, ...) or a "
            "character-level language model (makemore's names, nanoGPT's Shakespeare GPT); "
            "evaluate, sample and export use what it saved; explain narrates a backward "
            "pass; init and check help you build your own engine."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(subparsers)
    parser.commands = subparsers.choices
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
