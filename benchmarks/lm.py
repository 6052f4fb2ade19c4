"""The language models on our engine beside PyTorch (``python -m benchmarks.lm``).

Sections (speed, gpt and names by default, or name them):

* ``speed``: one training iteration (forward, backward, clipping if the run clips, AdamW)
  of ours and of the same model in PyTorch (benchmarks/lm_torch.py), with the same number
  of threads (BLAS for NumPy, intra-op for torch), interleaved; median seconds per
  iteration, tokens/s, and each side's peak memory measured in a child process of its
  own; each ratio printed beside issue 41's target. ``--config`` picks the models (by
  default ``cpu`` and ``names``) and ``--threads`` the thread counts (by default 1 and 2):
  ``cpu`` is nanoGPT's CPU GPT (4 layers, 4 heads, 128 wide, block 64, batch 12, float32),
  ``shakespeare`` nanoGPT's Shakespeare GPT (config/train_shakespeare_char.py: 6 layers, 6
  heads, 384 wide, block 256, batch 64, dropout 0.2; 10.8M weights, 7 to 10 GB a side),
  ``names`` makemore's transformer on names.txt (``train --model transformer``'s
  defaults: 4 layers, 4 heads, 64 wide, batch 32).
* ``profile``: where the first ``--config``'s training iteration spends its time, op by op,
  ours under cProfile beside torch under torch.profiler, at the first ``--threads``.
* ``gpt``: the Shakespeare GPT trained 2,000 iterations per seed (nanoGPT's schedule), ours
  and torch's from the same initial weights on the same batches; the validation loss of
  each over the same 200 random batches (and the first 20, nanoGPT's figure).
* ``names``: makemore's transformer, MLP and bigram on names.txt for a stated step budget:
  test loss (every test word), ours; the counting bigram beside the learned one.

``--smoke`` runs every section at toy sizes in seconds (the slow-marked test does). Results
go to stdout as Markdown and to ``--json``. docs/language-models.md quotes the full runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import log, write_json_atomic
from benchmarks.machine import load_average, machine_facts

EVAL_BATCHES = 200  # the torch figure in issue 20 came from 200 validation batches
NANOGPT_EVAL_BATCHES = 20  # nanoGPT's CPU command line: --eval_iters=20
EVAL_SEED = 1234
#: The model changes ``--smoke`` makes (toy sizes: every section's plumbing in seconds).
SMOKE_MODEL: dict[str, int] = dict(n_layer=1, n_head=4, n_embd=32)
#: The models ``speed`` can time, as changes to the CLI's defaults for the corpus and kind:
#: nanoGPT's CPU run (the CLI's defaults), its Shakespeare configuration
#: (config/train_shakespeare_char.py) and makemore's names transformer; with issue 41's
#: target for ours / torch (peak memory: at most torch's, in all of them).
SPEED_CONFIGS: dict[str, dict[str, Any]] = {
    "cpu": dict(corpus="shakespeare", kind="gpt", target=0.9, label="nanoGPT's CPU GPT"),
    "shakespeare": dict(
        corpus="shakespeare",
        kind="gpt",
        target=1.0,
        label="nanoGPT's 10.8M Shakespeare GPT",
        batch_size=64,
        model=dict(n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2),
        iters=3,  # ~20 s an iteration a side when idle: --iters and --rounds default lower
        rounds=2,
    ),
    "names": dict(corpus="names", kind="transformer", target=0.9, label="names transformer"),
}


def _threads(n: int, torch_too: bool = True) -> Any:
    """Limit NumPy's BLAS, our engine's threads and torch to ``n`` threads (returns the BLAS
    limiter to keep); ``torch_too=False`` leaves torch unloaded (our side's child: its
    memory is ours)."""
    from threadpoolctl import threadpool_limits

    from modelwright_autograd.tensor import set_num_threads

    set_num_threads(n)
    if torch_too:
        import torch

        torch.set_num_threads(n)
    return threadpool_limits(n)


def _corpus(name: str, block: int = 64) -> Any:
    from modelwright_autograd.lm.corpus import read_source, split_names, split_text

    text, _ = read_source(name, None)
    return split_names(text, 1337, name) if name == "names" else split_text(text, block, name)


def _settings(kind: str, corpus: Any, seed: int, steps: int | None = None, **model: Any) -> Any:
    """The CLI's defaults for ``kind`` (language.default_model, default_settings) for this
    corpus, with ``model``'s changes."""
    from modelwright_autograd.lm.corpus import Names, read_source
    from modelwright_autograd.training import language

    names = isinstance(corpus, Names)
    _, source = read_source("names" if names else "shakespeare", None)
    config = language.default_model(kind, corpus.vocab.size, corpus.block_size() if names else 64)
    return language.default_settings(replace(config, **model), source, seed, steps)


