"""The child side of the backprop-by-hand check: ``../scalar/probe.py`` runs this file as
code (in no module the learner's code finds in ``sys.modules``) when asked to load a
backprop exercise, and adds ``HANDLERS`` to its own.

It keeps the learner's forward tensors (``f``) and the gradients their functions returned
(``d``) between requests, so each gradient is one request: one that hangs or crashes costs
that row only (the grader restarts the process and gives the earlier gradients back).
Standard library and NumPy only; every number the grader compares with PyTorch is computed
in the grader's process.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import numpy as np

MAX_SENT = 100_000  # numbers of one array sent back: no gradient here has more

state: dict[str, Any] = {}  # module, describe, f, d


class NoState(Exception):
    """A gradient asked for before the forward (the process was restarted)."""


def load(request: dict[str, Any], engine: dict[str, Any], describe: Any, importer: Any) -> dict:
    """Import the learner's module and say which of the asked functions it defines."""
    sys.path.insert(0, request["sys_path"])
    engine["files"] = request["files"]
    module = importer(request["module"], request["file"])
    state.update(module=module, describe=describe)
    found = [name for name in request["functions"] if callable(getattr(module, name, None))]
    return {"found": found}


def _send(a: np.ndarray) -> dict[str, Any]:
    if a.size > MAX_SENT:
        raise ValueError(f"an array of shape {a.shape} ({a.size:,} numbers) is too big here")
    return {"shape": list(a.shape), "data": [float(v) for v in a.ravel()]}


def _as_array(x: Any, what: str) -> np.ndarray:
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what} returned {type(x).__name__}, not an array of numbers") from None


def _inputs(request: dict[str, Any]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    params = {
        name: np.array(a["data"], dtype=float).reshape(a["shape"])
        for name, a in request["params"].items()
    }
    return params, np.array(request["Xb"], dtype=np.int64), np.array(request["Yb"], np.int64)


def forward(request: dict[str, Any]) -> dict[str, Any]:
    """The learner's forward on the grader's parameters and batch: the tensors asked for
    (each, or the words for why it is missing)."""
    params, Xb, Yb = _inputs(request)
    f = state["module"].forward(params, Xb, Yb)
    state["f"], state["d"] = f, SimpleNamespace()
    tensors: dict[str, Any] = {}
    for name in request["names"]:
        try:
            tensors[name] = _send(_as_array(getattr(f, name), f"forward's f.{name}"))
        except BaseException as error:
            tensors[name] = {"error": state["describe"](error)}
    return {"tensors": tensors}


def step(request: dict[str, Any]) -> dict[str, Any]:
    """One of the learner's gradient functions, called with f and the gradients so far;
    what it returns is kept as d.<into> (when given) for the steps after it."""
    if "f" not in state:
        raise NoState("no forward yet")
    name = request["function"]
    grad = _as_array(getattr(state["module"], name)(state["f"], state["d"]), name)
    if request["into"]:
        setattr(state["d"], request["into"], grad)
    return {"grad": _send(grad)}


def restore(request: dict[str, Any]) -> dict[str, Any]:
    """Give back the gradients the learner's functions returned before a restart."""
    for name, a in request["grads"].items():
        setattr(state["d"], name, np.array(a["data"], dtype=float).reshape(a["shape"]))
    return {"restored": len(request["grads"])}


def train(request: dict[str, Any]) -> dict[str, Any]:
    """Plain SGD with the learner's backward (or backward_fused) on the grader's batches,
    from the grader's parameters: the loss of each step."""
    module = state["module"]
    params, _, _ = _inputs(request | {"Xb": [], "Yb": []})
    backward = module.backward_fused if request["fused"] else module.backward
    losses = []
    for Xb, Yb in request["batches"]:
        f = module.forward(params, np.array(Xb, dtype=np.int64), np.array(Yb, dtype=np.int64))
        losses.append(float(f.loss))
        d = backward(f)
        for name, p in params.items():
            grad = _as_array(getattr(d, name), f"d.{name}")
            if grad.shape != p.shape:
                raise ValueError(f"d.{name} has shape {grad.shape}, {name} has {p.shape}")
            params[name] = p - request["lr"] * grad
    return {"losses": losses}


HANDLERS = {
    "backprop_forward": forward,
    "backprop_step": step,
    "backprop_restore": restore,
    "backprop_train": train,
}
