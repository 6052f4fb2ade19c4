"""The scalar engine: ``Value`` wraps one float and remembers how it was made.

Each operation is a forward function directly above its backward rule
``rule(g, out, *inputs)``, which returns its inputs' gradients; ``Value.backward`` adds
them up, on floats or (``create_graph=True``) on Values. docs/design.md explains the
design; docs/derivations.md derives each rule.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Union

from ..checks import as_float, describe
from ..graph import GradMode, GraphCycleError, caught_up, enable_grad
from .floats import INF, const_pow, ieee_div, ieee_exp, ieee_log, ieee_pow, ieee_sigmoid
from .symbolic import once

Operand = Union["Value", int, float]
Num = Union["Value", float]  # what a rule computes with: floats, or Values under create_graph
Grads = tuple[Union["Value", float, None], ...]  # a rule's result: one gradient per input

# ---------------------------------------------------------------------- rule helpers
# A rule runs on floats in the fast pass and on Values under create_graph; these few
# helpers are the operations whose float form needs IEEE care (Python raises where IEEE
# gives inf or nan) and which Values provide as ops.


def _raw(x: Num) -> float:
    """The float inside: for a rule's tests (``c <= 0``), which never build graph."""
    return x._data if isinstance(x, Value) else x


def _div_any(x: Num, y: Num) -> Num:
    """x / y: IEEE-safe on floats, the ``/`` op on Values."""
    if type(x) is float and type(y) is float:
        return ieee_div(x, y)
    return x / y


def _pow_any(x: Num, y: Num) -> Num:
    """x ** y: C's ``pow`` on floats, the ``**`` op on Values."""
    if type(x) is float and type(y) is float:
        return ieee_pow(x, y)
    return x**y


def _const_pow_any(x: Num, n: float) -> Num:
    """x ** n for a constant n: as the forward computes it on floats, the ``**`` op on Values,
    its call written out on the compiler's symbols."""
    if type(x) is float:
        return const_pow(x, n)
    return x**n if isinstance(x, Value) else x.call("const_pow", n)


def _log_any(x: Num) -> Num:
    """ln x: IEEE on a float (-inf at 0), the ``log`` op on a Value."""
    return ieee_log(x) if type(x) is float else x.log()


_new = object.__new__


class Tracing:
    """The compiler's one hook into the engine (scalar/tracing.py sets ``hook`` while a trace
    is open, in any thread; it is None otherwise). The engine tells it of each node it
    makes (``made``) and each ``Value()`` (``constructed``), each comparison of Values
    (``compare``), each read of ``.data`` or ``.grad`` or ``repr`` from outside the engine
    (``read``), each write of ``.data`` (``wrote``) and each ``backward()`` call. A trace
    leaves Value and this module as they are: the hook is consulted, never patched in."""

    hook: Any = None


def _node(
    data: float,
    a: Value | None,
    b: Value | tuple[Value, ...] | None,
    op: str,
    rule: Callable[..., Grads] | None,
) -> Value:
    """Every op's result, built without ``Value()``'s argument checks (``data`` is already
    a float, there is no label): the same object, made faster. Its inputs go in as Value's
    slots hold them: ``a`` (and ``b``) for an op of one (two) inputs, or ``None, inputs``
    for a fused op's tuple. Under no_grad() it records no history, as ``Value()`` does.

    Kept beside ``Value()`` for its cost: with the ops calling ``Value(data, inputs, op,
    rule)`` instead, ``python -m benchmarks.ab OLD NEW --rounds 5`` timed the scalar demo
    step at 12.1 ms (11.5-12.5) against 10.0 ms (9.6-10.7), 1.21x (2 cores, load 4-8)."""
    out = _new(Value)
    out._data = data
    out._grad = 0.0
    out.label = ""
    if GradMode.enabled:
        out._a = a
        out._b = b
        out._op = op
        out._backward = rule
    else:
        out._a = out._b = None
        out._op = ""
        out._backward = None
    if Tracing.hook is not None:
        Tracing.hook.made(out, a, b)
    return out


def as_value(x: Operand, op: str) -> Value:
    """Return x as a Value: Values pass through, real numbers become constants."""
    if isinstance(x, Value):
        return x
    if type(x) is float:  # the common constant (1.0, a label, a data point): no checks needed
        return _node(x, None, None, "", None)
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"unsupported operand for {op}: Value and {describe(x)}")
    return Value(as_float(x, f"operand of {op}"))


