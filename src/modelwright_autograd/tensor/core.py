"""The tensor engine's core: ``Tensor``, the node an op builds, and the backward walk.

A Tensor wraps a NumPy array and remembers how it was made. Its ops live by family, each
forward directly above its backward rule ``rule(g, out, ctx, need, *inputs)`` and each
module opening with its op table: elementwise.py, reductions.py, shape.py and linalg.py
(kit.py holds the op-building kit they are written with). Each family module binds its
ops as Tensor methods at its end. docs/design.md explains the design, dtypes and speed.

This module holds what every op needs: input checks, ``make_node``, un-broadcasting
(``raw``, ``sum_to``, ``grad_for``), the Tensor class and ``backward``'s walk.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np

from ..checks import describe
from ..graph import GradMode, enable_grad, topological_order

Operand = Union["Tensor", np.ndarray, float, int]
Shape = tuple[int, ...]

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_new = object.__new__


# ---------------------------------------------------------------------- input checking
def to_array(data: object, where: str, dtype: Any = None) -> np.ndarray:
    """A new float ndarray holding ``data``, or a TypeError naming what was given.

    The result never shares memory with ``data``: a parameter built from a caller's
    array must not change that array when an optimiser updates it in place.
    """
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype not in _FLOAT_DTYPES:
            raise TypeError(f"{where}: dtype must be float32 or float64, got {dtype}")
    if isinstance(data, Tensor):
        arr = data.data
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)
    elif isinstance(data, (list, tuple)) or (
        isinstance(data, numbers.Real) and not isinstance(data, bool)
    ):
        try:
            arr = np.asarray(data)
        except ValueError:  # NumPy's complaint about ragged nested lists
            raise ValueError(
                f"{where}: nested lists must be rectangular (every row the same length), "
                f"got {describe(data)}"
            ) from None
        if dtype is None and arr.dtype.kind in "fiu":
            dtype = np.dtype(np.float64)  # lists and Python numbers are float64
    else:
        raise TypeError(
            f"{where} needs real numbers (a number, nested lists of numbers or a NumPy "
            f"array), got {describe(data)}"
        )
    if arr.dtype.kind not in "fiu":
        raise TypeError(
            f"{where} needs real numbers, got {describe(data)} (NumPy dtype {arr.dtype})"
        )
    if dtype is None:
        dtype = arr.dtype if arr.dtype in _FLOAT_DTYPES else np.dtype(np.float64)
    return np.array(arr, dtype=dtype, copy=True)


def check_tensor(x: object, where: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{where} must be a Tensor, got {describe(x)}")
    return x


def lift(x: Operand, like: Any, op: str) -> Tensor:
    """x as a Tensor: Tensors pass through, NumPy arrays become constants, and a number
    becomes a constant of the dtype it promotes ``like`` (the other operand) to, as a
    Python number does in torch: float32 * 0.5 stays float32, bool * 0.5 is float64, and
    int64 + True is int64."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, numbers.Real):
        if isinstance(like, Tensor) and like.data.dtype.kind == "f":
            dtype = like.data.dtype  # a float tensor keeps its dtype: the common case, fast
        else:
            dtype = result_type(like, x)
        return make_node(np.asarray(x, dtype=dtype), (), "", None)
    if isinstance(x, np.ndarray):
        return make_node(to_array(x, f"{op} operand"), (), "", None)
    raise TypeError(f"unsupported operand for {op}: Tensor and {describe(x)}")


# ---------------------------------------------------------------------- type promotion
# torch's rules (docs/tensor-ops.md, "Result dtypes"). A dtype's category: bool < integer <
# floating. Operands come in three tiers: tensors with dims, 0-d tensors, Python numbers.
# Within a tier the highest category wins, and within a category the larger size (int32
# and int64 give int64). A lower tier counts only when its category is above the higher
# tier's: float32 * a 0-d float64 is float32, an int64 tensor * 0.5 is float. A Python
# number stands for its category's default dtype: bool, int64, and float64, this engine's
# default float (torch's is float32 unless torch.set_default_dtype(torch.float64)).
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}
_NUMBER_DTYPES = (np.dtype(np.bool_), np.dtype(np.int64), np.dtype(np.float64))


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """torch's promote_types: the higher category's dtype, or within one the larger."""
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca == cb:
        return np.promote_types(a, b)
    return a if ca > cb else b


