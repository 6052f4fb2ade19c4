"""Derivatives as functions, for both engines, with torch.autograd's meanings.

``grad`` is ``torch.autograd.grad``; ``jacobian``, ``hessian``, ``hvp`` and ``jvp`` are
``torch.autograd.functional``'s. Reverse mode reuses each op's backward rule; forward mode
(``jvp``, ``jacobian(strategy="forward-mode")``) reuses the same rules too, as
docs/higher-order.md explains. NumPy and the tensor engine are loaded only for Tensors.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

from .checks import as_float, describe
from .graph import enable_grad
from .scalar.engine import Value, as_value

Node = Any  # a Value or a Tensor (the tensor package is imported only when Tensors are in use)


# ---------------------------------------------------------------------- engines
def _tensor_module() -> Any:
    """The tensor package if it is loaded (no Tensor can exist before it is), else None."""
    return sys.modules.get("modelwright_autograd.tensor")


def _is_tensor(x: object) -> bool:
    tm = _tensor_module()
    return tm is not None and isinstance(x, tm.Tensor)


def _is_array(x: object) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _as_nodes(xs: object, what: str) -> tuple[Node, ...]:
    """A node or a sequence of nodes as a tuple, all Values or all Tensors."""
    nodes = tuple(xs) if isinstance(xs, (list, tuple)) else (xs,)
    if not nodes:
        raise ValueError(f"grad: {what} is empty")
    for i, n in enumerate(nodes):
        if not isinstance(n, Value) and not _is_tensor(n):
            raise TypeError(f"grad: {what} must be Values or Tensors; item {i} is {describe(n)}")
    if len({isinstance(n, Value) for n in nodes}) > 1:
        raise TypeError(f"grad: {what} mixes Values and Tensors")
    return nodes


def _order(outputs: Sequence[Node]) -> list[Node]:
    """Every node the outputs depend on, each after its inputs."""
    from .graph import topological_order

    return topological_order(*outputs)


# ---------------------------------------------------------------------- reverse mode
def grad(
    outputs: Node | Sequence[Node],
    inputs: Node | Sequence[Node],
    grad_outputs: Any = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Any, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, as ``torch.autograd.grad``.

    Returns one gradient per input: the sum over outputs of ``grad_outputs[k]``-weighted
    vector-Jacobian products. Nothing's ``.grad`` changes. ``grad_outputs`` may be omitted
    for one-element outputs (it is 1). An input the outputs do not depend on is an error
    unless ``allow_unused=True``, which gives None for it. Gradients are floats (Value
    inputs) or constant Tensors; with ``create_graph=True`` they are nodes with history.
    """
    outs = _as_nodes(outputs, "outputs")
    ins = _as_nodes(inputs, "inputs")
    tensor = _is_tensor(outs[0])
    if tensor != _is_tensor(ins[0]):
        raise TypeError("grad: outputs and inputs must be from the same engine")
    seeds = _seeds(outs, grad_outputs, tensor, create_graph)
    if tensor:
        for i, x in enumerate(ins):
            if not x.requires_grad:
                raise RuntimeError(f"grad: input {i} does not require grad")
        for i, o in enumerate(outs):
            if not o.requires_grad:
                raise RuntimeError(
                    f"grad: output {i} does not require grad (it has no graph to walk)"
                )
    order = _order(outs)
    with enable_grad() if create_graph else nullcontext():  # as torch, even in no_grad()
        grads = _reverse(order, outs, seeds, create_graph, tensor)
    reached = {id(n) for n in order}
    result = []
    for i, x in enumerate(ins):
        if id(x) not in reached:
            if not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} is not used in the graph of the outputs "
                    "(pass allow_unused=True to get None for it)"
                )
            result.append(None)
            continue
        g = grads.get(id(x))
        if g is None:  # in the graph, but every path to it carries no gradient (relu < 0)
            g = _zeros_like(x, create_graph)
        elif tensor and not create_graph:
            g = _constant(g)
        result.append(g)
    return tuple(result)


