"""What both engines share: the iterative topological walk and the grad-recording switches.

A node of either engine (``Value`` or ``Tensor``) exposes ``_prev``, the tuple of nodes it
was computed from. That is all the walk needs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def topological_order(
    *roots: Any, leaves: bool = True, instead: dict[int, Sequence[Any]] | None = None
) -> list[Any]:
    """Return every node the roots depend on, each listed after all of its inputs, each
    once: one walk for all the roots, sharing what they share.

    An explicit stack replaces recursion, so depth is limited by memory, not by Python's
    recursion limit: a chain of a million nodes is fine. Each stack entry is a node and an
    iterator over its inputs: the node is emitted (post-order) once that iterator is
    exhausted, which is exactly when all its inputs have been emitted. ``visited`` makes
    shared nodes appear once however many paths lead to them.

    ``leaves=False`` leaves out the inputs that have no inputs themselves (parameters,
    constants; a root is always listed): ``backward()`` has nothing to do at a leaf but
    receive gradient, and skipping them spares the walk a set lookup for every edge into
    one, a third of a neural net's edges. The tensor backward() walks this; the scalar one
    walks the same order with its own copy (engine._interior_order: see there why).
    ``instead`` gives, by a node's id, the inputs to walk in place of its own (the
    compiler's tracing puts a node made under no_grad() after the operands it no longer
    keeps).

    A node met again while its own inputs are still being listed is its own ancestor: a
    cycle, which only editing an input slot can make (every op builds a new node from
    existing ones). A cycle is a GraphCycleError, not an order in which some node comes
    before one of its inputs. The set of listed nodes that tells it apart from a shared
    node is brought up to date only when a node is met again (``caught_up``).
    """
    order: list[Any] = []
    visited: set[Any] = set()
    listed: set[Any] = set()
    for root in roots:
        if root in visited:  # listed already, as an input of an earlier root
            continue
        visited.add(root)
        stack = [(root, iter(instead.get(id(root), root._prev) if instead else root._prev))]
        while stack:
            node, inputs = stack[-1]
            for parent in inputs:
                if leaves or parent._prev:
                    if parent not in visited:
                        visited.add(parent)
                        prev = instead.get(id(parent), parent._prev) if instead else parent._prev
                        stack.append((parent, iter(prev)))
                        break
                    if parent not in listed and parent not in caught_up(listed, order):
                        raise GraphCycleError(parent)
            else:
                stack.pop()
                order.append(node)
    return order


def caught_up(listed: set[Any], order: list[Any]) -> set[Any]:
    """``listed``, which holds ``order[:len(listed)]`` (a walk's output so far, each node
    once), brought up to all of ``order``: the walks add to it only when they meet a node
    again, so a graph that shares no node pays nothing for telling a shared node from a
    cycle, and one that does pays one set insertion per node in all."""
    if len(listed) < len(order):
        listed.update(order[len(listed) :])
    return listed


class GraphCycleError(RuntimeError):
    """The graph has a cycle: a node is among its own inputs, through an edited input slot
    (``_prev``, or a Value's ``_a``/``_b``). No order runs every node after its inputs."""

    def __init__(self, node: Any) -> None:
        super().__init__(
            f"the graph has a cycle through a {type(node).__name__} (data {_short(node)}): "
            "it is among its own inputs; was an input slot (_prev, _a, _b) edited?"
        )


def _short(node: Any) -> str:
    text = repr(getattr(node, "data", None))
    return text if len(text) <= 40 else text[:37] + "..."


class GradMode:
    """Whether new nodes record their inputs (the switch ``no_grad`` turns off). Both
    engines' node constructors read ``GradMode.enabled`` directly, the cheapest test on
    their hot path; everyone else calls ``is_grad_enabled()``."""

    enabled = True


def is_grad_enabled() -> bool:
    """True when operations record the graph needed for ``backward()``."""
    return GradMode.enabled


@contextmanager
def no_grad() -> Iterator[None]:
    """Run a block without recording the graph, as ``torch.no_grad()`` does.

    Results computed inside have no inputs and no backward rule, so evaluation and
    parameter updates cost no graph memory.
    """
    previous = GradMode.enabled
    GradMode.enabled = False
    try:
        yield
    finally:
        GradMode.enabled = previous


@contextmanager
def enable_grad() -> Iterator[None]:
    """Record the graph inside the block even within ``no_grad()``, as ``torch.enable_grad()``.

    ``backward(create_graph=True)`` runs its walk under it, as torch does, so the gradients
    it builds keep their history wherever it is called.
    """
    previous = GradMode.enabled
    GradMode.enabled = True
    try:
        yield
    finally:
        GradMode.enabled = previous
