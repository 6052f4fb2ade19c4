"""How deep an ``explain`` expression may nest: exactly MAX_DEPTH (200) levels of every form
works, and of every mix of the forms; one more is refused in one line (exit code 2 from the
command); the docs and ``explain --help`` state the figure the code enforces."""

from __future__ import annotations

import math
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from modelwright_autograd.cli import main
from modelwright_autograd.explain import ExpressionError, explain, parse_expression
from modelwright_autograd.explain.expr import MAX_DEPTH

DOCS = Path(__file__).resolve().parents[1] / "docs" / "explain.md"

#: Each form wraps the expression inside it and adds one level, as the docs count them.
FORMS = {
    "parentheses": ("(", ")"),
    "unary minus": ("-", ""),
    "**": ("a**", ""),
    "calls": ("tanh(", ")"),
    "right-hand operand": ("a*(", ")"),  # two levels: the bracket and the product
}
LEVELS = {"parentheses": 1, "unary minus": 1, "**": 1, "calls": 1, "right-hand operand": 2}


def _nest(wrappers: list[tuple[str, str]]) -> str:
    return "".join(w[0] for w in wrappers) + "a" + "".join(w[1] for w in reversed(wrappers))


def _refusal(text: str) -> str:
    with pytest.raises(ExpressionError) as info:
        parse_expression(text, {"a": 0.5})
    message = str(info.value)
    assert "\n" not in message
    return message


def test_the_limit_is_200():
    assert MAX_DEPTH == 200  # the figure the docs and the help state


@pytest.mark.parametrize("form", [f for f in FORMS if LEVELS[f] == 1])
def test_exactly_the_limit_works_and_one_more_is_refused(form):
    deepest = _nest([FORMS[form]] * MAX_DEPTH)
    out = parse_expression(deepest, {"a": 0.5})
    expected = {"parentheses": 0.5, "unary minus": 0.5, "**": 0.5 ** (0.5**0.5)}
    if form == "calls":
        expected["calls"] = 0.5
        for _ in range(MAX_DEPTH):
            expected["calls"] = math.tanh(expected["calls"])
    if form != "**":  # a**a**...**a: its value, checked at a depth where floats can
        assert out.data == pytest.approx(expected[form], rel=1e-12)
    message = _refusal(_nest([FORMS[form]] * (MAX_DEPTH + 1)))
    assert f"nested more than {MAX_DEPTH} levels deep" in message


def test_a_power_tower_at_the_limit_has_the_right_value_and_gradient():
    out = parse_expression(_nest([FORMS["**"]] * MAX_DEPTH), {"a": 0.5})
    value = 0.5
    for _ in range(MAX_DEPTH):
        value = 0.5**value
    assert out.data == pytest.approx(value, rel=1e-12)
    trace = explain(out)
    assert len(trace.steps) == MAX_DEPTH and math.isfinite(trace.grads["a"])


def test_a_right_hand_operand_in_brackets_is_two_levels():
    wrap = FORMS["right-hand operand"]
    assert parse_expression(_nest([wrap] * (MAX_DEPTH // 2)), {"a": 0.5}).data == 0.5 ** (
        MAX_DEPTH // 2 + 1
    )
    _refusal(_nest([wrap] * (MAX_DEPTH // 2) + [FORMS["unary minus"]]))


def test_random_mixes_of_the_forms_parse_at_the_limit_and_are_refused_past_it():
    """Brackets and operators nested together run Python's parser out of room sooner than
    either alone (a**(a**(...)) stops at 199 on 3.11): counted together against one limit,
    every mix at exactly the limit parses."""
    kinds = [*FORMS.values(), ("a**-", ""), ("-a**(", ")"), ("a**(", ")"), ("exp(-", ")")]
    levels = [*LEVELS.values(), 2, 3, 2, 2]
    rng = random.Random(29)
    for _ in range(40):
        chosen = rng.sample(range(len(kinds)), rng.randint(1, 4))
        wrappers, total = [], 0
        while True:
            k = rng.choice(chosen)
            if kinds[k][0] == "a*(" and wrappers and not wrappers[-1][0].endswith("("):
                continue  # -a*(x) is (-a)*(x), a**a*(x) (a**a)*(x): not nested in the first
            if total + levels[k] > MAX_DEPTH:
                break
            wrappers.append(kinds[k])
            total += levels[k]
        while total < MAX_DEPTH:  # fill to exactly the limit
            wrappers.append(FORMS["parentheses"])
            total += 1
        parse_expression(_nest(wrappers), {"a": 0.5})
        _refusal(_nest([*wrappers, FORMS["unary minus"]]))


def test_a_flat_sum_is_one_level():
    # 198 minuses, a pair of parentheses and the sum: 200 levels, however long the sum
    sum_inside = "(a" + "+a" * 5000 + ")"
    assert parse_expression("-" * (MAX_DEPTH - 2) + sum_inside, {"a": 1.0}).data == 5001
    _refusal("-" * (MAX_DEPTH - 1) + sum_inside)


def test_thousands_of_levels_are_refused_in_one_line():
    for text in ("-" * 9000 + "a", "a" + "**a" * 5000, "(" * 5000 + "a" + ")" * 5000):
        assert f"more than {MAX_DEPTH} levels" in _refusal(text)


def test_the_command_refuses_one_level_more_in_one_line_with_exit_2(tmp_path):
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelwright_autograd",
            "explain",
            "--",
            "-" * MAX_DEPTH + "a",
            "a=2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "d/da = 1" in ok.stdout  # an even number of minuses
    too_deep = "tanh(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1)
    bad = subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", "explain", too_deep, "a=2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and f"more than {MAX_DEPTH} levels" in bad.stderr


def test_the_docs_and_the_help_state_the_enforced_figure(capsys):
    docs = " ".join(DOCS.read_text().split())
    assert f"{MAX_DEPTH} levels of nesting" in docs
    assert re.search(r"\b500 levels", docs) is None
    with pytest.raises(SystemExit):
        main(["explain", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"nested more than {MAX_DEPTH} levels deep" in shown
