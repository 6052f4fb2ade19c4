"""modelwright-autograd: reverse-mode automatic differentiation, built from scratch.

``Value`` is the scalar engine and ``MLP`` the neural net built on it; ``SGD`` and ``Adam``
update anything with ``.data`` and ``.grad``; ``gradcheck`` compares gradients with finite
differences.
"""

from .engine import Value
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
    "gradcheck",
    "gradcheck_tensor",
    "is_grad_enabled",
    "mse_loss",
    "no_grad",
    "stack",
    "svm_loss",
]

__version__ = "0.1.0"
