"""The ops a language model needs beyond engine.py, on your Tensor.

Each op is a function that builds its node as engine.py's ops do: the forward with NumPy,
Tensor(data, children, op), and a _backward that adds (+=) into each input's grad.
Matmul over batches, reshape, transpose, tanh, log_softmax and cross_entropy are engine.py's.
"""

import math

import numpy as np
from engine import Tensor


def embedding(weight, idx):
    """Rows of weight (num, dim) picked by the integer array idx (any shape): out has
    shape idx.shape + (dim,)."""
    idx = np.asarray(idx)
    out = Tensor(weight.data[idx], (weight,), "embedding")

    def _backward():
        np.add.at(weight.grad, idx, out.grad)

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
            x.grad[where] += piece.grad

        piece._backward = _backward
        pieces.append(piece)
    return pieces


def cat(tensors, dim=-1):
    """The tensors joined along dim (np.concatenate)."""
    out = Tensor(np.concatenate([t.data for t in tensors], axis=dim), tuple(tensors), "cat")

    def _backward():
        ends = np.cumsum([t.data.shape[dim] for t in tensors])[:-1]
        for t, g in zip(tensors, np.split(out.grad, ends, axis=dim)):
            t.grad += g

    out._backward = _backward
    return out


def masked_fill(x, mask, value):
    """x with `value` where the boolean array mask (broadcast to x) is True."""
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), x.data.shape)
    out = Tensor(np.where(mask, value, x.data), (x,), "masked_fill")

    def _backward():
        x.grad += np.where(mask, 0.0, out.grad)

    out._backward = _backward
    return out


def softmax(x, dim=-1):
    """exp(x) / exp(x).sum(dim), stable: the max along dim is subtracted first."""
    e = np.exp(x.data - x.data.max(axis=dim, keepdims=True))
    s = e / e.sum(axis=dim, keepdims=True)
    out = Tensor(s, (x,), "softmax")

    def _backward():
        x.grad += s * (out.grad - (out.grad * s).sum(axis=dim, keepdims=True))

    out._backward = _backward
    return out


def sqrt(x):
    out = Tensor(np.sqrt(x.data), (x,), "sqrt")

    def _backward():
        x.grad += out.grad / (2.0 * out.data)

    out._backward = _backward
    return out


def layer_norm(x, weight, bias, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (var: 1/N)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    var = (xc * xc).mean(axis=-1, keepdims=True)
    out = xc / sqrt(var + eps) * weight
    return out if bias is None else out + bias


def gelu(x):
    """x * Phi(x), Phi the standard normal's CDF (torch's nn.GELU(), nanoGPT's)."""
    phi = 0.5 * (1.0 + np.vectorize(math.erf)(x.data / math.sqrt(2.0)))
    out = Tensor(x.data * phi, (x,), "gelu")

    def _backward():
        density = np.exp(-0.5 * x.data**2) / math.sqrt(2.0 * math.pi)
        x.grad += out.grad * (phi + x.data * density)

    out._backward = _backward
    return out


def dropout(x, p, training):
    """In training each element is zeroed with probability p and the rest scaled by
    1 / (1 - p); in eval (training False) x itself."""
    if not training or p == 0.0:
        return x
    keep = (np.random.random(x.data.shape) >= p) / (1.0 - p)
    out = Tensor(x.data * keep, (x,), "dropout")

    def _backward():
        x.grad += out.grad * keep

    out._backward = _backward
    return out
