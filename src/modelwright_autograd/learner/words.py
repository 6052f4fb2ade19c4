"""The grader's words: what a learner reads for an error, a request that hung or crashed,
a TODO, the walk watched on the diamond, a gradient counted more than once or overwritten,
an array and a tensor program's shapes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import child
from .scalar.cases import OP_CHECKS
from .scalar.oracle import Oracle, close
from .scalar.programs import OPS, Program, input_names, slot_names
from .tensor.programs import Program as TensorProgram

TODO = "not done yet:"  # how a diagnosis of NotImplementedError begins
BECAUSE = "fails because "  # how a row failing only because of a more basic one begins
#: How a walk in the wrong order shows on the diamond graph (both engines' "order" row):
#: no gradient reached the inputs, or one reached them too early.
NO_GRADIENT_ORDER = (
    "the inputs got no gradient: backward() must call every node's _backward, "
    "outputs first: walk the topological order in reverse"
)
EARLY_ORDER = (
    "a node passed its gradient on before all of its users had pushed theirs: "
    "sort topologically and walk in reverse"
)


def walk_diagnosis(program: Program, reply: dict[str, Any]) -> str:
    """What is wrong with the walk a ``walk`` reply recorded on ``program`` ("" when every
    op node ran once, after all of its users), with the line to look at."""
    where = reply["where"]
    backward = f"; look at {where['backward']} (backward)" if where["backward"] else ""
    if reply["copies"]:
        init = f"; look at {where['init']} (__init__)" if where["init"] else ""
        return (
            "counted once per path: _prev holds copies of the children, so the sort cannot "
            "see two paths meet at a node, and its gradient comes out a whole multiple of "
            f"the right one. Keep the Values themselves: self._prev = set(_children){init}"
        )
    n, steps = len(program["inputs"]), program["steps"]
    calls = reply["calls"]
    counts = {slot: calls.count(slot) for slot in range(n, n + len(steps))}
    k = max(counts.values())
    if k > 1:
        return (
            f"counted {k} times: backward() ran a node's _backward {k} times, once per path to "
            "it, so its gradient reached its inputs more than once. The topological sort needs "
            "a visited set, to list each node once, checked when a node is taken as well as "
            f"when pushed (two users can push it before it is done){backward}"
        )
    missing = [slot for slot, count in counts.items() if count == 0]
    merged = [pair for pair in reply["equal"] if pair[0] in missing or pair[1] in missing]
    if missing and merged:
        names = slot_names(program)
        i, j = merged[0]
        eq = f" (Value.__eq__, {where['eq']})" if where["eq"] else ""
        return (
            f"backward() ran the _backward of {len(counts) - len(missing)} of the "
            f"{len(counts)} nodes: {names[i]} and {names[j]} are two nodes, but == calls them "
            f"equal and they hash alike{eq}, so the visited set took them for one. A node is "
            "itself, not its number: remove __eq__ and __hash__ (or hash by id(self))"
        )
    if missing:
        return (
            f"backward() ran the _backward of {len(counts) - len(missing)} of the "
            f"{len(counts)} nodes: it must call every node's{backward}"
        )
    position = {slot: calls.index(slot) for slot in counts}
    pairs = [  # (node, one of its users)
        (read, n + j)
        for j, step in enumerate(steps)
        for read in step[1 : 1 + OPS[step[0]].arity]
        if read >= n
    ]
    early = [(node, user) for node, user in pairs if position[node] < position[user]]
    if not early:
        return ""
    if position[n + len(steps) - 1] == 0:
        return (
            "a node passed its gradient on before all of its users had pushed theirs (a "
            "breadth-first walk does that on a diamond): sort topologically and walk in "
            f"reverse{backward}"
        )
    if len(early) == len(pairs):
        return (
            "every node ran before its users: the walk goes through the topological order "
            f"forwards. Walk the topological order in reverse: for node in reversed(topo){backward}"
        )
    return (
        "a node ran before one of its users though the walk is reversed: the sort appends a "
        "node before its children (pre-order). Append it after all of its children "
        f"(post-order){backward}"
    )


def multiple_of(pairs: list[tuple[list[float], list[float]]]) -> int:
    """k when every gradient got is k times the one wanted, k a whole number >= 2 (some
    wanted gradient not 0), else 0: the mark of a gradient counted k times."""
    found = set()
    for got, want in pairs:
        for g, w in zip(got, want):
            if w == 0.0:
                if g != 0.0:
                    return 0
                continue
            k = round(g / w)
            if k < 2 or not close(g, k * w):
                return 0
            found.add(k)
    return found.pop() if len(found) == 1 else 0


def op_label(op: str) -> str:
    """The row name of an op (``a + b``)."""
    return next(check.label for check in OP_CHECKS if check.op == op)


def network_right(reply: dict[str, Any]) -> bool:
    """Every parameter gradient of a network_gradients reply matches its differences."""
    pairs = zip(reply["grads"], reply["differences"])
    return all(any(close(g, d) for d in pair) for g, pair in pairs)


def inputs_text(program: Program) -> str:
    names = input_names(program)
    text = ", ".join(f"{n} = {x:g}" for n, x in zip(names, program["inputs"]))
    return text


def op_words(op: str) -> str:
    return {
        "add": "+",
        "mul": "*",
        "sub": "-",
        "div": "/",
        "pow": "**",
        "neg": "unary -",
    }.get(op, op)


def bug_matches(bug: Callable[..., list[float]], program: Program, result: dict[str, Any]) -> bool:
    args = [*program["inputs"]]
    step = program["steps"][0]
    if OPS[step[0]].constant:
        args.append(step[-1])
    try:
        predicted = bug(*args)
    except (ArithmeticError, ValueError):
        return False
    return all(close(g, p) for g, p in zip(result["grads"], predicted))


def swapped_result(op: str, a: float, c: float) -> float:
    return a - c if op == "rsub" else a / c


def is_absent(result: dict[str, Any], method: str, functions: tuple[str, ...] = ()) -> bool:
    """True when the step failed because the engine's class has no such method or operator
    (``method``, the attribute looked up), or its module no such function (``functions``)."""
    if result.get("stage") != "forward":
        return False
    error = result["error"]
    message = error["message"]
    if error["type"] == "AttributeError":
        return f"'{method}'" in message and not error["where"]
    if error["type"] == "NameError":
        return any(function in message for function in functions)
    unsupported = ("unsupported operand", "bad operand type")
    return error["type"] == "TypeError" and any(text in message for text in unsupported)


def overwritten_text(
    ops: list[str], basic: tuple[str, ...], words: Callable[[str], str], thing: str
) -> str:
    """Words for a gradient overwritten where it should accumulate, seen through ``ops``:
    the `=` is in the backward of the ``basic`` ones among them (of all of them when none
    is basic); ``words`` names an op (``+``), ``thing`` is "value" or "tensor"."""
    first = [op for op in ops if op in basic] or ops
    text = (
        "the gradient was overwritten, not accumulated: `=` where `+=` belongs in the "
        f"backward of {' and '.join(map(words, first))}. A {thing} used twice gets the sum "
        "of both paths"
    )
    others = [op for op in ops if op not in first]
    if others:
        text += f" (also seen through {', '.join(map(words, others))})"
    return text


def array_text(a: np.ndarray) -> str:
    """An array on one line, six digits."""
    return " ".join(np.array2string(a, precision=6, separator=", ").split())


def shapes_text(program: TensorProgram) -> str:
    """The shapes of a tensor program's inputs: '(2, 3) and (3,)'."""
    shapes = [tuple(x["shape"]) for x in program["inputs"]]
    return " and ".join(str(s) for s in shapes)


