"""What a language-model checkpoint keeps besides the weights so that ``train --resume``
can continue the run (the AdamW state, the steps taken, the random generators' states), and
putting it back into a run being set up, which then takes the same steps as one never
stopped (training/resume.py reads the rest: the settings and the data).

A run folder holds two such checkpoints: ``last.json``, the last step (written when the
run ends, also by Ctrl-C), which ``--resume RUN`` reads, and ``model.json``, the best so
far, which ``--resume RUN/model.json`` reads. The resumed run writes a new run folder (a
run owns its folder), whose metrics name the checkpoint it started from; docs/training.md.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import CheckpointError
from ..optim import AdamW
from ..optim_state import OptimizerStateError, optimizer_from_json, optimizer_to_json

#: The checkpoint of a run's last step, beside model.json (its best).
LAST = "last.json"


def generators(model: Any) -> list[np.random.Generator]:
    """The random generators a model's modules draw from (its dropout masks), each once,
    in the order of its modules."""
    found: dict[int, np.random.Generator] = {}

    def walk(module: Any) -> None:
        for value in vars(module).values():
            if isinstance(value, np.random.Generator):
                found.setdefault(id(value), value)
        for _, child in module.named_children():
            walk(child)

    walk(model)
    return list(found.values())


def rng_states(model: Any, batches: np.random.Generator) -> dict[str, Any]:
    """The generators' states now: the batches' and the model's."""
    return {
        "batches": batches.bit_generator.state,
        "model": [g.bit_generator.state for g in generators(model)],
    }


def run_state(model: Any, optimizer: AdamW, step: int, rngs: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint entries a run resumes from after ``step`` steps: ``"optimizer"``
    and ``"resume"`` (docs/checkpoints.md)."""
    return {
        "optimizer": optimizer_to_json(optimizer, model),
        "resume": {"step": step, "rng": rngs},
    }


@dataclass(frozen=True)
class ResumePoint:
    """Where a checkpoint's run stopped: the path, the steps taken, and its saved entries."""

    path: Path
    step: int
    optimizer: dict[str, Any]
    rng: dict[str, Any]

    @classmethod
    def read(cls, path: Path, metadata: dict[str, Any]) -> ResumePoint:
        """The resume entries of a checkpoint's metadata, or a CheckpointError."""
        resume, optimizer = metadata.get("resume"), metadata.get("optimizer")
        if not isinstance(resume, dict) or not isinstance(optimizer, dict):
            raise CheckpointError(
                path, "holds no optimizer state to resume from (written before --resume existed?)"
            )
        step, rng = resume.get("step"), resume.get("rng")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise CheckpointError(path, f"has a bad resume step {str(step)[:40]!r}")
        if not (isinstance(rng, dict) and isinstance(rng.get("model"), list)):
            raise CheckpointError(path, "has no generator states under 'resume'")
        return cls(path, step, optimizer, rng)

    def restore(self, model: Any, optimizer: AdamW, batches: np.random.Generator) -> None:
        """Put the optimiser state and the generators' states into a run being set up (the
        model already holds the checkpoint's weights); a CheckpointError for a bad entry,
        raised before any state is changed when it is the generators'."""
        mine = generators(model)
        saved = self.rng["model"]
        if len(saved) != len(mine):
            raise CheckpointError(
                self.path, f"has {len(saved)} model generator states, not {len(mine)}"
            )
        try:
            for g, state in zip([batches, *mine], [self.rng.get("batches"), *saved]):
                g.bit_generator.__class__().state = state  # checked on a spare first
        except (TypeError, ValueError, KeyError, AttributeError):
            raise CheckpointError(self.path, "has a generator state NumPy cannot take") from None
        try:
            optimizer_from_json(self.path, self.optimizer, optimizer, model)
        except OptimizerStateError as e:
            raise CheckpointError(self.path, e.problem) from None
        for g, state in zip([batches, *mine], [self.rng["batches"], *saved]):
            g.bit_generator.state = state


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM wait (they are delivered as it ends), so that an
    optimiser step and its bookkeeping are done whole or not at all, and a run stopped by
    Ctrl-C can be resumed from a consistent state. Main thread only, as Python's handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
