"""Train makemore's MLP on the names with your own backward pass: python train.py
(--fused for the fused forms). The loss (of one batch, so it jumps about) falls from about
3.4 to about 2.3 in 2,000 steps."""

import sys

import numpy as np
from backprop import BLOCK, backward, backward_fused, forward, init_params

from modelwright_autograd.lm.corpus import builtin_path

STEPS, BATCH, LR = 2000, 32, 0.1


def dataset(words, stoi):
    """makemore's examples: each character with the BLOCK characters before it."""
    X, Y = [], []
    for word in words:
        context = [0] * BLOCK  # 0 is '.', a name's start and end
        for ch in word + ".":
            X.append(context)
            Y.append(stoi[ch])
            context = [*context[1:], stoi[ch]]
    return np.array(X), np.array(Y)


def main():
    words = builtin_path("names").read_text(encoding="utf-8").split()
    stoi = {ch: i for i, ch in enumerate(".abcdefghijklmnopqrstuvwxyz")}
    X, Y = dataset(words, stoi)
    params = init_params()
    grads = backward_fused if "--fused" in sys.argv else backward
    rng = np.random.default_rng(0)
    for step in range(STEPS):
        batch = rng.integers(0, len(X), BATCH)
        f = forward(params, X[batch], Y[batch])
        d = grads(f)
        for name in params:
            params[name] = params[name] - LR * getattr(d, name)
        if step % 200 == 0 or step == STEPS - 1:
            print(f"step {step:5d}  loss {f.loss:.4f}")


if __name__ == "__main__":
    main()
