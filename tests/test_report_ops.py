"""Every formula in docs/derivations.md is checked: its ```derivative blocks are parsed and
each op's documented local derivative is compared with central differences of its documented
forward formula, with the engine's backward pass (for two upstream gradients, so the chain
rule is checked too) and with PyTorch float64. Edge points must match the engine and torch exactly.
An op the engine has (see ``engine_rules``) but the page lacks fails, and so does the reverse.

The blocks are repository text, not user input, so evaluating their expressions is fine.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from modelwright_autograd import Value, sum_values
from modelwright_autograd.scalar import engine

DERIVATIONS = Path(__file__).resolve().parents[1] / "docs" / "derivations.md"
_BLOCK = re.compile(r"^```derivative\n(.*?)^```", re.S | re.M)

# The forward formulas are plain Python over floats, with math's functions.
_MATH = {"exp": math.exp, "log": math.log, "tanh": math.tanh, "inf": math.inf, "nan": math.nan}

EPS = 1e-6  # central difference step: truncation error ~EPS**2, rounding ~1e-16/EPS
NUMERIC_TOL = 1e-6  # so the numeric estimate is good to well under 1e-6 (relative)
ENGINE_TOL = 1e-12  # engine vs the documented formula: the same arithmetic up to rounding
TORCH_TOL = 1e-12


def _number(text: str) -> float:
    return float(eval(text, {"__builtins__": {}}, _MATH))


def _point(text: str) -> dict[str, float]:
    """'a=2, b=1/3' -> {'a': 2.0, 'b': 0.333...}."""
    point = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        point[name.strip()] = _number(value.strip())
    return point


def _parse_block(body: str) -> dict:
    spec: dict = {"derivatives": {}, "at": [], "edge": []}
    for line in body.strip().splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key.startswith("d/d"):
            spec["derivatives"][key[3:]] = value
        elif key == "at":
            spec["at"] += [_point(p) for p in value.split("|")]
        elif key == "edge":
            where, _, expected = value.partition("->")
            spec["edge"].append((_point(where), _point(expected)))
        else:
            spec[key] = value
    names = list(spec["at"][0]) if spec["at"] else list(spec["edge"][0][0])
    given = spec.get("inputs")
    spec["inputs"] = [n.strip() for n in given.split(",")] if given else names
    return spec


def _load() -> list[dict]:
    text = DERIVATIONS.read_text("utf-8")
    specs = [_parse_block(m.group(1)) for m in _BLOCK.finditer(text)]
    assert specs, "docs/derivations.md has no ```derivative blocks"
    return specs


SPECS = _load()


def engine_rules() -> set[str]:
    """The engine's list of operations, as the names of its backward rules.

    The one place that knows how engine.py lays out its ops: every check that compares the
    documents' op set with the engine's (here and in test_op_table.py) goes through it. The
    ``rule:`` line of each ```derivative block names one of these.
    """
    return {
        name for name, obj in vars(engine).items() if name.endswith("_backward") and callable(obj)
    }


def test_every_engine_op_is_derived_once():
    documented = [s["rule"] for s in SPECS]
    assert len(documented) == len(set(documented)), f"a rule is documented twice: {documented}"
    missing = engine_rules() - set(documented)
    assert not missing, f"engine ops with no derivation in docs/derivations.md: {sorted(missing)}"
    unknown = set(documented) - engine_rules()
    assert not unknown, f"docs/derivations.md derives rules the engine lacks: {sorted(unknown)}"


def test_the_derivations_name_every_op_the_course_lists():
    ops = " ".join(s["op"] for s in SPECS)
    for op in ("add", "mul", "pow", "neg", "sub", "div", "exp", "log", "tanh", "relu"):
        assert op in ops
    for op in ("sigmoid", "sum", "dot"):
        assert op in ops


class _TorchValue:
    """Stands in for ``Value`` when an engine expression runs on torch tensors."""

    @staticmethod
    def dot(ws, xs, b, relu=False):
        out = b + (torch.stack(list(ws)) * torch.stack(list(xs))).sum()
        return torch.relu(out) if relu else out


def _torch_sum_values(xs):
    """Stands in for ``sum_values`` on torch tensors."""
    return torch.stack(list(xs)).sum()


def _run_engine(spec: dict, point: dict[str, float], upstream: float = 1.0):
    """Build the node from Values, run backward(upstream); return (node, {input: grad})."""
    env = {n: (Value(x) if n in spec["inputs"] else x) for n, x in point.items()}
    out = eval(spec["engine"], {"__builtins__": {}, "Value": Value, "sum_values": sum_values}, env)
    out.backward(upstream)
    return out, {n: env[n].grad for n in spec["inputs"]}


def _run_torch(spec: dict, point: dict[str, float]):
    env = {
        n: torch.tensor(x, dtype=torch.float64, requires_grad=True) if n in spec["inputs"] else x
        for n, x in point.items()
    }
    names = {"Value": _TorchValue, "sum_values": _torch_sum_values}
    out = eval(spec["engine"], {"__builtins__": {}, **names}, env)
    out.backward()
    grads = {}
    for n in spec["inputs"]:
        g = env[n].grad
        grads[n] = 0.0 if g is None else g.item()
    return out.item(), grads


def _forward(spec: dict, point: dict[str, float]) -> float:
    return eval(spec["forward"], {"__builtins__": {"max": max}, **_MATH}, dict(point))


def _documented(spec: dict, name: str, point: dict[str, float]) -> float:
    return eval(spec["derivatives"][name], {"__builtins__": {}, **_MATH}, dict(point))


def _close(got: float, want: float, tol: float) -> bool:
    return math.isclose(got, want, rel_tol=tol, abs_tol=tol)


def _same(got: float, want: float) -> bool:
    """Exact equality, with nan equal to nan."""
    return (math.isnan(got) and math.isnan(want)) or got == want


@pytest.mark.parametrize("spec", SPECS, ids=[s["op"] for s in SPECS])
def test_block_is_complete(spec):
    assert spec["rule"] in engine_rules()
    assert set(spec["derivatives"]) == set(spec["inputs"]), "one d/dx line per input"
    assert len(spec["at"]) >= 2, "check each op at several points"
    for point in spec["at"]:
        out, _ = _run_engine(spec, point)
        assert out._backward.__name__ == spec["rule"], "the engine expression uses this rule"


@pytest.mark.parametrize("spec", SPECS, ids=[s["op"] for s in SPECS])
def test_documented_derivative_matches_central_differences(spec):
    for point in spec["at"]:
        for name in spec["inputs"]:
            plus, minus = dict(point), dict(point)
            plus[name] += EPS
            minus[name] -= EPS
            numeric = (_forward(spec, plus) - _forward(spec, minus)) / (2 * EPS)
            documented = _documented(spec, name, point)
            assert _close(documented, numeric, NUMERIC_TOL), (point, name, documented, numeric)


@pytest.mark.parametrize("spec", SPECS, ids=[s["op"] for s in SPECS])
def test_engine_forward_and_backward_match_the_derivation(spec):
    for point in spec["at"]:
        for upstream in (1.0, -2.5):  # the chain rule: each input gets upstream * local
            out, grads = _run_engine(spec, point, upstream)
            assert _close(out.data, _forward(spec, point), ENGINE_TOL), (point, out.data)
            for name in spec["inputs"]:
                want = upstream * _documented(spec, name, point)
                assert _close(grads[name], want, ENGINE_TOL), (point, upstream, name, grads)


@pytest.mark.parametrize("spec", SPECS, ids=[s["op"] for s in SPECS])
def test_documented_derivative_matches_torch(spec):
    for point in spec["at"]:
        data, grads = _run_torch(spec, point)
        assert _close(data, _forward(spec, point), TORCH_TOL)
        for name in spec["inputs"]:
            assert _close(grads[name], _documented(spec, name, point), TORCH_TOL), (point, name)


EDGES = [(s, where, want) for s in SPECS for where, want in s["edge"]]


@pytest.mark.parametrize(
    ("spec", "where", "want"),
    EDGES,
    ids=[f"{s['op']}@{w}" for s, w, _ in EDGES],
)
def test_edge_conventions_match_engine_and_torch(spec, where, want):
    out, grads = _run_engine(spec, where)
    tdata, tgrads = _run_torch(spec, where)
    assert _same(out.data, want["out"]), ("engine", out.data, want["out"])
    assert _same(tdata, want["out"]), ("torch", tdata, want["out"])
    for name in spec["inputs"]:
        expected = want[f"d/d{name}"]
        assert _same(grads[name], expected), ("engine", name, grads[name], expected)
        assert _same(tgrads[name], expected), ("torch", name, tgrads[name], expected)
