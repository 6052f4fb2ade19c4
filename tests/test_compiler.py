"""The scalar compiler (scalar/compiler.py): a graph written out as Python gives the
interpreter's loss and gradients bit for bit (float64, the same operations in the same
order, zero signs and nan included), on every op, on random graphs, on data other than the
traced data, and in training; it matches torch; guards fall back to the interpreter; what
cannot be compiled is refused in one line."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwright_autograd import MLP, Value, compiled, sum_values
from modelwright_autograd.scalar import compiler, losses
from modelwright_autograd.scalar.compiler import CompileError

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-310, 1e308, math.inf, -math.inf, math.nan]


def same(x: float, y: float) -> bool:
    """Bit for bit, as far as floats can tell: equal with the same sign of zero, or both nan."""
    if x != x or y != y:
        return x != x and y != y
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


def interpreted(fn, data: list[float]) -> tuple[float, list[float]]:
    """The interpreter's loss and gradients for fn at data, on fresh leaves."""
    leaves = [Value(d) for d in data]
    loss = fn(*leaves)
    loss.backward()
    return loss.data, [v.grad for v in leaves]


def assert_same(got: tuple[float, list[float]], want: tuple[float, list[float]]) -> None:
    assert same(got[0], want[0]), (got[0], want[0])
    for i, (a, b) in enumerate(zip(got[1], want[1])):
        assert same(a, b), f"grad {i}: compiled {a!r}, interpreter {b!r}"


def compile_at(fn, data: list[float]):
    return compiled(fn, [Value(d) for d in data])


# ------------------------------------------------------------------ every op, specials
UNARY = {
    "neg": lambda a: -a,
    "exp": lambda a: a.exp(),
    "log": lambda a: a.log(),
    "tanh": lambda a: a.tanh(),
    "relu": lambda a: a.relu(),
    "sigmoid": lambda a: a.sigmoid(),
    "pow 2": lambda a: a**2,
    "pow 0.5": lambda a: a**0.5,
    "pow -0.5": lambda a: a**-0.5,
    "pow -1.5": lambda a: a**-1.5,
    "pow 0": lambda a: a**0,
    "const / a": lambda a: 2.0 / a,
}
BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, b: a**b,
    "sum": lambda a, b: sum_values([a, b, a]),
    "dot": lambda a, b: Value.dot([a, b], [b, a], a),
    "dot_relu": lambda a, b: Value.dot([a, b], [b, b], a, relu=True),
}


@pytest.mark.parametrize("op", UNARY)
def test_each_unary_op_at_special_values(op):
    f = UNARY[op]
    for x in SPECIALS:
        fn = lambda a, f=f: f(a) * a  # noqa: E731 (the op's output used again downstream)
        assert_same(compile_at(fn, [x])([x]), interpreted(fn, [x]))


@pytest.mark.parametrize("op", BINARY)
def test_each_binary_op_at_special_values(op):
    f = BINARY[op]
    compiled_once = compile_at(lambda a, b: f(a, b) * b, [0.5, 2.0])
    for x in SPECIALS:
        for y in SPECIALS:
            fn = lambda a, b: f(a, b) * b  # noqa: E731
            assert_same(compile_at(fn, [x, y])([x, y]), interpreted(fn, [x, y]))
            # compiled at other numbers: the relu branches and specials follow the data
            assert_same(compiled_once([x, y]), interpreted(fn, [x, y]))


# ------------------------------------------------------------------ random graphs
_OPS = [*UNARY.values(), *BINARY.values()]


@st.composite
def programs(draw, max_steps: int = 12):
    n_inputs = draw(st.integers(1, 4))
    steps = draw(
        st.lists(
            st.tuples(st.integers(0, len(_OPS) - 1), st.integers(0, 99), st.integers(0, 99)),
            min_size=1,
            max_size=max_steps,
        )
    )
    number = st.one_of(st.floats(-4.0, 4.0), st.sampled_from(SPECIALS), st.floats(allow_nan=True))
    traced = draw(st.lists(number, min_size=n_inputs, max_size=n_inputs))
    other = draw(st.lists(number, min_size=n_inputs, max_size=n_inputs))
    tail = draw(st.integers(1, 3))
    return steps, tail, traced, other


def build(steps, tail):
    """The program as a function of its inputs: each step applies an op to earlier nodes
    chosen by index (so nodes are reused on several paths); the loss sums the last few."""

    def fn(*xs):
        nodes = list(xs)
        for op, i, j in steps:
            f = _OPS[op]
            a, b = nodes[i % len(nodes)], nodes[j % len(nodes)]
            nodes.append(f(a) if f in UNARY.values() else f(a, b))
        return sum_values(nodes[-tail:]) if tail > 1 else nodes[-1]

    return fn


