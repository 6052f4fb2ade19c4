"""The Tensor itself: construction and dtypes, the backward pass and its accumulation
rules, no_grad, and the error raised for each kind of bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import modelwright_autograd.tensor.functional as F
from modelwright_autograd import Tensor, Value, cat, no_grad, stack

# ---------------------------------------------------------------------- construction, dtype


def test_lists_and_numbers_become_float64_and_are_copied():
    assert Tensor([[1, 2], [3, 4]]).dtype == np.float64
    assert Tensor([1.5, np.float32(2.0)]).dtype == np.float64
    assert Tensor(3).dtype == np.float64 and Tensor(3).shape == ()
    assert Tensor(np.arange(3)).dtype == np.float64  # integer arrays
    assert Tensor(np.ones(2, dtype=np.float16)).dtype == np.float64
    assert Tensor(np.float32(2.0)).dtype == np.float32
    source = np.ones(3)
    t = Tensor(source)
    t.data += 1.0
    np.testing.assert_array_equal(source, np.ones(3))  # the caller's array is untouched


def test_basic_attributes_and_repr():
    t = Tensor([[1.0, 2.0]], requires_grad=True)
    assert repr(t) == "Tensor([[1., 2.]], requires_grad=True)"
    assert t.shape == (1, 2) and t.ndim == 2 and t.size() == (1, 2) and t.size(-1) == 2
    assert t.numel() == 2 and t.grad is None
    assert Tensor([[7.0]]).item() == 7.0 and isinstance(Tensor(7.0).item(), float)
    assert t.numpy() is t.data
    assert repr(Tensor([1.0], dtype=np.float32)) == "Tensor([1.], dtype=float32)"
    assert repr(t * 2) == "Tensor([[2., 4.]], op='*')"


FLOAT32_OPS = {
    "mul_number": lambda x, w: x * 0.5 + 1,
    "rsub_number": lambda x, w: 2.0 - x / 3.0,
    "pow": lambda x, w: x**2,
    "matmul": lambda x, w: x @ w.T,
    "linear": lambda x, w: F.linear(x, w),
    "exp_log_tanh": lambda x, w: (x.exp() + 1.0).log().tanh(),
    "relu_sigmoid": lambda x, w: x.relu() + x.sigmoid(),
    "reductions": lambda x, w: x.sum(0) + x.mean(0) + x.amax(0),
    "softmax": lambda x, w: x.softmax(1) + x.log_softmax(1),
    "cross_entropy": lambda x, w: F.cross_entropy(x, [0, 1]),
    "bce": lambda x, w: F.binary_cross_entropy_with_logits(x, np.zeros((2, 3))),
    "mse": lambda x, w: F.mse_loss(x, [[0, 1, 2], [3, 4, 5]]),
    "index_shape": lambda x, w: cat([x[np.array([1, 1])], x.T.reshape(2, 3)], 0),
    "stack": lambda x, w: stack([x, w], 1),
}


@pytest.mark.parametrize("op", FLOAT32_OPS)
def test_float32_in_gives_float32_data_and_grad(op):
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    w = Tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    out = FLOAT32_OPS[op](x, w)
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, dtype=np.float32))
    assert x.grad.dtype == np.float32
    assert w.grad is None or w.grad.dtype == np.float32


def test_mixed_dtypes_promote_and_each_grad_keeps_its_leaf_dtype():
    a = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    b = Tensor(np.full(3, 2.0), requires_grad=True)
    out = a * b
    assert out.dtype == np.float64
    out.sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_array_equal(a.grad, [2.0, 2.0, 2.0])


# ---------------------------------------------------------------------- the backward pass


def test_a_20000_op_chain_needs_no_recursion():
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0001
    y.backward()
    assert x.grad == pytest.approx(1.0001**20_000, rel=1e-9)  # d/dx (x * c^n) = c^n


def test_leaves_accumulate_across_graphs_like_torch():
    rng = np.random.default_rng(1)
    w0, x0 = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    w, tw = Tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    x, tx = Tensor(x0), torch.tensor(x0)
    (x @ w).tanh().sum().backward()
    (tx @ tw).tanh().sum().backward()
    np.testing.assert_allclose(w.grad, tw.grad.numpy(), rtol=1e-12, atol=1e-12)
    (w * w).exp().mean().backward()  # a second graph sharing the leaf w
    (tw * tw).exp().mean().backward()
    np.testing.assert_allclose(w.grad, tw.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_backward_twice_doubles_leaves_but_not_interior_grads():
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = Tensor([3.0, 4.0], requires_grad=True)
    c = a + b  # a and b both receive c's gradient: they must not share one array
    loss = (c * Tensor([5.0, 6.0])).sum()
    loss.backward()
    loss.backward()
    np.testing.assert_array_equal(a.grad, [10.0, 12.0])
    np.testing.assert_array_equal(b.grad, [10.0, 12.0])
    np.testing.assert_array_equal(c.grad, [5.0, 6.0])  # interior: the latest pass only
    assert loss.grad == 1.0


def test_a_gradient_handed_on_unchanged_is_not_aliased():
    x = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    r = x.reshape(4)  # reshape passes a view of its gradient on
    s = r + 0.0
    s.backward(np.ones(4))
    s.backward(np.ones(4))
    np.testing.assert_array_equal(x.grad, np.full((2, 2), 2.0))
    np.testing.assert_array_equal(s.grad, np.ones(4))
    np.testing.assert_array_equal(r.grad, np.ones(4))


def _graph(lib, arrays, requires_grad=True):
    """a, b, c leaves; h = a @ b an interior node used twice; the loss and h2."""
    if lib is torch:
        a, b, c = (torch.tensor(x, requires_grad=requires_grad) for x in arrays)
    else:
        a, b, c = (Tensor(x, requires_grad=requires_grad) for x in arrays)
    h = a @ b
    h2 = (h * c).tanh()
    return a, b, c, h, h2, (h2 * h2).sum() + h.sum()


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("chosen", [(0,), (1, 2), (3,), (0, 3)], ids=str)
def test_backward_inputs_fills_only_their_grads_like_torch(chosen, create_graph):
    """backward(inputs=...) as torch's: only the chosen tensors (a leaf or an interior
    node) get a grad; the other leaves and the other interior nodes have none."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in ((3, 4), (4, 2), (3, 2))]
    ours, theirs = _graph(Tensor, arrays), _graph(torch, arrays)
    ours[-1].backward(inputs=[ours[i] for i in chosen], create_graph=create_graph)
    theirs[-1].backward(inputs=[theirs[i] for i in chosen])
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if i not in chosen:
            assert o.grad is None, i
            continue
        mine = o.grad.data if create_graph else o.grad
        np.testing.assert_allclose(mine, t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_backward_inputs_accumulates_into_leaves_and_leaves_the_others_alone():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in ((3, 4), (4, 2), (3, 2))]
    a, b, c, _, _, loss = _graph(Tensor, arrays)
    ta, tb, tc, _, _, tloss = _graph(torch, arrays)
    loss.backward()  # every leaf
    tloss.backward(retain_graph=True)
    before = c.grad.copy()
    loss.backward(inputs=[a, b])  # adds to a's and b's only
    tloss.backward(inputs=[ta, tb])
    for o, t in ((a, ta), (b, tb), (c, tc)):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(c.grad, before)