def _seeds(outs: tuple[Node, ...], grad_outputs: Any, tensor: bool, create_graph: bool) -> list:
    """The vector each output's Jacobian is multiplied by (1 for one-element outputs)."""
    if grad_outputs is None:
        given: list[Any] = [None] * len(outs)
    else:
        given = list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs]
        if len(given) != len(outs):
            raise ValueError(f"grad: {len(given)} grad_outputs for {len(outs)} outputs")
    seeds = []
    for i, (o, v) in enumerate(zip(outs, given)):
        if not tensor:
            if v is None:
                v = 1.0
            if create_graph:
                seeds.append(as_value(v, "grad_outputs"))
            else:
                seeds.append(v.data if isinstance(v, Value) else as_float(v, "grad_outputs"))
            continue
        import numpy as np

        tm = _tensor_module()
        if v is None:
            if o.data.size != 1:
                raise RuntimeError(
                    f"grad: output {i} has shape {o.shape}; grad can be implicitly created "
                    "only for one-element outputs, so pass grad_outputs"
                )
            v = np.ones(o.shape, dtype=o.dtype)
        if not (create_graph and isinstance(v, tm.Tensor)):
            v = tm.to_array(v, "grad: grad_outputs", o.dtype)
            if create_graph:
                v = tm.make_node(v, (), "", None)
        if v.shape != o.shape:
            raise ValueError(f"grad: grad_outputs {i} has shape {v.shape}, output {o.shape}")
        seeds.append(v)
    return seeds


def _reverse(
    order: list[Node], outs: Sequence[Node], seeds: list, create_graph: bool, tensor: bool
) -> dict[int, Any]:
    """The backward walk of ``grad``: each node's rule, applied in reverse topological order,
    with the gradients kept in a dict rather than in ``.grad``."""
    grads: dict[int, Any] = {}
    for o, s in zip(outs, seeds):
        _add(grads, o, s, tensor)
    for node in reversed(order):
        rule = node._backward
        g = grads.get(id(node))
        if rule is None or g is None:
            continue
        prev = node._prev
        ins = prev if create_graph else [p.data for p in prev]
        out = node if create_graph else node.data
        if tensor:
            need = tuple(p.requires_grad for p in prev)
            parts = rule(g, out, node._ctx, need, *ins)
        else:
            need = (True,) * len(prev)
            parts = rule(g, out, *ins)
        for p, gp, n in zip(prev, parts, need):
            if n and gp is not None:
                _add(grads, p, gp, tensor)
    return grads


def _add(grads: dict[int, Any], node: Node, g: Any, tensor: bool) -> None:
    """Accumulate out of place (``old + g``), tensor gradients first un-broadcast and cast
    to the node's dtype (``grad_for``)."""
    if tensor:
        g = _tensor_module().grad_for(node, g)
    old = grads.get(id(node))
    grads[id(node)] = g if old is None else old + g


def _zeros_like(x: Node, create_graph: bool) -> Any:
    if isinstance(x, Value):
        return Value(0.0) if create_graph else 0.0
    return _constant(_tensor_module().zeros_like(x.data))


def _constant(a: Any) -> Any:
    """An array (or a Tensor) as a Tensor with no history."""
    tm = _tensor_module()
    return a if isinstance(a, tm.Tensor) else tm.make_node(a, (), "", None)


# ---------------------------------------------------------------------- forward mode
def _tangents(order: list[Node], tangents: dict[int, Any], create_graph: bool) -> dict[int, Any]:
    """Forward mode on the scalar engine: push tangents along the graph in topological order.

    Every scalar rule is linear in its upstream gradient, ``rule(g) = g * (partials)``, so
    ``rule(1)`` gives the op's local partial derivatives, and a node's tangent is
    ``sum_i partial_i * tangent_i``: the op's own rule, no second derivative to write.
    """
    one: Any = Value(1.0) if create_graph else 1.0
    for node in order:
        rule = node._backward
        if rule is None:
            continue
        incoming = [tangents.get(id(p)) for p in node._prev]
        if all(t is None for t in incoming):
            continue
        if create_graph:
            partials = rule(one, node, *node._prev)
        else:
            partials = rule(one, node.data, *[p.data for p in node._prev])
        terms = [d * t for d, t in zip(partials, incoming) if d is not None and t is not None]
        tangents[id(node)] = sum(terms[1:], terms[0]) if terms else 0.0
    return tangents