def result_type(*operands: Any) -> np.dtype:
    """The dtype torch gives a binary op (+ - * ** where, and the dtype a comparison
    compares in) on ``operands``: Tensors, NumPy arrays (as the float Tensors they are
    lifted to) and Python numbers; None is skipped."""
    tiers: list[np.dtype | None] = [None, None, None]  # dims, 0-d, numbers
    for x in operands:
        if x is None:
            continue
        if isinstance(x, Tensor):
            dtype, tier = x.data.dtype, 0 if x.data.ndim else 1
        elif isinstance(x, np.ndarray):
            dtype = x.dtype if x.dtype in _FLOAT_DTYPES else np.dtype(np.float64)
            tier = 0 if x.ndim else 1
        else:
            kind = 0 if isinstance(x, bool) else 1 if isinstance(x, numbers.Integral) else 2
            dtype, tier = _NUMBER_DTYPES[kind], 2
        old = tiers[tier]
        tiers[tier] = dtype if old is None else _promote(old, dtype)
    result = None
    for dtype in reversed(tiers):  # numbers, then 0-d tensors, then dimensioned ones
        if dtype is not None and (
            result is None or _CATEGORY[dtype.kind] >= _CATEGORY[result.kind]
        ):
            result = dtype
    if result is None:
        raise TypeError("result_type: no operands")
    return result


def promoted(a: Tensor, b: Tensor, floating: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """a's and b's arrays in their ``result_type`` (in float64 if ``floating`` and that
    is bool or integer, as true division needs), cast only where they differ from it."""
    A, B = a.data, b.data
    if A.dtype is B.dtype and not (floating and A.dtype.kind != "f"):
        return A, B  # the common case: nothing to do
    dtype = result_type(a, b)
    if floating and dtype.kind != "f":
        dtype = _NUMBER_DTYPES[2]
    return A.astype(dtype, copy=False), B.astype(dtype, copy=False)


def wrap_dim(d: object, ndim: int, op: str, extra: int = 0) -> int:
    """Normalise one dim (negative counts from the end) or raise naming dim and ndim.

    ``extra=1`` lets the dim name a new position one past the end (for ``stack``).
    """
    if isinstance(d, bool) or not isinstance(d, numbers.Integral):
        raise TypeError(f"{op}: dim must be an int, got {describe(d)}")
    n = ndim + extra
    if not -n <= d < n:
        valid = f"valid dims are {-n} to {n - 1}" if n else "it has no dims"
        raise IndexError(f"{op}: dim {d} is out of range for a tensor with ndim {ndim} ({valid})")
    return int(d) % n


def wrap_dims(dim: int | Sequence[int] | None, ndim: int, op: str) -> tuple[int, ...] | None:
    """Normalise ``dim`` for a reduction: None (every dim), an int, or a tuple of ints. A
    0-d tensor takes dim 0 or -1 as its one element's dim, as torch, which means all
    (None)."""
    if dim is None:
        return None
    items = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not items:
        raise ValueError(f"{op}: dim=() names no dims; use dim=None to reduce over all of them")
    if ndim == 0:
        for d in items:
            wrap_dim(d, 0, op, extra=1)  # 0 or -1, the range of a 1-element dim
        return None
    dims = tuple(wrap_dim(d, ndim, op) for d in items)
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim {dim!r} names the same dim twice (ndim {ndim})")
    return dims


def wrap_one_dim(dim: int | None, ndim: int, op: str) -> int | None:
    """Normalise the single ``dim`` of prod and argmax-like ops: None for every dim, as for
    dim 0 or -1 of a 0-d tensor (torch accepts those)."""
    if dim is None:
        return None
    if ndim == 0:
        wrap_dim(dim, 0, op, extra=1)  # 0 or -1, the range of a 1-element dim
        return None
    return wrap_dim(dim, ndim, op)


# ---------------------------------------------------------------------- graph plumbing
def make_node(
    data: Any,
    prev: tuple[Tensor, ...],
    op: str,
    backward: Callable[..., Grads] | None,
    ctx: Any = None,
) -> Tensor:
    """The output node of an op, built without the public constructor's checks.

    It records ``(prev, op, backward, ctx)`` only if grad mode is on and some input
    requires grad; otherwise it is a constant with no history.
    """
    if type(data) is not np.ndarray:  # ufuncs turn 0-d arrays into NumPy scalars
        data = np.asarray(data)
    out = _new(Tensor)
    out.data = data
    out.grad = None
    out.label = ""
    if GradMode.enabled:
        for p in prev:
            if p.requires_grad:
                out.requires_grad = True
                out._prev = prev
                out._op = op
                out._backward = backward
                out._ctx = ctx
                return out
    out.requires_grad = False
    out._prev = ()
    out._op = ""
    out._backward = None
    out._ctx = None
    return out


def _unbroadcast(grad: np.ndarray, shape: Shape) -> np.ndarray:
    """Sum ``grad``, shaped like a broadcast result, back down to an input's ``shape``.

    Broadcasting repeats an input along the leading dims it lacks and along its size-1
    axes; each repeat's gradient is added back. Returns ``grad`` itself when no summing is
    needed, else a new array.
    """
    if grad.shape == shape:
        return grad
    return grad.sum(axis=_broadcast_axes(grad.shape, shape), keepdims=True).reshape(shape)


def _broadcast_axes(big: Shape, shape: Shape) -> tuple[int, ...]:
    """The axes of ``big`` along which an input of ``shape`` was repeated by broadcasting."""
    lead = len(big) - len(shape)
    return tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and big[lead + i] != 1
    )


