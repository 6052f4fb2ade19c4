"""``explain --break order|assign`` (``explain(..., broken=...)``): the backward pass run
again with the mistake of the chapter's exercise 3 (the rules in forward order) or 4 (=
where += belongs), beside the right one. Expected numbers are derived by hand, and the
broken gradients are also checked against the two broken walks written out on Values (as
docs/concepts.md writes them), independently of the explain code."""

from __future__ import annotations

import json
import math

import pytest

from modelwright_autograd import Value
from modelwright_autograd.cli import main
from modelwright_autograd.explain import explain, parse_assignments, parse_expression
from modelwright_autograd.graph import topological_order


def _explain(expression: str, pairs: list[str], broken: str):
    variables = parse_assignments(pairs)
    return explain(parse_expression(expression, variables), variables, broken=broken)


# ---------------------------------------------------------------- the chapter's cases
def test_forward_order_on_the_chapters_a_times_b_plus_c_gives_zero_to_a_and_b():
    trace = _explain("(a*b) + c", ["a=2", "b=3", "c=4"], "order")
    run = trace.broken
    # a*b's rule runs first, holding 0 (nothing has pushed into it yet), so it pushes
    # 0 * b and 0 * a; then the sum, seeded with 1, pushes 1 to a*b (too late) and to c
    assert [(s.node, s.grad) for s in run.trace.steps] == [("a*b", 0.0), ("(a*b) + c", 1.0)]
    assert [i.pushed for i in run.trace.steps[0].inputs] == [0.0, 0.0]
    assert run.trace.grads == {"a": 0.0, "b": 0.0, "c": 1.0}
    assert run.right == trace.grads == {"a": 3.0, "b": 2.0, "c": 1.0}
    assert run.wrong == ("a", "b")
    assert run.wrong_step == 1 and list(run.marks) == [1]
    assert run.marks[1].startswith("a*b's rule ran with grad 0, before its user (a*b) + c (step 2)")
    assert "it holds 1." in run.marks[1]


def test_assign_on_a_times_b_plus_c_changes_nothing_and_says_why():
    trace = _explain("(a*b) + c", ["a=2", "b=3", "c=4"], "assign")
    run = trace.broken
    assert run.trace.grads == run.right == {"a": 3.0, "b": 2.0, "c": 1.0}
    assert run.wrong == () and run.wrong_step is None and run.marks == {}
    assert run.why[0].startswith("No value is reused")
    assert "No value is reused" in trace.to_text()


def test_a_reused_value_gets_a_wrong_gradient_from_both_breaks():
    # L = a*b + a at a=2, b=-3: dL/da = b + 1 = -2, dL/db = a = 2
    order = _explain("a*b + a", ["a=2", "b=-3"], "order").broken
    # forward order: a*b runs with grad 0 (pushes nothing), then the sum pushes 1 to a
    assert order.trace.grads == {"a": 1.0, "b": 0.0} and order.right == {"a": -2.0, "b": 2.0}
    assert order.wrong == ("a", "b") and order.wrong_step == 1
    assign = _explain("a*b + a", ["a=2", "b=-3"], "assign").broken
    # = : the sum writes 1 into a.grad, then a*b overwrites it with b = -3
    assert [s.node for s in assign.trace.steps] == ["a*b + a", "a*b"]
    assert assign.trace.grads == {"a": -3.0, "b": 2.0}
    assert assign.wrong == ("a",) and assign.wrong_step == 2 and list(assign.marks) == [2]
    assert assign.marks[2] == (
        "a*b writes -3 into a's grad (=), overwriting the 1 that a*b + a pushed at step 1: "
        "that path's share is lost (+= keeps both: 1 + -3 = -2)."
    )
    assert assign.why[0].startswith("a is used more than once")


