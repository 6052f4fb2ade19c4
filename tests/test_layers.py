"""The package's import layers: a module imports only its own layer or those below it, and
no import circle exists among the package's modules (docs/design.md, "Layers").

Imports are read with ``ast``, so every import counts: at the top of a module, inside a
function (a lazy import) or under ``if TYPE_CHECKING``. Imports from outside the package
(numpy, torch, ...) are not the layers' business.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import modelwright_autograd

PACKAGE = "modelwright_autograd"

# Lowest first. A module belongs to the longest entry that names it or a package holding it
# ("tensor" is tensor/ and every module in it but tensor.nn, tensor.conv, ..., which are
# entries of their own); "" is the package's own __init__.py.
LAYERS: list[tuple[str, list[str]]] = [
    ("shared helpers", ["checks", "files", "safetensors_file", "seeding", "collector", "printing"]),
    ("engines", ["graph", "scalar", "tensor"]),
    (
        "nn libraries",
        [
            "autograd",
            "gradcheck",
            "scalar.nn",
            "scalar.losses",
            "scalar.compiler",
            "scalar.tracing",
            "tensor.nn",
            "tensor.conv",
            "tensor.nn_ops",
            "tensor.functional",
            "optim",
            "optim_state",
            "flat_state",
            "checkpoint",
            "checkpoint_legacy",
            "data",
            "plots",
            # the language models are nn modules that checkpoint.py saves and rebuilds;
            # the rest of lm/ (corpora, scoring, sampling) is an application
            "lm.models",
        ],
    ),
    ("applications", ["training", "explain", "learner", "lm"]),
    ("command line and public API", ["cli", "launch", "__main__", ""]),
]


def module_imports(root: Path, package: str = PACKAGE) -> dict[str, set[str]]:
    """Every module under ``root`` (the package's folder), named relative to the package
    ("tensor.core"; "" for the package itself), with the package modules it imports."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        files[".".join(parts)] = (path, is_package)
    graph = {}
    for name, (path, is_package) in files.items():
        here = name.split(".") if name else []
        if not is_package:
            here = here[:-1]  # relative imports start from the module's package
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join([package, *here[: len(here) - node.level + 1]])
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                # ``from pkg import sub`` imports the module sub when there is one
                targets = [f"{module}.{alias.name}" for alias in node.names]
                targets = [t if _relative(t, package) in files else module for t in targets]
            else:
                continue
            for target in targets:
                rel = _relative(target, package)
                while rel is not None and rel not in files:  # pkg.mod.name -> pkg.mod
                    rel = rel.rpartition(".")[0] if rel else None
                if rel is not None and rel != name:
                    found.add(rel)
        graph[name] = found
    return graph


def _relative(target: str, package: str) -> str | None:
    """``target`` named relative to the package, or None if it is outside it."""
    if target == package:
        return ""
    if target.startswith(package + "."):
        return target[len(package) + 1 :]
    return None


def layer_of(module: str, layers: list[tuple[str, list[str]]]) -> int | None:
    """The layer of the longest entry that is ``module`` or a package holding it."""
    found = [
        (len(entry), i)
        for i, (_, entries) in enumerate(layers)
        for entry in entries
        if module == entry or (entry and module.startswith(entry + "."))
    ]
    return max(found)[1] if found else None


def _shown(module: str) -> str:
    return module or f"{PACKAGE} (__init__)"


def layer_problems(
    graph: dict[str, set[str]], layers: list[tuple[str, list[str]]] = LAYERS
) -> list[str]:
    """One line per module in no layer, per import of a higher layer, and per circle."""
    problems = []
    placed = {m: layer_of(m, layers) for m in graph}
    for module, level in sorted(placed.items()):
        if level is None:
            problems.append(f"{_shown(module)} is in no layer: add it to LAYERS")
    for module in sorted(graph):
        for imported in sorted(graph[module]):
            low, high = placed[module], placed.get(imported)
            if low is not None and high is not None and high > low:
                problems.append(
                    f"{_shown(module)} ({layers[low][0]}) imports {_shown(imported)} "
                    f"({layers[high][0]}), a higher layer"
                )
    problems += [f"import circle: {' -> '.join(map(_shown, c))}" for c in circles(graph)]
    return problems


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (a path back to its start) through each strongly connected group of
    modules that import each other, by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_within(sorted(g)[0], g, graph) for g in groups]


