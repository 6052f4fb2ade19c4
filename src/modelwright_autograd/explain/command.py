"""What the ``modelwright-autograd explain`` command does (its options are in cli/explain.py):
parse, trace, print, draw."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path

from ..checks import shown_path
from ..files import check_writable
from ..graph import topological_order
from ..printing import emit
from ..scalar.compiler import CompileError, compiled
from ..scalar.engine import Value
from .expr import ExpressionError, parse_assignments, parse_expression
from .narrate import explain
from .page import write_page
from .picture import FORMATS, Graph, GraphvizMissingWarning, GraphvizTooSlow
from .torch_view import torch_view

_PROG = "modelwright-autograd explain: error:"


def run(
    expression: str,
    assignments: list[str],
    *,
    graph: str | None = None,
    html: str | None = None,
    as_json: bool = False,
    with_torch: bool = False,
    as_compiled: bool = False,
    broken: str | None = None,
) -> int:
    """The ``explain`` subcommand, its options typed (--json is ``as_json``, --torch
    ``with_torch``, --compiled ``as_compiled``, --break ``broken``): 0 on success, 2 for a
    refused expression or argument, 1 when an output file cannot be written (checked
    before the work where it can be) or Graphviz's layout of a PNG or PDF takes longer
    than ``picture.DOT_SECONDS``."""
    if graph is not None and Path(graph).suffix.lower().lstrip(".") not in FORMATS:
        print(f"{_PROG} --graph {graph!r}: use a .svg, .png, .pdf or .dot file name",
              file=sys.stderr)  # fmt: skip
        return 2
    if html is not None and Path(html).suffix.lower() not in (".html", ".htm"):
        print(f"{_PROG} --html {html!r}: use a file name ending in .html", file=sys.stderr)
        return 2
    if with_torch and as_json:
        print(f"{_PROG} --torch prints text; use it without --json", file=sys.stderr)
        return 2
    if as_compiled and broken is not None:
        print(f"{_PROG} --compiled prints code; use --break without it", file=sys.stderr)
        return 2
    if as_compiled and (as_json or with_torch):
        print(f"{_PROG} --compiled prints code; use it without --json and --torch",
              file=sys.stderr)  # fmt: skip
        return 2
    if with_torch:
        try:
            import torch  # noqa: F401  (only to know it is there, before any work)
        except ImportError:
            from ..checkpoint import TORCH_MISSING

            print(f"{_PROG} --torch: {TORCH_MISSING}", file=sys.stderr)
            return 1
    try:
        for path in (graph, html):
            if path is not None:
                check_writable(path)
    except OSError as e:  # a path that cannot be written, before any work: a usage error
        print(f"{_PROG} {e}", file=sys.stderr)
        return 2
    try:
        variables = parse_assignments(assignments)
        out = parse_expression(expression, variables)
    except ExpressionError as e:
        print(f"{_PROG} {e}", file=sys.stderr)
        return 2
    trace = explain(out, variables, broken=broken)
    if as_compiled:
        try:
            texts = [compiled_source(expression, variables)]
        except CompileError as e:
            print(f"{_PROG} {e}", file=sys.stderr)
            return 2
    else:
        texts = [trace.to_json() if as_json else trace.to_text()]
    if with_torch:
        texts.append("\n" + torch_view(trace))
    if emit(texts):
        return 1  # the reader went away (``| head``)
    used = set(topological_order(out))
    for name, v in variables.items():
        if v not in used:
            print(f"note: {name} is given but not used, so its gradient is 0", file=sys.stderr)
    if graph is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", GraphvizMissingWarning)
            try:
                written = _write(lambda: Graph(trace).save(graph), graph)
            except GraphvizTooSlow as e:
                print(f"{_PROG} --graph {shown_path(graph)}: {e}", file=sys.stderr)
                return 1
        for w in caught:
            print(f"note: {w.message}", file=sys.stderr)
        if written is None:
            return 1
        print(f"graph written to {shown_path(written)}", file=sys.stderr)
    if html is not None:
        if _write(lambda: write_page(trace, html), html) is None:
            return 1
        print(f"page written to {shown_path(html)}", file=sys.stderr)
    return 0


def compiled_source(expression: str, variables: dict[str, Value]) -> str:
    """The expression's graph written out as Python by the compiler (scalar/compiler.py),
    with a header naming the inputs."""
    names = list(variables)
    program = compiled(
        lambda *values: parse_expression(expression, dict(zip(names, values))),
        list(variables.values()),
    )
    inputs = ", ".join(names)
    return (
        f"# {expression} written out as Python, forward and backward (scalar/compiler.py).\n"
        f"# run([{inputs}]) returns (value, [{', '.join(f'd/d{n}' for n in names)}]).\n\n"
        + program.source
    )


def _write(write: Callable[[], Path], path: str) -> Path | None:
    """Run ``write``; on an OSError (a full disk, a folder that vanished) print one line
    naming ``path`` and return None."""
    try:
        return write()
    except OSError as e:
        reason = e.strerror or str(e)
        if not reason.startswith("cannot write"):  # check_writable's own message is whole
            reason = f"cannot write {shown_path(path)}: {reason}"
        print(f"{_PROG} {reason}", file=sys.stderr)
        return None
