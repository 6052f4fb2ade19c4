"""The collection policy: pause Python's cyclic garbage collector for a training step.

Neither engine makes reference cycles (a backward rule is a function shared by all nodes
of its op, not a closure over its own node), so reference counting frees every dropped
graph at once and the cyclic collector never finds anything in one. CPython runs it
anyway: every 700 net allocations of container objects trigger a young collection, and a
step allocates thousands of nodes, so it keeps scanning live graphs for nothing (about a
tenth of a scalar demo step; more on larger graphs, since the older generations hold the
whole live graph). Pausing it for the step is therefore safe: no memory waits for it that
would not wait anyway, and cycles made elsewhere (user code) are collected once it is back
on. Pausing only ``backward()`` would not pay: the allocations, and so the collections,
happen in the forward pass.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collection_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block (one training step: forward,
    backward, update) and restore its previous state on the way out, exceptions included.
    Nests: an inner block leaves the collector as the outer one set it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
