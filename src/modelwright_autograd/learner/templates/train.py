"""Train an MLP of this engine on make_moons and save what it learned.

    python train.py

Plain SGD on minibatches of 10, the mean squared error to labels -1 and +1. Writes
results/loss.csv (the loss over all points after each epoch), results/loss_curve.png and
results/decision_boundary.png.
"""

import csv
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "src"))  # the package, installed or not

import matplotlib

matplotlib.use("Agg")  # files only, no window
import matplotlib.pyplot as plt
from mygrad.engine import Value
from mygrad.nn import MLP
from sklearn.datasets import make_moons

RESULTS = Path(__file__).parent / "results"
EPOCHS = 30
BATCH = 10
LEARNING_RATE = 0.1


def mean_loss(model, X, Y):
    scores = [model(x).data for x in X]
    return sum((s - t) ** 2 for s, t in zip(scores, Y)) / len(Y), scores


def main():
    X, y = make_moons(n_samples=100, noise=0.1, random_state=0)
    X = [[float(a), float(b)] for a, b in X]
    Y = [2.0 * t - 1.0 for t in y]
    random.seed(0)
    model = MLP(2, [8, 8, 1])
    order = list(range(len(X)))
    losses = []
    for epoch in range(1, EPOCHS + 1):
        random.shuffle(order)
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            loss = sum(((model(X[i]) - Y[i]) ** 2 for i in batch), Value(0.0)) * (1 / len(batch))
            model.zero_grad()
            loss.backward()
            for p in model.parameters():
                p.data -= LEARNING_RATE * p.grad
        loss, scores = mean_loss(model, X, Y)
        accuracy = sum((s > 0) == (t > 0) for s, t in zip(scores, Y)) / len(Y)
        losses.append(loss)
        print(f"epoch {epoch}  loss {loss:.4f}  accuracy {accuracy:.0%}")

    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "loss.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["epoch", "loss"])
        writer.writerows(enumerate(losses, 1))

    plt.figure(figsize=(5, 3.5))
    plt.plot(range(1, len(losses) + 1), losses)
    plt.xlabel("epoch")
    plt.ylabel("mean squared error")
    plt.title("loss on make_moons")
    plt.tight_layout()
    plt.savefig(RESULTS / "loss_curve.png", dpi=80)
    plt.close()

    steps = 40
    xs = [-1.5 + 4.0 * i / (steps - 1) for i in range(steps)]
    ys = [-1.0 + 2.5 * j / (steps - 1) for j in range(steps)]
    grid = [[model([a, b]).data for a in xs] for b in ys]
    plt.figure(figsize=(5, 3.5))
    plt.contourf(xs, ys, grid, levels=[-1e9, 0.0, 1e9], colors=["#b6cdf4", "#f4b6b6"])
    plt.scatter([x[0] for x in X], [x[1] for x in X], c=y, cmap="coolwarm", s=12)
    plt.title("decision boundary")
    plt.tight_layout()
    plt.savefig(RESULTS / "decision_boundary.png", dpi=80)
    plt.close()
    print(f"wrote {RESULTS}/loss.csv, loss_curve.png and decision_boundary.png")


if __name__ == "__main__":
    main()
