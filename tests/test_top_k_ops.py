"""`tf.nn.top_k` and `tf.nn.in_top_k` against real TensorFlow: ties, k = 0 and k = all columns,
integer inputs, rank 1 and 3, out-of-range targets and non-finite predictions."""

import numpy as np
import pytest

import nbdist as tf
from local_run import run_in_session

TIES = np.array(
    [[1.0, 3.0, 3.0, -2.0, 3.0], [0.0, 0.0, 0.0, 0.0, 0.0], [5.0, 4.0, 3.0, 2.0, 1.0]], np.float32
)
RANK3 = np.random.default_rng(5).standard_normal((2, 3, 4))
INTS = np.array([[7, -3, 7, np.iinfo(np.int32).min], [1, 2, 3, 4]], np.int32)

TOP_K = {
    "ties_k3": (TIES, 3),
    "k0": (TIES, 0),
    "k_all": (TIES, 5),
    "rank1": (TIES[0], 2),
    "rank3_float64": (RANK3, 2),
    "int32": (INTS, 3),
}


def _top_k(lib, value, k):
    with lib.Graph().as_default() as graph:
        x = lib.constant(value)
        values, indices = lib.nn.top_k(x, k)
        fetches = [values, indices]
        if value.dtype.kind == "f":
            c = np.random.default_rng(3).standard_normal(values.shape.as_list()).astype(value.dtype)
            fetches += lib.gradients(lib.reduce_sum(values * c), x)
        with lib.Session(graph=graph) as sess:
            return sess.run(fetches)


@pytest.mark.tf
@pytest.mark.parametrize("case", TOP_K)
def test_top_k_values_indices_and_gradient_match_tensorflow(tf1, case):
    ours, theirs = _top_k(tf, *TOP_K[case]), _top_k(tf1, *TOP_K[case])
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.tf
def test_in_top_k_matches_tensorflow(tf1):
    predictions = np.array(
        [[0.1, 0.5, 0.5, 0.2], [0.9, 0.1, 0.0, 0.3], [0.2, np.nan, 0.3, 0.1], [0.4, 0.3, 0.2, 0.1]],
        np.float32,
    )
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default() as graph:
            fetches = [
                lib.nn.in_top_k(predictions, np.array(targets, dtype), k)
                for targets, k in (([1, 0, 2, 3], 1), ([2, 3, 0, 3], 2), ([0, 2, 2, 1], 4), ([0, 0, 0, 0], 0))
                for dtype in (np.int32, np.int64)
            ]
            with lib.Session(graph=graph) as sess:
                results.append(sess.run(fetches))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


def test_in_top_k_of_a_target_out_of_range_is_false(graph):
    out = run_in_session(tf.nn.in_top_k([[0.1, 0.9], [0.5, 0.2]], [2, -1], 2))
    np.testing.assert_array_equal(out, [False, False])


def test_top_k_shape_is_static(graph):
    values, indices = tf.nn.top_k(tf.zeros([2, 7, 5]), 3)
    assert values.shape.as_list() == indices.shape.as_list() == [2, 7, 3]
    assert indices.dtype == tf.int32


def test_top_k_refuses_k_above_the_last_dimension(graph):
    with pytest.raises(ValueError, match=r"must have at least k=6 columns, has 5"):
        tf.nn.top_k(tf.constant(TIES), 6)


def test_top_k_checks_k_at_run_time(graph):
    k = tf.placeholder(tf.int32, [])
    values, _ = tf.nn.top_k(tf.constant(TIES), k)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=r"at least k=9 columns"):
        sess.run(values, {k: 9})