def check_program(program) -> None:
    """Compiled at the traced numbers, run there and at other numbers: the interpreter's."""
    steps, tail, traced, other = program
    fn = build(steps, tail)
    cf = compile_at(fn, traced)
    assert_same(cf(traced), interpreted(fn, traced))
    assert_same(cf(other), interpreted(fn, other))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_graphs_bit_for_bit(program):
    check_program(program)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(1, 12), st.integers(2, 5))
def test_random_graphs_in_small_parts_and_short_lines_bit_for_bit(program, chunk, terms):
    """Parts of a few statements (reused names crossing every boundary) and lines of a few
    terms (an input's gradient added up in many runs): still the interpreter's bits."""
    saved = compiler.CHUNK, compiler.TERMS
    compiler.CHUNK, compiler.TERMS = chunk, terms
    try:
        check_program(program)
    finally:
        compiler.CHUNK, compiler.TERMS = saved


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_steps=40))
def test_random_graphs_bit_for_bit_many(program):
    check_program(program)


# ------------------------------------------------------------------ against torch
def expression(a, b, c):
    """One function for Values and torch tensors alike."""
    h = (a * b + c).tanh() * a + (b * b + 0.5) ** 0.5 - a / (c * c + 1.0)
    return (h.relu() + (a * c).sigmoid() + (b * b + 1.0).log() + (a * 0.3).exp()) * h


def test_matches_torch_to_1e_12():
    rng = random.Random(3)
    for _ in range(20):
        data = [rng.uniform(-2.0, 2.0) for _ in range(3)]
        loss, grads = compile_at(expression, [1.0, 2.0, 3.0])(data)
        ts = [torch.tensor(d, dtype=torch.float64, requires_grad=True) for d in data]
        out = expression(*ts)
        out.backward()
        assert abs(loss - out.item()) <= 1e-12 * max(1.0, abs(out.item()))
        for g, t in zip(grads, ts):
            assert abs(g - t.grad.item()) <= 1e-12 * max(1.0, abs(t.grad.item()))


# ------------------------------------------------------------------ training
def _train(n_points: int, sizes: list[int], steps: int, use_compiled: bool) -> list[float]:
    rng = random.Random(0)
    X = [[rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)] for _ in range(n_points)]
    y = [1.0 if x0 * x1 > 0 else -1.0 for x0, x1 in X]
    model = MLP(2, sizes, seed=1)
    params = model.parameters()

    def loss_fn(*_):
        scores = [model(x) for x in X]
        data = losses.svm_loss(scores, y)
        return data + 1e-4 * Value.dot(params, params)

    cf = compiled(loss_fn, params) if use_compiled else None
    curve = []
    for k in range(steps):
        if cf is not None:
            loss, grads = cf([p.data for p in params])
        else:
            out = loss_fn()
            model.zero_grad()
            out.backward()
            loss, grads = out.data, [p.grad for p in params]
        lr = 1.0 - 0.9 * k / steps
        for p, g in zip(params, grads):
            p.data -= lr * g
        curve.append(loss)
    return curve


def _assert_same_curves(a: list[float], b: list[float]) -> None:
    assert len(a) == len(b)
    for k, (x, y) in enumerate(zip(a, b)):
        assert same(x, y), f"step {k}: compiled {x!r}, interpreter {y!r}"


def test_compiled_training_gives_the_interpreters_losses():
    _assert_same_curves(_train(20, [6, 6, 1], 100, True), _train(20, [6, 6, 1], 100, False))


@pytest.mark.slow
def test_compiled_moons_training_100_steps_bit_for_bit():
    _assert_same_curves(_train(100, [16, 16, 1], 100, True), _train(100, [16, 16, 1], 100, False))


# ------------------------------------------------------------------ guards and refusals
def test_a_comparison_is_a_guard_and_a_failed_guard_runs_the_interpreter(capsys):
    def fn(a, b):
        return a * b if a > b else a + b * b

    cf = compile_at(fn, [3.0, 1.0])
    assert cf.guards == 1
    assert_same(cf([5.0, 2.0]), interpreted(fn, [5.0, 2.0]))
    assert cf.fallbacks == 0
    assert_same(cf([1.0, 2.0]), interpreted(fn, [1.0, 2.0]))  # the other branch
    assert cf.fallbacks == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "guard failed" in err
    assert_same(cf([1.0, 4.0]), interpreted(fn, [1.0, 4.0]))
    assert cf.fallbacks == 2 and capsys.readouterr().err == ""  # the note once


