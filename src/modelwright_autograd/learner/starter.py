"""``modelwright-autograd init DIR``: copy the starter engine into a new or empty folder."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..files import atomic_write

TEMPLATES = ("engine.py", "nn.py", "README.md", "starter.ipynb")


class StarterError(Exception):
    """DIR is not a new or empty folder, or cannot be written."""


def write_starter(directory: str | Path) -> list[Path]:
    """Write the starter's files into ``directory`` (created if missing) and return their
    paths. Refuses a folder that holds anything, writing nothing."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise StarterError(f"{directory} exists and is not a folder")
    if directory.is_dir() and any(directory.iterdir()):
        raise StarterError(f"{directory} is not empty; choose a new or empty folder")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StarterError(f"cannot create {directory}: {error.strerror}") from None
    templates = resources.files(__package__) / "templates"
    written = []
    for name in TEMPLATES:
        text = (templates / name).read_text(encoding="utf-8")
        path = directory / name
        atomic_write(path, lambda f, text=text: f.write(text))
        written.append(path)
    return written
