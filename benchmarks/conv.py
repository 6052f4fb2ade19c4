"""Convolution on the tensor engine against PyTorch, one thread each.

``python -m benchmarks.conv`` times conv2d forward+backward at the digits CNN's two layer
shapes and at a 28x28, 32-channel layer, and one epoch of the digits CNN (``train
--dataset digits --model cnn``: 45 Adam steps on batches of 32) against the same model in
torch from the same initial weights. NumPy's BLAS and torch both run on one thread, so
the ratio compares the code, not the thread pools. Prints a Markdown table and writes the
figures to benchmarks/results/conv.json (``--json``); ``--smoke`` runs tiny sizes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import log, write_json_atomic
from modelwright_autograd.training.settings import CNN_CHANNELS

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "conv.json"
TARGET = 2.0  # ours / torch: the goal for every row

C1, C2 = CNN_CHANNELS  # the digits CNN's, as train --model cnn builds it
#: (name, input shape, weight shape, padding); the digits batches are 32 images
CONV_SHAPES = [
    ("digits CNN conv1", (32, 1, 8, 8), (C1, 1, 3, 3), 1),
    ("digits CNN conv2", (32, C1, 4, 4), (C2, C1, 3, 3), 1),
    ("28x28, 32 channels", (16, 32, 28, 28), (32, 32, 3, 3), 1),
]
SMOKE_SHAPES = [
    ("digits CNN conv1", (4, 1, 8, 8), (C1, 1, 3, 3), 1),
    ("28x28, 32 channels (smoke: 4x4)", (2, 32, 4, 4), (32, 32, 3, 3), 1),
]


def _time(fn: Callable[[], Any], repeats: int, inner: int) -> list[float]:
    """Seconds per call of ``fn``: ``repeats`` samples, each the mean of ``inner`` calls."""
    fn()  # warm up (imports, caches, allocator)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return samples


def _interleaved(ours: Callable[[], Any], theirs: Callable[[], Any], repeats: int, inner: int):
    """Alternate the two so that a change in machine load hits both alike."""
    a, b = [], []
    for _ in range(repeats):
        a += _time(ours, 1, inner)
        b += _time(theirs, 1, inner)
    return a, b


def conv_pair(x_shape, w_shape, padding):
    """conv2d forward+backward (gradients for input, weight and bias) on both engines."""
    import torch

    from modelwright_autograd import Tensor
    from modelwright_autograd.tensor.functional import conv2d

    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=x_shape), rng.normal(size=w_shape), rng.normal(size=w_shape[0])
    ox, ow, ob = (Tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))

    def ours():
        ox.grad = ow.grad = ob.grad = None
        conv2d(ox, ow, ob, padding=padding).sum().backward()
        return ow.grad

    def theirs():
        tx.grad = tw.grad = tb.grad = None
        torch.nn.functional.conv2d(tx, tw, tb, padding=padding).sum().backward()
        return tw.grad

    np.testing.assert_allclose(ours(), theirs().numpy(), rtol=1e-9, atol=1e-9)
    return ours, theirs


def digits_epoch_pair(batches: int | None):
    """One epoch of the digits CNN (conv, batch norm, ReLU, max pool twice, then linear;
    Adam, batches of 32) on both engines in training mode, from the same weights."""
    import torch

    from modelwright_autograd import Adam, Tensor
    from modelwright_autograd.checkpoint import to_torch
    from modelwright_autograd.data import load_digits_split
    from modelwright_autograd.tensor import functional as F
    from modelwright_autograd.tensor.nn import CNN

    data = load_digits_split(1337)
    X, y = data.X_train, data.y_train
    order = np.random.default_rng(0).permutation(len(y))
    steps = [order[i : i + 32] for i in range(0, len(y), 32)][:batches]
    model = CNN(8, CNN_CHANNELS, 10, seed=0)
    ref = to_torch(model)  # the same layers in torch, with the same weights
    opt = Adam(model.parameters(), lr=1e-3)
    topt = torch.optim.Adam(ref.parameters(), lr=1e-3)
    tX, ty = torch.tensor(X), torch.tensor(y)

    def ours():
        for idx in steps:
            loss = F.cross_entropy(model(Tensor(X[idx])), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss.item()

    def theirs():
        for idx in steps:
            loss = torch.nn.functional.cross_entropy(ref(tX[idx]), ty[idx])
            topt.zero_grad()
            loss.backward()
            topt.step()
        return loss.item()

    first = (ours(), theirs())  # one epoch each from the same weights: the same loss
    np.testing.assert_allclose(first[0], first[1], rtol=1e-9)
    return ours, theirs


def _row(name: str, a: list[float], b: list[float]) -> dict[str, Any]:
    ours, theirs = statistics.median(a), statistics.median(b)
    return {
        "workload": name,
        "ours_s": {"median": ours, "min": min(a), "max": max(a)},
        "torch_s": {"median": theirs, "min": min(b), "max": max(b)},
        "ratio": ours / theirs,
        "target": TARGET,
        "met": ours / theirs <= TARGET,
    }


def _ms(s: dict[str, float]) -> str:
    return f"{s['median'] * 1e3:.3g} ms ({s['min'] * 1e3:.3g}–{s['max'] * 1e3:.3g})"


def markdown(rows: list[dict[str, Any]], repeats: int) -> str:
    lines = [
        f"## conv2d and the digits CNN vs PyTorch (one thread each; median of {repeats}, range)",
        "",
        "| workload | ours | PyTorch | ours / torch | target |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        mark = "met" if r["met"] else "MISS"
        lines.append(
            f"| {r['workload']} | {_ms(r['ours_s'])} | {_ms(r['torch_s'])} | "
            f"{r['ratio']:.2f} | <= {r['target']:g} ({mark}) |"
        )
    return "\n".join(lines)


def run(smoke: bool = False, repeats: int = 5) -> dict[str, Any]:
    """Every row, timed with NumPy's BLAS and torch each limited to one thread."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    shapes = SMOKE_SHAPES if smoke else CONV_SHAPES
    repeats = 1 if smoke else repeats
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for name, xs, ws, pad in shapes:
            log(f"conv2d forward+backward, {name}: input {xs}, weight {ws}")
            ours, theirs = conv_pair(xs, ws, pad)
            inner = 1 if smoke else max(1, int(0.2 / max(_time(ours, 1, 1)[0], 1e-6)))
            rows.append(
                _row(f"conv2d fwd+bwd, {name}", *_interleaved(ours, theirs, repeats, inner))
            )
        log("digits CNN, one epoch")
        ours, theirs = digits_epoch_pair(2 if smoke else None)
        rows.append(
            _row(
                "digits CNN: one epoch (45 steps)" if not smoke else "digits CNN: 2 steps",
                *_interleaved(ours, theirs, repeats, 1),
            )
        )
    return {"threads": 1, "repeats": repeats, "smoke": smoke, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.conv", description=__doc__.split("\n")[0]
    )
    p.add_argument("--smoke", action="store_true", help="tiny sizes that run in seconds (for CI)")
    p.add_argument(
        "--json", type=Path, default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})"
    )
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats (default 5)")
    args = p.parse_args(argv)
    result = run(args.smoke, args.repeats)
    print(markdown(result["rows"], result["repeats"]))
    write_json_atomic(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
