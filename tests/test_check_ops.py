"""TF 1.x's graph asserts (nbdist/ops/check_ops.py) against tf.compat.v1's: each runs before an
identity of its input under ``control_dependencies`` and must pass, fail the step with TF's
message and data, or fail while building with TF's class and message, as TF does."""

import re

import numpy as np
import pytest

import nbdist as tf

F = np.array([0.5, 2.0, 3.0, 4.0], np.float32)
NEG = np.array([-1.0, -2.5], np.float32)
INT = np.array([[1, 2], [3, 4]], np.int32)

# name -> (build(t, x) -> assert op, feed for x: float32 of unknown shape, or an int32 matrix)
RUNTIME = {
    "equal_ok": (lambda t, x: t.assert_equal(x, x + 0.0), F),
    "equal_fails": (lambda t, x: t.assert_equal(x, 2.0, message="msg"), F),
    "none_equal_fails": (lambda t, x: t.assert_none_equal(x, 3.0), F),
    "none_equal_ok": (lambda t, x: t.assert_none_equal(x, 7.0), F),
    "less_fails_summarize": (lambda t, x: t.assert_less(x, 1.0, message="too big", summarize=2), F),
    "less_ok": (lambda t, x: t.assert_less(x, 5.0), F),
    "less_equal_fails": (lambda t, x: t.assert_less_equal(x, 3.0), F),
    "greater_fails": (lambda t, x: t.assert_greater(x, 0.5), F),
    "greater_equal_ok": (lambda t, x: t.assert_greater_equal(x, 0.5), F),
    "greater_equal_broadcast_fails": (lambda t, x: t.assert_greater_equal(x, [[0.0], [9.0]]), F),
    "empty_ok": (lambda t, x: t.assert_greater(x, 9.0), np.zeros(0, np.float32)),
    "positive_fails": (lambda t, x: t.assert_positive(x), NEG),
    "negative_ok": (lambda t, x: t.assert_negative(x), NEG),
    "negative_fails": (lambda t, x: t.assert_negative(x, message="m"), F),
    "non_negative_fails": (lambda t, x: t.assert_non_negative(x), NEG),
    "non_positive_fails": (lambda t, x: t.assert_non_positive(x), F),
    "near_fails": (lambda t, x: t.assert_near(x, t.add(x, 0.1, name="y"), summarize=5), F),
    "near_ok": (lambda t, x: t.assert_near(x, x * 1.0000001), F),
    "near_tolerances_ok": (lambda t, x: t.assert_near(x, x + 0.1, rtol=0.0, atol=0.2), F),
    "rank_fails": (lambda t, x: t.assert_rank(x, 2), F),
    "rank_ok": (lambda t, x: t.assert_rank(x, 1), F),
    "rank_at_least_fails": (lambda t, x: t.assert_rank_at_least(x, 2, message="need a matrix"), F),
    "rank_in_ok": (lambda t, x: t.assert_rank_in(x, [0, 1]), F),
    "rank_in_fails": (lambda t, x: t.assert_rank_in(x, (2, 3)), F),
    "int_equal_fails": (lambda t, x: t.assert_equal(t.cast(x, t.int32), [[1, 2], [3, 5]]), INT),
    "data_given": (lambda t, x: t.assert_equal(x, 0.0, data=["custom", x], summarize=1), F),
}


def _node_message(error):
    """The part of a failed step's message both libraries share: from ``assertion failed``."""
    text = error.message
    found = re.search(r"assertion failed:.*?(?=\n\t \[\[|$)", text, re.S)
    return found.group(0) if found else text


@pytest.fixture(scope="module")
def runtime_checks(tf1):
    """Per library, one graph holding every `RUNTIME` check (each before an identity of its
    input), its session and the placeholders: built once for the module."""
    built = {}
    for lib in (tf, tf1):
        graph = lib.Graph()
        with graph.as_default():
            x, xi = lib.placeholder(lib.float32, name="x"), lib.placeholder(lib.int32, name="xi")
            outs = {}
            for case in sorted(RUNTIME):
                build, feed = RUNTIME[case]
                inp = xi if feed.dtype == np.int32 else x
                with lib.control_dependencies([build(lib, inp)]):
                    outs[case] = (lib.identity(inp), inp)
        sess = lib.Session(graph=graph)
        built[lib] = (sess, outs)
    yield built
    for sess, _ in built.values():
        sess.close()


