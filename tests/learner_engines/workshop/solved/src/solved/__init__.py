"""A scalar autograd engine built from scratch: Value, backward(), Neuron, Layer, MLP."""

from .engine import Value
from .nn import MLP, Layer, Neuron

__all__ = ["MLP", "Layer", "Neuron", "Value"]
