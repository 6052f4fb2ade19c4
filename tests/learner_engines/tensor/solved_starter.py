"""The tensor starter of `modelwright-autograd init --tensor` with every TODO filled in,
engine.py and nn.py in one file: it passes the build gate, and each engine of variants.py
beside it is this file with a few lines changed."""

import numpy as np


class Tensor:
    def __init__(self, data, _children=(), _op=""):
        self.data = np.array(data, dtype=float)  # a copy, so the caller's array stays theirs
        self.grad = np.zeros_like(self.data)  # d(final output) / d(data), same shape
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None  # a leaf has no inputs: nothing to push

    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"Tensor(shape={self.data.shape}, op={self._op!r})"

    # ------------------------------------------------------------------ elementwise
    def __add__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += unbroadcast(out.grad, self.shape)
            other.grad += unbroadcast(out.grad, other.shape)

        out._backward = _backward
        return out

    def __sub__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data - other.data, (self, other), "-")

        def _backward():
            self.grad += unbroadcast(out.grad, self.shape)
            other.grad += unbroadcast(-out.grad, other.shape)

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += unbroadcast(other.data * out.grad, self.shape)
            other.grad += unbroadcast(self.data * out.grad, other.shape)

        out._backward = _backward
        return out

    def __truediv__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data / other.data, (self, other), "/")

        def _backward():
            self.grad += unbroadcast(out.grad / other.data, self.shape)
            other.grad += unbroadcast(-self.data / other.data**2 * out.grad, other.shape)

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ matrices
    def __matmul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data @ other.data, (self, other), "@")

        def _backward():
            a, b, g = self.data, other.data, out.grad
            if a.ndim == 1 and b.ndim == 1:  # a dot product: out is a number
                self.grad += g * b
                other.grad += g * a
                return
            a2 = a[None, :] if a.ndim == 1 else a  # a row
            b2 = b[:, None] if b.ndim == 1 else b  # a column
            g2 = np.expand_dims(g, -2) if a.ndim == 1 else g
            g2 = np.expand_dims(g2, -1) if b.ndim == 1 else g2
            grad_a = g2 @ np.swapaxes(b2, -1, -2)
            grad_b = np.swapaxes(a2, -1, -2) @ g2
            if a.ndim == 1:
                grad_a = grad_a.squeeze(-2)
            if b.ndim == 1:
                grad_b = grad_b.squeeze(-1)
            self.grad += unbroadcast(grad_a, self.shape)
            other.grad += unbroadcast(grad_b, other.shape)

        out._backward = _backward
        return out

    def transpose(self, *axes):
        """Reverses the axes, or puts them in the order given (as NumPy's transpose)."""
        order = axes or tuple(reversed(range(self.data.ndim)))
        out = Tensor(np.transpose(self.data, order), (self,), "transpose")

        def _backward():
            self.grad += np.transpose(out.grad, np.argsort(order))

        out._backward = _backward
        return out

    @property
    def T(self):
        return self.transpose()

    def reshape(self, *shape):
        out = Tensor(self.data.reshape(shape), (self,), "reshape")

        def _backward():
            self.grad += out.grad.reshape(self.shape)

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, keepdims=False):
        out = Tensor(self.data.sum(axis=axis, keepdims=keepdims), (self,), "sum")

        def _backward():
            g = out.grad
            if axis is not None and not keepdims:
                g = np.expand_dims(g, axis)
            self.grad += g  # broadcast over the summed axes

        out._backward = _backward
        return out

    def mean(self, axis=None, keepdims=False):
        out = Tensor(self.data.mean(axis=axis, keepdims=keepdims), (self,), "mean")

        def _backward():
            g = out.grad
            if axis is not None and not keepdims:
                g = np.expand_dims(g, axis)
            self.grad += g / (self.data.size // out.data.size)

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ functions
    def exp(self):
        out = Tensor(np.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self):
        out = Tensor(np.log(self.data), (self,), "log")

        def _backward():
            self.grad += out.grad / self.data

        out._backward = _backward
        return out

    def tanh(self):
        t = np.tanh(self.data)
        out = Tensor(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - out.data**2) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Tensor(np.maximum(self.data, 0.0), (self,), "relu")

        def _backward():
            self.grad += (out.data > 0) * out.grad

        out._backward = _backward
        return out

    def log_softmax(self, axis=-1):
        shifted = self.data - self.data.max(axis=axis, keepdims=True)  # no overflow in exp
        logsumexp = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        out = Tensor(shifted - logsumexp, (self,), "log_softmax")

        def _backward():
            g = out.grad
            self.grad += g - np.exp(out.data) * g.sum(axis=axis, keepdims=True)

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ the backward pass
    def backward(self):
        topo, seen, stack = [], set(), [(self, False)]
        while stack:  # an explicit stack: no recursion limit on deep graphs
            node, done = stack.pop()
            if done:
                topo.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev)
        self.grad = np.ones_like(self.data)
        for node in reversed(topo):
            node._backward()

    # Built from the ops above, so their gradients come for free.
    def __neg__(self):  # -a
        return self * -1.0

    def __radd__(self, other):  # 2 + a
        return self + other

    def __rmul__(self, other):  # 2 * a
        return self * other

    def __rsub__(self, other):  # 2 - a
        return Tensor(other) - self

    def __rtruediv__(self, other):  # 2 / a
        return Tensor(other) / self


def unbroadcast(grad, shape):
    """``grad`` (the output's shape) summed back to ``shape`` (an input's shape).

    NumPy broadcasts by (1) adding axes on the left and (2) stretching axes of size 1.
    A (3,) row added to a (2, 3) matrix was used by both rows, so its gradient is
    out.grad summed over axis 0; a (2, 1) column, over axis 1 keeping the axis."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def cross_entropy(logits, targets):
    """The mean over the batch of -log softmax(logits)[i, targets[i]]: logits (N, C), targets
    N class indices. One op with its own backward (softmax minus the one-hot, over N)."""
    targets = np.asarray(targets)
    n = logits.data.shape[0]
    shifted = logits.data - logits.data.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    out = Tensor(-log_probs[np.arange(n), targets].mean(), (logits,), "cross_entropy")

    def _backward():
        d = np.exp(log_probs)
        d[np.arange(n), targets] -= 1.0
        logits.grad += d / n * out.grad

    out._backward = _backward
    return out


# ---------------------------------------------------------------- nn.py


class Module:
    def zero_grad(self):
        for p in self.parameters():
            p.grad = np.zeros_like(p.data)

    def parameters(self):
        return []


class Linear(Module):
    """x @ W + b, with W drawn from N(0, 2 / nin) (He's scale, for a relu after it)."""

    def __init__(self, nin, nout):
        self.W = Tensor(np.random.randn(nin, nout) * np.sqrt(2.0 / nin))
        self.b = Tensor(np.zeros(nout))

    def __call__(self, x):
        return x @ self.W + self.b

    def parameters(self):
        return [self.W, self.b]


class MLP(Module):
    """MLP(64, [32, 10]): Linear layers of the given sizes, relu between them, the last one
    linear (its outputs are the logits cross_entropy takes)."""

    def __init__(self, nin, nouts):
        sizes = [nin, *nouts]
        self.layers = [Linear(sizes[i], sizes[i + 1]) for i in range(len(nouts))]

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = x.relu()
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]
