"""``modelwright-autograd init [--tensor] DIR``: copy the starter engine (the scalar Value,
or with ``--tensor`` the NumPy Tensor from templates_tensor/) into a new or empty folder.

The folder is made (``mkdir``, as the user's umask and a setgid parent decide) when it is
missing; an existing empty folder (``.``, ``"$PWD"``, a symbolic link to one, a mount
point) is filled in place, never replaced, so it keeps its mode, owner, group and setgid
bit. The files are written into a hidden staging folder inside it (same filesystem, same
group rules) and renamed up one by one; a failure removes what was written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from importlib import resources
from pathlib import Path

from ..files import atomic_write, file_kind

TEMPLATES = ("engine.py", "nn.py", "README.md", "starter.ipynb")  # both starters' names
#: The backprop-by-hand starter (``init --backprop``, templates_backprop/).
BACKPROP_TEMPLATES = ("backprop.py", "train.py", "README.md")


class StarterError(Exception):
    """DIR is not a new or empty folder (exit code 2), or cannot be written (1)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _existing_folder(directory: Path) -> bool:
    """True for an existing folder (or a symbolic link to one) that is empty; False when
    nothing is there. Anything else is a StarterError saying why it cannot be used."""
    try:
        mode = os.lstat(directory).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(directory).st_mode
        except FileNotFoundError:
            raise StarterError(
                f"{directory} is a symbolic link to {os.readlink(directory)}, which does not "
                "exist; create that folder or name another"
            ) from None
    if not stat.S_ISDIR(mode):
        raise StarterError(f"{directory} is {file_kind(mode)}, not a folder")
    with os.scandir(directory) as entries:
        if next(entries, None) is not None:
            raise StarterError(f"{directory} is not empty; choose a new or empty folder")
    return True


def _templates(tensor: bool, backprop: bool) -> tuple[str, tuple[str, ...]]:
    """The starter's folder of templates and its files."""
    if backprop:
        return "templates_backprop", BACKPROP_TEMPLATES
    return ("templates_tensor" if tensor else "templates"), TEMPLATES


def _write_templates(folder: Path, tensor: bool, backprop: bool = False) -> None:
    kind, names = _templates(tensor, backprop)
    templates = resources.files(__package__) / kind
    for name in names:
        text = (templates / name).read_text(encoding="utf-8")
        atomic_write(folder / name, lambda f, text=text: f.write(text))


def write_starter(
    directory: str | Path, tensor: bool = False, backprop: bool = False
) -> list[Path]:
    """Write the starter's files (the tensor starter's with ``tensor``, the backprop-by-hand
    exercise's with ``backprop``) into ``directory``
    (created if missing, filled in place if it is an empty folder or a link to one) and
    return their paths. Refuses a folder that holds anything, or a path that is not a
    folder, writing nothing. On any failure (a full disk, Ctrl-C) what was written is
    removed and the folder is as it was, or absent."""
    directory = Path(directory)
    try:
        created = not _existing_folder(directory)
    except OSError as error:  # a name too long, a folder we may not read
        raise StarterError(f"cannot use {directory}: {error.strerror or error}") from None
    staging = directory / f".init-{secrets.token_hex(4)}.tmp"
    moved: list[Path] = []
    try:
        if created:  # mkdir, never a rename onto the name: nothing made meanwhile is replaced
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir()
        staging.mkdir()
        _write_templates(staging, tensor, backprop)
        for name in _templates(tensor, backprop)[1]:
            os.rename(staging / name, directory / name)
            moved.append(directory / name)
        staging.rmdir()
    except BaseException as error:
        for path in moved:
            path.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if still empty
        if not isinstance(error, OSError):
            raise
        code = 2 if error.errno == errno.ENAMETOOLONG else 1
        raise StarterError(f"cannot write {directory}: {error.strerror or error}", code) from None
    return [directory / name for name in _templates(tensor, backprop)[1]]
