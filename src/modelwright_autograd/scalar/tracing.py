"""What a traced function did besides building its graph, and what of it compiled code
could not follow (compiler.py writes the graph out; this module watches ``fn`` do it).

While ``fn`` runs inside ``Trace``, the Value class and the engine note: each comparison
of Values (a guard); each read of ``.data`` or ``.grad`` and each ``repr`` made outside the
engine; each write of ``.data``; each call of ``backward()``; each node the engine makes,
and, of those, the ones made while no_grad() is on, with their operands; and each node
made by hand, ``Value(data, _prev, op, rule)``. ``refuse`` then raises CompileError, in one
line naming the file and line in ``fn``'s code, for what would make the compiled code
compute something other than the interpreter. One trace runs at a time (a lock), and
only ``fn``'s thread is watched: the patches are on the class every thread's Values share,
and another thread's Values behave as ever meanwhile.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..graph import GradMode, topological_order
from . import engine
from .engine import Value

#: Value's comparisons, recorded as guards while ``fn`` runs.
COMPARISONS = {
    "__lt__": "<",
    "__le__": "<=",
    "__gt__": ">",
    "__ge__": ">=",
    "__eq__": "==",
    "__ne__": "!=",
}

_LOCK = threading.RLock()  # reentrant: fn may itself compile another function
_STDLIB = sysconfig.get_paths()["stdlib"]
_INSTALLED = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])
_OWN = {engine.__file__, __file__, os.path.join(os.path.dirname(__file__), "compiler.py")}


class CompileError(ValueError):
    """``fn`` builds a graph that cannot be compiled (the message says why, in one line)."""


def where(frame: Any) -> str:
    """``file.py:line`` of the innermost frame at or above ``frame`` that is ``fn``'s code
    (or a library of the user's), not the engine's, the compiler's or Python's own."""
    f = frame
    while f is not None and _passing(f.f_code.co_filename):
        f = f.f_back
    f = f or frame
    return f"{f.f_code.co_filename.rpartition('/')[2]}:{f.f_lineno}"


def _passing(filename: str) -> bool:
    """Whether a frame of ``filename`` is one to look past for ``fn``'s line."""
    if filename in _OWN or filename.startswith("<frozen"):
        return True
    return filename.startswith(_STDLIB) and not filename.startswith(_INSTALLED)


class Trace:
    """Installed on the Value class and the engine while ``fn`` runs (see the module)."""

    def __init__(self) -> None:
        self.comparisons: list[tuple[Value, str, object, bool]] = []
        self.reads: list[tuple[Value, str, str]] = []  # (value, what, where)
        self.writes: list[tuple[Value, str]] = []
        self.untracked: list[tuple[Value, list[Value], str]] = []
        self.by_hand: list[tuple[Value, str]] = []
        self.made: set[int] = set()

    def __enter__(self) -> Trace:
        _LOCK.acquire()
        self.thread = threading.get_ident()
        names = (*COMPARISONS, "data", "grad", "__repr__", "__init__", "backward")
        self.saved = {name: Value.__dict__[name] for name in names}
        for name, op in COMPARISONS.items():
            setattr(Value, name, self._comparing(self.saved[name], op))
        Value.data = _Watched(self.saved["data"], "data", self)  # type: ignore[misc]
        Value.grad = _Watched(self.saved["grad"], "grad", self)  # type: ignore[misc]
        Value.__repr__ = self._repr(self.saved["__repr__"])  # type: ignore[method-assign]
        Value.__init__ = self._init(self.saved["__init__"])  # type: ignore[method-assign]
        Value.backward = self._backward(self.saved["backward"])  # type: ignore[method-assign]
        self.node = engine._node
        engine._node = self._node  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            for name, attr in self.saved.items():
                setattr(Value, name, attr)
            engine._node = self.node  # type: ignore[assignment]
        finally:
            _LOCK.release()

    def watching(self) -> bool:
        """Whether the running thread is ``fn``'s."""
        return threading.get_ident() == self.thread

    def _comparing(self, method: Callable[..., Any], op: str) -> Callable[..., Any]:
        comparisons = self.comparisons

        def compare(value: Value, other: object) -> Any:
            result = method(value, other)
            if result is not NotImplemented and self.watching():
                comparisons.append((value, op, other, result))
            return result

        return compare

    def _repr(self, method: Callable[[Value], str]) -> Callable[[Value], str]:
        reads = self.reads

        def read(value: Value) -> str:
            if self.watching():
                reads.append((value, "repr", where(sys._getframe(1))))
            return method(value)

        return read

    def _init(self, method: Callable[..., None]) -> Callable[..., None]:
        by_hand = self.by_hand

        def init(value: Value, data: float, _prev: Iterable[Value] = (), *args: Any, **kw: Any):
            method(value, data, _prev, *args, **kw)
            if _prev and self.watching():
                by_hand.append((value, where(sys._getframe(1))))

        return init

    def _backward(self, method: Callable[..., None]) -> Callable[..., None]:
        def backward(value: Value, *args: Any, **kwargs: Any) -> None:
            if self.watching():
                raise CompileError(
                    f"compiled: fn calls backward() ({where(sys._getframe(1))}); the compiled "
                    "function computes the gradients itself: return the loss"
                )
            method(value, *args, **kwargs)

        return backward

    def _node(self, data: float, a: Any, b: Any, op: str, rule: Any) -> Value:
        out = self.node(data, a, b, op, rule)
        if not self.watching():
            return out
        self.made.add(id(out))
        if not GradMode.enabled and (a is not None or b is not None):
            operands = [a] if a is not None else []
            operands += list(b) if isinstance(b, tuple) else [b] if b is not None else []
            self.untracked.append((out, operands, where(sys._getframe(1))))
        return out


class _Watched:
    """``Value.data`` or ``Value.grad`` while tracing: the slot itself, noting each read
    made outside the engine and (``data``) each write."""

    def __init__(self, slot: Any, name: str, trace: Trace) -> None:
        self.slot = slot
        self.name = name
        self.trace = trace

    def __get__(self, obj: Value | None, cls: type | None = None) -> Any:
        if obj is None:
            return self
        caller = sys._getframe(1)
        if caller.f_code.co_filename != engine.__file__ and self.trace.watching():
            self.trace.reads.append((obj, f".{self.name}", where(caller)))
        return self.slot.__get__(obj, cls)

    def __set__(self, obj: Value, value: Any) -> None:
        caller = sys._getframe(1)
        outside = caller.f_code.co_filename != engine.__file__
        if self.name == "data" and outside and self.trace.watching():
            self.trace.writes.append((obj, where(caller)))
        self.slot.__set__(obj, value)


def dependent(roots: list[Value], inputs: list[Value], trace: Trace) -> set[int]:
    """The ids of the nodes that depend on an input: through their inputs, and through
    the operands of a node made under no_grad() (which keeps none), until nothing changes
    (a chain of no_grad, grad, no_grad needs a pass for each switch)."""
    extra = [v for _, operands, _ in trace.untracked for v in operands]
    seen = [v for v, _, _ in trace.reads] + [v for v, _ in trace.writes]
    order = forward_order([*roots, *extra, *seen])
    depends = {id(v) for v in inputs}
    while True:
        before = len(depends)
        for node in order:
            if id(node) not in depends and any(id(p) in depends for p in node._prev):
                depends.add(id(node))
        for out, operands, _ in trace.untracked:
            if any(id(v) in depends for v in operands):
                depends.add(id(out))
        if len(depends) == before:
            return depends


def refuse(order: list[Value], trace: Trace, depends: set[int]) -> None:
    """Raise CompileError, in one line, for what the compiled code of the graph ``order``
    could not follow."""
    for node, what, at in trace.reads:
        if id(node) in depends:
            raise CompileError(
                f"compiled: fn reads {what} of a value that depends on the inputs ({at}); "
                "a compiled graph cannot follow it: compare Values instead (v > 0 is a guard)"
            )
    in_graph = {id(node) for node in order}
    for node, at in trace.writes:
        if id(node) in in_graph:
            raise CompileError(
                f"compiled: fn writes .data of a value of the graph ({at}); the compiled code "
                "would compute what its op computes instead"
            )
    for out, _, at in trace.untracked:
        if id(out) in depends and id(out) in in_graph:
            raise CompileError(
                f"compiled: fn computes a value from the inputs under no_grad() ({at}), which "
                "the graph would hold as a constant; compute it with grad on"
            )
    for node, at in trace.by_hand:
        if id(node) in in_graph:
            raise CompileError(
                f"compiled: a node of op {node._op!r} was made by hand ({at}); only the "
                "engine's ops compile"
            )
    for node in order:
        if node._prev and id(node) in depends and id(node) not in trace.made:
            raise CompileError(
                f"compiled: fn uses a value of op {node._op!r} computed from the inputs before "
                "fn ran, which calling fn again would not recompute; compute it inside fn"
            )


def forward_order(roots: list[Value]) -> list[Value]:
    """Every node the roots depend on, each after its inputs, each once."""
    seen: set[int] = set()
    order = []
    for root in roots:
        if id(root) in seen:
            continue
        for node in topological_order(root):
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
    return order
