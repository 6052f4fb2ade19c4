"""The op table ("the README contains your derivations") is one table, in REPORT.md and
README.md alike: both copies must be identical, and each must have exactly one row per op
the engine has. Rows are matched to engine ops through docs/derivations.md, whose
```derivative blocks give each op name its backward rule (test_report_ops.engine_rules)."""

from __future__ import annotations

import re
from pathlib import Path

from test_report_ops import SPECS, engine_rules

ROOT = Path(__file__).resolve().parents[1]
_TABLE = re.compile(r"^<!-- op-table\b.*?-->\n(.*?)^<!-- /op-table -->", re.S | re.M)


def op_table(path: Path) -> str:
    """The text of the op table between its markers in ``path``."""
    found = _TABLE.findall(path.read_text("utf-8"))
    assert len(found) == 1, f"{path.name}: expected one op table, found {len(found)}"
    return found[0]


def table_ops(table: str) -> list[str]:
    """The first column of every body row."""
    rows = [line for line in table.strip().splitlines() if line.startswith("|")]
    header, rule, *body = rows
    assert header.split("|")[1].strip() == "op" and set(rule) <= set("|- ")
    return [row.split("|")[1].strip() for row in body]


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


def test_table_parsing():
    text = "x\n<!-- op-table: note -->\n| op | f |\n|---|---|\n| add | a |\n<!-- /op-table -->\n"
    table = _TABLE.findall(text)[0]
    assert table_ops(table) == ["add"]


def test_the_report_describes_a_training_run():
    text = (ROOT / "REPORT.md").read_text("utf-8")
    assert re.search(r"^## Training$", text, re.M)
    assert "docs/images/moons_loss_curve.png" in text
    assert "modelwright-autograd train" in text
