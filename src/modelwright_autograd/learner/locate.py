"""Where a learner's ``Value`` (and ``MLP``) live, found by reading files, not running them.

``check PATH`` accepts a ``.py`` file or a folder. A folder with ``__init__.py`` is a
package (imported by its name from the parent folder, as ``micrograd.engine``); a plain
folder has its modules imported from inside it (as ``engine`` and ``nn``). In a folder,
``Value`` is taken from ``engine.py`` when it defines one, else from the first module that
does; ``MLP`` from the same module or from ``nn.py`` (or the first module defining it).
Only those modules are imported, so a training script beside them is never run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


class LocateError(Exception):
    """PATH cannot be checked: it does not exist, or holds no module defining Value."""


@dataclass(frozen=True)
class Target:
    """The modules to import, the folder to put on sys.path, and the learner's files."""

    path: Path
    shown: str  # PATH as the learner typed it
    sys_path: str
    value_module: str
    value_file: str
    mlp_module: str | None
    mlp_file: str | None
    files: list[str]

    @property
    def import_lines(self) -> list[str]:
        """The lines a learner pastes to import their Value as the grader did (the folder
        relative to the current one when PATH was given relative)."""
        folder = self.sys_path
        if not Path(self.shown).is_absolute():
            folder = os.path.relpath(folder)
        return [
            "import sys",
            f"sys.path.insert(0, {folder!r})",
            f"from {self.value_module} import Value",
        ]

    def load_request(self) -> dict[str, object]:
        return {
            "do": "load",
            "sys_path": self.sys_path,
            "value_module": self.value_module,
            "value_file": self.value_file,
            "mlp_module": self.mlp_module,
            "mlp_file": self.mlp_file,
            "files": self.files,
        }


def _defines(path: Path, name: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(rf"^class\s+{name}\b", text, re.M) is not None


def locate(path: str | Path) -> Target:
    """The Target for PATH, or LocateError saying why there is none."""
    shown = str(path)
    path = Path(path).resolve()
    if not path.exists():
        raise LocateError(f"{path} does not exist")
    if path.is_file():
        if path.suffix != ".py":
            raise LocateError(f"{path} is not a .py file or a folder")
        folder = path.parent
        nn = folder / "nn.py"
        mlp_file = path if _defines(path, "MLP") else nn if _defines(nn, "MLP") else None
        return Target(
            path=path,
            shown=shown,
            sys_path=str(folder),
            value_module=path.stem,
            value_file=str(path),
            mlp_module=None if mlp_file in (None, path) else mlp_file.stem,
            mlp_file=None if mlp_file in (None, path) else str(mlp_file),
            files=sorted(str(p) for p in folder.glob("*.py")),
        )
    modules = sorted(p for p in path.glob("*.py") if not p.name.startswith("test"))
    value_file = _first_defining(modules, "Value", "engine.py")
    if value_file is None:
        raise LocateError(f"no module in {path} defines a class Value")
    mlp_file = (
        value_file if _defines(value_file, "MLP") else _first_defining(modules, "MLP", "nn.py")
    )
    package = (path / "__init__.py").exists()

    def module_name(file: Path) -> str:
        return f"{path.name}.{file.stem}" if package else file.stem

    return Target(
        path=path,
        shown=shown,
        sys_path=str(path.parent if package else path),
        value_module=module_name(value_file),
        value_file=str(value_file),
        mlp_module=None if mlp_file in (None, value_file) else module_name(mlp_file),
        mlp_file=None if mlp_file in (None, value_file) else str(mlp_file),
        files=[str(p) for p in modules],
    )


def _first_defining(modules: list[Path], name: str, preferred: str) -> Path | None:
    ordered = sorted(modules, key=lambda p: p.name != preferred)
    return next((p for p in ordered if _defines(p, name)), None)
