"""Shared checks of user-given values and the one way error messages describe them, used by
the engines, the nets, the checkpoint and the CLI layer (standard library only)."""

from __future__ import annotations

import math
import numbers
import os
import reprlib
from typing import Any

#: The most weights a model may hold, per engine: what a checkpoint loads and what
#: ``nn.MLP`` builds. A Value costs ~110 bytes and ~4 us to build, so a million is ~0.1 GB
#: and a few seconds; a tensor weight is 4 bytes in model.safetensors (float32), so two
#: million is an 8 MB file (docs/checkpoints.md). The largest model this project trains
#: (the digits MLP) has 17,226.
MAX_PARAMETERS = {"scalar": 1_000_000, "tensor": 2_000_000}
#: The most weights a language model's checkpoint may hold: nanoGPT's Shakespeare GPT (6
#: layers, 6 heads, 384 wide, block 256: 10.8M) with room to spare. Whether a model this
#: size can train is decided by a memory estimate (training/language.py); the file, with
#: the optimiser's state, is ~39 bytes a weight in float32 (docs/checkpoints.md).
MAX_LM_PARAMETERS = 12_000_000
#: The longest context (the attention scores are block x block per head) and the most
#: tokens (characters) a language model may have here: budgets the commands and the file
#: loaders apply (``check_lm_sizes``); the models themselves check structure only.
MAX_LM_BLOCK, MAX_LM_VOCAB = 1024, 256


def check_lm_sizes(block_size: int, vocab_size: int) -> None:
    """A ValueError if a language model's context or vocabulary is over this project's
    budget (``MAX_LM_BLOCK``, ``MAX_LM_VOCAB``)."""
    for name, value, most in (
        ("block_size", block_size, MAX_LM_BLOCK),
        ("vocab_size", vocab_size, MAX_LM_VOCAB),
    ):
        if value > most:
            raise ValueError(f"{name} must be at most {most}, got {value}")


def describe(x: object) -> str:
    """``str '3'``: the type name and a short repr, for error messages."""
    text = repr(x)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(x).__name__} {text}"


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as error messages show it: each character that is not printable (a newline,
    a tab, an escape, an undecodable byte) written as its escape, ``\\n``, ``\\x1b``,
    ``\\udcff``, so a one-line message stays one line and shows what is really there."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    return shown_text(text)


def shown_text(text: str, keep: str = "") -> str:
    """``text`` with each character that is not printable written as its escape (as
    ``shown_path``), except those in ``keep`` (the newlines of sampled running text), so
    nothing written to a terminal can move its cursor or change its colours."""
    return "".join(
        c
        if c.isprintable() or c in keep
        else c.encode("unicode_escape", "backslashreplace").decode("ascii")
        for c in text
    )


def positive_int(n: object, what: str) -> int:
    """``n`` as an int if it is a whole number of at least 1 (not a bool), else a ValueError
    saying ``what`` must be one."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"{what} must be a positive whole number, got {n!r}")
    return int(n)


def is_json_int(x: Any) -> bool:
    """A JSON integer; Python counts true and false as the ints 1 and 0, JSON does not."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_json_positive_int(x: Any) -> bool:
    """A JSON integer of at least 1."""
    return is_json_int(x) and x >= 1


def is_finite_non_negative(x: Any) -> bool:
    """A JSON number (not a bool) that is a finite float64 and at least 0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x) and x >= 0
    except OverflowError:  # an int too large for a float64
        return False


def as_float(x: object, where: str) -> float:
    """Convert a real number to float, or raise a TypeError naming what was given.

    Accepted: int, float, and anything registered as ``numbers.Real`` (NumPy's float64,
    float32 and integer scalars, ``fractions.Fraction``). Refused: bool (``Value(True)`` is
    almost always a mistake; write 1.0), complex, strings, None, containers.
    """
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{where} needs a real number, got {describe(x)}")
    try:
        return float(x)
    except OverflowError:  # an int beyond float64's range (about 1.8e308)
        raise OverflowError(f"{where}: {describe(x)} is too large for a float64") from None


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 40


def shown(value: Any) -> str:
    """``repr(value)`` cut to a few dozen characters, for error messages about file content
    (a list of 100,000 layer sizes or a 4,000-digit number is not printed whole)."""
    return _REPR.repr(value)
