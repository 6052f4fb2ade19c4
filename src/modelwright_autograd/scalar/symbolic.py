"""Symbols: how the compiler (compiler.py) derives its code from the engine's own ops and
rules, so that no formula is written twice.

A ``Sym`` stands for a float the compiled code holds (a name such as ``v3``, or a literal);
its operators build the source of the same float arithmetic: ``+ - *`` and unary ``-`` as
themselves, ``/`` and ``**`` as the IEEE helpers the engine uses on floats (floats.py),
which is what a rule's ``_div_any`` and ``_pow_any`` compute on floats. ``run`` calls an
op's forward, or its rule, on symbols. A comparison of a symbol is a condition (relu's
``out <= 0.0``, pow's ``b == 0.0``): ``run`` runs the code once for each way its
conditions can go and joins the results, a gradient that is None on some ways becoming a
``Grad`` with the condition under which there is none. A compound value that is compared
(the pre-activation of a ReLU neuron), or passed through ``once``, is written once as a
statement of its own and read by name. ``forward_namespace`` gives an op's forward the
calls it makes on floats (``ieee_exp``, ``math.tanh``, ...) as symbols.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

ATOM, UNARY, PRODUCT, SUM, COMPARISON, CONDITIONAL = 16, 14, 13, 12, 9, 5


def literal(x: float) -> str:
    """A float as source that reads back as the same float (sign of zero included)."""
    if x != x:
        return "_nan"
    if x in (math.inf, -math.inf):
        return "_inf" if x > 0 else "(-_inf)"
    return repr(x) if math.copysign(1.0, x) > 0 else f"({x!r})"


class Grad(NamedTuple):
    """One input's gradient as source: ``expr``, or no gradient where ``zero_if`` holds
    (the rule's ``None``; None: never)."""

    expr: str
    zero_if: str | None = None


class Env:
    """One derivation: the conditions met in the current run and how each goes, and the
    values written once (``bind(prefix, sym)`` writes one and returns its name)."""

    def __init__(self, bind: Callable[[str, Sym], str], prefix: str) -> None:
        self.bind = bind
        self.prefix = prefix
        self.bound: dict[str, str] = {}  # a value's source -> the name it was written to
        self.fixed: dict[str, bool] = {}  # how the conditions go in this run
        self.path: list[tuple[str, bool]] = []  # the conditions met in this run, in order
        self.fresh: list[int] = []  # those of path decided here for the first time

    def decide(self, condition: str) -> bool:
        """How ``condition`` goes in this run: as fixed for it, as it went when met before
        in this run, or (met for the first time) False, ``run`` trying True next."""
        for met, went in self.path:
            if met == condition:
                return went
        went = self.fixed.get(condition)
        if went is None:
            went = False
            self.fresh.append(len(self.path))
        self.path.append((condition, went))
        return went

    def name(self, sym: Sym) -> None:
        """Write ``sym``'s value once, as a statement, and make it read that name."""
        if sym.prec == ATOM:
            return
        if sym.text not in self.bound:
            self.bound[sym.text] = self.bind(self.prefix, sym)
        sym.text, sym.prec, sym.terms = self.bound[sym.text], ATOM, None


def _text(x: object, env: Env | None) -> Sym:
    return x if isinstance(x, Sym) else Sym(literal(x), env)  # type: ignore[arg-type]


class Sym:
    """A float of the compiled code, as source (see the module)."""

    __slots__ = ("env", "prec", "terms", "text")

    def __init__(
        self, text: str, env: Env | None, prec: int = ATOM, terms: list[str] | None = None
    ) -> None:
        self.text, self.env, self.prec, self.terms = text, env, prec, terms

    def __str__(self) -> str:
        return self.text

    @property
    def _data(self) -> Sym:
        """An op's forward reads its inputs' ``_data``: a symbol is its own."""
        return self

    def _side(self, prec: int, right: bool = False) -> str:
        tight = self.prec <= prec if right else self.prec < prec
        return f"({self.text})" if tight else self.text

    def _binary(self, other: object, op: str, prec: int, swap: bool = False) -> Sym:
        left, right = (_text(other, self.env), self) if swap else (self, _text(other, self.env))
        text = f"{left._side(prec)} {op} {right._side(prec, right=True)}"
        terms = None
        if op == "+":
            terms = [*(left.terms or [left._side(prec)]), right._side(prec, right=True)]
        return Sym(text, self.env, prec, terms)

    def __add__(self, other: object) -> Sym:
        return self._binary(other, "+", SUM)

    def __radd__(self, other: object) -> Sym:
        return self._binary(other, "+", SUM, swap=True)

    def __sub__(self, other: object) -> Sym:
        return self._binary(other, "-", SUM)

    def __rsub__(self, other: object) -> Sym:
        return self._binary(other, "-", SUM, swap=True)

    def __mul__(self, other: object) -> Sym:
        return self._binary(other, "*", PRODUCT)

    def __rmul__(self, other: object) -> Sym:
        return self._binary(other, "*", PRODUCT, swap=True)

    def __neg__(self) -> Sym:
        return Sym(f"-{self._side(UNARY)}", self.env, UNARY)

    def __truediv__(self, other: object) -> Sym:
        return self.call("ieee_div", other)

    def __rtruediv__(self, other: object) -> Sym:
        return _text(other, self.env).call("ieee_div", self)

    def __pow__(self, other: object) -> Sym:
        return self.call("ieee_pow", other)

    def __rpow__(self, other: object) -> Sym:
        return _text(other, self.env).call("ieee_pow", self)

    def log(self) -> Sym:
        return self.call("ieee_log")

    def call(self, function: str, *more: object) -> Sym:
        """``function(self, *more)`` as source: one of the helpers the compiled code has."""
        args = ", ".join(_text(x, self.env).text for x in (self, *more))
        return Sym(f"{function}({args})", self.env)

    def _compare(self, other: object, op: str) -> bool:
        self.env.name(self)  # compared, then (perhaps) used: computed once
        right = _text(other, self.env)
        return self.env.decide(f"{self.text} {op} {right._side(COMPARISON, right=True)}")

    def __lt__(self, other: object) -> bool:
        return self._compare(other, "<")

    def __le__(self, other: object) -> bool:
        return self._compare(other, "<=")

    def __gt__(self, other: object) -> bool:
        return self._compare(other, ">")

    def __ge__(self, other: object) -> bool:
        return self._compare(other, ">=")

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return self._compare(other, "==")

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return self._compare(other, "!=")

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise TypeError("a symbol has no truth value; compare it")


Result = Any  # what the code run returns: a Sym, a float, None, or a sequence of them


def run(code: Callable[..., Result], env: Env, *args: Any) -> list[tuple[list, Result]]:
    """Call ``code(*args)`` once for each way the conditions it meets can go: (the
    conditions met and how they went, the result) for each way."""
    ways = []
    todo: list[dict[str, bool]] = [{}]
    while todo:
        env.fixed, env.path, env.fresh = todo.pop(), [], []
        result = code(*args)
        ways.append((env.path, result))
        for i in env.fresh:  # each condition first met here goes the other way next
            todo.append({**dict(env.path[:i]), env.path[i][0]: True})
    return ways


def _key(x: object) -> object:
    return None if x is None else str(x) if isinstance(x, Sym) else literal(x)  # type: ignore[arg-type]


def _tree(ways: list[tuple[list, object]]) -> Any:
    """The results as a decision tree: a leaf, or (condition, if it holds, if not), with
    the conditions that change nothing left out."""
    if len({_key(x) for _, x in ways}) == 1:
        return ways[0][1]
    condition = ways[0][0][0][0]  # the first met: the code before it runs the same way
    yes = _tree([(path[1:], x) for path, x in ways if path[0][1]])
    no = _tree([(path[1:], x) for path, x in ways if not path[0][1]])
    return yes if _shape(yes) == _shape(no) else (condition, yes, no)


def _shape(tree: Any) -> object:
    if isinstance(tree, tuple):
        return (tree[0], _shape(tree[1]), _shape(tree[2]))
    return _key(tree)


def _value(tree: Any, env: Env) -> Sym:
    """A tree of values as one expression (``a if c else b``)."""
    if not isinstance(tree, tuple):
        return _text(tree, env)
    condition, yes, no = tree
    y, n = _value(yes, env), _value(no, env)
    text = f"{y._side(CONDITIONAL, True)} if {condition} else {n._side(CONDITIONAL - 1)}"
    return Sym(text, env, CONDITIONAL)


def _zero_if(tree: Any) -> str | bool:
    """Where a tree of gradients gives None, as a condition (True, False: always, never)."""
    if not isinstance(tree, tuple):
        return tree is None
    condition, yes, no = tree
    parts = []
    for holds, zero in ((condition, _zero_if(yes)), (f"not {condition}", _zero_if(no))):
        if zero is True:
            parts.append(holds)
        elif zero is not False:
            parts.append(f"{holds} and ({zero})" if " or " in zero else f"{holds} and {zero}")
    return " or ".join(parts)


def _leaves(tree: Any) -> list[object]:
    return [*_leaves(tree[1]), *_leaves(tree[2])] if isinstance(tree, tuple) else [tree]


def value(ways: list[tuple[list, object]], env: Env) -> Sym:
    """The results of ``run`` (one value each) as one expression."""
    return _value(_tree(ways), env)


def gradients(ways: list[tuple[list, Sequence[object]]], env: Env) -> list[str | Grad | None]:
    """The results of ``run`` on a rule as each input's gradient: None (never one), its
    source, or a ``Grad`` with the condition where there is none."""
    n = len(ways[0][1])
    grads: list[str | Grad | None] = []
    for i in range(n):
        tree = _tree([(path, result[i]) for path, result in ways])
        zero = _zero_if(tree)
        if zero is True:
            grads.append(None)
            continue
        given = {_key(x): x for x in _leaves(tree) if x is not None}
        if len(given) != 1:
            raise ValueError(f"a rule's branches give input {i} different gradients")
        expr = _text(next(iter(given.values())), env).text
        grads.append(expr if zero is False else Grad(expr, str(zero)))
    return grads


def once(code: Callable[..., object], *args: object) -> object:
    """``code(*args)``, one number, on symbols: its conditions run both ways and the result
    written once, as a value of its own (a statement the code then reads by name)."""
    env = next(x.env for x in args if isinstance(x, Sym))
    running = env.fixed, env.path, env.fresh  # the run this is part of, put back after
    try:
        result = value(run(code, env, *args), env)
    finally:
        env.fixed, env.path, env.fresh = running
    env.name(result)
    return result


class _SymbolicValue(type):
    """``Value`` in a forward run on symbols: a symbol is one, and ``Value(x)`` is a symbol."""

    def __instancecheck__(cls, x: object) -> bool:
        return isinstance(x, Sym)


def forward_namespace(module: types.ModuleType, calls: Sequence[str]) -> dict[str, Any]:
    """``module``'s names for running its ops' forwards on symbols: each of ``calls`` (the
    float helpers the compiled code has; ``_tanh`` being ``math.tanh``) writes its call,
    ``_node`` gives back the result's data, ``as_value`` passes a symbol on, ``Value`` is a
    symbol (a number exponent becomes a literal one), and every function of ``module``
    reads these names."""
    namespace: dict[str, Any] = dict(vars(module))
    for name, f in vars(module).items():
        if isinstance(f, types.FunctionType) and f.__module__ == module.__name__:
            namespace[name] = types.FunctionType(f.__code__, namespace, name, f.__defaults__)

    def writes(name: str) -> Callable[..., Sym]:
        def call(*args: object) -> Sym:
            env = next(x.env for x in args if isinstance(x, Sym))
            return _text(args[0], env).call(name, *args[1:])

        return call

    namespace.update({name: writes(name) for name in calls})
    namespace["math"] = types.SimpleNamespace(tanh=writes("_tanh"))
    namespace["_node"] = lambda data, a, b, op, rule: data
    namespace["as_value"] = lambda x, op: x
    namespace["as_float"] = lambda x, what: x
    namespace["Value"] = _SymbolicValue("Value", (), {"__new__": lambda cls, x: _text(x, None)})
    return namespace
