"""See backpropagation work: a narrated backward pass, pictures of the graph, and an
interactive page that steps through it.

* ``expr``: a safe expression language that builds ``Value`` graphs from text;
* ``trace``: the record of a backward pass, step by step (a ``Trace``);
* ``breaks``: the same pass run with the mistake of exercise 3 or 4 (a ``BrokenRun``);
* ``picture``: the layered layout, SVG and DOT drawings (``draw_graph``, ``save_graph``);
* ``page``: the self-contained HTML page that animates a trace;
* ``narrate``: ``explain(value)`` runs backward(), records it and can write the page;
* ``command``: the ``modelwright-autograd explain`` command.
"""

from .expr import ExpressionError, parse_assignments, parse_expression
from .narrate import explain
from .page import Page, write_page
from .picture import Graph, GraphvizMissingWarning, GraphvizTooSlow, draw_graph, save_graph
from .trace import BrokenRun, InputStep, Node, Step, Trace

__all__ = [
    "BrokenRun",
    "ExpressionError",
    "Graph",
    "GraphvizMissingWarning",
    "GraphvizTooSlow",
    "InputStep",
    "Node",
    "Page",
    "Step",
    "Trace",
    "draw_graph",
    "explain",
    "parse_assignments",
    "parse_expression",
    "save_graph",
    "write_page",
]
