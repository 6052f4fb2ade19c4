"""The child side of the tensor checks: ``../scalar/probe.py`` runs this file as code (not
as a module in ``sys.modules``) when the learner's engine holds NumPy arrays, and adds
``HANDLERS`` to its own.

Like the probe it uses only the standard library, NumPy (which the learner's engine has
imported already) and ``programs.py`` beside it; nothing of the grader's package.
Each handler answers one request with JSON-able data: arrays as ``{"shape", "data"}``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "_grader_tensor_programs", Path(__file__).resolve().with_name("programs.py")
)
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # never in sys.modules: see programs.py

# Set by install(): the probe's engine dict, its describe() and children_of().
engine: dict[str, Any] = {}
describe: Any = None
children_of: Any = None


def install(
    shared: dict[str, Any], describe_error: Any, children: Any, modules: list[Any]
) -> dict[str, Any]:
    """Take the probe's helpers, find Linear, MLP and cross_entropy in ``modules`` (the
    engine's, then its nn module's, then the learner's other imported modules) and say
    what was found."""
    global engine, describe, children_of
    engine, describe, children_of = shared, describe_error, children
    files = set(engine["files"])
    others = [  # the learner's other modules working on the same Tensor class
        m
        for name, m in sorted(sys.modules.items())
        if getattr(m, "__file__", None) in files
        and m not in modules
        and engine["Value"] in vars(m).values()
    ]
    found: dict[str, Any] = {}
    where: dict[str, str] = {}
    for module in [*modules, *others]:
        for name in ("Linear", "MLP", "cross_entropy"):
            if name not in found and callable(getattr(module, name, None)):
                found[name] = getattr(module, name)
                where[name] = module.__name__
    engine.update(found)
    probe = engine["Value"](np.zeros(2))
    return {
        "kind": "tensor",
        "library": [n for n in ("Linear", "MLP") if n in found],
        "mlp": "MLP" in found,
        "cross_entropy": where.get("cross_entropy", ""),  # the module defining it
        "requires_grad": hasattr(probe, "requires_grad"),
    }


def _leaf(array: dict[str, Any]) -> Any:
    t = engine["Value"](np.array(array["data"], dtype=float).reshape(array["shape"]))
    if hasattr(t, "requires_grad"):
        t.requires_grad = True
    return t


def _constant(array: dict[str, Any]) -> np.ndarray:
    return np.array(array["data"], dtype=float).reshape(array["shape"])


def _as_array(x: Any) -> np.ndarray:
    if x is not None and not isinstance(x, (np.ndarray, np.generic, float, int)):
        x = getattr(x, "data", x)  # a grad kept as a Tensor
    return np.asarray(x, dtype=float)


def _send(x: Any) -> dict[str, Any]:
    a = _as_array(x)
    return {"shape": list(a.shape), "data": [float(v) for v in a.ravel()]}


def _grad_of(t: Any) -> dict[str, Any]:
    """The tensor's gradient; None (this project's and torch's "not reached") as zeros."""
    return _send(np.zeros(np.shape(t.data)) if t.grad is None else t.grad)


class NotATensor(Exception):
    """An op of the learner's Tensor returned something else (its message says what)."""


def _env() -> dict[str, Any]:
    return {"np": np, "cross_entropy": engine.get("cross_entropy", _no_cross_entropy)}


def _no_cross_entropy(*args: Any) -> Any:
    raise NameError("name 'cross_entropy' is not defined")


def _forward(program: dict[str, Any], leaves: list[Any] | None = None) -> list[Any]:
    """The program's slots and its loss with the learner's Tensor (from new leaves, or from
    ``leaves``), checking that each op returns a Tensor of the engine's class."""
    tensor = engine["Value"]
    slots = [_leaf(x) for x in program["inputs"]] if leaves is None else list(leaves)
    for step in program["steps"]:
        out = programs.evaluate_step(step, slots, _env())
        if not isinstance(out, tensor):
            names = [f"t{i}" for i in range(len(slots))]
            words = programs.step_expression(step, names)
            raise NotATensor(f"{words} returned a {type(out).__name__}, not a {tensor.__name__}")
        slots.append(out)
    slots.append(programs.loss(program, slots[-1], _constant))
    return slots


def _rule_location(node: Any) -> str:
    """engine.py:57: where the node's _backward function is defined, in the learner's files."""
    code = getattr(getattr(node, "_backward", None), "__code__", None)
    if code is None or code.co_filename not in engine["files"]:
        return ""
    return f"{Path(code.co_filename).name}:{code.co_firstlineno}"


