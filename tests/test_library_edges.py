"""The library's caps and the commands' edges (issue 23, items 17, 19, 21, 25, 26):
explain(html=) bounded as the command is, a flat sum refused with its real limit, a huge
loss printed short, export to a real full filesystem, explain's outputs checked before the
trace is printed, and non-finite checkpoints evaluated without NumPy's warnings."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

import modelwright_autograd
from modelwright_autograd import Value, cli
from modelwright_autograd.checkpoint import save_checkpoint
from modelwright_autograd.explain import explain, narrate
from modelwright_autograd.explain.expr import (
    MAX_DEPTH,
    MAX_LENGTH,
    MAX_NODES,
    ExpressionError,
    parse_expression,
)
from modelwright_autograd.tensor import nn as tensor_nn
from modelwright_autograd.training.results import Score

ENV = {**os.environ, "PYTHONPATH": str(Path(modelwright_autograd.__file__).parents[1])}


def _chain(operations: int) -> tuple[Value, Value]:
    x = Value(0.5, label="x")
    out = x
    for _ in range(operations):
        out = out * 1.0
    return x, out


# ---------------------------------------------------------------------- explain(html=)
def test_explain_html_refuses_a_graph_larger_than_the_commands_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(narrate, "MAX_NODES", 50)
    x, out = _chain(51)
    page = tmp_path / "page.html"
    with pytest.raises(ValueError, match="the graph has 51 operations; a page shows at most 50"):
        explain(out, html=page)
    assert not page.exists() and x.grad == 0.0  # refused before the pass and the page
    x, out = _chain(50)
    explain(out, html=page)
    assert page.stat().st_size > 0 and x.grad == 1.0


# ---------------------------------------------------------------------- item 19
def test_a_flat_sum_works_to_the_operation_cap_and_nesting_has_its_limit(capsys):
    """A flat sum of MAX_NODES operations builds (the help promises that many); what nests
    (unary minus, parentheses, **) is refused past MAX_DEPTH levels with that number."""
    terms = (MAX_LENGTH + 1) // 2  # a+a+...+a as long as the length cap allows
    assert terms - 1 <= MAX_NODES
    longest = "+".join(["a"] * terms)
    assert parse_expression(longest, {"a": 1.0}).data == terms
    mixed = "-".join(["a*b"] * 3000)  # products inside a flat chain of differences
    assert parse_expression(mixed, {"a": 2.0, "b": 3.0}).data == 6.0 - 2999 * 6.0
    # each minus is a level: MAX_DEPTH minuses are the deepest allowed (test_explain_depth)
    assert parse_expression("-" * MAX_DEPTH + "a", {"a": 1.0}).data == 1.0
    with pytest.raises(ExpressionError, match=f"more than {MAX_DEPTH} levels"):
        parse_expression("-" * (MAX_DEPTH + 1) + "a", {"a": 1.0})
    with pytest.raises(SystemExit):
        cli.main(["explain", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"nested more than {MAX_DEPTH} levels deep" in shown
    assert f"more than {MAX_NODES:,} operations" in shown


def test_a_huge_loss_is_printed_in_a_few_characters():
    line = Score(1e300, 7, 10).describe()
    assert line == "loss 1.000000e+300  accuracy 70.00% (7/10)"
    assert Score(0.25, 7, 10).describe() == "loss 0.250000  accuracy 70.00% (7/10)"


# ---------------------------------------------------------------------- export to a full disk
def test_export_to_a_real_full_filesystem_is_one_line(tmp_path):
    pytest.importorskip("torch")
    source = tmp_path / "model.json"
    save_checkpoint(source, tensor_nn.MLP(2, [100, 100, 1], seed=0))  # ~80 KB of weights
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "modelwright_autograd", "export", str(source), f"{disk}/m.pt"],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert (done.returncode, done.stdout) == (1, ""), done.stderr
        assert done.stderr.count("\n") == 1 and "No space left on device" in done.stderr
        assert "m.pt" in done.stderr and "Traceback" not in done.stderr
        assert os.listdir(disk) == []  # no temporary file left
    finally:
        subprocess.run(["umount", str(disk)], check=True)


# ---------------------------------------------------------------------- explain's outputs
def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link_to_dev_full(path: Path) -> None:
    path.symlink_to("/dev/full")


def _link_to_a_file(path: Path) -> None:
    (path.parent / "target").write_text("kept\n")
    path.symlink_to("target")


@pytest.mark.parametrize("option", ["--graph", "--html"])
@pytest.mark.parametrize("make", [_fifo, _link_to_dev_full, _link_to_a_file])
def test_explain_refuses_an_output_that_is_not_a_file_before_printing(
    tmp_path, capsys, option, make
):
    path = tmp_path / ("out.svg" if option == "--graph" else "out.html")
    make(path)
    assert (
        cli.main(["explain", "a*b", "a=2", "b=3", option, str(path)]) == 2
    )  # an output that cannot be written: a usage error
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing printed: the output was checked first
    assert captured.err.count("\n") == 1 and "not a regular file" in captured.err
    assert path.is_symlink() or not path.is_file()
    if (tmp_path / "target").exists():
        assert (tmp_path / "target").read_text() == "kept\n"


def test_explain_output_paths_with_a_newline_stay_on_one_line(tmp_path, capsys):
    page = tmp_path / "a\nb.html"
    graph = tmp_path / "c\nd.dot"
    assert (
        cli.main(["explain", "a*b", "a=2", "b=3", "--html", str(page), "--graph", str(graph)]) == 0
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 2
    assert "page written to " in err and "a\\nb.html" in err and "c\\nd.dot" in err
    assert page.is_file() and graph.is_file()
    missing = tmp_path / "no\nfolder" / "p.html"
    assert (
        cli.main(["explain", "a*b", "a=2", "b=3", "--html", str(missing)]) == 2
    )  # an output that cannot be written: a usage error
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no\\nfolder" in err


# ---------------------------------------------------------------------- non-finite checkpoints
def _evaluate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "default", "-m", "modelwright_autograd", "evaluate",
         "--checkpoint", str(path)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def test_evaluating_infinite_weights_says_so_without_numpy_warnings(tmp_path):
    model = tensor_nn.MLP(2, [4, 1], seed=0)
    model.layers[0].weight.data[:] = np.inf
    meta = {
        "data": {"dataset": "moons", "samples": 100, "noise": 0.1, "seed": 1337},
        "objective": {"loss": "svm", "l2": 0.0001},
    }
    save_checkpoint(tmp_path / "model.json", model, meta)
    done = _evaluate(tmp_path / "model.json")
    assert done.returncode == 0, done.stderr
    assert "loss nan" in done.stdout
    assert "Warning" not in done.stderr and ".py:" not in done.stderr
    assert done.stderr.count("\n") == 1 and "the loss is not a finite number" in done.stderr


def test_evaluating_a_negative_running_variance_says_so_without_numpy_warnings(tmp_path):
    model = tensor_nn.CNN(8, (2, 3), 10, seed=0)
    state = model.state_dict()
    state["bn1.running_var"] = -np.ones_like(state["bn1.running_var"])
    model.load_state_dict(state)
    meta = {
        "data": {"dataset": "digits", "samples": None, "noise": None, "seed": 0},
        "objective": {"loss": "ce", "l2": 0.0},
    }
    save_checkpoint(tmp_path / "model.json", model, meta)
    assert load_file(tmp_path / "model.safetensors")["bn1.running_var"][0] == -1.0
    done = _evaluate(tmp_path / "model.json")
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and ".py:" not in done.stderr
    assert "the loss is not a finite number" in done.stderr
    loss = float(done.stdout.splitlines()[1].split()[2])
    assert math.isnan(loss)
