"""modelwright-autograd: reverse-mode automatic differentiation, built from scratch.

``Value`` is the scalar engine and ``MLP`` the neural net built on it; ``Tensor`` is the same
engine over NumPy arrays (its nets in ``tensor_nn``, its losses in ``functional``); ``SGD``
and ``Adam`` update anything with ``.data`` and ``.grad``; ``gradcheck`` compares gradients
with finite differences; ``draw_graph`` and the ``explain`` module show a backward pass
at work.
"""

from .engine import Value
from .explain import draw_graph, save_graph
from .gradcheck import GradcheckError, gradcheck, gradcheck_tensor
from .graph import is_grad_enabled, no_grad
from .losses import bce_with_logits, mse_loss, svm_loss
from .nn import MLP, Layer, Module, Neuron
from .optim import SGD, Adam
from .tensor import Tensor, cat, stack

__all__ = [
    "MLP",
    "SGD",
    "Adam",
    "GradcheckError",
    "Layer",
    "Module",
    "Neuron",
    "Tensor",
    "Value",
    "bce_with_logits",
    "cat",
    "draw_graph",
    "gradcheck",
    "gradcheck_tensor",
    "is_grad_enabled",
    "mse_loss",
    "no_grad",
    "save_graph",
    "stack",
    "svm_loss",
]

__version__ = "0.1.0"
