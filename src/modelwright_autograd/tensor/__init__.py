"""The tensor family: ``Tensor`` wraps a NumPy array and remembers how it was made.

It mirrors the scalar engine (scalar/engine.py): each op is a forward function directly above its
backward rule, written with the op-building kit so that it serves both the fast pass
(arrays) and ``backward(create_graph=True)`` (Tensors). The package is split by op family,
each module opening with its op table:

    core.py         Tensor, make_node, input checks, un-broadcasting, the backward walk
    kit.py          the op-building kit (and its ops expand, scatter, where)
    elementwise.py  arithmetic, unary functions, comparisons, relu/tanh/sigmoid
    activations.py  leaky_relu, softplus, gelu
    reductions.py   sum, mean, max/min, prod, var/std, logsumexp, norm, softmax
    shape.py        reshape, transpose, indexing, cat/stack, expand, flip, repeat, pad
    linalg.py       matmul, linear, linear_relu, outer, einsum

and, on top of the engine, the nn library as torch's: conv.py (convolution, pooling),
nn_ops.py (dropout, attention, normalisation, embedding), functional.py (``F``) and nn.py
(the layers), each imported when asked for.

Importing the package imports every op family, which binds its ops as Tensor methods.
docs/design.md explains the design, dtypes and speed.
"""

from .activations import gelu, leaky_relu, softplus
from .core import (
    Arr,
    Dims,
    Grads,
    Need,
    Operand,
    Shape,
    Tensor,
    check_tensor,
    grad_for,
    make_node,
    raw,
    result_type,
    sum_to,
    to_array,
)
from .elementwise import masked_fill, maximum, minimum, power
from .kit import (
    cos,
    erf,
    exp,
    expand,
    log,
    permute,
    prod_dims,
    scatter,
    select,
    sigmoid,
    sin,
    sum_dims,
    swapaxes,
    tanh,
    where,
    zero_where,
    zeros_like,
)
from .linalg import einsum, linear, linear_relu, outer
from .reductions import ValuesIndices, cumsum
from .shape import cat, pad, stack, tril, triu
from .threads import get_num_threads, set_num_threads

__all__ = [
    "Arr",
    "Dims",
    "Grads",
    "Need",
    "Operand",
    "Shape",
    "Tensor",
    "ValuesIndices",
    "cat",
    "check_tensor",
    "cos",
    "cumsum",
    "einsum",
    "erf",
    "exp",
    "expand",
    "gelu",
    "get_num_threads",
    "grad_for",
    "leaky_relu",
    "linear",
    "linear_relu",
    "log",
    "make_node",
    "masked_fill",
    "maximum",
    "minimum",
    "outer",
    "pad",
    "permute",
    "power",
    "prod_dims",
    "raw",
    "result_type",
    "scatter",
    "select",
    "set_num_threads",
    "sigmoid",
    "sin",
    "softplus",
    "stack",
    "sum_dims",
    "sum_to",
    "swapaxes",
    "tanh",
    "to_array",
    "tril",
    "triu",
    "where",
    "zero_where",
    "zeros_like",
]
