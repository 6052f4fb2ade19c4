"""A run's outputs: the folder a run owns, and the checkpoint, metrics.json and the
pictures written into it.

A run claims its folder when it starts (``RunFolder.claim``: created atomically, locked
against other runs), writes everything into a hidden staging folder beside it, and renames
that into place only when every file is written (``commit``). So a run folder is either
complete or empty, and a failed or interrupted run leaves nothing behind (docs/training.md).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import save_checkpoint
from ..checks import shown_path
from ..data import DATASETS_2D, Dataset
from ..files import folder_problem, write_json
from .learners import Learner
from .results import History, Score
from .settings import SettingError, TrainConfig

#: Every file a run may write; ``--overwrite`` removes a folder holding only these (and
#: the temporary files ``files.atomic_write`` leaves if killed), never anything else.
OUTPUT_NAMES = (
    "model.json",
    "model.safetensors",
    "last.json",
    "last.safetensors",
    "metrics.json",
    "loss_curve.png",
    "decision_boundary.png",
    "confusion_matrix.png",
    "misclassified.png",
)
_TEMPORARY = re.compile(rf"\.({'|'.join(map(re.escape, OUTPUT_NAMES))})\.\d+\.[0-9a-f]+\.tmp")


class OutputError(Exception):
    """An output file could not be written (a full disk, a read-only folder)."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"cannot write {name}: {reason}")


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done, so claiming a run folder, renaming
    a run into place or removing a failed one is never cut in half; a signal that came
    meanwhile is raised again as the block ends, and acts then.

    The handlers are replaced, not this thread's signal mask: the kernel gives a signal to
    any thread that does not block it (NumPy's BLAS thread took one in 4 of 30 tries), and
    Python then runs the handler in the main thread all the same. A handler that only
    notes the signal holds it whichever thread received it."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread runs Python's signal handlers
        return
    held: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda signum, frame: held.append(signum))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if held:
            signal.raise_signal(held[0])


class RunFolder:
    """The folder one run owns from start to end, and the staging folder it writes into.

    ``claim`` creates (or takes) the folder and holds an exclusive ``flock`` on it for the
    whole run, so a second run into the same folder is refused. The outputs go into the
    hidden ``.<name>.partial-<pid>`` beside it; ``commit`` renames that over the (empty)
    folder in one step, or, with ``overwrite``, swaps it for the previous run's files.
    ``release`` without a commit removes the staging folder and the folder if this run
    created it: nothing half-written is left.
    """

    def __init__(self, path: Path, fd: int, created: bool, previous: bool) -> None:
        self.path = path  # as the user gave it
        self.shown = shown_path(path)  # and as messages show it
        self._real = path.resolve()
        self._fd = fd
        self.created = created  # this run made the folder (so removes it if it fails)
        self.previous = previous  # the folder held an earlier run, replaced at commit
        self.staging = self._sibling("partial")
        self.committed = False
        self.removed = False  # release() removed the folder this run created
        self.aside: Path | None = None  # where commit(keep_previous=True) put this run

    def _sibling(self, kind: str) -> Path:
        return self._real.with_name(f".{self._real.name}.{kind}-{os.getpid()}")

    @classmethod
    def claim(cls, out: Path | None, dataset: str, overwrite: bool = False) -> RunFolder:
        """Own ``out``, or a new runs/<dataset>-<timestamp>[-n] when it is None. A folder
        that cannot be made, is held by a live run, or holds files (without ``overwrite``,
        or files no run writes) is a SettingError of ``out``: nothing has been done yet."""
        run = None
        try:
            with signals_deferred():  # a signal held here acts when the block ends...
                if out is None:
                    path = _new_default_folder(dataset)
                    run = cls(path, _locked(path), created=True, previous=False)
                else:
                    run = _claim_given(out, overwrite)
                run._clear_leftovers()
                os.mkdir(run.staging)
        except BaseException as e:  # ...and is handled here like any failure: undo
            if run is not None:
                run.release()
            if isinstance(e, OSError):
                where = run.path if run is not None else out or "runs"
                raise SettingError(
                    "out", f"cannot write in {shown_path(where)}: {e.strerror}"
                ) from None
            raise
        return run

    def _clear_leftovers(self) -> None:
        """Remove the staging and swap folders of earlier runs into this folder that were
        killed (SIGKILL): only the holder of the lock makes them, and that is now us. One
        holding a checkpoint (a killed run's best so far, or the previous run's files
        moved aside) is the only copy of it: refused, never removed."""
        for kind in ("partial", "old"):
            for leftover in self._real.parent.glob(f".{glob.escape(self._real.name)}.{kind}-*"):
                if (leftover / "model.json").is_file():
                    raise SettingError(
                        "out",
                        f"{shown_path(leftover)} holds the checkpoint of a run into "
                        f"{self.shown} that was killed; move its model.json out or remove it",
                    )
                shutil.rmtree(leftover, ignore_errors=True)

    @property
    def outputs(self) -> str:
        """Where the committed outputs are, as messages show it (beside the path as the
        user gave it, when that ends in the folder's own name)."""
        if self.aside is None:
            return self.shown
        same_name = self.path.name == self._real.name
        return shown_path(self.path.with_name(self.aside.name) if same_name else self.aside)

    def commit(self, keep_previous: bool = False) -> None:
        """Put the staging folder in place of the run folder, in one rename (the previous
        run's files, with ``overwrite``, are moved aside first and then removed). With
        ``keep_previous`` (an interrupted run), a previous run is left whole and this one
        goes to a new folder beside it, <name>-interrupted (or -interrupted-2, ...)."""
        with signals_deferred():
            if self.previous and keep_previous:
                self.aside = _unique_folder(self._real.with_name(f"{self._real.name}-interrupted"))
                os.rename(self.staging, self.aside)  # over the empty folder just made
                self.committed = True
            elif self.previous:
                old = self._sibling("old")
                os.rename(self._real, old)
                os.rename(self.staging, self._real)
                self.committed = True
                shutil.rmtree(old, ignore_errors=True)
            else:  # renaming a directory over an empty one replaces it atomically
                os.rename(self.staging, self._real)
                self.committed = True
            _sync_folder(self._real.parent)

    def release(self) -> None:
        """Give up the folder; if the run did not commit, remove what it made."""
        with signals_deferred():
            if not self.committed:
                shutil.rmtree(self.staging, ignore_errors=True)
                if self.created:
                    with contextlib.suppress(OSError):  # kept if others put files in it
                        os.rmdir(self._real)
                        self.removed = True
            os.close(self._fd)

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def kept(self) -> str:
        """What an interrupted or failed run left, for its one-line message."""
        if self.committed and self.aside is not None:
            return (
                f"{self.shown} still holds the previous run's files; this run's are in "
                f"{self.outputs}"
            )
        if self.committed:
            return f"the run had finished: its outputs are in {self.shown}"
        if self.previous:
            return f"{self.shown} still holds the previous run's files"
        if self.removed:
            return f"nothing was kept ({self.shown} was removed)"
        if self.created:
            return f"{self.shown} was kept: it holds files this run did not write"
        return f"nothing was written to {self.shown}"


