"""Where a learner's ``Value`` (and ``MLP``) live, found by reading files, not running them.

``check PATH`` accepts a ``.py`` file or a folder. In a folder, ``Value`` is taken from
``engine.py`` when it defines one, else from the first module that does; when none does,
the shallowest folder below (a repository's ``src/mygrad`` or top-level ``mygrad``) that
has one is used, and two such folders on that level are refused, naming both. ``MLP``
comes from the same module, else from ``nn.py`` beside it, else from the first module
beside it that defines one. A module inside a package (folders
with ``__init__.py``) is imported by its dotted name, as ``micrograd.engine``, so relative
imports work; any other by its own name from its folder (``engine``, ``nn``). Only those
modules are imported, so a training script beside them is never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..files import UnreadableFile, read_bounded

MAX_SOURCE_BYTES = 4 * 2**20  # a learner's module is a few KB; a bigger file is not one
MAX_FOLDERS = 200  # folders looked at on each level below PATH


class LocateError(Exception):
    """PATH cannot be checked: it does not exist, or holds no module defining Value."""


@dataclass(frozen=True)
class Target:
    """The modules to import, the folder to put on sys.path, and the learner's files."""

    path: Path
    shown: str  # PATH as the learner typed it
    sys_path: str
    value_module: str  # the module defining the engine's class (Value or Tensor)
    value_file: str
    mlp_module: str | None
    mlp_file: str | None
    files: list[str]
    class_name: str = "Value"  # or "Tensor": a tensor engine with no class Value
    functions_module: str | None = None  # a tensor engine's cross_entropy, when elsewhere
    functions_file: str | None = None
    lm_ops_module: str | None = None  # init --lm's lm_ops.py and models.py, when there
    lm_models_module: str | None = None
    lm_ops_file: str | None = None
    lm_models_file: str | None = None
    lm_missing: str | None = None  # why the LM checks cannot run on a folder meant for them

    @property
    def import_lines(self) -> list[str]:
        """The lines a learner pastes to import their Value (or Tensor) as the grader
        did, from any folder (the engine's folder is given by its absolute path)."""
        return self.library_import_lines(self.class_name)

    def library_import_lines(self, name: str) -> list[str]:
        """The lines that import ``name`` (the engine's class, or Neuron, Layer, MLP) from
        the module the grader took it from."""
        module = self.value_module
        if name != self.class_name:
            module = self.mlp_module or self.value_module
        if all(part.isidentifier() for part in module.split(".")):
            load = f"from {module} import {name}"
        else:  # a file name no import statement can spell ("new line.py")
            load = f"{name} = __import__('importlib').import_module({module!r}).{name}"
        return [f"import sys; sys.path.insert(0, {self.sys_path!r})", load]

    def load_request(self) -> dict[str, object]:
        return {
            "do": "load",
            "sys_path": self.sys_path,
            "value_module": self.value_module,
            "value_file": self.value_file,
            "mlp_module": self.mlp_module,
            "mlp_file": self.mlp_file,
            "files": self.files,
            "class_name": self.class_name,
            "functions_module": self.functions_module,
            "functions_file": self.functions_file,
        }


def _source(path: Path) -> str:
    """The text of a module, read as files.read_bounded reads (UnreadableFile for a FIFO,
    a device or a file bigger than MAX_SOURCE_BYTES)."""
    return read_bounded(path, MAX_SOURCE_BYTES).decode("utf-8", errors="replace")


def _defines(path: Path, name: str, keyword: str = "class") -> bool:
    """Whether the module at ``path`` defines ``name`` at top level (``class`` or ``def``)."""
    try:
        text = _source(path)
    except UnreadableFile:
        return False
    return re.search(rf"^{keyword}\s+{name}\b", text, re.M) is not None


