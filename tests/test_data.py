"""The training datasets: micrograd's exact moons from a seeded RandomState, the shapes and
labels of the toy generators (checked against the rule that defines each), and the
digits split (stratified, standardised on the training split only)."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_moons

from modelwright_autograd.data import DATASETS_2D, load_dataset, load_digits_split, make_2d


def test_moons_from_a_seeded_randomstate_equal_micrograds_global_seed():
    """micrograd's demo calls np.random.seed(1337) then make_moons(100, noise=0.1)."""
    saved = np.random.get_state()
    try:
        np.random.seed(1337)
        X_ref, y_ref = make_moons(n_samples=100, noise=0.1)
    finally:
        np.random.set_state(saved)
    X, y = make_2d("moons", 100, 0.1, np.random.RandomState(1337))
    assert np.array_equal(X, X_ref)
    assert np.array_equal(y, y_ref)


def test_generators_leave_numpys_global_state_alone():
    saved = np.random.get_state()
    before = np.random.random()
    np.random.set_state(saved)
    for name in DATASETS_2D:
        load_dataset(name, 20, 0.1, seed=3)
    assert np.random.random() == before


@pytest.mark.parametrize("name", DATASETS_2D)
@pytest.mark.parametrize("n", [2, 7, 100])
def test_2d_shapes_labels_and_seeding(name, n):
    X, y = make_2d(name, n, 0.1, np.random.RandomState(5))
    assert X.shape == (n, 2) and X.dtype == np.float64
    assert y.shape == (n,) and set(y.tolist()) == {0, 1}
    assert abs(int(np.sum(y == 1)) - int(np.sum(y == 0))) <= 1  # balanced classes
    X2, y2 = make_2d(name, n, 0.1, np.random.RandomState(5))
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    X3, _ = make_2d(name, n, 0.1, np.random.RandomState(6))
    assert not np.array_equal(X, X3)


def test_noiseless_xor_is_labelled_by_quadrant():
    X, y = make_2d("xor", 200, 0.0, np.random.RandomState(0))
    assert np.all(np.abs(X) <= 1.0)
    assert np.array_equal(y, (X[:, 0] * X[:, 1] > 0).astype(int))


def test_noiseless_circles_and_spiral_geometry():
    X, y = make_2d("circles", 50, 0.0, np.random.RandomState(0))
    radius = np.hypot(X[:, 0], X[:, 1])
    assert np.allclose(radius[y == 0], 1.0) and np.allclose(radius[y == 1], 0.5)

    X, y = make_2d("spiral", 40, 0.0, np.random.RandomState(0))
    for label in (0, 1):
        arm = X[y == label]
        r = np.hypot(arm[:, 0], arm[:, 1])
        order = np.argsort(r)
        assert np.allclose(r[order], np.linspace(0.1, 1.0, 20))
        # the angle grows by 2*pi*1.25 per unit of radius; the second arm is rotated by pi
        angle = np.arctan2(arm[order, 1], arm[order, 0])
        expected = 2 * math.pi * 1.25 * r[order] + label * math.pi
        assert np.allclose(np.cos(angle - expected), 1.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope", 10, 0.1), "unknown 2-D dataset 'nope'"),
        (("moons", 1, 0.1), "n_samples must be a whole number >= 2, got 1"),
        (("moons", 10, -0.1), "noise must be a finite number >= 0, got -0.1"),
        (("xor", 10, math.nan), "noise must be a finite number >= 0, got nan"),
    ],
)
def test_bad_arguments_are_named(args, message):
    with pytest.raises(ValueError, match=message):
        make_2d(*args, np.random.RandomState(0))


def test_digits_split_is_stratified_and_standardised_on_train_only():
    data = load_digits_split(seed=1337)
    digits = load_digits()
    assert data.X_train.shape == (1437, 64) and data.X_test.shape == (360, 64)
    assert data.num_classes == 10 and data.num_features == 64
    # stratified: each class keeps its share of the whole set, to within one example
    for c in range(10):
        share = np.sum(digits.target == c) / len(digits.target)
        assert abs(np.sum(data.y_test == c) - share * 360) <= 1
    # standardised with the training split's statistics: mean 0, std 1 (0 for pixels that
    # are constant in the training split), and the test split mapped with the same numbers
    assert np.allclose(data.X_train.mean(axis=0), 0.0, atol=1e-12)
    std = data.X_train.std(axis=0)
    assert np.all(np.isclose(std, 1.0) | np.isclose(std, 0.0))
    raw_test = data.test_images.reshape(-1, 64)
    assert set(np.unique(raw_test)) <= set(range(17))  # raw pixel values 0..16
    # the training split is the whole set minus the test images, so its mean and standard
    # deviation follow from sums over the two (no need to know which rows it holds)
    n_train = len(digits.data) - len(raw_test)
    mean = (digits.data.sum(axis=0) - raw_test.sum(axis=0)) / n_train
    square = ((digits.data**2).sum(axis=0) - (raw_test**2).sum(axis=0)) / n_train
    scale = np.sqrt(np.maximum(square - mean**2, 0.0))
    scale[scale < 1e-9] = 1.0
    assert np.allclose(data.X_test, (raw_test - mean) / scale)
    # a different seed is a different split
    assert not np.array_equal(load_digits_split(seed=1).y_test, data.y_test)