def test_backward_inputs_errors():
    a, b, _, _, _, loss = _graph(Tensor, [np.ones((2, 2))] * 3)
    with pytest.raises(RuntimeError, match="inputs must be a Tensor or a non-empty list"):
        loss.backward(inputs=[])
    with pytest.raises(RuntimeError, match=re.escape("inputs[1] is not a Tensor")):
        loss.backward(inputs=[a, np.ones(2)])
    with pytest.raises(RuntimeError, match=re.escape("inputs[0] does not require grad")):
        loss.backward(inputs=Tensor(1.0))
    assert a.grad is None and b.grad is None  # checked before the walk


def test_backward_with_an_explicit_gradient_like_torch():
    x0 = np.array([[1.0, -2.0], [0.5, 3.0]])
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    x, tx = Tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    (x * x).backward(g)
    (tx * tx).backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad, tx.grad.numpy())


def test_one_element_non_scalar_output_is_seeded_with_one():
    x = Tensor([[2.0]], requires_grad=True)
    (x * 3.0).backward()
    np.testing.assert_array_equal(x.grad, [[3.0]])


def test_constants_get_no_grad_and_record_no_graph():
    x = Tensor([1.0, 2.0], requires_grad=True)
    c = Tensor([3.0, 4.0])
    assert not (c * 2.0).requires_grad and (c * 2.0)._prev == ()
    y = x * c
    assert y.requires_grad and y._op == "*"
    y.sum().backward()
    assert c.grad is None
    d = x.detach()
    assert not d.requires_grad and d._prev == () and d.data is x.data


