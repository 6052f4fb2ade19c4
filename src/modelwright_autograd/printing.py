"""Printing that the commands share (cli/ and the command modules below it, such as
explain/command.py): standard library only, so any layer may use it."""

from __future__ import annotations

import os
import sys


def emit(lines: list[str]) -> int:
    """Print ``lines`` and return 0; if the reader has gone (``| head``), stop quietly
    and return 1."""
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 1
    return 0