@pytest.mark.parametrize("chunk, terms", [(1, 2), (2, 3), (3, 2), (5, 32), (200_000, 2)])
def test_guards_hold_in_small_parts_and_short_lines(monkeypatch, capsys, chunk, terms):
    """Guards read values of the forward pass that may live in an earlier part, under a
    reused name: each call is the interpreter's, on either side of every comparison."""
    monkeypatch.setattr(compiler, "CHUNK", chunk)
    monkeypatch.setattr(compiler, "TERMS", terms)

    def fn(a, b, c):
        h = a * b + c
        h = h.tanh() * a if h > 0 else h * h + b
        return max(h, c) * a + (b * c).relu()

    cf = compile_at(fn, [0.5, 0.7, 0.1])
    assert cf.guards == 2
    for xs in ([0.5, 0.7, 0.1], [0.4, 0.9, -0.2], [-1.0, 0.7, 0.1], [0.5, -3.0, 2.0]):
        assert_same(cf(xs), interpreted(fn, xs))
    assert cf.fallbacks == 2  # the last two take the other branch


def test_fallback_leaves_the_other_leaves_gradients_as_they_were():
    """A parameter that is not an input gets no gradient from the compiled code, and a call
    that falls back must not add into its grad either."""
    w = Value(-3.0)
    cf = compiled(lambda a: a * w if a > 0 else a * w * w, [Value(1.0)])
    for x in (2.0, -1.0, -2.0):
        cf([x])
    assert cf.fallbacks == 2 and w.grad == 0.0


# ------------------------------------------------------------------ what is not an input
def test_a_parameter_not_among_the_inputs_is_read_on_each_call():
    """The issue's case: w changes after the trace; fn would give 3 * 7 = 21, not 3 * 2."""
    w = Value(2.0)
    cf = compiled(lambda x: x * w, [Value(1.0)])
    w.data = 7.0
    assert cf([3.0]) == (21.0, [7.0])


def test_parameters_updated_between_calls_are_read_on_each_call():
    """An MLP's parameters, not inputs, stepped by SGD between calls: each call is the
    interpreter's at the parameters of then (the inputs are the data point)."""
    model = MLP(2, [4, 3, 1], seed=0)

    def fn(a, b):
        return (model([a, b]) - 1.0) ** 2

    cf = compile_at(fn, [0.5, -1.0])
    for step in range(5):
        for p in model.parameters():
            p.data -= 0.05 * (p.data + 0.1 * step)  # any change will do
        x = [0.3 * step - 0.5, 0.7]
        want = interpreted(fn, x)
        model.zero_grad()
        assert_same(cf(x), want)


def test_a_value_computed_outside_fn_is_read_not_recomputed():
    """fn reads h's .data as it is (nothing recomputes h when w changes); so does the code."""
    w = Value(2.0)
    h = w * 3.0
    cf = compiled(lambda x: x * h + w, [Value(1.0)])
    w.data = 5.0
    assert cf([2.0]) == (2.0 * 6.0 + 5.0, [6.0])
    h.data = -1.0
    assert cf([2.0]) == (2.0 * -1.0 + 5.0, [-1.0])


def test_a_comparison_of_a_parameter_is_a_guard():
    w = Value(1.0)

    def fn(x):
        return x * w if w > 0 else x - w

    cf = compiled(fn, [Value(1.0)])
    assert cf.guards == 1
    w.data = -2.0
    assert cf([3.0]) == (5.0, [1.0]) and cf.fallbacks == 1


@pytest.mark.parametrize("what", ["data", "grad"])
def test_reading_a_parameter_of_the_graph_is_refused(what):
    """Its number is frozen where fn reads it, while the parameter is read on each call."""
    w = Value(2.0)
    with pytest.raises(
        CompileError, match=rf"\.{what} of a value that depends .*Value made outside fn"
    ):
        compiled(lambda x: x * w + getattr(w, what), [Value(1.0)])


def test_a_value_computed_from_a_parameter_under_no_grad_is_refused():
    from modelwright_autograd import no_grad

    w = Value(2.0)

    def fn(x):
        with no_grad():
            s = w * 2.0
        return x * s + w

    with pytest.raises(CompileError, match=r"no_grad\(\) .* or a Value made outside fn"):
        compiled(fn, [Value(1.0)])


def test_a_number_that_changes_between_calls_is_refused():
    """random.random() inside fn: a second call gives another number, which the code would
    have frozen."""
    rng = random.Random(0)
    with pytest.raises(CompileError, match=r"fn computed .* on its first call and .* on a second"):
        compiled(lambda x: x * rng.random(), [Value(1.0)])