# ---------------------------------------------------------------------- speed
def _speed_setup(config: str, smoke: bool, iters: int) -> tuple[Any, Any, list]:
    """The settings, our model (seed 1) and ``iters`` training batches of a speed model."""
    from modelwright_autograd.lm import models
    from modelwright_autograd.training import language

    changes = SPEED_CONFIGS[config]
    corpus = _corpus(changes["corpus"], changes.get("model", {}).get("block_size", 64))
    settings = _settings(changes["kind"], corpus, seed=1, **changes.get("model", {}))
    settings = replace(settings, batch_size=changes.get("batch_size", settings.batch_size))
    if smoke:
        settings = replace(settings, model=replace(settings.model, **SMOKE_MODEL))
    model = models.build(settings.model, seed=1)
    draw = language._batches(settings, corpus, np.random.default_rng(0))
    return settings, model, [next(draw) for _ in range(iters)]


def _stepper(side: str, model: Any, settings: Any) -> Any:
    """One training iteration of ``side`` as a function of the batch: forward, backward,
    clipping if the run clips, AdamW (ours on ``model``, torch's on its twin). Ours
    backpropagates into the parameters only (``inputs=``), as fit_lm does, so that, as in
    torch, no interior node's gradient outlives its use."""
    from modelwright_autograd.optim import clip_grad_norm_
    from modelwright_autograd.training import language

    clip = settings.grad_clip
    if side == "ours":
        optimizer, params = language.make_optimizer(model, settings), model.parameters()

        def ours(x: np.ndarray, y: np.ndarray) -> None:
            loss = model.loss(x, y)
            optimizer.zero_grad()
            loss.backward(inputs=params)
            del loss
            if clip:
                clip_grad_norm_(params, clip)
            optimizer.step()

        return ours
    if side == "products":
        return _products_stepper(model, settings)
    import torch

    from benchmarks import lm_torch

    twin = lm_torch.from_ours(model, torch.float32)
    twin_optimizer = _torch_optimizer(twin, settings)

    def theirs(x: np.ndarray, y: np.ndarray) -> None:
        loss = lm_torch.loss(twin, x, y)
        twin_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(twin.parameters(), clip)
        twin_optimizer.step()

    return theirs