def _noted(value: Value, op: str, other: object, result: bool) -> bool:
    """A comparison's result, told to the trace hook if one is set (it is a guard)."""
    if Tracing.hook is not None:
        Tracing.hook.compare(value, op, other, result)
    return result


def _compared(x: object) -> float | None:
    """What a Value is compared with: another Value's data or a real number (None for
    anything else, which the comparison answers with NotImplemented, as Python's rules
    expect: ``v == "a"`` is False and ``v < "a"`` a TypeError)."""
    if isinstance(x, Value):
        return x._data
    return x if isinstance(x, numbers.Real) else None  # type: ignore[return-value]


# ---------------------------------------------------------------------- zero gradients
# Late in training most of a graph's gradient is exactly 0.0 (a sample the SVM hinge
# already classifies passes nothing back), and running those rules only adds +-0.0.
# ``backward()`` therefore skips a node whose gradient is 0.0 when its rule is marked
# ``@zero_safe`` and its output is finite and nonzero: such a rule then returns only +-0.0
# or None, and adding +-0.0 changes no gradient that is not -0.0 (interior gradients are
# reset to 0.0 each pass and zero_grad() writes 0.0; 0.0 + -0.0 is 0.0). Unmarked rules
# always run: a zero times an infinite derivative must still give nan (0 ** 0.5 has one),
# as torch's does. docs/design.md has the argument for each rule.


def zero_safe(rule: Callable[..., Grads]) -> Callable[..., Grads]:
    """Mark ``rule`` as returning only +-0.0 or None for g = 0.0 whenever the node's output
    is finite and nonzero (so ``backward()`` may skip it); returns ``rule`` itself."""
    rule.zero_safe = True  # type: ignore[attr-defined]
    return rule


def _is_zero_safe(rule: Callable[..., Grads]) -> bool:
    """Whether ``rule`` is marked (an attribute, not a set: a rule need not be hashable)."""
    return getattr(rule, "zero_safe", False) is True


# ---------------------------------------------------------------------- the rule of a node
def rule_of(node: Value) -> Callable[..., Grads] | None:
    """The rule of the op that made ``node`` (None for a leaf or an op made by hand). An
    inactive ReLU neuron records none, but is still a dot_relu."""
    rule = node._backward
    if rule is None and node._op == "dot_relu":
        return _dot_relu_backward
    return rule


# ---------------------------------------------------------------------- the operations
# Each forward is followed by its backward rule ``rule(g, out, *inputs)``: given the
# upstream gradient ``g`` = dL/dout, the result ``out`` and the inputs, it returns one
# gradient per input (None for "no gradient"). ``backward()`` calls a rule with floats
# for the fast first-order pass and with the nodes themselves under ``create_graph=True``,
# so each formula is written once, with operators and the ``_*_any`` helpers above.


def _add(a: Value, b: Operand) -> Value:
    b = as_value(b, "+")
    return _node(a._data + b._data, a, b, "+", _add_backward)


@zero_safe
def _add_backward(g: Num, out: Num, a: Num, b: Num) -> Grads:
    """c = a + b:  dc/da = 1, dc/db = 1."""
    return g, g


def _mul(a: Value, b: Operand) -> Value:
    b = as_value(b, "*")
    return _node(a._data * b._data, a, b, "*", _mul_backward)


@zero_safe
def _mul_backward(g: Num, out: Num, a: Num, b: Num) -> Grads:
    """c = a * b:  dc/da = b, dc/db = a."""
    return g * b, g * a


def _sub(a: Value, b: Operand) -> Value:
    b = as_value(b, "-")
    return _node(a._data - b._data, a, b, "-", _sub_backward)


@zero_safe
def _sub_backward(g: Num, out: Num, a: Num, b: Num) -> Grads:
    """c = a - b:  dc/da = 1, dc/db = -1."""
    return g, -g


def _div(a: Value, b: Operand) -> Value:
    b = as_value(b, "/")
    return _node(ieee_div(a._data, b._data), a, b, "/", _div_backward)


def _div_backward(g: Num, out: Num, a: Num, b: Num) -> Grads:
    """c = a / b:  dc/da = 1/b, dc/db = -a/b**2, computed as torch does, -(a/b)/b = -c/b,
    because b*b underflows to 0 (or overflows) where c/b is still a normal float."""
    return _div_any(g, b), -(g * _div_any(out, b))