def _run(lib, built, case):
    sess, outs = built[lib]
    out, inp = outs[case]
    try:
        return sess.run(out, {inp: RUNTIME[case][1]})
    except lib.errors.InvalidArgumentError as e:
        return ("InvalidArgumentError", _node_message(e))


@pytest.mark.parametrize("case", sorted(RUNTIME))
def test_assert_at_run_time_matches_tensorflow(tf1, runtime_checks, case):
    ours, theirs = _run(tf, runtime_checks, case), _run(tf1, runtime_checks, case)
    if isinstance(theirs, tuple):
        assert ours == theirs
    else:
        np.testing.assert_array_equal(ours, theirs)


# name -> build(t); raises while building in TF
STATIC = {
    "equal": lambda t: t.assert_equal(t.constant([1, 2]), t.constant([1, 3]), message="msg"),
    "less_equal_float": lambda t: t.assert_less_equal(t.constant([1.5, 2.0]), 1.75),
    "positive": lambda t: t.assert_positive(t.constant([1.0, -2.0])),
    "non_positive": lambda t: t.assert_non_positive(t.constant([[1, 0], [0, 0]])),
    "rank": lambda t: t.assert_rank(t.constant([1, 2]), 2),
    "rank_message": lambda t: t.assert_rank(t.zeros([2, 3]), 1, message="m"),
    "rank_at_least": lambda t: t.assert_rank_at_least(t.constant(1.0), 1),
    "rank_in": lambda t: t.assert_rank_in(t.zeros([2, 3]), [0, 1, 3]),
    "rank_not_scalar": lambda t: t.assert_rank(t.zeros([2]), [1]),
    "rank_float": lambda t: t.assert_rank(t.zeros([2]), 1.0),
    "integer": lambda t: t.assert_integer(t.constant([1.0, 2.0]), message="ints"),
    "type": lambda t: t.assert_type(t.constant([1.0, 2.0]), t.int32),
    "scalar": lambda t: t.assert_scalar(t.constant([1.0, 2.0])),
    "scalar_unknown": lambda t: t.assert_scalar(t.placeholder(t.float32), message="m"),
    "same_float_mixed": lambda t: t.assert_same_float_dtype([t.zeros([1]), t.zeros([1], t.float64)]),
    "same_float_int": lambda t: t.assert_same_float_dtype([t.zeros([1], t.int32)]),
    "same_float_dtype_arg": lambda t: t.assert_same_float_dtype([t.zeros([1])], t.float64),
    "proper_iterable_array": lambda t: t.assert_proper_iterable(np.zeros(2)),
    "proper_iterable_str": lambda t: t.assert_proper_iterable("ab"),
    "proper_iterable_int": lambda t: t.assert_proper_iterable(3),
}


def _build_error(lib, build):
    with lib.Graph().as_default(), pytest.raises(Exception) as info:
        build(lib)
    e = info.value
    return type(e).__name__, e.message if hasattr(e, "message") else str(e)


@pytest.mark.parametrize("case", sorted(STATIC))
def test_assert_fails_while_building_as_tensorflow(tf1, case):
    assert _build_error(tf, STATIC[case]) == _build_error(tf1, STATIC[case])


def _static_ok(t):
    """Checks that hold while building: TF returns no-ops (or the tensor, or a dtype)."""
    a = t.assert_rank(t.zeros([2, 3]), 2)
    b = t.assert_rank_in(t.zeros([2]), (1, 2))
    c = t.assert_integer(t.constant([1, 2], t.int64))
    d = t.assert_type(t.constant([1.0]), t.float32)
    e = t.assert_scalar(t.constant(3.0))
    f = t.assert_equal(t.constant([1, 2]), t.constant([1, 2]))
    g = t.assert_rank_at_least(t.zeros([2, 3]), 1)
    dtypes = (
        t.assert_same_float_dtype([t.zeros([1], t.float64), None]),
        t.assert_same_float_dtype(),
        t.assert_same_float_dtype(None, t.float16),
    )
    t.assert_proper_iterable([1, 2])
    return [a.type, b.type, c.type, d.type, e.shape.ndims, f.type, g.type], [d.name for d in dtypes]


def test_a_static_failure_prints_unknown_data_as_tensors():
    # (TF's own join fails here with a TypeError: "expected str instance, Tensor found")
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [2], name="p")
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r'^d\nTensor\("p:0", shape=\(2,\), dtype=float32\)$'
        ):
            tf.assert_equal(1, 2, data=["d", p])