def test_a_draw_that_changes_the_graph_is_refused():
    rng = random.Random(1)  # draws 0.134, then 0.847: tanh, then x * x

    def fn(x):
        return x.tanh() if rng.random() < 0.5 else x * x

    with pytest.raises(CompileError, match=r"a second call of fn .* built another graph"):
        compiled(fn, [Value(1.0)])


def test_a_graph_fn_keeps_between_calls_is_fine():
    """fn returns the graph it built on its first call: the second call's is the same."""
    built: list[Value] = []

    def fn(x):
        if not built:
            built.append(x * 2.0 + 1.0)
        return built[0]

    assert compiled(fn, [Value(1.0)])([5.0]) == (11.0, [2.0])


def test_fallback_leaves_the_example_inputs_as_they_were():
    a, b = Value(3.0), Value(1.0)
    a.grad = 7.0
    cf = compiled(lambda a, b: a * b if a > b else a - b, [a, b])
    cf([0.0, 2.0])
    assert (a.data, a.grad, b.data, b.grad) == (3.0, 7.0, 1.0, 0.0)


def test_reading_data_that_depends_on_the_inputs_is_refused():
    with pytest.raises(CompileError, match=r"\.data of a value that depends .*losses\.py:\d+"):
        compile_at(lambda z: losses.binary_cross_entropy_with_logits([z], [1.0]), [0.3])


def test_reading_data_that_depends_on_the_inputs_is_refused_even_off_the_graph():
    """z is not on the loss's graph, but the branch taken depends on it."""

    def fn(x):
        z = x * 2.0
        return x * 3.0 if z.data > 0 else x * 5.0

    with pytest.raises(
        CompileError, match=r"\.data of a value that depends .*test_compiler\.py:\d+"
    ):
        compile_at(fn, [1.0])


def test_reading_a_value_through_repr_is_refused():
    def fn(x):
        return x * 3.0 if repr(x * 2.0).startswith("Value(data=2") else x * 5.0

    with pytest.raises(
        CompileError, match=r"repr of a value that depends .* \(test_compiler\.py:\d+\)"
    ):
        compile_at(fn, [1.0])


@pytest.mark.parametrize(
    "bound, traced, other",
    [
        (Fraction(1, 3), 0.5, 1 / 3),  # 1/3 as a float is below the Fraction
        (2**53 + 1, 2.0**53 + 2, 2.0**53),  # an int no float equals
        (np.float32(0.1), 0.0, 0.1),  # NumPy compares in float32: 0.1 is not below
        (10**400, 1.0, 1e308),  # an int too large for a float
    ],
)
def test_a_guard_compares_with_the_number_as_python_did(bound, traced, other):
    def fn(x):
        return x * 3.0 if x < bound else x * 5.0

    cf = compile_at(fn, [traced])
    assert cf.guards == 1
    for x in (traced, other):
        assert_same(cf([x]), interpreted(fn, [x]))


def test_a_fallback_returns_an_output_that_is_an_input_at_the_new_numbers():
    def fn(x, y):
        return y * 2.0 if x > 0 else y

    cf = compile_at(fn, [1.0, 5.0])
    assert_same(cf([-1.0, 7.0]), interpreted(fn, [-1.0, 7.0]))
    assert cf.fallbacks == 1


def test_a_fallback_returns_what_the_branch_taken_returns():
    def fn(x, y):
        return x * y if x > 0 else [x * y, y]

    cf = compile_at(fn, [1.0, 5.0])
    (loss, extra), grads = cf([-1.0, 7.0])
    assert (loss, extra, grads) == (-7.0, 7.0, [7.0, -1.0])


def test_no_line_adds_more_than_TERMS_numbers():
    cf = compile_at(lambda *xs: sum_values(xs), [float(i) for i in range(100)])
    lines = [line for line in cf.source.splitlines() if " + " in line]
    assert len(lines) > 3 and max(line.count(" + ") + 1 for line in lines) == compiler.TERMS


def test_reading_a_constants_data_is_fine():
    c = Value(2.0)
    cf = compile_at(lambda a: a * c.data, [1.5])
    assert_same(cf([4.0]), (8.0, [2.0]))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: compiled(lambda a: a * a, [Value(1.0)], create_graph=True), "create_graph"),
        (lambda: compiled(lambda a: a, [1.0]), "input 0 is float 1.0, not a Value"),
        (lambda: compiled(lambda a: a, [Value(1.0) * 2]), "input 0 was computed"),
        (lambda: compiled(lambda a: "x", [Value(1.0)]), "must return a Value"),
        (lambda: compiled(lambda a: a, Value(1.0)), "must be a list"),
    ],
)
def test_refusals_are_one_line(call, message):
    with pytest.raises(CompileError, match=message) as err:
        call()
    assert "\n" not in str(err.value)


