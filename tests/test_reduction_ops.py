"""Reductions, argmax/argmin, gather, unsorted_segment_sum and one_hot: values, shapes, errors."""

import numpy as np
import pytest

import nbdist as tf
from local_run import run_in_session

pytestmark = pytest.mark.usefixtures("fresh_graph")

_RNG = np.random.default_rng(5)
X = _RNG.standard_normal((2, 3, 4))


@pytest.mark.parametrize(
    ("tf_fn", "np_fn"),
    [(tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean), (tf.reduce_max, np.max), (tf.reduce_min, np.min)],
    ids=["sum", "mean", "max", "min"],
)
@pytest.mark.parametrize("axis", [None, 0, -1, [0, 2], []], ids=str)
@pytest.mark.parametrize("keepdims", [False, True], ids=["drop", "keep"])
def test_reductions_match_numpy(tf_fn, np_fn, axis, keepdims):
    y = tf_fn(tf.constant(X), axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = np_fn(X, axis=np_axis, keepdims=keepdims)
    assert y.shape.as_list() == list(np.shape(expected))
    np.testing.assert_allclose(run_in_session(y), expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mean_is_bit_for_bit_numpys_mean(dtype):
    """The Mean kernel skips np.mean's Python wrapper; its result must not move by one ulp
    (counts that are not powers of two, every axis set, scalars and kept dims)."""
    x = np.random.default_rng(7).standard_normal((3, 5, 7)).astype(dtype) * 1e3
    cases = [None, 0, 1, 2, -1, [0, 2], [1, 2], [0, 1, 2], []]
    for axis in cases:
        for keepdims in (False, True):
            got = run_in_session(tf.reduce_mean(tf.constant(x), axis=axis, keepdims=keepdims))
            np_axis = tuple(axis) if isinstance(axis, list) else axis
            expected = np.mean(x, axis=np_axis, keepdims=keepdims)
            assert got.dtype == dtype and np.shape(got) == np.shape(expected)
            np.testing.assert_array_equal(got, expected)


def test_reduction_of_unknown_rank_over_all_axes():
    x = tf.placeholder(tf.float64, None)
    y = tf.reduce_sum(x)
    assert y.shape.ndims is None
    assert run_in_session(y, {x: X}) == pytest.approx(X.sum())


def test_reduction_with_runtime_axis_keeps_rank_when_keepdims():
    x = tf.placeholder(tf.float64, [None, 4])
    axis = tf.placeholder(tf.int32, [])
    y = tf.reduce_max(x, axis, keepdims=True)
    assert y.shape.as_list() == [None, None]
    np.testing.assert_allclose(run_in_session(y, {x: X[0], axis: 1}), X[0].max(axis=1, keepdims=True))


def test_tf1_aliases_keep_dims_and_reduction_indices():
    y = tf.reduce_sum(tf.constant(X), reduction_indices=[1], keep_dims=True)
    assert y.shape.as_list() == [2, 1, 4]


def test_reduction_rejects_both_axis_and_alias():
    with pytest.raises(ValueError, match=r"pass either axis or reduction_indices"):
        tf.reduce_sum(tf.constant(X), axis=0, reduction_indices=0)


def test_reduction_rejects_axis_out_of_range():
    with pytest.raises(ValueError, match=r"invalid reduction axis 3 for an input of rank 3"):
        tf.reduce_mean(tf.constant(X), axis=3)


def test_reduction_axis_out_of_range_at_run_time():
    x = tf.placeholder(tf.float32, None)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"invalid reduction axis 2 for an input of rank 1"
    ):
        run_in_session(tf.reduce_sum(x, 2), {x: np.zeros(3)})


def test_max_gradient_is_shared_equally_by_ties():
    x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    (g,) = tf.gradients(tf.reduce_max(x, axis=1), x)
    np.testing.assert_allclose(run_in_session(g), [[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])


def test_integer_mean_truncates_like_tf():
    assert run_in_session(tf.reduce_mean(tf.constant([1, 2]))) == 1


def test_reduce_all_and_any():
    b = tf.constant([[True, False], [True, True]])
    np.testing.assert_array_equal(run_in_session(tf.reduce_all(b, axis=1)), [False, True])
    assert run_in_session(tf.reduce_any(b)) == np.True_


def test_reduce_all_rejects_numbers():
    with pytest.raises(TypeError, match=r"tf.reduce_all needs a bool tensor, got float32"):
        tf.reduce_all(tf.zeros([2]))


def test_reduce_logsumexp_is_stable():
    x = np.array([[1000.0, 1000.0], [-1000.0, -np.inf]])
    out = run_in_session(tf.reduce_logsumexp(tf.constant(x), axis=1))
    np.testing.assert_allclose(out, [1000.0 + np.log(2.0), -1000.0])


# -- argmax, argmin -------------------------------------------------------------------------------------
def test_argmax_defaults_to_axis_zero_and_int64():
    y = tf.argmax(tf.constant(X))
    assert y.dtype == tf.int64 and y.shape.as_list() == [3, 4]
    np.testing.assert_array_equal(run_in_session(y), X.argmax(0))


def test_argmin_with_axis_and_output_type():
    y = tf.argmin(tf.constant(X), axis=-1, output_type=tf.int32)
    assert y.dtype == tf.int32 and y.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run_in_session(y), X.argmin(-1))


def test_argmax_tf1_dimension_alias():
    np.testing.assert_array_equal(run_in_session(tf.argmax(tf.constant(X), dimension=1)), X.argmax(1))


# -- gather, unsorted_segment_sum, one_hot -----------------------------------------------------------------
def test_gather_rows():
    y = tf.gather(tf.constant(X), [[1, 0], [1, 1]])
    assert y.shape.as_list() == [2, 2, 3, 4]
    np.testing.assert_array_equal(run_in_session(y), X[[[1, 0], [1, 1]]])


def test_gather_out_of_range_index_names_it():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 2\)"):
        run_in_session(tf.gather(tf.constant(X), [0, 5]))


