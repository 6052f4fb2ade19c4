"""tensor_nn's convolutional and normalisation layers against torch.nn: torch's default
initialisations, outputs and gradients with the same weights in train and eval mode,
running statistics over several steps, train()/eval() through sub-modules, and the
state_dict names torch gives."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from modelwright_autograd import Tensor
from modelwright_autograd.tensor.nn import (
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    Linear,
    MaxPool2d,
    Module,
    Sequential,
)

FWD, GRAD = 1e-9, 1e-6


def test_conv2d_init_is_torchs_kaiming_uniform():
    conv = Conv2d(8, 32, 3, groups=2, seed=0)
    fan_in = 8 // 2 * 3 * 3
    bound = 1 / np.sqrt(fan_in)
    w, b = conv.weight.data, conv.bias.data
    assert w.shape == (32, 4, 3, 3) and b.shape == (32,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.1)  # the variance of U(-b, b)
    # torch draws from the same distribution: compare the bounds its init reaches
    ref = torch.nn.Conv2d(8, 32, 3, groups=2)
    assert np.abs(ref.weight.detach().numpy()).max() <= bound
    assert np.abs(ref.weight.detach().numpy()).max() > 0.95 * bound
    assert Conv2d(1, 2, (3, 2), bias=False).bias is None
    np.testing.assert_array_equal(
        Conv2d(2, 3, 3, seed=4).weight.data, Conv2d(2, 3, 3, seed=4).weight.data
    )


def test_norm_and_embedding_inits():
    ln, bn = LayerNorm((3, 4)), BatchNorm2d(5)
    np.testing.assert_array_equal(ln.weight.data, np.ones((3, 4)))
    np.testing.assert_array_equal(ln.bias.data, np.zeros((3, 4)))
    np.testing.assert_array_equal(bn.weight.data, np.ones(5))
    np.testing.assert_array_equal(bn.bias.data, np.zeros(5))
    np.testing.assert_array_equal(bn.running_mean.data, np.zeros(5))
    np.testing.assert_array_equal(bn.running_var.data, np.ones(5))
    emb = Embedding(1000, 20, padding_idx=3, seed=0)
    w = emb.weight.data
    np.testing.assert_array_equal(w[3], 0.0)
    assert abs(w.mean()) < 0.03 and w.std() == pytest.approx(1.0, abs=0.03)  # N(0, 1)
    assert LayerNorm(4, elementwise_affine=False).weight is None


class Net(Module):
    """The same attribute names as TorchNet, so state_dict keys can be compared."""

    def __init__(self) -> None:
        self.conv = Conv2d(2, 4, 3, padding=1, seed=0)
        self.bn = BatchNorm2d(4, momentum=0.2)
        self.pool = MaxPool2d(2)
        self.drop = Dropout(0.5, seed=0)
        self.flat = Flatten()
        self.norm = LayerNorm(16)
        self.head = Linear(16, 3, seed=1)

    def forward(self, x):
        x = self.pool(self.bn(self.conv(x)).relu())
        return self.head(self.norm(self.flat(self.drop(x))))


class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1, dtype=torch.float64)
        self.bn = torch.nn.BatchNorm2d(4, momentum=0.2, dtype=torch.float64)
        self.pool = torch.nn.MaxPool2d(2)
        self.drop = torch.nn.Dropout(0.5)
        self.flat = torch.nn.Flatten()
        self.norm = torch.nn.LayerNorm(16, dtype=torch.float64)
        self.head = torch.nn.Linear(16, 3, dtype=torch.float64)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.head(self.norm(self.flat(self.drop(x))))


def _copy_into_torch(ours: Module, theirs: torch.nn.Module) -> None:
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})


def test_state_dict_has_torchs_names_and_round_trips():
    ours, theirs = Net(), TorchNet()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.state_dict()["bn.num_batches_tracked"].dtype == np.int64
    _copy_into_torch(ours, theirs)  # strict: every key and shape fits
    other = Net()
    other.conv.weight.data[...] = 7.0
    other.bn.running_var.data[...] = 3.0
    other.bn.num_batches_tracked[...] = 9
    ours.load_state_dict(other.state_dict())
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[k], v)
    names = [n for n, _ in ours.named_parameters()]
    assert "bn.running_mean" not in names and "bn.weight" in names


def test_train_and_eval_reach_every_sub_module():
    net = Sequential(Net(), Dropout(0.1))
    assert net.training and net[0].bn.training
    assert net.eval() is net
    assert not net.training and not net[0].bn.training and not net[1].training
    net.train()
    assert net[0].drop.training and net[1].training
    with pytest.raises(TypeError, match="mode must be a bool"):
        net.train("no")


def test_net_matches_torch_in_eval_and_train_mode_over_several_steps():
    ours, theirs = Net(), TorchNet()
    _copy_into_torch(ours, theirs)
    ours.drop.p = theirs.drop.p = 0.0  # dropout's masks come from different generators
    rng = np.random.default_rng(0)
    for step in range(4):
        x = rng.normal(size=(5, 2, 4, 4)) * (step + 1)
        if step == 3:
            ours.eval(), theirs.eval()
        out = ours(Tensor(x))
        ref = theirs(torch.tensor(x))
        np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=0, atol=FWD)
        upstream = rng.normal(size=out.shape)
        ours.zero_grad(), theirs.zero_grad()
        out.backward(upstream)
        ref.backward(torch.tensor(upstream))
        for name, p in ours.named_parameters():
            expected = dict(theirs.named_parameters())[name].grad.numpy()
            np.testing.assert_allclose(p.grad, expected, rtol=0, atol=GRAD, err_msg=name)
        for name, value in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[name], value.numpy(), rtol=0, atol=FWD)
    assert int(ours.bn.num_batches_tracked) == 3


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)])
def test_batchnorm1d_running_statistics_like_torch(shape, momentum):
    ours = BatchNorm1d(3, momentum=momentum)
    theirs = torch.nn.BatchNorm1d(3, momentum=momentum, dtype=torch.float64)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = rng.normal(2.0, 3.0, size=shape)
        np.testing.assert_allclose(
            ours(Tensor(x)).data, theirs(torch.tensor(x)).detach().numpy(), rtol=0, atol=FWD
        )
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[name], value.numpy(), rtol=0, atol=FWD)
    ours.eval(), theirs.eval()
    x = rng.normal(size=shape)
    np.testing.assert_allclose(
        ours(Tensor(x)).data, theirs(torch.tensor(x)).detach().numpy(), rtol=0, atol=FWD
    )


def test_batchnorm_without_running_stats_uses_the_batch_in_eval_too():
    ours = BatchNorm2d(2, track_running_stats=False)
    theirs = torch.nn.BatchNorm2d(2, track_running_stats=False, dtype=torch.float64)
    assert set(ours.state_dict()) == set(theirs.state_dict())
    x = np.random.default_rng(2).normal(size=(3, 2, 2, 2))
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(
        ours(Tensor(x)).data, theirs(torch.tensor(x)).detach().numpy(), rtol=0, atol=FWD
    )


def test_pools_flatten_embedding_and_dropout_modules():
    x = np.random.default_rng(3).normal(size=(2, 3, 6, 6))
    for ours, theirs in (
        (MaxPool2d(3, 2, 1), torch.nn.MaxPool2d(3, 2, 1)),
        (AvgPool2d(2), torch.nn.AvgPool2d(2)),
        (Flatten(), torch.nn.Flatten()),
        (Flatten(0, 2), torch.nn.Flatten(0, 2)),
    ):
        np.testing.assert_allclose(
            ours(Tensor(x)).data, theirs(torch.tensor(x)).numpy(), rtol=0, atol=FWD
        )
    emb = Embedding(5, 2, padding_idx=0, seed=0)
    ref = torch.nn.Embedding(5, 2, padding_idx=0, dtype=torch.float64)
    _copy_into_torch(emb, ref)
    idx = np.array([[0, 4], [2, 0]])
    np.testing.assert_array_equal(emb(idx).data, ref(torch.tensor(idx)).detach().numpy())
    drop = Dropout(0.5, seed=1)
    t = Tensor(np.ones((4, 4)))
    assert drop.eval()(t) is t
    assert (drop.train()(t).data == 0).any()
    with pytest.raises(
        ValueError,
        match=r"flatten: start_dim 1 comes after end_dim 0 \(shape \(2, 3\)\)",
    ):
        Flatten(1, 0)(Tensor(np.zeros((2, 3))))


INVALID = [
    (
        lambda: Conv2d(3, 4, 3, groups=2),
        ValueError,
        "in_channels 3 and out_channels 4 must both be divisible by groups 2",
    ),
    (lambda: Conv2d(0, 4, 3), ValueError, "Conv2d in_channels must be a positive whole number"),
    (lambda: Conv2d(1, 4, 0), ValueError, "Conv2d kernel_size must be a positive whole number"),
    (
        lambda: BatchNorm2d(3)(Tensor(np.zeros((2, 3)))),
        ValueError,
        r"BatchNorm2d: expected a \(N, C, H, W\) input, got \(2, 3\)",
    ),
    (
        lambda: BatchNorm1d(3)(Tensor(np.zeros((2, 4)))),
        ValueError,
        r"input \(2, 4\) has 4 channels, expected 3",
    ),
    (lambda: Dropout(-0.1), ValueError, "p must be a probability"),
    (lambda: Embedding(4, 2, padding_idx=4), ValueError, "padding_idx must be an int from -4 to 3"),
    (
        lambda: LayerNorm(0),
        ValueError,
        "LayerNorm normalized_shape must be a positive whole number",
    ),
]


@pytest.mark.parametrize("call,error,message", INVALID)
def test_invalid_layers_name_the_problem(call, error, message):
    with pytest.raises(error, match=message):
        call()
