"""The ops a language model needs beyond engine.py, on your Tensor.

Each op is a function that builds its node as engine.py's ops do: the forward with NumPy,
Tensor(data, children, op), and a _backward that adds (+=) into each input's grad. (Your
own engine, from init --tensor, works here as long as its Tensor is built that way.)
Matmul over batches, reshape, transpose, tanh, log_softmax and cross_entropy are engine.py's.

Your job: TODOs 22 to 29. Check your work at any time with:  modelwright-autograd check .
"""

import math

import numpy as np

from .engine import Tensor


def embedding(weight, idx):
    """Rows of weight (num, dim) picked by the integer array idx (any shape): out has
    shape idx.shape + (dim,)."""
    idx = np.asarray(idx)
    out = Tensor(weight.data[idx], (weight,), "embedding")

    def _backward():
        # TODO 22: out.grad row by row into the rows of weight.grad that were picked. An id
        # that appears twice (a letter twice in a batch) was used twice: its row gets the
        # sum. weight.grad[idx] += out.grad does NOT add repeats (NumPy writes each row
        # once); np.add.at(weight.grad, idx, out.grad) does.
        raise NotImplementedError("TODO 22: the backward of embedding")

    out._backward = _backward
    return out


def split(x, size, dim=-1):
    """x cut along dim into pieces of `size` (torch's x.split(size, dim)): a list."""
    dim = dim % x.data.ndim
    pieces = []
    for start in range(0, x.data.shape[dim], size):
        where = (slice(None),) * dim + (slice(start, start + size),)
        piece = Tensor(x.data[where], (x,), "split")

        def _backward(piece=piece, where=where):
            # TODO 23: this piece's gradient goes back into its own slice of x.grad (+=).
            raise NotImplementedError("TODO 23: the backward of split")

        piece._backward = _backward
        pieces.append(piece)
    return pieces


def cat(tensors, dim=-1):
    """The tensors joined along dim (np.concatenate)."""
    out = Tensor(np.concatenate([t.data for t in tensors], axis=dim), tuple(tensors), "cat")

    def _backward():
        # TODO 24: cut out.grad along dim into pieces of the inputs' sizes (np.split at the
        # running ends), each added (+=) into its tensor's grad: a tensor given twice gets
        # both of its pieces.
        raise NotImplementedError("TODO 24: the backward of cat")

    out._backward = _backward
    return out


def masked_fill(x, mask, value):
    """x with `value` where the boolean array mask (broadcast to x) is True."""
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), x.data.shape)
    out = Tensor(np.where(mask, value, x.data), (x,), "masked_fill")

    def _backward():
        # TODO 25: where mask is True the output is the constant `value`: no gradient
        # reaches x there; elsewhere out.grad passes as it is.
        raise NotImplementedError("TODO 25: the backward of masked_fill")

    out._backward = _backward
    return out


def softmax(x, dim=-1):
    """exp(x) / exp(x).sum(dim), stable: the max along dim is subtracted first."""
    # TODO 26: the forward s (subtract the max along dim before exp, or exp(1000) is inf;
    # -inf from a mask gives exp(-inf) = 0), then its backward: every output depends on
    # every input along dim, so with g = out.grad
    #     d/dx = s * (g - (g * s).sum(dim, keepdims=True)).
    raise NotImplementedError("TODO 26: softmax")


def sqrt(x):
    out = Tensor(np.sqrt(x.data), (x,), "sqrt")

    def _backward():
        x.grad += out.grad / (2.0 * out.data)

    out._backward = _backward
    return out


def layer_norm(x, weight, bias, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (var: 1/N)."""
    # TODO 27: your choice.
    #   * Composed from your ops (mean(axis=-1, keepdims=True), -, *, /, sqrt above): the
    #     gradient comes for free, mean terms included. The variance is the mean of the
    #     squares (1/N, not 1/(N - 1)).
    #   * One node with a rule of its own: with xhat = (x - mean) / std and g' = out.grad *
    #     weight, d/dx = (g' - mean(g') - xhat * mean(g' * xhat)) / std (means over the last
    #     axis); weight's gradient is out.grad * xhat and bias's out.grad, each unbroadcast.
    raise NotImplementedError("TODO 27: layer_norm")


def gelu(x):
    """x * Phi(x), Phi the standard normal's CDF (torch's nn.GELU(), nanoGPT's)."""
    phi = 0.5 * (1.0 + np.vectorize(math.erf)(x.data / math.sqrt(2.0)))
    out = Tensor(x.data * phi, (x,), "gelu")

    def _backward():
        # TODO 28: d/dx x * Phi(x) = Phi(x) + x * phi(x), phi the normal density
        # exp(-x**2 / 2) / sqrt(2 pi); times out.grad.
        raise NotImplementedError("TODO 28: the backward of gelu")

    out._backward = _backward
    return out


def dropout(x, p, training):
    """In training each element is zeroed with probability p and the rest scaled by
    1 / (1 - p); in eval (training False) x itself."""
    # TODO 29: in eval, x unchanged. In training, a mask keep = (np.random.random(shape)
    # >= p) / (1 - p): out = x * keep, and the backward multiplies out.grad by the same mask.
    raise NotImplementedError("TODO 29: dropout")
