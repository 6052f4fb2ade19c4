"""The op table ("the README contains your derivations") is one table, in REPORT.md and
README.md alike: both copies must be identical, and each must have exactly one row per op
the engine has. Rows are matched to engine ops through docs/derivations.md, whose
```derivative blocks give each op name its backward rule (test_report_ops.engine_rules). The
last column is the rule's code: run, it must give the rule's own numbers at every point
docs/derivations.md checks (where test_report_ops compares the rule with finite differences
and PyTorch)."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import pytest
from test_report_ops import SPECS, _run_engine, engine_rules

from modelwright_autograd import Value
from modelwright_autograd.scalar import engine

ROOT = Path(__file__).resolve().parents[1]
_TABLE = re.compile(r"^<!-- op-table\b.*?-->\n(.*?)^<!-- /op-table -->", re.S | re.M)


def op_table(path: Path) -> str:
    """The text of the op table between its markers in ``path``."""
    found = _TABLE.findall(path.read_text("utf-8"))
    assert len(found) == 1, f"{path.name}: expected one op table, found {len(found)}"
    return found[0]


def table_rows(table: str) -> list[list[str]]:
    """The cells of every body row."""
    rows = [line for line in table.strip().splitlines() if line.startswith("|")]
    header, rule, *body = rows
    assert header.split("|")[1].strip() == "op" and set(rule) <= set("|- ")
    return [[cell.strip() for cell in row.split("|")[1:-1]] for row in body]


def table_ops(table: str) -> list[str]:
    """The first column of every body row."""
    return [cells[0] for cells in table_rows(table)]


def test_readme_and_report_have_the_same_table():
    assert op_table(ROOT / "README.md") == op_table(ROOT / "REPORT.md")


def test_the_table_has_one_row_per_engine_op():
    rule_of = {spec["op"]: spec["rule"] for spec in SPECS}
    for name in ("README.md", "REPORT.md"):
        ops = table_ops(op_table(ROOT / name))
        assert len(ops) == len(set(ops)), f"{name}: an op has two rows"
        unknown = set(ops) - set(rule_of)
        assert not unknown, f"{name}: rows for ops docs/derivations.md does not derive: {unknown}"
        missing = engine_rules() - {rule_of[op] for op in ops}
        assert not missing, f"{name}: no row for the engine ops with rules {sorted(missing)}"


def row_rule(code: str, rule_name: str):
    """The table's code for a rule (its backticked statements, in order) as a function with
    the rule's parameters, run in the engine's namespace."""
    rule = getattr(engine, rule_name)
    params = [
        f"*{p.name}" if p.kind is p.VAR_POSITIONAL else p.name
        for p in inspect.signature(rule).parameters.values()
    ]
    body = "\n".join(f"    {line}" for line in re.findall(r"`([^`]+)`", code))
    namespace = dict(vars(engine))
    exec(f"def row({', '.join(params)}):\n{body}\n", namespace)  # repository text
    return namespace["row"]


def _same(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is y
    return x == y or (math.isnan(x) and math.isnan(y))


ROWS = table_rows(op_table(ROOT / "README.md"))


@pytest.mark.parametrize("cells", ROWS, ids=[cells[0] for cells in ROWS])
def test_the_last_column_computes_what_the_rule_does(cells):
    spec = next(s for s in SPECS if s["op"] == cells[0])
    rule = getattr(engine, spec["rule"])
    row = row_rule(cells[-1], spec["rule"])
    points = spec["at"] + [where for where, _ in spec["edge"]]
    for point in points:
        node, _ = _run_engine(spec, point)
        inputs = [p.data for p in node._prev]
        for g in (1.0, -2.5, 0.0):
            want = list(rule(g, node.data, *inputs))
            got = list(row(g, node.data, *inputs))
            assert len(got) == len(want) and all(map(_same, got, want)), (point, g, got, want)


def test_a_value_on_several_paths_gets_the_sum_of_their_gradients():
    # what the text above the table says of `a.grad += ga`
    x = Value(3.0)
    y = x * x + x.exp() - x
    y.backward()
    assert x.grad == 2 * 3.0 + math.exp(3.0) - 1.0
    y.backward()  # a leaf accumulates across calls too
    assert x.grad == 2 * (2 * 3.0 + math.exp(3.0) - 1.0)


def test_table_parsing():
    text = "x\n<!-- op-table: note -->\n| op | f |\n|---|---|\n| add | a |\n<!-- /op-table -->\n"
    table = _TABLE.findall(text)[0]
    assert table_ops(table) == ["add"]


def test_the_report_describes_a_training_run():
    text = (ROOT / "REPORT.md").read_text("utf-8")
    assert re.search(r"^## Training$", text, re.M)
    assert "docs/images/moons_loss_curve.png" in text
    assert "modelwright-autograd train" in text
