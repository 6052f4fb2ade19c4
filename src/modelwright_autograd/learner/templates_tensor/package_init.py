"""{{description}}"""

from .engine import Tensor, cross_entropy
from .nn import MLP, Linear

__all__ = ["MLP", "Linear", "Tensor", "cross_entropy"]
