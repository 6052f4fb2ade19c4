"""``modelwright-autograd explain``: its options; the work is in explain/command.py."""

from __future__ import annotations

import argparse

from .options import Subparsers

_EXPLAIN_EPILOG = """\
examples:
  modelwright-autograd explain "a*b + c" a=2 b=3 c=4
  modelwright-autograd explain "tanh(w*x + b)" w=-3 x=2 b=6.88 --graph neuron.svg
  modelwright-autograd explain "tanh(a*b + c) * a" a=2 b=-0.5 c=0.3 --html page.html
  modelwright-autograd explain "a*a + a" a=3 --json
  modelwright-autograd explain "a*b + a" a=2 b=-3 --break assign   (exercise 4)
  modelwright-autograd explain "tanh(a*b + c) * a" a=2 b=-0.5 c=0.3 --compiled
  modelwright-autograd explain -- "-a*b" a=2 b=3     (an expression starting with '-')
"""


def add_explain(subparsers: Subparsers) -> None:
    """The ``explain`` command's options."""
    from ..explain.expr import FUNCTIONS, MAX_DEPTH, MAX_LENGTH, MAX_NODES
    from ..explain.picture import DOT_SECONDS
    from ..explain.trace import BREAKS

    parser = subparsers.add_parser(
        "explain",
        help="narrate the backward pass of an expression, step by step",
        description=(
            "Build the expression from Values, run backward() and print, for every node "
            "in reverse topological order, the gradient that arrived, each input's local "
            "derivative and what was pushed to it. The expression may use numbers "
            "(constants), the variables given as NAME=VALUE, + - * / **, unary minus, "
            f"parentheses and {' '.join(FUNCTIONS)}; anything else is refused (exit code 2), "
            f"as is an expression longer than {MAX_LENGTH:,} characters, of more than "
            f"{MAX_NODES:,} operations or nested more than {MAX_DEPTH} levels deep "
            "(each pair of parentheses, a call's too, and each nested unary minus, ** or "
            "right-hand operand is a level; a flat sum a+b+c+... is one level). "
            "An output that cannot be written is "
            "exit code 1, checked first, and so is --torch without PyTorch installed "
            "(--torch with --json: exit code 2)."
        ),
        epilog=_EXPLAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("expression", help='for example "a*b + c"')
    parser.add_argument("assignments", nargs="*", metavar="NAME=VALUE", help="e.g. a=2 b=3")
    parser.add_argument(
        "--json", action="store_true", help="print {value, grads, nodes, steps} as JSON instead"
    )
    parser.add_argument(
        "--graph",
        metavar="PATH",
        help=(
            "also draw the graph to PATH (.svg, or .dot for DOT text; .png, .pdf with "
            f"Graphviz, whose layout is stopped after {DOT_SECONDS:g} s: exit code 1, and "
            ".svg, laid out in Python, still works)"
        ),
    )
    parser.add_argument(
        "--html",
        metavar="PAGE",
        help="also write PAGE (.html): a self-contained page that steps through the pass",
    )
    parser.add_argument(
        "--break",
        dest="broken",
        choices=tuple(BREAKS),
        help="also run the pass again with a classic mistake, on gradients of its own, and "
        "show its gradients beside the right ones, which come out wrong and why (the page "
        "has it as a second view): 'order' runs the rules in forward order, inputs first "
        "(exercise 3); 'assign' writes each gradient with = where += belongs (exercise 4)",
    )
    parser.add_argument(
        "--compiled",
        action="store_true",
        help="print the expression's graph written out as straight-line Python, forward and "
        "backward, as the compiler emits it (docs/performance.md), instead of the narration",
    )
    parser.add_argument(
        "--torch",
        action="store_true",
        help="also build the expression in PyTorch (which must be installed) and print the "
        "grad_fn torch records beside each node, and both gradients (docs/pytorch.md)",
    )
    parser.set_defaults(func=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    """Narrate the backward pass: 0, 2 for a refused expression or argument, 1 when an
    output file cannot be written."""
    from ..explain.command import run

    return run(
        args.expression,
        args.assignments,
        graph=args.graph,
        html=args.html,
        as_json=args.json,
        with_torch=args.torch,
        as_compiled=args.compiled,
        broken=args.broken,
    )