def test_gather_refuses_batch_dims_and_an_axis_known_only_when_run():
    with pytest.raises(ValueError, match=r"nbdist supports batch_dims=0 only, got 1; see tf.batch_gather"):
        tf.gather(tf.constant(X), [[0]], batch_dims=1)
    with pytest.raises(ValueError, match="nbdist needs a constant axis"):
        tf.gather(tf.constant(X), [0], axis=tf.placeholder(tf.int32, []))


def test_unsorted_segment_sum_drops_negative_ids():
    data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = tf.unsorted_segment_sum(data, [2, -1, 2], 4)
    assert y.shape.as_list() == [4, 2]
    np.testing.assert_array_equal(run_in_session(y), [[0, 0], [0, 0], [6, 8], [0, 0]])


def test_unsorted_segment_sum_rejects_ids_beyond_num_segments():
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"segment_ids\[0\] = 3 is out of range \[0, 3\)"
    ):
        run_in_session(tf.unsorted_segment_sum(tf.zeros([2]), [3, 0], 3))


def test_unsorted_segment_sum_rejects_ids_not_a_prefix_of_data():
    with pytest.raises(ValueError, match=r"segment_ids shape \(3,\) must be a prefix of data shape \(2, 2\)"):
        tf.unsorted_segment_sum(tf.zeros([2, 2]), [0, 1, 1], 2)


def test_one_hot_default_float32_last_axis():
    y = tf.one_hot([0, 2, 5, -1], 3)
    assert y.dtype == tf.float32 and y.shape.as_list() == [4, 3]
    np.testing.assert_array_equal(run_in_session(y), [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])


def test_one_hot_on_off_values_and_axis():
    y = tf.one_hot([1, 0], 2, on_value=5, off_value=-1, axis=0, dtype=tf.int32)
    assert y.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(run_in_session(y), [[-1, 5], [5, -1]])
