"""The checks of ``modelwright-autograd check``: ``grade`` runs them on one engine and
returns the report.

Every check sends programs or one named probe to the engine's child process (see
``child``), compares the replies with the oracle, and makes one ``Row``. When a check can
tell the classic bugs apart it names them: each candidate bug is a formula for the wrong
gradient that bug gives, and the one matching the learner's numbers is the diagnosis.
Rows that fail only because an earlier, more basic row failed say so in one line
(``fails because 'seed' fails``), so a learner fixes causes first.

This module holds the run and the engine's basic checks (loading, the seed, the walk); the
op checks are in ``ops``, the network checks in ``network``, what they ask in ``cases``,
their words in ``words``, the plumbing every check shares in ``base``.
"""

from __future__ import annotations

import time

from ..base import MAX_HANGS, borrowed_row
from ..locate import Target
from ..report import FAIL, NOTE, PASS, Report, Row
from ..words import (
    EARLY_ORDER,
    NO_GRADIENT_ORDER,
    error_text,
    failure_text,
    multiple_of,
    op_label,
    result_error,
    walk_diagnosis,
)
from .cases import (
    CHAIN_LENGTH,
    LADDER_PROGRAM,
    LADDER_RUNGS,
    OP_CHECKS,
    ORDER_PROGRAM,
    OVERCOUNTED,
    SEED_PROGRAM,
)
from .network import NetworkChecks
from .ops import OpChecks
from .oracle import Oracle, close


