"""Section 2: graph scale, a deep chain and wide graphs, built and differentiated.

Node counts are every Value object created, leaves and constants included:

* chain: ``x = x * c`` repeated m times with one shared constant ``c = Value(1.000001)``,
  so m + 2 Values (the leaf x, c, and m products) and a graph m + 1 deep; d(out)/dx must
  come out as 1.000001 ** m.
* sum: ``sum_values`` of n leaves: n + 1 Values, one node with n inputs (ours only:
  micrograd has no n-ary sum, its ``sum()`` is a chain of additions).
* tree: a balanced binary tree of ``+`` over n leaves (a power of two): 2n - 1 Values,
  log2(n) deep, so micrograd's recursive walk can handle it too.

Time is wall time without tracemalloc; memory comes from a separate run under tracemalloc:
the bytes the built graph keeps alive per node, and the extra peak during ``backward()``
(the walk's bookkeeping and the new gradient floats) per node.
"""

from __future__ import annotations

import gc
import math
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from .common import Sizes, log, summarize

CHAIN_FACTOR = 1.000001
MICROGRAD = "micrograd 0.1.0"


def _chain(Value: type, mults: int) -> Callable[[], tuple[Any, list[Any]]]:
    def build() -> tuple[Any, list[Any]]:
        x = Value(1.0)
        c = Value(CHAIN_FACTOR)
        out = x
        for _ in range(mults):
            out = out * c
        return out, [x]

    return build


def _sum(Value: type, leaves: int) -> Callable[[], tuple[Any, list[Any]]]:
    from modelwright_autograd import sum_values

    def build() -> tuple[Any, list[Any]]:
        xs = [Value(i * 1e-6) for i in range(leaves)]
        return sum_values(xs), xs

    return build


def _tree(Value: type, leaves: int) -> Callable[[], tuple[Any, list[Any]]]:
    def build() -> tuple[Any, list[Any]]:
        xs = [Value(i * 1e-6) for i in range(leaves)]
        level = xs
        while len(level) > 1:
            level = [level[i] + level[i + 1] for i in range(0, len(level), 2)]
        return level[0], xs

    return build


def _grad_error(kind: str, leaves: list[Any], mults: int) -> float:
    """How far the leaves' gradients are from the exact answer (relative)."""
    if kind.endswith("chain"):
        expected = CHAIN_FACTOR**mults
        return abs(float(leaves[0].grad) - expected) / expected
    return max(abs(float(x.grad) - 1.0) for x in leaves)


def _measure(
    build: Callable[[], tuple[Any, list[Any]]],
    nodes: int,
    repeats: int,
    grad_error: Callable[[list[Any]], float],
) -> dict[str, Any]:
    """Build and backward ``repeats`` times for time (checking the last run's gradients),
    then once more under tracemalloc holding only the root, so that the bytes counted
    are the graph's own."""
    build_s, backward_s = [], []
    error = float("nan")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        root, leaves = build()
        built = time.perf_counter()
        root.backward()
        build_s.append(built - start)
        backward_s.append(time.perf_counter() - built)
        error = grad_error(leaves)
        del root, leaves
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        root = build()[0]
        graph_bytes = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.reset_peak()
        current = tracemalloc.get_traced_memory()[0]
        root.backward()
        backward_peak = tracemalloc.get_traced_memory()[1] - current
        del root
    finally:
        tracemalloc.stop()
    gc.collect()
    return {
        "nodes": nodes,
        "build_seconds": summarize(build_s),
        "backward_seconds": summarize(backward_s),
        "retained_bytes_per_node": graph_bytes / nodes,
        "backward_peak_bytes_per_node": backward_peak / nodes,
        "grad_relative_error": error,
    }


def micrograd_max_chain(Value: type) -> int:
    """The longest chain (number of products) whose backward() micrograd finishes before
    Python's recursion limit, found by bisection from this call depth. Its recursive
    walk takes one stack frame per node, so the answer is below the recursion limit."""

    def works(mults: int) -> bool:
        root, _ = _chain(Value, mults)()
        try:
            root.backward()
        except RecursionError:
            return False
        return True

    lo, hi = 0, sys.getrecursionlimit() + 1
    if works(hi):
        raise RuntimeError(f"micrograd finished a {hi}-product chain: is its walk iterative?")
    while hi - lo > 1:  # invariant: works(lo), not works(hi)
        mid = (lo + hi) // 2
        if works(mid):
            lo = mid
        else:
            hi = mid
    gc.collect()
    return lo


def _ours_or_micrograd(
    kind: str, graph: str, engine: str, build: Callable, nodes: int, mults: int, repeats: int
) -> dict[str, Any]:
    """Measure one graph on one engine and check the gradients it produced."""
    log(f"graph: {engine}, {graph}")
    result = _measure(build, nodes, repeats, lambda leaves: _grad_error(kind, leaves, mults))
    return {"kind": kind, "graph": graph, "engine": engine, **result}


def _micrograd_long_chain(graph: str, mults: int) -> dict[str, Any]:
    """micrograd on the long chain: build it once, show how backward() ends, and find the
    longest chain micrograd does finish."""
    from micrograd.engine import Value

    log(f"graph: micrograd, {graph} (expect RecursionError)")
    gc.collect()
    start = time.perf_counter()
    root, _ = _chain(Value, mults)()
    built = time.perf_counter() - start
    try:
        root.backward()
        outcome = "ok"
    except RecursionError:
        outcome = "RecursionError"
    del root, _
    gc.collect()
    longest = micrograd_max_chain(Value)
    return {
        "kind": "chain",
        "graph": graph,
        "engine": MICROGRAD,
        "nodes": mults + 2,
        "build_seconds": summarize([built]),
        "outcome": outcome,
        "micrograd_max_chain_products": longest,
        "micrograd_max_chain_nodes": longest + 2,
    }


def run(sizes: Sizes) -> dict[str, Any]:
    from micrograd.engine import Value as MValue

    from modelwright_autograd import Value

    engines = (("ours", Value), (MICROGRAD, MValue))
    r = sizes.repeats
    m, s, n, t = (sizes.chain_mults, sizes.small_chain_mults, sizes.wide_leaves, sizes.tree_leaves)
    if t < 2 or t & (t - 1):
        raise ValueError(f"tree leaves must be a power of two, got {t}")
    long_chain = f"chain x*c, {m:,} products"
    short_chain = f"chain x*c, {s:,} products"
    tree = f"tree of + over {t:,} leaves"
    rows = [
        _ours_or_micrograd("chain", long_chain, "ours", _chain(Value, m), m + 2, m, r),
        _micrograd_long_chain(long_chain, m),
    ]
    rows += [
        _ours_or_micrograd("short-chain", short_chain, name, _chain(V, s), s + 2, s, r)
        for name, V in engines
    ]
    rows.append(
        _ours_or_micrograd(
            "sum", f"sum_values of {n:,} leaves", "ours", _sum(Value, n), n + 1, 0, r
        )
    )
    rows += [
        _ours_or_micrograd("tree", tree, name, _tree(V, t), 2 * t - 1, 0, r) for name, V in engines
    ]
    return {
        "title": "Graph scale: build + backward",
        "chain_factor": CHAIN_FACTOR,
        "recursion_limit": sys.getrecursionlimit(),
        "tree_depth": int(math.log2(t)),
        "rows": rows,
    }
