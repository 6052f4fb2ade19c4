"""What a run may cost: the budgets the command line sets on what a user asks for, and
the checks that refuse a run beyond them before anything is built, naming the option to
change (exit code 2).

The library checks structure only (a model's shapes, a file's contents); the bounds it
applies to files (``checks.MAX_PARAMETERS``, ``MAX_LM_*``, a step's tokens) refuse hostile
or corrupt ones, not costly requests. Measured in docs/training.md.
"""

from __future__ import annotations

from pathlib import Path

from ..checkpoint import MAX_LAYERS, Architecture, CheckpointError
from ..checks import MAX_LM_PARAMETERS, MAX_PARAMETERS
from ..lm import models
from ..training import language
from ..training.settings import (
    DIGITS_CLASSES,
    DIGITS_FEATURES,
    DIGITS_IMAGES,
    MAX_STEPS,
    TrainConfig,
)
from .options import UsageError

#: What one MLP or CNN run may cost, checked with the options before anything is built
#: (``check_work``). Multiply-adds ("MACs") count points x weights. "pass": MACs of one
#: forward pass over the training set (scoring does one, a full-batch step one and its
#: backward). "activations": floats the tensor engine holds for a pass, points x the sum of
#: the layer widths. "run" and "run activations": the same summed over all the steps. What
#: a step at these limits costs in time and memory is measured in docs/training.md.
WORK_LIMITS = {
    "scalar": {"pass": 5_000_000, "run": 10**9},
    "tensor": {
        "pass": 10**10,
        "activations": 40_000_000,
        "run": 10**12,
        "run activations": 5 * 10**9,
    },
}
#: The multiply-adds a language-model run may take in all (steps x tokens x weights,
#: about six per weight and token with the backward pass); nanoGPT's CPU run is
#: 2,000 x 768 x 0.8M = 1.2e12, its Shakespeare run 5,000 x 16,384 x 10.8M = 5.3e15.
MAX_RUN_WORK = 10**16


def check_work(config: TrainConfig) -> None:
    """Refuse a run whose model could not be checkpointed or whose cost is beyond
    WORK_LIMITS, as a UsageError naming the option to change. Only sizes are multiplied
    here: nothing is allocated, so a huge --hidden is refused at once."""
    digits = config.dataset == "digits"
    nin = DIGITS_FEATURES if digits else 2
    widths = (nin, *config.hidden, DIGITS_CLASSES if config.loss == "ce" else 1)
    weights = Architecture(config.engine, nin, widths[1:], config.activation).num_parameters()
    macs = weights  # an MLP uses each weight once per point
    if config.model == "cnn":  # a conv weight is used at every position: 8x8, then 4x4
        c1, c2 = config.hidden
        cnn = Architecture("tensor", nin, (c1, c2, DIGITS_CLASSES), "relu", model="cnn")
        weights = cnn.num_parameters()
        macs = 9 * c1 * 64 + 9 * c1 * c2 * 16 + 4 * c2 * DIGITS_CLASSES
        widths = (nin, 64 * c1, 16 * c1, 16 * c2, 4 * c2, DIGITS_CLASSES)
    engine = f"the {config.engine} engine"
    if len(widths) - 1 > MAX_LAYERS:
        raise UsageError(
            "--hidden",
            f"{len(config.hidden):,} hidden sizes make {len(widths) - 1:,} layers; a "
            f"checkpoint holds at most {MAX_LAYERS:,}",
        )
    if weights > MAX_PARAMETERS[config.engine]:
        sizes = ",".join(map(str, config.hidden))
        if len(sizes) > 40:  # thousands of layers: keep the message one short line
            sizes = f"{sizes[:37]}..."
        raise UsageError(
            "--hidden",
            f"{sizes} makes a {config.model.upper()} of {weights:,} weights; a {config.engine} "
            "checkpoint "
            f"holds at most {MAX_PARAMETERS[config.engine]:,}",
        )
    limits = WORK_LIMITS[config.engine]
    points = DIGITS_IMAGES if digits else config.samples or 0
    smaller = "a smaller --hidden" if digits else "fewer --samples or a smaller --hidden"
    if config.engine == "scalar":
        smaller += " (or --engine tensor)"
    size_option = "--hidden" if digits else "--samples"
    per_pass = points * macs
    if per_pass > limits["pass"]:
        raise UsageError(
            size_option,
            f"{points:,} points through {weights:,} weights is {per_pass:,} multiply-adds a "
            f"pass; {engine} allows {limits['pass']:,}: use {smaller}",
        )
    activations = points * sum(widths)
    if activations > limits.get("activations", activations):
        raise UsageError(
            size_option,
            f"{points:,} points through layers {'-'.join(map(str, widths))} hold "
            f"{activations:,} floats a pass; {engine} allows {limits['activations']:,}: "
            f"use {smaller}",
        )
    batch = min(config.batch_size or points, points)
    for what, per_step in (("run", macs), ("run activations", sum(widths))):
        total = config.steps * batch * per_step
        if total > limits.get(what, total):
            unit = "multiply-adds" if what == "run" else "activation floats"
            raise UsageError(
                "--steps",
                f"{config.steps:,} steps of {batch:,} points is {total:.2g} {unit} in all; "
                f"{engine} allows {limits[what]:.0e}: use fewer --steps or a smaller "
                f"--batch-size",
            )


