"""Type promotion as torch's (torch.result_type), across bool, int64, float32 and float64
tensors with dims, 0-d tensors and Python numbers, for + - * / ** comparisons, where,
maximum and minimum: the result's dtype and values against torch with its default dtype
set to float64 (this engine's default float; torch's own default float32 maps to it),
gradients where a float meets an integer, and torch's refusals refused too."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
import torch

from modelwright_autograd import Tensor, maximum, minimum, where
from modelwright_autograd.tensor import make_node, result_type

VALUES = {  # the same numbers in every dtype (no negative ints: int ** -1 is an error)
    "bool": [True, False, True],
    "int64": [2, 0, 3],
    "float32": [1.5, -0.5, 2.0],
    "float64": [0.25, 3.0, -1.5],
}
# an operand: (dtype, shape) of a tensor, shape () for 0-d, or a Python number
OPERANDS = {
    **{f"{d}[3]": (d, (3,)) for d in VALUES},
    **{f"{d}[]": (d, ()) for d in VALUES},
    "int 2": 2,
    "float 0.5": 0.5,
}
OPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": operator.pow,
    "<": operator.lt,
    "==": operator.eq,
    "maximum": "maximum",
    "where": "where",
}
PAIRS = [
    (x, y)
    for x, y in itertools.product(OPERANDS, repeat=2)
    if not (isinstance(OPERANDS[x], (int, float)) and isinstance(OPERANDS[y], (int, float)))
]


@pytest.fixture(autouse=True)
def _torch_default_float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def _operand(name, engine):
    spec = OPERANDS[name]
    if not isinstance(spec, tuple):
        return spec
    dtype, shape = spec
    values = np.array(VALUES[dtype], dtype=dtype)
    values = values[0] if shape == () else values
    if engine == "ours":
        return make_node(np.array(values), (), "", None)
    return torch.tensor(values.tolist(), dtype=getattr(torch, dtype))


def _apply(op, x, y, engine):
    fn = OPS[op]
    if fn == "where":
        cond = np.array([True, False, False])
        if engine == "ours":
            return where(cond, x, y)
        return torch.where(torch.tensor(cond), x, y)
    if fn == "maximum":
        if engine == "ours":
            return maximum(x, y) if isinstance(x, Tensor) else maximum(y, x)
        as_tensor = [v if isinstance(v, torch.Tensor) else torch.tensor(v) for v in (x, y)]
        return torch.maximum(*as_tensor)
    return fn(x, y)


CASES = [
    (op, x, y)
    for op in OPS
    for x, y in PAIRS
    # torch.maximum takes two tensors only
    if op != "maximum" or all(isinstance(OPERANDS[n], tuple) for n in (x, y))
]


@pytest.mark.parametrize("op, x, y", CASES, ids=[f"{x} {op} {y}" for op, x, y in CASES])
def test_binary_ops_promote_as_torch(op, x, y):
    try:
        want = _apply(op, _operand(x, "torch"), _operand(y, "torch"), "torch")
    except RuntimeError:  # bool - bool, int ** negative, pow on bools: refused by torch
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            _apply(op, _operand(x, "ours"), _operand(y, "ours"), "ours")
        return
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        got = _apply(op, _operand(x, "ours"), _operand(y, "ours"), "ours")
    assert isinstance(got, Tensor)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(
        got.data.astype(np.float64), want.double().numpy(), rtol=1e-6, equal_nan=True
    )


@pytest.mark.parametrize("x, y", PAIRS, ids=[f"{x} {y}" for x, y in PAIRS])
def test_result_type_is_torchs(x, y):
    ours = result_type(_operand(x, "ours"), _operand(y, "ours"))
    theirs = torch.result_type(*(_operand(n, "torch") for n in (x, y)))
    assert str(ours) == str(theirs).removeprefix("torch.")


def test_the_issues_example_and_the_float32_cases():
    x = Tensor(np.array([1.0, 3.0]))
    half = (x < 2) * 0.5
    assert half.dtype == np.float64 and half.data.tolist() == [0.5, 0.0]  # was [True, False]
    f = Tensor(np.array([1.0, 3.0]), dtype=np.float32)
    assert (f * 0.5).dtype == np.float32 and (f * 2).dtype == np.float32  # weak numbers
    assert (f * x.sum()).dtype == np.float32  # a 0-d float64 does not upcast float32
    assert (f * (x < 2)).dtype == np.float32 and (f / (x > 0).cumsum(0)).dtype == np.float32
    assert (f * x).dtype == np.float64  # two tensors with dims: the larger float
    with pytest.raises(TypeError, match="subtraction with a bool tensor"):
        _ = 1.0 - (x < 2)  # torch refuses it too; ~ inverts a mask
    assert (~(x < 2)).data.tolist() == [False, True]
    with pytest.raises(TypeError, match="bool and integer tensors"):
        _ = ~x


@pytest.mark.parametrize(
    "make, other",
    [
        (lambda t: t * INTS, lambda t: t * torch.tensor([2, 0, 3])),
        (lambda t: INTS / t, lambda t: torch.tensor([2, 0, 3]) / t),
        (lambda t: t**INTS, lambda t: t ** torch.tensor([2, 0, 3])),
        (
            lambda t: where(INTS > 0, t, 0.5),
            lambda t: torch.where(torch.tensor([2, 0, 3]) > 0, t, 0.5),
        ),
        (lambda t: minimum(t, INTS), lambda t: torch.minimum(t, torch.tensor([2, 0, 3]))),
        (lambda t: t * Tensor(2.0), lambda t: t * torch.tensor(2.0)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_through_mixed_dtypes_as_torch(make, other, dtype):
    x = np.array([1.5, 0.5, 2.0], dtype=dtype)
    ours = Tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    out, ref = make(ours), other(theirs)
    assert str(out.dtype) == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-6)
    out.sum().backward()
    ref.sum().backward()
    assert ours.grad.dtype == x.dtype
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-6)


INTS = make_node(np.array([2, 0, 3]), (), "", None)


UNARY = ["exp", "log", "tanh", "sigmoid", "sqrt", "sin", "cos", "log1p", "expm1", "erf"]


@pytest.mark.parametrize("dtype", ["bool", "int64"])
@pytest.mark.parametrize("op", UNARY)
def test_float_functions_of_bool_and_integer_tensors_give_the_default_float(op, dtype):
    with np.errstate(divide="ignore"):  # log(0) = -inf, as torch's
        ours = getattr(_operand(f"{dtype}[3]", "ours"), op)()
    theirs = getattr(_operand(f"{dtype}[3]", "torch"), op)()
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.") == "float64"
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-15)
