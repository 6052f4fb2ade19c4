"""Writing files atomically: the helpers every writer in the package uses."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], None], binary: bool = False
) -> None:
    """Call ``write(file)`` on a new temporary file beside ``path``, then rename it to
    ``path``. If anything fails on the way, the temporary file is removed and whatever was
    at ``path`` before is untouched."""
    path = Path(path)
    if not path.parent.is_dir():  # say so plainly, rather than name the temporary file
        raise FileNotFoundError(f"cannot write {path}: the folder {path.parent} does not exist")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        # "x": create a fresh file (with the usual permissions), never reuse one
        with open(tmp, "xb" if binary else "x", encoding=None if binary else "utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
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
