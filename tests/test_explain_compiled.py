"""``explain --compiled`` prints the expression's graph as the compiler writes it: code
that runs on its own and gives torch's gradients; refused beside --json and --torch."""

from __future__ import annotations

import math

import pytest
import torch

from modelwright_autograd import cli
from modelwright_autograd.scalar.compiler import NAMESPACE


def test_the_printed_code_runs_and_gives_torchs_gradients(capsys):
    expression, values = "tanh(a*b + c) * a + exp(b) / c", {"a": 2.0, "b": -0.5, "c": 0.3}
    assert (
        cli.main(["explain", expression, *(f"{k}={v}" for k, v in values.items()), "--compiled"])
        == 0
    )
    source = capsys.readouterr().out
    assert source.startswith(f"# {expression} written out as Python")
    namespace = dict(NAMESPACE)
    exec(source, namespace)
    value, grads = namespace["run"](list(values.values()))
    a, b, c = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values.values())
    out = torch.tanh(a * b + c) * a + torch.exp(b) / c
    out.backward()
    assert math.isclose(value, out.item(), rel_tol=1e-12)
    for g, t in zip(grads, (a, b, c)):
        assert math.isclose(g, t.grad.item(), rel_tol=1e-12)


@pytest.mark.parametrize("other", ["--json", "--torch"])
def test_compiled_is_refused_beside_json_and_torch(capsys, other):
    assert cli.main(["explain", "a*b", "a=1", "b=2", "--compiled", other]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--compiled prints code" in err