def jvp(
    f: Callable[..., Any], x: Any, v: Any = None, create_graph: bool = False
) -> tuple[Any, Any]:
    """``(f(x), J v)``: the derivative of f at x in the direction v, by forward mode, as
    ``torch.autograd.functional.jvp``.

    Values: one forward pass carrying tangents (see ``_tangents``). Tensors: the
    double-vjp construction, ``J v = d/du <J^T u, v>`` (docs/higher-order.md).
    """
    leaves, many, tensor = _inputs(x, create_graph)
    vs = _directions(v, leaves, many, tensor, "jvp")
    out = f(*leaves) if many else f(leaves[0])
    outs, out_many = _outputs(out, tensor, "jvp")
    if tensor:
        jv = _tensor_jvp(outs, leaves, vs, create_graph)
    else:
        t = _tangents(_order(outs), {id(x): d for x, d in zip(leaves, vs)}, create_graph)
        jv = [_value_result(t.get(id(o), 0.0), create_graph) for o in outs]
    return _detached(outs, out_many, create_graph), (tuple(jv) if out_many else jv[0])


def _tensor_jvp(outs: tuple, leaves: tuple, vs: list, create_graph: bool) -> list:
    """J v on the tensor engine: g(u) = J^T u is linear in u, so d<g(u), v>/du = J v."""
    import numpy as np

    tm = _tensor_module()
    live = [o for o in outs if o.requires_grad]
    us = [tm.Tensor(np.zeros(o.shape, dtype=o.dtype), requires_grad=True) for o in live]
    result = {id(o): _zeros_like(o, create_graph) for o in outs}
    if not live:
        return [result[id(o)] for o in outs]
    gs = grad(live, leaves, us, create_graph=True, allow_unused=True)
    terms = [(g * d).sum() for g, d in zip(gs, vs) if g is not None and g.requires_grad]
    if terms:
        total = sum(terms[1:], terms[0])
        for o, jv in zip(live, grad(total, us, create_graph=create_graph, allow_unused=True)):
            if jv is not None:
                result[id(o)] = jv
    return [result[id(o)] for o in outs]


# ---------------------------------------------------------------------- the functional API
def jacobian(
    f: Callable[..., Any],
    x: Any,
    create_graph: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of f at x, as ``torch.autograd.functional.jacobian``.

    ``x`` is one input (a number or Value; an array or Tensor) or a sequence of them, and
    f takes them as positional arguments. Entry ``[i][j]`` is d output_i / d input_j, of
    shape ``output_i.shape + input_j.shape`` for Tensors; the tuples are dropped where
    there is one output or one input. ``strategy="reverse-mode"`` takes one backward pass
    per output element, ``"forward-mode"`` one tangent pass per input element.
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(
            f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}"
        )
    leaves, many, tensor = _inputs(x, create_graph)
    out = f(*leaves) if many else f(leaves[0])
    outs, out_many = _outputs(out, tensor, "jacobian")
    if strategy == "reverse-mode":
        table = [_reverse_rows(o, leaves, tensor, create_graph) for o in outs]
    else:
        table = _forward_table(outs, leaves, tensor, create_graph)
    rows = [tuple(r) if many else r[0] for r in table]
    return tuple(rows) if out_many else rows[0]


def _reverse_rows(o: Node, leaves: tuple, tensor: bool, create_graph: bool) -> list:
    """d o / d leaf_j for every j: one ``grad`` per element of o."""
    if not tensor:
        if not o._prev and not any(o is x for x in leaves):
            return [_zeros_like(x, create_graph) for x in leaves]
        gs = grad(o, leaves, create_graph=create_graph, allow_unused=True)
        return [_zeros_like(x, create_graph) if g is None else g for x, g in zip(leaves, gs)]
    import numpy as np

    rows: list[list] = [[] for _ in leaves]
    for k in range(o.data.size):
        if o.requires_grad:
            onehot = np.zeros(o.data.size, dtype=o.dtype)
            onehot[k] = 1.0
            gs = grad(o, leaves, onehot.reshape(o.shape), create_graph, allow_unused=True)
        else:
            gs = (None,) * len(leaves)
        for j, (x, g) in enumerate(zip(leaves, gs)):
            rows[j].append(_zeros_like(x, create_graph) if g is None else g)
    return [_assemble(r, o.shape, x.shape, create_graph) for r, x in zip(rows, leaves)]