def test_an_op_made_by_hand_is_refused():
    a = Value(1.0)
    with pytest.raises(CompileError, match="op 'spy' was made by hand"):
        compiled(lambda a: Value(2.0, (a,), "spy", lambda g, out, a: (g,)), [a])


def test_an_op_made_by_hand_with_an_engine_rule_is_refused():
    """Its data (5.0) is not what the rule's op computes (3.0 * 3.0): the code would be."""
    from modelwright_autograd.scalar import engine

    x = Value(3.0)
    with pytest.raises(CompileError, match="op 'my_op' was made by hand"):
        compiled(lambda x: Value(5.0, (x, x), "my_op", engine._mul_backward) * 1.0, [x])


def test_an_op_made_by_hand_before_fn_ran_is_refused():
    a = Value(1.0)
    spy = Value(2.0, (a,), "spy", lambda g, out, a: (g,))
    with pytest.raises(CompileError, match="op 'spy' computed from the inputs before fn ran"):
        compiled(lambda a: spy * a, [a])


def test_a_value_of_the_inputs_computed_before_fn_ran_is_refused():
    """Calling fn again (the fallback) would not recompute it, so the compiled code and
    the interpreter would disagree on it."""
    a = Value(1.0)
    twice = a * 2.0
    with pytest.raises(CompileError, match=r"op '\*' computed from the inputs before fn ran"):
        compiled(lambda a: twice + a, [a])


def test_a_value_computed_from_the_inputs_under_no_grad_is_refused():
    """The graph holds it as a constant, but it changes with the inputs."""
    from modelwright_autograd import no_grad

    def fn(x):
        with no_grad():
            s = x * 2.0
        return x * s

    with pytest.raises(CompileError, match=r"under no_grad\(\)"):
        compile_at(fn, [3.0])


def test_a_value_of_the_inputs_through_no_grad_grad_no_grad_is_refused():
    """The dependence passes a no_grad node, a recorded one, and a no_grad node again."""
    from modelwright_autograd import no_grad

    def fn(x):
        with no_grad():
            y = x * 2.0
        z = y + 1.0
        with no_grad():
            w = z * 3.0
        return w * x

    with pytest.raises(CompileError, match=r"under no_grad\(\) \(test_compiler\.py:\d+\)"):
        compile_at(fn, [1.5])


@pytest.mark.parametrize("input_too", [False, True])
def test_writing_data_of_a_value_of_the_graph_is_refused(input_too):
    def fn(x):
        if input_too:
            x.data = 0.5
            return x * x
        y = x * 2.0
        y.data = 3.0
        return y * x

    with pytest.raises(
        CompileError, match=r"\.data of a value of the graph is written .*\(test_compiler\.py:\d+\)"
    ):
        compile_at(fn, [1.5])


def test_reading_grad_and_calling_backward_inside_fn_are_refused():
    backward = Value.__dict__["backward"]

    def reads_grad(x):
        return x * (x.grad + 1.0)

    def calls_backward(x):
        y = x * x
        y.backward()
        return y

    with pytest.raises(CompileError, match=r"\.grad of a value that depends"):
        compile_at(reads_grad, [1.5])
    with pytest.raises(CompileError, match=r"backward\(\) is called .* \(test_compiler\.py:\d+\)"):
        compile_at(calls_backward, [1.5])
    assert Value.__dict__["backward"] is backward  # put back


def test_a_read_inside_a_library_names_fns_own_line():
    import copy

    with pytest.raises(
        CompileError, match=r"\.data of a value that depends .*\(test_compiler\.py:\d+\)"
    ):
        compile_at(lambda x: copy.copy(x * 2.0) * x, [1.5])


def test_compiles_in_two_threads_at_once_each_succeed_and_unset_the_hook():
    """The first trace waits (up to 0.5 s) for the second to begin; the second outlasts the
    first. Each notes both threads' work but counts only what involves its own inputs, and
    the engine's hook is unset when the last one ends, not when the first does."""
    import threading
    import time

    from modelwright_autograd.scalar import engine

    data, node = Value.__dict__["data"], engine._node
    second_began = threading.Event()
    results: dict[str, object] = {}

    def first(a, b):
        second_began.wait(0.5)
        return (a * b).tanh()

    def second(a, b):
        second_began.set()
        time.sleep(0.2)
        return (a + b).relu() * a

    def work(name: str, fn) -> None:
        try:
            results[name] = compile_at(fn, [0.3, 0.9])([0.2, 0.7]) == interpreted(fn, [0.2, 0.7])
        except Exception as e:  # the test reports what went wrong
            results[name] = e

    one = threading.Thread(target=work, args=("first", first))
    one.start()
    time.sleep(0.05)  # the first is tracing
    two = threading.Thread(target=work, args=("second", second))
    two.start()
    one.join()
    two.join()
    assert results == {"first": True, "second": True}
    assert Value.__dict__["data"] is data and engine._node is node
    assert engine.Tracing.hook is None


