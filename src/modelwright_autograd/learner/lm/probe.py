"""The child side of the LM checks: ``../scalar/probe.py`` runs this file as code (as the
tensor probe) on the first ``lm_*`` request, and ``HANDLERS`` answer every one from then on.

Standard library and NumPy only. The learner's ``lm_ops`` and ``models`` modules are
imported on first use, so a broken models.py fails the LM rows, not the engine's load.
Arrays travel as ``{"shape", "data"}`` (floats) or ``{"shape", "ints"}`` (token ids).
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

engine: dict[str, Any] = {}  # the probe's: the Tensor class (engine["Value"]), the files


def install(shared: dict[str, Any]) -> None:
    """Take the probe's engine dict (the Tensor class as ``Value``, the learner's files)."""
    global engine
    engine = shared


def _array(x: dict[str, Any]) -> np.ndarray:
    if "ints" in x:
        return np.array(x["ints"], dtype=np.int64).reshape(x["shape"])
    if "bools" in x:
        return np.array(x["bools"], dtype=bool).reshape(x["shape"])
    return np.array(x["data"], dtype=float).reshape(x["shape"])


def _as_array(x: Any) -> np.ndarray:
    if x is not None and not isinstance(x, (np.ndarray, np.generic, float, int)):
        x = getattr(x, "data", x)  # a grad kept as a Tensor
    return np.asarray(x, dtype=float)


def _send(x: Any) -> dict[str, Any]:
    a = _as_array(x)
    return {"shape": list(a.shape), "data": [float(v) for v in a.ravel()]}


def _grad(t: Any) -> dict[str, Any]:
    return _send(np.zeros(np.shape(t.data)) if t.grad is None else t.grad)


def _leaf(array: np.ndarray) -> Any:
    t = engine["Value"](array)
    if hasattr(t, "requires_grad"):
        t.requires_grad = True
    return t


def _module(request: dict[str, Any], kind: str) -> Any:
    return importlib.import_module(request[f"{kind}_module"])


def op(request: dict[str, Any]) -> dict[str, Any]:
    """One op case: out, each tensor's gradient of (out * W).sum(), and the tensors whose
    data the op (or its backward) changed."""
    ops = _module(request, "ops")
    case = request["case"]
    leaves = {name: _leaf(_array(x)) for name, x in case["tensors"].items()}
    scope = {**vars(ops), "np": np, "math": math, **leaves}
    scope.update({name: _array(x) for name, x in case["arrays"].items()})
    before = {name: _as_array(t.data).copy() for name, t in leaves.items()}
    exec(case["code"], scope)
    out = scope["out"]
    if not isinstance(out, engine["Value"]):
        raise TypeError(f"out is a {type(out).__name__}, not a {engine['Value'].__name__}")
    (out * _array(case["weight"])).sum().backward()
    changed = [n for n, t in leaves.items() if not np.array_equal(_as_array(t.data), before[n])]
    grads = {n: _grad(t) for n, t in leaves.items()}
    return {"out": _send(out.data), "grads": grads, "changed": changed}


def _build(request: dict[str, Any]) -> tuple[Any, Any]:
    """The learner's model from ``build`` (code in models.py's namespace), with the grader's
    weights set by name; or a reply naming the names or shapes that differ."""
    models = _module(request, "models")
    model = eval(request["build"], vars(models).copy())
    named = list(model.named_parameters())
    weights = {name: _array(x) for name, x in request["weights"].items()}
    shapes = {name: list(np.shape(p.data)) for name, p in named}
    if set(shapes) != set(weights) or any(shapes[n] != list(weights[n].shape) for n in weights):
        return None, {"names": [[n, s] for n, s in shapes.items()]}
    for name, p in named:
        p.data[...] = weights[name]
    return model, None


def initial(request: dict[str, Any]) -> dict[str, Any]:
    """``_stats`` of each weight the model draws itself, by name, np.random seeded first (the
    weights themselves would be megabytes); or a reply naming the names or shapes that
    differ from ``shapes``."""
    models = _module(request, "models")
    np.random.seed(request["seed"])
    named = list(eval(request["build"], vars(models).copy()).named_parameters())
    shapes = {name: list(np.shape(p.data)) for name, p in named}
    if shapes != request["shapes"]:
        return {"names": [[n, s] for n, s in shapes.items()]}
    return {"initial": {name: _stats(_as_array(p.data)) for name, p in named}}


def _stats(a: np.ndarray) -> list[float]:
    """mean, std, least, largest, kurtosis (E[(x - mean)^4] / std^4; 0 when constant) and
    the first two values (two parameters drawn alike start alike) of ``a``."""
    mean, std = float(a.mean()), float(a.std())
    kurtosis = float(np.mean((a - mean) ** 4) / std**4) if std > 0 else 0.0
    first = [float(v) for v in a.ravel()[:2]] + [0.0] * max(0, 2 - a.size)
    return [mean, std, float(a.min()), float(a.max()), kurtosis, *first]


def module(request: dict[str, Any]) -> dict[str, Any]:
    """A part of the GPT alone on x: out, x's gradient and each parameter's."""
    model, mismatch = _build(request)
    if mismatch:
        return mismatch
    x = _leaf(_array(request["x"]))
    out = model(x)
    (out * _array(request["weight"])).sum().backward()
    grads = {n: _grad(p) for n, p in model.named_parameters()}
    return {"out": _send(out.data), "x_grad": _grad(x), "grads": grads}


def _given_dropout(masks: list[np.ndarray], rate: float) -> Any:
    """A dropout(x, p, training) that, in training, multiplies by the grader's masks in
    call order: where models.py calls it is then all that decides the loss. Every call must
    pass the model's rate as p, and training as a bool (or 0 or 1)."""
    left = list(masks)

    def dropout(x: Any, p: Any = None, training: Any = None) -> Any:
        call = len(masks) - len(left) + 1
        if type(p) is bool or not isinstance(p, (int, float)) or type(training) not in (bool, int):
            raise TypeError(
                f"dropout call {call} got p={p!r}, training={training!r}: call it as "
                "dropout(x, self.dropout, self.training)"
            )
        if training and p != rate:
            raise ValueError(f"dropout call {call} got p={p!r}; the model's dropout is {rate}")
        if not training or p == 0:
            return x
        where = "after the embeddings, then on att, after attention's c_proj and the MLP's"
        if not left:
            raise RuntimeError(
                f"dropout was called more than the {len(masks)} times nanoGPT's GPT calls it "
                f"({where})"
            )
        mask = left.pop(0)
        if tuple(np.shape(x.data)) != mask.shape:
            raise ValueError(
                f"dropout call {call} got shape {tuple(np.shape(x.data))}; nanoGPT's call "
                f"{call} has shape {mask.shape} ({where})"
            )
        return x * engine["Value"](mask)

    dropout.left = left  # type: ignore[attr-defined]
    return dropout


