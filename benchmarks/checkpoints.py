"""Checkpoints in safetensors against the JSON they replaced (``python -m
benchmarks.checkpoints``; docs/checkpoints.md): for nanoGPT's Shakespeare GPT (10.8M
weights, float32, with its AdamW state after one step) the time to save and to load a
checkpoint and its size on disk over the raw bytes of its tensors plus its JSON; for
nanoGPT's CPU GPT (0.8M) the time from launching ``sample`` to its first character, and
what saving the best checkpoint at every evaluation costs a run at the default evaluation
interval. Each figure is printed beside the same measurement of the format before
(version 2: every weight a float.hex string and each moment base64 in one JSON file, as
``checkpoint.save_checkpoint`` wrote it until 36d863b, re-created here as the baseline; it
is read by the same loader). Times are medians of ``--repeat`` runs. ``--smoke`` uses a
small GPT and one repeat (seconds)."""

from __future__ import annotations

import argparse
import base64
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.machine import load_average
from modelwright_autograd.checkpoint import (
    architecture_of,
    load_checkpoint,
    save_checkpoint,
    tensors_file,
)
from modelwright_autograd.files import write_json
from modelwright_autograd.lm import models
from modelwright_autograd.lm.corpus import read_source, split_text, text_batch
from modelwright_autograd.training import language
from modelwright_autograd.training.run_state import rng_states, run_state

#: the targets of issue 40 (docs/checkpoints.md)
TARGETS = {"save_s": 1.0, "load_s": 0.3, "size_ratio": 1.05, "first_char_s": 1.0, "run_pct": 2.0}
SHAKESPEARE = dict(n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2)
SMOKE = dict(n_layer=1, n_head=2, n_embd=32, block_size=32)
CPU = dict(block_size=models.LMConfig.block_size)  # LMConfig's defaults: nanoGPT's CPU GPT


def save_version_2(path: Path, model: Any, metadata: dict[str, Any]) -> None:
    """The checkpoint as the project wrote it before safetensors (format version 2): one
    JSON file, every weight float.hex, each AdamW moment the base64 of its bytes."""
    arch = architecture_of(model)
    doc: dict[str, Any] = {
        "format": "modelwright-autograd checkpoint",
        "version": 2,
        "engine": arch.engine,
        "architecture": arch.to_dict(),
        **metadata,
    }
    optimizer = metadata.get("optimizer")
    if optimizer is not None:
        state = {
            name: {
                "step": entry["step"],
                **{
                    key: base64.b64encode(
                        np.asarray(entry[key], _dtype_code(optimizer["dtype"])).tobytes()
                    ).decode()
                    for key in ("exp_avg", "exp_avg_sq")
                },
            }
            for name, entry in optimizer["state"].items()
        }
        doc["optimizer"] = {**optimizer, "state": state}
    doc["state_dict"] = {
        name: {
            "shape": list(np.shape(value)),
            "data": [v.hex() for v in np.asarray(value, np.float64).ravel().tolist()],
        }
        for name, value in model.state_dict().items()
    }
    write_json(path, doc)


def _dtype_code(dtype: str) -> str:
    return {"float32": "<f4", "float64": "<f8"}[dtype]


def _gpt_with_state(sizes: dict[str, Any], batch: int) -> tuple[Any, dict[str, Any]]:
    """A GPT of ``sizes`` on Tiny Shakespeare's characters after one AdamW step, and the
    metadata a run's checkpoint holds (vocabulary, settings, AdamW state, generators)."""
    text, source = read_source("shakespeare", None)
    corpus = split_text(text, sizes["block_size"], "shakespeare")
    config = models.check_config(models.LMConfig("gpt", corpus.vocab.size, **sizes))
    model = models.build(config, seed=0)
    training = language.default_training("gpt")
    optimizer = models.configure_optimizers(
        model, training["weight_decay"], training["lr"], (0.9, 0.99)
    )
    rng = np.random.default_rng(0)
    x, y = text_batch(corpus.train, config.block_size, batch, rng)
    loss = model.loss(x, y)
    loss.backward()
    optimizer.step()
    metadata = {
        "data": {**source.to_dict(), "seed": 1337},
        "vocab": {"tokens": corpus.vocab.tokens, "boundary": False},
        "training": {**training, "betas": list(training["betas"])},
        **run_state(model, optimizer, 1, rng_states(model, rng)),
    }
    return model, metadata


