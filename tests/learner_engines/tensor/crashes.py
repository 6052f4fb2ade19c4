"""A tensor engine whose backward() crashes the interpreter itself (reads address 0)."""

import ctypes

import numpy as np


class Tensor:
    def __init__(self, data, _children=(), _op=""):
        self.data = np.array(data, dtype=float)
        self.grad = np.zeros_like(self.data)
        self._prev = set(_children)
        self._backward = lambda: None

    def sum(self, axis=None, keepdims=False):
        return Tensor(self.data.sum(axis=axis, keepdims=keepdims), (self,), "sum")

    def backward(self):
        ctypes.string_at(0)
