"""``modelwright-autograd init [--tensor] DIR``: write a repository in the course's shape
for the learner's engine (the scalar Value, or with ``--tensor`` the NumPy Tensor from
templates_tensor/) into a new or empty folder.

The repository: ``pyproject.toml`` (numpy, matplotlib, scikit-learn; pytest and torch in
the ``test`` extra, which ``uv sync`` installs through the ``dev`` group), the engine and
the network with their TODOs in ``src/<package>/``, ``tests/`` (the gradient check against
PyTorch, and a TODO per operation for the unit tests), ``train.py``, a README and a
REPORT.md skeleton, ``.gitignore``, the notebook, and ``git init`` with nothing committed.
``--backprop`` writes the backprop-by-hand exercise's files side by side instead. ``--lm``
adds templates_lm/ to the tensor repository (the language-model ops and models beside the
engine, LM.md and lm.ipynb at the top); into a folder that holds a tensor engine already
(this repository, or an older flat folder) it adds only the files missing, replacing none.

The folder is made (``mkdir``, as the user's umask and a setgid parent decide) when it is
missing; an existing empty folder (``.``, ``"$PWD"``, a symbolic link to one, a mount
point) is filled in place, never replaced, so it keeps its mode, owner, group and setgid
bit. The files are written into a hidden staging folder inside it (same filesystem, same
group rules) and renamed up one by one; a failure removes what was written.
"""

from __future__ import annotations

import contextlib
import errno
import keyword
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
from importlib import resources
from pathlib import Path

from ..files import atomic_write, file_kind, folder_problem

# Each file of the repository (its path, {package} the package's folder) and its template
# (in templates/ or templates_tensor/; SHARED ones always in templates/).
FILES = {
    "pyproject.toml": "pyproject.toml.in",
    ".gitignore": "gitignore",
    "README.md": "README.md",
    "REPORT.md": "REPORT.md",
    "src/{package}/__init__.py": "package_init.py",
    "src/{package}/engine.py": "engine.py",
    "src/{package}/nn.py": "nn.py",
    "tests/test_gradcheck.py": "test_gradcheck.py",
    "tests/test_ops.py": "test_ops.py",
    "train.py": "train.py",
    "starter.ipynb": "starter.ipynb",
}
SHARED = ("pyproject.toml", ".gitignore")
# What init leaves at the top of DIR (with .git when git is installed).
ENTRIES = (".git", ".gitignore", "README.md", "REPORT.md", "pyproject.toml", "src")
ENTRIES += ("starter.ipynb", "tests", "train.py")
DESCRIPTIONS = {  # one line each, the package's docstring too
    False: "A scalar autograd engine built from scratch: Value, backward(), Neuron, Layer, MLP.",
    True: "An autograd engine over NumPy arrays built from scratch: Tensor, Linear, MLP.",
}
# Packages a learner's package must not shadow: the grader's own and what its tests import.
TAKEN = {"modelwright_autograd", "numpy", "torch", "sklearn", "matplotlib", "scipy", "pytest"}
TAKEN |= {"tests", "test", "src"}
GIT_TIMEOUT = 30.0  # seconds git init may take
#: The backprop-by-hand starter (``init --backprop``, templates_backprop/): a flat folder.
BACKPROP_TEMPLATES = ("backprop.py", "train.py", "README.md")
#: ``init --lm``'s files (templates_lm/): the first two beside the engine, the rest at the top.
LM_MODULES = ("lm_ops.py", "models.py")
LM_TOP = ("LM.md", "lm.ipynb")


def project_names(directory: str | Path) -> tuple[str, str]:
    """(the project's name, its package's) for a repository in ``directory``, from the
    folder's name as ``uv init`` makes them (``My Engine`` gives ``my-engine`` and
    ``my_engine``). A package that would shadow a module of the standard library or one the
    grader and the tests import gets ``_engine`` added (``modelwright-autograd``, the
    course's name, gives ``modelwright_autograd_engine``); a name that makes no identifier
    gives ``my-engine``."""
    name = re.sub(r"[^a-z0-9]+", "-", Path(directory).resolve().name.lower()).strip("-")
    package = name.replace("-", "_")
    if not package.isidentifier() or keyword.iskeyword(package):
        return "my-engine", "my_engine"
    if package in TAKEN or package in sys.stdlib_module_names:
        return f"{name}-engine", f"{package}_engine"
    return name, package


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


def lm_text(name: str, package: str | None) -> str:
    """The text of templates_lm/``name`` for an engine in ``package`` (relative imports,
    the notebook importing ``package.models``), or in a flat folder (``None``)."""
    text = (resources.files(__package__) / "templates_lm" / name).read_text(encoding="utf-8")
    if package is not None:
        return re.sub(r"\bmygrad\b", package, text)
    text = text.replace('sys.path.insert(0, \\"src\\")', 'sys.path.insert(0, \\".\\")')
    return text.replace("from .", "from ").replace("mygrad.", "")


