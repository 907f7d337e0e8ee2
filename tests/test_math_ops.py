"""Math ops: forward values against numpy, static shapes, dtypes and errors."""

import numpy as np
import pytest

import nbdist as tf
from local_run import run_in_session

pytestmark = pytest.mark.usefixtures("fresh_graph")

_RNG = np.random.default_rng(7)


X = _RNG.standard_normal((2, 3))
Y = _RNG.standard_normal(3)
P = _RNG.uniform(0.5, 2.0, (2, 3))


@pytest.mark.parametrize(
    ("fn", "args", "expected"),
    [
        (tf.add, (X, Y), X + Y),
        (tf.subtract, (X, Y), X - Y),
        (tf.multiply, (X, Y), X * Y),
        (tf.divide, (X, P), X / P),
        (tf.pow, (P, X), P**X),
        (tf.maximum, (X, Y), np.maximum(X, Y)),
        (tf.minimum, (X, Y), np.minimum(X, Y)),
        (tf.squared_difference, (X, Y), (X - Y) ** 2),
        (tf.negative, (X,), -X),
        (tf.square, (X,), X**2),
        (tf.sqrt, (P,), np.sqrt(P)),
        (tf.exp, (X,), np.exp(X)),
        (tf.log, (P,), np.log(P)),
        (tf.log1p, (P,), np.log1p(P)),
        (tf.abs, (X,), np.abs(X)),
        (tf.tanh, (X,), np.tanh(X)),
        (tf.sigmoid, (X,), 1 / (1 + np.exp(-X))),
        (tf.nn.relu, (X,), np.maximum(X, 0)),
        (tf.nn.softplus, (X,), np.log(1 + np.exp(X))),
        (tf.floor, (X,), np.floor(X)),
        (tf.reciprocal, (P,), 1 / P),
        (tf.matmul, (X, X.T), X @ X.T),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_forward_values_match_numpy(fn, args, expected):
    out = run_in_session(fn(*[tf.constant(a) for a in args]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_add_n_sums_its_inputs():
    np.testing.assert_allclose(
        run_in_session(tf.add_n([tf.constant(X), tf.constant(X), tf.constant(X)])), 3 * X
    )


def test_where_selects_elementwise():
    out = run_in_session(tf.where(tf.constant(X) > 0.0, tf.constant(X), tf.zeros_like(tf.constant(X))))
    np.testing.assert_allclose(out, np.where(X > 0, X, 0))


def test_relu_gradient_is_one_relugrad_op_giving_tfs_values():
    x = tf.constant(np.float32([[-1.0, 0.0, 2.0], [3.0, -4.0, 0.5]]))
    upstream = tf.constant(np.float32([[np.inf, 5.0, np.nan], [-2.0, np.nan, 7.0]]))
    (grad,) = tf.gradients(tf.nn.relu(x), x, grad_ys=upstream)
    assert grad.op.type == "ReluGrad"
    out = run_in_session(grad)
    assert out.dtype == np.float32
    # gradients * (features > 0): non-finite gradients at inactive units give NaN, as in TF
    np.testing.assert_array_equal(out, [[np.nan, 0.0, np.nan], [-2.0, np.nan, 7.0]])


def test_sigmoid_is_stable_for_large_inputs():
    out = run_in_session(tf.sigmoid(tf.constant([-1000.0, -40.0, 0.0, 40.0, 1000.0], tf.float64)))
    np.testing.assert_allclose(out, [0.0, np.exp(-40.0) / (1 + np.exp(-40.0)), 0.5, 1.0, 1.0], rtol=1e-12)


def test_softplus_is_stable_for_large_inputs():
    out = run_in_session(tf.nn.softplus(tf.constant([-1000.0, 0.0, 1000.0], tf.float64)))
    np.testing.assert_allclose(out, [0.0, np.log(2.0), 1000.0])


def test_float32_stays_float32():
    x = tf.constant(X.astype(np.float32))
    for y in (tf.sigmoid(x), tf.nn.softplus(x), tf.log1p(tf.abs(x)), tf.floor(x)):
        assert y.dtype == tf.float32
        assert run_in_session(y).dtype == np.float32


def test_binary_op_static_shape_broadcasts():
    x = tf.placeholder(tf.float32, [None, 3])
    assert (x + tf.zeros([1, 3])).shape.as_list() == [None, 3]
    assert (x * tf.zeros([4, 1, 1])).shape.as_list() == [4, None, 3]


def test_binary_op_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(4,\) are not broadcast-compatible"):
        tf.zeros([2, 3]) + tf.zeros([4])


def test_binary_op_rejects_mixed_dtypes():
    with pytest.raises(TypeError, match=r"same dtype, got float32 .* and int32 .*tf.cast"):
        tf.add(tf.zeros([2]), tf.constant([1, 2]))


def test_matmul_rejects_mismatched_inner_dimensions():
    with pytest.raises(ValueError, match=r"MatMul: inner dimensions differ"):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([2, 3]))


# -- range ----------------------------------------------------------------------------------------
def test_range_counts_like_numpy():
    r = tf.range(2, 11, 3)
    assert r.dtype == tf.int32
    assert r.shape.as_list() == [3]
    np.testing.assert_array_equal(run_in_session(r), [2, 5, 8])


def test_range_with_one_argument_starts_at_zero():
    np.testing.assert_array_equal(run_in_session(tf.range(4)), [0, 1, 2, 3])


def test_range_of_floats_is_float32():
    r = tf.range(0.0, 1.0, 0.25)
    assert r.dtype == tf.float32
    np.testing.assert_allclose(run_in_session(r), [0.0, 0.25, 0.5, 0.75])


def test_range_with_a_runtime_limit_has_unknown_length():
    n = tf.placeholder(tf.int32, [])
    r = tf.range(0, n)
    assert r.shape.as_list() == [None]
    np.testing.assert_array_equal(run_in_session(r, {n: 3}), [0, 1, 2])


def test_range_rejects_zero_delta():
    with pytest.raises(ValueError, match=r"delta must not be 0"):
        tf.range(0, 5, 0)


def test_range_rejects_zero_delta_at_run_time():
    d = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"delta must not be 0 \(start=0, limit=5\)"):
        run_in_session(tf.range(0, 5, d), {d: 0})


def test_cast_converts_dtype():
    y = tf.cast(tf.constant([1.7, -2.2]), tf.int32)
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(run_in_session(y), [1, -2])


def test_a_raw_realdiv_of_integers_is_an_error_not_a_floor_division():
    from nbdist.ops import registry

    x = tf.constant(np.array([7, 3], np.int32))
    op = registry.make_op("RealDiv", [x, x], name="raw_div")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"RealDiv op 'raw_div' is not defined for int32"
    ):
        run_in_session(op.outputs[0])


def test_integer_division_is_true_division_and_floordiv_floors():
    i = tf.constant(np.array([7, -7], np.int64))
    got = run_in_session([tf.divide(i, 2), i / 2, 7 / i, i // 2, tf.floordiv(i, 2)])
    assert [g.dtype for g in got] == [np.float64, np.float64, np.float64, np.int64, np.int64]
    np.testing.assert_array_equal(got[0], [3.5, -3.5])
    np.testing.assert_array_equal(got[2], [1.0, -1.0])
    np.testing.assert_array_equal(got[3], [3, -4])
    assert tf.truediv(tf.constant(np.int16(3)), tf.constant(np.int16(2))).dtype == tf.float32
