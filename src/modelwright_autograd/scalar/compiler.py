"""Compile a scalar graph once into straight-line Python, forward and backward.

``compiled(fn, inputs)`` calls ``fn(*inputs)`` once on Values, walks the graph it builds,
and writes it out as Python: one statement per node, each op's forward and each rule's
gradients derived from the op and the rule themselves, run on symbols (symbolic.py: no
formula is written twice), constants folded, every gradient the sum of its contributions
in the order ``backward()`` adds them, a dead value's name reused for the next. The
result is a function ``(floats) -> (loss, grads)`` with the interpreter's numbers bit for
bit.
docs/performance.md ("The compiled path") shows an emitted function and explains the
guards, the names and the parts.
"""

from __future__ import annotations

import math
import re
import sys
import zlib
from collections.abc import Callable, Sequence
from itertools import count
from types import FunctionType
from typing import Any

from ..checks import as_float, describe
from ..graph import enable_grad, topological_order
from . import engine, floats
from .engine import Value, rule_of
from .symbolic import Env, Grad, Sym, forward_namespace, gradients, literal, run, value
from .tracing import CompileError, Trace, dependent, outside, refuse

#: Statements per emitted function: a very long graph becomes several functions, values
#: crossing a boundary going through the list ``x``. A crossing costs a store and a load,
#: so parts are large: the size sweep's graphs (up to 30,000 nodes) are one function (with
#: 10,000-statement parts its bigger graphs grew as nodes^1.13 against the floor's 1.05).
CHUNK = 200_000
#: Terms per statement in a long sum (a fused sum or dot, a gradient with many uses):
#: longer sums continue on the next line, so no expression nests deeply. An input's
#: gradient is added up in place in runs of this many terms, as its uses come.
TERMS = 32

#: What the emitted source may call: the float helpers the rules use on floats.
NAMESPACE: dict[str, Any] = {
    "ieee_div": floats.ieee_div,
    "ieee_pow": floats.ieee_pow,
    "const_pow": floats.const_pow,
    "ieee_exp": floats.ieee_exp,
    "ieee_log": floats.ieee_log,
    "ieee_sigmoid": floats.ieee_sigmoid,
    "_tanh": math.tanh,
    "_inf": math.inf,
    "_nan": math.nan,
}


