"""The neural-net layer: structure, seeding, micrograd parity, a whole MLP against an
equivalent torch model, and a training run on make_moons."""

import random
import re

import numpy as np
import pytest
import torch
from micrograd.nn import MLP as MicroMLP
from micrograd.nn import Neuron as MicroNeuron
from sklearn.datasets import make_moons

from modelwright_autograd import MLP, Layer, Neuron, Value, sum_values, svm_loss

# ------------------------------------------------------------------ structure


def test_parameter_order_is_layer_by_layer_neuron_by_neuron_weights_then_bias():
    model = MLP(2, [3, 1], seed=0)
    expected = []
    for layer in model.layers:
        for neuron in layer.neurons:
            expected.extend(neuron.w)
            expected.append(neuron.b)
    params = model.parameters()
    assert len(params) == (2 + 1) * 3 + (3 + 1) * 1 == 13
    assert all(p is q for p, q in zip(params, expected))
    # biases start at 0 and weights in [-1, 1]
    assert params[2].data == 0.0 and params[-1].data == 0.0
    assert all(-1.0 <= p.data <= 1.0 for p in params)
    assert len({id(p) for p in params}) == len(params)


def test_one_output_is_a_value_several_are_a_list():
    single = MLP(2, [4, 1], seed=1)([0.5, -0.5])
    assert isinstance(single, Value)
    several = MLP(2, [4, 3], seed=1)([0.5, -0.5])
    assert isinstance(several, list) and len(several) == 3
    assert all(isinstance(v, Value) for v in several)
    assert isinstance(Layer(2, 1, seed=0)([1.0, 2.0]), list)  # a layer always gives a list
    assert isinstance(Neuron(2, seed=0)([1.0, 2.0]), Value)


def test_one_neuron_hidden_layer_works_and_matches_torch():
    model = MLP(2, [1, 3, 1], seed=3)
    out = model([0.7, -1.1])
    assert isinstance(out, Value)
    _compare_with_torch(model, [[0.7, -1.1], [-0.2, 0.4]], [1.0, -1.0])


@pytest.mark.parametrize(
    ("model", "x", "sizes"),
    [
        (MLP(2, [3, 1], seed=0), [1.0, 2.0, 3.0], ("2", "3")),
        (MLP(3, [2], seed=0), [1.0], ("3", "1")),
        (Layer(4, 2, seed=0), [1.0, 2.0], ("4", "2")),
        (Neuron(2, seed=0), [1.0, 2.0, 3.0, 4.0], ("2", "4")),
    ],
)
def test_wrong_number_of_inputs_names_both_sizes(model, x, sizes):
    with pytest.raises(ValueError) as info:
        model(x)
    message = str(info.value)
    assert f"expects {sizes[0]} inputs" in message and f"got {sizes[1]}" in message


def test_a_replaced_layer_of_the_wrong_size_is_an_error_not_a_number():
    """MLP calls each layer as a user would, so a layer swapped in with the wrong number
    of inputs is caught by its own check rather than zip() dropping inputs."""
    model = MLP(2, [4, 1], seed=0)
    model.layers[1] = Layer(3, 1, activation=None, seed=1)
    with pytest.raises(ValueError, match="expects 3 inputs, got 4"):
        model([1.0, 2.0])


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="activation"):
        MLP(2, [3, 1], activation="gelu")
    with pytest.raises(ValueError, match="at least one layer"):
        MLP(2, [])
    with pytest.raises(ValueError, match="inputs"):
        MLP(0, [1])
    with pytest.raises(TypeError, match="seed"):
        MLP(2, [1], seed="abc")


def test_inputs_may_be_numbers_values_or_numpy_scalars():
    model = MLP(2, [3, 1], seed=5)
    a = model([0.5, -1.0]).data
    assert model([Value(0.5), Value(-1.0)]).data == a
    assert model([np.float64(0.5), np.int64(-1)]).data == a
    assert model(np.array([0.5, -1.0])).data == a


# ------------------------------------------------------------------ seeding


def _weights(model):
    return [p.data for p in model.parameters()]


def test_same_seed_same_model_different_seed_different_model():
    assert _weights(MLP(2, [8, 8, 1], seed=42)) == _weights(MLP(2, [8, 8, 1], seed=42))
    assert _weights(MLP(2, [8, 8, 1], seed=42)) != _weights(MLP(2, [8, 8, 1], seed=43))
    rng_a, rng_b = random.Random(7), random.Random(7)
    assert _weights(MLP(3, [4, 1], seed=rng_a)) == _weights(MLP(3, [4, 1], seed=rng_b))


