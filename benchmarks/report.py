"""Render a run's results as Markdown: a header of machine facts, one table per section,
then the targets with PASS / MISS."""

from __future__ import annotations

from typing import Any


def _num(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:,.0f}"


def _time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{_num(seconds)} s"
    if seconds >= 1e-3:
        return f"{_num(seconds * 1e3)} ms"
    return f"{_num(seconds * 1e6)} µs"


def _stat(stat: dict[str, Any]) -> str:
    """``median (min–max)``, or the single value when there was one run."""
    if stat["n"] == 1:
        return _time(stat["median"])
    return f"{_time(stat['median'])} ({_time(stat['min'])}–{_time(stat['max'])})"


def _diff(x: float) -> str:
    return "0" if x == 0.0 else f"{x:.1e}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _header(results: dict[str, Any]) -> list[str]:
    m = results["machine"]
    blas = m["blas"]
    env = ", ".join(f"{k}={v}" if v is not None else f"{k} unset" for k, v in m["env"].items())
    torch_threads = results["sections"].get("tensor", {}).get("torch_threads", "n/a")
    cfg = results["config"]
    dirty = " + uncommitted changes in src/" if m["src_uncommitted_changes"] else ""
    return [
        "# modelwright-autograd benchmarks",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable); "
        f"{m['python']}; {m['platform']}",
        f"- NumPy {m['numpy']}, BLAS {blas.get('library')} {blas.get('version')} "
        f"(threadpoolctl: kernel {blas.get('kernel')}, {blas.get('threads')} threads); {env}",
        f"- torch {m['torch']} ({torch_threads} threads), micrograd {m['micrograd']}, "
        f"modelwright-autograd {m['modelwright_autograd']} at {m['git_commit']}{dirty}",
        f"- Run: {m['date']}; {'SMOKE sizes; ' if cfg['smoke'] else ''}times are medians "
        f"(min–max): of {cfg['steps']} steps each (scalar demo; micrograd "
        f"{cfg['micrograd_steps']}), {cfg['sweep_rounds']} steps (sweep), {cfg['repeats']} "
        f"repeats (graph scale), {cfg['tensor_repeats']} epochs or runs (tensor); total "
        f"{_time(results['elapsed_seconds'])}; load "
        f"average (1/5/15 min) {_load(m['load_average_start'])} at start, "
        f"{_load(m.get('load_average_end'))} at end",
    ]


def _load(values: list[float] | None) -> str:
    return "/".join(f"{v:.2f}" for v in values) if values else "n/a"


def _ratio(x: float) -> str:
    return f"{x:.3g}"


def _scalar(sec: dict[str, Any]) -> list[str]:
    rows = []
    for r in sec["rows"]:
        graph = "graph_nodes_per_step" in r
        rows.append(
            [
                r["engine"],
                str(r["steps"]),
                _stat(r["seconds_per_step"]),
                _ratio(r["ratio_vs_floor"]),
                _ratio(r["ratio_vs_micrograd"]),
                f"{r['graph_nodes_per_step']:,}" if graph else "—",
                f"{r['bytes_per_created_value']:.0f}" if graph else "—",
                f"{_diff(r['max_abs_loss_diff_vs_micrograd'])} ({r['compared_steps']} steps)",
            ]
        )
    header = [
        "engine",
        "steps",
        "CPU time/step",
        "vs floor",
        "vs micrograd",
        "graph nodes/step",
        "graph bytes/Value",
        "max abs Δloss vs micrograd",
    ]
    step0 = ", ".join(f"{r['engine']} {r['step0_loss']!r}" for r in sec["rows"])
    sw = sec["sweep"]
    sweep_rows = [
        [
            str(p["samples"]),
            str(p["width"]),
            f"{p['nodes']:,}",
            _stat(p["ours_seconds"]),
            _stat(p["floor_seconds"]),
            _ratio(p["ratio_vs_floor"]),
            _diff(p["max_abs_loss_diff"]),
        ]
        for p in sw["points"]
    ]
    sweep_header = [
        "samples",
        "width",
        "graph nodes",
        "ours",
        "floor",
        "ours / floor",
        "max abs Δloss",
    ]
    return [
        f"## 1. {sec['title']}",
        "",
        f"Workload: {sec['workload']}. {sec['clock']}. Step-0 loss: {step0} (micrograd's "
        f"notebook: {sec['demo_step0_loss']!r}). Graph nodes include the 337 parameters; "
        "bytes are what one step's graph keeps alive (tracemalloc) per Value created in "
        "that step. The floor is the same model's forward and backward written by hand in "
        "pure Python (benchmarks/scalar_floor.py). On average "
        f"{sec['mean_samples_passing_gradient']:.1f} of the {sec['samples']} samples passed a "
        "gradient back per step; the rest were beyond the hinge, and ours skips their part "
        "of the backward pass (every gradient there is 0.0) where the floor does all of it.",
        "",
        *_table(header, rows),
        "",
        "Size sweep: MLP 2-w-w-1, SVM + L2, full-batch SGD, the fast path (fused, loss "
        "helpers, collector paused) against the floor, CPU time per step, interleaved. "
        f"Time grows as nodes^{sw['exponent_ours']:.2f} for ours and nodes^"
        f"{sw['exponent_floor']:.2f} for the floor (least-squares fit of log time on log "
        "nodes with a factor per width: within a width the node count is proportional to "
        "the arithmetic, across widths a fused neuron is one node whatever its width).",
        "",
        *_table(sweep_header, sweep_rows),
    ]


