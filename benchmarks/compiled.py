"""The compiled path (scalar/compiler.py) against the interpreter and the pure-Python floor.

The workload is section 1's: micrograd's make_moons demo, ``MLP(2, [16, 16, 1])``, 100
samples, SVM loss + 1e-4 L2, full-batch SGD from micrograd's starting weights. The compiled
step is one call of the compiled function and the SGD update; the graph is compiled once,
before the first step, and that time is reported apart, with the number of steps after
which compiling has paid for itself. The three steppers run interleaved, step by step, in
CPU time; the compiled loss curve must equal the interpreter's bit for bit.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from modelwright_autograd import Value, compiled, sum_values

from .common import Sizes, log, summarize
from .scalar import (
    DEMO_SIZES,
    FLOOR,
    _growth_exponent,
    demo_data,
    demo_lr,
    floor_stepper,
    graph_memory,
    initial_weights,
    ours_loss,
    ours_model,
    sgd_stepper,
    sweep_workloads,
)
from .scalar import interleaved_steps as interleaved

INTERPRETER = "interpreter (fused, loss helpers, collector paused)"
COMPILED = "compiled"


def compile_model(model: Any, X: list, y: list) -> tuple[Any, float]:
    """The compiled loss of ``model`` on (X, y), its parameters as the inputs, and the CPU
    seconds compiling took (trace, write, compile)."""
    params = model.parameters()
    gc.collect()
    start = time.process_time()
    cf = compiled(lambda *_: ours_loss(model, X, y), params)
    return cf, time.process_time() - start


def kept_bytes(model: Any, X: list, y: list) -> tuple[Any, int]:
    """The compiled loss again, under tracemalloc (which slows compiling several times
    over, so the time is measured apart), and the bytes it keeps."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cf, _ = compile_model(model, X, y)
        gc.collect()
        return cf, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def compiled_stepper(cf: Any, model: Any) -> Callable[[int], float]:
    """One demo SGD step per call through the compiled function."""
    params = model.parameters()

    def step(k: int) -> float:
        loss, grads = cf([p.data for p in params])
        lr = demo_lr(k)
        for p, g in zip(params, grads):
            p.data -= lr * g
        return loss

    return step


def _bytes_per_node(model: Any, X: list, y: list) -> dict[str, float]:
    """What a compiled graph keeps per node beside what the interpreter's graph keeps
    during a step, on the same graph."""
    cf, held = kept_bytes(model, X, y)
    interp = graph_memory(lambda: ours_loss(model, X, y), len(model.parameters()))
    return {
        "nodes": cf.nodes,
        "compiled_bytes_per_node": held / cf.nodes,
        "interpreter_bytes_per_node": interp["graph_bytes_per_step"] / cf.nodes,
    }


def run(sizes: Sizes) -> dict[str, Any]:
    X, y = demo_data()
    weights = initial_weights()
    X_list = X.tolist()
    y_list = [float(v) for v in y]

    log("compiled: bytes kept per node")
    X_mem, y_mem = X_list[: sizes.memory_samples], y_list[: sizes.memory_samples]
    memory = {  # first, while no other compiled code holds names these could share
        "fused": _bytes_per_node(ours_model(weights, True), X_mem, y_mem),
        "unfused": _bytes_per_node(ours_model(weights, False), X_mem, y_mem),
    }
    interp_model = ours_model(weights, True)
    compiled_model = ours_model(weights, True)
    log("compiled: compiling the demo's graph")
    cf, compile_seconds = compile_model(compiled_model, X_list, y_list)
    steppers = {
        FLOOR: floor_stepper(weights, DEMO_SIZES, X_list, y_list),
        INTERPRETER: sgd_stepper(interp_model, ours_loss, X_list, y_list, True),
        COMPILED: compiled_stepper(cf, compiled_model),
    }
    log(f"compiled: demo, {sizes.steps} interleaved steps of {len(steppers)} steppers")
    gc.collect()
    times, curves = interleaved(steppers, sizes.steps)
    medians = {name: summarize(t)["median"] for name, t in times.items()}
    rows = [
        {
            "engine": name,
            "seconds_per_step": summarize(times[name]),
            "ratio_vs_floor": medians[name] / medians[FLOOR],
            "ratio_vs_interpreter": medians[name] / medians[INTERPRETER],
        }
        for name in steppers
    ]
    saved = medians[INTERPRETER] - medians[COMPILED]
    return {
        "title": "The compiled path vs the interpreter and the pure-Python floor (make_moons demo)",
        "steps": sizes.steps,
        "rows": rows,
        "nodes": cf.nodes,
        "compile_seconds": compile_seconds,
        "break_even_steps": compile_seconds / saved if saved > 0 else None,
        "steps_with_other_loss_than_interpreter": sum(
            a != b for a, b in zip(curves[COMPILED], curves[INTERPRETER])
        ),
        "fallbacks": cf.fallbacks,
        "memory": memory,
        "sweep": sweep(sizes),
        "long": long_graphs(sizes),
    }


