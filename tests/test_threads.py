"""Work split over threads (tensor/threads.py): the spans, the runner, and the rules that
use it giving the same numbers at every thread count, equal to torch at sizes that take
many blocks."""

import itertools
import signal
import threading
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from threadpoolctl import threadpool_info

import modelwright_autograd.tensor as T
from modelwright_autograd.tensor import functional as F
from modelwright_autograd.tensor import threads


@pytest.fixture
def thread_count():
    """Set the count for a test and put the old one back."""
    old = threads.get_num_threads()
    yield threads.set_num_threads
    threads.set_num_threads(old)


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("n, size", [(1, 1), (7, 1), (48, 4096), (384, 65536), (10**6, 1)])
def test_spans_cover_the_range_in_order_in_shares_of_equal_count(thread_count, count, n, size):
    thread_count(count)
    parts = threads.spans(n, size)
    assert parts[0][0] == 0 and parts[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))
    assert all(stop > start for start, stop in parts)
    if n * size > threads.BLOCK_ELEMENTS and n >= count:
        assert len(parts) >= count
    assert max(stop - start for start, stop in parts) * size <= max(threads.BLOCK_ELEMENTS, size)


def test_no_spans_for_nothing():
    assert threads.spans(0, 5) == []


def test_run_keeps_to_this_thread_below_two_spans_a_thread(thread_count):
    thread_count(4)
    names = set()
    threads.run(lambda i, j: names.add(threading.current_thread().name), [(0, 1), (1, 2)])
    assert names == {threading.current_thread().name}


@pytest.mark.parametrize("count", [1, 2, 4])
def test_run_calls_every_span_once_and_uses_the_threads_asked_for(thread_count, count):
    thread_count(count)
    seen, names = [], set()

    def work(i, j):
        time.sleep(0.01)  # long enough that the runs overlap, each on its own thread
        seen.append((i, j))
        names.add(threading.current_thread().name)

    parts = [(i, i + 1) for i in range(8)]
    threads.run(work, parts)
    assert sorted(seen) == parts
    assert len(names) == count


def test_run_raises_an_error_once_every_thread_has_stopped(thread_count):
    """The thread whose span raises stops there (spans 4..7 are its run); the other ends
    its run before the error reaches the caller, and nothing runs after."""
    thread_count(2)
    ended = []

    def work(i, j):
        time.sleep(0.01)
        if i == 5:
            raise ZeroDivisionError("span 5")
        ended.append(i)

    with pytest.raises(ZeroDivisionError, match="span 5"):
        threads.run(work, [(i, i + 1) for i in range(8)])
    assert sorted(ended) == [0, 1, 2, 3, 4]
    time.sleep(0.05)
    assert sorted(ended) == [0, 1, 2, 3, 4]


def test_run_on_threads_puts_blas_back_as_it_was(thread_count):
    thread_count(2)
    before = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
    inside = []
    threads.run(lambda i, j: inside.append(threadpool_info()), [(i, i + 1) for i in range(4)])
    assert [(i["internal_api"], i["num_threads"]) for i in threadpool_info()] == before
    blas = [i for i in inside[0] if i["user_api"] == "blas"]
    assert blas and all(i["num_threads"] == 1 for i in blas)


def test_runs_from_two_threads_at_once_put_blas_back_as_it_was(thread_count):
    thread_count(2)
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    def call(pause):
        threads.run(lambda i, j: time.sleep(pause), [(i, i + 1) for i in range(4)])

    first = threading.Thread(target=call, args=(0.05,))
    second = threading.Thread(target=call, args=(0.2,))
    first.start()
    time.sleep(0.02)
    second.start()
    first.join()
    second.join()
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before


def test_the_helper_threads_leave_ctrl_c_and_sigterm_to_the_main_thread(thread_count):
    thread_count(2)
    masks = {}

    def work(i, j):
        time.sleep(0.01)
        masks[threading.current_thread().name] = signal.pthread_sigmask(signal.SIG_BLOCK, [])

    threads.run(work, [(i, i + 1) for i in range(4)])
    helpers = [mask for name, mask in masks.items() if name != threading.current_thread().name]
    assert helpers and all({signal.SIGINT, signal.SIGTERM} <= mask for mask in helpers)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_refuses_what_is_not_a_positive_integer(bad):
    with pytest.raises(ValueError, match="positive integer"):
        threads.set_num_threads(bad)