def _compiled(sec: dict[str, Any]) -> list[str]:
    rows = [
        [
            r["engine"],
            _stat(r["seconds_per_step"]),
            _ratio(r["ratio_vs_floor"]),
            _ratio(r["ratio_vs_interpreter"]),
        ]
        for r in sec["rows"]
    ]
    memory = [
        [
            graph,
            f"{m['nodes']:,}",
            f"{m['compiled_bytes_per_node']:.0f}",
            f"{m['interpreter_bytes_per_node']:.0f}",
        ]
        for graph, m in sec["memory"].items()
    ]
    sw = sec["sweep"]
    sweep_rows = [
        [
            str(p["samples"]),
            str(p["width"]),
            f"{p['nodes']:,}",
            f"{p['compile_seconds']:.2f} s",
            _stat(p["compiled_seconds"]),
            _stat(p["floor_seconds"]),
            _ratio(p["ratio_vs_floor"]),
        ]
        for p in sw["points"]
    ]
    even = sec["break_even_steps"]
    return [
        f"## 1b. {sec['title']}",
        "",
        f"Section 1's workload, {sec['steps']} interleaved steps, CPU time per step. The "
        f"graph ({sec['nodes']:,} nodes) is compiled once, in {sec['compile_seconds']:.2f} s "
        "of CPU time (trace, write, compile); that pays for itself after "
        f"{'never' if even is None else f'{even:.0f} steps'} against the interpreter. Steps "
        f"whose loss differs from the interpreter's: "
        f"{sec['steps_with_other_loss_than_interpreter']}; guard fallbacks: {sec['fallbacks']}.",
        "",
        *_table(["engine", "CPU time/step", "vs floor", "vs interpreter"], rows),
        "",
        "Bytes kept per node: the compiled functions (tracemalloc, after compiling) and the "
        "interpreter's graph during a step, on the same graph.",
        "",
        *_table(["graph", "nodes", "compiled", "interpreter"], memory),
        "",
        f"Size sweep (section 1's): time grows as nodes^{sw['exponent_compiled']:.2f} "
        f"compiled and nodes^{sw['exponent_floor']:.2f} for the floor.",
        "",
        *_table(
            ["samples", "width", "nodes", "compile", "compiled", "floor", "compiled / floor"],
            sweep_rows,
        ),
        "",
        "Long graphs: compiled once (CPU time), in parts of at most 200,000 statements, and "
        "run at other inputs against the interpreter.",
        "",
        *_table(
            ["graph", "nodes", "parts", "compile", "the interpreter's, bit for bit"],
            [
                [
                    r["graph"],
                    f"{r['nodes']:,}",
                    str(r["parts"]),
                    f"{r['compile_seconds']:.2f} s",
                    "yes" if r["equal_to_interpreter"] else "NO",
                ]
                for r in sec["long"]
            ],
        ),
    ]