def _any_is(value: Any, objects: list[Any]) -> bool:
    return any(value is o for o in objects)


def model(request: dict[str, Any]) -> dict[str, Any]:
    """The loss of one batch and every parameter's gradient (after model.eval() when asked;
    with ``masks``, the dropout models.py calls replaced by ``_given_dropout`` of them), and with
    ``logits`` the logits of a call without targets; an error if the model wrote into the
    idx or targets it was given."""
    made, mismatch = _build(request)
    if mismatch:
        return mismatch
    if request.get("eval"):
        made.eval()
    if request.get("eval_then_train"):  # train() must reach every module, as torch's
        made.eval()
        made.train()
    ops, models = _module(request, "ops"), _module(request, "models")
    owns = [f for f in (vars(ops).get("dropout"), vars(models).get("dropout")) if callable(f)]
    swapped: list[tuple[Any, str, Any]] = []
    if "masks" in request:
        if not owns:
            raise NameError("lm_ops.py has no dropout to give the grader's masks to")
        masks = [_array(m) for m in request["masks"]]
        given = _given_dropout(masks, float(request["rate"]))
        # every name models.py calls the dropout by: ``dropout``, ``dropout as drop``,
        # ``lm_ops.dropout``
        for where in {id(m): m for m in (ops, models)}.values():
            swapped += [(where, k, v) for k, v in list(vars(where).items()) if _any_is(v, owns)]
        for where, k, _ in swapped:
            setattr(where, k, given)
    idx, targets = _array(request["idx"]), _array(request["targets"])
    try:
        _, loss = made(idx, targets)
        if swapped and given.left:
            mode = (
                "model.train() must reach every module, as model.eval() does"
                if request.get("eval_then_train")
                else "a new model starts in training mode, as torch's"
            )
            ran = len(masks) - len(given.left)
            own = "; models.py must call lm_ops' dropout(x, p, training): the grader's masks "
            own = own + "reach the model through it" if ran == 0 else ""
            raise RuntimeError(
                f"dropout ran {ran} of the {len(masks)} times nanoGPT's GPT runs it in "
                f"training: a dropout left out, or a module in eval mode ({mode}){own}"
            )
    finally:
        for where, k, own in swapped:
            setattr(where, k, own)
    loss.backward()
    grads = {n: _grad(p) for n, p in made.named_parameters()}
    reply = {"loss": float(_as_array(loss.data)), "grads": grads}
    if request.get("logits"):  # the sampling call: no targets; again, fewer positions
        reply["logits"] = _send(made(idx)[0].data)
        reply["short_logits"] = _send(made(idx[:1, : request["short"]])[0].data)
    for name, sent in (("idx", idx), ("targets", targets)):
        if not np.array_equal(sent, _array(request[name])):
            raise ValueError(
                f"the model changed the {name} array it was given (a write into the caller's "
                "array, as np.asarray keeps it): copy it first, as np.array(idx) does"
            )
    return reply


