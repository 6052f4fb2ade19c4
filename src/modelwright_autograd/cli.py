"""The ``modelwright-autograd`` command: one subcommand per job.

Each subcommand lives beside the code it drives and registers itself through a
``register(subparsers)`` function that adds its parser and sets ``func`` to a callable
taking the parsed arguments and returning the exit code.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="modelwright-autograd",
        description="Reverse-mode autodiff from scratch: train, evaluate and explain.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in _registrations():
        register(subparsers)
    return parser


def _registrations() -> list[Callable[[Any], None]]:
    """The ``register`` function of every subcommand module, in --help order."""
    from . import explain, train

    return [train.register_train, train.register_evaluate, explain.register]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]), run the subcommand, return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
