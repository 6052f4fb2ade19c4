"""Unit tests, a couple per operation: each checks one op's value and its gradients
against numbers worked out by hand. Name each test after its op (test_mul_..., test_tanh_...):
`modelwright-autograd check` looks for one per operation your engine defines."""

import math

from solved.engine import Value


def test_add_gives_each_input_the_upstream_gradient():
    a, b = Value(2.0), Value(-3.0)
    out = a + b
    out.backward()
    assert out.data == -1.0
    assert (a.grad, b.grad) == (1.0, 1.0)


def test_add_accumulates_when_a_value_is_used_twice():
    a = Value(2.0)
    out = a + a
    out.backward()
    assert a.grad == 2.0


def test_mul_gives_each_input_the_other():
    a, b = Value(2.0), Value(-3.0)
    out = a * b
    out.backward()
    assert out.data == -6.0
    assert (a.grad, b.grad) == (-3.0, 2.0)


def test_mul_of_a_value_with_itself():
    a = Value(3.0)
    (a * a).backward()
    assert a.grad == 6.0


def test_pow_lowers_the_exponent():
    a = Value(2.0)
    (a**3).backward()
    assert a.grad == 12.0


def test_pow_negative_exponent():
    a = Value(4.0)
    (a**-1).backward()
    assert a.grad == -1 / 16


def test_neg_flips_the_gradient():
    a = Value(5.0)
    (-a).backward()
    assert a.grad == -1.0


def test_sub_gradients_are_one_and_minus_one():
    a, b = Value(5.0), Value(2.0)
    out = a - b
    out.backward()
    assert out.data == 3.0
    assert (a.grad, b.grad) == (1.0, -1.0)


def test_div_gradients():
    a, b = Value(3.0), Value(2.0)
    out = a / b
    out.backward()
    assert out.data == 1.5
    assert math.isclose(a.grad, 0.5) and math.isclose(b.grad, -0.75)


def test_tanh_at_zero_and_one():
    a, b = Value(0.0), Value(1.0)
    a.tanh().backward()
    b.tanh().backward()
    assert a.grad == 1.0
    assert math.isclose(b.grad, 1 - math.tanh(1.0) ** 2)


def test_relu_passes_the_gradient_only_where_positive():
    a, b = Value(2.0), Value(-2.0)
    a.relu().backward()
    b.relu().backward()
    assert (a.grad, b.grad) == (1.0, 0.0)


def test_exp_gradient_is_its_output():
    a = Value(1.5)
    a.exp().backward()
    assert math.isclose(a.grad, math.exp(1.5))


def test_log_gradient_is_one_over_the_input():
    a = Value(4.0)
    a.log().backward()
    assert math.isclose(a.grad, 0.25)
