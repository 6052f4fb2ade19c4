"""The starter engine of `modelwright-autograd init` with every TODO filled in: it passes
the build gate, and each engine of variants.py beside it is this file with a few lines changed.

A scalar autograd engine: your Value.

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
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only a number as the exponent"
        out = Value(self.data**other, (self,), f"**{other}")

        def _backward():
            self.grad += other * self.data ** (other - 1) * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - out.data**2) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Value(0.0 if self.data < 0 else self.data, (self,), "relu")

        def _backward():
            self.grad += (out.data > 0) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")

        def _backward():
            self.grad += out.grad / self.data

        out._backward = _backward
        return out

    def backward(self):
        topo, visited, stack = [], set(), [(self, False)]
        while stack:  # depth-first with an explicit stack: no recursion limit
            node, inputs_done = stack.pop()
            if inputs_done:
                topo.append(node)
            elif node not in visited:
                visited.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()

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
