"""Section 1: the scalar engine against micrograd 0.1.0 on micrograd's own demo.

The workload is micrograd's make_moons notebook: ``MLP(2, [16, 16, 1])``, 100 samples,
full-batch SGD with the SVM (hinge) loss plus 1e-4 L2, learning rate 1.0 - 0.9*k/100. Both
engines start from the same weights (micrograd's model after ``random.seed(1337)``, copied
into ours parameter by parameter), so their loss curves must agree to float rounding; the
runner reports the largest difference next to the timings.
"""

from __future__ import annotations

import gc
import random
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from modelwright_autograd.graph import topological_order

from .common import Sizes, log, max_abs_diff, scale_stat, summarize, timed

DEMO_SEED = 1337
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
    return MLP(2, [16, 16, 1])


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


def micrograd_train(model: Any, X: np.ndarray, y: np.ndarray, steps: int) -> dict[str, Any]:
    """The notebook's optimisation loop; returns the loss curve and per-step seconds."""
    losses: list[float] = []
    step_seconds: list[float] = []
    for k in range(steps):
        start = time.perf_counter()
        total_loss = micrograd_loss(model, X, y)
        model.zero_grad()
        total_loss.backward()
        learning_rate = demo_lr(k)
        for p in model.parameters():
            p.data -= learning_rate * p.grad
        step_seconds.append(time.perf_counter() - start)
        losses.append(float(total_loss.data))
    return {"losses": losses, "step_seconds": step_seconds}


# --------------------------------------------------------------------------- our step
def ours_model(weights: list[float], fused: bool) -> Any:
    """``modelwright_autograd.MLP(2, [16, 16, 1])`` with micrograd's starting weights."""
    from modelwright_autograd import MLP

    model = MLP(2, [16, 16, 1], fused=fused)
    params = model.parameters()
    if len(params) != len(weights):
        raise RuntimeError(f"ours has {len(params)} parameters, micrograd {len(weights)}")
    for p, w in zip(params, weights):
        p.data = w
    return model


def ours_loss(model: Any, X: list[list[float]], y: list[float]) -> Any:
    """The same loss as the notebook's, written with our fused n-ary ops."""
    from modelwright_autograd import Value

    scores = [model(x) for x in X]
    losses = [(1 + -yi * si).relu() for yi, si in zip(y, scores)]
    data_loss = Value.sum(losses) * (1.0 / len(losses))
    params = model.parameters()
    reg_loss = 1e-4 * Value.dot(params, params)
    return data_loss + reg_loss


def ours_train(model: Any, X: list[list[float]], y: list[float], steps: int) -> dict[str, Any]:
    losses: list[float] = []
    for k in range(steps):
        loss = ours_loss(model, X, y)
        model.zero_grad()
        loss.backward()
        learning_rate = demo_lr(k)
        for p in model.parameters():
            p.data -= learning_rate * p.grad
        losses.append(loss.data)
    return {"losses": losses}


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


def run(sizes: Sizes) -> dict[str, Any]:
    X, y = demo_data()
    weights = initial_weights()
    X_list = X.tolist()
    y_list = [float(v) for v in y]
    rows: list[dict[str, Any]] = []

    curves: dict[str, list[float]] = {}
    for name, fused in (("ours (fused)", True), ("ours (unfused)", False)):
        samples = []
        for r in range(sizes.repeats):
            model = ours_model(weights, fused)
            log(f"scalar: {name}, {sizes.steps} steps, repeat {r + 1}/{sizes.repeats}")
            seconds, out = timed(lambda m=model: ours_train(m, X_list, y_list, sizes.steps))
            samples.append(seconds)
            curves[name] = out["losses"]
        mem_model = ours_model(weights, fused)
        memory = graph_memory(
            lambda m=mem_model: ours_loss(m, X_list, y_list), len(mem_model.parameters())
        )
        total = summarize(samples)
        rows.append(
            {
                "engine": name,
                "steps": sizes.steps,
                "total_seconds": total,
                "seconds_per_step": scale_stat(total, 1.0 / sizes.steps),
                "step0_loss": curves[name][0],
                **memory,
            }
        )

    samples = []
    mg_out: dict[str, Any] = {}
    for r in range(sizes.micrograd_repeats):
        model = micrograd_model()
        log(
            f"scalar: micrograd, {sizes.micrograd_steps} steps, repeat "
            f"{r + 1}/{sizes.micrograd_repeats} (about 1-3 s a step)"
        )
        seconds, mg_out = timed(lambda m=model: micrograd_train(m, X, y, sizes.micrograd_steps))
        samples.append(seconds)
        gc.collect()  # micrograd's graphs are reference cycles: free them before going on
    curves["micrograd"] = mg_out["losses"]
    mem_model = micrograd_model()
    memory = graph_memory(lambda: micrograd_loss(mem_model, X, y), len(mem_model.parameters()))
    total = summarize(samples)
    mg_row = {
        "engine": "micrograd 0.1.0",
        "steps": sizes.micrograd_steps,
        "total_seconds": total,
        "seconds_per_step": scale_stat(total, 1.0 / sizes.micrograd_steps),
        "step0_loss": curves["micrograd"][0],
        "micrograd_step_seconds": mg_out["step_seconds"],
        **memory,
    }
    rows.append(mg_row)

    mg_per_step = mg_row["seconds_per_step"]["median"]
    for row in rows:
        row["ratio_vs_micrograd_per_step"] = row["seconds_per_step"]["median"] / mg_per_step
        row["max_abs_loss_diff_vs_micrograd"] = max_abs_diff(
            curves[_curve_key(row)], curves["micrograd"]
        )
        row["compared_steps"] = min(row["steps"], sizes.micrograd_steps)
    return {
        "title": "Scalar engine vs micrograd 0.1.0 (make_moons demo)",
        "workload": (
            "micrograd's make_moons demo: MLP(2, [16, 16, 1]), 100 samples, full-batch SGD, "
            "SVM loss + 1e-4 L2, lr = 1.0 - 0.9*k/100, identical starting weights"
        ),
        "demo_step0_loss": DEMO_STEP0_LOSS,
        "loss_tolerance": LOSS_TOLERANCE,
        "loss_curves": curves,
        "rows": rows,
    }


def _curve_key(row: dict[str, Any]) -> str:
    return "micrograd" if row["engine"].startswith("micrograd") else row["engine"]
