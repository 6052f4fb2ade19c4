"""``modelwright-autograd init DIR``: copy the starter engine into a new or empty folder."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from importlib import resources
from pathlib import Path

from ..files import atomic_write

TEMPLATES = ("engine.py", "nn.py", "README.md", "starter.ipynb")


class StarterError(Exception):
    """DIR is not a new or empty folder (exit code 2), or cannot be written (1)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def write_starter(directory: str | Path) -> list[Path]:
    """Write the starter's files into ``directory`` (created if missing) and return their
    paths. Refuses a folder that holds anything, writing nothing. The files are written
    into a staging folder beside ``directory`` and renamed into place, so a failure (a
    full disk) leaves no half-written starter to block the next ``init``."""
    directory = Path(directory)
    try:
        if directory.exists() and not directory.is_dir():
            raise StarterError(f"{directory} exists and is not a folder")
        if directory.is_dir() and any(directory.iterdir()):
            raise StarterError(f"{directory} is not empty; choose a new or empty folder")
    except OSError as error:  # a name too long, a folder we may not read
        raise StarterError(f"cannot use {directory}: {error.strerror or error}") from None
    staging = directory.parent / f".init-{secrets.token_hex(4)}.tmp"
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
        templates = resources.files(__package__) / "templates"
        for name in TEMPLATES:
            text = (templates / name).read_text(encoding="utf-8")
            atomic_write(staging / name, lambda f, text=text: f.write(text))
        os.replace(staging, directory)  # onto a missing or empty folder
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        code = 2 if error.errno == errno.ENAMETOOLONG else 1
        raise StarterError(f"cannot write {directory}: {error.strerror or error}", code) from None
    return [directory / name for name in TEMPLATES]
