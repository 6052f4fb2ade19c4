"""Unit tests, a couple per operation: each checks one op's value and its gradient
against arrays worked out by hand. Name each test after its op (test_matmul_...,
test_log_softmax_...): `modelwright-autograd check` looks for one per operation your
engine defines."""

import numpy as np
from mygrad.engine import Tensor


def test_add_sums_a_broadcast_row_s_gradient_over_the_rows():
    a, b = Tensor(np.ones((2, 3))), Tensor(np.array([1.0, 2.0, 3.0]))
    out = a + b
    out.sum().backward()
    assert np.array_equal(out.data, [[2.0, 3.0, 4.0], [2.0, 3.0, 4.0]])
    assert np.array_equal(a.grad, np.ones((2, 3)))
    assert np.array_equal(b.grad, [2.0, 2.0, 2.0])  # used by both rows


# TODO: test_sub_...: a - b's gradients are 1 and -1, each in its input's shape.
# TODO: test_mul_...: a * b's gradients b and a; a (2, 1) column times a (2, 3) matrix.
# TODO: test_div_...: a / b's gradients 1/b and -a/b**2.
# TODO: test_matmul_...: (2, 3) @ (3, 4): the gradients' shapes and values.
# TODO: test_transpose_...: the gradient of a.transpose(1, 0, 2) has a's shape.
# TODO: test_reshape_...: the gradient comes back in the input's shape.
# TODO: test_sum_...: sum over axis 1 of a (2, 3): every element's gradient is 1.
# TODO: test_mean_...: mean over axis 0 of a (2, 3): every element's gradient is 1/2.
# TODO: test_exp_..., test_log_..., test_tanh_..., test_relu_...: elementwise gradients.
# TODO: test_log_softmax_...: each row of out.data exponentiates and sums to 1.
# TODO: test_cross_entropy_...: the gradient is (softmax - one-hot) / N.