def line_of(path: str | Path, name: str) -> str | None:
    """Where the module at ``path`` defines ``name`` (a top-level ``def`` or ``class``, or
    ``Class.method``), as ``file.py:line``, found by reading its lines, not running or
    parsing it (Python 3.11's ast.parse fails now and then while other threads run); None
    when it does not, or the file cannot be read."""
    try:
        lines = _source(Path(path)).splitlines()
    except UnreadableFile:
        return None
    start, stop, indent, found = 0, len(lines), "", None
    for part in name.split("."):
        pattern = re.compile(rf"{indent}(?:async\s+)?(?:def|class)\s+{re.escape(part)}\b")
        found = next((i for i in range(start, stop) if pattern.match(lines[i])), None)
        if found is None:
            return None
        outer = len(lines[found]) - len(lines[found].lstrip())
        body = [i for i in range(found + 1, stop) if lines[i].strip()[:1] not in ("", "#")]
        ends = (i for i in body if len(lines[i]) - len(lines[i].lstrip()) <= outer)
        start, stop = found + 1, next(ends, stop)
        indent = (
            lines[body[0]][: len(lines[body[0]]) - len(lines[body[0]].lstrip())] if body else ""
        )
    return f"{Path(path).name}:{found + 1}" if found is not None else None


def _imports(path: Path, module: str) -> bool:
    """True when the module at ``path`` imports ``module`` (``from .tensor import``), or its
    own package when ``module`` is "." (``from . import``)."""
    try:
        text = _source(path)
    except UnreadableFile:
        return False
    pattern = rf"^\s*(from|import)\s+[.\w]*\b{re.escape(module)}\b"
    if module == ".":
        pattern = r"^\s*from\s+\.\s+import\b"
    return re.search(pattern, text, re.M) is not None


def locate(path: str | Path) -> Target:
    """The Target for PATH, or LocateError saying why there is none."""
    shown = str(path)
    try:
        return _locate(Path(path).resolve(), shown)
    except RuntimeError:  # Path.resolve on a symbolic link that points back at itself
        raise LocateError(f"{shown} is a loop of symbolic links") from None
    except OSError as error:  # a name too long, a folder we may not read
        raise LocateError(f"cannot check {shown}: {error.strerror or error}") from None


def _locate(path: Path, shown: str) -> Target:
    if not path.exists():
        raise LocateError(f"{path} does not exist")
    if not path.is_dir():
        if path.suffix != ".py":
            raise LocateError(f"{path} is not a .py file or a folder")
        try:
            _source(path)
        except UnreadableFile as error:
            too_big = f": more than the {MAX_SOURCE_BYTES:,} bytes of an engine's source"
            raise LocateError(f"{path} {error.reason}{too_big if error.size else ''}") from None
        value_file, modules = path, sorted(path.parent.glob("*.py"))
    else:
        folder = _folder_defining_value(path)
        if folder is None:
            raise LocateError(
                f"no module in {path} (or the folders below it) defines a class Value "
                "(or a class Tensor)"
            )
        modules = sorted(p for p in folder.glob("*.py") if not p.name.startswith("test"))
        value_file = _first_defining(modules, "Value", "engine.py") or _first_defining(
            modules, "Tensor", "engine.py"
        )
    functions_file = None
    lm_modules = lm_files = (None, None)
    lm_missing = None
    if _defines(value_file, "Value") or not _defines(value_file, "Tensor"):
        class_name = "Value"
        beside = modules if path.is_dir() else []  # a file's neighbours are not its library
        ordered = [value_file, value_file.with_name("nn.py"), *beside]
        mlp_file = next((p for p in ordered if _defines(p, "MLP")), None)
    else:  # a tensor engine: its nets and losses in itself, nn.py, or a module that imports it
        class_name = "Tensor"
        beside = [p for p in modules if _imports(p, value_file.stem)]
        package = value_file.parent
        if (package / "__init__.py").exists():  # a package's nets may import the package
            beside += [p for p in modules if p not in beside and _imports(p, ".")]  # from . import
            beside += [p for p in sorted(package.parent.glob("*.py")) if _imports(p, package.name)]
        ordered = [value_file, value_file.with_name("nn.py"), *beside]
        mlp_file = next((p for p in ordered if _defines(p, "Linear") and _defines(p, "MLP")), None)
        functions_file = next((p for p in ordered if _defines(p, "cross_entropy", "def")), None)
        lm_ops = next((p for p in beside if p.name == "lm_ops.py"), None) or next(
            (p for p in beside if _defines(p, "softmax", "def")), None
        )
        lm_models = next((p for p in beside if _defines(p, "GPT")), None)
        if lm_ops is not None and lm_models is not None:
            lm_modules = (_importable(lm_ops)[1], _importable(lm_models)[1])
            lm_files = (str(lm_ops), str(lm_models))
        elif lm_models is not None or any(p.name == "lm_ops.py" for p in modules):
            lm_missing = _lm_missing(value_file, lm_ops is None)  # init --lm's files, not all
    sys_path, value_module = _importable(value_file)
    mlp_module = None if mlp_file in (None, value_file) else _importable(mlp_file)[1]
    own = (None, value_file, mlp_file)
    functions_module = None if functions_file in own else _importable(functions_file)[1]
    return Target(
        path=path,
        shown=shown,
        sys_path=sys_path,
        value_module=value_module,
        value_file=str(value_file),
        mlp_module=mlp_module,
        mlp_file=None if mlp_module is None else str(mlp_file),
        files=[str(p) for p in modules],
        class_name=class_name,
        functions_module=functions_module,
        functions_file=None if functions_module is None else str(functions_file),
        lm_ops_module=lm_modules[0],
        lm_models_module=lm_modules[1],
        lm_ops_file=lm_files[0],
        lm_models_file=lm_files[1],
        lm_missing=lm_missing,
    )


