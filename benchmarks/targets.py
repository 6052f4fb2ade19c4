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


def evaluate(sections: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per target: measured value, limit (and aim), PASS / MISS / n/a."""
    checks = []
    scalar = sections.get("scalar")
    if scalar:
        rows = scalar["rows"]
        fused = _find(rows, engine="ours (fused)")
        checks.append(
            _check(
                "scalar: ours/micrograd time per step (demo)",
                fused and fused["ratio_vs_micrograd_per_step"],
                0.04,
                0.02,
                "x",
            )
        )
        for row in rows:
            if row["engine"].startswith("ours"):
                checks.append(
                    _check(
                        f"scalar: {row['engine']} loss curve vs micrograd "
                        f"({row['compared_steps']} steps)",
                        row["max_abs_loss_diff_vs_micrograd"],
                        scalar["loss_tolerance"],
                        unit="abs",
                    )
                )
    graph = sections.get("graph")
    if graph:
        rows = graph["rows"]
        chain = _find(rows, kind="chain", engine="ours")
        for row in (chain, _find(rows, kind="tree", engine="ours")):
            if row:
                checks.append(
                    _check(
                        f"graph: ours bytes/node retained, {row['graph']}",
                        row["retained_bytes_per_node"],
                        230,
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
        digits = _find(rows, workload="digits", engine="ours")
        moons = _find(rows, workload="moons", engine="ours")
        checks += [
            _check(
                "tensor: digits epoch ours/torch",
                digits and digits["ratio_vs_torch"],
                1.0,
                0.75,
                "x",
            ),
            _check(
                "tensor: digits epoch ours/NumPy floor",
                digits and digits["ratio_vs_numpy_floor"],
                2.5,
                unit="x",
            ),
            _check(
                "tensor: moons step ours/torch", moons and moons["ratio_vs_torch"], 1.5, unit="x"
            ),
        ]
    return checks