def check_lm_work(settings: language.LMSettings) -> None:
    """Refuse a run beyond the stated limits (weights a checkpoint can hold, the memory a
    step needs against what is available, tokens a step, work in all), naming the option
    to change."""
    config = settings.model
    weights = models.num_parameters(config)
    if weights > MAX_LM_PARAMETERS:
        raise UsageError(
            "--n-embd",
            f"the {config.kind} would have {weights:,} weights; a checkpoint holds at most "
            f"{MAX_LM_PARAMETERS:,}: use a smaller --n-embd or --n-layer",
        )
    need, free = language.memory_estimate(settings), language.available_memory()
    if free is not None and need > free:
        raise UsageError(
            "--batch-size",
            f"training the {config.kind} ({weights:,} weights, a batch of "
            f"{settings.batch_size} x {config.block_size} tokens) needs about "
            f"{need / 2**30:.1f} GiB (weights, gradients, AdamW state, activations) and "
            f"{free / 2**30:.1f} GiB is available: use a smaller --batch-size, --block-size "
            "or --n-embd",
        )
    tokens = settings.batch_size * config.block_size
    if tokens > language.MAX_STEP_TOKENS:
        raise UsageError(
            "--batch-size",
            f"{settings.batch_size} x a block of {config.block_size} is {tokens:,} tokens a "
            f"step; at most {language.MAX_STEP_TOKENS:,}: use a smaller --batch-size",
        )
    work = 6 * settings.steps * tokens * weights
    if work > MAX_RUN_WORK or settings.steps > MAX_STEPS:
        raise UsageError(
            "--steps",
            f"{settings.steps:,} steps of {tokens:,} tokens through {weights:,} weights is "
            f"{work:.1e} multiply-adds; at most {MAX_RUN_WORK:.0e}: use fewer --steps",
        )


def check_scoring_cost(path: Path, config: TrainConfig, samples_given: bool) -> None:
    """Refuse, before any data is made, a scoring pass (``evaluate``) the training
    budget would refuse: --samples 1,000,000 through a scalar MLP is minutes and
    gigabytes. A size the user gave is a usage error; one from the file is the
    checkpoint's fault."""
    try:
        check_work(config)
    except UsageError as e:
        cost = e.message.split(": use ")[0]  # the advice names train's options; keep the cost
        if samples_given:
            raise UsageError("--samples", f"{cost}: use fewer --samples") from None
        raise CheckpointError(path, f"its data settings cost too much to score: {cost}") from None