def test_seeded_model_does_not_touch_the_global_generator():
    random.seed(99)
    before = random.random()
    random.seed(99)
    MLP(2, [16, 16, 1], seed=1)
    assert random.random() == before


def test_global_seed_reproduces_micrograds_initial_weights():
    random.seed(1337)
    ours = MLP(2, [16, 16, 1])  # seed=None: Python's global generator, as micrograd
    random.seed(1337)
    theirs = MicroMLP(2, [16, 16, 1])
    assert len(ours.parameters()) == len(theirs.parameters()) == 337
    assert _weights(ours) == [p.data for p in theirs.parameters()]


def test_same_forward_as_micrograd():
    random.seed(1337)
    ours = MLP(2, [16, 16, 1])
    random.seed(1337)
    theirs = MicroMLP(2, [16, 16, 1])
    for x in ([0.3, -0.8], [1.5, 0.25], [-2.0, 1.0]):
        assert ours(x).data == theirs(x).data  # same arithmetic in the same order


# ------------------------------------------------------------------ against torch


def _torch_copy(model):
    """An equivalent torch model of nn.Linear layers, with the engine model's weights."""
    act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}
    layers = []
    for i, layer in enumerate(model.layers):
        linear = torch.nn.Linear(len(layer.neurons[0].w), len(layer.neurons)).double()
        with torch.no_grad():
            for j, neuron in enumerate(layer.neurons):
                linear.weight[j] = torch.tensor([w.data for w in neuron.w], dtype=torch.float64)
                linear.bias[j] = neuron.b.data
        layers.append(linear)
        if i != len(model.layers) - 1:
            layers.append(act[model.activation]())
    return torch.nn.Sequential(*layers)


def test_state_dict_is_torch_sequentials_and_loads_both_ways():
    model = MLP(3, [4, 2], activation="tanh", seed=0)
    torch_model = _torch_copy(model)  # built neuron by neuron, not from the state dict
    theirs = torch_model.state_dict()
    ours = model.state_dict()
    assert list(ours) == list(theirs) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for name, value in ours.items():
        assert torch.equal(torch.tensor(value, dtype=torch.float64), theirs[name])
    other = MLP(3, [4, 2], activation="tanh", seed=1)
    other.load_state_dict(theirs)  # torch tensors load directly
    assert [p.data for p in other.parameters()] == [p.data for p in model.parameters()]
    ours["0.bias"][0] = 99.0  # a copy: changing it leaves the model alone
    assert model.layers[0].neurons[0].b.data != 99.0


def test_load_state_dict_checks_everything_before_changing_anything():
    model = MLP(2, [3, 1], seed=0)
    before = [p.data for p in model.parameters()]
    good = model.state_dict()
    cases = {
        "missing keys ['2.bias']": {k: v for k, v in good.items() if k != "2.bias"},
        "unexpected keys ['4.weight']": {**good, "4.weight": [[1.0]]},
        "0.weight is not a (3, 2) array of real numbers": {**good, "0.weight": [[1.0, 2.0]] * 2},
        "0.bias is not a (3,) array of real numbers": {**good, "0.bias": [1.0, True, 2.0]},
        "2.weight is not a (1, 3) array": {**good, "2.weight": np.zeros((3, 1))},
    }
    for problem, state in cases.items():
        with pytest.raises(ValueError, match=re.escape(problem)):
            model.load_state_dict(state)
        assert [p.data for p in model.parameters()] == before


def _torch_params_in_engine_order(tmodel):
    """Per neuron: its weight row, then its bias (the engine's parameter order)."""
    grads = []
    for linear in tmodel:
        if isinstance(linear, torch.nn.Linear):
            for j in range(linear.out_features):
                grads.extend(linear.weight.grad[j].tolist())
                grads.append(linear.bias.grad[j].item())
    return grads


def _demo_loss(model, X, y, alpha=1e-4):
    """micrograd's demo loss: mean hinge loss on the scores plus alpha * sum p**2."""
    scores = [model(x) for x in X]
    return svm_loss(scores, y) + alpha * sum_values([p * p for p in model.parameters()])