def test_a_value_used_twice_by_one_node_loses_its_first_operands_share():
    run = _explain("a*a", ["a=3"], "assign").broken
    assert run.trace.grads == {"a": 3.0} and run.right == {"a": 6.0}  # 2a = 6; = keeps one a
    assert "overwriting the 3 that it pushed through its left operand" in run.marks[1]
    # one op has nothing to run early: the order cannot matter, and the run says so
    run = _explain("a*a", ["a=3"], "order").broken
    assert run.trace.grads == run.right == {"a": 6.0} and run.wrong == ()
    assert run.why[0].startswith("Only the output has a rule here")


def test_an_overwritten_interior_value_passes_its_loss_on():
    # s = a + b is used by s*c and by + s: dL/ds = c + 1 = 6, so dL/da = dL/db = 6; with =
    # the product's c = 5 overwrites the sum's 1, and s's rule passes on 5
    a, b, c = Value(1.0), Value(2.0), Value(5.0)
    s = a + b
    trace = explain(s * c + s, {"a": a, "b": b, "c": c}, broken="assign")
    run = trace.broken
    assert run.right == trace.grads == {"a": 6.0, "b": 6.0, "c": 3.0}
    assert run.trace.grads == {"a": 5.0, "b": 5.0, "c": 3.0}
    assert run.wrong == ("a", "b")
    steps = {st.node: st.step for st in run.trace.steps}
    assert "overwriting the 1 that" in run.marks[steps["v2"]]  # s*c is unnamed: v2
    assert run.marks[steps["v1"]].startswith("v1's rule runs with grad 5, not 6")
    assert run.wrong_step == steps["v2"] < steps["v1"]


def test_a_reused_value_whose_overwritten_share_is_zero_comes_out_right():
    run = _explain("relu(a) + relu(a)", ["a=-2"], "assign").broken
    assert run.trace.grads == run.right == {"a": 0.0} and run.marks == {}
    assert "every share overwritten was 0" in run.why[0]


def test_a_deeper_expression_by_hand():
    # out = tanh(u) * a with u = a*b + c at a=2, b=-0.5, c=0.3: u = -0.7
    t = math.tanh(-0.7)
    order = _explain("tanh(a*b + c) * a", ["a=2", "b=-0.5", "c=0.3"], "order").broken
    # only the product, seeded with 1, runs with its gradient: a gets tanh(u), b and c 0
    assert order.trace.grads == {"a": t, "b": 0.0, "c": 0.0}
    assert [s.step for s in order.trace.steps if s.step in order.marks] == [1, 2, 3]
    assign = _explain("tanh(a*b + c) * a", ["a=2", "b=-0.5", "c=0.3"], "assign").broken
    # a keeps only a*b's share, b * du: b * a * (1 - tanh(u)**2)
    assert assign.trace.grads["a"] == pytest.approx(-0.5 * 2 * (1 - t * t), rel=1e-12)
    assert assign.right["a"] == pytest.approx(t + -0.5 * 2 * (1 - t * t), rel=1e-12)
    assert assign.wrong == ("a",)


# ------------------------------------------- against the broken walks written on Values
def _forward_order_walk(root: Value) -> None:
    """The rules in forward order (exercise 3's mistake), as a learner would write it."""
    root.grad = 1.0
    for node in topological_order(root):
        if node._backward is not None:
            for x, g in zip(node._prev, node.input_grads()):
                x.grad += g


def _assigning_walk(root: Value) -> None:
    """backward() with = for += (exercise 4's mistake), as docs/concepts.md writes it."""
    root.grad = 1.0
    for node in reversed(topological_order(root)):
        if node._backward is not None:
            for x, g in zip(node._prev, node.input_grads()):
                x.grad = g


@pytest.mark.parametrize(
    "expression",
    ["a*b + a", "(a*b) + c", "a*a*a - b/a", "tanh(a*b + c) * a", "exp(a)*a + log(b)*a*c",
     "sigmoid(a*a + b) ** 2 * c - a", "(a + b)*(a - b)*c + a"],
)  # fmt: skip
@pytest.mark.parametrize(
    ("mode", "walk"), [("order", _forward_order_walk), ("assign", _assigning_walk)]
)
def test_the_broken_runs_are_the_broken_walks(expression, mode, walk):
    pairs = ["a=0.7", "b=1.9", "c=-1.3"]
    variables = parse_assignments(pairs)
    trace = explain(parse_expression(expression, variables), variables, broken=mode)
    fresh = parse_assignments(pairs)
    walk(parse_expression(expression, fresh))
    assert trace.broken.trace.grads == {name: v.grad for name, v in fresh.items()}
    # and the run leaves the graph's own gradients as backward() made them
    assert trace.grads == {name: v.grad for name, v in variables.items()} == trace.broken.right