def _forward_table(outs: tuple, leaves: tuple, tensor: bool, create_graph: bool) -> list:
    """The Jacobian by columns: one forward-mode pass per input element."""
    if not tensor:
        order = _order(outs)
        table: list[list] = [[] for _ in outs]
        for x in leaves:
            t = _tangents(order, {id(x): Value(1.0) if create_graph else 1.0}, create_graph)
            for i, o in enumerate(outs):
                table[i].append(_value_result(t.get(id(o), 0.0), create_graph))
        return table
    import numpy as np

    tm = _tensor_module()
    cols: list[list[list]] = [[[] for _ in leaves] for _ in outs]
    for j, x in enumerate(leaves):
        for k in range(x.data.size):
            vs = [np.zeros(y.shape, dtype=y.dtype) for y in leaves]
            vs[j].reshape(-1)[k] = 1.0
            for i, jv in enumerate(_tensor_jvp(outs, leaves, vs, create_graph)):
                cols[i][j].append(jv)
    table = []
    for i, o in enumerate(outs):
        row = []
        for j, x in enumerate(leaves):
            c = cols[i][j]  # c[k] = d o / d x.flat[k], of o's shape
            if create_graph:
                jac = tm.stack(c, -1) if c else tm.Tensor(np.zeros((*o.shape, 0)))
                row.append(jac.reshape(o.shape + x.shape))
            else:
                data = np.stack([tm.raw(g) for g in c], -1) if c else np.zeros((*o.shape, 0))
                row.append(_constant(data.reshape(o.shape + x.shape)))
        table.append(row)
    return table


def _assemble(rows: list, out_shape: tuple, in_shape: tuple, create_graph: bool) -> Any:
    """Per-output-element gradients (each of the input's shape) as one Tensor of shape
    out_shape + in_shape."""
    import numpy as np

    tm = _tensor_module()
    if not rows:  # an output with no elements
        return _constant(np.zeros(out_shape + in_shape))
    if create_graph:
        return tm.stack(rows, 0).reshape(out_shape + in_shape)
    return _constant(np.stack([tm.raw(r) for r in rows], 0).reshape(out_shape + in_shape))


def hessian(f: Callable[..., Any], x: Any, create_graph: bool = False) -> Any:
    """The Hessian of a scalar f at x, as ``torch.autograd.functional.hessian``: the Jacobian
    of the gradient, each gradient built with ``create_graph=True`` so it can be
    differentiated again. Shapes: ``x.shape + x.shape`` for one input; ``[i][j]`` of shape
    ``x_i.shape + x_j.shape`` for several."""
    many = isinstance(x, (list, tuple))

    def gradient(*leaves: Node) -> Any:
        out = f(*leaves)
        _scalar_output(out, "hessian")
        tensor = _is_tensor(out)
        if tensor and not out.requires_grad:
            gs: tuple = (None,) * len(leaves)
        else:
            gs = grad(out, leaves, create_graph=True, allow_unused=True)
        full = tuple(_zeros_like(x, True) if g is None else g for x, g in zip(leaves, gs))
        return full if many else full[0]

    return jacobian(gradient, x, create_graph=create_graph)


def hvp(
    f: Callable[..., Any], x: Any, v: Any = None, create_graph: bool = False
) -> tuple[Any, Any]:
    """``(f(x), H v)`` for a scalar f, as ``torch.autograd.functional.hvp``: the gradient of
    ``<grad f, v>``, two reverse passes and never the whole Hessian."""
    leaves, many, tensor = _inputs(x, True)
    vs = _directions(v, leaves, many, tensor, "hvp")
    out = f(*leaves) if many else f(leaves[0])
    _scalar_output(out, "hvp")
    result = [_zeros_like(x, create_graph) for x in leaves]
    if not tensor or out.requires_grad:
        gs = grad(out, leaves, create_graph=True, allow_unused=True)
        terms = [_dot(g, d, tensor) for g, d in zip(gs, vs) if g is not None]
        terms = [t for t in terms if not tensor or t.requires_grad]
        if terms:
            total = sum(terms[1:], terms[0])
            hv = grad(total, leaves, create_graph=create_graph, allow_unused=True)
            result = [r if g is None else g for r, g in zip(result, hv)]
    return _detached((out,), False, create_graph), (tuple(result) if many else result[0])


def _dot(g: Any, d: Any, tensor: bool) -> Any:
    return (g * d).sum() if tensor else g * d


