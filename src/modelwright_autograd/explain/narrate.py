"""``explain(value)``: run the backward pass, record it as a ``Trace`` and, if asked, write
the page of it. It sits above ``trace.py`` (the record) and ``page.py`` (one view of the
record), so neither of those imports the other's caller."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from ..files import check_writable
from ..graph import topological_order
from ..scalar.engine import Value
from .breaks import broken_run
from .expr import MAX_NODES
from .page import VIEWS, write_page
from .trace import BREAKS, Trace, fmt, name_variables, record


def explain(
    value: Value,
    variables: Mapping[str, Value] | None = None,
    html: str | os.PathLike[str] | None = None,
    view: str = "auto",
    broken: str | None = None,
) -> Trace:
    """Run ``value.backward()`` and record every step of it (see ``Trace``).

    ``variables`` names the leaves whose gradients to report (default: every labelled
    leaf, two leaves labelled ``a`` reported as ``a`` and ``a#2``; see
    ``trace.name_variables``); other leaves are constants. Like ``backward()``, this adds
    into leaf gradients: call ``zero_grad()`` first for a fresh pass over leaves that were
    used before.
    ``html="page.html"`` also writes the interactive page of the pass (see ``page.py``);
    the path is checked before the pass runs, and so is the graph's size: a page of more
    than ``expr.MAX_NODES`` operations (the command line's cap) is a ValueError. ``view``
    chooses the picture the page opens with: "graph" (a box per value), "neurons" (a box
    per neuron of a network) or "auto" (neurons for a network of more than
    ``page.NEURON_VIEW_ABOVE`` nodes); a network's page can switch between the two.
    """
    if not isinstance(value, Value):
        raise TypeError(f"explain needs a Value, got {type(value).__name__}")
    if variables is not None and not isinstance(variables, Mapping):
        raise TypeError(
            "explain's variables must map names to Values (a dict, {'a': a}), got "
            f"{type(variables).__name__}"
        )
    for name, v in (variables or {}).items():
        if not isinstance(v, Value):
            raise TypeError(
                f"explain's variables[{str(name)[:40]!r}] is {type(v).__name__}, not a Value"
            )
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    if broken is not None and broken not in BREAKS:
        raise ValueError(f"broken must be one of {', '.join(BREAKS)} or None, got {broken!r}")
    if html is not None:
        check_writable(html)
    order = topological_order(value)
    if html is not None:
        _check_page_size(order)
    variables = name_variables(order, variables)
    before = {name: v.grad for name, v in variables.items()}
    notes = [
        f"{name} already had grad {fmt(g)} from an earlier backward(); "
        "backward() adds to leaf gradients (zero_grad() starts afresh)"
        for name, g in before.items()
        if g != 0.0
    ]
    value.backward()
    trace = record(value, variables, order, before, tuple(notes))
    if broken is not None:
        trace = replace(trace, broken=broken_run(trace, order, variables, broken))
    if html is not None:
        write_page(trace, html, view)
    return trace


def _check_page_size(order: list[Value]) -> None:
    """Refuse a page of more operations than the command line's expressions may have: a
    100,000-node chain made a 255 MB page in 20 s at 1.2 GB."""
    operations = sum(1 for node in order if node._prev)
    if operations > MAX_NODES:
        raise ValueError(
            f"explain(html=...): the graph has {operations:,} operations; a page shows at "
            f"most {MAX_NODES:,} (as the explain command allows): call explain without "
            "html=, or on a smaller graph"
        )
