"""Section 1: the scalar engine against micrograd 0.1.0 on micrograd's own demo.

The workload is micrograd's make_moons notebook: ``MLP(2, [16, 16, 1])``, 100 samples,
full-batch SGD with the SVM (hinge) loss plus 1e-4 L2, learning rate 1.0 - 0.9*k/100. Both
engines start from the same weights (micrograd's model after ``random.seed(1337)``, copied
into ours parameter by parameter), so their loss curves must agree to float rounding; the
runner reports the largest difference next to the timings.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import random
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from modelwright_autograd.graph import topological_order

from .common import Sizes, log, max_abs_diff, summarize
from .scalar_floor import FloorMLP

DEMO_SEED = 1337
DEMO_SIZES = (2, 16, 16, 1)
DEMO_STEP0_LOSS = 0.8958441028683222  # printed by micrograd's demo notebook before training
LOSS_TOLERANCE = 1e-9
_LR_HORIZON = 100  # the demo's schedule lr = 1.0 - 0.9*k/100, whatever the number of steps


def demo_data() -> tuple[np.ndarray, np.ndarray]:
    """The demo's data and seeding: ``np.random.seed(1337); make_moons(100, noise=0.1)``,
    labels mapped to -1/+1. Also seeds ``random`` as the notebook does."""
    from sklearn.datasets import make_moons

    np.random.seed(DEMO_SEED)
    random.seed(DEMO_SEED)
    X, y = make_moons(n_samples=100, noise=0.1)
    return X, y * 2 - 1


def micrograd_model() -> Any:
    """micrograd's demo model, built after ``random.seed(1337)`` as in the notebook."""
    from micrograd.nn import MLP

    random.seed(DEMO_SEED)
    return MLP(DEMO_SIZES[0], list(DEMO_SIZES[1:]))


def initial_weights() -> list[float]:
    """The demo's starting parameters, in ``model.parameters()`` order."""
    return [float(p.data) for p in micrograd_model().parameters()]


def demo_lr(k: int) -> float:
    """The demo's learning rate at step k: 1.0 falling to 0.1 over 100 steps."""
    return 1.0 - 0.9 * k / _LR_HORIZON


