"""What a traced function did besides building its graph, and what of it compiled code
could not follow (compiler.py writes the graph out; this module watches ``fn`` do it).

While a ``Trace`` is open, the engine tells this module's hook (``engine.Tracing.hook``)
each comparison of Values (a guard); each read of ``.data`` or ``.grad`` and each ``repr``
made outside the engine; each write of ``.data``; each call of ``backward()``; each node
the engine makes, and, of those, the ones made while no_grad() is on, with their operands;
and each node made by hand, ``Value(data, _prev, op, rule)``. ``refuse`` then raises
CompileError, in one line naming the file and line that did it, for what would make the
compiled code compute something other than the interpreter. Nothing of Value or the engine
is replaced while tracing: the engine consults the one hook, which is None when no trace
is open. What every thread does is noted in every open trace (fn may hand work to a
thread); only what involves a trace's own inputs counts there, so traces in several
threads at once, and other threads' Values, give what they always do. A hook left set by
an interrupted close notes nothing and is unset by the next close.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import threading
import weakref
from typing import Any

from ..graph import GradMode, topological_order
from . import engine
from .engine import Value

#: The traces open now, in any thread: weak references, so that a trace whose close was cut
#: short (a Ctrl-C at the wrong moment) is gone with the frame that held it; a tuple,
#: replaced whole and never changed in place, so the hook reading it sees every trace then.
_ACTIVE: tuple[weakref.ref[Trace], ...] = ()
_OPENING = threading.Lock()  # the first trace to open sets the hook, the last to close unsets
_STDLIB = sysconfig.get_paths()["stdlib"]
_INSTALLED = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])
_OWN = {engine.__file__, __file__, os.path.join(os.path.dirname(__file__), "compiler.py")}

Site = tuple[str, int]  # (file, line)


class CompileError(ValueError):
    """``fn`` builds a graph that cannot be compiled (the message says why, in one line)."""


def site(frame: Any) -> Site:
    """Where something happened: the file and line of the innermost frame at or above
    ``frame`` that is ``fn``'s code (or a library's it called), past the engine's, the
    compiler's and the standard library's (kept as numbers; ``where`` writes them out)."""
    f = frame
    while f is not None and _passing(f.f_code.co_filename):
        f = f.f_back
    f = f or frame
    return f.f_code.co_filename, f.f_lineno


def where(at: Site) -> str:
    """``file.py:line``."""
    return f"{at[0].rpartition('/')[2]}:{at[1]}"


@functools.cache
def _passing(filename: str) -> bool:
    """Whether a frame of ``filename`` is one to look past for ``fn``'s line."""
    if filename in _OWN or filename.startswith("<frozen"):
        return True
    return filename.startswith(_STDLIB) and not filename.startswith(_INSTALLED)


class Trace:
    """What happened while it was open (see the module)."""

    def __init__(self) -> None:
        self.comparisons: list[tuple[Value, str, object, bool]] = []
        self.reads: list[tuple[Value, str, Site]] = []  # (value, what, where)
        self.writes: list[tuple[Value, Site]] = []
        self.backwards: list[tuple[Value, Site]] = []
        self.untracked: list[tuple[Value, list[Value], Site]] = []
        self.by_hand: list[tuple[Value, Site]] = []
        self.made: set[int] = set()

    def open(self) -> None:
        global _ACTIVE
        with _OPENING:
            engine.Tracing.hook = HOOK  # first: interrupted before the next line, it notes nothing
            _ACTIVE = (*_ACTIVE, weakref.ref(self))

    def close(self) -> None:
        """Stop noting (again is fine); the last trace open unsets the hook."""
        global _ACTIVE
        with _OPENING:
            _ACTIVE = tuple(r for r in _ACTIVE if r() not in (None, self))
            if not _ACTIVE:
                engine.Tracing.hook = None

    def __enter__(self) -> Trace:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open() -> list[Trace]:
    """The traces open now."""
    refs = _ACTIVE
    return [trace for ref in refs if (trace := ref()) is not None] if refs else []


