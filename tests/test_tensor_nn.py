"""tensor_nn (Linear, MLP, state dicts with torch's names), the optimisers on Tensors
against torch.optim, and the scalar and tensor engines training the same MLP."""

from __future__ import annotations

import re
from itertools import pairwise

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons

import modelwright_autograd.tensor.functional as F
from modelwright_autograd import MLP as ScalarMLP
from modelwright_autograd import SGD, Adam, Tensor, Value, svm_loss
from modelwright_autograd.tensor.nn import MLP, Linear, ReLU, Sequential, Tanh

# ---------------------------------------------------------------------- Linear and MLP


def test_linear_init_is_uniform_within_one_over_sqrt_fan_in():
    layer = Linear(400, 300, seed=0)
    bound = 1.0 / np.sqrt(400)
    w, b = layer.weight.data, layer.bias.data
    assert w.shape == (300, 400) and b.shape == (300,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.mean()) < 4 * bound / np.sqrt(3 * w.size)  # 4 standard errors
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.03)  # the variance of U(-b, b)
    assert w.max() > 0.99 * bound and w.min() < -0.99 * bound
    assert b.max() > 0.8 * bound and b.min() < -0.8 * bound
    assert layer.weight.requires_grad and layer.bias.requires_grad


def test_linear_seeding():
    same = [Linear(5, 3, seed=7).weight.data for _ in range(2)]
    np.testing.assert_array_equal(*same)
    assert not np.array_equal(same[0], Linear(5, 3, seed=8).weight.data)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(Linear(5, 3, seed=g1).bias.data, Linear(5, 3, seed=g2).bias.data)
    np.random.seed(11)
    first = Linear(5, 3).weight.data
    np.random.seed(11)
    np.testing.assert_array_equal(first, Linear(5, 3).weight.data)
    assert Linear(4, 2, bias=False).bias is None
    assert Linear(4, 2, dtype=np.float32).weight.dtype == np.float32
    with pytest.raises(TypeError, match="seed must be an int"):
        Linear(4, 2, seed="1")
    with pytest.raises(ValueError, match="in_features must be a positive whole number"):
        Linear(0, 2)


def _torch_copy(model: MLP) -> list[torch.nn.Linear]:
    layers = []
    for layer in model.layers:
        t = torch.nn.Linear(layer.in_features, layer.out_features, dtype=torch.float64)
        with torch.no_grad():
            t.weight.copy_(torch.from_numpy(layer.weight.data))
            t.bias.copy_(torch.from_numpy(layer.bias.data))
        layers.append(t)
    return layers


def _torch_forward(layers, x, act=torch.relu):
    for i, layer in enumerate(layers):
        x = layer(x)
        if i != len(layers) - 1:
            x = act(x)
    return x


def test_mlp_structure_and_forward_backward_like_torch():
    model = MLP(4, [8, 6, 3], seed=0)
    names = list(model.state_dict())
    assert names == [f"{i}.{p}" for i in (0, 2, 4) for p in ("weight", "bias")]
    assert [p.shape for p in model.parameters()] == [(8, 4), (8,), (6, 8), (6,), (3, 6), (3,)]
    x = np.random.default_rng(1).standard_normal((5, 4))
    target = np.array([0, 2, 1, 1, 0])
    loss = F.cross_entropy(model(Tensor(x)), target)
    loss.backward()
    layers = _torch_copy(model)
    tloss = torch.nn.functional.cross_entropy(
        _torch_forward(layers, torch.from_numpy(x)), torch.from_numpy(target)
    )
    tloss.backward()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-12)
    for ours, theirs in zip(model.layers, layers):
        np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(ours.bias.grad, theirs.bias.grad.numpy(), atol=1e-12)
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    assert model(Tensor(x[0])).shape == (3,)


def test_sequential_and_tanh_mlp():
    seq = Sequential(Linear(3, 4, seed=0), Tanh(), Linear(4, 2, seed=1), ReLU())
    names = ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert list(seq.state_dict()) == names
    assert len(seq) == 4 and isinstance(seq[1], Tanh)
    x = np.ones((2, 3))
    mlp = MLP(3, [4, 2], activation="tanh", seed=0)
    layers = _torch_copy(mlp)
    expected = _torch_forward(layers, torch.from_numpy(x), torch.tanh).detach().numpy()
    np.testing.assert_allclose(mlp(Tensor(x)).data, expected, atol=1e-12)
    with pytest.raises(TypeError, match="item 0 is not a Module"):
        Sequential(lambda x: x)
    with pytest.raises(ValueError, match="activation must be one of"):
        MLP(3, [2], activation="gelu")


# ---------------------------------------------------------------------- state dicts


def _torch_sequential(sizes, act=torch.nn.ReLU):
    modules = []
    for i, (nin, nout) in enumerate(pairwise(sizes)):
        modules += [act()] if i else []
        modules.append(torch.nn.Linear(nin, nout, dtype=torch.float64))
    return torch.nn.Sequential(*modules)


