"""docs/pytorch.md maps every backward rule of both engines to the node PyTorch records for
the same op (its ``grad_fn``) and to the formula of torch's derivatives table
(tools/autograd/derivatives.yaml, shipped inside the torch wheel as torchgen's packaged
copy). Here each op is built in torch: the node names in the doc must be the ones torch
reports, every formula quoted must be in that table's entry, and every rule of the engines
must have its row."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
import torchgen

import modelwright_autograd
from modelwright_autograd import Tensor

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "pytorch.md"
YAML = Path(torchgen.__file__).parent / "packaged" / "autograd" / "derivatives.yaml"


def _t(*shape: int, lo: float = 0.5) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape) + 7)
    return (torch.rand(shape, generator=g, dtype=torch.float64) + lo).requires_grad_()


def _a() -> torch.Tensor:
    return _t(2, 3)


def _b() -> torch.Tensor:
    return _t(3, 2).T.contiguous().detach().requires_grad_()


# Each rule of each engine: the same op built in torch (float64).
SCALAR: dict[str, Callable[[], torch.Tensor]] = {
    "_add_backward": lambda: _t() + _t(),
    "_sub_backward": lambda: _t() - _t(),
    "_mul_backward": lambda: _t() * _t(),
    "_div_backward": lambda: _t() / _t(),
    "_neg_backward": lambda: -_t(),
    "powc_backward": lambda: _t() ** 3.0,
    "_pow_backward": lambda: _t() ** _t(),
    "_exp_backward": lambda: _t().exp(),
    "_log_backward": lambda: _t().log(),
    "_tanh_backward": lambda: _t().tanh(),
    "_relu_backward": lambda: _t().relu(),
    "_sigmoid_backward": lambda: _t().sigmoid(),
    "_sum_backward": lambda: torch.stack([_t(), _t(), _t()]).sum(),
    "_dot_backward": lambda: TF.linear(_t(3), _t(1, 3), _t(1)),
    "_dot_relu_backward": lambda: TF.linear(_t(3), _t(1, 3), _t(1)).relu(),
}

TENSOR: dict[str, Callable[[], torch.Tensor]] = {
    "_add_backward": lambda: _a() + _b(),
    "_sub_backward": lambda: _a() - _b(),
    "_mul_backward": lambda: _a() * _b(),
    "_div_backward": lambda: _a() / _b(),
    "_remainder_backward": lambda: _a() % _b(),
    "_neg_backward": lambda: -_a(),
    "_pow_backward": lambda: _a() ** 2.5,
    "_pow_tensor_backward": lambda: _a() ** _b(),
    "_exp_backward": lambda: _a().exp(),
    "_log_backward": lambda: _a().log(),
    "_tanh_backward": lambda: _a().tanh(),
    "_relu_backward": lambda: _a().relu(),
    "_sigmoid_backward": lambda: _a().sigmoid(),
    "_abs_backward": lambda: _a().abs(),
    "_sqrt_backward": lambda: _a().sqrt(),
    "_sign_backward": lambda: _a().sign(),
    "_sin_backward": lambda: _a().sin(),
    "_cos_backward": lambda: _a().cos(),
    "_log1p_backward": lambda: _a().log1p(),
    "_expm1_backward": lambda: _a().expm1(),
    "_erf_backward": lambda: _a().erf(),
    "_clamp_backward": lambda: _a().clamp(0.7, 1.2),
    "_maximum_backward": lambda: torch.maximum(_a(), _b()),
    "_minimum_backward": lambda: torch.minimum(_a(), _b()),
    "_where_backward": lambda: torch.where(_a() > 1.0, _a(), _b()),
    "_leaky_relu_backward": lambda: TF.leaky_relu(_a()),
    "_softplus_backward": lambda: TF.softplus(_a()),
    "_gelu_backward": lambda: TF.gelu(_a()),
    "_sum_backward": lambda: _a().sum(1),
    "_mean_backward": lambda: _a().mean(1),
    "_max_backward": lambda: _a().amax(1),
    "_min_backward": lambda: _a().amin(1),
    "_prod_backward": lambda: _a().prod(1),
    "_var_backward": lambda: _a().var(1),
    "_std_backward": lambda: _a().std(1),
    "_logsumexp_backward": lambda: _a().logsumexp(1),
    "_norm_backward": lambda: _a().norm(),
    "_softmax_backward": lambda: _a().softmax(1),
    "_log_softmax_backward": lambda: _a().log_softmax(1),
    "_reshape_backward": lambda: _a().reshape(3, 2),
    "_transpose_backward": lambda: _a().transpose(0, 1),
    "_permute_backward": lambda: _a().permute(1, 0),
    "expand_backward": lambda: _t(1, 3).expand(2, 3),
    "_basic_index_backward": lambda: _a().flip(1),
    "getitem_backward": lambda: _a()[torch.tensor([1, 0, 1])],
    "_scatter_backward": lambda: torch.zeros(2, 3, dtype=torch.float64).index_put(
        (torch.tensor([1, 0]),), _a(), accumulate=True
    ),
    "_repeat_backward": lambda: _a().repeat(2, 1),
    "_cat_backward": lambda: torch.cat([_a(), _b()], 1),
    "_stack_backward": lambda: torch.stack([_a(), _b()], 1),
    "_pad_backward": lambda: TF.pad(_a(), (1, 1)),
    "_triangle_backward": lambda: _a().tril(1),
    "_masked_fill_backward": lambda: _a().masked_fill(torch.tensor([True, False, True]), 0.5),
    "_cumsum_backward": lambda: _a().cumsum(1),
    "_cast_backward": lambda: _a().to(torch.float32),
    "_matmul_backward": lambda: _a() @ _t(3, 4),
    "_linear_backward": lambda: TF.linear(_a(), _t(4, 3), _t(4)),
    "_linear_relu_backward": lambda: TF.linear(_a(), _t(4, 3), _t(4)).relu(),
    "_outer_backward": lambda: torch.outer(_t(2), _t(3)),
    "_einsum_backward": lambda: torch.einsum("ij,jk->ik", _a(), _t(3, 4)),
    "_bce_with_logits_backward": lambda: TF.binary_cross_entropy_with_logits(
        _a(), torch.ones(2, 3, dtype=torch.float64)
    ),
    "_cross_entropy_backward": lambda: TF.cross_entropy(_a(), torch.tensor([0, 2])),
    "_svm_loss_backward": lambda: (
        (1 - _a()[:, 0] * torch.tensor([1.0, -1.0], dtype=torch.float64)).relu().mean()
    ),
    "_dropout_backward": lambda: TF.dropout(_a(), 0.5, True),
    "_batch_norm_backward": lambda: TF.batch_norm(_t(4, 3), None, None, _t(3), _t(3), True),
    "_layer_norm_backward": lambda: TF.layer_norm(_t(4, 3), (3,), _t(3), _t(3)),
    "_conv2d_backward": lambda: TF.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), _t(3)),
    "_unfold_backward": lambda: TF.unfold(_t(1, 2, 4, 4), 2),
    "_fold_backward": lambda: TF.fold(_t(1, 8, 9), (4, 4), 2),
    "_scaled_dot_product_attention_backward": lambda: TF.scaled_dot_product_attention(
        _t(1, 2, 3, 4), _t(1, 2, 3, 4), _t(1, 2, 3, 4), is_causal=True
    ),
}

ENGINES = {"scalar": SCALAR, "tensor": TENSOR}


# ---------------------------------------------------------------------- reading both sides
def node_chain(out: torch.Tensor, depth: int) -> list[str]:
    """The names of out's grad_fn and, below it, the first non-leaf input's, depth deep."""
    names, fn = [], out.grad_fn
    while fn is not None and len(names) < depth:
        names.append(type(fn).__name__)
        below = [f for f, _ in fn.next_functions if f is not None]
        below = [f for f in below if type(f).__name__ != "AccumulateGrad"]
        fn = below[0] if below else None
    return names


def derivatives_table() -> dict[str, list[str]]:
    """derivatives.yaml as {entry name such as "mul.Tensor": the lines of its formulas}."""
    entries: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in YAML.read_text("utf-8").splitlines():
        m = re.match(r"- name: ([\w.]+)\(", line)
        if m:
            lines = entries.setdefault(m.group(1), [])
        elif line.startswith("  "):
            lines.append(line.strip())
    return entries


def rules_of_engines() -> dict[str, set[str]]:
    """The backward rules each engine defines: scalar/engine.py's, and every module of the
    tensor family (tensor/: the engine, conv, nn_ops, functional)."""
    package = modelwright_autograd.__name__
    names = {m.name for m in pkgutil.walk_packages(modelwright_autograd.__path__, package + ".")}
    tensor_modules = [n for n in names if re.match(rf"{package}\.tensor(\.|$)", n)]

    def rules(module_names: list[str]) -> set[str]:
        found = set()
        for name in module_names:
            module = importlib.import_module(name)
            found |= {
                n
                for n, obj in vars(module).items()
                if n.endswith("_backward")
                and callable(obj)
                and getattr(obj, "__module__", None) == name
            }
        return found

    return {"scalar": rules([f"{package}.scalar.engine"]), "tensor": rules(tensor_modules)}


def doc_rows() -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """{engine: {rule: (torch's node names, quoted formulas)}} from docs/pytorch.md's two
    tables (a row: | op | our rule | torch's grad_fn | derivatives.yaml | what differs |);
    a tensor row whose rule is marked "(both engines)" is the scalar engine's row too."""
    rows: dict[str, dict[str, tuple[list[str], list[str]]]] = {"scalar": {}, "tensor": {}}
    engine = None
    for line in DOC.read_text("utf-8").splitlines():
        if line.startswith("## "):
            engine = (
                "scalar"
                if "scalar" in line.lower()
                else "tensor"
                if "tensor" in line.lower()
                else None
            )
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if engine is None or len(cells) != 5 or not cells[1].startswith("`"):
            continue  # not a row of the two tables (their header, rule, prose)
        rule = re.findall(r"`(\w+_backward)`", cells[1])
        assert len(rule) == 1, f"a row without one rule name: {line}"
        nodes = re.findall(r"`(\w+Backward\d+)`", cells[2])
        formulas = re.findall(r"`([^`]+)`", cells[3])
        rows[engine][rule[0]] = (nodes, formulas)
        if engine == "tensor" and "(both engines)" in cells[1]:  # Value's rule of that name
            rows["scalar"][rule[0]] = (nodes, formulas)
    return rows


# ---------------------------------------------------------------------- the checks
def test_every_rule_of_both_engines_has_a_row_and_a_torch_op():
    rows, rules = doc_rows(), rules_of_engines()
    for engine in ENGINES:
        assert set(rows[engine]) == rules[engine], engine
        assert set(ENGINES[engine]) == rules[engine], engine


@pytest.mark.parametrize(
    ("engine", "rule"), [(e, r) for e, table in ENGINES.items() for r in table]
)
def test_the_grad_fn_names_are_the_ones_torch_reports(engine, rule):
    nodes, _ = doc_rows()[engine][rule]
    assert nodes, f"{rule}: no grad_fn named"
    assert node_chain(ENGINES[engine][rule](), len(nodes)) == nodes


@pytest.mark.parametrize(
    ("engine", "rule"), [(e, r) for e, table in ENGINES.items() for r in table]
)
def test_the_formulas_quoted_are_in_torchs_derivatives_table(engine, rule):
    nodes, quoted = doc_rows()[engine][rule]
    table = derivatives_table()
    entry, *formulas = quoted
    assert entry in table, f"{rule}: derivatives.yaml has no entry {entry}"
    assert formulas, f"{rule}: no formula quoted from {entry}"
    for formula in formulas:
        assert any(formula in line for line in table[entry]), f"{rule}: {formula!r} not in {entry}"
    # the entry is the one behind a node the row names: torch names a node after its
    # entry, numbering the entries of one name in the table's order (pow.Tensor_Scalar is
    # PowBackward0, pow.Tensor_Tensor PowBackward1)
    named = [n.lower() for n in nodes]  # torch writes Log1PBackward0 for log1p
    assert node_of_entry(entry, table).lower() in named, (
        f"{rule}: {entry} is behind none of {nodes}"
    )


def node_of_entry(entry: str, table: dict[str, list[str]]) -> str:
    """The grad_fn class torch generates for a derivatives.yaml entry."""

    def base(name: str) -> str:
        stem = name.split(".")[0].strip("_").removesuffix("_forward")
        return "".join(part[:1].upper() + part[1:] for part in stem.split("_"))

    same = [name for name in table if base(name).lower() == base(entry).lower()]
    return f"{base(entry)}Backward{same.index(entry)}"


def test_node_names_follow_the_tables_order():
    table = derivatives_table()
    assert node_of_entry("pow.Tensor_Scalar", table) == "PowBackward0"
    assert node_of_entry("pow.Tensor_Tensor", table) == "PowBackward1"
    assert node_of_entry("mul.Tensor", table) == "MulBackward0"


def test_the_doc_parser_reads_a_row():
    assert re.findall(r"`(\w+Backward\d+)`", "`ReluBackward0` ← `AddmmBackward0`") == [
        "ReluBackward0",
        "AddmmBackward0",
    ]


def test_what_the_page_says_of_max_and_min_of_everything_is_true():
    """a.max() and a.min() of a whole tensor are other nodes than amax/amin in torch: the
    page names them and their formulas, and says the gradient is the same (ties share it)."""
    said = re.findall(
        r"`a\.(max|min)\(\)` of everything records `(\w+)` \(`([\w.]+)`: `([^`]+)`\), the same "
        r"gradient",
        DOC.read_text("utf-8"),
    )
    assert [s[0] for s in said] == ["max", "min"]
    table = derivatives_table()
    data = np.array([[1.0, 3.0, 3.0], [-2.0, 3.0, 0.5]])
    for name, node, entry, formula in said:
        theirs = torch.tensor(data, requires_grad=True)
        out = getattr(theirs, name)()
        assert type(out.grad_fn).__name__ == node
        assert any(formula in line for line in table[entry])
        out.backward()
        ours = Tensor(data, requires_grad=True)
        getattr(ours, name)().backward()
        np.testing.assert_array_equal(ours.grad, theirs.grad.numpy())