def run_file_named(target: Path, checkpoint: Path) -> str | None:
    """The name of the file of the run holding ``checkpoint`` (a run folder or a
    model.json) that ``target`` is, or None: the checkpoint itself, or any file a run
    writes beside it (``OUTPUT_NAMES``). Files that exist are compared by device and inode
    (``os.path.samestat``), so a relative path, ``..``, a symbolic link on the way or a hard
    link is recognised; one that does not exist yet, by its resolved path."""
    folder = checkpoint if checkpoint.is_dir() else checkpoint.parent
    owned = [(checkpoint.name, checkpoint)] if not checkpoint.is_dir() else []
    owned += [(name, folder / name) for name in OUTPUT_NAMES]
    try:
        target_stat: os.stat_result | None = os.stat(target)
    except (OSError, ValueError):
        target_stat = None
    for name, path in owned:
        try:
            if target_stat is not None and os.path.samestat(target_stat, os.stat(path)):
                return name
        except (OSError, ValueError):
            pass
        if os.path.realpath(target) == os.path.realpath(path):
            return name
    return None


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a run's checkpoint (model.json), so that a run owns it and
    no other command may write there."""
    return (Path(os.path.realpath(folder)) / "model.json").is_file()


def other_run_file(target: Path) -> str | None:
    """The name of the file ``target`` is in a run folder (any run's: ``run_file_named``
    names those of the run being read), or None. Judged by the resolved path, so ``..``
    and symbolic links on the way are seen through."""
    real = Path(os.path.realpath(target))
    if real.name in OUTPUT_NAMES and is_run_folder(real.parent):
        return real.name
    return None


def _new_default_folder(dataset: str) -> Path:
    """Create runs/<dataset>-<timestamp>, or -2, -3... when that exists, so two runs
    started in the same second get two folders."""
    base = Path("runs") / f"{dataset}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        base.parent.mkdir(exist_ok=True)
    except OSError as e:
        raise SettingError("out", f"cannot create {base.parent}: {e.strerror}") from None
    try:
        return _unique_folder(base)
    except OSError as e:
        raise SettingError("out", f"cannot create {shown_path(e.filename)}: {e.strerror}") from None


def _unique_folder(base: Path) -> Path:
    """Create the folder ``base``, or base-2, base-3... when that exists: ``mkdir`` either
    creates the name or fails, so two processes never get the same one."""
    for n in range(1, 10_000):
        candidate = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            os.mkdir(candidate)
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(errno.EEXIST, "-2 to -9999 all exist: give --out", f"{base}")


def _claim_given(out: Path, overwrite: bool) -> RunFolder:
    """Create or take the folder the user named, and lock it."""
    if str(out) == "":
        raise SettingError("out", "the output folder must not be empty")
    shown = shown_path(out)
    real = out.resolve()
    if real == Path.cwd().resolve() or real in Path.cwd().resolve().parents:
        raise SettingError("out", f"{shown} is the current folder or holds it: name a subfolder")
    if out.exists() and not out.is_dir():
        raise SettingError("out", f"{shown} exists and is not a folder")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        file_on_the_way = isinstance(e, (FileExistsError, NotADirectoryError))
        why = (file_on_the_way and folder_problem(real.parent)) or e.strerror
        raise SettingError("out", f"cannot create {shown}: {why}") from None
    for _ in range(3):  # the folder may vanish between mkdir and lock (a run giving it up)
        try:
            os.mkdir(real)
            created = True
        except FileExistsError:
            created = False
        except OSError as e:
            raise SettingError("out", f"cannot create {shown}: {e.strerror}") from None
        try:
            fd = _locked(real)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise SettingError("out", f"cannot use {shown}: {e.strerror}") from None
        break
    else:
        raise SettingError("out", f"{shown} keeps disappearing: is another run using it?")
    entries = sorted(os.listdir(real))
    foreign = [e for e in entries if e not in OUTPUT_NAMES and not _TEMPORARY.fullmatch(e)]
    problem = None
    if entries and not overwrite:
        problem = f"{shown} already holds files: add --overwrite to replace a previous run's"
    elif foreign:
        problem = (
            f"{shown} holds files no run writes ({', '.join(foreign[:3])}): not replacing them"
        )
    if problem is not None:
        os.close(fd)
        raise SettingError("out", problem)
    return RunFolder(out, fd, created, previous=bool(entries))


def _locked(path: Path) -> int:
    """An open descriptor of the folder ``path`` holding its exclusive lock, or a
    SettingError when another run holds it. FileNotFoundError: it was removed meanwhile."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SettingError("out", f"{shown_path(path)} is in use by another run") from None
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        same = False
    if not same:  # locked a folder that was replaced or removed in the meantime
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "the folder was replaced", str(path))
    return fd


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(out: Path, name: str, write: Callable[[Path], Any]) -> None:
    """``write(out / name)``, with a failure (a full disk) as an OutputError naming it."""
    try:
        write(out / name)
    except OSError as e:
        raise OutputError(name, e.strerror or str(e)) from e


