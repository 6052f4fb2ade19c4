"""Hand-computed checks of every scalar op: forward value and local derivatives.

Every expected number is derived by hand in the comment next to it (no number here was
captured from the engine's own output). Exact binary fractions are compared exactly; where
the hand result involves e, ln 2 or a square root it is written as that formula and
compared to 1e-15 relative.
"""

import inspect
import math

import pytest

import modelwright_autograd
from modelwright_autograd import Value, sum_values
from modelwright_autograd.graph import topological_order
from modelwright_autograd.scalar import engine


def _grads_of(fn, inputs):
    """Build fn on fresh leaves, run backward, return (output data, [leaf grads])."""
    leaves = [Value(x) for x in inputs]
    out = fn(*leaves)
    out.backward()
    return out.data, [leaf.grad for leaf in leaves]


LN2 = math.log(2.0)

# (id, function of the leaves, leaf values, expected data, expected leaf gradients)
CASES = [
    # a + b: d/da = 1, d/db = 1
    ("add", lambda a, b: a + b, [2.0, -3.0], -1.0, [1.0, 1.0]),
    ("add-fractions", lambda a, b: a + b, [0.5, 0.25], 0.75, [1.0, 1.0]),
    # a * b: d/da = b, d/db = a
    ("mul", lambda a, b: a * b, [2.0, -3.0], -6.0, [-3.0, 2.0]),
    ("mul-fractions", lambda a, b: a * b, [0.5, 4.0], 2.0, [4.0, 0.5]),
    # a ** n (int n): d/da = n * a**(n-1)
    ("pow-int-2", lambda a: a**2, [3.0], 9.0, [6.0]),  # 3**2 = 9; 2*3 = 6
    ("pow-int-3-neg-base", lambda a: a**3, [-2.0], -8.0, [12.0]),  # 3*(-2)**2 = 12
    ("pow-int-minus-1", lambda a: a**-1, [2.0], 0.5, [-0.25]),  # -1 * 2**-2 = -0.25
    # a ** p (float p): d/da = p * a**(p-1)
    ("pow-float-half", lambda a: a**0.5, [4.0], 2.0, [0.25]),  # 0.5 * 4**-0.5 = 0.25
    ("pow-float-1.5", lambda a: a**1.5, [0.25], 0.125, [0.75]),  # 1.5 * 0.25**0.5 = 0.75
    ("pow-float-neg-half", lambda a: a**-0.5, [4.0], 0.5, [-0.0625]),  # -0.5 * 4**-1.5 = -1/16
    # a ** b (both Values): d/da = b * a**(b-1), d/db = a**b * ln a
    ("pow-value", lambda a, b: a**b, [2.0, 3.0], 8.0, [12.0, 8.0 * LN2]),  # 3*2**2 = 12
    ("pow-value-root", lambda a, b: a**b, [4.0, 0.5], 2.0, [0.25, 2.0 * math.log(4.0)]),
    ("pow-value-base-one", lambda a, b: a**b, [1.0, 5.0], 1.0, [5.0, 0.0]),  # ln 1 = 0
    # number ** v: d/dv = number**v * ln(number)
    ("rpow-2", lambda v: 2**v, [3.0], 8.0, [8.0 * LN2]),
    ("rpow-10", lambda v: 10**v, [2.0], 100.0, [100.0 * math.log(10.0)]),
    ("rpow-1", lambda v: 1**v, [7.0], 1.0, [0.0]),  # 1**v = 1 for every v
    # -a: d/da = -1
    ("neg", lambda a: -a, [3.0], -3.0, [-1.0]),
    ("neg-negative", lambda a: -a, [-0.5], 0.5, [-1.0]),
    # a - b: d/da = 1, d/db = -1
    ("sub", lambda a, b: a - b, [5.0, 3.0], 2.0, [1.0, -1.0]),
    ("sub-self", lambda a: a - a, [7.0], 0.0, [0.0]),  # 1 + (-1) = 0 through both paths
    # a / b: d/da = 1/b, d/db = -a/b**2
    ("div", lambda a, b: a / b, [1.0, 4.0], 0.25, [0.25, -0.0625]),  # -1/16
    ("div-neg", lambda a, b: a / b, [3.0, -2.0], -1.5, [-0.5, -0.75]),  # -3/4
    # number + v, number - v, number * v, number / v (reflected operators)
    ("radd", lambda v: 2 + v, [3.0], 5.0, [1.0]),
    ("radd-float", lambda v: 2.0 + v, [-0.5], 1.5, [1.0]),
    ("rsub", lambda v: 2 - v, [3.0], -1.0, [-1.0]),
    ("rsub-float", lambda v: 0.5 - v, [0.25], 0.25, [-1.0]),
    ("rmul", lambda v: 2 * v, [3.0], 6.0, [2.0]),
    ("rmul-neg", lambda v: -0.5 * v, [4.0], -2.0, [-0.5]),
    ("rtruediv", lambda v: 2 / v, [4.0], 0.5, [-0.125]),  # -2/16
    ("rtruediv-neg", lambda v: 1 / v, [-2.0], -0.5, [-0.25]),  # -1/4
    # exp a: d/da = exp a
    ("exp-0", lambda a: a.exp(), [0.0], 1.0, [1.0]),
    ("exp-1", lambda a: a.exp(), [1.0], math.e, [math.e]),
    ("exp-ln2", lambda a: a.exp(), [LN2], 2.0, [2.0]),
    # ln a: d/da = 1/a
    ("log-1", lambda a: a.log(), [1.0], 0.0, [1.0]),
    ("log-4", lambda a: a.log(), [4.0], 2.0 * LN2, [0.25]),
    ("log-half", lambda a: a.log(), [0.5], -LN2, [2.0]),
    # tanh a: d/da = 1 - tanh(a)**2; tanh(ln 2) = (2 - 1/2)/(2 + 1/2) = 0.6, 1 - 0.36 = 0.64
    ("tanh-0", lambda a: a.tanh(), [0.0], 0.0, [1.0]),
    ("tanh-ln2", lambda a: a.tanh(), [LN2], 0.6, [0.64]),
    ("tanh-minus-ln2", lambda a: a.tanh(), [-LN2], -0.6, [0.64]),
    # relu a: a and 1 above 0, else 0 and 0 (0 at exactly 0)
    ("relu-pos", lambda a: a.relu(), [3.0], 3.0, [1.0]),
    ("relu-neg", lambda a: a.relu(), [-2.0], 0.0, [0.0]),
    ("relu-zero", lambda a: a.relu(), [0.0], 0.0, [0.0]),
    # sigmoid a: d/da = s(1 - s); s(0) = 1/2; s(ln 3) = 1/(1 + 1/3) = 3/4, 3/4 * 1/4 = 3/16
    ("sigmoid-0", lambda a: a.sigmoid(), [0.0], 0.5, [0.25]),
    ("sigmoid-ln3", lambda a: a.sigmoid(), [math.log(3.0)], 0.75, [0.1875]),
    ("sigmoid-minus-ln3", lambda a: a.sigmoid(), [-math.log(3.0)], 0.25, [0.1875]),
    # sum_values: d/dxi = 1 for each occurrence
    ("sum", lambda a, b, c: sum_values([a, b, c]), [1.0, 2.0, 3.0], 6.0, [1.0, 1.0, 1.0]),
    # sum([a, a, b]) = 2a + b = 3 - 1 = 2; a appears twice so d/da = 2
    ("sum-repeated", lambda a, b: sum_values([a, a, b]), [1.5, -1.0], 2.0, [2.0, 1.0]),
    ("sum-with-number", lambda a: sum_values([a, 2.0]), [0.5], 2.5, [1.0]),
    # Value.dot(w, x, b) = b + sum wi*xi: d/dwi = xi, d/dxi = wi, d/db = 1
    # w = (2, -1), x = (3, 4), b = 0.5: 0.5 + 6 - 4 = 2.5
    (
        "dot",
        lambda w1, w2, x1, x2, b: Value.dot([w1, w2], [x1, x2], b),
        [2.0, -1.0, 3.0, 4.0, 0.5],
        2.5,
        [3.0, 4.0, 2.0, -1.0, 1.0],
    ),
    # dot([a], [a]) = a*a = 9 at a = 3; d/da = a + a = 6 (both slots)
    ("dot-shared", lambda a: Value.dot([a], [a]), [3.0], 9.0, [6.0]),
    # numbers as inputs, default bias 0: 2*1 + 3*2 = 8
    ("dot-numbers", lambda w1, w2: Value.dot([w1, w2], [1.0, 2.0]), [2.0, 3.0], 8.0, [1.0, 2.0]),
]