def test_a_leaf_output_and_a_long_list_of_causes():
    run = _explain("a", ["a=2"], "order").broken
    assert run.trace.steps == () and run.trace.grads == run.right == {"a": 1.0}
    assert run.why == ("The output is a leaf: no rule runs, so there is nothing to break.",)
    # a+a+...+a (12 terms, 11 sums): with = each sum after the first writes over the share
    # the one before it wrote into a; the last writes over its own left operand's
    run = _explain("+".join(["a"] * 12), ["a=2"], "assign").broken
    assert run.right == {"a": 12.0} and run.trace.grads == {"a": 1.0}
    assert list(run.marks) == list(range(2, 12)) and len(run.why) == 1 + 8 + 1
    assert run.why[-1] == "... and 2 more steps where it goes wrong"


def test_an_unknown_break_is_refused():
    a = Value(2.0, label="a")
    with pytest.raises(ValueError, match="broken must be one of order, assign or None"):
        explain(a * a, broken="sideways")


# ---------------------------------------------------------------------- the command
def test_cli_prints_the_broken_run_beside_the_right_one(capsys):
    assert main(["explain", "a*b + a", "a=2", "b=-3", "--break", "assign"]) == 0
    out = capsys.readouterr().out
    right, broken = out.split("The same pass with a break (assign):")
    assert "d/da = -2" in right
    rows = broken.splitlines()[4:8]  # the table's rows, after its header
    assert [row.endswith("  <- goes wrong here") for row in rows] == [False, False, True, False]
    assert rows[2].startswith("2     a*b ")
    assert "  d/da = -2  broken -3  wrong" in broken
    assert "  d/db = 2   broken 2\n" in broken
    assert "Step 2: a*b writes -3 into a's grad (=), overwriting the 1" in broken


def test_cli_json_has_the_broken_run(capsys):
    assert main(["explain", "(a*b) + c", "a=2", "b=3", "c=4", "--break", "order", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d) == {"value", "grads", "nodes", "steps", "broken"}
    b = d["broken"]
    assert (b["break"], b["grads"], b["right"]) == ("order", {"a": 0, "b": 0, "c": 1}, d["grads"])
    assert b["wrong"] == ["a", "b"] and b["wrong_step"] == 1
    assert [(s["node"], s["grad"]) for s in b["steps"]] == [("a*b", 0.0), ("(a*b) + c", 1.0)]
    assert "mark" in b["steps"][0] and "mark" not in b["steps"][1]
    assert b["why"][1] == "Step 1: " + b["steps"][0]["mark"]


def test_cli_refuses_a_bad_break_with_exit_code_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["explain", "a*b", "a=1", "b=2", "--break", "sideways"])
    assert info.value.code == 2
    assert "--break: invalid choice: 'sideways'" in capsys.readouterr().err
    assert main(["explain", "a*b", "a=1", "b=2", "--break", "order", "--compiled"]) == 2
    assert capsys.readouterr().err == (
        "modelwright-autograd explain: error: --compiled prints code; use --break without it\n"
    )


def test_the_docs_break_excerpt_is_what_the_command_prints(capsys):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "explain.md").read_text("utf-8")
    (block,) = re.findall(
        r"```text\n\$ modelwright-autograd (explain [^\n]*--break[^\n]*)\n(.*?)```", doc, re.S
    )
    command, excerpt = block
    assert command == 'explain "a*b + a" a=2 b=-3 --break assign'
    assert main(["explain", "a*b + a", "a=2", "b=-3", "--break", "assign"]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in excerpt.splitlines() if line != "..."]
    assert len(lines) == 6 and all(line in out for line in lines), lines