def test_assert_that_holds_while_building_as_tensorflow(tf1):
    with tf.Graph().as_default():
        ours = _static_ok(tf)
    with tf1.Graph().as_default():
        theirs = _static_ok(tf1)
    assert (
        ours
        == theirs
        == (["NoOp", "NoOp", "NoOp", "NoOp", 0, "Assert", "NoOp"], ["float64", "float32", "float16"])
    )


def test_assert_near_of_float64_uses_its_eps(tf1):
    def build(t):
        x = t.placeholder(t.float64, name="x")
        return x, t.assert_near(x, x + 1e-13)

    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            x, check = build(lib)
            sess.run(check, {x: np.array([100.0, 200.0])})  # within 10 eps of float64, relatively
            with pytest.raises(lib.errors.InvalidArgumentError, match="not equal to tolerance"):
                sess.run(check, {x: np.array([0.0, 1.0])})


def _variables_check(t):
    v = t.Variable([1.0, 2.0], name="v")
    t.Variable(3, name="w")
    return v, t.assert_variables_initialized(), t.assert_variables_initialized([v])


def test_assert_variables_initialized_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            v, both, one = _variables_check(lib)
            with pytest.raises(lib.errors.FailedPreconditionError, match="uninitialized"):
                sess.run(both)
            sess.run(v.initializer)
            assert sess.run(one) == 1
            with pytest.raises(lib.errors.FailedPreconditionError):
                sess.run(both)
            sess.run(lib.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(both), [1, 0])
        with lib.Graph().as_default():
            assert lib.assert_variables_initialized() is None


def test_is_numeric_tensor_as_tensorflow(tf1):
    def kinds(t):
        return [
            t.is_numeric_tensor(t.constant(1.0)),
            t.is_numeric_tensor(t.constant([1], t.int64)),
            t.is_numeric_tensor(t.constant([1 + 2j])),
            t.is_numeric_tensor(t.constant(True)),
            t.is_numeric_tensor(t.constant("a")),
            t.is_numeric_tensor(np.zeros(2)),
            t.is_numeric_tensor(3.0),
        ]

    for lib in (tf, tf1):
        with lib.Graph().as_default():
            assert kinds(lib) == [True, True, True, False, False, False, False]


def _debugging_checks(t):
    """The same checks at TF's other path, `tf.debugging`, failing one by one."""
    x = t.placeholder(t.float32, name="x")
    return [
        t.debugging.assert_equal(x, x + 0.0),
        t.debugging.assert_none_equal(x, 9.0),
        t.debugging.assert_less(x, 5.0),
        t.debugging.assert_less_equal(x, 4.0),
        t.debugging.assert_greater(x, 0.0),
        t.debugging.assert_greater_equal(x, 0.5),
        t.debugging.assert_near(x, x),
        t.debugging.assert_positive(x),
        t.debugging.assert_non_negative(x),
        t.debugging.assert_negative(-x),
        t.debugging.assert_non_positive(-x),
        t.debugging.assert_rank(x, 1),
        t.debugging.assert_rank_at_least(x, 1),
        t.debugging.assert_rank_in(x, [1, 2]),
        t.debugging.Assert(t.reduce_all(t.debugging.is_finite(x)), [x]),
        t.debugging.assert_all_finite(x, "finite"),
        t.debugging.check_numerics(x, "numerics"),
    ], x


def test_tf_debugging_paths_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            checks, x = _debugging_checks(lib)
            sess.run(checks, {x: F})
            failing = [i for i in range(len(checks)) if _fails(sess, checks[i], x, [4.5, np.inf])]
            assert failing == [2, 3, 6, 14, 15, 16], lib  # (near: inf - inf is NaN)
            lib.debugging.assert_integer(lib.constant(1))
            lib.debugging.assert_type(x, lib.float32)
            lib.debugging.assert_scalar(lib.constant(1))
            lib.debugging.assert_proper_iterable([x])
            assert lib.debugging.assert_same_float_dtype([x]) == lib.float32
            assert lib.debugging.is_numeric_tensor(x)
            flags = [lib.debugging.is_inf(x), lib.debugging.is_nan(x)]
            flags += [lib.debugging.is_non_decreasing(x), lib.debugging.is_strictly_increasing(x)]
            assert [np.asarray(v).tolist() for v in sess.run(flags, {x: [1.0, 1.0]})] == [
                [False, False],
                [False, False],
                True,
                False,
            ]


def _fails(sess, check, x, value):
    try:
        sess.run(check, {x: value})
    except Exception:  # noqa: BLE001 - either library's InvalidArgumentError
        return True
    return False