# ---------------------------------------------------------------------- arguments
def _inputs(x: Any, create_graph: bool) -> tuple[tuple[Node, ...], bool, bool]:
    """The leaves f is called with, whether x was a sequence, and whether they are Tensors.

    Numbers and arrays become new leaves; a Value or a Tensor that requires grad is used
    itself under ``create_graph`` (so the result can be differentiated with respect to what
    x was computed from) and copied to a new leaf otherwise.
    """
    many = isinstance(x, (list, tuple))
    items = list(x) if many else [x]
    if not items:
        raise ValueError("the inputs are empty")
    tensor = any(_is_tensor(i) or _is_array(i) for i in items)
    leaves = []
    for i, item in enumerate(items):
        if tensor:
            from .tensor import Tensor

            if isinstance(item, Tensor) and create_graph and item.requires_grad:
                leaves.append(item)
            else:
                leaves.append(Tensor(item, requires_grad=True))
        elif isinstance(item, Value):
            leaves.append(item if create_graph else Value(item.data))
        else:
            leaves.append(Value(as_float(item, f"input {i}")))
    return tuple(leaves), many, tensor


def _directions(v: Any, leaves: tuple, many: bool, tensor: bool, op: str) -> list:
    """The direction vector(s) v, one per input, checked against the inputs' shapes."""
    if v is None:
        if any((x.data.size if tensor else 1) != 1 for x in leaves):
            raise ValueError(f"{op}: v is required unless every input has one element")
        return [_ones_like(x, tensor) for x in leaves]
    vs = list(v) if many else [v]
    if not many and isinstance(v, (list, tuple)) and not tensor:
        raise TypeError(f"{op}: x is one input, so v must be one number, got {describe(v)}")
    if len(vs) != len(leaves):
        raise ValueError(f"{op}: {len(vs)} directions v for {len(leaves)} inputs")
    out = []
    for i, (x, d) in enumerate(zip(leaves, vs)):
        if not tensor:
            out.append(d if isinstance(d, Value) else as_float(d, f"{op}: v[{i}]"))
            continue
        tm = _tensor_module()
        if not isinstance(d, tm.Tensor):
            d = tm.to_array(d, f"{op}: v", x.dtype)
        if d.shape != x.shape:
            raise ValueError(f"{op}: v {i} has shape {d.shape} but the input has {x.shape}")
        out.append(d)
    return out


def _ones_like(x: Node, tensor: bool) -> Any:
    if not tensor:
        return 1.0
    import numpy as np

    return np.ones(x.shape, dtype=x.dtype)


def _outputs(out: Any, tensor: bool, op: str) -> tuple[tuple[Node, ...], bool]:
    """f's result as a tuple of nodes of the inputs' engine, and whether it was a sequence."""
    many = isinstance(out, (list, tuple))
    outs = tuple(out) if many else (out,)
    for i, o in enumerate(outs):
        if tensor and not _is_tensor(o):
            raise TypeError(f"{op}: f must return Tensors for Tensor inputs, got {describe(o)}")
        if not tensor and not isinstance(o, Value):
            if isinstance(o, numbers.Real) and not isinstance(o, bool):
                outs = (*outs[:i], Value(float(o)), *outs[i + 1 :])
                continue
            raise TypeError(f"{op}: f must return Values for number inputs, got {describe(o)}")
    return outs, many


def _scalar_output(out: Any, op: str) -> None:
    if _is_tensor(out):
        if out.data.size != 1:
            raise ValueError(f"{op}: f must return a one-element Tensor, got shape {out.shape}")
    elif not isinstance(out, Value):
        raise TypeError(
            f"{op}: f must return one Value or a one-element Tensor, got {describe(out)}"
        )


def _value_result(t: Any, create_graph: bool) -> Any:
    """A tangent as the caller gets it: a float, or a Value under create_graph."""
    if create_graph:
        return t if isinstance(t, Value) else Value(t)
    return t.data if isinstance(t, Value) else t


def _detached(outs: tuple, many: bool, create_graph: bool) -> Any:
    """f's output without history (floats for Values), or as it is under create_graph."""
    got = list(outs) if create_graph else [o.detach() if _is_tensor(o) else o.data for o in outs]
    return tuple(got) if many else got[0]
