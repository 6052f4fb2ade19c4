"""A tiny, safe expression language for building ``Value`` graphs from text.

``parse_expression("a*b + c", {"a": 2, "b": 3, "c": 4})`` returns the output ``Value``.
The text is parsed with Python's ``ast`` and every node is checked against an allow-list
before anything is built; nothing is ever passed to ``eval``. Allowed: numbers, variables
that were given a value, ``+ - * / **``, unary minus, parentheses and the functions
``exp log tanh relu sigmoid``. Anything else raises ``ExpressionError`` pointing at the
offending part of the text.

Everything is linear in the text's length, and both the length and the number of nodes are
capped (``MAX_LENGTH``, ``MAX_NODES``), so a huge string is refused before any work.
"""

from __future__ import annotations

import ast
import keyword
import operator
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping

from ..scalar.engine import Value

#: The functions an expression may call, each a method of ``Value``.
FUNCTIONS: dict[str, Callable[[Value], Value]] = {
    "exp": Value.exp,
    "log": Value.log,
    "tanh": Value.tanh,
    "relu": Value.relu,
    "sigmoid": Value.sigmoid,
}

_BINARY: dict[type, Callable[[Value, Value], Value]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}

# Operators Python knows but the language refuses, by symbol, to point at them in messages.
_REFUSED_OPERATORS = {
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.UAdd: "+",
    ast.Invert: "~",
    ast.Not: "not",
}

# What to call the node types people are most likely to try.
_NODE_NAMES = {
    ast.Subscript: "subscripts (indexing)",
    ast.Lambda: "lambda functions",
    ast.Compare: "comparisons",
    ast.BoolOp: "'and' / 'or'",
    ast.IfExp: "conditional expressions (x if c else y)",
    ast.NamedExpr: "assignments (:=)",
    ast.Tuple: "tuples (a comma between two expressions)",
    ast.List: "lists",
    ast.Set: "sets",
    ast.Dict: "dicts",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.JoinedStr: "f-strings",
    ast.Starred: "starred arguments (*x)",
    ast.Await: "await expressions",
    ast.Yield: "yield expressions",
    ast.YieldFrom: "yield expressions",
    ast.Slice: "slices",
}

#: The longest expression accepted, in characters, and the most nodes it may build: a
#: narrated backward pass of more is no longer readable, and the caps bound time and memory.
MAX_LENGTH = 20_000
MAX_NODES = 10_000
#: The deepest nesting accepted: the deepest parentheses (a call's brackets count) plus the
#: longest chain of nested operations (a unary minus, a ``**``, which binds to the right,
#: or an operation in a right-hand operand) may come to at most MAX_DEPTH levels. Python's
#: tokenizer refuses more than 200 nested brackets (its MAXLEVEL, the same from 3.10 to
#: 3.13), and its parser runs out of stack sooner when brackets and operations nest
#: together (``a**(a**(...))`` stops at 199 brackets on 3.11), so the two are counted
#: together against one figure that every mix parses within (tests/test_explain_depth.py).
#: A chain of left-binding operators (``a+b-c*d/e...``, ``+`` and ``-`` over products) is
#: walked in a loop and is one level, so a flat sum may have up to MAX_NODES terms.
#: Checking and building recurse at most twice per level, well inside Python's
#: recursion limit (1,000).
MAX_DEPTH = 200
#: Python's own parser builds ``a+b+c+...`` nested one level per term, recursing in C as
#: it goes: parsing raises the recursion limit to this for the call, so a flat sum of
#: MAX_NODES terms parses (the expression's length cap bounds the depth).
_PARSE_RECURSION = 2 * MAX_NODES + 1_000
#: Interior nodes are labelled with their text, shortened to this many characters.
MAX_LABEL = 40
#: An error message shows at most this many characters of the text around the fault.
WINDOW = 76

#: White space Python allows in an expression besides the space, written as one in labels.
_AS_SPACE = {ord("\t"): " ", ord("\f"): " "}

_ALLOWED = (
    "allowed: numbers, variables given as name=value, + - * / **, unary minus, "
    "parentheses and the functions " + ", ".join(FUNCTIONS)
)


