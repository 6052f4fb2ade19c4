"""The datasets the ``train`` command learns: four 2-D two-class toys and scikit-learn's digits.

Every generator takes a seeded ``np.random.RandomState`` rather than touching NumPy's global
state. ``RandomState(seed)`` yields the same stream as ``np.random.seed(seed)``, so
``make_2d("moons", 100, 0.1, RandomState(1337))`` is exactly the data of micrograd's demo.
Labels are class indices (0/1 for the toys, 0-9 for digits); the training code maps them
to whatever a loss wants (-1/+1 for the hinge loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The 2-D datasets, learnable by the scalar engine and drawn as decision boundaries.
DATASETS_2D = ("moons", "circles", "xor", "spiral")
#: Every dataset ``train`` accepts; digits needs the tensor engine.
DATASETS = (*DATASETS_2D, "digits")

#: Fraction of digits held out for testing (stratified, so each class keeps its share).
DIGITS_TEST_FRACTION = 0.2


@dataclass(frozen=True)
class Dataset:
    """Inputs and class labels for training and, when there is a held-out split, testing.

    ``test_images`` keeps the raw 8x8 pixels of the test digits (before standardising), for
    the picture of misclassified digits.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    num_classes: int
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    test_images: np.ndarray | None = None

    @property
    def num_features(self) -> int:
        return int(self.X_train.shape[1])


def _two_class_sizes(n_samples: int) -> tuple[int, int]:
    """Split n as evenly as possible between two classes (the larger half first)."""
    return n_samples - n_samples // 2, n_samples // 2


def _xor(n_samples: int, noise: float, rng: np.random.RandomState) -> tuple[np.ndarray, ...]:
    """Points uniform in the square [-1, 1]^2, class 1 where x*y > 0 (the 1st and 3rd
    quadrants), then moved by Gaussian noise: no straight line separates the classes.
    Half the points are drawn in each class's two quadrants, so the classes are balanced."""
    parts_X, parts_y = [], []
    for label, count in enumerate(_two_class_sizes(n_samples)):
        corner = rng.uniform(0.0, 1.0, size=(count, 2))  # in the first quadrant
        sign = rng.choice([-1.0, 1.0], size=count)
        # class 1: (s*a, s*b), quadrant 1 or 3; class 0: (s*a, -s*b), quadrant 2 or 4
        corner[:, 0] *= sign
        corner[:, 1] *= sign if label == 1 else -sign
        parts_X.append(corner)
        parts_y.append(np.full(count, label, dtype=np.int64))
    order = rng.permutation(n_samples)
    X, y = np.concatenate(parts_X)[order], np.concatenate(parts_y)[order]
    return X + rng.normal(scale=noise, size=X.shape), y


def _spiral(n_samples: int, noise: float, rng: np.random.RandomState) -> tuple[np.ndarray, ...]:
    """Two interleaved arms, each 1.25 turns from the centre outwards, the second rotated
    by half a turn; Gaussian noise is added to every point."""
    parts_X, parts_y = [], []
    for label, count in enumerate(_two_class_sizes(n_samples)):
        t = np.linspace(0.1, 1.0, count)  # radius grows from 0.1 to 1
        angle = 2.0 * math.pi * 1.25 * t + label * math.pi
        arm = np.column_stack([t * np.cos(angle), t * np.sin(angle)])
        parts_X.append(arm + rng.normal(scale=noise, size=arm.shape))
        parts_y.append(np.full(count, label, dtype=np.int64))
    X, y = np.concatenate(parts_X), np.concatenate(parts_y)
    order = rng.permutation(n_samples)  # interleave the classes, as sklearn's shuffle=True
    return X[order], y[order]


def make_2d(
    name: str, n_samples: int, noise: float, rng: np.random.RandomState
) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: ``n_samples`` points of shape (n, 2) and their 0/1 labels.

    moons and circles come from scikit-learn (circles with the inner ring at half the
    radius), xor and spiral from the small generators above. ``noise`` is the standard
    deviation of the Gaussian noise added to each point.
    """
    from sklearn.datasets import make_circles, make_moons

    if name not in DATASETS_2D:
        raise ValueError(f"unknown 2-D dataset {name!r}; choose from {', '.join(DATASETS_2D)}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 2:
        raise ValueError(f"n_samples must be a whole number >= 2, got {n_samples!r}")
    if not (math.isfinite(noise) and noise >= 0.0):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    noise = noise + 0.0  # -0.0 becomes 0.0: NumPy refuses a scale whose sign bit is set
    if name == "moons":
        X, y = make_moons(n_samples=n_samples, noise=noise, random_state=rng)
    elif name == "circles":
        X, y = make_circles(n_samples=n_samples, noise=noise, factor=0.5, random_state=rng)
    elif name == "xor":
        X, y = _xor(n_samples, noise, rng)
    else:
        X, y = _spiral(n_samples, noise, rng)
    return X.astype(np.float64), y.astype(np.int64)


def load_digits_split(seed: int, test_fraction: float = DIGITS_TEST_FRACTION) -> Dataset:
    """scikit-learn's 1,797 8x8 digits (shipped with it, no download), split stratified
    into train and test with ``seed``, then standardised with the mean and standard
    deviation of the training split only, so nothing about the test set leaks in."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    digits = load_digits()
    X = digits.data.astype(np.float64)
    y = digits.target.astype(np.int64)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_fraction, stratify=y, random_state=seed
    )
    scaler = StandardScaler().fit(X_train)  # constant pixels get scale 1, not a 0 division
    return Dataset(
        name="digits",
        X_train=scaler.transform(X_train),
        y_train=y_train,
        num_classes=10,
        X_test=scaler.transform(X_test),
        y_test=y_test,
        test_images=X_test.reshape(-1, 8, 8),
    )


def load_dataset(name: str, samples: int | None, noise: float | None, seed: int) -> Dataset:
    """The dataset a run is configured with; the 2-D ones train on every point generated."""
    if name == "digits":
        return load_digits_split(seed)
    X, y = make_2d(name, samples, noise, np.random.RandomState(seed))  # type: ignore[arg-type]
    return Dataset(name=name, X_train=X, y_train=y, num_classes=2)