def look_at(result: dict[str, Any], step: int = 0) -> str:
    """' (look at engine.py:57)': where it raised, else where the op's _backward is."""
    where = result.get("error", {}).get("where") or (result.get("rules") or [""])[step]
    return f" (look at {where})" if where else ""


def error_text(error: dict[str, Any]) -> str:
    if error["type"] == "NotAValue":  # see probe._forward
        return error["message"] + (f" ({error['where']})" if error["where"] else "")
    text = f"{error['type']}: {error['message']}" if error["message"] else error["type"]
    if error["type"] == "MemoryError":
        text += f" (the engine's process may use at most {child.MEMORY_LIMIT / 2**30:g} GiB)"
    elif "File too large" in error["message"]:
        limit = child.FILE_LIMIT / 2**20
        text += f" (the engine's process may write files of at most {limit:g} MiB)"
    return text + (f" ({error['where']})" if error["where"] else "")


def result_error(
    result: dict[str, Any], oracle: Oracle | None = None, program: Program | None = None
) -> str:
    """Words for a program that raised: a TODO says which, and whether the op's rule is
    right already (checked with the grader's own walk)."""
    error = result["error"]
    if error["type"] == "NotAValue":
        return f"{error_text(error)}: each op must return a new Value of the engine's own class"
    if error["type"] == "NotImplementedError":
        text = f"{TODO} {error['message'] or 'NotImplementedError'}"
        rules = result.get("rules")
        same = rules and rules.get("error", {}).get("message") == error["message"]
        if rules and not same and oracle is not None and program is not None:
            if "error" in rules:
                if rules["error"]["type"] == "NotImplementedError":
                    text += f"; and its rule: {rules['error']['message']}"
            else:
                _, grads = oracle.evaluate(program)
                if all(close(g, w) for g, w in zip(rules["grads"], grads)):
                    text += " (the op's own backward rule is already right)"
                else:
                    text += " (and with the grader's walk, this op's rule gives wrong gradients)"
        return text
    return f"{result['stage']} raised {error_text(error)}"


def failure_text(reply: dict[str, Any], what: str) -> str:
    """Words for a request that did not come back (it hung or crashed) or raised."""
    failure = reply.get("failure")
    if failure == "timeout" and reply.get("where"):
        function = reply["where"].rsplit(" in ", 1)[-1]
        walk = " (a topological sort that never marks nodes visited loops on a diamond)"
        return (
            f"{what} did not finish in {reply['seconds']:g} s and was stopped in "
            f"{reply['where']}: a loop there that never ends?"
            + (walk if "backward" in function or "topo" in function else "")
        )
    if failure == "timeout":
        return (
            f"{what} did not finish in {reply['seconds']:g} s and was stopped: an infinite "
            "loop? (a topological sort that never marks nodes visited loops on a diamond)"
        )
    if failure == "crash":
        output = "; ".join(reply.get("output", []))
        return f"the engine's process {reply['how']} during {what}" + (
            f": {output}" if output else ""
        )
    if reply["error"]["type"] == "NotImplementedError":
        return f"{TODO} {reply['error']['message']}"
    return f"{what} raised {error_text(reply['error'])}"


def training_verdict(loss0: float, loss1: float, accurate: bool, need: str) -> tuple[bool, str]:
    """Whether a training check passes (the loss fell and the accuracy was reached), and
    what to add to its line when it does not; ``need`` names the accuracy target."""
    ok = loss1 < loss0 and accurate
    if loss1 == loss0:
        return ok, "; the loss did not move at all: the SGD updates do not reach the network"
    if not ok:
        return ok, f"; the gate needs the loss to fall and {need}"
    return ok, ""
