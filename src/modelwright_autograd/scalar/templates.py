"""Source templates. The compiler (compiler.py) writes a graph out as Python: each rule in
engine.py carries its forward and its gradients as source, written beside it with
``@emits``, on the names the compiler gives the values: the same formula as the rule's
float pass, with the float helpers it calls there (floats.py: ``_ieee_div`` for
``_div_any`` on floats, and so on). tests/test_compiler_sources.py checks, op by op, that
a template computes the rule's own numbers bit for bit, specials included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

Grads = tuple[Any, ...]  # a rule's result: one gradient per input


class Grad(NamedTuple):
    """One input's gradient as source: ``expr``, or no gradient where ``zero_if`` holds
    (the rule's ``None``; None: never)."""

    expr: str
    zero_if: str | None = None


class Source(NamedTuple):
    """An op as source. ``forward(*inputs)`` is the output's expression, or a list of terms
    added left to right (an n-ary op); ``grads(g, out, *inputs)`` gives each input's
    gradient: a str, a ``Grad``, or None (no gradient at all). ``relu``: the output is relu
    of the forward, and the gradient reaching the rule is relu's (dot_relu)."""

    forward: Callable[..., str | list[str]]
    grads: Callable[..., Sequence[str | Grad | None]]
    relu: bool = False


def emits(
    forward: Callable[..., str | list[str]],
    grads: Callable[..., Sequence[str | Grad | None]],
    relu: bool = False,
) -> Callable[[Callable[..., Grads]], Callable[..., Grads]]:
    """Attach the op's source templates to its rule (as ``rule.source``)."""

    def mark(rule: Callable[..., Grads]) -> Callable[..., Grads]:
        rule.source = Source(forward, grads, relu)  # type: ignore[attr-defined]
        return rule

    return mark
