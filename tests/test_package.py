"""The package's public face: import paths, the stdlib-only engine, the console entry."""

import ast
import subprocess
import sys
from pathlib import Path

import modelwright_autograd
from modelwright_autograd import MLP, Value
from modelwright_autograd.engine import Value as EngineValue
from modelwright_autograd.nn import MLP as NnMLP
from modelwright_autograd.nn import Layer, Module, Neuron

PACKAGE = Path(modelwright_autograd.__file__).parent


def test_course_module_paths_are_the_public_names():
    assert Value is EngineValue and MLP is NnMLP
    assert issubclass(Neuron, Module) and issubclass(Layer, Module)
    for name in modelwright_autograd.__all__:
        assert hasattr(modelwright_autograd, name), name


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_scalar_engine_imports_only_the_standard_library():
    # engine.py and what it stands on (graph.py), plus the scalar nets, losses and optimisers
    for module in ("engine.py", "graph.py", "nn.py", "losses.py", "optim.py"):
        outside = {
            name
            for name in _imports(PACKAGE / module)
            if name not in sys.stdlib_module_names and name != "__future__"
        }
        assert not outside, f"{module} imports {sorted(outside)} from outside the stdlib"


def test_python_dash_m_runs_the_cli():
    done = subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    for command in ("train", "evaluate", "explain"):
        assert command in done.stdout
