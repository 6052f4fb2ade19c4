"""gradcheck: passes on correct gradients, fails loudly (index and both numbers) on wrong ones."""

import math
import random
import re

import pytest

from modelwright_autograd import GradcheckError, Value, gradcheck, sum_values


@pytest.mark.parametrize(
    ("f", "inputs"),
    [
        (lambda x: x * x * x - 2 * x, [1.3]),
        (lambda x, y: (x * y).tanh() + (x / y).exp(), [0.4, -1.7]),
        (lambda x, y: (x * x + y * y).log() * x.sigmoid(), [0.9, 2.1]),
        (lambda x, y: x**y + 2**x - y**-2, [1.7, 0.6]),
        (
            lambda x, y, z: Value.dot([x, y], [y, z], x) + sum_values([x, z, x * z]),
            [0.5, -1.2, 2.0],
        ),
        (lambda x: (x - 3.0).relu() + (3.0 - x).relu() * x, [1.0]),
        (lambda x: x, [2.0]),
    ],
)
def test_gradcheck_passes_on_correct_gradients(f, inputs):
    assert gradcheck(f, inputs) is True


def _sine_wrong_rule(g, out, x):
    """d sin(x)/dx written wrongly as sin(x) instead of cos(x)."""
    return (math.sin(x) * g,)


def _sine_right_rule(g, out, x):
    return (math.cos(x) * g,)


class WrongSine(Value):
    """A custom op as a subclass of Value, whose backward rule is deliberately wrong."""

    __slots__ = ()

    def __init__(self, x: Value) -> None:
        super().__init__(math.sin(x.data), (x,), "sin", _sine_wrong_rule)


def _numbers_in(message):
    m = re.search(r"input (\d+) .*analytic (\S+) vs numeric (\S+)", message)
    assert m, message
    return int(m.group(1)), float(m.group(2)), float(m.group(3))


def test_gradcheck_catches_a_wrong_rule_in_a_subclass():
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda x: WrongSine(x), [0.5])
    index, analytic, numeric = _numbers_in(str(info.value))
    assert index == 0
    assert analytic == math.sin(0.5)  # what the wrong rule computes
    assert numeric == pytest.approx(math.cos(0.5), abs=1e-8)  # the true slope


def test_gradcheck_names_the_input_whose_gradient_is_wrong():
    # f(x, y) = x * y**2 with the square's rule missing its factor 2:
    # df/dx = y**2 = 2.25 is right; df/dy should be 2xy = -3.6 but comes out xy = -1.8.
    def forgot_the_two(g, out, y):
        return (y * g,)

    def f(x, y):
        return x * Value(y.data**2, (y,), "square", forgot_the_two)

    with pytest.raises(GradcheckError) as info:
        gradcheck(f, [-1.2, 1.5])
    index, analytic, numeric = _numbers_in(str(info.value))
    assert index == 1
    assert analytic == pytest.approx(-1.8, rel=1e-15)
    assert numeric == pytest.approx(-3.6, rel=1e-6)
    assert "x=1.5" in str(info.value)


def test_gradcheck_accepts_the_same_op_with_the_right_rule():
    assert gradcheck(lambda x: Value(math.sin(x.data), (x,), "sin", _sine_right_rule), [0.5])


def test_gradcheck_catches_a_one_percent_error():
    def slightly_off(g, out, x):
        return (1.01 * 3 * x**2 * g,)

    with pytest.raises(GradcheckError):
        gradcheck(lambda x: Value(x.data**3, (x,), "cube", slightly_off), [2.0])


def test_gradcheck_error_is_an_assertion_error():
    assert issubclass(GradcheckError, AssertionError)


def test_gradcheck_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least one input"):
        gradcheck(lambda: Value(1.0), [])
    with pytest.raises(TypeError, match="must return a Value"):
        gradcheck(lambda x: 3.0, [1.0])
    with pytest.raises(TypeError, match="str"):
        gradcheck(lambda x: x, ["1.0"])


# ------------------------------------------------------------------ random expressions

UNARY = [
    lambda a: a.tanh(),
    lambda a: a.sigmoid(),
    lambda a: (a * a + 0.5).log(),
    lambda a: (a * 0.5).exp(),
    lambda a: -a,
    lambda a: a**2,
    lambda a: (a * a + 1.0) ** 0.5,
    lambda a: 2 ** a.tanh(),
    lambda a: 1.5 - a,
]
BINARY = [
    lambda a, b: a + b,
    lambda a, b: a - b,
    lambda a, b: a * b,
    lambda a, b: a / (b * b + 1.0),
    lambda a, b: (a * a + 0.5) ** b.tanh(),
    lambda a, b: sum_values([a, b, a]),
    lambda a, b: Value.dot([a, b], [b, a], 0.5),
]


def _random_expression(rng: random.Random, n_inputs: int):
    """A random function of n_inputs Values: 3-12 ops on randomly chosen earlier nodes."""
    program = []
    for _ in range(rng.randint(3, 12)):
        if rng.random() < 0.5:
            program.append((rng.choice(UNARY), 1, rng.random()))
        else:
            program.append((rng.choice(BINARY), 2, rng.random(), rng.random()))

    def f(*xs):
        nodes = list(xs)
        for op, arity, *picks in program:
            args = [nodes[int(p * len(nodes))] for p in picks[:arity]]
            nodes.append(op(*args))
        return nodes[-1] + sum_values(nodes[len(xs) :]) * 0.1  # every node reaches the output

    return f


@pytest.mark.parametrize("seed", range(40))
def test_gradcheck_passes_on_random_expressions(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 3)
    f = _random_expression(rng, n)
    inputs = [rng.uniform(-1.5, 1.5) for _ in range(n)]
    assert gradcheck(f, inputs)


@pytest.mark.parametrize("seed", range(10))
def test_gradcheck_catches_a_wrong_node_inside_random_expressions(seed):
    # the same random expressions, with a wrong sine wrapped around the output
    rng = random.Random(seed)
    n = rng.randint(1, 3)
    f = _random_expression(rng, n)
    inputs = [rng.uniform(-1.5, 1.5) for _ in range(n)]
    with pytest.raises(GradcheckError, match=r"input \d+ .*analytic .* vs numeric"):
        gradcheck(lambda *xs: WrongSine(f(*xs) + 1.0), inputs)
