"""The benchmark runner's smoke mode keeps working: it runs, prints every table, writes
complete JSON, and the engines it compares really compute the same thing.

Only structure and agreement are asserted, never a speed figure (performance is reported
by ``python -m benchmarks``, not tested). micrograd and torch come with the test extra.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The loss micrograd's own demo notebook prints before training (an outside reference).
DEMO_STEP0_LOSS = 0.8958441028683222


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, Path]:
    out = tmp_path_factory.mktemp("bench") / "results" / "smoke.json"
    proc = _run("-m", "benchmarks", "--smoke", "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, json.loads(out.read_text()), out


def _table_rows(markdown: str, heading: str) -> list[list[str]]:
    """The data rows of the first table after the heading that starts with ``heading``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows, in_table = [], False
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            in_table = True
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set("".join(cells)) <= {"-"}:
                rows.append(cells)
        elif in_table or line.startswith("#"):
            break
    return rows[1:]  # drop the header row


@pytest.mark.slow
def test_smoke_scalar_section_agrees_with_micrograd(smoke: tuple[str, dict, Path]) -> None:
    markdown, data, _ = smoke
    sec = data["sections"]["scalar"]
    engines = [r["engine"] for r in sec["rows"]]
    assert engines == [
        "pure-Python floor",
        "ours (fused, loss helpers, collector paused)",
        "ours (fused, loss helpers, collector on)",
        "ours (fused, micrograd-style loop)",
        "ours (unfused, collector on)",
        "ours (unfused, collector paused)",
        "micrograd 0.1.0",
        "micrograd 0.1.0 (collector paused)",
    ]
    table = _table_rows(markdown, "## 1.")
    assert [row[0] for row in table] == engines
    for row in sec["rows"]:
        assert row["step0_loss"] == pytest.approx(DEMO_STEP0_LOSS, abs=1e-12)
        assert row["compared_steps"] == data["config"]["micrograd_steps"] == 2
        assert row["max_abs_loss_diff_vs_micrograd"] <= 1e-9
        if row["engine"] != "pure-Python floor":
            assert row["graph_nodes_per_step"] > row["values_created_per_step"] > 0
    curves = sec["loss_curves"]
    assert len(curves["micrograd 0.1.0"]) == 2
    for name in engines:
        assert len(curves[name]) == 2 == data["config"]["steps"]
        assert max(abs(a - b) for a, b in zip(curves[name], curves["micrograd 0.1.0"])) <= 1e-9
    # micrograd's unfused neuron is 2 nodes per input; both build the same-size graph
    unfused, micrograd = sec["rows"][-3], sec["rows"][-2]
    assert unfused["graph_nodes_per_step"] <= micrograd["graph_nodes_per_step"]


@pytest.mark.slow
def test_smoke_sweep_covers_every_size_and_agrees_with_the_floor(
    smoke: tuple[str, dict, Path],
) -> None:
    markdown, data, _ = smoke
    sweep = data["sections"]["scalar"]["sweep"]
    config = data["config"]
    sizes = [(p["samples"], p["width"]) for p in sweep["points"]]
    assert sizes == [(n, w) for n in config["sweep_samples"] for w in config["sweep_widths"]]
    assert len(_table_rows(markdown, "Size sweep")) == len(sizes)
    for p in sweep["points"]:  # the same model and data: the same losses, to rounding
        assert p["max_abs_loss_diff"] <= 1e-9
        assert p["ours_seconds"]["n"] == p["floor_seconds"]["n"] == config["sweep_rounds"]
    assert sweep["exponent_ours"] > 0 and sweep["exponent_floor"] > 0


