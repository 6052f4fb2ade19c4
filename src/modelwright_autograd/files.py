"""Writing files atomically: the helpers every writer in the package uses."""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .checks import shown_path

#: What may be at a path other than a regular file, in the words of a message.
_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a ``stat``/``lstat`` mode is, for messages: "a regular file", "a FIFO (named
    pipe)", "a character device"..."""
    return next((name for is_kind, name in _KINDS if is_kind(mode)), "an unknown kind of file")


class NotARegularFile(OSError):
    """The path to write exists and is not a regular file (a symlink, device, FIFO, socket
    or folder): renaming a new file over it would replace that thing, so it is refused."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(
            errno.EEXIST, f"it is {kind}, not a regular file, and is left as it is", str(path)
        )


def refuse_non_regular(path: str | os.PathLike[str]) -> None:
    """Raise NotARegularFile when something other than a regular file is at ``path``.

    ``lstat``, not ``stat``: a symbolic link is refused rather than followed, because
    renaming over it would replace the link itself, and following it would write wherever
    it points (a file the user never named). Nothing there, or a regular file, is fine."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise NotARegularFile(path, file_kind(mode))


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], None], binary: bool = False
) -> None:
    """Call ``write(file)`` on a new temporary file beside ``path``, then rename it to
    ``path``. If anything fails on the way, the temporary file is removed and whatever was
    at ``path`` before is untouched. Only a regular file (or nothing) at ``path`` is
    replaced: anything else is a NotARegularFile (see ``refuse_non_regular``)."""
    path = Path(path)
    refuse_non_regular(path)
    if not path.parent.is_dir():  # say so plainly, rather than name the temporary file
        raise FileNotFoundError(
            f"cannot write {shown_path(path)}: the folder {shown_path(path.parent)} does not exist"
        )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        # "x": create a fresh file (with the usual permissions), never reuse one
        with open(tmp, "xb" if binary else "x", encoding=None if binary else "utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        refuse_non_regular(path)  # again: something may have appeared while writing
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json(
    path: str | os.PathLike[str], obj: Any, indent: int = 1, allow_nan: bool = False
) -> None:
    """Write ``obj`` as indented JSON, atomically. NaN and infinities are refused unless
    ``allow_nan`` (they are not JSON; Python's reader accepts them)."""

    def write(f: IO[str]) -> None:
        json.dump(obj, f, indent=indent, allow_nan=allow_nan)
        f.write("\n")

    atomic_write(path, write)
