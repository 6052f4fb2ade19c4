"""``explain --torch``: the traced graph built again in PyTorch (float64), with the node
torch records for each op (its ``grad_fn``) beside ours, and both passes' gradients.

It reads only the ``Trace`` (nodes in topological order, each with its op and inputs), so
it sits beside the other views of a trace. torch is imported when it is called, never
before: it is an optional dependency (docs/pytorch.md maps every rule to torch's node)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .trace import Node, Trace, fmt


def torch_view(trace: Trace) -> str:
    """The text ``explain --torch`` prints: torch's ``grad_fn`` beside each of our op
    nodes, in the order the backward pass visits them, then the gradients of both."""
    import torch

    nodes = trace.nodes
    built: dict[int, Any] = {}
    for node in nodes:  # inputs before the nodes that use them
        if node.kind == "op":
            result = _replay(torch, node, [built[i] for i in node.inputs])
            if not isinstance(result, torch.Tensor):  # an op of numbers alone, e.g. 2*3
                result = torch.tensor(result, dtype=torch.float64)
            built[node.id] = result
        elif node.kind == "constant":  # a number, as torch code writes one: 2 - a, 2 ** a
            built[node.id] = float(node.data)
        else:
            built[node.id] = torch.tensor(node.data, dtype=torch.float64, requires_grad=True)
    out = built[nodes[-1].id]
    if out.requires_grad:
        out.backward()
    rows = [("node", "op", "torch grad_fn")]
    for node in reversed(nodes):
        if node.kind == "op":
            fn = built[node.id].grad_fn
            rows.append((node.name, node.op, type(fn).__name__ if fn is not None else "-"))
    width = [max(len(row[k]) for row in rows) for k in range(2)]
    lines = [
        f"PyTorch {torch.__version__} builds the same graph in float64; "
        "its grad_fn beside each of our nodes:"
    ]
    lines += [f"{a:<{width[0]}}  {b:<{width[1]}}  {c}" for a, b, c in rows]
    pairs = []
    for node in nodes:
        if node.kind == "variable":
            theirs = built[node.id].grad
            theirs = 0.0 if theirs is None else theirs.item()
            ours = trace.grads.get(node.name, node.grad)
            pairs.append(f"{node.name} {fmt(ours)} (torch {fmt(theirs)})")
            if not _close(ours, theirs):
                pairs[-1] += " DIFFERS"
    if pairs:
        lines.append("gradients: " + ", ".join(pairs))
    return "\n".join(lines)


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _stack(torch: Any, xs: Sequence[Any]) -> Any:
    return torch.stack([torch.as_tensor(x, dtype=torch.float64) for x in xs])


def _dot(torch: Any, xs: Sequence[Any]) -> Any:
    """A fused neuron's inputs are (*weights, *inputs, bias)."""
    n = (len(xs) - 1) // 2
    return torch.dot(_stack(torch, xs[:n]), _stack(torch, xs[n : 2 * n])) + xs[-1]


# Our op name -> the same op on torch tensors.
_OPS: dict[str, Callable[[Any, Sequence[Any]], Any]] = {
    "+": lambda torch, x: x[0] + x[1],
    "-": lambda torch, x: x[0] - x[1],
    "*": lambda torch, x: x[0] * x[1],
    "/": lambda torch, x: x[0] / x[1],
    "neg": lambda torch, x: -x[0],
    "exp": lambda torch, x: x[0].exp(),
    "log": lambda torch, x: x[0].log(),
    "tanh": lambda torch, x: x[0].tanh(),
    "relu": lambda torch, x: x[0].relu(),
    "sigmoid": lambda torch, x: x[0].sigmoid(),
    "sum": lambda torch, x: _stack(torch, x).sum(),
    "dot": _dot,
    "dot_relu": lambda torch, x: _dot(torch, x).relu(),
}


def _replay(torch: Any, node: Node, inputs: list[Any]) -> Any:
    if node.op == "**":  # numbers stay numbers, so a ** 2 and 2 ** a are torch's own forms
        return inputs[0] ** inputs[1]
    if node.op not in _OPS:
        raise ValueError(f"explain --torch: no PyTorch op for {node.op!r}")
    return _OPS[node.op](torch, inputs)
