"""The ``init`` and ``check`` subcommands: a starter engine to fill in, and its grader."""

from __future__ import annotations

import argparse
import sys

from .starter import StarterError, write_starter

_PROG = "modelwright-autograd"


def register_init(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``init`` subcommand."""
    parser = subparsers.add_parser(
        "init",
        help="write a starter engine to fill in (engine.py, nn.py, README, notebook)",
        description=(
            "Write a starter for building your own engine into DIR: engine.py with a Value "
            "whose forwards are given and whose backward rules and backward() are TODOs, "
            "nn.py (Neuron, Layer, MLP), a README of steps and starter.ipynb with the "
            "gradient check. DIR must be new or empty (exit code 2 otherwise)."
        ),
    )
    parser.add_argument("dir", metavar="DIR", help="a new or empty folder")
    parser.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    """0 when the starter is written, 2 when DIR is not empty or cannot be written."""
    try:
        written = write_starter(args.dir)
    except StarterError as error:
        print(f"{_PROG} init: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(p.name for p in written)} to {args.dir}")
    print(f"next: fill in the TODOs, then run: {_PROG} check {args.dir}")
    return 0


def register_check(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand."""
    parser = subparsers.add_parser(
        "check",
        help="grade your own engine against the build gate",
        description=(
            "Import your Value (and MLP, if any) from PATH in a separate process and check "
            "every op, gradient accumulation, the backward order and seed, random "
            "expressions and the network against PyTorch (float64, 1e-6) or, without "
            "torch, finite differences. Exit code 0 when the build gate passes, 1 when "
            "not, 2 for a PATH that cannot be checked, 130 when interrupted."
        ),
    )
    parser.add_argument("path", metavar="PATH", help="your engine: a .py file or a folder")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--oracle",
        choices=("auto", "torch", "fd"),
        default="auto",
        help="torch, finite differences (fd), or torch when importable (default)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time allowed for each check (default 10; training gets 9 times this)",
    )
    parser.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    """0 when the gate passes, 1 when it does not, 2 for a bad PATH, 130 on Ctrl-C."""
    from .checks import grade
    from .locate import LocateError, locate
    from .oracle import choose_oracle

    if not args.timeout > 0:
        print(f"{_PROG} check: error: --timeout must be > 0", file=sys.stderr)
        return 2
    try:
        target = locate(args.path)
        oracle = choose_oracle(args.oracle)
    except (LocateError, RuntimeError) as error:
        print(f"{_PROG} check: error: {error}", file=sys.stderr)
        return 2
    try:
        report = grade(target, oracle, args.timeout, 9 * args.timeout)
    except KeyboardInterrupt:  # the child was killed on the way out of grade()
        print(f"{_PROG} check: interrupted", file=sys.stderr)
        return 130
    print(report.to_json() if args.json else report.to_text())
    return 0 if report.passed else 1
