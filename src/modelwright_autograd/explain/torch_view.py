"""``explain --torch``: the traced graph built again in PyTorch (float64), with the node
torch records for each op (its ``grad_fn``) beside ours, and both passes' gradients.

It reads only the ``Trace`` (nodes in topological order, each with its op and inputs), so
it sits beside the other views of a trace. torch is imported when it is called, never
before: it is an optional dependency (docs/pytorch.md maps every rule to torch's node)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .trace import Node, Trace, _fmt


def torch_view(trace: Trace) -> str:
    """The text ``explain --torch`` prints: torch's ``grad_fn`` beside each of our op
    nodes, in the order the backward pass visits them, then the gradients of both."""
    import torch

    nodes = trace.nodes
    built: dict[int, Any] = {}
    for node in nodes:  # inputs before the nodes that use them
        if node.kind == "op":
            built[node.id] = _replay(torch, node, [built[i] for i in node.inputs], nodes)
        else:
            built[node.id] = torch.tensor(
                node.data, dtype=torch.float64, requires_grad=node.kind == "variable"
            )
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
            pairs.append(f"{node.name} {_fmt(ours)} (torch {_fmt(theirs)})")
            if not _close(ours, theirs):
                pairs[-1] += " DIFFERS"
    if pairs:
        lines.append("gradients: " + ", ".join(pairs))
    return "\n".join(lines)


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _dot(torch: Any, xs: Sequence[Any]) -> Any:
    """A fused neuron's inputs are (*weights, *inputs, bias)."""
    n = (len(xs) - 1) // 2
    return torch.dot(torch.stack(xs[:n]), torch.stack(xs[n : 2 * n])) + xs[-1]


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
    "sum": lambda torch, x: torch.stack(list(x)).sum(),
    "dot": _dot,
    "dot_relu": lambda torch, x: _dot(torch, x).relu(),
}


def _replay(torch: Any, node: Node, inputs: list[Any], nodes: Sequence[Node]) -> Any:
    if node.op == "**":
        base, exponent = inputs
        if nodes[node.inputs[1]].kind == "constant":  # a ** 2: torch's pow with a number
            return base ** float(nodes[node.inputs[1]].data)
        return base**exponent
    if node.op not in _OPS:
        raise ValueError(f"explain --torch: no PyTorch op for {node.op!r}")
    return _OPS[node.op](torch, inputs)
