"""Build your own engine: the starter ``modelwright-autograd init`` writes and the grader
``modelwright-autograd check`` that runs a learner's engine in a child process
(``child``/``probe``), compares it with PyTorch or finite differences (``oracle``) on
small programs (``programs``) and names the bug (``grader``, ``report``; ``tensor_grader``
for a tensor engine).
``gradcheck_random`` (``exercise``) is exercise 6 for the learner's own Value."""

from .exercise import gradcheck_random

__all__ = ["gradcheck_random"]