def test_another_threads_values_behave_as_ever_while_fn_is_traced():
    """While fn is traced (and waits), another thread compares, reads .data, writes it
    and calls backward(): nothing is refused there, nothing of it is recorded here."""
    import threading

    traced, done = threading.Event(), threading.Event()
    seen: list[object] = []

    def other() -> None:
        traced.wait()
        try:
            a = Value(2.0)
            b = a * a
            b.backward()
            a.data = 3.0
            seen.append((b > 1.0, b.data, a.grad, repr(a)))
        except Exception as e:  # the test reports what went wrong
            seen.append(e)
        done.set()

    def fn(x):
        traced.set()
        done.wait()
        return x * x

    thread = threading.Thread(target=other)
    thread.start()
    cf = compile_at(fn, [1.5])
    thread.join()
    assert seen == [(True, 4.0, 4.0, "Value(data=3.0, grad=4.0)")]
    assert cf.guards == 0
    assert_same(cf([2.5]), interpreted(lambda x: x * x, [2.5]))


def test_fn_may_compile_in_a_worker_thread_and_wait_for_it():
    """A trace holds no lock another thread's compile would wait on."""
    from concurrent.futures import ThreadPoolExecutor

    def inner(a):
        return a * a

    def fn(x):
        with ThreadPoolExecutor(1) as pool:
            step = pool.submit(compile_at, inner, [2.0]).result(timeout=30)
        return x * step([3.0])[0]

    assert_same(compile_at(fn, [1.5])([2.5]), interpreted(fn, [2.5]))


def test_work_fn_hands_to_a_thread_is_traced_too():
    """A comparison made in a worker thread is a guard; a .data read there is refused."""
    from concurrent.futures import ThreadPoolExecutor

    def compares(x):
        with ThreadPoolExecutor(1) as pool:
            positive = pool.submit(lambda: x > 0).result()
        return x * 2.0 if positive else x * 3.0

    def reads(x):
        with ThreadPoolExecutor(1) as pool:
            number = pool.submit(lambda: x.data).result()
        return x * number

    cf = compile_at(compares, [1.0])
    assert cf.guards == 1
    assert_same(cf([-1.0]), interpreted(compares, [-1.0]))
    with pytest.raises(CompileError, match=r"\.data of a value that depends"):
        compile_at(reads, [1.0])


def test_a_compiled_function_falling_back_inside_fn_is_not_fns_backward():
    """The inner function's fallback calls backward() on its own graph, which does not
    depend on fn's inputs: nothing to refuse."""
    inner = compile_at(lambda a: a * 2.0 if a > 0 else a * 3.0, [1.0])

    def fn(x):
        return x * inner([-1.0])[0]

    assert_same(compile_at(fn, [1.5])([2.5]), interpreted(fn, [2.5]))
    assert inner.fallbacks == 3  # fn's two calls when compiled, and the interpreter's


def test_a_trace_closing_in_another_thread_while_fn_compares_drops_no_guard():
    """Thread B's trace closes just while fn's comparison is being noted in the open
    traces (sys.settrace pauses fn's thread there): fn's own trace must still get it."""
    import sys
    import threading

    from modelwright_autograd.scalar import tracing

    b_open, b_close, b_closed = threading.Event(), threading.Event(), threading.Event()

    def thread_b() -> None:
        with tracing.Trace():
            b_open.set()
            b_close.wait()
        b_closed.set()

    fired: list[int] = []

    def tracer(frame, event, arg):
        if frame.f_code.co_name != "compare" or frame.f_code.co_filename != tracing.__file__:
            return None

        def local(frame, event, arg):
            if event == "line" and not fired and "trace" in frame.f_locals:
                fired.append(1)
                b_close.set()
                b_closed.wait()
            return local

        return local

    def fn(x):
        return x * 2.0 if x > 0 else x * 3.0

    b = threading.Thread(target=thread_b)
    b.start()
    b_open.wait()
    sys.settrace(tracer)
    try:
        cf = compile_at(fn, [1.0])
    finally:
        sys.settrace(None)
        b_close.set()
        b.join()
    assert fired and cf.guards == 1
    assert_same(cf([-1.0]), interpreted(fn, [-1.0]))