def _helper_location(node: Any) -> str:
    """'unbroadcast (engine.py:230)': the first function of the learner's files that the
    node's _backward calls by name (a helper the rules share), or ''."""
    rule = getattr(node, "_backward", None)
    code = getattr(rule, "__code__", None)
    if code is None or code.co_filename not in engine["files"]:
        return ""
    for name in code.co_names:
        helper = getattr(rule, "__globals__", {}).get(name) or getattr(type(node), name, None)
        called = getattr(helper, "__code__", None)
        if called is not None and called.co_filename in engine["files"]:
            return f"{name} ({Path(called.co_filename).name}:{called.co_firstlineno})"
    return ""


def _shared(leaves: list[Any]) -> list[list[int]]:
    """The pairs of leaves whose gradients are one array (or views of one)."""
    arrays = [
        t.grad if isinstance(t.grad, np.ndarray) else getattr(t.grad, "data", 0) for t in leaves
    ]
    return [
        [i, j]
        for i in range(len(arrays))
        for j in range(i + 1, len(arrays))
        if isinstance(arrays[i], np.ndarray)
        and isinstance(arrays[j], np.ndarray)
        and np.shares_memory(arrays[i], arrays[j])
    ]


def run_programs(request: dict[str, Any]) -> dict[str, Any]:
    """Build each program, backward() from its loss, report the output, the loss's grad
    and every input's grad (or where it failed)."""
    return {"results": [_run_program(program) for program in request["programs"]]}


def _run_program(program: dict[str, Any]) -> dict[str, Any]:
    stage, rules, helpers, slots, written = "forward", [], [], [], []
    n = len(program["inputs"])
    try:
        leaves = [_leaf(x) for x in program["inputs"]]
        before = _copies(leaves)
        slots = _forward(program, leaves)
        written = _written(slots, before, "forward")
        rules = [_rule_location(node) for node in slots[n:-1]]
        helpers = [_helper_location(node) for node in slots[n:-1]]
        out = _send(slots[-2].data)
        stage = "backward"
        before = _copies(slots[:-1])
        slots[-1].backward()
        for _ in range(program.get("repeat", 1) - 1):  # a new graph from the same leaves
            _forward(program, slots[:n])[-1].backward()
        grads = [_grad_of(t) for t in slots[:n]]
        return {
            "out": out,
            "loss_grad": _grad_of(slots[-1]),
            "grads": grads,
            "rules": rules,
            "helpers": helpers,
            "shared": _shared(slots[:n]),
            "written": written + _written(slots, before, "backward"),
            "dtypes": [_dtype(slots[0].data), _dtype(slots[0].grad)],
        }
    except BaseException as error:
        result = {"stage": stage, "error": describe(error), "rules": rules, "helpers": helpers}
        if stage == "backward":
            with contextlib.suppress(Exception):  # the seed, even when a rule raised after it
                result["loss_grad"] = _grad_of(slots[-1])
        if isinstance(error, NotImplementedError) and stage == "backward":
            result["alone"] = _rules_alone(program)
        return result


def _copies(tensors: list[Any]) -> list[np.ndarray]:
    """A copy of each tensor's data (its numbers as they are now)."""
    return [np.array(_as_array(t.data), copy=True) for t in tensors]


def _written(slots: list[Any], before: list[np.ndarray], stage: str) -> list[list[Any]]:
    """[slot, stage] for each of the first slots whose numbers are no longer ``before``'s:
    an op wrote into that tensor's array in place during ``stage``."""
    return [
        [i, stage]
        for i, (t, old) in enumerate(zip(slots, before))
        if not np.array_equal(_as_array(t.data), old, equal_nan=True)
    ]


def _dtype(x: Any) -> str:
    """The NumPy dtype of an array (of a grad kept as a Tensor), or ""."""
    if not isinstance(x, (np.ndarray, np.generic)):
        x = getattr(x, "data", None)
    return str(x.dtype) if isinstance(x, (np.ndarray, np.generic)) else ""