class _Hook:
    """What the engine calls while a trace is open (``engine.Tracing``): each call notes what
    happened in every open trace, and nothing when none is open."""

    @staticmethod
    def made(out: Value, a: Any, b: Any) -> None:
        traces = _open()
        if not traces:
            return
        if GradMode.enabled or (a is None and b is None):
            for trace in traces:
                trace.made.add(id(out))
            return
        operands = [a] if a is not None else []
        operands += list(b) if isinstance(b, tuple) else [b] if b is not None else []
        at = site(sys._getframe(1))
        for trace in traces:
            trace.made.add(id(out))
            trace.untracked.append((out, operands, at))

    @staticmethod
    def constructed(value: Value) -> None:
        traces = _open()
        if not traces:
            return
        for trace in traces:
            trace.made.add(id(value))
        if value._a is not None or value._b is not None:  # an op made by hand
            at = site(sys._getframe(1))
            for trace in traces:
                trace.by_hand.append((value, at))

    @staticmethod
    def compare(value: Value, op: str, other: object, result: bool) -> None:
        for trace in _open():
            trace.comparisons.append((value, op, other, result))

    @staticmethod
    def read(value: Value, what: str) -> None:
        traces = _open()
        if traces:
            at = site(sys._getframe(1))
            for trace in traces:
                trace.reads.append((value, what, at))

    @staticmethod
    def wrote(value: Value) -> None:
        traces = _open()
        if traces:
            at = site(sys._getframe(1))
            for trace in traces:
                trace.writes.append((value, at))

    @staticmethod
    def backward(value: Value) -> None:
        traces = _open()
        if traces:
            at = site(sys._getframe(1))
            for trace in traces:
                trace.backwards.append((value, at))


HOOK = _Hook()


def outside(outs: list[Value], inputs: list[Value], trace: Trace) -> list[Value]:
    """The Values the graph of ``outs`` uses that ``fn`` did not make and that are not
    inputs (a parameter, a value computed before fn ran): fn reads their ``.data`` on each
    call, so the compiled code does too (``refuse`` refuses one computed from the inputs)."""
    given = {id(v) for v in inputs}
    kept = {id(out): operands for out, operands, _ in trace.untracked}
    found: list[Value] = []
    seen: set[int] = set()
    stack = list(outs)
    while stack:
        node = stack.pop()
        if id(node) in seen or id(node) in given:
            continue
        seen.add(id(node))
        if id(node) in trace.made:
            stack.extend(kept.get(id(node), node._prev))
        else:
            found.append(node)
    return found


def dependent(
    roots: list[Value], inputs: list[Value], trace: Trace, stop: list[Value] | None = None
) -> set[int]:
    """The ids of the nodes that depend on an input: through their inputs, and through the
    operands of a node made under no_grad() (which keeps none), one pass in an order that
    puts such a node after its operands too. The inputs of the nodes ``stop`` are not
    walked."""
    kept = {id(out): operands for out, operands, _ in trace.untracked}
    kept.update((id(v), ()) for v in stop or ())
    extra = [v for _, operands, _ in trace.untracked for v in operands]
    seen = [v for v, _, _ in trace.reads] + [v for v, _ in trace.writes + trace.backwards]
    depends = {id(v) for v in inputs}
    for node in topological_order(*roots, *extra, *seen, instead=kept):
        inputs_of = kept.get(id(node), node._prev)
        if id(node) not in depends and any(id(p) in depends for p in inputs_of):
            depends.add(id(node))
    return depends


def refuse(order: list[Value], trace: Trace, depends: set[int], inputs: list[Value]) -> None:
    """Raise CompileError, in one line, for what the compiled code of the graph ``order``
    could not follow (``depends``: what depends on the ``inputs`` or on a Value from
    outside fn). The place named is where it happened: in fn, or in another thread while
    fn ran."""
    for node, what, at in trace.reads:
        if id(node) in depends:
            raise CompileError(
                f"compiled: {what} of a value that depends on the inputs or on a Value made "
                f"outside fn is read while fn runs ({where(at)}); a compiled graph cannot "
                "follow it: compare Values instead (v > 0 is a guard)"
            )
    for node, at in trace.backwards:
        if id(node) in depends:
            raise CompileError(
                "compiled: backward() is called on a value that depends on the inputs or on a "
                f"Value made outside fn while fn runs ({where(at)}); the compiled function "
                "computes the gradients itself: return the loss"
            )
    in_graph = {id(node) for node in order}
    for node, at in trace.writes:
        if id(node) in in_graph:
            raise CompileError(
                f"compiled: .data of a value of the graph is written while fn runs ({where(at)});"
                " the compiled code would compute what its op computes instead"
            )
    for out, _, at in trace.untracked:
        if id(out) in depends and id(out) in in_graph:
            raise CompileError(
                f"compiled: a value is computed under no_grad() ({where(at)}) from the inputs "
                "or a Value made outside fn, which the graph would hold as a constant; "
                "compute it with grad on"
            )
    for node, at in trace.by_hand:
        if id(node) in in_graph:
            raise CompileError(
                f"compiled: a node of op {node._op!r} was made by hand ({where(at)}); only the "
                "engine's ops compile"
            )
    computed = [v for v in order if v._prev and id(v) not in trace.made]
    from_inputs = dependent(computed, inputs, trace) if computed else set()
    for node in computed:
        if id(node) in from_inputs:
            raise CompileError(
                f"compiled: a value of op {node._op!r} computed from the inputs before fn ran "
                "is used or compared while fn runs, and calling fn again would not recompute "
                "it; compute it inside fn"
            )