def test_a_trace_leaves_value_and_the_engine_module_as_they_are():
    """Tracing replaces nothing: while fn runs (and another thread works), every attribute
    of Value and of the engine module is the object it was before; the engine consults its
    one hook instead."""
    import threading

    from modelwright_autograd.scalar import engine

    before = (dict(vars(Value)), dict(vars(engine)))
    during: list[tuple[dict, dict]] = []
    other_thread: list[object] = []

    def other() -> None:
        a = Value(2.0)
        b = a * a
        b.backward()
        other_thread.append((b > 1.0, b.data, a.grad, repr(a)))

    def fn(x):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        during.append((dict(vars(Value)), dict(vars(engine))))
        return x * x

    compile_at(fn, [1.5])  # fn runs twice: traced, then to check its graph
    assert other_thread == [(True, 4.0, 4.0, "Value(data=2.0, grad=4.0)")] * 2
    for was, now in zip(before, during[0]):  # during[0]: while traced
        assert was.keys() == now.keys()
        assert all(now[name] is attr for name, attr in was.items())
    assert engine.Tracing.hook is None


def test_a_hook_left_set_with_no_trace_open_changes_nothing():
    """A Ctrl-C between a trace's last close and unsetting the hook leaves it set: it notes
    nothing, and the next trace to close unsets it."""
    from modelwright_autograd.scalar import engine, tracing

    engine.Tracing.hook = tracing.HOOK
    try:
        a = Value(2.0)
        b = a * a
        b.backward()
        assert (b > 1.0, b.data, a.grad, repr(a)) == (True, 4.0, 4.0, "Value(data=2.0, grad=4.0)")
        assert_same(compile_at(lambda x: x * x, [1.5])([2.5]), interpreted(lambda x: x * x, [2.5]))
        assert engine.Tracing.hook is None
    finally:
        engine.Tracing.hook = None


def test_a_trace_whose_close_was_cut_short_is_forgotten():
    """A Ctrl-C at the wrong moment can skip a trace's close: once the frame that held it
    is gone, nothing is noted for it, and the next close unsets the hook."""
    import gc

    from modelwright_autograd.scalar import engine, tracing

    lost = tracing.Trace()
    lost.open()
    seen = lost.reads
    del lost
    gc.collect()
    assert tracing._open() == []
    (Value(2.0) * 3.0).data  # noqa: B018 - a read no trace notes now
    assert seen == []
    assert_same(compile_at(lambda x: x * x, [1.5])([2.5]), interpreted(lambda x: x * x, [2.5]))
    assert engine.Tracing.hook is None


def test_a_graph_with_a_cycle_is_refused_as_the_interpreter_refuses_it():
    from modelwright_autograd.graph import GraphCycleError

    def fn(x):
        y = x * 2.0
        z = y + 1.0
        y._a = z  # an input slot edited by hand: y is now among its own inputs
        return z

    with pytest.raises(GraphCycleError, match="cycle through a Value"):
        compile_at(fn, [1.5])


def test_no_grad_on_constants_inside_fn_is_fine():
    from modelwright_autograd import no_grad

    def fn(x):
        with no_grad():
            c = Value(2.0) * 3.0
        return x * c

    assert_same(compile_at(fn, [3.0])([4.0]), interpreted(fn, [4.0]))


def test_wrong_number_of_inputs_is_refused():
    cf = compile_at(lambda a, b: a * b, [1.0, 2.0])
    with pytest.raises(ValueError, match="2 inputs expected, got 1"):
        cf([1.0])


def test_several_outputs_return_the_loss_first_and_differentiate_the_loss():
    def fn(a, b):
        s = a * b
        return [s.tanh(), s, b.exp()]  # b.exp() is not on the loss's graph

    (loss, s, e), grads = compile_at(fn, [0.5, 2.0])([0.3, -1.2])
    want_loss, want_grads = interpreted(lambda a, b: (a * b).tanh(), [0.3, -1.2])
    assert same(loss, want_loss) and same(s, 0.3 * -1.2) and same(e, math.exp(-1.2))
    assert all(same(g, w) for g, w in zip(grads, want_grads))