def _path_within(start: str, group: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``group`` (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    path = [v]  # back from v to start, then turned around
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{start} is in a circle with no path back to it")


# ---------------------------------------------------------------------- the package itself
def test_the_package_imports_downward_only_and_has_no_circles():
    graph = module_imports(Path(modelwright_autograd.__file__).parent)
    assert "tensor.core" in graph and "cli" in graph  # the walk found the package
    problems = layer_problems(graph)
    assert not problems, "\n".join(problems)


def test_design_doc_tabulates_these_layers():
    """docs/design.md's table of layers is LAYERS, row for row."""
    text = (Path(__file__).parents[1] / "docs" / "design.md").read_text()
    section = text.split("## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ")]
    documented = []
    for name, modules in rows[1:]:  # after the header row
        names = [m.split(" (")[0].strip(" `/") for m in modules.split(",")]
        documented.append((name.strip(), ["" if m == "__init__" else m for m in names]))
    assert documented == LAYERS


# ---------------------------------------------------------------------- the checker
def _package(tmp_path: Path, sources: dict[str, str]) -> Path:
    """A synthetic package under tmp_path: {"explain/page.py": "from .trace import x"}."""
    root = tmp_path / PACKAGE
    for name, text in {"__init__.py": "", **sources}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_checker_reports_an_upward_import_even_inside_a_function(tmp_path):
    root = _package(
        tmp_path,
        {
            "checks.py": "",
            "graph.py": "from .checks import x\n\ndef f():\n    from .cli import main\n",
            "cli.py": "from .graph import walk\nimport torch\n",
        },
    )
    graph = module_imports(root)
    assert graph["graph"] == {"checks", "cli"}
    assert graph["cli"] == {"graph"}  # torch is outside the package
    assert layer_problems(graph) == [
        "graph (engines) imports cli (command line and public API), a higher layer",
        "import circle: cli -> graph -> cli",
    ]


def test_checker_reports_a_circle_within_a_layer_and_resolves_package_imports(tmp_path):
    root = _package(
        tmp_path,
        {
            "training/__init__.py": "",
            "training/loop.py": "from .outputs import write_outputs\n",
            "training/outputs.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .loop import History\n"
            ),
            "explain/__init__.py": "",
            "explain/page.py": "from . import trace\nfrom ..tensor import Tensor\n",
            "explain/trace.py": "import modelwright_autograd.graph\n",
            "graph.py": "",
            "tensor/__init__.py": "from .core import Tensor\n",
            "tensor/core.py": "from ..graph import walk\n",
        },
    )
    graph = module_imports(root)
    assert graph["explain.page"] == {"explain.trace", "tensor"}
    assert graph["explain.trace"] == {"graph"}
    assert graph["tensor"] == {"tensor.core"}
    assert graph["tensor.core"] == {"graph"}
    assert layer_problems(graph) == [
        "import circle: training.loop -> training.outputs -> training.loop"
    ]


def test_checker_reports_a_module_in_no_layer(tmp_path):
    root = _package(tmp_path, {"schedules.py": "", "lm/model.py": "from ..schedules import x\n"})
    assert layer_problems(module_imports(root)) == ["schedules is in no layer: add it to LAYERS"]


# ---------------------------------------------------------------------- private names
# (module, name) pairs a module may reach in another module though the name is private,
# each argued in docs/design.md ("Internal API between modules"). Attributes of objects
# (``node._prev``, ``v._data``) are their classes' business and not read here: only a
# module's own names.
PRIVATE_ALLOWED: set[tuple[str, str]] = set()


def private_reaches(root: Path, package: str = PACKAGE) -> list[str]:
    """Every ``_name`` one module of the package takes from another: ``from .x import _f``,
    ``x._f`` with x a module imported from the package, or ``C._f`` with C a name imported
    from another module of the package. Dunders (``__version__``) are public."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        files[".".join(parts[:-1] if is_package else parts)] = (path, is_package)

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    found = []
    for name, (path, is_package) in files.items():
        here = name.split(".") if name else []
        if not is_package:
            here = here[:-1]
        tree = ast.parse(path.read_text(), filename=str(path))
        bound: dict[str, str] = {}  # a local name -> the package module it came from
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    rel = _relative(alias.name, package)
                    if rel is not None and alias.asname:
                        bound[alias.asname] = rel
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join([package, *here[: len(here) - node.level + 1]])
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                source = _relative(module, package)
                if source is None:
                    continue
                for alias in node.names:
                    sub = f"{source}.{alias.name}" if source else alias.name
                    bound[alias.asname or alias.name] = sub if sub in files else source
                    if private(alias.name) and source != name:
                        found.append((name, source, alias.name))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and private(node.attr)
                and isinstance(node.value, ast.Name)
                and bound.get(node.value.id, name) != name
            ):
                found.append((name, bound[node.value.id], node.attr))
    return sorted(
        f"{_shown(m)} uses {_shown(source)}'s {attr}"
        for m, source, attr in set(found)
        if (source, attr) not in PRIVATE_ALLOWED
    )


def test_no_module_takes_another_modules_private_name():
    """docs/design.md's rule: what is shared is public; a ``_name`` stays in its module."""
    root = Path(modelwright_autograd.__file__).parent
    assert private_reaches(root) == []