def products_of(model: Any, settings: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """The matrix products of one training iteration of ``model``, as pairs (a, b) for
    a @ b of random operands of their shapes and the model's dtype: each Linear's x W^T,
    dy W and dy^T x over the batch's rows, and each attention's Q K^T, dO V^T (q-shaped)
    and P V, P^T dO, dS K, dS^T Q (p-shaped)."""
    from modelwright_autograd.lm.models import CausalSelfAttention
    from modelwright_autograd.tensor.nn import Linear

    rng, dtype = np.random.default_rng(0), np.dtype(settings.model.dtype)

    def walk(module: Any) -> Any:
        yield module
        for _, child in module.named_children():
            yield from walk(child)

    def rand(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)

    batch, block, heads = settings.batch_size, settings.model.block_size, settings.model.n_head
    pairs = []
    for module in walk(model):
        if isinstance(module, Linear):
            out_features, in_features = module.weight.shape
            x, g = rand(batch * block, in_features), rand(batch * block, out_features)
            w = rand(out_features, in_features)
            pairs += [(x, w.T), (g, w), (g.T, x)]
        elif isinstance(module, CausalSelfAttention):
            q = rand(batch, heads, block, settings.model.n_embd // heads)
            p = rand(batch, heads, block, block)
            pairs += [(q, q.swapaxes(-1, -2))] * 2 + [(p, q)] * 4
    return pairs


def _products_stepper(model: Any, settings: Any) -> Any:
    """The products of ``products_of`` alone, one after another: about the least time an
    engine on NumPy's BLAS can take for an iteration, the floor beside ours."""
    pairs = products_of(model, settings)

    def products(x: np.ndarray, y: np.ndarray) -> None:
        for a, b in pairs:
            a @ b

    return products


def _one_side(side: str, iters: int, threads: int, smoke: bool, config: str) -> dict[str, Any]:
    """Time ``iters`` training iterations of one side in this process (run as a child by
    ``speed``, so that its peak memory is its own)."""
    limiter = _threads(threads, torch_too=side == "torch")
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    settings, model, batches = _speed_setup(config, smoke, iters)
    step = _stepper(side, model, settings)
    del model  # torch's side holds its twin only
    times = []
    for x, y in batches:
        start = time.perf_counter()
        step(x, y)
        times.append(time.perf_counter() - start)
    del limiter
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": times[1:] if len(times) > 1 else times,  # the first warms caches up
        "tokens_per_iter": int(batches[0][0].size),
        "peak_rss_mb": peak / 1024,
        "rss_growth_mb": (peak - baseline) / 1024,
    }


def profile(config: str, iters: int, smoke: bool, top: int = 20) -> dict[str, Any]:
    """Where one training iteration's time goes, op by op: ours under cProfile (each
    function's own time), torch's under torch.profiler (each op's self CPU time), both
    averaged over ``iters`` iterations after two unprofiled ones, in this process."""
    import cProfile
    import pstats

    import torch

    settings, model, batches = _speed_setup(config, smoke, iters + 2)
    found: dict[str, Any] = {"config": config, "iters": iters}
    for side in ("ours", "torch"):
        step = _stepper(side, model, settings)
        for x, y in batches[:2]:
            step(x, y)
        if side == "ours":
            profiler = cProfile.Profile()
            start = time.perf_counter()
            profiler.enable()
            for x, y in batches[2:]:
                step(x, y)
            profiler.disable()
            wall = time.perf_counter() - start
            stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
            own_times: dict[str, float] = {}  # functions of one name in a file: summed
            for (file, _, name), (_, _, own, _, _) in stats.items():
                key = f"{Path(file).name}:{name}" if file != "~" else name
                own_times[key] = own_times.get(key, 0.0) + own
            rows = list(own_times.items())
        else:
            activity = torch.profiler.ProfilerActivity.CPU
            start = time.perf_counter()
            with torch.profiler.profile(activities=[activity]) as prof:
                for x, y in batches[2:]:
                    step(x, y)
            wall = time.perf_counter() - start
            rows = [(e.key, e.self_cpu_time_total / 1e6) for e in prof.key_averages()]
        rows.sort(key=lambda row: -row[1])
        found[side] = {
            "ms_per_iter": 1e3 * wall / iters,
            "ops": [{"op": op, "ms": 1e3 * own / iters} for op, own in rows[:top]],
        }
    return found


def speed(iters: int, rounds: int, threads: int, smoke: bool, config: str) -> dict[str, Any]:
    """Each side in ``rounds`` child processes, alternating, ``iters`` iterations each."""
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "torch": [], "products": []}
    load_start = load_average()
    for r in range(rounds):
        for side in ("ours", "torch", "products") if r % 2 == 0 else ("torch", "ours", "products"):
            log(f"speed: {config}, {threads} thread(s), {side}, round {r + 1}/{rounds}")
            cmd = [sys.executable, "-m", "benchmarks.lm", "--child", side, "--iters", str(iters)]
            cmd += ["--threads", str(threads), "--config", config] + (["--smoke"] if smoke else [])
            env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads)}
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
            runs[side].append(json.loads(out.stdout))
    result: dict[str, Any] = {"threads": threads, "iters": iters, "rounds": rounds}
    result.update(config=config, load_start=load_start, load_end=load_average())
    for side, found in runs.items():
        seconds = [s for run in found for s in run["seconds"]]
        med = statistics.median(seconds)
        result[side] = {
            "median_s": med,
            "min_s": min(seconds),
            "max_s": max(seconds),
            "tokens_per_s": found[0]["tokens_per_iter"] / med,
            "peak_rss_mb": max(run["peak_rss_mb"] for run in found),
            "rss_growth_mb": max(run["rss_growth_mb"] for run in found),
        }
    result["ratio"] = result["ours"]["median_s"] / result["torch"]["median_s"]
    result["products_ratio"] = result["products"]["median_s"] / result["torch"]["median_s"]
    result["target"] = SPEED_CONFIGS[config]["target"]
    result["met"] = result["ratio"] <= result["target"]
    result["memory_met"] = result["ours"]["peak_rss_mb"] <= result["torch"]["peak_rss_mb"]
    return result