@pytest.mark.slow
def test_smoke_compiled_section_has_the_interpreters_losses(smoke: tuple[str, dict, Path]) -> None:
    markdown, data, _ = smoke
    sec = data["sections"]["compiled"]
    engines = ["pure-Python floor", "interpreter (fused, loss helpers, collector paused)"]
    assert [r["engine"] for r in sec["rows"]] == [*engines, "compiled"]
    assert [row[0] for row in _table_rows(markdown, "## 1b.")] == [*engines, "compiled"]
    assert sec["steps_with_other_loss_than_interpreter"] == 0 and sec["fallbacks"] == 0
    assert sec["compile_seconds"] > 0 and sec["nodes"] > 0
    for graph in ("fused", "unfused"):
        assert sec["memory"][graph]["compiled_bytes_per_node"] > 0
    assert [r["graph"] for r in sec["long"]] == [row[0] for row in _table_rows(markdown, "Long")]
    assert len(sec["long"]) == 3 and all(r["equal_to_interpreter"] for r in sec["long"])
    config = data["config"]
    sizes = [(p["samples"], p["width"]) for p in sec["sweep"]["points"]]
    assert sizes == [(n, w) for n in config["sweep_samples"] for w in config["sweep_widths"]]


@pytest.mark.slow
def test_smoke_graph_section_has_every_graph(smoke: tuple[str, dict, Path]) -> None:
    markdown, data, _ = smoke
    rows = data["sections"]["graph"]["rows"]
    got = [(r["kind"], r["engine"]) for r in rows]
    assert got == [
        ("chain", "ours"),
        ("chain", "micrograd 0.1.0"),
        ("short-chain", "ours"),
        ("short-chain", "micrograd 0.1.0"),
        ("sum", "ours"),
        ("tree", "ours"),
        ("tree", "micrograd 0.1.0"),
    ]
    assert len(_table_rows(markdown, "## 2.")) == len(rows)
    long_mg = rows[1]
    assert long_mg["outcome"] == "RecursionError"  # 10,000 deep, past the recursion limit
    assert (
        0 < long_mg["micrograd_max_chain_products"] < data["sections"]["graph"]["recursion_limit"]
    )
    for r in rows:
        if "outcome" not in r:
            assert r["grad_relative_error"] <= 1e-9, r["graph"]
            assert r["retained_bytes_per_node"] > 0 and r["nodes"] > 0


@pytest.mark.slow
def test_smoke_tensor_section_compares_the_same_maths(smoke: tuple[str, dict, Path]) -> None:
    markdown, data, _ = smoke
    sec = data["sections"]["tensor"]
    rows = sec["rows"]
    workloads = ("digits batch 32", "digits batch 256", "moons")
    assert [(r["workload"], r["engine"]) for r in rows] == [
        (w, e) for w in workloads for e in ("torch", "numpy floor", "ours")
    ]
    assert len(_table_rows(markdown, "## 3.")) == len(rows)
    assert sec["torch_threads"] == sec["numpy_blas_threads"] == 1
    for r in rows:  # float64 everywhere, same weights and batches: losses agree
        assert r["max_abs_loss_diff_vs_torch"] <= 1e-9, (r["workload"], r["engine"])
        if r["workload"] == "moons":  # micrograd's weights: the demo's own step-0 loss
            assert r["first_loss"] == pytest.approx(DEMO_STEP0_LOSS, abs=1e-12)


@pytest.mark.slow
def test_smoke_header_targets_and_atomic_json(smoke: tuple[str, dict, Path]) -> None:
    markdown, data, out = smoke
    assert markdown.startswith("# modelwright-autograd benchmarks")
    assert "threadpoolctl: kernel" in markdown and "SMOKE sizes" in markdown
    assert data["machine"]["blas"]["threads"] >= 1
    assert {c["status"] for c in data["targets"]} <= {"PASS", "MISS", "n/a"}
    assert len(data["targets"]) == len(_table_rows(markdown, "## Targets")) == 22
    assert sorted(p.name for p in out.parent.iterdir()) == ["smoke.json"]  # no temp left


def test_script_form_and_bad_arguments() -> None:
    proc = _run("benchmarks/run.py", "--help", timeout=60)
    assert proc.returncode == 0 and "--micrograd-steps" in proc.stdout
    proc = _run("-m", "benchmarks", "--sections", "scalar,nope", timeout=60)
    assert proc.returncode == 2 and "unknown section" in proc.stderr
    proc = _run("-m", "benchmarks", "--repeats", "0", timeout=60)
    assert proc.returncode == 2 and "positive whole number" in proc.stderr


