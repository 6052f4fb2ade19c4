"""A scalar autograd engine: your Value.

Each Value wraps one number and remembers how it was made: its inputs (`_prev`, the set of
child nodes), the op that made it (`_op`) and a `_backward` function that pushes the
gradient of the final output from this node to its inputs.

The forward of every op is written for you. Your job: the TODOs, each a `_backward` body
and `backward()` itself. Until you fill one in it raises NotImplementedError naming it.
Check your work at any time with:  modelwright-autograd check .
"""

import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0  # d(final output) / d(this value), filled in by backward()
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None  # a leaf has no inputs: nothing to push

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            # TODO 2: d(a + b)/da = 1 and d(a + b)/db = 1. Push out.grad to both inputs.
            # Use +=: a value used twice must receive the gradient of both uses.
            raise NotImplementedError("TODO 2: the backward of a + b")

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            # TODO 3: d(a * b)/da = b and d(a * b)/db = a, each times out.grad.
            raise NotImplementedError("TODO 3: the backward of a * b")

        out._backward = _backward
        return out

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only a number as the exponent"
        out = Value(self.data**other, (self,), f"**{other}")

        def _backward():
            # TODO 4: the power rule: d(a ** n)/da = n * a ** (n - 1), times out.grad.
            raise NotImplementedError("TODO 4: the backward of a ** n")

        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            # TODO 5: d(tanh a)/da = 1 - tanh(a) ** 2. Which Value already holds tanh(a)?
            raise NotImplementedError("TODO 5: the backward of tanh")

        out._backward = _backward
        return out

    def relu(self):
        out = Value(0.0 if self.data < 0 else self.data, (self,), "relu")

        def _backward():
            # TODO 6: relu passes the gradient through where its output is > 0, else 0.
            raise NotImplementedError("TODO 6: the backward of relu")

        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            # TODO 7: d(exp a)/da = exp(a), times out.grad.
            raise NotImplementedError("TODO 7: the backward of exp")

        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")

        def _backward():
            # TODO 8: d(log a)/da = 1 / a, times out.grad. Which Value holds a?
            raise NotImplementedError("TODO 8: the backward of log")

        out._backward = _backward
        return out

    def backward(self):
        # TODO 1: the backward pass.
        #   1. sort the graph topologically: every node after all of its inputs (_prev);
        #   2. seed: the gradient of the output with respect to itself is 1;
        #   3. walk the nodes in reverse order, calling each node's _backward().
        raise NotImplementedError("TODO 1: backward()")

    # Built from the ops above, so their gradients come for free.
    def __neg__(self):  # -a
        return self * -1

    def __sub__(self, other):  # a - b
        return self + (-other)

    def __truediv__(self, other):  # a / b
        return self * other**-1

    def __radd__(self, other):  # 2 + a
        return self + other

    def __rmul__(self, other):  # 2 * a
        return self * other

    def __rsub__(self, other):  # 2 - a
        return other + (-self)

    def __rtruediv__(self, other):  # 2 / a
        return other * self**-1
