"""The op table ("the README contains your derivations") is one table, in REPORT.md and
README.md alike: both copies must be identical, and each must have exactly one row per op
the engine has. Rows are matched to engine ops through docs/derivations.md, whose
```derivative blocks give each op name its backward rule (test_report_ops.engine_rules). The
last column is code copied from that rule, and must stay in it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from test_report_ops import SPECS, engine_rules

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


def _squeeze(code: str) -> str:
    """Code with all whitespace removed, so line breaks and spacing do not matter."""
    return re.sub(r"\s+", "", code)


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


def test_the_last_column_is_the_rules_own_code():
    rule_of = {spec["op"]: spec["rule"] for spec in SPECS}
    for cells in table_rows(op_table(ROOT / "README.md")):
        op, returned = cells[0], cells[-1]
        spans = re.findall(r"`([^`]+)`", returned)
        assert spans and any(s.startswith("return ") for s in spans), f"{op}: no return line"
        source = _squeeze(inspect.getsource(getattr(engine, rule_of[op])))
        for span in spans:
            assert _squeeze(span) in source, f"{op}: `{span}` is not in {rule_of[op]}"


def test_the_accumulation_line_the_table_names_is_the_engines():
    for name in ("README.md", "REPORT.md"):
        assert "`a.grad += ga`" in (ROOT / name).read_text("utf-8")
    assert "a.grad += ga" in inspect.getsource(Value.backward)


def test_table_parsing():
    text = "x\n<!-- op-table: note -->\n| op | f |\n|---|---|\n| add | a |\n<!-- /op-table -->\n"
    table = _TABLE.findall(text)[0]
    assert table_ops(table) == ["add"]


def test_the_report_describes_a_training_run():
    text = (ROOT / "REPORT.md").read_text("utf-8")
    assert re.search(r"^## Training$", text, re.M)
    assert "docs/images/moons_loss_curve.png" in text
    assert "modelwright-autograd train" in text