def _torch_optimizer(twin: Any, settings: Any) -> Any:
    """The run's AdamW in torch: makemore's (decay on every weight) or nanoGPT's groups."""
    import torch

    if settings.decay_all:
        return torch.optim.AdamW(
            twin.parameters(),
            lr=settings.lr,
            betas=settings.betas,
            weight_decay=settings.weight_decay,
        )
    return twin.configure_optimizers(settings.weight_decay, settings.lr, settings.betas)


# ---------------------------------------------------------------------- GPT quality
def _train_both(settings: Any, corpus: Any, seed: int, sides: tuple[str, ...]) -> dict[str, Any]:
    """Train ours and torch's GPT from the same weights on the same batches; score both on
    the same random validation batches."""
    import torch

    from benchmarks import lm_torch
    from modelwright_autograd.lm import models
    from modelwright_autograd.lm.corpus import text_batch
    from modelwright_autograd.training import language

    model = models.build(settings.model, seed=seed)
    twin = lm_torch.from_ours(model, torch.float32)
    found: dict[str, Any] = {"seed": seed}
    rng = np.random.default_rng(EVAL_SEED)
    eval_batches = [
        text_batch(corpus.val, settings.model.block_size, settings.batch_size, rng)
        for _ in range(EVAL_BATCHES)
    ]
    if "ours" in sides:
        start = time.perf_counter()
        history = language.fit_lm(model, settings, corpus, _Progress(f"ours seed {seed}"))
        model.eval()
        losses = [_no_grad_loss(model, x, y) for x, y in eval_batches]
        found["ours"] = _scores(losses, time.perf_counter() - start, history.loss)
    if "torch" in sides:
        start = time.perf_counter()
        curve = _train_torch(twin, settings, corpus)
        twin.eval()
        with torch.no_grad():
            losses = [lm_torch.loss(twin, x, y).item() for x, y in eval_batches]
        found["torch"] = _scores(losses, time.perf_counter() - start, curve)
    return found


def _no_grad_loss(model: Any, x: np.ndarray, y: np.ndarray) -> float:
    from modelwright_autograd.graph import no_grad

    with no_grad():
        return model.loss(x, y).item()


def _scores(losses: list[float], seconds: float, curve: list[float]) -> dict[str, Any]:
    return {
        "val_loss": float(np.mean(losses)),
        "val_loss_first_20": float(np.mean(losses[:NANOGPT_EVAL_BATCHES])),
        "seconds": seconds,
        "final_train_batch_loss": curve[-1],
    }


def _torch_text_loss(twin: Any, data: np.ndarray, settings: Any, seed: int) -> float:
    """lm.scoring.text_loss for the torch model: the same seeded random batches."""
    import torch

    from benchmarks import lm_torch
    from modelwright_autograd.lm.corpus import text_batch

    rng = np.random.default_rng(seed)
    block, batch = settings.model.block_size, settings.batch_size
    twin.eval()
    with torch.no_grad():
        losses = [
            lm_torch.loss(twin, *text_batch(data, block, batch, rng)).item()
            for _ in range(settings.eval_iters)
        ]
    twin.train()
    return float(np.mean(losses))


