"""Adam on Tensors keeps its state in flat arrays (optim.py, flat_state.py): the results
are torch.optim.Adam's, the parameters stay the user's own arrays, and a parameter that
misses a gradient still counts its own steps, as in torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from modelwright_autograd import Adam, Tensor


def _pair(shapes, dtype=np.float64):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    return ours, theirs, rng


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_flat_adam_matches_torch_when_a_parameter_misses_a_gradient(weight_decay):
    ours, theirs, rng = _pair([(3, 4), (4,), (2, 3)])
    opt = Adam(ours, lr=0.05, weight_decay=weight_decay)
    topt = torch.optim.Adam(theirs, lr=0.05, weight_decay=weight_decay)
    for step in range(5):
        for k, (p, t) in enumerate(zip(ours, theirs)):
            g = rng.standard_normal(p.shape)
            missing = step == 1 and k == 2  # the last parameter skips step 1
            p.grad = None if missing else g.copy()
            t.grad = None if missing else torch.from_numpy(g.copy())
        opt.step()
        topt.step()
        for p, t in zip(ours, theirs):
            np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_flat_adam_updates_the_parameters_own_arrays_in_place():
    ours, _, rng = _pair([(3, 4), (4,)])
    arrays = [p.data for p in ours]
    before = [a.copy() for a in arrays]
    opt = Adam(ours, lr=0.1)
    for p in ours:
        p.grad = rng.standard_normal(p.shape)
    opt.step()
    for p, a, b in zip(ours, arrays, before):
        assert p.data is a and a.base is None  # still the user's array, not a view
        assert not np.array_equal(a, b)


def test_float32_parameters_stay_float32():
    ours, theirs, rng = _pair([(2, 2), (2,)], np.float32)
    opt, topt = Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1)
    for _ in range(3):
        for p, t in zip(ours, theirs):
            g = rng.standard_normal(p.shape).astype(np.float32)
            p.grad, t.grad = g.copy(), torch.from_numpy(g.copy())
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        assert p.data.dtype == np.float32
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-6)


def _mlp_and_separate_copies(dtype=np.float64):
    """A tensor_nn.MLP's parameters (views of one buffer) and copies of them as separate
    arrays."""
    from modelwright_autograd.tensor import nn as tensor_nn

    model = tensor_nn.MLP(3, [5, 4, 2], seed=7, dtype=dtype)
    shared = model.parameters()
    separate = [Tensor(p.data.copy(), requires_grad=True) for p in shared]
    return shared, separate


def _set_gradients(rng, *groups):
    """The same random gradient for the i-th parameter of every group (ours or torch's)."""
    for params in zip(*groups):
        g = rng.standard_normal(params[0].shape)
        for p in params:
            p.grad = torch.from_numpy(g.copy()) if isinstance(p, torch.Tensor) else g.copy()


def test_mlp_parameters_are_views_of_one_buffer_with_their_values():
    from modelwright_autograd.tensor import nn as tensor_nn

    model = tensor_nn.MLP(3, [5, 2], seed=7, dtype=np.float32)
    reference = tensor_nn.Linear(3, 5, seed=np.random.default_rng(7), dtype=np.float32)
    params = model.parameters()
    buffer = params[0].data.base
    assert buffer is not None and buffer.size == sum(p.data.size for p in params)
    assert all(p.data.base is buffer and p.data.dtype == np.float32 for p in params)
    np.testing.assert_array_equal(params[0].data, reference.weight.data)
    np.testing.assert_array_equal(params[1].data, reference.bias.data)


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_adam_on_one_buffer_equals_adam_on_separate_arrays_bit_for_bit(weight_decay):
    shared, separate = _mlp_and_separate_copies()
    torch_params = [torch.tensor(p.data.copy(), requires_grad=True) for p in shared]
    opt_shared = Adam(shared, lr=0.05, weight_decay=weight_decay)
    assert opt_shared._states[0].tiled[1] is not None  # the one-subtraction path is the one tested
    opt_separate = Adam(separate, lr=0.05, weight_decay=weight_decay)
    topt = torch.optim.Adam(torch_params, lr=0.05, weight_decay=weight_decay)
    rng = np.random.default_rng(5)
    arrays = [p.data for p in shared]
    for _ in range(4):
        _set_gradients(rng, shared, separate, torch_params)
        opt_shared.step()
        opt_separate.step()
        topt.step()
    for a, b, t, array in zip(shared, separate, torch_params, arrays):
        assert a.data is array  # updated in place, still the module's view
        np.testing.assert_array_equal(a.data, b.data)
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_adam_updates_a_parameter_whose_data_was_replaced():
    shared, separate = _mlp_and_separate_copies()
    opt_shared, opt_separate = Adam(shared, lr=0.1), Adam(separate, lr=0.1)
    rng = np.random.default_rng(6)
    for step in range(3):
        if step == 1:  # the user swaps in an array of their own: no longer in the buffer
            shared[0].data = shared[0].data.copy()
        _set_gradients(rng, shared, separate)
        opt_shared.step()
        opt_separate.step()
    for a, b in zip(shared, separate):
        np.testing.assert_array_equal(a.data, b.data)


@pytest.mark.parametrize("weight_decay", [0.0, 2e-4])
def test_sgd_on_one_buffer_equals_sgd_on_separate_arrays_bit_for_bit(weight_decay):
    from modelwright_autograd import SGD

    shared, separate = _mlp_and_separate_copies()
    torch_params = [torch.tensor(p.data.copy(), requires_grad=True) for p in shared]
    opt_shared = SGD(shared, lr=0.3, weight_decay=weight_decay)
    state = opt_shared._states[0]
    assert state.gather_pays and state.shared_buffer() is not None  # tested here
    opt_separate = SGD(separate, lr=0.3, weight_decay=weight_decay)
    topt = torch.optim.SGD(torch_params, lr=0.3, weight_decay=weight_decay)
    rng = np.random.default_rng(8)
    for step in range(4):
        if step == 2:  # a replaced .data leaves the buffer: the per-array step takes over
            shared[1].data = shared[1].data.copy()
        _set_gradients(rng, shared, separate, torch_params)
        opt_shared.step()
        opt_separate.step()
        topt.step()
    for a, b, t in zip(shared, separate, torch_params):
        np.testing.assert_array_equal(a.data, b.data)
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_sgd_gathers_only_small_parameters():
    """The one-buffer SGD step gathers every gradient first: it pays for small parameters
    (the moons MLP's) and is left to the per-parameter step for larger ones."""
    from modelwright_autograd import SGD
    from modelwright_autograd.tensor import nn as tensor_nn

    small = tensor_nn.MLP(2, [16, 16, 1], seed=0).parameters()
    large = tensor_nn.MLP(64, [128, 64, 10], seed=0).parameters()
    assert SGD(small, lr=0.1)._states[0].gather_pays
    assert not SGD(large, lr=0.1)._states[0].gather_pays


@pytest.mark.parametrize("optimizer", ["SGD", "SGD momentum", "Adam"])
@pytest.mark.parametrize("tiled", [True, False], ids=["one buffer", "separate arrays"])
@pytest.mark.parametrize("bad_shape", [(1, 4), (1,)], ids=str)
def test_a_gradient_of_the_wrong_shape_is_refused_not_broadcast(optimizer, tiled, bad_shape):
    """NumPy would broadcast a (1,) gradient into a (4,) bias, and a flat copy would take a
    (1, 4) one as the bias's numbers: a gradient must have its parameter's shape."""
    import modelwright_autograd as mw

    shared, separate = _mlp_and_separate_copies()
    params = shared if tiled else separate
    for p in params:
        p.grad = np.ones_like(p.data)
    params[3].grad = np.ones(bad_shape)  # the second layer's bias has shape (4,)
    kind, _, momentum = optimizer.partition(" ")
    opt = mw.Adam(params, lr=0.1) if kind == "Adam" else mw.SGD(params, 0.1, 0.9 * bool(momentum))
    before = [p.data.copy() for p in params]
    with pytest.raises(
        ValueError, match=r"parameter 3 has shape \(4,\) but its gradient has shape"
    ):
        opt.step()
    for p, b in zip(params, before):  # checked before any parameter moves
        np.testing.assert_array_equal(p.data, b)


def test_weight_decay_is_added_in_the_gradients_dtype():
    """g + weight_decay * p with a float64 gradient on a float32 parameter is computed in
    float64, as before, and rounded once when the parameter is updated."""
    from modelwright_autograd import SGD

    p = Tensor(np.array([1.0, 3.0], dtype=np.float32), requires_grad=True)
    p.grad = np.array([1e-9, 1.0 / 3.0])
    expected = (p.data - 1.0 * (p.grad + 0.1 * p.data)).astype(np.float32)
    SGD([p], lr=1.0, weight_decay=0.1).step()
    np.testing.assert_array_equal(p.data, expected)