# Attention whose scores take many blocks: (8, 8) pairs of 128 x 128 scores is a million
# elements, four blocks; q, k and v views into one projection, as the GPT's
BIG = (8, 8, 128, 32)


def _attention(count, dropout_p, generator, dtype=np.float64):
    b, h, length, e = BIG
    rng = np.random.default_rng(5)
    qkv = T.Tensor(rng.standard_normal((b, length, 3, h, e)).astype(dtype), requires_grad=True)
    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
    threads.set_num_threads(count)
    out = F.scaled_dot_product_attention(
        q, k, v, dropout_p=dropout_p, is_causal=True, generator=generator
    )
    out.backward(np.random.default_rng(6).standard_normal(out.shape).astype(dtype))
    return qkv, out


@pytest.mark.parametrize("dropout_p", [0.0, 0.2])
def test_attention_on_many_blocks_matches_torch_and_every_thread_count(thread_count, dropout_p):
    seed = 3
    qkv, out = _attention(1, dropout_p, seed)
    for count in (2, 3):
        other_qkv, other = _attention(count, dropout_p, seed)
        np.testing.assert_array_equal(other.data, out.data)
        np.testing.assert_array_equal(other_qkv.grad, qkv.grad)
    keep = np.random.default_rng(seed).random((*out.shape[:-1], BIG[2])) >= dropout_p
    theirs = torch.tensor(qkv.data, requires_grad=True)
    q, k, v = (theirs[:, :, i].transpose(1, 2) for i in range(3))
    weights = TF.softmax(
        (q @ k.transpose(-2, -1)) / np.sqrt(BIG[3])
        + torch.full(BIG[2:3] * 2, -torch.inf, dtype=q.dtype).triu(1),
        dim=-1,
    )
    expected = (weights * torch.tensor(keep) / (1 - dropout_p)) @ v
    expected.backward(torch.tensor(np.random.default_rng(6).standard_normal(out.shape)))
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(qkv.grad, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_attention_float32_on_many_blocks_is_the_same_at_every_thread_count(thread_count):
    qkv, out = _attention(1, 0.1, 4, np.float32)
    other_qkv, other = _attention(2, 0.1, 4, np.float32)
    np.testing.assert_array_equal(other.data, out.data)
    np.testing.assert_array_equal(other_qkv.grad, qkv.grad)


@pytest.mark.parametrize("count", [1, 2])
def test_dropout_masks_on_threads_are_one_draw_in_order(thread_count, count):
    """A seed, a Generator of each kind (PCG64's jump ahead on threads, the others draw in
    order first), a RandomState and NumPy's global generator: the mask of
    ``random(shape) >= p`` and the generator left as that one draw leaves it."""
    thread_count(count)
    x = T.Tensor(np.random.default_rng(0).standard_normal((700, 1000)), requires_grad=True)
    p = 0.3
    kinds = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)
    makers = [lambda: 17] + [lambda kind=kind: np.random.Generator(kind(17)) for kind in kinds]
    makers.append(lambda: np.random.RandomState(17))
    for make in makers:
        rng, expected = make(), make()
        if isinstance(expected, int):
            expected = np.random.default_rng(expected)
        out = F.dropout(x, p, generator=rng)
        keep = expected.random(x.shape) >= p
        np.testing.assert_array_equal(out.data, x.data * np.where(keep, 1 / (1 - p), 0.0))
        if not isinstance(rng, int):
            assert rng.random() == expected.random()
    np.random.seed(8)
    out = F.dropout(x, p)
    np.random.seed(8)
    keep = np.random.random(x.shape) >= p
    np.testing.assert_array_equal(out.data, x.data * np.where(keep, 1 / (1 - p), 0.0))
    out.backward(np.ones(x.shape))
    np.testing.assert_array_equal(x.grad, np.where(keep, 1 / (1 - p), 0.0))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_on_many_blocks_matches_torch_and_every_thread_count(thread_count, approximate, dtype):
    """1.1 million elements: five blocks, shared among the threads (float32's erf form
    has its own fast path)."""
    data = np.random.default_rng(1).standard_normal((1000, 1100)).astype(dtype) * 3
    upstream = np.random.default_rng(2).standard_normal(data.shape).astype(dtype)
    results = []
    for count in (1, 2, 3):
        thread_count(count)
        x = T.Tensor(data, requires_grad=True)
        out = F.gelu(x, approximate=approximate)
        out.backward(upstream)
        results.append((out.data, x.grad))
    for out, grad in results[1:]:
        np.testing.assert_array_equal(out, results[0][0])
        np.testing.assert_array_equal(grad, results[0][1])
    xt = torch.tensor(data, requires_grad=True)
    expected = TF.gelu(xt, approximate=approximate)
    expected.backward(torch.tensor(upstream))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(results[0][0], expected.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(results[0][1], xt.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_on_many_blocks_matches_torch_and_every_thread_count(
    thread_count, affine, dtype
):
    """(1001, 768): three to six blocks of rows as the threads are 1 to 3 (a product per
    block would sum some rows differently: it is one over all rows)."""
    rng = np.random.default_rng(3)
    data = (rng.standard_normal((1001, 768)) * 3 + 1).astype(dtype)
    weight = (rng.standard_normal(768) + 1).astype(dtype)
    bias = rng.standard_normal(768).astype(dtype)
    upstream = rng.standard_normal(data.shape).astype(dtype)
    wanted = {"both": ("weight", "bias"), "weight": ("weight",), "bias": ("bias",)}
    affine_terms = {
        n: v for n, v in (("weight", weight), ("bias", bias)) if n in wanted.get(affine, ())
    }
    results = []
    for count in (1, 2, 3):
        thread_count(count)
        x = T.Tensor(data, requires_grad=True)
        params = {n: T.Tensor(v, requires_grad=True) for n, v in affine_terms.items()}
        out = F.layer_norm(x, (768,), **params)
        out.backward(upstream)
        results.append([out.data, x.grad, *(p.grad for p in params.values())])
    for other in results[1:]:
        for a, b in zip(other, results[0]):
            np.testing.assert_array_equal(a, b)
    xt = torch.tensor(data, requires_grad=True)
    params_t = {n: torch.tensor(v, requires_grad=True) for n, v in affine_terms.items()}
    expected = TF.layer_norm(xt, (768,), **params_t)
    expected.backward(torch.tensor(upstream))
    theirs = [expected.detach(), xt.grad, *(p.grad for p in params_t.values())]
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b in zip(results[0], theirs):
        np.testing.assert_allclose(a, b.numpy(), rtol=tol, atol=tol)


def test_dropout_keeps_a_0_d_tensor_0_d():
    x = T.Tensor(np.float32(2.0), requires_grad=True)
    out = F.dropout(x, 0.5, generator=0)
    assert out.shape == ()
    out.backward()
    assert x.grad.shape == ()


def test_dropout_on_threads_leaves_a_generator_s_buffered_half_draw(thread_count):
    """PCG64 keeps half of a 64-bit draw for the next float32: jumping ahead must not lose
    it, as one draw of doubles would not."""
    thread_count(2)
    ours, expected = np.random.default_rng(1), np.random.default_rng(1)
    ours.random(dtype=np.float32)
    expected.random(dtype=np.float32)
    F.dropout(T.Tensor(np.ones((600, 1000))), 0.5, generator=ours)
    expected.random(600 * 1000)
    assert ours.random(dtype=np.float32) == expected.random(dtype=np.float32)


def test_a_mask_that_would_grow_the_scores_is_refused_in_one_line():
    q, kv = T.Tensor(np.ones((1, 3))), T.Tensor(np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"mask \(5, 4\) cannot broadcast"):
        F.scaled_dot_product_attention(q, kv, kv, attn_mask=np.zeros((5, 4)))


def test_a_mask_with_more_batch_dims_gives_the_inputs_dtype():
    """torch's scaled_dot_product_attention refuses such a mask; its composition, in the
    query's dtype, is what ours gives."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3))
    mask = rng.standard_normal((2, 4, 4))
    out = F.scaled_dot_product_attention(*(T.Tensor(a) for a in (q, k, v)), attn_mask=mask)
    qt, kt, vt = (torch.tensor(a) for a in (q, k, v))
    scores = qt @ kt.T / np.sqrt(3) + torch.tensor(mask, dtype=torch.float32)
    expected = TF.softmax(scores, dim=-1) @ vt
    assert out.dtype == np.float32 and out.shape == (2, 4, 3)
    np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-5, atol=1e-6)