def _write_templates(
    folder: Path, directory: Path, tensor: bool, backprop: bool, lm: bool = False
) -> None:
    """Every file of FILES into ``folder``, its names and package filled in for
    ``directory`` (with ``backprop``, the files of BACKPROP_TEMPLATES side by side; with
    ``lm``, the LM files too)."""
    here = resources.files(__package__)
    if backprop:
        for template in BACKPROP_TEMPLATES:
            text = (here / "templates_backprop" / template).read_text(encoding="utf-8")
            atomic_write(folder / template, lambda f, text=text: f.write(text))
        return
    name, package = project_names(directory)
    for path, template in FILES.items():
        source = here / ("templates_tensor" if tensor and path not in SHARED else "templates")
        text = (source / template).read_text(encoding="utf-8")
        text = re.sub(r"\bmygrad\b", package, text).replace("{{package}}", package)
        text = text.replace("{{name}}", name).replace("{{description}}", DESCRIPTIONS[tensor])
        target = folder / path.format(package=package)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, lambda f, text=text: f.write(text))
    if lm:
        for name in LM_MODULES + LM_TOP:
            target = folder / (f"src/{package}/{name}" if name in LM_MODULES else name)
            text = lm_text(name, package)
            atomic_write(target, lambda f, text=text: f.write(text))


def _git_init(folder: Path) -> bool:
    """``git init`` in ``folder`` (branch main, nothing committed): False when git is not
    installed or fails, and the repository is written without it."""
    git = shutil.which("git")
    if git is None:
        return False
    try:
        done = subprocess.run(
            [git, "-c", "init.defaultBranch=main", "init", "-q"],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def write_starter(
    directory: str | Path, tensor: bool = False, backprop: bool = False, lm: bool = False
) -> list[Path]:
    """Write the repository (the tensor starter's with ``tensor``; with ``backprop`` the
    backprop-by-hand exercise's files, side by side; with ``lm`` the tensor starter's and the
    LM files) into ``directory`` (created if missing, filled in place if it is an empty
    folder or a link to one) and return the paths at its top (``.git`` among them when
    ``git init`` worked). Refuses a folder that holds anything, or a path that is not a
    folder, writing nothing; with ``lm``, a folder holding a tensor engine gets the LM files
    it lacks (``add_lm``). On any failure (a full disk, Ctrl-C) what was written is removed
    and the folder is as it was, or absent."""
    directory = Path(directory)
    try:
        if lm and os.path.isdir(directory) and os.listdir(directory):
            return add_lm(directory)
        created = not _existing_folder(directory)
    except OSError as error:  # a file on the way, a name too long, a folder we may not read
        file_on_the_way = isinstance(error, (FileExistsError, NotADirectoryError))
        why = (file_on_the_way and folder_problem(directory.parent)) or error.strerror or error
        raise StarterError(f"cannot use {directory}: {why}") from None
    staging = directory / f".init-{secrets.token_hex(4)}.tmp"
    moved: list[Path] = []
    try:
        if created:  # mkdir, never a rename onto the name: nothing made meanwhile is replaced
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir()
        staging.mkdir()
        _write_templates(staging, directory, tensor or lm, backprop, lm)
        if not backprop:
            _git_init(staging)
        for name in sorted(os.listdir(staging)):
            os.rename(staging / name, directory / name)
            moved.append(directory / name)
        staging.rmdir()
    except BaseException as error:
        _undo(moved, staging, directory if created else None)
        if not isinstance(error, OSError):
            raise
        code = 2 if error.errno == errno.ENAMETOOLONG else 1
        raise StarterError(f"cannot write {directory}: {error.strerror or error}", code) from None
    return moved


def add_lm(directory: Path) -> list[Path]:
    """The LM files ``directory`` lacks, written beside its tensor engine (lm_ops.py,
    models.py) and at its top (LM.md, lm.ipynb); a file already there is never replaced,
    not even one made while this runs. Returns the paths written."""
    from .locate import LocateError, locate

    try:
        target = locate(directory)
    except LocateError:
        raise StarterError(
            f"{directory} holds no tensor engine (a class Tensor); choose a new or empty "
            "folder, or your init --tensor one"
        ) from None
    if target.class_name != "Tensor":
        raise StarterError(
            f"{target.value_file} is a scalar engine (class Value): init --lm builds on a "
            "tensor engine (init --tensor)"
        )
    engine = Path(target.value_file).parent
    package = target.value_module.rpartition(".")[0] or None
    places = [(engine / n, n) for n in LM_MODULES] + [(directory / n, n) for n in LM_TOP]
    missing = [(path, name) for path, name in places if not os.path.lexists(path)]
    staging = directory / f".init-{secrets.token_hex(4)}.tmp"
    moved: list[Path] = []
    try:
        staging.mkdir()
        for _, name in missing:
            text = lm_text(name, package)
            atomic_write(staging / name, lambda f, text=text: f.write(text))
        for path, name in missing:
            os.link(staging / name, path)  # fails on a name made meanwhile; rename would not
            moved.append(path)
        shutil.rmtree(staging)
    except BaseException as error:
        _undo(moved, staging, None)
        if not isinstance(error, OSError):
            raise
        raise StarterError(f"cannot write {directory}: {error.strerror or error}", 1) from None
    return moved


def _undo(moved: list[Path], staging: Path, created: Path | None) -> None:
    """Remove what a failed write made: the files and folders moved into place, the staging
    folder, and the folder itself when this run created it (only if still empty)."""
    for path in moved:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    if created is not None:
        with contextlib.suppress(OSError):
            created.rmdir()
