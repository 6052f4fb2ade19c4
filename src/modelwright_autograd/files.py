"""Writing files atomically, and reading one without trusting it: the helpers every
writer and every reader of a user's file in the package uses."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import signal
import stat
import threading
from collections.abc import Callable, Iterator
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


def folder_problem(folder: str | os.PathLike[str]) -> str | None:
    """Why files cannot be made in ``folder``, in a few words, or None when it is a
    folder: it does not exist, or it or a path above it is a file, not a folder."""
    folder = Path(folder)
    if folder.is_dir():
        return None
    for above in (folder, *folder.parents):
        if os.path.exists(above):
            if not above.is_dir():
                return f"{shown_path(above)} is a file, not a folder"
            break
    return f"the folder {shown_path(folder)} does not exist"


def refuse_non_regular(path: str | os.PathLike[str]) -> None:
    """Raise NotARegularFile when something other than a regular file is at ``path``.

    ``lstat``, not ``stat``: a symbolic link is refused rather than followed, because
    renaming over it would replace the link itself, and following it would write wherever
    it points (a file the user never named). Nothing there, or a regular file, is fine."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (a file on the way)
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
    problem = folder_problem(path.parent)
    if problem:  # say so plainly, rather than name the temporary file
        raise FileNotFoundError(f"cannot write {shown_path(path)}: {problem}")
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


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block and deliver them after it, to whatever
    handled them before, so a Ctrl-C cannot land between writes that must happen together
    (a checkpoint's two files). Python runs signal handlers in the main thread only, so
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler is not None and handler is not signal.SIG_IGN:  # None: set outside Python
            previous[signum] = signal.signal(signum, lambda s, _: noted.append(s))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


def write_json(
    path: str | os.PathLike[str], obj: Any, indent: int = 1, allow_nan: bool = False
) -> None:
    """Write ``obj`` as indented JSON, atomically. NaN and infinities are refused unless
    ``allow_nan`` (they are not JSON; Python's reader accepts them)."""

    def write(f: IO[str]) -> None:
        json.dump(obj, f, indent=indent, allow_nan=allow_nan)
        f.write("\n")

    atomic_write(path, write)


class UnreadableFile(Exception):
    """``read_bounded`` refused a path: ``reason`` says why in a few words, ``kind`` is
    set when it is not a regular file and ``size`` when it is too big."""

    def __init__(self, reason: str, kind: str | None = None, size: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.kind, self.size = reason, kind, size


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of ``path``, if it is a regular file of at most ``limit`` bytes. The kind
    and size are checked before reading, on a descriptor opened without blocking, so a
    FIFO, ``/dev/zero`` or a huge sparse file is refused at once (UnreadableFile)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UnreadableFile("no such file") from None
    except OSError as e:
        raise UnreadableFile(f"cannot open it ({e.strerror})") from None
    except ValueError as e:  # a NUL in the name
        raise UnreadableFile(f"cannot open it ({e})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode)
            raise UnreadableFile(f"is {kind}", kind=kind)
        if info.st_size > limit:
            raise UnreadableFile(f"is {info.st_size:,} bytes", size=info.st_size)
        chunks, size = [], 0
        while size <= limit:  # the file may grow after fstat: never read past this
            chunk = os.read(fd, min(2**20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise UnreadableFile(f"cannot read it ({e.strerror})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise UnreadableFile(f"grew past {limit:,} bytes while being read", size=size)
    return b"".join(chunks)


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Raise OSError with a one-line message naming ``path`` unless ``atomic_write`` can
    write there: nothing or a regular file is at ``path`` (not a folder, FIFO, device or
    symbolic link, see ``refuse_non_regular``), and its folder exists and takes a new file
    (probed by creating and removing one). Call it before the work whose result goes to
    ``path``. The message shows the path with ``shown_path`` (one line)."""
    path = Path(path)
    shown = shown_path(path)
    try:
        refuse_non_regular(path)
    except NotARegularFile as e:
        raise OSError(e.errno, f"cannot write {shown}: {e.strerror}") from None
    problem = folder_problem(path.parent)
    if problem:
        raise FileNotFoundError(f"cannot write {shown}: {problem}")
    probe = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.probe")
    try:
        with open(probe, "xb"):
            pass
    except OSError as e:
        raise OSError(e.errno, f"cannot write {shown}: {e.strerror or e}") from None
    probe.unlink(missing_ok=True)
    return path
