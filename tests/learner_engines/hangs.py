"""An engine whose backward() never returns: the grader must stop it and say so."""


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), "+")

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data * other.data, (self, other), "*")

    def backward(self):
        stack = [self]
        while stack:  # never pops: an infinite loop
            node = stack[-1]
            stack.extend(node._prev)
            stack = stack[-1:]
