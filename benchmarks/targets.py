"""The project's performance targets, checked against a run's results. A MISS is reported, never
fatal."""

from __future__ import annotations

from typing import Any


def _find(rows: list[dict[str, Any]], **match: str) -> dict[str, Any] | None:
    for row in rows:
        if all(row.get(k) == v for k, v in match.items()):
            return row
    return None


def _check(
    name: str, measured: float | None, limit: float, aim: float | None = None, unit: str = ""
) -> dict[str, Any]:
    status = "n/a" if measured is None else ("PASS" if measured <= limit else "MISS")
    return {
        "target": name,
        "measured": measured,
        "limit": limit,
        "aim": aim,
        "unit": unit,
        "status": status,
    }


FAST_PATH = "ours (fused, loss helpers, collector paused)"
USER_LOOP = "ours (fused, micrograd-style loop)"


def evaluate(sections: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per target: measured value, limit (and aim), PASS / MISS / n/a."""
    checks = []
    scalar = sections.get("scalar")
    if scalar:
        rows = scalar["rows"]
        fast = _find(rows, engine=FAST_PATH)
        user = _find(rows, engine=USER_LOOP)
        checks += [
            _check(
                "scalar demo: fast path / pure-Python floor",
                fast and fast["ratio_vs_floor"],
                2.0,
                unit="x",
            ),
            _check(
                "scalar demo: micrograd-style loop / floor",
                user and user["ratio_vs_floor"],
                2.5,
                unit="x",
            ),
            _check(
                "scalar demo: fast path / micrograd",
                fast and fast["ratio_vs_micrograd"],
                0.04,
                0.02,
                "x",
            ),
        ]
        for row in rows:
            if not row["engine"].startswith("micrograd"):
                checks.append(
                    _check(
                        f"scalar: {row['engine']} loss curve vs micrograd "
                        f"({row['compared_steps']} steps)",
                        row["max_abs_loss_diff_vs_micrograd"],
                        scalar["loss_tolerance"],
                        unit="abs",
                    )
                )
        sweep = scalar["sweep"]
        checks += [
            _check(
                "scalar sweep: worst fast path / floor", sweep["max_ratio_vs_floor"], 2.5, unit="x"
            ),
            _check(
                "scalar sweep: exponent of time vs nodes (a factor per width)",
                sweep["exponent_ours"],
                1.1,
            ),
        ]
    checks += _compiled_targets(sections.get("compiled"))
    graph = sections.get("graph")
    if graph:
        rows = graph["rows"]
        chain = _find(rows, kind="chain", engine="ours")
        tree = _find(rows, kind="tree", engine="ours")
        for row, limit in ((chain, 120), (tree, 230)):
            if row:
                checks.append(
                    _check(
                        f"graph: ours bytes/node retained, {row['graph']}",
                        row["retained_bytes_per_node"],
                        limit,
                        unit="B",
                    )
                )
        if chain:
            checks.append(
                _check(
                    f"graph: ours backward of {chain['nodes']:,}-Value chain",
                    chain["backward_seconds"]["median"],
                    5.0,
                    unit="s",
                )
            )
    tensor = sections.get("tensor")
    if tensor:
        rows = tensor["rows"]
        for workload, limit in (
            ("digits batch 32", 1.15),
            ("digits batch 256", 1.1),
            ("moons", 1.5),
        ):
            row = _find(rows, workload=workload, engine="ours")
            checks.append(
                _check(
                    f"tensor: {workload}, ours / NumPy floor",
                    row and row["ratio_vs_numpy_floor"],
                    limit,
                    unit="x",
                )
            )
        row = _find(rows, workload="digits batch 32", engine="ours")
        checks.append(
            _check(
                "tensor: digits batch 32, ours / torch",
                row and row["ratio_vs_torch"],
                1.0,
                0.75,
                "x",
            )
        )
    return checks


def _compiled_targets(sec: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Issue 33's: the compiled demo step under 0.8x the floor, the interpreter's losses to
    the bit, growth no steeper than the floor's, no more bytes per node than a Value."""
    if not sec:
        return []
    row = _find(sec["rows"], engine="compiled")
    sweep = sec["sweep"]
    return [
        _check("compiled demo: compiled / floor", row and row["ratio_vs_floor"], 0.8, unit="x"),
        _check(
            f"compiled demo: steps whose loss is not the interpreter's ({sec['steps']} steps)",
            sec["steps_with_other_loss_than_interpreter"],
            0,
        ),
        _check(
            "compiled sweep: exponent of time vs nodes, compiled minus floor",
            sweep["exponent_compiled"] - sweep["exponent_floor"],
            0.05,
        ),
        _check(
            "compiled: bytes kept per node, unfused demo graph (a Value: 112)",
            sec["memory"]["unfused"]["compiled_bytes_per_node"],
            112,
            unit="B",
        ),
    ]
