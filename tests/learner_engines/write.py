"""The learner engines the tests grade, written out as files.

A one-bug engine is a solved copy with a few lines replaced (the tables in variants.py beside
each solved copy); an engine that is a program of its own is a file beside them. Either is
named as the tests name it: ``no_visited``, ``hangs``, ``tensor/add_not_unbroadcast``.
To write one out and check it by hand:

    python -m tests.learner_engines.write no_visited /tmp/engines
    modelwright-autograd check /tmp/engines/no_visited.py
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from . import variants
from .tensor import variants as tensor_variants

HERE = Path(__file__).parent
TABLES = {"": variants, "tensor": tensor_variants}


def replaced(text: str, changes: list[tuple[str, str]]) -> str:
    """``text`` with each (old, new) replaced in turn; each old must occur exactly once."""
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


@cache
def _solved(kind: str) -> str:
    return (HERE / kind / "solved_starter.py").read_text()


def source(name: str) -> str:
    """The text of the engine ``name``: its variant of the solved copy, or its own file."""
    kind, _, stem = name.rpartition("/")
    table = TABLES[kind]
    changes = {n: entry[0] for n, entry in table.BUGS.items()}
    changes |= table.WRITTEN_DIFFERENTLY | table.NOTED
    if stem in changes:
        return replaced(_solved(kind), changes[stem])
    return (HERE / kind / f"{stem}.py").read_text()


def write(name: str, folder: Path) -> Path:
    """Write the engine ``name`` to ``folder``/STEM.py (the folder made if need be)."""
    path = Path(folder) / f"{name.rpartition('/')[2]}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source(name))
    return path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m tests.learner_engines.write NAME FOLDER")
    print(f"wrote {write(sys.argv[1], Path(sys.argv[2]))}")
