"""The benchmark runner: ``python -m benchmarks`` or ``python benchmarks/run.py``.

Runs the sections in order (scalar vs micrograd, the compiled path, graph scale, tensor
engine), prints the
Markdown report on stdout (progress goes to stderr) and writes every figure to a JSON
file, atomically. Targets that are missed are marked MISS; they never fail the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import compiled, graph_scale, report, scalar, targets, tensor_engine
from benchmarks.common import Sizes, log, write_json_atomic
from benchmarks.machine import load_average, machine_facts

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"
SECTIONS = {
    "scalar": scalar.run,
    "compiled": compiled.run,
    "graph": graph_scale.run,
    "tensor": tensor_engine.run,
}


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text}")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmark modelwright-autograd against micrograd, PyTorch and NumPy.",
    )
    p.add_argument("--smoke", action="store_true", help="tiny sizes that run in seconds (for CI)")
    p.add_argument(
        "--json", type=Path, default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})"
    )
    p.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)",
    )
    p.add_argument(
        "--repeats", type=_positive, help="repeats of each graph-scale measurement (default 3)"
    )
    p.add_argument(
        "--steps", type=_positive, help="interleaved demo steps of the floor and ours (default 100)"
    )
    p.add_argument(
        "--micrograd-steps",
        type=_positive,
        help="micrograd's demo steps, collector on and paused (default 100, ~3 minutes)",
    )
    p.add_argument("--chain", type=_positive, help="products in the long chain (default 1,000,000)")
    p.add_argument("--dtype", choices=["float64", "float32"], help="tensor section dtype")
    return p.parse_args(argv)


def sizes_from(args: argparse.Namespace) -> Sizes:
    sizes = Sizes.smoke_sizes() if args.smoke else Sizes()
    overrides = {
        "repeats": args.repeats,
        "steps": args.steps,
        "micrograd_steps": args.micrograd_steps,
        "chain_mults": args.chain,
        "dtype": args.dtype,
    }
    return dataclasses.replace(sizes, **{k: v for k, v in overrides.items() if v is not None})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown or not chosen:
        print(f"error: unknown section(s) {unknown}; choose from {list(SECTIONS)}", file=sys.stderr)
        return 2
    sizes = sizes_from(args)
    start = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "config": dataclasses.asdict(sizes),
        "sections": {},
    }
    for name in SECTIONS:  # always in this order: torch is imported last (see machine.py)
        if name in chosen:
            log(f"section {name}")
            results["sections"][name] = SECTIONS[name](sizes)
    results["targets"] = targets.evaluate(results["sections"])
    results["elapsed_seconds"] = time.perf_counter() - start
    results["machine"]["load_average_end"] = load_average()
    print(report.render(results), end="")
    write_json_atomic(args.json, results)
    log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