def _train_torch(twin: Any, settings: Any, corpus: Any, evals: list | None = None) -> list[float]:
    """The loop of training.language.fit_lm in torch: the same batches (the same seeded
    generator), AdamW groups, clipping and schedule; with ``evals``, fit_lm's evaluations
    too (train and val loss at step 0, every eval_interval and the end, the same batches)."""
    import torch

    from benchmarks import lm_torch
    from modelwright_autograd.training import language

    batches = language._batches(settings, corpus, np.random.default_rng([settings.seed, 1]))
    optimizer = _torch_optimizer(twin, settings)
    progress = _Progress("torch")
    curve: list[float] = []
    twin.train()

    def evaluate(step: int) -> None:
        if evals is not None:
            seed = settings.seed + 2  # as fit_lm's evaluate_lm: train with seed, val seed + 1
            train = _torch_text_loss(twin, corpus.train, settings, seed)
            val = _torch_text_loss(twin, corpus.val, settings, seed + 1)
            evals.append({"step": step, "train": train, "val": val})
            log(f"torch eval: {json.dumps(evals[-1])}")

    evaluate(0)
    for step in range(settings.steps):
        for group in optimizer.param_groups:
            group["lr"] = settings.lr_at(step)
        x, y = next(batches)
        loss = lm_torch.loss(twin, x, y)
        curve.append(loss.item())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if settings.grad_clip:
            torch.nn.utils.clip_grad_norm_(twin.parameters(), settings.grad_clip)
        optimizer.step()
        progress.update(1)
        if (step + 1) % settings.eval_interval == 0 or step + 1 == settings.steps:
            evaluate(step + 1)
    return curve


class _Progress:
    """A log line every 10% of a run, in place of the CLI's progress bar."""

    def __init__(self, label: str) -> None:
        self.label, self.done, self.start = label, 0, time.perf_counter()

    def set_postfix(self, **kwargs: Any) -> None:
        self.postfix = kwargs

    def update(self, n: int) -> None:
        self.done += n
        if self.done % 200 == 0:
            rate = self.done / (time.perf_counter() - self.start)
            log(f"{self.label}: step {self.done} ({rate:.2f} steps/s, load {load_average()})")


def torch_curve(seed: int, steps: int | None) -> dict[str, Any]:
    """Only the torch side of one seed, with the evaluations ``train --dataset shakespeare
    --seed SEED`` makes (its metrics.json "evals"), to set beside ours step by step."""
    import torch

    from benchmarks import lm_torch
    from modelwright_autograd.lm import models

    corpus = _corpus("shakespeare")
    settings = _settings("gpt", corpus, seed=seed, steps=steps)
    twin = lm_torch.from_ours(models.build(settings.model, seed=seed), torch.float32)
    evals: list[dict[str, float]] = []
    start = time.perf_counter()
    curve = _train_torch(twin, settings, corpus, evals)
    return {"seed": seed, "evals": evals, "loss": curve, "seconds": time.perf_counter() - start}


def gpt_quality(seeds: list[int], steps: int | None, smoke: bool) -> dict[str, Any]:
    corpus = _corpus("shakespeare")
    runs = []
    for seed in seeds:
        settings = _settings("gpt", corpus, seed=seed, steps=steps)
        if smoke:
            settings = replace(settings, model=replace(settings.model, **SMOKE_MODEL))
        log(f"gpt: seed {seed}, {settings.steps} steps")
        runs.append(_train_both(settings, corpus, seed, ("ours", "torch")))
        log(f"gpt: seed {seed}: {json.dumps(runs[-1])}")
    summary: dict[str, Any] = {"runs": runs, "steps": settings.steps, "eval_batches": EVAL_BATCHES}
    for side in ("ours", "torch"):
        values = [r[side]["val_loss"] for r in runs]
        summary[side] = {"mean": float(np.mean(values)), "min": min(values), "max": max(values)}
    summary["difference"] = summary["ours"]["mean"] - summary["torch"]["mean"]
    return summary