def test_no_grad_is_shared_by_both_engines():
    x = Tensor([1.0], requires_grad=True)
    v = Value(2.0)
    with no_grad():
        y = x * 2.0 + 1.0
        w = v * 3.0
    assert not y.requires_grad and y._prev == ()
    assert w._prev == ()
    assert (x * 2.0).requires_grad


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "data, named",
    [
        ("3", "str '3'"),
        (None, "NoneType None"),
        (["a", "b"], "list ['a', 'b']"),
        ([1.0, None], "dtype object"),
        (np.array([1.0, 2.0], dtype=object), "dtype object"),
        (1 + 2j, "complex"),
        (np.array([1j]), "dtype complex128"),
        (True, "bool True"),
        (np.array([True]), "dtype bool"),
        ({"a": 1}, "dict"),
    ],
    ids=repr,
)
def test_non_numeric_data_is_a_type_error_naming_it(data, named):
    with pytest.raises(TypeError, match=re.escape(named)):
        Tensor(data)


def test_ragged_lists_and_bad_dtype_are_errors():
    with pytest.raises(ValueError, match="rectangular"):
        Tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="float32 or float64"):
        Tensor([1.0], dtype=np.int64)
    with pytest.raises(TypeError, match="requires_grad must be a bool"):
        Tensor([1.0], requires_grad=1)


def test_shape_errors_name_both_shapes():
    with pytest.raises(
        ValueError, match=re.escape("matmul: (3, 4) @ (5, 6): inner dimensions 4 and 5 differ")
    ):
        Tensor(np.ones((3, 4))) @ Tensor(np.ones((5, 6)))
    with pytest.raises(
        ValueError, match=re.escape("matmul: (4,) @ (3,): inner dimensions 4 and 3 differ")
    ):
        Tensor(np.ones(4)) @ Tensor(np.ones(3))
    with pytest.raises(
        ValueError, match=re.escape("batch dimensions (2,) and (3,) cannot broadcast")
    ):
        Tensor(np.ones((2, 1, 4))) @ Tensor(np.ones((3, 4, 1)))
    with pytest.raises(ValueError, match="at least one dim"):
        Tensor(2.0) @ Tensor(np.ones(3))
    a, b = Tensor(np.ones((2, 3))), Tensor(np.ones(4))
    calls = {"add": a.__add__, "sub": a.__sub__, "mul": a.__mul__, "div": a.__truediv__}
    for op, call in calls.items():
        with pytest.raises(ValueError, match=re.escape(f"{op}: shapes (2, 3) and (4,) cannot")):
            call(b)
    with pytest.raises(
        ValueError, match=re.escape("cannot reshape (2, 3) (6 elements) into (4, 2)")
    ):
        Tensor(np.ones((2, 3))).reshape(4, 2)
    with pytest.raises(
        ValueError, match=re.escape("tensor 1 has shape (2, 4) but tensor 0 has shape (2, 3)")
    ):
        cat([Tensor(np.ones((2, 3))), Tensor(np.ones((2, 4)))], 0)
    with pytest.raises(
        ValueError, match=re.escape("tensor 1 has shape (3,) but tensor 0 has shape (2,)")
    ):
        stack([Tensor(np.ones(2)), Tensor(np.ones(3))])
    with pytest.raises(ValueError, match=re.escape("input (2, 5) and weight (3, 4)")):
        F.linear(Tensor(np.ones((2, 5))), Tensor(np.ones((3, 4))))
    with pytest.raises(
        ValueError, match=re.escape("input shape (3, 1) and target shape (3,) differ")
    ):
        F.mse_loss(Tensor(np.ones((3, 1))), np.ones(3))


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda t: t.sum(dim=3), IndexError, ["dim 3", "ndim 3"]),
        (lambda t: t.mean(dim=-4), IndexError, ["dim -4", "ndim 3"]),
        (lambda t: t.amax(dim=(0, 5)), IndexError, ["dim 5", "ndim 3"]),
        (lambda t: t.softmax(3), IndexError, ["dim 3", "ndim 3"]),
        (lambda t: t.log_softmax(-7), IndexError, ["dim -7", "ndim 3"]),
        (lambda t: t.transpose(0, 9), IndexError, ["dim 9", "ndim 3"]),
        (lambda t: cat([t, t], 3), IndexError, ["dim 3", "ndim 3"]),
        (lambda t: stack([t, t], 5), IndexError, ["dim 5", "ndim 3"]),
        (lambda t: t.sum(dim=(1, -2)), ValueError, ["same dim twice"]),
        (lambda t: t.sum(dim="1"), TypeError, ["dim must be an int", "str '1'"]),
        (lambda t: t.sum(dim=1.0), TypeError, ["dim must be an int", "float 1.0"]),
        (lambda t: t.permute(0, 1), ValueError, ["not an ordering"]),
    ],
)
def test_bad_dims_name_the_dim_and_ndim(call, exc, words):
    with pytest.raises(exc) as info:
        call(Tensor(np.ones((2, 3, 4))))
    for w in words:
        assert w in str(info.value)