@pytest.mark.parametrize(
    ("fn", "inputs", "data", "grads"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_op_by_hand(fn, inputs, data, grads):
    got_data, got_grads = _grads_of(fn, inputs)
    assert got_data == pytest.approx(data, rel=1e-15, abs=1e-300)
    assert got_grads == pytest.approx(grads, rel=1e-15, abs=1e-300)


def _engine_ops():
    """Every operation Value defines (its operators and node-building methods) and the
    package's node-building functions from engine.py (``sum_values``), read from the class and the
    module, so a new op without hand cases fails the test below."""
    # comparisons give plain bools and build no node (engine.py), so they are no ops here
    comparisons = {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__hash__"}
    not_ops = {"__init__", "__repr__", "__getstate__", "backward", "input_grads", *comparisons}
    public = [n for n in vars(Value) if n.startswith("__") or not n.startswith("_")]
    names = [n for n in public if callable(vars(Value)[n]) and n not in not_ops]
    names += [
        n
        for n, f in vars(engine).items()
        if n in modelwright_autograd.__all__
        and inspect.isfunction(f)
        and f.__module__ == engine.__name__
    ]
    renamed = {"truediv": "div", "sum_values": "sum"}
    return [renamed.get(n.strip("_"), n.strip("_")) for n in names]


def test_every_op_has_two_hand_cases():
    """The table above covers each operation at least twice."""
    ops = _engine_ops()
    assert {"add", "mul", "pow", "rpow", "div", "rtruediv", "relu", "sum", "dot"} <= set(ops)
    ids = [c[0] for c in CASES]
    for op in ops:
        n = sum(1 for i in ids if i == op or i.startswith(op + "-"))
        assert n >= 2, f"{op} has {n} hand-computed case(s)"


def test_course_exercise_l_equals_ab_plus_c():
    # L = a*b + c at a=2, b=3, c=4: L = 10; dL/da = b = 3, dL/db = a = 2, dL/dc = 1
    a, b, c = Value(2.0), Value(3.0), Value(4.0)
    L = (a * b) + c
    L.backward()
    assert L.data == 10.0
    assert (a.grad, b.grad, c.grad) == (3.0, 2.0, 1.0)
    assert L.grad == 1.0
    assert repr(L) == "Value(data=10.0, grad=1.0)"
    assert repr(a) == "Value(data=2.0, grad=3.0)"


def test_course_lecture_example():
    # micrograd lecture: e = a*b; d = e + c; L = d*f with a=2, b=-3, c=10, f=-2
    # e = -6, d = 4, L = -8; dL/dd = f = -2, dL/df = d = 4, dL/dc = dL/de = -2,
    # dL/da = -2*b = 6, dL/db = -2*a = -4
    a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
    e = a * b
    d = e + c
    L = d * f
    L.backward()
    assert (e.data, d.data, L.data) == (-6.0, 4.0, -8.0)
    assert (a.grad, b.grad, c.grad, f.grad) == (6.0, -4.0, -2.0, 4.0)
    assert (d.grad, e.grad) == (-2.0, -2.0)


def test_chain_rule_through_neuron_by_hand():
    # The lecture's neuron: o = tanh(x1*w1 + x2*w2 + b) with x1=2, x2=0, w1=-3, w2=1,
    # b = 6.881373587019543 (chosen so n = 0.8813735870195432 = atanh(1/sqrt(2))).
    # o = 1/sqrt(2); do/dn = 1 - o**2 = 0.5; do/dw1 = x1 * 0.5 = 1; do/dx1 = w1 * 0.5 = -1.5;
    # do/dw2 = x2 * 0.5 = 0; do/dx2 = w2 * 0.5 = 0.5
    x1, x2, w1, w2 = Value(2.0), Value(0.0), Value(-3.0), Value(1.0)
    b = Value(6.8813735870195432)
    o = (x1 * w1 + x2 * w2 + b).tanh()
    o.backward()
    assert o.data == pytest.approx(1 / math.sqrt(2), rel=1e-15)
    got = [w1.grad, x1.grad, w2.grad, x2.grad, b.grad]
    assert got == pytest.approx([1.0, -1.5, 0.0, 0.5, 0.5], rel=1e-14)


def _backward_assigning(root):
    """The classic bug: the engine's walk with ``=`` where its one ``+=`` belongs."""
    order = topological_order(root)
    root.grad = 1.0
    for node in reversed(order):
        if node._backward is not None:
            grads = node._backward(node.grad, node.data, *[p.data for p in node._prev])
            for p, g in zip(node._prev, grads):
                p.grad = g


@pytest.mark.parametrize(
    ("build", "wrong", "right"),
    [
        # b = a + a at a = 3: db/da = 1 + 1 = 2; overwriting keeps only the last path: 1
        (lambda a: a + a, 1.0, 2.0),
        # b = a * a at a = 3: db/da = 3 + 3 = 6; overwriting keeps one path: 3
        (lambda a: a * a, 3.0, 6.0),
    ],
    ids=["a+a", "a*a"],
)
def test_accumulation_lesson(build, wrong, right):
    """A value used twice needs += where gradients are accumulated; = loses all but one."""
    a = Value(3.0)
    _backward_assigning(build(a))  # the same walk, assigning
    assert a.grad == wrong

    a = Value(3.0)
    b = build(a)
    b.backward()  # the engine's accumulating walk
    assert a.grad == right


def test_accumulation_lesson_across_nodes():
    # The bug also bites when the reuse spans nodes: L = (a*b) + (a+b) at a=2, b=5.
    # dL/da = b + 1 = 6, dL/db = a + 1 = 3. With "=", a's grad is overwritten by
    # whichever node runs last (the mul, topologically earlier): 5, and b's: 2.
    def build():
        a, b = Value(2.0), Value(5.0)
        p, s = a * b, a + b
        return a, b, p, s, p + s

    a, b, _, _, L = build()
    _backward_assigning(L)
    assert (a.grad, b.grad) == (5.0, 2.0)

    a, b, _, _, L = build()
    L.backward()
    assert (a.grad, b.grad) == (6.0, 3.0)


def test_backward_seed_gradient():
    # backward(2.5) scales every gradient: L = a*b at a=2, b=3 gives (3*2.5, 2*2.5)
    a, b = Value(2.0), Value(3.0)
    (a * b).backward(2.5)
    assert (a.grad, b.grad) == (7.5, 5.0)


def test_backward_on_a_leaf():
    # d a / d a = 1, and a second call accumulates as torch's leaf .grad does: 2
    a = Value(4.0)
    a.backward()
    assert a.grad == 1.0
    a.backward()
    assert a.grad == 2.0


def test_ops_record_their_inputs_and_label():
    a, b = Value(2.0), Value(3.0)
    c = a * b
    assert c._prev == (a, b)
    assert c._op == "*"
    assert (a + b)._op == "+"
    assert a.tanh()._op == "tanh"
    assert a._prev == () and a._op == ""
    assert Value(1.0, label="x").label == "x"
