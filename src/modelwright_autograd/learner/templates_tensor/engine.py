"""A tensor autograd engine: your Tensor, over NumPy arrays.

The same idea as the scalar Value, one level up: each Tensor wraps a NumPy array `data`
and holds `grad`, an array of the same shape starting at zeros, the d(final output)/d(data)
of every element. It remembers its inputs (`_prev`), the op that made it (`_op`) and a
`_backward` function that pushes `out.grad` from this node to its inputs.

The forward of every op is written for you. Your job: the TODOs, each a `_backward` body,
the helper `unbroadcast` and `backward()` itself. Until you fill one in it raises
NotImplementedError naming it. Check your work at any time with:  modelwright-autograd check .

Three rules carry every backward here:
  * the gradient of an input has the input's shape, never the output's;
  * an input that NumPy broadcast (a row added to every row of a matrix) was used many
    times, so its gradient is the SUM of out.grad over the broadcast dimensions;
  * always +=, never =: a tensor used twice receives the gradient of both uses.
"""

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
            # TODO 3: d(a + b)/da = 1 and d(a + b)/db = 1, elementwise. Each input gets
            # out.grad summed back to its own shape: unbroadcast(out.grad, self.shape).
            raise NotImplementedError("TODO 3: the backward of a + b")

        out._backward = _backward
        return out

    def __sub__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data - other.data, (self, other), "-")

        def _backward():
            # TODO 4: d(a - b)/da = 1 and d(a - b)/db = -1, each unbroadcast.
            raise NotImplementedError("TODO 4: the backward of a - b")

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data * other.data, (self, other), "*")

        def _backward():
            # TODO 5: d(a * b)/da = b and d(a * b)/db = a, elementwise, times out.grad,
            # then each unbroadcast to its input's shape.
            raise NotImplementedError("TODO 5: the backward of a * b")

        out._backward = _backward
        return out

    def __truediv__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data / other.data, (self, other), "/")

        def _backward():
            # TODO 6: d(a / b)/da = 1 / b and d(a / b)/db = -a / b**2, times out.grad,
            # each unbroadcast.
            raise NotImplementedError("TODO 6: the backward of a / b")

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ matrices
    def __matmul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data @ other.data, (self, other), "@")

        def _backward():
            # TODO 7: for 2-D a (n, k) and b (k, m), out.grad g is (n, m):
            #   d/da = g @ b.T  (n, k)        d/db = a.T @ g  (k, m)
            # Check the shapes: each gradient has its input's shape. Then the other cases:
            #   * batches (..., n, k) @ (..., k, m): transpose the LAST TWO axes
            #     (np.swapaxes(x, -1, -2); .T reverses every axis), and unbroadcast, since
            #     a 2-D b used by every matrix of a batch gets the sum over the batch;
            #   * a 1-D operand is a row (1, k) on the left or a column (k, 1) on the right,
            #     whose added axis is dropped from its gradient again.
            raise NotImplementedError("TODO 7: the backward of a @ b")

        out._backward = _backward
        return out

    def transpose(self, *axes):
        """Reverses the axes, or puts them in the order given (as NumPy's transpose)."""
        order = axes or tuple(reversed(range(self.data.ndim)))
        out = Tensor(np.transpose(self.data, order), (self,), "transpose")

        def _backward():
            # TODO 8: out.grad moved back: transpose it by the inverse order,
            # np.argsort(order).
            raise NotImplementedError("TODO 8: the backward of transpose")

        out._backward = _backward
        return out

    @property
    def T(self):
        return self.transpose()

    def reshape(self, *shape):
        out = Tensor(self.data.reshape(shape), (self,), "reshape")

        def _backward():
            # TODO 9: the same numbers in the input's shape.
            raise NotImplementedError("TODO 9: the backward of reshape")

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, keepdims=False):
        out = Tensor(self.data.sum(axis=axis, keepdims=keepdims), (self,), "sum")

        def _backward():
            # TODO 10: every summed element gets out.grad: spread it back over the input's
            # shape. With keepdims=False the summed axis is gone from out.grad: put it back
            # first (np.expand_dims(out.grad, axis)), or (2,) will not spread over (2, 3).
            raise NotImplementedError("TODO 10: the backward of sum")

        out._backward = _backward
        return out

    def mean(self, axis=None, keepdims=False):
        out = Tensor(self.data.mean(axis=axis, keepdims=keepdims), (self,), "mean")

        def _backward():
            # TODO 11: as sum, times 1/n, n the number of elements averaged into each
            # output (self.data.size // out.data.size).
            raise NotImplementedError("TODO 11: the backward of mean")

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ functions
    def exp(self):
        out = Tensor(np.exp(self.data), (self,), "exp")

        def _backward():
            # TODO 12: d(exp a)/da = exp(a), elementwise, times out.grad.
            raise NotImplementedError("TODO 12: the backward of exp")

        out._backward = _backward
        return out

    def log(self):
        out = Tensor(np.log(self.data), (self,), "log")

        def _backward():
            # TODO 13: d(log a)/da = 1 / a, times out.grad.
            raise NotImplementedError("TODO 13: the backward of log")

        out._backward = _backward
        return out

    def tanh(self):
        t = np.tanh(self.data)
        out = Tensor(t, (self,), "tanh")

        def _backward():
            # TODO 14: d(tanh a)/da = 1 - tanh(a)**2; out.data already holds tanh(a).
            raise NotImplementedError("TODO 14: the backward of tanh")

        out._backward = _backward
        return out

    def relu(self):
        out = Tensor(np.maximum(self.data, 0.0), (self,), "relu")

        def _backward():
            # TODO 15: the gradient passes where the output is > 0, else 0.
            raise NotImplementedError("TODO 15: the backward of relu")

        out._backward = _backward
        return out

    def log_softmax(self, axis=-1):
        shifted = self.data - self.data.max(axis=axis, keepdims=True)  # no overflow in exp
        logsumexp = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        out = Tensor(shifted - logsumexp, (self,), "log_softmax")

        def _backward():
            # TODO 16: with s = softmax = exp(out.data) and g = out.grad:
            #   d/da = g - s * g.sum(axis, keepdims=True)
            raise NotImplementedError("TODO 16: the backward of log_softmax")

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ the backward pass
    def backward(self):
        # TODO 1: the backward pass, as for Value.
        #   1. sort the graph topologically: every node after all of its inputs (_prev);
        #   2. seed: the gradient of the output with respect to itself is ones of its shape
        #      (np.ones_like(self.data));
        #   3. walk the nodes in reverse order, calling each node's _backward().
        raise NotImplementedError("TODO 1: backward()")

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
    # TODO 2: undo both: sum over the leading axes grad has and shape has not, then over
    # every axis where shape has 1 and grad has more (keepdims=True). Return an array of
    # exactly `shape`.
    raise NotImplementedError("TODO 2: unbroadcast(grad, shape)")


def cross_entropy(logits, targets):
    """The mean over the batch of -log softmax(logits)[i, targets[i]]: logits (N, C), targets
    N class indices. One op with its own backward (softmax minus the one-hot, over N)."""
    targets = np.asarray(targets)
    n = logits.data.shape[0]
    shifted = logits.data - logits.data.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    out = Tensor(-log_probs[np.arange(n), targets].mean(), (logits,), "cross_entropy")

    def _backward():
        # TODO 17: d/dlogits = (softmax(logits) - onehot(targets)) / N, times out.grad.
        # softmax(logits) is np.exp(log_probs); the one-hot has a 1 at [i, targets[i]].
        raise NotImplementedError("TODO 17: the backward of cross_entropy")

    out._backward = _backward
    return out
