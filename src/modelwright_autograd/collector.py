"""The collection policy: pause Python's cyclic garbage collector for a training step.

Neither engine makes reference cycles (a backward rule is a function shared by all nodes
of its op, not a closure over its own node), so reference counting frees every dropped
graph at once and the cyclic collector never finds anything in one. CPython runs it
anyway: every 700 net allocations of container objects trigger a young collection, and a
step allocates thousands of nodes, so it keeps scanning live graphs for nothing, and the
more so the larger the graph, since the older generations hold all of it (docs/performance.md
has the measured share, from ``python -m benchmarks``). Pausing it
for the step is therefore safe: no memory waits for it that would not wait anyway, and
cycles made elsewhere (user code) are collected once it is back on. Two things decide
whether it pays:

* the block must cover the forward pass, where the allocations (and so the collections)
  happen; pausing only ``backward()`` saves nothing;
* the graph must be dropped inside the block (``del loss`` at its end): the collector
  counts allocations while paused, and the first allocation after it is back on starts a
  young collection over everything still alive from the step. If the graph is gone by
  then, that collection is cheap; if not, it scans the whole graph once, which costs about
  what the pause saved.
"""

from __future__ import annotations

import gc
from types import TracebackType


class collection_paused:  # lower case: it is used as a function, ``with collection_paused():``
    """Disable the cyclic garbage collector inside the block (one training step: forward,
    backward, update, then ``del`` the loss) and restore its previous state on the way
    out, exceptions included. Nests: an inner block leaves the collector as the outer one
    set it. A class rather than a ``@contextmanager`` generator, which costs more than
    twice as much to enter and leave (once a training step)."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.was_enabled:
            gc.enable()