def _neg(a: Value) -> Value:
    return _node(-a._data, a, None, "neg", _neg_backward)


@zero_safe
def _neg_backward(g: Num, out: Num, a: Num) -> Grads:
    """c = -a:  dc/da = -1."""
    return (-g,)


def _pow(a: Value, b: Operand) -> Value:
    """a ** b. A number exponent becomes a constant input that receives no gradient; a
    Value exponent is differentiated too (``Value ** Value``, and ``2 ** v`` via __rpow__)."""
    if isinstance(b, Value):
        return _node(ieee_pow(a._data, b._data), a, b, "**", _pow_backward)
    n = Value(as_float(b, "Value ** exponent"))
    return _node(const_pow(a._data, n._data), a, n, "**", powc_backward)


def powc_backward(g: Num, out: Num, a: Num, n: Num) -> Grads:
    """c = a ** n for a constant n:  dc/da = n * a**(n-1) (0 when n = 0, as in torch)."""
    n = _raw(n)  # a constant: a plain float in both passes
    return (None if n == 0.0 else n * _const_pow_any(a, n - 1.0) * g), None


def _pow_backward(g: Num, out: Num, a: Num, b: Num) -> Grads:
    """c = a ** b:  dc/da = b * a**(b-1), dc/db = a**b * ln(a) (0 where a = 0 and b >= 0,
    torch's convention: the limit of a**b * ln a)."""
    ga = None if _raw(b) == 0.0 else b * _pow_any(a, b - 1.0) * g
    gb = None if _raw(a) == 0.0 and _raw(b) >= 0.0 else out * _log_any(a) * g
    return ga, gb


def _exp(a: Value) -> Value:
    """e ** a (``inf`` beyond about 709.78, never OverflowError)."""
    return _node(ieee_exp(a._data), a, None, "exp", _exp_backward)


@zero_safe
def _exp_backward(g: Num, out: Num, a: Num) -> Grads:
    """c = e**a:  dc/da = e**a, which is c itself."""
    return (out * g,)


def _log(a: Value) -> Value:
    """Natural log: ``-inf`` at 0 and ``nan`` below it, as in IEEE float64."""
    return _node(ieee_log(a._data), a, None, "log", _log_backward)


@zero_safe
def _log_backward(g: Num, out: Num, a: Num) -> Grads:
    """c = ln a:  dc/da = 1/a."""
    return (_div_any(g, a),)


def _tanh(a: Value) -> Value:
    """Hyperbolic tangent; math.tanh saturates to +-1.0 and never overflows."""
    return _node(math.tanh(a._data), a, None, "tanh", _tanh_backward)


@zero_safe
def _tanh_backward(g: Num, out: Num, a: Num) -> Grads:
    """c = tanh a:  dc/da = 1 - tanh(a)**2 = 1 - c**2."""
    return ((1.0 - out * out) * g,)


def _relu(a: Value) -> Value:
    """max(0, a). ``< 0`` rather than ``> 0`` so that relu(nan) is nan and relu(-0.0) is
    -0.0, as in torch."""
    return _node(0.0 if a._data < 0.0 else a._data, a, None, "relu", _relu_backward)


@zero_safe
def _relu_backward(g: Num, out: Num, a: Num) -> Grads:
    """c = max(0, a):  dc/da = 0 where c <= 0 (so 0 at a = 0), else 1, as in torch; the
    test is ``c <= 0`` so that nan passes its gradient on, as torch's does."""
    return (None if _raw(out) <= 0.0 else g,)


def _sigmoid(a: Value) -> Value:
    """The logistic function 1 / (1 + e**-a), without overflow for any a."""
    return _node(ieee_sigmoid(a._data), a, None, "sigmoid", _sigmoid_backward)


@zero_safe
def _sigmoid_backward(g: Num, out: Num, a: Num) -> Grads:
    """c = 1/(1 + e**-a):  dc/da = c * (1 - c)."""
    return (out * (1.0 - out) * g,)


# Fused n-ary ops: one node where a chain of binary ops would make many. The unfused chain
# computes the same numbers; the fused node just skips the per-node overhead.


def sum_values(values: Iterable[Operand]) -> Value:
    """x1 + x2 + ... + xn: n Values (or numbers) combined into one node, rather than a chain
    of n - 1 additions. (``Tensor.sum`` is another thing: it reduces one Tensor.)"""
    inputs = tuple(as_value(v, "sum_values") for v in values)
    total = 0.0
    for v in inputs:  # left to right, the order a chain of + would use
        total += v._data
    if not inputs:  # the sum of nothing: 0.0, a constant with no inputs and no rule
        return _node(total, None, None, "", None)
    return _node(total, None, inputs, "sum", _sum_backward)