def kept_shape(shape: Shape, dims: tuple[int, ...] | None) -> Shape:
    """The shape a reduction over ``dims`` has with keepdim=True: 1 at each reduced dim."""
    return tuple(1 if dims is None or i in dims else n for i, n in enumerate(shape))


# ---------------------------------------------------------------------- rules' types
# A backward rule ``rule(g, out, ctx, need, *inputs)`` (kit.py) computes with arrays in the
# first-order pass and with Tensors under create_graph.
Arr = Union["Tensor", np.ndarray]  # what a rule computes with
Need = tuple[bool, ...]  # need[i]: whether input i wants a gradient
Dims = tuple[int, ...] | None
Grads = tuple[Union["Tensor", np.ndarray, None], ...]


def raw(x: Arr) -> np.ndarray:
    """The array inside: for a rule's masks and tests, which are constants."""
    return x.data if isinstance(x, Tensor) else x


def sum_to(g: Arr, shape: Shape) -> Arr:
    """``g`` summed back to ``shape`` over the axes broadcasting repeated (see the engine)."""
    if not isinstance(g, Tensor):
        return _unbroadcast(g, shape)
    if g.shape == shape:
        return g
    return g.sum(_broadcast_axes(g.shape, shape), keepdim=True).reshape(shape)


def _accumulate(t: Tensor, g: Arr, upstream: Arr, borrowed: dict[int, Tensor]) -> None:
    """Add gradient ``g`` into ``t.grad``, first summing it back to t's shape if t was
    broadcast: the one place the tensor engine accumulates.

    Arrays: the first arrival is stored without a copy. If it is not an array the rule has
    just made (it is ``upstream``, the node's own gradient, or a view) t does not own it:
    t goes into ``borrowed``, and a later arrival is added out of place, so the array it
    shares is never written. Arrivals into a gradient t owns are added in place. Tensors
    (under create_graph): out of place, ``old + g``, so the gradient keeps its history.
    """
    if isinstance(g, Tensor):
        g = grad_for(t, g)
        t.grad = g if t.grad is None else t.grad + g
        return
    shape = t.data.shape
    if g.shape != shape:
        g, fresh = _unbroadcast(g, shape), True
    else:
        fresh = g is not upstream and getattr(g, "base", None) is None
    if t.grad is not None:
        if id(t) in borrowed:  # a new array (of t's shape: a 0-d sum is no NumPy scalar)
            t.grad = np.add(t.grad, g, out=np.empty(shape, t.grad.dtype))
            del borrowed[id(t)]
        else:
            t.grad += g
        return
    if type(g) is np.ndarray and g.dtype == t.data.dtype:
        t.grad = g
        if not fresh:
            borrowed[id(t)] = t
    else:
        t.grad = np.array(g, dtype=t.data.dtype)


