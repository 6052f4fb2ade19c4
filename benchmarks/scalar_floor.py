"""The pure-Python floor for the scalar engine: micrograd's demo model written out by hand.

The same MLP (ReLU hidden layers, linear output), the same SVM loss with 1e-4 L2 and the
same arithmetic order as the engine, but on plain floats in nested lists, with the
derivatives worked out on paper instead of recorded in a graph, so "engine time / floor
time" measures what the graph costs. It does every multiplication of the unfused rules,
zero gradients included (the engine skips the backward of an inactive ReLU neuron, where
all of them are exactly 0). tests/test_benchmarks_floor.py checks that its gradients equal
the engine's.

Weights are ``weights[layer][neuron][input]`` and ``biases[layer][neuron]``; ``flat`` turns
them into the order of ``MLP.parameters()`` (layer by layer, neuron by neuron, weights then
bias).
"""

from __future__ import annotations

import itertools

Weights = list[list[list[float]]]
Biases = list[list[float]]

L2 = 1e-4


class FloorMLP:
    """An MLP of plain floats with a hand-written forward and backward (no graph)."""

    def __init__(self, sizes: list[int], params: list[float]) -> None:
        """``sizes`` as ``[nin, *nouts]``; ``params`` in ``MLP.parameters()`` order."""
        self.passing = 0
        self.weights: Weights = []
        self.biases: Biases = []
        it = iter(params)
        for nin, nout in itertools.pairwise(sizes):
            rows, bs = [], []
            for _ in range(nout):
                rows.append([next(it) for _ in range(nin)])
                bs.append(next(it))
            self.weights.append(rows)
            self.biases.append(bs)
        if next(it, None) is not None:
            raise ValueError("more parameters than the layer sizes hold")

    def flat(self, per_layer: tuple[Weights, Biases] | None = None) -> list[float]:
        """Weights and biases (or gradients shaped like them) in ``parameters()`` order."""
        weights, biases = per_layer or (self.weights, self.biases)
        return [v for W, B in zip(weights, biases) for row, b in zip(W, B) for v in (*row, b)]

    def svm_loss_and_grads(
        self, X: list[list[float]], y: list[float]
    ) -> tuple[float, Weights, Biases]:
        """mean_i relu(1 - y_i * score_i) + L2 * sum(p**2), and its gradient.

        Per sample: the forward keeps every layer's output; the backward walks the layers
        in reverse, d(out) flowing to a neuron's weights (times the input), its bias (times
        1) and its inputs (times the weight); a ReLU whose output is 0 passes 0. Like the
        unfused rules, it does every multiplication even when the gradient is 0.
        """
        n = len(X)
        last = len(self.weights) - 1
        gW = [[[0.0] * len(row) for row in W] for W in self.weights]
        gB = [[0.0] * len(B) for B in self.biases]
        data_loss = 0.0
        self.passing = 0  # samples whose hinge passes a gradient back (the rest pass 0)
        for x, yi in zip(X, y):
            acts = [x]
            h = x
            for layer, (W, B) in enumerate(zip(self.weights, self.biases)):
                out = []
                for row, b in zip(W, B):
                    t = b
                    for w, xi in zip(row, h):
                        t += w * xi
                    if layer != last and t < 0.0:
                        t = 0.0
                    out.append(t)
                acts.append(out)
                h = out
            margin = 1.0 + -yi * h[0]
            active = not margin <= 0.0  # relu passes its gradient where its output > 0
            if active:
                data_loss += margin
                self.passing += 1
            d = [-yi * (1.0 / n) if active else 0.0]  # d loss / d score
            for layer in range(last, -1, -1):
                inputs, outputs = acts[layer], acts[layer + 1]
                W, gWl, gBl = self.weights[layer], gW[layer], gB[layer]
                d_in = [0.0] * len(inputs)
                for j, dj in enumerate(d):
                    if layer != last and outputs[j] <= 0.0:
                        dj = 0.0  # ReLU inactive
                    gBl[j] += dj
                    row, grow = W[j], gWl[j]
                    for i, xi in enumerate(inputs):
                        grow[i] += xi * dj
                        d_in[i] += row[i] * dj
                d = d_in
        squares = 0.0
        for W, B in zip(self.weights, self.biases):
            for row, b in zip(W, B):
                for w in row:
                    squares += w * w
                squares += b * b
        for W, B, gWl, gBl in zip(self.weights, self.biases, gW, gB):
            for row, b, grow, j in zip(W, B, gWl, range(len(B))):
                for i, w in enumerate(row):
                    grow[i] += 2.0 * L2 * w
                gBl[j] += 2.0 * L2 * b
        return data_loss * (1.0 / n) + L2 * squares, gW, gB

    def sgd(self, gW: Weights, gB: Biases, lr: float) -> None:
        """p -= lr * grad for every weight and bias."""
        for W, B, gWl, gBl in zip(self.weights, self.biases, gW, gB):
            for row, grow in zip(W, gWl):
                for i, g in enumerate(grow):
                    row[i] -= lr * g
            for j, g in enumerate(gBl):
                B[j] -= lr * g
