"""Exercise 6 for a learner's own engine: random expressions built with their ``Value``,
each gradient compared with finite differences, in the learner's own Python (the starter
notebook calls it; ``check`` runs the same programs in a separate process)."""

from __future__ import annotations

from ..gradcheck import GradcheckError
from .scalar.oracle import close, finite_difference_oracle
from .scalar.programs import Program, evaluate, input_names, random_programs, to_code

# The ops every course engine has, then the optional methods used when the class has them.
_ALWAYS = ("add", "mul", "pow", "neg", "sub", "div", "add_c", "radd", "mul_c", "rmul")
_ALWAYS += ("sub_c", "rsub", "div_c", "rdiv")
_METHODS = ("tanh", "relu", "exp", "log", "sigmoid")


def gradcheck_random(value: type, count: int = 100, seed: int = 0) -> int:
    """Build ``count`` random expressions with ``value`` (a learner's Value class), call
    backward() on each and compare the output and every input's gradient with five-point
    central differences (to 1e-6). Returns ``count``; raises GradcheckError with the
    smallest expression that disagrees, as lines to paste."""
    ops = [*_ALWAYS, *(op for op in _METHODS if callable(getattr(value, op, None)))]
    oracle = finite_difference_oracle()
    wrong: list[tuple[Program, str]] = []
    for program in random_programs(ops, count, seed):
        slots = evaluate(program, value)
        slots[-1].backward()
        out, grads = oracle.evaluate(program)
        got = [float(v.grad) for v in slots[: len(program["inputs"])]]
        if not close(float(slots[-1].data), out):
            wrong.append((program, f"the output is {float(slots[-1].data)!r}, expected {out!r}"))
        elif not all(close(g, w) for g, w in zip(got, grads)):
            names = input_names(program)
            i = next(i for i, (g, w) in enumerate(zip(got, grads)) if not close(g, w))
            wrong.append((program, f"{names[i]}.grad is {got[i]!r}, expected {grads[i]!r}"))
    if wrong:
        program, what = min(wrong, key=lambda pair: len(pair[0]["steps"]))
        out, grads = oracle.evaluate(program)
        labels = ["out.data", *(f"{n}.grad" for n in input_names(program))]
        code = to_code(program, [], dict(zip(labels, [out, *grads])))
        raise GradcheckError(
            f"{len(wrong)} of {count} random expressions disagree with finite differences; "
            f"the smallest: {what}\n" + "\n".join(code)
        )
    return count


__all__ = ["gradcheck_random"]