def grad_for(t: Tensor, g: Arr) -> Arr:
    """``g`` made a gradient of ``t``: summed back to t's shape where t was broadcast, and
    in t's dtype (a float32 tensor gets a float32 gradient, as torch casts each gradient to
    its input's dtype); on Tensors the cast is a node, so it differentiates again."""
    g = sum_to(g, t.data.shape)
    dtype = t.data.dtype
    if raw(g).dtype == dtype:
        return g
    if isinstance(g, Tensor):
        return make_node(g.data.astype(dtype), (g,), "cast", _cast_backward)
    return g.astype(dtype)


def _cast_backward(g: Arr, out: Arr, ctx: None, need: Need, a: Arr) -> Grads:
    """c = a in another dtype:  dc/da = 1 (grad_for casts g back to a's dtype)."""
    return (g,)


# ---------------------------------------------------------------------- the Tensor class
class Tensor:
    """An array in a computation graph, with the gradient of the final output w.r.t. it.

    ``Tensor(data, requires_grad=False, dtype=None)`` copies ``data`` (a number, nested
    lists or a NumPy array; docs/design.md for dtypes). ``grad`` is None until a
    ``backward()`` reaches the tensor, then an array of its shape; leaves accumulate it
    across calls (as torch's leaf ``.grad``), interior nodes hold the latest pass's. A
    leaf's gradient is its own array; an interior node's may be the same array as another
    node's (the walk shares rather than copies), so read it but do not write into it.
    """

    # __slots__: no per-instance __dict__, so a node is small and attribute access fast.
    __slots__ = ("_backward", "_ctx", "_op", "_prev", "data", "grad", "label", "requires_grad")
    # Make NumPy defer to Tensor's reflected operators (np.float64(2) * t, array @ t).
    __array_ufunc__ = None
    # The comparisons (elementwise.py) define __eq__; the graph walk keeps nodes in sets by
    # identity.
    __hash__ = object.__hash__

    def __init__(
        self, data: Any, requires_grad: bool = False, dtype: Any = None, label: str = ""
    ) -> None:
        if not isinstance(requires_grad, bool):
            raise TypeError(
                f"Tensor(): requires_grad must be a bool, got {describe(requires_grad)}"
            )
        self.data = to_array(data, "Tensor()", dtype)
        self.grad: np.ndarray | None = None
        self.requires_grad = requires_grad
        self._prev: tuple[Tensor, ...] = ()
        self._op = ""
        self._backward: Callable[..., Grads] | None = None
        self._ctx: Any = None
        self.label = label

    # ------------------------------------------------------------------ array facts
    @property
    def shape(self) -> Shape:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def size(self, dim: int | None = None) -> Shape | int:
        """The shape, or the length of one dim (as torch's ``size()``)."""
        if dim is None:
            return self.data.shape
        return self.data.shape[wrap_dim(dim, self.data.ndim, "size")]

    def numel(self) -> int:
        """The number of elements."""
        return self.data.size

    def item(self) -> float:
        """The value of a one-element tensor as a Python float."""
        if self.data.size != 1:
            raise ValueError(
                f"item: only a one-element tensor converts to a number; this one has shape "
                f"{self.shape} ({self.data.size} elements)"
            )
        return float(self.data.reshape(()))

    def numpy(self) -> np.ndarray:
        """The data array itself (shared, not copied, as torch's ``numpy()``)."""
        return self.data

    def detach(self) -> Tensor:
        """The same data (shared) as a new leaf with no history that does not require grad."""
        return make_node(self.data, (), "", None)

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="Tensor(")
        extra = ""
        if self.data.dtype != np.float64:
            extra += f", dtype={self.data.dtype}"
        if self._op:
            extra += f", op={self._op!r}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"Tensor({body}{extra})"

    # ------------------------------------------------------------------ operations
    # Bound at the end of each family's module, where each forward sits beside its rule:
    # elementwise.py, reductions.py, shape.py and linalg.py.

    def __bool__(self) -> bool:
        """The truth of a one-element tensor (``if (x > 0).item()`` reads better); any
        other size is ambiguous, an error as in torch."""
        if self.data.size != 1:
            raise RuntimeError(
                f"bool: the truth value of a tensor of shape {self.shape} is ambiguous; "
                "reduce it first (for example (t > 0).sum() or t.max())"
            )
        return bool(self.data.reshape(()))

    # ------------------------------------------------------------------ the backward pass
    def backward(
        self, gradient: Any = None, create_graph: bool = False, inputs: Any = None
    ) -> None:
        """Add d(self)/d(leaf) into the ``grad`` of every leaf self depends on.

        A one-element tensor is seeded with 1; any other needs ``gradient``, an array of
        its shape (the vector in the vector-Jacobian product). Walks the graph once in
        reverse topological order, so each node has its full gradient before passing it
        on; interior nodes are reset first so only leaves accumulate across calls. With
        ``create_graph=True`` the gradients are Tensors with history, differentiable again.

        ``inputs`` (a Tensor or a sequence of them), as torch's: only these get a ``grad``
        (other leaves keep theirs), and every other interior node's gradient is dropped as
        soon as its rule has passed it on, as torch does, so a training step holds only
        the gradients still in flight rather than one per node.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward: this tensor does not require grad, so it has no graph to walk "
                "(make its leaves with requires_grad=True, outside no_grad())"
            )
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError(
                    "backward: grad can be implicitly created only for scalar outputs; this "
                    f"tensor has shape {self.shape}, so pass gradient= an array of that shape"
                )
            seed = np.empty(self.data.shape, dtype=self.data.dtype)
            seed.fill(1)  # np.ones() is this in a Python wrapper
        elif create_graph and isinstance(gradient, Tensor):
            seed = gradient  # kept as it is: the gradients may depend on it too, as in torch
        else:
            seed = to_array(gradient, "backward(gradient)", self.data.dtype)
        if seed.shape != self.data.shape:
            raise ValueError(
                f"backward: gradient has shape {seed.shape} but the tensor has shape {self.shape}"
            )
        keep = None if inputs is None else _input_ids(inputs)
        order = topological_order(self, leaves=False)  # a leaf has no rule to run
        for node in order:
            if node._prev:
                node.grad = None
        if create_graph:
            if not isinstance(seed, Tensor):
                seed = make_node(seed, (), "", None)
            with enable_grad():  # as torch: a create_graph pass records even under no_grad()
                _backward_walk(self, order, seed, True, keep)
            return
        _backward_walk(self, order, seed, False, keep)


def _input_ids(inputs: Any) -> set[int]:
    """The ids of ``backward(inputs=...)``: a Tensor or a non-empty sequence of Tensors,
    each requiring grad (a RuntimeError otherwise, as torch's)."""
    items = [inputs] if isinstance(inputs, Tensor) else inputs
    if not isinstance(items, (list, tuple)) or not items:
        raise RuntimeError(
            f"backward: inputs must be a Tensor or a non-empty list of Tensors, got "
            f"{describe(inputs)}"
        )
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise RuntimeError(f"backward: inputs[{i}] is not a Tensor: {describe(t)}")
        if not t.requires_grad:
            raise RuntimeError(
                f"backward: inputs[{i}] does not require grad, so it can have no gradient"
            )
    return {id(t) for t in items}


#: Rules that can also add their one input's gradient into an array that input already owns,
#: in place: ``ADD_INTO[rule](grad, g, ctx)``. The walk uses it where it can (index: three
#: slices q, k, v of one array then cost a slice's work each, not a zero array each).
ADD_INTO: dict[Callable[..., Grads], Callable[[np.ndarray, np.ndarray, Any], None]] = {}


def _backward_walk(
    root: Tensor, order: list[Tensor], seed: Arr, create_graph: bool, keep: set[int] | None
) -> None:
    """Run every node's rule in reverse topological order, accumulating into the inputs.

    An array gradient is shared, not copied, where it can be (see ``_accumulate``); a
    leaf still sharing one at the end gets its own copy, so an optimiser's or
    ``clip_grad_norm_``'s in-place update of ``leaf.grad`` touches that leaf only. With
    ``keep`` (backward's ``inputs``, by id) a leaf outside it is not needed, and an interior
    node outside it lets go of its gradient once its rule has it: every node that adds into
    it comes earlier in the walk."""
    borrowed: dict[int, Tensor] = {}  # tensors whose grad is an array they do not own
    if keep is None or root._prev or id(root) in keep:
        _accumulate(root, seed, None, borrowed)
    if create_graph:  # the same rules on the nodes: the gradients get history
        for node in reversed(order):
            rule, g = node._backward, node.grad
            if rule is None or g is None:
                continue
            prev = node._prev
            need = _needed(prev, keep)
            if keep is not None and id(node) not in keep:
                node.grad = None
            grads = rule(g, node, node._ctx, need, *prev)
            for p, gp, n in zip(prev, grads, need):
                if n and gp is not None:
                    _accumulate(p, gp, g, borrowed)
        return
    for node in reversed(order):
        rule, g = node._backward, node.grad
        if rule is None or g is None:
            continue
        prev = node._prev
        if keep is None:
            need = tuple([p.requires_grad for p in prev])  # a list first: faster than a generator
        else:
            need = _needed(prev, keep)
            if id(node) not in keep:
                node.grad = None
        if rule in ADD_INTO:
            p = prev[0]
            if need[0] and type(p.grad) is np.ndarray and id(p) not in borrowed:
                ADD_INTO[rule](p.grad, g, node._ctx)
                continue
        grads = rule(g, node.data, node._ctx, need, *[p.data for p in prev])
        for p, gp, n in zip(prev, grads, need):
            if n and gp is not None:
                # _accumulate's two common cases written out (a call per edge saved): a
                # first arrival of the input's shape and dtype is kept as it is (borrowed
                # if the rule did not make it); a later one is added in place into a
                # gradient the input owns
                data = p.data
                if type(gp) is np.ndarray and gp.shape == data.shape:
                    if p.grad is None:
                        if gp.dtype == data.dtype:
                            p.grad = gp
                            if gp is g or gp.base is not None:
                                borrowed[id(p)] = p
                            continue
                    elif id(p) not in borrowed:
                        p.grad += gp
                        continue
                _accumulate(p, gp, g, borrowed)
    for t in borrowed.values():
        if not t._prev:
            t.grad = t.grad.copy()


def _needed(prev: tuple[Tensor, ...], keep: set[int] | None) -> Need:
    """Which of a node's inputs want a gradient: those that require grad, and with
    ``keep`` only the interior ones and the leaves in it."""
    if keep is None:
        return tuple([p.requires_grad for p in prev])
    return tuple([p.requires_grad and (bool(p._prev) or id(p) in keep) for p in prev])
