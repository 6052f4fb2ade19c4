"""``python -m benchmarks.ab OLD NEW``: the first-order fast path of two checkouts, interleaved.

OLD and NEW are repository roots (e.g. a ``git worktree add /tmp/old <commit>``). Each round
runs one fresh process per checkout, alternating, with one BLAS thread; a process times a
scalar demo step (moons 100, MLP 2-16-16-1, SVM + 1e-4 L2, SGD) and a digits epoch (tensor
MLP 64-128-64-10, batches of 32, Adam) in CPU time, best of 5. The workload uses only the
public API both sides share, so a change to the rule layer can be checked for speed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKLOAD = """
import random, time
import numpy as np
from sklearn.datasets import load_digits, make_moons
import modelwright_autograd.tensor.functional as F
from modelwright_autograd import MLP, SGD, Adam, Tensor, Value, svm_loss, tensor_nn

X, y = make_moons(n_samples=100, noise=0.1, random_state=1337)
rows, labels = [list(map(float, x)) for x in X], [2.0 * t - 1.0 for t in y]
random.seed(1337)
model = MLP(2, [16, 16, 1])
params = model.parameters()
opt = SGD(params, lr=0.5)

def scalar_step():
    scores = [model(r) for r in rows]
    loss = svm_loss(scores, labels) + 1e-4 * sum((p * p for p in params), Value(0.0))
    opt.zero_grad(); loss.backward(); opt.step()

d = load_digits()
Xd, yd = (d.data - d.data.mean(0)) / (d.data.std(0) + 1e-8), d.target
net = tensor_nn.MLP(64, [128, 64, 10], seed=0)
adam = Adam(net.parameters(), lr=1e-3)

def digits_epoch():
    for i in range(0, 1437, 32):
        loss = F.cross_entropy(net(Tensor(Xd[i : i + 32])), yd[i : i + 32])
        adam.zero_grad(); loss.backward(); adam.step()

def best_ms(f):
    times = []
    for _ in range(5):
        t = time.process_time(); f(); times.append(time.process_time() - t)
    return 1e3 * min(times)

scalar_step(); digits_epoch()
print(best_ms(scalar_step), best_ms(digits_epoch))
"""


def run_once(root: Path) -> tuple[float, float]:
    """One fresh process importing ``root/src``: (scalar step ms, digits epoch ms)."""
    env = dict(os.environ, PYTHONPATH=str(root / "src"), OPENBLAS_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", WORKLOAD], env=env, capture_output=True, text=True, check=True
    )
    scalar, digits = out.stdout.split()
    return float(scalar), float(digits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__)
    parser.add_argument("old", type=Path, help="repository root of the baseline")
    parser.add_argument("new", type=Path, help="repository root of the change")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    args = parser.parse_args(argv)
    roots = (args.old, args.new)
    results: tuple[list[tuple[float, float]], ...] = ([], [])
    for _ in range(args.rounds):
        for root, rows in zip(roots, results):
            rows.append(run_once(root))
    print("| checkout | scalar demo step (ms) | digits epoch (ms) |\n|---|---|---|")
    medians = []
    for name, root, rows in zip(("old", "new"), roots, results):
        columns = list(zip(*rows))
        medians.append([statistics.median(c) for c in columns])
        cells = [f"{statistics.median(c):.1f} ({min(c):.1f}-{max(c):.1f})" for c in columns]
        print(f"| {name}: {root} | {cells[0]} | {cells[1]} |")
    (old_s, old_d), (new_s, new_d) = medians
    print(f"new/old medians: scalar {new_s / old_s:.2f}, digits {new_d / old_d:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