def test_private_checker_sees_imports_module_attributes_and_class_attributes(tmp_path):
    root = _package(
        tmp_path,
        {
            "tensor/__init__.py": "from .core import _lift\n",
            "tensor/core.py": "def _lift(x): ...\nclass Tensor:\n    _cache = {}\n_lift(1)\n",
            "explain/__init__.py": "",
            "explain/trace.py": "from .. import graph as g\nx = g._short('a')\n",
            "explain/page.py": (
                "from ..tensor import core, Tensor\n"
                "import modelwright_autograd.graph as mg\n"
                "def f():\n    return core._lift(1), Tensor._cache, mg.__name__, core.lift\n"
            ),
            "graph.py": "def _short(s): ...\n_short('b')\n",
        },
    )
    assert private_reaches(root) == [
        "explain.page uses tensor's _cache",
        "explain.page uses tensor.core's _lift",
        "explain.trace uses graph's _short",
        "tensor uses tensor.core's _lift",
    ]


# ---------------------------------------------------------------------- argparse
def below_the_command_line(root: Path) -> Iterator[tuple[str, ast.Module]]:
    """Each module outside cli/: its path under ``root`` and its syntax tree."""
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] != "cli":
            yield "/".join(parts), ast.parse(path.read_text(), filename=str(path))


def argparse_readers(root: Path) -> list[str]:
    """Every module outside cli/ that imports argparse (at the top or in a function)."""
    found = []
    for shown, tree in below_the_command_line(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if any(n == "argparse" or n.startswith("argparse.") for n in names):
                found.append(shown)
                break
    return found


def test_only_the_command_line_reads_argparse():
    """docs/design.md: cli/ turns options into typed settings; the layers below take
    those, never an argparse Namespace."""
    root = Path(modelwright_autograd.__file__).parent
    assert argparse_readers(root) == []


def test_argparse_checker_sees_top_level_and_lazy_imports(tmp_path):
    root = _package(
        tmp_path,
        {
            "cli/train.py": "import argparse\n",
            "training/settings.py": "def f(args):\n    from argparse import Namespace\n",
            "explain/command.py": "import sys, argparse as ap\n",
            "graph.py": "import argparser_not\nfrom types import SimpleNamespace\n",
        },
    )
    assert argparse_readers(root) == ["explain/command.py", "training/settings.py"]


# ---------------------------------------------------------------------- option names
def option_named_errors(root: Path) -> list[str]:
    """Every error made outside cli/ with an option as its first argument
    (``UsageError("--out", ...)``), and every class UsageError defined outside cli/: the
    library names its settings (``SettingError("out", ...)``); cli/ maps them to options
    and sets the budgets that refuse them."""
    found = []
    for shown, tree in below_the_command_line(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "UsageError":
                found.append(f"{shown}:{node.lineno} defines UsageError")
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", "")
            first = node.args[0]
            if (
                name.endswith("Error")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and re.fullmatch(r"--[a-z][a-z0-9-]*", first.value)
            ):
                found.append(f"{shown}:{node.lineno} {name}({first.value!r}, ...)")
    return found


def test_the_library_names_settings_not_options():
    """docs/design.md: the library reports what is wrong in its own terms; cli/ names the
    option and sets the exit code."""
    root = Path(modelwright_autograd.__file__).parent
    assert option_named_errors(root) == []


def test_option_checker_sees_what_training_used_to_raise(tmp_path):
    root = _package(
        tmp_path,
        {
            "cli/train.py": 'raise UsageError("--steps", "too many")\n',
            "training/settings.py": "class UsageError(Exception):\n    pass\n",
            "training/outputs.py": (
                'def claim():\n    raise UsageError("--out", "in use")\n'
                'def fine():\n    raise SettingError("out", "in use --out")\n'
            ),
            "training/resume.py": 'no_last = settings.UsageError("--resume", "no last.json")\n',
            "learner/oracle.py": 'raise OracleError("--oracle torch: no torch")\n',
        },
    )
    assert option_named_errors(root) == [
        "training/outputs.py:2 UsageError('--out', ...)",
        "training/resume.py:1 UsageError('--resume', ...)",
        "training/settings.py:1 defines UsageError",
    ]
