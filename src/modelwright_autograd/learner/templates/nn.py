"""A small neural-net library on your Value: Neuron, Layer, MLP (as micrograd's).

Built only from your Value's ops, so its gradients come from your engine. Your job: the
TODOs, numbered after engine.py's. Until you fill one in it raises NotImplementedError
naming it. Check your work at any time with:  modelwright-autograd check .
"""

import random  # noqa: F401 (TODO 9 uses it)

from .engine import Value  # noqa: F401 (TODO 9 uses it)


class Module:
    def zero_grad(self):
        # TODO 14: set every parameter's grad back to 0. A training loop calls this before
        # each backward(): backward() adds to .grad, so old gradients would pile up.
        raise NotImplementedError("TODO 14: Module.zero_grad()")

    def parameters(self):
        return []


class Neuron(Module):
    """sum(w_i * x_i) + b, then tanh unless nonlin is False."""

    def __init__(self, nin, nonlin=True):
        self.nonlin = nonlin  # False for the MLP's last layer: see __call__
        # TODO 9: self.w, nin weights, each its own Value(random.uniform(-1, 1)), and
        # self.b, a bias Value(0.0). ([Value(...)] * nin would be one Value nin times.)
        raise NotImplementedError("TODO 9: Neuron.__init__: the weights and the bias")

    def __call__(self, x):
        # TODO 10: act = w_1 * x_1 + ... + w_n * x_n + b, then act.tanh() if self.nonlin,
        # else act itself. Without the tanh, however many layers, the MLP is a straight line.
        raise NotImplementedError("TODO 10: Neuron.__call__: weighted sum, bias, tanh")

    def parameters(self):
        # TODO 11: every weight and the bias, each once: the Values themselves (not copies).
        raise NotImplementedError("TODO 11: Neuron.parameters()")


class Layer(Module):
    def __init__(self, nin, nout, **kwargs):
        # TODO 12: self.neurons, nout Neurons each reading all nin inputs (pass **kwargs on).
        raise NotImplementedError("TODO 12: Layer.__init__: the neurons")

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        # TODO 13: the parameters of every neuron, in one flat list.
        raise NotImplementedError("TODO 13: Layer.parameters()")


class MLP(Module):
    """MLP(2, [16, 16, 1]): layers of the given sizes; the last one is linear."""

    def __init__(self, nin, nouts):
        sizes = [nin, *nouts]
        self.layers = [
            Layer(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        # TODO 13 (again): the parameters of every layer, in one flat list.
        raise NotImplementedError("TODO 13: MLP.parameters()")