def _chain(n: int) -> Callable[..., Any]:
    """h = h * b + a, n nodes."""

    def fn(a: Any, b: Any) -> Any:
        h = a
        for _ in range(n // 2):
            h = h * b + a
        return h

    return fn


def _shared(n: int) -> Callable[..., Any]:
    """About 1.5 n nodes of tanh, relu and values used on several paths."""

    def fn(a: Any, b: Any) -> Any:
        h, outs = a, []
        for i in range(n // 4):
            h = (h * b + 0.001 * i).tanh() + a
            outs.append(h.relu())
        return sum_values(outs)

    return fn


def _tanh_chain(n: int) -> Callable[..., Any]:
    """h = tanh(h * b + a), n nodes."""

    def fn(a: Any, b: Any) -> Any:
        h = a
        for _ in range(n // 3):
            h = (h * b + a).tanh()
        return h

    return fn


LONG_GRAPHS = {
    "chain h = h * b + a": (_chain, 20_000),
    "tanh, relu, shared values": (_shared, 30_000),
    "chain h = tanh(h * b + a)": (_tanh_chain, 300_000),
}


def long_graphs(sizes: Sizes) -> list[dict[str, Any]]:
    """Each long graph compiled once (CPU time), its parts counted, and its result at other
    inputs checked against the interpreter's, bit for bit."""
    rows = []
    for name, (build, n) in LONG_GRAPHS.items():
        fn = build(n // 100 if sizes.smoke else n)
        log(f"compiled: compiling {name}")
        gc.collect()
        start = time.process_time()
        cf = compiled(fn, [Value(0.3), Value(0.9)])
        seconds = time.process_time() - start
        a, b = Value(0.2), Value(-0.7)
        loss = fn(a, b)
        loss.backward()
        rows.append(
            {
                "graph": name,
                "nodes": cf.nodes,
                "parts": cf.source.count("def part"),
                "compile_seconds": seconds,
                "equal_to_interpreter": cf([0.2, -0.7]) == (loss.data, [a.grad, b.grad]),
            }
        )
    return rows


def sweep(sizes: Sizes) -> dict[str, Any]:
    """Compiled against the floor over sample counts and widths (section 1's sweep), and
    the exponent of time against nodes for each."""
    points = []
    for n, width, X, y, weights in sweep_workloads(sizes):
        shape = (2, width, width, 1)
        model = ours_model(weights, True, shape)
        cf, seconds = compile_model(model, X, y)
        steppers = {
            FLOOR: floor_stepper(weights, shape, X, y),
            COMPILED: compiled_stepper(cf, model),
        }
        log(f"compiled: sweep n={n} width={width}, {sizes.sweep_rounds} interleaved steps")
        times, _ = interleaved(steppers, sizes.sweep_rounds)
        ours, floor = summarize(times[COMPILED]), summarize(times[FLOOR])
        points.append(
            {
                "samples": n,
                "width": width,
                "nodes": cf.nodes,
                "compile_seconds": seconds,
                "compiled_seconds": ours,
                "floor_seconds": floor,
                "ratio_vs_floor": ours["median"] / floor["median"],
            }
        )
    return {
        "points": points,
        "exponent_compiled": _growth_exponent(points, "compiled_seconds"),
        "exponent_floor": _growth_exponent(points, "floor_seconds"),
        "max_ratio_vs_floor": max(p["ratio_vs_floor"] for p in points),
        "max_compile_seconds_per_1000_nodes": max(
            p["compile_seconds"] / p["nodes"] * 1000 for p in points
        ),
    }