def test_state_dict_names_and_shapes_are_torch_sequentials():
    model = MLP(3, [5, 4, 2], seed=0)
    theirs = _torch_sequential([3, 5, 4, 2]).state_dict()
    assert list(model.state_dict()) == list(theirs)
    assert [a.shape for a in model.state_dict().values()] == [
        tuple(t.shape) for t in theirs.values()
    ]
    seq = Sequential(Linear(3, 4, seed=0), Tanh(), Linear(4, 2, seed=1))
    assert list(seq.state_dict()) == list(_torch_sequential([3, 4, 2]).state_dict())


def test_state_dict_round_trip_through_torch():
    model = MLP(3, [5, 2], seed=0)
    torch_model = _torch_sequential([3, 5, 2])
    torch_model.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3))
    expected = torch_model(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(model(Tensor(x)).data, expected, rtol=0, atol=1e-15)
    other = MLP(3, [5, 2], seed=1)
    other.load_state_dict(torch_model.state_dict())  # torch tensors load directly
    np.testing.assert_array_equal(other(Tensor(x)).data, model(Tensor(x)).data)
    state = model.state_dict()  # a copy: changing it leaves the model alone
    state["0.bias"][:] = 99.0
    assert not np.any(model.layers[0].bias.data == 99.0)


def _assert_unchanged(model, before):
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name])


def test_load_state_dict_of_wrong_shapes_names_key_and_shapes_and_changes_nothing():
    model = MLP(3, [5, 2], seed=1)
    before = model.state_dict()
    with pytest.raises(ValueError) as info:
        model.load_state_dict(MLP(3, [6, 2], seed=0).state_dict())
    message = str(info.value)
    assert "size mismatch for 0.weight: checkpoint shape (6, 3), model shape (5, 3)" in message
    assert "2.weight: checkpoint shape (2, 6), model shape (2, 5)" in message
    _assert_unchanged(model, before)


def test_load_state_dict_names_missing_and_unexpected_keys():
    model = MLP(3, [5, 2], seed=1)
    before = model.state_dict()
    with pytest.raises(ValueError, match=re.escape("unexpected keys ['4.weight'")):
        model.load_state_dict(MLP(3, [5, 5, 2], seed=0).state_dict())
    with pytest.raises(ValueError, match=re.escape("missing keys ['0.weight'")):
        model.load_state_dict(Linear(3, 5, seed=0).state_dict())
    with pytest.raises(ValueError, match=r"0\.bias holds <U1 data, not numbers"):
        model.load_state_dict({**before, "0.bias": np.array(list("abcde"))})
    _assert_unchanged(model, before)


def test_a_float32_model_refuses_a_number_beyond_float32():
    model = MLP(2, [3, 1], seed=0, dtype=np.float32)
    before = model.state_dict()
    state = {k: v.astype(np.float64) for k, v in before.items()}
    state["2.weight"][0, 1] = 1e300  # float32 would make it inf
    with pytest.raises(ValueError, match=r"2\.weight\[1\] = 1e\+300 is too large for float32"):
        model.load_state_dict(state)
    _assert_unchanged(model, before)
    state["2.weight"][0, 1] = np.inf  # an inf is a value, not an overflow
    model.load_state_dict(state)
    assert model.layers[1].weight.data[0, 1] == np.inf


# ---------------------------------------------------------------------- optimisers


def _batch():
    rng = np.random.default_rng(5)
    return rng.standard_normal((8, 4)), rng.integers(0, 3, 8)


OPTIMISERS = {
    "sgd": (lambda ps: SGD(ps, lr=0.1), lambda ps: torch.optim.SGD(ps, lr=0.1)),
    "momentum": (
        lambda ps: SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    ),
    "momentum_wd": (
        lambda ps: SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-2),
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-2),
    ),
    "adam": (lambda ps: Adam(ps, lr=1e-2), lambda ps: torch.optim.Adam(ps, lr=1e-2)),
    "adam_wd": (
        lambda ps: Adam(ps, lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2),
        lambda ps: torch.optim.Adam(ps, lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2),
    ),
}


@pytest.mark.parametrize("zero_grad", [True, False], ids=["zero_grad", "accumulating"])
@pytest.mark.parametrize("name", OPTIMISERS)
def test_optimisers_step_tensors_like_torch_optim(name, zero_grad):
    """Five training steps of the same MLP in both libraries; without zero_grad the grads
    accumulate in place, which must not leak into a momentum buffer that shares them."""
    model = MLP(4, [6, 3], seed=0)
    layers = _torch_copy(model)
    ours_opt = OPTIMISERS[name][0](model.parameters())
    torch_opt = OPTIMISERS[name][1]([p for layer in layers for p in layer.parameters()])
    x, y = _batch()
    for _ in range(5):
        if zero_grad:
            ours_opt.zero_grad()
            torch_opt.zero_grad()
        F.cross_entropy(model(Tensor(x)), y).backward()
        torch.nn.functional.cross_entropy(
            _torch_forward(layers, torch.from_numpy(x)), torch.from_numpy(y)
        ).backward()
        ours_opt.step()
        torch_opt.step()
        for ours, theirs in zip(model.layers, layers):
            np.testing.assert_allclose(ours.weight.data, theirs.weight.detach().numpy(), atol=1e-9)
            np.testing.assert_allclose(ours.bias.data, theirs.bias.detach().numpy(), atol=1e-9)