# ------------------------------------------------------------------ the emitted source
def test_the_emitted_source_is_the_hand_written_backward():
    source = compile_at(lambda a, b, c: (a * b + c).tanh() * 2.0, [1.0, 2.0, 3.0]).source
    body = [line.strip() for line in source.splitlines()]
    for line in [
        "v3 = v0 * v1",
        "v3 = v3 + v2",  # a*b is dead once read: its name goes to the next value
        "v3 = _tanh(v3)",
        "v4 = v3 * 2.0",  # tanh's output is read again in the backward: a new name
        "g0 = (1.0 - v3 * v3) * 2.0",  # the root's 1.0 times the constant 2.0, then tanh's rule
        "g1 = 0.0 + g0 * v1",  # + and the product pass g0 on: a's grad starts at 0.0
        "g2 = 0.0 + g0 * v0",
        "g0 = 0.0 + g0",  # c's gradient takes the name of the last read of g0
        "return v4, [g1, g2, g0]",
    ]:
        assert line in body, f"{line!r} not in\n{source}"
        body = body[body.index(line) + 1 :]  # and in this order


def test_a_gradient_used_on_several_paths_is_one_sum():
    source = compile_at(lambda a: a * a + a, [1.0]).source
    assert "g0 = 0.0 + 1.0 + 1.0 * v0 + 1.0 * v0" in source


def test_an_input_used_many_times_is_summed_in_place_in_backwards_order():
    """100 uses of a: its gradient is added up in runs of TERMS - 1 terms as the uses come
    (not in one sum at the end), still left to right in backward()'s order: terms of mixed
    magnitude, where another order would round differently, give the interpreter's bits."""
    weights = [(-1.0) ** i * 10.0 ** (i % 17 - 8) * (1 + i / 7) for i in range(100)]

    def fn(a, b):
        return sum_values([(a * w + b).tanh() for w in weights])

    cf = compile_at(fn, [0.3, -0.2])
    assert_same(cf([0.7, 0.1]), interpreted(fn, [0.7, 0.1]))
    ga = cf.source.split("return ")[1].split("[")[1].split(",")[0]  # a's gradient's name
    lines = cf.source.splitlines()
    runs = [i for i, line in enumerate(lines) if line.strip().startswith(f"{ga} = {ga} + ")]
    tanh_rules = [i for i, line in enumerate(lines) if "(1.0 - " in line]
    assert len(runs) == 100 // (compiler.TERMS - 1)
    assert tanh_rules[0] < runs[0] < tanh_rules[-1]  # added up while the backward goes on


def test_a_dead_values_name_is_reused():
    """A value no longer read gives its name to the next: a chain of 1,000 steps whose
    backward reads no value of the forward keeps a few variables, not one per node."""

    def fn(a, b):
        h = a
        for _ in range(1000):
            h = h * 0.5 + b
        return h

    cf = compile_at(fn, [0.3, -0.2])
    namespace = dict(compiler.NAMESPACE)
    exec(cf.source, namespace)
    assert cf.nodes > 2000 and namespace["part0"].__code__.co_nlocals < 20
    assert_same(cf([0.7, 0.1]), interpreted(fn, [0.7, 0.1]))


# ------------------------------------------------------------------ size
def _wide_graph(n: int):
    """About n nodes: a chain with shared values, every op kind along it."""

    def fn(a, b):
        h = a
        nodes = []
        for i in range(n // 4):
            h = (h * b + 0.001 * i).tanh() + a
            nodes.append(h.relu())
        return sum_values(nodes)

    return fn


@pytest.mark.slow
def test_a_20000_node_graph_compiles_and_is_exact():
    fn = _wide_graph(20_000)
    cf = compile_at(fn, [0.3, 0.9])
    assert cf.nodes >= 20_000
    assert_same(cf([0.2, -0.7]), interpreted(fn, [0.2, -0.7]))


def test_a_graph_of_several_parts_is_exact(monkeypatch):
    monkeypatch.setattr(compiler, "CHUNK", 7)
    fn = _wide_graph(200)
    cf = compile_at(fn, [0.3, 0.9])
    assert cf.source.count("def part") > 10
    assert_same(cf([0.2, -0.7]), interpreted(fn, [0.2, -0.7]))


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a,  # the loss is an input: d a/d a = 1, b unused
        lambda a, b: Value(2.0) * 3.0 + 1.0,  # no input reaches the loss: constants only
        lambda a, b: (a * 0.0) ** 0 + b**0,  # a gradient that is never passed on (n = 0)
        lambda a, b: (a - a) * (b / b),  # a node on two paths, divided by itself
    ],
)
def test_edge_graphs_are_the_interpreters(fn):
    for data in ([1.5, -2.0], [0.0, -0.0], [math.inf, math.nan]):
        assert_same(compile_at(fn, [0.5, 0.25])(data), interpreted(fn, data))