def _median_seconds(work: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _sizes(folder: Path, model: Any, metadata: dict[str, Any], repeat: int) -> dict[str, float]:
    """Save and load times and sizes of both formats for ``model`` with ``metadata``."""
    new, old = folder / "model.json", folder / "old.json"
    out: dict[str, float] = {}
    out["save_s"] = _median_seconds(lambda: save_checkpoint(new, model, metadata), repeat)
    out["load_s"] = _median_seconds(lambda: load_checkpoint(new), repeat)
    raw = sum(np.asarray(v).nbytes for v in model.state_dict().values())
    raw += sum(
        np.asarray(entry[k]).nbytes + 8
        for entry in metadata["optimizer"]["state"].values()
        for k in ("exp_avg", "exp_avg_sq")
    )
    json_bytes = new.stat().st_size
    out["bytes"] = json_bytes + tensors_file(new).stat().st_size
    out["size_ratio"] = out["bytes"] / (raw + json_bytes)
    out["old_save_s"] = _median_seconds(lambda: save_version_2(old, model, metadata), 1)
    out["old_load_s"] = _median_seconds(lambda: load_checkpoint(old), 1)
    out["old_bytes"] = old.stat().st_size
    out["old_size_ratio"] = out["old_bytes"] / (raw + json_bytes)
    return out


def _first_character(run: Path) -> float:
    """Seconds from launching ``sample RUN --tokens 1`` to its exit (which bounds the time
    to its first character: it prints one, then stops)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", "sample", str(run), "--tokens", "1"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def _step_seconds(model: Any, metadata: dict[str, Any], steps: int) -> float:
    """One training step of the CPU GPT at train's defaults (batch 12), median of ``steps``."""
    config = model.config
    text, _ = read_source("shakespeare", None)
    corpus = split_text(text, config.block_size, "shakespeare")
    training = language.default_training("gpt")
    optimizer = models.configure_optimizers(
        model, training["weight_decay"], training["lr"], (0.9, 0.99)
    )
    rng = np.random.default_rng(1)

    def step() -> None:
        x, y = text_batch(corpus.train, config.block_size, training["batch_size"], rng)
        loss = model.loss(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    metadata.update(run_state(model, optimizer, 1, rng_states(model, rng)))
    return _median_seconds(step, steps)


def _shown(x: float) -> str:
    return f"{x:.3f}" if x >= 0.1 else f"{x:.2g}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.checkpoints")
    p.add_argument("--smoke", action="store_true", help="a small GPT, one repeat (seconds)")
    p.add_argument("--repeat", type=int, default=3, help="runs per timing (default 3)")
    args = p.parse_args(argv)
    repeat = 1 if args.smoke else args.repeat
    print(
        "checkpoints: safetensors (version 3) against the JSON before (version 2); "
        f"load {load_average()}"
    )
    print("| figure | model | safetensors | JSON before | target |")
    print("|---|---|---|---|---|")

    def row(name: str, model: Any, new: float, old: float, key: str) -> None:
        label = f"GPT {sum(p.data.size for p in model.parameters()):,}"
        ok = "met" if new <= TARGETS[key] else "MISS"
        print(f"| {name} | {label} | {_shown(new)} | {_shown(old)} | <= {TARGETS[key]:g} {ok} |")
        sys.stdout.flush()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big, meta = _gpt_with_state(SMOKE if args.smoke else SHAKESPEARE, batch=1)
        found = _sizes(folder, big, meta, repeat)
        row("save (s)", big, found["save_s"], found["old_save_s"], "save_s")
        row("load (s)", big, found["load_s"], found["old_load_s"], "load_s")
        ratio = found["size_ratio"], found["old_size_ratio"]
        row("size / (raw + metadata)", big, *ratio, "size_ratio")
        del big, meta
        cpu, meta = _gpt_with_state(SMOKE if args.smoke else CPU, batch=1)
        step = _step_seconds(cpu, meta, 3 if args.smoke else 10)
        run = folder / "run"
        run.mkdir()
        save_checkpoint(run / "model.json", cpu, meta)
        first = statistics.median(_first_character(run) for _ in range(repeat))
        save = _median_seconds(lambda: save_checkpoint(run / "model.json", cpu, meta), repeat)
        old_save = _median_seconds(lambda: save_version_2(run / "old.json", cpu, meta), 1)
        (run / "model.json").unlink()
        (run / "old.json").rename(run / "model.json")  # sample reads the version-2 file
        old_first = _first_character(run)
        row("sample: launch to first character (s)", cpu, first, old_first, "first_char_s")
        interval = language.default_training("gpt")["eval_interval"]
        row(
            f"a save / {interval} steps of {step * 1000:.0f} ms (%)",
            cpu,
            100 * save / (interval * step),
            100 * old_save / (interval * step),
            "run_pct",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
