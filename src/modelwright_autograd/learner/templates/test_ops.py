"""Unit tests, a couple per operation: each checks one op's value and its gradients
against numbers worked out by hand. Name each test after its op (test_mul_..., test_tanh_...):
`modelwright-autograd check` looks for one per operation your engine defines."""

import math  # noqa: F401 (the tests you write use math.tanh and math.exp)

from mygrad.engine import Value


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


# TODO: test_mul_...: a * b's value, d/da = b and d/db = a; a * a (a used twice).
# TODO: test_pow_...: a ** 3 at a = 2 (12.0); a ** -1 at a = 4.
# TODO: test_neg_...: -a's gradient is -1.
# TODO: test_sub_...: a - b's gradients are 1 and -1.
# TODO: test_div_...: a / b's gradients 1/b and -a/b**2.
# TODO: test_tanh_...: at 0 the gradient is 1; at 1 it is 1 - tanh(1)**2 (use math.tanh).
# TODO: test_relu_...: the gradient passes where a > 0, and is 0 where a < 0.
# TODO: test_exp_...: the gradient is exp(a) (math.exp).
# TODO: test_log_...: the gradient is 1/a.