def test_backward_errors():
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(
        RuntimeError, match=re.escape("only for scalar outputs; this tensor has shape (2, 3)")
    ):
        (x * 2.0).backward()
    with pytest.raises(
        ValueError, match=re.escape("gradient has shape (3,) but the tensor has shape (2, 3)")
    ):
        (x * 2.0).backward(np.ones(3))
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor(1.0).backward()
    with no_grad():
        y = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_operand_index_and_loss_errors():
    t = Tensor(np.ones((2, 3)))
    with pytest.raises(TypeError, match="unsupported operand for add: Tensor and str 'a'"):
        t + "a"
    with pytest.raises(TypeError, match="unsupported operand for mul: Tensor and list"):
        t * [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="exponent must be a number or a Tensor, got str"):
        t ** "2"
    with pytest.raises(TypeError, match="unsupported operand for @"):
        t @ 2.0
    with pytest.raises(IndexError, match=re.escape("tensor shape (2, 3)")):
        t[5]
    with pytest.raises(TypeError, match="cannot be an index"):
        t[Tensor([0.0])]
    with pytest.raises(ValueError, match=re.escape("shape (2, 3) (6 elements)")):
        t.item()
    with pytest.raises(TypeError, match="item 1 is not a Tensor"):
        cat([t, np.ones((2, 3))])
    logits = Tensor(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="target 4 is out of range for 4 classes"):
        F.cross_entropy(logits, [0, 4, 1])
    with pytest.raises(IndexError, match="target -1 is out of range"):
        F.cross_entropy(logits, [0, -1, 1])
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(logits, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(TypeError, match="a Tensor holds floats"):
        F.cross_entropy(logits, Tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=re.escape("need a target of shape (3,), got (2,)")):
        F.cross_entropy(logits, [0, 1])


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint64"])
def test_cross_entropy_target_range_in_every_integer_dtype(dtype):
    """The range check is one comparison on the targets as int64 viewed unsigned: a
    negative index of a narrow type (int8's -1) must still be caught when there are more
    classes than that type's positive range, and the largest index kept must be valid."""
    classes = 300 if np.iinfo(dtype).max >= 299 else 100
    logits = Tensor(np.zeros((2, classes)), requires_grad=True)
    last = np.array([0, classes - 1], dtype=dtype)
    loss = F.cross_entropy(logits, last)
    ref = torch.nn.functional.cross_entropy(
        torch.zeros((2, classes), dtype=torch.float64), torch.tensor([0, classes - 1])
    )
    assert float(loss.data) == pytest.approx(ref.item(), abs=1e-12)
    too_big = np.array([0, classes], dtype=dtype)
    with pytest.raises(IndexError, match=f"target {classes} is out of range for {classes}"):
        F.cross_entropy(logits, too_big)
    if np.iinfo(dtype).min < 0:
        with pytest.raises(IndexError, match="target -1 is out of range"):
            F.cross_entropy(Tensor(np.zeros((2, 300))), np.array([0, -1], dtype=dtype))
    else:
        largest = np.array([0, np.iinfo(dtype).max], dtype=dtype)
        with pytest.raises(IndexError, match=f"target {np.iinfo(dtype).max} is out of range"):
            F.cross_entropy(logits, largest)
    with pytest.raises(ValueError, match=re.escape("logits must be (N, C) or (C,), got (1, 3, 4)")):
        F.cross_entropy(Tensor(np.zeros((1, 3, 4))), [0])


def test_a_gradient_shared_in_the_walk_is_never_written_through():
    """The walk hands an input the upstream gradient, or a view of one, without copying
    it (tensor/core.py, _accumulate). Then a later arrival must be added out of place, and
    a leaf must end with an array of its own: here a and b both get s's gradient, s gets a
    reshaped view of t's and then a second arrival, and a second backward accumulates."""
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = Tensor([3.0, 4.0], requires_grad=True)
    s = a + b  # s.grad flows to a and b unchanged
    t = s.reshape(2, 1)
    loss = (t * Tensor([[10.0], [20.0]])).sum() + (s * s).sum()
    loss.backward()
    # d/ds: [10, 20] through the reshape, plus 2 s = [8, 12]
    np.testing.assert_array_equal(s.grad, [18.0, 32.0])
    np.testing.assert_array_equal(t.grad, [[10.0], [20.0]])  # t's own, not s's sum
    np.testing.assert_array_equal(a.grad, [18.0, 32.0])
    assert not np.shares_memory(a.grad, b.grad) and not np.shares_memory(a.grad, s.grad)
    a.grad *= 0.5  # as clip_grad_norm_ scales in place: b and s must not move
    np.testing.assert_array_equal(b.grad, [18.0, 32.0])
    np.testing.assert_array_equal(s.grad, [18.0, 32.0])
    loss.backward()  # leaves accumulate: a 9 + 18 and 16 + 32, b twice its first
    np.testing.assert_array_equal(a.grad, [27.0, 48.0])
    np.testing.assert_array_equal(b.grad, [36.0, 64.0])
    np.testing.assert_array_equal(s.grad, [18.0, 32.0])  # interior: this pass only


def test_indexing_adds_into_a_gradient_its_input_already_owns():
    """Several slices of one tensor (attention's q, k and v) add their gradients into the
    input's own array at their keys (core.ADD_INTO), a repeated integer index summing; an
    input whose gradient is still shared (here the upstream one of s + 1) is added to out
    of place instead, leaving the array it shares untouched."""
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x * 1.0
    a, b, c, d = y[:, 0], y[:, 1:], y[np.array([0, 0, 1]), 2], y[np.array([1, 1])]
    ((a * 2.0).sum() + (b * 3.0).sum() + (c * 5.0).sum() + (d * 7.0).sum()).backward()
    # column 0: 2; columns 1 and 2: 3; (0, 2) picked twice and (1, 2) once by c: + 10, + 5;
    # row 1 picked twice by d (an embedding's lookup): + 14
    np.testing.assert_array_equal(x.grad, [[2.0, 3.0, 13.0], [16.0, 17.0, 22.0]])
    s = Tensor(np.ones((2, 2)), requires_grad=True) * 1.0
    shifted = s + 1.0  # hands s its own gradient, shared
    (shifted.sum() + (s[:, 0] * 2.0).sum()).backward()
    np.testing.assert_array_equal(s.grad, [[3.0, 1.0], [3.0, 1.0]])
    np.testing.assert_array_equal(shifted.grad, np.ones((2, 2)))


def test_sharing_survives_a_create_graph_pass_and_0_d_tensors():
    """Found by a review: after backward(create_graph=True) a leaf's grad is a Tensor, and
    an index node must then accumulate through the ordinary path; a 0-d tensor's shared
    gradient summed out of place stays a 0-d array, which an index can add into later.
    The numbers are the derivatives by hand."""
    x = Tensor(np.arange(4.0), requires_grad=True)
    (x * x).sum().backward(create_graph=True)  # grad 2x, a Tensor
    x[1:3].sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad.data), [0.0, 3.0, 5.0, 6.0])
    s = Tensor(2.0, requires_grad=True)
    (s + s).backward()
    assert type(s.grad) is np.ndarray and s.grad.shape == () and s.grad == 2.0
    (s[None] * 3.0).sum().backward()
    assert s.grad == 5.0
    v = Tensor(np.arange(3.0), requires_grad=True)
    m = v.sum()
    ((m[None] * 5.0).sum() + (m + m)).backward()
    np.testing.assert_array_equal(v.grad, [7.0, 7.0, 7.0])


def test_an_index_array_refilled_before_backward_does_not_move_the_gradient():
    """The index node keeps its own copy of an integer index array: a loop that refills
    one batch buffer (as a data loader may) before backward still gets the rows it
    indexed. Found by a review; torch raises on this instead (the index's version moved)."""
    w = Tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    rows = np.array([0, 2, 2])
    picked = w[rows]
    tupled = w[(rows, 1)]
    looked_up = F.embedding(rows, w)
    rows[:] = 3  # the buffer refilled with the next batch
    (picked.sum() + tupled.sum() + looked_up.sum()).backward()
    # rows 0 and 2 (twice) from picked and looked_up, 1 each in column 1 from tupled
    np.testing.assert_array_equal(
        w.grad, [[2.0, 3.0, 2.0], [0.0, 0.0, 0.0], [4.0, 6.0, 4.0], [0.0, 0.0, 0.0]]
    )