def _title(config: TrainConfig, data: Dataset) -> str:
    if config.model == "cnn":
        channels = "-".join(str(n) for n in config.hidden)
        return (
            f"{config.dataset}: tensor CNN conv {channels}, {config.loss} loss, {config.optimizer}"
        )
    outputs = data.num_classes if config.loss == "ce" else 1
    sizes = "-".join(str(n) for n in (data.num_features, *config.hidden, outputs))
    return (
        f"{config.dataset}: {config.engine} MLP {sizes} {config.activation}, "
        f"{config.loss} loss, {config.optimizer}"
    )


def write_outputs(
    out: Path,
    learner: Learner,
    data: Dataset,
    config: TrainConfig,
    history: History,
    train_score: Score,
    test: tuple[Score, np.ndarray] | None,
) -> list[str]:
    """Write checkpoint, metrics and pictures into the folder ``out``; return the file
    names. A file that cannot be written is an OutputError naming it."""
    from .. import plots  # matplotlib is only imported when there is something to draw

    metadata = {"data": config.data_config(), "objective": {"loss": config.loss, "l2": config.l2}}
    _write(out, "model.json", lambda path: save_checkpoint(path, learner.model, metadata))
    metrics: dict[str, Any] = {
        "config": config.to_dict(),
        "loss": history.loss,
        "accuracy": history.accuracy,
        "final_loss": train_score.loss,
        "final_accuracy": train_score.accuracy,
    }
    if test is not None:
        metrics["test_loss"] = test[0].loss
        metrics["test_accuracy"] = test[0].accuracy
    metrics["train_seconds"] = round(history.seconds, 3)
    _write(out, "metrics.json", lambda path: write_json(path, metrics))
    files = ["model.json", "model.safetensors", "metrics.json", "loss_curve.png"]
    batch_label = "batch" if config.batch_size else "training set"
    title = _title(config, data)
    _write(
        out,
        "loss_curve.png",
        lambda path: plots.plot_loss_curve(
            path, history.loss, history.accuracy, title, batch_label
        ),
    )
    if config.dataset in DATASETS_2D:
        _write(
            out,
            "decision_boundary.png",
            lambda path: plots.plot_decision_boundary(
                path,
                learner.scores,
                data.X_train,
                data.y_train,
                title,
                # one Value graph per grid point is slow; one matrix product for all is not
                resolution=60 if config.engine == "scalar" else 200,
            ),
        )
        files.append("decision_boundary.png")
    if test is not None and data.test_images is not None:
        test_score, predicted = test
        heading = f"{config.dataset} test set"
        _write(
            out,
            "confusion_matrix.png",
            lambda path: plots.plot_confusion_matrix(
                path,
                data.y_test,
                predicted,
                data.num_classes,
                f"{heading}: {test_score.accuracy:.2%} correct",
            ),
        )
        _write(
            out,
            "misclassified.png",
            lambda path: plots.plot_misclassified(
                path, data.test_images, data.y_test, predicted, heading
            ),
        )
        files += ["confusion_matrix.png", "misclassified.png"]
    return files
