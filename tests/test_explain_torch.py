"""``explain --torch``: the same expression built in PyTorch, torch's grad_fn beside each of
our nodes (the names docs/pytorch.md maps our rules to), and both passes' gradients."""

from __future__ import annotations

import subprocess
import sys

import torch

from modelwright_autograd import Value
from modelwright_autograd.cli import main
from modelwright_autograd.explain import explain
from modelwright_autograd.explain.torch_view import torch_view


def test_each_node_gets_the_grad_fn_torch_records(capsys):
    assert (
        main(["explain", "tanh(a*b + c) * a + a**2 - 1/a", "a=2", "b=-0.5", "c=0.3", "--torch"])
        == 0
    )
    out = capsys.readouterr().out
    section = out[out.index("PyTorch") :].splitlines()
    rows = [line.split() for line in section[2:-1]]
    assert [(r[-2], r[-1]) for r in rows] == [
        ("-", "SubBackward0"),
        ("/", "MulBackward0"),  # torch's 1 / a is a reciprocal times 1
        ("+", "AddBackward0"),
        ("**", "PowBackward0"),  # a constant exponent: torch's pow with a number
        ("*", "MulBackward0"),
        ("tanh", "TanhBackward0"),
        ("+", "AddBackward0"),
        ("*", "MulBackward0"),
    ]
    # torch's own gradients of the same function, printed beside ours
    a, b, c = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (2, -0.5, 0.3))
    ((a * b + c).tanh() * a + a**2 - 1 / a).backward()
    expected = (
        f"gradients: a {a.grad.item():.6g} (torch {a.grad.item():.6g}), b {b.grad.item():.6g}"
    )
    assert section[-1].startswith(expected) and "DIFFERS" not in section[-1]


def test_a_fused_neuron_and_a_value_exponent():
    w, x, b = Value(0.5, label="w"), Value(-2.0, label="x"), Value(3.0, label="b")
    p = Value(1.5, label="p")
    out = Value.dot([w], [x], b, relu=True) ** p
    text = torch_view(explain(out))
    lines = text.splitlines()
    assert lines[2].split()[-1] == "PowBackward1"  # a Value exponent: torch's pow of two tensors
    assert lines[3].split()[-1] == "ReluBackward0"  # torch's neuron is a relu over its sum
    # by hand: s = w*x + b = 2, out = s**p, dout/dw = x * p * s**(p - 1) = -3 sqrt(2)
    assert "DIFFERS" not in text and f"w {-3 * 2**0.5:.6g} (torch {-3 * 2**0.5:.6g})" in text


def test_numbers_stay_numbers_as_in_torch_code(capsys):
    """A constant is replayed as a Python number, so torch records what `2 ** a` and `2 - a`
    record in torch code (its own pow.Scalar and rsub nodes), not a tensor's pow and sub."""
    assert main(["explain", "2**a - (2 - a) * 3 + 2*3", "a=1.5", "--torch"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out[out.index("PyTorch") :].splitlines()[2:-1]]
    assert [(r[-2], r[-1]) for r in rows] == [
        ("+", "AddBackward0"),
        ("*", "-"),  # 2*3: numbers alone, no node in torch
        ("-", "SubBackward0"),
        ("*", "MulBackward0"),
        ("-", "RsubBackward1"),
        ("**", "PowBackward2"),
    ]


def test_a_wrong_gradient_is_flagged():
    a = Value(3.0, label="a")
    out = a * a
    trace = explain(out)
    trace.grads["a"] = 5.0  # as if our pass had got it wrong
    assert "a 5 (torch 6) DIFFERS" in torch_view(trace)


def test_json_and_torch_together_is_a_usage_error(capsys):
    assert main(["explain", "a*b", "a=1", "b=2", "--torch", "--json"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_without_torch_it_says_how_to_install_it(tmp_path):
    hide_torch = (
        "import sys; sys.modules['torch'] = None; from modelwright_autograd import cli; "
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide_torch, "explain", "a*b", "a=1", "b=2", "--torch"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "pip install torch" in result.stderr