class ExpressionError(ValueError):
    """A rejected expression or ``name=value`` pair, with the column it points at.

    ``str(error)`` is one line, ready to print: the message, the text with the offending
    part between » and «, and a hint (what the language allows).
    """

    def __init__(
        self,
        message: str,
        text: str | None = None,
        start: int = 0,
        end: int = 0,
        hint: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.text = text
        self.start = start  # 0-based character offsets into ``text``: [start, end)
        self.end = max(end, start + 1)

    @property
    def column(self) -> int:
        """The 1-based column of the offending part."""
        return self.start + 1

    def __str__(self) -> str:
        hint = f" ({self.hint})" if self.hint else ""
        if self.text is None:
            return self.message + hint
        # one line: a window of at most WINDOW characters around the offending part, which
        # stands between » and «, so that the message stays short however long the text is
        lo = max(0, min(self.start - WINDOW // 3, len(self.text) - WINDOW))
        hi = min(len(self.text), lo + WINDOW)
        shown = "".join(ch if ch.isprintable() else " " for ch in self.text)
        before, after = ("…" if lo else ""), ("…" if hi < len(self.text) else "")
        end = min(self.end, max(hi, self.start))
        part = f"{shown[lo : self.start]}»{shown[self.start : end]}«{shown[end:hi]}"
        return f"{self.message} (column {self.column}): {before}{part}{after}{hint}"


def parse_assignments(pairs: Iterable[str]) -> dict[str, Value]:
    """Turn ``["a=2", "b=-3.5"]`` into ``{"a": Value(2.0, label="a"), ...}``.

    A name must be a Python identifier that is neither a keyword nor one of the function
    names; a value is anything ``float()`` reads (so ``inf`` and ``nan`` are allowed).
    """
    variables: dict[str, Value] = {}
    for pair in pairs:
        name, sep, number = pair.partition("=")
        # NFKC: the form Python's parser gives identifiers, so "ａ=2" names the "ａ" in "ａ*2"
        stripped = unicodedata.normalize("NFKC", name.strip())
        if not sep:
            raise ExpressionError(
                f"expected name=value, got {_quoted(pair)} (no '=')", pair, 0, len(pair)
            )
        if not stripped.isidentifier() or keyword.iskeyword(stripped):
            raise ExpressionError(
                f"{_quoted(stripped)} is not a valid variable name", pair, 0, len(name)
            )
        if stripped in FUNCTIONS:
            raise ExpressionError(
                f"{stripped!r} is a function name and cannot be a variable", pair, 0, len(name)
            )
        if stripped in variables:
            raise ExpressionError(
                f"variable {_quoted(stripped)} is given twice", pair, 0, len(name)
            )
        try:
            x = float(number)
        except ValueError:
            raise ExpressionError(
                f"the value of {_quoted(stripped)[1:-1]} must be a number, got {_quoted(number)}",
                pair,
                len(name) + 1,
                len(pair),
            ) from None
        variables[stripped] = Value(x, label=stripped)
    return variables


def _quoted(text: str) -> str:
    """``repr(text)``, its middle cut out when long, so that a message stays one short line."""
    if len(text) > MAX_LABEL:
        half = (MAX_LABEL - 1) // 2
        text = text[:half] + "…" + text[-half:]
    return repr(text)


def parse_expression(text: str, variables: Mapping[str, Value | float] | None = None) -> Value:
    """Build the ``Value`` graph of ``text``; return its output node.

    Each name refers to one Value however often it appears, so ``a*a + a`` accumulates
    both uses into ``a.grad``. Numbers given for ``variables`` become Values labelled with
    their names. Interior nodes are labelled with the text they came from (``"a*b"``).
    """
    if not isinstance(text, str):
        raise TypeError(f"expression must be a str, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:  # first, before looking at a single character
        raise ExpressionError(
            f"the expression is {len(text):,} characters long; the limit is {MAX_LENGTH:,}"
        )
    values = _as_values(variables or {})
    brackets = deepest = 0
    for i, ch in enumerate(text):
        if ch == "(":
            brackets += 1
            deepest = max(deepest, brackets)
            if brackets > MAX_DEPTH:  # before Python's tokenizer says it in its own words
                raise ExpressionError(_too_deep(f"a parenthesis {brackets} deep at column {i + 1}"))
        elif ch == ")":
            brackets -= 1
        elif ch in "\r\n":
            raise ExpressionError("the expression must be on one line", text, i, i + 1)
        if ch == "\0" or "\ud800" <= ch <= "\udfff":  # not text: one line says where
            what = "a NUL" if ch == "\0" else f"a lone surrogate \\u{ord(ch):04x} (not UTF-8)"
            raise ExpressionError(f"the expression holds {what} at column {i + 1}", None, i)
    if not text.strip():
        raise ExpressionError("the expression is empty")
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, _PARSE_RECURSION))
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        start = len(text) if not e.offset or e.offset > len(text) else e.offset - 1
        message = f"not a valid expression: {e.msg}"
        raise ExpressionError(message, text, start, hint=_ALLOWED) from None
    except (RecursionError, MemoryError):  # thousands of unary minuses or **
        raise ExpressionError(_too_deep("too deep for Python's parser")) from None
    finally:
        sys.setrecursionlimit(limit)
    operations = _depth(tree.body, MAX_DEPTH - deepest)
    if deepest + operations > MAX_DEPTH:
        levels = f"{deepest} of parentheses and over {MAX_DEPTH - deepest} of operations"
        raise ExpressionError(_too_deep(levels))
    builder = _Builder(text, values)
    try:
        builder.check(tree.body)  # the whole tree is vetted before anything is built
        return builder.build(tree.body)
    except RecursionError:  # called with most of Python's stack already in use
        raise ExpressionError(
            "the expression is nested too deeply for the room left on Python's stack here "
            f"(the limit of {MAX_DEPTH} levels assumes a call from near the top)"
        ) from None


def _too_deep(what: str) -> str:
    """The one-line refusal of an expression nested more than MAX_DEPTH levels."""
    return (
        f"the expression is nested more than {MAX_DEPTH} levels deep ({what}): each pair of "
        "parentheses (a call's too), each nested unary minus, ** and right-hand operand is "
        "a level; a flat sum a+b+c+... is one"
    )


def _depth(tree: ast.expr, limit: int) -> int:
    """How many operations ``tree`` nests (``a`` is none, ``a+b`` one, ``-(a+b)`` two, a
    chain ``a+b-c`` one; a call is none, its brackets are counted in the text), found
    without recursion; the count stops once it passes ``limit``."""
    deepest, stack = 0, [(tree, 0)]
    while stack and deepest <= limit:
        node, depth = stack.pop()
        if not isinstance(node, ast.Call):
            depth += 1
        if isinstance(node, (ast.Name, ast.Constant)):
            continue  # a leaf is no level
        deepest = max(deepest, depth)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                chained = isinstance(child, ast.BinOp) and child is getattr(node, "left", None)
                stack.append((child, depth - 1 if chained else depth))
    return deepest


def _left_chain(node: ast.BinOp) -> list[ast.BinOp]:
    """``node`` and the BinOps down its left operands, innermost first: ``a+b-c`` is
    ``[a+b, (a+b)-c]``. Checking and building walk it in a loop, not by recursion."""
    chain = []
    current: ast.expr = node
    while isinstance(current, ast.BinOp):
        chain.append(current)
        current = current.left
    chain.reverse()
    return chain


def _as_values(variables: Mapping[str, Value | float]) -> dict[str, Value]:
    values: dict[str, Value] = {}
    for name, v in variables.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"{name!r} is not a valid variable name")
        if name in FUNCTIONS:
            raise ValueError(f"{name!r} is a function name and cannot be a variable")
        name = unicodedata.normalize("NFKC", name)  # as the parser normalises identifiers
        values[name] = v if isinstance(v, Value) else Value(v, label=name)
    return values


class _Builder:
    """Checks an ``ast`` tree against the allow-list, then builds it from Values."""

    def __init__(self, text: str, variables: dict[str, Value]) -> None:
        self.text = text
        self.variables = variables
        self.nodes = 0
        encoded = text.encode("utf-8")
        # ast reports UTF-8 byte offsets: map each to a character offset, once (linear).
        self.columns: list[int] | None = None
        if len(encoded) != len(text):
            self.columns = [0] * (len(encoded) + 1)
            at = 0
            for i, ch in enumerate(text):
                for _ in range(len(ch.encode("utf-8"))):
                    self.columns[at] = i
                    at += 1
            self.columns[at] = len(text)

    def _column(self, byte_offset: int) -> int:
        """The character offset of a UTF-8 byte offset reported by ast."""
        return byte_offset if self.columns is None else self.columns[byte_offset]

    def _label(self, node: ast.expr) -> str:
        """The text ``node`` came from, its middle cut out when longer than MAX_LABEL, a
        tab or a form feed (white space to Python) written as a space."""
        start = self._column(node.col_offset)
        end = self._column(node.end_col_offset)  # type: ignore[arg-type]
        if end - start <= MAX_LABEL:
            label = self.text[start:end]
        else:
            half = (MAX_LABEL - 1) // 2
            label = self.text[start : start + half] + "…" + self.text[end - half : end]
        return label.translate(_AS_SPACE)

    def _error(self, message: str, node: ast.AST) -> ExpressionError:
        start = self._column(node.col_offset)  # type: ignore[attr-defined]
        end = self._column(node.end_col_offset)  # type: ignore[attr-defined]
        return ExpressionError(message, self.text, start, end, _ALLOWED)

    def _operator_error(self, node: ast.BinOp, symbol: str) -> ExpressionError:
        """Point at the operator itself, which ast gives no position for."""
        lo = self._column(node.left.end_col_offset)  # type: ignore[arg-type]
        hi = self._column(node.right.col_offset)
        at = self.text.find(symbol, lo, hi)
        start = at if at >= 0 else lo
        message = f"operator {symbol} is not allowed"
        return ExpressionError(message, self.text, start, start + len(symbol), _ALLOWED)

    def check(self, node: ast.expr) -> None:
        """Raise ExpressionError at the leftmost part of ``node`` outside the language."""
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call)):  # one Value each
            self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self._error(f"the expression has more than {MAX_NODES:,} parts", node)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._error(f"{value!r} is not a number", node)
            try:
                float(value)
            except OverflowError:
                raise self._error("this whole number is too large for a float", node) from None
        elif isinstance(node, ast.Name):
            if node.id in FUNCTIONS:
                raise self._error(f"{node.id} is a function: call it as {node.id}(x)", node)
            if node.id not in self.variables:
                raise self._error(f"{node.id!r} has no value: give it as {node.id}=<number>", node)
        elif isinstance(node, ast.BinOp):
            chain = _left_chain(node)
            self.nodes += len(chain) - 1  # node itself was counted above
            if self.nodes > MAX_NODES:
                raise self._error(f"the expression has more than {MAX_NODES:,} parts", node)
            self.check(chain[0].left)
            for link in chain:
                if type(link.op) not in _BINARY:
                    raise self._operator_error(link, _REFUSED_OPERATORS.get(type(link.op), "?"))
                self.check(link.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub):
                symbol = _REFUSED_OPERATORS.get(type(node.op), "?")
                raise self._error(f"unary {symbol} is not allowed", node)
            self.check(node.operand)
        elif isinstance(node, ast.Call):
            self._check_call(node)
        elif isinstance(node, ast.Attribute):
            self.check(node.value)
            end = self._column(node.end_col_offset)  # type: ignore[arg-type]
            start = self.text.rfind(".", 0, end)  # the dot, after any closing parenthesis
            message = f"attribute access ('.{node.attr}') is not allowed"
            raise ExpressionError(message, self.text, start, end, _ALLOWED)
        else:
            what = _NODE_NAMES.get(type(node), type(node).__name__)
            raise self._error(f"{what} are not allowed", node)

    def _check_call(self, node: ast.Call) -> None:
        names = ", ".join(FUNCTIONS)
        if not isinstance(node.func, ast.Name):
            self.check(node.func)  # points at the attribute, subscript... being called
            raise self._error(f"only the functions {names} can be called", node.func)
        if node.func.id not in FUNCTIONS:
            raise self._error(f"function {node.func.id!r} is not allowed", node.func)
        if node.keywords:
            raise self._error(f"{node.func.id}() takes no keyword arguments", node.keywords[0])
        if len(node.args) != 1:
            raise self._error(
                f"{node.func.id}() takes exactly one argument, got {len(node.args)}", node
            )
        self.check(node.args[0])

    def build(self, node: ast.expr) -> Value:
        """Build the checked ``node`` from Values (see ``check`` for what can appear)."""
        out = self._build(node)
        return out if isinstance(out, Value) else Value(out)

    def _build(self, node: ast.expr) -> Value | float:
        """A number for a number in the text (a constant: ``a**2`` uses the engine's
        constant-exponent rule, and no gradient is pushed into a literal), else a Value."""
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return self.variables[node.id]
        if isinstance(node, ast.UnaryOp):
            operand = self._build(node.operand)
            if not isinstance(operand, Value):  # -2 is the number -2, not neg(2)
                return -operand
            out = -operand
        elif isinstance(node, ast.BinOp):
            chain = _left_chain(node)
            result = self._build(chain[0].left)
            for link in chain:
                right = self._build(link.right)
                if not isinstance(result, Value) and not isinstance(right, Value):
                    result = Value(result)  # two numbers: still a node, so its text shows
                result = _BINARY[type(link.op)](result, right)  # type: ignore[arg-type]
                result.label = self._label(link)
            return result
        else:
            assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            argument = self._build(node.args[0])
            out = FUNCTIONS[node.func.id](
                argument if isinstance(argument, Value) else Value(argument)
            )
        out.label = self._label(node)
        return out