# --------------------------------------------------------------------- micrograd's step
def micrograd_loss(model: Any, X: np.ndarray, y: np.ndarray) -> Any:
    """The notebook's ``loss()`` with the full batch, line for line."""
    from micrograd.engine import Value

    inputs = [list(map(Value, xrow)) for xrow in X]
    scores = list(map(model, inputs))
    losses = [(1 + -yi * scorei).relu() for yi, scorei in zip(y, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    alpha = 1e-4
    reg_loss = alpha * sum(p * p for p in model.parameters())
    return data_loss + reg_loss


# --------------------------------------------------------------------------- our step
def ours_model(weights: list[float], fused: bool, sizes: tuple[int, ...] = DEMO_SIZES) -> Any:
    """``modelwright_autograd.MLP`` with the given starting weights (micrograd's for the demo)."""
    from modelwright_autograd import MLP

    model = MLP(sizes[0], list(sizes[1:]), fused=fused)
    params = model.parameters()
    if len(params) != len(weights):
        raise RuntimeError(f"ours has {len(params)} parameters, given {len(weights)}")
    for p, w in zip(params, weights):
        p.data = w
    return model


def ours_loss(model: Any, X: list[list[float]], y: list[float]) -> Any:
    """The same loss as the notebook's, written with our fused n-ary ops."""
    from modelwright_autograd import Value, sum_values

    scores = [model(x) for x in X]
    losses = [(1 + -yi * si).relu() for yi, si in zip(y, scores)]
    data_loss = sum_values(losses) * (1.0 / len(losses))
    params = model.parameters()
    reg_loss = 1e-4 * Value.dot(params, params)
    return data_loss + reg_loss


def ours_loss_micrograd_style(model: Any, X: list[list[float]], y: list[float]) -> Any:
    """The notebook's loss as a micrograd user would write it for our engine: builtin
    ``sum`` (a chain of additions) instead of the fused helpers."""
    scores = [model(x) for x in X]
    losses = [(1 + -yi * si).relu() for yi, si in zip(y, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = 1e-4 * sum(p * p for p in model.parameters())
    return data_loss + reg_loss


def sgd_stepper(
    model: Any, loss_fn: Callable[..., Any], X: Any, y: Any, paused: bool
) -> Callable[[int], float]:
    """One demo SGD step per call (step k), for either engine (ours or micrograd: both have
    ``parameters()``, ``zero_grad()`` and ``backward()``); with ``paused`` the step runs
    inside ``collection_paused()``, as the training loop runs its steps."""
    from modelwright_autograd import collection_paused

    params = model.parameters()

    def step(k: int) -> float:
        with collection_paused() if paused else contextlib.nullcontext():
            loss = loss_fn(model, X, y)
            model.zero_grad()
            loss.backward()
            lr = demo_lr(k)
            for p in params:
                p.data -= lr * p.grad
            value = float(loss.data)
            del loss  # drop the graph before the collector is back on (see collector.py)
        return value

    return step


def floor_stepper(
    weights: list[float],
    sizes: tuple[int, ...],
    X: list,
    y: list,
    passing: list[int] | None = None,
):
    """One step of the hand-written pure-Python floor per call (see scalar_floor.py); with
    ``passing``, each step appends how many samples passed a gradient back (the rest are
    beyond the hinge: every gradient in their part of the graph is 0)."""
    net = FloorMLP(list(sizes), weights)

    def step(k: int) -> float:
        loss, gW, gB = net.svm_loss_and_grads(X, y)
        net.sgd(gW, gB, demo_lr(k))
        if passing is not None:
            passing.append(net.passing)
        return loss

    return step


def interleaved_steps(
    steppers: dict[str, Callable[[int], float]], steps: int, collect: bool = False
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run step k of every stepper before step k + 1 of any, timing each in CPU time
    (``process_time``: other processes on the machine are not billed, and whatever drifts
    drifts for all alike). With ``collect``, a full collection (untimed) before each step
    keeps one engine's cyclic garbage from being billed to the next. Returns (seconds per
    step, loss curve) for each name."""
    times: dict[str, list[float]] = {name: [] for name in steppers}
    curves: dict[str, list[float]] = {name: [] for name in steppers}
    for k in range(steps):
        for name, step in steppers.items():
            if collect:
                gc.collect()
            start = time.process_time()
            loss = step(k)
            times[name].append(time.process_time() - start)
            curves[name].append(loss)
    return times, curves


def graph_memory(build: Callable[[], Any], n_params: int) -> dict[str, Any]:
    """Nodes in one step's loss graph and the bytes it keeps alive (tracemalloc: memory
    held while the loss is referenced, minus memory before the forward pass)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        loss = build()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    nodes = len(topological_order(loss))  # micrograd's Values too: it only reads _prev
    created = nodes - n_params  # the parameters exist before the step
    del loss
    gc.collect()
    return {
        "graph_nodes_per_step": nodes,
        "values_created_per_step": created,
        "graph_bytes_per_step": retained,
        "bytes_per_created_value": retained / created,
    }


# The demo's variants, timed step by step against each other: (fused, loss, paused collector)
VARIANTS = {
    "ours (fused, loss helpers, collector paused)": (True, ours_loss, True),
    "ours (fused, loss helpers, collector on)": (True, ours_loss, False),
    "ours (fused, micrograd-style loop)": (True, ours_loss_micrograd_style, False),
    "ours (unfused, collector on)": (False, ours_loss, False),
    "ours (unfused, collector paused)": (False, ours_loss, True),
}
FLOOR = "pure-Python floor"
MICROGRAD = "micrograd 0.1.0"
MICROGRAD_PAUSED = "micrograd 0.1.0 (collector paused)"


def _find_row(rows: list[dict[str, Any]], engine: str) -> dict[str, Any]:
    return next(row for row in rows if row["engine"] == engine)


def run(sizes: Sizes) -> dict[str, Any]:
    X, y = demo_data()
    weights = initial_weights()
    X_list = X.tolist()
    y_list = [float(v) for v in y]

    passing: list[int] = []
    steppers = {FLOOR: floor_stepper(weights, DEMO_SIZES, X_list, y_list, passing)}
    models = {}
    for name, (fused, loss_fn, paused) in VARIANTS.items():
        models[name] = ours_model(weights, fused)
        steppers[name] = sgd_stepper(models[name], loss_fn, X_list, y_list, paused)
    log(f"scalar: demo, {sizes.steps} interleaved steps of {len(steppers)} variants")
    gc.collect()
    times, curves = interleaved_steps(steppers, sizes.steps)

    rows: list[dict[str, Any]] = []
    for name in steppers:
        row: dict[str, Any] = {
            "engine": name,
            "steps": sizes.steps,
            "seconds_per_step": summarize(times[name]),
            "step0_loss": curves[name][0],
        }
        if name in VARIANTS:
            fused, loss_fn, _ = VARIANTS[name]
            mem_model = ours_model(weights, fused)
            row.update(
                graph_memory(
                    lambda m=mem_model, f=loss_fn: f(m, X_list, y_list),
                    len(mem_model.parameters()),
                )
            )
        rows.append(row)

    log(
        f"scalar: micrograd, {sizes.micrograd_steps} interleaved steps with the collector on "
        "and paused (about 1 s a step on)"
    )
    mg_steppers = {
        name: sgd_stepper(micrograd_model(), micrograd_loss, X, y, paused)
        for name, paused in ((MICROGRAD, False), (MICROGRAD_PAUSED, True))
    }
    mg_times, mg_curves = interleaved_steps(mg_steppers, sizes.micrograd_steps, collect=True)
    gc.collect()  # micrograd's graphs are reference cycles: free them before going on
    curves.update(mg_curves)
    mem_model = micrograd_model()
    memory = graph_memory(lambda: micrograd_loss(mem_model, X, y), len(mem_model.parameters()))
    for name in mg_steppers:
        rows.append(
            {
                "engine": name,
                "steps": sizes.micrograd_steps,
                "seconds_per_step": summarize(mg_times[name]),
                "step0_loss": curves[name][0],
                **memory,
            }
        )

    floor_per_step = rows[0]["seconds_per_step"]["median"]
    mg_per_step = _find_row(rows, MICROGRAD)["seconds_per_step"]["median"]
    for row in rows:
        per_step = row["seconds_per_step"]["median"]
        row["ratio_vs_floor"] = per_step / floor_per_step
        row["ratio_vs_micrograd"] = per_step / mg_per_step
        row["max_abs_loss_diff_vs_micrograd"] = max_abs_diff(
            curves[row["engine"]], curves[MICROGRAD]
        )
        row["compared_steps"] = min(row["steps"], sizes.micrograd_steps)
    return {
        "title": "Scalar engine vs its pure-Python floor and micrograd 0.1.0 (make_moons demo)",
        "workload": (
            "micrograd's make_moons demo: MLP(2, [16, 16, 1]), 100 samples, full-batch SGD, "
            "SVM loss + 1e-4 L2, lr = 1.0 - 0.9*k/100, identical starting weights"
        ),
        "clock": "CPU time (time.process_time) per step; our variants and the floor "
        "interleaved step by step, then micrograd's two variants interleaved with a full "
        "collection (untimed) before each step",
        "demo_step0_loss": DEMO_STEP0_LOSS,
        "loss_tolerance": LOSS_TOLERANCE,
        "loss_curves": curves,
        "samples": len(y_list),
        "mean_samples_passing_gradient": sum(passing) / len(passing),
        "rows": rows,
        "sweep": sweep(sizes),
    }


# ------------------------------------------------------------------------- the sweep
def sweep(sizes: Sizes) -> dict[str, Any]:
    """The fast path (fused, loss helpers, collector paused) against the floor over sample
    counts and widths (MLP 2-w-w-1 on the first n of 400 noisy moons), and how time grows
    with the graph: the exponent b of a least-squares fit time = a * nodes**b."""
    points = []
    for n, width, X, y, weights in sweep_workloads(sizes):
        shape = (2, width, width, 1)
        model = ours_model(weights, True, shape)
        steppers = {
            FLOOR: floor_stepper(weights, shape, X, y),
            "ours": sgd_stepper(model, ours_loss, X, y, True),
        }
        log(f"scalar: sweep n={n} width={width}, {sizes.sweep_rounds} interleaved steps")
        times, curves = interleaved_steps(steppers, sizes.sweep_rounds)
        nodes = len(topological_order(ours_loss(model, X, y)))
        ours, floor = summarize(times["ours"]), summarize(times[FLOOR])
        points.append(
            {
                "samples": n,
                "width": width,
                "nodes": nodes,
                "ours_seconds": ours,
                "floor_seconds": floor,
                "ratio_vs_floor": ours["median"] / floor["median"],
                "max_abs_loss_diff": max_abs_diff(curves["ours"], curves[FLOOR]),
            }
        )
    fit = {
        name: _growth_exponent(points, key)
        for name, key in (("ours", "ours_seconds"), ("floor", "floor_seconds"))
    }
    return {
        "points": points,
        "exponent_ours": fit["ours"],
        "exponent_floor": fit["floor"],
        "max_ratio_vs_floor": max(p["ratio_vs_floor"] for p in points),
    }


def sweep_workloads(
    sizes: Sizes,
) -> Iterator[tuple[int, int, list[list[float]], list[float], list[float]]]:
    """The sweep's points: (samples n, width, X, y, starting weights) for MLP 2-w-w-1 on
    the first n of the noisy moons, weights drawn from one seeded generator in order."""
    from sklearn.datasets import make_moons

    X_all, y_all = make_moons(n_samples=max(sizes.sweep_samples), noise=0.1, random_state=0)
    rng = random.Random(DEMO_SEED)
    for n in sizes.sweep_samples:
        X = X_all[:n].tolist()
        y = [float(v) * 2.0 - 1.0 for v in y_all[:n]]
        for width in sizes.sweep_widths:
            shape = (2, width, width, 1)
            n_params = sum((a + 1) * b for a, b in itertools.pairwise(shape))
            yield n, width, X, y, [rng.uniform(-1.0, 1.0) for _ in range(n_params)]


def _growth_exponent(points: list[dict[str, Any]], key: str) -> float:
    """The exponent b of time = a_width * nodes**b, one fit over all points with a factor
    a_width per width (least squares on the logs). Within a width the nodes are the same
    neurons, so their count is proportional to the arithmetic; across widths a fused
    neuron is one node whatever its width, and a single a would mix the two."""
    widths = sorted({p["width"] for p in points})
    design = [[math.log(p["nodes"])] + [float(p["width"] == w) for w in widths] for p in points]
    times = [math.log(p[key]["median"]) for p in points]
    return float(np.linalg.lstsq(np.array(design), np.array(times), rcond=None)[0][0])
