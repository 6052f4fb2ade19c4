"""{{description}}"""

from .engine import Value
from .nn import MLP, Layer, Neuron

__all__ = ["MLP", "Layer", "Neuron", "Value"]
