"""The package's public face: import paths, the stdlib-only engine, the console entry."""

import ast
import subprocess
import sys
from pathlib import Path

import modelwright_autograd
from modelwright_autograd import MLP, Value
from modelwright_autograd.scalar.engine import Value as EngineValue
from modelwright_autograd.scalar.nn import MLP as NnMLP
from modelwright_autograd.scalar.nn import Layer, Module, Neuron

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
    # scalar/engine.py and what it stands on (graph.py), plus the scalar nets, losses and
    # optimisers
    # (seeding.py and gradcheck.py import NumPy inside their tensor functions: the
    # subprocess test below shows they load and work without it)
    scalar = ("scalar/engine.py", "scalar/nn.py", "scalar/losses.py")
    for module in (*scalar, "graph.py", "optim.py", "checks.py"):
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


# A finder placed first on sys.meta_path that refuses the named top-level packages, so the
# child process behaves as if they were not installed.
_HIDE = """
import sys

class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ImportError(f"{name} is hidden for this test")
        return None

sys.meta_path.insert(0, Hidden())
"""


def _run_hidden(hidden: set[str], body: str) -> str:
    script = f"HIDDEN = {sorted(hidden)!r}\n{_HIDE}\n{body}"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_scalar_engine_nets_and_losses_work_without_numpy_graphviz_or_matplotlib():
    out = _run_hidden(
        {"numpy", "graphviz", "matplotlib"},
        """
import math

import modelwright_autograd
from modelwright_autograd import gradcheck
from modelwright_autograd.scalar.engine import Value
from modelwright_autograd.scalar.losses import LOSSES, svm_loss
from modelwright_autograd.scalar.nn import MLP
from modelwright_autograd.optim import SGD

a, b = Value(2.0), Value(-3.0)
(a * b + a.tanh()).backward()
assert abs(a.grad - (-3.0 + 1 - math.tanh(2.0) ** 2)) < 1e-15 and b.grad == 2.0
model = MLP(2, [4, 1], seed=0)
opt = SGD(model.parameters(), lr=0.1)
xs, ys = [[1.0, 2.0], [-1.0, 0.5], [0.3, -2.0]], [1.0, -1.0, 1.0]
first = None
for _ in range(20):
    loss = svm_loss([model(x) for x in xs], ys)
    first = loss.data if first is None else first
    opt.zero_grad()
    loss.backward()
    opt.step()
assert loss.data < first, (first, loss.data)
assert set(LOSSES) == {"svm", "mse", "bce", "ce"}
assert gradcheck(lambda x, y: x * y.tanh(), [0.5, -1.5])
assert modelwright_autograd.draw_graph(a * b).svg().startswith("<svg")  # no Graphviz needed
loaded = {m.split(".")[0] for m in sys.modules}
assert not loaded & set(HIDDEN), loaded & set(HIDDEN)
print("ok")
""",
    )
    assert out.strip() == "ok"


def test_tensor_engine_works_with_numpy_alone():
    out = _run_hidden(
        {"graphviz", "matplotlib", "tqdm", "sklearn", "scipy", "torch"},
        """
import numpy as np
from modelwright_autograd.tensor import functional as F
from modelwright_autograd.gradcheck import gradcheck
from modelwright_autograd.optim import Adam
from modelwright_autograd.tensor import Tensor
from modelwright_autograd.tensor.nn import MLP

assert gradcheck(lambda x, w: F.mse_loss(x @ w, np.ones(3)), [np.eye(3), np.ones(3)])
model = MLP(2, [8, 1], seed=0)
opt = Adam(model.parameters(), lr=0.05)
X = Tensor(np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -2.0]]))
y = np.array([1.0, -1.0, 1.0])
losses = []
for _ in range(20):
    loss = F.LOSSES["svm"](model(X).reshape(-1), y)
    losses.append(loss.item())
    opt.zero_grad()
    loss.backward()
    opt.step()
assert losses[-1] < losses[0], losses
print("ok")
""",
    )
    assert out.strip() == "ok"


def test_the_module_paths_from_before_the_family_folders_still_import():
    """modelwright_autograd.nn and the others in MOVED are the new modules themselves."""
    code = """
import sys
import modelwright_autograd
from modelwright_autograd import MOVED
assert "numpy" not in sys.modules  # the tensor family loads only when asked for
import modelwright_autograd.functional as F
from modelwright_autograd import nn, tensor_nn
from modelwright_autograd.engine import Value
for old, new in MOVED.items():
    module = sys.modules[f"modelwright_autograd.{new}"]
    assert __import__(f"modelwright_autograd.{old}", fromlist=["_"]) is module, old
    assert module.__name__ == module.__spec__.name == f"modelwright_autograd.{new}", old
assert F.cross_entropy and tensor_nn.Linear and nn.MLP and Value
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