@zero_safe
def _sum_backward(g: Num, out: Num, *xs: Num) -> Grads:
    """c = x1 + ... + xn:  dc/dxi = 1 for every i."""
    return (g,) * len(xs)


def dot_unchecked(ws: Sequence[Value], xs: Sequence[Value], b: Value) -> Value:
    """b + w1*x1 + ... + wn*xn for inputs already known to be Values (the neuron's hot path;
    ``Value.dot`` checks and lifts its arguments, then calls this)."""
    total = b._data
    for w, x in zip(ws, xs):  # the order micrograd's sum(w*x, b) uses, bit for bit
        total += w._data * x._data
    return _node(total, None, (*ws, *xs, b), "dot", _dot_backward)


@zero_safe
def _dot_backward(g: Num, out: Num, *inputs: Num) -> Grads | list[Num]:
    """c = b + sum_i wi*xi:  dc/dwi = xi, dc/dxi = wi, dc/db = 1.

    The inputs are laid out as (w1..wn, x1..xn, b).
    """
    n = len(inputs) // 2
    grads = [v * g for v in inputs[n : 2 * n] + inputs[:n]]  # x1..xn for the ws, then ws
    grads.append(g)
    return grads


def dot_relu_unchecked(ws: Sequence[Value], xs: Sequence[Value], b: Value) -> Value:
    """relu(b + w1*x1 + ... + wn*xn) as one node: a ReLU neuron (``nn.Neuron``'s fused path),
    the same numbers as ``dot_unchecked`` then ``relu`` with one node instead of two.

    An inactive neuron whose inputs are all finite records no rule, and backward() skips
    it. That is exact: the unfused pair would run the dot's rule with g = 0 (relu passes
    nothing), adding w*0.0 and x*0.0, which are +-0 for finite numbers, to sums that start
    at 0.0 and so are never -0.0, which changes nothing. A finite pre-activation proves the
    inputs finite (an inf or nan input makes its product, and so the sum, inf or nan). In a
    trained ReLU net about half the neurons are inactive on a given sample.
    """
    total = b._data
    for w, x in zip(ws, xs):  # the order micrograd's sum(w*x, b) uses, bit for bit
        total += w._data * x._data
    out = 0.0 if total < 0.0 else total  # relu, as _relu writes it
    if -INF < total <= 0.0:  # inactive with finite inputs: no gradient flows back
        return _node(out, None, (*ws, *xs, b), "dot_relu", None)
    return _node(out, None, (*ws, *xs, b), "dot_relu", _dot_relu_backward)


@zero_safe
def _dot_relu_backward(g: Num, out: Num, *inputs: Num) -> Grads | list[Num]:
    """c = relu(b + sum_i wi*xi):  the dot's gradients times relu's, 1 where c > 0 (or nan)
    and 0 where c <= 0. An inactive node reaches this rule only with an infinite input,
    where 0 * inf must give nan as the unfused pair's does; under create_graph it gives
    nothing, as relu's rule does there."""
    if isinstance(g, Value):
        if out._data <= 0.0:
            return (None,) * len(inputs)
    elif type(g) is float:
        g = _relu_gate(out, g)
    else:  # the compiler's symbols: the gate computed once, not in every gradient
        g = once(_relu_gate, out, g)
    return _dot_backward(g, out, *inputs)


def _relu_gate(out: float, g: float) -> float:
    """The gradient through relu as one number: g where relu passed its input on (c > 0,
    or nan), 0.0 where c <= 0."""
    return 0.0 if out <= 0.0 else g


def _dot_inputs(inputs: Sequence[Value]) -> tuple[Sequence[Value], Sequence[Value], Value]:
    """A dot node's inputs (w1..wn, x1..xn, b) as (ws, xs, b)."""
    n = len(inputs) // 2
    return inputs[:n], inputs[n : 2 * n], inputs[-1]