def train(request: dict[str, Any]) -> dict[str, Any]:
    """Training with the learner's configure_optimizers: the loss of each batch, and the
    parameters after the first step, and each group's lr as configure_optimizers made it
    (None where a group has none), and the parameters its groups list more than once. Each
    step sets every param_group's lr first when
    ``rates`` are given, as nanoGPT's loop does, and zeroes the gradients with
    optimizer.zero_grad() and model.zero_grad() in turn (nanoGPT's loop calls the one,
    makemore's the other)."""
    made, mismatch = _build(request)
    if mismatch:
        return mismatch
    settings = request["settings"]
    models = _module(request, "models")
    optimizer = models.configure_optimizers(
        made, settings["weight_decay"], settings["lr"], tuple(settings["betas"])
    )
    made_with = [group.get("lr") for group in optimizer.param_groups]
    names = {id(p): n for n, p in made.named_parameters()}
    listed = [names.get(id(p), "") for g in optimizer.param_groups for p in g.get("params", [])]
    repeated = sorted({n for n in listed if n and listed.count(n) > 1})
    losses, first = [], {}
    for step, (idx, targets) in enumerate(request["batches"]):
        for group in optimizer.param_groups if "rates" in settings else ():
            group["lr"] = settings["rates"][step]
        _, loss = made(_array(idx), _array(targets))
        (made.zero_grad if step % 2 else optimizer.zero_grad)()
        loss.backward()
        optimizer.step()
        losses.append(float(_as_array(loss.data)))
        if step == 0:
            first = {n: _send(p.data) for n, p in made.named_parameters()}
    made_with = [float(lr) if isinstance(lr, (int, float)) else None for lr in made_with]
    return {"losses": losses, "first": first, "made_with": made_with, "repeated": repeated}


HANDLERS = {
    "lm_op": op,
    "lm_module": module,
    "lm_model": model,
    "lm_init": initial,
    "lm_train": train,
}