class Grader(OpChecks, NetworkChecks):
    """Runs every check against one engine and collects the rows."""

    # ------------------------------------------------------------------ the run
    def run(self) -> Report:
        """Every check in order (the basic ones first, so later rows can name them as the
        cause); stops early when the engine does not load or keeps hanging."""
        started = time.monotonic()
        with self.process:
            try:
                if self.check_loads():
                    if self.loaded.get("kind") == "tensor":
                        from ..tensor.grader import run_tensor_checks

                        run_tensor_checks(self)
                        if self.target.lm_models_module:
                            from ..lm.checks import run_lm_checks

                            run_lm_checks(self)
                        elif self.target.lm_missing:
                            text = f"not run: {self.target.lm_missing}"
                            self.add(Row("LM checks", FAIL, text))
                    else:
                        self._run_checks()
                    self.check_own_work()
            finally:
                self.report.seconds = time.monotonic() - started
                self.report.engine_output = self.process.output_tail(5)
                self.report.isolation = self.process.isolation
                self.report.isolated = self.process.isolated
        return self.report

    def check_own_work(self) -> None:
        if self.hangs >= MAX_HANGS:
            return
        own = self.target.value_module.split(".")[0]
        row = borrowed_row(self.ask, "the engine", own, self.target.import_lines)
        if row is not None:
            self.add(row)

    def _run_checks(self) -> None:
        ops = [lambda check=check: self.check_op(check) for check in OP_CHECKS]
        for check in (
            self.check_shape,
            self.check_seed,
            self.check_leaf_backward,
            self.check_walk,
            *ops,
            self.check_numbers,
            self.check_nonlinearity,
            self.check_reuse,
            self.check_order,
            self.check_random,
            self.check_accumulation,
            self.check_chain,
            self.check_parameters,
            self.check_zero_grad,
            self.check_network_nonlinear,
            self.check_network_gradients,
            self.check_training,
        ):
            if self.hangs >= MAX_HANGS:
                text = f"not run: the engine hung {MAX_HANGS} times; fix that first"
                self.add(Row("the other checks", FAIL, text))
                return
            check()

    def check_loads(self) -> bool:
        loaded = self.process.load()
        name = "engine loads"
        where = self.target.value_file
        if "failure" in loaded:
            if loaded["failure"] == "timeout":
                text = (
                    f"importing {where} did not finish in {self.timeout:g} s: code at the top "
                    "of a module runs on import; is there a loop or a training run there?"
                )
            else:
                text = f"the process importing {where} {loaded['how']}"
            self.add(Row(name, FAIL, text))
            return False
        if "error" in loaded:
            error = loaded["error"]
            if error["type"] == "NoValue":
                text = f"{where} has no class {self.target.class_name}"
            else:
                text = f"importing {where} raised {error_text(error)}"
            self.add(Row(name, FAIL, text, [*self.target.import_lines]))
            return False
        self.loaded = loaded
        found = f"{self.target.class_name} from {self.target.value_module}"
        if loaded.get("kind") == "tensor":
            found += " (a tensor engine: NumPy arrays)"
        if loaded.get("mlp"):
            found += f"; {', '.join(loaded['library'])} from "
            found += self.target.mlp_module or self.target.value_module
        else:
            found += "; no MLP"
        self.has_mlp = bool(loaded.get("mlp"))
        self.add(Row(name, PASS, found))
        return True

    def check_shape(self) -> None:
        reply = self.ask({"do": "shape"})
        name = "Value's parts"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, failure_text(reply, "Value(2.0)")))
            return
        problems = []
        if reply["data"] != 2.0:
            problems.append(f"Value(2.0).data is {reply['data']!r}")
        if reply["grad"] != 0.0:
            problems.append(f"a new Value's grad is {reply['grad']!r}: it must start at 0")
        if not reply["has_backward_method"]:
            problems.append("there is no backward() method")
        if problems:
            self.add(Row(name, FAIL, "; ".join(problems)))
            return
        children = reply["children"]
        text = "data, grad starting at 0, backward()"
        text += f", children in .{children}" if children else " (children under another name)"
        self.add(Row(name, PASS, text))

    def check_seed(self) -> None:
        """backward() on a leaf: nothing but the seed can give it a gradient, so this
        passes as soon as backward() (TODO 1) is done, before any rule is."""
        reply = self.ask({"do": "seed"})
        name = "seed"
        lines = [
            *self.target.import_lines,
            "a = Value(3.0)",
            "a.backward()",
            "print(a.grad)",
        ]
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, failure_text(reply, "Value(3.0).backward()"), lines))
        elif reply["grad"] != 1.0:
            text = (
                f"after a.backward() on a = Value(3.0), a.grad is {reply['grad']!r}: backward() "
                "forgets to seed 1.0. d(out)/d(out) = 1; set self.grad = 1.0 before walking"
            )
            self.add(Row(name, FAIL, text, [*lines[:-1], "print(a.grad)  # expected: 1.0"]))
        elif self._seed_stops_at_the_output() and (text := self._seed_diagnosis()):
            self.add(Row(name, FAIL, text, self.code(SEED_PROGRAM)))
        else:
            self.add(Row(name, PASS, "backward() sets the output's gradient to 1.0"))

    def _seed_stops_at_the_output(self) -> bool:
        """True when a * b ends with out.grad 1 and no gradient below it (a rule still a
        TODO, or wrong, says nothing here: the op rows judge it)."""
        results = self.run_programs([SEED_PROGRAM])
        if isinstance(results, dict) or "error" in results[0]:
            return False
        return results[0]["out_grad"] == 1.0 and results[0]["grads"] == [0.0, 0.0]

    def _seed_diagnosis(self) -> str:
        """Why out.grad 1.0 never reached a and b, from the walk watched on a * b: the
        output's _backward never called, or called while out.grad was still 0 ("" when it
        ran after the seed: then the rule of * is what pushed nothing, its row's to judge)."""
        text = "(a * b).backward() leaves out.grad 1.0 but a.grad and b.grad 0: "
        reply = self.ask({"do": "walk", "program": SEED_PROGRAM})
        if "failure" in reply or "error" in reply or not reply["traced"]:
            return text + (
                "the output's gradient never reached its inputs. Set self.grad = 1.0 before "
                "the walk, and call every node's _backward, the output's own included"
            )
        backward = reply["where"]["backward"]
        look = f"; look at {backward} (backward)" if backward else ""
        if not reply["calls"]:
            return text + (
                "backward() never called the output's own _backward (the watched walk "
                "recorded no call to it), so nothing pushed out.grad to a and b. The walk "
                f"must include the node it starts from: topo ends with self{look}"
            )
        if reply["grads_at_call"][0] != 0.0:
            return ""
        return text + (
            "the output's _backward was called while out.grad was still 0: the seed is set "
            f"after the walk, so every rule pushed 0. Set self.grad = 1.0 first{look}"
        )

    def check_leaf_backward(self) -> None:
        reply = self.ask({"do": "leaf_backward"})
        name = "leaf _backward"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, FAIL, failure_text(reply, "a leaf's _backward()")))
        elif not reply["ran"]:
            self.add(Row(name, PASS, "a leaf has no zero-argument _backward to run"))
        elif reply["grad_after"] != 0.75 or reply["data_after"] != 3.0:
            text = (
                "a leaf's _backward is not a no-op: with grad 0.75, calling it left grad "
                f"{reply['grad_after']!r}. A leaf has no inputs to push to: "
                "self._backward = lambda: None"
            )
            lines = [
                *self.target.import_lines,
                "a = Value(3.0)",
                "a.grad = 0.75",
                "a._backward()",
                "print(a.grad)  # expected 0.75",
            ]
            self.add(Row(name, FAIL, text, lines))
        else:
            self.add(Row(name, PASS, "a leaf's _backward changes nothing"))

    def check_walk(self) -> None:
        """The order backward() calls the rules in, watched on ORDER_PROGRAM (the rules
        themselves are not run, so this needs only TODO 1): every node once, after all of
        its users. When the walk cannot be watched, ``check_order`` judges it by numbers."""
        reply = self.ask({"do": "walk", "program": ORDER_PROGRAM})
        if "failure" in reply or "error" in reply or not reply["traced"] or not reply["calls"]:
            self.walk_traced = False
            return
        self.walk_traced = True
        name = "order"
        text = walk_diagnosis(ORDER_PROGRAM, reply)
        output = len(ORDER_PROGRAM["inputs"]) + len(ORDER_PROGRAM["steps"]) - 1
        if text and self.failed("seed") and output not in reply["calls"]:
            self.because(name, "seed")  # the walk leaves out the node it starts from
        elif text:
            self.add(Row(name, FAIL, text, self._order_lines()))
        elif ladder := self._ladder_diagnosis():
            self.add(Row(name, FAIL, ladder, self._ladder_lines()))
        else:
            self.add(Row(name, PASS, "every node once, after all its users (diamond, ladder)"))

    def _order_lines(self) -> list[str]:
        """ORDER_PROGRAM's reproduce block; while a rule it runs is still a TODO (the walk
        is judged before the rules are), a last line says which, as pasting it raises."""
        lines = self.code(ORDER_PROGRAM)
        results = self.run_programs([ORDER_PROGRAM])
        error = results[0].get("error", {}) if isinstance(results, list) else {}
        if error.get("type") == "NotImplementedError" and error.get("message"):
            lines.append(f"# runs once the rules it uses are filled in: {error['message']}")
        return lines

    def _ladder_diagnosis(self) -> str:
        """The walk watched on LADDER_PROGRAM, where each node has two users, one the
        other's input ("" when every node ran once, after its users, or it was not
        watched)."""
        reply = self.ask({"do": "walk", "program": LADDER_PROGRAM})
        if "failure" in reply or "error" in reply or not reply["traced"]:
            return ""
        return walk_diagnosis(LADDER_PROGRAM, reply)

    def _ladder_lines(self) -> list[str]:
        """LADDER_PROGRAM as a loop a learner pastes, with the oracle's gradients."""
        _, (da, db) = self.oracle.evaluate(LADDER_PROGRAM)
        a, b = LADDER_PROGRAM["inputs"]
        return [
            *self.target.import_lines,
            f"a, b = Value({a}), Value({b})",
            "e = a * b",
            f"for k in range({LADDER_RUNGS}):  # e has two users: d and the + reading it",
            "    d = e",
            "    for _ in range(k % 3 + 1):",
            "        d = d * 0.5",
            "    e = d + e",
            "e.backward()",
            f"print(a.grad, b.grad)  # expected: {da:.10g} {db:.10g}",
        ]

    def check_order(self) -> None:
        """ORDER_PROGRAM by numbers, for a walk ``check_walk`` could not watch."""
        if self.walk_traced:
            return
        program = ORDER_PROGRAM
        results = self.run_programs([program])
        name = "order"
        if isinstance(results, dict):
            self.add(Row(name, FAIL, failure_text(results, "a diamond graph")))
            return
        result = results[0]
        if "error" in result:
            self.add(Row(name, FAIL, result_error(result), self.code(program)))
            return
        _, grads = self.oracle.evaluate(program)
        if all(close(g, w) for g, w in zip(result["grads"], grads)):
            self.add(Row(name, PASS, "a diamond graph: every node waits for all its users"))
            return
        k = multiple_of([(result["grads"], grads)])
        basic = [op for op in ("add", "mul") if self.status.get(op) == FAIL]
        cause = self.root_cause() or (op_label(basic[0]) if basic else None)
        if (
            cause is None
            and self.failed("reuse")
            and not self.rows["reuse"].diagnosis.startswith("not")
        ):
            cause = "reuse"
        if cause:
            self.because(name, cause)
            return
        if k:
            text = f"counted {k} times: {OVERCOUNTED}"
        elif result["grads"] == [0.0, 0.0]:
            text = NO_GRADIENT_ORDER
        else:
            text = EARLY_ORDER
        self.add(Row(name, FAIL, text, self.code(program)))

    def check_accumulation(self) -> None:
        """Leaves add up over backward() calls on separate graphs, as PyTorch's do, and a
        backward() reaches only its own graph: one that moves a leaf of an earlier graph
        keeps that graph between calls (a default argument ``topo=[]``) and fails."""
        reply = self.ask({"do": "accumulate"})
        name = "two backward() calls"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, NOTE, "could not run: " + failure_text(reply, "backward()")))
            return
        first, second = reply["after_first"], reply["after_second"]
        other = reply["after_other"]
        if not close(other, second):
            lines = [
                *self.target.import_lines,
                "a, b = Value(2.0), Value(3.0)",
                "(a * b).backward()",
                "(a + b).backward()",
                "print(a.grad)  # expected: 4.0 (3 from a*b, then 1 from a+b)",
            ]
            self.add(Row(name, FAIL, _kept_graph_text(reply), lines))
            return
        cause = self.root_cause()
        if cause and not close(second, first + 1.0):
            text = f"not judged: '{cause}' fails, so backward() gives no gradient to add up"
        elif close(second, first + 1.0):
            text = "grads add up over calls on separate graphs, as PyTorch's leaves do"
            if not self.report.failed:  # what a second call on one graph does, once all is right
                text += (
                    f"; one graph twice, (a*b)*2, gives a.grad {reply['same_graph']:g} here and "
                    "12 in torch"
                )
        elif self.failed("reuse"):  # a rule that assigns (=) replaces a.grad too
            self.because(name, "reuse")
            return
        else:
            text = (
                f"a.grad was {first:g} after (a*b).backward() and {second:g} after "
                "(a+b).backward(): the second call did not add to it (PyTorch's leaves "
                "hold 4). Gradients summed over separate backward() calls (one per example, "
                "then one step) come out wrong: backward() must not reset the grads it "
                "finds; zero_grad() does that"
            )
            lines = [
                *self.target.import_lines,
                "a, b = Value(2.0), Value(3.0)",
                "(a * b).backward()",
                "(a + b).backward()",
                "print(a.grad)  # expected: 4.0 (3 from a*b, then 1 from a+b)",
            ]
            self.add(Row(name, FAIL, text, lines))
            return
        self.add(Row(name, NOTE, text))

    def check_chain(self) -> None:
        reply = self.ask({"do": "chain", "n": CHAIN_LENGTH})
        name = f"{CHAIN_LENGTH:,}-node chain"
        if "failure" in reply or "error" in reply:
            self.add(Row(name, NOTE, "could not run: " + failure_text(reply, "a long chain")))
        elif reply["recursion"]:
            text = (
                "backward() hit Python's recursion limit (RecursionError): the topological "
                "sort is recursive, as micrograd's is, which fails near 1,000 nodes deep. "
                "Fine for the gate's small networks; for deep graphs, sort with an explicit "
                "stack of (node, children_done) pairs instead of recursion"
            )
            self.add(Row(name, NOTE, text))
        else:
            want = 1.0001**CHAIN_LENGTH
            if close(reply["grad"], want):
                text = "backward() walks it without recursion; gradient right"
                self.add(Row(name, NOTE, text))
                return
            basic = ("order", "a * b", "numbers with Values", "reuse")
            cause = self.root_cause() or next((row for row in basic if self.failed(row)), None)
            shown = [row.name for row in self.report.rows if row.status == FAIL and row.reproduce]
            if cause or shown:  # a chain of * is wrong when * or the walk is: that is the cause
                self.because(name, cause or shown[0])
                return
            text = (
                f"backward() walks it without recursion, but the input's gradient is "
                f"{reply['grad']:.6g}, expected {want:.6g}: every node must be walked"
            )
            lines = [
                *self.target.import_lines,
                "x = Value(1.0)",
                "y = x",
                f"for _ in range({CHAIN_LENGTH}):",
                "    y = y * 1.0001",
                "y.backward()",
                f"print(x.grad)  # expected: {want:.6g}",
            ]
            self.add(Row(name, FAIL, text, lines))


def grade(
    target: Target, oracle: Oracle, timeout: float = 10.0, train_timeout: float = 90.0
) -> Report:
    """Run every check against the engine at ``target`` and return the report."""
    return Grader(target, oracle, timeout, train_timeout).run()


def _kept_graph_text(reply: dict[str, float | list[str]]) -> str:
    """Words for a backward() that also walked an earlier call's graph."""
    first, second, other = reply["after_first"], reply["after_second"], reply["after_other"]
    text = (
        f"backward() walks the graphs of earlier calls too: after (a*b).backward() a.grad was "
        f"{first:g}; (a+b).backward() added {second - first:g}, expected 1; then "
        f"(c*d).backward(), a graph without a, moved a.grad to {other:g}. "
    )
    if reply["defaults"]:
        return text + (
            f"The graph's list survives between calls: a default argument is made once, when "
            f"def runs, and every call adds to it: {reply['defaults'][0]}. Make them in the "
            "body instead (topo = [] inside the function)"
        )
    return text + (
        "Something keeps the nodes between calls (a list on the class or the module?): "
        "make the topological order afresh in each backward()"
    )
