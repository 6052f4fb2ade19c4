"""Forward mode against reverse mode: ``python -m benchmarks.modes``.

The full Jacobian of two scalar-engine functions, by ``jacobian(strategy=...)``:

* ``n -> 1``: n inputs, one output, s_{i+1} = tanh(s_i + x_i), output s_n;
* ``1 -> n``: one input, n outputs, h_{i+1} = tanh(h_i) * x, every h_i an output.

Both are chains of about 2n nodes. Reverse mode takes one backward pass per output, forward
mode one tangent pass per input, each pass walking the graph: so reverse mode does ``n -> 1``
in one pass and ``1 -> n`` in n, and forward mode the other way round. The runner prints a
Markdown table, writes the figures to JSON and draws docs/images/forward_vs_reverse.png.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import log, summarize, timed, write_json_atomic
from benchmarks.machine import machine_facts
from modelwright_autograd import Value, jacobian

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "modes.json"
DEFAULT_PLOT = ROOT / "docs" / "images" / "forward_vs_reverse.png"
SIZES = [1, 3, 10, 30, 100, 300, 1000]
SMOKE_SIZES = [1, 3, 10]
STRATEGIES = ("forward-mode", "reverse-mode")


def many_to_one(*xs: Value) -> Value:
    """n inputs, one output: s_{i+1} = tanh(s_i + x_i)."""
    s = Value(0.0)
    for x in xs:
        s = (s + x).tanh()
    return s


def one_to_many(n: int) -> Any:
    """One input, n outputs: h_{i+1} = tanh(h_i) * x, every h_i an output."""

    def f(x: Value) -> list[Value]:
        h, outs = x, []
        for _ in range(n):
            h = h.tanh() * x
            outs.append(h)
        return outs

    return f


def workload(shape: str, n: int) -> tuple[Any, Any]:
    """(function, input) for ``jacobian``: n numbers, or one number."""
    if shape == "n->1":
        return many_to_one, [0.01 * i for i in range(n)]
    return one_to_many(n), 0.5


def measure(sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    """Seconds for the whole Jacobian (the forward run included) per shape, n and mode;
    both modes' Jacobians are checked to agree before anything is timed."""
    rows = []
    for shape in ("n->1", "1->n"):
        for n in sizes:
            f, x = workload(shape, n)
            fwd, rev = (jacobian(f, x, strategy=s) for s in STRATEGIES)
            flat_f, flat_r = _flatten(fwd), _flatten(rev)
            diff = max(abs(a - b) for a, b in zip(flat_f, flat_r))
            for strategy in STRATEGIES:
                run = lambda f=f, x=x, s=strategy: jacobian(f, x, strategy=s)  # noqa: E731
                samples = [timed(run)[0] for _ in range(repeats)]
                rows.append(
                    {
                        "shape": shape,
                        "n": n,
                        "mode": strategy.removesuffix("-mode"),
                        "seconds": summarize(samples),
                        "max_abs_diff_between_modes": diff,
                    }
                )
            log(f"{shape} n={n} done")
    return rows


def _flatten(j: Any) -> list[float]:
    if isinstance(j, (list, tuple)):
        return [v for item in j for v in _flatten(item)]
    return [float(j)]


def render(rows: list[dict[str, Any]], machine: dict[str, Any]) -> str:
    lines = [
        "# Forward mode against reverse mode (scalar engine, full Jacobian)",
        "",
        f"Machine: {machine.get('cpu', '?')}, Python {machine.get('python', '?')}. "
        "Median seconds (min-max) over the repeats.",
        "",
        "| shape | n | forward mode (s) | reverse mode (s) | modes agree to |",
        "|---|---|---|---|---|",
    ]
    by_key = {(r["shape"], r["n"], r["mode"]): r for r in rows}
    for shape, n in dict.fromkeys((r["shape"], r["n"]) for r in rows):
        cells = []
        for mode in ("forward", "reverse"):
            s = by_key[(shape, n, mode)]["seconds"]
            cells.append(f"{s['median']:.4g} ({s['min']:.3g}-{s['max']:.3g})")
        diff = by_key[(shape, n, "forward")]["max_abs_diff_between_modes"]
        lines.append(f"| {shape} | {n} | {cells[0]} | {cells[1]} | {diff:.1e} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Two log-log panels, seconds against n, one line per mode."""
    from modelwright_autograd.plots import _new_figure, save_figure

    fig = _new_figure(10.0, 4.0)
    titles = {"n->1": "n inputs, 1 output", "1->n": "1 input, n outputs"}
    for ax, shape in zip(fig.subplots(1, 2, sharey=True), titles):
        for mode, colour in (("forward", "#d95f02"), ("reverse", "#1b9e77")):
            pts = [
                (r["n"], r["seconds"]["median"])
                for r in rows
                if (r["shape"], r["mode"]) == (shape, mode)
            ]
            ax.loglog(*zip(*pts), "o-", color=colour, label=f"{mode} mode")
        ax.set_title(f"Full Jacobian, {titles[shape]}")
        ax.set_xlabel("n")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.axes[0].set_ylabel("seconds (median)")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.modes", description=__doc__.split("\n")[0]
    )
    p.add_argument("--smoke", action="store_true", help=f"n in {SMOKE_SIZES}, one repeat")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per point (default 3)")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"default {DEFAULT_JSON}")
    p.add_argument("--plot", type=Path, default=DEFAULT_PLOT, help=f"default {DEFAULT_PLOT}")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"--repeats must be a positive whole number, got {args.repeats}")
    sizes, repeats = (SMOKE_SIZES, 1) if args.smoke else (SIZES, args.repeats)
    machine = machine_facts()
    rows = measure(sizes, repeats)
    print(render(rows, machine), end="")
    write_json_atomic(args.json, {"machine": machine, "sizes": sizes, "rows": rows})
    plot(rows, args.plot)
    log(f"wrote {args.json} and {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
