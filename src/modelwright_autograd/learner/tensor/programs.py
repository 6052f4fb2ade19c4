"""The programs the grader builds in a learner's tensor engine, as ``programs`` is for Value.

A program is JSON-able data: ``{"inputs": [{"shape": [2, 3], "data": [...]}, ...],
"steps": [["add", 0, 1], ["sum", 2, 1, false]], "weight": {"shape": [2], "data": [...]}}``.
Slots ``0..n-1`` are the inputs (leaf tensors, data flattened in C order), each step appends
one slot. The loss is the last slot itself when it holds one number, else
``(out * W).sum()`` with the program's constant ``weight`` W: a generic upstream gradient,
so a rule that only works for out.grad = ones cannot pass.

Each op is a template (``"{x}.sum({args})"``), the one description used three ways: the
child process evaluates it on the learner's Tensor, the oracles on torch float64 tensors or
NumPy arrays, and ``to_code`` renders it into lines a learner pastes. Standard library only:
the child imports this file by path (the leaf and constant makers bring NumPy in) and
puts it in no entry of ``sys.modules``: ``TensorOp`` is a NamedTuple, as a dataclass with
string annotations would look its module up there by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

Program = dict[str, Any]
Array = dict[str, Any]  # {"shape": [...], "data": [...]} (data flattened in C order)


class TensorOp(NamedTuple):
    """One operation: its template, how many tensors it reads, and how its extra
    arguments (after the slots) are written into the template."""

    template: str
    arity: int
    args: Callable[[list[Any]], dict[str, str]] = lambda extra: {}


def _reduction(extra: list[Any]) -> dict[str, str]:
    axis, keepdims = extra
    return {"args": "" if axis is None else f"{axis}, {bool(keepdims)}"}


def _constant(extra: list[Any]) -> dict[str, str]:
    return {"c": repr(float(extra[0]))}


OPS: dict[str, TensorOp] = {
    "add": TensorOp("{x} + {y}", 2),
    "sub": TensorOp("{x} - {y}", 2),
    "mul": TensorOp("{x} * {y}", 2),
    "div": TensorOp("{x} / {y}", 2),
    "matmul": TensorOp("{x} @ {y}", 2),
    "add_c": TensorOp("{x} + {c}", 1, _constant),
    "radd": TensorOp("{c} + {x}", 1, _constant),
    "sub_c": TensorOp("{x} - {c}", 1, _constant),
    "rsub": TensorOp("{c} - {x}", 1, _constant),
    "mul_c": TensorOp("{x} * {c}", 1, _constant),
    "rmul": TensorOp("{c} * {x}", 1, _constant),
    "div_c": TensorOp("{x} / {c}", 1, _constant),
    "rdiv": TensorOp("{c} / {x}", 1, _constant),
    "sum": TensorOp("{x}.sum({args})", 1, _reduction),
    "mean": TensorOp("{x}.mean({args})", 1, _reduction),
    "reshape": TensorOp("{x}.reshape({shape})", 1, lambda e: {"shape": ", ".join(map(str, e[0]))}),
    "transpose": TensorOp("{x}.transpose(1, 0)", 1),
    "transpose_axes": TensorOp("{x}.transpose(1, 2, 0)", 1),  # NumPy's: an order of every axis
    "T": TensorOp("{x}.T", 1),
    "exp": TensorOp("{x}.exp()", 1),
    "log": TensorOp("{x}.log()", 1),
    "tanh": TensorOp("{x}.tanh()", 1),
    "relu": TensorOp("{x}.relu()", 1),
    "log_softmax": TensorOp("{x}.log_softmax(-1)", 1),
    "cross_entropy": TensorOp(
        "cross_entropy({x}, np.array({targets}))", 1, lambda e: {"targets": repr(list(e[0]))}
    ),
}


def step_expression(step: list[Any], names: list[str]) -> str:
    """The Python expression of one step, reading its inputs from ``names``."""
    op = OPS[step[0]]
    fields = {"x": names[step[1]]}
    if op.arity == 2:
        fields["y"] = names[step[2]]
    fields |= op.args(step[1 + op.arity :])
    return op.template.format(**fields)


def evaluate(
    program: Program,
    leaf: Callable[[Array], Any],
    constant: Callable[[Array], Any],
    env: dict[str, Any],
) -> list[Any]:
    """Run ``program``: ``leaf`` makes each input, ``env`` supplies ``np`` and
    ``cross_entropy``; every slot is returned, then the loss (see ``loss``)."""
    slots = [leaf(x) for x in program["inputs"]]
    for step in program["steps"]:
        slots.append(evaluate_step(step, slots, env))
    slots.append(loss(program, slots[-1], constant))
    return slots


def loss(program: Program, out: Any, constant: Callable[[Array], Any]) -> Any:
    """The number backward() starts from: ``out`` itself, or ``(out * W).sum()``."""
    weight = program.get("weight")
    return out if weight is None else (out * constant(weight)).sum()


def evaluate_step(step: list[Any], slots: list[Any], env: dict[str, Any]) -> Any:
    """The value of one step, reading its inputs from ``slots``."""
    names = [f"s{i}" for i in range(len(slots))]
    code = step_expression(step, names)
    if code not in _CODE_CACHE:
        _CODE_CACHE[code] = compile(code, f"<{step[0]}>", "eval")
    return eval(_CODE_CACHE[code], dict(env), dict(zip(names, slots)))


_CODE_CACHE: dict[str, Any] = {}


def input_names(program: Program) -> list[str]:
    """a, b, c, ... for the inputs."""
    return list("abcdefghijklmnopqrstuvwxyz"[: len(program["inputs"])])


def nested(array: Array) -> Any:
    """The array's numbers as nested lists of its shape (a float for shape ())."""
    data, shape = list(array["data"]), list(array["shape"])
    if not shape:
        return float(data[0])

    def build(flat: list[float], dims: list[int]) -> list[Any]:
        if len(dims) == 1:
            return [float(v) for v in flat]
        step = len(flat) // dims[0]
        return [build(flat[i * step : (i + 1) * step], dims[1:]) for i in range(dims[0])]

    return build(data, shape)


