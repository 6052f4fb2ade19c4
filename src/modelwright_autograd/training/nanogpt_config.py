"""nanoGPT's ``config`` (its train.py's settings, which its ``ckpt.pt`` holds) and our
run's training settings, each from the other: what an exported ``ckpt.pt`` says about
the run, and what an imported one resumes with (docs/checkpoints.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..lm.corpus import Source
from . import language, lm_run
from .settings import MAX_STEPS


def is_number(value: Any) -> bool:
    """A number, or a one-number floating-point tensor (nanoGPT saves some as tensors)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        hasattr(value, "numel") and value.numel() == 1 and value.is_floating_point()
    )


def setting(training: dict, key: str, default: float) -> float:
    """A number from the run's stored settings, or ``default`` if it holds none."""
    value = training.get(key)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else default


def betas_of(training: dict) -> tuple[float, float]:
    """The run's stored AdamW betas, or (0.9, 0.99) if it holds none."""
    betas = training.get("betas")
    if isinstance(betas, list) and len(betas) == 2:
        return (setting({"b": betas[0]}, "b", 0.9), setting({"b": betas[1]}, "b", 0.99))
    return (0.9, 0.99)


def to_nanogpt_config(run: lm_run.LMRun) -> dict[str, Any]:
    """nanoGPT's ``config`` (its train.py's settings) from ours; sample.py reads its
    ``dataset``, the folder under data/ that holds meta.pkl."""
    c, t = run.model.config, run.training
    data = run.checkpoint.metadata.get("data")
    label = (
        Source(data.get("dataset"), data.get("path"), "").label
        if isinstance(data, dict)
        else "data"
    )
    lr, min_lr, steps = t.get("lr"), t.get("min_lr"), t.get("steps")
    beta1, beta2 = betas_of(t)
    config = {
        "dataset": f"{label}_char",
        "batch_size": t.get("batch_size"),
        "block_size": c.block_size,
        "n_layer": c.n_layer,
        "n_head": c.n_head,
        "n_embd": c.n_embd,
        "dropout": c.dropout,
        "bias": c.bias,
        "learning_rate": lr,
        "max_iters": steps,
        "weight_decay": t.get("weight_decay"),
        "beta1": beta1,
        "beta2": beta2,
        "grad_clip": t.get("grad_clip"),
        "decay_lr": min_lr != lr or bool(t.get("warmup")),
        "warmup_iters": t.get("warmup"),
        "lr_decay_iters": steps,
        "min_lr": min_lr,
        "eval_interval": t.get("eval_interval"),
        "eval_iters": t.get("eval_iters"),
        "gradient_accumulation_steps": 1,
    }
    return {k: v for k, v in config.items() if isinstance(v, (int, float, str, bool))}


def from_nanogpt_config(
    kind: str, config: Mapping[str, Any], batch_size: int | None, seed: int
) -> dict[str, Any]:
    """The settings an imported run resumes with: nanoGPT's ``config`` where it holds a
    value train would take (its cosine decays over max_iters, lr_decay_iters being
    nanoGPT's other name for it), train's defaults for the rest."""

    def whole(key: str, least: int) -> int | None:
        value = config.get(key)
        return value if type(value) is int and least <= value <= MAX_STEPS else None

    def real(key: str, below: float = np.inf) -> float | None:
        value = config.get(key)
        ok = is_number(value) and 0 <= float(value) < below and np.isfinite(float(value))
        return float(value) if ok else None

    lr = real("learning_rate")
    t = language.default_training(kind, whole("max_iters", 1), lr if lr else None)
    found = {
        "batch_size": batch_size,
        "weight_decay": real("weight_decay"),
        "grad_clip": real("grad_clip"),
        "eval_interval": whole("eval_interval", 1),
        "eval_iters": whole("eval_iters", 1),
    }
    t.update({k: v for k, v in found.items() if v is not None})
    beta1, beta2 = real("beta1", 1.0), real("beta2", 1.0)
    if beta1 is not None and beta2 is not None:
        t["betas"] = (beta1, beta2)
    if config.get("decay_lr") is False:
        t["min_lr"], t["warmup"] = t["lr"], 0
    else:
        min_lr, warmup = real("min_lr", t["lr"] * (1 + 1e-12)), whole("warmup_iters", 0)
        t["min_lr"] = t["min_lr"] if min_lr is None else min_lr
        t["warmup"] = warmup if warmup is not None and warmup < t["steps"] else t["warmup"]
    return {**t, "betas": list(t["betas"]), "seed": seed}