def _compare_with_torch(model, X, y, alpha=1e-4):
    loss = _demo_loss(model, X, y, alpha)
    model.zero_grad()
    loss.backward()

    tmodel = _torch_copy(model)
    Xt = torch.tensor(X, dtype=torch.float64)
    yt = torch.tensor(y, dtype=torch.float64)
    scores = tmodel(Xt).squeeze(1)
    reg = sum((p * p).sum() for p in tmodel.parameters())
    tloss = torch.relu(1 - yt * scores).mean() + alpha * reg
    tloss.backward()

    assert loss.data == pytest.approx(tloss.item(), rel=1e-9, abs=1e-9)
    theirs = _torch_params_in_engine_order(tmodel)
    ours = [p.grad for p in model.parameters()]
    assert len(ours) == len(theirs)
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-6)
    assert any(g != 0.0 for g in ours)
    return loss.data, ours


_rng = random.Random(2024)
X_SMALL = [[_rng.uniform(-2, 2), _rng.uniform(-2, 2)] for _ in range(12)]
Y_SMALL = [1.0 if a * b > 0 else -1.0 for a, b in X_SMALL]


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid"])
def test_mlp_fused_and_unfused_match_torch_and_each_other(activation):
    fused = MLP(2, [16, 16, 1], activation=activation, seed=11)
    unfused = MLP(2, [16, 16, 1], activation=activation, seed=11, fused=False)
    assert _weights(fused) == _weights(unfused)
    loss_f, grads_f = _compare_with_torch(fused, X_SMALL, Y_SMALL)
    loss_u, grads_u = _compare_with_torch(unfused, X_SMALL, Y_SMALL)
    # dot adds the products in the same order as the chain of + does, so: bit for bit
    assert loss_f == loss_u
    assert grads_f == grads_u


def test_mlp_with_several_outputs_matches_torch():
    model = MLP(3, [5, 4, 2], activation="tanh", seed=8)
    x, target = [0.2, -0.7, 1.3], [0.5, -0.25]
    out = model(x)
    loss = sum_values([(o - t) ** 2 for o, t in zip(out, target)])
    loss.backward()
    tmodel = _torch_copy(model)
    tout = tmodel(torch.tensor(x, dtype=torch.float64))
    tloss = ((tout - torch.tensor(target, dtype=torch.float64)) ** 2).sum()
    tloss.backward()
    assert [o.data for o in out] == pytest.approx(tout.tolist(), rel=1e-9)
    assert [p.grad for p in model.parameters()] == pytest.approx(
        _torch_params_in_engine_order(tmodel), rel=1e-6, abs=1e-9
    )


# ------------------------------------------------------------------ it learns


@pytest.mark.slow
def test_mlp_learns_make_moons():
    """micrograd's demo loop: full batch, svm loss + 1e-4 L2, lr 1.0 -> 0.1, 100 steps."""
    X, y = make_moons(n_samples=100, noise=0.1, random_state=1337)
    y = y * 2 - 1  # labels -1 / +1
    inputs = [[Value(float(a)), Value(float(b))] for a, b in X]
    labels = [float(t) for t in y]
    model = MLP(2, [16, 16, 1], seed=1337)
    losses = []
    for k in range(100):
        scores = [model(x) for x in inputs]
        loss = svm_loss(scores, labels) + 1e-4 * sum_values([p * p for p in model.parameters()])
        model.zero_grad()
        loss.backward()
        lr = 1.0 - 0.9 * k / 100
        for p in model.parameters():
            p.data -= lr * p.grad
        losses.append(loss.data)
    scores = [model(x).data for x in inputs]
    accuracy = sum((s > 0) == (t > 0) for s, t in zip(scores, labels)) / len(labels)
    assert accuracy >= 0.95
    assert losses[-1] < 0.1 * losses[0]
    assert sum(losses[-10:]) < sum(losses[:10])


def test_activation_none_is_micrograds_linear_neuron():
    x = [0.7, -1.3, 2.2]
    random.seed(5)
    ours = Neuron(3, activation=None, fused=False)
    random.seed(5)
    theirs = MicroNeuron(3, nonlin=False)
    assert [w.data for w in ours.w] == [w.data for w in theirs.w]
    assert ours(x).data == theirs(x).data  # the same sum in the same order
    assert repr(ours) == "LinearNeuron(3)" and repr(Neuron(3, activation="tanh")) == "TanhNeuron(3)"
    with pytest.raises(ValueError, match="or None"):
        Neuron(3, False)  # micrograd's positional nonlin: here the activation is named


def test_mlp_given_a_non_sequence_says_what_it_expects():
    with pytest.raises(TypeError) as info:
        MLP(2, [3, 1], seed=0)(5)
    assert str(info.value) == "MLP expects 2 inputs (a sequence of 2 numbers or Values), got int 5"
    with pytest.raises(TypeError, match="a sequence of 2 numbers"):
        MLP(2, [3, 1], seed=0)("ab")  # a string has a length, but is not numbers