def literal(array: Array) -> str:
    """``np.array([[...]])``: the array as a learner pastes it."""
    return f"np.array({nested(array)!r})"


def to_code(
    program: Program,
    import_lines: list[str],
    requires_grad: bool,
    expected: dict[str, str],
    class_name: str = "Tensor",
) -> list[str]:
    """Pasteable lines that build ``program`` in the learner's engine (its class is
    ``class_name``), call backward() and print what the grader compared, with the oracle's
    numbers in comments."""
    names = input_names(program)
    lines = [*import_lines, "import numpy as np"]
    for name, x in zip(names, program["inputs"]):
        lines.append(f"{name} = {class_name}({literal(x)})")
        if requires_grad:
            lines.append(f"{name}.requires_grad = True")
    steps = program["steps"]
    for again in range(program.get("repeat", 1)):
        if again:
            lines.append("# a new graph from the same leaves: their grads add (as torch's)")
        shown = input_names(program)
        for i, step in enumerate(steps):
            name = "out" if i == len(steps) - 1 else f"v{i + 1}"
            lines.append(f"{name} = {step_expression(step, shown)}")
            shown.append(name)
        if program.get("weight") is None:
            lines.append("out.backward()")
        else:
            if not again:
                lines.append(f"W = {literal(program['weight'])}")
            lines.append("(out * W).sum().backward()  # out.grad becomes W")
    for name in input_names(program):
        lines.append(f"print({name}.grad)")
    for label, text in expected.items():
        lines.append(f"# expected {label}: {text}")
    return lines


# ---------------------------------------------------------------------- the replies
def _number(x: Any) -> bool:
    """A float: the child sends every number through float() (a JSON int of 400 digits,
    which a forged reply could hold, is refused)."""
    return isinstance(x, float)


# The most dimensions and the longest dimension of an array in a reply: past any the checks
# use, below what NumPy and torch refuse (64 dimensions; a shape whose size overflows).
MAX_DIMS = 32
MAX_DIM_SIZE = 2**24


def is_sent_array(x: Any) -> bool:
    """An array as the child sends it: a shape of at most MAX_DIMS integers (not bools)
    from 0 to MAX_DIM_SIZE, and that many floats."""
    if not isinstance(x, dict):
        return False
    shape, data = x.get("shape"), x.get("data")
    if not (isinstance(shape, list) and len(shape) <= MAX_DIMS):
        return False
    if not all(type(n) is int and 0 <= n <= MAX_DIM_SIZE for n in shape):
        return False
    size = 1
    for n in shape:
        size *= n
    return isinstance(data, list) and len(data) == size and all(map(_number, data))


def _error(x: Any) -> bool:
    return isinstance(x, dict) and all(
        isinstance(x.get(k), str) for k in ("type", "message", "where")
    )


