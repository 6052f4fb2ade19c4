"""Train an MLP of this engine on make_moons and save what it learned.

    python train.py

Full-batch SGD on cross_entropy over the two classes. Writes results/loss.csv (the loss
after each epoch), results/loss_curve.png and results/decision_boundary.png.
"""

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "src"))  # the package, installed or not

import matplotlib

matplotlib.use("Agg")  # files only, no window
import matplotlib.pyplot as plt
import numpy as np
from mygrad.engine import Tensor, cross_entropy
from mygrad.nn import MLP
from sklearn.datasets import make_moons

RESULTS = Path(__file__).parent / "results"
EPOCHS = 300
LEARNING_RATE = 0.5


def main():
    X, y = make_moons(n_samples=200, noise=0.1, random_state=0)
    np.random.seed(0)
    model = MLP(2, [16, 16, 2])
    losses = []
    for epoch in range(1, EPOCHS + 1):
        loss = cross_entropy(model(Tensor(X)), y)
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= LEARNING_RATE * p.grad
        losses.append(float(loss.data))
        if epoch % 30 == 0:
            accuracy = (model(Tensor(X)).data.argmax(axis=1) == y).mean()
            print(f"epoch {epoch}  loss {losses[-1]:.4f}  accuracy {accuracy:.0%}")

    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "loss.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["epoch", "loss"])
        writer.writerows(enumerate(losses, 1))

    plt.figure(figsize=(5, 3.5))
    plt.plot(range(1, len(losses) + 1), losses)
    plt.xlabel("epoch")
    plt.ylabel("cross-entropy")
    plt.title("loss on make_moons")
    plt.tight_layout()
    plt.savefig(RESULTS / "loss_curve.png", dpi=80)
    plt.close()

    xs, ys = np.meshgrid(np.linspace(-1.5, 2.5, 80), np.linspace(-1.0, 1.5, 80))
    grid = np.column_stack([xs.ravel(), ys.ravel()])
    scores = model(Tensor(grid)).data
    classes = scores.argmax(axis=1).reshape(xs.shape)
    plt.figure(figsize=(5, 3.5))
    plt.contourf(xs, ys, classes, levels=[-0.5, 0.5, 1.5], colors=["#b6cdf4", "#f4b6b6"])
    plt.scatter(X[:, 0], X[:, 1], c=y, cmap="coolwarm", s=12)
    plt.title("decision boundary")
    plt.tight_layout()
    plt.savefig(RESULTS / "decision_boundary.png", dpi=80)
    plt.close()
    print(f"wrote {RESULTS}/loss.csv, loss_curve.png and decision_boundary.png")


if __name__ == "__main__":
    main()
