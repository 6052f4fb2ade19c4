"""What a wrong gradient's numbers say: each usual bug of backprop by hand is a pattern in
the learner's array beside the one wanted (PyTorch's vector-Jacobian product of the step,
given the learner's own upstream gradients), and the first pattern that fits names it.
Pure NumPy: the tests feed it arrays directly."""

from __future__ import annotations

import numpy as np

from .reference import consumers


def agree(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal to float64 rounding: 1e-6 relative (the course's tolerance), with an absolute
    floor at 1e-9 of the array's scale (a gradient that is 0 in exact arithmetic is a few
    1e-18 in both)."""
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-9 * scale)


def verdict(got: np.ndarray, want: np.ndarray) -> str:
    """'exact', or 'close (max difference 3.5e-18)'; call only when they agree."""
    if np.array_equal(got, want):
        return "exact"
    return f"close (max difference {float(np.abs(got - want).max()):.2g})"


def _read_by(name: str) -> str:
    """' in probs = counts * counts_sum_inv': the step a tensor is read by (its first)."""
    steps = consumers(name)
    return f" in {steps[0].words}" if steps else ""


def _unbroadcast(got: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """``got`` summed over the axes a ``shape`` array was stretched along to reach
    ``got.shape``, or None when it cannot have been."""
    try:
        if np.broadcast_shapes(got.shape, shape) != got.shape:
            return None
    except ValueError:
        return None
    lead = got.ndim - len(shape)
    summed = got.sum(axis=tuple(range(lead))) if lead else got
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return summed.sum(axis=axes, keepdims=True) if axes else summed


def _axes_text(got_shape: tuple[int, ...], shape: tuple[int, ...]) -> str:
    lead = len(got_shape) - len(shape)
    axes = [*range(lead)] + [
        lead + i for i, n in enumerate(shape) if n == 1 and got_shape[lead + i] != 1
    ]
    return ", ".join(map(str, axes))


def shape_text(name: str, got: np.ndarray, want: np.ndarray) -> str:
    """Words for a gradient of the wrong shape, with the cause the numbers show."""
    has = f"d{name} has shape {got.shape}, but {name} has {want.shape}"
    if got.ndim == want.ndim == 2 and got.shape == want.shape[::-1]:
        right = " (its transpose is right)" if agree(got.T, want) else ""
        return (
            f"{has}: a transpose on the wrong side{right}. For out = a @ b, da = dout @ b.T "
            "and db = a.T @ dout"
        )
    squeezed = tuple(n for n in want.shape if n != 1)
    if got.shape == squeezed and got.shape != want.shape:
        right = " (the numbers are right)" if agree(got.reshape(want.shape), want) else ""
        return f"{has}: keepdims lost{right}. Sum with keepdims=True, so the axis stays as 1"
    summed = _unbroadcast(got, want.shape)
    if summed is not None:
        right = agree(summed, want)
        axes = _axes_text(got.shape, want.shape)
        return (
            f"{has}: a sum over the broadcast axis missing. {name} was stretched along axis "
            f"{axes}{_read_by(name)}, so its gradient sums over that axis"
            + ("" if right else " (and after that sum the numbers are still not right)")
        )
    spread = _unbroadcast(want, got.shape)
    if spread is not None and agree(got, spread):
        axes = _axes_text(want.shape, got.shape)
        return f"{has}: summed over axis {axes}, which {name} was not broadcast along"
    return has


def _ratio(got: np.ndarray, want: np.ndarray) -> float | None:
    """k when got is k times want everywhere want is not 0 (and 0 where it is)."""
    scale = float(np.abs(want).max(initial=0.0))
    if scale == 0.0:
        return None
    big = np.abs(want) > 1e-6 * scale
    k = float(np.median(got[big] / want[big]))
    return k if agree(got, k * want) else None


def ratio_text(name: str, k: float, n: int) -> str:
    """Words for a gradient k times the right one, naming the factors that give k."""
    known = {
        (n - 1) / n: "n where n - 1 belongs: bnvar divides by n - 1 (Bessel's correction), "
        "and so does its gradient",
        n / (n - 1): "n - 1 where n belongs: only the variance has Bessel's n - 1; the "
        "mean divides by n",
        float(n): "n times too big: a 1/n is missing (a mean over the batch of n)",
        1 / n: "n times too small: a 1/n too many",
        -1.0: "the sign is flipped",
        2.0: "twice too big",
        0.5: "half too big: is the 2 of bndiff**2 missing?",
    }
    for value, words in known.items():
        if np.isclose(k, value, rtol=1e-6):
            return f"{k:.6g} times PyTorch's: {words}"
    return f"{k:.6g} times PyTorch's everywhere"


def repeated_rows_text(got: np.ndarray, want: np.ndarray, Xb: np.ndarray) -> str:
    """Words for dC right on the characters seen once in the batch and wrong on the ones
    seen several times ("" when that is not the pattern)."""
    counts = np.bincount(Xb.ravel(), minlength=want.shape[0])
    once, many = counts == 1, counts > 1
    rows_right = np.array([agree(g, w) for g, w in zip(got, want)])
    if many.any() and rows_right[once].all() and not rows_right[many].any():
        return (
            "right for the characters seen once in the batch, wrong for those seen more than "
            "once: dC[Xb] += demb (or =) writes a repeated row once, so its contributions do "
            "not add. Add them all: np.add.at(dC, Xb, demb), or a loop with +="
        )
    return ""


def wrong_text(
    name: str,
    got: np.ndarray,
    want: np.ndarray,
    parts: dict[str, np.ndarray],
    n: int,
    Xb: np.ndarray | None = None,
) -> str:
    """Why ``got`` is not ``want`` (both for tensor ``name``), from the numbers: the shape,
    one path of a tensor used twice, repeated embedding rows, a constant factor."""
    if got.shape != want.shape:
        return shape_text(name, got, want)
    if len(parts) > 1:
        for out, part in parts.items():
            if agree(got, part):
                others = " and ".join(o for o in parts if o != out)
                return (
                    f"overwritten instead of added: this is the gradient through {out} alone; "
                    f"{name} is also read by {others}, and its gradient is the sum of both paths "
                    f"(+ where you have one)"
                )
        for out, part in parts.items():  # one path off by a factor, the others right
            rest = got - sum(p for o, p in parts.items() if o != out)
            k = _ratio(rest, part)
            if k is not None and not np.isclose(k, 1.0):
                return f"the path through {out} is " + ratio_text(name, k, n)
    if name == "C" and Xb is not None and (text := repeated_rows_text(got, want, Xb)):
        return text
    if not np.any(got) and np.any(want):
        return "all zeros: no gradient reached it"
    k = _ratio(got, want)
    if k is not None:
        return ratio_text(name, k, n)
    diff = np.abs(got - want)
    at = np.unravel_index(int(diff.argmax()), diff.shape)
    where = ", ".join(map(str, at))
    return (
        f"max difference {float(diff.max()):.3g}, at [{where}]: yours {float(got[at]):.6g}, "
        f"PyTorch's {float(want[at]):.6g}"
    )


def fused_text(name: str, got: np.ndarray, want: np.ndarray, values: dict, n: int) -> str:
    """Why a fused form is wrong: the usual slips of each (a one-hot left out, the biased
    variance's n), else what ``wrong_text`` sees."""
    if got.shape == want.shape and name == "logits":
        onehot = np.zeros_like(want)
        onehot[np.arange(n), values["Yb"]] = 1.0 / n
        if agree(got, want + onehot):
            return "softmax / n alone: the one-hot is missing. dlogits = (softmax - onehot) / n"
        if agree(got, want * n + onehot * n):
            return "softmax alone: both the one-hot and the 1/n are missing"
    if got.shape == want.shape and name == "hprebn" and values["dhpreact"] is not None:
        biased = values["bngain"] * values["bnvar_inv"] / n
        g, raw = values["dhpreact"], values["bnraw"]
        biased = biased * (n * g - g.sum(0) - raw * (g * raw).sum(0))
        if agree(got, biased):
            return (
                "the formula of a variance divided by n: this forward divides by n - 1 "
                "(Bessel's correction), which puts n / (n - 1) before the last sum"
            )
    return wrong_text(name, got, want, {}, n)


def error_hint(name: str) -> str:
    """A hint for a gradient function that raised, when its step is a matrix product."""
    step = next((s for s in consumers(name) if "@" in s.words), None)
    if step is None:
        return ""
    return f" ({step.words}: for out = a @ b, da = dout @ b.T and db = a.T @ dout)"