#: Each op's forward, by its node's ``_op``, called with the node's inputs: what the
#: compiler runs on symbols to write the op out (symbolic.py), beside the rule.
FORWARDS: dict[str, Callable[..., Value]] = {
    "+": _add,
    "*": _mul,
    "-": _sub,
    "/": _div,
    "neg": _neg,
    "**": _pow,
    "exp": _exp,
    "log": _log,
    "tanh": _tanh,
    "relu": _relu,
    "sigmoid": _sigmoid,
    "sum": lambda *xs: sum_values(xs),
    "dot": lambda *inputs: dot_unchecked(*_dot_inputs(inputs)),
    "dot_relu": lambda *inputs: dot_relu_unchecked(*_dot_inputs(inputs)),
}


class Value:
    """One float in a computation graph, with the gradient of the final output w.r.t. it.

    ``grad`` starts at 0.0. ``backward()`` on an output adds d(output)/d(leaf) into every
    leaf's ``grad`` (accumulating across calls, as PyTorch's leaf ``.grad`` does) and leaves
    each interior node's ``grad`` holding its gradient from that latest pass.
    """

    # __slots__, no __dict__. An op's one or two inputs sit in the slots _a, _b, not in a
    # 56-byte tuple: 112 bytes a retained node (88 + its float) instead of 160. A fused op
    # keeps its inputs' tuple in _b (with _a None); _prev gives them (docs/design.md).
    __slots__ = ("_a", "_b", "_backward", "_data", "_grad", "_op", "label")
    # Make NumPy scalars defer to Value's reflected operators (np.float64(2) * Value(3)).
    __array_ufunc__ = None

    def __init__(
        self,
        data: float,
        _prev: tuple[Value, ...] = (),
        _op: str = "",
        _backward: Callable[..., Grads] | None = None,
        label: str = "",
    ) -> None:
        if type(data) is not float:
            data = as_float(data, "Value()")
        if type(label) is not str:
            raise TypeError(f"Value(): label must be a str, got {describe(label)}")
        self._data = data
        self._grad: float | Value = 0.0
        # A tuple, not the course's set: for ``a * a`` the rule needs both slots (a, a).
        _prev = _prev if type(_prev) is tuple else tuple(_prev)
        for p in _prev:
            if not isinstance(p, Value):
                raise TypeError(f"Value(): _prev must hold Values, got {describe(p)}")
        if not (_prev and GradMode.enabled):  # a leaf, or a constant under no_grad()
            self._a = self._b = None
            self._op = ""
            self._backward = None  # with no inputs there is nothing to pass a gradient to
        else:
            n = len(_prev)
            if n == 2:
                self._a, self._b = _prev
            elif n == 1:
                self._a, self._b = _prev[0], None
            else:
                self._a, self._b = None, _prev
            self._op = _op
            self._backward = _backward
        self.label = label
        if Tracing.hook is not None:
            Tracing.hook.constructed(self)

    # ``data`` and ``grad`` are properties over the slots ``_data`` and ``_grad``, which the
    # engine reads and writes directly: a read from outside the engine is one the compiler's
    # trace must see (scalar/tracing.py), through the hook.
    @property
    def data(self) -> float:
        """The number this node holds."""
        if Tracing.hook is not None:
            Tracing.hook.read(self, ".data")
        return self._data

    @data.setter
    def data(self, value: float) -> None:
        if Tracing.hook is not None:
            Tracing.hook.wrote(self)
        self._data = value

    @property
    def grad(self) -> float | Value:
        """d(output)/d(self) from the latest ``backward()`` (a Value under create_graph)."""
        if Tracing.hook is not None:
            Tracing.hook.read(self, ".grad")
        return self._grad

    @grad.setter
    def grad(self, value: float | Value) -> None:
        self._grad = value

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        """What copy and pickle keep: the slots, the number read through ``.data`` (a copy
        freezes it, which the compiler's trace must see)."""
        state = {name: getattr(self, name) for name in Value.__slots__}
        state["_data"] = self.data
        return None, state

    @property
    def _prev(self) -> tuple[Value, ...]:
        """The inputs this node was computed from, in order (empty for a leaf): the graph
        walks' view of the slots ``_a`` and ``_b``."""
        a, b = self._a, self._b
        if a is None:
            return () if b is None else b
        return (a,) if b is None else (a, b)

    def __repr__(self) -> str:
        if Tracing.hook is not None:
            Tracing.hook.read(self, "repr")
        return f"Value(data={self._data!r}, grad={self._grad!r})"

    # The operations, defined above each beside its backward rule. Reflected forms
    # (``2 + v``, ``2 ** v``) lift the number to a constant Value and apply the same op.
    __add__ = _add
    __mul__ = _mul
    __sub__ = _sub
    __truediv__ = _div
    __pow__ = _pow
    __neg__ = _neg
    exp = _exp
    log = _log
    tanh = _tanh
    relu = _relu
    sigmoid = _sigmoid

    def __radd__(self, other: Operand) -> Value:
        return _add(as_value(other, "+"), self)

    def __rmul__(self, other: Operand) -> Value:
        return _mul(as_value(other, "*"), self)

    def __rsub__(self, other: Operand) -> Value:
        return _sub(as_value(other, "-"), self)

    def __rtruediv__(self, other: Operand) -> Value:
        return _div(as_value(other, "/"), self)

    def __rpow__(self, other: Operand) -> Value:
        return _pow(as_value(other, "**"), self)

    # Comparisons read the data and return plain bools, as on floats (``if v > 0:``); they
    # build no node, since a comparison has no gradient. ``==`` compares data too, which
    # would make Values unhashable: __hash__ is set back to identity, because graph walks
    # keep nodes in sets and dicts, where two equal-valued nodes must stay two nodes.
    __hash__ = object.__hash__

    def __lt__(self, other: object) -> bool:
        o = _compared(other)
        return NotImplemented if o is None else _noted(self, "<", other, self._data < o)

    def __le__(self, other: object) -> bool:
        o = _compared(other)
        return NotImplemented if o is None else _noted(self, "<=", other, self._data <= o)

    def __gt__(self, other: object) -> bool:
        o = _compared(other)
        return NotImplemented if o is None else _noted(self, ">", other, self._data > o)

    def __ge__(self, other: object) -> bool:
        o = _compared(other)
        return NotImplemented if o is None else _noted(self, ">=", other, self._data >= o)

    def __eq__(self, other: object) -> bool:
        o = _compared(other)
        return NotImplemented if o is None else _noted(self, "==", other, self._data == o)

    def __ne__(self, other: object) -> bool:
        o = _compared(other)
        return NotImplemented if o is None else _noted(self, "!=", other, self._data != o)

    @staticmethod
    def dot(
        weights: Sequence[Operand],
        inputs: Sequence[Operand],
        bias: Operand = 0.0,
        relu: bool = False,
    ) -> Value:
        """bias + w1*x1 + ... + wn*xn as one node: a neuron's pre-activation; with
        ``relu=True``, relu of it, still one node: a whole ReLU neuron.

        Unfused, a 16-input neuron is 32 nodes (16 products, 16 additions) and its relu
        one more; fused, it is one node whose backward loop does the same arithmetic with
        no per-node overhead.
        """
        if len(weights) != len(inputs):
            raise ValueError(f"dot: {len(weights)} weights but {len(inputs)} inputs")
        ws = [as_value(w, "dot") for w in weights]
        xs = [as_value(x, "dot") for x in inputs]
        return (dot_relu_unchecked if relu else dot_unchecked)(ws, xs, as_value(bias, "dot"))

    # ------------------------------------------------------------------ the backward pass
    def input_grads(self, upstream: float | None = None) -> list[float]:
        """What this node's rule gives each input (0.0 for none), on floats, for
        ``upstream`` (default: its grad): for walks written by hand (docs) and explain."""
        g = self._grad if upstream is None else upstream
        grads = self._backward(g, self._data, *[p._data for p in self._prev])  # type: ignore[misc]
        return [0.0 if x is None else x for x in grads]

    def backward(self, gradient: float | Value = 1.0, create_graph: bool = False) -> None:
        """Add d(self)/d(leaf) * gradient into the ``grad`` of every leaf self depends on.

        Walks the graph once in reverse topological order, so each node has received the
        gradient from every path through it before its rule runs. Interior nodes are reset
        first: only leaves accumulate across calls, as in PyTorch. With
        ``create_graph=True`` the gradients are computed with Value ops, so every ``grad``
        becomes a Value with history that can itself be differentiated.
        """
        if Tracing.hook is not None:
            Tracing.hook.backward(self)
        if not (create_graph and isinstance(gradient, Value)):
            gradient = as_float(gradient, "backward(gradient)")
        order = interior_order(self)
        for node in order:
            if node._a is not None or node._b is not None:  # not a leaf root
                node._grad = 0.0
        if create_graph:
            with enable_grad():  # as torch: a create_graph pass records even under no_grad()
                _backward_creating_graph(self, order, as_value(gradient, "backward(gradient)"))
            return
        self._grad += gradient
        for node in reversed(order):
            rule = node._backward
            if rule is None:
                continue
            if node._grad == 0.0 and 0.0 < abs(node._data) < INF and _is_zero_safe(rule):
                continue  # it would pass on only +-0.0 (see zero_safe above)
            # The one place gradients are accumulated: += because a node used twice
            # (a * a, or a reached by two paths) must receive the sum of both. The inputs
            # are read from the slots (not the _prev tuple), one or two being almost
            # every node.
            a = node._a
            b = node._b
            if a is None:  # a fused op: its inputs are the tuple b
                for p, gp in zip(b, rule(node._grad, node._data, *[p._data for p in b])):
                    if gp is not None:
                        p._grad += gp
            elif b is None:
                (ga,) = rule(node._grad, node._data, a._data)
                if ga is not None:
                    a._grad += ga
            else:
                ga, gb = rule(node._grad, node._data, a._data, b._data)
                if ga is not None:
                    a._grad += ga
                if gb is not None:
                    b._grad += gb