@pytest.mark.slow
def test_forward_vs_reverse_smoke(tmp_path: Path) -> None:
    """``python -m benchmarks.modes --smoke``: both modes give the same Jacobian at every
    size, every (shape, n, mode) is timed, and the table and the plot are written."""
    out, png = tmp_path / "modes.json", tmp_path / "modes.png"
    proc = _run("-m", "benchmarks.modes", "--smoke", "--json", str(out), "--plot", str(png))
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    got = [(r["shape"], r["n"], r["mode"]) for r in data["rows"]]
    assert got == [
        (shape, n, mode)
        for shape in ("n->1", "1->n")
        for n in data["sizes"]
        for mode in ("forward", "reverse")
    ]
    for r in data["rows"]:
        assert r["max_abs_diff_between_modes"] <= 1e-12
        assert r["seconds"]["n"] == 1 and r["seconds"]["median"] > 0
    assert len(_table_rows(proc.stdout, "# Forward mode")) == 2 * len(data["sizes"])
    assert png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_smoke_conv_benchmark_runs_and_writes_every_row(tmp_path: Path) -> None:
    """benchmarks.conv on tiny sizes: each row timed on both engines (the pair's results
    are checked equal before timing), printed and written to JSON."""
    out = tmp_path / "conv.json"
    proc = _run("-m", "benchmarks.conv", "--smoke", "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["smoke"] and data["threads"] == 1
    names = [row["workload"] for row in data["rows"]]
    assert len(names) == 3 and names[-1].startswith("digits CNN")
    for row in data["rows"]:
        assert row["ours_s"]["median"] > 0 and row["torch_s"]["median"] > 0
        assert row["ratio"] == row["ours_s"]["median"] / row["torch_s"]["median"]
        assert row["workload"] in proc.stdout


@pytest.mark.slow
def test_ab_compares_two_checkouts() -> None:
    """The A/B runner times both checkouts and prints one row each (here the same tree twice,
    so the ratios are near 1, but nothing is asserted about time)."""
    out = _run("-m", "benchmarks.ab", str(REPO), str(REPO), "--rounds", "1")
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith(("| old: ", "| new: "))]
    assert len(rows) == 2
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")[2:4]]
        assert all(float(cell.split()[0]) > 0 for cell in cells)
    assert "new/old medians: scalar " in out.stdout and ", digits " in out.stdout


def test_trace_open_times_a_step_with_and_without_a_trace() -> None:
    """benchmarks.trace_open prints a row per round and the median (no time asserted)."""
    out = _run("-m", "benchmarks.trace_open", "--rounds", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("no trace open ") == 1 and "median " in out.stdout


@pytest.mark.slow
def test_smoke_lm_data_memory_measures_both_files() -> None:
    """benchmarks.lm_data_memory on 1 MB files: a row for the worst lines and for real
    names, each with a peak and its bytes a byte (the figure is the benchmark's to judge)."""
    proc = _run("-m", "benchmarks.lm_data_memory", "--smoke")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("| short", "| names"))]
    assert len(rows) == 2
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert float(cells[1]) > 0.5 and float(cells[2]) > 0 and float(cells[3]) > 0


@pytest.mark.slow
def test_smoke_checkpoints_benchmark_prints_both_formats() -> None:
    """benchmarks.checkpoints on a small GPT: each figure for safetensors beside the JSON
    before it, the size ratio within what the header can add, the JSON's far above it."""
    proc = _run("-m", "benchmarks.checkpoints", "--smoke")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {
        cells[0]: cells[1:]
        for line in proc.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| figure")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert len(rows) == 5
    assert all(float(new) > 0 and float(old) > 0 for _, new, old, _ in rows.values())
    _, new, old, _ = rows["size / (raw + metadata)"]
    assert 1 <= float(new) <= 1.05 < 3 < float(old)  # float.hex: ~29 bytes a 4-byte weight