# ---------------------------------------------------------------------- names
#: The step budgets of the names runs (the CLI's defaults).
def names_quality(
    seed: int, smoke: bool, kinds: list[str], steps: dict[str, int]
) -> dict[str, Any]:
    from modelwright_autograd.lm import models
    from modelwright_autograd.lm.scoring import counting_bigram_loss, names_loss
    from modelwright_autograd.training import language

    corpus = _corpus("names")
    found: dict[str, Any] = {
        "counting_bigram_test": counting_bigram_loss(corpus, corpus.train, corpus.test)
    }
    for kind in kinds:
        settings = _settings(kind, corpus, seed=seed, steps=20 if smoke else steps.get(kind))
        if smoke and kind == "transformer":
            settings = replace(settings, model=replace(settings.model, **SMOKE_MODEL))
        log(f"names: {kind}, {settings.steps} steps")
        model = models.build(settings.model, seed=seed)
        start = time.perf_counter()
        history = language.fit_lm(model, settings, corpus, _Progress(kind))
        found[kind] = {
            "steps": settings.steps,
            "test_loss": names_loss(model, corpus, corpus.test),
            "train_loss": names_loss(model, corpus, corpus.train),
            "best": history.best,
            "seconds": time.perf_counter() - start,
        }
        log(f"names: {kind}: {json.dumps(found[kind])}")
    return found


