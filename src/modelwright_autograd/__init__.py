"""modelwright-autograd: reverse-mode automatic differentiation, built from scratch.

``Value`` is the scalar engine and ``MLP`` the neural net built on it; ``Tensor`` is the same
engine over NumPy arrays (its nets in ``tensor_nn``, its losses in ``functional``); ``SGD``,
``Adam`` and ``AdamW`` update anything with ``.data`` and ``.grad`` (``clip_grad_norm_``,
``LambdaLR`` and ``WarmupCosineLR`` as torch's); ``gradcheck`` compares gradients
with finite differences (``gradgradcheck`` their derivatives); ``grad``, ``jacobian``,
``hessian``, ``hvp`` and ``jvp`` are torch.autograd's functions; ``compiled`` writes a
scalar graph out once as straight-line Python, forward and backward; ``draw_graph`` and the
``explain`` module show a backward pass at work.

Only the standard-library parts (the scalar engine, its nets, losses, optimisers and
gradcheck) are imported here; the tensor engine's names load NumPy, and the pictures their
module, when first used, so ``import modelwright_autograd`` works with neither NumPy nor
Graphviz installed (pictures need Graphviz only for PNG and PDF).
"""

import os
import sys

# ``python -m modelwright_autograd`` puts the current folder first on sys.path: a learner's
# torch.py, numpy.py or json.py there would be imported into the grader (``check .``). Drop
# it before anything else is imported; the commands never import from the current folder.
if (
    "-m" in sys.orig_argv
    and sys.orig_argv[sys.orig_argv.index("-m") + 1] == __name__
    and sys.path
    and sys.path[0] in ("", os.getcwd())
):
    del sys.path[0]

import importlib.abc
import importlib.util
from importlib import import_module
from typing import Any

from .autograd import grad, hessian, hvp, jacobian, jvp
from .collector import collection_paused
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import enable_grad, is_grad_enabled, no_grad
from .optim import SGD, Adam, AdamW, LambdaLR, WarmupCosineLR, clip_grad_norm_
from .scalar.compiler import compiled
from .scalar.engine import Value, sum_values
from .scalar.losses import binary_cross_entropy_with_logits, cross_entropy, mse_loss, svm_loss
from .scalar.nn import MLP, Layer, Module, Neuron

#: The module paths from before the two engine families had folders of their own: each still
#: imports, as the same module object as its new path (``modelwright_autograd.nn`` is
#: ``modelwright_autograd.scalar.nn``), and only when first imported.
MOVED = {
    "engine": "scalar.engine",
    "nn": "scalar.nn",
    "losses": "scalar.losses",
    "tensor_nn": "tensor.nn",
    "functional": "tensor.functional",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``modelwright_autograd.<old>`` for each entry of MOVED: the new module itself."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        package, _, old = fullname.rpartition(".")
        if package != __name__ or old not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> Any:
        module = import_module(f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}")
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the old name's
        return module

    def exec_module(self, module: Any) -> None:
        """The new module ran when it was imported; it gets its own spec back."""
        module.__spec__ = module.__spec__.loader_state


sys.meta_path.append(_MovedModules())
nn = import_module(f"{__name__}.nn")  # ``from modelwright_autograd import nn``, as before

#: name -> the module that defines it, imported on first use.
_LAZY = {
    "Tensor": "tensor",
    "cat": "tensor",
    "cumsum": "tensor",
    "einsum": "tensor",
    "masked_fill": "tensor",
    "maximum": "tensor",
    "minimum": "tensor",
    "outer": "tensor",
    "stack": "tensor",
    "tril": "tensor",
    "triu": "tensor",
    "where": "tensor",
    "draw_graph": "explain",
    "save_graph": "explain",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "MLP",
    "SGD",
    "Adam",
    "AdamW",
    "GradcheckError",
    "LambdaLR",
    "Layer",
    "Module",
    "Neuron",
    "Tensor",
    "Value",
    "WarmupCosineLR",
    "binary_cross_entropy_with_logits",
    "cat",
    "clip_grad_norm_",
    "collection_paused",
    "compiled",
    "cross_entropy",
    "cumsum",
    "draw_graph",
    "einsum",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "hessian",
    "hvp",
    "is_grad_enabled",
    "jacobian",
    "jvp",
    "masked_fill",
    "maximum",
    "minimum",
    "mse_loss",
    "no_grad",
    "outer",
    "save_graph",
    "stack",
    "sum_values",
    "svm_loss",
    "tril",
    "triu",
    "where",
]

__version__ = "0.1.0"