def test_optimisers_skip_a_tensor_with_no_grad():
    a, b = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True)
    opt = Adam([a, b], lr=0.1)
    (a * 3.0).sum().backward()
    opt.step()
    assert b.data[0] == 2.0 and a.data[0] != 1.0
    opt.zero_grad()
    assert a.grad is None and b.grad is None


# ---------------------------------------------------------------------- the two engines


def test_scalar_and_tensor_engines_train_micrograds_demo_identically():
    """micrograd's demo (MLP(2, [16, 16, 1]), hinge loss + 1e-4 L2, SGD with lr decaying
    from 1.0 to 0.1) from the same initial weights gives the same loss curve in both."""
    X, y = make_moons(n_samples=100, noise=0.1, random_state=1337)
    y = y * 2 - 1.0
    scalar = ScalarMLP(2, [16, 16, 1], seed=1337)
    tensor = MLP(2, [16, 16, 1], seed=0)
    for s_layer, t_layer in zip(scalar.layers, tensor.layers):
        for j, neuron in enumerate(s_layer.neurons):
            t_layer.weight.data[j] = [w.data for w in neuron.w]
            t_layer.bias.data[j] = neuron.b.data
    steps, alpha = 20, 1e-4
    xt, yt = Tensor(X), Tensor(y)
    for k in range(steps):
        lr = 1.0 - 0.9 * k / (steps - 1)

        scores = [scalar([Value(a) for a in row]) for row in X]
        s_loss = svm_loss(scores, list(y)) + alpha * sum(p * p for p in scalar.parameters())
        scalar.zero_grad()
        s_loss.backward()
        for p in scalar.parameters():
            p.data -= lr * p.grad

        margins = (1.0 - yt * tensor(xt).reshape(-1)).relu()
        reg = sum((p * p).sum() for p in tensor.parameters())
        t_loss = margins.mean() + alpha * reg
        tensor.zero_grad()
        t_loss.backward()
        for p in tensor.parameters():
            p.data -= lr * p.grad

        assert t_loss.item() == pytest.approx(s_loss.data, abs=1e-9, rel=1e-9), f"step {k}"


def test_mlp_default_seed_uses_numpys_global_generator():
    # seed=None draws from the global RandomState, so np.random.seed reproduces a model
    from modelwright_autograd.tensor import nn as tensor_nn

    np.random.seed(0)
    first = tensor_nn.MLP(2, [3, 1])
    np.random.seed(0)
    second = tensor_nn.MLP(2, [3, 1])
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        np.testing.assert_array_equal(a.data, b.data)


def test_mlp_given_the_wrong_input_says_what_it_expects():
    model = MLP(2, [3, 1], seed=0)
    expected = "MLP expects a Tensor of shape (..., 2) (2 features per row), got"
    with pytest.raises(TypeError) as info:
        model(5)
    assert str(info.value) == f"{expected} int 5"
    with pytest.raises(TypeError) as info:
        model(np.zeros((4, 2)))  # an ndarray, not a Tensor: one line all the same
    assert str(info.value).startswith(f"{expected} ndarray") and "\n" not in str(info.value)
    for shape in ((4, 3), (), (3,)):
        with pytest.raises(ValueError) as info:
            model(Tensor(np.zeros(shape)))
        assert str(info.value) == f"{expected} shape {shape}"
    assert model(Tensor(np.zeros((5, 2)))).shape == (5, 1)
    assert model(Tensor(np.zeros(2))).shape == (1,)


def test_mlp_runs_the_forward_of_a_hidden_layer_swapped_in():
    """MLP fuses its own Linear layers with the relu (linear_relu); a layer the user swaps
    in, such as a Linear subclass with its own forward, is called instead."""

    class Doubled(Linear):
        def forward(self, x):
            return super().forward(x) * 2.0

    model = MLP(3, [4, 2], seed=0)
    x = Tensor(np.random.default_rng(0).standard_normal((5, 3)))
    plain = model(x).data
    swapped = Doubled(3, 4, seed=1)
    swapped.weight.data[...] = model.layers[0].weight.data
    swapped.bias.data[...] = model.layers[0].bias.data
    model.layers[0] = swapped
    first = model.layers[0]
    hidden = np.maximum(2.0 * (x.data @ first.weight.data.T + first.bias.data), 0.0)
    expected = hidden @ model.layers[1].weight.data.T + model.layers[1].bias.data
    np.testing.assert_allclose(model(x).data, expected, rtol=1e-12)
    assert not np.allclose(model(x).data, plain)
