"""A small neural-net library on your Tensor: Linear and MLP.

Where the scalar MLP made one Value per weight, a layer here is two Tensors: the weights W,
(nin, nout), and the bias b, (nout,). A batch of inputs x, (N, nin), goes through in one
matrix product: x @ W + b is (N, nout), b broadcast over the rows (your unbroadcast sums
its gradient back).
"""

import numpy as np

from .engine import Tensor


class Module:
    def zero_grad(self):
        # TODO 19: set every parameter's grad back to zeros of its shape; backward() adds
        # (+=) into grad, so without this each step would add the last one's gradients.
        raise NotImplementedError("TODO 19: zero_grad()")

    def parameters(self):
        return []


class Linear(Module):
    """x @ W + b, with W drawn from N(0, 2 / nin) (He's scale, for a relu after it)."""

    def __init__(self, nin, nout):
        self.W = Tensor(np.random.randn(nin, nout) * np.sqrt(2.0 / nin))
        self.b = Tensor(np.zeros(nout))

    def __call__(self, x):
        # TODO 18: the layer's output for a batch x of shape (N, nin), using your Tensor's
        # ops, so that the gradient reaches W and b.
        raise NotImplementedError("TODO 18: Linear's forward")

    def parameters(self):
        return [self.W, self.b]


class MLP(Module):
    """MLP(64, [32, 10]): Linear layers of the given sizes, relu between them, the last one
    linear (its outputs are the logits cross_entropy takes)."""

    def __init__(self, nin, nouts):
        sizes = [nin, *nouts]
        self.layers = [Linear(sizes[i], sizes[i + 1]) for i in range(len(nouts))]

    def __call__(self, x):
        # TODO 20: every layer in turn, relu after each one but the last. (Without the
        # relu the whole network is one affine map, x @ W + b, whatever its depth.)
        raise NotImplementedError("TODO 20: MLP's forward")

    def parameters(self):
        # TODO 21: the parameters of every layer, in one list.
        raise NotImplementedError("TODO 21: MLP's parameters()")
