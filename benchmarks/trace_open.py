"""``python -m benchmarks.trace_open``: what an open compiler trace costs work that is not
traced (another thread's training while ``compiled`` traces fn): micrograd's demo step
(moons-like 100 points, MLP 2-16-16-1, SVM loss, SGD) in CPU time, best of 7, with no
trace open and with one open, alternating, for ``--rounds`` rounds. The step runs in this
thread, which an open trace watches as it watches every thread.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from modelwright_autograd import MLP, svm_loss
from modelwright_autograd.scalar import tracing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_open", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = parser.parse_args(argv)
    rng = random.Random(0)
    model = MLP(2, [16, 16, 1], seed=0)
    rows = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(100)]
    labels = [1.0 if r[0] * r[1] > 0 else -1.0 for r in rows]

    def step() -> None:
        loss = svm_loss([model(r) for r in rows], labels)
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= 0.01 * p.grad

    def best_ms() -> float:
        times = []
        for _ in range(7):
            start = time.process_time()
            step()
            times.append(time.process_time() - start)
        return 1e3 * min(times)

    step()
    ratios = []
    for _ in range(args.rounds):
        closed = best_ms()
        trace = tracing.Trace()
        trace.open()
        try:
            opened = best_ms()
        finally:
            trace.close()
        ratios.append(opened / closed)
        print(f"no trace open {closed:.1f} ms, one open {opened:.1f} ms: {ratios[-1]:.2f}x")
    print(f"median {statistics.median(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