class Compiled:
    """A graph written out as Python. Call it with the inputs' numbers (floats, in the
    order of the example inputs): it returns ``(loss, grads)``, the loss a float (a list of
    floats, the loss first, when ``fn`` returned several Values) and ``grads`` d loss /
    d input for each input. ``source`` is the emitted code, ``nodes`` the graph's size,
    ``guards`` the comparisons checked on each call and ``fallbacks`` the calls so far
    that ran the interpreter because one went the other way. ``outside`` are the Values
    the graph uses that ``fn`` did not make (parameters not among the inputs): their
    ``.data`` is read on each call, as ``fn`` reads it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        inputs: list[Value],
        outside: list[Value],
        source: str,
        nodes: int,
        guards: int,
        constants: dict[str, object],
    ) -> None:
        self.fn = fn
        self.inputs = inputs
        self.outside = outside
        self._source = zlib.compress(source.encode(), 1)  # a tenth of the size, kept to print
        self.nodes = nodes
        self.guards = guards
        self.fallbacks = 0
        namespace = {**NAMESPACE, **constants}
        exec(compile(source, "<compiled scalar graph>", "exec"), namespace)
        for name, part in namespace.items():
            if name.startswith("part"):  # the table of line and column numbers: half the
                part.__code__ = part.__code__.replace(co_linetable=b"")  # memory, unused
        self._run: Callable[[list[float]], Any] = namespace["run"]

    @property
    def source(self) -> str:
        """The emitted code: the functions ``part0``, ... and ``run``."""
        return zlib.decompress(self._source).decode()

    def __call__(self, inputs: Sequence[float]) -> tuple[float | list[float], list[float]]:
        if len(inputs) != len(self.inputs):
            raise ValueError(f"compiled: {len(self.inputs)} inputs expected, got {len(inputs)}")
        xs = [
            v if type(v) is float else as_float(v, f"compiled input {i}")
            for i, v in enumerate(inputs)
        ]
        now = [v.data for v in self.outside]
        now = [x if type(x) is float else as_float(x, "the .data of a Value fn uses") for x in now]
        result = self._run(xs + now)
        if result is False:
            return self._interpret(xs)
        return result

    def _interpret(self, xs: list[float]) -> tuple[float | list[float], list[float]]:
        """A guard failed: the graph would be another one. Run ``fn`` and ``backward()``
        on the example inputs set to ``xs`` (put back afterwards)."""
        self.fallbacks += 1
        if self.fallbacks == 1:
            print(
                "compiled: a guard failed (a comparison went the other way), so this call "
                "ran the interpreter; later ones that fail do so silently",
                file=sys.stderr,
            )
        saved = [(v.data, v.grad) for v in self.inputs]
        others: list[tuple[Value, float]] = []  # the other leaves backward() adds into
        try:
            for v, x in zip(self.inputs, xs):
                v.data, v.grad = x, 0.0
            with enable_grad():
                result = self.fn(*self.inputs)
            outs = _outputs(result)
            others = [(v, v.grad) for v in topological_order(outs[0]) if not v._prev]
            outs[0].backward()
            grads = [float(v.grad) for v in self.inputs]
            values = [o.data for o in outs]  # now: an output may be an input, put back below
        finally:
            for v, grad in others:
                v.grad = grad
            for v, (data, grad) in zip(self.inputs, saved):
                v.data, v.grad = data, grad
        return (values if isinstance(result, (list, tuple)) else values[0]), grads


def compiled(
    fn: Callable[..., Any], example_inputs: Sequence[Value], create_graph: bool = False
) -> Compiled:
    """Trace ``fn(*example_inputs)`` once and compile its graph (see the module's doc).

    ``example_inputs`` are leaf Values. A Value the graph uses that ``fn`` did not make
    (a parameter not among them) is read on each call; a number is a constant, folded into
    the code. ``fn`` is called twice, and refused if the two graphs differ (a number from
    ``random.random()``). ``fn`` returns the loss Value, or a sequence of Values whose
    first is the loss (the others are returned as numbers too). The Value comparisons
    ``fn`` makes are guards, checked on each call.
    """
    if create_graph:
        raise CompileError(
            "compiled: create_graph is not supported (the compiled function returns floats); "
            "use backward(create_graph=True) on Values"
        )
    inputs = _check_inputs(example_inputs)
    trace = Trace()
    try:  # not a with: a Ctrl-C just after open() still reaches close()
        trace.open()
        with enable_grad():
            result = fn(*inputs)
    finally:
        trace.close()
    outs = _outputs(result)
    writer = _Writer(inputs, outs, trace)  # first: it refuses what fn did that it cannot follow
    with enable_grad():
        again = _outputs(fn(*inputs))
    _same_graph(outs, again, trace)
    del again
    return Compiled(
        fn,
        inputs,
        writer.outside,
        writer.source(),
        writer.nodes,
        writer.guards,
        writer.constants,
    )


def _same_graph(outs: list[Value], again: list[Value], trace: Trace) -> None:
    """Refuse unless a second call of ``fn`` built the graph of the first: the same ops on
    the same Values and the same numbers. A number fn computes from no Value (a
    ``random.random()``, a batch drawn anew) would be frozen into the code."""
    first, second = topological_order(*outs), topological_order(*again)
    at = {id(node): i for i, node in enumerate(first)}
    at_again = {id(node): i for i, node in enumerate(second)}
    same = len(first) == len(second) and len(outs) == len(again)
    for a, b in zip(first, second) if same else ():
        if a is b:  # an input, or a Value made outside fn
            continue
        same = (
            id(a) in trace.made
            and a._op == b._op
            and [at[id(p)] for p in a._prev] == [at_again[id(p)] for p in b._prev]
        )
        if not same:
            break
        if not a._prev and not _same_number(a.data, b.data):
            raise CompileError(
                f"compiled: fn computed {a.data!r} on its first call and {b.data!r} on a second"
                " with the same inputs (from random.random(), a global, a batch drawn anew?);"
                " the compiled code would keep the first: pass it as a Value"
            )
    if not same:
        raise CompileError(
            "compiled: a second call of fn with the same inputs built another graph (a "
            "branch on random.random() or on state fn changes?); the compiled code could not "
            "follow it"
        )


def _same_number(x: float, y: float) -> bool:
    """Equal with the same sign of zero, or both nan."""
    if x != x or y != y:
        return x != x and y != y
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


def _check_inputs(example_inputs: Sequence[Value]) -> list[Value]:
    if not isinstance(example_inputs, (list, tuple)):
        raise CompileError(
            f"compiled: example_inputs must be a list of Values, got {describe(example_inputs)}"
        )
    seen = set()
    for i, v in enumerate(example_inputs):
        if not isinstance(v, Value):
            raise CompileError(f"compiled: input {i} is {describe(v)}, not a Value")
        if v._a is not None or v._b is not None:
            raise CompileError(
                f"compiled: input {i} was computed from other Values; inputs are leaves"
            )
        if id(v) in seen:
            raise CompileError(f"compiled: input {i} appears twice")
        seen.add(id(v))
    return list(example_inputs)


def _outputs(result: Any) -> list[Value]:
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    if not outs or not all(isinstance(o, Value) for o in outs):
        raise CompileError(
            f"compiled: fn must return a Value or a list of Values, got {describe(result)}"
        )
    return outs


class _Writer:
    """Writes one traced graph as the source of ``run(x)`` and its chunk functions."""

    def __init__(self, inputs: list[Value], outs: list[Value], trace: Trace) -> None:
        self.statements: list[tuple[str, str | None, list[str]]] = []  # text, target, reads
        self.names: dict[int, str] = {}  # id(node) -> its value's name or literal
        self.outside = outside(outs, inputs, trace)  # read on each call, after the inputs
        slots = [*inputs, *self.outside]
        self.n_inputs = len(slots)
        self.slot_of = {f"v{i}": i for i in range(len(slots))}
        for i, v in enumerate(slots):
            self.names[id(v)] = f"v{i}"
        self.fresh = count(len(slots))
        self.constants: dict[str, object] = {}  # numbers a guard compares with, kept as they are
        compared = [v for c in trace.comparisons for v in (c[0], c[2]) if isinstance(v, Value)]
        varying = dependent([*outs, *compared], slots, trace, stop=self.outside)
        guards = [c for c in trace.comparisons if id(c[0]) in varying or id(c[2]) in varying]
        guarded = [v for c in guards for v in (c[0], c[2]) if isinstance(v, Value)]
        order = topological_order(  # a comparison of constants is no guard
            *outs, *guarded, instead={id(v): () for v in self.outside}
        )
        refuse(order, trace, varying, inputs)
        self.guards = len(guards)
        self.nodes = len(order)
        self.statements.append(("# forward", None, []))
        for node in order:
            if id(node) not in self.names:
                self._forward(node, id(node) in varying)
        for node, op, other, result in guards:
            left, right = self.names[id(node)], self._operand(other)
            self.statements.append(
                (
                    f"if {'not ' if result else ''}{left} {op} {right}: return False",
                    None,
                    _names(left, right),
                )
            )
        loss = self.names[id(outs[0])]
        extra = [self.names[id(o)] for o in outs[1:]]
        grads = self._backward(outs[0], inputs, varying)
        value = f"[{', '.join([loss, *extra])}]" if extra else loss
        final = f"return {value}, [{', '.join(grads)}]"
        self.statements.append((final, None, _names(loss, *extra, *grads)))

    def _operand(self, other: object) -> str:
        """What a guard compares a value with, as source that compares as ``fn`` did: a
        Value's name, a float or int literal (an int exactly, however large), or, for a
        number of another type (a Fraction, a NumPy float32), the number itself, kept in
        the code's namespace as ``_k0``, ``_k1``, ..."""
        if isinstance(other, Value):
            return self.names[id(other)]
        if type(other) is float:
            return literal(other)
        if type(other) in (int, bool):
            return repr(other)
        name = f"_k{len(self.constants)}"
        self.constants[name] = other
        return name

    def _new(self, prefix: str) -> str:
        return f"{prefix}{next(self.fresh)}"

    def _emit_sum(self, target: str, terms: list[str]) -> None:
        """target = t1 + t2 + ..., left to right, at most TERMS numbers a statement (the
        first line's TERMS terms, then ``target`` and TERMS - 1 more a line)."""
        part, rest = terms[:TERMS], terms[TERMS:]
        while True:
            self.statements.append(
                (f"{target} = {' + '.join(part)}", target, _NAME.findall(" ".join(part)))
            )
            if not rest:
                return
            more = max(TERMS - 1, 1)
            part, rest = [target, *rest[:more]], rest[more:]

    def _forward(self, node: Value, varying: bool) -> None:
        if not varying:  # a constant: a leaf, or computed from constants only
            self.names[id(node)] = literal(node.data)
            return
        forward = engine.FORWARDS.get(node._op) if rule_of(node) is not None else None
        if forward is None:
            raise CompileError(
                f"compiled: a node of op {node._op!r} is not one of the engine's ops (only "
                "those compile)"
            )
        names = [self.names[id(p)] for p in node._prev]
        key: tuple = (node._op, len(names))
        if rule_of(node) is engine.powc_backward:  # a number exponent: the op takes it so
            key += (literal(node._prev[1].data),)

        def derive(env: Env, slots: list[Any]) -> Sym:
            if len(key) == 3:
                slots[1] = node._prev[1].data
            return value(run(_FORWARDS[node._op], env, *slots), env)

        binds, result = _derived(key, "t", len(names), derive)
        written = self._replay(binds, names)
        name = self._new("v")
        if result.terms:
            self._emit_sum(name, [written(t) for t in result.terms])
        else:
            self._assign(name, written(result.text))
        self.names[id(node)] = name

    def _replay(
        self, binds: list[tuple[str, str, list[str] | None]], names: list[str]
    ) -> Callable[[str], str]:
        """Write a derivation's values-written-once for a node whose inputs are ``names``;
        return the function putting the node's names into the derivation's source."""
        names = list(names)

        def written(text: str) -> str:
            return _SLOT.sub(lambda m: names[int(m[1])], text)

        for prefix, text, terms in binds:
            name = self._new(prefix)
            if terms:
                self._emit_sum(name, [written(t) for t in terms])
            else:
                self._assign(name, written(text))
            names.append(name)
        return written

    def _assign(self, name: str, expr: str) -> None:
        self.statements.append((f"{name} = {expr}", name, _NAME.findall(expr)))

    def _backward(self, loss: Value, inputs: list[Value], varying: set[int]) -> list[str]:
        """Each node's gradient as one sum of its contributions, written when its rule
        runs, and each input's added up in place as its uses come: in ``backward()``'s
        order, so in its order of addition. (One sum per input at the end kept every value
        it reads alive and out of the cache: time grew faster than the floor's.)"""
        self.statements.append(("# backward", None, []))
        terms: dict[int, list[str]] = {id(loss): ["1.0"]}
        input_grads = {id(v): self._new("g") for v in inputs}  # added up in place
        waiting: dict[int, list[str]] = {}  # an input's terms not yet added
        started: set[str] = set()  # the inputs' gradients written so far
        if id(loss) in input_grads:  # the loss is an input: d loss / d loss = 1
            waiting[id(loss)] = terms.pop(id(loss))
        order = engine.interior_order(loss) if id(loss) in varying else []
        read = {id(v) for v in self.outside}  # fn reads them: no gradient through them
        for node in reversed(order):
            if id(node) not in varying or not node._prev or id(node) in read:
                continue  # a constant, a leaf root, or read from outside fn
            g = self._gradient(terms.pop(id(node), ["0.0"]))
            names = [g, self.names[id(node)], *(self.names[id(p)] for p in node._prev)]
            rule = rule_of(node)

            def derive(env: Env, slots: list[Any], rule: Any = rule) -> list:
                return gradients(run(rule, env, *slots), env)

            binds, derived = _derived((rule, len(names)), "d", len(names), derive)
            written = self._replay(binds, names)
            for p, grad in zip(node._prev, derived):
                if id(p) not in varying or grad is None:
                    continue
                grad = grad if isinstance(grad, Grad) else Grad(grad)
                zero_if = None if grad.zero_if is None else written(grad.zero_if)
                term = self._term(Grad(written(grad.expr), zero_if))
                if term is None:
                    continue
                if id(p) not in input_grads:
                    terms.setdefault(id(p), []).append(term)
                    continue
                pending = waiting.setdefault(id(p), [])
                pending.append(term)
                if len(pending) == TERMS - 1:  # with the gradient so far: one full line
                    self._add_into(input_grads[id(p)], waiting.pop(id(p)), started)
        for v in inputs:  # the runs left, in the inputs' order
            if id(v) in waiting:
                self._add_into(input_grads[id(v)], waiting.pop(id(v)), started)
        return [input_grads[id(v)] if input_grads[id(v)] in started else "0.0" for v in inputs]

    def _add_into(self, g: str, run: list[str], started: set[str]) -> None:
        """An input's gradient plus its next terms, where they come, not at the end: the
        values they read are still fresh in the cache, and the same sum, left to right,
        as one line at the end would be. The first run starts at 0.0, as ``grad`` does."""
        self._emit_sum(g, [g if g in started else "0.0", *run])
        started.add(g)

    def _gradient(self, terms: list[str]) -> str:
        """A node's gradient: the sum of its terms in a new variable, or the one term itself
        when it is a name or a number (one use, no arithmetic)."""
        if len(terms) == 1 and _NAME.fullmatch(terms[0]):
            return terms[0]
        if len(terms) == 1 and not _has_name(terms[0]):
            return _folded(terms[0])
        g = self._new("g")
        self._emit_sum(g, terms)
        return g

    def _term(self, grad: Grad) -> str | None:
        """A contribution as source, its condition decided now when it involves constants
        only (a constant exponent); None when it never contributes."""
        expr = grad.expr if _has_name(grad.expr) else _folded(grad.expr)
        if grad.zero_if is None:
            return expr
        if not _has_name(grad.zero_if):
            return None if _folded(grad.zero_if, as_literal=False) else expr
        return f"(0.0 if {grad.zero_if} else {expr})"

    def source(self) -> str:
        """The chunk functions ``part0``, ``part1``, ... and ``run``, which calls them in
        turn on the list ``x`` (the inputs, then a slot per value crossing a boundary)."""
        statements = _registers(self.statements, self.n_inputs)
        chunks = [statements[i : i + CHUNK] for i in range(0, len(statements), CHUNK)]
        imports, exports = _crossings(chunks)
        slot_of = self.slot_of
        for names in imports:
            for n in sorted(names, key=_order_key):
                slot_of.setdefault(n, len(slot_of))
        lines = []
        for i, chunk in enumerate(chunks):
            body = [f"    {n} = x[{slot_of[n]}]" for n in sorted(imports[i], key=_order_key)]
            body.extend(f"    {text}" for text, _, _ in chunk)
            body.extend(f"    x[{slot_of[n]}] = {n}" for n in sorted(exports[i], key=_order_key))
            if all(line.lstrip().startswith("#") for line in body):  # comments only
                body.append("    pass")
            lines += [f"def part{i}(x):", *body, ""]
        lines += [
            "def run(x):",
            f'    """{self.nodes} nodes: (loss, grads), or False when a guard fails."""',
        ]
        if len(slot_of) > self.n_inputs:
            lines.append(f"    x = x + [0.0] * {len(slot_of) - self.n_inputs}")
        if len(chunks) == 1:
            lines.append("    return part0(x)")
        else:
            lines += [
                f"    for part in ({', '.join(f'part{i}' for i in range(len(chunks)))}):",
                "        result = part(x)",
                "        if result is not None:",
                "            return result",
            ]
        return "\n".join(lines) + "\n"


_NAME = re.compile(r"\b[vgdt]\d+\b")
_SLOT = re.compile("\x00(\\d+)\x00")  # a place for a node's name in a derivation

#: Each op's forward and each rule, derived once per shape (the op, how many inputs, a
#: number exponent) on placeholders ``_SLOT`` for the names: (the values written once, as
#: (prefix, source, terms), and the result). The same for every node of that shape.
_DERIVED: dict[tuple, tuple[list[tuple[str, str, list[str] | None]], Any]] = {}


def _derived(key: tuple, prefix: str, n: int, derive: Callable[[Env, list[Any]], Any]) -> tuple:
    """``derive(env, slots)`` on ``n`` placeholder symbols, once for ``key``."""
    if key not in _DERIVED:
        binds: list[tuple[str, str, list[str] | None]] = []

        def bind(prefix: str, sym: Sym) -> str:
            binds.append((prefix, sym.text, sym.terms))
            return f"\x00{n + len(binds) - 1}\x00"

        env = Env(bind, prefix)
        result = derive(env, [Sym(f"\x00{i}\x00", env) for i in range(n)])
        _DERIVED[key] = (binds, result)
    return _DERIVED[key]


#: Each op's forward, its calls of the float helpers (those the emitted code has too)
#: writing themselves out: what ``_forward`` runs on symbols.
_NAMESPACE = forward_namespace(engine, [name for name, f in NAMESPACE.items() if callable(f)])
_FORWARDS = {
    op: FunctionType(f.__code__, _NAMESPACE, f.__name__, f.__defaults__)
    for op, f in engine.FORWARDS.items()
}


def _names(*texts: str) -> list[str]:
    """Those of ``texts`` that are names (the others are literals)."""
    return [t for t in texts if _NAME.fullmatch(t)]


def _registers(
    statements: list[tuple[str, str | None, list[str]]], n_inputs: int
) -> list[tuple[str, str | None, list[str]]]:
    """The statements with each value's name replaced by a register: once a value is read
    for the last time, its name goes to the next value of its kind (``v`` a value, ``g`` a
    gradient, ``d`` a gradient through a ReLU, ``t`` a pre-activation). The code then keeps
    as many variables as values are alive at once, not one per node, which keeps it small
    (a name costs about 60 bytes; the demo's fused and unfused graphs keep 4,970 and 4,969,
    not 65,045) and its floats few: a dead one is freed when its name is reused, and the
    next float takes its place, still in the cache. The inputs ``v0``..``v{n_inputs - 1}``
    keep their names."""
    last: dict[str, int] = {}
    for i, (_, _, reads) in enumerate(statements):
        for name in reads:
            last[name] = i
    inputs = {f"v{i}" for i in range(n_inputs)}
    register = {name: name for name in inputs}
    free: dict[str, list[str]] = {}
    made = {"v": n_inputs}
    out = []
    for i, (text, target, reads) in enumerate(statements):
        names = {name: register[name] for name in reads}
        for name in set(reads) - inputs:
            if last[name] == i and name != target:  # its last read: the name is free
                free.setdefault(name[0], []).append(register.pop(name))
        if target is not None:
            if target not in register:
                pool = free.get(target[0])
                if pool:
                    register[target] = pool.pop()  # the most recently freed
                else:
                    made[target[0]] = made.get(target[0], 0) + 1
                    register[target] = f"{target[0]}{made[target[0]] - 1}"
            names[target] = register[target]
            if target not in last:  # never read: free at once
                free.setdefault(target[0], []).append(register.pop(target))
        out.append(
            (
                _NAME.sub(lambda m, names=names: names[m[0]], text),
                names.get(target) if target is not None else None,
                [names[name] for name in reads],
            )
        )
    return out


def _has_name(expr: str) -> bool:
    """Whether ``expr`` reads a variable (else it involves constants only)."""
    return _NAME.search(expr) is not None


def _folded(expr: str, as_literal: bool = True) -> Any:
    """An expression of constants only, computed now (as the emitted code would compute
    it, with the same helpers): as a literal, or (``literal=False``) as its value."""
    number = eval(expr, dict(NAMESPACE))  # source of ours, on our literals
    return literal(number) if as_literal else number


def _order_key(name: str) -> tuple[str, int]:
    return name[0], int(name[1:])


def _crossings(
    chunks: list[list[tuple[str, str | None, list[str]]]],
) -> tuple[list[set[str]], list[set[str]]]:
    """For each chunk, the names it reads from before it (imports) and the names it defines
    that a later chunk reads (exports)."""
    imports, defined = [], []
    for chunk in chunks:
        local: set[str] = set()
        needed: set[str] = set()
        for _, target, reads in chunk:
            needed.update(r for r in reads if r not in local)
            if target is not None:
                local.add(target)
        imports.append(needed)
        defined.append(local)
    exports: list[set[str]] = [set() for _ in chunks]
    later: set[str] = set()
    for i in range(len(chunks) - 1, -1, -1):
        exports[i] = defined[i] & later
        later = (later - defined[i]) | imports[i]
    return imports, exports