def _rules_alone(program: dict[str, Any]) -> dict[str, Any]:
    """backward() is still a TODO: run the op rules with the grader's own walk, from the
    output with out.grad = W (the loss's own rules left out), so the report can say
    whether they are right already."""
    try:
        slots = _forward(program)
        top = slots[-2]
        order, seen, stack = [], set(), [(top, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
            elif id(node) not in seen:
                if children_of(node) is None:
                    return {"error": {"type": "NoChildren", "message": "", "where": ""}}
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((child, False) for child in children_of(node))
        weight = program.get("weight")
        top.grad = np.ones_like(_as_array(top.data)) if weight is None else _constant(weight)
        for node in reversed(order):
            node._backward()
        return {"grads": [_grad_of(t) for t in slots[: len(program["inputs"])]]}
    except BaseException as error:
        return {"error": describe(error)}


def parts(request: dict[str, Any]) -> dict[str, Any]:
    """What a fresh Tensor of a (2, 3) array holds: data, grad, children, backward()."""
    t = engine["Value"](np.arange(6.0).reshape(2, 3))
    return {
        "data": _send(t.data),
        "grad": None if t.grad is None else _send(t.grad),
        "dtypes": [_dtype(t.data), _dtype(t.grad)],
        "children": next(
            (n for n in ("_prev", "_children", "children", "prev") if hasattr(t, n)), None
        ),
        "has_backward_method": callable(getattr(t, "backward", None)),
    }


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)


def _parameters(model: Any) -> list[Any]:
    return list(model.parameters())


def network(request: dict[str, Any]) -> dict[str, Any]:
    """For Linear(4, 3) and MLP(4, [5, 3]) on a batch of 6: the gradient of
    sum(out * W) for every parameter, the same by central differences of the learner's
    own forward (h = 1e-6, then 1e-4), whether zero_grad() zeroes the gradients, and for
    Linear whether its output is x @ W + b with its own W and b (None: not one 2-D and one
    1-D parameter)."""
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (6, 4))
    weight = rng.uniform(-1, 1, (6, 3))
    layers = {}
    for name, make in (
        ("Linear(4, 3)", lambda: engine["Linear"](4, 3)),
        ("MLP(4, [5, 3])", lambda: engine["MLP"](4, [5, 3])),
    ):
        if name.split("(")[0] not in engine:
            continue
        _seed(1)
        model = make()
        params = _parameters(model)
        for p in params:  # zero biases put a relu exactly on its kink, where differences lie
            p.data = p.data + rng.uniform(-0.2, 0.2, np.shape(p.data))

        inputs: list[Any] = []  # the x tensors: a model may keep the last one

        def loss(model: Any = model, inputs: list[Any] = inputs) -> Any:
            inputs.append(engine["Value"](x))
            return (model(inputs[-1]) * weight).sum()

        if hasattr(model, "zero_grad"):
            model.zero_grad()
        loss().backward()
        grads = [_grad_of(p) for p in params]
        unlisted = _unlisted(model, [*params, *inputs], name.split("(")[0])
        differences = []
        for p in params:
            saved = np.array(p.data, dtype=float)
            pair = []
            for h in (1e-6, 1e-4):
                d = np.zeros(saved.shape)
                for i in np.ndindex(saved.shape):
                    up, down = saved.copy(), saved.copy()
                    up[i] += h
                    down[i] -= h
                    p.data = up
                    f_up = float(_as_array(loss().data))
                    p.data = down
                    f_down = float(_as_array(loss().data))
                    d[i] = (f_up - f_down) / (2 * h)
                pair.append(d)
            p.data = saved
            differences.append(pair)
        zeroed, left = False, []
        if hasattr(model, "zero_grad"):
            model.zero_grad()
            left = [
                i for i, p in enumerate(params) if p.grad is not None and np.any(_as_array(p.grad))
            ]
            zeroed = not left
        best = [
            _send(
                d[0]
                if np.allclose(_as_array(g["data"]), d[0].ravel(), atol=1e-6, rtol=1e-6)
                else d[1]
            )
            for g, d in zip(grads, differences)
        ]
        layers[name] = {
            "forward": _linear_forward(model, params, x) if name.startswith("Linear") else None,
            "grads": grads,
            "differences": best,
            "distinct": len({id(p) for p in params}),
            "zeroed": zeroed,
            "left": left,
            "unlisted": unlisted,
        }
    return {"layers": layers}


def _unlisted(model: Any, params: list[Any], name: str) -> list[str]:
    """The model's own leaf tensors, found through its attributes ('Linear.b',
    'MLP.layers[0].W'), that got a gradient from the loss but are not in ``params`` (an
    output the model keeps, which has children, is not one)."""
    listed, seen, found = {id(p) for p in params}, set(), []
    stack = [(name, model)]
    while stack and len(seen) < 2000:
        path, obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, type(sys))):
            continue
        seen.add(id(obj))
        if isinstance(obj, engine["Value"]):
            grad = obj.grad
            leaf = not children_of(obj)
            if leaf and id(obj) not in listed and grad is not None and np.any(_as_array(grad)):
                found.append(path)
        elif isinstance(obj, (list, tuple)):
            stack.extend((f"{path}[{i}]", x) for i, x in enumerate(obj))
        elif isinstance(obj, dict):
            stack.extend((f"{path}[{k!r}]", x) for k, x in obj.items())
        elif isinstance(getattr(obj, "__dict__", None), dict):
            stack.extend((f"{path}.{k}", x) for k, x in vars(obj).items())
    return sorted(found)