# ---------------------------------------------------------------------- report
def report(results: dict[str, Any]) -> str:
    lines = [f"# Language models: ours vs PyTorch ({results['machine']['date']})", ""]
    m = results["machine"]
    lines.append(f"{m['cpu']}, {m['cores']} cores; load average at start {m['load_average_start']}")
    if "speed" in results:
        lines += [
            "",
            "## Speed: one training iteration, ours / torch beside issue 41's targets",
            "",
            "| model | threads | ours: s/iteration (median, min-max) | torch | ours / torch "
            "| target | products alone / torch | peak RSS ours / torch (MB) | memory target "
            "| load (1 min) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for s in results["speed"]:
            o, t = s["ours"], s["torch"]
            lines.append(
                f"| {SPEED_CONFIGS[s['config']]['label']} | {s['threads']} | "
                f"{o['median_s']:.4f} ({o['min_s']:.4f}-{o['max_s']:.4f}) | "
                f"{t['median_s']:.4f} ({t['min_s']:.4f}-{t['max_s']:.4f}) | "
                f"{s['ratio']:.2f}x | ≤ {s['target']:.1f}x {'met' if s['met'] else 'not met'} | "
                f"{s['products_ratio']:.2f}x | "
                f"{o['peak_rss_mb']:.0f} / {t['peak_rss_mb']:.0f} | "
                f"{'met' if s['memory_met'] else 'not met'} | {_load_range(s)} |"
            )
    if "profile" in results:
        p = results["profile"]
        o, t = p["ours"], p["torch"]
        lines += [
            "",
            f"## Profile: {SPEED_CONFIGS[p['config']]['label']}, one training iteration "
            f"({p['iters']} profiled), ours (cProfile, own time) beside torch (torch.profiler, "
            "self CPU time)",
            "",
            f"ours {o['ms_per_iter']:.1f} ms/iteration under cProfile, torch "
            f"{t['ms_per_iter']:.1f} ms under its profiler",
            "",
            "| # | ours | ms | % | torch | ms | % |",
            "|---|---|---|---|---|---|---|",
        ]
        for i, (a, b) in enumerate(zip(o["ops"], t["ops"]), 1):
            lines.append(
                f"| {i} | {a['op']} | {a['ms']:.2f} | {100 * a['ms'] / o['ms_per_iter']:.0f} | "
                f"{b['op']} | {b['ms']:.2f} | {100 * b['ms'] / t['ms_per_iter']:.0f} |"
            )
    if "gpt" in results:
        g = results["gpt"]
        lines += [
            "",
            f"## Shakespeare GPT: validation loss after {g['steps']:,} iterations "
            f"({g['eval_batches']} batches)",
            "",
            "| seed | ours | torch | ours (first 20 batches) | torch (first 20) |",
            "|---|---|---|---|---|",
        ]
        for r in g["runs"]:
            lines.append(
                f"| {r['seed']} | {r['ours']['val_loss']:.4f} | {r['torch']['val_loss']:.4f} | "
                f"{r['ours']['val_loss_first_20']:.4f} | {r['torch']['val_loss_first_20']:.4f} |"
            )
        o, t = g["ours"], g["torch"]
        lines.append(
            f"\nmean ours {o['mean']:.4f} (range {o['min']:.4f}-{o['max']:.4f}), torch "
            f"{t['mean']:.4f} ({t['min']:.4f}-{t['max']:.4f}); difference {g['difference']:+.4f}"
        )
    if "names" in results:
        n = results["names"]
        lines += ["", "## names.txt (test set: 1,000 words)", "", "| model | steps | test loss |"]
        lines.append("|---|---|---|")
        for kind in ("bigram", "mlp", "transformer"):
            if kind in n:
                lines.append(f"| {kind} | {n[kind]['steps']:,} | {n[kind]['test_loss']:.4f} |")
        lines.append(f"| counting bigram | - | {n['counting_bigram_test']:.4f} |")
    lines.append(f"\nload average at end {results.get('load_average_end')}")
    return "\n".join(lines)


def _load_range(run: dict[str, Any]) -> str:
    """The 1-minute load average at the start and end of a speed run."""
    ends = [run[key][0] if run[key] else "?" for key in ("load_start", "load_end")]
    return f"{ends[0]} to {ends[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lm", description=__doc__)
    parser.add_argument(
        "sections",
        nargs="*",
        help="speed, gpt, names, torch-curve, profile (default: the first three)",
    )
    parser.add_argument("--smoke", action="store_true", help="toy sizes, seconds")
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, 2],
        help="speed: the thread counts to time (--smoke: the first); gpt, names: the first",
    )
    parser.add_argument(
        "--iters", type=int, help="speed: iterations per child (default 12; shakespeare 3)"
    )
    parser.add_argument(
        "--rounds", type=int, help="speed: children per side (default 4; shakespeare 2)"
    )
    parser.add_argument(
        "--config",
        choices=tuple(SPEED_CONFIGS),
        nargs="+",
        default=["cpu", "names"],
        help="speed: nanoGPT's CPU GPT (0.8M weights), its Shakespeare GPT (10.8M weights, "
        "batch 64 x 256, 7 to 10 GB a side), makemore's names transformer "
        "(default: cpu names)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, help="gpt: iterations (default 2000)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--names-models", nargs="+", default=["bigram", "mlp", "transformer"], metavar="MODEL"
    )
    parser.add_argument(
        "--names-steps",
        nargs="+",
        default=[],
        metavar="MODEL=STEPS",
        help="names: a budget other than the CLI's default, e.g. transformer=10000",
    )
    parser.add_argument("--child", choices=("ours", "torch", "products"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        found = _one_side(args.child, args.iters, args.threads[0], args.smoke, args.config[0])
        print(json.dumps(found))
        return 0
    sections = args.sections or ["speed", "gpt", "names"]
    known = ("speed", "gpt", "names", "torch-curve", "profile")
    unknown = set(sections) - set(known)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(known)}")
    results: dict[str, Any] = {"machine": machine_facts()}
    if args.smoke:
        args.iters, args.rounds, args.seeds = 3, 1, args.seeds[:1]
        args.threads = args.threads[:1]
        args.steps = args.steps or 6
    limiter = _threads(args.threads[0])
    if "speed" in sections:
        results["speed"] = [
            speed(
                args.iters or SPEED_CONFIGS[config].get("iters", 12),
                args.rounds or SPEED_CONFIGS[config].get("rounds", 4),
                threads,
                args.smoke,
                config,
            )
            for config in args.config
            for threads in args.threads
        ]
    if "profile" in sections:
        results["profile"] = profile(args.config[0], args.iters or 12, args.smoke)
    if "gpt" in sections:
        results["gpt"] = gpt_quality(args.seeds, args.steps, args.smoke)
    if "torch-curve" in sections:
        results["torch_curve"] = torch_curve(args.seeds[0], args.steps)
    if "names" in sections:
        budgets = {k: int(v) for k, v in (item.split("=") for item in args.names_steps)}
        results["names"] = names_quality(args.seeds[0], args.smoke, args.names_models, budgets)
    del limiter
    results["load_average_end"] = load_average()
    if args.json:
        write_json_atomic(args.json, results)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