def _graph(sec: dict[str, Any]) -> list[str]:
    rows = []
    for r in sec["rows"]:
        if "outcome" in r:  # micrograd on the long chain
            longest = r["micrograd_max_chain_products"]
            rows.append(
                [
                    r["graph"],
                    r["engine"],
                    f"{r['nodes']:,}",
                    _stat(r["build_seconds"]),
                    f"{r['outcome']} (longest chain it finishes: {longest:,} products)",
                    "—",
                    "—",
                    "—",
                ]
            )
            continue
        rows.append(
            [
                r["graph"],
                r["engine"],
                f"{r['nodes']:,}",
                _stat(r["build_seconds"]),
                _stat(r["backward_seconds"]),
                f"{r['retained_bytes_per_node']:.0f}",
                f"{r['backward_peak_bytes_per_node']:.0f}",
                _diff(r["grad_relative_error"]),
            ]
        )
    header = [
        "graph",
        "engine",
        "Values",
        "build",
        "backward",
        "bytes/Value (graph)",
        "bytes/Value (backward peak)",
        "grad rel. error",
    ]
    return [
        f"## 2. {sec['title']}",
        "",
        f"Values counts every Value object created, leaves and constants included. Chain: "
        f"`x = x * c` with one shared constant `c = Value({sec['chain_factor']})` (m products: "
        f"m + 2 Values, d out/dx = c**m). Sum: one `sum_values` node over n leaves. Tree: a "
        f"balanced binary tree of `+` (depth {sec['tree_depth']}). Bytes from tracemalloc: "
        "the built graph, and the extra peak during backward(), per Value. Python recursion "
        f"limit: {sec['recursion_limit']}.",
        "",
        *_table(header, rows),
    ]


def _tensor(sec: dict[str, Any]) -> list[str]:
    d, m = sec["digits"], sec["moons"]
    lines = [
        f"## 3. {sec['title']}",
        "",
        f"{sec['dtype']} throughout; torch {sec['torch_threads']} threads, NumPy BLAS "
        f"{sec['numpy_blas_threads']} threads. Digits: MLP {'-'.join(map(str, d['layers']))}, "
        f"batches {' and '.join(map(str, d['batches']))}, {d['optimizer']}, "
        f"{d['train_samples']} training samples, "
        f"{' and '.join(str(n) for n in d['batches_per_epoch'].values())} batches per "
        "epoch, CPU time per epoch. Moons: MLP "
        f"{'-'.join(map(str, m['layers']))}, {m['samples']} samples full batch, SVM loss + "
        f"1e-4 L2, SGD, micrograd's starting weights, CPU time per step ({m['steps']} steps a "
        "run). The three engines alternate run by run; ratios are of medians.",
        "",
    ]
    rows = [
        [
            r["workload"],
            r["engine"],
            _stat(r["seconds"]),
            f"{r['ratio_vs_torch']:.2f}",
            f"{r['ratio_vs_numpy_floor']:.2f}",
            _diff(r["max_abs_loss_diff_vs_torch"]),
        ]
        for r in sec["rows"]
    ]
    header = ["workload", "engine", "time", "vs torch", "vs NumPy floor", "max abs Δloss vs torch"]
    return lines + _table(header, rows)


def _targets(checks: list[dict[str, Any]]) -> list[str]:
    def value(c: dict[str, Any]) -> str:
        if c["measured"] is None:
            return "—"
        x = c["measured"]
        return _diff(x) if c["unit"] == "abs" else f"{_num(x)} {c['unit']}".strip()

    def limit(c: dict[str, Any]) -> str:
        text = f"≤ {_num(c['limit'])} {c['unit']}".strip()
        return text + (f" (aim {_num(c['aim'])})" if c["aim"] is not None else "")

    rows = [[c["target"], value(c), limit(c), c["status"]] for c in checks]
    return ["## Targets", "", *_table(["target", "measured", "limit", "status"], rows)]


def render(results: dict[str, Any]) -> str:
    lines = _header(results)
    sections = results["sections"]
    sections_in_order = (
        ("scalar", _scalar),
        ("compiled", _compiled),
        ("graph", _graph),
        ("tensor", _tensor),
    )
    for key, fn in sections_in_order:
        if key in sections:
            lines += ["", *fn(sections[key])]
    lines += ["", *_targets(results["targets"])]
    return "\n".join(lines) + "\n"