def _lm_missing(value_file: Path, ops: bool) -> str:
    """Why a folder with one of the LM files (lm_ops.py with its softmax, models.py with
    its GPT) cannot have the LM checks: which of them no module beside the engine gives."""
    name, what = ("lm_ops.py", "defines softmax") if ops else ("models.py", "defines class GPT")
    why = f"no module importing {value_file.name} {what} ({name})"
    try:
        _source(value_file.with_name(name))
    except UnreadableFile as error:
        if error.reason != "no such file":
            why += f"; {name} {error.reason}"
    return why


# Folders a project keeps beside its code that never hold the learner's engine.
_NOT_CODE = {"tests", "test", "venv", "env", "node_modules", "site-packages", "build", "dist"}


def _folder_defining_value(root: Path, depth: int = 3) -> Path | None:
    """``root`` when one of its modules defines Value (or Tensor), else the shallowest
    folder below it (at most ``depth`` levels) that has one: a repository's ``src/pkg`` or
    top-level ``pkg``. On that level a folder defining Value is taken over one defining
    only Tensor; two folders defining Value (or, with none, two defining Tensor) are a
    LocateError naming both, so the learner names the one to check."""
    level = [root]
    for _ in range(depth + 1):
        found: dict[str, list[Path]] = {"Value": [], "Tensor": []}
        for folder in level:
            try:
                modules = [p for p in folder.glob("*.py") if not p.name.startswith("test")]
            except OSError:
                continue
            for name, folders in found.items():
                if _first_defining(modules, name, "engine.py"):
                    folders.append(folder)
                    break
        for name, folders in found.items():
            if len(folders) > 1:
                shown = " and ".join(str(f.relative_to(root)) for f in folders[:2])
                raise LocateError(
                    f"{root} holds two engines: {shown} both define a class {name}; check "
                    f"one of them by its folder (modelwright-autograd check {folders[0]})"
                )
            if folders:
                return folders[0]
        level = [
            sub
            for folder in level
            for sub in _subfolders(folder)
            if not sub.name.startswith((".", "_")) and sub.name not in _NOT_CODE
        ][:MAX_FOLDERS]
    return None


def _subfolders(folder: Path) -> list[Path]:
    """The folders in ``folder``, in name order, not following symbolic links (they lead
    out of the learner's project); none when it cannot be listed."""
    try:
        return sorted(sub for sub in folder.iterdir() if sub.is_dir() and not sub.is_symlink())
    except OSError:
        return []


def _importable(file: Path) -> tuple[str, str]:
    """(the folder to put on sys.path, the dotted module name) for ``file``: inside a
    package (folders with ``__init__.py``) it is imported as ``pkg.module``, so relative
    imports work; otherwise by its own name from its folder."""
    parts = [] if file.name == "__init__.py" else [file.stem]
    folder = file.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return str(folder), ".".join(parts)


def _first_defining(modules: list[Path], name: str, preferred: str) -> Path | None:
    ordered = sorted(modules, key=lambda p: p.name != preferred)
    return next((p for p in ordered if _defines(p, name)), None)
