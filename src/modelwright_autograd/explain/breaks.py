"""Backward passes run with a classic mistake, beside the right one: the chapter's
exercise 3 (the rules in forward order, as the nodes were made, so each runs before the
nodes that use it have pushed into its grad) and exercise 4 (each rule writing its inputs'
gradients with = where backward() adds them with +=). ``broken_run`` really runs the
broken algorithm over the traced graph, on gradients of its own, and records it as a
``trace.BrokenRun``: its steps, its gradients, which come out wrong, and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from ..scalar.engine import Value
from .trace import BREAKS, BrokenRun, Name, Step, Trace, fmt, pushes, sentence, step_of


def broken_run(
    trace: Trace, order: list[Value], variables: Mapping[str, Value], mode: str
) -> BrokenRun:
    """Run ``trace``'s backward pass again, with the mistake ``mode`` (a key of
    ``BREAKS``), over its graph: ``order`` and ``variables`` as ``record`` was given them.
    The run keeps gradients of its own: the Values' ``grad`` stay as they are."""
    if mode not in BREAKS:
        raise ValueError(f"broken must be one of {', '.join(BREAKS)}, got {mode!r}")
    ids = {node: k for k, node in enumerate(order)}
    right, _ = _walk(order, ids, None)
    grad, runs = _walk(order, ids, mode)
    nodes = tuple(replace(n, grad=grad[n.id]) for n in trace.nodes)
    users: dict[int, list[int]] = {}  # node -> the nodes that use it, each once
    for k, node in enumerate(order):
        for p in dict.fromkeys(node._prev):
            users.setdefault(ids[p], []).append(k)
    ran_at = {run[0]: n for n, run in enumerate(runs, 1)}
    steps: list[Step] = []
    said: dict[int, tuple[str, ...]] = {}
    for n, (k, held, pushed, replaced) in enumerate(runs, 1):
        step = step_of(n, order[k], held, pushed, ids, nodes)
        steps.append(step)
        me = Name(step.node)
        words: list[str] = []
        if not _same(held, right[k]) and mode == "order":
            words += [me, f"'s rule ran with grad {fmt(held)}, before its user"]
            words.append("s " if len(users[k]) > 1 else " ")
            for j, u in enumerate(users[k]):
                words += [", " if j else "", Name(nodes[u].name), f" (step {ran_at[u]})"]
            words.append(
                f" pushed into it; run after them, as backward() runs it, it holds {fmt(right[k])}."
            )
        elif not _same(held, right[k]):
            words += [
                me,
                f"'s rule runs with grad {fmt(held)}, not {fmt(right[k])} (what += gives "
                "it): the share lost earlier never reaches its inputs.",
            ]
        for pos, (i, (old, writer)) in enumerate(zip(step.inputs, replaced)):
            if mode != "assign" or old == 0.0 or i.pushed is None:
                continue
            if writer == n:  # the same node's other operand: a * a
                role = [j.role for j in step.inputs[:pos] if j.id == i.id][-1]
                source = [f" that it pushed through its {role} operand"]
            else:
                source = [" that ", Name(steps[writer - 1].node), f" pushed at step {writer}"]
            both = f"{fmt(old)} + {fmt(i.pushed)} = {fmt(old + i.pushed)}"
            words += [" " if words else "", me, f" writes {fmt(i.pushed)} into ", Name(i.node)]
            words += [f"'s grad (=), overwriting the {fmt(old)}", *source]
            words.append(f": that path's share is lost (+= keeps both: {both}).")
        if words:
            said[n] = sentence(*words)
    at = {name: ids.get(v) for name, v in variables.items()}
    grads = {name: 0.0 if k is None else grad[k] for name, k in at.items()}
    rights = {name: 0.0 if k is None else right[k] for name, k in at.items()}
    wrong = tuple(name for name in grads if not _same(grads[name], rights[name]))
    broken = Trace(trace.output, trace.value, nodes, tuple(steps), grads, {})
    summary = _summary(mode, broken, runs, bool(said), wrong)
    return BrokenRun(mode, broken, rights, wrong, said, summary)


def _walk(
    order: list[Value], ids: Mapping[Value, int], mode: str | None
) -> tuple[list[float], list[tuple[int, float, list[float], list[tuple[float, int | None]]]]]:
    """A backward pass over ``order`` (the graph in topological order, the output last)
    on a list of gradients of its own: backward()'s (``mode`` None: the rules in reverse
    order, each adding with +=) or a broken one (``BREAKS``). Every rule runs, with the
    grad its node holds at that moment. Returns the gradients and, per rule run: its
    node's index, the grad it held, what it gave each input, and each input's grad before
    and the step (from 1) that wrote it last (None: no step had)."""
    grad = [0.0] * len(order)
    grad[-1] = 1.0  # the seed, set before any rule runs
    writer: list[int | None] = [None] * len(order)
    runs = []
    walk = range(len(order)) if mode == "order" else range(len(order) - 1, -1, -1)
    for k in walk:
        node = order[k]
        if not node._prev:
            continue
        held = grad[k]
        pushed = pushes(node, held)
        replaced = []
        for p, g in zip(node._prev, pushed):
            j = ids[p]
            replaced.append((grad[j], writer[j]))
            grad[j] = g if mode == "assign" else grad[j] + g
            writer[j] = len(runs) + 1
        runs.append((k, held, pushed, replaced))
    return grad, runs


def _summary(
    mode: str, broken: Trace, runs: list, went_wrong: bool, wrong: tuple[str, ...]
) -> tuple[str, ...]:
    """The first line of a broken run's "why" (a ``sentence``): what the break did to
    this graph."""
    names = [part for name in wrong for part in (", d/d", Name(name))][1:]
    verb = " comes" if len(wrong) == 1 else " come"
    changed = (
        ["so d/d", *names, f"{verb} out wrong"]
        if wrong
        else ["yet no variable's gradient changes (what went wrong reaches only constants)"]
    )
    if not runs:
        return sentence("The output is a leaf: no rule runs, so there is nothing to break.")
    if mode == "order":
        if went_wrong:
            return sentence(
                "The rules ran inputs first, so each ran before the nodes using it had pushed "
                "into its grad; only the output's rule, seeded with 1 before any rule runs, "
                "held its whole gradient, ",
                *changed,
                ":",
            )
        if len(runs) == 1:
            return sentence(
                "Only the output has a rule here, so the order cannot matter: an op feeding "
                "another, as in (a*b) + c, shows the break."
            )
        return sentence("Every rule that ran early holds 0 in the right pass too: nothing changes.")
    received: dict[int, int] = {}
    for step in broken.steps:
        for i in step.inputs:
            if i.pushed is not None:
                received[i.id] = received.get(i.id, 0) + 1
    reused = [broken.nodes[k].name for k, count in received.items() if count > 1]
    if not reused:
        return sentence(
            "No value is reused: each receives gradient along one path only, so = and += "
            "give the same gradients (a value used twice, as a in a*b + a, shows the break)."
        )
    listed = [part for name in reused for part in (", ", Name(name))][1:]
    one = len(reused) == 1
    if not went_wrong:
        return sentence(
            *listed,
            f" {'is' if one else 'are'} used more than once, but every share overwritten was 0, "
            "so = and += agree here.",
        )
    return sentence(
        *listed,
        f" {'is' if one else 'are'} used more than once and "
        f"{'receives' if one else 'receive'} a share from each use; with = each write "
        "replaces the last, ",
        *changed,
        ":",
    )


def _same(x: float, y: float) -> bool:
    """Equal, or both nan."""
    return x == y or (math.isnan(x) and math.isnan(y))