def _linear_forward(model: Any, params: list[Any], x: np.ndarray) -> bool | None:
    """Whether Linear(4, 3)'s output is x @ W + b (or x @ W.T + b for a (3, 4) W)."""
    arrays = [_as_array(p.data) for p in params]
    matrices = [a for a in arrays if a.ndim == 2]
    vectors = [a for a in arrays if a.ndim == 1]
    if len(matrices) != 1 or len(vectors) != 1 or vectors[0].shape != (3,):
        return None
    w, b = matrices[0], vectors[0]
    out = _as_array(model(engine["Value"](x)).data)
    wanted = x @ w + b if w.shape == (4, 3) else x @ w.T + b if w.shape == (3, 4) else None
    return None if wanted is None else bool(np.allclose(out, wanted, rtol=1e-9, atol=1e-12))


def affine(request: dict[str, Any]) -> dict[str, Any]:
    """How far MLP(64, [32, 10]) is from affine: for random pairs x1, x2,
    |f((x1 + x2) / 2) - (f(x1) + f(x2)) / 2|, largest over the outputs, over the size of
    the outputs. An affine network gives 0 (rounding) on every pair."""
    _seed(0)
    model = engine["MLP"](64, [32, 10])
    rng = np.random.RandomState(4)
    x1, x2 = rng.normal(0, 1.5, (8, 64)), rng.normal(0, 1.5, (8, 64))
    tensor = engine["Value"]

    def f(x: np.ndarray) -> np.ndarray:
        return _as_array(model(tensor(x)).data)

    y1, y2, mid = f(x1), f(x2), f((x1 + x2) / 2)
    scale = np.maximum(np.abs(y1).max(axis=1), np.abs(y2).max(axis=1)) + 1e-12
    gaps = np.abs(mid - (y1 + y2) / 2).max(axis=1) / scale
    return {"gaps": [float(g) for g in gaps]}


def train(request: dict[str, Any]) -> dict[str, Any]:
    """SGD with the learner's parameters() and zero_grad() on the given digits: MLP(64,
    [32, 10]), cross_entropy (or -mean of log_softmax at the targets), batches of
    ``batch``; [loss on the training set, test accuracy] before and after each epoch."""
    tensor = engine["Value"]
    X = np.array(request["X_train"], dtype=float)
    y = np.array(request["y_train"], dtype=int)
    X_test = np.array(request["X_test"], dtype=float)
    y_test = np.array(request["y_test"], dtype=int)
    _seed(0)
    model = engine["MLP"](64, [32, 10])
    params = _parameters(model)
    if "cross_entropy" in engine:
        how = "cross_entropy"

        def loss_of(logits: Any, targets: np.ndarray) -> Any:
            return engine["cross_entropy"](logits, targets)

    else:
        how = "log_softmax"

        def loss_of(logits: Any, targets: np.ndarray) -> Any:
            onehot = np.zeros((len(targets), 10))
            onehot[np.arange(len(targets)), targets] = -1.0 / len(targets)
            return (logits.log_softmax(-1) * onehot).sum()

    def measure() -> list[float]:
        loss = float(_as_array(loss_of(model(tensor(X)), y).data))
        accuracy = float((_as_array(model(tensor(X_test)).data).argmax(axis=1) == y_test).mean())
        return [loss, accuracy]

    history = [measure()]
    rng = np.random.RandomState(0)
    lr, batch = request["lr"], request["batch"]
    for _ in range(request["epochs"]):
        order = rng.permutation(len(X))
        for first in range(0, len(X), batch):
            chosen = order[first : first + batch]
            loss = loss_of(model(tensor(X[chosen])), y[chosen])
            model.zero_grad()
            loss.backward()
            for p in params:
                if p.grad is not None:
                    p.data -= lr * _as_array(p.grad)
        history.append(measure())
    return {"history": history, "loss": how}


HANDLERS = {
    "tensor_programs": run_programs,
    "tensor_parts": parts,
    "tensor_network": network,
    "tensor_affine": affine,
    "tensor_train": train,
}