_EMIT = object()  # on interior_order's stack: "the node below has all its inputs listed"


def interior_order(root: Value) -> list[Value]:
    """``graph.topological_order(root, leaves=False)`` for Values, in the same order: the
    nodes root depends on that have inputs (a leaf has no rule to run), root always
    included, each after all of its inputs. It reads the input slots ``_a``/``_b``
    directly, where the ``_prev`` property would make a call and a tuple per edge, and it
    allocates no object per node (no iterator, no stack-entry tuple), which would give
    the cyclic collector more to count and to scan on backward()'s hot path.

    An input met again that is expanded but not yet listed is its own ancestor: a
    GraphCycleError (see topological_order). ``listed`` holds ``order[:len(listed)]`` and
    is brought up to date only when a node is met again (``graph.caught_up``), so listing
    a node costs nothing more and a chain, which never meets one again, pays nothing.

    Kept beside topological_order for its cost: with backward() walking
    ``topological_order(self, leaves=False)`` instead, ``python -m benchmarks.ab OLD NEW
    --rounds 5`` timed the scalar demo step at 14.2 ms (13.8-18.3) against 10.3 ms
    (9.8-16.2), 1.38x (2 cores, load 3-8)."""
    if root._a is None and root._b is None:
        return [root]  # a leaf: nothing to walk
    order = []
    expanded = set()
    listed = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node is _EMIT:
            order.append(stack.pop())
            continue
        if node in expanded:  # pushed by two consumers: already listed by the first
            continue
        expanded.add(node)
        stack.append(node)
        stack.append(_EMIT)
        # Push the inputs that have inputs, last first, so the first is expanded first
        # (as topological_order's iterator does).
        a = node._a
        b = node._b
        if a is None:
            for p in reversed(b):
                if p._b is not None or p._a is not None:
                    if p not in expanded:
                        stack.append(p)
                    elif p not in listed and p not in caught_up(listed, order):
                        raise GraphCycleError(p)
            continue
        if b is not None and (b._b is not None or b._a is not None):
            if b not in expanded:
                stack.append(b)
            elif b not in listed and b not in caught_up(listed, order):
                raise GraphCycleError(b)
        if a._b is not None or a._a is not None:
            if a not in expanded:
                stack.append(a)
            elif a not in listed and a not in caught_up(listed, order):
                raise GraphCycleError(a)
    return order


def _backward_creating_graph(root: Value, order: list[Value], seed: Value) -> None:
    """The walk of ``backward(create_graph=True)``: the same rules, given the nodes.

    A rule applied to Values builds the graph of the gradient, so every ``grad`` set here
    is a Value with history. Accumulation is out of place (``old + new``, a new node, as
    torch does), and a grad that is still the untouched 0.0 is replaced by the first
    arrival itself. A node no gradient reached (its grad still the float 0.0) is skipped.
    """
    _accumulate_node(root, seed)
    for node in reversed(order):
        rule = node._backward
        if rule is None or not isinstance(node._grad, Value):
            continue
        prev = node._prev
        for p, gp in zip(prev, rule(node._grad, node, *prev)):
            if gp is not None:
                _accumulate_node(p, gp)


def _accumulate_node(node: Value, g: Value) -> None:
    old = node._grad
    node._grad = g if not isinstance(old, Value) and old == 0.0 else old + g
