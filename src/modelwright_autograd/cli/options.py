"""The argument types and options the commands share: whole and real numbers, layer
sizes, paths, seeds, the data options of train and evaluate; and ``UsageError``, an option
refused (exit code 2), which a library ``SettingError`` becomes."""

from __future__ import annotations

import argparse
import math
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..checks import shown_path
from ..data import DATASETS
from ..training import language
from ..training.settings import MAX_NOISE, MAX_SAMPLES, MIN_SAMPLES, SettingError

Subparsers = Any  # argparse's _SubParsersAction, which it does not export


class Parser(argparse.ArgumentParser):
    """argparse's parser, except that a refusal is one line naming the command and the
    option, ``modelwright-autograd train: --lr: must be greater than 0, got 0``, with exit
    code 2 and no usage block (``--help`` shows it); an option the command does not have is
    refused by that command, not by the program."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: dict[str, Parser] = {}  # the program's: each command's parser, by name

    def error(self, message: str) -> NoReturn:
        message = message.removeprefix("argument ")
        if self.prog == "modelwright-autograd" or "unrecognized arguments" in message:
            message += f" (see {self.prog} --help)"
        self.exit(2, f"{self.prog}: {shown_path(message)}\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        found, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self.commands.get(getattr(found, "command", None), self)
            command.error(f"unrecognized arguments: {' '.join(extras)}")
        return found


class UsageError(Exception):
    """An option that makes no sense, alone or with the others: the exit code 2 of a usage
    error."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        self.message = message
        super().__init__(f"argument {option}: {message}")

    @classmethod
    def of(cls, e: UsageError | SettingError) -> UsageError:
        """``e`` as the option's error: a SettingError's setting named as its option."""
        return e if isinstance(e, UsageError) else cls(option_name(e.setting), e.message)


def option_name(setting: str) -> str:
    """The option that gives ``setting``: ``--block-size`` for ``block_size``."""
    return "--" + setting.replace("_", "-")


def whole_number(option: str, minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` to ``maximum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    parse.__name__ = option  # argparse names the type in some messages
    return parse


def real_number(
    option: str, *, positive: bool, minimum: float | None = None, maximum: float | None = None
) -> Callable[[str], float]:
    """An argparse type: a finite number, greater than 0 or at least 0, and at least
    ``minimum`` and at most ``maximum`` when they are given."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if minimum is not None and value < minimum:  # first: the bound a user must meet
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text}")
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


def add_data_options(
    parser: argparse.ArgumentParser, for_evaluate: bool, samples_budget: str = ""
) -> None:
    """--dataset, --samples (``samples_budget`` adds what a run allows), --noise, --seed."""
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
        f"(default: {default or 100}){samples_budget}",
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