def _arrays(x: Any, n: int | None = None) -> bool:
    """A list of arrays (``n`` of them, when given)."""
    return isinstance(x, list) and (n is None or len(x) == n) and all(map(is_sent_array, x))


def _grads(r: Any, n: int) -> bool:
    return isinstance(r, dict) and _arrays(r.get("grads"), n)


def _layer(entry: Any) -> bool:
    """One model of a network reply: a gradient and a difference per parameter, and the
    facts about them the check reads (``forward`` may be None: not one W and one b)."""
    if not isinstance(entry, dict):
        return False
    grads, left, unlisted = entry.get("grads"), entry.get("left", []), entry.get("unlisted", [])
    return (
        _arrays(grads)
        and _arrays(entry.get("differences"), len(grads))
        and isinstance(entry.get("distinct"), int)
        and isinstance(entry.get("zeroed"), bool)
        and isinstance(left, list)
        and all(type(i) is int and 0 <= i < len(grads) for i in left)
        and "forward" in entry
        and (entry["forward"] is None or isinstance(entry["forward"], bool))
        and isinstance(unlisted, list)
        and all(isinstance(n, str) for n in unlisted)
    )


def _result(program: Program, r: Any) -> bool:
    if not isinstance(r, dict):
        return False
    n = len(program["inputs"])
    rules = r.get("rules")
    if not (isinstance(rules, list) and all(isinstance(w, str) for w in rules)):
        return False
    helpers = r.get("helpers", [])
    if not (isinstance(helpers, list) and all(isinstance(w, str) for w in helpers)):
        return False
    if "error" in r:
        alone = r.get("alone")
        alone_ok = alone is None or (
            isinstance(alone, dict) and (_error(alone.get("error")) or _grads(alone, n))
        )
        seed_ok = "loss_grad" not in r or is_sent_array(r["loss_grad"])
        stage_ok = r.get("stage") in ("forward", "backward")
        return stage_ok and _error(r["error"]) and alone_ok and seed_ok
    shared = r.get("shared", [])
    pairs = isinstance(shared, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(i, int) and 0 <= i < n for i in p)
        for p in shared
    )
    slots = n + len(program["steps"])
    written = r.get("written", [])
    written_ok = isinstance(written, list) and all(
        isinstance(w, list)
        and len(w) == 2
        and type(w[0]) is int
        and 0 <= w[0] < slots
        and w[1] in ("forward", "backward")
        for w in written
    )
    return (
        pairs
        and written_ok
        and _dtypes(r.get("dtypes", ["", ""]))
        and is_sent_array(r.get("out"))
        and is_sent_array(r.get("loss_grad"))
        and _grads(r, n)
    )


def _dtypes(x: Any) -> bool:
    """The dtypes of data and grad as the child sends them: ['float64', 'float32'], ''
    for one that is not an array."""
    return (
        isinstance(x, list) and len(x) == 2 and all(isinstance(d, str) and len(d) < 32 for d in x)
    )


def well_formed_tensor(request: dict[str, Any], reply: dict[str, Any]) -> bool:
    """True when ``reply`` has the keys and types the child's answer to a tensor
    ``request`` has (``child.well_formed`` hands the tensor requests here)."""
    do = request["do"]
    if do == "tensor_programs":
        results, programs = reply.get("results"), request["programs"]
        return (
            isinstance(results, list)
            and len(results) == len(programs)
            and all(_result(p, r) for p, r in zip(programs, results))
        )
    if do == "tensor_parts":
        return (
            is_sent_array(reply.get("data"))
            and (reply.get("grad") is None or is_sent_array(reply.get("grad")))
            and isinstance(reply.get("has_backward_method"), bool)
            and (reply.get("children") is None or isinstance(reply.get("children"), str))
            and _dtypes(reply.get("dtypes", ["", ""]))
        )
    if do == "tensor_network":
        layers = reply.get("layers")
        return isinstance(layers, dict) and all(
            isinstance(name, str) and _layer(entry) for name, entry in layers.items()
        )
    if do == "tensor_affine":
        gaps = reply.get("gaps")
        return isinstance(gaps, list) and all(_number(g) for g in gaps) and len(gaps) >= 1
    if do == "tensor_train":
        history = reply.get("history")
        return (
            isinstance(history, list)
            and len(history) >= 1
            and all(isinstance(e, list) and len(e) == 2 and all(map(_number, e)) for e in history)
            and isinstance(reply.get("loss"), str)
        )
    return False
